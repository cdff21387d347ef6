/*
 * room_yuyan_bench.c — `peri-room-yuyan-bench`: runs/s of a small 豫言-ABI program
 * (tests/room/yuyan/fixtures/probe.wasm, command "echo": reads one input file, writes
 * four files, prints one line) with a cached module:
 *   exec  = fresh instance + fresh FS (with the input file) + run + result JSON
 *   call  = the whole contract call pr_run (Base64, SHA-256, checks, input JSON, exec)
 *   serve = `peri isolate serve --workers N` fed newline-delimited requests
 * each with 1 and 2 workers (threads / serve workers).
 * usage: peri-room-yuyan-bench PROBE.wasm [PERI]
 */
#include "peri/room.h"
#include "room/room_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define INPUT "{\"args\":[\"echo\"],\"files\":{\"/请求/路径.txt\":\"/x\"}}"
#define WANT                                                                                       \
    "{\"ok\":true,\"stdout\":\"你好\\n\",\"stderr\":\"\",\"exitCode\":0,\"files\":{\"/数据/"   \
    "记录.txt\":"                                                                                \
    "\"见：/x\\n\",\"/响应/正文.txt\":\"回显：/x\\n\"}}"

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static char *b64(const uint8_t *d, size_t n) {
    static const char A[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    char *o = malloc((n + 2) / 3 * 4 + 1);
    size_t k = 0;
    if (!o) return NULL;
    for (size_t i = 0; i < n; i += 3) {
        uint32_t v = (uint32_t)d[i] << 16 | (i + 1 < n ? (uint32_t)d[i + 1] << 8 : 0) |
                     (i + 2 < n ? d[i + 2] : 0);
        o[k++] = A[v >> 18];
        o[k++] = A[(v >> 12) & 63];
        o[k++] = i + 1 < n ? A[(v >> 6) & 63] : '=';
        o[k++] = i + 2 < n ? A[v & 63] : '=';
    }
    o[k] = 0;
    return o;
}

typedef struct job {
    pr_host *h;
    pr_program *p;
    pr_request req;
    bool call;
    int runs, bad;
    double secs;
} job;

static void *worker(void *arg) {
    job *j = arg;
    static const pr_str args[1] = {{"echo", 4}};
    double t0 = now();
    for (int i = 0; i < j->runs; i++) {
        if (!j->call) {
            pr_fs *fs = pr_fs_new();
            pr_fs_write(fs, "/请求/路径.txt", strlen("/请求/路径.txt"), "/x", 2);
            pr_exec_options opt = {.args = args, .nargs = 1, .fs = fs};
            pr_outcome oc;
            pr_error e;
            pr_buf out = {0};
            if (!pr_exec(j->h, j->p, &opt, &oc, &e))
                j->bad++;
            else {
                if (!pr_result_json(&oc, fs, &out, &e) || strcmp(out.p, WANT) != 0) j->bad++;
                pr_outcome_clear(&oc);
            }
            pr_buf_free(&out);
            pr_fs_free(fs);
        } else {
            pr_response r;
            pr_error e;
            if (!pr_run(j->h, &j->req, &r, &e)) {
                j->bad++;
            } else {
                if (strcmp(r.output, WANT) != 0) j->bad++;
                pr_response_clear(&r);
            }
        }
    }
    j->secs = now() - t0;
    return NULL;
}

static void bench_api(pr_host *h, pr_program *p, pr_request req, bool call, int workers, int runs) {
    job jobs[2];
    pthread_t t[2];
    for (int i = 0; i < workers; i++) {
        jobs[i] = (job){h, p, req, call, runs, 0, 0};
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
           call ? "call" : "exec", workers, workers > 1 ? "s" : " ", total, total / workers,
           worst / runs * 1e6, bad ? "  (WRONG RESULTS)" : "");
}

static void bench_serve(const char *peri, const char *text, const char *hex, int workers,
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
    size_t cap = strlen(text) + 512;
    char *line = malloc(cap);
    if (!line) return;
    int n = snprintf(line, cap,
                     "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"isolate/run\",\"params\":{"
                     "\"runner\":\"LOADER\",\"scope\":\"bench\",\"digest\":\"%s\",\"program\":"
                     "\"%s\",\"input\":\"{\\\"args\\\":[\\\"echo\\\"],\\\"files\\\":{\\\"/请求/"
                     "路径.txt\\\":\\\"/x\\\"}}\"}}\n",
                     hex, text);
    pid_t wp = fork(); /* keeps the request pipe full while we read answers */
    if (wp == 0) {
        close(out[0]);
        for (int i = 0; i < runs; i++)
            for (size_t off = 0; off < (size_t)n;) {
                ssize_t k = write(in[1], line + off, (size_t)n - off);
                if (k <= 0) _exit(1);
                off += (size_t)k;
            }
        _exit(0);
    }
    close(in[1]);
    double t0 = now();
    FILE *f = fdopen(out[0], "r");
    char *ans = NULL;
    size_t acap = 0;
    int got = 0, ok = 0;
    while (got < runs && getline(&ans, &acap, f) > 0) {
        got++;
        ok += strstr(ans, "回显：/x") != NULL;
    }
    double secs = now() - t0;
    waitpid(wp, NULL, 0);
    fclose(f);
    waitpid(pid, NULL, 0);
    printf("serve %d worker%s: %8.0f runs/s total (%d runs, %d ok)\n", workers,
           workers > 1 ? "s" : " ", runs / secs, runs, ok);
    free(ans);
    free(line);
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: peri-room-yuyan-bench PROBE.wasm [PERI]\n");
        return 2;
    }
    FILE *f = fopen(argv[1], "rb");
    if (!f) return 1;
    uint8_t bytes[1 << 16];
    size_t n = fread(bytes, 1, sizeof bytes, f);
    fclose(f);
    uint8_t d[32];
    char hex[65];
    pr_sha256(bytes, n, d);
    pr_hex(d, 32, hex);
    char *text = b64(bytes, n);
    pr_error e;
    pr_host *h = pr_host_new(NULL, &e);
    pr_program *p = h ? pr_program_load(h, (pr_str){"bench", 5}, bytes, n, &e) : NULL;
    if (!text || !p) {
        fprintf(stderr, "%s\n", e.message);
        return 1;
    }
    printf("豫言 probe echo: %zu bytes of Wasm\n", n);
    pr_request req = {
        {"LOADER", 6}, {"bench", 5}, {hex, 64}, {text, strlen(text)}, {INPUT, strlen(INPUT)}};
    int runs = 20000;
    for (int w = 1; w <= 2; w++) {
        bench_api(h, p, req, false, w, runs);
        bench_api(h, p, req, true, w, runs);
    }
    if (argc > 2)
        for (int w = 1; w <= 2; w++)
            bench_serve(argv[2], text, hex, w, runs / 4);
    pr_program_release(p);
    pr_host_free(h);
    free(text);
    return 0;
}
