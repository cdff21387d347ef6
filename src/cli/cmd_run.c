/*
 * cmd_run.c — `peri run [OPTIONS] FILE.wasm [ARGS...]`: a WASI preview 1 runtime on
 * the room. Options come before the module; everything after it goes to the program
 * (or to the --invoke function). Host directories are preopened with --dir (resolved
 * beneath them by the room, src/room/hostdir.c), the environment is only what
 * --env / --inherit-env give, stdin is connected, output streams as raw bytes, and
 * the exit code is the program's (134 and a message on stderr for a trap). The limits
 * are this command's own generous defaults (see usage), not the contract's: those
 * apply to `peri isolate`. --file/--out move files in and out of the room's in-memory
 * file system (the "/" the program sees when no --dir is named "/").
 */
#include "cli/commands.h"
#include "cli/values.h"
#include "peri/room.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/stat.h>
#include <unistd.h>

extern char **environ;

#define MAX_FILES 256
/* From this size a module is loaded from its open file (see peri_cmd_run). */
#define RUN_FD_MIN (1 << 20)
#define MAX_DIRS   64

/* The defaults of `peri run` (docs/wasi.md): a program may run for an hour of CPU and
 * wall time and use the whole 32-bit address space; its output is not limited. */
#define RUN_CPU_MS_DEFAULT     3600000u
#define RUN_WALL_MS_DEFAULT    3600000u
#define RUN_MEMORY_MIB_DEFAULT 4096u
#ifndef PERI_VERSION
#define PERI_VERSION "0.0.0-unknown" /* set by CMake from project(VERSION) */
#endif
#define RUN_VERSION "peri run " PERI_VERSION " (WASI preview 1; peri-c-room/" PERI_VERSION ")"

static void usage(FILE *f) {
    fprintf(
        f,
        "usage: peri run [OPTIONS] FILE.wasm|FILE.wat [ARGS...]\n"
        "Runs a WASI preview 1 program. Options come before the module; everything after\n"
        "the module goes to the program (with --invoke: to the function).\n"
        "\n"
        "  --dir HOST[::GUEST]   preopen host directory HOST as GUEST (default: HOST); paths\n"
        "                        stay beneath it (no .., absolute path or symlink escape)\n"
        "  --env NAME=VALUE      set an environment variable (the environment is empty\n"
        "                        otherwise)\n"
        "  --inherit-env         pass this process's environment (before any --env)\n"
        "  --argv0 NAME          argv[0] of the program (default: /程序.wasm)\n"
        "  --invoke FUNC         call export FUNC with ARGS (by parameter type) and print\n"
        "                        its results, instead of _start\n"
        "  --file GUEST=HOST     put host file HOST at GUEST in the in-memory / (at most 256)\n"
        "  --out DIR             copy the returned files (/数据/, /响应/) of the in-memory /\n"
        "                        into DIR\n"
        "  --cpu-ms N            CPU time limit (default %u = 1 hour)\n"
        "  --wall-ms N           wall-clock limit (default %u = 1 hour)\n"
        "  --max-memory-mib N    linear memory + GC heap limit; memory.grow past it returns -1\n"
        "                        (default %u)\n"
        "  --max-output N        limit on stdout+stderr bytes (default: none)\n"
        "  --deterministic       clocks and random_get a fixed function of the program\n"
        "  --engine E            execution tier: auto (default: the interpreter, then the\n"
        "                        baseline JIT once the module is hot), interp or jit\n"
        "                        (docs/jit.md); the default comes from $PERI_ENGINE if set\n"
        "  --bounds-checks M     how memory accesses are checked: guard (default: guard\n"
        "                        pages where the address space allows) or explicit (a\n"
        "                        check at every access); traps are the same (docs/jit.md)\n"
        "  --compiled FILE       run the machine code of FILE (made by `peri compile`); a\n"
        "                        FILE that does not match this module and build is refused\n"
        "  --code-cache DIR|off  where translations are kept for the next run (default:\n"
        "                        $PERI_CODE_CACHE, else ~/.cache/peri/code; off: none)\n"
        "  --version             print the version\n"
        "  -h, --help            this text\n"
        "\n"
        "stdin is connected. Exit status: the program's; 134 and a message on stderr when\n"
        "it traps; 1 when it cannot run (limits, link errors); 2 for a usage error.\n",
        RUN_CPU_MS_DEFAULT, RUN_WALL_MS_DEFAULT, RUN_MEMORY_MIB_DEFAULT);
}

/* Raw output straight to our descriptors 1 and 2 (no stdio buffering in between). */
static void on_output(void *ud, int stream, const char *bytes, size_t len) {
    (void)ud;
    int fd = stream == PR_STDERR ? 2 : 1;
    while (len) {
        ssize_t k = write(fd, bytes, len);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) return; /* a closed pipe: the program's output goes nowhere */
        bytes += k;
        len -= (size_t)k;
    }
}

/* A room message about FILE in English (the room's own texts are the contract's, in
 * Chinese; `peri run` is not under the contract), with what the user can change. */
static void run_error(const char *wasm, const char *msg) {
    char en[700];
    const char *e = pr_message_english(msg, en, sizeof en);
    const char *hint = "";
    if (strstr(msg, "CPU 时间超过"))
        hint = "; raise it with --cpu-ms N";
    else if (strstr(msg, "运行时间超过"))
        hint = "; raise it with --wall-ms N";
    else if (strstr(msg, "内存超过上限"))
        hint = "; raise it with --max-memory-mib N";
    fprintf(stderr, "peri run: %s: %s%s\n", wasm, e ? e : msg, hint);
}

/* Why FILE cannot be loaded, for the user: not WebAssembly at all (source code, a
 * script, Base64) or a damaged / unsupported module. */
static void load_error(const char *wasm, const unsigned char *bytes, size_t len, const char *msg) {
    if (strcmp(msg, "隔离运行失败：动态 Worker 程序不是有效 Wasm") != 0) {
        run_error(wasm, msg);
    } else if (len < 4 || memcmp(bytes, "\0asm", 4) != 0) {
        fprintf(stderr,
                "peri run: %s is not a WebAssembly module (a .wasm file starts with the bytes "
                "\\0asm).\nCompile the program to WebAssembly first (for C: clang "
                "--target=wasm32-wasi, or wasi-sdk) and run the .wasm file.\n",
                wasm);
    } else {
        fprintf(stderr,
                "peri run: %s is not a valid WebAssembly module (malformed, or it uses a "
                "feature the engine does not support); `peri wasm validate %s` says where.\n",
                wasm, wasm);
    }
}

/* Creates the parent directories of path (which lies under an existing dir). */
static int make_parents(char *path) {
    for (char *p = path + 1; *p; p++) {
        if (*p != '/') continue;
        *p = 0;
        int rc = mkdir(path, 0755);
        *p = '/';
        if (rc != 0 && errno != EEXIST) return -1;
    }
    return 0;
}

static int copy_out(pr_fs *fs, const char *dir) {
    size_t cur = 0, plen, len;
    const char *path;
    const uint8_t *data;
    int rc = 0;
    while (pr_fs_next(fs, &cur, &path, &plen, &data, &len)) {
        if (!(plen > 8 && (memcmp(path, "/数据/", 8) == 0 || memcmp(path, "/响应/", 8) == 0)))
            continue;
        size_t dl = strlen(dir);
        char *host = malloc(dl + plen + 1);
        if (!host) return -1;
        memcpy(host, dir, dl);
        memcpy(host + dl, path, plen);
        host[dl + plen] = 0;
        FILE *f = NULL;
        if (make_parents(host) == 0) f = fopen(host, "wb");
        if (!f || fwrite(data, 1, len, f) != len) {
            fprintf(stderr, "peri run: cannot write %s\n", host);
            rc = -1;
        }
        if (f) fclose(f);
        free(host);
    }
    return rc;
}

/* Parses a decimal option value in 1..max. */
static bool parse_num(const char *s, uint64_t max, uint64_t *out) {
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || end == s || *end || s[0] == '-' || v == 0 || v > max) return false;
    *out = v;
    return true;
}

typedef struct run_opts {
    const char *wasm, *out_dir, *invoke;
    const char *files[MAX_FILES];
    size_t nfiles;
    pr_dir dirs[MAX_DIRS];
    char *dir_hosts[MAX_DIRS]; /* owned copies of the HOST parts */
    size_t ndirs;
    pr_str *env;
    size_t nenv;
    pr_str argv0;
    pr_host_config cfg;
    const char *compiled; /* --compiled FILE */
    char ccdir[4096];     /* the default code cache directory */
    uint64_t max_output;
    char **rest; /* after the module */
    int nrest;
} run_opts;

static void opts_free(run_opts *o) {
    for (size_t i = 0; i < o->ndirs; i++) {
        if (o->dirs[i].fd >= 0) close(o->dirs[i].fd);
        free(o->dir_hosts[i]);
    }
    free(o->env);
}

static bool add_env(run_opts *o, const char *s, size_t cap) {
    if (o->nenv == cap) return false;
    o->env[o->nenv++] = (pr_str){s, strlen(s)};
    return true;
}

/* 0 ok, 2 usage error (message printed), 1 other error, -1 handled (--help). */
static int parse(run_opts *o, int argc, char **argv) {
    size_t nenviron = 0;
    while (environ && environ[nenviron])
        nenviron++;
    size_t envcap = nenviron + (size_t)argc;
    o->env = calloc(envcap, sizeof *o->env);
    if (!o->env) return 1;
    o->cfg.cpu_ms = RUN_CPU_MS_DEFAULT;
    o->cfg.engine = peri_engine_default();
    if (o->cfg.engine < 0) return 2;
    o->cfg.code_cache_dir = peri_code_cache_dir(o->ccdir, sizeof o->ccdir);
    o->cfg.wall_ms = RUN_WALL_MS_DEFAULT;
    o->cfg.memory_cap = (uint64_t)RUN_MEMORY_MIB_DEFAULT << 20;
    o->cfg.beyond_contract = true;
    o->cfg.real_clocks = true; /* --deterministic turns them off */
    o->max_output = UINT64_MAX;
    bool inherit = false;
    int i = 1;
    for (; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        uint64_t n;
        if (strcmp(a, "--") == 0) {
            i++;
            break;
        }
        if (a[0] != '-') break; /* the module */
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            usage(stdout);
            return -1;
        } else if (strcmp(a, "--version") == 0) {
            printf("%s\n", RUN_VERSION);
            return -1;
        } else if (strcmp(a, "--deterministic") == 0) {
            o->cfg.real_clocks = false;
            continue;
        } else if (strcmp(a, "--inherit-env") == 0) {
            inherit = true;
            continue;
        }
        if (!v) {
            fprintf(stderr, "peri run: %s needs a value\n", a);
            return 2;
        }
        i++;
        if (strcmp(a, "--file") == 0) {
            if (!strchr(v, '=')) {
                fprintf(stderr, "peri run: --file wants GUEST=HOSTPATH, got \"%s\"\n", v);
                return 2;
            }
            if (o->nfiles == MAX_FILES) {
                fprintf(stderr, "peri run: at most %d --file options\n", MAX_FILES);
                return 2;
            }
            o->files[o->nfiles++] = v;
        } else if (strcmp(a, "--dir") == 0) {
            if (o->ndirs == MAX_DIRS) {
                fprintf(stderr, "peri run: at most %d --dir options\n", MAX_DIRS);
                return 2;
            }
            const char *sep = strstr(v, "::");
            size_t hl = sep ? (size_t)(sep - v) : strlen(v);
            char *host = strndup(v, hl);
            if (!host) return 1;
            const char *guest = sep ? sep + 2 : v;
            o->dir_hosts[o->ndirs] = host;
            o->dirs[o->ndirs] = (pr_dir){-1, guest};
            o->ndirs++;
            if (!*host || !*guest) {
                fprintf(stderr, "peri run: --dir wants HOST[::GUEST], got \"%s\"\n", v);
                return 2;
            }
            int fd = open(host, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
            if (fd < 0) {
                fprintf(stderr, "peri run: --dir %s: %s\n", host, strerror(errno));
                return 1;
            }
            o->dirs[o->ndirs - 1].fd = fd;
        } else if (strcmp(a, "--env") == 0) {
            if (!strchr(v, '=') || v[0] == '=') {
                fprintf(stderr, "peri run: --env wants NAME=VALUE, got \"%s\"\n", v);
                return 2;
            }
            add_env(o, v, envcap);
        } else if (strcmp(a, "--argv0") == 0) {
            o->argv0 = (pr_str){v, strlen(v)};
        } else if (strcmp(a, "--invoke") == 0) {
            o->invoke = v;
        } else if (strcmp(a, "--out") == 0) {
            o->out_dir = v;
        } else if (strcmp(a, "--compiled") == 0) {
            o->compiled = v;
        } else if (strcmp(a, "--code-cache") == 0) {
            o->cfg.code_cache_dir = strcmp(v, "off") ? v : NULL;
        } else if (strcmp(a, "--engine") == 0) {
            o->cfg.engine = peri_engine_parse(v);
            if (o->cfg.engine < 0) {
                fprintf(stderr, "peri run: --engine wants interp, jit or auto, got \"%s\"\n", v);
                return 2;
            }
        } else if (strcmp(a, "--bounds-checks") == 0) {
            o->cfg.bounds_checks = peri_bounds_parse(v);
            if (o->cfg.bounds_checks < 0) {
                fprintf(stderr, "peri run: --bounds-checks wants guard or explicit, got \"%s\"\n",
                        v);
                return 2;
            }
        } else if (strcmp(a, "--cpu-ms") == 0 && parse_num(v, UINT32_MAX, &n)) {
            o->cfg.cpu_ms = (uint32_t)n;
        } else if (strcmp(a, "--wall-ms") == 0 && parse_num(v, UINT32_MAX, &n)) {
            o->cfg.wall_ms = (uint32_t)n;
        } else if (strcmp(a, "--max-memory-mib") == 0 && parse_num(v, 1u << 20, &n)) {
            o->cfg.memory_cap = n << 20;
        } else if (strcmp(a, "--max-output") == 0 && parse_num(v, UINT64_MAX - 1, &n)) {
            o->max_output = n;
        } else if (strcmp(a, "--cpu-ms") == 0 || strcmp(a, "--wall-ms") == 0 ||
                   strcmp(a, "--max-memory-mib") == 0 || strcmp(a, "--max-output") == 0) {
            fprintf(stderr, "peri run: %s wants a positive number, got \"%s\"\n", a, v);
            return 2;
        } else {
            fprintf(stderr, "peri run: unknown option %s\n", a);
            return 2;
        }
    }
    if (i >= argc) {
        fprintf(stderr, "peri run: no module given\n");
        return 2;
    }
    o->wasm = argv[i];
    o->rest = argv + i + 1;
    o->nrest = argc - i - 1;
    if (inherit) { /* the process environment first, so --env can override by order */
        pr_str *old = o->env;
        size_t nold = o->nenv;
        pr_str *e = calloc(envcap, sizeof *e);
        if (!e) return 1;
        size_t k = 0;
        for (size_t j = 0; j < nenviron; j++)
            e[k++] = (pr_str){environ[j], strlen(environ[j])};
        for (size_t j = 0; j < nold; j++)
            e[k++] = old[j];
        free(old);
        o->env = e;
        o->nenv = k;
    }
    for (size_t d = 0; d < o->ndirs; d++)
        if (o->nfiles && strcmp(o->dirs[d].guest, "/") == 0) {
            fprintf(stderr,
                    "peri run: --file puts files in the in-memory /, which --dir "
                    "%s::/ replaces\n",
                    o->dir_hosts[d]);
            return 2;
        }
    return 0;
}

int peri_cmd_run(int argc, char **argv) {
    run_opts o;
    memset(&o, 0, sizeof o);
    int prc = parse(&o, argc, argv);
    if (prc) {
        if (prc == 2) fprintf(stderr, "`peri run --help` lists the options.\n");
        opts_free(&o);
        return prc < 0 ? 0 : prc;
    }
    pr_str *args = calloc((size_t)o.nrest + 1, sizeof *args);
    pw_val *vals = NULL;
    size_t len = 0;
    size_t wl = strlen(o.wasm);
    bool wat = wl > 4 && strcmp(o.wasm + wl - 4, ".wat") == 0;
    /* A big binary module is loaded from its file (pr_program_load_fd): its digest and
     * even its bytes may then come from the code cache (docs/jit.md, "Digest memo",
     * "Module copies"). A small one is read here: that is cheaper than looking them up. */
    int mfd = -1;
    struct stat mst;
    if (args && !wat && stat(o.wasm, &mst) == 0 && S_ISREG(mst.st_mode) &&
        mst.st_size >= RUN_FD_MIN)
        mfd = open(o.wasm, O_RDONLY | O_CLOEXEC);
    unsigned char *bytes =
        args && mfd < 0 ? (unsigned char *)peri_read_file(o.wasm, false, &len) : NULL;
    if (bytes && wat) {
        /* a text module: the binary format first */
        uint8_t *bin = NULL;
        size_t blen = 0;
        pw_error werr;
        if (pw_wat_to_wasm((const char *)bytes, len, &bin, &blen, &werr) != PW_OK) {
            fprintf(stderr, "peri run: %s: text format: %s\n", o.wasm, werr.message);
            free(bytes);
            free(args);
            opts_free(&o);
            return 1;
        }
        free(bytes);
        bytes = bin;
        len = blen;
    }
    if (!bytes && mfd < 0) {
        if (args)
            fprintf(stderr, "peri run: cannot read the module %s: %s\n", o.wasm, strerror(errno));
        else
            fprintf(stderr, "peri run: out of memory\n");
        free(args);
        opts_free(&o);
        return 1;
    }
    for (int i = 0; i < o.nrest; i++)
        args[i] = (pr_str){o.rest[i], strlen(o.rest[i])};
    int rc = 1;
    pr_error err;
    pr_host *h = pr_host_new(&o.cfg, &err);
    pr_fs *fs = pr_fs_new();
    pr_program *p = !h         ? NULL
                    : mfd >= 0 ? pr_program_load_fd(h, (pr_str){"cli", 3}, mfd, &err)
                               : pr_program_load(h, (pr_str){"cli", 3}, bytes, len, &err);
    if (!h || !fs || !p) {
        if (!fs) {
            fprintf(stderr, "peri run: out of memory\n");
        } else if (!h) {
            run_error(o.wasm, err.message);
        } else if (mfd >= 0) { /* only the first bytes say what the file is */
            unsigned char head[4];
            ssize_t k = pread(mfd, head, sizeof head, 0);
            load_error(o.wasm, head, k > 0 ? (size_t)k : 0, err.message);
        } else {
            load_error(o.wasm, bytes, len, err.message);
        }
        goto done;
    }
    if (o.compiled) { /* a rejected artifact is never run: the run stops here */
        uint8_t d[32];
        pr_program_digest(p, d);
        pw_code_err ce;
        if (pw_code_load(pr_program_module(p), d, o.compiled, &ce) != PW_CODE_OK) {
            fprintf(stderr, "peri run: --compiled %s: %s (%s)\n", o.compiled, ce.message,
                    pw_code_error_name(ce.kind));
            goto done;
        }
    }
    /* The in-memory FS's timestamps count from the run's start in ns, or
     * from the deterministic epoch (2026-01-01) with --deterministic. */
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    pr_fs_set_clock(fs, !o.cfg.real_clocks
                            ? 1767225600000000000ull
                            : (uint64_t)now.tv_sec * 1000000000ull + (uint64_t)now.tv_nsec);
    pw_functype ft;
    if (o.invoke) {
        if (!pw_module_export_functype(pr_program_module(p), o.invoke, strlen(o.invoke), &ft)) {
            fprintf(stderr, "peri run: %s exports no function \"%s\"\n", o.wasm, o.invoke);
            rc = 2;
            goto done;
        }
        if ((uint32_t)o.nrest != ft.nparams) {
            fprintf(stderr, "peri run: %s takes %u argument%s, %d given\n", o.invoke, ft.nparams,
                    ft.nparams == 1 ? "" : "s", o.nrest);
            rc = 2;
            goto done;
        }
        vals = calloc((size_t)ft.nparams + ft.nresults + 1, sizeof *vals);
        if (!vals) goto done;
        for (uint32_t k = 0; k < ft.nparams; k++)
            if (!peri_val_parse(o.rest[k], ft.params[k], &vals[k])) {
                fprintf(stderr, "peri run: argument %u: \"%s\" is not a valid %s\n", k + 1,
                        o.rest[k], peri_val_type_name(ft.params[k]));
                rc = 2;
                goto done;
            }
    }
    for (size_t i = 0; i < o.nfiles; i++) {
        const char *eq = strchr(o.files[i], '=');
        size_t flen;
        unsigned char *data = (unsigned char *)peri_read_file(eq + 1, false, &flen);
        if (!data) {
            fprintf(stderr, "peri run: --file %s: cannot read %s: %s\n", o.files[i], eq + 1,
                    strerror(errno));
            goto done;
        }
        int w = pr_fs_write(fs, o.files[i], (size_t)(eq - o.files[i]), data, flen);
        free(data);
        if (w) {
            fprintf(stderr, "peri run: the room's file system is full (128 MiB)\n");
            goto done;
        }
    }
    /* Deterministic runs are seeded from the program alone: SHA-256 of its bytes. */
    uint8_t seed[32] = {0};
    if (!o.cfg.real_clocks) pr_program_digest(p, seed);
    pr_exec_options opt = {.args = args,
                           .nargs = o.invoke ? 0 : (size_t)o.nrest,
                           .fs = fs,
                           .on_output = on_output,
                           .seed = !o.cfg.real_clocks ? seed : NULL,
                           .env = o.env,
                           .nenv = o.nenv,
                           .argv0 = o.argv0,
                           .stdin_connected = true,
                           .stdin_fd = 0,
                           .dirs = o.dirs,
                           .ndirs = o.ndirs,
                           /* Like other WASI runtimes: no file system unless asked for. */
                           .no_memory_root = !o.nfiles && !o.out_dir,
                           .output_max = o.max_output,
                           .raw_output = true,
                           .invoke = o.invoke,
                           .invoke_args = vals,
                           .invoke_nargs = o.invoke ? ft.nparams : 0,
                           .invoke_results = o.invoke ? vals + ft.nparams : NULL,
                           .invoke_nresults = o.invoke ? ft.nresults : 0};
    pr_outcome oc;
    if (!pr_exec(h, p, &opt, &oc, &err)) {
        run_error(o.wasm, err.message);
        goto done;
    }
    if (oc.trapped) {
        fprintf(stderr, "peri run: %s: trap: %s\n", o.wasm, oc.error ? oc.error : "?");
        rc = 134;
    } else if (oc.error) {
        if (strcmp(oc.error, "输出超过 64 KB") == 0 && o.max_output != UINT64_MAX)
            fprintf(stderr, "peri run: output over --max-output %llu bytes\n",
                    (unsigned long long)o.max_output);
        else
            run_error(o.wasm, oc.error);
        rc = oc.exit_code ? oc.exit_code : 1;
    } else {
        rc = oc.exit_code;
        if (o.invoke && oc.ok) {
            for (uint32_t k = 0; k < ft.nresults; k++)
                peri_val_print(ft.results[k], vals[ft.nparams + k]);
            fflush(stdout);
        }
    }
    if (o.out_dir && copy_out(fs, o.out_dir) != 0 && rc == 0) rc = 1;
    pr_outcome_clear(&oc);
done:
    pr_program_release(p);
    pr_fs_free(fs);
    pr_host_free(h);
    if (mfd >= 0) close(mfd);
    free(bytes);
    free(args);
    free(vals);
    opts_free(&o);
    return rc;
}
