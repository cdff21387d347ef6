/*
 * peri/sdk.h — libperi-sdk: the embedder's client of an ACP agent (prefix psdk_).
 *
 * The SDK never manages processes. What it gives:
 *   1. a REQUIRED, host-injected transport: psdk_sandbox_new() fails with
 *      "transportFactory is required" when no factory is given. The factory receives
 *      the workspace path exactly as the caller wrote it (never resolved locally:
 *      the path belongs to the agent's environment, not to this machine);
 *   2. an agent/session API over that transport (initialize, new, load, resume, list,
 *      prompt with callbacks, cancel, close);
 *   3. a bounded, honest close: session/close is replayed every 50 ms while the host
 *      answers -32010 ("incomplete, retry"), within a budget (default 3000 ms). An
 *      exhausted budget is PSDK_ERR_SESSION_CLOSE_INCOMPLETE — the host has NOT
 *      settled; it is never reported as "stopped" or "closed".
 *
 * CLOSING THE TRANSPORT IS NOT CLOSING A SESSION. psdk_agent_free() only disconnects:
 * sessions not closed with psdk_session_close() are left unsettled on the host.
 *
 * The SDK reads no environment variables and has no command-line fallbacks:
 * credentials, the store locator and the machine identity come in through
 * psdk_sandbox_options, and are handed to the factory (psdk_connect) verbatim.
 *
 * Threads. Every function may be called from any thread. Each psdk_agent owns one
 * reader thread; ALL callbacks (on_update, on_permission) run on that reader thread,
 * one at a time, in the order the frames arrived. A callback must not call a
 * blocking SDK function of the same agent (initialize, new, load, resume, list,
 * prompt, close): those return PSDK_ERR_STATE when called from the reader thread.
 * psdk_session_cancel() is non-blocking and may be called from a callback.
 *
 * Process helpers live outside the core, each in its own file: the stdio transport
 * (src/sdk/stdio.c: spawns an agent command, default `peri acp`; the ONLY place the
 * SDK starts a process), the in-process pair (src/sdk/inproc.c) and TCP
 * (src/sdk/tcp.c). The core (src/sdk/client.c, close.c) only sees psdk_transport.
 */
#ifndef PERI_SDK_H
#define PERI_SDK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------- errors */

typedef enum psdk_status {
    PSDK_OK = 0,
    PSDK_ERR_ARG,       /* bad argument; nothing was sent */
    PSDK_ERR_TRANSPORT, /* the transport failed or ended */
    PSDK_ERR_RPC,       /* the agent answered a JSON-RPC error: rpc_code, message */
    PSDK_ERR_PROTOCOL,  /* the agent spoke a protocol we do not (version != 1, bad frame) */
    PSDK_ERR_TIMEOUT,   /* no answer within the answer timeout: NOT proof of anything */
    PSDK_ERR_SESSION_CLOSE_INCOMPLETE, /* the host has not settled the close; retry */
    PSDK_ERR_STATE,                    /* wrong state (closed session, reader thread) */
    PSDK_ERR_NOMEM,
} psdk_status;

#define PSDK_RPC_CLOSE_INCOMPLETE (-32010) /* the only code close replays */

typedef struct psdk_cause {
    psdk_status status;
    int rpc_code; /* PSDK_ERR_RPC only */
    char message[320];
} psdk_cause;

/* For PSDK_ERR_SESSION_CLOSE_INCOMPLETE, causes[] holds the last -32010 answer and,
 * when a different failure followed an incomplete attempt, that failure too. */
typedef struct psdk_error {
    psdk_status status;
    int rpc_code;
    char message[512];
    size_t ncauses;
    psdk_cause causes[2];
} psdk_error;

/* "OK", "ARG", ..., "SESSION_CLOSE_INCOMPLETE" (static). */
const char *psdk_status_name(psdk_status s);

/* ---------------------------------------------------------------- transport */

/* A connected frame channel supplied by the host. Implementations embed this struct as
 * their first member. A frame is one JSON-RPC message without its newline. */
typedef struct psdk_transport psdk_transport;
struct psdk_transport {
    /* Sends one frame; 0 or -1. The SDK never calls send concurrently. */
    int (*send)(psdk_transport *t, const char *frame, size_t len);
    /* Blocks for the next frame: 0 with *frame malloc'd (NUL-terminated; the SDK frees
     * it) and *len set; 1 at end of stream; -1 on error. Called only from the agent's
     * reader thread. Must return (1 or -1) once close() has been called. */
    int (*recv)(psdk_transport *t, char **frame, size_t *len);
    /* Disconnects and wakes a blocked recv. Idempotent; any thread. */
    void (*close)(psdk_transport *t);
    /* Releases the transport (after close and after recv has returned). */
    void (*free)(psdk_transport *t);
};

/* What the factory is given. Every string is forwarded verbatim (may be NULL). */
typedef struct psdk_connect {
    const char *path;          /* the workspace path (never resolved locally) */
    const char *store_locator; /* where the host keeps sessions */
    const char *credential;    /* the store credential */
    const char *machine_id;    /* the persistent machine identity */
} psdk_connect;

/* Returns a connected transport in *out (0), or -1 with err filled. */
typedef int (*psdk_transport_factory)(void *ctx, const psdk_connect *c, psdk_transport **out,
                                      psdk_error *err);

/* ---------------------------------------------------------------- sandbox */

typedef struct psdk_sandbox_options {
    psdk_transport_factory transport_factory; /* REQUIRED */
    void *factory_ctx;
    const char *store_locator; /* all four forwarded verbatim; NULL = not given */
    const char *credential;
    const char *machine_id; /* also announced in initialize (_meta "peri.machineId") */
    /* How long a request waits for its answer (not session/prompt, which waits for
     * the turn). <= 0: 30000 ms. A timeout is PSDK_ERR_TIMEOUT, never "stopped". */
    long answer_timeout_ms;
} psdk_sandbox_options;

typedef struct psdk_sandbox psdk_sandbox;

/* Copies the options (strings duplicated). NULL with err filled: a missing factory is
 * PSDK_ERR_ARG "transportFactory is required". Free with psdk_sandbox_free (after its
 * agents). */
psdk_sandbox *psdk_sandbox_new(const psdk_sandbox_options *opt, psdk_error *err);
void psdk_sandbox_free(psdk_sandbox *sb);

/* ---------------------------------------------------------------- agent */

typedef struct psdk_agent psdk_agent;
typedef struct psdk_session psdk_session;

/* Calls the factory with path (verbatim) and starts the reader thread. Free with
 * psdk_agent_free. */
psdk_agent *psdk_agent_connect(psdk_sandbox *sb, const char *path, psdk_error *err);
/* Disconnects (transport close), joins the reader, frees every session handle.
 * This does NOT close sessions: close them first. Call it only when no other thread
 * is inside an SDK call on this agent. */
void psdk_agent_free(psdk_agent *a);

/* initialize with protocolVersion 1; an answer with another version is
 * PSDK_ERR_PROTOCOL. agent_info (may be NULL) receives "name version" of the agent. */
psdk_status psdk_agent_initialize(psdk_agent *a, char *agent_info, size_t info_len,
                                  psdk_error *err);

/* Any request, for extension methods: params_json is a JSON object text (NULL = {}).
 * Waits up to the answer timeout. *result_json (may be NULL) receives the result as
 * JSON text (malloc'd, caller frees). */
psdk_status psdk_agent_request(psdk_agent *a, const char *method, const char *params_json,
                               char **result_json, psdk_error *err);

/* ---------------------------------------------------------------- sessions */

typedef struct psdk_update {
    const char *session_id;
    const char *kind; /* the sessionUpdate tag: agent_message_chunk, tool_call, ... */
    const char *text; /* content.text of message/thought chunks, else NULL */
    const char *json; /* the whole update object */
} psdk_update;

typedef struct psdk_permission_request {
    const char *session_id;
    const char *tool_call_id;
    const char *title;
    const char *json; /* the whole session/request_permission params */
    /* A project-trust question (toolCall._meta has "peri.trustRequest"): trusting lets
     * the project's own MCP servers and hooks run on this machine. Only
     * PSDK_TRUST_PROJECT accepts it. */
    bool trust_request;
} psdk_permission_request;

/* What a handler answers. Every answer that cannot be given as asked is a rejection:
 * the request's reject_once option (else reject_always, else outcome "cancelled"). */
typedef enum psdk_decision {
    PSDK_REJECT = 0,    /* the reject_once option */
    PSDK_ALLOW,         /* the allow_once option only, never an "always" option; a
                           request without one (a trust request) is rejected */
    PSDK_CANCELLED,     /* outcome "cancelled" */
    PSDK_TRUST_PROJECT, /* a trust request: its trust_project option; any other request
                           is rejected */
} psdk_decision;

/* Callbacks of one session; both run on the agent's reader thread (see top). */
typedef struct psdk_handlers {
    void *ctx;
    void (*on_update)(void *ctx, const psdk_update *u);
    /* NULL: every permission request is rejected. */
    psdk_decision (*on_permission)(void *ctx, const psdk_permission_request *r);
} psdk_handlers;

/* session/new in cwd (NULL: the agent's path), forwarded verbatim. handlers may be
 * NULL. The handle lives until psdk_agent_free. */
psdk_session *psdk_session_new(psdk_agent *a, const char *cwd, const psdk_handlers *h,
                               psdk_error *err);
/* session/load (history replayed through on_update before it returns) and
 * session/resume (no replay). */
psdk_session *psdk_session_load(psdk_agent *a, const char *session_id, const char *cwd,
                                const psdk_handlers *h, psdk_error *err);
psdk_session *psdk_session_resume(psdk_agent *a, const char *session_id, const char *cwd,
                                  const psdk_handlers *h, psdk_error *err);
const char *psdk_session_id(const psdk_session *s);

typedef struct psdk_session_info {
    char id[40];
    char *cwd;   /* owned */
    char *title; /* owned, NULL if none */
} psdk_session_info;

typedef struct psdk_session_list {
    psdk_session_info *items;
    size_t count;
    char *next_cursor; /* owned, NULL on the last page */
} psdk_session_list;

/* session/list; cwd and cursor may be NULL. Clear out with psdk_session_list_clear. */
psdk_status psdk_agent_list(psdk_agent *a, const char *cwd, const char *cursor,
                            psdk_session_list *out, psdk_error *err);
void psdk_session_list_clear(psdk_session_list *l);

/* session/prompt with one text block; blocks until the turn's answer. stop_reason
 * receives end_turn / cancelled / max_tokens / .... A turn failure is PSDK_ERR_RPC. */
psdk_status psdk_session_prompt(psdk_session *s, const char *text, char *stop_reason,
                                size_t stop_len, psdk_error *err);
/* session/cancel (a notification; does not wait). */
psdk_status psdk_session_cancel(psdk_session *s, psdk_error *err);

/* ---------------------------------------------------------------- close */

#define PSDK_CLOSE_BUDGET_DEFAULT_MS 3000
#define PSDK_CLOSE_REPLAY_MS         50

/* Closes the session on the host: sends session/close {sessionId}; while the host
 * answers -32010 it is replayed, sleeping min(50 ms, remaining budget) between
 * attempts. budget_ms 0 = exactly one attempt; a negative budget (or one above
 * 2^53-1) is PSDK_ERR_ARG and nothing is sent.
 *   PSDK_OK: the host settled; the session is closed (a later close sends nothing).
 *   PSDK_ERR_SESSION_CLOSE_INCOMPLETE: budget exhausted, message "Session close is
 *     incomplete: <last message>" (causes[] keeps the earlier -32010 cause when a
 *     different failure followed it). The session and the transport stay open;
 *     call close again.
 *   any other error from the first attempt is returned unchanged.
 * Concurrent closes of one session share ONE operation (one request stream) and all
 * callers get its result. */
psdk_status psdk_session_close(psdk_session *s, int64_t budget_ms, psdk_error *err);
bool psdk_session_is_closed(const psdk_session *s);

/* ---------------------------------------------------------------- helpers */

/* stdio (src/sdk/stdio.c): a factory whose ctx is a psdk_stdio_options. It starts the
 * agent command with its stdin/stdout as the transport. With argv NULL the command is
 * `peri acp` (peri found on PATH, or `peri` given) with --cwd PATH, and --db, and
 * --machine-id from psdk_connect when given (the credential is never put on a command
 * line: peri's SQLite store needs none); an explicit argv runs as is. stderr is
 * inherited. Freeing the transport closes the agent's stdin, waits exit_wait_ms
 * (<= 0: 5000) for it to exit, then SIGTERM, then SIGKILL, and reaps it. */
typedef struct psdk_stdio_options {
    const char *const *argv; /* NULL-terminated; NULL = default `peri acp` */
    const char *peri;        /* the peri binary for the default command; NULL = "peri" */
    const char *const *envp; /* the child's environment, as given; NULL = inherit ours */
    long exit_wait_ms;
} psdk_stdio_options;
int psdk_stdio_factory(void *ctx, const psdk_connect *c, psdk_transport **out, psdk_error *err);

/* A transport over two file descriptors (newline-delimited frames). With own, the
 * fds are closed by free. */
psdk_transport *psdk_fd_transport_new(int in_fd, int out_fd, bool own, psdk_error *err);

/* In-process pair (src/sdk/inproc.c): a connected socket pair; *client is the SDK
 * side, *host_fd is given to the in-process host (e.g. pacp_serve(opt, fd, fd)). The
 * host owns host_fd. */
int psdk_inproc_pair(psdk_transport **client, int *host_fd, psdk_error *err);

/* TCP (src/sdk/tcp.c): connects to host:port (numeric or name). */
psdk_transport *psdk_tcp_connect(const char *host, int port, psdk_error *err);
typedef struct psdk_tcp_options {
    const char *host;
    int port;
} psdk_tcp_options;
/* A factory whose ctx is a psdk_tcp_options. */
int psdk_tcp_factory(void *ctx, const psdk_connect *c, psdk_transport **out, psdk_error *err);

#ifdef __cplusplus
}
#endif
#endif
