/*
 * room_bench.c — `peri-room-bench`: runs/s of the room for a table of programs, each with
 * a cached module:
 *   WASI hello (tests/room/fixtures/hello.wasm): prints one line;
 *   豫言 probe (tests/room/yuyan/fixtures/probe.wasm, command "echo"): reads one input
 *     file, writes files, prints one line.
 * For each program, per worker thread (1 and 2 workers):
 *   exec  = fresh instance + fresh FS (with the input files) + run + result JSON
 *           (pr_exec + pr__result_json)
 *   call  = the whole contract call pr_run (Base64, SHA-256, checks, input JSON, exec)
 *   serve = `peri isolate serve --workers N` fed newline-delimited requests; prints the
 *           server's peak RSS
 * and, for the hello only, cold = first pr_run of a large module (digest + decode +
 * validate + compile + run). Every run's result (exec, call and each serve answer) is
 * compared with the exact expected result JSON; a mismatch prints "WRONG RESULTS" and
 * shows in serve's "ok" count.
 * usage: peri-room-bench HELLO.wasm [PERI [BIG.wasm]] [--yuyan PROBE.wasm]
 *   HELLO.wasm may be "-" (or absent) to run only the 豫言 case. RUNS (env, default 20000) sets the
 *   exec run count; call and serve use the per-case fractions in the table.
 */
#include "peri/room.h"
#include "room/room_int.h"

#include "peri/json.h"
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

typedef struct bench_case {
    const char *label;
    const pr_str *args; /* exec path: argv[1..] */
    size_t nargs;
    const char *const *files; /* exec path: input files as path, content pairs */
    size_t nfiles;
    const char *input;       /* contract input JSON (call, serve) */
    const char *want;        /* exact result JSON of every run */
    int call_div, serve_div; /* call runs = RUNS / call_div, serve runs = RUNS / serve_div */
} bench_case;

static const pr_str yuyan_args[] = {{"echo", 4}};
static const char *const yuyan_files[] = {"/请求/路径.txt", "/x"};

enum { CASE_HELLO, CASE_YUYAN };
static const bench_case cases[] = {
    [CASE_HELLO] = {"WASI hello", NULL, 0, NULL, 0, "{}",
                    "{\"ok\":true,\"stdout\":\"hello\\n\",\"stderr\":\"\",\"exitCode\":0,"
                    "\"files\":{}}",
                    4, 10},
    [CASE_YUYAN] = {"豫言 probe echo", yuyan_args, 1, yuyan_files, 1,
                    "{\"args\":[\"echo\"],\"files\":{\"/请求/路径.txt\":\"/x\"}}",
                    "{\"ok\":true,\"stdout\":\"你好\\n\",\"stderr\":\"\",\"exitCode\":0,"
                    "\"files\":{\"/数据/记录.txt\":\"见：/x\\n\",\"/响应/正文.txt\":"
                    "\"回显：/x\\n\"}}",
                    1, 4},
};

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* Owned by the caller (free); NULL when unreadable or out of memory. */
static uint8_t *slurp(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long l = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *b = l < 0 ? NULL : malloc((size_t)l + 1);
    if (!b || fread(b, 1, (size_t)l, f) != (size_t)l) l = -1;
    fclose(f);
    *n = (size_t)l;
    if (l < 0) free(b);
    return l < 0 ? NULL : b;
}

typedef struct job {
    const bench_case *c;
    pr_host *h;
    pr_program *p;
    pr_request req;
    bool call;
    int runs, bad;
    double secs;
} job;

static bool exec_once(const job *j) {
    const bench_case *c = j->c;
    pr_fs *fs = pr_fs_new();
    bool good = fs != NULL;
    for (size_t i = 0; good && i < c->nfiles; i++) {
        const char *path = c->files[2 * i], *data = c->files[2 * i + 1];
        good = pr_fs_write(fs, path, strlen(path), data, strlen(data)) == 0;
    }
    pr_exec_options opt = {.args = c->args, .nargs = c->nargs, .fs = fs};
    pr_outcome oc;
    pr_error e;
    pb_buf out = {0};
    if (good && pr_exec(j->h, j->p, &opt, &oc, &e)) {
        good = pr__result_json(&oc, fs, &out, &e) && strcmp(out.p, c->want) == 0;
        pr_outcome_clear(&oc);
    } else {
        good = false;
    }
    pb_buf_free(&out);
    pr_fs_free(fs);
    return good;
}

static bool call_once(const job *j) {
    pr_response r;
    pr_error e;
    if (!pr_run(j->h, &j->req, &r, &e)) return false;
    bool good = strcmp(r.output, j->c->want) == 0;
    pr_response_clear(&r);
    return good;
}

static void *worker(void *arg) {
    job *j = arg;
    double t0 = now();
    for (int i = 0; i < j->runs; i++)
        j->bad += !(j->call ? call_once(j) : exec_once(j));
    j->secs = now() - t0;
    return NULL;
}

static void bench_api(const bench_case *c, pr_host *h, pr_program *p, pr_request req, bool call,
                      int workers, int runs) {
    job jobs[2];
    pthread_t t[2];
    for (int i = 0; i < workers; i++) {
        jobs[i] = (job){c, h, p, req, call, runs, 0, 0};
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

/* The request line and the text every answer must hold ("output": the expected result as
 * a JSON string). Both owned by the caller (free); false when out of memory. */
static bool serve_texts(const bench_case *c, const char *text, const char *hex, char **line,
                        char **needle) {
    pj_t *req = pj_pack("{s:s,s:i,s:s,s:{s:s,s:s,s:s,s:s,s:s}}", "jsonrpc", "2.0", "id", 1,
                        "method", "isolate/run", "params", "runner", "LOADER", "scope", "bench",
                        "digest", hex, "program", text, "input", c->input);
    pj_t *want = pj_string(c->want);
    char *l = req ? pj_dumps(req, PJ_COMPACT) : NULL;
    char *w = want ? pj_dumps(want, PJ_ENCODE_ANY) : NULL;
    pj_decref(req);
    pj_decref(want);
    *line = l ? malloc(strlen(l) + 2) : NULL;
    *needle = w ? malloc(strlen(w) + 16) : NULL;
    if (*line) sprintf(*line, "%s\n", l);
    if (*needle) sprintf(*needle, "\"output\":%s", w);
    free(l);
    free(w);
    if (*line && *needle) return true;
    free(*line);
    free(*needle);
    return false;
}

/* Runs `runs` requests through `peri isolate serve --workers N`; prints runs/s, how many
 * answers held the expected result, and the server's peak RSS. */
static void bench_serve(const bench_case *c, const char *peri, const char *text, const char *hex,
                        int workers, int runs) {
    char *line, *needle;
    if (!serve_texts(c, text, hex, &line, &needle)) return;
    size_t n = strlen(line);
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
    pid_t wp = fork(); /* keeps the request pipe full while we read answers */
    if (wp == 0) {
        close(out[0]);
        for (int i = 0; i < runs; i++)
            for (size_t off = 0; off < n;) {
                ssize_t k = write(in[1], line + off, n - off);
                if (k <= 0) _exit(1);
                off += (size_t)k;
            }
        _exit(0);
    }
    close(in[1]);
    double t0 = now();
    FILE *f = fdopen(out[0], "r");
    char *ans = NULL;
    size_t cap = 0;
    int got = 0, ok = 0;
    while (f && got < runs && getline(&ans, &cap, f) > 0) {
        got++;
        ok += strstr(ans, needle) != NULL;
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
    if (f) fclose(f);
    waitpid(pid, NULL, 0);
    printf("serve %d worker%s: %8.0f runs/s total (%d runs, %d ok), peak RSS %ld KiB\n", workers,
           workers > 1 ? "s" : " ", runs / secs, runs, ok, hwm);
    free(ans);
    free(line);
    free(needle);
}

/* The cold run of BIG.wasm: first pr_run (digest, decode, validate, compile, run), then
 * the same call again with the module cached. */
static void bench_cold(pr_host *h, const char *big_path) {
    size_t bn, btl;
    uint8_t *big = slurp(big_path, &bn), d[32];
    char bhex[65], *btext = big ? pr__base64_encode(big, bn, &btl) : NULL;
    if (!btext) {
        fprintf(stderr, "%s: cannot read\n", big_path);
        free(big);
        return;
    }
    pr__sha256(big, bn, d);
    pr__hex(d, 32, bhex);
    pr_request breq = {{"LOADER", 6}, {"cold", 4}, {bhex, 64}, {btext, btl}, {"{}", 2}};
    pr_error e;
    double t0 = now();
    pr_response r;
    bool ok = pr_run(h, &breq, &r, &e);
    double cold = now() - t0;
    t0 = now();
    pr_response r2;
    bool ok2 = ok && pr_run(h, &breq, &r2, &e);
    double warm = now() - t0;
    printf("cold run of a %.2f MiB module: %.1f ms (then cached: %.2f ms) %s\n", bn / 1048576.0,
           cold * 1e3, warm * 1e3, ok && ok2 ? r.output : e.message);
    if (ok) pr_response_clear(&r);
    if (ok2) pr_response_clear(&r2);
    free(btext);
    free(big);
}

/* Measures one case; PERI (or NULL) adds the serve rows. 0 ok, 1 when it cannot start. */
static int bench_case_run(pr_host *h, const bench_case *c, const char *wasm, const char *peri,
                          int runs) {
    size_t n, tl;
    uint8_t *bytes = slurp(wasm, &n), d[32];
    char hex[65], *text = bytes ? pr__base64_encode(bytes, n, &tl) : NULL;
    if (!text) {
        fprintf(stderr, "%s: cannot read\n", wasm);
        free(bytes);
        return 1;
    }
    pr__sha256(bytes, n, d);
    pr__hex(d, 32, hex);
    pr_error e;
    /* exec runs use their own scope: a program loaded without its Base64 text would
     * make every pr_run in the same scope decode and hash again. */
    pr_program *p = pr_program_load(h, (pr_str){"bench-exec", 10}, bytes, n, &e);
    if (!p) {
        fprintf(stderr, "%s: %s\n", wasm, e.message);
        free(text);
        free(bytes);
        return 1;
    }
    pr_request req = {
        {"LOADER", 6}, {"bench", 5}, {hex, 64}, {text, tl}, {c->input, strlen(c->input)}};
    printf("%s: %zu bytes of Wasm, %zu of Base64\n", c->label, n, tl);
    bench_api(c, h, p, req, false, 1, runs / 10); /* warm-up */
    for (int w = 1; w <= 2; w++) {
        bench_api(c, h, p, req, false, w, runs);
        bench_api(c, h, p, req, true, w, runs / c->call_div);
    }
    pr_program_release(p);
    if (peri)
        for (int w = 1; w <= 2; w++)
            bench_serve(c, peri, text, hex, w, runs / c->serve_div);
    free(text);
    free(bytes);
    return 0;
}

int main(int argc, char **argv) {
    const char *pos[3] = {NULL, NULL, NULL}, *yuyan = NULL;
    int npos = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--yuyan") == 0 && i + 1 < argc)
            yuyan = argv[++i];
        else if (argv[i][0] == '-' && argv[i][1] != 0)
            npos = 4; /* unknown option: usage */
        else if (npos < 3)
            pos[npos++] = argv[i];
        else
            npos = 4;
    }
    const char *hello = pos[0] && strcmp(pos[0], "-") != 0 ? pos[0] : NULL;
    if (npos > 3 || (!hello && !yuyan)) {
        fprintf(stderr, "usage: peri-room-bench HELLO.wasm [PERI [BIG.wasm]] "
                        "[--yuyan PROBE.wasm]\n");
        return 2;
    }
    int runs = getenv("RUNS") ? atoi(getenv("RUNS")) : 20000;
    if (runs < 40) runs = 40;
    pr_error e;
    pr_host *h = pr_host_new(NULL, &e);
    if (!h) {
        fprintf(stderr, "%s\n", e.message);
        return 1;
    }
    int rc = 0;
    if (hello) rc |= bench_case_run(h, &cases[CASE_HELLO], hello, pos[1], runs);
    if (hello && pos[2]) bench_cold(h, pos[2]);
    if (yuyan) rc |= bench_case_run(h, &cases[CASE_YUYAN], yuyan, pos[1], runs);
    pr_host_free(h);
    return rc;
}
