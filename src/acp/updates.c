/*
 * updates.c — the ACP projection of host events: one stamped pag_event becomes the
 * params of one session/update notification. Pure mapping, no decisions, no threads:
 * the native server and the agent module's reactor (src/agentwasm/) both send it.
 */
#include "acp/projection.h"
#include "peri/base.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

static pj_t *text_block(const char *text) {
    return pj_pack("{s:s, s:s}", "type", "text", "text", text ? text : "");
}

/* Parsed JSON when the text is JSON, else the text itself as a string. */
static pj_t *json_or_string(const char *txt) {
    if (!txt) return NULL;
    pj_t *v = pj_loads(txt, PJ_DECODE_ANY, NULL);
    return v ? v : pj_string(txt);
}

pj_t *pacp__iso_time(int64_t ms) {
    char buf[PB_ISO_TIME_LEN];
    pb_iso_time(ms, buf);
    return pj_string(buf);
}

/* The parsed JSON array text, or a new empty array. */
static pj_t *json_array_of(const char *txt) {
    pj_t *v = txt ? pj_loads(txt, 0, NULL) : NULL;
    if (pj_is_array(v)) return v;
    pj_decref(v);
    return pj_array();
}

static pj_t *chunk(const char *tag, const char *text) {
    return pj_pack("{s:s, s:o}", "sessionUpdate", tag, "content", text_block(text));
}

/* The levels above rawInput in its frame: the frame, params, update. */
#define RAW_INPUT_LEVEL 3

static pj_t *tool_call(const pag_event *ev) {
    pj_t *u = pj_pack(
        "{s:s, s:s, s:s, s:s, s:s}", "sessionUpdate", "tool_call", "toolCallId",
        ev->tool_call_id ? ev->tool_call_id : "", "title", ev->title ? ev->title : "tool", "kind",
        ev->tool_kind ? ev->tool_kind : "other", "status", ev->status ? ev->status : "pending");
    if (!u) return NULL;
    /* Input nested so deep that the frame would pass what a JSON parser reads (ours:
     * PJ_PARSER_MAX_DEPTH) goes as its text: the client must get every tool_call, or
     * its updates name a call it never saw. */
    if (ev->raw_input &&
        RAW_INPUT_LEVEL + pj_text_depth(ev->raw_input, strlen(ev->raw_input)) > PJ_PARSER_MAX_DEPTH)
        pj_object_set_new(u, "rawInput", pj_string(ev->raw_input));
    else if (ev->raw_input)
        pj_object_set_new(u, "rawInput", json_or_string(ev->raw_input));
    if (ev->locations_json) pj_object_set_new(u, "locations", json_or_string(ev->locations_json));
    return u;
}

static pj_t *tool_update(const pag_event *ev) {
    pj_t *u = pj_pack("{s:s, s:s, s:s}", "sessionUpdate", "tool_call_update", "toolCallId",
                      ev->tool_call_id ? ev->tool_call_id : "", "status",
                      ev->status ? ev->status : "in_progress");
    if (!u) return NULL;
    bool final = ev->status && (!strcmp(ev->status, "completed") || !strcmp(ev->status, "failed"));
    if (!final) {
        /* progress content (a subagent's text so far), when there is some */
        pj_t *pc = ev->content_json ? pj_loads(ev->content_json, 0, NULL) : NULL;
        if (pj_is_array(pc))
            pj_object_set_new(u, "content", pc);
        else
            pj_decref(pc);
        return u;
    }
    pj_t *content = NULL;
    if (ev->content_json) {
        content = pj_loads(ev->content_json, 0, NULL);
        if (content && !pj_is_array(content)) {
            pj_decref(content);
            content = NULL;
        }
    }
    if (!content)
        content = pj_pack("[{s:s, s:o}]", "type", "content", "content", text_block(ev->text));
    pj_object_set_new(u, "content", content ? content : pj_array());
    pj_t *raw = ev->raw_output_json ? pj_loads(ev->raw_output_json, 0, NULL) : NULL;
    pj_object_set_new(u, "rawOutput",
                      raw ? raw : pj_pack("{s:s}", "output", ev->text ? ev->text : ""));
    pj_t *meta = ev->meta_json ? pj_loads(ev->meta_json, 0, NULL) : NULL;
    if (pj_is_object(meta))
        pj_object_set_new(u, "_meta", meta); /* e.g. {"peri.placement": {...}} */
    else
        pj_decref(meta);
    if (ev->locations_json) pj_object_set_new(u, "locations", json_or_string(ev->locations_json));
    return u;
}

void pacp__ids_meta(pj_t *meta, const pct_event_ids *ids) {
    pj_object_set_new(meta, "peri.sessionEpoch", pj_integer((pj_int_t)ids->session_epoch));
    if (ids->agent_id) pj_object_set_new(meta, "peri.agentId", pj_string(ids->agent_id));
    if (ids->turn_id) pj_object_set_new(meta, "peri.turnId", pj_string(ids->turn_id));
    if (ids->attempt_id) pj_object_set_new(meta, "peri.attemptId", pj_string(ids->attempt_id));
}

/* An update whose one field `key` is the event's list (content_json, [] when absent). */
static pj_t *list_update(const char *kind, const char *key, const pag_event *ev) {
    return pj_pack("{s:s, s:o}", "sessionUpdate", kind, key, json_array_of(ev->content_json));
}

pj_t *pacp__update_params(const pag_event *ev, const pct_event_ids *ids) {
    pj_t *u = NULL;
    switch (ev->kind) {
    case PAG_EV_USER_TEXT:
        u = chunk("user_message_chunk", ev->text);
        if (u && ev->content_json) { /* a non-text block (replayed image) */
            pj_t *b = pj_loads(ev->content_json, 0, NULL);
            if (pj_is_object(b)) pj_object_set(u, "content", b);
            pj_decref(b);
        }
        break;
    case PAG_EV_TEXT: u = chunk("agent_message_chunk", ev->text); break;
    case PAG_EV_THOUGHT: u = chunk("agent_thought_chunk", ev->text); break;
    case PAG_EV_TOOL_CALL: u = tool_call(ev); break;
    case PAG_EV_TOOL_UPDATE: u = tool_update(ev); break;
    case PAG_EV_USAGE:
        u = pj_pack("{s:s, s:I, s:I}", "sessionUpdate", "usage_update", "used", (pj_int_t)ev->used,
                    "size", (pj_int_t)ev->size);
        if (u && ev->has_cost)
            pj_object_set_new(u, "cost",
                              pj_pack("{s:f, s:s}", "amount", ev->cost_usd, "currency", "USD"));
        break;
    case PAG_EV_COMPACTION:
        /* the context usage after an automatic compaction, with what happened in _meta */
        u = pj_pack("{s:s, s:I, s:I, s:{s:{s:I, s:I, s:s, s:s}}}", "sessionUpdate", "usage_update",
                    "used", (pj_int_t)ev->used, "size", (pj_int_t)ev->size, "_meta",
                    "peri.compaction", "before", (pj_int_t)ev->input_tokens, "after",
                    (pj_int_t)ev->used, "method", ev->text ? ev->text : "trim", "trigger", "auto");
        break;
    case PAG_EV_COMMANDS:
        u = list_update("available_commands_update", "availableCommands", ev);
        break;
    case PAG_EV_PLAN: u = list_update("plan", "entries", ev); break;
    case PAG_EV_MODE:
        u = pj_pack("{s:s, s:s}", "sessionUpdate", "current_mode_update", "currentModeId",
                    ev->text ? ev->text : "default");
        break;
    case PAG_EV_CONFIG: u = list_update("config_option_update", "configOptions", ev); break;
    case PAG_EV_SESSION_INFO:
        /* no title (a background task's start or end): the member is left out, since a
         * null title tells the client to clear the one it shows, which only a session
         * that lost its title asks for */
        if (!ev->title && ev->clear_title)
            u = pj_pack("{s:s, s:n, s:o}", "sessionUpdate", "session_info_update", "title",
                        "updatedAt", pacp__iso_time(ev->used));
        else
            u = pj_pack("{s:s, s:s*, s:o}", "sessionUpdate", "session_info_update", "title",
                        ev->title, "updatedAt", pacp__iso_time(ev->used));
        break;
    }
    if (!u) return NULL;
    pj_t *meta = pj_pack("{s:I}", "peri.sessionSeq", (pj_int_t)ev->session_seq);
    if (meta && ids) pacp__ids_meta(meta, ids);
    if (meta && ev->replay) pj_object_set_new(meta, "periReplay", pj_true());
    if (meta && ev->meta_json) {
        /* Extra data for the update itself (subagent nesting): on the update's _meta. */
        pj_t *extra = pj_loads(ev->meta_json, 0, NULL);
        if (pj_is_object(extra)) pj_object_set(u, "_meta", extra);
        pj_decref(extra);
    }
    pj_t *p = pj_pack("{s:s, s:o, s:o*}", "sessionId", ev->session_id ? ev->session_id : "",
                      "update", u, "_meta", meta);
    return p;
}

pj_t *pacp__session_list(const pst_thread_page *page, const char *own_machine,
                         int (*history_format)(const char *meta_json), int current_format) {
    pj_t *arr = pj_array();
    for (size_t i = 0; arr && i < page->count; i++) {
        const pst_thread *t = &page->items[i];
        pj_t *o = pj_pack("{s:s, s:s, s:o}", "sessionId", t->id, "cwd", t->cwd ? t->cwd : "",
                          "updatedAt", pacp__iso_time(t->updated_at));
        if (o && t->title) pj_object_set_new(o, "title", pj_string(t->title));
        pj_t *meta = o ? pj_object() : NULL;
        if (meta && t->archived) pj_object_set_new(meta, "peri.archived", pj_true());
        if (meta && t->parent_id[0])
            pj_object_set_new(meta, "peri.parentSessionId", pj_string(t->parent_id));
        if (meta && strcmp(t->machine_id, own_machine) != 0) {
            /* another machine's session: history readable, never written here */
            pj_object_set_new(meta, "peri.machineId", pj_string(t->machine_id));
            pj_object_set_new(meta, "peri.readOnly", pj_true());
        }
        int fmt = meta ? history_format(t->meta) : current_format;
        if (fmt != current_format) { /* another history format: read, not continued */
            pj_object_set_new(meta, "peri.historyFormat", pj_integer(fmt));
            pj_object_set_new(meta, "peri.readOnly", pj_true());
        }
        if (meta && pj_object_size(meta) > 0)
            pj_object_set_new(o, "_meta", meta);
        else
            pj_decref(meta);
        if (!o || pj_array_append_new(arr, o)) {
            pj_decref(arr);
            arr = NULL;
        }
    }
    pj_t *r = arr ? pj_pack("{s:o}", "sessions", arr) : NULL;
    if (r && page->next_cursor) pj_object_set_new(r, "nextCursor", pj_string(page->next_cursor));
    return r;
}

int pacp__perm_outcome(const pj_t *result, bool trust) {
    pj_t *oc = pj_object_get(result, "outcome");
    const char *kind = pj_string_value(pj_object_get(oc, "outcome"));
    const char *opt = pj_string_value(pj_object_get(oc, "optionId"));
    bool sel = kind && !strcmp(kind, "selected") && opt;
    int outcome = PAG_PERM_REJECT, trust_outcome = PAG_PERM_REJECT;
    if (kind && !strcmp(kind, "cancelled"))
        outcome = trust_outcome = PAG_PERM_CANCELLED;
    else if (sel && !strcmp(opt, "allow_once"))
        outcome = PAG_PERM_ALLOW;
    else if (sel && !strcmp(opt, "allow_always"))
        outcome = PAG_PERM_ALLOW_ALWAYS;
    else if (sel && !strcmp(opt, "allow_always_project"))
        outcome = PAG_PERM_ALLOW_PROJECT;
    else if (sel && !strcmp(opt, "reject_always"))
        outcome = PAG_PERM_REJECT_ALWAYS;
    else if (sel && !strcmp(opt, "trust_project"))
        trust_outcome = PAG_PERM_TRUST_PROJECT;
    /* each request accepts only the options it offered */
    return trust ? trust_outcome : outcome;
}
