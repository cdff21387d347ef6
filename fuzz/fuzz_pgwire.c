/*
 * fuzz_pgwire.c — libFuzzer target for the PostgreSQL wire client (src/store/pgwire*.c):
 * any bytes from a hostile server must give events or a typed failure, never a crash,
 * leak, unbounded allocation or undefined behaviour. The first input byte picks the
 * configuration (password, TLS mode, cleartext and no-auth permissions), the second the
 * size of the pieces the rest is fed in; a query is issued at every ReadyForQuery so
 * the query-time states are reached. The SCRAM nonce's random bytes are all zero, so
 * the client nonce is "AAAAAAAAAAAAAAAAAAAAAAAA" (seed inputs can extend it).
 *   make fuzz && ./build-fuzz/fuzz-pgwire -max_total_time=60
 */
#include "store/pgwire.h"

#include <stdint.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 2) return 0;
    uint8_t mode = data[0];
    size_t piece = 1 + data[1] % 64;
    data += 2, size -= 2;
    pst__pgw_config cfg = {.user = "fuzz", .database = "db"};
    cfg.password = mode & 1 ? "pencil" : NULL;
    cfg.tls = (pst__pgw_tls)((mode >> 1) % 4);
    cfg.allow_cleartext_over_tls = mode & 8;
    cfg.allow_no_auth = mode & 16;
    cfg.max_message = mode & 32 ? 256 : 0;
    cfg.max_iterations = 64; /* keeps the fuzzer fast; the bound itself is what is tested */
    pst__pgw_error err;
    pst__pgw *c = pst__pgw_new(&cfg, &err);
    if (!c) __builtin_trap(); /* a valid configuration never fails but for memory */
    size_t n;
    for (size_t off = 0; off < size;) {
        size_t take = piece < size - off ? piece : size - off;
        if (!pst__pgw_feed(c, data + off, take)) break;
        off += take;
        pst__pgw_event ev;
        pst__pgw_ev_kind k;
        while ((k = pst__pgw_next(c, &ev)) != PST_PGW_EV_NONE && k != PST_PGW_EV_FAILED) {
            switch (k) {
            case PST_PGW_EV_TLS: pst__pgw_tls_started(c); break;
            case PST_PGW_EV_READY:
                if (mode & 64) {
                    const char *v[2] = {"x", NULL};
                    pst__pgw_query_params(c, "SELECT $1, $2", 2, v, NULL, mode & 128);
                } else {
                    pst__pgw_query(c, "SELECT 1");
                }
                break;
            case PST_PGW_EV_ROW:
                if (ev.ncol < 0 || ev.ncol > 1664) __builtin_trap();
                for (int i = 0; i < ev.ncol; i++)
                    if (ev.col[i] && ev.col[i][ev.len[i]] != 0) __builtin_trap();
                break;
            case PST_PGW_EV_COLUMNS:
                for (int i = 0; i < ev.ncol; i++)
                    if (!ev.col[i]) __builtin_trap();
                break;
            case PST_PGW_EV_SERVER_ERROR:
            case PST_PGW_EV_NOTICE:
                if (ev.fields.message) n = strlen(ev.fields.message);
                break;
            default: break;
            }
        }
        if (k == PST_PGW_EV_FAILED) {
            if (ev.error->kind == PST_PGW_E_NONE) __builtin_trap();
            break;
        }
        pst__pgw_output(c, &n);
        pst__pgw_sent(c, n);
    }
    pst__pgw_free(c);
    return 0;
}
