/*
 * tls.c — TLS of the native streams with OpenSSL: one client SSL_CTX per loop (made at
 * the first TLS stream, trusting the loop's CA file or the system's default store),
 * SNI, verification of the peer's chain and of its name (a DNS name, or an IP address
 * when the server name is numeric), TLS 1.2 at least, and non-blocking I/O wrappers.
 *
 * Owns: l->ssl_ctx and each stream's SSL (freed by pn__tls_drop). A failed check of
 * the certificate is reported as PN_E_TLS with OpenSSL's reason in the detail.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <limits.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>

#include "net/net_int.h"

static void ssl_detail(pn__h *h, const char *what) {
    unsigned long e = ERR_get_error();
    char buf[160] = "unknown error";
    if (e) ERR_error_string_n(e, buf, sizeof buf);
    snprintf(h->last_detail, sizeof h->last_detail, "%.40s: %.110s", what, buf);
    ERR_clear_error();
}

static SSL_CTX *ctx_get(pn_loop *l, pn__h *h) {
    if (l->ssl_ctx) return l->ssl_ctx;
    SSL_CTX *c = SSL_CTX_new(TLS_client_method());
    if (!c) {
        ssl_detail(h, "TLS context");
        return NULL;
    }
    SSL_CTX_set_min_proto_version(c, TLS1_2_VERSION);
    SSL_CTX_set_verify(c, SSL_VERIFY_PEER, NULL);
    SSL_CTX_set_mode(c, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
    int ok = l->ca_file ? SSL_CTX_load_verify_locations(c, l->ca_file, NULL)
                        : SSL_CTX_set_default_verify_paths(c);
    if (ok != 1) {
        ssl_detail(h,
                   l->ca_file ? "cannot load the CA file" : "cannot load the system trust store");
        SSL_CTX_free(c);
        return NULL;
    }
    l->ssl_ctx = c;
    return c;
}

pn_err pn__tls_begin(pn_loop *l, pn__h *h) {
    ERR_clear_error();
    SSL_CTX *c = ctx_get(l, h);
    if (!c) return PN_E_TLS;
    if (!(h->ssl = SSL_new(c))) {
        ssl_detail(h, "TLS session");
        return PN_E_LIMIT;
    }
    unsigned char ip[16];
    bool numeric =
        inet_pton(AF_INET, h->server_name, ip) == 1 || inet_pton(AF_INET6, h->server_name, ip) == 1;
    int ok = SSL_set_fd(h->ssl, h->fd);
    if (ok == 1 && numeric) {
        ok = X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(h->ssl), h->server_name);
    } else if (ok == 1) {
        ok = SSL_set_tlsext_host_name(h->ssl, h->server_name) == 1 &&
             SSL_set1_host(h->ssl, h->server_name) == 1;
    }
    if (ok != 1) {
        ssl_detail(h, "TLS set-up");
        return PN_E_TLS;
    }
    SSL_set_connect_state(h->ssl);
    return PN_OK;
}

/* Maps a failed SSL call to -1 (would block: the wanted direction is polled), 0 (the
 * peer's close_notify) or -2 with last_err/last_detail. */
static long ssl_fail(pn__h *h, int r, const char *what, uint32_t *want) {
    int e = SSL_get_error(h->ssl, r);
    if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) {
        if (want) *want = e == SSL_ERROR_WANT_READ ? EPOLLIN : EPOLLOUT;
        return -1;
    }
    if (e == SSL_ERROR_ZERO_RETURN) return 0;
    long vr = SSL_get_verify_result(h->ssl);
    if (vr != X509_V_OK) {
        h->last_err = PN_E_TLS;
        snprintf(h->last_detail, sizeof h->last_detail, "the certificate of %s is not trusted: %s",
                 h->server_name, X509_verify_cert_error_string(vr));
        return -2;
    }
    if (e == SSL_ERROR_SYSCALL && errno) {
        char buf[128];
        h->last_err = pn__err_from_errno(errno);
        snprintf(h->last_detail, sizeof h->last_detail, "%s: %s", what,
                 strerror_r(errno, buf, sizeof buf));
        return -2;
    }
    unsigned long q = ERR_peek_error();
    if (e == SSL_ERROR_SYSCALL || (ERR_GET_LIB(q) == ERR_LIB_SSL &&
                                   ERR_GET_REASON(q) == SSL_R_UNEXPECTED_EOF_WHILE_READING)) {
        h->last_err = PN_E_RESET;
        snprintf(h->last_detail, sizeof h->last_detail,
                 "%s: the peer closed the connection without a TLS close_notify", what);
        ERR_clear_error();
        return -2;
    }
    h->last_err = PN_E_TLS;
    ssl_detail(h, what);
    return -2;
}

int pn__tls_step(pn_loop *l, pn__h *h) {
    ERR_clear_error();
    errno = 0;
    int r = SSL_do_handshake(h->ssl);
    if (r == 1) return 1;
    uint32_t want = 0;
    long f = ssl_fail(h, r, "TLS handshake", &want);
    if (f == -1) {
        pn__stream_set_mask(l, h, want);
        return 0;
    }
    if (f == 0) {
        h->last_err = PN_E_TLS;
        snprintf(h->last_detail, sizeof h->last_detail, "TLS handshake: the peer closed");
    }
    /* a reset during the handshake is still a failed handshake */
    if (h->last_err != PN_E_TLS && h->last_err != PN_E_RESET) h->last_err = PN_E_TLS;
    return (int)h->last_err;
}

long pn__tls_read(pn__h *h, void *buf, size_t n) {
    ERR_clear_error();
    errno = 0;
    int r = SSL_read(h->ssl, buf, n > INT_MAX ? INT_MAX : (int)n);
    return r > 0 ? r : ssl_fail(h, r, "TLS read", NULL);
}

long pn__tls_write(pn__h *h, const void *buf, size_t n) {
    ERR_clear_error();
    errno = 0;
    int r = SSL_write(h->ssl, buf, n > INT_MAX ? INT_MAX : (int)n);
    if (r > 0) return r;
    long f = ssl_fail(h, r, "TLS write", NULL);
    if (f == 0) {
        h->last_err = PN_E_RESET;
        snprintf(h->last_detail, sizeof h->last_detail, "TLS write: the peer closed");
        return -2;
    }
    return f;
}

bool pn__tls_pending(pn__h *h) {
    return h->ssl && SSL_pending(h->ssl) > 0;
}

void pn__tls_close_notify(pn__h *h) {
    ERR_clear_error();
    if (h->ssl) SSL_shutdown(h->ssl);
    ERR_clear_error();
}

void pn__tls_drop(pn__h *h) {
    if (h->ssl) SSL_free(h->ssl);
    h->ssl = NULL;
}

void pn__tls_free(pn_loop *l) {
    if (l->ssl_ctx) SSL_CTX_free(l->ssl_ctx);
    l->ssl_ctx = NULL;
}
