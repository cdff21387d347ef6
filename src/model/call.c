/*
 * call.c — one model call without I/O (pm_call_*): the HTTP request as data (URL,
 * header lines, JSON body) and the answer's decoder, fed with status, header lines and
 * body bytes by whoever owns the network. It classifies each attempt's outcome into a
 * typed error and applies the client's retry policy (another attempt only while no
 * event was delivered; the server's Retry-After capped, else exponential backoff).
 *
 * Invariants: the call owns every string of its request; an attempt is begun, fed,
 * and ended exactly once before the next begins; the sink/decoder/parser of an attempt
 * live inside the call (stable addresses) and are released at pm_call_end. No clock,
 * no socket, no libcurl: pm_stream (client.c over http.c) and an embedder's event loop
 * drive the same object.
 */
#include "model_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define ERR_BODY_KEEP 8192 /* bytes of an error body kept to explain it */

/* Appends the header line pre+val (malloc'd) to the call. false when out of memory. */
static bool add_header(pm_call *call, const char *pre, const char *val) {
    char **h = realloc(call->hdrs, (call->nhdrs + 1) * sizeof *h);
    if (!h) return false;
    call->hdrs = h;
    size_t n = strlen(pre) + strlen(val) + 1;
    char *line = malloc(n);
    if (!line) return false;
    snprintf(line, n, "%s%s", pre, val);
    h[call->nhdrs++] = line;
    return true;
}

static bool build_headers(pm_call *call) {
    const pm_client *c = call->c;
    bool openai = c->provider == PM_PROVIDER_OPENAI;
    bool ok = add_header(call, "Content-Type: ", "application/json") &&
              add_header(call, "Accept: ", call->stream ? "text/event-stream" : "application/json");
    if (ok && *c->api_key)
        ok = add_header(call, openai ? "Authorization: Bearer " : "x-api-key: ", c->api_key);
    if (ok && !openai) ok = add_header(call, "anthropic-version: ", c->anthropic_version);
    if (ok && !openai && c->context_1m)
        ok = add_header(call, "anthropic-beta: ", "context-1m-2025-08-07");
    return ok;
}

/* Ownership: the returned call owns its URL, headers and body; free with pm_call_free. */
pm_call *pm_call_new(const pm_client *c, const pm_request *req, bool stream, pm_error *err) {
    if (err) memset(err, 0, sizeof *err);
    pm_call *call = c ? calloc(1, sizeof *call) : NULL;
    if (!call) {
        pm__fail(err, c ? PM_ERR_NOMEM : PM_ERR_ARG, c ? "out of memory" : "no model client");
        return NULL;
    }
    call->c = c;
    call->stream = stream;
    call->backoff = c->retry_base_ms;
    call->retry_ms = -1;
    call->body = pm_build_body(c, req, stream, err);
    if (!call->body) {
        pm_call_free(call);
        return NULL;
    }
    size_t ulen = strlen(c->base_url) + 32;
    call->url = malloc(ulen);
    if (!call->url || !build_headers(call)) {
        pm__fail(err, PM_ERR_NOMEM, "out of memory");
        pm_call_free(call);
        return NULL;
    }
    snprintf(call->url, ulen, "%s%s", c->base_url,
             c->provider == PM_PROVIDER_OPENAI ? "/chat/completions" : "/v1/messages");
    call->req = (pm_http_request){.method = "POST",
                                  .url = call->url,
                                  .headers = (const char *const *)call->hdrs,
                                  .nheaders = call->nhdrs,
                                  .body = call->body,
                                  .body_len = strlen(call->body)};
    return call;
}

static void attempt_release(pm_call *call) {
    if (!call->begun) return;
    pm__decoder_free(&call->dec);
    pm__sse_free(&call->sse);
    pb_buf_free(&call->body_in);
    pm__sink_free(&call->sink);
    call->begun = false;
}

void pm_call_free(pm_call *call) {
    if (!call) return;
    attempt_release(call);
    pm_response_clear(&call->scratch);
    for (size_t i = 0; i < call->nhdrs; i++)
        free(call->hdrs[i]);
    free(call->hdrs);
    free(call->url);
    free(call->body);
    free(call);
}

const pm_http_request *pm_call_request(const pm_call *call) {
    return &call->req;
}

int pm_call_attempts(const pm_call *call) {
    return call->attempt + (call->begun || call->ended ? 1 : 0);
}

long pm_call_retry_ms(const pm_call *call) {
    return call->ended ? call->retry_ms : -1;
}

void pm_call_begin(pm_call *call, pm_event_fn on_event, void *ctx, pm_response *out,
                   pm_error *err) {
    attempt_release(call);
    if (call->ended) { /* the backoff after attempt k is the base doubled k times, capped */
        call->attempt++;
        call->backoff =
            call->backoff * 2 < call->c->retry_max_ms ? call->backoff * 2 : call->c->retry_max_ms;
    }
    call->ended = false;
    call->err = err ? err : &call->local_err;
    memset(call->err, 0, sizeof *call->err);
    call->resp = out ? out : &call->scratch;
    if (out) {
        memset(out, 0, sizeof *out);
        out->message.role = PM_ROLE_ASSISTANT;
    } else {
        pm_response_clear(&call->scratch);
    }
    pm__sink_init(&call->sink, call->stream ? on_event : NULL, ctx, call->resp, call->err);
    pm__sse_init(&call->sse);
    pm__decoder_init(&call->dec, call->c->provider, &call->sink);
    memset(&call->body_in, 0, sizeof call->body_in);
    call->status = 0;
    call->retry_after_ms = -1;
    call->body_too_big = false;
    call->retry_ms = -1;
    call->begun = true;
}

void pm_call_status(pm_call *call, long http_status) {
    call->status = http_status;
}

void pm_call_header(pm_call *call, const char *line, size_t len) {
    static const char key[] = "retry-after:";
    if (len <= sizeof key - 1 || strncasecmp(line, key, sizeof key - 1) != 0) return;
    char tmp[64];
    size_t vl = len - (sizeof key - 1);
    if (vl >= sizeof tmp) vl = sizeof tmp - 1;
    memcpy(tmp, line + sizeof key - 1, vl);
    tmp[vl] = '\0';
    char *end;
    double secs = strtod(tmp, &end);
    if (end != tmp && secs >= 0 && secs < 1e9) /* an HTTP-date is ignored: backoff applies */
        call->retry_after_ms = (long)(secs * 1000);
}

static bool ok2xx(const pm_call *call) {
    return call->status >= 200 && call->status < 300;
}

int pm_call_body(pm_call *call, const void *bytes, size_t n) {
    if (!call->begun || call->sink.status != PM_OK) return -1;
    if (call->stream && ok2xx(call)) {
        if (pm__sse_feed(&call->sse, bytes, n, pm__decode_sse, &call->dec) != 0) {
            if (call->sink.status == PM_OK)
                pm__sink_fail(&call->sink, PM_ERR_PROTOCOL, "event stream line too long");
            return -1;
        }
        return 0;
    }
    size_t keep = ok2xx(call) ? PM__MAX_BODY : ERR_BODY_KEEP;
    if (call->body_in.len + n > keep) {
        if (ok2xx(call)) {
            call->body_too_big = true;
            return -1;
        }
        n = keep > call->body_in.len ? keep - call->body_in.len : 0; /* an excerpt is enough */
    }
    if (n && !pb_buf_put(&call->body_in, bytes, n)) {
        pm__sink_fail(&call->sink, PM_ERR_NOMEM, "out of memory");
        return -1;
    }
    return 0;
}

/* The attempt's typed outcome and whether it may be retried. */
static pm_status classify(pm_call *call, pm_transport how, const char *why, bool *retryable) {
    pm_error *err = call->err;
    pm__sink *sink = &call->sink;
    *retryable = false;
    if (how == PM_TRANSPORT_CANCELLED || sink->status == PM_CANCELLED) {
        if (sink->status != PM_CANCELLED) pm__fail(err, PM_CANCELLED, "cancelled");
        return PM_CANCELLED;
    }
    if (sink->status != PM_OK) { /* decoder/protocol/callback failure */
        *retryable = sink->retryable;
        return sink->status;
    }
    if (call->body_too_big)
        return pm__fail(err, PM_ERR_PROTOCOL, "answer larger than %u bytes", PM__MAX_BODY);
    if (how == PM_TRANSPORT_FAILED ||
        (how == PM_TRANSPORT_PARTIAL && !(call->stream && ok2xx(call)))) {
        *retryable = true;
        return pm__fail(err, PM_ERR_NETWORK, "%s", why && *why ? why : "connection failed");
    }
    if (call->status == 401 || call->status == 403) {
        pm__fail(err, PM_ERR_AUTH, "HTTP %ld", call->status);
        pm__explain_body(err, &call->body_in);
        return PM_ERR_AUTH;
    }
    if (!ok2xx(call)) {
        pm__fail(err, PM_ERR_HTTP, "HTTP %ld", call->status);
        pm__explain_body(err, &call->body_in);
        *retryable = call->status == 429 || call->status == 408 || call->status >= 500;
        return PM_ERR_HTTP;
    }
    if (call->stream) {
        if (pm__sse_finish(&call->sse, pm__decode_sse, &call->dec) == 0) pm__decode_eof(&call->dec);
        if (sink->status == PM_OK && how == PM_TRANSPORT_PARTIAL)
            return pm__fail(err, PM_ERR_NETWORK, "connection closed mid-stream");
        return sink->status;
    }
    pm__decode_full(&call->dec, call->body_in.p ? call->body_in.p : "", call->body_in.len);
    return sink->status;
}

pm_status pm_call_end(pm_call *call, pm_transport how, const char *why) {
    if (!call->begun) return pm__fail(call->err, PM_ERR_ARG, "no attempt was begun");
    pm_error *err = call->err;
    bool retryable;
    pm_status st = classify(call, how, why, &retryable);
    err->attempts = call->attempt + 1;
    err->http_status = call->status;
    if (st == PM_OK && !call->sink.done)
        st = pm__fail(err, PM_ERR_PROTOCOL, "the answer ended without completing");
    if (st == PM_ERR_NOMEM) retryable = false;
    if (st == PM_OK) err->status = PM_OK, err->message[0] = '\0';
    const pm_client *c = call->c;
    if (st != PM_OK && st != PM_CANCELLED && retryable && call->sink.delivered == 0 &&
        call->attempt < c->max_retries)
        call->retry_ms = call->retry_after_ms >= 0 ? (call->retry_after_ms < c->retry_after_cap_ms
                                                          ? call->retry_after_ms
                                                          : c->retry_after_cap_ms)
                                                   : call->backoff;
    pm__sink_flush(&call->sink); /* a failed call still hands back the text that arrived */
    attempt_release(call);
    call->ended = true;
    return st;
}

/* Pulls "error.message" (both providers) out of an error body. */
void pm__explain_body(pm_error *err, const pb_buf *body) {
    if (!err || !body->p) return;
    snprintf(err->body, sizeof err->body, "%s", body->p);
    pj_error_t je;
    pj_t *o = pj_loadb(body->p, body->len, 0, &je);
    const char *msg = pm__jstr(pj_object_get(o, "error"), "message");
    if (msg) {
        size_t n = strlen(err->message);
        snprintf(err->message + n, sizeof err->message - n, ": %s", msg);
    }
    pj_decref(o);
}
