/*
 * python.c — guest ABI 4: CPython built for wasm32-wasi by scripts/python-wasi.sh
 * (python.wasm, a WASI reactor with the entry points of scripts/python-wasi-main.c)
 * run as a room program (docs/python.md).
 *
 * The module imports only WASI, so it is told apart from a plain WASI program by its
 * exports: peri_py_init, peri_py_alloc, peri_py_run. A run is `_initialize`,
 * `peri_py_init()` (the interpreter starts and imports the common standard modules),
 * then the script's source copied into guest memory with peri_py_alloc and one
 * `peri_py_run(src, len)`, which leaves with proc_exit — so stdout, stderr and the
 * exit status come back exactly like a WASI command's (0, sys.exit's status, 1 after
 * an uncaught exception).
 *
 * The standard library is a host directory the caller preopens read-only as the run's
 * only directory (pr_exec_options.dirs, guest name PR_PYTHON_STDLIB_GUEST), before the
 * in-memory "/". A run with any other layout fails with a clear error: the layout is
 * part of the snapshot (wasi-libc's table of preopens lives in guest memory).
 *
 * Startup snapshot, as for Ruby (ruby.c): the first run of a cached program does the
 * initialisation with INIT_GRACE extra CPU/wall time, then the limits restart for the
 * script, and the instance is snapshotted into the cache entry when the WASI state is
 * still the initial one and nothing was written; every later run instantiates from
 * the snapshot (private copy-on-write memory). The snapshot is also saved in the
 * module's code cache for later processes, tied to the standard library's tree as it
 * was during the boot (stdlib_stamp). The boot sees none of the run's own files.
 *
 * The module may import the capability dispatch ABI (capability.c): a script asks the
 * host for authority-bearing work through the `peri` module, and the run's handler
 * (pr_exec_options.capability) decides.
 *
 * Invariants: no snapshot unless the descriptors are the initial ones and the run
 * produced no output; the script is copied in whole or the run fails.
 */
#include "capability.h"
#include "room_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define INIT_GRACE 60000u /* ms of extra CPU/wall time for the one-time initialisation */

typedef struct python_state {
    bool from_snapshot;
} python_state;

/* WASI, plus the capability dispatch imports (peri_capability.dispatch / reply). */
static bool python_resolve(void *ctx, pw_store *s, const pw_module *m, const pw_import_desc *imp,
                           pw_extern *out) {
    pr_run_state *rs = ctx;
    if (pr__cap_is_import(imp)) return pr__cap_resolve(&rs->cap, s, imp, out);
    return pr__wasi_resolve(ctx, s, m, imp, out);
}

static bool has_export(const pw_module *m, const char *name) {
    size_t k = strlen(name);
    uint32_t n = pw_module_export_count(m);
    for (uint32_t i = 0; i < n; i++) {
        pw_export_desc d;
        pw_module_export(m, i, &d);
        if (d.kind == PW_EXTERN_FUNC && d.name_len == k && memcmp(d.name, name, k) == 0)
            return true;
    }
    return false;
}

static bool python_matches(const pw_module *m) {
    return has_export(m, "peri_py_run") && has_export(m, "peri_py_init") &&
           has_export(m, "peri_py_alloc");
}

bool pr_python_module(const pw_module *m) {
    return m && python_matches(m);
}

static pw_func *export_fn(pw_instance *inst, const char *name) {
    pw_extern ex;
    if (pw_instance_export(inst, name, strlen(name), &ex) && ex.kind == PW_EXTERN_FUNC)
        return ex.u.func;
    return NULL;
}

static pw_status host_fail(pr_run_state *rs, pw_error *err, const char *fmt, const char *arg) {
    rs->end = PR_END_HOST;
    snprintf(rs->end_msg, sizeof rs->end_msg, fmt, arg);
    err->status = PW_ERR_TRAP;
    err->trap = PW_TRAP_HOST;
    return PW_ERR_TRAP;
}

static bool layout_ok(const pr_exec_options *o) {
    return o->ndirs == 1 && o->dirs_read_only && o->dirs[0].guest &&
           strcmp(o->dirs[0].guest, PR_PYTHON_STDLIB_GUEST) == 0 && !o->no_memory_root;
}

/* The boot imports from the standard library, a host directory: a snapshot saved for
 * later processes is tied to that tree as it was (pr__tree_stamp), so an edited, added
 * or removed file there means a new boot. */
static bool stdlib_stamp(const pr_run_state *rs, uint8_t out[32]) {
    return layout_ok(rs->opt) && pr__tree_stamp(rs->opt->dirs[0].fd, out);
}

static const pr_boot_persist PYTHON_PERSIST = {stdlib_stamp};

static pw_instance *python_instantiate(pr_run_state *rs, pw_error *err) {
    python_state *st = calloc(1, sizeof *st);
    if (!st) {
        err->status = PW_ERR_NOMEM;
        return NULL;
    }
    rs->lang_state = st;
    return pr__boot_instantiate(rs, python_resolve, layout_ok(rs->opt), &PYTHON_PERSIST,
                                &st->from_snapshot, err);
}

static pw_status python_start(pr_run_state *rs, pw_error *err) {
    python_state *st = rs->lang_state;
    if (!st) {
        err->status = PW_ERR_NOMEM;
        return PW_ERR_NOMEM;
    }
    if (!layout_ok(rs->opt))
        return host_fail(rs, err,
                         "python: the standard library is not mapped read-only at %s (the "
                         "run's only host directory)",
                         PR_PYTHON_STDLIB_GUEST);
    static const char *const NEED[] = {"_initialize", "peri_py_init", "peri_py_alloc",
                                       "peri_py_run"};
    for (size_t i = 0; i < sizeof NEED / sizeof *NEED; i++)
        if (!export_fn(rs->inst, NEED[i]))
            return host_fail(rs, err, "python: the module has no export %s", NEED[i]);
    pw_status s;
    if (!st->from_snapshot) {
        pr__watch_grant(&rs->host->wd, rs->watch, INIT_GRACE);
        s = pw_call(rs->store, export_fn(rs->inst, "_initialize"), NULL, 0, NULL, 0, err);
        if (s != PW_OK) return s;
        pw_val r;
        s = pw_call(rs->store, export_fn(rs->inst, "peri_py_init"), NULL, 0, &r, 1, err);
        if (s != PW_OK) return s;
        if (r.i32 != 0)
            return host_fail(rs, err, "python: the interpreter did not start (%s)",
                             "is the standard library complete?");
        pr__boot_done(rs, pr__wasi_only_initial_fds(rs), &PYTHON_PERSIST);
    }
    const pr_str src = rs->opt->source;
    size_t n = src.ptr ? src.len : 0;
    if (n > UINT32_MAX / 2) return host_fail(rs, err, "python: the script is too large%s", "");
    pw_val a = {.i32 = (int32_t)n}, r;
    s = pw_call(rs->store, export_fn(rs->inst, "peri_py_alloc"), &a, 1, &r, 1, err);
    if (s != PW_OK) return s;
    pw_extern ex;
    uint64_t size = 0;
    uint8_t *base = NULL;
    if (pw_instance_export(rs->inst, "memory", 6, &ex) && ex.kind == PW_EXTERN_MEMORY)
        base = pw_memory_data(ex.u.memory, &size);
    uint32_t at = (uint32_t)r.i32;
    if (!base || at == 0 || (uint64_t)at + n > size)
        return host_fail(rs, err, "python: no guest memory for the script%s", "");
    if (n) memcpy(base + at, src.ptr, n);
    pw_val args[2] = {{.i32 = (int32_t)at}, {.i32 = (int32_t)n}};
    s = pw_call(rs->store, export_fn(rs->inst, "peri_py_run"), args, 2, NULL, 0, err);
    if (s != PW_OK) return s;
    /* peri_py_run always leaves through proc_exit; returning means it could not. */
    return host_fail(rs, err, "python: the script driver returned without exiting%s", "");
}

static void python_finish(pr_run_state *rs) {
    free(rs->lang_state);
    rs->lang_state = NULL;
    pr__wasi_finish(rs);
}

const pr_abi pr__abi_python = {.name = "python",
                               .matches = python_matches,
                               .resolve = python_resolve,
                               .instantiate = python_instantiate,
                               .start = python_start,
                               .finish = python_finish};
