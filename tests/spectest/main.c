/*
 * main.c — peri-spectest: runs the official testsuite (../shared/spectest, see its
 * MANIFEST.md) against the engine.
 *
 *   peri-spectest [--only NAME] [--scope wasm2|wasm3] [--strict] [--no-fork]
 *                 [--skip-if-absent] [-v]
 *
 * Which scripts run is decided by scope.json of the data folder, plus the scripts of
 * its "later" stage that scope.c lists as implemented by the engine: scope "wasm2"
 * runs its "wasm2" list; "wasm3" runs "wasm2" + "wasm3" + the promoted "later"
 * scripts; everything else is skipped and its assertions are counted as skipped. The
 * default scope is PERI_SPECTEST_DEFAULT_SCOPE (CMake cache variable
 * PERI_SPECTEST_SCOPE), overridden by the environment variable of the same name,
 * overridden by --scope. The data folder is SPECTEST_DIR or the compiled-in default;
 * when it is absent the runner says so and exits 1 (a failure: nothing was tested), or
 * 77 with --skip-if-absent.
 *
 * Each script runs in a child process, so an engine crash or hang (PERI_SPECTEST_TIMEOUT
 * seconds, default 120) fails that script only. Output: one line per script, failure
 * details, then exactly "N passed, M failed, K skipped". Exit 1 if anything failed.
 */
#include "st.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef PERI_SPECTEST_DEFAULT_DIR
#define PERI_SPECTEST_DEFAULT_DIR "../shared/spectest"
#endif
#ifndef PERI_SPECTEST_DEFAULT_SCOPE
#define PERI_SPECTEST_DEFAULT_SCOPE "wasm2"
#endif

static void usage(FILE *f) {
    fprintf(f,
            "usage: peri-spectest [--only NAME] [--scope wasm2|wasm3] [--strict] [--wat] "
            "[--no-fork] [--skip-if-absent] [--engine interp|jit|jit-sse2|lazy|auto]\n"
            "       [--bounds-checks guard|explicit] [--eager] [-v]\n"
            "  --only NAME   run one script (core/NAME, or GROUP/NAME), in scope or not\n"
            "  --scope S     wasm2 (default " PERI_SPECTEST_DEFAULT_SCOPE
            ") or wasm3 (= wasm2 + wasm3)\n"
            "  --strict      a module rejected as invalid instead of malformed (or the\n"
            "                reverse) fails the assertion\n"
            "  --no-fork     run scripts in this process (for debuggers)\n"
            "  --wat         text mode: every module from its text in the .wast source,\n"
            "                through the engine's text parser (pw_wat_to_wasm)\n"
            "  --skip-if-absent  exit 77 (CTest: skipped) when the data folder is absent\n"
            "  --engine E    execution tier: interp (default), jit, jit-sse2 (SIMD with\n"
            "                plain SSE2 only), lazy (the JIT, each function translated\n"
            "                at its first call) or auto\n"
            "  --bounds-checks B  guard (default: guard pages where possible) or explicit\n"
            "  --eager       compile every function when its module is made (default:\n"
            "                at its first call)\n"
            "  -v            print every failure detail and every skipped script\n"
            "environment: SPECTEST_DIR (data folder, default %s),\n"
            "             PERI_SPECTEST_SCOPE, PERI_SPECTEST_TIMEOUT (seconds per script)\n",
            PERI_SPECTEST_DEFAULT_DIR);
}

static bool is_dir(const char *p) {
    struct stat st;
    return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

/* Path of the JSON of script `name` ("x" means core/x, "g/x" group g). */
static void script_path(const char *dir, const char *name, char *buf, size_t n) {
    const char *slash = strchr(name, '/');
    if (slash)
        snprintf(buf, n, "%s/%s/%s.json", dir, name, slash + 1);
    else
        snprintf(buf, n, "%s/core/%s/%s.json", dir, name, name);
}

/* Runs one script, in a child unless no_fork; prints its line; adds to *total. */
static void run_one(const char *dir, const char *name, const st_opts *o, bool no_fork,
                    unsigned timeout, st_counts *total) {
    char path[4096];
    script_path(dir, name, path, sizeof path);
    st_counts c = {0};
    const char *problem = NULL;
    char problem_buf[128];
    if (no_fork) {
        if (!st_run_script(path, name, o, &c)) problem = "cannot read script";
    } else {
        int fd[2];
        fflush(stdout);
        fflush(stderr);
        pid_t pid = -1;
        if (pipe(fd) == 0 && (pid = fork()) == 0) {
            close(fd[0]);
            alarm(timeout);
            bool ok = st_run_script(path, name, o, &c);
            fflush(stdout);
            if (ok && write(fd[1], &c, sizeof c) != (ssize_t)sizeof c) _exit(3);
            /* exit, not _exit: under ASan the leak checker runs at exit and turns
             * a leak into a non-zero status, which fails the script below. */
            exit(ok ? 0 : 2);
        }
        if (pid < 0) {
            problem = "cannot fork";
        } else {
            close(fd[1]);
            ssize_t got;
            size_t have = 0;
            while (have < sizeof c &&
                   ((got = read(fd[0], (char *)&c + have, sizeof c - have)) > 0 ||
                    (got < 0 && errno == EINTR)))
                if (got > 0) have += (size_t)got;
            close(fd[0]);
            int status = 0;
            while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
            }
            if (WIFSIGNALED(status)) {
                int sig = WTERMSIG(status);
                snprintf(problem_buf, sizeof problem_buf, "%s (signal %d: %s)",
                         sig == SIGALRM ? "timed out" : "crashed", sig, strsignal(sig));
                problem = problem_buf;
            } else if (have != sizeof c) {
                problem = "cannot read script";
            } else if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
                /* The script ran, but the child then failed (a sanitizer report). */
                printf("  %s: runner child exited with status %d after the script "
                       "(sanitizer report above?)\n",
                       name, WIFEXITED(status) ? WEXITSTATUS(status) : -1);
                c.failed++;
            }
        }
    }
    if (problem) {
        /* Whatever ran, the script's assertions count as failed (text-only skipped). */
        long runnable = 0, text_only = 0;
        st_count_assertions(path, &runnable, &text_only);
        c = (st_counts){.failed = runnable ? runnable : 1, .skipped = text_only};
        printf("  %s: %s\n", name, problem);
    }
    printf("%-28s %6ld passed %6ld failed %6ld skipped", name, c.passed, c.failed, c.skipped);
    if (c.mismatched) printf("  (%ld malformed/invalid mismatches)", c.mismatched);
    if (o->wat)
        printf("  text: %ld modules, %ld byte-identical, %ld failed", c.wat_modules,
               c.wat_identical, c.wat_failed);
    putchar('\n');
    total->wat_modules += c.wat_modules;
    total->wat_identical += c.wat_identical;
    total->wat_failed += c.wat_failed;
    total->passed += c.passed;
    total->failed += c.failed;
    total->skipped += c.skipped;
    total->mismatched += c.mismatched;
}

/* Adds the assertions of a skipped script to total->skipped. */
static void skip_one(const char *dir, const char *name, const char *why, const st_opts *o,
                     st_counts *total, long *nscripts) {
    char path[4096];
    script_path(dir, name, path, sizeof path);
    long runnable = 0, text_only = 0;
    st_count_assertions(path, &runnable, &text_only);
    total->skipped += runnable + text_only;
    (*nscripts)++;
    if (o->verbose) printf("%-28s skipped (%s): %ld assertions\n", name, why, runnable + text_only);
}

int main(int argc, char **argv) {
    st_opts o = {.engine = PW_ENGINE_INTERP};
    const char *only = NULL, *scope = getenv("PERI_SPECTEST_SCOPE");
    bool no_fork = false, skip_if_absent = false;
    if (!scope || !*scope) scope = PERI_SPECTEST_DEFAULT_SCOPE;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "-v") == 0)
            o.verbose = 1;
        else if (strcmp(argv[i], "--strict") == 0)
            o.strict = true;
        else if (strcmp(argv[i], "--wat") == 0)
            o.wat = true;
        else if (strcmp(argv[i], "--no-fork") == 0)
            no_fork = true;
        else if (strcmp(argv[i], "--eager") == 0)
            o.eager = true;
        else if (strcmp(argv[i], "--skip-if-absent") == 0)
            skip_if_absent = true;
        else if (strcmp(argv[i], "--only") == 0 && i + 1 < argc)
            only = argv[++i];
        else if (strcmp(argv[i], "--scope") == 0 && i + 1 < argc)
            scope = argv[++i];
        else if (strcmp(argv[i], "--engine") == 0 && i + 1 < argc) {
            const char *e = argv[++i];
            if (strcmp(e, "interp") == 0)
                o.engine = PW_ENGINE_INTERP;
            else if (strcmp(e, "jit") == 0)
                o.engine = PW_ENGINE_JIT;
            else if (strcmp(e, "jit-sse2") == 0) /* the JIT's plain SSE2 SIMD path */
                o.engine = PW_ENGINE_JIT, o.jit_sse2 = true;
            else if (strcmp(e, "auto") == 0)
                o.engine = PW_ENGINE_AUTO;
            else if (strcmp(e, "lazy") == 0) /* the JIT, each function at its first call */
                o.engine = PW_ENGINE_LAZY;
            else {
                fprintf(stderr, "peri-spectest: unknown engine \"%s\" (interp, jit or auto)\n", e);
                return 2;
            }
        } else if (strcmp(argv[i], "--bounds-checks") == 0 && i + 1 < argc) {
            const char *b = argv[++i];
            if (strcmp(b, "guard") == 0)
                o.bounds = PW_BOUNDS_GUARD;
            else if (strcmp(b, "explicit") == 0)
                o.bounds = PW_BOUNDS_EXPLICIT;
            else {
                fprintf(stderr, "peri-spectest: unknown bounds checks \"%s\" (guard or explicit)\n",
                        b);
                return 2;
            }
        } else if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
            usage(stdout);
            return 0;
        } else {
            usage(stderr);
            return 2;
        }
    }
    if (strcmp(scope, "wasm2") != 0 && strcmp(scope, "wasm3") != 0) {
        fprintf(stderr, "peri-spectest: unknown scope \"%s\" (wasm2 or wasm3)\n", scope);
        return 2;
    }
    const char *dir = getenv("SPECTEST_DIR");
    if (!dir || !*dir) dir = PERI_SPECTEST_DEFAULT_DIR;
    if (!is_dir(dir)) {
        /* absent data is a failure: a run that tested nothing did not pass */
        printf("peri-spectest: the spec testsuite folder %s is absent; nothing to run "
               "(set SPECTEST_DIR)\n0 passed, 0 failed, 0 skipped\n",
               dir);
        return skip_if_absent ? 77 : 1;
    }
    const char *env_timeout = getenv("PERI_SPECTEST_TIMEOUT");
    unsigned timeout = env_timeout ? (unsigned)strtoul(env_timeout, NULL, 10) : 120;

    st_counts total = {0};
    if (only) {
        run_one(dir, only, &o, no_fork, timeout, &total);
    } else {
        char scope_path[4096];
        snprintf(scope_path, sizeof scope_path, "%s/scope.json", dir);
        pj_error_t jerr;
        pj_t *sj = pj_load_file(scope_path, 0, &jerr);
        if (!sj) {
            fprintf(stderr, "peri-spectest: %s: %s\n", scope_path, jerr.text);
            return 1;
        }
        /* The stages in order; a stage runs when it is within the scope. */
        static const char *const stages[] = {"wasm2", "wasm3", "later"};
        bool runs[3] = {true, strcmp(scope, "wasm3") == 0, false};
        long nskipped = 0, nrun = 0;
        for (int s = 0; s < 3; s++) {
            pj_t *list = pj_object_get(sj, stages[s]);
            size_t i;
            pj_t *n;
            pj_array_foreach(list, i, n) {
                const char *name = pj_string_value(n);
                if (!name) continue;
                if (runs[s] || (s == 2 && runs[1] && st_scope_promoted(name))) {
                    run_one(dir, name, &o, no_fork, timeout, &total);
                    nrun++;
                } else
                    skip_one(dir, name, stages[s], &o, &total, &nskipped);
            }
        }
        if (runs[1]) {
            const char *const *extra;
            size_t nextra = st_scope_extra(&extra);
            for (size_t i = 0; i < nextra; i++) {
                run_one(dir, extra[i], &o, no_fork, timeout, &total);
                nrun++;
            }
        }
        printf("scope %s: %ld scripts run, %ld scripts skipped (out of scope per scope.json "
               "and scope.c)\n",
               scope, nrun, nskipped);
        pj_decref(sj);
    }
    if (total.mismatched)
        printf("note: %ld rejected modules were %s (malformed vs invalid)%s\n", total.mismatched,
               o.strict ? "rejected in the wrong category" : "rejected in the other category",
               o.strict ? "" : "; --strict counts them as failures, -v lists them");
    if (o.wat)
        printf("text: %ld modules parsed from the .wast sources, %ld byte-identical to the "
               "reference encoding, %ld failed\n",
               total.wat_modules, total.wat_identical, total.wat_failed);
    printf("%ld passed, %ld failed, %ld skipped\n", total.passed, total.failed, total.skipped);
    return total.failed || total.wat_failed ? 1 : 0;
}
