/*
 * imports.c — the module's imports on Peri-C's engine: peri_port (onto the instance's
 * pn_loop), peri_host (onto the caller's callbacks and credentials) and the handful of
 * WASI p1 functions wasi-libc needs (stdout/stderr as log lines, random bytes, empty
 * arguments and environment, proc_exit); every other WASI function answers ENOSYS.
 *
 * Invariant: every pointer and length the module passes is checked against its memory
 * before the host reads or writes (span()); a bad one is answered with PN_E_INVALID
 * and nothing is done, so a hostile module cannot make the host touch anything outside
 * its own memory. Out-pointers are checked before the action, so no handle is made
 * that the module could not learn about.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>

#include "wasmhost/wasmhost_int.h"

#define WASI_ENOSYS 52
#define WASI_EBADF  8
#define WASI_EFAULT 21

void pwh__sig(const char *params, const char *results, pw_valtype *buf, pw_functype *out) {
    uint32_t np = (uint32_t)strlen(params), nr = (uint32_t)strlen(results);
    for (uint32_t i = 0; i < np + nr; i++) {
        char c = i < np ? params[i] : results[i - np];
        buf[i] = c == 'I' ? PW_VT_I64 : PW_VT_I32;
    }
    *out = (pw_functype){.nparams = np, .nresults = nr, .params = buf, .results = buf + np};
}

/* [ptr, ptr + len) inside the caller's memory, or NULL. */
static uint8_t *span(pw_call_ctx *cx, uint32_t ptr, uint32_t len) {
    uint64_t size = 0;
    uint8_t *base = pw_ctx_memory(cx, &size);
    if (!base || (uint64_t)ptr + len > size) return NULL;
    return base + ptr;
}

static void put32(uint8_t *p, uint32_t v) {
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static uint32_t get32(const uint8_t *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

#define U(i) ((uint32_t)args[i].i32)
#define RET(v)                                                                                     \
    do {                                                                                           \
        results[0].i32 = (int32_t)(v);                                                             \
        return PW_OK;                                                                              \
    } while (0)

/* Copies a name of the module into out (NUL-terminated); false when it is outside the
 * memory, empty, too long or holds a NUL. */
static bool name_in(pw_call_ctx *cx, uint32_t ptr, uint32_t len, char out[256]) {
    const uint8_t *p = span(cx, ptr, len);
    if (!p || len == 0 || len > 253 || memchr(p, 0, len)) return false;
    memcpy(out, p, len);
    out[len] = '\0';
    return true;
}

/* ---- peri_port ---------------------------------------------------------------------- */

/* A call that made a handle: tell the module its number and count it as open. */
static pw_status made(pn_err e, pn_handle h, uint8_t *out, uint32_t *open, pw_val *results) {
    if (e == PN_OK) {
        put32(out, h);
        (*open)++;
    }
    results[0].i32 = e;
    return PW_OK;
}

/* shutdown, close, resolve_cancel, timer_cancel: (handle) -> err. */
static pw_status p_handle_op(pw_call_ctx *cx, void *env, const pw_val *args, pw_val *results) {
    (void)cx;
    const pwh__op *op = env;
    const pn_ports *p = op->w->ports;
    pn_err (*fn[])(void *, pn_handle) = {p->shutdown, p->close, p->resolve_cancel, p->timer_cancel};
    RET(fn[op->op](p->ctx, U(0)));
}

static pw_status p_open(pw_call_ctx *cx, void *env, const pw_val *args, pw_val *results) {
    pwh_instance *w = env;
    char host[256], sni[256] = "";
    uint32_t port = U(2), flags = U(3), sni_len = U(5);
    uint8_t *out = span(cx, U(6), 4);
    if (!out || !name_in(cx, U(0), U(1), host) || port == 0 || port > 65535 || (flags & ~1u) ||
        (sni_len && !name_in(cx, U(4), sni_len, sni)))
        RET(PN_E_INVALID);
    pn_stream_opts so = {.tls = flags & 1u, .server_name = sni[0] ? sni : NULL};
    pn_handle h = 0;
    pn_err e = w->ports->open(w->ports->ctx, host, (uint16_t)port, &so, NULL, &h);
    return made(e, h, out, &w->st.streams_open, results);
}

/* starttls(handle, sni_ptr, sni_len) -> err: sni empty = the host given to open. */
static pw_status p_starttls(pw_call_ctx *cx, void *env, const pw_val *args, pw_val *results) {
    pwh_instance *w = env;
    char sni[256] = "";
    if (U(2) && !name_in(cx, U(1), U(2), sni)) RET(PN_E_INVALID);
    if (!U(2) && !span(cx, U(1), 0)) RET(PN_E_INVALID);
    RET(w->ports->starttls(w->ports->ctx, U(0), sni[0] ? sni : NULL));
}

static pw_status p_read(pw_call_ctx *cx, void *env, const pw_val *args, pw_val *results) {
    pwh_instance *w = env;
    uint8_t *buf = span(cx, U(1), U(2)), *out = span(cx, U(3), 4);
    if (!buf || !out || U(2) == 0) RET(PN_E_INVALID);
    size_t got = 0;
    pn_err e = w->ports->read(w->ports->ctx, U(0), buf, U(2), &got);
    put32(out, (uint32_t)got);
    RET(e);
}

static pw_status p_write(pw_call_ctx *cx, void *env, const pw_val *args, pw_val *results) {
    pwh_instance *w = env;
    const uint8_t *p = span(cx, U(1), U(2));
    if (!p) RET(PN_E_INVALID);
    RET(w->ports->write(w->ports->ctx, U(0), p, U(2)));
}

static pw_status p_resolve(pw_call_ctx *cx, void *env, const pw_val *args, pw_val *results) {
    pwh_instance *w = env;
    char name[256];
    uint8_t *out = span(cx, U(2), 4);
    if (!out || !name_in(cx, U(0), U(1), name)) RET(PN_E_INVALID);
    pn_handle h = 0;
    pn_err e = w->ports->resolve(w->ports->ctx, name, NULL, &h);
    return made(e, h, out, &w->st.resolutions_pending, results);
}

static pw_status p_now_ms(pw_call_ctx *cx, void *env, const pw_val *args, pw_val *results) {
    (void)cx, (void)args;
    pwh_instance *w = env;
    results[0].i64 = (int64_t)w->ports->now_ms(w->ports->ctx);
    return PW_OK;
}

static pw_status p_wall_ms(pw_call_ctx *cx, void *env, const pw_val *args, pw_val *results) {
    (void)cx, (void)args;
    pwh_instance *w = env;
    results[0].i64 = w->ports->wall_ms(w->ports->ctx);
    return PW_OK;
}

static pw_status p_timer_set(pw_call_ctx *cx, void *env, const pw_val *args, pw_val *results) {
    pwh_instance *w = env;
    uint8_t *out = span(cx, U(1), 4);
    if (!out || args[0].i64 < 0) RET(PN_E_INVALID);
    pn_handle h = 0;
    pn_err e = w->ports->timer_set(w->ports->ctx, (uint64_t)args[0].i64, NULL, &h);
    return made(e, h, out, &w->st.timers_pending, results);
}

/* ---- peri_host ---------------------------------------------------------------------- */

static pw_status h_send(pw_call_ctx *cx, void *env, const pw_val *args, pw_val *results) {
    pwh_instance *w = env;
    const uint8_t *p = span(cx, U(0), U(1));
    if (!p) RET(PN_E_INVALID);
    if (w->o.on_send && U(1)) w->o.on_send(w->o.ud, p, U(1));
    RET(PN_OK);
}

static pw_status h_log(pw_call_ctx *cx, void *env, const pw_val *args, pw_val *results) {
    (void)results;
    pwh_instance *w = env;
    const uint8_t *p = span(cx, U(1), U(2));
    int level = args[0].i32 < 0 ? 0 : args[0].i32 > 3 ? 3 : args[0].i32;
    if (p && w->o.on_log) w->o.on_log(w->o.ud, level, (const char *)p, U(2));
    return PW_OK; /* a log line never fails anything */
}

static pw_status h_settled(pw_call_ctx *cx, void *env, const pw_val *args, pw_val *results) {
    (void)results;
    pwh_instance *w = env;
    const uint8_t *p = span(cx, U(0), U(1));
    if (!p || w->st.module_reported) return PW_OK; /* once; a bad block is ignored */
    char *r = malloc((size_t)U(1) + 1);
    if (r) {
        memcpy(r, p, U(1));
        r[U(1)] = '\0';
        w->report = r;
    }
    w->st.module_reported = true;
    if (w->o.on_settled) w->o.on_settled(w->o.ud, (const char *)p, U(1));
    return PW_OK;
}

/* credential(kind_ptr, kind_len, buf_ptr, cap, out_len_ptr): the secret of that kind,
 * PN_E_NOT_FOUND when the host has none, PN_E_LIMIT (out_len = the size needed) when
 * cap is too small. */
static pw_status h_credential(pw_call_ctx *cx, void *env, const pw_val *args, pw_val *results) {
    pwh_instance *w = env;
    char kind[256];
    uint8_t *out = span(cx, U(4), 4), *buf = span(cx, U(2), U(3));
    if (!out || !buf || !name_in(cx, U(0), U(1), kind)) RET(PN_E_INVALID);
    for (size_t i = 0; i < w->ncreds; i++) {
        if (strcmp(w->creds[i].kind, kind) != 0) continue;
        size_t n = strlen(w->creds[i].value);
        put32(out, (uint32_t)n);
        if (n > U(3)) RET(PN_E_LIMIT);
        memcpy(buf, w->creds[i].value, n);
        RET(PN_OK);
    }
    put32(out, 0);
    RET(PN_E_NOT_FOUND);
}

/* ---- WASI p1: what wasi-libc needs -------------------------------------------------- */

static pw_status w_fd_write(pw_call_ctx *cx, void *env, const pw_val *args, pw_val *results) {
    pwh_instance *w = env;
    uint32_t fd = U(0), iovs = U(1), n = U(2);
    uint8_t *nw = span(cx, U(3), 4);
    if (fd != 1 && fd != 2) RET(WASI_EBADF);
    if (!nw || n > 1024 || !span(cx, iovs, n * 8)) RET(WASI_EFAULT);
    uint32_t total = 0;
    for (uint32_t i = 0; i < n; i++) {
        const uint8_t *iov = span(cx, iovs + 8 * i, 8);
        uint32_t p = get32(iov), len = get32(iov + 4);
        const uint8_t *d = span(cx, p, len);
        if (!d) RET(WASI_EFAULT);
        if (w->o.on_log && len) w->o.on_log(w->o.ud, fd == 2 ? 0 : 2, (const char *)d, len);
        total += len;
    }
    put32(nw, total);
    RET(0);
}

static pw_status w_random_get(pw_call_ctx *cx, void *env, const pw_val *args, pw_val *results) {
    (void)env;
    uint8_t *p = span(cx, U(0), U(1));
    if (!p) RET(WASI_EFAULT);
    size_t done = 0;
    while (done < U(1)) {
        ssize_t r = getrandom(p + done, U(1) - done, 0);
        if (r <= 0) RET(29); /* EIO */
        done += (size_t)r;
    }
    RET(0);
}

static pw_status w_sizes_get(pw_call_ctx *cx, void *env, const pw_val *args, pw_val *results) {
    (void)env;
    uint8_t *a = span(cx, U(0), 4), *b = span(cx, U(1), 4);
    if (!a || !b) RET(WASI_EFAULT);
    put32(a, 0);
    put32(b, 0);
    RET(0);
}

static pw_status w_list_get(pw_call_ctx *cx, void *env, const pw_val *args, pw_val *results) {
    (void)cx, (void)env, (void)args;
    RET(0); /* nothing to list */
}

static pw_status w_proc_exit(pw_call_ctx *cx, void *env, const pw_val *args, pw_val *results) {
    (void)env, (void)results;
    return pw_ctx_trap(cx, "the module called proc_exit(%d)", args[0].i32);
}

static pw_status w_nosys(pw_call_ctx *cx, void *env, const pw_val *args, pw_val *results) {
    (void)cx, (void)env, (void)args;
    RET(WASI_ENOSYS);
}

static pw_status w_nosys_trap(pw_call_ctx *cx, void *env, const pw_val *args, pw_val *results) {
    (void)env, (void)args, (void)results;
    return pw_ctx_trap(cx, "a WASI function the agent host does not offer was called");
}

typedef struct imp {
    const char *module, *name, *params, *results;
    pw_host_fn fn;
    int op; /* p_handle_op: which call (w->ops[op] is the environment); -1 otherwise */
} imp;

static const imp IMPORTS[] = {
    {"peri_port", "open", "iiiiiii", "i", p_open, -1},
    {"peri_port", "read", "iiii", "i", p_read, -1},
    {"peri_port", "write", "iii", "i", p_write, -1},
    {"peri_port", "shutdown", "i", "i", p_handle_op, 0},
    {"peri_port", "close", "i", "i", p_handle_op, 1},
    {"peri_port", "resolve", "iii", "i", p_resolve, -1},
    {"peri_port", "resolve_cancel", "i", "i", p_handle_op, 2},
    {"peri_port", "now_ms", "", "I", p_now_ms, -1},
    {"peri_port", "wall_ms", "", "I", p_wall_ms, -1},
    {"peri_port", "timer_set", "Ii", "i", p_timer_set, -1},
    {"peri_port", "timer_cancel", "i", "i", p_handle_op, 3},
    {"peri_port", "starttls", "iii", "i", p_starttls, -1},
    {"peri_host", "send", "ii", "i", h_send, -1},
    {"peri_host", "log", "iii", "", h_log, -1},
    {"peri_host", "settled", "ii", "", h_settled, -1},
    {"peri_host", "credential", "iiiii", "i", h_credential, -1},
    {"wasi_snapshot_preview1", "fd_write", "iiii", "i", w_fd_write, -1},
    {"wasi_snapshot_preview1", "random_get", "ii", "i", w_random_get, -1},
    {"wasi_snapshot_preview1", "environ_sizes_get", "ii", "i", w_sizes_get, -1},
    {"wasi_snapshot_preview1", "args_sizes_get", "ii", "i", w_sizes_get, -1},
    {"wasi_snapshot_preview1", "environ_get", "ii", "i", w_list_get, -1},
    {"wasi_snapshot_preview1", "args_get", "ii", "i", w_list_get, -1},
    {"wasi_snapshot_preview1", "proc_exit", "i", "", w_proc_exit, -1},
};

static bool is(const char *s, const char *p, size_t n) {
    return strlen(s) == n && memcmp(s, p, n) == 0;
}

bool pwh__resolve(void *ctx, pw_store *s, const pw_module *m, const pw_import_desc *d,
                  pw_extern *out) {
    pwh_instance *w = ctx;
    if (d->kind != PW_EXTERN_FUNC) return false;
    pw_error e;
    pw_func *f = NULL;
    for (size_t i = 0; i < sizeof IMPORTS / sizeof *IMPORTS && !f; i++) {
        const imp *x = &IMPORTS[i];
        if (!is(x->module, d->module, d->module_len) || !is(x->name, d->name, d->name_len))
            continue;
        /* made with the ABI's own type: an import declared otherwise fails to link */
        pw_valtype vt[8];
        pw_functype ft;
        pwh__sig(x->params, x->results, vt, &ft);
        void *env = x->op >= 0 ? (void *)&w->ops[x->op] : (void *)w;
        f = pw_func_new_host(s, &ft, x->fn, env, &e);
        if (!f) return false;
    }
    if (!f && is("wasi_snapshot_preview1", d->module, d->module_len)) {
        /* any other WASI function: ENOSYS when it returns an errno, else a trap */
        pw_functype ft;
        if (!pw_module_import_functype(m, d->index, &ft)) return false;
        bool errno_shape = ft.nresults == 1 && ft.results[0] == PW_VT_I32;
        f = pw_func_new_host_for_import(s, m, d->index, errno_shape ? w_nosys : w_nosys_trap, w,
                                        &e);
    }
    if (!f) return false;
    out->kind = PW_EXTERN_FUNC;
    out->u.func = f;
    return true;
}

/* ---- the destination allow-list ----------------------------------------------------- */

bool pwh__allow_parse(pwh_instance *w, const char *const *v, size_t n) {
    w->allow = calloc(n ? n : 1, sizeof *w->allow);
    if (!w->allow) {
        snprintf(w->err, sizeof w->err, "out of memory");
        return false;
    }
    for (size_t i = 0; i < n; i++) {
        const char *s = v[i] ? v[i] : "";
        const char *colon = strrchr(s, ':');
        const char *h = s, *hend = colon;
        if (s[0] == '[') {
            h = s + 1;
            hend = strchr(s, ']');
            if (!hend || hend[1] != ':')
                hend = NULL;
            else
                colon = hend + 1;
        }
        char *end = NULL;
        long port = colon ? strtol(colon + 1, &end, 10) : 0;
        size_t hl = hend ? (size_t)(hend - h) : 0;
        if (!colon || !hend || hl == 0 || hl >= sizeof w->allow[0].host || !end || *end ||
            port < 1 || port > 65535) {
            snprintf(w->err, sizeof w->err,
                     "allow-list entry '%.100s' is not host:port (IPv6 in brackets)", s);
            return false;
        }
        pwh__allow *a = &w->allow[w->nallow++];
        for (size_t k = 0; k < hl; k++)
            a->host[k] = (char)tolower((unsigned char)h[k]);
        a->host[hl] = '\0';
        a->port = (uint16_t)port;
    }
    return true;
}

/* The name given to open (or resolve, port 0) must be listed; an address it resolves
 * to is granted when its port is one a listed destination uses (the name was checked
 * first, so the address belongs to a granted destination). */
bool pwh__policy(void *ctx, const char *name, const char *addr, uint16_t port) {
    pwh_instance *w = ctx;
    for (size_t i = 0; i < w->nallow; i++) {
        const pwh__allow *a = &w->allow[i];
        if (port && a->port != port) continue;
        if (!name && addr) return true;
        if (name && strcasecmp(a->host, name) == 0) return true;
    }
    return false;
}
