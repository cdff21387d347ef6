/*
 * guest.c — a test guest for the Node WebAssembly host (sdk/js/wasm-host.mjs): a
 * wasm32-wasi reactor with the agent-host module's exports (docs/wasm-host.md) that,
 * instead of an agent, obeys one command per input line and reports every import's
 * result and every port event as a line sent to the client. Built by the JS tests with
 * clang --target=wasm32-wasi -mexec-model=reactor.
 *
 * Commands: open HOST PORT [SNI] (SNI given: TLS) | write H TEXT | read H | hold H |
 * auto H | starttls H [SNI] | shutdown H | close H | resolve NAME | rcancel H |
 * timer MS | tcancel H | now | startobj | hostile | fuzz SEED N | log TEXT |
 * stderr TEXT | trap | exit |
 * wpat H N (N bytes of the pattern (i*31+7)&255, i counting every byte accepted) |
 * cred KIND CAP ("cred ERR LEN SECRET") | credbad. A start object
 * whose cwd is /refuse is refused (after setting a timer the host must settle).
 * Lines sent: "<command> <err> [<handle>|<data>]", and for events "ev KIND H ERR DETAIL";
 * a readable stream is read at once (unless held) and reported as "data H TEXT" and
 * "eof H".
 */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define IMPORT(mod, name) __attribute__((import_module(mod), import_name(name)))
#define EXPORT(name)      __attribute__((export_name(name)))

IMPORT("peri_port", "open")
int32_t p_open(const char *h, int32_t hl, int32_t port, int32_t flags, const char *s, int32_t sl,
               uint32_t *out);
IMPORT("peri_port", "read") int32_t p_read(uint32_t h, char *buf, int32_t cap, uint32_t *got);
IMPORT("peri_port", "write") int32_t p_write(uint32_t h, const char *p, int32_t len);
IMPORT("peri_port", "shutdown") int32_t p_shutdown(uint32_t h);
IMPORT("peri_port", "close") int32_t p_close(uint32_t h);
IMPORT("peri_port", "resolve") int32_t p_resolve(const char *n, int32_t nl, uint32_t *out);
IMPORT("peri_port", "resolve_cancel") int32_t p_resolve_cancel(uint32_t h);
IMPORT("peri_port", "now_ms") int64_t p_now_ms(void);
IMPORT("peri_port", "wall_ms") int64_t p_wall_ms(void);
IMPORT("peri_port", "timer_set") int32_t p_timer_set(int64_t delay, uint32_t *out);
IMPORT("peri_port", "timer_cancel") int32_t p_timer_cancel(uint32_t h);
IMPORT("peri_port", "starttls") int32_t p_starttls(uint32_t h, const char *s, int32_t sl);
IMPORT("peri_host", "send") int32_t h_send(const char *p, int32_t len);
IMPORT("peri_host", "log") void h_log(int32_t level, const char *p, int32_t len);
IMPORT("peri_host", "settled") void h_settled(const char *p, int32_t len);
IMPORT("peri_host", "credential")
int32_t h_credential(const char *k, int32_t kl, char *buf, int32_t cap, uint32_t *out_len);

static char line[8192];
static size_t line_len;
static char held[64];        /* held[h % 64]: do not read h on readable */
static char scratch[4096];   /* the fuzz command's in-range pointers land here */
static char start_obj[4096]; /* the start object, for the startobj command */
static uint64_t pat_off;     /* bytes of the wpat pattern accepted so far */

static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void say(const char *fmt, ...) {
    char buf[9000];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf, sizeof buf - 1, fmt, ap);
    va_end(ap);
    if (n < 0) return;
    if (n > (int)sizeof buf - 2) n = sizeof buf - 2;
    buf[n++] = '\n';
    h_send(buf, n);
}

static void drain(uint32_t h) {
    char buf[4096];
    for (;;) {
        uint32_t got = 0;
        int32_t e = p_read(h, buf, sizeof buf, &got);
        if (e == -1) return; /* again */
        if (e != 0) {
            say("readerr %u %d", h, e);
            return;
        }
        if (got == 0) {
            say("eof %u", h);
            return;
        }
        say("data %u %.*s", h, (int)got, buf);
    }
}

static void command(char *c) {
    char *arg = strchr(c, ' ');
    if (arg) *arg++ = 0;
    uint32_t h = 0;
    if (!strcmp(c, "open")) {
        char host[300] = "", sni[300] = "";
        int port = 0;
        int n = sscanf(arg ? arg : "", "%299s %d %299s", host, &port, sni);
        int32_t e = p_open(host, (int32_t)strlen(host), port, n == 3 ? 1 : 0, sni,
                           (int32_t)strlen(sni), &h);
        say("open %d %u", e, h);
    } else if (!strcmp(c, "write") && arg) {
        uint32_t hh = (uint32_t)strtoul(arg, &arg, 10);
        if (*arg == ' ') arg++;
        if (!strncmp(arg, "big ", 4)) { /* write N bytes of 'x' */
            long n = strtol(arg + 4, NULL, 10);
            char *b = malloc((size_t)n);
            memset(b, 'x', (size_t)n);
            say("write %d", p_write(hh, b, (int32_t)n));
            free(b);
        } else {
            say("write %d", p_write(hh, arg, (int32_t)strlen(arg)));
        }
    } else if (!strcmp(c, "wpat") && arg) {
        uint32_t hh = (uint32_t)strtoul(arg, &arg, 10);
        long n = strtol(arg, NULL, 10);
        char *b = malloc(n > 0 ? (size_t)n : 1);
        for (long i = 0; i < n; i++)
            b[i] = (char)(((pat_off + (uint64_t)i) * 31 + 7) & 255);
        int32_t e = p_write(hh, b, (int32_t)n);
        if (e == 0) pat_off += (uint64_t)n;
        free(b);
        say("wpat %d %llu", e, (unsigned long long)pat_off);
    } else if (!strcmp(c, "cred") && arg) {
        char kind[300] = "", buf[256] = "";
        int cap = 0;
        sscanf(arg, "%299s %d", kind, &cap);
        uint32_t len = 0xffffffffu;
        int32_t e = h_credential(kind, (int32_t)strlen(kind), buf, cap < 256 ? cap : 256, &len);
        say("cred %d %u %.*s", e, len, e == 0 ? (int)len : 0, buf);
    } else if (!strcmp(c, "credbad")) {
        uint32_t far = 0xfffffff0u, len = 0;
        char buf[8];
        int32_t r[3];
        r[0] = h_credential((const char *)far, 5, buf, 8, &len);
        r[1] = h_credential("store", 5, (char *)far, 64, &len);
        r[2] = h_credential("store", 5, buf, 8, (uint32_t *)far);
        say("credbad %d %d %d", r[0], r[1], r[2]);
    } else if (!strcmp(c, "read") && arg) {
        drain((uint32_t)atoi(arg));
    } else if (!strcmp(c, "hold") && arg) {
        held[atoi(arg) % 64] = 1;
        say("hold 0");
    } else if (!strcmp(c, "auto") && arg) {
        held[atoi(arg) % 64] = 0;
        drain((uint32_t)atoi(arg));
    } else if (!strcmp(c, "starttls") && arg) {
        char sni[300] = "";
        unsigned hh = 0;
        sscanf(arg, "%u %299s", &hh, sni);
        say("starttls %d", p_starttls(hh, sni, (int32_t)strlen(sni)));
    } else if (!strcmp(c, "shutdown") && arg) {
        say("shutdown %d", p_shutdown((uint32_t)atoi(arg)));
    } else if (!strcmp(c, "close") && arg) {
        say("close %d", p_close((uint32_t)atoi(arg)));
    } else if (!strcmp(c, "resolve") && arg) {
        int32_t e = p_resolve(arg, (int32_t)strlen(arg), &h);
        say("resolve %d %u", e, h);
    } else if (!strcmp(c, "rcancel") && arg) {
        say("rcancel %d", p_resolve_cancel((uint32_t)atoi(arg)));
    } else if (!strcmp(c, "timer") && arg) {
        int32_t e = p_timer_set(atoll(arg), &h);
        say("timer %d %u", e, h);
    } else if (!strcmp(c, "tcancel") && arg) {
        say("tcancel %d", p_timer_cancel((uint32_t)atoi(arg)));
    } else if (!strcmp(c, "now")) {
        say("now %lld %lld", (long long)p_now_ms(), (long long)p_wall_ms());
    } else if (!strcmp(c, "startobj")) {
        say("startobj %s", start_obj);
    } else if (!strcmp(c, "hostile")) {
        /* out-of-range pointers and lengths: every one must be refused with -2 */
        uint32_t far = 0xfffffff0u;
        char buf[8];
        int32_t r[8];
        r[0] = p_open((const char *)far, 64, 80, 0, "", 0, &h);
        r[1] = p_open("localhost", 9, 80, 0, "", 0, (uint32_t *)far);
        r[2] = p_read(1, buf, 0x7fffffff, &h);
        r[3] = p_write(1, buf, -1);
        r[4] = p_resolve((const char *)far, 100, &h);
        r[5] = p_timer_set(10, (uint32_t *)far);
        r[6] = h_send((const char *)far, 100);
        r[7] = p_open("\xff\xfe", 2, 80, 0, "", 0, &h); /* not UTF-8 */
        h_log(1, (const char *)far, 50);                /* ignored */
        say("hostile %d %d %d %d %d %d %d %d", r[0], r[1], r[2], r[3], r[4], r[5], r[6], r[7]);
    } else if (!strcmp(c, "fuzz") && arg) {
        /* every port import with arbitrary arguments (any pointer, any length, any
         * handle): the host answers each with an error code or success, never a trap */
        uint32_t x = (uint32_t)strtoul(arg, &arg, 10);
        long n = strtol(arg, NULL, 10);
        int bad = 0;
        for (long i = 0; i < n; i++) {
            uint32_t r[7];
            for (int k = 0; k < 7; k++) {
                x = x * 1664525u + 1013904223u;
                /* half in range (pointers into scratch, whose bytes the host may
                 * overwrite harmlessly; short lengths), half anything */
                r[k] = x & 0x80000000u ? x
                                       : (k & 1 ? (uint32_t)(uintptr_t)scratch + (x >> 8) % 4000
                                                : (x >> 8) % 64);
            }
            int32_t e = 0;
            switch (r[0] % 9) {
            case 0:
                e = p_open((const char *)r[1], (int32_t)r[2], (int32_t)r[4] % 70000,
                           (int32_t)(r[6] & 1), (const char *)r[3], (int32_t)r[4] % 8,
                           (uint32_t *)r[5]);
                break;
            case 1: e = p_read(r[2] % 8, (char *)r[1], (int32_t)r[4], (uint32_t *)r[3]); break;
            case 2: e = p_write(r[2] % 8, (const char *)r[1], (int32_t)r[4]); break;
            case 3: e = p_shutdown(r[2] % 8); break;
            case 4: e = p_close(r[2] % 8); break;
            case 5: e = p_resolve((const char *)r[1], (int32_t)r[2], (uint32_t *)r[3]); break;
            case 6: e = p_resolve_cancel(r[2] % 8); break;
            case 7:
                e = p_timer_set((int64_t)r[2] * (r[6] & 1 ? 1 : 1000000007), (uint32_t *)r[3]);
                break;
            default: e = p_timer_cancel(r[2] % 8); break;
            }
            if (e > 0 || e < -13) bad++;
        }
        say("fuzz done %ld %d", n, bad);
    } else if (!strcmp(c, "log") && arg) {
        h_log(0, arg, (int32_t)strlen(arg));
        say("log 0");
    } else if (!strcmp(c, "stderr") && arg) {
        fprintf(stderr, "%s\n", arg);
        say("stderr 0");
    } else if (!strcmp(c, "trap")) {
        __builtin_trap();
    } else if (!strcmp(c, "exit")) {
        exit(3);
    } else {
        say("unknown %s", c);
    }
}

EXPORT("peri_alloc") void *peri_alloc(int32_t n) {
    return malloc(n > 0 ? (size_t)n : 1);
}
EXPORT("peri_free") void peri_free(void *p) {
    free(p);
}

EXPORT("peri_start") int32_t peri_start(char *p, int32_t len) {
    /* refuse a start object whose cwd is /refuse, to test start-up failure */
    int refuse = len > 0 && strstr(p, "\"cwd\":\"/refuse\"") != NULL;
    if (refuse) {
        uint32_t h;
        p_timer_set(100000, &h); /* left open: the host's cleanup must settle it */
        h_log(0, "cwd /refuse is refused by the guest", 35);
    } else {
        snprintf(start_obj, sizeof start_obj, "%.*s", (int)len, p);
        say("start %d", len);
    }
    free(p);
    return refuse ? -2 : 0;
}

EXPORT("peri_input") int32_t peri_input(char *p, int32_t len) {
    for (int32_t i = 0; i < len; i++) {
        if (p[i] == '\n') {
            line[line_len] = 0;
            command(line);
            line_len = 0;
        } else if (line_len < sizeof line - 1) {
            line[line_len++] = p[i];
        }
    }
    free(p);
    return 0;
}

EXPORT("peri_input_end") void peri_input_end(void) {
    say("input_end");
}

EXPORT("peri_port_event")
void peri_port_event(int32_t kind, uint32_t h, int32_t err, char *p, int32_t len) {
    if (kind == 2) {
        if (!held[h % 64]) drain(h);
    } else {
        for (int32_t i = 0; i < len; i++)
            if (p[i] == 0) p[i] = ',';
        say("ev %d %u %d %.*s", kind, h, err, (int)len, p ? p : "");
    }
    free(p);
}

EXPORT("peri_close") int32_t peri_close(void) {
    say("closing");
    static const char report[] = "{\"turns\":0,\"guest\":true}";
    h_settled(report, (int32_t)sizeof report - 1);
    return 0;
}
