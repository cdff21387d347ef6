/*
 * engine_opt.c — the execution tier on the command line (docs/jit.md):
 * `--engine interp|jit|lazy|auto` and, as the default of every `peri` command that runs
 * Wasm (run, ruby, isolate run/serve, wasm invoke), the environment variable
 * PERI_ENGINE (the library reads no environment; tests use it to run whole CLI
 * suites under one tier). Unset or empty: auto. Beside it `--bounds-checks
 * guard|explicit` (pw_store_config.bounds_checks; docs/jit.md, "Bounds checks"), and
 * the directory of the on-disk code cache (PERI_CODE_CACHE, docs/jit.md "Compiled-code
 * cache").
 */
#include "cli/commands.h"
#include "peri/wasm.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int peri_engine_parse(const char *v) {
    if (!v) return -1;
    if (strcmp(v, "auto") == 0) return PW_ENGINE_AUTO;
    if (strcmp(v, "interp") == 0) return PW_ENGINE_INTERP;
    if (strcmp(v, "jit") == 0) return PW_ENGINE_JIT;
    if (strcmp(v, "lazy") == 0) return PW_ENGINE_LAZY; /* the JIT, per function at first call */
    return -1;
}

int peri_bounds_parse(const char *v) {
    if (!v) return -1;
    if (strcmp(v, "guard") == 0) return PW_BOUNDS_GUARD;
    if (strcmp(v, "explicit") == 0) return PW_BOUNDS_EXPLICIT;
    return -1;
}

int peri_engine_default(void) {
    const char *v = getenv("PERI_ENGINE");
    if (!v || !*v) return PW_ENGINE_AUTO;
    int e = peri_engine_parse(v);
    if (e >= 0) return e;
    fprintf(stderr, "peri: PERI_ENGINE wants interp, jit, lazy or auto, got \"%s\"\n", v);
    return -1;
}

const char *peri_code_cache_dir(char *buf, size_t n) {
    const char *env = getenv("PERI_CODE_CACHE");
    if (env && (!strcmp(env, "off") || !strcmp(env, "0"))) return NULL;
    if (env && *env) return env;
    return peri_cache_path("code", buf, n) ? buf : NULL;
}
