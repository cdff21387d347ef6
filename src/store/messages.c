/*
 * messages.c — the rules for a thread's transcript: atomic batch append (an assistant
 * message and its tool results commit together or not at all), ordered load, count.
 *
 * Sequence numbering: one transaction does
 *   UPDATE threads SET next_seq = next_seq + n ... WHERE id = $1 <owner guard> RETURNING
 * then inserts the n messages at the returned range. The UPDATE takes the thread's row
 * lock (PostgreSQL) / the write lock (SQLite BEGIN IMMEDIATE) first, so concurrent writers
 * from any number of processes queue on it: no seq is lost or handed out twice, and a
 * batch is never interleaved with another.
 */
#include "store_int.h"
#include "peri/base.h"

#include <stdlib.h>
#include <string.h>

#define LOCK(s)   pthread_mutex_lock(&(s)->mu)
#define UNLOCK(s) pthread_mutex_unlock(&(s)->mu)

static bool id_ok(const char *id) {
    return id && *id && strlen(id) < PST_ID_LEN;
}

static pst_status take_i64(void *ctx, const psb_row *row, pst_error *err) {
    PSB_NEED_COLS(row, 1, err);
    int64_t *v = ctx;
    *v = pst__i64(row->col[0]);
    return PST_OK;
}

/* Each message's INSERT, in both append paths: its seq is taken from the thread's
 * next_seq after the UPDATE that reserved the range ($2 = how far from its end), and a
 * foreign or missing thread yields NULL, which seq NOT NULL refuses. */

/* pst__sql_message_insert's parameters for message m, from_end places before the range's end. */
static void insert_params(psb_val p[7], const pst_store *s, const char *thread_id,
                          const pst_message_in *m, size_t from_end, int64_t now) {
    p[0] = PSB_T(thread_id);
    p[1] = PSB_I((int64_t)from_end);
    p[2] = PSB_T(m->role);
    p[3] = PSB_T(m->content);
    p[4] = PSB_T(m->meta);
    p[5] = PSB_I(now);
    p[6] = pst__owner_param(s);
}

static pst_status append_locked(pst_store *s, const char *thread_id, const pst_message_in *msgs,
                                size_t n, int64_t *first, pst_error *err) {
    int64_t now = pst__now_ms(), seq = -1;
    if (n == 0) { /* nothing to write: report where the next message would go */
        psb_val p[] = {PSB_T(thread_id)};
        pst_status r = PSB_EXEC(s, pst__sql_thread_next_seq, p, take_i64, &seq, NULL, NULL, err);
        if (r != PST_OK) return pst__ctx(err, r, "append messages");
        if (seq < 0) return pst__fail(err, PST_ERR_NOT_FOUND, 0, "no such session: %s", thread_id);
        *first = seq;
        return PST_OK;
    }
    /* One transaction, one round trip on PostgreSQL (pipeline): the UPDATE reserves the
     * range, each INSERT takes its seq from the updated row (same guard: a foreign or
     * missing thread yields NULL and the batch fails on seq NOT NULL). */
    enum { MAXB = 64 };
    size_t chunk = n <= MAXB ? n : MAXB;
    psb_stmt st[MAXB + 1];
    psb_val up[] = {PSB_T(thread_id), PSB_I((int64_t)n), PSB_I(now), pst__owner_param(s)};
    st[0] = (psb_stmt){pst__sql_message_reserve, up, 4};
    if (n > MAXB) { /* large batches: an explicit transaction, statement by statement */
        pst_status r = s->ops->begin(s->be, err);
        if (r != PST_OK) return pst__ctx(err, r, "begin append");
        r = s->ops->exec(s->be, st[0].sql, up, 4, take_i64, &seq, NULL, NULL, err);
        for (size_t i = 0; i < n && r == PST_OK && seq >= 0; i++) {
            psb_val p[7];
            insert_params(p, s, thread_id, &msgs[i], n - i, now);
            psb_violation v;
            r = s->ops->exec(s->be, pst__sql_message_insert, p, 7, NULL, NULL, NULL, &v, err);
            if (r == PST_ERR_ARG && v == PSB_V_CHECK) pst__bad_message(err, r, i);
        }
        if (r == PST_OK && seq < 0) {
            s->ops->rollback(s->be);
            r = pst__thread_owner_check(s, thread_id, err);
            return r == PST_OK
                       ? pst__fail(err, PST_ERR_NOT_FOUND, 0, "no such session: %s", thread_id)
                       : r;
        }
        if (r == PST_OK) r = s->ops->commit(s->be, err);
        if (r != PST_OK) {
            s->ops->rollback(s->be);
            return r;
        }
        *first = seq;
        return PST_OK;
    }
    psb_val ins[MAXB][7];
    for (size_t i = 0; i < chunk; i++) {
        insert_params(ins[i], s, thread_id, &msgs[i], n - i, now);
        st[i + 1] = (psb_stmt){pst__sql_message_insert, ins[i], 7};
    }
    int failed_at = -1;
    psb_violation v = PSB_V_NONE;
    pst_status r = s->ops->batch(s->be, st, (int)chunk + 1, take_i64, &seq, &failed_at, &v, err);
    if (r == PST_ERR_CONN || r == PST_ERR_NOMEM) return pst__ctx(err, r, "append messages");
    if (r != PST_OK || seq < 0) {
        /* missing or foreign thread first; else the failing message's own fault */
        pst_error own;
        pst_status o = pst__thread_owner_check(s, thread_id, &own);
        if (o != PST_OK) {
            if (err) *err = own;
            return o;
        }
        if (r == PST_OK) return pst__fail(err, PST_ERR_IO, 0, "append: no sequence reserved");
        if (r == PST_ERR_ARG && v == PSB_V_CHECK && failed_at >= 1)
            return pst__bad_message(err, r, (size_t)(failed_at - 1));
        return pst__ctx(err, r, "append messages");
    }
    *first = seq;
    return PST_OK;
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
    int64_t first = 0;
    pst_status r = pst__write_ok(s, err);
    if (r == PST_OK) r = append_locked(s, thread_id, msgs, n, &first, err);
    UNLOCK(s);
    if (r == PST_OK && first_seq) *first_seq = first;
    return r;
}

pst_status pst_messages_load(pst_store *s, const char *thread_id, pst_message_list *out,
                             pst_error *err) {
    pst__ok(err);
    if (out) memset(out, 0, sizeof *out);
    if (!s || !id_ok(thread_id) || !out)
        return pst__fail(err, PST_ERR_ARG, 0, "bad load arguments");
    LOCK(s);
    int64_t count = -1;
    psb_val p[] = {PSB_T(thread_id)};
    pst_status r = PSB_EXEC(s, pst__sql_message_count, p, take_i64, &count, NULL, NULL, err);
    pst__msg_fill f = {.out = out};
    if (r == PST_OK && count < 0)
        r = pst__fail(err, PST_ERR_NOT_FOUND, 0, "no such session: %s", thread_id);
    if (r == PST_OK && count > 0) {
        f.cap = (size_t)count;
        out->items = malloc(f.cap * sizeof *out->items);
        if (!out->items) r = pst__fail(err, PST_ERR_NOMEM, 0, "out of memory");
    }
    if (r == PST_OK)
        r = PSB_EXEC(s, pst__sql_message_load, p, pst__take_message, &f, NULL, NULL, err);
    UNLOCK(s);
    if (r == PST_OK) return PST_OK;
    pst_message_list_clear(out); /* nothing half-loaded is handed out */
    return pst__ctx(err, r, "load messages");
}

pst_status pst_messages_count(pst_store *s, const char *thread_id, int64_t *count, pst_error *err) {
    pst__ok(err);
    if (!s || !id_ok(thread_id) || !count)
        return pst__fail(err, PST_ERR_ARG, 0, "bad count arguments");
    LOCK(s);
    int64_t n = -1;
    psb_val p[] = {PSB_T(thread_id)};
    pst_status r = PSB_EXEC(s, pst__sql_message_count, p, take_i64, &n, NULL, NULL, err);
    UNLOCK(s);
    if (r != PST_OK) return pst__ctx(err, r, "count messages");
    if (n < 0) return pst__fail(err, PST_ERR_NOT_FOUND, 0, "no such session: %s", thread_id);
    *count = n;
    return PST_OK;
}
