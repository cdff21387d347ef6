/*
 * session_impl.h — the pag_session layout, shared by session.c (aggregate,
 * history, replay) and loop.c (the RCRA turn). Internal to src/agent/.
 */
#ifndef PAG_SESSION_IMPL_H
#define PAG_SESSION_IMPL_H

#include "agent/middleware/chain.h"
#include "peri/agent.h"

struct pag_session {
    char *id, *cwd, *system_prompt; /* owned */
    int64_t budget;
    int max_steps;
    pag_ports ports;
    pm_message *hist; /* model-facing history, owned */
    size_t nhist, caphist;
    atomic_int cancel;
    atomic_int *cancelp; /* &cancel, or a parent's flag for a subagent */
    atomic_int mode;     /* pag_mode */
    size_t view;         /* the model sees hist[view..nhist) */
    _Atomic uint64_t turn_gen;
    /* Last usage report: the model said hist[0..usage_at) cost usage_tokens. */
    int64_t usage_tokens;
    size_t usage_at;
    pag__chain chain; /* the middlewares, in the production order (read-only once built) */
    bool started;     /* SessionStart passed (turn thread only) */
};

/* Moves *m into the history (m is left empty). 0, or -1 when out of memory. */
int pag__hist_push(struct pag_session *s, pm_message *m);
const pag_tool_info *pag__tool_find(const struct pag_session *s, const char *name);

#endif
