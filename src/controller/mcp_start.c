/*
 * mcp_start.c — a session's MCP servers, started in the background.
 *
 * A session has two pools: `mcp`, the builtin Workspace server (opened at once: it starts
 * nothing until its first call), and `ext`, every configured server (the user's settings,
 * the project's once trusted, the client's mcpServers), which a connector thread of its
 * own opens while session/new, load or resume has already answered. Until the connector
 * publishes `ext` the session says which servers are still starting; then the sink's
 * on_mcp_status tells the client which are ready and which failed, and the servers'
 * tools join the tool list before the next model request. A prompt that starts while
 * the servers are still starting waits for them on its worker thread (cancel ends the
 * wait); nothing here ever waits on the thread that reads requests.
 *
 * Invariants: `ext` is written once, by the connector, under s->mu, and only while the
 * session is open (a closing session's late pool is closed by the connector itself);
 * the connector holds a reference to the session, so the session (and its pools) is
 * freed only after it returns; the controller counts connectors, and pct_free waits for
 * them (each is bounded by the servers' initialize timeout) before the controller goes.
 * The status is sent at most once, and only after the client had the answer that
 * named the session (pct_session_answered).
 */
#include "controller/ctl_impl.h"

#include "peri/json.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct connector {
    pct_sess *s; /* a reference of its own (its cwd is borrowed) */
    char *user, *project, *acp;
} connector;

static void connector_free(connector *k) {
    free(k->user);
    free(k->project);
    free(k->acp);
    free(k);
}

/* Appends the names of a settings-shaped {"mcpServers": {name: ...}} text to arr. */
static void names_of_settings(pj_t *arr, const char *txt) {
    pj_t *doc = txt ? pj_loads(txt, 0, NULL) : NULL;
    const char *k;
    pj_t *v;
    pj_object_foreach(pj_object_get(doc, "mcpServers"), k, v) {
        pj_array_append_new(arr, pj_string(k));
    }
    pj_decref(doc);
}

/* The names of the servers about to start (what the client will see as "starting"); the
 * pool applies the real rules (replacement, refusal), and the final status says. */
static pj_t *starting_names(const char *user, const char *project, const char *acp) {
    pj_t *arr = pj_array();
    if (!arr) return NULL;
    names_of_settings(arr, user);
    names_of_settings(arr, project);
    pj_t *a = acp ? pj_loads(acp, 0, NULL) : NULL;
    size_t i;
    pj_t *e;
    pj_array_foreach(a, i, e) {
        const char *n = pj_string_value(pj_object_get(e, "name"));
        if (n) pj_array_append_new(arr, pj_string(n));
    }
    pj_decref(a);
    /* one entry per name: a client entry replaces a user entry of the same name */
    pj_t *out = pj_array();
    pj_array_foreach(arr, i, e) {
        bool seen = false;
        size_t k2;
        pj_t *o;
        pj_array_foreach(out, k2, o) {
            if (pj_equal(o, e)) seen = true;
        }
        if (!seen) pj_array_append(out, e);
    }
    pj_decref(arr);
    return out;
}

/* {"servers": [{"name", "status"}], "errors": [lines]} of s (s->mu held). */
static pj_t *status_locked(pct_sess *s) {
    pj_t *servers = pj_array(), *errors = pj_array();
    if (s->mcp_pending) {
        pj_t *names = s->mcp_names ? pj_loads(s->mcp_names, 0, NULL) : NULL;
        size_t i;
        pj_t *n;
        pj_array_foreach(names, i, n) {
            pj_array_append_new(servers, pj_pack("{s:O, s:s}", "name", n, "status", "starting"));
        }
        pj_decref(names);
    } else if (s->mcp_final) {
        pj_t *fin = pj_loads(s->mcp_final, 0, NULL);
        if (pj_is_array(fin)) {
            pj_decref(servers);
            servers = fin;
        } else {
            pj_decref(fin);
        }
    }
    if (s->mcp_errors) {
        char *copy = strdup(s->mcp_errors), *save = NULL;
        for (char *l = copy ? strtok_r(copy, "\n", &save) : NULL; l;
             l = strtok_r(NULL, "\n", &save))
            pj_array_append_new(errors, pj_string(l));
        free(copy);
    }
    pj_t *st = pj_pack("{s:o, s:o}", "servers", servers ? servers : pj_array(), "errors",
                       errors ? errors : pj_array());
    return st;
}

char *pct__mcp_status(pct_sess *s) {
    pthread_mutex_lock(&s->mu);
    pj_t *st = status_locked(s);
    pthread_mutex_unlock(&s->mu);
    char *txt = st ? pj_dumps(st, PJ_COMPACT) : NULL;
    pj_decref(st);
    return txt;
}

/* Sends the final status once the connector is done and the client knows the session
 * (s->mu NOT held). */
static void maybe_send_status(pct_sess *s) {
    pthread_mutex_lock(&s->mu);
    bool send = s->answered && s->mcp_report && !s->mcp_pending && s->state == SESS_OPEN;
    if (send) s->mcp_report = false;
    pthread_mutex_unlock(&s->mu);
    if (!send || !s->c->sink.on_mcp_status) return;
    char *txt = pct__mcp_status(s);
    if (txt) s->c->sink.on_mcp_status(s->c->sink.ctx, s->id, s->epoch, txt);
    free(txt);
}

/* pmcp_oauth_opts.show_login: tells the client the URL, once it knows the session. */
static void show_login(void *ctx, const char *server, const char *url) {
    pct_sess *s = ctx;
    struct timespec dl = pb_deadline(CLOCK_REALTIME, 5000);
    pthread_mutex_lock(&s->mu);
    while (!s->answered && s->state == SESS_OPEN &&
           pthread_cond_timedwait(&s->cv, &s->mu, &dl) == 0) {
    }
    bool open = s->state == SESS_OPEN;
    pthread_mutex_unlock(&s->mu);
    pb_log(&s->c->log, PB_LOG_INFO, "session %s: MCP server \"%s\" needs a login: %s", s->id,
           server, url);
    if (open && s->c->sink.on_mcp_login)
        s->c->sink.on_mcp_login(s->c->sink.ctx, s->id, s->epoch, server, url);
}

static void *connector_main(void *arg) {
    connector *k = arg;
    pct_sess *s = k->s;
    pct_controller *c = s->c;
    pmcp_pool_opts po = {.cwd = s->cwd,
                         .user_settings_json = k->user,
                         .project_servers_json = k->project,
                         .acp_servers_json = k->acp,
                         .log = c->log,
                         .oauth = s->oauth.dir ? &s->oauth : NULL,
                         .elicit = pct__elicit, /* servers may ask the user (askuser.c) */
                         .elicit_ctx = s};
    char *why = NULL;
    pmcp_pool *p = pmcp_pool_open(&po, &why);
    if (why) pb_log(&s->c->log, PB_LOG_WARN, "session %s: %s", s->id, why);
    /* The final status, read from the pool while it is still this thread's alone. */
    pj_t *fin = pj_array();
    size_t n = pmcp_pool_server_count(p);
    for (size_t i = 0; fin && i < n; i++) {
        bool up = false;
        const char *name = pmcp_pool_server_at(p, i, &up);
        if (name)
            pj_array_append_new(
                fin, pj_pack("{s:s, s:s}", "name", name, "status", up ? "ready" : "failed"));
    }
    char *final = fin ? pj_dumps(fin, PJ_COMPACT) : NULL;
    pj_decref(fin);
    pthread_mutex_lock(&s->mu);
    s->mcp_final = final;
    bool keep = s->state == SESS_OPEN && p;
    if (keep) s->ext = p;
    if (why) {
        size_t ol = s->mcp_errors ? strlen(s->mcp_errors) : 0, nl = strlen(why);
        char *ne = realloc(s->mcp_errors, ol + nl + 1);
        if (ne) {
            memcpy(ne + ol, why, nl + 1);
            s->mcp_errors = ne;
        }
    }
    if (!p && !why) {
        static const char oom[] = "MCP servers: out of memory starting them\n";
        free(s->mcp_errors);
        s->mcp_errors = strdup(oom);
    }
    s->mcp_pending = false;
    pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->mu);
    free(why);
    if (!keep) pmcp_pool_close(p); /* closed meanwhile: no server outlives the session */
    maybe_send_status(s);
    connector_free(k);
    pct__sess_release(s);
    pb_count_leave(&c->mu, &c->cv, &c->connectors);
    return NULL;
}

int pct__mcp_open(pct_sess *s, const char *mcp_json, char **notices) {
    pct_controller *c = s->c;
    /* User-level servers come from the settings document the host supplied. */
    pj_t *servers = c->settings ? pj_object_get(c->settings->doc, "mcpServers") : NULL;
    pj_t *wrap = servers ? pj_pack("{s:O}", "mcpServers", servers) : NULL;
    char *user = wrap ? pj_dumps(wrap, PJ_COMPACT) : NULL;
    pj_decref(wrap);
    s->tool_ctx = (ptl_ctx){.cwd = s->cwd, .sandbox = &c->sandbox};
    if (c->home && !s->oauth.dir) { /* the user's MCP OAuth tokens: ~/.peri/oauth */
        size_t n = strlen(c->home) + 16;
        char *dir = malloc(n);
        if (dir) snprintf(dir, n, "%s/.peri/oauth", c->home);
        s->oauth = (pmcp_oauth_opts){.dir = dir,
                                     .show_login = c->sink.on_mcp_login ? show_login : NULL,
                                     .ctx = s,
                                     .stop = &s->oauth_stop};
    }
    if (c->sink.fs_read || c->sink.fs_write || c->sink.fs_read_cancel || c->sink.fs_write_cancel)
        s->tool_ctx.client_fs = &s->client_fs;
    if (c->sink.term_run) s->tool_ctx.client_term = &s->client_term;
    /* The project's own servers start only when the user trusted that exact content;
     * otherwise the first prompt asks (pct__trust_before_turn). Trusted content's hooks
     * are installed before the first turn (pct__trust_before_turn, which then leaves these
     * servers alone). */
    pag_project_config pc;
    bool have_pc = pag_project_config_read(s->cwd, &pc) == 0;
    bool any = have_pc && pag_project_config_any(&pc);
    bool is_trusted = any && pag_trust_is_trusted(c->home, &pc);
    char *project = is_trusted && pc.servers_json ? strdup(pc.servers_json) : NULL;
    if (project) memcpy(s->servers_on, pc.digest, sizeof s->servers_on);
    if (have_pc) pag_project_config_free(&pc);
    char *why = NULL;
    if (any && !is_trusted) {
        static const char msg[] =
            "this project's .peri/settings.json names MCP servers or allow rules that you "
            "have not trusted: none of them applies. You will be asked at the first prompt "
            "(or run `peri trust DIR`).\n";
        why = strdup(msg);
        s->mcp_errors = why ? strdup(why) : NULL; /* before any connector can add to it */
    }
    /* The builtin Workspace server: opened here (it starts at its first call). */
    pmcp_pool_opts po = {.cwd = s->cwd, .workspace = &s->tool_ctx, .log = s->c->log};
    s->mcp = pmcp_pool_open(&po, NULL);
    pj_t *names = starting_names(user, project, mcp_json);
    int rc = s->mcp && pmcp_pool_builtin(s->mcp) && names ? 0 : -1;
    if (rc == 0 && pj_array_size(names) == 0) {
        /* Nothing to start: an empty pool at once (project servers trusted later join it). */
        pmcp_pool_opts none = {.cwd = s->cwd};
        if (!(s->ext = pmcp_pool_open(&none, NULL))) rc = -1;
    } else if (rc == 0) {
        connector *k = calloc(1, sizeof *k);
        if (k) {
            k->s = s;
            k->user = user;
            k->project = project;
            k->acp = mcp_json ? strdup(mcp_json) : NULL;
            user = project = NULL;
        }
        s->mcp_names = pj_dumps(names, PJ_COMPACT);
        if (!k || (mcp_json && !k->acp) || !s->mcp_names) {
            if (k) connector_free(k);
            rc = -1;
        } else {
            s->mcp_pending = true;
            s->mcp_report = true;
            pct__sess_retain(s);
            pthread_mutex_lock(&c->mu);
            c->connectors++;
            pthread_mutex_unlock(&c->mu);
            if (pb_thread_detached(connector_main, k) != 0)
                connector_main(k); /* no thread: connect here, as before */
        }
    }
    pj_decref(names);
    free(user);
    free(project);
    if (why) pb_log(&s->c->log, PB_LOG_WARN, "session %s: %s", s->id, why);
    if (notices)
        *notices = why;
    else
        free(why);
    return rc;
}

pmcp_pool *pct__mcp_ext(pct_sess *s) {
    pthread_mutex_lock(&s->mu);
    pmcp_pool *p = s->ext;
    pthread_mutex_unlock(&s->mu);
    return p;
}

void pct__mcp_wait(pct_sess *s, uint64_t gen) {
    pthread_mutex_lock(&s->mu);
    while (s->mcp_pending && s->state == SESS_OPEN && s->gate_gen < gen) {
        /* a cancel raises gate_gen: looked at every 50 ms */
        struct timespec dl = pb_deadline(CLOCK_REALTIME, 50);
        pthread_cond_timedwait(&s->cv, &s->mu, &dl);
    }
    pthread_mutex_unlock(&s->mu);
}

void pct_session_answered(pct_controller *c, const char *id) {
    pct_sess *s = pct__sess_get(c, id);
    if (!s) return;
    pthread_mutex_lock(&s->mu);
    s->answered = true;
    pthread_cond_broadcast(&s->cv); /* a pending OAuth login URL may go out now */
    pthread_mutex_unlock(&s->mu);
    maybe_send_status(s);
    pct__sess_release(s);
}

char *pct_session_mcp_status(pct_controller *c, const char *id) {
    pct_sess *s = pct__sess_get(c, id);
    if (!s) return NULL;
    char *txt = pct__mcp_status(s);
    pct__sess_release(s);
    return txt;
}
