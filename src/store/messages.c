/*
 * messages.c — a thread's transcript: atomic batch append (an assistant message and its
 * tool results commit together or not at all), ordered load, count.
 */
#include "store_int.h"

#include <stdlib.h>
#include <string.h>

#define LOCK(s)   pthread_mutex_lock(&(s)->mu)
#define UNLOCK(s) pthread_mutex_unlock(&(s)->mu)

static bool id_ok(const char *id) {
    return id && *id && strlen(id) < PST_ID_LEN;
}

/* Reads next_seq of the thread inside the open transaction. */
static pst_status next_seq_of(pst_store *s, const char *thread_id, int64_t *seq, pst_error *err) {
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(s->db, "SELECT next_seq FROM threads WHERE id = ?1", -1, &st, NULL) !=
        SQLITE_OK)
        return pst__sqlfail(s->db, err, "append messages");
    sqlite3_bind_text(st, 1, thread_id, -1, SQLITE_TRANSIENT);
    int rc = sqlite3_step(st);
    pst_status r = PST_OK;
    if (rc == SQLITE_ROW)
        *seq = sqlite3_column_int64(st, 0);
    else if (rc == SQLITE_DONE)
        r = pst__fail(err, PST_ERR_NOT_FOUND, 0, "no such session: %s", thread_id);
    else
        r = pst__sqlfail(s->db, err, "append messages");
    sqlite3_finalize(st);
    return r;
}

static pst_status insert_all(pst_store *s, const char *thread_id, const pst_message_in *msgs,
                             size_t n, int64_t seq, int64_t now, pst_error *err) {
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(s->db,
                           "INSERT INTO messages(thread_id, seq, role, content, meta, "
                           "created_at) VALUES(?1, ?2, ?3, ?4, ?5, ?6)",
                           -1, &st, NULL) != SQLITE_OK)
        return pst__sqlfail(s->db, err, "append messages");
    pst_status r = PST_OK;
    for (size_t i = 0; i < n && r == PST_OK; i++) {
        sqlite3_reset(st);
        sqlite3_bind_text(st, 1, thread_id, -1, SQLITE_STATIC);
        sqlite3_bind_int64(st, 2, seq + (int64_t)i);
        sqlite3_bind_text(st, 3, msgs[i].role, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 4, msgs[i].content, -1, SQLITE_STATIC);
        if (msgs[i].meta)
            sqlite3_bind_text(st, 5, msgs[i].meta, -1, SQLITE_STATIC);
        else
            sqlite3_bind_null(st, 5);
        sqlite3_bind_int64(st, 6, now);
        if (sqlite3_step(st) != SQLITE_DONE) {
            if ((sqlite3_extended_errcode(s->db) & 0xff) == SQLITE_CONSTRAINT)
                r = pst__fail(err, PST_ERR_ARG, sqlite3_extended_errcode(s->db),
                              "message %zu: content/meta is not valid JSON or role is empty", i);
            else
                r = pst__sqlfail(s->db, err, "append messages");
        }
    }
    sqlite3_finalize(st);
    if (r != PST_OK) return r;
    if (sqlite3_prepare_v2(s->db,
                           "UPDATE threads SET next_seq = ?2, message_count = message_count + "
                           "?3, updated_at = max(updated_at, ?4) WHERE id = ?1",
                           -1, &st, NULL) != SQLITE_OK)
        return pst__sqlfail(s->db, err, "append messages");
    sqlite3_bind_text(st, 1, thread_id, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 2, seq + (int64_t)n);
    sqlite3_bind_int64(st, 3, (int64_t)n);
    sqlite3_bind_int64(st, 4, now);
    if (sqlite3_step(st) != SQLITE_DONE) r = pst__sqlfail(s->db, err, "append messages");
    sqlite3_finalize(st);
    return r;
}

pst_status pst_messages_append(pst_store *s, const char *thread_id, const pst_message_in *msgs,
                               size_t n, int64_t *first_seq, pst_error *err) {
    pst__ok(err);
    if (!s || !id_ok(thread_id) || (n > 0 && !msgs))
        return pst__fail(err, PST_ERR_ARG, 0, "bad append arguments");
    for (size_t i = 0; i < n; i++)
        if (!msgs[i].role || !*msgs[i].role || !msgs[i].content)
            return pst__fail(err, PST_ERR_ARG, 0, "message %zu has no role or content", i);
    LOCK(s);
    pst_status r = PST_OK;
    int64_t seq = 0;
    if (pst__exec(s->db, "BEGIN IMMEDIATE") != SQLITE_OK) {
        r = pst__sqlfail(s->db, err, "begin append");
        goto out;
    }
    r = next_seq_of(s, thread_id, &seq, err);
    if (r == PST_OK && n > 0) r = insert_all(s, thread_id, msgs, n, seq, pst__now_ms(), err);
    if (r == PST_OK && pst__exec(s->db, "COMMIT") != SQLITE_OK)
        r = pst__sqlfail(s->db, err, "commit append");
    if (r != PST_OK)
        pst__exec(s->db, "ROLLBACK");
    else if (first_seq)
        *first_seq = seq;
out:
    UNLOCK(s);
    return r;
}

void pst_message_list_clear(pst_message_list *l) {
    if (!l) return;
    for (size_t i = 0; i < l->count; i++) {
        free(l->items[i].role);
        free(l->items[i].content);
        free(l->items[i].meta);
    }
    free(l->items);
    memset(l, 0, sizeof *l);
}

static char *dup_col(sqlite3_stmt *st, int i, size_t *len) {
    const void *v = sqlite3_column_text(st, i);
    int n = sqlite3_column_bytes(st, i);
    if (!v) return NULL;
    char *p = malloc((size_t)n + 1);
    if (p) {
        memcpy(p, v, (size_t)n);
        p[n] = '\0';
    }
    if (len) *len = (size_t)n;
    return p;
}

pst_status pst_messages_load(pst_store *s, const char *thread_id, pst_message_list *out,
                             pst_error *err) {
    pst__ok(err);
    if (out) memset(out, 0, sizeof *out);
    if (!s || !id_ok(thread_id) || !out)
        return pst__fail(err, PST_ERR_ARG, 0, "bad load arguments");
    LOCK(s);
    pst_status r = PST_OK;
    sqlite3_stmt *st = NULL;
    size_t cap = 0;
    int64_t expected = 0;
    if (sqlite3_prepare_v2(s->db, "SELECT message_count FROM threads WHERE id = ?1", -1, &st,
                           NULL) != SQLITE_OK) {
        r = pst__sqlfail(s->db, err, "load messages");
        goto out;
    }
    sqlite3_bind_text(st, 1, thread_id, -1, SQLITE_STATIC);
    int rc = sqlite3_step(st);
    if (rc == SQLITE_DONE) {
        r = pst__fail(err, PST_ERR_NOT_FOUND, 0, "no such session: %s", thread_id);
        goto out;
    } else if (rc != SQLITE_ROW) {
        r = pst__sqlfail(s->db, err, "load messages");
        goto out;
    }
    expected = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    st = NULL;
    cap = expected > 0 ? (size_t)expected : 8;
    out->items = malloc(cap * sizeof *out->items);
    if (!out->items) {
        r = pst__fail(err, PST_ERR_NOMEM, 0, "out of memory");
        goto out;
    }
    if (sqlite3_prepare_v2(s->db,
                           "SELECT seq, role, content, meta, created_at FROM messages "
                           "WHERE thread_id = ?1 ORDER BY seq",
                           -1, &st, NULL) != SQLITE_OK) {
        r = pst__sqlfail(s->db, err, "load messages");
        goto out;
    }
    sqlite3_bind_text(st, 1, thread_id, -1, SQLITE_STATIC);
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        if (out->count == cap) {
            pst_message *grown = realloc(out->items, 2 * cap * sizeof *grown);
            if (!grown) {
                r = pst__fail(err, PST_ERR_NOMEM, 0, "out of memory");
                goto out;
            }
            out->items = grown;
            cap *= 2;
        }
        pst_message *m = &out->items[out->count];
        m->seq = sqlite3_column_int64(st, 0);
        m->role = dup_col(st, 1, NULL);
        m->content = dup_col(st, 2, NULL);
        m->meta = dup_col(st, 3, NULL);
        m->created_at = sqlite3_column_int64(st, 4);
        out->count++;
        if (!m->role || !m->content || (!m->meta && sqlite3_column_type(st, 3) != SQLITE_NULL)) {
            r = pst__fail(err, PST_ERR_NOMEM, 0, "out of memory");
            goto out;
        }
    }
    if (rc != SQLITE_DONE) r = pst__sqlfail(s->db, err, "load messages");
out:
    sqlite3_finalize(st);
    UNLOCK(s);
    if (r != PST_OK) pst_message_list_clear(out);
    return r;
}

pst_status pst_messages_count(pst_store *s, const char *thread_id, int64_t *count, pst_error *err) {
    pst__ok(err);
    if (!s || !id_ok(thread_id) || !count)
        return pst__fail(err, PST_ERR_ARG, 0, "bad count arguments");
    LOCK(s);
    sqlite3_stmt *st = NULL;
    pst_status r = PST_OK;
    if (sqlite3_prepare_v2(s->db, "SELECT message_count FROM threads WHERE id = ?1", -1, &st,
                           NULL) != SQLITE_OK) {
        r = pst__sqlfail(s->db, err, "count messages");
    } else {
        sqlite3_bind_text(st, 1, thread_id, -1, SQLITE_STATIC);
        int rc = sqlite3_step(st);
        if (rc == SQLITE_ROW)
            *count = sqlite3_column_int64(st, 0);
        else if (rc == SQLITE_DONE)
            r = pst__fail(err, PST_ERR_NOT_FOUND, 0, "no such session: %s", thread_id);
        else
            r = pst__sqlfail(s->db, err, "count messages");
    }
    sqlite3_finalize(st);
    UNLOCK(s);
    return r;
}
