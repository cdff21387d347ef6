/*
 * peri/controller.h — the control plane of the agent host (prefix pct_).
 *
 * The controller composes, per session, the store (persistence), the runtime (the
 * session_id -> handle map and event stamping) and the workspace tools, and drives
 * the agent. It locates and forwards cancel, gates events by turn generation so
 * nothing of a cancelled turn escapes after its answer, and settles sessions on
 * close. It knows nothing about JSON-RPC: results go up through pct_sink.
 *
 * Threads: every function may be called from any thread. session/prompt runs on a
 * worker thread owned by the controller (one per prompt; prompts of one session
 * queue behind each other).
 *
 * CHANGES (additive): pct_sink.ask_user (questions and MCP elicitation through the HITL
 * broker); pct_sink.fs_read_cancel / fs_write_cancel (the client's file system with the
 * tool call's cancel flag).
 */
#ifndef PERI_CONTROLLER_H
#define PERI_CONTROLLER_H

#include "peri/agent.h"
#include "peri/base.h"
#include "peri/store.h"
#include "peri/tools.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct pct_controller pct_controller;

/* The identity of one event, beside the runtime's (session_id, session_seq) on the
 * event itself. session_epoch is new each time a process makes the session live (kept
 * with the session, never reused); turn_id names one accepted prompt and attempt_id one
 * run of the agent loop for it (a queued prompt that continues after a cancel is a new
 * attempt). Both are unique within the session (they embed the epoch). */
typedef struct pct_event_ids {
    uint64_t session_epoch;
    const char *turn_id;    /* NULL: the event belongs to no turn (replay, announce, ...) */
    const char *attempt_id; /* NULL: no attempt (outside a turn, or a prompt that never ran) */
    const char *agent_id;   /* the session id for the main agent; a subagent's own id */
} pct_event_ids;

typedef struct pct_sink {
    void *ctx;
    /* A stamped event (session_id, session_seq set). Called with the session's emit lock
     * held, so events of one session arrive in session_seq order. */
    void (*on_event)(void *ctx, const pag_event *ev);
    /* Asks the client; blocks until it answers or *cancel becomes non-zero. */
    pag_permission (*ask_permission)(void *ctx, const char *session_id, const pag_event *call,
                                     atomic_int *cancel);
    /* The answer of one prompt (token from pct_prompt); called exactly once. */
    void (*on_prompt_done)(void *ctx, void *token, const pag_turn_result *r);
    /* Optional: on_event with the event's identity; when set, it is called instead of
     * on_event (same lock, same order). */
    void (*on_event_ids)(void *ctx, const pag_event *ev, const pct_event_ids *ids);
    /* Optional: the terminal event of one turn, called exactly once per accepted prompt,
     * after every event of that turn and immediately before its on_prompt_done (with the
     * session's emit lock held). session_seq is the next value of the session's counter
     * (the terminal event takes its place in the sequence). */
    void (*on_turn_done)(void *ctx, const char *session_id, uint64_t session_seq,
                         const pct_event_ids *ids, const pag_turn_result *r);
    /* Optional: the session's configured MCP servers finished starting (status_json as
     * pct_session_mcp_status gives it, with every server "ready" or "failed"). Called once
     * per live instance that had servers to start, from the thread that started them,
     * after pct_session_answered. */
    void (*on_mcp_status)(void *ctx, const char *session_id, uint64_t session_epoch,
                          const char *status_json);
    /* Optional: a configured MCP server needs an OAuth login; url is the authorization
     * URL the user opens (the redirect comes back to a loopback listener of the host).
     * Called from the thread that starts the servers, after pct_session_answered (or
     * after 5 s without it). Without it no interactive login runs (stored tokens only). */
    void (*on_mcp_login)(void *ctx, const char *session_id, uint64_t session_epoch,
                         const char *server, const char *url);
    /* optional: the client's file system (ACP fs/read_text_file and
     * fs/write_text_file) for the read/write/edit tools. Paths are canonical and already
     * confined to the session's cwd. 0 ok (read: *data malloc'd), 1 not offered by the
     * client (the disk is used), -1 failed with errno set. */
    int (*fs_read)(void *ctx, const char *session_id, const char *abs_path, char **data,
                   size_t *len);
    int (*fs_write)(void *ctx, const char *session_id, const char *abs_path, const char *data,
                    size_t len);
    /* optional, used instead of fs_read / fs_write when set: the same with the tool
     * call's cancel flag (may be NULL); when *cancel becomes non-zero the wait for the
     * client ends (-1, errno ECANCELED), as a cancelled turn's tools end at once. */
    int (*fs_read_cancel)(void *ctx, const char *session_id, const char *abs_path, char **data,
                          size_t *len, atomic_int *cancel);
    int (*fs_write_cancel)(void *ctx, const char *session_id, const char *abs_path,
                           const char *data, size_t len, atomic_int *cancel);
    /* optional: the client's terminal (ACP terminal/... requests) for the shell
     * tool when the sandbox mode is off; same contract as ptl_client_term.run. */
    int (*term_run)(void *ctx, const char *session_id, const char *cwd, const char *command,
                    long long timeout_ms, size_t max_output, atomic_int *cancel,
                    ptl_term_result *out);
    /* Optional: a question to the user through the same HITL broker as ask_permission
     * (the ask_user tool, an MCP server's elicitation/create). question_json:
     * {"kind": "choice", "message", "options": [label, ...]} or {"kind": "form",
     * "message", "requestedSchema": {...}}, with "toolCallId" (the call asking) and
     * "server" (an MCP server's name) when known. Blocks until the client answers, *cancel
     * becomes non-zero or the client goes. Returns the answer as malloc'd JSON text
     * {"action": "accept", "choice": index} (choice) / {"action": "accept", "content":
     * {...}} (form) / {"action": "decline"} / {"action": "cancel"}, or NULL when the
     * client cannot be asked this kind of question. */
    char *(*ask_user)(void *ctx, const char *session_id, const char *question_json,
                      atomic_int *cancel);
} pct_sink;

typedef struct pct_config {
    const char *db_path; /* required (":memory:" allowed) */
    /* The user's home for user-level files other than settings (e.g. ~/.peri/commands);
     * may be NULL. The library never reads $HOME: the host passes it. */
    const char *home;
    /* The machine identity (1..36 printable characters). NULL: a fresh UUID for this
     * controller on a private store; on a shared store, no identity: writes refused. */
    const char *machine_id;
    bool shared_store; /* other machines write the store too */
    /* the store credential (PostgreSQL password when the URL has none). */
    const char *db_credential;
    const pag_settings *settings; /* borrowed; must outlive the controller */
    /* code runs through placement. ruby_wasm: Ruby's ruby+stdlib.wasm (NULL: the
     * room has no Ruby); wasm_runner: argv that runs a WASI module natively (NULL: none). */
    const char *ruby_wasm;
    /* python_dir: CPython's WASI build (python.wasm, lib/python3.11; NULL: no Python) */
    const char *python_dir;
    /* The room's on-disk cache of JIT translations (pr_host_config.code_cache_dir,
     * docs/jit.md "Compiled-code cache"): later processes running the same Ruby or
     * Python build map its machine code instead of translating it. NULL: none. */
    const char *code_cache_dir;
    const char *const *wasm_runner;
    size_t nwasm_runner;
    const char *bwrap; /* NULL: /usr/bin/bwrap */
    /* The bearer token for settings.telemetry's collector (borrowed; NULL: none). The
     * host maps it from its own secrets (the CLI: PERI_TELEMETRY_TOKEN). */
    const char *telemetry_token;
    /* Where the controller reports what no caller receives: sandbox-off warnings, state
     * that could not be persisted, MCP servers' diagnostics. {0}: dropped. */
    pb_logger log;
} pct_config;

typedef enum pct_status {
    PCT_OK = 0,
    PCT_NOT_FOUND,  /* no such session */
    PCT_CLOSING,    /* the session is closing: "Session is closing" */
    PCT_INCOMPLETE, /* close could not settle yet; `why` says why; retry */
    PCT_BUSY,       /* the session is running a prompt */
    PCT_BAD_ARG,    /* message says what */
    PCT_FAILED,     /* store or memory failure; message says what */
    PCT_FOREIGN,    /* the session's workspace belongs to another machine (message says
                       which) */
    PCT_ACTIVE,     /* the source session is running a prompt (fork): -32010 */
    PCT_OLD_FORMAT, /* the session's history is in another format than this host writes:
                       it can be read, not continued (message says which formats) */
} pct_status;

typedef struct pct_error {
    pct_status status;
    char message[256];
} pct_error;

/* Returns a controller (free with pct_free) or NULL with err filled. */
pct_controller *pct_new(const pct_config *cfg, const pct_sink *sink, pct_error *err);
/* Closes every session (waiting up to wait_ms for turns to unwind) and frees. Returns 0,
 * or 1 when a worker was still unwinding: then the controller is left allocated (the
 * sink must stay valid too) because that thread may still use it. */
int pct_free(pct_controller *c, long wait_ms);

/* Creates a session for an absolute existing directory. out_id receives its id. */
pct_status pct_session_new(pct_controller *c, const char *cwd, char out_id[PST_ID_LEN],
                           pct_error *err);
/* ---- MCP ----
 * Like pct_session_new / pct_session_load, with the client's ACP mcpServers (JSON array
 * text, NULL for none). Servers from <home>/.peri/settings.json and
 * <cwd>/.peri/settings.json ("mcpServers") are connected for every session, too; their
 * tools join the session's tool list as mcp__<server>__<tool>, and the connections
 * close with the session. A server that fails does not fail the call: *notices (may be
 * NULL) receives malloc'd lines describing it (NULL when all went well); they are also
 * printed to stderr. For an already live session, mcp_json is ignored. */
pct_status pct_session_new_mcp(pct_controller *c, const char *cwd, const char *mcp_json,
                               char out_id[PST_ID_LEN], char **notices, pct_error *err);
pct_status pct_session_load_mcp(pct_controller *c, const char *id, bool replay,
                                const char *mcp_json, char **notices, pct_error *err);
/* ---- end MCP ---- */

/* MCP servers start in the background: session/new, load and resume return before
 * they are up. The session's status as JSON text (malloc'd; NULL when not live):
 * {"servers": [{"name", "status": "starting"|"ready"|"failed"}], "errors": [lines]}. */
char *pct_session_mcp_status(pct_controller *c, const char *id);
/* The client has the answer naming the session: from now on the final MCP status may be
 * sent (sink->on_mcp_status; at once when the servers are already up). */
void pct_session_answered(pct_controller *c, const char *id);
/* Emits the session's available commands (after the session/new answer). */
void pct_session_announce(pct_controller *c, const char *id);
/* Makes a stored session live. With replay, emits the whole history (before
 * returning) as replay events. Another machine's session is made live read-only (see
 * pct_session_read_only) instead of being refused. */
pct_status pct_session_load(pct_controller *c, const char *id, bool replay, pct_error *err);
pct_status pct_session_list(pct_controller *c, const char *cwd, const char *cursor,
                            pst_thread_page *out, pct_error *err);
/* all_machines 1 lists every machine's sessions (items whose machine_id differs
 * from pct_machine_id are read-only here), 0 only this machine's, -1 the default: all on
 * a PostgreSQL store, own only on SQLite. */
pct_status pct_session_list_ex(pct_controller *c, const char *cwd, const char *cursor,
                               int all_machines, pst_thread_page *out, pct_error *err);
/* true when the live session `id` is another machine's session,
 * opened read-only by pct_session_load (owner, may be NULL, receives its machine id).
 * Such a session replays its history; prompt, fork, delete, set_mode and
 * set_config_option answer PCT_FOREIGN naming the owner, and nothing is written to the
 * store for it. A new load with replay re-reads it from the store. */
bool pct_session_read_only(pct_controller *c, const char *id, char owner[PST_ID_LEN]);
/* The format this host writes a session's history in (kept as "format" in the thread's
 * meta; sessions written before the format was recorded are format 1). A session in
 * another format, older or newer, is made live read-only by pct_session_load: it
 * replays its history, and prompt, fork, set_mode and set_config_option answer
 * PCT_OLD_FORMAT (a new session is needed to continue). */
#define PCT_HISTORY_FORMAT 1
/* The history format of a stored thread's meta text (NULL: format 1). -1 when the meta
 * names a format that is not an integer from 0. */
int pct_history_format(const char *meta_json);
/* The history format of the live session `id`, or 0 when it is not live. */
int pct_session_history_format(pct_controller *c, const char *id);
/* Deletes a session (closing it first if live). Unknown ids succeed. */
pct_status pct_session_delete(pct_controller *c, const char *id, pct_error *err);

/* Queues a prompt; the answer goes to sink->on_prompt_done(token). On error nothing is
 * called and the token stays the caller's. */
pct_status pct_prompt(pct_controller *c, const char *id, const char *text, void *token,
                      pct_error *err);
/* ---- modes, config options, prompt content, fork, request cancel */

/* Queues a prompt made of a prepared user message (text and image parts); takes the
 * parts of *msg (left empty) when it returns PCT_OK. */
pct_status pct_prompt_message(pct_controller *c, const char *id, pm_message *msg, void *token,
                              pct_error *err);
/* The session's modes ({"currentModeId", "availableModes"}) and configOptions (array)
 * as JSON text (malloc'd), or NULL when the session is not live. */
char *pct_session_modes(pct_controller *c, const char *id);
char *pct_session_config(pct_controller *c, const char *id);
/* session/set_mode: persisted; emits current_mode_update. PCT_BAD_ARG for an unknown
 * mode (message names it). */
pct_status pct_set_mode(pct_controller *c, const char *id, const char *mode_id, pct_error *err);
/* session/set_config_option ("model" or "mode"): persisted; PCT_BAD_ARG for an unknown
 * option or value. */
pct_status pct_set_config(pct_controller *c, const char *id, const char *config_id,
                          const char *value, pct_error *err);
/* session/fork: copies the history and settings of a session into a new live session
 * whose thread has parent_thread_id = id. PCT_ACTIVE while the source runs a prompt. */
pct_status pct_session_fork(pct_controller *c, const char *id, char out_id[PST_ID_LEN],
                            pct_error *err);
/* Whether the session's current model takes audio input (OpenAI audio models); model
 * (may be NULL) receives the current model's spec. pct_default_audio: the same for the
 * host's default model (what initialize advertises). */
bool pct_session_audio(pct_controller *c, const char *id, char *model, size_t len);
bool pct_default_audio(pct_controller *c);
/* The live session's directory (canonical) into out; false when not live. */
bool pct_session_cwd(pct_controller *c, const char *id, char *out, size_t len);
/* The session's epoch and its running turn and attempt ("" when none run): the ids an
 * agent-to-client request of that turn (a permission question) carries. false when the
 * session is not live. */
bool pct_session_turn_ids(pct_controller *c, const char *id, uint64_t *epoch, char turn[48],
                          char attempt[48]);
/* Tells the user something about their prompt (an agent_message_chunk, stamped). */
void pct_notice(pct_controller *c, const char *id, const char *text);
/* $/cancel_request of a session/prompt: cancels that prompt whether running or queued
 * (token = the one given to pct_prompt; compared, never dereferenced). */
void pct_cancel_prompt(pct_controller *c, const char *id, void *token);

/* Cancels the running turn of a session (no-op when idle or unknown). */
void pct_cancel(pct_controller *c, const char *id);
/* A cancel with a target and the queue's fate. turn_id (NULL: the running turn, like
 * pct_cancel) names the turn to cancel, attempt_id (may be NULL) its attempt: a turn
 * that already ended, or another attempt, is left alone, so a repeated cancel is a no-op.
 * Queued prompts survive a cancel unless clear_queue: then each is answered "cancelled"
 * without running. */
typedef struct pct_cancel_opts {
    const char *turn_id;
    const char *attempt_id;
    bool clear_queue;
} pct_cancel_opts;
void pct_cancel_ex(pct_controller *c, const char *id, const pct_cancel_opts *o);
/* The prompts waiting behind the running one, oldest first, as JSON text (malloc'd):
 * [{"turnId", "text" (its first 200 bytes)}]. */
pct_status pct_queue_list(pct_controller *c, const char *id, char **json_out, pct_error *err);
/* Drops every waiting prompt (each is answered "cancelled"); *cleared says how many.
 * PCT_CLOSING while the session closes. */
pct_status pct_queue_clear(pct_controller *c, const char *id, size_t *cleared, pct_error *err);
/* Renames a session (title 1..200 bytes, stored; a live session emits
 * session_info_update). */
pct_status pct_session_rename(pct_controller *c, const char *id, const char *title, pct_error *err);
/* Archives or unarchives a session: an archived one leaves session/list unless the list
 * asks for archived sessions. */
pct_status pct_session_archive(pct_controller *c, const char *id, bool archived, pct_error *err);
/* Drops the last `turns` turns (a turn starts at a user message) of an idle session as a
 * new history state: the stored rows stay; the thread's meta records the hidden range
 * and the session is made live again without them (a new epoch). *dropped receives how
 * many turns were dropped (fewer when the history is shorter). PCT_BUSY while a prompt
 * runs or waits. */
pct_status pct_session_rewind(pct_controller *c, const char *id, int turns, int *dropped,
                              pct_error *err);
/* session/list with the archived sessions too when include_archived. */
pct_status pct_session_list_opts(pct_controller *c, const char *cwd, const char *cursor,
                                 int all_machines, bool include_archived, pst_thread_page *out,
                                 pct_error *err);
/* Peri close: cancel, then settle. PCT_OK when settled (also for an already closed or
 * unknown session), PCT_INCOMPLETE with err->message = why. Idempotent. */
pct_status pct_close(pct_controller *c, const char *id, pct_error *err);
/* pct_close, telling why it is incomplete: *reason (static) is "active_turn",
 * "subagent", "background_task", "close_intent_not_persisted" or
 * "store_settlement_unknown" with PCT_INCOMPLETE, NULL with PCT_OK. Success means: no
 * turn, subagent or background task of the session is alive, the close intent is in the
 * store ("closeIntent" in the thread's meta) and the store confirmed the history. */
pct_status pct_close_why(pct_controller *c, const char *id, pct_error *err, const char **reason);
/* Credentials (auth.c). pct_has_credentials: the default model resolves to a configured
 * provider (a key or a base URL); why receives the reason when not.
 * pct_authenticate: keeps `key` for provider "openai" or "anthropic" in the user's
 * settings (<home>/.peri/settings.json, mode 0600; never in a project) and applies it to
 * this host at once (new sessions, and existing ones at their next turn). */
bool pct_has_credentials(pct_controller *c, char *why, size_t whylen);
/* The storing half of pct_authenticate, without a host (for a terminal login): keeps
 * `key` for provider "openai" or "anthropic" in <home>/.peri/settings.json. */
pct_status pct_store_api_key(const char *home, const char *provider, const char *key,
                             pct_error *err);
pct_status pct_authenticate(pct_controller *c, const char *provider, const char *key,
                            pct_error *err);
/* Closes every live session (EOF of the transport). */
void pct_close_all(pct_controller *c, long wait_ms);
bool pct_session_closing(pct_controller *c, const char *id);
/* The machine identity this controller holds ("" when it has none: shared store
 * without machine_id). */
const char *pct_machine_id(const pct_controller *c);
size_t pct_live_count(pct_controller *c);

#ifdef __cplusplus
}
#endif
#endif
