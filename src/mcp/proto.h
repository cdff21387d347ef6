/*
 * proto.h — the thread-free part of MCP shared by the native client (client.c, http.c)
 * and the event-driven one (ev*.c) (prefix pmcp__). Includes only the base layer, so it
 * builds for wasm32-wasi as it is:
 *
 * proto.c : the protocol revisions and their negotiation, the initialize parameters,
 *           one listed tool from its JSON, tools/call parameters, a JSON-RPC error's
 *           text, a tools/call result → content JSON and text for the model.
 * sse.c   : the server-sent events parser (bounded events, any byte split).
 *
 * Nothing here allocates anything it does not hand to the caller, keeps state between
 * calls or reads a clock.
 */
#ifndef PMCP_PROTO_H
#define PMCP_PROTO_H

#include "peri/base.h"
#include "peri/json.h"
#include "peri/rpc.h"

#include <stdbool.h>
#include <stddef.h>

#define PMCP_MAX_FRAME (16u << 20) /* longer lines / events are dropped and reported */
#define PMCP_MAX_PAGES 100         /* tools/list pages of one listing */

/* ---------------------------------------------------------------- revisions */

/* The revisions the clients speak, newest first (the newest is what initialize asks). */
extern const char *const pmcp__versions[];
extern const size_t pmcp__nversions;
bool pmcp__version_known(const char *v);
/* "the server speaks MCP <v>, which Peri-C does not support" into buf. */
void pmcp__version_error(const char *v, char *buf, size_t n);

/* The initialize request's params (new reference, NULL when out of memory): the newest
 * revision, clientInfo, and the elicitation capability only when asked. */
pj_t *pmcp__initialize_params(bool elicitation);

/* ---------------------------------------------------------------- tools */

/* One tool of a tools/list answer (the same fields as pmcp_tool; owned strings). */
typedef struct pmcp__tooldef {
    char *name;
    char *title;       /* NULL when absent */
    char *description; /* "" when absent */
    char *schema_json; /* {"type":"object"} when inputSchema is not an object */
    bool read_only;
} pmcp__tooldef;

/* Reads one entry of "tools": 1 filled (free with pmcp__tooldef_free), 0 skipped (no
 * usable name; nothing allocated), -1 out of memory (nothing left allocated). */
int pmcp__tool_parse(const pj_t *t, pmcp__tooldef *out);
void pmcp__tooldef_free(pmcp__tooldef *t);

/* ---------------------------------------------------------------- calls */

/* The tools/call params {"name","arguments"} from args_json (a JSON object; NULL or ""
 * is {}). NULL when the arguments are not an object (*not_object set) or out of memory. */
pj_t *pmcp__call_params(const char *tool, const char *args_json, bool *not_object);
#define PMCP_ARGS_NOT_OBJECT "tool arguments must be a JSON object"

/* "MCP error <code>: <message>" of a JSON-RPC error object. */
void pmcp__rpc_error_text(const pj_t *error, char *buf, size_t n);

/* A tools/call result object: the content array as JSON ("[]" when absent), the
 * structuredContent (NULL when absent), the text for the model and isError. 0, or -1
 * when out of memory (then nothing is left allocated). */
typedef struct pmcp__content {
    char *content_json;
    char *structured_json;
    char *text;
    bool is_error;
} pmcp__content;
int pmcp__content_of(const pj_t *result, pmcp__content *out);
void pmcp__content_clear(pmcp__content *c);

/* ---------------------------------------------------------------- SSE parsing */

typedef struct pmcp__sse {
    char *line;
    size_t len, cap;
    char *data;
    size_t dlen, dcap;
    char event[64];
    bool overflow;
} pmcp__sse;

typedef void (*pmcp__sse_fn)(void *ctx, const char *event, const char *data, size_t len);
/* Feeds bytes; dispatches each complete event. 0, or -1 when out of memory. */
int pmcp__sse_feed(pmcp__sse *p, const char *bytes, size_t n, pmcp__sse_fn fn, void *ctx);
void pmcp__sse_free(pmcp__sse *p);

#endif
