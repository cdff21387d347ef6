/*
 * mcp.c — the reactor's MCP tool sources: the settings' MCP servers that have a `url`
 * (one set for every session, connected at start) and the streamable HTTP servers a
 * client gives in session/new or session/load `mcpServers` (one set per session, its
 * tools offered to that session only). Each server is reached with the event-driven MCP
 * client (peri/mcp_ev.h) over the reactor's ports and offered to the model as
 * "mcp__<server>__<tool>" through the tool seam (paw_tool_source). Servers connect in
 * the background; a server's tools are offered once it is ready; one that fails offers
 * nothing. Calls of MCP tools go through the permission gate (needs_permission), as
 * natively.
 *
 * Status, as natively (docs/acp.md): the session/new or session/load answer names the
 * session's servers (settings' and its own) in _meta "peri.mcpServers"; once every one
 * is ready or failed, one `_peri/mcp_status` follows, always after that answer.
 *
 * The network grant is the host's: a session's URL is reached only when the engine host
 * grants its host:port (settings' URLs, the store and `--allow`); a client never widens
 * it. An ungranted URL fails that server with a reason naming the URL.
 *
 * Owns: one client per server (freed by the client itself after its settled callback),
 * the tool table offered now, one record per call in flight; the per-session sets in
 * p->msets (closed when their session ends, freed with the reactor).
 */
#include "paw_int.h"
#include "peri/mcp_ev.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PAW_MCP_MAX 16

typedef struct msrv {
    struct paw_mcp *m;
    char *name; /* the settings' key, or the entry's name */
    char *part; /* its part of the tool names */
    char *url;
    char last[300];         /* the client's last warning (why a start failed) */
    char *error;            /* "MCP server \"x\" is unavailable: ..." once failed */
    pmcp_ev_client *client; /* NULL once settled (or never made) */
    bool ready, failed, closing;
} msrv;

typedef struct mtool {
    char *full; /* "mcp__<part>__<tool>" */
    msrv *srv;
    const char *tool; /* the server's own name (borrowed from its client) */
} mtool;

typedef struct mcall {
    struct mcall *next;
    struct paw_mcp *m;
    pmcp_ev_call *call;
    paw_tool_done_fn done;
    void *ud;
} mcall;

/* A table replaced by a newer one: sessions may still hold its names, so it is kept
 * until close (a server becomes ready once, so there are at most as many). */
typedef struct retired {
    struct retired *next;
    mtool *tools;
    pag_tool_info *infos;
    size_t n;
} retired;

typedef struct paw_mcp {
    paw *p;
    struct paw_mcp *next;    /* p->msets */
    char sid[PST_ID_LEN];    /* the session of a per-session set; "" for the settings' */
    bool answered, reported; /* the session's answer went out; its status too */
    paw_tool_source src;
    retired *old;
    msrv srv[PAW_MCP_MAX];
    size_t nsrv;
    mtool *tools;         /* parallel to infos */
    pag_tool_info *infos; /* what the seam offers */
    size_t ntools;
    mcall *calls;
    bool closed;
    size_t unsettled; /* clients not yet settled after close */
} paw_mcp;

/* Letters, digits, '-' and '_' (anything else becomes '_'); a server's part has no "__"
 * inside and no '_' at its end (the native pool's rule, so an allow rule
 * "mcp__files__*" means the same server in both forms); never empty. */
static char *name_part(const char *s, bool server) {
    size_t n = strlen(s);
    char *o = malloc(n + 2);
    if (!o) return NULL;
    size_t w = 0;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                  c == '-' || c == '_';
        c = ok ? c : '_';
        if (server && c == '_' && w > 0 && o[w - 1] == '_') continue;
        o[w++] = c;
    }
    while (server && w > 1 && o[w - 1] == '_')
        w--;
    if (w == 0) o[w++] = '_';
    o[w] = '\0';
    return o;
}

static void tools_free(mtool *t, pag_tool_info *infos, size_t n) {
    for (size_t i = 0; i < n; i++)
        free(t[i].full);
    free(t);
    free(infos);
}

/* Frees the table and every retired one (close: no session holds a name any more). */
static void table_free(paw_mcp *m) {
    tools_free(m->tools, m->infos, m->ntools);
    m->tools = NULL;
    m->infos = NULL;
    m->ntools = 0;
    while (m->old) {
        retired *r = m->old;
        m->old = r->next;
        tools_free(r->tools, r->infos, r->n);
        free(r);
    }
}

/* Rebuilds the table from the ready servers; the previous one is retired. */
static void rebuild(paw_mcp *m) {
    if (m->tools) {
        retired *r = calloc(1, sizeof *r);
        if (!r) return; /* keep offering the previous table */
        *r = (retired){.next = m->old, .tools = m->tools, .infos = m->infos, .n = m->ntools};
        m->old = r;
        m->tools = NULL;
        m->infos = NULL;
        m->ntools = 0;
    }
    size_t total = 0;
    for (size_t i = 0; i < m->nsrv; i++)
        if (m->srv[i].ready && m->srv[i].client) total += pmcp_ev_tool_count(m->srv[i].client);
    if (!total || m->closed) return;
    m->tools = calloc(total, sizeof *m->tools);
    m->infos = calloc(total, sizeof *m->infos);
    if (!m->tools || !m->infos) {
        tools_free(m->tools, m->infos, 0);
        m->tools = NULL;
        m->infos = NULL;
        return;
    }
    for (size_t i = 0; i < m->nsrv; i++) {
        msrv *s = &m->srv[i];
        if (!s->ready || !s->client) continue;
        for (size_t j = 0; j < pmcp_ev_tool_count(s->client); j++) {
            const pmcp_ev_tool *t = pmcp_ev_tool_at(s->client, j);
            char *tn = name_part(t->name, false);
            size_t need = strlen(s->part) + (tn ? strlen(tn) : 0) + 8;
            char *full = tn ? malloc(need) : NULL;
            if (full) snprintf(full, need, "mcp__%s__%s", s->part, tn);
            free(tn);
            if (!full) continue;
            size_t k = m->ntools++;
            m->tools[k] = (mtool){.full = full, .srv = s, .tool = t->name};
            m->infos[k] = (pag_tool_info){.name = full,
                                          .description = t->description,
                                          .schema_json = t->schema_json,
                                          .kind = t->read_only ? "read" : "other",
                                          .needs_permission = !t->read_only,
                                          .read_only = t->read_only};
        }
    }
}

static void report_all(paw *p);

/* "host:port" of an http(s) URL into out (the default port added), for the --allow hint. */
static void authority(const char *url, char *out, size_t n) {
    bool tls = !strncmp(url, "https://", 8);
    const char *h = strstr(url, "://");
    h = h ? h + 3 : url;
    size_t len = strcspn(h, "/?#");
    const char *rb = memchr(h, ']', len);
    const char *colon = memchr(rb ? rb : h, ':', len - (size_t)((rb ? rb : h) - h));
    snprintf(out, n, "%.*s%s", (int)len, h, colon ? "" : tls ? ":443" : ":80");
}

/* A server that failed: its reason kept for the status, and logged. A destination the
 * host does not grant says which URL and how to grant it (a client never widens it). */
static void srv_failed(msrv *s, const char *url, const char *err) {
    char why[1200], code[40];
    /* the port's PN_E_DENIED, by name or by number (the HTTP client gives either) */
    snprintf(code, sizeof code, "port error %d)", (int)PN_E_DENIED);
    if (url && err && (strstr(err, "denied") || strstr(err, code))) {
        char hp[300];
        authority(url, hp, sizeof hp);
        snprintf(why, sizeof why,
                 "MCP server \"%.100s\" is unavailable: %.300s is not granted by the host's "
                 "network policy (the grant holds the settings' URLs, the store and what the "
                 "host is given; a session cannot widen it): start the engine host with "
                 "--allow %.300s",
                 s->name, url, hp);
    } else {
        snprintf(why, sizeof why, "MCP server \"%.100s\" is unavailable: %.500s", s->name,
                 err && *err ? err : "it could not be started");
    }
    s->failed = true;
    free(s->error);
    s->error = strdup(why);
    paw__log(s->m->p, 0, "%s", why);
}

static void on_ready(void *ctx, pmcp_ev_status st, const char *err) {
    msrv *s = ctx;
    if (st == PMCP_EV_OK) {
        s->ready = true;
        paw__log(s->m->p, 2, "MCP server \"%s\": %zu tools", s->name,
                 pmcp_ev_tool_count(s->client));
        rebuild(s->m);
    } else {
        srv_failed(s, s->url, err);
    }
    report_all(s->m->p);
}

static const pag_tool_info *m_list(void *ctx, size_t *n) {
    paw_mcp *m = ctx;
    *n = m->ntools;
    return m->infos;
}

static void call_done(void *ctx, const pmcp_ev_result *r) {
    mcall *c = ctx;
    paw_mcp *m = c->m;
    for (mcall **q = &m->calls; *q; q = &(*q)->next)
        if (*q == c) {
            *q = c->next;
            break;
        }
    pag_tool_output o = {0};
    o.output = strdup(r->text ? r->text : "");
    o.is_error = r->is_error;
    int rc = r->status == PMCP_EV_E_CANCELLED ? 1 : 0;
    c->done(c->ud, rc, &o);
    pag_tool_output_clear(&o);
    free(c);
}

static int m_start(void *ctx, const char *name, const char *args, paw_tool_done_fn done, void *ud,
                   void **handle) {
    paw_mcp *m = ctx;
    const mtool *t = NULL;
    for (size_t i = 0; i < m->ntools && !t; i++)
        if (!strcmp(m->tools[i].full, name)) t = &m->tools[i];
    mcall *c = t && t->srv->client ? calloc(1, sizeof *c) : NULL;
    if (!c) return -1;
    *c = (mcall){.m = m, .done = done, .ud = ud};
    char err[200];
    pmcp_ev_status st;
    c->call =
        pmcp_ev_call_tool(t->srv->client, t->tool, args, 0, call_done, c, &st, err, sizeof err);
    if (!c->call) {
        paw__log(m->p, 1, "MCP tool %s: %s", name, err);
        free(c);
        return -1;
    }
    c->next = m->calls;
    m->calls = c;
    *handle = c;
    return 0;
}

static void m_cancel(void *ctx, void *handle) {
    (void)ctx;
    mcall *c = handle;
    pmcp_ev_cancel(c->call);
}

static bool m_event(void *ctx, const pn_event *ev) {
    paw_mcp *m = ctx;
    for (size_t i = 0; i < m->nsrv; i++)
        if (m->srv[i].client && pmcp_ev_on_event(m->srv[i].client, ev)) return true;
    return false;
}

static void srv_settled(void *ctx) {
    msrv *s = ctx;
    s->client = NULL; /* freed by the client after this returns */
    s->m->unsettled--;
}

static void m_close(void *ctx) {
    paw_mcp *m = ctx;
    m->closed = true;
    table_free(m);
    for (size_t i = 0; i < m->nsrv; i++) {
        msrv *s = &m->srv[i];
        if (!s->client || s->closing) continue;
        s->closing = true;
        m->unsettled++;
        if (pmcp_ev_close(s->client, srv_settled, s) != PMCP_EV_OK) {
            s->client = NULL; /* freed at once */
            m->unsettled--;
        }
    }
}

static bool m_settled(void *ctx) {
    paw_mcp *m = ctx;
    return m->closed && m->unsettled == 0 && !m->calls;
}

/* The client's diagnostics: the last warning is kept (pmcp_ev_connect returns only a
 * status; the reason, e.g. a destination the host does not grant, is logged). */
static void srv_log(void *ud, pb_log_level level, const char *msg) {
    msrv *s = ud;
    if (level < PB_LOG_WARN) return;
    const char *why = strstr(msg, "could not start: ");
    snprintf(s->last, sizeof s->last, "%s", why ? why + 17 : msg);
}

/* Starts one server: headers are the request headers (copied by the client). */
static void add_server(paw_mcp *m, const char *name, const char *url, const pn_http_header *h,
                       size_t nh) {
    paw *p = m->p;
    msrv *s = &m->srv[m->nsrv++];
    *s = (msrv){.m = m, .name = strdup(name), .part = name_part(name, true), .url = strdup(url)};
    char err[300] = "";
    pmcp_ev_status st;
    if (s->name && s->part && s->url)
        s->client = pmcp_ev_new(p->h.ports,
                                &(pmcp_ev_opts){.url = url,
                                                .name = name,
                                                .headers = nh ? h : NULL,
                                                .nheaders = nh,
                                                .log = {.fn = srv_log, .ud = s}},
                                &st, err, sizeof err);
    if (!s->client || pmcp_ev_connect(s->client, on_ready, s) != PMCP_EV_OK) {
        if (!err[0]) snprintf(err, sizeof err, "%s", s->last);
        if (s->name)
            srv_failed(s, url, err[0] ? err : NULL);
        else
            s->failed = true;
        if (s->client) {
            s->closing = true;
            m->unsettled++;
            if (pmcp_ev_close(s->client, srv_settled, s) != PMCP_EV_OK) {
                s->client = NULL;
                m->unsettled--;
            }
        }
    }
}

static paw_mcp *set_new(paw *p) {
    paw_mcp *m = calloc(1, sizeof *m);
    if (!m) return NULL;
    m->p = p;
    m->src = paw__mcp_source(m);
    return m;
}

paw_mcp *paw__mcp_new(paw *p, const pj_t *servers) {
    paw_mcp *m = set_new(p);
    if (!m) return NULL;
    const char *name;
    pj_t *v;
    pj_object_foreach((pj_t *)servers, name, v) {
        const char *url = pj_string_value(pj_object_get(v, "url"));
        if (!url || pj_object_get(v, "command") || m->nsrv >= PAW_MCP_MAX) continue;
        char kind[160];
        snprintf(kind, sizeof kind, "mcp:%.120s", name);
        char *secret = paw__credential(p, kind), auth[600] = "";
        pn_http_header h = {.name = "Authorization", .value = auth};
        if (secret) snprintf(auth, sizeof auth, "Bearer %.500s", secret);
        add_server(m, name, url, &h, secret ? 1 : 0);
        if (secret) {
            memset(secret, 0, strlen(secret));
            memset(auth, 0, sizeof auth);
            free(secret);
        }
    }
    return m;
}

/* ---------------------------------------------------------------- per session */

/* The live (not closed) set of session sid; a closed one waits for settlement only. */
static paw_mcp *set_of(paw *p, const char *sid) {
    for (paw_mcp *m = p->msets; m; m = m->next)
        if (!m->closed && !strcmp(m->sid, sid)) return m;
    return NULL;
}

int paw__mcp_session_open(paw *p, const char *sid, const pj_t *servers) {
    if (set_of(p, sid)) return 0; /* a live session loaded again keeps its servers */
    bool own = pj_array_size((pj_t *)servers) > 0;
    if (!own && !(p->mcp && p->mcp->nsrv)) return 0; /* nothing to report */
    paw_mcp *m = set_new(p);
    if (!m) return -1;
    snprintf(m->sid, sizeof m->sid, "%s", sid);
    m->next = p->msets;
    p->msets = m;
    size_t i;
    pj_t *v;
    pj_array_foreach((pj_t *)servers, i, v) {
        const char *name = pj_string_value(pj_object_get(v, "name"));
        const char *url = pj_string_value(pj_object_get(v, "url"));
        if (!name || !url || m->nsrv >= PAW_MCP_MAX) continue; /* checked by the method */
        pn_http_header h[16];
        size_t nh = 0, j;
        pj_t *hv;
        pj_array_foreach(pj_object_get(v, "headers"), j, hv) {
            const char *hn = pj_string_value(pj_object_get(hv, "name"));
            const char *hval = pj_string_value(pj_object_get(hv, "value"));
            if (hn && hval && nh < 16) h[nh++] = (pn_http_header){.name = hn, .value = hval};
        }
        add_server(m, name, url, h, nh);
    }
    return 0;
}

/* The servers of the session: the settings' first, then its own. */
static pj_t *status_of(paw *p, const paw_mcp *m, bool *final) {
    pj_t *servers = pj_array(), *errors = pj_array();
    *final = true;
    const paw_mcp *sets[2] = {p->mcp, m};
    for (size_t k = 0; k < 2; k++)
        for (size_t i = 0; sets[k] && i < sets[k]->nsrv; i++) {
            const msrv *s = &sets[k]->srv[i];
            const char *st = s->ready ? "ready" : s->failed ? "failed" : "starting";
            if (!s->ready && !s->failed) *final = false;
            pj_array_append_new(
                servers, pj_pack("{s:s, s:s}", "name", s->name ? s->name : "?", "status", st));
            if (s->error) pj_array_append_new(errors, pj_string(s->error));
        }
    pj_t *r = pj_pack("{s:o, s:o}", "servers", servers, "errors", errors);
    return r;
}

void paw__mcp_status_meta(paw *p, const char *sid, pj_t *result) {
    paw_mcp *m = set_of(p, sid);
    if (!m || !result || m->answered) return;
    bool final;
    pj_t *st = status_of(p, m, &final);
    pj_t *meta = pj_object_get(result, "_meta");
    if (!pj_is_object(meta)) {
        meta = pj_object();
        pj_object_set_new(result, "_meta", meta);
    }
    pj_object_set(meta, "peri.mcpServers", pj_object_get(st, "servers"));
    if (pj_array_size(pj_object_get(st, "errors")))
        pj_object_set(meta, "peri.mcpErrors", pj_object_get(st, "errors"));
    pj_decref(st);
}

/* Sends `_peri/mcp_status` of every answered session whose servers are all settled. */
static void report_all(paw *p) {
    for (paw_mcp *m = p->msets; m; m = m->next) {
        if (!m->answered || m->reported || m->closed) continue;
        bool final;
        pj_t *st = status_of(p, m, &final);
        if (final && st) {
            m->reported = true;
            pj_object_set_new(st, "sessionId", pj_string(m->sid));
            pj_object_set_new(st, "_meta", pj_pack("{s:i}", "peri.sessionEpoch", 1));
            paw__notify(p, "_peri/mcp_status", st);
        } else {
            pj_decref(st);
        }
    }
}

void paw__mcp_session_answered(paw *p, const char *sid) {
    paw_mcp *m = set_of(p, sid);
    if (!m || m->answered) return;
    m->answered = true;
    report_all(p);
}

const paw_tool_source *paw__mcp_session_source(paw *p, const char *sid) {
    paw_mcp *m = set_of(p, sid);
    return m && !m->closed && m->nsrv ? &m->src : NULL;
}

void paw__mcp_session_end(paw *p, const char *sid) {
    paw_mcp *m = set_of(p, sid);
    if (m && !m->closed) m_close(m);
}

bool paw__mcp_sets_event(paw *p, const pn_event *ev) {
    for (paw_mcp *m = p->msets; m; m = m->next)
        if (m_event(m, ev)) return true;
    return false;
}

bool paw__mcp_sets_settled(paw *p) {
    for (paw_mcp *m = p->msets; m; m = m->next) {
        if (!m->closed) m_close(m);
        if (!m_settled(m)) return false;
    }
    return true;
}

void paw__mcp_sets_free(paw *p) {
    while (p->msets) {
        paw_mcp *m = p->msets;
        p->msets = m->next;
        paw__mcp_free(m);
    }
}

paw_tool_source paw__mcp_source(paw_mcp *m) {
    return (paw_tool_source){.ctx = m,
                             .list = m_list,
                             .start = m_start,
                             .cancel = m_cancel,
                             .on_event = m_event,
                             .close = m_close,
                             .settled = m_settled};
}

void paw__mcp_free(paw_mcp *m) {
    if (!m) return;
    table_free(m);
    for (size_t i = 0; i < m->nsrv; i++) {
        free(m->srv[i].name);
        free(m->srv[i].part);
        free(m->srv[i].url);
        free(m->srv[i].error);
    }
    free(m);
}
