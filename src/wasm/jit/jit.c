/*
 * jit.c — the baseline JIT: translation of internal code to x86-64 and the glue
 * between JIT code, the interpreter and host functions (design: docs/jit.md).
 *
 * Register assignment inside JIT code (System V callee-saved registers, so helper
 * calls keep them): rbx = frame pointer (slot i at [rbx + 8i]), r12 = memory 0 base,
 * r13 = memory 0 size in bytes, r14 = the instance, r15 = the store. rax, rcx, rdx,
 * xmm0 and xmm1 are scratch within one instruction. The hottest slots of a function
 * are pinned to rbp, rsi, rdi, r8-r11 and xmm2-xmm15 for the whole function (pass 1
 * records slot uses, choose_pins picks); invariant: a pinned slot's frame cell is
 * written before every call sequence and at the return (results) and reloaded after
 * calls, so whatever reads the frame (callees, the GC, host functions) sees the
 * interpreter's values (docs/jit.md "Registers").
 *
 * A JIT function is `pw_status fn(pw_slot *fp, pw_instance *inst, pw_store *s)`. Its
 * caller (exec_wasm) checks value-stack room, zeroes declared locals and polls the
 * interrupt flag, exactly as the interpreter's call does. Every call made by JIT code
 * goes through jit_call(), which pushes the interpreter's frame record for the caller
 * (so the GC's stack walk and the exception unwinder see JIT frames as ordinary
 * frames) and then runs the callee by whichever tier has it.
 *
 * Invariant: a function is translated only if every internal instruction in it is in
 * the supported set below; anything else makes the whole function stay on the
 * interpreter (per-function fallback), never a partial translation.
 */
#include "wasm/jit/jit.h"
#include "wasm/fops.h"
#include "wasm/interp.h"
#include "wasm/jit/x64.h"

#include <stdlib.h>
#include <string.h>

#if PW_JIT_AVAILABLE
#include <sys/mman.h>
#include <unistd.h>
#endif

typedef pw_status (*pw_jit_entry)(pw_slot *fp, pw_instance *inst, pw_store *s);

#define JIT_FALLBACK ((void *)1)
/* Offset of a JIT function's inner entry from its published (outer) entry. */
#define JIT_INNER 64

struct pw_jitmod {
    uint32_t nfuncs;
    _Atomic(void *) *fns; /* NULL: not tried; JIT_FALLBACK; else the entry point */
    /* The module's code: one mapping for all its functions, translated together at
     * the first call of any of them (one mmap + one mprotect per module: those take
     * the process's mm lock and cost tens of microseconds each on a loaded VM). */
    _Atomic(void *) map;
    size_t maplen;
    /* Reverse map of the interpreter's handler offsets, sorted by offset. */
    uint32_t nops;
    int32_t *off;
    uint16_t *op;
};

/* ---------------------------------------------------------------- module table */

struct pw_jitmod *pw__jit_module_new(const struct pw_cmodule *cm) {
    struct pw_jitmod *jm = calloc(1, sizeof *jm);
    if (!jm) return NULL;
    jm->nfuncs = cm->nfuncs;
    jm->fns = calloc(cm->nfuncs ? cm->nfuncs : 1, sizeof *jm->fns);
    jm->off = malloc(PW_OP_COUNT_ * sizeof *jm->off);
    jm->op = malloc(PW_OP_COUNT_ * sizeof *jm->op);
    if (!jm->fns || !jm->off || !jm->op) {
        pw__jit_module_free(jm);
        return NULL;
    }
    /* Insertion sort of (offset, op): a few hundred entries, once per module. */
    const int32_t *h = pw__interp_handlers();
    for (uint32_t i = 0; i < PW_OP_COUNT_; i++) {
        uint32_t j = i;
        while (j > 0 && jm->off[j - 1] > h[i]) {
            jm->off[j] = jm->off[j - 1];
            jm->op[j] = jm->op[j - 1];
            j--;
        }
        jm->off[j] = h[i];
        jm->op[j] = (uint16_t)i;
    }
    jm->nops = PW_OP_COUNT_;
    return jm;
}

void pw__jit_module_free(struct pw_jitmod *jm) {
    if (!jm) return;
#if PW_JIT_AVAILABLE
    void *map = atomic_load_explicit(&jm->map, memory_order_acquire);
    if (map) munmap(map, jm->maplen);
#endif
    free(jm->fns);
    free(jm->off);
    free(jm->op);
    free(jm);
}

/* The internal opcode of a handler word; -1 when unknown or ambiguous (two handlers
 * at one address: then no translation can tell them apart). */
static int op_of(const struct pw_jitmod *jm, uint32_t w) {
    int32_t v = (int32_t)w;
    uint32_t lo = 0, hi = jm->nops;
    while (lo < hi) {
        uint32_t mid = (lo + hi) / 2;
        if (jm->off[mid] < v)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo >= jm->nops || jm->off[lo] != v) return -1;
    if (lo + 1 < jm->nops && jm->off[lo + 1] == v) return -1;
    return jm->op[lo];
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

/* A branch or table entry to patch: value = label position - base. */
typedef struct fixup {
    uint32_t at, label, base;
} fixup;

/* How an instruction template touches a slot operand (pass 1 records them; a slot is
 * pinned only to a register class every one of its uses can take):
 *   U_LDST  whole-slot load/store through ld()/st() (a GPR or an xmm register, with
 *           movd/movq, can stand for the slot)
 *   U_GPR   an integer instruction's r/m operand (a GPR can stand for it)
 *   U_SSE   an SSE instruction's r/m operand (an xmm register can stand for it)
 *   U_MEM   its address is taken (helpers read the frame): memory only */
enum { U_LDST = 1, U_GPR = 2, U_SSE = 4, U_MEM = 8 };

/* Registers that can hold pinned slots: GPRs not used by the templates (rbp is
 * callee-saved, the others caller-saved) and xmm2..xmm15 (xmm0/xmm1 are scratch). */
static const int8_t pin_gprs[] = {X_RBP, X_RSI, X_RDI, X_R8, X_R9, X_R10, X_R11};
#define NPIN_GPR ((int)(sizeof pin_gprs / sizeof pin_gprs[0]))
#define NPIN_XMM 14
#define PIN_MAX  (NPIN_GPR + NPIN_XMM)
#define PIN_XMM0 16 /* pin[] value 16 + n: xmm n */

typedef struct slotuse {
    uint32_t pos, slot; /* slot UINT32_MAX: a call (every pin is spilled/reloaded) */
    uint32_t cls;       /* U_* */
} slotuse;

/* Special labels after the per-word ones. */
enum { LAB_EXIT = PW_TRAP_COUNT_, LAB_RET, LAB_TRAPC, LAB_NSPECIAL };

typedef struct jc {
    pw_x64 x;
    const struct pw_jitmod *jm;
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

/* Slot operand at word w used as `cls`: its register when pinned (outside call
 * sequences), else its frame cell [rbx + 8 slot]. */
static pw_xmem S_(jc *c, uint32_t w, int cls) {
    uint32_t slot = c->code[w];
    if (slot >= c->cf->frame_slots) {
        c->fail = true;
        return x_mem(X_RBX, 0);
    }
    if (c->analyze) {
        c->use[slot] |= (uint8_t)cls;
        note_access(c, slot, cls);
    } else if (c->pin && c->pin[slot] >= 0 && !c->memonly) {
        int r = c->pin[slot];
        if (cls == U_MEM) {
            c->fail = true; /* not reached: pass 1 saw every use */
        } else {
            /* any class: the templates convert between GPR and xmm (alu_m, sse_ld) */
            return r >= PIN_XMM0 ? x_xreg(r - PIN_XMM0) : x_reg(r);
        }
    }
    return x_mem(X_RBX, (int32_t)(slot * 8));
}
#define SL(k)  S_(c, pos + (k), U_LDST)
#define SG(k)  S_(c, pos + (k), U_GPR)
#define SF(k)  S_(c, pos + (k), U_SSE)
#define SM(k)  S_(c, pos + (k), U_MEM)
#define IMM(k) c->code[pos + (k)]

static void add_fix(jc *c, size_t at, uint32_t label, size_t base) {
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
    c->fx[c->nfx++] = (fixup){(uint32_t)at, label, (uint32_t)base};
}

static uint32_t special(jc *c, uint32_t k) {
    return c->n + k;
}

static void jcc_to(jc *c, pw_xcc cc, uint32_t label) {
    size_t at = pw__x64_jcc32(&c->x, cc);
    add_fix(c, at, label, at + 4);
}
static void jmp_to(jc *c, uint32_t label) {
    size_t at = pw__x64_jmp32(&c->x);
    add_fix(c, at, label, at + 4);
}
static void trap_if(jc *c, pw_xcc cc, pw_trap_code code) {
    jcc_to(c, cc, special(c, code));
}
static void poll_interrupt(jc *c) {
    pw__x64_alu_mi(&c->x, X_CMP, false, x_mem(X_R15, (int32_t)offsetof(pw_store, interrupt)), 0);
    trap_if(c, X_CC_NE, PW_TRAP_INTERRUPTED);
}

/* Branch (cc, or always when cc < 0) from the instruction at pos to pos + off. A
 * backward target is a possible loop: poll the interrupt flag first, as the
 * interpreter does on every taken branch. */
static void branch(jc *c, int cc, uint32_t pos, uint32_t off) {
    uint32_t t = pos + off;
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

/* Whole-slot load/store (4 or 8 bytes) between a GPR and a slot operand, which may be
 * a pinned GPR or xmm register (movd/movq). A 4-byte write to a pinned register
 * zero-extends; the upper half of a slot holding an i32/f32 is never read (docs). */
static void ld(jc *c, bool w, int r, pw_xmem m) {
    if (m.index == X_DIRECTX)
        pw__x64_sse_rr(&c->x, 0x66, X_SSE_MOVDST, w, m.base, r);
    else if (m.index == X_DIRECT && m.base == r && !w)
        pw__x64_mov_rr(&c->x, false, r, r);
    else if (!(m.index == X_DIRECT && m.base == r))
        pw__x64_load(&c->x, w ? X_LD64 : X_LD32, r, m);
}
static void st(jc *c, bool w, pw_xmem m, int r) {
    if (m.index == X_DIRECTX)
        pw__x64_sse_rr(&c->x, 0x66, X_SSE_MOVD, w, m.base, r);
    else
        pw__x64_store(&c->x, w ? 8 : 4, m, r);
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
 * clobbers caller-saved registers), and back. */
static void spill_pins(jc *c) {
    for (uint32_t k = 0; k < c->npins; k++) {
        pw_xmem m = x_mem(X_RBX, (int32_t)(c->pslot[k] * 8));
        if (c->preg[k] >= PIN_XMM0)
            pw__x64_sse_rm(&c->x, 0xF2, X_SSE_MOVST, false, c->preg[k] - PIN_XMM0, m);
        else
            pw__x64_store(&c->x, 8, m, c->preg[k]);
    }
}
/* keep: slots below it kept their value if their register is callee-saved (rbp):
 * a callee's frame starts at the call's argbase, so it writes nothing below. */
static void reload_pins(jc *c, uint32_t keep) {
    for (uint32_t k = 0; k < c->npins; k++) {
        if (c->preg[k] == X_RBP && c->pslot[k] < keep) continue;
        pw_xmem m = x_mem(X_RBX, (int32_t)(c->pslot[k] * 8));
        if (c->preg[k] >= PIN_XMM0)
            pw__x64_sse_rm(&c->x, 0xF2, X_SSE_MOVLD, false, c->preg[k] - PIN_XMM0, m);
        else
            pw__x64_load(&c->x, X_LD64, c->preg[k], m);
    }
}
/* A call sequence: spill, then slot operands are read/written in memory until
 * call_end reloads every pin (results land in the frame). */
static void call_begin(jc *c) {
    if (c->analyze) note_access(c, UINT32_MAX, 0);
    spill_pins(c);
    c->memonly = true;
}
static void call_end(jc *c, uint32_t keep) {
    c->memonly = false;
    reload_pins(c, keep);
}

static void reload_mem(jc *c) {
    pw__x64_load(&c->x, X_LD64, X_RAX, x_mem(X_R14, (int32_t)offsetof(pw_instance, mem0)));
    pw__x64_load(&c->x, X_LD64, X_R12, x_mem(X_RAX, (int32_t)offsetof(pw_memory, data)));
    pw__x64_load(&c->x, X_LD64, X_R13, x_mem(X_RAX, (int32_t)offsetof(pw_memory, size)));
}

static void call_abs(jc *c, const void *fn) {
    pw__x64_mov_ri64(&c->x, X_RAX, (uint64_t)(uintptr_t)fn);
    pw__x64_call_r(&c->x, X_RAX);
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
    int r = X_RAX;
    if (!br && oi->kind != BK_CMP && d.index == X_DIRECT &&
        !(b.index == X_DIRECT && b.base == d.base))
        r = d.base;
    if (oi->kind == BK_CMP && a.index == X_DIRECT) {
        r = a.base; /* cmp reg, b */
    } else if (!(a.index == X_DIRECT && a.base == r)) {
        ld(c, w, r, a);
    }
    switch (oi->kind) {
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
            pw__x64_test_rr(&c->x, false, r, r);
            branch(c, X_CC_NE, pos, IMM(3));
        }
    } else if (oi->kind == BK_CMP) {
        pw__x64_setcc(&c->x, (pw_xcc)oi->sub, X_RAX);
        pw__x64_movzx8(&c->x, X_RAX, X_RAX);
        st(c, false, d, X_RAX);
    } else if (r == X_RAX) {
        st(c, w, d, X_RAX);
    }
}

/* Effective address ea = rax + the returned displacement (rax: the zero-extended
 * 32-bit sum, plus the offset when it is too large for a displacement), bounds
 * check against r13 (the cached memory size): ea + width > size traps, computed in
 * 64 bits so that it cannot wrap (as in the interpreter). */
static int32_t address(jc *c, uint32_t pos, const meminfo *mi, uint32_t *len) {
    uint32_t offw;
    ld(c, false, X_RAX, SL(mi->store ? 1 : 2));
    if (mi->form == 0) {
        offw = 3;
        *len = 4;
    } else {
        if (mi->form == 1)
            pw__x64_alu_ri(&c->x, X_ADD, false, X_RAX, (int32_t)IMM(mi->store ? 2 : 3));
        else
            alu_m(c, X_ADD, false, X_RAX, mi->store ? SG(2) : SG(3));
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
    }
    pw__x64_lea(&c->x, true, X_RDX, x_mem(X_RAX, disp + mi->bytes));
    pw__x64_alu_rr(&c->x, X_CMP, true, X_RDX, X_R13);
    trap_if(c, X_CC_A, PW_TRAP_MEM_OOB);
    return disp;
}

static void memop(jc *c, uint32_t pos, const meminfo *mi, uint32_t *len) {
    pw_xmem m = x_memi(X_R12, X_RAX, 1, address(c, pos, mi, len));
    /* a pinned value is stored from / loaded into its register directly */
    if (mi->store) {
        pw_xmem v = mi->form == 0 ? SL(2) : SL(3);
        if (v.index == X_DIRECT) {
            pw__x64_store(&c->x, mi->bytes, m, v.base);
        } else if (v.index == X_DIRECTX && mi->bytes >= 4) {
            pw__x64_sse_rm(&c->x, mi->bytes == 8 ? 0xF2 : 0xF3, X_SSE_MOVST, false, v.base, m);
        } else {
            ld(c, true, X_RCX, v);
            pw__x64_store(&c->x, mi->bytes, m, X_RCX);
        }
    } else {
        pw_xmem d = SL(1);
        bool plain = mi->ld == X_LD64 || (mi->ld == X_LD32 && mi->slot_bytes == 4);
        if (d.index == X_DIRECTX && plain) {
            pw__x64_sse_rm(&c->x, mi->ld == X_LD64 ? 0xF2 : 0xF3, X_SSE_MOVLD, false, d.base, m);
            return;
        }
        int r = d.index == X_DIRECT ? d.base : X_RCX;
        pw__x64_load(&c->x, (pw_xld)mi->ld, r, m);
        if (mi->sext64) pw__x64_movsx_rr(&c->x, 4, true, r, r);
        if (r == X_RCX) st(c, mi->slot_bytes == 8, d, X_RCX);
    }
}

/* Integer division and remainder: the traps of the interpreter, then div/idiv. */
static void divrem(jc *c, uint32_t pos, bool w, bool sign, bool rem) {
    ld(c, w, X_RAX, SL(2));
    ld(c, w, X_RCX, SL(3));
    pw__x64_test_rr(&c->x, w, X_RCX, X_RCX);
    trap_if(c, X_CC_E, PW_TRAP_DIV_ZERO);
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
 * compiler uses for the interpreter's `a + b` and `a < b`, so the same bits (NaN
 * payloads included). */
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

/* Everything else on floats runs in C (jit_fop), by the interpreter's own expressions
 * (interp.h's X-macros and fops.h), so both tiers compute identical bits. */
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
        if (!(a > (lo) && a < (hi))) return PW_TRAP_INT_OVERFLOW;                                  \
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

static void fparith(jc *c, uint32_t pos, const fpinfo *fi, uint32_t *len) {
    pw_x64 *x = &c->x;
    int pfx = fi->d ? 0xF2 : 0xF3;
    *len = fi->imm && fi->d ? 5 : 4;
    pw_xmem a = SF(2);
    if (fi->kind == 1) {
        /* computed in a pinned destination xmm register when b is not in it */
        pw_xmem d = SF(1), b = fi->imm ? x_mem(X_RBX, 0) : SF(3);
        int r = 0;
        if (d.index == X_DIRECTX && !(b.index == X_DIRECTX && b.base == d.base)) r = d.base;
        sse_ld(c, pfx, r, a);
        if (fi->imm) {
            uint64_t bits = fi->d ? (uint64_t)IMM(3) | ((uint64_t)IMM(4) << 32) : IMM(3);
            pw__x64_mov_ri64(x, X_RAX, bits);
            pw__x64_sse_rr(x, 0x66, X_SSE_MOVD, fi->d, 1, X_RAX);
            pw__x64_sse_rr(x, pfx, fi->sub, false, r, 1);
        } else if (b.index == X_DIRECTX) {
            pw__x64_sse_rr(x, pfx, fi->sub, false, r, b.base);
        } else if (b.index == X_DIRECT) {
            sse_ld(c, pfx, 1, b);
            pw__x64_sse_rr(x, pfx, fi->sub, false, r, 1);
        } else {
            pw__x64_sse_rm(x, pfx, fi->sub, false, r, b);
        }
        sse_st(c, pfx, d, r);
        return;
    }
    int ucpfx = fi->d ? 0x66 : -1;
    sse_ld(c, pfx, 0, a);
    sse_ld(c, pfx, 1, SF(3));
    switch (fi->sub) {
    case FC_EQ:
    case FC_NE:
        pw__x64_sse_rr(x, ucpfx, X_SSE_UCOMI, false, 0, 1);
        pw__x64_setcc(x, fi->sub == FC_EQ ? X_CC_E : X_CC_NE, X_RAX);
        pw__x64_setcc(x, fi->sub == FC_EQ ? X_CC_NP : X_CC_P, X_RCX);
        pw__x64_movzx8(x, X_RAX, X_RAX);
        pw__x64_movzx8(x, X_RCX, X_RCX);
        pw__x64_alu_rr(x, fi->sub == FC_EQ ? X_AND : X_OR, false, X_RAX, X_RCX);
        break;
    case FC_GT:
    case FC_GE: /* unordered sets CF: "above" / "above or equal" are false */
        pw__x64_sse_rr(x, ucpfx, X_SSE_UCOMI, false, 0, 1);
        pw__x64_setcc(x, fi->sub == FC_GT ? X_CC_A : X_CC_AE, X_RAX);
        pw__x64_movzx8(x, X_RAX, X_RAX);
        break;
    default: /* a < b is b > a */
        pw__x64_sse_rr(x, ucpfx, X_SSE_UCOMI, false, 1, 0);
        pw__x64_setcc(x, fi->sub == FC_LT ? X_CC_A : X_CC_AE, X_RAX);
        pw__x64_movzx8(x, X_RAX, X_RAX);
        break;
    }
    st(c, false, SL(1), X_RAX);
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
    pw__x64_mov_ri64(x, X_RAX, (uint64_t)(uintptr_t)jit_fop);
    pw__x64_call_r(x, X_RAX);
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
/* SSE4.1 (the compiler runtime's CPU probe). Without it those instructions are
 * helper calls: the plain SSE2 path stays correct. */
static bool sse41_ok(void) {
    return __builtin_cpu_supports("sse4.1");
}

/* A v128 operand (the first of its two cells) at word w: memory only, both cells
 * (never pinned, so inline SSE code finds the value in the frame). */
static pw_xmem SV_(jc *c, uint32_t w) {
    uint32_t slot = c->code[w];
    if ((uint64_t)slot + 1 >= c->cf->frame_slots) {
        c->fail = true;
        return x_mem(X_RBX, 0);
    }
    if (c->analyze) {
        for (uint32_t k = slot; k <= slot + 1; k++) {
            c->use[k] |= U_MEM;
            note_access(c, k, U_MEM);
        }
    } else if (c->pin && !c->memonly && (c->pin[slot] >= 0 || c->pin[slot + 1] >= 0)) {
        c->fail = true; /* not reached: pass 1 saw every use */
    }
    return x_mem(X_RBX, (int32_t)(slot * 8));
}

/* SIMD instructions compiled inline with SSE2: lane-wise binary operators whose x86
 * instruction computes exactly the Wasm result (packed integer add/sub/saturating
 * add/sub/min/max/avgr/mullo/compares, bitwise and/or/xor/andnot, f32x4/f64x2
 * add/sub/mul/div, which are the IEEE operations the interpreter's lane loops
 * perform), and bitselect. prefix -1: none (ps); swap: computes b op a. */
typedef struct simd_sse {
    int16_t prefix;
    uint8_t op, swap;
    uint8_t sse41; /* 66 0F 38 op (SSE4.1): only when the CPU has it */
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
        /* narrowing with signed saturation (packsswb, packssdw) and signed words to
         * unsigned bytes (packuswb): a's lanes first, then b's, as in Wasm */
        {0x65, {0x66, 0x63, 0, 0}},
        {0x66, {0x66, 0x67, 0, 0}},
        {0x85, {0x66, 0x6B, 0, 0}},
        /* SSE4.1: pminsb/pmaxsb, pminuw/pmaxuw, pmin/pmax s/u d, pmulld, packusdw,
         * pcmpeqq */
        {0x76, {0x66, 0x38, 0, 1}},
        {0x78, {0x66, 0x3C, 0, 1}},
        {0x97, {0x66, 0x3A, 0, 1}},
        {0x99, {0x66, 0x3E, 0, 1}},
        {0xB6, {0x66, 0x39, 0, 1}},
        {0xB7, {0x66, 0x3B, 0, 1}},
        {0xB8, {0x66, 0x3D, 0, 1}},
        {0xB9, {0x66, 0x3F, 0, 1}},
        {0xB5, {0x66, 0x40, 0, 1}},
        {0x86, {0x66, 0x2B, 0, 1}},
        {0xD6, {0x66, 0x29, 0, 1}},
    };
    for (size_t i = 0; i < sizeof T / sizeof T[0]; i++)
        if (T[i].sub == sub) {
            *o = T[i].e;
            return true;
        }
    return false;
}

#define X_MOVDQU_LD 0x6F /* F3 0F 6F: movdqu xmm, m128 */
#define X_MOVDQU_ST 0x7F /* F3 0F 7F: movdqu m128, xmm */

/* pcmpeqd xmm1, xmm1 (all ones), then an immediate shift of xmm1: ext 2 (psrl) or 6
 * (psll) of group 0x72 (dwords) or 0x73 (qwords); n = 0: none. */
static void ones_xmm1(pw_x64 *x, uint8_t group, uint8_t ext, uint8_t n) {
    pw__x64_sse_rr(x, 0x66, 0x76, false, 1, 1);
    if (!n) return;
    const uint8_t ops[2] = {0x0F, group};
    pw__x64_modrm(x, 0x66, false, ops, 2, ext, 1, NULL, false);
    pw__x64_byte(x, n);
}

/* Lane access, splats, masks, float compares and the other instructions whose result
 * needs a few SSE2 instructions. False: not one of them. */
static bool simd_inline2(jc *c, uint32_t pos, uint32_t sub) {
    pw_x64 *x = &c->x;
    /* extract_lane: the lane is a scalar load from the operand's cells */
    static const struct {
        uint8_t sub, ld, w, bytes;
    } EX[] = {{0x15, X_LD8S, 0, 1},  {0x16, X_LD8U, 0, 1}, {0x18, X_LD16S, 0, 2},
              {0x19, X_LD16U, 0, 2}, {0x1B, X_LD32, 0, 4}, {0x1F, X_LD32, 0, 4},
              {0x1D, X_LD64, 1, 8},  {0x21, X_LD64, 1, 8}};
    for (size_t i = 0; i < sizeof EX / sizeof EX[0]; i++) {
        if (EX[i].sub != sub) continue;
        pw_xmem a = SV_(c, pos + 4);
        a.disp += (int32_t)((IMM(10) & (16u / EX[i].bytes - 1)) * EX[i].bytes);
        pw__x64_load(x, (pw_xld)EX[i].ld, X_RAX, a);
        st(c, EX[i].w, SL(3), X_RAX);
        return true;
    }
    /* replace_lane: copy the vector, then store the scalar into the lane */
    static const struct {
        uint8_t sub, w, bytes;
    } RP[] = {{0x17, 0, 1}, {0x1A, 0, 2}, {0x1C, 0, 4}, {0x20, 0, 4}, {0x1E, 1, 8}, {0x22, 1, 8}};
    for (size_t i = 0; i < sizeof RP / sizeof RP[0]; i++) {
        if (RP[i].sub != sub) continue;
        ld(c, RP[i].w, X_RCX, SL(5));
        pw_xmem d = SV_(c, pos + 3), a = SV_(c, pos + 4);
        pw__x64_sse_rm(x, 0xF3, X_MOVDQU_LD, false, 0, a);
        pw__x64_sse_rm(x, 0xF3, X_MOVDQU_ST, false, 0, d);
        d.disp += (int32_t)((IMM(10) & (16u / RP[i].bytes - 1)) * RP[i].bytes);
        pw__x64_store(x, RP[i].bytes, d, X_RCX);
        return true;
    }
    /* splats: movd/movq, then widen the lane to the whole register */
    if (sub >= 0x0F && sub <= 0x14) {
        bool w = sub == 0x12 || sub == 0x14;
        ld(c, w, X_RAX, SL(4));
        pw_xmem d = SV_(c, pos + 3);
        pw__x64_sse_rr(x, 0x66, X_SSE_MOVD, w, 0, X_RAX);
        if (w) {
            pw__x64_sse_rr(x, 0x66, 0x6C, false, 0, 0); /* punpcklqdq */
        } else {
            if (sub == 0x0F) pw__x64_sse_rr(x, 0x66, 0x60, false, 0, 0); /* punpcklbw */
            if (sub <= 0x10) pw__x64_sse_rr(x, 0x66, 0x61, false, 0, 0); /* punpcklwd */
            pw__x64_sse_rr(x, 0x66, 0x70, false, 0, 0);                  /* pshufd, 0 */
            pw__x64_byte(x, 0);
        }
        pw__x64_sse_rm(x, 0xF3, X_MOVDQU_ST, false, 0, d);
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
        pw_xmem d = SV_(c, pos + 3), a = SV_(c, pos + 4), b = SV_(c, pos + 5);
        pw__x64_sse_rm(x, 0xF3, X_MOVDQU_LD, false, 0, FC[i].swap ? b : a);
        pw__x64_sse_rm(x, 0xF3, X_MOVDQU_LD, false, 1, FC[i].swap ? a : b);
        pw__x64_sse_rr(x, FC[i].pd ? 0x66 : -1, 0xC2, false, 0, 1);
        pw__x64_byte(x, FC[i].pred);
        pw__x64_sse_rm(x, 0xF3, X_MOVDQU_ST, false, 0, d);
        return true;
    }
    /* v128.not, float abs and neg: a mask built in xmm1 */
    if (sub == 0x4D || sub == 0xE0 || sub == 0xE1 || sub == 0xEC || sub == 0xED) {
        pw_xmem d = SV_(c, pos + 3), a = SV_(c, pos + 4);
        pw__x64_sse_rm(x, 0xF3, X_MOVDQU_LD, false, 0, a);
        switch (sub) {
        case 0x4D: ones_xmm1(x, 0, 0, 0); break;
        case 0xE0: ones_xmm1(x, 0x72, 2, 1); break;  /* 0x7fffffff */
        case 0xE1: ones_xmm1(x, 0x72, 6, 31); break; /* 0x80000000 */
        case 0xEC: ones_xmm1(x, 0x73, 2, 1); break;
        default: ones_xmm1(x, 0x73, 6, 63); break;
        }
        pw__x64_sse_rr(x, 0x66, sub == 0xE0 || sub == 0xEC ? 0xDB : 0xEF, false, 0, 1);
        pw__x64_sse_rm(x, 0xF3, X_MOVDQU_ST, false, 0, d);
        return true;
    }
    /* bitmasks and any/all_true: pmovmskb/movmskps/movmskpd into eax */
    if (sub == 0x64 || sub == 0x84 || sub == 0xA4 || sub == 0xC4 || sub == 0x53 || sub == 0x63 ||
        sub == 0x83 || sub == 0xA3) {
        pw_xmem a = SV_(c, pos + 4);
        pw__x64_sse_rm(x, 0xF3, X_MOVDQU_LD, false, 0, a);
        switch (sub) {
        case 0x64: pw__x64_sse_rr(x, 0x66, 0xD7, false, X_RAX, 0); break;
        case 0x84:
            pw__x64_sse_rr(x, 0x66, 0x63, false, 0, 0); /* packsswb: the sign of each word */
            pw__x64_sse_rr(x, 0x66, 0xD7, false, X_RAX, 0);
            pw__x64_alu_ri(x, X_AND, false, X_RAX, 0xFF);
            break;
        case 0xA4: pw__x64_sse_rr(x, -1, 0x50, false, X_RAX, 0); break;
        case 0xC4: pw__x64_sse_rr(x, 0x66, 0x50, false, X_RAX, 0); break;
        default: { /* lanes equal to zero, as a byte mask */
            uint8_t eq = sub == 0x83 ? 0x75 : sub == 0xA3 ? 0x76 : 0x74;
            pw__x64_sse_rr(x, 0x66, 0xEF, false, 1, 1);
            pw__x64_sse_rr(x, 0x66, eq, false, 0, 1);
            pw__x64_sse_rr(x, 0x66, 0xD7, false, X_RAX, 0);
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

/* Words: [XOP, SIMD, sub, dst, a, b, c, ...]. False: not inline (call the helper). */
static bool simd_inline(jc *c, uint32_t pos) {
    pw_x64 *x = &c->x;
    uint32_t sub = IMM(2);
    simd_sse o;
    if (simd_inline2(c, pos, sub)) return true;
    if ((sub == 0x00 || sub == 0x0B) && IMM(7) == 0 && IMM(9) == 0 && c->m->nmems > 0 &&
        !c->m->mems[0].is64) {
        /* v128.load / v128.store of the i32 memory 0: the scalar accesses' bounds
         * check against the size in r13 (ea + 16 computed in 64 bits), then movdqu */
        ld(c, false, X_RAX, SL(4));
        uint32_t off = IMM(8);
        int32_t disp = 0;
        if (off <= INT32_MAX - 16) {
            disp = (int32_t)off;
        } else {
            pw__x64_mov_ri32(x, X_RCX, off);
            pw__x64_alu_rr(x, X_ADD, true, X_RAX, X_RCX);
        }
        pw__x64_lea(x, true, X_RDX, x_mem(X_RAX, disp + 16));
        pw__x64_alu_rr(x, X_CMP, true, X_RDX, X_R13);
        trap_if(c, X_CC_A, PW_TRAP_MEM_OOB);
        pw_xmem m = x_memi(X_R12, X_RAX, 1, disp);
        if (sub == 0x00) {
            pw__x64_sse_rm(x, 0xF3, X_MOVDQU_LD, false, 0, m);
            pw__x64_sse_rm(x, 0xF3, X_MOVDQU_ST, false, 0, SV_(c, pos + 3));
        } else {
            pw__x64_sse_rm(x, 0xF3, X_MOVDQU_LD, false, 0, SV_(c, pos + 5));
            pw__x64_sse_rm(x, 0xF3, X_MOVDQU_ST, false, 0, m);
        }
        return true;
    }
    /* shifts by an i32 count taken modulo the lane width (x86 would zero the lanes
     * for a count >= width): psll/psrl/psra with the count in xmm1 */
    static const struct {
        uint8_t sub, op, mask;
    } SH[] = {
        {0x8B, 0xF1, 15}, {0x8C, 0xE1, 15}, {0x8D, 0xD1, 15}, {0xAB, 0xF2, 31},
        {0xAC, 0xE2, 31}, {0xAD, 0xD2, 31}, {0xCB, 0xF3, 63}, {0xCD, 0xD3, 63},
    };
    for (size_t i = 0; i < sizeof SH / sizeof SH[0]; i++) {
        if (SH[i].sub != sub) continue;
        pw_xmem d = SV_(c, pos + 3), a = SV_(c, pos + 4);
        ld(c, false, X_RCX, SL(5));
        pw__x64_alu_ri(x, X_AND, false, X_RCX, SH[i].mask);
        pw__x64_sse_rr(x, 0x66, X_SSE_MOVD, false, 1, X_RCX);
        pw__x64_sse_rm(x, 0xF3, X_MOVDQU_LD, false, 0, a);
        pw__x64_sse_rr(x, 0x66, SH[i].op, false, 0, 1);
        pw__x64_sse_rm(x, 0xF3, X_MOVDQU_ST, false, 0, d);
        return true;
    }
    /* zero-extension of the low or high half: unpack with a zero register */
    static const struct {
        uint8_t sub, op;
    } EXT[] = {{0x89, 0x60}, {0x8A, 0x68}, {0xA9, 0x61}, {0xAA, 0x69}, {0xC9, 0x62}, {0xCA, 0x6A}};
    for (size_t i = 0; i < sizeof EXT / sizeof EXT[0]; i++) {
        if (EXT[i].sub != sub) continue;
        pw_xmem d = SV_(c, pos + 3), a = SV_(c, pos + 4);
        pw__x64_sse_rm(x, 0xF3, X_MOVDQU_LD, false, 0, a);
        pw__x64_sse_rr(x, 0x66, 0xEF, false, 1, 1); /* pxor xmm1, xmm1 */
        pw__x64_sse_rr(x, 0x66, EXT[i].op, false, 0, 1);
        pw__x64_sse_rm(x, 0xF3, X_MOVDQU_ST, false, 0, d);
        return true;
    }
    if (sub == 0x0D) {
        /* i8x16.shuffle: each result byte picked from a or b by its constant lane
         * index, gathered into rax (bytes 0-7) and rdx (8-15) with byte loads from
         * the frame and stored only at the end (the destination may be an operand) */
        pw_xmem d = SV_(c, pos + 3), a = SV_(c, pos + 4), b = SV_(c, pos + 5);
        pw__x64_alu_rr(x, X_XOR, false, X_RAX, X_RAX);
        pw__x64_alu_rr(x, X_XOR, false, X_RDX, X_RDX);
        for (int i = 0; i < 16; i++) {
            uint32_t k = (IMM(7 + i / 4) >> (8 * (i % 4))) & 31;
            pw_xmem src = k < 16 ? a : b;
            src.disp += (int32_t)(k & 15);
            pw__x64_load(x, X_LD8U, X_RCX, src);
            if (i % 8) pw__x64_shift_i(x, X_SHL, true, X_RCX, (uint8_t)(8 * (i % 8)));
            pw__x64_alu_rr(x, X_OR, true, i < 8 ? X_RAX : X_RDX, X_RCX);
        }
        pw__x64_store(x, 8, d, X_RAX);
        d.disp += 8;
        pw__x64_store(x, 8, d, X_RDX);
        return true;
    }
    if (sub == 0x52) { /* bitselect: b ^ ((a ^ b) & c) */
        pw_xmem d = SV_(c, pos + 3), a = SV_(c, pos + 4), b = SV_(c, pos + 5), m = SV_(c, pos + 6);
        pw__x64_sse_rm(x, 0xF3, X_MOVDQU_LD, false, 0, a);
        pw__x64_sse_rm(x, 0xF3, X_MOVDQU_LD, false, 1, b);
        pw__x64_sse_rr(x, 0x66, 0xEF, false, 0, 1);
        pw__x64_sse_rm(x, 0xF3, X_MOVDQU_LD, false, 1, m);
        pw__x64_sse_rr(x, 0x66, 0xDB, false, 0, 1);
        pw__x64_sse_rm(x, 0xF3, X_MOVDQU_LD, false, 1, b);
        pw__x64_sse_rr(x, 0x66, 0xEF, false, 0, 1);
        pw__x64_sse_rm(x, 0xF3, X_MOVDQU_ST, false, 0, d);
        return true;
    }
    if (!simd_sse_of(sub, &o) || (o.sse41 && !sse41_ok())) return false;
    pw_xmem d = SV_(c, pos + 3), a = SV_(c, pos + 4), b = SV_(c, pos + 5);
    pw__x64_sse_rm(x, 0xF3, X_MOVDQU_LD, false, 0, o.swap ? b : a);
    pw__x64_sse_rm(x, 0xF3, X_MOVDQU_LD, false, 1, o.swap ? a : b);
    if (o.sse41) {
        const uint8_t ops[3] = {0x0F, 0x38, o.op};
        pw__x64_modrm(x, 0x66, false, ops, 3, 0, 1, NULL, false);
    } else {
        pw__x64_sse_rr(x, o.prefix, o.op, false, 0, 1);
    }
    pw__x64_sse_rm(x, 0xF3, X_MOVDQU_ST, false, 0, d);
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
    if (kind == PW_XOP_CLAMP32) { /* dst src: saturated to u32 */
        ld(c, true, X_RAX, SL(3));
        pw__x64_mov_ri32(x, X_RCX, UINT32_MAX); /* zero-extended: rcx = 2^32 - 1 */
        pw__x64_alu_rr(x, X_CMP, true, X_RAX, X_RCX);
        pw__x64_cmov(x, X_CC_A, true, X_RAX, X_RCX);
        st(c, false, SL(2), X_RAX);
        return;
    }
    if (kind == PW_XOP_SIMD && simd_inline(c, pos)) return;
    call_begin(c);
    pw__x64_mov_rr(x, true, X_RDI, X_R15);
    pw__x64_mov_rr(x, true, X_RSI, X_R14);
    pw__x64_mov_rr(x, true, X_RDX, X_RBX);
    pw__x64_mov_ri64(x, X_RCX, (uint64_t)(uintptr_t)(c->code + pos));
    pw__x64_mov_ri64(x, X_RAX, (uint64_t)(uintptr_t)pw__interp_xop);
    pw__x64_call_r(x, X_RAX);
    pw__x64_test_rr(x, false, X_RAX, X_RAX);
    jcc_to(c, X_CC_NE, special(c, LAB_TRAPC)); /* eax = the trap code */
    call_end(c, 0);
}

/* Helpers called by JIT code. */
static pw_status jit_call_indirect(pw_store *s, pw_instance *inst, const uint32_t *pc, pw_slot *fp,
                                   const struct pw_jitmod *jm, const pw_cfunc *funcs);
static pw_status jit_call_ref(pw_store *s, pw_instance *inst, const uint32_t *pc, pw_slot *fp);
static pw_status jit_call(pw_store *s, pw_instance *inst, pw_func *f, pw_slot *argp, pw_slot *fp,
                          const uint32_t *ret_pc);
static int64_t jit_memory_grow(pw_store *s, pw_instance *inst, uint32_t delta);

/* A call through jit_call: f = inst->funcs[fidx] (CALL, CALL_IMPORT). */
static void call_func(jc *c, uint32_t pos, uint32_t fidx, uint32_t argbase, uint32_t len) {
    if (fidx >= c->m->nfuncs || argbase >= c->cf->frame_slots) {
        c->fail = true;
        return;
    }
    pw_x64 *x = &c->x;
    size_t slow = 0, done = 0;
    bool fast = false;
    call_begin(c);
    const uint32_t *ret_pc = c->code + pos + len;
    if (fidx >= c->m->nfunc_imports) {
        /* A defined function of this module: when its JIT code exists, call it
         * directly, doing inline what jit_call + exec_wasm do (same checks, same
         * frame record, same traps); otherwise (not yet compiled, fallback, native
         * stack budget used up, many locals to zero) the helper path below. */
        uint32_t d = fidx - c->m->nfunc_imports;
        const pw_cfunc *ce = &c->m->code->funcs[d];
        uint32_t nz = ce->nlocals - ce->nparams;
        if (nz <= 32 && (uint64_t)argbase + ce->frame_slots < (1u << 27)) {
            fast = true;
            pw__x64_mov_ri64(x, X_RAX, (uint64_t)(uintptr_t)&c->jm->fns[d]);
            pw__x64_load(x, X_LD64, X_RAX, x_mem(X_RAX, 0));
            pw__x64_alu_ri(x, X_CMP, true, X_RAX, 1);
            slow = pw__x64_jcc32(x, X_CC_BE); /* NULL or JIT_FALLBACK */
            pw__x64_alu_rm(x, X_CMP, true, X_RSP,
                       x_mem(X_R15, (int32_t)offsetof(pw_store, jit_stack_limit)));
            size_t slow2 = pw__x64_jcc32(x, X_CC_B);
            poll_interrupt(c);
            /* frame record room, value stack room */
            pw__x64_load(x, X_LD64, X_RDX, x_mem(X_R15, (int32_t)offsetof(pw_store, frame_top)));
            pw__x64_alu_rm(x, X_CMP, true, X_RDX,
                       x_mem(X_R15, (int32_t)offsetof(pw_store, frames_end)));
            trap_if(c, X_CC_AE, PW_TRAP_STACK_EXHAUSTED);
            pw__x64_lea(x, true, X_RSI, x_mem(X_RBX, (int32_t)((argbase + ce->frame_slots) * 8)));
            pw__x64_alu_rm(x, X_CMP, true, X_RSI, x_mem(X_R15, (int32_t)offsetof(pw_store, stack_end)));
            trap_if(c, X_CC_A, PW_TRAP_STACK_EXHAUSTED);
            /* the caller's frame record */
            pw__x64_mov_ri64(x, X_RCX, (uint64_t)(uintptr_t)ret_pc);
            pw__x64_store(x, 8, x_mem(X_RDX, (int32_t)offsetof(pw_frame, ret_pc)), X_RCX);
            pw__x64_store(x, 8, x_mem(X_RDX, (int32_t)offsetof(pw_frame, fp)), X_RBX);
            pw__x64_store(x, 8, x_mem(X_RDX, (int32_t)offsetof(pw_frame, inst)), X_R14);
            pw__x64_alu_ri(x, X_ADD, true, X_RDX, (int32_t)sizeof(pw_frame));
            pw__x64_store(x, 8, x_mem(X_R15, (int32_t)offsetof(pw_store, frame_top)), X_RDX);
            /* the callee's declared locals start at zero */
            pw__x64_alu_rr(x, X_XOR, false, X_RCX, X_RCX);
            for (uint32_t k = ce->nparams; k < ce->nlocals; k++)
                pw__x64_store(x, 8, x_mem(X_RBX, (int32_t)((argbase + k) * 8)), X_RCX);
            pw__x64_lea(x, true, X_RDI, x_mem(X_RBX, (int32_t)(argbase * 8)));
            pw__x64_alu_ri(x, X_ADD, true, X_RAX, JIT_INNER); /* the inner entry */
            pw__x64_call_r(x, X_RAX);
            pw__x64_alu_mi(x, X_SUB, true, x_mem(X_R15, (int32_t)offsetof(pw_store, frame_top)),
                       (int32_t)sizeof(pw_frame));
            pw__x64_test_rr(x, false, X_RAX, X_RAX);
            jcc_to(c, X_CC_NE, special(c, LAB_EXIT));
            reload_mem(c);
            done = pw__x64_jmp32(x);
            pw__x64_patch32(x, slow, (int32_t)(x->len - (slow + 4)));
            pw__x64_patch32(x, slow2, (int32_t)(x->len - (slow2 + 4)));
        }
    }
    pw__x64_mov_rr(x, true, X_RDI, X_R15);
    pw__x64_mov_rr(x, true, X_RSI, X_R14);
    pw__x64_load(x, X_LD64, X_RAX, x_mem(X_R14, (int32_t)offsetof(pw_instance, funcs)));
    pw__x64_load(x, X_LD64, X_RDX, x_mem(X_RAX, (int32_t)(fidx * 8)));
    pw__x64_lea(x, true, X_RCX, x_mem(X_RBX, (int32_t)(argbase * 8)));
    pw__x64_mov_rr(x, true, X_R8, X_RBX);
    pw__x64_mov_ri64(x, X_R9, (uint64_t)(uintptr_t)ret_pc);
    call_abs(c, (const void *)jit_call);
    pw__x64_test_rr(x, false, X_RAX, X_RAX);
    jcc_to(c, X_CC_NE, special(c, LAB_EXIT));
    reload_mem(c);
    if (fast) pw__x64_patch32(x, done, (int32_t)(x->len - (done + 4)));
    call_end(c, argbase);
}

static bool popcnt_ok(void) {
    return __builtin_cpu_supports("popcnt");
}

/* Translate one instruction at pos; *len = its length in words. */
static void translate(jc *c, uint32_t pos, int op, uint32_t *len) {
    pw_x64 *x = &c->x;
    if (binops[op].kind) {
        *len = 4;
        binop(c, pos, &binops[op]);
        return;
    }
    if (memops[op].bytes) {
        memop(c, pos, &memops[op], len);
        return;
    }
    if (fpops[op].kind) {
        fparith(c, pos, &fpops[op], len);
        return;
    }
    *len = 3;
    switch (op) {
    case PW_OP_UNREACHABLE:
        *len = 1;
        jmp_to(c, special(c, PW_TRAP_UNREACHABLE));
        return;
    case PW_OP_BR:
        *len = 2;
        branch(c, -1, pos, IMM(1));
        return;
    case PW_OP_BR_IF:
    case PW_OP_BR_IFZ:
    case PW_OP_BR_IF64:
    case PW_OP_BR_IF64Z: {
        bool w = op == PW_OP_BR_IF64 || op == PW_OP_BR_IF64Z;
        ld(c, w, X_RAX, SL(1));
        pw__x64_test_rr(x, w, X_RAX, X_RAX);
        branch(c, op == PW_OP_BR_IF || op == PW_OP_BR_IF64 ? X_CC_NE : X_CC_E, pos, IMM(2));
        return;
    }
    case PW_OP_BR_TABLE: {
        uint32_t n = IMM(2);
        if (n >= c->n || pos + 4 + (uint64_t)n > c->n) {
            c->fail = true;
            return;
        }
        *len = 4 + n;
        /* Any entry may be a loop back-edge: poll once before the indirect jump. */
        poll_interrupt(c);
        ld(c, false, X_RAX, SL(1));
        pw__x64_mov_ri32(x, X_RCX, n);
        pw__x64_alu_rr(x, X_CMP, false, X_RAX, X_RCX);
        pw__x64_cmov(x, X_CC_A, false, X_RAX, X_RCX); /* i > n: the default, off[n] */
        size_t lea = pw__x64_lea_rip(x, X_RCX);
        pw__x64_load(x, X_LD32S, X_RAX, x_memi(X_RCX, X_RAX, 4, 0));
        pw__x64_alu_rr(x, X_ADD, true, X_RAX, X_RCX);
        pw__x64_jmp_r(x, X_RAX);
        size_t table = x->len;
        pw__x64_patch32(x, lea, (int32_t)(table - (lea + 4)));
        for (uint32_t i = 0; i <= n; i++) {
            uint32_t t = pos + IMM(3 + i);
            if (t >= c->n) {
                c->fail = true;
                return;
            }
            size_t at = x->len;
            pw__x64_u32(x, 0);
            add_fix(c, at, t, table);
        }
        return;
    }
    case PW_OP_RETURN:
        *len = 1;
        jmp_to(c, special(c, LAB_RET));
        return;
    case PW_OP_CALL: call_func(c, pos, c->m->nfunc_imports + IMM(1), IMM(2), 3); return;
    case PW_OP_CALL_IMPORT:
        if (IMM(1) >= c->m->nfunc_imports) c->fail = true;
        call_func(c, pos, IMM(1), IMM(2), 3);
        return;
    case PW_OP_CALL_INDIRECT:
    case PW_OP_CALL_REF: {
        /* The helper decodes the instruction's operands from its code words. */
        bool ind = op == PW_OP_CALL_INDIRECT;
        *len = ind ? 5 : 3;
        if (ind && (IMM(1) >= c->m->ntypes || IMM(2) >= c->m->ntables)) {
            c->fail = true;
            return;
        }
        (void)SL(ind ? 3 : 1);
        if ((ind ? IMM(4) : IMM(2)) >= c->cf->frame_slots) c->fail = true;
        call_begin(c);
        pw__x64_mov_rr(x, true, X_RDI, X_R15);
        pw__x64_mov_rr(x, true, X_RSI, X_R14);
        pw__x64_mov_ri64(x, X_RDX, (uint64_t)(uintptr_t)(c->code + pos));
        pw__x64_mov_rr(x, true, X_RCX, X_RBX);
        pw__x64_mov_ri64(x, X_R8, (uint64_t)(uintptr_t)c->jm);
        pw__x64_mov_ri64(x, X_R9, (uint64_t)(uintptr_t)c->m->code->funcs);
        call_abs(c, ind ? (const void *)jit_call_indirect : (const void *)jit_call_ref);
        pw__x64_test_rr(x, false, X_RAX, X_RAX);
        jcc_to(c, X_CC_NE, special(c, LAB_EXIT));
        reload_mem(c);
        call_end(c, ind ? IMM(4) : IMM(2));
        return;
    }
    case PW_OP_COPY:
        ld(c, true, X_RAX, SL(2));
        st(c, true, SL(1), X_RAX);
        return;
    case PW_OP_XOP: xop(c, pos, len); return;
    case PW_OP_COPY2:
        *len = 5;
        /* sequential, as in the interpreter (the second may read the first's dst) */
        ld(c, true, X_RAX, SL(2));
        st(c, true, SL(1), X_RAX);
        ld(c, true, X_RCX, SL(4));
        st(c, true, SL(3), X_RCX);
        return;
    case PW_OP_CONST32:
        pw__x64_mov_ri32(x, X_RAX, IMM(2));
        st(c, true, SL(1), X_RAX);
        return;
    case PW_OP_CONST64:
        *len = 4;
        pw__x64_mov_ri64(x, X_RAX, (uint64_t)IMM(2) | ((uint64_t)IMM(3) << 32));
        st(c, true, SL(1), X_RAX);
        return;
    case PW_OP_SELECT:
        *len = 5;
        ld(c, true, X_RAX, SL(2));
        ld(c, true, X_RCX, SL(3));
        ld(c, false, X_RDX, SL(4));
        pw__x64_test_rr(x, false, X_RDX, X_RDX);
        pw__x64_cmov(x, X_CC_E, true, X_RAX, X_RCX);
        st(c, true, SL(1), X_RAX);
        return;
    case PW_OP_GLOBAL_GET:
    case PW_OP_GLOBAL_SET: {
        bool get = op == PW_OP_GLOBAL_GET;
        uint32_t g = get ? IMM(2) : IMM(1);
        if (g >= c->m->nglobals) {
            c->fail = true;
            return;
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
        return;
    }
    case PW_OP_REF_FUNC:
        if (IMM(2) >= c->m->nfuncs) {
            c->fail = true;
            return;
        }
        pw__x64_load(x, X_LD64, X_RAX, x_mem(X_R14, (int32_t)offsetof(pw_instance, funcs)));
        pw__x64_load(x, X_LD64, X_RAX, x_mem(X_RAX, (int32_t)(IMM(2) * 8)));
        st(c, true, SL(1), X_RAX);
        return;
    case PW_OP_I32_DIV_S:
        *len = 4;
        divrem(c, pos, false, true, false);
        return;
    case PW_OP_I32_DIV_U:
        *len = 4;
        divrem(c, pos, false, false, false);
        return;
    case PW_OP_I32_REM_S:
        *len = 4;
        divrem(c, pos, false, true, true);
        return;
    case PW_OP_I32_REM_U:
        *len = 4;
        divrem(c, pos, false, false, true);
        return;
    case PW_OP_I64_DIV_S:
        *len = 4;
        divrem(c, pos, true, true, false);
        return;
    case PW_OP_I64_DIV_U:
        *len = 4;
        divrem(c, pos, true, false, false);
        return;
    case PW_OP_I64_REM_S:
        *len = 4;
        divrem(c, pos, true, true, true);
        return;
    case PW_OP_I64_REM_U:
        *len = 4;
        divrem(c, pos, true, false, true);
        return;
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
        return;
    }
    case PW_OP_MEMORY_SIZE:
        *len = 2;
        pw__x64_mov_rr(x, true, X_RAX, X_R13);
        pw__x64_shift_i(x, X_SHR, true, X_RAX, 16);
        st(c, false, SL(1), X_RAX);
        return;
    case PW_OP_MEMORY_GROW:
        if (c->m->nmems == 0) {
            c->fail = true;
            return;
        }
        call_begin(c);
        pw__x64_mov_rr(x, true, X_RDI, X_R15);
        pw__x64_mov_rr(x, true, X_RSI, X_R14);
        ld(c, false, X_RDX, SL(2));
        call_abs(c, (const void *)jit_memory_grow);
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
        return;
    /* Unary integer operators and bit-pattern float operators. */
    case PW_OP_I32_EQZ:
    case PW_OP_I64_EQZ: {
        bool w = op == PW_OP_I64_EQZ;
        ld(c, w, X_RAX, SL(2));
        pw__x64_test_rr(x, w, X_RAX, X_RAX);
        pw__x64_setcc(x, X_CC_E, X_RAX);
        pw__x64_movzx8(x, X_RAX, X_RAX);
        st(c, false, SL(1), X_RAX);
        return;
    }
    case PW_OP_I32_CLZ: bitscan(c, pos, false, true); return;
    case PW_OP_I64_CLZ: bitscan(c, pos, true, true); return;
    case PW_OP_I32_CTZ: bitscan(c, pos, false, false); return;
    case PW_OP_I64_CTZ: bitscan(c, pos, true, false); return;
    case PW_OP_I32_POPCNT:
    case PW_OP_I64_POPCNT: {
        bool w = op == PW_OP_I64_POPCNT;
        if (!popcnt_ok()) {
            c->fail = true;
            return;
        }
        ld(c, w, X_RAX, SL(2));
        pw__x64_popcnt(x, w, X_RAX, X_RAX);
        st(c, w, SL(1), X_RAX);
        return;
    }
    case PW_OP_I32_EXTEND8_S:
    case PW_OP_I32_EXTEND16_S:
        ld(c, false, X_RAX, SL(2));
        pw__x64_movsx_rr(x, op == PW_OP_I32_EXTEND8_S ? 1 : 2, false, X_RAX, X_RAX);
        st(c, false, SL(1), X_RAX);
        return;
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
        return;
    case PW_OP_I32_WRAP_I64:
        ld(c, false, X_RAX, SL(2));
        st(c, false, SL(1), X_RAX);
        return;
    case PW_OP_I64_EXTEND_I32_S:
        ld(c, false, X_RAX, SL(2));
        pw__x64_movsx_rr(x, 4, true, X_RAX, X_RAX);
        st(c, true, SL(1), X_RAX);
        return;
    case PW_OP_I64_EXTEND_I32_U:
        ld(c, false, X_RAX, SL(2));
        st(c, true, SL(1), X_RAX);
        return;
    case PW_OP_F32_ABS:
    case PW_OP_F32_NEG:
        ld(c, false, X_RAX, SL(2));
        if (op == PW_OP_F32_ABS)
            pw__x64_alu_ri(x, X_AND, false, X_RAX, 0x7fffffff);
        else
            pw__x64_alu_ri(x, X_XOR, false, X_RAX, INT32_MIN);
        st(c, false, SL(1), X_RAX);
        return;
    case PW_OP_F64_ABS:
    case PW_OP_F64_NEG:
        ld(c, true, X_RAX, SL(2));
        pw__x64_mov_ri64(x, X_RCX, op == PW_OP_F64_ABS ? 0x7fffffffffffffffull : 0x8000000000000000ull);
        pw__x64_alu_rr(x, op == PW_OP_F64_ABS ? X_AND : X_XOR, true, X_RAX, X_RCX);
        st(c, true, SL(1), X_RAX);
        return;
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
        pw__x64_sse_rr(x, f64 ? 0xF2 : 0xF3, X_SSE_CVTSI2, !s32, r, X_RAX);
        sse_st(c, f64 ? 0xF2 : 0xF3, d, r);
        return;
    }
    case PW_OP_F32_DEMOTE_F64:
    case PW_OP_F64_PROMOTE_F32: {
        /* cvtsd2ss / cvtss2sd, as the C casts */
        bool dem = op == PW_OP_F32_DEMOTE_F64;
        pw_xmem d = SF(1), a = SF(2);
        int r = d.index == X_DIRECTX ? d.base : 0;
        sse_ld(c, dem ? 0xF2 : 0xF3, 1, a);
        pw__x64_sse_rr(x, dem ? 0xF2 : 0xF3, X_SSE_CVTF, false, r, 1);
        sse_st(c, dem ? 0xF3 : 0xF2, d, r);
        return;
    }
    case PW_OP_F32_SQRT:
    case PW_OP_F64_SQRT: {
        /* sqrtss/sqrtsd: what the C library's sqrtf/sqrt compute on x86-64 (also the
         * NaN bits: default NaN for negatives, quieted payloads) */
        int pfx = op == PW_OP_F64_SQRT ? 0xF2 : 0xF3;
        pw_xmem d = SF(1), a = SF(2);
        int r = d.index == X_DIRECTX ? d.base : 0;
        sse_ld(c, pfx, r, a);
        pw__x64_sse_rr(x, pfx, X_SSE_SQRT, false, r, r);
        sse_st(c, pfx, d, r);
        return;
    }
    default:
        if (fop_helper[op]) {
            fophelper(c, pos, op, len);
            return;
        }
        /* Not in the supported set: the function stays on the interpreter. */
        c->fail = true;
        return;
    }
}

/* Two entries. The outer one (offset 0, the published entry, called from C as
 * pw_jit_entry) saves the callee-saved registers, sets r14/r15 and the memory
 * registers and calls the inner one, which starts JIT_INNER bytes later. JIT code
 * of the same module calls the inner entry directly (rdi = the callee's frame; r12-
 * r15 already right): it saves only rbx and rbp, the registers it changes that the
 * caller relies on (the caller reloads r12/r13 after every call). */
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
    pw__x64_byte(x, 0xE8); /* call rel32: the inner entry */
    size_t at = x->len;
    pw__x64_u32(x, 0);
    pw__x64_alu_ri(x, X_ADD, true, X_RSP, 8);
    pw__x64_pop(x, X_R15);
    pw__x64_pop(x, X_R14);
    pw__x64_pop(x, X_R13);
    pw__x64_pop(x, X_R12);
    pw__x64_pop(x, X_RBX);
    pw__x64_pop(x, X_RBP);
    pw__x64_ret(x);
    if (x->len > JIT_INNER) c->fail = true;
    while (x->len < JIT_INNER)
        pw__x64_byte(x, 0xCC);
    pw__x64_patch32(x, at, (int32_t)(JIT_INNER - (at + 4)));
    /* inner entry */
    pw__x64_push(x, X_RBP);
    pw__x64_push(x, X_RBX);
    pw__x64_alu_ri(x, X_SUB, true, X_RSP, 8); /* 16-byte alignment for helper calls */
    pw__x64_mov_rr(x, true, X_RBX, X_RDI);
    reload_pins(c, 0); /* params as passed, declared locals zeroed by the caller */
}

static void epilogue(jc *c) {
    pw_x64 *x = &c->x;
    /* trap stubs: eax = code, then the common trap exit */
    for (uint32_t k = 1; k < PW_TRAP_COUNT_; k++) {
        c->lab[special(c, k)] = (int32_t)x->len;
        pw__x64_mov_ri32(x, X_RAX, k);
        jmp_to(c, special(c, LAB_TRAPC));
    }
    c->lab[special(c, LAB_TRAPC)] = (int32_t)x->len;
    pw__x64_store(x, 4, x_mem(X_R15, (int32_t)offsetof(pw_store, trap)), X_RAX);
    pw__x64_mov_ri32(x, X_RAX, PW_ERR_TRAP);
    jmp_to(c, special(c, LAB_EXIT));
    c->lab[special(c, LAB_RET)] = (int32_t)x->len;
    for (uint32_t k = 0; k < c->npins; k++) /* the results: slots 0..nresults-1 */
        if (c->pslot[k] < c->cf->nresults) {
            pw_xmem m = x_mem(X_RBX, (int32_t)(c->pslot[k] * 8));
            if (c->preg[k] >= PIN_XMM0)
                pw__x64_sse_rm(x, 0xF2, X_SSE_MOVST, false, c->preg[k] - PIN_XMM0, m);
            else
                pw__x64_store(x, 8, m, c->preg[k]);
        }
    pw__x64_alu_rr(x, X_XOR, false, X_RAX, X_RAX);
    c->lab[special(c, LAB_EXIT)] = (int32_t)x->len; /* the inner entry's exit */
    pw__x64_alu_ri(x, X_ADD, true, X_RSP, 8);
    pw__x64_pop(x, X_RBX);
    pw__x64_pop(x, X_RBP);
    pw__x64_ret(x);
}

/* One translation pass over the function into c->x (labels, fixups patched). */
static void run_pass(jc *c) {
    c->x.len = 0;
    c->nfx = 0;
    c->fail = false;
    c->memonly = false;
    for (uint32_t k = 0; k < c->n + LAB_NSPECIAL; k++)
        c->lab[k] = -1;
    prologue(c);
    for (uint32_t pos = 0; pos < c->n && !c->fail;) {
        int op = op_of(c->jm, c->code[pos]);
        if (op < 0) {
            c->fail = true;
            break;
        }
        c->lab[pos] = (int32_t)c->x.len;
        c->curpos = pos;
        uint32_t len = 0;
        translate(c, pos, op, &len);
        if (len == 0 || pos + len > c->n) c->fail = true;
        pos += len;
    }
    if (!c->fail) epilogue(c);
    for (uint32_t k = 0; k < c->nfx && !c->fail; k++) {
        const fixup *f = &c->fx[k];
        int32_t t = c->lab[f->label];
        if (t < 0) {
            c->fail = true;
            break;
        }
        pw__x64_patch32(&c->x, f->at, t - (int32_t)f->base);
    }
}

/* Choose the pinned slots from pass 1's record: each access weighs 8^d (d = loop
 * nesting at its position, counted by backward-branch ranges, at most 3); a call
 * costs every pin a spill and a reload. The heaviest slots whose every use a GPR can
 * take go to GPRs, those whose every use an xmm register can take (at least one an
 * SSE operation) to xmm registers; a slot must gain more than it costs. */
static void choose_pins(jc *c) {
    uint32_t ns = c->cf->frame_slots;
    int32_t *d = calloc((size_t)c->n + 1, sizeof *d);
    uint64_t *wt = calloc(ns ? ns : 1, sizeof *wt);
    uint64_t *fw = calloc(ns ? ns : 1, sizeof *fw); /* weight of SSE uses */
    uint64_t *gw = calloc(ns ? ns : 1, sizeof *gw); /* weight of integer r/m uses */
    if (!d || !wt || !fw || !gw) goto out;
    for (uint32_t k = 0; k + 1 < c->nloops; k += 2) {
        d[c->loops[k]]++;
        d[c->loops[k + 1] + 1]--;
    }
    for (uint32_t i = 1; i <= c->n; i++)
        d[i] += d[i - 1];
    uint64_t callw = 0;
    for (uint32_t k = 0; k < c->nacc; k++) {
        int32_t dep = d[c->acc[k].pos];
        uint64_t w = 1ull << (3 * (dep < 0 ? 0 : dep > 3 ? 3 : dep));
        uint32_t sl = c->acc[k].slot;
        if (sl == UINT32_MAX) {
            callw += w;
        } else {
            wt[sl] += w;
            if (c->acc[k].cls == U_SSE) fw[sl] += w;
            if (c->acc[k].cls == U_GPR) gw[sl] += w;
        }
    }
    uint64_t cost = 2 * callw + 2;
    for (int cls = 0; cls < 2; cls++) {
        int limit = cls ? NPIN_XMM : NPIN_GPR;
        for (int r = 0; r < limit; r++) {
            uint32_t best = UINT32_MAX;
            for (uint32_t sl = 0; sl < ns; sl++) {
                uint8_t u = c->use[sl];
                bool ok = u && !(u & U_MEM) && (cls ? fw[sl] > gw[sl] : fw[sl] <= gw[sl]);
                if (ok && c->pin[sl] < 0 && wt[sl] > cost &&
                    (best == UINT32_MAX || wt[sl] > wt[best]))
                    best = sl;
            }
            if (best == UINT32_MAX) break;
            int8_t reg = cls ? (int8_t)(PIN_XMM0 + 2 + r) : pin_gprs[r];
            c->pin[best] = reg;
            c->pslot[c->npins] = best;
            c->preg[c->npins++] = reg;
        }
    }
out:
    free(d);
    free(wt);
    free(fw);
    free(gw);
}

/* Translate function i of m, appending its code to out (16-byte aligned). Returns its
 * offset in out, or -1 when it falls back (out is then unchanged) or on OOM. The code
 * is position independent (relative branches, rip-relative tables; helpers by
 * absolute address). Pass 1 records slot uses, pass 2 emits with the chosen pins; if
 * pass 2 fails with pins, a pass without pins decides. */
static int64_t compile_func(const struct pw_jitmod *jm, const pw_module *m, uint32_t i,
                            pw_x64 *out) {
    const pw_cfunc *cf = &m->code->funcs[i];
    if (cf->nhandlers || cf->frame_slots >= (1u << 27) || cf->ncode == 0) return -1;
    jc c;
    memset(&c, 0, sizeof c);
    c.jm = jm;
    c.m = m;
    c.cf = cf;
    c.code = cf->code;
    c.n = cf->ncode;
    c.lab = malloc(((size_t)c.n + LAB_NSPECIAL) * sizeof *c.lab);
    c.use = calloc(cf->frame_slots ? cf->frame_slots : 1, 1);
    c.pin = malloc(cf->frame_slots ? cf->frame_slots : 1);
    int64_t at = -1;
    if (!c.lab || !c.use || !c.pin) goto done;
    memset(c.pin, -1, cf->frame_slots);
    /* about 8 bytes of machine code per code word, plus the trap stubs */
    pw__x64_reserve(&c.x, (size_t)c.n * 8 + 512);
    c.analyze = true;
    run_pass(&c);
    c.analyze = false;
    if (c.fail || c.x.oom) goto done;
    choose_pins(&c);
    if (c.npins) run_pass(&c); /* else pass 1's code is the code (nothing pinned) */
    if ((c.fail || c.x.oom) && c.npins) {
        c.npins = 0;
        memset(c.pin, -1, cf->frame_slots);
        c.x.oom = false;
        run_pass(&c);
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
        }
    }
done:
    free(c.x.buf);
    free(c.lab);
    free(c.fx);
    free(c.use);
    free(c.pin);
    free(c.acc);
    free(c.loops);
    return at;
}

/* Translate every function of the module into one buffer, map it read/write, copy,
 * make it read/execute (never both at once), and publish the entries. Two threads
 * may race: one mapping wins (compare-and-swap), the other is unmapped. */
static void compile_module(struct pw_jitmod *jm, const pw_module *m) {
    uint32_t n = jm->nfuncs;
    int64_t *offs = malloc((n ? n : 1) * sizeof *offs);
    if (!offs) { /* OOM: everything stays on the interpreter */
        for (uint32_t i = 0; i < n; i++) {
            void *none = NULL;
            atomic_compare_exchange_strong_explicit(&jm->fns[i], &none, JIT_FALLBACK,
                                                    memory_order_acq_rel, memory_order_acquire);
        }
        return;
    }
    pw_x64 out = {0};
    size_t words = 0;
    for (uint32_t i = 0; i < n; i++)
        words += m->code->funcs[i].ncode;
    pw__x64_reserve(&out, words * 8 + 4096);
    for (uint32_t i = 0; i < n; i++)
        offs[i] = compile_func(jm, m, i, &out);
    void *p = MAP_FAILED;
    size_t maplen = 0;
    if (!out.oom && out.len) {
        long pg = sysconf(_SC_PAGESIZE);
        size_t ps = pg > 0 ? (size_t)pg : 4096;
        maplen = (out.len + ps - 1) / ps * ps;
        p = mmap(NULL, maplen, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE,
                 -1, 0);
        if (p != MAP_FAILED) {
            memcpy(p, out.buf, out.len);
            if (mprotect(p, maplen, PROT_READ | PROT_EXEC) != 0) {
                munmap(p, maplen);
                p = MAP_FAILED;
            }
        }
    }
    free(out.buf);
    void *expect = NULL;
    if (p != MAP_FAILED) {
        jm->maplen = maplen; /* written before the mapping is published */
        if (!atomic_compare_exchange_strong_explicit(&jm->map, &expect, p, memory_order_acq_rel,
                                                     memory_order_acquire)) {
            munmap(p, maplen); /* another thread's translation won */
            free(offs);
            return;
        }
    }
    for (uint32_t i = 0; i < n; i++) {
        void *want = p != MAP_FAILED && offs[i] >= 0 ? (void *)((char *)p + offs[i]) : JIT_FALLBACK;
        void *none = NULL;
        atomic_compare_exchange_strong_explicit(&jm->fns[i], &none, want, memory_order_acq_rel,
                                                memory_order_acquire);
    }
    free(offs);
}

/* ---------------------------------------------------------------- run time */

static pw_jit_entry jit_get(pw_store *s, const pw_func *f) {
    if (!s->jit_on || !f->inst) return NULL;
    const pw_module *m = f->inst->mod;
    struct pw_jitmod *jm = m->code->jit;
    if (!jm) return NULL;
    uint32_t i = (uint32_t)(f->code - m->code->funcs);
    void *p = atomic_load_explicit(&jm->fns[i], memory_order_acquire);
    if (!p) {
        compile_module(jm, m);
        p = atomic_load_explicit(&jm->fns[i], memory_order_acquire);
    }
    /* NULL here: another thread is publishing; this call is interpreted. */
    if (!p || p == JIT_FALLBACK) return NULL;
    return (pw_jit_entry)p;
}

static pw_status trap(pw_store *s, pw_trap_code code) {
    s->trap = code;
    return PW_ERR_TRAP;
}

/* Run Wasm function f (arguments at fp) by its JIT code, or by the interpreter when
 * it has none or the native stack budget is used up (the interpreter does not
 * recurse on the C stack, so depth is then bounded only by the frame records). */
static pw_status exec_wasm(pw_store *s, pw_func *f, pw_slot *fp) {
    pw_jit_entry j = jit_get(s, f);
    if (!j || (char *)__builtin_frame_address(0) < s->jit_stack_limit) return pw__interp(s, f, fp);
    const pw_cfunc *cf = f->code;
    if (fp + cf->frame_slots > s->stack_end) return trap(s, PW_TRAP_STACK_EXHAUSTED);
    memset(fp + cf->nparams, 0, (cf->nlocals - cf->nparams) * sizeof *fp);
    if (atomic_load_explicit(&s->interrupt, memory_order_relaxed))
        return trap(s, PW_TRAP_INTERRUPTED);
    return j(fp, f->inst, s);
}

static pw_status jit_call(pw_store *s, pw_instance *inst, pw_func *f, pw_slot *argp, pw_slot *fp,
                          const uint32_t *ret_pc) {
    if (atomic_load_explicit(&s->interrupt, memory_order_relaxed))
        return trap(s, PW_TRAP_INTERRUPTED);
    pw_frame *fr = s->frame_top;
    if (fr >= s->frames_end) return trap(s, PW_TRAP_STACK_EXHAUSTED);
    /* The caller's frame record, as the interpreter writes it (GC walk, unwinding). */
    fr->ret_pc = ret_pc;
    fr->fp = fp;
    fr->inst = inst;
    s->frame_top = fr + 1;
    pw_status st = f->host ? pw__call_host(s, inst, f, argp) : exec_wasm(s, f, argp);
    s->frame_top = fr;
    return st;
}

/* CALL_INDIRECT type table idx argbase: the interpreter's checks and traps. */
static pw_status jit_call_indirect(pw_store *s, pw_instance *inst, const uint32_t *pc, pw_slot *fp,
                                   const struct pw_jitmod *jm, const pw_cfunc *funcs) {
    pw_table *t = inst->tables[pc[2]];
    uint32_t i = fp[pc[3]].u32;
    if (i >= t->size) return trap(s, PW_TRAP_UNDEF_ELEM);
    pw_func *f = (pw_func *)t->elems[i];
    if (!f) return trap(s, PW_TRAP_UNINIT_ELEM);
    if (f->hdr.type_id != inst->type_ids[pc[1]] && !pw__func_type_sub(f, inst->mod, pc[1]))
        return trap(s, PW_TRAP_SIG_MISMATCH);
    pw_slot *argp = fp + pc[4];
    /* Fast path: a function of this instance (so of the caller's module, whose JIT
     * table and code array the caller passes) that has JIT code: the same steps as
     * jit_call + exec_wasm, in the same order, without looking the module up. */
    size_t d = !f->host && f->inst == inst ? (size_t)(f->code - funcs) : SIZE_MAX;
    if (d < jm->nfuncs) {
        void *p = atomic_load_explicit(&jm->fns[d], memory_order_acquire);
        if (p && p != JIT_FALLBACK && (char *)__builtin_frame_address(0) >= s->jit_stack_limit) {
            if (atomic_load_explicit(&s->interrupt, memory_order_relaxed))
                return trap(s, PW_TRAP_INTERRUPTED);
            pw_frame *fr = s->frame_top;
            if (fr >= s->frames_end) return trap(s, PW_TRAP_STACK_EXHAUSTED);
            const pw_cfunc *cf = f->code;
            if (argp + cf->frame_slots > s->stack_end) return trap(s, PW_TRAP_STACK_EXHAUSTED);
            fr->ret_pc = pc + 5;
            fr->fp = fp;
            fr->inst = inst;
            s->frame_top = fr + 1;
            for (uint32_t k = cf->nparams; k < cf->nlocals; k++) {
                argp[k].u64 = 0;
                __asm__ volatile("" ::: "memory"); /* a few stores, not a memset call */
            }
            pw_status st = ((pw_jit_entry)p)(argp, inst, s);
            s->frame_top = fr;
            return st;
        }
    }
    return jit_call(s, inst, f, argp, fp, pc + 5);
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

int pw__jit_state(const pw_func *f) {
    if (!f->inst || !f->inst->mod->code->jit) return 0;
    const struct pw_cmodule *cm = f->inst->mod->code;
    void *p = atomic_load_explicit(&cm->jit->fns[f->code - cm->funcs], memory_order_acquire);
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
int pw__jit_prepare(pw_store *s, pw_func *f) {
    (void)s, (void)f;
    return 0;
}

#endif
