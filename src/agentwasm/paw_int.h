/*
 * paw_int.h — the reactor's internals, shared by reactor.c (the object, the start
 * object, framing, event routing, close and settlement), methods.c (the ACP methods)
 * and drive.c (live sessions and the turn driver). Internal to src/agentwasm/.
 *
 * Invariants: one thread; nothing here blocks. Every pn_http request, timer and the
 * store the reactor opened is counted in `open_*` until its settling callback, so
 * settlement is "everything counted is zero and the store has settled".
 */
#ifndef PAW_INT_H
#define PAW_INT_H

#include "peri/agent.h"
#include "peri/agentwasm.h"
#include "peri/json.h"
#include "peri/model.h"
#include "peri/net_http.h"
#include "peri/rpc.h"
#include "peri/store.h"

#include <stdint.h>

/* JSON-RPC codes of the ACP wire (the native server's, src/acp/jsonrpc.h). */
#define PAW_TURN_FAILED      (-32000)
#define PAW_NOT_FOUND        (-32002)
#define PAW_CLOSE_INCOMPLETE (-32010)
#define PAW_MAX_FRAME        (64u << 20)

typedef struct paw_sess paw_sess;

/* A request that waits for the store to open (kept in arrival order). */
typedef struct paw_frame {
    struct paw_frame *next;
    char *text;
    size_t len;
} paw_frame;

/* Something the reactor holds on the ports, found again by the ud of an event. */
typedef enum paw_hkind { PAW_H_HTTP = 1, PAW_H_TIMER } paw_hkind;
typedef struct paw_handle {
    struct paw_handle *next;
    paw_hkind kind;
    void *ud;              /* PAW_H_HTTP: the pn_http_req (the events' ud); PAW_H_TIMER: this */
    pn_handle timer;       /* PAW_H_TIMER */
    paw_sess *sess;        /* the owner (NULL once the session is gone) */
    struct paw *tel_owner; /* a telemetry export's (telemetry.c); NULL otherwise */
    bool cancelled;
} paw_handle;

struct paw {
    paw_host h;
    bool started, closing, closed_reported, input_ended, store_ready, store_failed, store_closed;
    /* the client's input ended with requests still unanswered: they are served first,
     * then the instance closes (after the settings' close grace when turns run) */
    bool draining;
    size_t pending_ops; /* requests waiting for a store answer (methods.c's pend) */
    paw_handle *grace;  /* the close grace's timer while turns finish, NULL: none */
    char store_error[300];
    /* the start object */
    char cwd[4096];
    char machine_id[PST_ID_LEN];
    pag_settings settings;
    bool have_settings;
    /* the model from settings (NULL: none; model_missing says why) */
    pm_client *model;
    char model_spec[200];
    const char *model_name; /* borrowed from settings */
    char model_missing[300];
    /* the shared store */
    pst_remote *store;
    /* client input */
    char *in;
    size_t in_len, in_cap;
    bool in_skip; /* discarding the rest of a frame that was too long */
    paw_frame *waiting, **waiting_tail;
    /* live sessions and what is open on the ports */
    paw_sess *sessions;
    paw_handle *handles;
    size_t open_http, open_timers;
    /* requests to the client (session/request_permission) */
    pj_int_t next_out_id;
    /* tool sources (each session merges their lists into its own array) */
    paw_tool_source srcs[8];
    size_t nsrcs;
    bool srcs_closed;
    struct paw_mcp *mcp;   /* the settings' HTTP MCP servers (mcp.c), NULL when none */
    struct paw_tel *tel;   /* the settings' telemetry export (telemetry.c), NULL when none */
    struct paw_mcp *msets; /* per-session MCP sets (mcp.c), freed with the reactor */
};

/* ---- reactor.c */
void paw__log(paw *p, int level, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Sends a frame (stolen); the send callback's outcome. */
int paw__send(paw *p, pj_t *frame);
void paw__reply(paw *p, pj_t *id, pj_t *result);
void paw__reply_error(paw *p, pj_t *id, int code, const char *msg, pj_t *data);
void paw__notify(paw *p, const char *method, pj_t *params);
/* True for the text form of a UUID (8-4-4-4-12 hex digits). */
bool paw__uuid_ok(const char *s);
/* A credential into a malloc'd string (NULL: none); the caller wipes and frees it. */
char *paw__credential(paw *p, const char *kind);
/* Registers a handle record (NULL when out of memory). */
paw_handle *paw__handle_add(paw *p, paw_hkind kind, paw_sess *s);
void paw__handle_drop(paw *p, paw_handle *hd);
/* Emits the settled report when closing and nothing is left. */
void paw__maybe_settled(paw *p);
/* Runs one frame (the store is ready, or failed). */
void paw__frame(paw *p, const char *line, size_t len);
/* Draining: closes once nothing the client asked waits any more. */
void paw__drain_check(paw *p);

/* ---- methods.c */
void paw__dispatch(paw *p, const char *method, pj_t *params, pj_t *id);
void paw__notification(paw *p, const char *method, pj_t *params);
void paw__response(paw *p, const pb_rpc_msg *m);

/* ---- drive.c: live sessions */
struct paw_sess {
    paw_sess *next;
    paw *p;
    char id[PST_ID_LEN];
    char *cwd;
    pag_session *agent;
    bool read_only;
    char owner[PST_ID_LEN]; /* read_only and another machine's: that machine */
    int format;             /* the history format (1: this form's; -1 unreadable) */
    bool titled;            /* the thread has a title (else the first prompt names it) */
    char *frozen;           /* the system prompt kept in the thread's meta */
    pj_t *meta;             /* the thread's meta as stored (owned); written back whole with the
                               session's options (mode, model), so keys of other hosts survive */
    /* the running turn: the name its prompt gives an untitled session once the prompt is
     * stored ("": none), whether it gave it, and the stored rows of the turn from its user
     * message on (first/last seq; 0: none), which a refusal hides */
    char title_next[64];
    bool titled_now;
    int64_t kept_from, kept_to;
    bool persist_user; /* the PERSIST in flight holds the turn's user message */
    size_t persist_n;
    pag_turn_result refused; /* a refused turn, answered once its rows are hidden */
    /* a model chosen for this session (set_config_option model); NULL: the instance's */
    pm_client *model;
    char *model_spec;
    /* the running turn's telemetry: its start (wall ms), model calls and tokens */
    int64_t tel_start_ms, tel_in, tel_out, tel_calls;
    uint64_t seq;   /* session/update sequence */
    uint64_t turns; /* turn generation (peri.turnId) */
    /* the running turn */
    pag_turn *turn;
    pj_t *prompt_id; /* the session/prompt to answer */
    struct paw_queued *queue, **queue_tail;
    pm_call *call;
    pm_response resp;
    pm_error perr;
    paw_handle *http; /* the model request */
    paw_handle *wait; /* the retry timer */
    bool persisting;
    bool tools_started;
    size_t tools_pending;
    struct paw_tcall *tcalls; /* started tool calls of the running turn */
    /* the tools offered to this session's model: owned array (strings borrowed from the
     * sources, which keep them until close), rebuilt before each model request */
    pag_tool_info *tools;
    size_t ntools;
    struct paw_ask *asks; /* permission questions of the running turn */
    size_t asks_pending;  /* asked, not answered yet */
    char **always;        /* "+name" allowed / "-name" rejected for the session */
    size_t nalways;
    /* close */
    pj_t *close_id; /* session/close waiting for the turn to unwind */
    bool gone;      /* removed from the list; freed when nothing refers to it */
};

typedef struct paw_queued {
    struct paw_queued *next;
    pj_t *id;
    pm_message msg;
} paw_queued;

/* A permission question to the client (ask.c): for call `index` of the turn's
 * TOOL_CALLS; outcome is a pag_permission once answered, -1 before. */
typedef struct paw_ask {
    struct paw_ask *next;
    paw_sess *s;
    pj_int_t rid;
    size_t index;
    char *call_id;
    char *tool;
    int outcome;
} paw_ask;

/* A started tool call (drive.c). */
typedef struct paw_tcall {
    struct paw_tcall *next;
    paw_sess *s;
    const paw_tool_source *src;
    void *handle;
    char *id;
} paw_tcall;

/* Makes a live session of a stored thread (system prompt from the thread's meta).
 * NULL when out of memory. */
paw_sess *paw__sess_new(paw *p, const char *id, const char *cwd, const char *frozen,
                        bool read_only);
paw_sess *paw__sess_find(paw *p, const char *id);
/* Frees a live session that has no turn, no queue and no close waiting (a read-only one
 * about to be read again from the store). */
void paw__sess_drop(paw_sess *s);
/* Frees every session as it is (paw_free after the host closed the ports). */
void paw__sess_free_all(paw *p);
/* Starts (or queues) a turn over msg (its parts taken); the reply goes to id. */
void paw__sess_prompt(paw_sess *s, pj_t *id, pm_message *msg);
/* Raises the cancel flag of the running turn and stops what it waits on. */
void paw__sess_cancel(paw_sess *s, bool clear_queue);
/* Ends the session: cancels, then removes it once the turn unwound (close_id answered
 * then with {} when given). */
void paw__sess_close(paw_sess *s, pj_t *close_id);
/* Routes a model request's or a timer's event. */
void paw__handle_event(paw *p, paw_handle *hd, const pn_event *ev);
/* The frozen context of a new session in the virtual workspace (malloc'd). */
/* Lexical canonical form of an absolute path ("." and ".." segments and repeated
 * slashes resolved; ".." above the root stays at the root; no trailing slash): the
 * module sees no file system of the host, so where native canonicalises a cwd with
 * realpath this is what it can do. A symlink is not resolved: a path through one stays
 * another workspace. false when it does not fit in out (cap bytes; strlen(in) + 2 always
 * fits). */
bool paw__canonical_path(const char *in, char *out, size_t cap);
char *paw__frozen_context(const char *cwd, int64_t now_ms);
/* ---- options.c: a session's options (mode, model) and their persistence */
/* The session's configOptions (ACP SessionConfigOption[]), NULL when out of memory. */
pj_t *paw__config_options(paw_sess *s);
/* The spec of the model the session uses now ("" when none). */
const char *paw__sess_model_spec(const paw_sess *s);
/* Switches the session to model spec (one of its configOptions' values): 0, or -1 with
 * the reason in why (the native texts). */
int paw__sess_set_model(paw_sess *s, const char *spec, char *why, size_t n);
/* Applies the options a stored meta names (mode, model); what cannot apply is logged. */
void paw__sess_apply_meta(paw_sess *s);
/* Writes the session's meta (with its mode and model) to the store; cb(ud, res) follows
 * (from the store), or PST error status returned and nothing follows. */
pst_status paw__sess_save_meta(paw_sess *s, pst_remote_cb cb, void *ud, pst_error *e);
/* A model client for spec from the instance's settings, its key from the host
 * (credential model:<provider>); NULL with why. *name is borrowed from the settings. */
pm_client *paw__model_new(paw *p, const char *spec, const char **name, char *why, size_t n);
/* The refusal of a write to a read-only session (another machine's, or another history
 * format), with the native texts, codes and data. */
void paw__refuse_read_only(paw *p, pj_t *id, const paw_sess *s);
/* The refusal of a write to session sid owned by machine owner. */
void paw__refuse_foreign(paw *p, pj_t *id, const char *sid, const char *owner);

/* ---- telemetry.c: one OTLP span per turn to settings.telemetry.url (a side channel) */
typedef struct paw_tel paw_tel;
/* Reads settings.telemetry (none: 0 and nothing exported); -1 with err when malformed. */
int paw__telemetry_new(paw *p, char *err, size_t errlen);
/* Exports the span of s's turn that ended with r (never fails the turn). */
void paw__telemetry_turn(paw_sess *s, const pag_turn_result *r);
/* Cancels the exports in flight (a close). */
void paw__telemetry_close(paw *p);
void paw__telemetry_free(paw *p);

/* ---- mcp.c: the settings' MCP servers over streamable HTTP as a tool source */
typedef struct paw_mcp paw_mcp;
/* Starts a client for every server of the settings' mcpServers object that has a url
 * (they connect in the background). NULL when out of memory. */
paw_mcp *paw__mcp_new(paw *p, const pj_t *servers);
paw_tool_source paw__mcp_source(paw_mcp *m);
void paw__mcp_free(paw_mcp *m);
/* The MCP set of session sid: its own servers (an mcpServers array of HTTP entries,
 * checked by the method; NULL or empty: none) start connecting; a set is made only when
 * there is something to report (own servers, or the settings' ones). 0, or -1 when out
 * of memory. A session that has a set already keeps it. */
int paw__mcp_session_open(paw *p, const char *sid, const pj_t *servers);
/* Adds _meta "peri.mcpServers" (and "peri.mcpErrors") to the session's answer. */
void paw__mcp_status_meta(paw *p, const char *sid, pj_t *result);
/* The answer went out: `_peri/mcp_status` follows once every server is up or failed. */
void paw__mcp_session_answered(paw *p, const char *sid);
/* The session's own servers as a tool source, NULL when none. */
const paw_tool_source *paw__mcp_session_source(paw *p, const char *sid);
/* The session ended: its own servers close (settled with the reactor). */
void paw__mcp_session_end(paw *p, const char *sid);
/* Reactor hooks: routes a port event; closes every set and tells whether all settled;
 * frees them (paw_free). */
bool paw__mcp_sets_event(paw *p, const pn_event *ev);
bool paw__mcp_sets_settled(paw *p);
void paw__mcp_sets_free(paw *p);

/* ---- ask.c: the permission gate */
/* True when call c must ask the client first (mode, tool flag, settings, remembered
 * answers); then the request is sent and the call waits (false when none is needed). */
bool paw__ask_begin(paw_sess *s, size_t index, const pag_turn_call *c);
/* The permission middleware's port: the answer given for this call, a remembered or
 * settings answer, else a refusal. */
pag_permission paw__ask_port(void *ctx, const pag_event *call, atomic_int *cancel);
/* Every open question of the session answered cancelled (cancel, close). */
void paw__ask_cancel_all(paw_sess *s);
/* A client's answer to one of the reactor's requests; true when it was one. */
bool paw__ask_answer(paw *p, const pb_rpc_msg *m);
/* Drops the session's questions (the turn ended) and, remembered_too, its remembered
 * "always" answers (the session is freed). */
void paw__ask_free(paw_sess *s, bool remembered_too);
/* drive.c: call index of the running turn may start now (its question was answered). */
void paw__tool_resume(paw_sess *s, size_t index);

/* The tools of every source, merged (first source wins a name) into s->tools (the
 * previous array freed: the turn asks again only before a new request). */
const pag_tool_info *paw__tools(paw_sess *s, size_t *n);
/* Emits an event of the session through the shared projection. */
void paw__emit(paw_sess *s, const pag_event *ev);

#endif
