/*
 * fuzz_diff.c — libFuzzer target, differential mode of the engine: every
 * input that decodes and validates as a module is instantiated and its exported
 * functions called (arguments derived from the input) under the interpreter and then
 * under the baseline JIT in each of its code-generation modes (pw_store_config): guard
 * pages and explicit bounds checks (bounds_checks), each with SIMD translated for this
 * CPU's extensions and with plain SSE2 only (jit_sse2). Every run has a fresh store
 * and a fresh module (a module's translation keeps the SSE2 choice of the store that
 * made it), plus lazy translation (PW_ENGINE_LAZY: each function translated at its
 * first call, in the middle of the calls) with both bounds-check kinds. The instantiation status
 * and, per call, the status, trap code and result bits of every JIT mode must be the interpreter's;
 * any difference is printed (mode, call) and aborts (a finding). Numeric and v128 (SIMD: two cells)
 * parameters and results are covered. tests/wasm/fuzz_diff_replay.c runs this same function over
 * fixed seeds and mutants in the ordinary build (CTest wasm.fuzz_diff).
 *
 * Start from valid modules: `make fuzz` builds it; run it with the spec testsuite's
 * binaries as the seed corpus, e.g.
 *   build-fuzz/fuzz-wasm-diff -max_total_time=600 CORPUS_DIR ../shared/spectest/core/NAME ...
 * Endless loops: a watchdog thread raises the store's interrupt flag after 200 ms of
 * one call; once a run was interrupted in either tier the rest of that module is not
 * compared (where a timer fires is not deterministic).
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "peri/wasm.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_CALLS 16
#define MAX_VALS  8  /* values of a signature */
#define MAX_CELLS 16 /* their cells: a v128 takes two */

/* The watchdog (harness state, not library state). */
static pthread_mutex_t wd_mu = PTHREAD_MUTEX_INITIALIZER;
static pw_store *wd_store;
static struct timespec wd_deadline;
static pthread_once_t wd_once = PTHREAD_ONCE_INIT;

static void *wd_main(void *arg) {
    (void)arg;
    for (;;) {
        struct timespec d = {0, 20 * 1000 * 1000}, now;
        nanosleep(&d, NULL);
        clock_gettime(CLOCK_MONOTONIC, &now);
        pthread_mutex_lock(&wd_mu);
        if (wd_store && (now.tv_sec > wd_deadline.tv_sec ||
                         (now.tv_sec == wd_deadline.tv_sec && now.tv_nsec > wd_deadline.tv_nsec)))
            pw_store_interrupt(wd_store);
        pthread_mutex_unlock(&wd_mu);
    }
    return NULL;
}

static void wd_start(void) {
    pthread_t t;
    if (pthread_create(&t, NULL, wd_main, NULL) == 0) pthread_detach(t);
}

static void wd_arm(pw_store *s) {
    pthread_mutex_lock(&wd_mu);
    wd_store = s;
    clock_gettime(CLOCK_MONOTONIC, &wd_deadline);
    wd_deadline.tv_nsec += 200 * 1000 * 1000;
    if (wd_deadline.tv_nsec >= 1000000000) {
        wd_deadline.tv_sec++;
        wd_deadline.tv_nsec -= 1000000000;
    }
    pthread_mutex_unlock(&wd_mu);
}

static void wd_disarm(void) {
    pthread_mutex_lock(&wd_mu);
    wd_store = NULL;
    pthread_mutex_unlock(&wd_mu);
}

typedef struct outcome {
    int inst_status;
    uint32_t ncalls;
    int status[MAX_CALLS], trap[MAX_CALLS];
    uint64_t res[MAX_CALLS][MAX_CELLS];
    bool interrupted;
} outcome;

static bool numeric(pw_valtype t) {
    pw_valkind k = PW_VT_KIND(t);
    return k == PW_K_I32 || k == PW_K_I64 || k == PW_K_F32 || k == PW_K_F64 || k == PW_K_V128;
}

/* One way of running the module: the tier and the JIT's code generation. */
typedef struct mode {
    const char *name;
    int engine, bounds;
    bool sse2;
} mode;

static const mode MODES[] = {
    {"interp", PW_ENGINE_INTERP, PW_BOUNDS_EXPLICIT, false}, /* the reference */
    {"jit guard", PW_ENGINE_JIT, PW_BOUNDS_GUARD, false},
    {"jit explicit", PW_ENGINE_JIT, PW_BOUNDS_EXPLICIT, false},
    {"jit guard sse2", PW_ENGINE_JIT, PW_BOUNDS_GUARD, true},
    {"jit explicit sse2", PW_ENGINE_JIT, PW_BOUNDS_EXPLICIT, true},
    {"lazy guard", PW_ENGINE_LAZY, PW_BOUNDS_GUARD, false},
    {"lazy explicit", PW_ENGINE_LAZY, PW_BOUNDS_EXPLICIT, false},
};
#define NMODES (sizeof MODES / sizeof *MODES)

static void run(const pw_module *m, const mode *md, const uint8_t *data, size_t size, outcome *o) {
    memset(o, 0, sizeof *o);
    pw_store_config cfg = {.engine = md->engine,
                           .jit_sse2 = md->sse2,
                           .bounds_checks = md->bounds,
                           .memory_cap = 64u << 20,
                           .max_call_depth = 20000,
                           .value_stack_bytes = 8u << 20};
    pw_error err;
    pw_store *s = pw_store_new(&cfg, &err);
    if (!s) abort();
    wd_arm(s);
    pw_instance *inst = pw_instantiate(s, m, NULL, NULL, &err);
    wd_disarm();
    o->inst_status = inst ? PW_OK : (int)err.status;
    if (!inst) {
        o->interrupted = err.status == PW_ERR_TRAP && err.trap == PW_TRAP_INTERRUPTED;
        pw_store_free(s);
        return;
    }
    uint32_t nex = pw_module_export_count(m);
    uint64_t seed = size;
    for (size_t i = 0; i < size && i < 64; i++)
        seed = seed * 31 + data[i];
    for (uint32_t e = 0; e < nex && o->ncalls < MAX_CALLS; e++) {
        pw_export_desc d;
        pw_module_export(m, e, &d);
        if (d.kind != PW_EXTERN_FUNC) continue;
        pw_functype ft;
        if (!pw_module_export_functype(m, d.name, d.name_len, &ft)) continue;
        if (ft.nparams > MAX_VALS || ft.nresults > MAX_VALS) continue;
        bool ok = true;
        for (uint32_t k = 0; k < ft.nparams; k++)
            ok = ok && numeric(ft.params[k]);
        for (uint32_t k = 0; k < ft.nresults; k++)
            ok = ok && numeric(ft.results[k]);
        if (!ok) continue;
        pw_extern ex;
        if (!pw_instance_export(inst, d.name, d.name_len, &ex)) abort();
        pw_val args[MAX_CELLS], res[MAX_CELLS];
        uint32_t na = 0, nr = 0;
        memset(res, 0, sizeof res);
        for (uint32_t k = 0; k < ft.nparams; k++) {
            for (int h = 0; h < (ft.params[k] == PW_VT_V128 ? 2 : 1); h++) {
                seed = seed * 6364136223846793005ull + 1442695040888963407ull;
                uint64_t v = seed >> 11;
                /* small values most of the time: loop counts, addresses */
                args[na++].bits = (seed & 3) ? (v & 0xff) : v;
            }
        }
        for (uint32_t k = 0; k < ft.nresults; k++)
            nr += ft.results[k] == PW_VT_V128 ? 2 : 1;
        uint32_t c = o->ncalls++;
        wd_arm(s);
        pw_status st = pw_call(s, ex.u.func, args, na, res, nr, &err);
        wd_disarm();
        o->status[c] = st;
        o->trap[c] = st == PW_ERR_TRAP ? (int)err.trap : 0;
        if (st == PW_ERR_TRAP && err.trap == PW_TRAP_INTERRUPTED) {
            o->interrupted = true;
            break;
        }
        if (st == PW_OK) {
            for (uint32_t k = 0, j = 0; k < ft.nresults; k++) {
                pw_valkind kind = PW_VT_KIND(ft.results[k]);
                uint64_t b = res[j++].bits;
                if (kind == PW_K_I32 || kind == PW_K_F32) b &= 0xffffffffu;
                o->res[c][j - 1] = b;
                if (kind == PW_K_V128) o->res[c][j] = res[j].bits, j++;
            }
        }
    }
    pw_store_free(s);
}

/* A difference from the interpreter: what differs, then abort (a finding). */
static void finding(const mode *md, const outcome *a, const outcome *b, int call) {
    if (call < 0)
        fprintf(stderr,
                "fuzz_diff: %s differs from interp: instantiation %d vs %d, %u vs %u calls\n",
                md->name, b->inst_status, a->inst_status, b->ncalls, a->ncalls);
    else
        fprintf(stderr,
                "fuzz_diff: %s differs from interp at call %d: status %d trap %d, interp "
                "status %d trap %d; first result cells %#llx vs %#llx\n",
                md->name, call, b->status[call], b->trap[call], a->status[call], a->trap[call],
                (unsigned long long)b->res[call][0], (unsigned long long)a->res[call][0]);
    abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    pthread_once(&wd_once, wd_start);
    pw_error err;
    outcome out[NMODES];
    for (size_t k = 0; k < NMODES; k++) {
        /* a fresh module per mode: its translation is this mode's alone */
        pw_module *m = pw_module_new(data, size, NULL, &err);
        if (!m) return 0;
        run(m, &MODES[k], data, size, &out[k]);
        pw_module_free(m);
        if (out[k].interrupted) return 0; /* where a timer fires is not deterministic */
    }
    const outcome *a = &out[0];
    for (size_t k = 1; k < NMODES; k++) {
        const outcome *b = &out[k];
        if (a->inst_status != b->inst_status || a->ncalls != b->ncalls)
            finding(&MODES[k], a, b, -1);
        for (uint32_t c = 0; c < a->ncalls; c++)
            if (a->status[c] != b->status[c] || a->trap[c] != b->trap[c] ||
                memcmp(a->res[c], b->res[c], sizeof a->res[c]) != 0)
                finding(&MODES[k], a, b, (int)c);
    }
    return 0;
}
