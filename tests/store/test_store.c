/*
 * test_store.c — the store on both backends (issue 15: the same tests, parameterised):
 * migrations, machine-id rules, workspaces, thread CRUD/list/paging, atomic message
 * batches, load speed, reopen and kill -9 persistence, concurrent writers, ownership.
 *
 *   test_store            SQLite (a temp file per test)
 *   test_store pg         PostgreSQL: $PERI_TEST_PG_URL is an admin URL of a throwaway
 *                         cluster (tests/store/pg_cluster.sh); each test gets a fresh
 *                         database, dropped afterwards. Plus connection-loss tests.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "peri/store.h"

#include <libpq-fe.h>
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
    char db[512];    /* SQLite path or PostgreSQL URL of this test's database */
    char dbname[64]; /* PostgreSQL: the database's name */
} fixture;

static const char *g_pg_admin; /* NULL: SQLite run */
static int g_pg_seq;

static PGconn *pg_connect(const char *url) {
    PGconn *c = PQconnectdb(url);
    if (PQstatus(c) != CONNECTION_OK) fail_msg("connect %s: %s", url, PQerrorMessage(c));
    return c;
}

static void pg_run(PGconn *c, const char *sql) {
    PGresult *r = PQexec(c, sql);
    ExecStatusType st = PQresultStatus(r);
    if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK)
        fail_msg("%s: %s", sql, PQresultErrorMessage(r));
    PQclear(r);
}

/* Raw SQL on the test's database, outside the store (inspection / sabotage). */
static void raw_exec(const fixture *f, const char *sql) {
    if (g_pg_admin) {
        PGconn *c = pg_connect(f->db);
        pg_run(c, sql);
        PQfinish(c);
    } else {
        sqlite3 *db;
        assert_int_equal(sqlite3_open(f->db, &db), SQLITE_OK);
        assert_int_equal(sqlite3_exec(db, sql, NULL, NULL, NULL), SQLITE_OK);
        sqlite3_close(db);
    }
}

static int setup(void **state) {
    fixture *f = calloc(1, sizeof *f);
    snprintf(f->dir, sizeof f->dir, "/tmp/peri-store-XXXXXX");
    if (!mkdtemp(f->dir)) return -1;
    if (g_pg_admin) {
        snprintf(f->dbname, sizeof f->dbname, "peri_t_%ld_%d", (long)getpid(), ++g_pg_seq);
        char sql[128];
        snprintf(sql, sizeof sql, "CREATE DATABASE %s", f->dbname);
        PGconn *c = pg_connect(g_pg_admin);
        pg_run(c, sql);
        PQfinish(c);
        /* same server and user as the admin URL, another database */
        const char *q = strchr(g_pg_admin, '?');
        snprintf(f->db, sizeof f->db, "postgresql:///%s%s", f->dbname, q ? q : "");
    } else {
        snprintf(f->db, sizeof f->db, "%s/sub/dir/peri.db", f->dir);
    }
    *state = f;
    return 0;
}

static int teardown(void **state) {
    fixture *f = *state;
    char cmd[256];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", f->dir);
    if (system(cmd) != 0) return -1;
    if (g_pg_admin) {
        snprintf(cmd, sizeof cmd, "DROP DATABASE %s WITH (FORCE)", f->dbname);
        PGconn *c = pg_connect(g_pg_admin);
        pg_run(c, cmd);
        PQfinish(c);
    }
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

/* A store with the workspace "/proj" and one new thread in it (*t: the caller clears it
 * with pst_thread_clear; the store: pst_close). */
static pst_store *open_with_thread(fixture *f, pst_thread *t) {
    char ws[PST_ID_LEN];
    pst_store *s = open_with_ws(f, ws, "/proj");
    pst_error err;
    pst_thread_new in = {.workspace_id = ws};
    assert_int_equal(pst_thread_create(s, &in, t, &err), PST_OK);
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

    if (g_pg_admin) {
        /* the schema tables are really there, in the PostgreSQL dialect */
        PGconn *c = pg_connect(f->db);
        PGresult *r = PQexec(c, "SELECT count(*) FROM pg_tables WHERE tablename IN "
                                "('machines','workspaces','threads','messages','schema_version')");
        assert_int_equal(PQresultStatus(r), PGRES_TUPLES_OK);
        assert_string_equal(PQgetvalue(r, 0, 0), "5");
        PQclear(r);
        PQfinish(c);
    } else {
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
        sqlite3_close(db);
    }
    /* a newer schema is refused, not silently used */
    raw_exec(f, "UPDATE schema_version SET version = 99");
    pst_error err;
    assert_null(pst_open(f->db, &err));
    assert_int_equal(err.status, PST_ERR_SCHEMA);
    assert_non_null(strstr(err.message, "99"));

    if (g_pg_admin) {
        /* no server there: a typed connection error, not a crash */
        char url[300];
        snprintf(url, sizeof url, "postgresql:///nodb?host=%s&connect_timeout=2", f->dir);
        assert_null(pst_open(url, &err));
        assert_int_equal(err.status, PST_ERR_CONN);
        assert_null(pst_open("postgresql://bad url with spaces/%zz?=", &err));
        assert_int_not_equal(err.status, PST_OK);
        return;
    }
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
    pst_thread t;
    pst_store *s = open_with_thread(f, &t);
    pst_error err;
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
    pst_thread t;
    pst_store *s = open_with_thread(f, &t);
    pst_error err;
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
    pst_thread t;
    pst_store *s = open_with_thread(f, &t);
    pst_error err;
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
        if (g_pg_admin) {
            PGconn *c = PQconnectdb(f->db);
            if (PQstatus(c) != CONNECTION_OK) _exit(3);
            PQclear(PQexec(c, "BEGIN; INSERT INTO messages VALUES((SELECT id FROM "
                              "threads LIMIT 1), 999, 'user', '{}', NULL, 0);"));
        } else {
            sqlite3 *db;
            if (sqlite3_open(f->db, &db) != SQLITE_OK) _exit(3);
            sqlite3_exec(db,
                         "BEGIN IMMEDIATE; INSERT INTO messages VALUES((SELECT id FROM "
                         "threads LIMIT 1), 999, 'user', '{}', NULL, 0);",
                         NULL, NULL, NULL);
        }
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
    pst_thread t;
    pst_store *s = open_with_thread(f, &t);
    pst_error err;
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

typedef struct opener {
    const char *db;
    pthread_barrier_t *go;
    char why[256];
} opener;

static void *open_at_once(void *p) {
    opener *o = p;
    pthread_barrier_wait(o->go);
    pst_error err;
    pst_store *s = pst_open(o->db, &err);
    if (s)
        pst_close(s);
    else
        snprintf(o->why, sizeof o->why, "%s", err.message);
    return NULL;
}

/* SQLite: four connections open one new database file at the same moment (two hosts
 * sharing a session database start together): each opens. Switching the new file to
 * WAL needs a lock SQLite does not wait for (SQLITE_BUSY at once), so the store
 * retries it; without that, about one round in three failed here with "database is
 * locked". */
static void test_concurrent_open(void **state) {
    fixture *f = *state;
    if (g_pg_admin) skip(); /* PostgreSQL has no file to switch */
    for (int round = 0; round < 20; round++) {
        char db[600];
        snprintf(db, sizeof db, "%s/open%d.db", f->dir, round);
        pthread_barrier_t go;
        assert_int_equal(pthread_barrier_init(&go, NULL, 4), 0);
        opener o[4];
        pthread_t th[4];
        for (int i = 0; i < 4; i++) {
            o[i] = (opener){.db = db, .go = &go};
            assert_int_equal(pthread_create(&th[i], NULL, open_at_once, &o[i]), 0);
        }
        for (int i = 0; i < 4; i++)
            pthread_join(th[i], NULL);
        pthread_barrier_destroy(&go);
        for (int i = 0; i < 4; i++)
            if (o[i].why[0]) fail_msg("round %d, opener %d: %s", round, i, o[i].why);
    }
}

/* Ownership rules: a store opened for machine A reads everything but writes
 * only A's threads; a read-only store writes nothing. */
static void test_ownership(void **state) {
    fixture *f = *state;
    const char *ma = "aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa";
    const char *mb = "bbbbbbbb-bbbb-4bbb-8bbb-bbbbbbbbbbbb";
    pst_error err;
    pst_open_options oa = {.owner_machine_id = ma}, ob = {.owner_machine_id = mb};
    pst_store *a = pst_open_ex(f->db, &oa, &err);
    assert_non_null(a);
    pst_store *b = pst_open_ex(f->db, &ob, &err);
    assert_non_null(b);
    char wa[PST_ID_LEN], wb[PST_ID_LEN], tmp[PST_ID_LEN];
    assert_int_equal(pst_workspace_ensure(a, ma, "/proj", wa, &err), PST_OK);
    assert_int_equal(pst_workspace_ensure(b, mb, "/proj", wb, &err), PST_OK);
    /* B may not create workspaces or machines for A (and cannot see a missing one) */
    assert_int_equal(pst_workspace_ensure(b, ma, "/elsewhere", tmp, &err), PST_ERR_FOREIGN);
    assert_int_equal(pst_machine_ensure(b, ma, "x", &err), PST_ERR_FOREIGN);
    /* an existing workspace of A is found (read) by B */
    assert_int_equal(pst_workspace_ensure(b, ma, "/proj", tmp, &err), PST_OK);
    assert_string_equal(tmp, wa);
    pst_thread ta;
    pst_thread_new in = {.workspace_id = wa};
    assert_int_equal(pst_thread_create(a, &in, &ta, &err), PST_OK);
    add_msg(a, ta.id, "from a");
    /* B: no thread in A's workspace, no append/rename/meta/archive/delete on A's thread */
    pst_thread_new inb = {.workspace_id = wa};
    assert_int_equal(pst_thread_create(b, &inb, NULL, &err), PST_ERR_FOREIGN);
    assert_non_null(strstr(err.message, ma));
    pst_message_in m = {.role = "user", .content = "{}"};
    assert_int_equal(pst_messages_append(b, ta.id, &m, 1, NULL, &err), PST_ERR_FOREIGN);
    assert_non_null(strstr(err.message, "belongs to machine"));
    assert_int_equal(pst_thread_rename(b, ta.id, "x", &err), PST_ERR_FOREIGN);
    assert_int_equal(pst_thread_set_meta(b, ta.id, "{}", &err), PST_ERR_FOREIGN);
    assert_int_equal(pst_thread_set_archived(b, ta.id, true, &err), PST_ERR_FOREIGN);
    assert_int_equal(pst_thread_set_model(b, ta.id, "m", &err), PST_ERR_FOREIGN);
    assert_int_equal(pst_thread_delete(b, ta.id, &err), PST_ERR_FOREIGN);
    /* missing stays NOT_FOUND, not FOREIGN */
    assert_int_equal(pst_messages_append(b, "nope", &m, 1, NULL, &err), PST_ERR_NOT_FOUND);
    assert_int_equal(pst_thread_rename(b, "nope", "x", &err), PST_ERR_NOT_FOUND);
    /* but B reads A's history and lists both machines */
    pst_message_list l;
    assert_int_equal(pst_messages_load(b, ta.id, &l, &err), PST_OK);
    assert_int_equal(l.count, 1);
    pst_message_list_clear(&l);
    pst_thread tb;
    pst_thread_new in2 = {.workspace_id = wb};
    assert_int_equal(pst_thread_create(b, &in2, &tb, &err), PST_OK);
    add_msg(b, tb.id, "from b");
    pst_list_query q = {0};
    pst_thread_page p;
    assert_int_equal(pst_thread_list(b, &q, &p, &err), PST_OK);
    assert_int_equal(p.count, 2);
    pst_thread_page_clear(&p);
    /* a read-only store (shared, no identity) writes nothing, reads everything */
    pst_open_options ro = {.read_only = true};
    pst_store *r = pst_open_ex(f->db, &ro, &err);
    assert_non_null(r);
    assert_int_equal(pst_messages_append(r, ta.id, &m, 1, NULL, &err), PST_ERR_FOREIGN);
    assert_non_null(strstr(err.message, "no machine identity"));
    assert_int_equal(pst_workspace_ensure(r, mb, "/new", tmp, &err), PST_ERR_FOREIGN);
    assert_int_equal(pst_thread_delete(r, tb.id, &err), PST_ERR_FOREIGN);
    assert_int_equal(pst_messages_load(r, tb.id, &l, &err), PST_OK);
    pst_message_list_clear(&l);
    assert_int_equal(pst_thread_delete(a, ta.id, &err), PST_OK); /* the owner may */
    pst_thread_clear(&ta);
    pst_thread_clear(&tb);
    pst_close(r);
    pst_close(a);
    pst_close(b);
}

/* PostgreSQL only: the server drops our connection (pg_terminate_backend, as on a
 * restart or network cut): the next call fails with PST_ERR_CONN and nothing half-done
 * remains; the call after it reconnects and works. */
static void test_connection_loss(void **state) {
    fixture *f = *state;
    pst_thread t;
    pst_store *s = open_with_thread(f, &t);
    pst_error err;
    add_msg(s, t.id, "before");
    for (int round = 0; round < 2; round++) {
        PGconn *admin = pg_connect(g_pg_admin);
        char sql[256];
        snprintf(sql, sizeof sql,
                 "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '%s' "
                 "AND application_name = 'peri'",
                 f->dbname);
        pg_run(admin, sql);
        PQfinish(admin);
        usleep(100 * 1000);
        pst_message_in m = {.role = "user", .content = "{\"lost\":true}"};
        if (round == 0) /* inside the append transaction */
            assert_int_equal(pst_messages_append(s, t.id, &m, 1, NULL, &err), PST_ERR_CONN);
        else /* a plain read */
            assert_int_equal(pst_thread_get(s, t.id, NULL, &err), PST_ERR_CONN);
        assert_non_null(strstr(err.message, "connection"));
        add_msg(s, t.id, "after"); /* reconnects */
    }
    pst_message_list l;
    assert_int_equal(pst_messages_load(s, t.id, &l, &err), PST_OK);
    assert_int_equal(l.count, 3);
    for (size_t i = 0; i < l.count; i++)
        assert_int_equal(l.items[i].seq, (int64_t)i + 1);
    pst_message_list_clear(&l);
    pst_thread_clear(&t);
    pst_close(s);
}

/* True when the file contains needle (a missing file contains nothing). */
static bool file_has(const char *path, const char *needle) {
    FILE *fp = fopen(path, "rb");
    if (!fp) return false;
    size_t cap = 1 << 20, n = 0;
    char *buf = malloc(cap + 1);
    assert_non_null(buf);
    bool found = false;
    size_t got, keep = strlen(needle);
    /* a sliding window: the last keep-1 bytes stay in front of the next chunk */
    while ((got = fread(buf + n, 1, cap - n, fp)) > 0) {
        n += got;
        buf[n] = '\0';
        if (memmem(buf, n, needle, keep)) found = true;
        if (n > keep) {
            memmove(buf, buf + n - (keep - 1), keep - 1);
            n = keep - 1;
        }
    }
    fclose(fp);
    free(buf);
    return found;
}

/* Percent-encodes s for a URL's userinfo. */
static void url_enc(const char *s, char *out, size_t cap) {
    size_t k = 0;
    for (; *s && k + 4 < cap; s++) {
        unsigned char ch = (unsigned char)*s;
        if ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9'))
            out[k++] = (char)ch;
        else
            k += (size_t)snprintf(out + k, cap - k, "%%%02X", ch);
    }
    out[k] = '\0';
}

/* PostgreSQL only: a role that must log in with its password (pg_cluster.sh trusts only
 * the admin role; every other role needs scram-sha-256). pst_open_ex with the right
 * password (option or URL) connects and works; a wrong or missing one fails with
 * PST_ERR_CONN and a message saying what went wrong, and the password appears in no error
 * text and not in the server's log. */
static void test_password(void **state) {
    fixture *f = *state;
    char role[64], pw[64], wrong[64], sql[512];
    snprintf(role, sizeof role, "peri_pw_%ld", (long)getpid());
    /* a space, quotes and a backslash: passed as a libpq parameter, never quoted by us */
    snprintf(pw, sizeof pw, "s3cr'et \\\"%ld-%ld", (long)getpid(), (long)time(NULL));
    snprintf(wrong, sizeof wrong, "not-the-password-%ld", (long)getpid());
    PGconn *admin = pg_connect(g_pg_admin);
    char *lit = PQescapeLiteral(admin, pw, strlen(pw));
    assert_non_null(lit);
    snprintf(sql, sizeof sql, "CREATE ROLE %s LOGIN PASSWORD %s", role, lit);
    PQfreemem(lit);
    pg_run(admin, sql);
    snprintf(sql, sizeof sql, "ALTER DATABASE %s OWNER TO %s", f->dbname, role);
    pg_run(admin, sql);
    PQfinish(admin);
    const char *sock = getenv("PERI_TEST_PG_SOCKDIR");
    assert_non_null(sock);
    /* passfile= a file that does not exist: ~/.pgpass of whoever runs the test is out */
    char url[700];
    snprintf(url, sizeof url, "postgresql:///%s?host=%s&user=%s&passfile=%s/none", f->dbname, sock,
             role, f->dir);
    const char *mid = "11111111-1111-4111-8111-111111111111";

    /* right password (the option): connects, migrates (creates the tables) and writes */
    pst_error err;
    pst_open_options o = {.owner_machine_id = mid, .password = pw};
    pst_store *s = pst_open_ex(url, &o, &err);
    if (!s) fail_msg("open with the right password: %s", err.message);
    char ws[PST_ID_LEN];
    assert_int_equal(pst_workspace_ensure(s, mid, "/pw", ws, &err), PST_OK);
    assert_int_equal(pst_schema_version(s), PST_SCHEMA_VERSION);
    pst_close(s);

    /* right password in the URL (percent-encoded) */
    char enc[200], url2[900];
    url_enc(pw, enc, sizeof enc);
    snprintf(url2, sizeof url2, "postgresql://%s:%s@/%s?host=%s&passfile=%s/none", role, enc,
             f->dbname, sock, f->dir);
    s = pst_open_ex(url2, NULL, &err);
    if (!s) fail_msg("open with the password in the URL: %s", err.message);
    pst_close(s);

    /* wrong password */
    o.password = wrong;
    memset(&err, 0, sizeof err);
    assert_null(pst_open_ex(url, &o, &err));
    assert_int_equal(err.status, PST_ERR_CONN);
    print_message("wrong password: %s\n", err.message);
    assert_non_null(strstr(err.message, "cannot connect to PostgreSQL"));
    assert_non_null(strstr(err.message, "password authentication failed"));
    assert_null(strstr(err.message, wrong));
    assert_null(strstr(err.message, pw));

    /* wrong password in the URL: the URL (with it) is not echoed either */
    url_enc(wrong, enc, sizeof enc);
    snprintf(url2, sizeof url2, "postgresql://%s:%s@/%s?host=%s&passfile=%s/none", role, enc,
             f->dbname, sock, f->dir);
    memset(&err, 0, sizeof err);
    assert_null(pst_open_ex(url2, NULL, &err));
    assert_int_equal(err.status, PST_ERR_CONN);
    assert_non_null(strstr(err.message, "password authentication failed"));
    assert_null(strstr(err.message, wrong));

    /* no password at all */
    o.password = NULL;
    memset(&err, 0, sizeof err);
    assert_null(pst_open_ex(url, &o, &err));
    assert_int_equal(err.status, PST_ERR_CONN);
    print_message("no password: %s\n", err.message);
    assert_non_null(strstr(err.message, "no password supplied"));

    /* the server's log names the failed logins, never a password */
    char log[600];
    snprintf(log, sizeof log, "%s/server.log", sock);
    assert_true(file_has(log, "password authentication failed"));
    assert_false(file_has(log, pw));
    assert_false(file_has(log, wrong));

    /* the database goes with teardown; the role lives as long as the throwaway cluster */
}

int main(int argc, char **argv) {
    if (argc > 1 && !strcmp(argv[1], "pg")) {
        g_pg_admin = getenv("PERI_TEST_PG_URL");
        if (!g_pg_admin || !*g_pg_admin) {
            fprintf(stderr, "test_store pg: PERI_TEST_PG_URL is not set "
                            "(run through tests/store/pg_cluster.sh)\n");
            return 1;
        }
        /* libpq itself would take $PGPASSWORD when no password is given (docs/store.md):
         * the password tests must not see one from the environment */
        unsetenv("PGPASSWORD");
        print_message("store tests on PostgreSQL\n");
    }
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
        cmocka_unit_test_setup_teardown(test_concurrent_open, setup, teardown),
        cmocka_unit_test(test_memory_store),
        cmocka_unit_test_setup_teardown(test_ownership, setup, teardown),
    };
    /* PostgreSQL only: a server that drops the connection */
    const struct CMUnitTest pg_only[] = {
        cmocka_unit_test_setup_teardown(test_connection_loss, setup, teardown),
        cmocka_unit_test_setup_teardown(test_password, setup, teardown),
    };
    int failed = cmocka_run_group_tests(tests, NULL, NULL);
    if (g_pg_admin) failed += cmocka_run_group_tests(pg_only, NULL, NULL);
    return failed;
}
