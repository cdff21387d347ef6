/*
 * guard.c — guard-page bounds checks: the process's SIGSEGV/SIGBUS handler that
 * turns a fault of JIT code on a guarded linear memory into the engine's ordinary
 * out-of-bounds trap (design: docs/jit.md, "Bounds checks").
 *
 * A guarded memory (memory.c) is a 32-bit memory whose mapping covers every address
 * an access can form (PW_GUARD_RESERVE: a 32-bit address plus a 32-bit offset plus
 * the access width), with only [0, size) read/write. The JIT's guard variant
 * (jit.c) accesses such a memory 0 without a bounds check, so an out-of-bounds
 * access touches PROT_NONE pages and the kernel raises SIGSEGV. The handler
 * recognises the fault when all of these hold:
 *   - the thread is running Wasm: pw__guard_act, the instance whose JIT code runs on
 *     top of this thread (set and restored by jit.c around every entry into JIT
 *     code), is not NULL;
 *   - the signal comes from the kernel (si_code > 0), not from kill()/raise();
 *   - the faulting address lies in that instance's guarded memory 0 mapping (or its
 *     store's poll page, below) and the faulting instruction in its module's
 *     guard-variant code (pw__jit_fault_stub).
 * It then resumes the thread at the module's fault stub, which does what every
 * trap site's stub does (store PW_TRAP_MEM_OOB in the store, return PW_ERR_TRAP
 * from the function), so the trap unwinds to the entry exactly like an explicit
 * check's: same status, same code, same message. A fault on the poll page of that
 * instance's store (runtime.h, PW_STORE_POLL_OFF: unreadable while the store is
 * interrupted) from the same code is a loop head's interrupt poll: the thread
 * resumes at the interrupt stub beside the fault stub (PW_TRAP_INTERRUPTED). Any
 * other fault is passed to the handler that was installed before ours (ASan's, the
 * host program's); with none (SIG_DFL) the default action is restored and the
 * signal raised again, so the process dies of it as it would without the engine.
 *
 * Global and thread-local state, an exception to the rule that the library keeps
 * everything in caller-owned contexts: signal dispositions are process-wide and a
 * signal handler receives no context pointer, so
 *   - the previous dispositions (prev_segv, prev_bus) and whether installing worked
 *     are written once per process under pthread_once and only read afterwards;
 *   - pw__guard_act is per thread (each thread runs its own activation), written only
 *     by that thread, read by the handler on that thread.
 * The handler runs on the alternate signal stack when the thread has one
 * (SA_ONSTACK); it needs none of its own, because JIT code never overflows the
 * native stack (the JIT's native stack budget, jit.c) and a fault that is not ours
 * is passed on unchanged. A host that installs its own SIGSEGV handler after the
 * engine must chain to the previous one; memory.c checks at every memory it guards
 * that the handler is still in place and uses explicit checks otherwise.
 */
#include "wasm/jit/jit.h"

#if PW_JIT_AVAILABLE

#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <ucontext.h>

_Thread_local pw_instance *pw__guard_act __attribute__((tls_model("initial-exec")));

static pthread_once_t once = PTHREAD_ONCE_INIT;
static struct sigaction prev_segv, prev_bus;
static bool installed;

/* Passes the signal on as the handler before ours would have received it. */
static void chain(int sig, siginfo_t *si, void *uc) {
    const struct sigaction *p = sig == SIGBUS ? &prev_bus : &prev_segv;
    if (p->sa_flags & SA_SIGINFO) {
        p->sa_sigaction(sig, si, uc);
        return;
    }
    if (p->sa_handler == SIG_IGN && si->si_code <= 0) return; /* a sent signal, ignored */
    if (p->sa_handler != SIG_DFL && p->sa_handler != SIG_IGN) {
        p->sa_handler(sig);
        return;
    }
    /* No handler (or an ignored fault, which the kernel would not ignore either): the
     * default action, once this handler returns (the signal is blocked until then;
     * a fault would also recur at the same instruction). */
    struct sigaction dfl;
    memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    sigemptyset(&dfl.sa_mask);
    sigaction(sig, &dfl, NULL);
    raise(sig);
}

static void handler(int sig, siginfo_t *si, void *ucv) {
    ucontext_t *uc = ucv;
    pw_instance *inst = pw__guard_act;
    if (inst && si->si_code > 0) {
        uintptr_t pc = (uintptr_t)uc->uc_mcontext.gregs[REG_RIP];
        const void *stub = pw__jit_fault_stub(inst, pc, (uintptr_t)si->si_addr);
        if (stub) {
            uc->uc_mcontext.gregs[REG_RIP] = (greg_t)(uintptr_t)stub;
            return;
        }
    }
    chain(sig, si, ucv);
}

static bool ours(int sig) {
    struct sigaction cur;
    if (sigaction(sig, NULL, &cur) != 0) return false;
    return (cur.sa_flags & SA_SIGINFO) && cur.sa_sigaction == handler;
}

static void install(void) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = handler;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
    sigemptyset(&sa.sa_mask);
    if (sigaction(SIGSEGV, &sa, &prev_segv) != 0) return;
    if (sigaction(SIGBUS, &sa, &prev_bus) != 0) {
        sigaction(SIGSEGV, &prev_segv, NULL);
        return;
    }
    installed = true;
}

bool pw__guard_ready(void) {
    if (pthread_once(&once, install) != 0 || !installed) return false;
    /* Still ours: a sanitizer may refuse user handlers, a host may replace it. One
     * query: an access to PROT_NONE raises SIGSEGV (SIGBUS would need a file mapping
     * shorter than the memory, which the engine never makes). */
    return ours(SIGSEGV);
}

#else

bool pw__guard_ready(void) {
    return false;
}

#endif
