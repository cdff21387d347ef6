/*
 * x64.c — the x86-64 encoder (see x64.h for what it owns and its invariants).
 */
#include "wasm/jit/x64.h"

#include <stdlib.h>
#include <string.h>

static bool reserve(pw_x64 *x, size_t n) {
    if (x->oom) return false;
    if (x->len + n <= x->cap) return true;
    size_t cap = x->cap ? x->cap * 2 : 256;
    while (cap < x->len + n)
        cap *= 2;
    uint8_t *b = realloc(x->buf, cap);
    if (!b) {
        x->oom = true;
        return false;
    }
    x->buf = b;
    x->cap = cap;
    return true;
}

void pw__x64_byte(pw_x64 *x, uint8_t b) {
    if (reserve(x, 1)) x->buf[x->len++] = b;
}

void pw__x64_bytes(pw_x64 *x, const uint8_t *p, size_t n) {
    if (!n || !reserve(x, n)) return;
    memcpy(x->buf + x->len, p, n);
    x->len += n;
}

bool pw__x64_reserve(pw_x64 *x, size_t n) {
    return reserve(x, n);
}

void pw__x64_u32(pw_x64 *x, uint32_t v) {
    if (!reserve(x, 4)) return;
    memcpy(x->buf + x->len, &v, 4); /* x86-64 is little-endian */
    x->len += 4;
}

void pw__x64_u64(pw_x64 *x, uint64_t v) {
    if (!reserve(x, 8)) return;
    memcpy(x->buf + x->len, &v, 8);
    x->len += 8;
}

/* An instruction is assembled in a local buffer of MAXINS bytes and appended at once:
 * byte by byte into x->buf, every store through a uint8_t pointer may alias x's own
 * fields, so each reloaded them and checked the room again (an encoding cost some
 * 125 instructions; the JIT's translation emits one for most internal instructions). */
#define MAXINS 16 /* an x86 instruction has at most 15 bytes */
static inline __attribute__((always_inline)) void put(pw_x64 *x, const uint8_t b[MAXINS],
                                                      const uint8_t *end) {
    if (!reserve(x, MAXINS)) return;
    memcpy(x->buf + x->len, b, MAXINS); /* a fixed size: two moves, no call */
    x->len += (size_t)(end - b);
}

/* ModRM, then SIB and the displacement for a memory operand: what follows the opcode
 * in both the legacy (REX) and the VEX encodings (inlined: every instruction the JIT
 * emits passes here), written at p; returns the end. The displacement takes the
 * shortest form: none (mod 00) when it is 0 and the base is not rbp or r13 (whose
 * mod 00 encodings mean rip-relative or no base), one signed byte (mod 01) when it
 * fits, else four (mod 10). A base of rsp or r12 always needs a SIB byte (its r/m
 * code 100 means "SIB follows"). */
static inline __attribute__((always_inline)) uint8_t *modrm_tail(uint8_t *p, int reg, int rm_reg,
                                                                 const pw_xmem *m, int rb, int ix) {
    if (rm_reg >= 0) {
        *p++ = (uint8_t)(0xC0 | ((reg & 7) << 3) | (rm_reg & 7));
        return p;
    }
    int32_t disp = m->disp;
    uint8_t mod = disp == 0 && (rb & 7) != X_RBP ? 0x00 : disp >= -128 && disp <= 127 ? 0x40 : 0x80;
    if (ix < 0 && (rb & 7) != X_RSP) {
        *p++ = (uint8_t)(mod | ((reg & 7) << 3) | (rb & 7));
    } else {
        uint8_t ss = m->scale == 8 ? 3 : m->scale == 4 ? 2 : m->scale == 2 ? 1 : 0;
        *p++ = (uint8_t)(mod | ((reg & 7) << 3) | 4);
        *p++ = (uint8_t)((ss << 6) | ((ix < 0 ? 4 : ix & 7) << 3) | (rb & 7));
    }
    if (mod == 0x40) {
        *p++ = (uint8_t)disp;
    } else if (mod == 0x80) {
        uint32_t d = (uint32_t)disp;
        memcpy(p, &d, 4); /* x86-64 is little-endian */
        p += 4;
    }
    return p;
}

void pw__x64_modrm(pw_x64 *x, int prefix, bool w, const uint8_t *op, int nop, int reg, int rm_reg,
                   const pw_xmem *m, bool byte_regs) {
    if (rm_reg < 0 && m->index <= X_DIRECT) rm_reg = m->base; /* x_reg / x_xreg */
    uint8_t b[MAXINS] = {0}, *p = b;
    if (prefix >= 0) *p++ = (uint8_t)prefix;
    int rb = rm_reg >= 0 ? rm_reg : m->base;
    int ix = rm_reg >= 0 ? X_NOREG : m->index;
    uint8_t rex = (uint8_t)(0x40 | (w ? 8 : 0) | ((reg & 8) ? 4 : 0) |
                            ((ix >= 0 && (ix & 8)) ? 2 : 0) | ((rb & 8) ? 1 : 0));
    bool need =
        rex != 0x40 || (byte_regs && ((rm_reg >= 4 && rm_reg < 8) || (reg >= 4 && reg < 8)));
    if (need) *p++ = rex;
    for (int i = 0; i < nop && i < 3; i++) /* 1..3 (x64.h); the bound keeps b safe */
        *p++ = op[i];
    put(x, b, modrm_tail(p, reg, rm_reg, m, rb, ix));
}

static void rr(pw_x64 *x, bool w, uint8_t op, int reg, int rm) {
    pw__x64_modrm(x, -1, w, &op, 1, reg, rm, NULL, false);
}
static void rr2(pw_x64 *x, int prefix, bool w, uint8_t op1, uint8_t op2, int reg, int rm) {
    uint8_t op[2] = {op1, op2};
    pw__x64_modrm(x, prefix, w, op, 2, reg, rm, NULL, false);
}
static void rm1(pw_x64 *x, bool w, uint8_t op, int reg, pw_xmem m) {
    pw__x64_modrm(x, -1, w, &op, 1, reg, -1, &m, false);
}

void pw__x64_alu_rr(pw_x64 *x, pw_xalu op, bool w, int dst, int src) {
    rr(x, w, (uint8_t)(op * 8 + 1), src, dst);
}
void pw__x64_alu_rm(pw_x64 *x, pw_xalu op, bool w, int dst, pw_xmem m) {
    rm1(x, w, (uint8_t)(op * 8 + 3), dst, m);
}
/* The ALU group with an immediate operand: 0x83 /op ib when it fits a signed byte,
 * else 0x81 /op id; r/m is the register dst (m NULL) or the memory operand *m. */
static void alu_imm(pw_x64 *x, pw_xalu op, bool w, int dst, const pw_xmem *m, int32_t imm) {
    bool byte = imm >= -128 && imm <= 127;
    uint8_t opc = byte ? 0x83 : 0x81;
    if (m)
        rm1(x, w, opc, op, *m);
    else
        rr(x, w, opc, op, dst);
    if (byte)
        pw__x64_byte(x, (uint8_t)imm);
    else
        pw__x64_u32(x, (uint32_t)imm);
}
void pw__x64_alu_ri(pw_x64 *x, pw_xalu op, bool w, int dst, int32_t imm) {
    alu_imm(x, op, w, dst, NULL, imm);
}
void pw__x64_alu_mi(pw_x64 *x, pw_xalu op, bool w, pw_xmem m, int32_t imm) {
    alu_imm(x, op, w, 0, &m, imm);
}
void pw__x64_test_rr(pw_x64 *x, bool w, int a, int b) {
    rr(x, w, 0x85, b, a);
}
void pw__x64_mov_rr(pw_x64 *x, bool w, int dst, int src) {
    rr(x, w, 0x89, src, dst);
}

/* Loads: opcode bytes and REX.W per kind. */
static const struct {
    uint8_t op[2];
    uint8_t nop;
    bool w;
} ld_tab[] = {
    [X_LD8U] = {{0x0F, 0xB6}, 2, false},  [X_LD8S] = {{0x0F, 0xBE}, 2, false},
    [X_LD16U] = {{0x0F, 0xB7}, 2, false}, [X_LD16S] = {{0x0F, 0xBF}, 2, false},
    [X_LD32] = {{0x8B, 0}, 1, false},     [X_LD32S] = {{0x63, 0}, 1, true},
    [X_LD64] = {{0x8B, 0}, 1, true},
};

void pw__x64_load(pw_x64 *x, pw_xld k, int dst, pw_xmem m) {
    pw__x64_modrm(x, -1, ld_tab[k].w, ld_tab[k].op, ld_tab[k].nop, dst, -1, &m, false);
}

void pw__x64_store(pw_x64 *x, int bytes, pw_xmem m, int src) {
    uint8_t op = bytes == 1 ? 0x88 : 0x89;
    pw__x64_modrm(x, bytes == 2 ? 0x66 : -1, bytes == 8, &op, 1, src, -1, &m, bytes == 1);
}

void pw__x64_mov_ri32(pw_x64 *x, int dst, uint32_t imm) {
    if (dst & 8) pw__x64_byte(x, 0x41);
    pw__x64_byte(x, (uint8_t)(0xB8 + (dst & 7)));
    pw__x64_u32(x, imm);
}

void pw__x64_mov_ri64(pw_x64 *x, int dst, uint64_t imm) {
    if (imm <= UINT32_MAX) {
        pw__x64_mov_ri32(x, dst, (uint32_t)imm);
    } else if ((int64_t)imm >= INT32_MIN && (int64_t)imm <= INT32_MAX) {
        rr(x, true, 0xC7, 0, dst); /* sign-extended imm32 */
        pw__x64_u32(x, (uint32_t)imm);
    } else {
        pw__x64_byte(x, (uint8_t)(0x48 | ((dst & 8) ? 1 : 0)));
        pw__x64_byte(x, (uint8_t)(0xB8 + (dst & 7)));
        pw__x64_u64(x, imm);
    }
}

void pw__x64_lea(pw_x64 *x, bool w, int dst, pw_xmem m) {
    rm1(x, w, 0x8D, dst, m);
}

void pw__x64_shift_cl(pw_x64 *x, pw_xshift op, bool w, int dst) {
    rr(x, w, 0xD3, op, dst);
}
void pw__x64_shift_i(pw_x64 *x, pw_xshift op, bool w, int dst, uint8_t imm) {
    rr(x, w, 0xC1, op, dst);
    pw__x64_byte(x, imm);
}
void pw__x64_imul_rr(pw_x64 *x, bool w, int dst, int src) {
    rr2(x, -1, w, 0x0F, 0xAF, dst, src);
}
void pw__x64_imul_rri(pw_x64 *x, bool w, int dst, int src, int32_t imm) {
    rr(x, w, 0x69, dst, src);
    pw__x64_u32(x, (uint32_t)imm);
}
void pw__x64_div(pw_x64 *x, bool w, bool sign, int src) {
    rr(x, w, 0xF7, sign ? 7 : 6, src);
}
void pw__x64_mul(pw_x64 *x, bool w, int src) {
    rr(x, w, 0xF7, 4, src);
}
void pw__x64_cdq(pw_x64 *x, bool w) {
    if (w) pw__x64_byte(x, 0x48);
    pw__x64_byte(x, 0x99);
}
void pw__x64_setcc(pw_x64 *x, pw_xcc cc, int dst) {
    uint8_t op[2] = {0x0F, (uint8_t)(0x90 + cc)};
    pw__x64_modrm(x, -1, false, op, 2, 0, dst, NULL, true);
}
void pw__x64_movzx8(pw_x64 *x, int dst, int src) {
    uint8_t op[2] = {0x0F, 0xB6};
    pw__x64_modrm(x, -1, false, op, 2, dst, src, NULL, true);
}
void pw__x64_cmov(pw_x64 *x, pw_xcc cc, bool w, int dst, int src) {
    rr2(x, -1, w, 0x0F, (uint8_t)(0x40 + cc), dst, src);
}
void pw__x64_bsr(pw_x64 *x, bool w, int dst, int src) {
    rr2(x, -1, w, 0x0F, 0xBD, dst, src);
}
void pw__x64_bsf(pw_x64 *x, bool w, int dst, int src) {
    rr2(x, -1, w, 0x0F, 0xBC, dst, src);
}
void pw__x64_popcnt(pw_x64 *x, bool w, int dst, int src) {
    rr2(x, 0xF3, w, 0x0F, 0xB8, dst, src);
}
void pw__x64_movsx_rr(pw_x64 *x, int bytes_from, bool w, int dst, int src) {
    if (bytes_from == 4) {
        rr(x, true, 0x63, dst, src);
        return;
    }
    uint8_t op[2] = {0x0F, bytes_from == 1 ? 0xBE : 0xBF};
    pw__x64_modrm(x, -1, w, op, 2, dst, src, NULL, bytes_from == 1);
}
void pw__x64_push(pw_x64 *x, int r) {
    if (r & 8) pw__x64_byte(x, 0x41);
    pw__x64_byte(x, (uint8_t)(0x50 + (r & 7)));
}
void pw__x64_pop(pw_x64 *x, int r) {
    if (r & 8) pw__x64_byte(x, 0x41);
    pw__x64_byte(x, (uint8_t)(0x58 + (r & 7)));
}
void pw__x64_ret(pw_x64 *x) {
    pw__x64_byte(x, 0xC3);
}
void pw__x64_call_r(pw_x64 *x, int r) {
    rr(x, false, 0xFF, 2, r);
}
void pw__x64_jmp_r(pw_x64 *x, int r) {
    rr(x, false, 0xFF, 4, r);
}
size_t pw__x64_jcc32(pw_x64 *x, pw_xcc cc) {
    pw__x64_byte(x, 0x0F);
    pw__x64_byte(x, (uint8_t)(0x80 + cc));
    size_t at = x->len;
    pw__x64_u32(x, 0);
    return at;
}
size_t pw__x64_jmp32(pw_x64 *x) {
    pw__x64_byte(x, 0xE9);
    size_t at = x->len;
    pw__x64_u32(x, 0);
    return at;
}
void pw__x64_jshort(pw_x64 *x, int cc, int8_t rel) {
    pw__x64_byte(x, cc >= 0 ? (uint8_t)(0x70 + cc) : 0xEB);
    pw__x64_byte(x, (uint8_t)rel);
}
/* REX.W op dst, [rip + disp32]; returns the field offset. */
static size_t rip_form(pw_x64 *x, uint8_t op, int dst) {
    pw__x64_byte(x, (uint8_t)(0x48 | ((dst & 8) ? 4 : 0)));
    pw__x64_byte(x, op);
    pw__x64_byte(x, (uint8_t)(0x05 | ((dst & 7) << 3)));
    size_t at = x->len;
    pw__x64_u32(x, 0);
    return at;
}
size_t pw__x64_lea_rip(pw_x64 *x, int dst) {
    return rip_form(x, 0x8D, dst);
}
size_t pw__x64_load_rip(pw_x64 *x, int dst) {
    return rip_form(x, 0x8B, dst);
}
size_t pw__x64_call_rip(pw_x64 *x) {
    pw__x64_byte(x, 0xFF);
    pw__x64_byte(x, 0x15); /* FF /2, mod 00 rm 101: [rip + disp32] */
    size_t at = x->len;
    pw__x64_u32(x, 0);
    return at;
}
void pw__x64_patch32(pw_x64 *x, size_t at, int32_t v) {
    if (x->oom || at + 4 > x->len) return;
    memcpy(x->buf + at, &v, 4);
    x->join = (size_t)((int64_t)at + 4 + v);
}

void pw__x64_sse_rr(pw_x64 *x, int prefix, uint8_t op, bool w, int xreg, int rm_reg) {
    uint8_t ops[2] = {0x0F, op};
    pw__x64_modrm(x, prefix, w, ops, 2, xreg, rm_reg, NULL, false);
}
void pw__x64_sse_rm(pw_x64 *x, int prefix, uint8_t op, bool w, int xreg, pw_xmem m) {
    uint8_t ops[2] = {0x0F, op};
    pw__x64_modrm(x, prefix, w, ops, 2, xreg, -1, &m, false);
}
size_t pw__x64_sse_rip(pw_x64 *x, int prefix, int esc, uint8_t op, int xreg) {
    if (prefix >= 0) pw__x64_byte(x, (uint8_t)prefix);
    if (xreg & 8) pw__x64_byte(x, 0x44); /* REX.R; rip-relative needs neither X nor B */
    pw__x64_byte(x, 0x0F);
    if (esc) pw__x64_byte(x, (uint8_t)esc);
    pw__x64_byte(x, op);
    pw__x64_byte(x, (uint8_t)(((xreg & 7) << 3) | 5)); /* mod 00, rm 101 */
    size_t at = x->len;
    pw__x64_u32(x, 0);
    return at;
}

/* VEX: the prefix bytes carry REX.R/X/B inverted, the second source register
 * (vvvv, inverted) and the legacy prefix (pp); the two-byte form C5 when neither X
 * nor B is needed, else C4 with the 0F map (mmmmm = 1). W = 0, L = 0 (128 bits). */
static inline __attribute__((always_inline)) uint8_t *
vex_prefix(uint8_t *p, int prefix, uint8_t op, int reg, int vreg, int rb, int ix) {
    uint8_t pp = prefix == 0x66 ? 1 : prefix == 0xF3 ? 2 : prefix == 0xF2 ? 3 : 0;
    uint8_t r = (reg & 8) ? 0 : 0x80, xb = (ix >= 0 && (ix & 8)) ? 0 : 0x40;
    uint8_t b = (rb & 8) ? 0 : 0x20, v = (uint8_t)((~vreg & 15) << 3);
    if (xb && b) {
        *p++ = 0xC5;
        *p++ = (uint8_t)(r | v | pp);
    } else {
        *p++ = 0xC4;
        *p++ = (uint8_t)(r | xb | b | 1);
        *p++ = (uint8_t)(v | pp);
    }
    *p++ = op;
    return p;
}
static void vex(pw_x64 *x, int prefix, uint8_t op, int reg, int vreg, int rm_reg,
                const pw_xmem *m) {
    if (rm_reg < 0 && m->index <= X_DIRECT) rm_reg = m->base;
    int rb = rm_reg >= 0 ? rm_reg : m->base;
    int ix = rm_reg >= 0 ? X_NOREG : m->index;
    uint8_t b[MAXINS] = {0};
    uint8_t *p = vex_prefix(b, prefix, op, reg, vreg, rb, ix);
    put(x, b, modrm_tail(p, reg, rm_reg, m, rb, ix));
}
void pw__x64_vex_rr(pw_x64 *x, int prefix, uint8_t op, int xreg, int vreg, int rm_reg) {
    vex(x, prefix, op, xreg, vreg, rm_reg, NULL);
}
void pw__x64_vex_rm(pw_x64 *x, int prefix, uint8_t op, int xreg, int vreg, pw_xmem m) {
    vex(x, prefix, op, xreg, vreg, -1, &m);
}
size_t pw__x64_vex_rip(pw_x64 *x, int prefix, uint8_t op, int xreg, int vreg) {
    uint8_t b[MAXINS] = {0};
    uint8_t *p = vex_prefix(b, prefix, op, xreg, vreg, 0, X_NOREG); /* rip-relative: no X, B */
    *p++ = (uint8_t)(((xreg & 7) << 3) | 5);                        /* mod 00, rm 101 */
    put(x, b, p);
    size_t at = x->len;
    pw__x64_u32(x, 0);
    return at;
}
