/*
 * turn.c — one turn of the RCRA loop (Receive -> Compact -> Reason -> Act) as a
 * resumable state machine (pag_turn). It never blocks and does no I/O: pag_turn_next
 * names the effect the turn waits on (a model call, the tool calls of one assistant
 * message, a persistence batch, a timer, or the end) and the driver feeds the result
 * back. The native driver (loop.c) performs effects with threads and blocking ports;
 * the WebAssembly host performs them from its event loop. Both run this one core.
 *
 * Receive is the only exit and the cancel checkpoint: every path out of a turn goes
 * through it, so a turn ends in exactly one terminal state (completed, interrupted or
 * failed). Act commits the assistant message together with its tool results in one
 * persistence batch, so history never holds a tool call without its answer. History
 * changes only after a PERSIST effect was answered ok (persist, then push).
 *
 * The turn passes the middleware chain's hook points (src/agent/middleware/chain.c):
 * SessionStart and UserPromptSubmit before the user message is kept, PreToolUse (which
 * decides whether a call runs: hooks, the mode gate and approval, ...) in
 * pag_turn_tool_start and PostToolUse in pag_turn_tool_done, PreCompact before
 * automatic compaction, Stop after the turn. Hooks and the event sink are synchronous
 * calls into the host; the turn never knows which middleware answers.
 *
 * Automatic compaction is part of the machine: its summary request is a MODEL_CALL
 * effect (fx.model.summary) and its marker a PERSIST effect, so no form of the host has
 * to run a model call outside the driver.
 */
#include "agent/session_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef enum phase {
    PH_START = 0,       /* not begun: prompt hooks, then the compaction check */
    PH_SUMMARY,         /* MODEL_CALL: the automatic-compaction summary */
    PH_SUMMARY_PERSIST, /* PERSIST: the summary marker */
    PH_USER_PERSIST,    /* PERSIST: the user message */
    PH_RECEIVE,         /* internal: the checkpoint before each step */
    PH_MODEL,           /* MODEL_CALL: a step's request */
    PH_WAIT,            /* WAIT: the backoff before a retry of that request */
    PH_PARTIAL_PERSIST, /* PERSIST: the text of an interrupted answer */
    PH_ANSWER_PERSIST,  /* PERSIST: a final answer */
    PH_TOOLS,           /* TOOL_CALLS: the calls of one assistant message */
    PH_BATCH_PERSIST,   /* PERSIST: the assistant message and its results */
    PH_STOP,            /* internal: the Stop hook, then DONE */
    PH_DONE,
} phase;

/* The answer to one tool call (owned strings). */
typedef struct call_state {
    bool started, answered;
    char *title; /* the host's title, or NULL */
    pag_hook_answer pre;
    char *text; /* the result the model sees */
    bool is_error;
} call_state;

struct pag_turn {
    pag_session *s;
    uint64_t gen;
    pag_turn_result out;
    phase ph;
    int steps;
    pm_message user; /* the user message until it is persisted */
    /* automatic compaction */
    int64_t compact_before;
    pag__summary sum;
    /* the step's model request (owned parts) and its retries */
    char *system;
    pm_tool_def *defs;
    pm_request req;
    int attempt;
    long wait_ms;
    /* the PERSIST batch being committed (owned) */
    pm_message batch[2];
    size_t nbatch;
    const char *answer_stop;
    /* TOOL_CALLS: the assistant message is batch[0]; views into its parts */
    pag_turn_call *calls;
    call_state *cs;
    size_t ncalls;
};

/* ---------------------------------------------------------------- shared with loop.c */

void pag__emit(pag_session *s, uint64_t gen, pag_event *ev) {
    ev->turn = gen;
    if (s->ports.emit) s->ports.emit(s->ports.ctx, ev);
}

void pag__fail(pag_turn_result *out, const char *kind, long http, const char *msg) {
    out->state = PAG_TURN_FAILED;
    out->stop_reason = NULL;
    out->error_kind = kind;
    out->http_status = http;
    snprintf(out->message, sizeof out->message, "%.500s", msg);
}

void pag__model_failure(pag_turn_result *out, pm_status st, const pm_error *err) {
    char msg[600];
    snprintf(msg, sizeof msg, "model call failed (%s): %s", pm_status_name(st),
             err ? err->message : "");
    if (st == PM_ERR_HTTP || st == PM_ERR_AUTH)
        pag__fail(out, "llm_http", err ? err->http_status : 0, msg);
    else if (st == PM_ERR_NOMEM)
        pag__fail(out, "internal", 0, msg);
    else
        pag__fail(out, "llm", 0, msg);
}

bool pag__cancelled(const pag_session *s) {
    return atomic_load(s->cancelp) != 0;
}

/* ---------------------------------------------------------------- helpers */

static void emit(pag_turn *t, pag_event *ev) {
    pag__emit(t->s, t->gen, ev);
}

static void set_result(pag_turn *t, pag_turn_state st, const char *stop) {
    t->out.state = st;
    t->out.stop_reason = stop;
}

static void fail_oom(pag_turn *t) {
    pag__fail(&t->out, "internal", 0, "out of memory");
}

static void fail_persist(pag_turn *t) {
    pag__fail(&t->out, "internal", 0, "could not persist the conversation");
}

static const char *stop_name(pm_stop_reason r) {
    switch (r) {
    case PM_STOP_MAX_TOKENS: return "max_tokens";
    case PM_STOP_REFUSAL: return "refusal";
    default: return "end_turn";
    }
}

static bool has_tool_calls(const pm_message *m) {
    for (size_t i = 0; i < m->nparts; i++)
        if (m->parts[i].kind == PM_PART_TOOL_CALL) return true;
    return false;
}

static void batch_clear(pag_turn *t) {
    for (size_t i = 0; i < t->nbatch; i++)
        pm_message_clear(&t->batch[i]);
    t->nbatch = 0;
}

/* Moves the committed batch into the history. 0, or -1 when out of memory. */
static int batch_push(pag_turn *t) {
    int rc = 0;
    for (size_t i = 0; i < t->nbatch && rc == 0; i++)
        rc = pag__hist_push(t->s, &t->batch[i]);
    batch_clear(t);
    return rc;
}

static void call_state_clear(call_state *cs) {
    pag_hook_answer_clear(&cs->pre);
    free(cs->title);
    free(cs->text);
}

static void calls_clear(pag_turn *t) {
    for (size_t i = 0; i < t->ncalls; i++)
        call_state_clear(&t->cs[i]);
    free(t->calls);
    free(t->cs);
    t->calls = NULL;
    t->cs = NULL;
    t->ncalls = 0;
}

static void request_clear(pag_turn *t) {
    free(t->system);
    free(t->defs);
    t->system = NULL;
    t->defs = NULL;
    memset(&t->req, 0, sizeof t->req);
}

/* ---------------------------------------------------------------- Receive / Compact */

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
        const char *txt = NULL; /* its first text (an image may come before it) */
        for (size_t k = 0; m->role == PM_ROLE_USER && k < m->nparts && !txt; k++)
            if (m->parts[k].kind == PM_PART_TEXT) txt = m->parts[k].text;
        if (!txt) continue;
        size_t len = strcspn(txt, "\n");
        if (len > CUT) len = CUT;
        while (len > 0 && ((unsigned char)txt[len] & 0xC0) == 0x80)
            len--; /* whole chars */
        k += (size_t)snprintf(out + k, n - k, "\n- %.*s", (int)len, txt);
    }
    return out;
}

/* base_sys + note (malloc'd, base_sys freed when it is `owned`). NULL when out of memory. */
static char *append_note(char *owned, const char *base_sys, const char *note) {
    size_t n = strlen(base_sys) + strlen(note) + 1;
    char *out = malloc(n);
    if (out) snprintf(out, n, "%s%s", base_sys, note);
    free(owned);
    return out;
}

/* Reason, first half: the step's request (system prompt with the trim digest, the goal
 * and the plan-mode note; the tool list as of now). 0, or -1 when out of memory. */
static int build_request(pag_turn *t) {
    pag_session *s = t->s;
    size_t start = compact(s);
    size_t base = s->view <= s->nhist ? s->view : 0;
    char *system = NULL;
    if (start > base && !(system = trimmed_note(s, base, start))) return -1;
    char *goal = pag__goal_note(s); /* the standing goal: in the system prompt, so it
                                       survives compaction */
    if (goal) {
        system = append_note(system, system ? system : s->system_prompt, goal);
        free(goal);
        if (!system) return -1;
    }
    if (pag_session_mode(s) == PAG_MODE_PLAN) {
        static const char plan_note[] =
            "\n\n[Plan mode: you are planning, not executing. Only read-only tools are "
            "available; do not edit files or run commands. Investigate, then answer with a "
            "step-by-step plan (the todo tool records it).]";
        system = append_note(system, system ? system : s->system_prompt, plan_note);
        if (!system) return -1;
    }
    if (s->ports.tool_ops->now) /* a server's tool list may have changed since the last request */
        s->ports.tools = s->ports.tool_ops->now(s->ports.ctx, &s->ports.ntools);
    pm_tool_def *defs = calloc(s->ports.ntools ? s->ports.ntools : 1, sizeof *defs);
    if (!defs) {
        free(system);
        return -1;
    }
    for (size_t i = 0; i < s->ports.ntools; i++) {
        defs[i].name = s->ports.tools[i].name;
        defs[i].description = s->ports.tools[i].description;
        defs[i].input_schema_json = s->ports.tools[i].schema_json;
    }
    t->system = system;
    t->defs = defs;
    t->req = (pm_request){.model = s->ports.model_name,
                          .system = system ? system : s->system_prompt,
                          .messages = s->hist + start,
                          .nmessages = s->nhist - start,
                          .tools = defs,
                          .ntools = s->ports.ntools,
                          .temperature = -1};
    t->attempt = 0;
    return 0;
}

/* Receive: the only exit and the cancel checkpoint; otherwise the next step's request. */
static void receive(pag_turn *t) {
    pag_session *s = t->s;
    pag_turn_result *out = &t->out;
    t->ph = PH_STOP;
    if (out->state == PAG_TURN_FAILED) return;
    if (pag__cancelled(s)) {
        set_result(t, PAG_TURN_INTERRUPTED, "cancelled");
        return;
    }
    if (out->state == PAG_TURN_INTERRUPTED) return;
    /* After a final answer the next Receive sees an assistant message and exits. */
    if (t->steps > 0 && s->nhist > 0 && s->hist[s->nhist - 1].role != PM_ROLE_TOOL) return;
    if (!s->ports.model_name) {
        pag__fail(out, "llm", 0,
                  s->ports.model_missing_reason ? s->ports.model_missing_reason
                                                : "no model provider configured");
        return;
    }
    if (t->steps >= s->max_steps) {
        set_result(t, PAG_TURN_COMPLETED, "max_turn_requests");
        return;
    }
    t->steps++;
    if (build_request(t)) {
        fail_oom(t);
        return;
    }
    t->ph = PH_MODEL;
}

/* ---------------------------------------------------------------- start */

/* SessionStart (once per live instance) and UserPromptSubmit: a deny blocks the prompt
 * (it never reaches the model nor the history; the user sees why); added context joins
 * the user message as a text part. 0 = go on, 1 = blocked, -1 = out of memory. */
static int prompt_hooks(pag_turn *t, pm_message *um) {
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
    char *text = pm_message_text_sep(um, "\n"); /* its text blocks, one per line */
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

/* Compact, automatically: when the view plus the incoming user message reaches the
 * threshold, the model summarizes the earlier conversation before the turn starts, and
 * the summary (a persisted system marker) becomes the start of the view, so compaction
 * survives a reload like /compact. The cut is made between turns only: a turn's own
 * messages are never summarized away under it. When the summary request fails, nothing
 * is written and the mechanical trim of the Compact step does the work. Either way the
 * client hears of it (PAG_EV_COMPACTION). A cancel during the summary goes on to the
 * turn's Receive, which ends the turn. 1: the summary request is ready; 0: no
 * compaction; -1: the summary cannot even be asked for (trim). */
static int compact_begin(pag_turn *t) {
    pag_session *s = t->s;
    size_t base = s->view <= s->nhist ? s->view : 0;
    /* (the turn's driver performs the summary's MODEL_CALL: the blocking loop through
     * ports.reason, an event-driven host through its own requests) */
    if (s->auto_compact <= 0 || s->nhist - base < 2 || !s->ports.model_name) return 0;
    t->compact_before = pag__view_tokens(s, &t->user);
    if ((double)t->compact_before < s->auto_compact * (double)s->budget) return 0;
    /* PreCompact hooks see automatic compaction too; a deny keeps the history as it is
     * (each model request's own trim still keeps it inside the window) */
    pag_hook_answer ans = {0};
    pag_hook_call hc = {.hook = PAG_HOOK_PRE_COMPACT};
    pag_session_hook(s, &hc, &ans);
    bool denied = ans.deny;
    pag_hook_answer_clear(&ans);
    if (denied) return 0;
    return pag__summary_request(s, NULL, &t->sum) == 0 ? 1 : -1;
}

/* The PAG_EV_COMPACTION event: "summary" (the marker now starts the view) or "trim". */
static void compact_event(pag_turn *t, bool summary) {
    pag_session *s = t->s;
    int64_t before = t->compact_before;
    pag_event ev = {.kind = PAG_EV_COMPACTION, .input_tokens = before, .size = s->budget};
    if (summary) {
        ev.text = "summary";
        ev.used = pag__view_tokens(s, &t->user);
    } else {
        size_t base = s->view <= s->nhist ? s->view : 0;
        size_t n = s->nhist - base;
        pm_message *view = calloc(n + 1, sizeof *view);
        int64_t after = before;
        if (view) { /* what the trim will leave: the view and the incoming message */
            memcpy(view, s->hist + base, n * sizeof *view);
            view[n] = t->user;
            size_t from = pag_compact_start(view, n + 1, s->budget);
            after = pag_estimate_tokens(view + from, n + 1 - from);
            free(view);
        }
        ev.text = "trim";
        ev.used = after < before ? after : before;
    }
    emit(t, &ev);
}

static void to_user_persist(pag_turn *t) {
    t->batch[0] = t->user;
    pm_message_init(&t->user, PM_ROLE_USER);
    t->nbatch = 1;
    t->ph = PH_USER_PERSIST;
}

static void start(pag_turn *t) {
    set_result(t, PAG_TURN_COMPLETED, "end_turn");
    int blocked = prompt_hooks(t, &t->user);
    if (blocked) { /* the prompt never started a turn: no Stop either */
        /* ACP's "refusal": the prompt is not part of the conversation (it never reached
         * the history, so no later request holds it) */
        set_result(t, PAG_TURN_COMPLETED, "refusal");
        if (blocked < 0) fail_oom(t);
        t->ph = PH_DONE;
        return;
    }
    int c = compact_begin(t);
    if (c > 0) {
        t->ph = PH_SUMMARY;
        return;
    }
    if (c < 0) compact_event(t, false);
    to_user_persist(t);
}

/* ---------------------------------------------------------------- the machine */

/* Runs the internal phases up to the next effect. */
static void advance(pag_turn *t) {
    for (;;) {
        switch (t->ph) {
        case PH_START: start(t); break;
        case PH_RECEIVE: receive(t); break;
        case PH_TOOLS: {
            size_t done = 0;
            for (size_t i = 0; i < t->ncalls; i++)
                done += t->cs[i].answered;
            if (done < t->ncalls) return;
            /* every call answered: the results, in the order of the calls */
            pm_message_init(&t->batch[1], PM_ROLE_TOOL);
            t->nbatch = 2;
            bool oom = false;
            for (size_t i = 0; i < t->ncalls && !oom; i++)
                oom = !t->cs[i].text ||
                      pm_message_add_tool_result(&t->batch[1], t->calls[i].id, t->cs[i].text,
                                                 t->cs[i].is_error) != PM_OK;
            calls_clear(t);
            if (oom) {
                batch_clear(t);
                fail_oom(t);
                t->ph = PH_RECEIVE;
                break;
            }
            t->ph = PH_BATCH_PERSIST;
            return;
        }
        case PH_STOP: {
            /* Stop: the middlewares see how the turn ended (observe only). */
            pag_hook_answer ans = {0};
            pag_hook_call hc = {.hook = PAG_HOOK_STOP,
                                .stop_reason = t->out.state == PAG_TURN_FAILED ? "failed"
                                               : t->out.stop_reason            ? t->out.stop_reason
                                                                               : "end_turn"};
            pag_session_hook(t->s, &hc, &ans);
            pag_hook_answer_clear(&ans);
            t->ph = PH_DONE;
            return;
        }
        default: return;
        }
    }
}

pag_turn *pag_turn_new(pag_session *s, pm_message *user) {
    pag_turn *t = calloc(1, sizeof *t);
    if (!t) return NULL;
    t->s = s;
    t->gen = atomic_load(&s->turn_gen);
    t->user = *user;
    t->user.role = PM_ROLE_USER;
    pm_message_init(user, PM_ROLE_USER);
    s->turn_start = SIZE_MAX; /* this turn has kept no message yet */
    t->ph = PH_START;
    return t;
}

void pag_turn_free(pag_turn *t) {
    if (!t) return;
    pm_message_clear(&t->user);
    pag__summary_free(&t->sum);
    request_clear(t);
    batch_clear(t);
    calls_clear(t);
    free(t);
}

pag_effect_kind pag_turn_next(pag_turn *t, pag_effect *fx) {
    advance(t);
    memset(fx, 0, sizeof *fx);
    switch (t->ph) {
    case PH_SUMMARY:
        fx->kind = PAG_FX_MODEL_CALL;
        fx->model.request = &t->sum.req;
        fx->model.summary = true;
        fx->model.ctx = t;
        break;
    case PH_MODEL:
        fx->kind = PAG_FX_MODEL_CALL;
        fx->model.request = &t->req;
        fx->model.on_event = pag_turn_model_event;
        fx->model.ctx = t;
        fx->model.attempt = t->attempt;
        break;
    case PH_WAIT:
        fx->kind = PAG_FX_WAIT;
        fx->wait_ms = t->wait_ms;
        break;
    case PH_TOOLS:
        fx->kind = PAG_FX_TOOL_CALLS;
        fx->tools.calls = t->calls;
        fx->tools.n = t->ncalls;
        break;
    case PH_SUMMARY_PERSIST:
    case PH_USER_PERSIST:
    case PH_PARTIAL_PERSIST:
    case PH_ANSWER_PERSIST:
    case PH_BATCH_PERSIST:
        fx->kind = PAG_FX_PERSIST;
        fx->persist.msgs = t->batch;
        fx->persist.n = t->nbatch;
        break;
    default:
        fx->kind = PAG_FX_DONE;
        fx->result = &t->out;
        break;
    }
    return fx->kind;
}

void pag_turn_cancel(pag_turn *t) {
    pag_session_cancel(t->s);
}

int pag_turn_model_event(const pm_stream_event *ev, void *turn) {
    pag_turn *t = turn;
    if (t->ph != PH_MODEL) return 0;
    if (ev->kind == PM_EV_TEXT_DELTA || ev->kind == PM_EV_THINKING_DELTA) {
        if (!ev->len) return 0;
        char *txt = strndup(ev->text, ev->len);
        if (!txt) return 0;
        pag_event e = {.kind = ev->kind == PM_EV_TEXT_DELTA ? PAG_EV_TEXT : PAG_EV_THOUGHT,
                       .text = txt};
        emit(t, &e);
        free(txt);
    }
    return 0;
}

/* The summary call ended: the marker to persist, or the trim. */
static void summary_done(pag_turn *t, pm_status st, pm_response *resp, const pm_error *err) {
    pag__summary_free(&t->sum);
    pm_error e = err ? *err : (pm_error){0};
    char *summary = NULL;
    st = pag__summary_text(st, resp, &summary, &e);
    if (st == PM_CANCELLED || pag__cancelled(t->s)) { /* Receive ends the turn */
        free(summary);
        to_user_persist(t);
        return;
    }
    if (st == PM_OK) {
        static const char head[] =
            "Summary of the earlier conversation (it replaces the earlier messages, compacted "
            "automatically as the context neared its limit):\n";
        size_t k = strlen(summary) + sizeof head;
        char *marker = malloc(k);
        pm_message_init(&t->batch[0], PM_ROLE_SYSTEM);
        if (marker) snprintf(marker, k, "%s%s", head, summary);
        bool ok = marker && pm_message_add_text(&t->batch[0], marker) == PM_OK;
        free(marker);
        free(summary);
        if (ok) {
            t->nbatch = 1;
            t->ph = PH_SUMMARY_PERSIST;
            return;
        }
        pm_message_clear(&t->batch[0]);
    }
    free(summary);
    compact_event(t, false);
    to_user_persist(t);
}

/* A step's call ended with its answer: usage, then the answer or the tool calls. */
static void answer(pag_turn *t, pm_response *resp) {
    pag_session *s = t->s;
    int64_t used = resp->usage.input_tokens + resp->usage.output_tokens;
    if (used > 0) {
        s->usage_tokens = used;
        s->usage_at = s->nhist + 1;
        pag_event u = {.kind = PAG_EV_USAGE,
                       .used = used,
                       .size = s->budget,
                       .input_tokens = resp->usage.input_tokens,
                       .output_tokens = resp->usage.output_tokens};
        emit(t, &u);
    }
    t->batch[0] = resp->message;
    t->batch[0].role = PM_ROLE_ASSISTANT;
    pm_message_init(&resp->message, PM_ROLE_ASSISTANT);
    t->nbatch = 1;
    if (!has_tool_calls(&t->batch[0])) {
        t->answer_stop = stop_name(resp->stop);
        t->ph = PH_ANSWER_PERSIST;
        return;
    }
    const pm_message *m = &t->batch[0];
    size_t n = 0;
    for (size_t i = 0; i < m->nparts; i++)
        n += m->parts[i].kind == PM_PART_TOOL_CALL;
    t->calls = calloc(n, sizeof *t->calls);
    t->cs = calloc(n, sizeof *t->cs);
    if (!t->calls || !t->cs) {
        calls_clear(t);
        batch_clear(t);
        fail_oom(t);
        t->ph = PH_RECEIVE;
        return;
    }
    for (size_t i = 0; i < m->nparts; i++) {
        const pm_part *p = &m->parts[i];
        if (p->kind != PM_PART_TOOL_CALL) continue;
        pag_turn_call *c = &t->calls[t->ncalls++];
        c->id = p->id ? p->id : "";
        c->name = p->name;
        c->arguments = p->arguments ? p->arguments : "{}";
        c->tool = pag__tool_find(s, p->name);
    }
    t->ph = PH_TOOLS;
}

void pag_turn_model_done(pag_turn *t, pm_status st, pm_response *resp, const pm_error *err,
                         long retry_ms) {
    pm_response none;
    memset(&none, 0, sizeof none);
    none.message.role = PM_ROLE_ASSISTANT;
    if (!resp) resp = &none;
    if (t->ph == PH_SUMMARY) {
        summary_done(t, st, resp, err);
    } else if (t->ph != PH_MODEL) {
        return; /* not waiting for a model call: ignored */
    } else if (st != PM_OK && st != PM_CANCELLED && retry_ms >= 0 && !pag__cancelled(t->s)) {
        t->wait_ms = retry_ms;
        t->ph = PH_WAIT; /* the same request again after the wait */
    } else {
        request_clear(t);
        t->ph = PH_RECEIVE;
        if (st == PM_CANCELLED || (st != PM_OK && pag__cancelled(t->s))) {
            /* keep only the text of a partial answer: a half-streamed tool call is dropped */
            char *text = pm_message_text(&resp->message);
            set_result(t, PAG_TURN_INTERRUPTED, "cancelled");
            if (text && *text) {
                pm_message_init(&t->batch[0], PM_ROLE_ASSISTANT);
                if (pm_message_add_text(&t->batch[0], text) == PM_OK) {
                    t->nbatch = 1;
                    t->ph = PH_PARTIAL_PERSIST;
                }
            }
            free(text);
        } else if (st != PM_OK) {
            pag__model_failure(&t->out, st, err);
        } else {
            answer(t, resp);
        }
    }
    pm_response_clear(resp);
}

void pag_turn_wait_done(pag_turn *t) {
    if (t->ph != PH_WAIT) return;
    if (pag__cancelled(t->s)) { /* a cancelled wait: the call ends as cancelled */
        request_clear(t);
        set_result(t, PAG_TURN_INTERRUPTED, "cancelled");
        t->ph = PH_RECEIVE;
        return;
    }
    t->attempt++;
    t->ph = PH_MODEL;
}

void pag_turn_persist_done(pag_turn *t, int rc) {
    phase ph = t->ph;
    if (ph == PH_SUMMARY_PERSIST) {
        /* a failed marker is not the turn's failure: trim instead */
        bool ok = rc == 0 && batch_push(t) == 0;
        batch_clear(t);
        if (ok) {
            t->s->view = t->s->nhist - 1;
            t->s->usage_tokens = 0;
        }
        compact_event(t, ok);
        to_user_persist(t);
        return;
    }
    if (ph != PH_USER_PERSIST && ph != PH_PARTIAL_PERSIST && ph != PH_ANSWER_PERSIST &&
        ph != PH_BATCH_PERSIST)
        return;
    if (rc != 0) {
        batch_clear(t);
        fail_persist(t);
        /* a user message that was never kept ends the turn before it began: no Stop */
        t->ph = ph == PH_USER_PERSIST ? PH_DONE : PH_RECEIVE;
        return;
    }
    size_t at = t->s->nhist;
    if (batch_push(t)) {
        fail_oom(t);
        t->ph = ph == PH_USER_PERSIST ? PH_DONE : PH_RECEIVE;
        return;
    }
    if (ph == PH_USER_PERSIST) t->s->turn_start = at; /* what pag_session_drop_turn drops */
    if (ph == PH_ANSWER_PERSIST) set_result(t, PAG_TURN_COMPLETED, t->answer_stop);
    t->ph = PH_RECEIVE;
}

/* ---------------------------------------------------------------- Act */

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

/* The tool_call event of call i (borrowed strings). */
static pag_event call_event(const pag_turn *t, size_t i) {
    const pag_turn_call *c = &t->calls[i];
    return (pag_event){.kind = PAG_EV_TOOL_CALL,
                       .tool_call_id = c->id,
                       .tool_name = c->name,
                       .title = t->cs[i].title ? t->cs[i].title : (c->name ? c->name : "tool"),
                       .tool_kind = c->tool ? c->tool->kind : "other",
                       .status = "pending",
                       .raw_input = c->arguments};
}

/* Records the answer of call i (text copied). */
static void record(pag_turn *t, size_t i, const char *text, bool is_error) {
    call_state *cs = &t->cs[i];
    cs->text = strdup(text);
    cs->is_error = is_error;
    cs->answered = true; /* a NULL text (out of memory) fails the turn with the batch */
}

bool pag_turn_tool_start(pag_turn *t, size_t i) {
    if (t->ph != PH_TOOLS || i >= t->ncalls || t->cs[i].started) return false;
    pag_session *s = t->s;
    const pag_turn_call *c = &t->calls[i];
    call_state *cs = &t->cs[i];
    cs->started = true;
    const pag_tool_ops *ops = s->ports.tool_ops;
    if (c->tool && ops->title) cs->title = ops->title(s->ports.ctx, c->tool->name, c->arguments);
    pag_event ev = call_event(t, i);
    emit(t, &ev);
    pag_event up = {.kind = PAG_EV_TOOL_UPDATE,
                    .tool_call_id = c->id,
                    .tool_name = c->name,
                    .raw_input = c->arguments};
    const char *fixed = NULL;
    if (!c->tool) {
        fixed = "error: unknown tool";
    } else if (pag__cancelled(s)) {
        fixed = "cancelled: the user interrupted the turn before this tool ran";
    } else {
        /* the chain decides (hooks, then the mode gate and approval, ...) */
        pag_hook_call hc = {.hook = PAG_HOOK_PRE_TOOL, .tool = c->tool, .call = &ev};
        pag_session_hook(s, &hc, &cs->pre);
        if (cs->pre.deny) fixed = cs->pre.reason;
    }
    if (fixed) {
        up.status = "failed";
        up.text = fixed;
        emit(t, &up);
        record(t, i, fixed, true);
        pag_hook_answer_clear(&cs->pre);
        return false;
    }
    up.status = "in_progress";
    emit(t, &up);
    return true;
}

int pag_turn_tool_done(pag_turn *t, const char *id, int rc, pag_tool_output *o) {
    size_t i = 0;
    while (t->ph == PH_TOOLS && i < t->ncalls &&
           !(t->cs[i].started && !t->cs[i].answered && strcmp(t->calls[i].id, id ? id : "") == 0))
        i++;
    if (t->ph != PH_TOOLS || i == t->ncalls) {
        if (o) pag_tool_output_clear(o);
        return -1;
    }
    pag_tool_output none = {0};
    if (!o) o = &none;
    const pag_turn_call *c = &t->calls[i];
    call_state *cs = &t->cs[i];
    const char *text = o->output ? o->output : "";
    bool is_error = o->is_error;
    if (rc == 1) {
        text = o->output && *o->output ? o->output : "cancelled";
        is_error = true;
    } else if (rc < 0) {
        text = o->output && *o->output ? o->output : "internal error running the tool";
        is_error = true;
    }
    pag_event up = {.kind = PAG_EV_TOOL_UPDATE,
                    .tool_call_id = c->id,
                    .tool_name = c->name,
                    .raw_input = c->arguments,
                    .status = is_error ? "failed" : "completed",
                    .text = text,
                    .content_json = o->content_json,
                    .locations_json = o->locations_json,
                    .meta_json = o->meta_json,
                    .raw_output_json = o->raw_output_json};
    emit(t, &up);
    pag_event ev = call_event(t, i);
    pag_hook_answer post = {0};
    pag_hook_call hc = {.hook = PAG_HOOK_POST_TOOL,
                        .tool = c->tool,
                        .call = &ev,
                        .tool_output = text,
                        .tool_error = is_error};
    pag_session_hook(t->s, &hc, &post);
    char *full = with_additions(text, &cs->pre, &post);
    record(t, i, full ? full : text, is_error);
    free(full);
    pag_hook_answer_clear(&cs->pre);
    pag_hook_answer_clear(&post);
    pag_tool_output_clear(o);
    return 0;
}
