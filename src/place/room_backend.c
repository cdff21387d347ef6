/*
 * room_backend.c — the wasm_room backend: host-side admission, then one contract call
 * in the room (pr_run), and the evidence `peri.room-lifecycle.v1`.
 *
 * Admission is the ONLY producer of the typed runtime_unsupported outcome. It looks
 * only at the request (declared requirements; network, which the room never gives) and
 * runs before anything else of the attempt: no room file system (the workspace of a
 * room run) is built and no guest instruction runs before it passes. Whatever the
 * guest prints afterwards is a result, never an outcome.
 *
 * The result JSON of a wasm program is the room's return text, byte for byte as
 * `peri isolate run` prints it, with "backend", "decision", the applied "limits"
 * (and "capped", "stopped_by" when there is something to say) appended.
 *
 * Limits: the attempt runs under the tighter of the request's limits (defaults filled
 * in) and the room host's ceilings (pr_host_limits); a request value above a ceiling
 * is lowered to it and named in "capped", never refused. The room stops the run at
 * them with its own message for the class (pr_run_with); "stopped_by" names the class.
 * Cancel: the caller's pl_cancel is polled by the room's watchdog, which raises the
 * engine's interrupt; the result is then "cancelled", never a limit or a trap.
 *
 * Capabilities: a guest hook run gets the attempt's grant (the policy's handler, the
 * report's log); the evidence lists every dispatch and whether one committed.
 */
#include "place_int.h"

#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char *b64(const uint8_t *b, size_t n) {
    if (n > (SIZE_MAX / 4) * 3 - 3 || n > INT32_MAX) return NULL;
    char *o = malloc(4 * ((n + 2) / 3) + 1);
    if (o) EVP_EncodeBlock((unsigned char *)o, b, (int)n);
    return o;
}

/* {"args":[...],"files":{...}} as the room's input. */
static char *room_input(const pl_request *r, size_t *len) {
    pj_t *o = pj_object(), *a = pj_array(), *f = pj_object();
    bool ok = o && a && f;
    for (size_t i = 0; ok && i < r->nargs; i++)
        ok = !pj_array_append_new(a, pj_string(r->args[i]));
    for (size_t i = 0; ok && i < r->nfiles; i++)
        ok = !pj_object_set_new(f, r->files[i].path,
                                pj_stringn(r->files[i].text, r->files[i].text_len));
    ok = ok && !pj_object_set(o, "args", a) && !pj_object_set(o, "files", f);
    char *s = ok ? pl__json_dump(o, len) : NULL;
    pj_decref(a);
    pj_decref(f);
    pj_decref(o);
    return s;
}

/* Fills res from the room's return text (and keeps the text as the result JSON). */
static bool from_room_text(pl_result *res, const char *text, size_t len, const pl_decision *d) {
    pj_error_t je;
    pj_t *o = pj_loadb(text, len, 0, &je);
    if (!pj_is_object(o)) {
        pj_decref(o);
        return false;
    }
    pj_t *v;
    res->ok = pj_is_true(pj_object_get(o, "ok"));
    res->exit_code = (int)pj_integer_value(pj_object_get(o, "exitCode"));
    v = pj_object_get(o, "stdout");
    res->stdout_text = strndup(pj_string_value(v) ? pj_string_value(v) : "", pj_string_length(v));
    res->stdout_len = pj_string_length(v);
    v = pj_object_get(o, "stderr");
    res->stderr_text = strndup(pj_string_value(v) ? pj_string_value(v) : "", pj_string_length(v));
    res->stderr_len = pj_string_length(v);
    if ((v = pj_object_get(o, "error")) && pj_is_string(v)) res->error = strdup(pj_string_value(v));
    pj_t *files = pj_object_get(o, "files");
    size_t n = pj_object_size(files);
    bool ok = res->stdout_text && res->stderr_text;
    if (n) {
        res->files = calloc(n, sizeof *res->files);
        ok = ok && res->files;
        const char *k;
        pj_object_foreach(files, k, v) {
            if (!ok) break;
            pl_out_file *f = &res->files[res->nfiles++];
            f->path = strdup(k);
            f->len = pj_string_length(v);
            f->text = malloc(f->len + 1);
            ok = f->path && f->text;
            if (ok) {
                memcpy(f->text, pj_string_value(v), f->len);
                f->text[f->len] = 0;
            }
        }
    }
    pj_decref(o);
    if (!ok || !pl__result_finish(res, d)) return false;
    /* The room's own bytes, then backend and decision. */
    const char *be = pl_backend_name(d->backend);
    size_t xlen = 0;
    char *extra = pl__result_extra_text(res, &xlen);
    size_t cap = len + strlen(be) + strlen(d->identity) + xlen + 64;
    char *j = extra ? malloc(cap) : NULL;
    if (!j || len < 2 || text[len - 1] != '}') {
        free(j);
        free(extra);
        return true; /* keep the re-serialised form */
    }
    int m = snprintf(j, cap, "%.*s,\"backend\":\"%s\",\"decision\":\"%s\"%s%s}", (int)(len - 1),
                     text, be, d->identity, xlen ? "," : "", extra);
    free(extra);
    free(res->json);
    res->json = j;
    res->json_len = (size_t)m;
    return true;
}

static pj_t *caps_value(const pr_cap_log *l) {
    pj_t *a = pj_array();
    for (size_t i = 0; a && l && i < l->n; i++) {
        const pr_cap_record *c = &l->v[i];
        char at[PB_ISO_TIME_LEN];
        pb_iso_time(c->at_ms, at);
        pj_t *o = pj_pack("{s:s, s:s, s:s, s:s, s:b}", "op", c->op, "arg", c->arg, "at", at,
                          "status", pr_cap_status_name(c->status), "committed", c->committed);
        if (!o || pj_array_append_new(a, o)) {
            pj_decref(a);
            return NULL;
        }
    }
    return a;
}

char *pl_cap_log_json(const pr_cap_log *l, size_t *len) {
    pj_t *a = caps_value(l);
    char *s = a ? pl__json_dump(a, len) : NULL;
    pj_decref(a);
    return s;
}

static char *room_evidence(const pl_attempt *at, const char *admission, bool fs_built, bool started,
                           const char *end, const char *error) {
    pj_t *o = pj_object();
    if (!o) return NULL;
    const pl_result *res = at->res;
    bool ok = !pj_object_set_new(o, "schema_version", pj_string("peri.room-lifecycle.v1")) &&
              !pj_object_set_new(o, "execution_id", pj_string(at->execution_id)) &&
              !pj_object_set_new(o, "decision", pj_string(at->dec->identity)) &&
              !pj_object_set_new(o, "backend", pj_string("wasm_room")) &&
              !pj_object_set_new(o, "admission", pj_string(admission)) &&
              !pj_object_set_new(o, "workspace_acquired", pj_boolean(fs_built)) &&
              !pj_object_set_new(o, "guest_started", pj_boolean(started)) &&
              !pj_object_set_new(o, "end", pj_string(end));
    if (ok && res->has_limits)
        ok = !pj_object_set_new(o, "limits", pl__limits_json(&res->limits, false));
    if (ok && res->capped) ok = !pj_object_set_new(o, "capped", pl__capped_json(res->capped));
    if (ok && error) ok = !pj_object_set_new(o, "error", pj_string(error));
    /* Every capability dispatch (what, when, status, committed); a committed one means
     * effects outside the room, after which the run is never promoted. */
    const pr_cap_log *caps = at->grant ? at->grant->log : NULL;
    if (ok && caps && caps->n_all) {
        ok = !pj_object_set_new(o, "capabilities", caps_value(caps)) &&
             !pj_object_set_new(o, "capability_calls", pj_integer((pj_int_t)caps->n_all)) &&
             !pj_object_set_new(o, "effects_committed", pj_boolean(caps->committed));
        if (ok && caps->committed)
            ok = !pj_object_set_new(o, "promotion",
                                    pj_string("impossible: a capability dispatch committed"));
    }
    char *s = ok ? pl__json_dump(o, NULL) : NULL;
    pj_decref(o);
    return s;
}

/* The room's watchdog polls this: a cancelled request stops its room run. */
static bool room_cancelled(void *ud) {
    return pl_cancel_triggered((const pl_cancel *)ud);
}

#define MIB (1024u * 1024u)

/* The room attempt's limits: the tighter of the request's (defaults filled in) and the
 * room host's; *capped names the request values above a ceiling (0 = "not given" is
 * never capped). processes does not apply in the room (one thread, no processes). */
static void room_limits(pl_ctx *pc, const pl_limits *asked, pl_limits *applied, unsigned *capped,
                        pr_limits *pr) {
    pr_limits ceil;
    pr_host_limits(pc->room, &ceil);
    pl_limits want = pl__limits_effective(asked);
    uint64_t mem_mib = ceil.memory_cap / MIB ? ceil.memory_cap / MIB : 1;
    *capped = 0;
    applied->cpu_ms = want.cpu_ms < ceil.cpu_ms ? want.cpu_ms : ceil.cpu_ms;
    applied->wall_ms = want.wall_ms < ceil.wall_ms ? want.wall_ms : ceil.wall_ms;
    applied->memory_mib = want.memory_mib < mem_mib ? want.memory_mib : (uint32_t)mem_mib;
    applied->output_bytes =
        want.output_bytes < ceil.output_max ? want.output_bytes : ceil.output_max;
    applied->processes = 0;
    if (asked->cpu_ms > ceil.cpu_ms) *capped |= PL_LIMIT_CPU_MS;
    if (asked->wall_ms > ceil.wall_ms) *capped |= PL_LIMIT_WALL_MS;
    if (asked->memory_mib > mem_mib) *capped |= PL_LIMIT_MEMORY_MIB;
    if (asked->output_bytes > ceil.output_max) *capped |= PL_LIMIT_OUTPUT_BYTES;
    pr->cpu_ms = applied->cpu_ms;
    pr->wall_ms = applied->wall_ms;
    /* a memory ceiling that is not whole MiB stays the host's own */
    pr->memory_cap = (uint64_t)applied->memory_mib * MIB < ceil.memory_cap
                         ? (uint64_t)applied->memory_mib * MIB
                         : ceil.memory_cap;
    pr->output_max = applied->output_bytes;
}

static pl_stop stop_of(pr_stop s) {
    switch (s) {
    case PR_STOP_CPU: return PL_STOP_CPU;
    case PR_STOP_WALL: return PL_STOP_WALL;
    case PR_STOP_MEMORY: return PL_STOP_MEMORY;
    case PR_STOP_OUTPUT: return PL_STOP_OUTPUT;
    case PR_STOP_CANCEL: return PL_STOP_CANCELLED;
    default: return PL_STOP_NONE;
    }
}

/* The evidence's "end" for a run the room stopped (the native evidence's names). */
static const char *end_of(pl_stop s, pr_kind kind) {
    switch (s) {
    case PL_STOP_CPU: return "cpu_limit";
    case PL_STOP_WALL: return "wall_limit";
    case PL_STOP_MEMORY: return "memory_limit";
    case PL_STOP_OUTPUT: return "output_limit";
    case PL_STOP_CANCELLED: return "cancelled";
    default: return kind == PR_KIND_NONE ? "exited" : pr_kind_name(kind);
    }
}

bool pl__room_attempt(pl_ctx *pc, const pl_request *r, const char *raw, size_t raw_len,
                      pl_cancel *cancel, pl_attempt *at, bool *promotable, pl_outcome *outcome,
                      pl_error *err) {
    *promotable = false;
    pl_result *res = at->res;
    pr_limits prl;
    res->has_limits = true;
    room_limits(pc, &r->limits, &res->limits, &res->capped, &prl);
    /* 1. Admission: before any room file system exists, before any guest code. */
    uint32_t unsupported = r->requirements | (r->network ? PL_REQ_NETWORK : 0);
    if (unsupported) {
        pl__outcome_make(outcome, unsupported, raw, raw_len);
        *promotable = true;
        *at->evidence = room_evidence(at, "runtime_unsupported", false, false, "not_started", NULL);
        pl__result_fail(res,
                        "runtime_unsupported: the room does not provide the required features");
        return pl__result_finish(res, at->dec) || pl__fail(err, PL_ERR_HOST, "out of memory");
    }
    if (r->stdin_len && r->kind != PL_PROGRAM_RUBY &&
        r->kind != PL_PROGRAM_PYTHON) { /* the language hooks pass stdin on */
        *at->evidence = room_evidence(at, "refused", false, false, "not_started",
                                      "stdin is not available in the room");
        pl__result_fail(res, "stdin is not available to programs in the room");
        return pl__result_finish(res, at->dec) || pl__fail(err, PL_ERR_HOST, "out of memory");
    }
    if (pl_cancel_triggered(cancel)) {
        *at->evidence = room_evidence(at, "passed", false, false, "cancelled", NULL);
        res->stop = PL_STOP_CANCELLED;
        pl__result_fail(res, "cancelled");
        return pl__result_finish(res, at->dec) || pl__fail(err, PL_ERR_HOST, "out of memory");
    }
    pr_error perr = {0};
    pr_response resp = {0};
    bool ran = false, have = false;
    if (r->kind == PL_PROGRAM_RUBY || r->kind == PL_PROGRAM_PYTHON) {
        bool py = r->kind == PL_PROGRAM_PYTHON;
        const pl_ruby_hook *hook = py ? pc->python_hook : pc->ruby_hook;
        if (!hook || !hook->run) {
            *at->evidence = room_evidence(at, "passed", false, false, "not_started",
                                          py ? "python program kind unavailable in the room"
                                             : "ruby program kind unavailable in the room");
            pl__result_fail(res, py ? "python program kind unavailable in the room (no Python "
                                      "runtime is installed in this room host)"
                                    : "ruby program kind unavailable in the room (no Ruby runtime "
                                      "is installed in this room host)");
            return pl__result_finish(res, at->dec) || pl__fail(err, PL_ERR_HOST, "out of memory");
        }
        have =
            hook->run(hook->ud, pc->room, r->program, strlen(r->program), r->files, r->nfiles,
                      r->stdin_data, r->stdin_len, &res->limits, at->grant, cancel, &resp, &perr);
        ran = true;
    } else {
        uint8_t *mod = NULL;
        size_t n = 0;
        if (!pl__read_file(r->program, PL_ROOM_MODULE_MAX, &mod, &n)) {
            *at->evidence =
                room_evidence(at, "passed", false, false, "not_started", "cannot read the module");
            pl__result_fail(res, "cannot read the WebAssembly module");
            return pl__result_finish(res, at->dec) || pl__fail(err, PL_ERR_HOST, "out of memory");
        }
        char digest[PL_DIGEST_LEN];
        pl__sha256_tag(mod, n, digest);
        char *prog = b64(mod, n);
        free(mod);
        size_t in_len = 0;
        char *input = room_input(r, &in_len);
        if (!prog || !input) {
            free(prog);
            free(input);
            return pl__fail(err, PL_ERR_HOST, "out of memory");
        }
        pr_request q = {
            {"LOADER", 6}, {"place", 5}, {digest + 7, 64}, {prog, strlen(prog)}, {input, in_len}};
        pr_run_opts ro = {.limits = prl, .cancelled = room_cancelled, .cancel_ud = cancel};
        have = pr_run_with(pc->room, &q, &ro, &resp, &perr);
        ran = true;
        free(prog);
        free(input);
    }
    if (have) {
        res->stop = stop_of(resp.stop); /* the output limit: a result with the room's text */
        bool ok = from_room_text(res, resp.output, resp.output_len, at->dec);
        pr_response_clear(&resp);
        if (!ok) return pl__fail(err, PL_ERR_HOST, "out of memory reading the room's result");
        *at->evidence = room_evidence(at, "passed", true, ran, end_of(res->stop, PR_KIND_NONE),
                                      res->stop ? res->error : NULL);
        return *at->evidence || pl__fail(err, PL_ERR_HOST, "out of memory");
    }
    /* A contract exception: the room's exact message is the error; a cancel is the
     * typed "cancelled" (the room's text stays in the evidence). */
    res->stop = perr.kind == PR_KIND_RUN_FAILED ? stop_of(perr.stop) : PL_STOP_NONE;
    /* A script stopped by a limit or a cancel: what it wrote until then comes with the
     * error (the interpreters' hook hands it back; a WASI program's room does not). */
    if (resp.output && res->stop != PL_STOP_NONE) /* else, or out of memory: the error alone */
        (void)from_room_text(res, resp.output, resp.output_len, at->dec);
    pr_response_clear(&resp);
    pl__result_fail(res, res->stop == PL_STOP_CANCELLED ? "cancelled" : perr.message);
    /* conservative: only a contract violation proves the guest never started */
    bool maybe_started = ran && perr.kind != PR_KIND_VIOLATION;
    *at->evidence = room_evidence(at, "passed", true, maybe_started, end_of(res->stop, perr.kind),
                                  perr.message);
    return pl__result_finish(res, at->dec) || pl__fail(err, PL_ERR_HOST, "out of memory");
}
