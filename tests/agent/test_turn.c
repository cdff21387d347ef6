/*
 * test_turn.c — the resumable turn (pag_turn) driven by hand: no threads, no sockets.
 * Model answers are scripted HTTP answers (status, header, SSE body) fed in small
 * chunks through the sans-IO model call (pm_call); tools are answered out of order; a
 * cancel arrives between effects; a 429 with Retry-After gives WAIT and a retry; a
 * failed commit fails the turn. The same script through the native driver
 * (pag_session_turn over a reason port that feeds the same pm_call) gives the same
 * events and the same persisted messages.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "peri/agent.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------- the script */

typedef struct answer {
    long status;
    const char *header; /* one header line or NULL */
    const char *body;
} answer;

#define SSE(x) "data: " x "\n\n"

static const answer TOO_MANY = {429, "Retry-After: 2\r\n",
                                "{\"error\":{\"message\":\"slow down\"}}"};
static const answer TOOLS = {
    200, NULL,
    SSE("{\"id\":\"r1\",\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Let me "
        "look.\"}}]}") SSE("{\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,"
                           "\"id\":\"c1\",\"type\":\"function\",\"function\":{\"name\":\"read\","
                           "\"arguments\":\"{\\\"p\\\":\"}}]}}]}")
        SSE("{\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{"
            "\"arguments\":\"1}\"}}]}}]}")
            SSE("{\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":1,\"id\":\"c2\","
                "\"type\":\"function\",\"function\":{\"name\":\"shell\",\"arguments\":\"{}\"}}]}}]"
                "}")
                SSE("{\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"tool_calls\"}]}")
                    SSE("{\"choices\":[],\"usage\":{\"prompt_tokens\":10,\"completion_tokens\":5}}")
                        SSE("[DONE]")};
static const answer FINAL = {
    200, NULL,
    SSE("{\"choices\":[{\"index\":0,\"delta\":{\"reasoning_content\":\"hmm\"}}]}")
        SSE("{\"choices\":[{\"index\":0,\"delta\":{\"content\":\"All \"}}]}")
            SSE("{\"choices\":[{\"index\":0,\"delta\":{\"content\":\"done.\"},\"finish_reason\":"
                "\"stop\"}]}") SSE("[DONE]")};

static const answer REFUSED = {
    200, NULL,
    SSE("{\"choices\":[{\"index\":0,\"delta\":{\"content\":\"I can't help with that.\"},"
        "\"finish_reason\":\"content_filter\"}]}") SSE("[DONE]")};

/* ---------------------------------------------------------------- the harness */

typedef struct harness {
    pm_client *client;
    const answer *const *script;
    size_t nscript, at;
    char events[8192];
    size_t nev;
    char persisted[8192];
    size_t npers;
    int persist_calls;
    int fail_persist_at; /* 1-based PERSIST effect that fails; 0: none */
    long waits[4];
    size_t nwaits;
    int max_attempt;
    size_t last_nmessages; /* the messages of the last model request */
} harness;

static void add(char *buf, size_t cap, size_t *len, const char *fmt, const char *a, const char *b,
                const char *c, const char *d) {
    int k =
        snprintf(buf + *len, cap - *len, fmt, a ? a : "-", b ? b : "-", c ? c : "-", d ? d : "-");
    if (k > 0 && *len + (size_t)k < cap) *len += (size_t)k;
}

static void h_emit(void *ctx, const pag_event *ev) {
    harness *h = ctx;
    char kind[8];
    snprintf(kind, sizeof kind, "%d", (int)ev->kind);
    add(h->events, sizeof h->events, &h->nev, "%s|%s|%s|%s\n", kind, ev->text, ev->tool_call_id,
        ev->status);
}

static int h_persist(void *ctx, const pm_message *msgs, size_t n) {
    harness *h = ctx;
    if (++h->persist_calls == h->fail_persist_at) return -1;
    for (size_t i = 0; i < n; i++) {
        char *j = pm_message_to_json(&msgs[i]);
        add(h->persisted, sizeof h->persisted, &h->npers, "%s%s%s%s", j, i + 1 < n ? " + " : "\n",
            "", "");
        free(j);
    }
    return 0;
}

static int h_run(void *ctx, const char *name, const char *args, atomic_int *cancel,
                 pag_tool_output *out) {
    (void)ctx, (void)cancel;
    char buf[128];
    snprintf(buf, sizeof buf, "%s ran with %s", name, args);
    out->output = strdup(buf);
    return out->output ? 0 : -1;
}

static pag_permission h_ask(void *ctx, const pag_event *call, atomic_int *cancel) {
    (void)ctx, (void)call, (void)cancel;
    return PAG_PERM_ALLOW;
}

static const pag_tool_ops h_tools = {.run = h_run};
static const pag_tool_info tools[] = {
    {"read", "Read a file", "{\"type\":\"object\"}", "read", false, true},
    {"shell", "Run a command", "{\"type\":\"object\"}", "execute", true, false},
};

/* Feeds one scripted answer into the call in chunks of 7 bytes. */
static pm_status feed(pm_call *call, const answer *a) {
    pm_call_status(call, a->status);
    if (a->header) pm_call_header(call, a->header, strlen(a->header));
    size_t n = strlen(a->body);
    for (size_t i = 0; i < n; i += 7)
        if (pm_call_body(call, a->body + i, n - i < 7 ? n - i : 7)) break;
    return pm_call_end(call, PM_TRANSPORT_OK, NULL);
}

/* The native form's reason port: the same sans-IO call over the script, retries inside
 * (the port owns them, as pm_stream does; the script has no clock to wait on). */
static pm_status h_reason(void *ctx, const pm_request *req, pm_event_fn fn, void *ev_ctx,
                          atomic_int *cancel, pm_response *out, pm_error *err) {
    (void)cancel;
    harness *h = ctx;
    h->last_nmessages = req->nmessages;
    pm_call *call = pm_call_new(h->client, req, true, err);
    if (!call) return err->status;
    pm_status st;
    for (;;) {
        assert_true(h->at < h->nscript);
        pm_call_begin(call, fn, ev_ctx, out, err);
        st = feed(call, h->script[h->at++]);
        if (pm_call_retry_ms(call) < 0) break;
        pm_response_clear(out);
    }
    pm_call_free(call);
    return st;
}

static pag_session *make(harness *h, const answer *const *script, size_t n) {
    memset(h, 0, sizeof *h);
    h->script = script;
    h->nscript = n;
    pm_config cfg = {.provider = PM_PROVIDER_OPENAI,
                     .base_url = "http://model.invalid/v1",
                     .api_key = "k",
                     .max_retries = 2};
    pm_error err;
    h->client = pm_client_new(&cfg, &err);
    assert_non_null(h->client);
    pag_ports ports = {.ctx = h,
                       .reason = h_reason,
                       .model_name = "m",
                       .tools = tools,
                       .ntools = 2,
                       .tool_ops = &h_tools,
                       .ask_permission = h_ask,
                       .persist = h_persist,
                       .emit = h_emit};
    pag_session_config sc = {.id = "s1", .cwd = "/tmp", .system_prompt = "sys", .max_steps = 8};
    pag_session *s = pag_session_new(&sc, &ports);
    assert_non_null(s);
    pag_session_begin_turn(s);
    return s;
}

static void unmake(harness *h, pag_session *s) {
    pag_session_free(s);
    pm_client_free(h->client);
}

static pag_turn *new_turn(pag_session *s, const char *text) {
    pm_message um;
    pm_message_init(&um, PM_ROLE_USER);
    assert_int_equal(pm_message_add_text(&um, text), PM_OK);
    pag_turn *t = pag_turn_new(s, &um);
    assert_non_null(t);
    assert_int_equal(um.nparts, 0);
    return t;
}

/* How the hand driver answers TOOL_CALLS. */
typedef enum order { IN_ORDER, REVERSED, CANCEL_AFTER_FIRST } order;

static void run_tools(harness *h, pag_turn *t, const pag_effect *fx, order o) {
    size_t n = fx->tools.n;
    assert_true(n == 2);
    if (o == IN_ORDER) {
        for (size_t i = 0; i < n; i++) {
            if (!pag_turn_tool_start(t, i)) continue;
            pag_tool_output out = {0};
            int rc = h_run(h, fx->tools.calls[i].name, fx->tools.calls[i].arguments, NULL, &out);
            assert_int_equal(pag_turn_tool_done(t, fx->tools.calls[i].id, rc, &out), 0);
        }
        return;
    }
    bool run[2] = {false, false};
    for (size_t i = 0; i < n; i++) {
        run[i] = pag_turn_tool_start(t, i);
        if (o == CANCEL_AFTER_FIRST && i == 0) pag_turn_cancel(t);
    }
    assert_true(run[0]);
    assert_int_equal(run[1], o != CANCEL_AFTER_FIRST);
    /* still waiting: the effect is the same until every call is answered */
    pag_effect again;
    assert_int_equal(pag_turn_next(t, &again), PAG_FX_TOOL_CALLS);
    for (size_t k = n; k-- > 0;) {
        if (!run[k]) {
            assert_int_equal(pag_turn_tool_done(t, fx->tools.calls[k].id, 0, NULL), -1);
            continue;
        }
        pag_tool_output out = {0};
        int rc = h_run(h, fx->tools.calls[k].name, fx->tools.calls[k].arguments, NULL, &out);
        assert_int_equal(pag_turn_tool_done(t, fx->tools.calls[k].id, rc, &out), 0);
    }
    assert_int_equal(pag_turn_tool_done(t, "c1", 0, NULL), -1); /* answered already */
}

/* Drives t to DONE by hand with the harness's script. */
static void hand_drive(harness *h, pag_session *s, pag_turn *t, order o, pag_turn_result *res) {
    pm_call *call = NULL;
    pag_effect fx;
    for (;;) {
        switch (pag_turn_next(t, &fx)) {
        case PAG_FX_MODEL_CALL: {
            pm_error err;
            if (fx.model.attempt == 0) {
                pm_call_free(call);
                call = pm_call_new(h->client, fx.model.request, true, &err);
                assert_non_null(call);
            }
            if (fx.model.attempt > h->max_attempt) h->max_attempt = fx.model.attempt;
            pm_response resp;
            assert_true(h->at < h->nscript);
            pm_call_begin(call, fx.model.on_event, fx.model.ctx, &resp, &err);
            pm_status st = feed(call, h->script[h->at++]);
            pag_turn_model_done(t, st, &resp, &err, pm_call_retry_ms(call));
            assert_int_equal(resp.message.nparts, 0); /* moved into the turn */
            pm_response_clear(&resp);
            break;
        }
        case PAG_FX_TOOL_CALLS: run_tools(h, t, &fx, o); break;
        case PAG_FX_PERSIST:
            pag_turn_persist_done(t, h_persist(h, fx.persist.msgs, fx.persist.n));
            break;
        case PAG_FX_WAIT:
            if (h->nwaits < 4) h->waits[h->nwaits++] = fx.wait_ms;
            pag_turn_wait_done(t);
            break;
        case PAG_FX_DONE:
            *res = *fx.result;
            pm_call_free(call);
            /* DONE is terminal: asking again gives it again */
            assert_int_equal(pag_turn_next(t, &fx), PAG_FX_DONE);
            (void)s;
            return;
        }
    }
}

/* ---------------------------------------------------------------- tests */

static const answer *const SCRIPT[] = {&TOO_MANY, &TOOLS, &FINAL};

static void test_same_as_native(void **state) {
    (void)state;
    harness native, hand;
    pag_session *a = make(&native, SCRIPT, 3);
    pag_turn_result ra;
    pag_session_turn(a, "look at p1", &ra);
    assert_int_equal(ra.state, PAG_TURN_COMPLETED);
    assert_string_equal(ra.stop_reason, "end_turn");

    pag_session *b = make(&hand, SCRIPT, 3);
    pag_turn *t = new_turn(b, "look at p1");
    pag_turn_result rb;
    hand_drive(&hand, b, t, IN_ORDER, &rb);
    pag_turn_free(t);

    assert_int_equal(rb.state, ra.state);
    assert_string_equal(rb.stop_reason, ra.stop_reason);
    /* the 429 became WAIT (its Retry-After) and a retry of the same request */
    assert_int_equal(hand.nwaits, 1);
    assert_int_equal(hand.waits[0], 2000);
    assert_int_equal(hand.max_attempt, 1);
    assert_int_equal(hand.at, 3);
    /* the same events and the same commits as the native driver */
    assert_string_equal(hand.events, native.events);
    assert_string_equal(hand.persisted, native.persisted);
    assert_non_null(strstr(hand.events, "1|Let me look.|-|-\n"));
    assert_non_null(strstr(hand.events, "2|hmm|-|-\n"));
    assert_non_null(strstr(hand.persisted, "read ran with {\\\"p\\\":1}"));
    assert_int_equal(pag_session_history_len(a), 4);
    assert_int_equal(pag_session_history_len(b), 4);
    char *last = pag_session_last_answer(b);
    assert_string_equal(last, "All done.");
    free(last);
    unmake(&native, a);
    unmake(&hand, b);
}

static void test_tools_out_of_order(void **state) {
    (void)state;
    static const answer *const script[] = {&TOOLS, &FINAL};
    harness native, hand;
    pag_session *a = make(&native, script, 2);
    pag_turn_result ra;
    pag_session_turn(a, "go", &ra);
    pag_session *b = make(&hand, script, 2);
    pag_turn *t = new_turn(b, "go");
    pag_turn_result rb;
    hand_drive(&hand, b, t, REVERSED, &rb);
    pag_turn_free(t);
    assert_int_equal(rb.state, PAG_TURN_COMPLETED);
    /* results answered c2 then c1 are committed in the order of the calls */
    assert_string_equal(hand.persisted, native.persisted);
    const char *r1 = strstr(hand.persisted, "\"id\":\"c1\",\"text\"");
    const char *r2 = strstr(hand.persisted, "\"id\":\"c2\",\"text\"");
    assert_non_null(r1);
    assert_non_null(r2);
    assert_true(r1 < r2);
    unmake(&native, a);
    unmake(&hand, b);
}

static void test_cancel_between_effects(void **state) {
    (void)state;
    static const answer *const script[] = {&TOOLS, &FINAL};
    harness h;
    pag_session *s = make(&h, script, 2);
    pag_turn *t = new_turn(s, "go");
    pag_turn_result r;
    hand_drive(&h, s, t, CANCEL_AFTER_FIRST, &r);
    pag_turn_free(t);
    assert_int_equal(r.state, PAG_TURN_INTERRUPTED);
    assert_string_equal(r.stop_reason, "cancelled");
    assert_int_equal(h.at, 1); /* no model call after the cancel */
    /* the started call kept its result; the other was answered as cancelled; both are
     * committed with the assistant message */
    assert_non_null(strstr(h.persisted, "read ran with"));
    assert_non_null(strstr(h.persisted, "cancelled: the user interrupted the turn"));
    assert_int_equal(pag_session_history_len(s), 3);
    unmake(&h, s);
}

static void test_cancel_during_wait(void **state) {
    (void)state;
    static const answer *const script[] = {&TOO_MANY, &FINAL};
    harness h;
    pag_session *s = make(&h, script, 2);
    pag_turn *t = new_turn(s, "go");
    pag_effect fx;
    assert_int_equal(pag_turn_next(t, &fx), PAG_FX_PERSIST); /* the user message */
    pag_turn_persist_done(t, 0);
    assert_int_equal(pag_turn_next(t, &fx), PAG_FX_MODEL_CALL);
    pm_error err;
    pm_call *call = pm_call_new(h.client, fx.model.request, true, &err);
    pm_response resp;
    pm_call_begin(call, fx.model.on_event, fx.model.ctx, &resp, &err);
    pm_status st = feed(call, &TOO_MANY);
    assert_int_equal(st, PM_ERR_HTTP);
    assert_int_equal(pm_call_retry_ms(call), 2000);
    pag_turn_model_done(t, st, &resp, &err, pm_call_retry_ms(call));
    assert_int_equal(pag_turn_next(t, &fx), PAG_FX_WAIT);
    assert_int_equal(fx.wait_ms, 2000);
    pag_turn_cancel(t);
    pag_turn_wait_done(t);
    assert_int_equal(pag_turn_next(t, &fx), PAG_FX_DONE);
    assert_int_equal(fx.result->state, PAG_TURN_INTERRUPTED);
    pm_call_free(call);
    pag_turn_free(t);
    unmake(&h, s);
}

static void test_retries_used_up(void **state) {
    (void)state;
    static const answer *const script[] = {&TOO_MANY, &TOO_MANY, &TOO_MANY};
    harness h;
    pag_session *s = make(&h, script, 3);
    pag_turn *t = new_turn(s, "go");
    pag_turn_result r;
    hand_drive(&h, s, t, IN_ORDER, &r);
    pag_turn_free(t);
    assert_int_equal(h.nwaits, 2); /* max_retries 2 */
    assert_int_equal(r.state, PAG_TURN_FAILED);
    assert_string_equal(r.error_kind, "llm_http");
    assert_int_equal(r.http_status, 429);
    assert_non_null(strstr(r.message, "slow down"));
    unmake(&h, s);
}

static void test_persist_failure(void **state) {
    (void)state;
    static const answer *const script[] = {&FINAL};
    harness h;
    pag_session *s = make(&h, script, 1);
    h.fail_persist_at = 2; /* the user message commits, the answer does not */
    pag_turn *t = new_turn(s, "go");
    pag_turn_result r;
    hand_drive(&h, s, t, IN_ORDER, &r);
    pag_turn_free(t);
    assert_int_equal(r.state, PAG_TURN_FAILED);
    assert_string_equal(r.error_kind, "internal");
    assert_string_equal(r.message, "could not persist the conversation");
    assert_int_equal(pag_session_history_len(s), 1); /* nothing uncommitted is kept */
    unmake(&h, s);
}

static void test_free_midway(void **state) {
    (void)state;
    static const answer *const script[] = {&TOOLS};
    harness h;
    pag_session *s = make(&h, script, 1);
    pag_turn *t = new_turn(s, "go");
    pag_effect fx;
    assert_int_equal(pag_turn_next(t, &fx), PAG_FX_PERSIST);
    pag_turn_persist_done(t, 0);
    assert_int_equal(pag_turn_next(t, &fx), PAG_FX_MODEL_CALL);
    pag_effect same;
    assert_int_equal(pag_turn_next(t, &same), PAG_FX_MODEL_CALL); /* idempotent */
    assert_ptr_equal(same.model.request, fx.model.request);
    pm_error err;
    pm_call *call = pm_call_new(h.client, fx.model.request, true, &err);
    pm_response resp;
    pm_call_begin(call, fx.model.on_event, fx.model.ctx, &resp, &err);
    pm_status st = feed(call, &TOOLS);
    assert_int_equal(st, PM_OK);
    pag_turn_model_done(t, st, &resp, &err, pm_call_retry_ms(call));
    assert_int_equal(pag_turn_next(t, &fx), PAG_FX_TOOL_CALLS);
    assert_true(pag_turn_tool_start(t, 0));
    assert_false(pag_turn_tool_start(t, 0)); /* once */
    assert_false(pag_turn_tool_start(t, 9));
    pm_call_free(call);
    pag_turn_free(t); /* abandoned with a call in flight: nothing leaks */
    assert_int_equal(pag_session_history_len(s), 1);
    unmake(&h, s);
}

/* A refused turn (here after a tool step) leaves the history whole when the host drops
 * it: the next request holds the turns before it and the new prompt, nothing of it. */
static void test_refusal_dropped(void **state) {
    (void)state;
    static const answer *const script[] = {&FINAL, &FINAL, &TOOLS, &REFUSED, &FINAL};
    harness h;
    pag_session *s = make(&h, script, 5);
    pag_turn_result r;
    pag_session_turn(s, "first", &r);
    assert_string_equal(r.stop_reason, "end_turn");
    assert_int_equal(pag_session_drop_turn(s), 2); /* any turn (a host drops refusals) */
    pag_session_begin_turn(s);
    pag_session_turn(s, "first", &r);
    assert_int_equal(pag_session_history_len(s), 2);
    pag_session_begin_turn(s);
    pag_session_turn(s, "forbidden", &r);
    assert_int_equal(r.state, PAG_TURN_COMPLETED);
    assert_string_equal(r.stop_reason, "refusal");
    assert_int_equal(pag_session_history_len(s), 6); /* user, tools step, refusal */
    assert_int_equal(pag_session_drop_turn(s), 4);
    assert_int_equal(pag_session_history_len(s), 2);
    assert_int_equal(pag_session_drop_turn(s), 0); /* once */
    pag_session_begin_turn(s);
    pag_session_turn(s, "next", &r);
    assert_string_equal(r.stop_reason, "end_turn");
    assert_int_equal(h.last_nmessages, 3); /* first, its answer, next */
    char *last = pag_session_last_answer(s);
    assert_string_equal(last, "All done.");
    free(last);
    unmake(&h, s);
}

int main(void) {
    pm_global_init();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_same_as_native),
        cmocka_unit_test(test_tools_out_of_order),
        cmocka_unit_test(test_cancel_between_effects),
        cmocka_unit_test(test_cancel_during_wait),
        cmocka_unit_test(test_retries_used_up),
        cmocka_unit_test(test_persist_failure),
        cmocka_unit_test(test_free_midway),
        cmocka_unit_test(test_refusal_dropped),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    pm_global_cleanup();
    return rc;
}
