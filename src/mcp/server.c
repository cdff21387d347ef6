/*
 * server.c — the builtin Workspace MCP server: serves every tool of the tools
 * registry (ptl_count/ptl_at, so tools added there are served automatically) and the
 * workspace files as resources, over one JSON-RPC frame per line on a pair of fds
 * (pmcp_serve), or through an emit callback for another transport (pmcp__srv_*: the
 * streamable HTTP server of serve_http.c uses the same dispatch, one server per session).
 *
 * Methods: initialize (echoes a supported protocolVersion, else offers the newest),
 * ping, tools/list (pagination by an opaque index cursor), tools/call (each call on a
 * worker thread of its own — workers are reused, at most MAX_CALLS — so ping and
 * notifications/cancelled stay responsive; a progressToken gets a start notification),
 * resources/list (empty: files are addressed by URI), resources/templates/list (file:///{path}),
 * resources/read (file:// URIs confined exactly like the read tool). Unknown methods: -32601.
 * Unknown tool: -32602.
 *
 * Invariants: every path goes through the tools' confinement (ptl_resolve_path), so
 * escapes are refused with the same message as the builtin tools; a cancelled call gets
 * no answer; at EOF every running call is cancelled and joined before returning; frames
 * are written whole under one mutex.
 */
#include "mcp/mcp_int.h"
#include "peri/tools.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define MAX_CALLS       32
#define MAX_RESOURCE_SZ (8u << 20)

typedef struct call {
    struct call *next;
    struct pmcp__srv *srv;
    pj_t *id; /* owned copy */
    const ptl_tool *tool;
    char *args;
    pj_t *progress_token; /* owned or NULL */
    atomic_int cancel;
    atomic_bool by_client; /* cancelled by notifications/cancelled: no answer */
    struct call *qnext;    /* in the start queue */
} call;

typedef struct wbuf {
    int fd;
    size_t len;
    int failed;
    char b[32768];
} wbuf;

typedef struct pmcp__srv srv;
struct pmcp__srv {
    const pmcp_server_opts *opt;
    char root[PATH_MAX];
    int out_fd;
    pmcp__emit_fn emit; /* set: frames go there instead of out_fd */
    void *emit_ud;
    pthread_mutex_t wmu; /* frames are written whole; wb */
    wbuf wb;
    pthread_mutex_t mu; /* everything below */
    pthread_cond_t cv;
    call *calls; /* accepted and not finished (queued or running) */
    size_t ncalls;
    call *qhead, **qlast; /* accepted, not started; qlast: where the next one links */
    size_t nqueued, nidle;
    pthread_t workers[MAX_CALLS];
    size_t nworkers;
    bool stopping;
};

static const char *const k_versions[] = {"2025-06-18", "2025-03-26", "2024-11-05"};

/* Streams the frame's JSON into the socket through a fixed buffer (no whole-frame
 * allocation: a large result would otherwise be built in a doubling buffer and copied;
 * measured in bench/mcp_bench.c). */
static int wbuf_put(const char *p, size_t n, void *ctx) {
    wbuf *w = ctx;
    if (w->failed) return -1;
    if (w->len + n > sizeof w->b) {
        if (pb_write_all(w->fd, w->b, w->len) != 0) return w->failed = -1;
        w->len = 0;
        if (n > sizeof w->b) {
            if (pb_write_all(w->fd, p, n) != 0) return w->failed = -1;
            return 0;
        }
    }
    memcpy(w->b + w->len, p, n);
    w->len += n;
    return 0;
}

static void send_frame(srv *s, pj_t *frame) {
    if (!frame) return;
    if (s->emit) {
        s->emit(s->emit_ud, frame);
        pj_decref(frame);
        return;
    }
    pthread_mutex_lock(&s->wmu);
    wbuf *w = &s->wb;
    w->fd = s->out_fd;
    w->len = 0;
    w->failed = 0;
    if (pj_dump_callback(frame, wbuf_put, w, PJ_COMPACT | PJ_ENCODE_ANY) == 0 &&
        wbuf_put("\n", 1, w) == 0)
        pb_write_all(w->fd, w->b, w->len);
    else if (!w->failed) /* cut short: end the line so the peer drops it as malformed */
        pb_write_all(w->fd, "\n", 1);
    pthread_mutex_unlock(&s->wmu);
    pj_decref(frame);
}

static void reply_error(srv *s, pj_t *id, int code, const char *msg) {
    send_frame(s, pb_rpc_error(id, code, msg, NULL));
}

/* ---------------------------------------------------------------- tools */

static pj_t *tool_json(const ptl_tool *t) {
    pj_t *schema = pj_loads(ptl_schema_json(t), 0, NULL);
    if (!pj_is_object(schema)) {
        pj_decref(schema);
        schema = pj_pack("{s:s}", "type", "object");
    }
    return pj_pack("{s:s, s:s, s:o, s:{s:b, s:b}}", "name", ptl_name(t), "description",
                   ptl_description(t), "inputSchema", schema, "annotations", "readOnlyHint",
                   !ptl_needs_permission(t), "destructiveHint",
                   ptl_kind_of(t) == PTL_KIND_EDIT || ptl_kind_of(t) == PTL_KIND_EXECUTE);
}

static void m_tools_list(srv *s, pj_t *id, pj_t *params) {
    size_t page = s->opt->page_size ? s->opt->page_size : 100;
    size_t from = 0;
    pj_t *cur = pj_object_get(params, "cursor");
    if (cur) {
        const char *cs = pj_string_value(cur);
        char *end = NULL;
        unsigned long long v = cs ? strtoull(cs, &end, 10) : 0;
        if (!cs || !cs[0] || *end || v > ptl_count()) {
            reply_error(s, id, PMCP_INVALID_PARAMS, "Invalid cursor");
            return;
        }
        from = (size_t)v;
    }
    pj_t *arr = pj_array();
    size_t i = from;
    for (; arr && i < ptl_count() && i < from + page; i++)
        pj_array_append_new(arr, tool_json(ptl_at(i)));
    pj_t *res = pj_pack("{s:o}", "tools", arr);
    if (res && i < ptl_count()) {
        char next[32];
        snprintf(next, sizeof next, "%zu", i);
        pj_object_set_new(res, "nextCursor", pj_string(next));
    }
    send_frame(s, pb_rpc_result(id, res));
}

/* _meta["peri/acp"] of a result (acp_meta servers): what the ACP update needs beyond
 * the text, taken from the registry's result without change. JSON texts the tools
 * produced are embedded as JSON (a text that does not parse is left out). */
static bool is_text_content(pj_t *v, const char *text) {
    pj_t *b = pj_array_size(v) == 1 ? pj_array_get(v, 0) : NULL;
    pj_t *in = pj_object_get(b, "content");
    const char *ty = pj_string_value(pj_object_get(b, "type"));
    const char *ity = pj_string_value(pj_object_get(in, "type"));
    pj_t *tx = pj_object_get(in, "text");
    return text && pj_object_size(b) == 2 && pj_object_size(in) == 2 && ty && ity &&
           !strcmp(ty, "content") && !strcmp(ity, "text") && pj_is_string(tx) &&
           pj_string_length(tx) == strlen(text) && !strcmp(pj_string_value(tx), text);
}

static pj_t *acp_meta(const ptl_tool *t, ptl_status st, const ptl_result *r) {
    pj_t *m = pj_pack("{s:s}", "kind", ptl_kind_name(ptl_kind_of(t)));
    if (!m) return NULL;
    static const char *const keys[] = {"content", "locations", "rawOutput", "meta"};
    const char *texts[] = {r->content_json, r->locations_json, r->raw_output_json, r->meta_json};
    for (size_t i = 0; i < 4; i++) {
        pj_t *v = texts[i] ? pj_loads(texts[i], PJ_DECODE_ANY, NULL) : NULL;
        if (i == 0 && v && is_text_content(v, r->output)) {
            /* the common case: one text block equal to the result's text, which the
             * frame already carries; the client rebuilds it (half the bytes) */
            pj_decref(v);
            pj_object_set_new(m, "textContent", pj_true());
            continue;
        }
        if (v) pj_object_set_new(m, keys[i], v);
    }
    if (st != PTL_OK)
        pj_object_set_new(m, "status", pj_string(st == PTL_CANCELLED ? "cancelled" : "error"));
    return m;
}

static void run_call(call *c) {
    srv *s = c->srv;
    if (c->progress_token)
        send_frame(
            s, pb_rpc_notification("notifications/progress",
                                   pj_pack("{s:O, s:i, s:s}", "progressToken", c->progress_token,
                                           "progress", 0, "message", ptl_name(c->tool))));
    ptl_ctx ctx = {.cwd = s->root, .timeout_ms = s->opt->shell_timeout_ms};
    if (s->opt->tool_ctx) ctx = *s->opt->tool_ctx; /* the session's own context */
    ctx.cancel = &c->cancel;
    ptl_result r;
    ptl_status st = ptl_run(c->tool, c->args, &ctx, &r);
    if (atomic_load(&c->by_client) && !s->opt->acp_meta) {
        /* cancelled: the client no longer waits for an answer (MCP). The in-process
         * client of the agent does wait briefly: it records the partial result. */
    } else {
        const char *text = r.output ? r.output : "";
        if (st != PTL_OK && !s->opt->acp_meta && !text[0]) text = "internal tool failure";
        pj_t *res = pj_pack("{s:[{s:s, s:s}], s:b}", "content", "type", "text", "text", text,
                            "isError", st != PTL_OK || r.is_error);
        if (res && s->opt->acp_meta)
            pj_object_set_new(res, "_meta",
                              pj_pack("{s:o}", "peri/acp", acp_meta(c->tool, st, &r)));
        send_frame(s, pb_rpc_result(c->id, res));
    }
    ptl_result_clear(&r);
}

static void call_free(call *c) {
    pj_decref(c->id);
    pj_decref(c->progress_token);
    free(c->args);
    free(c);
}

/* A call worker: runs queued calls one after another and waits for the next, so a
 * call costs no thread start (measured: most of the in-process overhead); stops when
 * the server stops and the queue is empty. */
static void *worker_main(void *arg) {
    srv *s = arg;
    pthread_mutex_lock(&s->mu);
    for (;;) {
        while (!s->qhead && !s->stopping) {
            s->nidle++;
            pthread_cond_wait(&s->cv, &s->mu);
            s->nidle--;
        }
        call *c = s->qhead;
        if (!c) break; /* stopping */
        s->qhead = c->qnext;
        if (!s->qhead) s->qlast = &s->qhead;
        s->nqueued--;
        pthread_mutex_unlock(&s->mu);
        run_call(c);
        pthread_mutex_lock(&s->mu);
        for (call **pp = &s->calls; *pp; pp = &(*pp)->next)
            if (*pp == c) {
                *pp = c->next;
                break;
            }
        s->ncalls--;
        call_free(c);
        pthread_cond_broadcast(&s->cv);
    }
    pthread_mutex_unlock(&s->mu);
    return NULL;
}

/* Cancels every call, stops the workers and joins them. */
static void stop_all(srv *s) {
    pthread_mutex_lock(&s->mu);
    for (call *c = s->calls; c; c = c->next)
        atomic_store(&c->cancel, 1);
    s->stopping = true;
    pthread_cond_broadcast(&s->cv);
    size_t n = s->nworkers;
    pthread_mutex_unlock(&s->mu);
    for (size_t i = 0; i < n; i++)
        pthread_join(s->workers[i], NULL);
}

static void m_tools_call(srv *s, pj_t *id, pj_t *params) {
    const char *name = pj_string_value(pj_object_get(params, "name"));
    pj_t *args = pj_object_get(params, "arguments");
    if (!name) {
        reply_error(s, id, PMCP_INVALID_PARAMS, "tools/call needs a tool name");
        return;
    }
    const ptl_tool *t = ptl_find(name);
    if (!t) {
        char msg[200];
        snprintf(msg, sizeof msg, "Unknown tool: %.150s", name);
        reply_error(s, id, PMCP_INVALID_PARAMS, msg);
        return;
    }
    if (args && !pj_is_object(args) && !pj_is_null(args)) {
        reply_error(s, id, PMCP_INVALID_PARAMS, "arguments must be an object");
        return;
    }
    call *c = calloc(1, sizeof *c);
    if (!c) {
        reply_error(s, id, PMCP_INTERNAL_ERROR, "out of memory");
        return;
    }
    c->srv = s;
    c->tool = t;
    c->id = pj_deep_copy(id);
    /* An in-process client passes arguments that are not a JSON object as their text
     * in _meta["peri/rawArguments"], so the tool reports them exactly as when called
     * directly. */
    const char *raw =
        s->opt->acp_meta
            ? pj_string_value(pj_object_get(pj_object_get(params, "_meta"), "peri/rawArguments"))
            : NULL;
    c->args = raw ? strdup(raw) : pj_is_object(args) ? pj_dumps(args, PJ_COMPACT) : strdup("{}");
    pj_t *tok = pj_object_get(pj_object_get(params, "_meta"), "progressToken");
    if (pj_is_string(tok) || pj_is_integer(tok)) c->progress_token = pj_incref(tok);
    if (!c->id || !c->args) {
        call_free(c);
        reply_error(s, id, PMCP_INTERNAL_ERROR, "out of memory");
        return;
    }
    pthread_mutex_lock(&s->mu);
    bool full = s->ncalls >= MAX_CALLS;
    bool ok = !full;
    /* a worker per call that no idle worker will take */
    if (ok && s->nqueued + 1 > s->nidle) {
        ok = s->nworkers < MAX_CALLS &&
             pthread_create(&s->workers[s->nworkers], NULL, worker_main, s) == 0;
        if (ok) s->nworkers++;
        if (!ok && s->nworkers > 0) ok = true; /* a busy worker takes it later */
    }
    if (ok) {
        c->next = s->calls;
        s->calls = c;
        s->ncalls++;
        c->qnext = NULL;
        *s->qlast = c;
        s->qlast = &c->qnext;
        s->nqueued++;
        pthread_cond_signal(&s->cv);
        c = NULL;
    }
    pthread_mutex_unlock(&s->mu);
    if (c) {
        call_free(c);
        reply_error(s, id, PMCP_INTERNAL_ERROR,
                    full ? "too many concurrent tool calls" : "cannot start the tool");
    }
}

static void on_cancelled(srv *s, pj_t *params) {
    pj_t *rid = pj_object_get(params, "requestId");
    if (!rid) return;
    pthread_mutex_lock(&s->mu);
    for (call *c = s->calls; c; c = c->next)
        if (pj_equal(c->id, rid)) {
            atomic_store(&c->by_client, true);
            atomic_store(&c->cancel, 1);
        }
    pthread_mutex_unlock(&s->mu);
}

/* ---------------------------------------------------------------- resources */

static void m_resources_read(srv *s, pj_t *id, pj_t *params) {
    const char *uri = pj_string_value(pj_object_get(params, "uri"));
    if (!uri || strncmp(uri, "file://", 7) != 0) {
        reply_error(s, id, PMCP_INVALID_PARAMS, "only file:// resources are served");
        return;
    }
    const char *path = uri + 7;
    char errbuf[PATH_MAX + 64];
    char *abs = NULL;
    if (ptl_resolve_path(s->root, path, false, &abs, errbuf, sizeof errbuf) != 0) {
        reply_error(s, id, PMCP_INVALID_PARAMS, errbuf);
        return;
    }
    /* The tools' confined reader: resolved once beneath the root's descriptor (no
     * symlink or ".." out, no magic link), non-blocking (a FIFO answers at once), regular
     * files only, no hard links (one could name a file outside the root), bounded. */
    char *buf = NULL;
    size_t got = 0;
    ptl_fstatus fs = ptl_read_beneath(s->root, abs, MAX_RESOURCE_SZ, false, &buf, &got);
    if (fs == PTL_F_NOMEM) {
        reply_error(s, id, PMCP_INTERNAL_ERROR, "out of memory");
    } else if (fs != PTL_F_OK) {
        snprintf(errbuf, sizeof errbuf, "Resource not readable (%s): %.200s", ptl_fstatus_text(fs),
                 uri);
        reply_error(s, id, -32002, errbuf);
    } else {
        char full[PATH_MAX + 8];
        snprintf(full, sizeof full, "file://%s", abs);
        pj_t *txt = pj_stringn(buf, got); /* NULL when not UTF-8 */
        pj_t *res = txt ? pj_pack("{s:[{s:s, s:s, s:o}]}", "contents", "uri", full, "mimeType",
                                  "text/plain", "text", txt)
                        : NULL;
        if (res)
            send_frame(s, pb_rpc_result(id, res));
        else
            reply_error(s, id, PMCP_INVALID_PARAMS, "resource is not UTF-8 text");
    }
    free(buf);
    free(abs);
}

/* ---------------------------------------------------------------- dispatch */

static void on_request(srv *s, pb_rpc_msg *m) {
    const char *meth = m->method;
    pj_t *id = m->id;
    if (!strcmp(meth, "initialize")) {
        const char *want = pj_string_value(pj_object_get(m->params, "protocolVersion"));
        const char *ver = k_versions[0];
        for (size_t i = 0; want && i < sizeof k_versions / sizeof k_versions[0]; i++)
            if (!strcmp(want, k_versions[i])) ver = k_versions[i];
        pj_t *res = pj_pack(
            "{s:s, s:{s:{s:b}, s:{}}, s:{s:s, s:s}, s:s}", "protocolVersion", ver, "capabilities",
            "tools", "listChanged", 0, "resources", "serverInfo", "name",
            s->opt->name ? s->opt->name : "peri-workspace", "version", "0.1.0", "instructions",
            "Peri-C workspace tools: every path is confined to the workspace root.");
        send_frame(s, pb_rpc_result(id, res));
    } else if (!strcmp(meth, "ping")) {
        send_frame(s, pb_rpc_result(id, pj_object()));
    } else if (!strcmp(meth, "tools/list")) {
        m_tools_list(s, id, m->params);
    } else if (!strcmp(meth, "tools/call")) {
        m_tools_call(s, id, m->params);
    } else if (!strcmp(meth, "resources/list")) {
        send_frame(s, pb_rpc_result(id, pj_pack("{s:[]}", "resources")));
    } else if (!strcmp(meth, "resources/templates/list")) {
        send_frame(s, pb_rpc_result(id, pj_pack("{s:[{s:s, s:s, s:s}]}", "resourceTemplates",
                                                "uriTemplate", "file:///{path}", "name",
                                                "workspace file", "mimeType", "text/plain")));
    } else if (!strcmp(meth, "resources/read")) {
        m_resources_read(s, id, m->params);
    } else {
        char msg[300];
        snprintf(msg, sizeof msg, "Method not found: %.200s", meth);
        reply_error(s, id, PMCP_METHOD_NOT_FOUND, msg);
    }
}

srv *pmcp__srv_new(const pmcp_server_opts *opt, int out_fd, pmcp__emit_fn emit, void *ud) {
    struct stat st;
    const char *root = opt && opt->tool_ctx ? opt->tool_ctx->cwd : opt ? opt->root : NULL;
    srv *s = calloc(1, sizeof *s);
    if (!s) return NULL;
    s->opt = opt;
    s->out_fd = out_fd;
    s->emit = emit;
    s->emit_ud = ud;
    s->qlast = &s->qhead;
    if (!opt || !root || !realpath(root, s->root) || stat(s->root, &st) != 0 ||
        !S_ISDIR(st.st_mode)) {
        pb_log(opt ? &opt->log : NULL, PB_LOG_ERROR,
               "mcp: workspace root is not an existing directory: %s", root ? root : "(none)");
        free(s);
        return NULL;
    }
    pthread_mutex_init(&s->wmu, NULL);
    pthread_mutex_init(&s->mu, NULL);
    pthread_cond_init(&s->cv, NULL);
    return s;
}

void pmcp__srv_msg(srv *s, pb_rpc_msg *m) {
    switch (m->kind) {
    case PB_RPC_INVALID: {
        char why[160];
        reply_error(s, m->id, m->err_code, pb_rpc_invalid_text(m, why, sizeof why));
        break;
    }
    case PB_RPC_REQUEST: on_request(s, m); break;
    case PB_RPC_NOTIFICATION:
        if (!strcmp(m->method, "notifications/cancelled")) on_cancelled(s, m->params);
        break;
    case PB_RPC_RESPONSE: break; /* we send no requests */
    }
}

void pmcp__srv_free(srv *s, long grace_ms) {
    if (!s) return;
    /* running calls get a short grace to answer (a client may have half-closed), then
     * are cancelled; either way they are joined before returning. */
    struct timespec dl;
    clock_gettime(CLOCK_REALTIME, &dl);
    dl.tv_sec += grace_ms / 1000;
    dl.tv_nsec += (grace_ms % 1000) * 1000000L;
    if (dl.tv_nsec >= 1000000000L) {
        dl.tv_sec++;
        dl.tv_nsec -= 1000000000L;
    }
    pthread_mutex_lock(&s->mu);
    while (grace_ms > 0 && s->ncalls > 0 && pthread_cond_timedwait(&s->cv, &s->mu, &dl) == 0) {
    }
    pthread_mutex_unlock(&s->mu);
    stop_all(s);
    pthread_mutex_destroy(&s->wmu);
    pthread_mutex_destroy(&s->mu);
    pthread_cond_destroy(&s->cv);
    free(s);
}

int pmcp_serve(const pmcp_server_opts *opt, int in_fd, int out_fd) {
    srv *s = pmcp__srv_new(opt, out_fd, NULL, NULL);
    if (!s) return -1;
    pmcp__lines r;
    pmcp__lines_init(&r, in_fd);
    for (;;) {
        char *line;
        size_t len;
        int rs = pmcp__lines_next(&r, &line, &len);
        if (rs <= 0) break;
        if (rs == 2) {
            reply_error(s, NULL, PMCP_INVALID_REQUEST, "Invalid Request: frame too long");
            continue;
        }
        size_t k = 0;
        while (k < len && (line[k] == ' ' || line[k] == '\t'))
            k++;
        if (k == len) continue;
        pb_rpc_msg m;
        pb_rpc_decode(line, len, NULL, &m);
        pmcp__srv_msg(s, &m);
        pb_rpc_clear(&m);
    }
    pmcp__lines_free(&r);
    pmcp__srv_free(s, 2000);
    return 0;
}
