/*
 * sink.c — where neutral events go: each one is folded into the pm_response being
 * assembled and then handed to the caller's callback. Counting delivered events here is
 * what makes "retry only before the first event" enforceable.
 */
#include "model_int.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void pm__sink_init(pm__sink *s, pm_event_fn fn, void *ctx, pm_response *resp, pm_error *err) {
    memset(s, 0, sizeof *s);
    s->fn = fn;
    s->ctx = ctx;
    s->resp = resp;
    s->cur_kind = -1;
    s->err = err;
}

void pm__sink_free(pm__sink *s) {
    pb_buf_free(&s->cur);
    free(s->cur_signature);
    s->cur_signature = NULL;
}

int pm__sink_fail(pm__sink *s, pm_status st, const char *fmt, ...) {
    if (s->status == PM_OK) {
        s->status = st;
        if (s->err) {
            va_list ap;
            s->err->status = st;
            va_start(ap, fmt);
            vsnprintf(s->err->message, sizeof s->err->message, fmt, ap);
            va_end(ap);
        }
    }
    return -1;
}

int pm__sink_flush(pm__sink *s) {
    if (s->cur_kind < 0) return 0;
    pm_status st;
    char *text = pb_buf_take(&s->cur, NULL);
    if (!text) return pm__sink_fail(s, PM_ERR_NOMEM, "out of memory");
    if (s->cur_kind == PM_PART_TEXT)
        st = pm_message_add_text(&s->resp->message, text);
    else
        st = pm_message_add_thinking(&s->resp->message, text, s->cur_signature);
    free(text);
    free(s->cur_signature);
    s->cur_signature = NULL;
    s->cur_kind = -1;
    return st == PM_OK ? 0 : pm__sink_fail(s, PM_ERR_NOMEM, "out of memory");
}

int pm__sink_account(pm__sink *s, size_t n) {
    if (n > PM__MAX_ANSWER - s->assembled)
        return pm__sink_fail(s, PM_ERR_PROTOCOL,
                             "the answer is larger than %u bytes (text, thinking and tool "
                             "arguments together): the model call was stopped",
                             PM__MAX_ANSWER);
    s->assembled += n;
    return 0;
}

int pm__set_signature(pm__sink *s, const char *sig, size_t len) {
    char *p = malloc(len + 1);
    if (!p) return pm__sink_fail(s, PM_ERR_NOMEM, "out of memory");
    memcpy(p, sig, len);
    p[len] = '\0';
    if (s->cur_kind == PM_PART_THINKING) {
        free(s->cur_signature);
        s->cur_signature = p;
        return 0;
    }
    /* a signature after the thinking part was closed belongs to the last thinking part */
    pm_message *m = &s->resp->message;
    for (size_t i = m->nparts; i-- > 0;)
        if (m->parts[i].kind == PM_PART_THINKING) {
            free(m->parts[i].signature);
            m->parts[i].signature = p;
            return 0;
        }
    free(p);
    return 0;
}

static int assemble(pm__sink *s, const pm_stream_event *ev) {
    pm_response *r = s->resp;
    switch (ev->kind) {
    case PM_EV_TEXT_DELTA:
    case PM_EV_THINKING_DELTA: {
        int kind = ev->kind == PM_EV_TEXT_DELTA ? PM_PART_TEXT : PM_PART_THINKING;
        if (s->cur_kind != kind && pm__sink_flush(s)) return -1;
        s->cur_kind = kind;
        if (pm__sink_account(s, ev->len)) return -1;
        if (!pb_buf_put(&s->cur, ev->text, ev->len))
            return pm__sink_fail(s, PM_ERR_NOMEM, "out of memory");
        return 0;
    }
    case PM_EV_TOOL_CALL_END:
        if (pm__sink_flush(s)) return -1;
        if (pm_message_add_tool_call(&r->message, ev->id, ev->name, ev->text) != PM_OK)
            return pm__sink_fail(s, PM_ERR_NOMEM, "out of memory");
        return 0;
    case PM_EV_USAGE: r->usage = ev->usage; return 0;
    case PM_EV_STOP:
        r->stop = ev->stop;
        free(r->stop_raw);
        r->stop_raw = ev->stop_raw ? strdup(ev->stop_raw) : NULL;
        if (ev->stop_raw && !r->stop_raw) return pm__sink_fail(s, PM_ERR_NOMEM, "out of memory");
        return 0;
    case PM_EV_DONE: return pm__sink_flush(s);
    default: return 0;
    }
}

int pm__emit(pm__sink *s, const pm_stream_event *ev) {
    if (s->status != PM_OK) return -1;
    if (assemble(s, ev)) return -1;
    if (ev->kind == PM_EV_DONE) s->done = true;
    if (!s->fn) return 0;
    s->delivered++;
    if (s->fn(ev, s->ctx) != 0)
        return pm__sink_fail(s, PM_CANCELLED, "stopped by the event callback");
    return 0;
}

int pm__emit_text(pm__sink *s, pm_event_kind kind, const char *text, size_t len) {
    if (len == 0) return 0;
    pm_stream_event ev = {.kind = kind, .text = text, .len = len};
    return pm__emit(s, &ev);
}

/* ---------------------------------------------------------------- shared decoder parts */

void pm__decoder_init(pm__decoder *d, pm_provider prov, pm__sink *sink) {
    memset(d, 0, sizeof *d);
    d->provider = prov;
    d->sink = sink;
    d->text_block = d->thinking_block = -1;
}

void pm__decoder_free(pm__decoder *d) {
    for (size_t i = 0; i < d->ntools; i++) {
        free(d->tools[i].id);
        free(d->tools[i].name);
        pb_buf_free(&d->tools[i].args);
    }
    free(d->tools);
    free(d->stop_raw);
    memset(d, 0, sizeof *d);
}

pm__tool_acc *pm__decoder_tool(pm__decoder *d, int block, bool create) {
    for (size_t i = 0; i < d->ntools; i++)
        if (d->tools[i].block == block) return &d->tools[i];
    if (!create) return NULL;
    if (d->ntools == d->cap) {
        pm__tool_acc *t = pb_grow(d->tools, &d->cap, sizeof *t, 4);
        if (!t) return NULL;
        d->tools = t;
    }
    pm__tool_acc *t = &d->tools[d->ntools++];
    memset(t, 0, sizeof *t);
    t->block = block;
    return t;
}

int pm__tool_args_put(pm__decoder *d, pm__tool_acc *t, const char *s, size_t n) {
    if (n > PM__MAX_TOOL_ARGS - t->args.len)
        return pm__sink_fail(d->sink, PM_ERR_PROTOCOL,
                             "the arguments of tool call %s are larger than %u bytes",
                             t->name && *t->name ? t->name : "(unnamed)", PM__MAX_TOOL_ARGS);
    if (pm__sink_account(d->sink, n)) return -1;
    if (!pb_buf_put(&t->args, s, n)) return pm__sink_fail(d->sink, PM_ERR_NOMEM, "out of memory");
    return 0;
}

int pm__tool_finish(pm__decoder *d, pm__tool_acc *t, size_t index) {
    if (t->ended) return 0;
    pm_stream_event ev = {
        .index = (int)index, .id = t->id ? t->id : "", .name = t->name ? t->name : ""};
    if (!t->started) {
        ev.kind = PM_EV_TOOL_CALL_START;
        t->started = true;
        if (pm__emit(d->sink, &ev)) return -1;
    }
    t->ended = true;
    ev.kind = PM_EV_TOOL_CALL_END;
    ev.text = t->args.len ? t->args.p : "{}";
    ev.len = t->args.len ? t->args.len : 2;
    return pm__emit(d->sink, &ev);
}

pm_stop_reason pm__map_stop(const char *raw) {
    static const struct {
        const char *name;
        pm_stop_reason r;
    } map[] = {
        {"stop", PM_STOP_END_TURN},          {"end_turn", PM_STOP_END_TURN},
        {"stop_sequence", PM_STOP_END_TURN}, {"tool_calls", PM_STOP_TOOL_USE},
        {"function_call", PM_STOP_TOOL_USE}, {"tool_use", PM_STOP_TOOL_USE},
        {"length", PM_STOP_MAX_TOKENS},      {"max_tokens", PM_STOP_MAX_TOKENS},
        {"content_filter", PM_STOP_REFUSAL}, {"refusal", PM_STOP_REFUSAL},
    };
    if (!raw) return PM_STOP_NONE;
    for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
        if (strcmp(raw, map[i].name) == 0) return map[i].r;
    return PM_STOP_OTHER;
}

int pm__emit_stop(pm__decoder *d) {
    pm_stream_event ev = {.kind = PM_EV_STOP, .stop = d->stop, .stop_raw = d->stop_raw};
    return pm__emit(d->sink, &ev);
}

int pm__emit_usage(pm__decoder *d) {
    pm_stream_event ev = {.kind = PM_EV_USAGE, .usage = d->usage};
    return pm__emit(d->sink, &ev);
}

/* Parses text as a JSON object and hands it to the provider's decoder: one event or
 * chunk of a stream, or (stream false) the whole answer. Not an object fails the sink
 * with "<bad>: <parser's reason>". */
static int decode_object(pm__decoder *d, const char *text, size_t len, bool stream,
                         const char *bad) {
    pj_error_t je;
    pj_t *obj = pj_loadb(text, len, 0, &je);
    if (!pj_is_object(obj)) {
        pj_decref(obj);
        return pm__sink_fail(d->sink, PM_ERR_PROTOCOL, "%s: %s", bad, je.text);
    }
    bool openai = d->provider == PM_PROVIDER_OPENAI;
    int rc = stream ? (openai ? pm__openai_chunk(d, obj) : pm__anthropic_event(d, obj))
                    : (openai ? pm__openai_full(d, obj) : pm__anthropic_full(d, obj));
    pj_decref(obj);
    return rc;
}

int pm__decode_sse(void *ctx, const char *event, const char *data, size_t len) {
    pm__decoder *d = ctx;
    (void)event; /* both providers repeat the event type inside the JSON */
    if (d->saw_done) return 0;
    if (d->provider == PM_PROVIDER_OPENAI && len == 6 && memcmp(data, "[DONE]", 6) == 0) {
        d->saw_done = true;
        return 0;
    }
    return decode_object(d, data, len, true, "bad JSON in the event stream");
}

int pm__decode_eof(pm__decoder *d) {
    if (d->sink->status != PM_OK) return -1;
    /* OpenAI-compatible servers that omit [DONE] but sent a finish_reason are accepted. */
    bool complete = d->saw_done || (d->provider == PM_PROVIDER_OPENAI && d->saw_finish);
    if (!complete) return pm__sink_fail(d->sink, PM_ERR_PROTOCOL, "the event stream ended early");
    for (size_t i = 0; i < d->ntools; i++)
        if (pm__tool_finish(d, &d->tools[i], i)) return -1;
    if (!d->saw_finish && (pm__emit_usage(d) || pm__emit_stop(d))) return -1;
    pm_stream_event ev = {.kind = PM_EV_DONE};
    return pm__emit(d->sink, &ev);
}

int pm__decode_full(pm__decoder *d, const char *body, size_t len) {
    int rc = decode_object(d, body, len, false, "the answer is not JSON");
    if (rc == 0) {
        pm_stream_event ev = {.kind = PM_EV_DONE};
        rc = pm__emit(d->sink, &ev);
    }
    return rc;
}
