/*
 * interp_gc.h — handlers of the Wasm 3.0 GC instructions (interp.h PW_GC_OPS).
 * Included once, inside the interpreter's dispatch function run() in interp.c: the
 * handlers use its locals (s, pc, fp, fr, inst, tc) and macros (S, IMM, NEXT, JUMP,
 * TRAP). Allocating handlers publish the frame stack top and pass the current frame
 * to the allocator, so a collection can scan every live frame precisely.
 */

#define PW_GC_FRAME(len)                                                                           \
    pw_gcframe gcf = {.pc = pc + (len), .fp = fp, .inst = inst};                                   \
    s->frame_top = fr

L_STRUCT_NEW : {
    PW_GC_FRAME(4);
    pw_struct *o = pw__gc_new_struct(s, inst, IMM(2), &gcf);
    if (!o) goto gc_oom;
    const pw_gclayout *l = &inst->mod->code->gc_layouts[IMM(2)];
    const pw_slot *args = fp + IMM(3);
    if (l->all8)
        memcpy(o->data, args, (size_t)l->nfields * 8); /* slots are the fields */
    else
        for (uint32_t i = 0; i < l->nfields; i++)
            pw__gc_store_field(o->data + l->off[i], l->kind[i], args[i]);
    S(1).ref = (pw_ref)o;
    NEXT(4);
}
L_STRUCT_NEW_DEFAULT : {
    PW_GC_FRAME(3);
    pw_struct *o = pw__gc_new_struct(s, inst, IMM(2), &gcf);
    if (!o) goto gc_oom;
    S(1).ref = (pw_ref)o;
    NEXT(3);
}

/* struct.get/set and array.get/set: one template per width and direction, defining
 * the struct and the array handler. Operands: get `dst obj off` / `dst arr idx`, set
 * `obj val off` / `arr idx val`; the object is slot 1 for a set and 2 for a get, the
 * index follows it, the value is slot 1 for a get and the last for a set. An array
 * element i of storage kind `kind` (PW_GK_I8..I64) sits at byte i << kind. `set`,
 * `kind` and `sign` are constants, so each handler folds to its one load or store. */
#define PW_FIELD(name, kind, sign, set)                                                            \
    L_STRUCT_##name : {                                                                            \
        pw_ref r = S((set) ? 1 : 2).ref;                                                           \
        if (__builtin_expect(!r, 0)) TRAP(PW_TRAP_NULL_STRUCT_REF);                                \
        uint8_t *p = ((pw_struct *)r)->data + IMM(3);                                              \
        if (set)                                                                                   \
            pw__gc_field_put(p, kind, S(2));                                                       \
        else                                                                                       \
            S(1) = pw__gc_field_get(p, kind, sign);                                                \
        NEXT(4);                                                                                   \
    }                                                                                              \
    L_ARRAY_##name : {                                                                             \
        pw_array *a = (pw_array *)S((set) ? 1 : 2).ref;                                            \
        if (__builtin_expect(!a, 0)) TRAP(PW_TRAP_NULL_ARRAY_REF);                                 \
        uint32_t i = S((set) ? 2 : 3).u32;                                                         \
        if (__builtin_expect(i >= a->len, 0)) TRAP(PW_TRAP_ARRAY_OOB);                             \
        uint8_t *p = a->data + ((size_t)i << (kind));                                              \
        if (set)                                                                                   \
            pw__gc_field_put(p, kind, S(3));                                                       \
        else                                                                                       \
            S(1) = pw__gc_field_get(p, kind, sign);                                                \
        NEXT(4);                                                                                   \
    }
PW_FIELD(GET8S, PW_GK_I8, true, false)
PW_FIELD(GET8U, PW_GK_I8, false, false)
PW_FIELD(GET16S, PW_GK_I16, true, false)
PW_FIELD(GET16U, PW_GK_I16, false, false)
PW_FIELD(GET32, PW_GK_I32, false, false)
PW_FIELD(GET64, PW_GK_I64, false, false)
PW_FIELD(SET8, PW_GK_I8, false, true)
PW_FIELD(SET16, PW_GK_I16, false, true)
PW_FIELD(SET32, PW_GK_I32, false, true)
PW_FIELD(SET64, PW_GK_I64, false, true)
#undef PW_FIELD

L_ARRAY_NEW : {
    PW_GC_FRAME(5);
    pw_array *a = pw__gc_new_array(s, inst, IMM(2), S(4).u32, &gcf);
    if (!a) goto gc_oom;
    pw__gc_array_fill(a, 0, S(3), a->len);
    S(1).ref = (pw_ref)a;
    NEXT(5);
}
L_ARRAY_NEW_DEFAULT : {
    PW_GC_FRAME(4);
    pw_array *a = pw__gc_new_array(s, inst, IMM(2), S(3).u32, &gcf);
    if (!a) goto gc_oom;
    S(1).ref = (pw_ref)a;
    NEXT(4);
}
L_ARRAY_NEW_FIXED : {
    PW_GC_FRAME(5);
    uint32_t n = IMM(4);
    pw_array *a = pw__gc_new_array(s, inst, IMM(2), n, &gcf);
    if (!a) goto gc_oom;
    const pw_slot *args = fp + IMM(3);
    uint8_t k = (uint8_t)a->hdr.flags;
    for (uint32_t i = 0; i < n; i++)
        pw__gc_store_field(a->data + (size_t)i * a->esize, k, args[i]);
    S(1).ref = (pw_ref)a;
    NEXT(5);
}
#define PW_ANEW_SEG(name, fn)                                                                      \
    L_ARRAY_##name : {                                                                             \
        PW_GC_FRAME(6);                                                                            \
        pw_array *a = NULL;                                                                        \
        tc = fn(s, inst, IMM(2), IMM(3), S(4).u32, S(5).u32, &gcf, &a);                            \
        if (tc == PW_TRAP_COUNT_) goto gc_oom;                                                     \
        if (tc) goto trap;                                                                         \
        S(1).ref = (pw_ref)a;                                                                      \
        NEXT(6);                                                                                   \
    }
PW_ANEW_SEG(NEW_DATA, pw__gc_array_new_data)
PW_ANEW_SEG(NEW_ELEM, pw__gc_array_new_elem)
#undef PW_ANEW_SEG

L_ARRAY_LEN : {
    pw_array *a = (pw_array *)S(2).ref;
    if (!a) TRAP(PW_TRAP_NULL_ARRAY_REF);
    S(1).u64 = a->len;
    NEXT(3);
}
L_ARRAY_FILL : {
    pw_array *a = (pw_array *)S(1).ref;
    if (!a) TRAP(PW_TRAP_NULL_ARRAY_REF);
    if ((tc = pw__gc_array_fill(a, S(2).u32, S(3), S(4).u32))) goto trap;
    NEXT(5);
}
L_ARRAY_COPY : {
    pw_array *da = (pw_array *)S(1).ref, *sa = (pw_array *)S(3).ref;
    if (!da || !sa) TRAP(PW_TRAP_NULL_ARRAY_REF);
    if ((tc = pw__gc_array_copy(da, S(2).u32, sa, S(4).u32, S(5).u32))) goto trap;
    NEXT(6);
}
L_ARRAY_INIT_DATA : {
    pw_array *a = (pw_array *)S(2).ref;
    if (!a) TRAP(PW_TRAP_NULL_ARRAY_REF);
    if ((tc = pw__gc_array_init_data(inst, a, IMM(1), S(3).u32, S(4).u32, S(5).u32))) goto trap;
    NEXT(6);
}
L_ARRAY_INIT_ELEM : {
    pw_array *a = (pw_array *)S(2).ref;
    if (!a) TRAP(PW_TRAP_NULL_ARRAY_REF);
    if ((tc = pw__gc_array_init_elem(inst, a, IMM(1), S(3).u32, S(4).u32, S(5).u32))) goto trap;
    NEXT(6);
}

L_REF_I31 : S(1).ref = ((pw_ref)(S(2).u32 & 0x7fffffffu) << 1) | 1u;
NEXT(3);
L_I31_GET_S : {
    pw_ref r = S(2).ref;
    if (!r) TRAP(PW_TRAP_NULL_I31_REF);
    S(1).u64 = (uint32_t)((int32_t)((uint32_t)(r >> 1) << 1) >> 1);
    NEXT(3);
}
L_I31_GET_U : {
    pw_ref r = S(2).ref;
    if (!r) TRAP(PW_TRAP_NULL_I31_REF);
    S(1).u64 = (uint32_t)(r >> 1) & 0x7fffffffu;
    NEXT(3);
}

L_REF_TEST : S(1).u64 = pw_gc_ref_test_fast(s, inst, S(2).ref, IMM(3));
NEXT(4);
L_REF_CAST : if (!pw_gc_ref_test_fast(s, inst, S(1).ref, IMM(2))) TRAP(PW_TRAP_CAST_FAILURE);
NEXT(3);
L_BR_ON_CAST : if (pw_gc_ref_test_fast(s, inst, S(1).ref, IMM(2))) JUMP(IMM(3));
NEXT(4);
L_BR_ON_CAST_FAIL : if (!pw_gc_ref_test_fast(s, inst, S(1).ref, IMM(2))) JUMP(IMM(3));
NEXT(4);

gc_oom :
    /* The GC heap cannot grow within the store's memory cap even after a full
     * collection: not a trap, a distinct outcome for the embedder. */
    s->frame_top = fr_entry;
s->trap = PW_TRAP_NONE;
return PW_ERR_OOM;

#undef PW_GC_FRAME
