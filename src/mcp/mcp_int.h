/*
 * mcp_int.h — MCP internals shared by the files of src/mcp/ (prefix pmcp__).
 *
 * lines.c    : the newline-delimited frame reader (frames: base/rpc.h, the fuzzed surface).
 * fdlink.c   : the line transport over fds (stdio child process, in-process pair).
 * http.c     : streamable HTTP and legacy HTTP+SSE transports (libcurl).
 * proto.c, sse.c : the thread-free shapes both clients share (proto.h).
 * ev*.c      : the event-driven client over the ports (peri/mcp_ev.h, ev_int.h).
 * oauth*.c   : OAuth for streamable HTTP servers (oauth_int.h).
 * client.c   : request/response matching, initialize, tools, progress, cancellation.
 * server.c   : the workspace server over the tools registry.
 * serve_http*.c : that server over streamable HTTP (serve_http_int.h: the head parser).
 * pool.c     : configuration parsing, the per-session pool, content mapping.
 *
 * A transport delivers every received frame to on_frame (from its own threads, one
 * at a time per transport) and reports the end of the connection once via on_closed.
 * After close() returns no callback runs any more.
 */
#ifndef PMCP_INT_H
#define PMCP_INT_H

#include "mcp/proto.h"
#include "peri/rpc.h"
#include "peri/base.h"
#include "peri/mcp.h"

#include "peri/json.h"
#include <stddef.h>

#define PMCP_PARSE_ERROR      PB_RPC_PARSE_ERROR
#define PMCP_INVALID_REQUEST  PB_RPC_INVALID_REQUEST
#define PMCP_METHOD_NOT_FOUND PB_RPC_METHOD_NOT_FOUND
#define PMCP_INVALID_PARAMS   PB_RPC_INVALID_PARAMS
#define PMCP_INTERNAL_ERROR   PB_RPC_INTERNAL_ERROR

/* Frames are decoded and built by the library's one JSON-RPC codec (base/rpc.h), with
 * its strict rules (pb_rpc_decode(..., NULL, ...)): MCP ids are never null and params
 * are an object. */

/* ---------------------------------------------------------------- transports */

typedef struct pmcp__link pmcp__link;

typedef struct pmcp__link_cb {
    void *ctx;
    void (*on_frame)(void *ctx, const char *text, size_t len);
    void (*on_closed)(void *ctx, const char *why);
    pb_logger log; /* the server's stderr lines and transport diagnostics */
} pmcp__link_cb;

struct pmcp__link {
    /* Sends one frame (text without newline). 0, or -1 when the link is gone. */
    int (*send)(pmcp__link *l, const char *text, size_t len);
    /* Stops every thread, kills/reaps a child, frees the link. */
    void (*close)(pmcp__link *l);
    /* After initialize: the negotiated version for the MCP-Protocol-Version header
     * (HTTP links); NULL for links without headers. */
    void (*set_protocol)(pmcp__link *l, const char *version);
};

/* stdio child. NULL with err on failure (nothing left running). */
pmcp__link *pmcp__link_stdio(const pmcp_server_config *cfg, const char *cwd,
                             const pmcp__link_cb *cb, char *err, size_t errlen);
/* In-process workspace server on a thread over a socketpair (cfg: root, tool_ctx,
 * acp_meta). */
pmcp__link *pmcp__link_inproc(const pmcp_server_config *cfg, const pmcp__link_cb *cb, char *err,
                              size_t errlen);
/* Streamable HTTP. auth (borrowed, may be NULL): the OAuth tokens of cfg->url. */
typedef struct pmcp__auth pmcp__auth;
pmcp__link *pmcp__link_http(const pmcp_server_config *cfg, const pmcp__link_cb *cb,
                            pmcp__auth *auth, char *err, size_t errlen);
/* Legacy HTTP+SSE (waits for the endpoint event, up to timeout_ms). */
pmcp__link *pmcp__link_sse(const pmcp_server_config *cfg, const pmcp__link_cb *cb, long timeout_ms,
                           char *err, size_t errlen);

/* ---------------------------------------------------------------- workspace server */

/* The workspace server's dispatch, shared by its transports (server.c: lines on fds;
 * serve_http.c: streamable HTTP). emit gets every outgoing frame (borrowed, valid during
 * the call), from the dispatching thread or from a tool call's worker; NULL: frames are
 * written as lines to out_fd. */
typedef struct pmcp__srv pmcp__srv;
typedef void (*pmcp__emit_fn)(void *ud, pj_t *frame);
/* Owned by the caller (pmcp__srv_free). NULL (reason logged to opt->log): bad root or
 * out of memory. opt is borrowed and must outlive the server. */
pmcp__srv *pmcp__srv_new(const pmcp_server_opts *opt, int out_fd, pmcp__emit_fn emit, void *ud);
/* Handles one decoded message (m stays the caller's); tool calls run on workers. */
void pmcp__srv_msg(pmcp__srv *s, pb_rpc_msg *m);
/* Waits up to grace_ms for running calls, cancels the rest, joins every worker, frees. */
void pmcp__srv_free(pmcp__srv *s, long grace_ms);

/* ---------------------------------------------------------------- client internals */

/* Bounds of the native client against a hostile server: open elicitation/create
 * requests per connection (more are declined at once), and the tools one listing keeps
 * (count, as in the event-driven client, and the bytes of their names, titles,
 * descriptions and schemas): a longer listing fails and the previous list stays. */
#define PMCP_MAX_ELICITS    1
#define PMCP_MAX_TOOLS      1024
#define PMCP_MAX_LIST_BYTES (8u << 20)

/* tools/call returning the raw result object (new reference in *result on PMCP_OK;
 * err says why otherwise). args_json that is not a JSON object is sent as {} with its
 * text in _meta["peri/rawArguments"] (understood by acp_meta servers). On a cancel it
 * waits up to PMCP_CANCEL_LINGER_MS for the late answer an acp_meta server sends (the
 * stopped tool's partial result): PMCP_CANCELLED, with *result set when it came. */
#define PMCP_CANCEL_LINGER_MS 2000
pmcp_status pmcp__client_call_raw(pmcp_client *c, const char *tool, const char *args_json,
                                  atomic_int *cancel, long timeout_ms, pj_t **result, char *err,
                                  size_t errlen);

/* The tool tables the pool holds now: the current one and the replaced ones still kept
 * (tests). */
size_t pmcp__pool_tables(pmcp_pool *p);

/* One listed tool: free frees its strings (the entry itself is the caller's); copy
 * duplicates src into dst (0, or -1 when out of memory: dst holds what was copied, free
 * it). */
void pmcp__tool_free(pmcp_tool *t);
int pmcp__tool_copy(pmcp_tool *dst, const pmcp_tool *src);

/* Reads lines from fd and delivers frames until EOF (shared by links and server).
 * Returns when EOF or error; too long lines are reported through on_frame as NULL. */
typedef struct pmcp__lines {
    int fd;
    char *buf;
    size_t len, cap, start;
    bool eof, dropping;
} pmcp__lines;
void pmcp__lines_init(pmcp__lines *r, int fd);
void pmcp__lines_free(pmcp__lines *r);
/* 1: a line in *line and *len (valid until next call), 0: EOF, -1: error, 2: line too long
 * (dropped). */
int pmcp__lines_next(pmcp__lines *r, char **line, size_t *len);

#endif
