/*
 * client.c — the SDK core: the sandbox (a required transport factory and the
 * explicit host inputs), the agent connection (one reader thread that routes
 * answers, session/update and session/request_permission), requests with bounded
 * answer waits, and the session calls other than close (close.c).
 *
 * Invariants: the SDK never resolves a path (it is forwarded as given), never reads
 * the environment, and never starts a process (only the stdio helper does). A pj_t
 * is handed from the reader to exactly one waiter; no pj_t is shared across threads.
 */
#include "peri/rpc.h"
#include "sdk/sdk_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static char *dup_or_null(const char *s) {
    return s ? strdup(s) : NULL;
}

/* ---------------------------------------------------------------- sandbox */

psdk_sandbox *psdk_sandbox_new(const psdk_sandbox_options *opt, psdk_error *err) {
    psdk__ok(err);
    if (!opt || !opt->transport_factory) {
        psdk__fail(err, PSDK_ERR_ARG, "transportFactory is required");
        return NULL;
    }
    psdk_sandbox *sb = calloc(1, sizeof *sb);
    if (!sb) goto oom;
    sb->factory = opt->transport_factory;
    sb->factory_ctx = opt->factory_ctx;
    sb->answer_timeout_ms = opt->answer_timeout_ms > 0 ? opt->answer_timeout_ms : 30000;
    sb->store_locator = dup_or_null(opt->store_locator);
    sb->credential = dup_or_null(opt->credential);
    sb->machine_id = dup_or_null(opt->machine_id);
    if ((opt->store_locator && !sb->store_locator) || (opt->credential && !sb->credential) ||
        (opt->machine_id && !sb->machine_id)) {
        psdk_sandbox_free(sb);
        goto oom;
    }
    return sb;
oom:
    psdk__fail(err, PSDK_ERR_NOMEM, "out of memory");
    return NULL;
}

void psdk_sandbox_free(psdk_sandbox *sb) {
    if (!sb) return;
    free(sb->store_locator);
    if (sb->credential) memset(sb->credential, 0, strlen(sb->credential));
    free(sb->credential);
    free(sb->machine_id);
    free(sb);
}

/* ---------------------------------------------------------------- sending */

static int send_json(psdk_agent *a, pj_t *frame) {
    size_t n = 0;
    char *text = pb_rpc_encode(frame, false, &n);
    pj_decref(frame);
    if (!text) return -1;
    pthread_mutex_lock(&a->send_mu);
    int rc = a->t->send(a->t, text, n);
    pthread_mutex_unlock(&a->send_mu);
    free(text);
    return rc;
}

bool psdk__on_reader(psdk_agent *a) {
    pthread_mutex_lock(&a->mu);
    bool on = a->reader_started && pthread_equal(pthread_self(), a->reader);
    pthread_mutex_unlock(&a->mu);
    return on;
}

void psdk__wake_locked(psdk_agent *a) {
    pthread_cond_broadcast(&a->cv);
}

static void unlink_call(psdk_agent *a, psdk_call *c) {
    for (psdk_call **p = &a->calls; *p; p = &(*p)->next) {
        if (*p == c) {
            *p = c->next;
            return;
        }
    }
}

static psdk_status rpc_ex(psdk_agent *a, const char *method, pj_t *params, long timeout_ms,
                          psdk_session *prompt_of, psdk_session *adopt, pj_t **result,
                          psdk_error *err) {
    psdk__ok(err);
    if (result) *result = NULL;
    if (psdk__on_reader(a)) {
        pj_decref(params);
        return psdk__fail(err, PSDK_ERR_STATE,
                          "%s called from an SDK callback (the reader thread) would deadlock",
                          method);
    }
    psdk_call *c = calloc(1, sizeof *c);
    if (!params || !c) {
        pj_decref(params);
        free(c);
        return psdk__fail(err, PSDK_ERR_NOMEM, "out of memory");
    }
    c->sess = prompt_of;
    c->adopt = adopt;
    pthread_mutex_lock(&a->mu);
    if (a->ended) {
        pthread_mutex_unlock(&a->mu);
        pj_decref(params);
        free(c);
        return psdk__fail(err, PSDK_ERR_TRANSPORT, "transport closed: %s", a->end_msg);
    }
    c->id = ++a->next_id;
    c->next = a->calls;
    a->calls = c;
    pthread_mutex_unlock(&a->mu);

    pj_t *frame = pb_rpc_request((pj_int_t)c->id, method, params);
    if (send_json(a, frame) != 0) {
        pthread_mutex_lock(&a->mu);
        unlink_call(a, c);
        pthread_mutex_unlock(&a->mu);
        free(c);
        return psdk__fail(err, PSDK_ERR_TRANSPORT, "cannot send %s: the transport failed", method);
    }

    struct timespec dl;
    if (timeout_ms >= 0) {
        dl = pb_deadline(CLOCK_MONOTONIC, timeout_ms);
    }
    pthread_mutex_lock(&a->mu);
    bool timed_out = false;
    while (!c->done && !a->ended && !(prompt_of && prompt_of->closed)) {
        if (timeout_ms < 0) {
            pthread_cond_wait(&a->cv, &a->mu);
        } else if (pthread_cond_timedwait(&a->cv, &a->mu, &dl) == ETIMEDOUT) {
            timed_out = !c->done;
            break;
        }
    }
    unlink_call(a, c);
    psdk_status rc;
    if (c->done) {
        if (c->result) {
            rc = PSDK_OK;
            if (result)
                *result = c->result;
            else
                pj_decref(c->result);
        } else {
            rc = c->err.status;
            if (err) *err = c->err;
        }
    } else if (prompt_of && prompt_of->closed) {
        /* The session settled on the host while the turn was waiting: it ended. */
        rc = PSDK_OK;
        if (result) *result = pj_pack("{s:s}", "stopReason", "cancelled");
    } else if (timed_out) {
        rc = psdk__fail(err, PSDK_ERR_TIMEOUT, "no answer to %s within %ld ms", method, timeout_ms);
    } else {
        rc = psdk__fail(err, PSDK_ERR_TRANSPORT, "transport closed: %s", a->end_msg);
    }
    pthread_mutex_unlock(&a->mu);
    free(c);
    return rc;
}

psdk_status psdk__rpc(psdk_agent *a, const char *method, pj_t *params, long timeout_ms,
                      psdk_session *prompt_of, pj_t **result, psdk_error *err) {
    return rpc_ex(a, method, params, timeout_ms, prompt_of, NULL, result, err);
}

/* ---------------------------------------------------------------- the reader */

/* Copies the handlers of the first linked session with this id (under a->mu). */
static bool find_handlers(psdk_agent *a, const char *sid, psdk_handlers *out) {
    bool found = false;
    pthread_mutex_lock(&a->mu);
    for (psdk_session *s = a->sessions; sid && s; s = s->next) {
        if (s->linked && !strcmp(s->id, sid)) {
            *out = s->h;
            found = true;
            break;
        }
    }
    pthread_mutex_unlock(&a->mu);
    return found;
}

static void on_update(psdk_agent *a, pj_t *params) {
    const char *sid = pj_string_value(pj_object_get(params, "sessionId"));
    pj_t *u = pj_object_get(params, "update");
    psdk_handlers h;
    if (!pj_is_object(u) || !find_handlers(a, sid, &h) || !h.on_update) return;
    char *text = pj_dumps(u, PJ_COMPACT);
    if (!text) return;
    psdk_update up = {
        .session_id = sid,
        .kind = pj_string_value(pj_object_get(u, "sessionUpdate")),
        .text = pj_string_value(pj_object_get(pj_object_get(u, "content"), "text")),
        .json = text,
    };
    h.on_update(h.ctx, &up);
    free(text);
}

/* The optionId of the first option of kind k1, else of kind k2 (may be NULL), or NULL. */
static const char *option_of(pj_t *options, const char *k1, const char *k2) {
    const char *kinds[2] = {k1, k2};
    for (int i = 0; i < 2 && kinds[i]; i++) {
        size_t j;
        pj_t *o;
        pj_array_foreach(options, j, o) {
            const char *kind = pj_string_value(pj_object_get(o, "kind"));
            const char *id = pj_string_value(pj_object_get(o, "optionId"));
            if (kind && id && !strcmp(kind, kinds[i])) return id;
        }
    }
    return NULL;
}

/* optionId if one of the options has it, or NULL. */
static const char *option_id(pj_t *options, const char *optid) {
    size_t j;
    pj_t *o;
    pj_array_foreach(options, j, o) {
        const char *id = pj_string_value(pj_object_get(o, "optionId"));
        if (id && !strcmp(id, optid)) return id;
    }
    return NULL;
}

/* The option a decision selects, or NULL for outcome "cancelled". ALLOW means "allow
 * once": it selects only an allow_once option, never an "always" one, and never answers
 * a trust request (whose only "allow" option records trust for good). Trust is given
 * only by the decision that names it. Anything else is a rejection. */
static const char *answer_of(pj_t *options, psdk_decision d, bool trust) {
    const char *opt = NULL;
    if (d == PSDK_CANCELLED) return NULL;
    if (d == PSDK_ALLOW && !trust) opt = option_of(options, "allow_once", NULL);
    if (d == PSDK_TRUST_PROJECT && trust) opt = option_id(options, "trust_project");
    return opt ? opt : option_of(options, "reject_once", "reject_always");
}

static void on_permission(psdk_agent *a, pj_t *id, pj_t *params) {
    const char *sid = pj_string_value(pj_object_get(params, "sessionId"));
    pj_t *tc = pj_object_get(params, "toolCall");
    bool trust = pj_object_get(pj_object_get(tc, "_meta"), "peri.trustRequest") != NULL;
    psdk_handlers h;
    psdk_decision d = PSDK_REJECT;
    if (find_handlers(a, sid, &h) && h.on_permission) {
        char *text = pj_dumps(params, PJ_COMPACT);
        psdk_permission_request r = {
            .session_id = sid,
            .tool_call_id = pj_string_value(pj_object_get(tc, "toolCallId")),
            .title = pj_string_value(pj_object_get(tc, "title")),
            .json = text ? text : "{}",
            .trust_request = trust,
        };
        d = h.on_permission(h.ctx, &r);
        free(text);
    }
    const char *opt = answer_of(pj_object_get(params, "options"), d, trust);
    pj_t *outcome = opt ? pj_pack("{s:s, s:s}", "outcome", "selected", "optionId", opt)
                        : pj_pack("{s:s}", "outcome", "cancelled");
    send_json(a, pb_rpc_result(id, outcome ? pj_pack("{s:o}", "outcome", outcome) : NULL));
}

static void on_response(psdk_agent *a, const pb_rpc_msg *m) {
    if (!pj_is_integer(m->id)) return; /* the SDK's own requests have integer ids */
    pj_int_t id = pj_integer_value(m->id);
    pj_t *res = m->result;
    pj_t *errv = m->error;
    pthread_mutex_lock(&a->mu);
    for (psdk_call *c = a->calls; c; c = c->next) {
        if (c->id != id || c->done) continue;
        if (pj_is_object(errv)) {
            pj_t *code = pj_object_get(errv, "code");
            const char *msg = pj_string_value(pj_object_get(errv, "message"));
            psdk__fail(&c->err, PSDK_ERR_RPC, "%s", msg ? msg : "(no message)");
            c->err.rpc_code = pj_is_integer(code) ? (int)pj_integer_value(code) : 0;
        } else if (!res) {
            psdk__fail(&c->err, PSDK_ERR_PROTOCOL, "an answer with neither result nor error");
        } else if (c->adopt) {
            const char *sid = pj_string_value(pj_object_get(res, "sessionId"));
            if (!sid || strlen(sid) >= sizeof c->adopt->id) {
                psdk__fail(&c->err, PSDK_ERR_PROTOCOL, "session/new answered without sessionId");
            } else {
                /* Linked here, before the next frame is read, so that updates that follow
                 * the answer (available_commands_update) reach the session. */
                snprintf(c->adopt->id, sizeof c->adopt->id, "%s", sid);
                c->adopt->linked = true;
                c->adopt->next = a->sessions;
                a->sessions = c->adopt;
                c->result = pj_incref(res);
            }
        } else {
            c->result = pj_incref(res);
        }
        c->done = true;
        pthread_cond_broadcast(&a->cv);
        break;
    }
    pthread_mutex_unlock(&a->mu);
}

static void on_frame(psdk_agent *a, const char *text, size_t len) {
    pb_rpc_msg m;
    pb_rpc_decode(text, len, PB_RPC_ACP_RULES, &m);
    switch (m.kind) {
    case PB_RPC_REQUEST:
        if (!strcmp(m.method, "session/request_permission"))
            on_permission(a, m.id, m.params);
        else
            send_json(a, pb_rpc_error(m.id, PB_RPC_METHOD_NOT_FOUND, "Method not found", NULL));
        break;
    case PB_RPC_NOTIFICATION:
        if (!strcmp(m.method, "session/update")) on_update(a, m.params);
        break;
    case PB_RPC_RESPONSE: on_response(a, &m); break;
    case PB_RPC_INVALID: break; /* not a JSON-RPC message: ignored */
    }
    pb_rpc_clear(&m);
}

static void *reader_main(void *arg) {
    psdk_agent *a = arg;
    /* Known before any frame is handled, so callbacks are recognised as such. */
    pthread_mutex_lock(&a->mu);
    a->reader = pthread_self();
    a->reader_started = true;
    pthread_mutex_unlock(&a->mu);
    const char *why = "end of stream";
    for (;;) {
        char *frame = NULL;
        size_t len = 0;
        int r = a->t->recv(a->t, &frame, &len);
        if (r != 0) {
            if (r < 0) why = "receive failed";
            break;
        }
        on_frame(a, frame, len);
        free(frame);
    }
    pthread_mutex_lock(&a->mu);
    a->ended = true;
    snprintf(a->end_msg, sizeof a->end_msg, "%s", why);
    pthread_cond_broadcast(&a->cv);
    pthread_mutex_unlock(&a->mu);
    return NULL;
}

/* ---------------------------------------------------------------- agent */

psdk_agent *psdk_agent_connect(psdk_sandbox *sb, const char *path, psdk_error *err) {
    psdk__ok(err);
    if (!sb) {
        psdk__fail(err, PSDK_ERR_ARG, "no sandbox");
        return NULL;
    }
    psdk_agent *a = calloc(1, sizeof *a);
    if (!a || (path && !(a->path = strdup(path)))) {
        free(a);
        psdk__fail(err, PSDK_ERR_NOMEM, "out of memory");
        return NULL;
    }
    a->sb = sb;
    psdk_connect c = {.path = path,
                      .store_locator = sb->store_locator,
                      .credential = sb->credential,
                      .machine_id = sb->machine_id};
    if (sb->factory(sb->factory_ctx, &c, &a->t, err) != 0 || !a->t) {
        if (err && err->status == PSDK_OK) psdk__fail(err, PSDK_ERR_TRANSPORT, "factory failed");
        free(a->path);
        free(a);
        return NULL;
    }
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&a->cv, &ca);
    pthread_condattr_destroy(&ca);
    pthread_mutex_init(&a->mu, NULL);
    pthread_mutex_init(&a->send_mu, NULL);
    pthread_t th;
    if (pthread_create(&th, NULL, reader_main, a) != 0) {
        psdk__fail(err, PSDK_ERR_NOMEM, "cannot start the reader thread");
        psdk_agent_free(a);
        return NULL;
    }
    a->joinable = th;
    a->has_reader = true;
    return a;
}

void psdk_agent_free(psdk_agent *a) {
    if (!a) return;
    a->t->close(a->t);
    if (a->has_reader) pthread_join(a->joinable, NULL);
    a->t->free(a->t);
    while (a->sessions) {
        psdk_session *s = a->sessions;
        a->sessions = s->next;
        free(s);
    }
    pthread_mutex_destroy(&a->mu);
    pthread_mutex_destroy(&a->send_mu);
    pthread_cond_destroy(&a->cv);
    free(a->path);
    free(a);
}

psdk_status psdk_agent_initialize(psdk_agent *a, char *agent_info, size_t info_len,
                                  psdk_error *err) {
    if (agent_info && info_len) agent_info[0] = '\0';
    pj_t *meta = pj_object();
    if (meta && a->sb->machine_id)
        pj_object_set_new(meta, "peri.machineId", pj_string(a->sb->machine_id));
    pj_t *params = meta ? pj_pack("{s:i, s:{s:{s:b, s:b}, s:b, s:o}}", "protocolVersion", 1,
                                  "clientCapabilities", "fs", "readTextFile", 0, "writeTextFile", 0,
                                  "terminal", 0, "_meta", meta)
                        : NULL;
    pj_t *res = NULL;
    psdk_status rc = psdk__rpc(a, "initialize", params, a->sb->answer_timeout_ms, NULL, &res, err);
    if (rc != PSDK_OK) return rc;
    pj_t *pv = pj_object_get(res, "protocolVersion");
    if (!pj_is_integer(pv) || pj_integer_value(pv) != 1) {
        char got[64];
        if (pj_is_integer(pv))
            snprintf(got, sizeof got, "%lld", (long long)pj_integer_value(pv));
        else
            snprintf(got, sizeof got, "%s", pv ? "a non-integer" : "none");
        pj_decref(res);
        return psdk__fail(err, PSDK_ERR_PROTOCOL,
                          "unsupported ACP protocol version %s (this SDK speaks 1)", got);
    }
    pj_t *info = pj_object_get(res, "agentInfo");
    const char *name = pj_string_value(pj_object_get(info, "name"));
    const char *ver = pj_string_value(pj_object_get(info, "version"));
    if (agent_info && info_len && name)
        snprintf(agent_info, info_len, "%s%s%s", name, ver ? " " : "", ver ? ver : "");
    pj_decref(res);
    return PSDK_OK;
}

psdk_status psdk_agent_request(psdk_agent *a, const char *method, const char *params_json,
                               char **result_json, psdk_error *err) {
    psdk__ok(err);
    if (result_json) *result_json = NULL;
    if (!a || !method || !*method) return psdk__fail(err, PSDK_ERR_ARG, "a method is required");
    pj_t *params = params_json ? pj_loads(params_json, 0, NULL) : pj_object();
    if (!pj_is_object(params)) {
        pj_decref(params);
        return psdk__fail(err, PSDK_ERR_ARG, "params must be a JSON object");
    }
    pj_t *res = NULL;
    psdk_status rc = psdk__rpc(a, method, params, a->sb->answer_timeout_ms, NULL, &res, err);
    if (rc == PSDK_OK && result_json) {
        *result_json = pj_dumps(res, PJ_COMPACT | PJ_ENCODE_ANY);
        if (!*result_json) rc = psdk__fail(err, PSDK_ERR_NOMEM, "out of memory");
    }
    pj_decref(res);
    return rc;
}

/* ---------------------------------------------------------------- sessions */

static psdk_session *sess_alloc(psdk_agent *a, const psdk_handlers *h, psdk_error *err) {
    psdk_session *s = calloc(1, sizeof *s);
    if (!s) {
        psdk__fail(err, PSDK_ERR_NOMEM, "out of memory");
        return NULL;
    }
    s->a = a;
    if (h) s->h = *h;
    return s;
}

static pj_t *mcp_params(const char *cwd) {
    return cwd ? pj_pack("{s:s, s:[]}", "cwd", cwd, "mcpServers") : pj_pack("{s:[]}", "mcpServers");
}

psdk_session *psdk_session_new(psdk_agent *a, const char *cwd, const psdk_handlers *h,
                               psdk_error *err) {
    psdk__ok(err);
    psdk_session *s = sess_alloc(a, h, err);
    if (!s) return NULL;
    pj_t *res = NULL;
    /* The path goes to the agent exactly as given: it names a place in the agent's
     * environment, which this process may not even see. */
    psdk_status rc = rpc_ex(a, "session/new", mcp_params(cwd ? cwd : a->path),
                            a->sb->answer_timeout_ms, NULL, s, &res, err);
    pj_decref(res);
    if (rc != PSDK_OK) {
        free(s); /* never linked: the reader links only on a successful answer */
        return NULL;
    }
    return s;
}

static void unlink_session(psdk_agent *a, psdk_session *s) {
    for (psdk_session **p = &a->sessions; *p; p = &(*p)->next) {
        if (*p == s) {
            *p = s->next;
            return;
        }
    }
}

static psdk_session *load_or_resume(psdk_agent *a, const char *method, const char *sid,
                                    const char *cwd, const psdk_handlers *h, psdk_error *err) {
    psdk__ok(err);
    if (!sid || !*sid || strlen(sid) >= sizeof((psdk_session *)0)->id) {
        psdk__fail(err, PSDK_ERR_ARG, "a session id is required");
        return NULL;
    }
    if (psdk__on_reader(a)) {
        psdk__fail(err, PSDK_ERR_STATE, "%s called from an SDK callback would deadlock", method);
        return NULL;
    }
    psdk_session *s = sess_alloc(a, h, err);
    if (!s) return NULL;
    snprintf(s->id, sizeof s->id, "%s", sid);
    pj_t *params = mcp_params(cwd ? cwd : a->path);
    if (params) pj_object_set_new(params, "sessionId", pj_string(sid));
    /* Linked first: the history replay arrives before the answer. */
    pthread_mutex_lock(&a->mu);
    s->linked = true;
    s->next = a->sessions;
    a->sessions = s;
    pthread_mutex_unlock(&a->mu);
    psdk_status rc = psdk__rpc(a, method, params, a->sb->answer_timeout_ms, NULL, NULL, err);
    if (rc != PSDK_OK) {
        pthread_mutex_lock(&a->mu);
        unlink_session(a, s);
        pthread_mutex_unlock(&a->mu);
        free(s);
        return NULL;
    }
    return s;
}

psdk_session *psdk_session_load(psdk_agent *a, const char *session_id, const char *cwd,
                                const psdk_handlers *h, psdk_error *err) {
    return load_or_resume(a, "session/load", session_id, cwd, h, err);
}

psdk_session *psdk_session_resume(psdk_agent *a, const char *session_id, const char *cwd,
                                  const psdk_handlers *h, psdk_error *err) {
    return load_or_resume(a, "session/resume", session_id, cwd, h, err);
}

const char *psdk_session_id(const psdk_session *s) {
    return s ? s->id : NULL;
}

bool psdk_session_is_closed(const psdk_session *s) {
    if (!s) return true;
    pthread_mutex_lock(&s->a->mu);
    bool c = s->closed;
    pthread_mutex_unlock(&s->a->mu);
    return c;
}

psdk_status psdk_agent_list(psdk_agent *a, const char *cwd, const char *cursor,
                            psdk_session_list *out, psdk_error *err) {
    memset(out, 0, sizeof *out);
    pj_t *params = pj_object();
    if (params && cwd) pj_object_set_new(params, "cwd", pj_string(cwd));
    if (params && cursor) pj_object_set_new(params, "cursor", pj_string(cursor));
    pj_t *res = NULL;
    psdk_status rc =
        psdk__rpc(a, "session/list", params, a->sb->answer_timeout_ms, NULL, &res, err);
    if (rc != PSDK_OK) return rc;
    pj_t *arr = pj_object_get(res, "sessions");
    size_t n = pj_array_size(arr);
    out->items = calloc(n ? n : 1, sizeof *out->items);
    if (!out->items) goto oom;
    for (size_t i = 0; i < n; i++) {
        pj_t *o = pj_array_get(arr, i);
        const char *id = pj_string_value(pj_object_get(o, "sessionId"));
        const char *c = pj_string_value(pj_object_get(o, "cwd"));
        const char *t = pj_string_value(pj_object_get(o, "title"));
        if (!id) continue;
        psdk_session_info *it = &out->items[out->count++];
        snprintf(it->id, sizeof it->id, "%s", id);
        if ((c && !(it->cwd = strdup(c))) || (t && !(it->title = strdup(t)))) goto oom;
    }
    const char *nc = pj_string_value(pj_object_get(res, "nextCursor"));
    if (nc && !(out->next_cursor = strdup(nc))) goto oom;
    pj_decref(res);
    return PSDK_OK;
oom:
    pj_decref(res);
    psdk_session_list_clear(out);
    return psdk__fail(err, PSDK_ERR_NOMEM, "out of memory");
}

void psdk_session_list_clear(psdk_session_list *l) {
    for (size_t i = 0; l->items && i < l->count; i++) {
        free(l->items[i].cwd);
        free(l->items[i].title);
    }
    free(l->items);
    free(l->next_cursor);
    memset(l, 0, sizeof *l);
}

psdk_status psdk_session_prompt(psdk_session *s, const char *text, char *stop_reason,
                                size_t stop_len, psdk_error *err) {
    psdk__ok(err);
    if (stop_reason && stop_len) stop_reason[0] = '\0';
    if (!s || !text) return psdk__fail(err, PSDK_ERR_ARG, "a session and a text are required");
    if (psdk_session_is_closed(s)) return psdk__fail(err, PSDK_ERR_STATE, "the session is closed");
    pj_t *params = pj_pack("{s:s, s:[{s:s, s:s}]}", "sessionId", s->id, "prompt", "type", "text",
                           "text", text);
    pj_t *res = NULL;
    psdk_status rc = psdk__rpc(s->a, "session/prompt", params, -1, s, &res, err);
    if (rc != PSDK_OK) return rc;
    const char *sr = pj_string_value(pj_object_get(res, "stopReason"));
    if (stop_reason && stop_len) snprintf(stop_reason, stop_len, "%s", sr ? sr : "");
    pj_decref(res);
    return PSDK_OK;
}

psdk_status psdk_session_cancel(psdk_session *s, psdk_error *err) {
    psdk__ok(err);
    if (!s) return psdk__fail(err, PSDK_ERR_ARG, "no session");
    pj_t *f = pb_rpc_notification("session/cancel", pj_pack("{s:s}", "sessionId", s->id));
    if (send_json(s->a, f) != 0)
        return psdk__fail(err, PSDK_ERR_TRANSPORT, "cannot send session/cancel");
    return PSDK_OK;
}
