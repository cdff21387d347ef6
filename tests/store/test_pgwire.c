/*
 * test_pgwire.c — the sans-IO PostgreSQL frontend (src/store/pgwire*.c) against canned
 * server bytes: the RFC 7677 SCRAM-SHA-256 vector, a SCRAM server written here over
 * libcrypto (linked for this test only) that checks the client's proof, every refused
 * authentication, startup, simple and extended queries, errors with all fields, the TLS
 * answer, and hostile input (bad lengths, oversized messages, inconsistent rows, random
 * corruption of a valid transcript fed in random pieces).
 */
#include "peri/base.h"
#include "store/pgwire.h"

#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/sha.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

/* ---- a canned server ------------------------------------------------------------- */

typedef struct wire {
    uint8_t b[1 << 16];
    size_t n;
} wire;

static void w_u32(wire *w, uint32_t v) {
    w->b[w->n++] = (uint8_t)(v >> 24);
    w->b[w->n++] = (uint8_t)(v >> 16);
    w->b[w->n++] = (uint8_t)(v >> 8);
    w->b[w->n++] = (uint8_t)v;
}

static void w_u16(wire *w, uint16_t v) {
    w->b[w->n++] = (uint8_t)(v >> 8);
    w->b[w->n++] = (uint8_t)v;
}

static void w_bytes(wire *w, const void *p, size_t n) {
    if (n) memcpy(w->b + w->n, p, n);
    w->n += n;
}

static void w_str(wire *w, const char *s) {
    w_bytes(w, s, strlen(s) + 1);
}

/* A message: type, then the body given as already-built bytes. */
static void w_msg(wire *w, char type, const void *body, size_t n) {
    w->b[w->n++] = (uint8_t)type;
    w_u32(w, (uint32_t)n + 4);
    w_bytes(w, body, n);
}

static void w_auth(wire *w, uint32_t code, const void *data, size_t n) {
    wire b = {.n = 0};
    w_u32(&b, code);
    w_bytes(&b, data, n);
    w_msg(w, 'R', b.b, b.n);
}

static void w_ready(wire *w, char tx) {
    w_msg(w, 'Z', &tx, 1);
}

static void w_param(wire *w, const char *k, const char *v) {
    wire b = {.n = 0};
    w_str(&b, k);
    w_str(&b, v);
    w_msg(w, 'S', b.b, b.n);
}

/* ErrorResponse/NoticeResponse from "Xvalue" strings, NULL-terminated. */
static void w_fields(wire *w, int type, ...) { /* int: va_start needs a promoted type */
    wire b = {.n = 0};
    va_list ap;
    va_start(ap, type);
    for (const char *f; (f = va_arg(ap, const char *));)
        w_str(&b, f);
    va_end(ap);
    b.b[b.n++] = 0;
    w_msg(w, type, b.b, b.n);
}

static void w_rowdesc(wire *w, int n, const char *const *names, const uint32_t *oids) {
    wire b = {.n = 0};
    w_u16(&b, (uint16_t)n);
    for (int i = 0; i < n; i++) {
        w_str(&b, names[i]);
        w_u32(&b, 0);
        w_u16(&b, 0);
        w_u32(&b, oids[i]);
        w_u16(&b, 0xffff);
        w_u32(&b, 0xffffffff);
        w_u16(&b, 0);
    }
    w_msg(w, 'T', b.b, b.n);
}

static void w_datarow(wire *w, int n, const char *const *vals) {
    wire b = {.n = 0};
    w_u16(&b, (uint16_t)n);
    for (int i = 0; i < n; i++) {
        if (!vals[i]) {
            w_u32(&b, 0xffffffff);
            continue;
        }
        w_u32(&b, (uint32_t)strlen(vals[i]));
        w_bytes(&b, vals[i], strlen(vals[i]));
    }
    w_msg(w, 'D', b.b, b.n);
}

static void w_complete(wire *w, const char *tag) {
    w_msg(w, 'C', tag, strlen(tag) + 1);
}

/* ---- the client side ------------------------------------------------------------- */

static pst__pgw_config base_cfg(void) {
    pst__pgw_config cfg = {.user = "alice", .database = "db", .application_name = "test"};
    for (int i = 0; i < 18; i++)
        cfg.nonce_random[i] = (uint8_t)(i * 11 + 1);
    return cfg;
}

static pst__pgw *client(const pst__pgw_config *cfg) {
    pst__pgw_error err;
    pst__pgw *c = pst__pgw_new(cfg, &err);
    assert_non_null(c);
    return c;
}

/* Everything queued for sending, appended to *out (may be NULL: discarded). */
static void take_output(pst__pgw *c, wire *out) {
    size_t n;
    const uint8_t *p = pst__pgw_output(c, &n);
    if (out && n) w_bytes(out, p, n);
    pst__pgw_sent(c, n);
}

static pst__pgw_ev_kind feed_next(pst__pgw *c, const wire *w, pst__pgw_event *ev) {
    assert_true(pst__pgw_feed(c, w->b, w->n));
    return pst__pgw_next(c, ev);
}

/* A trusted session up to the first ReadyForQuery. */
static pst__pgw *ready_client(void) {
    pst__pgw_config cfg = base_cfg();
    pst__pgw *c = client(&cfg);
    take_output(c, NULL);
    wire w = {.n = 0};
    w_auth(&w, 0, NULL, 0);
    w_ready(&w, 'I');
    pst__pgw_event ev;
    assert_int_equal(feed_next(c, &w, &ev), PST_PGW_EV_READY);
    assert_true(pst__pgw_ready(c));
    return c;
}

static void expect_failed(pst__pgw *c, pst__pgw_errkind kind) {
    pst__pgw_event ev;
    assert_int_equal(pst__pgw_next(c, &ev), PST_PGW_EV_FAILED);
    if (ev.error->kind != kind)
        fprintf(stderr, "failed with %s: %s\n", pst__pgw_errkind_name(ev.error->kind),
                ev.error->message);
    assert_int_equal(ev.error->kind, kind);
    assert_false(pst__pgw_query(c, "SELECT 1"));
    assert_int_equal(pst__pgw_next(c, &ev), PST_PGW_EV_FAILED); /* it stays failed */
}

/* ---- tests ----------------------------------------------------------------------- */

static void startup_message_bytes(void **st) {
    (void)st;
    pst__pgw_config cfg = base_cfg();
    pst__pgw *c = client(&cfg);
    wire out = {.n = 0};
    take_output(c, &out);
    static const char body[] = "\x00\x03\x00\x00user\0alice\0database\0db\0application_name\0"
                               "test\0client_encoding\0UTF8\0";
    size_t bl = sizeof body; /* the array's final NUL is the list's terminator */
    assert_int_equal(out.n, 4 + bl);
    assert_int_equal(out.b[3], 4 + bl);
    assert_memory_equal(out.b + 4, body, bl);
    size_t n;
    assert_null(pst__pgw_output(c, &n));
    assert_false(pst__pgw_ready(c));
    assert_false(pst__pgw_query(c, "SELECT 1")); /* not before the session is up */
    pst__pgw_free(c);
    uint8_t cancel[16];
    pst__pgw_cancel_request(0x01020304, 0xa0b0c0d0, cancel);
    static const uint8_t want_cancel[16] = {0, 0, 0, 16, 0x04, 0xd2, 0x16, 0x2e,
                                            1, 2, 3, 4,  0xa0, 0xb0, 0xc0, 0xd0};
    assert_memory_equal(cancel, want_cancel, 16);
    pst__pgw_error err;
    cfg.user = "";
    assert_null(pst__pgw_new(&cfg, &err));
    assert_int_equal(err.kind, PST_PGW_E_STATE);
}

/* RFC 7677 section 3, with the RFC's user name and nonce. */
static void scram_rfc7677_vector(void **st) {
    (void)st;
    pst__scram s;
    char first[200], final[400];
    const char *why = NULL;
    assert_true(pst__scram_first(&s, "user", "rOprNGfwEbeRWgbNEkqO", first, sizeof first));
    assert_string_equal(first, "n,,n=user,r=rOprNGfwEbeRWgbNEkqO");
    const char *sf = "r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
                     "s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096";
    assert_true(pst__scram_final(&s, sf, strlen(sf), "pencil", 600000, final, sizeof final, &why));
    assert_string_equal(final, "c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
                               "p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=");
    const char *bad = "v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G5=";
    assert_false(pst__scram_verify(&s, bad, strlen(bad), &why));
    assert_false(s.verified);
    const char *sfin = "v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=";
    assert_true(pst__scram_verify(&s, sfin, strlen(sfin), &why));
    assert_true(s.verified);
    /* refused server-first messages */
    static const char *const refused[] = {
        "r=OTHERNONCE,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096",           /* not our nonce */
        "r=rOprNGfwEbeRWgbNEkqO,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096", /* nothing added */
        "r=rOprNGfwEbeRWgbNEkqOx,s=W22Z aJ0SNY7soEsUEjb6gQ==,i=4096",
        "r=rOprNGfwEbeRWgbNEkqOx,s=,i=4096",
        "r=rOprNGfwEbeRWgbNEkqOx,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=0",
        "r=rOprNGfwEbeRWgbNEkqOx,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=600001",
        "r=rOprNGfwEbeRWgbNEkqOx,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=99999999999",
        "r=rOprNGfwEbeRWgbNEkqOx,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4x",
        "r=rOprNGfwEbeRWgbNEkqOx,s=W22ZaJ0SNY7soEsUEjb6gQ==",
        "m=ext,r=rOprNGfwEbeRWgbNEkqOx,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096",
        "",
    };
    for (size_t i = 0; i < sizeof refused / sizeof *refused; i++) {
        assert_true(pst__scram_first(&s, "user", "rOprNGfwEbeRWgbNEkqO", first, sizeof first));
        assert_false(pst__scram_final(&s, refused[i], strlen(refused[i]), "pencil", 600000, final,
                                      sizeof final, &why));
    }
}

/* The server side of SCRAM-SHA-256 over libcrypto: checks the client's proof against the
 * stored key derived from `password`, and gives the server-final-message. */
typedef struct scram_server {
    char first_bare[200], server_first[300];
    uint8_t salted[32];
} scram_server;

static void hmac(const uint8_t *k, size_t kl, const void *d, size_t n, uint8_t out[32]) {
    unsigned l;
    assert_non_null(HMAC(EVP_sha256(), k, (int)kl, d, n, out, &l));
}

static void server_first(scram_server *sv, const wire *client_msg, const char *password,
                         int iterations) {
    /* 'p' len "SCRAM-SHA-256\0" int32 "n,,n=,r=..." */
    const uint8_t *p = client_msg->b;
    assert_int_equal(p[0], 'p');
    const char *mech = (const char *)p + 5;
    assert_string_equal(mech, "SCRAM-SHA-256");
    const uint8_t *lp = p + 5 + strlen(mech) + 1;
    uint32_t n = (uint32_t)lp[0] << 24 | (uint32_t)lp[1] << 16 | (uint32_t)lp[2] << 8 | lp[3];
    assert_true(n > 3 && n < 150);
    assert_memory_equal(lp + 4, "n,,n=,r=", 8);
    snprintf(sv->first_bare, sizeof sv->first_bare, "%.*s", (int)n - 3, (const char *)lp + 7);
    const uint8_t salt[16] = "0123456789abcdef";
    char salt64[32];
    EVP_EncodeBlock((unsigned char *)salt64, salt, 16);
    snprintf(sv->server_first, sizeof sv->server_first, "r=%s%s,s=%s,i=%d", sv->first_bare + 5,
             "Srv+Nonce/x", salt64, iterations);
    assert_int_equal(PKCS5_PBKDF2_HMAC(password, (int)strlen(password), salt, 16, iterations,
                                       EVP_sha256(), 32, sv->salted),
                     1);
}

/* Checks the client-final message; returns the server-final text ("v=...") into out. */
static bool server_final(scram_server *sv, const wire *client_msg, char *out, size_t cap) {
    const uint8_t *p = client_msg->b;
    assert_int_equal(p[0], 'p');
    uint32_t len = (uint32_t)p[1] << 24 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 8 | p[4];
    char cf[400];
    snprintf(cf, sizeof cf, "%.*s", (int)len - 4, (const char *)p + 5);
    char *proof = strstr(cf, ",p=");
    assert_non_null(proof);
    *proof = 0;
    proof += 3;
    char auth[1000];
    snprintf(auth, sizeof auth, "%s,%s,%s", sv->first_bare, sv->server_first, cf);
    uint8_t ckey[32], stored[32], csig[32], got[64], skey[32], ssig[32];
    hmac(sv->salted, 32, "Client Key", 10, ckey);
    SHA256(ckey, 32, stored);
    hmac(stored, 32, auth, strlen(auth), csig);
    int gl = EVP_DecodeBlock(got, (const unsigned char *)proof, (int)strlen(proof));
    assert_true(gl >= 32);
    for (int i = 0; i < 32; i++)
        got[i] ^= csig[i]; /* the client key the proof carries */
    uint8_t check[32];
    SHA256(got, 32, check);
    hmac(sv->salted, 32, "Server Key", 10, skey);
    hmac(skey, 32, auth, strlen(auth), ssig);
    char s64[64];
    EVP_EncodeBlock((unsigned char *)s64, ssig, 32);
    snprintf(out, cap, "v=%s", s64);
    return memcmp(check, stored, 32) == 0;
}

/* Runs SCRAM with a server that knows server_password; tamper flips the signature. */
static pst__pgw *scram_session(const char *client_password, const char *server_password,
                               bool tamper, bool *proof_ok) {
    pst__pgw_config cfg = base_cfg();
    cfg.password = client_password;
    pst__pgw *c = client(&cfg);
    take_output(c, NULL);
    pst__pgw_event ev;
    wire w = {.n = 0}, out = {.n = 0};
    static const char mechs[] = "SCRAM-SHA-256-PLUS\0SCRAM-SHA-256\0";
    w_auth(&w, 10, mechs, sizeof mechs);
    assert_int_equal(feed_next(c, &w, &ev), PST_PGW_EV_NONE);
    take_output(c, &out);
    scram_server sv;
    server_first(&sv, &out, server_password, 4096);
    w.n = 0;
    w_auth(&w, 11, sv.server_first, strlen(sv.server_first));
    assert_int_equal(feed_next(c, &w, &ev), PST_PGW_EV_NONE);
    out.n = 0;
    take_output(c, &out);
    char fin[100];
    *proof_ok = server_final(&sv, &out, fin, sizeof fin);
    if (tamper) fin[5] = fin[5] == 'A' ? 'B' : 'A';
    w.n = 0;
    w_auth(&w, 12, fin, strlen(fin));
    w_auth(&w, 0, NULL, 0);
    w_param(&w, "server_version", "15.0");
    uint8_t key[8] = {0, 0, 0, 42, 1, 2, 3, 4};
    w_msg(&w, 'K', key, 8);
    w_ready(&w, 'I');
    assert_true(pst__pgw_feed(c, w.b, w.n));
    return c;
}

static void scram_full_exchange(void **st) {
    (void)st;
    bool proof_ok = false;
    pst__pgw *c = scram_session("pencil", "pencil", false, &proof_ok);
    assert_true(proof_ok);
    pst__pgw_event ev;
    assert_int_equal(pst__pgw_next(c, &ev), PST_PGW_EV_PARAM);
    assert_string_equal(ev.name, "server_version");
    assert_string_equal(ev.value, "15.0");
    assert_int_equal(pst__pgw_next(c, &ev), PST_PGW_EV_READY);
    assert_int_equal(ev.tx, 'I');
    assert_true(pst__pgw_server_verified(c));
    uint32_t pid, key;
    pst__pgw_backend_key(c, &pid, &key);
    assert_int_equal(pid, 42);
    assert_int_equal(key, 0x01020304);
    pst__pgw_free(c);
    /* a client with the wrong password sends a proof the server rejects */
    c = scram_session("pencil2", "pencil", false, &proof_ok);
    assert_false(proof_ok);
    pst__pgw_free(c);
}

static void scram_bad_server_signature(void **st) {
    (void)st;
    bool proof_ok;
    pst__pgw *c = scram_session("pencil", "pencil", true, &proof_ok);
    expect_failed(c, PST_PGW_E_AUTH_SERVER);
    assert_false(pst__pgw_server_verified(c));
    pst__pgw_free(c);
}

/* One authentication request answered with the given failure. */
static void auth_case(const char *password, uint32_t code, const void *data, size_t n,
                      bool tls_cleartext, pst__pgw_errkind want) {
    pst__pgw_config cfg = base_cfg();
    cfg.password = password;
    cfg.allow_cleartext_over_tls = tls_cleartext;
    pst__pgw *c = client(&cfg);
    take_output(c, NULL);
    wire w = {.n = 0};
    w_auth(&w, code, data, n);
    assert_true(pst__pgw_feed(c, w.b, w.n));
    expect_failed(c, want);
    size_t out;
    assert_null(pst__pgw_output(c, &out)); /* no password went out */
    pst__pgw_free(c);
}

static void refused_authentications(void **st) {
    (void)st;
    uint8_t salt[4] = {1, 2, 3, 4};
    auth_case("pw", 5, salt, 4, false, PST_PGW_E_AUTH_UNSUPPORTED); /* MD5 */
    auth_case("pw", 3, NULL, 0, false, PST_PGW_E_AUTH_UNSUPPORTED); /* cleartext */
    auth_case("pw", 3, NULL, 0, true, PST_PGW_E_AUTH_UNSUPPORTED);  /* no TLS */
    auth_case(NULL, 3, NULL, 0, false, PST_PGW_E_NO_PASSWORD);
    auth_case("pw", 7, NULL, 0, false, PST_PGW_E_AUTH_UNSUPPORTED); /* GSSAPI */
    auth_case("pw", 9, NULL, 0, false, PST_PGW_E_AUTH_UNSUPPORTED); /* SSPI */
    auth_case("pw", 77, NULL, 0, false, PST_PGW_E_PROTOCOL);
    static const char plus_only[] = "SCRAM-SHA-256-PLUS\0";
    auth_case("pw", 10, plus_only, sizeof plus_only, false, PST_PGW_E_AUTH_UNSUPPORTED);
    static const char scram[] = "SCRAM-SHA-256\0";
    auth_case(NULL, 10, scram, sizeof scram, false, PST_PGW_E_NO_PASSWORD);
    auth_case("pw", 10, "SCRAM", 5, false, PST_PGW_E_PROTOCOL); /* unterminated list */
    auth_case("pw", 11, "r=x", 3, false, PST_PGW_E_PROTOCOL);   /* continue before start */
    auth_case("pw", 12, "v=x", 3, false, PST_PGW_E_PROTOCOL);
    /* a server that skips SCRAM although a password is configured */
    auth_case("pw", 0, NULL, 0, false, PST_PGW_E_AUTH_SERVER);
}

static void skipped_scram_allowed_when_asked(void **st) {
    (void)st;
    pst__pgw_config cfg = base_cfg();
    cfg.password = "pw";
    cfg.allow_no_auth = true;
    pst__pgw *c = client(&cfg);
    wire w = {.n = 0};
    w_auth(&w, 0, NULL, 0);
    w_ready(&w, 'I');
    pst__pgw_event ev;
    assert_int_equal(feed_next(c, &w, &ev), PST_PGW_EV_READY);
    assert_false(pst__pgw_server_verified(c));
    pst__pgw_free(c);
}

static void auth_error_is_typed(void **st) {
    (void)st;
    pst__pgw_config cfg = base_cfg();
    pst__pgw *c = client(&cfg);
    wire w = {.n = 0};
    w_fields(&w, 'E', "SFATAL", "VFATAL", "C28P01",
             "Mpassword authentication failed for user \"alice\"", "Dsome detail", "Rauth_failed",
             NULL);
    assert_true(pst__pgw_feed(c, w.b, w.n));
    pst__pgw_event ev;
    assert_int_equal(pst__pgw_next(c, &ev), PST_PGW_EV_FAILED);
    assert_int_equal(ev.error->kind, PST_PGW_E_AUTH_FAILED);
    assert_string_equal(ev.error->sqlstate, "28P01");
    assert_string_equal(ev.error->severity, "FATAL");
    assert_string_equal(ev.error->message, "password authentication failed for user \"alice\"");
    assert_string_equal(ev.error->detail, "some detail");
    pst__pgw_free(c);
    /* another FATAL at startup (too many connections) is a server error */
    c = client(&cfg);
    w.n = 0;
    w_fields(&w, 'E', "SFATAL", "C53300", "Msorry, too many clients already", NULL);
    assert_true(pst__pgw_feed(c, w.b, w.n));
    expect_failed(c, PST_PGW_E_SERVER);
    assert_string_equal(pst__pgw_failure(c)->sqlstate, "53300");
    pst__pgw_free(c);
}

static void cleartext_over_tls_when_allowed(void **st) {
    (void)st;
    pst__pgw_config cfg = base_cfg();
    cfg.password = "secret";
    cfg.tls = PST_PGW_TLS_REQUIRE;
    cfg.allow_cleartext_over_tls = true;
    pst__pgw *c = client(&cfg);
    wire out = {.n = 0};
    take_output(c, &out);
    static const uint8_t sslreq[] = {0, 0, 0, 8, 0x04, 0xd2, 0x16, 0x2f};
    assert_int_equal(out.n, 8);
    assert_memory_equal(out.b, sslreq, 8);
    pst__pgw_event ev;
    assert_true(pst__pgw_feed(c, "S", 1));
    assert_int_equal(pst__pgw_next(c, &ev), PST_PGW_EV_TLS);
    assert_int_equal(pst__pgw_next(c, &ev), PST_PGW_EV_NONE);
    assert_true(pst__pgw_tls_started(c));
    assert_true(pst__pgw_tls_active(c));
    out.n = 0;
    take_output(c, &out);
    assert_int_equal(out.b[8], 'u'); /* the startup message, "user" */
    wire w = {.n = 0};
    w_auth(&w, 3, NULL, 0);
    assert_int_equal(feed_next(c, &w, &ev), PST_PGW_EV_NONE);
    size_t qn;
    const uint8_t *queued = pst__pgw_output(c, &qn);
    out.n = 0;
    take_output(c, &out);
    static const uint8_t pw[] = {'p', 0, 0, 0, 11, 's', 'e', 'c', 'r', 'e', 't', 0};
    assert_int_equal(out.n, sizeof pw);
    assert_memory_equal(out.b, pw, sizeof pw);
    /* once sent, the queue's storage (kept for reuse) no longer holds the password */
    for (size_t i = 0; i < qn; i++)
        assert_int_equal(queued[i], 0);
    w.n = 0;
    w_auth(&w, 0, NULL, 0);
    w_ready(&w, 'I');
    assert_int_equal(feed_next(c, &w, &ev), PST_PGW_EV_READY);
    pst__pgw_free(c);
}

/* Direct TLS: the startup message first, and cleartext allowed since the stream is TLS. */
static void direct_tls(void **st) {
    (void)st;
    pst__pgw_config cfg = base_cfg();
    cfg.tls = PST_PGW_TLS_DIRECT;
    cfg.password = "pw";
    cfg.allow_cleartext_over_tls = true;
    pst__pgw *c = client(&cfg);
    assert_true(pst__pgw_tls_active(c));
    wire out = {.n = 0};
    take_output(c, &out);
    assert_int_equal(out.b[5], 3); /* the StartupMessage, protocol 3.0 */
    wire w = {.n = 0};
    w_auth(&w, 3, NULL, 0);
    pst__pgw_event ev;
    assert_int_equal(feed_next(c, &w, &ev), PST_PGW_EV_NONE);
    out.n = 0;
    take_output(c, &out);
    assert_int_equal(out.b[0], 'p');
    pst__pgw_free(c);
    cfg.tls = (pst__pgw_tls)(PST_PGW_TLS_DIRECT + 1);
    pst__pgw_error err;
    assert_null(pst__pgw_new(&cfg, &err));
}

static void tls_answers(void **st) {
    (void)st;
    pst__pgw_config cfg = base_cfg();
    pst__pgw_event ev;
    cfg.tls = PST_PGW_TLS_REQUIRE;
    pst__pgw *c = client(&cfg);
    assert_true(pst__pgw_feed(c, "N", 1));
    expect_failed(c, PST_PGW_E_TLS_REFUSED);
    pst__pgw_free(c);
    /* bytes after 'S' arrived in plain text: injected, refused */
    c = client(&cfg);
    assert_true(pst__pgw_feed(c, "SR\0\0\0\x08\0\0\0\0", 10));
    expect_failed(c, PST_PGW_E_PROTOCOL);
    pst__pgw_free(c);
    c = client(&cfg);
    assert_true(pst__pgw_feed(c, "E", 1));
    expect_failed(c, PST_PGW_E_PROTOCOL);
    pst__pgw_free(c);
    cfg.tls = PST_PGW_TLS_PREFER; /* 'N': the startup message follows in plain text */
    c = client(&cfg);
    take_output(c, NULL);
    assert_true(pst__pgw_feed(c, "N", 1));
    assert_int_equal(pst__pgw_next(c, &ev), PST_PGW_EV_NONE);
    wire out = {.n = 0};
    take_output(c, &out);
    assert_true(out.n > 8);
    assert_int_equal(out.b[5], 3); /* protocol 3.0 */
    assert_false(pst__pgw_tls_active(c));
    pst__pgw_free(c);
}

static void simple_query_rows(void **st) {
    (void)st;
    pst__pgw *c = ready_client();
    assert_true(pst__pgw_query(c, "SELECT a, b FROM t"));
    assert_false(pst__pgw_ready(c));
    wire out = {.n = 0};
    take_output(c, &out);
    assert_int_equal(out.b[0], 'Q');
    assert_string_equal((const char *)out.b + 5, "SELECT a, b FROM t");
    wire w = {.n = 0};
    const char *names[] = {"a", "b"};
    const uint32_t oids[] = {23, 25};
    w_rowdesc(&w, 2, names, oids);
    const char *r1[] = {"1", "x"}, *r2[] = {"2", NULL};
    w_datarow(&w, 2, r1);
    w_fields(&w, 'N', "SNOTICE", "VNOTICE", "C00000", "Mhello", NULL);
    w_datarow(&w, 2, r2);
    w_complete(&w, "SELECT 2");
    w_ready(&w, 'I');
    assert_true(pst__pgw_feed(c, w.b, w.n));
    pst__pgw_event ev;
    assert_int_equal(pst__pgw_next(c, &ev), PST_PGW_EV_COLUMNS);
    assert_int_equal(ev.ncol, 2);
    assert_string_equal(ev.col[1], "b");
    assert_int_equal(ev.type_oid[0], 23);
    assert_int_equal(pst__pgw_next(c, &ev), PST_PGW_EV_ROW);
    assert_string_equal(ev.col[0], "1");
    assert_string_equal(ev.col[1], "x");
    assert_int_equal(ev.len[1], 1);
    assert_int_equal(pst__pgw_next(c, &ev), PST_PGW_EV_NOTICE);
    assert_string_equal(ev.fields.message, "hello");
    assert_string_equal(ev.fields.severity, "NOTICE");
    assert_int_equal(pst__pgw_next(c, &ev), PST_PGW_EV_ROW);
    assert_string_equal(ev.col[0], "2");
    assert_null(ev.col[1]);
    assert_int_equal(pst__pgw_next(c, &ev), PST_PGW_EV_COMPLETE);
    assert_string_equal(ev.tag, "SELECT 2");
    assert_int_equal(ev.rows, 2);
    assert_int_equal(pst__pgw_next(c, &ev), PST_PGW_EV_READY);
    assert_true(pst__pgw_ready(c));
    assert_int_equal(pst__pgw_next(c, &ev), PST_PGW_EV_NONE);
    /* empty query, command tags without a count */
    assert_true(pst__pgw_query(c, ""));
    w.n = 0;
    w_msg(&w, 'I', NULL, 0);
    w_complete(&w, "CREATE TABLE");
    w_ready(&w, 'T');
    assert_int_equal(feed_next(c, &w, &ev), PST_PGW_EV_EMPTY);
    assert_int_equal(pst__pgw_next(c, &ev), PST_PGW_EV_COMPLETE);
    assert_int_equal(ev.rows, -1);
    assert_int_equal(pst__pgw_next(c, &ev), PST_PGW_EV_READY);
    assert_int_equal(ev.tx, 'T');
    take_output(c, NULL);
    pst__pgw_terminate(c);
    out.n = 0;
    take_output(c, &out);
    assert_int_equal(out.n, 5);
    assert_int_equal(out.b[0], 'X');
    assert_false(pst__pgw_query(c, "SELECT 1"));
    pst__pgw_free(c);
}

static uint32_t be32(const uint8_t *p) {
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static void extended_query_bytes_and_errors(void **st) {
    (void)st;
    pst__pgw *c = ready_client();
    const char *vals[] = {"abc", NULL, "x\0y"};
    const int lens[] = {-1, 0, 3};
    assert_true(pst__pgw_query_params(c, "INSERT INTO t VALUES($1, $2, $3)", 3, vals, lens, true));
    wire out = {.n = 0};
    take_output(c, &out);
    /* Parse, Bind, Describe, Execute, Sync */
    const char want[] = "PBDES";
    size_t at = 0;
    for (int i = 0; i < 5; i++) {
        assert_true(at < out.n);
        assert_int_equal(out.b[at], want[i]);
        if (want[i] == 'B') {
            const uint8_t *b = out.b + at + 5 + 2; /* after the two empty names */
            assert_int_equal(b[0] << 8 | b[1], 0); /* no format codes: text */
            assert_int_equal(b[2] << 8 | b[3], 3);
            assert_int_equal(be32(b + 4), 3);
            assert_memory_equal(b + 8, "abc", 3);
            assert_int_equal(be32(b + 11), 0xffffffffu); /* NULL */
            assert_int_equal(be32(b + 15), 3);
            assert_memory_equal(b + 19, "x\0y", 3);
        }
        at += 1 + be32(out.b + at + 1);
    }
    assert_int_equal(at, out.n);
    wire w = {.n = 0};
    w_msg(&w, '1', NULL, 0);
    w_msg(&w, '2', NULL, 0);
    w_msg(&w, 'n', NULL, 0);
    w_fields(&w, 'E', "SERROR", "VERROR", "C23505",
             "Mduplicate key value violates unique constraint \"t_pkey\"",
             "DKey (a)=(abc) already exists.", "Hhint", "P12", "Wwhere", "spublic", "tt", "ca",
             "dtext", "nt_pkey", "Fnbtinsert.c", "L666", "R_bt_check_unique", "Zunknown-field",
             NULL);
    w_ready(&w, 'I');
    pst__pgw_event ev;
    assert_int_equal(feed_next(c, &w, &ev), PST_PGW_EV_SERVER_ERROR);
    assert_string_equal(ev.fields.sqlstate, "23505");
    assert_string_equal(ev.fields.severity, "ERROR");
    assert_string_equal(ev.fields.detail, "Key (a)=(abc) already exists.");
    assert_string_equal(ev.fields.hint, "hint");
    assert_string_equal(ev.fields.position, "12");
    assert_string_equal(ev.fields.where, "where");
    assert_string_equal(ev.fields.schema, "public");
    assert_string_equal(ev.fields.table, "t");
    assert_string_equal(ev.fields.column, "a");
    assert_string_equal(ev.fields.datatype, "text");
    assert_string_equal(ev.fields.constraint, "t_pkey");
    assert_string_equal(ev.fields.file, "nbtinsert.c");
    assert_string_equal(ev.fields.line, "666");
    assert_string_equal(ev.fields.routine, "_bt_check_unique");
    assert_int_equal(pst__pgw_next(c, &ev), PST_PGW_EV_READY);
    assert_true(pst__pgw_ready(c));
    /* two statements before one Sync: one READY; ready only after it */
    const char *one[] = {"1"};
    assert_true(pst__pgw_query_params(c, "SELECT $1::int", 1, one, NULL, false));
    assert_true(pst__pgw_query_params(c, "SELECT 2", 0, NULL, NULL, false));
    assert_false(pst__pgw_ready(c));
    assert_true(pst__pgw_sync(c));
    w.n = 0;
    const char *names[] = {"int4"};
    const uint32_t oids[] = {23};
    for (int i = 0; i < 2; i++) {
        w_msg(&w, '1', NULL, 0);
        w_msg(&w, '2', NULL, 0);
        w_rowdesc(&w, 1, names, oids);
        w_datarow(&w, 1, i ? (const char *[]){"2"} : one);
        w_complete(&w, "SELECT 1");
    }
    w_ready(&w, 'I');
    assert_true(pst__pgw_feed(c, w.b, w.n));
    int rows = 0;
    pst__pgw_ev_kind k;
    while ((k = pst__pgw_next(c, &ev)) != PST_PGW_EV_READY) {
        assert_int_not_equal(k, PST_PGW_EV_NONE);
        assert_int_not_equal(k, PST_PGW_EV_FAILED);
        rows += k == PST_PGW_EV_ROW;
    }
    assert_int_equal(rows, 2);
    assert_true(pst__pgw_ready(c));
    /* a FATAL error mid-query ends the session */
    assert_true(pst__pgw_query(c, "SELECT pg_sleep(100)"));
    w.n = 0;
    w_fields(&w, 'E', "SFATAL", "VFATAL", "C57P01",
             "Mterminating connection due to administrator command", NULL);
    assert_true(pst__pgw_feed(c, w.b, w.n));
    expect_failed(c, PST_PGW_E_SERVER);
    assert_string_equal(pst__pgw_failure(c)->sqlstate, "57P01");
    pst__pgw_free(c);
}

/* One malformed server message after startup (or during authentication) fails the
 * connection with the expected kind. */
static void hostile_case(bool authenticated, const wire *w, pst__pgw_errkind want) {
    pst__pgw *c;
    if (authenticated) {
        c = ready_client();
        assert_true(pst__pgw_query(c, "SELECT 1"));
    } else {
        pst__pgw_config cfg = base_cfg();
        c = client(&cfg);
    }
    bool fed = pst__pgw_feed(c, w->b, w->n);
    if (fed) {
        pst__pgw_event ev;
        while (pst__pgw_next(c, &ev) != PST_PGW_EV_FAILED)
            assert_int_not_equal(ev.kind, PST_PGW_EV_NONE);
    }
    const pst__pgw_error *e = pst__pgw_failure(c);
    if (e->kind != want)
        fprintf(stderr, "got %s (%s)\n", pst__pgw_errkind_name(e->kind), e->message);
    assert_int_equal(e->kind, want);
    pst__pgw_free(c);
}

static void hostile_messages(void **st) {
    (void)st;
    wire w = {.n = 0};
    /* length below 4 */
    w_bytes(&w, "Z\0\0\0\x03", 5);
    hostile_case(true, &w, PST_PGW_E_PROTOCOL);
    /* a 2 GiB message: refused from its header, nothing allocated for it */
    w.n = 0;
    w_bytes(&w, "D\x7f\xff\xff\xff", 5);
    hostile_case(true, &w, PST_PGW_E_TOO_LARGE);
    /* DataRow before any RowDescription */
    w.n = 0;
    const char *v[] = {"1"};
    w_datarow(&w, 1, v);
    hostile_case(true, &w, PST_PGW_E_PROTOCOL);
    /* DataRow with another column count */
    w.n = 0;
    const char *names[] = {"a"};
    const uint32_t oids[] = {25};
    w_rowdesc(&w, 1, names, oids);
    const char *v2[] = {"1", "2"};
    w_datarow(&w, 2, v2);
    hostile_case(true, &w, PST_PGW_E_PROTOCOL);
    /* DataRow whose value length runs past the message */
    w.n = 0;
    w_rowdesc(&w, 1, names, oids);
    w_msg(&w, 'D',
          "\0\x01\0\0\0\x09"
          "abc",
          9);
    hostile_case(true, &w, PST_PGW_E_PROTOCOL);
    /* DataRow with a negative length other than -1 */
    w.n = 0;
    w_rowdesc(&w, 1, names, oids);
    w_msg(&w, 'D', "\0\x01\xff\xff\xff\xfe", 6);
    hostile_case(true, &w, PST_PGW_E_PROTOCOL);
    /* RowDescription claiming 65535 columns in a few bytes */
    w.n = 0;
    w_msg(&w, 'T', "\xff\xff\0", 3);
    hostile_case(true, &w, PST_PGW_E_PROTOCOL);
    /* RowDescription with trailing bytes */
    w.n = 0;
    w_msg(&w, 'T', "\0\0junk", 6);
    hostile_case(true, &w, PST_PGW_E_PROTOCOL);
    /* ParameterStatus without terminators */
    w.n = 0;
    w_msg(&w, 'S', "name", 4);
    hostile_case(true, &w, PST_PGW_E_PROTOCOL);
    /* ErrorResponse whose field is unterminated */
    w.n = 0;
    w_msg(&w, 'E', "SERROR", 6);
    hostile_case(true, &w, PST_PGW_E_PROTOCOL);
    /* CommandComplete unterminated */
    w.n = 0;
    w_msg(&w, 'C', "SELECT 1", 8);
    hostile_case(true, &w, PST_PGW_E_PROTOCOL);
    /* ReadyForQuery with a bad status, or too long */
    w.n = 0;
    w_msg(&w, 'Z', "Q", 1);
    hostile_case(true, &w, PST_PGW_E_PROTOCOL);
    w.n = 0;
    w_msg(&w, 'Z', "II", 2);
    hostile_case(true, &w, PST_PGW_E_PROTOCOL);
    /* an unknown message type, COPY */
    w.n = 0;
    w_msg(&w, '!', NULL, 0);
    hostile_case(true, &w, PST_PGW_E_PROTOCOL);
    w.n = 0;
    w_msg(&w, 'G', "\0\0\0", 3);
    hostile_case(true, &w, PST_PGW_E_PROTOCOL);
    /* during authentication: a row, a short auth request, a bad BackendKeyData */
    w.n = 0;
    w_datarow(&w, 1, v);
    hostile_case(false, &w, PST_PGW_E_PROTOCOL);
    w.n = 0;
    w_msg(&w, 'R', "\0\0", 2);
    hostile_case(false, &w, PST_PGW_E_PROTOCOL);
    w.n = 0;
    w_auth(&w, 0, NULL, 0);
    w_msg(&w, 'K', "\0\0\0\x01", 4);
    hostile_case(false, &w, PST_PGW_E_PROTOCOL);
    /* a second ReadyForQuery nobody asked for */
    w.n = 0;
    w_ready(&w, 'I');
    w_ready(&w, 'I');
    hostile_case(true, &w, PST_PGW_E_PROTOCOL);
}

/* A small max_message: a message just over it is refused, one at it is taken; bytes fed
 * without draining are bounded. */
static void bounds_are_configurable(void **st) {
    (void)st;
    pst__pgw_config cfg = base_cfg();
    cfg.max_message = 100;
    pst__pgw *c = client(&cfg);
    wire w = {.n = 0};
    w_auth(&w, 0, NULL, 0);
    char big[101];
    memset(big, 'a', sizeof big);
    big[99] = 0;
    big[49] = 0;
    w_msg(&w, 'S', big, 100); /* exactly 100 */
    w_ready(&w, 'I');
    pst__pgw_event ev;
    assert_int_equal(feed_next(c, &w, &ev), PST_PGW_EV_PARAM);
    assert_int_equal(strlen(ev.value), 49);
    assert_int_equal(pst__pgw_next(c, &ev), PST_PGW_EV_READY);
    w.n = 0;
    w_msg(&w, 'N', big, 101);
    assert_int_equal(feed_next(c, &w, &ev), PST_PGW_EV_FAILED);
    assert_int_equal(ev.error->kind, PST_PGW_E_TOO_LARGE);
    pst__pgw_free(c);
    /* feeding past max_message + 64 KiB without draining is refused */
    c = client(&cfg);
    uint8_t *lots = calloc(1, 70000);
    assert_non_null(lots);
    assert_false(pst__pgw_feed(c, lots, 70000));
    assert_int_equal(pst__pgw_failure(c)->kind, PST_PGW_E_TOO_LARGE);
    free(lots);
    pst__pgw_free(c);
}

static uint64_t rng_next(uint64_t *s) {
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    return *s * 0x2545F4914F6CDD1DULL;
}

/* A valid transcript, byte by byte, gives the same events; then random corruptions of
 * it, fed in random pieces, end in events or a typed failure, never a crash (run it
 * under ASan: cmake -DPERI_SANITIZE=ON). */
static void split_and_corrupted_transcripts(void **st) {
    (void)st;
    wire t = {.n = 0};
    w_auth(&t, 0, NULL, 0);
    w_param(&t, "client_encoding", "UTF8");
    w_msg(&t, 'K', "\0\0\0\x01\0\0\0\x02", 8);
    w_ready(&t, 'I');
    const char *names[] = {"id", "body"};
    const uint32_t oids[] = {25, 114};
    w_rowdesc(&t, 2, names, oids);
    for (int i = 0; i < 5; i++) {
        const char *vals[] = {"row", i % 2 ? NULL : "{\"a\":1}"};
        w_datarow(&t, 2, vals);
    }
    w_complete(&t, "SELECT 5");
    w_fields(&t, 'E', "SERROR", "C22012", "Mdivision by zero", NULL);
    w_ready(&t, 'E');
    int want_rows = 5;
    /* byte by byte */
    pst__pgw_config cfg = base_cfg();
    pst__pgw *c = client(&cfg);
    pst__pgw_event ev;
    int rows = 0, readies = 0;
    for (size_t i = 0; i < t.n; i++) {
        assert_true(pst__pgw_feed(c, t.b + i, 1));
        pst__pgw_ev_kind k;
        while ((k = pst__pgw_next(c, &ev)) != PST_PGW_EV_NONE) {
            assert_int_not_equal(k, PST_PGW_EV_FAILED);
            rows += k == PST_PGW_EV_ROW;
            if (k == PST_PGW_EV_READY && ++readies == 1) assert_true(pst__pgw_query(c, "q"));
        }
    }
    assert_int_equal(rows, want_rows);
    assert_int_equal(readies, 2);
    pst__pgw_free(c);
    /* corrupted */
    uint64_t s = (uint64_t)time(NULL) | 1;
    printf("# seed %llu\n", (unsigned long long)s);
    for (int round = 0; round < 3000; round++) {
        wire m = t;
        int flips = 1 + (int)(rng_next(&s) % 4);
        for (int f = 0; f < flips; f++)
            m.b[rng_next(&s) % m.n] = (uint8_t)rng_next(&s);
        if (round % 3 == 0) m.n = rng_next(&s) % m.n; /* truncated */
        cfg.password = round % 2 ? "pw" : NULL;
        cfg.allow_no_auth = round % 4 == 1;
        c = client(&cfg);
        for (size_t off = 0; off < m.n;) {
            size_t piece = 1 + rng_next(&s) % 40;
            if (piece > m.n - off) piece = m.n - off;
            if (!pst__pgw_feed(c, m.b + off, piece)) break;
            off += piece;
            pst__pgw_ev_kind k;
            while ((k = pst__pgw_next(c, &ev)) != PST_PGW_EV_NONE && k != PST_PGW_EV_FAILED) {
                if (k == PST_PGW_EV_ROW)
                    for (int i = 0; i < ev.ncol; i++)
                        if (ev.col[i]) assert_int_equal(ev.col[i][ev.len[i]], 0);
                if (k == PST_PGW_EV_READY) (void)pst__pgw_query(c, "q");
            }
            if (k == PST_PGW_EV_FAILED) break;
        }
        take_output(c, NULL);
        pst__pgw_free(c);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(startup_message_bytes),
        cmocka_unit_test(scram_rfc7677_vector),
        cmocka_unit_test(scram_full_exchange),
        cmocka_unit_test(scram_bad_server_signature),
        cmocka_unit_test(refused_authentications),
        cmocka_unit_test(skipped_scram_allowed_when_asked),
        cmocka_unit_test(auth_error_is_typed),
        cmocka_unit_test(cleartext_over_tls_when_allowed),
        cmocka_unit_test(tls_answers),
        cmocka_unit_test(direct_tls),
        cmocka_unit_test(simple_query_rows),
        cmocka_unit_test(extended_query_bytes_and_errors),
        cmocka_unit_test(hostile_messages),
        cmocka_unit_test(bounds_are_configurable),
        cmocka_unit_test(split_and_corrupted_transcripts),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
