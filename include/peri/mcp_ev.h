/*
 * peri/mcp_ev.h — the event-driven MCP client (prefix pmcp_ev_): MCP tools of a remote
 * server over streamable HTTP, driven by the host's ports (net.h) and the project's own
 * HTTP/1.1 client (net_http.h). It never blocks, starts no thread, reads no clock except
 * the ports' and opens nothing except through them, so it runs unchanged inside the
 * agent host's WebAssembly form and over the native pn_loop.
 *
 * What it does (docs/mcp.md, "The event-driven client"): initialize (version
 * negotiation shared with the native client), notifications/initialized, tools/list
 * (every nextCursor page, bounded), tools/call with cancel (notifications/cancelled),
 * and close (DELETE of the session). Every message is one POST on a connection of its
 * own; the answer is application/json or a text/event-stream whose events carry
 * JSON-RPC messages: the server's requests in it are answered (ping: {}, anything
 * else: method not found), its notifications are ignored (notifications/message is
 * logged). The Mcp-Session-Id of the initialize answer is sent on every later message,
 * and MCP-Protocol-Version once negotiated. No GET stream, no resumption
 * (Last-Event-ID), no OAuth (an Authorization header comes in the options).
 *
 * Events: every handle the client opens carries the client as its ud. The owner of the
 * ports' event callback passes each event to pmcp_ev_on_event, which takes the events
 * whose ud is this client (and returns false for any other).
 *
 * Bounds: each answer's size, the tool count, the tool-list pages, the length of a tool
 * name, concurrent calls. A hostile server gets a typed error, never a crash; a server
 * that stops answering gets PMCP_EV_E_TIMEOUT, never a cancel or a close.
 *
 * Ownership: strings passed in are copied before the call returns; strings handed to a
 * callback are valid only during it; tools are borrowed from the client.
 */
#ifndef PERI_MCP_EV_H
#define PERI_MCP_EV_H

#include "peri/base.h"
#include "peri/net.h"
#include "peri/net_http.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum pmcp_ev_status {
    PMCP_EV_OK = 0,
    PMCP_EV_E_ARG,       /* a bad option or argument (URL, header, tool arguments) */
    PMCP_EV_E_NOMEM,     /* an allocation failed */
    PMCP_EV_E_STATE,     /* not ready yet, or connect called twice */
    PMCP_EV_E_NET,       /* the connection failed, was reset or ended early */
    PMCP_EV_E_HTTP,      /* the server answered with a status outside 2xx */
    PMCP_EV_E_PROTOCOL,  /* bytes that are not the protocol: HTTP, content type, SSE,
                            JSON-RPC, a missing answer, a bad session id */
    PMCP_EV_E_LIMIT,     /* a bound: answer size, tool count, pages, concurrent calls */
    PMCP_EV_E_VERSION,   /* the server speaks an MCP revision the client does not */
    PMCP_EV_E_RPC,       /* a JSON-RPC error answer ("MCP error <code>: <message>") */
    PMCP_EV_E_TIMEOUT,   /* the deadline passed (never reported as a cancel) */
    PMCP_EV_E_CANCELLED, /* pmcp_ev_cancel */
    PMCP_EV_E_CLOSED,    /* the client is closing */
} pmcp_ev_status;

/* English name ("timeout", "protocol", ...); never NULL. */
const char *pmcp_ev_status_name(pmcp_ev_status s);

typedef struct pmcp_ev_client pmcp_ev_client;
typedef struct pmcp_ev_call pmcp_ev_call;

typedef struct pmcp_ev_opts {
    const char *url;  /* required: http:// or https:// (TLS by the host's port) */
    const char *name; /* the server's name in texts and logs; NULL: "mcp" */
    /* Extra request headers ("Authorization: Bearer ..."), sent on every request; the
     * client's own (Host, Content-Length, Content-Type, Accept, Connection,
     * Transfer-Encoding, Mcp-Session-Id, MCP-Protocol-Version) are refused. */
    const pn_http_header *headers;
    size_t nheaders;
    uint32_t init_deadline_ms; /* connect: initialize + tools/list in all; 0: 30000 */
    uint32_t call_deadline_ms; /* each tools/call; 0: 600000 */
    size_t max_response;       /* bytes of one answer (body or event stream); 0: 16 MiB */
    size_t max_tools;          /* 0: 1024; more is PMCP_EV_E_LIMIT */
    size_t max_calls;          /* calls in flight; 0: 64 */
    pb_logger log;             /* diagnostics (dropped frames, server log lines); {0}: none */
} pmcp_ev_opts;

/* Creates a client (nothing is sent yet). ports: borrowed, must outlive the client.
 * Returns the client, owned by the caller until pmcp_ev_close; or NULL with *st (when
 * given) and err saying why. */
pmcp_ev_client *pmcp_ev_new(const pn_ports *ports, const pmcp_ev_opts *opts, pmcp_ev_status *st,
                            char *err, size_t errlen);

/* Routes one event of the ports: true when it was this client's (ev->ud == c). May run
 * any callback of the client; after the on_settled of a close, c is freed. */
bool pmcp_ev_on_event(pmcp_ev_client *c, const pn_event *ev);

/* on_ready: status PMCP_EV_OK when the tools are known; otherwise err says why (English,
 * the native client's texts: "initialize failed: ...", "tools/list failed: ..."). */
typedef void (*pmcp_ev_ready_fn)(void *ctx, pmcp_ev_status st, const char *err);

/* initialize → notifications/initialized → tools/list (all pages). on_ready follows
 * once, from a later event (never from inside this call). Returns PMCP_EV_OK, or an
 * error (then no callback comes). Once only. */
pmcp_ev_status pmcp_ev_connect(pmcp_ev_client *c, pmcp_ev_ready_fn on_ready, void *ctx);

const char *pmcp_ev_protocol(const pmcp_ev_client *c);     /* negotiated; "" before */
const char *pmcp_ev_capabilities(const pmcp_ev_client *c); /* JSON text; "{}" before */
const char *pmcp_ev_session(const pmcp_ev_client *c);      /* Mcp-Session-Id; "" none */

/* A listed tool (borrowed from the client, valid until it is closed). */
typedef struct pmcp_ev_tool {
    const char *name;        /* the server's name (1..128 bytes; longer ones are skipped) */
    const char *title;       /* may be NULL */
    const char *description; /* "" when absent */
    const char *schema_json; /* inputSchema as JSON text ({"type":"object"} when absent) */
    bool read_only;          /* annotations.readOnlyHint */
} pmcp_ev_tool;

size_t pmcp_ev_tool_count(const pmcp_ev_client *c);
const pmcp_ev_tool *pmcp_ev_tool_at(const pmcp_ev_client *c, size_t i); /* NULL past end */

/* The outcome of a tools/call (valid during on_done only). */
typedef struct pmcp_ev_result {
    pmcp_ev_status status;       /* PMCP_EV_OK: answered (is_error: the tool failed) */
    bool is_error;               /* the tool said isError, or the call failed */
    const char *text;            /* text for the model; on a failure the error text */
    const char *content_json;    /* the content array ("[]" when none or failed) */
    const char *structured_json; /* structuredContent, or NULL */
} pmcp_ev_result;

typedef void (*pmcp_ev_done_fn)(void *ctx, const pmcp_ev_result *r);

/* tools/call name(args_json: a JSON object, NULL/"" for {}). deadline_ms 0: the
 * client's. Returns the call, owned by the client and valid until its on_done returns
 * (on_done follows once, from a later event); or NULL with *st (when given) and err:
 * not ready, closing, bad arguments, too many calls, out of memory (then no callback). */
pmcp_ev_call *pmcp_ev_call_tool(pmcp_ev_client *c, const char *name, const char *args_json,
                                uint32_t deadline_ms, pmcp_ev_done_fn on_done, void *ctx,
                                pmcp_ev_status *st, char *err, size_t errlen);

/* Gives the call up: notifications/cancelled is sent, its connection closed, and its
 * on_done follows with PMCP_EV_E_CANCELLED. No effect once the call is finishing. */
void pmcp_ev_cancel(pmcp_ev_call *call);

/* Closes: pending calls and the connect end (their callbacks come with
 * PMCP_EV_E_CLOSED), notifications already under way (a cancel) finish (up to 2 s), the
 * session is deleted (DELETE, up to 2 s) when there is one, and
 * on_settled follows once, from a later event, when every connection and timer of the
 * client has settled; the client is freed right after it returns. Returns PMCP_EV_OK;
 * or an error when the ports refused even the timer that defers on_settled while nothing
 * else was pending (then the client is freed at once and no callback comes). */
typedef void (*pmcp_ev_settled_fn)(void *ctx);
pmcp_ev_status pmcp_ev_close(pmcp_ev_client *c, pmcp_ev_settled_fn on_settled, void *ctx);

#ifdef __cplusplus
}
#endif
#endif
