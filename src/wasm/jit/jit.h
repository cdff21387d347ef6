/*
 * jit.h — the baseline JIT tier (internal to src/wasm/; design in docs/jit.md).
 *
 * The JIT translates a function's internal code (the register machine over frame
 * slots that compile.c produces for the interpreter) to x86-64, one instruction at a
 * time, keeping every value in the same frame slot the interpreter uses. Frames,
 * frame records, stack maps and trap codes are therefore the interpreter's, which is
 * what lets the two tiers call each other and lets any function fall back.
 *
 * Ownership: compiled code belongs to the module's pw_cmodule (a table of per-function
 * entries published with an atomic compare-and-swap, so a module shared by several
 * stores and threads compiles each function at most once per winner); freed by
 * pw__jit_module_free with the module's code.
 */
#ifndef PW_JIT_H
#define PW_JIT_H

#include "wasm/runtime.h"

#if defined(__x86_64__) && defined(__linux__)
#define PW_JIT_AVAILABLE 1
#else
#define PW_JIT_AVAILABLE 0
#endif

/* An entry offset of a translation (pw__jit_install, codecache.c): a function the
 * translation does not hold; it is translated at its first call (lazy translation). */
#define PW_JIT_ABSENT (-2)

/* The interpreter should run the call itself (the callee has no JIT code). */
#define PW_JIT_INTERPRET (-1)

/* Per-module table (NULL on OOM: then every function stays on the interpreter). */
struct pw_jitmod *pw__jit_module_new(const struct pw_cmodule *cm);
void pw__jit_module_free(struct pw_jitmod *jm);

/* Run Wasm function f with its arguments at fp (the entry from pw__invoke). Uses the
 * JIT code when the store's engine allows it and f compiles, else the interpreter. */
pw_status pw__exec(pw_store *s, pw_func *f, pw_slot *fp);

/* A call made by the interpreter to Wasm function f (arguments at argp) from the
 * frame (fp, inst) whose next free frame record is fr, resuming at ret_pc. Returns
 * PW_JIT_INTERPRET when f has no JIT code, else the call's status. */
int pw__jit_call_from_interp(pw_store *s, pw_func *f, pw_slot *argp, const uint32_t *ret_pc,
                             pw_slot *fp, pw_instance *inst, pw_frame *fr);

/* Guard pages (guard.c, docs/jit.md "Bounds checks"): the instance whose JIT code
 * runs on top of this thread, NULL outside Wasm (set and restored around every entry
 * into JIT code). For the fault handler: the address to resume at when the fault at
 * instruction pc on address addr is an out-of-bounds access by inst's JIT code to
 * its guarded memory 0 (the fault stub) or a loop head's poll of its store's poll
 * page while the store is interrupted (the interrupt stub), else NULL
 * (async-signal-safe: reads only). */
#if PW_JIT_AVAILABLE
/* initial-exec: a plain %fs-relative access, safe in a signal handler */
extern _Thread_local pw_instance *pw__guard_act __attribute__((tls_model("initial-exec")));
#endif
const void *pw__jit_fault_stub(const pw_instance *inst, uintptr_t pc, uintptr_t addr);

/* Saving and mapping translations (codecache.c, docs/jit.md "Compiled-code cache").
 * A translation is position independent: it starts with a table of the absolute
 * addresses its code uses (the GOT, written by pw__jit_install), then the fault
 * stub (guard variant) and the functions. Variants: 0 explicit checks, 1 guard. */
enum { PW_JIT_VARIANT_EXPLICIT = 0, PW_JIT_VARIANT_GUARD = 1 };
/* Bytes of the GOT at the start of a translation of a module with nfuncs defined
 * functions (a multiple of 16); every function entry lies after it. */
size_t pw__jit_got_bytes(uint32_t nfuncs);
/* CPU features a translation may use (pw__jit_features). */
enum { PW_JIT_SSSE3 = 1, PW_JIT_SSE41 = 2, PW_JIT_POPCNT = 4, PW_JIT_AVX = 8 };
unsigned pw__jit_features(bool sse2_only);
/* Translate all of m for variant v with features isa, installing nothing. On PW_OK
 * *code (*len bytes, GOT zeroed) and *offs (one per defined function: the offset of
 * its entry, or -1 for one that stays on the interpreter) belong to the caller
 * (free). */
pw_status pw__jit_translate(const pw_module *m, int v, unsigned isa, uint8_t **code, size_t *len,
                            int64_t **offs);
/* Install a translation of m for variant v: map (maplen bytes, read/write, never
 * executable) holds len bytes of code as pw__jit_translate made them. Writes the
 * GOT, makes the mapping read/execute and publishes the entries. Takes map (unmapped
 * on failure or when another translation was published first). The caller has
 * checked every offset (pw__jit_got_bytes <= off < len, -1, or PW_JIT_ABSENT: not
 * published, translated at its first call). */
bool pw__jit_install(const pw_module *m, int v, void *map, size_t maplen, size_t len,
                     const int64_t *offs);
/* The module's code cache (takes cc; replaces one attached before: call before the
 * module is shared). */
struct pw_ccref;
void pw__jit_attach_cache(struct pw_jitmod *jm, struct pw_ccref *cc);
/* For the auto tier: -1 f's module has no code cache, 0 it has one without a saved
 * translation for f's variant and this CPU, 1 with one. */
int pw__jit_cached(const pw_store *s, const pw_func *f);

/* Tests and tools: 0 not compiled yet, 1 compiled, 2 stays on the interpreter. */
int pw__jit_state(const pw_func *f);
/* Compile f now (as its first call would). */
int pw__jit_prepare(pw_store *s, pw_func *f);

#endif
