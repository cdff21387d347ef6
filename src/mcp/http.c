/*
 * http.c — MCP over HTTP (libcurl): the streamable HTTP transport (2025-03-26+) and
 * the legacy HTTP+SSE transport (2024-11-05).
 *
 * Streamable HTTP: every frame is one POST (Accept: application/json,
 * text/event-stream). Requests are posted on their own thread so a long call streaming
 * progress over SSE does not block a concurrent cancel or ping; notifications and
 * responses are posted synchronously (so notifications/initialized is delivered before
 * the next request). The Mcp-Session-Id answered to initialize is sent on every later
 * POST and on the DELETE issued by close(). A failed POST of a request is turned into a
 * JSON-RPC error answer for that id, so a waiting caller learns it at once.
 *
 * Legacy SSE: one long GET delivers an "endpoint" event (URL resolved against the
 * stream's URL) and then every server frame as a "message" event; frames are POSTed
 * to the endpoint. The SSE parser itself is sse.c (shared with the event-driven client).
 *
 * Invariant: close() aborts every transfer (progress callback), joins every thread and
 * only then frees; callbacks never run after it returns. The library never calls
 * curl_global_init (the program does, see pm_global_init).
 */
#include "mcp/mcp_int.h"
#include "mcp/oauth_int.h"

#include <curl/curl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

/* ---------------------------------------------------------------- common */

typedef struct post_thread {
    struct post_thread *next;
    pthread_t th;
    atomic_bool done;
    struct http_link *link;
    char *body;
    size_t len;
} post_thread;

typedef struct http_link {
    pmcp__link base;
    pmcp__link_cb cb;
    char *url;      /* streamable: the endpoint; sse: the stream URL */
    char *post_url; /* sse: the endpoint from the "endpoint" event */
    struct curl_slist *headers;
    pmcp__auth *auth; /* borrowed (the client's): OAuth tokens for this URL, or NULL */
    bool legacy;
    atomic_bool closing;
    pthread_mutex_t mu; /* session_id, protocol, threads, post_url, cv */
    pthread_cond_t cv;
    char session_id[256];
    char protocol[32];
    post_thread *threads;
    pthread_mutex_t cbmu; /* one on_frame at a time */
    /* legacy */
    pthread_t get_th;
    bool has_get;
    bool stream_ended;
    char stream_err[256];
} http_link;

static int on_xfer(void *ud, curl_off_t a, curl_off_t b, curl_off_t c, curl_off_t d) {
    (void)a, (void)b, (void)c, (void)d;
    return atomic_load(&((http_link *)ud)->closing) ? 1 : 0;
}

static void deliver(http_link *h, const char *text, size_t len) {
    pthread_mutex_lock(&h->cbmu);
    if (!atomic_load(&h->closing)) h->cb.on_frame(h->cb.ctx, text, len);
    pthread_mutex_unlock(&h->cbmu);
}

/* The id of a request frame we sent, for synthesised error answers (NULL if none). */
static pj_t *request_id(const char *body, size_t len) {
    pj_t *f = pj_loadb(body, len, 0, NULL);
    pj_t *id = pj_object_get(f, "method") ? pj_object_get(f, "id") : NULL;
    if (id) pj_incref(id);
    pj_decref(f);
    return id;
}

static void fail_request(http_link *h, const char *body, size_t len, const char *why) {
    pj_t *id = request_id(body, len);
    if (!id) {
        pb_log(&h->cb.log, PB_LOG_WARN, "mcp[%s]: %s", h->url, why);
        return;
    }
    pj_t *e = pb_rpc_error(id, PMCP_INTERNAL_ERROR, why, NULL);
    size_t n;
    char *t = pb_rpc_encode(e, false, &n);
    if (t) deliver(h, t, n);
    free(t);
    pj_decref(e);
    pj_decref(id);
}

/* The configured headers, the session's, and the OAuth token of this very URL (copied
 * into used, when given, so a 401 can tell whether that token was the current one). */
static struct curl_slist *base_headers(http_link *h, bool json_body, char *used, size_t ulen) {
    struct curl_slist *l = NULL, *t;
    char auth[8320];
    if (used && ulen) used[0] = '\0';
    if (h->auth && pmcp__auth_header(h->auth, auth, sizeof auth)) {
        if ((t = curl_slist_append(l, auth))) l = t;
        if (used) snprintf(used, ulen, "%s", auth);
    }
    for (struct curl_slist *x = h->headers; x; x = x->next)
        if ((t = curl_slist_append(l, x->data))) l = t;
    if (json_body && (t = curl_slist_append(l, "Content-Type: application/json"))) l = t;
    pthread_mutex_lock(&h->mu);
    char line[320];
    if (h->session_id[0]) {
        snprintf(line, sizeof line, "Mcp-Session-Id: %s", h->session_id);
        if ((t = curl_slist_append(l, line))) l = t;
    }
    if (h->protocol[0]) {
        snprintf(line, sizeof line, "MCP-Protocol-Version: %s", h->protocol);
        if ((t = curl_slist_append(l, line))) l = t;
    }
    pthread_mutex_unlock(&h->mu);
    return l;
}

static CURL *easy(http_link *h, const char *url, struct curl_slist *hdrs) {
    CURL *e = pmcp__easy(url, hdrs);
    if (!e) return NULL;
    curl_easy_setopt(e, CURLOPT_NOPROGRESS, 0L);
    curl_easy_setopt(e, CURLOPT_XFERINFOFUNCTION, on_xfer);
    curl_easy_setopt(e, CURLOPT_XFERINFODATA, h);
    curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, 10000L);
    return e;
}

/* ---------------------------------------------------------------- one POST */

typedef struct post_ctx {
    http_link *h;
    bool sse;
    bool ctype_known;
    pmcp__sse parser;
    pb_buf body;
    bool oom;
    char *www; /* WWW-Authenticate of a 401 */
} post_ctx;

static size_t on_header(char *b, size_t sz, size_t n, void *ud) {
    post_ctx *p = ud;
    size_t len = sz * n;
    char line[512];
    snprintf(line, sizeof line, "%.*s", (int)(len < 511 ? len : 511), b);
    line[strcspn(line, "\r\n")] = '\0';
    if (!strncasecmp(line, "www-authenticate:", 17) && !p->www) {
        const char *v = line + 17;
        while (*v == ' ' || *v == '\t')
            v++;
        p->www = strdup(v);
    } else if (!strncasecmp(line, "content-type:", 13)) {
        p->ctype_known = true;
        p->sse = strstr(line + 13, "text/event-stream") != NULL;
    } else if (!strncasecmp(line, "mcp-session-id:", 15)) {
        const char *v = line + 15;
        while (*v == ' ' || *v == '\t')
            v++;
        pthread_mutex_lock(&p->h->mu);
        snprintf(p->h->session_id, sizeof p->h->session_id, "%.255s", v);
        pthread_mutex_unlock(&p->h->mu);
    }
    return len;
}

static void on_sse_event(void *ctx, const char *event, const char *data, size_t len) {
    http_link *h = ctx;
    if (strcmp(event, "message") == 0 && len > 0) deliver(h, data, len);
}

static size_t on_body(char *b, size_t sz, size_t n, void *ud) {
    post_ctx *p = ud;
    size_t len = sz * n;
    if (p->sse) {
        if (pmcp__sse_feed(&p->parser, b, len, on_sse_event, p->h)) p->oom = true;
        return len;
    }
    if (p->body.len + len > PMCP_MAX_FRAME || !pb_buf_put(&p->body, b, len)) p->oom = true;
    return len;
}

/* One POST of a frame; delivers the answer or fails the request, except a 401 that
 * the caller retries with a refreshed token (then *retry is set and nothing is
 * delivered). The token goes only to this link's URL: redirects are never followed. */
static void post_once(http_link *h, const char *url, const char *body, size_t len, bool may_retry,
                      bool *retry) {
    *retry = false;
    char used[8320];
    struct curl_slist *hdrs = base_headers(h, true, used, sizeof used);
    struct curl_slist *t = curl_slist_append(hdrs, "Accept: application/json, text/event-stream");
    if (t) hdrs = t;
    post_ctx p = {.h = h};
    CURL *e = easy(h, url, hdrs);
    if (!e) {
        curl_slist_free_all(hdrs);
        fail_request(h, body, len, "out of memory");
        return;
    }
    curl_easy_setopt(e, CURLOPT_POSTFIELDS, body);
    curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE, (long)len);
    curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(e, CURLOPT_HEADERDATA, &p);
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, &p);
    CURLcode rc = curl_easy_perform(e);
    long status = 0;
    curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &status);
    char why[512];
    if (atomic_load(&h->closing)) {
        /* closing: nobody listens any more */
    } else if (rc != CURLE_OK) {
        snprintf(why, sizeof why, "HTTP transport failed: %s", curl_easy_strerror(rc));
        fail_request(h, body, len, why);
    } else if (status == 401 && h->auth) {
        *retry = pmcp__auth_on_401(h->auth, p.www, used) == 1 && may_retry;
        if (!*retry) {
            snprintf(why, sizeof why, "HTTP 401 from the MCP server: authorization required");
            fail_request(h, body, len, why);
        }
    } else if (status < 200 || status >= 300) {
        snprintf(why, sizeof why, "HTTP %ld from the MCP server%s%.200s", status,
                 p.body.len ? ": " : "", p.body.len ? p.body.p : "");
        fail_request(h, body, len, why);
    } else if (!p.sse && p.body.len > 0 && !h->legacy) {
        deliver(h, p.body.p, p.body.len);
    } else if (p.oom) {
        fail_request(h, body, len, "answer too large or out of memory");
    }
    curl_easy_cleanup(e);
    curl_slist_free_all(hdrs);
    pmcp__sse_free(&p.parser);
    pb_buf_free(&p.body);
    free(p.www);
}

/* Posts one frame and delivers what comes back (a 401 to a stale token: once more with
 * the refreshed one). */
static void post_frame(http_link *h, const char *url, const char *body, size_t len) {
    bool retry;
    post_once(h, url, body, len, true, &retry);
    if (retry) post_once(h, url, body, len, false, &retry);
}

static void *post_main(void *arg) {
    post_thread *pt = arg;
    post_frame(pt->link, pt->link->url, pt->body, pt->len);
    free(pt->body);
    pt->body = NULL;
    atomic_store(&pt->done, true);
    return NULL;
}

/* Joins finished POST threads (caller holds h->mu). */
static void reap(http_link *h, bool all) {
    for (post_thread **pp = &h->threads; *pp;) {
        post_thread *pt = *pp;
        if (all || atomic_load(&pt->done)) {
            *pp = pt->next;
            pthread_join(pt->th, NULL);
            free(pt->body);
            free(pt);
        } else {
            pp = &pt->next;
        }
    }
}

static bool is_request(const char *text, size_t len) {
    pj_t *id = request_id(text, len);
    pj_decref(id);
    return id != NULL;
}

static int http_send(pmcp__link *l, const char *text, size_t len) {
    http_link *h = (http_link *)l;
    if (atomic_load(&h->closing)) return -1;
    if (!is_request(text, len)) {
        post_frame(h, h->url, text, len);
        return 0;
    }
    post_thread *pt = calloc(1, sizeof *pt);
    if (!pt || !(pt->body = malloc(len + 1))) {
        free(pt);
        return -1;
    }
    memcpy(pt->body, text, len);
    pt->body[len] = '\0';
    pt->len = len;
    pt->link = h;
    pthread_mutex_lock(&h->mu);
    reap(h, false);
    if (pthread_create(&pt->th, NULL, post_main, pt) != 0) {
        pthread_mutex_unlock(&h->mu);
        free(pt->body);
        free(pt);
        return -1;
    }
    pt->next = h->threads;
    h->threads = pt;
    pthread_mutex_unlock(&h->mu);
    return 0;
}

static void http_set_protocol(pmcp__link *l, const char *version) {
    http_link *h = (http_link *)l;
    pthread_mutex_lock(&h->mu);
    snprintf(h->protocol, sizeof h->protocol, "%s", version ? version : "");
    pthread_mutex_unlock(&h->mu);
}

static size_t discard(char *b, size_t sz, size_t n, void *ud) {
    (void)b, (void)ud;
    return sz * n;
}

static void http_free(http_link *h) {
    curl_slist_free_all(h->headers);
    free(h->url);
    free(h->post_url);
    pthread_mutex_destroy(&h->mu);
    pthread_mutex_destroy(&h->cbmu);
    pthread_cond_destroy(&h->cv);
    free(h);
}

static void http_close(pmcp__link *l) {
    http_link *h = (http_link *)l;
    atomic_store(&h->closing, true); /* aborts transfers, stops deliveries */
    pthread_mutex_lock(&h->cbmu);    /* barrier: no delivery in progress after this */
    pthread_mutex_unlock(&h->cbmu);
    pthread_mutex_lock(&h->mu);
    reap(h, true);
    bool has_session = h->session_id[0] != '\0';
    pthread_mutex_unlock(&h->mu);
    if (!h->legacy && has_session) { /* end the server's session (best effort) */
        atomic_store(&h->closing, false);
        struct curl_slist *hdrs = base_headers(h, false, NULL, 0);
        CURL *e = easy(h, h->url, hdrs);
        if (e) {
            curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, "DELETE");
            curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, discard);
            curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, 2000L);
            curl_easy_perform(e);
            curl_easy_cleanup(e);
        }
        curl_slist_free_all(hdrs);
        atomic_store(&h->closing, true);
    }
    if (h->has_get) pthread_join(h->get_th, NULL);
    http_free(h);
}

static http_link *http_new(const pmcp_server_config *cfg, const pmcp__link_cb *cb, pmcp__auth *auth,
                           char *err, size_t errlen) {
    if (!cfg->url || (strncmp(cfg->url, "http://", 7) && strncmp(cfg->url, "https://", 8))) {
        snprintf(err, errlen, "url must be http:// or https://");
        return NULL;
    }
    http_link *h = calloc(1, sizeof *h);
    if (!h || !(h->url = strdup(cfg->url))) {
        free(h);
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    h->base.send = http_send;
    h->base.close = http_close;
    h->base.set_protocol = http_set_protocol;
    h->cb = *cb;
    h->auth = auth;
    pthread_mutex_init(&h->mu, NULL);
    pthread_mutex_init(&h->cbmu, NULL);
    pthread_cond_init(&h->cv, NULL);
    for (size_t i = 0; i < cfg->nheaders; i++) {
        char line[2048];
        if (strpbrk(cfg->headers[i].name, "\r\n:") || strpbrk(cfg->headers[i].value, "\r\n")) {
            snprintf(err, errlen, "bad header %.100s", cfg->headers[i].name);
            http_free(h);
            return NULL;
        }
        snprintf(line, sizeof line, "%s: %s", cfg->headers[i].name, cfg->headers[i].value);
        struct curl_slist *t = curl_slist_append(h->headers, line);
        if (!t) {
            snprintf(err, errlen, "out of memory");
            http_free(h);
            return NULL;
        }
        h->headers = t;
    }
    return h;
}

pmcp__link *pmcp__link_http(const pmcp_server_config *cfg, const pmcp__link_cb *cb,
                            pmcp__auth *auth, char *err, size_t errlen) {
    http_link *h = http_new(cfg, cb, auth, err, errlen);
    return h ? &h->base : NULL;
}

/* ---------------------------------------------------------------- legacy SSE */

/* The origin (scheme://host:port, default port filled in) of a URL, malloc'd or NULL. */
static char *origin_of(CURLU *u) {
    char *sch = NULL, *host = NULL, *port = NULL, *o = NULL;
    if (curl_url_get(u, CURLUPART_SCHEME, &sch, 0) == CURLUE_OK &&
        curl_url_get(u, CURLUPART_HOST, &host, 0) == CURLUE_OK &&
        curl_url_get(u, CURLUPART_PORT, &port, CURLU_DEFAULT_PORT) == CURLUE_OK) {
        size_t n = strlen(sch) + strlen(host) + strlen(port) + 8;
        if ((o = malloc(n))) snprintf(o, n, "%s://%s:%s", sch, host, port);
        for (char *p = o; p && *p; p++)
            if (*p >= 'A' && *p <= 'Z') *p = (char)(*p - 'A' + 'a');
    }
    curl_free(sch);
    curl_free(host);
    curl_free(port);
    return o;
}

static void on_legacy_event(void *ctx, const char *event, const char *data, size_t len) {
    http_link *h = ctx;
    if (!strcmp(event, "endpoint")) {
        /* The endpoint must be same-origin with the configured URL: every POST carries the
         * configured headers (Authorization), which must never reach another origin. */
        char *abs = NULL, *want = NULL, *got = NULL;
        CURLU *u = curl_url();
        if (u && curl_url_set(u, CURLUPART_URL, h->url, 0) == CURLUE_OK && (want = origin_of(u)) &&
            curl_url_set(u, CURLUPART_URL, data, 0) == CURLUE_OK && (got = origin_of(u)) &&
            curl_url_get(u, CURLUPART_URL, &abs, 0) == CURLUE_OK && strcmp(want, got) != 0) {
            pthread_mutex_lock(&h->mu);
            if (!h->post_url && !h->stream_ended) {
                h->stream_ended = true;
                snprintf(h->stream_err, sizeof h->stream_err,
                         "the endpoint event names another origin (%.200s); refused", got);
            }
            pthread_cond_broadcast(&h->cv);
            pthread_mutex_unlock(&h->mu);
            curl_free(abs);
            abs = NULL;
        }
        free(want);
        free(got);
        curl_url_cleanup(u);
        pthread_mutex_lock(&h->mu);
        if (abs && !h->post_url && !h->stream_ended) h->post_url = strdup(abs);
        pthread_cond_broadcast(&h->cv);
        pthread_mutex_unlock(&h->mu);
        curl_free(abs);
    } else if (!strcmp(event, "message") && len > 0) {
        deliver(h, data, len);
    }
}

typedef struct get_ctx {
    http_link *h;
    pmcp__sse parser;
} get_ctx;

static size_t on_stream(char *b, size_t sz, size_t n, void *ud) {
    get_ctx *g = ud;
    if (pmcp__sse_feed(&g->parser, b, sz * n, on_legacy_event, g->h)) return 0;
    return sz * n;
}

static void *get_main(void *arg) {
    http_link *h = arg;
    get_ctx g = {.h = h};
    struct curl_slist *hdrs = base_headers(h, false, NULL, 0);
    struct curl_slist *t = curl_slist_append(hdrs, "Accept: text/event-stream");
    if (t) hdrs = t;
    CURL *e = easy(h, h->url, hdrs);
    CURLcode rc = CURLE_OUT_OF_MEMORY;
    long status = 0;
    if (e) {
        curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_stream);
        curl_easy_setopt(e, CURLOPT_WRITEDATA, &g);
        rc = curl_easy_perform(e);
        curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &status);
        curl_easy_cleanup(e);
    }
    curl_slist_free_all(hdrs);
    pmcp__sse_free(&g.parser);
    pthread_mutex_lock(&h->mu);
    h->stream_ended = true;
    if (rc != CURLE_OK)
        snprintf(h->stream_err, sizeof h->stream_err, "event stream: %s", curl_easy_strerror(rc));
    else
        snprintf(h->stream_err, sizeof h->stream_err, "event stream ended (HTTP %ld)", status);
    pthread_cond_broadcast(&h->cv);
    pthread_mutex_unlock(&h->mu);
    pthread_mutex_lock(&h->cbmu);
    if (!atomic_load(&h->closing) && h->cb.on_closed) h->cb.on_closed(h->cb.ctx, h->stream_err);
    pthread_mutex_unlock(&h->cbmu);
    return NULL;
}

static int sse_send(pmcp__link *l, const char *text, size_t len) {
    http_link *h = (http_link *)l;
    if (atomic_load(&h->closing)) return -1;
    pthread_mutex_lock(&h->mu);
    char *url = h->post_url ? strdup(h->post_url) : NULL;
    pthread_mutex_unlock(&h->mu);
    if (!url) return -1;
    post_frame(h, url, text, len);
    free(url);
    return 0;
}

pmcp__link *pmcp__link_sse(const pmcp_server_config *cfg, const pmcp__link_cb *cb, long timeout_ms,
                           char *err, size_t errlen) {
    http_link *h = http_new(cfg, cb, NULL, err, errlen);
    if (!h) return NULL;
    h->legacy = true;
    h->base.send = sse_send;
    h->base.set_protocol = NULL;
    if (pthread_create(&h->get_th, NULL, get_main, h) != 0) {
        snprintf(err, errlen, "cannot start the event stream thread");
        http_free(h);
        return NULL;
    }
    h->has_get = true;
    struct timespec dl = pb_deadline(CLOCK_REALTIME, timeout_ms);
    pthread_mutex_lock(&h->mu);
    int w = 0;
    while (!h->post_url && !h->stream_ended && w == 0)
        w = pthread_cond_timedwait(&h->cv, &h->mu, &dl);
    bool ok = h->post_url != NULL;
    if (!ok)
        snprintf(err, errlen, "no endpoint event from %s: %s", h->url,
                 h->stream_ended ? h->stream_err : "timed out");
    pthread_mutex_unlock(&h->mu);
    if (!ok) {
        http_close(&h->base);
        return NULL;
    }
    return &h->base;
}
