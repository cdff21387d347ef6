/*
 * compile_gc.h — lowering of the Wasm 3.0 GC instructions (0xFB prefix) and the
 * precise stack maps the collector scans. Included once, by compile.c, after its
 * stack-model helpers: it is part of the compiler's translation unit (it works on the
 * compiler's private state) but kept apart so the GC lowering is one concern.
 *
 * Stack maps: at every call site and every allocating instruction the compiler
 * records the frame slots that hold references at that point: reference-typed locals
 * (always initialised: locals are zeroed on entry) and reference-typed operand-stack
 * entries that live in their own slot (LOCAL entries are covered by their local,
 * CONST references are null). Call arguments are included: for a Wasm callee they
 * are its parameters of the same types, for a host callee they are the host's
 * arguments. A site is keyed by the code index right after the instruction, which
 * for a call is the frame's return pc.
 *
 * Layout in pw_cmodule.gc_maps: a site's map is [locals list offset, n, slot * n]
 * (the operand-stack slots); a function's reference-typed locals are listed once,
 * [k, local * k], and shared by its sites; a site whose map equals the previous
 * site's shares it. So the size is not (locals x call sites).
 */

static bool gc_reserve(comp *c, uint32_t words) {
    if ((uint64_t)c->gc_nmaps + words > UINT32_MAX / 2 ||
        !grow((void **)&c->gc_maps, &c->gc_capmaps, c->gc_nmaps + words, sizeof *c->gc_maps)) {
        c->oom = true;
        return false;
    }
    return true;
}

/* Record a site at the current code position covering stack depths < upto. */
static void gc_site(comp *c, uint32_t upto) {
    if (c->gc_lfunc != c->fstart + 1) { /* first site of this function: its locals */
        if (!gc_reserve(c, 1 + c->nlocals)) return;
        uint32_t k = 0, at = c->gc_nmaps;
        for (uint32_t i = 0; i < c->nlocals; i++)
            if (PW_VT_KIND(c->local_types[i]) == PW_K_REF) c->gc_maps[at + 1 + k++] = i;
        c->gc_maps[at] = k;
        c->gc_nmaps = at + 1 + k;
        c->gc_lfunc = c->fstart + 1;
        c->gc_lmap = at;
    }
    if (upto > c->sp) upto = c->sp;
    if (!gc_reserve(c, 2 + upto) ||
        !grow((void **)&c->gc_sites, &c->gc_capsites, c->gc_nsites + 1, sizeof *c->gc_sites)) {
        c->oom = true;
        return;
    }
    uint32_t start = c->gc_nmaps, n = 0;
    uint32_t *map = c->gc_maps + start;
    map[0] = c->gc_lmap;
    for (uint32_t d = 0; d < upto; d++)
        if (c->st[d].loc == LOC_STACK && PW_VT_KIND(c->st[d].type) == PW_K_REF)
            map[2 + n++] = slot_of_depth(c, d);
    map[1] = n;
    if (c->gc_nsites) {
        const uint32_t *prev = c->gc_maps + c->gc_sites[c->gc_nsites - 1].map;
        if (prev[0] == map[0] && prev[1] == n && memcmp(prev + 2, map + 2, n * 4) == 0)
            start = (uint32_t)(prev - c->gc_maps); /* same map: share it */
        else
            c->gc_nmaps = start + 2 + n;
    } else {
        c->gc_nmaps = start + 2 + n;
    }
    c->gc_sites[c->gc_nsites++] = (pw_gcsite){c->ncode, start};
}

static const pw_gclayout *gc_layout_of(comp *c, uint32_t typeidx) {
    return &c->gc_layouts[typeidx];
}

static uint32_t get_op(uint8_t kind, int sign, bool array) {
    static const uint16_t sops[] = {PW_OP_STRUCT_GET8S,  PW_OP_STRUCT_GET8U, PW_OP_STRUCT_GET16S,
                                    PW_OP_STRUCT_GET16U, PW_OP_STRUCT_GET32, PW_OP_STRUCT_GET64};
    static const uint16_t aops[] = {PW_OP_ARRAY_GET8S,  PW_OP_ARRAY_GET8U, PW_OP_ARRAY_GET16S,
                                    PW_OP_ARRAY_GET16U, PW_OP_ARRAY_GET32, PW_OP_ARRAY_GET64};
    const uint16_t *t = array ? aops : sops;
    switch (kind) {
    case PW_GK_I8: return t[sign ? 0 : 1];
    case PW_GK_I16: return t[sign ? 2 : 3];
    case PW_GK_I32: return t[4];
    default: return t[5];
    }
}

static uint32_t set_op(uint8_t kind, bool array) {
    static const uint16_t sops[] = {PW_OP_STRUCT_SET8, PW_OP_STRUCT_SET16, PW_OP_STRUCT_SET32,
                                    PW_OP_STRUCT_SET64};
    static const uint16_t aops[] = {PW_OP_ARRAY_SET8, PW_OP_ARRAY_SET16, PW_OP_ARRAY_SET32,
                                    PW_OP_ARRAY_SET64};
    uint32_t k = kind > PW_GK_I64 ? PW_GK_I64 : kind;
    return array ? aops[k] : sops[k];
}

/* Emit `op dst <operands>` for an instruction producing one value of type t, after
 * popping nin operands whose slots are given. */
static void gc_value_op(comp *c, uint32_t op, pw_valtype t, uint32_t nops, const uint32_t *ops,
                        uint32_t npop) {
    popn(c, npop);
    uint32_t dst = push_stack(c, t);
    uint32_t pos = emit_op(c, op);
    emit(c, dst);
    for (uint32_t i = 0; i < nops; i++)
        emit(c, ops[i]);
    set_pend(c, pos, op, dst);
}

/* Materialise the top n entries and return the slot of the lowest. */
static uint32_t gc_args(comp *c, uint32_t n) {
    for (uint32_t i = 0; i < n; i++)
        materialize(c, c->sp - n + i);
    return slot_of_depth(c, c->sp - n);
}

/* An allocating instruction: operands stay on the model stack until the site is
 * recorded (they must be scanned), then are replaced by the result. */
static void gc_alloc_op(comp *c, uint32_t op, uint32_t type, uint32_t nops, const uint32_t *ops,
                        uint32_t npop, pw_valtype rt) {
    uint32_t dst = slot_of_depth(c, c->sp - npop);
    emit_op(c, op);
    emit(c, dst);
    emit(c, type);
    for (uint32_t i = 0; i < nops; i++)
        emit(c, ops[i]);
    gc_site(c, c->sp);
    popn(c, npop);
    push_stack(c, rt);
    c->pend = false;
}

static void gc_br_on_cast(comp *c, const pw_instr *in, bool on_fail) {
    ctl *l = &c->cs[c->ncs - 1 - in->a];
    uint32_t x = slot_at(c, c->sp - 1);
    /* On the branch the top holds the target type (br_on_cast) or the source type. */
    pw_valtype fall = on_fail ? in->t2 : in->t1;
    bool moves = l->kind == CT_FUNC || needs_moves(c, l);
    uint32_t pos;
    if (!moves) {
        pos = emit_op(c, on_fail ? PW_OP_BR_ON_CAST_FAIL : PW_OP_BR_ON_CAST);
        emit(c, x);
        emit(c, in->t2);
        emit_target(c, l, pos);
    } else {
        pos = emit_op(c, on_fail ? PW_OP_BR_ON_CAST : PW_OP_BR_ON_CAST_FAIL);
        emit(c, x);
        emit(c, in->t2);
        uint32_t atw = c->ncode;
        emit(c, 0);
        emit_br(c, l);
        c->code[atw] = c->ncode - pos;
    }
    top(c, 0)->type = fall;
    c->pend = false;
}

/* Lower one 0xFB instruction. False on malformed input the validator should have
 * rejected (c->bad) or allocation failure (c->oom). */
static bool compile_gc(comp *c, const pw_instr *in) {
    const pw_module *m = c->m;
    uint32_t sub = in->op & 0xFF;
    uint32_t ops[4] = {0, 0, 0, 0};
    if (sub <= 0x13 && sub != 0x0F && in->a >= m->ntypes) return c->bad = true, false;
    const pw_deftype *t = sub <= 0x13 && sub != 0x0F ? &m->types[in->a] : NULL;
    if (t && sub <= 0x05 && t->form != PW_FORM_STRUCT) return c->bad = true, false;
    if (t && sub >= 0x06 && t->form != PW_FORM_ARRAY) return c->bad = true, false;
    const pw_gclayout *l = t ? gc_layout_of(c, in->a) : NULL;
    pw_valtype rt = PW_VT_MAKE_REF(in->a, 0);
    switch (sub) {
    case 0x00: { /* struct.new */
        uint32_t n = t->u.strct.nfields;
        if (c->sp < n) return c->bad = true, false;
        ops[0] = gc_args(c, n);
        gc_alloc_op(c, PW_OP_STRUCT_NEW, in->a, 1, ops, n, rt);
        break;
    }
    case 0x01: gc_alloc_op(c, PW_OP_STRUCT_NEW_DEFAULT, in->a, 0, ops, 0, rt); break;
    case 0x02:
    case 0x03:
    case 0x04: { /* struct.get(_s/_u) */
        if (in->b >= l->nfields) return c->bad = true, false;
        ops[0] = slot_at(c, c->sp - 1);
        ops[1] = l->off[in->b];
        gc_value_op(c, get_op(l->kind[in->b], sub == 0x03, false), t->u.strct.fields[in->b].type, 2,
                    ops, 1);
        break;
    }
    case 0x05: { /* struct.set */
        if (in->b >= l->nfields) return c->bad = true, false;
        uint32_t v = pop_slot(c), o = pop_slot(c);
        emit_op(c, set_op(l->kind[in->b], false));
        emit(c, o);
        emit(c, v);
        emit(c, l->off[in->b]);
        c->pend = false;
        break;
    }
    case 0x06: /* array.new val len */
        ops[1] = slot_at(c, c->sp - 1);
        ops[0] = slot_at(c, c->sp - 2);
        gc_alloc_op(c, PW_OP_ARRAY_NEW, in->a, 2, ops, 2, rt);
        break;
    case 0x07:
        ops[0] = slot_at(c, c->sp - 1);
        gc_alloc_op(c, PW_OP_ARRAY_NEW_DEFAULT, in->a, 1, ops, 1, rt);
        break;
    case 0x08: { /* array.new_fixed */
        uint32_t n = in->b;
        if (c->sp < n) return c->bad = true, false;
        ops[0] = gc_args(c, n);
        ops[1] = n;
        gc_alloc_op(c, PW_OP_ARRAY_NEW_FIXED, in->a, 2, ops, n, rt);
        break;
    }
    case 0x09:   /* array.new_data */
    case 0x0A: { /* array.new_elem */
        if (sub == 0x09 ? in->b >= m->ndatas : in->b >= m->nelems) return c->bad = true, false;
        ops[0] = in->b;
        ops[2] = slot_at(c, c->sp - 1);
        ops[1] = slot_at(c, c->sp - 2);
        gc_alloc_op(c, sub == 0x09 ? PW_OP_ARRAY_NEW_DATA : PW_OP_ARRAY_NEW_ELEM, in->a, 3, ops, 2,
                    rt);
        break;
    }
    case 0x0B:
    case 0x0C:
    case 0x0D: /* array.get(_s/_u) arr idx */
        ops[1] = slot_at(c, c->sp - 1);
        ops[0] = slot_at(c, c->sp - 2);
        gc_value_op(c, get_op(l->kind[0], sub == 0x0C, true), t->u.array.type, 2, ops, 2);
        break;
    case 0x0E: { /* array.set arr idx val */
        uint32_t v = pop_slot(c), i = pop_slot(c), a = pop_slot(c);
        emit_op(c, set_op(l->kind[0], true));
        emit(c, a);
        emit(c, i);
        emit(c, v);
        c->pend = false;
        break;
    }
    case 0x0F: /* array.len */
        ops[0] = slot_at(c, c->sp - 1);
        gc_value_op(c, PW_OP_ARRAY_LEN, PW_VT_I32, 1, ops, 1);
        break;
    case 0x10: { /* array.fill arr d val n */
        uint32_t n = pop_slot(c), v = pop_slot(c), d = pop_slot(c), a = pop_slot(c);
        emit_op(c, PW_OP_ARRAY_FILL);
        emit(c, a), emit(c, d), emit(c, v), emit(c, n);
        c->pend = false;
        break;
    }
    case 0x11: { /* array.copy darr d sarr s n */
        uint32_t n = pop_slot(c), s2 = pop_slot(c), sa = pop_slot(c), d = pop_slot(c),
                 da = pop_slot(c);
        emit_op(c, PW_OP_ARRAY_COPY);
        emit(c, da), emit(c, d), emit(c, sa), emit(c, s2), emit(c, n);
        c->pend = false;
        break;
    }
    case 0x12:   /* array.init_data arr d s n */
    case 0x13: { /* array.init_elem */
        if (sub == 0x12 ? in->b >= m->ndatas : in->b >= m->nelems) return c->bad = true, false;
        uint32_t n = pop_slot(c), s2 = pop_slot(c), d = pop_slot(c), a = pop_slot(c);
        emit_op(c, sub == 0x12 ? PW_OP_ARRAY_INIT_DATA : PW_OP_ARRAY_INIT_ELEM);
        emit(c, in->b), emit(c, a), emit(c, d), emit(c, s2), emit(c, n);
        c->pend = false;
        break;
    }
    case 0x14:
    case 0x15: /* ref.test */
        ops[0] = slot_at(c, c->sp - 1);
        ops[1] = in->t1;
        gc_value_op(c, PW_OP_REF_TEST, PW_VT_I32, 2, ops, 1);
        break;
    case 0x16:
    case 0x17: { /* ref.cast */
        uint32_t x = slot_at(c, c->sp - 1);
        emit_op(c, PW_OP_REF_CAST);
        emit(c, x);
        emit(c, in->t1);
        top(c, 0)->type = in->t1;
        c->pend = false;
        break;
    }
    case 0x18:
    case 0x19:
        if (in->a >= c->ncs || c->sp == 0) return c->bad = true, false;
        gc_br_on_cast(c, in, sub == 0x19);
        break;
    case 0x1A:   /* any.convert_extern */
    case 0x1B: { /* extern.convert_any: the same reference, another hierarchy */
        ent *e = top(c, 0);
        e->type = PW_VT_ABSREF(sub == 0x1A ? PW_HT_ANY : PW_HT_EXTERN, PW_VT_NULLABLE(e->type));
        break;
    }
    case 0x1C: /* ref.i31 */
        ops[0] = slot_at(c, c->sp - 1);
        gc_value_op(c, PW_OP_REF_I31, PW_VT_ABSREF(PW_HT_I31, 0), 1, ops, 1);
        break;
    case 0x1D:
    case 0x1E:
        ops[0] = slot_at(c, c->sp - 1);
        gc_value_op(c, sub == 0x1D ? PW_OP_I31_GET_S : PW_OP_I31_GET_U, PW_VT_I32, 1, ops, 1);
        break;
    default:
        pw__fail(c->err, PW_ERR_INVALID, "unsupported instruction fb%02x in compiler", sub);
        return false;
    }
    return !c->oom && !c->bad;
}
