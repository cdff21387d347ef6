/*
 * capability.c — the capability dispatch ABI of the room (room.h, docs/python.md): the
 * one door through which a guest asks the host for authority-bearing work.
 *
 * Imports of module "peri_capability":
 *   dispatch(op, op_len, arg, arg_len, data, data_len: i32) -> i32 status
 *       hands the call to the run's handler (pr_exec_options.capability; none: refused)
 *       and keeps its reply; the status is a pr_cap_status.
 *   reply(buf, cap: i32) -> i32 length
 *       copies min(cap, length) bytes of the last reply to buf; (0, 0) asks the length.
 * The same dispatch has a file face for guests that import only WASI (Ruby's official
 * build): a request written to PR_CAP_REQUEST is dispatched when the guest opens
 * PR_CAP_REPLY, whose contents are then the status digit, "\n" and the reply.
 * Every dispatch is appended to the run's log (pr_exec_options.cap_log): operation,
 * argument, wall time, status, committed — refused and malformed calls too.
 *
 * Invariants: guest pointers are checked against the memory before any use; the
 * handler never sees guest memory (it gets copies); a reply is bounded
 * (PR_CAP_REPLY_MAX) and replaced by the next dispatch.
 */
#include "capability.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define PR_CAP_REPLY_MAX (8u << 20)
#define PR_CAP_ARG_MAX   (64u << 10)
#define PR_CAP_DATA_MAX  (8u << 20)

const char *pr_cap_status_name(pr_cap_status s) {
    static const char *const NAMES[] = {[PR_CAP_OK] = "ok",
                                        [PR_CAP_REFUSED] = "refused",
                                        [PR_CAP_FAILED] = "failed",
                                        [PR_CAP_INVALID] = "invalid"};
    return (unsigned)s < sizeof NAMES / sizeof *NAMES ? NAMES[s] : "invalid";
}

void pr_cap_log_clear(pr_cap_log *l) {
    if (!l) return;
    free(l->v);
    memset(l, 0, sizeof *l);
}

static void cut(char *dst, size_t cap, const char *s, size_t n) {
    if (n >= cap) n = cap - 1;
    memcpy(dst, s, n);
    dst[n] = 0;
}

static void record(pr_cap_log *l, const pr_cap_call *call, pr_cap_status st, bool committed) {
    if (!l) return;
    l->n_all++;
    l->committed |= committed;
    if (l->n == PR_CAP_LOG_MAX) {
        l->truncated = true;
        return;
    }
    if (l->n == l->cap) {
        pr_cap_record *nv = pb_grow(l->v, &l->cap, sizeof *nv, 8);
        if (!nv) {
            l->truncated = true;
            return;
        }
        l->v = nv;
    }
    pr_cap_record *r = &l->v[l->n++];
    memset(r, 0, sizeof *r);
    cut(r->op, sizeof r->op, call->op.ptr ? call->op.ptr : "", call->op.len);
    cut(r->arg, sizeof r->arg, call->arg.ptr ? call->arg.ptr : "", call->arg.len);
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    r->at_ms = (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
    r->status = st;
    r->committed = committed;
}

/* A guest range as a host pointer, or NULL when out of bounds (len 0 is fine). */
static const char *range(pw_call_ctx *cx, uint32_t p, uint32_t n, size_t max) {
    uint64_t size = 0;
    uint8_t *b = pw_ctx_memory(cx, &size);
    if (!b || n > max || (uint64_t)p + n > size) return NULL;
    return (const char *)b + p;
}

static void set_reply(pr__cap *c, const char *msg) {
    c->reply.len = 0;
    pb_buf_puts(&c->reply, msg);
}

/* One call: handed to the run's handler with copies of op, arg and data (the handler
 * never sees guest memory), its reply kept in c->reply, the call recorded. bad: the
 * call is malformed (why), nothing is handed on. */
static pr_cap_status dispatch(pr__cap *c, pr_str op, pr_str arg, pr_str data, const char *bad) {
    const pr_exec_options *o = c->rs->opt;
    pr_cap_call call = {op, arg, {"", 0}};
    pr_cap_status st;
    bool committed = false;
    char *copy = NULL;
    c->reply.len = 0;
    if (bad) {
        st = PR_CAP_INVALID;
        set_reply(c, bad);
    } else if (!o->capability) {
        st = PR_CAP_REFUSED;
        set_reply(c, "refused: no capability is granted to this run");
    } else if (!(copy = malloc(op.len + arg.len + data.len + 1))) {
        st = PR_CAP_FAILED;
        set_reply(c, "failed: out of memory");
    } else {
        memcpy(copy, op.ptr, op.len);
        memcpy(copy + op.len, arg.ptr, arg.len);
        memcpy(copy + op.len + arg.len, data.ptr, data.len);
        call = (pr_cap_call){
            {copy, op.len}, {copy + op.len, arg.len}, {copy + op.len + arg.len, data.len}};
        st = o->capability(o->cap_ud, &call, &c->reply, &committed);
        if (st > PR_CAP_INVALID) st = PR_CAP_FAILED;
        if (c->reply.len > PR_CAP_REPLY_MAX) {
            st = PR_CAP_FAILED;
            set_reply(c, "failed: the reply is over 8 MiB");
        }
    }
    record(o->cap_log, &call, st, committed);
    free(copy);
    return st;
}

static pw_status cap_dispatch(pw_call_ctx *cx, void *env, const pw_val *a, pw_val *res) {
    uint32_t v[6];
    for (int i = 0; i < 6; i++)
        v[i] = (uint32_t)a[i].i32;
    const char *op = range(cx, v[0], v[1], 64), *arg = range(cx, v[2], v[3], PR_CAP_ARG_MAX),
               *data = range(cx, v[4], v[5], PR_CAP_DATA_MAX);
    bool ok = op && arg && data;
    res[0].i32 = (int32_t)dispatch(env, (pr_str){op ? op : "", op ? v[1] : 0},
                                   (pr_str){arg ? arg : "", arg ? v[3] : 0},
                                   (pr_str){ok ? data : "", ok ? v[5] : 0},
                                   ok ? NULL : "invalid: a pointer or length is out of bounds");
    return PW_OK;
}

static bool is_path(const char *norm, size_t n, const char *path) {
    return n == strlen(path) && memcmp(norm, path, n) == 0;
}

void pr__cap_fs_open(pr__cap *c, pr_fs *fs, const char *norm, size_t n) {
    if (!is_path(norm, n, PR_CAP_REPLY)) return;
    pr_file *rq = pr__fs_find(fs, PR_CAP_REQUEST, strlen(PR_CAP_REQUEST));
    if (!rq || !rq->node || rq->node->kind != PR_NODE_FILE) return;
    /* The request leaves the file system before the call: one request, one dispatch. */
    size_t len = rq->node->len;
    char *req = malloc(len + 1);
    if (!req) return;
    if (len) memcpy(req, rq->node->data, len);
    pr__fs_remove(fs, rq);
    char *nl1 = memchr(req, '\n', len);
    char *nl2 = nl1 ? memchr(nl1 + 1, '\n', len - (size_t)(nl1 + 1 - req)) : NULL;
    size_t oplen = nl1 ? (size_t)(nl1 - req) : 0, arglen = nl2 ? (size_t)(nl2 - nl1 - 1) : 0;
    const char *bad =
        !nl2 ? "invalid: a request is \"OP\\nARG\\n\" then the data"
        : oplen > 64 || arglen > PR_CAP_ARG_MAX || len - (size_t)(nl2 + 1 - req) > PR_CAP_DATA_MAX
            ? "invalid: the request is too large"
            : NULL;
    pr_str op = {req, bad ? 0 : oplen}, arg = {bad ? req : nl1 + 1, bad ? 0 : arglen};
    pr_str data = {bad ? req : nl2 + 1, bad ? 0 : len - (size_t)(nl2 + 1 - req)};
    pr_cap_status st = dispatch(c, op, arg, data, bad);
    free(req);
    char head[2] = {(char)('0' + st), '\n'};
    pb_buf out = {0};
    bool ok = pb_buf_put(&out, head, 2) &&
              pb_buf_put(&out, c->reply.p ? c->reply.p : "", c->reply.len) &&
              pr_fs_write(fs, PR_CAP_REPLY, strlen(PR_CAP_REPLY), out.p, out.len) == 0;
    if (!ok) {
        static const char FULL[] = "2\nfailed: the reply does not fit in the room's file system";
        pr_fs_write(fs, PR_CAP_REPLY, strlen(PR_CAP_REPLY), FULL, sizeof FULL - 1);
    }
    pb_buf_free(&out);
}

static pw_status cap_reply(pw_call_ctx *cx, void *env, const pw_val *a, pw_val *res) {
    pr__cap *c = env;
    uint32_t p = (uint32_t)a[0].i32, cap = (uint32_t)a[1].i32;
    size_t n = c->reply.len < cap ? c->reply.len : cap;
    if (n) {
        char *dst = (char *)range(cx, p, (uint32_t)n, PR_CAP_REPLY_MAX);
        if (!dst) {
            res[0].i32 = -1;
            return PW_OK;
        }
        memcpy(dst, c->reply.p, n);
    }
    res[0].i32 = (int32_t)c->reply.len;
    return PW_OK;
}

bool pr__cap_is_import(const pw_import_desc *imp) {
    return imp->module_len == strlen(PR_CAP_MODULE) &&
           memcmp(imp->module, PR_CAP_MODULE, imp->module_len) == 0;
}

bool pr__cap_resolve(pr__cap *c, pw_store *s, const pw_import_desc *imp, pw_extern *out) {
    static const pw_valtype I32S[6] = {PW_VT_I32, PW_VT_I32, PW_VT_I32,
                                       PW_VT_I32, PW_VT_I32, PW_VT_I32};
    if (!pr__cap_is_import(imp) || imp->kind != PW_EXTERN_FUNC) return false;
    pw_host_fn fn;
    uint32_t np;
    if (imp->name_len == 8 && memcmp(imp->name, "dispatch", 8) == 0) {
        fn = cap_dispatch;
        np = 6;
    } else if (imp->name_len == 5 && memcmp(imp->name, "reply", 5) == 0) {
        fn = cap_reply;
        np = 2;
    } else {
        return false;
    }
    /* Built with the function's own type: an import of another type fails to link. */
    pw_functype ft = {.nparams = np, .nresults = 1, .params = I32S, .results = I32S};
    pw_error e;
    pw_func *f = pw_func_new_host(s, &ft, fn, c, &e);
    if (!f) return false;
    out->kind = PW_EXTERN_FUNC;
    out->u.func = f;
    return true;
}

void pr__cap_free(pr__cap *c) {
    if (!c) return;
    pb_buf_free(&c->reply);
}
