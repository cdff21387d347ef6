/*
 * gc_api.c — the embedder's view of the GC heap (peri/wasm.h): host handles, i31,
 * allocation and reading of structs and arrays of module-defined types, statistics;
 * and the GC instructions of constant expressions (instantiation).
 */
#include "wasm/gc.h"
#include "wasm/instr.h"

#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------- handles */

/* A free handle cell holds FREE_BIT | (next free index << 1) | 1: the collector's root
 * scan skips it like an i31, and no i31 has bit 63 set. */
#define FREE_BIT ((pw_ref)1 << (sizeof(pw_ref) * 8 - 1))
pw_handle pw_handle_new(pw_store *s, pw_ref r, pw_error *err) {
    uint32_t i;
    if (s->free_handle) {
        i = s->free_handle - 1;
        s->free_handle = (uint32_t)((s->handles[i] & ~FREE_BIT) >> 1);
    } else {
        if (s->nhandles == s->caphandles) {
            uint32_t nc = s->caphandles ? s->caphandles * 2 : 64;
            pw_ref *nh = realloc(s->handles, nc * sizeof *nh);
            if (!nh) {
                pw__fail(err, PW_ERR_NOMEM, "out of memory");
                return 0;
            }
            s->handles = nh;
            s->caphandles = nc;
        }
        i = s->nhandles++;
    }
    s->handles[i] = r;
    return i + 1;
}

static bool handle_ok(const pw_store *s, pw_handle h) {
    return h && h <= s->nhandles && !(s->handles[h - 1] & FREE_BIT);
}

pw_ref pw_handle_get(const pw_store *s, pw_handle h) {
    return handle_ok(s, h) ? s->handles[h - 1] : PW_NULL_REF;
}

void pw_handle_set(pw_store *s, pw_handle h, pw_ref r) {
    if (handle_ok(s, h)) s->handles[h - 1] = r;
}

void pw_handle_free(pw_store *s, pw_handle h) {
    if (!handle_ok(s, h)) return;
    s->handles[h - 1] = FREE_BIT | ((pw_ref)s->free_handle << 1) | 1;
    s->free_handle = h;
}

/* ---------------------------------------------------------------- kinds, i31 */

pw_ref_kind pw_ref_kind_of(pw_ref r) {
    if (!r) return PW_REF_NULL;
    if (r & 1) return PW_REF_I31;
    switch (((const pw_obj *)r)->kind) {
    case PW_OBJ_STRUCT: return PW_REF_STRUCT;
    case PW_OBJ_ARRAY: return PW_REF_ARRAY;
    case PW_OBJ_FUNC: return PW_REF_FUNC;
    case PW_OBJ_EXN: return PW_REF_EXN;
    default: return PW_REF_EXTERN;
    }
}

pw_ref pw_i31_new(uint32_t v) {
    return ((pw_ref)(v & 0x7fffffffu) << 1) | 1u;
}

int32_t pw_i31_get_s(pw_ref r) {
    return (int32_t)((uint32_t)(r >> 1) << 1) >> 1;
}

uint32_t pw_i31_get_u(pw_ref r) {
    return (uint32_t)(r >> 1) & 0x7fffffffu;
}

/* ---------------------------------------------------------------- allocation */

static const pw_gclayout *host_layout(pw_instance *inst, uint32_t ti, uint8_t form, pw_error *err) {
    const pw_module *m = inst ? inst->mod : NULL;
    if (!m || ti >= m->ntypes || m->types[ti].form != form) {
        pw__fail(err, PW_ERR_ARG, "type %u is not a %s type of the instance's module", ti,
                 form == PW_FORM_STRUCT ? "struct" : "array");
        return NULL;
    }
    return &m->code->gc_layouts[ti];
}

static pw_ref oom(pw_error *err) {
    pw__fail(err, PW_ERR_OOM, "out of memory: the GC heap hit the store's memory cap");
    return PW_NULL_REF;
}

pw_ref pw_struct_new(pw_store *s, pw_instance *inst, uint32_t ti, const pw_val *fields,
                     pw_error *err) {
    const pw_gclayout *l = host_layout(inst, ti, PW_FORM_STRUCT, err);
    if (!l) return PW_NULL_REF;
    pw_gcframe cur = {.extra = fields, .extra_kind = l->kind, .nextra = fields ? l->nfields : 0};
    pw_struct *o = pw__gc_new_struct(s, inst, ti, &cur);
    if (!o) return oom(err);
    if (fields)
        for (uint32_t i = 0; i < l->nfields; i++)
            pw__gc_store_field(o->data + l->off[i], l->kind[i], (pw_slot){.u64 = fields[i].bits});
    return (pw_ref)o;
}

pw_ref pw_array_new(pw_store *s, pw_instance *inst, uint32_t ti, uint32_t len, const pw_val *init,
                    pw_error *err) {
    const pw_gclayout *l = host_layout(inst, ti, PW_FORM_ARRAY, err);
    if (!l) return PW_NULL_REF;
    pw_gcframe cur = {
        .extra = init, .extra_kind = l->kind, .nextra = init ? 1 : 0, .extra_same = true};
    pw_array *a = pw__gc_new_array(s, inst, ti, len, &cur);
    if (!a) return oom(err);
    if (init) pw__gc_array_fill(a, 0, (pw_slot){.u64 = init->bits}, len);
    return (pw_ref)a;
}

pw_ref pw_array_new_bytes(pw_store *s, pw_instance *inst, uint32_t ti, const uint8_t *bytes,
                          uint32_t len, pw_error *err) {
    const pw_gclayout *l = host_layout(inst, ti, PW_FORM_ARRAY, err);
    if (!l) return PW_NULL_REF;
    if (l->kind[0] != PW_GK_I8) {
        pw__fail(err, PW_ERR_ARG, "type %u is not an i8 array type", ti);
        return PW_NULL_REF;
    }
    pw_array *a = pw__gc_new_array(s, inst, ti, len, NULL);
    if (!a) return oom(err);
    if (len) memcpy(a->data, bytes, len);
    return (pw_ref)a;
}

/* ---------------------------------------------------------------- readers */

static const pw_struct *as_struct(pw_ref r) {
    if (!r || (r & 1) || ((const pw_obj *)r)->kind != PW_OBJ_STRUCT) return NULL;
    return (const pw_struct *)r;
}

static pw_array *as_array(pw_ref r) {
    if (!r || (r & 1) || ((const pw_obj *)r)->kind != PW_OBJ_ARRAY) return NULL;
    return (pw_array *)r;
}

static const pw_gclayout *struct_layout(const pw_store *s, const pw_struct *o) {
    const pw_regtype *rt = &s->types[o->hdr.type_id - 1];
    return &rt->m->code->gc_layouts[rt->idx];
}

uint32_t pw_struct_field_count(const pw_store *s, pw_ref r) {
    const pw_struct *o = as_struct(r);
    return o ? struct_layout(s, o)->nfields : 0;
}

bool pw_struct_get(const pw_store *s, pw_ref r, uint32_t field, bool sign, pw_val *out) {
    const pw_struct *o = as_struct(r);
    if (!o) return false;
    const pw_gclayout *l = struct_layout(s, o);
    if (field >= l->nfields) return false;
    out->bits = pw__gc_load_field(o->data + l->off[field], l->kind[field], sign).u64;
    return true;
}

bool pw_struct_set(const pw_store *s, pw_ref r, uint32_t field, pw_val v) {
    pw_struct *o = (pw_struct *)as_struct(r);
    if (!o) return false;
    const pw_gclayout *l = struct_layout(s, o);
    if (field >= l->nfields) return false;
    pw__gc_store_field(o->data + l->off[field], l->kind[field], (pw_slot){.u64 = v.bits});
    return true;
}

uint32_t pw_array_len(pw_ref r) {
    const pw_array *a = as_array(r);
    return a ? a->len : 0;
}

bool pw_array_get(pw_ref r, uint32_t i, bool sign, pw_val *out) {
    const pw_array *a = as_array(r);
    if (!a || i >= a->len) return false;
    out->bits = pw__gc_load_field(a->data + (size_t)i * a->esize, (uint8_t)a->hdr.flags, sign).u64;
    return true;
}

bool pw_array_set(pw_ref r, uint32_t i, pw_val v) {
    pw_array *a = as_array(r);
    if (!a || i >= a->len) return false;
    pw__gc_store_field(a->data + (size_t)i * a->esize, (uint8_t)a->hdr.flags,
                       (pw_slot){.u64 = v.bits});
    return true;
}

uint8_t *pw_array_bytes(pw_ref r, uint32_t *len) {
    pw_array *a = as_array(r);
    if (!a || a->hdr.flags != PW_GK_I8) return NULL;
    if (len) *len = a->len;
    return a->data;
}

bool pw_ref_test_type(pw_store *s, pw_instance *inst, pw_ref r, uint32_t ti) {
    if (!inst || ti >= inst->mod->ntypes) return false;
    return pw__gc_ref_test(s, inst, r, PW_VT_MAKE_REF(ti, 0));
}

void pw_store_gc_stats(const pw_store *s, pw_gc_stats *out) {
    out->heap_bytes = s->gc_bytes;
    out->peak_bytes = s->gc_peak;
    out->live_bytes = s->gc_live;
    out->collections = s->gc_count;
}

void pw_store_gc(pw_store *s) {
    pw__gc_collect(s, NULL);
}

/* ---------------------------------------------------------------- constant exprs */

/* Collection is inhibited while a constant expression runs: its intermediate values
 * live on the evaluator's C stack, which the collector does not scan. */
int pw__gc_const_op(pw_instance *inst, const pw_instr *in, pw_slot *st, uint32_t *sp,
                    pw_error *err) {
    if ((in->op >> 8) != 0xFB) return 0;
    pw_store *s = inst->store;
    const pw_module *m = inst->mod;
    uint32_t sub = in->op & 0xFF;
    if (sub == 0x1A || sub == 0x1B) return *sp ? 1 : 0; /* same reference */
    if (sub == 0x1C) {
        if (!*sp) return 0;
        st[*sp - 1].ref = pw_i31_new(st[*sp - 1].u32);
        return 1;
    }
    if (sub > 0x08 || sub == 0x02 || sub == 0x03 || sub == 0x04 || sub == 0x05) return 0;
    if (in->a >= m->ntypes) return 0;
    const pw_gclayout *l = &m->code->gc_layouts[in->a];
    uint32_t need = sub == 0x00   ? l->nfields
                    : sub == 0x06 ? 2
                    : sub == 0x07 ? 1
                    : sub == 0x08 ? in->b
                                  : 0;
    if (*sp < need) return 0;
    s->gc_inhibit++;
    pw_ref r = PW_NULL_REF;
    uint32_t base = *sp - need;
    if (sub <= 0x01) {
        pw_struct *o = pw__gc_new_struct(s, inst, in->a, NULL);
        if (o && sub == 0x00)
            for (uint32_t i = 0; i < l->nfields; i++)
                pw__gc_store_field(o->data + l->off[i], l->kind[i], st[base + i]);
        r = (pw_ref)o;
    } else {
        uint32_t len = sub == 0x06 ? st[base + 1].u32 : sub == 0x07 ? st[base].u32 : in->b;
        pw_array *a = pw__gc_new_array(s, inst, in->a, len, NULL);
        if (a && sub == 0x06) pw__gc_array_fill(a, 0, st[base], len);
        if (a && sub == 0x08)
            for (uint32_t i = 0; i < len; i++)
                pw__gc_store_field(a->data + (size_t)i * a->esize, l->kind[0], st[base + i]);
        r = (pw_ref)a;
    }
    s->gc_inhibit--;
    if (!r) {
        pw__fail(err, PW_ERR_OOM, "out of memory: the GC heap hit the store's memory cap");
        return -1;
    }
    *sp = base;
    st[(*sp)++].ref = r;
    return 1;
}
