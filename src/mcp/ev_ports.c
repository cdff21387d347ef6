/*
 * ev_ports.c — the event-driven MCP client's view of the host's ports (ev_int.h): the
 * same calls, except that every handle is made with the client as its ud, and the owner
 * the caller gave (an HTTP request of the client) is kept in a table until the handle's
 * settling event, so one pointer routes every event of the client and the client knows
 * when all it opened has settled.
 */
#include "mcp/ev_int.h"

#include "peri/base.h"

#include <stdlib.h>
#include <string.h>

static void add(pmcp__ev_ports *p, pn_handle h, void *owner) {
    /* room was reserved before the call that made h (pmcp__ev_ports_reserve) */
    if (p->n < p->cap) p->routes[p->n++] = (pmcp__ev_route){h, owner};
}

static pn_err w_open(void *ctx, const char *host, uint16_t port, const pn_stream_opts *o, void *ud,
                     pn_handle *out) {
    pmcp__ev_ports *p = ctx;
    if (p->n >= p->cap) return PN_E_LIMIT;
    pn_err e = p->real->open(p->real->ctx, host, port, o, p->ud, out);
    if (e == PN_OK) add(p, *out, ud);
    return e;
}

static pn_err w_read(void *ctx, pn_handle h, void *buf, size_t cap, size_t *got) {
    pmcp__ev_ports *p = ctx;
    return p->real->read(p->real->ctx, h, buf, cap, got);
}

static pn_err w_write(void *ctx, pn_handle h, const void *data, size_t len) {
    pmcp__ev_ports *p = ctx;
    return p->real->write(p->real->ctx, h, data, len);
}

static pn_err w_shutdown(void *ctx, pn_handle h) {
    pmcp__ev_ports *p = ctx;
    return p->real->shutdown ? p->real->shutdown(p->real->ctx, h) : PN_E_INVALID;
}

static pn_err w_close(void *ctx, pn_handle h) {
    pmcp__ev_ports *p = ctx;
    return p->real->close(p->real->ctx, h);
}

static pn_err w_resolve(void *ctx, const char *name, void *ud, pn_handle *out) {
    pmcp__ev_ports *p = ctx;
    if (!p->real->resolve) return PN_E_INVALID;
    if (p->n >= p->cap) return PN_E_LIMIT;
    pn_err e = p->real->resolve(p->real->ctx, name, p->ud, out);
    if (e == PN_OK) add(p, *out, ud);
    return e;
}

static pn_err w_resolve_cancel(void *ctx, pn_handle h) {
    pmcp__ev_ports *p = ctx;
    return p->real->resolve_cancel ? p->real->resolve_cancel(p->real->ctx, h) : PN_E_INVALID;
}

static uint64_t w_now_ms(void *ctx) {
    pmcp__ev_ports *p = ctx;
    return p->real->now_ms(p->real->ctx);
}

static int64_t w_wall_ms(void *ctx) {
    pmcp__ev_ports *p = ctx;
    return p->real->wall_ms ? p->real->wall_ms(p->real->ctx) : 0;
}

static pn_err w_timer_set(void *ctx, uint64_t delay_ms, void *ud, pn_handle *out) {
    pmcp__ev_ports *p = ctx;
    if (p->n >= p->cap) return PN_E_LIMIT;
    pn_err e = p->real->timer_set(p->real->ctx, delay_ms, p->ud, out);
    if (e == PN_OK) add(p, *out, ud);
    return e;
}

static pn_err w_timer_cancel(void *ctx, pn_handle h) {
    pmcp__ev_ports *p = ctx;
    return p->real->timer_cancel(p->real->ctx, h);
}

void pmcp__ev_ports_init(pmcp__ev_ports *p, const pn_ports *real, void *ud) {
    memset(p, 0, sizeof *p);
    p->real = real;
    p->ud = ud;
    p->table = (pn_ports){.ctx = p,
                          .open = w_open,
                          .read = w_read,
                          .write = w_write,
                          .shutdown = w_shutdown,
                          .close = w_close,
                          .resolve = w_resolve,
                          .resolve_cancel = w_resolve_cancel,
                          .now_ms = w_now_ms,
                          .wall_ms = w_wall_ms,
                          .timer_set = w_timer_set,
                          .timer_cancel = w_timer_cancel};
}

void pmcp__ev_ports_free(pmcp__ev_ports *p) {
    free(p->routes);
    p->routes = NULL;
    p->n = p->cap = 0;
}

bool pmcp__ev_ports_reserve(pmcp__ev_ports *p, size_t extra) {
    while (p->cap - p->n < extra) {
        pmcp__ev_route *r = pb_grow(p->routes, &p->cap, sizeof *r, 8);
        if (!r) return false;
        p->routes = r;
    }
    return true;
}

void *pmcp__ev_ports_take(pmcp__ev_ports *p, const pn_event *ev) {
    bool settles =
        ev->kind == PN_EV_CLOSED || ev->kind == PN_EV_TIMER || ev->kind == PN_EV_RESOLVED;
    for (size_t i = 0; i < p->n; i++) {
        if (p->routes[i].h != ev->handle) continue;
        void *owner = p->routes[i].owner;
        if (settles) p->routes[i] = p->routes[--p->n];
        return owner;
    }
    return NULL;
}

size_t pmcp__ev_ports_live(const pmcp__ev_ports *p) {
    return p->n;
}
