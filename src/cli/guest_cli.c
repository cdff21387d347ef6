/*
 * guest_cli.c — peri_guest_main, the driver behind `peri python` and `peri ruby`
 * (guest_cli.h): parses the shared options, reads the script, the script's stdin and
 * --file inputs, loads the language's build once, and runs the script --repeat times
 * in one process (every run after the first starts from the startup snapshot), with
 * stdout and stderr streamed and --time's per-run wall and CPU time on stderr.
 * Standard input is the script's when it is a pipe or a file (streamed for one run,
 * read once and replayed with --repeat); --stdin FILE names one instead. When a limit
 * stops the script, stderr gets an English line naming the limit (and, for languages
 * that ask, the contract's text first). With a boot note, a first boot that has shown
 * nothing after one second prints a progress note (a live counter on a terminal, one
 * line otherwise), gone before the script's first output. With capabilities, --lease,
 * --lease-write, --allow-network and --evidence grant and show capability dispatches
 * (tools/fetch_cap.c does http.fetch).
 */
#include "cli/guest_cli.h"
#include "cli/commands.h"
#include "peri/tools.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MAX_FILES 64

/* The progress note of a slow first boot. The thread waits one second, then shows the
 * elapsed seconds until progress_stop; all output to stderr happens under mu, so the
 * script's own output never lands inside the note. */
typedef struct progress {
    const peri_guest_cli *g;
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
    const peri_guest_cli *g = pg->g;
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
            fprintf(stderr, "\rperi %s: starting %s (first boot)... %.0f s", g->name, g->boot_note,
                    since(&t0));
            fflush(stderr);
            pg->shown = true;
            wait = 0.5;
        } else if (!pg->shown) {
            fprintf(stderr, "peri %s: starting %s (the first boot takes a few seconds)\n", g->name,
                    g->boot_note);
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
    if (!pg->g->boot_note) return;
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
    progress *pg = ud;
    progress_stop(pg); /* the first output ends the note */
    FILE *f = stream == PR_STDERR ? stderr : stdout;
    fwrite(s, 1, n, f);
    if (f == stderr || (pg->g->flags & PERI_GUEST_FLUSH_STDOUT)) fflush(f);
}

static double ms(const struct timespec *a, const struct timespec *b) {
    return (double)(b->tv_sec - a->tv_sec) * 1e3 + (double)(b->tv_nsec - a->tv_nsec) / 1e6;
}

/* A room message in English (the contract's text is Chinese), with the limit's hint. */
static void room_error(const peri_guest_cli *g, const char *script, const char *msg) {
    char en[700];
    const char *e = pr_message_english(msg, en, sizeof en);
    const char *hint = strstr(msg, "CPU 时间超过")
                           ? "; the room allows at most 1000 ms of CPU per run (--cpu-ms "
                             "lowers it)"
                           : "";
    if ((g->flags & PERI_GUEST_CONTRACT_TEXT) && e && strcmp(e, msg) != 0)
        fprintf(stderr, "peri %s: %s: %s\n", g->name, script, msg);
    fprintf(stderr, "peri %s: %s: %s%s\n", g->name, script, e ? e : msg, hint);
}

/* One JSON line per dispatch of the run's log. */
static void print_evidence(const peri_guest_cli *g, const pr_cap_log *l) {
    for (size_t i = 0; i < l->n; i++) {
        const pr_cap_record *r = &l->v[i];
        fprintf(stderr, "peri %s: dispatch {\"op\":\"", g->name);
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
        fprintf(stderr, "peri %s: %zu more dispatches were not recorded\n", g->name,
                l->n_all - l->n);
}

static void usage(const peri_guest_cli *g, FILE *f) {
    fprintf(f,
            "%s"
            "  --stdin FILE    the script's standard input (default: this command's stdin\n"
            "                  when it is a pipe or a file; empty %s)\n"
            "  --file GUEST=HOST  put host file HOST at GUEST in the room (e.g. /请求/in.txt)\n"
            "  --cpu-ms N      CPU limit per run (default 1000, at most 1000)\n"
            "  --repeat N      run N times in one process (later runs start from the snapshot)\n"
            "  --time          print each run's wall and CPU time on stderr\n",
            g->usage_head, g->stdin_also);
    if (g->flags & PERI_GUEST_CAPABILITIES)
        fprintf(f,
                "  --lease DIR     lease host directory DIR to the script's capability calls\n"
                "                  (%s.read_text(path), read-only unless --lease-write)\n"
                "  --lease-write   the lease also allows %s.write_text(path, text)\n"
                "  --allow-network the network policy allows %s.fetch(url) (default: refused):\n"
                "                  http/https GET, no redirects, not this machine's addresses\n"
                "  --evidence      print each capability dispatch (what, when, committed) on "
                "stderr\n",
                g->module, g->module, g->module);
    fprintf(f, "  --engine E      execution tier: auto (default; $PERI_ENGINE if set), interp\n"
               "                  or jit (docs/jit.md)\n"
               "  --bounds-checks M  how memory accesses are checked: guard (default: guard\n"
               "                  pages where the address space allows) or explicit (a check\n"
               "                  at every access); traps are the same (docs/jit.md)\n"
               "Exit status: the script's; 1 when it cannot run (missing files, limits);\n"
               "2 for a usage error.\n");
}

/* A usage error: what was wrong, then the usage. Returns 2. */
static int bad_usage(const peri_guest_cli *g, const char *what, const char *arg) {
    fprintf(stderr, "peri %s: %s%s%s%s\n", g->name, what, arg ? " \"" : "", arg ? arg : "",
            arg ? "\"" : "");
    usage(g, stderr);
    return 2;
}

typedef struct opts {
    const char *build, *script, *stdin_path, *lease_dir, *files[MAX_FILES];
    size_t nfiles;
    unsigned long repeat, cpu;
    bool timed, evidence, lease_write, network;
    int engine, bounds; /* PW_ENGINE_*, PW_BOUNDS_* */
} opts;

/* Parses argv into o; -1 when parsed, else the exit status (help: 0, usage error: 2). */
static int parse(const peri_guest_cli *g, int argc, char **argv, opts *o) {
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        char *end = NULL;
        bool caps = g->flags & PERI_GUEST_CAPABILITIES;
        bool takes_value = !strcmp(a, "--engine") || !strcmp(a, "--bounds-checks") ||
                           !strcmp(a, g->build_opt) || !strcmp(a, "--stdin") ||
                           !strcmp(a, "--file") || (caps && !strcmp(a, "--lease")) ||
                           !strcmp(a, "--repeat") || !strcmp(a, "--cpu-ms");
        if (takes_value && !v) return bad_usage(g, "a value is missing after", a);
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(g, stdout);
            return 0;
        } else if (!strcmp(a, "--time")) {
            o->timed = true;
        } else if (caps && !strcmp(a, "--evidence")) {
            o->evidence = true;
        } else if (caps && !strcmp(a, "--lease-write")) {
            o->lease_write = true;
        } else if (caps && !strcmp(a, "--allow-network")) {
            o->network = true;
        } else if (caps && !strcmp(a, "--lease")) {
            o->lease_dir = argv[++i];
        } else if (!strcmp(a, "--engine")) {
            if ((o->engine = peri_engine_parse(argv[++i])) < 0)
                return bad_usage(g, "--engine wants auto, interp or jit, got", v);
        } else if (!strcmp(a, "--bounds-checks")) {
            if ((o->bounds = peri_bounds_parse(argv[++i])) < 0)
                return bad_usage(g, "--bounds-checks wants guard or explicit, got", v);
        } else if (!strcmp(a, g->build_opt)) {
            o->build = argv[++i];
        } else if (!strcmp(a, "--stdin")) {
            o->stdin_path = argv[++i];
        } else if (!strcmp(a, "--file")) {
            if (!strchr(v, '=') || v[0] == '=')
                return bad_usage(g, "--file wants GUEST=HOST, got", v);
            if (o->nfiles == MAX_FILES) return bad_usage(g, "at most 64 --file options", NULL);
            o->files[o->nfiles++] = argv[++i];
        } else if (!strcmp(a, "--repeat")) {
            o->repeat = strtoul(argv[++i], &end, 10);
            if (*end || !*v || v[0] == '-' || o->repeat == 0 || o->repeat > 100000)
                return bad_usage(g, "--repeat wants 1..100000, got", v);
        } else if (!strcmp(a, "--cpu-ms")) {
            o->cpu = strtoul(argv[++i], &end, 10);
            if (*end || !*v || v[0] == '-' || o->cpu == 0 || o->cpu > PR_CPU_MS_MAX)
                return bad_usage(g, "--cpu-ms wants 1..1000 (the room's limit), got", v);
        } else if (a[0] == '-' && a[1]) {
            return bad_usage(g, "unknown option", a);
        } else if (!o->script) {
            o->script = a;
        } else {
            return bad_usage(g, "one script only; extra argument", a);
        }
    }
    if (!o->script) return bad_usage(g, g->no_script, NULL);
    if (o->lease_write && !o->lease_dir)
        return bad_usage(g, "--lease-write needs --lease DIR", NULL);
    return -1;
}

/* A fresh room file system with the --file inputs; NULL after printing why. */
static pr_fs *room_files(const peri_guest_cli *g, const opts *o) {
    pr_fs *fs = pr_fs_new();
    if (!fs) {
        fprintf(stderr, "peri %s: out of memory\n", g->name);
        return NULL;
    }
    for (size_t i = 0; i < o->nfiles; i++) {
        const char *f = o->files[i], *eq = strchr(f, '=');
        size_t flen;
        unsigned char *data = (unsigned char *)peri_read_file(eq + 1, false, &flen);
        int e = errno;
        int w = data ? pr_fs_write(fs, f, (size_t)(eq - f), data, flen) : -1;
        free(data);
        if (w) {
            if (!data)
                fprintf(stderr, "peri %s: --file %s: cannot read %s: %s\n", g->name, f, eq + 1,
                        strerror(e));
            else
                fprintf(stderr, "peri %s: --file %s: cannot put it into the room (full?)\n",
                        g->name, f);
            pr_fs_free(fs);
            return NULL;
        }
    }
    return fs;
}

int peri_guest_main(const peri_guest_cli *g, int argc, char **argv) {
    opts o = {.repeat = 1, .engine = peri_engine_default()};
    if (o.engine < 0) return 2;
    int rc = parse(g, argc, argv, &o);
    if (rc >= 0) return rc;
    pr_cap_fn net = peri_guest_fetch();
    if (o.network && !net) return peri_cmd_agent(argc, argv); /* HTTP lives in peri-agent */
    char def[4096];
    const char *why = NULL;
    if (!o.build && !(o.build = g->default_build(def, sizeof def, &why)))
        return bad_usage(g, why, NULL);
    bool from_stdin = (g->flags & PERI_GUEST_SCRIPT_DASH) && !strcmp(o.script, "-");
    const char *shown = from_stdin ? "<stdin>" : o.script;
    size_t slen = 0, inlen = 0;
    int lib = -1, mfd = -1;
    rc = 1;
    pr_error err;
    pr_host *h = NULL;
    pr_program *p = NULL;
    pr_fs *fs = NULL;
    unsigned char *in = NULL, *src = NULL;
    pr_cap_lease lease = {.dir_fd = -1, .write = o.lease_write};
    ptl_fetch_cap fetch = {.network = o.network, .lease = &lease};
    pr_cap_log caps = {0};
    progress pg = {.g = g};
    if (o.lease_dir && (lease.dir_fd = open(o.lease_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0) {
        fprintf(stderr, "peri %s: --lease %s: %s\n", g->name, o.lease_dir, strerror(errno));
        return 1;
    }
    src = (unsigned char *)peri_read_file(o.script, g->flags & PERI_GUEST_SCRIPT_DASH, &slen);
    if (!src) {
        fprintf(stderr, "peri %s: cannot read the script %s: %s\n", g->name, shown,
                strerror(errno));
        goto done;
    }
    /* stdin: --stdin FILE; else ours when it is a pipe or a file (and not the script). */
    bool connect = !o.stdin_path && !from_stdin && !isatty(0) && o.repeat == 1;
    if (o.stdin_path || (!from_stdin && !isatty(0) && o.repeat > 1)) {
        in = (unsigned char *)peri_read_file(o.stdin_path ? o.stdin_path : "-", true, &inlen);
        if (!in) {
            fprintf(stderr, "peri %s: cannot read %s: %s\n", g->name,
                    o.stdin_path ? o.stdin_path : "standard input", strerror(errno));
            goto done;
        }
    }
    char why_not[1200];
    progress_start(&pg);
    if ((mfd = g->load(o.build, &lib, why_not, sizeof why_not)) < 0) {
        progress_stop(&pg);
        fprintf(stderr, "peri %s: %s\n", g->name, why_not);
        goto done;
    }
    char ccdir[4096];
    pr_host_config cfg = {.real_clocks = true,
                          .cpu_ms = (uint32_t)o.cpu,
                          .engine = o.engine,
                          .bounds_checks = o.bounds,
                          .code_cache_dir = peri_code_cache_dir(ccdir, sizeof ccdir)};
    h = pr_host_new(&cfg, &err);
    /* The room reads the module (its digest may come from the code cache's memo). */
    if (h) p = pr_program_load_fd(h, (pr_str){g->name, strlen(g->name)}, mfd, &err);
    if (!p) {
        progress_stop(&pg);
        if (h && !strcmp(err.message, "隔离运行失败：动态 Worker 程序不是有效 Wasm")) {
            fprintf(stderr, "peri %s: ", g->name);
            fprintf(stderr, g->not_wasm, o.build);
            fputc('\n', stderr);
        } else {
            room_error(g, o.build, err.message);
        }
        goto done;
    }
    if (g->check && !g->check(o.build, p, why_not, sizeof why_not)) {
        progress_stop(&pg);
        fprintf(stderr, "peri %s: %s\n", g->name, why_not);
        goto done;
    }
    pr_dir libdir = {lib, PR_PYTHON_STDLIB_GUEST};
    for (unsigned long run = 0; run < o.repeat; run++) {
        pr_fs_free(fs);
        if (!(fs = room_files(g, &o))) goto done;
        pr_exec_options opt = {.fs = fs,
                               .on_output = on_output,
                               .ud = &pg,
                               .dirs = lib >= 0 ? &libdir : NULL,
                               .ndirs = lib >= 0 ? 1 : 0,
                               .dirs_read_only = lib >= 0,
                               .stdin_data = in,
                               .stdin_len = inlen,
                               .stdin_connected = connect,
                               .stdin_fd = 0,
                               .source = {(const char *)src, slen}};
        if (g->flags & PERI_GUEST_CAPABILITIES) {
            opt.capability = net ? net : pr_cap_lease_handle;
            opt.cap_ud = net ? (void *)&fetch : (void *)&lease;
            opt.cap_log = &caps;
        }
        pr_outcome oc;
        struct timespec t0, t1, c0, c1;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c0);
        bool ok = pr_exec(h, p, &opt, &oc, &err);
        clock_gettime(CLOCK_MONOTONIC, &t1);
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c1);
        progress_stop(&pg);
        fflush(stdout);
        if (o.evidence) print_evidence(g, &caps);
        pr_cap_log_clear(&caps);
        if (o.timed)
            fprintf(stderr, "peri %s: run %lu: %.1f ms (cpu %.1f ms)\n", g->name, run + 1,
                    ms(&t0, &t1), ms(&c0, &c1));
        if (!ok) {
            room_error(g, shown, err.message);
            rc = 1;
            continue;
        }
        if (oc.error) room_error(g, shown, oc.error);
        rc = (int)(oc.exit_code & 0xff); /* a process exit status, as the interpreter gives */
        if (oc.error && rc == 0) rc = 1; /* stopped by a limit: never a success */
        pr_outcome_clear(&oc);
    }
done:
    progress_stop(&pg);
    if (lease.dir_fd >= 0) close(lease.dir_fd);
    if (lib >= 0) close(lib);
    pr_fs_free(fs);
    pr_program_release(p);
    pr_host_free(h);
    if (mfd >= 0) close(mfd);
    free(src);
    free(in);
    return rc;
}
