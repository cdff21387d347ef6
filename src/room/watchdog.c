/*
 * watchdog.c — the run limits that need a second thread: CPU time of the running
 * thread (its own CPU clock, pthread_getcpuclockid) and a wall-clock bound. One
 * watchdog thread per host polls the active runs every few milliseconds and raises
 * the store's interrupt flag (pw_store_interrupt) when a run is over a limit.
 * Registering a run is a mutex-protected list insert, no wake-up: runs far shorter
 * than the poll period cost the watchdog nothing.
 */
#include "room_int.h"

#include <errno.h>
#include <string.h>

#define POLL_MS 5

static int64_t ns_between(const struct timespec *a, const struct timespec *b) {
    return (int64_t)(b->tv_sec - a->tv_sec) * 1000000000 + (b->tv_nsec - a->tv_nsec);
}

static void *watch_main(void *arg) {
    pr_watchdog *w = arg;
    pthread_mutex_lock(&w->mu);
    while (!w->stop) {
        struct timespec wall;
        clock_gettime(CLOCK_MONOTONIC, &wall);
        for (pr_watch_slot *s = w->active; s; s = s->next) {
            if (s->fired) continue;
            if (s->cancelled && s->cancelled(s->cancel_ud)) {
                s->fired = PR_FIRED_CANCEL;
                pw_store_interrupt(s->store);
                continue;
            }
            struct timespec cpu;
            if (clock_gettime(s->cpu_clock, &cpu) == 0 &&
                ns_between(&s->cpu_start, &cpu) >=
                    ((int64_t)(s->cpu_ms ? s->cpu_ms : w->cpu_ms) + s->extra_ms) * 1000000) {
                s->fired = PR_FIRED_CPU;
            } else if (ns_between(&s->wall_start, &wall) >=
                       ((int64_t)(s->wall_ms ? s->wall_ms : w->wall_ms) + s->extra_ms) * 1000000) {
                s->fired = PR_FIRED_WALL;
            }
            if (s->fired) pw_store_interrupt(s->store);
        }
        struct timespec until;
        until = pb_deadline(CLOCK_MONOTONIC, POLL_MS);
        pthread_cond_timedwait(&w->cv, &w->mu, &until);
    }
    pthread_mutex_unlock(&w->mu);
    return NULL;
}

bool pr__watchdog_init(pr_watchdog *w, uint32_t cpu_ms, uint32_t wall_ms) {
    memset(w, 0, sizeof *w);
    w->cpu_ms = cpu_ms;
    w->wall_ms = wall_ms;
    if (pthread_mutex_init(&w->mu, NULL) != 0) return false;
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    int rc = pthread_cond_init(&w->cv, &ca);
    pthread_condattr_destroy(&ca);
    if (rc != 0) {
        pthread_mutex_destroy(&w->mu);
        return false;
    }
    return true;
}

void pr__watchdog_destroy(pr_watchdog *w) {
    pthread_mutex_lock(&w->mu);
    w->stop = true;
    bool started = w->started;
    pthread_cond_signal(&w->cv);
    pthread_mutex_unlock(&w->mu);
    if (started) pthread_join(w->thread, NULL);
    pthread_cond_destroy(&w->cv);
    pthread_mutex_destroy(&w->mu);
}

/* The run's CPU start: read from the thread's CPU clock (a system call), or, from a
 * memo read less than PR_CPU_MEMO_NS ago on this thread, memo.cpu + the wall time
 * since memo.wall. The monotonic clock is read before the CPU clock, so that bound is
 * never below the true start: the run's CPU is never over-counted, and under-counted
 * by at most the wall time since the memo (< 1 ms). */
static void cpu_start(pr_watch_slot *slot) {
    pr_cpu_memo *m = slot->cpu_memo;
    if (m && m->valid && pthread_equal(m->thread, pthread_self())) {
        int64_t gap = ns_between(&m->wall, &slot->wall_start);
        if (gap >= 0 && gap < PR_CPU_MEMO_NS) {
            int64_t ns = (int64_t)m->cpu.tv_nsec + gap;
            slot->cpu_start.tv_sec = m->cpu.tv_sec + (time_t)(ns / 1000000000);
            slot->cpu_start.tv_nsec = (long)(ns % 1000000000);
            return;
        }
    }
    clock_gettime(slot->cpu_clock, &slot->cpu_start);
    if (m) {
        m->valid = true;
        m->thread = pthread_self();
        m->wall = slot->wall_start;
        m->cpu = slot->cpu_start;
    }
}

bool pr__watch_begin(pr_watchdog *w, pr_watch_slot *slot, pw_store *s) {
    /* A fresh slot that keeps only what the caller set: its cancel poll, the run's own
     * limits and the CPU memo (the literal is built before it is stored). */
    *slot = (pr_watch_slot){.store = s,
                            .cancelled = slot->cancelled,
                            .cancel_ud = slot->cancel_ud,
                            .cpu_ms = slot->cpu_ms,
                            .wall_ms = slot->wall_ms,
                            .cpu_memo = slot->cpu_memo};
    if (pthread_getcpuclockid(pthread_self(), &slot->cpu_clock) != 0) return false;
    clock_gettime(CLOCK_MONOTONIC, &slot->wall_start);
    cpu_start(slot);
    pthread_mutex_lock(&w->mu);
    if (!w->started) {
        /* Started lazily so hosts that never run anything own no thread. */
        if (pthread_create(&w->thread, NULL, watch_main, w) != 0) {
            pthread_mutex_unlock(&w->mu);
            return false;
        }
        w->started = true;
    }
    slot->next = w->active;
    if (w->active) w->active->prev = slot;
    w->active = slot;
    pthread_mutex_unlock(&w->mu);
    return true;
}

int pr__watch_end(pr_watchdog *w, pr_watch_slot *slot) {
    pthread_mutex_lock(&w->mu);
    if (slot->prev)
        slot->prev->next = slot->next;
    else
        w->active = slot->next;
    if (slot->next) slot->next->prev = slot->prev;
    int fired = slot->fired;
    pthread_mutex_unlock(&w->mu);
    return fired;
}

void pr__watch_grant(pr_watchdog *w, pr_watch_slot *slot, uint32_t extra_ms) {
    pthread_mutex_lock(&w->mu);
    slot->extra_ms = extra_ms;
    pthread_mutex_unlock(&w->mu);
}

void pr__watch_restart(pr_watchdog *w, pr_watch_slot *slot) {
    pthread_mutex_lock(&w->mu);
    slot->extra_ms = 0;
    if (!slot->fired) {
        clock_gettime(slot->cpu_clock, &slot->cpu_start);
        clock_gettime(CLOCK_MONOTONIC, &slot->wall_start);
    }
    pthread_mutex_unlock(&w->mu);
}
