/*
 * cmd_python.c — `peri python [OPTIONS] SCRIPT.py|-`: runs a Python script in the room
 * with CPython's WebAssembly build (docs/python.md), like `python3 SCRIPT.py`: stdout
 * and stderr stream, the exit status is the script's (sys.exit(n) -> n, an uncaught
 * exception -> its traceback and 1). `-` reads the script from standard input (the
 * script's own stdin is then empty unless --stdin names a file). Otherwise standard
 * input is the script's when it is not a terminal. --repeat N runs the script N times
 * in one process (every run after the first starts from the startup snapshot) and
 * --time prints each run's wall and CPU time on stderr. The standard library is mapped
 * read-only; the room's limits hold (CPU at most 1000 ms per run). When a limit stops
 * the script, the contract's message and an English line naming the limit go to
 * stderr.
 */
#include "cli/commands.h"
#include "peri/room.h"
#include "peri/tools.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define PY_BUILD PERI_PYTHON_CACHED

static void usage(FILE *f) {
    fprintf(f,
            "usage: peri python [OPTIONS] SCRIPT.py|-\n"
            "Runs a Python script in the room (CPython 3.11 built for WASI).\n"
            "  --python-dir DIR  the build: DIR/python.wasm and DIR/lib/python3.11 (default:\n"
            "                  $PERI_PYTHON_DIR, else the cache of scripts/deps.sh:\n"
            "                  ~/.cache/peri/" PY_BUILD "/, $PERI_CACHE_DIR respected)\n"
            "  --stdin FILE    the script's standard input (default: this command's stdin\n"
            "                  when it is a pipe or a file; empty on a terminal or with -)\n"
            "  --file GUEST=HOST  put host file HOST at GUEST in the room (e.g. /请求/in.txt)\n"
            "  --cpu-ms N      CPU limit per run (default 1000, at most 1000)\n"
            "  --repeat N      run N times in one process (later runs start from the snapshot)\n"
            "  --time          print each run's wall and CPU time on stderr\n"
            "  --lease DIR     lease host directory DIR to the script's capability calls\n"
            "                  (peri.read_text(path), read-only unless --lease-write)\n"
            "  --lease-write   the lease also allows peri.write_text(path, text)\n"
            "  --allow-network the network policy allows peri.fetch(url) (default: refused):\n"
            "                  http/https GET, no redirects, not this machine's addresses\n"
            "  --evidence      print each capability dispatch (what, when, committed) on stderr\n"
            "  --engine E      execution tier: auto (default; $PERI_ENGINE if set), interp\n"
            "                  or jit (docs/jit.md)\n"
            "Exit status: the script's; 1 when it cannot run (missing files, limits);\n"
            "2 for a usage error.\n");
}

static void on_output(void *ud, int stream, const char *s, size_t n) {
    (void)ud;
    fwrite(s, 1, n, stream == PR_STDERR ? stderr : stdout);
    fflush(stream == PR_STDERR ? stderr : stdout);
}

static double ms(const struct timespec *a, const struct timespec *b) {
    return (double)(b->tv_sec - a->tv_sec) * 1e3 + (double)(b->tv_nsec - a->tv_nsec) / 1e6;
}

/* A room message: the contract's text, then an English line (naming the limit). */
static void py_error(const char *script, const char *msg) {
    char en[700];
    const char *e = pr_message_english(msg, en, sizeof en);
    const char *hint = strstr(msg, "CPU 时间超过")
                           ? "; the room allows at most 1000 ms of CPU per run (--cpu-ms "
                             "lowers it)"
                           : "";
    if (e && strcmp(e, msg) != 0) fprintf(stderr, "peri python: %s: %s\n", script, msg);
    fprintf(stderr, "peri python: %s: %s%s\n", script, e ? e : msg, hint);
}

/* One JSON line per dispatch of the run's log. */
static void print_evidence(const pr_cap_log *l) {
    for (size_t i = 0; i < l->n; i++) {
        const pr_cap_record *r = &l->v[i];
        fprintf(stderr, "peri python: dispatch {\"op\":\"");
        for (const char *s = r->op; *s; s++)
            if ((unsigned char)*s >= 0x20 && *s != '"' && *s != '\\') fputc(*s, stderr);
        fprintf(stderr, "\",\"arg\":\"");
        for (const char *s = r->arg; *s; s++)
            if ((unsigned char)*s >= 0x20 && *s != '"' && *s != '\\') fputc(*s, stderr);
        fprintf(stderr, "\",\"at_ms\":%lld,\"status\":\"%s\",\"committed\":%s}\n",
                (long long)r->at_ms, pr_cap_status_name(r->status),
                r->committed ? "true" : "false");
    }
    if (l->truncated)
        fprintf(stderr, "peri python: %zu more dispatches were not recorded\n", l->n_all - l->n);
}

static int bad_usage(const char *what, const char *arg) {
    fprintf(stderr, "peri python: %s%s%s%s\n", what, arg ? " \"" : "", arg ? arg : "",
            arg ? "\"" : "");
    usage(stderr);
    return 2;
}

/* The default build directory: $PERI_PYTHON_DIR, else the deps.sh cache. */
static const char *default_dir(char *buf, size_t n) {
    const char *env = getenv("PERI_PYTHON_DIR");
    if (env && *env) return env;
    if (!peri_cache_path(PERI_PYTHON_CACHED, buf, n)) snprintf(buf, n, ".cache/peri/" PY_BUILD);
    return buf;
}

#define MAX_FILES 64

int peri_cmd_python(int argc, char **argv) {
    const char *dir = NULL, *script = NULL, *stdin_path = NULL, *files[MAX_FILES];
    size_t nfiles = 0;
    unsigned long repeat = 1, cpu = 0;
    bool timed = false, evidence = false;
    const char *lease_dir = NULL;
    pr_cap_lease lease = {.dir_fd = -1};
    ptl_fetch_cap fetch = {.lease = &lease}; /* http.fetch for --allow-network (fetch_cap.c) */
    int engine = peri_engine_default();
    if (engine < 0) return 2;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        char *end = NULL;
        bool takes_value = !strcmp(a, "--engine") || !strcmp(a, "--python-dir") ||
                           !strcmp(a, "--stdin") || !strcmp(a, "--file") || !strcmp(a, "--lease") ||
                           !strcmp(a, "--repeat") || !strcmp(a, "--cpu-ms");
        if (takes_value && !v) return bad_usage("a value is missing after", a);
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(a, "--time")) {
            timed = true;
        } else if (!strcmp(a, "--evidence")) {
            evidence = true;
        } else if (!strcmp(a, "--lease-write")) {
            lease.write = true;
        } else if (!strcmp(a, "--allow-network")) {
            fetch.network = true;
        } else if (!strcmp(a, "--lease")) {
            lease_dir = argv[++i];
        } else if (!strcmp(a, "--engine")) {
            if ((engine = peri_engine_parse(argv[++i])) < 0)
                return bad_usage("--engine wants auto, interp or jit, got", v);
        } else if (!strcmp(a, "--python-dir")) {
            dir = argv[++i];
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
    if (!script) return bad_usage("the script (SCRIPT.py or -) is missing", NULL);
    if (lease.write && !lease_dir) return bad_usage("--lease-write needs --lease DIR", NULL);
    char def[4096], path[4200];
    if (!dir) dir = default_dir(def, sizeof def);
    bool from_stdin = !strcmp(script, "-");
    const char *shown = from_stdin ? "<stdin>" : script;
    size_t wlen = 0, slen = 0, inlen = 0;
    int rc = 1, lib = -1;
    pr_error err;
    pr_host *h = NULL;
    pr_program *p = NULL;
    pr_fs *fs = NULL;
    unsigned char *mod = NULL, *in = NULL;
    if (lease_dir && (lease.dir_fd = open(lease_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0) {
        fprintf(stderr, "peri python: --lease %s: %s\n", lease_dir, strerror(errno));
        return 1;
    }
    unsigned char *src = (unsigned char *)peri_read_file(script, true, &slen);
    if (!src) {
        fprintf(stderr, "peri python: cannot read the script %s: %s\n", shown, strerror(errno));
        goto done;
    }
    /* stdin: --stdin FILE; else ours when it is a pipe or a file (and not the script):
     * streamed to a single run, read once and replayed to each with --repeat. */
    bool connect = !stdin_path && !from_stdin && !isatty(0) && repeat == 1;
    if (stdin_path || (!from_stdin && !isatty(0) && repeat > 1)) {
        const char *from = stdin_path ? stdin_path : "-";
        in = (unsigned char *)peri_read_file(from, true, &inlen);
        if (!in) {
            fprintf(stderr, "peri python: cannot read %s: %s\n",
                    stdin_path ? stdin_path : "standard input", strerror(errno));
            goto done;
        }
    }
    snprintf(path, sizeof path, "%s/python.wasm", dir);
    mod = (unsigned char *)peri_read_file(path, false, &wlen);
    int e = errno;
    snprintf(path, sizeof path, "%s/lib/python3.11", dir);
    lib = mod ? open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC) : -1;
    if (!mod || lib < 0) {
        fprintf(stderr,
                "peri python: cannot read CPython's WebAssembly build in %s: %s\n"
                "scripts/deps.sh builds it (scripts/python-wasi.sh); or name a build with "
                "--python-dir DIR or $PERI_PYTHON_DIR.\n",
                dir, strerror(mod ? errno : e));
        goto done;
    }
    pr_host_config cfg = {.cpu_ms = (uint32_t)cpu, .engine = engine};
    h = pr_host_new(&cfg, &err);
    p = h ? pr_program_load(h, (pr_str){"python", 6}, mod, wlen, &err) : NULL;
    if (!p) {
        if (h && !strcmp(err.message, "隔离运行失败：动态 Worker 程序不是有效 Wasm"))
            fprintf(stderr, "peri python: %s/python.wasm is not a WebAssembly module\n", dir);
        else
            py_error(dir, err.message);
        goto done;
    }
    if (!pr_python_module(pr_program_module(p))) {
        fprintf(stderr,
                "peri python: %s/python.wasm is not the room's CPython build (it lacks the "
                "peri_py_* entry points of scripts/python-wasi.sh)\n",
                dir);
        goto done;
    }
    free(mod);
    mod = NULL;
    pr_dir libdir = {lib, PR_PYTHON_STDLIB_GUEST};
    pr_cap_log caps = {0};
    for (unsigned long run = 0; run < repeat; run++) {
        pr_fs_free(fs);
        fs = pr_fs_new();
        if (!fs) {
            fprintf(stderr, "peri python: out of memory\n");
            goto done;
        }
        for (size_t i = 0; i < nfiles; i++) {
            const char *eq = strchr(files[i], '=');
            size_t flen;
            unsigned char *data = (unsigned char *)peri_read_file(eq + 1, false, &flen);
            int fe = errno;
            int w = data ? pr_fs_write(fs, files[i], (size_t)(eq - files[i]), data, flen) : -1;
            free(data);
            if (w) {
                if (!data)
                    fprintf(stderr, "peri python: --file %s: cannot read %s: %s\n", files[i],
                            eq + 1, strerror(fe));
                else
                    fprintf(stderr, "peri python: --file %s: cannot put it into the room (full?)\n",
                            files[i]);
                goto done;
            }
        }
        pr_exec_options opt = {.fs = fs,
                               .on_output = on_output,
                               .dirs = &libdir,
                               .ndirs = 1,
                               .dirs_read_only = true,
                               .stdin_data = in,
                               .stdin_len = inlen,
                               .stdin_connected = connect,
                               .stdin_fd = 0,
                               .source = {(const char *)src, slen},
                               .capability = ptl_fetch_cap_handle,
                               .cap_ud = &fetch,
                               .cap_log = &caps};
        pr_outcome oc;
        struct timespec t0, t1, c0, c1;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c0);
        bool ok = pr_exec(h, p, &opt, &oc, &err);
        clock_gettime(CLOCK_MONOTONIC, &t1);
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c1);
        fflush(stdout);
        if (evidence) print_evidence(&caps);
        pr_cap_log_clear(&caps);
        if (timed)
            fprintf(stderr, "peri python: run %lu: %.1f ms (cpu %.1f ms)\n", run + 1, ms(&t0, &t1),
                    ms(&c0, &c1));
        if (!ok) {
            py_error(shown, err.message);
            rc = 1;
            continue;
        }
        if (oc.error) py_error(shown, oc.error);
        rc = (int)(oc.exit_code & 0xff); /* a process exit status, as `python3` gives */
        if (oc.error && rc == 0) rc = 1; /* stopped by a limit: never a success */
        pr_outcome_clear(&oc);
    }
done:
    if (lease.dir_fd >= 0) close(lease.dir_fd);
    if (lib >= 0) close(lib);
    pr_fs_free(fs);
    pr_program_release(p);
    pr_host_free(h);
    free(mod);
    free(src);
    free(in);
    return rc;
}
