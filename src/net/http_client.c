/*
 * http_client.c — one HTTP/1.1 request over a pn_ports table (include/peri/net_http.h):
 * open a byte stream (TLS with SNI = host for https), write the request once the stream
 * is open, feed the sans-IO parser (http_codec.c) on every PN_EV_READABLE, and report
 * the head, the body and one final outcome through the caller's callbacks.
 *
 * One connection per request ("Connection: close"; no keep-alive pooling). Time limits
 * use the timer port: a deadline timer for the whole request and an idle timer that,
 * when it fires, re-arms itself for what is left since the last byte received (so
 * reading costs no timer calls). A timeout is PN_HTTP_E_TIMEOUT, never a cancel.
 *
 * Invariants: every handle the request opened is counted until its settling event
 * (stream: PN_EV_CLOSED; timer: PN_EV_TIMER fired or cancelled); once the request is
 * finishing, its first outcome is kept, the stream is closed and the timers cancelled,
 * and on_done runs exactly once, from an event, only when nothing is left unsettled; the
 * request is freed right after. No callback runs from inside pn_http_request or
 * pn_http_cancel; body bytes stop the moment the request is finishing.
 */
#include "peri/net_http.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define READ_CHUNK 8192

struct pn_http_req {
    pn_ports ports; /* a copy of the borrowed table (its ctx stays the implementation's) */
    pn_http_callbacks cb;
    pn_http_opts opts;
    pn_http_parser *parser; /* owned */
    pb_buf out;             /* owned: the request bytes until they are written */
    pn_handle stream;
    bool stream_live;    /* opened and not yet settled by PN_EV_CLOSED */
    bool stream_closing; /* close was called, or the stream failed to open */
    pn_handle deadline, idle;
    bool deadline_live, idle_live; /* armed and not yet settled */
    bool deadline_cancelled, idle_cancelled;
    uint64_t last_rx_ms; /* now_ms of the last byte received (or of the start) */
    bool finishing;
    pn_http_result res;
    char rbuf[READ_CHUNK];
};

static pn_http_err err_of_port(pn_err e) {
    return e == PN_E_TIMEOUT ? PN_HTTP_E_TIMEOUT : PN_HTTP_E_NET;
}

/* Records the first outcome and starts settling: close the stream, cancel the timers.
 * Never calls back; on_done comes from pn_http_event once all has settled. */
static void finish(pn_http_req *r, pn_http_err err, pn_err net, const char *fmt, ...) {
    if (r->finishing) return;
    r->finishing = true;
    r->res.err = err;
    r->res.net = net;
    r->res.status = pn_http_status(r->parser);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->res.detail, sizeof r->res.detail, fmt, ap);
    va_end(ap);
    if (r->stream_live && !r->stream_closing) {
        r->stream_closing = true;
        r->ports.close(r->ports.ctx, r->stream); /* settles later with PN_EV_CLOSED */
    }
    if (r->deadline_live && !r->deadline_cancelled) {
        r->deadline_cancelled = true;
        r->ports.timer_cancel(r->ports.ctx, r->deadline);
    }
    if (r->idle_live && !r->idle_cancelled) {
        r->idle_cancelled = true;
        r->ports.timer_cancel(r->ports.ctx, r->idle);
    }
}

static void finish_port(pn_http_req *r, const char *what, pn_err e, const char *detail) {
    finish(r, err_of_port(e), e, "%s failed (port error %d)%s%s", what, (int)e, detail ? ": " : "",
           detail ? detail : "");
}

static void req_free(pn_http_req *r) {
    pn_http_parser_free(r->parser);
    pb_buf_free(&r->out);
    free(r);
}

/* The parser's callbacks: the caller's, silenced once the request is finishing (a
 * cancel from inside a callback stops the parser at once). */
static int on_head(void *ud, const pn_http_parser *p) {
    pn_http_req *r = ud;
    if (r->finishing) return 1;
    int rc = r->cb.on_head ? r->cb.on_head(r->cb.ud, p) : 0;
    return rc || r->finishing;
}

static int on_body(void *ud, const char *data, size_t len) {
    pn_http_req *r = ud;
    if (r->finishing) return 1;
    int rc = r->cb.on_body ? r->cb.on_body(r->cb.ud, data, len) : 0;
    return rc || r->finishing;
}

static void on_opened(pn_http_req *r, const pn_event *ev) {
    if (ev->err != PN_OK) {
        r->stream_closing = true; /* a failed stream settles by itself */
        if (!r->finishing) finish_port(r, "open", ev->err, ev->detail);
        return;
    }
    if (r->finishing) return;
    pn_err e = r->ports.write(r->ports.ctx, r->stream, r->out.p, r->out.len);
    pb_buf_free(&r->out);
    if (e != PN_OK) finish_port(r, "write", e, NULL);
}

static void on_readable(pn_http_req *r) {
    while (!r->finishing) {
        size_t got = 0;
        pn_err e = r->ports.read(r->ports.ctx, r->stream, r->rbuf, sizeof r->rbuf, &got);
        if (e == PN_E_AGAIN) return;
        if (e != PN_OK) {
            finish_port(r, "read", e, NULL);
            return;
        }
        pn_http_err he;
        if (got == 0) { /* the end of the stream */
            he = pn_http_parser_finish(r->parser);
            if (he)
                finish(r, he, PN_OK, "%s", pn_http_parser_detail(r->parser));
            else
                finish(r, PN_HTTP_OK, PN_OK, "");
            return;
        }
        r->last_rx_ms = r->ports.now_ms(r->ports.ctx);
        he = pn_http_parser_feed(r->parser, r->rbuf, got, NULL);
        if (r->finishing) return; /* cancelled from a callback: that outcome stays */
        if (he) {
            finish(r, he, PN_OK, "%s", pn_http_parser_detail(r->parser));
            return;
        }
        if (pn_http_parser_done(r->parser)) {
            finish(r, PN_HTTP_OK, PN_OK, ""); /* bytes after the response are dropped */
            return;
        }
    }
}

static void on_closed(pn_http_req *r, const pn_event *ev) {
    r->stream_live = false;
    if (r->finishing) return;
    if (ev->err != PN_OK) {
        finish_port(r, "stream", ev->err, ev->detail);
        return;
    }
    /* settled without a local close: the stream ended */
    pn_http_err he = pn_http_parser_finish(r->parser);
    if (he)
        finish(r, he, PN_OK, "%s", pn_http_parser_detail(r->parser));
    else
        finish(r, PN_HTTP_OK, PN_OK, "");
}

static void arm_idle(pn_http_req *r, uint64_t delay) {
    pn_err e = r->ports.timer_set(r->ports.ctx, delay, r, &r->idle);
    if (e != PN_OK) {
        finish_port(r, "timer_set", e, NULL);
        return;
    }
    r->idle_live = true;
    r->idle_cancelled = false;
}

static void on_timer(pn_http_req *r, const pn_event *ev) {
    bool fired = ev->err == PN_OK;
    if (r->deadline_live && ev->handle == r->deadline) {
        r->deadline_live = false;
        if (fired && !r->finishing)
            finish(r, PN_HTTP_E_TIMEOUT, PN_E_TIMEOUT, "the request's deadline of %u ms passed",
                   (unsigned)r->opts.deadline_ms);
    } else if (r->idle_live && ev->handle == r->idle) {
        r->idle_live = false;
        if (!fired || r->finishing) return;
        uint64_t now = r->ports.now_ms(r->ports.ctx);
        uint64_t quiet = now >= r->last_rx_ms ? now - r->last_rx_ms : 0;
        if (quiet >= r->opts.idle_ms)
            finish(r, PN_HTTP_E_TIMEOUT, PN_E_TIMEOUT, "no byte received for %u ms",
                   (unsigned)r->opts.idle_ms);
        else
            arm_idle(r, r->opts.idle_ms - quiet);
    }
}

void pn_http_event(pn_http_req *r, const pn_event *ev) {
    if (!r || !ev) return;
    switch (ev->kind) {
    case PN_EV_OPENED:
        if (ev->handle == r->stream) on_opened(r, ev);
        break;
    case PN_EV_READABLE:
        if (ev->handle == r->stream && r->stream_live && !r->finishing) on_readable(r);
        break;
    case PN_EV_CLOSED:
        if (ev->handle == r->stream && r->stream_live) on_closed(r, ev);
        break;
    case PN_EV_TIMER: on_timer(r, ev); break;
    case PN_EV_RESOLVED: break; /* the request resolves nothing itself */
    case PN_EV_WRITABLE: break; /* the whole request is queued at once: a full queue fails it */
    case PN_EV_TLS: break;      /* the request never upgrades a stream */
    }
    if (r->finishing && !r->stream_live && !r->deadline_live && !r->idle_live) {
        r->cb.on_done(r->cb.ud, &r->res);
        req_free(r);
    }
}

void pn_http_cancel(pn_http_req *r) {
    if (r) finish(r, PN_HTTP_E_CANCELLED, PN_E_CANCELLED, "cancelled");
}

static void fail_with(pn_http_result *fail, pn_http_err e, pn_err net, const char *detail) {
    if (!fail) return;
    memset(fail, 0, sizeof *fail);
    fail->err = e;
    fail->net = net;
    snprintf(fail->detail, sizeof fail->detail, "%s", detail);
}

static bool ports_complete(const pn_ports *p) {
    return p && p->open && p->read && p->write && p->close && p->now_ms && p->timer_set &&
           p->timer_cancel;
}

pn_http_req *pn_http_request(const pn_ports *ports, const char *url, const char *method,
                             const pn_http_header *headers, size_t nheaders, const void *body,
                             size_t body_len, const pn_http_callbacks *cb, const pn_http_opts *opts,
                             pn_http_result *fail) {
    char detail[160];
    if (!ports_complete(ports) || !cb || !cb->on_done || !method) {
        fail_with(fail, PN_HTTP_E_ARG, PN_OK, "ports, method or on_done missing");
        return NULL;
    }
    pn_http_url u;
    pn_http_err e = pn_http_url_parse(url, &u, detail, sizeof detail);
    if (e) {
        fail_with(fail, e, PN_OK, detail);
        return NULL;
    }
    pn_http_req *r = calloc(1, sizeof *r);
    if (!r) {
        pn_http_url_free(&u);
        fail_with(fail, PN_HTTP_E_NOMEM, PN_OK, "out of memory");
        return NULL;
    }
    r->ports = *ports;
    r->cb = *cb;
    if (opts) r->opts = *opts;
    e = pn_http_write_request(&r->out, method, u.target, u.host_field, headers, nheaders, body,
                              body_len, detail, sizeof detail);
    pn_http_parser_cb pcb = {on_head, on_body, r};
    if (!e) {
        r->parser = pn_http_parser_new(!strcmp(method, "HEAD"), &r->opts.limits, &pcb);
        if (!r->parser) {
            e = PN_HTTP_E_NOMEM;
            snprintf(detail, sizeof detail, "out of memory");
        }
    }
    if (e) {
        pn_http_url_free(&u);
        req_free(r);
        fail_with(fail, e, PN_OK, detail);
        return NULL;
    }
    pn_stream_opts so = {.tls = u.tls, .server_name = u.host};
    pn_err pe = r->ports.open(r->ports.ctx, u.host, u.port, &so, r, &r->stream);
    pn_http_url_free(&u);
    if (pe != PN_OK) {
        req_free(r);
        snprintf(detail, sizeof detail, "open failed (port error %d)", (int)pe);
        fail_with(fail, err_of_port(pe), pe, detail);
        return NULL;
    }
    r->stream_live = true;
    r->last_rx_ms = r->ports.now_ms(r->ports.ctx);
    /* from here on the stream is open: a failure settles through events */
    if (r->opts.deadline_ms) {
        pe = r->ports.timer_set(r->ports.ctx, r->opts.deadline_ms, r, &r->deadline);
        if (pe != PN_OK)
            finish_port(r, "timer_set", pe, NULL);
        else
            r->deadline_live = true;
    }
    if (r->opts.idle_ms && !r->finishing) arm_idle(r, r->opts.idle_ms);
    return r;
}
