/*
 * session.c — the Session aggregate: creation, history, restore and replay.
 *
 * The history is the model-facing transcript (pm_message). Replay turns it back
 * into the same events a live turn emits, marked as replay, so a client loading a
 * session sees what it would have seen live.
 */
#include "agent/session_impl.h"

#include "peri/json.h"
#include <stdlib.h>
#include <string.h>

void pag_tool_output_clear(pag_tool_output *o) {
    ptl_result_clear(o);
}

pag_session *pag_session_new(const pag_session_config *cfg, const pag_ports *ports) {
    pag_session *s = calloc(1, sizeof *s);
    if (!s) return NULL;
    if (pag__goal_init(s)) {
        free(s);
        return NULL;
    }
    s->id = strdup(cfg->id);
    s->cwd = strdup(cfg->cwd);
    s->system_prompt = strdup(cfg->system_prompt ? cfg->system_prompt : "");
    if (!s->id || !s->cwd || !s->system_prompt) {
        pag_session_free(s);
        return NULL;
    }
    s->budget = cfg->context_budget > 0 ? cfg->context_budget : 100000;
    s->max_steps = cfg->max_steps > 0 ? cfg->max_steps : 50;
    s->auto_compact = cfg->auto_compact_threshold > 0 && cfg->auto_compact_threshold <= 1
                          ? cfg->auto_compact_threshold
                          : 0;
    s->ports = *ports;
    static const pag_tool_ops no_tools = {0}; /* immutable: every call of a tool fails */
    if (!s->ports.tool_ops) s->ports.tool_ops = &no_tools;
    atomic_init(&s->cancel, 0);
    atomic_init(&s->turn_gen, 0);
    atomic_init(&s->mode, PAG_MODE_DEFAULT);
    s->cancelp = &s->cancel;
    s->turn_start = SIZE_MAX;
    if (pag__chain_build(&s->chain, s, ports->middlewares, ports->nmiddlewares) != 0) {
        pag_session_free(s); /* an unknown or repeated middleware name */
        return NULL;
    }
    return s;
}

void pag_session_hook(pag_session *s, pag_hook_call *call, pag_hook_answer *ans) {
    call->session = s;
    if (!call->session_id) call->session_id = s->id;
    if (!call->cwd) call->cwd = s->cwd;
    if (!call->cancel) call->cancel = s->cancelp;
    pag__chain_run(&s->chain, call, ans);
}

void pag_session_free(pag_session *s) {
    if (!s) return;
    free(s->id);
    free(s->cwd);
    free(s->system_prompt);
    for (size_t i = 0; i < s->nhist; i++)
        pm_message_clear(&s->hist[i]);
    free(s->hist);
    pag__goal_free(s);
    free(s);
}

const char *pag_session_id(const pag_session *s) {
    return s->id;
}

const char *pag_session_cwd(const pag_session *s) {
    return s->cwd;
}

int pag__hist_push(pag_session *s, pm_message *m) {
    if (s->nhist == s->caphist) {
        pm_message *nh = pb_grow(s->hist, &s->caphist, sizeof *nh, 16);
        if (!nh) return -1;
        s->hist = nh;
    }
    s->hist[s->nhist++] = *m;
    pm_message_init(m, m->role);
    return 0;
}

size_t pag_session_history_len(const pag_session *s) {
    return s->nhist;
}

size_t pag_session_drop_turn(pag_session *s) {
    size_t from = s->turn_start;
    s->turn_start = SIZE_MAX;
    if (from >= s->nhist) return 0;
    size_t n = s->nhist - from;
    for (size_t i = from; i < s->nhist; i++)
        pm_message_clear(&s->hist[i]);
    s->nhist = from;          /* (the view starts before the turn's messages: it stays) */
    if (s->usage_at > from) { /* the report covered what is gone */
        s->usage_tokens = 0;
        s->usage_at = 0;
    }
    return n;
}

const pag_tool_info *pag__tool_find(const pag_session *s, const char *name) {
    for (size_t i = 0; i < s->ports.ntools; i++)
        if (name && strcmp(s->ports.tools[i].name, name) == 0) return &s->ports.tools[i];
    return NULL;
}

int pag_session_restore(pag_session *s, const char *const *message_json, size_t n,
                        size_t *skipped) {
    size_t bad = 0;
    for (size_t i = 0; i < n; i++) {
        pm_message m;
        if (pm_message_from_json(message_json[i], &m, NULL) != PM_OK) {
            bad++;
            continue;
        }
        bool marker = m.role == PM_ROLE_SYSTEM;
        if (pag__hist_push(s, &m)) {
            pm_message_clear(&m);
            if (skipped) *skipped = bad;
            return -1;
        }
        if (marker) s->view = s->nhist - 1;
    }
    if (skipped) *skipped = bad;
    return 0;
}

/* Finds the tool-call part answered by a tool result, searching backwards. */
static const pm_part *find_call(const pag_session *s, size_t before, const char *id) {
    for (size_t i = before; i-- > 0;) {
        const pm_message *m = &s->hist[i];
        if (m->role != PM_ROLE_ASSISTANT) continue;
        for (size_t k = 0; k < m->nparts; k++)
            if (m->parts[k].kind == PM_PART_TOOL_CALL && m->parts[k].id && id &&
                strcmp(m->parts[k].id, id) == 0)
                return &m->parts[k];
        return NULL;
    }
    return NULL;
}

static void replay_part(const pag_session *s, size_t mi, const pm_part *p,
                        void (*emit)(void *, const pag_event *), void *ctx) {
    pag_event ev = {.replay = true};
    const pm_message *m = &s->hist[mi];
    switch (p->kind) {
    case PM_PART_TEXT:
        ev.kind = m->role == PM_ROLE_USER ? PAG_EV_USER_TEXT : PAG_EV_TEXT;
        ev.text = p->text ? p->text : "";
        /* a text standing for a block of the client's (a resource link): that block */
        if (m->role == PM_ROLE_USER) ev.content_json = p->arguments;
        emit(ctx, &ev);
        break;
    case PM_PART_THINKING:
        ev.kind = PAG_EV_THOUGHT;
        ev.text = p->text ? p->text : "";
        emit(ctx, &ev);
        break;
    case PM_PART_TOOL_CALL: {
        const pag_tool_info *ti = pag__tool_find(s, p->name);
        const pag_tool_ops *ops = s->ports.tool_ops;
        char *title =
            ops->title && p->name ? ops->title(s->ports.ctx, p->name, p->arguments) : NULL;
        ev.kind = PAG_EV_TOOL_CALL;
        ev.tool_call_id = p->id ? p->id : "";
        ev.tool_name = p->name;
        ev.title = title ? title : (p->name ? p->name : "tool");
        ev.tool_kind = ti ? ti->kind : "other";
        ev.status = "pending";
        ev.raw_input = p->arguments;
        emit(ctx, &ev);
        free(title);
        break;
    }
    case PM_PART_IMAGE:
    case PM_PART_AUDIO:
    case PM_PART_DOCUMENT: {
        /* replayed as the ACP ContentBlock it came in: image, audio, or an embedded
         * blob resource (a document) */
        pj_t *b =
            p->kind == PM_PART_DOCUMENT
                ? pj_pack("{s:s, s:{s:s, s:s, s:s}}", "type", "resource", "resource", "uri",
                          "attachment:document.pdf", "mimeType",
                          p->name ? p->name : "application/pdf", "blob", p->text ? p->text : "")
                : pj_pack("{s:s, s:s, s:s}", "type", p->kind == PM_PART_AUDIO ? "audio" : "image",
                          "mimeType", p->name ? p->name : "image/png", "data",
                          p->text ? p->text : "");
        char *block = b ? pj_dumps(b, PJ_COMPACT) : NULL;
        pj_decref(b);
        if (!block) break;
        ev.kind = PAG_EV_USER_TEXT;
        ev.text = "";
        ev.content_json = block;
        emit(ctx, &ev);
        free(block);
        break;
    }
    case PM_PART_TOOL_RESULT: {
        const pm_part *call = find_call(s, mi, p->id);
        ev.kind = PAG_EV_TOOL_UPDATE;
        ev.tool_call_id = p->id ? p->id : "";
        ev.tool_name = call ? call->name : NULL;
        ev.status = p->is_error ? "failed" : "completed";
        ev.text = p->text ? p->text : "";
        ev.raw_input = call ? call->arguments : NULL;
        emit(ctx, &ev);
        break;
    }
    }
}

void pag_session_replay(const pag_session *s, void (*emit)(void *, const pag_event *), void *ctx) {
    for (size_t i = 0; i < s->nhist; i++) {
        const pm_message *m = &s->hist[i];
        if (m->role == PM_ROLE_SYSTEM) continue;
        for (size_t k = 0; k < m->nparts; k++)
            replay_part(s, i, &m->parts[k], emit, ctx);
    }
}

uint64_t pag_session_begin_turn(pag_session *s) {
    atomic_store(&s->cancel, 0);
    return atomic_fetch_add(&s->turn_gen, 1) + 1;
}

void pag_session_cancel(pag_session *s) {
    atomic_store(&s->cancel, 1);
}

/* ---------------------------------------------------------------- modes and model */

static const char *const mode_ids[PAG_MODE_COUNT] = {"default", "acceptEdits", "plan",
                                                     "bypassPermissions"};
static const char *const mode_names[PAG_MODE_COUNT] = {"Default", "Accept Edits", "Plan",
                                                       "Bypass Permissions"};
static const char *const mode_desc[PAG_MODE_COUNT] = {
    "Ask before file edits and shell commands", "File edits are allowed; shell commands ask",
    "Read-only tools only: the agent plans and changes nothing",
    "Nothing asks (the sandbox still applies)"};

const char *pag_mode_id(pag_mode m) {
    return (unsigned)m < PAG_MODE_COUNT ? mode_ids[m] : mode_ids[0];
}

const char *pag_mode_name(pag_mode m) {
    return (unsigned)m < PAG_MODE_COUNT ? mode_names[m] : mode_names[0];
}

const char *pag_mode_description(pag_mode m) {
    return (unsigned)m < PAG_MODE_COUNT ? mode_desc[m] : mode_desc[0];
}

bool pag_mode_parse(const char *id, pag_mode *out) {
    for (int i = 0; id && i < PAG_MODE_COUNT; i++)
        if (strcmp(id, mode_ids[i]) == 0) {
            *out = (pag_mode)i;
            return true;
        }
    return false;
}

void pag_session_set_mode(pag_session *s, pag_mode m) {
    atomic_store(&s->mode, (int)m);
}

pag_mode pag_session_mode(const pag_session *s) {
    return (pag_mode)atomic_load(&((pag_session *)s)->mode);
}

void pag_session_set_model(pag_session *s, const char *model_name, const char *missing_reason) {
    s->ports.model_name = model_name;
    s->ports.model_missing_reason = missing_reason;
}

void pag_session_link_cancel(pag_session *s, atomic_int *parent_cancel) {
    s->cancelp = parent_cancel ? parent_cancel : &s->cancel;
}

char *pag_session_last_answer(const pag_session *s) {
    for (size_t i = s->nhist; i-- > 0;)
        if (s->hist[i].role == PM_ROLE_ASSISTANT) {
            char *t = pm_message_text(&s->hist[i]);
            if (t && *t) return t;
            free(t);
        }
    return NULL;
}

uint64_t pag_session_turn_gen(const pag_session *s) {
    return atomic_load(&((pag_session *)s)->turn_gen);
}
