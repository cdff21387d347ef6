/*
 * mcp.c — the reactor's MCP tool source: the settings' MCP servers that have a `url`,
 * each reached with the event-driven MCP client (peri/mcp_ev.h) over the reactor's
 * ports, offered to the model as "mcp__<server>__<tool>" through the tool seam
 * (paw_tool_source). Servers connect at start in the background; a server's tools are
 * offered once it is ready; one that fails is logged with the client's reason and
 * offers nothing. Calls of MCP tools go through the permission gate (needs_permission),
 * as natively.
 *
 * Owns: one client per server (freed by the client itself after its settled callback),
 * the tool table offered now, one record per call in flight.
 */
#include "paw_int.h"
#include "peri/mcp_ev.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PAW_MCP_MAX 16

typedef struct msrv {
    struct paw_mcp *m;
    char *name;             /* the settings' key */
    char *part;             /* its part of the tool names */
    pmcp_ev_client *client; /* NULL once settled (or never made) */
    bool ready, closing;
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

static void on_ready(void *ctx, pmcp_ev_status st, const char *err) {
    msrv *s = ctx;
    if (st == PMCP_EV_OK) {
        s->ready = true;
        paw__log(s->m->p, 2, "MCP server \"%s\": %zu tools", s->name,
                 pmcp_ev_tool_count(s->client));
        rebuild(s->m);
    } else {
        paw__log(s->m->p, 0, "MCP server \"%s\" is unavailable: %s", s->name, err ? err : "");
    }
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

paw_mcp *paw__mcp_new(paw *p, const pj_t *servers) {
    paw_mcp *m = calloc(1, sizeof *m);
    if (!m) return NULL;
    m->p = p;
    const char *name;
    pj_t *v;
    pj_object_foreach((pj_t *)servers, name, v) {
        const char *url = pj_string_value(pj_object_get(v, "url"));
        if (!url || pj_object_get(v, "command") || m->nsrv >= PAW_MCP_MAX) continue;
        msrv *s = &m->srv[m->nsrv];
        *s = (msrv){.m = m, .name = strdup(name), .part = name_part(name, true)};
        char kind[160], err[300] = "";
        snprintf(kind, sizeof kind, "mcp:%.120s", name);
        char *secret = paw__credential(p, kind), auth[600] = "";
        pn_http_header h = {.name = "Authorization", .value = auth};
        if (secret) snprintf(auth, sizeof auth, "Bearer %.500s", secret);
        pmcp_ev_status st;
        if (s->name && s->part)
            s->client = pmcp_ev_new(p->h.ports,
                                    &(pmcp_ev_opts){.url = url,
                                                    .name = name,
                                                    .headers = secret ? &h : NULL,
                                                    .nheaders = secret ? 1 : 0},
                                    &st, err, sizeof err);
        if (secret) {
            memset(secret, 0, strlen(secret));
            memset(auth, 0, sizeof auth);
            free(secret);
        }
        if (!s->client || pmcp_ev_connect(s->client, on_ready, s) != PMCP_EV_OK) {
            paw__log(p, 0, "MCP server \"%s\" is unavailable: %s", name,
                     err[0] ? err : "it could not be started");
            if (s->client) {
                s->closing = true;
                m->unsettled++;
                if (pmcp_ev_close(s->client, srv_settled, s) != PMCP_EV_OK) {
                    s->client = NULL;
                    m->unsettled--;
                }
            }
        }
        m->nsrv++;
    }
    return m;
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
    }
    free(m);
}
