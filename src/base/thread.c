/*
 * thread.c — the two thread shapes the host repeats: starting a detached worker, and a
 * worker count that a mutex guards and a condition variable announces (its owner waits
 * for the count to reach zero before it tears down what the workers use).
 */
#include "peri/base.h"

int pb_thread_detached(void *(*fn)(void *), void *arg) {
    pthread_attr_t at;
    int rc = pthread_attr_init(&at);
    if (rc != 0) return rc;
    rc = pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
    pthread_t th;
    if (rc == 0) rc = pthread_create(&th, &at, fn, arg);
    pthread_attr_destroy(&at);
    return rc;
}

void pb_count_leave(pthread_mutex_t *mu, pthread_cond_t *cv, int *count) {
    pthread_mutex_lock(mu);
    (*count)--;
    pthread_cond_broadcast(cv);
    pthread_mutex_unlock(mu);
}

int pb_count_wait(pthread_mutex_t *mu, pthread_cond_t *cv, const int *count, int64_t ms) {
    struct timespec dl = pb_deadline(CLOCK_REALTIME, ms);
    pthread_mutex_lock(mu);
    while (*count > 0 && pthread_cond_timedwait(cv, mu, &dl) == 0) {
    }
    int left = *count;
    pthread_mutex_unlock(mu);
    return left;
}
