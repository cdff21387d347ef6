/*
 * instr.c — instruction and type decoding (see instr.h).
 *
 * Messages follow the reference interpreter: a bad value type reports "malformed
 * reference type" (its last alternative), unknown opcodes "illegal opcode XX".
 */
#include "wasm/instr.h"
#include "wasm/simd.h"

static bool malformed(pw_reader *r, const uint8_t *at, const char *msg) {
    pw__fail(r->err, PW_ERR_MALFORMED, "%s (at byte %zu)", msg, (size_t)(at - r->base));
    return false;
}

static bool illegal(pw_reader *r, const uint8_t *at, uint32_t prefix, uint32_t sub) {
    if (prefix)
        pw__fail(r->err, PW_ERR_MALFORMED, "illegal opcode %02x %02x (at byte %zu)", prefix, sub,
                 (size_t)(at - r->base));
    else
        pw__fail(r->err, PW_ERR_MALFORMED, "illegal opcode %02x (at byte %zu)", sub,
                 (size_t)(at - r->base));
    return false;
}

static bool is_abs_heap(int64_t code) {
    return code >= PW_HT_EXN && code <= PW_HT_NOEXN;
}

bool pw__rd_heaptype(pw_reader *r, uint32_t *heap) {
    const uint8_t *at = r->p;
    int64_t v;
    if (!pw__rd_s33(r, &v)) return false;
    if (v >= 0) {
        *heap = v > PW_TYPEIDX_MAX ? PW_TYPEIDX_MAX : (uint32_t)v;
        return true;
    }
    int64_t code = v + 0x80; /* single-byte negative s7 back to its byte value */
    if (v < -0x40 || !is_abs_heap(code)) return malformed(r, at, "malformed heap type");
    *heap = PW_HT_ABS | (uint32_t)code;
    return true;
}

/* Reference types after their first byte `b` has been consumed. */
static bool rd_reftype_rest(pw_reader *r, const uint8_t *at, uint8_t b, pw_valtype *out) {
    if (is_abs_heap(b)) {
        *out = PW_VT_ABSREF(b, 1);
        return true;
    }
    if (b == 0x63 || b == 0x64) {
        uint32_t heap;
        if (!pw__rd_heaptype(r, &heap)) return false;
        *out = PW_VT_MAKE_REF(heap, b == 0x63);
        return true;
    }
    if (b & 0x80) return malformed(r, at + 1, "integer representation too long");
    return malformed(r, at, "malformed reference type");
}

bool pw__rd_reftype(pw_reader *r, pw_valtype *out) {
    const uint8_t *at = r->p;
    uint8_t b;
    if (!pw_rd_byte(r, &b)) return false;
    return rd_reftype_rest(r, at, b, out);
}

bool pw__rd_valtype(pw_reader *r, pw_valtype *out) {
    const uint8_t *at = r->p;
    uint8_t b;
    if (!pw_rd_byte(r, &b)) return false;
    switch (b) {
    case 0x7F: *out = PW_VT_I32; return true;
    case 0x7E: *out = PW_VT_I64; return true;
    case 0x7D: *out = PW_VT_F32; return true;
    case 0x7C: *out = PW_VT_F64; return true;
    case 0x7B: *out = PW_VT_V128; return true;
    default: return rd_reftype_rest(r, at, b, out);
    }
}

static bool rd_blocktype(pw_reader *r, pw_instr *in) {
    const uint8_t *at = r->p;
    if (at < r->end && *at == 0x40) {
        r->p++;
        in->bt = PW_BT_EMPTY;
        return true;
    }
    int64_t v;
    if (!pw__rd_s33(r, &v)) return false;
    if (v >= 0) {
        in->bt = PW_BT_TYPE;
        in->a = (uint32_t)v;
        return true;
    }
    r->p = at;
    in->bt = PW_BT_VAL;
    return pw__rd_valtype(r, &in->t1);
}

static bool rd_memarg(pw_reader *r, pw_instr *in) {
    const uint8_t *at = r->p;
    uint32_t flags;
    if (!pw_rd_u32(r, &flags)) return false;
    if (flags >= 0x80) return malformed(r, at, "malformed memop flags");
    in->a = 0;
    if ((flags & 0x40) && !pw_rd_u32(r, &in->a)) return false;
    in->align = flags & 0x3f;
    return pw__rd_u64(r, &in->offset);
}

bool pw__rd_catch(pw_reader *r, pw_catch *c) {
    const uint8_t *at = r->p;
    if (!pw_rd_byte(r, &c->kind)) return false;
    if (c->kind > 3) return malformed(r, at, "malformed catch clause");
    c->tag = 0;
    if (c->kind < 2 && !pw_rd_u32(r, &c->tag)) return false;
    return pw_rd_u32(r, &c->label);
}

/* Immediates of the 0xFB (GC) and 0xFC (saturating truncation, bulk memory)
 * sub-opcodes, by sub-opcode: IM_NONE, one u32 index (IM_1), two (IM_2), a heap type
 * (ref.test/ref.cast: the sub-opcode's low bit is nullability) or br_on_cast's flags,
 * label and two heap types. 0 (IM_ILLEGAL): no such instruction. */
enum { IM_ILLEGAL, IM_NONE, IM_1, IM_2, IM_HEAP, IM_CAST };
// clang-format off
static const uint8_t fb_imm[0x1F] = {
    /* 0x00 */ IM_1, IM_1, IM_2, IM_2, IM_2, IM_2, IM_1, IM_1,
    /* 0x08 */ IM_2, IM_2, IM_2, IM_1, IM_1, IM_1, IM_1, IM_NONE,
    /* 0x10 */ IM_1, IM_2, IM_2, IM_2, IM_HEAP, IM_HEAP, IM_HEAP, IM_HEAP,
    /* 0x18 */ IM_CAST, IM_CAST, IM_NONE, IM_NONE, IM_NONE, IM_NONE, IM_NONE,
};
static const uint8_t fc_imm[0x12] = {
    /* 0x00 */ IM_NONE, IM_NONE, IM_NONE, IM_NONE, IM_NONE, IM_NONE, IM_NONE, IM_NONE,
    /* 0x08 */ IM_2, IM_1, IM_2, IM_1, IM_2, IM_1, IM_2, IM_1,
    /* 0x10 */ IM_1, IM_1,
};
// clang-format on

static bool rd_cast(pw_reader *r, pw_instr *in) {
    const uint8_t *at = r->p;
    uint8_t flags;
    uint32_t h1, h2;
    if (!pw_rd_byte(r, &flags)) return false;
    if (flags & 0xFC) return malformed(r, at, "malformed br_on_cast flags");
    if (!pw_rd_u32(r, &in->a) || !pw__rd_heaptype(r, &h1) || !pw__rd_heaptype(r, &h2)) return false;
    in->t1 = PW_VT_MAKE_REF(h1, flags & 1);
    in->t2 = PW_VT_MAKE_REF(h2, (flags >> 1) & 1);
    return true;
}

/* A 0xFB or 0xFC instruction after its prefix byte (at: the prefix). */
static bool rd_fb_fc(pw_reader *r, const uint8_t *at, uint8_t prefix, pw_instr *in) {
    uint32_t sub;
    if (!pw_rd_u32(r, &sub)) return false;
    const uint8_t *imm = prefix == 0xFB ? fb_imm : fc_imm;
    uint32_t nimm = prefix == 0xFB ? sizeof fb_imm : sizeof fc_imm;
    in->op = prefix == 0xFB ? PW_OP_FB(sub & 0xFF) : PW_OP_FC(sub & 0xFF);
    uint32_t heap;
    switch (sub < nimm ? imm[sub] : IM_ILLEGAL) {
    case IM_NONE: return true;
    case IM_1: return pw_rd_u32(r, &in->a);
    case IM_2: return pw_rd_u32(r, &in->a) && pw_rd_u32(r, &in->b);
    case IM_HEAP:
        if (!pw__rd_heaptype(r, &heap)) return false;
        in->t1 = PW_VT_MAKE_REF(heap, sub & 1);
        return true;
    case IM_CAST: return rd_cast(r, in);
    default: return illegal(r, at, prefix, sub);
    }
}

/* 0xFD: SIMD (simd.h). The lane index goes to in->n; v128.const and shuffle bytes
 * are left in place (in->vec, 16 bytes). */
static bool rd_fd(pw_reader *r, const uint8_t *at, pw_instr *in) {
    uint32_t sub;
    if (!pw_rd_u32(r, &sub)) return false;
    const pw_simd_info *si = pw__simd_op(sub);
    if (!si) return illegal(r, at, 0xFD, sub);
    in->op = PW_OP_FD(sub);
    uint8_t lane;
    switch (si->imm) {
    case PW_SI_MEM: return rd_memarg(r, in);
    case PW_SI_MEMLANE:
        if (!rd_memarg(r, in) || !pw_rd_byte(r, &lane)) return false;
        in->n = lane;
        return true;
    case PW_SI_LANE:
        if (!pw_rd_byte(r, &lane)) return false;
        in->n = lane;
        return true;
    case PW_SI_V128:
    case PW_SI_SHUF: return pw_rd_bytes(r, 16, &in->vec);
    default: return true;
    }
}

bool pw__instr_read(pw_reader *r, pw_instr *in) {
    const uint8_t *at = r->p;
    /* Fast path: the instructions that make up most code (numeric operators, locals
     * and globals with one-byte indices, small i32 constants). */
    if (r->end - at >= 2) {
        uint8_t op0 = at[0], b1 = at[1];
        if (op0 >= 0x45 && op0 <= 0xC4) {
            in->op = op0;
            r->p = at + 1;
            return true;
        }
        if (b1 < 0x80 &&
            ((op0 >= 0x20 && op0 <= 0x24) || op0 == 0x0C || op0 == 0x0D || op0 == 0x10)) {
            in->op = op0;
            in->a = b1;
            r->p = at + 2;
            return true;
        }
        if (op0 == 0x41 && b1 < 0x80) {
            in->op = op0;
            in->bits = (uint64_t)(int64_t)((b1 & 0x40) ? (int32_t)b1 - 0x80 : (int32_t)b1);
            r->p = at + 2;
            return true;
        }
    }
    uint8_t op;
    if (!pw_rd_byte(r, &op)) return false;
    in->op = op;
    switch (op) {
    case 0x00:
    case 0x01:
    case 0x05:
    case 0x0A:
    case 0x0B:
    case 0x0F:
    case 0x1A:
    case 0x1B:
    case 0xD1:
    case 0xD3:
    case 0xD4:
    case 0x19: /* catch_all (legacy exceptions) */ return true;
    case 0x02:
    case 0x03:
    case 0x04:
    case 0x06: /* try (legacy exceptions) */ return rd_blocktype(r, in);
    case 0x07: /* catch x */
    case 0x09: /* rethrow l */
    case 0x18: /* delegate l */
    case 0x08:
    case 0x0C:
    case 0x0D:
    case 0x10:
    case 0x12:
    case 0x14:
    case 0x15:
    case 0x20:
    case 0x21:
    case 0x22:
    case 0x23:
    case 0x24:
    case 0x25:
    case 0x26:
    case 0x3F:
    case 0x40:
    case 0xD2:
    case 0xD5:
    case 0xD6: return pw_rd_u32(r, &in->a);
    case 0x11:
    case 0x13: return pw_rd_u32(r, &in->a) && pw_rd_u32(r, &in->b);
    case 0x0E: {
        if (!pw_rd_u32(r, &in->n)) return false;
        /* Each target takes at least one byte: a count beyond the bytes left is a
         * truncation, found without looping over a hostile count. */
        if (in->n > pw_rd_left(r)) return pw__rd_fail_eof(r);
        in->vec = r->p;
        uint32_t x;
        for (uint32_t i = 0; i < in->n; i++)
            if (!pw_rd_u32(r, &x)) return false;
        return pw_rd_u32(r, &in->a);
    }
    case 0x1C: {
        if (!pw_rd_u32(r, &in->n)) return false;
        if (in->n > pw_rd_left(r)) return pw__rd_fail_eof(r);
        in->vec = r->p;
        for (uint32_t i = 0; i < in->n; i++)
            if (!pw__rd_valtype(r, &in->t1)) return false;
        return true;
    }
    case 0x1F: {
        if (!rd_blocktype(r, in) || !pw_rd_u32(r, &in->n)) return false;
        if (in->n > pw_rd_left(r)) return pw__rd_fail_eof(r);
        in->vec = r->p;
        pw_catch c;
        for (uint32_t i = 0; i < in->n; i++)
            if (!pw__rd_catch(r, &c)) return false;
        return true;
    }
    case 0x41: {
        int32_t v;
        if (!pw__rd_s32(r, &v)) return false;
        in->bits = (uint64_t)(int64_t)v;
        return true;
    }
    case 0x42: {
        int64_t v;
        if (!pw__rd_s64(r, &v)) return false;
        in->bits = (uint64_t)v;
        return true;
    }
    case 0x43:
    case 0x44: {
        const uint8_t *p;
        unsigned n = op == 0x43 ? 4 : 8;
        if (!pw_rd_bytes(r, n, &p)) return false;
        uint64_t v = 0;
        for (unsigned i = 0; i < n; i++)
            v |= (uint64_t)p[i] << (8 * i);
        in->bits = v;
        return true;
    }
    case 0xD0: {
        uint32_t heap;
        if (!pw__rd_heaptype(r, &heap)) return false;
        in->t1 = PW_VT_MAKE_REF(heap, 1);
        return true;
    }
    case 0xFB:
    case 0xFC: return rd_fb_fc(r, at, op, in);
    case 0xFD: return rd_fd(r, at, in);
    default:
        if (op >= 0x28 && op <= 0x3E) return rd_memarg(r, in);
        if (op >= 0x45 && op <= 0xC4) return true;
        return illegal(r, at, 0, op);
    }
}
