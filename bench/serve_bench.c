/*
 * serve_bench.c — `peri-serve-bench`: cached-hello throughput of `peri isolate serve`
 * with one worker, beside the cost of one cached run through the C API.
 *
 * usage: peri-serve-bench HELLO.wasm PERI [PERI_BASE]
 *   env RUNS (default 4000) requests per serve round and runs per API round,
 *   ROUNDS (default 5) rounds; each round measures, one after the other: pr_exec,
 *   pr_run, PERI's serve, PERI_BASE's serve (another build, e.g. before a change).
 *
 * serve: `PERI isolate serve --workers 1` is fed RUNS identical JSON-RPC requests
 * (the WASI hello, 55,908 characters of Base64 per line) through a pipe by a writer
 * process that never waits for answers (pipelined); this process reads the answers
 * from the other pipe and compares each with the exact expected line. Reported per
 * round: answers/s (wall, first byte written to last answer read) and the server's
 * CPU time per request (user + sys of all its threads, from wait4). The first request
 * compiles the module; the rest are cached runs.
 * pr_exec: fresh FS + run + result JSON of the cached program in this process (one
 * thread); pr_run: the whole contract call with the verified-text memo; both with their
 * CPU time per run (the thread's clock), which a loaded machine inflates far less than
 * wall time. "pipe floor": the CPU time per request of a process that only reads the
 * same request stream from a pipe and finds the newlines, the least any reading thread
 * can spend. Prints each round, the medians and the serve / pr_exec ratios per round.
 */
#include "peri/room.h"
#include "room/room_int.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define HELLO_WANT                                                                                 \
    "{\"ok\":true,\"stdout\":\"hello\\n\",\"stderr\":\"\",\"exitCode\":0,\"files\":{}}"

static double thread_cpu_now(void) {
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* Owned by the caller (free); NULL when unreadable. */
static uint8_t *slurp(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long l = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *b = l <= 0 ? NULL : malloc((size_t)l);
    if (b && fread(b, 1, (size_t)l, f) != (size_t)l) {
        free(b);
        b = NULL;
    }
    fclose(f);
    *n = (size_t)l;
    return b;
}

typedef struct serve_result {
    double per_s, cpu_us;
    double reader_us, worker_us; /* CPU per request of the reading and the worker thread */
    int ok;
} serve_result;

/* CPU time (s) of each thread of pid, from /proc/PID/task/TID/schedstat (its first
 * field: nanoseconds on a CPU): the main (reading) thread's and the largest other one's
 * (the worker). */
static void thread_cpu(pid_t pid, double *reader, double *worker) {
    char path[64];
    *reader = *worker = 0;
    snprintf(path, sizeof path, "/proc/%d/task", (int)pid);
    DIR *d = opendir(path);
    for (struct dirent *e; d && (e = readdir(d));) {
        if (e->d_name[0] == '.') continue;
        char sp[300];
        snprintf(sp, sizeof sp, "/proc/%d/task/%s/schedstat", (int)pid, e->d_name);
        FILE *f = fopen(sp, "r");
        unsigned long long ns = 0;
        bool got = f && fscanf(f, "%llu", &ns) == 1;
        if (f) fclose(f);
        if (!got) continue;
        double cpu = (double)ns / 1e9;
        if (atoi(e->d_name) == pid)
            *reader = cpu;
        else if (cpu > *worker)
            *worker = cpu;
    }
    if (d) closedir(d);
}

static void write_all(int fd, const char *p, size_t n) {
    while (n) {
        ssize_t k = write(fd, p, n);
        if (k <= 0) _exit(1);
        p += k;
        n -= (size_t)k;
    }
}

/* The floor of any server reading these requests from a pipe: a child process that
 * only reads them (1 MiB pipe buffer and reads, as serve) and finds each newline with
 * memchr, fed by the same kind of writer. Returns its CPU time per request (µs). */
static double floor_round(const char *line, size_t n, int runs) {
    int in[2];
    if (pipe(in)) return 0;
    pid_t pid = fork();
    if (pid == 0) {
        close(in[1]);
        (void)fcntl(in[0], F_SETPIPE_SZ, 1 << 20);
        size_t cap = 1 << 20, len = 0, lines = 0;
        char *b = malloc(cap);
        for (ssize_t k; b && (k = read(in[0], b + len, cap - len)) > 0;) {
            len += (size_t)k;
            size_t at = 0;
            for (char *nl; (nl = memchr(b + at, '\n', len - at)); at = (size_t)(nl - b) + 1)
                lines++;
            memmove(b, b + at, len - at);
            len -= at;
        }
        _exit(lines == (size_t)runs ? 0 : 1);
    }
    close(in[0]);
    pid_t wp = fork();
    if (wp == 0) {
        for (int i = 0; i < runs; i++)
            write_all(in[1], line, n);
        _exit(0);
    }
    close(in[1]);
    waitpid(wp, NULL, 0);
    struct rusage ru;
    int status;
    double us = 0;
    if (wait4(pid, &status, 0, &ru) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0)
        us = ((double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + (double)ru.ru_stime.tv_sec +
              ru.ru_stime.tv_usec / 1e6) /
             runs * 1e6;
    return us;
}

/* One serve round: RUNS pipelined requests, every answer checked. */
static serve_result serve_round(const char *peri, const char *line, size_t n, const char *want,
                                int runs) {
    serve_result r = {0, 0, 0, 0, 0};
    int in[2], out[2], hold[2];
    if (pipe(in) || pipe(out) || pipe(hold)) return r;
    pid_t pid = fork();
    if (pid == 0) {
        dup2(in[0], 0);
        dup2(out[1], 1);
        close(in[0]);
        close(in[1]);
        close(out[0]);
        close(out[1]);
        close(hold[0]);
        close(hold[1]);
        execl(peri, peri, "isolate", "serve", "--workers", "1", (char *)NULL);
        _exit(127);
    }
    close(in[0]);
    close(out[1]);
    double t0 = now();
    pid_t wp = fork(); /* the writer: keeps the request pipe full */
    if (wp == 0) {
        close(out[0]);
        close(hold[1]);
        for (int i = 0; i < runs; i++)
            write_all(in[1], line, n);
        /* Keeps the server's input open (the server alive, its threads readable) until
         * every answer is in. */
        char c;
        while (read(hold[0], &c, 1) > 0) {
        }
        _exit(0);
    }
    close(in[1]);
    close(hold[0]);
    size_t want_n = strlen(want), cap = 1 << 20, len = 0;
    char *buf = malloc(cap);
    int got = 0;
    while (buf && got < runs) {
        ssize_t k = read(out[0], buf + len, cap - len);
        if (k <= 0) break;
        len += (size_t)k;
        size_t at = 0;
        for (char *nl; (nl = memchr(buf + at, '\n', len - at)); at = (size_t)(nl - buf) + 1) {
            size_t l = (size_t)(nl - (buf + at));
            r.ok += l == want_n && memcmp(buf + at, want, l) == 0;
            got++;
        }
        memmove(buf, buf + at, len - at);
        len -= at;
        if (len == cap) break; /* an answer longer than 1 MiB: wrong anyway */
    }
    double secs = now() - t0;
    double reader, worker;
    thread_cpu(pid, &reader, &worker);
    r.reader_us = reader / runs * 1e6;
    r.worker_us = worker / runs * 1e6;
    close(hold[1]); /* the writer ends, the server sees end of input */
    free(buf);
    close(out[0]);
    waitpid(wp, NULL, 0);
    struct rusage ru;
    int status;
    if (wait4(pid, &status, 0, &ru) == pid) {
        double cpu = (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 +
                     (double)ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
        r.cpu_us = cpu / runs * 1e6;
    }
    r.per_s = got / secs;
    return r;
}

/* pr_exec + result JSON of the cached program, or (call) the whole pr_run; runs/s, and
 * the CPU time per run (µs, this thread's clock) in *cpu_us. */
static double api_round(pr_host *h, pr_program *p, const pr_request *req, bool call, int runs,
                        int *bad, double *cpu_us) {
    double t0 = now(), c0 = thread_cpu_now();
    for (int i = 0; i < runs; i++) {
        pr_error e;
        bool good;
        if (call) {
            pr_response res;
            good = pr_run(h, req, &res, &e) && strcmp(res.output, HELLO_WANT) == 0;
            if (good) pr_response_clear(&res);
        } else {
            pr_fs *fs = pr_fs_new();
            pr_exec_options opt = {.fs = fs};
            pr_outcome oc;
            pb_buf out = {0};
            good = fs && pr_exec(h, p, &opt, &oc, &e);
            if (good) {
                good = pr__result_json(&oc, fs, &out, &e) && strcmp(out.p, HELLO_WANT) == 0;
                pr_outcome_clear(&oc);
            }
            pb_buf_free(&out);
            pr_fs_free(fs);
        }
        *bad += !good;
    }
    *cpu_us = (thread_cpu_now() - c0) / runs * 1e6;
    return runs / (now() - t0);
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, int n) {
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

int main(int argc, char **argv) {
    if (argc < 3 || argc > 4) {
        fprintf(stderr, "usage: peri-serve-bench HELLO.wasm PERI [PERI_BASE]\n");
        return 2;
    }
    signal(SIGPIPE, SIG_IGN);
    int runs = getenv("RUNS") ? atoi(getenv("RUNS")) : 4000;
    int rounds = getenv("ROUNDS") ? atoi(getenv("ROUNDS")) : 5;
    if (runs < 10) runs = 10;
    if (rounds < 1 || rounds > 100) rounds = 5;
    size_t n, tl;
    uint8_t *bytes = slurp(argv[1], &n), d[32];
    char hex[65], *text = bytes ? pr__base64_encode(bytes, n, &tl) : NULL;
    if (!text) {
        fprintf(stderr, "%s: cannot read\n", argv[1]);
        return 1;
    }
    pr__sha256(bytes, n, d);
    pr__hex(d, 32, hex);

    /* The request line and the exact answer (id 1, scope "bench"). */
    pb_buf line = {0}, want = {0};
    bool ok = pb_buf_puts(&line, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"isolate/run\","
                                 "\"params\":{\"runner\":\"LOADER\",\"scope\":\"bench\","
                                 "\"digest\":\"") &&
              pb_buf_puts(&line, hex) && pb_buf_puts(&line, "\",\"program\":\"") &&
              pb_buf_put(&line, text, tl) && pb_buf_puts(&line, "\",\"input\":\"{}\"}}\n") &&
              pb_buf_puts(&want, "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"output\":") &&
              pr__json_str(&want, HELLO_WANT, strlen(HELLO_WANT)) &&
              pb_buf_puts(&want, ",\"isolate\":\"bench:") && pb_buf_puts(&want, hex) &&
              pb_buf_puts(&want, "\"}}");
    pr_error e;
    pr_host *h = ok ? pr_host_new(NULL, &e) : NULL;
    pr_program *p = h ? pr_program_load(h, (pr_str){"bench-exec", 10}, bytes, n, &e) : NULL;
    if (!p) {
        fprintf(stderr, "setup failed\n");
        return 1;
    }
    pr_request req = {{"LOADER", 6}, {"bench", 5}, {hex, 64}, {text, tl}, {"{}", 2}};
    printf("WASI hello: %zu bytes of Wasm, %zu of Base64; request line %zu bytes; "
           "%d requests per round, %d rounds\n",
           n, tl, line.len, runs, rounds);
    double ex[100], ca[100], exc[100], cac[100], sv[2][100], cpu[2][100], rd[2][100], wk[2][100];
    double ratio[2][100], cratio[2][100]; /* serve / pr_exec: answers/s, CPU per request */
    double fl[100];                       /* the pipe-reading floor, CPU per request */
    double warm;
    int bad = 0, nb = argc == 4 ? 2 : 1;
    bool wrong = false;
    api_round(h, p, &req, true, runs / 10, &bad, &warm); /* warm-up, caches the program */
    for (int r = 0; r < rounds; r++) {
        ex[r] = api_round(h, p, &req, false, runs, &bad, &exc[r]);
        ca[r] = api_round(h, p, &req, true, runs, &bad, &cac[r]);
        fl[r] = floor_round(line.p, line.len, runs);
        printf("round %d: pr_exec %6.0f runs/s (%5.1f us CPU), pr_run %6.0f runs/s (%5.1f us CPU), "
               "pipe floor %4.1f us",
               r + 1, ex[r], exc[r], ca[r], cac[r], fl[r]);
        for (int b = 0; b < nb; b++) {
            serve_result s = serve_round(argv[2 + b], line.p, line.len, want.p, runs);
            sv[b][r] = s.per_s;
            cpu[b][r] = s.cpu_us;
            rd[b][r] = s.reader_us;
            wk[b][r] = s.worker_us;
            ratio[b][r] = s.per_s / ex[r];
            cratio[b][r] = s.cpu_us / exc[r];
            wrong |= s.ok != runs;
            printf(", serve%s %6.0f/s (%5.1f us CPU: reader %5.1f, worker %5.1f; %d ok)",
                   b ? " (base)" : "", s.per_s, s.cpu_us, s.reader_us, s.worker_us, s.ok);
        }
        printf("\n");
        fflush(stdout);
    }
    double mex = median(ex, rounds), mca = median(ca, rounds);
    printf("median: pr_exec %.0f runs/s (%.1f us CPU/run), pr_run %.0f runs/s (%.1f us CPU/run)\n",
           mex, median(exc, rounds), mca, median(cac, rounds));
    printf("median: reading the requests from a pipe and finding their newlines alone: %.1f us "
           "CPU per request\n",
           median(fl, rounds));
    for (int b = 0; b < nb; b++) {
        printf("median: serve%s %.0f runs/s per worker, %.1f us server CPU per request "
               "(reading thread %.1f, worker thread %.1f) (%s)\n",
               b ? " (base)" : "", median(sv[b], rounds), median(cpu[b], rounds),
               median(rd[b], rounds), median(wk[b], rounds), argv[2 + b]);
        printf("median per round: serve%s / pr_exec: %.2f x the runs/s, %.2f x the CPU per "
               "request\n",
               b ? " (base)" : "", median(ratio[b], rounds), median(cratio[b], rounds));
    }
    if (bad || wrong) printf("WRONG RESULTS (%d API runs)\n", bad);
    pr_program_release(p);
    pr_host_free(h);
    pb_buf_free(&line);
    pb_buf_free(&want);
    free(text);
    free(bytes);
    return bad || wrong;
}
