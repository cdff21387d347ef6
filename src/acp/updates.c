/*
 * updates.c — the ACP projection of host events: one stamped pag_event becomes the
 * params of one session/update notification. Pure mapping, no decisions.
 */
#include "acp/server_impl.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

static json_t *text_block(const char *text) {
    return json_pack("{s:s, s:s}", "type", "text", "text", text ? text : "");
}

/* Parsed JSON when the text is JSON, else the text itself as a string. */
static json_t *json_or_string(const char *txt) {
    if (!txt) return NULL;
    json_t *v = json_loads(txt, JSON_DECODE_ANY, NULL);
    return v ? v : json_string(txt);
}

json_t *pacp__iso_time(int64_t ms) {
    char buf[PB_ISO_TIME_LEN];
    pb_iso_time(ms, buf);
    return json_string(buf);
}

/* The parsed JSON array text, or a new empty array. */
static json_t *json_array_of(const char *txt) {
    json_t *v = txt ? json_loads(txt, 0, NULL) : NULL;
    if (json_is_array(v)) return v;
    json_decref(v);
    return json_array();
}

static json_t *chunk(const char *tag, const char *text) {
    return json_pack("{s:s, s:o}", "sessionUpdate", tag, "content", text_block(text));
}

static json_t *tool_call(const pag_event *ev) {
    json_t *u = json_pack(
        "{s:s, s:s, s:s, s:s, s:s}", "sessionUpdate", "tool_call", "toolCallId",
        ev->tool_call_id ? ev->tool_call_id : "", "title", ev->title ? ev->title : "tool", "kind",
        ev->tool_kind ? ev->tool_kind : "other", "status", ev->status ? ev->status : "pending");
    if (!u) return NULL;
    if (ev->raw_input) json_object_set_new(u, "rawInput", json_or_string(ev->raw_input));
    if (ev->locations_json) json_object_set_new(u, "locations", json_or_string(ev->locations_json));
    return u;
}

static json_t *tool_update(const pag_event *ev) {
    json_t *u = json_pack("{s:s, s:s, s:s}", "sessionUpdate", "tool_call_update", "toolCallId",
                          ev->tool_call_id ? ev->tool_call_id : "", "status",
                          ev->status ? ev->status : "in_progress");
    if (!u) return NULL;
    bool final = ev->status && (!strcmp(ev->status, "completed") || !strcmp(ev->status, "failed"));
    if (!final) {
        /* progress content (a subagent's text so far), when there is some */
        json_t *pc = ev->content_json ? json_loads(ev->content_json, 0, NULL) : NULL;
        if (json_is_array(pc))
            json_object_set_new(u, "content", pc);
        else
            json_decref(pc);
        return u;
    }
    json_t *content = NULL;
    if (ev->content_json) {
        content = json_loads(ev->content_json, 0, NULL);
        if (content && !json_is_array(content)) {
            json_decref(content);
            content = NULL;
        }
    }
    if (!content)
        content = json_pack("[{s:s, s:o}]", "type", "content", "content", text_block(ev->text));
    json_object_set_new(u, "content", content ? content : json_array());
    json_t *raw = ev->raw_output_json ? json_loads(ev->raw_output_json, 0, NULL) : NULL;
    json_object_set_new(u, "rawOutput",
                        raw ? raw : json_pack("{s:s}", "output", ev->text ? ev->text : ""));
    json_t *meta = ev->meta_json ? json_loads(ev->meta_json, 0, NULL) : NULL;
    if (json_is_object(meta))
        json_object_set_new(u, "_meta", meta); /* e.g. {"peri.placement": {...}} */
    else
        json_decref(meta);
    if (ev->locations_json) json_object_set_new(u, "locations", json_or_string(ev->locations_json));
    return u;
}

void pacp__ids_meta(json_t *meta, const pct_event_ids *ids) {
    json_object_set_new(meta, "peri.sessionEpoch", json_integer((json_int_t)ids->session_epoch));
    if (ids->agent_id) json_object_set_new(meta, "peri.agentId", json_string(ids->agent_id));
    if (ids->turn_id) json_object_set_new(meta, "peri.turnId", json_string(ids->turn_id));
    if (ids->attempt_id) json_object_set_new(meta, "peri.attemptId", json_string(ids->attempt_id));
}

/* An update whose one field `key` is the event's list (content_json, [] when absent). */
static json_t *list_update(const char *kind, const char *key, const pag_event *ev) {
    return json_pack("{s:s, s:o}", "sessionUpdate", kind, key, json_array_of(ev->content_json));
}

json_t *pacp__update_params(const pag_event *ev, const pct_event_ids *ids) {
    json_t *u = NULL;
    switch (ev->kind) {
    case PAG_EV_USER_TEXT:
        u = chunk("user_message_chunk", ev->text);
        if (u && ev->content_json) { /* a non-text block (replayed image) */
            json_t *b = json_loads(ev->content_json, 0, NULL);
            if (json_is_object(b)) json_object_set(u, "content", b);
            json_decref(b);
        }
        break;
    case PAG_EV_TEXT: u = chunk("agent_message_chunk", ev->text); break;
    case PAG_EV_THOUGHT: u = chunk("agent_thought_chunk", ev->text); break;
    case PAG_EV_TOOL_CALL: u = tool_call(ev); break;
    case PAG_EV_TOOL_UPDATE: u = tool_update(ev); break;
    case PAG_EV_USAGE:
        u = json_pack("{s:s, s:I, s:I}", "sessionUpdate", "usage_update", "used",
                      (json_int_t)ev->used, "size", (json_int_t)ev->size);
        if (u && ev->has_cost)
            json_object_set_new(u, "cost",
                                json_pack("{s:f, s:s}", "amount", ev->cost_usd, "currency", "USD"));
        break;
    case PAG_EV_COMPACTION:
        /* the context usage after an automatic compaction, with what happened in _meta */
        u = json_pack("{s:s, s:I, s:I, s:{s:{s:I, s:I, s:s, s:s}}}", "sessionUpdate",
                      "usage_update", "used", (json_int_t)ev->used, "size", (json_int_t)ev->size,
                      "_meta", "peri.compaction", "before", (json_int_t)ev->input_tokens, "after",
                      (json_int_t)ev->used, "method", ev->text ? ev->text : "trim", "trigger",
                      "auto");
        break;
    case PAG_EV_COMMANDS:
        u = list_update("available_commands_update", "availableCommands", ev);
        break;
    case PAG_EV_PLAN: u = list_update("plan", "entries", ev); break;
    case PAG_EV_MODE:
        u = json_pack("{s:s, s:s}", "sessionUpdate", "current_mode_update", "currentModeId",
                      ev->text ? ev->text : "default");
        break;
    case PAG_EV_CONFIG: u = list_update("config_option_update", "configOptions", ev); break;
    case PAG_EV_SESSION_INFO:
        u = json_pack("{s:s, s:s?, s:o}", "sessionUpdate", "session_info_update", "title",
                      ev->title, "updatedAt", pacp__iso_time(ev->used));
        break;
    }
    if (!u) return NULL;
    json_t *meta = json_pack("{s:I}", "peri.sessionSeq", (json_int_t)ev->session_seq);
    if (meta && ids) pacp__ids_meta(meta, ids);
    if (meta && ev->replay) json_object_set_new(meta, "periReplay", json_true());
    if (meta && ev->meta_json) {
        /* Extra data for the update itself (subagent nesting): on the update's _meta. */
        json_t *extra = json_loads(ev->meta_json, 0, NULL);
        if (json_is_object(extra)) json_object_set(u, "_meta", extra);
        json_decref(extra);
    }
    json_t *p = json_pack("{s:s, s:o, s:o*}", "sessionId", ev->session_id ? ev->session_id : "",
                          "update", u, "_meta", meta);
    return p;
}
