/*
 * test_wasmhost.c — the engine-side module host (src/wasmhost/): hostile modules in the
 * text format (pointers outside the memory, wrapping lengths, a peri_alloc that lies, a
 * trap, missing exports, wrong import types, re-entrancy), and the test guest
 * port_guest.wasm against real local servers: a stream with a request and its answer,
 * resolution, timers, client input echoed, a refused port and a hanging TLS server
 * (typed errors), and a settled close both ways (the module's peri_close, the host's
 * close of every port).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "peri/base.h"
#include "peri/wasmhost.h"

typedef struct out {
    pb_buf sent;
    pb_buf log;
    pwh_instance *w;
    pwh_status nested; /* what a nested export call from a callback got */
    int nested_run;
    bool try_nested;
} out;

static void on_send(void *ud, const uint8_t *p, size_t n) {
    out *o = ud;
    assert_true(pb_buf_put(&o->sent, p, n));
    if (o->try_nested && o->w) {
        o->nested = pwh_input(o->w, "x", 1);
        o->nested_run = pwh_run_once(o->w, 0);
    }
}

static void on_log(void *ud, int level, const char *p, size_t n) {
    out *o = ud;
    (void)level;
    pb_buf_put(&o->log, p, n);
}

static pw_module *from_wat(const char *wat) {
    uint8_t *bin;
    size_t len;
    pw_error e;
    assert_int_equal(pw_wat_to_wasm(wat, strlen(wat), &bin, &len, &e), PW_OK);
    pw_module *m = pw_module_new(bin, len, NULL, &e);
    free(bin);
    if (!m) fail_msg("module: %s", e.message);
    return m;
}

/* ---- hostile modules --------------------------------------------------------------- */

#define EXPORTS_REST                                                                               \
    "(func (export \"peri_input\") (param i32 i32) (result i32) (unreachable))"                    \
    "(func (export \"peri_port_event\") (param i32 i32 i32 i32 i32))"                              \
    "(func (export \"peri_close\") (result i32) (i32.const 0))"

static const char *HOSTILE =
    "(module"
    " (import \"peri_port\" \"open\" (func $open (param i32 i32 i32 i32 i32 i32 i32) (result i32)))"
    " (import \"peri_port\" \"read\" (func $read (param i32 i32 i32 i32) (result i32)))"
    " (import \"peri_port\" \"timer_set\" (func $ts (param i64 i32) (result i32)))"
    " (import \"peri_port\" \"starttls\" (func $stls (param i32 i32 i32) (result i32)))"
    " (import \"peri_host\" \"send\" (func $send (param i32 i32) (result i32)))"
    " (import \"peri_host\" \"credential\" (func $cred (param i32 i32 i32 i32 i32) (result i32)))"
    " (import \"wasi_snapshot_preview1\" \"fd_write\" (func $fw (param i32 i32 i32 i32) (result "
    "i32)))"
    " (import \"wasi_snapshot_preview1\" \"path_open\" (func $po (param i32 i32 i32 i32 i32 i64 "
    "i64 i32 i32) (result i32)))"
    " (memory (export \"memory\") 1)"
    " (data (i32.const 0) \"127.0.0.1\")"
    " (data (i32.const 100) \"store\")"
    " (data (i32.const 300) \"local\\00host\")"
    " (func (export \"peri_alloc\") (param i32) (result i32) (i32.const 1024))"
    " (func $want (param i32 i32 i32) (if (i32.ne (local.get 0) (local.get 1)) (then"
    "   (i32.store (i32.const 512) (local.get 2)) (unreachable))))"
    " (func (export \"peri_start\") (param i32 i32) (result i32)"
    "  (call $want (call $open (i32.const 0xFFFFFF00) (i32.const 200) (i32.const 80) (i32.const 0)"
    "     (i32.const 0) (i32.const 0) (i32.const 64)) (i32.const -2) (i32.const 1))"
    "  (call $want (call $open (i32.const 0) (i32.const 9) (i32.const 80) (i32.const 0)"
    "     (i32.const 0) (i32.const 0) (i32.const 65534)) (i32.const -2) (i32.const 2))"
    "  (call $want (call $send (i32.const 16) (i32.const -1)) (i32.const -2) (i32.const 3))"
    "  (call $want (call $read (i32.const 1) (i32.const 65000) (i32.const 1000) (i32.const 64))"
    "     (i32.const -2) (i32.const 4))"
    "  (call $want (call $ts (i64.const 1) (i32.const 65533)) (i32.const -2) (i32.const 5))"
    "  (call $want (call $ts (i64.const -1) (i32.const 64)) (i32.const -2) (i32.const 6))"
    "  (call $want (call $fw (i32.const 1) (i32.const 65530) (i32.const 2) (i32.const 64))"
    "     (i32.const 21) (i32.const 7))"
    "  (call $want (call $open (i32.const 0) (i32.const 9) (i32.const 80) (i32.const 0)"
    "     (i32.const 0) (i32.const 0) (i32.const 64)) (i32.const -3) (i32.const 8))"
    "  (call $want (call $open (i32.const 0) (i32.const 9) (i32.const 80) (i32.const 2)"
    "     (i32.const 0) (i32.const 0) (i32.const 64)) (i32.const -2) (i32.const 9))"
    "  (call $want (call $po (i32.const 3) (i32.const 0) (i32.const 0) (i32.const 9) (i32.const 0)"
    "     (i64.const 0) (i64.const 0) (i32.const 0) (i32.const 64)) (i32.const 52) (i32.const 10))"
    "  (call $want (call $cred (i32.const 100) (i32.const 5) (i32.const 200) (i32.const 2)"
    "     (i32.const 64)) (i32.const -12) (i32.const 11))"
    "  (call $want (i32.load (i32.const 64)) (i32.const 6) (i32.const 12))"
    "  (call $want (call $cred (i32.const 100) (i32.const 5) (i32.const 200) (i32.const 64)"
    "     (i32.const 64)) (i32.const 0) (i32.const 13))"
    "  (call $want (call $cred (i32.const 100) (i32.const 4) (i32.const 200) (i32.const 64)"
    "     (i32.const 64)) (i32.const -4) (i32.const 14))"
    "  (call $want (call $stls (i32.const 1) (i32.const 0xFFFFFF00) (i32.const 200)) (i32.const -2)"
    "     (i32.const 15))"
    "  (call $want (call $stls (i32.const 1) (i32.const 65530) (i32.const 9)) (i32.const -2)"
    "     (i32.const 16))"
    "  (call $want (call $stls (i32.const 1) (i32.const 300) (i32.const 10)) (i32.const -2)"
    "     (i32.const 17))"
    "  (call $want (call $stls (i32.const 1) (i32.const -1) (i32.const 0)) (i32.const -2)"
    "     (i32.const 18))"
    "  (call $want (call $stls (i32.const 77) (i32.const 0) (i32.const 9)) (i32.const -2)"
    "     (i32.const 19))"
    "  (drop (call $send (i32.const 200) (i32.const 6)))"
    "  (i32.const 0))" EXPORTS_REST ")";

static void test_hostile(void **st) {
    (void)st;
    pw_module *m = from_wat(HOSTILE);
    out o = {0};
    pwh_credential cred = {"store", "s3cret"};
    pwh_opts opts = {.module = m,
                     .on_send = on_send,
                     .on_log = on_log,
                     .ud = &o,
                     .credentials = &cred,
                     .ncredentials = 1};
    char err[320];
    pwh_instance *w = pwh_new(&opts, err, sizeof err);
    assert_non_null(w);
    o.w = w;
    o.try_nested = true;
    pwh_status s = pwh_start(w, "{}", 2);
    if (s != PWH_OK) fail_msg("start: %s", pwh_error(w));
    /* every bad pointer was answered with invalid; the credential went through */
    assert_int_equal(o.sent.len, 6);
    assert_memory_equal(o.sent.p, "s3cret", 6);
    assert_int_equal(o.nested, PWH_E_BUSY); /* an export from inside an import: refused */
    assert_int_equal(o.nested_run, -1);
    o.try_nested = false;
    assert_int_equal(pwh_start(w, "{}", 2), PWH_E_STATE);
    /* a trap ends the instance; nothing runs in it again; it is settled */
    assert_int_equal(pwh_input(w, "hi", 2), PWH_E_TRAP);
    assert_non_null(strstr(pwh_error(w), "unreachable"));
    assert_int_equal(pwh_input(w, "hi", 2), PWH_E_TRAP);
    pwh_settlement se;
    pwh_settlement_get(w, &se);
    assert_true(se.ended);
    assert_true(se.settled);
    pwh_free(w);
    pb_buf_free(&o.sent);
    pb_buf_free(&o.log);
    pw_module_free(m);
}

static void test_lying_alloc(void **st) {
    (void)st;
    pw_module *m = from_wat("(module (memory (export \"memory\") 1)"
                            " (func (export \"peri_alloc\") (param i32) (result i32) "
                            "(i32.const 65530))"
                            " (func (export \"peri_start\") (param i32 i32) (result i32) "
                            "(i32.const 0))" EXPORTS_REST ")");
    pwh_opts opts = {.module = m};
    char err[320];
    pwh_instance *w = pwh_new(&opts, err, sizeof err);
    assert_non_null(w);
    char json[100];
    memset(json, ' ', sizeof json);
    assert_int_equal(pwh_start(w, json, sizeof json), PWH_E_TRAP);
    assert_non_null(strstr(pwh_error(w), "outside the module's memory"));
    pwh_free(w);
    pw_module_free(m);
}

static void test_link_errors(void **st) {
    (void)st;
    char err[320];
    /* no peri_close */
    pw_module *m =
        from_wat("(module (memory (export \"memory\") 1)"
                 " (func (export \"peri_alloc\") (param i32) (result i32) (i32.const 0))"
                 " (func (export \"peri_start\") (param i32 i32) (result i32) (i32.const 0))"
                 " (func (export \"peri_input\") (param i32 i32) (result i32) (i32.const 0))"
                 " (func (export \"peri_port_event\") (param i32 i32 i32 i32 i32)))");
    pwh_opts opts = {.module = m};
    assert_null(pwh_new(&opts, err, sizeof err));
    assert_non_null(strstr(err, "peri_close"));
    pw_module_free(m);
    /* an import of the wrong type */
    m = from_wat("(module (import \"peri_port\" \"close\" (func (param i64) (result i32))))");
    opts.module = m;
    assert_null(pwh_new(&opts, err, sizeof err));
    assert_non_null(strstr(err, "instantiate"));
    pw_module_free(m);
    /* an import the ABI does not have */
    m = from_wat("(module (import \"env\" \"socket\" (func (result i32))))");
    opts.module = m;
    assert_null(pwh_new(&opts, err, sizeof err));
    pw_module_free(m);
    /* a bad allow-list entry */
    const char *bad[] = {"example.com"};
    opts.allow = bad;
    opts.nallow = 1;
    assert_null(pwh_new(&opts, err, sizeof err));
    assert_non_null(strstr(err, "host:port"));
}

/* ---- the test guest ----------------------------------------------------------------- */

typedef struct srv {
    int lfd;
    uint16_t port;
    bool echo;
    pthread_t th;
    int held[4];
    int nheld;
} srv;

static void *srv_main(void *a) {
    srv *s = a;
    for (;;) {
        int fd = accept(s->lfd, NULL, NULL);
        if (fd < 0) return NULL;
        if (!s->echo) { /* hang: accept and never answer */
            if (s->nheld < 4)
                s->held[s->nheld++] = fd;
            else
                close(fd);
            continue;
        }
        char buf[4096];
        ssize_t n;
        while ((n = read(fd, buf, sizeof buf)) > 0)
            pb_write_all(fd, buf, (size_t)n);
        close(fd);
    }
}

static void srv_start(srv *s, bool echo) {
    memset(s, 0, sizeof *s);
    s->echo = echo;
    s->lfd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    assert_int_equal(bind(s->lfd, (struct sockaddr *)&a, sizeof a), 0);
    assert_int_equal(listen(s->lfd, 8), 0);
    socklen_t len = sizeof a;
    getsockname(s->lfd, (struct sockaddr *)&a, &len);
    s->port = ntohs(a.sin_port);
    assert_int_equal(pthread_create(&s->th, NULL, srv_main, s), 0);
}

static void srv_stop(srv *s) {
    shutdown(s->lfd, SHUT_RDWR);
    pthread_join(s->th, NULL);
    close(s->lfd);
    for (int i = 0; i < s->nheld; i++)
        close(s->held[i]);
}

static pw_module *guest_module(void) {
    FILE *f = fopen(PORT_GUEST, "rb");
    if (!f) return NULL;
    pb_buf b = {0};
    char chunk[65536];
    size_t n;
    while ((n = fread(chunk, 1, sizeof chunk, f)) > 0)
        assert_true(pb_buf_put(&b, chunk, n));
    fclose(f);
    pw_error e;
    pw_module *m = pw_module_new((const uint8_t *)b.p, b.len, NULL, &e);
    pb_buf_free(&b);
    if (!m) fail_msg("port_guest.wasm: %s", e.message);
    return m;
}

typedef struct guest {
    pw_module *m;
    pwh_instance *w;
    out o;
    srv echo, hang;
    uint16_t refused;
    char allow[6][64];
    const char *allowp[6];
} guest;

static void guest_start(guest *g) {
    memset(g, 0, sizeof *g);
    g->m = guest_module();
    assert_non_null(g->m);
    srv_start(&g->echo, true);
    srv_start(&g->hang, false);
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    bind(fd, (struct sockaddr *)&a, sizeof a);
    socklen_t len = sizeof a;
    getsockname(fd, (struct sockaddr *)&a, &len);
    g->refused = ntohs(a.sin_port);
    close(fd); /* bound, never listened: refused */
    snprintf(g->allow[0], 64, "127.0.0.1:%u", g->echo.port);
    snprintf(g->allow[1], 64, "127.0.0.1:%u", g->hang.port);
    snprintf(g->allow[2], 64, "127.0.0.1:%u", g->refused);
    snprintf(g->allow[3], 64, "localhost:%u", g->echo.port);
    snprintf(g->allow[4], 64, "nothing.invalid:1");
    for (int i = 0; i < 5; i++)
        g->allowp[i] = g->allow[i];
    pwh_opts opts = {.module = g->m,
                     .allow = g->allowp,
                     .nallow = 5,
                     .connect_timeout_ms = 400,
                     .on_send = on_send,
                     .on_log = on_log,
                     .ud = &g->o};
    char err[320];
    g->w = pwh_new(&opts, err, sizeof err);
    if (!g->w) fail_msg("pwh_new: %s", err);
    char json[200];
    int n = snprintf(json, sizeof json, "{\"echo\":%u,\"refused\":%u,\"hang\":%u,\"silent\":%u}",
                     g->echo.port, g->refused, g->hang.port, g->hang.port);
    if (pwh_start(g->w, json, (size_t)n) != PWH_OK) fail_msg("start: %s", pwh_error(g->w));
}

static void guest_end(guest *g) {
    pwh_free(g->w);
    pw_module_free(g->m);
    srv_stop(&g->echo);
    srv_stop(&g->hang);
    pb_buf_free(&g->o.sent);
    pb_buf_free(&g->o.log);
}

static bool has(guest *g, const char *line) {
    return g->o.sent.p && strstr(g->o.sent.p, line) != NULL;
}

static void run_for(guest *g, const char *line, int ms) {
    int64_t end = pb_mono_ms() + ms;
    while (!has(g, line) && pb_mono_ms() < end)
        assert_true(pwh_run_once(g->w, 50) >= 0);
    if (!has(g, line)) fail_msg("no line '%s' in:\n%s", line, g->o.sent.p ? g->o.sent.p : "");
}

static const char *pos(guest *g, const char *line) {
    const char *p = strstr(g->o.sent.p, line);
    assert_non_null(p);
    return p;
}

static void test_guest(void **st) {
    (void)st;
    guest g;
    guest_start(&g);
    run_for(&g, "hang closed timeout", 5000);
    run_for(&g, "echo read [hello through the port]", 5000);
    run_for(&g, "t-late timer ok", 5000);
    run_for(&g, "invalid resolved not_found", 5000);
    run_for(&g, "resolve resolved ok", 5000);
    const char *lines[] = {"clock ok",
                           "echo open ok",
                           "echo write ok",
                           "echo shutdown ok",
                           "echo opened ok",
                           "echo closed ok",
                           "t-cancel cancel ok",
                           "t-cancel timer cancelled",
                           "t-early timer ok",
                           "refused open ok",
                           "refused opened refused",
                           "refused closed refused",
                           "hang opened timeout",
                           "silent starttls invalid",
                           "silent opened ok",
                           "denied open denied"};
    for (size_t i = 0; i < sizeof lines / sizeof *lines; i++)
        run_for(&g, lines[i], 2000);
    assert_true(has(&g, "resolve addresses") &&
                (has(&g, "first 127.0.0.1") || has(&g, "first ::1")));
    assert_true(pos(&g, "t-cancel timer cancelled") < pos(&g, "t-early timer ok"));
    assert_true(pos(&g, "t-early timer ok") < pos(&g, "t-late timer ok"));
    assert_non_null(strstr(g.o.log.p, "port_guest starting"));
    /* client input goes back to the client */
    assert_int_equal(pwh_input(g.w, "hi there", 8), PWH_OK);
    assert_true(has(&g, "echo:hi there"));
    pwh_settlement se;
    pwh_settlement_get(g.w, &se);
    assert_false(se.settled);
    assert_int_equal(se.streams_open, 1); /* the silent one */
    /* the module's close: it closes the silent stream and reports once it settled */
    assert_int_equal(pwh_close(g.w), PWH_OK);
    assert_null(pwh_settled_report(g.w));
    run_for(&g, "silent closed ok", 3000);
    pwh_settlement_get(g.w, &se);
    assert_true(se.settled);
    assert_true(se.module_reported);
    assert_non_null(strstr(pwh_settled_report(g.w), "\"open\":0"));
    assert_int_equal(se.streams_open + se.resolutions_pending + se.timers_pending, 0);
    assert_int_equal(se.streams_settled, 4); /* echo, refused, hang, silent */
    assert_int_equal(se.resolutions_settled, 2);
    assert_int_equal(se.timers_settled, 3);
    assert_int_equal(se.closed_by_host, 0);
    assert_int_equal(pwh_input(g.w, "x", 1), PWH_E_STATE);
    guest_end(&g);
}

static void test_guest_host_close(void **st) {
    (void)st;
    guest g;
    guest_start(&g);
    /* the host closes every port at once: each settles with closed, the module hears */
    pwh_close_ports(g.w);
    run_for(&g, "silent closed closed", 3000);
    run_for(&g, "hang closed closed", 3000);
    run_for(&g, "t-late timer closed", 3000);
    pwh_settlement se;
    pwh_settlement_get(g.w, &se);
    assert_true(se.settled);
    assert_true(se.closed_by_host >= 5);
    assert_false(has(&g, "hang opened")); /* closed by the host: only the settling event */
    assert_int_equal(pwh_close(g.w), PWH_OK);
    pwh_settlement_get(g.w, &se);
    assert_true(se.module_reported); /* nothing was left: the report came at once */
    guest_end(&g);
}

int main(void) {
    const struct CMUnitTest hostile[] = {
        cmocka_unit_test(test_hostile),
        cmocka_unit_test(test_lying_alloc),
        cmocka_unit_test(test_link_errors),
    };
    int r = cmocka_run_group_tests_name("wasmhost.hostile", hostile, NULL, NULL);
    FILE *f = fopen(PORT_GUEST, "rb");
    if (!f) {
        const char *ci = getenv("CI");
        printf("%s is missing (clang, wasm-ld or wasi-libc absent at build time)\n", PORT_GUEST);
        if (ci && strcmp(ci, "true") == 0) return 1;
        return r ? r : 77;
    }
    fclose(f);
    const struct CMUnitTest guest_tests[] = {
        cmocka_unit_test(test_guest),
        cmocka_unit_test(test_guest_host_close),
    };
    return r + cmocka_run_group_tests_name("wasmhost.guest", guest_tests, NULL, NULL);
}
