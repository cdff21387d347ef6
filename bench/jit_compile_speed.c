/*
 * jit_compile_speed.c — how fast the baseline JIT translates code: for each
 * module, the median thread CPU time of pw_module_new + pw_instantiate with the
 * interpreter, and with the JIT compiling every function eagerly
 * (pw_store_config.jit_eager); the difference is the JIT's own time, given in MB/s of
 * code section. A fresh module per repetition (JIT code is cached in the module).
 *
 * Usage: peri-jit-compile-speed FILE.wasm...   (modules without imports)
 */
#include "peri/wasm.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double cpu_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Median CPU seconds of module_new + instantiate under engine (eager JIT). */
static double median_time(const uint8_t *b, size_t n, int engine, int reps) {
    double *t = calloc((size_t)reps, sizeof *t);
    if (!t) return -1;
    for (int r = 0; r < reps; r++) {
        pw_error err;
        double t0 = cpu_s();
        pw_module *m = pw_module_new(b, n, NULL, &err);
        pw_store_config cfg = {.engine = engine, .jit_eager = true};
        pw_store *s = m ? pw_store_new(&cfg, &err) : NULL;
        pw_instance *inst = s ? pw_instantiate(s, m, NULL, NULL, &err) : NULL;
        t[r] = cpu_s() - t0;
        if (!inst) {
            fprintf(stderr, "instantiate: %s\n", err.message);
            free(t);
            return -1;
        }
        pw_store_free(s);
        pw_module_free(m);
    }
    qsort(t, (size_t)reps, sizeof *t, cmp_double);
    double med = t[reps / 2];
    free(t);
    return med;
}

/* The code section's size (id 10), for MB/s of code. */
static size_t code_size(const uint8_t *p, size_t len) {
    size_t pos = 8;
    while (pos < len) {
        uint8_t id = p[pos++];
        uint32_t sz = 0;
        for (int sh = 0; sh < 35 && pos < len; sh += 7) {
            uint8_t c = p[pos++];
            sz |= (uint32_t)(c & 0x7f) << sh;
            if (!(c & 0x80)) break;
        }
        if (id == 10) return sz;
        pos += sz;
    }
    return len;
}

int main(int argc, char **argv) {
    for (int i = 1; i < argc; i++) {
        FILE *f = fopen(argv[i], "rb");
        if (!f) return 1;
        fseek(f, 0, SEEK_END);
        long n = ftell(f);
        fseek(f, 0, SEEK_SET);
        uint8_t *b = malloc((size_t)n);
        if (!b || fread(b, 1, (size_t)n, f) != (size_t)n) return 1;
        fclose(f);
        int reps = n > 100000 ? 9 : 51;
        double ti = median_time(b, (size_t)n, PW_ENGINE_INTERP, reps);
        double tj = median_time(b, (size_t)n, PW_ENGINE_JIT, reps);
        double kb = (double)code_size(b, (size_t)n) / 1000.0;
        const char *name = strrchr(argv[i], '/') ? strrchr(argv[i], '/') + 1 : argv[i];
        printf("jit %-12s code %8.1f KB | new+instantiate %8.3f ms | with eager JIT %8.3f ms | "
               "JIT alone %8.3f ms %7.1f MB/s\n",
               name, kb, ti * 1e3, tj * 1e3, (tj - ti) * 1e3,
               tj > ti ? kb / 1000.0 / (tj - ti) : 0.0);
        free(b);
    }
    return 0;
}
