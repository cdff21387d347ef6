/*
 * guard_keep.h — test helper shared by the cmocka tests that compare a guard-page
 * tier (test_jit, test_lazy): keeps the engine's SIGSEGV/SIGBUS handler working
 * across cmocka's tests.
 *
 * cmocka puts its own SIGSEGV handler in place for every test and the previous one
 * back afterwards with signal(), which drops the engine's SA_SIGINFO handler; the
 * engine then (rightly) runs with explicit checks. guard_keep() (in main, before
 * cmocka runs) installs the engine's handler and keeps a copy; guard_restore() puts it
 * back before a store configured for guard pages is made; guard_check() then asserts
 * that the instance's memory 0 really is guarded (a (memory 0 0) maps nothing and a
 * 64-bit memory is never guarded).
 */
#ifndef PERI_TEST_GUARD_KEEP_H
#define PERI_TEST_GUARD_KEEP_H

#include <signal.h>
#include <stdbool.h>

#include "peri/wasm.h"
#include "wasm/jit/jit.h"
#include "wasm/runtime.h"

static struct sigaction guard_segv, guard_bus;
static bool guard_kept;

static inline void guard_keep(void) {
    guard_kept = PW_JIT_AVAILABLE && pw__guard_ready() &&
                 sigaction(SIGSEGV, NULL, &guard_segv) == 0 &&
                 sigaction(SIGBUS, NULL, &guard_bus) == 0;
}

static inline void guard_restore(int bounds) {
    if (bounds != PW_BOUNDS_GUARD || !guard_kept) return;
    sigaction(SIGSEGV, &guard_segv, NULL);
    sigaction(SIGBUS, &guard_bus, NULL);
}

static inline void guard_check(int bounds, const pw_instance *inst) {
    const pw_memory *m = inst->mem0;
    if (bounds == PW_BOUNDS_GUARD && guard_kept && m && m->reserved && !m->is64)
        assert_true(m->guarded);
}

#endif
