/*
 * place_opts.c — how `peri acp` and `peri print` run code: maps the
 * environment onto the ACP server's placement options. Ruby's module is
 * $PERI_RUBY_WASM, else scripts/deps.sh's cache
 * ($XDG_CACHE_HOME or $HOME/.cache)/peri/ruby-3.4-wasm-wasi-2.10.1/ruby+stdlib.wasm;
 * CPython's WASI build is $PERI_PYTHON_DIR, else that cache's python/3.11.2; a
 * WASI module promoted to the native sandbox runs as `<peri> run --dir / -- MODULE ARGS`,
 * the `peri` next to this program (peri-agent).
 * $PERI_BWRAP overrides the sandbox's bubblewrap binary (tests use it to make the
 * sandbox unavailable). The room's code cache is `peri run`'s: $PERI_CODE_CACHE (off:
 * none), else the user's cache directory's peri/code. The strings live in the caller's
 * peri_place_opts.
 */
#include "cli/commands.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* A guest build's path: the environment variable's value, else the deps.sh cache;
 * NULL when neither is known. */
static const char *build_path(char *out, size_t n, const char *env_name, const char *cached) {
    const char *env = getenv(env_name);
    if (env && *env)
        snprintf(out, n, "%s", env);
    else if (!peri_cache_path(cached, out, n))
        out[0] = 0;
    return out[0] ? out : NULL;
}

void peri_place_opts_fill(peri_place_opts *po, pacp_options *opt) {
    memset(po, 0, sizeof *po);
    opt->ruby_wasm = build_path(po->ruby, sizeof po->ruby, "PERI_RUBY_WASM", PERI_RUBY_CACHED);
    /* CPython's WASI build: $PERI_PYTHON_DIR, else scripts/python-wasi.sh's cache. */
    opt->python_dir =
        build_path(po->python, sizeof po->python, "PERI_PYTHON_DIR", PERI_PYTHON_CACHED);
    opt->code_cache_dir = peri_code_cache_dir(po->code_cache, sizeof po->code_cache);
    const char *tt = getenv("PERI_TELEMETRY_TOKEN"); /* settings.telemetry's collector */
    opt->telemetry_token = tt && *tt ? tt : NULL;
    const char *bw = getenv("PERI_BWRAP");
    if (bw && *bw) {
        snprintf(po->bwrap, sizeof po->bwrap, "%s", bw);
        opt->bwrap = po->bwrap;
    }
    if (peri_self_peri(po->exe, sizeof po->exe)) {
        size_t k = 0;
#if defined(__SANITIZE_ADDRESS__)
        /* LeakSanitizer stops the world with ptrace, which the sandbox's seccomp denies */
        po->runner[k++] = "/usr/bin/env";
        po->runner[k++] = "ASAN_OPTIONS=detect_leaks=0";
#endif
        /* `peri run [OPTIONS] -- MODULE ARGS`: the sandbox's root is the program's "/"
         * (its /请求/, /数据/, /响应/ are there); ARGS are appended after the module. */
        po->runner[k++] = po->exe;
        po->runner[k++] = "run";
        po->runner[k++] = "--dir";
        po->runner[k++] = "/";
        po->runner[k++] = "--";
        po->runner[k++] = "{module}";
        opt->wasm_runner = po->runner;
        opt->nwasm_runner = k;
    }
}
