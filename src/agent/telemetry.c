/*
 * telemetry.c — one turn as an OpenTelemetry span in OTLP/HTTP JSON (the body a host
 * POSTs to a collector's /v1/traces). Pure: no I/O, no clock, no randomness of its own
 * (the caller gives the times and the ids' bytes), so both forms of the agent host build
 * the same span.
 *
 * Invariants: the span carries identities, times, the model, token counts and the
 * outcome, never a prompt, an output or a tool's arguments. 64-bit integers are strings
 * and ids lowercase hex, as OTLP's JSON encoding wants.
 */
#include "peri/agent.h"
#include "peri/json.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef PERI_VERSION
#define PERI_VERSION "0.0.0-unknown"
#endif

static void hex(const uint8_t *b, size_t n, char *out) {
    static const char d[] = "0123456789abcdef";
    for (size_t i = 0; i < n; i++) {
        out[2 * i] = d[b[i] >> 4];
        out[2 * i + 1] = d[b[i] & 15];
    }
    out[2 * n] = '\0';
}

static pj_t *attr_s(const char *k, const char *v) {
    return pj_pack("{s:s, s:{s:s}}", "key", k, "value", "stringValue", v ? v : "");
}

static pj_t *attr_i(const char *k, int64_t v) {
    char n[32];
    snprintf(n, sizeof n, "%lld", (long long)v); /* OTLP JSON: 64-bit integers as strings */
    return pj_pack("{s:s, s:{s:s}}", "key", k, "value", "intValue", n);
}

static char *nanos(int64_t ms, char *buf, size_t n) {
    snprintf(buf, n, "%lld000000", (long long)(ms > 0 ? ms : 0));
    return buf;
}

char *pag_telemetry_span_json(const pag_telemetry_span *t) {
    const pag_turn_result *r = t->result;
    char trace[33], span[17], t0[40], t1[40];
    hex(t->ids, 16, trace);
    hex(t->ids + 16, 8, span);
    const char *spec = t->model_spec ? t->model_spec : "";
    const char *colon = strchr(spec, ':');
    char system[64];
    snprintf(system, sizeof system, "%.*s", colon ? (int)(colon - spec) : 0, spec);
    bool failed = r->state == PAG_TURN_FAILED;
    pj_t *attrs = pj_array();
    if (attrs) {
        pj_array_append_new(attrs, attr_s("peri.session.id", t->session_id));
        pj_array_append_new(attrs, attr_s("peri.turn.id", t->turn_id));
        pj_array_append_new(attrs, attr_s("peri.machine.id", t->machine_id));
        pj_array_append_new(attrs, attr_s("gen_ai.system", system));
        pj_array_append_new(attrs, attr_s("gen_ai.request.model", colon ? colon + 1 : spec));
        pj_array_append_new(attrs, attr_i("gen_ai.usage.input_tokens", t->input_tokens));
        pj_array_append_new(attrs, attr_i("gen_ai.usage.output_tokens", t->output_tokens));
        pj_array_append_new(attrs, attr_i("peri.model_calls", t->model_calls));
        pj_array_append_new(
            attrs, failed
                       ? attr_s("error.type", r->error_kind ? r->error_kind : "internal")
                       : attr_s("peri.stop_reason", r->stop_reason ? r->stop_reason : "end_turn"));
        if (failed && r->http_status > 0)
            pj_array_append_new(attrs, attr_i("http.response.status_code", r->http_status));
    }
    pj_t *status = failed ? pj_pack("{s:i, s:s}", "code", 2, "message", r->message)
                          : pj_pack("{s:i}", "code", 1);
    pj_t *res = pj_array();
    if (res) {
        pj_array_append_new(res, attr_s("service.name", t->service ? t->service : "peri-agent"));
        pj_array_append_new(res, attr_s("service.version", PERI_VERSION));
        pj_array_append_new(res, attr_s("peri.form", t->form ? t->form : "native"));
    }
    pj_t *doc = NULL;
    if (!attrs || !status || !res) {
        pj_decref(attrs);
        pj_decref(status);
        pj_decref(res);
        return NULL;
    }
    doc = pj_pack("{s:[{s:{s:o}, s:[{s:{s:s, s:s}, s:[{s:s, s:s, s:s, s:i, s:s, s:s, "
                  "s:o, s:o}]}]}]}",
                  "resourceSpans", "resource", "attributes", res, "scopeSpans", "scope", "name",
                  "peri", "version", PERI_VERSION, "spans", "traceId", trace, "spanId", span,
                  "name", "peri.turn", "kind", 1, "startTimeUnixNano",
                  nanos(t->start_ms, t0, sizeof t0), "endTimeUnixNano",
                  nanos(t->end_ms, t1, sizeof t1), "attributes", attrs, "status", status);
    if (!doc) return NULL; /* (pj_pack released what it was given) */
    char *txt = pj_dumps(doc, PJ_COMPACT);
    pj_decref(doc);
    return txt;
}
