/*
 * commands.h — the subcommands of the `peri` command. Each takes the arguments
 * after `peri` (argv[0] is the subcommand's own name) and returns the exit status:
 * 0 success, 1 failure, 2 usage error. main.c's table lists them; adding a
 * subcommand means one declaration here and one row there.
 */
#ifndef PERI_CLI_COMMANDS_H
#define PERI_CLI_COMMANDS_H

#include <stddef.h>

int peri_cmd_wasm(int argc, char **argv);    /* cmd_wasm.c: validate, invoke */
int peri_cmd_compile(int argc, char **argv); /* cmd_compile.c: ahead-of-time machine code */
/* engine_opt.c: the code cache directory of the room's commands: $PERI_CODE_CACHE
 * ("off" or "0": none), else the cache of peri_cache_path ("code"); NULL: none. */
const char *peri_code_cache_dir(char *buf, size_t n);

int peri_cmd_isolate(int argc, char **argv);  /* cmd_isolate.c: run, serve (the room) */
int peri_cmd_run(int argc, char **argv);      /* cmd_run.c: run a WASI program in the room */
int peri_cmd_ruby(int argc, char **argv);     /* cmd_ruby.c: a Ruby script in the room */
int peri_cmd_python(int argc, char **argv);   /* cmd_python.c: a Python script in the room */
int peri_cmd_acp(int argc, char **argv);      /* cmd_acp.c: ACP agent on stdio */
int peri_cmd_acp_wasm(int argc, char **argv); /* cmd_acp_wasm.c: the same, in the module */
int peri_cmd_print(int argc, char **argv);    /* cmd_print.c: one-shot ACP client */
/* agent_exec.c: runs `peri-agent <argv...>` (acp, print live there, not in peri). */
int peri_cmd_agent(int argc, char **argv);
int peri_cmd_place(int argc, char **argv); /* cmd_place.c: placement run, decide (in peri-agent) */

/* place_opts.c: the placement options of `peri acp` / `peri print` from the
 * environment (Ruby's module path, the native WASI runner, the code cache). */
#include "peri/acp.h"
#include <stdbool.h>
typedef struct peri_place_opts {
    char ruby[4096], exe[4096], bwrap[4096], python[4096], code_cache[4096];
    const char *runner[8];
} peri_place_opts;
void peri_place_opts_fill(peri_place_opts *po, pacp_options *opt);
/* locate.c: the real path of the program NAME of this installation (`peri` or
 * `peri-agent`) into out: beside the running program, else PREFIX/libexec/peri or
 * PREFIX/bin relative to it. False when none is found or out is too small. */
bool peri_locate(const char *name, char *out, size_t n);
/* The path of `peri` for the running program (peri_locate("peri")). Native WASI runs use
 * `<peri> run ... MODULE ARGS`. */
bool peri_self_peri(char *buf, size_t n);
/* locate.c: OUT = the cache file REL (the cache scripts/deps.sh fills:
 * $PERI_CACHE_DIR, else $XDG_CACHE_HOME/peri, else ~/.cache/peri). False when no
 * base is known or OUT is too small. */
bool peri_cache_path(const char *rel, char *out, size_t n);
/* Ruby's WASI build inside that cache. */
#define PERI_RUBY_CACHED "ruby-3.4-wasm-wasi-2.10.1/ruby+stdlib.wasm"
/* CPython's WASI build inside that cache (scripts/python-wasi.sh puts it there). */
#define PERI_PYTHON_CACHED "python/3.11.2"

int peri_cmd_mcp(int argc, char **argv); /* cmd_mcp.c: workspace MCP server on stdio (peri-agent) */
int peri_cmd_tui(int argc, char **argv); /* cmd_tui.c: the interactive terminal client */
int peri_cmd_trust(int argc, char **argv); /* cmd_trust.c: trust a project's configuration */
int peri_cmd_login(int argc, char **argv); /* cmd_login.c: keep a provider's API key */

/* readfile.c: the whole file (with dash_is_stdin, "-" is stdin), NUL-terminated; caller
 * frees. NULL with errno set on failure. */
char *peri_read_file(const char *path, bool dash_is_stdin, size_t *len);
/* open(2) for reading, refusing a directory (EISDIR); readfile.c. */
int peri_open_file(const char *path);

/* engine_opt.c: PW_ENGINE_* of "interp"/"jit"/"auto", -1 for anything else;
 * the default tier: $PERI_ENGINE, unset or empty = auto (-1 and a message if invalid). */
int peri_engine_parse(const char *v);
int peri_engine_default(void);
/* PW_BOUNDS_* of "guard"/"explicit" (--bounds-checks), -1 for anything else. */
int peri_bounds_parse(const char *v);

#endif
