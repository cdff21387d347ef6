/*
 * tier.c — the `auto` execution tier (pw_store_config.engine = PW_ENGINE_AUTO, the
 * default; docs/jit.md, "Choosing the tier").
 *
 * The JIT translates a whole module at once (jit/jit.c), some 30,000-60,000 internal
 * code words per millisecond. A small module (at most PW_TIER_SMALL_WORDS words: a
 * millisecond or two, once per compiled module) is translated at its first call, as
 * under `jit`: the store turns at once. For a big module translation costs about as
 * much as a short run (Ruby's 30 MB build printing one line) and, done in the middle
 * of a run, it would count against that run's CPU limit. So for a big module `auto`:
 *
 *  1. starts every store on the interpreter and counts the calls the interpreter makes
 *     to Wasm functions, per compiled module: each store counts in a plain field and
 *     adds its count to the module (one atomic add) when an entry from the host
 *     returns, so the short runs of a module the room's cache shares add up;
 *  2. once a module's count reaches its size in internal code words divided by
 *     PW_TIER_WORDS_PER_CALL (translation cost and threshold both grow with the size,
 *     a ski-rental rule), starts its translation on a background thread, once per
 *     module, and goes on interpreting: the translation is never on the running
 *     thread's CPU clock (the room's CPU limit);
 *  3. turns a store to the JIT (s->jit_on) at the first call, or entry from the host,
 *     that finds the whole module translated; from then on it runs as under `jit`.
 *
 * A module with an on-disk code cache (pw_module_set_code_cache) skips the count: a
 * store turns at its first entry, to the saved translation when there is one, else
 * to lazy translation (s->jit_lazy: each function translated at its first call, on
 * the running thread; what ran is saved when the module is freed, jit.c), so a big
 * module pays only for the functions that run.
 *
 * When to translate is deterministic (a call count); when the machine code is first
 * used depends on the background thread. Results, traps and limits are the same in
 * every tier, so only the timing can differ.
 *
 * Ownership and invariants: the job (thread, a stand-in store and instance naming the
 * module) belongs to the compiled module; pw__tier_free, called first by
 * pw__compile_free, joins the thread, so the module outlives its translation.
 * s->jit_auto and s->jit_on are never both true; a store that turned stays on the JIT.
 * Functions running in the interpreter when a store turns finish there (no on-stack
 * replacement); their later calls take the JIT.
 */
#include "wasm/jit/jit.h"
#include "wasm/runtime.h"

#include <pthread.h>
#include <stdlib.h>

/* PW_TIER_SMALL_WORDS, PW_TIER_WORDS_PER_CALL (runtime.h): Ruby's build has 11.2 M
 * words (threshold 5.6 M calls); its first run (startup and `puts 1`) makes 3-5 M
 * calls, about 1 s of interpretation, and translating it costs about as much
 * (BENCHMARKS.md). The six benchmark programs, hello.wasm and the room's probe.wasm
 * have 2,500-30,000 words and are translated at their first call. */
#define PW_TIER_NATIVE_STACK (512u << 10)

enum { TIER_IDLE = 0, TIER_STARTED = 1, TIER_NEVER = 2 };

struct pw_tierjob {
    pthread_t thread;
    pw_store store;   /* stand-in: jit_on, nothing else is read */
    pw_instance inst; /* stand-in: mod, mem0 */
    pw_memory mem0;   /* stand-in: guarded (which variant to translate, jit.c) */
    pw_func fn;       /* stand-in: inst, code (the first function) */
};

static void *translate_main(void *arg) {
    struct pw_tierjob *j = arg;
    pw__jit_prepare(&j->store, &j->fn); /* the whole module (jit.c, compile_module) */
    return NULL;
}

/* Whether the whole module of f is translated: the JIT publishes the functions'
 * entries in order after the mapping, so the last one is published last. */
static bool translated(const pw_func *f) {
    const struct pw_cmodule *cm = f->inst->mod->code;
    if (!cm->nfuncs) return false;
    pw_func last = {.inst = f->inst, .code = &cm->funcs[cm->nfuncs - 1]};
    return pw__jit_state(&last) != 0;
}

static void turn(pw_store *s) {
    s->jit_auto = false;
    s->jit_on = true;
}

static void start(struct pw_cmodule *cm, const pw_func *f) {
    int idle = TIER_IDLE;
    if (!atomic_compare_exchange_strong(&cm->tier_state, &idle, TIER_STARTED)) return;
    struct pw_tierjob *j = calloc(1, sizeof *j);
    if (j) {
        j->store.jit_on = true;
        j->inst.mod = f->inst->mod;
        j->mem0.guarded = f->inst->mem0 && f->inst->mem0->guarded;
        j->inst.mem0 = &j->mem0;
        j->fn.inst = &j->inst;
        j->fn.code = &cm->funcs[0];
        cm->tier_job = j; /* read only by pw__tier_free, after every store is gone */
        if (pthread_create(&j->thread, NULL, translate_main, j) == 0) return;
        cm->tier_job = NULL;
        free(j);
    }
    /* No thread (out of memory or threads): the module stays on the interpreter. */
    atomic_store(&cm->tier_state, TIER_NEVER);
}

void pw__tier_enter(pw_store *s, const pw_func *f) {
    /* The native stack bound pw__exec sets for the JIT, set here too: the store may
     * turn in the middle of this entry, deeper in the interpreter. */
    if (s->host_depth <= 1) {
        size_t budget = s->cfg.jit_native_stack ? s->cfg.jit_native_stack : PW_TIER_NATIVE_STACK;
        s->jit_stack_limit = (char *)__builtin_frame_address(0) - budget;
    }
    if (!f->inst) return;
    if (f->inst->mod->code->ncode <= PW_TIER_SMALL_WORDS || translated(f)) {
        turn(s);
        return;
    }
    /* A module with a code cache (codecache.c): a saved translation is mapped at the
     * first call, so the store turns at once (functions the translation does not
     * hold are translated at their first call); without one, the store turns at once
     * to lazy translation (jit.c: each function at its first call, on this thread),
     * and what ran is saved for the next process when the module is freed. */
    int cached = pw__jit_cached(s, f);
    if (cached == 1) {
        turn(s);
    } else if (cached == 0) {
        s->jit_lazy = true;
        turn(s);
    }
}

bool pw__tier_hot(pw_store *s, pw_func *f) {
    if (!s->jit_auto || !f->inst) return s->jit_on;
    struct pw_cmodule *cm = f->inst->mod->code;
    if (cm->ncode <= PW_TIER_SMALL_WORDS) {
        turn(s);
        return true;
    }
    int state = atomic_load_explicit(&cm->tier_state, memory_order_relaxed);
    if (state == TIER_STARTED && translated(f)) {
        turn(s);
        return true;
    }
    if (state != TIER_IDLE) return false;
    uint64_t need = cm->ncode / PW_TIER_WORDS_PER_CALL;
    uint64_t n = ++s->jit_auto_calls;
    if (n >= need || n + atomic_load_explicit(&cm->tier_calls, memory_order_relaxed) >= need)
        start(cm, f);
    return false;
}

void pw__tier_leave(pw_store *s, const pw_func *f) {
    if (!f->inst || !s->jit_auto_calls) return;
    struct pw_cmodule *cm = f->inst->mod->code;
    atomic_fetch_add_explicit(&cm->tier_calls, s->jit_auto_calls, memory_order_relaxed);
    s->jit_auto_calls = 0;
}

void pw__tier_free(struct pw_cmodule *cm) {
    struct pw_tierjob *j = cm->tier_job;
    if (!j) return;
    pthread_join(j->thread, NULL);
    free(j);
    cm->tier_job = NULL;
}
