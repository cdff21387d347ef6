/*
 * mcp_bench.c — per-call overhead of the builtin tools through the session pool's
 * in-process Workspace MCP pair against calling the tools registry directly,
 * measured side by side in one process (interleaved calls, medians).
 *
 * usage: peri-mcp-bench [CALLS]
 * For `read` of a small file, `read` of a 60 KiB file, `list` and `write` (diff content),
 * times CALLS calls of each route, interleaved call by call (so load changes hit both
 * alike), and prints the median and 90th percentile per call of each route.
 */
#include "peri/mcp.h"
#include "peri/tools.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double now_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, int n) {
    qsort(v, (size_t)n, sizeof *v, cmp);
    return v[n / 2];
}

static double one_direct(const ptl_ctx *ctx, const char *tool, const char *args) {
    const ptl_tool *t = ptl_find(tool);
    double t0 = now_us();
    ptl_result r;
    if (ptl_run(t, args, ctx, &r) != PTL_OK || r.is_error) {
        fprintf(stderr, "direct %s failed: %s\n", tool, r.output ? r.output : "?");
        exit(1);
    }
    ptl_result_clear(&r);
    return now_us() - t0;
}

static double one_pool(pmcp_pool *p, const char *tool, const char *args) {
    double t0 = now_us();
    pmcp_pool_result r;
    if (pmcp_pool_run(p, tool, args, NULL, NULL, NULL, &r) != 0 || r.is_error) {
        fprintf(stderr, "pool %s failed: %s\n", tool, r.output ? r.output : "?");
        exit(1);
    }
    pmcp_pool_result_clear(&r);
    return now_us() - t0;
}

int main(int argc, char **argv) {
    int calls = argc > 1 ? atoi(argv[1]) : 1000;
    if (calls < 10 || calls > 1000000) return 2;
    double *d = malloc((size_t)calls * sizeof *d), *m = malloc((size_t)calls * sizeof *m);
    if (!d || !m) return 1;
    char dir[] = "/tmp/peri-mcp-bench-XXXXXX";
    if (!mkdtemp(dir)) return 1;
    char path[512];
    snprintf(path, sizeof path, "%s/small.txt", dir);
    FILE *f = fopen(path, "w");
    fputs("hello from the bench\nsecond line\n", f);
    fclose(f);
    snprintf(path, sizeof path, "%s/big.txt", dir);
    f = fopen(path, "w");
    for (int i = 0; i < 1000; i++)
        fprintf(f, "line %04d of a sixty-kilobyte file, some text to fill it up\n", i);
    fclose(f);
    ptl_ctx ctx = {.cwd = dir};
    pmcp_pool_opts po = {.workspace = &ctx};
    char *notices = NULL;
    pmcp_pool *p = pmcp_pool_open(&po, &notices);
    if (!p || !pmcp_pool_builtin(p)) {
        fprintf(stderr, "pool: %s\n", notices ? notices : "failed");
        return 1;
    }
    static const struct {
        const char *label, *tool, *args;
    } cases[] = {{"read small", "read", "{\"path\":\"small.txt\"}"},
                 {"read 60 KiB", "read", "{\"path\":\"big.txt\"}"},
                 {"list", "list", "{\"path\":\".\"}"},
                 {"write (diff)", "write", "{\"path\":\"w.txt\",\"content\":\"abc\\n\"}"}};
    printf("%-14s %10s %10s %10s %10s %10s\n", "call", "direct", "pool", "overhead", "direct p90",
           "pool p90");
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        for (int i = 0; i < calls / 10; i++) { /* warm up */
            one_direct(&ctx, cases[k].tool, cases[k].args);
            one_pool(p, cases[k].tool, cases[k].args);
        }
        for (int i = 0; i < calls; i++) {
            d[i] = one_direct(&ctx, cases[k].tool, cases[k].args);
            m[i] = one_pool(p, cases[k].tool, cases[k].args);
        }
        double md = median(d, calls), mm = median(m, calls);
        printf("%-14s %8.1fus %8.1fus %8.1fus %8.1fus %8.1fus\n", cases[k].label, md, mm, mm - md,
               d[calls * 9 / 10], m[calls * 9 / 10]);
    }
    free(d);
    free(m);
    pmcp_pool_close(p);
    free(notices);
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    return system(cmd) == 0 ? 0 : 1;
}
