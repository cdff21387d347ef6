/*
 * openai.c — OpenAI Chat Completions: request body from the neutral shape, and the
 * decoding of streamed chunks (content / reasoning_content / tool_calls deltas by index,
 * finish_reason, usage) and of a whole non-streaming answer.
 */
#include "model_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------- request */

/* The message's text as one string: a user's text parts (its text blocks, each resource
 * link, the host's notes) one per line, an answer's as they were streamed. */
static pj_t *text_of(const pm_message *m) {
    char *t = pm_message_text_sep(m, m->role == PM_ROLE_ASSISTANT ? "" : "\n");
    pj_t *s = t ? pj_string(t) : NULL;
    free(t);
    return s;
}

/* "data:<mime>;base64,<data>" of a media part (mime: the part's name, else dflt);
 * malloc'd, NULL when out of memory. */
static char *data_url(const pm_part *p, const char *dflt) {
    const char *mime = p->name ? p->name : dflt;
    const char *data = p->text ? p->text : "";
    size_t n = strlen(mime) + strlen(data) + 16;
    char *url = malloc(n);
    if (url) snprintf(url, n, "data:%s;base64,%s", mime, data);
    return url;
}

static int add_message(pj_t *arr, const pm_message *m) {
    int bad = 0;
    if (m->role == PM_ROLE_TOOL || m->role == PM_ROLE_USER) {
        /* tool results become one "tool" message each (OpenAI has no result blocks) */
        for (size_t i = 0; i < m->nparts; i++) {
            const pm_part *p = &m->parts[i];
            if (p->kind != PM_PART_TOOL_RESULT) continue;
            pj_t *o = pj_pack("{s:s, s:s, s:s}", "role", "tool", "tool_call_id", p->id ? p->id : "",
                              "content", p->text ? p->text : "");
            bad |= !o || pj_array_append_new(arr, o);
        }
        if (m->role == PM_ROLE_TOOL) return bad;
        bool has_text = false;
        for (size_t i = 0; i < m->nparts; i++)
            has_text |= m->parts[i].kind == PM_PART_TEXT || m->parts[i].kind == PM_PART_IMAGE ||
                        m->parts[i].kind == PM_PART_AUDIO || m->parts[i].kind == PM_PART_DOCUMENT;
        if (!has_text && m->nparts > 0) return bad;
    }
    pj_t *o = pj_object();
    if (!o) return 1;
    bad |= pj_object_set_new(o, "role", pj_string(pm_role_name(m->role)));
    bool has_image = false;
    for (size_t i = 0; i < m->nparts; i++)
        has_image |= m->parts[i].kind == PM_PART_IMAGE || m->parts[i].kind == PM_PART_AUDIO ||
                     m->parts[i].kind == PM_PART_DOCUMENT;
    if (m->role == PM_ROLE_USER && has_image) {
        /* content parts: text and image_url (data URL) in order */
        pj_t *parts = pj_array();
        bad |= !parts;
        for (size_t i = 0; parts && i < m->nparts; i++) {
            const pm_part *p = &m->parts[i];
            pj_t *c = NULL;
            if (p->kind == PM_PART_TEXT && p->text && *p->text) {
                c = pj_pack("{s:s, s:s}", "type", "text", "text", p->text);
            } else if (p->kind == PM_PART_IMAGE) {
                char *url = data_url(p, "image/png");
                c = url ? pj_pack("{s:s, s:{s:s}}", "type", "image_url", "image_url", "url", url)
                        : NULL;
                free(url);
            } else if (p->kind == PM_PART_AUDIO) {
                /* input_audio: the format from the MIME type (wav or mp3) */
                const char *mime = p->name ? p->name : "audio/wav";
                const char *fmt = strstr(mime, "mp3") || strstr(mime, "mpeg") ? "mp3" : "wav";
                c = pj_pack("{s:s, s:{s:s, s:s}}", "type", "input_audio", "input_audio", "data",
                            p->text ? p->text : "", "format", fmt);
            } else if (p->kind == PM_PART_DOCUMENT) {
                char *url = data_url(p, "application/pdf");
                c = url ? pj_pack("{s:s, s:{s:s, s:s}}", "type", "file", "file", "filename",
                                  "document.pdf", "file_data", url)
                        : NULL;
                free(url);
            } else {
                continue;
            }
            bad |= !c || pj_array_append_new(parts, c);
        }
        bad |= pj_object_set_new(o, "content", parts);
        return bad | pj_array_append_new(arr, o);
    }
    if (m->role != PM_ROLE_ASSISTANT) {
        bad |= pj_object_set_new(o, "content", text_of(m));
        return bad | pj_array_append_new(arr, o);
    }
    pj_t *calls = pj_array();
    bool has_text = false;
    for (size_t i = 0; calls && i < m->nparts; i++) {
        const pm_part *p = &m->parts[i];
        if (p->kind == PM_PART_TEXT && p->text && *p->text) has_text = true;
        if (p->kind != PM_PART_TOOL_CALL) continue;
        pj_t *c = pj_pack("{s:s, s:s, s:{s:s, s:s}}", "id", p->id ? p->id : "", "type", "function",
                          "function", "name", p->name ? p->name : "", "arguments",
                          p->arguments ? p->arguments : "{}");
        bad |= !c || pj_array_append_new(calls, c);
    }
    bad |= !calls;
    bad |= pj_object_set_new(o, "content", has_text ? text_of(m) : pj_null());
    if (calls && pj_array_size(calls) > 0)
        bad |= pj_object_set_new(o, "tool_calls", calls);
    else
        pj_decref(calls);
    return bad | pj_array_append_new(arr, o);
}

char *pm__openai_body(const pm_request *req, bool stream, pm_error *err) {
    pj_t *root = pj_object(), *msgs = pj_array();
    int bad = !root || !msgs;
    if (!bad) {
        bad |= pj_object_set_new(root, "model", pj_string(req->model));
        if (req->system && *req->system)
            bad |= pj_array_append_new(
                msgs, pj_pack("{s:s, s:s}", "role", "system", "content", req->system));
        for (size_t i = 0; !bad && i < req->nmessages; i++)
            bad |= add_message(msgs, &req->messages[i]);
        bad |= pj_object_set(root, "messages", msgs);
    }
    if (!bad && req->ntools > 0) {
        pj_t *tools = pj_array();
        bad |= !tools;
        for (size_t i = 0; !bad && i < req->ntools; i++) {
            const pm_tool_def *t = &req->tools[i];
            pj_t *schema = pm__tool_schema(t, err);
            if (!schema) {
                pj_decref(tools);
                pj_decref(msgs);
                pj_decref(root);
                return NULL;
            }
            pj_t *fn = pj_pack("{s:s, s:s, s:o}", "name", t->name ? t->name : "", "description",
                               t->description ? t->description : "", "parameters", schema);
            bad |= !fn || pj_array_append_new(
                              tools, pj_pack("{s:s, s:o}", "type", "function", "function", fn));
        }
        bad |= pj_object_set_new(root, "tools", tools);
    }
    if (!bad && req->max_tokens > 0)
        bad |= pj_object_set_new(root, "max_tokens", pj_integer(req->max_tokens));
    if (!bad && req->temperature >= 0)
        bad |= pj_object_set_new(root, "temperature", pj_real(req->temperature));
    if (!bad && req->reasoning_effort)
        bad |= pj_object_set_new(root, "reasoning_effort", pj_string(req->reasoning_effort));
    if (!bad) {
        bad |= pj_object_set_new(root, "stream", pj_boolean(stream));
        if (stream)
            bad |= pj_object_set_new(root, "stream_options", pj_pack("{s:b}", "include_usage", 1));
    }
    char *out = bad ? NULL : pj_dumps(root, PJ_COMPACT);
    pj_decref(msgs);
    pj_decref(root);
    if (!out) pm__fail(err, PM_ERR_NOMEM, "out of memory building the request");
    return out;
}

/* ---------------------------------------------------------------- answers */

static void read_usage(pm__decoder *d, pj_t *u) {
    d->usage.input_tokens = pm__jint(u, "prompt_tokens");
    d->usage.output_tokens = pm__jint(u, "completion_tokens");
    d->usage.cache_read_tokens =
        pm__jint(pj_object_get(u, "prompt_tokens_details"), "cached_tokens");
}

static int set_finish(pm__decoder *d, const char *finish) {
    free(d->stop_raw);
    d->stop_raw = strdup(finish);
    if (!d->stop_raw) return pm__sink_fail(d->sink, PM_ERR_NOMEM, "out of memory");
    d->stop = pm__map_stop(finish);
    d->saw_finish = true;
    return 0;
}

/* A stream delta's or the whole message's texts: reasoning_content (or alt_reasoning,
 * when given) as thinking, then content. 0 or -1. */
static int emit_texts(pm__decoder *d, pj_t *m, const char *alt_reasoning) {
    const char *s;
    if ((s = pm__jstr(m, "reasoning_content")) ||
        (alt_reasoning && (s = pm__jstr(m, alt_reasoning))))
        if (pm__emit_text(d->sink, PM_EV_THINKING_DELTA, s, strlen(s))) return -1;
    if ((s = pm__jstr(m, "content")))
        if (pm__emit_text(d->sink, PM_EV_TEXT_DELTA, s, strlen(s))) return -1;
    return 0;
}

static int tool_delta(pm__decoder *d, pj_t *tc) {
    pj_t *idx = pj_object_get(tc, "index");
    int index = pj_is_integer(idx) ? (int)pj_integer_value(idx) : (int)d->ntools;
    pm__tool_acc *t = pm__decoder_tool(d, index, true);
    if (!t) return pm__sink_fail(d->sink, PM_ERR_NOMEM, "out of memory");
    pj_t *fn = pj_object_get(tc, "function");
    const char *id = pm__jstr(tc, "id"), *name = pm__jstr(fn, "name");
    const char *args = pm__jstr(fn, "arguments");
    if (id && !t->id && !(t->id = strdup(id)))
        return pm__sink_fail(d->sink, PM_ERR_NOMEM, "out of memory");
    if (name && !t->name && !(t->name = strdup(name)))
        return pm__sink_fail(d->sink, PM_ERR_NOMEM, "out of memory");
    size_t pos = (size_t)(t - d->tools);
    if (!t->started && t->name) {
        t->started = true;
        pm_stream_event ev = {.kind = PM_EV_TOOL_CALL_START,
                              .index = (int)pos,
                              .id = t->id ? t->id : "",
                              .name = t->name};
        if (pm__emit(d->sink, &ev)) return -1;
    }
    if (args && *args) {
        if (pm__tool_args_put(d, t, args, strlen(args))) return -1;
        if (t->started) {
            pm_stream_event ev = {.kind = PM_EV_TOOL_CALL_DELTA,
                                  .index = (int)pos,
                                  .text = args,
                                  .len = strlen(args)};
            if (pm__emit(d->sink, &ev)) return -1;
        }
    }
    return 0;
}

int pm__openai_chunk(pm__decoder *d, pj_t *obj) {
    pm_response *r = d->sink->resp;
    const char *rid = pm__jstr(obj, "id"), *rmodel = pm__jstr(obj, "model");
    if (rid && !r->id && !(r->id = strdup(rid)))
        return pm__sink_fail(d->sink, PM_ERR_NOMEM, "out of memory");
    if (rmodel && !r->model && !(r->model = strdup(rmodel)))
        return pm__sink_fail(d->sink, PM_ERR_NOMEM, "out of memory");
    pj_t *e = pj_object_get(obj, "error");
    if (e) {
        const char *msg = pj_is_string(e) ? pj_string_value(e) : pm__jstr(e, "message");
        pm_stream_event ev = {
            .kind = PM_EV_ERROR, .text = msg ? msg : "error", .len = strlen(msg ? msg : "error")};
        if (d->sink->delivered == 0)
            d->sink->retryable = true; /* a server error before any output may be retried */
        else
            pm__emit(d->sink, &ev);
        return pm__sink_fail(d->sink, PM_ERR_PROTOCOL, "provider error in stream: %s",
                             msg ? msg : "(no message)");
    }
    pj_t *choices = pj_object_get(obj, "choices");
    pj_t *c0 = pj_array_get(choices, 0);
    if (c0) {
        pj_t *delta = pj_object_get(c0, "delta");
        if (emit_texts(d, delta, "reasoning")) return -1;
        size_t i;
        pj_t *tc;
        pj_array_foreach(pj_object_get(delta, "tool_calls"), i, tc) {
            if (tool_delta(d, tc)) return -1;
        }
        const char *finish = pm__jstr(c0, "finish_reason");
        if (finish && !d->saw_finish) {
            if (set_finish(d, finish)) return -1;
            for (size_t k = 0; k < d->ntools; k++)
                if (pm__tool_finish(d, &d->tools[k], k)) return -1;
            if (pm__emit_stop(d)) return -1;
        }
    }
    pj_t *u = pj_object_get(obj, "usage");
    if (pj_is_object(u)) {
        read_usage(d, u);
        if (pm__emit_usage(d)) return -1;
    }
    return 0;
}

int pm__openai_full(pm__decoder *d, pj_t *obj) {
    pj_t *c0 = pj_array_get(pj_object_get(obj, "choices"), 0);
    pj_t *msg = pj_object_get(c0, "message");
    if (!pj_is_object(msg))
        return pm__sink_fail(d->sink, PM_ERR_PROTOCOL, "answer has no choices[0].message");
    if (emit_texts(d, msg, NULL)) return -1;
    size_t i;
    pj_t *tc;
    pj_array_foreach(pj_object_get(msg, "tool_calls"), i, tc) {
        pj_t *copy = pj_deep_copy(tc);
        if (!copy || pj_object_set_new(copy, "index", pj_integer((pj_int_t)i))) {
            pj_decref(copy);
            return pm__sink_fail(d->sink, PM_ERR_NOMEM, "out of memory");
        }
        int rc = tool_delta(d, copy);
        pj_decref(copy);
        if (rc) return -1;
    }
    for (size_t k = 0; k < d->ntools; k++)
        if (pm__tool_finish(d, &d->tools[k], k)) return -1;
    const char *s;
    if ((s = pm__jstr(c0, "finish_reason")) && set_finish(d, s)) return -1;
    if (pj_is_object(pj_object_get(obj, "usage"))) read_usage(d, pj_object_get(obj, "usage"));
    if (pm__emit_usage(d) || pm__emit_stop(d)) return -1;
    pm_response *r = d->sink->resp;
    if ((s = pm__jstr(obj, "id")) && !r->id) r->id = strdup(s);
    if ((s = pm__jstr(obj, "model")) && !r->model) r->model = strdup(s);
    return 0;
}
