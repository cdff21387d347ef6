/*
 * room.c — the contract call runIsolated(runner, scope, digest, program, input):
 * checks in the reference order (check.c for rules 1-8, then grant, binding, Wasm
 * validity, input JSON), a fresh file system from the input files, one run (run.c)
 * and the return JSON (result.c).
 */
#include "room_int.h"

#include <stdlib.h>
#include <stdio.h>
#include <string.h>

static bool build_fs(pr_fs *fs, const pr_input *in, pr_error *err) {
    for (size_t i = 0; i < in->nfiles; i++) {
        int rc =
            pr_fs_write(fs, in->paths[i].ptr, in->paths[i].len, in->texts[i].ptr, in->texts[i].len);
        if (rc == -2) {
            /* Unreachable with a 1.5 MiB input, kept for the reference's wording. */
            pr__err_set(err, PR_KIND_RUN_FAILED, "隔离运行失败：编译文件超过 128 MiB 上限");
            return false;
        }
        if (rc) {
            pr__err_set(err, PR_KIND_RUN_FAILED, "隔离运行失败：内存不足");
            return false;
        }
    }
    return true;
}

/* The cached program for (scope, digest) when it was verified from exactly this
 * Base64 text: decoding and hashing it again would give the same bytes and digest,
 * so the Base64, length and SHA-256 rules hold without redoing them. The text is
 * compared byte for byte, unless it is that program's own text (`isolate serve` passes
 * the cached text it recognised in the request line; serve.c). */
static pr_program *verified(pr_host *h, const pr_request *req) {
    char stackkey[256];
    size_t kmax = pr__program_key_max(req->scope);
    if (kmax > sizeof stackkey) return NULL;
    size_t n = pr__program_key(req->scope, req->digest.ptr, stackkey);
    pr_program *p = pr__cache_get(&h->cache, stackkey, n);
    if (p && p->text_len == req->program.len &&
        (p->text == req->program.ptr || memcmp(p->text, req->program.ptr, req->program.len) == 0)) {
        pr__cache_count_text_hit(&h->cache);
        return p;
    }
    pr_program_release(p);
    return NULL;
}

static bool run_call(pr_host *h, const pr_request *req, const pr_run_opts *opts, pr_cpu_memo *memo,
                     pr_response *out, pr_error *err);

bool pr_run(pr_host *h, const pr_request *req, pr_response *out, pr_error *err) {
    return run_call(h, req, NULL, NULL, out, err);
}

bool pr_run_cancellable(pr_host *h, const pr_request *req, bool (*cancelled)(void *), void *ud,
                        pr_response *out, pr_error *err) {
    pr_run_opts o = {.cancelled = cancelled, .cancel_ud = ud};
    return run_call(h, req, &o, NULL, out, err);
}

bool pr__run_memo(pr_host *h, const pr_request *req, bool (*cancelled)(void *), void *ud,
                  pr_cpu_memo *memo, pr_response *out, pr_error *err) {
    pr_run_opts o = {.cancelled = cancelled, .cancel_ud = ud};
    return run_call(h, req, &o, memo, out, err);
}

bool pr_run_with(pr_host *h, const pr_request *req, const pr_run_opts *opts, pr_response *out,
                 pr_error *err) {
    return run_call(h, req, opts, NULL, out, err);
}

/* The call: opts NULL is the contract call itself (the host's limits, no cancel); memo
 * is the calling thread's CPU-clock memo or NULL. */
static bool run_call(pr_host *h, const pr_request *req, const pr_run_opts *opts, pr_cpu_memo *memo,
                     pr_response *out, pr_error *err) {
    static const pr_run_opts none = {0};
    if (!opts) opts = &none;
    if (err) err->stop = PR_STOP_NONE;
    memset(out, 0, sizeof *out);
    if (!pr__check_shape(req, err)) return false;
    pr_program *prog = verified(h, req);
    uint8_t *bytes = NULL;
    size_t len = 0;
    if (!prog && !pr__check_program(req, &bytes, &len, err)) return false;
    if (!pr__host_granted(h, req->runner)) {
        pr_program_release(prog);
        free(bytes);
        pr__err_set(err, PR_KIND_RUN_FAILED, "隔离运行失败：未授权的LOADER绑定：%.*s",
                    (int)req->runner.len, req->runner.ptr);
        return false;
    }
    if (!pr__host_bound(h, req->runner)) {
        pr_program_release(prog);
        free(bytes);
        pr__err_set(err, PR_KIND_RUN_FAILED, "隔离运行失败：绑定不存在：%.*s", (int)req->runner.len,
                    req->runner.ptr);
        return false;
    }
    if (!prog) {
        prog =
            pr__program_load_digest(h, req->scope, req->digest.ptr, bytes, len, req->program, err);
        free(bytes);
        if (!prog) return false;
    }

    pr_input in;
    pr_fs *fs = NULL;
    bool ok = false;
    if (!pr__input_parse(req->input.ptr, req->input.len, &in, err)) goto done_prog;
    fs = pr_fs_new();
    if (!fs) {
        pr__err_set(err, PR_KIND_RUN_FAILED, "隔离运行失败：内存不足");
        goto done_input;
    }
    if (!build_fs(fs, &in, err)) goto done_input;
    uint8_t seed[32];
    if (h->deterministic) {
        /* seed = SHA-256(digest hex ‖ input bytes) */
        pb_buf sb = {0};
        bool sok = pb_buf_put(&sb, req->digest.ptr, 64) &&
                   pb_buf_put(&sb, req->input.ptr, req->input.len) &&
                   pr__sha256(sb.p, sb.len, seed);
        pb_buf_free(&sb);
        if (!sok) {
            pr__err_set(err, PR_KIND_RUN_FAILED, "隔离运行失败：内存不足");
            goto done_input;
        }
    }
    pr_exec_options opt = {.args = in.args,
                           .nargs = in.nargs,
                           .fs = fs,
                           .seed = h->deterministic ? seed : NULL,
                           .cancelled = opts->cancelled,
                           .cancel_ud = opts->cancel_ud,
                           .cpu_memo = memo};
    pr__exec_limits(&opt, &opts->limits);
    pr_outcome oc;
    if (!pr_exec(h, prog, &opt, &oc, err)) goto done_input;
    char iso[sizeof out->isolate];
    snprintf(iso, sizeof iso, "%.*s:%.64s", (int)req->scope.len, req->scope.ptr, req->digest.ptr);
    ok = pr__respond(&oc, fs, iso, out, err);
    pr_outcome_clear(&oc);
done_input:
    pr_fs_free(fs);
    pr__input_free(&in);
done_prog:
    pr_program_release(prog);
    return ok;
}

void pr_response_clear(pr_response *r) {
    free(r->output);
    memset(r, 0, sizeof *r);
}
