/*
 * instance.c — instantiation: import resolution and matching, creation of the
 * module's functions, globals, tables and memories, constant-expression evaluation,
 * element and data segment initialisation (in order, effects persisting on a trap),
 * the start function; and export lookup.
 */
#include "wasm/gc.h"
#include "wasm/instr.h"
#include "wasm/jit/jit.h"
#include "wasm/runtime.h"
#include "wasm/simd.h"

#include <stdlib.h>
#include <string.h>

/* The extended constant arithmetic: i32 (0x6A..0x6C) and i64 (0x7C..0x7E) add, sub and
 * mul. The low 32 bits of a 64-bit add, sub or mul depend only on the operands' low 32
 * bits, so one 64-bit operation serves both widths. */
static bool is_const_arith(uint32_t op) {
    return (op >= 0x6A && op <= 0x6C) || (op >= 0x7C && op <= 0x7E);
}
static void const_arith(uint32_t op, pw_slot *a, pw_slot b) {
    uint64_t x = a->u64, y = b.u64;
    uint64_t r = (op == 0x6A || op == 0x7C) ? x + y : (op == 0x6B || op == 0x7D) ? x - y : x * y;
    if (op <= 0x6C)
        a->u32 = (uint32_t)r;
    else
        a->u64 = r;
}

/* Evaluates a constant expression into out[0] (and out[1]: the high half of a v128,
 * which takes two cells); *ncells is 1 or 2. Validation guarantees its shape and
 * types. */
static bool eval_const(pw_instance *inst, pw_span expr, pw_slot out[2], uint32_t *ncells,
                       pw_error *err) {
    const pw_module *m = inst->mod;
    pw_reader r = {m->bytes + expr.off, m->bytes + expr.off + expr.len, m->bytes, err};
    pw_slot st[64];
    uint32_t sp = 0;
    pw_instr in;
    while (r.p < r.end) {
        memset(&in, 0, sizeof in);
        if (!pw__instr_read(&r, &in)) return false;
        if (in.op == 0x0B) break;
        if (is_const_arith(in.op)) { /* pops two, pushes one: never deeper */
            sp--;
            const_arith(in.op, &st[sp - 1], st[sp]);
            continue;
        }
        if (sp >= 64) {
            pw__fail(err, PW_ERR_INVALID, "constant expression too deep");
            return false;
        }
        switch (in.op) {
        case 0x41: st[sp++].u64 = (uint32_t)in.bits; break;
        case 0x42:
        case 0x43:
        case 0x44: st[sp++].u64 = in.bits; break;
        case 0xD0: st[sp++].ref = PW_NULL_REF; break;
        case 0xD2: st[sp++].ref = (pw_ref)inst->funcs[in.a]; break;
        case 0x23:
            st[sp++] = inst->globals[in.a]->val;
            if (inst->globals[in.a]->type == PW_VT_V128 && sp < 64)
                st[sp++].u64 = inst->globals[in.a]->hi;
            break;
        case PW_OP_FD(0x0C): /* v128.const: two cells */
            if (sp + 2 > 64) break;
            memcpy(&st[sp++].u64, in.vec, 8);
            memcpy(&st[sp++].u64, in.vec + 8, 8);
            break;
        default: {
            int g = pw__gc_const_op(inst, &in, st, &sp, err); /* Wasm 3.0 GC: gc_api.c */
            if (g < 0) return false;
            if (g > 0) break;
            pw__fail(err, PW_ERR_INVALID, "constant expression required");
            return false;
        }
        }
    }
    if (sp != 1 && sp != 2) {
        pw__fail(err, PW_ERR_INVALID, "type mismatch");
        return false;
    }
    out[0] = st[0];
    out[1] = sp == 2 ? st[1] : (pw_slot){.u64 = 0};
    *ncells = sp;
    return true;
}

bool pw__eval_const(pw_instance *inst, pw_span expr, pw_slot *out, pw_error *err) {
    pw_slot v[2];
    uint32_t n;
    if (!eval_const(inst, expr, v, &n, err)) return false;
    if (n != 1) {
        pw__fail(err, PW_ERR_INVALID, "type mismatch");
        return false;
    }
    *out = v[0];
    return true;
}

static bool limits_match(uint64_t have_min, uint64_t have_max, const pw_limits *want) {
    if (have_min < want->min) return false;
    if (want->max != UINT64_MAX && (have_max == UINT64_MAX || have_max > want->max)) return false;
    return true;
}

/* Type equivalence across modules (mutable globals, tables): subtyping both ways. */
static bool valtype_eq(const pw_module *ma, pw_valtype a, const pw_module *mb, pw_valtype b) {
    return pw__valtype_sub_cross(ma, a, mb, b) && pw__valtype_sub_cross(mb, b, ma, a);
}

static pw_status unlinkable(pw_error *err, const pw_module *m, const pw_import *imp,
                            const char *what) {
    return pw__fail(err, PW_ERR_UNLINKABLE, "%s: %.*s.%.*s", what, (int)imp->module.len,
                    (const char *)m->bytes + imp->module.off, (int)imp->name.len,
                    (const char *)m->bytes + imp->name.off);
}

/* Does the resolved extern ex (of the import's kind) match import imp's type? */
static bool import_matches(const pw_instance *inst, const pw_import *imp, const pw_extern *ex) {
    const pw_module *m = inst->mod;
    switch (imp->kind) {
    case PW_EXTERN_FUNC:
        return ex->u.func->hdr.type_id == inst->type_ids[imp->u.func_type] ||
               pw__func_type_sub(ex->u.func, m, imp->u.func_type);
    case PW_EXTERN_TABLE: {
        const pw_table *t = ex->u.table;
        return t->is64 == imp->u.table.lim.is64 &&
               valtype_eq(t->tmod, t->elem, m, imp->u.table.elem) &&
               limits_match(t->size, t->max, &imp->u.table.lim);
    }
    case PW_EXTERN_MEMORY: {
        const pw_memory *mem = ex->u.memory;
        return mem->is64 == imp->u.memory.is64 &&
               limits_match(mem->size >> 16, mem->max_pages, &imp->u.memory);
    }
    case PW_EXTERN_GLOBAL: {
        const pw_global *g = ex->u.global;
        return g->mut == imp->u.global.mut &&
               (g->mut ? valtype_eq(g->tmod, g->type, m, imp->u.global.type)
                       : pw__valtype_sub_cross(g->tmod, g->type, m, imp->u.global.type));
    }
    case PW_EXTERN_TAG: return ex->u.tag->hdr.type_id == inst->type_ids[imp->u.tag_type];
    }
    return false;
}

static pw_status link_imports(pw_instance *inst, pw_resolve_fn resolve, void *ctx, pw_error *err) {
    const pw_module *m = inst->mod;
    pw_store *s = inst->store;
    uint32_t nf = 0, nt = 0, nm = 0, ng = 0, ntag = 0;
    for (uint32_t i = 0; i < m->nimports; i++) {
        const pw_import *imp = &m->imports[i];
        pw_import_desc d = {(const char *)m->bytes + imp->module.off,
                            (const char *)m->bytes + imp->name.off,
                            imp->module.len,
                            imp->name.len,
                            imp->kind,
                            i};
        pw_extern ex;
        memset(&ex, 0, sizeof ex);
        if (!resolve || !resolve(ctx, s, m, &d, &ex))
            return unlinkable(err, m, imp, "unknown import");
        if (ex.kind != imp->kind || !ex.u.func || !import_matches(inst, imp, &ex))
            return unlinkable(err, m, imp, "incompatible import type");
        switch (imp->kind) {
        case PW_EXTERN_FUNC: inst->funcs[nf++] = ex.u.func; break;
        case PW_EXTERN_TABLE: inst->tables[nt++] = ex.u.table; break;
        case PW_EXTERN_MEMORY: inst->mems[nm++] = ex.u.memory; break;
        case PW_EXTERN_GLOBAL: inst->globals[ng++] = ex.u.global; break;
        case PW_EXTERN_TAG: inst->tags[ntag++] = ex.u.tag; break;
        }
    }
    return PW_OK;
}

static pw_status nomem(pw_error *err) {
    return pw__fail(err, PW_ERR_NOMEM, "out of memory");
}

static pw_status alloc_arrays(pw_instance *inst) {
    const pw_module *m = inst->mod;
#define ALLOC(field, n) (inst->field = calloc((n) ? (n) : 1, sizeof *inst->field))
    if (!ALLOC(funcs, m->nfuncs) || !ALLOC(tables, m->ntables) || !ALLOC(mems, m->nmems) ||
        !ALLOC(globals, m->nglobals) || !ALLOC(tags, m->ntags) || !ALLOC(type_ids, m->ntypes) ||
        !ALLOC(elem_refs, m->nelems) || !ALLOC(elem_len, m->nelems) ||
        !ALLOC(data_dropped, m->ndatas))
        return PW_ERR_NOMEM;
#undef ALLOC
    return PW_OK;
}

static pw_status register_types(pw_instance *inst) {
    const pw_module *m = inst->mod;
    for (uint32_t i = 0; i < m->ntypes; i++) {
        /* Equivalent types of one module share their canonical representative. */
        uint32_t c = m->types[i].canon;
        if (c < i) {
            inst->type_ids[i] = inst->type_ids[c];
            continue;
        }
        bool oom = false;
        inst->type_ids[i] = pw__store_type_id_mod(inst->store, m, i, &oom);
        if (oom) return PW_ERR_NOMEM;
    }
    return PW_OK;
}

/* Evaluates every element segment's references; when `apply`, also runs the active
 * segments (a snapshot instance has their effects already). */
static pw_status init_segments(pw_instance *inst, bool apply, pw_error *err) {
    const pw_module *m = inst->mod;
    pw_store *s = inst->store;
    /* Evaluate every element segment's references first (they are constant). */
    for (uint32_t k = 0; k < m->nelems; k++) {
        const pw_elem *e = &m->elems[k];
        pw_ref *refs = calloc(e->count ? e->count : 1, sizeof *refs); /* GC roots */
        if (!refs) return nomem(err);
        inst->elem_refs[k] = refs;
        inst->elem_len[k] = e->count;
        for (uint32_t j = 0; j < e->count; j++) {
            if (!e->exprs) {
                refs[j] = (pw_ref)inst->funcs[e->funcs[j]];
            } else {
                pw_slot v;
                if (!pw__eval_const(inst, e->exprs[j], &v, err)) return err->status;
                refs[j] = v.ref;
            }
        }
    }
    if (!apply) return PW_OK;
    for (uint32_t k = 0; k < m->nelems; k++) {
        const pw_elem *e = &m->elems[k];
        if (e->mode == PW_SEG_ACTIVE) {
            pw_slot off;
            if (!pw__eval_const(inst, e->offset, &off, err)) return err->status;
            pw_table *t = inst->tables[e->table];
            uint64_t o = t->is64 ? off.u64 : off.u32;
            if (o > t->size || e->count > t->size - o) return pw__trap(err, PW_TRAP_TABLE_OOB);
            if (e->count) memcpy(t->elems + o, inst->elem_refs[k], e->count * sizeof(pw_ref));
            inst->elem_len[k] = 0;
        } else if (e->mode == PW_SEG_DECLARATIVE) {
            inst->elem_len[k] = 0;
        }
    }
    for (uint32_t k = 0; k < m->ndatas; k++) {
        const pw_data *d = &m->datas[k];
        if (d->mode != PW_SEG_ACTIVE) continue;
        pw_slot off;
        if (!pw__eval_const(inst, d->offset, &off, err)) return err->status;
        pw_memory *mem = inst->mems[d->memory];
        uint64_t o = mem->is64 ? off.u64 : off.u32;
        if (o > mem->size || d->bytes.len > mem->size - o) return pw__trap(err, PW_TRAP_MEM_OOB);
        if (d->bytes.len) memcpy(mem->data + o, m->bytes + d->bytes.off, d->bytes.len);
        inst->data_dropped[k] = 1;
    }
    (void)s;
    return PW_OK;
}

/* pw_instantiate and pw_instantiate_snapshot (snap != NULL: state from the snapshot,
 * no segment initialisation, no start function). */
static pw_instance *instantiate(pw_store *s, const pw_module *m, const pw_snapshot *snap,
                                pw_resolve_fn resolve, void *ctx, pw_error *err) {
    pw_error local;
    if (!err) err = &local;
    pw_instance *inst = pw__store_alloc_obj(s, sizeof *inst, PW_OBJ_INSTANCE);
    if (!inst) {
        nomem(err);
        return NULL;
    }
    inst->mod = m;
    inst->store = s;
    for (uint32_t k = 0; k < PW_IC_CELLS; k++)
        inst->ic[k].type = UINT32_MAX;
    if (alloc_arrays(inst) || register_types(inst)) {
        nomem(err);
        return NULL;
    }
    if (link_imports(inst, resolve, ctx, err)) return NULL;
    for (uint32_t i = m->nfunc_imports; i < m->nfuncs; i++) {
        inst->funcs[i] = pw__func_create_wasm(s, inst, i);
        if (!inst->funcs[i]) {
            nomem(err);
            return NULL;
        }
        /* Eager JIT compilation (store option): every function now, not at its first
         * call. A function the JIT does not translate stays interpreted either way. */
        if (s->jit_on && s->cfg.jit_eager) pw__jit_prepare(s, inst->funcs[i]);
    }
    for (uint32_t i = m->nglobal_imports; i < m->nglobals; i++) {
        const pw_global_def *gd = &m->globals[i];
        pw_global *g = pw__store_alloc_obj(s, sizeof *g, PW_OBJ_GLOBAL);
        if (!g) {
            nomem(err);
            return NULL;
        }
        g->type = gd->type.type;
        g->mut = gd->type.mut;
        g->tmod = m;
        pw_slot v[2];
        uint32_t n;
        if (!eval_const(inst, gd->init, v, &n, err)) return NULL;
        if (n != (g->type == PW_VT_V128 ? 2u : 1u)) {
            pw__fail(err, PW_ERR_INVALID, "type mismatch");
            return NULL;
        }
        g->val = v[0];
        g->hi = v[1].u64;
        inst->globals[i] = g;
    }
    for (uint32_t i = m->ntable_imports; i < m->ntables; i++) {
        const pw_table_def *td = &m->tables[i];
        pw_slot init = {.ref = PW_NULL_REF};
        if (td->init.len && !pw__eval_const(inst, td->init, &init, err)) return NULL;
        uint64_t min = td->type.lim.min;
        pw_table *t = min > UINT32_MAX ? NULL
                                       : pw__table_create(s, td->type.elem, m, (uint32_t)min,
                                                          td->type.lim.max, init.ref);
        if (!t) {
            pw__fail(err, PW_ERR_OOM, "table allocation failed or over the store's cap");
            return NULL;
        }
        t->is64 = td->type.lim.is64;
        inst->tables[i] = t;
    }
    for (uint32_t i = m->nmem_imports; i < m->nmems; i++) {
        /* From a snapshot the contents are mapped in afterwards: start empty. */
        pw_memory *mem =
            pw__memory_create(s, snap ? 0 : m->mems[i].min, m->mems[i].max, m->mems[i].is64);
        if (!mem) {
            pw__fail(err, PW_ERR_OOM, "memory allocation failed or over the store's cap");
            return NULL;
        }
        inst->mems[i] = mem;
    }
    inst->mem0 = m->nmems ? inst->mems[0] : s->empty_mem;
    for (uint32_t i = m->ntag_imports; i < m->ntags; i++) {
        pw_tag *tg = pw__store_alloc_obj(s, sizeof *tg, PW_OBJ_TAG);
        if (!tg) {
            nomem(err);
            return NULL;
        }
        tg->tmod = m;
        tg->type = m->tag_types[i];
        /* payload cells: a v128 takes two */
        tg->nparams = m->types[tg->type].u.func.nparams;
        for (uint32_t k = 0; k < m->types[tg->type].u.func.nparams; k++)
            tg->nparams += m->types[tg->type].u.func.types[k] == PW_VT_V128;
        tg->hdr.type_id = inst->type_ids[tg->type];
        inst->tags[i] = tg;
    }
    if (init_segments(inst, !snap, err)) return NULL;
    if (snap) {
        if (!pw__snapshot_apply(inst, snap, err)) return NULL;
        err->status = PW_OK;
        return inst;
    }
    if (m->start != UINT32_MAX) {
        if (pw_call(s, inst->funcs[m->start], NULL, 0, NULL, 0, err) != PW_OK) return NULL;
    }
    err->status = PW_OK;
    return inst;
}

pw_instance *pw_instantiate(pw_store *s, const pw_module *m, pw_resolve_fn resolve, void *ctx,
                            pw_error *err) {
    return instantiate(s, m, NULL, resolve, ctx, err);
}

pw_instance *pw_instantiate_snapshot(pw_store *s, const pw_module *m, const pw_snapshot *snap,
                                     pw_resolve_fn resolve, void *ctx, pw_error *err) {
    pw_error local;
    if (!err) err = &local;
    if (!snap || !pw__snapshot_matches(snap, m)) {
        pw__fail(err, PW_ERR_ARG, "snapshot was taken from another module");
        return NULL;
    }
    return instantiate(s, m, snap, resolve, ctx, err);
}

bool pw_instance_export(pw_instance *inst, const char *name, size_t name_len, pw_extern *out) {
    const pw_export *e = pw__export_find(inst->mod, name, name_len);
    if (!e) return false;
    out->kind = e->kind;
    switch (e->kind) {
    case PW_EXTERN_FUNC: out->u.func = inst->funcs[e->index]; break;
    case PW_EXTERN_TABLE: out->u.table = inst->tables[e->index]; break;
    case PW_EXTERN_MEMORY: out->u.memory = inst->mems[e->index]; break;
    case PW_EXTERN_GLOBAL: out->u.global = inst->globals[e->index]; break;
    case PW_EXTERN_TAG: out->u.tag = inst->tags[e->index]; break;
    }
    return true;
}

const pw_module *pw_instance_module(const pw_instance *inst) {
    return inst->mod;
}
