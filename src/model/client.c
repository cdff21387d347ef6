/*
 * client.c — the pm_client: one provider endpoint. Builds the request, runs attempts
 * (http.c), classifies failures into typed errors and retries with backoff while nothing
 * has been delivered to the caller.
 */
#include "model_int.h"

#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

const char *pm_status_name(pm_status s) {
    switch (s) {
    case PM_OK: return "ok";
    case PM_ERR_HTTP: return "http";
    case PM_ERR_NETWORK: return "network";
    case PM_ERR_AUTH: return "auth";
    case PM_ERR_PROTOCOL: return "protocol";
    case PM_CANCELLED: return "cancelled";
    case PM_ERR_NOMEM: return "nomem";
    case PM_ERR_ARG: return "arg";
    }
    return "unknown";
}

const char *pm_stop_reason_name(pm_stop_reason r) {
    static const char *const names[] = {"none",       "end_turn", "tool_use",
                                        "max_tokens", "refusal",  "other"};
    return (unsigned)r < 6 ? names[r] : "other";
}

bool pm_provider_parse(const char *name, pm_provider *out) {
    if (name && strcmp(name, "openai") == 0)
        *out = PM_PROVIDER_OPENAI;
    else if (name && strcmp(name, "anthropic") == 0)
        *out = PM_PROVIDER_ANTHROPIC;
    else
        return false;
    return true;
}

pm_status pm_global_init(void) {
    return curl_global_init(CURL_GLOBAL_DEFAULT) == CURLE_OK ? PM_OK : PM_ERR_NOMEM;
}

void pm_global_cleanup(void) {
    curl_global_cleanup();
}

void pm_response_clear(pm_response *r) {
    if (!r) return;
    pm_message_clear(&r->message);
    free(r->stop_raw);
    free(r->id);
    free(r->model);
    memset(r, 0, sizeof *r);
    r->message.role = PM_ROLE_ASSISTANT;
}

static void clear_err(pm_error *err) {
    if (err) memset(err, 0, sizeof *err);
}

/* ---------------------------------------------------------------- client */

void pm_client_free(pm_client *c) {
    if (!c) return;
    if (c->easy) curl_easy_cleanup(c->easy);
    if (c->multi) curl_multi_cleanup(c->multi);
    free(c->base_url);
    free(c->api_key);
    free(c->anthropic_version);
    free(c->proxy);
    free(c);
}

/* Fills a zeroed client from cfg (defaults for what cfg leaves 0). false when an
 * allocation failed (pm_client_free releases what was made). */
static bool client_init(pm_client *c, const pm_config *cfg) {
    c->provider = cfg->provider;
    c->base_url = strdup(cfg->base_url);
    c->api_key = strdup(cfg->api_key ? cfg->api_key : "");
    c->anthropic_version = strdup(cfg->anthropic_version ? cfg->anthropic_version : "2023-06-01");
    c->connect_timeout_ms = cfg->connect_timeout_ms > 0 ? cfg->connect_timeout_ms : 10000;
    c->request_timeout_ms = cfg->request_timeout_ms > 0 ? cfg->request_timeout_ms : 0;
    c->idle_timeout_ms = cfg->idle_timeout_ms > 0 ? cfg->idle_timeout_ms : 300000;
    c->max_retries = cfg->max_retries > 0 ? cfg->max_retries : 0;
    c->retry_base_ms = cfg->retry_base_ms > 0 ? cfg->retry_base_ms : 500;
    c->retry_max_ms = cfg->retry_max_ms > 0 ? cfg->retry_max_ms : 8000;
    c->retry_after_cap_ms = cfg->retry_after_cap_ms > 0 ? cfg->retry_after_cap_ms : 30000;
    c->proxy = cfg->proxy ? strdup(cfg->proxy) : NULL;
    c->context_1m = cfg->context_1m;
    c->easy = curl_easy_init();
    c->multi = curl_multi_init();
    return c->base_url && c->api_key && c->anthropic_version && c->easy && c->multi &&
           (!cfg->proxy || c->proxy);
}

pm_client *pm_client_new(const pm_config *cfg, pm_error *err) {
    clear_err(err);
    if (!cfg || !cfg->base_url || !*cfg->base_url ||
        (cfg->provider != PM_PROVIDER_OPENAI && cfg->provider != PM_PROVIDER_ANTHROPIC)) {
        pm__fail(err, PM_ERR_ARG, "model client needs a provider and a base URL");
        return NULL;
    }
    pm_client *c = calloc(1, sizeof *c);
    if (!c || !client_init(c, cfg)) {
        pm__fail(err, PM_ERR_NOMEM,
                 c ? "out of memory (or curl_global_init was not called)" : "out of memory");
        pm_client_free(c);
        return NULL;
    }
    size_t n = strlen(c->base_url);
    while (n > 0 && c->base_url[n - 1] == '/')
        c->base_url[--n] = '\0';
    return c;
}

char *pm_build_body(const pm_client *c, const pm_request *req, bool stream, pm_error *err) {
    clear_err(err);
    if (!c || !req || !req->model || !*req->model || (req->nmessages && !req->messages) ||
        (req->ntools && !req->tools)) {
        pm__fail(err, PM_ERR_ARG, "request needs a model");
        return NULL;
    }
    return c->provider == PM_PROVIDER_OPENAI ? pm__openai_body(req, stream, err)
                                             : pm__anthropic_body(req, stream, err);
}

/* ---------------------------------------------------------------- one HTTP attempt */

/* ---------------------------------------------------------------- the call */

static bool cancelled(atomic_int *cancel) {
    return cancel && atomic_load(cancel) != 0;
}

static bool sleep_cancellable(long ms, atomic_int *cancel) {
    while (ms > 0) {
        if (cancelled(cancel)) return false;
        long step = ms < 10 ? ms : 10;
        struct timespec ts = {0, step * 1000000L};
        nanosleep(&ts, NULL);
        ms -= step;
    }
    return !cancelled(cancel);
}

static pm_status call(pm_client *c, const pm_request *req, bool stream, pm_event_fn fn, void *ctx,
                      atomic_int *cancel, pm_response *out, pm_error *err) {
    pm_error local;
    if (!err) err = &local;
    clear_err(err);
    pm_response scratch;
    pm_response *resp = out ? out : &scratch;
    memset(resp, 0, sizeof *resp);
    resp->message.role = PM_ROLE_ASSISTANT;
    if (!c) return pm__fail(err, PM_ERR_ARG, "no model client");
    char *body = pm_build_body(c, req, stream, err);
    if (!body) return err->status;
    size_t ulen = strlen(c->base_url) + 32;
    char *url = malloc(ulen);
    struct curl_slist *hdrs = NULL;
    pb_buf hbuf = {0};
    pm_status st = PM_OK;
    if (!url) {
        st = pm__fail(err, PM_ERR_NOMEM, "out of memory");
        goto done;
    }
    snprintf(url, ulen, "%s%s", c->base_url,
             c->provider == PM_PROVIDER_OPENAI ? "/chat/completions" : "/v1/messages");
    struct curl_slist *h = curl_slist_append(NULL, "Content-Type: application/json");
    hdrs = h;
    if (h)
        h = curl_slist_append(hdrs,
                              stream ? "Accept: text/event-stream" : "Accept: application/json");
    /* no "Expect: 100-continue" for large conversations: a server that ignores it would
     * cost a one-second stall per call */
    if (h) h = curl_slist_append(hdrs, "Expect:");
    if (h && *c->api_key) {
        const char *pre =
            c->provider == PM_PROVIDER_OPENAI ? "Authorization: Bearer " : "x-api-key: ";
        if (!pb_buf_put(&hbuf, pre, strlen(pre)) ||
            !pb_buf_put(&hbuf, c->api_key, strlen(c->api_key)))
            h = NULL;
        else
            h = curl_slist_append(hdrs, hbuf.p);
    }
    if (h && c->provider == PM_PROVIDER_ANTHROPIC) {
        pb_buf_reset(&hbuf);
        if (!pb_buf_put(&hbuf, "anthropic-version: ", 19) ||
            !pb_buf_put(&hbuf, c->anthropic_version, strlen(c->anthropic_version)))
            h = NULL;
        else
            h = curl_slist_append(hdrs, hbuf.p);
    }
    if (h && c->provider == PM_PROVIDER_ANTHROPIC && c->context_1m)
        h = curl_slist_append(hdrs, "anthropic-beta: context-1m-2025-08-07");
    if (!h) {
        st = pm__fail(err, PM_ERR_NOMEM, "out of memory");
        goto done;
    }
    long backoff = c->retry_base_ms;
    for (int attempt_no = 0;; attempt_no++) {
        pm_response_clear(resp);
        pm__sink sink;
        pm__sink_init(&sink, stream ? fn : NULL, ctx, resp, err);
        pm__attempt a = {
            .c = c, .stream = stream, .sink = &sink, .cancel = cancel, .retry_after_ms = -1};
        pm__sse_init(&a.sse);
        pm__decoder_init(&a.dec, c->provider, &sink);
        char errbuf[CURL_ERROR_SIZE] = "";
        err->attempts = attempt_no + 1;
        CURLcode cc = pm__perform(&a, url, hdrs, body, errbuf);
        err->http_status = a.status;
        bool retryable = false;
        bool ok2xx = a.status >= 200 && a.status < 300;
        if (cancelled(cancel) || sink.status == PM_CANCELLED) {
            if (sink.status != PM_CANCELLED) pm__fail(err, PM_CANCELLED, "cancelled");
            st = PM_CANCELLED;
        } else if (sink.status != PM_OK) {
            st = sink.status; /* decoder/protocol/callback failure */
            retryable = sink.retryable;
        } else if (cc != CURLE_OK && !(a.stream && ok2xx && cc == CURLE_PARTIAL_FILE)) {
            if (a.body_too_big)
                st = pm__fail(err, PM_ERR_PROTOCOL, "answer larger than %u bytes", PM__MAX_BODY);
            else
                st = pm__fail(err, PM_ERR_NETWORK, "%s",
                              errbuf[0] ? errbuf : curl_easy_strerror(cc));
            retryable = !a.body_too_big;
        } else if (a.status == 401 || a.status == 403) {
            st = pm__fail(err, PM_ERR_AUTH, "HTTP %ld", a.status);
            pm__explain_body(err, &a.body);
        } else if (!ok2xx) {
            st = pm__fail(err, PM_ERR_HTTP, "HTTP %ld", a.status);
            pm__explain_body(err, &a.body);
            retryable = a.status == 429 || a.status == 408 || a.status >= 500;
        } else if (stream) {
            if (pm__sse_finish(&a.sse, pm__decode_sse, &a.dec) == 0) pm__decode_eof(&a.dec);
            st = sink.status;
            if (st == PM_OK && cc == CURLE_PARTIAL_FILE)
                st = pm__fail(err, PM_ERR_NETWORK, "connection closed mid-stream");
        } else {
            pm__decode_full(&a.dec, a.body.p ? a.body.p : "", a.body.len);
            st = sink.status;
        }
        if (st == PM_OK && !sink.done)
            st = pm__fail(err, PM_ERR_PROTOCOL, "the answer ended without completing");
        if (st == PM_ERR_NOMEM) retryable = false;
        if (st == PM_OK) err->status = PM_OK, err->message[0] = '\0';
        long wait = a.retry_after_ms >= 0
                        ? (a.retry_after_ms < c->retry_after_cap_ms ? a.retry_after_ms
                                                                    : c->retry_after_cap_ms)
                        : backoff;
        bool again = st != PM_OK && st != PM_CANCELLED && retryable && sink.delivered == 0 &&
                     attempt_no < c->max_retries;
        pm__sink_flush(&sink); /* a failed call still hands back the text that arrived */
        pm__decoder_free(&a.dec);
        pm__sse_free(&a.sse);
        pb_buf_free(&a.body);
        pm__sink_free(&sink);
        if (!again) break;
        if (!sleep_cancellable(wait, cancel)) {
            st = pm__fail(err, PM_CANCELLED, "cancelled");
            break;
        }
        backoff = backoff * 2 < c->retry_max_ms ? backoff * 2 : c->retry_max_ms;
    }
done:
    free(body);
    free(url);
    pb_buf_free(&hbuf);
    curl_slist_free_all(hdrs);
    if (!out) pm_response_clear(&scratch);
    return st;
}

pm_status pm_stream(pm_client *c, const pm_request *req, pm_event_fn on_event, void *ctx,
                    atomic_int *cancel, pm_response *out, pm_error *err) {
    return call(c, req, true, on_event, ctx, cancel, out, err);
}

pm_status pm_complete(pm_client *c, const pm_request *req, atomic_int *cancel, pm_response *out,
                      pm_error *err) {
    return call(c, req, false, NULL, NULL, cancel, out, err);
}
