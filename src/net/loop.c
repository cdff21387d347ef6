/*
 * loop.c — the native ports loop (pn_loop_*): the handle table, the event queue and its
 * delivery, the epoll wait, pn_loop_post, the caller's watched descriptor and close-all.
 *
 * Owns: the pn_loop object and every pn__h record in its table. A record is made by a
 * port call that returns a handle and freed right after its settling event has been
 * delivered (so a handle number is reused only after it settled). Events are only ever
 * delivered by pn_loop_run_once, one at a time, never from inside a port call.
 * Streams (stream.c, tls.c), resolution (resolve.c) and timers (timers.c) queue their
 * outcomes through pn__queue.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "net/net_int.h"
#include "peri/base.h"

pn__h *pn__h_get(pn_loop *l, pn_handle id, int kind) {
    if (id == 0 || id > l->o.max_handles) return NULL;
    pn__h *h = l->tab[id - 1];
    return h && h->kind == kind ? h : NULL;
}

/* Allocates a record in the first free slot after the cursor. Owned by the table. */
pn_err pn__h_new(pn_loop *l, int kind, void *ud, pn__h **out) {
    if (l->closed) return PN_E_CLOSED;
    if (l->nused >= l->o.max_handles) return PN_E_LIMIT;
    pn__h *h = calloc(1, sizeof *h);
    if (!h) return PN_E_LIMIT;
    uint32_t n = l->o.max_handles, i = l->cursor;
    while (l->tab[i])
        i = (i + 1) % n;
    l->cursor = (i + 1) % n;
    l->tab[i] = h;
    l->nused++;
    h->kind = kind;
    h->id = i + 1;
    h->seq = ++l->seq;
    h->ud = ud;
    h->fd = -1;
    for (int k = 0; k < PN__EV_N; k++)
        h->ev[k].handle = h->id;
    *out = h;
    return PN_OK;
}

void pn__h_drop(pn_loop *l, pn__h *h) {
    if (h->kind == PN__STREAM) pn__stream_teardown(l, h);
    pb_strv_free(h->raddrs, h->nraddrs);
    free(h->host);
    free(h->server_name);
    free(h->addrs);
    l->tab[h->id - 1] = NULL;
    l->nused--;
    free(h);
}

pn_err pn__h_cancel(pn_loop *l, pn_handle id, int kind, pn_event_kind ev, pn_err err) {
    pn__h *h = pn__h_get(l, id, kind);
    if (!h) return PN_E_INVALID;
    if (h->settling) return PN_OK; /* its settling event is already on its way */
    h->quiet = true;
    if (kind == PN__STREAM) pn__stream_teardown(l, h);
    pn__queue(l, h, ev, err, err == PN_E_CANCELLED ? "cancelled by its owner" : NULL);
    return PN_OK;
}

void pn__queue(pn_loop *l, pn__h *h, pn_event_kind kind, pn_err err, const char *detail) {
    if (h->settling) return;
    int role = kind == PN_EV_OPENED     ? PN__EV_OPENED
               : kind == PN_EV_READABLE ? PN__EV_READABLE
               : kind == PN_EV_WRITABLE ? PN__EV_WRITABLE
               : kind == PN_EV_TLS      ? PN__EV_TLS
                                        : PN__EV_SETTLE;
    pn__ev *e = &h->ev[role];
    if (e->queued) return; /* one of each kind at a time */
    if (role == PN__EV_SETTLE) h->settling = true;
    e->queued = true;
    e->kind = kind;
    e->err = err;
    snprintf(e->detail, sizeof e->detail, "%s", detail ? detail : "");
    e->next = NULL;
    if (l->qtail)
        l->qtail->next = e;
    else
        l->qhead = e;
    l->qtail = e;
}

pn_err pn__err_from_errno(int e) {
    switch (e) {
    case ECONNREFUSED: return PN_E_REFUSED;
    case ENETUNREACH:
    case EHOSTUNREACH:
    case ENETDOWN:
    case EHOSTDOWN: return PN_E_UNREACHABLE;
    case ETIMEDOUT: return PN_E_TIMEOUT;
    case ECONNRESET:
    case EPIPE:
    case ECONNABORTED: return PN_E_RESET;
    case EMFILE:
    case ENFILE:
    case ENOBUFS:
    case ENOMEM: return PN_E_LIMIT;
    default: return PN_E_IO;
    }
}

/* Delivers the events queued before this call (events queued by the callbacks wait for
 * the next turn, so a callback that re-arms a zero timer cannot starve the loop). */
static int deliver(pn_loop *l) {
    pn__ev *list = l->qhead;
    l->qhead = l->qtail = NULL;
    int n = 0;
    while (list) {
        pn__ev *e = list;
        list = e->next;
        e->queued = false;
        pn__h *h = l->tab[e->handle - 1];
        bool settle = e == &h->ev[PN__EV_SETTLE];
        if (!settle && h->quiet) continue;
        pn_event ev = {.kind = e->kind,
                       .handle = h->id,
                       .ud = h->ud,
                       .err = e->err,
                       .detail = e->detail[0] ? e->detail : NULL};
        if (e->kind == PN_EV_RESOLVED && e->err == PN_OK) {
            ev.addrs = (const char *const *)h->raddrs;
            ev.naddrs = h->nraddrs;
        }
        l->o.on_event(l->o.event_ctx, &ev);
        n++;
        if (settle) pn__h_drop(l, h);
    }
    return n;
}

static int run_once(pn_loop *l, int timeout_ms);

/* The epoll tag of the watched descriptor: no stream's (handle ids are below 2^32 - 1). */
#define WATCH_TAG UINT64_MAX

static void drain_chan(pn_loop *l, int *ran) {
    uint64_t v;
    ssize_t r = read(l->chan->efd, &v, sizeof v);
    (void)r; /* EAGAIN: another turn drained it; the list below is what counts */
    pn__msg *m = pn__chan_take(l->chan);
    while (m) {
        pn__msg *next = m->next;
        if (m->fn) {
            m->fn(m->arg);
            (*ran)++;
        } else {
            pn__resolve_result(l, m);
        }
        pn__msg_free(m);
        m = next;
    }
}

int pn_loop_run_once(pn_loop *l, int timeout_ms) {
    if (l->running) return -1; /* from inside a callback: events are never re-entrant */
    l->running = true;
    int n = run_once(l, timeout_ms);
    l->running = false;
    return n;
}

static int run_once(pn_loop *l, int timeout_ms) {
    int wait = l->qhead ? 0 : pn__heap_wait(l, timeout_ms);
    struct epoll_event evs[64];
    int n = epoll_wait(l->ep, evs, 64, wait);
    if (n < 0) {
        if (errno != EINTR) return -1;
        n = 0;
    }
    int ran = 0;
    for (int i = 0; i < n; i++) {
        uint64_t d = evs[i].data.u64;
        if (d == 0) {
            drain_chan(l, &ran);
            continue;
        }
        if (d == WATCH_TAG) {
            if (l->watch_fd >= 0) {
                l->watch_fn(l->watch_arg);
                ran++;
            }
            continue;
        }
        pn_handle id = (pn_handle)(d & 0xffffffffu);
        uint32_t seq = (uint32_t)(d >> 32);
        pn__h *h = pn__h_get(l, id, PN__STREAM);
        if (h && h->seq == seq && !h->settling) pn__stream_io(l, h, evs[i].events);
    }
    pn__heap_expire(l);
    return ran + deliver(l);
}

int pn_loop_post(pn_loop *l, void (*fn)(void *arg), void *arg) {
    if (!l || !fn) return -1;
    pn__msg *m = calloc(1, sizeof *m);
    if (!m) return -1;
    m->fn = fn;
    m->arg = arg;
    return pn__chan_push(l->chan, m) ? 0 : -1;
}

int pn_loop_watch(pn_loop *l, int fd, void (*on_ready)(void *arg), void *arg) {
    if (!l || (fd >= 0 && !on_ready)) {
        errno = EINVAL;
        return -1;
    }
    if (l->watch_fd >= 0) {
        epoll_ctl(l->ep, EPOLL_CTL_DEL, l->watch_fd, NULL); /* may be closed already */
        l->watch_fd = -1;
    }
    if (fd < 0) return 0;
    struct epoll_event ev = {.events = EPOLLIN, .data.u64 = WATCH_TAG};
    if (epoll_ctl(l->ep, EPOLL_CTL_ADD, fd, &ev) != 0) return -1;
    l->watch_fd = fd;
    l->watch_fn = on_ready;
    l->watch_arg = arg;
    return 0;
}

void pn_loop_close_all(pn_loop *l) {
    l->closed = true;
    for (uint32_t i = 0; i < l->o.max_handles; i++) {
        pn__h *h = l->tab[i];
        if (!h || h->settling) continue;
        h->quiet = true;
        if (h->kind == PN__STREAM) {
            pn__stream_teardown(l, h);
            pn__queue(l, h, PN_EV_CLOSED, PN_E_CLOSED, "the port was closed by the host");
        } else if (h->kind == PN__RESOLVE) {
            pn__queue(l, h, PN_EV_RESOLVED, PN_E_CLOSED, "the port was closed by the host");
        } else {
            pn__queue(l, h, PN_EV_TIMER, PN_E_CLOSED, "the port was closed by the host");
        }
    }
}

bool pn_loop_settled(const pn_loop *l) {
    return l->nused == 0;
}

const pn_ports *pn_loop_ports(pn_loop *l) {
    return &l->ports;
}

pn_loop *pn_loop_new(const pn_loop_opts *o, char *err, size_t errlen) {
    if (!o || !o->on_event) {
        snprintf(err, errlen, "pn_loop_new: an event callback is required");
        return NULL;
    }
    pn_loop *l = calloc(1, sizeof *l);
    if (!l) {
        snprintf(err, errlen, "pn_loop_new: out of memory");
        return NULL;
    }
    l->o = *o;
    l->o.ca_file = NULL;
    if (!l->o.connect_timeout_ms) l->o.connect_timeout_ms = 30000;
    if (!l->o.read_buffer) l->o.read_buffer = 256 * 1024;
    if (!l->o.write_queue) l->o.write_queue = 64u * 1024 * 1024;
    if (!l->o.max_handles) l->o.max_handles = 1024;
    l->ep = -1;
    l->watch_fd = -1;
    if (o->ca_file && !(l->ca_file = strdup(o->ca_file))) goto oom;
    if (!(l->tab = calloc(l->o.max_handles, sizeof *l->tab))) goto oom;
    if (!(l->chan = pn__chan_new())) goto oom;
    l->ep = epoll_create1(EPOLL_CLOEXEC);
    struct epoll_event ev = {.events = EPOLLIN, .data.u64 = 0};
    if (l->ep < 0 || epoll_ctl(l->ep, EPOLL_CTL_ADD, l->chan->efd, &ev) != 0) {
        snprintf(err, errlen, "pn_loop_new: epoll: %s", strerror(errno));
        pn_loop_free(l);
        return NULL;
    }
    l->ports = (pn_ports){.ctx = l,
                          .open = pn__open,
                          .read = pn__read,
                          .write = pn__write,
                          .shutdown = pn__shutdown,
                          .close = pn__close,
                          .resolve = pn__resolve,
                          .resolve_cancel = pn__resolve_cancel,
                          .now_ms = pn__now_ms,
                          .wall_ms = pn__wall_ms,
                          .timer_set = pn__timer_set,
                          .timer_cancel = pn__timer_cancel,
                          .starttls = pn__starttls};
    return l;
oom:
    snprintf(err, errlen, "pn_loop_new: out of memory");
    pn_loop_free(l);
    return NULL;
}

/* Frees everything without delivering events: callbacks never run from here. */
void pn_loop_free(pn_loop *l) {
    if (!l) return;
    if (l->tab) {
        for (uint32_t i = 0; i < l->o.max_handles; i++)
            if (l->tab[i]) pn__h_drop(l, l->tab[i]);
        free(l->tab);
    }
    if (l->chan) {
        pthread_mutex_lock(&l->chan->mu);
        l->chan->closed = true;
        pn__msg *m = l->chan->head;
        l->chan->head = l->chan->tail = NULL;
        pthread_mutex_unlock(&l->chan->mu);
        while (m) {
            pn__msg *next = m->next;
            pn__msg_free(m);
            m = next;
        }
        pn__chan_unref(l->chan);
    }
    if (l->ep >= 0) close(l->ep);
    pn__tls_free(l);
    free(l->heap);
    free(l->ca_file);
    free(l);
}
