/*
 * chain.h — the session's middleware chain, shared by chain.c (the production order and
 * the runner), the agent's own middlewares in this folder and src/agent/ (session.c
 * builds the chain, loop.c passes the hook points). Internal to src/agent/.
 *
 * Invariant: chain->slot[i] is the middleware at position i of the production order
 * (pag_chain_order), mounted or not; nothing reorders it after pag__chain_build.
 */
#ifndef PAG_MW_CHAIN_H
#define PAG_MW_CHAIN_H

#include "peri/agent.h"

#define PAG__CHAIN_MAX 16

typedef struct pag__chain {
    pag_middleware slot[PAG__CHAIN_MAX]; /* by production position; name NULL = empty */
    size_t n;                            /* length of the production order */
} pag__chain;

/* One entry of the production order: its name, what it declares (tools, prompt), and,
 * for the agent's own middlewares, the function that mounts it on a session (NULL: the
 * host mounts it through pag_ports.middlewares). */
typedef struct pag__mw_decl {
    const char *name;
    const pag_tool_info *tools; /* ends with a NULL name; NULL when none */
    const char *prompt;
    int (*mount)(pag_session *s, pag_middleware *out);
} pag__mw_decl;

/* Fills c from the host's middlewares and the agent's own. 0, or -1 when a name is
 * unknown or given twice (nothing is mounted then). */
int pag__chain_build(pag__chain *c, pag_session *s, const pag_middleware *mws, size_t n);
/* Runs the hook point through the chain (before: in order, stopping at the first deny;
 * after: in reverse order, every middleware). */
void pag__chain_run(const pag__chain *c, const pag_hook_call *call, pag_hook_answer *ans);

/* The agent's own middlewares (their files in this folder). */
int pag__permission_mount(pag_session *s, pag_middleware *out);
/* The tools the middlewares declare (decl.c), each ending with a NULL name. */
extern const pag_tool_info pag__subagent_tools[];
extern const pag_tool_info pag__skills_tools[];
extern const pag_tool_info pag__goal_tools[];
extern const pag_tool_info pag__cron_tools[];
extern const pag_tool_info pag__askuser_tools[];
extern const pag_tool_info pag__tasks_tools[];

#endif
