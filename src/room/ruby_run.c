/*
 * ruby_run.c — pr_ruby: Ruby scripts as room runs for the layers above (placement's
 * Ruby hook, the `run` tool). Owns the path of Ruby's module and, after the first run,
 * a reference to the compiled program (whose cache entry also holds the startup
 * snapshot, ruby.c). Each run: a fresh in-memory file system with the job's files, one
 * pr_exec of the script, the room's result JSON (result.c) back.
 *
 * Invariants: the program is loaded once under `mu`; runs after that share it without
 * the lock. A missing module is a clear, typed error naming the path — never a crash,
 * never some other runtime.
 */
#include "room_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define RUBY_SOURCE_MAX (1u << 20)

struct pr_ruby {
    pr_host *host;
    char *path;
    pthread_mutex_t mu;
    pr_program *prog; /* NULL until the first run loads it */
};

pr_ruby *pr_ruby_new(pr_host *h, const char *wasm_path) {
    pr_ruby *rb = calloc(1, sizeof *rb);
    if (!rb) return NULL;
    rb->host = h;
    rb->path = strdup(wasm_path ? wasm_path : "");
    if (!rb->path || pthread_mutex_init(&rb->mu, NULL) != 0) {
        free(rb->path);
        free(rb);
        return NULL;
    }
    return rb;
}

void pr_ruby_free(pr_ruby *rb) {
    if (!rb) return;
    pr_program_release(rb->prog);
    pthread_mutex_destroy(&rb->mu);
    free(rb->path);
    free(rb);
}

/* Reads the whole file (caller frees); NULL with errno. */
static uint8_t *read_all(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    uint8_t *b = NULL;
    size_t n = 0, cap = 0;
    for (;;) {
        if (n == cap) {
            size_t nc = cap ? cap * 2 : (1u << 20);
            if (nc > (64u << 20)) {
                errno = EFBIG;
                break;
            }
            uint8_t *nb = realloc(b, nc);
            if (!nb) {
                errno = ENOMEM;
                break;
            }
            b = nb;
            cap = nc;
        }
        size_t got = fread(b + n, 1, cap - n, f);
        n += got;
        if (got == 0) {
            if (ferror(f)) break;
            fclose(f);
            *len = n;
            return b;
        }
    }
    fclose(f);
    free(b);
    return NULL;
}

static pr_program *program(pr_ruby *rb, pr_error *err) {
    pthread_mutex_lock(&rb->mu);
    if (!rb->prog) {
        size_t len = 0;
        uint8_t *bytes = rb->path[0] ? read_all(rb->path, &len) : NULL;
        if (!bytes) {
            pr__err_set(err, PR_KIND_RUN_FAILED,
                       "ruby program kind unavailable: cannot read Ruby's WebAssembly build at "
                       "%s (%s); scripts/deps.sh fetches @ruby/3.4-wasm-wasi into that cache",
                       rb->path[0] ? rb->path : "(no path configured)",
                       rb->path[0] ? strerror(errno) : "not set");
        } else {
            rb->prog = pr_program_load(rb->host, (pr_str){"ruby", 4}, bytes, len, err);
            free(bytes);
            if (rb->prog && rb->prog->abi != &pr__abi_ruby) {
                pr_program_release(rb->prog);
                rb->prog = NULL;
                pr__err_set(err, PR_KIND_RUN_FAILED,
                           "ruby program kind unavailable: %s is not Ruby's reactor build "
                           "(it does not import rb-js-abi-host)",
                           rb->path);
            }
        }
    }
    pr_program *p = rb->prog;
    if (p) atomic_fetch_add(&p->refs, 1);
    pthread_mutex_unlock(&rb->mu);
    return p;
}

bool pr_ruby_run(pr_ruby *rb, const pr_ruby_job *job, pr_response *out, pr_error *err) {
    memset(out, 0, sizeof *out);
    if (job->source.len > RUBY_SOURCE_MAX || (job->source.len && !job->source.ptr) ||
        job->nfiles > PR_FILES_MAX || (job->nfiles && (!job->paths || !job->contents))) {
        pr__err_set(err, PR_KIND_VIOLATION, "违规：Ruby 任务无效（源码超过 1 MiB 或文件过多）");
        return false;
    }
    pr_program *p = program(rb, err);
    if (!p) return false;
    bool ok = false;
    pr_fs *fs = pr_fs_new();
    if (!fs) {
        pr__err_set(err, PR_KIND_RUN_FAILED, "隔离运行失败：内存不足");
        goto done;
    }
    for (size_t i = 0; i < job->nfiles; i++) {
        if (job->paths[i].len == 0 || job->paths[i].ptr[0] != '/') {
            pr__err_set(err, PR_KIND_VIOLATION, "违规：文件路径必须以 / 开头：%.*s",
                       (int)(job->paths[i].len > 200 ? 200 : job->paths[i].len),
                       job->paths[i].ptr ? job->paths[i].ptr : "");
            goto done;
        }
        if (pr_fs_write(fs, job->paths[i].ptr, job->paths[i].len, job->contents[i].ptr,
                        job->contents[i].len) != 0) {
            pr__err_set(err, PR_KIND_RUN_FAILED, "隔离运行失败：内存不足");
            goto done;
        }
    }
    pr_exec_options opt = {.fs = fs,
                           .stdin_data = (const uint8_t *)job->stdin_data.ptr,
                           .stdin_len = job->stdin_data.len,
                           .source = job->source,
                           .cancelled = job->cancelled,
                           .cancel_ud = job->cancel_ud,
                           .cpu_ms = job->limits.cpu_ms,
                           .wall_ms = job->limits.wall_ms,
                           .memory_cap = job->limits.memory_cap,
                           .output_max = pr_output_cap(job->limits.output_max)};
    pr_outcome oc;
    if (!pr_exec(rb->host, p, &opt, &oc, err)) goto done;
    pb_buf res = {0};
    if (pr__result_json(&oc, fs, &res, err)) {
        out->output = pb_buf_take(&res, &out->output_len);
        if (out->output) {
            uint8_t d[32];
            char hex[65];
            pr_program_digest(p, d);
            pr__hex(d, 32, hex);
            snprintf(out->isolate, sizeof out->isolate, "ruby:%s", hex);
            out->stop = oc.stop;
            ok = true;
        } else {
            pr__err_set(err, PR_KIND_RUN_FAILED, "隔离运行失败：内存不足");
        }
    }
    pb_buf_free(&res);
    pr_outcome_clear(&oc);
done:
    pr_fs_free(fs);
    pr_program_release(p);
    return ok;
}
