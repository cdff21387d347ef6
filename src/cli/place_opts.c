/*
 * place_opts.c — how `peri acp` and `peri print` run code (issue 11): maps the
 * environment onto the ACP server's placement options. Ruby's module is
 * $PERI_RUBY_WASM, else scripts/deps.sh's cache
 * ($XDG_CACHE_HOME or $HOME/.cache)/peri/ruby-3.4-wasm-wasi-2.10.1/ruby+stdlib.wasm; a
 * WASI module promoted to the native sandbox runs as `<this peri> run MODULE -- ARGS`.
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
    const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
    if (env && *env)
        snprintf(po->ruby, sizeof po->ruby, "%s", env);
    else if (xdg && *xdg)
        snprintf(po->ruby, sizeof po->ruby, "%s/peri/ruby-3.4-wasm-wasi-2.10.1/ruby+stdlib.wasm",
                 xdg);
    else if (home && *home)
        snprintf(po->ruby, sizeof po->ruby,
                 "%s/.cache/peri/ruby-3.4-wasm-wasi-2.10.1/ruby+stdlib.wasm", home);
    opt->ruby_wasm = po->ruby[0] ? po->ruby : NULL;
    const char *bw = getenv("PERI_BWRAP");
    if (bw && *bw) {
        snprintf(po->bwrap, sizeof po->bwrap, "%s", bw);
        opt->bwrap = po->bwrap;
    }
    ssize_t n = readlink("/proc/self/exe", po->exe, sizeof po->exe - 1);
    if (n > 0) {
        po->exe[n] = 0;
        po->runner[0] = po->exe;
        po->runner[1] = "run";
        po->runner[2] = "{module}";
        po->runner[3] = "--";
        opt->wasm_runner = po->runner;
        opt->nwasm_runner = 4;
    }
}
