/*
 * timers.c — the loop's deadlines: one min-heap holds user timers and the connect
 * deadlines of streams, plus the timer and clock calls of the ports table.
 *
 * Owns: l->heap. Entries are removed lazily: a cancelled timer or a settled stream
 * leaves its entry behind, recognised as stale by its handle's sequence number. The
 * heap is compacted when stale entries outnumber live handles, so a guest that sets
 * and cancels timers in a loop cannot grow it without bound.
 */
#include <limits.h>
#include <stdlib.h>

#include "net/net_int.h"
#include "peri/base.h"

uint64_t pn__now_ms(void *ctx) {
    (void)ctx;
    return (uint64_t)pb_mono_ms();
}

int64_t pn__wall_ms(void *ctx) {
    (void)ctx;
    return pb_wall_ms();
}

static bool ent_less(const pn__timer_ent *a, const pn__timer_ent *b) {
    return a->at < b->at || (a->at == b->at && a->seq < b->seq);
}

static void sift_up(pn__timer_ent *hp, size_t i) {
    while (i > 0) {
        size_t p = (i - 1) / 2;
        if (!ent_less(&hp[i], &hp[p])) break;
        pn__timer_ent t = hp[i];
        hp[i] = hp[p];
        hp[p] = t;
        i = p;
    }
}

static void sift_down(pn__timer_ent *hp, size_t n, size_t i) {
    for (;;) {
        size_t l = 2 * i + 1, r = l + 1, m = i;
        if (l < n && ent_less(&hp[l], &hp[m])) m = l;
        if (r < n && ent_less(&hp[r], &hp[m])) m = r;
        if (m == i) return;
        pn__timer_ent t = hp[i];
        hp[i] = hp[m];
        hp[m] = t;
        i = m;
    }
}

static bool ent_live(pn_loop *l, const pn__timer_ent *e) {
    pn__h *h = e->handle && e->handle <= l->o.max_handles ? l->tab[e->handle - 1] : NULL;
    return h && h->seq == e->seq && !h->settling;
}

static void compact(pn_loop *l) {
    size_t k = 0;
    for (size_t i = 0; i < l->nheap; i++)
        if (ent_live(l, &l->heap[i])) l->heap[k++] = l->heap[i];
    l->nheap = k;
    for (size_t i = k / 2 + 1; i-- > 0;)
        sift_down(l->heap, l->nheap, i);
}

pn_err pn__heap_push(pn_loop *l, uint64_t at, pn__h *h) {
    if (l->nheap >= 2 * (size_t)l->o.max_handles + 64) compact(l);
    if (l->nheap == l->heapcap) {
        pn__timer_ent *n = pb_grow(l->heap, &l->heapcap, sizeof *n, 64);
        if (!n) return PN_E_LIMIT;
        l->heap = n;
    }
    l->heap[l->nheap] = (pn__timer_ent){.at = at, .handle = h->id, .seq = h->seq};
    sift_up(l->heap, l->nheap++);
    return PN_OK;
}

int pn__heap_wait(pn_loop *l, int cap) {
    while (l->nheap && !ent_live(l, &l->heap[0])) {
        l->heap[0] = l->heap[--l->nheap];
        sift_down(l->heap, l->nheap, 0);
    }
    if (!l->nheap) return cap;
    uint64_t now = (uint64_t)pb_mono_ms(), at = l->heap[0].at;
    uint64_t d = at > now ? at - now : 0;
    if (d > INT_MAX) d = INT_MAX;
    return cap < 0 || (int)d < cap ? (int)d : cap;
}

void pn__heap_expire(pn_loop *l) {
    uint64_t now = (uint64_t)pb_mono_ms();
    while (l->nheap && l->heap[0].at <= now) {
        pn__timer_ent e = l->heap[0];
        l->heap[0] = l->heap[--l->nheap];
        sift_down(l->heap, l->nheap, 0);
        if (!ent_live(l, &e)) continue;
        pn__h *h = l->tab[e.handle - 1];
        if (h->kind == PN__TIMER)
            pn__queue(l, h, PN_EV_TIMER, PN_OK, NULL);
        else if (h->kind == PN__STREAM)
            pn__stream_deadline(l, h);
    }
}

pn_err pn__timer_set(void *ctx, uint64_t delay_ms, void *ud, pn_handle *out) {
    pn_loop *l = ctx;
    if (!out) return PN_E_INVALID;
    pn__h *h;
    pn_err e = pn__h_new(l, PN__TIMER, ud, &h);
    if (e != PN_OK) return e;
    uint64_t now = (uint64_t)pb_mono_ms();
    uint64_t at = delay_ms > UINT64_MAX - now ? UINT64_MAX : now + delay_ms;
    if ((e = pn__heap_push(l, at, h)) != PN_OK) {
        pn__h_drop(l, h); /* never handed out */
        return e;
    }
    *out = h->id;
    return PN_OK;
}

pn_err pn__timer_cancel(void *ctx, pn_handle id) {
    pn_loop *l = ctx;
    pn__h *h = pn__h_get(l, id, PN__TIMER);
    if (!h) return PN_E_INVALID;
    if (h->settling) return PN_OK; /* already fired or cancelled: that event follows */
    h->quiet = true;
    pn__queue(l, h, PN_EV_TIMER, PN_E_CANCELLED, NULL);
    return PN_OK;
}
