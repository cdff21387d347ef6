/*
 * x64.h — a small x86-64 machine-code encoder for the baseline JIT (jit.c).
 *
 * Owns: byte emission into a growable buffer and the encoding of the handful of
 * instruction forms the JIT uses. Every form goes through one ModRM/SIB/REX routine
 * (pw__x64_modrm) and the ALU/shift/condition groups are tables indexed by operation,
 * so an encoding rule lives in one place. Tested against `objdump -d` of its output
 * (tests/wasm/test_jit_x64.c).
 *
 * Invariants: emission never fails half-way silently: when growing the buffer fails
 * `oom` is set and later emissions are dropped (the caller checks `oom` once at the
 * end). Memory operands take the shortest displacement (none, one byte, four), so an
 * instruction's length depends on its displacement: nothing may patch a ModRM
 * displacement after emission (only rel32 and rip-relative fields are patched, and
 * those are always four bytes).
 * No dependency beyond libc.
 */
#ifndef PW_JIT_X64_H
#define PW_JIT_X64_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct pw_x64 {
    uint8_t *buf; /* owned; free() */
    size_t len, cap;
    size_t join; /* the target of the last patched jump: a point reached from elsewhere */
    bool oom;
} pw_x64;

enum {
    X_RAX = 0,
    X_RCX,
    X_RDX,
    X_RBX,
    X_RSP,
    X_RBP,
    X_RSI,
    X_RDI,
    X_R8,
    X_R9,
    X_R10,
    X_R11,
    X_R12,
    X_R13,
    X_R14,
    X_R15,
    X_NOREG = -1
};

/* A memory operand [base + index*scale + disp]; index X_NOREG for none. */
typedef struct pw_xmem {
    int8_t base, index;
    uint8_t scale; /* 1, 2, 4, 8 */
    int32_t disp;
} pw_xmem;

static inline pw_xmem x_mem(int base, int32_t disp) {
    return (pw_xmem){(int8_t)base, X_NOREG, 1, disp};
}
static inline pw_xmem x_memi(int base, int index, int scale, int32_t disp) {
    return (pw_xmem){(int8_t)base, (int8_t)index, (uint8_t)scale, disp};
}
/* A register standing where a memory operand is expected (ModRM mod = 11): the JIT's
 * frame slots pinned to registers. X_DIRECT names a GPR, X_DIRECTX an xmm register;
 * every form that takes an r/m operand encodes either as register-direct. */
#define X_DIRECT  (-2)
#define X_DIRECTX (-3)
static inline pw_xmem x_reg(int r) {
    return (pw_xmem){(int8_t)r, X_DIRECT, 1, 0};
}
static inline pw_xmem x_xreg(int r) {
    return (pw_xmem){(int8_t)r, X_DIRECTX, 1, 0};
}
static inline bool x_is_reg(pw_xmem m) {
    return m.index <= X_DIRECT;
}

/* ALU group (table in x64.c): the r/m,r opcode is 8*op+1, the immediate form 0x81 /op. */
typedef enum { X_ADD = 0, X_OR = 1, X_AND = 4, X_SUB = 5, X_XOR = 6, X_CMP = 7 } pw_xalu;
/* Shift group: 0xD3 /op (by cl), 0xC1 /op ib. */
typedef enum { X_ROL = 0, X_ROR = 1, X_SHL = 4, X_SHR = 5, X_SAR = 7 } pw_xshift;
/* Condition codes (the low nibble of jcc/setcc/cmovcc). */
typedef enum {
    X_CC_O = 0,
    X_CC_NO,
    X_CC_B,
    X_CC_AE,
    X_CC_E,
    X_CC_NE,
    X_CC_BE,
    X_CC_A,
    X_CC_S,
    X_CC_NS,
    X_CC_P,
    X_CC_NP,
    X_CC_L,
    X_CC_GE,
    X_CC_LE,
    X_CC_G
} pw_xcc;

/* Load widths/extensions for pw__x64_load. */
typedef enum { X_LD8U, X_LD8S, X_LD16U, X_LD16S, X_LD32, X_LD32S, X_LD64 } pw_xld;

void pw__x64_byte(pw_x64 *x, uint8_t b);
void pw__x64_bytes(pw_x64 *x, const uint8_t *p, size_t n);
/* Make room for n more bytes up front (false on OOM, which is then also recorded). */
bool pw__x64_reserve(pw_x64 *x, size_t n);
void pw__x64_u32(pw_x64 *x, uint32_t v);
void pw__x64_u64(pw_x64 *x, uint64_t v);
/* Generic form: [prefix] [REX] opcode bytes (1..3) ModRM [SIB] [disp32]. `reg` is a
 * register number or an opcode extension; `rm_reg` >= 0 selects register-direct,
 * else `m` is used. w: REX.W. byte_regs: the operand is a byte register (forces REX
 * for spl..dil). */
void pw__x64_modrm(pw_x64 *x, int prefix, bool w, const uint8_t *op, int nop, int reg, int rm_reg,
                   const pw_xmem *m, bool byte_regs);

void pw__x64_alu_rr(pw_x64 *x, pw_xalu op, bool w, int dst, int src);       /* dst op= src */
void pw__x64_alu_rm(pw_x64 *x, pw_xalu op, bool w, int dst, pw_xmem m);     /* dst op= [m] */
void pw__x64_alu_ri(pw_x64 *x, pw_xalu op, bool w, int dst, int32_t imm);   /* dst op= imm */
void pw__x64_alu_mi(pw_x64 *x, pw_xalu op, bool w, pw_xmem m, int32_t imm); /* [m] op= imm */
void pw__x64_test_rr(pw_x64 *x, bool w, int a, int b);
void pw__x64_mov_rr(pw_x64 *x, bool w, int dst, int src);
void pw__x64_load(pw_x64 *x, pw_xld k, int dst, pw_xmem m);
void pw__x64_store(pw_x64 *x, int bytes, pw_xmem m, int src); /* 1, 2, 4, 8 */
void pw__x64_mov_ri32(pw_x64 *x, int dst, uint32_t imm);      /* zero-extends */
void pw__x64_mov_ri64(pw_x64 *x, int dst, uint64_t imm);      /* shortest exact form */
void pw__x64_lea(pw_x64 *x, bool w, int dst, pw_xmem m);
void pw__x64_shift_cl(pw_x64 *x, pw_xshift op, bool w, int dst);
void pw__x64_shift_i(pw_x64 *x, pw_xshift op, bool w, int dst, uint8_t imm);
void pw__x64_imul_rr(pw_x64 *x, bool w, int dst, int src);
void pw__x64_imul_rri(pw_x64 *x, bool w, int dst, int src, int32_t imm);
void pw__x64_div(pw_x64 *x, bool w, bool sign, int src); /* rdx:rax / src */
void pw__x64_mul(pw_x64 *x, bool w, int src);            /* rdx:rax = rax * src, unsigned */
void pw__x64_cdq(pw_x64 *x, bool w);                     /* cdq / cqo */
void pw__x64_setcc(pw_x64 *x, pw_xcc cc, int dst);       /* dst8 = cc */
void pw__x64_movzx8(pw_x64 *x, int dst, int src);        /* dst32 = src8 */
void pw__x64_cmov(pw_x64 *x, pw_xcc cc, bool w, int dst, int src);
void pw__x64_bsr(pw_x64 *x, bool w, int dst, int src);
void pw__x64_bsf(pw_x64 *x, bool w, int dst, int src);
void pw__x64_popcnt(pw_x64 *x, bool w, int dst, int src);
void pw__x64_movsx_rr(pw_x64 *x, int bytes_from, bool w, int dst, int src); /* 1, 2, 4 */
void pw__x64_push(pw_x64 *x, int r);
void pw__x64_pop(pw_x64 *x, int r);
void pw__x64_ret(pw_x64 *x);
void pw__x64_call_r(pw_x64 *x, int r);
void pw__x64_jmp_r(pw_x64 *x, int r);
/* Branches with a 32-bit displacement; return the offset of the displacement field
 * (to patch: disp = target - (field + 4)). */
size_t pw__x64_jcc32(pw_x64 *x, pw_xcc cc);
size_t pw__x64_jmp32(pw_x64 *x);
/* jcc (cc >= 0) or jmp (cc < 0) with an 8-bit displacement, to rel bytes past the
 * instruction's end (-128..127; a target already placed: nothing patches it). */
void pw__x64_jshort(pw_x64 *x, int cc, int8_t rel);
/* lea dst, [rip + disp32]; returns the field offset (disp relative to field + 4). */
size_t pw__x64_lea_rip(pw_x64 *x, int dst);
/* mov dst, qword [rip + disp32] and call qword [rip + disp32]; return the field offset. */
size_t pw__x64_load_rip(pw_x64 *x, int dst);
size_t pw__x64_call_rip(pw_x64 *x);
void pw__x64_patch32(pw_x64 *x, size_t at, int32_t v);

/* SSE2 (scalar floats). prefix: 0xF3 (ss), 0xF2 (sd), 0x66, or -1; op: the byte after
 * 0x0F. The xmm register goes in ModRM.reg; the other operand is xmm/GPR `rm_reg`
 * (register-direct) or memory. */
void pw__x64_sse_rr(pw_x64 *x, int prefix, uint8_t op, bool w, int xreg, int rm_reg);
void pw__x64_sse_rm(pw_x64 *x, int prefix, uint8_t op, bool w, int xreg, pw_xmem m);
/* ... with [rip + disp32] as the memory operand, and esc (0x38, 0x3A) when the opcode
 * sits in a three-byte map (0: none); returns the field offset (as pw__x64_lea_rip). */
size_t pw__x64_sse_rip(pw_x64 *x, int prefix, int esc, uint8_t op, int xreg);
/* AVX's three-operand (VEX) forms of the same opcodes: xreg = vreg op rm (scalar:
 * the upper lanes of xreg come from vreg). Only where the CPU has AVX (jit.c). */
void pw__x64_vex_rr(pw_x64 *x, int prefix, uint8_t op, int xreg, int vreg, int rm_reg);
void pw__x64_vex_rm(pw_x64 *x, int prefix, uint8_t op, int xreg, int vreg, pw_xmem m);
/* ... with [rip + disp32] as rm; returns the field offset (as pw__x64_lea_rip). */
size_t pw__x64_vex_rip(pw_x64 *x, int prefix, uint8_t op, int xreg, int vreg);
enum {
    X_SSE_MOVLD = 0x10, /* movss/movsd xmm, m */
    X_SSE_MOVST = 0x11, /* movss/movsd m, xmm */
    X_SSE_UCOMI = 0x2E, /* ucomiss (no prefix) / ucomisd (0x66) */
    X_SSE_ADD = 0x58,
    X_SSE_MUL = 0x59,
    X_SSE_SUB = 0x5C,
    X_SSE_DIV = 0x5E,
    X_SSE_MOVD = 0x6E,   /* 0x66: movd xmm, r32 / movq xmm, r64 (w) */
    X_SSE_MOVDST = 0x7E, /* 0x66: movd r32, xmm / movq r64, xmm (w) */
    X_SSE_SQRT = 0x51,
    X_SSE_MOVAPS = 0x28, /* movaps xmm, xmm (no prefix): a whole-register copy */
    X_SSE_ANDPS = 0x54,  /* andps xmm, xmm/m128 (no prefix) */
    X_SSE_XORPS = 0x57,  /* xorps xmm, xmm/m128 (no prefix): with itself, zero */
    X_SSE_CVTSI2 = 0x2A, /* cvtsi2ss (F3) / cvtsi2sd (F2) xmm, r32/r64 (w) */
    X_SSE_CVTT = 0x2C,   /* cvttss2si (F3) / cvttsd2si (F2) r32/r64 (w), xmm/m */
    X_SSE_CVTF = 0x5A    /* cvtss2sd (F3) / cvtsd2ss (F2) */
};

#endif
