/*
 * reactor.c — the agent module's reactor object (peri/agentwasm.h): the start object,
 * the client's byte stream cut into frames, the routing of port events, and close with
 * its settlement report.
 *
 * Invariants: nothing blocks and nothing is re-entered: every callback into the host
 * returns before the reactor goes on. The start object is checked whole before anything
 * starts; a local store locator is refused (never a fallback). Frames that arrive before
 * the store is open wait in arrival order and run once it is (or are answered with the
 * store's failure).
 */
#include "paw_int.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void paw__log(paw *p, int level, const char *fmt, ...) {
    if (!p->h.log) return;
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    p->h.log(p->h.ctx, level, buf);
}

int paw__send(paw *p, pj_t *frame) {
    size_t n = 0;
    char *txt = frame ? pb_rpc_encode(frame, true, &n) : NULL;
    pj_decref(frame);
    if (!txt) {
        paw__log(p, 0, "acp: out of memory building a frame");
        return PN_E_LIMIT;
    }
    int rc = p->h.send(p->h.ctx, txt, n);
    free(txt);
    return rc;
}

void paw__reply(paw *p, pj_t *id, pj_t *result) {
    if (!result) {
        paw__reply_error(p, id, PB_RPC_INTERNAL_ERROR, "out of memory", NULL);
        return;
    }
    paw__send(p, pb_rpc_result(id, result));
}

void paw__reply_error(paw *p, pj_t *id, int code, const char *msg, pj_t *data) {
    char m[320];
    snprintf(m, sizeof m, "%.300s", msg);
    paw__send(p, pb_rpc_error(id, code, m, data));
}

void paw__notify(paw *p, const char *method, pj_t *params) {
    paw__send(p, pb_rpc_notification(method, params));
}

char *paw__credential(paw *p, const char *kind) {
    if (!p->h.credential) return NULL;
    size_t cap = 256, len = 0;
    for (int tries = 0; tries < 2; tries++) {
        char *buf = malloc(cap + 1);
        if (!buf) return NULL;
        pn_err e = p->h.credential(p->h.ctx, kind, buf, cap, &len);
        if (e == PN_OK && len <= cap) {
            buf[len] = '\0';
            return buf;
        }
        free(buf);
        if (e != PN_E_LIMIT || len > (1u << 20)) {
            if (e != PN_E_NOT_FOUND)
                paw__log(p, 1, "credential %s: the host answered %s", kind, pn_err_name(e));
            return NULL;
        }
        cap = len;
    }
    return NULL;
}

paw_handle *paw__handle_add(paw *p, paw_hkind kind, paw_sess *s) {
    paw_handle *hd = calloc(1, sizeof *hd);
    if (!hd) return NULL;
    hd->kind = kind;
    hd->sess = s;
    hd->next = p->handles;
    p->handles = hd;
    if (kind == PAW_H_HTTP)
        p->open_http++;
    else
        p->open_timers++;
    return hd;
}

void paw__handle_drop(paw *p, paw_handle *hd) {
    for (paw_handle **q = &p->handles; *q; q = &(*q)->next)
        if (*q == hd) {
            *q = hd->next;
            break;
        }
    if (hd->kind == PAW_H_HTTP)
        p->open_http--;
    else
        p->open_timers--;
    free(hd);
}

paw *paw_new(const paw_host *h) {
    if (!h || !h->ports || !h->send || !h->random) return NULL;
    paw *p = calloc(1, sizeof *p);
    if (!p) return NULL;
    p->h = *h;
    p->waiting_tail = &p->waiting;
    p->next_out_id = 1;
    return p;
}

int paw_add_tool_source(paw *p, const paw_tool_source *src) {
    if (!src || !src->list || !src->start || !src->cancel || !src->on_event || !src->close ||
        !src->settled || p->started)
        return PN_E_INVALID;
    if (p->nsrcs >= sizeof p->srcs / sizeof p->srcs[0]) return PN_E_LIMIT;
    p->srcs[p->nsrcs++] = *src;
    return PN_OK;
}

/* ---------------------------------------------------------------- the start object */

bool paw__canonical_path(const char *in, char *out, size_t cap) {
    size_t n = 0;
    const char *s = in;
    out[n++] = '/';
    while (*s) {
        while (*s == '/')
            s++;
        const char *e = s;
        while (*e && *e != '/')
            e++;
        size_t k = (size_t)(e - s);
        if (k == 0) break;
        if (k == 1 && s[0] == '.') {
        } else if (k == 2 && s[0] == '.' && s[1] == '.') {
            while (n > 1 && out[n - 1] != '/')
                n--;
            if (n > 1) n--;
        } else {
            if (n > 1) out[n++] = '/';
            if (n + k + 1 >= cap) return false;
            memcpy(out + n, s, k);
            n += k;
        }
        s = e;
    }
    out[n] = '\0';
    return true;
}

bool paw__uuid_ok(const char *s) {
    if (strlen(s) != 36) return false;
    for (int i = 0; i < 36; i++) {
        char c = s[i];
        bool dash = i == 8 || i == 13 || i == 18 || i == 23;
        if (dash ? c != '-'
                 : !((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')))
            return false;
    }
    return true;
}

static bool remote_locator(const char *u) {
    return !strncmp(u, "postgresql://", 13) || !strncmp(u, "postgres://", 11);
}

static int bad(char *err, size_t errlen, const char *fmt, const char *arg) {
    snprintf(err, errlen, fmt, arg ? arg : "");
    return PN_E_INVALID;
}

/* What settings ask for that cannot run inside: logged, each naming why. */
static void refuse_native_settings(paw *p) {
    pj_t *doc = p->settings.doc;
    pj_t *servers = pj_object_get(doc, "mcpServers");
    const char *name;
    pj_t *v;
    if (pj_is_object(servers)) {
        pj_object_foreach(servers, name, v) {
            if (pj_object_get(v, "command"))
                paw__log(p, 0,
                         "MCP server \"%.100s\" is not started: stdio MCP servers (command) "
                         "cannot run inside the WebAssembly form (it has no subprocesses); "
                         "serve it over streamable HTTP and give its url",
                         name);
        }
    }
    pj_t *hooks = pj_object_get(doc, "hooks");
    if (pj_is_object(hooks) && pj_object_size(hooks) > 0) {
        char *txt = pj_dumps(hooks, PJ_COMPACT);
        if (txt && strstr(txt, "\"command\""))
            paw__log(p, 0,
                     "command hooks are not run: the WebAssembly form has no shell and "
                     "no subprocesses (only mcp_tool hooks could run here)");
        free(txt);
    }
    if (pj_object_get(doc, "sandbox") && !p->settings.sandbox_off)
        paw__log(p, 1,
                 "settings.sandbox is ignored: the native sandbox does not exist inside "
                 "the WebAssembly form (no tool here runs commands or touches files)");
}

static void on_store_open(void *ud, pst_remote_result *res);

static int start(paw *p, pj_t *o, char *err, size_t errlen) {
    if (!pj_is_object(o)) return bad(err, errlen, "the start object must be a JSON object%s", NULL);
    static const char *const known[] = {"cwd", "settings", "storage", "machineId"};
    for (size_t i = 0; i < 4; i++)
        if (!pj_object_get(o, known[i]))
            return bad(err, errlen,
                       "the start object needs %s (cwd, settings, storage and "
                       "machineId are all required)",
                       known[i]);
    pj_t *cwd = pj_object_get(o, "cwd");
    if (!pj_is_string(cwd) || pj_string_value(cwd)[0] != '/')
        return bad(err, errlen, "cwd must be an absolute path (a string starting with /)%s", NULL);
    if (!paw__canonical_path(pj_string_value(cwd), p->cwd, sizeof p->cwd))
        return bad(err, errlen, "cwd is too long%s", NULL);
    pj_t *settings = pj_object_get(o, "settings");
    if (!pj_is_object(settings))
        return bad(err, errlen, "settings must be an object (the whole settings document)%s", NULL);
    pj_t *storage = pj_object_get(o, "storage");
    if (!pj_is_object(storage))
        return bad(err, errlen,
                   "storage must be an object {\"url\": \"postgresql://...\", \"credential\": "
                   "{\"source\": \"host\"}}%s",
                   NULL);
    pj_t *url = pj_object_get(storage, "url");
    if (!pj_is_string(url) || !*pj_string_value(url))
        return bad(err, errlen, "storage.url must be a nonempty string (postgresql://...)%s", NULL);
    const char *u = pj_string_value(url);
    if (!remote_locator(u))
        return bad(err, errlen,
                   "storage.url %.200s is a local store: the WebAssembly form reaches only the "
                   "shared PostgreSQL store (postgresql://...) through the network port, and "
                   "never falls back to a local one",
                   u);
    pj_t *cred = pj_object_get(storage, "credential");
    if (cred && !(pj_is_object(cred) && pj_is_string(pj_object_get(cred, "source")) &&
                  !strcmp(pj_string_value(pj_object_get(cred, "source")), "host")))
        return bad(err, errlen,
                   "storage.credential must be {\"source\": \"host\"}: secrets never travel in "
                   "the start object, the module asks the host%s",
                   NULL);
    pj_t *mid = pj_object_get(o, "machineId");
    if (!pj_is_string(mid) || !pst_machine_id_ok(pj_string_value(mid)))
        return bad(err, errlen,
                   "machineId must be the instance's persistent identity: a UUID, or 1..36 "
                   "printable characters as PERI_MACHINE_ID allows natively%s",
                   NULL);
    snprintf(p->machine_id, sizeof p->machine_id, "%s", pj_string_value(mid));
    char serr[300] = "";
    if (pag_settings_from_doc(&p->settings, settings, serr, sizeof serr) != 0)
        return bad(err, errlen, "settings: %.300s", serr);
    p->have_settings = true;
    refuse_native_settings(p);
    char terr[300];
    if (paw__telemetry_new(p, terr, sizeof terr) != 0) return bad(err, errlen, "%.300s", terr);
    /* The model: the provider's key only from the host (model:<provider>). */
    const char *spec =
        p->settings.model ? p->settings.model : pag_settings_default_model(&p->settings);
    snprintf(p->model_spec, sizeof p->model_spec, "%s", spec ? spec : "");
    const char *mname = NULL;
    p->model = paw__model_new(p, p->model_spec[0] ? p->model_spec : NULL, &mname, p->model_missing,
                              sizeof p->model_missing);
    if (p->model) p->model_name = mname;
    /* The store: its credential from the host, then open (asynchronous). */
    char *pw = paw__credential(p, "store");
    pst_error se = {0};
    p->store = pst_remote_open(&(pst_remote_options){.ports = p->h.ports,
                                                     .locator = u,
                                                     .password = pw,
                                                     .machine_id = p->machine_id,
                                                     .random = p->h.random,
                                                     .random_ctx = p->h.ctx},
                               on_store_open, p, &se);
    if (pw) {
        memset(pw, 0, strlen(pw));
        free(pw);
    }
    if (!p->store) return bad(err, errlen, "storage: %.300s", se.message);
    /* the settings' HTTP MCP servers connect in the background (mcp.c) */
    pj_t *servers = pj_object_get(p->settings.doc, "mcpServers");
    if (pj_is_object(servers) && pj_object_size(servers) > 0 && p->nsrcs < 8) {
        if (!(p->mcp = paw__mcp_new(p, servers))) return bad(err, errlen, "out of memory%s", NULL);
        p->srcs[p->nsrcs++] = paw__mcp_source(p->mcp);
    }
    return 0;
}

int paw_start(paw *p, const char *json, size_t len, char *err, size_t errlen) {
    char dummy[8];
    if (!err || !errlen) {
        err = dummy;
        errlen = sizeof dummy;
    }
    err[0] = '\0';
    if (p->closing) {
        snprintf(err, errlen, "the instance is closing");
        return PN_E_CLOSED;
    }
    if (p->started) {
        snprintf(err, errlen,
                 "the instance was already started: one instance holds one start object and "
                 "one machine identity (%s)",
                 p->machine_id);
        paw__log(p, 0, "start: %s", err);
        return PN_E_LIMIT;
    }
    pj_error_t je;
    pj_t *o = json ? pj_loadb(json, len, 0, &je) : NULL;
    int rc;
    if (!o)
        rc = bad(err, errlen, "the start object is not valid JSON%s", NULL);
    else
        rc = start(p, o, err, errlen);
    pj_decref(o);
    if (rc) {
        paw__log(p, 0, "start: %s", err);
        if (p->have_settings) pag_settings_clear(&p->settings);
        p->have_settings = false;
        pm_client_free(p->model);
        p->model = NULL;
        p->machine_id[0] = '\0';
        return rc;
    }
    p->started = true;
    return 0;
}

/* ---------------------------------------------------------------- frames */

/* Runs the frames that wait, in order, until one leaves a request waiting for the store
 * (requests are answered in the order they came, as the native host's are). */
static void run_waiting(paw *p) {
    while (p->waiting && !p->closing && p->pending_ops == 0 &&
           (p->store_ready || p->store_failed)) {
        paw_frame *f = p->waiting;
        p->waiting = f->next;
        if (!p->waiting) p->waiting_tail = &p->waiting;
        paw__frame(p, f->text, f->len);
        free(f->text);
        free(f);
    }
}

static void on_store_open(void *ud, pst_remote_result *res) {
    paw *p = ud;
    if (res->status == PST_OK) {
        p->store_ready = true;
        paw__log(p, 2, "store: open (schema %lld)", (long long)res->value);
    } else {
        p->store_failed = true;
        snprintf(p->store_error, sizeof p->store_error, "store: %.280s", res->error.message);
        paw__log(p, 0, "%s", p->store_error);
    }
    run_waiting(p); /* (paw_event settles a close that waited for this outcome) */
}

void paw__frame(paw *p, const char *line, size_t len) {
    pb_rpc_msg m;
    pb_rpc_decode(line, len, PB_RPC_ACP_RULES, &m);
    switch (m.kind) {
    case PB_RPC_INVALID: paw__reply_error(p, m.id, m.err_code, m.err_msg, NULL); break;
    case PB_RPC_RESPONSE: paw__response(p, &m); break;
    case PB_RPC_NOTIFICATION: paw__notification(p, m.method, m.params); break;
    case PB_RPC_REQUEST: paw__dispatch(p, m.method, m.params, m.id); break;
    }
    pb_rpc_clear(&m);
}

/* A complete line: run now, or keep it until the store has answered its open. */
static int line(paw *p, const char *s, size_t n) {
    bool blank = true;
    for (size_t i = 0; i < n && blank; i++)
        blank = s[i] == ' ' || s[i] == '\t' || s[i] == '\r';
    if (blank) return 0; /* a keep-alive */
    bool wait =
        p->started && (!(p->store_ready || p->store_failed) || p->waiting || p->pending_ops);
    if (wait) { /* an answer to the module's own question never waits */
        pb_rpc_msg m;
        pb_rpc_decode(s, n, PB_RPC_ACP_RULES, &m);
        wait = m.kind != PB_RPC_RESPONSE;
        pb_rpc_clear(&m);
    }
    if (!wait) {
        paw__frame(p, s, n);
        return 0;
    }
    paw_frame *f = calloc(1, sizeof *f);
    char *t = malloc(n + 1);
    if (!f || !t) {
        free(f);
        free(t);
        return PN_E_LIMIT;
    }
    memcpy(t, s, n);
    t[n] = '\0';
    f->text = t;
    f->len = n;
    *p->waiting_tail = f;
    p->waiting_tail = &f->next;
    return 0;
}

int paw_input(paw *p, const char *data, size_t len) {
    if (p->closing || p->input_ended) return PN_E_CLOSED;
    while (len > 0) {
        const char *nl = memchr(data, '\n', len);
        size_t k = nl ? (size_t)(nl - data) : len;
        if (p->in_skip) {
            if (nl) p->in_skip = false;
        } else if (p->in_len + k > PAW_MAX_FRAME) {
            p->in_len = 0;
            p->in_skip = !nl;
            paw__reply_error(p, NULL, PB_RPC_INVALID_REQUEST, "Invalid Request: frame too long",
                             NULL);
        } else if (!nl && p->in_len == 0 && k == len) {
            /* keep the partial line */
            if (p->in_cap < k) {
                char *n2 = realloc(p->in, k);
                if (!n2) return PN_E_LIMIT;
                p->in = n2;
                p->in_cap = k;
            }
            memcpy(p->in, data, k);
            p->in_len = k;
        } else {
            if (p->in_len + k > p->in_cap) {
                size_t cap = (p->in_len + k) * 2;
                char *n2 = realloc(p->in, cap);
                if (!n2) return PN_E_LIMIT;
                p->in = n2;
                p->in_cap = cap;
            }
            memcpy(p->in + p->in_len, data, k);
            p->in_len += k;
            if (nl) {
                size_t n = p->in_len;
                p->in_len = 0;
                char *buf = malloc(n + 1);
                if (!buf) return PN_E_LIMIT;
                memcpy(buf, p->in, n);
                buf[n] = '\0';
                int rc = line(p, buf, n);
                free(buf);
                if (rc) return rc;
                if (p->closing) return 0;
            }
        }
        if (!nl) break;
        len -= k + 1;
        data = nl + 1;
    }
    return 0;
}

static bool any_turn(const paw *p);

void paw_input_end(paw *p) {
    if (p->input_ended) return;
    p->input_ended = true;
    /* as the native host does at the end of its input: what was asked is answered first
     * (frames waiting for the store, requests waiting for its answers), then turns get
     * the settings' close grace, then everything closes */
    if (!p->closing && (p->waiting || p->pending_ops || any_turn(p))) {
        p->draining = true;
        paw__drain_check(p);
        return;
    }
    paw_close(p);
}

static bool any_turn(const paw *p) {
    for (const paw_sess *s = p->sessions; s; s = s->next)
        if (s->turn || s->queue) return true;
    return false;
}

/* Arms the settings' close grace for running turns; false when there is none (0, or
 * no timer). */
static bool start_grace(paw *p) {
    long ms = p->settings.close_grace_ms > 0 ? p->settings.close_grace_ms : 0;
    paw_handle *hd = ms ? paw__handle_add(p, PAW_H_TIMER, NULL) : NULL;
    if (!hd) return false;
    hd->ud = hd;
    if (p->h.ports->timer_set(p->h.ports->ctx, (uint64_t)ms, hd, &hd->timer) != PN_OK) {
        paw__handle_drop(p, hd);
        return false;
    }
    p->grace = hd;
    return true;
}

void paw__drain_check(paw *p) {
    if (!p->draining || p->closing || p->waiting || p->pending_ops) return;
    if (!p->store_ready && !p->store_failed) return;         /* the waiting frames run after it */
    if (any_turn(p) && (p->grace || start_grace(p))) return; /* turns end within it */
    p->draining = false;
    paw_close(p);
}

/* ---------------------------------------------------------------- events, close */

/* What follows any event: frames that waited may run, a drain may end, a close may
 * settle. */
static void after_event(paw *p) {
    run_waiting(p);
    paw__drain_check(p);
    paw__maybe_settled(p);
}

void paw_event(paw *p, const pn_event *ev) {
    if (p->store && ev->ud == (void *)p->store) {
        pst_remote_on_event(p->store, ev);
        return after_event(p);
    }
    if (p->grace && ev->ud == (void *)p->grace) { /* the close grace is over */
        if (ev->kind != PN_EV_TIMER) return;
        paw__handle_drop(p, p->grace);
        p->grace = NULL;
        if (p->draining) {
            p->draining = false;
            paw_close(p);
        }
        return after_event(p);
    }
    for (paw_handle *hd = p->handles; hd; hd = hd->next)
        if (hd->ud == ev->ud) {
            paw__handle_event(p, hd, ev);
            return after_event(p);
        }
    for (size_t i = 0; i < p->nsrcs; i++)
        if (p->srcs[i].on_event(p->srcs[i].ctx, ev)) return after_event(p);
    if (paw__mcp_sets_event(p, ev)) return after_event(p);
    paw__log(p, 3, "port event %d for handle %u of nobody", (int)ev->kind, (unsigned)ev->handle);
}

void paw__maybe_settled(paw *p) {
    if (!p->closing || p->closed_reported) return;
    if (p->open_http || p->open_timers || p->sessions) return;
    if (!p->srcs_closed) { /* no turn is left to call a tool */
        p->srcs_closed = true;
        for (size_t i = 0; i < p->nsrcs; i++)
            p->srcs[i].close(p->srcs[i].ctx);
    }
    for (size_t i = 0; i < p->nsrcs; i++)
        if (!p->srcs[i].settled(p->srcs[i].ctx)) return;
    if (!paw__mcp_sets_settled(p)) return;
    /* an open still under way ends first (its outcome is reported: a client that left
     * at once still learns that the store refused it); the host's deadline bounds it */
    if (p->store && !p->store_closed && !p->store_ready && !p->store_failed) return;
    /* the store closes last: a cancelled turn still commits what it streamed */
    if (p->store && !p->store_closed) {
        p->store_closed = true;
        pst_remote_close(p->store);
    }
    if (p->store && !pst_remote_settled(p->store)) return;
    p->closed_reported = true;
    char buf[200];
    int n = snprintf(buf, sizeof buf,
                     "{\"settled\":true,\"http\":0,\"timers\":0,\"sessions\":0,"
                     "\"toolSources\":%zu,\"store\":\"%s\"}",
                     p->nsrcs,
                     !p->store         ? "none"
                     : p->store_failed ? "failed"
                                       : "closed");
    paw__log(p, 2, "settled: %s", buf);
    if (p->h.settled) p->h.settled(p->h.ctx, buf, (size_t)n);
}

int paw_close(paw *p) {
    if (p->closing) return PN_E_CLOSED;
    if (p->draining) return 0; /* it closes once what the client asked is answered */
    p->closing = true;
    if (p->grace) { /* its cancelled event settles the handle */
        p->h.ports->timer_cancel(p->h.ports->ctx, p->grace->timer);
    }
    while (p->waiting) { /* the client is going: nothing is answered any more */
        paw_frame *f = p->waiting;
        p->waiting = f->next;
        free(f->text);
        free(f);
    }
    p->waiting_tail = &p->waiting;
    paw__telemetry_close(p); /* a side channel: settlement never waits on a collector */
    /* every session: cancel its turn; each leaves the list once its turn unwound */
    for (paw_sess *s = p->sessions, *nx; s; s = nx) {
        nx = s->next;
        paw__sess_close(s, NULL);
    }
    paw__maybe_settled(p);
    return 0;
}

bool paw_settled(const paw *p) {
    return p->closed_reported;
}

void paw_free(paw *p) {
    if (!p) return;
    paw__sess_free_all(p); /* only after the host closed the ports: what is left */
    while (p->handles) {
        paw_handle *hd = p->handles;
        p->handles = hd->next;
        free(hd);
    }
    while (p->waiting) {
        paw_frame *f = p->waiting;
        p->waiting = f->next;
        free(f->text);
        free(f);
    }
    if (p->store) pst_remote_free(p->store);
    pm_client_free(p->model);
    if (p->have_settings) pag_settings_clear(&p->settings);
    paw__mcp_free(p->mcp);
    paw__telemetry_free(p);
    paw__mcp_sets_free(p);
    free(p->in);
    free(p);
}
