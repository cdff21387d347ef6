/*
 * host.c — the application's room host: granted LOADER list, existing bindings,
 * limits, the isolate cache, the watchdog and the idle mapping pools. Owns no global
 * state.
 */
#include "room_int.h"

#include <stdlib.h>
#include <string.h>

const char *pr_host_resource_version(void) {
    return "peri-c-room/0.1.0";
}

static bool copy_list(char ***dst, size_t *n, const char *const *src, size_t count,
                      const char *dflt) {
    if (!src) {
        src = &dflt;
        count = 1;
    }
    *dst = calloc(count ? count : 1, sizeof **dst);
    if (!*dst) return false;
    for (size_t i = 0; i < count; i++) {
        (*dst)[i] = strdup(src[i]);
        if (!(*dst)[i]) return false;
        *n = i + 1;
    }
    return true;
}

static void free_list(char **l, size_t n) {
    for (size_t i = 0; i < n; i++)
        free(l[i]);
    free(l);
}

pr_host *pr_host_new(const pr_host_config *cfg, pr_error *err) {
    pr_host_config d = {0};
    if (!cfg) cfg = &d;
    if (cfg->cpu_ms > PR_CPU_MS_MAX && !cfg->beyond_contract) {
        pr__err_set(err, PR_KIND_VIOLATION, "CPU 时间上限不能超过 %u ms", PR_CPU_MS_MAX);
        return NULL;
    }
    pr_host *h = calloc(1, sizeof *h);
    if (!h) goto nomem;
    h->cpu_ms = cfg->cpu_ms ? cfg->cpu_ms : PR_CPU_MS_MAX;
    h->wall_ms = cfg->wall_ms ? cfg->wall_ms : PR_WALL_MS_DEFAULT;
    h->memory_cap = cfg->memory_cap ? cfg->memory_cap : PR_MEMORY_CAP_DEFAULT;
    h->deterministic = !cfg->real_clocks;
    h->beyond_contract = cfg->beyond_contract;
    h->engine = cfg->engine;
    h->bounds_checks = cfg->bounds_checks;
    h->code_cache_bytes = cfg->code_cache_bytes;
    if (cfg->code_cache_dir && !(h->code_cache_dir = strdup(cfg->code_cache_dir))) goto nomem;
    if (!copy_list(&h->granted, &h->ngranted, cfg->granted, cfg->ngranted, "LOADER")) goto nomem;
    if (cfg->bound) {
        if (!copy_list(&h->bound, &h->nbound, cfg->bound, cfg->nbound, NULL)) goto nomem;
    } else {
        if (!copy_list(&h->bound, &h->nbound, (const char *const *)h->granted, h->ngranted, NULL))
            goto nomem;
    }
    if (!pr__cache_init(&h->cache, cfg->cache_bytes ? cfg->cache_bytes : PR_CACHE_BYTES_DEFAULT))
        goto nomem;
    if (!pr__watchdog_init(&h->wd, h->cpu_ms, h->wall_ms)) {
        pr__cache_destroy(&h->cache);
        goto nomem;
    }
    if (pthread_mutex_init(&h->pool_mu, NULL) != 0) {
        pr__watchdog_destroy(&h->wd);
        pr__cache_destroy(&h->cache);
        goto nomem;
    }
    return h;
nomem:
    if (h) {
        free_list(h->granted, h->ngranted);
        free_list(h->bound, h->nbound);
        free(h->code_cache_dir);
        free(h);
    }
    pr__err_set(err, PR_KIND_RUN_FAILED, "隔离运行失败：内存不足");
    return NULL;
}

void pr_host_free(pr_host *h) {
    if (!h) return;
    pr__watchdog_destroy(&h->wd);
    pr__cache_destroy(&h->cache);
    for (size_t i = 0; i < h->npools; i++)
        pw_pool_free(h->pools[i]);
    pthread_mutex_destroy(&h->pool_mu);
    free_list(h->granted, h->ngranted);
    free_list(h->bound, h->nbound);
    free(h->code_cache_dir);
    free(h);
}

void pr_host_limits(const pr_host *h, pr_limits *out) {
    out->cpu_ms = h->cpu_ms;
    out->wall_ms = h->wall_ms;
    out->memory_cap = h->memory_cap;
    out->output_max = PR_OUTPUT_MAX;
}

static bool in_list(char *const *l, size_t n, pr_str s) {
    for (size_t i = 0; i < n; i++)
        if (strlen(l[i]) == s.len && memcmp(l[i], s.ptr, s.len) == 0) return true;
    return false;
}

bool pr__host_granted(const pr_host *h, pr_str runner) {
    return in_list(h->granted, h->ngranted, runner);
}

bool pr__host_bound(const pr_host *h, pr_str runner) {
    return in_list(h->bound, h->nbound, runner);
}

/* A pool is used by one run at a time; the mutex hands it from one thread to the
 * next. Taking one is two uncontended lock operations per run, against the mm-lock
 * traffic and TLB shootdowns of mapping a store's stacks and memory afresh. */
pw_pool *pr__host_pool_take(pr_host *h) {
    pw_pool *p = NULL;
    pthread_mutex_lock(&h->pool_mu);
    if (h->npools) p = h->pools[--h->npools];
    pthread_mutex_unlock(&h->pool_mu);
    return p ? p : pw_pool_new();
}

void pr__host_pool_put(pr_host *h, pw_pool *p) {
    if (!p) return;
    pthread_mutex_lock(&h->pool_mu);
    if (h->npools < PR_POOLS_MAX) {
        h->pools[h->npools++] = p;
        p = NULL;
    }
    pthread_mutex_unlock(&h->pool_mu);
    pw_pool_free(p);
}
