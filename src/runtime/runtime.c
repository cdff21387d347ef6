/*
 * runtime.c — session_id -> handle map with per-session sequence numbers.
 *
 * An open-addressing hash table would be faster, but the host keeps tens of
 * sessions, so a chained table with a small fixed bucket count is plenty and keeps
 * removal trivial.
 */
#include "peri/runtime.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#define PRT_BUCKETS 64

typedef struct prt_entry {
    struct prt_entry *next;
    char *id;
    void *handle;
    uint64_t seq;
} prt_entry;

struct prt_runtime {
    pthread_mutex_t mu;
    prt_retain_fn retain;
    prt_entry *buckets[PRT_BUCKETS];
    atomic_size_t count; /* changed under mu with the table; read without it */
};

static unsigned hash(const char *s) {
    unsigned h = 2166136261u; /* FNV-1a */
    while (*s)
        h = (h ^ (unsigned char)*s++) * 16777619u;
    return h % PRT_BUCKETS;
}

static prt_entry **slot(prt_runtime *rt, const char *id) {
    prt_entry **p = &rt->buckets[hash(id)];
    while (*p && strcmp((*p)->id, id) != 0)
        p = &(*p)->next;
    return p;
}

prt_runtime *prt_new(prt_retain_fn retain) {
    prt_runtime *rt = calloc(1, sizeof *rt);
    if (!rt) return NULL;
    if (pthread_mutex_init(&rt->mu, NULL) != 0) {
        free(rt);
        return NULL;
    }
    rt->retain = retain;
    return rt;
}

void prt_free(prt_runtime *rt) {
    if (!rt) return;
    for (int i = 0; i < PRT_BUCKETS; i++) {
        for (prt_entry *e = rt->buckets[i], *n; e; e = n) {
            n = e->next;
            free(e->id);
            free(e);
        }
    }
    pthread_mutex_destroy(&rt->mu);
    free(rt);
}

int prt_insert(prt_runtime *rt, const char *session_id, void *handle) {
    prt_entry *e = calloc(1, sizeof *e);
    char *id = strdup(session_id);
    if (!e || !id) {
        free(e);
        free(id);
        return -1;
    }
    e->id = id;
    e->handle = handle;
    pthread_mutex_lock(&rt->mu);
    prt_entry **p = slot(rt, session_id);
    int rc = 1;
    if (!*p) {
        *p = e;
        rt->count++;
        rc = 0;
    }
    pthread_mutex_unlock(&rt->mu);
    if (rc) {
        free(id);
        free(e);
    }
    return rc;
}

void *prt_acquire(prt_runtime *rt, const char *session_id) {
    void *h = NULL;
    pthread_mutex_lock(&rt->mu);
    prt_entry *e = *slot(rt, session_id);
    if (e) {
        h = e->handle;
        if (rt->retain) rt->retain(h);
    }
    pthread_mutex_unlock(&rt->mu);
    return h;
}

void *prt_remove(prt_runtime *rt, const char *session_id) {
    void *h = NULL;
    prt_entry *e;
    pthread_mutex_lock(&rt->mu);
    prt_entry **p = slot(rt, session_id);
    e = *p;
    if (e) {
        *p = e->next;
        rt->count--;
        h = e->handle;
    }
    pthread_mutex_unlock(&rt->mu);
    if (e) {
        free(e->id);
        free(e);
    }
    return h;
}

uint64_t prt_next_seq(prt_runtime *rt, const char *session_id) {
    uint64_t s = 0;
    pthread_mutex_lock(&rt->mu);
    prt_entry *e = *slot(rt, session_id);
    if (e) s = ++e->seq;
    pthread_mutex_unlock(&rt->mu);
    return s;
}

uint64_t prt_next_seq_of(prt_runtime *rt, const char *session_id, const void *handle) {
    uint64_t s = 0;
    pthread_mutex_lock(&rt->mu);
    prt_entry *e = *slot(rt, session_id);
    if (e && e->handle == handle) s = ++e->seq;
    pthread_mutex_unlock(&rt->mu);
    return s;
}

size_t prt_list(prt_runtime *rt, char **ids, size_t max) {
    size_t n = 0;
    pthread_mutex_lock(&rt->mu);
    for (int i = 0; i < PRT_BUCKETS && n < max; i++) {
        for (prt_entry *e = rt->buckets[i]; e && n < max; e = e->next) {
            ids[n] = strdup(e->id);
            if (ids[n]) n++;
        }
    }
    pthread_mutex_unlock(&rt->mu);
    return n;
}

size_t prt_count(prt_runtime *rt) {
    return atomic_load(&rt->count);
}
