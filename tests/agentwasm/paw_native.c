/*
 * paw_native.c — runs the agent module's reactor (peri/agentwasm.h) natively, over the
 * native ports (pn_loop), with the client on stdin/stdout: the proof that the native
 * host runs the same state machines as the module, and the driver of the tests in
 * tests/agentwasm/.
 *
 *   paw_native START.json
 *
 * The start object is read from the file. Credentials come from the environment of this
 * test program (PAW_STORE_PASSWORD for "store", PAW_MODEL_KEY for every "model:*").
 * PAW_TEST_TOOLS=1 adds a tool source (the seam an MCP client plugs into) with two tools
 * answered from a host timer: "echo" (runs freely) and "guarded" (needs permission).
 * PAW_CONNECT_TIMEOUT_MS bounds connects (default 30 s). PAW_CLOSE_AFTER_MS: call
 * paw_close after that long even though stdin is still open. Logs go to stderr as
 * "paw: <level>: <text>"; the settled report as "paw: settled <json>". Exit status 0
 * after a settled close, 2 when the start object was refused, 1 otherwise.
 */
#include "peri/agentwasm.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

typedef struct drv {
    pn_loop *loop;
    paw *p;
    pthread_mutex_t mu; /* guards stopping against the reader's posts */
    bool stopping;
    bool settled;
} drv;

typedef struct chunk {
    drv *d;
    size_t len; /* 0: end of input */
    char data[];
} chunk;

static void on_event(void *ctx, const pn_event *ev) {
    drv *d = ctx;
    if (d->p) paw_event(d->p, ev);
}

static bool policy(void *ctx, const char *name, const char *addr, uint16_t port) {
    (void)ctx;
    (void)name;
    (void)addr;
    (void)port;
    return true; /* a test: the reactor's own destinations only */
}

static int h_send(void *ctx, const char *data, size_t len) {
    (void)ctx;
    while (len > 0) {
        ssize_t n = write(1, data, len);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return PN_E_CLOSED;
        data += n;
        len -= (size_t)n;
    }
    return 0;
}

static void h_log(void *ctx, int level, const char *text) {
    (void)ctx;
    static const char *names[] = {"error", "warning", "info", "debug"};
    fprintf(stderr, "paw: %s: %s\n", names[level & 3], text);
}

static void h_settled(void *ctx, const char *json, size_t len) {
    drv *d = ctx;
    fprintf(stderr, "paw: settled %.*s\n", (int)len, json);
    d->settled = true;
}

static pn_err h_credential(void *ctx, const char *kind, char *buf, size_t cap, size_t *len) {
    (void)ctx;
    const char *v = !strcmp(kind, "store")        ? getenv("PAW_STORE_PASSWORD")
                    : !strncmp(kind, "model:", 6) ? getenv("PAW_MODEL_KEY")
                    : !strcmp(kind, "telemetry")  ? getenv("PAW_TELEMETRY_TOKEN")
                                                  : NULL;
    if (!v) return PN_E_NOT_FOUND;
    *len = strlen(v);
    if (*len > cap) return PN_E_LIMIT;
    memcpy(buf, v, *len);
    return PN_OK;
}

static bool h_random(void *ctx, void *buf, size_t n) {
    (void)ctx;
    return getrandom(buf, n, 0) == (ssize_t)n;
}

/* ---- the test tool source: each call answered 20 ms later from a timer */

typedef struct tcall {
    struct tcall *next;
    pn_handle timer;
    bool cancelled;
    paw_tool_done_fn done;
    void *ud;
    char *args;
} tcall;

typedef struct tsrc {
    const pn_ports *ports;
    tcall *calls;
    bool closed;
} tsrc;

static const pag_tool_info TEST_TOOLS[] = {
    {.name = "echo",
     .description = "Echoes its arguments.",
     .schema_json = "{\"type\":\"object\",\"properties\":{\"text\":{\"type\":\"string\"}}}",
     .kind = "other",
     .read_only = true},
    {.name = "guarded",
     .description = "Echoes its arguments, with the user's permission.",
     .schema_json = "{\"type\":\"object\"}",
     .kind = "other",
     .needs_permission = true},
};

static const pag_tool_info *ts_list(void *ctx, size_t *n) {
    tsrc *t = ctx;
    *n = t->closed ? 0 : 2;
    return TEST_TOOLS;
}

static int ts_start(void *ctx, const char *name, const char *args, paw_tool_done_fn done, void *ud,
                    void **handle) {
    tsrc *t = ctx;
    (void)name;
    tcall *c = calloc(1, sizeof *c);
    if (!c || !(c->args = strdup(args))) {
        free(c);
        return -1;
    }
    c->done = done;
    c->ud = ud;
    if (t->ports->timer_set(t->ports->ctx, 20, c, &c->timer) != PN_OK) {
        free(c->args);
        free(c);
        return -1;
    }
    c->next = t->calls;
    t->calls = c;
    *handle = c;
    return 0;
}

static void ts_cancel(void *ctx, void *handle) {
    tsrc *t = ctx;
    tcall *c = handle;
    if (c->cancelled) return;
    c->cancelled = true;
    t->ports->timer_cancel(t->ports->ctx, c->timer);
}

static bool ts_event(void *ctx, const pn_event *ev) {
    tsrc *t = ctx;
    for (tcall **q = &t->calls; *q; q = &(*q)->next) {
        tcall *c = *q;
        if (c != ev->ud || ev->kind != PN_EV_TIMER) continue;
        *q = c->next;
        pag_tool_output o = {0};
        size_t n = strlen(c->args) + 16;
        o.output = malloc(n);
        if (o.output) snprintf(o.output, n, "echo: %s", c->args);
        int rc = ev->err == PN_OK && !c->cancelled ? 0 : 1;
        c->done(c->ud, rc, &o);
        free(o.output); /* taken by done when it ran; NULL then */
        free(c->args);
        free(c);
        return true;
    }
    return false;
}

static void ts_close(void *ctx) {
    tsrc *t = ctx;
    t->closed = true;
    for (tcall *c = t->calls; c; c = c->next)
        ts_cancel(t, c);
}

static bool ts_settled(void *ctx) {
    return ((tsrc *)ctx)->calls == NULL;
}

static void deliver(void *arg) {
    chunk *c = arg;
    if (c->len)
        paw_input(c->d->p, c->data, c->len);
    else
        paw_input_end(c->d->p);
    free(c);
}

static void *reader(void *arg) {
    drv *d = arg;
    for (;;) {
        chunk *c = malloc(sizeof *c + 65536);
        if (!c) break;
        c->d = d;
        ssize_t n = read(0, c->data, 65536);
        if (n < 0 && errno == EINTR) {
            free(c);
            continue;
        }
        c->len = n > 0 ? (size_t)n : 0;
        pthread_mutex_lock(&d->mu);
        int rc = d->stopping ? -1 : pn_loop_post(d->loop, deliver, c);
        pthread_mutex_unlock(&d->mu);
        if (rc != 0) {
            free(c);
            break;
        }
        if (n <= 0) break;
    }
    return NULL;
}

static char *read_file(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    char *buf = NULL;
    size_t cap = 0, n = 0;
    for (;;) {
        if (n + 4096 > cap) {
            cap = (n + 4096) * 2;
            char *nb = realloc(buf, cap);
            if (!nb) break;
            buf = nb;
        }
        size_t k = fread(buf + n, 1, cap - n, f);
        n += k;
        if (k == 0) break;
    }
    fclose(f);
    *len = n;
    return buf;
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: paw_native START.json\n");
        return 1;
    }
    size_t slen = 0;
    char *start = read_file(argv[1], &slen);
    if (!start) {
        fprintf(stderr, "paw_native: cannot read %s\n", argv[1]);
        return 1;
    }
    drv d = {0};
    pthread_mutex_init(&d.mu, NULL);
    const char *cto = getenv("PAW_CONNECT_TIMEOUT_MS");
    char err[300];
    d.loop = pn_loop_new(&(pn_loop_opts){.on_event = on_event,
                                         .event_ctx = &d,
                                         .policy = policy,
                                         .connect_timeout_ms = cto ? (uint32_t)atoi(cto) : 0},
                         err, sizeof err);
    if (!d.loop) {
        fprintf(stderr, "paw_native: %s\n", err);
        return 1;
    }
    d.p = paw_new(&(paw_host){.ctx = &d,
                              .ports = pn_loop_ports(d.loop),
                              .send = h_send,
                              .log = h_log,
                              .settled = h_settled,
                              .credential = h_credential,
                              .random = h_random});
    if (!d.p) return 1;
    static tsrc ts;
    if (getenv("PAW_TEST_TOOLS")) {
        ts.ports = pn_loop_ports(d.loop);
        paw_add_tool_source(d.p, &(paw_tool_source){.ctx = &ts,
                                                    .list = ts_list,
                                                    .start = ts_start,
                                                    .cancel = ts_cancel,
                                                    .on_event = ts_event,
                                                    .close = ts_close,
                                                    .settled = ts_settled});
    }
    int rc = paw_start(d.p, start, slen, err, sizeof err);
    free(start);
    if (rc) {
        fprintf(stderr, "paw_native: start refused (%s): %s\n", pn_err_name(rc), err);
        paw_close(d.p);
        for (int i = 0; i < 200 && !paw_settled(d.p); i++)
            pn_loop_run_once(d.loop, 50);
        paw_free(d.p);
        pn_loop_free(d.loop);
        return 2;
    }
    pthread_t th;
    pthread_create(&th, NULL, reader, &d);
    pthread_detach(th);
    const char *cam = getenv("PAW_CLOSE_AFTER_MS");
    long close_after = cam ? atol(cam) : -1;
    const pn_ports *pp = pn_loop_ports(d.loop);
    uint64_t t0 = pp->now_ms(pp->ctx);
    while (!paw_settled(d.p)) {
        if (pn_loop_run_once(d.loop, 50) < 0) break;
        if (close_after >= 0 && (long)(pp->now_ms(pp->ctx) - t0) >= close_after) {
            close_after = -1;
            paw_close(d.p);
        }
    }
    bool ok = paw_settled(d.p) && pn_loop_settled(d.loop);
    if (!pn_loop_settled(d.loop))
        fprintf(stderr, "paw_native: the loop still holds handles after the settled report\n");
    paw_free(d.p);
    d.p = NULL;
    /* the stdin reader may still be blocked in read(): it posts nothing any more, and the
     * process ends under it */
    pthread_mutex_lock(&d.mu);
    d.stopping = true;
    pthread_mutex_unlock(&d.mu);
    pn_loop_free(d.loop);
    exit(ok ? 0 : 1);
}
