/*
 * cron.c — the cron middleware: scheduled prompts of one live session.
 *
 * What it declares: three tools (cron_create, cron_list, cron_delete; their descriptors
 * are in decl.c with every middleware's) and a timer (a thread of the caller-owned
 * pag_cron) that calls the host's fire function when a schedule is due. Schedules are
 * 5-field cron expressions (minute hour day-of-month month day-of-week, UTC; `*`, lists,
 * ranges, steps, names are not accepted) or intervals ("every 30s", "every 5m",
 * "every 2h", "@every 10m"; at least 1 s).
 *
 * Invariants:
 *   - no global state: everything is in the pag_cron its owner frees;
 *   - never two runs of one schedule at once: a due time while the previous run has not
 *     reported pag_cron_done is skipped and counted (cron_list shows it);
 *   - fire is never called with mu held, and never after pag_cron_stop returned;
 *   - nothing is persisted here: a new process starts with no schedule (the host tells
 *     the cron how many were lost, and cron_list tells the model).
 */
#include "agent/middleware/chain.h"
#include "peri/agent.h"

#include <errno.h>
#include "peri/json.h"
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#define CRON_MAX       20   /* schedules per session */
#define CRON_MAX_TEXT  4000 /* bytes of a prompt */
#define CRON_MIN_EVERY 1000 /* ms */

typedef struct sched {
    uint64_t id;
    char *text; /* the schedule as given */
    char *prompt;
    pag_cron_spec spec;
    int64_t next_ms;
    bool running;
    uint64_t runs, skipped;
    int64_t last_run_ms, last_skip_ms;
} sched;

struct pag_cron {
    pthread_mutex_t mu; /* everything below */
    pthread_cond_t cv;
    pag_cron_fire_fn fire;
    void *ctx;
    sched s[CRON_MAX];
    size_t n;
    uint64_t next_id;
    bool stopped;
    bool firing; /* the thread is inside fire() (stop waits for it) */
    bool has_thread;
    pthread_t th;
    size_t lost;
};

static int64_t now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ---------------------------------------------------------------- parsing */

/* Parses one field into bits [lo, hi]. 0 or -1. */
static int field(const char *f, int lo, int hi, uint64_t *bits, bool *any) {
    *bits = 0;
    *any = !strcmp(f, "*");
    const char *p = f;
    while (*p) {
        long a, b, step = 1;
        char *end;
        if (*p == '*') {
            a = lo;
            b = hi;
            p++;
        } else {
            errno = 0;
            a = strtol(p, &end, 10);
            if (end == p || errno) return -1;
            p = end;
            b = a;
            if (*p == '-') {
                b = strtol(p + 1, &end, 10);
                if (end == p + 1) return -1;
                p = end;
            }
        }
        if (*p == '/') {
            step = strtol(p + 1, &end, 10);
            if (end == p + 1 || step <= 0) return -1;
            p = end;
            if (a == b && p[-1] != '*' && f[0] != '*') b = hi; /* "5/15": from 5 on */
        }
        if (a < lo || b > hi || a > b) return -1;
        for (long v = a; v <= b; v += step)
            *bits |= (uint64_t)1 << v;
        if (*p == ',') {
            p++;
            if (!*p) return -1;
        } else if (*p) {
            return -1;
        }
    }
    return *bits ? 0 : -1;
}

int pag_cron_parse(const char *text, pag_cron_spec *out, char *err, size_t errlen) {
    memset(out, 0, sizeof *out);
    if (!text || strlen(text) > 200) {
        snprintf(err, errlen, "the schedule is missing or too long");
        return -1;
    }
    const char *iv = NULL;
    if (!strncasecmp(text, "every ", 6)) iv = text + 6;
    if (!strncasecmp(text, "@every ", 7)) iv = text + 7;
    if (iv) {
        char *end;
        errno = 0;
        long long v = strtoll(iv, &end, 10);
        int64_t unit = !strcmp(end, "s")   ? 1000
                       : !strcmp(end, "m") ? 60000
                       : !strcmp(end, "h") ? 3600000
                                           : 0;
        if (end == iv || errno || v <= 0 || !unit || v > 366LL * 24 * 3600) {
            snprintf(err, errlen, "an interval is \"every N\" with N followed by s, m or h");
            return -1;
        }
        out->every_ms = v * unit;
        if (out->every_ms < CRON_MIN_EVERY) {
            snprintf(err, errlen, "an interval must be at least 1 s");
            return -1;
        }
        return 0;
    }
    char buf[256], *f[6], *save = NULL;
    snprintf(buf, sizeof buf, "%s", text);
    int k = 0;
    for (char *t = strtok_r(buf, " \t", &save); t; t = strtok_r(NULL, " \t", &save)) {
        if (k == 5) {
            k = 6;
            break;
        }
        f[k++] = t;
    }
    if (k != 5) {
        snprintf(err, errlen,
                 "a cron schedule has 5 fields (minute hour day-of-month month day-of-week), "
                 "or use an interval such as \"every 10m\"");
        return -1;
    }
    static const char *const names[] = {"minute", "hour", "day-of-month", "month", "day-of-week"};
    static const int lo[] = {0, 0, 1, 1, 0}, hi[] = {59, 23, 31, 12, 7};
    uint64_t bits[5];
    bool any[5];
    for (int i = 0; i < 5; i++) {
        if (field(f[i], lo[i], hi[i], &bits[i], &any[i])) {
            snprintf(err, errlen,
                     "the %s field \"%.40s\" is not valid (%d-%d, *, lists, ranges, steps)",
                     names[i], f[i], lo[i], hi[i]);
            return -1;
        }
    }
    out->minute = bits[0];
    out->hour = (uint32_t)bits[1];
    out->dom = (uint32_t)bits[2];
    out->month = (uint16_t)bits[3];
    out->dow = (uint8_t)((bits[4] | (bits[4] >> 7)) & 0x7f); /* 7 is Sunday too */
    out->dom_any = any[2];
    out->dow_any = any[4];
    return 0;
}

int64_t pag_cron_next(const pag_cron_spec *sp, int64_t after_ms) {
    if (sp->every_ms > 0) return after_ms + sp->every_ms;
    time_t t = (time_t)(after_ms / 1000);
    t = t - t % 60 + 60; /* the next whole minute */
    for (long i = 0; i < 5L * 366 * 24 * 60; i++, t += 60) {
        struct tm tm;
        gmtime_r(&t, &tm);
        if (!(sp->month >> (tm.tm_mon + 1) & 1)) {
            /* skip to the first minute of the next month */
            tm.tm_mon++;
            tm.tm_mday = 1;
            tm.tm_hour = tm.tm_min = tm.tm_sec = 0;
            time_t nt = timegm(&tm);
            if (nt <= t) return -1;
            t = nt - 60;
            continue;
        }
        bool dom = sp->dom >> tm.tm_mday & 1, dow = sp->dow >> tm.tm_wday & 1;
        bool day = sp->dom_any && sp->dow_any ? true
                   : sp->dom_any              ? dow
                   : sp->dow_any              ? dom
                                              : (dom || dow); /* cron: either day field */
        if (!day) {
            t += (long)(23 - tm.tm_hour) * 3600 + (long)(59 - tm.tm_min) * 60;
            continue;
        }
        if (!(sp->hour >> tm.tm_hour & 1)) {
            t += (long)(59 - tm.tm_min) * 60;
            continue;
        }
        if (sp->minute >> tm.tm_min & 1) return (int64_t)t * 1000;
    }
    return -1;
}

/* ---------------------------------------------------------------- the timer */

static void *timer_main(void *arg) {
    pag_cron *c = arg;
    pthread_mutex_lock(&c->mu);
    while (!c->stopped) {
        int64_t now = now_ms(), soonest = -1;
        sched *due = NULL;
        for (size_t i = 0; i < c->n; i++) {
            if (c->s[i].next_ms <= now && !due) due = &c->s[i];
            if (soonest < 0 || c->s[i].next_ms < soonest) soonest = c->s[i].next_ms;
        }
        if (!due) {
            struct timespec dl;
            if (soonest < 0) {
                pthread_cond_wait(&c->cv, &c->mu);
            } else {
                dl.tv_sec = (time_t)(soonest / 1000);
                dl.tv_nsec = (long)(soonest % 1000) * 1000000;
                pthread_cond_timedwait(&c->cv, &c->mu, &dl);
            }
            continue;
        }
        int64_t nx = pag_cron_next(&due->spec, now);
        due->next_ms = nx < 0 ? INT64_MAX : nx;
        if (due->running) { /* the last run is still going: skip and record */
            due->skipped++;
            due->last_skip_ms = now;
            continue;
        }
        due->running = true;
        due->runs++;
        due->last_run_ms = now;
        uint64_t id = due->id;
        char *prompt = strdup(due->prompt);
        c->firing = true;
        pthread_mutex_unlock(&c->mu);
        int rc = prompt ? c->fire(c->ctx, id, prompt) : -1;
        free(prompt);
        pthread_mutex_lock(&c->mu);
        c->firing = false;
        pthread_cond_broadcast(&c->cv);
        if (rc != 0) {
            for (size_t i = 0; i < c->n; i++) {
                if (c->s[i].id == id) {
                    c->s[i].running = false;
                    c->s[i].runs--;
                    c->s[i].skipped++;
                    c->s[i].last_skip_ms = now;
                }
            }
        }
    }
    pthread_mutex_unlock(&c->mu);
    return NULL;
}

pag_cron *pag_cron_new(pag_cron_fire_fn fire, void *ctx) {
    pag_cron *c = calloc(1, sizeof *c);
    if (!c) return NULL;
    pthread_mutex_init(&c->mu, NULL);
    pthread_cond_init(&c->cv, NULL);
    c->fire = fire;
    c->ctx = ctx;
    c->next_id = 1;
    return c;
}

void pag_cron_stop(pag_cron *c) {
    if (!c) return;
    pthread_mutex_lock(&c->mu);
    c->stopped = true;
    pthread_cond_broadcast(&c->cv);
    while (c->firing) /* a fire in progress finishes before stop returns */
        pthread_cond_wait(&c->cv, &c->mu);
    pthread_mutex_unlock(&c->mu);
}

void pag_cron_free(pag_cron *c) {
    if (!c) return;
    pag_cron_stop(c);
    if (c->has_thread) pthread_join(c->th, NULL);
    for (size_t i = 0; i < c->n; i++) {
        free(c->s[i].text);
        free(c->s[i].prompt);
    }
    pthread_mutex_destroy(&c->mu);
    pthread_cond_destroy(&c->cv);
    free(c);
}

void pag_cron_done(pag_cron *c, uint64_t id) {
    pthread_mutex_lock(&c->mu);
    for (size_t i = 0; i < c->n; i++)
        if (c->s[i].id == id) c->s[i].running = false;
    pthread_mutex_unlock(&c->mu);
}

void pag_cron_set_lost(pag_cron *c, size_t n) {
    pthread_mutex_lock(&c->mu);
    c->lost = n;
    pthread_mutex_unlock(&c->mu);
}

size_t pag_cron_lost(pag_cron *c) {
    pthread_mutex_lock(&c->mu);
    size_t n = c->lost;
    pthread_mutex_unlock(&c->mu);
    return n;
}

char *pag_cron_records(pag_cron *c) {
    pj_t *a = pj_array();
    pthread_mutex_lock(&c->mu);
    for (size_t i = 0; a && i < c->n; i++)
        pj_array_append_new(a, pj_pack("{s:I, s:s, s:s}", "id", (pj_int_t)c->s[i].id, "schedule",
                                       c->s[i].text, "prompt", c->s[i].prompt));
    pthread_mutex_unlock(&c->mu);
    char *t = a ? pj_dumps(a, PJ_COMPACT) : NULL;
    pj_decref(a);
    return t;
}

/* ---------------------------------------------------------------- tools */

const pag_tool_info *pag_cron_tools(size_t *n) {
    size_t k = 0;
    while (pag__cron_tools[k].name) /* decl.c's table ends with a NULL name */
        k++;
    *n = k;
    return pag__cron_tools;
}

static int say(pag_tool_output *out, bool error, const char *text) {
    out->is_error = error;
    out->output = strdup(text);
    return out->output ? 0 : -1;
}

static void iso(int64_t ms, char *buf, size_t n) {
    time_t t = (time_t)(ms / 1000);
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(buf, n, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

static int run_create(pag_cron *c, pj_t *a, pag_tool_output *out) {
    const char *when = pj_string_value(pj_object_get(a, "schedule"));
    const char *prompt = pj_string_value(pj_object_get(a, "prompt"));
    char err[200];
    pag_cron_spec sp;
    if (!prompt || !*prompt || strlen(prompt) > CRON_MAX_TEXT)
        return say(out, true, "cron_create: \"prompt\" is required (at most 4000 bytes)");
    if (pag_cron_parse(when, &sp, err, sizeof err)) {
        char m[300];
        snprintf(m, sizeof m, "cron_create: %s", err);
        return say(out, true, m);
    }
    int64_t now = now_ms(), next = pag_cron_next(&sp, now);
    if (next < 0) return say(out, true, "cron_create: this schedule never comes due");
    pthread_mutex_lock(&c->mu);
    char m[300];
    int rc = 0;
    if (c->stopped) {
        rc = say(out, true, "cron_create: the session is closing");
    } else if (c->n >= CRON_MAX) {
        rc = say(out, true, "cron_create: at most 20 schedules per session");
    } else {
        sched *s = &c->s[c->n];
        memset(s, 0, sizeof *s);
        s->text = strdup(when);
        s->prompt = strdup(prompt);
        if (!s->text || !s->prompt) {
            free(s->text);
            free(s->prompt);
            rc = -1;
        } else {
            s->id = c->next_id++;
            s->spec = sp;
            s->next_ms = next;
            c->n++;
            if (!c->has_thread && pthread_create(&c->th, NULL, timer_main, c) == 0)
                c->has_thread = true;
            pthread_cond_broadcast(&c->cv);
            char at[32];
            iso(next, at, sizeof at);
            snprintf(m, sizeof m,
                     "Scheduled as id %llu (%.100s); first run at %s. It runs while this "
                     "session is open and is not restored after a restart.",
                     (unsigned long long)s->id, when, at);
            rc = c->has_thread ? say(out, false, m) : say(out, true, "cron: no timer thread");
        }
    }
    pthread_mutex_unlock(&c->mu);
    return rc;
}

static int run_list(pag_cron *c, pag_tool_output *out) {
    size_t cap = 512 + CRON_MAX * (CRON_MAX_TEXT / 8 + 400);
    char *b = malloc(cap);
    if (!b) return -1;
    size_t k = 0;
    pthread_mutex_lock(&c->mu);
    if (c->n == 0) k += (size_t)snprintf(b + k, cap - k, "No scheduled prompts in this session.");
    for (size_t i = 0; i < c->n && k < cap; i++) {
        const sched *s = &c->s[i];
        char at[32] = "never";
        if (s->next_ms != INT64_MAX) iso(s->next_ms, at, sizeof at);
        k += (size_t)snprintf(b + k, cap - k,
                              "%sid %llu: %s — \"%.300s\"; runs %llu, skipped %llu (a run was "
                              "still going)%s; next %s",
                              i ? "\n" : "", (unsigned long long)s->id, s->text, s->prompt,
                              (unsigned long long)s->runs, (unsigned long long)s->skipped,
                              s->running ? "; running now" : "", at);
    }
    if (c->lost && k < cap)
        k += (size_t)snprintf(b + k, cap - k,
                              "\nNote: %zu schedule(s) created before this session was reloaded "
                              "were not revived: schedules never survive a restart. Create them "
                              "again if they are still wanted.",
                              c->lost);
    pthread_mutex_unlock(&c->mu);
    out->output = b;
    return 0;
}

static int run_delete(pag_cron *c, pj_t *a, pag_tool_output *out) {
    pj_t *id = pj_object_get(a, "id");
    if (!pj_is_integer(id)) return say(out, true, "cron_delete: \"id\" (an integer) is required");
    pthread_mutex_lock(&c->mu);
    bool found = false;
    for (size_t i = 0; i < c->n; i++) {
        if (c->s[i].id != (uint64_t)pj_integer_value(id)) continue;
        free(c->s[i].text);
        free(c->s[i].prompt);
        memmove(&c->s[i], &c->s[i + 1], (c->n - i - 1) * sizeof c->s[0]);
        c->n--;
        found = true;
        break;
    }
    pthread_cond_broadcast(&c->cv);
    pthread_mutex_unlock(&c->mu);
    return say(out, !found, found ? "Deleted." : "cron_delete: no schedule with that id");
}

int pag_cron_tool_run(pag_cron *c, const char *name, const char *args_json, pag_tool_output *out) {
    if (!name || strncmp(name, "cron_", 5)) return -2;
    if (strcmp(name, "cron_create") && strcmp(name, "cron_list") && strcmp(name, "cron_delete"))
        return -2;
    pj_t *a = pj_loads(args_json ? args_json : "{}", 0, NULL);
    int rc;
    if (!pj_is_object(a))
        rc = say(out, true, "the arguments must be a JSON object");
    else if (!strcmp(name, "cron_create"))
        rc = run_create(c, a, out);
    else if (!strcmp(name, "cron_list"))
        rc = run_list(c, out);
    else
        rc = run_delete(c, a, out);
    pj_decref(a);
    return rc;
}
