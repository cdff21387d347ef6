/*
 * interp.c — the interpreter: runs the internal code compile.c produces.
 *
 * Direct-threaded dispatch by computed goto: each instruction's first word is the
 * offset of its handler from L_BASE. Hot state (pc, fp, memory base and size, the
 * current instance's tables) lives in locals so the compiler keeps it in registers.
 * Wasm-to-Wasm calls never recurse on the C stack: a call pushes a pw_frame record
 * onto the store's frame stack and the callee's slots continue the caller's value
 * stack, starting at the caller's argument slots (so arguments are not copied and
 * results land where the caller expects them).
 */
#include "wasm/interp.h"
#include "wasm/gc.h"
#include "wasm/fops.h"
#include "wasm/jit/jit.h"
#include "wasm/runtime.h"
#include "wasm/simd.h"

#include <string.h>

/* ---------------------------------------------------------------- slow paths */

/* Bulk operations run in chunks so that the interrupt flag stops even a 4 GiB fill
 * promptly (the effects so far persist, as with any trap). */
#define PW_CHUNK ((uint32_t)1 << 20)

static __attribute__((noinline)) pw_trap_code op_memory_fill(pw_memory *m, uint32_t d, uint32_t v,
                                                             uint32_t n, const atomic_int *intr) {
    if ((uint64_t)d + n > m->size) return PW_TRAP_MEM_OOB;
    while (n) {
        uint32_t k = n < PW_CHUNK ? n : PW_CHUNK;
        memset(m->data + d, (int)(v & 0xff), k);
        d += k;
        n -= k;
        if (n && atomic_load_explicit(intr, memory_order_relaxed)) return PW_TRAP_INTERRUPTED;
    }
    return PW_TRAP_NONE;
}

/* memory.copy's bytes, PW_CHUNK at a time so an interrupt is seen between chunks. With
 * backward (the ranges overlap, the destination higher) the chunks go from the end, so
 * each chunk's source is read before it is overwritten. */
static pw_trap_code copy_chunked(uint8_t *dst, const uint8_t *src, uint64_t n, bool backward,
                                 const atomic_int *intr) {
    while (n) {
        uint64_t k = n < PW_CHUNK ? n : PW_CHUNK;
        n -= k;
        if (backward) {
            memmove(dst + n, src + n, k);
        } else {
            memmove(dst, src, k);
            dst += k;
            src += k;
        }
        if (n && atomic_load_explicit(intr, memory_order_relaxed)) return PW_TRAP_INTERRUPTED;
    }
    return PW_TRAP_NONE;
}

static __attribute__((noinline)) pw_trap_code op_memory_copy(pw_memory *m, uint32_t d, uint32_t src,
                                                             uint32_t n, const atomic_int *intr) {
    if ((uint64_t)d + n > m->size || (uint64_t)src + n > m->size) return PW_TRAP_MEM_OOB;
    return copy_chunked(m->data + d, m->data + src, n, n > PW_CHUNK && d > src, intr);
}

static __attribute__((noinline)) pw_trap_code op_memory_init(pw_instance *inst, uint32_t seg,
                                                             uint32_t d, uint32_t src, uint32_t n) {
    const pw_data *ds = &inst->mod->datas[seg];
    uint64_t len = inst->data_dropped[seg] ? 0 : ds->bytes.len;
    pw_memory *m = inst->mem0;
    if ((uint64_t)src + n > len || (uint64_t)d + n > m->size) return PW_TRAP_MEM_OOB;
    if (n) memcpy(m->data + d, inst->mod->bytes + ds->bytes.off + src, n);
    return PW_TRAP_NONE;
}

static __attribute__((noinline)) pw_trap_code op_table_fill(pw_table *t, uint32_t i, pw_ref v,
                                                            uint32_t n) {
    if ((uint64_t)i + n > t->size) return PW_TRAP_TABLE_OOB;
    for (uint32_t k = 0; k < n; k++)
        t->elems[i + k] = v;
    return PW_TRAP_NONE;
}

static __attribute__((noinline)) pw_trap_code op_table_copy(pw_table *dt, pw_table *st, uint32_t d,
                                                            uint32_t src, uint32_t n) {
    if ((uint64_t)d + n > dt->size || (uint64_t)src + n > st->size) return PW_TRAP_TABLE_OOB;
    memmove(dt->elems + d, st->elems + src, (size_t)n * sizeof(pw_ref));
    return PW_TRAP_NONE;
}

static __attribute__((noinline)) pw_trap_code
op_table_init(pw_instance *inst, pw_table *t, uint32_t seg, uint32_t d, uint32_t src, uint32_t n) {
    /* The table first: when both ranges are out, V8 reports the table. */
    if ((uint64_t)d + n > t->size) return PW_TRAP_TABLE_OOB;
    if ((uint64_t)src + n > inst->elem_len[seg]) return PW_TRAP_ELEM_SEG_OOB;
    if (n) memcpy(t->elems + d, inst->elem_refs[seg] + src, (size_t)n * sizeof(pw_ref));
    return PW_TRAP_NONE;
}

/* Memory instructions off the fast path: memory64 (i64 addresses and offsets) and
 * memories other than memory 0 (multi-memory). An address operand of an i32 memory
 * is the low half of its slot. Every bounds check is written so that no sum can
 * wrap: `x > size || n > size - x`. */
static inline uint64_t mem_addr(const pw_memory *m, const pw_slot *a) {
    return m->is64 ? a->u64 : a->u32;
}

static inline bool mem_range_ok(uint64_t size, uint64_t x, uint64_t n) {
    return x <= size && n <= size - x;
}

/* Loads and stores: wop is the Wasm opcode (0x28..0x3E), off the memarg offset. */
static __attribute__((noinline)) pw_trap_code
op_mem_access(pw_memory *m, uint32_t wop, const pw_slot *a, pw_slot *v, uint64_t off) {
    static const uint8_t width[23] = {4, 8, 4, 8, 1, 1, 2, 2, 1, 1, 2, 2, 4, 4, /* loads */
                                      4, 8, 4, 8, 1, 2, 1, 2, 4};               /* stores */
    if (wop < 0x28 || wop > 0x3E) return PW_TRAP_UNREACHABLE;                   /* not emitted */
    uint64_t addr = mem_addr(m, a), w = width[wop - 0x28];
    uint64_t ea = addr + off;
    if (ea < addr || !mem_range_ok(m->size, ea, w)) return PW_TRAP_MEM_OOB;
    uint8_t *p = m->data + ea;
    if (wop >= 0x36) { /* stores: the low w bytes of the value (little-endian host) */
        uint64_t x = v->u64;
        memcpy(p, &x, w);
        return PW_TRAP_NONE;
    }
    uint64_t x = 0;
    memcpy(&x, p, w);
    switch (wop) {
    case 0x2C: v->i32 = (int8_t)x; break;
    case 0x2E: v->i32 = (int16_t)x; break;
    case 0x30: v->i64 = (int8_t)x; break;
    case 0x32: v->i64 = (int16_t)x; break;
    case 0x34: v->i64 = (int32_t)x; break;
    default: v->u64 = x; break; /* unsigned and full-width loads */
    }
    return PW_TRAP_NONE;
}

static __attribute__((noinline)) pw_trap_code op_memory_fill_x(pw_memory *m, const pw_slot *dp,
                                                               uint32_t v, const pw_slot *np,
                                                               const atomic_int *intr) {
    uint64_t d = mem_addr(m, dp), n = mem_addr(m, np);
    if (!mem_range_ok(m->size, d, n)) return PW_TRAP_MEM_OOB;
    while (n) {
        uint64_t k = n < PW_CHUNK ? n : PW_CHUNK;
        memset(m->data + d, (int)(v & 0xff), k);
        d += k;
        n -= k;
        if (n && atomic_load_explicit(intr, memory_order_relaxed)) return PW_TRAP_INTERRUPTED;
    }
    return PW_TRAP_NONE;
}

/* memory.copy between any two memories; the length is i64 only when both are. */
static __attribute__((noinline)) pw_trap_code op_memory_copy_x(pw_memory *dm, pw_memory *sm,
                                                               const pw_slot *dp, const pw_slot *sp,
                                                               const pw_slot *np,
                                                               const atomic_int *intr) {
    uint64_t d = mem_addr(dm, dp), src = mem_addr(sm, sp);
    uint64_t n = dm->is64 && sm->is64 ? np->u64 : np->u32;
    if (!mem_range_ok(dm->size, d, n) || !mem_range_ok(sm->size, src, n)) return PW_TRAP_MEM_OOB;
    return copy_chunked(dm->data + d, sm->data + src, n, n > PW_CHUNK && dm == sm && d > src, intr);
}

static __attribute__((noinline)) pw_trap_code op_memory_init_x(pw_instance *inst, pw_memory *m,
                                                               uint32_t seg, const pw_slot *dp,
                                                               uint32_t src, uint32_t n) {
    const pw_data *ds = &inst->mod->datas[seg];
    uint64_t len = inst->data_dropped[seg] ? 0 : ds->bytes.len, d = mem_addr(m, dp);
    if (!mem_range_ok(len, src, n) || !mem_range_ok(m->size, d, n)) return PW_TRAP_MEM_OOB;
    if (n) memcpy(m->data + d, inst->mod->bytes + ds->bytes.off + src, n);
    return PW_TRAP_NONE;
}

/* Words of each extension instruction (handler and kind words included). */
static const uint8_t xop_words[PW_XOP_COUNT_] = {
#define PW_W_X(n, w) [PW_XOP_##n] = w,
    PW_XOPS(PW_W_X)
#undef PW_W_X
};

/* Runs the extension instruction at pc (PW_XOPS); its operands start at pc[2]. Returns
 * the trap code, or PW_TRAP_COUNT_ when memory.grow hit the store's memory cap with
 * cap_is_fatal. */
static __attribute__((noinline)) pw_trap_code op_xop(pw_store *s, pw_instance *inst, pw_slot *fp,
                                                     const uint32_t *pc) {
    const uint32_t *q = pc + 1; /* q[i]: operand i, as in the other instructions' layouts */
#define Q(i)  fp[q[i]]
#define QI(i) q[i]
    switch (pc[1]) {
    case PW_XOP_MEM_LOAD:
        return op_mem_access(inst->mems[QI(3)], QI(4), &Q(2), &Q(1),
                             (uint64_t)QI(5) | (uint64_t)QI(6) << 32);
    case PW_XOP_MEM_STORE:
        return op_mem_access(inst->mems[QI(3)], QI(4), &Q(1), &Q(2),
                             (uint64_t)QI(5) | (uint64_t)QI(6) << 32);
    case PW_XOP_MEMORY_SIZE_X: Q(1).u64 = inst->mems[QI(2)]->size >> 16; return PW_TRAP_NONE;
    case PW_XOP_MEMORY_GROW_X: {
        pw_memory *gm = inst->mems[QI(2)];
        int64_t r = pw__memory_grow(gm, mem_addr(gm, &Q(3)));
        if (r == PW_GROW_OVER_CAP) {
            if (s->cfg.cap_is_fatal) return PW_TRAP_COUNT_;
            r = -1;
        }
        if (gm->is64)
            Q(1).i64 = r;
        else
            Q(1).i32 = (int32_t)r;
        return PW_TRAP_NONE;
    }
    case PW_XOP_MEMORY_FILL_X:
        return op_memory_fill_x(inst->mems[QI(1)], &Q(2), Q(3).u32, &Q(4), &s->interrupt);
    case PW_XOP_MEMORY_COPY_X:
        return op_memory_copy_x(inst->mems[QI(1)], inst->mems[QI(2)], &Q(3), &Q(4), &Q(5),
                                &s->interrupt);
    case PW_XOP_MEMORY_INIT_X:
        return op_memory_init_x(inst, inst->mems[QI(1)], QI(2), &Q(3), Q(4).u32, Q(5).u32);
    case PW_XOP_CLAMP32:
        Q(1).u32 = Q(2).u64 > UINT32_MAX ? UINT32_MAX : (uint32_t)Q(2).u64;
        return PW_TRAP_NONE;
    case PW_XOP_SIMD: return pw__simd_exec(inst, fp, q);
    default: return PW_TRAP_UNREACHABLE; /* not emitted */
    }
#undef Q
#undef QI
}

pw_trap_code pw__interp_xop(pw_store *s, pw_instance *inst, pw_slot *fp, const uint32_t *pc) {
    return op_xop(s, inst, fp, pc);
}

/* The same instructions as the interpreter's handlers below, operand for operand (S and
 * IMM as there): the JIT calls this one function for all of them. */
pw_trap_code pw__interp_bulk(pw_store *s, pw_instance *inst, pw_slot *fp, const uint32_t *pc,
                             uint32_t op) {
#define B(i) fp[pc[i]]
    const atomic_int *intr = &s->interrupt;
    switch (op) {
    case PW_OP_MEMORY_FILL: return op_memory_fill(inst->mem0, B(1).u32, B(2).u32, B(3).u32, intr);
    case PW_OP_MEMORY_COPY: return op_memory_copy(inst->mem0, B(1).u32, B(2).u32, B(3).u32, intr);
    case PW_OP_MEMORY_INIT: return op_memory_init(inst, pc[1], B(2).u32, B(3).u32, B(4).u32);
    case PW_OP_DATA_DROP: inst->data_dropped[pc[1]] = 1; return PW_TRAP_NONE;
    case PW_OP_TABLE_GET: {
        pw_table *t = inst->tables[pc[2]];
        if (B(3).u32 >= t->size) return PW_TRAP_TABLE_OOB;
        B(1).ref = t->elems[B(3).u32];
        return PW_TRAP_NONE;
    }
    case PW_OP_TABLE_SET: {
        pw_table *t = inst->tables[pc[1]];
        if (B(2).u32 >= t->size) return PW_TRAP_TABLE_OOB;
        t->elems[B(2).u32] = B(3).ref;
        return PW_TRAP_NONE;
    }
    case PW_OP_TABLE_SIZE: B(1).u32 = inst->tables[pc[2]]->size; return PW_TRAP_NONE;
    case PW_OP_TABLE_GROW: {
        int64_t r = pw__table_grow(inst->tables[pc[2]], B(4).u32, B(3).ref);
        if (r == PW_GROW_OVER_CAP) {
            if (s->cfg.cap_is_fatal) return PW_TRAP_COUNT_;
            r = -1;
        }
        B(1).i32 = (int32_t)r;
        return PW_TRAP_NONE;
    }
    case PW_OP_TABLE_FILL: return op_table_fill(inst->tables[pc[1]], B(2).u32, B(3).ref, B(4).u32);
    case PW_OP_TABLE_COPY:
        return op_table_copy(inst->tables[pc[1]], inst->tables[pc[2]], B(3).u32, B(4).u32,
                             B(5).u32);
    case PW_OP_TABLE_INIT:
        return op_table_init(inst, inst->tables[pc[1]], pc[2], B(3).u32, B(4).u32, B(5).u32);
    case PW_OP_ELEM_DROP: inst->elem_len[pc[1]] = 0; return PW_TRAP_NONE;
    default: return PW_TRAP_UNREACHABLE; /* the JIT passes only the ones above */
    }
#undef B
}

/* ---------------------------------------------------------------- host calls */

pw_status pw__call_host(pw_store *s, pw_instance *caller, pw_func *f, pw_slot *argp) {
    pw_slot *res = argp + f->nparams;
    if (res + f->nresults > s->stack_end) {
        s->trap = PW_TRAP_STACK_EXHAUSTED;
        return PW_ERR_TRAP;
    }
    pw_slot *saved_top = s->stack_top;
    s->stack_top = res + f->nresults;
    pw_call_ctx cx = {s, caller};
    s->exn = NULL;
    memset(res, 0, f->nresults * sizeof(pw_slot));
    pw_hostroots hr = {argp, f, s->hostroots}; /* GC roots while the host runs */
    s->hostroots = &hr;
    pw_status st = f->host(&cx, f->env, (const pw_val *)argp, (pw_val *)res);
    s->hostroots = hr.prev;
    s->stack_top = saved_top;
    if (st == PW_ERR_OOM) return st;
    if (st != PW_OK) {
        if (s->trap == PW_TRAP_NONE) s->trap = PW_TRAP_HOST;
        return st == PW_ERR_EXCEPTION ? st : PW_ERR_TRAP;
    }
    memmove(argp, res, f->nresults * sizeof(pw_slot));
    return PW_OK;
}

/* ---------------------------------------------------------------- exceptions */

/* The compiled function of inst's module whose code contains pc (compile.c). */
static const pw_cfunc *func_at(const pw_instance *inst, const uint32_t *pc) {
    return pw__cfunc_at(inst->mod->code, pc);
}

typedef struct unwind_state {
    const uint32_t *pc; /* resume point: just after the throwing or calling instruction */
    pw_slot *fp;
    pw_instance *inst;
    pw_frame *fr;
} unwind_state;

/* Find the handler for exn, walking frames outwards. On success the state is the
 * catching frame with pc at the handler's label and the payload in place. */
static bool unwind(unwind_state *u, pw_exn *exn) {
    for (;;) {
        const pw_cfunc *cf = func_at(u->inst, u->pc);
        uint32_t idx = (uint32_t)(u->pc - cf->code);
        for (uint32_t h = 0; h < cf->nhandlers; h++) {
            const pw_handler *hd = &cf->handlers[h];
            if (!(hd->try_pos < idx && idx <= hd->end_pos)) continue;
            const uint32_t *t = cf->code + hd->try_pos;
            uint32_t n = t[2];
            for (uint32_t k = 0; k < n; k++) {
                const uint32_t *cl = t + 3 + 4 * k;
                uint32_t kind = cl[0], dst = cl[2];
                if (kind < 2 && u->inst->tags[cl[1]] != exn->tag) continue;
                uint32_t np = 0;
                if (kind < 2) {
                    for (; np < exn->n; np++)
                        u->fp[dst + np] = exn->vals[np];
                }
                if (kind == 1 || kind == 3) u->fp[dst + np].ref = (pw_ref)exn;
                u->pc = t + (int32_t)cl[3];
                return true;
            }
        }
        pw_frame *r = u->fr - 1;
        if (!r->ret_pc) return false;
        u->pc = r->ret_pc;
        u->fp = r->fp;
        u->inst = r->inst;
        u->fr = r;
    }
}

/* Exception packages live on the GC heap (gc.c): collected like structs. */
static pw_exn *new_exn(pw_store *s, pw_tag *tag, const pw_slot *vals, const pw_gcframe *cur) {
    return pw__gc_new_exn(s, tag, vals, cur);
}

/* ---------------------------------------------------------------- the loop */

#define S(i)       fp[pc[i]]
#define IMM(i)     pc[i]
#define DISPATCH() goto *(const void *)(base + (int32_t)pc[0])
#define NEXT(n)                                                                                    \
    do {                                                                                           \
        pc += (n);                                                                                 \
        DISPATCH();                                                                                \
    } while (0)
#define JUMP(off)                                                                                  \
    do {                                                                                           \
        pc += (int32_t)(off);                                                                      \
        if (__builtin_expect(atomic_load_explicit(intr, memory_order_relaxed), 0))                 \
            goto interrupted;                                                                      \
        DISPATCH();                                                                                \
    } while (0)
#define TRAP(code)                                                                                 \
    do {                                                                                           \
        tc = (code);                                                                               \
        goto trap;                                                                                 \
    } while (0)
#define RELOAD_INST()                                                                              \
    do {                                                                                           \
        cfuncs = inst->mod->code->funcs;                                                           \
        globals = inst->globals;                                                                   \
        mem = inst->mem0;                                                                          \
        mbase = mem->data;                                                                         \
        msize = mem->size;                                                                         \
    } while (0)
#define RELOAD_MEM()                                                                               \
    do {                                                                                           \
        mbase = mem->data;                                                                         \
        msize = mem->size;                                                                         \
    } while (0)

/* The dispatch loop: every instruction's handler is a label in this one function, on
 * purpose. Threaded dispatch (computed goto through a table of label offsets) keeps the
 * frame pointer, the code pointer and the memory base in registers across handlers;
 * split into functions, each handler would reload them and return through a call at
 * every instruction. Its length is that speed decision. */
static pw_status run(pw_store *s, pw_func *entry, pw_slot *fp, const int32_t **table) {
#define PW_H(n)          [PW_OP_##n] = (int32_t)((const char *)&&L_##n - (const char *)&&L_BASE),
#define PW_H_BIN(n, e)   PW_H(I32_##n) PW_H(I32_##n##_I) PW_H(BR_I32_##n) PW_H(BR_I32_##n##_I)
#define PW_H_BIN64(n, e) PW_H(I64_##n) PW_H(I64_##n##_I)
#define PW_H_F(n, e)     PW_H(F32_##n) PW_H(F64_##n)
#define PW_H_FA(n, e)    PW_H(F32_##n) PW_H(F64_##n) PW_H(F32_##n##_I) PW_H(F64_##n##_I)
#define PW_H_L(n, ...)   PW_H(n)
#define PW_H_LA(n, ...)  PW_H(n) PW_H(n##_A) PW_H(n##_R)
    static const int32_t handlers[PW_OP_COUNT_] = {
        PW_I32_BINOPS(PW_H_BIN) PW_I64_BINOPS(PW_H_BIN64) PW_I64_CMPOPS(PW_H_BIN64)
            PW_F_ARITH(PW_H_FA) PW_F_CMP(PW_H_F) PW_LOADS(PW_H_LA) PW_STORES(PW_H_LA)
                PW_UNOPS(PW_H_L) PW_TRUNCS(PW_H_L) PW_MISC_OPS(PW_H) PW_GC_OPS(PW_H)};
    if (table) {
        *table = handlers;
        return PW_OK;
    }
    const char *base = (const char *)&&L_BASE;
    const atomic_int *intr = &s->interrupt;
    pw_frame *fr = s->frame_top, *const fr_entry = fr;
    pw_frame *const fr_end = s->frames_end;
    pw_slot *const stack_end = s->stack_end;
    pw_instance *inst = entry->inst;
    const pw_cfunc *cfuncs;
    pw_global **globals;
    pw_memory *mem;
    uint8_t *mbase;
    uint64_t msize;
    pw_trap_code tc = PW_TRAP_NONE;
    const uint32_t *pc;
    pw_func *f;
    pw_slot *argp;
    pw_exn *exn;
    /* With the JIT on, or in the `auto` tier's counting phase (tier.c), calls take the
     * generic path, which asks the JIT tier. */
    const bool jit_on = s->jit_on || s->jit_auto;
    RELOAD_INST();
    {
        const pw_cfunc *cf = entry->code;
        if (__builtin_expect(!pw__cfunc_ready(cf), 0) && !pw__compile_lazy(inst->mod, cf))
            goto nomem;
        if (fr >= fr_end || fp + cf->frame_slots > stack_end) {
            tc = PW_TRAP_STACK_EXHAUSTED;
            goto trap;
        }
        fr->ret_pc = NULL;
        fr->fp = NULL;
        fr->inst = inst;
        fr++;
        memset(fp + cf->nparams, 0, (cf->nlocals - cf->nparams) * sizeof(pw_slot));
        pc = cf->code;
        /* Entry from the host (also a host function re-entering Wasm): interruptible. */
        if (__builtin_expect(atomic_load_explicit(intr, memory_order_relaxed), 0)) goto interrupted;
        DISPATCH();
    }

    /* ------------------------------------------------------------ control */
L_BASE:
L_UNREACHABLE:
    TRAP(PW_TRAP_UNREACHABLE);
L_BR:
    JUMP(IMM(1));
L_BR_IF:
    if (S(1).u32) JUMP(IMM(2));
    NEXT(3);
L_BR_IFZ:
    if (!S(1).u32) JUMP(IMM(2));
    NEXT(3);
L_BR_IF64:
    if (S(1).u64) JUMP(IMM(2));
    NEXT(3);
L_BR_IF64Z:
    if (!S(1).u64) JUMP(IMM(2));
    NEXT(3);
L_BR_TABLE : {
    uint32_t i = S(1).u32, n = IMM(2);
    if (i > n) i = n;
    JUMP(pc[3 + i]);
}
L_RETURN:
    fr--;
    pc = fr->ret_pc;
    if (__builtin_expect(pc == NULL, 0)) goto done;
    fp = fr->fp;
    if (fr->inst != inst) {
        inst = fr->inst;
        RELOAD_INST();
    } else {
        RELOAD_MEM();
    }
    DISPATCH();
L_CALL : {
    if (__builtin_expect(jit_on, 0)) {
        /* The JIT tier may have the callee: the generic path asks it. */
        f = inst->funcs[inst->mod->nfunc_imports + IMM(1)];
        argp = fp + IMM(2);
        pc += 3;
        goto call_func;
    }
    const pw_cfunc *cf = &cfuncs[IMM(1)];
    if (__builtin_expect(!pw__cfunc_ready(cf), 0) && !pw__compile_lazy(inst->mod, cf)) goto nomem;
    pw_slot *nfp = fp + IMM(2);
    if (__builtin_expect(fr >= fr_end || nfp + cf->frame_slots > stack_end, 0))
        TRAP(PW_TRAP_STACK_EXHAUSTED);
    if (__builtin_expect(atomic_load_explicit(intr, memory_order_relaxed), 0)) goto interrupted;
    fr->ret_pc = pc + 3;
    fr->fp = fp;
    fr->inst = inst;
    fr++;
    for (uint32_t i = cf->nparams; i < cf->nlocals; i++)
        nfp[i].u64 = 0;
    fp = nfp;
    pc = cf->code;
    DISPATCH();
}
L_CALL_IMPORT:
    f = inst->funcs[IMM(1)];
    argp = fp + IMM(2);
    pc += 3;
    goto call_func;
L_CALL_INDIRECT : {
    pw_table *t = inst->tables[IMM(2)];
    uint32_t i = S(3).u32;
    if (i >= t->size) TRAP(PW_TRAP_UNDEF_ELEM);
    f = (pw_func *)t->elems[i];
    if (!f) TRAP(PW_TRAP_UNINIT_ELEM);
    if (__builtin_expect(f->hdr.type_id != inst->type_ids[IMM(1)], 0) &&
        !pw__func_type_sub(f, inst->mod, IMM(1)))
        TRAP(PW_TRAP_SIG_MISMATCH);
    argp = fp + IMM(4);
    pc += 5;
    goto call_func;
}
call_func:
    if (__builtin_expect(atomic_load_explicit(intr, memory_order_relaxed), 0)) goto interrupted;
    if (f->host) {
        /* Record the suspended caller (not popped: fr stays) for the GC's stack walk. */
        if (fr >= fr_end) TRAP(PW_TRAP_STACK_EXHAUSTED);
        fr->ret_pc = pc;
        fr->fp = fp;
        fr->inst = inst;
        s->frame_top = fr + 1;
        pw_status st = pw__call_host(s, inst, f, argp);
        if (st != PW_OK) {
            if (st == PW_ERR_EXCEPTION && s->exn) {
                exn = s->exn;
                goto throw_exn;
            }
            s->frame_top = fr_entry;
            return st;
        }
        RELOAD_MEM();
        DISPATCH();
    } else {
        if (__builtin_expect(jit_on, 0) && (s->jit_on || pw__tier_hot(s, f))) {
            int st = pw__jit_call_from_interp(s, f, argp, pc, fp, inst, fr);
            if (st != PW_JIT_INTERPRET) {
                if (st != PW_OK) {
                    if (st == PW_ERR_EXCEPTION && s->exn) {
                        exn = s->exn;
                        goto throw_exn;
                    }
                    s->frame_top = fr_entry;
                    return (pw_status)st;
                }
                RELOAD_MEM();
                DISPATCH();
            }
        }
        const pw_cfunc *cf = f->code;
        if (__builtin_expect(!pw__cfunc_ready(cf), 0) && !pw__compile_lazy(f->inst->mod, cf))
            goto nomem;
        if (fr >= fr_end || argp + cf->frame_slots > stack_end) TRAP(PW_TRAP_STACK_EXHAUSTED);
        fr->ret_pc = pc;
        fr->fp = fp;
        fr->inst = inst;
        fr++;
        for (uint32_t i = cf->nparams; i < cf->nlocals; i++)
            argp[i].u64 = 0;
        fp = argp;
        pc = cf->code;
        if (f->inst != inst) {
            inst = f->inst;
            RELOAD_INST();
        }
        DISPATCH();
    }

    /* ------------------------------------------------------------ Wasm 3.0 calls */
L_CALL_REF:
    f = (pw_func *)S(1).ref;
    if (!f) TRAP(PW_TRAP_NULL_FUNC_REF);
    argp = fp + IMM(2);
    pc += 3;
    goto call_func;
L_REF_AS_NON_NULL:
    if (!S(1).ref) TRAP(PW_TRAP_NULL_REF);
    NEXT(2);
L_TAIL_CALL : {
    /* The arguments are in slots 0.. of the current frame, which the callee reuses. */
    const pw_cfunc *cf = &cfuncs[IMM(1)];
    if (__builtin_expect(!pw__cfunc_ready(cf), 0) && !pw__compile_lazy(inst->mod, cf)) goto nomem;
    if (__builtin_expect(fp + cf->frame_slots > stack_end, 0)) TRAP(PW_TRAP_STACK_EXHAUSTED);
    if (__builtin_expect(atomic_load_explicit(intr, memory_order_relaxed), 0)) goto interrupted;
    for (uint32_t i = cf->nparams; i < cf->nlocals; i++)
        fp[i].u64 = 0;
    pc = cf->code;
    DISPATCH();
}
L_TAIL_CALL_IMPORT:
    f = inst->funcs[IMM(1)];
    goto tail_func;
L_TAIL_CALL_INDIRECT : {
    pw_table *t = inst->tables[IMM(2)];
    uint32_t i = S(3).u32;
    if (i >= t->size) TRAP(PW_TRAP_UNDEF_ELEM);
    f = (pw_func *)t->elems[i];
    if (!f) TRAP(PW_TRAP_UNINIT_ELEM);
    if (__builtin_expect(f->hdr.type_id != inst->type_ids[IMM(1)], 0) &&
        !pw__func_type_sub(f, inst->mod, IMM(1)))
        TRAP(PW_TRAP_SIG_MISMATCH);
    goto tail_func;
}
L_TAIL_CALL_REF:
    f = (pw_func *)S(1).ref;
    if (!f) TRAP(PW_TRAP_NULL_FUNC_REF);
    goto tail_func;
tail_func:
    if (__builtin_expect(atomic_load_explicit(intr, memory_order_relaxed), 0)) goto interrupted;
    if (f->host) {
        s->frame_top = fr;
        pw_status st = pw__call_host(s, inst, f, fp);
        if (st != PW_OK) {
            if (st == PW_ERR_EXCEPTION && s->exn) {
                /* The tail call replaced this frame: unwind from the caller. */
                exn = s->exn;
                fr--;
                pc = fr->ret_pc;
                if (!pc) {
                    s->frame_top = fr_entry;
                    return st;
                }
                fp = fr->fp;
                inst = fr->inst;
                RELOAD_INST();
                goto throw_exn;
            }
            s->frame_top = fr_entry;
            return st;
        }
        goto L_RETURN;
    } else {
        const pw_cfunc *cf = f->code;
        if (__builtin_expect(!pw__cfunc_ready(cf), 0) && !pw__compile_lazy(f->inst->mod, cf))
            goto nomem;
        if (fp + cf->frame_slots > stack_end) TRAP(PW_TRAP_STACK_EXHAUSTED);
        for (uint32_t i = cf->nparams; i < cf->nlocals; i++)
            fp[i].u64 = 0;
        pc = cf->code;
        if (f->inst != inst) {
            inst = f->inst;
            RELOAD_INST();
        }
        DISPATCH();
    }

    /* ------------------------------------------------------------ exceptions */
L_TRY:
    pc += IMM(1);
    DISPATCH();
L_THROW : {
    pw_tag *tag = inst->tags[IMM(1)];
    pw_gcframe gcf = {.pc = pc + 3, .fp = fp, .inst = inst}; /* a GC site (compile.c) */
    s->frame_top = fr;
    exn = new_exn(s, tag, fp + IMM(2), &gcf);
    if (!exn) {
        s->frame_top = fr_entry;
        return PW_ERR_OOM;
    }
    pc += 3;
    goto throw_exn;
}
L_THROW_REF:
    exn = (pw_exn *)S(1).ref;
    if (!exn) TRAP(PW_TRAP_NULL_REF);
    pc += 2;
    goto throw_exn;
throw_exn : {
    /* A catch may branch backwards (try_table inside a loop, a catch to the loop's own
     * label): every throw, throw_ref and exception from a host is a back-edge. */
    if (__builtin_expect(atomic_load_explicit(intr, memory_order_relaxed), 0)) goto interrupted;
    unwind_state u = {pc, fp, inst, fr};
    if (!unwind(&u, exn)) {
        s->exn = exn;
        s->frame_top = fr_entry;
        return PW_ERR_EXCEPTION;
    }
    pc = u.pc;
    fp = u.fp;
    fr = u.fr;
    if (u.inst != inst) {
        inst = u.inst;
        RELOAD_INST();
    } else {
        RELOAD_MEM();
    }
    DISPATCH();
}

    /* ------------------------------------------------------------ moves */
L_COPY:
    S(1) = S(2);
    NEXT(3);
L_COPY2:
    S(1) = S(2);
    S(3) = S(4);
    NEXT(5);
L_CONST32:
    S(1).u64 = IMM(2); /* zero-extended: also serves i64 constants < 2^32 */
    NEXT(3);
L_CONST64:
    S(1).u64 = (uint64_t)IMM(2) | ((uint64_t)IMM(3) << 32);
    NEXT(4);
L_SELECT:
    S(1) = S(4).u32 ? S(2) : S(3);
    NEXT(5);
L_GLOBAL_GET:
    S(1) = globals[IMM(2)]->val;
    NEXT(3);
L_GLOBAL_SET:
    globals[IMM(1)]->val = S(2);
    NEXT(3);
L_REF_FUNC:
    S(1).ref = (pw_ref)inst->funcs[IMM(2)];
    NEXT(3);

    /* ------------------------------------------------------------ integer ops */
#define PW_I_BIN(n, e)                                                                             \
    L_I32_##n : {                                                                                  \
        uint32_t a = S(2).u32, b = S(3).u32;                                                       \
        S(1).u32 = (uint32_t)(e);                                                                  \
        NEXT(4);                                                                                   \
    }                                                                                              \
    L_I32_##n##_I : {                                                                              \
        uint32_t a = S(2).u32, b = IMM(3);                                                         \
        S(1).u32 = (uint32_t)(e);                                                                  \
        NEXT(4);                                                                                   \
    }                                                                                              \
    L_BR_I32_##n : {                                                                               \
        uint32_t a = S(1).u32, b = S(2).u32;                                                       \
        if ((uint32_t)(e) != 0) JUMP(IMM(3));                                                      \
        NEXT(4);                                                                                   \
    }                                                                                              \
    L_BR_I32_##n##_I : {                                                                           \
        uint32_t a = S(1).u32, b = IMM(2);                                                         \
        if ((uint32_t)(e) != 0) JUMP(IMM(3));                                                      \
        NEXT(4);                                                                                   \
    }
    PW_I32_BINOPS(PW_I_BIN)
#undef PW_I_BIN
#define PW_I_BIN64(n, e)                                                                           \
    L_I64_##n : {                                                                                  \
        uint64_t a = S(2).u64, b = S(3).u64;                                                       \
        S(1).u64 = (uint64_t)(e);                                                                  \
        NEXT(4);                                                                                   \
    }                                                                                              \
    L_I64_##n##_I : {                                                                              \
        uint64_t a = S(2).u64, b = (uint64_t)(int64_t)(int32_t)IMM(3);                             \
        S(1).u64 = (uint64_t)(e);                                                                  \
        NEXT(4);                                                                                   \
    }
    PW_I64_BINOPS(PW_I_BIN64)
#undef PW_I_BIN64
#define PW_I_CMP64(n, e)                                                                           \
    L_I64_##n : {                                                                                  \
        uint64_t a = S(2).u64, b = S(3).u64;                                                       \
        S(1).u32 = (uint32_t)(e);                                                                  \
        NEXT(4);                                                                                   \
    }                                                                                              \
    L_I64_##n##_I : {                                                                              \
        uint64_t a = S(2).u64, b = (uint64_t)(int64_t)(int32_t)IMM(3);                             \
        S(1).u32 = (uint32_t)(e);                                                                  \
        NEXT(4);                                                                                   \
    }
    PW_I64_CMPOPS(PW_I_CMP64)
#undef PW_I_CMP64

L_I32_DIV_S : {
    int32_t a = S(2).i32, b = S(3).i32;
    if (b == 0) TRAP(PW_TRAP_DIV_ZERO);
    if (a == INT32_MIN && b == -1) TRAP(PW_TRAP_INT_OVERFLOW);
    S(1).i32 = a / b;
    NEXT(4);
}
L_I32_DIV_U : {
    uint32_t a = S(2).u32, b = S(3).u32;
    if (b == 0) TRAP(PW_TRAP_DIV_ZERO);
    S(1).u32 = a / b;
    NEXT(4);
}
L_I32_REM_S : {
    int32_t a = S(2).i32, b = S(3).i32;
    if (b == 0) TRAP(PW_TRAP_REM_ZERO);
    S(1).i32 = b == -1 ? 0 : a % b;
    NEXT(4);
}
L_I32_REM_U : {
    uint32_t a = S(2).u32, b = S(3).u32;
    if (b == 0) TRAP(PW_TRAP_REM_ZERO);
    S(1).u32 = a % b;
    NEXT(4);
}
L_I64_DIV_S : {
    int64_t a = S(2).i64, b = S(3).i64;
    if (b == 0) TRAP(PW_TRAP_DIV_ZERO);
    if (a == INT64_MIN && b == -1) TRAP(PW_TRAP_INT_OVERFLOW);
    S(1).i64 = a / b;
    NEXT(4);
}
L_I64_DIV_U : {
    uint64_t a = S(2).u64, b = S(3).u64;
    if (b == 0) TRAP(PW_TRAP_DIV_ZERO);
    S(1).u64 = a / b;
    NEXT(4);
}
L_I64_REM_S : {
    int64_t a = S(2).i64, b = S(3).i64;
    if (b == 0) TRAP(PW_TRAP_REM_ZERO);
    S(1).i64 = b == -1 ? 0 : a % b;
    NEXT(4);
}
L_I64_REM_U : {
    uint64_t a = S(2).u64, b = S(3).u64;
    if (b == 0) TRAP(PW_TRAP_REM_ZERO);
    S(1).u64 = a % b;
    NEXT(4);
}

/* ------------------------------------------------------------ float ops */
#define PW_F_BIN(n, e)                                                                             \
    L_F32_##n : {                                                                                  \
        float a = S(2).f32, b = S(3).f32;                                                          \
        S(1).f32 = (e);                                                                            \
        NEXT(4);                                                                                   \
    }                                                                                              \
    L_F64_##n : {                                                                                  \
        double a = S(2).f64, b = S(3).f64;                                                         \
        S(1).f64 = (e);                                                                            \
        NEXT(4);                                                                                   \
    }                                                                                              \
    L_F32_##n##_I : {                                                                              \
        float a = S(2).f32, b;                                                                     \
        uint32_t bits = IMM(3);                                                                    \
        memcpy(&b, &bits, 4);                                                                      \
        S(1).f32 = (e);                                                                            \
        NEXT(4);                                                                                   \
    }                                                                                              \
    L_F64_##n##_I : {                                                                              \
        double a = S(2).f64, b;                                                                    \
        uint64_t bits = (uint64_t)IMM(3) | ((uint64_t)IMM(4) << 32);                               \
        memcpy(&b, &bits, 8);                                                                      \
        S(1).f64 = (e);                                                                            \
        NEXT(5);                                                                                   \
    }
    PW_F_ARITH(PW_F_BIN)
#undef PW_F_BIN
#define PW_F_CMPH(n, e)                                                                            \
    L_F32_##n : {                                                                                  \
        float a = S(2).f32, b = S(3).f32;                                                          \
        S(1).u32 = (e);                                                                            \
        NEXT(4);                                                                                   \
    }                                                                                              \
    L_F64_##n : {                                                                                  \
        double a = S(2).f64, b = S(3).f64;                                                         \
        S(1).u32 = (e);                                                                            \
        NEXT(4);                                                                                   \
    }
    PW_F_CMP(PW_F_CMPH)
#undef PW_F_CMPH
L_F32_MIN:
    S(1).u32 = f32_minmax(S(2), S(3), false);
    NEXT(4);
L_F32_MAX:
    S(1).u32 = f32_minmax(S(2), S(3), true);
    NEXT(4);
L_F32_COPYSIGN:
    S(1).u32 = (S(2).u32 & 0x7fffffffu) | (S(3).u32 & 0x80000000u);
    NEXT(4);
L_F64_MIN:
    S(1).u64 = f64_minmax(S(2), S(3), false);
    NEXT(4);
L_F64_MAX:
    S(1).u64 = f64_minmax(S(2), S(3), true);
    NEXT(4);
L_F64_COPYSIGN:
    S(1).u64 = (S(2).u64 & 0x7fffffffffffffffull) | (S(3).u64 & 0x8000000000000000ull);
    NEXT(4);

    /* ------------------------------------------------------------ unary, conversions */
#define PW_UN(n, fin, fout, e)                                                                     \
    L_##n : {                                                                                      \
        __typeof__(fp->fin) a = S(2).fin;                                                          \
        S(1).fout = (e);                                                                           \
        NEXT(3);                                                                                   \
    }
    PW_UNOPS(PW_UN)
#undef PW_UN
#define PW_TR(n, fin, fout, T, lo, hi)                                                             \
    L_##n : {                                                                                      \
        __typeof__(fp->fin) a = S(2).fin;                                                          \
        if (a != a) TRAP(PW_TRAP_INVALID_CONV);                                                    \
        if (!(a > (lo) && a < (hi))) TRAP(PW_TRAP_CONV_OVERFLOW);                                  \
        S(1).fout = (T)a;                                                                          \
        NEXT(3);                                                                                   \
    }
    PW_TRUNCS(PW_TR)
#undef PW_TR

    /* ------------------------------------------------------------ memory */
#define PW_LD(n, T, fld, conv)                                                                     \
    L_##n : {                                                                                      \
        uint64_t ea = (uint64_t)S(2).u32 + IMM(3);                                                 \
        if (__builtin_expect(ea + sizeof(T) > msize, 0)) TRAP(PW_TRAP_MEM_OOB);                    \
        T v;                                                                                       \
        memcpy(&v, mbase + ea, sizeof v);                                                          \
        S(1).fld = (conv);                                                                         \
        NEXT(4);                                                                                   \
    }                                                                                              \
    L_##n##_A : {                                                                                  \
        uint64_t ea = (uint64_t)(uint32_t)(S(2).u32 + IMM(3)) + IMM(4);                            \
        if (__builtin_expect(ea + sizeof(T) > msize, 0)) TRAP(PW_TRAP_MEM_OOB);                    \
        T v;                                                                                       \
        memcpy(&v, mbase + ea, sizeof v);                                                          \
        S(1).fld = (conv);                                                                         \
        NEXT(5);                                                                                   \
    }                                                                                              \
    L_##n##_R : {                                                                                  \
        uint64_t ea = (uint64_t)(uint32_t)(S(2).u32 + S(3).u32) + IMM(4);                          \
        if (__builtin_expect(ea + sizeof(T) > msize, 0)) TRAP(PW_TRAP_MEM_OOB);                    \
        T v;                                                                                       \
        memcpy(&v, mbase + ea, sizeof v);                                                          \
        S(1).fld = (conv);                                                                         \
        NEXT(5);                                                                                   \
    }
    PW_LOADS(PW_LD)
#undef PW_LD
#define PW_ST(n, T, fld)                                                                           \
    L_##n : {                                                                                      \
        uint64_t ea = (uint64_t)S(1).u32 + IMM(3);                                                 \
        if (__builtin_expect(ea + sizeof(T) > msize, 0)) TRAP(PW_TRAP_MEM_OOB);                    \
        T v = (T)S(2).fld;                                                                         \
        memcpy(mbase + ea, &v, sizeof v);                                                          \
        NEXT(4);                                                                                   \
    }                                                                                              \
    L_##n##_A : {                                                                                  \
        uint64_t ea = (uint64_t)(uint32_t)(S(1).u32 + IMM(2)) + IMM(4);                            \
        if (__builtin_expect(ea + sizeof(T) > msize, 0)) TRAP(PW_TRAP_MEM_OOB);                    \
        T v = (T)S(3).fld;                                                                         \
        memcpy(mbase + ea, &v, sizeof v);                                                          \
        NEXT(5);                                                                                   \
    }                                                                                              \
    L_##n##_R : {                                                                                  \
        uint64_t ea = (uint64_t)(uint32_t)(S(1).u32 + S(2).u32) + IMM(4);                          \
        if (__builtin_expect(ea + sizeof(T) > msize, 0)) TRAP(PW_TRAP_MEM_OOB);                    \
        T v = (T)S(3).fld;                                                                         \
        memcpy(mbase + ea, &v, sizeof v);                                                          \
        NEXT(5);                                                                                   \
    }
    PW_STORES(PW_ST)
#undef PW_ST
L_MEMORY_SIZE:
    S(1).u32 = (uint32_t)(msize >> 16);
    NEXT(2);
L_MEMORY_GROW : {
    int64_t r = pw__memory_grow(mem, S(2).u32);
    if (r == PW_GROW_OVER_CAP) {
        if (s->cfg.cap_is_fatal) goto gc_oom;
        r = -1;
    }
    S(1).i32 = (int32_t)r;
    RELOAD_MEM();
    NEXT(3);
}
L_MEMORY_FILL:
    if ((tc = op_memory_fill(mem, S(1).u32, S(2).u32, S(3).u32, intr))) goto trap;
    NEXT(4);
L_MEMORY_COPY:
    if ((tc = op_memory_copy(mem, S(1).u32, S(2).u32, S(3).u32, intr))) goto trap;
    NEXT(4);
L_MEMORY_INIT:
    if ((tc = op_memory_init(inst, IMM(1), S(2).u32, S(3).u32, S(4).u32))) goto trap;
    NEXT(5);
L_DATA_DROP:
    inst->data_dropped[IMM(1)] = 1;
    NEXT(2);

    /* extension instructions (interp.h, PW_XOPS): one handler, a noinline helper */
L_XOP:
    if ((tc = op_xop(s, inst, fp, pc))) {
        if (tc == PW_TRAP_COUNT_) goto gc_oom; /* memory.grow over a fatal cap */
        goto trap;
    }
    RELOAD_MEM(); /* memory.grow of memory 0 when it is an i64 memory */
    NEXT(xop_words[pc[1] < PW_XOP_COUNT_ ? pc[1] : 0]);

    /* ------------------------------------------------------------ tables */
L_TABLE_GET : {
    pw_table *t = inst->tables[IMM(2)];
    uint32_t i = S(3).u32;
    if (i >= t->size) TRAP(PW_TRAP_TABLE_OOB);
    S(1).ref = t->elems[i];
    NEXT(4);
}
L_TABLE_SET : {
    pw_table *t = inst->tables[IMM(1)];
    uint32_t i = S(2).u32;
    if (i >= t->size) TRAP(PW_TRAP_TABLE_OOB);
    t->elems[i] = S(3).ref;
    NEXT(4);
}
L_TABLE_SIZE:
    S(1).u32 = inst->tables[IMM(2)]->size;
    NEXT(3);
L_TABLE_GROW : {
    int64_t r = pw__table_grow(inst->tables[IMM(2)], S(4).u32, S(3).ref);
    if (r == PW_GROW_OVER_CAP) {
        if (s->cfg.cap_is_fatal) goto gc_oom;
        r = -1;
    }
    S(1).i32 = (int32_t)r;
    NEXT(5);
}
L_TABLE_FILL:
    if ((tc = op_table_fill(inst->tables[IMM(1)], S(2).u32, S(3).ref, S(4).u32))) goto trap;
    NEXT(5);
L_TABLE_COPY:
    if ((tc = op_table_copy(inst->tables[IMM(1)], inst->tables[IMM(2)], S(3).u32, S(4).u32,
                            S(5).u32)))
        goto trap;
    NEXT(6);
L_TABLE_INIT:
    if ((tc = op_table_init(inst, inst->tables[IMM(1)], IMM(2), S(3).u32, S(4).u32, S(5).u32)))
        goto trap;
    NEXT(6);
L_ELEM_DROP:
    inst->elem_len[IMM(1)] = 0;
    NEXT(2);

    /* ------------------------------------------------------------ Wasm 3.0 GC */
#include "wasm/interp_gc.h"

interrupted:
    tc = PW_TRAP_INTERRUPTED;
trap:
    s->trap = tc;
    s->frame_top = fr_entry;
    return PW_ERR_TRAP;
done:
    s->frame_top = fr_entry;
    return PW_OK;
nomem: /* a function could not be compiled at its first call (compile.c) */
    s->frame_top = fr_entry;
    return PW_ERR_NOMEM;
}

const int32_t *pw__interp_handlers(void) {
    const int32_t *t = NULL;
    run(NULL, NULL, NULL, &t);
    return t;
}

pw_status pw__interp(pw_store *s, pw_func *f, pw_slot *fp) {
    s->trap = PW_TRAP_NONE;
    return run(s, f, fp, NULL);
}
