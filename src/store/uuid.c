/*
 * uuid.c — UUID v7 (session/thread ids: time-ordered) and v4 (machine ids) as lowercase
 * text. Randomness comes from getrandom(), falling back to libcrypto's RAND_bytes. The
 * layouts and the name-based workspace id are in uuid_form.c (no I/O, shared with the
 * remote client).
 */
#include "store_sql.h"

#include <errno.h>
#include <openssl/rand.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

static bool fill_random(unsigned char *buf, size_t n) {
    size_t got = 0;
    while (got < n) {
        ssize_t r = getrandom(buf + got, n - got, 0);
        if (r < 0) {
            if (errno == EINTR) continue;
            break;
        }
        got += (size_t)r;
    }
    if (got == n) return true;
    return RAND_bytes(buf, (int)n) == 1;
}

bool pst_uuid_v7(char out[PST_ID_LEN]) {
    unsigned char b[16];
    struct timespec ts;
    if (!fill_random(b, sizeof b)) return false;
    clock_gettime(CLOCK_REALTIME, &ts);
    pst__uuid_v7_from(b, (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u, out);
    return true;
}

bool pst_uuid_v4(char out[PST_ID_LEN]) {
    unsigned char b[16];
    if (!fill_random(b, sizeof b)) return false;
    b[6] = (unsigned char)(0x40 | (b[6] & 0x0f));
    b[8] = (unsigned char)(0x80 | (b[8] & 0x3f));
    pst__uuid_format(b, out);
    return true;
}

bool pst_uuid_valid(const char *s) {
    if (!s) return false;
    for (int i = 0; i < 36; i++) {
        char c = s[i];
        if (i == 8 || i == 13 || i == 18 || i == 23) {
            if (c != '-') return false;
        } else if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'))) {
            return false;
        }
    }
    return s[36] == '\0';
}
