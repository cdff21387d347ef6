/*
 * telemetry.c — the native host's telemetry: one OpenTelemetry span per turn (built by
 * the agent layer, pag_telemetry_span_json) POSTed as OTLP/HTTP JSON to the user's
 * settings.telemetry.url by one exporter thread, with the host's token
 * (pct_config.telemetry_token) as a bearer credential.
 *
 * Invariants: a side channel, as in the WebAssembly form. A turn only queues its span
 * (never waits); at most PCT_TEL_QUEUE spans wait (later ones are dropped and counted);
 * an export is bounded by PCT_TEL_TIMEOUT_S; a failure is logged and forgotten. pct_free
 * stops the thread without waiting on a collector (a transfer in flight is aborted).
 */
#include "controller/ctl_impl.h"

#include "peri/json.h"
#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#define PCT_TEL_QUEUE     4
#define PCT_TEL_TIMEOUT_S 10

struct pct_tel {
    pb_logger log;
    char *url, *auth; /* auth: "Authorization: Bearer ..." (wiped at free), NULL: none */
    char service[128];
    pthread_mutex_t mu;
    pthread_cond_t cv;
    char *queue[PCT_TEL_QUEUE];
    size_t head, count;
    bool stop;
    unsigned long long dropped;
    pthread_t thread;
};

static int abort_when_stopped(void *ud, curl_off_t a, curl_off_t b, curl_off_t c, curl_off_t d) {
    (void)a, (void)b, (void)c, (void)d;
    pct_tel *t = ud;
    pthread_mutex_lock(&t->mu);
    bool stop = t->stop;
    pthread_mutex_unlock(&t->mu);
    return stop ? 1 : 0;
}

static size_t discard(char *p, size_t s, size_t n, void *ud) {
    (void)p, (void)ud;
    return s * n;
}

static void post(pct_tel *t, const char *body) {
    CURL *e = curl_easy_init();
    struct curl_slist *h = curl_slist_append(NULL, "Content-Type: application/json");
    if (h && t->auth) {
        struct curl_slist *h2 = curl_slist_append(h, t->auth);
        if (h2) h = h2;
    }
    if (!e || !h) {
        pb_log(&t->log, PB_LOG_WARN, "telemetry: export not started: out of memory");
        curl_slist_free_all(h);
        if (e) curl_easy_cleanup(e);
        return;
    }
    curl_easy_setopt(e, CURLOPT_URL, t->url);
    curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(e, CURLOPT_POSTFIELDS, body);
    curl_easy_setopt(e, CURLOPT_HTTPHEADER, h);
    curl_easy_setopt(e, CURLOPT_TIMEOUT, (long)PCT_TEL_TIMEOUT_S);
    curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, discard);
    curl_easy_setopt(e, CURLOPT_NOPROGRESS, 0L);
    curl_easy_setopt(e, CURLOPT_XFERINFOFUNCTION, abort_when_stopped);
    curl_easy_setopt(e, CURLOPT_XFERINFODATA, t);
    CURLcode rc = curl_easy_perform(e);
    long status = 0;
    curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &status);
    if (rc == CURLE_ABORTED_BY_CALLBACK) {
        /* the host is exiting */
    } else if (rc != CURLE_OK) {
        pb_log(&t->log, PB_LOG_WARN,
               "telemetry: export failed: %s (side channel: no turn is affected)",
               curl_easy_strerror(rc));
    } else if (status < 200 || status >= 300) {
        pb_log(&t->log, PB_LOG_WARN,
               "telemetry: the collector answered HTTP %ld (side channel: no turn is affected)",
               status);
    }
    curl_slist_free_all(h);
    curl_easy_cleanup(e);
}

static void *exporter(void *ud) {
    pct_tel *t = ud;
    pthread_mutex_lock(&t->mu);
    for (;;) {
        while (!t->stop && t->count == 0)
            pthread_cond_wait(&t->cv, &t->mu);
        if (t->stop) break;
        char *body = t->queue[t->head];
        t->head = (t->head + 1) % PCT_TEL_QUEUE;
        t->count--;
        pthread_mutex_unlock(&t->mu);
        post(t, body);
        free(body);
        pthread_mutex_lock(&t->mu);
    }
    pthread_mutex_unlock(&t->mu);
    return NULL;
}

int pct__tel_new(pct_controller *c, const pct_config *cfg, pct_error *err) {
    const pag_settings *st = cfg->settings;
    pj_t *tj = st ? pj_object_get(st->doc, "telemetry") : NULL;
    if (!tj) return 0;
    const char *u = pj_string_value(pj_object_get(tj, "url"));
    pj_t *svc = pj_object_get(tj, "serviceName");
    if (!pj_is_object(tj) || !u ||
        (strncmp(u, "http://", 7) != 0 && strncmp(u, "https://", 8) != 0) ||
        (svc &&
         (!pj_is_string(svc) || pj_string_length(svc) == 0 || pj_string_length(svc) > 100))) {
        err->status = PCT_BAD_ARG;
        snprintf(err->message, sizeof err->message,
                 "settings.telemetry must be {\"url\": \"http(s)://...\" (an OTLP/HTTP traces "
                 "endpoint), \"serviceName\": 1..100 bytes}");
        return -1;
    }
    pct_tel *t = calloc(1, sizeof *t);
    const char *tok = cfg->telemetry_token;
    size_t an = tok ? strlen(tok) + 32 : 0;
    if (!t || !(t->url = strdup(u)) || (tok && !(t->auth = malloc(an)))) {
        if (t) free(t->url);
        free(t);
        err->status = PCT_FAILED;
        snprintf(err->message, sizeof err->message, "out of memory");
        return -1;
    }
    if (tok) snprintf(t->auth, an, "Authorization: Bearer %s", tok);
    snprintf(t->service, sizeof t->service, "%s", svc ? pj_string_value(svc) : "peri-agent");
    t->log = c->log;
    pthread_mutex_init(&t->mu, NULL);
    pthread_cond_init(&t->cv, NULL);
    if (pthread_create(&t->thread, NULL, exporter, t) != 0) {
        pct__tel_free(t, false);
        err->status = PCT_FAILED;
        snprintf(err->message, sizeof err->message, "telemetry: cannot start its thread");
        return -1;
    }
    c->tel = t;
    return 0;
}

static void tel_release(pct_tel *t) {
    for (size_t i = 0; i < t->count; i++)
        free(t->queue[(t->head + i) % PCT_TEL_QUEUE]);
    if (t->auth) {
        memset(t->auth, 0, strlen(t->auth));
        free(t->auth);
    }
    free(t->url);
    pthread_mutex_destroy(&t->mu);
    pthread_cond_destroy(&t->cv);
    free(t);
}

void pct__tel_free(pct_tel *t, bool running) {
    if (!t) return;
    if (!running) { /* its thread never started */
        tel_release(t);
        return;
    }
    pthread_mutex_lock(&t->mu);
    t->stop = true;
    pthread_cond_signal(&t->cv);
    pthread_mutex_unlock(&t->mu);
    pthread_join(t->thread, NULL);
    tel_release(t);
}

void pct__tel_turn(pct_sess *s, const pag_turn_result *r, const char *model_spec) {
    pct_controller *c = s->c;
    pct_tel *t = c->tel;
    if (!t) return;
    uint8_t ids[24];
    if (getrandom(ids, sizeof ids, 0) != (ssize_t)sizeof ids) return;
    pag_telemetry_span sp = {.service = t->service,
                             .form = "native",
                             .session_id = s->id,
                             .turn_id = s->cur_turn_id,
                             .machine_id = c->machine_id,
                             .model_spec = model_spec,
                             .start_ms = s->tel_start_ms,
                             .end_ms = pb_wall_ms(),
                             .input_tokens = s->tel_in,
                             .output_tokens = s->tel_out,
                             .model_calls = s->tel_calls,
                             .result = r,
                             .ids = ids};
    char *body = pag_telemetry_span_json(&sp);
    if (!body) return;
    pthread_mutex_lock(&t->mu);
    if (t->count == PCT_TEL_QUEUE) {
        if (t->dropped++ % 100 == 0)
            pb_log(&t->log, PB_LOG_WARN,
                   "telemetry: %d spans wait already, this turn's is dropped (%llu so far)",
                   PCT_TEL_QUEUE, t->dropped);
        pthread_mutex_unlock(&t->mu);
        free(body);
        return;
    }
    t->queue[(t->head + t->count++) % PCT_TEL_QUEUE] = body;
    pthread_cond_signal(&t->cv);
    pthread_mutex_unlock(&t->mu);
}
