/*
 * test_foreign.c — another machine's session opened read-only by the
 * controller (CTest controller.foreign), on one SQLite file shared by two controllers
 * with different machine ids (the rules are the same on PostgreSQL: store.shared_e2e).
 *
 *   - B's load of A's session replays exactly what A's own load replays (text, thoughts,
 *     tool calls and results, the plan of a todo call), and the session is read-only
 *     with owner A;
 *   - prompt, set_mode, set_config_option, fork and delete answer PCT_FOREIGN naming A;
 *     the thread row and its messages are unchanged afterwards;
 *   - A appends; B's next load shows the new message;
 *   - the store's owner check is the last line of defence: a write forced past the
 *     controller's guard (pct__save_meta on the read-only session) is refused by the store.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "controller/ctl_impl.h"
#include "peri/controller.h"

#include "peri/json.h"
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MA "aaaaaaaa-aaaa-4aaa-8aaa-000000000001"
#define MB "bbbbbbbb-bbbb-4bbb-8bbb-000000000002"

/* Every event of one session as a line of text (what the ACP projection is made of). */
typedef struct log {
    pthread_mutex_t mu;
    char *text;
    size_t len;
    int n;
} log_t;

static void log_add(log_t *l, const char *s) {
    size_t k = strlen(s);
    char *p = realloc(l->text, l->len + k + 2);
    assert_non_null(p);
    memcpy(p + l->len, s, k);
    p[l->len + k] = '\n';
    p[l->len + k + 1] = '\0';
    l->text = p;
    l->len += k + 1;
}

static void on_event(void *ctx, const pag_event *ev) {
    log_t *l = ctx;
    pj_t *o =
        pj_pack("{s:i, s:b, s:s*, s:s*, s:s*, s:s*, s:s*, s:s*, s:s*, s:s*}", "kind", (int)ev->kind,
                "replay", ev->replay, "text", ev->text, "call", ev->tool_call_id, "title",
                ev->title, "toolKind", ev->tool_kind, "status", ev->status, "rawInput",
                ev->raw_input, "content", ev->content_json, "raw_output", ev->raw_output_json);
    char *s = pj_dumps(o, PJ_COMPACT | PJ_SORT_KEYS);
    pj_decref(o);
    assert_non_null(s);
    pthread_mutex_lock(&l->mu);
    log_add(l, s);
    l->n++;
    pthread_mutex_unlock(&l->mu);
    free(s);
}

static void on_done(void *ctx, void *token, const pag_turn_result *r) {
    (void)ctx;
    (void)token;
    (void)r;
    fail_msg("no prompt may run on a read-only session");
}

static char *log_take(log_t *l) {
    pthread_mutex_lock(&l->mu);
    char *t = l->text ? l->text : strdup("");
    l->text = NULL;
    l->len = 0;
    l->n = 0;
    pthread_mutex_unlock(&l->mu);
    return t;
}

typedef struct host {
    pag_settings settings;
    log_t log;
    pct_controller *c;
} host;

static void host_open(host *h, const char *db, const char *machine) {
    memset(h, 0, sizeof *h);
    h->settings.context_budget = 1000;
    h->settings.max_steps = 5;
    h->settings.close_grace_ms = 200;
    pthread_mutex_init(&h->log.mu, NULL);
    pct_sink sink = {.ctx = &h->log, .on_event = on_event, .on_prompt_done = on_done};
    pct_config cfg = {.db_path = db, .machine_id = machine, .settings = &h->settings};
    pct_error e;
    h->c = pct_new(&cfg, &sink, &e);
    if (!h->c) fail_msg("pct_new: %s", e.message);
}

static void host_close(host *h) {
    assert_int_equal(pct_free(h->c, 1000), 0);
    free(h->log.text);
    pthread_mutex_destroy(&h->log.mu);
}

static void append(pst_store *s, const char *tid, pm_message *m) {
    char *j = pm_message_to_json(m);
    assert_non_null(j);
    pst_message_in in = {.role = pm_role_name(m->role), .content = j};
    pst_error e;
    assert_int_equal(pst_messages_append(s, tid, &in, 1, NULL, &e), PST_OK);
    free(j);
    pm_message_clear(m);
}

/* The row as text: everything a write would change. */
static char *row_of(pst_store *s, const char *tid) {
    pst_thread t;
    pst_error e;
    assert_int_equal(pst_thread_get(s, tid, &t, &e), PST_OK);
    pst_message_list l;
    assert_int_equal(pst_messages_load(s, tid, &l, &e), PST_OK);
    size_t cap = 4096;
    for (size_t i = 0; i < l.count; i++)
        cap += strlen(l.items[i].content) + 64;
    char *out = malloc(cap);
    assert_non_null(out);
    int k = snprintf(out, cap, "%s|%s|%s|%s|%d|%lld|%lld|%zu", t.title ? t.title : "-",
                     t.model ? t.model : "-", t.meta ? t.meta : "-", t.machine_id, t.archived,
                     (long long)t.message_count, (long long)t.updated_at, l.count);
    for (size_t i = 0; i < l.count; i++)
        k += snprintf(out + k, cap - (size_t)k, "|%lld:%s", (long long)l.items[i].seq,
                      l.items[i].content);
    pst_message_list_clear(&l);
    pst_thread_clear(&t);
    return out;
}

static void test_foreign_read_only(void **state) {
    (void)state;
    char dir[] = "/tmp/peri-foreign-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char db[128];
    snprintf(db, sizeof db, "%s/peri.db", dir);

    /* Machine A's session with a history written through the store as A would. */
    pst_error pe;
    pst_open_options oa = {.owner_machine_id = MA};
    pst_store *sa = pst_open_ex(db, &oa, &pe);
    assert_non_null(sa);
    char ws[PST_ID_LEN];
    assert_int_equal(pst_workspace_ensure(sa, MA, dir, ws, &pe), PST_OK);
    pst_thread th;
    pst_thread_new tn = {.workspace_id = ws, .title = "A's work", .meta = "{\"mode\":\"plan\"}"};
    assert_int_equal(pst_thread_create(sa, &tn, &th, &pe), PST_OK);
    char tid[PST_ID_LEN];
    memcpy(tid, th.id, PST_ID_LEN);
    pst_thread_clear(&th);
    pm_message m;
    pm_message_init(&m, PM_ROLE_USER);
    pm_message_add_text(&m, "read f.txt and plan");
    append(sa, tid, &m);
    pm_message_init(&m, PM_ROLE_ASSISTANT);
    pm_message_add_thinking(&m, "let me look", NULL);
    pm_message_add_text(&m, "reading");
    pm_message_add_tool_call(&m, "c1", "read", "{\"path\":\"f.txt\"}");
    pm_message_add_tool_call(&m, "c2", "todo",
                             "{\"todos\":[{\"content\":\"check f\",\"status\":\"completed\"},"
                             "{\"content\":\"answer\",\"status\":\"in_progress\","
                             "\"priority\":\"high\"}]}");
    append(sa, tid, &m);
    pm_message_init(&m, PM_ROLE_TOOL);
    pm_message_add_tool_result(&m, "c1", "abc", false);
    pm_message_add_tool_result(&m, "c2", "Plan updated: 2 items", false);
    append(sa, tid, &m);
    pm_message_init(&m, PM_ROLE_ASSISTANT);
    pm_message_add_text(&m, "f.txt says abc");
    append(sa, tid, &m);

    host a, b;
    host_open(&a, db, MA);
    host_open(&b, db, MB);
    pct_error e;
    char owner[PST_ID_LEN];

    /* A's own load: the reference replay (plan included, before the todo's result). */
    assert_int_equal(pct_session_load(a.c, tid, true, &e), PCT_OK);
    assert_false(pct_session_read_only(a.c, tid, owner));
    char *ra = log_take(&a.log);
    char plan[64], call[64], done[64];
    snprintf(plan, sizeof plan, "\"kind\":%d", (int)PAG_EV_PLAN);
    snprintf(call, sizeof call, "{\"call\":\"c2\",\"kind\":%d", (int)PAG_EV_TOOL_CALL);
    snprintf(done, sizeof done, "{\"call\":\"c2\",\"kind\":%d", (int)PAG_EV_TOOL_UPDATE);
    const char *pp = strstr(ra, plan), *pc = strstr(ra, call), *pd = strstr(ra, done);
    assert_non_null(pp);
    assert_non_null(pc);
    assert_non_null(pd);
    assert_true(pc < pp && pp < pd); /* tool_call, plan, tool_call_update: as in the turn */
    assert_non_null(strstr(pp, "check f"));
    assert_non_null(strstr(ra, "let me look")); /* the thought */

    /* B's load of it: the identical replay, the session read-only, owner A. */
    char *before = row_of(sa, tid);
    assert_int_equal(pct_session_load(b.c, tid, true, &e), PCT_OK);
    char *rb = log_take(&b.log);
    assert_string_equal(ra, rb);
    assert_true(pct_session_read_only(b.c, tid, owner));
    assert_string_equal(owner, MA);

    /* Every write is refused with the owner named; nothing reaches the row. */
    int token = 7;
    const char *why = "belongs to machine " MA ", not to this host's machine " MB;
    memset(&e, 0, sizeof e);
    assert_int_equal(pct_prompt(b.c, tid, "hijack", &token, &e), PCT_FOREIGN);
    assert_non_null(strstr(e.message, why));
    memset(&e, 0, sizeof e);
    assert_int_equal(pct_set_mode(b.c, tid, "default", &e), PCT_FOREIGN);
    assert_non_null(strstr(e.message, why));
    memset(&e, 0, sizeof e);
    assert_int_equal(pct_set_config(b.c, tid, "mode", "default", &e), PCT_FOREIGN);
    assert_non_null(strstr(e.message, why));
    char fid[PST_ID_LEN];
    memset(&e, 0, sizeof e);
    assert_int_equal(pct_session_fork(b.c, tid, fid, &e), PCT_FOREIGN);
    assert_non_null(strstr(e.message, why));
    memset(&e, 0, sizeof e);
    assert_int_equal(pct_session_delete(b.c, tid, &e), PCT_FOREIGN);
    assert_non_null(strstr(e.message, why));
    assert_int_equal(b.log.n, 0); /* no notice, no mode/config update went out */
    char *after = row_of(sa, tid);
    assert_string_equal(before, after);
    free(after);

    /* The store is the last line of defence: a write forced past the controller's guard
     * (the options save a set_mode would do) is refused by the store itself. */
    pct_sess *s = pct__sess_get(b.c, tid);
    assert_non_null(s);
    assert_true(s->read_only);
    pct__save_meta(s);
    pst_message_in in = {.role = "user", .content = "{\"role\":\"user\",\"parts\":[]}"};
    pst_error se;
    assert_int_equal(pst_messages_append(s->c->store, tid, &in, 1, NULL, &se), PST_ERR_FOREIGN);
    assert_non_null(strstr(se.message, MA));
    assert_int_equal(pst_thread_rename(s->c->store, tid, "x", &se), PST_ERR_FOREIGN);
    pct__sess_release(s);
    after = row_of(sa, tid);
    assert_string_equal(before, after);
    free(after);

    /* A appends while B has it open: B's next load shows it. */
    pm_message_init(&m, PM_ROLE_USER);
    pm_message_add_text(&m, "one more from A");
    append(sa, tid, &m);
    assert_int_equal(pct_session_load(b.c, tid, true, &e), PCT_OK);
    char *rb2 = log_take(&b.log);
    assert_non_null(strstr(rb2, "one more from A"));
    assert_true(strncmp(rb2, rb, strlen(rb)) == 0); /* the old history, then the new */
    assert_true(pct_session_read_only(b.c, tid, NULL));
    /* resume (no replay) keeps the open view; close frees it */
    assert_int_equal(pct_session_load(b.c, tid, false, &e), PCT_OK);
    assert_int_equal(b.log.n, 0);
    assert_int_equal(pct_close(b.c, tid, &e), PCT_OK);
    assert_false(pct_session_read_only(b.c, tid, NULL));
    /* not live on B any more: still named as A's, never "not found" */
    memset(&e, 0, sizeof e);
    assert_int_equal(pct_set_mode(b.c, tid, "default", &e), PCT_FOREIGN);
    assert_non_null(strstr(e.message, why));
    memset(&e, 0, sizeof e);
    assert_int_equal(pct_set_config(b.c, tid, "mode", "default", &e), PCT_FOREIGN);
    assert_non_null(strstr(e.message, why));
    memset(&e, 0, sizeof e);
    assert_int_equal(pct_prompt(b.c, tid, "hijack", &token, &e), PCT_FOREIGN);
    assert_non_null(strstr(e.message, why));
    memset(&e, 0, sizeof e);
    assert_int_equal(pct_set_mode(b.c, "00000000-0000-7000-8000-000000000000", "plan", &e),
                     PCT_NOT_FOUND);

    free(before);
    free(ra);
    free(rb);
    free(rb2);
    host_close(&a);
    host_close(&b);
    pst_close(sa);
    char cmd[160];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    assert_int_equal(system(cmd), 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_foreign_read_only),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
