/*
 * telemetry.c — the module's telemetry: one OpenTelemetry span per turn, exported as
 * OTLP/HTTP JSON to the settings' `telemetry.url` over the host's network port, with the
 * host's `telemetry` credential as a bearer token.
 *
 * Invariants: a side channel. An export never changes a turn's outcome or its answer; a
 * failed export is logged (a warning) and forgotten, never retried. It carries no prompt
 * and no output, only identities, times, the model, token counts and the outcome. At most
 * TEL_MAX_INFLIGHT exports are in flight (later ones are dropped and counted), each
 * bounded by TEL_DEADLINE_MS; a close cancels those in flight, so settlement does not
 * wait on a collector.
 */
#include "paw_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TEL_MAX_INFLIGHT 4
#define TEL_DEADLINE_MS  10000

struct paw_tel {
    char *url;
    char service[128];
    size_t inflight;
    uint64_t dropped, failed;
};

int paw__telemetry_new(paw *p, char *err, size_t errlen) {
    pj_t *t = pj_object_get(p->settings.doc, "telemetry");
    if (!t) return 0;
    if (!pj_is_object(t)) {
        snprintf(err, errlen, "settings.telemetry must be an object {\"url\": \"http(s)://...\"}");
        return -1;
    }
    pj_t *url = pj_object_get(t, "url");
    pj_t *svc = pj_object_get(t, "serviceName");
    const char *u = pj_string_value(url);
    if (!u || (strncmp(u, "http://", 7) != 0 && strncmp(u, "https://", 8) != 0)) {
        snprintf(err, errlen,
                 "settings.telemetry.url must be an http(s) URL (an OTLP/HTTP traces endpoint, "
                 "e.g. http://collector:4318/v1/traces)");
        return -1;
    }
    if (svc && (!pj_is_string(svc) || pj_string_length(svc) == 0 || pj_string_length(svc) > 100)) {
        snprintf(err, errlen, "settings.telemetry.serviceName must be a string of 1..100 bytes");
        return -1;
    }
    paw_tel *tel = calloc(1, sizeof *tel);
    if (!tel || !(tel->url = strdup(u))) {
        free(tel);
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    snprintf(tel->service, sizeof tel->service, "%s", svc ? pj_string_value(svc) : "peri-agent");
    p->tel = tel;
    return 0;
}

void paw__telemetry_free(paw *p) {
    if (!p->tel) return;
    free(p->tel->url);
    free(p->tel);
    p->tel = NULL;
}

/* The OTLP/HTTP JSON body of one turn's span (malloc'd), NULL when out of memory. */
static char *span_json(paw_sess *s, const pag_turn_result *r, int64_t end_ms) {
    paw *p = s->p;
    uint8_t ids[24];
    char turn[48];
    if (!p->h.random(p->h.ctx, ids, sizeof ids)) return NULL;
    snprintf(turn, sizeof turn, "turn-1-%llu", (unsigned long long)s->turns);
    pag_telemetry_span t = {.service = p->tel->service,
                            .form = "wasm",
                            .session_id = s->id,
                            .turn_id = turn,
                            .machine_id = p->machine_id,
                            .model_spec = paw__sess_model_spec(s),
                            .start_ms = s->tel_start_ms,
                            .end_ms = end_ms,
                            .input_tokens = s->tel_in,
                            .output_tokens = s->tel_out,
                            .model_calls = s->tel_calls,
                            .result = r,
                            .ids = ids};
    return pag_telemetry_span_json(&t);
}

static void on_done(void *ud, const pn_http_result *r) {
    paw_handle *hd = ud;
    paw *p = hd->tel_owner;
    p->tel->inflight--;
    bool ok = r->err == PN_HTTP_OK && r->status >= 200 && r->status < 300;
    if (!ok && r->err != PN_HTTP_E_CANCELLED) {
        p->tel->failed++;
        if (r->err == PN_HTTP_OK)
            paw__log(p, 1,
                     "telemetry: the collector answered HTTP %d (side channel: no turn "
                     "is affected)",
                     r->status);
        else
            paw__log(p, 1, "telemetry: export failed: %s: %s (side channel: no turn is affected)",
                     r->net ? pn_err_name(r->net) : pn_http_err_name(r->err), r->detail);
    }
    paw__handle_drop(p, hd);
}

void paw__telemetry_turn(paw_sess *s, const pag_turn_result *r) {
    paw *p = s->p;
    if (!p->tel || p->closing) return;
    if (p->tel->inflight >= TEL_MAX_INFLIGHT) {
        if (p->tel->dropped++ % 100 == 0)
            paw__log(p, 1,
                     "telemetry: %d exports in flight, this turn's span is dropped (%llu so "
                     "far)",
                     TEL_MAX_INFLIGHT, (unsigned long long)p->tel->dropped);
        return;
    }
    char *body = span_json(s, r, p->h.ports->wall_ms(p->h.ports->ctx));
    if (!body) return;
    char *tok = paw__credential(p, "telemetry");
    size_t auth_n = tok ? strlen(tok) + 8 : 0;
    char *auth = tok ? malloc(auth_n) : NULL;
    if (auth) snprintf(auth, auth_n, "Bearer %s", tok);
    pn_http_header hs[2] = {{.name = "Content-Type", .value = "application/json"},
                            {.name = "Authorization", .value = auth}};
    paw_handle *hd = paw__handle_add(p, PAW_H_HTTP, NULL);
    pn_http_result fail = {0};
    pn_http_req *req = NULL;
    if (hd && (!tok || auth)) {
        hd->tel_owner = p;
        pn_http_callbacks cb = {.on_done = on_done, .ud = hd};
        pn_http_opts o = {.deadline_ms = TEL_DEADLINE_MS};
        req = pn_http_request(p->h.ports, p->tel->url, "POST", hs, auth ? 2 : 1, body, strlen(body),
                              &cb, &o, &fail);
    }
    if (tok) {
        memset(tok, 0, strlen(tok));
        free(tok);
    }
    if (auth) {
        memset(auth, 0, auth_n);
        free(auth);
    }
    free(body);
    if (!req) {
        if (hd) paw__handle_drop(p, hd);
        p->tel->failed++;
        paw__log(p, 1, "telemetry: export not started: %s (side channel: no turn is affected)",
                 fail.detail[0] ? fail.detail : "out of memory");
        return;
    }
    hd->ud = req;
    p->tel->inflight++;
}

void paw__telemetry_close(paw *p) {
    for (paw_handle *hd = p->handles; hd; hd = hd->next)
        if (hd->kind == PAW_H_HTTP && hd->tel_owner && !hd->cancelled) {
            hd->cancelled = true;
            pn_http_cancel(hd->ud);
        }
}
