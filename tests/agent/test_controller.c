/*
 * test_controller.c — unit tests of the controller over a real in-memory store and
 * no model provider: session lifecycle (new, list, load with replay, resume,
 * delete), prompt failure shape, close idempotency, the closing guard, and
 * session_seq stamping by the runtime.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "peri/controller.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct rec {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int answers;
    pag_turn_result last;
    int events;
    pag_event_kind kinds[32];
    uint64_t seqs[32];
} rec;

static void on_event(void *ctx, const pag_event *ev) {
    rec *r = ctx;
    pthread_mutex_lock(&r->mu);
    if (r->events < 32) {
        r->kinds[r->events] = ev->kind;
        r->seqs[r->events] = ev->session_seq;
    }
    r->events++;
    pthread_mutex_unlock(&r->mu);
}

static void on_done(void *ctx, void *token, const pag_turn_result *res) {
    (void)token;
    rec *r = ctx;
    pthread_mutex_lock(&r->mu);
    r->answers++;
    r->last = *res;
    pthread_cond_broadcast(&r->cv);
    pthread_mutex_unlock(&r->mu);
}

static void wait_answers(rec *r, int n) {
    pthread_mutex_lock(&r->mu);
    while (r->answers < n)
        pthread_cond_wait(&r->cv, &r->mu);
    pthread_mutex_unlock(&r->mu);
}

typedef struct fixture {
    char home[64];
    pag_settings settings;
    rec r;
    pct_controller *c;
} fixture;

static int setup(void **state) {
    fixture *f = calloc(1, sizeof *f);
    snprintf(f->home, sizeof f->home, "/tmp/peri-ctl-test-XXXXXX");
    if (!mkdtemp(f->home)) return -1;
    /* Settings built by hand: no provider, whatever the runner's environment says. */
    memset(&f->settings, 0, sizeof f->settings);
    f->settings.context_budget = 1000;
    f->settings.max_steps = 5;
    f->settings.close_grace_ms = 200;
    pthread_mutex_init(&f->r.mu, NULL);
    pthread_cond_init(&f->r.cv, NULL);
    pct_sink sink = {.ctx = &f->r, .on_event = on_event, .on_prompt_done = on_done};
    pct_config cfg = {.db_path = ":memory:",
                      .machine_id = "11111111-2222-4333-8444-555555555555",
                      .settings = &f->settings};
    pct_error e;
    f->c = pct_new(&cfg, &sink, &e);
    if (!f->c) return -1;
    *state = f;
    return 0;
}

static int teardown(void **state) {
    fixture *f = *state;
    assert_int_equal(pct_free(f->c, 1000), 0);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", f->home);
    if (system(cmd)) return -1;
    free(f);
    return 0;
}

static void test_lifecycle(void **state) {
    fixture *f = *state;
    pct_error e;
    char id[PST_ID_LEN];
    assert_int_equal(pct_session_new(f->c, "relative", id, &e), PCT_BAD_ARG);
    assert_int_equal(pct_session_new(f->c, "/nonexistent/dir/x", id, &e), PCT_BAD_ARG);
    assert_int_equal(pct_session_new(f->c, f->home, id, &e), PCT_OK);
    assert_true(pst_uuid_valid(id));
    assert_int_equal(pct_live_count(f->c), 1);

    /* Empty sessions are not listed. */
    pst_thread_page page;
    assert_int_equal(pct_session_list(f->c, f->home, NULL, &page, &e), PCT_OK);
    assert_int_equal(page.count, 0);
    pst_thread_page_clear(&page);

    /* No provider: the prompt fails with kind llm; the user message is kept. */
    int token = 1;
    assert_int_equal(pct_prompt(f->c, id, "hello", &token, &e), PCT_OK);
    wait_answers(&f->r, 1);
    assert_int_equal(f->r.last.state, PAG_TURN_FAILED);
    assert_string_equal(f->r.last.error_kind, "llm");
    assert_non_null(strstr(f->r.last.message, "no model provider configured"));
    assert_int_equal(pct_session_list(f->c, f->home, NULL, &page, &e), PCT_OK);
    assert_int_equal(page.count, 1);
    assert_string_equal(page.items[0].id, id);
    assert_string_equal(page.items[0].title, "hello");
    pst_thread_page_clear(&page);

    /* Close settles, twice is a no-op, the session is no longer live. */
    assert_int_equal(pct_close(f->c, id, &e), PCT_OK);
    assert_int_equal(pct_close(f->c, id, &e), PCT_OK);
    assert_int_equal(pct_live_count(f->c), 0);
    assert_int_equal(pct_prompt(f->c, id, "x", &token, &e), PCT_NOT_FOUND);

    /* Load replays the stored history through the runtime's stamp. */
    int before = f->r.events;
    assert_int_equal(pct_session_load(f->c, id, true, &e), PCT_OK);
    assert_int_equal(f->r.events, before + 1);
    assert_int_equal(f->r.kinds[before], PAG_EV_USER_TEXT);
    assert_int_equal(f->r.seqs[before], 1); /* a fresh mapping counts from 1 */
    /* Resume of a live session: no replay. */
    assert_int_equal(pct_session_load(f->c, id, false, &e), PCT_OK);
    assert_int_equal(f->r.events, before + 1);

    assert_int_equal(pct_session_delete(f->c, id, &e), PCT_OK);
    assert_int_equal(pct_session_delete(f->c, id, &e), PCT_OK);
    assert_int_equal(pct_session_load(f->c, id, true, &e), PCT_NOT_FOUND);
    assert_int_equal(pct_close(f->c, "not-a-session", &e), PCT_OK);
}

static void test_seq_and_announce(void **state) {
    fixture *f = *state;
    pct_error e;
    char a[PST_ID_LEN], b[PST_ID_LEN];
    assert_int_equal(pct_session_new(f->c, f->home, a, &e), PCT_OK);
    assert_int_equal(pct_session_new(f->c, f->home, b, &e), PCT_OK);
    int n0 = f->r.events;
    pct_session_announce(f->c, a);
    pct_session_announce(f->c, a);
    pct_session_announce(f->c, b);
    assert_int_equal(f->r.events, n0 + 3);
    assert_int_equal(f->r.kinds[n0], PAG_EV_COMMANDS);
    assert_int_equal(f->r.seqs[n0], 1);
    assert_int_equal(f->r.seqs[n0 + 1], 2);
    assert_int_equal(f->r.seqs[n0 + 2], 1); /* per-session counters */
    pct_cancel(f->c, a);                    /* idle: no answer, no crash */
    pct_cancel(f->c, "unknown");
    assert_false(pct_session_closing(f->c, a));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_lifecycle, setup, teardown),
        cmocka_unit_test_setup_teardown(test_seq_and_announce, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
