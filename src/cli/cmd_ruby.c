/*
 * cmd_ruby.c — `peri ruby [OPTIONS] SCRIPT.rb`: runs a Ruby script in the room with
 * Ruby's WebAssembly build (docs/ruby.md), like `ruby SCRIPT.rb`: stdout and stderr
 * stream, the exit status is the script's. --repeat N runs it N times in one process
 * (every run after the first starts from the startup snapshot) and --time prints each
 * run's wall and CPU time on stderr (bench/ruby.sh uses both).
 */
#include "cli/commands.h"
#include "peri/room.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static void usage(FILE *f) {
    fprintf(f, "usage: peri ruby [OPTIONS] SCRIPT.rb\n"
               "Runs a Ruby script in the room (Ruby 3.4's WebAssembly build).\n"
               "  --wasm PATH     ruby+stdlib.wasm (default: $PERI_RUBY_WASM, else the cache of\n"
               "                  scripts/deps.sh: ~/.cache/peri/ruby-3.4-wasm-wasi-2.10.1/)\n"
               "  --stdin FILE    the script's standard input (default: empty)\n"
               "  --file GUEST=HOST  put host file HOST at GUEST in the room (e.g. /请求/in.txt)\n"
               "  --cpu-ms N      CPU limit per run (default 1000, at most 1000)\n"
               "  --repeat N      run N times in one process (later runs start from the snapshot)\n"
               "  --time          print each run's wall and CPU time on stderr\n"
               "  --engine E      execution tier: auto (default; $PERI_ENGINE if set), interp\n"
               "                  or jit (docs/jit.md)\n");
}

static void on_output(void *ud, int stream, const char *s, size_t n) {
    (void)ud;
    fwrite(s, 1, n, stream == PR_STDERR ? stderr : stdout);
    if (stream == PR_STDERR) fflush(stderr);
}

static double ms(const struct timespec *a, const struct timespec *b) {
    return (double)(b->tv_sec - a->tv_sec) * 1e3 + (double)(b->tv_nsec - a->tv_nsec) / 1e6;
}

#define MAX_FILES 64

int peri_cmd_ruby(int argc, char **argv) {
    const char *wasm = NULL, *script = NULL, *stdin_path = NULL, *files[MAX_FILES];
    size_t nfiles = 0;
    unsigned long repeat = 1, cpu = 0;
    bool timed = false;
    int engine = peri_engine_default();
    if (engine < 0) return 2;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        char *end = NULL;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(a, "--time")) {
            timed = true;
        } else if (!strcmp(a, "--engine") && v) {
            if ((engine = peri_engine_parse(argv[++i])) < 0) goto bad;
        } else if (!strcmp(a, "--wasm") && v) {
            wasm = argv[++i];
        } else if (!strcmp(a, "--stdin") && v) {
            stdin_path = argv[++i];
        } else if (!strcmp(a, "--file") && v && strchr(v, '=') && nfiles < MAX_FILES) {
            files[nfiles++] = argv[++i];
        } else if (!strcmp(a, "--repeat") && v) {
            repeat = strtoul(argv[++i], &end, 10);
            if (*end || repeat == 0 || repeat > 100000) goto bad;
        } else if (!strcmp(a, "--cpu-ms") && v) {
            cpu = strtoul(argv[++i], &end, 10);
            if (*end || cpu == 0 || cpu > PR_CPU_MS_MAX) goto bad;
        } else if (a[0] != '-' && !script) {
            script = a;
        } else {
            goto bad;
        }
    }
    if (!script) goto bad;
    char def[4096];
    if (!wasm) {
        const char *env = getenv("PERI_RUBY_WASM"), *xdg = getenv("XDG_CACHE_HOME");
        const char *home = getenv("HOME");
        if (env && *env)
            wasm = env;
        else {
            if (xdg && *xdg)
                snprintf(def, sizeof def, "%s/peri/ruby-3.4-wasm-wasi-2.10.1/ruby+stdlib.wasm",
                         xdg);
            else
                snprintf(def, sizeof def,
                         "%s/.cache/peri/ruby-3.4-wasm-wasi-2.10.1/ruby+stdlib.wasm",
                         home ? home : "");
            wasm = def;
        }
    }
    size_t wlen = 0, slen = 0, inlen = 0;
    unsigned char *mod = (unsigned char *)peri_read_file(wasm, false, &wlen),
                  *src = (unsigned char *)peri_read_file(script, false, &slen);
    unsigned char *in =
        stdin_path ? (unsigned char *)peri_read_file(stdin_path, false, &inlen) : NULL;
    int rc = 1;
    pr_error err;
    pr_host *h = NULL;
    pr_program *p = NULL;
    pr_fs *fs = NULL;
    if (!mod) {
        fprintf(stderr,
                "peri ruby: cannot read Ruby's WebAssembly build at %s (scripts/deps.sh fetches "
                "@ruby/3.4-wasm-wasi)\n",
                wasm);
        goto done;
    }
    if (!src || (stdin_path && !in)) {
        fprintf(stderr, "peri ruby: cannot read %s\n", !src ? script : stdin_path);
        goto done;
    }
    pr_host_config cfg = {.cpu_ms = (uint32_t)cpu, .engine = engine};
    h = pr_host_new(&cfg, &err);
    p = h ? pr_program_load(h, (pr_str){"ruby", 4}, mod, wlen, &err) : NULL;
    if (!p) {
        fprintf(stderr, "peri ruby: %s\n", err.message);
        goto done;
    }
    for (unsigned long run = 0; run < repeat; run++) {
        pr_fs_free(fs);
        fs = pr_fs_new();
        if (!fs) goto done;
        for (size_t i = 0; i < nfiles; i++) {
            const char *eq = strchr(files[i], '=');
            size_t flen;
            unsigned char *data = (unsigned char *)peri_read_file(eq + 1, false, &flen);
            int w = data ? pr_fs_write(fs, files[i], (size_t)(eq - files[i]), data, flen) : -1;
            free(data);
            if (w) {
                fprintf(stderr, "peri ruby: cannot put %s into the room\n", eq + 1);
                goto done;
            }
        }
        pr_exec_options opt = {.fs = fs,
                               .on_output = on_output,
                               .stdin_data = in,
                               .stdin_len = inlen,
                               .source = {(const char *)src, slen}};
        pr_outcome oc;
        struct timespec t0, t1, c0, c1;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c0);
        bool ok = pr_exec(h, p, &opt, &oc, &err);
        clock_gettime(CLOCK_MONOTONIC, &t1);
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c1);
        fflush(stdout);
        if (timed)
            fprintf(stderr, "peri ruby: run %lu: %.1f ms (cpu %.1f ms)\n", run + 1, ms(&t0, &t1),
                    ms(&c0, &c1));
        if (!ok) {
            fprintf(stderr, "peri ruby: %s\n", err.message);
            rc = 1;
            continue;
        }
        if (oc.error) fprintf(stderr, "peri ruby: %s\n", oc.error);
        rc = (int)(oc.exit_code & 0xff); /* a process exit status, as `ruby` gives */
        pr_outcome_clear(&oc);
    }
done:
    pr_fs_free(fs);
    pr_program_release(p);
    pr_host_free(h);
    free(mod);
    free(src);
    free(in);
    return rc;
bad:
    usage(stderr);
    return 2;
}
