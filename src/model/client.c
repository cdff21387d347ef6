/*
 * client.c — the pm_client: one provider endpoint and its retry policy. pm_stream and
 * pm_complete are the blocking form of a sans-IO call (call.c): each attempt is performed
 * over libcurl (http.c), the call classifies it and says whether and when to retry, and
 * the wait between attempts is a cancellable sleep here.
 */
#include "model_int.h"

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
    pm__http_free(c);
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
    bool http = pm__http_init(c);
    return c->base_url && c->api_key && c->anthropic_version && http && (!cfg->proxy || c->proxy);
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
    pm_call *pc = pm_call_new(c, req, stream, err);
    if (!pc) return err->status;
    pm_status st;
    for (;;) {
        pm_call_begin(pc, fn, ctx, resp, err);
        char why[256];
        pm_transport how = pm__perform(c, pc, cancel, why, sizeof why);
        st = pm_call_end(pc, how, why);
        long wait = pm_call_retry_ms(pc);
        if (wait < 0) break;
        pm_response_clear(resp); /* the failed attempt's partial answer */
        if (!sleep_cancellable(wait, cancel)) {
            st = pm__fail(err, PM_CANCELLED, "cancelled");
            break;
        }
    }
    pm_call_free(pc);
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
