/*
 * stream.c — byte streams of the native loop: resolution of the host, the policy on
 * every address, non-blocking connect to each address in turn, then (tls.c) the TLS
 * handshake, the bounded read buffer and the bounded write queue, and starttls (the
 * upgrade of an open clear stream to TLS in place).
 *
 * Owns, per stream record: the socket, the read buffer (rcap bytes; the descriptor is
 * not polled for input while it is full: back-pressure) and the write queue (at most
 * write_queue bytes waiting, a pb_fifo). Invariants: a stream reaches PN__S_OPEN only after the
 * connect (and handshake) succeeded; before that a failure queues PN_EV_OPENED with the
 * error and then PN_EV_CLOSED; after it, only PN_EV_CLOSED. starttls takes an open
 * stream back to PN__S_HANDSHAKE with `upgrading` set: its outcome is PN_EV_TLS (a
 * failure: PN_EV_TLS with the error, then PN_EV_CLOSED), and it begins only when no
 * clear byte is left in either direction (nothing unread, nothing queued), so no byte
 * the peer sent in the clear is ever read as if it came over TLS. A peer reset drops bytes
 * still buffered. close() drops unsent bytes: a graceful end is shutdown(), then
 * reading to the end of the stream, then close().
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "net/net_int.h"

static void errno_detail(char *out, size_t n, const char *what, int e) {
    char buf[128];
    if (snprintf(out, n, "%s: %s", what, strerror_r(e, buf, sizeof buf)) >= (int)n)
        out[n - 1] = '\0'; /* truncated: still a whole string */
}

void pn__stream_set_mask(pn_loop *l, pn__h *h, uint32_t mask) {
    if (h->fd < 0 || mask == h->epoll_mask) return;
    struct epoll_event ev = {.events = mask, .data.u64 = ((uint64_t)h->seq << 32) | h->id};
    int op = !h->epoll_mask ? EPOLL_CTL_ADD : !mask ? EPOLL_CTL_DEL : EPOLL_CTL_MOD;
    if (epoll_ctl(l->ep, op, h->fd, &ev) == 0) h->epoll_mask = mask;
}

/* A recv/send result as the TLS wrappers give theirs: bytes, -1 would block, -2 error. */
static long sys_io(pn__h *h, ssize_t r, const char *what) {
    if (r >= 0) return r;
    if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) return -1;
    h->last_err = pn__err_from_errno(errno);
    errno_detail(h->last_detail, sizeof h->last_detail, what, errno);
    return -2;
}

static void drop_fd(pn_loop *l, pn__h *h) {
    pn__stream_set_mask(l, h, 0);
    pn__tls_drop(h);
    if (h->fd >= 0) close(h->fd);
    h->fd = -1;
    h->epoll_mask = 0;
}

void pn__stream_teardown(pn_loop *l, pn__h *h) {
    drop_fd(l, h);
    free(h->rbuf);
    h->rbuf = NULL;
    h->rlen = h->roff = 0;
    pb_fifo_free(&h->wq);
}

void pn__stream_fail(pn_loop *l, pn__h *h, pn_err err, const char *detail) {
    if (h->settling) return;
    if (h->state != PN__S_OPEN)
        pn__queue(l, h, h->upgrading ? PN_EV_TLS : PN_EV_OPENED, err, detail);
    pn__stream_teardown(l, h);
    pn__queue(l, h, PN_EV_CLOSED, err, detail);
}

static void update_mask(pn_loop *l, pn__h *h) {
    uint32_t m = 0;
    if (!h->eof && h->rlen < h->rcap) m |= EPOLLIN;
    if (pb_fifo_size(&h->wq) || (h->shut_wanted && !h->shut_done)) m |= EPOLLOUT;
    pn__stream_set_mask(l, h, m);
}

/* Fills the read buffer from the socket (or TLS) until it would block or is full. */
static void do_read(pn_loop *l, pn__h *h) {
    bool got = false;
    while (!h->eof && h->rlen < h->rcap) {
        if (h->roff && h->roff + h->rlen == h->rcap) {
            memmove(h->rbuf, h->rbuf + h->roff, h->rlen);
            h->roff = 0;
        }
        uint8_t *at = h->rbuf + h->roff + h->rlen;
        size_t room = h->rcap - h->roff - h->rlen;
        long n = h->ssl ? pn__tls_read(h, at, room) : sys_io(h, recv(h->fd, at, room, 0), "read");
        if (n == -1) break;
        if (n < -1) {
            pn__stream_fail(l, h, h->last_err, h->last_detail);
            return;
        }
        got = true;
        if (n == 0)
            h->eof = true;
        else
            h->rlen += (size_t)n;
    }
    if (got) pn__queue(l, h, PN_EV_READABLE, PN_OK, NULL);
    update_mask(l, h);
}

static void do_write(pn_loop *l, pn__h *h) {
    while (pb_fifo_size(&h->wq)) {
        const uint8_t *p = pb_fifo_data(&h->wq);
        size_t n = pb_fifo_size(&h->wq);
        long w =
            h->ssl ? pn__tls_write(h, p, n) : sys_io(h, send(h->fd, p, n, MSG_NOSIGNAL), "write");
        if (w == -1) break;
        if (w < -1) {
            pn__stream_fail(l, h, h->last_err, h->last_detail);
            return;
        }
        pb_fifo_consume(&h->wq, (size_t)w);
    }
    if (h->want_writable && pb_fifo_size(&h->wq) <= l->o.write_queue / 2) {
        h->want_writable = false;
        pn__queue(l, h, PN_EV_WRITABLE, PN_OK, NULL);
    }
    if (pb_fifo_size(&h->wq) == 0 && h->shut_wanted && !h->shut_done) {
        if (h->ssl) pn__tls_close_notify(h);
        shutdown(h->fd, SHUT_WR);
        h->shut_done = true;
    }
    update_mask(l, h);
}

static void opened(pn_loop *l, pn__h *h) {
    h->state = PN__S_OPEN;
    pn__queue(l, h, PN_EV_OPENED, PN_OK, NULL);
    if (pb_fifo_size(&h->wq) || h->shut_wanted)
        do_write(l, h);
    else
        update_mask(l, h);
}

/* The handshake of a starttls succeeded: what was queued meanwhile goes out over TLS. */
static void upgraded(pn_loop *l, pn__h *h) {
    h->upgrading = false;
    h->state = PN__S_OPEN;
    pn__queue(l, h, PN_EV_TLS, PN_OK, NULL);
    if (pn__tls_pending(h)) do_read(l, h); /* records that came with the handshake */
    if (!h->settling && (pb_fifo_size(&h->wq) || h->shut_wanted))
        do_write(l, h);
    else if (!h->settling)
        update_mask(l, h);
}

static void handshake(pn_loop *l, pn__h *h) {
    int r = pn__tls_step(l, h);
    if (r == 1 && h->upgrading)
        upgraded(l, h);
    else if (r == 1)
        opened(l, h);
    else if (r < 0)
        pn__stream_fail(l, h, (pn_err)r, h->last_detail);
}

static void connect_next(pn_loop *l, pn__h *h);

static void connected(pn_loop *l, pn__h *h) {
    if (!h->tls) {
        opened(l, h);
        return;
    }
    h->state = PN__S_HANDSHAKE;
    pn_err e = pn__tls_begin(l, h);
    if (e != PN_OK)
        pn__stream_fail(l, h, e, h->last_detail);
    else
        handshake(l, h);
}

static void addr_text(const pn__addr *a, char *out, size_t n) {
    char ip[INET6_ADDRSTRLEN] = "?";
    if (a->sa.ss_family == AF_INET)
        inet_ntop(AF_INET, &((const struct sockaddr_in *)&a->sa)->sin_addr, ip, sizeof ip);
    else
        inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)&a->sa)->sin6_addr, ip, sizeof ip);
    snprintf(out, n, "%s", ip);
}

static void connect_failed(pn__h *h, const pn__addr *a, int e) {
    char ip[INET6_ADDRSTRLEN], what[200];
    addr_text(a, ip, sizeof ip);
    snprintf(what, sizeof what, "connect to %s (%s) port %u", h->host, ip, (unsigned)h->port);
    h->last_err = pn__err_from_errno(e);
    errno_detail(h->last_detail, sizeof h->last_detail, what, e);
}

/* Tries the addresses from next_addr on; the first that connects or is in progress
 * wins. With none left the stream fails with the last address's error. */
static void connect_next(pn_loop *l, pn__h *h) {
    h->state = PN__S_CONNECTING;
    while (h->next_addr < h->naddrs) {
        const pn__addr *a = &h->addrs[h->next_addr++];
        int fd = socket(a->sa.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (fd < 0) {
            connect_failed(h, a, errno);
            continue;
        }
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        h->fd = fd;
        if (connect(fd, (const struct sockaddr *)&a->sa, a->len) == 0) {
            connected(l, h);
            return;
        }
        if (errno == EINPROGRESS) {
            pn__stream_set_mask(l, h, EPOLLOUT);
            if (h->epoll_mask) return;
            connect_failed(h, a, errno);
        } else {
            connect_failed(h, a, errno);
        }
        drop_fd(l, h);
    }
    pn__stream_fail(l, h, h->last_err ? h->last_err : PN_E_NOT_FOUND,
                    h->last_detail[0] ? h->last_detail : "no address to connect to");
}

/* The addresses of the host are known: keep those the policy grants, then connect. */
static void use_addrs(pn_loop *l, pn__h *h, const pn__addr *list, size_t n) {
    size_t denied = 0;
    h->addrs = calloc(n ? n : 1, sizeof *h->addrs);
    if (!h->addrs) {
        pn__stream_fail(l, h, PN_E_LIMIT, "out of memory");
        return;
    }
    for (size_t i = 0; i < n; i++) {
        char ip[INET6_ADDRSTRLEN];
        addr_text(&list[i], ip, sizeof ip);
        if (!l->o.policy || !l->o.policy(l->o.policy_ctx, NULL, ip, h->port)) {
            denied++;
            continue;
        }
        pn__addr *a = &h->addrs[h->naddrs++];
        *a = list[i];
        if (a->sa.ss_family == AF_INET)
            ((struct sockaddr_in *)&a->sa)->sin_port = htons(h->port);
        else
            ((struct sockaddr_in6 *)&a->sa)->sin6_port = htons(h->port);
    }
    if (h->naddrs == 0) {
        char d[200];
        snprintf(d, sizeof d, "%s port %u: %s", h->host, (unsigned)h->port,
                 denied ? "no address of this host is granted by the policy"
                        : "the name has no address");
        pn__stream_fail(l, h, denied ? PN_E_DENIED : PN_E_NOT_FOUND, d);
        return;
    }
    connect_next(l, h);
}

void pn__stream_addrs(pn_loop *l, pn__h *h, int gai_err, const struct addrinfo *res) {
    if (gai_err) {
        char d[200];
        snprintf(d, sizeof d, "cannot resolve %s: %s", h->host, gai_strerror(gai_err));
        pn__stream_fail(l, h, pn__gai_err(gai_err), d);
        return;
    }
    size_t n = 0;
    for (const struct addrinfo *a = res; a; a = a->ai_next)
        n++;
    pn__addr *list = calloc(n ? n : 1, sizeof *list);
    if (!list) {
        pn__stream_fail(l, h, PN_E_LIMIT, "out of memory");
        return;
    }
    size_t k = 0;
    for (const struct addrinfo *a = res; a; a = a->ai_next) {
        if ((a->ai_family != AF_INET && a->ai_family != AF_INET6) ||
            a->ai_addrlen > sizeof list[k].sa)
            continue;
        memcpy(&list[k].sa, a->ai_addr, a->ai_addrlen);
        list[k++].len = a->ai_addrlen;
    }
    use_addrs(l, h, list, k);
    free(list);
}

void pn__stream_deadline(pn_loop *l, pn__h *h) {
    /* an entry of an earlier deadline (the open's, before a starttls) is not this one */
    if (h->settling || h->state == PN__S_OPEN || pn__now_ms(l) < h->deadline) return;
    char d[200];
    snprintf(d, sizeof d, "no %s with %s port %u within %u ms",
             h->upgrading                  ? "TLS handshake after starttls"
             : h->state == PN__S_HANDSHAKE ? "TLS handshake"
                                           : "connection",
             h->host, (unsigned)h->port, (unsigned)l->o.connect_timeout_ms);
    pn__stream_fail(l, h, PN_E_TIMEOUT, d);
}

void pn__stream_io(pn_loop *l, pn__h *h, uint32_t events) {
    if (h->state == PN__S_CONNECTING) {
        int e = 0;
        socklen_t len = sizeof e;
        if (getsockopt(h->fd, SOL_SOCKET, SO_ERROR, &e, &len) != 0) e = errno;
        if (e == 0 && !(events & (EPOLLERR | EPOLLHUP))) {
            connected(l, h);
            return;
        }
        connect_failed(h, &h->addrs[h->next_addr - 1], e ? e : ECONNREFUSED);
        drop_fd(l, h);
        connect_next(l, h);
        return;
    }
    if (h->state == PN__S_HANDSHAKE) {
        handshake(l, h);
        return;
    }
    if (events & (EPOLLIN | EPOLLHUP | EPOLLERR)) do_read(l, h);
    if (!h->settling && (events & EPOLLOUT)) do_write(l, h);
}

pn_err pn__open(void *ctx, const char *host, uint16_t port, const pn_stream_opts *o, void *ud,
                pn_handle *out) {
    pn_loop *l = ctx;
    if (!out || !pn__name_ok(host) || port == 0) return PN_E_INVALID;
    const char *sni = o && o->tls && o->server_name && *o->server_name ? o->server_name : host;
    if (o && o->tls && !pn__name_ok(sni)) return PN_E_INVALID;
    if (!l->o.policy || !l->o.policy(l->o.policy_ctx, host, NULL, port)) return PN_E_DENIED;
    pn__h *h;
    pn_err e = pn__h_new(l, PN__STREAM, ud, &h);
    if (e != PN_OK) return e;
    h->port = port;
    h->tls = o && o->tls;
    h->rcap = l->o.read_buffer;
    h->host = strdup(host);
    h->server_name = h->tls ? strdup(sni) : NULL;
    h->rbuf = malloc(h->rcap);
    if (!h->host || (h->tls && !h->server_name) || !h->rbuf) e = PN_E_LIMIT;
    if (e == PN_OK) {
        h->deadline = pn__now_ms(l) + l->o.connect_timeout_ms;
        e = pn__heap_push(l, h->deadline, h);
    }
    pn__addr num = {0};
    struct sockaddr_in *s4 = (struct sockaddr_in *)&num.sa;
    struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&num.sa;
    bool numeric = false;
    if (e == PN_OK && inet_pton(AF_INET, host, &s4->sin_addr) == 1) {
        s4->sin_family = AF_INET;
        num.len = sizeof *s4;
        numeric = true;
    } else if (e == PN_OK && inet_pton(AF_INET6, host, &s6->sin6_addr) == 1) {
        s6->sin6_family = AF_INET6;
        num.len = sizeof *s6;
        numeric = true;
    }
    if (e == PN_OK && !numeric) {
        h->state = PN__S_RESOLVING;
        e = pn__resolve_start(l, h, host);
    }
    if (e != PN_OK) {
        pn__h_drop(l, h);
        return e;
    }
    *out = h->id;
    if (numeric) use_addrs(l, h, &num, 1); /* outcomes are queued, never delivered here */
    return PN_OK;
}

pn_err pn__read(void *ctx, pn_handle id, void *buf, size_t cap, size_t *got) {
    pn_loop *l = ctx;
    pn__h *h = pn__h_get(l, id, PN__STREAM);
    if (!h || !got || !buf || cap == 0) return PN_E_INVALID;
    *got = 0;
    if (h->settling) return PN_E_CLOSED;
    if (h->state != PN__S_OPEN) return PN_E_AGAIN;
    if (h->rlen == 0) return h->eof ? PN_OK : PN_E_AGAIN;
    bool was_full = h->rlen + h->roff >= h->rcap;
    size_t n = cap < h->rlen ? cap : h->rlen;
    memcpy(buf, h->rbuf + h->roff, n);
    h->roff += n;
    h->rlen -= n;
    if (h->rlen == 0) h->roff = 0;
    *got = n;
    /* TLS may hold decrypted bytes the socket will not signal again: pull them now */
    if (h->ssl && pn__tls_pending(h))
        do_read(l, h);
    else if (was_full)
        update_mask(l, h);
    return PN_OK;
}

pn_err pn__write(void *ctx, pn_handle id, const void *data, size_t len) {
    pn_loop *l = ctx;
    pn__h *h = pn__h_get(l, id, PN__STREAM);
    if (!h || (!data && len)) return PN_E_INVALID;
    if (h->settling || h->shut_wanted) return PN_E_CLOSED;
    if (len == 0) return PN_OK;
    size_t queued = pb_fifo_size(&h->wq);
    if (len > l->o.write_queue - queued) {
        /* the caller waits for PN_EV_WRITABLE: when the queue is already at half its
         * bound or less nothing will drain to trigger it, so it is queued now (it is
         * delivered by the loop, never from inside this call) */
        if (queued <= l->o.write_queue / 2)
            pn__queue(l, h, PN_EV_WRITABLE, PN_OK, NULL);
        else
            h->want_writable = true;
        return PN_E_LIMIT;
    }
    if (!pb_fifo_push(&h->wq, data, len, l->o.write_queue)) return PN_E_LIMIT; /* memory */
    if (h->state == PN__S_OPEN) do_write(l, h); /* failures are queued as PN_EV_CLOSED */
    return PN_OK;
}

pn_err pn__shutdown(void *ctx, pn_handle id) {
    pn_loop *l = ctx;
    pn__h *h = pn__h_get(l, id, PN__STREAM);
    if (!h) return PN_E_INVALID;
    if (h->settling) return PN_E_CLOSED;
    if (h->shut_wanted) return PN_OK;
    h->shut_wanted = true;
    if (h->state == PN__S_OPEN) do_write(l, h);
    return PN_OK;
}

pn_err pn__close(void *ctx, pn_handle id) {
    return pn__h_cancel(ctx, id, PN__STREAM, PN_EV_CLOSED, PN_OK);
}

pn_err pn__starttls(void *ctx, pn_handle id, const char *server_name) {
    pn_loop *l = ctx;
    pn__h *h = pn__h_get(l, id, PN__STREAM);
    if (!h) return PN_E_INVALID;
    if (h->settling) return PN_E_CLOSED;
    const char *sni = server_name && *server_name ? server_name : h->host;
    if (!pn__name_ok(sni) || h->state != PN__S_OPEN || h->tls || h->shut_wanted ||
        pb_fifo_size(&h->wq))
        return PN_E_INVALID;
    if (h->rlen) return PN_E_TLS; /* clear bytes after the upgrade's answer: refused */
    if (h->eof) return PN_E_CLOSED;
    char *name = strdup(sni);
    if (!name) return PN_E_LIMIT;
    uint64_t at = pn__now_ms(l) + l->o.connect_timeout_ms;
    pn_err e = pn__heap_push(l, at, h);
    if (e != PN_OK) {
        free(name);
        return e;
    }
    free(h->server_name);
    h->server_name = name;
    h->deadline = at;
    h->tls = h->upgrading = true;
    h->state = PN__S_HANDSHAKE;
    /* every outcome from here on is queued (PN_EV_TLS), never delivered in this call */
    e = pn__tls_begin(l, h);
    if (e != PN_OK)
        pn__stream_fail(l, h, e, h->last_detail);
    else
        handshake(l, h);
    return PN_OK;
}
