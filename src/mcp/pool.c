/*
 * pool.c — MCP server configuration and the per-session client pool.
 *
 * Owns: parsing server lists (ACP mcpServers arrays and the settings' "mcpServers"
 * object), merging user settings, the project's servers (only those the host passes in:
 * trusted content, never replacing a user server of the same name) and ACP entries (an
 * ACP entry replaces an earlier one of the same name), connecting every server in
 * parallel, exposing their tools under "mcp__<server>__<tool>" and mapping tools/call
 * results onto ACP ToolCallContent.
 *
 * The pool also holds the builtin Workspace server: an in-process pair whose
 * server runs the registry tools with the session's own tool context, and whose results
 * carry the ACP data in _meta["peri/acp"]; its tools keep their plain names. It starts
 * at the first builtin call, so an idle session holds no thread and no descriptor.
 *
 * Invariants: a server that fails never fails the pool (it is described in the
 * notices and its tools are absent); the tool table changes only in pmcp_pool_refresh
 * (notifications/tools/list_changed) and when servers are added, under the pool's
 * mutex. Tables carry a generation; the pool remembers the newest one its reader took
 * pointers from (pmcp_pool_tool_at), and a replaced table is freed at the next change
 * unless it is that one, so the reader's pointers never dangle and at most two tables
 * are alive, however often a server changes its list. A call copies what it needs
 * from the table under the mutex and borrows nothing. close() closes every client,
 * which kills stdio process groups and joins the in-process server.
 */
#include "mcp/mcp_int.h"

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_TOOL_NAME  64
#define MAX_MODEL_TEXT (64u << 10) /* like the builtin tools' default max_output */

/* A name/value list (env or headers) and its strings. */
static void kv_free(pmcp_kv *kv, size_t n) {
    for (size_t i = 0; kv && i < n; i++) {
        free(kv[i].name);
        free(kv[i].value);
    }
    free(kv);
}

void pmcp_server_config_clear(pmcp_server_config *c) {
    if (!c) return;
    free(c->name);
    free(c->command);
    pb_strv_free(c->args, c->nargs);
    kv_free(c->env, c->nenv);
    free(c->url);
    kv_free(c->headers, c->nheaders);
    free(c->root);
    memset(c, 0, sizeof *c);
}

static void note(char **errors, const char *fmt, const char *a, const char *b) {
    if (!errors) return;
    char line[600];
    snprintf(line, sizeof line, fmt, a ? a : "", b ? b : "");
    size_t old = *errors ? strlen(*errors) : 0, n = strlen(line);
    char *nb = realloc(*errors, old + n + 2);
    if (!nb) return;
    memcpy(nb + old, line, n);
    nb[old + n] = '\n';
    nb[old + n + 1] = '\0';
    *errors = nb;
}

/* [{"name","value"}] or {K: V} -> kv array. 0, or -1 on a bad shape / OOM. */
static int parse_kv(pj_t *v, pmcp_kv **out, size_t *n) {
    *out = NULL;
    *n = 0;
    if (!v || pj_is_null(v)) return 0;
    size_t cnt = pj_is_array(v) ? pj_array_size(v) : pj_is_object(v) ? pj_object_size(v) : 0;
    if (!pj_is_array(v) && !pj_is_object(v)) return -1;
    pmcp_kv *kv = calloc(cnt ? cnt : 1, sizeof *kv);
    if (!kv) return -1;
    size_t k = 0;
    int rc = 0;
    if (pj_is_array(v)) {
        size_t i;
        pj_t *e;
        pj_array_foreach(v, i, e) {
            const char *nm = pj_string_value(pj_object_get(e, "name"));
            const char *val = pj_string_value(pj_object_get(e, "value"));
            if (!nm || !val) {
                rc = -1;
                break;
            }
            kv[k].name = strdup(nm);
            kv[k].value = strdup(val);
            if (!kv[k].name || !kv[k].value) rc = -1;
            k++;
        }
    } else {
        const char *key;
        pj_t *e;
        pj_object_foreach(v, key, e) {
            if (!pj_is_string(e)) {
                rc = -1;
                break;
            }
            kv[k].name = strdup(key);
            kv[k].value = strdup(pj_string_value(e));
            if (!kv[k].name || !kv[k].value) rc = -1;
            k++;
        }
    }
    *out = kv;
    *n = k;
    return rc;
}

/* One server entry; name given separately for the settings shape. */
static int parse_entry(const char *name, pj_t *e, pmcp_server_config *c, char *why, size_t whylen) {
    memset(c, 0, sizeof *c);
    if (!pj_is_object(e)) {
        snprintf(why, whylen, "entry is not an object");
        return -1;
    }
    if (!name) name = pj_string_value(pj_object_get(e, "name"));
    if (!name || !name[0]) {
        snprintf(why, whylen, "entry without a name");
        return -1;
    }
    const char *type = pj_string_value(pj_object_get(e, "type"));
    if (!(c->name = strdup(name))) goto oom;
    if (type &&
        (!strcmp(type, "http") || !strcmp(type, "streamable-http") || !strcmp(type, "sse"))) {
        c->kind = strcmp(type, "sse") ? PMCP_HTTP : PMCP_SSE;
        const char *url = pj_string_value(pj_object_get(e, "url"));
        if (!url) {
            snprintf(why, whylen, "%s entry without a url", type);
            return -1;
        }
        if (!(c->url = strdup(url))) goto oom;
        if (parse_kv(pj_object_get(e, "headers"), &c->headers, &c->nheaders)) {
            snprintf(why, whylen, "headers must be [{name,value}] or an object of strings");
            return -1;
        }
        return 0;
    }
    if (type && strcmp(type, "stdio") != 0) {
        snprintf(why, whylen, "unknown transport type \"%.40s\"", type);
        return -1;
    }
    c->kind = PMCP_STDIO;
    const char *cmd = pj_string_value(pj_object_get(e, "command"));
    if (!cmd || !cmd[0]) {
        snprintf(why, whylen, "stdio entry without a command");
        return -1;
    }
    if (!(c->command = strdup(cmd))) goto oom;
    pj_t *args = pj_object_get(e, "args");
    if (args && !pj_is_array(args)) {
        snprintf(why, whylen, "args must be an array of strings");
        return -1;
    }
    c->args = calloc(pj_array_size(args) + 1, sizeof *c->args);
    if (!c->args) goto oom;
    size_t i;
    pj_t *a;
    pj_array_foreach(args, i, a) {
        if (!pj_is_string(a)) {
            snprintf(why, whylen, "args must be an array of strings");
            return -1;
        }
        if (!(c->args[c->nargs++] = strdup(pj_string_value(a)))) goto oom;
    }
    if (parse_kv(pj_object_get(e, "env"), &c->env, &c->nenv)) {
        snprintf(why, whylen, "env must be [{name,value}] or an object of strings");
        return -1;
    }
    return 0;
oom:
    snprintf(why, whylen, "out of memory");
    return -1;
}

static int push(pmcp_server_config **arr, size_t *n, pmcp_server_config *c) {
    /* same name: the later entry replaces the earlier one */
    for (size_t i = 0; i < *n; i++) {
        if (!strcmp((*arr)[i].name, c->name)) {
            pmcp_server_config_clear(&(*arr)[i]);
            (*arr)[i] = *c;
            return 0;
        }
    }
    pmcp_server_config *na = realloc(*arr, (*n + 1) * sizeof *na);
    if (!na) return -1;
    *arr = na;
    na[(*n)++] = *c;
    return 0;
}

/* Parses one entry (key: its name in the settings shape, NULL: from the entry) and
 * appends it; a bad one is noted under where and skipped. */
static void add_entry(const char *key, pj_t *e, const char *where, pmcp_server_config **out,
                      size_t *n, char **errors) {
    char why[256] = "out of memory";
    pmcp_server_config c;
    if (parse_entry(key, e, &c, why, sizeof why) != 0 || push(out, n, &c) != 0) {
        note(errors, "%s skipped: %s", where, why);
        pmcp_server_config_clear(&c);
    }
}

int pmcp_parse_servers(const char *json_text, const char *origin, pmcp_server_config **out,
                       size_t *n, char **errors) {
    pj_error_t je;
    pj_t *root = json_text ? pj_loads(json_text, 0, &je) : NULL;
    const char *org = origin ? origin : "mcpServers";
    if (!root) {
        note(errors, "%s: not valid JSON%s", org, NULL);
        return -1;
    }
    int rc = 0;
    char where[300];
    if (pj_is_array(root)) {
        size_t i;
        pj_t *e;
        pj_array_foreach(root, i, e) {
            snprintf(where, sizeof where, "%s: entry %zu", org, i);
            add_entry(NULL, e, where, out, n, errors);
        }
    } else if (pj_is_object(root)) {
        pj_t *servers = pj_object_get(root, "mcpServers");
        if (servers && !pj_is_object(servers)) {
            note(errors, "%s: \"mcpServers\" must be an object%s", org, NULL);
            rc = -1;
        }
        const char *key;
        pj_t *e;
        pj_object_foreach(servers, key, e) {
            snprintf(where, sizeof where, "%s: server \"%.100s\"", org, key);
            add_entry(key, e, where, out, n, errors);
        }
    } else {
        note(errors, "%s: expected an array or an object%s", org, NULL);
        rc = -1;
    }
    pj_decref(root);
    return rc;
}

/* ---------------------------------------------------------------- content mapping */

static pj_t *acp_block(pj_t *b) {
    const char *type = pj_string_value(pj_object_get(b, "type"));
    static const char *const keep[] = {"text",     "data",       "mimeType",    "uri",
                                       "name",     "title",      "description", "size",
                                       "resource", "annotations"};
    if (type && (!strcmp(type, "text") || !strcmp(type, "image") || !strcmp(type, "audio") ||
                 !strcmp(type, "resource") || !strcmp(type, "resource_link"))) {
        pj_t *o = pj_pack("{s:s}", "type", type);
        for (size_t i = 0; o && i < sizeof keep / sizeof keep[0]; i++) {
            pj_t *v = pj_object_get(b, keep[i]);
            if (v) pj_object_set(o, keep[i], v);
        }
        return o;
    }
    char tmp[160];
    snprintf(tmp, sizeof tmp, "[%.100s content]", type ? type : "unknown");
    return pj_pack("{s:s, s:s}", "type", "text", "text", tmp);
}

char *pmcp_content_to_acp(const char *mcp_content_json) {
    pj_t *in = mcp_content_json ? pj_loads(mcp_content_json, 0, NULL) : NULL;
    pj_t *out = pj_array();
    size_t i;
    pj_t *b;
    pj_array_foreach(in, i, b) {
        pj_t *blk = acp_block(b);
        if (blk) pj_array_append_new(out, pj_pack("{s:s, s:o}", "type", "content", "content", blk));
    }
    char *s = out ? pj_dumps(out, PJ_COMPACT) : NULL;
    pj_decref(out);
    pj_decref(in);
    return s;
}

/* ---------------------------------------------------------------- the pool */

typedef struct pool_tool {
    pmcp_pool_tool pub; /* borrows ns_name and tool's description and schema */
    char *ns_name;
    pmcp_tool tool; /* as the server lists it (tool.name: the server's name for it) */
    size_t server;
} pool_tool;

typedef struct pool_server {
    pmcp_server_config cfg;
    pmcp_client *client;
    char err[512];
    const struct pmcp_pool *pool;
    pthread_t th;
} pool_server;

/* A tool table replaced by pmcp_pool_refresh: kept while the reader may still hold
 * pointers into it (names, descriptions, schemas): until the next change, when it is
 * not the table the reader last read. */
typedef struct old_table {
    struct old_table *next;
    pool_tool *tools;
    size_t ntools;
    uint64_t gen;
} old_table;

struct pmcp_pool {
    pthread_mutex_t mu; /* tools, ntools, retired (refresh swaps the table) */
    pool_server *servers;
    size_t nservers;
    pool_tool *tools;
    size_t ntools;
    uint64_t gen;      /* the current table's generation */
    uint64_t read_gen; /* the newest generation pmcp_pool_tool_at handed out */
    old_table *retired;
    /* The builtin Workspace server: configured at open (ws), started at its first call
     * (an idle session costs no thread and no fd), under mu. */
    const ptl_ctx *ws;
    pmcp_client *builtin;
    char *cwd; /* owned: stdio servers start here */
    long init_timeout_ms;
    pb_logger log;
    const pmcp_oauth_opts *oauth; /* borrowed: must outlive the pool */
    char *(*elicit)(void *ctx, const char *server, const char *params_json, atomic_int *cancel);
    void *elicit_ctx;
};

static void *connect_main(void *arg) {
    pool_server *ps = arg;
    pmcp_client_opts co = {.cwd = ps->pool->cwd,
                           .init_timeout_ms = ps->pool->init_timeout_ms,
                           .log = ps->pool->log,
                           .oauth = ps->pool->oauth,
                           .elicit = ps->pool->elicit,
                           .elicit_ctx = ps->pool->elicit_ctx};
    ps->client = pmcp_client_connect(&ps->cfg, &co, ps->err, sizeof ps->err);
    return NULL;
}

static char *sanitize(const char *s) {
    char *o = strdup(s);
    for (char *p = o; p && *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
              *p == '_' || *p == '-'))
            *p = '_';
    return o;
}

/* A server's part of "mcp__<server>__<tool>": sanitized, without "__" inside and never
 * ending in '_', so that the first "__" after "mcp__" always ends the server name (a tool
 * name may begin with '_'): an allow rule "mcp__files__*" can match neither a server
 * called "files__x" nor one called "files_" or "files.". Never empty ("_" for a name of
 * nothing but separators). */
static char *server_part(const char *s) {
    char *o = sanitize(s);
    if (!o) return NULL;
    size_t w = 0;
    for (size_t r = 0; o[r]; r++)
        if (!(o[r] == '_' && w > 0 && o[w - 1] == '_')) o[w++] = o[r];
    while (w > 1 && o[w - 1] == '_')
        w--;
    o[w] = '\0';
    return o;
}

/* True when two server names give the same part of the tool names (so one server's tools
 * would pass for the other's). */
static bool same_part(const char *a, const char *b) {
    char *pa = server_part(a), *pb = server_part(b);
    bool same = !pa || !pb || !strcmp(pa, pb); /* out of memory: treat as taken */
    free(pa);
    free(pb);
    return same;
}

static void table_free(pool_tool *t, size_t n) {
    for (size_t i = 0; t && i < n; i++) {
        free(t[i].ns_name);
        pmcp__tool_free(&t[i].tool);
    }
    free(t);
}

static bool table_has(const pool_tool *t, size_t n, const char *ns) {
    for (size_t i = 0; i < n; i++)
        if (!strcmp(t[i].ns_name, ns)) return true;
    return false;
}

/* Appends server si's current tools to the table (*tools, *ntools). */
static int add_tools(pmcp_pool *p, size_t si, pool_tool **tools, size_t *ntools, char **notices) {
    pool_server *ps = &p->servers[si];
    pmcp_tool *t;
    size_t n;
    if (pmcp_client_tools(ps->client, &t, &n) != 0) return -1;
    char *sname = server_part(ps->cfg.name);
    int rc = sname ? 0 : -1;
    pool_tool *nt = rc == 0 ? realloc(*tools, (*ntools + n + 1) * sizeof *nt) : NULL;
    if (!nt)
        rc = -1;
    else
        *tools = nt;
    for (size_t i = 0; rc == 0 && i < n; i++) {
        char *tname = sanitize(t[i].name);
        size_t need = strlen(sname) + (tname ? strlen(tname) : 0) + 8;
        char *ns = malloc(need);
        if (!tname || !ns) {
            free(tname);
            free(ns);
            rc = -1;
            break;
        }
        snprintf(ns, need, "mcp__%s__%s", sname, tname);
        free(tname);
        if (strlen(ns) > MAX_TOOL_NAME || table_has(*tools, *ntools, ns)) {
            note(notices, "MCP tool %s left out: name too long or duplicate%s", ns, NULL);
            free(ns);
            continue;
        }
        pool_tool *pt = &(*tools)[*ntools];
        memset(pt, 0, sizeof *pt);
        pt->ns_name = ns;
        pt->tool = t[i];
        memset(&t[i], 0, sizeof t[i]);
        pt->server = si;
        pt->pub = (pmcp_pool_tool){.name = pt->ns_name,
                                   .description = pt->tool.description,
                                   .schema_json = pt->tool.schema_json,
                                   .read_only = pt->tool.read_only};
        (*ntools)++;
    }
    free(sname);
    pmcp_tools_free(t, n);
    return rc;
}

/* Starts the builtin Workspace server over the session's tool context (p->mu held).
 * 0, or -1 with err. */
static int start_builtin(pmcp_pool *p, char *err, size_t errlen) {
    if (p->builtin) return 0;
    pmcp_server_config cfg = {
        .name = "workspace", .kind = PMCP_INPROC, .tool_ctx = p->ws, .acp_meta = true};
    /* the tools enforce their own timeouts (the shell's may exceed any default) */
    pmcp_client_opts co = {.call_timeout_ms = 30L * 24 * 3600 * 1000};
    char why[400];
    p->builtin = pmcp_client_connect(&cfg, &co, why, sizeof why);
    if (!p->builtin) snprintf(err, errlen, "the builtin workspace server did not start: %s", why);
    return p->builtin ? 0 : -1;
}

/* The builtin server serves exactly the tools registry. */
static bool builtin_has(const pmcp_pool *p, const char *name) {
    return p && p->ws && name && ptl_find(name) != NULL;
}

/* Makes (nt, nn) the current tool table; the old one is retired. Retired tables other
 * than the one the reader last took pointers from are freed: nothing borrows from them
 * (the reader re-reads after every change; calls copy what they use). 0, or -1 (out of
 * memory; nt freed, table unchanged). */
static int install_table(pmcp_pool *p, pool_tool *nt, size_t nn) {
    old_table *o = calloc(1, sizeof *o);
    if (!o) {
        table_free(nt, nn);
        return -1;
    }
    old_table *dead = NULL;
    pthread_mutex_lock(&p->mu);
    o->tools = p->tools;
    o->ntools = p->ntools;
    o->gen = p->gen++;
    o->next = p->retired;
    p->retired = o;
    p->tools = nt;
    p->ntools = nn;
    for (old_table **pp = &p->retired; *pp;) {
        old_table *r = *pp;
        if (r->gen == p->read_gen && r->ntools > 0) {
            pp = &r->next;
            continue;
        }
        *pp = r->next;
        r->next = dead;
        dead = r;
    }
    pthread_mutex_unlock(&p->mu);
    while (dead) {
        old_table *r = dead;
        dead = r->next;
        table_free(r->tools, r->ntools);
        free(r);
    }
    return 0;
}

size_t pmcp__pool_tables(pmcp_pool *p) {
    pthread_mutex_lock(&p->mu);
    size_t n = 1;
    for (old_table *r = p->retired; r; r = r->next)
        n++;
    pthread_mutex_unlock(&p->mu);
    return n;
}

static bool has_name(const pmcp_server_config *c, size_t n, const char *name) {
    for (size_t i = 0; i < n; i++)
        if (same_part(c[i].name, name)) return true;
    return false;
}

/* Appends the servers of project_json to cfgs, except those whose name a user-level (or
 * earlier) server already holds, spelled alike in tool names ("files." and "files_" hold
 * "files"): a project entry never replaces one nor passes for one (it is refused, with a
 * notice). Servers of the pool (p may be NULL) count as held too. */
static void add_project(const pmcp_pool *p, const char *project_json, pmcp_server_config **cfgs,
                        size_t *n, char **notices) {
    pmcp_server_config *pc = NULL;
    size_t np = 0;
    pmcp_parse_servers(project_json, "project .peri/settings.json", &pc, &np, notices);
    for (size_t i = 0; i < np; i++) {
        bool taken = has_name(*cfgs, *n, pc[i].name);
        for (size_t k = 0; p && !taken && k < p->nservers; k++)
            taken = same_part(p->servers[k].cfg.name, pc[i].name);
        if (taken || push(cfgs, n, &pc[i]) != 0) {
            note(notices, "project MCP server \"%s\" refused: %s", pc[i].name,
                 taken ? "a server of that name (or one spelled alike in tool names) is configured "
                         "by the user or the client"
                       : "out of memory");
            pmcp_server_config_clear(&pc[i]);
        }
    }
    free(pc);
}

/* Connects cfgs[0..n) as servers first..first+n of the pool (in parallel) and adds
 * their tools to the current table (a new table; the old one is retired). p->servers
 * must already have room. Takes ownership of cfgs' contents. */
static int connect_new(pmcp_pool *p, pmcp_server_config *cfgs, size_t n, char **notices) {
    size_t first = p->nservers;
    for (size_t i = 0; i < n; i++) {
        memset(&p->servers[first + i], 0, sizeof p->servers[first + i]);
        p->servers[first + i].cfg = cfgs[i];
        p->servers[first + i].pool = p;
    }
    bool *started = calloc(n, sizeof *started);
    for (size_t i = 0; i < n; i++) {
        pool_server *ps = &p->servers[first + i];
        bool ok = started && pthread_create(&ps->th, NULL, connect_main, ps) == 0;
        if (started) started[i] = ok;
        if (!ok) connect_main(ps); /* no thread: connect here */
    }
    for (size_t i = 0; i < n; i++)
        if (started && started[i]) pthread_join(p->servers[first + i].th, NULL);
    free(started);
    pool_tool *nt = NULL;
    size_t nn = 0;
    int rc = 0;
    if (p->ntools) {
        /* copy the current table's entries (owned strings are duplicated) */
        nt = calloc(p->ntools + 1, sizeof *nt);
        if (!nt) rc = -1;
        for (size_t i = 0; rc == 0 && i < p->ntools; i++) {
            pool_tool *d = &nt[nn], *o = &p->tools[i];
            *d = *o;
            d->ns_name = strdup(o->ns_name);
            nn++;
            if (pmcp__tool_copy(&d->tool, &o->tool) || !d->ns_name) rc = -1;
            d->pub.name = d->ns_name;
            d->pub.description = d->tool.description;
            d->pub.schema_json = d->tool.schema_json;
        }
    }
    p->nservers = first + n;
    for (size_t i = first; rc == 0 && i < p->nservers; i++) {
        pool_server *ps = &p->servers[i];
        if (!ps->client) {
            note(notices, "MCP server \"%s\" is unavailable: %s", ps->cfg.name, ps->err);
            continue;
        }
        if (add_tools(p, i, &nt, &nn, notices) != 0) rc = -1;
    }
    if (rc != 0) {
        table_free(nt, nn);
        return -1;
    }
    return install_table(p, nt, nn);
}

pmcp_pool *pmcp_pool_open(const pmcp_pool_opts *opt, char **notices) {
    if (notices) *notices = NULL;
    pmcp_pool *p = calloc(1, sizeof *p);
    if (!p) return NULL;
    pthread_mutex_init(&p->mu, NULL);
    p->ws = opt->workspace;
    p->init_timeout_ms = opt->init_timeout_ms;
    p->elicit = opt->elicit;
    p->elicit_ctx = opt->elicit_ctx;
    p->log = opt->log;
    p->oauth = opt->oauth;
    if (opt->cwd && !(p->cwd = strdup(opt->cwd))) {
        pmcp_pool_close(p);
        return NULL;
    }
    pmcp_server_config *cfgs = NULL;
    size_t n = 0;
    /* user settings, then the trusted project servers (never replacing a user server),
     * then the client's session/new entries (which do replace: the client is the user's) */
    if (opt->user_settings_json)
        pmcp_parse_servers(opt->user_settings_json, "settings", &cfgs, &n, notices);
    if (opt->project_servers_json) add_project(NULL, opt->project_servers_json, &cfgs, &n, notices);
    if (opt->acp_servers_json)
        pmcp_parse_servers(opt->acp_servers_json, "session mcpServers", &cfgs, &n, notices);
    if (n == 0) {
        free(cfgs);
        return p;
    }
    p->servers = calloc(n, sizeof *p->servers);
    if (!p->servers) {
        for (size_t i = 0; i < n; i++)
            pmcp_server_config_clear(&cfgs[i]);
        free(cfgs);
        pmcp_pool_close(p);
        return NULL;
    }
    int rc = connect_new(p, cfgs, n, notices);
    free(cfgs);
    if (rc != 0) note(notices, "MCP servers: out of memory listing their tools%s%s", NULL, NULL);
    return p;
}

int pmcp_pool_add_project(pmcp_pool *p, const char *project_servers_json, char **notices) {
    if (notices) *notices = NULL;
    if (!p || !project_servers_json) return 0;
    pmcp_server_config *cfgs = NULL;
    size_t n = 0;
    add_project(p, project_servers_json, &cfgs, &n, notices);
    if (n == 0) {
        free(cfgs);
        return 0;
    }
    pool_server *ns = realloc(p->servers, (p->nservers + n) * sizeof *ns);
    if (!ns) {
        for (size_t i = 0; i < n; i++)
            pmcp_server_config_clear(&cfgs[i]);
        free(cfgs);
        return -1;
    }
    pthread_mutex_lock(&p->mu);
    p->servers = ns;
    pthread_mutex_unlock(&p->mu);
    int rc = connect_new(p, cfgs, n, notices);
    free(cfgs);
    return rc < 0 ? -1 : 1;
}

void pmcp_pool_close(pmcp_pool *p) {
    if (!p) return;
    pmcp_client_close(p->builtin);
    for (size_t i = 0; i < p->nservers; i++) {
        pmcp_client_close(p->servers[i].client);
        pmcp_server_config_clear(&p->servers[i].cfg);
    }
    table_free(p->tools, p->ntools);
    while (p->retired) {
        old_table *o = p->retired;
        p->retired = o->next;
        table_free(o->tools, o->ntools);
        free(o);
    }
    free(p->servers);
    free(p->cwd);
    pthread_mutex_destroy(&p->mu);
    free(p);
}

size_t pmcp_pool_server_count(const pmcp_pool *p) {
    return p ? p->nservers : 0;
}

const char *pmcp_pool_server_at(const pmcp_pool *p, size_t i, bool *connected) {
    if (!p || i >= p->nservers) return NULL;
    if (connected) *connected = p->servers[i].client != NULL;
    return p->servers[i].cfg.name;
}

bool pmcp_pool_builtin(const pmcp_pool *p) {
    return p && p->ws;
}

size_t pmcp_pool_tool_count(const pmcp_pool *p) {
    if (!p) return 0;
    pthread_mutex_lock((pthread_mutex_t *)&p->mu);
    size_t n = p->ntools;
    pthread_mutex_unlock((pthread_mutex_t *)&p->mu);
    return n;
}

const pmcp_pool_tool *pmcp_pool_tool_at(const pmcp_pool *p, size_t i) {
    if (!p) return NULL;
    pmcp_pool *w = (pmcp_pool *)p; /* the reader's mark: this table's pointers are held */
    pthread_mutex_lock(&w->mu);
    const pmcp_pool_tool *t = i < p->ntools ? &p->tools[i].pub : NULL;
    if (t) w->read_gen = p->gen;
    pthread_mutex_unlock(&w->mu);
    return t;
}

/* Whether the current table has ns; with server and name (may be NULL): its server's
 * index and the server's own name for the tool (a copy, the caller frees it). */
static bool find(const pmcp_pool *p, const char *ns, size_t *server, char **name) {
    if (!p || !ns) return false;
    bool found = false;
    pthread_mutex_lock((pthread_mutex_t *)&p->mu);
    for (size_t i = 0; i < p->ntools && !found; i++) {
        if (strcmp(p->tools[i].ns_name, ns)) continue;
        found = true;
        if (server) *server = p->tools[i].server;
        if (name) found = (*name = strdup(p->tools[i].tool.name)) != NULL;
    }
    pthread_mutex_unlock((pthread_mutex_t *)&p->mu);
    return found;
}

bool pmcp_pool_has(const pmcp_pool *p, const char *name) {
    return builtin_has(p, name) || find(p, name, NULL, NULL);
}

static bool same_table(const pool_tool *a, size_t na, const pool_tool *b, size_t nb) {
    if (na != nb) return false;
    for (size_t i = 0; i < na; i++)
        if (a[i].server != b[i].server || strcmp(a[i].ns_name, b[i].ns_name) ||
            strcmp(a[i].tool.description, b[i].tool.description) ||
            strcmp(a[i].tool.schema_json, b[i].tool.schema_json) ||
            strcmp(a[i].tool.name, b[i].tool.name) || a[i].pub.read_only != b[i].pub.read_only)
            return false;
    return true;
}

int pmcp_pool_refresh(pmcp_pool *p, char **notices) {
    if (!p) return 0;
    bool any = false;
    for (size_t i = 0; i < p->nservers; i++) {
        pool_server *ps = &p->servers[i];
        if (!ps->client || !pmcp_client_tools_changed(ps->client)) continue;
        char err[512];
        if (pmcp_client_refresh_tools(ps->client, err, sizeof err) != 0)
            note(notices, "MCP server \"%s\": re-listing its tools failed: %s", ps->cfg.name, err);
        any = true; /* the old list may be stale either way; rebuild from what we have */
    }
    if (!any) return 0;
    pool_tool *nt = NULL;
    size_t nn = 0;
    for (size_t i = 0; i < p->nservers; i++) {
        if (!p->servers[i].client) continue;
        if (add_tools(p, i, &nt, &nn, notices) != 0) {
            table_free(nt, nn);
            return -1;
        }
    }
    if (same_table(p->tools, p->ntools, nt, nn)) {
        table_free(nt, nn);
        return 0;
    }
    return install_table(p, nt, nn) == 0 ? 1 : -1;
}

/* Cuts text for the model to MAX_MODEL_TEXT bytes at a UTF-8 boundary, saying so. */
static char *cap_text(char *text) {
    size_t n = text ? strlen(text) : 0;
    if (n <= MAX_MODEL_TEXT) return text;
    size_t cut = MAX_MODEL_TEXT;
    while (cut > 0 && ((unsigned char)text[cut] & 0xC0) == 0x80)
        cut--;
    char note[96];
    int k = snprintf(note, sizeof note, "\n[output truncated: %zu of %zu bytes shown]", cut, n);
    char *out = malloc(cut + (size_t)k + 1);
    if (!out) return text;
    memcpy(out, text, cut);
    memcpy(out + cut, note, (size_t)k + 1);
    free(text);
    return out;
}

void pmcp_pool_result_clear(pmcp_pool_result *r) {
    ptl_result_clear(r);
}

static char *dump_or_null(pj_t *v) {
    return v ? pj_dumps(v, PJ_COMPACT | PJ_ENCODE_ANY) : NULL;
}

/* A builtin tool through the in-process pair: the ACP data comes back in
 * _meta["peri/acp"] and is handed on unchanged (no model-text cap: the tools cap their
 * own output). */
static int run_builtin(pmcp_pool *p, const char *name, const char *args_json, atomic_int *cancel,
                       pmcp_pool_result *out) {
    pj_t *res = NULL;
    char err[600];
    pthread_mutex_lock(&p->mu);
    pmcp_client *c = start_builtin(p, err, sizeof err) == 0 ? p->builtin : NULL;
    pthread_mutex_unlock(&p->mu);
    if (!c) {
        out->output = strdup(err);
        out->is_error = true;
        return -1;
    }
    pmcp_status st = pmcp__client_call_raw(c, name, args_json, cancel, 0, &res, err, sizeof err);
    if (st == PMCP_CANCELLED && !res) { /* no late answer: the agent says "cancelled" */
        out->output = strdup("");
        out->is_error = true;
        return out->output ? 1 : -1;
    }
    if (!res) {
        out->output = strdup(st == PMCP_OK ? "out of memory" : err);
        out->is_error = true;
        return -1;
    }
    pj_t *content = pj_object_get(res, "content");
    const char *text = pj_string_value(pj_object_get(pj_array_get(content, 0), "text"));
    out->output = strdup(text ? text : "");
    out->is_error = pj_is_true(pj_object_get(res, "isError"));
    pj_t *acp = pj_object_get(pj_object_get(res, "_meta"), "peri/acp");
    /* textContent: one text block equal to the text. content_json stays NULL, for
     * which the ACP layer renders exactly that block (and parses nothing). */
    if (!pj_is_true(pj_object_get(acp, "textContent")))
        out->content_json = dump_or_null(pj_object_get(acp, "content"));
    out->locations_json = dump_or_null(pj_object_get(acp, "locations"));
    out->raw_output_json = dump_or_null(pj_object_get(acp, "rawOutput"));
    out->meta_json = dump_or_null(pj_object_get(acp, "meta"));
    /* the tool's own status decides, as when it was called directly: a tool that
     * finished before it saw the cancel ran (0) */
    const char *status = pj_string_value(pj_object_get(acp, "status"));
    int rc = !status                        ? 0
             : !strcmp(status, "cancelled") ? 1
                                            : -1; /* failed inside (out of memory, fork...) */
    pj_decref(res);
    return out->output ? rc : -1;
}

int pmcp_pool_run(pmcp_pool *p, const char *name, const char *args_json, atomic_int *cancel,
                  pmcp_progress_fn progress, void *pctx, pmcp_pool_result *out) {
    memset(out, 0, sizeof *out);
    out->is_error = true;
    if (builtin_has(p, name)) return run_builtin(p, name, args_json, cancel, out);
    size_t server;
    char *tool = NULL;
    if (!find(p, name, &server, &tool)) return -1;
    pmcp_call_result r;
    pmcp_status st =
        pmcp_client_call(p->servers[server].client, tool, args_json, cancel, progress, pctx, 0, &r);
    free(tool);
    out->is_error = r.is_error || st != PMCP_OK;
    out->output = cap_text(r.text);
    r.text = NULL;
    if (st == PMCP_OK) out->content_json = pmcp_content_to_acp(r.content_json);
    pmcp_call_result_clear(&r);
    if (!out->output) out->output = strdup(st == PMCP_OK ? "" : "MCP call failed");
    if (st == PMCP_CANCELLED) return 1;
    return out->output ? 0 : -1;
}

int pmcp_pool_call(pmcp_pool *p, const char *namespaced, const char *args_json, atomic_int *cancel,
                   char **text, bool *is_error, char **content_json) {
    pmcp_pool_result r;
    int rc = pmcp_pool_run(p, namespaced, args_json, cancel, NULL, NULL, &r);
    *text = r.output;
    *content_json = r.content_json;
    *is_error = r.is_error;
    r.output = r.content_json = NULL;
    pmcp_pool_result_clear(&r);
    return rc;
}
