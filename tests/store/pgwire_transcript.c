/*
 * pgwire_transcript.c — a small program built twice, natively (linked with libperi) and
 * for wasm32-wasi (the wire client and base's SHA-256/HMAC/PBKDF2/Base64 alone, with
 * clang and Debian's wasi-libc), as the agent host's WebAssembly form will build them.
 * It hashes inputs of every length around the block boundaries (the native build runs
 * the SHA extensions where the CPU has them, the wasm build the portable rounds), derives
 * keys, and runs a whole session through the codec: SCRAM-SHA-256 against server
 * messages computed independently (Python's hashlib) for its fixed nonce, then a query
 * with rows, NULLs and an error. It prints everything it sees and checks what it knows;
 * store.pgwire_wasm runs the wasm build on the project's own engine (`peri run`) and
 * requires both outputs to be identical.
 */
#include "peri/base.h"
#include "store/pgwire.h"

#include <stdio.h>
#include <string.h>

static int failures;

static void check(bool ok, const char *what) {
    if (!ok) {
        printf("FAIL %s\n", what);
        failures++;
    }
}

static void hex_line(const char *label, const uint8_t *d, size_t n) {
    char h[2 * 64 + 1];
    pb_hex(d, n, h);
    printf("%s %s\n", label, h);
}

static size_t msg(uint8_t *w, char type, const void *body, size_t n) {
    w[0] = (uint8_t)type;
    uint32_t l = (uint32_t)n + 4;
    w[1] = (uint8_t)(l >> 24), w[2] = (uint8_t)(l >> 16), w[3] = (uint8_t)(l >> 8);
    w[4] = (uint8_t)l;
    if (n) memcpy(w + 5, body, n);
    return 5 + n;
}

static size_t auth(uint8_t *w, uint32_t code, const char *data, size_t n) {
    uint8_t b[256] = {(uint8_t)(code >> 24), (uint8_t)(code >> 16), (uint8_t)(code >> 8),
                      (uint8_t)code};
    if (n) memcpy(b + 4, data, n);
    return msg(w, 'R', b, 4 + n);
}

/* Feeds w[0..n) one byte at a time, prints every event, returns the last kind. */
static pst__pgw_ev_kind run(pst__pgw *c, const uint8_t *w, size_t n) {
    pst__pgw_ev_kind last = PST_PGW_EV_NONE;
    for (size_t i = 0; i < n; i++) {
        if (!pst__pgw_feed(c, w + i, 1)) break;
        pst__pgw_event ev;
        pst__pgw_ev_kind k;
        while ((k = pst__pgw_next(c, &ev)) != PST_PGW_EV_NONE) {
            last = k;
            switch (k) {
            case PST_PGW_EV_PARAM: printf("param %s=%s\n", ev.name, ev.value); break;
            case PST_PGW_EV_READY: printf("ready %c\n", ev.tx); break;
            case PST_PGW_EV_COLUMNS:
                for (int j = 0; j < ev.ncol; j++)
                    printf("column %s %u\n", ev.col[j], (unsigned)ev.type_oid[j]);
                break;
            case PST_PGW_EV_ROW:
                for (int j = 0; j < ev.ncol; j++)
                    printf("value %s %zu\n", ev.col[j] ? ev.col[j] : "NULL", ev.len[j]);
                break;
            case PST_PGW_EV_COMPLETE:
                printf("complete %s %lld\n", ev.tag, (long long)ev.rows);
                break;
            case PST_PGW_EV_SERVER_ERROR:
                printf("error %s %s %s\n", ev.fields.severity, ev.fields.sqlstate,
                       ev.fields.message);
                break;
            case PST_PGW_EV_FAILED:
                printf("failed %s %s\n", pst__pgw_errkind_name(ev.error->kind), ev.error->message);
                return k;
            default: printf("event %d\n", (int)k); break;
            }
        }
    }
    return last;
}

static void print_output(pst__pgw *c) {
    size_t n;
    const uint8_t *p = pst__pgw_output(c, &n);
    printf("sent %zu:", n);
    for (size_t i = 0; i < n; i++)
        printf(p[i] >= 0x20 && p[i] < 0x7f ? "%c" : "\\x%02x", p[i]);
    printf("\n");
    pst__pgw_sent(c, n);
}

int main(void) {
    static uint8_t buf[1 << 20];
    for (size_t i = 0; i < sizeof buf; i++)
        buf[i] = (uint8_t)(i * 31 + (i >> 8));
    uint8_t d[PB_SHA256_LEN];
    static const size_t lens[] = {0, 1, 55, 56, 63, 64, 65, 119, 120, 128, 1000, 1 << 20};
    for (size_t i = 0; i < sizeof lens / sizeof *lens; i++) {
        char label[32];
        snprintf(label, sizeof label, "sha256 %zu", lens[i]);
        pb_sha256(buf, lens[i], d);
        hex_line(label, d, sizeof d);
    }
    pb_sha256("abc", 3, d);
    char hx[65];
    pb_hex(d, sizeof d, hx);
    check(!strcmp(hx, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"), "abc");
    pb_hmac_sha256("Jefe", 4, "what do ya want for nothing?", 28, d);
    hex_line("hmac", d, sizeof d);
    uint8_t dk[64];
    check(pb_pbkdf2_sha256("passwd", 6, "salt", 4, 1, dk, 64), "pbkdf2");
    hex_line("pbkdf2", dk, 64);

    /* a session: SCRAM with the server messages of tests/store/pgwire_transcript.c's
     * fixed nonce (18 zero bytes), computed with Python's hashlib for password "pencil" */
    pst__pgw_config cfg = {.user = "alice", .database = "db", .password = "pencil"};
    pst__pgw_error err;
    pst__pgw *c = pst__pgw_new(&cfg, &err);
    if (!c) return 2;
    print_output(c);
    static uint8_t w[4096];
    size_t n = 0;
    static const char mechs[] = "SCRAM-SHA-256\0";
    n = auth(w, 10, mechs, sizeof mechs);
    run(c, w, n);
    print_output(c);
    static const char sf[] =
        "r=AAAAAAAAAAAAAAAAAAAAAAAASrv+N0nce/x,s=c2FsdHNhbHRzYWx0c2FsdA==,i=4096";
    n = auth(w, 11, sf, strlen(sf));
    run(c, w, n);
    size_t outn;
    const uint8_t *out = pst__pgw_output(c, &outn);
    static const char want[] = "c=biws,r=AAAAAAAAAAAAAAAAAAAAAAAASrv+N0nce/x,"
                               "p=WZo1fzv9tNRis30fvP8OAZq87rrIyHsfiK87iPWKsNo=";
    check(outn == 5 + strlen(want) && !memcmp(out + 5, want, strlen(want)), "client proof");
    print_output(c);
    static const char fin[] = "v=2JKk4kE04IxkePTYf9FofmjfKAP9GheDwfb/WpR0kfY=";
    n = auth(w, 12, fin, strlen(fin));
    n += auth(w + n, 0, NULL, 0);
    n += msg(w + n, 'S',
             "server_version\0"
             "15.0",
             20);
    n += msg(w + n, 'Z', "I", 1);
    check(run(c, w, n) == PST_PGW_EV_READY, "ready");
    check(pst__pgw_server_verified(c), "server verified");
    const char *vals[] = {"x", NULL};
    check(pst__pgw_query_params(c, "SELECT $1, $2", 2, vals, NULL, true), "query");
    print_output(c);
    n = msg(w, '1', NULL, 0);
    n += msg(w + n, '2', NULL, 0);
    static const uint8_t rowdesc[] = {
        0, 2,   'a', 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,  25,   0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0,
        0, 'b', 0,   0, 0, 0, 0, 0, 0, 0, 0, 0, 25, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0,    0};
    n += msg(w + n, 'T', rowdesc, sizeof rowdesc);
    static const uint8_t row[] = {0, 2, 0, 0, 0, 1, 'x', 0xff, 0xff, 0xff, 0xff};
    n += msg(w + n, 'D', row, sizeof row);
    n += msg(w + n, 'C', "SELECT 1", 9);
    static const char e[] = "SERROR\0VERROR\0C22012\0Mdivision by zero\0";
    n += msg(w + n, 'E', e, sizeof e);
    n += msg(w + n, 'Z', "I", 1);
    check(run(c, w, n) == PST_PGW_EV_READY, "query ready");
    pst__pgw_terminate(c);
    print_output(c);
    pst__pgw_free(c);
    printf("%s\n", failures ? "FAILED" : "ok");
    return failures ? 1 : 0;
}
