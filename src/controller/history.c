/*
 * history.c — the session's stored identity and history state: rename, archive and
 * rewind (Peri's extension methods), and the hidden-row rule rewind leaves behind.
 *
 * Invariants: stored message rows are never rewritten or deleted here. A rewind records
 * the range of rows it drops in the thread's meta ("hidden": [[from_seq, to_seq], ...])
 * and makes the session live again from the rows that remain, so the new history state
 * is a new epoch and the old rows stay readable in the store. A refused turn's rows are
 * hidden by the same rule (pct__hide_rows, from turns.c), in the same epoch: the live
 * agent forgets the turn itself (pag_session_drop_turn). Every entry point refuses a
 * closing session ("Session is closing") and another machine's session (read-only).
 */
#include "controller/ctl_impl.h"

#include "peri/json.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define PCT_TITLE_MAX  200
#define PCT_REWIND_MAX 10000 /* a bound on the turns one rewind may name */

bool pct__row_hidden(const char *hidden, int64_t seq) {
    if (!hidden) return false;
    pj_t *arr = pj_loads(hidden, 0, NULL);
    bool h = false;
    size_t i;
    pj_t *r;
    pj_array_foreach(arr, i, r) {
        pj_int_t a = pj_integer_value(pj_array_get(r, 0));
        pj_int_t b = pj_integer_value(pj_array_get(r, 1));
        if (seq >= a && seq <= b) {
            h = true;
            break;
        }
    }
    pj_decref(arr);
    return h;
}

/* The hidden ranges of s with [from, to] appended (JSON text, malloc'd; s->mu held), or
 * NULL when out of memory. */
static char *hidden_plus(const pct_sess *s, int64_t from, int64_t to) {
    pj_t *arr = s->hidden ? pj_loads(s->hidden, 0, NULL) : pj_array();
    if (!pj_is_array(arr)) {
        pj_decref(arr);
        arr = pj_array();
    }
    if (arr && pj_array_append_new(arr, pj_pack("[I, I]", (pj_int_t)from, (pj_int_t)to)) != 0) {
        pj_decref(arr);
        return NULL;
    }
    char *txt = arr ? pj_dumps(arr, PJ_COMPACT) : NULL;
    pj_decref(arr);
    return txt;
}

int pct__hide_rows(pct_sess *s, int64_t from, int64_t to) {
    pthread_mutex_lock(&s->mu);
    char *txt = hidden_plus(s, from, to);
    if (txt) {
        free(s->hidden);
        s->hidden = txt;
    }
    pthread_mutex_unlock(&s->mu);
    if (!txt) return -1;
    return pct__save_meta(s) == 0 ? 0 : -2;
}

/* The session to change: live (then open and writable) or, when not live, stored and
 * this machine's. *s receives the live session (or NULL). */
static pct_status target(pct_controller *c, const char *id, pct_sess **s, pct_error *err) {
    *s = pct__sess_get(c, id);
    if (*s) {
        pct_status rc = pct__sess_guard(*s, err);
        if (rc == PCT_OK) rc = pct__sess_writable(*s, err);
        /* rename and archive change the listing, not the history: fine for a session
         * in another history format, which is this machine's */
        if (rc == PCT_OLD_FORMAT) rc = PCT_OK;
        if (rc != PCT_OK) {
            pct__sess_release(*s);
            *s = NULL;
        }
        return rc;
    }
    if (pct__check_owner(c, id, err) != PCT_OK) return PCT_FOREIGN;
    pst_thread th;
    if (!id || pst_thread_get(c->store, id, &th, NULL) != PST_OK) {
        err->status = PCT_NOT_FOUND;
        snprintf(err->message, sizeof err->message, "Session not found: %.100s", id ? id : "");
        return PCT_NOT_FOUND;
    }
    pst_thread_clear(&th);
    return PCT_OK;
}

pct_status pct_session_rename(pct_controller *c, const char *id, const char *title,
                              pct_error *err) {
    size_t n = title ? strlen(title) : 0;
    if (n == 0 || n > PCT_TITLE_MAX)
        return pct__fail(err, PCT_BAD_ARG, "title must be a string of 1 to 200 bytes");
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)title[i] < 0x20 || title[i] == 0x7f)
            return pct__fail(err, PCT_BAD_ARG, "title must not contain control characters");
    pct_sess *s;
    pct_status rc = target(c, id, &s, err);
    if (rc != PCT_OK) return rc;
    pst_error pe;
    if (pst_thread_rename(c->store, id, title, &pe) != PST_OK) {
        pct__sess_release(s);
        return pct__fail(err, PCT_FAILED, "store: the title could not be saved");
    }
    if (s) {
        s->titled = true;                    /* the first prompt no longer names it */
        atomic_store(&s->titled_now, false); /* nor does a refusal take this name back */
        pag_event ev = {.kind = PAG_EV_SESSION_INFO, .title = title, .used = pb_wall_ms()};
        pct__emit(s, &ev);
        pct__sess_release(s);
    }
    return PCT_OK;
}

pct_status pct_session_archive(pct_controller *c, const char *id, bool archived, pct_error *err) {
    pct_sess *s;
    pct_status rc = target(c, id, &s, err);
    if (rc != PCT_OK) return rc;
    pst_error pe;
    if (pst_thread_set_archived(c->store, id, archived, &pe) != PST_OK)
        rc = pct__fail(err, PCT_FAILED, "store: the archive flag could not be saved");
    pct__sess_release(s);
    return rc;
}

/* The range of rows the last `turns` turns occupy among the visible rows: a turn starts
 * at a user-role row. 0 with from, to and dropped (the turns found) set, 1 when there is
 * nothing to drop, -1 on a store failure. */
static int rewind_range(pct_controller *c, const char *id, const char *hidden, int turns,
                        int64_t *from, int64_t *to, int *dropped) {
    pst_message_list ml;
    pst_error pe;
    if (pst_messages_load(c->store, id, &ml, &pe) != PST_OK) return -1;
    *dropped = 0;
    *from = *to = 0;
    for (size_t i = ml.count; i-- > 0 && *dropped < turns;) {
        const pst_message *m = &ml.items[i];
        if (pct__row_hidden(hidden, m->seq)) continue;
        if (!*to) *to = m->seq;
        if (m->role && !strcmp(m->role, "user")) {
            (*dropped)++;
            *from = m->seq;
        }
    }
    pst_message_list_clear(&ml);
    return *dropped > 0 ? 0 : 1;
}

pct_status pct_session_rewind(pct_controller *c, const char *id, int turns, int *dropped,
                              pct_error *err) {
    *dropped = 0;
    if (turns < 1 || turns > PCT_REWIND_MAX)
        return pct__fail(err, PCT_BAD_ARG, "turns must be an integer from 1 to 10000");
    pct_sess *s = pct__sess_get(c, id);
    if (!s) {
        /* Only a live session is rewound: it is idle here and its next load sees it. */
        if (pct__check_owner(c, id, err) != PCT_OK) return PCT_FOREIGN;
        err->status = PCT_NOT_FOUND;
        snprintf(err->message, sizeof err->message, "Session not found: %.100s", id ? id : "");
        return PCT_NOT_FOUND;
    }
    pct_status rc = pct__sess_guard(s, err);
    if (rc == PCT_OK) rc = pct__sess_writable(s, err);
    if (rc == PCT_OK) {
        pthread_mutex_lock(&s->mu);
        bool busy = s->running || s->qhead != NULL;
        pthread_mutex_unlock(&s->mu);
        if (busy)
            rc = pct__fail(err, PCT_BUSY,
                           "Session is active: wait for its prompts to finish (or cancel them) "
                           "before rewinding");
    }
    int64_t from = 0, to = 0;
    int found = 0;
    if (rc == PCT_OK) {
        int r = rewind_range(c, id, s->hidden, turns, &from, &to, &found);
        if (r < 0) rc = pct__fail(err, PCT_FAILED, "store: the history could not be read");
        if (r > 0) { /* nothing to drop: the history state stays as it is */
            pct__sess_release(s);
            return PCT_OK;
        }
    }
    char *mcp = NULL;
    if (rc == PCT_OK) {
        /* The new state: the old ranges plus this one, kept with the session's meta. */
        mcp = s->mcp_json ? strdup(s->mcp_json) : NULL;
        if ((s->mcp_json && !mcp) || pct__hide_rows(s, from, to) == -1)
            rc = pct__fail(err, PCT_FAILED, "out of memory");
    }
    pct__sess_release(s);
    if (rc != PCT_OK) {
        free(mcp);
        return rc;
    }
    /* Live again from the remaining rows: close this instance, open a new one. */
    rc = pct_close(c, id, err);
    if (rc == PCT_OK) rc = pct_session_load_mcp(c, id, false, mcp, NULL, err);
    if (rc == PCT_OK) pct_session_answered(c, id); /* the client knows it: status may follow */
    free(mcp);
    if (rc == PCT_OK) *dropped = found;
    return rc;
}
