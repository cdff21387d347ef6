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

typedef struct pct_old_tools { /* a replaced session tool array */
    struct pct_old_tools *next;
    pag_tool_info *tools;
} pct_old_tools;

typedef enum sess_state { SESS_OPEN = 0, SESS_CLOSING, SESS_CLOSED } sess_state;

typedef struct pct_task pct_task; /* a background task (tasks.c) */

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
    int workers;   /* prompt workers alive (running + queued) */
    int finishing; /* of those, the ones whose prompt is answered (cleaning up): a close
                      does not count them as an active turn */
    struct pct_job *qhead, *qtail; /* prompts not yet started, in arrival order */
    bool cancel_next;              /* a cancel arrived before the head prompt started */
    void *cur_token;               /* the running prompt's token */
    bool cur_answered;             /* its answer went out (cancel answers early) */
    /* Serialises emission, stamping and prompt answers of this session. */
    pthread_mutex_t emit_mu;
    uint64_t gate_gen; /* events of turns <= gate_gen are dropped */
    bool titled;
    /* The running turn (worker thread only): the text that names an untitled session
     * once the turn stores its user message (borrowed; NULL: this turn names nothing),
     * whether this turn named it (a rename clears it, from any thread), and the stored
     * rows of the turn from its user message on (first/last seq; 0: none), which a
     * refusal hides. */
    const char *title_src;
    atomic_bool titled_now;
    int64_t kept_from, kept_to;
    pmcp_pool *mcp; /* the builtin Workspace server (configured servers: ext); closed on release */
    pag_tool_info *tools; /* builtin + MCP tools; the agent's ports point here */
    size_t ntools;
    /* Tool arrays replaced after a server's tools/list_changed (worker thread only),
     * kept until release like the pool's old tables. */
    struct pct_old_tools *old_tools;
    /* the context the builtin tools run with, inside the pool's in-process
     * Workspace server (cwd, client fs, client terminal, sandbox; cancel per call). */
    ptl_ctx tool_ctx;
    ptl_client_fs client_fs;     /* files through the ACP client when offered */
    ptl_client_term client_term; /* shell in the client's terminal */
    /* ---- editor features (guarded by mu unless noted) */
    char *frozen;        /* frozen context text, owned (immutable after creation) */
    char *model_spec;    /* chosen "provider:model", owned; NULL = settings default */
    char *model_applied; /* the spec the agent uses now, owned (worker thread only) */
    char **allow_always, **reject_always; /* tools remembered for the session, owned */
    size_t nallow, nreject;
    double cost_usd;    /* session cost so far (emit_mu) */
    char cur_call[128]; /* id of the tool call being run (worker thread only) */
    /* ---- another machine's session opened read-only (replay only).
     * Immutable after make_live. No tool pool, no model call, and nothing is written to
     * the store for it: every writing entry point refuses it naming `owner`. */
    bool read_only;
    char owner[PST_ID_LEN];
    /* The history format of the stored thread (immutable after make_live). Not
     * PCT_HISTORY_FORMAT: read_only too, and the writing entry points say so instead of
     * naming an owner. */
    int format;
    /* Project trust (worker thread only after make_live): the digest of the trusted
     * project configuration in force (its hooks installed, its servers in this session's
     * pool; "" = none), the digest whose servers the pool already holds (set by
     * pct__mcp_open for content trusted before the session: the first turn then installs
     * only its hooks), and the digest the user was last asked about, so that a changed
     * file asks again. */
    char project_on[PAG_TRUST_DIGEST_HEX];
    char servers_on[PAG_TRUST_DIGEST_HEX];
    char trust_asked[PAG_TRUST_DIGEST_HEX];
    atomic_int trust_cancel; /* set by a cancel while the trust question is open */
    /* ---- event identity. epoch: immutable after make_live (kept in the thread's meta,
     * one more each time a process makes the session live). turn_seq / attempt_seq:
     * counters of accepted prompts and started runs in this epoch (mu). cur_*: the running
     * attempt, written under emit_mu and mu, read under either. */
    uint64_t epoch;
    uint64_t turn_seq, attempt_seq;
    uint64_t cur_gen; /* the agent's turn generation of the running attempt, 0 = none */
    char cur_turn_id[48], cur_attempt_id[48];
    /* the running turn's telemetry (worker thread only): start, model calls, tokens */
    int64_t tel_start_ms, tel_in, tel_out, tel_calls;
    /* Rewound history (mu; set at make_live and by a rewind): JSON text of [[from_seq, to_seq],
     * ...], the stored rows no longer part of the history (owned, NULL = none). Kept in the
     * thread's meta ("hidden"). */
    char *hidden;
    char *mcp_json; /* the client's mcpServers of this session (owned, NULL = none) */
    /* ---- configured MCP servers, started in the background (mcp_start.c). mu guards
     * ext, mcp_pending, mcp_report, answered, mcp_errors and mcp_final; mcp_names is
     * immutable once the connector started; ext_built is the worker's (the ext its tool
     * list was built from). */
    pmcp_pool *ext;       /* the configured servers' pool; NULL while they start */
    bool mcp_pending;     /* the connector is still starting them */
    bool mcp_report;      /* the final status is still to be sent */
    bool answered;        /* the client has the answer that named this session */
    char *mcp_names;      /* JSON array of the names starting (owned) */
    char *mcp_errors;     /* notice lines (owned, NULL = none) */
    char *mcp_final;      /* JSON array of {"name", "status"} once started (owned) */
    pmcp_pool *ext_built; /* worker thread only */
    /* OAuth of remote servers: the options the pool borrows (dir owned), and the stop
     * flag a close raises so a pending login ends at once. */
    pmcp_oauth_opts oauth;
    atomic_int oauth_stop;
    /* Scheduled prompts of this live instance (cron middleware; NULL for a read-only
     * session). Stopped when close begins, freed with the session; never revived. */
    pag_cron *cron;
    /* ---- honest close (turns.c) */
    atomic_int subagents;    /* subagents running in this session's turn */
    atomic_bool persist_bad; /* a history write failed: what the store holds is unknown */
    int64_t close_intent_ms; /* when close began (mu); kept in the meta as "closeIntent" */
    const pag_settings *settings_applied; /* the version model_cfg was taken from (worker) */
    /* Config options beside mode and model (mu; kept in the meta): the thinking effort
     * ("" = off, "low", "medium", "high") and the 1M context, each used only while the
     * current model supports it; ctx1m_applied: what model_cfg was built with (worker). */
    char effort[8];
    bool ctx1m, ctx1m_applied;
    /* ---- middlewares mounted on the agent (middlewares.c); set before the agent exists */
    pag_hooks *hooks;
    pag_middleware mws[8];
    /* raised by a cancel of the running turn (and by close): ends a question an MCP
     * server's elicitation opened (the ask_user tool follows its call's own flag) */
    atomic_int hitl_cancel;
    /* background tasks of this live session (tasks.c; guarded by mu) */
    pct_task *tasks;
    int live_tasks;
    unsigned task_seq;
} pct_sess;

/* Before a turn: when the project's configuration needs trust and the user has not
 * decided on this exact content in this session, says so and asks (through the sink's
 * permission broker); a trusted configuration's servers are started in the pool. Runs on
 * the prompt's worker thread, never on the request thread. */
void pct__trust_before_turn(pct_sess *s, uint64_t turn);
/* MCP (mcp_start.c): opens the builtin pool and starts the configured servers in the
 * background (0, or -1 when even the builtin pool cannot open); *notices (may be NULL)
 * receives what is known at once. pct__mcp_ext: the configured servers' pool or NULL
 * while they start. pct__mcp_wait: a turn's worker waits for them (cancel of turn gen or
 * close ends the wait). pct__mcp_status: {"servers", "errors"} JSON text (malloc'd). */
int pct__mcp_open(pct_sess *s, const char *mcp_json, char **notices);
pmcp_pool *pct__mcp_ext(pct_sess *s);
void pct__mcp_wait(pct_sess *s, uint64_t gen);
char *pct__mcp_status(pct_sess *s);
/* Model discovery: starts a listing when the cache is old (wait: and waits a bounded
 * time for the first one); pct__discovered: the ids found (JSON array text, malloc'd) or
 * NULL. */
void pct__discover(pct_controller *c, bool wait);
char *pct__discovered(pct_controller *c);
/* True when the default model resolves to a configured provider (why: the reason when
 * not). */
bool pct__credentials(pct_controller *c, char *why, size_t whylen);
/* Rebuilds the session's tool list after the pool's table changed (worker thread); the
 * previous list is kept until release. 0, or -1 (the previous list stays). */
int pct__rebuild_tools(pct_sess *s);

typedef struct pct_old_settings { /* a settings version replaced by authenticate */
    struct pct_old_settings *next;
    pag_settings *s;
} pct_old_settings;

typedef struct pct_tel pct_tel;

struct pct_controller {
    pb_logger log;
    pct_tel *tel; /* settings.telemetry's exporter (telemetry.c), NULL when none */
    pst_store *store;
    prt_runtime *rt;
    /* The current settings version: atomic, replaced by pct_authenticate (auth.c); the
     * first is the host's (borrowed), later ones are kept in old_settings until pct_free. */
    const pag_settings *_Atomic settings;
    pthread_mutex_t auth_mu; /* one authenticate at a time */
    pct_old_settings *old_settings;
    pct_sink sink;
    char machine_id[PST_ID_LEN]; /* "" = no identity (shared store, none given) */
    bool shared_store;
    bool list_all; /* session/list shows every machine's sessions (PostgreSQL store) */
    pag_tool_info *tools;
    size_t ntools;
    char *home; /* for the user's settings.json (MCP servers) and ~/.peri/commands */
    /* code runs through placement (room first, native sandbox when needed). */
    pr_host *room;
    pr_ruby *ruby;
    pl_ruby_hook ruby_hook;
    pr_python *python;
    pl_ruby_hook python_hook;
    pl_ctx *place;
    pl_policy policy;
    /* the host's state the sandbox never writes (policy.protect, protect_around): the
     * user's Peri home, the code cache, the Ruby and Python builds the room runs, and
     * the session store's directory (owned) */
    char *prot_own[4], *prot_store;
    const char *prot_v[4], *around_v[1];
    ptl_sandbox sandbox;
    pthread_mutex_t mu; /* workers and connectors counts */
    pthread_cond_t cv;
    int workers;
    int connectors; /* MCP connector and discovery threads alive */
    /* Model discovery (discover.c), under mu: the "provider:model" ids the providers
     * reported (JSON array text, owned, NULL = none yet), when, for which settings. */
    char *disc_json;
    int64_t disc_at;
    bool disc_running, disc_done;
    const pag_settings *disc_settings;
    char *shell_schema; /* shell's schema with "background" (tasks.c), owned */
};

void pct__sess_retain(void *h);
void pct__sess_release(pct_sess *s);
pct_sess *pct__sess_get(pct_controller *c, const char *id);
/* Emits through the gate and the runtime's stamp (takes emit_mu), as the event of the
 * session's main agent. An event of a turn other than the running attempt's (a late
 * one) is dropped, as is any event of an instance no longer mapped in the runtime. */
void pct__emit(pct_sess *s, pag_event *ev);
/* The same for the event of agent `agent_id` (a subagent's own id; NULL: the main
 * agent, whose id is the session id). */
void pct__emit_agent(pct_sess *s, pag_event *ev, const char *agent_id);
/* The ids of turn number n / attempt number n of epoch e ("turn-<e>-<n>"). */
void pct__turn_id(char out[48], uint64_t epoch, uint64_t n);
void pct__attempt_id(char out[48], uint64_t epoch, uint64_t n);
/* Appends msgs (at most two) to the stored thread id as history rows: 0 when stored
 * (*first_seq, when given: the first row's seq), -1 when they could not be encoded
 * (nothing written), -2 when the store refused (e says why). */
int pct__persist(pst_store *store, const char *id, const pm_message *msgs, size_t n,
                 int64_t *first_seq, pst_error *e);
/* err (when given) gets status st and msg, cut to 250 bytes; returns st. */
pct_status pct__fail(pct_error *err, pct_status st, const char *msg);
/* The closing guard: PCT_CLOSING ("Session is closing") unless s is open. Every
 * state-changing request calls it first. */
pct_status pct__sess_guard(pct_sess *s, pct_error *err);
/* True when stored row `seq` is hidden by a rewind (hidden: the JSON array text). */
bool pct__row_hidden(const char *hidden, int64_t seq);
/* Appends the stored rows [from, to] to the session's hidden ranges and saves the meta
 * (the rewind's rule). 0; -1 out of memory (nothing changed); -2 the store refused the
 * meta (logged; this instance hides them all the same). */
int pct__hide_rows(pct_sess *s, int64_t from, int64_t to);
/* The persist port stored a batch (first row first_seq) of the running turn; user: it
   is the turn's user message. turns.c: the session is named from it, its rows counted. */
void pct__turn_stored(pct_sess *s, bool user, int64_t first_seq, size_t n);
/* After each turn of the worker (a goal continuation's too): a refused turn leaves the
 * history (the agent's, and its stored rows are hidden) and names nothing. */
void pct__turn_end(pct_sess *s, const pag_turn_result *r);
/* PCT_FOREIGN (err filled, naming the owner) when the stored session `id` belongs to
 * another machine; PCT_OK when it is ours or not stored. */
pct_status pct__check_owner(pct_controller *c, const char *id, pct_error *err);
/* PCT_FOREIGN with the owner-naming message when s is a read-only (foreign) session;
 * PCT_OK otherwise. Every writing entry point calls it first. */
pct_status pct__sess_writable(const pct_sess *s, pct_error *err);
/* The plan entries (ACP PlanEntry[] JSON, malloc'd) of a todo call's arguments, NULL when
 * they are not a valid plan (replay of the plan a todo call showed). */
char *pct__plan_of_todo(const char *args_json);

/* ---- middlewares (middlewares.c). pct__mw_mount: builds the session's middlewares
 * and points ports at them (0, or -1 out of memory); pct__mw_free after the agent is
 * freed; pct__mw_project: the project's trusted hooks (pc NULL: none) on the worker
 * thread; pct__mw_subagent_stop: the SubagentStop hook point of the parent's chain. */
int pct__mw_mount(pct_sess *s, pag_ports *ports);
void pct__mw_free(pct_sess *s);
void pct__mw_project(pct_sess *s, const pag_project_config *pc, uint64_t turn);
void pct__mw_subagent_stop(pct_sess *s, const char *agent_id, const char *stop_reason);
/* askuser.c: the ask_user tool (the pag_tool_ops.run contract), and the answer to an MCP
 * server's elicitation/create (ctx = the session; the pmcp_elicit_fn contract). */
int pct__ask_user_run(pct_sess *s, const char *args, atomic_int *cancel, pag_tool_output *out);
char *pct__elicit(void *ctx, const char *server, const char *params_json, atomic_int *cancel);
/* tasks.c: background tasks. pct__task_background: the call asks to run in the
 * background (shell or task with "background": true); pct__task_start: starts it and
 * answers with its id (run_tool contract); pct__task_tool: task_output / task_wait /
 * task_stop (-2: not one of them); pct__tasks_cancel: raises every running task's flag
 * (close); pct__tasks_live: the id of a running task or NULL (mu held);
 * pct__tasks_free: every task of a released session; pct__tasks_catalogue: shell's
 * schema gains "background" (c->shell_schema, 0 or -1 out of memory). */
bool pct__task_background(const char *name, const char *args);
int pct__task_start(pct_sess *s, const char *name, const char *args, pag_tool_output *out);
int pct__task_tool(pct_sess *s, const char *name, const char *args, atomic_int *cancel,
                   pag_tool_output *out);
void pct__tasks_cancel(pct_sess *s);
const char *pct__tasks_live(pct_sess *s);
void pct__tasks_free(pct_sess *s);
int pct__tasks_catalogue(pct_controller *c);
/* subagent.c: a subagent on a background task's thread, with its own cancel flag, the
 * task call's id and the model spec it started with; agent_id receives the child's id. */
int pct__subagent_run_bg(pct_sess *s, const char *args, atomic_int *cancel, pag_tool_output *out,
                         const char *call_id, const char *model, char agent_id[PST_ID_LEN]);

/* ---- editor feature internals */
#define PCT_HOST_TOOLS 16 /* todo and the chain's declared tools (11 today) */

/* middleware glue (mw_glue.c): the goal and cron middlewares in this session. */
/* Starts the session's cron (make_live) and restores goal and cron records from meta. */
int pct__mw_live(pct_sess *s, pj_t *meta);
/* Adds goal and cron state to the meta being saved (s->mu held). */
void pct__mw_meta(pct_sess *s, pj_t *m);
/* The goal_complete and cron tools: -2 when name is none of them. */
int pct__mw_tool(pct_sess *s, const char *name, const char *args, pag_tool_output *out);
/* /goal [TEXT | clear]: shows, sets or clears the goal (answers with a message). */
void pct__goal_command(pct_sess *s, uint64_t gen, const char *args);
/* After a completed turn: continues on its own toward an unmet goal, up to the bound. */
void pct__goal_continue(pct_sess *s, pag_turn_result *r);
/* The ACP plan with the goal's entry first (entries_json: the todo plan or NULL);
 * malloc'd, or NULL when the session has no goal. */
char *pct__goal_plan(pct_sess *s, const char *entries_json);
/* A cron run: enqueues prompt as a turn of s (turns.c). 0 or -1. */
int pct__prompt_cron(pct_sess *s, uint64_t cron_id, const char *prompt);
/* The session's permission broker (pag_ports.ask_permission) and tool titles. */
pag_permission pct__port_ask(void *ctx, const pag_event *call, atomic_int *cancel);
char *pct__tool_title(const char *name, const char *args);
/* Whether this call of a builtin tool asks the user (a session's and its subagents'
 * tool table alike): the tool's flag, or for `run` its placement (native asks). */
bool pct__tool_needs_permission(void *ctx, const char *name, const char *args);
/* Appends the host tools' descriptors to the catalogue. */
void pct__host_tools_add(pag_tool_info *tools, size_t *n);
/* Persists the session's meta (frozen context, mode, model, remembered permissions,
 * epoch, hidden rows, close intent). 0, or -1 when the store refused it. */
int pct__save_meta(pct_sess *s);
/* Makes the agent use the chosen model (worker thread, between turns). */
void pct__apply_model(pct_sess *s);
/* The current model spec (malloc'd) or NULL. */
char *pct__current_model(pct_sess *s);
/* Runs the tool (workspace or host); the port_run_tool contract. */
int pct__run_tool(pct_sess *s, const char *name, const char *args, atomic_int *cancel,
                  pag_tool_output *out, bool child);
/* Host tools (todo, skill): returns -2 when name is not a host tool. */
int pct__host_tool(pct_sess *s, const char *name, const char *args, pag_tool_output *out);
/* The task tool: runs a subagent in a child thread. */
int pct__subagent_run(pct_sess *s, const char *args, atomic_int *cancel, pag_tool_output *out);
/* Slash commands: when the prompt is a command, runs it and returns true (r filled);
 * a user command rewrites *msg and returns false. */
bool pct__command_run(pct_sess *s, pm_message *msg, pag_turn_result *r);
/* availableCommands JSON text (malloc'd). */
char *pct__commands_json(pct_sess *s);
/* Sets the mode / model and tells the client (current_mode_update, config_option_update). */
pct_status pct__sess_set_mode(pct_sess *s, const char *mode_id, uint64_t turn, pct_error *err);
pct_status pct__sess_set_model(pct_sess *s, const char *spec, uint64_t turn, pct_error *err);
/* What the model `spec` supports: a reasoning effort (OpenAI o-series and gpt-5,
 * Anthropic models with extended thinking), the 1M-token context (Anthropic Sonnet 4). */
bool pct__model_effort(const pag_settings *st, const char *spec);
bool pct__model_1m(const pag_settings *st, const char *spec);
/* Model choices and the configOptions / modes JSON (malloc'd). */
char *pct__config_json(pct_sess *s);
char *pct__modes_json(pct_sess *s);

/* telemetry.c: the exporter of settings.telemetry (none: 0 and c->tel NULL; -1 with err
 * when malformed); pct__tel_turn queues the span of s's turn that ended with r;
 * pct__tel_free(t, true) stops the running thread (joined) and frees. */
int pct__tel_new(pct_controller *c, const pct_config *cfg, pct_error *err);
void pct__tel_turn(pct_sess *s, const pag_turn_result *r, const char *model_spec);
void pct__tel_free(pct_tel *t, bool running);

#endif
