/*
 * test_guard.c — guard-page bounds checks (docs/jit.md, "Bounds checks").
 *
 * 1. Both bounds modes (PW_BOUNDS_GUARD, PW_BOUNDS_EXPLICIT) under both tiers run the
 *    same module: in-bounds accesses give the same values; out-of-bounds loads,
 *    stores (one straddling the end: nothing of it is written), SIMD loads, large
 *    static offsets, the highest address and accesses after memory.grow all trap
 *    with PW_TRAP_MEM_OOB and the spec's message. Guard mode really is guard mode
 *    (the memory is guarded, the functions run as JIT code) and explicit mode is not.
 * 2. A pooled memory that a previous store grew comes back with its old pages
 *    inaccessible: the next store's out-of-bounds access traps instead of reading
 *    them. A memory started from a snapshot traps right past the snapshot's size.
 * 3. A failed reservation (RLIMIT_AS in a child process) leaves the memory
 *    unguarded, with explicit checks and the same traps.
 * 4. The handler chains: in a child with its own SIGSEGV handler installed first, a
 *    fault of C code (on a page of its own, a host read past a guarded memory's size)
 *    reaches that handler, while Wasm's out-of-bounds accesses stay traps; in a
 *    child with no handler such a fault kills the process with SIGSEGV.
 * 5. Threads: two threads trap in their own stores at the same time.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "peri/wasm.h"
#include "wasm/jit/jit.h"
#include "wasm/runtime.h"

#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#if defined(__SANITIZE_ADDRESS__)
#define UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define UNDER_ASAN 1
#endif
#endif
#ifndef UNDER_ASAN
#define UNDER_ASAN 0
#endif

#define PAGE 65536u

static const char WAT[] =
    "(module (memory (export \"mem\") 1 4)\n"
    " (func (export \"load\") (param i32) (result i32) (i32.load (local.get 0)))\n"
    " (func (export \"load8\") (param i32) (result i32) (i32.load8_u (local.get 0)))\n"
    " (func (export \"load64\") (param i32) (result i64) (i64.load offset=8 (local.get 0)))\n"
    " (func (export \"loadfar\") (param i32) (result i32)\n"
    "   (i32.load offset=4294967290 (local.get 0)))\n"
    " (func (export \"loadadd\") (param i32 i32) (result i32)\n"
    "   (i32.load offset=16 (i32.add (local.get 0) (local.get 1))))\n"
    " (func (export \"store\") (param i32 i32) (i32.store (local.get 0) (local.get 1)))\n"
    " (func (export \"store16\") (param i32 i32) (i32.store16 offset=2 (local.get 0) (local.get "
    "1)))\n"
    " (func (export \"loadv\") (param i32) (result i32)\n"
    "   (i32x4.extract_lane 3 (v128.load offset=4 (local.get 0))))\n"
    " (func (export \"storev\") (param i32) (v128.store (local.get 0) (v128.const i64x2 -1 -1)))\n"
    " (func (export \"grow\") (param i32) (result i32) (memory.grow (local.get 0)))\n"
    " (func (export \"size\") (result i32) (memory.size)))\n";

static pw_module *load_wat(const char *wat, size_t len) {
    uint8_t *bin = NULL;
    size_t n = 0;
    pw_error err;
    assert_int_equal(pw_wat_to_wasm(wat, len, &bin, &n, &err), PW_OK);
    pw_module *m = pw_module_new(bin, n, NULL, &err);
    if (!m) fail_msg("module: %s", err.message);
    free(bin);
    return m;
}

static pw_module *load_module(void) {
    return load_wat(WAT, sizeof WAT - 1);
}

typedef struct run {
    pw_store *s;
    pw_instance *inst;
    pw_memory *mem;
} run;

static run start(const pw_module *m, const pw_store_config *cfg) {
    pw_error err;
    run r = {0};
    r.s = pw_store_new(cfg, &err);
    assert_non_null(r.s);
    r.inst = pw_instantiate(r.s, m, NULL, NULL, &err);
    if (!r.inst) fail_msg("instantiate: %s", err.message);
    pw_extern ex;
    assert_true(pw_instance_export(r.inst, "mem", 3, &ex));
    r.mem = ex.u.memory;
    return r;
}

static pw_func *fn(run *r, const char *name) {
    pw_extern ex;
    if (!pw_instance_export(r->inst, name, strlen(name), &ex)) fail_msg("no export %s", name);
    return ex.u.func;
}

/* Calls name(a, b) (as many arguments as it takes); the status, *out = result. */
static pw_status call(run *r, const char *name, uint32_t a, uint32_t b, uint64_t *out) {
    pw_func *f = fn(r, name);
    pw_functype ft;
    pw_func_type(f, &ft);
    pw_val args[2] = {{.i32 = (int32_t)a}, {.i32 = (int32_t)b}}, res = {0};
    pw_error err;
    pw_status st = pw_call(r->s, f, args, (uint32_t)ft.nparams, &res, (uint32_t)ft.nresults, &err);
    if (st == PW_ERR_TRAP) {
        assert_int_equal(err.trap, PW_TRAP_MEM_OOB);
        assert_string_equal(err.message, "out of bounds memory access");
    }
    if (out) *out = (uint64_t)res.i64;
    return st;
}

static void ok(run *r, const char *name, uint32_t a, uint32_t b, uint64_t want) {
    uint64_t got = 0;
    pw_status st = call(r, name, a, b, &got);
    if (strcmp(name, "load64") != 0) got = (uint32_t)got; /* an i32 result: the low half */
    if (st != PW_OK) fail_msg("%s(%u, %u): status %d", name, a, b, (int)st);
    if (got != want)
        fail_msg("%s(%u, %u) = %llu, want %llu", name, a, b, (unsigned long long)got,
                 (unsigned long long)want);
}

static void oob(run *r, const char *name, uint32_t a, uint32_t b) {
    pw_status st = call(r, name, a, b, NULL);
    if (st != PW_ERR_TRAP) fail_msg("%s(%u, %u): status %d, want a trap", name, a, b, (int)st);
}

/* The module's behaviour, the same in every mode and tier. */
static void exercise(run *r) {
    uint8_t *d = pw_memory_data(r->mem, NULL);
    ok(r, "store", 100, 0x11223344, 0);
    ok(r, "load", 100, 0, 0x11223344);
    ok(r, "load", PAGE - 4, 0, 0);
    ok(r, "load8", PAGE - 1, 0, 0);
    oob(r, "load", PAGE - 3, 0);
    oob(r, "load", PAGE, 0);
    oob(r, "load", UINT32_MAX, 0);
    oob(r, "load8", PAGE, 0);
    oob(r, "load64", PAGE - 15, 0);
    ok(r, "load64", PAGE - 16, 0, 0);
    oob(r, "loadfar", 0, 0);
    oob(r, "loadfar", UINT32_MAX, 0);
    ok(r, "loadadd", PAGE - 40, 20, 0);
    oob(r, "loadadd", PAGE - 19, 0);
    oob(r, "loadadd", UINT32_MAX, UINT32_MAX); /* wraps to 2^32 - 2, + 16 */
    /* A store straddling the end writes nothing. */
    memset(d + PAGE - 4, 0x5a, 4);
    oob(r, "store", PAGE - 2, 0);
    oob(r, "store16", PAGE - 3, 0);
    for (int i = 1; i <= 4; i++)
        assert_int_equal(d[PAGE - i], 0x5a);
    memset(d + PAGE - 16, 0, 16);
    ok(r, "loadv", PAGE - 20, 0, 0);
    oob(r, "loadv", PAGE - 19, 0);
    oob(r, "storev", PAGE - 8, 0);
    for (int i = 1; i <= 8; i++)
        assert_int_equal(d[PAGE - i], 0);
    ok(r, "storev", PAGE - 16, 0, 0);
    ok(r, "load", PAGE - 4, 0, 0xffffffffu);
    /* Growing moves the bound, never the data. */
    ok(r, "grow", 1, 0, 1);
    assert_ptr_equal(pw_memory_data(r->mem, NULL), d);
    ok(r, "load", PAGE, 0, 0);
    ok(r, "store", 2 * PAGE - 4, 7, 0);
    ok(r, "load", 2 * PAGE - 4, 0, 7);
    oob(r, "load", 2 * PAGE - 3, 0);
    ok(r, "grow", 2, 0, 2);
    ok(r, "grow", 1, 0, (uint32_t)-1); /* the maximum is 4 */
    ok(r, "load", 4 * PAGE - 4, 0, 0);
    oob(r, "load", 4 * PAGE - 3, 0);
    oob(r, "load8", 4 * PAGE, 0);
    assert_null(pw__guard_act); /* no activation once the calls returned */
}

static void test_modes_and_tiers(void **state) {
    (void)state;
    pw_module *m = load_module();
    int engines[] = {PW_ENGINE_INTERP, PW_ENGINE_JIT, PW_ENGINE_AUTO};
    for (int b = 0; b < 2; b++)
        for (int e = 0; e < 3; e++) {
            int bounds = b ? PW_BOUNDS_EXPLICIT : PW_BOUNDS_GUARD;
            pw_store_config cfg = {.engine = engines[e], .bounds_checks = bounds};
            run r = start(m, &cfg);
            assert_int_equal(r.mem->guarded, bounds == PW_BOUNDS_GUARD);
            assert_true(r.mem->mapped >= (bounds == PW_BOUNDS_GUARD ? PW_GUARD_RESERVE : 4 * PAGE));
            exercise(&r);
            if (engines[e] == PW_ENGINE_JIT) /* really machine code */
                assert_int_equal(pw__jit_state(fn(&r, "load")), 1);
            pw_store_free(r.s);
        }
    pw_module_free(m);
}

/* A guarded memory never has bytes past its size accessible, even from a pool. */
static void test_pool_and_snapshot(void **state) {
    (void)state;
    pw_module *m = load_module();
    pw_pool *pool = pw_pool_new();
    pw_store_config cfg = {.engine = PW_ENGINE_JIT, .pool = pool};
    run a = start(m, &cfg);
    ok(&a, "grow", 3, 0, 1);
    ok(&a, "store", 3 * PAGE, 0x77, 0);
    uint8_t *da = pw_memory_data(a.mem, NULL);
    pw_store_free(a.s);
    run b = start(m, &cfg);
    assert_ptr_equal(pw_memory_data(b.mem, NULL), da); /* the same mapping, reused */
    assert_true(b.mem->guarded);
    oob(&b, "load", 3 * PAGE, 0);
    oob(&b, "load", PAGE, 0);
    assert_int_equal(b.mem->rw, PAGE);
    ok(&b, "grow", 3, 0, 1);
    ok(&b, "load", 3 * PAGE, 0, 0); /* zeroed as it grew into the old bytes */

    /* From a snapshot: the snapshot's size is the bound. */
    ok(&b, "store", 2 * PAGE, 0x99, 0);
    pw_error err;
    pw_snapshot *snap = pw_snapshot_take(b.inst, &err);
    if (!snap) fail_msg("snapshot: %s", err.message);
    pw_store_free(b.s);
    for (int k = 0; k < 2; k++) {
        pw_store_config c2 = {.engine = PW_ENGINE_JIT, .pool = k ? pool : NULL};
        run c = {0};
        c.s = pw_store_new(&c2, &err);
        c.inst = pw_instantiate_snapshot(c.s, m, snap, NULL, NULL, &err);
        if (!c.inst) fail_msg("snapshot instance: %s", err.message);
        pw_extern ex;
        assert_true(pw_instance_export(c.inst, "mem", 3, &ex));
        c.mem = ex.u.memory;
        assert_true(c.mem->guarded);
        ok(&c, "load", 2 * PAGE, 0, 0x99);
        ok(&c, "size", 0, 0, 4);
        oob(&c, "load", 4 * PAGE, 0);
        pw_store_free(c.s);
    }
    pw_snapshot_free(snap);
    pw_pool_free(pool);
    pw_module_free(m);
}

/* Runs this program again as `test_guard --child NAME` (a fresh process: no signal
 * handler of the engine's yet); returns its wait status. */
static int in_child(const char *name) {
    fflush(NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        execl("/proc/self/exe", "test_guard", "--child", name, (char *)NULL);
        _exit(5);
    }
    int st = 0;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    return st;
}

static void expect_exit0(int st) {
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
        fail_msg("child: %s %d", WIFEXITED(st) ? "exit" : "signal",
                 WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
}

/* cmocka's assertions in a child end it through its own handler: turn them into an
 * exit status the parent sees. */
#define CHILD_CHECK(c)                                                                             \
    do {                                                                                           \
        if (!(c)) {                                                                                \
            fprintf(stderr, "child: %s failed (line %d)\n", #c, __LINE__);                         \
            _exit(3);                                                                              \
        }                                                                                          \
    } while (0)

static pw_status child_call(pw_store *s, pw_instance *inst, const char *name, uint32_t a,
                            uint64_t *out) {
    pw_extern ex;
    CHILD_CHECK(pw_instance_export(inst, name, strlen(name), &ex));
    pw_val arg = {.i32 = (int32_t)a}, res = {0};
    pw_error err;
    pw_status st = pw_call(s, ex.u.func, &arg, 1, &res, 1, &err);
    if (st == PW_ERR_TRAP) {
        CHILD_CHECK(err.trap == PW_TRAP_MEM_OOB);
        CHILD_CHECK(strcmp(err.message, "out of bounds memory access") == 0);
    }
    if (out) *out = (uint64_t)res.i64;
    return st;
}

/* A JIT store and an instance of the module in a child; *mem = its memory. */
static pw_instance *child_start(pw_module *m, pw_store **s, pw_memory **mem) {
    pw_error err;
    pw_store_config cfg = {.engine = PW_ENGINE_JIT};
    *s = pw_store_new(&cfg, &err);
    CHILD_CHECK(*s);
    pw_instance *inst = pw_instantiate(*s, m, NULL, NULL, &err);
    CHILD_CHECK(inst);
    pw_extern ex;
    CHILD_CHECK(pw_instance_export(inst, "mem", 3, &ex));
    *mem = ex.u.memory;
    return inst;
}

static void rlimit_body(void) {
    pw_module *m = load_module();
    /* Room for the process as it is plus 1 GiB: not for 8 GiB of reservation. */
    long pages = 0, rss = 0;
    FILE *f = fopen("/proc/self/statm", "r");
    CHILD_CHECK(f && fscanf(f, "%ld %ld", &pages, &rss) == 2);
    fclose(f);
    uint64_t lim = (uint64_t)pages * (uint64_t)sysconf(_SC_PAGESIZE) + (1ull << 30);
    struct rlimit rl = {lim, lim};
    CHILD_CHECK(setrlimit(RLIMIT_AS, &rl) == 0);
    pw_store *s;
    pw_memory *mem;
    pw_instance *inst = child_start(m, &s, &mem);
    CHILD_CHECK(!mem->guarded);
    CHILD_CHECK(mem->mapped < PW_GUARD_RESERVE);
    uint64_t v = 1;
    CHILD_CHECK(child_call(s, inst, "load", PAGE - 4, &v) == PW_OK && v == 0);
    CHILD_CHECK(child_call(s, inst, "load", PAGE - 3, NULL) == PW_ERR_TRAP);
    CHILD_CHECK(child_call(s, inst, "loadfar", 0, NULL) == PW_ERR_TRAP);
    pw_extern lf;
    CHILD_CHECK(pw_instance_export(inst, "load", 4, &lf));
    CHILD_CHECK(pw__jit_state(lf.u.func) == 1);
    pw_store_free(s);
    pw_module_free(m);
}

static void test_rlimit_falls_back(void **state) {
    (void)state;
    expect_exit0(in_child("rlimit"));
}

static sigjmp_buf chain_jmp;
static volatile sig_atomic_t chain_hits;

static void own_handler(int sig, siginfo_t *si, void *uc) {
    (void)sig, (void)si, (void)uc;
    chain_hits++;
    siglongjmp(chain_jmp, 1);
}

static void chain_body(void) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = own_handler;
    sa.sa_flags = SA_SIGINFO;
    sigemptyset(&sa.sa_mask);
    CHILD_CHECK(sigaction(SIGSEGV, &sa, NULL) == 0);
    pw_module *m = load_module();
    pw_store *s;
    pw_memory *mem;
    pw_instance *inst = child_start(m, &s, &mem);
    CHILD_CHECK(mem->guarded); /* the engine's handler is installed, after ours */
    for (int i = 0; i < 3; i++)
        CHILD_CHECK(child_call(s, inst, "load", PAGE + (uint32_t)i * 1000, NULL) == PW_ERR_TRAP);
    CHILD_CHECK(chain_hits == 0);
    /* A fault of C code, outside Wasm: passed on to our handler. */
    volatile uint8_t *none = mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CHILD_CHECK(none != MAP_FAILED);
    if (sigsetjmp(chain_jmp, 1) == 0) (void)*none;
    CHILD_CHECK(chain_hits == 1);
    /* Host code reading past a guarded memory's size (a host bug, not a trap). */
    volatile uint8_t *past = mem->data + PAGE + 8;
    if (sigsetjmp(chain_jmp, 1) == 0) (void)*past;
    CHILD_CHECK(chain_hits == 2);
    /* And Wasm traps still work after that. */
    CHILD_CHECK(child_call(s, inst, "load", PAGE, NULL) == PW_ERR_TRAP);
    CHILD_CHECK(chain_hits == 2);
    pw_store_free(s);
    pw_module_free(m);
}

static void default_body(void) {
    signal(SIGSEGV, SIG_DFL);
    pw_module *m = load_module();
    pw_store *s;
    pw_memory *mem;
    pw_instance *inst = child_start(m, &s, &mem);
    CHILD_CHECK(child_call(s, inst, "load", PAGE, NULL) == PW_ERR_TRAP);
    volatile uint8_t *past = mem->data + PAGE + 8;
    (void)*past; /* must kill the process */
    _exit(4);
}

static void test_handler_chains(void **state) {
    (void)state;
    expect_exit0(in_child("chain"));
    int st = in_child("default");
    if (UNDER_ASAN) /* ASan's handler was there first: it reports and exits */
        assert_false(WIFEXITED(st) && (WEXITSTATUS(st) == 0 || WEXITSTATUS(st) == 4));
    else if (!WIFSIGNALED(st) || WTERMSIG(st) != SIGSEGV)
        fail_msg("child: want death by SIGSEGV, got wait status %#x", st);
}

static void *trap_loop(void *arg) {
    const pw_module *m = arg;
    pw_store_config cfg = {.engine = PW_ENGINE_JIT};
    pw_error err;
    pw_store *s = pw_store_new(&cfg, &err);
    pw_instance *inst = pw_instantiate(s, m, NULL, NULL, &err);
    uintptr_t bad = 0;
    pw_extern mem;
    if (!inst || !pw_instance_export(inst, "mem", 3, &mem) || !mem.u.memory->guarded) bad = 1;
    for (uint32_t i = 0; i < 2000 && inst; i++) {
        pw_extern ex;
        pw_instance_export(inst, i % 2 ? "load" : "loadv", i % 2 ? 4 : 5, &ex);
        pw_val arg = {.i32 = (int32_t)(PAGE + i)}, res;
        if (pw_call(s, ex.u.func, &arg, 1, &res, 1, &err) != PW_ERR_TRAP ||
            err.trap != PW_TRAP_MEM_OOB)
            bad++;
        arg.i32 = 8;
        if (pw_call(s, ex.u.func, &arg, 1, &res, 1, &err) != PW_OK) bad++;
    }
    if (!inst) bad = 1;
    pw_store_free(s);
    return (void *)bad;
}

static void test_threads(void **state) {
    (void)state;
    pw_module *m = load_module();
    pthread_t t[2];
    for (int i = 0; i < 2; i++)
        assert_int_equal(pthread_create(&t[i], NULL, trap_loop, m), 0);
    for (int i = 0; i < 2; i++) {
        void *bad;
        pthread_join(t[i], &bad);
        assert_int_equal((uintptr_t)bad, 0);
    }
    pw_module_free(m);
}

/* Ten hot integer locals in an inner loop: in the guard variant r13 (the memory size
 * in the explicit variant) is an eighth pin register and holds one of them, so
 * memory.size must read the size from the memory, and a helper call (memory.grow) and
 * a direct call must store and reload it. Both bounds modes under the JIT agree with
 * the interpreter. */
static const char R13_WAT[] =
    "(module (memory (export \"mem\") 1 8)\n"
    " (func $mix (param i32) (result i32) (i32.xor (local.get 0) (i32.const 0x5a5a)))\n"
    " (func (export \"many\") (param $n i32) (result i32)\n"
    "  (local $a i32) (local $b i32) (local $c i32) (local $d i32) (local $e i32)\n"
    "  (local $f i32) (local $g i32) (local $h i32) (local $i i32) (local $j i32)\n"
    "  (i32.store (i32.const 64) (i32.const 0x01020304))\n"
    "  (loop $outer\n"
    "   (local.set $j (i32.const 0))\n"
    "   (loop $l\n"
    "    (local.set $a (i32.add (local.get $a) (i32.const 3)))\n"
    "    (local.set $b (i32.xor (local.get $b) (local.get $a)))\n"
    "    (local.set $c (i32.add (local.get $c) (i32.mul (local.get $b) (i32.const 5))))\n"
    "    (local.set $d (i32.sub (local.get $d) (local.get $c)))\n"
    "    (local.set $e (i32.add (local.get $e)\n"
    "     (i32.load (i32.and (local.get $d) (i32.const 0xffc)))))\n"
    "    (local.set $f (i32.add (local.get $f) (memory.size)))\n"
    "    (local.set $g (i32.rotl (i32.add (local.get $g) (local.get $e)) (i32.const 7)))\n"
    "    (local.set $h (i32.add (local.get $h) (i32.xor (local.get $g) (local.get $f))))\n"
    "    (i32.store (i32.and (local.get $h) (i32.const 0xffc)) (local.get $f))\n"
    "    (br_if $l (i32.lt_u (local.tee $j (i32.add (local.get $j) (i32.const 1)))\n"
    "     (i32.const 6))))\n"
    "   (local.set $h (i32.add (local.get $h) (call $mix (local.get $g))))\n"
    "   (if (i32.eqz (i32.and (local.get $i) (i32.const 7)))\n"
    "    (then (local.set $f (i32.add (local.get $f) (memory.grow (i32.const 1))))))\n"
    "   (br_if $outer (i32.lt_u (local.tee $i (i32.add (local.get $i) (i32.const 1)))\n"
    "    (local.get $n))))\n"
    "  (i32.add (i32.add (i32.add (local.get $a) (local.get $b)) (i32.add (local.get $c)\n"
    "   (local.get $d))) (i32.add (i32.add (local.get $e) (local.get $f))\n"
    "   (i32.add (local.get $g) (i32.add (local.get $h) (memory.size)))))))\n";

static void test_r13_pin(void **state) {
    (void)state;
    pw_module *m = load_wat(R13_WAT, sizeof R13_WAT - 1);
    static const uint32_t args[] = {1, 9, 40, 1000};
    static const struct {
        int engine, bounds;
    } tiers[] = {{PW_ENGINE_INTERP, PW_BOUNDS_EXPLICIT},
                 {PW_ENGINE_JIT, PW_BOUNDS_GUARD},
                 {PW_ENGINE_JIT, PW_BOUNDS_EXPLICIT}};
    uint64_t want[4] = {0};
    for (size_t t = 0; t < 3; t++) {
        pw_store_config cfg = {.engine = tiers[t].engine, .bounds_checks = tiers[t].bounds};
        for (size_t k = 0; k < 4; k++) {
            run r = start(m, &cfg); /* a fresh memory each time: its growth is in the result */
            assert_int_equal(r.mem->guarded, tiers[t].bounds == PW_BOUNDS_GUARD);
            uint64_t got = 0;
            assert_int_equal(call(&r, "many", args[k], 0, &got), PW_OK);
            if (tiers[t].engine == PW_ENGINE_JIT)
                assert_int_equal(pw__jit_state(fn(&r, "many")), 1);
            if (t == 0)
                want[k] = (uint32_t)got;
            else if ((uint32_t)got != want[k])
                fail_msg("tier %zu many(%u) = %u, the interpreter's %u", t, args[k], (uint32_t)got,
                         (uint32_t)want[k]);
            pw_store_free(r.s);
        }
    }
    pw_module_free(m);
}

/* Each test runs in a fresh process (in_child): cmocka installs its own SIGSEGV
 * handler for every test and puts the previous one back afterwards, which removes
 * the engine's handler installed during an earlier test (the engine then rightly
 * falls back to explicit checks; guard.c). In a fresh process the engine installs
 * its handler during the one test, on top of cmocka's. */
static const struct CMUnitTest cases[] = {
    cmocka_unit_test(test_modes_and_tiers),
    cmocka_unit_test(test_pool_and_snapshot),
    cmocka_unit_test(test_threads),
    cmocka_unit_test(test_r13_pin),
};

static void test_each_alone(void **state) {
    (void)state;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        printf("[ CHILD    ] %s\n", cases[i].name);
        expect_exit0(in_child(cases[i].name));
    }
}

int main(int argc, char **argv) {
    if (argc == 3 && strcmp(argv[1], "--child") == 0) {
        alarm(120); /* a handler that loops on a fault ends as SIGALRM, not a hang */
        if (strcmp(argv[2], "rlimit") == 0) rlimit_body();
        if (strcmp(argv[2], "chain") == 0) chain_body();
        if (strcmp(argv[2], "default") == 0) default_body();
        for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
            if (strcmp(argv[2], cases[i].name) == 0)
                return _cmocka_run_group_tests(cases[i].name, &cases[i], 1, NULL, NULL);
        return 0;
    }
    if (!PW_JIT_AVAILABLE) {
        fprintf(stderr, "test_guard: no JIT on this host\n");
        return 77;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_each_alone),
        cmocka_unit_test(test_rlimit_falls_back),
        cmocka_unit_test(test_handler_chains),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
