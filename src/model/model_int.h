/*
 * model_int.h — what the model adapter's files share: a growable byte buffer, the SSE
 * parser, the event sink (assembles the pm_response and forwards events to the caller)
 * and the provider decoders. Not a public header.
 */
#ifndef PERI_MODEL_INT_H
#define PERI_MODEL_INT_H

#include "peri/model.h"

#include "peri/base.h"

#include "peri/json.h"

/* ---------------------------------------------------------------- byte buffer */

/* The byte buffer is the base layer's pb_buf (peri/base.h). */

/* ---------------------------------------------------------------- errors */

pm_status pm__fail(pm_error *err, pm_status st, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* ---------------------------------------------------------------- SSE parser */

/* Incremental text/event-stream parser (WHATWG rules): lines end in \n, \r\n or \r and may
 * be split anywhere between feeds; "data:" lines accumulate (joined by \n); "event:" sets
 * the type; ':' lines are comments; a blank line dispatches. */
typedef int (*pm__sse_fn)(void *ctx, const char *event, const char *data, size_t len);

typedef struct pm__sse {
    pb_buf line;  /* the current, unfinished line */
    pb_buf event; /* event type of the pending event */
    pb_buf data;  /* data of the pending event */
    bool has_data;
    bool skip_lf;    /* the previous feed ended in \r: a leading \n belongs to it */
    size_t max_line; /* bound on a line/event, 0: 16 MiB */
} pm__sse;

void pm__sse_init(pm__sse *p);
void pm__sse_free(pm__sse *p);
/* Returns 0, the callback's non-zero value, or -1 (out of memory or line too long). */
int pm__sse_feed(pm__sse *p, const char *bytes, size_t n, pm__sse_fn fn, void *ctx);
/* End of stream: dispatches a last event that had data but no blank line. */
int pm__sse_finish(pm__sse *p, pm__sse_fn fn, void *ctx);

/* ---------------------------------------------------------------- event sink */

typedef struct pm__sink {
    pm_event_fn fn;
    void *ctx;
    pm_response *resp;   /* assembled answer */
    pb_buf cur;          /* text of the part being assembled */
    int cur_kind;        /* PM_PART_TEXT / PM_PART_THINKING, or -1 */
    char *cur_signature; /* thinking signature for the current part */
    size_t delivered;    /* events handed to fn: once > 0 no retry is allowed */
    bool done;           /* PM_EV_DONE went out */
    bool retryable;      /* the failure may be retried (if nothing was delivered) */
    long retry_after_ms;
    pm_status status; /* first failure, PM_OK while fine */
    pm_error *err;
    size_t assembled; /* bytes of text, thinking and tool arguments taken so far */
} pm__sink;

void pm__sink_init(pm__sink *s, pm_event_fn fn, void *ctx, pm_response *resp, pm_error *err);
void pm__sink_free(pm__sink *s);
/* Assembles and delivers; 0 to go on, -1 to stop (s->status says why). */
int pm__emit(pm__sink *s, const pm_stream_event *ev);
int pm__emit_text(pm__sink *s, pm_event_kind kind, const char *text, size_t len);
int pm__set_signature(pm__sink *s, const char *sig, size_t len);
/* Adds the tool call part to the response (called at TOOL_CALL_END time). */
int pm__sink_fail(pm__sink *s, pm_status st, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Closes the text part being assembled. 0 / -1 (OOM). */
int pm__sink_flush(pm__sink *s);
/* Counts n more bytes of the answer (text, thinking, tool arguments) against
 * PM__MAX_ANSWER: 0, or -1 with the sink failed (PM_ERR_PROTOCOL) when over it. */
int pm__sink_account(pm__sink *s, size_t n);

/* ---------------------------------------------------------------- decoders */

typedef struct pm__tool_acc {
    char *id, *name;
    pb_buf args;
    int block; /* Anthropic content block index; OpenAI tool index */
    bool started, ended;
} pm__tool_acc;

typedef struct pm__decoder {
    pm_provider provider;
    pm__sink *sink;
    pm__tool_acc *tools;
    size_t ntools, cap;
    int text_block, thinking_block; /* Anthropic: current block indexes or -1 */
    pm_usage usage;
    pm_stop_reason stop;
    char *stop_raw;
    bool saw_start, saw_finish, saw_done;
} pm__decoder;

void pm__decoder_init(pm__decoder *d, pm_provider prov, pm__sink *sink);
void pm__decoder_free(pm__decoder *d);
pm__tool_acc *pm__decoder_tool(pm__decoder *d, int block, bool create);
/* Appends n bytes of arguments to tool call t, within PM__MAX_TOOL_ARGS and the answer's
 * bound: 0, or -1 with the sink failed (PM_ERR_PROTOCOL over a bound, PM_ERR_NOMEM). */
int pm__tool_args_put(pm__decoder *d, pm__tool_acc *t, const char *s, size_t n);
/* Emits START (if needed) and END for one accumulated tool call; adds it to the response. */
int pm__tool_finish(pm__decoder *d, pm__tool_acc *t, size_t index);
int pm__emit_stop(pm__decoder *d);
int pm__emit_usage(pm__decoder *d);
pm_stop_reason pm__map_stop(const char *raw);
/* A pm__sse_fn: ctx is the decoder. */
int pm__decode_sse(void *ctx, const char *event, const char *data, size_t len);
/* After the body ended: checks the stream was complete, emits DONE. */
int pm__decode_eof(pm__decoder *d);
/* Whole non-streaming JSON body into the sink (no callback). */
int pm__decode_full(pm__decoder *d, const char *body, size_t len);

int pm__openai_chunk(pm__decoder *d, pj_t *obj);
int pm__openai_full(pm__decoder *d, pj_t *obj);
int pm__anthropic_event(pm__decoder *d, pj_t *obj);
int pm__anthropic_full(pm__decoder *d, pj_t *obj);

/* Request bodies (malloc'd JSON text). */
char *pm__openai_body(const pm_request *req, bool stream, pm_error *err);
char *pm__anthropic_body(const pm_request *req, bool stream, pm_error *err);

/* JSON helpers */
const char *pm__jstr(pj_t *obj, const char *key); /* string value or NULL */
int64_t pm__jint(pj_t *obj, const char *key);     /* integer value or 0 */
/* A tool's input schema ("{}" when none) as a JSON object (new reference), or NULL with
 * err set (PM_ERR_ARG) when it is not one: both request builders send it. */
pj_t *pm__tool_schema(const pm_tool_def *t, pm_error *err);

/* ---------------------------------------------------------------- client and HTTP */

#define PM__MAX_BODY (64u << 20) /* non-streaming answers larger than this are refused */
/* What one answer may assemble (text + thinking + tool arguments), streamed or not: a
 * server that streams without end fails the call instead of filling the memory. */
#define PM__MAX_ANSWER PM__MAX_BODY
/* One tool call's arguments: well under the 16 MiB an MCP frame may hold (PMCP_MAX_FRAME),
 * so arguments the model assembles always fit the request that carries them to a tool. */
#define PM__MAX_TOOL_ARGS (4u << 20)

struct pm_client {
    pm_provider provider;
    char *base_url, *api_key, *anthropic_version;
    char *proxy;     /* NULL: libcurl default */
    bool context_1m; /* Anthropic: the 1M-context beta header */
    long connect_timeout_ms, request_timeout_ms, idle_timeout_ms;
    int max_retries;
    long retry_base_ms, retry_max_ms, retry_after_cap_ms;
    /* libcurl's easy and multi handles (CURL *, CURLM *), made and freed by http.c only:
     * every other file of the layer is free of libcurl, so the sans-IO call (call.c)
     * builds without it. Reused so connections (keep-alive) survive between calls. */
    void *easy, *multi;
};

/* One model call without I/O (call.c): the request it describes and the state of its
 * current attempt (parser, decoder, sink, collected body). */
struct pm_call {
    const pm_client *c;
    bool stream;
    pm_http_request req; /* points into url/hdrs/body below */
    char *url, *body;    /* owned */
    char **hdrs;         /* owned header lines */
    size_t nhdrs;
    /* the current attempt */
    int attempt;  /* 0-based */
    long backoff; /* the backoff before the next attempt when the server names none */
    bool begun, ended;
    pm_error *err, local_err;
    pm_response *resp, scratch;
    pm__sse sse;
    pm__decoder dec;
    pm__sink sink;
    pb_buf body_in; /* non-streaming answer, or an error body */
    long status;
    long retry_after_ms;
    bool body_too_big;
    long retry_ms; /* after pm_call_end: the delay before another attempt, or -1 */
};

/* http.c: the client's libcurl handles (false when they cannot be made), their release,
 * and one attempt of call over them: it feeds the call (pm_call_status/header/body) and
 * returns how the transfer ended (PM_TRANSPORT_*; *why holds libcurl's message). */
bool pm__http_init(pm_client *c);
void pm__http_free(pm_client *c);
pm_transport pm__perform(pm_client *c, pm_call *call, atomic_int *cancel, char *why, size_t whylen);
/* Appends the body's "error.message" (both providers) to err->message; keeps an excerpt. */
void pm__explain_body(pm_error *err, const pb_buf *body);

#endif
