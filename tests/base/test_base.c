/*
 * test_base.c — the base layer: pb_buf growth, printf and ownership; EINTR-safe
 * descriptor loops; deadlines and ISO time; the log hook.
 */
#include "peri/base.h"

#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

static void buf_grows_and_stays_terminated(void **st) {
    (void)st;
    pb_buf b = {0};
    for (int i = 0; i < 10000; i++)
        assert_true(pb_buf_putc(&b, (char)('a' + i % 26)));
    assert_int_equal(b.len, 10000);
    assert_int_equal(b.p[b.len], 0);
    assert_true(b.cap > b.len);
    assert_true(pb_buf_puts(&b, "xyz"));
    assert_memory_equal(b.p + 10000, "xyz", 4);
    pb_buf_reset(&b);
    assert_int_equal(b.len, 0);
    assert_string_equal(b.p, "");
    pb_buf_free(&b);
    assert_null(b.p);
}

static void buf_refuses_overflow(void **st) {
    (void)st;
    pb_buf b = {0};
    assert_true(pb_buf_puts(&b, "keep"));
    assert_false(pb_buf_reserve(&b, SIZE_MAX - 2));
    assert_false(pb_buf_reserve(&b, SIZE_MAX / 2));
    assert_string_equal(b.p, "keep"); /* unchanged after a refused growth */
    assert_int_equal(b.len, 4);
    pb_buf_free(&b);
}

static void buf_printf_small_and_large(void **st) {
    (void)st;
    pb_buf b = {0};
    assert_true(pb_buf_printf(&b, "%d-%s", 42, "x"));
    assert_string_equal(b.p, "42-x");
    char big[5000];
    memset(big, 'q', sizeof big - 1);
    big[sizeof big - 1] = 0;
    assert_true(pb_buf_printf(&b, "[%s]", big));
    assert_int_equal(b.len, 4 + 2 + 4999);
    assert_int_equal(b.p[b.len - 1], ']');
    assert_int_equal(b.p[b.len], 0);
    size_t len = 0;
    char *owned = pb_buf_take(&b, &len);
    assert_int_equal(len, 4 + 2 + 4999);
    assert_null(b.p);
    assert_int_equal(b.len, 0);
    free(owned);
    char *empty = pb_buf_take(&b, &len); /* a never-grown buffer gives "" */
    assert_non_null(empty);
    assert_string_equal(empty, "");
    assert_int_equal(len, 0);
    free(empty);
}

static void on_alarm(int sig) {
    (void)sig;
}

typedef struct writer {
    int fd;
    size_t n;
} writer;

static void *write_side(void *arg) {
    writer *w = arg;
    char *data = malloc(w->n);
    for (size_t i = 0; i < w->n; i++)
        data[i] = (char)(i * 7);
    int rc = pb_write_all(w->fd, data, w->n);
    free(data);
    close(w->fd);
    return (void *)(intptr_t)rc;
}

static void io_loops_survive_signals_and_short_counts(void **st) {
    (void)st;
    struct sigaction sa = {0};
    sa.sa_handler = on_alarm; /* no SA_RESTART: reads and writes see EINTR */
    sigaction(SIGALRM, &sa, NULL);
    int p[2];
    assert_int_equal(pipe(p), 0);
    writer w = {p[1], 1 << 20}; /* 1 MiB through a 64 KiB pipe: many short writes */
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, write_side, &w), 0);
    char *got = malloc(w.n + 10);
    size_t have = 0;
    for (int round = 0; have < w.n; round++) {
        if (round % 3 == 0) kill(getpid(), SIGALRM);
        ssize_t r = pb_read_full(p[0], got + have, 4096 + (size_t)round % 5000);
        assert_true(r > 0);
        have += (size_t)r;
    }
    assert_int_equal(pb_read_full(p[0], got, 10), 0); /* EOF */
    void *rc;
    pthread_join(th, &rc);
    assert_int_equal((intptr_t)rc, 0);
    for (size_t i = 0; i < w.n; i++)
        if (got[i] != (char)(i * 7)) fail_msg("byte %zu differs", i);
    free(got);
    close(p[0]);
    assert_int_equal(pb_write_all(p[0], "x", 1), -1); /* a closed descriptor: -1 + errno */
    assert_int_equal(errno, EBADF);
}

static void deadlines_are_normalised(void **st) {
    (void)st;
    for (int64_t ms = -5; ms < 3000; ms += 97) {
        struct timespec before, dl = pb_deadline(CLOCK_MONOTONIC, ms);
        clock_gettime(CLOCK_MONOTONIC, &before);
        assert_true(dl.tv_nsec >= 0 && dl.tv_nsec < 1000000000L);
        int64_t diff =
            ((int64_t)dl.tv_sec - before.tv_sec) * 1000 + (dl.tv_nsec - before.tv_nsec) / 1000000;
        assert_true(diff <= (ms < 0 ? 0 : ms) + 1);
        assert_true(diff >= (ms < 0 ? 0 : ms) - 50);
    }
    int64_t a = pb_mono_us();
    pb_sleep_us(20000);
    int64_t b = pb_mono_us();
    assert_true(b - a >= 20000);
    assert_true(pb_wall_ms() > 1700000000000LL);
}

static void iso_time_is_utc_with_milliseconds(void **st) {
    (void)st;
    char out[PB_ISO_TIME_LEN];
    pb_iso_time(0, out);
    assert_string_equal(out, "1970-01-01T00:00:00.000Z");
    pb_iso_time(1796362200123LL, out);
    assert_string_equal(out, "2026-12-04T05:30:00.123Z");
    pb_iso_time(-1, out); /* one millisecond before the epoch */
    assert_string_equal(out, "1969-12-31T23:59:59.999Z");
}

typedef struct seen {
    int calls;
    pb_log_level level;
    char msg[4096];
} seen;

static void record(void *ud, pb_log_level level, const char *msg) {
    seen *s = ud;
    s->calls++;
    s->level = level;
    snprintf(s->msg, sizeof s->msg, "%s", msg);
}

static void log_hook_delivers_and_drops(void **st) {
    (void)st;
    pb_log(NULL, PB_LOG_ERROR, "dropped %d", 1); /* no logger: nothing, no crash */
    pb_logger none = {0};
    pb_log(&none, PB_LOG_ERROR, "dropped %d", 2);
    seen s = {0};
    pb_logger lg = {record, &s};
    pb_log(&lg, PB_LOG_WARN, "server %s: %d frames\n\n", "files", 3);
    assert_int_equal(s.calls, 1);
    assert_int_equal(s.level, PB_LOG_WARN);
    assert_string_equal(s.msg, "server files: 3 frames"); /* trailing newlines removed */
    char big[6000];
    memset(big, 'z', sizeof big - 1);
    big[sizeof big - 1] = 0;
    pb_log(&lg, PB_LOG_INFO, "%s", big); /* long messages are cut, not overflowed */
    assert_int_equal(s.calls, 2);
    assert_true(strlen(s.msg) > 1000 && strlen(s.msg) < sizeof big);
    assert_string_equal(pb_log_level_name(PB_LOG_WARN), "warning");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(buf_grows_and_stays_terminated),
        cmocka_unit_test(buf_refuses_overflow),
        cmocka_unit_test(buf_printf_small_and_large),
        cmocka_unit_test(io_loops_survive_signals_and_short_counts),
        cmocka_unit_test(deadlines_are_normalised),
        cmocka_unit_test(iso_time_is_utc_with_milliseconds),
        cmocka_unit_test(log_hook_delivers_and_drops),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
