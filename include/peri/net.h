/*
 * net.h — the host's ports: byte streams, name resolution and timers, driven by events.
 *
 * The agent host never opens a socket, resolves a name or reads a clock by itself: it
 * asks a pn_ports. Two implementations exist behind the same table:
 *  - the native loop (pn_loop_*, src/net/loop.c): epoll, non-blocking sockets, OpenSSL
 *    for TLS with the host's trust store, getaddrinfo off the loop thread, timers;
 *  - inside the WebAssembly form of the agent host, the imports of docs/wasm-host.md,
 *    which the embedder (Peri-C's engine or Node) implements with its own network.
 *
 * Event model (both implementations keep it, and the state machines above rely on it):
 *  - Every call returns at once. A call that starts something (open, resolve, timer)
 *    returns a handle; its outcome arrives later as an event on the ports' event
 *    callback, never from inside the call that started it (no re-entrancy).
 *  - Events are delivered one at a time on the thread that runs the loop.
 *  - Reading is pulled: PN_EV_READABLE says "read now"; pn_ports.read returns the bytes
 *    that are there, PN_E_AGAIN when none are (wait for the next READABLE), or 0 bytes
 *    with PN_OK at the end of the stream. The host buffers a bounded amount and stops
 *    reading from the network while the buffer is full (back-pressure).
 *  - Writing is queued: write copies the bytes or fails (PN_E_LIMIT when the host's
 *    queue would exceed its bound; then one PN_EV_WRITABLE follows once the queue has
 *    drained to half its bound or less, so a writer never has to poll); a failure of
 *    the connection later arrives as PN_EV_CLOSED with the error.
 *  - Every handle that was returned ends with exactly one settling event: a stream
 *    with PN_EV_CLOSED, a resolution with PN_EV_RESOLVED, a timer with PN_EV_TIMER
 *    (fired) or PN_EV_TIMER with PN_E_CANCELLED (cancelled). Only after its settling
 *    event is a handle number free for reuse.
 *  - The host may close every port of an instance at any time (pn_loop_close_all):
 *    each open handle then settles with PN_E_CLOSED, and the host learns when all have
 *    settled (pn_loop_settled). A timeout is reported as PN_E_TIMEOUT, never as a
 *    close or a stop.
 *
 * Ownership: pn_ports is a borrowed table (the implementation owns it); strings passed
 * in are copied before the call returns; event payloads (data, addresses, detail) are
 * valid only during the event callback.
 */
#ifndef PERI_NET_H
#define PERI_NET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Typed outcome of every port call and event. Negative values cross the wasm ABI
 * unchanged (docs/wasm-host.md), so the numbers are part of the contract. */
typedef enum pn_err {
    PN_OK = 0,
    PN_E_AGAIN = -1,       /* read: nothing buffered now; wait for PN_EV_READABLE */
    PN_E_INVALID = -2,     /* bad argument (empty host, port 0, unknown handle, ...) */
    PN_E_DENIED = -3,      /* the host's policy does not grant this destination */
    PN_E_NOT_FOUND = -4,   /* the name does not resolve */
    PN_E_REFUSED = -5,     /* connection refused */
    PN_E_UNREACHABLE = -6, /* no route to the host / network unreachable */
    PN_E_TIMEOUT = -7,     /* the host's own deadline for connect or handshake passed */
    PN_E_TLS = -8,         /* TLS handshake failed or the certificate was not trusted */
    PN_E_RESET = -9,       /* the peer reset the connection */
    PN_E_CLOSED = -10,     /* the handle, or the whole port, was closed */
    PN_E_CANCELLED = -11,  /* a timer or a resolution was cancelled by its owner */
    PN_E_LIMIT = -12,      /* a host bound: too many handles, write queue full */
    PN_E_IO = -13,         /* any other failure; the detail text says which */
} pn_err;

/* English name of an error ("refused", "timeout", ...); never NULL. */
const char *pn_err_name(pn_err e);

typedef uint32_t pn_handle; /* 0 is never a valid handle */

typedef enum pn_event_kind {
    PN_EV_OPENED = 1,   /* stream: connected (and TLS done) or failed (err != PN_OK; the
                           stream then also settles with PN_EV_CLOSED) */
    PN_EV_READABLE = 2, /* stream: bytes or the end of the stream can be read */
    PN_EV_CLOSED = 3,   /* stream: settled; err says why (PN_OK after a local close) */
    PN_EV_RESOLVED = 4, /* resolution: settled; addrs/naddrs on success */
    PN_EV_TIMER = 5,    /* timer: settled; PN_OK fired, PN_E_CANCELLED cancelled */
    PN_EV_WRITABLE = 6, /* stream: after a write failed with PN_E_LIMIT, the queue has
                           room again (at least half its bound) */
    PN_EV_TLS = 7,      /* stream: the outcome of starttls: PN_OK (the stream is now TLS),
                           or the error (PN_E_TLS, PN_E_TIMEOUT, ...; the stream then also
                           settles with PN_EV_CLOSED and the same error) */
} pn_event_kind;

typedef struct pn_event {
    pn_event_kind kind;
    pn_handle handle;
    void *ud;                 /* the owner pointer given when the handle was made */
    pn_err err;               /* PN_OK or why it failed */
    const char *detail;       /* English detail for a failure, or NULL */
    const char *const *addrs; /* PN_EV_RESOLVED: numeric addresses ("192.0.2.1", "::1") */
    size_t naddrs;
} pn_event;

typedef void (*pn_event_fn)(void *ctx, const pn_event *ev);

/* Options of one stream. tls: the host does TLS with its own trust store; server_name
 * is both SNI and the name the certificate must match (defaults to host). */
typedef struct pn_stream_opts {
    bool tls;
    const char *server_name;
} pn_stream_opts;

/* The ports table. ctx is the implementation's; every function takes it first. */
typedef struct pn_ports {
    void *ctx;
    /* Byte streams. open: host is a name or a numeric address; the host resolves it
     * itself (policy is checked on the name and on every resolved address). */
    pn_err (*open)(void *ctx, const char *host, uint16_t port, const pn_stream_opts *o, void *ud,
                   pn_handle *out);
    pn_err (*read)(void *ctx, pn_handle h, void *buf, size_t cap, size_t *got);
    pn_err (*write)(void *ctx, pn_handle h, const void *data, size_t len);
    pn_err (*shutdown)(void *ctx, pn_handle h); /* half-close after the queued bytes */
    /* Settles later with PN_EV_CLOSED (PN_OK); unsent bytes are dropped, and no other
     * event of the handle follows. A graceful end: shutdown, read to the end, close. */
    pn_err (*close)(void *ctx, pn_handle h);
    /* Name resolution. */
    pn_err (*resolve)(void *ctx, const char *name, void *ud, pn_handle *out);
    pn_err (*resolve_cancel)(void *ctx, pn_handle h);
    /* Timers and clocks. now_ms: monotonic milliseconds; wall_ms: Unix time in ms. */
    uint64_t (*now_ms)(void *ctx);
    int64_t (*wall_ms)(void *ctx);
    pn_err (*timer_set)(void *ctx, uint64_t delay_ms, void *ud, pn_handle *out);
    pn_err (*timer_cancel)(void *ctx, pn_handle h);
    /* Upgrades an open clear stream to TLS in place (PostgreSQL's SSLRequest, SMTP's
     * STARTTLS): the same trust store, SNI and certificate-name check as a stream opened
     * with tls; server_name NULL or "" means the host given to open. Allowed only on an
     * open stream that is not TLS yet, whose write queue is empty, that is not shut down
     * and whose end was not read (else PN_E_INVALID; PN_E_CLOSED once it is settling).
     * Bytes received and not yet read are refused with PN_E_TLS and the stream is left
     * as it was: whatever the peer sent after its answer to the upgrade request came in
     * the clear, so a man in the middle could have written it. The outcome arrives as
     * PN_EV_TLS within the loop's connect deadline (counted from this call; past it
     * PN_E_TIMEOUT). Until then read returns PN_E_AGAIN and no PN_EV_READABLE is
     * delivered; write and shutdown are queued (the write queue's bound as always) and
     * happen over TLS after the handshake; close works as always. */
    pn_err (*starttls)(void *ctx, pn_handle h, const char *server_name);
} pn_ports;

/* ---- The native loop --------------------------------------------------------------- */

/* A destination policy: may this instance open host:port? Called with the name given to
 * open and again with each numeric address it resolves to (name == NULL then; the
 * addresses it refuses are skipped, and the stream fails with PN_E_DENIED when none is
 * left). resolve asks for the name with port 0 (a lookup is traffic too). NULL policy
 * denies everything: a loop grants nothing unless told. */
typedef bool (*pn_policy_fn)(void *ctx, const char *name, const char *addr, uint16_t port);

typedef struct pn_loop_opts {
    pn_event_fn on_event; /* required */
    void *event_ctx;
    pn_policy_fn policy;
    void *policy_ctx;
    const char *ca_file;         /* TLS trust store; NULL: the system's default */
    uint32_t connect_timeout_ms; /* connect + TLS handshake; 0: 30 s */
    size_t read_buffer;          /* per stream; 0: 256 KiB */
    size_t write_queue;          /* per stream; 0: 64 MiB */
    uint32_t max_handles;        /* 0: 1024 */
} pn_loop_opts;

typedef struct pn_loop pn_loop;

/* Owned by the caller; free with pn_loop_free (which closes everything first). */
pn_loop *pn_loop_new(const pn_loop_opts *o, char *err, size_t errlen);
void pn_loop_free(pn_loop *l);
/* The table whose calls act on this loop (borrowed, lives as long as the loop). */
const pn_ports *pn_loop_ports(pn_loop *l);
/* Wait up to timeout_ms (-1: no limit) for events and deliver them; returns the number
 * delivered (and posted functions run), or -1 on a failure of the loop itself. Events
 * queued by the callbacks wait for the next call. Never call it from a callback. */
int pn_loop_run_once(pn_loop *l, int timeout_ms);
/* Thread-safe: run fn(arg) on the loop thread at its next turn (wakes the loop). */
int pn_loop_post(pn_loop *l, void (*fn)(void *arg), void *arg);
/* Wake pn_loop_run_once when fd is readable (or hung up) and call on_ready(arg) from
 * it, before the turn's events are delivered; level-triggered: on_ready runs at every
 * turn while fd stays readable, so it reads. One watch per loop: a new one replaces
 * the old; fd < 0 removes it (allowed from on_ready). The fd stays the caller's and
 * must stay open while watched. 0, or -1 with errno (EPERM: a regular file or another
 * descriptor epoll cannot wait on, which is always ready). Lets a driver wait on its
 * client's input and the ports together instead of polling. */
int pn_loop_watch(pn_loop *l, int fd, void (*on_ready)(void *arg), void *arg);
/* Close every open handle of the loop; each settles with PN_E_CLOSED (delivered by the
 * next pn_loop_run_once) and nothing else. From then on new handles are refused with
 * PN_E_CLOSED: this ends the loop's life as a port (the host stops an instance). */
void pn_loop_close_all(pn_loop *l);
/* True when no handle is open or unsettled (capacity may be reused). */
bool pn_loop_settled(const pn_loop *l);

/* ---- The WebAssembly form ---------------------------------------------------------- */

#ifdef __wasi__
/* Inside the agent host's WebAssembly module (src/net/port_wasm.c): the ports table
 * over the peri_port imports of docs/wasm-host.md. The module is one instance, so one
 * callback receives every event (the peri_port_event export has no context); calling
 * again replaces it. The module also gets the exports peri_alloc, peri_free and
 * peri_port_event from that file. */
const pn_ports *pn_wasm_ports(pn_event_fn on_event, void *event_ctx);
#endif

#ifdef __cplusplus
}
#endif
#endif
