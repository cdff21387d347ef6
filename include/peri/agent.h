/*
 * peri/agent.h — the Session aggregate and its RCRA loop (prefix pag_).
 *
 * A pag_session holds one conversation: its frozen system context, its in-memory
 * history (the model-facing view) and its turn state. It runs turns with the
 * Receive -> Compact -> Reason -> Act loop. Everything the loop needs from the
 * outside comes through pag_ports, which the controller fills: the model call, the
 * tool catalogue and executor, the permission broker, persistence and the event
 * sink. The agent never touches the store, the ACP wire or global state itself.
 *
 * Threads: a session runs at most one turn at a time (the caller serialises
 * pag_session_turn). pag_session_cancel may be called from any thread.
 *
 * Also here: settings loading (settings.json + environment) and the frozen context
 * builder, because both are agent-owned configuration.
 */
#ifndef PERI_AGENT_H
#define PERI_AGENT_H

#include "peri/model.h"

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ---------------------------------------------------------------- settings */

typedef struct pag_provider {
    bool present;
    char *base_url; /* owned */
    char *api_key;  /* owned, may be NULL */
} pag_provider;

typedef struct pag_settings {
    pag_provider openai, anthropic;
    /* "sandbox": {"network": bool, "writable": [dirs], "mode": "off"} (issue 11) */
    bool sandbox_off, sandbox_network;
    char **sandbox_writable; /* owned */
    size_t nwritable;
    char *model;        /* "openai:gpt-4o-mini" style, owned, NULL if unset */
    char **allow_tools; /* tool names allowed without asking ("*" = all), owned */
    size_t nallow;
    int64_t context_budget; /* tokens; default 100000 */
    int max_steps;          /* model calls per turn; default 50 */
    int max_retries;        /* model retries before the first token; default 3 */
    long close_grace_ms;    /* how long close waits for a turn to unwind; default 500 */
} pag_settings;

/* Loads <home>/.peri/settings.json (absent file = defaults) and applies the env
 * overrides (OPENAI_API_KEY, OPENAI_BASE_URL, ANTHROPIC_API_KEY, ANTHROPIC_BASE_URL,
 * PERI_MODEL, PERI_CONTEXT_BUDGET, PERI_CLOSE_GRACE_MS). `getenv_fn` lets tests pass
 * their own environment (NULL = getenv). Returns 0, or -1 with a message in err
 * (a malformed settings file is an error; a missing provider is not). */
int pag_settings_load(pag_settings *s, const char *home, const char *(*getenv_fn)(const char *),
                      char *err, size_t errlen);
void pag_settings_clear(pag_settings *s);
bool pag_settings_allows(const pag_settings *s, const char *tool_name);

/* Resolves "provider:model" into a client config. Fills *cfg (strings borrowed from s)
 * and *model_name (borrowed). Returns 0, or -1 with a human message. */
int pag_settings_model(const pag_settings *s, pm_config *cfg, const char **model_name, char *err,
                       size_t errlen);

/* Frozen context: the system prompt fixed at session creation (instructions file
 * AGENTS.md or PERI.md in cwd, capped at 64 KiB; date; cwd). Caller frees. */
char *pag_frozen_context(const char *cwd, int64_t now_ms);

/* ---------------------------------------------------------------- events */

typedef enum pag_event_kind {
    PAG_EV_USER_TEXT = 0, /* replay of a user message: text */
    PAG_EV_TEXT,          /* assistant text delta: text */
    PAG_EV_THOUGHT,       /* reasoning delta: text */
    PAG_EV_TOOL_CALL,     /* tool announced: tool_call_id, title, tool_kind, status, raw_input */
    PAG_EV_TOOL_UPDATE,   /* tool progress/result: tool_call_id, status, text, raw_input */
    PAG_EV_USAGE,         /* used, size */
    PAG_EV_COMMANDS,      /* available commands changed (host-emitted; none offered yet) */
    PAG_EV_SESSION_INFO,  /* title (may be NULL), used = updatedAt in Unix ms */
} pag_event_kind;

typedef struct pag_event {
    pag_event_kind kind;
    uint64_t turn; /* the session's turn generation that produced it (0 = replay) */
    bool replay;
    const char *text;
    const char *tool_call_id;
    const char *tool_name;
    const char *title;
    const char *tool_kind;       /* ACP ToolKind */
    const char *status;          /* pending / in_progress / completed / failed */
    const char *raw_input;       /* JSON text */
    const char *content_json;    /* TOOL_UPDATE: ACP ToolCallContent[] JSON text or NULL */
    const char *locations_json;  /* TOOL_CALL/UPDATE: ACP locations JSON text or NULL */
    const char *meta_json;       /* TOOL_UPDATE: the update's ACP _meta object text or NULL */
    const char *raw_output_json; /* TOOL_UPDATE: ACP rawOutput JSON text or NULL */
    int64_t used, size;
    /* Stamped by the runtime on the way up. */
    const char *session_id;
    uint64_t session_seq;
} pag_event;

/* ---------------------------------------------------------------- ports */

typedef struct pag_tool_info {
    const char *name;
    const char *description;
    const char *schema_json;
    const char *kind; /* ACP ToolKind */
    bool needs_permission;
} pag_tool_info;

typedef struct pag_tool_output {
    char *output; /* text for the model */
    bool is_error;
    char *content_json;    /* ACP ToolCallContent[] JSON text or NULL */
    char *locations_json;  /* ACP locations JSON text or NULL */
    char *meta_json;       /* ACP _meta object text (e.g. the placement decision) or NULL */
    char *raw_output_json; /* ACP rawOutput JSON text or NULL (default {"output": text}) */
} pag_tool_output;

void pag_tool_output_clear(pag_tool_output *o);

typedef enum pag_permission {
    PAG_PERM_ALLOW = 0,
    PAG_PERM_REJECT,
    PAG_PERM_CANCELLED,
} pag_permission;

typedef struct pag_ports {
    void *ctx;
    /* The model call; pm_stream-compatible (tests substitute a script). */
    pm_status (*reason)(void *ctx, const pm_request *req, pm_event_fn on_event, void *ev_ctx,
                        atomic_int *cancel, pm_response *out, pm_error *err);
    const char *model_name; /* NULL: no provider configured (turn fails with kind llm) */
    const char *model_missing_reason;
    const pag_tool_info *tools;
    size_t ntools;
    /* Runs a tool; fills *out (strings malloc'd, freed by the agent with
     * pag_tool_output_clear). Returns 0 when it ran (out->is_error tells a tool failure),
     * 1 when cancelled, -1 for an internal failure (out->output may explain). */
    int (*run_tool)(void *ctx, const char *name, const char *args_json, atomic_int *cancel,
                    struct pag_tool_output *out);
    /* Human title for a tool call (malloc'd, caller frees); NULL port = the tool name. */
    char *(*tool_title)(void *ctx, const char *name, const char *args_json);
    pag_permission (*ask_permission)(void *ctx, const pag_event *tool_call, atomic_int *cancel);
    /* Optional: whether this call needs permission although its pag_tool_info says it
     * does not (e.g. `run` asks only when it would run natively). */
    bool (*tool_needs_permission)(void *ctx, const char *name, const char *args_json);
    /* Persists messages as one atomic batch (role + pm_message_to_json). 0 or -1. */
    int (*persist)(void *ctx, const pm_message *msgs, size_t n);
    void (*emit)(void *ctx, const pag_event *ev);
} pag_ports;

/* ---------------------------------------------------------------- sessions */

typedef struct pag_session pag_session;

typedef struct pag_session_config {
    const char *id;
    const char *cwd;
    const char *system_prompt; /* frozen context */
    int64_t context_budget;    /* tokens; <= 0: 100000 */
    int max_steps;             /* <= 0: 50 */
} pag_session_config;

/* Returns a new session (free with pag_session_free) or NULL when out of memory. */
pag_session *pag_session_new(const pag_session_config *cfg, const pag_ports *ports);
void pag_session_free(pag_session *s);
const char *pag_session_id(const pag_session *s);
const char *pag_session_cwd(const pag_session *s);

/* Restores history from persisted messages (neutral JSON forms, in order). Bad rows are
 * skipped and counted in *skipped. 0, or -1 when out of memory. */
int pag_session_restore(pag_session *s, const char *const *message_json, size_t n, size_t *skipped);
/* Emits the replay events (user_message_chunk, agent_message_chunk, tool_call, ...)
 * for the whole history through emit(ctx, ev). */
void pag_session_replay(const pag_session *s, void (*emit)(void *, const pag_event *), void *ctx);
size_t pag_session_history_len(const pag_session *s);

typedef enum pag_turn_state {
    PAG_TURN_COMPLETED = 0,
    PAG_TURN_INTERRUPTED,
    PAG_TURN_FAILED,
} pag_turn_state;

typedef struct pag_turn_result {
    pag_turn_state state;
    const char *stop_reason; /* static: end_turn, max_tokens, max_turn_requests, refusal,
                                cancelled */
    const char *error_kind;  /* static: "llm", "llm_http", "internal" (FAILED only) */
    long http_status;        /* FAILED with llm_http, else 0 */
    char message[512];
} pag_turn_result;

/* Begins a turn: bumps and returns the turn generation and clears the cancel flag.
 * Call before pag_session_turn, from the thread that serialises turns. */
uint64_t pag_session_begin_turn(pag_session *s);
/* Runs one turn over the user's text (already flattened from content blocks). */
void pag_session_turn(pag_session *s, const char *user_text, pag_turn_result *out);
/* Raises the cancel flag of the running turn (any thread). */
void pag_session_cancel(pag_session *s);
uint64_t pag_session_turn_gen(const pag_session *s);

/* Token estimate of a history (bytes/4 unless a usage report is newer). Exposed for
 * tests of compaction. */
int64_t pag_estimate_tokens(const pm_message *msgs, size_t n);
/* Index of the first message to keep so that msgs[from..n) fits the budget; never
 * separates an assistant tool-call message from its tool results and always keeps the
 * last user message. */
size_t pag_compact_start(const pm_message *msgs, size_t n, int64_t budget);

#endif
