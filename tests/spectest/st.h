/*
 * st.h — internal interface of the spec testsuite runner (peri-spectest).
 *
 * main.c   options, scope.json, one child process per script, totals
 * script.c executes the commands of one script (module, register, actions, asserts)
 * value.c  JSON values: arguments in, expected results (patterns) matched, printing
 * host.c   the `spectest` host module of MANIFEST.md §7
 * scope.c  scripts of scope.json's "later" stage that the engine now passes
 *
 * The runner uses only the public engine API (include/peri/wasm.h).
 */
#ifndef ST_H
#define ST_H

#include "peri/wasm.h"

#include "peri/json.h"
#include <stdbool.h>
#include <stddef.h>

typedef struct st_counts {
    long passed, failed, skipped;
    long mismatched; /* rejected modules whose category (malformed/invalid) differs */
    /* text mode (--wat): modules parsed from the .wast text, of which byte-identical to
     * the reference encoding, and modules the parser failed on or got wrong */
    long wat_modules, wat_identical, wat_failed;
} st_counts;

typedef struct st_opts {
    int verbose;   /* 0: at most ST_MAX_DETAILS failure details per script; 1: all */
    bool strict;   /* count malformed/invalid category mismatches as failures */
    int engine;    /* pw_store_config.engine (--engine) */
    bool jit_sse2; /* pw_store_config.jit_sse2 (--engine jit-sse2) */
    int bounds;    /* pw_store_config.bounds_checks (--bounds-checks) */
    bool wat;      /* text mode: modules come from the .wast source via pw_wat_to_wasm */
    bool eager;    /* pw_module_config.compile_eagerly (--eager) */
} st_opts;

#define ST_MAX_DETAILS 10

/* Runs every command of the script at `json_path` (its module files are relative to
 * its folder) in a fresh store, printing failure details to stdout. `name` is for
 * messages. Returns false if the script itself cannot be read (counts untouched). */
bool st_run_script(const char *json_path, const char *name, const st_opts *o, st_counts *c);

/* Is this script of the "later" stage run with scope wasm3 (scope.c)? */
bool st_scope_promoted(const char *name);
/* The custom/ and legacy/ scripts ("group/name"), run with scope wasm3 too. */
size_t st_scope_extra(const char *const **names);

/* Counts the assertions of a script without running it: runnable ones and the
 * text-format ones a binary-only runner skips. False if unreadable. */
bool st_count_assertions(const char *json_path, long *runnable, long *text_only);

/* True for commands counted as assertions (every assert_*). */
bool st_is_assertion(const char *type);

/* ---- value.c */

/* Converts argument `v` (MANIFEST §8) into a cell (two for a v128, low half first, as
 * the engine API takes them); `want` is the parameter type.
 * False with `why` filled when the value cannot be passed. */
bool st_value_arg(pj_t *v, pw_store *s, pw_valtype want, pw_val *out, char *why, size_t n);
/* Does result `got` of type `t` match expected pattern `e`? */
bool st_value_match(pj_t *e, pw_valtype t, const pw_val *got);
/* Human-readable forms for failure messages. */
void st_value_fmt(pw_valtype t, const pw_val *v, char *buf, size_t n);
void st_value_fmt_expected(pj_t *e, char *buf, size_t n);

/* ---- wast.c */

typedef struct st_wast st_wast;
/* The .wast source of the script whose JSON is at json_path (NULL if unreadable). */
st_wast *st_wast_open(const char *json_path);
st_wast *st_wast_load(const char *path);
/* The text of the next unused module form starting at `line` (a command, or the
 * module of an assertion). */
bool st_wast_module(st_wast *w, long line, const char **text, size_t *len);
void st_wast_free(st_wast *w);

/* ---- host.c */

typedef struct st_host st_host;
/* Creates the spectest functions, globals, table and memory in `s`; caller frees the
 * lookup table with st_host_free (the objects belong to the store). */
st_host *st_host_new(pw_store *s, pw_error *err);
bool st_host_lookup(const st_host *h, const char *name, size_t len, pw_extern *out);
void st_host_free(st_host *h);

#endif
