/*
 * clock.c — monotonic and wall clocks, absolute deadlines and ISO 8601 time.
 *
 * Durations are measured on CLOCK_MONOTONIC (never affected by clock changes); wall
 * time is only for what people read (timestamps in records and messages).
 */
#include "peri/base.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

static int64_t ms_of(clockid_t c) {
    struct timespec ts;
    clock_gettime(c, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t pb_mono_ms(void) {
    return ms_of(CLOCK_MONOTONIC);
}

int64_t pb_wall_ms(void) {
    return ms_of(CLOCK_REALTIME);
}

int64_t pb_mono_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

struct timespec pb_deadline(clockid_t clock, int64_t ms) {
    struct timespec dl;
    clock_gettime(clock, &dl);
    if (ms < 0) ms = 0;
    dl.tv_sec += (time_t)(ms / 1000);
    dl.tv_nsec += (long)(ms % 1000) * 1000000L;
    if (dl.tv_nsec >= 1000000000L) {
        dl.tv_sec++;
        dl.tv_nsec -= 1000000000L;
    }
    return dl;
}

void pb_sleep_us(int64_t us) {
    if (us <= 0) return;
    struct timespec dl;
    clock_gettime(CLOCK_MONOTONIC, &dl);
    dl.tv_sec += (time_t)(us / 1000000);
    dl.tv_nsec += (long)(us % 1000000) * 1000L;
    if (dl.tv_nsec >= 1000000000L) {
        dl.tv_sec++;
        dl.tv_nsec -= 1000000000L;
    }
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &dl, NULL) == EINTR) {
    }
}

void pb_iso_time(int64_t wall_ms, char out[PB_ISO_TIME_LEN]) {
    time_t secs = (time_t)(wall_ms / 1000);
    int ms = (int)(wall_ms % 1000);
    if (ms < 0) {
        ms += 1000;
        secs--;
    }
    struct tm tm;
    if (!gmtime_r(&secs, &tm)) {
        snprintf(out, PB_ISO_TIME_LEN, "1970-01-01T00:00:00.000Z");
        return;
    }
    char tmp[96]; /* wide enough for any int fields; the real text fits PB_ISO_TIME_LEN */
    snprintf(tmp, sizeof tmp, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900,
             tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, ms);
    size_t n = strnlen(tmp, PB_ISO_TIME_LEN - 1);
    memcpy(out, tmp, n);
    out[n] = 0;
}
