/*
 * room_bench.c — `peri-room-bench`: runs/s of the room.
 *   C API, per worker thread (1 and 2 workers), for a WASI hello with a cached module:
 *     exec  = fresh instance + fresh FS + run + collect (pr_exec + result JSON)
 *     call  = the whole contract call pr_run (Base64 + SHA-256 + checks + exec + JSON)
 *   serve = `peri isolate serve --workers N` fed newline-delimited requests
 *   cold  = first pr_run of a large module (digest + decode + validate + compile + run)
 *   peak RSS of the serve process over 1000 runs.
 * usage: peri-room-bench HELLO.wasm [PERI [BIG.wasm]]
 */
#include "peri/room.h"
#include "room/room_int.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static uint8_t *slurp(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long l = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *b = malloc((size_t)l + 1);
    if (!b || fread(b, 1, (size_t)l, f) != (size_t)l) l = -1;
    fclose(f);
    *n = (size_t)l;
    return l < 0 ? NULL : b;
}

static char *b64(const uint8_t *d, size_t n, size_t *out_len) {
    static const char A[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    char *o = malloc((n + 2) / 3 * 4 + 1);
    size_t k = 0;
    for (size_t i = 0; i < n; i += 3) {
        uint32_t v = (uint32_t)d[i] << 16 | (i + 1 < n ? (uint32_t)d[i + 1] << 8 : 0) |
                     (i + 2 < n ? d[i + 2] : 0);
        o[k++] = A[v >> 18];
        o[k++] = A[(v >> 12) & 63];
        o[k++] = i + 1 < n ? A[(v >> 6) & 63] : '=';
        o[k++] = i + 2 < n ? A[v & 63] : '=';
    }
    o[k] = 0;
    *out_len = k;
    return o;
}

typedef struct job {
    pr_host *h;
    pr_program *p;
    pr_request req;
    int mode; /* 0 exec, 1 call */
    int runs;
    double secs;
    int bad;
} job;

static void *worker(void *arg) {
    job *j = arg;
    double t0 = now();
    for (int i = 0; i < j->runs; i++) {
        if (j->mode == 0) {
            pr_fs *fs = pr_fs_new();
            pr_exec_options opt = {.fs = fs};
            pr_outcome oc;
            pr_error e;
            pr_buf out = {0};
            if (!pr_exec(j->h, j->p, &opt, &oc, &e) || !pr_result_json(&oc, fs, &out, &e) ||
                strcmp(out.p, "{\"ok\":true,\"stdout\":\"hello\\n\",\"stderr\":\"\",\"exitCode\":0,"
                              "\"files\":{}}") != 0)
                j->bad++;
            else
                pr_outcome_clear(&oc);
            pr_buf_free(&out);
            pr_fs_free(fs);
        } else {
            pr_response r;
            pr_error e;
            if (!pr_run(j->h, &j->req, &r, &e))
                j->bad++;
            else
                pr_response_clear(&r);
        }
    }
    j->secs = now() - t0;
    return NULL;
}

static void bench_api(pr_host *h, pr_program *p, pr_request req, int mode, int workers, int runs) {
    job jobs[8];
    pthread_t t[8];
    for (int i = 0; i < workers; i++) {
        jobs[i] = (job){h, p, req, mode, runs, 0, 0};
        pthread_create(&t[i], NULL, worker, &jobs[i]);
    }
    double total = 0, worst = 0;
    int bad = 0;
    for (int i = 0; i < workers; i++) {
        pthread_join(t[i], NULL);
        total += runs / jobs[i].secs;
        if (jobs[i].secs > worst) worst = jobs[i].secs;
        bad += jobs[i].bad;
    }
    printf("%-5s %d worker%s: %8.0f runs/s total, %7.0f runs/s per worker, %6.1f us/run%s\n",
           mode ? "call" : "exec", workers, workers > 1 ? "s" : " ", total, total / workers,
           worst / runs * 1e6, bad ? "  (WRONG RESULTS)" : "");
}

/* Runs `runs` requests through `peri isolate serve --workers N`; prints runs/s and the
 * server's peak RSS. */
static void bench_serve(const char *peri, const char *b64text, const char *digest, int workers,
                        int runs) {
    int in[2], out[2];
    if (pipe(in) || pipe(out)) return;
    pid_t pid = fork();
    if (pid == 0) {
        dup2(in[0], 0);
        dup2(out[1], 1);
        close(in[1]);
        close(out[0]);
        char w[16];
        snprintf(w, sizeof w, "%d", workers);
        execl(peri, peri, "isolate", "serve", "--workers", w, (char *)NULL);
        _exit(127);
    }
    close(in[0]);
    close(out[1]);
    size_t len = strlen(b64text) + 512;
    char *line = malloc(len);
    int n =
        snprintf(line, len,
                 "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"isolate/run\",\"params\":{"
                 "\"runner\":\"LOADER\",\"scope\":\"bench\",\"digest\":\"%s\",\"program\":\"%s\","
                 "\"input\":\"{}\"}}\n",
                 digest, b64text);
    /* A writer child keeps the pipe full while we read answers. */
    pid_t wp = fork();
    if (wp == 0) {
        close(out[0]);
        for (int i = 0; i < runs; i++) {
            size_t off = 0;
            while (off < (size_t)n) {
                ssize_t k = write(in[1], line + off, (size_t)n - off);
                if (k <= 0) _exit(1);
                off += (size_t)k;
            }
        }
        _exit(0);
    }
    close(in[1]);
    double t0 = now();
    FILE *f = fdopen(out[0], "r");
    char *ans = NULL;
    size_t cap = 0;
    int got = 0, ok = 0;
    while (got < runs && getline(&ans, &cap, f) > 0) {
        got++;
        ok += strstr(ans, "\\\"ok\\\":true") != NULL;
    }
    double secs = now() - t0;
    char path[64], buf[4096];
    snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
    FILE *st = fopen(path, "r");
    long hwm = -1;
    while (st && fgets(buf, sizeof buf, st))
        if (strncmp(buf, "VmHWM:", 6) == 0) hwm = atol(buf + 6);
    if (st) fclose(st);
    waitpid(wp, NULL, 0);
    fclose(f);
    int status;
    waitpid(pid, &status, 0);
    printf("serve %d worker%s: %8.0f runs/s total (%d runs, %d ok), peak RSS %ld KiB\n", workers,
           workers > 1 ? "s" : " ", runs / secs, runs, ok, hwm);
    free(ans);
    free(line);
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: peri-room-bench HELLO.wasm [PERI [BIG.wasm]]\n");
        return 2;
    }
    size_t n;
    uint8_t *bytes = slurp(argv[1], &n);
    if (!bytes) return 1;
    uint8_t d[32];
    char hex[65];
    pr_sha256(bytes, n, d);
    pr_hex(d, 32, hex);
    size_t tl;
    char *text = b64(bytes, n, &tl);
    pr_error e;
    pr_host *h = pr_host_new(NULL, &e);
    /* exec runs use their own scope: a program loaded without its Base64 text would
     * make every pr_run in the same scope decode and hash again. */
    pr_program *p = pr_program_load(h, (pr_str){"bench-exec", 10}, bytes, n, &e);
    if (!p) {
        fprintf(stderr, "%s\n", e.message);
        return 1;
    }
    pr_request req = {{"LOADER", 6}, {"bench", 5}, {hex, 64}, {text, tl}, {"{}", 2}};
    printf("WASI hello: %zu bytes of Wasm, %zu of Base64\n", n, tl);
    int runs = getenv("RUNS") ? atoi(getenv("RUNS")) : 20000;
    bench_api(h, p, req, 0, 1, runs / 10); /* warm-up */
    for (int w = 1; w <= 2; w++) {
        bench_api(h, p, req, 0, w, runs);
        bench_api(h, p, req, 1, w, runs / 4);
    }
    pr_program_release(p);
    if (argc > 2) {
        for (int w = 1; w <= 2; w++)
            bench_serve(argv[2], text, hex, w, runs / 10);
    }
    if (argc > 3) {
        size_t bn;
        uint8_t *big = slurp(argv[3], &bn);
        if (big) {
            char bhex[65];
            pr_sha256(big, bn, d);
            pr_hex(d, 32, bhex);
            size_t btl;
            char *btext = b64(big, bn, &btl);
            pr_request breq = {{"LOADER", 6}, {"cold", 4}, {bhex, 64}, {btext, btl}, {"{}", 2}};
            double t0 = now();
            pr_response r;
            bool ok = pr_run(h, &breq, &r, &e);
            double cold = now() - t0;
            t0 = now();
            pr_response r2;
            bool ok2 = pr_run(h, &breq, &r2, &e);
            double warm = now() - t0;
            printf("cold run of a %.2f MiB module: %.1f ms (then cached: %.2f ms) %s\n",
                   bn / 1048576.0, cold * 1e3, warm * 1e3, ok && ok2 ? r.output : e.message);
            if (ok) pr_response_clear(&r);
            if (ok2) pr_response_clear(&r2);
            free(btext);
            free(big);
        }
    }
    pr_host_free(h);
    free(text);
    free(bytes);
    return 0;
}
