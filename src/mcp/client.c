/*
 * client.c — the MCP client: request/response matching over any link, the
 * initialize handshake with version negotiation, tools/list with pagination,
 * tools/call with progress and cancellation, list_changed tracking, and answers to
 * the server's own requests: ping; elicitation/create when the host gave an elicit
 * callback (then, and only then, initialize declares the elicitation capability): one
 * at a time (PMCP_MAX_ELICITS), and only while a tools/call to that server is waiting
 * for its answer; any other (during initialize or a listing, a second one while one is
 * open) is answered {"action":"decline"} at once without asking anyone. An accepted one
 * runs on a thread of its own, ends when the server cancels it, when no tools/call is
 * in flight any more or when the client closes (close waits for them), and answers the
 * server once; everything else: method not found (no roots or sampling capability is
 * declared). A listing keeps at most PMCP_MAX_TOOLS tools and PMCP_MAX_LIST_BYTES of
 * their text: a longer one fails (the previous list stays), as in the event-driven
 * client.
 *
 * Invariants: ids are integers we allocate; a response whose id is unknown, a string,
 * or a duplicate is dropped (logged) and never completes the wrong waiter; a waiter
 * gives up on cancel, timeout or close and then sends notifications/cancelled; once
 * the link reports closed every waiter fails fast. Decoded frames are handed from the
 * reader thread to exactly one waiter (single owner).
 */
#include "mcp/mcp_int.h"
#include "mcp/oauth_int.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

typedef struct pending {
    struct pending *next;
    pj_int_t id;
    bool done;
    pj_t *resp; /* owned once done: the response frame */
    pmcp_progress_fn progress;
    void *pctx;
    bool may_elicit; /* a tools/call still waited for: the server may ask the user */
} pending;

typedef struct elicitation { /* one elicitation/create being answered (mu) */
    struct elicitation *next;
    struct pmcp_client *c;
    pj_t *id; /* the server's request id */
    char *params;
    atomic_int cancel;
} elicitation;

struct pmcp_client {
    pmcp__link *link;
    char *name;
    pthread_mutex_t mu; /* everything below */
    pthread_cond_t cv;
    pj_int_t next_id;
    pending *pending;
    bool closed;
    char closed_why[256];
    atomic_bool tools_changed; /* a list_changed came since the last listing */
    pmcp_tool *tools;
    size_t ntools;
    char protocol[32];
    char *caps_json;
    long call_timeout_ms;
    bool has_tools;
    pb_logger log;
    pmcp__auth *auth; /* http with OAuth: the tokens of the server's URL (owned) */
    char *(*elicit)(void *ctx, const char *server, const char *params_json, atomic_int *cancel);
    void *elicit_ctx;
    elicitation *elicits; /* being answered (mu); close waits until none is left */
    size_t nelicits;      /* how many (mu), at most PMCP_MAX_ELICITS */
    bool elicit_refused;  /* a refusal was logged (mu): later ones are not */
};

/* ---------------------------------------------------------------- tools */

void pmcp__tool_free(pmcp_tool *t) {
    free(t->name);
    free(t->title);
    free(t->description);
    free(t->schema_json);
}

int pmcp__tool_copy(pmcp_tool *d, const pmcp_tool *s) {
    d->name = strdup(s->name);
    d->title = s->title ? strdup(s->title) : NULL;
    d->description = strdup(s->description);
    d->schema_json = strdup(s->schema_json);
    d->read_only = s->read_only;
    return d->name && d->description && d->schema_json ? 0 : -1;
}

void pmcp_tools_free(pmcp_tool *t, size_t n) {
    for (size_t i = 0; t && i < n; i++)
        pmcp__tool_free(&t[i]);
    free(t);
}

/* ---------------------------------------------------------------- link callbacks */

static void send_json(pmcp_client *c, pj_t *frame) {
    size_t n;
    char *t = pb_rpc_encode(frame, false, &n);
    if (t) c->link->send(c->link, t, n);
    free(t);
    pj_decref(frame);
}

static void on_notification(pmcp_client *c, pb_rpc_msg *m) {
    if (!strcmp(m->method, "notifications/cancelled")) {
        /* the server gave up one of its requests: an open question ends */
        pj_t *rid = pj_object_get(m->params, "requestId");
        pthread_mutex_lock(&c->mu);
        for (elicitation *e = c->elicits; rid && e; e = e->next)
            if (pj_equal(e->id, rid)) atomic_store(&e->cancel, 1);
        pthread_mutex_unlock(&c->mu);
    } else if (!strcmp(m->method, "notifications/progress")) {
        pj_t *tok = pj_object_get(m->params, "progressToken");
        if (!pj_is_integer(tok)) return;
        pj_int_t id = pj_integer_value(tok);
        double progress = pj_number_value(pj_object_get(m->params, "progress"));
        double total = pj_number_value(pj_object_get(m->params, "total"));
        const char *msg = pj_string_value(pj_object_get(m->params, "message"));
        pthread_mutex_lock(&c->mu);
        for (pending *p = c->pending; p; p = p->next)
            if (p->id == id && !p->done && p->progress) p->progress(p->pctx, progress, total, msg);
        pthread_mutex_unlock(&c->mu);
    } else if (!strcmp(m->method, "notifications/tools/list_changed")) {
        atomic_store(&c->tools_changed, true);
    } else if (!strcmp(m->method, "notifications/message")) {
        pmcp__log_message(&c->log, c->name, m->params);
    }
    /* others (resources/updated, cancelled of server requests, ...) need no action */
}

/* ---------------------------------------------------------------- elicitation */

static void *elicit_main(void *arg) {
    elicitation *e = arg;
    pmcp_client *c = e->c;
    char *ans = c->elicit(c->elicit_ctx, c->name, e->params, &e->cancel);
    pj_t *res = ans ? pj_loads(ans, 0, NULL) : NULL;
    free(ans);
    const char *action = pj_string_value(pj_object_get(res, "action"));
    if (!action ||
        (strcmp(action, "accept") && strcmp(action, "decline") && strcmp(action, "cancel"))) {
        pj_decref(res);
        res = pj_pack("{s:s}", "action", "decline");
    }
    if (res && !atomic_load(&e->cancel))
        send_json(c, pb_rpc_result(e->id, res));
    else
        pj_decref(res);
    pthread_mutex_lock(&c->mu);
    for (elicitation **p = &c->elicits; *p; p = &(*p)->next)
        if (*p == e) {
            *p = e->next;
            c->nelicits--;
            break;
        }
    pthread_cond_broadcast(&c->cv);
    pthread_mutex_unlock(&c->mu);
    pj_decref(e->id);
    free(e->params);
    free(e);
    return NULL;
}

/* True when one of our tools/call requests is still waited for (c->mu held). */
static bool call_in_flight(const pmcp_client *c) {
    for (const pending *p = c->pending; p; p = p->next)
        if (p->may_elicit && !p->done) return true;
    return false;
}

/* A server's elicitation/create: answered from a thread of its own (the reader must
 * stay free for the tool call it belongs to), when a tools/call is in flight and no
 * other question of this server is open; otherwise declined at once. */
static void start_elicitation(pmcp_client *c, pb_rpc_msg *m) {
    pthread_mutex_lock(&c->mu);
    const char *why = c->closed                         ? NULL
                      : c->nelicits >= PMCP_MAX_ELICITS ? "another one is still open"
                      : !call_in_flight(c)              ? "no tool call is in flight"
                                                        : "";
    bool log_it = why && *why && !c->elicit_refused;
    if (log_it) c->elicit_refused = true;
    pthread_mutex_unlock(&c->mu);
    if (why && *why) {
        if (log_it)
            pb_log(&c->log, PB_LOG_WARN,
                   "mcp[%s]: declined an elicitation/create (%s); later refusals are not logged",
                   c->name, why);
        send_json(c, pb_rpc_result(m->id, pj_pack("{s:s}", "action", "decline")));
        return;
    }
    elicitation *e = calloc(1, sizeof *e);
    char *params = pj_dumps(m->params ? m->params : pj_object(), PJ_COMPACT);
    pthread_t th;
    pthread_attr_t at;
    bool ok = e && params && pthread_attr_init(&at) == 0;
    if (ok) {
        e->c = c;
        e->id = pj_incref(m->id);
        e->params = params;
        atomic_init(&e->cancel, 0);
        pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
        pthread_mutex_lock(&c->mu);
        /* checked again: only the reader starts questions, but a call may have ended */
        ok = !c->closed && c->nelicits < PMCP_MAX_ELICITS && call_in_flight(c);
        if (ok) {
            e->next = c->elicits;
            c->elicits = e;
            c->nelicits++;
            ok = pthread_create(&th, &at, elicit_main, e) == 0;
            if (!ok) {
                c->elicits = e->next;
                c->nelicits--;
            }
        }
        pthread_mutex_unlock(&c->mu);
        pthread_attr_destroy(&at);
        if (ok) return;
        pj_decref(e->id);
    }
    free(e);
    free(params);
    send_json(c, pb_rpc_result(m->id, pj_pack("{s:s}", "action", "decline")));
}

static void on_frame(void *ctx, const char *text, size_t len) {
    pmcp_client *c = ctx;
    pb_rpc_msg m;
    pb_rpc_decode(text, len, NULL, &m);
    switch (m.kind) {
    case PB_RPC_INVALID: {
        char why[160];
        pb_rpc_invalid_text(&m, why, sizeof why);
        pb_log(&c->log, PB_LOG_WARN, "mcp[%s]: ignored a malformed frame (%s)", c->name, why);
        if (m.id && pj_object_get(m.root, "method"))
            send_json(c, pb_rpc_error(m.id, m.err_code, why, NULL));
        break;
    }
    case PB_RPC_NOTIFICATION: on_notification(c, &m); break;
    case PB_RPC_REQUEST:
        if (!strcmp(m.method, "elicitation/create") && c->elicit)
            start_elicitation(c, &m);
        else
            send_json(c, pmcp__default_answer(&m));
        break;
    case PB_RPC_RESPONSE: {
        bool matched = false;
        if (pj_is_integer(m.id)) {
            pj_int_t id = pj_integer_value(m.id);
            pthread_mutex_lock(&c->mu);
            for (pending *p = c->pending; p; p = p->next) {
                if (p->id == id && !p->done) {
                    p->resp = m.root;
                    m.root = NULL;
                    p->done = true;
                    matched = true;
                    pthread_cond_broadcast(&c->cv);
                    break;
                }
            }
            pthread_mutex_unlock(&c->mu);
        }
        if (!matched)
            pb_log(&c->log, PB_LOG_WARN, "mcp[%s]: dropped a response with an unknown id", c->name);
        break;
    }
    }
    pb_rpc_clear(&m);
}

static void on_closed(void *ctx, const char *why) {
    pmcp_client *c = ctx;
    pthread_mutex_lock(&c->mu);
    c->closed = true;
    snprintf(c->closed_why, sizeof c->closed_why, "%s", why ? why : "connection closed");
    pthread_cond_broadcast(&c->cv);
    pthread_mutex_unlock(&c->mu);
}

/* ---------------------------------------------------------------- requests */

static bool passed(const struct timespec *dl) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return now.tv_sec > dl->tv_sec || (now.tv_sec == dl->tv_sec && now.tv_nsec >= dl->tv_nsec);
}

/* Waits on the client's condition for at most 20 ms (c->mu held). */
static void wait_a_bit(pmcp_client *c) {
    struct timespec ts = pb_deadline(CLOCK_REALTIME, 20);
    pthread_cond_timedwait(&c->cv, &c->mu, &ts);
}

static void unlink_pending(pmcp_client *c, pending *p) {
    for (pending **pp = &c->pending; *pp; pp = &(*pp)->next) {
        if (*pp == p) {
            *pp = p->next;
            break;
        }
    }
}

/* Sends a request and waits. On PMCP_OK *result is the result (new reference); on
 * PMCP_ERR_RPC err holds "MCP error <code>: <message>". linger_ms > 0: after a cancel,
 * waits that long for a late answer (PMCP_CANCELLED with *result set when it came). */
static pmcp_status request_ex(pmcp_client *c, const char *method, pj_t *params, atomic_int *cancel,
                              long timeout_ms, long linger_ms, pmcp_progress_fn progress,
                              void *pctx, pj_t **result, char *err, size_t errlen) {
    *result = NULL;
    pending *p = calloc(1, sizeof *p);
    if (!p) {
        pj_decref(params);
        snprintf(err, errlen, "out of memory");
        return PMCP_ERR_TRANSPORT;
    }
    pthread_mutex_lock(&c->mu);
    if (c->closed) {
        pthread_mutex_unlock(&c->mu);
        free(p);
        pj_decref(params);
        snprintf(err, errlen, "MCP server %s is gone: %s", c->name, c->closed_why);
        return PMCP_ERR_TRANSPORT;
    }
    p->id = ++c->next_id;
    p->progress = progress;
    p->pctx = pctx;
    p->may_elicit = !strcmp(method, "tools/call");
    p->next = c->pending;
    c->pending = p;
    pthread_mutex_unlock(&c->mu);
    if (progress && params) {
        pj_t *meta = pj_object_get(params, "_meta");
        if (!meta) pj_object_set_new(params, "_meta", meta = pj_object());
        pj_object_set_new(meta, "progressToken", pj_integer(p->id));
    }
    pj_t *frame = pb_rpc_request(p->id, method, params);
    size_t n;
    char *text = pb_rpc_encode(frame, false, &n);
    pj_decref(frame);
    /* the peer drops a frame over PMCP_MAX_FRAME, or nesting deeper than a JSON parser
     * such as ours reads (PJ_PARSER_MAX_DEPTH: the builtin server's), and cannot name the
     * request it dropped: sending it would only wait for the timeout (30 days for the
     * builtin server), so it is refused here */
    bool too_big = text && n > PMCP_MAX_FRAME;
    size_t depth = text && !too_big ? pj_text_depth(text, n) : 0;
    bool too_deep = depth > PJ_PARSER_MAX_DEPTH;
    int sent = text && !too_big && !too_deep ? c->link->send(c->link, text, n) : -1;
    free(text);

    struct timespec dl;
    dl = pb_deadline(CLOCK_MONOTONIC, timeout_ms > 0 ? timeout_ms : c->call_timeout_ms);
    pmcp_status st = PMCP_ERR_TRANSPORT;
    pthread_mutex_lock(&c->mu);
    if (too_big)
        snprintf(err, errlen,
                 "the %s request to MCP server %s is %zu bytes, more than the %u an MCP message "
                 "may have",
                 method, c->name, n, PMCP_MAX_FRAME);
    else if (too_deep)
        snprintf(err, errlen,
                 "the %s request to MCP server %s nests %zu levels deep, more than the %d an MCP "
                 "message may have",
                 method, c->name, depth, PJ_PARSER_MAX_DEPTH);
    else if (!text) /* the encoder refuses a value nested deeper still */
        snprintf(err, errlen,
                 "the %s request to MCP server %s could not be encoded (out of memory, or nested "
                 "more than the %d levels an MCP message may have)",
                 method, c->name, PJ_PARSER_MAX_DEPTH);
    else if (sent != 0)
        snprintf(err, errlen, "could not send to MCP server %s", c->name);
    while (sent == 0) {
        if (p->done) {
            st = PMCP_OK;
            break;
        }
        if (c->closed) {
            snprintf(err, errlen, "MCP server %s is gone: %s", c->name, c->closed_why);
            break;
        }
        if (cancel && atomic_load(cancel)) {
            st = PMCP_CANCELLED;
            snprintf(err, errlen, "cancelled");
            break;
        }
        if (passed(&dl)) {
            st = PMCP_TIMEOUT;
            snprintf(err, errlen, "MCP server %s did not answer %s in time", c->name, method);
            break;
        }
        wait_a_bit(c);
    }
    bool closed = c->closed;
    bool linger = st == PMCP_CANCELLED && linger_ms > 0 && !closed;
    if (!linger) unlink_pending(c, p);
    if (p->may_elicit) {
        /* the call is over for us: a question it left open ends with it, unless
         * another call may still be the one it belongs to */
        p->may_elicit = false;
        if (!call_in_flight(c))
            for (elicitation *e = c->elicits; e; e = e->next)
                atomic_store(&e->cancel, 1);
    }
    pthread_mutex_unlock(&c->mu);
    if ((st == PMCP_CANCELLED || st == PMCP_TIMEOUT) && !closed) {
        send_json(c, pb_rpc_notification(
                         "notifications/cancelled",
                         pj_pack("{s:I, s:s}", "requestId", p->id, "reason",
                                 st == PMCP_CANCELLED ? "cancelled by the user" : "timed out")));
    }
    if (linger) {
        /* Our own in-process server still answers a cancelled call with what the tool
         * returned when it stopped (the partial output): wait for it briefly. */
        dl = pb_deadline(CLOCK_MONOTONIC, linger_ms);
        pthread_mutex_lock(&c->mu);
        while (!p->done && !c->closed && !passed(&dl))
            wait_a_bit(c);
        unlink_pending(c, p);
        pthread_mutex_unlock(&c->mu);
        if (p->done && !pj_object_get(p->resp, "error")) {
            *result = pj_incref(pj_object_get(p->resp, "result"));
            if (!pj_is_object(*result)) {
                pj_decref(*result);
                *result = NULL;
            }
        }
    }
    if (st == PMCP_OK) {
        pj_t *e = pj_object_get(p->resp, "error");
        if (e) {
            pmcp__rpc_error_text(e, err, errlen);
            st = PMCP_ERR_RPC;
        } else {
            *result = pj_incref(pj_object_get(p->resp, "result"));
            if (!pj_is_object(*result)) {
                pj_decref(*result);
                *result = NULL;
                snprintf(err, errlen, "MCP server %s answered %s with a non-object result", c->name,
                         method);
                st = PMCP_ERR_RPC;
            }
        }
    }
    pj_decref(p->resp);
    free(p);
    return st;
}

static pmcp_status request(pmcp_client *c, const char *method, pj_t *params, atomic_int *cancel,
                           long timeout_ms, pmcp_progress_fn progress, void *pctx, pj_t **result,
                           char *err, size_t errlen) {
    return request_ex(c, method, params, cancel, timeout_ms, 0, progress, pctx, result, err,
                      errlen);
}

static int list_tools(pmcp_client *c, long timeout_ms, char *err, size_t errlen) {
    pmcp_tool *tools = NULL;
    size_t n = 0, cap = 0, bytes = 0;
    char *cursor = NULL;
    int rc = 0;
    char limit[128] = "out of memory";
    atomic_store(&c->tools_changed, false); /* a list_changed arriving from now on is kept */
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (int page = 0;; page++) {
        if (page >= PMCP_MAX_PAGES) {
            snprintf(err, errlen, "tools/list did not end after %d pages", PMCP_MAX_PAGES);
            rc = -1;
            break;
        }
        /* a server that pages slowly cannot stretch the listing past one timeout */
        struct timespec now;
        clock_gettime(CLOCK_MONOTONIC, &now);
        long spent = (long)(now.tv_sec - t0.tv_sec) * 1000 + (now.tv_nsec - t0.tv_nsec) / 1000000;
        if (timeout_ms > 0 && spent >= timeout_ms) {
            snprintf(err, errlen, "tools/list took longer than %ld ms in all", timeout_ms);
            rc = -1;
            break;
        }
        pj_t *params = cursor ? pj_pack("{s:s}", "cursor", cursor) : pj_object();
        pj_t *res;
        pmcp_status st =
            request(c, "tools/list", params, NULL, timeout_ms > 0 ? timeout_ms - spent : timeout_ms,
                    NULL, NULL, &res, err, errlen);
        free(cursor);
        cursor = NULL;
        if (st != PMCP_OK) {
            rc = -1;
            break;
        }
        pj_t *arr = pj_object_get(res, "tools");
        size_t i;
        pj_t *t;
        pj_array_foreach(arr, i, t) {
            pmcp__tooldef d;
            int got = pmcp__tool_parse(t, &d);
            if (got == 0) continue;
            if (got < 0) {
                rc = -1;
                break;
            }
            bytes += strlen(d.name) + (d.title ? strlen(d.title) : 0) + strlen(d.description) +
                     strlen(d.schema_json);
            if (n >= PMCP_MAX_TOOLS || bytes > PMCP_MAX_LIST_BYTES) {
                /* refused whole, like the event-driven client: a cut list would
                 * silently drop tools the server meant */
                pmcp__tooldef_free(&d);
                if (n >= PMCP_MAX_TOOLS)
                    snprintf(limit, sizeof limit, "the server lists more than %d tools",
                             PMCP_MAX_TOOLS);
                else
                    snprintf(limit, sizeof limit,
                             "the server's tools take more than %u bytes (names, "
                             "descriptions, schemas)",
                             PMCP_MAX_LIST_BYTES);
                rc = -1;
                break;
            }
            if (n == cap) {
                size_t nc = cap ? cap * 2 : 16;
                pmcp_tool *nt = realloc(tools, nc * sizeof *nt);
                if (!nt) {
                    pmcp__tooldef_free(&d);
                    rc = -1;
                    break;
                }
                tools = nt;
                cap = nc;
            }
            tools[n++] = (pmcp_tool){.name = d.name,
                                     .title = d.title,
                                     .description = d.description,
                                     .schema_json = d.schema_json,
                                     .read_only = d.read_only};
        }
        const char *next = pj_string_value(pj_object_get(res, "nextCursor"));
        if (rc == 0 && next && next[0]) cursor = strdup(next);
        pj_decref(res);
        if (rc != 0) {
            snprintf(err, errlen, "%s", limit);
            break;
        }
        if (!cursor) break;
    }
    free(cursor);
    if (rc != 0) {
        pmcp_tools_free(tools, n);
        return -1;
    }
    pthread_mutex_lock(&c->mu);
    pmcp_tools_free(c->tools, c->ntools);
    c->tools = tools;
    c->ntools = n;
    pthread_mutex_unlock(&c->mu);
    return 0;
}

/* ---------------------------------------------------------------- public */

/* A configured Authorization header: the user authorizes this server, not OAuth. */
static bool has_authorization(const pmcp_server_config *cfg) {
    for (size_t i = 0; i < cfg->nheaders; i++)
        if (cfg->headers[i].name && !strcasecmp(cfg->headers[i].name, "authorization")) return true;
    return false;
}

pmcp_client *pmcp_client_connect(const pmcp_server_config *cfg, const pmcp_client_opts *opt,
                                 char *err, size_t errlen) {
    long init_ms = opt && opt->init_timeout_ms > 0 ? opt->init_timeout_ms : 30000;
    pmcp_client *c = calloc(1, sizeof *c);
    if (!c || !(c->name = strdup(cfg->name ? cfg->name : "?"))) {
        free(c);
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    pthread_mutex_init(&c->mu, NULL);
    pthread_cond_init(&c->cv, NULL);
    c->call_timeout_ms = opt && opt->call_timeout_ms > 0 ? opt->call_timeout_ms : 600000;
    if (opt) {
        c->log = opt->log;
        c->elicit = opt->elicit;
        c->elicit_ctx = opt->elicit_ctx;
    }
    pmcp__link_cb cb = {.ctx = c, .on_frame = on_frame, .on_closed = on_closed, .log = c->log};
    char lerr[256] = "";
    switch (cfg->kind) {
    case PMCP_STDIO:
        c->link = pmcp__link_stdio(cfg, opt ? opt->cwd : NULL, &cb, lerr, sizeof lerr);
        break;
    case PMCP_HTTP:
        if (opt && opt->oauth && opt->oauth->dir && !has_authorization(cfg) &&
            !(c->auth = pmcp__auth_new(opt->oauth, cfg->name, cfg->url))) {
            snprintf(lerr, sizeof lerr, "out of memory");
            break;
        }
        c->link = pmcp__link_http(cfg, &cb, c->auth, lerr, sizeof lerr);
        break;
    case PMCP_SSE: c->link = pmcp__link_sse(cfg, &cb, init_ms, lerr, sizeof lerr); break;
    case PMCP_INPROC: c->link = pmcp__link_inproc(cfg, &cb, lerr, sizeof lerr); break;
    }
    if (!c->link) {
        snprintf(err, errlen, "%s", lerr[0] ? lerr : "cannot connect");
        pmcp_client_close(c);
        return NULL;
    }
    pj_t *params = pmcp__initialize_params(c->elicit != NULL);
    pj_t *res;
    char rerr[512];
    pj_t *params2 = c->auth ? pj_deep_copy(params) : NULL;
    pmcp_status st =
        request(c, "initialize", params, NULL, init_ms, NULL, NULL, &res, rerr, sizeof rerr);
    if (st != PMCP_OK && c->auth && pmcp__auth_needs_login(c->auth)) {
        /* The server wants an OAuth login: run it (the user is shown the URL), then
         * connect again with the token on a fresh link. */
        c->link->close(c->link);
        c->link = NULL;
        char lgerr[512];
        if (pmcp__auth_login(c->auth, lgerr, sizeof lgerr) != 0) {
            snprintf(rerr, sizeof rerr, "OAuth login failed: %.480s", lgerr);
        } else if (!(c->link = pmcp__link_http(cfg, &cb, c->auth, lerr, sizeof lerr))) {
            snprintf(rerr, sizeof rerr, "%s", lerr);
        } else {
            st = request(c, "initialize", params2, NULL, init_ms, NULL, NULL, &res, rerr,
                         sizeof rerr);
            params2 = NULL;
        }
    }
    pj_decref(params2);
    if (st != PMCP_OK) {
        snprintf(err, errlen, "initialize failed: %s", rerr);
        pmcp_client_close(c);
        return NULL;
    }
    const char *ver = pj_string_value(pj_object_get(res, "protocolVersion"));
    pj_t *caps = pj_object_get(res, "capabilities");
    if (!pmcp__version_known(ver)) {
        pmcp__version_error(ver, err, errlen);
        pj_decref(res);
        pmcp_client_close(c);
        return NULL;
    }
    snprintf(c->protocol, sizeof c->protocol, "%s", ver);
    c->caps_json = pj_is_object(caps) ? pj_dumps(caps, PJ_COMPACT) : strdup("{}");
    c->has_tools = pj_is_object(pj_object_get(caps, "tools"));
    pj_decref(res);
    if (c->link->set_protocol) c->link->set_protocol(c->link, c->protocol);
    send_json(c, pb_rpc_notification("notifications/initialized", NULL));
    if (c->has_tools && list_tools(c, init_ms, rerr, sizeof rerr) != 0) {
        snprintf(err, errlen, "tools/list failed: %s", rerr);
        pmcp_client_close(c);
        return NULL;
    }
    return c;
}

void pmcp_client_close(pmcp_client *c) {
    if (!c) return;
    /* open questions end (their threads answer nothing more), then the link */
    pthread_mutex_lock(&c->mu);
    c->closed = true;
    for (elicitation *e = c->elicits; e; e = e->next)
        atomic_store(&e->cancel, 1);
    while (c->elicits)
        wait_a_bit(c);
    pthread_mutex_unlock(&c->mu);
    if (c->link) c->link->close(c->link);
    pmcp__auth_free(c->auth);
    pmcp_tools_free(c->tools, c->ntools);
    free(c->caps_json);
    free(c->name);
    pthread_mutex_destroy(&c->mu);
    pthread_cond_destroy(&c->cv);
    free(c);
}

const char *pmcp_client_name(const pmcp_client *c) {
    return c->name;
}

const char *pmcp_client_protocol(const pmcp_client *c) {
    return c->protocol;
}

const char *pmcp_client_capabilities(const pmcp_client *c) {
    return c->caps_json ? c->caps_json : "{}";
}

int pmcp_client_tools(pmcp_client *c, pmcp_tool **out, size_t *n) {
    pthread_mutex_lock(&c->mu);
    pmcp_tool *t = calloc(c->ntools ? c->ntools : 1, sizeof *t);
    int rc = t ? 0 : -1;
    for (size_t i = 0; t && i < c->ntools; i++)
        if (pmcp__tool_copy(&t[i], &c->tools[i])) rc = -1;
    size_t cnt = c->ntools;
    pthread_mutex_unlock(&c->mu);
    if (rc != 0) {
        pmcp_tools_free(t, t ? cnt : 0);
        return -1;
    }
    *out = t;
    *n = cnt;
    return 0;
}

bool pmcp_client_tools_changed(pmcp_client *c) {
    return atomic_load(&c->tools_changed);
}

int pmcp_client_refresh_tools(pmcp_client *c, char *err, size_t errlen) {
    /* bounded like initialize: a session waits for this before its next model request */
    return list_tools(c, 30000, err, errlen);
}

void pmcp_call_result_clear(pmcp_call_result *r) {
    if (!r) return;
    free(r->content_json);
    free(r->structured_json);
    free(r->text);
    memset(r, 0, sizeof *r);
}

pmcp_status pmcp_client_call(pmcp_client *c, const char *tool, const char *args_json,
                             atomic_int *cancel, pmcp_progress_fn progress, void *pctx,
                             long timeout_ms, pmcp_call_result *out) {
    memset(out, 0, sizeof *out);
    char err[600];
    bool not_object;
    pj_t *params = pmcp__call_params(tool, args_json, &not_object);
    if (!params) {
        out->is_error = true;
        out->text = strdup(not_object ? PMCP_ARGS_NOT_OBJECT : "out of memory");
        out->content_json = strdup("[]");
        return not_object ? PMCP_ERR_RPC : PMCP_ERR_TRANSPORT;
    }
    pj_t *res;
    pmcp_status st =
        request(c, "tools/call", params, cancel, timeout_ms, progress, pctx, &res, err, sizeof err);
    if (st != PMCP_OK) {
        out->is_error = true;
        out->text = strdup(err);
        out->content_json = strdup("[]");
        return st;
    }
    pmcp__content cont;
    int rc = pmcp__content_of(res, &cont);
    pj_decref(res);
    if (rc != 0) {
        out->is_error = true;
        out->text = strdup("out of memory");
        out->content_json = strdup("[]");
        return PMCP_ERR_TRANSPORT;
    }
    out->is_error = cont.is_error;
    out->content_json = cont.content_json;
    out->structured_json = cont.structured_json;
    out->text = cont.text;
    return PMCP_OK;
}

pmcp_status pmcp__client_call_raw(pmcp_client *c, const char *tool, const char *args_json,
                                  atomic_int *cancel, long timeout_ms, pj_t **result, char *err,
                                  size_t errlen) {
    *result = NULL;
    pj_t *args = args_json ? pj_loads(args_json, 0, NULL) : NULL;
    pj_t *params = NULL;
    if (pj_is_object(args)) {
        params = pj_pack("{s:s, s:o}", "name", tool, "arguments", args);
    } else {
        pj_decref(args);
        params = pj_pack("{s:s, s:{}, s:{s:s}}", "name", tool, "arguments", "_meta",
                         "peri/rawArguments", args_json ? args_json : "");
    }
    if (!params) {
        snprintf(err, errlen, "out of memory");
        return PMCP_ERR_TRANSPORT;
    }
    /* our in-process server answers a cancelled call with its partial result */
    return request_ex(c, "tools/call", params, cancel, timeout_ms, PMCP_CANCEL_LINGER_MS, NULL,
                      NULL, result, err, errlen);
}

pmcp_status pmcp_client_request(pmcp_client *c, const char *method, const char *params_json,
                                atomic_int *cancel, long timeout_ms, char **result_json, char *err,
                                size_t errlen) {
    *result_json = NULL;
    pj_t *params = params_json ? pj_loads(params_json, 0, NULL) : NULL;
    if (params_json && !pj_is_object(params)) {
        pj_decref(params);
        snprintf(err, errlen, "params must be a JSON object");
        return PMCP_ERR_RPC;
    }
    pj_t *res;
    pmcp_status st = request(c, method, params, cancel, timeout_ms, NULL, NULL, &res, err, errlen);
    if (st == PMCP_OK) {
        *result_json = pj_dumps(res, PJ_COMPACT);
        pj_decref(res);
        if (!*result_json) {
            snprintf(err, errlen, "out of memory");
            return PMCP_ERR_TRANSPORT;
        }
    }
    return st;
}
