/*
 * peri/model.h — model adapters: OpenAI Chat Completions and Anthropic Messages over
 * libcurl, streaming (SSE) and non-streaming (prefix pm_).
 *
 * The layer has no business meaning: it turns a neutral conversation (pm_message list,
 * tool schemas) into one provider request and turns the provider's answer back into
 * neutral stream events (pm_stream_event) and one assembled pm_response.
 *
 * Objects and ownership:
 *   pm_client    one provider endpoint (kind, base URL, key, retry policy). Holds no
 *                connection between calls; a client may be used by one thread at a time
 *                (use one client per thread/session if calls overlap). Reads no
 *                environment variables: the caller passes base URL and key.
 *   pm_message   role + array of parts. Every string inside is heap-owned by the message
 *                (the pm_message_add_* functions copy their arguments);
 *                pm_message_clear frees them.
 *   pm_request   borrowed views only; the caller keeps everything alive during the call.
 *   pm_response  owned by the caller after a successful call; free with
 *                pm_response_clear.
 *
 * Process setup: libcurl needs curl_global_init once per process, before any thread
 * starts. Call pm_global_init() at program start (the CLI does) and pm_global_cleanup()
 * at exit. Nothing else here touches global state.
 *
 * Cancellation: every call takes an optional `atomic_int *cancel`. When it becomes
 * non-zero, the transfer is aborted from curl's progress callback (polled at least every
 * ~20 ms even when the server sends nothing) and the call returns PM_CANCELLED.
 *
 * Retries: 429, 5xx and connection failures are retried with exponential backoff
 * (Retry-After honoured, capped) ONLY while no event has been delivered to the caller.
 * Once the first event went out, a failure is returned as is.
 *
 * CHANGES (after first publication; additive only):
 *   - PM_PART_IMAGE and pm_message_add_image (user images).
 *   - pm_message_add_text_source (a TEXT part's arguments: the client's block it stands
 *     for) and pm_message_text_sep.
 *   - pm_config.proxy (last field): NULL keeps libcurl's default, which honours the
 *     http_proxy/https_proxy/no_proxy environment variables; "" disables proxies.
 *   - the sans-IO call (pm_call_*): the request of one call as plain data and a decoder
 *     fed with the answer's status, headers and body bytes, so a caller that owns the
 *     network (an embedder's ports, an event loop) runs model calls without libcurl.
 *     pm_stream/pm_complete are this same call driven over libcurl.
 */
#ifndef PERI_MODEL_H
#define PERI_MODEL_H

#include "peri/base.h"
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------- errors */

typedef enum pm_status {
    PM_OK = 0,
    PM_ERR_HTTP,     /* non-2xx answer (not 401/403); pm_error.http_status + body excerpt */
    PM_ERR_NETWORK,  /* connect/DNS/reset/timeout: no usable HTTP answer */
    PM_ERR_AUTH,     /* 401 or 403 */
    PM_ERR_PROTOCOL, /* the answer is not the JSON/SSE the provider format promises,
                        or the provider sent an in-stream error event */
    PM_CANCELLED,    /* the cancel flag was raised or the event callback asked to stop */
    PM_ERR_NOMEM,    /* an allocation failed */
    PM_ERR_ARG,      /* bad configuration or request (unknown provider, no model, ...) */
} pm_status;

typedef struct pm_error {
    pm_status status;
    long http_status; /* last HTTP status seen (0 if none) */
    int attempts;     /* HTTP attempts made, including retries */
    char message[512];
    char body[512]; /* excerpt of the error body (PM_ERR_HTTP/AUTH), NUL-terminated */
} pm_error;

/* Static English name of a status ("http", "network", "auth", ...). */
const char *pm_status_name(pm_status s);

/* ---------------------------------------------------------------- process setup */

/* Calls curl_global_init(CURL_GLOBAL_DEFAULT). Once per process, before threads. */
pm_status pm_global_init(void);
void pm_global_cleanup(void);

/* ---------------------------------------------------------------- messages */

typedef enum pm_role {
    PM_ROLE_SYSTEM = 0,
    PM_ROLE_USER,
    PM_ROLE_ASSISTANT,
    PM_ROLE_TOOL, /* carries PM_PART_TOOL_RESULT parts answering the previous assistant */
} pm_role;

typedef enum pm_part_kind {
    PM_PART_TEXT = 0,
    PM_PART_THINKING,    /* assistant reasoning text (Anthropic thinking blocks) */
    PM_PART_TOOL_CALL,   /* assistant asks for a tool: id, name, arguments (JSON text) */
    PM_PART_TOOL_RESULT, /* answer to a tool call: id (= the call id), text, is_error */
    PM_PART_IMAGE,       /* user image: name = MIME type, text = base64 data */
    PM_PART_AUDIO,       /* user audio: name = MIME type (audio/wav, audio/mpeg), text = base64;
                            OpenAI input_audio (Anthropic takes none: a text note is sent) */
    PM_PART_DOCUMENT,    /* user document: name = MIME type (application/pdf), text = base64;
                            OpenAI file part, Anthropic document block */
} pm_part_kind;

typedef struct pm_part {
    pm_part_kind kind;
    char *text;      /* TEXT/THINKING: the text; TOOL_RESULT: the result content */
    char *id;        /* TOOL_CALL: call id; TOOL_RESULT: tool_call_id */
    char *name;      /* TOOL_CALL: tool name */
    char *arguments; /* TOOL_CALL: arguments as JSON object text ("{}" if none); TEXT: the
                        client's content block the text stands for (JSON object text, replayed
                        in its place; NULL for plain text) */
    char *signature; /* THINKING: provider signature to send back (may be NULL) */
    bool is_error;   /* TOOL_RESULT only */
} pm_part;

typedef struct pm_message {
    pm_role role;
    pm_part *parts;
    size_t nparts;
    size_t cap_;
} pm_message;

/* Start an empty message (no allocation). */
void pm_message_init(pm_message *m, pm_role role);
/* Free every part string and the part array; leaves an empty message of the same role. */
void pm_message_clear(pm_message *m);
/* Append parts; arguments are copied. Return PM_OK or PM_ERR_NOMEM (message unchanged). */
pm_status pm_message_add_text(pm_message *m, const char *text);
/* A text part standing for a content block of the client's (source_json, a JSON object such
 * as an ACP resource_link): the model reads the text, a replay shows the block. */
pm_status pm_message_add_text_source(pm_message *m, const char *text, const char *source_json);
pm_status pm_message_add_thinking(pm_message *m, const char *text, const char *signature);
pm_status pm_message_add_tool_call(pm_message *m, const char *id, const char *name,
                                   const char *arguments_json);
pm_status pm_message_add_tool_result(pm_message *m, const char *tool_call_id, const char *content,
                                     bool is_error);
/* An image (base64 data, MIME type such as "image/png"); sent to OpenAI as an image_url
 * data URL part and to Anthropic as a base64 image block. */
pm_status pm_message_add_image(pm_message *m, const char *mime, const char *data_b64);
pm_status pm_message_add_audio(pm_message *m, const char *mime, const char *data_b64);
pm_status pm_message_add_document(pm_message *m, const char *mime, const char *data_b64);
/* Deep copy; dst is initialised by the call. */
pm_status pm_message_copy(pm_message *dst, const pm_message *src);

/* Concatenation of all TEXT parts (newly malloc'd, caller frees), "" if none. */
char *pm_message_text(const pm_message *m);
/* The same with sep between two TEXT parts: "\n" for a user message, whose text blocks
 * are parts of their own between its images. */
char *pm_message_text_sep(const pm_message *m, const char *sep);

const char *pm_role_name(pm_role r); /* "system" "user" "assistant" "tool" */
bool pm_role_parse(const char *name, pm_role *out);

/* Neutral JSON form, used by the store to persist messages:
 *   {"role":"assistant","parts":[{"type":"text","text":"..."},
 *     {"type":"thinking","text":"...","signature":"..."},
 *     {"type":"tool_call","id":"..","name":"..","arguments":"{...}"},
 *     {"type":"tool_result","id":"..","text":"..","is_error":false},
 *     {"type":"image","mime":"image/png","data":"<base64>"}]}
 * pm_message_to_json returns malloc'd compact JSON text (caller frees) or NULL on OOM.
 * pm_message_from_json parses that form into *m (initialised by the call); bad input
 * gives PM_ERR_PROTOCOL with a message in err (err may be NULL). */
char *pm_message_to_json(const pm_message *m);
pm_status pm_message_from_json(const char *json, pm_message *m, pm_error *err);

/* ---------------------------------------------------------------- requests */

typedef struct pm_tool_def {
    const char *name;
    const char *description;
    const char *input_schema_json; /* JSON Schema object text */
} pm_tool_def;

typedef struct pm_request {
    const char *model;  /* required */
    const char *system; /* optional system prompt; PM_ROLE_SYSTEM messages are added too */
    const pm_message *messages;
    size_t nmessages;
    const pm_tool_def *tools;
    size_t ntools;
    int max_tokens;     /* 0: provider default (Anthropic requires one: 4096 is used) */
    double temperature; /* < 0: not sent */
    /* "low", "medium" or "high": OpenAI "reasoning_effort"; Anthropic extended thinking
     * with a budget of 2048 / 8192 / 24576 tokens (max_tokens grows to hold it, and no
     * temperature is sent). NULL: not sent. */
    const char *reasoning_effort;
} pm_request;

/* ---------------------------------------------------------------- results */

typedef struct pm_usage {
    int64_t input_tokens;
    int64_t output_tokens;
    int64_t cache_read_tokens;  /* Anthropic cache_read_input_tokens / OpenAI cached_tokens */
    int64_t cache_write_tokens; /* Anthropic cache_creation_input_tokens */
} pm_usage;

typedef enum pm_stop_reason {
    PM_STOP_NONE = 0,   /* the provider did not say */
    PM_STOP_END_TURN,   /* "stop" / "end_turn" / "stop_sequence" */
    PM_STOP_TOOL_USE,   /* "tool_calls" / "tool_use" */
    PM_STOP_MAX_TOKENS, /* "length" / "max_tokens" */
    PM_STOP_REFUSAL,    /* "content_filter" / "refusal" */
    PM_STOP_OTHER,
} pm_stop_reason;

const char *pm_stop_reason_name(pm_stop_reason r); /* "end_turn", "tool_use", ... */

typedef struct pm_response {
    pm_message message; /* role assistant: thinking, text, tool calls in stream order */
    pm_usage usage;
    pm_stop_reason stop;
    char *stop_raw; /* provider's own stop string, may be NULL */
    char *id;       /* provider's response id, may be NULL */
    char *model;    /* model name the provider reports, may be NULL */
} pm_response;

void pm_response_clear(pm_response *r);

/* ---------------------------------------------------------------- streaming events */

typedef enum pm_event_kind {
    PM_EV_TEXT_DELTA = 0,  /* text, len */
    PM_EV_THINKING_DELTA,  /* text, len */
    PM_EV_TOOL_CALL_START, /* index, id, name */
    PM_EV_TOOL_CALL_DELTA, /* index, text/len = a piece of the arguments JSON */
    PM_EV_TOOL_CALL_END,   /* index, id, name, text/len = the whole arguments JSON */
    PM_EV_USAGE,           /* usage = totals so far (may come several times) */
    PM_EV_STOP,            /* stop, stop_raw */
    PM_EV_DONE,            /* the stream ended normally; last event of a good call */
    PM_EV_ERROR,           /* provider's in-stream error after other events were already
                              delivered; text = its message. The call then returns
                              PM_ERR_PROTOCOL. (Before any event, such an error is not
                              delivered: the call is retried or just returns the error.) */
} pm_event_kind;

typedef struct pm_stream_event {
    pm_event_kind kind;
    int index; /* tool call index within this response, 0-based */
    const char *text;
    size_t len;
    const char *id;
    const char *name;
    pm_usage usage;
    pm_stop_reason stop;
    const char *stop_raw;
} pm_stream_event;

/* All pointers in the event are valid only during the callback. Return 0 to continue,
 * non-zero to abort the call (it then returns PM_CANCELLED). */
typedef int (*pm_event_fn)(const pm_stream_event *ev, void *ctx);

/* ---------------------------------------------------------------- client */

typedef enum pm_provider {
    PM_PROVIDER_OPENAI = 0, /* POST {base_url}/chat/completions, Bearer auth */
    PM_PROVIDER_ANTHROPIC,  /* POST {base_url}/v1/messages, x-api-key */
} pm_provider;

/* "openai" / "anthropic" -> provider. */
bool pm_provider_parse(const char *name, pm_provider *out);

typedef struct pm_config {
    pm_provider provider;
    const char *base_url;          /* e.g. "https://api.openai.com/v1", "https://api.anthropic.com".
                                      Required. A trailing '/' is ignored. */
    const char *api_key;           /* may be NULL or "" (no auth header sent) */
    const char *anthropic_version; /* NULL: "2023-06-01" */
    long connect_timeout_ms;       /* 0: 10000 */
    long request_timeout_ms;       /* whole-request cap; 0: none */
    long idle_timeout_ms;          /* no byte received for this long = network error;
                                      0: 300000 */
    int max_retries;               /* retries after the first attempt; < 0: 0; default 0
                                      means none, callers usually pass 3 */
    long retry_base_ms;            /* first backoff; 0: 500. Doubles each retry. */
    long retry_max_ms;             /* backoff cap; 0: 8000 */
    long retry_after_cap_ms;       /* cap for a server's Retry-After; 0: 30000 */
    const char *proxy;             /* NULL: libcurl default (reads the *_proxy environment
                                      variables); "": never use a proxy; else the proxy URL */
    bool context_1m;               /* Anthropic: ask for the 1M-token context window
                                      (header anthropic-beta: context-1m-2025-08-07) */
} pm_config;

typedef struct pm_client pm_client;

/* Copies the config strings. Returns NULL and fills err on failure. Owned by caller. */
pm_client *pm_client_new(const pm_config *cfg, pm_error *err);
void pm_client_free(pm_client *c);

/* Streaming call. Events go to on_event (may be NULL). When `out` is not NULL it receives
 * the assembled response (initialised by the call; the caller clears it, also on error,
 * where it holds whatever arrived). Returns PM_OK after PM_EV_DONE was delivered. */
pm_status pm_stream(pm_client *c, const pm_request *req, pm_event_fn on_event, void *ctx,
                    atomic_int *cancel, pm_response *out, pm_error *err);

/* Non-streaming call ("stream": false). `out` is initialised by the call. */
pm_status pm_complete(pm_client *c, const pm_request *req, atomic_int *cancel, pm_response *out,
                      pm_error *err);

/* The models the provider of cfg reports (GET <base>/models, or <base>/v1/models for
 * Anthropic, with cfg's key): *ids (malloc'd, free with pm_models_free) receives at most
 * 500 printable ids. One bounded request (timeout_ms, 0: 10000; body at most 4 MiB). */
pm_status pm_list_models(const pm_config *cfg, long timeout_ms, char ***ids, size_t *n,
                         pm_error *err);
void pm_models_free(char **ids, size_t n);

/* The JSON body that would be sent (malloc'd, caller frees); for tests and logging. */
char *pm_build_body(const pm_client *c, const pm_request *req, bool stream, pm_error *err);

/* ---------------------------------------------------------------- sans-IO calls
 * One model call as data: pm_call_new builds the HTTP request (the same URL, headers and
 * body pm_stream sends); the caller performs it however it likes and feeds the answer
 * back. The call parses and decodes (SSE, provider JSON), assembles the pm_response,
 * delivers the stream events, classifies the outcome into a typed error and decides
 * whether another attempt may follow, and after how long (the client's retry policy:
 * only while no event was delivered; Retry-After honoured, capped). It does no I/O,
 * reads no clock and never blocks. pm_stream and pm_complete drive this same object
 * over libcurl, so both paths share every byte of decoding.
 *
 * Per attempt: pm_call_begin, then pm_call_status (before the first body byte),
 * pm_call_header for each header line, pm_call_body for each piece of the body, then
 * pm_call_end exactly once. After a failure, pm_call_retry_ms says whether to begin
 * another attempt (the caller waits that long, then calls pm_call_begin again). */

typedef struct pm_http_request {
    const char *method;         /* "POST" */
    const char *url;            /* absolute http(s) URL */
    const char *const *headers; /* "Name: value" lines, nheaders of them */
    size_t nheaders;
    const char *body; /* JSON text, body_len bytes */
    size_t body_len;
} pm_http_request;

/* How the transport ended an attempt. */
typedef enum pm_transport {
    PM_TRANSPORT_OK = 0,    /* the whole body arrived */
    PM_TRANSPORT_PARTIAL,   /* the connection closed before the body was complete */
    PM_TRANSPORT_FAILED,    /* connect/DNS/TLS/reset/timeout: no usable answer */
    PM_TRANSPORT_CANCELLED, /* the caller gave up (cancel) */
} pm_transport;

typedef struct pm_call pm_call;

/* Builds the call of req (stream: an SSE request, else "stream": false) for client c's
 * endpoint and retry policy. c and the strings of req are only read during the call to
 * pm_call_new (the request is copied into the call); c must outlive the call. Returns
 * the call (free with pm_call_free) or NULL with err (PM_ERR_ARG, PM_ERR_NOMEM). */
pm_call *pm_call_new(const pm_client *c, const pm_request *req, bool stream, pm_error *err);
void pm_call_free(pm_call *call);
/* The request to perform (owned by the call, valid until pm_call_free). */
const pm_http_request *pm_call_request(const pm_call *call);
/* Starts an attempt. Events go to on_event(ctx) (stream calls only; may be NULL). out
 * (may be NULL) receives the assembled response: initialised here (what it held is not
 * freed), cleared by the caller, also after a failed attempt. err (may be NULL)
 * receives the outcome; err and out must stay valid until pm_call_end. */
void pm_call_begin(pm_call *call, pm_event_fn on_event, void *ctx, pm_response *out, pm_error *err);
/* The answer's HTTP status code. */
void pm_call_status(pm_call *call, long http_status);
/* One header line ("Name: value", with or without its CRLF). Retry-After is read. */
void pm_call_header(pm_call *call, const char *line, size_t len);
/* A piece of the body. 0: go on; -1: stop reading (the decoder or the event callback
 * failed, or the answer is too large); pm_call_end then says why. */
int pm_call_body(pm_call *call, const void *bytes, size_t n);
/* Ends the attempt: PM_OK once the whole answer was decoded (the last event was
 * PM_EV_DONE), else the typed error (also in err). why: the transport's own message for
 * PM_TRANSPORT_FAILED (may be NULL). */
pm_status pm_call_end(pm_call *call, pm_transport how, const char *why);
/* After pm_call_end: the delay in ms before another attempt may begin, or -1 when the
 * outcome is final (success, cancel, a failure that is not retryable, an event already
 * delivered, or the client's retries used up). */
long pm_call_retry_ms(const pm_call *call);
/* Attempts begun so far. */
int pm_call_attempts(const pm_call *call);

#ifdef __cplusplus
}
#endif
#endif
