/*
 * simd.h — fixed-width SIMD (the 0xFD instructions, v128) and relaxed SIMD: the
 * opcode table shared by the decoder (immediates), the validator (types) and the
 * compiler, and the interpreter's executor (simd.c).
 *
 * Representation: a v128 value occupies two consecutive 64-bit cells (low half
 * first) wherever values live in cells — frame slots, call arguments and results,
 * exception payloads, pw_val arrays of the public API. The compiler treats the two
 * halves as two stack entries (so moves, branches and calls need nothing new) and
 * every SIMD instruction is one internal instruction (XOP of kind SIMD) whose
 * executor is a function in this file (the dispatch loop stays as lean as before).
 *
 * Relaxed SIMD is deterministic here, always the same as the corresponding
 * non-relaxed instruction or the plainest exact formula: relaxed_swizzle = swizzle;
 * relaxed_trunc = trunc_sat; relaxed_madd = a*b + c and relaxed_nmadd = -(a*b) + c,
 * each rounded twice (not fused); relaxed_laneselect = bitselect; relaxed_min/max =
 * min/max; relaxed_q15mulr_s = q15mulr_sat_s; the relaxed dot products treat both
 * operands as signed bytes and wrap (no saturation).
 */
#ifndef PW_SIMD_H
#define PW_SIMD_H

#include "wasm/runtime.h"

/* Opcodes of 0xFD instructions: PW_OP_FD(sub), sub < 0x200. */
#define PW_OP_FD(sub) (0x10000u | (sub))
#define PW_FD_SUB(op) ((op)&0xFFFFu)
#define PW_FD_COUNT   0x114u

/* Immediate kinds. */
enum {
    PW_SI_NONE = 0,
    PW_SI_MEM,     /* memarg */
    PW_SI_MEMLANE, /* memarg, lane index */
    PW_SI_LANE,    /* lane index */
    PW_SI_V128,    /* 16 bytes (v128.const) */
    PW_SI_SHUF,    /* 16 lane indices (i8x16.shuffle) */
};

/* Operand and result types: 0 none, 'v' v128, 'i' i32, 'l' i64, 'f' f32, 'd' f64;
 * memory instructions take the memory's address type first (the validator adds it;
 * in[] lists the other operands). */
typedef struct pw_simd_info {
    uint8_t valid; /* 0: reserved opcode */
    uint8_t imm;   /* PW_SI_* */
    char in[3];    /* operand types, bottom first */
    char out;      /* result type */
    uint8_t lanes; /* lane index bound (lane immediates) */
    uint8_t align; /* memory: natural alignment (log2 of the access width) */
} pw_simd_info;

/* The info of 0xFD sub-opcode sub, or NULL when it is not an instruction. */
const pw_simd_info *pw__simd_op(uint32_t sub);

/* Internal pseudo sub-opcodes of the SIMD instruction (above every real one). */
enum {
    PW_SIMD_GLOBAL_GET = 0x1F0, /* dst, x0 = global index */
    PW_SIMD_GLOBAL_SET = 0x1F1, /* a, x0 = global index */
};

/* Runs one SIMD instruction: pc[1] is the sub-opcode, then [dst, a, b, c, x0..x3]
 * (the interpreter's XOP SIMD instruction from its kind word, interp.h). Memory
 * accesses use inst->mems[x0] with offset x1 | x2 << 32 and lane x3. */
pw_trap_code pw__simd_exec(pw_instance *inst, pw_slot *fp, const uint32_t *pc);

#endif
