/*
 * place_bench.c — per-run overhead of placement, measured side by side.
 *
 *   peri-place-bench [ROUNDS] [HELLO.wasm] [CGROUP_ROOT]
 *
 * Every round runs each case once, in a fixed interleaved order, so load bursts on a
 * shared machine hit all cases alike; prints the median and p90 wall time per run and
 * the median CPU time (user + sys of this process and of its reaped descendants):
 *   sh -c true            fork + exec of /bin/sh -c true (the floor)
 *   bare bwrap            bwrap with the sandbox's namespaces (user, pid, ipc, uts,
 *                         cgroup, net), /usr read-only, running /bin/sh -c true
 *   native sandbox true   pl_run of {"shell":"true"} (requirements shell): L1 decision,
 *                         scratch dir, cgroup leaf, seccomp, uid switch, bwrap, reap,
 *                         evidence, cleanup
 *   wasm_room hello       pl_run of the WASI hello: L1 (import scan), admission, room
 */
#include "peri/place.h"

#include <spawn.h>
#include <sys/resource.h>
#include <stdio.h>
#include <sys/stat.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

static double now_us(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e6 + (double)t.tv_nsec / 1e3;
}

/* CPU time (user + sys) of this process and of its reaped descendants, in us. */
static double cpu_us(void) {
    struct rusage a, b;
    getrusage(RUSAGE_SELF, &a);
    getrusage(RUSAGE_CHILDREN, &b);
    return (double)(a.ru_utime.tv_sec + a.ru_stime.tv_sec + b.ru_utime.tv_sec + b.ru_stime.tv_sec) *
               1e6 +
           (double)(a.ru_utime.tv_usec + a.ru_stime.tv_usec + b.ru_utime.tv_usec +
                    b.ru_stime.tv_usec);
}

static int spawn_wait(char *const argv[]) {
    pid_t pid;
    if (posix_spawn(&pid, argv[0], NULL, NULL, argv, environ) != 0) return -1;
    int st;
    if (waitpid(pid, &st, 0) != pid) return -1;
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

enum { C_SH, C_BWRAP, C_NATIVE, C_WSHELL, C_WASM, NC };
static const char *const NAMES[NC] = {
    "sh -c true", "bare bwrap (sh -c true)", "native sandbox: {\"shell\":\"true\"}",
    "workspace shell (agent's shell tool)", "wasm_room: WASI hello"};

int main(int argc, char **argv) {
    int rounds = argc > 1 ? atoi(argv[1]) : 30;
    const char *hello = argc > 2 ? argv[2] : PLACE_BENCH_HELLO;
    if (rounds < 1) rounds = 1;
    pl_error err;
    /* argv[3]: another cgroup root ("none": a path that does not exist, i.e. no cgroup) */
    pl_config cfg = {.cgroup_root = argc > 3 ? argv[3] : NULL};
    pl_ctx *pc = pl_new(&cfg, &err);
    if (!pc) {
        fprintf(stderr, "pl_new: %s\n", err.message);
        return 1;
    }
    char why[256];
    if (!pl_native_available(pc, why, sizeof why)) {
        fprintf(stderr, "native sandbox unavailable: %s\n", why);
        pl_free(pc);
        return 1;
    }
    char *sh[] = {"/bin/sh", "-c", "true", NULL};
    char *bw[] = {"/usr/bin/bwrap",
                  "--unshare-user",
                  "--unshare-pid",
                  "--unshare-ipc",
                  "--unshare-uts",
                  "--unshare-cgroup-try",
                  "--unshare-net",
                  "--as-pid-1",
                  "--uid",
                  "1000",
                  "--gid",
                  "1000",
                  "--die-with-parent",
                  "--tmpfs",
                  "/",
                  "--ro-bind",
                  "/usr",
                  "/usr",
                  "--symlink",
                  "usr/bin",
                  "/bin",
                  "--symlink",
                  "usr/lib",
                  "/lib",
                  "--symlink",
                  "usr/lib64",
                  "/lib64",
                  "--proc",
                  "/proc",
                  "--dev",
                  "/dev",
                  "/bin/sh",
                  "-c",
                  "true",
                  NULL};
    pl_request nat = {.run_id = "bench",
                      .kind = PL_PROGRAM_SHELL,
                      .program = "true",
                      .requirements = PL_REQ_SHELL};
    pl_request wasm = {.run_id = "bench", .kind = PL_PROGRAM_WASM, .program = hello};
    /* the agent's shell tool: a workspace run, here a project with .git (HEAD, hooks/)
     * and .peri (the masks over its control files are part of the cost) */
    char ws[] = "/tmp/peri-place-bench-ws-XXXXXX";
    if (!mkdtemp(ws)) return 1;
    char sub[sizeof ws + 32];
    snprintf(sub, sizeof sub, "%s/.git", ws);
    mkdir(sub, 0755);
    snprintf(sub, sizeof sub, "%s/.git/hooks", ws);
    mkdir(sub, 0755);
    snprintf(sub, sizeof sub, "%s/.peri", ws);
    mkdir(sub, 0755);
    snprintf(sub, sizeof sub, "%s/.git/HEAD", ws); /* a repository to git (masks.c) */
    FILE *head = fopen(sub, "w");
    if (!head || fputs("ref: refs/heads/main\n", head) < 0 || fclose(head) != 0) return 1;
    pl_request wsh = {.run_id = "bench",
                      .kind = PL_PROGRAM_SHELL,
                      .program = "true",
                      .requirements = PL_REQ_SHELL,
                      .state_class = PL_STATE_NATIVE_WORKSPACE_REF,
                      .workspace = ws};
    double *t[NC], *u[NC];
    for (int c = 0; c < NC; c++) {
        t[c] = calloc((size_t)rounds, sizeof(double));
        u[c] = calloc((size_t)rounds, sizeof(double));
    }
    int bad = 0;
    for (int r = -1; r < rounds; r++) { /* round -1 warms up */
        for (int c = 0; c < NC; c++) {
            double t0 = now_us(), c0 = cpu_us();
            bool ok = true;
            if (c == C_SH)
                ok = spawn_wait(sh) == 0;
            else if (c == C_BWRAP)
                ok = spawn_wait(bw) == 0;
            else {
                pl_report rep;
                const pl_request *rq = c == C_NATIVE ? &nat : c == C_WSHELL ? &wsh : &wasm;
                ok = pl_run(pc, rq, NULL, NULL, &rep, &err) && rep.result.ok &&
                     rep.result.backend ==
                         (c == C_WASM ? PL_BACKEND_WASM_ROOM : PL_BACKEND_NATIVE_SANDBOX);
                pl_report_clear(&rep);
            }
            double dt = now_us() - t0, dc = cpu_us() - c0;
            if (!ok) bad++;
            if (r >= 0) {
                t[c][r] = dt;
                u[c][r] = dc;
            }
        }
    }
    /* the workspace's own cost (its bind, id mapping, control-file masks), paired per
     * round so that a load burst hits both sides of the difference */
    double *dw = calloc((size_t)rounds, sizeof(double)),
           *dc = calloc((size_t)rounds, sizeof(double));
    for (int r = 0; dw && dc && r < rounds; r++) {
        dw[r] = t[C_WSHELL][r] - t[C_NATIVE][r];
        dc[r] = u[C_WSHELL][r] - u[C_NATIVE][r];
    }
    if (dw && dc) {
        qsort(dw, (size_t)rounds, sizeof(double), cmp);
        qsort(dc, (size_t)rounds, sizeof(double), cmp);
    }
    printf("%-38s %10s %10s %12s\n", "case (per run)", "wall ms", "p90 ms", "CPU ms");
    double med[NC], cmed[NC];
    for (int c = 0; c < NC; c++) {
        qsort(t[c], (size_t)rounds, sizeof(double), cmp);
        qsort(u[c], (size_t)rounds, sizeof(double), cmp);
        med[c] = t[c][rounds / 2];
        cmed[c] = u[c][rounds / 2];
        printf("%-38s %10.2f %10.2f %12.2f\n", NAMES[c], med[c] / 1e3,
               t[c][(rounds * 9) / 10] / 1e3, cmed[c] / 1e3);
        free(t[c]);
        free(u[c]);
    }
    printf("native sandbox / bare bwrap: %.2fx wall, %.2fx CPU\n", med[C_NATIVE] / med[C_BWRAP],
           cmed[C_NATIVE] / cmed[C_BWRAP]);
    printf("wasm_room hello / sh -c true: %.2fx wall, %.2fx CPU\n", med[C_WASM] / med[C_SH],
           cmed[C_WASM] / cmed[C_SH]);
    if (dw && dc)
        printf("workspace shell - native sandbox (paired per round, median): %.2f ms wall, "
               "%.2f ms CPU\n",
               dw[rounds / 2] / 1e3, dc[rounds / 2] / 1e3);
    free(dw);
    free(dc);
    if (bad) fprintf(stderr, "%d runs failed\n", bad);
    char rm[sizeof ws + 16];
    snprintf(rm, sizeof rm, "rm -rf %s", ws);
    if (system(rm) != 0) fprintf(stderr, "could not remove %s\n", ws);
    pl_free(pc);
    return bad ? 1 : 0;
}
