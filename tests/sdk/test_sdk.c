/*
 * test_sdk.c — libperi-sdk unit tests over a scripted fake transport: the required
 * factory, initialize's version check, sessions and callbacks, and every close rule
 * (frames counted, replay cadence timed with generous bounds, concurrent closes from
 * two threads, budget 0, negative budget, errors unchanged, the two-cause error).
 */
#include "peri/sdk.h"

#include "peri/json.h"
#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <cmocka.h>

/* ---------------------------------------------------------------- the fake */

typedef struct item {
    char *text;
    int64_t at_us; /* deliver no earlier than this */
    bool is_close_answer;
} item;

typedef struct fake {
    psdk_transport base;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    item q[512];
    int qh, qt;
    bool closed;
    /* session/close script: codes answered in order (0 = success); the last repeats */
    int codes[32];
    const char *msgs[32];
    int ncodes;
    bool close_silent;    /* never answer session/close */
    int eof_after_closes; /* > 0: end the stream after this many close frames */
    int answer_delay_ms;
    int init_version;
    /* records */
    int nclose;
    int64_t close_us[512];
    int inflight, max_inflight;
    int ncancel;
    char perm_answer[512];
    const char *perm_params; /* the permission request's params (JSON); NULL: the default */
    pj_int_t prompt_id;
    pthread_t recv_thread;
} fake;

static int64_t now_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static void push(fake *f, pj_t *frame, int delay_ms, bool close_answer) {
    char *t = pj_dumps(frame, PJ_COMPACT);
    pj_decref(frame);
    f->q[f->qt % 512] = (item){t, now_us() + delay_ms * 1000, close_answer};
    f->qt++;
    pthread_cond_broadcast(&f->cv);
}

static pj_t *result(pj_t *id, pj_t *res) {
    return pj_pack("{s:s, s:O, s:o}", "jsonrpc", "2.0", "id", id, "result", res);
}

static pj_t *error(pj_t *id, int code, const char *msg) {
    return pj_pack("{s:s, s:O, s:{s:i, s:s}}", "jsonrpc", "2.0", "id", id, "error", "code", code,
                   "message", msg);
}

static pj_t *update(const char *sid, const char *kind, const char *text) {
    return pj_pack("{s:s, s:s, s:{s:s, s:{s:s, s:{s:s, s:s}}}}", "jsonrpc", "2.0", "method",
                   "session/update", "params", "sessionId", sid, "update", "sessionUpdate", kind,
                   "content", "type", "text", "text", text);
}

static int f_send(psdk_transport *t, const char *frame, size_t len) {
    fake *f = (fake *)t;
    pj_t *m = pj_loadb(frame, len, 0, NULL);
    assert_non_null(m);
    const char *method = pj_string_value(pj_object_get(m, "method"));
    pj_t *id = pj_object_get(m, "id");
    pthread_mutex_lock(&f->mu);
    if (f->closed) {
        pthread_mutex_unlock(&f->mu);
        pj_decref(m);
        return -1;
    }
    if (!method) { /* our answer to the permission request: finish the prompt */
        pj_t *oc = pj_object_get(pj_object_get(m, "result"), "outcome");
        char *s = pj_dumps(oc, PJ_COMPACT | PJ_SORT_KEYS);
        snprintf(f->perm_answer, sizeof f->perm_answer, "%s", s ? s : "");
        free(s);
        pj_t *pid = pj_integer(f->prompt_id);
        push(f, result(pid, pj_pack("{s:s}", "stopReason", "end_turn")), 0, false);
        pj_decref(pid);
    } else if (!strcmp(method, "initialize")) {
        push(f,
             result(id, pj_pack("{s:i, s:{s:s, s:s}}", "protocolVersion", f->init_version,
                                "agentInfo", "name", "fake", "version", "9")),
             0, false);
    } else if (!strcmp(method, "session/new")) {
        push(f, result(id, pj_pack("{s:s}", "sessionId", "s-1")), 0, false);
        push(f, update("s-1", "available_commands_update", "x"), 0, false);
    } else if (!strcmp(method, "session/prompt")) {
        /* Two chunks, a permission request, then (after our answer) the prompt result. */
        f->prompt_id = pj_integer_value(id);
        push(f, update("s-1", "agent_message_chunk", "hel"), 0, false);
        push(f, update("s-1", "agent_message_chunk", "lo"), 0, false);
        if (f->perm_params) {
            pj_t *params = pj_loads(f->perm_params, 0, NULL);
            assert_non_null(params);
            push(f,
                 pj_pack("{s:s, s:i, s:s, s:o}", "jsonrpc", "2.0", "id", 5000, "method",
                         "session/request_permission", "params", params),
                 0, false);
        } else {
            push(f,
                 pj_pack("{s:s, s:i, s:s, s:{s:s, s:{s:s, s:s}, s:[{s:s, s:s, s:s}, {s:s, s:s, "
                         "s:s}]}}",
                         "jsonrpc", "2.0", "id", 5000, "method", "session/request_permission",
                         "params", "sessionId", "s-1", "toolCall", "toolCallId", "c1", "title",
                         "write x", "options", "optionId", "yes", "name", "Allow", "kind",
                         "allow_once", "optionId", "no", "name", "Reject", "kind", "reject_once"),
                 0, false);
        }
    } else if (!strcmp(method, "session/cancel")) {
        f->ncancel++;
    } else if (!strcmp(method, "session/close")) {
        int k = f->nclose < f->ncodes ? f->nclose : f->ncodes - 1;
        f->close_us[f->nclose % 512] = now_us();
        f->nclose++;
        f->inflight++;
        if (f->inflight > f->max_inflight) f->max_inflight = f->inflight;
        if (f->eof_after_closes && f->nclose >= f->eof_after_closes) {
            f->closed = true; /* the stream ends instead of an answer */
            pthread_cond_broadcast(&f->cv);
        } else if (!f->close_silent) {
            int code = f->codes[k];
            push(f, code == 0 ? result(id, pj_object()) : error(id, code, f->msgs[k]),
                 f->answer_delay_ms, true);
        }
    }
    pthread_mutex_unlock(&f->mu);
    pj_decref(m);
    return 0;
}

static int f_recv(psdk_transport *t, char **frame, size_t *len) {
    fake *f = (fake *)t;
    pthread_mutex_lock(&f->mu);
    f->recv_thread = pthread_self();
    for (;;) {
        if (f->qh < f->qt) {
            item *it = &f->q[f->qh % 512];
            int64_t wait = it->at_us - now_us();
            if (wait <= 0) {
                f->qh++;
                if (it->is_close_answer) f->inflight--;
                pthread_mutex_unlock(&f->mu);
                *frame = it->text;
                *len = strlen(it->text);
                return 0;
            }
            struct timespec dl;
            clock_gettime(CLOCK_REALTIME, &dl);
            dl.tv_nsec += (long)(wait * 1000);
            while (dl.tv_nsec >= 1000000000L) {
                dl.tv_sec++;
                dl.tv_nsec -= 1000000000L;
            }
            pthread_cond_timedwait(&f->cv, &f->mu, &dl);
            continue;
        }
        if (f->closed) {
            pthread_mutex_unlock(&f->mu);
            return 1;
        }
        pthread_cond_wait(&f->cv, &f->mu);
    }
}

static void f_close(psdk_transport *t) {
    fake *f = (fake *)t;
    pthread_mutex_lock(&f->mu);
    f->closed = true;
    pthread_cond_broadcast(&f->cv);
    pthread_mutex_unlock(&f->mu);
}

static void f_free(psdk_transport *t) {
    fake *f = (fake *)t;
    while (f->qh < f->qt)
        free(f->q[f->qh++ % 512].text);
}

static fake *fake_new(void) {
    fake *f = calloc(1, sizeof *f);
    f->base = (psdk_transport){f_send, f_recv, f_close, f_free};
    pthread_mutex_init(&f->mu, NULL);
    pthread_cond_init(&f->cv, NULL);
    f->init_version = 1;
    f->ncodes = 1;
    f->codes[0] = 0;
    return f;
}

static int fake_factory(void *ctx, const psdk_connect *c, psdk_transport **out, psdk_error *err) {
    (void)err;
    fake *f = ctx;
    /* Paths are forwarded verbatim: the test passes a relative, odd path. */
    assert_string_equal(c->path, "rel/../odd path");
    *out = &f->base;
    return 0;
}

typedef struct env {
    fake *f;
    psdk_sandbox *sb;
    psdk_agent *a;
    psdk_session *s;
} env;

static void script(fake *f, int n, const int *codes, const char *const *msgs) {
    pthread_mutex_lock(&f->mu);
    f->ncodes = n;
    for (int i = 0; i < n; i++) {
        f->codes[i] = codes[i];
        f->msgs[i] = msgs ? msgs[i] : "Session close incomplete: prompt is still active";
    }
    pthread_mutex_unlock(&f->mu);
}

static env open_env(long answer_timeout_ms) {
    env e = {0};
    e.f = fake_new();
    psdk_sandbox_options o = {.transport_factory = fake_factory,
                              .factory_ctx = e.f,
                              .answer_timeout_ms = answer_timeout_ms};
    psdk_error err;
    e.sb = psdk_sandbox_new(&o, &err);
    assert_non_null(e.sb);
    e.a = psdk_agent_connect(e.sb, "rel/../odd path", &err);
    assert_non_null(e.a);
    assert_int_equal(psdk_agent_initialize(e.a, NULL, 0, &err), PSDK_OK);
    e.s = psdk_session_new(e.a, NULL, NULL, &err);
    assert_non_null(e.s);
    assert_string_equal(psdk_session_id(e.s), "s-1");
    return e;
}

static void close_env(env *e) {
    psdk_agent_free(e->a);
    psdk_sandbox_free(e->sb);
    pthread_mutex_destroy(&e->f->mu);
    pthread_cond_destroy(&e->f->cv);
    free(e->f);
}

/* open_env(0) with the fake host answering every session/close with -32010 (the turn is
 * still active): no close settles until the test scripts other answers. */
static env open_env_busy(void) {
    env e = open_env(0);
    int codes[] = {-32010};
    script(e.f, 1, codes, NULL);
    return e;
}

/* psdk_session_close(e->s, budget_ms, err), timed: *el_us is how long it took. */
static psdk_status timed_close(env *e, int64_t budget_ms, psdk_error *err, int64_t *el_us) {
    int64_t t0 = now_us();
    psdk_status rc = psdk_session_close(e->s, budget_ms, err);
    *el_us = now_us() - t0;
    return rc;
}

static int nclose(fake *f) {
    pthread_mutex_lock(&f->mu);
    int n = f->nclose;
    pthread_mutex_unlock(&f->mu);
    return n;
}

/* ---------------------------------------------------------------- construction */

static void test_factory_required(void **state) {
    (void)state;
    psdk_error err;
    psdk_sandbox_options o = {0};
    assert_null(psdk_sandbox_new(&o, &err));
    assert_int_equal(err.status, PSDK_ERR_ARG);
    assert_string_equal(err.message, "transportFactory is required");
    assert_null(psdk_sandbox_new(NULL, &err));
    assert_string_equal(err.message, "transportFactory is required");
}

static void test_initialize_version(void **state) {
    (void)state;
    fake *f = fake_new();
    f->init_version = 2;
    psdk_sandbox_options o = {.transport_factory = fake_factory, .factory_ctx = f};
    psdk_error err;
    psdk_sandbox *sb = psdk_sandbox_new(&o, &err);
    psdk_agent *a = psdk_agent_connect(sb, "rel/../odd path", &err);
    assert_non_null(a);
    assert_int_equal(psdk_agent_initialize(a, NULL, 0, &err), PSDK_ERR_PROTOCOL);
    assert_non_null(strstr(err.message, "unsupported ACP protocol version 2"));
    f->init_version = 1;
    char info[64];
    assert_int_equal(psdk_agent_initialize(a, info, sizeof info, &err), PSDK_OK);
    assert_string_equal(info, "fake 9");
    psdk_agent_free(a);
    psdk_sandbox_free(sb);
    free(f);
}

/* ---------------------------------------------------------------- close rules */

static void test_close_settles_after_replays(void **state) {
    (void)state;
    env e = open_env(0);
    int codes[] = {-32010, -32010, -32010, 0};
    script(e.f, 4, codes, NULL);
    psdk_error err;
    assert_int_equal(psdk_session_close(e.s, 3000, &err), PSDK_OK);
    assert_int_equal(nclose(e.f), 4);
    assert_true(psdk_session_is_closed(e.s));
    /* Closing a closed session sends nothing. */
    assert_int_equal(psdk_session_close(e.s, 3000, &err), PSDK_OK);
    assert_int_equal(psdk_session_close(e.s, 0, &err), PSDK_OK);
    assert_int_equal(nclose(e.f), 4);
    close_env(&e);
}

static void test_close_cadence_and_exhaustion(void **state) {
    (void)state;
    env e = open_env_busy();
    psdk_error err;
    int64_t el;
    assert_int_equal(timed_close(&e, 1000, &err, &el), PSDK_ERR_SESSION_CLOSE_INCOMPLETE);
    int n = nclose(e.f);
    /* Sends happen at >= 0, 50, 100, ... 1000 ms: at most 21; a loaded machine may fit
     * fewer. The budget is used up, and not much more. */
    assert_true(n <= 21);
    assert_true(n >= 2); /* generous: a loaded machine stretches every hop */
    assert_true(el >= 1000 * 1000);
    assert_true(el < 4000 * 1000);
    /* Every replay waited the full 50 ms, except the last (min(50, remaining)). */
    for (int i = 1; i < n - 1; i++)
        assert_true(e.f->close_us[i] - e.f->close_us[i - 1] >= 49 * 1000);
    assert_string_equal(psdk_status_name(err.status), "SESSION_CLOSE_INCOMPLETE");
    assert_string_equal(err.message, "Session close is incomplete: Session close incomplete: "
                                     "prompt is still active");
    assert_int_equal(err.ncauses, 1);
    assert_int_equal(err.causes[0].rpc_code, -32010);
    /* The session and the transport stay open: close again, and now it settles. */
    assert_false(psdk_session_is_closed(e.s));
    int ok[] = {0};
    script(e.f, 1, ok, NULL);
    pthread_mutex_lock(&e.f->mu);
    e.f->nclose = 0;
    pthread_mutex_unlock(&e.f->mu);
    assert_int_equal(psdk_session_close(e.s, 1000, &err), PSDK_OK);
    assert_int_equal(nclose(e.f), 1);
    close_env(&e);
}

static void test_close_last_sleep_is_remaining(void **state) {
    (void)state;
    env e = open_env_busy();
    psdk_error err;
    int64_t el;
    assert_int_equal(timed_close(&e, 120, &err, &el), PSDK_ERR_SESSION_CLOSE_INCOMPLETE);
    /* 0, 50, 100, then a 20 ms sleep to 120: never more than 4 attempts. */
    assert_true(nclose(e.f) <= 4);
    assert_true(nclose(e.f) >= 1);
    assert_true(el >= 120 * 1000);
    assert_true(el < 2000 * 1000);
    close_env(&e);
}

static void test_close_budget_zero(void **state) {
    (void)state;
    env e = open_env_busy();
    psdk_error err;
    assert_int_equal(psdk_session_close(e.s, 0, &err), PSDK_ERR_SESSION_CLOSE_INCOMPLETE);
    assert_int_equal(nclose(e.f), 1);
    /* budget 0 with a settling host: one attempt, closed */
    int ok[] = {0};
    script(e.f, 1, ok, NULL);
    pthread_mutex_lock(&e.f->mu);
    e.f->nclose = 0;
    pthread_mutex_unlock(&e.f->mu);
    assert_int_equal(psdk_session_close(e.s, 0, &err), PSDK_OK);
    assert_int_equal(nclose(e.f), 1);
    close_env(&e);
}

static void test_close_negative_budget(void **state) {
    (void)state;
    env e = open_env(0);
    psdk_error err;
    assert_int_equal(psdk_session_close(e.s, -1, &err), PSDK_ERR_ARG);
    assert_non_null(strstr(err.message, "non-negative"));
    assert_int_equal(psdk_session_close(e.s, INT64_C(9007199254740992), &err), PSDK_ERR_ARG);
    assert_int_equal(nclose(e.f), 0); /* nothing was sent */
    assert_false(psdk_session_is_closed(e.s));
    close_env(&e);
}

static void test_close_other_error_unchanged(void **state) {
    (void)state;
    env e = open_env(0);
    int codes[] = {-32603};
    const char *msgs[] = {"store exploded"};
    script(e.f, 1, codes, msgs);
    psdk_error err;
    assert_int_equal(psdk_session_close(e.s, 3000, &err), PSDK_ERR_RPC);
    assert_int_equal(err.rpc_code, -32603);
    assert_string_equal(err.message, "store exploded");
    assert_int_equal(err.ncauses, 0);
    assert_int_equal(nclose(e.f), 1); /* not replayed */
    close_env(&e);
}

static void test_close_two_causes(void **state) {
    (void)state;
    env e = open_env(0);
    int codes[] = {-32010, -32603};
    const char *msgs[] = {"Session close incomplete: resources are still active", "store exploded"};
    script(e.f, 2, codes, msgs);
    psdk_error err;
    assert_int_equal(psdk_session_close(e.s, 3000, &err), PSDK_ERR_SESSION_CLOSE_INCOMPLETE);
    assert_string_equal(err.message, "Session close is incomplete: store exploded");
    assert_int_equal(err.ncauses, 2);
    assert_int_equal(err.causes[0].rpc_code, -32010);
    assert_string_equal(err.causes[0].message,
                        "Session close incomplete: resources are still active");
    assert_int_equal(err.causes[1].status, PSDK_ERR_RPC);
    assert_int_equal(err.causes[1].rpc_code, -32603);
    assert_string_equal(err.causes[1].message, "store exploded");
    assert_int_equal(nclose(e.f), 2);
    assert_false(psdk_session_is_closed(e.s));
    close_env(&e);
}

static void test_close_transport_end(void **state) {
    (void)state;
    env e = open_env(0);
    e.f->eof_after_closes = 1;
    psdk_error err;
    assert_int_equal(psdk_session_close(e.s, 3000, &err), PSDK_ERR_TRANSPORT);
    assert_false(psdk_session_is_closed(e.s));
    close_env(&e);
}

static void test_close_answer_timeout(void **state) {
    (void)state;
    env e = open_env(200);
    e.f->close_silent = true;
    psdk_error err;
    int64_t el;
    assert_int_equal(timed_close(&e, 0, &err, &el), PSDK_ERR_TIMEOUT);
    assert_true(el < 3000 * 1000);
    assert_null(strstr(err.message, "stopped"));
    assert_false(psdk_session_is_closed(e.s));
    close_env(&e);
}

typedef struct closer {
    psdk_session *s;
    int64_t budget;
    psdk_status rc;
    psdk_error err;
    pthread_barrier_t *go;
} closer;

static void *close_thread(void *arg) {
    closer *c = arg;
    pthread_barrier_wait(c->go);
    c->rc = psdk_session_close(c->s, c->budget, &c->err);
    return NULL;
}

static void test_close_concurrent_one_stream(void **state) {
    (void)state;
    env e = open_env_busy();
    e.f->answer_delay_ms = 5; /* keep a request in flight so that the callers overlap */
    pthread_barrier_t go;
    pthread_barrier_init(&go, NULL, 2);
    closer c1 = {.s = e.s, .budget = 300, .go = &go}, c2 = c1;
    pthread_t t1, t2;
    pthread_create(&t1, NULL, close_thread, &c1);
    pthread_create(&t2, NULL, close_thread, &c2);
    pthread_join(t1, NULL);
    pthread_join(t2, NULL);
    pthread_barrier_destroy(&go);
    assert_int_equal(c1.rc, PSDK_ERR_SESSION_CLOSE_INCOMPLETE);
    assert_int_equal(c2.rc, PSDK_ERR_SESSION_CLOSE_INCOMPLETE);
    assert_string_equal(c1.err.message, c2.err.message);
    /* One request stream: never two session/close in flight, and no more frames than
     * one 300 ms replay can send (0, 55, 110, ... 300: at most 7). */
    assert_int_equal(e.f->max_inflight, 1);
    assert_true(nclose(e.f) <= 7);

    /* Settling: both callers see success and the frames of one stream. */
    int settle[] = {-32010, -32010, 0};
    script(e.f, 3, settle, NULL);
    pthread_mutex_lock(&e.f->mu);
    e.f->nclose = 0;
    pthread_mutex_unlock(&e.f->mu);
    pthread_barrier_init(&go, NULL, 2);
    c1.budget = c2.budget = 3000;
    pthread_create(&t1, NULL, close_thread, &c1);
    pthread_create(&t2, NULL, close_thread, &c2);
    pthread_join(t1, NULL);
    pthread_join(t2, NULL);
    pthread_barrier_destroy(&go);
    assert_int_equal(c1.rc, PSDK_OK);
    assert_int_equal(c2.rc, PSDK_OK);
    /* Either the second caller joined (3 frames) or arrived after the close settled
     * (closed: nothing more sent). Never a second stream. */
    assert_int_equal(nclose(e.f), 3);
    assert_int_equal(e.f->max_inflight, 1);
    close_env(&e);
}

/* ---------------------------------------------------------------- prompt, callbacks */

typedef struct seen {
    char text[64];
    int updates;
    bool on_reader;
    pthread_t caller;
    psdk_session *s;
    psdk_status close_from_cb;
} seen;

static void cb_update(void *ctx, const psdk_update *u) {
    seen *s = ctx;
    s->updates++;
    if (!pthread_equal(pthread_self(), s->caller)) s->on_reader = true;
    if (u->text && !strcmp(u->kind, "agent_message_chunk"))
        strncat(s->text, u->text, sizeof s->text - strlen(s->text) - 1);
}

static psdk_decision cb_perm(void *ctx, const psdk_permission_request *r) {
    seen *s = ctx;
    assert_string_equal(r->tool_call_id, "c1");
    assert_string_equal(r->title, "write x");
    psdk_error err;
    s->close_from_cb = psdk_session_close(s->s, 0, &err); /* would deadlock: refused */
    return PSDK_ALLOW;
}

static void test_prompt_callbacks(void **state) {
    (void)state;
    fake *f = fake_new();
    psdk_sandbox_options o = {.transport_factory = fake_factory, .factory_ctx = f};
    psdk_error err;
    psdk_sandbox *sb = psdk_sandbox_new(&o, &err);
    psdk_agent *a = psdk_agent_connect(sb, "rel/../odd path", &err);
    seen sn = {.caller = pthread_self()};
    psdk_handlers h = {.ctx = &sn, .on_update = cb_update, .on_permission = cb_perm};
    assert_int_equal(psdk_agent_initialize(a, NULL, 0, &err), PSDK_OK);
    psdk_session *s = psdk_session_new(a, NULL, &h, &err);
    assert_non_null(s);
    sn.s = s;
    char stop[32];
    assert_int_equal(psdk_session_prompt(s, "hi", stop, sizeof stop, &err), PSDK_OK);
    assert_string_equal(stop, "end_turn");
    assert_string_equal(sn.text, "hello");
    assert_true(sn.updates >= 3); /* available_commands_update + two chunks */
    assert_true(sn.on_reader);
    assert_int_equal(sn.close_from_cb, PSDK_ERR_STATE);
    assert_string_equal(f->perm_answer, "{\"optionId\":\"yes\",\"outcome\":\"selected\"}");
    assert_int_equal(psdk_session_cancel(s, &err), PSDK_OK);
    psdk_agent_free(a);
    psdk_sandbox_free(sb);
    assert_int_equal(f->ncancel, 1);
    free(f);
}

/* ---------------------------------------------------------------- permission answers */

/* The agent's project-trust question: only trust_project (kind allow_always), no allow_once. */
#define TRUST_REQUEST                                                                              \
    "{\"sessionId\":\"s-1\",\"toolCall\":{\"toolCallId\":\"peri-trust-0123\","                     \
    "\"title\":\"Trust?\",\"_meta\":{\"peri.trustRequest\":{\"project\":\"/p\"}}},"                \
    "\"options\":[{\"optionId\":\"trust_project\",\"kind\":\"allow_always\"},"                     \
    "{\"optionId\":\"reject_once\",\"kind\":\"reject_once\"}]}"
/* A tool's request as the agent sends it, an "always" option first. */
#define TOOL_REQUEST                                                                               \
    "{\"sessionId\":\"s-1\",\"toolCall\":{\"toolCallId\":\"c1\",\"title\":\"write x\"},"           \
    "\"options\":[{\"optionId\":\"always\",\"kind\":\"allow_always\"},"                            \
    "{\"optionId\":\"once\",\"kind\":\"allow_once\"},"                                             \
    "{\"optionId\":\"always_project\",\"kind\":\"allow_always\"},"                                 \
    "{\"optionId\":\"no\",\"kind\":\"reject_once\"},"                                              \
    "{\"optionId\":\"never\",\"kind\":\"reject_always\"}]}"

typedef struct decide {
    psdk_decision d;
    int asked;
    bool trust_request;
} decide;

static psdk_decision cb_decide(void *ctx, const psdk_permission_request *r) {
    decide *dc = ctx;
    dc->asked++;
    dc->trust_request = r->trust_request;
    return dc->d;
}

/* One prompt whose permission request has these params, answered by a handler that
 * always decides d: the SDK's answer (the outcome object) must be want. */
static void answer_to(const char *params, psdk_decision d, bool trust, const char *want) {
    fake *f = fake_new();
    f->perm_params = params;
    psdk_sandbox_options o = {.transport_factory = fake_factory, .factory_ctx = f};
    psdk_error err;
    psdk_sandbox *sb = psdk_sandbox_new(&o, &err);
    psdk_agent *a = psdk_agent_connect(sb, "rel/../odd path", &err);
    decide dc = {.d = d};
    psdk_handlers h = {.ctx = &dc, .on_permission = cb_decide};
    assert_int_equal(psdk_agent_initialize(a, NULL, 0, &err), PSDK_OK);
    psdk_session *s = psdk_session_new(a, NULL, &h, &err);
    assert_non_null(s);
    char stop[32];
    assert_int_equal(psdk_session_prompt(s, "hi", stop, sizeof stop, &err), PSDK_OK);
    assert_int_equal(dc.asked, 1);
    assert_int_equal(dc.trust_request, trust);
    assert_string_equal(f->perm_answer, want);
    psdk_agent_free(a);
    psdk_sandbox_free(sb);
    free(f);
}

#define SELECTED(id) "{\"optionId\":\"" id "\",\"outcome\":\"selected\"}"

/* ALLOW is "allow once": it never selects an "always" option and never trusts a project. */
static void test_allow_is_once(void **state) {
    (void)state;
    answer_to(TRUST_REQUEST, PSDK_ALLOW, true, SELECTED("reject_once"));
    answer_to(TOOL_REQUEST, PSDK_ALLOW, false, SELECTED("once"));
    /* no allow_once offered (and no trust marker): rejected, not "always" */
    answer_to("{\"sessionId\":\"s-1\",\"toolCall\":{\"toolCallId\":\"c1\"},\"options\":["
              "{\"optionId\":\"always\",\"kind\":\"allow_always\"},"
              "{\"optionId\":\"never\",\"kind\":\"reject_always\"}]}",
              PSDK_ALLOW, false, SELECTED("never"));
    /* a trust request that also offered allow_once is still not answered by ALLOW */
    answer_to("{\"sessionId\":\"s-1\",\"toolCall\":{\"toolCallId\":\"c1\",\"_meta\":{"
              "\"peri.trustRequest\":{}}},\"options\":[{\"optionId\":\"once\",\"kind\":"
              "\"allow_once\"},{\"optionId\":\"no\",\"kind\":\"reject_once\"}]}",
              PSDK_ALLOW, true, SELECTED("no"));
    /* nothing to reject with: cancelled */
    answer_to("{\"sessionId\":\"s-1\",\"toolCall\":{\"toolCallId\":\"c1\"},\"options\":["
              "{\"optionId\":\"always\",\"kind\":\"allow_always\"}]}",
              PSDK_ALLOW, false, "{\"outcome\":\"cancelled\"}");
}

/* Only PSDK_TRUST_PROJECT accepts a trust request, and it accepts nothing else. */
static void test_trust_project_decision(void **state) {
    (void)state;
    answer_to(TRUST_REQUEST, PSDK_TRUST_PROJECT, true, SELECTED("trust_project"));
    answer_to(TOOL_REQUEST, PSDK_TRUST_PROJECT, false, SELECTED("no"));
    answer_to(TRUST_REQUEST, PSDK_REJECT, true, SELECTED("reject_once"));
    answer_to(TRUST_REQUEST, PSDK_CANCELLED, true, "{\"outcome\":\"cancelled\"}");
    answer_to(TOOL_REQUEST, PSDK_REJECT, false, SELECTED("no"));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_factory_required),
        cmocka_unit_test(test_initialize_version),
        cmocka_unit_test(test_close_settles_after_replays),
        cmocka_unit_test(test_close_cadence_and_exhaustion),
        cmocka_unit_test(test_close_last_sleep_is_remaining),
        cmocka_unit_test(test_close_budget_zero),
        cmocka_unit_test(test_close_negative_budget),
        cmocka_unit_test(test_close_other_error_unchanged),
        cmocka_unit_test(test_close_two_causes),
        cmocka_unit_test(test_close_transport_end),
        cmocka_unit_test(test_close_answer_timeout),
        cmocka_unit_test(test_close_concurrent_one_stream),
        cmocka_unit_test(test_prompt_callbacks),
        cmocka_unit_test(test_allow_is_once),
        cmocka_unit_test(test_trust_project_decision),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
