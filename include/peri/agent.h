/*
 * peri/agent.h — the Session aggregate and its RCRA loop (prefix pag_).
 *
 * A pag_session holds one conversation: its frozen system context, its in-memory
 * history (the model-facing view) and its turn state. It runs turns with the
 * Receive -> Compact -> Reason -> Act loop. Everything the loop needs from the
 * outside comes through pag_ports, which the controller fills: the model call, the
 * tool catalogue and executor, the permission broker, persistence, the event sink and
 * the middlewares mounted on its hook points (the chain, in its fixed production order,
 * below). The agent never touches the store, the ACP wire or global state itself.
 *
 * Threads: a session runs at most one turn at a time (the caller serialises
 * pag_session_turn). pag_session_cancel may be called from any thread.
 *
 * Also here: settings (parsed from the settings document the host supplies; the
 * library reads neither files nor the environment for them) and the frozen context
 * builder, because both are agent-owned configuration.
 *
 * CHANGES (after first publication; additive only):
 *   --- session modes (pag_mode), model switching, view start (/compact, /clear),
 *     turns over a prepared user message (images), subagent cancel linking, PLAN/MODE/
 *     CONFIG events, usage token split and cost, "always" permission outcomes,
 *     pag_tool_info.read_only, settings models/named providers, project files (guides,
 *     skills, commands, project allow-list) read confined beneath cwd.
 *   --- the middleware chain (pag_middleware, pag_hook, pag_ports.middlewares,
 *     pag_session_hook, pag_chain_*), session hooks from settings (pag_hooks_*),
 *     pag_project_config.hooks_json.
 *   --- the resumable turn (pag_turn_*, pag_effect): the turn as a state machine without
 *     I/O; pag_session_turn_message is its blocking driver.
 */
#ifndef PERI_AGENT_H
#define PERI_AGENT_H

#include "peri/base.h"
#include "peri/model.h"
#include "peri/tools.h"

#include "peri/json.h"
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------- settings */

typedef struct pag_provider {
    bool present;
    char *base_url; /* owned */
    char *api_key;  /* owned, may be NULL */
} pag_provider;

/* A named provider beyond "openai"/"anthropic" (settings "providers": {"name":
 * {"type": "openai"|"anthropic", "baseUrl": .., "apiKey": ..}}). */
typedef struct pag_named_provider {
    char *name; /* owned */
    pm_provider kind;
    pag_provider p;
} pag_named_provider;

/* One selectable model (settings "models": [{"id": "provider:model", "name": ..,
 * "contextWindow": N, "price": {"input": USD per 1M tokens, "output": ..}}]). */
typedef struct pag_model_entry {
    char *id;               /* "provider:model", owned */
    char *name;             /* display name, owned (defaults to id) */
    int64_t context_window; /* 0: unknown (built-in table, then contextBudget) */
    bool has_price;
    double price_in, price_out; /* USD per million tokens */
} pag_model_entry;

typedef struct pag_settings {
    pag_provider openai, anthropic;
    pag_named_provider *providers; /* extra named providers, owned */
    size_t nproviders;
    pag_model_entry *models; /* the model selector's choices, owned */
    size_t nmodels;
    /* "sandbox": {"network": bool, "writable": [dirs], "mode": "off"} */
    bool sandbox_off, sandbox_network;
    bool sandbox_host_network; /* "network": "host": share the host's network namespace */
    char **sandbox_writable;   /* owned */
    size_t nwritable;
    char *model;        /* "openai:gpt-4o-mini" style, owned, NULL if unset */
    char **allow_tools; /* tool names allowed without asking ("*" = all), owned */
    size_t nallow;
    int64_t context_budget; /* tokens; default 100000 */
    int max_steps;          /* model calls per turn; default 50 */
    int max_retries;        /* model retries before the first token; default 3 */
    long close_grace_ms;    /* how long close waits for a turn to unwind; default 500 */
    /* "autoCompact": {"enabled", "threshold"}: before a turn whose context would reach
     * threshold x contextBudget, the model summarizes the earlier conversation (the
     * mechanical trim is the fallback). 0: off; default 0.85. */
    double auto_compact_threshold;
    /* "goal": {"maxContinuations"}: how many turns the agent may start on its own to
     * pursue the session's goal after a turn ended without it met. Default 3; 0: none. */
    int goal_max_continuations;
    pj_t *doc; /* owned deep copy of the whole settings document: other modules read
                    their own keys here (never re-read from disk) */
} pag_settings;

/* Parses the whole settings document (a JSON object, borrowed; NULL = {}) and keeps
 * a private deep copy in s->doc. Returns 0, or -1 with a message in err ("settings
 * must be an object", out of memory). A missing provider is not an error here. The
 * CLI builds the document from ~/.peri/settings.json (or --settings) and the
 * environment (src/cli/host_env.c). */
int pag_settings_from_doc(pag_settings *s, const pj_t *doc, char *err, size_t errlen);
void pag_settings_clear(pag_settings *s);

/* settings_schema.c: checks a settings document against the keys the host reads and
 * passes each finding to report as one message that names the field by its path
 * ("providers.openai.baseUrl: must be a string, not an integer"): error = a value of
 * the wrong type or shape; warning (error false) = a key the host does not read, with
 * "did you mean" the nearest known key. Returns the number of errors. Reads only doc. */
typedef void (*pag_settings_report_fn)(void *ud, bool error, const char *message);
size_t pag_settings_check(const pj_t *doc, pag_settings_report_fn report, void *ud);
/* The edit distance of a and b (with swaps of neighbours; ASCII case folded). */
size_t pag_edit_distance(const char *a, const char *b);
bool pag_settings_allows(const pag_settings *s, const char *tool_name);

/* Resolves "provider:model" into a client config. Fills *cfg (strings borrowed from s)
 * and *model_name (borrowed). Returns 0, or -1 with a human message. */
int pag_settings_model(const pag_settings *s, pm_config *cfg, const char **model_name, char *err,
                       size_t errlen);
/* Same for an explicit "provider:model" spec (NULL: the default model). */
int pag_settings_model_spec(const pag_settings *s, const char *spec, pm_config *cfg,
                            const char **model_name, char *err, size_t errlen);
/* The default model spec ("openai:gpt-4o-mini" ...), or NULL when no provider is set. */
const char *pag_settings_default_model(const pag_settings *s);
/* The settings entry for a spec, or NULL. */
const pag_model_entry *pag_settings_model_entry(const pag_settings *s, const char *spec);
/* Context window of a model: settings entry, else the built-in table of known models,
 * else 0. */
int64_t pag_model_context_window(const pag_settings *s, const char *spec);
/* The model selector's options (ACP SessionConfigSelectOption[]): appends spec to opts
 * as {value, name, description: its context window} unless it is NULL, empty or there
 * already (pag_model_choice_seen). */
void pag_model_choice_add(pj_t *opts, const pag_settings *s, const char *spec);
bool pag_model_choice_seen(const pj_t *opts, const char *spec);
/* Prices (USD per million input/output tokens): settings entry, else the built-in
 * table; false when unknown. */
bool pag_model_price(const pag_settings *s, const char *spec, double *in, double *out);

/* ---------------------------------------------------------------- project files */

/* Reads <root>/<rel> confined beneath root (ptl_read_beneath: no "..", no symlink leading
 * out, O_NONBLOCK, a regular file without other hard links) and at most `max` bytes
 * (larger: cut at max). Returns the malloc'd NUL-terminated text (length in *len when not
 * NULL) or NULL (absent, refused, or out of memory). */
char *pag_read_beneath(const char *root, const char *rel, size_t max, size_t *len);
/* Splits optional YAML-ish front matter ("---\nkey: value\n---\n") off a Markdown text.
 * *value receives a malloc'd copy of key's value (NULL if absent); returns a pointer to
 * the body inside text. */
const char *pag_front_matter(const char *text, const char *key, char **value);
/* ---- project trust (src/agent/trust.c, docs/security.md)
 * A project's .peri/settings.json may name MCP servers and allow rules. Neither takes
 * effect before the user trusted that exact content: a SHA-256 of its canonical form,
 * bound to the project's real path, kept in <home>/.peri/trust.json (user state). */
#define PAG_TRUST_DIGEST_HEX 65
typedef struct pag_project_config {
    char *real_path; /* the project's real path (NULL when there is nothing to trust) */
    char *material;  /* canonical JSON of every trust-relevant value, NULL if none */
    char digest[PAG_TRUST_DIGEST_HEX]; /* SHA-256 hex of path + material */
    char *servers_json;                /* {"mcpServers": {...}} of the project, or NULL */
    char **allow;                      /* the project's permissions.allow entries */
    size_t nallow;
    bool broken;      /* the file exists but is not a JSON object: nothing of it applies */
    char *hooks_json; /* the project's "hooks" object (JSON text), or NULL; part of the
                         trust material, so it applies only once that content is trusted */
} pag_project_config;
/* Reads <cwd>/.peri/settings.json once, through the confined reader. 0 (an absent or
 * unreadable file gives an empty config), or -1 when out of memory / cwd is not a
 * directory. Free with pag_project_config_free. */
int pag_project_config_read(const char *cwd, pag_project_config *out);
void pag_project_config_free(pag_project_config *pc);
/* True when the config has anything that needs trust. */
bool pag_project_config_any(const pag_project_config *pc);
/* True when the user trusted exactly this content of this project. */
bool pag_trust_is_trusted(const char *home, const pag_project_config *pc);
/* Records the user's trust in exactly this content. 0, or -1 with err. */
int pag_trust_record(const char *home, const pag_project_config *pc, char *err, size_t errlen);
/* Forgets every decision about the project at cwd. 0, or -1 with err. */
int pag_trust_revoke(const char *home, const char *cwd, char *err, size_t errlen);
/* The store's "projects" object as indented JSON (malloc'd), NULL when out of memory. */
char *pag_trust_list(const char *home);
/* "Always allow in this project": the user's answers, kept in the user's trust store
 * (never in the project). */
bool pag_trust_user_allows(const char *home, const char *cwd, const char *tool);
int pag_trust_user_allow_add(const char *home, const char *cwd, const char *tool, char *err,
                             size_t errlen);
/* True when the tool may run without asking because of the project: the user's own
 * "always in this project" answer, or the project file's permissions.allow naming it
 * (whole names only, "*" never) once that content is trusted. */
bool pag_project_allows(const char *home, const char *cwd, const char *tool_name);
/* True (with why) when cwd must not be a session directory: "/", the user's home or any
 * directory containing it, the user config dir <home>/.peri or anything inside it, or,
 * when ~/.peri is a symlink, where it really lives, anything inside that or any directory
 * containing it (the agent could rewrite the user's settings and trust store). */
bool pag_cwd_refused(const char *cwd, const char *home, char *why, size_t whylen);
/* A skill's SKILL.md body (front matter removed) from <cwd>/.peri/skills/<name>/; NULL
 * when absent or the name is not a plain directory name. Caller frees. */
char *pag_skill_body(const char *cwd, const char *name);

/* User slash commands: <cwd>/.peri/commands/NAME.md then <home>/.peri/commands/NAME.md
 * (project wins on a name clash). */
typedef struct pag_user_command {
    char *name;        /* file name without .md */
    char *description; /* front matter description, else the first body line */
    char *hint;        /* front matter argument-hint, may be NULL */
    char *body;        /* Markdown body; $ARGUMENTS is replaced when run */
} pag_user_command;

/* Loads the commands into *out (malloc'd array, *n entries). 0, or -1 out of memory. */
int pag_user_commands_load(const char *cwd, const char *home, pag_user_command **out, size_t *n);
void pag_user_commands_free(pag_user_command *c, size_t n);
/* The body with every $ARGUMENTS replaced by args (malloc'd). */
char *pag_expand_arguments(const char *body, const char *args);

/* Frozen context: the system prompt fixed at session creation (project guides AGENTS.md,
 * then PERI.md and CLAUDE.md if present, read confined and capped at 64 KiB in all; a
 * Skills summary from .peri/skills/<name>/SKILL.md front matter; date; cwd). Caller frees. */
char *pag_frozen_context(const char *cwd, int64_t now_ms);

/* ---------------------------------------------------------------- events */

typedef enum pag_event_kind {
    PAG_EV_USER_TEXT = 0, /* replay of a user message: text (content_json: a non-text
                             ACP ContentBlock, e.g. an image, instead) */
    PAG_EV_TEXT,          /* assistant text delta: text */
    PAG_EV_THOUGHT,       /* reasoning delta: text */
    PAG_EV_TOOL_CALL,     /* tool announced: tool_call_id, title, tool_kind, status, raw_input */
    PAG_EV_TOOL_UPDATE,   /* tool progress/result: tool_call_id, status, text, raw_input */
    PAG_EV_USAGE,         /* used, size */
    PAG_EV_COMMANDS,      /* available commands changed (host-emitted; none offered yet) */
    PAG_EV_SESSION_INFO,  /* title (NULL: unchanged, or cleared with clear_title), used =
                             updatedAt in Unix ms */
    PAG_EV_PLAN,          /* content_json = ACP PlanEntry[] JSON text */
    PAG_EV_MODE,          /* text = the current mode id */
    PAG_EV_CONFIG,        /* content_json = ACP SessionConfigOption[] JSON text */
    /* automatic compaction before a turn: input_tokens = the estimate before, used = after,
     * size = the compaction budget, text = "summary" (the model wrote it) or "trim" (the
     * summary request failed: the oldest turns are trimmed mechanically) */
    PAG_EV_COMPACTION,
} pag_event_kind;

typedef struct pag_event {
    pag_event_kind kind;
    uint64_t turn; /* the session's turn generation that produced it (0 = replay) */
    bool replay;
    const char *text;
    const char *tool_call_id;
    const char *tool_name;
    const char *title;
    const char *tool_kind;      /* ACP ToolKind */
    const char *status;         /* pending / in_progress / completed / failed */
    const char *raw_input;      /* JSON text */
    const char *content_json;   /* TOOL_UPDATE: ACP ToolCallContent[] JSON text or NULL */
    const char *locations_json; /* TOOL_CALL/UPDATE: ACP locations JSON text or NULL */
    const char
        *meta_json; /* the update's ACP _meta object text or NULL (placement, subagent nesting) */
    const char *raw_output_json; /* TOOL_UPDATE: ACP rawOutput JSON text or NULL */
    int64_t used, size;
    int64_t input_tokens, output_tokens; /* USAGE: the call's split of `used` */
    bool has_cost;                       /* USAGE: cost_usd is known */
    double cost_usd;                     /* USAGE: session cost so far (USD) */
    bool clear_title;                    /* SESSION_INFO: the session lost its title */
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
    bool read_only; /* allowed in plan mode */
} pag_tool_info;

/* A tool's output as the agent hands it to the model and the client: the tools layer's
 * result type (output, is_error, content_json, locations_json, meta_json,
 * raw_output_json; raw_output_json NULL means the default {"output": text}). Clear with
 * pag_tool_output_clear (= ptl_result_clear). */
typedef ptl_result pag_tool_output;

void pag_tool_output_clear(pag_tool_output *o);

typedef enum pag_permission {
    PAG_PERM_ALLOW = 0,
    PAG_PERM_REJECT,
    PAG_PERM_CANCELLED,
    PAG_PERM_ALLOW_ALWAYS,  /* broker answers only: remembered for the session */
    PAG_PERM_REJECT_ALWAYS, /* remembered for the session */
    PAG_PERM_ALLOW_PROJECT, /* remembered in the user's trust store for this project */
    /* the answer to a project-trust request (tool_name PAG_TRUST_REQUEST_TOOL) only: the
     * user trusts exactly the configuration shown; no other option of any request maps
     * here, so a client that picks "allow" blindly never grants trust */
    PAG_PERM_TRUST_PROJECT,
} pag_permission;
/* The tool name of a project-trust permission request (never a real tool). */
#define PAG_TRUST_REQUEST_TOOL "peri.trust_project"

/* ---------------------------------------------------------------- modes */

typedef enum pag_mode {
    PAG_MODE_DEFAULT = 0,  /* ask before edits and shell */
    PAG_MODE_ACCEPT_EDITS, /* file edits allowed, shell asks */
    PAG_MODE_PLAN,         /* read-only tools only; the model is told it is planning */
    PAG_MODE_BYPASS,       /* nothing asks (the sandbox still applies) */
} pag_mode;

#define PAG_MODE_COUNT 4
const char *pag_mode_id(pag_mode m);   /* "default" "acceptEdits" "plan" "bypassPermissions" */
const char *pag_mode_name(pag_mode m); /* human name */
const char *pag_mode_description(pag_mode m);
bool pag_mode_parse(const char *id, pag_mode *out);

/* The host's tool functions, called with pag_ports.ctx. They depend on the kind of host,
 * not on the session, so a host keeps one static const table of them. */
typedef struct pag_tool_ops {
    /* Optional (MCP tools/list_changed): called before each model request; returns the
     * tool list to use from now on (*ntools set), which must stay valid until the next
     * call. NULL: pag_ports.tools/ntools never change. */
    const pag_tool_info *(*now)(void *ctx, size_t *ntools);
    /* Runs a tool; fills *out (strings malloc'd, freed by the agent with
     * pag_tool_output_clear). Returns 0 when it ran (out->is_error tells a tool failure),
     * 1 when cancelled, -1 for an internal failure (out->output may explain). NULL: every
     * tool call fails. */
    int (*run)(void *ctx, const char *name, const char *args_json, atomic_int *cancel,
               pag_tool_output *out);
    /* Optional: a human title for a tool call (malloc'd, caller frees); NULL: the name. */
    char *(*title)(void *ctx, const char *name, const char *args_json);
    /* Optional: whether this call needs permission although its pag_tool_info says it
     * does not (e.g. `run` asks only when it would run natively). */
    bool (*needs_permission)(void *ctx, const char *name, const char *args_json);
} pag_tool_ops;

typedef struct pag_ports {
    void *ctx;
    /* The model call; pm_stream-compatible (tests substitute a script). */
    pm_status (*reason)(void *ctx, const pm_request *req, pm_event_fn on_event, void *ev_ctx,
                        atomic_int *cancel, pm_response *out, pm_error *err);
    const char *model_name; /* NULL: no provider configured (turn fails with kind llm) */
    const char *model_missing_reason;
    const pag_tool_info *tools;
    size_t ntools;
    const pag_tool_ops *tool_ops; /* how its tools run; NULL: every tool call fails */
    pag_permission (*ask_permission)(void *ctx, const pag_event *tool_call, atomic_int *cancel);
    /* Persists messages as one atomic batch (role + pm_message_to_json). 0 or -1. */
    int (*persist)(void *ctx, const pm_message *msgs, size_t n);
    void (*emit)(void *ctx, const pag_event *ev);
    /* The middlewares the host mounts (borrowed; must outlive the session). Each name
     * must be one of the names of pag_chain_order, at most once; the chain runs them in that fixed
     * order, never in the order given here. NULL/0: only the agent's own (permission). */
    const struct pag_middleware *middlewares;
    size_t nmiddlewares;
} pag_ports;

/* ---------------------------------------------------------------- sessions */

typedef struct pag_session pag_session;

typedef struct pag_session_config {
    const char *id;
    const char *cwd;
    const char *system_prompt; /* frozen context */
    int64_t context_budget;    /* tokens; <= 0: 100000 */
    int max_steps;             /* <= 0: 50 */
    /* automatic model-written compaction before a turn (pag_settings): a fraction of
     * context_budget in (0, 1]; 0: off */
    double auto_compact_threshold;
} pag_session_config;

/* Returns a new session (free with pag_session_free) or NULL when out of memory or when
 * ports->middlewares names a middleware that is not in the production order (or one
 * twice). */
pag_session *pag_session_new(const pag_session_config *cfg, const pag_ports *ports);
void pag_session_free(pag_session *s);
const char *pag_session_id(const pag_session *s);
const char *pag_session_cwd(const pag_session *s);

/* Restores history from persisted messages (neutral JSON forms, in order). Bad rows are
 * skipped and counted in *skipped. The model's view starts at the last system-role
 * message (a /compact summary or /clear marker). 0, or -1 when out of memory. */
int pag_session_restore(pag_session *s, const char *const *message_json, size_t n, size_t *skipped);
/* Emits the replay events (user_message_chunk, agent_message_chunk, tool_call, ...)
 * for the whole history through emit(ctx, ev). Replayed tool_call and tool_call_update
 * events carry the call's tool_name (so the host can replay what its own tools showed,
 * e.g. a plan). */
void pag_session_replay(const pag_session *s, void (*emit)(void *, const pag_event *), void *ctx);
size_t pag_session_history_len(const pag_session *s);
/* Takes the last turn out of the history: its user message and everything after it (the
 * model's view no longer holds them). For a turn that ended "refusal": ACP's refusal
 * means the prompt and everything after it are not part of the next prompt. Call
 * between turns, from the thread that serialises them, right after the turn (a turn
 * that kept no user message, e.g. one a hook blocked, leaves nothing to drop; /compact
 * and /clear forget the turn too). Returns how many messages were dropped. The host
 * hides the same stored rows (as a rewind does), so a reload does not bring them back. */
size_t pag_session_drop_turn(pag_session *s);

typedef enum pag_turn_state {
    PAG_TURN_COMPLETED = 0,
    PAG_TURN_INTERRUPTED,
    PAG_TURN_FAILED,
} pag_turn_state;

typedef struct pag_turn_result {
    pag_turn_state state;
    const char *stop_reason; /* static: end_turn, max_tokens, max_turn_requests, refusal,
                                cancelled; refusal: the model refused, or a
                                UserPromptSubmit hook blocked the prompt */
    const char *error_kind;  /* static: "llm", "llm_http", "internal" (FAILED only) */
    long http_status;        /* FAILED with llm_http, else 0 */
    char message[512];
} pag_turn_result;

/* telemetry.c: one turn as an OpenTelemetry span, the OTLP/HTTP JSON body (malloc'd;
 * NULL when out of memory or a string is not UTF-8). ids: 24 random bytes (16 of the
 * trace id, 8 of the span id). Strings are borrowed; NULL service/form: "peri-agent",
 * "native". No prompt or output is in it. */
typedef struct pag_telemetry_span {
    const char *service, *form, *session_id, *turn_id, *machine_id, *model_spec;
    int64_t start_ms, end_ms; /* Unix time */
    int64_t input_tokens, output_tokens, model_calls;
    const struct pag_turn_result *result;
    const uint8_t *ids;
} pag_telemetry_span;
char *pag_telemetry_span_json(const pag_telemetry_span *t);

/* Runs one turn over a prepared user message (text and image parts); takes the parts
 * of *user (left empty). */
void pag_session_turn_message(pag_session *s, pm_message *user, pag_turn_result *out);
/* Modes: read by every tool call, so a change applies at once (any thread). */
void pag_session_set_mode(pag_session *s, pag_mode m);
pag_mode pag_session_mode(const pag_session *s);
/* Switches the model (strings borrowed, must outlive the session or the next switch).
 * Call only between turns (from the thread that serialises turns). */
void pag_session_set_model(pag_session *s, const char *model_name, const char *missing_reason);
/* A subagent follows its parent's cancel flag (borrowed; must outlive the session). */
void pag_session_link_cancel(pag_session *s, atomic_int *parent_cancel);
/* /compact: asks the model for a summary of the visible history (plus the user's
 * instructions, may be NULL), persists it as a system message and makes the model's view
 * start there. The summary is emitted as agent text. Call like pag_session_turn. */
void pag_session_compact(pag_session *s, const char *instructions, pag_turn_result *out);
/* /clear: persists a marker and hides the whole history from the model. */
void pag_session_clear(pag_session *s, pag_turn_result *out);
/* The text of the last assistant message (malloc'd) or NULL. */
char *pag_session_last_answer(const pag_session *s);

/* ---------------------------------------------------------------- the resumable turn
 * (src/agent/turn.c, docs/agent-host.md "The turn as a state machine"). One turn of the
 * RCRA loop as a state machine that never blocks and does no I/O: the driver asks for
 * the next effect, performs it however it likes (threads and blocking calls natively,
 * an event loop and host ports in the WebAssembly form) and feeds the result back.
 * pag_session_turn_message is the native driver over it. Middleware hooks, the tool
 * title/catalogue functions and the event sink are called synchronously from inside the
 * feed functions (they are the host's in-process ports).
 *
 * Effects, one at a time (pag_turn_next is idempotent until the effect is answered):
 *   MODEL_CALL  run fx.model.request (borrowed, valid until pag_turn_model_done); pass
 *               fx.model.on_event/ctx as the call's event callback (NULL: no events,
 *               a compaction summary). attempt counts retries of the same request.
 *   TOOL_CALLS  the calls of one assistant message (fx.tools.calls[0..n)). For each:
 *               pag_turn_tool_start (announces it and passes PreToolUse: true = run it),
 *               then pag_turn_tool_done with its result; starts and results in any
 *               order and interleaving.
 *   PERSIST     commit fx.persist.msgs[0..n) as one atomic batch; pag_turn_persist_done.
 *   WAIT        arm a timer of fx.wait_ms (a retry's backoff); pag_turn_wait_done.
 *   DONE        terminal: fx.result (completed / interrupted / failed), exactly once. */

typedef enum pag_effect_kind {
    PAG_FX_MODEL_CALL = 0,
    PAG_FX_TOOL_CALLS,
    PAG_FX_PERSIST,
    PAG_FX_WAIT,
    PAG_FX_DONE,
} pag_effect_kind;

/* One tool call of a TOOL_CALLS effect (strings borrowed from the turn). */
typedef struct pag_turn_call {
    const char *id, *name, *arguments;
    const pag_tool_info *tool; /* NULL: not a known tool (start answers it as an error) */
} pag_turn_call;

typedef struct pag_effect {
    pag_effect_kind kind;
    struct {
        const pm_request *request;
        pm_event_fn on_event; /* pag_turn_model_event or NULL */
        void *ctx;            /* the turn */
        int attempt;          /* 0, then 1.. for retries after a WAIT */
        bool summary;         /* an automatic-compaction summary, not a step of the turn */
    } model;
    struct {
        const pag_turn_call *calls;
        size_t n;
    } tools;
    struct {
        const pm_message *msgs;
        size_t n;
    } persist;
    long wait_ms;
    const pag_turn_result *result; /* DONE */
} pag_effect;

typedef struct pag_turn pag_turn;

/* A turn of session s over a prepared user message (takes the parts of *user, left
 * empty). Nothing runs until the first pag_turn_next. Returns NULL when out of memory
 * (*user is then left as it was). One turn of a session at a time; free with
 * pag_turn_free (a turn freed before DONE leaves the history as the last fed effect
 * left it). */
pag_turn *pag_turn_new(pag_session *s, pm_message *user);
void pag_turn_free(pag_turn *t);
/* The effect the turn waits on now (valid until it is answered). */
pag_effect_kind pag_turn_next(pag_turn *t, pag_effect *fx);
/* MODEL_CALL: a stream event of the call (a pm_event_fn; ctx is the turn). */
int pag_turn_model_event(const pm_stream_event *ev, void *turn);
/* MODEL_CALL: the call ended. resp (may be NULL) is moved into the turn (left empty).
 * retry_ms >= 0: the failure may be retried after that many ms (pm_call_retry_ms: the
 * turn answers WAIT then the same MODEL_CALL again); -1: the outcome is final. */
void pag_turn_model_done(pag_turn *t, pm_status st, pm_response *resp, const pm_error *err,
                         long retry_ms);
/* TOOL_CALLS: announces call i and passes it through PreToolUse. true: run it, then call
 * pag_turn_tool_done; false: it is already answered (unknown tool, cancelled, denied). */
bool pag_turn_tool_start(pag_turn *t, size_t i);
/* TOOL_CALLS: the result of the first started, unanswered call with this id. rc as
 * pag_tool_ops.run (0 ran, 1 cancelled, -1 internal); out's strings are taken (out is
 * cleared). 0, or -1 when no such call waits for a result. */
int pag_turn_tool_done(pag_turn *t, const char *id, int rc, pag_tool_output *out);
/* PERSIST: 0 committed, else the commit failed (the turn fails). */
void pag_turn_persist_done(pag_turn *t, int rc);
/* WAIT: the timer fired (or the driver gives up waiting early). */
void pag_turn_wait_done(pag_turn *t);
/* Cancel is an input: the same as pag_session_cancel (any thread). The turn honours it
 * at its checkpoints: before each step, before each tool call, after a model call or a
 * wait. */
void pag_turn_cancel(pag_turn *t);

/* Begins a turn: bumps and returns the turn generation and clears the cancel flag.
 * Call before pag_session_turn, from the thread that serialises turns. */
uint64_t pag_session_begin_turn(pag_session *s);
/* Runs one turn over the user's text (already flattened from content blocks). */
void pag_session_turn(pag_session *s, const char *user_text, pag_turn_result *out);
/* Raises the cancel flag of the running turn (any thread). */
void pag_session_cancel(pag_session *s);
uint64_t pag_session_turn_gen(const pag_session *s);

/* ---------------------------------------------------------------- middleware chain
 * (src/agent/middleware/, docs/middlewares.md). The business aspects of a session
 * (hooks, permission, questions, subagents, background tasks, skills, ...) are
 * middlewares mounted on the agent's hook points. The production order is one list
 * (pag_chain_order) and part of the behaviour contract: "before" hook points run the
 * middlewares in that order and stop at the first deny; "after" hook points run them in
 * the reverse order. The loop knows the hook points, never a middleware. */

typedef enum pag_hook {
    PAG_HOOK_SESSION_START = 0, /* before the first turn of this live instance */
    PAG_HOOK_PROMPT,            /* a user prompt is about to go to the model */
    PAG_HOOK_PRE_TOOL,          /* before a tool call (after the model asked for it) */
    PAG_HOOK_POST_TOOL,         /* after a tool call ran */
    PAG_HOOK_PRE_COMPACT,       /* before /compact (or automatic compaction) */
    PAG_HOOK_STOP,              /* a turn ended */
    PAG_HOOK_SUBAGENT_STOP,     /* a subagent's run ended */
} pag_hook;
#define PAG_HOOK_COUNT  7
#define PAG_HOOK_BIT(h) (1u << (unsigned)(h))
/* "SessionStart" "UserPromptSubmit" "PreToolUse" "PostToolUse" "PreCompact" "Stop"
 * "SubagentStop" (the names settings use). */
const char *pag_hook_name(pag_hook h);
bool pag_hook_parse(const char *name, pag_hook *out);
/* True for the hook points that run the chain in reverse order (after a fact). */
bool pag_hook_is_after(pag_hook h);

/* One hook point being passed (all strings borrowed for the call). */
typedef struct pag_hook_call {
    pag_hook hook;
    pag_session *session; /* the session at the hook point (NULL: none) */
    const char *session_id, *cwd;
    const char *prompt;        /* PROMPT: the user's text */
    const pag_tool_info *tool; /* PRE/POST_TOOL: NULL when the tool is unknown */
    const pag_event *call;     /* PRE/POST_TOOL: the tool_call event (id, name, raw_input) */
    const char *tool_output;   /* POST_TOOL: the result text */
    bool tool_error;           /* POST_TOOL */
    const char *stop_reason;   /* STOP, SUBAGENT_STOP */
    const char *agent_id;      /* SUBAGENT_STOP: the subagent's id */
    atomic_int *cancel;        /* the turn's cancel flag (may be NULL) */
} pag_hook_call;

/* A middleware's answer: deny (with a reason the model or the user sees) and/or context
 * to add. Strings malloc'd; free with pag_hook_answer_clear. */
typedef struct pag_hook_answer {
    bool deny;
    char *reason;
    char *context;
} pag_hook_answer;
void pag_hook_answer_clear(pag_hook_answer *a);
/* Appends text (a new line when context is not empty). 0, or -1 when out of memory. */
int pag_hook_answer_add_context(pag_hook_answer *a, const char *text);
/* Sets deny with reason (the first deny's reason is kept). 0, or -1 out of memory. */
int pag_hook_answer_deny(pag_hook_answer *a, const char *reason);

typedef struct pag_middleware {
    const char *name; /* one of the names of pag_chain_order */
    unsigned hooks;   /* PAG_HOOK_BIT(...) of the hook points it handles */
    void *ctx;
    void (*on_hook)(void *ctx, const pag_hook_call *call, pag_hook_answer *ans);
} pag_middleware;

/* The production order: fills names[0..cap) with the middlewares' names (static
 * strings), first to last; returns the length of the order. */
size_t pag_chain_order(const char **names, size_t cap);
/* The position of name in the production order, or -1. */
int pag_chain_index(const char *name);
/* What middleware i of the production order declares: its tools (static descriptors,
 * *ntools set; NULL when none) and its system prompt contribution (NULL when none). */
const pag_tool_info *pag_chain_tools(size_t i, size_t *ntools);
const char *pag_chain_prompt(size_t i);
/* Runs the session's chain at a hook point (call->session = s is set). The answer
 * gathers every context and the first deny. */
void pag_session_hook(pag_session *s, pag_hook_call *call, pag_hook_answer *ans);

/* ---- session hooks from settings (src/agent/middleware/hooks.c)
 * "hooks": {"PreToolUse": [{"matcher": "shell|write", "hooks": [{"type": "command",
 * "command": "...", "timeout": 30, "unsandboxed": true, "failClosed": true} | {"type":
 * "mcp_tool", "server": S, "tool": T}]}], ...}. Commands run like `shell`: through
 * placement in the native sandbox (cwd read-write, no network), unsandboxed only with
 * the hook's own "unsandboxed": true (logged on every run). The event is JSON on stdin;
 * the answer is stdout JSON or the exit code (docs/middlewares.md). */
typedef struct pag_hooks pag_hooks;
struct ptl_sandbox;
typedef struct pag_hooks_env {
    const char *cwd;                   /* the session directory */
    const struct ptl_sandbox *sandbox; /* placement (NULL: commands cannot run) */
    /* Runs an MCP tool (full name mcp__S__T) with args; the text result malloc'd into
     * *text; 0 ok, 1 the tool reported an error, -1 failed. NULL: mcp_tool hooks fail. */
    int (*run_tool)(void *ctx, const char *name, const char *args_json, atomic_int *cancel,
                    char **text);
    void *ctx;
    pb_logger log;
} pag_hooks_env;
/* Validates and keeps the user's "hooks" object (borrowed JSON; NULL = none). Returns a
 * set (free with pag_hooks_free) or NULL with err (a message naming the bad field). */
pag_hooks *pag_hooks_new(const pj_t *user_hooks, const pag_hooks_env *env, char *err,
                         size_t errlen);
void pag_hooks_free(pag_hooks *h);
/* Replaces the project's hooks (JSON text of the project's trusted "hooks" object; NULL
 * = none). Call only with content the user trusted. 0, or -1 (bad content: none kept). */
int pag_hooks_set_project(pag_hooks *h, const char *hooks_json, char *err, size_t errlen);
/* The "hooks" middleware of this set (ctx = h). */
pag_middleware pag_hooks_middleware(pag_hooks *h);
/* Checks a "hooks" value (settings or project); reports each problem through report
 * (path-prefixed); returns the number of errors. */
size_t pag_hooks_check(const pj_t *hooks, const char *path, pag_settings_report_fn report,
                       void *ud);

/* Token estimate of a history (bytes/4 unless a usage report is newer). Exposed for
 * tests of compaction. */
int64_t pag_estimate_tokens(const pm_message *msgs, size_t n);
/* Index of the first message to keep so that msgs[from..n) fits the budget; never
 * separates an assistant tool-call message from its tool results and always keeps the
 * last user message. */
size_t pag_compact_start(const pm_message *msgs, size_t n, int64_t budget);

/* ---------------------------------------------------------------- goal middleware
 * (src/agent/middleware/goal.c, docs/middlewares.md): a standing objective of the
 * session. While set, the model's system prompt states it (so it survives compaction)
 * and the `goal_complete` tool lets the model declare it met; the host continues a turn
 * that ended without it met, on its own, up to the user's bound (settings
 * goal.maxContinuations), and persists text and state with the session. */

/* Sets (text) or clears (NULL or "") the goal; met: its state (false for a new goal).
 * 0, or -1 when out of memory or the text is longer than 4000 bytes. */
int pag_session_set_goal(pag_session *s, const char *text, bool met);
/* The goal's text (malloc'd) and state, or NULL when none. */
char *pag_session_goal(pag_session *s, bool *met);
/* The goal_complete tool: its descriptor (static) and its run (0, or -1 out of memory). */
const pag_tool_info *pag_goal_tool(void);
int pag_goal_tool_run(pag_session *s, const char *args_json, pag_tool_output *out);
/* ACP PlanEntry[] JSON text with the goal's entry first, then entries_json's entries
 * (a todo plan; NULL: none). malloc'd, NULL when out of memory. */
char *pag_goal_plan(const char *goal, bool met, const char *entries_json);
/* The text of automatic continuation n of max toward goal (malloc'd). */
char *pag_goal_continuation(const char *goal, int n, int max);

/* ---------------------------------------------------------------- cron middleware
 * (src/agent/middleware/cron.c, docs/middlewares.md): scheduled prompts of one live
 * session. Schedules live in the caller-owned pag_cron only: they fire while it lives,
 * never two runs of one schedule at once (a due time while the last run is still going
 * is skipped and counted), and are gone with it — a restart never revives them. */

typedef struct pag_cron pag_cron;

/* Starts a run of schedule id with prompt. 0: started (the caller calls pag_cron_done
 * when that run ends), -1: it could not start (counted as skipped). Called from the
 * cron's own timer thread, never with a lock of the cron held. */
typedef int (*pag_cron_fire_fn)(void *ctx, uint64_t id, const char *prompt);

/* NULL when out of memory. The timer thread starts with the first schedule. */
pag_cron *pag_cron_new(pag_cron_fire_fn fire, void *ctx);
/* Stops firing at once (no fire call starts after it returns); schedules are kept for
 * listing. Idempotent. */
void pag_cron_stop(pag_cron *c);
/* Stops, joins the timer thread and frees. NULL: no-op. */
void pag_cron_free(pag_cron *c);
/* A run started by fire ended. */
void pag_cron_done(pag_cron *c, uint64_t id);
/* Tells the cron that n schedules of an earlier process of the session were not
 * revived (cron_list says so to the model). */
void pag_cron_set_lost(pag_cron *c, size_t n);
size_t pag_cron_lost(pag_cron *c);
/* The schedules as JSON text [{"id", "schedule", "prompt"}] (malloc'd): what the host
 * records so a later process can say they were not revived. */
char *pag_cron_records(pag_cron *c);
/* The cron_create, cron_list and cron_delete tools. */
const pag_tool_info *pag_cron_tools(size_t *n);
/* Runs one of them: 0 (out->is_error for a refused call), -1 out of memory, -2 when name
 * is not a cron tool. */
int pag_cron_tool_run(pag_cron *c, const char *name, const char *args_json, pag_tool_output *out);

/* A parsed schedule: 5 cron fields (minute hour day-of-month month day-of-week, UTC) or
 * a fixed interval. */
typedef struct pag_cron_spec {
    uint64_t minute;       /* bit m: minute m (0-59) */
    uint32_t hour, dom;    /* bit h (0-23), bit d (1-31) */
    uint16_t month;        /* bit m (1-12) */
    uint8_t dow;           /* bit d (0-6, Sunday 0) */
    bool dom_any, dow_any; /* "*" in that field (cron's day rule) */
    int64_t every_ms;      /* > 0: an interval schedule ("every 30s", "@every 5m") */
} pag_cron_spec;
/* 0, or -1 with err (the field and why). */
int pag_cron_parse(const char *text, pag_cron_spec *out, char *err, size_t errlen);
/* The first due time strictly after after_ms (Unix ms), or -1 when it never comes
 * within 5 years. */
int64_t pag_cron_next(const pag_cron_spec *spec, int64_t after_ms);

#ifdef __cplusplus
}
#endif
#endif
