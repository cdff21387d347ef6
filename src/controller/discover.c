/*
 * discover.c — model discovery for the model selector: the models each configured
 * provider reports (pm_list_models), cached for PCT_DISCOVER_TTL_MS.
 *
 * The listing runs on a thread of its own, never on the thread that reads requests: a
 * session opening (its own thread) waits for it at most PCT_DISCOVER_WAIT_MS, and only
 * while no listing has finished yet; later refreshes happen behind a stale cache. A
 * provider whose listing fails adds nothing (the selector keeps the configured models)
 * and says so on stderr. The thread is counted with the MCP connectors, so pct_free
 * waits for it; each provider's request is bounded (PCT_DISCOVER_HTTP_MS).
 */
#include "controller/ctl_impl.h"

#include "peri/json.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define PCT_DISCOVER_TTL_MS  (5 * 60 * 1000)
#define PCT_DISCOVER_WAIT_MS 2000
#define PCT_DISCOVER_HTTP_MS 5000
#define PCT_DISCOVER_MAX     200 /* choices added to the selector at most */

/* Lists one provider into arr as "<name>:<id>". */
static void list_one(const pct_controller *c, const pag_settings *st, const char *name, pj_t *arr) {
    char spec[160], why[300];
    snprintf(spec, sizeof spec, "%.100s:x", name);
    pm_config cfg;
    const char *model = NULL;
    if (pag_settings_model_spec(st, spec, &cfg, &model, why, sizeof why) != 0) return;
    char **ids = NULL;
    size_t n = 0;
    pm_error e;
    if (pm_list_models(&cfg, PCT_DISCOVER_HTTP_MS, &ids, &n, &e) != PM_OK) {
        pb_log(&c->log, PB_LOG_WARN,
               "listing the models of provider %s failed: %s (the model selector shows the "
               "configured models only)",
               name, e.message);
        return;
    }
    for (size_t i = 0; i < n && pj_array_size(arr) < PCT_DISCOVER_MAX; i++) {
        char full[300];
        snprintf(full, sizeof full, "%s:%s", name, ids[i]);
        pj_array_append_new(arr, pj_string(full));
    }
    pm_models_free(ids, n);
}

static void *discover_main(void *arg) {
    pct_controller *c = arg;
    const pag_settings *st = c->settings;
    pj_t *arr = pj_array();
    if (arr) {
        if (st->openai.present) list_one(c, st, "openai", arr);
        if (st->anthropic.present) list_one(c, st, "anthropic", arr);
        for (size_t i = 0; i < st->nproviders; i++)
            if (st->providers[i].p.present) list_one(c, st, st->providers[i].name, arr);
    }
    char *txt = arr ? pj_dumps(arr, PJ_COMPACT) : NULL;
    pj_decref(arr);
    pthread_mutex_lock(&c->mu);
    if (txt) {
        free(c->disc_json);
        c->disc_json = txt;
    }
    c->disc_at = pb_mono_ms();
    c->disc_done = true;
    c->disc_running = false;
    c->connectors--;
    pthread_cond_broadcast(&c->cv);
    pthread_mutex_unlock(&c->mu);
    return NULL;
}

/* Starts a listing when none runs and the cache is old or missing (c->mu held). */
static void kick_locked(pct_controller *c) {
    if (c->disc_running) return;
    if (c->disc_done && pb_mono_ms() - c->disc_at < PCT_DISCOVER_TTL_MS &&
        c->disc_settings == c->settings)
        return;
    c->disc_settings = c->settings; /* a new settings version (authenticate) lists again */
    c->disc_running = true;
    c->connectors++;
    if (pb_thread_detached(discover_main, c) != 0) {
        c->disc_running = false;
        c->connectors--;
    }
}

void pct__discover(pct_controller *c, bool wait) {
    struct timespec dl = pb_deadline(CLOCK_REALTIME, PCT_DISCOVER_WAIT_MS);
    pthread_mutex_lock(&c->mu);
    kick_locked(c);
    while (wait && c->disc_running && !c->disc_done &&
           pthread_cond_timedwait(&c->cv, &c->mu, &dl) == 0) {
    }
    pthread_mutex_unlock(&c->mu);
}

char *pct__discovered(pct_controller *c) {
    pthread_mutex_lock(&c->mu);
    char *t = c->disc_json ? strdup(c->disc_json) : NULL;
    pthread_mutex_unlock(&c->mu);
    return t;
}
