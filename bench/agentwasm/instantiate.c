/*
 * instantiate.c — peri-agentwasm-instantiate: in-process start-up and memory of the agent
 * module on Peri-C's engine (src/wasmhost/), for bench/agentwasm/bench.py.
 *
 *   peri-agentwasm-instantiate MODULE.wasm [N]
 *
 * Loads the module once (pw_module_new: decode and validate), then makes N instances of
 * it in one process with pwh_new (a fresh engine store, the imports linked, the exports
 * checked, _initialize run), as `peri acp --wasm` does before its start object. No
 * start object is given (that needs the store), so this is the floor of an instance.
 * Prints one JSON object: the load time, the median and first pwh_new time, the linear
 * memory size of one instance, the process's VmRSS before any instance and after 1, 10
 * and N, and RSS per instance ((after N - after 1) / (N - 1)).
 * Owns: the instances it makes (freed before exit).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "peri/wasm.h"
#include "peri/wasmhost.h"
#include "wasmhost/wasmhost_int.h"

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static long rss_kb(void) {
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long kb = -1;
    while (f && fgets(line, sizeof line, f))
        if (!strncmp(line, "VmRSS:", 6)) kb = strtol(line + 6, NULL, 10);
    if (f) fclose(f);
    return kb;
}

static int cmp_d(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv) {
    if (argc < 2 || argc > 3) {
        fprintf(stderr, "usage: peri-agentwasm-instantiate MODULE.wasm [N]\n");
        return 2;
    }
    int n = argc == 3 ? atoi(argv[2]) : 50;
    if (n < 2 || n > 10000) n = 50;
    FILE *f = fopen(argv[1], "rb");
    if (!f) {
        perror(argv[1]);
        return 1;
    }
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *bytes = len > 0 ? malloc((size_t)len) : NULL;
    if (!bytes || fread(bytes, 1, (size_t)len, f) != (size_t)len) {
        fprintf(stderr, "cannot read %s\n", argv[1]);
        fclose(f);
        free(bytes);
        return 1;
    }
    fclose(f);
    pw_error pe;
    double t0 = now_ms();
    pw_module *m = pw_module_new(bytes, (size_t)len, NULL, &pe);
    double t_load = now_ms() - t0;
    free(bytes);
    if (!m) {
        fprintf(stderr, "the module does not load: %s\n", pe.message);
        return 1;
    }
    pwh_instance **w = calloc((size_t)n, sizeof *w);
    double *ms = calloc((size_t)n, sizeof *ms);
    if (!w || !ms) return 1;
    long rss0 = rss_kb(), rss1 = 0, rss10 = 0;
    uint64_t memsize = 0;
    int rc = 0;
    for (int i = 0; i < n; i++) {
        pwh_opts o = {.module = m};
        char err[300];
        double t = now_ms();
        w[i] = pwh_new(&o, err, sizeof err);
        ms[i] = now_ms() - t;
        if (!w[i]) {
            fprintf(stderr, "instance %d: %s\n", i, err);
            rc = 1;
            n = i;
            break;
        }
        if (i == 0) {
            rss1 = rss_kb();
            pw_memory_data(w[0]->mem, &memsize);
        }
        if (i == 9) rss10 = rss_kb();
    }
    long rssn = rss_kb();
    double first = n > 0 ? ms[0] : 0;
    qsort(ms, (size_t)n, sizeof *ms, cmp_d);
    if (rc == 0)
        printf("{\"module_new_ms\": %.2f, \"instantiate_first_ms\": %.2f, "
               "\"instantiate_median_ms\": %.2f, \"linear_memory_bytes\": %llu, "
               "\"rss_kb\": {\"0\": %ld, \"1\": %ld, \"10\": %ld, \"%d\": %ld}, "
               "\"rss_per_instance_kb\": %.0f}\n",
               t_load, first, ms[n / 2], (unsigned long long)memsize, rss0, rss1, rss10, n, rssn,
               (double)(rssn - rss1) / (n - 1));
    for (int i = 0; i < n; i++)
        pwh_free(w[i]);
    free(w);
    free(ms);
    pw_module_free(m);
    return rc;
}
