/*
 * oauth_net.c — the network side of MCP OAuth: URL rules, bounded JSON requests and the
 * loopback listener that receives the authorization code.
 *
 * Invariants: no request here follows a redirect (a 3xx is an answer like any other, so
 * nothing sent to one origin is replayed to another); only http and https are spoken;
 * answers are bounded (1 MiB) and time-bounded (15 s). The listener binds 127.0.0.1
 * only, answers one request per connection, and accepts a code only together with the
 * state this login created.
 */
#include "mcp/oauth_int.h"

#include <arpa/inet.h>
#include <curl/curl.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define OA_MAX_BODY (1u << 20)

/* ---------------------------------------------------------------- URLs */

static void lower(char *s) {
    for (; s && *s; s++)
        if (*s >= 'A' && *s <= 'Z') *s = (char)(*s - 'A' + 'a');
}

/* Parses url into scheme, host, port (default filled) and path; every out is curl_free'd
 * by the caller. 0 or -1. */
static int parts(const char *url, char **sch, char **host, char **port, char **path) {
    *sch = *host = *port = *path = NULL;
    CURLU *u = curl_url();
    int rc = -1;
    if (u && url && curl_url_set(u, CURLUPART_URL, url, CURLU_NON_SUPPORT_SCHEME) == CURLUE_OK &&
        curl_url_get(u, CURLUPART_SCHEME, sch, 0) == CURLUE_OK &&
        curl_url_get(u, CURLUPART_HOST, host, 0) == CURLUE_OK &&
        curl_url_get(u, CURLUPART_PORT, port, CURLU_DEFAULT_PORT) == CURLUE_OK &&
        curl_url_get(u, CURLUPART_PATH, path, 0) == CURLUE_OK) {
        lower(*sch);
        lower(*host);
        rc = strcmp(*sch, "http") && strcmp(*sch, "https") ? -1 : 0;
    }
    curl_url_cleanup(u);
    return rc;
}

static void free_parts(char *a, char *b, char *c, char *d) {
    curl_free(a);
    curl_free(b);
    curl_free(c);
    curl_free(d);
}

char *pmcp__oa_canonical(const char *url) {
    char *sch, *host, *port, *path, *out = NULL;
    if (parts(url, &sch, &host, &port, &path) == 0) {
        bool dflt = (!strcmp(sch, "https") && !strcmp(port, "443")) ||
                    (!strcmp(sch, "http") && !strcmp(port, "80"));
        size_t pl = strlen(path);
        while (pl > 0 && path[pl - 1] == '/')
            pl--;
        size_t n = strlen(sch) + strlen(host) + strlen(port) + pl + 8;
        if ((out = malloc(n)))
            snprintf(out, n, "%s://%s%s%s%.*s", sch, host, dflt ? "" : ":", dflt ? "" : port,
                     (int)pl, path);
    }
    free_parts(sch, host, port, path);
    return out;
}

char *pmcp__oa_origin(const char *url) {
    char *sch, *host, *port, *path, *out = NULL;
    if (parts(url, &sch, &host, &port, &path) == 0) {
        size_t n = strlen(sch) + strlen(host) + strlen(port) + 8;
        if ((out = malloc(n))) snprintf(out, n, "%s://%s:%s", sch, host, port);
    }
    free_parts(sch, host, port, path);
    return out;
}

char *pmcp__oa_path(const char *url) {
    char *sch, *host, *port, *path, *out = NULL;
    if (parts(url, &sch, &host, &port, &path) == 0) out = strdup(strcmp(path, "/") ? path : "");
    free_parts(sch, host, port, path);
    return out;
}

bool pmcp__oa_secure(const char *url) {
    char *sch, *host, *port, *path;
    bool ok = false;
    if (parts(url, &sch, &host, &port, &path) == 0)
        ok = !strcmp(sch, "https") || !strcmp(host, "127.0.0.1") || !strcmp(host, "[::1]") ||
             !strcmp(host, "localhost");
    free_parts(sch, host, port, path);
    return ok;
}

bool pmcp__oa_secure_for(const char *url, const char *server) {
    if (!pmcp__oa_secure(url)) return false;
    if (!strncasecmp(url, "https://", 8)) return true;
    return pmcp__oa_secure(server) && strncasecmp(server, "https://", 8) != 0;
}

/* ---------------------------------------------------------------- HTTP */

CURL *pmcp__easy(const char *url, struct curl_slist *h) {
    CURL *e = curl_easy_init();
    if (!e) return NULL;
    curl_easy_setopt(e, CURLOPT_URL, url);
    curl_easy_setopt(e, CURLOPT_HTTPHEADER, h);
    curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(e, CURLOPT_FOLLOWLOCATION, 0L);
    curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
    return e;
}

/* One OAuth request: pmcp__easy and 15 s at most. */
static CURL *oa_easy(const char *url, struct curl_slist *h) {
    CURL *e = pmcp__easy(url, h);
    if (e) curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, 15000L);
    return e;
}

long pmcp__oa_http(const char *url, const char *form, bool json, pj_t **out, char *err,
                   size_t errlen) {
    *out = NULL;
    struct curl_slist *h = NULL, *t;
    if ((t = curl_slist_append(h, "Accept: application/json"))) h = t;
    if (form &&
        (t = curl_slist_append(h, json ? "Content-Type: application/json"
                                       : "Content-Type: application/x-www-form-urlencoded")))
        h = t;
    CURL *e = oa_easy(url, h);
    if (!e) {
        curl_slist_free_all(h);
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    pb_capped b = {.max = OA_MAX_BODY};
    curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, 10000L);
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, pb_capped_write);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, &b);
    if (form) {
        curl_easy_setopt(e, CURLOPT_POSTFIELDS, form);
        curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE, (long)strlen(form));
    }
    CURLcode rc = curl_easy_perform(e);
    long status = -1;
    if (rc != CURLE_OK) {
        snprintf(err, errlen, "%s: %s", url, b.over ? "answer too large" : curl_easy_strerror(rc));
    } else {
        curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &status);
        pj_t *j = b.b.p ? pj_loadb(b.b.p, b.b.len, 0, NULL) : NULL;
        if (pj_is_object(j))
            *out = j;
        else
            pj_decref(j);
    }
    curl_easy_cleanup(e);
    curl_slist_free_all(h);
    pb_buf_free(&b.b);
    return status;
}

int pmcp__oa_param(char **buf, const char *k, const char *v) {
    static const char hex[] = "0123456789ABCDEF";
    size_t ol = *buf ? strlen(*buf) : 0, need = ol + 2 + strlen(k) + 3 * strlen(v) + 1;
    char *n = realloc(*buf, need);
    if (!n) return -1;
    *buf = n;
    char *p = n + ol;
    if (ol) *p++ = '&';
    const char *src[2] = {k, v};
    for (int i = 0; i < 2; i++) {
        for (const unsigned char *s = (const unsigned char *)src[i]; *s; s++) {
            if ((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') ||
                *s == '-' || *s == '.' || *s == '_' || *s == '~') {
                *p++ = (char)*s;
            } else {
                *p++ = '%';
                *p++ = hex[*s >> 4];
                *p++ = hex[*s & 15];
            }
        }
        if (i == 0) *p++ = '=';
    }
    *p = '\0';
    return 0;
}

/* ---------------------------------------------------------------- loopback */

int pmcp__oa_listen(pmcp__oa_listener *l) {
    l->fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    l->port = 0;
    if (l->fd < 0) return -1;
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = 0};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t al = sizeof a;
    if (bind(l->fd, (struct sockaddr *)&a, sizeof a) || listen(l->fd, 8) ||
        getsockname(l->fd, (struct sockaddr *)&a, &al)) {
        close(l->fd);
        l->fd = -1;
        return -1;
    }
    l->port = ntohs(a.sin_port);
    return 0;
}

void pmcp__oa_close(pmcp__oa_listener *l) {
    if (l->fd >= 0) close(l->fd);
    l->fd = -1;
}

static int hexval(int c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* The decoded value of key in a query text (malloc'd) or NULL. */
static char *query_get(const char *q, const char *key) {
    size_t kl = strlen(key);
    while (q && *q) {
        const char *end = strchr(q, '&');
        size_t len = end ? (size_t)(end - q) : strlen(q);
        if (len > kl && !strncmp(q, key, kl) && q[kl] == '=') {
            const char *v = q + kl + 1;
            size_t vl = len - kl - 1;
            char *o = malloc(vl + 1), *w = o;
            for (size_t i = 0; o && i < vl; i++) {
                int h1, h2;
                if (v[i] == '%' && i + 2 < vl && (h1 = hexval(v[i + 1])) >= 0 &&
                    (h2 = hexval(v[i + 2])) >= 0) {
                    *w++ = (char)(h1 * 16 + h2);
                    i += 2;
                } else {
                    *w++ = v[i] == '+' ? ' ' : v[i];
                }
            }
            if (o) *w = '\0';
            if (o && strlen(o) != (size_t)(w - o)) { /* an embedded NUL: refused */
                free(o);
                return NULL;
            }
            return o;
        }
        q = end ? end + 1 : NULL;
    }
    return NULL;
}

static void answer(int fd, int status, const char *text) {
    char buf[512];
    int n = snprintf(buf, sizeof buf,
                     "HTTP/1.1 %d %s\r\nContent-Type: text/plain; charset=utf-8\r\n"
                     "Content-Length: %zu\r\nConnection: close\r\n\r\n%s",
                     status, status == 200 ? "OK" : "Bad Request", strlen(text), text);
    if (n > 0) {
        ssize_t w = write(fd, buf, (size_t)n < sizeof buf ? (size_t)n : sizeof buf - 1);
        (void)w;
    }
}

/* Reads the request head (bounded; 2 s) of one connection into buf. */
static int read_head(int fd, char *buf, size_t cap) {
    size_t n = 0;
    struct timespec dl = pb_deadline(CLOCK_MONOTONIC, 2000);
    while (n + 1 < cap) {
        struct timespec now;
        clock_gettime(CLOCK_MONOTONIC, &now);
        long ms = (long)(dl.tv_sec - now.tv_sec) * 1000 + (dl.tv_nsec - now.tv_nsec) / 1000000;
        if (ms <= 0) return -1;
        struct pollfd p = {.fd = fd, .events = POLLIN};
        int r = poll(&p, 1, (int)ms);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) return -1;
        ssize_t k = read(fd, buf + n, cap - 1 - n);
        if (k <= 0) return -1;
        n += (size_t)k;
        buf[n] = '\0';
        if (strstr(buf, "\r\n\r\n") || strstr(buf, "\n\n")) return 0;
    }
    return -1;
}

int pmcp__oa_wait_code(pmcp__oa_listener *l, const char *state, const char *issuer, long timeout_ms,
                       const atomic_int *stop, char **code, char *err, size_t errlen) {
    *code = NULL;
    struct timespec dl = pb_deadline(CLOCK_MONOTONIC, timeout_ms);
    for (;;) {
        if (stop && atomic_load(stop)) {
            snprintf(err, errlen, "login cancelled");
            return -1;
        }
        struct timespec now;
        clock_gettime(CLOCK_MONOTONIC, &now);
        long ms = (long)(dl.tv_sec - now.tv_sec) * 1000 + (dl.tv_nsec - now.tv_nsec) / 1000000;
        if (ms <= 0) {
            snprintf(err, errlen, "no answer from the browser in %ld s", timeout_ms / 1000);
            return -1;
        }
        struct pollfd p = {.fd = l->fd, .events = POLLIN};
        int r = poll(&p, 1, ms < 100 ? (int)ms : 100);
        if (r <= 0) continue;
        int fd = accept4(l->fd, NULL, NULL, SOCK_CLOEXEC);
        if (fd < 0) continue;
        char head[8192];
        if (read_head(fd, head, sizeof head) != 0 || strncmp(head, "GET /callback?", 14)) {
            answer(fd, 400, "Not a login callback.\n");
            close(fd);
            continue;
        }
        char *sp = strchr(head + 14, ' ');
        if (sp) *sp = '\0';
        const char *q = head + 14;
        char *st = query_get(q, "state"), *c = query_get(q, "code"), *e = query_get(q, "error"),
             *iss = query_get(q, "iss");
        int rc = 1; /* 1: keep waiting */
        if (!st || strcmp(st, state)) {
            answer(fd, 400, "This login request is not the one Peri is waiting for.\n");
        } else if (iss && issuer && strcmp(iss, issuer)) {
            answer(fd, 400, "Login failed: the answer came from another authorization server.\n");
            snprintf(err, errlen, "the callback names issuer %.200s, not %.200s", iss, issuer);
            rc = -1;
        } else if (e || !c) {
            answer(fd, 400, "Login failed; see Peri for details.\n");
            snprintf(err, errlen, "the authorization server answered %.200s",
                     e ? e : "without a code");
            rc = -1;
        } else {
            answer(fd, 200, "Peri is logged in. You can close this window.\n");
            *code = c;
            c = NULL;
            rc = 0;
        }
        close(fd);
        free(st);
        free(c);
        free(e);
        free(iss);
        if (rc <= 0) return rc;
    }
}

/* ---------------------------------------------------------------- probe */

static size_t on_www(char *b, size_t sz, size_t n, void *ud) {
    char **www = ud;
    size_t len = sz * n;
    if (len > 17 && !strncasecmp(b, "www-authenticate:", 17) && !*www) {
        const char *v = b + 17;
        size_t vl = len - 17;
        while (vl && (*v == ' ' || *v == '\t'))
            v++, vl--;
        while (vl && (v[vl - 1] == '\r' || v[vl - 1] == '\n'))
            vl--;
        if ((*www = malloc(vl + 1))) {
            memcpy(*www, v, vl);
            (*www)[vl] = '\0';
        }
    }
    return len;
}

static size_t sink(char *b, size_t sz, size_t n, void *ud) {
    (void)b, (void)ud;
    return sz * n;
}

long pmcp__oa_probe(const char *url, char **www, char *err, size_t errlen) {
    *www = NULL;
    static const char init[] =
        "{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"initialize\",\"params\":{\"protocolVersion\":"
        "\"2025-06-18\",\"capabilities\":{},\"clientInfo\":{\"name\":\"peri-c\",\"version\":"
        "\"0.1.0\"}}}";
    struct curl_slist *h = NULL, *t;
    if ((t = curl_slist_append(h, "Content-Type: application/json"))) h = t;
    if ((t = curl_slist_append(h, "Accept: application/json, text/event-stream"))) h = t;
    CURL *e = oa_easy(url, h);
    if (!e) {
        curl_slist_free_all(h);
        return -1;
    }
    curl_easy_setopt(e, CURLOPT_POSTFIELDS, init);
    curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, on_www);
    curl_easy_setopt(e, CURLOPT_HEADERDATA, www);
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, sink);
    CURLcode rc = curl_easy_perform(e);
    long status = -1;
    if (rc == CURLE_OK)
        curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &status);
    else
        snprintf(err, errlen, "%s: %s", url, curl_easy_strerror(rc));
    curl_easy_cleanup(e);
    curl_slist_free_all(h);
    return status;
}
