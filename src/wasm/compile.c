/*
 * compile.c — lowers validated function bodies to the interpreter's register code
 * (interp.h).
 *
 * Every local and every operand-stack position has a fixed frame slot: local i is
 * slot i, the operand at stack depth d is slot nlocals + d. The compiler keeps a
 * model of the operand stack whose entries are either in their slot (STACK), or not
 * yet materialised: a reference to a local (LOCAL) or a constant (CONST). Consumers
 * read locals directly and fold constants into immediate forms, so `local.get`
 * and most `*.const` instructions emit no code. Lazy entries are materialised
 * before anything that could invalidate them (a write to the local) and at every
 * control-flow boundary, so that at labels all values sit in their slots.
 *
 * Peepholes: an instruction whose result is immediately stored with local.set/tee
 * writes the local directly; an i32 compare (or any i32 binary op) or eqz followed by
 * br_if/if becomes one fused compare-and-branch.
 *
 * Every stack entry carries its value type, so that reference-holding slots are known
 * at each call site (the GC stack maps of Wasm 3.0, docs/engine.md).
 */
#include "wasm/compile.h"
#include "wasm/gc.h"
#include "wasm/icode.h"
#include "wasm/instr.h"
#include "wasm/interp.h"
#include "wasm/jit/jit.h"
#include "wasm/runtime.h"
#include "wasm/simd.h"

#include <pthread.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

enum { LOC_STACK = 0, LOC_LOCAL = 1, LOC_CONST = 2 };

typedef struct ent {
    uint8_t loc;
    uint32_t local;
    uint64_t cval;
    pw_valtype type;
} ent;

enum { CT_BLOCK, CT_LOOP, CT_IF, CT_ELSE, CT_FUNC };

typedef struct ctl {
    uint8_t kind;
    bool unreachable;
    uint32_t height;              /* operand depth below the block's params */
    uint32_t nparams, nresults;   /* in cells (stack entries) */
    uint32_t vnparams, vnresults; /* in values (entries of params/results) */
    const pw_valtype *params, *results;
    pw_valtype single;
    uint32_t label_pc; /* loop: its start */
    uint32_t fixups;   /* head of this label's forward-branch list, UINT32_MAX = none */
    uint32_t else_fix; /* if: the fixup of the jump to the else branch */
    uint32_t try_pos;  /* try_table: position of its TRY instruction, else UINT32_MAX */
    /* Legacy exception handling (legacy_* below): a try is a block with a TRY
     * instruction whose clauses land inside the block, at its catches. */
    uint8_t eh;          /* legacy try: 1 in its body, 2 in a catch or catch_all */
    uint32_t eh_pos;     /* legacy try: its TRY instruction */
    uint32_t eh_next;    /* legacy try: word of the next clause to land */
    uint32_t eh_nclause; /* legacy try: clauses of its TRY instruction */
    uint32_t stubs;      /* delegate stubs to emit inside this block, UINT32_MAX: none */
    uint64_t dentry;     /* definite assignment: written when the block began */
    uint64_t dmerge;     /* and on every branch to its label so far (AND) */
} ctl;

/* A delegated exception lands at a stub inside the delegate's target block, which
 * throws it again from there (so the handlers between are skipped). */
typedef struct dstub {
    uint32_t clause;  /* word of the TRY clause whose landing offset the stub fills */
    uint32_t try_pos; /* that TRY instruction */
    uint32_t slot;    /* where the clause puts the exception */
    uint32_t next;
} dstub;

typedef struct fixup {
    uint32_t at;    /* word to patch */
    uint32_t instr; /* start of the branching instruction */
    uint32_t next;
} fixup;

typedef struct comp {
    const pw_module *m;
    const int32_t *h; /* handler offsets */
    pw_error *err;
    bool oom;
    bool bad; /* malformed input the validator should have rejected */
    ent dummy;

    uint32_t *code; /* the current function's code: in its slot, or on the heap */
    uint32_t ncode, capcode;
    bool in_slot;    /* code points into the module's code reservation */
    uint32_t fstart; /* where the current function's code starts */

    ent *st;
    uint32_t sp, capst, maxsp;
    uint32_t lazy_lo; /* every entry below this depth is in its slot (STACK) */
    uint32_t *lrefs;  /* per local: LOCAL entries on the stack that refer to it */
    uint8_t *written; /* per local: a value other than zero may have been stored before
                       * the current point (prefix only) */
    uint32_t capwritten;
    bool prefix; /* no loop seen yet in this function */
    uint32_t caplrefs;
    uint32_t caplmap;

    ctl *cs;
    uint32_t ncs, capcs;

    fixup *fx;
    uint32_t nfx, capfx;

    pw_handler *hs; /* try_table handlers of every function, innermost first */
    uint32_t nhs, caphs;

    dstub *ds; /* delegate stubs of the current function */
    uint32_t nds, capds;

    uint32_t batch; /* nesting of begin_moves */
    bool lcopy_ok;  /* the last instruction is a COPY from local.set that may pair */
    uint32_t lcopy_pos, lcopy_end;
    bool pcopy; /* a COPY waiting for a partner */
    uint32_t pcopy_dst, pcopy_src;

    uint32_t nlocals;  /* cells of the locals (a v128 local takes two, simd.h) */
    uint32_t nvlocals; /* Wasm locals (params included) */
    uint32_t *lmap;    /* Wasm local index -> its first cell */
    uint32_t nparam_cells, nres_cells;
    uint32_t zero_slot; /* hidden always-zero local, or UINT32_MAX */
    /* Definite assignment, over the first 64 declared cells (bit i: cell
     * nparam_cells + i): written on every path to the current point; read where that
     * may not hold, or needed zero for another reason (pw_cfunc.nozero's complement). */
    uint64_t dcur, zneed;
    const pw_valtype *local_types; /* per cell (both halves of a v128 are PW_VT_V128) */
    const pw_funcdef *fd;
    const pw_deftype *ft;

    /* Peephole state: the last value-producing instruction. */
    bool pend;
    uint32_t pend_pos;  /* start of the instruction */
    uint32_t pend_end;  /* ncode right after it */
    uint32_t pend_op;   /* internal opcode */
    uint32_t pend_slot; /* slot it wrote */

    /* Wasm 3.0 GC (compile_gc.h): layouts, stack map sites and slot lists. */
    const pw_gclayout *gc_layouts;
    pw_gcsite *gc_sites;
    uint32_t gc_nsites, gc_capsites;
    uint32_t *gc_maps;
    uint32_t gc_nmaps, gc_capmaps;
    uint32_t gc_lfunc, gc_lmap; /* fstart + 1 of the function whose locals list is at gc_lmap */
} comp;

#define NOIMM 0xFFFFu

/* Cells taken by n values of the given types (simd.h: a v128 takes two). */
static uint32_t ncells(const pw_valtype *t, uint32_t n) {
    uint32_t k = n;
    for (uint32_t i = 0; i < n; i++)
        k += PW_VT_KIND(t[i]) == PW_K_V128;
    return k;
}

static bool grow(void **p, uint32_t *cap, uint32_t need, size_t elem) {
    if (need <= *cap) return true;
    uint32_t nc = *cap ? *cap : 64;
    while (nc < need)
        nc *= 2;
    void *np = realloc(*p, (size_t)nc * elem);
    if (!np) return false;
    *p = np;
    *cap = nc;
    return true;
}

/* The current function's code array: its slot in the module's code (compile_one),
 * until it outgrows the slot; then a heap block of its own, which it keeps. */
static bool grow_code(comp *c, uint32_t need) {
    if (!c->in_slot) return grow((void **)&c->code, &c->capcode, need, sizeof *c->code);
    if (need <= c->capcode) return true;
    uint32_t cap = c->capcode * 2 > need ? c->capcode * 2 : need;
    uint32_t *p = malloc((size_t)cap * sizeof *p);
    if (!p) return false;
    memcpy(p, c->code, (size_t)c->ncode * sizeof *p);
    c->code = p;
    c->capcode = cap;
    c->in_slot = false;
    return true;
}

static __attribute__((noinline)) void emit_slow(comp *c, uint32_t w) {
    if (!grow_code(c, c->ncode + 1)) {
        c->oom = true;
        return;
    }
    c->code[c->ncode++] = w;
}

static inline __attribute__((always_inline)) void emit(comp *c, uint32_t w) {
    if (__builtin_expect(c->ncode < c->capcode, 1))
        c->code[c->ncode++] = w;
    else
        emit_slow(c, w);
}

static uint32_t emit_op(comp *c, uint32_t op) {
    uint32_t pos = c->ncode;
    emit(c, (uint32_t)c->h[op]);
    return pos;
}

static uint32_t slot_of_depth(comp *c, uint32_t d) {
    return c->nlocals + d;
}

/* Stack accesses are bounds-checked so that code the validator did not check (or
 * a validator bug) can never make the compiler read out of bounds. */
static ent *at(comp *c, uint32_t d) {
    if (d >= c->sp) {
        c->bad = true;
        memset(&c->dummy, 0, sizeof c->dummy);
        return &c->dummy;
    }
    return &c->st[d];
}

static ent *top(comp *c, uint32_t k) {
    return at(c, c->sp - 1 - k);
}

static void popn(comp *c, uint32_t n) {
    if (c->sp < n) {
        c->bad = true;
        n = c->sp;
    }
    for (uint32_t i = 0; i < n; i++) {
        const ent *e = &c->st[c->sp - 1 - i];
        if (e->loc == LOC_LOCAL) c->lrefs[e->local]--;
    }
    c->sp -= n;
    if (c->sp < c->lazy_lo) c->lazy_lo = c->sp;
}

static inline void push(comp *c, uint8_t loc, uint32_t local, uint64_t cval, pw_valtype t) {
    if (__builtin_expect(c->sp == c->capst, 0) &&
        !grow((void **)&c->st, &c->capst, c->sp + 1, sizeof *c->st)) {
        c->oom = true;
        return;
    }
    if (loc != LOC_STACK && c->sp < c->lazy_lo) c->lazy_lo = c->sp;
    if (loc == LOC_LOCAL) c->lrefs[local]++;
    c->st[c->sp++] = (ent){loc, local, cval, t};
    if (c->sp > c->maxsp) c->maxsp = c->sp;
}

/* Push a STACK entry; returns its slot. */
static uint32_t push_stack(comp *c, pw_valtype t) {
    push(c, LOC_STACK, 0, 0, t);
    return slot_of_depth(c, c->sp - 1);
}

/* Emit a copy of entry e's value into slot dst. */
/* Copies emitted in a batch (moves at calls, branches, block entries) are paired
 * into COPY2, saving a dispatch. A batch never contains a label. */
static void flush_copy(comp *c) {
    if (!c->pcopy) return;
    c->pcopy = false;
    emit_op(c, PW_OP_COPY);
    emit(c, c->pcopy_dst);
    emit(c, c->pcopy_src);
}

static void begin_moves(comp *c) {
    c->batch++;
}

static void end_moves(comp *c) {
    if (--c->batch == 0) flush_copy(c);
}

static void emit_move(comp *c, const ent *e, uint32_t depth, uint32_t dst) {
    if (e->loc == LOC_CONST) {
        flush_copy(c);
        if ((e->cval >> 32) == 0) {
            emit_op(c, PW_OP_CONST32);
            emit(c, dst);
            emit(c, (uint32_t)e->cval);
        } else {
            emit_op(c, PW_OP_CONST64);
            emit(c, dst);
            emit(c, (uint32_t)e->cval);
            emit(c, (uint32_t)(e->cval >> 32));
        }
        return;
    }
    uint32_t src = e->loc == LOC_LOCAL ? e->local : slot_of_depth(c, depth);
    if (src == dst) return;
    if (c->batch) {
        if (c->pcopy) {
            c->pcopy = false;
            emit_op(c, PW_OP_COPY2);
            emit(c, c->pcopy_dst);
            emit(c, c->pcopy_src);
            emit(c, dst);
            emit(c, src);
        } else {
            c->pcopy = true;
            c->pcopy_dst = dst;
            c->pcopy_src = src;
        }
        return;
    }
    emit_op(c, PW_OP_COPY);
    emit(c, dst);
    emit(c, src);
}

/* Make the entry at depth d live in its own slot. */
static void materialize(comp *c, uint32_t d) {
    ent *e = at(c, d);
    if (e->loc == LOC_STACK) return;
    emit_move(c, e, d, slot_of_depth(c, d));
    if (e->loc == LOC_LOCAL) c->lrefs[e->local]--;
    e->loc = LOC_STACK;
    c->pend = false;
}

static void materialize_all(comp *c) {
    begin_moves(c);
    for (uint32_t d = c->lazy_lo; d < c->sp; d++)
        materialize(c, d);
    end_moves(c);
    c->lazy_lo = c->sp;
}

/* The slot holding entry at depth d (materialising constants). */
static uint32_t slot_at(comp *c, uint32_t d) {
    ent *e = at(c, d);
    if (e->loc == LOC_LOCAL) return e->local;
    if (e->loc == LOC_CONST) materialize(c, d);
    return slot_of_depth(c, d);
}

static uint32_t pop_slot(comp *c) {
    uint32_t s = slot_at(c, c->sp - 1);
    popn(c, 1);
    return s;
}

/* Record the instruction starting at pos as a value producer writing `slot`. */
static void set_pend(comp *c, uint32_t pos, uint32_t op, uint32_t slot) {
    c->pend = true;
    c->pend_pos = pos;
    c->pend_end = c->ncode;
    c->pend_op = op;
    c->pend_slot = slot;
}

/* Is the top entry the untouched result of the last instruction? */
static bool top_is_pend(comp *c) {
    return c->pend && c->sp > 0 && top(c, 0)->loc == LOC_STACK && c->pend_end == c->ncode &&
           c->pend_slot == slot_of_depth(c, c->sp - 1);
}

/* ---------------------------------------------------------------- labels */

static void add_fixup(comp *c, ctl *l, uint32_t at, uint32_t instr) {
    if (c->nfx == c->capfx && !grow((void **)&c->fx, &c->capfx, c->nfx + 1, sizeof *c->fx)) {
        c->oom = true;
        return;
    }
    c->fx[c->nfx] = (fixup){at, instr, l->fixups};
    l->fixups = c->nfx++;
    l->dmerge &= c->dcur;
}

static void bind_fixups(comp *c, uint32_t head, uint32_t target) {
    for (uint32_t i = head; i != UINT32_MAX; i = c->fx[i].next)
        c->code[c->fx[i].at] = target - c->fx[i].instr;
}

/* Emit the branch offset word for a jump from the instruction at `instr` to l. */
static void emit_target(comp *c, ctl *l, uint32_t instr) {
    if (l->kind == CT_LOOP) {
        emit(c, l->label_pc - instr);
    } else {
        add_fixup(c, l, c->ncode, instr);
        emit(c, 0);
    }
}

static uint32_t label_arity(const ctl *l) {
    return l->kind == CT_LOOP ? l->nparams : l->nresults;
}

/* Would a branch to l need value moves? */
static bool needs_moves(comp *c, const ctl *l) {
    uint32_t n = label_arity(l);
    for (uint32_t i = 0; i < n; i++) {
        uint32_t d = c->sp - n + i;
        if (at(c, d)->loc != LOC_STACK || d != l->height + i) return true;
    }
    return false;
}

static void emit_moves(comp *c, const ctl *l) {
    uint32_t n = label_arity(l);
    begin_moves(c);
    for (uint32_t i = 0; i < n; i++) {
        uint32_t d = c->sp - n + i;
        emit_move(c, at(c, d), d, slot_of_depth(c, l->height + i));
    }
    end_moves(c);
}

/* Copy the top n values to slots 0..n-1 (function results, tail-call arguments).
 * This may be a branch stub, so the compiler's stack model must not change. Only a
 * local among the destinations can be overwritten before it is read: such sources are
 * first copied to their own stack slots. */
static void emit_to_base(comp *c, uint32_t n) {
    if (n == 1) {
        /* A value computed just before (straight-line: the frame ends right after)
         * is written to slot 0 directly. */
        if (top_is_pend(c)) {
            c->code[c->pend_pos + 1] = 0;
            c->pend = false;
            return;
        }
        emit_move(c, top(c, 0), c->sp - 1, 0);
        return;
    }
    begin_moves(c);
    for (uint32_t i = 0; i < n; i++) {
        uint32_t d = c->sp - n + i;
        ent *e = at(c, d);
        if (e->loc == LOC_LOCAL && e->local < n && e->local != i)
            emit_move(c, e, d, slot_of_depth(c, d));
    }
    for (uint32_t i = 0; i < n; i++) {
        uint32_t d = c->sp - n + i;
        ent e = *at(c, d);
        if (e.loc == LOC_LOCAL && e.local < n && e.local != i) e.loc = LOC_STACK;
        emit_move(c, &e, d, i);
    }
    end_moves(c);
}

static void emit_return(comp *c) {
    emit_to_base(c, c->nres_cells);
    emit_op(c, PW_OP_RETURN);
}

static void emit_br(comp *c, ctl *l) {
    if (l->kind == CT_FUNC) {
        emit_return(c);
        return;
    }
    emit_moves(c, l);
    uint32_t pos = emit_op(c, PW_OP_BR);
    emit_target(c, l, pos);
}

/* ---------------------------------------------------------------- fused branches */

static bool is_i32_binop(uint32_t op) {
    return op <= PW_OP_BR_I32_GE_U_I && ((op - PW_OP_I32_ADD) & 3) < 2;
}

/* The inverse compare of an i32 binop (same imm-ness), or UINT32_MAX. */
static uint32_t invert_cmp(uint32_t op) {
    static const uint16_t pairs[][2] = {
        {PW_OP_I32_EQ, PW_OP_I32_NE},     {PW_OP_I32_LT_S, PW_OP_I32_GE_S},
        {PW_OP_I32_LT_U, PW_OP_I32_GE_U}, {PW_OP_I32_GT_S, PW_OP_I32_LE_S},
        {PW_OP_I32_GT_U, PW_OP_I32_LE_U},
    };
    uint32_t imm = (op - PW_OP_I32_ADD) & 1, base = op - imm;
    for (size_t i = 0; i < sizeof pairs / sizeof pairs[0]; i++) {
        if (pairs[i][0] == base) return pairs[i][1] + imm;
        if (pairs[i][1] == base) return pairs[i][0] + imm;
    }
    return UINT32_MAX;
}

typedef struct cond {
    uint32_t op;   /* branch op */
    uint32_t a, b; /* operands (b unused for one-operand forms) */
    uint32_t nops; /* operand words before the offset */
} cond;

/* Pop the i32 condition on top of the stack and produce a branch that jumps when it
 * is true (when_true) or false. May remove the instruction that computed it. */
static cond pop_cond(comp *c, bool when_true) {
    cond k;
    if (top_is_pend(c)) {
        uint32_t op = c->pend_op, pos = c->pend_pos;
        if (is_i32_binop(op)) {
            uint32_t bop = when_true ? op : invert_cmp(op);
            if (bop != UINT32_MAX) {
                k = (cond){bop + 2, c->code[pos + 2], c->code[pos + 3], 2};
                c->ncode = pos;
                popn(c, 1);
                c->pend = false;
                return k;
            }
        } else if (op == PW_OP_I32_EQZ || op == PW_OP_I64_EQZ) {
            bool is64 = op == PW_OP_I64_EQZ;
            uint32_t bop = when_true ? (is64 ? PW_OP_BR_IF64Z : PW_OP_BR_IFZ)
                                     : (is64 ? PW_OP_BR_IF64 : PW_OP_BR_IF);
            k = (cond){bop, c->code[pos + 2], 0, 1};
            c->ncode = pos;
            popn(c, 1);
            c->pend = false;
            return k;
        }
    }
    uint32_t s = pop_slot(c);
    return (cond){when_true ? PW_OP_BR_IF : PW_OP_BR_IFZ, s, 0, 1};
}

static uint32_t emit_cond(comp *c, const cond *k) {
    uint32_t pos = emit_op(c, k->op);
    emit(c, k->a);
    if (k->nops == 2) emit(c, k->b);
    return pos;
}

/* ---------------------------------------------------------------- control */

static bool push_ctl(comp *c, uint8_t kind, const pw_instr *in) {
    if (c->ncs == c->capcs) {
        /* A block with one value result points `results` at its own `single`: when the
         * stack moves, those self-pointers must move with it (else they dangle). */
        uintptr_t old = (uintptr_t)c->cs;
        if (!grow((void **)&c->cs, &c->capcs, c->ncs + 1, sizeof *c->cs)) return false;
        for (uint32_t i = 0; i < c->ncs; i++)
            if ((uintptr_t)c->cs[i].results == old + i * sizeof *c->cs + offsetof(ctl, single))
                c->cs[i].results = &c->cs[i].single;
    }
    ctl *l = &c->cs[c->ncs++];
    memset(l, 0, sizeof *l);
    l->kind = kind;
    l->fixups = UINT32_MAX;
    l->else_fix = UINT32_MAX;
    l->try_pos = UINT32_MAX;
    l->stubs = UINT32_MAX;
    l->dentry = c->dcur;
    l->dmerge = ~0ull;
    if (in->bt == PW_BT_VAL) {
        l->single = in->t1;
        l->vnresults = 1;
        l->nresults = ncells(&in->t1, 1);
        l->results = &l->single;
    } else if (in->bt == PW_BT_TYPE) {
        const pw_deftype *t = &c->m->types[in->a];
        l->vnparams = t->u.func.nparams;
        l->vnresults = t->u.func.nresults;
        l->params = t->u.func.types;
        l->results = t->u.func.types + l->vnparams;
        l->nparams = ncells(l->params, l->vnparams);
        l->nresults = ncells(l->results, l->vnresults);
    }
    if (c->sp < l->nparams) {
        c->bad = true;
        l->height = 0;
        l->nparams = l->vnparams = 0;
    } else {
        l->height = c->sp - l->nparams;
    }
    return true;
}

/* Reset the operand stack to `height` plus STACK entries of the given n value types
 * (two entries for a v128). */
static void reset_stack(comp *c, uint32_t height, uint32_t n, const pw_valtype *types) {
    if (c->sp > height) popn(c, c->sp - height);
    c->sp = height;
    if (c->sp < c->lazy_lo) c->lazy_lo = c->sp;
    for (uint32_t i = 0; i < n; i++) {
        push_stack(c, types[i]);
        if (PW_VT_KIND(types[i]) == PW_K_V128) push_stack(c, types[i]);
    }
    c->pend = false;
}

/* Skip unreachable code up to the `end` or `else` that closes the current block. */
static bool skip_unreachable(pw_reader *r, uint32_t *closing, pw_instr *cin) {
    uint32_t depth = 0;
    pw_instr in;
    while (r->p < r->end) {
        if (!pw__instr_read(r, &in)) return false;
        switch (in.op) {
        case 0x02:
        case 0x03:
        case 0x04:
        case 0x06:
        case 0x1F: depth++; break;
        case 0x07:
        case 0x19:
            if (depth == 0) {
                *closing = in.op;
                *cin = in;
                return true;
            }
            break;
        case 0x18:
            if (depth == 0) {
                *closing = in.op;
                *cin = in;
                return true;
            }
            depth--;
            break;
        case 0x05:
            if (depth == 0) {
                *closing = 0x05;
                return true;
            }
            break;
        case 0x0B:
            if (depth == 0) {
                *closing = 0x0B;
                return true;
            }
            depth--;
            break;
        default: break;
        }
    }
    return false;
}

/* ---------------------------------------------------------------- numeric table */

typedef struct numinfo {
    uint16_t op, imm;
    uint8_t nin;  /* 0 = not a simple numeric op */
    uint8_t out;  /* pw_valkind of the result */
    uint8_t comm; /* commutative: a constant left operand may be swapped */
} numinfo;

#define I32 PW_K_I32
#define I64 PW_K_I64
#define F32 PW_K_F32
#define F64 PW_K_F64
#define B(o, imm, t, cm)                                                                           \
    { PW_OP_##o, imm, 2, t, cm }
#define BI(o, t, cm)                                                                               \
    { PW_OP_##o, PW_OP_##o##_I, 2, t, cm }
#define U(o, t)                                                                                    \
    { PW_OP_##o, NOIMM, 1, t, 0 }
static const numinfo NUM[256] = {
    [0x45] = U(I32_EQZ, I32),
    [0x46] = BI(I32_EQ, I32, 1),
    [0x47] = BI(I32_NE, I32, 1),
    [0x48] = BI(I32_LT_S, I32, 0),
    [0x49] = BI(I32_LT_U, I32, 0),
    [0x4A] = BI(I32_GT_S, I32, 0),
    [0x4B] = BI(I32_GT_U, I32, 0),
    [0x4C] = BI(I32_LE_S, I32, 0),
    [0x4D] = BI(I32_LE_U, I32, 0),
    [0x4E] = BI(I32_GE_S, I32, 0),
    [0x4F] = BI(I32_GE_U, I32, 0),
    [0x50] = U(I64_EQZ, I32),
    [0x51] = BI(I64_EQ, I32, 1),
    [0x52] = BI(I64_NE, I32, 1),
    [0x53] = BI(I64_LT_S, I32, 0),
    [0x54] = BI(I64_LT_U, I32, 0),
    [0x55] = BI(I64_GT_S, I32, 0),
    [0x56] = BI(I64_GT_U, I32, 0),
    [0x57] = BI(I64_LE_S, I32, 0),
    [0x58] = BI(I64_LE_U, I32, 0),
    [0x59] = BI(I64_GE_S, I32, 0),
    [0x5A] = BI(I64_GE_U, I32, 0),
    [0x5B] = B(F32_EQ, NOIMM, I32, 0),
    [0x5C] = B(F32_NE, NOIMM, I32, 0),
    [0x5D] = B(F32_LT, NOIMM, I32, 0),
    [0x5E] = B(F32_GT, NOIMM, I32, 0),
    [0x5F] = B(F32_LE, NOIMM, I32, 0),
    [0x60] = B(F32_GE, NOIMM, I32, 0),
    [0x61] = B(F64_EQ, NOIMM, I32, 0),
    [0x62] = B(F64_NE, NOIMM, I32, 0),
    [0x63] = B(F64_LT, NOIMM, I32, 0),
    [0x64] = B(F64_GT, NOIMM, I32, 0),
    [0x65] = B(F64_LE, NOIMM, I32, 0),
    [0x66] = B(F64_GE, NOIMM, I32, 0),
    [0x67] = U(I32_CLZ, I32),
    [0x68] = U(I32_CTZ, I32),
    [0x69] = U(I32_POPCNT, I32),
    [0x6A] = BI(I32_ADD, I32, 1),
    [0x6B] = BI(I32_SUB, I32, 0),
    [0x6C] = BI(I32_MUL, I32, 1),
    [0x6D] = B(I32_DIV_S, NOIMM, I32, 0),
    [0x6E] = B(I32_DIV_U, NOIMM, I32, 0),
    [0x6F] = B(I32_REM_S, NOIMM, I32, 0),
    [0x70] = B(I32_REM_U, NOIMM, I32, 0),
    [0x71] = BI(I32_AND, I32, 1),
    [0x72] = BI(I32_OR, I32, 1),
    [0x73] = BI(I32_XOR, I32, 1),
    [0x74] = BI(I32_SHL, I32, 0),
    [0x75] = BI(I32_SHR_S, I32, 0),
    [0x76] = BI(I32_SHR_U, I32, 0),
    [0x77] = BI(I32_ROTL, I32, 0),
    [0x78] = BI(I32_ROTR, I32, 0),
    [0x79] = U(I64_CLZ, I64),
    [0x7A] = U(I64_CTZ, I64),
    [0x7B] = U(I64_POPCNT, I64),
    [0x7C] = BI(I64_ADD, I64, 1),
    [0x7D] = BI(I64_SUB, I64, 0),
    [0x7E] = BI(I64_MUL, I64, 1),
    [0x7F] = B(I64_DIV_S, NOIMM, I64, 0),
    [0x80] = B(I64_DIV_U, NOIMM, I64, 0),
    [0x81] = B(I64_REM_S, NOIMM, I64, 0),
    [0x82] = B(I64_REM_U, NOIMM, I64, 0),
    [0x83] = BI(I64_AND, I64, 1),
    [0x84] = BI(I64_OR, I64, 1),
    [0x85] = BI(I64_XOR, I64, 1),
    [0x86] = BI(I64_SHL, I64, 0),
    [0x87] = BI(I64_SHR_S, I64, 0),
    [0x88] = BI(I64_SHR_U, I64, 0),
    [0x89] = BI(I64_ROTL, I64, 0),
    [0x8A] = BI(I64_ROTR, I64, 0),
    [0x8B] = U(F32_ABS, F32),
    [0x8C] = U(F32_NEG, F32),
    [0x8D] = U(F32_CEIL, F32),
    [0x8E] = U(F32_FLOOR, F32),
    [0x8F] = U(F32_TRUNC, F32),
    [0x90] = U(F32_NEAREST, F32),
    [0x91] = U(F32_SQRT, F32),
    [0x92] = BI(F32_ADD, F32, 1),
    [0x93] = BI(F32_SUB, F32, 0),
    [0x94] = BI(F32_MUL, F32, 1),
    [0x95] = BI(F32_DIV, F32, 0),
    [0x96] = B(F32_MIN, NOIMM, F32, 0),
    [0x97] = B(F32_MAX, NOIMM, F32, 0),
    [0x98] = B(F32_COPYSIGN, NOIMM, F32, 0),
    [0x99] = U(F64_ABS, F64),
    [0x9A] = U(F64_NEG, F64),
    [0x9B] = U(F64_CEIL, F64),
    [0x9C] = U(F64_FLOOR, F64),
    [0x9D] = U(F64_TRUNC, F64),
    [0x9E] = U(F64_NEAREST, F64),
    [0x9F] = U(F64_SQRT, F64),
    [0xA0] = BI(F64_ADD, F64, 1),
    [0xA1] = BI(F64_SUB, F64, 0),
    [0xA2] = BI(F64_MUL, F64, 1),
    [0xA3] = BI(F64_DIV, F64, 0),
    [0xA4] = B(F64_MIN, NOIMM, F64, 0),
    [0xA5] = B(F64_MAX, NOIMM, F64, 0),
    [0xA6] = B(F64_COPYSIGN, NOIMM, F64, 0),
    [0xA8] = U(I32_TRUNC_F32_S, I32),
    [0xA9] = U(I32_TRUNC_F32_U, I32),
    [0xAA] = U(I32_TRUNC_F64_S, I32),
    [0xAB] = U(I32_TRUNC_F64_U, I32),
    [0xAC] = U(I64_EXTEND_I32_S, I64),
    [0xAD] = U(I64_EXTEND_I32_U, I64),
    [0xAE] = U(I64_TRUNC_F32_S, I64),
    [0xAF] = U(I64_TRUNC_F32_U, I64),
    [0xB0] = U(I64_TRUNC_F64_S, I64),
    [0xB1] = U(I64_TRUNC_F64_U, I64),
    [0xB2] = U(F32_CONVERT_I32_S, F32),
    [0xB3] = U(F32_CONVERT_I32_U, F32),
    [0xB4] = U(F32_CONVERT_I64_S, F32),
    [0xB5] = U(F32_CONVERT_I64_U, F32),
    [0xB6] = U(F32_DEMOTE_F64, F32),
    [0xB7] = U(F64_CONVERT_I32_S, F64),
    [0xB8] = U(F64_CONVERT_I32_U, F64),
    [0xB9] = U(F64_CONVERT_I64_S, F64),
    [0xBA] = U(F64_CONVERT_I64_U, F64),
    [0xBB] = U(F64_PROMOTE_F32, F64),
    [0xC0] = U(I32_EXTEND8_S, I32),
    [0xC1] = U(I32_EXTEND16_S, I32),
    [0xC2] = U(I64_EXTEND8_S, I64),
    [0xC3] = U(I64_EXTEND16_S, I64),
    [0xC4] = U(I64_EXTEND32_S, I64),
};
static const numinfo SAT[8] = {
    U(I32_TRUNC_SAT_F32_S, I32), U(I32_TRUNC_SAT_F32_U, I32), U(I32_TRUNC_SAT_F64_S, I32),
    U(I32_TRUNC_SAT_F64_U, I32), U(I64_TRUNC_SAT_F32_S, I64), U(I64_TRUNC_SAT_F32_U, I64),
    U(I64_TRUNC_SAT_F64_S, I64), U(I64_TRUNC_SAT_F64_U, I64),
};
#undef B
#undef BI
#undef U

static const struct {
    uint16_t op;
    uint8_t out;
} LOADS[14] = {
    {PW_OP_I32_LOAD, I32},     {PW_OP_I64_LOAD, I64},     {PW_OP_F32_LOAD, F32},
    {PW_OP_F64_LOAD, F64},     {PW_OP_I32_LOAD8_S, I32},  {PW_OP_I32_LOAD8_U, I32},
    {PW_OP_I32_LOAD16_S, I32}, {PW_OP_I32_LOAD16_U, I32}, {PW_OP_I64_LOAD8_S, I64},
    {PW_OP_I64_LOAD8_U, I64},  {PW_OP_I64_LOAD16_S, I64}, {PW_OP_I64_LOAD16_U, I64},
    {PW_OP_I64_LOAD32_S, I64}, {PW_OP_I64_LOAD32_U, I64},
};
static const uint16_t STORES[9] = {
    PW_OP_I32_STORE,   PW_OP_I64_STORE,  PW_OP_F32_STORE,   PW_OP_F64_STORE,   PW_OP_I32_STORE8,
    PW_OP_I32_STORE16, PW_OP_I64_STORE8, PW_OP_I64_STORE16, PW_OP_I64_STORE32,
};

static void numeric(comp *c, const numinfo *ni) {
    if (ni->nin == 1) {
        uint32_t a = pop_slot(c);
        uint32_t dst = push_stack(c, ni->out);
        uint32_t pos = emit_op(c, ni->op);
        emit(c, dst);
        emit(c, a);
        set_pend(c, pos, ni->op, dst);
        return;
    }
    ent *eb = top(c, 0), *ea = top(c, 1);
    bool i64 = ni->op >= PW_OP_I64_ADD && ni->op <= PW_OP_I64_GE_U_I;
    uint32_t op = ni->op, a, b;
    bool fits_b =
        eb->loc == LOC_CONST && (!i64 || (int64_t)eb->cval == (int64_t)(int32_t)(uint32_t)eb->cval);
    bool fits_a =
        ea->loc == LOC_CONST && (!i64 || (int64_t)ea->cval == (int64_t)(int32_t)(uint32_t)ea->cval);
    uint64_t bimm = 0;
    if (ni->imm != NOIMM && fits_b) {
        op = ni->imm;
        bimm = eb->cval;
        b = (uint32_t)eb->cval;
        popn(c, 1);
        a = pop_slot(c);
    } else if (ni->imm != NOIMM && ni->comm && fits_a) {
        op = ni->imm;
        bimm = ea->cval;
        b = (uint32_t)ea->cval;
        a = slot_at(c, c->sp - 1);
        popn(c, 2);
    } else {
        b = slot_at(c, c->sp - 1);
        a = slot_at(c, c->sp - 2);
        popn(c, 2);
    }
    uint32_t dst = push_stack(c, ni->out);
    uint32_t pos = emit_op(c, op);
    emit(c, dst);
    emit(c, a);
    emit(c, b);
    /* f64 immediates take two words */
    if (op == PW_OP_F64_ADD_I || op == PW_OP_F64_SUB_I || op == PW_OP_F64_MUL_I ||
        op == PW_OP_F64_DIV_I)
        emit(c, (uint32_t)(bimm >> 32));
    set_pend(c, pos, op, dst);
}

static void da_need(comp *c, uint32_t x);

/* A constant address folds into the offset: the address operand becomes a hidden
 * local that is always zero (the entry zeroes it once some access reads it). Pops
 * the address when it applies. */
static bool const_addr(comp *c, pw_instr *in) {
    ent *e = top(c, 0);
    if (c->zero_slot == UINT32_MAX || e->loc != LOC_CONST ||
        (uint64_t)(uint32_t)e->cval + in->offset > UINT32_MAX)
        return false;
    in->offset += (uint32_t)e->cval;
    popn(c, 1);
    da_need(c, c->zero_slot);
    return true;
}

/* Is the address at stack position k from the top the untouched result of the last
 * instruction, an i32.add? Then remove that add and give its operands: the access
 * computes the address itself (*form 1: x + imm y, 2: x + slot y). Entries above the
 * address must not have emitted code (k = 1: a lazy value for a store). The address
 * entry is popped. */
static bool fused_addr(comp *c, uint32_t k, uint32_t *x, uint32_t *y, uint32_t *form) {
    if (!c->pend || c->pend_end != c->ncode || c->sp <= k) return false;
    uint32_t d = c->sp - 1 - k;
    if (c->st[d].loc != LOC_STACK || c->pend_slot != slot_of_depth(c, d)) return false;
    if (c->pend_op != PW_OP_I32_ADD_I && c->pend_op != PW_OP_I32_ADD) return false;
    uint32_t pos = c->pend_pos;
    *form = c->pend_op == PW_OP_I32_ADD_I ? 1 : 2;
    *x = c->code[pos + 2];
    *y = c->code[pos + 3];
    c->ncode = pos;
    c->pend = false;
    if (k == 0)
        popn(c, 1);
    else {
        /* drop the address from under the lazy value (which has no code) */
        c->st[d] = c->st[d + 1];
        c->sp--;
        /* keep the lazy value's reference count: it moved, it did not go away */
    }
    return true;
}

/* ---------------------------------------------------------------- memory64, table64,
 * multi-memory. The i32 memory 0 keeps the fast instructions above; any other memory
 * (memory64, or an index > 0) takes the generic MEM_* instructions, whose handlers
 * read the address type from the memory. */
static uint32_t emit_xop(comp *c, uint32_t kind) {
    uint32_t pos = emit_op(c, PW_OP_XOP);
    emit(c, kind);
    c->pend = false; /* never a pending producer: its dst is not the first operand */
    return pos;
}

static bool mem_slow(comp *c, uint32_t x) {
    return x != 0 || (x < c->m->nmems && c->m->mems[x].is64);
}

static void mem_access_slow(comp *c, const pw_instr *in) {
    static const uint8_t out[14] = {I32, I64, F32, F64, I32, I32, I32,
                                    I32, I64, I64, I64, I64, I64, I64};
    uint32_t op = in->op;
    if (op <= 0x35) {
        uint32_t a = pop_slot(c);
        uint32_t dst = push_stack(c, out[op - 0x28]);
        emit_xop(c, PW_XOP_MEM_LOAD);
        emit(c, dst);
        emit(c, a);
        emit(c, in->a);
        emit(c, op);
        emit(c, (uint32_t)in->offset);
        emit(c, (uint32_t)(in->offset >> 32));
        return;
    }
    uint32_t v = pop_slot(c), a = pop_slot(c);
    emit_xop(c, PW_XOP_MEM_STORE);
    emit(c, a);
    emit(c, v);
    emit(c, in->a);
    emit(c, op);
    emit(c, (uint32_t)in->offset);
    emit(c, (uint32_t)(in->offset >> 32));
    c->pend = false;
}

static bool tab64(comp *c, uint32_t x) {
    return x < c->m->ntables && c->m->tables[x].type.lim.is64;
}

/* Replace the i64 table index (or length) at depth d by an i32 saturated at
 * UINT32_MAX. Tables hold at most PW_TABLE_LIMIT (10^7) elements, so a saturated
 * value is out of bounds exactly when the original was, and the table instructions
 * and call_indirect stay the i32 ones. */
static void clamp_index(comp *c, uint32_t d) {
    ent *e = at(c, d);
    if (e->loc == LOC_CONST) {
        e->cval = e->cval > UINT32_MAX ? UINT32_MAX : e->cval;
    } else {
        materialize(c, d);
        uint32_t sl = slot_of_depth(c, d);
        emit_xop(c, PW_XOP_CLAMP32);
        emit(c, sl);
        emit(c, sl);
    }
    e->type = PW_VT_I32;
    c->pend = false;
}

/* The i32 on top of the stack (in its slot) becomes an i64 (unary op `op`). */
static void widen_top(comp *c, uint32_t op) {
    uint32_t sl = slot_of_depth(c, c->sp - 1);
    emit_op(c, op);
    emit(c, sl);
    emit(c, sl);
    top(c, 0)->type = PW_VT_I64;
    c->pend = false;
}

/* ---------------------------------------------------------------- SIMD (simd.h)
 * A v128 is two stack entries of type PW_VT_V128 (low half below). */

/* The v128 whose low half is the entry at depth d: the first of two consecutive
 * cells holding it (a v128 local as it is, anything else in its stack slots). */
static uint32_t v128_at(comp *c, uint32_t d) {
    ent *lo = at(c, d), *hi = at(c, d + 1);
    if (lo->loc == LOC_LOCAL && hi->loc == LOC_LOCAL && hi->local == lo->local + 1)
        return lo->local;
    materialize(c, d);
    materialize(c, d + 1);
    return slot_of_depth(c, d);
}

static void emit_simd(comp *c, uint32_t sub, uint32_t dst, uint32_t a, uint32_t b, uint32_t cc,
                      const uint32_t x[4]) {
    emit_xop(c, PW_XOP_SIMD);
    emit(c, sub);
    emit(c, dst);
    emit(c, a);
    emit(c, b);
    emit(c, cc);
    for (int i = 0; i < 4; i++)
        emit(c, x[i]);
    c->pend = false;
}

static void select_v128(comp *c) {
    uint32_t cs = slot_at(c, c->sp - 1);
    uint32_t bh = slot_at(c, c->sp - 2), bl = slot_at(c, c->sp - 3);
    uint32_t ah = slot_at(c, c->sp - 4), al = slot_at(c, c->sp - 5);
    popn(c, 5);
    uint32_t dl = push_stack(c, PW_VT_V128), dh = push_stack(c, PW_VT_V128);
    emit_op(c, PW_OP_SELECT);
    emit(c, dl), emit(c, al), emit(c, bl), emit(c, cs);
    emit_op(c, PW_OP_SELECT);
    emit(c, dh), emit(c, ah), emit(c, bh), emit(c, cs);
    c->pend = false;
}

static void compile_simd(comp *c, const pw_instr *in) {
    uint32_t sub = PW_FD_SUB(in->op);
    const pw_simd_info *si = pw__simd_op(sub);
    bool mem = si && (si->imm == PW_SI_MEM || si->imm == PW_SI_MEMLANE);
    if (!si || (mem && in->a >= c->m->nmems)) {
        c->bad = true;
        return;
    }
    if (sub == 0x0C) { /* v128.const: two constants, nothing emitted */
        uint64_t lo, hi;
        memcpy(&lo, in->vec, 8);
        memcpy(&hi, in->vec + 8, 8);
        push(c, LOC_CONST, 0, lo, PW_VT_V128);
        push(c, LOC_CONST, 0, hi, PW_VT_V128);
        return;
    }
    /* Operands bottom first: the address of a memory access, then si->in. */
    char kinds[4];
    uint32_t nk = 0, width = 0;
    if (mem) kinds[nk++] = 'i';
    for (int i = 0; i < 3 && si->in[i]; i++)
        kinds[nk++] = si->in[i];
    for (uint32_t i = 0; i < nk; i++)
        width += kinds[i] == 'v' ? 2 : 1;
    if (c->sp < width) {
        c->bad = true;
        return;
    }
    uint32_t sl[4] = {0, 0, 0, 0};
    for (uint32_t i = 0, d = c->sp - width; i < nk; i++) {
        sl[i] = kinds[i] == 'v' ? v128_at(c, d) : slot_at(c, d);
        d += kinds[i] == 'v' ? 2 : 1;
    }
    popn(c, width);
    uint32_t dst = 0;
    switch (si->out) {
    case 'v':
        dst = push_stack(c, PW_VT_V128);
        push_stack(c, PW_VT_V128);
        break;
    case 'i': dst = push_stack(c, PW_VT_I32); break;
    case 'l': dst = push_stack(c, PW_VT_I64); break;
    case 'f': dst = push_stack(c, PW_VT_F32); break;
    case 'd': dst = push_stack(c, PW_VT_F64); break;
    default: break;
    }
    uint32_t x[4] = {0, 0, 0, 0};
    if (mem) {
        x[0] = in->a;
        x[1] = (uint32_t)in->offset;
        x[2] = (uint32_t)(in->offset >> 32);
    }
    if (si->imm == PW_SI_LANE || si->imm == PW_SI_MEMLANE) x[3] = in->n;
    if (si->imm == PW_SI_SHUF) memcpy(x, in->vec, 16);
    emit_simd(c, sub, dst, sl[0], sl[1], sl[2], x);
}

/* Materialise LOCAL references to local x (before x is written). */
/* Before local x is written, entries that still refer to it must get their own copy.
 * All lazy entries below the top are materialised, so that each entry is visited at
 * most once over the whole function (no quadratic scans on hostile code). */
static void spill_local(comp *c, uint32_t x) {
    if (!c->lrefs[x]) return;
    for (uint32_t d = c->lazy_lo; d + 1 < c->sp; d++)
        materialize(c, d);
    if (c->sp > 0 && c->lazy_lo < c->sp - 1) c->lazy_lo = c->sp - 1;
}

/* ---------------------------------------------------------------- definite assignment
 *
 * Which declared locals an entry must zero: a cell is left alone only when every
 * local.get of it comes after a write on every path. The state is a bit set of the
 * cells written so far. A block remembers it at its start (dentry) and ANDs into
 * dmerge the state at every forward branch to its label (add_fixup: br, br_if,
 * br_table, br_on_*, the jump over an else, and a try_table's catch clauses, with the
 * state where the try_table starts, which every throw inside it includes); its end
 * takes the fallthrough's state AND dmerge, AND dentry for an if without else (the
 * false condition). A loop's label is its head, whose later branches only add
 * writes, so its end is its fallthrough. `else` and a legacy catch start from the
 * block's dentry. Code after an unconditional branch is skipped by the compiler
 * (skip_unreachable): a block whose end nothing reaches ends with every bit set.
 * Cells that must be zero whatever the code reads: non-numeric locals (the GC reads
 * them at calls) and the hidden zero local once a constant address reads it
 * (const_addr). A write the prefix rule drops (local_set) is no write: the value is
 * the entry's zero. Cells from the 65th on are not followed; they are always zeroed. */
static uint64_t da_bit(const comp *c, uint32_t x) {
    uint32_t i = x - c->nparam_cells;
    return x >= c->nparam_cells && i < 64 ? 1ull << i : 0;
}
static void da_need(comp *c, uint32_t x) {
    c->zneed |= da_bit(c, x);
}
static void da_read(comp *c, uint32_t x) {
    c->zneed |= da_bit(c, x) & ~c->dcur;
}
static void da_write(comp *c, uint32_t x) {
    c->dcur |= da_bit(c, x);
}
/* The state where the current block ends (block_end, legacy_delegate). */
static uint64_t da_end(const comp *c, const ctl *cur) {
    uint64_t s = (cur->unreachable ? ~0ull : c->dcur) & cur->dmerge;
    return cur->kind == CT_IF ? s & cur->dentry : s;
}
/* At the start of a function: no declared cell is written; reference cells are needed
 * (the stack maps list them, compile_gc.h, by the same test). */
static void da_begin(comp *c) {
    c->dcur = c->zneed = 0;
    for (uint32_t x = c->nparam_cells; x < c->nlocals; x++)
        if (PW_VT_KIND(c->local_types[x]) == PW_K_REF) da_need(c, x);
}

static void local_set(comp *c, uint32_t x, bool tee) {
    ent *e = top(c, 0);
    pw_valtype t = e->type;
    bool refs = c->lrefs[x] > (e->loc == LOC_LOCAL && e->local == x);
    if (e->loc == LOC_LOCAL && e->local == x) {
        if (!tee) popn(c, 1);
        return;
    }
    if (c->prefix) {
        /* Before the first loop nothing runs twice: a declared local that no code
         * before this point wrote a value other than zero into is still zero on every
         * path here (a forward branch only skips writes), so storing zero into it is
         * a no-op. written[x]: some earlier code may have stored a non-zero value. */
        if (!c->written[x] && x >= c->nparam_cells && e->loc == LOC_CONST && e->cval == 0) {
            popn(c, 1);
            if (tee) push(c, LOC_CONST, 0, 0, t);
            return;
        }
        c->written[x] = 1;
    }
    da_write(c, x);
    if (!refs && top_is_pend(c)) {
        c->code[c->pend_pos + 1] = x;
        c->pend = false;
        popn(c, 1);
        if (tee) push(c, LOC_LOCAL, x, 0, t);
        return;
    }
    spill_local(c, x);
    e = top(c, 0);
    uint32_t src = e->loc == LOC_LOCAL ? e->local : slot_of_depth(c, c->sp - 1);
    if (e->loc != LOC_CONST && c->lcopy_ok && c->lcopy_end == c->ncode) {
        /* Consecutive local.set copies (phi moves before a back-edge) pair up; only
         * local.get/set/tee and constants were compiled in between, so no label can
         * point between them. */
        c->code[c->lcopy_pos] = (uint32_t)c->h[PW_OP_COPY2];
        emit(c, x);
        emit(c, src);
        c->lcopy_ok = false;
    } else if (e->loc != LOC_CONST && src != x) {
        c->lcopy_pos = emit_op(c, PW_OP_COPY);
        emit(c, x);
        emit(c, src);
        c->lcopy_end = c->ncode;
        c->lcopy_ok = true;
    } else {
        emit_move(c, e, c->sp - 1, x);
    }
    popn(c, 1);
    c->pend = false;
    if (tee) push(c, LOC_LOCAL, x, 0, t);
}

#include "wasm/compile_gc.h"

/* ---------------------------------------------------------------- calls */

static void emit_call(comp *c, uint32_t op, const pw_deftype *t, uint32_t a1, uint32_t a2,
                      uint32_t idx_slot, bool indirect) {
    uint32_t np = ncells(t->u.func.types, t->u.func.nparams), vnp = t->u.func.nparams;
    uint32_t vnr = t->u.func.nresults;
    begin_moves(c);
    for (uint32_t i = 0; i < np; i++)
        materialize(c, c->sp - np + i);
    end_moves(c);
    uint32_t argbase = slot_of_depth(c, c->sp - np);
    emit_op(c, op);
    emit(c, a1);
    if (indirect) {
        emit(c, a2);
        emit(c, idx_slot);
    }
    emit(c, argbase);
    gc_site(c, c->sp);
    popn(c, np);
    reset_stack(c, c->sp, vnr, t->u.func.types + vnp);
}

/* ---------------------------------------------------------------- one function */

/* The common instructions (no or one-byte immediates) decoded inline; everything else
 * through the shared reader. Compile speed is dominated by instruction decoding. */
/* LEB128 readers for already-validated code with at least 5 bytes available. */
static inline uint32_t leb_u32(const uint8_t **pp) {
    const uint8_t *p = *pp;
    uint32_t v = 0;
    for (unsigned sh = 0; sh < 35; sh += 7) {
        uint8_t b = *p++;
        v |= (uint32_t)(b & 0x7f) << sh;
        if (!(b & 0x80)) break;
    }
    *pp = p;
    return v;
}

static inline uint64_t leb_u64(const uint8_t **pp) {
    const uint8_t *p = *pp;
    uint64_t v = 0;
    for (unsigned sh = 0; sh < 70; sh += 7) {
        uint8_t b = *p++;
        v |= (uint64_t)(b & 0x7f) << sh;
        if (!(b & 0x80)) break;
    }
    *pp = p;
    return v;
}

static inline int32_t leb_s32(const uint8_t **pp) {
    const uint8_t *p = *pp;
    uint32_t v = 0;
    unsigned sh = 0;
    uint8_t b;
    do {
        b = *p++;
        v |= (uint32_t)(b & 0x7f) << sh;
        sh += 7;
    } while ((b & 0x80) && sh < 35);
    if (sh < 32 && (b & 0x40)) v |= ~0u << sh;
    *pp = p;
    return (int32_t)v;
}

static inline bool read_instr(pw_reader *r, pw_instr *in) {
    const uint8_t *p = r->p;
    if (__builtin_expect(r->end - p >= 12, 1)) {
        uint8_t op = *p++;
        if ((op >= 0x45 && op <= 0xC4) || op <= 0x01 || op == 0x05 || op == 0x0B || op == 0x0F ||
            op == 0x1A || op == 0x1B || op == 0xD1) {
            in->op = op;
            r->p = p;
            return true;
        }
        if ((op >= 0x20 && op <= 0x24) || op == 0x0C || op == 0x0D || op == 0x10) {
            in->op = op;
            in->a = leb_u32(&p);
            r->p = p;
            return true;
        }
        if (op == 0x41) {
            in->op = op;
            in->bits = (uint64_t)(int64_t)leb_s32(&p);
            r->p = p;
            return true;
        }
        if (op >= 0x28 && op <= 0x3E && *p < 0x40) {
            in->op = op;
            in->a = 0;
            in->align = *p++;
            in->offset = leb_u64(&p); /* memory64 offsets take up to 10 bytes */
            r->p = p;
            return true;
        }
    }
    return pw__instr_read(r, in);
}

/* Index immediates in range (defence in depth: the validator checks all of this). */
static bool imm_ok(comp *c, const pw_instr *in) {
    const pw_module *m = c->m;
    uint32_t op = in->op;
    switch (op) {
    case 0x02:
    case 0x03:
    case 0x04:
    case 0x06:
        return in->bt != PW_BT_TYPE || (in->a < m->ntypes && m->types[in->a].form == PW_FORM_FUNC);
    case 0x07: return in->a < m->ntags;
    case 0x09: return in->a < c->ncs;
    case 0x18: return in->a + 1 < c->ncs && c->cs[c->ncs - 1].eh == 1;
    case 0x0C:
    case 0x0D:
    case 0xD5:
    case 0xD6: return in->a < c->ncs;
    case 0x12: return in->a < m->nfuncs;
    case 0x08: return in->a < m->ntags;
    case 0x1F:
        return in->bt != PW_BT_TYPE || (in->a < m->ntypes && m->types[in->a].form == PW_FORM_FUNC);
    case 0x13:
        return in->a < m->ntypes && m->types[in->a].form == PW_FORM_FUNC && in->b < m->ntables;
    case 0x14:
    case 0x15: return in->a < m->ntypes && m->types[in->a].form == PW_FORM_FUNC;
    case 0x0E: return in->a < c->ncs;
    case 0x10: return in->a < m->nfuncs;
    case 0x11:
        return in->a < m->ntypes && m->types[in->a].form == PW_FORM_FUNC && in->b < m->ntables;
    case 0x20:
    case 0x21:
    case 0x22: return in->a < c->nvlocals;
    case 0x23:
    case 0x24: return in->a < m->nglobals;
    case 0x25:
    case 0x26: return in->a < m->ntables;
    case 0xD2: return in->a < m->nfuncs;
    case 0x3F:
    case 0x40: return in->a < m->nmems;
    case PW_OP_FC(8): return in->a < m->ndatas && in->b < m->nmems;
    case PW_OP_FC(10): return in->a < m->nmems && in->b < m->nmems;
    case PW_OP_FC(11): return in->a < m->nmems;
    case PW_OP_FC(9): return in->a < m->ndatas;
    case PW_OP_FC(12): return in->a < m->nelems && in->b < m->ntables;
    case PW_OP_FC(13): return in->a < m->nelems;
    case PW_OP_FC(14): return in->a < m->ntables && in->b < m->ntables;
    case PW_OP_FC(15):
    case PW_OP_FC(16):
    case PW_OP_FC(17): return in->a < m->ntables;
    default: return op < 0x28 || op > 0x3E || in->a < m->nmems;
    }
}

/* ---------------------------------------------------------------- legacy exceptions */

/* Legacy exception handling lowered onto the try_table machinery (interp.c unwind):
 *   try bt B (catch x C)* (catch_all D)? end
 * is a block whose TRY instruction has one catch_ref (catch_all_ref) clause per catch,
 * each landing at the start of its handler code inside the block; the handler range
 * covers B only. A clause delivers the tag's values at height+1 and the exception
 * above them; the landing code moves the exception to slot `height`, where it stays
 * (a hidden exnref entry of the operand stack, so GC maps see it) for rethrow. A
 * catch's results are moved down over it at its end. try B delegate l has one
 * catch_all_ref clause landing at a stub emitted inside block l (legacy_stubs), which
 * throws the exception again from there: the handlers in between are skipped. */

static bool add_handler(comp *c, uint32_t try_pos) {
    if (c->nhs == c->caphs && !grow((void **)&c->hs, &c->caphs, c->nhs + 1, sizeof *c->hs))
        return false;
    c->hs[c->nhs++] = (pw_handler){try_pos - c->fstart, c->ncode - c->fstart};
    return true;
}

/* Emits the delegate stubs waiting in block l (the fall-through, if any, has been
 * handled by the caller). */
static void legacy_stubs(comp *c, ctl *l) {
    for (uint32_t i = l->stubs; i != UINT32_MAX; i = c->ds[i].next) {
        c->code[c->ds[i].clause + 3] = c->ncode - c->ds[i].try_pos;
        emit_op(c, PW_OP_THROW_REF);
        emit(c, c->ds[i].slot);
    }
    l->stubs = UINT32_MAX;
}

/* The clauses of the try whose body starts at r (catch tags in order, catch_all, or
 * delegate), counted without compiling. */
static bool legacy_scan(const pw_reader *r0, uint32_t *n, bool *delegate) {
    pw_reader r = *r0;
    pw_instr in;
    uint32_t depth = 0;
    *n = 0;
    *delegate = false;
    while (r.p < r.end) {
        if (!pw__instr_read(&r, &in)) return false;
        switch (in.op) {
        case 0x02:
        case 0x03:
        case 0x04:
        case 0x06:
        case 0x1F: depth++; break;
        case 0x07:
        case 0x19: *n += depth == 0; break;
        case 0x18:
            if (depth == 0) {
                *n = 1;
                *delegate = true;
                return true;
            }
            depth--;
            break;
        case 0x0B:
            if (depth == 0) return true;
            depth--;
            break;
        default: break;
        }
    }
    return false;
}

static bool legacy_try(comp *c, const pw_reader *r, const pw_instr *in) {
    uint32_t n;
    bool delegate;
    if (!legacy_scan(r, &n, &delegate)) {
        if (!c->err->status) pw__fail(c->err, PW_ERR_MALFORMED, "unexpected end");
        return false;
    }
    materialize_all(c);
    uint32_t pos = emit_op(c, PW_OP_TRY);
    emit(c, 0);
    emit(c, n);
    uint32_t cl = c->ncode;
    for (uint32_t k = 0; k < 4 * n; k++)
        emit(c, 0);
    if (c->oom) return false;
    c->code[pos + 1] = c->ncode - pos;
    if (!push_ctl(c, CT_BLOCK, in)) return false;
    ctl *cur = &c->cs[c->ncs - 1];
    cur->eh = 1;
    cur->eh_pos = pos;
    cur->eh_next = cl;
    cur->eh_nclause = n;
    cur->label_pc = c->ncode;
    c->pend = false;
    return true;
}

static bool legacy_catch(comp *c, ctl *cur, const pw_instr *in) {
    if (!cur->eh || cur->eh_next + 4 > cur->eh_pos + 3 + 4 * cur->eh_nclause) {
        c->bad = true;
        return true;
    }
    if (!cur->unreachable) emit_br(c, cur);
    if (cur->eh == 1) {
        legacy_stubs(c, cur);
        if (!add_handler(c, cur->eh_pos)) return false;
    }
    cur->eh = 2;
    c->dcur = cur->dentry; /* a throw anywhere in the body lands here */
    const pw_module *m = c->m;
    const pw_deftype *tt = in->op == 0x07 ? &m->types[m->tag_types[in->a]] : NULL;
    uint32_t np = tt ? tt->u.func.nparams : 0;
    uint32_t cells = tt ? ncells(tt->u.func.types, np) : 0;
    uint32_t w = cur->eh_next;
    cur->eh_next += 4;
    uint32_t base = slot_of_depth(c, cur->height + 1);
    c->code[w] = in->op == 0x07 ? 1 : 3; /* catch_ref / catch_all_ref */
    c->code[w + 1] = in->op == 0x07 ? in->a : 0;
    c->code[w + 2] = base;
    c->code[w + 3] = c->ncode - cur->eh_pos;
    if (cur->height + 2 + cells > c->maxsp) c->maxsp = cur->height + 2 + cells;
    emit_op(c, PW_OP_COPY);
    emit(c, slot_of_depth(c, cur->height));
    emit(c, base + cells);
    reset_stack(c, cur->height, 0, NULL);
    push_stack(c, PW_VT_ABSREF(PW_HT_EXN, 1));
    for (uint32_t i = 0; i < np; i++) {
        push_stack(c, tt->u.func.types[i]);
        if (PW_VT_KIND(tt->u.func.types[i]) == PW_K_V128) push_stack(c, tt->u.func.types[i]);
    }
    cur->unreachable = false;
    return !c->oom;
}

static bool legacy_delegate(comp *c, ctl *cur, const pw_instr *in) {
    if (cur->eh != 1 || cur->eh_nclause != 1 || in->a + 1 >= c->ncs) {
        c->bad = true;
        return true;
    }
    if (!cur->unreachable) {
        begin_moves(c);
        for (uint32_t i = 0; i < cur->nresults; i++)
            materialize(c, c->sp - cur->nresults + i);
        end_moves(c);
    }
    legacy_stubs(c, cur);
    if (!add_handler(c, cur->eh_pos)) return false;
    if (c->nds == c->capds && !grow((void **)&c->ds, &c->capds, c->nds + 1, sizeof *c->ds))
        return false;
    ctl *target = &c->cs[c->ncs - 2 - in->a];
    uint32_t w = cur->eh_next;
    uint32_t slot = slot_of_depth(c, cur->height);
    if (cur->height + 1 > c->maxsp) c->maxsp = cur->height + 1;
    c->code[w] = 3; /* catch_all_ref */
    c->code[w + 1] = 0;
    c->code[w + 2] = slot;
    c->ds[c->nds] = (dstub){w, cur->eh_pos, slot, target->stubs};
    target->stubs = c->nds++;
    c->dcur = da_end(c, cur);
    bind_fixups(c, cur->fixups, c->ncode);
    reset_stack(c, cur->height, cur->vnresults, cur->results);
    c->ncs--;
    return true;
}

/* What an instruction family function tells compile_body: go on, the rest of the
 * block is unreachable, or fail (c->err set). */
enum { K_NEXT, K_DEAD, K_FAIL };

/* The else of an if: the then-branch has been closed (or was unreachable). */
static int block_else(comp *c, ctl *cur) {
    c->code[cur->else_fix] = c->ncode - c->code[cur->else_fix];
    cur->else_fix = UINT32_MAX;
    cur->kind = CT_ELSE;
    cur->unreachable = false;
    reset_stack(c, cur->height, cur->vnparams, cur->params);
    c->dcur = cur->dentry;
    return K_NEXT;
}

/* The end of a block (also reached from unreachable code): stubs, handlers, labels. */
static int block_end(comp *c, ctl *cur) {
    if (cur->kind == CT_FUNC) {
        if (!cur->unreachable) emit_return(c);
        legacy_stubs(c, cur);
        c->ncs--;
        return K_NEXT;
    }
    uint64_t after = da_end(c, cur); /* before the stubs' branch, which adds nothing */
    if (cur->stubs != UINT32_MAX) {
        if (!cur->unreachable) {
            uint32_t pos = emit_op(c, PW_OP_BR);
            add_fixup(c, cur, c->ncode, pos);
            emit(c, 0);
        }
        legacy_stubs(c, cur);
    }
    if (cur->else_fix != UINT32_MAX) c->code[cur->else_fix] = c->ncode - c->code[cur->else_fix];
    if (cur->eh == 1 && !add_handler(c, cur->eh_pos)) /* a try without handlers */
        return K_FAIL;
    if (cur->try_pos != UINT32_MAX) {
        if (c->nhs == c->caphs && !grow((void **)&c->hs, &c->caphs, c->nhs + 1, sizeof *c->hs))
            return K_FAIL;
        c->hs[c->nhs++] = (pw_handler){cur->try_pos - c->fstart, c->ncode - c->fstart};
    }
    if (cur->kind != CT_LOOP) bind_fixups(c, cur->fixups, c->ncode);
    reset_stack(c, cur->height, cur->vnresults, cur->results);
    c->dcur = after;
    c->ncs--;
    return K_NEXT;
}

/* control_instr: one function per case of compile_body's switch. */
static inline __attribute__((always_inline)) int control_00(comp *c, pw_reader *r,
                                                            const pw_instr *in, ctl *cur) {
    (void)r;
    (void)in;
    (void)cur;
    /* unreachable */ emit_op(c, PW_OP_UNREACHABLE);
    return K_DEAD;
    return K_NEXT;
}

static inline __attribute__((always_inline)) int control_01(comp *c, pw_reader *r,
                                                            const pw_instr *in, ctl *cur) {
    (void)c;
    (void)r;
    (void)in;
    (void)cur;
    return K_NEXT;
}

static inline __attribute__((always_inline)) int control_02(comp *c, pw_reader *r,
                                                            const pw_instr *in, ctl *cur) {
    uint32_t op = in->op;
    (void)r;
    if (op == 0x03) c->prefix = false;
    materialize_all(c);
    if (!push_ctl(c, op == 0x02 ? CT_BLOCK : CT_LOOP, in)) return K_FAIL;
    cur = &c->cs[c->ncs - 1];
    cur->label_pc = c->ncode;
    c->pend = false;
    return K_NEXT;
}

static inline __attribute__((always_inline)) int control_04(comp *c, pw_reader *r,
                                                            const pw_instr *in, ctl *cur) {
    (void)r;
    /* if */
    cond k = pop_cond(c, false);
    materialize_all(c);
    if (!push_ctl(c, CT_IF, in)) return K_FAIL;
    cur = &c->cs[c->ncs - 1];
    uint32_t pos = emit_cond(c, &k);
    cur->else_fix = c->ncode;
    emit(c, pos);
    return K_NEXT;
}

static inline __attribute__((always_inline)) int control_05(comp *c, pw_reader *r,
                                                            const pw_instr *in, ctl *cur) {
    (void)r;
    (void)in;
    if (!cur->unreachable) {
        for (uint32_t i = 0; i < cur->nresults; i++)
            materialize(c, c->sp - cur->nresults + i);
        uint32_t pos = emit_op(c, PW_OP_BR);
        add_fixup(c, cur, c->ncode, pos);
        emit(c, 0);
    }
    return block_else(c, cur);
}

static inline __attribute__((always_inline)) int control_0b(comp *c, pw_reader *r,
                                                            const pw_instr *in, ctl *cur) {
    (void)r;
    (void)in;
    if (!cur->unreachable && cur->eh == 2) {
        emit_moves(c, cur); /* a catch's results sit above its exception */
    } else if (!cur->unreachable && cur->kind != CT_FUNC) {
        begin_moves(c);
        for (uint32_t i = 0; i < cur->nresults; i++)
            materialize(c, c->sp - cur->nresults + i);
        end_moves(c);
    }
    return block_end(c, cur);
}

static inline __attribute__((always_inline)) int control_06(comp *c, pw_reader *r,
                                                            const pw_instr *in, ctl *cur) {
    (void)cur;
    if (!legacy_try(c, r, in)) return K_FAIL;
    return K_NEXT;
}

static inline __attribute__((always_inline)) int control_07(comp *c, pw_reader *r,
                                                            const pw_instr *in, ctl *cur) {
    (void)r;
    if (!legacy_catch(c, cur, in)) return K_FAIL;
    return K_NEXT;
}

static inline __attribute__((always_inline)) int control_18(comp *c, pw_reader *r,
                                                            const pw_instr *in, ctl *cur) {
    (void)r;
    if (!legacy_delegate(c, cur, in)) return K_FAIL;
    return K_NEXT;
}

static inline __attribute__((always_inline)) int control_09(comp *c, pw_reader *r,
                                                            const pw_instr *in, ctl *cur) {
    (void)r;
    (void)cur;
    /* rethrow l (legacy): the exception its catch keeps below its values */
    ctl *l = &c->cs[c->ncs - 1 - in->a];
    if (l->eh != 2) c->bad = true;
    emit_op(c, PW_OP_THROW_REF);
    emit(c, slot_of_depth(c, l->height));
    return K_DEAD;
}

static inline __attribute__((always_inline)) int control_0c(comp *c, pw_reader *r,
                                                            const pw_instr *in, ctl *cur) {
    (void)r;
    (void)cur;
    /* br */ emit_br(c, &c->cs[c->ncs - 1 - in->a]);
    return K_DEAD;
    return K_NEXT;
}

static inline __attribute__((always_inline)) int control_0d(comp *c, pw_reader *r,
                                                            const pw_instr *in, ctl *cur) {
    (void)r;
    (void)cur;
    /* br_if */
    ctl *l = &c->cs[c->ncs - 1 - in->a];
    if (c->sp == 0) c->bad = true;
    c->sp -= c->sp > 0; /* the condition is not a branch value */
    bool moves = l->kind == CT_FUNC || needs_moves(c, l);
    c->sp++;
    if (!moves) {
        cond k = pop_cond(c, true);
        uint32_t pos = emit_cond(c, &k);
        emit_target(c, l, pos);
    } else {
        cond k = pop_cond(c, false);
        uint32_t pos = emit_cond(c, &k);
        uint32_t at = c->ncode;
        emit(c, 0);
        emit_br(c, l);
        c->code[at] = c->ncode - pos;
    }
    c->pend = false;
    return K_NEXT;
}

static inline __attribute__((always_inline)) int control_0e(comp *c, pw_reader *r,
                                                            const pw_instr *in, ctl *cur) {
    const pw_module *m = c->m;
    (void)cur;
    /* br_table */
    uint32_t idx = pop_slot(c);
    uint32_t n = in->n;
    uint32_t pos = emit_op(c, PW_OP_BR_TABLE);
    emit(c, idx);
    emit(c, n);
    uint32_t tbl = c->ncode;
    for (uint32_t i = 0; i <= n; i++)
        emit(c, 0);
    if (c->oom) return K_FAIL;
    pw_reader tr = {in->vec, r->p, m->bytes, c->err};
    for (uint32_t i = 0; i <= n; i++) {
        uint32_t depth = in->a;
        if (i < n && !pw_rd_u32(&tr, &depth)) return K_FAIL;
        if (depth >= c->ncs) {
            pw__fail(c->err, PW_ERR_INVALID, "unknown label");
            return K_FAIL;
        }
        ctl *l = &c->cs[c->ncs - 1 - depth];
        if (l->kind != CT_FUNC && !needs_moves(c, l)) {
            if (l->kind == CT_LOOP)
                c->code[tbl + i] = l->label_pc - pos;
            else
                add_fixup(c, l, tbl + i, pos);
        } else {
            c->code[tbl + i] = c->ncode - pos;
            emit_br(c, l);
        }
    }
    return K_DEAD;
}

static inline __attribute__((always_inline)) int control_0f(comp *c, pw_reader *r,
                                                            const pw_instr *in, ctl *cur) {
    (void)r;
    (void)in;
    (void)cur;
    /* return */ emit_return(c);
    return K_DEAD;
    return K_NEXT;
}

/* call_instr: one function per case of compile_body's switch. */
static inline __attribute__((always_inline)) int call_10(comp *c, pw_reader *r,
                                                         const pw_instr *in) {
    const pw_module *m = c->m;
    (void)r;
    /* call */
    const pw_deftype *t = &m->types[m->func_types[in->a]];
    if (in->a >= m->nfunc_imports)
        emit_call(c, PW_OP_CALL, t, in->a - m->nfunc_imports, 0, 0, false);
    else
        emit_call(c, PW_OP_CALL_IMPORT, t, in->a, 0, 0, false);
    return K_NEXT;
}

static inline __attribute__((always_inline)) int call_11(comp *c, pw_reader *r,
                                                         const pw_instr *in) {
    const pw_module *m = c->m;
    (void)r;
    /* call_indirect */
    if (tab64(c, in->b)) clamp_index(c, c->sp - 1);
    uint32_t idx = pop_slot(c);
    emit_call(c, PW_OP_CALL_INDIRECT, &m->types[in->a], in->a, in->b, idx, true);
    return K_NEXT;
}

static inline __attribute__((always_inline)) int call_08(comp *c, pw_reader *r,
                                                         const pw_instr *in) {
    const pw_module *m = c->m;
    (void)r;
    /* throw */
    const pw_deftype *tt = &m->types[m->tag_types[in->a]];
    uint32_t np = ncells(tt->u.func.types, tt->u.func.nparams);
    for (uint32_t i = 0; i < np; i++)
        materialize(c, c->sp - np + i);
    emit_op(c, PW_OP_THROW);
    emit(c, in->a);
    emit(c, slot_of_depth(c, c->sp - np));
    gc_site(c, c->sp); /* allocates the exception package */
    return K_DEAD;
}

static inline __attribute__((always_inline)) int call_0a(comp *c, pw_reader *r,
                                                         const pw_instr *in) {
    (void)r;
    (void)in;
    /* throw_ref */
    uint32_t x = pop_slot(c);
    emit_op(c, PW_OP_THROW_REF);
    emit(c, x);
    return K_DEAD;
}

static inline __attribute__((always_inline)) int call_1f(comp *c, pw_reader *r,
                                                         const pw_instr *in) {
    const pw_module *m = c->m;
    /* try_table: a block whose TRY instruction carries the catches */
    materialize_all(c);
    uint32_t n = in->n;
    uint32_t pos = emit_op(c, PW_OP_TRY);
    emit(c, 0);
    emit(c, n);
    uint32_t cl = c->ncode;
    for (uint32_t k = 0; k < 4 * n; k++)
        emit(c, 0);
    if (c->oom) return K_FAIL;
    pw_reader cr = {in->vec, r->p, m->bytes, c->err};
    for (uint32_t k = 0; k < n; k++) {
        pw_catch cc;
        if (!pw__rd_catch(&cr, &cc)) return K_FAIL;
        if (cc.label >= c->ncs || (cc.kind < 2 && cc.tag >= m->ntags)) {
            pw__fail(c->err, PW_ERR_INVALID, "unknown label");
            return K_FAIL;
        }
        ctl *l = &c->cs[c->ncs - 1 - cc.label];
        uint32_t w = cl + 4 * k;
        c->code[w] = cc.kind;
        c->code[w + 1] = cc.tag;
        if (l->kind == CT_FUNC) {
            /* Catching into the function's label returns: the payload goes
             * to scratch slots above the stack and a stub returns it. */
            const pw_deftype *tt = cc.kind < 2 ? &m->types[m->tag_types[cc.tag]] : NULL;
            uint32_t np = (tt ? ncells(tt->u.func.types, tt->u.func.nparams) : 0) + (cc.kind & 1);
            uint32_t base = slot_of_depth(c, c->sp);
            if (c->sp + np > c->maxsp) c->maxsp = c->sp + np;
            c->code[w + 2] = base;
            c->code[w + 3] = c->ncode - pos;
            for (uint32_t i = 0; i < np; i++) {
                emit_op(c, PW_OP_COPY);
                emit(c, i);
                emit(c, base + i);
            }
            emit_op(c, PW_OP_RETURN);
        } else {
            c->code[w + 2] = slot_of_depth(c, l->height);
            if (l->kind == CT_LOOP)
                c->code[w + 3] = l->label_pc - pos;
            else
                add_fixup(c, l, w + 3, pos);
        }
    }
    c->code[pos + 1] = c->ncode - pos;
    if (!push_ctl(c, CT_BLOCK, in)) return K_FAIL;
    ctl *cur = &c->cs[c->ncs - 1];
    cur->try_pos = pos;
    cur->label_pc = c->ncode;
    c->pend = false;
    return K_NEXT;
}

static inline __attribute__((always_inline)) int call_12(comp *c, pw_reader *r,
                                                         const pw_instr *in) {
    const pw_module *m = c->m;
    (void)r;
    /* return_call */
    const pw_deftype *t = &m->types[m->func_types[in->a]];
    emit_to_base(c, ncells(t->u.func.types, t->u.func.nparams));
    if (in->a >= m->nfunc_imports) {
        emit_op(c, PW_OP_TAIL_CALL);
        emit(c, in->a - m->nfunc_imports);
    } else {
        emit_op(c, PW_OP_TAIL_CALL_IMPORT);
        emit(c, in->a);
    }
    return K_DEAD;
}

static inline __attribute__((always_inline)) int call_13(comp *c, pw_reader *r,
                                                         const pw_instr *in) {
    const pw_module *m = c->m;
    uint32_t op = in->op;
    (void)r;
    /* return_call_ref */
    /* The index/reference must survive the argument moves: its own stack
     * slot lies above every destination. */
    if (op == 0x13 && tab64(c, in->b)) clamp_index(c, c->sp - 1);
    materialize(c, c->sp - 1);
    uint32_t x = slot_of_depth(c, c->sp - 1);
    popn(c, 1);
    const pw_deftype *t = &m->types[in->a];
    emit_to_base(c, ncells(t->u.func.types, t->u.func.nparams));
    if (op == 0x13) {
        emit_op(c, PW_OP_TAIL_CALL_INDIRECT);
        emit(c, in->a);
        emit(c, in->b);
    } else {
        emit_op(c, PW_OP_TAIL_CALL_REF);
    }
    emit(c, x);
    return K_DEAD;
}

static inline __attribute__((always_inline)) int call_14(comp *c, pw_reader *r,
                                                         const pw_instr *in) {
    const pw_module *m = c->m;
    (void)r;
    /* call_ref */
    uint32_t x = pop_slot(c);
    const pw_deftype *t = &m->types[in->a];
    uint32_t vnp = t->u.func.nparams, np = ncells(t->u.func.types, vnp);
    for (uint32_t i = 0; i < np; i++)
        materialize(c, c->sp - np + i);
    emit_op(c, PW_OP_CALL_REF);
    emit(c, x);
    emit(c, slot_of_depth(c, c->sp - np));
    gc_site(c, c->sp);
    popn(c, np);
    reset_stack(c, c->sp, t->u.func.nresults, t->u.func.types + vnp);
    return K_NEXT;
}

/* var_instr: one function per case of compile_body's switch. */
static inline __attribute__((always_inline)) int var_d3(comp *c, const pw_instr *in) {
    (void)in;
    /* ref.eq: references are compared as 64-bit words */
    static const numinfo REF_EQ = {PW_OP_I64_EQ, NOIMM, 2, PW_K_I32, 1};
    numeric(c, &REF_EQ);
    return K_NEXT;
}

static inline __attribute__((always_inline)) int var_d4(comp *c, const pw_instr *in) {
    (void)in;
    /* ref.as_non_null */
    uint32_t x = slot_at(c, c->sp - 1);
    emit_op(c, PW_OP_REF_AS_NON_NULL);
    emit(c, x);
    top(c, 0)->type &= ~0x10u;
    c->pend = false;
    return K_NEXT;
}

static inline __attribute__((always_inline)) int var_d5(comp *c, const pw_instr *in) {
    uint32_t op = in->op;
    /* br_on_non_null: branch (with it) when not null */
    ctl *l = &c->cs[c->ncs - 1 - in->a];
    uint32_t x = slot_at(c, c->sp - 1);
    ent saved = *top(c, 0);
    if (op == 0xD5) popn(c, 1);
    bool moves = l->kind == CT_FUNC || needs_moves(c, l);
    uint32_t pos;
    if (!moves) {
        pos = emit_op(c, op == 0xD5 ? PW_OP_BR_IF64Z : PW_OP_BR_IF64);
        emit(c, x);
        emit_target(c, l, pos);
    } else {
        pos = emit_op(c, op == 0xD5 ? PW_OP_BR_IF64 : PW_OP_BR_IF64Z);
        emit(c, x);
        uint32_t atw = c->ncode;
        emit(c, 0);
        emit_br(c, l);
        c->code[atw] = c->ncode - pos;
    }
    if (op == 0xD5) {
        /* the (non-null) reference stays on the stack */
        push(c, saved.loc, saved.local, saved.cval, saved.type & ~0x10u);
    } else {
        popn(c, 1);
    }
    c->pend = false;
    return K_NEXT;
}

static inline __attribute__((always_inline)) int var_1a(comp *c, const pw_instr *in) {
    (void)in;
    popn(c, top(c, 0)->type == PW_VT_V128 ? 2 : 1);
    return K_NEXT; /* drop */
    return K_NEXT;
}

static inline __attribute__((always_inline)) int var_1b(comp *c, const pw_instr *in) {
    (void)in;
    /* select */
    if (top(c, 1)->type == PW_VT_V128) {
        select_v128(c);
        return K_NEXT;
    }
    uint32_t cs = slot_at(c, c->sp - 1);
    uint32_t b = slot_at(c, c->sp - 2);
    uint32_t a = slot_at(c, c->sp - 3);
    pw_valtype t = top(c, 1)->type;
    popn(c, 3);
    uint32_t dst = push_stack(c, t);
    uint32_t pos = emit_op(c, PW_OP_SELECT);
    emit(c, dst);
    emit(c, a);
    emit(c, b);
    emit(c, cs);
    set_pend(c, pos, PW_OP_SELECT, dst);
    return K_NEXT;
}

/* Pushes the local whose first cell is x (both cells of a v128): each is read from
 * its cell later, so each is a read for definite assignment. local.get and the v128
 * tee push through here; local_set's scalar tee pushes its cell right after the
 * da_write that covers the read. */
static void get_local(comp *c, uint32_t x) {
    da_read(c, x);
    push(c, LOC_LOCAL, x, 0, c->local_types[x]);
    if (c->local_types[x] == PW_VT_V128) {
        da_read(c, x + 1);
        push(c, LOC_LOCAL, x + 1, 0, PW_VT_V128);
    }
}

static inline __attribute__((always_inline)) int var_20(comp *c, const pw_instr *in) {
    /* local.get */
    get_local(c, c->lmap[in->a]);
    return K_NEXT;
}

static inline __attribute__((always_inline)) int var_21(comp *c, const pw_instr *in) {
    uint32_t op = in->op;
    uint32_t x = c->lmap[in->a];
    if (c->local_types[x] != PW_VT_V128) {
        local_set(c, x, op == 0x22);
        return K_NEXT;
    }
    /* v128: the high half (on top) first */
    local_set(c, x + 1, false);
    local_set(c, x, false);
    /* The tee's value is read from the local's cells: a half the prefix rule dropped
     * (a zero constant) was no write, and its cell must still get the entry's zero. */
    if (op == 0x22) get_local(c, x);
    return K_NEXT;
}

static inline __attribute__((always_inline)) int var_23(comp *c, const pw_instr *in) {
    const pw_module *m = c->m;
    /* global.get */
    if (m->globals[in->a].type.type == PW_VT_V128) {
        reset_stack(c, c->sp, 1, &m->globals[in->a].type.type);
        emit_simd(c, PW_SIMD_GLOBAL_GET, slot_of_depth(c, c->sp - 2), 0, 0, 0,
                  (const uint32_t[4]){in->a, 0, 0, 0});
        return K_NEXT;
    }
    uint32_t dst = push_stack(c, m->globals[in->a].type.type);
    uint32_t pos = emit_op(c, PW_OP_GLOBAL_GET);
    emit(c, dst);
    emit(c, in->a);
    set_pend(c, pos, PW_OP_GLOBAL_GET, dst);
    return K_NEXT;
}

static inline __attribute__((always_inline)) int var_24(comp *c, const pw_instr *in) {
    const pw_module *m = c->m;
    /* global.set */
    if (m->globals[in->a].type.type == PW_VT_V128) {
        uint32_t v = v128_at(c, c->sp - 2);
        popn(c, 2);
        emit_simd(c, PW_SIMD_GLOBAL_SET, 0, v, 0, 0, (const uint32_t[4]){in->a, 0, 0, 0});
        return K_NEXT;
    }
    uint32_t s = pop_slot(c);
    emit_op(c, PW_OP_GLOBAL_SET);
    emit(c, in->a);
    emit(c, s);
    c->pend = false;
    return K_NEXT;
}

static inline __attribute__((always_inline)) int var_25(comp *c, const pw_instr *in) {
    const pw_module *m = c->m;
    /* table.get */
    if (tab64(c, in->a)) clamp_index(c, c->sp - 1);
    uint32_t i = pop_slot(c);
    uint32_t dst = push_stack(c, m->tables[in->a].type.elem);
    uint32_t pos = emit_op(c, PW_OP_TABLE_GET);
    emit(c, dst);
    emit(c, in->a);
    emit(c, i);
    set_pend(c, pos, PW_OP_TABLE_GET, dst);
    return K_NEXT;
}

static inline __attribute__((always_inline)) int var_26(comp *c, const pw_instr *in) {
    /* table.set */
    if (tab64(c, in->a)) clamp_index(c, c->sp - 2);
    uint32_t v = pop_slot(c), i = pop_slot(c);
    emit_op(c, PW_OP_TABLE_SET);
    emit(c, in->a);
    emit(c, i);
    emit(c, v);
    c->pend = false;
    return K_NEXT;
}

static inline __attribute__((always_inline)) int var_3f(comp *c, const pw_instr *in) {
    const pw_module *m = c->m;
    /* memory.size */
    if (mem_slow(c, in->a)) {
        uint32_t dst = push_stack(c, m->mems[in->a].is64 ? PW_VT_I64 : PW_VT_I32);
        emit_xop(c, PW_XOP_MEMORY_SIZE_X);
        emit(c, dst);
        emit(c, in->a);
        return K_NEXT;
    }
    uint32_t dst = push_stack(c, PW_VT_I32);
    uint32_t pos = emit_op(c, PW_OP_MEMORY_SIZE);
    emit(c, dst);
    set_pend(c, pos, PW_OP_MEMORY_SIZE, dst);
    return K_NEXT;
}

static inline __attribute__((always_inline)) int var_40(comp *c, const pw_instr *in) {
    const pw_module *m = c->m;
    /* memory.grow */
    if (mem_slow(c, in->a)) {
        uint32_t d = pop_slot(c);
        uint32_t dst = push_stack(c, m->mems[in->a].is64 ? PW_VT_I64 : PW_VT_I32);
        emit_xop(c, PW_XOP_MEMORY_GROW_X);
        emit(c, dst);
        emit(c, in->a);
        emit(c, d);
        return K_NEXT;
    }
    uint32_t d = pop_slot(c);
    uint32_t dst = push_stack(c, PW_VT_I32);
    uint32_t pos = emit_op(c, PW_OP_MEMORY_GROW);
    emit(c, dst);
    emit(c, d);
    set_pend(c, pos, PW_OP_MEMORY_GROW, dst);
    return K_NEXT;
}

static inline __attribute__((always_inline)) int var_41(comp *c, const pw_instr *in) {
    push(c, LOC_CONST, 0, (uint32_t)in->bits, PW_VT_I32);
    return K_NEXT;
    return K_NEXT;
}

static inline __attribute__((always_inline)) int var_42(comp *c, const pw_instr *in) {
    push(c, LOC_CONST, 0, in->bits, PW_VT_I64);
    return K_NEXT;
    return K_NEXT;
}

static inline __attribute__((always_inline)) int var_43(comp *c, const pw_instr *in) {
    push(c, LOC_CONST, 0, in->bits, PW_VT_F32);
    return K_NEXT;
    return K_NEXT;
}

static inline __attribute__((always_inline)) int var_44(comp *c, const pw_instr *in) {
    push(c, LOC_CONST, 0, in->bits, PW_VT_F64);
    return K_NEXT;
    return K_NEXT;
}

static inline __attribute__((always_inline)) int var_a7(comp *c, const pw_instr *in) {
    uint32_t op = in->op;
    (void)in;
    /* reinterpret: same bits */
    static const pw_valtype to[] = {PW_VT_I32, PW_VT_I32, PW_VT_I64, PW_VT_F32, PW_VT_F64};
    ent *e = top(c, 0);
    e->type = to[op == 0xA7 ? 0 : op - 0xBC + 1];
    if (op == 0xA7 && e->loc == LOC_CONST) e->cval = (uint32_t)e->cval;
    return K_NEXT;
}

static inline __attribute__((always_inline)) int var_d0(comp *c, const pw_instr *in) {
    push(c, LOC_CONST, 0, 0, in->t1);
    return K_NEXT; /* ref.null */
    return K_NEXT;
}

static inline __attribute__((always_inline)) int var_d1(comp *c, const pw_instr *in) {
    (void)in;
    /* ref.is_null */
    uint32_t a = pop_slot(c);
    uint32_t dst = push_stack(c, PW_VT_I32);
    uint32_t pos = emit_op(c, PW_OP_I64_EQZ);
    emit(c, dst);
    emit(c, a);
    set_pend(c, pos, PW_OP_I64_EQZ, dst);
    return K_NEXT;
}

static inline __attribute__((always_inline)) int var_d2(comp *c, const pw_instr *in) {
    /* ref.func */
    uint32_t dst = push_stack(c, PW_VT_ABSREF(PW_HT_FUNC, 0));
    uint32_t pos = emit_op(c, PW_OP_REF_FUNC);
    emit(c, dst);
    emit(c, in->a);
    set_pend(c, pos, PW_OP_REF_FUNC, dst);
    return K_NEXT;
}

/* Everything else: numeric operators, loads and stores, bulk memory, GC, SIMD. */
static inline __attribute__((always_inline)) int other_instr(comp *c, pw_reader *r, pw_instr *in) {
    const pw_module *m = c->m;
    uint32_t op = in->op;
    (void)m;
    (void)r;
    if (op >= 0x28 && op <= 0x3E && mem_slow(c, in->a)) {
        mem_access_slow(c, in);
        return K_NEXT;
    }
    if (op >= 0x28 && op <= 0x35) {
        uint32_t lop = LOADS[op - 0x28].op, x, y, form;
        if (fused_addr(c, 0, &x, &y, &form)) {
            uint32_t dst = push_stack(c, LOADS[op - 0x28].out);
            uint32_t pos = emit_op(c, lop + form);
            emit(c, dst);
            emit(c, x);
            emit(c, y);
            emit(c, (uint32_t)in->offset);
            set_pend(c, pos, lop + form, dst);
            return K_NEXT;
        }
        uint32_t a = const_addr(c, in) ? c->zero_slot : pop_slot(c);
        uint32_t dst = push_stack(c, LOADS[op - 0x28].out);
        uint32_t pos = emit_op(c, lop);
        emit(c, dst);
        emit(c, a);
        emit(c, (uint32_t)in->offset);
        set_pend(c, pos, lop, dst);
        return K_NEXT;
    }
    if (op >= 0x36 && op <= 0x3E) {
        uint32_t sop = STORES[op - 0x36], x, y, form;
        if (top(c, 0)->loc == LOC_LOCAL && fused_addr(c, 1, &x, &y, &form)) {
            uint32_t v = top(c, 0)->local;
            popn(c, 1);
            emit_op(c, sop + form);
            emit(c, x);
            emit(c, y);
            emit(c, v);
            emit(c, (uint32_t)in->offset);
            c->pend = false;
            return K_NEXT;
        }
        uint32_t v = pop_slot(c);
        uint32_t a = const_addr(c, in) ? c->zero_slot : pop_slot(c);
        emit_op(c, sop);
        emit(c, a);
        emit(c, v);
        emit(c, (uint32_t)in->offset);
        c->pend = false;
        return K_NEXT;
    }
    if (op < 256 && NUM[op].nin) {
        numeric(c, &NUM[op]);
        return K_NEXT;
    }
    if (op >= PW_OP_FC(0) && op <= PW_OP_FC(7)) {
        numeric(c, &SAT[op - PW_OP_FC(0)]);
        return K_NEXT;
    }
    if (op >= PW_OP_FC(8) && op <= PW_OP_FC(0x11)) {
        uint32_t sub = op & 0xFF;
        uint32_t s3 = 0, s2 = 0, s1 = 0;
        switch (sub) {
        case 0x08: /* memory.init seg mem */
            s3 = pop_slot(c), s2 = pop_slot(c), s1 = pop_slot(c);
            if (mem_slow(c, in->b)) {
                emit_xop(c, PW_XOP_MEMORY_INIT_X);
                emit(c, in->b), emit(c, in->a);
            } else {
                emit_op(c, PW_OP_MEMORY_INIT);
                emit(c, in->a);
            }
            emit(c, s1), emit(c, s2), emit(c, s3);
            break;
        case 0x09:
            emit_op(c, PW_OP_DATA_DROP);
            emit(c, in->a);
            break;
        case 0x0A: /* memory.copy dst src */
            s3 = pop_slot(c), s2 = pop_slot(c), s1 = pop_slot(c);
            if (mem_slow(c, in->a) || mem_slow(c, in->b)) {
                emit_xop(c, PW_XOP_MEMORY_COPY_X);
                emit(c, in->a), emit(c, in->b);
            } else {
                emit_op(c, PW_OP_MEMORY_COPY);
            }
            emit(c, s1), emit(c, s2), emit(c, s3);
            break;
        case 0x0B: /* memory.fill mem */
            s3 = pop_slot(c), s2 = pop_slot(c), s1 = pop_slot(c);
            if (mem_slow(c, in->a)) {
                emit_xop(c, PW_XOP_MEMORY_FILL_X);
                emit(c, in->a);
            } else {
                emit_op(c, PW_OP_MEMORY_FILL);
            }
            emit(c, s1), emit(c, s2), emit(c, s3);
            break;
        case 0x0C: /* table.init elem table */
            if (tab64(c, in->b)) clamp_index(c, c->sp - 3);
            s3 = pop_slot(c), s2 = pop_slot(c), s1 = pop_slot(c);
            emit_op(c, PW_OP_TABLE_INIT);
            emit(c, in->b), emit(c, in->a);
            emit(c, s1), emit(c, s2), emit(c, s3);
            break;
        case 0x0D:
            emit_op(c, PW_OP_ELEM_DROP);
            emit(c, in->a);
            break;
        case 0x0E: /* table.copy dst src */
            /* every i64 operand clamped: the length too when both are table64 */
            if (tab64(c, in->a)) clamp_index(c, c->sp - 3);
            if (tab64(c, in->b)) clamp_index(c, c->sp - 2);
            if (tab64(c, in->a) && tab64(c, in->b)) clamp_index(c, c->sp - 1);
            s3 = pop_slot(c), s2 = pop_slot(c), s1 = pop_slot(c);
            emit_op(c, PW_OP_TABLE_COPY);
            emit(c, in->a), emit(c, in->b);
            emit(c, s1), emit(c, s2), emit(c, s3);
            break;
        case 0x0F: { /* table.grow: init n */
            if (tab64(c, in->a)) clamp_index(c, c->sp - 1);
            s2 = pop_slot(c), s1 = pop_slot(c);
            uint32_t dst = push_stack(c, PW_VT_I32);
            emit_op(c, PW_OP_TABLE_GROW);
            emit(c, dst), emit(c, in->a), emit(c, s1), emit(c, s2);
            /* table64: the i32 result (old size or -1) sign-extended */
            if (tab64(c, in->a)) widen_top(c, PW_OP_I64_EXTEND_I32_S);
            break;
        }
        case 0x10: {
            uint32_t dst = push_stack(c, PW_VT_I32);
            emit_op(c, PW_OP_TABLE_SIZE);
            emit(c, dst), emit(c, in->a);
            if (tab64(c, in->a)) widen_top(c, PW_OP_I64_EXTEND_I32_U);
            return K_NEXT;
        }
        case 0x11: /* table.fill: i v n */
            if (tab64(c, in->a)) {
                clamp_index(c, c->sp - 3);
                clamp_index(c, c->sp - 1);
            }
            s3 = pop_slot(c), s2 = pop_slot(c), s1 = pop_slot(c);
            emit_op(c, PW_OP_TABLE_FILL);
            emit(c, in->a), emit(c, s1), emit(c, s2), emit(c, s3);
            return K_NEXT;
        }
        c->pend = false;
        return K_NEXT;
    }
    if ((op >> 8) == 0xFB) {
        if (!compile_gc(c, in)) return K_FAIL;
        return K_NEXT;
    }
    if (op >= PW_OP_FD(0) && op < PW_OP_FD(PW_FD_COUNT)) {
        compile_simd(c, in);
        return K_NEXT;
    }
    pw__fail(c->err, PW_ERR_INVALID, "unsupported instruction %x in compiler", op);
    return K_FAIL;
}

static bool compile_body(comp *c, pw_cfunc *out) {
    const pw_module *m = c->m;
    pw_reader r = {m->bytes + c->fd->body.off, m->bytes + c->fd->body.off + c->fd->body.len,
                   m->bytes, c->err};
    pw_instr fake = {0};
    fake.bt = PW_BT_EMPTY;
    if (!push_ctl(c, CT_FUNC, &fake)) return false;
    ctl *fl = &c->cs[0];
    fl->vnresults = c->ft->u.func.nresults;
    fl->results = c->ft->u.func.types + c->ft->u.func.nparams;
    fl->nresults = c->nres_cells;
    pw_instr in;
    while (c->ncs > 0 && !c->oom) {
        if (r.p >= r.end) return pw__fail(c->err, PW_ERR_MALFORMED, "unexpected end"), false;
        if (!read_instr(&r, &in)) return false;
        uint32_t op = in.op;
        ctl *cur = &c->cs[c->ncs - 1];
        if (!(op >= 0x20 && op <= 0x22) && !(op >= 0x41 && op <= 0x44)) c->lcopy_ok = false;
        if (c->bad || !imm_ok(c, &in)) {
            pw__fail(c->err, PW_ERR_INVALID, "type mismatch");
            return false;
        }
        int k;
        switch (op) {
        case 0x00: k = control_00(c, &r, &in, cur); break;
        case 0x01: k = control_01(c, &r, &in, cur); break;
        case 0x02:
        case 0x03: k = control_02(c, &r, &in, cur); break;
        case 0x04: k = control_04(c, &r, &in, cur); break;
        case 0x05: k = control_05(c, &r, &in, cur); break;
        case 0x0B: k = control_0b(c, &r, &in, cur); break;
        case 0x06: k = control_06(c, &r, &in, cur); break;
        case 0x07:
        case 0x19: k = control_07(c, &r, &in, cur); break;
        case 0x18: k = control_18(c, &r, &in, cur); break;
        case 0x09: k = control_09(c, &r, &in, cur); break;
        case 0x0C: k = control_0c(c, &r, &in, cur); break;
        case 0x0D: k = control_0d(c, &r, &in, cur); break;
        case 0x0E: k = control_0e(c, &r, &in, cur); break;
        case 0x0F: k = control_0f(c, &r, &in, cur); break;
        case 0x10: k = call_10(c, &r, &in); break;
        case 0x11: k = call_11(c, &r, &in); break;
        case 0x08: k = call_08(c, &r, &in); break;
        case 0x0A: k = call_0a(c, &r, &in); break;
        case 0x1F: k = call_1f(c, &r, &in); break;
        case 0x12: k = call_12(c, &r, &in); break;
        case 0x13:
        case 0x15: k = call_13(c, &r, &in); break;
        case 0x14: k = call_14(c, &r, &in); break;
        case 0xD3: k = var_d3(c, &in); break;
        case 0xD4: k = var_d4(c, &in); break;
        case 0xD5:
        case 0xD6: k = var_d5(c, &in); break;
        case 0x1A: k = var_1a(c, &in); break;
        case 0x1B:
        case 0x1C: k = var_1b(c, &in); break;
        case 0x20: k = var_20(c, &in); break;
        case 0x21:
        case 0x22: k = var_21(c, &in); break;
        case 0x23: k = var_23(c, &in); break;
        case 0x24: k = var_24(c, &in); break;
        case 0x25: k = var_25(c, &in); break;
        case 0x26: k = var_26(c, &in); break;
        case 0x3F: k = var_3f(c, &in); break;
        case 0x40: k = var_40(c, &in); break;
        case 0x41: k = var_41(c, &in); break;
        case 0x42: k = var_42(c, &in); break;
        case 0x43: k = var_43(c, &in); break;
        case 0x44: k = var_44(c, &in); break;
        case 0xA7:
        case 0xBC:
        case 0xBD:
        case 0xBE:
        case 0xBF: k = var_a7(c, &in); break;
        case 0xD0: k = var_d0(c, &in); break;
        case 0xD1: k = var_d1(c, &in); break;
        case 0xD2: k = var_d2(c, &in); break;
        default: k = other_instr(c, &r, &in);
        }
        if (k == K_FAIL) return false;
        if (k == K_NEXT) continue;
        /* K_DEAD: the rest of the block is unreachable: skip to its else/end. */
        {
            uint32_t closing = 0;
            cur = &c->cs[c->ncs - 1];
            cur->unreachable = true;
            c->pend = false;
            if (!skip_unreachable(&r, &closing, &in)) {
                if (!c->err->status) pw__fail(c->err, PW_ERR_MALFORMED, "unexpected end");
                return false;
            }
            if (closing == 0x05)
                k = block_else(c, cur);
            else if (closing == 0x07 || closing == 0x19)
                k = legacy_catch(c, cur, &in) ? K_NEXT : K_FAIL;
            else if (closing == 0x18)
                k = legacy_delegate(c, cur, &in) ? K_NEXT : K_FAIL;
            else
                k = block_end(c, cur);
            if (k == K_FAIL) return false;
        }
    }
    if (c->oom) return false;
    if (c->bad) {
        pw__fail(c->err, PW_ERR_INVALID, "type mismatch");
        return false;
    }
    out->ncode = c->ncode - c->fstart;
    return true;
}

static void reset(comp *c) {
    c->nds = 0;
    c->sp = c->maxsp = 0;
    c->lazy_lo = 0;
    c->ncs = 0;
    c->nfx = 0;
    c->fstart = c->ncode;
    c->pend = false;
    c->lcopy_ok = false;
}

/* ---------------------------------------------------------------- compiling on first use */

/* The compiler's lock and reusable state, one per module (pw_cmodule.lock). */
struct pw_compile_lock {
    pthread_mutex_t mu;
    comp c;
    pw_valtype *ltypes; /* per cell of the current function's locals */
    uint32_t capl;
};

/* Room for the code of a body of len bytes in its slot: about twice what real code
 * takes (Ruby: 0.96 words per byte). The bound is not a proof (a long run of br_if
 * with many values to move can exceed it): such a function gets its own allocation. */
static uint64_t slot_words(uint32_t len) {
    return (uint64_t)len * 2 + 16;
}

/* Forget the current function's code (freed unless in its slot). */
static void drop_code(comp *c) {
    if (!c->in_slot) free(c->code);
    c->code = NULL;
    c->capcode = 0;
}

/* Take defined function i's internal code from cm's adopted saved code (icode.h)
 * into its slot, or its own allocation when it does not fit there, as compile_one
 * would have placed it, and publish it. False when there is no usable record or
 * memory runs out (then the body is compiled). Caller holds the lock. */
static bool restore_one(struct pw_cmodule *cm, uint32_t i) {
    const pw_icode *ic = atomic_load_explicit(&cm->icode, memory_order_acquire);
    pw_cfunc *cf = &cm->funcs[i];
    pw_icode_rec r;
    if (!ic || !pw__icode_get(ic, i, cf, &r)) return false;
    const pw_funcdef *fd = &cm->lock->c.m->funcs[i];
    bool in_slot = cm->code && r.ncode <= slot_words(fd->body.len) - 1;
    uint32_t *code = in_slot ? cm->code + cf->slot : malloc((size_t)r.ncode * 4);
    pw_handler *hs = r.nhandlers ? malloc((size_t)r.nhandlers * sizeof *hs) : NULL;
    pw_gcsite *sites = r.gc_nsites ? malloc((size_t)r.gc_nsites * sizeof *sites) : NULL;
    uint32_t *maps = r.gc_nmaps ? malloc((size_t)r.gc_nmaps * 4) : NULL;
    if (!code || (r.nhandlers && !hs) || (r.gc_nsites && !sites) || (r.gc_nmaps && !maps)) {
        if (!in_slot) free(code);
        free(hs);
        free(sites);
        free(maps);
        return false;
    }
    memcpy(code, r.code, (size_t)r.ncode * 4);
    if (hs) memcpy(hs, r.handlers, (size_t)r.nhandlers * sizeof *hs);
    if (sites) memcpy(sites, r.sites, (size_t)r.gc_nsites * sizeof *sites);
    if (maps) memcpy(maps, r.maps, (size_t)r.gc_nmaps * 4);
    cf->ncode = r.ncode;
    cf->handlers = hs;
    cf->nhandlers = r.nhandlers;
    cf->frame_slots = r.frame_slots;
    cf->gc_sites = sites;
    cf->gc_nsites = r.gc_nsites;
    cf->gc_maps = maps;
    cf->nozero = r.nozero;
    cm->restored++;
    __atomic_store_n(&cf->code, code, __ATOMIC_RELEASE); /* publishes every field above */
    return true;
}

/* Compile defined function i of c->m into its slot (or, when it outgrows it, its own
 * allocation) and publish it; from the saved internal code when cm has it
 * (restore_one). Caller holds the lock (or owns cm alone). False with err set on
 * failure (cf stays uncompiled). */
static bool compile_one(struct pw_compile_lock *lk, struct pw_cmodule *cm, uint32_t i,
                        pw_error *err) {
    if (restore_one(cm, i)) return true;
    comp *c = &lk->c;
    const pw_module *m = c->m;
    pw_cfunc *cf = &cm->funcs[i];
    const pw_funcdef *fd = &m->funcs[i];
    const pw_deftype *ft = &m->types[fd->type];
    uint32_t vnp = ft->u.func.nparams, nv = vnp + fd->nlocals;
    uint32_t nl = cf->nlocals;
    c->err = err;
    c->oom = c->bad = false;
    c->ncode = 0;
    c->nhs = 0;
    uint64_t cap = slot_words(fd->body.len);
    /* compiled in place; a body that needs the whole slot moves to the heap (so code
     * inside a slot always ends strictly before the next one: a return pc at its end
     * still maps to it) */
    c->in_slot = cm->code != NULL;
    c->code = c->in_slot ? cm->code + cf->slot : NULL;
    c->capcode = c->in_slot ? (uint32_t)cap - 1 : 0;
    c->gc_nsites = c->gc_nmaps = 0;
    c->gc_lfunc = 0;
    if (!grow((void **)&lk->ltypes, &lk->capl, nl + 1, sizeof *lk->ltypes) ||
        !grow((void **)&c->lmap, &c->caplmap, nv + 1, sizeof *c->lmap) ||
        !grow((void **)&c->lrefs, &c->caplrefs, nl + 1, sizeof *c->lrefs) ||
        !grow((void **)&c->written, &c->capwritten, nl + 1, 1))
        return drop_code(c), pw__fail(err, PW_ERR_NOMEM, "out of memory"), false;
    pw_valtype *ltypes = lk->ltypes;
    for (uint32_t v = 0, k = 0; v < nv; v++) {
        pw_valtype t = v < vnp ? ft->u.func.types[v] : fd->locals[v - vnp];
        c->lmap[v] = k;
        ltypes[k++] = t;
        if (t == PW_VT_V128) ltypes[k++] = t;
    }
    /* Modules with memory get one hidden local that stays zero (constant addresses,
     * see const_addr). */
    if (m->nmems > 0) ltypes[nl - 1] = PW_VT_I32;
    c->nvlocals = nv;
    c->nparam_cells = cf->nparams;
    c->nres_cells = cf->nresults;
    c->zero_slot = m->nmems > 0 ? nl - 1 : UINT32_MAX;
    reset(c);
    c->fd = fd;
    c->ft = ft;
    c->nlocals = nl;
    c->local_types = ltypes;
    memset(c->lrefs, 0, (nl + 1) * sizeof *c->lrefs);
    memset(c->written, 0, nl + 1);
    c->prefix = true;
    da_begin(c);
    pw_cfunc out = *cf;
    if (!compile_body(c, &out)) {
        drop_code(c);
        if (c->oom) return pw__fail(err, PW_ERR_NOMEM, "out of memory"), false;
        if (err->status == PW_OK) pw__fail(err, PW_ERR_INVALID, "compile failed");
        return false;
    }
    pw_handler *hs = c->nhs ? malloc(c->nhs * sizeof *hs) : NULL;
    pw_gcsite *sites = c->gc_nsites ? malloc(c->gc_nsites * sizeof *sites) : NULL;
    uint32_t *maps = c->gc_nmaps ? malloc(c->gc_nmaps * sizeof *maps) : NULL;
    if ((c->nhs && !hs) || (c->gc_nsites && !sites) || (c->gc_nmaps && !maps)) {
        drop_code(c);
        free(hs);
        free(sites);
        free(maps);
        return pw__fail(err, PW_ERR_NOMEM, "out of memory"), false;
    }
    uint32_t *dst = c->code; /* the function keeps it */
    c->code = NULL;
    c->capcode = 0;
    if (hs) memcpy(hs, c->hs, c->nhs * sizeof *hs);
    if (sites) memcpy(sites, c->gc_sites, c->gc_nsites * sizeof *sites);
    if (maps) memcpy(maps, c->gc_maps, c->gc_nmaps * sizeof *maps);
    cf->ncode = out.ncode;
    cf->handlers = hs;
    cf->nhandlers = c->nhs;
    cf->frame_slots = nl + c->maxsp + 1;
    cf->gc_sites = sites;
    cf->gc_nsites = c->gc_nsites;
    cf->gc_maps = maps;
    cf->nozero = ~c->zneed;
    __atomic_store_n(&cf->code, dst, __ATOMIC_RELEASE); /* publishes every field above */
    return true;
}

bool pw__compile_lazy(const pw_module *m, const pw_cfunc *cfc) {
    struct pw_cmodule *cm = m->code;
    struct pw_compile_lock *lk = cm->lock;
    uint32_t i = (uint32_t)(cfc - cm->funcs);
    if (!lk) return pw__cfunc_ready(cfc);
    pthread_mutex_lock(&lk->mu);
    bool ok = true;
    if (!pw__cfunc_ready(cfc)) {
        pw_error err = {0};
        ok = compile_one(lk, cm, i, &err);
    }
    pthread_mutex_unlock(&lk->mu);
    return ok;
}

bool pw__compile_adopt(struct pw_cmodule *cm, const uint8_t *sec, size_t bytes, void *map,
                       size_t maplen) {
    struct pw_compile_lock *lk = cm->lock;
    pw_icode *ic = lk ? malloc(sizeof *ic) : NULL;
    if (!ic) return false;
    *ic = (pw_icode){.ent = (const uint32_t *)(const void *)sec,
                     .words = (const uint32_t *)(const void *)sec + 2 * (size_t)cm->nfuncs,
                     .nwords = bytes / 4 - 2 * (size_t)cm->nfuncs,
                     .map = map,
                     .maplen = maplen};
    pthread_mutex_lock(&lk->mu);
    bool took = atomic_load_explicit(&cm->icode, memory_order_relaxed) == NULL;
    if (took) atomic_store_explicit(&cm->icode, ic, memory_order_release);
    pthread_mutex_unlock(&lk->mu);
    if (!took) free(ic);
    return took;
}

const pw_cfunc *pw__cfunc_at(const struct pw_cmodule *cm, const uint32_t *pc) {
    if (cm->code && pc >= cm->code && pc < cm->code + cm->nslot) {
        /* the function whose slot holds pc: the last slot starting at or before it */
        uint32_t off = (uint32_t)(pc - cm->code), lo = 0, hi = cm->nfuncs;
        while (hi - lo > 1) {
            uint32_t mid = (lo + hi) / 2;
            if (cm->funcs[mid].slot <= off)
                lo = mid;
            else
                hi = mid;
        }
        return &cm->funcs[lo];
    }
    /* code outside the slots: rare (see slot_words), so a scan */
    for (uint32_t i = 0; i < cm->nfuncs; i++) {
        const pw_cfunc *cf = &cm->funcs[i];
        const uint32_t *code = __atomic_load_n(&cf->code, __ATOMIC_ACQUIRE);
        if (code && pc >= code && pc <= code + cf->ncode) return cf;
    }
    return &cm->funcs[0]; /* not reached: pc is always some function's */
}

/* A small module, every function compiled (each in its own block: cm->code is NULL):
 * move all the code into one array, each function's slot just past the previous
 * one's code and a padding word (a return pc at a function's end stays in its slot).
 * Deterministic like the slots of a big module: the same module packs the same. */
static bool pack(struct pw_cmodule *cm) {
    size_t total = 0;
    for (uint32_t i = 0; i < cm->nfuncs; i++)
        total += (size_t)cm->funcs[i].ncode + 1;
    uint32_t *a = malloc(total * sizeof *a);
    if (!a) return false;
    size_t at = 0;
    for (uint32_t i = 0; i < cm->nfuncs; i++) {
        pw_cfunc *cf = &cm->funcs[i];
        memcpy(a + at, cf->code, (size_t)cf->ncode * sizeof *a);
        a[at + cf->ncode] = 0;
        free(cf->code);
        cf->code = a + at; /* not shared yet: no store has the module */
        cf->slot = (uint32_t)at;
        at += (size_t)cf->ncode + 1;
    }
    cm->code = a;
    cm->nslot = total;
    cm->packed = true;
    return true;
}

static void lock_free(struct pw_compile_lock *lk) {
    if (!lk) return;
    comp *c = &lk->c;
    free(c->st);
    free(c->cs);
    free(c->fx);
    free(c->lrefs);
    free(c->written);
    free(c->lmap);
    free(c->hs);
    free(c->ds);
    free(c->gc_sites);
    free(c->gc_maps);
    free(lk->ltypes);
    pthread_mutex_destroy(&lk->mu);
    free(lk);
}

pw_status pw__compile_module(pw_module *m, bool eager, pw_error *err) {
    struct pw_cmodule *cm = calloc(1, sizeof *cm);
    if (!cm) return pw__fail(err, PW_ERR_NOMEM, "out of memory");
    atomic_init(&cm->tier_calls, 0);
    atomic_init(&cm->tier_state, 0);
    atomic_init(&cm->icode, NULL);
    uint32_t nd = m->nfuncs - m->nfunc_imports;
    cm->nfuncs = nd;
    cm->funcs = calloc(nd ? nd : 1, sizeof *cm->funcs);
    if (!cm->funcs) {
        free(cm);
        return pw__fail(err, PW_ERR_NOMEM, "out of memory");
    }
    /* Not implemented: v128 fields of struct and array types (their layouts have no
     * 16-byte kind). Such a module is refused as a whole rather than run wrongly. */
    for (uint32_t i = 0; i < m->ntypes; i++) {
        const pw_deftype *t = &m->types[i];
        bool v = t->form == PW_FORM_ARRAY && t->u.array.type == PW_VT_V128;
        for (uint32_t j = 0; t->form == PW_FORM_STRUCT && j < t->u.strct.nfields; j++)
            v = v || t->u.strct.fields[j].type == PW_VT_V128;
        if (v) {
            free(cm->funcs);
            free(cm);
            return pw__fail(err, PW_ERR_INVALID,
                            "v128 fields in struct and array types are not supported");
        }
    }
    /* What is known before compiling: frames' locals, types and the slots. */
    uint64_t slots = 0, body = 0;
    for (uint32_t i = 0; i < nd; i++) {
        const pw_funcdef *fd = &m->funcs[i];
        const pw_deftype *ft = &m->types[fd->type];
        pw_cfunc *cf = &cm->funcs[i];
        uint32_t vnp = ft->u.func.nparams;
        cf->nparams = ncells(ft->u.func.types, vnp);
        cf->nresults = ncells(ft->u.func.types + vnp, ft->u.func.nresults);
        /* a v128 local takes two cells (simd.h); modules with memory get one hidden
         * local that stays zero (const_addr) */
        cf->nlocals = cf->nparams + ncells(fd->locals, fd->nlocals) + (m->nmems > 0);
        cf->type = fd->type;
        cf->index = i;
        cf->slot = (uint32_t)slots;
        slots += slot_words(fd->body.len);
        body += fd->body.len;
        if (slots > UINT32_MAX / 2) {
            free(cm->funcs);
            free(cm);
            return pw__fail(err, PW_ERR_INVALID, "implementation limit: code section too large");
        }
    }
    cm->nslot = (size_t)slots;
    cm->ncode = (size_t)body; /* real code: about a word per body byte (Ruby 0.96) */
    /* A small module (`peri run hello.wasm`) is compiled at once and packed (pack):
     * its compile costs microseconds, and slots would spread its code over 3x the
     * pages. */
    bool small = slots <= PW_COMPILE_SMALL_WORDS;
    if (small) eager = true;
    if (slots && !small) {
        /* address space only: pages are committed as functions are compiled */
        void *p = mmap(NULL, cm->nslot * 4, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        cm->code = p == MAP_FAILED ? NULL : p; /* none: every function in its own block */
    }
    struct pw_compile_lock *lk = calloc(1, sizeof *lk);
    if (!lk || pthread_mutex_init(&lk->mu, NULL) != 0) {
        free(lk);
        pw__compile_free(cm);
        return pw__fail(err, PW_ERR_NOMEM, "out of memory");
    }
    cm->lock = lk;
    lk->c.m = m;
    lk->c.h = pw__interp_handlers();
    if (!pw__gc_build_layouts(m, cm)) {
        pw__compile_free(cm);
        return pw__fail(err, PW_ERR_NOMEM, "out of memory");
    }
    lk->c.gc_layouts = cm->gc_layouts;
    for (uint32_t i = 0; eager && i < nd; i++)
        if (!compile_one(lk, cm, i, err)) {
            pw_status st = err->status;
            pw__compile_free(cm);
            return st;
        }
    if (small && nd && !pack(cm)) {
        pw__compile_free(cm);
        return pw__fail(err, PW_ERR_NOMEM, "out of memory");
    }
    cm->jit = pw__jit_module_new(cm); /* NULL (OOM): every function stays interpreted */
    m->code = cm;
    return PW_OK;
}

void pw__compile_free(struct pw_cmodule *code) {
    if (!code) return;
    pw__tier_free(code);            /* first: a background translation reads all of it (tier.c) */
    pw__jit_module_free(code->jit); /* next: it may save what was translated (jit.c) */
    for (uint32_t i = 0; i < code->nfuncs; i++) {
        pw_cfunc *cf = &code->funcs[i];
        if (cf->code &&
            !(code->code && cf->code >= code->code && cf->code < code->code + code->nslot))
            free(cf->code);
        free(cf->handlers);
        free(cf->gc_sites);
        free(cf->gc_maps);
    }
    if (code->packed)
        free(code->code);
    else if (code->code)
        munmap(code->code, code->nslot * 4);
    lock_free(code->lock);
    pw_icode *ic = atomic_load_explicit(&code->icode, memory_order_relaxed);
    if (ic) {
        munmap(ic->map, ic->maplen);
        free(ic);
    }
    free(code->funcs);
    pw__gc_free_layouts(code);
    free(code);
}
