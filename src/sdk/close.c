/*
 * close.c — closing a session: a bounded replay of session/close.
 *
 * Rules (seed 000, contract 3; research §1.5), each tested in tests/sdk/test_sdk.c:
 *   - the budget is checked before anything is sent: negative or above 2^53-1 is an
 *     argument error; 0 means exactly one attempt; default 3000 ms;
 *   - only -32010 answers are replayed, after sleeping min(50 ms, remaining);
 *   - any other failure is returned unchanged, unless an incomplete attempt came
 *     first: then SESSION_CLOSE_INCOMPLETE carrying both causes;
 *   - budget exhausted: SESSION_CLOSE_INCOMPLETE "Session close is incomplete: <last
 *     message>"; the session and the transport stay open, close may be called again;
 *   - a closed session sends nothing; concurrent closes share one operation (one
 *     request stream) and every caller gets its result.
 * An incomplete close is reported as incomplete: never as closed or stopped.
 */
#include "sdk/sdk_int.h"

#include <stdio.h>
#include <string.h>

#define MAX_SAFE_INTEGER 9007199254740991LL /* 2^53 - 1 */

static void to_cause(psdk_cause *c, const psdk_error *e) {
    c->status = e->status;
    c->rpc_code = e->rpc_code;
    snprintf(c->message, sizeof c->message, "%.318s", e->message);
}

static psdk_status incomplete(psdk_error *out, const psdk_error *last) {
    psdk__fail(out, PSDK_ERR_SESSION_CLOSE_INCOMPLETE, "Session close is incomplete: %s",
               last->message);
    return PSDK_ERR_SESSION_CLOSE_INCOMPLETE;
}

/* One close operation: the replay loop. */
static psdk_status close_op(psdk_session *s, int64_t budget_ms, psdk_error *out) {
    psdk_agent *a = s->a;
    int64_t deadline = pb_mono_us() + budget_ms * 1000; /* us: never give up early */
    bool had_incomplete = false;
    psdk_cause first = {0};
    for (;;) {
        psdk_error e;
        pj_t *params = pj_pack("{s:s}", "sessionId", s->id);
        psdk_status rc =
            psdk__rpc(a, "session/close", params, a->sb->answer_timeout_ms, NULL, NULL, &e);
        if (rc == PSDK_OK) {
            psdk__ok(out);
            return PSDK_OK;
        }
        if (rc == PSDK_ERR_RPC && e.rpc_code == PSDK_RPC_CLOSE_INCOMPLETE) {
            had_incomplete = true;
            to_cause(&first, &e);
            int64_t remaining = deadline - pb_mono_us();
            if (remaining <= 0) {
                incomplete(out, &e);
                out->ncauses = 1;
                to_cause(&out->causes[0], &e);
                return PSDK_ERR_SESSION_CLOSE_INCOMPLETE;
            }
            int64_t replay_us = (int64_t)PSDK_CLOSE_REPLAY_MS * 1000;
            pb_sleep_us(remaining < replay_us ? remaining : replay_us);
            continue;
        }
        if (!had_incomplete) {
            if (out) *out = e; /* unchanged */
            return rc;
        }
        /* A different failure after an incomplete attempt: still incomplete, and
         * both causes are kept. */
        incomplete(out, &e);
        out->ncauses = 2;
        out->causes[0] = first;
        to_cause(&out->causes[1], &e);
        return PSDK_ERR_SESSION_CLOSE_INCOMPLETE;
    }
}

psdk_status psdk_session_close(psdk_session *s, int64_t budget_ms, psdk_error *err) {
    psdk_error local;
    if (!err) err = &local;
    psdk__ok(err);
    if (!s) return psdk__fail(err, PSDK_ERR_ARG, "no session");
    if (budget_ms < 0 || budget_ms > MAX_SAFE_INTEGER)
        return psdk__fail(err, PSDK_ERR_ARG,
                          "close budget must be a non-negative safe integer of milliseconds, "
                          "got %lld",
                          (long long)budget_ms);
    psdk_agent *a = s->a;
    if (psdk__on_reader(a))
        return psdk__fail(err, PSDK_ERR_STATE,
                          "session close called from an SDK callback would deadlock");
    pthread_mutex_lock(&a->mu);
    if (s->closed) { /* a no-op: nothing is sent */
        pthread_mutex_unlock(&a->mu);
        return PSDK_OK;
    }
    if (s->closing) { /* join the running operation and share its result */
        uint64_t gen = s->close_gen;
        while (s->close_gen == gen)
            pthread_cond_wait(&a->cv, &a->mu);
        psdk_status rc = s->close_rc;
        *err = s->close_err;
        pthread_mutex_unlock(&a->mu);
        return rc;
    }
    s->closing = true;
    pthread_mutex_unlock(&a->mu);

    psdk_error e;
    psdk_status rc = close_op(s, budget_ms, &e);

    pthread_mutex_lock(&a->mu);
    s->closing = false;
    s->close_rc = rc;
    s->close_err = e;
    s->close_gen++;
    if (rc == PSDK_OK) s->closed = true; /* settled: prompt waiters end as cancelled */
    psdk__wake_locked(a);
    pthread_mutex_unlock(&a->mu);
    *err = e;
    return rc;
}
