/*
 * place_opts.c — how `peri acp` and `peri print` run code: maps the
 * environment onto the ACP server's placement options. Ruby's module is
 * $PERI_RUBY_WASM, else scripts/deps.sh's cache
 * ($XDG_CACHE_HOME or $HOME/.cache)/peri/ruby-3.4-wasm-wasi-2.10.1/ruby+stdlib.wasm;
 * CPython's WASI build is $PERI_PYTHON_DIR, else that cache's python/3.11.2; a
 * WASI module promoted to the native sandbox runs as `<peri> run --dir / -- MODULE ARGS`,
 * the `peri` next to this program (peri-agent).
 * $PERI_BWRAP overrides the sandbox's bubblewrap binary (tests use it to make the
 * sandbox unavailable). The strings live in the caller's peri_place_opts.
 */
#include "cli/commands.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void peri_place_opts_fill(peri_place_opts *po, pacp_options *opt) {
    memset(po, 0, sizeof *po);
    const char *env = getenv("PERI_RUBY_WASM");
    if (env && *env)
        snprintf(po->ruby, sizeof po->ruby, "%s", env);
    else if (!peri_cache_path(PERI_RUBY_CACHED, po->ruby, sizeof po->ruby))
        po->ruby[0] = 0;
    opt->ruby_wasm = po->ruby[0] ? po->ruby : NULL;
    /* CPython's WASI build: $PERI_PYTHON_DIR, else scripts/python-wasi.sh's cache. */
    const char *pyd = getenv("PERI_PYTHON_DIR");
    if (pyd && *pyd)
        snprintf(po->python, sizeof po->python, "%s", pyd);
    else if (!peri_cache_path(PERI_PYTHON_CACHED, po->python, sizeof po->python))
        po->python[0] = 0;
    opt->python_dir = po->python[0] ? po->python : NULL;
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
