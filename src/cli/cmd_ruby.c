/*
 * cmd_ruby.c — `peri ruby [OPTIONS] SCRIPT.rb`: runs a Ruby script in the room with
 * Ruby's WebAssembly build (docs/ruby.md), like `ruby SCRIPT.rb`: stdout and stderr
 * stream, the exit status is the script's. --repeat N runs it N times in one process
 * (every run after the first starts from the startup snapshot) and --time prints each
 * run's wall and CPU time on stderr (bench/ruby.sh uses both). Standard input is the
 * script's when it is not a terminal (a pipe, a file); --stdin FILE names one instead.
 * The first boot of Ruby takes seconds: when nothing has happened after one second, a
 * progress note goes to stderr (a live counter on a terminal, one line otherwise),
 * gone before the script's first output. Errors are in English; the room's limits are
 * the contract's (CPU at most 1000 ms per run).
 */
#include "cli/commands.h"
#include "peri/room.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static void usage(FILE *f) {
    fprintf(f, "usage: peri ruby [OPTIONS] SCRIPT.rb\n"
               "Runs a Ruby script in the room (Ruby 3.4's WebAssembly build).\n"
               "  --wasm PATH     ruby+stdlib.wasm (default: $PERI_RUBY_WASM, else the cache of\n"
               "                  scripts/deps.sh: $PERI_CACHE_DIR, else ~/.cache/peri, then\n"
               "                  ruby-3.4-wasm-wasi-2.10.1/ruby+stdlib.wasm)\n"
               "  --stdin FILE    the script's standard input (default: this command's stdin\n"
               "                  when it is a pipe or a file; empty on a terminal)\n"
               "  --file GUEST=HOST  put host file HOST at GUEST in the room (e.g. /请求/in.txt)\n"
               "  --cpu-ms N      CPU limit per run (default 1000, at most 1000)\n"
               "  --repeat N      run N times in one process (later runs start from the snapshot)\n"
               "  --time          print each run's wall and CPU time on stderr\n"
               "  --engine E      execution tier: auto (default; $PERI_ENGINE if set), interp\n"
               "                  or jit (docs/jit.md)\n"
               "Exit status: the script's; 1 when it cannot run (missing files, limits);\n"
               "2 for a usage error.\n");
}

/* The progress note of a slow first boot (see the header). The thread waits one second,
 * then shows the elapsed seconds until progress_stop; all output to stderr happens
 * under mu, so the script's own output never lands inside the note. */
typedef struct progress {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    pthread_t th;
    bool started, stop, shown, tty;
} progress;

static double since(const struct timespec *a) {
    struct timespec b;
    clock_gettime(CLOCK_MONOTONIC, &b);
    return (double)(b.tv_sec - a->tv_sec) + (double)(b.tv_nsec - a->tv_nsec) / 1e9;
}

static void *progress_main(void *arg) {
    progress *pg = arg;
    struct timespec t0, until;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    pthread_mutex_lock(&pg->mu);
    for (double wait = 1.0; !pg->stop;) {
        clock_gettime(CLOCK_REALTIME, &until);
        long ns = until.tv_nsec + (long)(wait * 1e9);
        until.tv_sec += ns / 1000000000L;
        until.tv_nsec = ns % 1000000000L;
        if (pthread_cond_timedwait(&pg->cv, &pg->mu, &until) == 0 || pg->stop) continue;
        if (pg->tty) {
            fprintf(stderr, "\rperi ruby: starting Ruby (first boot)... %.0f s", since(&t0));
            fflush(stderr);
            pg->shown = true;
            wait = 0.5;
        } else if (!pg->shown) {
            fprintf(stderr, "peri ruby: starting Ruby (the first boot takes a few seconds)\n");
            fflush(stderr);
            pg->shown = true;
            wait = 3600;
        }
    }
    if (pg->tty && pg->shown) {
        fputs("\r\033[K", stderr); /* the note goes; the line is the script's again */
        fflush(stderr);
    }
    pthread_mutex_unlock(&pg->mu);
    return NULL;
}

static void progress_start(progress *pg) {
    pthread_mutex_init(&pg->mu, NULL);
    pthread_cond_init(&pg->cv, NULL);
    pg->tty = isatty(2);
    pg->started = pthread_create(&pg->th, NULL, progress_main, pg) == 0;
    if (!pg->started) { /* no note then; the run goes on */
        pthread_cond_destroy(&pg->cv);
        pthread_mutex_destroy(&pg->mu);
    }
}

static void progress_stop(progress *pg) {
    if (!pg->started) return;
    pthread_mutex_lock(&pg->mu);
    pg->stop = true;
    pthread_cond_signal(&pg->cv);
    pthread_mutex_unlock(&pg->mu);
    pthread_join(pg->th, NULL);
    pthread_cond_destroy(&pg->cv);
    pthread_mutex_destroy(&pg->mu);
    pg->started = false;
}

static void on_output(void *ud, int stream, const char *s, size_t n) {
    progress_stop(ud); /* the first output ends the note */
    fwrite(s, 1, n, stream == PR_STDERR ? stderr : stdout);
    if (stream == PR_STDERR) fflush(stderr);
}

static double ms(const struct timespec *a, const struct timespec *b) {
    return (double)(b->tv_sec - a->tv_sec) * 1e3 + (double)(b->tv_nsec - a->tv_nsec) / 1e6;
}

/* A room message in English (the contract's text is Chinese), with the limit's hint. */
static void ruby_error(const char *script, const char *msg) {
    char en[700];
    const char *e = pr_message_english(msg, en, sizeof en);
    const char *hint = strstr(msg, "CPU 时间超过")
                           ? "; the room allows at most 1000 ms of CPU per run (--cpu-ms "
                             "lowers it)"
                           : "";
    fprintf(stderr, "peri ruby: %s: %s%s\n", script, e ? e : msg, hint);
}

/* A usage error: what was wrong, then the usage. Returns 2. */
static int bad_usage(const char *what, const char *arg) {
    fprintf(stderr, "peri ruby: %s%s%s%s\n", what, arg ? " \"" : "", arg ? arg : "",
            arg ? "\"" : "");
    usage(stderr);
    return 2;
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
        bool takes_value = !strcmp(a, "--engine") || !strcmp(a, "--wasm") ||
                           !strcmp(a, "--stdin") || !strcmp(a, "--file") ||
                           !strcmp(a, "--repeat") || !strcmp(a, "--cpu-ms");
        if (takes_value && !v) return bad_usage("a value is missing after", a);
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(a, "--time")) {
            timed = true;
        } else if (!strcmp(a, "--engine")) {
            if ((engine = peri_engine_parse(argv[++i])) < 0)
                return bad_usage("--engine wants auto, interp or jit, got", v);
        } else if (!strcmp(a, "--wasm")) {
            wasm = argv[++i];
        } else if (!strcmp(a, "--stdin")) {
            stdin_path = argv[++i];
        } else if (!strcmp(a, "--file")) {
            if (!strchr(v, '=') || v[0] == '=') return bad_usage("--file wants GUEST=HOST, got", v);
            if (nfiles == MAX_FILES) return bad_usage("at most 64 --file options", NULL);
            files[nfiles++] = argv[++i];
        } else if (!strcmp(a, "--repeat")) {
            repeat = strtoul(argv[++i], &end, 10);
            if (*end || !*v || v[0] == '-' || repeat == 0 || repeat > 100000)
                return bad_usage("--repeat wants 1..100000, got", v);
        } else if (!strcmp(a, "--cpu-ms")) {
            cpu = strtoul(argv[++i], &end, 10);
            if (*end || !*v || v[0] == '-' || cpu == 0 || cpu > PR_CPU_MS_MAX)
                return bad_usage("--cpu-ms wants 1..1000 (the room's limit), got", v);
        } else if (a[0] == '-' && a[1]) {
            return bad_usage("unknown option", a);
        } else if (!script) {
            script = a;
        } else {
            return bad_usage("one script only; extra argument", a);
        }
    }
    if (!script) return bad_usage("the script (SCRIPT.rb) is missing", NULL);
    char def[4096];
    if (!wasm) {
        const char *env = getenv("PERI_RUBY_WASM");
        if (env && *env)
            wasm = env;
        else if (peri_cache_path(PERI_RUBY_CACHED, def, sizeof def))
            wasm = def;
        else
            return bad_usage("no Ruby build: set --wasm, PERI_RUBY_WASM or HOME", NULL);
    }
    size_t wlen = 0, slen = 0, inlen = 0;
    int rc = 1;
    pr_error err;
    pr_host *h = NULL;
    pr_program *p = NULL;
    pr_fs *fs = NULL;
    unsigned char *mod = NULL, *in = NULL;
    unsigned char *src = (unsigned char *)peri_read_file(script, false, &slen);
    if (!src) {
        fprintf(stderr, "peri ruby: cannot read the script %s: %s\n", script, strerror(errno));
        goto done;
    }
    /* stdin: --stdin FILE; else ours when it is a pipe or a file: streamed to a single
     * run, read once and replayed to each with --repeat. */
    bool connect = !stdin_path && !isatty(0) && repeat == 1;
    if (stdin_path || (!isatty(0) && repeat > 1)) {
        const char *from = stdin_path ? stdin_path : "-";
        in = (unsigned char *)peri_read_file(from, true, &inlen);
        if (!in) {
            fprintf(stderr, "peri ruby: cannot read %s: %s\n",
                    stdin_path ? stdin_path : "standard input", strerror(errno));
            goto done;
        }
    }
    progress pg = {0};
    progress_start(&pg);
    mod = (unsigned char *)peri_read_file(wasm, false, &wlen);
    if (!mod) {
        progress_stop(&pg);
        fprintf(stderr,
                "peri ruby: cannot read Ruby's WebAssembly build at %s: %s\n"
                "Fetch it with scripts/deps.sh (@ruby/3.4-wasm-wasi), or name it with --wasm "
                "PATH or $PERI_RUBY_WASM.\n",
                wasm, strerror(errno));
        goto done;
    }
    pr_host_config cfg = {.cpu_ms = (uint32_t)cpu, .engine = engine};
    h = pr_host_new(&cfg, &err);
    p = h ? pr_program_load(h, (pr_str){"ruby", 4}, mod, wlen, &err) : NULL;
    if (!p) {
        progress_stop(&pg);
        if (h && !strcmp(err.message, "隔离运行失败：动态 Worker 程序不是有效 Wasm"))
            fprintf(stderr, "peri ruby: %s is not Ruby's WebAssembly build (ruby+stdlib.wasm)\n",
                    wasm);
        else
            ruby_error(wasm, err.message);
        goto done;
    }
    for (unsigned long run = 0; run < repeat; run++) {
        pr_fs_free(fs);
        fs = pr_fs_new();
        if (!fs) {
            progress_stop(&pg);
            fprintf(stderr, "peri ruby: out of memory\n");
            goto done;
        }
        for (size_t i = 0; i < nfiles; i++) {
            const char *eq = strchr(files[i], '=');
            size_t flen;
            unsigned char *data = (unsigned char *)peri_read_file(eq + 1, false, &flen);
            int e = errno;
            int w = data ? pr_fs_write(fs, files[i], (size_t)(eq - files[i]), data, flen) : -1;
            free(data);
            if (w) {
                progress_stop(&pg);
                if (!data)
                    fprintf(stderr, "peri ruby: --file %s: cannot read %s: %s\n", files[i], eq + 1,
                            strerror(e));
                else
                    fprintf(stderr, "peri ruby: --file %s: cannot put it into the room (full?)\n",
                            files[i]);
                goto done;
            }
        }
        pr_exec_options opt = {.fs = fs,
                               .on_output = on_output,
                               .ud = &pg,
                               .stdin_data = in,
                               .stdin_len = inlen,
                               .stdin_connected = connect,
                               .stdin_fd = 0,
                               .source = {(const char *)src, slen}};
        pr_outcome oc;
        struct timespec t0, t1, c0, c1;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c0);
        bool ok = pr_exec(h, p, &opt, &oc, &err);
        clock_gettime(CLOCK_MONOTONIC, &t1);
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c1);
        progress_stop(&pg);
        fflush(stdout);
        if (timed)
            fprintf(stderr, "peri ruby: run %lu: %.1f ms (cpu %.1f ms)\n", run + 1, ms(&t0, &t1),
                    ms(&c0, &c1));
        if (!ok) {
            ruby_error(script, err.message);
            rc = 1;
            continue;
        }
        if (oc.error) ruby_error(script, oc.error);
        rc = (int)(oc.exit_code & 0xff); /* a process exit status, as `ruby` gives */
        if (oc.error && rc == 0) rc = 1; /* stopped by a limit: never a success */
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
}
