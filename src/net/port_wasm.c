/*
 * port_wasm.c — the ports inside the WebAssembly form of the agent host: pn_ports over
 * the peri_port imports of docs/wasm-host.md, the peri_port_event export that hands the
 * host's events to the registered callback, and the memory exports peri_alloc and
 * peri_free. Compiled only for wasm32 (__wasi__); natively this file is empty.
 *
 * Owns: the module's one ports context. It is module-global by necessity: an export
 * carries no context argument and a module instance is exactly one agent host, so the
 * instance itself is the caller-owned context here. The context maps each live handle
 * to the owner pointer given when it was made (the ABI carries only the handle), and
 * drops the entry at the handle's settling event. Event payload blocks are the module's:
 * they are freed after the callback returns.
 */
#ifdef __wasi__
#include <stdlib.h>
#include <string.h>

#include "peri/base.h"
#include "peri/net.h"

#define IMPORT(mod, name) __attribute__((import_module(mod), import_name(name)))

IMPORT("peri_port", "open")
int32_t pn__imp_open(const char *host, uint32_t host_len, uint32_t port, uint32_t flags,
                     const char *sni, uint32_t sni_len, uint32_t *out);
IMPORT("peri_port", "read")
int32_t pn__imp_read(uint32_t h, void *buf, uint32_t cap, uint32_t *got);
IMPORT("peri_port", "write") int32_t pn__imp_write(uint32_t h, const void *p, uint32_t len);
IMPORT("peri_port", "shutdown") int32_t pn__imp_shutdown(uint32_t h);
IMPORT("peri_port", "close") int32_t pn__imp_close(uint32_t h);
IMPORT("peri_port", "resolve") int32_t pn__imp_resolve(const char *n, uint32_t len, uint32_t *out);
IMPORT("peri_port", "resolve_cancel") int32_t pn__imp_resolve_cancel(uint32_t h);
IMPORT("peri_port", "now_ms") int64_t pn__imp_now_ms(void);
IMPORT("peri_port", "wall_ms") int64_t pn__imp_wall_ms(void);
IMPORT("peri_port", "timer_set") int32_t pn__imp_timer_set(int64_t delay, uint32_t *out);
IMPORT("peri_port", "timer_cancel") int32_t pn__imp_timer_cancel(uint32_t h);
IMPORT("peri_port", "starttls")
int32_t pn__imp_starttls(uint32_t h, const char *sni, uint32_t sni_len);

typedef struct pn__udent {
    pn_handle h;
    void *ud;
} pn__udent;

typedef struct pn__wasm {
    pn_ports ports;
    pn_event_fn on_event;
    void *event_ctx;
    pn__udent *uds; /* owned */
    size_t nuds, capuds;
} pn__wasm;

static pn__wasm pn__the; /* the module's one ports context (see the header comment) */

static pn_err remember(pn__wasm *w, pn_handle h, void *ud) {
    pn__udent *e = pb_push(&w->uds, &w->nuds, &w->capuds, sizeof *e, 16);
    if (!e) return PN_E_LIMIT;
    *e = (pn__udent){h, ud};
    return PN_OK;
}

static void *lookup(pn__wasm *w, pn_handle h, bool drop) {
    for (size_t i = 0; i < w->nuds; i++) {
        if (w->uds[i].h != h) continue;
        void *ud = w->uds[i].ud;
        if (drop) w->uds[i] = w->uds[--w->nuds];
        return ud;
    }
    return NULL;
}

/* A handle was made: keep its owner pointer, or (out of memory) give the handle up. */
static pn_err made(pn__wasm *w, pn_err e, uint32_t h, void *ud, pn_handle *out,
                   int32_t (*undo)(uint32_t)) {
    if (e != PN_OK) return e;
    if (remember(w, h, ud) != PN_OK) {
        undo(h); /* it settles later; its event then finds no owner and is dropped */
        return PN_E_LIMIT;
    }
    *out = h;
    return PN_OK;
}

static pn_err w_open(void *ctx, const char *host, uint16_t port, const pn_stream_opts *o, void *ud,
                     pn_handle *out) {
    if (!host || !out) return PN_E_INVALID;
    const char *sni = o && o->server_name ? o->server_name : "";
    uint32_t h = 0;
    pn_err e =
        (pn_err)pn__imp_open(host, strlen(host), port, o && o->tls ? 1u : 0u, sni, strlen(sni), &h);
    return made(ctx, e, h, ud, out, pn__imp_close);
}

static pn_err w_read(void *ctx, pn_handle h, void *buf, size_t cap, size_t *got) {
    (void)ctx;
    uint32_t g = 0;
    pn_err e = (pn_err)pn__imp_read(h, buf, cap > UINT32_MAX ? UINT32_MAX : (uint32_t)cap, &g);
    *got = g;
    return e;
}

static pn_err w_write(void *ctx, pn_handle h, const void *data, size_t len) {
    (void)ctx;
    if (len > UINT32_MAX) return PN_E_LIMIT;
    return (pn_err)pn__imp_write(h, data, (uint32_t)len);
}

static pn_err w_shutdown(void *ctx, pn_handle h) {
    (void)ctx;
    return (pn_err)pn__imp_shutdown(h);
}

static pn_err w_close(void *ctx, pn_handle h) {
    (void)ctx;
    return (pn_err)pn__imp_close(h);
}

static pn_err w_resolve(void *ctx, const char *name, void *ud, pn_handle *out) {
    if (!name || !out) return PN_E_INVALID;
    uint32_t h = 0;
    pn_err e = (pn_err)pn__imp_resolve(name, strlen(name), &h);
    return made(ctx, e, h, ud, out, pn__imp_resolve_cancel);
}

static pn_err w_resolve_cancel(void *ctx, pn_handle h) {
    (void)ctx;
    return (pn_err)pn__imp_resolve_cancel(h);
}

static uint64_t w_now(void *ctx) {
    (void)ctx;
    return (uint64_t)pn__imp_now_ms();
}

static int64_t w_wall(void *ctx) {
    (void)ctx;
    return pn__imp_wall_ms();
}

static pn_err w_timer_set(void *ctx, uint64_t delay, void *ud, pn_handle *out) {
    if (!out) return PN_E_INVALID;
    uint32_t h = 0;
    pn_err e = (pn_err)pn__imp_timer_set(delay > INT64_MAX ? INT64_MAX : (int64_t)delay, &h);
    return made(ctx, e, h, ud, out, pn__imp_timer_cancel);
}

static pn_err w_timer_cancel(void *ctx, pn_handle h) {
    (void)ctx;
    return (pn_err)pn__imp_timer_cancel(h);
}

static pn_err w_starttls(void *ctx, pn_handle h, const char *server_name) {
    (void)ctx;
    const char *sni = server_name ? server_name : "";
    return (pn_err)pn__imp_starttls(h, sni, strlen(sni));
}

const pn_ports *pn_wasm_ports(pn_event_fn on_event, void *event_ctx) {
    pn__wasm *w = &pn__the;
    w->on_event = on_event;
    w->event_ctx = event_ctx;
    w->ports = (pn_ports){.ctx = w,
                          .open = w_open,
                          .read = w_read,
                          .write = w_write,
                          .shutdown = w_shutdown,
                          .close = w_close,
                          .resolve = w_resolve,
                          .resolve_cancel = w_resolve_cancel,
                          .now_ms = w_now,
                          .wall_ms = w_wall,
                          .timer_set = w_timer_set,
                          .timer_cancel = w_timer_cancel,
                          .starttls = w_starttls};
    return &w->ports;
}

__attribute__((export_name("peri_alloc"))) void *peri_alloc(uint32_t size) {
    return malloc(size ? size : 1);
}

__attribute__((export_name("peri_free"))) void peri_free(void *p) {
    free(p);
}

__attribute__((export_name("peri_port_event"))) void
peri_port_event(int32_t kind, int32_t handle, int32_t err, char *ptr, uint32_t len) {
    pn__wasm *w = &pn__the;
    bool settle = kind == PN_EV_CLOSED || kind == PN_EV_RESOLVED || kind == PN_EV_TIMER;
    bool known = false;
    for (size_t i = 0; i < w->nuds && !known; i++)
        known = w->uds[i].h == (pn_handle)handle;
    void *ud = lookup(w, (pn_handle)handle, settle);
    pn_event ev = {
        .kind = (pn_event_kind)kind, .handle = (pn_handle)handle, .ud = ud, .err = (pn_err)err};
    /* the payload as C strings: a copy with a terminator after each part */
    char *text = NULL;
    const char **addrs = NULL;
    if (ptr && len) {
        text = malloc((size_t)len + 1);
        if (text) {
            memcpy(text, ptr, len);
            text[len] = '\0';
        }
    }
    if (text && kind == PN_EV_RESOLVED && err == PN_OK) {
        size_t n = 1;
        for (uint32_t i = 0; i < len; i++)
            n += text[i] == '\0';
        addrs = malloc(n * sizeof *addrs);
        if (addrs) {
            size_t k = 0;
            for (char *p = text; k < n; p += strlen(p) + 1)
                addrs[k++] = p;
            ev.addrs = addrs;
            ev.naddrs = n;
        }
    } else if (text) {
        ev.detail = text;
    }
    if (known && w->on_event) w->on_event(w->event_ctx, &ev);
    free(addrs);
    free(text);
    free(ptr);
}
#endif
