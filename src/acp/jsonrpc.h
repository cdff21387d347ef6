/*
 * jsonrpc.h — JSON-RPC 2.0 codec for the ACP transport (prefix pacp_).
 *
 * Owns: classifying one decoded frame (request / notification / response) and
 * building the frames the agent sends. Knows nothing about ACP methods.
 */
#ifndef PACP_JSONRPC_H
#define PACP_JSONRPC_H

#include <jansson.h>
#include <stddef.h>

/* JSON-RPC 2.0 and ACP error codes. */
#define PACP_PARSE_ERROR      (-32700)
#define PACP_INVALID_REQUEST  (-32600)
#define PACP_METHOD_NOT_FOUND (-32601)
#define PACP_INVALID_PARAMS   (-32602)
#define PACP_INTERNAL_ERROR   (-32603)
#define PACP_TURN_FAILED      (-32000)
#define PACP_NOT_FOUND        (-32002)
#define PACP_CLOSE_INCOMPLETE (-32010)
#define PACP_AUTH_REQUIRED    (-32000) /* ACP auth_required: "Authentication required" */

typedef enum pacp_kind {
    PACP_INVALID = 0,  /* see err_code / err_msg; id may be set when it was readable */
    PACP_REQUEST,      /* method + id */
    PACP_NOTIFICATION, /* method, no id */
    PACP_RESPONSE,     /* id + result or error */
} pacp_kind;

typedef struct pacp_msg {
    pacp_kind kind;
    json_t *root;       /* owned: the decoded frame */
    json_t *id;         /* borrowed from root (NULL when absent) */
    const char *method; /* borrowed */
    json_t *params;     /* borrowed; may be NULL */
    json_t *result;     /* borrowed (responses) */
    json_t *error;      /* borrowed (error responses) */
    int err_code;       /* PACP_INVALID: the error to answer */
    const char *err_msg;
} pacp_msg;

/* Decodes one frame. Always fills *out; the caller frees with pacp__msg_clear. */
void pacp__decode(const char *text, size_t len, pacp_msg *out);
void pacp__msg_clear(pacp_msg *m);

/* Frame builders. Each returns a new reference (NULL on allocation failure) and
 * steals the reference passed as `result` / `params` / `data`; `id` is borrowed. */
json_t *pacp__make_result(json_t *id, json_t *result);
json_t *pacp__make_error(json_t *id, int code, const char *message, json_t *data);
json_t *pacp__make_notification(const char *method, json_t *params);
json_t *pacp__make_request(json_int_t id, const char *method, json_t *params);

/* Serialises a frame as one line ending in '\n'. Caller frees. NULL on failure. */
char *pacp__encode(const json_t *frame, size_t *len_out);

#endif
