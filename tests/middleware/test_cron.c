/*
 * test_cron.c — unit tests of the cron middleware (src/agent/middleware/cron.c): the
 * schedule parser (5 fields, lists, ranges, steps, day rules, intervals, refusals), the
 * next due time, the timer (a due run while the last is still going is skipped and
 * counted; no fire after stop), and the tools' answers, including what cron_list says
 * about schedules lost in a restart.
 */
#include "peri/agent.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int64_t utc(int y, int mo, int d, int h, int mi) {
    struct tm tm = {
        .tm_year = y - 1900, .tm_mon = mo - 1, .tm_mday = d, .tm_hour = h, .tm_min = mi};
    return (int64_t)timegm(&tm) * 1000;
}

static int64_t next_of(const char *spec, int64_t after) {
    pag_cron_spec sp;
    char err[200];
    assert_int_equal(pag_cron_parse(spec, &sp, err, sizeof err), 0);
    return pag_cron_next(&sp, after);
}

static void test_parse(void **state) {
    (void)state;
    pag_cron_spec sp;
    char err[200];
    static const char *const good[] = {"* * * * *",        "*/15 * * * *", "0 9 * * 1-5",
                                       "5,35 */2 1 1,6 *", "0 0 * * 7",    "30 4 1-10/3 * *",
                                       "every 30s",        "@every 5m",    "every 2h"};
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++)
        assert_int_equal(pag_cron_parse(good[i], &sp, err, sizeof err), 0);
    static const char *const bad[] = {
        "",           "* * * *",   "* * * * * *", "60 * * * *",  "* 24 * * *", "* * 0 * *",
        "* * * 13 *", "* * * * 8", "*/0 * * * *", "5-1 * * * *", "a * * * *",  "1, * * * *",
        "every 0s",   "every 10",  "every 5d",    "every -1m",   NULL};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        err[0] = '\0';
        assert_int_equal(pag_cron_parse(bad[i], &sp, err, sizeof err), -1);
        assert_true(err[0] != '\0');
    }
    assert_int_equal(pag_cron_parse("every 30s", &sp, err, sizeof err), 0);
    assert_int_equal(sp.every_ms, 30000);
}

static void test_next(void **state) {
    (void)state;
    int64_t t = utc(2026, 12, 4, 8, 7) + 30000; /* Friday 08:07:30 UTC */
    assert_int_equal(next_of("* * * * *", t), utc(2026, 12, 4, 8, 8));
    assert_int_equal(next_of("*/15 * * * *", t), utc(2026, 12, 4, 8, 15));
    assert_int_equal(next_of("0 9 * * *", t), utc(2026, 12, 4, 9, 0));
    assert_int_equal(next_of("0 8 * * *", t), utc(2026, 12, 5, 8, 0));
    assert_int_equal(next_of("0 9 * * 1-5", utc(2026, 12, 5, 0, 0)), utc(2026, 12, 7, 9, 0));
    assert_int_equal(next_of("0 0 * * 0", t), utc(2026, 12, 6, 0, 0)); /* Sunday */
    assert_int_equal(next_of("0 0 * * 7", t), utc(2026, 12, 6, 0, 0)); /* 7 is Sunday too */
    assert_int_equal(next_of("0 0 1 1 *", t), utc(2027, 1, 1, 0, 0));
    /* both day fields restricted: either matches (cron's rule) */
    assert_int_equal(next_of("0 0 25 * 0", t), utc(2026, 12, 6, 0, 0));
    assert_int_equal(next_of("0 0 29 2 *", t), utc(2028, 2, 29, 0, 0));
    assert_int_equal(next_of("every 30s", t), t + 30000);
    assert_int_equal(next_of("0 0 31 2 *", t), -1); /* never */
}

typedef struct fires {
    pthread_mutex_t mu;
    int n;
    uint64_t last;
} fires;

static int on_fire(void *ctx, uint64_t id, const char *prompt) {
    fires *f = ctx;
    assert_string_equal(prompt, "PING");
    pthread_mutex_lock(&f->mu);
    f->n++;
    f->last = id;
    pthread_mutex_unlock(&f->mu);
    return 0; /* started; the test decides when the run ends */
}

static int count(fires *f) {
    pthread_mutex_lock(&f->mu);
    int n = f->n;
    pthread_mutex_unlock(&f->mu);
    return n;
}

static char *run(pag_cron *c, const char *tool, const char *args, bool *is_error) {
    pag_tool_output o = {0};
    assert_int_equal(pag_cron_tool_run(c, tool, args, &o), 0);
    if (is_error) *is_error = o.is_error;
    char *t = o.output;
    o.output = NULL;
    pag_tool_output_clear(&o);
    return t;
}

static void test_timer_skips_overlap_and_stops(void **state) {
    (void)state;
    fires f = {.mu = PTHREAD_MUTEX_INITIALIZER};
    pag_cron *c = pag_cron_new(on_fire, &f);
    assert_non_null(c);
    bool err;
    char *out = run(c, "cron_create", "{\"schedule\":\"every 1s\",\"prompt\":\"PING\"}", &err);
    assert_false(err);
    assert_non_null(strstr(out, "Scheduled as id 1"));
    free(out);
    for (int i = 0; i < 50 && count(&f) < 1; i++)
        usleep(100000);
    assert_int_equal(count(&f), 1);
    sleep(3); /* the run is still going: the next due times are skipped */
    assert_int_equal(count(&f), 1);
    out = run(c, "cron_list", "{}", NULL);
    assert_non_null(strstr(out, "runs 1, skipped "));
    assert_null(strstr(out, "skipped 0 "));
    assert_non_null(strstr(out, "running now"));
    free(out);
    pag_cron_done(c, 1); /* the run ended: the next due time fires */
    for (int i = 0; i < 30 && count(&f) < 2; i++)
        usleep(100000);
    assert_int_equal(count(&f), 2);
    pag_cron_done(c, 1);
    pag_cron_stop(c);
    int n = count(&f);
    sleep(2);
    assert_int_equal(count(&f), n); /* nothing after stop */
    char *rec = pag_cron_records(c);
    assert_non_null(strstr(rec, "\"schedule\":\"every 1s\""));
    free(rec);
    pag_cron_free(c);
}

static void test_tools(void **state) {
    (void)state;
    fires f = {.mu = PTHREAD_MUTEX_INITIALIZER};
    pag_cron *c = pag_cron_new(on_fire, &f);
    bool err;
    char *out = run(c, "cron_create", "{\"schedule\":\"61 * * * *\",\"prompt\":\"PING\"}", &err);
    assert_true(err);
    assert_non_null(strstr(out, "minute"));
    free(out);
    out = run(c, "cron_create", "{\"schedule\":\"0 0 31 2 *\",\"prompt\":\"PING\"}", &err);
    assert_true(err);
    free(out);
    out = run(c, "cron_create", "{\"schedule\":\"0 3 * * *\"}", &err);
    assert_true(err);
    free(out);
    out = run(c, "cron_delete", "{\"id\":9}", &err);
    assert_true(err);
    free(out);
    out = run(c, "cron_list", "{}", NULL);
    assert_string_equal(out, "No scheduled prompts in this session.");
    free(out);
    pag_cron_set_lost(c, 2);
    out = run(c, "cron_list", "{}", NULL);
    assert_non_null(strstr(out, "2 schedule(s) created before this session was reloaded were not "
                                "revived"));
    free(out);
    pag_tool_output o = {0};
    assert_int_equal(pag_cron_tool_run(c, "read", "{}", &o), -2);
    size_t n;
    const pag_tool_info *t = pag_cron_tools(&n);
    assert_int_equal(n, 3);
    assert_string_equal(t[0].name, "cron_create");
    pag_cron_free(c);
    assert_int_equal(count(&f), 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse),
        cmocka_unit_test(test_next),
        cmocka_unit_test(test_timer_skips_overlap_and_stops),
        cmocka_unit_test(test_tools),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
