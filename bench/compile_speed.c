/*
 * compile_speed.c — measures how fast the engine turns bytes into runnable code:
 * pw_module_new (decode + validate + compile/lower) and pw_module_validate (decode +
 * validate only), in MB/s of code section, median of repeated runs. Times are the
 * thread's CPU time (robust on a loaded machine); wall-clock MB/s are shown too.
 *
 * Usage: peri-compile-speed FILE.wasm...
 * Uses the public API only (include/peri/wasm.h).
 */
#include "peri/wasm.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double clock_s(clockid_t id) {
    struct timespec ts;
    clock_gettime(id, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}
static double now_s(void) {
    return clock_s(CLOCK_MONOTONIC);
}
/* Thread CPU time: what this thread got, so a loaded machine disturbs it less. */
static double cpu_s(void) {
    return clock_s(CLOCK_THREAD_CPUTIME_ID);
}

/* Reads a whole file; caller frees. NULL on failure. */
static uint8_t *read_file(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    uint8_t *buf = NULL;
    size_t cap = 0, n = 0, got;
    do {
        if (n == cap) {
            cap = cap ? cap * 2 : 1 << 16;
            uint8_t *nb = realloc(buf, cap);
            if (!nb) {
                free(buf);
                fclose(f);
                return NULL;
            }
            buf = nb;
        }
        got = fread(buf + n, 1, cap - n, f);
        n += got;
    } while (got > 0);
    fclose(f);
    *len = n;
    return buf;
}

static int read_uleb(const uint8_t *p, size_t len, size_t *pos, uint32_t *out) {
    uint32_t v = 0;
    for (int shift = 0; shift < 35; shift += 7) {
        if (*pos >= len) return 0;
        uint8_t b = p[(*pos)++];
        v |= (uint32_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) {
            *out = v;
            return 1;
        }
    }
    return 0;
}

/* Size of the code section (id 10), 0 if absent or unreadable. */
static size_t code_section_size(const uint8_t *p, size_t len) {
    size_t pos = 8;
    while (pos < len) {
        uint8_t id = p[pos++];
        uint32_t sz;
        if (!read_uleb(p, len, &pos, &sz) || sz > len - pos) return 0;
        if (id == 10) return sz;
        pos += sz;
    }
    return 0;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Median thread-CPU seconds per run (and the median wall seconds in *wall) over at
 * least 5 runs and about 0.5 s of wall time; -1 on an engine error. */
static double median_time(const uint8_t *bytes, size_t len, int compile, double *wall,
                          pw_error *err) {
    double t[200], w[200];
    int n = 0;
    double start = now_s();
    while (n < 200 && (n < 5 || now_s() - start < 0.5)) {
        double s = now_s(), c = cpu_s();
        if (compile) {
            pw_module *m = pw_module_new(bytes, len, NULL, err);
            if (!m) return -1;
            t[n] = cpu_s() - c;
            w[n++] = now_s() - s;
            pw_module_free(m);
        } else {
            if (pw_module_validate(bytes, len, err) != PW_OK) return -1;
            t[n] = cpu_s() - c;
            w[n++] = now_s() - s;
        }
    }
    qsort(t, (size_t)n, sizeof t[0], cmp_double);
    qsort(w, (size_t)n, sizeof w[0], cmp_double);
    *wall = w[n / 2];
    return t[n / 2];
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: %s FILE.wasm...\n", argv[0]);
        return 2;
    }
    int rc = 0;
    for (int i = 1; i < argc; i++) {
        size_t len;
        uint8_t *bytes = read_file(argv[i], &len);
        if (!bytes) {
            fprintf(stderr, "%s: cannot read\n", argv[i]);
            rc = 1;
            continue;
        }
        const char *name = strrchr(argv[i], '/');
        name = name ? name + 1 : argv[i];
        size_t code = code_section_size(bytes, len);
        pw_error err;
        double wv = 0, wc = 0;
        double tv = median_time(bytes, len, 0, &wv, &err);
        double tc = tv < 0 ? -1 : median_time(bytes, len, 1, &wc, &err);
        if (tc < 0) {
            printf("compile %s: error: %s\n", name, err.message);
            rc = 1;
        } else {
            double mb = (double)code / 1e6;
            printf("compile %-12s code %7.1f KB | decode+validate %7.3f ms %6.1f MB/s | "
                   "decode+validate+compile %7.3f ms %6.1f MB/s | (wall: %.1f / %.1f MB/s)\n",
                   name, (double)code / 1e3, tv * 1e3, mb / tv, tc * 1e3, mb / tc, mb / wv,
                   mb / wc);
        }
        free(bytes);
    }
    return rc;
}
