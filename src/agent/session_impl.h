/*
 * session_impl.h — the pag_session layout, shared by session.c (aggregate,
 * history, replay), turn.c (the RCRA turn as a state machine) and loop.c (its native
 * driver, /compact and /clear). Internal to src/agent/.
 */
#ifndef PAG_SESSION_IMPL_H
#define PAG_SESSION_IMPL_H

#include "agent/middleware/chain.h"
#include "peri/agent.h"

#ifndef __wasi__
#include <pthread.h>
#else
/* wasm32-wasi (the agent module) runs one thread and has no <pthread.h>; sys/types.h
 * gives the mutex type. With one thread a mutex is never contended, so these forms are
 * exact: init, lock, unlock and destroy always succeed. */
#include <sys/types.h>
static inline int pthread_mutex_init(pthread_mutex_t *m, const void *a) {
    (void)m;
    (void)a;
    return 0;
}
static inline int pthread_mutex_destroy(pthread_mutex_t *m) {
    (void)m;
    return 0;
}
static inline int pthread_mutex_lock(pthread_mutex_t *m) {
    (void)m;
    return 0;
}
static inline int pthread_mutex_unlock(pthread_mutex_t *m) {
    (void)m;
    return 0;
}
#endif

struct pag_session {
    char *id, *cwd, *system_prompt; /* owned */
    int64_t budget;
    int max_steps;
    double auto_compact; /* fraction of budget that triggers a summary before a turn; 0: off */
    pag_ports ports;
    pm_message *hist; /* model-facing history, owned */
    size_t nhist, caphist;
    atomic_int cancel;
    atomic_int *cancelp; /* &cancel, or a parent's flag for a subagent */
    atomic_int mode;     /* pag_mode */
    size_t view;         /* the model sees hist[view..nhist) */
    /* hist[turn_start] is the user message of the last turn that kept one (SIZE_MAX:
     * none since that turn began, or it was dropped): what pag_session_drop_turn takes
     * away after a refusal. Turn thread only. */
    size_t turn_start;
    _Atomic uint64_t turn_gen;
    /* Last usage report: the model said hist[0..usage_at) cost usage_tokens. */
    int64_t usage_tokens;
    size_t usage_at;
    /* The session's standing goal (middleware/goal.c): text (owned, NULL = none) and
     * whether the model declared it met; under goal_mu (commands, the tool and the
     * loop's system note run on the worker, meta saving elsewhere). */
    pthread_mutex_t goal_mu;
    char *goal;
    bool goal_met;
    pag__chain chain; /* the middlewares, in the production order (read-only once built) */
    bool started;     /* SessionStart passed (turn thread only) */
};

/* middleware/goal.c: the goal's state in a new session (0, or -1 when its mutex cannot
 * be made), its release with the session, and its note for the system prompt
 * (malloc'd) or NULL. */
int pag__goal_init(struct pag_session *s);
void pag__goal_free(struct pag_session *s);
char *pag__goal_note(struct pag_session *s);

/* Moves *m into the history (m is left empty). 0, or -1 when out of memory. */
int pag__hist_push(struct pag_session *s, pm_message *m);
const pag_tool_info *pag__tool_find(const struct pag_session *s, const char *name);

/* turn.c: what the resumable turn shares with /compact and /clear (loop.c): an event
 * stamped with the turn generation, a failed result, a model failure's result, and the
 * cancel flag. */
void pag__emit(struct pag_session *s, uint64_t gen, pag_event *ev);
void pag__fail(pag_turn_result *out, const char *kind, long http, const char *msg);
void pag__model_failure(pag_turn_result *out, pm_status st, const pm_error *err);
bool pag__cancelled(const struct pag_session *s);

/* compact.c: the model-written summary behind /compact and automatic compaction.
 * Asks the model to summarize hist[view..nhist) (focus: the user's instructions, may be
 * NULL). PM_OK with *summary (malloc'd, caller frees), else the model's status and err. */
pm_status pag__summarize(struct pag_session *s, const char *focus, char **summary, pm_error *err);
/* The summary request itself, for the blocking pag__summarize and the resumable turn:
 * the view plus one question (owned), borrowed history messages. */
typedef struct pag__summary {
    pm_request req;
    pm_message *msgs; /* owned array: borrowed history views, then the owned question */
    size_t nmsgs;
} pag__summary;
/* 0, or -1 when out of memory. Free with pag__summary_free. */
int pag__summary_request(const struct pag_session *s, const char *focus, pag__summary *out);
void pag__summary_free(pag__summary *sr);
/* The summary text of a finished summary call (st: the call's status): PM_OK with
 * *summary (malloc'd), else st or PM_ERR_PROTOCOL for an empty summary (err says so). */
pm_status pag__summary_text(pm_status st, const pm_response *resp, char **summary, pm_error *err);
/* The token estimate of the model's view plus extra (usage reports are truth for the
 * prefix they covered). */
int64_t pag__view_tokens(const struct pag_session *s, const pm_message *extra);

#endif
