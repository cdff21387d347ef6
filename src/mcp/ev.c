/*
 * ev.c — the event-driven MCP client over streamable HTTP (peri/mcp_ev.h): every
 * JSON-RPC message is one exchange, a POST of its own over the project's HTTP client
 * (net_http.h) on the host's ports; the answer is read as application/json or as a
 * text/event-stream of JSON-RPC messages. Connect is a chain of exchanges (initialize,
 * notifications/initialized, tools/list pages), each started from the previous one's
 * outcome; a call is one exchange; close cancels what is in flight, deletes the session
 * and reports once everything has settled.
 *
 * Invariants:
 *  - No callback of the caller runs from inside a call of this API: on_ready, on_done and
 *    on_settled run from pmcp_ev_on_event only.
 *  - An exchange lives from its POST until its HTTP request's on_done (which comes only
 *    once every handle of the request has settled); an exchange's outcome is decided
 *    once: our own verdict on the bytes (protocol, limit) first, then the answer matched
 *    by id, then the HTTP outcome.
 *  - The client is settled when no exchange is in flight and no handle it made is open;
 *    after a close that is when on_settled runs, once, and the client is freed.
 *  - Everything the server sends is bounded: the answer's size (the HTTP parser's body
 *    bound), the SSE event size, the tool count, the pages, the tool name length, the
 *    answers the client sends to the server's own requests.
 */
#include "peri/mcp_ev.h"

#include "mcp/ev_int.h"
#include "mcp/proto.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define MAX_HEADERS     32  /* extra headers of the options */
#define MAX_TOOL_NAME   128 /* longer names are skipped */
#define MAX_SIDE        8   /* notifications and answers to the server in flight */
#define ERR_BODY        400 /* bytes of a failed answer quoted in the error */
#define DELETE_DEADLINE 2000
#define SIDE_DEADLINE   2000 /* a notification or answer: close lets it finish, this long */
#define ROUTES_PER_REQ  3    /* a stream, a deadline timer, an idle timer */

typedef enum xkind { X_INIT, X_INITED, X_LIST, X_CALL, X_SIDE, X_DELETE } xkind;
typedef enum cstate { S_NEW, S_CONNECTING, S_READY, S_FAILED } cstate;
typedef enum ctype { CT_NONE, CT_JSON, CT_SSE, CT_OTHER } ctype;

/* One exchange; the handle of a call is the exchange of its tools/call. */
struct pmcp_ev_call {
    struct pmcp_ev_call *next;
    pmcp_ev_client *c;
    xkind kind;
    const char *method;
    pj_int_t id;      /* the request's id; 0: a notification or an answer (none expected) */
    pn_http_req *req; /* NULL once its on_done runs */
    int status;
    ctype ct;
    pb_buf body; /* application/json answer, or the start of a failed answer */
    pmcp__sse sse;
    pj_t *answer;        /* owned: the response frame with our id */
    pmcp_ev_status fail; /* our own verdict on the bytes, or OK */
    char why[300];
    uint32_t deadline_ms;
    bool cancelled;
    pmcp_ev_done_fn on_done;
    void *ctx;
};
typedef struct pmcp_ev_call xchg;

struct pmcp_ev_client {
    pmcp__ev_ports ports;
    char *url, *name;
    pn_http_header *hdrs; /* owned copies of the extra headers */
    size_t nhdrs;
    uint32_t init_deadline_ms, call_deadline_ms;
    size_t max_response, max_tools, max_calls;
    pb_logger log;
    cstate state;
    pmcp_ev_ready_fn on_ready;
    void *ready_ctx;
    uint64_t connect_at;
    int pages;
    pj_int_t next_id;
    char session[256];
    char protocol[32];
    char *caps_json;
    bool has_tools;
    pmcp_ev_tool *tools;
    size_t ntools, captools;
    xchg *xs; /* in flight */
    size_t ncalls, nside;
    bool closing, timer_live, settled;
    pn_handle timer;
    pmcp_ev_settled_fn on_settled;
    void *settled_ctx;
};

const char *pmcp_ev_status_name(pmcp_ev_status s) {
    switch (s) {
    case PMCP_EV_OK: return "ok";
    case PMCP_EV_E_ARG: return "bad argument";
    case PMCP_EV_E_NOMEM: return "out of memory";
    case PMCP_EV_E_STATE: return "not ready";
    case PMCP_EV_E_NET: return "network";
    case PMCP_EV_E_HTTP: return "http status";
    case PMCP_EV_E_PROTOCOL: return "protocol";
    case PMCP_EV_E_LIMIT: return "limit";
    case PMCP_EV_E_VERSION: return "version";
    case PMCP_EV_E_RPC: return "rpc error";
    case PMCP_EV_E_TIMEOUT: return "timeout";
    case PMCP_EV_E_CANCELLED: return "cancelled";
    case PMCP_EV_E_CLOSED: return "closed";
    }
    return "unknown";
}

static void set_err(pmcp_ev_status *st, pmcp_ev_status v, char *err, size_t errlen, const char *fmt,
                    ...) __attribute__((format(printf, 5, 6)));
static void set_err(pmcp_ev_status *st, pmcp_ev_status v, char *err, size_t errlen, const char *fmt,
                    ...) {
    if (st) *st = v;
    if (!err || !errlen) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

/* Our own verdict on an exchange's bytes (the first one stays). */
static void verdict(xchg *x, pmcp_ev_status st, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void verdict(xchg *x, pmcp_ev_status st, const char *fmt, ...) {
    if (x->fail != PMCP_EV_OK) return;
    x->fail = st;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(x->why, sizeof x->why, fmt, ap);
    va_end(ap);
}

/* ---------------------------------------------------------------- tools */

static void tools_free(pmcp_ev_client *c) {
    for (size_t i = 0; i < c->ntools; i++) {
        pmcp_ev_tool *t = &c->tools[i];
        free((char *)t->name);
        free((char *)t->title);
        free((char *)t->description);
        free((char *)t->schema_json);
    }
    free(c->tools);
    c->tools = NULL;
    c->ntools = c->captools = 0;
}

/* Adds the tools of one tools/list result; PMCP_EV_OK or why not. */
static pmcp_ev_status add_tools(pmcp_ev_client *c, const pj_t *res, char *why, size_t n) {
    size_t i;
    pj_t *t;
    pj_array_foreach(pj_object_get(res, "tools"), i, t) {
        pmcp__tooldef d;
        int got = pmcp__tool_parse(t, &d);
        if (got < 0) {
            snprintf(why, n, "out of memory");
            return PMCP_EV_E_NOMEM;
        }
        if (got == 0) continue;
        if (strlen(d.name) > MAX_TOOL_NAME) {
            pb_log(&c->log, PB_LOG_WARN,
                   "mcp[%s]: skipped a tool whose name is longer than %d bytes", c->name,
                   MAX_TOOL_NAME);
            pmcp__tooldef_free(&d);
            continue;
        }
        if (c->ntools >= c->max_tools) {
            pmcp__tooldef_free(&d);
            snprintf(why, n, "the server lists more than %zu tools", c->max_tools);
            return PMCP_EV_E_LIMIT;
        }
        if (c->ntools == c->captools) {
            pmcp_ev_tool *nt = pb_grow(c->tools, &c->captools, sizeof *nt, 16);
            if (!nt) {
                pmcp__tooldef_free(&d);
                snprintf(why, n, "out of memory");
                return PMCP_EV_E_NOMEM;
            }
            c->tools = nt;
        }
        c->tools[c->ntools++] = (pmcp_ev_tool){.name = d.name,
                                               .title = d.title,
                                               .description = d.description,
                                               .schema_json = d.schema_json,
                                               .read_only = d.read_only};
    }
    return PMCP_EV_OK;
}

/* ---------------------------------------------------------------- exchanges */

static void x_on_done(void *ud, const pn_http_result *r);
static int x_on_head(void *ud, const pn_http_parser *p);
static int x_on_body(void *ud, const char *data, size_t len);

static void x_free(xchg *x) {
    pb_buf_free(&x->body);
    pmcp__sse_free(&x->sse);
    pj_decref(x->answer);
    free(x);
}

static void x_unlink(pmcp_ev_client *c, xchg *x) {
    for (xchg **p = &c->xs; *p; p = &(*p)->next)
        if (*p == x) {
            *p = x->next;
            break;
        }
    if (x->kind == X_CALL) c->ncalls--;
    if (x->kind == X_SIDE) c->nside--;
}

static pmcp_ev_status of_http(pn_http_err e) {
    switch (e) {
    case PN_HTTP_E_NOMEM: return PMCP_EV_E_NOMEM;
    case PN_HTTP_E_ARG:
    case PN_HTTP_E_URL: return PMCP_EV_E_ARG;
    case PN_HTTP_E_NET:
    case PN_HTTP_E_TRUNCATED: return PMCP_EV_E_NET;
    case PN_HTTP_E_TIMEOUT: return PMCP_EV_E_TIMEOUT;
    case PN_HTTP_E_CANCELLED: return PMCP_EV_E_CANCELLED;
    case PN_HTTP_E_BODY_LIMIT:
    case PN_HTTP_E_HEAD_LIMIT: return PMCP_EV_E_LIMIT;
    default: return PMCP_EV_E_PROTOCOL;
    }
}

/* Starts one POST (or DELETE: frame NULL) of an exchange; frame is stolen. NULL with
 * *st and why when it could not start (nothing left behind). */
static xchg *x_start(pmcp_ev_client *c, xkind kind, const char *method, pj_int_t id, pj_t *frame,
                     uint32_t deadline_ms, pmcp_ev_status *st, char *why, size_t n) {
    size_t len = 0;
    char *text = frame ? pb_rpc_encode(frame, false, &len) : NULL;
    pj_decref(frame);
    xchg *x = calloc(1, sizeof *x);
    if ((frame && !text) || !x || !pmcp__ev_ports_reserve(&c->ports, ROUTES_PER_REQ)) {
        free(text);
        free(x);
        set_err(st, PMCP_EV_E_NOMEM, why, n, "out of memory");
        return NULL;
    }
    x->c = c;
    x->kind = kind;
    x->method = method;
    x->id = id;
    x->deadline_ms = deadline_ms;
    pn_http_header h[MAX_HEADERS + 4];
    size_t nh = 0;
    if (frame) {
        h[nh++] = (pn_http_header){"Content-Type", "application/json"};
        h[nh++] = (pn_http_header){"Accept", "application/json, text/event-stream"};
    }
    if (c->session[0]) h[nh++] = (pn_http_header){"Mcp-Session-Id", c->session};
    if (c->protocol[0]) h[nh++] = (pn_http_header){"MCP-Protocol-Version", c->protocol};
    for (size_t i = 0; i < c->nhdrs; i++)
        h[nh++] = c->hdrs[i];
    pn_http_callbacks cb = {x_on_head, x_on_body, x_on_done, x};
    pn_http_opts o = {.deadline_ms = deadline_ms, .limits.max_body = c->max_response};
    pn_http_result fail;
    x->req = pn_http_request(&c->ports.table, c->url, frame ? "POST" : "DELETE", h, nh,
                             text ? text : NULL, len, &cb, &o, &fail);
    free(text);
    if (!x->req) {
        free(x);
        set_err(st, of_http(fail.err), why, n, "%s", fail.detail);
        return NULL;
    }
    x->next = c->xs;
    c->xs = x;
    if (kind == X_CALL) c->ncalls++;
    if (kind == X_SIDE) c->nside++;
    return x;
}

/* A request of ours: a new id and its exchange. */
static xchg *x_request(pmcp_ev_client *c, xkind kind, const char *method, pj_t *params,
                       uint32_t deadline_ms, pmcp_ev_status *st, char *why, size_t n) {
    pj_int_t id = ++c->next_id;
    pj_t *f = pb_rpc_request(id, method, params);
    if (!f) {
        set_err(st, PMCP_EV_E_NOMEM, why, n, "out of memory");
        return NULL;
    }
    return x_start(c, kind, method, id, f, deadline_ms, st, why, n);
}

/* A message that expects no answer (a notification, our answer to the server's
 * request): bounded, best effort, logged when it cannot go. */
static void x_side(pmcp_ev_client *c, pj_t *frame, const char *what) {
    char why[200];
    if (!frame || c->closing || c->nside >= MAX_SIDE) {
        pj_decref(frame);
        pb_log(&c->log, PB_LOG_WARN, "mcp[%s]: did not send %s (%s)", c->name, what,
               !frame       ? "out of memory"
               : c->closing ? "closing"
                            : "too many in flight");
        return;
    }
    if (!x_start(c, X_SIDE, what, 0, frame, SIDE_DEADLINE, NULL, why, sizeof why))
        pb_log(&c->log, PB_LOG_WARN, "mcp[%s]: could not send %s: %s", c->name, what, why);
}

static void send_cancelled(pmcp_ev_client *c, pj_int_t id, const char *reason) {
    x_side(c,
           pb_rpc_notification("notifications/cancelled",
                               pj_pack("{s:I, s:s}", "requestId", (pj_int_t)id, "reason", reason)),
           "notifications/cancelled");
}

/* One JSON-RPC message of an answer (the JSON body, or one SSE event). */
static void x_message(xchg *x, const char *text, size_t len) {
    pmcp_ev_client *c = x->c;
    pb_rpc_msg m;
    pb_rpc_decode(text, len, NULL, &m);
    switch (m.kind) {
    case PB_RPC_INVALID: {
        char why[160];
        pb_rpc_invalid_text(&m, why, sizeof why);
        if (x->id && pj_is_integer(m.id) && pj_integer_value(m.id) == x->id)
            verdict(x, PMCP_EV_E_PROTOCOL, "a malformed answer to %s (%s)", x->method, why);
        else if (x->ct == CT_JSON)
            verdict(x, PMCP_EV_E_PROTOCOL, "the answer to %s is not JSON-RPC (%s)", x->method, why);
        else
            pb_log(&c->log, PB_LOG_WARN, "mcp[%s]: ignored a malformed message (%s)", c->name, why);
        break;
    }
    case PB_RPC_RESPONSE:
        if (x->id && pj_is_integer(m.id) && pj_integer_value(m.id) == x->id && !x->answer) {
            x->answer = m.root;
            m.root = NULL;
        } else {
            pb_log(&c->log, PB_LOG_WARN, "mcp[%s]: dropped a response with an unknown id", c->name);
        }
        break;
    case PB_RPC_REQUEST: /* the server's own request: nothing is offered but ping */
        if (!strcmp(m.method, "ping"))
            x_side(c, pb_rpc_result(m.id, pj_object()), "an answer to ping");
        else
            x_side(c, pb_rpc_error(m.id, PB_RPC_METHOD_NOT_FOUND, "Method not found", NULL),
                   "a method-not-found answer");
        break;
    case PB_RPC_NOTIFICATION:
        if (!strcmp(m.method, "notifications/message")) {
            pj_t *d = pj_object_get(m.params, "data");
            char *txt = d ? pj_dumps(d, PJ_COMPACT | PJ_ENCODE_ANY) : NULL;
            const char *lvl = pj_string_value(pj_object_get(m.params, "level"));
            pb_log(&c->log, PB_LOG_INFO, "mcp[%s]: %s: %.2000s", c->name, lvl ? lvl : "log",
                   pj_is_string(d) ? pj_string_value(d)
                   : txt           ? txt
                                   : "");
            free(txt);
        }
        break; /* progress and the rest need no action */
    }
    pb_rpc_clear(&m);
}

static void on_sse_event(void *ctx, const char *event, const char *data, size_t len) {
    xchg *x = ctx;
    if (x->fail || x->answer) return;
    if (!strcmp(event, "message") && len > 0) x_message(x, data, len);
}

/* The media type of a Content-Type value, compared without case and parameters. */
static bool media_is(const char *v, const char *type) {
    size_t n = strlen(type);
    while (*v == ' ' || *v == '\t')
        v++;
    if (strncasecmp(v, type, n)) return false;
    v += n;
    while (*v == ' ' || *v == '\t')
        v++;
    return *v == '\0' || *v == ';';
}

static bool session_ok(const char *s) {
    size_t n = strlen(s);
    if (n == 0 || n >= sizeof((pmcp_ev_client *)0)->session) return false;
    for (; *s; s++)
        if ((unsigned char)*s < 0x21 || (unsigned char)*s > 0x7e) return false;
    return true;
}

static int x_on_head(void *ud, const pn_http_parser *p) {
    xchg *x = ud;
    x->status = pn_http_status(p);
    if (x->status < 200 || x->status > 299) return 0; /* the body is quoted in the error */
    const char *ct = pn_http_header_get(p, "Content-Type");
    x->ct = !ct                                 ? CT_NONE
            : media_is(ct, "application/json")  ? CT_JSON
            : media_is(ct, "text/event-stream") ? CT_SSE
                                                : CT_OTHER;
    if (x->kind == X_INIT) {
        const char *sid = pn_http_header_get(p, "Mcp-Session-Id");
        if (sid && !session_ok(sid)) {
            verdict(x, PMCP_EV_E_PROTOCOL,
                    "the server's Mcp-Session-Id is not 1 to 255 visible ASCII characters");
            return 1;
        }
        if (sid) snprintf(x->c->session, sizeof x->c->session, "%s", sid);
    }
    if (x->ct == CT_OTHER && x->id) {
        verdict(x, PMCP_EV_E_PROTOCOL, "the answer to %s has the content type %.80s", x->method,
                ct);
        return 1;
    }
    return 0;
}

static int x_on_body(void *ud, const char *data, size_t len) {
    xchg *x = ud;
    if (x->status < 200 || x->status > 299) {
        if (x->body.len < ERR_BODY) {
            size_t k = len < ERR_BODY - x->body.len ? len : ERR_BODY - x->body.len;
            if (!pb_buf_put(&x->body, data, k)) return 1;
        }
        return 0;
    }
    if (!x->id) return 0; /* nothing expected: the body is dropped */
    if (x->ct == CT_JSON) {
        if (!pb_buf_put(&x->body, data, len)) {
            verdict(x, PMCP_EV_E_NOMEM, "out of memory");
            return 1;
        }
        return 0;
    }
    if (x->ct == CT_SSE) {
        if (pmcp__sse_feed(&x->sse, data, len, on_sse_event, x)) {
            verdict(x, PMCP_EV_E_NOMEM, "out of memory");
            return 1;
        }
        return x->fail || x->answer ? 1 : 0; /* the answer is in: the stream is done */
    }
    verdict(x, PMCP_EV_E_PROTOCOL, "the answer to %s has a body but no content type", x->method);
    return 1;
}

/* The outcome of a finished exchange: PMCP_EV_OK with x->answer (when one was
 * expected), or why not in why. */
static pmcp_ev_status x_outcome(xchg *x, const pn_http_result *r, char *why, size_t n) {
    pmcp_ev_client *c = x->c;
    if (x->fail) {
        snprintf(why, n, "%s", x->why);
        return x->fail;
    }
    if (x->answer) return PMCP_EV_OK;
    if (r->err != PN_HTTP_OK) {
        pmcp_ev_status st = of_http(r->err);
        if (st == PMCP_EV_E_CANCELLED && !x->cancelled) {
            snprintf(why, n, "the MCP client %s is closing", c->name);
            return PMCP_EV_E_CLOSED;
        }
        if (st == PMCP_EV_E_CANCELLED) {
            snprintf(why, n, "cancelled");
        } else if (st == PMCP_EV_E_TIMEOUT) {
            snprintf(why, n, "MCP server %s did not answer %s in time", c->name, x->method);
        } else if (r->err == PN_HTTP_E_TRUNCATED) {
            snprintf(why, n, "MCP server %s closed the connection before answering %s", c->name,
                     x->method);
        } else if (r->err == PN_HTTP_E_BODY_LIMIT) {
            snprintf(why, n, "the answer to %s is larger than %zu bytes", x->method,
                     c->max_response);
        } else {
            snprintf(why, n, "HTTP transport failed (%s): %s", pn_http_err_name(r->err), r->detail);
        }
        return st;
    }
    if (x->status < 200 || x->status > 299) {
        /* the quoted body is the server's text: keep it printable and on one line */
        for (size_t i = 0; i < x->body.len; i++)
            if ((unsigned char)x->body.p[i] < 0x20 || x->body.p[i] == 0x7f) x->body.p[i] = ' ';
        snprintf(why, n, "HTTP %d from the MCP server%s%.200s", x->status, x->body.len ? ": " : "",
                 x->body.len ? x->body.p : "");
        return PMCP_EV_E_HTTP;
    }
    if (!x->id) return PMCP_EV_OK;
    if (x->ct == CT_JSON && x->body.len) {
        x_message(x, x->body.p, x->body.len);
        if (x->fail) {
            snprintf(why, n, "%s", x->why);
            return x->fail;
        }
        if (x->answer) return PMCP_EV_OK;
        snprintf(why, n, "the answer to %s is not its JSON-RPC response", x->method);
        return PMCP_EV_E_PROTOCOL;
    }
    snprintf(why, n, "MCP server %s %s without answering %s", c->name,
             x->ct == CT_SSE ? "ended its event stream" : "sent no body", x->method);
    return PMCP_EV_E_PROTOCOL;
}

/* The result object of an answer: PMCP_EV_OK with a borrowed *res, or why not. */
static pmcp_ev_status answer_result(xchg *x, pj_t **res, char *why, size_t n) {
    pj_t *e = pj_object_get(x->answer, "error");
    if (e) {
        pmcp__rpc_error_text(e, why, n);
        return PMCP_EV_E_RPC;
    }
    *res = pj_object_get(x->answer, "result");
    if (!pj_is_object(*res)) {
        snprintf(why, n, "MCP server %s answered %s with a non-object result", x->c->name,
                 x->method);
        return PMCP_EV_E_PROTOCOL;
    }
    return PMCP_EV_OK;
}

/* ---------------------------------------------------------------- connect */

static void ready(pmcp_ev_client *c, pmcp_ev_status st, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void ready(pmcp_ev_client *c, pmcp_ev_status st, const char *fmt, ...) {
    char text[700];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    c->state = st == PMCP_EV_OK ? S_READY : S_FAILED;
    if (st != PMCP_EV_OK) tools_free(c);
    c->on_ready(c->ready_ctx, st, text);
}

/* What is left of the connect deadline (0: passed). */
static uint32_t connect_left(pmcp_ev_client *c) {
    uint64_t now = c->ports.real->now_ms(c->ports.real->ctx);
    uint64_t spent = now >= c->connect_at ? now - c->connect_at : 0;
    return spent >= c->init_deadline_ms ? 0 : (uint32_t)(c->init_deadline_ms - spent);
}

static void list_page(pmcp_ev_client *c, const char *cursor) {
    char why[300];
    pmcp_ev_status st;
    uint32_t left = connect_left(c);
    if (c->pages >= PMCP_MAX_PAGES) {
        ready(c, PMCP_EV_E_LIMIT, "tools/list failed: tools/list did not end after %d pages",
              PMCP_MAX_PAGES);
        return;
    }
    if (!left) {
        ready(c, PMCP_EV_E_TIMEOUT, "tools/list failed: tools/list took longer than %u ms in all",
              (unsigned)c->init_deadline_ms);
        return;
    }
    c->pages++;
    pj_t *params = cursor ? pj_pack("{s:s}", "cursor", cursor) : pj_object();
    if (!x_request(c, X_LIST, "tools/list", params, left, &st, why, sizeof why))
        ready(c, st, "tools/list failed: %s", why);
}

static void after_init(pmcp_ev_client *c, xchg *x, pmcp_ev_status st, char *why, size_t n) {
    pj_t *res = NULL;
    if (st == PMCP_EV_OK) st = answer_result(x, &res, why, n);
    if (st != PMCP_EV_OK) {
        ready(c, st, "initialize failed: %s", why);
        return;
    }
    const char *ver = pj_string_value(pj_object_get(res, "protocolVersion"));
    if (!pmcp__version_known(ver)) {
        pmcp__version_error(ver, why, n);
        ready(c, PMCP_EV_E_VERSION, "%s", why);
        return;
    }
    pj_t *caps = pj_object_get(res, "capabilities");
    char *cj = pj_is_object(caps) ? pj_dumps(caps, PJ_COMPACT) : strdup("{}");
    if (!cj) {
        ready(c, PMCP_EV_E_NOMEM, "initialize failed: out of memory");
        return;
    }
    free(c->caps_json);
    c->caps_json = cj;
    snprintf(c->protocol, sizeof c->protocol, "%s", ver);
    c->has_tools = pj_is_object(pj_object_get(caps, "tools"));
    /* notifications/initialized is answered (202) before anything else is asked, so the
     * server sees it first although every message has a connection of its own */
    uint32_t left = connect_left(c);
    pj_t *f = pb_rpc_notification("notifications/initialized", NULL);
    if (!left) {
        pj_decref(f);
        ready(c, PMCP_EV_E_TIMEOUT, "initialize failed: MCP server %s did not answer in time",
              c->name);
    } else if (!f || !x_start(c, X_INITED, "notifications/initialized", 0, f, left, &st, why, n)) {
        ready(c, f ? st : PMCP_EV_E_NOMEM, "initialize failed: %s", f ? why : "out of memory");
    }
}

static void after_inited(pmcp_ev_client *c, pmcp_ev_status st, const char *why) {
    if (st == PMCP_EV_E_CLOSED || st == PMCP_EV_E_TIMEOUT) {
        ready(c, st, "initialize failed: %s", why);
        return;
    }
    if (st != PMCP_EV_OK) /* as the native client: logged, the server may still serve */
        pb_log(&c->log, PB_LOG_WARN, "mcp[%s]: notifications/initialized: %s", c->name, why);
    if (c->has_tools)
        list_page(c, NULL);
    else
        ready(c, PMCP_EV_OK, "%s", "");
}

static void after_list(pmcp_ev_client *c, xchg *x, pmcp_ev_status st, char *why, size_t n) {
    pj_t *res = NULL;
    if (st == PMCP_EV_OK) st = answer_result(x, &res, why, n);
    if (st == PMCP_EV_OK) st = add_tools(c, res, why, n);
    if (st != PMCP_EV_OK) {
        ready(c, st, "tools/list failed: %s", why);
        return;
    }
    const char *next = pj_string_value(pj_object_get(res, "nextCursor"));
    if (next && next[0])
        list_page(c, next);
    else
        ready(c, PMCP_EV_OK, "%s", "");
}

/* ---------------------------------------------------------------- outcomes */

static void after_call(pmcp_ev_client *c, xchg *x, pmcp_ev_status st, char *why, size_t n) {
    pj_t *res = NULL;
    if (st == PMCP_EV_OK) st = answer_result(x, &res, why, n);
    pmcp__content cont = {0};
    if (st == PMCP_EV_OK && pmcp__content_of(res, &cont) != 0) {
        st = PMCP_EV_E_NOMEM;
        snprintf(why, n, "out of memory");
    }
    if (st == PMCP_EV_E_TIMEOUT && !c->closing) send_cancelled(c, x->id, "timed out");
    pmcp_ev_result r;
    if (st == PMCP_EV_OK)
        r = (pmcp_ev_result){st, cont.is_error, cont.text, cont.content_json, cont.structured_json};
    else
        r = (pmcp_ev_result){st, true, why, "[]", NULL};
    x->on_done(x->ctx, &r);
    pmcp__content_clear(&cont);
}

static void settle_if_done(pmcp_ev_client *c) {
    if (!c->closing || c->settled || c->xs || c->timer_live || pmcp__ev_ports_live(&c->ports))
        return;
    c->settled = true;
    pmcp_ev_settled_fn fn = c->on_settled;
    void *ctx = c->settled_ctx;
    tools_free(c);
    pmcp__ev_ports_free(&c->ports);
    for (size_t i = 0; i < c->nhdrs; i++) {
        free((char *)c->hdrs[i].name);
        free((char *)c->hdrs[i].value);
    }
    free(c->hdrs);
    free(c->caps_json);
    free(c->url);
    free(c->name);
    free(c);
    if (fn) fn(ctx);
}

static void x_on_done(void *ud, const pn_http_result *r) {
    xchg *x = ud;
    pmcp_ev_client *c = x->c;
    x->req = NULL; /* freed by the HTTP client when this returns */
    x_unlink(c, x);
    char why[700];
    pmcp_ev_status st = x_outcome(x, r, why, sizeof why);
    bool connecting = x->kind == X_INIT || x->kind == X_INITED || x->kind == X_LIST;
    if (connecting && c->closing && st != PMCP_EV_E_CLOSED) { /* no next step once closing */
        st = PMCP_EV_E_CLOSED;
        snprintf(why, sizeof why, "the MCP client %s is closing", c->name);
    }
    switch (x->kind) {
    case X_INIT: after_init(c, x, st, why, sizeof why); break;
    case X_INITED: after_inited(c, st, why); break;
    case X_LIST: after_list(c, x, st, why, sizeof why); break;
    case X_CALL: after_call(c, x, st, why, sizeof why); break;
    case X_SIDE:
    case X_DELETE:
        if (st != PMCP_EV_OK && st != PMCP_EV_E_CLOSED)
            pb_log(&c->log, PB_LOG_DEBUG, "mcp[%s]: %s: %s", c->name,
                   x->kind == X_DELETE ? "DELETE of the session" : x->method, why);
        break;
    }
    x_free(x);
}

/* ---------------------------------------------------------------- public */

static bool token_char(char ch) {
    return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
           strchr("!#$%&'*+-.^_`|~", ch) != NULL;
}

/* A caller's header: a token name the client does not set itself, a value without
 * control bytes. */
static bool header_ok(const pn_http_header *h) {
    static const char *const own[] = {"host",           "content-length",      "content-type",
                                      "accept",         "connection",          "transfer-encoding",
                                      "mcp-session-id", "mcp-protocol-version"};
    if (!h->name || !h->value || !h->name[0]) return false;
    for (const char *p = h->name; *p; p++)
        if (!token_char(*p)) return false;
    for (size_t i = 0; i < sizeof own / sizeof own[0]; i++)
        if (!strcasecmp(h->name, own[i])) return false;
    for (const unsigned char *p = (const unsigned char *)h->value; *p; p++)
        if ((*p < 0x20 && *p != '\t') || *p == 0x7f) return false;
    return true;
}

pmcp_ev_client *pmcp_ev_new(const pn_ports *ports, const pmcp_ev_opts *o, pmcp_ev_status *st,
                            char *err, size_t errlen) {
    if (!ports || !ports->open || !ports->read || !ports->write || !ports->close ||
        !ports->now_ms || !ports->timer_set || !ports->timer_cancel || !o || !o->url) {
        set_err(st, PMCP_EV_E_ARG, err, errlen, "ports or url missing");
        return NULL;
    }
    pn_http_url u;
    char detail[160];
    if (pn_http_url_parse(o->url, &u, detail, sizeof detail) != PN_HTTP_OK) {
        set_err(st, PMCP_EV_E_ARG, err, errlen, "url must be http:// or https:// (%s)", detail);
        return NULL;
    }
    pn_http_url_free(&u);
    if (o->nheaders > MAX_HEADERS || (o->nheaders && !o->headers)) {
        set_err(st, PMCP_EV_E_ARG, err, errlen, "more than %d headers", MAX_HEADERS);
        return NULL;
    }
    for (size_t i = 0; i < o->nheaders; i++) {
        if (!header_ok(&o->headers[i])) {
            set_err(st, PMCP_EV_E_ARG, err, errlen, "bad header %.100s",
                    o->headers[i].name ? o->headers[i].name : "(none)");
            return NULL;
        }
    }
    pmcp_ev_client *c = calloc(1, sizeof *c);
    bool ok = c && (c->url = strdup(o->url)) && (c->name = strdup(o->name ? o->name : "mcp")) &&
              (!o->nheaders || (c->hdrs = calloc(o->nheaders, sizeof *c->hdrs)));
    for (size_t i = 0; ok && i < o->nheaders; i++) {
        c->hdrs[i].name = strdup(o->headers[i].name);
        c->hdrs[i].value = strdup(o->headers[i].value);
        c->nhdrs = i + 1;
        ok = c->hdrs[i].name && c->hdrs[i].value;
    }
    if (!ok) {
        if (c) {
            c->closing = true;
            settle_if_done(c); /* frees (nothing is open), without a callback */
        }
        set_err(st, PMCP_EV_E_NOMEM, err, errlen, "out of memory");
        return NULL;
    }
    pmcp__ev_ports_init(&c->ports, ports, c);
    c->init_deadline_ms = o->init_deadline_ms ? o->init_deadline_ms : 30000;
    c->call_deadline_ms = o->call_deadline_ms ? o->call_deadline_ms : 600000;
    c->max_response = o->max_response ? o->max_response : PMCP_MAX_FRAME;
    c->max_tools = o->max_tools ? o->max_tools : 1024;
    c->max_calls = o->max_calls ? o->max_calls : 64;
    c->log = o->log;
    if (st) *st = PMCP_EV_OK;
    return c;
}

bool pmcp_ev_on_event(pmcp_ev_client *c, const pn_event *ev) {
    if (!c || !ev || ev->ud != c) return false;
    void *owner = pmcp__ev_ports_take(&c->ports, ev);
    if (owner == c) { /* the timer that defers on_settled */
        c->timer_live = false;
    } else if (owner) {
        pn_event e = *ev;
        e.ud = owner;
        pn_http_event(owner, &e);
    }
    settle_if_done(c);
    return true;
}

pmcp_ev_status pmcp_ev_connect(pmcp_ev_client *c, pmcp_ev_ready_fn on_ready, void *ctx) {
    if (!c || !on_ready) return PMCP_EV_E_ARG;
    if (c->closing) return PMCP_EV_E_CLOSED;
    if (c->state != S_NEW) return PMCP_EV_E_STATE;
    pj_t *params = pmcp__initialize_params(false);
    if (!params) return PMCP_EV_E_NOMEM;
    c->on_ready = on_ready;
    c->ready_ctx = ctx;
    c->connect_at = c->ports.real->now_ms(c->ports.real->ctx);
    pmcp_ev_status st;
    char why[300];
    if (!x_request(c, X_INIT, "initialize", params, c->init_deadline_ms, &st, why, sizeof why)) {
        pb_log(&c->log, PB_LOG_WARN, "mcp[%s]: initialize could not start: %s", c->name, why);
        return st;
    }
    c->state = S_CONNECTING;
    return PMCP_EV_OK;
}

const char *pmcp_ev_protocol(const pmcp_ev_client *c) {
    return c ? c->protocol : "";
}

const char *pmcp_ev_capabilities(const pmcp_ev_client *c) {
    return c && c->caps_json ? c->caps_json : "{}";
}

const char *pmcp_ev_session(const pmcp_ev_client *c) {
    return c ? c->session : "";
}

size_t pmcp_ev_tool_count(const pmcp_ev_client *c) {
    return c && c->state == S_READY ? c->ntools : 0;
}

const pmcp_ev_tool *pmcp_ev_tool_at(const pmcp_ev_client *c, size_t i) {
    return c && c->state == S_READY && i < c->ntools ? &c->tools[i] : NULL;
}

pmcp_ev_call *pmcp_ev_call_tool(pmcp_ev_client *c, const char *name, const char *args_json,
                                uint32_t deadline_ms, pmcp_ev_done_fn on_done, void *ctx,
                                pmcp_ev_status *st, char *err, size_t errlen) {
    if (!c || !name || !on_done) {
        set_err(st, PMCP_EV_E_ARG, err, errlen, "client, tool name or on_done missing");
        return NULL;
    }
    if (c->closing) {
        set_err(st, PMCP_EV_E_CLOSED, err, errlen, "the MCP client %s is closing", c->name);
        return NULL;
    }
    if (c->state != S_READY) {
        set_err(st, PMCP_EV_E_STATE, err, errlen, "MCP server %s is not connected", c->name);
        return NULL;
    }
    if (c->ncalls >= c->max_calls) {
        set_err(st, PMCP_EV_E_LIMIT, err, errlen, "more than %zu calls in flight to %s",
                c->max_calls, c->name);
        return NULL;
    }
    bool not_object;
    pj_t *params = pmcp__call_params(name, args_json, &not_object);
    if (!params) {
        if (not_object)
            set_err(st, PMCP_EV_E_ARG, err, errlen, "%s", PMCP_ARGS_NOT_OBJECT);
        else
            set_err(st, PMCP_EV_E_NOMEM, err, errlen, "out of memory");
        return NULL;
    }
    xchg *x = x_request(c, X_CALL, "tools/call", params,
                        deadline_ms ? deadline_ms : c->call_deadline_ms, st, err, errlen);
    if (!x) return NULL;
    x->on_done = on_done;
    x->ctx = ctx;
    if (st) *st = PMCP_EV_OK;
    return x;
}

void pmcp_ev_cancel(pmcp_ev_call *x) {
    if (!x || x->kind != X_CALL || !x->req || x->cancelled || x->answer || x->fail) return;
    x->cancelled = true;
    pn_http_cancel(x->req);
    if (!x->c->closing) send_cancelled(x->c, x->id, "cancelled by the user");
}

pmcp_ev_status pmcp_ev_close(pmcp_ev_client *c, pmcp_ev_settled_fn on_settled, void *ctx) {
    if (!c) return PMCP_EV_E_ARG;
    if (c->closing) return PMCP_EV_E_CLOSED;
    c->closing = true;
    c->on_settled = on_settled;
    c->settled_ctx = ctx;
    for (xchg *x = c->xs; x; x = x->next) /* what was already said to the server goes on */
        if (x->req && x->kind != X_SIDE) pn_http_cancel(x->req);
    if (c->session[0]) {
        char why[200];
        if (!x_start(c, X_DELETE, "DELETE", 0, NULL, DELETE_DEADLINE, NULL, why, sizeof why))
            pb_log(&c->log, PB_LOG_DEBUG, "mcp[%s]: DELETE of the session: %s", c->name, why);
    }
    if (!c->xs && !pmcp__ev_ports_live(&c->ports)) {
        /* nothing to wait for: on_settled still comes from an event, never from here */
        pmcp_ev_status st = PMCP_EV_OK;
        if (!pmcp__ev_ports_reserve(&c->ports, 1))
            st = PMCP_EV_E_NOMEM;
        else if (c->ports.table.timer_set(c->ports.table.ctx, 0, c, &c->timer) != PN_OK)
            st = PMCP_EV_E_CLOSED;
        if (st != PMCP_EV_OK) {
            c->on_settled = NULL;
            settle_if_done(c);
            return st;
        }
        c->timer_live = true;
    }
    return PMCP_EV_OK;
}
