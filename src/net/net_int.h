/*
 * net_int.h — what the files of the native loop share (prefix pn__).
 *
 * The loop owns a table of handle records (pn__h), an epoll descriptor, a queue of
 * events waiting for delivery, a min-heap of deadlines and a channel (pn__chan) through
 * which helper threads and pn_loop_post hand work back to the loop thread.
 *
 * Invariants:
 *  - Events are never delivered from inside a port call: every outcome is queued
 *    (pn__queue) and delivered by pn_loop_run_once.
 *  - A handle record stays allocated until its settling event has been delivered; only
 *    then is its number free (pn__h_release). `settling` is set when that event is
 *    queued, and no other event for the handle is delivered afterwards.
 *  - Every heap entry and epoll registration carries the handle's sequence number, so a
 *    stale one (the handle was settled and its number reused) is recognised and dropped.
 */
#ifndef PERI_NET_INT_H
#define PERI_NET_INT_H

#include <netdb.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/socket.h>

#include "peri/base.h"
#include "peri/net.h"

typedef struct ssl_st SSL;
typedef struct ssl_ctx_st SSL_CTX;

enum { PN__FREE = 0, PN__STREAM, PN__RESOLVE, PN__TIMER };

/* Stream states, in order. */
enum {
    PN__S_RESOLVING = 1, /* waiting for the helper thread's addresses */
    PN__S_CONNECTING,    /* non-blocking connect to addrs[next-1] in progress */
    PN__S_HANDSHAKE,     /* TLS handshake in progress (of open, or of starttls: upgrading) */
    PN__S_OPEN,          /* PN_EV_OPENED(PN_OK) queued; reading and writing */
};

/* One resolved address of a stream. */
typedef struct pn__addr {
    struct sockaddr_storage sa;
    socklen_t len;
} pn__addr;

/* A queued event. Each handle embeds its possible events (opened, readable, writable,
 * the outcome of starttls, the settling one), so queueing never allocates and a settling event
 * cannot be lost. */
typedef struct pn__ev {
    struct pn__ev *next;
    pn_handle handle;
    pn_event_kind kind;
    pn_err err;
    bool queued;
    char detail[200]; /* "" when none */
} pn__ev;

enum { PN__EV_OPENED = 0, PN__EV_READABLE, PN__EV_WRITABLE, PN__EV_TLS, PN__EV_SETTLE, PN__EV_N };

/* One handle. Owned by the loop's table; freed when its settling event is delivered. */
typedef struct pn__h {
    int kind;
    pn_handle id;
    uint32_t seq; /* unique per allocation of this record */
    void *ud;
    bool settling;       /* its settling event is queued */
    bool quiet;          /* closed or cancelled by its owner: only the settling event follows */
    pn__ev ev[PN__EV_N]; /* by PN__EV_* */
    /* stream */
    int state;
    int fd;
    char *host;        /* owned: the name given to open */
    char *server_name; /* owned: SNI and certificate name (TLS only) */
    uint16_t port;
    bool tls;          /* TLS from the open, or since a starttls began */
    bool upgrading;    /* the handshake is a starttls: its outcome is PN_EV_TLS */
    uint64_t deadline; /* monotonic ms: the connect (or starttls) deadline */
    SSL *ssl;
    pn__addr *addrs; /* owned */
    size_t naddrs, next_addr;
    pn_err last_err; /* of the last failed address */
    char last_detail[160];
    uint32_t epoll_mask; /* what the descriptor is registered for (0: not registered) */
    uint8_t *rbuf;       /* owned; read buffer of rcap bytes */
    size_t rcap, roff, rlen;
    bool eof;         /* the peer's end was read */
    pb_fifo wq;       /* owned; the write queue (at most write_queue bytes) */
    bool shut_wanted; /* shutdown asked: half-close once the queue is empty */
    bool shut_done;
    bool want_writable; /* a write failed with PN_E_LIMIT: PN_EV_WRITABLE is owed */
    /* resolution */
    char **raddrs; /* owned: the numeric addresses of PN_EV_RESOLVED */
    size_t nraddrs;
} pn__h;

/* A message from another thread to the loop thread. */
typedef struct pn__msg {
    struct pn__msg *next;
    void (*fn)(void *arg); /* pn_loop_post; NULL for a resolution result */
    void *arg;
    pn_handle handle;
    uint32_t seq;
    int gai_err;
    struct addrinfo *res; /* owned: freeaddrinfo */
} pn__msg;

/* The cross-thread channel. Reference-counted: the loop holds one reference and each
 * helper thread one, so a thread finishing after pn_loop_free still has somewhere to
 * put its result (it is then dropped). */
typedef struct pn__chan {
    pthread_mutex_t mu;
    int efd; /* eventfd; written to wake the loop */
    pn__msg *head, *tail;
    bool closed; /* the loop is gone: drop what arrives */
    int refs;
} pn__chan;

typedef struct pn__timer_ent {
    uint64_t at;
    pn_handle handle;
    uint32_t seq;
} pn__timer_ent;

struct pn_loop {
    pn_ports ports;
    pn_loop_opts o;
    char *ca_file; /* owned copy of o.ca_file */
    int ep;
    pn__chan *chan;
    pn__h **tab; /* max_handles slots; slot i is handle i + 1 */
    uint32_t nused, cursor, seq;
    pn__ev *qhead, *qtail;
    pn__timer_ent *heap;
    size_t nheap, heapcap;
    SSL_CTX *ssl_ctx; /* made at the first TLS stream */
    char ssl_err[200];
    bool closed;  /* pn_loop_close_all ran: new handles are refused */
    bool running; /* inside pn_loop_run_once */
    int watch_fd; /* pn_loop_watch: the caller's descriptor in the epoll set, or -1 */
    void (*watch_fn)(void *arg);
    void *watch_arg;
};

/* loop.c */
pn__h *pn__h_get(pn_loop *l, pn_handle id, int kind);
pn_err pn__h_new(pn_loop *l, int kind, void *ud, pn__h **out);
/* The owner gives a handle up: only its settling event (ev, err) follows. */
pn_err pn__h_cancel(pn_loop *l, pn_handle id, int kind, pn_event_kind ev, pn_err err);
/* Frees h and its slot at once (its settling event delivered, or it was never handed out). */
void pn__h_drop(pn_loop *l, pn__h *h);
/* Queue an event for h (detail copied, may be NULL). A settling kind marks h settling;
 * nothing is queued for a handle already settling. */
void pn__queue(pn_loop *l, pn__h *h, pn_event_kind kind, pn_err err, const char *detail);
pn_err pn__err_from_errno(int e);

/* stream.c */
void pn__stream_io(pn_loop *l, pn__h *h, uint32_t events);
void pn__stream_addrs(pn_loop *l, pn__h *h, int gai_err, const struct addrinfo *res);
void pn__stream_deadline(pn_loop *l, pn__h *h);
void pn__stream_teardown(pn_loop *l, pn__h *h); /* descriptors, SSL, buffers */
void pn__stream_fail(pn_loop *l, pn__h *h, pn_err err, const char *detail);
void pn__stream_set_mask(pn_loop *l, pn__h *h, uint32_t mask);
pn_err pn__open(void *ctx, const char *host, uint16_t port, const pn_stream_opts *o, void *ud,
                pn_handle *out);
pn_err pn__read(void *ctx, pn_handle id, void *buf, size_t cap, size_t *got);
pn_err pn__write(void *ctx, pn_handle id, const void *data, size_t len);
pn_err pn__shutdown(void *ctx, pn_handle id);
pn_err pn__close(void *ctx, pn_handle id);
pn_err pn__starttls(void *ctx, pn_handle id, const char *server_name);

/* tls.c */
/* Starts TLS on h->fd (connected). PN_OK, or an error with detail in h->last_detail. */
pn_err pn__tls_begin(pn_loop *l, pn__h *h);
/* Drives the handshake: 1 done, 0 wants more (mask updated), <0 a pn_err. */
int pn__tls_step(pn_loop *l, pn__h *h);
/* Like recv/send: > 0 bytes, 0 end of stream (read), -1 would block, or -2 an error
 * (h->last_err, h->last_detail). */
long pn__tls_read(pn__h *h, void *buf, size_t n);
long pn__tls_write(pn__h *h, const void *buf, size_t n);
void pn__tls_close_notify(pn__h *h);
bool pn__tls_pending(pn__h *h); /* decrypted bytes wait inside OpenSSL */
void pn__tls_drop(pn__h *h);    /* frees h->ssl */
void pn__tls_free(pn_loop *l);

/* resolve.c */
pn__chan *pn__chan_new(void);
void pn__chan_unref(pn__chan *c);
bool pn__chan_push(pn__chan *c, pn__msg *m); /* false when the loop is gone (m freed) */
pn__msg *pn__chan_take(pn__chan *c);         /* the whole list, oldest first */
void pn__msg_free(pn__msg *m);
/* Starts getaddrinfo(name) on a helper thread; the result arrives as a pn__msg. */
pn_err pn__resolve_start(pn_loop *l, pn__h *h, const char *name);
void pn__resolve_result(pn_loop *l, pn__msg *m);
pn_err pn__resolve(void *ctx, const char *name, void *ud, pn_handle *out);
pn_err pn__resolve_cancel(void *ctx, pn_handle id);
bool pn__name_ok(const char *name);
pn_err pn__gai_err(int gai_err);

/* timers.c */
pn_err pn__heap_push(pn_loop *l, uint64_t at, pn__h *h);
/* Milliseconds to the earliest entry (capped at cap; -1 cap: none), or cap. */
int pn__heap_wait(pn_loop *l, int cap);
void pn__heap_expire(pn_loop *l);
uint64_t pn__now_ms(void *ctx);
int64_t pn__wall_ms(void *ctx);
pn_err pn__timer_set(void *ctx, uint64_t delay_ms, void *ud, pn_handle *out);
pn_err pn__timer_cancel(void *ctx, pn_handle id);

#endif
