/*
 * cmd_place.c — `peri place run|decide`: placement from the command line.
 *
 *   peri place run [--native yes|no|auto] [--policy FILE] [--scratch DIR] REQUEST.json|-
 *   peri place decide [--native yes|no|auto] [--policy FILE] REQUEST.json|-
 *
 * `run` prints JSON lines: every decision record ({"decision":{...}}), the typed
 * outcome when one was produced ({"outcome":{...}}), the evidence of each attempt
 * ({"evidence":{...}}) and last the result ({"result":{...}}). `decide` prints only
 * the L1 decision. Exit status: 0 when the result says ok:true (or the decision was
 * printed); 3 when a result was printed and it says ok:false (the program failed, was
 * stopped by a limit, or no backend could run it); 1 on an error before any result (a
 * bad request, a missing module file; message on stderr); 2 on a usage error. WASI programs
 * promoted to native run as `peri run MODULE -- ARGS` inside the sandbox (the peri next
 * to peri-agent, where this command lives so that `peri` itself links no
 * libcrypto or libseccomp: docs/wasi.md, "Cold start").
 */
#include "cli/commands.h"
#include "peri/place.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static void usage(FILE *f) {
    fprintf(f, "usage: peri place run [--native yes|no|auto] [--policy FILE] [--scratch DIR]\n"
               "                      REQUEST.json|-\n"
               "       peri place decide [--native yes|no|auto] [--policy FILE] REQUEST.json|-\n"
               "--scratch: where native runs make their scratch directories (default /tmp).\n"
               "See docs/placement.md for the request, policy and output formats.\n"
               "Exit status: 0 the result says ok:true (decide: the decision was printed);\n"
               "3 the result says ok:false; 1 an error before any result (bad request,\n"
               "missing module); 2 usage error.\n");
}

/* A usage error: what was wrong, then the usage. Returns 2. */
static int bad_usage(const char *what, const char *arg) {
    fprintf(stderr, "peri place: %s%s%s%s\n", what, arg ? " \"" : "", arg ? arg : "",
            arg ? "\"" : "");
    usage(stderr);
    return 2;
}

/* A request error, with the valid feature names when a requirement is unknown. */
static void request_error(const char *path, const char *msg) {
    fprintf(stderr, "peri place: %s: %s", path, msg);
    if (strstr(msg, "unknown feature") && !strstr(msg, "valid")) {
        fprintf(stderr, " (valid features:");
        for (unsigned i = 0; pl_feature_name(i); i++)
            fprintf(stderr, "%s %s", i ? "," : "", pl_feature_name(i));
        fprintf(stderr, ")");
    }
    fputc('\n', stderr);
}

static void line(const char *key, const char *json) {
    printf("{\"%s\":%s}\n", key, json);
}

int peri_cmd_place(int argc, char **argv) {
    if (argc < 2) return bad_usage("run or decide is missing", NULL);
    const char *sub = argv[1];
    if (!strcmp(sub, "-h") || !strcmp(sub, "--help")) {
        usage(stdout);
        return 0;
    }
    bool run = strcmp(sub, "run") == 0;
    if (!run && strcmp(sub, "decide") != 0)
        return bad_usage("unknown subcommand (run or decide)", sub);
    const char *native = NULL, *policy_path = NULL, *req_path = NULL, *scratch = NULL;
    for (int i = 2; i < argc; i++) {
        if (!strcmp(argv[i], "--native") && i + 1 < argc)
            native = argv[++i];
        else if (!strcmp(argv[i], "--policy") && i + 1 < argc)
            policy_path = argv[++i];
        else if (!strcmp(argv[i], "--scratch") && i + 1 < argc)
            scratch = argv[++i];
        else if (argv[i][0] == '-' && strcmp(argv[i], "-") != 0)
            return bad_usage(i + 1 < argc ? "unknown option" : "unknown option or missing value",
                             argv[i]);
        else if (!req_path)
            req_path = argv[i];
        else
            return bad_usage("only one request file is taken; extra argument", argv[i]);
    }
    if (!req_path)
        return bad_usage("the request file (REQUEST.json, or - for stdin) is missing", NULL);
    if (native && strcmp(native, "yes") && strcmp(native, "no") && strcmp(native, "auto"))
        return bad_usage("--native wants yes, no or auto, got", native);
    pl_error err = {0};
    pl_policy *pol = NULL;
    pl_policy defaults = {0};
    if (policy_path) {
        size_t n;
        char *t = peri_read_file(policy_path, true, &n);
        if (!t) {
            fprintf(stderr, "peri place: cannot read the policy %s: %s\n", policy_path,
                    strerror(errno));
            return 1;
        }
        pol = pl_policy_parse(t, n, &err);
        free(t);
        if (!pol) {
            fprintf(stderr, "peri place: policy %s: %s\n", policy_path, err.message);
            return 1;
        }
    }
    pl_policy *p = pol ? pol : &defaults;
    if (native)
        p->native = !strcmp(native, "yes")  ? PL_NATIVE_YES
                    : !strcmp(native, "no") ? PL_NATIVE_NO
                                            : PL_NATIVE_AUTO;
    size_t n;
    char *text = peri_read_file(req_path, true, &n);
    if (!text) {
        fprintf(stderr, "peri place: cannot read the request %s: %s\n", req_path, strerror(errno));
        pl_policy_free(pol);
        return 1;
    }
    pl_request *rq = pl_request_parse(text, n, &err);
    free(text);
    if (!rq) {
        request_error(strcmp(req_path, "-") ? req_path : "request from stdin", err.message);
        pl_policy_free(pol);
        return 1;
    }
    /* A WASI module that is not there (or is C source, a script) is the user's mistake,
     * not a reason to try the native sandbox: say so before anything runs. Only regular
     * files are opened here (a FIFO would block); anything else is placement's to refuse. */
    if (run && rq->kind == PL_PROGRAM_WASM && rq->program) {
        struct stat st;
        unsigned char magic[4] = {0};
        size_t got = 0;
        int e = stat(rq->program, &st) == 0 ? 0 : errno;
        if (!e && S_ISREG(st.st_mode)) {
            FILE *mf = fopen(rq->program, "rb");
            e = mf ? 0 : errno;
            got = mf ? fread(magic, 1, 4, mf) : 0;
            if (mf) fclose(mf);
        }
        bool not_wasm = !e && S_ISREG(st.st_mode) && (got != 4 || memcmp(magic, "\0asm", 4));
        if (e || not_wasm) {
            if (e)
                fprintf(stderr, "peri place: program.wasm \"%s\" in %s: %s\n", rq->program,
                        req_path, strerror(e));
            else
                fprintf(stderr,
                        "peri place: program.wasm \"%s\" in %s is not a WebAssembly module (a "
                        ".wasm file starts with \\0asm)\n",
                        rq->program, req_path);
            pl_request_free(rq);
            pl_policy_free(pol);
            return 1;
        }
    }
    /* This runs in peri-agent; `peri run` (the WASI runner) is the peri next to it. */
    char self[PATH_MAX];
    ssize_t sl = peri_self_peri(self, sizeof self) ? (ssize_t)strlen(self) : 0;
    if (!sl) self[0] = 0;
#if defined(__SANITIZE_ADDRESS__)
    /* LeakSanitizer stops the world with ptrace, which the sandbox's seccomp denies */
    const char *runner[] = {
        "/usr/bin/env", "ASAN_OPTIONS=detect_leaks=0", self, "run", "--dir", "/", "--", "{module}"};
#else
    /* `peri run --dir / -- MODULE ARGS`: options end before the module (everything after
     * it is the guest's), and the sandbox's root, where the request's files are laid out
     * at their guest paths, is the program's "/". */
    const char *runner[] = {self, "run", "--dir", "/", "--", "{module}"};
#endif
    size_t nrunner = sizeof runner / sizeof runner[0];
    pl_config cfg = {.wasm_runner = sl > 0 ? runner : NULL,
                     .nwasm_runner = sl > 0 ? nrunner : 0,
                     .scratch_root = scratch};
    pl_ctx *pc = pl_new(&cfg, &err);
    int rc = 1;
    if (!pc) {
        fprintf(stderr, "peri place: %s\n", err.message);
    } else if (!run) {
        pl_decision d;
        if (pl_decide(pc, rq, p, &d, &err)) {
            char *j = pl_decision_json(&d, NULL);
            if (j) {
                line("decision", j);
                rc = 0;
            }
            free(j);
        } else {
            fprintf(stderr, "peri place: %s\n", err.message);
        }
    } else {
        pl_report rep;
        if (pl_run(pc, rq, p, NULL, &rep, &err)) {
            bool ok = true;
            for (size_t i = 0; i < rep.ndecisions; i++) {
                char *j = pl_decision_json(&rep.decisions[i], NULL);
                ok = ok && j;
                if (j) line("decision", j);
                free(j);
            }
            if (rep.has_outcome) {
                char *j = pl_outcome_json(&rep.outcome, NULL);
                ok = ok && j;
                if (j) line("outcome", j);
                free(j);
            }
            for (size_t i = 0; i < rep.nevidence; i++)
                line("evidence", rep.evidence[i]);
            if (rep.result.json) line("result", rep.result.json);
            rc = !ok || !rep.result.json ? 1 : rep.result.ok ? 0 : 3;
            pl_report_clear(&rep);
        } else {
            fprintf(stderr, "peri place: %s\n", err.message);
        }
    }
    fflush(stdout);
    pl_free(pc);
    pl_request_free(rq);
    pl_policy_free(pol);
    return rc;
}
