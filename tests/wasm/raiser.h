/*
 * raiser.h — test helper shared by the engine's interrupt tests (test_runtime,
 * test_loops, test_jit): a thread that raises a store's interrupt flag after a delay
 * and records when, so a test can bound how long the guest ran on after the flag.
 */
#ifndef PERI_TEST_RAISER_H
#define PERI_TEST_RAISER_H

#include <pthread.h>
#include <time.h>

#include "peri/wasm.h"

static inline double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

typedef struct raiser {
    pw_store *s;
    long delay_ms; /* how long the thread waits before raising the flag */
    double at;     /* now_ms() when the flag was raised */
} raiser;

/* pthread start routine: arg is a raiser. */
static inline void *raise_later(void *arg) {
    raiser *r = arg;
    struct timespec d = {r->delay_ms / 1000, (r->delay_ms % 1000) * 1000000L};
    nanosleep(&d, NULL);
    r->at = now_ms();
    pw_store_interrupt(r->s);
    return NULL;
}

#endif
