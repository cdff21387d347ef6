/*
 * cmd_isolate.c — `peri isolate run` (one contract call from files) and
 * `peri isolate serve` (newline-delimited JSON-RPC 2.0 on stdin/stdout).
 * Exit codes of `run`: 0 the return JSON on stdout; 1 a contract exception, its exact
 * message on the first line of stderr (on a terminal, its English meaning on the next
 * line); 2 usage error (what was wrong, then the usage).
 */
#include "cli/commands.h"
#include "peri/room.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_GRANTS 64

static void usage(FILE *f) {
    fprintf(f,
            "usage: peri isolate run --runner NAME --scope SCOPE --digest HEX --program PATH\n"
            "                        --input PATH [--grant NAME]... [--cpu-ms N] [--wall-ms N]\n"
            "                        [--real-clocks] [--engine auto|interp|jit]\n"
            "                        [--bounds-checks guard|explicit]\n"
            "       peri isolate serve [--grant NAME]... [--workers N] [--cpu-ms N] [--wall-ms N]\n"
            "                          [--real-clocks] [--engine auto|interp|jit]\n"
            "                          [--bounds-checks guard|explicit]\n"
            "  --program PATH  the module as Base64 text (base64 -w0 FILE.wasm > FILE.b64),\n"
            "                  not the .wasm file itself\n"
            "  --digest HEX    SHA-256 of the decoded module, 64 lowercase hex digits\n"
            "                  (sha256sum FILE.wasm)\n"
            "  --input PATH    the run's input: JSON {\"args\": [...], \"files\": {PATH: TEXT}}\n"
            "  --runner NAME   the LOADER binding to run under (granted with --grant)\n"
            "  --scope SCOPE   the run's scope name (1 to 128 bytes)\n"
            "PATH may be '-' (stdin) for one of --program/--input. Without --grant the\n"
            "granted LOADER list is \"LOADER\". --engine: the execution tier (docs/jit.md;\n"
            "default $PERI_ENGINE, else auto). --bounds-checks: how memory accesses are\n"
            "checked: guard (default: guard pages where the address space allows) or explicit\n"
            "(a check at every access); traps are the same (docs/jit.md).\n"
            "Clocks and random_get are a fixed function of the program and its input, so a\n"
            "run gives the same result on every host; --real-clocks gives the host's own.\n"
            "`peri run FILE.wasm` runs a module directly.\n"
            "Exit status of run: 0 the result JSON on stdout; 1 the contract's error message\n"
            "(Chinese, exact) on the first line of stderr, on a terminal its English meaning\n"
            "on the next; 2 usage error.\n");
}

/* The contract message on stderr as it is; on a terminal its English meaning beside. */
static void contract_error(const char *msg) {
    fprintf(stderr, "%s\n", msg);
    char en[700];
    if (isatty(2) && pr_message_english(msg, en, sizeof en)) fprintf(stderr, "(%s)\n", en);
}

/* A usage error: what was wrong, then the usage. Returns 2. */
static int bad_usage(const char *what, const char *arg) {
    fprintf(stderr, "peri isolate: %s%s%s%s\n", what, arg ? " \"" : "", arg ? arg : "",
            arg ? "\"" : "");
    usage(stderr);
    return 2;
}

typedef struct common_opts {
    const char *grants[MAX_GRANTS];
    size_t ngrants;
    unsigned long cpu_ms, wall_ms;
    bool real_clocks;
    int engine; /* PW_ENGINE_* */
    int bounds; /* PW_BOUNDS_* */
} common_opts;

/* Parses an option shared by run and serve at argv[*i]; 1 taken, 0 not ours, -1 bad. */
static int common_opt(common_opts *o, int argc, char **argv, int *i) {
    const char *a = argv[*i];
    if (strcmp(a, "--deterministic") == 0) { /* the default; kept for scripts that say so */
        o->real_clocks = false;
        return 1;
    }
    if (strcmp(a, "--real-clocks") == 0) {
        o->real_clocks = true;
        return 1;
    }
    if (strcmp(a, "--grant") != 0 && strcmp(a, "--cpu-ms") != 0 && strcmp(a, "--wall-ms") != 0 &&
        strcmp(a, "--engine") != 0 && strcmp(a, "--bounds-checks") != 0)
        return 0;
    if (*i + 1 >= argc) {
        fprintf(stderr, "peri isolate: %s needs a value\n", a);
        return -1;
    }
    const char *v = argv[++*i];
    if (strcmp(a, "--engine") == 0) {
        o->engine = peri_engine_parse(v);
        if (o->engine < 0)
            fprintf(stderr, "peri isolate: --engine wants auto, interp or jit, got \"%s\"\n", v);
        return o->engine < 0 ? -1 : 1;
    }
    if (strcmp(a, "--bounds-checks") == 0) {
        o->bounds = peri_bounds_parse(v);
        if (o->bounds < 0)
            fprintf(stderr, "peri isolate: --bounds-checks wants guard or explicit, got \"%s\"\n",
                    v);
        return o->bounds < 0 ? -1 : 1;
    }
    if (strcmp(a, "--grant") == 0) {
        if (o->ngrants == MAX_GRANTS) {
            fprintf(stderr, "peri isolate: at most %d --grant options\n", MAX_GRANTS);
            return -1;
        }
        o->grants[o->ngrants++] = v;
        return 1;
    }
    char *end;
    if (strcmp(a, "--wall-ms") == 0) {
        o->wall_ms = strtoul(v, &end, 10);
        if (*end || !*v || v[0] == '-' || o->wall_ms == 0 || o->wall_ms > 3600000) {
            fprintf(stderr, "peri isolate: --wall-ms wants 1..3600000, got \"%s\"\n", v);
            return -1;
        }
        return 1;
    }
    o->cpu_ms = strtoul(v, &end, 10);
    if (*end || !*v || v[0] == '-' || o->cpu_ms == 0) {
        fprintf(stderr, "peri isolate: --cpu-ms wants a positive number, got \"%s\"\n", v);
        return -1;
    }
    if (o->cpu_ms > PR_CPU_MS_MAX) {
        fprintf(stderr, "peri isolate: --cpu-ms may lower the limit, not raise it over %u\n",
                PR_CPU_MS_MAX);
        return -1;
    }
    return 1;
}

static pr_host *make_host(const common_opts *o) {
    pr_host_config cfg = {0};
    if (o->ngrants) {
        cfg.granted = o->grants;
        cfg.ngranted = o->ngrants;
    }
    cfg.cpu_ms = (uint32_t)o->cpu_ms;
    cfg.wall_ms = (uint32_t)o->wall_ms;
    cfg.real_clocks = o->real_clocks;
    cfg.engine = o->engine;
    cfg.bounds_checks = o->bounds;
    char ccdir[4096]; /* the code cache: $PERI_CODE_CACHE, else ~/.cache/peri/code */
    cfg.code_cache_dir = peri_code_cache_dir(ccdir, sizeof ccdir);
    pr_error err;
    pr_host *h = pr_host_new(&cfg, &err);
    if (!h) contract_error(err.message);
    return h;
}

static int isolate_run(int argc, char **argv) {
    common_opts o = {.engine = peri_engine_default()};
    if (o.engine < 0) return 2;
    const char *runner = NULL, *scope = NULL, *digest = NULL, *program = NULL, *input = NULL;
    for (int i = 1; i < argc; i++) {
        int c = common_opt(&o, argc, argv, &i);
        if (c < 0) goto bad;
        if (c) continue;
        const char **slot = NULL;
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            usage(stdout);
            return 0;
        }
        if (strcmp(argv[i], "--runner") == 0)
            slot = &runner;
        else if (strcmp(argv[i], "--scope") == 0)
            slot = &scope;
        else if (strcmp(argv[i], "--digest") == 0)
            slot = &digest;
        else if (strcmp(argv[i], "--program") == 0)
            slot = &program;
        else if (strcmp(argv[i], "--input") == 0)
            slot = &input;
        if (!slot) return bad_usage("unknown option or argument", argv[i]);
        if (i + 1 >= argc) return bad_usage("a value is missing after", argv[i]);
        *slot = argv[++i];
    }
    if (!runner || !scope || !digest || !program || !input)
        return bad_usage(!runner    ? "--runner NAME is missing"
                         : !scope   ? "--scope SCOPE is missing"
                         : !digest  ? "--digest HEX is missing"
                         : !program ? "--program PATH (the module as Base64) is missing"
                                    : "--input PATH (the run's input JSON) is missing",
                         NULL);
    if (strcmp(program, "-") == 0 && strcmp(input, "-") == 0)
        return bad_usage("only one of --program and --input can be '-' (stdin)", NULL);
    size_t plen, ilen;
    char *ptext = peri_read_file(program, true, &plen);
    if (!ptext) {
        fprintf(stderr, "peri isolate run: cannot read --program %s: %s\n", program,
                strerror(errno));
        return 2;
    }
    char *itext = peri_read_file(input, true, &ilen);
    if (!itext) {
        fprintf(stderr, "peri isolate run: cannot read --input %s: %s\n", input, strerror(errno));
        free(ptext);
        return 2;
    }
    pr_host *h = make_host(&o);
    int rc = 2;
    if (h) {
        pr_request req = {{runner, strlen(runner)},
                          {scope, strlen(scope)},
                          {digest, strlen(digest)},
                          {ptext, plen},
                          {itext, ilen}};
        pr_response res;
        pr_error err;
        if (pr_run(h, &req, &res, &err)) {
            fwrite(res.output, 1, res.output_len, stdout);
            fputc('\n', stdout);
            pr_response_clear(&res);
            rc = fflush(stdout) == 0 ? 0 : 1;
        } else {
            contract_error(err.message);
            rc = 1;
        }
        pr_host_free(h);
    }
    free(ptext);
    free(itext);
    return rc;
bad:
    usage(stderr);
    return 2;
}

static int isolate_serve(int argc, char **argv) {
    common_opts o = {.engine = peri_engine_default()};
    if (o.engine < 0) return 2;
    unsigned long workers = 1;
    for (int i = 1; i < argc; i++) {
        int c = common_opt(&o, argc, argv, &i);
        if (c < 0) goto bad;
        if (c) continue;
        if (strcmp(argv[i], "--workers") == 0 && i + 1 < argc) {
            char *end;
            const char *v = argv[++i];
            workers = strtoul(v, &end, 10);
            if (*end || !*v || v[0] == '-' || workers < 1 || workers > 256)
                return bad_usage("--workers wants 1..256, got", v);
        } else if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            usage(stdout);
            return 0;
        } else {
            return bad_usage("unknown option or argument", argv[i]);
        }
    }
    pr_host *h = make_host(&o);
    if (!h) return 2;
    /* A client that goes away must not kill the server mid-answer: writes then fail
     * with EPIPE and pr_serve reports an I/O error instead. */
    signal(SIGPIPE, SIG_IGN);
    int rc = pr_serve(h, STDIN_FILENO, STDOUT_FILENO, (unsigned)workers);
    pr_host_free(h);
    return rc == 0 ? 0 : 1;
bad:
    usage(stderr);
    return 2;
}

int peri_cmd_isolate(int argc, char **argv) {
    if (argc >= 2 && strcmp(argv[1], "run") == 0) return isolate_run(argc - 1, argv + 1);
    if (argc >= 2 && strcmp(argv[1], "serve") == 0) return isolate_serve(argc - 1, argv + 1);
    if (argc >= 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
        usage(stdout);
        return 0;
    }
    return bad_usage(argc < 2 ? "run or serve is missing" : "unknown subcommand (run or serve)",
                     argc < 2 ? NULL : argv[1]);
}
