/*
 * resolve.c — name resolution off the loop thread, and the channel that carries results
 * (and pn_loop_post calls) back to it.
 *
 * Owns: pn__chan (reference-counted: the loop and every helper thread hold one
 * reference, so a thread that finishes after pn_loop_free drops its result safely) and
 * the request each helper thread runs. getaddrinfo cannot be interrupted: a cancelled
 * or closed resolution settles at once, and the thread's late result is recognised by
 * the handle's sequence number and discarded.
 * Names under ".invalid" (RFC 6761) fail at once without asking the resolver.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "net/net_int.h"
#include "peri/base.h"

pn__chan *pn__chan_new(void) {
    pn__chan *c = calloc(1, sizeof *c);
    if (!c) return NULL;
    c->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (c->efd < 0 || pthread_mutex_init(&c->mu, NULL) != 0) {
        if (c->efd >= 0) close(c->efd);
        free(c);
        return NULL;
    }
    c->refs = 1;
    return c;
}

void pn__chan_unref(pn__chan *c) {
    pthread_mutex_lock(&c->mu);
    bool last = --c->refs == 0;
    pthread_mutex_unlock(&c->mu);
    if (!last) return;
    pthread_mutex_destroy(&c->mu);
    close(c->efd);
    free(c);
}

void pn__msg_free(pn__msg *m) {
    if (m->res) freeaddrinfo(m->res);
    free(m);
}

bool pn__chan_push(pn__chan *c, pn__msg *m) {
    m->next = NULL;
    pthread_mutex_lock(&c->mu);
    bool ok = !c->closed;
    if (ok) {
        if (c->tail)
            c->tail->next = m;
        else
            c->head = m;
        c->tail = m;
        uint64_t one = 1;
        ssize_t r = write(c->efd, &one, sizeof one);
        (void)r; /* EAGAIN only when the counter is saturated: the loop wakes anyway */
    }
    pthread_mutex_unlock(&c->mu);
    if (!ok) pn__msg_free(m);
    return ok;
}

pn__msg *pn__chan_take(pn__chan *c) {
    pthread_mutex_lock(&c->mu);
    pn__msg *m = c->head;
    c->head = c->tail = NULL;
    pthread_mutex_unlock(&c->mu);
    return m;
}

bool pn__name_ok(const char *name) {
    size_t n = name ? strlen(name) : 0;
    if (n == 0 || n > 253) return false;
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)name[i];
        if (!isalnum(ch) && ch != '.' && ch != '-' && ch != '_' && ch != ':') return false;
    }
    return true;
}

static bool special_invalid(const char *name) {
    size_t n = strlen(name);
    if (n && name[n - 1] == '.') n--;
    if (n == 7) return strncasecmp(name, "invalid", 7) == 0;
    return n > 8 && strncasecmp(name + n - 8, ".invalid", 8) == 0;
}

/* One helper thread's request: owns name and a reference to the channel. */
typedef struct req {
    pn__chan *chan;
    pn__msg *msg;
    char name[];
} req;

static void *resolve_thread(void *arg) {
    req *r = arg;
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM};
    r->msg->gai_err = getaddrinfo(r->name, NULL, &hints, &r->msg->res);
    pn__chan_push(r->chan, r->msg);
    pn__chan_unref(r->chan);
    free(r);
    return NULL;
}

pn_err pn__resolve_start(pn_loop *l, pn__h *h, const char *name) {
    pn__msg *m = calloc(1, sizeof *m);
    if (!m) return PN_E_LIMIT;
    m->handle = h->id;
    m->seq = h->seq;
    if (special_invalid(name)) {
        m->gai_err = EAI_NONAME;
        return pn__chan_push(l->chan, m) ? PN_OK : PN_E_CLOSED;
    }
    size_t n = strlen(name);
    req *r = malloc(sizeof *r + n + 1);
    if (!r) {
        free(m);
        return PN_E_LIMIT;
    }
    memcpy(r->name, name, n + 1);
    r->chan = l->chan;
    r->msg = m;
    pthread_mutex_lock(&l->chan->mu);
    l->chan->refs++;
    pthread_mutex_unlock(&l->chan->mu);
    if (pb_thread_detached(resolve_thread, r) != 0) {
        pn__chan_unref(l->chan);
        free(m);
        free(r);
        return PN_E_LIMIT;
    }
    return PN_OK;
}

static pn_err gai_to_err(int g) {
    switch (g) {
    case EAI_NONAME:
#ifdef EAI_NODATA
    case EAI_NODATA:
#endif
#ifdef EAI_ADDRFAMILY
    case EAI_ADDRFAMILY:
#endif
        return PN_E_NOT_FOUND;
    case EAI_MEMORY: return PN_E_LIMIT;
    default: return PN_E_IO;
    }
}

/* The numeric, de-duplicated addresses of res (owned by the caller: pb_strv_free). */
static bool numeric_list(const struct addrinfo *res, char ***out, size_t *n) {
    char **v = NULL;
    size_t cap = 0;
    *n = 0;
    for (const struct addrinfo *a = res; a; a = a->ai_next) {
        char buf[NI_MAXHOST];
        if (getnameinfo(a->ai_addr, a->ai_addrlen, buf, sizeof buf, NULL, 0, NI_NUMERICHOST))
            continue;
        bool dup = false;
        for (size_t i = 0; i < *n && !dup; i++)
            dup = strcmp(v[i], buf) == 0;
        if (dup) continue;
        char *s = strdup(buf);
        char **slot = s ? pb_push(&v, n, &cap, sizeof *v, 4) : NULL;
        if (!slot) {
            free(s);
            pb_strv_free(v, *n);
            return false;
        }
        *slot = s;
    }
    *out = v;
    return true;
}

void pn__resolve_result(pn_loop *l, pn__msg *m) {
    pn__h *h = m->handle && m->handle <= l->o.max_handles ? l->tab[m->handle - 1] : NULL;
    if (!h || h->seq != m->seq || h->settling) return; /* cancelled or closed meanwhile */
    if (h->kind == PN__STREAM) {
        if (h->state == PN__S_RESOLVING) pn__stream_addrs(l, h, m->gai_err, m->res);
        return;
    }
    if (m->gai_err != 0) {
        char d[200];
        snprintf(d, sizeof d, "cannot resolve %s: %s", h->host, gai_strerror(m->gai_err));
        pn__queue(l, h, PN_EV_RESOLVED, gai_to_err(m->gai_err), d);
        return;
    }
    if (!numeric_list(m->res, &h->raddrs, &h->nraddrs)) {
        pn__queue(l, h, PN_EV_RESOLVED, PN_E_LIMIT, "out of memory listing the addresses");
        return;
    }
    if (h->nraddrs == 0) {
        char d[200];
        snprintf(d, sizeof d, "%s has no address", h->host);
        pn__queue(l, h, PN_EV_RESOLVED, PN_E_NOT_FOUND, d);
        return;
    }
    pn__queue(l, h, PN_EV_RESOLVED, PN_OK, NULL);
}

pn_err pn__gai_err(int g) {
    return gai_to_err(g);
}

pn_err pn__resolve(void *ctx, const char *name, void *ud, pn_handle *out) {
    pn_loop *l = ctx;
    if (!out || !pn__name_ok(name)) return PN_E_INVALID;
    /* a lookup is itself traffic (a name can carry data): the policy sees it, port 0 */
    if (!l->o.policy || !l->o.policy(l->o.policy_ctx, name, NULL, 0)) return PN_E_DENIED;
    pn__h *h;
    pn_err e = pn__h_new(l, PN__RESOLVE, ud, &h);
    if (e != PN_OK) return e;
    if (!(h->host = strdup(name))) e = PN_E_LIMIT;
    if (e == PN_OK) e = pn__resolve_start(l, h, name);
    if (e != PN_OK) {
        pn__h_drop(l, h);
        return e;
    }
    *out = h->id;
    return PN_OK;
}

pn_err pn__resolve_cancel(void *ctx, pn_handle id) {
    pn_loop *l = ctx;
    pn__h *h = pn__h_get(l, id, PN__RESOLVE);
    if (!h) return PN_E_INVALID;
    if (h->settling) return PN_OK;
    h->quiet = true;
    pn__queue(l, h, PN_EV_RESOLVED, PN_E_CANCELLED, NULL);
    return PN_OK;
}
