/*
 * host.c — one agent-host module instance on Peri-C's engine (pwh_*): instantiation
 * and the ABI check of its exports, the export calls under the no-re-entrancy rule,
 * delivery of port events from the instance's pn_loop to peri_port_event, and the
 * settlement counts the caller reuses capacity by.
 *
 * Owns: the engine store (and through it the instance and its memory), the ports loop,
 * the parsed allow-list, copies of the credentials and the module's settled report.
 * Invariants: `busy` is true exactly while an export runs, and nothing calls an export
 * while it is; after a trap (`ended`) no export is called again, the ports are closed
 * and their settling events are still counted, so settlement is reported either way.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wasmhost/wasmhost_int.h"

static void fail(pwh_instance *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void fail(pwh_instance *w, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(w->err, sizeof w->err, fmt, ap);
    va_end(ap);
}

/* The instance ends: no export runs again; its ports are closed and settle. */
static void end(pwh_instance *w) {
    w->ended = true;
    w->st.ended = true;
    if (w->loop) pn_loop_close_all(w->loop);
}

/* An export called from inside another (a callback of an import): refused. */
static bool nested(pwh_instance *w, const char *name) {
    if (!w->busy) return false;
    fail(w, "%s: another export of this instance is running", name);
    return true;
}

static pwh_status call(pwh_instance *w, pw_func *f, const char *name, const pw_val *args,
                       uint32_t nargs, pw_val *res, uint32_t nres) {
    if (w->ended) {
        fail(w, "the module instance has ended");
        return PWH_E_TRAP;
    }
    if (w->busy) {
        fail(w, "%s: another export of this instance is running", name);
        return PWH_E_BUSY;
    }
    w->busy = true;
    pw_error e = {0};
    pw_status s = pw_call(w->store, f, args, nargs, res, nres, &e);
    w->busy = false;
    if (s != PW_OK) {
        fail(w, "%s: %s", name, e.message[0] ? e.message : "the call failed");
        end(w);
        return s == PW_ERR_NOMEM ? PWH_E_NOMEM : PWH_E_TRAP;
    }
    return PWH_OK;
}

/* Hands bytes to the module in a block from peri_alloc (0/0 for none). A block outside
 * the memory breaks the ABI and ends the instance. */
static pwh_status pass(pwh_instance *w, const void *data, size_t len, uint32_t *ptr) {
    *ptr = 0;
    if (len == 0) return PWH_OK;
    if (len > UINT32_MAX) {
        fail(w, "%zu bytes do not fit the module's memory", len);
        return PWH_E_ARG;
    }
    pw_val a = {.i32 = (int32_t)len}, r = {0};
    pwh_status s = call(w, w->f_alloc, "peri_alloc", &a, 1, &r, 1);
    if (s != PWH_OK) return s;
    uint32_t p = (uint32_t)r.i32;
    if (p == 0) {
        fail(w, "peri_alloc(%zu): the module is out of memory", len);
        return PWH_E_NOMEM;
    }
    uint64_t size = 0;
    uint8_t *base = pw_memory_data(w->mem, &size);
    if ((uint64_t)p + len > size) {
        fail(w, "peri_alloc(%zu) returned a block outside the module's memory", len);
        end(w);
        return PWH_E_TRAP;
    }
    memcpy(base + p, data, len);
    *ptr = p;
    return PWH_OK;
}

static void account(pwh_instance *w, const pn_event *e) {
    pwh_settlement *st = &w->st;
    bool settle = true;
    if (e->kind == PN_EV_CLOSED) {
        if (st->streams_open) st->streams_open--;
        st->streams_settled++;
    } else if (e->kind == PN_EV_RESOLVED) {
        if (st->resolutions_pending) st->resolutions_pending--;
        st->resolutions_settled++;
    } else if (e->kind == PN_EV_TIMER) {
        if (st->timers_pending) st->timers_pending--;
        st->timers_settled++;
    } else {
        settle = false;
    }
    if (settle && e->err == PN_E_CLOSED) st->closed_by_host++;
}

static void on_event(void *ctx, const pn_event *e) {
    pwh_instance *w = ctx;
    account(w, e);
    if (w->ended) return;
    /* the payload: the detail of a failure, or the addresses separated by NUL bytes */
    char buf[2048];
    size_t n = 0;
    if (e->kind == PN_EV_RESOLVED && e->err == PN_OK) {
        for (size_t i = 0; i < e->naddrs; i++) {
            size_t l = strlen(e->addrs[i]);
            if (n + l + 1 > sizeof buf) break;
            memcpy(buf + n, e->addrs[i], l);
            n += l;
            buf[n++] = '\0';
        }
        if (n) n--; /* separators, not terminators */
    } else if (e->detail) {
        n = strlen(e->detail);
        if (n > sizeof buf) n = sizeof buf;
        memcpy(buf, e->detail, n);
    }
    uint32_t ptr = 0;
    pwh_status s = pass(w, buf, n, &ptr);
    if (s == PWH_E_TRAP) return;
    pw_val a[5] = {{.i32 = (int32_t)e->kind},
                   {.i32 = (int32_t)e->handle},
                   {.i32 = (int32_t)e->err},
                   {.i32 = (int32_t)ptr},
                   {.i32 = ptr ? (int32_t)n : 0}};
    call(w, w->f_event, "peri_port_event", a, 5, NULL, 0);
}

/* The export `name` if it has exactly this signature; NULL (and w->err) otherwise. */
static pw_func *export_fn(pwh_instance *w, const char *name, const char *params,
                          const char *results, bool required) {
    pw_extern ex;
    if (!pw_instance_export(w->inst, name, strlen(name), &ex) || ex.kind != PW_EXTERN_FUNC) {
        if (required) fail(w, "the module does not export the function %s", name);
        return NULL;
    }
    pw_valtype vt[8];
    pw_functype want, got;
    pwh__sig(params, results, vt, &want);
    pw_func_type(ex.u.func, &got);
    bool same = got.nparams == want.nparams && got.nresults == want.nresults;
    for (uint32_t i = 0; same && i < want.nparams; i++)
        same = got.params[i] == want.params[i];
    for (uint32_t i = 0; same && i < want.nresults; i++)
        same = got.results[i] == want.results[i];
    if (!same) {
        fail(w, "the export %s does not have the ABI's type (docs/wasm-host.md)", name);
        return NULL;
    }
    return ex.u.func;
}

static bool bind_exports(pwh_instance *w) {
    pw_extern ex;
    if (!pw_instance_export(w->inst, "memory", 6, &ex) || ex.kind != PW_EXTERN_MEMORY) {
        fail(w, "the module does not export its memory");
        return false;
    }
    w->mem = ex.u.memory;
    w->f_alloc = export_fn(w, "peri_alloc", "i", "i", true);
    if (w->f_alloc) w->f_start = export_fn(w, "peri_start", "ii", "i", true);
    if (w->f_start) w->f_input = export_fn(w, "peri_input", "ii", "i", true);
    if (w->f_input) w->f_event = export_fn(w, "peri_port_event", "iiiii", "", true);
    if (w->f_event) w->f_close = export_fn(w, "peri_close", "", "i", true);
    if (!w->f_close) return false;
    w->err[0] = '\0';
    w->f_input_end = export_fn(w, "peri_input_end", "", "", false);
    w->f_free = export_fn(w, "peri_free", "i", "", false);
    if (w->err[0]) return false; /* present with a wrong type */
    return true;
}

static bool copy_creds(pwh_instance *w, const pwh_opts *o) {
    size_t n = o->credentials ? o->ncredentials : 0;
    if (!n) return true;
    w->creds = calloc(n, sizeof *w->creds);
    if (!w->creds) return false;
    for (size_t i = 0; i < n; i++) {
        const pwh_credential *c = &o->credentials[i];
        char *k = strdup(c->kind ? c->kind : ""), *v = strdup(c->value ? c->value : "");
        w->creds[w->ncreds++] = (pwh_credential){k, v};
        if (!k || !v) return false;
    }
    return true;
}

pwh_instance *pwh_new(const pwh_opts *o, char *err, size_t errlen) {
    if (!o || !o->module) {
        snprintf(err, errlen, "pwh_new: a module is required");
        return NULL;
    }
    pwh_instance *w = calloc(1, sizeof *w);
    if (!w) {
        snprintf(err, errlen, "pwh_new: out of memory");
        return NULL;
    }
    w->o = *o;
    for (int i = 0; i < 4; i++)
        w->ops[i] = (pwh__op){w, i};
    w->o.allow = NULL;
    w->o.credentials = NULL;
    if (!copy_creds(w, o)) {
        fail(w, "out of memory");
        goto bad;
    }
    if (!pwh__allow_parse(w, o->allow, o->allow ? o->nallow : 0)) goto bad;
    pn_loop_opts lo = {.on_event = on_event,
                       .event_ctx = w,
                       .policy = pwh__policy,
                       .policy_ctx = w,
                       .ca_file = o->ca_file,
                       .connect_timeout_ms = o->connect_timeout_ms,
                       .max_handles = o->max_handles ? o->max_handles : 256};
    char lerr[200];
    if (!(w->loop = pn_loop_new(&lo, lerr, sizeof lerr))) {
        fail(w, "%s", lerr);
        goto bad;
    }
    w->ports = pn_loop_ports(w->loop);
    pw_store_config sc = {.memory_cap = o->memory_cap ? o->memory_cap : (1ull << 30),
                          .engine = o->engine};
    pw_error pe = {0};
    if (!(w->store = pw_store_new(&sc, &pe))) {
        fail(w, "engine store: %s", pe.message);
        goto bad;
    }
    if (!(w->inst = pw_instantiate(w->store, o->module, pwh__resolve, w, &pe))) {
        fail(w, "instantiate: %s", pe.message);
        goto bad;
    }
    if (!bind_exports(w)) goto bad;
    pw_func *init = export_fn(w, "_initialize", "", "", false);
    if (w->err[0]) goto bad;
    if (init && call(w, init, "_initialize", NULL, 0, NULL, 0) != PWH_OK) goto bad;
    return w;
bad:
    snprintf(err, errlen, "%s", w->err);
    pwh_free(w);
    return NULL;
}

void pwh_free(pwh_instance *w) {
    if (!w) return;
    pn_loop_free(w->loop);
    if (w->store) pw_store_free(w->store);
    for (size_t i = 0; i < w->ncreds; i++) {
        free((char *)w->creds[i].kind);
        free((char *)w->creds[i].value);
    }
    free(w->creds);
    free(w->allow);
    free(w->report);
    free(w);
}

/* Calls an (ptr, len) -> err export with the bytes. */
static pwh_status call_bytes(pwh_instance *w, pw_func *f, const char *name, const void *data,
                             size_t len) {
    uint32_t ptr;
    pwh_status s = pass(w, data, len, &ptr);
    if (s != PWH_OK) return s;
    pw_val a[2] = {{.i32 = (int32_t)ptr}, {.i32 = (int32_t)len}}, r = {0};
    if ((s = call(w, f, name, a, 2, &r, 1)) != PWH_OK) return s;
    w->module_err = r.i32;
    if (r.i32 < 0) {
        fail(w, "%s returned %d (%s)", name, r.i32, pn_err_name((pn_err)r.i32));
        return PWH_E_MODULE;
    }
    return PWH_OK;
}

pwh_status pwh_start(pwh_instance *w, const char *json, size_t len) {
    if (!w || (!json && len)) return PWH_E_ARG;
    if (nested(w, "peri_start")) return PWH_E_BUSY;
    if (w->started || w->closing) {
        fail(w, "peri_start: the instance was already started");
        return PWH_E_STATE;
    }
    pwh_status s = call_bytes(w, w->f_start, "peri_start", json, len);
    if (s == PWH_OK) w->started = true;
    return s;
}

pwh_status pwh_input(pwh_instance *w, const void *data, size_t len) {
    if (!w || (!data && len)) return PWH_E_ARG;
    if (nested(w, "peri_input")) return PWH_E_BUSY;
    if (!w->started || w->closing) {
        fail(w, "peri_input: the instance is not running");
        return PWH_E_STATE;
    }
    return call_bytes(w, w->f_input, "peri_input", data, len);
}

pwh_status pwh_input_end(pwh_instance *w) {
    if (!w) return PWH_E_ARG;
    if (!w->f_input_end) return PWH_OK;
    return call(w, w->f_input_end, "peri_input_end", NULL, 0, NULL, 0);
}

pwh_status pwh_close(pwh_instance *w) {
    if (!w) return PWH_E_ARG;
    if (nested(w, "peri_close")) return PWH_E_BUSY;
    if (w->closing) return PWH_OK;
    w->closing = true;
    pw_val r = {0};
    pwh_status s = call(w, w->f_close, "peri_close", NULL, 0, &r, 1);
    if (s != PWH_OK) return s;
    w->module_err = r.i32;
    if (r.i32 < 0) {
        fail(w, "peri_close returned %d (%s)", r.i32, pn_err_name((pn_err)r.i32));
        return PWH_E_MODULE;
    }
    return PWH_OK;
}

void pwh_close_ports(pwh_instance *w) {
    if (w) pn_loop_close_all(w->loop);
}

int pwh_run_once(pwh_instance *w, int timeout_ms) {
    if (!w || w->busy) return -1;
    return pn_loop_run_once(w->loop, timeout_ms);
}

int pwh_watch(pwh_instance *w, int fd, void (*on_ready)(void *arg), void *arg) {
    if (!w) {
        errno = EINVAL;
        return -1;
    }
    return pn_loop_watch(w->loop, fd, on_ready, arg);
}

void pwh_settlement_get(const pwh_instance *w, pwh_settlement *out) {
    *out = w->st;
    out->settled = pn_loop_settled(w->loop);
}

const char *pwh_settled_report(const pwh_instance *w) {
    return w->report;
}

const char *pwh_error(const pwh_instance *w) {
    return w ? w->err : "no instance";
}

uint64_t pwh_memory_size(pwh_instance *w) {
    uint64_t size = 0;
    if (w && w->mem) pw_memory_data(w->mem, &size);
    return size;
}

int pwh_last_module_err(const pwh_instance *w) {
    return w->module_err;
}

pw_store *pwh_store(pwh_instance *w) {
    return w->store;
}
