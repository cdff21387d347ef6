/*
 * http_fake_ports.c — the in-memory pn_ports of the HTTP client's tests (see the header).
 * Streams are handles 1..FAKE_STREAMS, timers FAKE_TIMER0+1...; nothing is reused.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "http_fake_ports.h"

#include <stdio.h>
#include <string.h>

static void push(fake_ports *f, pn_event_kind k, pn_handle h, void *ud, pn_err e,
                 const char *detail) {
    assert_true(f->qlen < FAKE_EVENTS);
    pn_event *ev = &f->q[(f->qhead + f->qlen++) % FAKE_EVENTS];
    memset(ev, 0, sizeof *ev);
    ev->kind = k;
    ev->handle = h;
    ev->ud = ud;
    ev->err = e;
    ev->detail = detail;
}

static fake_stream *stream(fake_ports *f, pn_handle h) {
    if (h < 1 || h > FAKE_STREAMS || !f->s[h - 1].used) return NULL;
    return &f->s[h - 1];
}

static pn_err f_open(void *ctx, const char *host, uint16_t port, const pn_stream_opts *o, void *ud,
                     pn_handle *out) {
    fake_ports *f = ctx;
    if (f->open_result != PN_OK) return f->open_result;
    for (pn_handle h = 1; h <= FAKE_STREAMS; h++) {
        fake_stream *s = &f->s[h - 1];
        if (s->used) continue;
        s->used = true;
        snprintf(s->host, sizeof s->host, "%s", host);
        s->port = port;
        s->tls = o && o->tls;
        snprintf(s->sni, sizeof s->sni, "%s", o && o->server_name ? o->server_name : "");
        s->ud = ud;
        *out = h;
        push(f, PN_EV_OPENED, h, ud, f->opened_err, f->opened_err ? "scripted failure" : NULL);
        if (f->opened_err) {
            s->settling = true;
            push(f, PN_EV_CLOSED, h, ud, f->opened_err, "scripted failure");
        }
        return PN_OK;
    }
    return PN_E_LIMIT;
}

static pn_err f_read(void *ctx, pn_handle h, void *buf, size_t cap, size_t *got) {
    fake_ports *f = ctx;
    fake_stream *s = stream(f, h);
    *got = 0;
    if (!s || s->settled) return PN_E_INVALID;
    size_t avail = s->inbox.len - s->rpos;
    if (avail) {
        size_t n = avail < cap ? avail : cap;
        if (f->read_max && n > f->read_max) n = f->read_max;
        memcpy(buf, s->inbox.p + s->rpos, n);
        s->rpos += n;
        *got = n;
        return PN_OK;
    }
    if (f->read_result != PN_OK) return f->read_result;
    return s->eof ? PN_OK : PN_E_AGAIN;
}

static pn_err f_write(void *ctx, pn_handle h, const void *data, size_t len) {
    fake_ports *f = ctx;
    fake_stream *s = stream(f, h);
    if (!s || s->settled) return PN_E_INVALID;
    if (f->write_result != PN_OK) return f->write_result;
    assert_true(pb_buf_put(&s->written, data, len));
    return PN_OK;
}

static pn_err f_shutdown(void *ctx, pn_handle h) {
    return stream(ctx, h) ? PN_OK : PN_E_INVALID;
}

static pn_err f_close(void *ctx, pn_handle h) {
    fake_ports *f = ctx;
    fake_stream *s = stream(f, h);
    if (!s || s->settled) return PN_E_INVALID;
    s->closes++;
    if (!s->settling) {
        s->settling = true;
        push(f, PN_EV_CLOSED, h, s->ud, PN_OK, NULL);
    }
    return PN_OK;
}

static pn_err f_resolve(void *ctx, const char *name, void *ud, pn_handle *out) {
    (void)ctx, (void)name, (void)ud, (void)out;
    fail_msg("the HTTP client resolves nothing itself");
    return PN_E_INVALID;
}

static pn_err f_resolve_cancel(void *ctx, pn_handle h) {
    (void)ctx, (void)h;
    return PN_E_INVALID;
}

static uint64_t f_now(void *ctx) {
    return ((fake_ports *)ctx)->now;
}

static int64_t f_wall(void *ctx) {
    return 1700000000000 + (int64_t)((fake_ports *)ctx)->now;
}

static pn_err f_timer_set(void *ctx, uint64_t delay, void *ud, pn_handle *out) {
    fake_ports *f = ctx;
    if (f->timer_result != PN_OK) return f->timer_result;
    for (int i = 0; i < FAKE_TIMERS; i++) {
        fake_timer *t = &f->t[i];
        if (t->used) continue;
        t->used = t->armed = true;
        t->due = f->now + delay;
        t->ud = ud;
        *out = FAKE_TIMER0 + 1 + (pn_handle)i;
        return PN_OK;
    }
    return PN_E_LIMIT;
}

static fake_timer *timer(fake_ports *f, pn_handle h) {
    if (h <= FAKE_TIMER0 || h > FAKE_TIMER0 + FAKE_TIMERS) return NULL;
    fake_timer *t = &f->t[h - FAKE_TIMER0 - 1];
    return t->used ? t : NULL;
}

static pn_err f_timer_cancel(void *ctx, pn_handle h) {
    fake_ports *f = ctx;
    fake_timer *t = timer(f, h);
    if (!t || t->settled) return PN_E_INVALID;
    f->timer_cancels++;
    if (t->armed) { /* a fired timer's event is already queued: nothing more */
        t->armed = false;
        push(f, PN_EV_TIMER, h, t->ud, PN_E_CANCELLED, NULL);
    }
    return PN_OK;
}

/* Every port call is wrapped so an event delivered from inside one is caught. */
#define GUARD(c, call)                                                                             \
    do {                                                                                           \
        fake_ports *f_ = c;                                                                        \
        assert_false(f_->in_call);                                                                 \
        f_->in_call = true;                                                                        \
        pn_err r_ = call;                                                                          \
        f_->in_call = false;                                                                       \
        return r_;                                                                                 \
    } while (0)

static pn_err g_open(void *c, const char *h, uint16_t p, const pn_stream_opts *o, void *u,
                     pn_handle *out) {
    GUARD(c, f_open(c, h, p, o, u, out));
}
static pn_err g_read(void *c, pn_handle h, void *b, size_t n, size_t *got) {
    GUARD(c, f_read(c, h, b, n, got));
}
static pn_err g_write(void *c, pn_handle h, const void *d, size_t n) {
    GUARD(c, f_write(c, h, d, n));
}
static pn_err g_close(void *c, pn_handle h) {
    GUARD(c, f_close(c, h));
}
static pn_err g_timer_set(void *c, uint64_t d, void *u, pn_handle *out) {
    GUARD(c, f_timer_set(c, d, u, out));
}
static pn_err g_timer_cancel(void *c, pn_handle h) {
    GUARD(c, f_timer_cancel(c, h));
}

void fake_init(fake_ports *f) {
    memset(f, 0, sizeof *f);
    f->ports = (pn_ports){.ctx = f,
                          .open = g_open,
                          .read = g_read,
                          .write = g_write,
                          .shutdown = f_shutdown,
                          .close = g_close,
                          .resolve = f_resolve,
                          .resolve_cancel = f_resolve_cancel,
                          .now_ms = f_now,
                          .wall_ms = f_wall,
                          .timer_set = g_timer_set,
                          .timer_cancel = g_timer_cancel};
}

void fake_free(fake_ports *f) {
    for (int i = 0; i < FAKE_STREAMS; i++) {
        pb_buf_free(&f->s[i].written);
        pb_buf_free(&f->s[i].inbox);
    }
}

void fake_pump(fake_ports *f) {
    while (f->qlen) {
        pn_event ev = f->q[f->qhead];
        f->qhead = (f->qhead + 1) % FAKE_EVENTS;
        f->qlen--;
        if (ev.kind == PN_EV_CLOSED) {
            fake_stream *s = stream(f, ev.handle);
            assert_non_null(s);
            assert_false(s->settled);
            s->settled = true;
        } else if (ev.kind == PN_EV_TIMER) {
            fake_timer *t = timer(f, ev.handle);
            assert_non_null(t);
            assert_false(t->settled);
            t->settled = true;
        } else if (ev.kind == PN_EV_READABLE) {
            fake_stream *s = stream(f, ev.handle);
            if (s->settled || s->settling) continue; /* the stream went away meanwhile */
        }
        f->events_delivered++;
        assert_false(f->in_call);
        pn_http_event(ev.ud, &ev);
    }
}

void fake_send(fake_ports *f, pn_handle h, const char *data, size_t len) {
    fake_stream *s = stream(f, h);
    assert_non_null(s);
    assert_true(pb_buf_put(&s->inbox, data, len));
    push(f, PN_EV_READABLE, h, s->ud, PN_OK, NULL);
}

void fake_eof(fake_ports *f, pn_handle h) {
    fake_stream *s = stream(f, h);
    assert_non_null(s);
    s->eof = true;
    push(f, PN_EV_READABLE, h, s->ud, PN_OK, NULL);
}

void fake_fail(fake_ports *f, pn_handle h, pn_err e) {
    fake_stream *s = stream(f, h);
    assert_non_null(s);
    assert_false(s->settling);
    s->settling = true;
    push(f, PN_EV_CLOSED, h, s->ud, e, "scripted failure");
}

void fake_advance(fake_ports *f, uint64_t ms) {
    f->now += ms;
    for (int i = 0; i < FAKE_TIMERS; i++) {
        fake_timer *t = &f->t[i];
        if (t->used && t->armed && t->due <= f->now) {
            t->armed = false;
            push(f, PN_EV_TIMER, FAKE_TIMER0 + 1 + (pn_handle)i, t->ud, PN_OK, NULL);
        }
    }
    fake_pump(f);
}

bool fake_all_settled(const fake_ports *f) {
    for (int i = 0; i < FAKE_STREAMS; i++)
        if (f->s[i].used && !f->s[i].settled) return false;
    for (int i = 0; i < FAKE_TIMERS; i++)
        if (f->t[i].used && !f->t[i].settled) return false;
    return true;
}

int fake_live_timers(const fake_ports *f) {
    int n = 0;
    for (int i = 0; i < FAKE_TIMERS; i++)
        n += f->t[i].used && !f->t[i].settled;
    return n;
}
