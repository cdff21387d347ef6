/*
 * fetch_cap.c — ptl_fetch_cap_handle: the session's capability handler for room guests
 * (pl_policy.capability, docs/python.md "Capabilities"). The room has no HTTP client
 * and no authority; this layer knows the session's network policy and does
 * `http.fetch` for a guest with libcurl, under that policy. File operations go to the
 * workspace lease (pr_cap_lease_handle) when the session granted one, else they are
 * refused.
 *
 * A fetch is refused (nothing sent) unless the policy allows network, the URL is
 * http:// or https://, and its host is on the allow-list when there is one. Then one
 * GET: no redirect is followed (a 3xx is a failure naming the target), no proxy from
 * the environment, a time bound and a body bound; the connection is refused at connect
 * time when the resolved address is loopback, link-local (cloud metadata), unspecified
 * or multicast, unless the policy shares the host's network (`local`) — so a name
 * that resolves to 127.0.0.1 cannot reach the host's own services.
 *
 * Invariants: a call counts as committed from the moment a request may have been sent
 * (curl_easy_perform was entered), whatever its end; the reply never exceeds
 * max_bytes; nothing here reads the environment.
 */
#include "peri/tools.h"

#include <arpa/inet.h>
#include <curl/curl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>

#define FETCH_MAX_DEFAULT     (8u << 20)
#define FETCH_TIMEOUT_DEFAULT 10000L

static pr_cap_status say(pb_buf *reply, pr_cap_status st, const char *msg) {
    reply->len = 0;
    pb_buf_puts(reply, msg);
    return st;
}

typedef struct fetch_io {
    pb_buf *body;
    size_t max;
    bool over;
    bool local;
    bool blocked; /* the connection was refused by the address check */
} fetch_io;

static size_t on_body(char *p, size_t size, size_t n, void *ud) {
    fetch_io *io = ud;
    size_t len = size * n;
    if (io->body->len + len > io->max) {
        io->over = true;
        return 0; /* curl stops with CURLE_WRITE_ERROR */
    }
    return pb_buf_put(io->body, p, len) ? len : 0;
}

/* Whether an address is the host's own or link-local (never reachable without
 * `local`): 127/8, 0/8, 169.254/16, 224/4 and up; ::, ::1, fe80::/10, ff00::/8,
 * and IPv4-mapped forms of the IPv4 ones. */
static bool host_only(const struct sockaddr *sa) {
    if (sa->sa_family == AF_INET) {
        uint32_t a = ntohl(((const struct sockaddr_in *)sa)->sin_addr.s_addr);
        uint8_t b0 = (uint8_t)(a >> 24), b1 = (uint8_t)(a >> 16);
        return b0 == 127 || b0 == 0 || (b0 == 169 && b1 == 254) || b0 >= 224;
    }
    if (sa->sa_family == AF_INET6) {
        const uint8_t *b = ((const struct sockaddr_in6 *)sa)->sin6_addr.s6_addr;
        static const uint8_t mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
        if (memcmp(b, mapped, 12) == 0) {
            struct sockaddr_in v4 = {.sin_family = AF_INET};
            memcpy(&v4.sin_addr.s_addr, b + 12, 4);
            return host_only((const struct sockaddr *)&v4);
        }
        bool zero = true;
        for (int i = 0; i < 15; i++)
            zero &= b[i] == 0;
        return (zero && (b[15] == 0 || b[15] == 1)) || (b[0] == 0xfe && (b[1] & 0xc0) == 0x80) ||
               b[0] == 0xff;
    }
    return true; /* AF_UNIX and the rest: never */
}

static curl_socket_t open_socket(void *ud, curlsocktype purpose, struct curl_sockaddr *a) {
    fetch_io *io = ud;
    if (purpose != CURLSOCKTYPE_IPCXN || (!io->local && host_only(&a->addr))) {
        io->blocked = true;
        return CURL_SOCKET_BAD;
    }
    return socket(a->family, a->socktype | SOCK_CLOEXEC, a->protocol);
}

/* The URL's scheme and host (lower-cased by curl; *host stays NULL for a URL without
 * one, e.g. file:); false when it does not parse. */
static bool url_parts(const char *url, char **scheme, char **host) {
    CURLU *u = curl_url();
    bool ok = u && curl_url_set(u, CURLUPART_URL, url, CURLU_NON_SUPPORT_SCHEME) == CURLUE_OK &&
              curl_url_get(u, CURLUPART_SCHEME, scheme, 0) == CURLUE_OK;
    if (ok) curl_url_get(u, CURLUPART_HOST, host, 0);
    curl_url_cleanup(u);
    return ok;
}

static bool host_allowed(const ptl_fetch_cap *fc, const char *host) {
    if (!fc->nhosts) return true;
    for (size_t i = 0; i < fc->nhosts; i++)
        if (fc->hosts[i] && strcasecmp(fc->hosts[i], host) == 0) return true;
    return false;
}

static pr_cap_status fetch(const ptl_fetch_cap *fc, const pr_cap_call *call, pb_buf *reply,
                           bool *committed) {
    char url[4096], msg[600];
    if (!fc || !fc->network)
        return say(reply, PR_CAP_REFUSED,
                   "refused: the session's network policy does not allow HTTP");
    if (call->arg.len == 0 || call->arg.len >= sizeof url ||
        memchr(call->arg.ptr, 0, call->arg.len))
        return say(reply, PR_CAP_INVALID, "invalid: a URL is required");
    memcpy(url, call->arg.ptr, call->arg.len);
    url[call->arg.len] = 0;
    char *scheme = NULL, *host = NULL;
    if (!url_parts(url, &scheme, &host)) {
        curl_free(scheme);
        curl_free(host);
        return say(reply, PR_CAP_INVALID, "invalid: the URL does not parse");
    }
    pr_cap_status st = PR_CAP_OK;
    if (strcmp(scheme, "http") != 0 && strcmp(scheme, "https") != 0) {
        snprintf(msg, sizeof msg,
                 "refused: only http and https URLs are fetched, not %.40s:", scheme);
        st = say(reply, PR_CAP_REFUSED, msg);
    } else if (!host) {
        st = say(reply, PR_CAP_INVALID, "invalid: the URL has no host");
    } else if (!host_allowed(fc, host)) {
        snprintf(msg, sizeof msg, "refused: %.200s is not on the session's list of allowed hosts",
                 host);
        st = say(reply, PR_CAP_REFUSED, msg);
    }
    curl_free(scheme);
    curl_free(host);
    if (st != PR_CAP_OK) return st;

    CURL *c = curl_easy_init();
    if (!c) return say(reply, PR_CAP_FAILED, "failed: out of memory");
    reply->len = 0;
    fetch_io io = {.body = reply,
                   .max = fc->max_bytes ? fc->max_bytes : FETCH_MAX_DEFAULT,
                   .local = fc->local};
    long ms = fc->timeout_ms > 0 ? fc->timeout_ms : FETCH_TIMEOUT_DEFAULT;
    char errbuf[CURL_ERROR_SIZE] = "";
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(c, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 0L);
    curl_easy_setopt(c, CURLOPT_PROXY, ""); /* never a proxy from the environment */
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, ms);
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, ms);
    curl_easy_setopt(c, CURLOPT_MAXFILESIZE_LARGE, (curl_off_t)io.max);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &io);
    curl_easy_setopt(c, CURLOPT_OPENSOCKETFUNCTION, open_socket);
    curl_easy_setopt(c, CURLOPT_OPENSOCKETDATA, &io);
    curl_easy_setopt(c, CURLOPT_ERRORBUFFER, errbuf);
    curl_easy_setopt(c, CURLOPT_USERAGENT, "peri-room-fetch");
    *committed = true; /* from here a request may be on the wire */
    CURLcode rc = curl_easy_perform(c);
    long code = 0;
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
    if (io.blocked) {
        *committed = false; /* refused before any connection was made */
        st = say(reply, PR_CAP_REFUSED,
                 "refused: the URL resolves to this machine or a link-local address, which "
                 "guests may not reach");
    } else if (io.over || rc == CURLE_FILESIZE_EXCEEDED) {
        snprintf(msg, sizeof msg, "failed: the response is over the %zu-byte limit", io.max);
        st = say(reply, PR_CAP_FAILED, msg);
    } else if (rc == CURLE_OPERATION_TIMEDOUT) {
        snprintf(msg, sizeof msg, "failed: no complete response within %ld ms", ms);
        st = say(reply, PR_CAP_FAILED, msg);
    } else if (rc != CURLE_OK) {
        snprintf(msg, sizeof msg, "failed: %.400s", errbuf[0] ? errbuf : curl_easy_strerror(rc));
        st = say(reply, PR_CAP_FAILED, msg);
    } else if (code >= 300 && code < 400) {
        char *to = NULL;
        curl_easy_getinfo(c, CURLINFO_REDIRECT_URL, &to);
        snprintf(msg, sizeof msg,
                 "failed: HTTP %ld redirect to %.300s (redirects are not followed)", code,
                 to ? to : "(no location)");
        st = say(reply, PR_CAP_FAILED, msg);
    } else if (code >= 400 || code < 200) {
        snprintf(msg, sizeof msg, "failed: HTTP status %ld", code);
        st = say(reply, PR_CAP_FAILED, msg);
    }
    curl_easy_cleanup(c);
    return st;
}

pr_cap_status ptl_fetch_cap_handle(void *ud, const pr_cap_call *call, pb_buf *reply,
                                   bool *committed) {
    const ptl_fetch_cap *fc = ud;
    *committed = false;
    if (call->op.len == 10 && memcmp(call->op.ptr, "http.fetch", 10) == 0)
        return fetch(fc, call, reply, committed);
    /* Everything else is the workspace lease's (which refuses without one). */
    pr_cap_lease none = {.dir_fd = -1};
    return pr_cap_lease_handle(fc && fc->lease ? fc->lease : &none, call, reply, committed);
}
