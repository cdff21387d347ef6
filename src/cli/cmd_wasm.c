/*
 * cmd_wasm.c — `peri wasm`: a small tool for humans around the engine.
 *
 *   peri wasm validate FILE                   decode + validate; "valid" or the error
 *   peri wasm invoke [--v8-messages] [--time] [--engine E] [--bounds-checks B] FILE FUNC
 *                    [ARGS...]
 *                                             instantiate (no imports) and call FUNC
 *
 * Arguments are parsed by the function's parameter types (i32/i64 decimal or 0x hex,
 * f32/f64 decimal floats, inf, nan; references only as "null"). Results print one per
 * line: integers as signed decimal, floats in the shortest form that reads back
 * exactly, references as null/ref. A trap prints "trap: <message>" on stderr and
 * exits 1 (spec wording, or V8's with --v8-messages). Usage errors exit 2.
 */
#include "cli/commands.h"
#include "cli/values.h"
#include "peri/wasm.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int wasm_usage(FILE *f) {
    fprintf(f, "usage: peri wasm validate FILE\n"
               "       peri wasm invoke [--v8-messages] [--time] [--engine E] [--bounds-checks B]\n"
               "                        FILE FUNC [ARGS...]\n"
               "  validate       decode and validate FILE; prints \"valid\" or the error\n"
               "  invoke         instantiate FILE (it must have no imports) and call the\n"
               "                 exported function FUNC with ARGS; prints the results\n"
               "  --v8-messages  trap messages in V8's wording instead of the spec's\n"
               "  --engine E     execution tier: auto (default), interp or jit (docs/jit.md)\n"
               "  --bounds-checks B  guard (default: guard pages where possible) or explicit\n"
               "  --time         print compile/instantiate/call times on stderr\n"
               "Exit status: 0 success (valid; the call returned); 1 the module is malformed,\n"
               "invalid or cannot be instantiated, the file cannot be read, or the call\n"
               "trapped; 2 usage error.\n");
    return f == stdout ? 0 : 2;
}

static double wasm_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static uint8_t *wasm_read_raw(const char *path, size_t *len);

/* Is this a text module (a .wat/.wast name, or text that does not start with the
 * binary magic)? */
static bool wasm_is_text(const char *path, const uint8_t *b, size_t n) {
    size_t pl = strlen(path);
    if (pl > 4 && (strcmp(path + pl - 4, ".wat") == 0 || strcmp(path + pl - 5, ".wast") == 0))
        return true;
    return n >= 1 && !(n >= 4 && memcmp(b, "\0asm", 4) == 0) && (b[0] == '(' || b[0] == ';');
}

/* Reads the whole file, turning a text module into the binary format; caller frees.
 * NULL with errno set on failure (EINVAL after printing the text parser's error). */
static uint8_t *wasm_read_file(const char *path, size_t *len) {
    uint8_t *raw = wasm_read_raw(path, len);
    if (!raw || !wasm_is_text(path, raw, *len)) return raw;
    uint8_t *bin = NULL;
    size_t blen = 0;
    pw_error err;
    pw_status st = pw_wat_to_wasm((const char *)raw, *len, &bin, &blen, &err);
    free(raw);
    if (st != PW_OK) {
        fprintf(stderr, "peri wasm: %s: text format: %s\n", path, err.message);
        errno = st == PW_ERR_NOMEM ? ENOMEM : EINVAL;
        return NULL;
    }
    *len = blen;
    return bin;
}

/* Reads the whole file; caller frees. NULL with errno set on failure. */
static uint8_t *wasm_read_raw(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    uint8_t *buf = NULL;
    size_t cap = 0, n = 0, got;
    do {
        if (n == cap) {
            cap = cap ? cap * 2 : 1 << 16;
            uint8_t *nb = realloc(buf, cap);
            if (!nb) {
                free(buf);
                fclose(f);
                errno = ENOMEM;
                return NULL;
            }
            buf = nb;
        }
        got = fread(buf + n, 1, cap - n, f);
        n += got;
    } while (got > 0);
    int bad = ferror(f);
    fclose(f);
    if (bad) {
        free(buf);
        errno = EIO;
        return NULL;
    }
    *len = n;
    return buf;
}

static const char *wasm_status_word(pw_status s) {
    switch (s) {
    case PW_ERR_MALFORMED: return "malformed";
    case PW_ERR_INVALID: return "invalid";
    case PW_ERR_UNLINKABLE: return "unlinkable";
    case PW_ERR_TRAP: return "trap";
    case PW_ERR_EXCEPTION: return "uncaught exception";
    case PW_ERR_OOM: return "out of memory";
    case PW_ERR_NOMEM: return "out of memory";
    case PW_ERR_ARG: return "error";
    case PW_OK: break;
    }
    return "error";
}

static int wasm_validate(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "peri wasm validate: %s\n",
                argc < 2 ? "the module FILE is missing" : "one FILE only");
        return wasm_usage(stderr);
    }
    size_t len;
    uint8_t *bytes = wasm_read_file(argv[1], &len);
    if (!bytes) {
        fprintf(stderr, "peri wasm validate: %s: %s\n", argv[1], strerror(errno));
        return 1;
    }
    pw_error err;
    memset(&err, 0, sizeof err);
    pw_status st = pw_module_validate(bytes, len, &err);
    free(bytes);
    if (st == PW_OK) {
        printf("valid\n");
        return 0;
    }
    fprintf(stderr, "%s: %s: %s\n", argv[1], wasm_status_word(st), err.message);
    return 1;
}

static const char *wasm_kind_name(pw_extern_kind k) {
    switch (k) {
    case PW_EXTERN_FUNC: return "function";
    case PW_EXTERN_TABLE: return "table";
    case PW_EXTERN_MEMORY: return "memory";
    case PW_EXTERN_GLOBAL: return "global";
    case PW_EXTERN_TAG: return "tag";
    }
    return "?";
}

/* `peri wasm invoke` has no host: every import is unknown. */
static bool wasm_no_imports(void *ctx, pw_store *s, const pw_module *m, const pw_import_desc *imp,
                            pw_extern *out) {
    (void)ctx, (void)s, (void)m, (void)imp, (void)out;
    return false;
}

static int wasm_invoke(int argc, char **argv) {
    pw_msg_style style = PW_MSG_SPEC;
    bool timing = false;
    pw_store_config cfg = {.engine = peri_engine_default()};
    if (cfg.engine < 0) return 2;
    int i = 1;
    for (; i < argc && argv[i][0] == '-' && argv[i][1] == '-'; i++) {
        if (strcmp(argv[i], "--v8-messages") == 0)
            style = PW_MSG_V8;
        else if (strcmp(argv[i], "--time") == 0)
            timing = true;
        else if (strcmp(argv[i], "--engine") == 0 && i + 1 < argc) {
            cfg.engine = peri_engine_parse(argv[++i]);
            if (cfg.engine < 0) {
                fprintf(stderr, "peri wasm invoke: --engine wants interp, jit or auto\n");
                return 2;
            }
        } else if (strcmp(argv[i], "--bounds-checks") == 0 && i + 1 < argc) {
            cfg.bounds_checks = peri_bounds_parse(argv[++i]);
            if (cfg.bounds_checks < 0) {
                fprintf(stderr,
                        "peri wasm invoke: --bounds-checks wants guard or explicit, got \"%s\"\n",
                        argv[i]);
                return 2;
            }
        } else if (strcmp(argv[i], "--") == 0) {
            i++;
            break;
        } else {
            fprintf(stderr, "peri wasm invoke: unknown option %s\n", argv[i]);
            return wasm_usage(stderr);
        }
    }
    if (argc - i < 2) {
        fprintf(stderr, "peri wasm invoke: %s\n",
                argc - i < 1 ? "the module FILE and the function FUNC are missing"
                             : "the function FUNC to call is missing");
        return wasm_usage(stderr);
    }
    const char *file = argv[i], *func = argv[i + 1];
    char **args = argv + i + 2;
    uint32_t nargs = (uint32_t)(argc - i - 2);

    size_t len;
    uint8_t *bytes = wasm_read_file(file, &len);
    if (!bytes) {
        fprintf(stderr, "peri wasm invoke: %s: %s\n", file, strerror(errno));
        return 1;
    }
    int rc = 1;
    pw_error err;
    memset(&err, 0, sizeof err);
    pw_store *store = NULL;
    pw_val *vals = NULL;
    double t0 = wasm_now();
    pw_module *m = pw_module_new(bytes, len, NULL, &err);
    free(bytes);
    double t1 = wasm_now();
    if (!m) {
        fprintf(stderr, "%s: %s: %s\n", file, wasm_status_word(err.status), err.message);
        return 1;
    }
    uint32_t nimports = pw_module_import_count(m);
    if (nimports) {
        fprintf(stderr, "%s: `peri wasm invoke` provides no imports, but the module imports:\n",
                file);
        for (uint32_t k = 0; k < nimports; k++) {
            pw_import_desc d;
            pw_module_import(m, k, &d);
            fprintf(stderr, "  %.*s.%.*s (%s)\n", (int)d.module_len, d.module, (int)d.name_len,
                    d.name, wasm_kind_name(d.kind));
        }
        goto out;
    }
    pw_functype ft;
    if (!pw_module_export_functype(m, func, strlen(func), &ft)) {
        fprintf(stderr, "%s: no exported function \"%s\"; exported functions:", file, func);
        for (uint32_t k = 0, n = pw_module_export_count(m); k < n; k++) {
            pw_export_desc d;
            pw_module_export(m, k, &d);
            if (d.kind == PW_EXTERN_FUNC) fprintf(stderr, " %.*s", (int)d.name_len, d.name);
        }
        fputc('\n', stderr);
        rc = 2;
        goto out;
    }
    if (nargs != ft.nparams) {
        fprintf(stderr, "peri wasm invoke: %s takes %u argument%s (", func, ft.nparams,
                ft.nparams == 1 ? "" : "s");
        for (uint32_t k = 0; k < ft.nparams; k++)
            fprintf(stderr, "%s%s", k ? " " : "", peri_val_type_name(ft.params[k]));
        fprintf(stderr, "), %u given\n", nargs);
        rc = 2;
        goto out;
    }
    uint32_t ncells = (ft.nparams > ft.nresults ? ft.nparams : ft.nresults) + 1;
    vals = calloc(2 * (size_t)ncells, sizeof *vals);
    if (!vals) {
        fprintf(stderr, "peri wasm invoke: out of memory\n");
        goto out;
    }
    pw_val *argv_vals = vals, *results = vals + ncells;
    for (uint32_t k = 0; k < nargs; k++)
        if (!peri_val_parse(args[k], ft.params[k], &argv_vals[k])) {
            fprintf(stderr, "peri wasm invoke: argument %u: \"%s\" is not a valid %s\n", k + 1,
                    args[k], peri_val_type_name(ft.params[k]));
            rc = 2;
            goto out;
        }
    store = pw_store_new(&cfg, &err);
    if (!store) {
        fprintf(stderr, "peri wasm invoke: %s\n", err.message);
        goto out;
    }
    pw_instance *inst = pw_instantiate(store, m, wasm_no_imports, NULL, &err);
    double t2 = wasm_now();
    if (!inst) {
        if (err.status == PW_ERR_TRAP)
            fprintf(stderr, "trap: %s\n",
                    err.trap == PW_TRAP_HOST ? err.message : pw_trap_message(err.trap, style));
        else
            fprintf(stderr, "%s: %s: %s\n", file, wasm_status_word(err.status), err.message);
        goto out;
    }
    pw_extern ext;
    if (!pw_instance_export(inst, func, strlen(func), &ext) || ext.kind != PW_EXTERN_FUNC) {
        fprintf(stderr, "%s: no exported function \"%s\"\n", file, func);
        goto out;
    }
    pw_status st = pw_call(store, ext.u.func, argv_vals, nargs, results, ft.nresults, &err);
    double t3 = wasm_now();
    if (st == PW_ERR_TRAP) {
        fprintf(stderr, "trap: %s\n",
                err.trap == PW_TRAP_HOST ? err.message : pw_trap_message(err.trap, style));
    } else if (st != PW_OK) {
        fprintf(stderr, "%s: %s: %s\n", func, wasm_status_word(st), err.message);
    } else {
        for (uint32_t k = 0; k < ft.nresults; k++)
            peri_val_print(ft.results[k], results[k]);
        rc = 0;
    }
    if (timing)
        fprintf(stderr, "time: compile %.3f ms, instantiate %.3f ms, call %.3f ms\n",
                (t1 - t0) * 1e3, (t2 - t1) * 1e3, (t3 - t2) * 1e3);
out:
    free(vals);
    if (store) pw_store_free(store);
    pw_module_free(m);
    return rc;
}

int peri_cmd_wasm(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "peri wasm: validate or invoke is missing\n");
        return wasm_usage(stderr);
    }
    if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) return wasm_usage(stdout);
    if (strcmp(argv[1], "validate") == 0) return wasm_validate(argc - 1, argv + 1);
    if (strcmp(argv[1], "invoke") == 0) return wasm_invoke(argc - 1, argv + 1);
    fprintf(stderr, "peri wasm: unknown subcommand \"%s\"\n", argv[1]);
    return wasm_usage(stderr);
}
