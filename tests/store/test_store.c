/*
 * test_store.c — the SQLite store: migrations, machine-id rules, workspaces, thread
 * CRUD/list/paging, atomic message batches, load speed, reopen and kill -9 persistence.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "peri/store.h"

#include <pthread.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

typedef struct fixture {
    char dir[128];
    char db[192];
} fixture;

static int setup(void **state) {
    fixture *f = calloc(1, sizeof *f);
    snprintf(f->dir, sizeof f->dir, "/tmp/peri-store-XXXXXX");
    if (!mkdtemp(f->dir)) return -1;
    snprintf(f->db, sizeof f->db, "%s/sub/dir/peri.db", f->dir);
    *state = f;
    return 0;
}

static int teardown(void **state) {
    fixture *f = *state;
    char cmd[256];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", f->dir);
    if (system(cmd) != 0) return -1;
    free(f);
    return 0;
}

static pst_store *open_ok(const char *path) {
    pst_error err;
    pst_store *s = pst_open(path, &err);
    if (!s) fail_msg("open %s: %s", path, err.message);
    return s;
}

/* A store with one machine + workspace; returns the workspace id in ws. */
static pst_store *open_with_ws(fixture *f, char ws[PST_ID_LEN], const char *path) {
    pst_store *s = open_ok(f->db);
    pst_error err;
    assert_int_equal(
        pst_workspace_ensure(s, "11111111-1111-4111-8111-111111111111", path, ws, &err), PST_OK);
    return s;
}

static void add_msg(pst_store *s, const char *tid, const char *text) {
    char buf[256];
    snprintf(buf, sizeof buf, "{\"role\":\"user\",\"parts\":[{\"type\":\"text\",\"text\":\"%s\"}]}",
             text);
    pst_message_in m = {.role = "user", .content = buf};
    pst_error err;
    assert_int_equal(pst_messages_append(s, tid, &m, 1, NULL, &err), PST_OK);
}

static void test_uuid(void **state) {
    (void)state;
    char a[PST_ID_LEN], b[PST_ID_LEN];
    assert_true(pst_uuid_v7(a));
    assert_true(pst_uuid_v7(b));
    assert_true(pst_uuid_valid(a));
    assert_int_equal(strlen(a), 36);
    assert_int_equal(a[14], '7');
    assert_true(strchr("89ab", a[19]) != NULL);
    assert_string_not_equal(a, b);
    /* v7 sorts by time: the first 8 hex digits are the high 32 bits of the ms clock */
    assert_true(memcmp(a, b, 8) <= 0);
    assert_true(pst_uuid_v4(a));
    assert_int_equal(a[14], '4');
    assert_false(pst_uuid_valid("not-a-uuid"));
    assert_false(pst_uuid_valid("11111111-1111-4111-8111-11111111111"));
    assert_false(pst_uuid_valid("11111111-1111-4111-8111-1111111111111"));
    assert_false(pst_uuid_valid(NULL));
}

static void test_migrations(void **state) {
    fixture *f = *state;
    pst_store *s = open_ok(f->db); /* creates sub/dir/ */
    assert_int_equal(pst_schema_version(s), PST_SCHEMA_VERSION);
    pst_close(s);
    s = open_ok(f->db); /* reopening runs nothing and keeps the version */
    assert_int_equal(pst_schema_version(s), PST_SCHEMA_VERSION);
    pst_close(s);

    /* WAL mode and the schema tables are really there */
    sqlite3 *db;
    assert_int_equal(sqlite3_open(f->db, &db), SQLITE_OK);
    sqlite3_stmt *st;
    assert_int_equal(sqlite3_prepare_v2(db, "PRAGMA journal_mode", -1, &st, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_step(st), SQLITE_ROW);
    assert_string_equal((const char *)sqlite3_column_text(st, 0), "wal");
    sqlite3_finalize(st);
    assert_int_equal(sqlite3_prepare_v2(db,
                                        "SELECT count(*) FROM sqlite_master WHERE name IN "
                                        "('machines','workspaces','threads','messages',"
                                        "'schema_version')",
                                        -1, &st, NULL),
                     SQLITE_OK);
    assert_int_equal(sqlite3_step(st), SQLITE_ROW);
    assert_int_equal(sqlite3_column_int(st, 0), 5);
    sqlite3_finalize(st);
    /* a newer schema is refused, not silently used */
    assert_int_equal(sqlite3_exec(db, "UPDATE schema_version SET version = 99", NULL, NULL, NULL),
                     SQLITE_OK);
    sqlite3_close(db);
    pst_error err;
    assert_null(pst_open(f->db, &err));
    assert_int_equal(err.status, PST_ERR_SCHEMA);
    assert_non_null(strstr(err.message, "99"));

    /* a file that is not a database is an error, not a crash */
    char bad[256];
    snprintf(bad, sizeof bad, "%s/garbage.db", f->dir);
    FILE *fp = fopen(bad, "w");
    fputs("this is definitely not an SQLite database file, just some text......", fp);
    fclose(fp);
    assert_null(pst_open(bad, &err));
    assert_int_not_equal(err.status, PST_OK);
    assert_null(pst_open("", &err));
    assert_int_equal(err.status, PST_ERR_ARG);
}

static void test_machine_id(void **state) {
    fixture *f = *state;
    char id[PST_ID_LEN], id2[PST_ID_LEN], path[256];
    pst_error err;
    /* env value wins, used as is */
    assert_int_equal(pst_machine_id_resolve(f->dir, "my-box-1", id, &err), PST_OK);
    assert_string_equal(id, "my-box-1");
    assert_int_equal(pst_machine_id_resolve(f->dir, "has space", id, &err), PST_ERR_ARG);
    assert_int_equal(
        pst_machine_id_resolve(f->dir, "0123456789012345678901234567890123456789", id, &err),
        PST_ERR_ARG);
    /* no file yet: a new UUID is written to $HOME/.peri/machine-id */
    snprintf(path, sizeof path, "%s/.peri/machine-id", f->dir);
    assert_int_equal(access(path, F_OK), -1);
    assert_int_equal(pst_machine_id_resolve(f->dir, NULL, id, &err), PST_OK);
    assert_true(pst_uuid_valid(id));
    struct stat sb;
    assert_int_equal(stat(path, &sb), 0);
    assert_int_equal(sb.st_mode & 0777, 0600);
    /* stable afterwards; an empty env value does not override */
    assert_int_equal(pst_machine_id_resolve(f->dir, "", id2, &err), PST_OK);
    assert_string_equal(id, id2);
    /* a file written by someone else is read (upper case normalised) */
    FILE *fp = fopen(path, "w");
    fputs("ABCDEF01-2345-4789-8BCD-EF0123456789\n", fp);
    fclose(fp);
    assert_int_equal(pst_machine_id_resolve(f->dir, NULL, id, &err), PST_OK);
    assert_string_equal(id, "abcdef01-2345-4789-8bcd-ef0123456789");
    /* a corrupt file is replaced by a fresh id */
    fp = fopen(path, "w");
    fputs("garbage\n", fp);
    fclose(fp);
    assert_int_equal(pst_machine_id_resolve(f->dir, NULL, id, &err), PST_OK);
    assert_true(pst_uuid_valid(id));
    assert_string_not_equal(id, "abcdef01-2345-4789-8bcd-ef0123456789");
    assert_int_equal(pst_machine_id_resolve(NULL, NULL, id, &err), PST_ERR_ARG);
    char *dbp = pst_default_db_path("/home/x");
    assert_string_equal(dbp, "/home/x/.peri/peri.db");
    free(dbp);
    assert_null(pst_default_db_path(""));
}

static void test_workspaces(void **state) {
    fixture *f = *state;
    pst_store *s = open_ok(f->db);
    pst_error err;
    char w1[PST_ID_LEN], w2[PST_ID_LEN], w3[PST_ID_LEN];
    const char *m1 = "11111111-1111-4111-8111-111111111111";
    const char *m2 = "22222222-2222-4222-8222-222222222222";
    assert_int_equal(pst_workspace_ensure(s, m1, "/a", w1, &err), PST_OK);
    assert_int_equal(pst_workspace_ensure(s, m1, "/a", w2, &err), PST_OK);
    assert_string_equal(w1, w2); /* UNIQUE(machine_id, path) */
    assert_int_equal(pst_workspace_ensure(s, m2, "/a", w3, &err), PST_OK);
    assert_string_not_equal(w1, w3);
    assert_int_equal(pst_workspace_ensure(s, m1, "", w3, &err), PST_ERR_ARG);
    assert_int_equal(pst_machine_ensure(s, m1, "laptop", &err), PST_OK);
    pst_close(s);
}

static void test_thread_crud(void **state) {
    fixture *f = *state;
    char ws[PST_ID_LEN];
    pst_store *s = open_with_ws(f, ws, "/proj");
    pst_error err;
    pst_thread t, g;
    pst_thread_new in = {.workspace_id = ws, .title = "first", .model = "gpt-x"};
    assert_int_equal(pst_thread_create(s, &in, &t, &err), PST_OK);
    assert_true(pst_uuid_valid(t.id));
    assert_string_equal(t.cwd, "/proj");
    assert_string_equal(t.title, "first");
    assert_string_equal(t.parent_id, "");
    assert_false(t.archived);
    assert_int_equal(t.message_count, 0);

    assert_int_equal(pst_thread_get(s, t.id, &g, &err), PST_OK);
    assert_string_equal(g.model, "gpt-x");
    pst_thread_clear(&g);
    assert_int_equal(pst_thread_rename(s, t.id, "renamed", &err), PST_OK);
    assert_int_equal(pst_thread_set_model(s, t.id, "claude", &err), PST_OK);
    assert_int_equal(pst_thread_set_meta(s, t.id, "{\"mode\":\"ask\"}", &err), PST_OK);
    assert_int_equal(pst_thread_set_meta(s, t.id, "{broken", &err), PST_ERR_ARG);
    assert_int_equal(pst_thread_set_archived(s, t.id, true, &err), PST_OK);
    assert_int_equal(pst_thread_get(s, t.id, &g, &err), PST_OK);
    assert_string_equal(g.title, "renamed");
    assert_string_equal(g.model, "claude");
    assert_string_equal(g.meta, "{\"mode\":\"ask\"}");
    assert_true(g.archived);
    pst_thread_clear(&g);

    /* child thread, explicit id; unknown parent/workspace refused */
    pst_thread_new cin = {
        .id = "0190aaaa-0000-7000-8000-000000000001", .workspace_id = ws, .parent_id = t.id};
    assert_int_equal(pst_thread_create(s, &cin, NULL, &err), PST_OK);
    assert_int_equal(pst_thread_create(s, &cin, NULL, &err), PST_ERR_ARG); /* duplicate */
    pst_thread_new bad = {.workspace_id = ws, .parent_id = "nope"};
    assert_int_equal(pst_thread_create(s, &bad, NULL, &err), PST_ERR_NOT_FOUND);
    pst_thread_new badws = {.workspace_id = "nope"};
    assert_int_equal(pst_thread_create(s, &badws, NULL, &err), PST_ERR_NOT_FOUND);
    add_msg(s, cin.id, "child message");

    /* delete cascades to the child and to messages */
    assert_int_equal(pst_thread_delete(s, t.id, &err), PST_OK);
    assert_int_equal(pst_thread_get(s, t.id, &g, &err), PST_ERR_NOT_FOUND);
    assert_int_equal(pst_thread_get(s, cin.id, &g, &err), PST_ERR_NOT_FOUND);
    assert_int_equal(pst_thread_delete(s, t.id, &err), PST_ERR_NOT_FOUND);
    assert_int_equal(pst_thread_rename(s, "missing", "x", &err), PST_ERR_NOT_FOUND);
    assert_int_equal(pst_thread_get(s, "", &g, &err), PST_ERR_ARG);
    pst_message_list l;
    assert_int_equal(pst_messages_load(s, cin.id, &l, &err), PST_ERR_NOT_FOUND);
    pst_thread_clear(&t);
    pst_close(s);
}

static void test_list_and_paging(void **state) {
    fixture *f = *state;
    char ws[PST_ID_LEN], ws2[PST_ID_LEN];
    pst_store *s = open_with_ws(f, ws, "/proj");
    pst_error err;
    assert_int_equal(
        pst_workspace_ensure(s, "11111111-1111-4111-8111-111111111111", "/other", ws2, &err),
        PST_OK);
    char ids[25][PST_ID_LEN];
    for (int i = 0; i < 25; i++) {
        pst_thread t;
        pst_thread_new in = {.workspace_id = i < 20 ? ws : ws2};
        assert_int_equal(pst_thread_create(s, &in, &t, &err), PST_OK);
        strcpy(ids[i], t.id);
        pst_thread_clear(&t);
        add_msg(s, ids[i], "hi");
    }
    /* empty, archived and child threads are hidden by default */
    pst_thread_new empty = {.workspace_id = ws};
    pst_thread e;
    assert_int_equal(pst_thread_create(s, &empty, &e, &err), PST_OK);
    assert_int_equal(pst_thread_set_archived(s, ids[3], true, &err), PST_OK);
    pst_thread_new child = {.workspace_id = ws, .parent_id = ids[0]};
    pst_thread c;
    assert_int_equal(pst_thread_create(s, &child, &c, &err), PST_OK);
    add_msg(s, c.id, "child");

    pst_list_query q = {.cwd = "/proj", .limit = 7};
    pst_thread_page p;
    int seen = 0, pages = 0;
    char *cursor = NULL;
    int64_t last_ts = INT64_MAX;
    do {
        q.cursor = cursor;
        assert_int_equal(pst_thread_list(s, &q, &p, &err), PST_OK);
        for (size_t i = 0; i < p.count; i++) {
            assert_string_equal(p.items[i].cwd, "/proj");
            assert_string_not_equal(p.items[i].id, ids[3]);
            assert_string_not_equal(p.items[i].id, e.id);
            assert_string_not_equal(p.items[i].id, c.id);
            assert_true(p.items[i].updated_at <= last_ts);
            last_ts = p.items[i].updated_at;
            seen++;
        }
        pages++;
        free(cursor);
        cursor = p.next_cursor ? strdup(p.next_cursor) : NULL;
        pst_thread_page_clear(&p);
    } while (cursor);
    assert_int_equal(seen, 19); /* 20 in /proj minus the archived one */
    assert_int_equal(pages, 3);

    /* all workspaces, with archived/empty/children */
    pst_list_query all = {
        .include_archived = true, .include_empty = true, .include_children = true, .limit = 500};
    assert_int_equal(pst_thread_list(s, &all, &p, &err), PST_OK);
    assert_int_equal(p.count, 27);
    assert_null(p.next_cursor);
    pst_thread_page_clear(&p);
    pst_list_query other = {.cwd = "/other"};
    assert_int_equal(pst_thread_list(s, &other, &p, &err), PST_OK);
    assert_int_equal(p.count, 5);
    pst_thread_page_clear(&p);
    pst_list_query none = {.cwd = "/nowhere"};
    assert_int_equal(pst_thread_list(s, &none, &p, &err), PST_OK);
    assert_int_equal(p.count, 0);
    pst_thread_page_clear(&p);
    /* bad cursor and limit */
    pst_list_query bad = {.cursor = "garbage"};
    assert_int_equal(pst_thread_list(s, &bad, &p, &err), PST_ERR_ARG);
    pst_list_query bad2 = {.cursor = "12:x'; DROP TABLE threads;--"};
    assert_int_equal(pst_thread_list(s, &bad2, &p, &err), PST_ERR_ARG);
    pst_list_query bad3 = {.limit = 501};
    assert_int_equal(pst_thread_list(s, &bad3, &p, &err), PST_ERR_ARG);
    pst_thread_clear(&e);
    pst_thread_clear(&c);
    pst_close(s);
}

static void test_atomic_batch(void **state) {
    fixture *f = *state;
    char ws[PST_ID_LEN];
    pst_store *s = open_with_ws(f, ws, "/proj");
    pst_error err;
    pst_thread t;
    pst_thread_new in = {.workspace_id = ws};
    assert_int_equal(pst_thread_create(s, &in, &t, &err), PST_OK);
    add_msg(s, t.id, "question");
    pst_message_in batch[3] = {
        {.role = "assistant",
         .content = "{\"parts\":[{\"type\":\"tool_call\"}]}",
         .meta = "{\"title\":\"Read a\"}"},
        {.role = "tool", .content = "{\"parts\":[1]}"},
        {.role = "tool", .content = "{not json"},
    };
    int64_t first = 0;
    assert_int_equal(pst_messages_append(s, t.id, batch, 3, &first, &err), PST_ERR_ARG);
    int64_t n = -1;
    assert_int_equal(pst_messages_count(s, t.id, &n, &err), PST_OK);
    assert_int_equal(n, 1); /* nothing of the failed batch is there */
    batch[2].content = "{\"parts\":[2]}";
    assert_int_equal(pst_messages_append(s, t.id, batch, 3, &first, &err), PST_OK);
    assert_int_equal(first, 2);
    pst_message_list l;
    assert_int_equal(pst_messages_load(s, t.id, &l, &err), PST_OK);
    assert_int_equal(l.count, 4);
    for (size_t i = 0; i < l.count; i++)
        assert_int_equal(l.items[i].seq, (int64_t)i + 1);
    assert_string_equal(l.items[1].role, "assistant");
    assert_string_equal(l.items[1].meta, "{\"title\":\"Read a\"}");
    assert_null(l.items[2].meta);
    assert_string_equal(l.items[3].content, "{\"parts\":[2]}");
    pst_message_list_clear(&l);
    /* missing role/content rejected up front; unknown thread is NOT_FOUND */
    pst_message_in norole = {.role = "", .content = "{}"};
    assert_int_equal(pst_messages_append(s, t.id, &norole, 1, NULL, &err), PST_ERR_ARG);
    assert_int_equal(pst_messages_append(s, "nope", batch, 1, NULL, &err), PST_ERR_NOT_FOUND);
    pst_thread g;
    assert_int_equal(pst_thread_get(s, t.id, &g, &err), PST_OK);
    assert_int_equal(g.message_count, 4);
    assert_true(g.updated_at >= t.updated_at);
    pst_thread_clear(&g);
    pst_thread_clear(&t);
    pst_close(s);
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void test_load_10k_and_reopen(void **state) {
    fixture *f = *state;
    char ws[PST_ID_LEN];
    pst_store *s = open_with_ws(f, ws, "/proj");
    pst_error err;
    pst_thread t;
    pst_thread_new in = {.workspace_id = ws};
    assert_int_equal(pst_thread_create(s, &in, &t, &err), PST_OK);
    static pst_message_in batch[100];
    static char bodies[100][200];
    for (int b = 0; b < 100; b++) {
        for (int i = 0; i < 100; i++) {
            snprintf(bodies[i], sizeof bodies[i],
                     "{\"role\":\"assistant\",\"parts\":[{\"type\":\"text\",\"text\":\"message "
                     "%d of batch %d with some padding text\"}]}",
                     i, b);
            batch[i] = (pst_message_in){.role = i % 2 ? "assistant" : "user", .content = bodies[i]};
        }
        assert_int_equal(pst_messages_append(s, t.id, batch, 100, NULL, &err), PST_OK);
    }
    pst_close(s);
    s = open_ok(f->db); /* persistence across reopen */
    double t0 = now_s();
    pst_message_list l;
    assert_int_equal(pst_messages_load(s, t.id, &l, &err), PST_OK);
    double dt = now_s() - t0;
    assert_int_equal(l.count, 10000);
    assert_int_equal(l.items[9999].seq, 10000);
    assert_non_null(strstr(l.items[9999].content, "message 99 of batch 99"));
    print_message("load of 10,000 messages: %.1f ms\n", dt * 1000);
    assert_true(dt < 1.0);
    pst_message_list_clear(&l);
    pst_thread_clear(&t);
    pst_close(s);
}

/* kill -9 in the middle of a turn: everything committed before is there after reopen, the
 * uncommitted part is not, and the store still works. */
static void test_kill9(void **state) {
    fixture *f = *state;
    char ws[PST_ID_LEN];
    pst_store *s = open_with_ws(f, ws, "/proj");
    pst_error err;
    pst_thread t;
    pst_thread_new in = {.workspace_id = ws};
    assert_int_equal(pst_thread_create(s, &in, &t, &err), PST_OK);
    pst_close(s);
    int pipefd[2];
    assert_int_equal(pipe(pipefd), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        pst_store *cs = pst_open(f->db, NULL);
        if (!cs) _exit(2);
        for (int i = 0; i < 50; i++)
            add_msg(cs, t.id, "committed");
        /* open a write transaction by hand and die inside it */
        sqlite3 *db;
        if (sqlite3_open(f->db, &db) != SQLITE_OK) _exit(3);
        sqlite3_exec(db,
                     "BEGIN IMMEDIATE; INSERT INTO messages VALUES((SELECT id FROM "
                     "threads LIMIT 1), 999, 'user', '{}', NULL, 0);",
                     NULL, NULL, NULL);
        if (write(pipefd[1], "x", 1) != 1) _exit(4);
        for (;;)
            pause();
    }
    close(pipefd[1]);
    char c;
    assert_int_equal(read(pipefd[0], &c, 1), 1);
    close(pipefd[0]);
    kill(pid, SIGKILL);
    int status;
    waitpid(pid, &status, 0);
    assert_true(WIFSIGNALED(status));
    s = open_ok(f->db);
    pst_message_list l;
    assert_int_equal(pst_messages_load(s, t.id, &l, &err), PST_OK);
    assert_int_equal(l.count, 50);
    assert_int_equal(l.items[49].seq, 50);
    pst_message_list_clear(&l);
    add_msg(s, t.id, "after restart");
    int64_t n;
    assert_int_equal(pst_messages_count(s, t.id, &n, &err), PST_OK);
    assert_int_equal(n, 51);
    pst_thread_clear(&t);
    pst_close(s);
}

static void test_memory_store(void **state) {
    (void)state;
    pst_store *s = open_ok(":memory:");
    pst_error err;
    char ws[PST_ID_LEN];
    assert_int_equal(pst_workspace_ensure(s, "m", "/x", ws, &err), PST_OK);
    pst_close(s);
}

typedef struct writer {
    const char *db;
    const char *tid;
    pst_store *shared; /* NULL: open an own connection */
    int failures;
} writer;

static void *write_many(void *p) {
    writer *w = p;
    pst_store *s = w->shared ? w->shared : pst_open(w->db, NULL);
    if (!s) {
        w->failures++;
        return NULL;
    }
    pst_message_in batch[2] = {{.role = "assistant", .content = "{\"a\":1}"},
                               {.role = "tool", .content = "{\"b\":2}"}};
    for (int i = 0; i < 100; i++)
        if (pst_messages_append(s, w->tid, batch, 2, NULL, NULL) != PST_OK) w->failures++;
    if (!w->shared) pst_close(s);
    return NULL;
}

/* Two connections (processes would be the same) and two threads on one connection append
 * to the same thread at once: every batch lands, seq stays dense and unique. */
static void test_concurrent_appends(void **state) {
    fixture *f = *state;
    char ws[PST_ID_LEN];
    pst_store *s = open_with_ws(f, ws, "/proj");
    pst_error err;
    pst_thread t;
    pst_thread_new in = {.workspace_id = ws};
    assert_int_equal(pst_thread_create(s, &in, &t, &err), PST_OK);
    writer w[4] = {
        {f->db, t.id, NULL, 0}, {f->db, t.id, NULL, 0}, {f->db, t.id, s, 0}, {f->db, t.id, s, 0}};
    pthread_t th[4];
    for (int i = 0; i < 4; i++)
        pthread_create(&th[i], NULL, write_many, &w[i]);
    for (int i = 0; i < 4; i++)
        pthread_join(th[i], NULL);
    for (int i = 0; i < 4; i++)
        assert_int_equal(w[i].failures, 0);
    pst_message_list l;
    assert_int_equal(pst_messages_load(s, t.id, &l, &err), PST_OK);
    assert_int_equal(l.count, 800);
    for (size_t i = 0; i < l.count; i++) {
        assert_int_equal(l.items[i].seq, (int64_t)i + 1);
        /* batches are never interleaved: an assistant is always followed by its tool */
        assert_string_equal(l.items[i].role, i % 2 ? "tool" : "assistant");
    }
    pst_message_list_clear(&l);
    pst_thread_clear(&t);
    pst_close(s);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_uuid),
        cmocka_unit_test_setup_teardown(test_migrations, setup, teardown),
        cmocka_unit_test_setup_teardown(test_machine_id, setup, teardown),
        cmocka_unit_test_setup_teardown(test_workspaces, setup, teardown),
        cmocka_unit_test_setup_teardown(test_thread_crud, setup, teardown),
        cmocka_unit_test_setup_teardown(test_list_and_paging, setup, teardown),
        cmocka_unit_test_setup_teardown(test_atomic_batch, setup, teardown),
        cmocka_unit_test_setup_teardown(test_load_10k_and_reopen, setup, teardown),
        cmocka_unit_test_setup_teardown(test_kill9, setup, teardown),
        cmocka_unit_test_setup_teardown(test_concurrent_appends, setup, teardown),
        cmocka_unit_test(test_memory_store),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
