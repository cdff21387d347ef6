/*
 * peri/rpc.h — the one JSON-RPC 2.0 codec of Peri (prefix pb_rpc_; part of the base layer).
 *
 * Owns: classifying one untrusted frame (request / notification / response / invalid)
 * and building and serialising frames. Used by the ACP server, the MCP client and
 * server, and the ACP clients (the SDK, the TUI, `peri print`); knows nothing about any
 * method. The protocols differ in a few rules (may an id be null, may params be an
 * array, may strings hold NUL), so each passes its pb_rpc_rules; everything else is
 * common:
 *   - the frame is one JSON object with "jsonrpc": "2.0" (batches are refused: neither
 *     ACP nor MCP 2025-06-18 has them), duplicate keys refused; text that is not JSON
 *     is a parse error, JSON that is not an object (an array, a bare scalar) an invalid
 *     request;
 *   - a method is a non-empty string without NUL; params an object (an array only
 *     where the rules allow it); "params": null is the same as no params;
 *   - a response has a usable id and exactly one of result / error, and an error is an
 *     object with an integer code;
 *   - an invalid frame still yields its id when the id is usable, so the answer can be
 *     correlated.
 * The decoder accepts any bytes (embedded NULs, invalid UTF-8, deep nesting, huge
 * numbers) and never crashes.
 */
#ifndef PERI_RPC_H
#define PERI_RPC_H

#include "peri/json.h"
#include <stdbool.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* JSON-RPC 2.0's own error codes. */
#define PB_RPC_PARSE_ERROR      (-32700)
#define PB_RPC_INVALID_REQUEST  (-32600)
#define PB_RPC_METHOD_NOT_FOUND (-32601)
#define PB_RPC_INVALID_PARAMS   (-32602)
#define PB_RPC_INTERNAL_ERROR   (-32603)

typedef enum pb_rpc_kind {
    PB_RPC_INVALID = 0,  /* err_code, err_msg and why say what; id set when usable */
    PB_RPC_REQUEST,      /* method + id */
    PB_RPC_NOTIFICATION, /* method, no id */
    PB_RPC_RESPONSE,     /* id + result or error */
} pb_rpc_kind;

/* Where the protocols differ. All false is the strictest reading (MCP's). */
typedef struct pb_rpc_rules {
    bool null_id;      /* "id": null is a usable id (ACP, as JSON-RPC 2.0 allows) */
    bool array_params; /* params may be an array (JSON-RPC 2.0's positional params) */
    bool allow_nul;    /* strings may hold U+0000 (else the frame is a parse error) */
} pb_rpc_rules;

typedef struct pb_rpc_msg {
    pb_rpc_kind kind;
    pj_t *root;          /* owned: the decoded frame (NULL on a parse error) */
    pj_t *id;            /* borrowed from root; NULL when absent or unusable */
    const char *method;  /* borrowed */
    pj_t *params;        /* borrowed; NULL when absent or null */
    pj_t *result;        /* borrowed (responses) */
    pj_t *error;         /* borrowed (error responses): an object with an integer code */
    int err_code;        /* PB_RPC_INVALID: PB_RPC_PARSE_ERROR or PB_RPC_INVALID_REQUEST */
    const char *err_msg; /* JSON-RPC's text for err_code ("Parse error", "Invalid Request") */
    const char *why;     /* PB_RPC_INVALID: which rule was broken, for logs and details */
} pb_rpc_msg;

/* Decodes one frame of len bytes (text may be NULL: a parse error). Always fills *out;
 * the caller frees it with pb_rpc_clear. */
void pb_rpc_decode(const char *text, size_t len, const pb_rpc_rules *rules, pb_rpc_msg *out);
void pb_rpc_clear(pb_rpc_msg *m);
/* An invalid frame's answer text with its reason: "Parse error" or "Invalid Request:
 * <why>", in buf (n bytes; always terminated). Returns buf. */
const char *pb_rpc_invalid_text(const pb_rpc_msg *m, char *buf, size_t n);

/* Frame builders. Each returns a new reference or NULL on allocation failure. They
 * steal `params`, `result` and `data` (also on failure); `id` is borrowed (NULL is
 * written as null). params NULL leaves "params" out; result NULL is a failure (the
 * caller's own allocation failed). */
pj_t *pb_rpc_request(pj_int_t id, const char *method, pj_t *params);
pj_t *pb_rpc_notification(const char *method, pj_t *params);
pj_t *pb_rpc_result(pj_t *id, pj_t *result);
pj_t *pb_rpc_error(pj_t *id, int code, const char *message, pj_t *data);

/* Serialises a frame compactly, in insertion order (field order is part of the
 * contracts), as one line: JSON never holds a raw newline inside strings, so with
 * newline the result is exactly one '\n'-terminated line. Caller frees; NULL on
 * failure. *len_out (may be NULL) receives the length. */
char *pb_rpc_encode(const pj_t *frame, bool newline, size_t *len_out);

/* The rules of ACP frames (JSON-RPC 2.0 as written), for its servers and clients. */
#define PB_RPC_ACP_RULES                                                                           \
    (&(const pb_rpc_rules){.null_id = true, .array_params = true, .allow_nul = true})

#ifdef __cplusplus
}
#endif

#endif
