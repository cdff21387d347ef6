/*
 * jit.c — the baseline JIT: translation of internal code to x86-64 and the glue
 * between JIT code, the interpreter and host functions (design: docs/jit.md).
 *
 * Register assignment inside JIT code (System V callee-saved registers, so helper
 * calls keep them): rbx = frame pointer (slot i at [rbx + 8i]), r12 = memory 0 base,
 * r13 = memory 0 size in bytes, r14 = the instance, r15 = the store. rax, rcx, rdx,
 * xmm0 and xmm1 are scratch within one instruction. The hottest slots of a function
 * are pinned to rbp, rsi, rdi, r8-r11 and xmm2-xmm15 for the whole function (pass 1
 * records slot uses, choose_pins picks), v128 values (two cells) to whole xmm
 * registers (vector pins; in a function with SIMD xmm14/xmm15 instead cache the last
 * two v128 results, section "SIMD"); invariant: a pinned slot's frame cell is
 * written before every call sequence and at the return (results) and reloaded after
 * calls, so whatever reads the frame (callees, the GC, host functions) sees the
 * interpreter's values (docs/jit.md "Registers", "SIMD"); except that a direct
 * JIT-to-JIT call keeps non-reference slots pinned to rbp/rsi below its arguments in
 * their registers, which every inner entry saves (direct_begin).
 *
 * A JIT function has two entries. The outer one, `pw_status fn(pw_slot *fp,
 * pw_instance *inst, pw_store *s)`, is entered from C (exec_wasm checks value-stack
 * room and polls the interrupt flag, as the interpreter's call does); it calls the
 * inner one, which zeroes the declared locals. JIT code of the same module calls the
 * inner entry directly (call_func): no frame record, one bound check
 * (pw_store.jit_call_limit), traps unwind to the outer entry at once; the records are
 * derived from the native stack when a helper looks (jit_frames). Every other call
 * goes through jit_call() and its kin, which push the interpreter's frame record for
 * the caller (so the GC's stack walk and the exception unwinder see JIT frames as
 * ordinary frames) and run the callee by whichever tier has it.
 *
 * Invariant: a function is translated only if every internal instruction in it is in
 * the supported set below; anything else makes the whole function stay on the
 * interpreter (per-function fallback), never a partial translation.
 */
#include "wasm/jit/jit.h"
#include "base/cpu.h"
#include "wasm/codecache.h"
#include "wasm/fops.h"
#include "wasm/gc.h"
#include "wasm/interp.h"
#include "wasm/jit/x64.h"

#include <stdlib.h>
#include <string.h>

#include <pthread.h>

#if PW_JIT_AVAILABLE
#include <sys/mman.h>
#include <unistd.h>
#endif

typedef pw_status (*pw_jit_entry)(pw_slot *fp, pw_instance *inst, pw_store *s);

#define JIT_FALLBACK ((void *)1)
/* Offset of a JIT function's inner entry from its published (outer) entry. */
#define JIT_INNER 80
/* Offset of the interrupt stub from the fault stub (fault_stub). */
#define JIT_POLL_STUB 64

/* One translation of the module. Two variants (docs/jit.md, "Bounds checks"):
 * JV_EXPLICIT checks every access to memory 0 against its size, JV_GUARD does not
 * (for an instance whose memory 0 is guarded: an access out of bounds faults, and
 * the mapping starts with the fault stub the signal handler resumes at; its loop
 * heads poll the store's poll page, and a poll that faults resumes at the interrupt
 * stub next to it). An
 * instance runs the variant of its memory 0; each is translated at the first call
 * that needs it. */
enum { JV_EXPLICIT = 0, JV_GUARD = 1, JV_COUNT };

/* A function translated on its own into the lazy code area (for saving it: where its
 * code lies in the area and which GOT slots it refers to, so it can be moved). */
typedef struct lazyfn {
    uint32_t func; /* defined function index */
    uint32_t ngfx;
    size_t off, len;   /* entry offset in the area, code bytes */
    struct fixup *gfx; /* owned: (offset from the entry, GOT slot) */
} lazyfn;

typedef struct jitcode {
    uint32_t nfuncs;
    _Atomic(void *) *fns; /* NULL: not tried; JIT_FALLBACK; else the entry point */
    /* The module's code: one mapping for all its functions, translated together at
     * the first call of any of them (one mmap + one mprotect per module: those take
     * the process's mm lock and cost tens of microseconds each on a loaded VM), or a
     * saved translation (codecache.c), which may hold only some of them. */
    _Atomic(void *) map;
    size_t maplen;
    unsigned map_isa; /* the CPU features map's code may use (when known) */
    /* A saved translation's functions not yet compiled to internal code (compile.c)
     * wait for their first call (lazy_compile), which compiles and publishes them:
     * their code reads their internal code and their callers read their frame size.
     * held[i]: function i's entry in map until then (under lock; NULL: none). The
     * whole pages of map's GOT stay read/write (never executable, like the area's)
     * so that publishing one writes its slot there too: map_rw bytes. */
    void **held;
    size_t map_rw;
    /* Lazy translation (docs/jit.md, "Lazy translation"): one address-space
     * reservation (arena_len bytes, PROT_NONE until used): its own GOT (read/write,
     * never executable: the slots of functions are written as they are published),
     * a page with the fault stub, then translations, each on pages of its own that
     * are read/write only while it is copied there and read/execute after. lock
     * (recursive) serialises translations and every write to the area's GOT;
     * arena, arena_len and arena_got are final once arena is published. */
    pthread_mutex_t lock;
    bool lock_ok;
    bool cc_tried;           /* the code cache was asked (under lock) */
    _Atomic(char *) arena;   /* NULL: none yet */
    size_t arena_len;        /* bytes reserved */
    size_t arena_got;        /* bytes of the GOT pages; the fault stub starts here */
    size_t arena_top;        /* bytes in use (a page multiple; under lock) */
    unsigned arena_isa;      /* CPU features of every translation in the area */
    lazyfn *done;            /* translations in the area, in order (under lock) */
    uint32_t ndone, capdone; /* ndone: also whether there is anything new to save */
} jitcode;

/* The module's global offset table: the first pw__jit_got_bytes(nfuncs) bytes of
 * every translation hold the absolute addresses its code uses (helpers, the internal
 * code, the JIT table, then the entry of every defined function, or JIT_FALLBACK, for
 * direct calls), written when the code is mapped, read rip-relative by the code. The
 * machine code itself holds no absolute address, so a translation can be saved and
 * mapped again in another process (codecache.c) with only the table rewritten. A
 * function's slot holds what pw__jit_install publishes in jv->fns for it: the
 * mapping's entries are final before any of its code runs. */
enum {
    G_CODE,    /* cm->code: return pcs and instruction words handed to helpers */
    G_JV,      /* jv: call_indirect's fast path */
    G_CFUNCS,  /* cm->funcs */
    G_FOP,     /* jit_fop */
    G_XOP,     /* pw__interp_xop */
    G_CALL,    /* jit_call */
    G_CALLIND, /* jit_call_indirect */
    G_CALLREF, /* jit_call_ref */
    G_GROW,    /* jit_memory_grow */
    G_BULK,    /* pw__interp_bulk */
    G_COUNT,
    G_FN0 = 16 /* slot of defined function 0's entry */
};
_Static_assert(G_COUNT <= G_FN0, "GOT slots");
/* No function starts beyond this offset (its rip-relative GOT references reach). */
#define JIT_MAX_BYTES (1u << 30)

size_t pw__jit_got_bytes(uint32_t nfuncs) {
    return (((size_t)G_FN0 + nfuncs) * 8 + 15) & ~(size_t)15;
}

/* The reverse map's size: a power of two over twice the number of ops, so that a
 * probe sequence stays short. */
#define OPH_BITS      10
#define OPH_AMBIGUOUS (-1)
_Static_assert(PW_OP_COUNT_ * 2 <= (1u << OPH_BITS), "the handler map must stay sparse");
_Static_assert(PW_OP_COUNT_ < INT16_MAX, "an op + 1 must fit hop[]");

static uint32_t oph_slot(int32_t v) {
    return ((uint32_t)v * 0x9E3779B1u) >> (32 - OPH_BITS);
}

struct pw_jitmod {
    const struct pw_cmodule *cm; /* the module's code (outlives this table) */
    jitcode v[JV_COUNT];
    /* The on-disk code cache of this module (codecache.c), NULL: none; owned. */
    struct pw_ccref *cc;
    /* Reverse map of the interpreter's handler offsets (op_of): open addressing,
     * linear probing; hop[k] is 0 for an empty cell, op + 1, or OPH_AMBIGUOUS when
     * two ops share the handler at hoff[k]. Built in one pass over the ops, where a
     * sort of the offsets (insertion sort: they are far from ordered) was 13 % of the
     * instructions of a whole `peri wasm invoke` of fib(1). */
    int32_t hoff[1u << OPH_BITS];
    int16_t hop[1u << OPH_BITS];
};

/* ---------------------------------------------------------------- module table */

struct pw_jitmod *pw__jit_module_new(const struct pw_cmodule *cm) {
    struct pw_jitmod *jm = calloc(1, sizeof *jm);
    if (!jm) return NULL;
    jm->cm = cm;
    bool ok = true;
    for (int v = 0; v < JV_COUNT; v++) {
        jm->v[v].nfuncs = cm->nfuncs;
        jm->v[v].fns = calloc(cm->nfuncs ? cm->nfuncs : 1, sizeof *jm->v[v].fns);
        ok = ok && jm->v[v].fns;
#if PW_JIT_AVAILABLE
        pthread_mutexattr_t a;
        if (pthread_mutexattr_init(&a) == 0) {
            jm->v[v].lock_ok = pthread_mutexattr_settype(&a, PTHREAD_MUTEX_RECURSIVE) == 0 &&
                               pthread_mutex_init(&jm->v[v].lock, &a) == 0;
            pthread_mutexattr_destroy(&a);
        }
        ok = ok && jm->v[v].lock_ok;
#endif
    }
    if (!ok) {
        pw__jit_module_free(jm);
        return NULL;
    }
    const int32_t *h = pw__interp_handlers();
    for (uint32_t i = 0; i < PW_OP_COUNT_; i++) {
        uint32_t k = oph_slot(h[i]);
        while (jm->hop[k] != 0 && jm->hoff[k] != h[i])
            k = (k + 1) & ((1u << OPH_BITS) - 1);
        jm->hoff[k] = h[i];
        jm->hop[k] = jm->hop[k] != 0 ? OPH_AMBIGUOUS : (int16_t)(i + 1);
    }
    return jm;
}

#if PW_JIT_AVAILABLE
static void lazy_save(struct pw_jitmod *jm, int v);
#endif

void pw__jit_module_free(struct pw_jitmod *jm) {
    if (!jm) return;
#if PW_JIT_AVAILABLE
    for (int v = 0; v < JV_COUNT; v++) {
        jitcode *jv = &jm->v[v];
        lazy_save(jm, v); /* what ran and is not in the code cache yet */
        void *map = atomic_load_explicit(&jv->map, memory_order_acquire);
        if (map) munmap(map, jv->maplen);
        char *arena = atomic_load_explicit(&jv->arena, memory_order_acquire);
        if (arena) munmap(arena, jv->arena_len);
        for (uint32_t k = 0; k < jv->ndone; k++)
            free(jv->done[k].gfx);
        free(jv->done);
        free(jv->held);
        if (jv->lock_ok) pthread_mutex_destroy(&jv->lock);
    }
#endif
    for (int v = 0; v < JV_COUNT; v++)
        free(jm->v[v].fns);
    pw__cc_ref_free(jm->cc);
    free(jm);
}

/* The internal opcode of a handler word; -1 when unknown or ambiguous (two handlers
 * at one address: then no translation can tell them apart). */
static int op_of(const struct pw_jitmod *jm, uint32_t w) {
    int32_t v = (int32_t)w;
    for (uint32_t k = oph_slot(v);; k = (k + 1) & ((1u << OPH_BITS) - 1)) {
        if (jm->hop[k] == 0) return -1;
        if (jm->hoff[k] == v) return jm->hop[k] == OPH_AMBIGUOUS ? -1 : jm->hop[k] - 1;
    }
}

#if PW_JIT_AVAILABLE

/* ---------------------------------------------------------------- translation */

/* Operation classes of the binary operators (table below). */
enum { BK_NONE = 0, BK_ALU, BK_MUL, BK_SHIFT, BK_CMP };

typedef struct opinfo {
    uint8_t kind, sub; /* BK_*, and the x64 ALU op / shift op / condition */
    uint8_t form;      /* 0 dst a b, 1 dst a imm, 2 branch a b, 3 branch a imm */
    uint8_t w;         /* 64-bit operands */
} opinfo;

#define BI_ADD   BK_ALU, X_ADD
#define BI_SUB   BK_ALU, X_SUB
#define BI_AND   BK_ALU, X_AND
#define BI_OR    BK_ALU, X_OR
#define BI_XOR   BK_ALU, X_XOR
#define BI_MUL   BK_MUL, 0
#define BI_SHL   BK_SHIFT, X_SHL
#define BI_SHR_S BK_SHIFT, X_SAR
#define BI_SHR_U BK_SHIFT, X_SHR
#define BI_ROTL  BK_SHIFT, X_ROL
#define BI_ROTR  BK_SHIFT, X_ROR
#define BI_EQ    BK_CMP, X_CC_E
#define BI_NE    BK_CMP, X_CC_NE
#define BI_LT_S  BK_CMP, X_CC_L
#define BI_LT_U  BK_CMP, X_CC_B
#define BI_GT_S  BK_CMP, X_CC_G
#define BI_GT_U  BK_CMP, X_CC_A
#define BI_LE_S  BK_CMP, X_CC_LE
#define BI_LE_U  BK_CMP, X_CC_BE
#define BI_GE_S  BK_CMP, X_CC_GE
#define BI_GE_U  BK_CMP, X_CC_AE

#define OI32(n, e)                                                                                 \
    [PW_OP_I32_##n] = {BI_##n, 0, 0}, [PW_OP_I32_##n##_I] = {BI_##n, 1, 0},                        \
    [PW_OP_BR_I32_##n] = {BI_##n, 2, 0}, [PW_OP_BR_I32_##n##_I] = {BI_##n, 3, 0},
#define OI64(n, e) [PW_OP_I64_##n] = {BI_##n, 0, 1}, [PW_OP_I64_##n##_I] = {BI_##n, 1, 1},
static const opinfo binops[PW_OP_COUNT_] = {PW_I32_BINOPS(OI32) PW_I64_BINOPS(OI64)
                                                PW_I64_CMPOPS(OI64)};
#undef OI32
#undef OI64

/* Loads and stores: access width, x64 load kind, bytes written to the slot, and
 * whether the loaded 32-bit value is sign-extended to 64 bits. */
typedef struct meminfo {
    uint8_t bytes, ld, slot_bytes, sext64, store; /* store: 1 for stores */
    uint8_t form;                                 /* 0 plain, 1 _A, 2 _R */
} meminfo;

#define I32_LOAD_MI     4, X_LD32, 4
#define I64_LOAD_MI     8, X_LD64, 8
#define F32_LOAD_MI     4, X_LD32, 4
#define F64_LOAD_MI     8, X_LD64, 8
#define I32_LOAD8_S_MI  1, X_LD8S, 4
#define I32_LOAD8_U_MI  1, X_LD8U, 4
#define I32_LOAD16_S_MI 2, X_LD16S, 4
#define I32_LOAD16_U_MI 2, X_LD16U, 4
#define I64_LOAD8_S_MI  1, X_LD8S, 8, 1
#define I64_LOAD8_U_MI  1, X_LD8U, 8
#define I64_LOAD16_S_MI 2, X_LD16S, 8, 1
#define I64_LOAD16_U_MI 2, X_LD16U, 8
#define I64_LOAD32_S_MI 4, X_LD32S, 8
#define I64_LOAD32_U_MI 4, X_LD32, 8
#define I32_STORE_MI    4, 0, 0
#define I64_STORE_MI    8, 0, 0
#define F32_STORE_MI    4, 0, 0
#define F64_STORE_MI    8, 0, 0
#define I32_STORE8_MI   1, 0, 0
#define I32_STORE16_MI  2, 0, 0
#define I64_STORE8_MI   1, 0, 0
#define I64_STORE16_MI  2, 0, 0
#define I64_STORE32_MI  4, 0, 0
/* Loads give 3 or 4 fields (the fourth: sign-extend to 64 bits), stores 3. */
#define ML(n, ...)                                                                                 \
    [PW_OP_##n] = ml(n##_MI), [PW_OP_##n##_A] = mlf(1, n##_MI), [PW_OP_##n##_R] = mlf(2, n##_MI),
#define MS(n, ...)                                                                                 \
    [PW_OP_##n] = msf(0, n##_MI), [PW_OP_##n##_A] = msf(1, n##_MI),                                \
    [PW_OP_##n##_R] = msf(2, n##_MI),
#define ml(...)     mlf(0, __VA_ARGS__)
#define mlf(f, ...) mlx(f, __VA_ARGS__, 0, 0)
#define mlx(f, b, k, sb, sx, ...)                                                                  \
    { b, k, sb, sx, 0, f }
#define msf(f, ...) msx(f, __VA_ARGS__)
#define msx(f, b, ...)                                                                             \
    { b, 0, 0, 0, 1, f }
static const meminfo memops[PW_OP_COUNT_] = {PW_LOADS(ML) PW_STORES(MS)};
#undef ML
#undef MS

/* A branch or table entry to patch: value = label position - base; pos: the
 * instruction that emitted it (UINT32_MAX outside the body). */
typedef struct fixup {
    uint32_t at, label, base, pos;
} fixup;

/* How an instruction template touches a slot operand (pass 1 records them; a slot is
 * pinned only to a register class every one of its uses can take):
 *   U_LDST  whole-slot load/store through ld()/st() (a GPR or an xmm register, with
 *           movd/movq, can stand for the slot)
 *   U_GPR   an integer instruction's r/m operand (a GPR can stand for it)
 *   U_SSE   an SSE instruction's r/m operand (an xmm register can stand for it)
 *   U_MEM   its address is taken (helpers read the frame): memory only */
enum { U_LDST = 1, U_GPR = 2, U_SSE = 4, U_MEM = 8, U_V = 16 /* a v128 use (weights only) */ };

/* How a slot is used as part of a v128 value (pass 1; a vector pin needs its first
 * cell used only as V_LO/V_PAIR_LO and the second only as V_HI/V_PAIR_HI):
 *   V_LO, V_HI            first/second cell of a v128 operand of a SIMD instruction
 *   V_PAIR_LO, V_PAIR_HI  first/second cell of a two-cell copy (COPY2 d, s, d+1,
 *                         s+1) or of a pair of constants: moved whole in xmm
 *   V_OTHER               a scalar access through a register-capable operand
 *   V_MEM                 a scalar access whose address is taken (U_MEM) */
enum { V_LO = 1, V_HI = 2, V_PAIR_LO = 4, V_PAIR_HI = 8, V_OTHER = 16, V_MEM = 32 };

/* CPU features beyond SSE2 the SIMD templates may use (jc.isa). */
enum {
    ISA_SSSE3 = PW_JIT_SSSE3,
    ISA_SSE41 = PW_JIT_SSE41,
    ISA_POPCNT = PW_JIT_POPCNT,
    ISA_AVX = PW_JIT_AVX
};

/* Registers that can hold pinned slots: GPRs not used by the templates (rbp is
 * callee-saved, the others caller-saved) and xmm2..xmm15 (xmm0/xmm1 are scratch).
 * The last, r13, holds memory 0's size for the explicit checks; the guard variant
 * needs no size (memory.size reads it from the memory), so there it is an eighth
 * pin register, spilled and reloaded around calls like r8-r11 (npin_gprs). */
static const int8_t pin_gprs[] = {X_RBP, X_RSI, X_RDI, X_R8, X_R9, X_R10, X_R11, X_R13};
#define NPIN_GPR ((int)(sizeof pin_gprs / sizeof pin_gprs[0]))
/* The first NPIN_KEPT of them (rbp, rsi) keep their values across a direct JIT-to-JIT
 * call: the callee's inner entry saves those it uses (rbp always); the others, like
 * the xmm registers, are stored before the call and reloaded after it (direct_begin).
 * Two is the measured best (callgrind, six programs): every kept register costs a push
 * and a pop in each callee using it; all seven kept made alloc's malloc, which pins
 * all seven, 3.5 % slower in instructions; three or four were worse than two on alloc
 * and qsort. */
#define NPIN_KEPT 2
/* How many of pin_gprs the variant may pin: r13 only in the guard variant. */
static int npin_gprs(bool guard) {
    return guard ? NPIN_GPR : NPIN_GPR - 1;
}
static bool gpr_kept(int reg) {
    for (int r = 0; r < NPIN_KEPT; r++)
        if (pin_gprs[r] == reg) return true;
    return false;
}
#define NPIN_XMM 14
#define PIN_MAX  (NPIN_GPR + NPIN_XMM)
#define PIN_XMM0 16 /* pin[] value 16 + n: xmm n */

typedef struct slotuse {
    uint32_t pos, slot; /* slot UINT32_MAX: a call (every pin is spilled/reloaded) */
    uint32_t cls;       /* U_* */
} slotuse;

/* xmm registers kept from pins in a function with SIMD: a cache of the last v128
 * results written to the frame (vout), so that the next SIMD instruction reads them
 * without a store-to-load round trip. */
#define VC_N   2
#define VC_REG (16 - VC_N) /* xmm14, xmm15 */

/* jc.target values: a branch target; a loop head (polls the interrupt flag). */
enum { T_LABEL = 1, T_LOOP = 2 };

/* Special labels after the per-word ones. */
enum { LAB_EXIT = PW_TRAP_COUNT_, LAB_TRAPC, LAB_NSPECIAL };

/* The helper path of a direct call or an inline call_indirect, emitted after the
 * function's body so that the direct call falls through to what follows it. */
typedef struct slowcall {
    uint32_t fidx, argbase, ret; /* ret: the internal code after the call */
    uint32_t ind;                /* call_indirect at this position (fidx unused), or
                                    UINT32_MAX: jit_call of fidx */
    uint32_t from[8], nfrom;     /* the jumps here (rel32 fields to patch) */
    uint32_t back;               /* where to continue: after the call */
    bool direct;                 /* the call sequence kept pins (direct_begin) */
    bool rax;                    /* the callee returns its result in rax too (ret_rax) */
    uint32_t region;             /* the loop region (its pins) at the call, or UINT32_MAX */
    /* call_indirect's cache miss (ic): the jumps from the hit test (rel32 fields), the
     * cell's displacement from r14, the site's type index, where the call resumes
     * with rax = inner entry and rcx = frame size (icjoin) */
    bool ic;
    uint32_t icmiss[2], icjoin, ictype;
    int32_t icdisp;
} slowcall;

/* Loop pins (docs/jit.md "Loop pins"): in an innermost loop, the span [t, e] from its
 * head to its last back-edge, some GPRs hold the loop's hot slots instead of the
 * function's pins. Swap j: register reg, pin index k, the function's slot a there
 * (UINT32_MAX: the register is free in the function) and the loop's slot b. */
typedef struct lswap {
    uint32_t k, a, b;
    int8_t reg;
} lswap;
typedef struct lregion {
    uint32_t t, e;  /* head, last back-edge (instruction starts) */
    uint32_t npins; /* c->npins inside */
    bool aside;     /* entered other than by falling into t: no loop pins */
    uint32_t nsw;
    lswap sw[NPIN_GPR];
} lregion;
/* A jump from inside a region to a label outside it: it goes through a stub after the
 * body that puts the function's pins back (region_exit) and jumps on. */
typedef struct xstub {
    uint32_t at, base, label, region;
} xstub;
/* A fact the instruction at pos established about GPR reg as its code ended at end
 * (-1, SIZE_MAX: none). It holds at the start of the next instruction only, and only
 * when nothing was emitted since and nothing but falling through arrives (fact_holds). */
typedef struct jfact {
    size_t end;
    uint32_t pos;
    int reg;
} jfact;

/* A whole-slot load (4 or 8 bytes, no extension) the instruction at pos ended with:
 * its code [start, end) (the access, and the store of a result kept in the frame),
 * the access's memory operand, its width (w: 8 bytes) and the slot it wrote. The
 * float arithmetic or the integer operator that pops that slot may take the code back
 * and read the memory itself (fold_load). */
typedef struct jload {
    size_t start, end;
    uint32_t pos, slot;
    pw_xmem m;
    bool w;
} jload;

/* A br_table's jump table, emitted after the body (emit_tables): the rip-relative lea
 * that addresses it, the br_table's position and the loop region it is in. */
typedef struct jtab {
    uint32_t lea, pos, region;
} jtab;

typedef struct jc {
    pw_x64 x;
    const struct pw_jitmod *jm;
    const jitcode *jv; /* the variant being translated */
    bool guard;        /* JV_GUARD: memory 0 accesses are not checked */
    const pw_module *m;
    const pw_cfunc *cf;
    const uint32_t *code;
    uint32_t n;
    int32_t *lab; /* native offset of each word index (instruction starts), then specials */
    fixup *fx;
    uint32_t nfx, capfx;
    bool fail;
    /* Register pinning (docs/jit.md "Registers"). */
    bool analyze; /* pass 1: record slot uses and loops; its code is thrown away */
    bool memonly; /* inside a call sequence: pinned slots are spilled, use memory */
    uint32_t curpos;
    uint8_t *use; /* per slot: U_* bits */
    int8_t *pin;  /* per slot: -1, a GPR, or PIN_XMM0 + n */
    slotuse *acc; /* pass 1: slot accesses and calls, in code order */
    uint32_t nacc, capacc;
    uint32_t *loops; /* pass 1: backward branches as (target, source) pairs */
    uint32_t nloops, caploops;
    uint32_t npins;
    uint32_t pslot[PIN_MAX];
    int8_t preg[PIN_MAX];
    bool pwide[PIN_MAX]; /* a vector pin: the slot and the next one, 16 bytes */
    /* SIMD (section "SIMD" below). */
    unsigned isa;                     /* ISA_* the module may use */
    bool has_simd;                    /* pass 1 saw a v128 operand */
    bool nov;                         /* pass 1: the current accesses are a pair's (not V_OTHER) */
    uint32_t pair2;                   /* pass 1: the second instruction of a constant pair */
    uint32_t lc_end, lc_slot, lc_val; /* the last CONST32 (ends at word lc_end) */
    bool lc_w;                        /* ... or CONST64 (lc_val: its low half) */
    uint32_t vc_slot[2];              /* v128 results cached in xmm14/xmm15 (vout) */
    bool vc_dirty[2];                 /* not yet stored to the frame */
    uint8_t vc_next;                  /* the entry vout replaces next */
    bool vc_set;                      /* the current instruction set the cache */
    uint8_t *vuse;                    /* per slot: V_* bits */
    int8_t *vpin;     /* per slot: -1, or PIN_XMM0 + n holding it and the next slot */
    uint8_t *target;  /* per word: T_LABEL, T_LOOP or 0 (from pass 1; NULL in pass 1) */
    uint32_t *vpairs; /* pass 1: (first slot, partner's first slot) of pair copies */
    uint32_t nvpairs, capvpairs;
    uint64_t *pool; /* literal pool: 16-byte constants as (lo, hi) */
    uint32_t npool, cappool;
    fixup *pfx; /* rip-relative uses of the pool: at, constant index */
    uint32_t npfx, cappfx;
    uint32_t base; /* the function's offset in the module's translation */
    fixup *gfx;    /* rip-relative uses of the GOT: at, slot */
    uint32_t ngfx, capgfx;
    slowcall *slow; /* helper paths of direct calls, emitted after the body */
    uint32_t nslow, capslow;
    /* The inner entry's frame: rsp + fsize is its return-address slot (fsize: the
     * saved registers and the alignment pad); the outer entry's epilogue (unwinding). */
    uint32_t fsize;
    size_t outer_epi;
    /* calls: pass 1 emitted a call (of C code or of JIT code), so the inner entry
     * keeps rsp 16-byte aligned (pad: the 8 bytes that do it). A function that calls
     * nothing needs no alignment: nothing below it runs. Pass 1 always pads, since it
     * does not know yet, and its code is final when nothing is pinned. */
    bool calls, pad;
    int8_t save[NPIN_GPR]; /* kept pin GPRs but rbp that this function pins: saved by
                              its inner entry */
    uint32_t nsave;
    /* The kept pin GPRs it does not pin may hold its callers' pins: pushed around
     * every call of C code, which clobbers them (cpush; call_got pops); extra_sp: the
     * bytes pushed. */
    int8_t csave[NPIN_GPR];
    uint32_t ncsave, extra_sp;
    /* Store-to-load forwarding (ld): the last template ended with st() of GPR fwd_reg
     * to the frame cell at fwd_disp, and its code ended at fwd_end. */
    size_t fwd_end;
    int32_t fwd_disp;
    int fwd_reg;
    size_t fwd_start; /* where that store's code begins */
    bool fwd_carried; /* the record was carried over another instruction (binop) */
    /* Dead stores (ld): the instruction's result slot and the code words of its
     * operands (dse_n of them; 0: the template may not drop a store), set by translate
     * for the templates that store their result last, straight-line. */
    uint32_t dse_dst, dse_op[3], dse_n;
    /* Flags (flags_of): the instruction at flags.pos ended at flags.end with an
     * add/sub/and/or/xor of width flags_w into GPR flags.reg, so ZF says whether that
     * register is zero; prevpos is the instruction before the current one. */
    jfact flags;
    uint32_t prevpos;
    bool flags_w;
    /* Addresses (zx_of): the memory access at zx.pos ended at zx.end with rax holding
     * the zero-extension of GPR zx.reg, which it did not write. */
    jfact zx;
    jload fl; /* the previous instruction's load, for fold_load */
    /* The previous instruction's float compare (fparith) into slot fc_slot: its code
     * from fc_tail (after the ucomiss/ucomisd) to fc.end turns the flags into 0/1,
     * which is 1 exactly when condition fc_cc holds (fcmp_take). */
    jfact fc;
    size_t fc_tail;
    uint32_t fc_slot;
    int fc_cc;
    /* Zero-extended registers (zr_of): the instruction at zr.pos ended at zr.end
     * having written GPR zr.reg with a 32-bit write (which clears the upper half) and
     * written nothing after it but the store of that register to a frame cell. */
    jfact zr;
    /* Loop pins: the regions (disjoint, by position), the active one (UINT32_MAX
     * outside), the function's pin count, the exits to route through stubs. */
    lregion *lr;
    uint32_t nlr, lcur, fn_npins;
    xstub *xs;
    uint32_t nxs, capxs;
    jtab *jt;
    uint32_t njt, capjt;
} jc;

static bool grow(void **p, uint32_t *cap, uint32_t need, size_t elem) {
    if (need <= *cap) return true;
    uint32_t n = *cap ? *cap * 2 : 64;
    while (n < need)
        n *= 2;
    void *q = realloc(*p, (size_t)n * elem);
    if (!q) return false;
    *p = q;
    *cap = n;
    return true;
}

static void note_access(jc *c, uint32_t slot, int cls) {
    if (!grow((void **)&c->acc, &c->capacc, c->nacc + 1, sizeof *c->acc)) {
        c->fail = true;
        return;
    }
    c->acc[c->nacc++] = (slotuse){c->curpos, slot, (uint32_t)cls};
}

/* The result cache (vout): an entry is a v128 result in xmm14 + k; a dirty one has
 * not been stored to its cells yet. Invariant: a dirty entry is stored (flushed)
 * before anything reads or writes an overlapping cell in the frame, before every
 * branch and call sequence and before a label, and is only ever forgotten unstored
 * when a new result overwrites exactly its two cells. */
static void vc_flush_k(jc *c, int k) {
    if (c->vc_slot[k] == UINT32_MAX || !c->vc_dirty[k]) return;
    c->vc_dirty[k] = false;
    pw__x64_sse_rm(&c->x, 0xF3, 0x7F, false, VC_REG + k,
                   x_mem(X_RBX, (int32_t)(c->vc_slot[k] * 8)));
}
static bool vc_overlaps(jc *c, int k, uint32_t lo, uint32_t hi) {
    return c->vc_slot[k] != UINT32_MAX && c->vc_slot[k] + 1 >= lo && c->vc_slot[k] <= hi;
}
/* Store every dirty entry (they stay cached, clean): before branches. */
static void vc_flush(jc *c) {
    for (int k = 0; k < VC_N; k++)
        vc_flush_k(c, k);
}
/* Store every dirty entry and forget them all: calls, labels, unknown writes. */
static void vc_clear(jc *c) {
    vc_flush(c);
    c->vc_slot[0] = c->vc_slot[1] = UINT32_MAX;
}
/* Cells lo..hi are about to be read from the frame: store overlapping dirty entries. */
static void vc_touch(jc *c, uint32_t lo, uint32_t hi) {
    for (int k = 0; k < VC_N; k++)
        if (vc_overlaps(c, k, lo, hi)) vc_flush_k(c, k);
}
/* Cells lo..hi are about to be read or written in the frame: store overlapping
 * dirty entries and forget them. */
static void vc_drop(jc *c, uint32_t lo, uint32_t hi) {
    for (int k = 0; k < VC_N; k++)
        if (vc_overlaps(c, k, lo, hi)) {
            vc_flush_k(c, k);
            c->vc_slot[k] = UINT32_MAX;
        }
}

/* Slot operand at word w used as `cls`: its register when pinned (outside call
 * sequences), else its frame cell [rbx + 8 slot] (any cached v128 result over that
 * cell is forgotten: the template may write it). */
static pw_xmem S_(jc *c, uint32_t w, int cls) {
    uint32_t slot = c->code[w];
    if (slot >= c->cf->frame_slots) {
        c->fail = true;
        return x_mem(X_RBX, 0);
    }
    if (c->analyze) {
        c->use[slot] |= (uint8_t)cls;
        if (!c->nov) c->vuse[slot] |= cls == U_MEM ? V_MEM : V_OTHER;
        note_access(c, slot, cls);
    } else if (c->pin && c->pin[slot] >= 0 && !c->memonly) {
        int r = c->pin[slot];
        if (cls == U_MEM) {
            c->fail = true; /* not reached: pass 1 saw every use */
        } else {
            /* any class: the templates convert between GPR and xmm (alu_m, sse_ld) */
            return r >= PIN_XMM0 ? x_xreg(r - PIN_XMM0) : x_reg(r);
        }
    } else if (c->vpin && c->vpin[slot] >= 0 && !c->memonly) {
        /* the low cell of a vector pin used as a scalar (an operand-stack slot that
         * holds a v128 in one place and an i32 in another): its low 64 bits, as a
         * scalar xmm pin; a scalar write may clobber the high cell, which no one
         * reads before a v128 write (choose_vpins) */
        if (cls == U_MEM)
            c->fail = true;
        else
            return x_xreg(c->vpin[slot] - PIN_XMM0);
    }
    if (!c->analyze && (c->vc_slot[0] & c->vc_slot[1]) != UINT32_MAX) vc_drop(c, slot, slot);
    return x_mem(X_RBX, (int32_t)(slot * 8));
}
#define SL(k)  S_(c, pos + (k), U_LDST)
#define SG(k)  S_(c, pos + (k), U_GPR)
#define SF(k)  S_(c, pos + (k), U_SSE)
#define SM(k)  S_(c, pos + (k), U_MEM)
#define IMM(k) c->code[pos + (k)]

static void add_fix(jc *c, size_t at, uint32_t label, size_t base) {
    if (c->lcur != UINT32_MAX && label < c->n &&
        (label < c->lr[c->lcur].t || label > c->lr[c->lcur].e)) {
        /* leaves the loop region: through a stub that restores the function's pins */
        if (!grow((void **)&c->xs, &c->capxs, c->nxs + 1, sizeof *c->xs)) {
            c->fail = true;
            return;
        }
        c->xs[c->nxs++] = (xstub){(uint32_t)at, (uint32_t)base, label, c->lcur};
        return;
    }
    if (c->nfx == c->capfx) {
        uint32_t cap = c->capfx ? c->capfx * 2 : 64;
        fixup *f = realloc(c->fx, cap * sizeof *f);
        if (!f) {
            c->fail = true;
            return;
        }
        c->fx = f;
        c->capfx = cap;
    }
    c->fx[c->nfx++] = (fixup){(uint32_t)at, label, (uint32_t)base, c->curpos};
}

static uint32_t special(jc *c, uint32_t k) {
    return c->n + k;
}

/* A jump (cc < 0: jmp) to an instruction already placed in this pass within 128
 * bytes behind, in the same loop region (so no stub between: add_fix), takes the
 * 2-byte rel8 form: a short loop's back-edge. Its target is final (only the
 * instruction being translated may still move its own label, take_back, and it has
 * emitted code by now), so nothing needs patching. */
static bool jump_back_short(jc *c, int cc, uint32_t label) {
    if (c->analyze || label >= c->n || label > c->curpos || c->lab[label] < 0) return false;
    if (c->lcur != UINT32_MAX && (label < c->lr[c->lcur].t || label > c->lr[c->lcur].e))
        return false;
    int64_t rel = (int64_t)c->lab[label] - (int64_t)(c->x.len + 2);
    if (rel < -128) return false;
    pw__x64_jshort(&c->x, cc, (int8_t)rel);
    return true;
}
static void jcc_to(jc *c, pw_xcc cc, uint32_t label) {
    if (jump_back_short(c, (int)cc, label)) return;
    size_t at = pw__x64_jcc32(&c->x, cc);
    add_fix(c, at, label, at + 4);
}
static void jmp_to(jc *c, uint32_t label) {
    if (jump_back_short(c, -1, label)) return;
    size_t at = pw__x64_jmp32(&c->x);
    add_fix(c, at, label, at + 4);
}
static void trap_if(jc *c, pw_xcc cc, pw_trap_code code) {
    jcc_to(c, cc, special(c, code));
}
/* The interrupt poll (docs/jit.md "Interrupt"). The guard variant loads the store's
 * poll page, which faults once the store is interrupted (the handler resumes at the
 * module's interrupt stub): one load, no branch, and no register read (a `test` with
 * a register would wait for whatever last wrote it, often a pointer just loaded).
 * The explicit variant, which runs where the handler may not be ours, tests the flag. */
static void poll_interrupt(jc *c) {
    if (c->guard) {
        pw__x64_alu_mi(&c->x, X_CMP, false, x_mem(X_R15, (int32_t)PW_STORE_POLL_OFF), 0);
        return;
    }
    pw__x64_alu_mi(&c->x, X_CMP, false, x_mem(X_R15, (int32_t)offsetof(pw_store, interrupt)), 0);
    trap_if(c, X_CC_NE, PW_TRAP_INTERRUPTED);
}

/* Branch (cc, or always when cc < 0) from the instruction at pos to pos + off. A
 * backward target is a possible loop: poll the interrupt flag first, as the
 * interpreter does on every taken branch. */
static void branch(jc *c, int cc, uint32_t pos, uint32_t off) {
    uint32_t t = pos + off;
    vc_flush(c); /* the target reads v128 results from the frame (no flags change) */
    if (t >= c->n) {
        c->fail = true;
        return;
    }
    if (t <= pos) {
        if (c->analyze) {
            if (!grow((void **)&c->loops, &c->caploops, c->nloops + 2, sizeof *c->loops)) {
                c->fail = true;
                return;
            }
            c->loops[c->nloops++] = t;
            c->loops[c->nloops++] = pos;
        }
        if (!c->analyze && c->target && c->target[t] == T_LOOP) {
            /* the target polls (run_pass): one jump, taken while the loop runs */
            if (cc >= 0)
                jcc_to(c, (pw_xcc)cc, t);
            else
                jmp_to(c, t);
            return;
        }
        size_t skip = 0;
        if (cc >= 0) skip = pw__x64_jcc32(&c->x, (pw_xcc)(cc ^ 1));
        poll_interrupt(c);
        jmp_to(c, t);
        if (cc >= 0) pw__x64_patch32(&c->x, skip, (int32_t)(c->x.len - (skip + 4)));
    } else if (cc >= 0) {
        jcc_to(c, (pw_xcc)cc, t);
    } else {
        jmp_to(c, t);
    }
}

/* Whether a load at this point may take the value st() left in fwd_reg: only at the
 * start of an instruction (pass 2, where the branch targets are known) that no
 * branch, label or patched jump reaches, so the only way here is straight from the
 * store. */
static bool fwd_ok(const jc *c) {
    uint32_t p = c->curpos;
    return !c->analyze && c->target && p < c->n && c->lab[p] == (int32_t)c->x.len &&
           !c->target[p] && c->x.join != c->x.len;
}

/* Whether a record of the previous instruction's code still describes the code right
 * before this instruction: it was set by the previous instruction, nothing was
 * emitted since, and nothing but falling through from it arrives here (fwd_ok: no
 * label, no patched jump). Asked before this instruction emits anything. */
static bool fact_fresh(const jc *c, size_t end, uint32_t pos) {
    return end == c->x.len && pos == c->prevpos && fwd_ok(c);
}

/* Whether fact f holds about GPR r at the start of this instruction (fact_fresh). */
static bool fact_holds(const jc *c, const jfact *f, int r) {
    return f->reg == r && fact_fresh(c, f->end, f->pos);
}

/* Records fact f about r (-1: none) as this instruction's code ends. */
static void fact_set(jc *c, jfact *f, int r) {
    f->reg = r;
    f->end = r >= 0 ? c->x.len : SIZE_MAX;
    f->pos = c->curpos;
}

/* Whether rax already holds the zero-extended low half of GPR r, the address a
 * memory access is about to form: the previous instruction was an access whose
 * address was exactly that (a pinned base, a displacement small enough to ride in the
 * access), it did not write r or rax, nothing was emitted since, and nothing but
 * falling through from it arrives here (fwd_ok). Two accesses through one pointer
 * (p->next, then p->value) then zero-extend it once. */
static bool zx_of(const jc *c, int r) {
    return fact_holds(c, &c->zx, r);
}

/* Whether the address record holds at the start of this instruction (zx_of of its
 * own base). */
static bool zx_held(const jc *c) {
    return c->zx.reg >= 0 && zx_of(c, c->zx.reg);
}

/* After an instruction that began where an address record held (held: zx_held then)
 * and wrote no GPR but w (-1: none): the record holds after it too, unless w is rax
 * or the base. */
static void zx_keep(jc *c, bool held, int w) {
    if (held && w != X_RAX && w != c->zx.reg) fact_set(c, &c->zx, c->zx.reg);
}

/* Whether GPR r holds a zero-extended 32-bit value written by the previous
 * instruction (zr_set), so that it can index memory as it is: nothing was emitted
 * since and nothing but falling through from it arrives here (fwd_ok). */
static bool zr_of(const jc *c, int r) {
    return fact_holds(c, &c->zr, r);
}

/* Records that this instruction's last write of a GPR was the 32-bit write of r
 * (-1: no such register); called as its code ends. */
static void zr_set(jc *c, int r) {
    fact_set(c, &c->zr, r);
}

/* Whether ZF already says if GPR r is zero (a test of width w would set it the same):
 * the previous instruction ended with an add, sub, and, or or xor of that width into
 * r, nothing was emitted since, and nothing but falling through from it arrives here
 * (fwd_ok: no label, no patched jump). Asked at the start of an instruction, before it
 * emits anything; the loads and moves a template emits before its test keep flags. */
static bool flags_of(const jc *c, int r, bool w) {
    return c->flags_w == w && fact_holds(c, &c->flags, r);
}

/* Whole-slot load/store (4 or 8 bytes) between a GPR and a slot operand, which may be
 * a pinned GPR or xmm register (movd/movq). A 4-byte write to a pinned register
 * zero-extends; the upper half of a slot holding an i32/f32 is never read (docs). */
/* The register the previous instruction stored frame cell m from, if a load of m
 * here may take it instead (store-to-load forwarding, docs/jit.md); else -1. */
static int fwd_reg_of(const jc *c, pw_xmem m) {
    if (m.base == X_RBX && m.index == X_NOREG && m.disp == c->fwd_disp && c->x.len == c->fwd_end &&
        fwd_ok(c))
        return c->fwd_reg;
    return -1;
}
/* Whether the store the forwarding record describes is dead: it is the previous
 * instruction's last code (the record was not carried over another instruction), the
 * operand being loaded is this instruction's only use of the cell as an operand, and
 * either this instruction stores its result to the same cell at its end (dse_dst, a
 * template that may drop a store: no call, its only exits are traps, which abandon
 * the frame, or its own compare-and-branch), or the cell is an operand-stack
 * temporary (at or above nlocals), which an integer operator, a load or a store pops: a
 * temporary is pushed once and popped once, so no one reads this value after this
 * instruction (a value that stays on the stack, as `br_if` keeps its operands, is
 * read by an instruction that pops nothing, which never drops a store). Then nothing
 * can read what the store wrote, and the code that follows it starts right here (no
 * branch reaches it, fwd_ok). */
static bool dead_store(const jc *c) {
    if (!c->dse_n || c->fwd_carried) return false;
    uint32_t slot = (uint32_t)c->fwd_disp / 8, uses = 0;
    for (uint32_t k = 0; k < c->dse_n; k++)
        uses += c->code[c->dse_op[k]] == slot;
    if (uses != 1) return false;
    return slot >= c->cf->nlocals || (c->dse_dst != UINT32_MAX && c->code[c->dse_dst] == slot);
}

/* Takes the previous instruction's code back to `to` (this instruction has emitted
 * nothing yet, so it now starts there) and drops every record of that code: the
 * forwarding record, which no position guards, and the facts and the load and compare
 * records, which could not hold past the truncation anyway. */
static void take_back(jc *c, size_t to) {
    c->x.len = to;
    c->lab[c->curpos] = (int32_t)to;
    c->fwd_end = SIZE_MAX;
    c->flags.end = c->zx.end = c->zr.end = c->fc.end = c->fl.end = SIZE_MAX;
}

/* The register frame cell m is forwarded from (fwd_reg_of), with the store taken
 * back when it is dead (nothing was emitted since it, fwd_ok); -1 if m is not
 * forwarded. Asked once, at the point the cell is read. */
static int fwd_take(jc *c, pw_xmem m) {
    int f = fwd_reg_of(c, m);
    if (f >= 0 && dead_store(c)) take_back(c, c->fwd_start);
    return f;
}

/* fwd_take for a template that writes GPR x1 or x2 (-1: none) before it reads the
 * register it gets: one of those is moved to rcx first (`mov rcx, rax`, free with
 * renaming), which such a template must leave alone until then. */
static int fwd_take_clear(jc *c, pw_xmem m, int x1, int x2) {
    int f = fwd_take(c, m);
    if (f >= 0 && (f == x1 || f == x2)) {
        pw__x64_mov_rr(&c->x, true, X_RCX, f);
        f = X_RCX;
    }
    return f;
}

static void ld(jc *c, bool w, int r, pw_xmem m) {
    bool zx = !w && zr_of(c, r); /* asked before fwd_take drops the records */
    int f = fwd_take(c, m);
    if (f >= 0) {
        /* the previous instruction ended by storing this cell from f: take the
         * register instead of waiting for the store to forward (st wrote all 8 bytes
         * of it, so both widths read the same bits; the 4-byte form zero-extends,
         * unless the previous instruction's 32-bit write of f already did: then
         * `shl eax, 16; sar eax, 16` has no `mov eax, eax` in its chain) */
        if (r != f || (!w && !zx)) pw__x64_mov_rr(&c->x, w, r, f);
        return;
    }
    if (m.index == X_DIRECTX)
        pw__x64_sse_rr(&c->x, 0x66, X_SSE_MOVDST, w, m.base, r);
    else if (m.index == X_DIRECT && m.base == r && !w)
        pw__x64_mov_rr(&c->x, false, r, r);
    else if (!(m.index == X_DIRECT && m.base == r))
        pw__x64_load(&c->x, w ? X_LD64 : X_LD32, r, m);
}
/* A 4-byte value goes to a frame cell as all 8 bytes of r (the upper half of a cell
 * holding an i32 is unspecified, docs/jit.md): a later 8-byte read of the cell (a
 * copy, a call argument) then forwards from the store instead of stalling on a
 * narrower one. */
static void st(jc *c, bool w, pw_xmem m, int r) {
    if (m.index == X_DIRECTX) {
        pw__x64_sse_rr(&c->x, 0x66, X_SSE_MOVD, w, m.base, r);
    } else {
        size_t at = c->x.len;
        pw__x64_store(&c->x, w || m.base == X_RBX ? 8 : 4, m, r);
        if (m.base == X_RBX && m.index == X_NOREG && r != X_RBX) {
            c->fwd_end = c->x.len;
            c->fwd_disp = m.disp;
            c->fwd_reg = r;
            c->fwd_start = at;
            c->fwd_carried = false;
        }
    }
}

/* Slot dst = slot src (all 8 bytes): straight into a pinned GPR dst, straight from a
 * pinned GPR src into a frame cell (the store is then forwarded from that register),
 * else through the scratch register. */
static void copy_slot(jc *c, pw_xmem dst, pw_xmem src, int scratch) {
    if (dst.index == X_DIRECT) {
        ld(c, true, dst.base, src);
    } else if (src.index == X_DIRECT && dst.index == X_NOREG) {
        st(c, true, dst, src.base);
    } else {
        ld(c, true, scratch, src);
        st(c, true, dst, scratch);
    }
}

/* dst op= slot operand m (dst is not rcx: an xmm-pinned m goes through rcx). */
static void alu_m(jc *c, pw_xalu op, bool w, int dst, pw_xmem m) {
    if (m.index == X_DIRECTX) {
        ld(c, w, X_RCX, m);
        pw__x64_alu_rr(&c->x, op, w, dst, X_RCX);
    } else {
        pw__x64_alu_rm(&c->x, op, w, dst, m);
    }
}
/* xmm xr = slot operand m as a float (pfx 0xF3 f32, 0xF2 f64). */
static void sse_ld(jc *c, int pfx, int xr, pw_xmem m) {
    if (m.index == X_DIRECTX) {
        if (m.base != xr) pw__x64_sse_rr(&c->x, -1, X_SSE_MOVAPS, false, xr, m.base);
    } else if (m.index == X_DIRECT) {
        pw__x64_sse_rr(&c->x, 0x66, X_SSE_MOVD, pfx == 0xF2, xr, m.base);
    } else {
        pw__x64_sse_rm(&c->x, pfx, X_SSE_MOVLD, false, xr, m);
    }
}
/* slot operand m = xmm xr as a float. */
static void sse_st(jc *c, int pfx, pw_xmem m, int xr) {
    if (m.index == X_DIRECTX) {
        if (m.base != xr) pw__x64_sse_rr(&c->x, -1, X_SSE_MOVAPS, false, m.base, xr);
    } else if (m.index == X_DIRECT) {
        pw__x64_sse_rr(&c->x, 0x66, X_SSE_MOVDST, pfx == 0xF2, xr, m.base);
    } else {
        pw__x64_sse_rm(&c->x, pfx, X_SSE_MOVST, false, xr, m);
    }
}

/* Pinned slots to their frame cells (before anything that reads the frame or
 * clobbers caller-saved registers), and back: pin k, or every pin. */
static void spill_pin(jc *c, uint32_t k) {
    pw_xmem m = x_mem(X_RBX, (int32_t)(c->pslot[k] * 8));
    if (c->pwide[k]) /* movdqu */
        pw__x64_sse_rm(&c->x, 0xF3, 0x7F, false, c->preg[k] - PIN_XMM0, m);
    else if (c->preg[k] >= PIN_XMM0)
        pw__x64_sse_rm(&c->x, 0xF2, X_SSE_MOVST, false, c->preg[k] - PIN_XMM0, m);
    else
        pw__x64_store(&c->x, 8, m, c->preg[k]);
}
static void reload_pin(jc *c, uint32_t k) {
    pw_xmem m = x_mem(X_RBX, (int32_t)(c->pslot[k] * 8));
    if (c->pwide[k])
        pw__x64_sse_rm(&c->x, 0xF3, 0x6F, false, c->preg[k] - PIN_XMM0, m);
    else if (c->preg[k] >= PIN_XMM0)
        pw__x64_sse_rm(&c->x, 0xF2, X_SSE_MOVLD, false, c->preg[k] - PIN_XMM0, m);
    else
        pw__x64_load(&c->x, X_LD64, c->preg[k], m);
}
static void spill_pins(jc *c) {
    for (uint32_t k = 0; k < c->npins; k++)
        spill_pin(c, k);
}
/* keep: slots below it kept their value if their register is callee-saved (rbp):
 * a callee's frame starts at the call's argbase, so it writes nothing below. */
static void reload_pins(jc *c, uint32_t keep) {
    for (uint32_t k = 0; k < c->npins; k++)
        if (!(c->preg[k] == X_RBP && c->pslot[k] < keep)) reload_pin(c, k);
}
/* Into loop region r from the function's pins, and back: each swapped register's
 * function slot is stored to its cell and the loop's slot loaded (entering), the
 * loop's stored and the function's reloaded (leaving); with emit false only the map
 * changes (code emitted after the body for a point inside the region). Each swap
 * has its own register, so one store and one load per swap suffice. */
static void region_enter(jc *c, uint32_t r, bool emit) {
    const lregion *g = &c->lr[r];
    for (uint32_t j = 0; j < g->nsw; j++) {
        const lswap *w = &g->sw[j];
        if (w->a != UINT32_MAX) {
            if (emit) spill_pin(c, w->k);
            c->pin[w->a] = -1;
        }
        c->pslot[w->k] = w->b;
        c->preg[w->k] = w->reg;
        c->pwide[w->k] = false;
        c->pin[w->b] = w->reg;
        if (emit) reload_pin(c, w->k);
    }
    c->npins = g->npins;
    c->lcur = r;
}
static void region_exit(jc *c, uint32_t r, bool emit) {
    const lregion *g = &c->lr[r];
    for (uint32_t j = 0; j < g->nsw; j++) {
        const lswap *w = &g->sw[j];
        if (emit) spill_pin(c, w->k);
        c->pin[w->b] = -1;
        if (w->a != UINT32_MAX) {
            c->pslot[w->k] = w->a;
            c->pin[w->a] = w->reg;
            if (emit) reload_pin(c, w->k);
        }
    }
    c->npins = c->fn_npins;
    c->lcur = UINT32_MAX;
}

static void cpush(jc *c);
static void ret_seq(jc *c);
/* A call sequence (C code is called): spill, then slot operands are read/written in
 * memory until call_end reloads every pin (results land in the frame). */
static void call_begin(jc *c) {
    vc_clear(c);
    if (c->analyze) note_access(c, UINT32_MAX, 0);
    spill_pins(c);
    cpush(c);
    c->memonly = true;
}
static void call_end(jc *c, uint32_t keep) {
    c->memonly = false;
    reload_pins(c, keep);
}

/* Whether slot sl holds a reference at the call site whose resume point is word ret
 * (its stack map: the GC reads that cell while the call runs). */
static bool gc_ref_at(const jc *c, uint32_t ret, uint32_t sl) {
    const pw_cfunc *cf = c->cf;
    const pw_gcsite *site = pw__gc_site(cf, ret);
    if (!site) return false;
    const uint32_t *map = cf->gc_maps + site->map, *locals = cf->gc_maps + map[0];
    for (uint32_t i = 1; i <= locals[0]; i++)
        if (locals[i] == sl) return true;
    for (uint32_t i = 0; i < map[1]; i++)
        if (map[2 + i] == sl) return true;
    return false;
}

/* A direct JIT-to-JIT call keeps the pins in kept GPRs (gpr_kept: rbp, rsi) below its
 * argbase in their registers: the callee's inner entry saves the kept GPRs it pins
 * (prologue), and nothing it does reads the caller's cells but its arguments (at
 * argbase and above) and, through the GC, the references of the call site's stack
 * map (the GC does not move objects). So it stores only the pins at or above argbase,
 * the xmm pins and the other GPR pins (not preserved), the references and the cell
 * `also` (call_indirect's index, which its helper reads), and reloads the first three
 * kinds. The helper path stores and reloads the kept ones but rbp around its C call
 * (direct_slow_spill). A trap or an exception unwinds to the entry from C, so no
 * kept pin is ever needed after one; and the frame records derived from the native
 * stack (jit_frames) are read only by the GC, which reads only the references. */
static bool direct_keeps(const jc *c, uint32_t k, uint32_t argbase) {
    return gpr_kept(c->preg[k]) && c->pslot[k] < argbase;
}
static void direct_begin(jc *c, uint32_t argbase, uint32_t ret, uint32_t also) {
    vc_clear(c);
    if (c->analyze) note_access(c, UINT32_MAX, (int)argbase + 1);
    for (uint32_t k = 0; k < c->npins; k++)
        if (!direct_keeps(c, k, argbase) || c->pslot[k] == also || gc_ref_at(c, ret, c->pslot[k]))
            spill_pin(c, k);
    c->memonly = true;
}
/* After a direct call whose callee returns in rax (ret_rax), at the point both its
 * paths meet (the helper path loads rax from the cell before it jumps back): the
 * result cell at argbase reads as rax, like a store the previous instruction made
 * (fwd_reg_of), with no store to take back (carried: dead_store refuses it). */
static void call_result(jc *c, uint32_t argbase) {
    c->fwd_end = c->fwd_start = c->x.len;
    c->fwd_disp = (int32_t)(argbase * 8);
    c->fwd_reg = X_RAX;
    c->fwd_carried = true;
}

/* After a direct call's two paths meet. rax: the callee returned its result in rax
 * too (ret_rax), so a scalar pin of the result cell (argbase) takes it from there
 * instead of reloading it, and otherwise the cell reads as rax (call_result). */
static void direct_end(jc *c, uint32_t argbase, bool rax) {
    c->memonly = false;
    for (uint32_t k = 0; k < c->npins; k++) {
        if (direct_keeps(c, k, argbase)) continue;
        if (rax && c->pslot[k] == argbase && !c->pwide[k]) {
            if (c->preg[k] >= PIN_XMM0)
                pw__x64_sse_rr(&c->x, 0x66, X_SSE_MOVD, true, c->preg[k] - PIN_XMM0, X_RAX);
            else
                pw__x64_mov_rr(&c->x, true, c->preg[k], X_RAX);
        } else {
            reload_pin(c, k);
        }
    }
    if (rax) call_result(c, argbase);
}
/* The helper path of a direct call (C clobbers every pin GPR but rbp): before, after. */
static void direct_slow_spill(jc *c, uint32_t argbase, bool reload) {
    for (uint32_t k = 0; k < c->npins; k++)
        if (direct_keeps(c, k, argbase) && c->preg[k] != X_RBP) {
            if (reload)
                reload_pin(c, k);
            else
                spill_pin(c, k);
        }
}

/* r12 = memory 0's base; r13 = its size, except in the guard variant (r13 may be a
 * pin there, and nothing reads the size from it). */
static void reload_mem(jc *c) {
    pw__x64_load(&c->x, X_LD64, X_RAX, x_mem(X_R14, (int32_t)offsetof(pw_instance, mem0)));
    pw__x64_load(&c->x, X_LD64, X_R12, x_mem(X_RAX, (int32_t)offsetof(pw_memory, data)));
    if (!c->guard)
        pw__x64_load(&c->x, X_LD64, X_R13, x_mem(X_RAX, (int32_t)offsetof(pw_memory, size)));
}

/* GOT references: the displacement is patched at the end of the pass. */
static void got_fix(jc *c, size_t at, uint32_t slot) {
    if (!grow((void **)&c->gfx, &c->capgfx, c->ngfx + 1, sizeof *c->gfx)) {
        c->fail = true;
        return;
    }
    c->gfx[c->ngfx++] = (fixup){(uint32_t)at, slot, 0, 0};
}
/* dst = the address in GOT slot `slot`. */
static void got_load(jc *c, int dst, uint32_t slot) {
    got_fix(c, pw__x64_load_rip(&c->x, dst), slot);
}
/* dst = the address of the internal code word at pos of this function. */
static void code_addr(jc *c, int dst, uint32_t pos) {
    uint64_t bytes = ((uint64_t)(c->code - c->m->code->code) + pos) * 4;
    if (bytes > INT32_MAX) c->fail = true;
    got_load(c, dst, G_CODE);
    if (bytes) pw__x64_alu_ri(&c->x, X_ADD, true, dst, (int32_t)bytes);
}
/* Before a call of C code (call_begin, the helper paths): the kept pin GPRs this
 * function's inner entry did not save may hold its callers' pins (direct calls keep
 * them in registers), and C clobbers them: pushed (rsp kept 16-byte aligned), popped
 * by call_got. Every call_got follows a cpush. */
static void cpush(jc *c) {
    for (uint32_t k = 0; k < c->ncsave; k++)
        pw__x64_push(&c->x, c->csave[k]);
    c->extra_sp = 8 * c->ncsave;
    if (c->ncsave % 2) {
        pw__x64_alu_ri(&c->x, X_SUB, true, X_RSP, 8);
        c->extra_sp += 8;
    }
}
/* Call the helper in GOT slot `slot` (flags and rax are as it left them). */
static void call_got(jc *c, uint32_t slot) {
    c->calls = true;
    got_fix(c, pw__x64_call_rip(&c->x), slot);
    if (c->ncsave % 2) pw__x64_lea(&c->x, true, X_RSP, x_mem(X_RSP, 8));
    for (uint32_t k = c->ncsave; k-- > 0;)
        pw__x64_pop(&c->x, c->csave[k]);
    c->extra_sp = 0;
}

/* Slot d = 1 if condition cc holds, else 0 (flags set by the caller): zero-extended
 * straight into d's register when d is pinned to a GPR. */
static void set_bool(jc *c, pw_xcc cc, pw_xmem d) {
    pw__x64_setcc(&c->x, cc, X_RAX);
    if (d.index == X_DIRECT) {
        pw__x64_movzx8(&c->x, d.base, X_RAX);
        return;
    }
    pw__x64_movzx8(&c->x, X_RAX, X_RAX);
    st(c, false, d, X_RAX);
}

/* Whether the previous instruction was a whole-slot load (w: 8 bytes) into `slot`
 * whose code this instruction may take back and replace by reading the memory itself
 * (c->fl): nothing was emitted since, nothing but falling through arrives (fwd_ok),
 * and the slot is an operand-stack temporary, which this instruction pops (pushed
 * once, popped once: nothing reads it later). Then the code is gone and *m is the
 * access's operand: r12 and its index register hold what they held for the load,
 * since nothing ran in between. Asked before this instruction emits anything. */
static bool fold_load(jc *c, uint32_t slot, bool w, pw_xmem *m) {
    const jload *l = &c->fl;
    if (l->slot != slot || l->w != w || slot < c->cf->nlocals || !fact_fresh(c, l->end, l->pos))
        return false;
    *m = l->m;
    take_back(c, l->start); /* the store of a frame temporary goes too */
    return true;
}

/* Binary operator: computed in a pinned destination register when there is one (and
 * b is not in it), else in rax; b from a slot (register or memory) or an immediate.
 * Compares against a pinned register use it in place. */
static void binop(jc *c, uint32_t pos, const opinfo *oi) {
    bool w = oi->w, imm = oi->form & 1, br = oi->form >= 2;
    pw_xmem a = br ? SL(1) : SL(2);
    uint32_t bw = br ? 2 : 3;
    int32_t bi = (int32_t)IMM(bw);
    pw_xmem b = imm ? x_mem(X_RBX, 0) : SG(bw);
    pw_xmem d = br ? x_mem(X_RBX, 0) : SL(1);
    uint32_t as = IMM(bw - 1), bs = imm ? UINT32_MAX : IMM(bw); /* their slots */
    int r = X_RAX;
    bool fwd = c->x.len == c->fwd_end && fwd_ok(c); /* a forwarding record that held here */
    bool zx = zx_held(c);                           /* an address record that held here */
    bool commutes = oi->kind == BK_MUL || (oi->kind == BK_ALU && oi->sub != X_SUB);
    if (!br && !imm && commutes && d.index == X_DIRECT && b.index == X_DIRECT && b.base == d.base &&
        ((a.index == X_DIRECT && a.base != d.base) || a.index == X_NOREG)) {
        /* d = a op d with d in a GPR pin: computed as d op= a, in place, a from its
         * register, its frame cell (`add esi, [rbx + 24]`) or the register the
         * previous instruction left it in (a store, a call's result: `add esi, eax`,
         * taken below as b) */
        pw_xmem t = a;
        a = b;
        b = t;
        uint32_t ts = as;
        as = bs;
        bs = ts;
    }
    if (!br && oi->kind != BK_CMP && d.index == X_DIRECT &&
        !(b.index == X_DIRECT && b.base == d.base))
        r = d.base;
    bool lea = !br && imm && oi->kind == BK_ALU && a.index == X_DIRECT && a.base != r &&
               (oi->sub == X_ADD || (oi->sub == X_SUB && bi != INT32_MIN));
    /* b an operand-stack temporary that the previous instruction loaded whole from
     * memory (fold_load): the operator reads the memory itself (`add ebp, [r12 + rax +
     * 1296]`), the load taken back; not when the access's index is r, which a's load
     * into r is about to overwrite */
    pw_xmem lm;
    bool folded = bs != UINT32_MAX && bs != as && c->fl.m.index != r && fold_load(c, bs, w, &lm);
    if (folded) b = lm;
    /* b a frame cell the previous instruction ended by storing from GPR f (a is
     * another cell): b is taken from f, and the store is taken back when dead, so
     * `~e & g` is `and edi, eax` instead of a store and `and edi, [rbx + 208]` waiting
     * for it; f moves to rcx when a is about to be loaded into it (rcx is free here:
     * b is not an xmm pin, and a shift count or a multiplier then comes from rcx
     * itself) */
    if (!folded && !imm && b.index == X_NOREG && !(a.index == X_NOREG && a.disp == b.disp)) {
        int f = fwd_take_clear(c, b, a.index == X_DIRECT && a.base == r ? -1 : r, -1);
        if (f >= 0) b = x_reg(f);
    }
    /* a compare's first operand from the register the previous instruction stored it
     * from, in place (not rcx, which an xmm-pinned b passes through) */
    int acmp = oi->kind == BK_CMP ? fwd_reg_of(c, a) : -1;
    /* d = a + b with both operands in GPRs other than r (pins, or b forwarded): one
     * lea into r instead of `mov r, a; add r, b` (a 32-bit lea keeps the low half of
     * the sum and zero-extends, as the add does; it sets no flags, so no flags fact) */
    bool lea2 = !br && !imm && oi->kind == BK_ALU && oi->sub == X_ADD && a.index == X_DIRECT &&
                b.index == X_DIRECT && a.base != r && b.base != r;
    if (lea2) {
        pw__x64_lea(&c->x, w, r, x_memi(a.base, b.base, 1, 0));
        lea = true;
    } else if (lea) {
        /* d = a ± constant from a GPR pin: one lea, into d's register or into rax
         * when d is in the frame (no flags are read after it) */
        pw__x64_lea(&c->x, w, r, x_mem(a.base, oi->sub == X_ADD ? bi : -bi));
    } else if (oi->kind == BK_CMP && a.index == X_DIRECT) {
        r = a.base; /* cmp reg, b */
    } else if (acmp >= 0 && acmp != X_RCX) {
        r = acmp;
    } else if (!(a.index == X_DIRECT && a.base == r)) {
        ld(c, w, r, a);
    }
    switch (lea ? BK_NONE : oi->kind) {
    case BK_NONE: break;
    case BK_ALU:
    case BK_CMP: {
        pw_xalu op = oi->kind == BK_CMP ? X_CMP : (pw_xalu)oi->sub;
        if (imm)
            pw__x64_alu_ri(&c->x, op, w, r, bi);
        else
            alu_m(c, op, w, r, b);
        break;
    }
    case BK_MUL:
        if (imm) {
            pw__x64_imul_rri(&c->x, w, r, r, bi);
        } else if (b.index == X_DIRECT) {
            pw__x64_imul_rr(&c->x, w, r, b.base);
        } else {
            ld(c, w, X_RCX, b);
            pw__x64_imul_rr(&c->x, w, r, X_RCX);
        }
        break;
    case BK_SHIFT:
        if (imm) {
            pw__x64_shift_i(&c->x, (pw_xshift)oi->sub, w, r, (uint8_t)(bi & (w ? 63 : 31)));
        } else {
            ld(c, false, X_RCX, b);
            pw__x64_shift_cl(&c->x, (pw_xshift)oi->sub, w, r);
        }
        break;
    default: c->fail = true; return;
    }
    if (br) {
        if (oi->kind == BK_CMP) {
            branch(c, oi->sub, pos, IMM(3));
        } else {
            /* the ALU group's flags already say whether r is zero */
            if (oi->kind != BK_ALU || w) pw__x64_test_rr(&c->x, false, r, r);
            branch(c, X_CC_NE, pos, IMM(3));
        }
    } else if (oi->kind == BK_CMP) {
        set_bool(c, (pw_xcc)oi->sub, d);
    } else if (r == X_RAX) {
        st(c, w, d, X_RAX);
    } else if (fwd && c->fwd_end != SIZE_MAX && r != c->fwd_reg &&
               (c->fwd_reg != X_RCX ||
                (!imm && (b.index == X_DIRECTX || oi->kind == BK_SHIFT ||
                          (oi->kind == BK_MUL && b.index != X_DIRECT))) == false)) {
        /* computed into a pinned register, touching neither the forwarded register
         * (rcx is the only other one used above: an xmm b, a shift count, a
         * multiplier from memory) nor the frame: the record holds after this
         * instruction too */
        c->fwd_end = c->x.len;
        c->fwd_carried = true;
    }
    /* computed into a pinned register that is not the base, touching rax nowhere (a
     * compare's set_bool would): x = load [p]; x += v; store [p], x. A compare and
     * branch writes no register but rax when its a was loaded there (r), and its
     * branch code (a jcc, or the poll's compare and a jmp) none on the path that
     * falls through: if (p->idx == k) ...; p = p->next */
    zx_keep(c, zx && (br || oi->kind != BK_CMP), oi->kind == BK_CMP && r != X_RAX ? -1 : r);
    /* an ALU result's flags hold in r after it, and in rax after rax was stored to a
     * frame cell (a store leaves the flags; br_if of that cell tests rax) */
    if (!br && !lea && oi->kind == BK_ALU && (r != X_RAX || d.index == X_NOREG)) {
        fact_set(c, &c->flags, r);
        c->flags_w = w;
    }
    /* an i32 result (a compare's 0/1 included) was written to its register by a 32-bit
     * write, into a pinned destination or into rax and then to its cell */
    if (!br && !w) zr_set(c, d.index == X_DIRECT ? d.base : d.index == X_NOREG ? X_RAX : -1);
}

/* The bounds check of an access to memory 0 that ends at ix + end (computed in 64
 * bits, so it cannot wrap): traps when that passes r13 (the cached size). None in
 * the guard variant: the address is inside the guarded reservation, and past the
 * size its pages fault (guard.c). */
static void bounds_check(jc *c, int ix, int32_t end) {
    if (c->guard) return;
    pw__x64_lea(&c->x, true, X_RDX, x_mem(ix, end));
    pw__x64_alu_rr(&c->x, X_CMP, true, X_RDX, X_R13);
    trap_if(c, X_CC_A, PW_TRAP_MEM_OOB);
}

/* The GPR that already holds address operand a zero-extended (zr_of), so that it
 * indexes memory as it is: a's pinned register, or the register a's frame cell was
 * just stored from (its store taken back when dead); -1 if none. Not rcx for a
 * store, whose value may pass through rcx. */
static int zr_index(jc *c, const meminfo *mi, pw_xmem a) {
    if (a.index == X_DIRECT) return zr_of(c, a.base) ? a.base : -1;
    int f = a.index == X_NOREG ? fwd_reg_of(c, a) : -1;
    if (f < 0 || !zr_of(c, f) || (mi->store && f == X_RCX)) return -1;
    return fwd_take(c, a);
}

/* Effective address ea = *ix + the returned displacement (*ix: rax, the
 * zero-extended 32-bit sum, plus the offset when it is too large for a
 * displacement; or a register that holds the zero-extended base already, zr_index),
 * bounds check against r13 (the cached memory size): ea + width > size traps,
 * computed in 64 bits so that it cannot wrap (as in the interpreter). *base: the GPR
 * whose zero-extension rax then is alone, or -1. */
static int32_t address(jc *c, uint32_t pos, const meminfo *mi, uint32_t *len, int *base, int *ix) {
    uint32_t offw;
    pw_xmem a = SL(mi->store ? 1 : 2);
    pw_xmem b = mi->form == 2 ? (mi->store ? SG(2) : SG(3)) : a;
    int zr = mi->form == 0 && IMM(3) <= INT32_MAX - 8 ? zr_index(c, mi, a) : -1;
    *ix = X_RAX;
    if (zr >= 0) {
        /* the base, zero-extended by the previous instruction's 32-bit write (a load
         * of p->next, an add), indexes the access as it is */
        *ix = zr;
        offw = 3;
        *len = 4;
    } else if (mi->form == 1 && a.index == X_DIRECT) {
        /* a pinned base plus a constant: one 32-bit lea, which wraps and
         * zero-extends exactly as the add would */
        pw__x64_lea(&c->x, false, X_RAX, x_mem(a.base, (int32_t)IMM(mi->store ? 2 : 3)));
        offw = 4;
        *len = 5;
    } else if (mi->form == 2 && a.index == X_DIRECT && b.index == X_DIRECT) {
        pw__x64_lea(&c->x, false, X_RAX, x_memi(a.base, b.base, 1, 0));
        offw = 4;
        *len = 5;
    } else if (mi->form == 0) {
        if (a.index != X_DIRECT || !zx_of(c, a.base)) ld(c, false, X_RAX, a);
        if (a.index == X_DIRECT) *base = a.base;
        offw = 3;
        *len = 4;
    } else {
        ld(c, false, X_RAX, a);
        if (mi->form == 1)
            pw__x64_alu_ri(&c->x, X_ADD, false, X_RAX, (int32_t)IMM(mi->store ? 2 : 3));
        else
            alu_m(c, X_ADD, false, X_RAX, b);
        offw = 4;
        *len = 5;
    }
    /* a small offset rides in the displacements (lea and the access): the access
     * is [r12 + rax + disp] with ea = rax + disp */
    uint32_t off = IMM(offw);
    int32_t disp = 0;
    if (off <= INT32_MAX - 8) {
        disp = (int32_t)off;
    } else {
        pw__x64_mov_ri32(&c->x, X_RCX, off);
        pw__x64_alu_rr(&c->x, X_ADD, true, X_RAX, X_RCX);
        *base = -1; /* rax is no longer the base alone */
    }
    bounds_check(c, *ix, disp + mi->bytes);
    return disp;
}

/* A store's value operand that the previous instruction ended by storing to its frame
 * cell from GPR f (store_value_reg): the GPR to store from instead of that cell, with
 * the cell's store taken back when dead; f moves to rcx first when it is rax or rdx,
 * which the address and its bounds check write. -1: memop_access reads the value as
 * usual. Asked before anything is emitted; not in pass 1 (SL would count another use
 * of the slots and move the pins), not with an added address operand (an xmm-pinned
 * one passes through rcx) nor with an offset too large for a displacement (it too). */
static int store_value_reg(jc *c, uint32_t pos, const meminfo *mi) {
    if (c->analyze || mi->form == 2 || IMM(mi->form == 0 ? 3 : 4) > INT32_MAX - 8) return -1;
    pw_xmem a = SL(1), v = mi->form == 0 ? SL(2) : SL(3);
    if (v.index != X_NOREG || (a.index == X_NOREG && a.disp == v.disp)) return -1;
    return fwd_take_clear(c, v, X_RAX, X_RDX);
}

/* The access of a load or store at m (its address formed by address()); vreg: the
 * GPR that holds a store's value already (store_value_reg), or -1. */
static void memop_access(jc *c, uint32_t pos, const meminfo *mi, pw_xmem m, int vreg) {
    /* a pinned value is stored from / loaded into its register directly */
    if (mi->store) {
        pw_xmem v = vreg >= 0 ? x_reg(vreg) : mi->form == 0 ? SL(2) : SL(3);
        if (v.index == X_DIRECT) {
            pw__x64_store(&c->x, mi->bytes, m, v.base);
        } else if (v.index == X_DIRECTX && mi->bytes >= 4) {
            pw__x64_sse_rm(&c->x, mi->bytes == 8 ? 0xF2 : 0xF3, X_SSE_MOVST, false, v.base, m);
        } else {
            ld(c, mi->bytes == 8, X_RCX, v);
            pw__x64_store(&c->x, mi->bytes, m, X_RCX);
        }
    } else {
        pw_xmem d = SL(1);
        bool plain = mi->ld == X_LD64 || (mi->ld == X_LD32 && mi->slot_bytes == 4);
        size_t at = c->x.len;
        if (d.index == X_DIRECTX && plain) {
            pw__x64_sse_rm(&c->x, mi->ld == X_LD64 ? 0xF2 : 0xF3, X_SSE_MOVLD, false, d.base, m);
        } else {
            int r = d.index == X_DIRECT ? d.base : X_RCX;
            pw__x64_load(&c->x, (pw_xld)mi->ld, r, m);
            if (mi->sext64) pw__x64_movsx_rr(&c->x, 4, true, r, r);
            if (r == X_RCX) st(c, mi->slot_bytes == 8, d, X_RCX);
            /* the 8- to 32-bit loads write 32 bits (no sign extension to 64 after
             * it): r is zero-extended, and may index the next access (zr_index) */
            if (mi->ld != X_LD64 && mi->ld != X_LD32S && !mi->sext64) zr_set(c, r);
        }
        if (plain) c->fl = (jload){at, c->x.len, c->curpos, IMM(1), m, mi->ld == X_LD64};
    }
}

static void memop(jc *c, uint32_t pos, const meminfo *mi, uint32_t *len) {
    bool held = zx_held(c); /* asked before anything is emitted or taken back */
    int vreg = mi->store ? store_value_reg(c, pos, mi) : -1;
    int base = -1, ix = X_RAX;
    int32_t disp = address(c, pos, mi, len, &base, &ix);
    pw_xmem m = x_memi(X_R12, ix, 1, disp);
    memop_access(c, pos, mi, m, vreg);
    /* rax still holds the zero-extended base (zx_of) unless the access loaded into
     * the base's own register */
    int dst = -1; /* the GPR the load wrote, if pinned (not asked in pass 1, where
                   * SL would count another use of the slot and move the pins) */
    if (!c->analyze && !mi->store && SL(1).index == X_DIRECT) dst = SL(1).base;
    if (base >= 0 && dst == base) base = -1;
    if (base < 0 && ix != X_RAX) {
        /* indexed by a register already zero-extended (zr_index), so rax was not
         * written (the bounds check uses rdx, a value passes through rcx): the
         * record that held before it holds after it, unless the load wrote its
         * base (p->info, then info->idx, then p->next: p zero-extended once) */
        zx_keep(c, held, dst);
        return;
    }
    fact_set(c, &c->zx, base);
}

/* An i32 division or remainder by the constant the previous instruction wrote to the
 * divisor's slot (lc_*: a CONST32, nothing branches in between), other than 0 and -1
 * (their traps stay with div/idiv), by multiplication: for an unsigned x < 2^32 and a
 * divisor 2 <= k < 2^32, M = ceil(2^64 / k) fits in 64 bits and x / k is the high
 * half of x * M (the error x * (M - 2^64 / k) / 2^64 is below 2^-32 < 1 / k, less
 * than the distance from x / k up to the next integer), one `mul` instead of a `div`
 * of 13-44 cycles. A signed division divides |x| by |k| so (|x| <= 2^31), then
 * gives the quotient the sign of x xor k's: truncation toward zero, as idiv. The
 * remainder is x - q * k (for signed operands it then has x's sign, as idiv's). A
 * divisor of 1 (or -1, unsigned 0xffffffff is not it) needs no multiply. */
static bool divrem_const(jc *c, uint32_t pos, bool sign, bool rem) {
    if (c->analyze || c->lc_end != pos || c->lc_w || c->lc_slot != IMM(3) ||
        (c->target && c->target[pos]))
        return false;
    int32_t k = (int32_t)c->lc_val;
    if (k == 0 || (sign && k == -1)) return false;
    pw_x64 *x = &c->x;
    pw_xmem a = SL(2);
    uint32_t mag = sign && k < 0 ? 0u - (uint32_t)k : (uint32_t)k;
    ld(c, false, X_RAX, a);
    if (mag == 1) {
        /* x / 1 = x, x % 1 = 0 (k = 1; a signed -1 took div/idiv above) */
        if (rem) pw__x64_alu_rr(x, X_XOR, false, X_RAX, X_RAX);
        st(c, false, SL(1), X_RAX);
        return true;
    }
    if (sign) {
        pw__x64_cdq(x, false);                         /* edx = x < 0 ? -1 : 0 */
        pw__x64_alu_rr(x, X_XOR, false, X_RAX, X_RDX); /* eax = |x| (2^31 for INT32_MIN) */
        pw__x64_alu_rr(x, X_SUB, false, X_RAX, X_RDX);
        pw__x64_mov_rr(x, false, X_RCX, X_RDX); /* ecx = the quotient's sign */
        if (k < 0) pw__x64_alu_ri(x, X_XOR, false, X_RCX, -1);
    }
    pw__x64_mov_ri64(x, X_RDX, UINT64_MAX / mag + 1); /* ceil(2^64 / mag), mag >= 2 */
    pw__x64_mul(x, true, X_RDX);                      /* rdx = |x| / mag */
    if (sign) {
        pw__x64_alu_rr(x, X_XOR, false, X_RDX, X_RCX);
        pw__x64_alu_rr(x, X_SUB, false, X_RDX, X_RCX);
    }
    if (!rem) {
        st(c, false, SL(1), X_RDX);
        return true;
    }
    pw__x64_imul_rri(x, false, X_RDX, X_RDX, k); /* q * k, low 32 bits */
    ld(c, false, X_RAX, a);                      /* x again (no store was taken back) */
    pw__x64_alu_rr(x, X_SUB, false, X_RAX, X_RDX);
    st(c, false, SL(1), X_RAX);
    return true;
}

/* Integer division and remainder: the traps of the interpreter, then div/idiv. */
static void divrem(jc *c, uint32_t pos, bool w, bool sign, bool rem) {
    if (!w && divrem_const(c, pos, sign, rem)) return;
    ld(c, w, X_RAX, SL(2));
    ld(c, w, X_RCX, SL(3));
    pw__x64_test_rr(&c->x, w, X_RCX, X_RCX);
    trap_if(c, X_CC_E, rem ? PW_TRAP_REM_ZERO : PW_TRAP_DIV_ZERO);
    size_t done = 0;
    bool have_done = false;
    if (sign) {
        pw__x64_alu_ri(&c->x, X_CMP, w, X_RCX, -1);
        size_t normal = pw__x64_jcc32(&c->x, X_CC_NE);
        if (rem) {
            pw__x64_alu_rr(&c->x, X_XOR, false, X_RDX, X_RDX); /* x rem -1 = 0 */
            done = pw__x64_jmp32(&c->x);
            have_done = true;
        } else {
            /* INT_MIN / -1 overflows: the only case with b == -1 that traps */
            if (w) {
                pw__x64_mov_ri64(&c->x, X_RDX, (uint64_t)INT64_MIN);
                pw__x64_alu_rr(&c->x, X_CMP, true, X_RAX, X_RDX);
            } else {
                pw__x64_alu_ri(&c->x, X_CMP, false, X_RAX, INT32_MIN);
            }
            trap_if(c, X_CC_E, PW_TRAP_INT_OVERFLOW);
        }
        pw__x64_patch32(&c->x, normal, (int32_t)(c->x.len - (normal + 4)));
        pw__x64_cdq(&c->x, w);
    } else {
        pw__x64_alu_rr(&c->x, X_XOR, false, X_RDX, X_RDX);
    }
    pw__x64_div(&c->x, w, sign, X_RCX);
    if (have_done) pw__x64_patch32(&c->x, done, (int32_t)(c->x.len - (done + 4)));
    st(c, w, SL(1), rem ? X_RDX : X_RAX);
}

/* clz / ctz: bsr / bsf with the zero case done explicitly (bsr/bsf leave the
 * destination undefined for 0). */
static void bitscan(jc *c, uint32_t pos, bool w, bool clz) {
    ld(c, w, X_RAX, SL(2));
    pw__x64_test_rr(&c->x, w, X_RAX, X_RAX);
    size_t z = pw__x64_jcc32(&c->x, X_CC_E);
    if (clz) {
        pw__x64_bsr(&c->x, w, X_RAX, X_RAX);
        pw__x64_alu_ri(&c->x, X_XOR, w, X_RAX, w ? 63 : 31);
    } else {
        pw__x64_bsf(&c->x, w, X_RAX, X_RAX);
    }
    size_t d = pw__x64_jmp32(&c->x);
    pw__x64_patch32(&c->x, z, (int32_t)(c->x.len - (z + 4)));
    pw__x64_mov_ri32(&c->x, X_RAX, w ? 64 : 32);
    pw__x64_patch32(&c->x, d, (int32_t)(c->x.len - (d + 4)));
    st(c, w, SL(1), X_RAX);
}

/* Float arithmetic and compares inline in SSE2: the same instructions the C
 * compiler uses for the interpreter's `a + b` and `a < b`, so the same bits (a NaN
 * operand's payload included; of two NaN operands x86 returns the first, a here,
 * where the interpreter's build may have commuted a commutative operator: Wasm lets
 * either payload through, docs/jit.md "Supported"). */
typedef struct fpinfo {
    uint8_t kind; /* 1 arith, 2 compare */
    uint8_t sub;  /* SSE opcode, or the compare (0 eq 1 ne 2 lt 3 gt 4 le 5 ge) */
    uint8_t d;    /* f64 */
    uint8_t imm;  /* immediate form */
} fpinfo;
#define FA_ADD X_SSE_ADD
#define FA_SUB X_SSE_SUB
#define FA_MUL X_SSE_MUL
#define FA_DIV X_SSE_DIV
#define FC_EQ  0
#define FC_NE  1
#define FC_LT  2
#define FC_GT  3
#define FC_LE  4
#define FC_GE  5
#define OFA(n, e)                                                                                  \
    [PW_OP_F32_##n] = {1, FA_##n, 0, 0}, [PW_OP_F64_##n] = {1, FA_##n, 1, 0},                      \
    [PW_OP_F32_##n##_I] = {1, FA_##n, 0, 1}, [PW_OP_F64_##n##_I] = {1, FA_##n, 1, 1},
#define OFC(n, e) [PW_OP_F32_##n] = {2, FC_##n, 0, 0}, [PW_OP_F64_##n] = {2, FC_##n, 1, 0},
static const fpinfo fpops[PW_OP_COUNT_] = {PW_F_ARITH(OFA) PW_F_CMP(OFC)};
#undef OFA
#undef OFC

/* The float operations not inline (fparith, t_float, ftrunc) run in C (jit_fop), by
 * the interpreter's own expressions (interp.h's X-macros and fops.h), so both tiers
 * compute identical bits. */
#define OFH(n, ...) [PW_OP_##n] = 1,
static const uint8_t fop_helper[PW_OP_COUNT_] = {
    PW_UNOPS(OFH) PW_TRUNCS(OFH)[PW_OP_F32_MIN] = 2, [PW_OP_F32_MAX] = 2, [PW_OP_F64_MIN] = 2,
    [PW_OP_F64_MAX] = 2};
#undef OFH

static uint32_t jit_fop(uint32_t op, pw_slot *dst, const pw_slot *pa, const pw_slot *pb) {
    switch (op) {
#define U(n, fin, fout, e)                                                                         \
    case PW_OP_##n: {                                                                              \
        __typeof__(pa->fin) a = pa->fin;                                                           \
        dst->fout = (e);                                                                           \
        return 0;                                                                                  \
    }
        PW_UNOPS(U)
#undef U
#define T(n, fin, fout, Ty, lo, hi)                                                                \
    case PW_OP_##n: {                                                                              \
        __typeof__(pa->fin) a = pa->fin;                                                           \
        if (a != a) return PW_TRAP_INVALID_CONV;                                                   \
        if (!(a > (lo) && a < (hi))) return PW_TRAP_CONV_OVERFLOW;                                 \
        dst->fout = (Ty)a;                                                                         \
        return 0;                                                                                  \
    }
        PW_TRUNCS(T)
#undef T
    case PW_OP_F32_MIN: dst->u32 = f32_minmax(*pa, *pb, false); return 0;
    case PW_OP_F32_MAX: dst->u32 = f32_minmax(*pa, *pb, true); return 0;
    case PW_OP_F64_MIN: dst->u64 = f64_minmax(*pa, *pb, false); return 0;
    case PW_OP_F64_MAX: dst->u64 = f64_minmax(*pa, *pb, true); return 0;
    default: return PW_TRAP_UNREACHABLE; /* not reached: only listed ops are emitted */
    }
}

static void vconst_op(jc *c, int pfx, int esc, uint8_t op, int xr, uint64_t lo, uint64_t hi);
static void vconst_vex(jc *c, int pfx, uint8_t op, int xr, int vr, uint64_t lo);

static void fparith(jc *c, uint32_t pos, const fpinfo *fi, uint32_t *len) {
    pw_x64 *x = &c->x;
    int pfx = fi->d ? 0xF2 : 0xF3;
    *len = fi->imm && fi->d ? 5 : 4;
    pw_xmem a = SF(2);
    if (fi->kind == 1) {
        bool zx = zx_held(c); /* an address record held here */
        pw_xmem d = SF(1), b = fi->imm ? x_mem(X_RBX, 0) : SF(3);
        /* an operand the previous instruction loaded into a temporary is read from
         * memory here instead: b as the r/m operand (`mulsd r, [mem]`), a straight
         * into the register computed in */
        uint32_t sa = IMM(2), sb = fi->imm ? UINT32_MAX : IMM(3);
        pw_xmem lm;
        if (sb != UINT32_MAX && sb != sa && fold_load(c, sb, fi->d, &lm))
            b = lm;
        else if (sa != sb && fold_load(c, sa, fi->d, &lm))
            a = lm;
        /* computed in a pinned destination xmm register when b is not in it; with
         * AVX from a's register in one three-operand instruction (`vmulsd r, a, b`,
         * the same bits as `movaps r, a; mulsd r, b`), where b may be in r */
        bool avx = (c->isa & ISA_AVX) && a.index == X_DIRECTX;
        int r = 0;
        if (d.index == X_DIRECTX && (avx || !(b.index == X_DIRECTX && b.base == d.base)))
            r = d.base;
        if (avx && a.base == r) avx = false; /* r = r op b: the two-operand form */
        int v = avx ? a.base : r;            /* the first operand's register */
        if (!avx) sse_ld(c, pfx, r, a);
        if (fi->imm) {
            /* the constant from the function's literal pool */
            uint64_t bits = fi->d ? (uint64_t)IMM(3) | ((uint64_t)IMM(4) << 32) : IMM(3);
            if (avx)
                vconst_vex(c, pfx, fi->sub, r, v, bits);
            else
                vconst_op(c, pfx, 0, fi->sub, r, bits, 0);
        } else {
            if (b.index == X_DIRECT) {
                sse_ld(c, pfx, 1, b);
                b = x_xreg(1);
            }
            if (avx)
                pw__x64_vex_rm(x, pfx, fi->sub, r, v, b);
            else
                pw__x64_sse_rm(x, pfx, fi->sub, false, r, b);
        }
        sse_st(c, pfx, d, r);
        /* no GPR written: c = load [p]; c += a * b; store [p], c */
        zx_keep(c, zx && d.index != X_DIRECT, -1);
        return;
    }
    int ucpfx = fi->d ? 0x66 : -1;
    /* `ucomis p, q` says whether p is above q: a > b and a >= b as they are, a < b and
     * a <= b as b above a. p is read in its register (loaded into xmm0 when it is not
     * in one), q as the r/m operand: its register, its frame cell, or the memory the
     * previous instruction loaded it from (fold_load) */
    bool swap = fi->sub == FC_LT || fi->sub == FC_LE;
    uint32_t sp = IMM(swap ? 3 : 2), sq = IMM(swap ? 2 : 3);
    pw_xmem p = swap ? SF(3) : a, q = swap ? a : SF(3), lm;
    if (sq != sp && fold_load(c, sq, fi->d, &lm)) q = lm;
    int rp = 0;
    if (p.index == X_DIRECTX)
        rp = p.base;
    else
        sse_ld(c, pfx, 0, p);
    if (q.index == X_DIRECT) {
        sse_ld(c, pfx, 1, q);
        q = x_xreg(1);
    }
    pw__x64_sse_rm(x, ucpfx, X_SSE_UCOMI, false, rp, q);
    size_t tail = SIZE_MAX;
    switch (fi->sub) {
    case FC_EQ:
    case FC_NE:
        pw__x64_setcc(x, fi->sub == FC_EQ ? X_CC_E : X_CC_NE, X_RAX);
        pw__x64_setcc(x, fi->sub == FC_EQ ? X_CC_NP : X_CC_P, X_RCX);
        pw__x64_movzx8(x, X_RAX, X_RAX);
        pw__x64_movzx8(x, X_RCX, X_RCX);
        pw__x64_alu_rr(x, fi->sub == FC_EQ ? X_AND : X_OR, false, X_RAX, X_RCX);
        break;
    default: /* unordered sets CF: "above" / "above or equal" are false */
        tail = x->len;
        pw__x64_setcc(x, fi->sub == FC_GT || fi->sub == FC_LT ? X_CC_A : X_CC_AE, X_RAX);
        pw__x64_movzx8(x, X_RAX, X_RAX);
        break;
    }
    st(c, false, SL(1), X_RAX);
    if (tail != SIZE_MAX) {
        /* the setcc, movzx and store leave the flags as ucomis set them */
        fact_set(c, &c->fc, X_RAX);
        c->fc_tail = tail;
        c->fc_slot = IMM(1);
        c->fc_cc = fi->sub == FC_GT || fi->sub == FC_LT ? X_CC_A : X_CC_AE;
    }
}

/* Whether the br_if at this instruction tests the 0/1 that the previous instruction's
 * float compare wrote to operand-stack temporary `slot` (c->fc), which the br_if
 * pops: then the code that made the 0/1 is taken back (nothing was emitted since,
 * nothing but falling through arrives: fact_holds) and *cc is the condition of the
 * compare's flags under which the 0/1 is 1 (above or above-or-equal: false when
 * unordered, as the setcc was). Asked before the br_if emits anything. */
static bool fcmp_take(jc *c, uint32_t slot, int *cc) {
    if (!fact_holds(c, &c->fc, X_RAX) || c->fc_slot != slot || slot < c->cf->nlocals) return false;
    *cc = c->fc_cc;
    take_back(c, c->fc_tail);
    return true;
}

static void fophelper(jc *c, uint32_t pos, int op, uint32_t *len) {
    pw_x64 *x = &c->x;
    bool bin = fop_helper[op] == 2;
    *len = bin ? 4 : 3;
    /* after the spill, the operands are read and the result written in the frame
     * (call_end reloads the pins) */
    call_begin(c);
    pw_xmem d = SL(1), a = SL(2), b = bin ? SL(3) : SL(2);
    pw__x64_mov_ri32(x, X_RDI, (uint32_t)op);
    pw__x64_lea(x, true, X_RSI, d);
    pw__x64_lea(x, true, X_RDX, a);
    pw__x64_lea(x, true, X_RCX, b);
    call_got(c, G_FOP);
    pw__x64_test_rr(x, false, X_RAX, X_RAX);
    jcc_to(c, X_CC_NE, special(c, LAB_TRAPC)); /* eax = the trap code */
    call_end(c, 0);
}

/* The extension instruction XOP (interp.h, PW_XOPS: memory64 and multi-memory
 * accesses, table64 index saturation, SIMD). CLAMP32 is inline; every other kind is a
 * call of the interpreter's own helper (pw__interp_xop) on the instruction's words, so
 * both tiers compute the same bits. Operands are read and results written in the
 * frame (call_begin spills the pins, call_end reloads them). memory.grow of such
 * memories is not translated (the function stays on the interpreter): it would have
 * to reload the memory registers. */
/* ---------------------------------------------------------------- SIMD
 * v128 values (two cells, simd.h) in the frame or, when choose_pins gave their
 * first cell a vector pin, in an xmm register for the whole function (docs/jit.md
 * "SIMD"). The templates below ask for operands through vin/vdst/vout (register or
 * scratch xmm0/xmm1) or vmem_in/vmem_done (the frame cells, with a pinned value
 * stored there first and reloaded after), so every template is correct whether its
 * operands are pinned or not. Constants (masks, shuffle controls) are 16-byte
 * aligned literals after the function's code, addressed rip-relative. CPU features
 * beyond SSE2 (SSSE3, SSE4.1) are used only when the module was translated with
 * them (jc.isa); without them the same instruction takes an SSE2 sequence or the
 * interpreter's helper, so plain SSE2 machines are correct. */

/* A v128 operand at word w: its first cell s (s + 1 also in the frame). Pass 1
 * records it as a vector use of s (V_LO) and s + 1 (V_HI); its cells are never
 * scalar-pinned (U_MEM). */
static uint32_t vslot_raw(jc *c, uint32_t w) {
    uint32_t s = c->code[w];
    if ((uint64_t)s + 1 >= c->cf->frame_slots) {
        c->fail = true;
        return 0;
    }
    if (c->analyze) {
        c->use[s] |= U_MEM;
        c->use[s + 1] |= U_MEM;
        c->vuse[s] |= V_LO;
        c->vuse[s + 1] |= V_HI;
        c->has_simd = true;
        note_access(c, s, U_V);
    }
    return s;
}
/* The same, for a template that reads or writes the operand's cells in the frame:
 * cached results over them are stored and forgotten first. */
static uint32_t vslot(jc *c, uint32_t w) {
    uint32_t s = vslot_raw(c, w);
    if (!c->analyze) vc_drop(c, s, s + 1);
    return s;
}
static int vreg_of(jc *c, uint32_t s) {
    return !c->analyze && !c->memonly && c->vpin[s] >= 0 ? c->vpin[s] - PIN_XMM0 : -1;
}
static pw_xmem vcell(uint32_t s) {
    return x_mem(X_RBX, (int32_t)(s * 8));
}
/* [pfx] [REX] 0F [esc] op /r: xmm (or GPR, or extension) `reg`, operand m. */
static void vx(jc *c, int pfx, int esc, uint8_t op, int reg, pw_xmem m) {
    uint8_t ops[3] = {0x0F, esc ? (uint8_t)esc : op, op};
    pw__x64_modrm(&c->x, pfx, false, ops, esc ? 3 : 2, reg, -1, &m, false);
}
static void vrr(jc *c, int pfx, int esc, uint8_t op, int reg, int xr) {
    vx(c, pfx, esc, op, reg, x_xreg(xr));
}
static void movdqu_ld(jc *c, int xr, pw_xmem m) {
    vx(c, 0xF3, 0, 0x6F, xr, m);
}
static void movdqu_st(jc *c, pw_xmem m, int xr) {
    vx(c, 0xF3, 0, 0x7F, xr, m);
}
static void vmov(jc *c, int d, int s) { /* movdqa */
    if (d != s) vrr(c, 0x66, 0, 0x6F, d, s);
}
/* Immediate shift of xmm xr: group 0x71 (words), 0x72 (dwords), 0x73 (qwords), ext
 * 2 psrl, 4 psra, 6 psll (0x73: 3 psrldq, 7 pslldq). */
static void vshift(jc *c, uint8_t group, uint8_t ext, int xr, uint8_t n) {
    vrr(c, 0x66, 0, group, ext, xr);
    pw__x64_byte(&c->x, n);
}
static void pshufd(jc *c, int d, int s, uint8_t imm) {
    vrr(c, 0x66, 0, 0x70, d, s);
    pw__x64_byte(&c->x, imm);
}

/* The pool index of the 16-byte constant (lo, hi), added when new, with room for its
 * use's fixup; false when out of memory (c->fail). */
static bool pool_index(jc *c, uint64_t lo, uint64_t hi, uint32_t *kp) {
    uint32_t k = 0;
    while (k < c->npool && (c->pool[2 * k] != lo || c->pool[2 * k + 1] != hi))
        k++;
    if (k == c->npool) {
        if (!grow((void **)&c->pool, &c->cappool, 2 * (c->npool + 1), sizeof *c->pool)) {
            c->fail = true;
            return false;
        }
        c->pool[2 * k] = lo;
        c->pool[2 * k + 1] = hi;
        c->npool++;
    }
    if (!grow((void **)&c->pfx, &c->cappfx, c->npfx + 1, sizeof *c->pfx)) {
        c->fail = true;
        return false;
    }
    *kp = k;
    return true;
}
/* The 16-byte constant (lo, hi) as the operand of `[pfx] 0F [esc] op xr, m128`:
 * rip-relative to the function's literal pool (run_pass lays it out after the
 * code, 16-byte aligned, so legacy SSE forms may take it; a scalar form reads its
 * low 4 or 8 bytes). */
static void vconst_op(jc *c, int pfx, int esc, uint8_t op, int xr, uint64_t lo, uint64_t hi) {
    uint32_t k;
    if (!pool_index(c, lo, hi, &k)) return;
    size_t at = pw__x64_sse_rip(&c->x, pfx, esc, op, xr);
    c->pfx[c->npfx++] = (fixup){(uint32_t)at, k, 0, 0};
}
/* AVX's `vop xr, vr, [rip + constant]` (scalar, map 0F). */
static void vconst_vex(jc *c, int pfx, uint8_t op, int xr, int vr, uint64_t lo) {
    uint32_t k;
    if (!pool_index(c, lo, 0, &k)) return;
    size_t at = pw__x64_vex_rip(&c->x, pfx, op, xr, vr);
    c->pfx[c->npfx++] = (fixup){(uint32_t)at, k, 0, 0};
}
static uint64_t rep8(uint8_t b) {
    return b * 0x0101010101010101ull;
}
static uint64_t rep16(uint16_t v) {
    return v * 0x0001000100010001ull;
}
/* Literal pool after the code; patches the rip-relative operands. */
static void emit_pool(jc *c) {
    pw_x64 *x = &c->x;
    if (!c->npool) return;
    while (x->len % 16)
        pw__x64_byte(x, 0xCC);
    size_t base = x->len;
    for (uint32_t k = 0; k < 2 * c->npool; k++)
        pw__x64_u64(x, c->pool[k]);
    for (uint32_t k = 0; k < c->npfx; k++)
        pw__x64_patch32(x, c->pfx[k].at,
                        (int32_t)(base + 16 * c->pfx[k].label - (c->pfx[k].at + 4)));
}

/* The operand at word w in an xmm register: its pin, else loaded into scratch. */
static int vin(jc *c, uint32_t w, int scratch) {
    uint32_t s = vslot_raw(c, w);
    int r = vreg_of(c, s);
    if (r >= 0) return r;
    for (int k = 0; k < VC_N && !c->analyze && !c->memonly; k++)
        if (c->vc_slot[k] == s) return VC_REG + k;
    if (!c->analyze) vc_touch(c, s, s + 1);
    movdqu_ld(c, scratch, vcell(s));
    return scratch;
}
/* The operand at word w in a register without a load (its pin or a cached result),
 * else -1 with its cells current in the frame. */
static int vreg_any(jc *c, uint32_t w) {
    uint32_t s = vslot_raw(c, w);
    int r = vreg_of(c, s);
    if (r >= 0 || c->analyze || c->memonly) return r;
    for (int k = 0; k < VC_N; k++)
        if (c->vc_slot[k] == s) return VC_REG + k;
    vc_touch(c, s, s + 1);
    return -1;
}
/* Where to compute the result at word w: its pin, else scratch (then vout). */
static int vdst(jc *c, uint32_t w, int scratch) {
    int r = vreg_of(c, vslot_raw(c, w));
    return r >= 0 ? r : scratch;
}
/* The result: to its pin, or to its cells and, within a run of SIMD instructions
 * (translate and xop clear the cache at anything else, at labels and whenever an
 * instruction wrote cells without vout), to the result cache, replacing any entry
 * that overlaps it. */
static void vout(jc *c, uint32_t w, int r) {
    uint32_t s = vslot_raw(c, w);
    int p = vreg_of(c, s);
    c->vc_set = true;
    if (p >= 0) {
        vmov(c, p, r);
        return;
    }
    if (c->analyze || c->memonly) {
        movdqu_st(c, vcell(s), r);
        return;
    }
    for (int k = 0; k < VC_N; k++) /* the old value of exactly these cells is dead */
        if (c->vc_slot[k] == s) c->vc_slot[k] = UINT32_MAX;
    vc_drop(c, s, s + 1); /* partial overlaps: stored first */
    int k = c->vc_slot[0] == UINT32_MAX ? 0 : c->vc_slot[1] == UINT32_MAX ? 1 : c->vc_next;
    vc_flush_k(c, k); /* the entry replaced */
    c->vc_next = (uint8_t)(k ^ 1);
    vmov(c, VC_REG + k, r);
    c->vc_slot[k] = s;
    c->vc_dirty[k] = true;
}
/* The operand's frame cells, current (a pinned value is stored there first). */
static pw_xmem vmem_in(jc *c, uint32_t w) {
    uint32_t s = vslot(c, w);
    int p = vreg_of(c, s);
    if (p >= 0) movdqu_st(c, vcell(s), p);
    return vcell(s);
}
/* After a template wrote the result's frame cells: reload its pin. */
static void vmem_done(jc *c, uint32_t w) {
    uint32_t s = vslot(c, w);
    int p = vreg_of(c, s);
    if (p >= 0) movdqu_ld(c, p, vcell(s));
}

/* d = a op b, computed in d's pin when b is not there, else in xmm0; imm >= 0: an
 * immediate byte follows (cmpps). */
static void vbin(jc *c, uint32_t pos, int pfx, int esc, uint8_t op, bool swap, int imm) {
    uint32_t wa = pos + (swap ? 5 : 4), wb = pos + (swap ? 4 : 5);
    int rb = vin(c, wb, 1);
    int rd = vdst(c, pos + 3, 0);
    int t = rd != rb ? rd : 0;
    int ra = vin(c, wa, t);
    vmov(c, t, ra);
    vrr(c, pfx, esc, op, t, rb);
    if (imm >= 0) pw__x64_byte(&c->x, (uint8_t)imm);
    vout(c, pos + 3, t);
}

/* Lane-wise binary operators whose x86 instruction computes exactly the Wasm result
 * (the IEEE operations and integer lane arithmetic the interpreter's loops perform).
 * prefix -1: none (ps); swap: computes b op a; isa: needs that feature (esc 0x38). */
typedef struct simd_sse {
    int16_t prefix;
    uint8_t op, swap;
    uint8_t isa;
} simd_sse;

static bool simd_sse_of(uint32_t sub, simd_sse *o) {
    static const struct {
        uint16_t sub;
        simd_sse e;
    } T[] = {
        {0x6E, {0x66, 0xFC, 0, 0}},
        {0x6F, {0x66, 0xEC, 0, 0}},
        {0x70, {0x66, 0xDC, 0, 0}},
        {0x71, {0x66, 0xF8, 0, 0}},
        {0x72, {0x66, 0xE8, 0, 0}},
        {0x73, {0x66, 0xD8, 0, 0}},
        {0x77, {0x66, 0xDA, 0, 0}},
        {0x79, {0x66, 0xDE, 0, 0}},
        {0x7B, {0x66, 0xE0, 0, 0}},
        {0x8E, {0x66, 0xFD, 0, 0}},
        {0x8F, {0x66, 0xED, 0, 0}},
        {0x90, {0x66, 0xDD, 0, 0}},
        {0x91, {0x66, 0xF9, 0, 0}},
        {0x92, {0x66, 0xE9, 0, 0}},
        {0x93, {0x66, 0xD9, 0, 0}},
        {0x95, {0x66, 0xD5, 0, 0}},
        {0x96, {0x66, 0xEA, 0, 0}},
        {0x98, {0x66, 0xEE, 0, 0}},
        {0x9B, {0x66, 0xE3, 0, 0}},
        {0xAE, {0x66, 0xFE, 0, 0}},
        {0xB1, {0x66, 0xFA, 0, 0}},
        {0xBA, {0x66, 0xF5, 0, 0}}, /* i32x4.dot_i16x8_s: pmaddwd */
        {0xCE, {0x66, 0xD4, 0, 0}},
        {0xD1, {0x66, 0xFB, 0, 0}},
        {0x23, {0x66, 0x74, 0, 0}},
        {0x2D, {0x66, 0x75, 0, 0}},
        {0x37, {0x66, 0x76, 0, 0}},
        {0x27, {0x66, 0x64, 0, 0}},
        {0x31, {0x66, 0x65, 0, 0}},
        {0x3B, {0x66, 0x66, 0, 0}},
        {0x25, {0x66, 0x64, 1, 0}},
        {0x2F, {0x66, 0x65, 1, 0}},
        {0x39, {0x66, 0x66, 1, 0}},
        {0x4E, {0x66, 0xDB, 0, 0}},
        {0x4F, {0x66, 0xDF, 1, 0}},
        {0x50, {0x66, 0xEB, 0, 0}},
        {0x51, {0x66, 0xEF, 0, 0}},
        {0xE4, {-1, 0x58, 0, 0}},
        {0xE5, {-1, 0x5C, 0, 0}},
        {0xE6, {-1, 0x59, 0, 0}},
        {0xE7, {-1, 0x5E, 0, 0}},
        {0xF0, {0x66, 0x58, 0, 0}},
        {0xF1, {0x66, 0x5C, 0, 0}},
        {0xF2, {0x66, 0x59, 0, 0}},
        {0xF3, {0x66, 0x5E, 0, 0}},
        /* pmin/pmax: b < a ? b : a and a < b ? b : a are minps/maxps with the
         * operands swapped (x86 returns its second operand when unordered or equal) */
        {0xEA, {-1, 0x5D, 1, 0}},
        {0xEB, {-1, 0x5F, 1, 0}},
        {0xF6, {0x66, 0x5D, 1, 0}},
        {0xF7, {0x66, 0x5F, 1, 0}},
        /* narrowing with signed saturation (packsswb, packssdw) and signed words to
         * unsigned bytes (packuswb): a's lanes first, then b's, as in Wasm */
        {0x65, {0x66, 0x63, 0, 0}},
        {0x66, {0x66, 0x67, 0, 0}},
        {0x85, {0x66, 0x6B, 0, 0}},
        /* SSE4.1: pminsb/pmaxsb, pminuw/pmaxuw, pmin/pmax s/u d, pmulld, packusdw,
         * pcmpeqq */
        {0x76, {0x66, 0x38, 0, ISA_SSE41}},
        {0x78, {0x66, 0x3C, 0, ISA_SSE41}},
        {0x97, {0x66, 0x3A, 0, ISA_SSE41}},
        {0x99, {0x66, 0x3E, 0, ISA_SSE41}},
        {0xB6, {0x66, 0x39, 0, ISA_SSE41}},
        {0xB7, {0x66, 0x3B, 0, ISA_SSE41}},
        {0xB8, {0x66, 0x3D, 0, ISA_SSE41}},
        {0xB9, {0x66, 0x3F, 0, ISA_SSE41}},
        {0xB5, {0x66, 0x40, 0, ISA_SSE41}},
        {0x86, {0x66, 0x2B, 0, ISA_SSE41}},
        {0xD6, {0x66, 0x29, 0, ISA_SSE41}},
    };
    for (size_t i = 0; i < sizeof T / sizeof T[0]; i++)
        if (T[i].sub == sub) {
            *o = T[i].e;
            return true;
        }
    return false;
}

/* Bounds-checked address of a memory access of `width` bytes at the SIMD
 * instruction at pos (address operand at word 4) in the i32 memory 0: the scalar
 * accesses' check against r13 (ea + width computed in 64 bits), rax = the address.
 * False: another memory or a 64-bit offset (the helper does those). */
static bool vaddr(jc *c, uint32_t pos, uint32_t width, pw_xmem *m) {
    pw_x64 *x = &c->x;
    if (IMM(7) != 0 || IMM(9) != 0 || c->m->nmems == 0 || c->m->mems[0].is64) return false;
    ld(c, false, X_RAX, SL(4));
    uint32_t off = IMM(8);
    int32_t disp = 0;
    if (off <= INT32_MAX - 16) {
        disp = (int32_t)off;
    } else {
        pw__x64_mov_ri32(x, X_RDX, off);
        pw__x64_alu_rr(x, X_ADD, true, X_RAX, X_RDX);
    }
    bounds_check(c, X_RAX, disp + (int32_t)width);
    *m = x_memi(X_R12, X_RAX, 1, disp);
    return true;
}

/* xmm t = the integer in GPR r (bytes 1, 2, 4, 8) in every lane. */
static void vsplat_gpr(jc *c, int t, int r, int bytes) {
    pw__x64_sse_rr(&c->x, 0x66, X_SSE_MOVD, bytes == 8, t, r);
    if (bytes == 8) {
        vrr(c, 0x66, 0, 0x6C, t, t); /* punpcklqdq */
        return;
    }
    if (bytes == 1) vrr(c, 0x66, 0, 0x60, t, t); /* punpcklbw */
    if (bytes <= 2) vrr(c, 0x66, 0, 0x61, t, t); /* punpcklwd */
    pshufd(c, t, t, 0);
}

/* Lane k of xmm register a (bytes 1, 2, 4, 8) into GPR r, zero-extended. False when
 * it needs SSE4.1 that the module may not use (then the caller reads the cells). */
static bool vextract(jc *c, int r, int a, int bytes, uint32_t k) {
    pw_x64 *x = &c->x;
    switch (bytes) {
    case 1:
        if (c->isa & ISA_SSE41) {
            vrr(c, 0x66, 0x3A, 0x14, a, r); /* pextrb r32, xmm, k */
            pw__x64_byte(x, (uint8_t)k);
            return true;
        }
        vrr(c, 0x66, 0, 0xC5, r, a); /* pextrw r32, xmm, k / 2 */
        pw__x64_byte(x, (uint8_t)(k / 2));
        if (k & 1) pw__x64_shift_i(x, X_SHR, false, r, 8);
        pw__x64_movzx8(x, r, r);
        return true;
    case 2:
        vrr(c, 0x66, 0, 0xC5, r, a);
        pw__x64_byte(x, (uint8_t)k);
        return true;
    case 4:
        if (k) {
            pshufd(c, 0, a, (uint8_t)k);
            a = 0;
        }
        pw__x64_sse_rr(x, 0x66, X_SSE_MOVDST, false, a, r);
        return true;
    default:
        if (k) {
            pshufd(c, 0, a, 0xEE);
            a = 0;
        }
        pw__x64_sse_rr(x, 0x66, X_SSE_MOVDST, true, a, r);
        return true;
    }
}

/* Lane k of xmm register t (bytes 1, 2, 4, 8) = GPR r. False: not possible without
 * SSE4.1 (then the caller writes the cells). Uses xmm1 for 8-byte lanes. */
static bool vinsert(jc *c, int t, int r, int bytes, uint32_t k) {
    pw_x64 *x = &c->x;
    if (bytes == 2) {
        vrr(c, 0x66, 0, 0xC4, t, r); /* pinsrw xmm, r32, k */
        pw__x64_byte(x, (uint8_t)k);
        return true;
    }
    if (bytes == 8 && !(c->isa & ISA_SSE41)) {
        pw__x64_sse_rr(x, 0x66, X_SSE_MOVD, true, 1, r);
        if (k)
            vrr(c, 0x66, 0, 0x6C, t, 1); /* punpcklqdq: the high lane */
        else
            vrr(c, 0xF2, 0, 0x10, t, 1); /* movsd xmm, xmm: the low lane */
        return true;
    }
    if (!(c->isa & ISA_SSE41)) return false;
    uint8_t ops[3] = {0x0F, 0x3A, bytes == 1 ? 0x20 : 0x22}; /* pinsrb, pinsrd/q */
    pw__x64_modrm(x, 0x66, bytes == 8, ops, 3, t, r, NULL, false);
    pw__x64_byte(x, (uint8_t)k);
    return true;
}

/* Sign or zero extension of the low 8 bytes of xmm t to lanes twice as wide (from
 * = 1, 2, 4 bytes). Uses xmm1. */
static void vextend(jc *c, int t, int from, bool sign) {
    if (c->isa & ISA_SSE41) { /* pmovsx/pmovzx bw, wd, dq */
        uint8_t op = (uint8_t)((sign ? 0x20 : 0x30) + (from == 1 ? 0 : from == 2 ? 3 : 5));
        vrr(c, 0x66, 0x38, op, t, t);
        return;
    }
    uint8_t unpack = from == 1 ? 0x60 : from == 2 ? 0x61 : 0x62;
    if (!sign) {
        vrr(c, 0x66, 0, 0xEF, 1, 1); /* pxor xmm1, xmm1 */
        vrr(c, 0x66, 0, unpack, t, 1);
    } else if (from < 4) { /* each lane doubled, then shifted back arithmetically */
        vrr(c, 0x66, 0, unpack, t, t);
        vshift(c, from == 1 ? 0x71 : 0x72, 4, t, (uint8_t)(from * 8));
    } else { /* the sign of each dword beside it */
        vmov(c, 1, t);
        vshift(c, 0x72, 4, 1, 31);
        vrr(c, 0x66, 0, 0x62, t, 1);
    }
}

/* v128 loads and stores of the i32 memory 0: plain, extending, splat, zero-filling,
 * lane. False: not one of them, or another memory (helper). */
static bool simd_mem(jc *c, uint32_t pos, uint32_t sub) {
    pw_x64 *x = &c->x;
    pw_xmem m;
    if (sub > 0x0B && (sub < 0x54 || sub > 0x5D)) return false;
    if (IMM(7) != 0 || IMM(9) != 0 || c->m->nmems == 0 || c->m->mems[0].is64) return false;
    if (sub == 0x00 || (sub >= 0x01 && sub <= 0x06) || sub == 0x5C || sub == 0x5D) {
        uint32_t w = sub == 0x00 ? 16 : sub == 0x5C ? 4 : 8;
        if (!vaddr(c, pos, w, &m)) return false;
        int t = vdst(c, pos + 3, 0);
        if (w == 16)
            movdqu_ld(c, t, m);
        else if (w == 4)
            vx(c, 0x66, 0, X_SSE_MOVD, t, m); /* movd xmm, m32 */
        else
            vx(c, 0xF3, 0, 0x7E, t, m); /* movq xmm, m64 */
        if (sub >= 0x01 && sub <= 0x06)
            vextend(c, t, sub <= 0x02 ? 1 : sub <= 0x04 ? 2 : 4, sub & 1);
        vout(c, pos + 3, t);
        return true;
    }
    if (sub >= 0x07 && sub <= 0x0A) { /* load splats */
        static const uint8_t LD[4] = {X_LD8U, X_LD16U, X_LD32, X_LD64};
        int bytes = 1 << (sub - 0x07);
        if (!vaddr(c, pos, (uint32_t)bytes, &m)) return false;
        pw__x64_load(x, (pw_xld)LD[sub - 0x07], X_RCX, m);
        int t = vdst(c, pos + 3, 0);
        vsplat_gpr(c, t, X_RCX, bytes);
        vout(c, pos + 3, t);
        return true;
    }
    if (sub == 0x0B) {
        int r = vin(c, pos + 5, 0);
        if (!vaddr(c, pos, 16, &m)) return false;
        movdqu_st(c, m, r);
        return true;
    }
    if (sub >= 0x54 && sub <= 0x5B) { /* load_lane / store_lane */
        static const uint8_t LD[4] = {X_LD8U, X_LD16U, X_LD32, X_LD64};
        int bytes = 1 << ((sub - 0x54) & 3);
        uint32_t k = IMM(10) & (16u / (uint32_t)bytes - 1);
        if (sub >= 0x58) {
            int a = vin(c, pos + 5, 0);
            vextract(c, X_RCX, a, bytes, k);
            if (!vaddr(c, pos, (uint32_t)bytes, &m)) return false;
            pw__x64_store(x, bytes, m, X_RCX);
            return true;
        }
        if (!vaddr(c, pos, (uint32_t)bytes, &m)) return false;
        pw__x64_load(x, (pw_xld)LD[(sub - 0x54) & 3], X_RCX, m);
        if ((bytes != 1 && bytes != 4) || (c->isa & ISA_SSE41)) {
            int t = vdst(c, pos + 3, 0);
            vmov(c, t, vin(c, pos + 5, t));
            vinsert(c, t, X_RCX, bytes, k);
            vout(c, pos + 3, t);
        } else {
            pw_xmem a = vmem_in(c, pos + 5), d = vcell(vslot(c, pos + 3));
            movdqu_ld(c, 0, a);
            movdqu_st(c, d, 0);
            d.disp += (int32_t)(k * (uint32_t)bytes);
            pw__x64_store(x, bytes, d, X_RCX);
            vmem_done(c, pos + 3);
        }
        return true;
    }
    return false;
}

/* extract_lane, replace_lane, splat: lanes to and from scalar slots. */
static bool simd_lane(jc *c, uint32_t pos, uint32_t sub) {
    pw_x64 *x = &c->x;
    static const struct {
        uint8_t sub, bytes, sign, w;
    } EX[] = {{0x15, 1, 1, 0}, {0x16, 1, 0, 0}, {0x18, 2, 1, 0}, {0x19, 2, 0, 0},
              {0x1B, 4, 0, 0}, {0x1F, 4, 0, 0}, {0x1D, 8, 0, 1}, {0x21, 8, 0, 1}};
    for (size_t i = 0; i < sizeof EX / sizeof EX[0]; i++) {
        if (EX[i].sub != sub) continue;
        uint32_t k = IMM(10) & (16u / EX[i].bytes - 1);
        uint32_t s = vslot_raw(c, pos + 4);
        int a = vreg_any(c, pos + 4);
        if (a >= 0) {
            vextract(c, X_RAX, a, EX[i].bytes, k);
            if (EX[i].sign) pw__x64_movsx_rr(x, EX[i].bytes, false, X_RAX, X_RAX);
        } else {
            static const uint8_t LD[2][4] = {{X_LD8U, X_LD16U, X_LD32, X_LD64},
                                             {X_LD8S, X_LD16S, X_LD32, X_LD64}};
            pw_xmem m = vcell(s);
            m.disp += (int32_t)(k * EX[i].bytes);
            int li = EX[i].bytes == 1 ? 0 : EX[i].bytes == 2 ? 1 : EX[i].bytes == 4 ? 2 : 3;
            pw__x64_load(x, (pw_xld)LD[EX[i].sign][li], X_RAX, m);
        }
        st(c, EX[i].w, SL(3), X_RAX);
        return true;
    }
    static const struct {
        uint8_t sub, w, bytes;
    } RP[] = {{0x17, 0, 1}, {0x1A, 0, 2}, {0x1C, 0, 4}, {0x20, 0, 4}, {0x1E, 1, 8}, {0x22, 1, 8}};
    for (size_t i = 0; i < sizeof RP / sizeof RP[0]; i++) {
        if (RP[i].sub != sub) continue;
        uint32_t k = IMM(10) & (16u / RP[i].bytes - 1);
        ld(c, RP[i].w, X_RCX, SL(5));
        bool reg = RP[i].bytes == 2 || RP[i].bytes == 8 || (c->isa & ISA_SSE41);
        if (reg) {
            int t = vdst(c, pos + 3, 0);
            vmov(c, t, vin(c, pos + 4, t));
            vinsert(c, t, X_RCX, RP[i].bytes, k);
            vout(c, pos + 3, t);
        } else {
            pw_xmem a = vmem_in(c, pos + 4), d = vcell(vslot(c, pos + 3));
            movdqu_ld(c, 0, a);
            movdqu_st(c, d, 0);
            d.disp += (int32_t)(k * RP[i].bytes);
            pw__x64_store(x, RP[i].bytes, d, X_RCX);
            vmem_done(c, pos + 3);
        }
        return true;
    }
    if (sub >= 0x0F && sub <= 0x14) { /* splats */
        static const uint8_t B[6] = {1, 2, 4, 8, 4, 8};
        int bytes = B[sub - 0x0F];
        ld(c, bytes == 8, X_RAX, SL(4));
        int t = vdst(c, pos + 3, 0);
        vsplat_gpr(c, t, X_RAX, bytes);
        vout(c, pos + 3, t);
        return true;
    }
    return false;
}

/* i8x16.shuffle and swizzle: pshufb with SSSE3 (controls from the literal pool;
 * swizzle's out-of-range indices saturated to >= 0x80 by paddusb 0x70, which pshufb
 * turns into zero); without it the shuffle gathers bytes from the cells into rax and
 * rdx. False: swizzle without SSSE3 (helper). */
static bool simd_shuffle(jc *c, uint32_t pos, uint32_t sub) {
    pw_x64 *x = &c->x;
    if (sub == 0x0E) {
        if (!(c->isa & ISA_SSSE3)) return false;
        int rb = vin(c, pos + 5, 1);
        vmov(c, 1, rb);
        vconst_op(c, 0x66, 0, 0xDC, 1, rep8(0x70), rep8(0x70)); /* paddusb */
        int t = vdst(c, pos + 3, 0);
        if (t == 1) t = 0;
        vmov(c, t, vin(c, pos + 4, t));
        vrr(c, 0x66, 0x38, 0x00, t, 1); /* pshufb */
        vout(c, pos + 3, t);
        return true;
    }
    if (sub != 0x0D) return false;
    uint8_t k[16];
    for (int i = 0; i < 16; i++)
        k[i] = (uint8_t)((IMM(7 + i / 4) >> (8 * (i % 4))) & 31);
    if (c->isa & ISA_SSSE3) {
        uint64_t ma[2] = {0, 0}, mb[2] = {0, 0};
        bool usea = false, useb = false;
        for (int i = 0; i < 16; i++) {
            uint64_t va = k[i] < 16 ? k[i] : 0x80, vb = k[i] >= 16 ? k[i] - 16u : 0x80;
            usea |= k[i] < 16;
            useb |= k[i] >= 16;
            ma[i / 8] |= va << (8 * (i % 8));
            mb[i / 8] |= vb << (8 * (i % 8));
        }
        int t = vdst(c, pos + 3, 0);
        if (useb) {
            int rb = vin(c, pos + 5, 1);
            vmov(c, 1, rb);
            vconst_op(c, 0x66, 0x38, 0x00, 1, mb[0], mb[1]);
            if (t == 1) t = 0;
        }
        if (usea) {
            vmov(c, t, vin(c, pos + 4, t));
            vconst_op(c, 0x66, 0x38, 0x00, t, ma[0], ma[1]);
            if (useb) vrr(c, 0x66, 0, 0xEB, t, 1); /* por */
        } else {
            t = 1;
        }
        vout(c, pos + 3, t);
        return true;
    }
    pw_xmem a = vmem_in(c, pos + 4), b = vmem_in(c, pos + 5), d = vcell(vslot(c, pos + 3));
    pw__x64_alu_rr(x, X_XOR, false, X_RAX, X_RAX);
    pw__x64_alu_rr(x, X_XOR, false, X_RDX, X_RDX);
    for (int i = 0; i < 16; i++) {
        pw_xmem src = k[i] < 16 ? a : b;
        src.disp += (int32_t)(k[i] & 15);
        pw__x64_load(x, X_LD8U, X_RCX, src);
        if (i % 8) pw__x64_shift_i(x, X_SHL, true, X_RCX, (uint8_t)(8 * (i % 8)));
        pw__x64_alu_rr(x, X_OR, true, i < 8 ? X_RAX : X_RDX, X_RCX);
    }
    pw__x64_store(x, 8, d, X_RAX);
    d.disp += 8;
    pw__x64_store(x, 8, d, X_RDX);
    vmem_done(c, pos + 3);
    return true;
}

/* Shifts by an i32 count taken modulo the lane width (x86 would zero the lanes for
 * a count >= width): psll/psrl/psra with the count in xmm1; i8x16 has no x86 shift:
 * word shifts with the bits that crossed a byte masked off (shr_s: shr_u of a ^ 0x80
 * minus 0x80 >> n). */
static bool simd_shift(jc *c, uint32_t pos, uint32_t sub) {
    pw_x64 *x = &c->x;
    static const struct {
        uint8_t sub, op, mask;
    } SH[] = {
        {0x6B, 0xF1, 7},  {0x6C, 0xD1, 7},  {0x6D, 0xD1, 7},  {0x8B, 0xF1, 15},
        {0x8C, 0xE1, 15}, {0x8D, 0xD1, 15}, {0xAB, 0xF2, 31}, {0xAC, 0xE2, 31},
        {0xAD, 0xD2, 31}, {0xCB, 0xF3, 63}, {0xCD, 0xD3, 63},
    };
    for (size_t i = 0; i < sizeof SH / sizeof SH[0]; i++) {
        if (SH[i].sub != sub) continue;
        if (c->lc_end == pos && c->lc_slot == IMM(5) && (!c->target || !c->target[pos])) {
            /* the count is the constant just written: an immediate shift */
            uint8_t n = (uint8_t)(c->lc_val & SH[i].mask), op = SH[i].op;
            uint8_t ext = (op & 0xF0) == 0xF0 ? 6 : (op & 0xF0) == 0xE0 ? 4 : 2;
            int t = vdst(c, pos + 3, 0);
            vmov(c, t, vin(c, pos + 4, t));
            if (sub >= 0x6B && sub <= 0x6D) {
                if (sub == 0x6C) vconst_op(c, 0x66, 0, 0xEF, t, rep8(0x80), rep8(0x80));
                vshift(c, 0x71, ext, t, n);
                uint8_t mk = sub == 0x6B ? (uint8_t)(0xFF << n) : (uint8_t)(0xFF >> n);
                vconst_op(c, 0x66, 0, 0xDB, t, rep8(mk), rep8(mk)); /* pand */
                if (sub == 0x6C) {
                    uint8_t b = (uint8_t)(0x80 >> n);
                    vconst_op(c, 0x66, 0, 0xF8, t, rep8(b), rep8(b)); /* psubb */
                }
            } else if (n) {
                vshift(c, (uint8_t)(0x70 + (op & 0x0F)), ext, t, n); /* 0x71-0x73 */
            }
            vout(c, pos + 3, t);
            return true;
        }
        ld(c, false, X_RCX, SL(5));
        pw__x64_alu_ri(x, X_AND, false, X_RCX, SH[i].mask);
        int t = vdst(c, pos + 3, 0);
        if (t == 1) t = 0;
        vmov(c, t, vin(c, pos + 4, t));
        if (sub == 0x6C) vconst_op(c, 0x66, 0, 0xEF, t, rep8(0x80), rep8(0x80)); /* pxor */
        pw__x64_sse_rr(x, 0x66, X_SSE_MOVD, false, 1, X_RCX);
        vrr(c, 0x66, 0, SH[i].op, t, 1);
        if (sub >= 0x6B && sub <= 0x6D) {
            /* the byte mask 0xFF << n or 0xFF >> n in every byte */
            pw__x64_mov_ri32(x, X_RAX, 0xFF);
            pw__x64_shift_cl(x, sub == 0x6B ? X_SHL : X_SHR, false, X_RAX);
            pw__x64_movzx8(x, X_RAX, X_RAX);
            pw__x64_imul_rri(x, false, X_RAX, X_RAX, 0x01010101);
            pw__x64_sse_rr(x, 0x66, X_SSE_MOVD, false, 1, X_RAX);
            pshufd(c, 1, 1, 0);
            vrr(c, 0x66, 0, 0xDB, t, 1); /* pand */
            if (sub == 0x6C) {           /* minus 0x80 >> n */
                pw__x64_mov_ri32(x, X_RAX, 0x80);
                pw__x64_shift_cl(x, X_SHR, false, X_RAX);
                pw__x64_imul_rri(x, false, X_RAX, X_RAX, 0x01010101);
                pw__x64_sse_rr(x, 0x66, X_SSE_MOVD, false, 1, X_RAX);
                pshufd(c, 1, 1, 0);
                vrr(c, 0x66, 0, 0xF8, t, 1); /* psubb */
            }
        }
        vout(c, pos + 3, t);
        return true;
    }
    return false;
}

/* One-operand instructions: not, abs, neg, extensions, conversions, bitmasks. */
static bool simd_unary(jc *c, uint32_t pos, uint32_t sub) {
    pw_x64 *x = &c->x;
    /* float abs/neg and v128.not: and/xor with a mask */
    static const struct {
        uint8_t sub, op;
        uint64_t m;
    } MK[] = {{0x4D, 0xEF, ~0ull},
              {0xE0, 0xDB, 0x7FFFFFFF7FFFFFFFull},
              {0xE1, 0xEF, 0x8000000080000000ull},
              {0xEC, 0xDB, 0x7FFFFFFFFFFFFFFFull},
              {0xED, 0xEF, 0x8000000000000000ull}};
    for (size_t i = 0; i < sizeof MK / sizeof MK[0]; i++) {
        if (MK[i].sub != sub) continue;
        int t = vdst(c, pos + 3, 0);
        vmov(c, t, vin(c, pos + 4, t));
        vconst_op(c, 0x66, 0, MK[i].op, t, MK[i].m, MK[i].m);
        vout(c, pos + 3, t);
        return true;
    }
    /* integer neg: 0 - a */
    if (sub == 0x61 || sub == 0x81 || sub == 0xA1 || sub == 0xC1) {
        static const uint8_t SUBOP[4] = {0xF8, 0xF9, 0xFA, 0xFB};
        int a = vin(c, pos + 4, 1);
        int t = vdst(c, pos + 3, 0);
        if (t == a) t = 0;
        vrr(c, 0x66, 0, 0xEF, t, t);
        vrr(c, 0x66, 0, SUBOP[(sub - 0x61) / 0x20], t, a);
        vout(c, pos + 3, t);
        return true;
    }
    /* integer abs: pabsb/w/d (SSSE3); SSE2: min_u(a, -a) for bytes, max_s(a, -a)
     * for words, (a ^ s) - s with s the sign for dwords */
    if (sub == 0x60 || sub == 0x80 || sub == 0xA0) {
        int a = vin(c, pos + 4, 1);
        int t = vdst(c, pos + 3, 0);
        if (c->isa & ISA_SSSE3) {
            vrr(c, 0x66, 0x38, sub == 0x60 ? 0x1C : sub == 0x80 ? 0x1D : 0x1E, t, a);
        } else if (sub != 0xA0) {
            if (t == a) t = 0;
            vrr(c, 0x66, 0, 0xEF, t, t);
            vrr(c, 0x66, 0, sub == 0x60 ? 0xF8 : 0xF9, t, a);
            vrr(c, 0x66, 0, sub == 0x60 ? 0xDA : 0xEE, t, a);
        } else {
            if (a != 1) vmov(c, 1, a);
            if (t == 1) t = 0;
            vmov(c, t, 1);
            vshift(c, 0x72, 4, t, 31); /* t = sign */
            vrr(c, 0x66, 0, 0xEF, 1, t);
            vrr(c, 0x66, 0, 0xFA, 1, t); /* psubd */
            t = 1;
        }
        vout(c, pos + 3, t);
        return true;
    }
    /* extensions: low half as is, high half moved down first (psrldq 8) */
    static const struct {
        uint8_t sub, from, sign, high;
    } EXT[] = {{0x87, 1, 1, 0}, {0x88, 1, 1, 1}, {0x89, 1, 0, 0}, {0x8A, 1, 0, 1},
               {0xA7, 2, 1, 0}, {0xA8, 2, 1, 1}, {0xA9, 2, 0, 0}, {0xAA, 2, 0, 1},
               {0xC7, 4, 1, 0}, {0xC8, 4, 1, 1}, {0xC9, 4, 0, 0}, {0xCA, 4, 0, 1}};
    for (size_t i = 0; i < sizeof EXT / sizeof EXT[0]; i++) {
        if (EXT[i].sub != sub) continue;
        int t = vdst(c, pos + 3, 0);
        if (t == 1) t = 0;
        vmov(c, t, vin(c, pos + 4, t));
        if (EXT[i].high) vshift(c, 0x73, 3, t, 8);
        vextend(c, t, EXT[i].from, EXT[i].sign);
        vout(c, pos + 3, t);
        return true;
    }
    /* conversions the interpreter's C casts compile to on x86-64: cvtdq2ps,
     * cvtdq2pd, cvtps2pd, cvtpd2ps (which zeroes the high lanes) */
    static const struct {
        uint8_t sub;
        int16_t pfx;
        uint8_t op;
    } CV[] = {{0xFA, -1, 0x5B}, {0xFE, 0xF3, 0xE6}, {0x5F, -1, 0x5A}, {0x5E, 0x66, 0x5A}};
    for (size_t i = 0; i < sizeof CV / sizeof CV[0]; i++) {
        if (CV[i].sub != sub) continue;
        int a = vin(c, pos + 4, 1);
        int t = vdst(c, pos + 3, 0);
        vrr(c, CV[i].pfx, 0, CV[i].op, t, a);
        vout(c, pos + 3, t);
        return true;
    }
    /* bitmasks and any/all_true: pmovmskb/movmskps/movmskpd into eax */
    if (sub == 0x64 || sub == 0x84 || sub == 0xA4 || sub == 0xC4 || sub == 0x53 || sub == 0x63 ||
        sub == 0x83 || sub == 0xA3) {
        int a = vin(c, pos + 4, 0);
        switch (sub) {
        case 0x64: vrr(c, 0x66, 0, 0xD7, X_RAX, a); break;
        case 0x84:
            vmov(c, 0, a);
            vrr(c, 0x66, 0, 0x63, 0, 0); /* packsswb: the sign of each word */
            vrr(c, 0x66, 0, 0xD7, X_RAX, 0);
            pw__x64_alu_ri(x, X_AND, false, X_RAX, 0xFF);
            break;
        case 0xA4: vrr(c, -1, 0, 0x50, X_RAX, a); break;
        case 0xC4: vrr(c, 0x66, 0, 0x50, X_RAX, a); break;
        default: { /* lanes equal to zero, as a byte mask */
            uint8_t eq = sub == 0x83 ? 0x75 : sub == 0xA3 ? 0x76 : 0x74;
            vrr(c, 0x66, 0, 0xEF, 1, 1);
            vrr(c, 0x66, 0, eq, 1, a);
            vrr(c, 0x66, 0, 0xD7, X_RAX, 1);
            if (sub == 0x53) { /* any_true: some byte is not zero */
                pw__x64_alu_ri(x, X_CMP, false, X_RAX, 0xFFFF);
                pw__x64_setcc(x, X_CC_NE, X_RAX);
            } else { /* all_true: no lane is zero */
                pw__x64_test_rr(x, false, X_RAX, X_RAX);
                pw__x64_setcc(x, X_CC_E, X_RAX);
            }
            pw__x64_movzx8(x, X_RAX, X_RAX);
            break;
        }
        }
        st(c, false, SL(3), X_RAX);
        return true;
    }
    return false;
}

/* Words: [XOP, SIMD, sub, dst, a, b, c, x0..x3]. False: not inline (call the helper). */
static bool simd_inline(jc *c, uint32_t pos) {
    pw_x64 *x = &c->x;
    uint32_t sub = IMM(2);
    simd_sse o;
    if (simd_mem(c, pos, sub) || simd_lane(c, pos, sub) || simd_shuffle(c, pos, sub) ||
        simd_shift(c, pos, sub) || simd_unary(c, pos, sub))
        return true;
    if (c->fail) return true;
    /* integer compares of i8/i16/i32 lanes: pcmpeq or pcmpgt (operands swapped for
     * lt/ge), unsigned ones with both operands' sign bits flipped first, ne/le/ge
     * as the complement */
    if (sub >= 0x23 && sub <= 0x40) {
        uint32_t lane = (sub - 0x23) / 10, kind = (sub - 0x23) % 10;
        static const uint16_t SWAP = 0x30C, BIAS = 0x2A8, NOT = 0x3C2, EQ = 0x003;
        bool swap = SWAP >> kind & 1, bias = BIAS >> kind & 1, inv = NOT >> kind & 1;
        uint64_t sb = lane == 0 ? rep8(0x80) : lane == 1 ? rep16(0x8000) : 0x8000000080000000ull;
        uint8_t op = (uint8_t)((EQ >> kind & 1 ? 0x74 : 0x64) + lane);
        uint32_t wa = pos + (swap ? 5 : 4), wb = pos + (swap ? 4 : 5);
        int rb = vin(c, wb, 1);
        if (bias) {
            vmov(c, 1, rb);
            vconst_op(c, 0x66, 0, 0xEF, 1, sb, sb);
            rb = 1;
        }
        int rd = vdst(c, pos + 3, 0);
        int t = rd != rb ? rd : 0;
        vmov(c, t, vin(c, wa, t));
        if (bias) vconst_op(c, 0x66, 0, 0xEF, t, sb, sb);
        vrr(c, 0x66, 0, op, t, rb);
        if (inv) vconst_op(c, 0x66, 0, 0xEF, t, ~0ull, ~0ull);
        vout(c, pos + 3, t);
        return true;
    }
    /* float compares: cmpps/cmppd with eq 0, lt 1, le 2, neq 4 (true for NaN, as
     * Wasm's ne); gt and ge are lt and le with the operands swapped */
    static const struct {
        uint8_t sub, pd, pred, swap;
    } FC[] = {{0x41, 0, 0, 0}, {0x42, 0, 4, 0}, {0x43, 0, 1, 0}, {0x44, 0, 1, 1},
              {0x45, 0, 2, 0}, {0x46, 0, 2, 1}, {0x47, 1, 0, 0}, {0x48, 1, 4, 0},
              {0x49, 1, 1, 0}, {0x4A, 1, 1, 1}, {0x4B, 1, 2, 0}, {0x4C, 1, 2, 1}};
    for (size_t i = 0; i < sizeof FC / sizeof FC[0]; i++) {
        if (FC[i].sub != sub) continue;
        vbin(c, pos, FC[i].pd ? 0x66 : -1, 0, 0xC2, FC[i].swap, FC[i].pred);
        return true;
    }
    if (sub == 0x52) { /* bitselect: b ^ ((a ^ b) & m) */
        int rb = vin(c, pos + 5, 1);
        vmov(c, 1, rb);
        int t = vdst(c, pos + 3, 0);
        if (t == 1) t = 0;
        uint32_t sd = vslot(c, pos + 3), sb = vslot(c, pos + 5), sm = vslot(c, pos + 6);
        if (sd == sb || sd == sm) t = 0; /* t is written before b and m are read */
        vmov(c, t, vin(c, pos + 4, t));
        vrr(c, 0x66, 0, 0xEF, t, 1);
        int rm = vreg_of(c, sm);
        if (rm >= 0) {
            vrr(c, 0x66, 0, 0xDB, t, rm);
        } else {
            movdqu_ld(c, 1, vcell(sm));
            vrr(c, 0x66, 0, 0xDB, t, 1);
            vmov(c, 1, vin(c, pos + 5, 1));
        }
        vrr(c, 0x66, 0, 0xEF, t, 1);
        vout(c, pos + 3, t);
        return true;
    }
    if (sub == 0xD5) { /* i64x2.mul: two imuls of the cells */
        pw_xmem a = vmem_in(c, pos + 4), b = vmem_in(c, pos + 5), d = vcell(vslot(c, pos + 3));
        pw_xmem a1 = a, b1 = b, d1 = d;
        a1.disp += 8, b1.disp += 8, d1.disp += 8;
        static const uint8_t IMUL[2] = {0x0F, 0xAF}; /* imul r64, m64 */
        pw__x64_load(x, X_LD64, X_RAX, a);
        pw__x64_load(x, X_LD64, X_RCX, a1);
        pw__x64_modrm(x, -1, true, IMUL, 2, X_RAX, -1, &b, false);
        pw__x64_modrm(x, -1, true, IMUL, 2, X_RCX, -1, &b1, false);
        pw__x64_store(x, 8, d, X_RAX);
        pw__x64_store(x, 8, d1, X_RCX);
        vmem_done(c, pos + 3);
        return true;
    }
    if (sub == 0x82 && (c->isa & ISA_SSSE3)) { /* q15mulr_sat_s: pmulhrsw, 0x8000 -> 0x7fff */
        vbin(c, pos, 0x66, 0x38, 0x0B, false, -1);
        int t = vdst(c, pos + 3, 0);
        if (vreg_of(c, vslot(c, pos + 3)) < 0) movdqu_ld(c, 0, vcell(vslot(c, pos + 3)));
        vmov(c, 1, t);
        vconst_op(c, 0x66, 0, 0x75, 1, rep16(0x8000), rep16(0x8000)); /* pcmpeqw */
        vrr(c, 0x66, 0, 0xEF, t, 1);
        vout(c, pos + 3, t);
        return true;
    }
    if (!simd_sse_of(sub, &o) || (o.isa & ~c->isa)) return false;
    vbin(c, pos, o.prefix, o.isa ? 0x38 : 0, o.op, o.swap, -1);
    return true;
}

/* A v128 moved whole by the compiler's scalar moves: COPY2 d, s, d+1, s+1 (two
 * non-overlapping pairs) or two constants into s and s+1. Pass 1 records them (the
 * cells' accesses are V_PAIR_*, not V_OTHER, so the value can still be
 * vector-pinned); pass 2 moves the value in an xmm register when a side is
 * vector-pinned, or in a function with SIMD when no cell is scalar-pinned (a later
 * 16-byte load then finds one 16-byte store to forward from, not two halves). */
static bool vpair_ok(jc *c, uint32_t s) {
    return c->pin[s] < 0 && c->pin[s + 1] < 0;
}
static bool vpair_note(jc *c, uint32_t a, uint32_t b, uint32_t p2) {
    if (!grow((void **)&c->vpairs, &c->capvpairs, c->nvpairs + 3, sizeof *c->vpairs)) {
        c->fail = true;
        return false;
    }
    c->vpairs[c->nvpairs++] = a;
    c->vpairs[c->nvpairs++] = b;
    c->vpairs[c->nvpairs++] = p2;
    c->nov = true; /* the scalar path that follows records no V_OTHER */
    return false;
}
static bool vpair_copy(jc *c, uint32_t pos) {
    uint64_t d = IMM(1), s = IMM(2), ns = c->cf->frame_slots;
    if (IMM(3) + 1 == d && IMM(4) + 1 == s) { /* the high cells first */
        d = IMM(3);
        s = IMM(4);
    } else if (IMM(3) != d + 1 || IMM(4) != s + 1) {
        return false;
    }
    if (d + 1 >= ns || s + 1 >= ns || (d < s + 2 && s < d + 2)) return false;
    if (c->analyze) {
        c->vuse[d] |= V_PAIR_LO;
        c->vuse[d + 1] |= V_PAIR_HI;
        c->vuse[s] |= V_PAIR_LO;
        c->vuse[s + 1] |= V_PAIR_HI;
        return vpair_note(c, (uint32_t)d, (uint32_t)s, 0);
    }
    if (!c->has_simd) return false; /* nothing vector-pinned, nothing to gain */
    int rd = vreg_of(c, (uint32_t)d), rs = vreg_of(c, (uint32_t)s);
    if (rd < 0 && rs < 0 && !(c->has_simd && vpair_ok(c, (uint32_t)d) && vpair_ok(c, (uint32_t)s)))
        return false;
    for (int k = 0; k < VC_N && rs < 0; k++)
        if (c->vc_slot[k] == s) rs = VC_REG + k;
    if (rs < 0) vc_touch(c, (uint32_t)s, (uint32_t)s + 1);
    if (rs < 0) {
        rs = rd >= 0 ? rd : 0;
        movdqu_ld(c, rs, vcell((uint32_t)s));
    }
    if (rd >= 0) {
        vmov(c, rd, rs);
    } else {
        vc_drop(c, (uint32_t)d, (uint32_t)d + 1);
        movdqu_st(c, vcell((uint32_t)d), rs);
    }
    return true;
}
static bool vpair_const(jc *c, uint32_t pos, uint32_t *len) {
    if (c->analyze && pos == c->pair2) {
        c->nov = true;
        return false;
    }
    uint64_t s = IMM(1);
    uint32_t p2 = pos + *len;
    if (p2 + 3 > c->n) return false;
    bool rev = c->code[p2 + 1] + 1ull == s; /* the high cell first */
    if (rev) s--;
    if (s + 1 >= c->cf->frame_slots || c->code[p2 + 1] != (rev ? s : s + 1)) return false;
    int op2 = op_of(c->jm, c->code[p2]);
    if ((op2 != PW_OP_CONST32 && op2 != PW_OP_CONST64) || (op2 == PW_OP_CONST64 && p2 + 4 > c->n))
        return false;
    uint64_t lo = IMM(2), hi = c->code[p2 + 2];
    if (*len == 4) lo |= (uint64_t)IMM(3) << 32;
    if (op2 == PW_OP_CONST64) hi |= (uint64_t)c->code[p2 + 3] << 32;
    if (rev) {
        uint64_t t = lo;
        lo = hi;
        hi = t;
    }
    if (c->analyze) {
        c->vuse[s] |= V_PAIR_LO;
        c->vuse[s + 1] |= V_PAIR_HI;
        c->pair2 = p2;
        return vpair_note(c, (uint32_t)s, UINT32_MAX, p2);
    }
    if (!c->has_simd || c->target[p2]) return false;
    int r = vreg_of(c, (uint32_t)s);
    if (r < 0 && !(c->has_simd && vpair_ok(c, (uint32_t)s))) return false;
    int t = r >= 0 ? r : 0;
    if (lo == 0 && hi == 0)
        vrr(c, 0x66, 0, 0xEF, t, t); /* pxor */
    else if (lo == ~0ull && hi == ~0ull)
        vrr(c, 0x66, 0, 0x76, t, t); /* pcmpeqd */
    else
        vconst_op(c, 0x66, 0, 0x6F, t, lo, hi); /* movdqa */
    if (r < 0) {
        vc_drop(c, (uint32_t)s, (uint32_t)s + 1);
        movdqu_st(c, vcell((uint32_t)s), t);
    }
    *len += op2 == PW_OP_CONST64 ? 4 : 3;
    return true;
}

static void xop(jc *c, uint32_t pos, uint32_t *len) {
    static const uint8_t words[PW_XOP_COUNT_] = {
#define PW_W_X(n, w) [PW_XOP_##n] = w,
        PW_XOPS(PW_W_X)
#undef PW_W_X
    };
    pw_x64 *x = &c->x;
    uint32_t kind = pos + 1 < c->n ? IMM(1) : PW_XOP_COUNT_;
    if (kind >= PW_XOP_COUNT_ || kind == PW_XOP_MEMORY_GROW_X ||
        pos + (uint64_t)words[kind] > c->n) {
        c->fail = true;
        return;
    }
    *len = words[kind];
    if (kind != PW_XOP_SIMD) vc_clear(c);
    if (kind == PW_XOP_CLAMP32) { /* dst src: saturated to u32 */
        ld(c, true, X_RAX, SL(3));
        pw__x64_mov_ri32(x, X_RCX, UINT32_MAX); /* zero-extended: rcx = 2^32 - 1 */
        pw__x64_alu_rr(x, X_CMP, true, X_RAX, X_RCX);
        pw__x64_cmov(x, X_CC_A, true, X_RAX, X_RCX);
        st(c, false, SL(2), X_RAX);
        return;
    }
    c->vc_set = false;
    if (kind == PW_XOP_SIMD && simd_inline(c, pos)) {
        if (!c->vc_set) vc_clear(c); /* it wrote cells another way */
        return;
    }
    vc_clear(c);
    call_begin(c);
    pw__x64_mov_rr(x, true, X_RDI, X_R15);
    pw__x64_mov_rr(x, true, X_RSI, X_R14);
    pw__x64_mov_rr(x, true, X_RDX, X_RBX);
    code_addr(c, X_RCX, pos);
    call_got(c, G_XOP);
    pw__x64_test_rr(x, false, X_RAX, X_RAX);
    jcc_to(c, X_CC_NE, special(c, LAB_TRAPC)); /* eax = the trap code */
    call_end(c, 0);
}

/* Memory 0's bulk instructions and the table instructions: a call of the interpreter's
 * own code for the one instruction (pw__interp_bulk), operands and results in the
 * frame, as for XOP. None of them changes memory 0's base or size, so the memory
 * registers need no reload. memory.copy and memory.fill of a few bytes would be
 * faster inline; a call keeps the function in machine code, where before the whole
 * function stayed on the interpreter. */
static bool bulk(jc *c, uint32_t pos, int op, uint32_t *len) {
    static const uint8_t words[PW_OP_COUNT_] = {
        [PW_OP_MEMORY_FILL] = 4, [PW_OP_MEMORY_COPY] = 4, [PW_OP_MEMORY_INIT] = 5,
        [PW_OP_DATA_DROP] = 2,   [PW_OP_TABLE_GET] = 4,   [PW_OP_TABLE_SET] = 4,
        [PW_OP_TABLE_SIZE] = 3,  [PW_OP_TABLE_GROW] = 5,  [PW_OP_TABLE_FILL] = 5,
        [PW_OP_TABLE_COPY] = 6,  [PW_OP_TABLE_INIT] = 6,  [PW_OP_ELEM_DROP] = 2,
    };
    if (!words[op]) return false;
    pw_x64 *x = &c->x;
    *len = words[op];
    if (pos + (uint64_t)words[op] > c->n ||
        ((op == PW_OP_MEMORY_FILL || op == PW_OP_MEMORY_COPY || op == PW_OP_MEMORY_INIT) &&
         c->m->nmems == 0)) {
        c->fail = true;
        return true;
    }
    call_begin(c);
    pw__x64_mov_rr(x, true, X_RDI, X_R15);
    pw__x64_mov_rr(x, true, X_RSI, X_R14);
    pw__x64_mov_rr(x, true, X_RDX, X_RBX);
    code_addr(c, X_RCX, pos);
    pw__x64_mov_ri32(x, X_R8, (uint32_t)op);
    call_got(c, G_BULK);
    pw__x64_test_rr(x, false, X_RAX, X_RAX);
    if (op == PW_OP_TABLE_GROW) { /* PW_TRAP_COUNT_: the store's cap with cap_is_fatal */
        size_t ok = pw__x64_jcc32(x, X_CC_E);
        pw__x64_alu_ri(x, X_CMP, false, X_RAX, PW_TRAP_COUNT_);
        jcc_to(c, X_CC_NE, special(c, LAB_TRAPC)); /* eax = the trap code */
        pw__x64_mov_ri32(x, X_RAX, PW_ERR_OOM);
        jmp_to(c, special(c, LAB_EXIT));
        pw__x64_patch32(x, ok, (int32_t)(x->len - (ok + 4)));
    } else {
        jcc_to(c, X_CC_NE, special(c, LAB_TRAPC)); /* eax = the trap code */
    }
    call_end(c, 0);
    return true;
}

/* Helpers called by JIT code. */
static pw_status jit_call_indirect(pw_store *s, pw_instance *inst, const uint32_t *pc, pw_slot *fp,
                                   const jitcode *jv, const pw_cfunc *funcs);
static pw_status jit_call_ref(pw_store *s, pw_instance *inst, const uint32_t *pc, pw_slot *fp);
static pw_status jit_call(pw_store *s, pw_instance *inst, pw_func *f, pw_slot *argp, pw_slot *fp,
                          const uint32_t *ret_pc);
static int64_t jit_memory_grow(pw_store *s, pw_instance *inst, uint32_t delta);

/* Direct JIT-to-JIT calls (docs/jit.md "Calls in both directions"). The caller passes
 * the callee's frame in rdx and calls its inner entry; nothing else: no frame record,
 * no status to test on return (a callee that traps unwinds straight to the entry from
 * C, epilogue), the callee zeroes its own declared locals (prologue). What the
 * interpreter's call checks is one compare against pw_store.jit_call_limit (native
 * stack budget, frame records left, interrupt flag; enter_jit) and one for the value
 * stack; when either fails the helper path (jit_call) decides exactly, as before.
 *
 * The frame records of the callers are derived only when something may look: a call
 * helper (jit_call, jit_call_indirect, jit_call_ref) walks the native stack from the
 * calling frame (pw_store.jit_walk) to the entry from C (jit_frames): each inner
 * frame saved rbp and then the caller's rbx (its frame pointer) just below its
 * return-address slot, and every direct call's return address is followed by a mark
 * (a 7-byte nop whose immediate is the caller's resume point in the internal code and
 * the caller's frame size): the record (ret_pc, fp, inst) of every caller, and where
 * its own return-address slot is. */
#define MARK_WORDS (1u << 28)
static bool mark_ok(const jc *c, uint32_t ret) {
    return (uint64_t)(c->code - c->m->code->code) + ret < MARK_WORDS && c->fsize / 8 < 16;
}
static void call_mark(jc *c, uint32_t ret) {
    static const uint8_t nop[3] = {0x0F, 0x1F, 0x80}; /* nop dword [rax + imm32] */
    uint32_t w = (uint32_t)(c->code - c->m->code->code) + ret;
    pw__x64_bytes(&c->x, nop, 3);
    pw__x64_u32(&c->x, w | (c->fsize / 8) << 28);
}

/* rax = the return-address slot of this frame, stored for the call helpers' walk. */
static void walk_here(jc *c) {
    pw__x64_lea(&c->x, true, X_RAX, x_mem(X_RSP, (int32_t)(c->fsize + c->extra_sp)));
    pw__x64_store(&c->x, 8, x_mem(X_R15, (int32_t)offsetof(pw_store, jit_walk)), X_RAX);
}

/* The direct call's bound: the returned jump, to be patched to the helper path, is
 * taken when rsp is below pw_store.jit_call_limit. */
static size_t direct_limit(jc *c) {
    pw__x64_alu_rm(&c->x, X_CMP, true, X_RSP,
                   x_mem(X_R15, (int32_t)offsetof(pw_store, jit_call_limit)));
    return pw__x64_jcc32(&c->x, X_CC_B);
}

/* Which inner entry a direct call calls: this function's own (a call rel32), that of
 * the JIT code whose entry is in rax, or the one already in rax (call_indirect's
 * cache holds inner entries). */
enum { DC_SELF, DC_ENTRY, DC_INNER };

/* Call the inner entry `to` says; the callee's frame is in rdx; the mark. */
static void direct_call(jc *c, int to, uint32_t ret) {
    pw_x64 *x = &c->x;
    c->calls = true;
    if (to == DC_SELF) {
        pw__x64_byte(x, 0xE8); /* call rel32 */
        size_t at = x->len;
        pw__x64_u32(x, 0);
        pw__x64_patch32(x, at, (int32_t)((int64_t)JIT_INNER - (int64_t)(at + 4)));
    } else {
        if (to == DC_ENTRY) pw__x64_alu_ri(x, X_ADD, true, X_RAX, JIT_INNER);
        pw__x64_call_r(x, X_RAX);
    }
    call_mark(c, ret);
}

/* The helper path of a call: jit_call(s, inst, f = inst->funcs[fidx], the arguments at
 * argbase, fp, the return pc = the internal code at ret); leave on a non-zero status,
 * reload the memory registers. */
static void helper_call(jc *c, uint32_t fidx, uint32_t argbase, uint32_t ret) {
    pw_x64 *x = &c->x;
    walk_here(c);
    pw__x64_mov_rr(x, true, X_RDI, X_R15);
    pw__x64_mov_rr(x, true, X_RSI, X_R14);
    pw__x64_load(x, X_LD64, X_RAX, x_mem(X_R14, (int32_t)offsetof(pw_instance, funcs)));
    pw__x64_load(x, X_LD64, X_RDX, x_mem(X_RAX, (int32_t)(fidx * 8)));
    pw__x64_lea(x, true, X_RCX, x_mem(X_RBX, (int32_t)(argbase * 8)));
    pw__x64_mov_rr(x, true, X_R8, X_RBX);
    code_addr(c, X_R9, ret);
    call_got(c, G_CALL);
    pw__x64_test_rr(x, false, X_RAX, X_RAX);
    jcc_to(c, X_CC_NE, special(c, LAB_EXIT));
    reload_mem(c);
}

static void table_call(jc *c, uint32_t pos, uint32_t slot);

/* Whether a function of type `type` returns its result in rax as well as in its frame
 * cell 0: exactly one result, an i32 or i64 (all 8 bytes of the cell, whose upper
 * half is unspecified for an i32). Every inner entry of such a function does
 * (ret_seq), so a direct call's caller reads the result from rax (call_result) instead
 * of waiting for the callee's store to forward: on a call chain (fib's sum, a
 * comparator's result) that store and load were on the critical path. The outer entry
 * ignores it; C callers read the frame. */
static bool ret_rax(const pw_module *m, uint32_t type) {
    if (type >= m->ntypes || m->types[type].form != PW_FORM_FUNC) return false;
    const pw_deftype *t = &m->types[type];
    if (t->u.func.nresults != 1) return false;
    pw_valtype v = t->u.func.types[t->u.func.nparams];
    return v == PW_VT_I32 || v == PW_VT_I64;
}

/* call_indirect's cache (pw_icell): the number of misses a cell counts before the
 * site's new function takes it over, so that a site calling two functions in turn
 * does not rewrite the cell at every call, and one whose function changed for good
 * takes the new one soon. */
#define IC_KEEP 15

/* The cache miss of call_indirect sc, after the body: rdx = the table's entry f. The
 * checks of the full path (a non-null f of this instance, the exact type, a defined
 * function with JIT code, its frame size read after its entry as the direct path
 * does); any failure jumps to the helper path (added to sc's jumps, emitted right
 * after this). On success: the cell takes f unless it counts a miss instead (a fresh
 * cell counts none), and the call resumes at icjoin with rax = the inner entry and
 * rcx = f's frame size. Uses rax, rcx and rdx only (and one push around the GOT). */
static void ic_miss(jc *c, slowcall *sc) {
    pw_x64 *x = &c->x;
    if (sc->nfrom + 5 > sizeof sc->from / sizeof sc->from[0]) {
        c->fail = true;
        return;
    }
    for (int j = 0; j < 2; j++)
        pw__x64_patch32(x, sc->icmiss[j], (int32_t)(x->len - (sc->icmiss[j] + 4)));
    int32_t cell = sc->icdisp;
    pw__x64_test_rr(x, true, X_RDX, X_RDX);
    sc->from[sc->nfrom++] = (uint32_t)pw__x64_jcc32(x, X_CC_E);
    pw__x64_alu_rm(x, X_CMP, true, X_R14, x_mem(X_RDX, (int32_t)offsetof(pw_func, inst)));
    sc->from[sc->nfrom++] = (uint32_t)pw__x64_jcc32(x, X_CC_NE);
    pw__x64_load(x, X_LD64, X_RAX, x_mem(X_R14, (int32_t)offsetof(pw_instance, type_ids)));
    pw__x64_load(x, X_LD32, X_RAX, x_mem(X_RAX, (int32_t)(sc->ictype * 4)));
    pw__x64_alu_rm(x, X_CMP, false, X_RAX,
                   x_mem(X_RDX, (int32_t)(offsetof(pw_func, hdr) + offsetof(pw_obj, type_id))));
    sc->from[sc->nfrom++] = (uint32_t)pw__x64_jcc32(x, X_CC_NE);
    pw__x64_load(x, X_LD64, X_RCX, x_mem(X_RDX, (int32_t)offsetof(pw_func, code)));
    pw__x64_load(x, X_LD32, X_RAX, x_mem(X_RCX, (int32_t)offsetof(pw_cfunc, index)));
    pw__x64_alu_ri(x, X_CMP, false, X_RAX, (int32_t)c->m->code->nfuncs);
    sc->from[sc->nfrom++] = (uint32_t)pw__x64_jcc32(x, X_CC_AE);
    pw__x64_push(x, X_RCX);
    got_fix(c, pw__x64_lea_rip(x, X_RCX), G_FN0);
    pw__x64_load(x, X_LD64, X_RAX, x_memi(X_RCX, X_RAX, 8, 0)); /* the callee's entry */
    pw__x64_pop(x, X_RCX);
    pw__x64_alu_ri(x, X_CMP, true, X_RAX, 1);
    sc->from[sc->nfrom++] = (uint32_t)pw__x64_jcc32(x, X_CC_BE); /* NULL or JIT_FALLBACK */
    pw__x64_load(x, X_LD32, X_RCX, x_mem(X_RCX, (int32_t)offsetof(pw_cfunc, frame_slots)));
    pw__x64_alu_ri(x, X_ADD, true, X_RAX, JIT_INNER);
    /* a cell that still counts misses keeps its function; else it takes this one */
    pw__x64_alu_mi(x, X_SUB, false, x_mem(X_R14, cell + (int32_t)offsetof(pw_icell, miss)), 1);
    size_t keep = pw__x64_jcc32(x, X_CC_AE);
    pw__x64_store(x, 8, x_mem(X_R14, cell + (int32_t)offsetof(pw_icell, f)), X_RDX);
    pw__x64_store(x, 8, x_mem(X_R14, cell + (int32_t)offsetof(pw_icell, entry)), X_RAX);
    pw__x64_store(x, 4, x_mem(X_R14, cell + (int32_t)offsetof(pw_icell, frame)), X_RCX);
    pw__x64_mov_ri32(x, X_RDX, sc->ictype);
    pw__x64_store(x, 4, x_mem(X_R14, cell + (int32_t)offsetof(pw_icell, type)), X_RDX);
    pw__x64_mov_ri32(x, X_RDX, IC_KEEP);
    pw__x64_store(x, 4, x_mem(X_R14, cell + (int32_t)offsetof(pw_icell, miss)), X_RDX);
    pw__x64_patch32(x, keep, (int32_t)(x->len - (keep + 4)));
    size_t back = pw__x64_jmp32(x);
    pw__x64_patch32(x, back, (int32_t)((int64_t)sc->icjoin - (int64_t)(back + 4)));
}

/* The deferred helper paths (after the body, before the trap stubs): each stores the
 * kept pins its direct call kept (C clobbers rsi), pushes what cpush pushes, calls
 * the helper, reloads them and jumps back to right after its call, where the other
 * pins are reloaded. */
static void emit_slow_calls(jc *c) {
    pw_x64 *x = &c->x;
    for (uint32_t k = 0; k < c->nslow && !c->fail; k++) {
        slowcall *sc = &c->slow[k];
        if (sc->ic) ic_miss(c, sc); /* falls into the helper path on a failed check */
        for (uint32_t j = 0; j < sc->nfrom; j++)
            pw__x64_patch32(x, sc->from[j], (int32_t)(x->len - (sc->from[j] + 4)));
        if (sc->region != UINT32_MAX) region_enter(c, sc->region, false); /* its call's pins */
        if (sc->direct) direct_slow_spill(c, sc->argbase, false);
        cpush(c);
        if (sc->ind != UINT32_MAX)
            table_call(c, sc->ind, G_CALLIND);
        else
            helper_call(c, sc->fidx, sc->argbase, sc->ret);
        if (sc->direct) direct_slow_spill(c, sc->argbase, true);
        if (sc->rax) pw__x64_load(x, X_LD64, X_RAX, x_mem(X_RBX, (int32_t)(sc->argbase * 8)));
        size_t back = pw__x64_jmp32(x);
        pw__x64_patch32(x, back, (int32_t)((int64_t)sc->back - (int64_t)(back + 4)));
        if (sc->region != UINT32_MAX) region_exit(c, sc->region, false);
    }
}

/* The exits of loop regions (add_fix routed them here): one stub per region and
 * target, which stores the loop's pins, reloads the function's and jumps on. */
static void emit_exit_stubs(jc *c) {
    pw_x64 *x = &c->x;
    for (uint32_t k = 0; k < c->nxs && !c->fail; k++) {
        xstub *s = &c->xs[k];
        if (s->region == UINT32_MAX) continue; /* patched with an earlier one */
        size_t stub = x->len;
        uint32_t r = s->region, label = s->label;
        /* a region's exits are contiguous (regions are translated in order) */
        for (uint32_t j = k; j < c->nxs && (c->xs[j].region == r || c->xs[j].region == UINT32_MAX);
             j++)
            if (c->xs[j].region == r && c->xs[j].label == label) {
                pw__x64_patch32(x, c->xs[j].at, (int32_t)(stub - c->xs[j].base));
                c->xs[j].region = UINT32_MAX;
            }
        region_enter(c, r, false);
        region_exit(c, r, true);
        jmp_to(c, label);
    }
}

static bool add_slow(jc *c, slowcall sc) {
    if (!grow((void **)&c->slow, &c->capslow, c->nslow + 1, sizeof *c->slow)) {
        c->fail = true;
        return false;
    }
    sc.region = c->lcur;
    c->slow[c->nslow++] = sc;
    return true;
}

/* A call of function fidx (CALL, CALL_IMPORT). */
static void call_func(jc *c, uint32_t pos, uint32_t fidx, uint32_t argbase, uint32_t len) {
    if (fidx >= c->m->nfuncs || argbase >= c->cf->frame_slots) {
        c->fail = true;
        return;
    }
    pw_x64 *x = &c->x;
    if (fidx >= c->m->nfunc_imports) {
        /* A defined function of this module: when its JIT code exists, call it
         * directly; otherwise (not yet compiled, fallback, the bound or the value
         * stack) the helper path, emitted after the function's body so that the
         * direct call falls through. This function itself is running, so its entry
         * is known: a self call is a call rel32, with no look at the GOT. */
        uint32_t d = fidx - c->m->nfunc_imports;
        const pw_cfunc *ce = &c->m->code->funcs[d];
        if (pw__compile_lazy(c->m, ce) && mark_ok(c, pos + len) &&
            /* its frame_slots */ (uint64_t)argbase + ce->frame_slots < (1u << 27) &&
            d < (1u << 28)) {
            bool self = ce == c->cf;
            slowcall sc = {.fidx = fidx,
                           .argbase = argbase,
                           .ret = pos + len,
                           .ind = UINT32_MAX,
                           .direct = true,
                           .rax = ret_rax(c->m, ce->type)};
            direct_begin(c, argbase, pos + len, UINT32_MAX);
            if (!self) {
                got_load(c, X_RAX, G_FN0 + d); /* the callee's entry */
                pw__x64_alu_ri(x, X_CMP, true, X_RAX, 1);
                sc.from[sc.nfrom++] =
                    (uint32_t)pw__x64_jcc32(x, X_CC_BE); /* NULL or JIT_FALLBACK */
            }
            sc.from[sc.nfrom++] = (uint32_t)direct_limit(c);
            /* value stack room */
            pw__x64_lea(x, true, X_RCX, x_mem(X_RBX, (int32_t)((argbase + ce->frame_slots) * 8)));
            pw__x64_alu_rm(x, X_CMP, true, X_RCX,
                           x_mem(X_R15, (int32_t)offsetof(pw_store, stack_end)));
            sc.from[sc.nfrom++] = (uint32_t)pw__x64_jcc32(x, X_CC_A);
            pw__x64_lea(x, true, X_RDX, x_mem(X_RBX, (int32_t)(argbase * 8)));
            direct_call(c, self ? DC_SELF : DC_ENTRY, pos + len);
            sc.back = (uint32_t)x->len;
            if (add_slow(c, sc)) direct_end(c, argbase, sc.rax);
            return;
        }
    }
    call_begin(c);
    helper_call(c, fidx, argbase, pos + len);
    call_end(c, argbase);
}

/* Call jit_call_indirect or jit_call_ref (GOT slot `slot`) for the instruction at pos
 * (the helper decodes its operands from the code words); leave on a non-zero status,
 * reload the memory registers. */
static void table_call(jc *c, uint32_t pos, uint32_t slot) {
    pw_x64 *x = &c->x;
    walk_here(c);
    pw__x64_mov_rr(x, true, X_RDI, X_R15);
    pw__x64_mov_rr(x, true, X_RSI, X_R14);
    code_addr(c, X_RDX, pos);
    pw__x64_mov_rr(x, true, X_RCX, X_RBX);
    got_load(c, X_R8, G_JV);
    got_load(c, X_R9, G_CFUNCS);
    call_got(c, slot);
    pw__x64_test_rr(x, false, X_RAX, X_RAX);
    jcc_to(c, X_CC_NE, special(c, LAB_EXIT));
    reload_mem(c);
}

/* CALL_INDIRECT type table idx argbase, inline: the table's bounds, then the site's
 * cell of the instance's cache (pw_icell): when it holds the table's entry with this
 * site's type index, its entry and frame size are the callee's (every check passed
 * when the cell took them); otherwise the miss path after the body (ic_miss) makes
 * the full checks: a non-null entry, the exact type id, a function of this instance
 * with JIT code. Then the same steps as call_func's direct call. Anything else (out
 * of bounds, null, a subtype or a mismatch, another instance, a host function, no JIT
 * code yet, the bound or the value stack) takes the helper jit_call_indirect, which
 * repeats the checks and raises the interpreter's traps. Only rax, rcx and rdx are
 * used (no pinned register is touched). */
static void call_indirect(jc *c, uint32_t pos) {
    pw_x64 *x = &c->x;
    uint32_t type = IMM(1), tab = IMM(2), argbase = IMM(4);
    pw_xmem idx = SL(3);
    /* the site's cell: a hash of the function and the position (a collision of two
     * sites only costs misses: the type index is part of the match) */
    uint32_t h = (c->cf->index * 0x9E3779B1u) ^ (pos * 0x85EBCA6Bu);
    int32_t cell =
        (int32_t)(offsetof(pw_instance, ic) + ((h ^ (h >> 15)) % PW_IC_CELLS) * sizeof(pw_icell));
    slowcall sc = {.argbase = argbase,
                   .ret = pos + 5,
                   .ind = pos,
                   .direct = true,
                   .rax = ret_rax(c->m, type),
                   .ic = true,
                   .ictype = type,
                   .icdisp = cell};
    direct_begin(c, argbase, pos + 5, IMM(3));
    pw__x64_load(x, X_LD64, X_RAX, x_mem(X_R14, (int32_t)offsetof(pw_instance, tables)));
    pw__x64_load(x, X_LD64, X_RAX, x_mem(X_RAX, (int32_t)(tab * 8)));
    ld(c, false, X_RCX, idx);
    pw__x64_alu_rm(x, X_CMP, false, X_RCX, x_mem(X_RAX, (int32_t)offsetof(pw_table, size)));
    sc.from[sc.nfrom++] = (uint32_t)pw__x64_jcc32(x, X_CC_AE);
    pw__x64_load(x, X_LD64, X_RAX, x_mem(X_RAX, (int32_t)offsetof(pw_table, elems)));
    pw__x64_load(x, X_LD64, X_RDX, x_memi(X_RAX, X_RCX, 8, 0)); /* f */
    pw__x64_alu_rm(x, X_CMP, true, X_RDX, x_mem(X_R14, cell + (int32_t)offsetof(pw_icell, f)));
    sc.icmiss[0] = (uint32_t)pw__x64_jcc32(x, X_CC_NE);
    pw__x64_alu_mi(x, X_CMP, false, x_mem(X_R14, cell + (int32_t)offsetof(pw_icell, type)),
                   (int32_t)type);
    sc.icmiss[1] = (uint32_t)pw__x64_jcc32(x, X_CC_NE);
    pw__x64_load(x, X_LD64, X_RAX, x_mem(X_R14, cell + (int32_t)offsetof(pw_icell, entry)));
    pw__x64_load(x, X_LD32, X_RCX, x_mem(X_R14, cell + (int32_t)offsetof(pw_icell, frame)));
    sc.icjoin = (uint32_t)x->len;
    sc.from[sc.nfrom++] = (uint32_t)direct_limit(c);
    /* value stack room: rbx + 8 * (argbase + frame_slots) */
    pw__x64_lea(x, true, X_RCX, x_memi(X_RBX, X_RCX, 8, (int32_t)(argbase * 8)));
    pw__x64_alu_rm(x, X_CMP, true, X_RCX, x_mem(X_R15, (int32_t)offsetof(pw_store, stack_end)));
    sc.from[sc.nfrom++] = (uint32_t)pw__x64_jcc32(x, X_CC_A);
    pw__x64_lea(x, true, X_RDX, x_mem(X_RBX, (int32_t)(argbase * 8)));
    direct_call(c, DC_INNER, pos + 5);
    /* the helper path after the function's body, jumping back here */
    sc.back = (uint32_t)x->len;
    if (add_slow(c, sc)) direct_end(c, argbase, sc.rax);
}

/* Translate one instruction at pos; *len = its length in words. */
/* Control: branches, br_table, return, calls (*len preset to 3). False: not one of them. */
static bool t_control(jc *c, uint32_t pos, int op, uint32_t *len) {
    pw_x64 *x = &c->x;
    switch (op) {
    case PW_OP_UNREACHABLE:
        *len = 1;
        jmp_to(c, special(c, PW_TRAP_UNREACHABLE));
        return true;
    case PW_OP_BR:
        *len = 2;
        branch(c, -1, pos, IMM(1));
        return true;
    case PW_OP_BR_IF:
    case PW_OP_BR_IFZ:
    case PW_OP_BR_IF64:
    case PW_OP_BR_IF64Z: {
        bool w = op == PW_OP_BR_IF64 || op == PW_OP_BR_IF64Z;
        bool nz = op == PW_OP_BR_IF || op == PW_OP_BR_IF64;
        int fcc;
        if (!w && fcmp_take(c, IMM(1), &fcc)) {
            /* a float compare's 0/1, tested on its flags: `ucomisd; ja target` */
            branch(c, nz ? fcc : fcc ^ 1, pos, IMM(2));
            return true;
        }
        pw_xmem v = SL(1);
        int r = X_RAX;
        bool zx = zx_held(c);      /* asked before anything is taken back */
        bool zf = false;           /* the flags say whether r is zero already (flags_of) */
        if (v.index == X_DIRECT) { /* test the pinned register in place */
            r = v.base;
            zf = flags_of(c, r, w);
        } else if (fwd_reg_of(c, v) >= 0) {
            /* the register just stored there, in place: an operator's result in rax
             * whose flags still hold. The condition is popped here, so the store of
             * an operand-stack temporary is dead (dead_store) and taken back. */
            zf = fwd_reg_of(c, v) == X_RAX && flags_of(c, X_RAX, w);
            c->dse_dst = UINT32_MAX;
            c->dse_op[0] = pos + 1;
            c->dse_n = 1;
            r = fwd_take(c, v);
            c->dse_n = 0;
        } else {
            ld(c, w, X_RAX, v);
        }
        if (!zf) pw__x64_test_rr(x, w, r, r);
        branch(c, nz ? X_CC_NE : X_CC_E, pos, IMM(2));
        /* a register tested in place is not written, nor is anything on the path
         * that falls through; rax is written when the condition was loaded there */
        zx_keep(c, zx, r == X_RAX ? X_RAX : -1);
        return true;
    }
    case PW_OP_BR_TABLE: {
        uint32_t n = IMM(2);
        if (n >= c->n || pos + 4 + (uint64_t)n > c->n) {
            c->fail = true;
            return true;
        }
        *len = 4 + n;
        vc_flush(c);
        /* A backward entry is a loop back-edge. Pass 1 records it as a loop, so that
         * its target polls the interrupt flag at the label (run_pass) and weighs
         * pins as a loop; the table itself then polls only if some backward target
         * is no loop head (cannot happen after pass 1, kept as the safe default). */
        bool poll = false;
        for (uint32_t i = 0; i <= n && pos + 3 + (uint64_t)i < c->n; i++) {
            uint32_t t = pos + IMM(3 + i);
            if (t > pos || t >= c->n) continue;
            if (c->analyze) {
                if (!grow((void **)&c->loops, &c->caploops, c->nloops + 2, sizeof *c->loops)) {
                    c->fail = true;
                    return true;
                }
                c->loops[c->nloops++] = t;
                c->loops[c->nloops++] = pos;
            }
            if (c->analyze || !c->target || c->target[t] != T_LOOP) poll = true;
        }
        if (poll) poll_interrupt(c);
        uint32_t dflt = pos + IMM(3 + n);
        if (dflt >= c->n) {
            c->fail = true;
            return true;
        }
        /* i >= n: a direct jump to the default (predicted, and off the index's path
         * to the table); else through the table of the n others */
        ld(c, false, X_RAX, SL(1));
        pw__x64_alu_ri(x, X_CMP, false, X_RAX, (int32_t)n);
        jcc_to(c, X_CC_AE, dflt);
        for (uint32_t i = 0; i < n; i++)
            if (pos + IMM(3 + i) >= c->n) {
                c->fail = true;
                return true;
            }
        /* the table of offsets from itself lies after the body (emit_tables), not
         * here in the instruction stream, where the front end would fetch and decode
         * it after the indirect jump */
        if (!grow((void **)&c->jt, &c->capjt, c->njt + 1, sizeof *c->jt)) {
            c->fail = true;
            return true;
        }
        c->jt[c->njt++] = (jtab){(uint32_t)pw__x64_lea_rip(x, X_RCX), pos, c->lcur};
        pw__x64_load(x, X_LD32S, X_RAX, x_memi(X_RCX, X_RAX, 4, 0));
        pw__x64_alu_rr(x, X_ADD, true, X_RAX, X_RCX);
        pw__x64_jmp_r(x, X_RAX);
        return true;
    }
    case PW_OP_RETURN:
        *len = 1;
        vc_flush(c);
        ret_seq(c);
        return true;
    case PW_OP_CALL: call_func(c, pos, c->m->nfunc_imports + IMM(1), IMM(2), 3); return true;
    case PW_OP_CALL_IMPORT:
        if (IMM(1) >= c->m->nfunc_imports) c->fail = true;
        call_func(c, pos, IMM(1), IMM(2), 3);
        return true;
    case PW_OP_CALL_INDIRECT:
    case PW_OP_CALL_REF: {
        /* The helper decodes the instruction's operands from its code words. */
        bool ind = op == PW_OP_CALL_INDIRECT;
        *len = ind ? 5 : 3;
        if (ind && (IMM(1) >= c->m->ntypes || IMM(2) >= c->m->ntables)) {
            c->fail = true;
            return true;
        }
        (void)SL(ind ? 3 : 1);
        if ((ind ? IMM(4) : IMM(2)) >= c->cf->frame_slots) c->fail = true;
        if (ind && !c->fail && (uint64_t)IMM(4) * 8 < (1u << 30) && IMM(2) < (1u << 27) &&
            IMM(1) < (1u << 28)) {
            call_indirect(c, pos);
            return true;
        }
        call_begin(c);
        table_call(c, pos, ind ? G_CALLIND : G_CALLREF);
        call_end(c, ind ? IMM(4) : IMM(2));
        return true;
    }
    default: return false;
    }
}

/* Copies, constants, select, globals, ref.func, memory.size/grow, XOP. False: not one of them. */
static bool t_moves(jc *c, uint32_t pos, int op, uint32_t *len) {
    pw_x64 *x = &c->x;
    switch (op) {
    case PW_OP_COPY: {
        bool zx = zx_held(c);
        pw_xmem d = SL(1), a = SL(2);
        copy_slot(c, d, a, X_RAX);
        /* the GPR copy_slot wrote: d's pin, none (a pinned GPR into the frame) or rax */
        zx_keep(c, zx,
                d.index == X_DIRECT                         ? d.base
                : a.index == X_DIRECT && d.index == X_NOREG ? -1
                                                            : X_RAX);
        return true;
    }
    case PW_OP_XOP: xop(c, pos, len); return true;
    case PW_OP_COPY2:
        *len = 5;
        if (vpair_copy(c, pos)) return true;
        /* sequential, as in the interpreter (the second may read the first's dst) */
        copy_slot(c, SL(1), SL(2), X_RAX);
        copy_slot(c, SL(3), SL(4), X_RCX);
        c->nov = false;
        return true;
    case PW_OP_CONST32:
    case PW_OP_CONST64:
        *len = op == PW_OP_CONST64 ? 4 : 3;
        {
            bool zx = zx_held(c);
            if (vpair_const(c, pos, len)) return true;
            pw_xmem d = SL(1);
            uint64_t v = IMM(2);
            if (op == PW_OP_CONST64) v |= (uint64_t)IMM(3) << 32;
            if (d.index == X_DIRECTX) {
                /* into a pinned xmm register: zero by xorps, anything else from the
                 * literal pool (movsd, the upper lanes cleared as by movq) */
                if (v == 0)
                    pw__x64_sse_rr(x, -1, X_SSE_XORPS, false, d.base, d.base);
                else
                    vconst_op(c, 0xF2, 0, X_SSE_MOVLD, d.base, v, 0);
                zx_keep(c, zx, -1);
            } else {
                int r = d.index == X_DIRECT ? d.base : X_RAX; /* a pinned GPR: directly */
                if (v == 0)
                    /* the zeroing idiom: 2-3 bytes instead of 5-6, and no execution
                     * unit. It writes the flags, which no fact carries past an
                     * instruction (flags_of, fcmp_take: the previous one only). */
                    pw__x64_alu_rr(x, X_XOR, false, r, r);
                else if (op == PW_OP_CONST64)
                    pw__x64_mov_ri64(x, r, v);
                else
                    pw__x64_mov_ri32(x, r, IMM(2));
                if (r == X_RAX) st(c, true, d, X_RAX);
                zx_keep(c, zx, r);
                if (op == PW_OP_CONST32) zr_set(c, r); /* mov r32, imm zero-extends */
            }
        }
        c->nov = false;
        c->lc_end = pos + *len, c->lc_slot = IMM(1), c->lc_val = IMM(2);
        c->lc_w = op == PW_OP_CONST64;
        return true;
    case PW_OP_SELECT: {
        /* d = k ? a : b. Operands in GPR pins are used where they are, the others
         * loaded into rax, rcx, rdx (first, so a forwarding record still holds); a
         * result pinned to a GPR is computed in place: `test k; cmovne d, a` when d
         * holds b, `cmove d, b` when it holds a, else `mov d, b` first (a mov keeps
         * the flags, so d may be k's register too). */
        *len = 5;
        pw_xmem d = SL(1), a = SL(2), b = SL(3), k = SL(4);
        int ra = a.index == X_DIRECT ? a.base : X_RAX;
        int rb = b.index == X_DIRECT ? b.base : X_RCX;
        int rk = k.index == X_DIRECT ? k.base : X_RDX;
        int rd = d.index == X_DIRECT ? d.base : X_RAX;
        bool zf = rk != X_RDX && flags_of(c, rk, false); /* asked before any load */
        if (ra == X_RAX) ld(c, true, X_RAX, a);
        if (rb == X_RCX) ld(c, true, X_RCX, b);
        if (rk == X_RDX) ld(c, false, X_RDX, k);
        if (!zf) pw__x64_test_rr(x, false, rk, rk);
        if (rd == rb) {
            pw__x64_cmov(x, X_CC_NE, true, rd, ra);
        } else if (rd == ra) {
            pw__x64_cmov(x, X_CC_E, true, rd, rb);
        } else {
            pw__x64_mov_rr(x, true, rd, rb);
            pw__x64_cmov(x, X_CC_NE, true, rd, ra);
        }
        if (d.index != X_DIRECT) st(c, true, d, rd);
        return true;
    }
    case PW_OP_GLOBAL_GET:
    case PW_OP_GLOBAL_SET: {
        bool get = op == PW_OP_GLOBAL_GET;
        uint32_t g = get ? IMM(2) : IMM(1);
        if (g >= c->m->nglobals) {
            c->fail = true;
            return true;
        }
        pw__x64_load(x, X_LD64, X_RAX, x_mem(X_R14, (int32_t)offsetof(pw_instance, globals)));
        pw__x64_load(x, X_LD64, X_RAX, x_mem(X_RAX, (int32_t)(g * 8)));
        pw_xmem gv = x_mem(X_RAX, (int32_t)offsetof(pw_global, val));
        if (get) {
            ld(c, true, X_RCX, gv);
            st(c, true, SL(1), X_RCX);
        } else {
            ld(c, true, X_RCX, SL(2));
            st(c, true, gv, X_RCX);
        }
        return true;
    }
    case PW_OP_REF_FUNC:
        if (IMM(2) >= c->m->nfuncs) {
            c->fail = true;
            return true;
        }
        pw__x64_load(x, X_LD64, X_RAX, x_mem(X_R14, (int32_t)offsetof(pw_instance, funcs)));
        pw__x64_load(x, X_LD64, X_RAX, x_mem(X_RAX, (int32_t)(IMM(2) * 8)));
        st(c, true, SL(1), X_RAX);
        return true;
    case PW_OP_MEMORY_SIZE:
        *len = 2;
        if (c->guard) {
            pw__x64_load(x, X_LD64, X_RAX, x_mem(X_R14, (int32_t)offsetof(pw_instance, mem0)));
            pw__x64_load(x, X_LD64, X_RAX, x_mem(X_RAX, (int32_t)offsetof(pw_memory, size)));
        } else {
            pw__x64_mov_rr(x, true, X_RAX, X_R13);
        }
        pw__x64_shift_i(x, X_SHR, true, X_RAX, 16);
        st(c, false, SL(1), X_RAX);
        return true;
    case PW_OP_MEMORY_GROW:
        if (c->m->nmems == 0) {
            c->fail = true;
            return true;
        }
        call_begin(c);
        pw__x64_mov_rr(x, true, X_RDI, X_R15);
        pw__x64_mov_rr(x, true, X_RSI, X_R14);
        ld(c, false, X_RDX, SL(2));
        call_got(c, G_GROW);
        /* INT64_MIN: the store's cap was hit with cap_is_fatal (ends the run, OOM) */
        pw__x64_mov_ri64(x, X_RCX, (uint64_t)INT64_MIN);
        pw__x64_alu_rr(x, X_CMP, true, X_RAX, X_RCX);
        {
            size_t ok = pw__x64_jcc32(x, X_CC_NE);
            pw__x64_mov_ri32(x, X_RAX, PW_ERR_OOM);
            jmp_to(c, special(c, LAB_EXIT));
            pw__x64_patch32(x, ok, (int32_t)(x->len - (ok + 4)));
        }
        st(c, false, SL(1), X_RAX);
        reload_mem(c);
        call_end(c, 0);
        return true;
    default: return false;
    }
}

/* Integer division and remainder: which divrem() each opcode is (0: none). */
enum { DV_OP = 1, DV_W = 2, DV_SIGNED = 4, DV_REM = 8 };
static const uint8_t divops[PW_OP_COUNT_] = {
    [PW_OP_I32_DIV_S] = DV_OP | DV_SIGNED,
    [PW_OP_I32_DIV_U] = DV_OP,
    [PW_OP_I32_REM_S] = DV_OP | DV_SIGNED | DV_REM,
    [PW_OP_I32_REM_U] = DV_OP | DV_REM,
    [PW_OP_I64_DIV_S] = DV_OP | DV_W | DV_SIGNED,
    [PW_OP_I64_DIV_U] = DV_OP | DV_W,
    [PW_OP_I64_REM_S] = DV_OP | DV_W | DV_SIGNED | DV_REM,
    [PW_OP_I64_REM_U] = DV_OP | DV_W | DV_REM,
};

/* Integer division, unary integer operators, extensions and wraps. False: not one of them. */
static bool t_int(jc *c, uint32_t pos, int op, uint32_t *len) {
    pw_x64 *x = &c->x;
    uint8_t dv = divops[op];
    if (dv) {
        *len = 4;
        divrem(c, pos, dv & DV_W, dv & DV_SIGNED, dv & DV_REM);
        return true;
    }
    switch (op) {
    /* Unary integer operators and bit-pattern float operators. */
    case PW_OP_I32_EQZ:
    case PW_OP_I64_EQZ: {
        bool w = op == PW_OP_I64_EQZ;
        pw_xmem a = SL(2);
        int r = a.index == X_DIRECT ? a.base : X_RAX; /* a GPR pin is tested in place */
        if (r == X_RAX) ld(c, w, X_RAX, a);
        if (!(r != X_RAX && flags_of(c, r, w))) pw__x64_test_rr(x, w, r, r);
        set_bool(c, X_CC_E, SL(1));
        return true;
    }
    case PW_OP_I32_CLZ: bitscan(c, pos, false, true); return true;
    case PW_OP_I64_CLZ: bitscan(c, pos, true, true); return true;
    case PW_OP_I32_CTZ: bitscan(c, pos, false, false); return true;
    case PW_OP_I64_CTZ: bitscan(c, pos, true, false); return true;
    case PW_OP_I32_POPCNT:
    case PW_OP_I64_POPCNT: {
        bool w = op == PW_OP_I64_POPCNT;
        if (!(c->isa & ISA_POPCNT)) {
            c->fail = true;
            return true;
        }
        ld(c, w, X_RAX, SL(2));
        pw__x64_popcnt(x, w, X_RAX, X_RAX);
        st(c, w, SL(1), X_RAX);
        return true;
    }
    case PW_OP_I32_EXTEND8_S:
    case PW_OP_I32_EXTEND16_S:
        ld(c, false, X_RAX, SL(2));
        pw__x64_movsx_rr(x, op == PW_OP_I32_EXTEND8_S ? 1 : 2, false, X_RAX, X_RAX);
        st(c, false, SL(1), X_RAX);
        return true;
    case PW_OP_I64_EXTEND8_S:
    case PW_OP_I64_EXTEND16_S:
    case PW_OP_I64_EXTEND32_S:
        ld(c, true, X_RAX, SL(2));
        pw__x64_movsx_rr(x,
                         op == PW_OP_I64_EXTEND8_S    ? 1
                         : op == PW_OP_I64_EXTEND16_S ? 2
                                                      : 4,
                         true, X_RAX, X_RAX);
        st(c, true, SL(1), X_RAX);
        return true;
    case PW_OP_I32_WRAP_I64:
        ld(c, false, X_RAX, SL(2));
        st(c, false, SL(1), X_RAX);
        return true;
    case PW_OP_I64_EXTEND_I32_S:
        ld(c, false, X_RAX, SL(2));
        pw__x64_movsx_rr(x, 4, true, X_RAX, X_RAX);
        st(c, true, SL(1), X_RAX);
        return true;
    case PW_OP_I64_EXTEND_I32_U:
        ld(c, false, X_RAX, SL(2));
        st(c, true, SL(1), X_RAX);
        return true;
    default: return false;
    }
}

/* Float bit operations, conversions, sqrt and the float helper. False: not one of them. */
static bool t_float(jc *c, uint32_t pos, int op, uint32_t *len) {
    pw_x64 *x = &c->x;
    switch (op) {
    case PW_OP_F32_COPYSIGN:
    case PW_OP_F64_COPYSIGN: {
        bool w = op == PW_OP_F64_COPYSIGN;
        *len = 4;
        ld(c, w, X_RAX, SL(2));
        ld(c, w, X_RCX, SL(3));
        if (w) {
            pw__x64_mov_ri64(x, X_RDX, 0x7fffffffffffffffull);
            pw__x64_alu_rr(x, X_AND, true, X_RAX, X_RDX);
        }
        if (w) {
            pw__x64_mov_ri64(x, X_RDX, 0x8000000000000000ull);
            pw__x64_alu_rr(x, X_AND, true, X_RCX, X_RDX);
            pw__x64_alu_rr(x, X_OR, true, X_RAX, X_RCX);
        } else {
            pw__x64_alu_ri(x, X_AND, false, X_RAX, 0x7fffffff);
            pw__x64_alu_ri(x, X_AND, false, X_RCX, INT32_MIN);
            pw__x64_alu_rr(x, X_OR, false, X_RAX, X_RCX);
        }
        st(c, w, SL(1), X_RAX);
        return true;
    }
    case PW_OP_F32_ABS:
    case PW_OP_F32_NEG:
    case PW_OP_F64_ABS:
    case PW_OP_F64_NEG:
        if (SF(1).index == X_DIRECTX) {
            /* into an xmm pin: andps/xorps with the sign mask from the literal pool
             * (16-byte aligned), only the sign bit changed, NaN payloads kept */
            bool d64 = op == PW_OP_F64_ABS || op == PW_OP_F64_NEG;
            bool abs = op == PW_OP_F32_ABS || op == PW_OP_F64_ABS;
            int pfx = d64 ? 0xF2 : 0xF3, r = SF(1).base;
            uint64_t sign = d64 ? 0x8000000000000000ull : 0x80000000u;
            uint64_t rest = (d64 ? UINT64_MAX : UINT32_MAX) ^ sign; /* all but the sign */
            sse_ld(c, pfx, r, SF(2));
            vconst_op(c, -1, 0, abs ? X_SSE_ANDPS : X_SSE_XORPS, r, abs ? rest : sign, 0);
            return true;
        }
        if (op == PW_OP_F64_ABS || op == PW_OP_F64_NEG) {
            ld(c, true, X_RAX, SL(2));
            pw__x64_mov_ri64(x, X_RCX,
                             op == PW_OP_F64_ABS ? 0x7fffffffffffffffull : 0x8000000000000000ull);
            pw__x64_alu_rr(x, op == PW_OP_F64_ABS ? X_AND : X_XOR, true, X_RAX, X_RCX);
            st(c, true, SL(1), X_RAX);
            return true;
        }
        ld(c, false, X_RAX, SL(2));
        if (op == PW_OP_F32_ABS)
            pw__x64_alu_ri(x, X_AND, false, X_RAX, 0x7fffffff);
        else
            pw__x64_alu_ri(x, X_XOR, false, X_RAX, INT32_MIN);
        st(c, false, SL(1), X_RAX);
        return true;
    case PW_OP_F32_CEIL:
    case PW_OP_F32_FLOOR:
    case PW_OP_F32_TRUNC:
    case PW_OP_F32_NEAREST:
    case PW_OP_F64_CEIL:
    case PW_OP_F64_FLOOR:
    case PW_OP_F64_TRUNC:
    case PW_OP_F64_NEAREST: {
        /* SSE4.1 roundss/roundsd (else the helper): the IEEE roundings fops.h computes,
         * to nearest with ties to even; a NaN comes back quieted with its payload, as
         * a + a; infinities, zeros' signs and integers kept */
        if (!(c->isa & ISA_SSE41)) return false;
        bool d64 = op >= PW_OP_F64_CEIL && op <= PW_OP_F64_NEAREST;
        int pfx = d64 ? 0xF2 : 0xF3, k = op - (d64 ? PW_OP_F64_CEIL : PW_OP_F32_CEIL);
        static const uint8_t mode[4] = {2, 1, 3, 0}; /* ceil, floor, trunc, nearest */
        pw_xmem d = SF(1), a = SF(2);
        int r = d.index == X_DIRECTX ? d.base : 0;
        /* a into r first (a whole-register write): `roundsd r, a` would merge into
         * r's upper half and wait for whatever last wrote r */
        sse_ld(c, pfx, r, a);
        const uint8_t ops[3] = {0x0F, 0x3A, d64 ? 0x0B : 0x0A};
        pw__x64_modrm(x, 0x66, false, ops, 3, r, r, NULL, false);
        pw__x64_byte(x, (uint8_t)(8 | mode[k])); /* 8: no precision exception */
        sse_st(c, pfx, d, r);
        return true;
    }
    case PW_OP_F32_CONVERT_I32_S:
    case PW_OP_F32_CONVERT_I32_U:
    case PW_OP_F32_CONVERT_I64_S:
    case PW_OP_F64_CONVERT_I32_S:
    case PW_OP_F64_CONVERT_I32_U:
    case PW_OP_F64_CONVERT_I64_S: {
        /* cvtsi2ss/cvtsi2sd: what the C casts (float)a / (double)a compile to; an
         * unsigned i32 converts exactly as the zero-extended i64 */
        bool f64 = op >= PW_OP_F64_CONVERT_I32_S;
        bool s32 = op == PW_OP_F32_CONVERT_I32_S || op == PW_OP_F64_CONVERT_I32_S;
        bool i64 = op == PW_OP_F32_CONVERT_I64_S || op == PW_OP_F64_CONVERT_I64_S;
        pw_xmem d = SF(1), a = SL(2);
        int r = d.index == X_DIRECTX ? d.base : 0;
        ld(c, i64, X_RAX, a);
        /* cvtsi2sd merges into r's upper half: r zeroed first (an idiom that waits
         * for nothing), so the conversion does not wait for r's last writer */
        pw__x64_sse_rr(x, -1, X_SSE_XORPS, false, r, r);
        pw__x64_sse_rr(x, f64 ? 0xF2 : 0xF3, X_SSE_CVTSI2, !s32, r, X_RAX);
        sse_st(c, f64 ? 0xF2 : 0xF3, d, r);
        return true;
    }
    case PW_OP_F32_DEMOTE_F64:
    case PW_OP_F64_PROMOTE_F32: {
        /* cvtsd2ss / cvtss2sd, as the C casts */
        bool dem = op == PW_OP_F32_DEMOTE_F64;
        pw_xmem d = SF(1), a = SF(2);
        int r = d.index == X_DIRECTX ? d.base : 0;
        /* a into r first (a whole-register write), converted in place: no wait for
         * r's last writer, whose upper half cvtss2sd/cvtsd2ss would merge */
        sse_ld(c, dem ? 0xF2 : 0xF3, r, a);
        pw__x64_sse_rr(x, dem ? 0xF2 : 0xF3, X_SSE_CVTF, false, r, r);
        sse_st(c, dem ? 0xF3 : 0xF2, d, r);
        return true;
    }
    case PW_OP_F32_SQRT:
    case PW_OP_F64_SQRT: {
        /* sqrtss/sqrtsd: what the C library's sqrtf/sqrt compute on x86-64 (also the
         * NaN bits: default NaN for negatives, quieted payloads) */
        int pfx = op == PW_OP_F64_SQRT ? 0xF2 : 0xF3;
        pw_xmem d = SF(1), a = SF(2);
        int r = d.index == X_DIRECTX ? d.base : 0;
        if ((c->isa & ISA_AVX) && a.index == X_DIRECTX && a.base != r) {
            /* vsqrtsd r, a, a: from a's register, the upper half from a too */
            pw__x64_vex_rr(x, pfx, X_SSE_SQRT, r, a.base, a.base);
        } else {
            sse_ld(c, pfx, r, a);
            pw__x64_sse_rr(x, pfx, X_SSE_SQRT, false, r, r);
        }
        sse_st(c, pfx, d, r);
        return true;
    }
    default: return false;
    }
}

/* Float to integer truncation inline (trapping and saturating, to i32, u32 and i64;
 * to u64 it stays on the helper): cvttss2si/cvttsd2si, whose result is exact for
 * every operand in range and the "integer indefinite" (the minimum) otherwise, so one
 * test sends only the minimum (for u32, a 64-bit conversion outside [0, 2^32)) to the
 * exact checks, which are the interpreter's (interp.h PW_TRUNCS, fops.h): NaN
 * traps "invalid conversion to integer" or saturates to 0, a value outside (lo, hi)
 * traps "integer overflow" or saturates to the bound on its side; the minimum
 * itself, when a truncates to it, passes. */
static bool ftrunc(jc *c, uint32_t pos, int op, uint32_t *len) {
    /* the trapping forms' open range (lo, hi): the interpreter's own bounds */
#define TB(n, fin, fout, Ty, lo, hi) [PW_OP_##n] = {lo, hi},
    static const struct { double lo, hi; } bound[PW_OP_COUNT_] = {PW_TRUNCS(TB)};
#undef TB
    bool f64, w, u, sat;
    switch (op) {
#define TR(n, F, W, U, S)                                                                          \
    case PW_OP_##n: f64 = F, w = W, u = U, sat = S; break;
        TR(I32_TRUNC_F32_S, false, false, false, false)
        TR(I32_TRUNC_F64_S, true, false, false, false)
        TR(I32_TRUNC_F32_U, false, false, true, false)
        TR(I32_TRUNC_F64_U, true, false, true, false)
        TR(I64_TRUNC_F32_S, false, true, false, false)
        TR(I64_TRUNC_F64_S, true, true, false, false)
        TR(I32_TRUNC_SAT_F32_S, false, false, false, true)
        TR(I32_TRUNC_SAT_F64_S, true, false, false, true)
        TR(I32_TRUNC_SAT_F32_U, false, false, true, true)
        TR(I32_TRUNC_SAT_F64_U, true, false, true, true)
        TR(I64_TRUNC_SAT_F32_S, false, true, false, true)
        TR(I64_TRUNC_SAT_F64_S, true, true, false, true)
#undef TR
    default: return false;
    }
    double lo = bound[op].lo, hi = bound[op].hi;
    *len = 3;
    pw_x64 *x = &c->x;
    int pfx = f64 ? 0xF2 : 0xF3, ucpfx = f64 ? 0x66 : -1;
    pw_xmem a = SF(2), src = a;
    if (a.index == X_DIRECT) { /* a float in a GPR pin */
        sse_ld(c, pfx, 0, a);
        src = x_xreg(0);
    }
    /* u32 converts in 64 bits: exact for every a in (-1, 2^32) */
    pw__x64_sse_rm(x, pfx, X_SSE_CVTT, w || u, X_RAX, src);
    size_t ok;
    if (u) {
        pw__x64_mov_rr(x, true, X_RCX, X_RAX);
        pw__x64_shift_i(x, X_SHR, true, X_RCX, 32);
        ok = pw__x64_jcc32(x, X_CC_E);
    } else {
        pw__x64_alu_ri(x, X_CMP, w, X_RAX, 1); /* overflows only for the minimum */
        ok = pw__x64_jcc32(x, X_CC_NO);
    }
    sse_ld(c, pfx, 0, a); /* the rare case: a in xmm0 */
    if (!sat) {
        pw__x64_sse_rr(x, ucpfx, X_SSE_UCOMI, false, 0, 0);
        trap_if(c, X_CC_P, PW_TRAP_INVALID_CONV);
        if (u) {
            jmp_to(c, special(c, PW_TRAP_CONV_OVERFLOW));
        } else {
            uint64_t lb, hb;
            if (f64) {
                memcpy(&lb, &lo, 8);
                memcpy(&hb, &hi, 8);
            } else {
                float lf = (float)lo, hf = (float)hi;
                uint32_t l32, h32;
                memcpy(&l32, &lf, 4);
                memcpy(&h32, &hf, 4);
                lb = l32, hb = h32;
            }
            vconst_op(c, ucpfx, 0, X_SSE_UCOMI, 0, lb, 0);
            trap_if(c, X_CC_BE, PW_TRAP_CONV_OVERFLOW); /* a <= lo */
            vconst_op(c, ucpfx, 0, X_SSE_UCOMI, 0, hb, 0);
            trap_if(c, X_CC_AE, PW_TRAP_CONV_OVERFLOW); /* a >= hi */
            /* lo < a < hi: rax holds the minimum, a's truncation */
        }
    } else {
        /* NaN: 0; at or below zero: the minimum (0 for u32); above: the maximum. The
         * moves keep the flags of the compare with zero. */
        pw__x64_sse_rr(x, -1, X_SSE_XORPS, false, 1, 1);
        pw__x64_sse_rr(x, ucpfx, X_SSE_UCOMI, false, 0, 1);
        pw__x64_mov_ri32(x, X_RAX, 0);
        size_t nan = pw__x64_jcc32(x, X_CC_P);
        if (!u) pw__x64_mov_ri64(x, X_RAX, w ? (uint64_t)INT64_MIN : (uint32_t)INT32_MIN);
        size_t low = pw__x64_jcc32(x, X_CC_BE);
        pw__x64_mov_ri64(x, X_RAX, u ? UINT32_MAX : w ? (uint64_t)INT64_MAX : INT32_MAX);
        pw__x64_patch32(x, low, (int32_t)(x->len - (low + 4)));
        pw__x64_patch32(x, nan, (int32_t)(x->len - (nan + 4)));
    }
    pw__x64_patch32(x, ok, (int32_t)(x->len - (ok + 4)));
    st(c, w, SL(1), X_RAX);
    return true;
}

static void translate(jc *c, uint32_t pos, int op, uint32_t *len) {

    if (binops[op].kind) {
        *len = 4;
        bool br = binops[op].form >= 2; /* the fused compare-and-branch: no result */
        c->dse_dst = br ? UINT32_MAX : pos + 1;
        c->dse_op[0] = br ? pos + 1 : pos + 2;
        c->dse_op[1] = br ? pos + 2 : pos + 3;
        c->dse_n = binops[op].form & 1 ? 1 : 2; /* an immediate b */
        binop(c, pos, &binops[op]);
        c->dse_n = 0;
        return;
    }
    if (memops[op].bytes) {
        if (!memops[op].store) {
            c->dse_dst = pos + 1;
            c->dse_op[0] = pos + 2;
            c->dse_op[1] = pos + 3;
            c->dse_n = memops[op].form == 2 ? 2 : 1; /* an address operand added */
        } else {
            /* a store pops its address, an added address operand and its value, and
             * stores no result: its words after the opcode are the address, then the
             * added operand or the constant (a constant counted as a slot only makes
             * a store look live), then the value for forms 1 and 2 */
            c->dse_dst = UINT32_MAX;
            c->dse_op[0] = pos + 1;
            c->dse_op[1] = pos + 2;
            c->dse_op[2] = pos + 3;
            c->dse_n = memops[op].form == 0 ? 2 : 3;
        }
        memop(c, pos, &memops[op], len);
        c->dse_n = 0;
        return;
    }
    if (fpops[op].kind) {
        fparith(c, pos, &fpops[op], len);
        return;
    }
    *len = 3;
    if (t_control(c, pos, op, len) || t_moves(c, pos, op, len) || t_int(c, pos, op, len) ||
        t_float(c, pos, op, len))
        return;
    if (ftrunc(c, pos, op, len) || bulk(c, pos, op, len)) return;
    if (fop_helper[op]) {
        fophelper(c, pos, op, len);
        return;
    }
    /* Not in the supported set: the function stays on the interpreter. */
    c->fail = true;
}

/* Two entries. The outer one (offset 0, the published entry, called from C as
 * pw_jit_entry) saves the System V callee-saved registers, sets r14/r15, the memory
 * registers and pw_store.jit_sp (its rsp: where a trap unwinds to) and calls the
 * inner one, which starts JIT_INNER bytes later, with the frame in rdx; it returns
 * PW_OK when the inner entry returns. JIT code of the same module calls the inner
 * entry directly (rdx = the callee's frame; r12-r15 already right): it saves rbp and
 * then rbx (in that order, right below its return address: the walk of jit_frames
 * reads the caller's rbx there), keeps rsp 16-byte aligned for helper calls, zeroes
 * the declared locals and loads the pinned slots. r12/r13 are current whenever JIT
 * code runs, except between a helper call's return and the reload that follows it (C
 * code called through the outer entry restores the values it was entered with, which
 * a memory.grow inside may have made stale); so a function returns with them current,
 * and a direct JIT-to-JIT call needs no reload. */
static void outer_exit(pw_x64 *x) {
    pw__x64_alu_ri(x, X_ADD, true, X_RSP, 8);
    pw__x64_pop(x, X_R15);
    pw__x64_pop(x, X_R14);
    pw__x64_pop(x, X_R13);
    pw__x64_pop(x, X_R12);
    pw__x64_pop(x, X_RBX);
    pw__x64_pop(x, X_RBP);
    pw__x64_ret(x);
}

/* Pinned slots at entry: parameters as passed; declared locals zero, except those
 * the compiler found written before every read (pw_cfunc.nozero: compile.c, "Definite
 * assignment"), which keep whatever the frame or register held. A register pinning
 * only cells of declared locals is zeroed (or left alone), every other cell of a
 * declared local is zeroed in the frame first (the register loads it). The operand
 * stack slots are dead until written, so they are not loaded. */
static bool pin_local(const jc *c, uint32_t k) {
    uint32_t s = c->pslot[k], e = s + (c->pwide[k] ? 2 : 1);
    return s >= c->cf->nparams && e <= c->cf->nlocals && e - c->cf->nparams <= 64;
}
/* Whether declared cell s must be zero at entry. */
static bool must_zero(const jc *c, uint32_t s) {
    uint32_t i = s - c->cf->nparams;
    return i >= 64 || !(c->cf->nozero >> i & 1);
}
/* Whether declared cell s is zeroed in the frame: it must be zero and is not wholly
 * in a register (inreg: such cells below nparams + 64). */
static bool frame_zero(const jc *c, uint32_t s, uint64_t inreg) {
    uint32_t i = s - c->cf->nparams;
    return must_zero(c, s) && (i >= 64 || !(inreg >> i & 1));
}
static void entry_locals(jc *c) {
    pw_x64 *x = &c->x;
    uint32_t np = c->cf->nparams, nl = c->cf->nlocals, nz = 0, lo = nl;
    uint64_t inreg = 0;
    for (uint32_t k = 0; k < c->npins; k++)
        if (pin_local(c, k)) inreg |= (c->pwide[k] ? 3ull : 1ull) << (c->pslot[k] - np);
    for (uint32_t s = np; s < nl; s++)
        if (frame_zero(c, s, inreg)) {
            nz++;
            if (lo == nl) lo = s;
        }
    if (nz) pw__x64_alu_rr(x, X_XOR, false, X_RAX, X_RAX);
    if (nz > 16) { /* every declared local from the first one to zero, in a loop */
        pw__x64_lea(x, true, X_RCX, x_mem(X_RBX, (int32_t)(lo * 8)));
        pw__x64_lea(x, true, X_RDX, x_mem(X_RBX, (int32_t)(nl * 8)));
        size_t top = x->len;
        pw__x64_store(x, 8, x_mem(X_RCX, 0), X_RAX);
        pw__x64_alu_ri(x, X_ADD, true, X_RCX, 8);
        pw__x64_alu_rr(x, X_CMP, true, X_RCX, X_RDX);
        size_t back = pw__x64_jcc32(x, X_CC_B);
        pw__x64_patch32(x, back, (int32_t)((int64_t)top - (int64_t)(back + 4)));
    } else if (nz) {
        for (uint32_t s = lo; s < nl; s++)
            if (frame_zero(c, s, inreg)) pw__x64_store(x, 8, x_mem(X_RBX, (int32_t)(s * 8)), X_RAX);
    }
    for (uint32_t k = 0; k < c->npins; k++) {
        int r = c->preg[k];
        pw_xmem m = x_mem(X_RBX, (int32_t)(c->pslot[k] * 8));
        if (c->pslot[k] >= nl) continue;
        if (pin_local(c, k)) {
            if (!must_zero(c, c->pslot[k]) && (!c->pwide[k] || !must_zero(c, c->pslot[k] + 1)))
                continue; /* written before it is read */
            if (r >= PIN_XMM0)
                pw__x64_sse_rr(x, 0x66, 0xEF, false, r - PIN_XMM0, r - PIN_XMM0); /* pxor */
            else
                pw__x64_alu_rr(x, X_XOR, false, r, r);
        } else if (c->pwide[k]) {
            pw__x64_sse_rm(x, 0xF3, 0x6F, false, r - PIN_XMM0, m);
        } else if (r >= PIN_XMM0) {
            pw__x64_sse_rm(x, 0xF2, X_SSE_MOVLD, false, r - PIN_XMM0, m);
        } else {
            pw__x64_load(x, X_LD64, r, m);
        }
    }
}

static void prologue(jc *c) {
    pw_x64 *x = &c->x;
    pw__x64_push(x, X_RBP);
    pw__x64_push(x, X_RBX);
    pw__x64_push(x, X_R12);
    pw__x64_push(x, X_R13);
    pw__x64_push(x, X_R14);
    pw__x64_push(x, X_R15);
    pw__x64_alu_ri(x, X_SUB, true, X_RSP, 8); /* 16-byte alignment for helper calls */
    pw__x64_mov_rr(x, true, X_R14, X_RSI);
    pw__x64_mov_rr(x, true, X_R15, X_RDX);
    reload_mem(c);
    pw__x64_mov_rr(x, true, X_RDX, X_RDI);
    pw__x64_store(x, 8, x_mem(X_R15, (int32_t)offsetof(pw_store, jit_sp)), X_RSP);
    pw__x64_byte(x, 0xE8); /* call rel32: the inner entry */
    size_t at = x->len;
    pw__x64_u32(x, 0);
    pw__x64_alu_rr(x, X_XOR, false, X_RAX, X_RAX); /* PW_OK */
    c->outer_epi = x->len;
    outer_exit(x);
    if (x->len > JIT_INNER) c->fail = true;
    while (x->len < JIT_INNER)
        pw__x64_byte(x, 0xCC);
    pw__x64_patch32(x, at, (int32_t)(JIT_INNER - (at + 4)));
    /* inner entry */
    pw__x64_push(x, X_RBP);
    pw__x64_push(x, X_RBX);
    for (uint32_t k = 0; k < c->nsave; k++)
        pw__x64_push(x, c->save[k]);
    if (c->pad) pw__x64_alu_ri(x, X_SUB, true, X_RSP, 8); /* 16-byte alignment */
    pw__x64_mov_rr(x, true, X_RBX, X_RDX);
    entry_locals(c);
}

/* The trap status: s->trap = eax (the code), eax = PW_ERR_TRAP. */
static void trap_status(pw_x64 *x) {
    pw__x64_store(x, 4, x_mem(X_R15, (int32_t)offsetof(pw_store, trap)), X_RAX);
    pw__x64_mov_ri32(x, X_RAX, PW_ERR_TRAP);
}

/* The inner entry's return. */
static void inner_exit(jc *c) {
    if (c->pad) pw__x64_alu_ri(&c->x, X_ADD, true, X_RSP, 8);
    for (uint32_t k = c->nsave; k-- > 0;)
        pw__x64_pop(&c->x, c->save[k]);
    pw__x64_pop(&c->x, X_RBX);
    pw__x64_pop(&c->x, X_RBP);
    pw__x64_ret(&c->x);
}

/* The fault stub at the start of a guard variant's mapping: where the signal
 * handler resumes a function body that faulted on memory 0 (guard.c): what the
 * body's own PW_TRAP_MEM_OOB stub would do (a trap abandons every JIT frame up to the
 * entry from C, whose outer entry's rsp is pw_store.jit_sp). */
static void trap_stub(pw_x64 *x, pw_trap_code code) {
    pw__x64_mov_ri32(x, X_RAX, code);
    trap_status(x);
    pw__x64_load(x, X_LD64, X_RSP, x_mem(X_R15, (int32_t)offsetof(pw_store, jit_sp)));
    outer_exit(x);
}
/* ... and JIT_POLL_STUB bytes after it, the interrupt stub, where it resumes a body
 * whose poll faulted on the store's poll page (PW_TRAP_INTERRUPTED, as the explicit
 * variant's poll raises). */
static void fault_stub(pw_x64 *x) {
    size_t at = x->len;
    trap_stub(x, PW_TRAP_MEM_OOB);
    while (x->len < at + JIT_POLL_STUB)
        pw__x64_byte(x, 0xCC);
    trap_stub(x, PW_TRAP_INTERRUPTED);
}

/* After the body: the trap stubs; LAB_EXIT, the way out with a non-zero status in eax
 * (a trap, or a failed call helper): it unwinds every JIT frame up to the entry from
 * C at once (rsp = pw_store.jit_sp, the outer entry's epilogue; JIT frames hold
 * nothing to clean up, and a direct call's caller never sees a status). */
static void epilogue(jc *c) {
    pw_x64 *x = &c->x;
    /* trap stubs: eax = code, then the common trap exit; only those the body jumps to
     * (most functions can raise two or three of the kinds) */
    bool used[PW_TRAP_COUNT_] = {false};
    for (uint32_t k = 0; k < c->nfx; k++)
        if (c->fx[k].label >= c->n && c->fx[k].label - c->n < PW_TRAP_COUNT_)
            used[c->fx[k].label - c->n] = true;
    for (uint32_t k = 1; k < PW_TRAP_COUNT_; k++) {
        if (!used[k]) continue;
        c->lab[special(c, k)] = (int32_t)x->len;
        pw__x64_mov_ri32(x, X_RAX, k);
        jmp_to(c, special(c, LAB_TRAPC));
    }
    c->lab[special(c, LAB_TRAPC)] = (int32_t)x->len;
    trap_status(x);
    c->lab[special(c, LAB_EXIT)] = (int32_t)x->len;
    pw__x64_load(x, X_LD64, X_RSP, x_mem(X_R15, (int32_t)offsetof(pw_store, jit_sp)));
    size_t at = pw__x64_jmp32(x);
    pw__x64_patch32(x, at, (int32_t)((int64_t)c->outer_epi - (int64_t)(at + 4)));
}

/* The return, where it occurs (a few bytes; no jump to a shared exit): the pinned
 * results (slots 0..nresults-1) stored, the inner entry's saves undone. */
static void ret_seq(jc *c) {
    pw_x64 *x = &c->x;
    if (ret_rax(c->m, c->cf->type)) {
        /* the result in rax as well as in cell 0 (ret_rax); a pin's register is
         * copied, a cell the previous instruction stored from rax costs nothing */
        int8_t r = c->pin && !c->analyze ? c->pin[0] : -1;
        if (r < 0 && c->vpin && !c->analyze) r = c->vpin[0];
        if (r >= PIN_XMM0)
            pw__x64_sse_rr(x, 0x66, X_SSE_MOVDST, true, r - PIN_XMM0, X_RAX);
        else if (r >= 0)
            pw__x64_mov_rr(x, true, X_RAX, r);
        else
            ld(c, true, X_RAX, x_mem(X_RBX, 0));
    }
    for (uint32_t k = 0; k < c->npins; k++)
        if (c->pslot[k] < c->cf->nresults) {
            pw_xmem m = x_mem(X_RBX, (int32_t)(c->pslot[k] * 8));
            if (c->pwide[k])
                pw__x64_sse_rm(x, 0xF3, 0x7F, false, c->preg[k] - PIN_XMM0, m);
            else if (c->preg[k] >= PIN_XMM0)
                pw__x64_sse_rm(x, 0xF2, X_SSE_MOVST, false, c->preg[k] - PIN_XMM0, m);
            else
                pw__x64_store(x, 8, m, c->preg[k]);
        }
    inner_exit(c);
}

/* A loop head starts on a 16-byte boundary (functions start on one): the loop's
 * first instructions are then fetched and decoded together, not split across a
 * fetch block by wherever the code before the loop happened to end. Multi-byte
 * nops, run once on entering the loop by falling through. */
static void align_loop(jc *c) {
    static const uint8_t nops[11][11] = {
        {0x90},
        {0x66, 0x90},
        {0x0F, 0x1F, 0x00},
        {0x0F, 0x1F, 0x40, 0x00},
        {0x0F, 0x1F, 0x44, 0x00, 0x00},
        {0x66, 0x0F, 0x1F, 0x44, 0x00, 0x00},
        {0x0F, 0x1F, 0x80, 0x00, 0x00, 0x00, 0x00},
        {0x0F, 0x1F, 0x84, 0x00, 0x00, 0x00, 0x00, 0x00},
        {0x66, 0x0F, 0x1F, 0x84, 0x00, 0x00, 0x00, 0x00, 0x00},
        {0x66, 0x66, 0x0F, 0x1F, 0x84, 0x00, 0x00, 0x00, 0x00, 0x00},
        {0x66, 0x66, 0x66, 0x0F, 0x1F, 0x84, 0x00, 0x00, 0x00, 0x00, 0x00},
    };
    size_t pad = (16 - c->x.len % 16) % 16;
    while (pad) { /* one nop up to 11 bytes, two above */
        size_t k = pad > 11 ? pad - 4 : pad;
        pw__x64_bytes(&c->x, nops[k - 1], k);
        pad -= k;
    }
}

/* The br_tables' jump tables, after the body and before the exit stubs (an entry that
 * leaves its loop region goes through one, add_fix): 4-byte aligned, each entry the
 * target's offset from the table's start, as the dispatch adds it. */
static void emit_tables(jc *c) {
    pw_x64 *x = &c->x;
    uint32_t lcur = c->lcur, curpos = c->curpos;
    for (uint32_t k = 0; k < c->njt && !c->fail; k++) {
        const jtab *j = &c->jt[k];
        uint32_t pos = j->pos, n = IMM(2);
        while (x->len % 4)
            pw__x64_byte(x, 0xCC);
        size_t table = x->len;
        pw__x64_patch32(x, j->lea, (int32_t)(table - (j->lea + 4)));
        c->lcur = j->region; /* as at the br_table: exits of its region take stubs */
        c->curpos = pos;
        for (uint32_t i = 0; i < n; i++) {
            size_t at = x->len;
            pw__x64_u32(x, 0);
            add_fix(c, at, pos + IMM(3 + i), table);
        }
    }
    c->lcur = lcur;
    c->curpos = curpos;
}

/* One translation pass over the function into c->x (labels, fixups patched). */
static void run_pass(jc *c) {
    c->x.len = 0;
    c->nfx = 0;
    c->fail = false;
    c->memonly = false;
    c->nov = false;
    c->pair2 = UINT32_MAX;
    c->lc_end = UINT32_MAX;
    c->vc_slot[0] = c->vc_slot[1] = UINT32_MAX;
    c->npool = 0;
    c->npfx = 0;
    c->ngfx = 0;
    c->nvpairs = 0;
    c->nslow = 0;
    c->npins = c->fn_npins; /* the function's pins (loop regions swap some in and out) */
    /* The inner entry saves rbp, rbx, and the other kept pin GPRs it uses (its
     * callers' values may be in them: direct calls keep them), plus a pad to keep rsp
     * 16-byte aligned; around every call of C code it pushes the kept pin GPRs it
     * does not use (cpush), for the same reason. */
    c->nsave = c->ncsave = 0;
    c->extra_sp = 0;
    for (int r = 1; r < NPIN_KEPT; r++) {
        bool used = false;
        for (uint32_t k = 0; k < c->npins; k++)
            used |= c->preg[k] == pin_gprs[r];
        if (used)
            c->save[c->nsave++] = pin_gprs[r];
        else
            c->csave[c->ncsave++] = pin_gprs[r];
    }
    c->pad = c->nsave % 2 == 0 && (c->analyze || c->calls);
    c->fsize = 16 + 8 * c->nsave + (c->pad ? 8 : 0);
    c->fwd_end = SIZE_MAX;
    c->flags = c->zx = c->zr = (jfact){SIZE_MAX, UINT32_MAX, -1};
    c->fl.end = SIZE_MAX;
    c->fc = (jfact){SIZE_MAX, UINT32_MAX, -1};
    c->curpos = UINT32_MAX;
    c->x.join = SIZE_MAX;
    c->lcur = UINT32_MAX;
    c->nxs = 0;
    c->njt = 0;
    for (uint32_t k = 0; k < c->n + LAB_NSPECIAL; k++)
        c->lab[k] = -1;
    prologue(c);
    uint32_t ri = 0; /* the next loop region */
    for (uint32_t pos = 0; pos < c->n && !c->fail;) {
        int op = op_of(c->jm, c->code[pos]);
        if (op < 0) {
            c->fail = true;
            break;
        }
        if (ri < c->nlr && c->lcur == UINT32_MAX) {
            if (pos == c->lr[ri].t)
                region_enter(c, ri, true); /* before the label: on falling into the loop */
            else if (pos > c->lr[ri].t)
                c->fail = true; /* not reached: a loop head starts an instruction */
        }
        if (c->target && c->target[pos]) vc_clear(c); /* before the label: on fallthrough */
        bool loop = !c->analyze && c->target && c->target[pos] == T_LOOP;
        if (loop) align_loop(c);
        c->lab[pos] = (int32_t)c->x.len;
        if (loop) poll_interrupt(c);
        c->prevpos = c->curpos;
        c->curpos = pos;
        c->dse_n = 0;
        uint32_t len = 0;
        translate(c, pos, op, &len);
        /* a branch target that emitted nothing shares its address with the next
         * instruction, where jumps to it then arrive: no record of the code before
         * it (forwarding, addresses; flags_of checks prevpos) may hold there */
        if (c->target && c->target[pos] && c->x.len == (size_t)c->lab[pos])
            c->fwd_end = c->zx.end = c->zr.end = SIZE_MAX;
        if (len == 0 || pos + len > c->n) c->fail = true;
        if (c->lcur != UINT32_MAX && pos == c->lr[c->lcur].e) {
            region_exit(c, c->lcur, true); /* falling out of the last back-edge */
            ri++;
        }
        pos += len;
    }
    if (c->lcur != UINT32_MAX) {
        region_exit(c, c->lcur, false);
        c->fail = true;
    }
    if (!c->fail) emit_tables(c);
    if (!c->fail) emit_slow_calls(c);
    if (!c->fail) emit_exit_stubs(c);
    if (!c->fail) epilogue(c);
    if (!c->fail) emit_pool(c);
    for (uint32_t k = 0; k < c->nfx && !c->fail; k++) {
        const fixup *f = &c->fx[k];
        int32_t t = c->lab[f->label];
        if (t < 0) {
            c->fail = true;
            break;
        }
        pw__x64_patch32(&c->x, f->at, t - (int32_t)f->base);
    }
    /* GOT slots: the table is at offset 0 of the translation, this code at c->base */
    for (uint32_t k = 0; k < c->ngfx && !c->fail; k++) {
        int64_t disp = (int64_t)c->gfx[k].label * 8 - ((int64_t)c->base + c->gfx[k].at + 4);
        pw__x64_patch32(&c->x, c->gfx[k].at, (int32_t)disp);
    }
}

/* A pass after pass 1, whose code is kept: the inner entry's alignment pad was
 * decided by whether pass 1 called anything; should this pass call where pass 1 did
 * not (a template that took another way with the pins), it is run again, padded. */
static void emit_pass(jc *c) {
    bool called = c->calls;
    run_pass(c);
    if (!called && c->calls) run_pass(c);
}

/* Vector pins (after the scalar ones, in the xmm registers left): a v128 whose
 * first cell is used as a v128 operand's first cell or a pair's first cell (V_LO,
 * V_PAIR_LO) or as a scalar in a register (V_OTHER: the low half of the register;
 * a scalar write there ends the v128 that the cells held, and the second cell is
 * never read but as part of a v128 written whole after it), whose second cell is
 * used only as second cells, whose pair
 * partners are not scalar-pinned and whose constant pairs can be fused (no branch
 * into their middle); heaviest first, when it gains more than it costs. */
static void choose_vpins(jc *c, const uint64_t *wt, uint64_t cost, int nx) {
    uint32_t ns = c->cf->frame_slots;
    uint8_t *bad = calloc(ns ? ns : 1, 1);
    if (!bad) return;
    for (uint32_t k = 0; k + 3 <= c->nvpairs; k += 3) {
        uint32_t a = c->vpairs[k], b = c->vpairs[k + 1], p2 = c->vpairs[k + 2];
        if (b == UINT32_MAX) {
            if (c->target[p2]) bad[a] = 1;
        } else {
            if (!vpair_ok(c, b)) bad[a] = 1;
            if (!vpair_ok(c, a)) bad[b] = 1;
        }
    }
    for (int r = nx; r < NPIN_XMM - VC_N; r++) {
        uint32_t best = UINT32_MAX;
        for (uint32_t sl = 0; sl + 1 < ns; sl++) {
            uint8_t u = c->vuse[sl], h = c->vuse[sl + 1];
            if (!(u & V_LO) || (u & ~(V_LO | V_PAIR_LO | V_OTHER)) || (h & ~(V_HI | V_PAIR_HI)) ||
                bad[sl] || c->pin[sl] >= 0 || c->pin[sl + 1] >= 0 || c->vpin[sl] >= 0)
                continue;
            uint64_t w = wt[sl] + wt[sl + 1];
            if (w > cost && (best == UINT32_MAX || w > wt[best] + wt[best + 1])) best = sl;
        }
        if (best == UINT32_MAX) break;
        int8_t reg = (int8_t)(PIN_XMM0 + 2 + r);
        c->vpin[best] = reg;
        c->pslot[c->npins] = best;
        c->pwide[c->npins] = true;
        c->preg[c->npins++] = reg;
    }
    free(bad);
}

/* What pinning slot sl adds outside calls: a parameter's load at entry, a result's
 * store at the return; a declared local is zeroed in its register instead of its
 * cell (entry_locals: past the first 16, in both), an operand-stack slot is dead at
 * entry and exit. */
static uint64_t entry_cost(const jc *c, uint32_t sl) {
    uint32_t np = c->cf->nparams;
    return (sl < np) + (sl < c->cf->nresults) + (sl >= np && sl < c->cf->nlocals && sl - np >= 16);
}

/* Per code word, the number of backward-branch ranges (target..source) containing it
 * (owned by the caller, free; NULL on OOM). */
static int32_t *loop_depth(const jc *c) {
    int32_t *d = calloc((size_t)c->n + 1, sizeof *d);
    if (!d) return NULL;
    for (uint32_t k = 0; k + 1 < c->nloops; k += 2) {
        d[c->loops[k]]++;
        d[c->loops[k + 1] + 1]--;
    }
    for (uint32_t i = 1; i <= c->n; i++)
        d[i] += d[i - 1];
    return d;
}
static uint64_t depth_weight(int32_t dep) {
    return 1ull << (3 * (dep < 0 ? 0 : dep > 3 ? 3 : dep));
}

/* Choose the pinned slots from pass 1's record: each access weighs 8^d (d = loop
 * nesting at its position, counted by backward-branch ranges, at most 3); a call
 * costs every pin a spill and a reload. The heaviest slots whose every use a GPR can
 * take go to GPRs, those whose every use an xmm register can take (at least one an
 * SSE operation) to xmm registers; a slot must gain more than it costs. */
static void choose_pins(jc *c, const int32_t *d) {
    uint32_t ns = c->cf->frame_slots;
    uint64_t *wt = calloc(ns ? ns : 1, sizeof *wt);
    uint64_t *fw = calloc(ns ? ns : 1, sizeof *fw);    /* weight of SSE uses */
    uint64_t *gw = calloc(ns ? ns : 1, sizeof *gw);    /* weight of integer r/m uses */
    uint64_t *dw = calloc((size_t)ns + 1, sizeof *dw); /* direct calls at argbase <= slot */
    if (!wt || !fw || !gw || !dw) goto out;
    uint64_t callw = 0, gcallw = 0; /* every call; those not direct */
    for (uint32_t k = 0; k < c->nacc; k++) {
        uint64_t w = depth_weight(d[c->acc[k].pos]);
        uint32_t sl = c->acc[k].slot;
        if (sl == UINT32_MAX) {
            callw += w;
            if (c->acc[k].cls)
                dw[c->acc[k].cls - 1 < ns ? c->acc[k].cls - 1 : ns] += w;
            else
                gcallw += w;
        } else {
            wt[sl] += w;
            if (c->acc[k].cls == U_SSE) fw[sl] += w;
            if (c->acc[k].cls == U_GPR) gw[sl] += w;
        }
    }
    /* A pin costs a store and a reload at every call sequence (2 x callw), plus
     * what it adds at entry and return (entry_cost), except a kept GPR (gpr_kept):
     * at every call that
     * is not direct (gcallw) and every direct call whose argbase is at or below its
     * slot (direct_begin; dw[sl] becomes their weight), plus its save and restore at
     * entry (rbp is saved anyway). Each GPR goes to the slot that gains most over
     * its cost in the register's class: kept registers rbp first, then the others. */
    for (uint32_t sl = 1; sl <= ns; sl++)
        dw[sl] += dw[sl - 1];
    uint64_t cost = 2 * callw + 2;        /* vector pins: a load or zeroing, and a store */
    int nx = 0, ngk = 0, ngo = NPIN_KEPT; /* xmm registers taken; next kept, other GPR */
    int npin_gpr = npin_gprs(c->guard);
    for (;;) {
        uint32_t best = UINT32_MAX;
        uint64_t bestgain = 0;
        bool bestkept = false;
        for (uint32_t sl = 0; sl < ns; sl++) {
            uint8_t u = c->use[sl];
            if (!u || (u & U_MEM) || fw[sl] > gw[sl] || c->pin[sl] >= 0) continue;
            uint64_t e = entry_cost(c, sl), ck = 2 * (gcallw + dw[sl]) + e + 2 * (ngk > 0);
            uint64_t co = 2 * callw + e;
            if (ngk < NPIN_KEPT && wt[sl] > ck && wt[sl] - ck > bestgain) {
                best = sl;
                bestgain = wt[sl] - ck;
                bestkept = true;
            }
            if (ngo < npin_gpr && wt[sl] > co && wt[sl] - co > bestgain) {
                best = sl;
                bestgain = wt[sl] - co;
                bestkept = false;
            }
        }
        if (best == UINT32_MAX) break;
        int8_t reg = pin_gprs[bestkept ? ngk++ : ngo++];
        c->pin[best] = reg;
        c->pslot[c->npins] = best;
        c->preg[c->npins++] = reg;
    }
    for (int r = 0; r < NPIN_XMM - (c->has_simd ? VC_N : 0); r++) {
        uint32_t best = UINT32_MAX;
        for (uint32_t sl = 0; sl < ns; sl++) {
            uint8_t u = c->use[sl];
            bool ok = u && !(u & U_MEM) && fw[sl] > gw[sl];
            if (ok && c->pin[sl] < 0 && wt[sl] > 2 * callw + entry_cost(c, sl) &&
                (best == UINT32_MAX || wt[sl] > wt[best]))
                best = sl;
        }
        if (best == UINT32_MAX) break;
        int8_t reg = (int8_t)(PIN_XMM0 + 2 + r);
        c->pin[best] = reg;
        c->pslot[c->npins] = best;
        c->preg[c->npins++] = reg;
        nx++;
    }
    if (c->has_simd) choose_vpins(c, wt, cost, nx);
out:
    free(wt);
    free(fw);
    free(gw);
    free(dw);
}

/* Sort n records of two uint64_t or two uint32_t (insertion sort for the few of a
 * typical function, qsort beyond). */
static void sort_small(void *base, size_t n, size_t size, int (*cmp)(const void *, const void *)) {
    if (n > 32) {
        qsort(base, n, size, cmp);
        return;
    }
    unsigned char *b = base, tmp[16];
    for (size_t i = 1; i < n; i++) {
        memcpy(tmp, b + i * size, size);
        size_t j = i;
        for (; j > 0 && cmp(b + (j - 1) * size, tmp) > 0; j--)
            memcpy(b + j * size, b + (j - 1) * size, size);
        memcpy(b + j * size, tmp, size);
    }
}
static int cmp_pair(const void *a, const void *b) {
    const uint32_t *x = a, *y = b;
    return x[0] != y[0] ? (x[0] < y[0] ? -1 : 1) : x[1] != y[1] ? (x[1] < y[1] ? -1 : 1) : 0;
}
/* (weight, slot), heaviest first */
static int cmp_wslot(const void *a, const void *b) {
    const uint64_t *x = a, *y = b;
    return x[0] != y[0] ? (x[0] > y[0] ? -1 : 1) : x[1] != y[1] ? (x[1] < y[1] ? -1 : 1) : 0;
}

/* What a swap must gain, in units of the loop's entry weight: a store and a load where
 * the loop is entered and again where it is left would be 4, but the static guess of
 * eight iterations per entry is often high (qsort ran 1.7 % more instructions at 6),
 * so about two more accesses per iteration are asked for. */
#define LP_SWAP 16
/* The swaps of one region from the weights of its accesses (wl, over the nt slots in
 * ws as (weight, slot)), its calls' weight and its entry's (went): a slot the function
 * pins to a GPR keeps it; another integer slot takes the GPR whose function slot
 * weighs least here, if it weighs more than that slot plus LP_SWAP x went (a free
 * register: half that, plus its spills and reloads at the loop's calls). */
static void region_swaps(jc *c, lregion *g, const uint64_t *wl, uint64_t *ws, uint32_t nt,
                         uint64_t callw, uint64_t went) {
    int npin_gpr = npin_gprs(c->guard);
    uint32_t owner[NPIN_GPR], owner_k[NPIN_GPR]; /* the function's slot there, its pin */
    bool usable[NPIN_GPR], taken[NPIN_GPR] = {false};
    for (int r = 0; r < NPIN_GPR; r++) {
        owner[r] = owner_k[r] = UINT32_MAX;
        usable[r] = r < npin_gpr;
    }
    for (uint32_t k = 0; k < c->fn_npins; k++)
        for (int r = 0; r < npin_gpr; r++)
            if (c->preg[k] == pin_gprs[r]) owner[r] = c->pslot[k], owner_k[r] = k;
    /* rsi is saved by the inner entry only if the function pins it: not taken here */
    for (int r = 1; r < NPIN_KEPT; r++)
        if (owner[r] == UINT32_MAX) usable[r] = false;
    sort_small(ws, nt, 2 * sizeof *ws, cmp_wslot);
    uint32_t nfree = 0;
    g->nsw = 0;
    for (uint32_t i = 0; i < nt; i++) {
        uint64_t w = ws[2 * i];
        uint32_t sl = (uint32_t)ws[2 * i + 1];
        if (c->use[sl] & (U_MEM | U_SSE | U_V)) continue;
        if (c->pin[sl] >= 0) {
            for (int r = 0; r < npin_gpr; r++)
                if (pin_gprs[r] == c->pin[sl] && usable[r]) taken[r] = true;
            continue;
        }
        int best = -1;
        uint64_t bestgain = 0;
        for (int r = 0; r < npin_gpr; r++) {
            if (!usable[r] || taken[r]) continue;
            uint64_t cost = owner[r] != UINT32_MAX ? wl[owner[r]] + LP_SWAP * went
                                                   : LP_SWAP / 2 * went + 2 * callw;
            if (w > cost && w - cost > bestgain) best = r, bestgain = w - cost;
        }
        if (best < 0) continue;
        taken[best] = true;
        lswap *s = &g->sw[g->nsw++];
        s->a = owner[best];
        s->b = sl;
        s->reg = pin_gprs[best];
        s->k = owner[best] != UINT32_MAX ? owner_k[best] : c->fn_npins + nfree++;
    }
    g->npins = c->fn_npins + nfree;
}

/* Loop pins (docs/jit.md "Loop pins"), after the function's (choose_pins): each
 * innermost loop, the span from its head to its last back-edge, entered only by
 * falling into its head (pass 1's jumps), gets the GPRs of function pins it barely
 * uses, and the free ones, for its own hot integer slots (region_swaps). Not in a
 * function with SIMD (its xmm use and result cache stay as they are). */
static void choose_loop_pins(jc *c, const int32_t *d) {
    c->nlr = 0;
    c->fn_npins = c->npins;
    if (c->has_simd || c->nloops < 2) return;
    uint32_t ns = c->cf->frame_slots, nl = c->nloops / 2;
    uint32_t *lp = malloc((size_t)nl * 2 * sizeof *lp);
    uint64_t *wl = calloc(ns ? ns : 1, sizeof *wl);
    uint64_t *ws = malloc((size_t)(ns ? ns : 1) * 2 * sizeof *ws);
    c->lr = malloc((size_t)nl * sizeof *c->lr);
    if (!lp || !wl || !ws || !c->lr) goto out;
    memcpy(lp, c->loops, (size_t)nl * 2 * sizeof *lp);
    sort_small(lp, nl, 2 * sizeof *lp, cmp_pair);
    uint32_t nr = 0; /* loops by head: (head, last back-edge) */
    for (uint32_t k = 0; k < nl; k++) {
        uint32_t t = lp[2 * k], e = lp[2 * k + 1];
        if (nr && c->lr[nr - 1].t == t) {
            if (e > c->lr[nr - 1].e) c->lr[nr - 1].e = e;
        } else {
            c->lr[nr++] = (lregion){.t = t, .e = e};
        }
    }
    uint32_t nc = 0; /* the innermost ones (disjoint, in order) */
    for (uint32_t i = 0; i < nr; i++)
        if ((i + 1 == nr || c->lr[i + 1].t > c->lr[i].e) && c->lr[i].e < c->n)
            c->lr[nc++] = c->lr[i];
    /* a jump into [t, e] from outside it (pass 1): the loop's pins could not be set
     * on that way in, only on falling into the head */
    for (uint32_t k = 0; k < c->nfx; k++) {
        const fixup *f = &c->fx[k];
        if (f->label >= c->n) continue;
        uint32_t lo = 0, hi = nc; /* the last region with t <= label */
        while (lo < hi) {
            uint32_t mid = (lo + hi) / 2;
            if (c->lr[mid].t <= f->label)
                lo = mid + 1;
            else
                hi = mid;
        }
        lregion *g = lo ? &c->lr[lo - 1] : NULL;
        if (g && f->label <= g->e && (f->pos < g->t || f->pos > g->e)) g->aside = true;
    }
    /* pass 1 records accesses in code order (a helper path after the body adds a few
     * at the last instruction: weights only, skipped here) */
    const slotuse *acc = c->acc;
    uint32_t ai = 0;
    for (uint32_t i = 0; i < nc; i++) {
        lregion g = c->lr[i];
        if (g.aside) continue;
        while (ai < c->nacc && acc[ai].pos < g.t)
            ai++;
        uint32_t nt = 0;
        uint64_t callw = 0;
        for (uint32_t k = ai; k < c->nacc && acc[k].pos <= g.e; k++) {
            uint64_t w = depth_weight(d[acc[k].pos]);
            uint32_t sl = acc[k].slot;
            if (sl == UINT32_MAX) {
                callw += w;
            } else if (sl < ns) {
                if (!wl[sl]) ws[2 * nt++ + 1] = sl;
                wl[sl] += w;
            }
        }
        for (uint32_t k = 0; k < nt; k++)
            ws[2 * k] = wl[ws[2 * k + 1]];
        region_swaps(c, &g, wl, ws, nt, callw, depth_weight(d[g.t] - 1));
        for (uint32_t k = 0; k < nt; k++)
            wl[ws[2 * k + 1]] = 0;
        if (g.nsw) c->lr[c->nlr++] = g; /* nlr <= i: regions in order */
    }
out:
    free(lp);
    free(wl);
    free(ws);
}

/* Translate function i of m, appending its code to out (16-byte aligned). Returns its
 * offset in out, or -1 when it falls back (out is then unchanged) or on OOM. The code
 * is position independent (relative branches, rip-relative tables; helpers by
 * absolute address). Pass 1 records slot uses, pass 2 emits with the chosen pins; if
 * pass 2 fails with pins, a pass without pins decides. */
/* Translate defined function i, appending its code (16-byte aligned) to out, whose
 * first byte lies at offset origin (a multiple of 16) of the translation; returns
 * the function's offset in out, or -1 (it stays on the interpreter). With gfx
 * non-NULL, *gfx (owned by the caller, free) and *ngfx receive the function's GOT
 * references (offsets from its entry, GOT slots), so that the code can be moved. */
static int64_t compile_func(const struct pw_jitmod *jm, int v, const pw_module *m, uint32_t i,
                            pw_x64 *out, size_t origin, unsigned isa, fixup **gfx, uint32_t *ngfx) {
    const pw_cfunc *cf = &m->code->funcs[i];
    if (gfx) *gfx = NULL, *ngfx = 0;
    /* compiled first (compile.c); code outside its slot has no fixed offset */
    if (!pw__compile_lazy(m, cf) || !m->code->code || cf->code != m->code->code + cf->slot)
        return -1;
    if (cf->nhandlers || cf->frame_slots >= (1u << 27) || cf->ncode == 0) return -1;
    /* rip-relative references to the GOT at offset 0 must stay within 2 GiB */
    if (origin + out->len > JIT_MAX_BYTES) return -1;
    jc c;
    memset(&c, 0, sizeof c);
    c.base = (uint32_t)(origin + (out->len + 15) / 16 * 16); /* where the code will land */
    c.jm = jm;
    c.jv = &jm->v[v];
    c.guard = v == JV_GUARD;
    c.m = m;
    c.cf = cf;
    c.code = cf->code;
    c.n = cf->ncode;
    c.isa = isa;
    c.lab = malloc(((size_t)c.n + LAB_NSPECIAL) * sizeof *c.lab);
    c.use = calloc(cf->frame_slots ? cf->frame_slots : 1, 1);
    c.pin = malloc(cf->frame_slots ? cf->frame_slots : 1);
    c.vuse = calloc(cf->frame_slots ? cf->frame_slots : 1, 1);
    c.vpin = malloc(cf->frame_slots ? cf->frame_slots : 1);
    int64_t at = -1;
    if (!c.lab || !c.use || !c.pin || !c.vuse || !c.vpin) goto done;
    memset(c.pin, -1, cf->frame_slots);
    memset(c.vpin, -1, cf->frame_slots);
    /* about 8 bytes of machine code per code word, plus the trap stubs */
    pw__x64_reserve(&c.x, (size_t)c.n * 8 + 512);
    c.analyze = true;
    run_pass(&c);
    c.analyze = false;
    if (c.fail || c.x.oom) goto done;
    { /* branch targets: labels clear the v128 result cache and stop forwarding (ld) */
        c.target = calloc(c.n ? c.n : 1, 1);
        if (!c.target) goto done;
        for (uint32_t k = 0; k < c.nfx; k++)
            if (c.fx[k].label < c.n) c.target[c.fx[k].label] = T_LABEL;
        /* loop heads (targets of backward branches) poll the interrupt flag at the
         * label, so that the back-edges are a single jump (branch) */
        for (uint32_t k = 0; k < c.nloops; k += 2)
            if (c.loops[k] < c.n) c.target[c.loops[k]] = T_LOOP;
    }
    {
        int32_t *d = loop_depth(&c);
        if (!d) goto done;
        choose_pins(&c, d);
        choose_loop_pins(&c, d);
        free(d);
    }
    /* else pass 1's code is the code (nothing pinned, no SIMD pairs to fuse) */
    if (c.npins || c.nlr || c.has_simd) emit_pass(&c);
    if ((c.fail || c.x.oom) && (c.fn_npins || c.nlr)) {
        c.npins = c.fn_npins = c.nlr = 0;
        memset(c.pin, -1, cf->frame_slots);
        memset(c.vpin, -1, cf->frame_slots);
        c.x.oom = false;
        emit_pass(&c);
    }
    if (!c.fail && !c.x.oom) {
        size_t save = out->len;
        while (out->len % 16)
            pw__x64_byte(out, 0xCC); /* int3 padding */
        at = (int64_t)out->len;
        pw__x64_bytes(out, c.x.buf, c.x.len);
        if (out->oom) {
            out->len = save;
            at = -1;
        } else if (gfx) {
            *gfx = c.gfx;
            *ngfx = c.ngfx;
            c.gfx = NULL;
        }
    }
done:
    free(c.x.buf);
    free(c.lab);
    free(c.fx);
    free(c.use);
    free(c.pin);
    free(c.vuse);
    free(c.vpin);
    free(c.target);
    free(c.vpairs);
    free(c.pool);
    free(c.pfx);
    free(c.gfx);
    free(c.slow);
    free(c.acc);
    free(c.loops);
    free(c.lr);
    free(c.xs);
    free(c.jt);
    return at;
}

static unsigned cpu_isa(bool sse2_only);

/* Publish function i's entry p (or JIT_FALLBACK) unless one was published before, and
 * write what is published into the lazy area's GOT (the caller holds jv->lock when
 * there may be an area). */
static void publish(jitcode *jv, uint32_t i, void *p) {
    void *none = NULL;
    if (!atomic_compare_exchange_strong_explicit(&jv->fns[i], &none, p, memory_order_acq_rel,
                                                 memory_order_acquire))
        p = none;
    char *a = atomic_load_explicit(&jv->arena, memory_order_acquire);
    if (a) __atomic_store_n((void **)a + G_FN0 + i, p, __ATOMIC_RELEASE);
    char *mp = atomic_load_explicit(&jv->map, memory_order_acquire);
    if (mp && ((size_t)G_FN0 + i + 1) * 8 <= jv->map_rw)
        __atomic_store_n((void **)mp + G_FN0 + i, p, __ATOMIC_RELEASE);
}

static void mark_fallback(jitcode *jv) {
    for (uint32_t i = 0; i < jv->nfuncs; i++) {
        void *none = NULL;
        atomic_compare_exchange_strong_explicit(&jv->fns[i], &none, JIT_FALLBACK,
                                                memory_order_acq_rel, memory_order_acquire);
    }
}

/* Translate every function of m (variant v, CPU features isa) into out: the GOT
 * (zeroed), the fault stub (JV_GUARD), then the functions, 16-byte aligned; offs[i]
 * = the offset of function i or -1 (it stays on the interpreter). False on OOM. */
static bool translate_all(const struct pw_jitmod *jm, int v, const pw_module *m, unsigned isa,
                          pw_x64 *out, int64_t *offs) {
    uint32_t n = jm->v[v].nfuncs;
    size_t words = 0;
    for (uint32_t i = 0; i < n; i++)
        words += m->code->funcs[i].ncode;
    pw__x64_reserve(out, words * 8 + 4096);
    size_t got = pw__jit_got_bytes(n);
    for (size_t k = 0; k < got; k++)
        pw__x64_byte(out, 0);
    if (v == JV_GUARD) fault_stub(out); /* after the GOT (pw__jit_fault_stub) */
    for (uint32_t i = 0; i < n; i++)
        offs[i] = compile_func(jm, v, m, i, out, 0, isa, NULL, NULL);
    return !out->oom;
}

/* The helpers' and tables' slots of a GOT at p (the functions' slots follow). */
static void write_got(void *p, const pw_module *m, const jitcode *jv) {
    const void *got[G_COUNT] = {
        [G_CODE] = m->code->code,
        [G_JV] = jv,
        [G_CFUNCS] = m->code->funcs,
        [G_FOP] = (const void *)jit_fop,
        [G_XOP] = (const void *)pw__interp_xop,
        [G_CALL] = (const void *)jit_call,
        [G_CALLIND] = (const void *)jit_call_indirect,
        [G_CALLREF] = (const void *)jit_call_ref,
        [G_GROW] = (const void *)jit_memory_grow,
        [G_BULK] = (const void *)pw__interp_bulk,
    };
    memcpy(p, got, sizeof got);
}

static size_t page_round(size_t n);

bool pw__jit_install(const pw_module *m, int v, void *map, size_t maplen, size_t len,
                     const int64_t *offs) {
    struct pw_jitmod *jm = m->code->jit;
    jitcode *jv = &jm->v[v];
    size_t gotlen = pw__jit_got_bytes(jv->nfuncs);
    for (uint32_t i = 0; i < jv->nfuncs; i++)
        if ((offs[i] >= 0 && ((uint64_t)offs[i] < gotlen || (uint64_t)offs[i] >= len)) ||
            offs[i] < PW_JIT_ABSENT) {
            munmap(map, maplen); /* not reached: the callers check the offsets */
            return false;
        }
    write_got(map, m, jv);
    void **fn = (void **)map + G_FN0;
    size_t rw = gotlen / page_round(1) * page_round(1); /* the GOT's whole pages */
    void **held = NULL;
    /* an absent function's slot stays NULL: calls to it take jit_call, which
     * translates it at its first call (lazy translation); so does a function not
     * compiled to internal code yet, whose entry is held until its first call (its
     * slot then written), or, when its slot shares a page with code, which is
     * compiled now */
    for (uint32_t i = 0; i < jv->nfuncs; i++) {
        void *p = offs[i] >= 0    ? (void *)((char *)map + offs[i])
                  : offs[i] == -1 ? JIT_FALLBACK
                                  : NULL;
        const pw_cfunc *cf = &m->code->funcs[i];
        if (offs[i] >= 0 && !pw__cfunc_ready(cf)) {
            if (((size_t)G_FN0 + i + 1) * 8 <= rw &&
                (held || (held = calloc(jv->nfuncs, sizeof *held)))) {
                held[i] = p;
                p = NULL;
            } else if (!pw__compile_lazy(m, cf)) {
                p = JIT_FALLBACK;
            }
        }
        fn[i] = p;
    }
    if (mprotect((char *)map + rw, maplen - rw, PROT_READ | PROT_EXEC) != 0) {
        free(held);
        munmap(map, maplen);
        return false;
    }
    void *expect = NULL;
    if (jv->lock_ok) pthread_mutex_lock(&jv->lock); /* the lazy area's GOT, held */
    jv->maplen = maplen;                            /* written before the mapping is published */
    jv->map_rw = rw;
    if (!atomic_compare_exchange_strong_explicit(&jv->map, &expect, map, memory_order_acq_rel,
                                                 memory_order_acquire)) {
        if (jv->lock_ok) pthread_mutex_unlock(&jv->lock);
        free(held);
        munmap(map, maplen); /* another thread's translation won */
        return true;
    }
    jv->held = held;
    for (uint32_t i = 0; i < jv->nfuncs; i++)
        if (offs[i] != PW_JIT_ABSENT && !(held && held[i]))
            publish(jv, i, offs[i] >= 0 ? (void *)((char *)map + offs[i]) : JIT_FALLBACK);
    if (jv->lock_ok) pthread_mutex_unlock(&jv->lock);
    return true;
}

static size_t page_round(size_t n) {
    long pg = sysconf(_SC_PAGESIZE);
    size_t ps = pg > 0 ? (size_t)pg : 4096;
    return (n + ps - 1) / ps * ps;
}

/* Translate every function of the module into one buffer, map it read/write, copy,
 * make it read/execute (never both at once), and publish the entries. Two threads
 * may race: one mapping wins (compare-and-swap), the other is unmapped. With a code
 * cache attached, a saved translation is mapped instead, and a new one is saved. */
static void compile_module(struct pw_jitmod *jm, int v, const pw_module *m, unsigned isa) {
    jitcode *jv = &jm->v[v];
    if (jm->cc && pw__cc_load(jm->cc, m, v, isa)) {
        jv->map_isa = isa;
        return;
    }
    uint32_t n = jv->nfuncs;
    int64_t *offs = malloc((n ? n : 1) * sizeof *offs);
    pw_x64 out = {0};
    if (!offs || !translate_all(jm, v, m, isa, &out, offs)) {
        free(offs); /* OOM: everything stays on the interpreter */
        free(out.buf);
        mark_fallback(jv);
        return;
    }
    if (jm->cc) pw__cc_save(jm->cc, m->code, v, isa, out.buf, out.len, offs);
    size_t maplen = page_round(out.len);
    void *p = mmap(NULL, maplen, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE,
                   -1, 0);
    bool ok = false;
    if (p != MAP_FAILED) {
        memcpy(p, out.buf, out.len);
        jv->map_isa = isa; /* read only by lazy_save, at the module's end */
        ok = pw__jit_install(m, v, p, maplen, out.len, offs);
    }
    free(out.buf);
    free(offs);
    if (!ok) mark_fallback(jv);
}

/* ---------------------------------------------------------------- lazy translation */

/* Reserve the lazy code area of variant v (caller holds jv->lock): the GOT (helpers
 * and the entries published so far), the fault stub, room for every function.
 * False on failure (nothing is left). */
static bool arena_new(struct pw_jitmod *jm, int v, const pw_module *m, unsigned isa) {
    jitcode *jv = &jm->v[v];
    size_t ps = page_round(1), got = page_round(pw__jit_got_bytes(jv->nfuncs));
    /* about 9 bytes of code per word (Ruby: 96 MB for 11.2 M words), a page at most
     * lost per translation; address space only, never committed unless used */
    uint64_t want = (uint64_t)got + ps + (uint64_t)m->code->ncode * 16 + (uint64_t)jv->nfuncs * ps;
    if (want > JIT_MAX_BYTES) want = JIT_MAX_BYTES;
    pw_x64 stub = {0};
    fault_stub(&stub);
    if (stub.oom || want < (uint64_t)got + ps) {
        free(stub.buf);
        return false;
    }
    /* a smaller area where address space is limited (RLIMIT_AS): the functions that
     * do not fit then stay on the interpreter */
    char *a;
    for (;;) {
        a = mmap(NULL, (size_t)want, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (a != MAP_FAILED || want / 2 < (uint64_t)got + ps + (1u << 20)) break;
        want /= 2;
    }
    if (a == MAP_FAILED) {
        free(stub.buf);
        return false;
    }
    bool ok = mprotect(a, got, PROT_READ | PROT_WRITE) == 0 &&
              mprotect(a + got, ps, PROT_READ | PROT_WRITE) == 0;
    if (ok) {
        memcpy(a + got, stub.buf, stub.len);
        ok = mprotect(a + got, ps, PROT_READ | PROT_EXEC) == 0;
    }
    free(stub.buf);
    if (!ok) {
        munmap(a, (size_t)want);
        return false;
    }
    write_got(a, m, jv);
    void **fn = (void **)a + G_FN0;
    for (uint32_t i = 0; i < jv->nfuncs; i++)
        fn[i] = atomic_load_explicit(&jv->fns[i], memory_order_acquire);
    jv->arena_len = (size_t)want;
    jv->arena_got = got;
    jv->arena_top = got + ps;
    jv->arena_isa = isa;
    atomic_store_explicit(&jv->arena, a, memory_order_release);
    return true;
}

/* Translate function i into the area (caller holds jv->lock): its entry, or
 * JIT_FALLBACK (it stays on the interpreter: not translatable, out of memory, the
 * area is full). */
static void *arena_add(struct pw_jitmod *jm, int v, const pw_module *m, uint32_t i) {
    jitcode *jv = &jm->v[v];
    char *a = atomic_load_explicit(&jv->arena, memory_order_relaxed);
    size_t top = jv->arena_top;
    pw_x64 out = {0};
    fixup *gfx = NULL;
    uint32_t ngfx = 0;
    void *entry = JIT_FALLBACK;
    int64_t at = compile_func(jm, v, m, i, &out, top, jv->arena_isa, &gfx, &ngfx);
    size_t need = page_round(out.len);
    if (at < 0 || out.oom || need > jv->arena_len - top ||
        !grow((void **)&jv->done, &jv->capdone, jv->ndone + 1, sizeof *jv->done))
        goto done;
    if (mprotect(a + top, need, PROT_READ | PROT_WRITE) != 0) goto done;
    memcpy(a + top, out.buf, out.len);
    if (mprotect(a + top, need, PROT_READ | PROT_EXEC) != 0) {
        mprotect(a + top, need, PROT_NONE);
        goto done;
    }
    jv->arena_top = top + need;
    jv->done[jv->ndone++] = (lazyfn){
        .func = i, .ngfx = ngfx, .off = top + (size_t)at, .len = out.len - (size_t)at, .gfx = gfx};
    gfx = NULL;
    entry = a + top + at;
done:
    free(out.buf);
    free(gfx);
    return entry;
}

/* Translate function i of variant v alone, at its first call, and publish it. The
 * first time, the code cache is asked for a saved translation (which may hold i). */
static void lazy_compile(struct pw_jitmod *jm, int v, const pw_module *m, uint32_t i,
                         unsigned isa) {
    jitcode *jv = &jm->v[v];
    if (!jv->lock_ok) return;
    pthread_mutex_lock(&jv->lock);
    if (!jv->cc_tried) {
        jv->cc_tried = true;
        if (jm->cc && !atomic_load_explicit(&jv->map, memory_order_acquire) &&
            pw__cc_load(jm->cc, m, v, isa))
            jv->map_isa = isa;
    }
    if (!atomic_load_explicit(&jv->fns[i], memory_order_acquire)) {
        void *p = JIT_FALLBACK;
        if (jv->held && jv->held[i]) /* saved: compiled to internal code first */
            p = pw__compile_lazy(m, &m->code->funcs[i]) ? jv->held[i] : JIT_FALLBACK;
        else if (atomic_load_explicit(&jv->arena, memory_order_relaxed) || arena_new(jm, v, m, isa))
            p = arena_add(jm, v, m, i);
        publish(jv, i, p);
    }
    pthread_mutex_unlock(&jv->lock);
}

/* At the module's end: with a code cache attached and functions translated lazily,
 * save one artifact holding the loaded one's code as it was (so its offsets stay)
 * and every function of the area after it, each moved by rewriting its GOT
 * references; the functions never translated are absent (PW_JIT_ABSENT), so the
 * next process starts with what ran before and translates the rest lazily. */
static void lazy_save(struct pw_jitmod *jm, int v) {
    jitcode *jv = &jm->v[v];
    char *a = atomic_load_explicit(&jv->arena, memory_order_acquire);
    if (!jm->cc || !a || !jv->ndone) return;
    uint32_t n = jv->nfuncs;
    size_t gotlen = pw__jit_got_bytes(n);
    char *map = atomic_load_explicit(&jv->map, memory_order_acquire);
    int64_t *offs = malloc((n ? n : 1) * sizeof *offs);
    pw_x64 out = {0};
    if (!offs) return;
    for (uint32_t i = 0; i < n; i++) {
        void *p = atomic_load_explicit(&jv->fns[i], memory_order_acquire);
        if (!p && jv->held && jv->held[i]) p = jv->held[i]; /* saved, never called */
        offs[i] = p == JIT_FALLBACK                                         ? -1
                  : map && (char *)p >= map && (char *)p < map + jv->maplen ? (char *)p - map
                                                                            : PW_JIT_ABSENT;
    }
    if (map) {
        pw__x64_bytes(&out, (const uint8_t *)map, jv->maplen);
        if (!out.oom) memset(out.buf, 0, gotlen);
    } else {
        for (size_t k = 0; k < gotlen; k++)
            pw__x64_byte(&out, 0);
        if (v == JV_GUARD) fault_stub(&out); /* after the GOT (pw__jit_fault_stub) */
    }
    for (uint32_t k = 0; k < jv->ndone && !out.oom; k++) {
        const lazyfn *f = &jv->done[k];
        while (out.len % 16)
            pw__x64_byte(&out, 0xCC);
        size_t at = out.len;
        pw__x64_bytes(&out, (const uint8_t *)a + f->off, f->len);
        if (out.oom || at > JIT_MAX_BYTES) break;
        for (uint32_t r = 0; r < f->ngfx; r++) {
            int64_t disp = (int64_t)f->gfx[r].label * 8 - (int64_t)(at + f->gfx[r].at + 4);
            pw__x64_patch32(&out, at + f->gfx[r].at, (int32_t)disp);
        }
        offs[f->func] = (int64_t)at;
    }
    if (!out.oom)
        pw__cc_save(jm->cc, jm->cm, v, jv->arena_isa | jv->map_isa, out.buf, out.len, offs);
    free(out.buf);
    free(offs);
}

pw_status pw__jit_translate(const pw_module *m, int v, unsigned isa, uint8_t **code, size_t *len,
                            int64_t **offs) {
    const struct pw_jitmod *jm = m->code->jit;
    *code = NULL;
    *offs = NULL;
    *len = 0;
    if (!jm) return PW_ERR_NOMEM;
    uint32_t n = jm->v[v].nfuncs;
    int64_t *o = malloc((n ? n : 1) * sizeof *o);
    pw_x64 out = {0};
    if (!o || !translate_all(jm, v, m, isa, &out, o)) {
        free(o);
        free(out.buf);
        return PW_ERR_NOMEM;
    }
    *code = out.buf;
    *len = out.len;
    *offs = o;
    return PW_OK;
}

unsigned pw__jit_features(bool sse2_only) {
    return cpu_isa(sse2_only);
}

/* ---------------------------------------------------------------- run time */

/* The CPU features the templates may use (PW_JIT_*): POPCNT, SSSE3, SSE4.1 and AVX
 * when the process may use them (base/cpu.h: as the C library probed them, AVX only
 * if the OS saves its state), the last three not when the store asks for the plain
 * SSE2 path (pw_store_config.jit_sse2, for testing it on any machine). A saved
 * translation records them (codecache.c). */
static unsigned cpu_isa(bool sse2_only) {
    unsigned has = pb_cpu_has(PB_CPU_POPCNT | PB_CPU_SSSE3 | PB_CPU_SSE41 | PB_CPU_AVX);
    unsigned f = has & PB_CPU_POPCNT ? ISA_POPCNT : 0;
    if (sse2_only) return f;
    if (has & PB_CPU_SSSE3) f |= ISA_SSSE3;
    if (has & PB_CPU_SSE41) f |= ISA_SSE41;
    if (has & PB_CPU_AVX) f |= ISA_AVX; /* the three-operand scalar float forms */
    return f;
}

/* The variant an instance runs: that of its memory 0 (docs/jit.md, "Bounds checks"). */
static int variant(const pw_instance *inst) {
    return inst->mem0 && inst->mem0->guarded ? JV_GUARD : JV_EXPLICIT;
}

static pw_jit_entry jit_get(pw_store *s, const pw_func *f) {
    if (!s->jit_on || !f->inst) return NULL;
    const pw_module *m = f->inst->mod;
    struct pw_jitmod *jm = m->code->jit;
    if (!jm) return NULL;
    int v = variant(f->inst);
    uint32_t i = (uint32_t)(f->code - m->code->funcs);
    void *p = atomic_load_explicit(&jm->v[v].fns[i], memory_order_acquire);
    if (!p && !s->jit_lazy && !atomic_load_explicit(&jm->v[v].map, memory_order_acquire)) {
        compile_module(jm, v, m, cpu_isa(s->cfg.jit_sse2));
        p = atomic_load_explicit(&jm->v[v].fns[i], memory_order_acquire);
    }
    /* lazy translation, or a function absent from a saved translation */
    if (!p) {
        lazy_compile(jm, v, m, i, cpu_isa(s->cfg.jit_sse2));
        p = atomic_load_explicit(&jm->v[v].fns[i], memory_order_acquire);
    }
    /* NULL here: another thread is publishing; this call is interpreted. */
    if (!p || p == JIT_FALLBACK) return NULL;
    return (pw_jit_entry)p;
}

static pw_status trap(pw_store *s, pw_trap_code code) {
    s->trap = code;
    return PW_ERR_TRAP;
}

/* Run JIT code j (its outer entry) on the frame at fp: the state of the innermost
 * entry from C (pw_store.jit_sp, written by the outer entry, and jit_call_limit) is
 * saved and restored around it. The bound for direct calls: the native stack budget,
 * and room for the frame records the walk of jit_frames may write (each JIT frame
 * takes at least JIT_MIN_FRAME bytes of native stack from just below this C frame,
 * so while rsp stays above `here - JIT_MIN_FRAME * room + 8` no direct call can need
 * a record past frames_end; a call below it takes the helper, which counts exactly).
 * The interrupt flag is read after the bound is stored and pw_store_interrupt sets
 * the bound after the flag (both sequentially consistent), so a raised flag is never
 * lost: either it is seen here or the bound it set stays. */
#define JIT_MIN_FRAME 32u
static pw_status enter_jit(pw_store *s, pw_jit_entry j, pw_slot *fp, pw_instance *inst) {
    char *sp = s->jit_sp;
    uintptr_t limit = atomic_load_explicit(&s->jit_call_limit, memory_order_relaxed);
    uintptr_t here = (uintptr_t)__builtin_frame_address(0);
    uintptr_t room = (uintptr_t)(s->frames_end - s->frame_top), need = room * JIT_MIN_FRAME;
    uintptr_t lim = need < here ? here - need + 8 : UINTPTR_MAX;
    if (lim < (uintptr_t)s->jit_stack_limit) lim = (uintptr_t)s->jit_stack_limit;
    atomic_store(&s->jit_call_limit, lim);
    pw_status st = atomic_load(&s->interrupt) ? trap(s, PW_TRAP_INTERRUPTED) : j(fp, inst, s);
    s->jit_sp = sp;
    atomic_store(&s->jit_call_limit, limit);
    if (atomic_load(&s->interrupt)) atomic_store(&s->jit_call_limit, UINTPTR_MAX);
    return st;
}

/* Run Wasm function f (arguments at fp) by its JIT code, or by the interpreter when
 * it has none or the native stack budget is used up (the interpreter does not
 * recurse on the C stack, so depth is then bounded only by the frame records). The
 * JIT code zeroes its declared locals itself (prologue). */
static pw_status exec_wasm(pw_store *s, pw_func *f, pw_slot *fp) {
    pw_jit_entry j = jit_get(s, f);
    if (!j || (char *)__builtin_frame_address(0) < s->jit_stack_limit) return pw__interp(s, f, fp);
    const pw_cfunc *cf = f->code;
    if (fp + cf->frame_slots > s->stack_end) return trap(s, PW_TRAP_STACK_EXHAUSTED);
    /* The fault handler's view of this thread: f's instance runs on top (guard.c). */
    pw_instance *outer = pw__guard_act;
    pw__guard_act = f->inst;
    pw_status st = enter_jit(s, j, fp, f->inst);
    pw__guard_act = outer;
    return st;
}

const void *pw__jit_fault_stub(const pw_instance *inst, uintptr_t pc, uintptr_t addr) {
    const pw_memory *mem = inst->mem0;
    const struct pw_jitmod *jm = inst->mod->code->jit;
    if (!mem || !mem->guarded || !jm) return NULL;
    /* which stub: an access to memory 0's mapping is out of bounds; a load of the
     * store's poll page is a poll of an interrupted store */
    uintptr_t base = (uintptr_t)mem->data, poll = (uintptr_t)inst->store + PW_STORE_POLL_OFF;
    size_t off;
    if (addr >= base && addr - base < mem->mapped)
        off = 0;
    else if (addr >= poll && addr - poll < PW_POLL_PAGE)
        off = JIT_POLL_STUB;
    else
        return NULL;
    const jitcode *jv = &jm->v[JV_GUARD];
    uintptr_t ar = (uintptr_t)atomic_load_explicit(&jv->arena, memory_order_acquire);
    if (ar && pc >= ar + jv->arena_got && pc - ar < jv->arena_len)
        return (const void *)(ar + jv->arena_got + off); /* the lazy area's fault stub */
    uintptr_t map = (uintptr_t)atomic_load_explicit(&jv->map, memory_order_acquire);
    if (!map || pc < map || pc - map >= jv->maplen) return NULL;
    return (const void *)(map + pw__jit_got_bytes(jv->nfuncs) + off); /* fault_stub */
}

/* The frame records of the JIT frames that direct calls made since the innermost
 * entry from C, derived from the native stack (docs/jit.md "Calls in both
 * directions"): from the return-address slot of the frame that called a helper
 * (pw_store.jit_walk) up to the one the outer entry called (pw_store.jit_sp - 8),
 * each frame's return address is a direct call's, followed by its mark (call_mark:
 * the caller's resume point and frame size) and the caller's rbx (its frame) was
 * saved 16 bytes below the slot. The records go at frame_top.. in call order, for
 * the GC's stack walk; every such frame runs in inst (direct calls stay in one
 * instance). Returns the first free record (frame_top is left as it was: the
 * caller of a helper restores it, because the records go stale as the frames
 * return). NULL: more records than frames_end allows (the direct calls' bound makes
 * that impossible; treated as "call stack exhausted"). */
static uint32_t mark_of(const uint8_t *const *slot) {
    const uint8_t *ra = *slot;
    uint32_t w;
    memcpy(&w, ra + 3, 4);
    return w;
}
static pw_frame *jit_frames(pw_store *s, pw_instance *inst) {
    const uint8_t *stop = (const uint8_t *)s->jit_sp - 8, *a = s->jit_walk;
    size_t n = 0;
    for (const uint8_t *p = a; p < stop; n++)
        p += 8 + (mark_of((const uint8_t *const *)p) >> 28) * 8;
    if (n > (size_t)(s->frames_end - s->frame_top)) return NULL;
    pw_frame *fr = s->frame_top + n;
    const uint32_t *code = inst->mod->code->code;
    for (const uint8_t *p = a; p < stop;) {
        uint32_t w = mark_of((const uint8_t *const *)p);
        fr--;
        fr->ret_pc = code + (w & (MARK_WORDS - 1));
        memcpy(&fr->fp, p - 16, sizeof fr->fp);
        fr->inst = inst;
        p += 8 + (w >> 28) * 8;
    }
    return s->frame_top + n;
}

/* Call f from JIT code (its frame record at fr). */
static pw_status call_out(pw_store *s, pw_instance *inst, pw_func *f, pw_slot *argp, pw_slot *fp,
                          const uint32_t *ret_pc, pw_frame *fr) {
    if (atomic_load_explicit(&s->interrupt, memory_order_relaxed))
        return trap(s, PW_TRAP_INTERRUPTED);
    if (!fr || fr >= s->frames_end) return trap(s, PW_TRAP_STACK_EXHAUSTED);
    /* The caller's frame record, as the interpreter writes it (GC walk, unwinding). */
    fr->ret_pc = ret_pc;
    fr->fp = fp;
    fr->inst = inst;
    s->frame_top = fr + 1;
    return f->host ? pw__call_host(s, inst, f, argp) : exec_wasm(s, f, argp);
}

static pw_status jit_call(pw_store *s, pw_instance *inst, pw_func *f, pw_slot *argp, pw_slot *fp,
                          const uint32_t *ret_pc) {
    pw_frame *top = s->frame_top;
    pw_status st = call_out(s, inst, f, argp, fp, ret_pc, jit_frames(s, inst));
    s->frame_top = top;
    return st;
}

/* CALL_INDIRECT type table idx argbase: the interpreter's checks and traps. */
static pw_status jit_call_indirect(pw_store *s, pw_instance *inst, const uint32_t *pc, pw_slot *fp,
                                   const jitcode *jv, const pw_cfunc *funcs) {
    pw_table *t = inst->tables[pc[2]];
    uint32_t i = fp[pc[3]].u32;
    if (i >= t->size) return trap(s, PW_TRAP_UNDEF_ELEM);
    pw_func *f = (pw_func *)t->elems[i];
    if (!f) return trap(s, PW_TRAP_UNINIT_ELEM);
    if (f->hdr.type_id != inst->type_ids[pc[1]] && !pw__func_type_sub(f, inst->mod, pc[1]))
        return trap(s, PW_TRAP_SIG_MISMATCH);
    pw_slot *argp = fp + pc[4];
    pw_frame *top = s->frame_top, *fr = jit_frames(s, inst);
    pw_status st;
    /* Fast path: a function of this instance (so of the caller's module, whose JIT
     * table and code array the caller passes) that has JIT code: the same steps as
     * jit_call + exec_wasm, in the same order, without looking the module up. */
    size_t d = !f->host && f->inst == inst ? (size_t)(f->code - funcs) : SIZE_MAX;
    void *p = d < jv->nfuncs ? atomic_load_explicit(&jv->fns[d], memory_order_acquire) : NULL;
    if (p && p != JIT_FALLBACK && (char *)__builtin_frame_address(0) >= s->jit_stack_limit) {
        const pw_cfunc *cf = f->code;
        if (atomic_load_explicit(&s->interrupt, memory_order_relaxed)) {
            st = trap(s, PW_TRAP_INTERRUPTED);
        } else if (!fr || fr >= s->frames_end || argp + cf->frame_slots > s->stack_end) {
            st = trap(s, PW_TRAP_STACK_EXHAUSTED);
        } else {
            fr->ret_pc = pc + 5;
            fr->fp = fp;
            fr->inst = inst;
            s->frame_top = fr + 1;
            st = enter_jit(s, (pw_jit_entry)p, argp, inst);
        }
    } else {
        st = call_out(s, inst, f, argp, fp, pc + 5, fr);
    }
    s->frame_top = top;
    return st;
}

/* CALL_REF ref argbase. */
static pw_status jit_call_ref(pw_store *s, pw_instance *inst, const uint32_t *pc, pw_slot *fp) {
    pw_func *f = (pw_func *)fp[pc[1]].ref;
    if (!f) return trap(s, PW_TRAP_NULL_FUNC_REF);
    return jit_call(s, inst, f, fp + pc[2], fp, pc + 3);
}

static int64_t jit_memory_grow(pw_store *s, pw_instance *inst, uint32_t delta) {
    int64_t r = pw__memory_grow(inst->mem0, delta);
    if (r == PW_GROW_OVER_CAP) {
        if (s->cfg.cap_is_fatal) return INT64_MIN;
        r = -1;
    }
    return (int64_t)(uint32_t)(int32_t)r;
}

pw_status pw__exec(pw_store *s, pw_func *f, pw_slot *fp) {
    if (!s->jit_on) return pw__interp(s, f, fp);
    if (s->host_depth <= 1) {
        size_t budget = s->cfg.jit_native_stack ? s->cfg.jit_native_stack : (512u << 10);
        s->jit_stack_limit = (char *)__builtin_frame_address(0) - budget;
    }
    return exec_wasm(s, f, fp);
}

int pw__jit_call_from_interp(pw_store *s, pw_func *f, pw_slot *argp, const uint32_t *ret_pc,
                             pw_slot *fp, pw_instance *inst, pw_frame *fr) {
    pw_jit_entry j = jit_get(s, f);
    if (!j || (char *)__builtin_frame_address(0) < s->jit_stack_limit) return PW_JIT_INTERPRET;
    if (fr >= s->frames_end) return trap(s, PW_TRAP_STACK_EXHAUSTED);
    fr->ret_pc = ret_pc;
    fr->fp = fp;
    fr->inst = inst;
    s->frame_top = fr + 1;
    pw_status st = exec_wasm(s, f, argp);
    s->frame_top = fr;
    return st;
}

int pw__jit_cached(const pw_store *s, const pw_func *f) {
    if (!f->inst || !f->inst->mod->code->jit || !f->inst->mod->code->jit->cc) return -1;
    const pw_module *m = f->inst->mod;
    return pw__cc_probe(m->code->jit->cc, m, variant(f->inst), cpu_isa(s->cfg.jit_sse2));
}

void pw__jit_attach_cache(struct pw_jitmod *jm, struct pw_ccref *cc) {
    pw__cc_ref_free(jm->cc);
    jm->cc = cc;
}

struct pw_ccref *pw__cc_of(const pw_module *m) {
    return m->code && m->code->jit ? m->code->jit->cc : NULL;
}

int pw__jit_state(const pw_func *f) {
    if (!f->inst || !f->inst->mod->code->jit) return 0;
    const struct pw_cmodule *cm = f->inst->mod->code;
    const jitcode *jv = &cm->jit->v[variant(f->inst)];
    void *p = atomic_load_explicit(&jv->fns[f->code - cm->funcs], memory_order_acquire);
    return !p ? 0 : p == JIT_FALLBACK ? 2 : 1;
}

int pw__jit_prepare(pw_store *s, pw_func *f) {
    if (!f->host) jit_get(s, f);
    return pw__jit_state(f);
}

#else /* no JIT on this host: everything runs on the interpreter */

pw_status pw__exec(pw_store *s, pw_func *f, pw_slot *fp) {
    return pw__interp(s, f, fp);
}
int pw__jit_call_from_interp(pw_store *s, pw_func *f, pw_slot *argp, const uint32_t *ret_pc,
                             pw_slot *fp, pw_instance *inst, pw_frame *fr) {
    (void)s, (void)f, (void)argp, (void)ret_pc, (void)fp, (void)inst, (void)fr;
    return PW_JIT_INTERPRET;
}
int pw__jit_state(const pw_func *f) {
    (void)f;
    return 0;
}
int pw__jit_cached(const pw_store *s, const pw_func *f) {
    (void)s, (void)f;
    return -1;
}
void pw__jit_attach_cache(struct pw_jitmod *jm, struct pw_ccref *cc) {
    (void)jm;
    pw__cc_ref_free(cc);
}
struct pw_ccref *pw__cc_of(const pw_module *m) {
    (void)m;
    return NULL;
}
int pw__jit_prepare(pw_store *s, pw_func *f) {
    (void)s, (void)f;
    return 0;
}
const void *pw__jit_fault_stub(const pw_instance *inst, uintptr_t pc, uintptr_t addr) {
    (void)inst, (void)pc, (void)addr;
    return NULL;
}

#endif
