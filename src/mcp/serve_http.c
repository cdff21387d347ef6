/*
 * serve_http.c — the workspace MCP server over MCP streamable HTTP (pmcp_serve_http):
 * one thread runs a poll loop over non-blocking sockets; each session is a workspace
 * server of server.c (pmcp__srv, the same dispatch as on stdio), whose tool calls run
 * on that server's bounded workers, so a long shell call never blocks other requests.
 *
 * Protocol: POST /mcp with one JSON-RPC message; a request's answer comes back as
 * application/json on the same connection (matched by session and id), anything else
 * gets 202. initialize without Mcp-Session-Id creates a session (its id: 256 random
 * bits, hex); every other POST and DELETE needs a live session id (404 otherwise).
 * DELETE ends the session (its running calls are cancelled and joined). GET: 405.
 *
 * Checks of every request, before its body is read: a strict head (400/431/501/505),
 * Host naming the listener when it listens on loopback and any Origin equal to
 * "http://" + Host (403: DNS rebinding, browsers), "Authorization: Bearer <token>"
 * compared in constant time over digests (401, no detail), path /mcp (404), a
 * Content-Length within max_body (413). Bounded: connections (the listener is not
 * polled while full), sessions (a new one ends the least recently used idle one, else
 * 503; one unused for session_idle_ms ends), the time a request may take to arrive and an
 * idle kept-alive connection (closed), the time an answer may take to be written.
 *
 * Invariants: only the loop thread touches connections and sessions; workers only
 * append answers to a mutex-guarded queue and wake the loop through an eventfd; an
 * answer names its session by serial number, so an answer of an ended session is
 * dropped; a session's server is freed (workers joined) before its record.
 */
#include "mcp/mcp_int.h"
#include "mcp/serve_http_int.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/eventfd.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define MAX_HEAD         16384
#define WRITE_TIMEOUT_MS 30000

enum { C_READ, C_WAIT, C_WRITE };

typedef struct answer {
    struct answer *next;
    uint64_t sess;
    pj_t *id;   /* owned */
    char *body; /* owned */
} answer;

typedef struct hs hs;

typedef struct hsess {
    struct hsess *next;
    uint64_t serial;
    int64_t last_used; /* ms, monotonic: the last request naming it (idle expiry) */
    uint64_t use_seq;  /* the order of that use: the LRU choice (ms ties are common) */
    char id[65];
    pmcp__srv *srv;
    hs *h;
} hsess;

typedef struct conn {
    int fd;
    int state;
    char *in; /* owned */
    size_t inlen, incap;
    long head; /* >0: the head of the current request is parsed */
    pmcp__hreq req;
    pb_buf out;
    size_t outoff;
    int64_t deadline; /* ms, monotonic; 0: none */
    bool close_after;
    bool more; /* kept alive with bytes of the next request buffered */
    uint64_t wait_sess;
    pj_t *wait_id;    /* owned while C_WAIT */
    char new_sid[65]; /* the Mcp-Session-Id to announce with the answer */
} conn;

struct hs {
    const pmcp_http_opts *o;
    size_t max_body, max_conns, max_sessions;
    long read_ms, idle_ms, session_idle_ms;
    uint8_t token_digest[PB_SHA256_LEN];
    bool loopback;
    uint16_t port;
    char bound[64]; /* the listener's address as a Host names it ("[v6]" bracketed) */
    int lfd, wake;
    conn **conns;
    size_t nconns;
    hsess *sessions;
    size_t nsessions;
    uint64_t next_serial;
    uint64_t use_clock; /* counts session uses: hsess.use_seq */
    pthread_mutex_t mu; /* the answer queue */
    answer *aq, **aq_last;
};

static int64_t now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ---------------------------------------------------------------- answers */

/* A worker's (or the loop's) outgoing frame: answers are queued for the loop;
 * notifications (progress) have no stream to go to and are dropped. */
static void on_emit(void *ud, pj_t *frame) {
    hsess *se = ud;
    pj_t *id = pj_object_get(frame, "id");
    if (!id || pj_is_null(id)) return;
    answer *a = calloc(1, sizeof *a);
    if (!a) return;
    a->sess = se->serial;
    a->id = pj_deep_copy(id);
    a->body = pj_dumps(frame, PJ_COMPACT | PJ_ENCODE_ANY);
    if (!a->id || !a->body) {
        pj_decref(a->id);
        free(a->body);
        free(a);
        return;
    }
    hs *h = se->h;
    pthread_mutex_lock(&h->mu);
    *h->aq_last = a;
    h->aq_last = &a->next;
    pthread_mutex_unlock(&h->mu);
    uint64_t one = 1;
    ssize_t w = write(h->wake, &one, sizeof one);
    (void)w; /* a full counter already wakes the loop */
}

static void answer_free(answer *a) {
    pj_decref(a->id);
    free(a->body);
    free(a);
}

/* ---------------------------------------------------------------- responses */

static const char *reason(int st) {
    switch (st) {
    case 200: return "OK";
    case 202: return "Accepted";
    case 204: return "No Content";
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 408: return "Request Timeout";
    case 409: return "Conflict";
    case 411: return "Length Required";
    case 413: return "Content Too Large";
    case 431: return "Request Header Fields Too Large";
    case 501: return "Not Implemented";
    case 503: return "Service Unavailable";
    case 505: return "HTTP Version Not Supported";
    default: return "Error";
    }
}

static void conn_close(hs *h, size_t i);

static void flush_out(hs *h, size_t i) {
    conn *c = h->conns[i];
    while (c->outoff < c->out.len) {
        ssize_t n = send(c->fd, c->out.p + c->outoff, c->out.len - c->outoff, MSG_NOSIGNAL);
        if (n > 0) {
            c->outoff += (size_t)n;
            continue;
        }
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            if (c->state != C_WRITE) c->deadline = now_ms() + WRITE_TIMEOUT_MS;
            c->state = C_WRITE;
            return;
        }
        conn_close(h, i);
        return;
    }
    pb_buf_reset(&c->out);
    c->outoff = 0;
    if (c->close_after) {
        conn_close(h, i);
        return;
    }
    /* kept alive: the next request (maybe already buffered) */
    size_t used = c->head > 0 ? (size_t)c->head + c->req.content_length : 0;
    if (used > c->inlen) used = c->inlen;
    memmove(c->in, c->in + used, c->inlen - used);
    c->inlen -= used;
    c->head = 0;
    c->state = C_READ;
    c->more = c->inlen > 0; /* handled by the loop, not here: no recursion per request */
    c->deadline = now_ms() + (c->inlen ? h->read_ms : h->idle_ms);
}

static size_t conn_index(hs *h, const conn *c) {
    size_t i = 0;
    while (i < h->nconns && h->conns[i] != c)
        i++;
    return i;
}

/* Queues a whole response and starts writing it. body may be NULL. */
static void respond(hs *h, size_t i, int st, const char *ctype, const char *body,
                    const char *extra) {
    conn *c = h->conns[i];
    size_t blen = body ? strlen(body) : 0;
    pb_buf_reset(&c->out);
    c->outoff = 0;
    bool ok =
        pb_buf_printf(&c->out, "HTTP/1.1 %d %s\r\nCache-Control: no-store\r\n", st, reason(st));
    if (ok && blen) ok = pb_buf_printf(&c->out, "Content-Type: %s\r\n", ctype);
    if (ok && c->new_sid[0]) ok = pb_buf_printf(&c->out, "Mcp-Session-Id: %s\r\n", c->new_sid);
    if (ok && extra) ok = pb_buf_puts(&c->out, extra);
    if (ok && st != 204) ok = pb_buf_printf(&c->out, "Content-Length: %zu\r\n", blen);
    if (ok) ok = pb_buf_puts(&c->out, c->close_after ? "Connection: close\r\n\r\n" : "\r\n");
    if (ok && blen) ok = pb_buf_put(&c->out, body, blen);
    c->new_sid[0] = 0;
    if (!ok) {
        conn_close(h, i);
        return;
    }
    flush_out(h, i);
}

/* An error status with a JSON-RPC error body (id null): what went wrong, never a
 * secret. */
static void respond_err(hs *h, size_t i, int st, int code, const char *msg, pj_t *id) {
    pj_t *f = pb_rpc_error(id, code, msg, NULL);
    char *body = f ? pj_dumps(f, PJ_COMPACT | PJ_ENCODE_ANY) : NULL;
    pj_decref(f);
    respond(h, i, st, "application/json", body,
            st == 401   ? "WWW-Authenticate: Bearer\r\n"
            : st == 405 ? "Allow: POST, DELETE\r\n"
                        : NULL);
    free(body);
}

/* ---------------------------------------------------------------- sessions */

static hsess *session_find(hs *h, const char *id) {
    for (hsess *s = h->sessions; s; s = s->next)
        if (strlen(id) == 64 && pb_ct_equal(s->id, id, 64)) {
            s->last_used = now_ms();
            s->use_seq = ++h->use_clock;
            return s;
        }
    return NULL;
}

static bool session_busy(hs *h, const hsess *se) {
    for (size_t i = 0; i < h->nconns; i++)
        if (h->conns[i]->state == C_WAIT && h->conns[i]->wait_sess == se->serial) return true;
    return false;
}

static void session_end(hs *h, hsess *se) {
    for (hsess **pp = &h->sessions; *pp; pp = &(*pp)->next)
        if (*pp == se) {
            *pp = se->next;
            break;
        }
    h->nsessions--;
    pmcp__srv_free(se->srv, 0); /* cancels and joins its calls */
    /* requests still waiting for this session get 404 */
    for (bool again = true; again;) {
        again = false;
        for (size_t i = 0; i < h->nconns; i++) {
            conn *c = h->conns[i];
            if (c->state == C_WAIT && c->wait_sess == se->serial) {
                pj_decref(c->wait_id);
                c->wait_id = NULL;
                c->state = C_READ;
                c->close_after = true;
                respond_err(h, i, 404, PMCP_INVALID_REQUEST, "Session ended", NULL);
                again = true; /* the array may have moved: scan again */
                break;
            }
        }
    }
    pb_wipe(se->id, sizeof se->id);
    free(se);
}

/* Ends the sessions unused for session_idle_ms (clients that vanished without DELETE);
 * with force, also the least recently used one without a waiting request (room for a
 * new session when all are taken). */
static void sessions_expire(hs *h, bool force) {
    int64_t now = now_ms();
    hsess *lru = NULL;
    for (hsess *se = h->sessions; se;) {
        hsess *next = se->next;
        if (!session_busy(h, se)) {
            if (now - se->last_used >= h->session_idle_ms) {
                session_end(h, se);
            } else if (!lru || se->use_seq < lru->use_seq) {
                lru = se;
            }
        }
        se = next;
    }
    if (force && lru && h->nsessions >= h->max_sessions) session_end(h, lru);
}

/* ---------------------------------------------------------------- requests */

static bool host_ok(hs *h, const char *host) {
    if (!host || !host[0]) return false;
    if (!h->loopback) return true;
    const char *names[] = {"127.0.0.1", "localhost", "[::1]", h->bound};
    for (size_t k = 0; k < 4; k++) {
        size_t n = strlen(names[k]);
        if (strncasecmp(host, names[k], n) != 0) continue;
        if (!host[n]) return true;
        char want[16];
        snprintf(want, sizeof want, ":%u", (unsigned)h->port);
        if (!strcmp(host + n, want)) return true;
    }
    return false;
}

static bool auth_ok(hs *h, const char *auth) {
    if (!auth || strncasecmp(auth, "Bearer ", 7) != 0) return false;
    const char *t = auth + 7;
    while (*t == ' ')
        t++;
    uint8_t d[PB_SHA256_LEN];
    pb_sha256(t, strlen(t), d);
    return pb_ct_equal(d, h->token_digest, sizeof d);
}

/* The checks made as soon as the head is known. 0: go on; else answered. */
static int check_head(hs *h, size_t i) {
    conn *c = h->conns[i];
    pmcp__hreq *r = &c->req;
    if (!host_ok(h, r->host)) {
        c->close_after = true;
        respond_err(h, i, 403, PMCP_INVALID_REQUEST, "Forbidden: Host", NULL);
        return 1;
    }
    if (r->origin) {
        char want[600];
        snprintf(want, sizeof want, "http://%s", r->host);
        if (strcasecmp(r->origin, want) != 0) {
            c->close_after = true;
            respond_err(h, i, 403, PMCP_INVALID_REQUEST, "Forbidden: Origin", NULL);
            return 1;
        }
    }
    if (!auth_ok(h, r->auth)) {
        c->close_after = true;
        respond_err(h, i, 401, PMCP_INVALID_REQUEST, "Unauthorized", NULL);
        return 1;
    }
    if (strcmp(r->target, "/mcp") != 0) {
        c->close_after = true;
        respond_err(h, i, 404, PMCP_INVALID_REQUEST, "Not Found: the endpoint is /mcp", NULL);
        return 1;
    }
    if (r->content_length > h->max_body) {
        c->close_after = true;
        respond_err(h, i, 413, PMCP_INVALID_REQUEST, "Request body too large", NULL);
        return 1;
    }
    if (!strcmp(r->method, "POST") && !r->has_length) {
        c->close_after = true;
        respond_err(h, i, 411, PMCP_INVALID_REQUEST, "Content-Length required", NULL);
        return 1;
    }
    if (r->proto) {
        static const char *const v[] = {"2025-06-18", "2025-03-26", "2024-11-05"};
        bool known = false;
        for (size_t k = 0; k < 3; k++)
            known |= !strcmp(r->proto, v[k]);
        if (!known) {
            c->close_after = true; /* the body may still be on its way */
            respond_err(h, i, 400, PMCP_INVALID_REQUEST, "Unsupported MCP-Protocol-Version", NULL);
            return 1;
        }
    }
    return 0;
}

static bool waiting_same_id(hs *h, uint64_t sess, pj_t *id) {
    for (size_t i = 0; i < h->nconns; i++)
        if (h->conns[i]->state == C_WAIT && h->conns[i]->wait_sess == sess &&
            pj_equal(h->conns[i]->wait_id, id))
            return true;
    return false;
}

static void handle_post(hs *h, size_t i) {
    conn *c = h->conns[i];
    const char *body = c->in + c->head;
    size_t blen = c->req.content_length;
    hsess *se = NULL;
    if (c->req.session) {
        se = session_find(h, c->req.session);
        if (!se) {
            respond_err(h, i, 404, PMCP_INVALID_REQUEST, "Session not found", NULL);
            return;
        }
    }
    pb_rpc_msg m;
    pb_rpc_decode(body, blen, NULL, &m);
    if (m.kind == PB_RPC_INVALID) {
        char why[160];
        respond_err(h, i, 400, m.err_code, pb_rpc_invalid_text(&m, why, sizeof why), m.id);
        pb_rpc_clear(&m);
        return;
    }
    bool init = m.kind == PB_RPC_REQUEST && !strcmp(m.method, "initialize");
    if (!se && !init) {
        respond_err(h, i, 400, PMCP_INVALID_REQUEST,
                    "Bad Request: Mcp-Session-Id required (initialize first)", NULL);
    } else if (se && init) {
        respond_err(h, i, 400, PMCP_INVALID_REQUEST, "Bad Request: session already initialized",
                    NULL);
    } else if (m.kind != PB_RPC_REQUEST) {
        pmcp__srv_msg(se->srv, &m);
        respond(h, i, 202, NULL, NULL, NULL);
    } else {
        if (init) {
            uint8_t rnd[32];
            if (h->nsessions >= h->max_sessions) {
                sessions_expire(h, true); /* may close other connections: c may move */
                i = conn_index(h, c);
                if (i == h->nconns) {
                    pb_rpc_clear(&m);
                    return;
                }
            }
            se = h->nsessions < h->max_sessions ? calloc(1, sizeof *se) : NULL;
            if (!se || getrandom(rnd, sizeof rnd, 0) != (ssize_t)sizeof rnd) {
                free(se);
                respond_err(h, i, 503, PMCP_INTERNAL_ERROR, "Too many sessions", m.id);
                pb_rpc_clear(&m);
                return;
            }
            pb_hex(rnd, sizeof rnd, se->id);
            se->h = h;
            se->serial = ++h->next_serial;
            se->last_used = now_ms();
            se->use_seq = ++h->use_clock;
            se->srv = pmcp__srv_new(h->o->server, -1, on_emit, se);
            if (!se->srv) {
                free(se);
                respond_err(h, i, 503, PMCP_INTERNAL_ERROR, "Cannot start a session", m.id);
                pb_rpc_clear(&m);
                return;
            }
            se->next = h->sessions;
            h->sessions = se;
            h->nsessions++;
            memcpy(c->new_sid, se->id, sizeof c->new_sid);
        }
        if (waiting_same_id(h, se->serial, m.id)) {
            respond_err(h, i, 409, PMCP_INVALID_REQUEST, "A request with this id is in flight",
                        m.id);
        } else if (!(c->wait_id = pj_deep_copy(m.id))) {
            respond_err(h, i, 503, PMCP_INTERNAL_ERROR, "out of memory", m.id);
        } else {
            c->state = C_WAIT;
            c->wait_sess = se->serial;
            c->deadline = 0;            /* a tool call takes as long as its own bounds allow */
            pmcp__srv_msg(se->srv, &m); /* the answer comes through the queue */
        }
    }
    pb_rpc_clear(&m);
}

static void handle_request(hs *h, size_t i) {
    conn *c = h->conns[i];
    const char *meth = c->req.method;
    if (!strcmp(meth, "POST")) {
        handle_post(h, i);
    } else if (!strcmp(meth, "DELETE")) {
        hsess *se = c->req.session ? session_find(h, c->req.session) : NULL;
        if (!se) {
            respond_err(h, i, c->req.session ? 404 : 400, PMCP_INVALID_REQUEST,
                        c->req.session ? "Session not found" : "Mcp-Session-Id required", NULL);
            return;
        }
        session_end(h, se); /* may close other connections: c's index may move */
        i = conn_index(h, c);
        if (i < h->nconns) respond(h, i, 204, NULL, NULL, NULL);
    } else {
        respond_err(h, i, 405, PMCP_INVALID_REQUEST, "Method Not Allowed", NULL);
    }
}

/* Parses and handles what the connection buffered. */
static void process(hs *h, size_t i) {
    conn *c = h->conns[i];
    if (c->state != C_READ) return;
    if (c->head == 0) {
        long r = pmcp__hreq_parse(c->in, c->inlen, MAX_HEAD, &c->req);
        if (r == 0) return;
        if (r < 0) {
            c->close_after = true;
            respond_err(h, i, (int)-r, PMCP_INVALID_REQUEST, reason((int)-r), NULL);
            return;
        }
        c->head = r;
        if (c->req.close) c->close_after = true;
        if (check_head(h, i)) return;
    }
    if (c->inlen < (size_t)c->head + c->req.content_length) return;
    handle_request(h, i);
}

static void on_readable(hs *h, size_t i) {
    conn *c = h->conns[i];
    /* read in every state: bytes of a pipelined request wait in the buffer (bounded),
     * and the end of the peer is seen while a call runs (its answer is then dropped) */
    size_t limit = MAX_HEAD + h->max_body;
    for (;;) {
        if (c->inlen == limit) break;
        if (c->incap - c->inlen < 4096 && c->incap < limit) {
            size_t nc = c->incap ? c->incap * 2 : 8192;
            if (nc > limit) nc = limit;
            char *p = realloc(c->in, nc);
            if (!p) {
                conn_close(h, i);
                return;
            }
            c->in = p;
            c->incap = nc;
        }
        ssize_t n = recv(c->fd, c->in + c->inlen, c->incap - c->inlen, 0);
        if (n > 0) {
            if (c->inlen == 0 && c->state == C_READ) c->deadline = now_ms() + h->read_ms;
            c->inlen += (size_t)n;
            continue;
        }
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
        conn_close(h, i); /* end or error */
        return;
    }
    process(h, i);
}

static void conn_close(hs *h, size_t i) {
    conn *c = h->conns[i];
    close(c->fd);
    free(c->in);
    pb_buf_free(&c->out);
    pj_decref(c->wait_id);
    free(c);
    h->conns[i] = h->conns[--h->nconns];
}

static void deliver_answers(hs *h) {
    uint64_t v;
    ssize_t r = read(h->wake, &v, sizeof v);
    (void)r;
    pthread_mutex_lock(&h->mu);
    answer *a = h->aq;
    h->aq = NULL;
    h->aq_last = &h->aq;
    pthread_mutex_unlock(&h->mu);
    while (a) {
        answer *next = a->next;
        for (size_t i = 0; i < h->nconns; i++) {
            conn *c = h->conns[i];
            if (c->state == C_WAIT && c->wait_sess == a->sess && pj_equal(c->wait_id, a->id)) {
                pj_decref(c->wait_id);
                c->wait_id = NULL;
                c->state = C_READ;
                respond(h, i, 200, "application/json", a->body, NULL);
                break;
            }
        }
        answer_free(a);
        a = next;
    }
}

static void accept_all(hs *h) {
    while (h->nconns < h->max_conns) {
        int fd = accept4(h->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) return;
        conn *c = calloc(1, sizeof *c);
        if (!c) {
            close(fd);
            return;
        }
        c->fd = fd;
        c->state = C_READ;
        c->deadline = now_ms() + h->idle_ms;
        h->conns[h->nconns++] = c;
    }
}

static int open_listener(hs *h, const char *host, uint16_t port, char *err, size_t errlen) {
    struct sockaddr_storage ss;
    memset(&ss, 0, sizeof ss);
    socklen_t sl;
    struct sockaddr_in *a4 = (struct sockaddr_in *)&ss;
    struct sockaddr_in6 *a6 = (struct sockaddr_in6 *)&ss;
    if (inet_pton(AF_INET, host, &a4->sin_addr) == 1) {
        a4->sin_family = AF_INET;
        a4->sin_port = htons(port);
        sl = sizeof *a4;
        h->loopback = (ntohl(a4->sin_addr.s_addr) >> 24) == 127;
        snprintf(h->bound, sizeof h->bound, "%.60s", host);
    } else if (inet_pton(AF_INET6, host, &a6->sin6_addr) == 1) {
        a6->sin6_family = AF_INET6;
        a6->sin6_port = htons(port);
        sl = sizeof *a6;
        h->loopback = IN6_IS_ADDR_LOOPBACK(&a6->sin6_addr);
        snprintf(h->bound, sizeof h->bound, "[%.60s]", host);
    } else {
        snprintf(err, errlen, "not a numeric address: %s", host);
        return -1;
    }
    int fd = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    int one = 1;
    if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) != 0 ||
        bind(fd, (struct sockaddr *)&ss, sl) != 0 || listen(fd, 64) != 0 ||
        getsockname(fd, (struct sockaddr *)&ss, &sl) != 0) {
        snprintf(err, errlen, "cannot listen on %s:%u: %s", host, (unsigned)port, strerror(errno));
        if (fd >= 0) close(fd);
        return -1;
    }
    h->port = ntohs(ss.ss_family == AF_INET ? a4->sin_port : a6->sin6_port);
    h->lfd = fd;
    return 0;
}

int pmcp_serve_http(const pmcp_http_opts *o, char *err, size_t errlen) {
    if (!o || !o->server || !o->token || strlen(o->token) < 16) {
        snprintf(err, errlen, "a bearer token of at least 16 bytes is required");
        return -1;
    }
    hs h;
    memset(&h, 0, sizeof h);
    h.o = o;
    h.max_body = o->max_body ? o->max_body : (4u << 20);
    h.max_conns = o->max_conns ? o->max_conns : 64;
    h.max_sessions = o->max_sessions ? o->max_sessions : 16;
    h.read_ms = o->read_timeout_ms > 0 ? o->read_timeout_ms : 10000;
    h.idle_ms = o->idle_timeout_ms > 0 ? o->idle_timeout_ms : 60000;
    h.session_idle_ms = o->session_idle_ms > 0 ? o->session_idle_ms : 30L * 60 * 1000;
    pb_sha256(o->token, strlen(o->token), h.token_digest);
    h.aq_last = &h.aq;
    h.conns = calloc(h.max_conns, sizeof *h.conns);
    if (!h.conns) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    if (open_listener(&h, o->host ? o->host : "127.0.0.1", o->port, err, errlen) != 0) {
        free(h.conns);
        return -1;
    }
    h.wake = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (h.wake < 0) {
        snprintf(err, errlen, "eventfd: %s", strerror(errno));
        close(h.lfd);
        free(h.conns);
        return -1;
    }
    pthread_mutex_init(&h.mu, NULL);
    if (o->on_listen) o->on_listen(o->ud, o->host ? o->host : "127.0.0.1", h.port);
    struct pollfd *pf = calloc(h.max_conns + 3, sizeof *pf);
    conn **pc = calloc(h.max_conns + 3, sizeof *pc);
    int rc = 0;
    bool stop = !pf || !pc;
    if (stop) {
        snprintf(err, errlen, "out of memory");
        rc = -1;
    }
    int64_t last_expire = now_ms();
    while (!stop) {
        size_t n = 0;
        pf[n++] = (struct pollfd){.fd = h.wake, .events = POLLIN};
        pf[n++] = (struct pollfd){.fd = o->stop_fd, .events = POLLIN};
        pf[n++] = (struct pollfd){.fd = h.nconns < h.max_conns ? h.lfd : -1, .events = POLLIN};
        int64_t now = now_ms(), wait = -1;
        for (size_t i = 0; i < h.nconns; i++) {
            conn *c = h.conns[i];
            if (c->more) wait = 0;
            /* a full buffer is not polled for input (no busy loop); see below for HUP */
            short ev = c->inlen < MAX_HEAD + h.max_body ? POLLIN : 0;
            if (c->state == C_WRITE) ev |= POLLOUT;
            pc[n] = c;
            pf[n++] = (struct pollfd){.fd = c->fd, .events = ev};
            if (c->deadline) {
                int64_t d = c->deadline - now;
                if (d < 0) d = 0;
                if (wait < 0 || d < wait) wait = d;
            }
        }
        int pr = poll(pf, n, wait < 0 || wait > 1000 ? 1000 : (int)wait);
        if (pr < 0 && errno != EINTR) {
            snprintf(err, errlen, "poll: %s", strerror(errno));
            rc = -1;
            break;
        }
        if (pr < 0) continue;
        if (pf[1].revents) break; /* asked to stop */
        if (pf[0].revents & POLLIN) deliver_answers(&h);
        for (size_t k = 3; k < n; k++) {
            if (!pf[k].revents) continue;
            size_t i = conn_index(&h, pc[k]); /* it may have moved or closed meanwhile */
            if (i == h.nconns) continue;
            conn *c = h.conns[i];
            if (c->state == C_WRITE && (pf[k].revents & POLLOUT))
                flush_out(&h, i);
            else if (pf[k].revents & POLLIN)
                on_readable(&h, i);
            else if (pf[k].revents & (POLLHUP | POLLERR))
                conn_close(&h, i); /* gone, with nothing more to read */
        }
        now = now_ms();
        for (size_t i = 0; i < h.nconns;) {
            conn *c = h.conns[i];
            if (c->deadline && c->deadline <= now) {
                conn_close(&h, i); /* slow or idle: closed without an answer */
                continue;
            }
            i++;
        }
        for (size_t i = 0; i < h.nconns; i++) {
            conn *c = h.conns[i];
            if (!c->more) continue;
            c->more = false;
            process(&h, i);
            i = conn_index(&h, c); /* closed: i now names the next one */
            if (i == h.nconns) i = (size_t)-1;
        }
        if (now - last_expire >= 1000) {
            sessions_expire(&h, false);
            last_expire = now;
        }
        if (pf[2].revents & POLLIN) accept_all(&h);
    }
    free(pf);
    free(pc);
    close(h.lfd);
    while (h.sessions)
        session_end(&h, h.sessions);
    while (h.nconns)
        conn_close(&h, 0);
    deliver_answers(&h); /* frees what the ended sessions left queued */
    pthread_mutex_destroy(&h.mu);
    close(h.wake);
    free(h.conns);
    pb_wipe(h.token_digest, sizeof h.token_digest);
    return rc;
}
