/*
 * ctl_impl.h — controller internals shared by controller.c (composition, session
 * lifecycle, ports) and turns.c (prompt workers, cancel, close). Internal.
 */
#ifndef PCT_IMPL_H
#define PCT_IMPL_H

#include "peri/place.h"
#include "peri/controller.h"
#include "peri/mcp.h"
#include "peri/runtime.h"
#include "peri/tools.h"

#include <pthread.h>

typedef enum sess_state { SESS_OPEN = 0, SESS_CLOSING, SESS_CLOSED } sess_state;

typedef struct pct_sess {
    atomic_int refs;
    pct_controller *c;
    char id[PST_ID_LEN];
    char *cwd;
    pag_session *agent;
    pm_config model_cfg; /* strings borrowed from the controller's settings */
    pm_client *client;   /* created at the first model call (idle sessions stay small) */
    char model_missing[512];
    pthread_mutex_t mu; /* state, running, workers, current prompt */
    pthread_cond_t cv;
    sess_state state;
    bool running;
    int workers;                   /* prompt workers alive (running + queued) */
    struct pct_job *qhead, *qtail; /* prompts not yet started, in arrival order */
    bool cancel_next;              /* a cancel arrived before the head prompt started */
    void *cur_token;               /* the running prompt's token */
    bool cur_answered;             /* its answer went out (cancel answers early) */
    /* Serialises emission, stamping and prompt answers of this session. */
    pthread_mutex_t emit_mu;
    uint64_t gate_gen; /* events of turns <= gate_gen are dropped */
    bool titled;
    pmcp_pool *mcp;       /* MCP servers of this session (issue 12); closed on release */
    pag_tool_info *tools; /* builtin + MCP tools; the agent's ports point here */
    size_t ntools;
    ptl_client_fs client_fs; /* issue 12: files through the ACP client when offered */
} pct_sess;

struct pct_controller {
    pst_store *store;
    prt_runtime *rt;
    const pag_settings *settings;
    pct_sink sink;
    char machine_id[PST_ID_LEN];
    pag_tool_info *tools;
    size_t ntools;
    char *home; /* for the user's settings.json (MCP servers) */
    /* Issue 11: code runs through placement (room first, native sandbox when needed). */
    pr_host *room;
    pr_ruby *ruby;
    pl_ruby_hook ruby_hook;
    pl_ctx *place;
    pl_policy policy;
    ptl_sandbox sandbox;
    pthread_mutex_t mu; /* workers count */
    pthread_cond_t cv;
    int workers;
};

void pct_sess_retain(void *h);
void pct_sess_release(pct_sess *s);
pct_sess *pct_sess_get(pct_controller *c, const char *id);
/* Emits through the gate and the runtime's stamp (takes emit_mu). */
void pct_emit(pct_sess *s, pag_event *ev);

#endif
