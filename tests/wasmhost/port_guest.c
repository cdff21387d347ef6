/*
 * port_guest.c — the test guest of the agent module ABI (docs/wasm-host.md), built for
 * wasm32-wasi as a reactor: it uses the ports only through net.h (src/net/port_wasm.c),
 * as the agent host's code does. Its start object names local test servers:
 *   {"echo": P, "refused": P, "hang": P, "silent": P}
 * On start it opens a stream to the echo server, writes a request and reads the answer;
 * resolves localhost and a .invalid name; sets three timers and cancels one; opens the
 * refused port, a TLS stream to the hanging server (timeout), a plain stream to the
 * silent server (left open; a starttls on it before it opened is refused with invalid)
 * and a destination the host does not grant. Client input is
 * echoed back ("echo:" + bytes). Every outcome is a line sent with peri_host.send, which
 * the host-side tests (tests/wasmhost/, sdk/js) compare. peri_close closes what is left
 * and sends the settled report once every handle has settled.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "peri/net.h"

__attribute__((import_module("peri_host"), import_name("send"))) int32_t host_send(const void *p,
                                                                                   uint32_t n);
__attribute__((import_module("peri_host"), import_name("settled"))) void host_settled(const void *p,
                                                                                      uint32_t n);
__attribute__((import_module("peri_host"), import_name("log"))) void
host_log(int32_t level, const void *p, uint32_t n);

typedef struct item {
    const char *tag;
    pn_handle h;
    int kind; /* 1 stream, 2 resolution, 3 timer */
    bool live;
    char got[256];
    size_t ngot;
} item;

static const pn_ports *P;
static item items[16];
static int nitems;
static bool closing, reported;

static void say(const char *fmt, ...) {
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf, sizeof buf - 1, fmt, ap);
    va_end(ap);
    if (n < 0) return;
    if ((size_t)n > sizeof buf - 2) n = sizeof buf - 2;
    buf[n++] = '\n';
    host_send(buf, (uint32_t)n);
}

static const char *kind_name(pn_event_kind k) {
    static const char *names[] = {"?",        "opened", "readable", "closed",
                                  "resolved", "timer",  "writable", "tls"};
    return k >= 1 && k <= 7 ? names[k] : "?";
}

static int live_count(void) {
    int n = 0;
    for (int i = 0; i < nitems; i++)
        n += items[i].live;
    return n;
}

static void maybe_report(void) {
    if (!closing || reported || live_count()) return;
    reported = true;
    char r[128];
    int n = snprintf(r, sizeof r, "{\"handles\":%d,\"open\":0}", nitems);
    host_settled(r, (uint32_t)n);
}

static item *track(const char *tag, int kind) {
    item *it = &items[nitems++];
    memset(it, 0, sizeof *it);
    it->tag = tag;
    it->kind = kind;
    return it;
}

static void on_event(void *ctx, const pn_event *e) {
    (void)ctx;
    item *it = e->ud;
    if (!it) return;
    say("%s %s %s%s%s", it->tag, kind_name(e->kind), pn_err_name(e->err), e->detail ? " " : "",
        e->detail ? e->detail : "");
    if (e->kind == PN_EV_READABLE) {
        for (;;) {
            size_t got = 0;
            pn_err r =
                P->read(P->ctx, e->handle, it->got + it->ngot, sizeof it->got - 1 - it->ngot, &got);
            if (r == PN_E_AGAIN) break;
            if (r != PN_OK || got == 0) { /* the end of the echo: say what came back */
                it->got[it->ngot] = '\0';
                say("%s read [%s]", it->tag, it->got);
                P->close(P->ctx, e->handle);
                break;
            }
            it->ngot += got;
            if (it->ngot >= sizeof it->got - 1) break;
        }
    }
    if (e->kind == PN_EV_RESOLVED && e->err == PN_OK)
        say("%s addresses %zu first %s", it->tag, e->naddrs, e->addrs[0]);
    if (e->kind == PN_EV_CLOSED || e->kind == PN_EV_RESOLVED || e->kind == PN_EV_TIMER)
        it->live = false;
    maybe_report();
}

static int field(const char *json, const char *name) {
    char key[32];
    snprintf(key, sizeof key, "\"%s\":", name);
    const char *p = strstr(json, key);
    return p ? atoi(p + strlen(key)) : 0;
}

static void open_one(const char *tag, const char *host, int port, bool tls) {
    item *it = track(tag, 1);
    pn_stream_opts o = {.tls = tls, .server_name = tls ? "localhost" : NULL};
    pn_err e = P->open(P->ctx, host, (uint16_t)port, &o, it, &it->h);
    it->live = e == PN_OK;
    say("%s open %s", tag, pn_err_name(e));
}

__attribute__((export_name("peri_start"))) int32_t peri_start(char *ptr, uint32_t len) {
    char json[512];
    size_t n = len < sizeof json - 1 ? len : sizeof json - 1;
    memcpy(json, ptr, n);
    json[n] = '\0';
    free(ptr);
    P = pn_wasm_ports(on_event, NULL);
    host_log(3, "port_guest starting", 19);
    uint64_t t0 = P->now_ms(P->ctx);
    say("clock %s", P->wall_ms(P->ctx) > 1600000000000LL && t0 > 0 ? "ok" : "bad");

    open_one("echo", "127.0.0.1", field(json, "echo"), false);
    pn_err w = P->write(P->ctx, items[0].h, "hello through the port", 22);
    say("echo write %s", pn_err_name(w));
    say("echo shutdown %s", pn_err_name(P->shutdown(P->ctx, items[0].h)));

    item *r = track("resolve", 2);
    say("resolve start %s", pn_err_name(P->resolve(P->ctx, "localhost", r, &r->h)));
    r->live = true;
    item *ri = track("invalid", 2);
    say("invalid start %s", pn_err_name(P->resolve(P->ctx, "nothing.invalid", ri, &ri->h)));
    ri->live = true;

    const char *tags[3] = {"t-late", "t-early", "t-cancel"};
    uint64_t delays[3] = {60, 20, 100000};
    for (int i = 0; i < 3; i++) {
        item *t = track(tags[i], 3);
        t->live = P->timer_set(P->ctx, delays[i], t, &t->h) == PN_OK;
    }
    say("t-cancel cancel %s", pn_err_name(P->timer_cancel(P->ctx, items[nitems - 1].h)));

    open_one("refused", "127.0.0.1", field(json, "refused"), false);
    open_one("hang", "127.0.0.1", field(json, "hang"), true);
    open_one("silent", "127.0.0.1", field(json, "silent"), false);
    say("silent starttls %s", pn_err_name(P->starttls(P->ctx, items[nitems - 1].h, "localhost")));
    open_one("denied", "192.0.2.1", 80, false);
    return 0;
}

__attribute__((export_name("peri_input"))) int32_t peri_input(char *ptr, uint32_t len) {
    char buf[600] = "echo:";
    size_t n = len < sizeof buf - 6 ? len : sizeof buf - 6;
    memcpy(buf + 5, ptr, n);
    free(ptr);
    host_send(buf, (uint32_t)(5 + n));
    return 0;
}

__attribute__((export_name("peri_close"))) int32_t peri_close(void) {
    closing = true;
    for (int i = 0; i < nitems; i++) {
        item *it = &items[i];
        if (!it->live) continue;
        if (it->kind == 1)
            P->close(P->ctx, it->h);
        else if (it->kind == 2)
            P->resolve_cancel(P->ctx, it->h);
        else
            P->timer_cancel(P->ctx, it->h);
    }
    maybe_report();
    return 0;
}
