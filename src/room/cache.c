/*
 * cache.c — the isolate cache: compiled programs keyed by (scope, digest, host
 * resource version), shared by every thread of a host, bounded by an LRU on bytes.
 * Entries are reference-counted programs: the cache holds one reference, each run
 * holds one, so eviction never frees a module a run is using. Only the compiled
 * module is shared; instances and file systems are per run (run.c).
 *
 * A second index, the text index, finds a cached program by its Base64 text: programs
 * whose text is JSON-plain are also chained by (text length, sample hash), so that
 * `isolate serve` can recognise a known program text inside a request line with one
 * memcmp (pr__cache_find_text). It holds no bytes of its own: the texts belong to their
 * programs and are already charged to the cache's budget (pr_program.bytes); an
 * evicted program leaves both indexes at once.
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

uint64_t pr__cache_text_sample(const char *s, size_t n) {
    uint64_t h = 0x9E3779B97F4A7C15ull ^ (uint64_t)n;
    if (n < 64) {
        for (size_t i = 0; i < n; i++)
            h = (h ^ (uint8_t)s[i]) * 0x100000001B3ull;
    } else {
        for (size_t k = 0; k < 8; k++) {
            uint64_t w;
            memcpy(&w, s + (k == 7 ? n - 8 : (n - 8) / 7 * k), 8);
            h = (h ^ w) * 0x100000001B3ull;
            h ^= h >> 29;
        }
    }
    h ^= h >> 33;
    h *= 0xFF51AFD7ED558CCDull;
    return h ^ (h >> 33);
}

/* Raw JSON string bytes equal to the text are exactly the text: no quote, backslash,
 * control character or non-ASCII byte in it. */
static bool json_plain(const char *s, size_t n) {
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)s[i];
        if (ch < 0x20 || ch > 0x7E || ch == '"' || ch == '\\') return false;
    }
    return true;
}

bool pr__cache_init(pr_cache *c, size_t limit) {
    memset(c, 0, sizeof *c);
    c->nbuckets = 64;
    c->buckets = calloc(c->nbuckets, sizeof *c->buckets);
    c->tbuckets = calloc(c->nbuckets, sizeof *c->tbuckets);
    if (!c->buckets || !c->tbuckets || pthread_mutex_init(&c->mu, NULL) != 0) {
        free(c->buckets);
        free(c->tbuckets);
        return false;
    }
    c->limit = limit;
    return true;
}

void pr__program_free_(pr_program *p) {
    pw_snapshot_free(p->snap);
    pthread_mutex_destroy(&p->snap_mu);
    pw_module_free(p->module);
    free(p->key);
    free(p->text);
    free(p);
}

void pr_program_release(pr_program *p) {
    if (p && atomic_fetch_sub(&p->refs, 1) == 1) pr__program_free_(p);
}

void pr__cache_destroy(pr_cache *c) {
    for (pr_program *p = c->lru_head, *next; p; p = next) {
        next = p->lru_next;
        p->in_cache = false;
        pr_program_release(p);
    }
    free(c->buckets);
    free(c->tbuckets);
    pthread_mutex_destroy(&c->mu);
}

static pr_program **slot_of(pr_cache *c, const char *key, size_t n) {
    pr_program **pp = &c->buckets[hash_key(key, n) & (c->nbuckets - 1)];
    while (*pp && !((*pp)->key_len == n && memcmp((*pp)->key, key, n) == 0))
        pp = &(*pp)->hnext;
    return pp;
}

static pr_program **tslot_of(pr_cache *c, const pr_program *p) {
    pr_program **pp = &c->tbuckets[p->text_sample & (c->nbuckets - 1)];
    while (*pp && *pp != p)
        pp = &(*pp)->tnext;
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

pr_program *pr__cache_get(pr_cache *c, const char *key, size_t key_len) {
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
    pr_program **b = calloc(nb, sizeof *b), **tb = calloc(nb, sizeof *tb);
    if (!b || !tb) { /* longer chains, still correct */
        free(b);
        free(tb);
        return;
    }
    for (size_t i = 0; i < c->nbuckets; i++) {
        for (pr_program *p = c->buckets[i], *next; p; p = next) {
            next = p->hnext;
            size_t j = hash_key(p->key, p->key_len) & (nb - 1);
            p->hnext = b[j];
            b[j] = p;
        }
        for (pr_program *p = c->tbuckets[i], *next; p; p = next) {
            next = p->tnext;
            size_t j = p->text_sample & (nb - 1);
            p->tnext = tb[j];
            tb[j] = p;
        }
    }
    free(c->buckets);
    free(c->tbuckets);
    c->buckets = b;
    c->tbuckets = tb;
    c->nbuckets = nb;
}

static void evict(pr_cache *c, pr_program *p) {
    pr_program **pp = slot_of(c, p->key, p->key_len);
    *pp = p->hnext;
    p->hnext = NULL;
    if (p->text_plain) {
        pr_program **tp = tslot_of(c, p);
        if (*tp) *tp = p->tnext;
        p->tnext = NULL;
    }
    lru_unlink(c, p);
    c->st.entries--;
    c->st.bytes -= p->bytes;
    c->st.evictions++;
    p->in_cache = false;
    pr_program_release(p);
}

pr_program *pr__cache_put(pr_cache *c, pr_program *p) {
    /* Outside the lock: one pass over the text, once per compiled program. */
    p->text_plain = p->text && p->text_len && json_plain(p->text, p->text_len);
    if (p->text_plain) p->text_sample = pr__cache_text_sample(p->text, p->text_len);
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
    if (p->text_plain) {
        pr_program **tb = &c->tbuckets[p->text_sample & (c->nbuckets - 1)];
        p->tnext = *tb;
        *tb = p;
    }
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

void pr__cache_charge(pr_cache *c, pr_program *p, size_t extra) {
    pthread_mutex_lock(&c->mu);
    p->bytes += extra;
    if (p->in_cache) {
        c->st.bytes += extra;
        while (c->st.bytes > c->limit && c->lru_tail && c->lru_tail != p)
            evict(c, c->lru_tail);
    }
    pthread_mutex_unlock(&c->mu);
}

pr_program *pr__cache_find_text(pr_cache *c, const char *s, size_t n) {
    enum { MAXC = 4 }; /* candidates tried; more collisions take the full path */
    pr_program *cand[MAXC];
    size_t nc = 0;
    uint64_t h = pr__cache_text_sample(s, n);
    pthread_mutex_lock(&c->mu);
    for (pr_program *p = c->tbuckets[h & (c->nbuckets - 1)]; p && nc < MAXC; p = p->tnext)
        if (p->text_sample == h && p->text_len == n) {
            atomic_fetch_add(&p->refs, 1);
            cand[nc++] = p;
        }
    pthread_mutex_unlock(&c->mu);
    /* The texts are immutable and the references keep them alive: compare unlocked. */
    pr_program *hit = NULL;
    for (size_t i = 0; i < nc; i++) {
        if (!hit && memcmp(cand[i]->text, s, n) == 0)
            hit = cand[i];
        else
            pr_program_release(cand[i]);
    }
    if (hit) {
        pthread_mutex_lock(&c->mu);
        c->st.line_hits++;
        pthread_mutex_unlock(&c->mu);
    }
    return hit;
}

bool pr__cache_claim_text(pr_cache *c, const pr_program *p) {
    pthread_mutex_lock(&c->mu);
    bool cached = p->in_cache && p->text_plain;
    if (cached) {
        c->st.line_hits++;
        c->st.line_hint_hits++;
    }
    pthread_mutex_unlock(&c->mu);
    return cached;
}

void pr__cache_count_text_hit(pr_cache *c) {
    pthread_mutex_lock(&c->mu);
    c->st.text_hits++;
    pthread_mutex_unlock(&c->mu);
}
