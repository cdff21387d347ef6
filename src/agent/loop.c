/*
 * loop.c — one turn of the RCRA loop: Receive -> Compact -> Reason -> Act.
 *
 * Receive is the only exit and the cancel checkpoint: every path out of a turn goes
 * through it, so a turn ends in exactly one terminal state (completed, interrupted
 * or failed). Act commits the assistant message together with its tool results in
 * one persistence batch, so history never holds a tool call without its answer.
 *
 * The loop passes the middleware chain's hook points (src/agent/middleware/chain.c):
 * SessionStart and UserPromptSubmit before the user message is kept, PreToolUse (which
 * decides whether a call runs: hooks, the mode gate and approval, ...) and PostToolUse
 * around each call, PreCompact before /compact, Stop after the turn. It never knows
 * which middleware answers.
 */
#include "agent/session_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct turn {
    pag_session *s;
    uint64_t gen;
    pag_turn_result *out;
} turn;

static void emit(turn *t, pag_event *ev) {
    ev->turn = t->gen;
    if (t->s->ports.emit) t->s->ports.emit(t->s->ports.ctx, ev);
}

static void set_result(turn *t, pag_turn_state st, const char *stop) {
    t->out->state = st;
    t->out->stop_reason = stop;
}

static void fail(turn *t, const char *kind, long http, const char *msg) {
    t->out->state = PAG_TURN_FAILED;
    t->out->stop_reason = NULL;
    t->out->error_kind = kind;
    t->out->http_status = http;
    snprintf(t->out->message, sizeof t->out->message, "%.500s", msg);
}

static int on_model_event(const pm_stream_event *ev, void *ctx) {
    turn *t = ctx;
    pag_event e = {0};
    if (ev->kind == PM_EV_TEXT_DELTA || ev->kind == PM_EV_THINKING_DELTA) {
        if (!ev->len) return 0;
        char *txt = strndup(ev->text, ev->len);
        if (!txt) return 0;
        e.kind = ev->kind == PM_EV_TEXT_DELTA ? PAG_EV_TEXT : PAG_EV_THOUGHT;
        e.text = txt;
        emit(t, &e);
        free(txt);
    }
    return 0;
}

static const char *stop_name(pm_stop_reason r) {
    switch (r) {
    case PM_STOP_MAX_TOKENS: return "max_tokens";
    case PM_STOP_REFUSAL: return "refusal";
    default: return "end_turn";
    }
}

static void model_failure(turn *t, pm_status st, const pm_error *err) {
    char msg[600];
    snprintf(msg, sizeof msg, "model call failed (%s): %s", pm_status_name(st), err->message);
    if (st == PM_ERR_HTTP || st == PM_ERR_AUTH)
        fail(t, "llm_http", err->http_status, msg);
    else if (st == PM_ERR_NOMEM)
        fail(t, "internal", 0, msg);
    else
        fail(t, "llm", 0, msg);
}

static int persist(turn *t, const pm_message *msgs, size_t n) {
    if (!t->s->ports.persist) return 0;
    if (t->s->ports.persist(t->s->ports.ctx, msgs, n) == 0) return 0;
    fail(t, "internal", 0, "could not persist the conversation");
    return -1;
}

static bool has_tool_calls(const pm_message *m) {
    for (size_t i = 0; i < m->nparts; i++)
        if (m->parts[i].kind == PM_PART_TOOL_CALL) return true;
    return false;
}

static bool cancelled(turn *t) {
    return atomic_load(t->s->cancelp) != 0;
}

/* Keeps only the text of a partial answer: a half-streamed tool call is dropped. */
static int keep_partial_text(turn *t, const pm_message *partial) {
    char *text = pm_message_text(partial);
    int rc = 0;
    if (text && *text) {
        pm_message m;
        pm_message_init(&m, PM_ROLE_ASSISTANT);
        if (pm_message_add_text(&m, text) == PM_OK && persist(t, &m, 1) == 0)
            rc = pag__hist_push(t->s, &m);
        pm_message_clear(&m);
    }
    free(text);
    return rc;
}

/* Compact: the index of the first history message the model sees this step (never
 * before the view start set by /compact or /clear). */
static size_t compact(pag_session *s) {
    size_t v = s->view <= s->nhist ? s->view : 0;
    const pm_message *h = s->hist + v;
    size_t n = s->nhist - v;
    int64_t est = pag_estimate_tokens(h, n);
    if (s->usage_tokens > 0 && s->usage_at >= v && s->usage_at <= s->nhist) {
        /* Usage reports are truth for the prefix they covered. */
        int64_t prefix = pag_estimate_tokens(h, s->usage_at - v);
        int64_t real = s->usage_tokens + (est - prefix);
        if (real > est && est > 0) {
            int64_t scaled = (int64_t)((double)s->budget * (double)est / (double)real);
            return v + pag_compact_start(h, n, scaled > 0 ? scaled : 1);
        }
    }
    return v + pag_compact_start(h, n, s->budget);
}

/* A tool result with the middlewares' additions (a post-tool deny's reason, contexts
 * added before and after the call) appended for the model. Caller frees; NULL = none. */
static char *with_additions(const char *text, const pag_hook_answer *pre,
                            const pag_hook_answer *post) {
    const char *parts[3] = {pre->context, post->deny ? post->reason : NULL, post->context};
    size_t n = strlen(text) + 1;
    bool any = false;
    for (int i = 0; i < 3; i++)
        if (parts[i] && *parts[i]) n += strlen(parts[i]) + 32, any = true;
    if (!any) return NULL;
    char *out = malloc(n);
    if (!out) return NULL;
    size_t k = (size_t)snprintf(out, n, "%s", text);
    static const char *const head[3] = {"\n\n[hook context]\n", "\n\n[hook]\n",
                                        "\n\n[hook context]\n"};
    for (int i = 0; i < 3; i++)
        if (parts[i] && *parts[i]) k += (size_t)snprintf(out + k, n - k, "%s%s", head[i], parts[i]);
    return out;
}

/* Act: runs one tool call and appends its result to `results`. */
static void act_one(turn *t, const pm_part *call, pm_message *results) {
    pag_session *s = t->s;
    const pag_tool_info *ti = pag__tool_find(s, call->name);
    const char *args = call->arguments ? call->arguments : "{}";
    const char *id = call->id ? call->id : "";
    const pag_tool_ops *ops = s->ports.tool_ops;
    char *title = ti && ops->title ? ops->title(s->ports.ctx, ti->name, args) : NULL;
    pag_event ev = {.kind = PAG_EV_TOOL_CALL,
                    .tool_call_id = id,
                    .tool_name = call->name,
                    .title = title ? title : (call->name ? call->name : "tool"),
                    .tool_kind = ti ? ti->kind : "other",
                    .status = "pending",
                    .raw_input = args};
    emit(t, &ev);
    pag_event up = {
        .kind = PAG_EV_TOOL_UPDATE, .tool_call_id = id, .tool_name = call->name, .raw_input = args};
    const char *fixed = NULL;
    pag_hook_answer pre = {0}, post = {0};
    if (!ti) {
        fixed = "error: unknown tool";
    } else if (cancelled(t)) {
        fixed = "cancelled: the user interrupted the turn before this tool ran";
    } else {
        /* the chain decides (hooks, then the mode gate and approval, ...) */
        pag_hook_call hc = {.hook = PAG_HOOK_PRE_TOOL, .tool = ti, .call = &ev};
        pag_session_hook(s, &hc, &pre);
        if (pre.deny) fixed = pre.reason;
    }
    if (fixed) {
        up.status = "failed";
        up.text = fixed;
        emit(t, &up);
        pm_message_add_tool_result(results, id, fixed, true);
        pag_hook_answer_clear(&pre);
        free(title);
        return;
    }
    up.status = "in_progress";
    emit(t, &up);
    pag_tool_output o = {0};
    int rc = ops->run ? ops->run(s->ports.ctx, ti->name, args, s->cancelp, &o) : -1;
    const char *text = o.output ? o.output : "";
    bool is_error = o.is_error;
    if (rc == 1) {
        text = o.output && *o.output ? o.output : "cancelled";
        is_error = true;
    } else if (rc < 0) {
        text = o.output && *o.output ? o.output : "internal error running the tool";
        is_error = true;
    }
    up.status = is_error ? "failed" : "completed";
    up.text = text;
    up.content_json = o.content_json;
    up.locations_json = o.locations_json;
    up.meta_json = o.meta_json;
    up.raw_output_json = o.raw_output_json;
    emit(t, &up);
    pag_hook_call hc = {.hook = PAG_HOOK_POST_TOOL,
                        .tool = ti,
                        .call = &ev,
                        .tool_output = text,
                        .tool_error = is_error};
    pag_session_hook(s, &hc, &post);
    char *full = with_additions(text, &pre, &post);
    pm_message_add_tool_result(results, id, full ? full : text, is_error);
    free(full);
    pag_hook_answer_clear(&pre);
    pag_hook_answer_clear(&post);
    pag_tool_output_clear(&o);
    free(title);
}

/* The system prompt for a trimmed view: the frozen context plus a short digest of
 * what the trimmed turns asked (the last 10 user requests, 120 bytes each), so the
 * model keeps the thread of the conversation without the bulk. Caller frees. */
static char *trimmed_note(const pag_session *s, size_t base, size_t start) {
    enum { KEEP = 10, CUT = 120 };
    size_t n = strlen(s->system_prompt) + 160 + KEEP * (CUT + 8);
    char *out = malloc(n);
    if (!out) return NULL;
    size_t k = (size_t)snprintf(out, n,
                                "%s\n[%zu earlier messages were trimmed to fit the context. "
                                "Earlier requests from the user, oldest first:]",
                                s->system_prompt, start - base);
    size_t first = base, users = 0;
    for (size_t i = start; i-- > base;) {
        if (s->hist[i].role == PM_ROLE_USER && ++users == KEEP) {
            first = i;
            break;
        }
    }
    for (size_t i = first; i < start && k < n; i++) {
        const pm_message *m = &s->hist[i];
        if (m->role != PM_ROLE_USER || !m->nparts || !m->parts[0].text) continue;
        const char *t = m->parts[0].text;
        size_t len = strcspn(t, "\n");
        if (len > CUT) len = CUT;
        while (len > 0 && ((unsigned char)t[len] & 0xC0) == 0x80)
            len--; /* whole chars */
        k += (size_t)snprintf(out + k, n - k, "\n- %.*s", (int)len, t);
    }
    return out;
}

/* Reason + Act for one step. Returns 1 to loop again, 0 when the turn ended. */
static int step(turn *t) {
    pag_session *s = t->s;
    size_t start = compact(s);
    size_t base = s->view <= s->nhist ? s->view : 0;
    char *system = NULL;
    if (start > base) system = trimmed_note(s, base, start);
    char *goal = pag__goal_note(s); /* the standing goal: in the system prompt, so it
                                       survives compaction */
    if (goal) {
        const char *base_sys = system ? system : s->system_prompt;
        size_t n = strlen(base_sys) + strlen(goal) + 1;
        char *gs = malloc(n);
        if (gs) snprintf(gs, n, "%s%s", base_sys, goal);
        free(system);
        free(goal);
        system = gs;
        if (!system) {
            fail(t, "internal", 0, "out of memory");
            return 0;
        }
    }
    if (pag_session_mode(s) == PAG_MODE_PLAN) {
        static const char plan_note[] =
            "\n\n[Plan mode: you are planning, not executing. Only read-only tools are "
            "available; do not edit files or run commands. Investigate, then answer with a "
            "step-by-step plan (the todo tool records it).]";
        const char *base_sys = system ? system : s->system_prompt;
        size_t n = strlen(base_sys) + sizeof plan_note;
        char *ps = malloc(n);
        if (ps) snprintf(ps, n, "%s%s", base_sys, plan_note);
        free(system);
        system = ps;
        if (!system) {
            fail(t, "internal", 0, "out of memory");
            return 0;
        }
    }
    if (s->ports.tool_ops->now) /* a server's tool list may have changed since the last request */
        s->ports.tools = s->ports.tool_ops->now(s->ports.ctx, &s->ports.ntools);
    pm_tool_def *defs = calloc(s->ports.ntools ? s->ports.ntools : 1, sizeof *defs);
    if (!defs) {
        free(system);
        fail(t, "internal", 0, "out of memory");
        return 0;
    }
    for (size_t i = 0; i < s->ports.ntools; i++) {
        defs[i].name = s->ports.tools[i].name;
        defs[i].description = s->ports.tools[i].description;
        defs[i].input_schema_json = s->ports.tools[i].schema_json;
    }
    pm_request req = {.model = s->ports.model_name,
                      .system = system ? system : s->system_prompt,
                      .messages = s->hist + start,
                      .nmessages = s->nhist - start,
                      .tools = defs,
                      .ntools = s->ports.ntools,
                      .temperature = -1};
    pm_response resp;
    pm_error err = {0};
    memset(&resp, 0, sizeof resp);
    pm_status st = s->ports.reason(s->ports.ctx, &req, on_model_event, t, s->cancelp, &resp, &err);
    free(defs);
    free(system);
    if (st == PM_CANCELLED || (st != PM_OK && cancelled(t))) {
        if (keep_partial_text(t, &resp.message) == 0)
            set_result(t, PAG_TURN_INTERRUPTED, "cancelled");
        pm_response_clear(&resp);
        return 0;
    }
    if (st != PM_OK) {
        model_failure(t, st, &err);
        pm_response_clear(&resp);
        return 0;
    }
    int64_t used = resp.usage.input_tokens + resp.usage.output_tokens;
    if (used > 0) {
        s->usage_tokens = used;
        s->usage_at = s->nhist + 1;
        pag_event u = {.kind = PAG_EV_USAGE,
                       .used = used,
                       .size = s->budget,
                       .input_tokens = resp.usage.input_tokens,
                       .output_tokens = resp.usage.output_tokens};
        emit(t, &u);
    }
    resp.message.role = PM_ROLE_ASSISTANT;
    if (!has_tool_calls(&resp.message)) {
        if (persist(t, &resp.message, 1) == 0) {
            if (pag__hist_push(s, &resp.message))
                fail(t, "internal", 0, "out of memory");
            else
                set_result(t, PAG_TURN_COMPLETED, stop_name(resp.stop));
        }
        pm_response_clear(&resp);
        return 0;
    }
    pm_message batch[2];
    batch[0] = resp.message;
    pm_message_init(&resp.message, PM_ROLE_ASSISTANT);
    pm_message_init(&batch[1], PM_ROLE_TOOL);
    for (size_t i = 0; i < batch[0].nparts; i++)
        if (batch[0].parts[i].kind == PM_PART_TOOL_CALL) act_one(t, &batch[0].parts[i], &batch[1]);
    pm_response_clear(&resp);
    int rc = 0;
    if (persist(t, batch, 2) == 0) {
        if (pag__hist_push(s, &batch[0]) || pag__hist_push(s, &batch[1])) {
            fail(t, "internal", 0, "out of memory");
        } else {
            rc = 1;
        }
    }
    pm_message_clear(&batch[0]);
    pm_message_clear(&batch[1]);
    return rc;
}

static int push_marker(turn *t, const char *text);

/* Compact, automatically: when the view plus the incoming user message reaches the
 * threshold, the model summarizes the earlier conversation before the turn starts, and
 * the summary (a persisted system marker) becomes the start of the view, so compaction
 * survives a reload like /compact. The cut is made between turns only: a turn's own
 * messages are never summarized away under it. When the summary request fails, nothing
 * is written and the mechanical trim of the Compact step does the work. Either way the
 * client hears of it (PAG_EV_COMPACTION). A cancel during the summary goes on to the
 * turn's Receive, which ends the turn. */
static void auto_compact(turn *t, const pm_message *incoming) {
    pag_session *s = t->s;
    size_t base = s->view <= s->nhist ? s->view : 0;
    if (s->auto_compact <= 0 || s->nhist - base < 2 || !s->ports.model_name || !s->ports.reason)
        return;
    int64_t before = pag__view_tokens(s, incoming);
    if ((double)before < s->auto_compact * (double)s->budget) return;
    /* PreCompact hooks see automatic compaction too; a deny keeps the history as it is
     * (each model request's own trim still keeps it inside the window) */
    pag_hook_answer ans = {0};
    pag_hook_call hc = {.hook = PAG_HOOK_PRE_COMPACT};
    pag_session_hook(s, &hc, &ans);
    bool denied = ans.deny;
    pag_hook_answer_clear(&ans);
    if (denied) return;
    char *summary = NULL;
    pm_error err = {0};
    pm_status st = pag__summarize(s, NULL, &summary, &err);
    if (st == PM_CANCELLED || cancelled(t)) {
        free(summary);
        return;
    }
    pag_event ev = {.kind = PAG_EV_COMPACTION, .input_tokens = before, .size = s->budget};
    if (st == PM_OK) {
        static const char head[] =
            "Summary of the earlier conversation (it replaces the earlier messages, compacted "
            "automatically as the context neared its limit):\n";
        size_t k = strlen(summary) + sizeof head;
        char *marker = malloc(k);
        if (marker) snprintf(marker, k, "%s%s", head, summary);
        pag_turn_result keep = *t->out;
        if (marker && push_marker(t, marker) == 0) {
            ev.text = "summary";
            ev.used = pag__view_tokens(s, incoming);
        } else {
            *t->out = keep; /* a failed marker is not the turn's failure: trim instead */
            st = PM_ERR_NOMEM;
        }
        free(marker);
    }
    free(summary);
    if (st != PM_OK) {
        size_t n = s->nhist - base;
        pm_message *view = calloc(n + 1, sizeof *view);
        int64_t after = before;
        if (view) { /* what the trim will leave: the view and the incoming message */
            memcpy(view, s->hist + base, n * sizeof *view);
            view[n] = *incoming;
            size_t from = pag_compact_start(view, n + 1, s->budget);
            after = pag_estimate_tokens(view + from, n + 1 - from);
            free(view);
        }
        ev.text = "trim";
        ev.used = after < before ? after : before;
    }
    emit(t, &ev);
}

void pag_session_turn(pag_session *s, const char *user_text, pag_turn_result *out) {
    pm_message um;
    pm_message_init(&um, PM_ROLE_USER);
    if (pm_message_add_text(&um, user_text ? user_text : "") != PM_OK) {
        memset(out, 0, sizeof *out);
        turn t = {.s = s, .gen = atomic_load(&s->turn_gen), .out = out};
        fail(&t, "internal", 0, "out of memory");
        return;
    }
    pag_session_turn_message(s, &um, out);
    pm_message_clear(&um);
}

/* SessionStart (once per live instance) and UserPromptSubmit: a deny blocks the prompt
 * (it never reaches the model nor the history; the user sees why); added context joins
 * the user message as a text part. 0 = go on, 1 = blocked, -1 = out of memory. */
static int prompt_hooks(turn *t, pm_message *um) {
    pag_session *s = t->s;
    pag_hook_answer ans = {0};
    if (!s->started) {
        s->started = true;
        pag_hook_call start = {.hook = PAG_HOOK_SESSION_START};
        pag_session_hook(s, &start, &ans);
        ans.deny = false; /* a session start cannot be refused: only its context stays */
        free(ans.reason);
        ans.reason = NULL;
    }
    char *text = pm_message_text(um);
    pag_hook_call hc = {.hook = PAG_HOOK_PROMPT, .prompt = text ? text : ""};
    pag_session_hook(s, &hc, &ans);
    free(text);
    int rc = 0;
    if (ans.deny) {
        char msg[700];
        snprintf(msg, sizeof msg, "Prompt blocked by a hook: %.600s", ans.reason);
        pag_event e = {.kind = PAG_EV_TEXT, .text = msg};
        emit(t, &e);
        rc = 1;
    } else if (ans.context && *ans.context) {
        size_t n = strlen(ans.context) + 32;
        char *c = malloc(n);
        if (c) snprintf(c, n, "[hook context]\n%s", ans.context);
        if (!c || pm_message_add_text(um, c) != PM_OK) rc = -1;
        free(c);
    }
    pag_hook_answer_clear(&ans);
    return rc;
}

static void turn_loop(turn *t);

void pag_session_turn_message(pag_session *s, pm_message *user, pag_turn_result *out) {
    memset(out, 0, sizeof *out);
    turn t = {.s = s, .gen = atomic_load(&s->turn_gen), .out = out};
    set_result(&t, PAG_TURN_COMPLETED, "end_turn");
    pm_message um = *user;
    pm_message_init(user, PM_ROLE_USER);
    um.role = PM_ROLE_USER;
    int blocked = prompt_hooks(&t, &um);
    if (blocked) {
        if (blocked < 0) fail(&t, "internal", 0, "out of memory");
        pm_message_clear(&um);
        return;
    }
    auto_compact(&t, &um);
    if (persist(&t, &um, 1) || pag__hist_push(s, &um)) {
        if (out->state != PAG_TURN_FAILED) fail(&t, "internal", 0, "out of memory");
        pm_message_clear(&um);
        return;
    }
    turn_loop(&t);
    /* Stop: the middlewares see how the turn ended (observe only). */
    pag_hook_answer ans = {0};
    pag_hook_call hc = {.hook = PAG_HOOK_STOP,
                        .stop_reason = out->state == PAG_TURN_FAILED ? "failed"
                                       : out->stop_reason            ? out->stop_reason
                                                                     : "end_turn"};
    pag_session_hook(s, &hc, &ans);
    pag_hook_answer_clear(&ans);
}

static void turn_loop(turn *t0) {
    turn t = *t0;
    pag_session *s = t.s;
    pag_turn_result *out = t.out;
    for (int steps = 0;; steps++) {
        /* Receive: the only exit and the cancel checkpoint. */
        if (out->state == PAG_TURN_FAILED) return;
        if (cancelled(&t)) {
            set_result(&t, PAG_TURN_INTERRUPTED, "cancelled");
            return;
        }
        if (out->state == PAG_TURN_INTERRUPTED) return;
        if (steps > 0 && s->nhist > 0 && s->hist[s->nhist - 1].role != PM_ROLE_TOOL) return;
        if (!s->ports.model_name) {
            fail(&t, "llm", 0,
                 s->ports.model_missing_reason ? s->ports.model_missing_reason
                                               : "no model provider configured");
            return;
        }
        if (steps >= s->max_steps) {
            set_result(&t, PAG_TURN_COMPLETED, "max_turn_requests");
            return;
        }
        /* After a final answer the next Receive sees an assistant message and exits. */
        step(&t);
    }
}

/* ---------------------------------------------------------------- /compact and /clear */

/* Persists a system-role marker holding `text` and starts the model's view at it. */
static int push_marker(turn *t, const char *text) {
    pm_message m;
    pm_message_init(&m, PM_ROLE_SYSTEM);
    if (pm_message_add_text(&m, text) != PM_OK) {
        fail(t, "internal", 0, "out of memory");
        return -1;
    }
    if (persist(t, &m, 1)) {
        pm_message_clear(&m);
        return -1;
    }
    if (pag__hist_push(t->s, &m)) {
        pm_message_clear(&m);
        fail(t, "internal", 0, "out of memory");
        return -1;
    }
    t->s->view = t->s->nhist - 1;
    t->s->usage_tokens = 0;
    return 0;
}

static void say(turn *t, const char *text) {
    pag_event e = {.kind = PAG_EV_TEXT, .text = text};
    emit(t, &e);
}

void pag_session_compact(pag_session *s, const char *instructions, pag_turn_result *out) {
    memset(out, 0, sizeof *out);
    turn t = {.s = s, .gen = atomic_load(&s->turn_gen), .out = out};
    set_result(&t, PAG_TURN_COMPLETED, "end_turn");
    size_t base = s->view <= s->nhist ? s->view : 0;
    if (s->nhist - base == 0) {
        say(&t, "Nothing to compact yet.");
        return;
    }
    pag_hook_answer ans = {0};
    pag_hook_call hc = {.hook = PAG_HOOK_PRE_COMPACT, .prompt = instructions};
    pag_session_hook(s, &hc, &ans);
    if (ans.deny) {
        char msg[700];
        snprintf(msg, sizeof msg, "Compaction blocked by a hook: %.600s", ans.reason);
        say(&t, msg);
        pag_hook_answer_clear(&ans);
        return;
    }
    pag_hook_answer_clear(&ans);
    if (!s->ports.model_name) {
        fail(&t, "llm", 0,
             s->ports.model_missing_reason ? s->ports.model_missing_reason
                                           : "no model provider configured");
        return;
    }
    char *summary = NULL;
    pm_error err = {0};
    pm_status st = pag__summarize(s, instructions, &summary, &err);
    if (st == PM_CANCELLED || (st != PM_OK && cancelled(&t))) {
        set_result(&t, PAG_TURN_INTERRUPTED, "cancelled");
    } else if (st != PM_OK) {
        model_failure(&t, st, &err);
    } else {
        static const char head[] = "Summary of the earlier conversation (it replaces the "
                                   "earlier messages, compacted at the user's request):\n";
        size_t k = strlen(summary) + sizeof head;
        char *marker = malloc(k);
        if (!marker) {
            fail(&t, "internal", 0, "out of memory");
        } else {
            snprintf(marker, k, "%s%s", head, summary);
            if (push_marker(&t, marker) == 0) {
                say(&t, "Conversation compacted. Summary:\n");
                say(&t, summary);
            }
        }
        free(marker);
    }
    free(summary);
}

void pag_session_clear(pag_session *s, pag_turn_result *out) {
    memset(out, 0, sizeof *out);
    turn t = {.s = s, .gen = atomic_load(&s->turn_gen), .out = out};
    set_result(&t, PAG_TURN_COMPLETED, "end_turn");
    if (push_marker(&t, "The user cleared the conversation: earlier messages are not shown.") == 0)
        say(&t, "Conversation cleared.");
}
