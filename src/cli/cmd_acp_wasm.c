/*
 * cmd_acp_wasm.c — `peri acp --wasm [--module FILE] [--allow HOST:PORT]... <peri acp flags>`:
 * the ACP agent on stdio with the agent host inside its WebAssembly form
 * (build/peri-agent.wasm, docs/wasm-host.md) on the project's own engine and native ports.
 *
 * This file only maps the command line, the environment and ~/.peri/ into the module's
 * start object and the host's options (as host_env.c does for the native host):
 *  - the settings document with the environment overrides applied, minus its secrets:
 *    provider API keys become the credential `model:<provider>`, an MCP server's
 *    `Authorization: Bearer` header `mcp:<name>`, the store URL's password (or the
 *    password file's, as libpq reads it: store_locator.c) `store`, and
 *    PERI_TELEMETRY_TOKEN `telemetry` (settings.telemetry's collector).
 *    No secret is written into the start object;
 *  - the network grant: exactly the host:port of every http(s) URL in the settings
 *    (providers, MCP servers), of the store, and of each --allow;
 *  - stdin to the module as it arrives, the module's output to stdout, its log to stderr.
 * A local store (a path, sqlite:) is passed on: the module refuses to start with its own
 * reason (on stderr), and the command exits 1 before reading any client frame.
 * A module that dies (a trap) ends the command at once with exit 1: the reason on stderr,
 * and each client request it left unanswered answered -32603 (`the agent module
 * stopped: ...`), so that no client waits for an answer that cannot come.
 */
#include "cli/commands.h"
#include "cli/host_env.h"
#include "cli/store_locator.h"
#include "peri/json.h"
#include "peri/rpc.h"
#include "peri/wasmhost.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <strings.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MAX_GRANTS        64
#define MAX_CREDS         64
#define CLOSE_DEADLINE_MS 10000

#define FRAME_MAX ((size_t)64 << 20) /* the module's frame limit: longer lines are refused */

/* One direction of newline-delimited JSON-RPC, cut into lines. A line longer than
 * FRAME_MAX is dropped (the module refuses it with id null: nothing to track). */
typedef struct line_cut {
    char *p;
    size_t len, cap;
    bool skipping; /* inside a line longer than FRAME_MAX, until its newline */
} line_cut;

/* The client's requests the module has not answered yet, each by the compact JSON of its
 * id: when the module dies, each is answered -32603 so that no client waits forever. */
typedef struct pending_ids {
    char **ids;
    size_t n, cap;
    bool oom; /* an id could not be kept: some request goes unanswered at a death */
} pending_ids;

typedef struct wasm_acp {
    char *grants[MAX_GRANTS];
    size_t ngrants;
    pwh_credential creds[MAX_CREDS];
    char *cred_mem[2 * MAX_CREDS]; /* the kinds and secrets above, owned */
    size_t ncreds, nmem;
    int verbosity;    /* module log levels shown: 0 error ... 3 debug */
    line_cut in, out; /* the client's frames, the module's frames */
    pending_ids pending;
} wasm_acp;

/* Feeds data to c, calling on_line(w, line, len) for each complete line. */
static void cut_lines(wasm_acp *w, line_cut *c, const uint8_t *data, size_t len,
                      void (*on_line)(wasm_acp *, const char *, size_t)) {
    while (len > 0) {
        const uint8_t *nl = memchr(data, '\n', len);
        size_t k = nl ? (size_t)(nl - data) : len;
        if (!c->skipping && c->len + k > FRAME_MAX) {
            c->skipping = true;
            c->len = 0;
        }
        if (!c->skipping) {
            if (c->len + k > c->cap) {
                size_t cap = c->cap ? c->cap : 4096;
                while (cap < c->len + k)
                    cap *= 2;
                char *np = realloc(c->p, cap);
                if (!np) { /* this line is lost to the tracker, not to the module */
                    c->skipping = true;
                    c->len = 0;
                } else {
                    c->p = np;
                    c->cap = cap;
                }
            }
            if (!c->skipping) {
                memcpy(c->p + c->len, data, k);
                c->len += k;
            }
        }
        if (!nl) return;
        if (!c->skipping && c->len) on_line(w, c->p, c->len);
        c->skipping = false;
        c->len = 0;
        data += k + 1;
        len -= k + 1;
    }
}

/* The compact JSON of a request's id (a frame with a method and a non-null id), or of a
 * response's id (no method, a result or an error), else NULL. Caller frees. */
static char *frame_id(const char *line, size_t len, bool request) {
    pj_t *v = pj_loadb(line, len, 0, NULL);
    pj_t *id = pj_object_get(v, "id");
    bool is_req = pj_object_get(v, "method") != NULL;
    bool take =
        id && !pj_is_null(id) &&
        (request ? is_req : !is_req && (pj_object_get(v, "result") || pj_object_get(v, "error")));
    char *t = take ? pj_dumps(id, PJ_COMPACT | PJ_ENCODE_ANY) : NULL;
    pj_decref(v);
    return t;
}

static void client_line(wasm_acp *w, const char *line, size_t len) {
    char *id = frame_id(line, len, true);
    if (!id) return;
    pending_ids *q = &w->pending;
    if (q->n == q->cap) {
        size_t cap = q->cap ? 2 * q->cap : 16;
        char **np = realloc(q->ids, cap * sizeof *np);
        if (!np) {
            q->oom = true;
            free(id);
            return;
        }
        q->ids = np;
        q->cap = cap;
    }
    q->ids[q->n++] = id;
}

static void module_line(wasm_acp *w, const char *line, size_t len) {
    char *id = frame_id(line, len, false);
    if (!id) return;
    pending_ids *q = &w->pending;
    for (size_t i = 0; i < q->n; i++) {
        if (strcmp(q->ids[i], id) != 0) continue;
        free(q->ids[i]);
        q->ids[i] = q->ids[--q->n];
        break;
    }
    free(id);
}

static void write_all(const char *data, size_t len) {
    while (len > 0) {
        ssize_t n = write(1, data, len);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return; /* the client is gone: its end of input follows */
        data += n;
        len -= (size_t)n;
    }
}

/* The module died: why, on stderr, and every request it left unanswered answered -32603
 * (the host exits after this: nobody else would answer them). */
static void module_died(wasm_acp *w, const char *why) {
    fprintf(stderr, "peri acp --wasm: the agent module stopped: %s\n", why);
    char msg[400];
    snprintf(msg, sizeof msg, "the agent module stopped: %.300s", why);
    pending_ids *q = &w->pending;
    for (size_t i = 0; i < q->n; i++) {
        pj_t *r = pj_pack("{s:s, s:o, s:{s:i, s:s}}", "jsonrpc", "2.0", "id",
                          pj_loads(q->ids[i], PJ_DECODE_ANY, NULL), "error", "code",
                          PB_RPC_INTERNAL_ERROR, "message", msg);
        char *t = r ? pj_dumps(r, PJ_COMPACT) : NULL;
        if (t) {
            write_all(t, strlen(t));
            write_all("\n", 1);
        }
        free(t);
        pj_decref(r);
    }
    if (q->oom) fprintf(stderr, "peri acp --wasm: some requests could not be answered\n");
}

static void wasm_acp_clear(wasm_acp *w) {
    free(w->in.p);
    free(w->out.p);
    for (size_t i = 0; i < w->pending.n; i++)
        free(w->pending.ids[i]);
    free(w->pending.ids);
}

static void on_send(void *ud, const uint8_t *data, size_t len) {
    cut_lines(ud, &((wasm_acp *)ud)->out, data, len, module_line);
    write_all((const char *)data, len);
}

static void on_log(void *ud, int level, const char *text, size_t len) {
    const wasm_acp *w = ud;
    static const char *const names[] = {"error", "warning", "info", "debug"};
    if (level > w->verbosity) return;
    fprintf(stderr, "peri acp --wasm: %s: %.*s\n", names[level & 3], (int)len, text);
}

static void add_grant(wasm_acp *w, const char *host, size_t hn, unsigned port) {
    if (!hn || w->ngrants == MAX_GRANTS) return;
    char buf[300];
    int k = snprintf(buf, sizeof buf, "%.*s:%u", (int)hn, host, port);
    if (k < 0 || (size_t)k >= sizeof buf) return;
    for (size_t i = 0; i < w->ngrants; i++)
        if (!strcmp(w->grants[i], buf)) return;
    char *g = strdup(buf);
    if (g) w->grants[w->ngrants++] = g;
}

/* host and port of scheme://[user[:pass]@]host[:port]/..., default_port when absent. */
static void grant_url(wasm_acp *w, const char *url, unsigned default_port) {
    const char *p = strstr(url, "://");
    if (!p) return;
    p += 3;
    size_t auth = strcspn(p, "/?#");
    const char *at = memchr(p, '@', auth);
    if (at) {
        auth -= (size_t)(at + 1 - p);
        p = at + 1;
    }
    const char *host = p, *end = p + auth;
    const char *colon = NULL;
    if (*host == '[') { /* IPv6 literal: keep the brackets, as the allow-list wants */
        const char *rb = memchr(host, ']', auth);
        if (!rb) return;
        colon = rb + 1 < end && rb[1] == ':' ? rb + 1 : NULL;
        add_grant(w, host, (size_t)(rb + 1 - host),
                  colon ? (unsigned)strtoul(colon + 1, NULL, 10) : default_port);
        return;
    }
    colon = memchr(host, ':', auth);
    size_t hn = colon ? (size_t)(colon - host) : auth;
    unsigned port = colon ? (unsigned)strtoul(colon + 1, NULL, 10) : default_port;
    if (port == 0 || port > 65535) return;
    add_grant(w, host, hn, port);
}

/* Every http(s) URL string under a key ending in "url" (any case), bounded depth. */
static void grant_settings(wasm_acp *w, const pj_t *v, int depth) {
    if (depth > 8) return;
    if (pj_is_array(v)) {
        for (size_t i = 0; i < pj_array_size(v); i++)
            grant_settings(w, pj_array_get(v, i), depth + 1);
        return;
    }
    if (!pj_is_object(v)) return;
    for (size_t i = 0; i < pj_object_size(v); i++) {
        const char *k = pj_object_key_at(v, i);
        pj_t *x = pj_object_value_at(v, i);
        size_t kl = strlen(k);
        if (pj_is_string(x) && kl >= 3 && !strcasecmp(k + kl - 3, "url")) {
            const char *s = pj_string_value(x);
            if (!strncasecmp(s, "https://", 8))
                grant_url(w, s, 443);
            else if (!strncasecmp(s, "http://", 7))
                grant_url(w, s, 80);
        } else {
            grant_settings(w, x, depth + 1);
        }
    }
}

static int add_cred(wasm_acp *w, const char *kind_prefix, const char *name, const char *secret) {
    if (w->ncreds == MAX_CREDS) return -1;
    size_t n = strlen(kind_prefix) + strlen(name) + 1;
    char *kind = malloc(n), *sec = strdup(secret);
    if (!kind || !sec) {
        free(kind);
        free(sec);
        return -1;
    }
    snprintf(kind, n, "%s%s", kind_prefix, name);
    w->cred_mem[w->nmem++] = kind;
    w->cred_mem[w->nmem++] = sec;
    w->creds[w->ncreds++] = (pwh_credential){kind, sec};
    return 0;
}

/* Moves the settings' secrets into credentials (the doc keeps none). 0, or -1 (OOM). */
static int take_secrets(wasm_acp *w, pj_t *doc) {
    pj_t *prov = pj_object_get(doc, "providers");
    for (size_t i = 0; pj_is_object(prov) && i < pj_object_size(prov); i++) {
        pj_t *p = pj_object_value_at(prov, i);
        pj_t *key = pj_object_get(p, "apiKey");
        if (pj_is_string(key) && pj_string_length(key) > 0 &&
            add_cred(w, "model:", pj_object_key_at(prov, i), pj_string_value(key)) != 0)
            return -1;
        if (key) pj_object_del(p, "apiKey");
    }
    pj_t *mcp = pj_object_get(doc, "mcpServers");
    for (size_t i = 0; pj_is_object(mcp) && i < pj_object_size(mcp); i++) {
        pj_t *hdrs = pj_object_get(pj_object_value_at(mcp, i), "headers");
        for (size_t j = 0; pj_is_object(hdrs) && j < pj_object_size(hdrs);) {
            const char *h = pj_object_key_at(hdrs, j);
            pj_t *v = pj_object_value_at(hdrs, j);
            if (strcasecmp(h, "authorization") != 0 || !pj_is_string(v)) {
                j++;
                continue;
            }
            const char *s = pj_string_value(v);
            if (!strncasecmp(s, "Bearer ", 7) && s[7] &&
                add_cred(w, "mcp:", pj_object_key_at(mcp, i), s + 7) != 0)
                return -1;
            pj_object_del(hdrs, h); /* any other scheme is dropped, never sent in clear */
        }
    }
    return 0;
}

static void warn_stderr(const char *msg) {
    fprintf(stderr, "peri acp --wasm: warning: %s\n", msg);
}

static void usage(FILE *f) {
    fprintf(f, "usage: peri acp --wasm [--module FILE] [--allow HOST:PORT]... [--cwd DIR]\n"
               "                [--store URL] [--settings FILE|-] [--machine-id ID]\n"
               "  Runs the Agent Client Protocol server on stdin/stdout with the agent host\n"
               "  inside its WebAssembly form (peri-agent.wasm) on Peri-C's engine: no host\n"
               "  files, shell or subprocesses; workspace tools come from MCP servers over\n"
               "  HTTP (e.g. `peri mcp workspace --listen`).\n"
               "  --module FILE      the agent module (default: peri-agent.wasm next to peri)\n"
               "  --allow HOST:PORT  also grant the network this destination; granted\n"
               "                     already: the store and every http(s) URL in the settings\n"
               "  --store URL        the shared PostgreSQL store (required: the WebAssembly\n"
               "                     form has no local store; a path is refused by the module)\n"
               "  --cwd, --settings, --machine-id: as for `peri acp`. Secrets (API keys, MCP\n"
               "  bearer tokens, the store's password) reach the module only on request\n"
               "  (peri_host.credential), never in its start object.\n"
               "  PERI_WASM_LOG=error|warning|info|debug: the module's log on stderr\n"
               "  (default warning); from info on, the module's linear memory size at exit.\n"
               "  PERI_ENGINE=auto|interp|jit|lazy: the engine's tier for the module\n"
               "  (default auto).\n");
}

static long mono_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000L + ts.tv_nsec / 1000000L;
}

/* The client side of serve(): stdin fed to the module as it arrives. */
typedef struct feed {
    pwh_instance *inst;
    wasm_acp *w;
    bool input_open;
    bool failed;         /* the module refused input: the instance is over */
    long close_deadline; /* after the end of input: when the host closes the ports */
    char buf[65536];
} feed;

/* One read of stdin, handed to the module; at the end of input the module is told and
 * closed. Called by the loop when stdin is readable, or at every turn for a file. */
static void on_stdin(void *arg) {
    feed *f = arg;
    ssize_t n = read(0, f->buf, sizeof f->buf);
    if (n > 0) {
        cut_lines(f->w, &f->w->in, (const uint8_t *)f->buf, (size_t)n, client_line);
        if (pwh_input(f->inst, f->buf, (size_t)n) != PWH_OK) f->failed = true;
        return;
    }
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) return;
    f->input_open = false;
    pwh_watch(f->inst, -1, NULL, NULL);
    pwh_input_end(f->inst);
    pwh_close(f->inst);
    f->close_deadline = mono_ms() + CLOSE_DEADLINE_MS;
}

/* Feeds stdin to the module until the end of input, then closes and waits for the
 * settlement (deadline: the host closes the ports). The loop waits on stdin and the
 * ports together, so an idle agent sleeps and a request is handled when it arrives.
 * 0 when settled cleanly. */
static int serve(pwh_instance *inst, wasm_acp *w) {
    feed *f = calloc(1, sizeof *f);
    if (!f) return 1;
    *f = (feed){.inst = inst, .w = w, .input_open = true, .close_deadline = -1};
    bool file = false; /* stdin epoll cannot wait on (a file, /dev/null): never blocks */
    if (pwh_watch(inst, 0, on_stdin, f) != 0) {
        if (errno != EPERM) {
            fprintf(stderr, "peri acp --wasm: cannot wait on stdin: %s\n", strerror(errno));
            free(f);
            return 1;
        }
        file = true;
    }
    int rc = 1;
    for (;;) {
        if (f->failed) break;
        pwh_settlement se;
        pwh_settlement_get(inst, &se);
        if (se.ended) break;
        if (f->close_deadline >= 0 && se.settled && se.module_reported) {
            rc = 0;
            break;
        }
        if (f->close_deadline >= 0 && mono_ms() > f->close_deadline) {
            pwh_close_ports(inst);
            f->close_deadline = mono_ms() + 1000; /* the forced settling events follow */
            if (se.closed_by_host) break;
        }
        if (file && f->input_open) on_stdin(f);
        int wait = -1; /* input open: until stdin or a port wakes the loop */
        if (f->close_deadline >= 0) {
            long left = f->close_deadline - mono_ms() + 1;
            wait = left < 0 ? 0 : left > 100 ? 100 : (int)left;
        } else if (file) {
            wait = 0;
        }
        if (pwh_run_once(inst, wait) < 0) break;
    }
    pwh_settlement se;
    pwh_settlement_get(inst, &se);
    if (f->failed || se.ended) module_died(w, pwh_error(inst));
    if (f->input_open) pwh_watch(inst, -1, NULL, NULL);
    free(f);
    return rc;
}

int peri_cmd_acp_wasm(int argc, char **argv) {
    peri_host_args a = {0};
    const char *module = NULL;
    wasm_acp w = {.verbosity = 1};
    int rc = 1;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--wasm")) {
            continue;
        } else if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            usage(stdout);
            return 0;
        } else if (peri_host_arg(argc, argv, &i, &a)) {
            continue;
        } else if (!strcmp(argv[i], "--store") && i + 1 < argc) {
            a.db = argv[++i];
        } else if (!strcmp(argv[i], "--settings") && i + 1 < argc) {
            a.settings = argv[++i];
        } else if (!strcmp(argv[i], "--machine-id") && i + 1 < argc) {
            a.machine_id = argv[++i];
        } else if (!strcmp(argv[i], "--shared-store")) {
            a.shared_store = true;
        } else if (!strcmp(argv[i], "--module") && i + 1 < argc) {
            module = argv[++i];
        } else if (!strcmp(argv[i], "--allow") && i + 1 < argc) {
            const char *g = argv[++i], *c = strrchr(g, ':');
            unsigned long port = c ? strtoul(c + 1, NULL, 10) : 0;
            if (!c || port == 0 || port > 65535) {
                fprintf(stderr, "peri acp --wasm: --allow wants HOST:PORT, got \"%s\"\n", g);
                return 2;
            }
            add_grant(&w, g, (size_t)(c - g), (unsigned)port);
        } else {
            fprintf(stderr, "peri acp --wasm: unexpected argument \"%s\"\n", argv[i]);
            usage(stderr);
            return 2;
        }
    }
    const char *lv = getenv("PERI_WASM_LOG");
    if (lv) {
        static const char *const names[] = {"error", "warning", "info", "debug"};
        for (int k = 0; k < 4; k++)
            if (!strcmp(lv, names[k])) w.verbosity = k;
    }
    char located[PATH_MAX];
    if (!module) {
        if (!peri_locate("peri-agent.wasm", located, sizeof located)) {
            fprintf(stderr, "peri acp --wasm: peri-agent.wasm is not next to peri; name it "
                            "with --module FILE\n");
            return 1;
        }
        module = located;
    }
    peri_host_start h;
    char err[512];
    if (peri_host_start_init(&h, &a, err, sizeof err) != 0) {
        fprintf(stderr, "peri acp --wasm: %s\n", err);
        return 1;
    }
    peri_store_locator_t loc = {0};
    const char *tel_token = getenv("PERI_TELEMETRY_TOKEN"); /* settings.telemetry's */
    bool remote =
        h.db && (!strncmp(h.db, "postgresql://", 13) || !strncmp(h.db, "postgres://", 11));
    pwh_instance *inst = NULL;
    pw_module *m = NULL;
    char *start = NULL, *bytes = NULL;
    size_t mlen = 0;
    /* a local store is passed on: the module refuses it at start, saying why */
    if (remote && peri_store_locator(h.db, getenv("HOME"), &loc, warn_stderr, err, sizeof err)) {
        fprintf(stderr, "peri acp --wasm: %s\n", err);
        goto out;
    }
    if ((!remote && !(loc.locator = strdup(h.db ? h.db : ""))) ||
        (loc.password && add_cred(&w, "store", "", loc.password) != 0) ||
        take_secrets(&w, h.settings) != 0 ||
        (tel_token && *tel_token && add_cred(&w, "telemetry", "", tel_token) != 0)) {
        fprintf(stderr, "peri acp --wasm: out of memory\n");
        goto out;
    }
    if (loc.host[0] && loc.port > 0 && loc.port <= 65535)
        add_grant(&w, loc.host, strlen(loc.host), loc.port);
    grant_settings(&w, h.settings, 0);
    pj_t *so = pj_pack("{s:s, s:O, s:{s:s, s:{s:s}}, s:s}", "cwd", h.cwd, "settings", h.settings,
                       "storage", "url", loc.locator, "credential", "source", "host", "machineId",
                       h.machine_id);
    start = so ? pj_dumps(so, PJ_COMPACT) : NULL;
    pj_decref(so);
    if (!start) {
        fprintf(stderr, "peri acp --wasm: out of memory\n");
        goto out;
    }
    if (!(bytes = peri_read_file(module, false, &mlen))) {
        fprintf(stderr, "peri acp --wasm: cannot read the module %s: %s\n", module,
                strerror(errno));
        goto out;
    }
    pw_error pe;
    m = pw_module_new((const uint8_t *)bytes, mlen, NULL, &pe);
    if (!m) {
        fprintf(stderr, "peri acp --wasm: %s: not a loadable module: %s\n", module, pe.message);
        goto out;
    }
    int engine = peri_engine_default(); /* PERI_ENGINE, as every peri command running Wasm */
    if (engine < 0) {
        rc = 2;
        goto out;
    }
    pwh_opts o = {.module = m,
                  .engine = engine,
                  .allow = (const char *const *)w.grants,
                  .nallow = w.ngrants,
                  .credentials = w.creds,
                  .ncredentials = w.ncreds,
                  .on_send = on_send,
                  .on_log = on_log,
                  .ud = &w};
    inst = pwh_new(&o, err, sizeof err);
    if (!inst) {
        fprintf(stderr, "peri acp --wasm: %s\n", err);
        goto out;
    }
    if (pwh_start(inst, start, strlen(start)) != PWH_OK) {
        fprintf(stderr, "peri acp --wasm: the module refused to start: %s\n", pwh_error(inst));
        goto out;
    }
    rc = serve(inst, &w);
    /* the store never opened (the module logged why): the command failed, as native */
    const char *report = pwh_settled_report(inst);
    if (rc == 0 && report && strstr(report, "\"store\":\"failed\"")) rc = 1;
    if (w.verbosity >= 2) /* info: what the instance grew to, for capacity planning */
        fprintf(stderr, "peri acp --wasm: the module's linear memory: %llu bytes\n",
                (unsigned long long)pwh_memory_size(inst));
out:
    pwh_free(inst);
    pw_module_free(m);
    free(bytes);
    free(start);
    peri_store_locator_clear(&loc);
    for (size_t i = 0; i < w.ngrants; i++)
        free(w.grants[i]);
    for (size_t i = 0; i < w.nmem; i++)
        free(w.cred_mem[i]);
    peri_host_start_clear(&h);
    wasm_acp_clear(&w);
    return rc;
}
