/*
 * tier.c — the `auto` execution tier (pw_store_config.engine = PW_ENGINE_AUTO, the
 * default; docs/jit.md, "Choosing the tier").
 *
 * The JIT translates a whole module at once (jit/jit.c): for a big module and a short
 * run (Ruby's 30 MB build printing one line) that costs as much as the run itself. So
 * `auto` starts every store on the interpreter and counts the calls the interpreter
 * makes to Wasm functions; when the count reaches the callee's module size in internal
 * code words divided by PW_TIER_WORDS_PER_CALL (at least PW_TIER_MIN_CALLS), the store
 * turns to the JIT: the module is translated (pw_jit_prepare) and every later call,
 * from the interpreter or the host, runs machine code where there is some. Translation
 * cost and threshold both grow with the module's size (a ski-rental rule: interpret
 * until the interpreter has done work of the order of the translation), so a small
 * module turns after a few dozen calls and a big one only when it is really used.
 *
 * The count is kept per compiled module, which the room's cache shares between runs:
 * each store counts in a plain field and adds its count to the module (one atomic add)
 * when an entry from the host returns, so many short runs of one cached module add up.
 * A module already translated turns a store to the JIT at its first entry. The rule
 * counts calls, not time: on one thread a given sequence of runs turns at the same
 * call every time (with several threads sharing a module, at about the same).
 *
 * Invariants: s->jit_auto and s->jit_on are never both true; once a store has turned
 * it stays on the JIT. Functions running in the interpreter when the store turns
 * finish there (no on-stack replacement); their later calls take the JIT.
 */
#include "wasm/jit/jit.h"
#include "wasm/runtime.h"

/* Internal code words per interpreted call before a store turns. Ruby's build has
 * 11.2 M words and its first run (startup and `puts 1`) makes 3-5 M calls, about
 * 1 s of interpretation; translating it costs about as much (docs/jit.md). */
#define PW_TIER_WORDS_PER_CALL 2u
#define PW_TIER_MIN_CALLS      64u
#define PW_TIER_NATIVE_STACK   (512u << 10)

static void turn(pw_store *s, pw_func *f) {
    s->jit_auto = false;
    s->jit_on = true;
    pw_jit_prepare(s, f);
}

void pw_tier_enter(pw_store *s, const pw_func *f) {
    /* The native stack bound pw_exec sets for the JIT, set here too: the store may
     * turn in the middle of this entry, deeper in the interpreter. */
    if (s->host_depth <= 1) {
        size_t budget = s->cfg.jit_native_stack ? s->cfg.jit_native_stack : PW_TIER_NATIVE_STACK;
        s->jit_stack_limit = (char *)__builtin_frame_address(0) - budget;
    }
    if (f->inst && pw_jit_state(f) != 0) turn(s, (pw_func *)f);
}

bool pw_tier_hot(pw_store *s, pw_func *f) {
    if (!s->jit_auto || !f->inst) return s->jit_on;
    const struct pw_cmodule *cm = f->inst->mod->code;
    uint64_t need = cm->ncode / PW_TIER_WORDS_PER_CALL;
    if (need < PW_TIER_MIN_CALLS) need = PW_TIER_MIN_CALLS;
    uint64_t n = ++s->jit_auto_calls;
    if (n < need && n + atomic_load_explicit(&cm->tier_calls, memory_order_relaxed) < need &&
        pw_jit_state(f) == 0)
        return false;
    turn(s, f);
    return true;
}

void pw_tier_leave(pw_store *s, const pw_func *f) {
    if (!f->inst || !s->jit_auto_calls) return;
    struct pw_cmodule *cm = f->inst->mod->code;
    atomic_fetch_add_explicit(&cm->tier_calls, s->jit_auto_calls, memory_order_relaxed);
    s->jit_auto_calls = 0;
}
