/*
 * cache.c — the isolate cache: compiled programs keyed by (scope, digest, host
 * resource version), shared by every thread of a host, bounded by an LRU on bytes.
 * Entries are reference-counted programs: the cache holds one reference, each run
 * holds one, so eviction never frees a module a run is using. Only the compiled
 * module is shared; instances and file systems are per run (run.c).
 */
#include "room_int.h"

#include <stdlib.h>
#include <string.h>

static uint32_t hash_key(const char *s, size_t n) {
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < n; i++)
        h = (h ^ (uint8_t)s[i]) * 16777619u;
    return h;
}

bool pr_cache_init(pr_cache *c, size_t limit) {
    memset(c, 0, sizeof *c);
    c->nbuckets = 64;
    c->buckets = calloc(c->nbuckets, sizeof *c->buckets);
    if (!c->buckets) return false;
    if (pthread_mutex_init(&c->mu, NULL) != 0) {
        free(c->buckets);
        return false;
    }
    c->limit = limit;
    return true;
}

void pr_program_free_(pr_program *p) {
    pw_snapshot_free(p->snap);
    pthread_mutex_destroy(&p->snap_mu);
    pw_module_free(p->module);
    free(p->key);
    free(p->text);
    free(p);
}

void pr_program_release(pr_program *p) {
    if (p && atomic_fetch_sub(&p->refs, 1) == 1) pr_program_free_(p);
}

void pr_cache_destroy(pr_cache *c) {
    for (pr_program *p = c->lru_head, *next; p; p = next) {
        next = p->lru_next;
        p->in_cache = false;
        pr_program_release(p);
    }
    free(c->buckets);
    pthread_mutex_destroy(&c->mu);
}

static pr_program **slot_of(pr_cache *c, const char *key, size_t n) {
    pr_program **pp = &c->buckets[hash_key(key, n) & (c->nbuckets - 1)];
    while (*pp && !((*pp)->key_len == n && memcmp((*pp)->key, key, n) == 0))
        pp = &(*pp)->hnext;
    return pp;
}

static void lru_unlink(pr_cache *c, pr_program *p) {
    if (p->lru_prev)
        p->lru_prev->lru_next = p->lru_next;
    else
        c->lru_head = p->lru_next;
    if (p->lru_next)
        p->lru_next->lru_prev = p->lru_prev;
    else
        c->lru_tail = p->lru_prev;
    p->lru_prev = p->lru_next = NULL;
}

static void lru_push(pr_cache *c, pr_program *p) {
    p->lru_next = c->lru_head;
    p->lru_prev = NULL;
    if (c->lru_head) c->lru_head->lru_prev = p;
    c->lru_head = p;
    if (!c->lru_tail) c->lru_tail = p;
}

pr_program *pr_cache_get(pr_cache *c, const char *key, size_t key_len) {
    pthread_mutex_lock(&c->mu);
    pr_program *p = *slot_of(c, key, key_len);
    if (p) {
        atomic_fetch_add(&p->refs, 1);
        if (c->lru_head != p) {
            lru_unlink(c, p);
            lru_push(c, p);
        }
        c->st.hits++;
    } else {
        c->st.misses++;
    }
    pthread_mutex_unlock(&c->mu);
    return p;
}

static void grow_buckets(pr_cache *c) {
    size_t nb = c->nbuckets * 2;
    pr_program **b = calloc(nb, sizeof *b);
    if (!b) return; /* longer chains, still correct */
    for (size_t i = 0; i < c->nbuckets; i++) {
        for (pr_program *p = c->buckets[i], *next; p; p = next) {
            next = p->hnext;
            size_t j = hash_key(p->key, p->key_len) & (nb - 1);
            p->hnext = b[j];
            b[j] = p;
        }
    }
    free(c->buckets);
    c->buckets = b;
    c->nbuckets = nb;
}

static void evict(pr_cache *c, pr_program *p) {
    pr_program **pp = slot_of(c, p->key, p->key_len);
    *pp = p->hnext;
    p->hnext = NULL;
    lru_unlink(c, p);
    c->st.entries--;
    c->st.bytes -= p->bytes;
    c->st.evictions++;
    p->in_cache = false;
    pr_program_release(p);
}

pr_program *pr_cache_put(pr_cache *c, pr_program *p) {
    pthread_mutex_lock(&c->mu);
    pr_program **pp = slot_of(c, p->key, p->key_len);
    if (*pp) {
        /* Another thread compiled the same program first: use that one. */
        pr_program *q = *pp;
        atomic_fetch_add(&q->refs, 1);
        pthread_mutex_unlock(&c->mu);
        pr_program_release(p);
        return q;
    }
    if (p->bytes > c->limit) { /* too big to cache at all: run it uncached */
        pthread_mutex_unlock(&c->mu);
        return p;
    }
    atomic_fetch_add(&p->refs, 1);
    p->hnext = NULL;
    *pp = p;
    p->in_cache = true;
    lru_push(c, p);
    c->st.entries++;
    c->st.bytes += p->bytes;
    while (c->st.bytes > c->limit && c->lru_tail && c->lru_tail != p)
        evict(c, c->lru_tail);
    if (c->st.entries > c->nbuckets) grow_buckets(c);
    pthread_mutex_unlock(&c->mu);
    return p;
}

void pr_host_cache_stats(pr_host *h, pr_cache_stats *out) {
    pthread_mutex_lock(&h->cache.mu);
    *out = h->cache.st;
    pthread_mutex_unlock(&h->cache.mu);
}

void pr_cache_charge(pr_cache *c, pr_program *p, size_t extra) {
    pthread_mutex_lock(&c->mu);
    p->bytes += extra;
    if (p->in_cache) {
        c->st.bytes += extra;
        while (c->st.bytes > c->limit && c->lru_tail && c->lru_tail != p)
            evict(c, c->lru_tail);
    }
    pthread_mutex_unlock(&c->mu);
}
