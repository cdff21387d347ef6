/*
 * peri/mcp.h — Model Context Protocol (revision 2025-06-18, also accepting 2025-03-26
 * and 2024-11-05) client, server and per-session client pool (prefix pmcp_).
 *
 * Layering: MCP sits above the workspace tools (src/tools) and below the agent host.
 * The server side serves whatever the tools registry provides (ptl_count/ptl_at), so a
 * tool added to the registry is served without touching this module.
 *
 * Transports (client side):
 *   stdio  — the server is spawned in its own process group with PR_SET_PDEATHSIG
 *            (SIGKILL), its stderr is logged line by line to our stderr prefixed with
 *            "peri mcp[<name>]: ", and on close stdin is closed, then the whole group
 *            gets SIGTERM and after a grace period SIGKILL, then it is reaped.
 *   http   — streamable HTTP (libcurl): POST per message, JSON or SSE answers,
 *            Mcp-Session-Id kept and sent back, DELETE on close.
 *   sse    — legacy HTTP+SSE: GET event stream, "endpoint" event, POSTs to it.
 *   inproc — the builtin workspace server on a thread over a socketpair.
 *
 * Tool names seen by the model: "mcp__<server>__<tool>", where <server> is the
 * configured name with every character outside [A-Za-z0-9_-] replaced by '_'. Tool
 * names longer than 64 characters are not offered (providers refuse them).
 *
 * The program must ignore SIGPIPE (a server that died is then a write error) and call
 * curl_global_init once (pm_global_init does) before using the HTTP transports.
 *
 * Threads: a client may be used from any thread; calls may run concurrently. The pool
 * is per session. Nothing here keeps global mutable state; nothing reads environment
 * variables (the caller passes home and cwd).
 *
 * Ownership: every char* returned is malloc'd and owned by the caller unless noted.
 */
#ifndef PERI_MCP_H
#define PERI_MCP_H

#include "peri/base.h"
#include "peri/tools.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define PMCP_PROTOCOL_VERSION "2025-06-18"

/* ---------------------------------------------------------------- server config */

typedef enum pmcp_transport_kind {
    PMCP_STDIO = 0,
    PMCP_HTTP,   /* streamable HTTP */
    PMCP_SSE,    /* legacy HTTP+SSE */
    PMCP_INPROC, /* builtin workspace server, in process */
} pmcp_transport_kind;

typedef struct pmcp_kv {
    char *name;  /* owned */
    char *value; /* owned */
} pmcp_kv;

typedef struct pmcp_server_config {
    char *name; /* owned; as configured */
    pmcp_transport_kind kind;
    char *command; /* stdio: program (PATH searched), owned */
    char **args;   /* stdio: arguments after the program, owned */
    size_t nargs;
    pmcp_kv *env; /* stdio: added to the inherited environment, owned */
    size_t nenv;
    char *url;        /* http / sse, owned */
    pmcp_kv *headers; /* http / sse, owned */
    size_t nheaders;
    char *root; /* inproc: workspace root, owned */
    /* inproc: the tool context every call runs with (borrowed, must outlive
     * the client; its cancel is replaced per call); NULL: {cwd = root}. acp_meta adds
     * _meta["peri/acp"] to every tools/call result (docs/mcp.md). */
    const ptl_ctx *tool_ctx;
    bool acp_meta;
} pmcp_server_config;

void pmcp_server_config_clear(pmcp_server_config *c);

/* Parses servers from JSON text in either shape into a growing array (*out, *n; free
 * each with pmcp_server_config_clear and the array with free):
 *   ACP  mcpServers: [{"name","command","args":[..],"env":[{"name","value"}]},
 *                     {"type":"http"|"sse","name","url","headers":[{"name","value"}]}]
 *   settings / Claude Code .mcp.json: {"mcpServers": {"<name>": {"command","args",
 *                     "env":{K:V}} | {"type":"http"|"sse","url","headers":{K:V}}}}
 * Bad entries are skipped with a line appended to *errors (malloc'd, may be NULL).
 * Returns 0, or -1 when the text is not JSON of either shape (message in *errors). */
int pmcp_parse_servers(const char *json_text, const char *origin, pmcp_server_config **out,
                       size_t *n, char **errors);

/* ---------------------------------------------------------------- OAuth

 * Remote streamable-HTTP servers that answer 401 with WWW-Authenticate: Bearer are
 * authorized with OAuth 2.1 as the MCP authorization specification asks (docs/mcp.md,
 * "OAuth"): protected resource metadata (RFC 9728), authorization server metadata
 * (RFC 8414), dynamic client registration (RFC 7591), the authorization code flow with
 * PKCE S256 and a loopback redirect on 127.0.0.1 (random port, checked state), resource
 * indicators (RFC 8707), refresh. Tokens are kept per user in dir, one file per server
 * keyed by its canonical URL (mode 0600 in a 0700 directory), and only ever sent to the
 * origin of that URL; every URL involved must be https, except loopback hosts. */
typedef struct pmcp_oauth_opts {
    const char *dir; /* the token store, e.g. ~/.peri/oauth (created 0700); NULL: OAuth off */
    /* Shows the login URL to the user (ACP notification, terminal). Called on the
     * connecting thread; it must not block on the login itself (the loopback listener
     * answers the browser only after it returned). NULL: no interactive login (stored
     * and refreshed tokens only). */
    void (*show_login)(void *ctx, const char *server, const char *url);
    void *ctx;
    long login_timeout_ms;  /* how long the browser step may take; 0: 300000 */
    const atomic_int *stop; /* non-zero: a pending login ends at once; NULL: none */
} pmcp_oauth_opts;

/* Runs the interactive login for server `name` at `url` now (probes the server for its
 * challenge), storing the tokens. 0, or -1 with err. Used by `peri mcp login`. */
int pmcp_oauth_login(const pmcp_oauth_opts *o, const char *name, const char *url, char *err,
                     size_t errlen);
/* Forgets the stored tokens of url. 0 (also when there were none), or -1. */
int pmcp_oauth_forget(const pmcp_oauth_opts *o, const char *url);

/* ---------------------------------------------------------------- client */

typedef struct pmcp_client pmcp_client;

typedef struct pmcp_client_opts {
    const char *cwd; /* stdio: working directory of the server; NULL: inherit */
    /* Where the server's diagnostics go: its stderr lines, notifications/message, frames
     * dropped as malformed or too long. {0}: dropped. */
    pb_logger log;
    long init_timeout_ms; /* initialize + first tools/list; 0: 30000 */
    long call_timeout_ms; /* default per request; 0: 600000 */
    /* http: authorize with OAuth when the server asks (borrowed; NULL: a 401 fails). */
    const pmcp_oauth_opts *oauth;
    /* The server's elicitation/create requests (form mode) go to the user through this
     * (NULL: the client does not advertise elicitation, and such a request is "method not
     * found"). It runs on a thread of its own (never the reader), gets the request's
     * params as JSON text and a flag that rises when the server cancels the request or
     * the client closes, and returns the result as malloc'd JSON text ({"action": ...,
     * "content"?}); NULL: declined. */
    char *(*elicit)(void *ctx, const char *server, const char *params_json, atomic_int *cancel);
    void *elicit_ctx;
} pmcp_client_opts;

typedef struct pmcp_tool {
    char *name;        /* the server's name */
    char *title;       /* may be NULL */
    char *description; /* never NULL ("" when absent) */
    char *schema_json; /* inputSchema passed through as JSON text */
    bool read_only;    /* annotations.readOnlyHint */
} pmcp_tool;

/* Connects, negotiates (initialize, notifications/initialized) and lists the tools
 * (following nextCursor). NULL with a message in err on any failure; then no process
 * or thread is left behind. */
pmcp_client *pmcp_client_connect(const pmcp_server_config *cfg, const pmcp_client_opts *opt,
                                 char *err, size_t errlen);
/* Closes the transport (stdio: kills the process group) and frees. NULL is a no-op. */
void pmcp_client_close(pmcp_client *c);

const char *pmcp_client_name(const pmcp_client *c);
const char *pmcp_client_protocol(const pmcp_client *c); /* negotiated version */
/* The server's capabilities object as JSON text (borrowed; "{}" when none). */
const char *pmcp_client_capabilities(const pmcp_client *c);

/* Tool snapshot: copies of the current list (caller frees with pmcp_tools_free). */
int pmcp_client_tools(pmcp_client *c, pmcp_tool **out, size_t *n);
void pmcp_tools_free(pmcp_tool *t, size_t n);
/* True once notifications/tools/list_changed arrived since the last refresh. */
bool pmcp_client_tools_changed(pmcp_client *c);
/* Re-lists the tools (all pages; each page answered within 30 s). 0 or -1 with err. */
int pmcp_client_refresh_tools(pmcp_client *c, char *err, size_t errlen);

typedef void (*pmcp_progress_fn)(void *ctx, double progress, double total, const char *message);

typedef struct pmcp_call_result {
    char *content_json;    /* the MCP content array as JSON text ("[]" if absent) */
    char *structured_json; /* structuredContent or NULL */
    char *text;            /* text for the model: text parts joined, others summarised */
    bool is_error;         /* the tool reported isError, or the request failed */
} pmcp_call_result;

typedef enum pmcp_status {
    PMCP_OK = 0,       /* answered (result->is_error tells a tool failure) */
    PMCP_CANCELLED,    /* *cancel was raised: notifications/cancelled was sent */
    PMCP_TIMEOUT,      /* no answer in time: the request was cancelled */
    PMCP_ERR_RPC,      /* JSON-RPC error answer; result->text holds "code: message" */
    PMCP_ERR_TRANSPORT /* the connection is gone or could not send */
} pmcp_status;

/* tools/call. progress may be NULL (then no progressToken is sent). cancel may be NULL.
 * timeout_ms 0: the client default. out is always initialised; clear it. */
pmcp_status pmcp_client_call(pmcp_client *c, const char *tool, const char *args_json,
                             atomic_int *cancel, pmcp_progress_fn progress, void *pctx,
                             long timeout_ms, pmcp_call_result *out);
void pmcp_call_result_clear(pmcp_call_result *r);

/* Generic request: params_json may be NULL; *result_json receives the result object
 * text. Used for ping, resources/list, resources/read. */
pmcp_status pmcp_client_request(pmcp_client *c, const char *method, const char *params_json,
                                atomic_int *cancel, long timeout_ms, char **result_json, char *err,
                                size_t errlen);

/* ---------------------------------------------------------------- server */

typedef struct pmcp_server_opts {
    const char *root;      /* workspace root (absolute, existing) */
    const char *name;      /* serverInfo.name; NULL: "peri-workspace" */
    size_t page_size;      /* tools/list page size; 0: 100 */
    long shell_timeout_ms; /* 0: the tools default */
    /* In-process use: the tool context every call runs with (cwd, client file
     * system, client terminal, sandbox policy; borrowed, must outlive the server; its
     * cancel is replaced per call). NULL: {cwd = root, timeout_ms = shell_timeout_ms}. */
    const ptl_ctx *tool_ctx;
    /* Adds _meta["peri/acp"] = {kind, content, locations, rawOutput, meta, status} to
     * every tools/call result, so an in-process client can rebuild the exact ACP update
     * (docs/mcp.md). External clients get plain text content only. */
    bool acp_meta;
    pb_logger log; /* why it could not start; {0}: dropped */
} pmcp_server_opts;

/* Serves the workspace tools on a pair of fds (one JSON-RPC frame per line) until
 * EOF on in_fd; in-flight calls are cancelled and joined before it returns 0. -1, with
 * the reason given to opt->log, when it could not start (bad root). */
int pmcp_serve(const pmcp_server_opts *opt, int in_fd, int out_fd);

/* The same workspace server over MCP streamable HTTP (serve_http.c): one endpoint,
 * /mcp; POST carries one JSON-RPC message (a request is answered with application/json,
 * anything else with 202); Mcp-Session-Id is issued at initialize and required after;
 * DELETE ends the session; GET answers 405. Every request must carry
 * "Authorization: Bearer <token>" (compared in constant time; 401 otherwise), a Host
 * naming the listener when it is on loopback, and no foreign Origin (403: DNS
 * rebinding, browsers). Bounded: head, body (413), connections, sessions (a new one
 * ends the least recently used idle one; unused ones expire), and the time a request
 * may take to arrive (slow clients are closed). */
typedef struct pmcp_http_opts {
    const pmcp_server_opts *server; /* what every session serves (borrowed) */
    const char *host;               /* numeric address to bind; NULL: 127.0.0.1 */
    uint16_t port;                  /* 0: an ephemeral port */
    const char *token;              /* required, at least 16 bytes (borrowed) */
    size_t max_body;                /* 0: 4 MiB */
    size_t max_conns;               /* 0: 64 */
    size_t max_sessions;            /* 0: 16 */
    long read_timeout_ms;           /* a request's head and body; 0: 10000 */
    long idle_timeout_ms;           /* a kept-alive connection between requests; 0: 60000 */
    long session_idle_ms;           /* a session no request named; 0: 30 minutes */
    /* Readable: stop (in-flight calls are cancelled and joined). -1: none. */
    int stop_fd;
    /* Called once the socket listens, with the bound port (e.g. to print it). */
    void (*on_listen)(void *ud, const char *host, uint16_t port);
    void *ud;
} pmcp_http_opts;

/* Serves until stop_fd is readable: 0. -1 with err when it could not start. */
int pmcp_serve_http(const pmcp_http_opts *o, char *err, size_t errlen);

/* ---------------------------------------------------------------- pool */

typedef struct pmcp_pool pmcp_pool;

typedef struct pmcp_pool_tool {
    const char *name;        /* "mcp__server__tool" (borrowed from the pool) */
    const char *description; /* borrowed */
    const char *schema_json; /* borrowed */
    bool read_only;
} pmcp_pool_tool;

typedef struct pmcp_pool_opts {
    const char *cwd; /* session directory: where stdio servers start. The pool reads no
                      * file there: project servers come in project_servers_json. */
    /* The user-level settings document's text (the host supplies it: `peri acp` maps
     * ~/.peri/settings.json into the start object); its "mcpServers" are read. The pool
     * never reads the user's files itself. NULL: none. */
    const char *user_settings_json;
    /* {"mcpServers": {...}} of the project, passed ONLY once the user trusted that exact
     * content (agent layer, trust.c). A project server never replaces a user or client
     * server of the same name: it is refused with a notice. NULL: none. */
    const char *project_servers_json;
    const char *acp_servers_json; /* ACP mcpServers array text or NULL */
    long init_timeout_ms;         /* per server; 0: 30000 */
    /* the builtin Workspace server, in process, over this tool context
     * (borrowed, must outlive the pool). Its tools keep their plain names ("read",
     * "write", ...) and are not listed by pmcp_pool_tool_at (the host lists them from the
     * registry); pmcp_pool_has / pmcp_pool_run reach them. NULL: no builtin server. */
    const ptl_ctx *workspace;
    pb_logger log; /* every server's diagnostics (pmcp_client_opts.log); {0}: dropped */
    const pmcp_oauth_opts *oauth; /* passed to every client (borrowed; NULL: none) */
    /* passed to every configured server's client (pmcp_client_opts.elicit) */
    char *(*elicit)(void *ctx, const char *server, const char *params_json, atomic_int *cancel);
    void *elicit_ctx;
} pmcp_pool_opts;

/* Connects every configured server (user settings, then trusted project servers, then
 * ACP; an ACP entry replaces an earlier one of the same name, a project one never does). Never
 * fails for a server: a server that cannot start is left out and described in *notices (malloc'd
 * lines, NULL when all went well), which the caller reports. NULL only when out of memory. With
 * opt->workspace, the builtin server is started at its first call (an idle session costs no thread
 * and no descriptor). */
pmcp_pool *pmcp_pool_open(const pmcp_pool_opts *opt, char **notices);
/* Connects the project's servers once the user trusted them mid-session (same rules as
 * project_servers_json). Call it between turns, like pmcp_pool_refresh. Returns 1 when
 * the tool table changed, 0 when nothing was added, -1 when out of memory. */
int pmcp_pool_add_project(pmcp_pool *p, const char *project_servers_json, char **notices);
/* The configured servers of the pool (not the builtin one), in configuration order:
 * pmcp_pool_server_at gives server i's name (borrowed until close) and whether it is
 * connected (false: it failed to start; the notices said why). NULL past the end. */
size_t pmcp_pool_server_count(const pmcp_pool *p);
const char *pmcp_pool_server_at(const pmcp_pool *p, size_t i, bool *connected);
/* True when the pool serves the builtin tools (opened with a workspace context). */
bool pmcp_pool_builtin(const pmcp_pool *p);
/* Closes every connection (no server process survives) and frees. NULL: no-op. */
void pmcp_pool_close(pmcp_pool *p);

size_t pmcp_pool_tool_count(const pmcp_pool *p);
const pmcp_pool_tool *pmcp_pool_tool_at(const pmcp_pool *p, size_t i);
bool pmcp_pool_has(const pmcp_pool *p, const char *namespaced);

/* Runs "mcp__server__tool". Fills text (for the model) and content_json (ACP
 * ToolCallContent[] text: text, image, resource, resource_link mapped). Returns 0 when
 * it ran (is_error tells a tool failure), 1 when cancelled, -1 when unknown/failed. */
int pmcp_pool_call(pmcp_pool *p, const char *namespaced, const char *args_json, atomic_int *cancel,
                   char **text, bool *is_error, char **content_json);

/* a tool call with everything the ACP update needs: the tools layer's result type (one
 * type for the same data in every layer; exit_code, timed_out and truncated stay unset).
 * output is for the model (never NULL after a return of 0 or 1). For builtin tools the
 * other fields come from the result's _meta["peri/acp"], so they equal what the tools
 * registry returned (content with diffs, locations, rawOutput, the placement _meta;
 * content_json is NULL when it would be the one text block of output, which is how the
 * ACP layer renders NULL); for other servers content_json maps the MCP content and the
 * rest are NULL. Clear with pmcp_pool_result_clear (= ptl_result_clear). */
typedef ptl_result pmcp_pool_result;
void pmcp_pool_result_clear(pmcp_pool_result *r);

/* Runs a pool tool (a builtin plain name or "mcp__server__tool"). progress (may be
 * NULL) receives notifications/progress of an MCP server's call (builtin calls send no
 * progress token, so their ACP updates stay as they were). out is always initialised;
 * clear it. Returns 0 when it ran (is_error tells a tool failure), 1 when cancelled,
 * -1 when unknown or failed (text explains). */
int pmcp_pool_run(pmcp_pool *p, const char *name, const char *args_json, atomic_int *cancel,
                  pmcp_progress_fn progress, void *pctx, pmcp_pool_result *out);

/* notifications/tools/list_changed: re-lists the tools of every server that
 * sent it since its last listing and rebuilds the table when the list really changed.
 * Returns 1 when the table changed (re-read pmcp_pool_tool_count/at), 0 when not, -1 when
 * out of memory. The pool has one reader (the session): the pointers it last got from
 * pmcp_pool_tool_at stay valid until it reads again and the table then changes once
 * more (or until close); older replaced tables are freed, so however often a server
 * changes its list, at most two tables are kept. Call it between model requests, not
 * concurrently with itself. */
int pmcp_pool_refresh(pmcp_pool *p, char **notices);

/* MCP content array text -> ACP ToolCallContent[] text (exposed for tests). */
char *pmcp_content_to_acp(const char *mcp_content_json);

#ifdef __cplusplus
}
#endif
#endif
