/*
 * anthropic.c — Anthropic Messages: request body (top-level system, content blocks,
 * tool_use/tool_result, alternating roles) and decoding of the typed SSE events
 * (message_start, content_block_*, message_delta, message_stop, ping, error) and of a
 * whole non-streaming answer.
 */
#include "model_int.h"

#include <stdlib.h>
#include <string.h>

#define DEFAULT_MAX_TOKENS 4096
/* The levels above a tool_use input in the body: the body, messages, a message, its
 * content, the block. */
#define INPUT_LEVEL 5

/* ---------------------------------------------------------------- request */

static pj_t *blocks_of(const pm_message *m) {
    pj_t *arr = pj_array();
    int bad = !arr;
    for (size_t i = 0; !bad && i < m->nparts; i++) {
        const pm_part *p = &m->parts[i];
        pj_t *b = NULL;
        switch (p->kind) {
        case PM_PART_TEXT:
            if (!p->text || !*p->text) continue; /* the API rejects empty text blocks */
            b = pj_pack("{s:s, s:s}", "type", "text", "text", p->text);
            break;
        case PM_PART_THINKING:
            if (!p->signature) continue; /* unsigned thinking cannot be sent back */
            b = pj_pack("{s:s, s:s, s:s}", "type", "thinking", "thinking", p->text ? p->text : "",
                        "signature", p->signature);
            break;
        case PM_PART_TOOL_CALL: {
            pj_error_t je;
            const char *args = p->arguments ? p->arguments : "{}";
            /* input nested deeper than the body can carry (a JSON parser such as ours
             * reads PJ_PARSER_MAX_DEPTH levels): the call failed for that, send it empty */
            pj_t *input = INPUT_LEVEL + pj_text_depth(args, strlen(args)) > PJ_PARSER_MAX_DEPTH
                              ? NULL
                              : pj_loads(args, 0, &je);
            if (!pj_is_object(input)) { /* the model wrote bad JSON: send an empty input */
                pj_decref(input);
                input = pj_object();
            }
            b = pj_pack("{s:s, s:s, s:s, s:o}", "type", "tool_use", "id", p->id ? p->id : "",
                        "name", p->name ? p->name : "", "input", input);
            break;
        }
        case PM_PART_TOOL_RESULT:
            b = pj_pack("{s:s, s:s, s:s, s:b}", "type", "tool_result", "tool_use_id",
                        p->id ? p->id : "", "content", p->text ? p->text : "", "is_error",
                        p->is_error);
            break;
        case PM_PART_IMAGE:
            b = pj_pack("{s:s, s:{s:s, s:s, s:s}}", "type", "image", "source", "type", "base64",
                        "media_type", p->name ? p->name : "image/png", "data",
                        p->text ? p->text : "");
            break;
        case PM_PART_DOCUMENT:
            b = pj_pack("{s:s, s:{s:s, s:s, s:s}}", "type", "document", "source", "type", "base64",
                        "media_type", p->name ? p->name : "application/pdf", "data",
                        p->text ? p->text : "");
            break;
        case PM_PART_AUDIO: /* Anthropic takes no audio (a history from another model) */
            b = pj_pack("{s:s, s:s}", "type", "text", "text",
                        "[an audio attachment this model cannot hear]");
            break;
        }
        bad |= !b || pj_array_append_new(arr, b);
    }
    if (bad) {
        pj_decref(arr);
        return NULL;
    }
    return arr;
}

char *pm__anthropic_body(const pm_request *req, bool stream, pm_error *err) {
    pj_t *root = pj_object(), *msgs = pj_array();
    pb_buf system = {0};
    int bad = !root || !msgs;
    if (req->system && *req->system) bad |= !pb_buf_put(&system, req->system, strlen(req->system));
    pj_t *last = NULL;
    const char *last_role = NULL;
    for (size_t i = 0; !bad && i < req->nmessages; i++) {
        const pm_message *m = &req->messages[i];
        if (m->role == PM_ROLE_SYSTEM) {
            char *t = pm_message_text(m);
            bad |= !t || (system.len && !pb_buf_put(&system, "\n\n", 2)) ||
                   !pb_buf_put(&system, t, strlen(t));
            free(t);
            continue;
        }
        const char *role = m->role == PM_ROLE_ASSISTANT ? "assistant" : "user";
        pj_t *blocks = blocks_of(m);
        if (!blocks) {
            bad = 1;
            break;
        }
        if (pj_array_size(blocks) == 0) {
            pj_decref(blocks);
            continue;
        }
        /* the API wants alternating roles: merge consecutive same-role messages */
        if (last && strcmp(last_role, role) == 0) {
            bad |= pj_array_extend(pj_object_get(last, "content"), blocks);
            pj_decref(blocks);
            continue;
        }
        last = pj_pack("{s:s, s:o}", "role", role, "content", blocks);
        last_role = role;
        bad |= !last || pj_array_append_new(msgs, last);
    }
    if (!bad) {
        bad |= pj_object_set_new(root, "model", pj_string(req->model));
        bad |= pj_object_set_new(
            root, "max_tokens",
            pj_integer(req->max_tokens > 0 ? req->max_tokens : DEFAULT_MAX_TOKENS));
        if (system.len) bad |= pj_object_set_new(root, "system", pj_string(system.p));
        bad |= pj_object_set(root, "messages", msgs);
    }
    for (size_t i = 0; !bad && i < req->ntools; i++) {
        const pm_tool_def *t = &req->tools[i];
        pj_t *tools = pj_object_get(root, "tools");
        if (!tools) {
            tools = pj_array();
            bad |= !tools || pj_object_set_new(root, "tools", tools);
            if (bad) break;
        }
        pj_t *schema = pm__tool_schema(t, err);
        if (!schema) {
            pj_decref(msgs);
            pj_decref(root);
            pb_buf_free(&system);
            return NULL;
        }
        bad |= pj_array_append_new(
            tools, pj_pack("{s:s, s:s, s:o}", "name", t->name ? t->name : "", "description",
                           t->description ? t->description : "", "input_schema", schema));
    }
    int budget = !req->reasoning_effort                     ? 0
                 : !strcmp(req->reasoning_effort, "low")    ? 2048
                 : !strcmp(req->reasoning_effort, "medium") ? 8192
                 : !strcmp(req->reasoning_effort, "high")   ? 24576
                                                            : 0;
    if (!bad && budget) {
        /* extended thinking: the budget must fit below max_tokens; no temperature */
        int mt = req->max_tokens > 0 ? req->max_tokens : DEFAULT_MAX_TOKENS;
        if (mt <= budget) mt = budget + DEFAULT_MAX_TOKENS;
        bad |= pj_object_set_new(root, "max_tokens", pj_integer(mt));
        bad |= pj_object_set_new(root, "thinking",
                                 pj_pack("{s:s, s:i}", "type", "enabled", "budget_tokens", budget));
    }
    if (!bad && req->temperature >= 0 && !budget)
        bad |= pj_object_set_new(root, "temperature", pj_real(req->temperature));
    if (!bad) bad |= pj_object_set_new(root, "stream", pj_boolean(stream));
    char *out = bad ? NULL : pj_dumps(root, PJ_COMPACT);
    pj_decref(msgs);
    pj_decref(root);
    pb_buf_free(&system);
    if (!out) pm__fail(err, PM_ERR_NOMEM, "out of memory building the request");
    return out;
}

/* ---------------------------------------------------------------- answers */

static void read_usage(pm__decoder *d, pj_t *u) {
    if (!pj_is_object(u)) return;
    /* message_start carries input (+ cache) counts; message_delta the output count */
    if (pj_object_get(u, "input_tokens")) d->usage.input_tokens = pm__jint(u, "input_tokens");
    if (pj_object_get(u, "output_tokens")) d->usage.output_tokens = pm__jint(u, "output_tokens");
    if (pj_object_get(u, "cache_read_input_tokens"))
        d->usage.cache_read_tokens = pm__jint(u, "cache_read_input_tokens");
    if (pj_object_get(u, "cache_creation_input_tokens"))
        d->usage.cache_write_tokens = pm__jint(u, "cache_creation_input_tokens");
}

static int set_stop(pm__decoder *d, const char *raw) {
    free(d->stop_raw);
    d->stop_raw = strdup(raw);
    if (!d->stop_raw) return pm__sink_fail(d->sink, PM_ERR_NOMEM, "out of memory");
    d->stop = pm__map_stop(raw);
    return 0;
}

static size_t tool_pos(pm__decoder *d, pm__tool_acc *t) {
    return (size_t)(t - d->tools);
}

static int block_start(pm__decoder *d, int index, pj_t *cb) {
    const char *type = pm__jstr(cb, "type");
    if (!type) return 0;
    if (strcmp(type, "text") == 0) {
        d->text_block = index;
        const char *t = pm__jstr(cb, "text");
        return t ? pm__emit_text(d->sink, PM_EV_TEXT_DELTA, t, strlen(t)) : 0;
    }
    if (strcmp(type, "thinking") == 0) {
        d->thinking_block = index;
        const char *t = pm__jstr(cb, "thinking");
        return t ? pm__emit_text(d->sink, PM_EV_THINKING_DELTA, t, strlen(t)) : 0;
    }
    if (strcmp(type, "tool_use") == 0) {
        if (pm__decoder_tool(d, index, false))
            return pm__sink_fail(d->sink, PM_ERR_PROTOCOL, "content block %d started twice", index);
        pm__tool_acc *t = pm__decoder_tool(d, index, true);
        const char *id = pm__jstr(cb, "id"), *name = pm__jstr(cb, "name");
        if (!t || !(t->id = strdup(id ? id : "")) || !(t->name = strdup(name ? name : "")))
            return pm__sink_fail(d->sink, PM_ERR_NOMEM, "out of memory");
        t->started = true;
        pm_stream_event ev = {.kind = PM_EV_TOOL_CALL_START,
                              .index = (int)tool_pos(d, t),
                              .id = t->id,
                              .name = t->name};
        return pm__emit(d->sink, &ev);
    }
    return 0; /* redacted_thinking, server tools: not represented */
}

static int block_delta(pm__decoder *d, int index, pj_t *delta) {
    const char *type = pm__jstr(delta, "type"), *s;
    if (!type) return 0;
    if (strcmp(type, "text_delta") == 0 && (s = pm__jstr(delta, "text")))
        return pm__emit_text(d->sink, PM_EV_TEXT_DELTA, s, strlen(s));
    if (strcmp(type, "thinking_delta") == 0 && (s = pm__jstr(delta, "thinking")))
        return pm__emit_text(d->sink, PM_EV_THINKING_DELTA, s, strlen(s));
    if (strcmp(type, "signature_delta") == 0 && (s = pm__jstr(delta, "signature")))
        return pm__set_signature(d->sink, s, strlen(s));
    if (strcmp(type, "input_json_delta") == 0 && (s = pm__jstr(delta, "partial_json"))) {
        pm__tool_acc *t = pm__decoder_tool(d, index, false);
        if (!t)
            return pm__sink_fail(d->sink, PM_ERR_PROTOCOL,
                                 "input_json_delta for block %d that is not a tool_use", index);
        size_t n = strlen(s);
        if (n == 0) return 0;
        if (pm__tool_args_put(d, t, s, n)) return -1;
        pm_stream_event ev = {
            .kind = PM_EV_TOOL_CALL_DELTA, .index = (int)tool_pos(d, t), .text = s, .len = n};
        return pm__emit(d->sink, &ev);
    }
    return 0;
}

int pm__anthropic_event(pm__decoder *d, pj_t *obj) {
    const char *type = pm__jstr(obj, "type");
    pj_t *idx = pj_object_get(obj, "index");
    int index = pj_is_integer(idx) ? (int)pj_integer_value(idx) : -1;
    pm_response *r = d->sink->resp;
    if (!type) return pm__sink_fail(d->sink, PM_ERR_PROTOCOL, "event without a type");
    if (strcmp(type, "message_start") == 0) {
        pj_t *m = pj_object_get(obj, "message");
        const char *s;
        d->saw_start = true;
        read_usage(d, pj_object_get(m, "usage"));
        if ((s = pm__jstr(m, "id")) && !r->id) r->id = strdup(s);
        if ((s = pm__jstr(m, "model")) && !r->model) r->model = strdup(s);
        return 0;
    }
    if (strcmp(type, "content_block_start") == 0)
        return block_start(d, index, pj_object_get(obj, "content_block"));
    if (strcmp(type, "content_block_delta") == 0)
        return block_delta(d, index, pj_object_get(obj, "delta"));
    if (strcmp(type, "content_block_stop") == 0) {
        pm__tool_acc *t = pm__decoder_tool(d, index, false);
        if (t) return pm__tool_finish(d, t, tool_pos(d, t));
        if (index == d->thinking_block || index == d->text_block) return pm__sink_flush(d->sink);
        return 0;
    }
    if (strcmp(type, "message_delta") == 0) {
        const char *s = pm__jstr(pj_object_get(obj, "delta"), "stop_reason");
        read_usage(d, pj_object_get(obj, "usage"));
        if (s && set_stop(d, s)) return -1;
        d->saw_finish = true;
        return pm__emit_usage(d) || pm__emit_stop(d) ? -1 : 0;
    }
    if (strcmp(type, "message_stop") == 0) {
        d->saw_done = true;
        return 0;
    }
    if (strcmp(type, "error") == 0) {
        pj_t *e = pj_object_get(obj, "error");
        const char *msg = pm__jstr(e, "message"), *etype = pm__jstr(e, "type");
        if (!msg) msg = "(no message)";
        if (d->sink->delivered == 0) {
            /* overloaded/api errors before any output behave like a 529/500: retry */
            d->sink->retryable = etype && (strcmp(etype, "overloaded_error") == 0 ||
                                           strcmp(etype, "api_error") == 0 ||
                                           strcmp(etype, "rate_limit_error") == 0);
        } else {
            pm_stream_event ev = {.kind = PM_EV_ERROR, .text = msg, .len = strlen(msg)};
            pm__emit(d->sink, &ev);
        }
        return pm__sink_fail(d->sink, PM_ERR_PROTOCOL, "provider error in stream: %s%s%s", msg,
                             etype ? " " : "", etype ? etype : "");
    }
    return 0; /* ping and future event types */
}

int pm__anthropic_full(pm__decoder *d, pj_t *obj) {
    pj_t *content = pj_object_get(obj, "content");
    if (!pj_is_array(content))
        return pm__sink_fail(d->sink, PM_ERR_PROTOCOL, "answer has no content array");
    size_t i;
    pj_t *b;
    pj_array_foreach(content, i, b) {
        const char *type = pm__jstr(b, "type"), *s;
        if (!type) continue;
        if (strcmp(type, "text") == 0 && (s = pm__jstr(b, "text"))) {
            if (pm__emit_text(d->sink, PM_EV_TEXT_DELTA, s, strlen(s))) return -1;
        } else if (strcmp(type, "thinking") == 0 && (s = pm__jstr(b, "thinking"))) {
            if (pm__emit_text(d->sink, PM_EV_THINKING_DELTA, s, strlen(s))) return -1;
            if ((s = pm__jstr(b, "signature")) && pm__set_signature(d->sink, s, strlen(s)))
                return -1;
            if (pm__sink_flush(d->sink)) return -1;
        } else if (strcmp(type, "tool_use") == 0) {
            pm__tool_acc *t = pm__decoder_tool(d, (int)i, true);
            const char *id = pm__jstr(b, "id"), *name = pm__jstr(b, "name");
            pj_t *input = pj_object_get(b, "input");
            char *args = input ? pj_dumps(input, PJ_COMPACT) : strdup("{}");
            int bad = !t || !args || !(t->id = strdup(id ? id : "")) ||
                      !(t->name = strdup(name ? name : ""));
            if (bad) {
                free(args);
                return pm__sink_fail(d->sink, PM_ERR_NOMEM, "out of memory");
            }
            int rc = pm__tool_args_put(d, t, args, strlen(args));
            free(args);
            if (rc) return -1;
            if (pm__tool_finish(d, t, tool_pos(d, t))) return -1;
        }
    }
    const char *s;
    if ((s = pm__jstr(obj, "stop_reason")) && set_stop(d, s)) return -1;
    read_usage(d, pj_object_get(obj, "usage"));
    pm_response *r = d->sink->resp;
    if ((s = pm__jstr(obj, "id")) && !r->id) r->id = strdup(s);
    if ((s = pm__jstr(obj, "model")) && !r->model) r->model = strdup(s);
    return pm__emit_usage(d) || pm__emit_stop(d) ? -1 : 0;
}
