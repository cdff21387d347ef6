/*
 * test_jit.c — the baseline JIT tier (docs/jit.md).
 *
 * 1. The x86-64 encoder against `objdump -d`: every instruction form the JIT uses is
 *    encoded into one buffer, disassembled by binutils, and compared line by line with
 *    the expected Intel-syntax text (a missing objdump fails the test under CI=true).
 * 2. Tiers agree: a hand-assembled module (loop sum, recursive fib, div, load, an
 *    endless loop, runaway recursion) runs under PW_ENGINE_JIT; the functions are
 *    really JIT-compiled (pw__jit_state), results and trap codes/messages equal the
 *    interpreter's; the interrupt flag stops the endless loop under the JIT; runaway
 *    recursion ends with "call stack exhausted" (native stack budget, then frames).
 * 3. Calls and the memory registers: self-recursive callees (direct and through
 *    call_indirect) that grow memory, the caller reading the new page and the size
 *    after the call, with guard pages and explicit checks, against the interpreter.
 * 4. Loops and slot traffic: a list walk under register pressure, br_if of a wrapped
 *    i64, i32 wraparound, nested loops, loads out of bounds at the exact boundary, a
 *    NaN loop bound, an endless loop with only a conditional back-edge (interrupted).
 * 5. The interrupt poll page: the guard variant's loop heads load it and stop when it
 *    is unreadable, the explicit variant's test the flag; the page follows the flag.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "guard_keep.h"
#include "peri/wasm.h"
#include "raiser.h"
#include "wasm/jit/jit.h"
#include "wasm/jit/x64.h"
#include "wasm/runtime.h" /* gc_stress, gc_nomap */

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/mman.h>
#include <unistd.h>

/* ---------------------------------------------------------------- encoder */

typedef void (*emit_fn)(pw_x64 *x);
typedef struct enc_case {
    emit_fn emit;
    /* objdump -M intel, mnemonic and operands, spaces collapsed; a jump's is
     * "jb 0x%lx|-128": the target, at the displacement after the bar past the
     * 2-byte instruction */
    const char *text;
} enc_case;

static void e0(pw_x64 *x) {
    pw__x64_alu_rr(x, X_ADD, false, X_RAX, X_RCX);
}
static void e1(pw_x64 *x) {
    pw__x64_alu_rr(x, X_SUB, true, X_R8, X_R15);
}
static void e2(pw_x64 *x) {
    pw__x64_alu_rm(x, X_XOR, false, X_RAX, x_mem(X_RBX, 0x18));
}
static void e3(pw_x64 *x) {
    pw__x64_alu_rm(x, X_CMP, true, X_R9, x_mem(X_R12, 8));
}
static void e4(pw_x64 *x) {
    pw__x64_alu_ri(x, X_AND, false, X_RAX, 0x7fffffff);
}
static void e5(pw_x64 *x) {
    pw__x64_alu_ri(x, X_ADD, true, X_RSP, 8);
}
static void e6(pw_x64 *x) {
    pw__x64_alu_mi(x, X_CMP, false, x_mem(X_R15, 0x10), 0);
}
static void e7(pw_x64 *x) {
    pw__x64_load(x, X_LD8S, X_RCX, x_memi(X_R12, X_RAX, 1, 0));
}
static void e8(pw_x64 *x) {
    pw__x64_load(x, X_LD16U, X_RCX, x_memi(X_R12, X_RAX, 1, 0));
}
static void e9(pw_x64 *x) {
    pw__x64_load(x, X_LD32S, X_RAX, x_memi(X_RCX, X_RAX, 4, 0));
}
static void e10(pw_x64 *x) {
    pw__x64_load(x, X_LD64, X_R13, x_mem(X_RAX, 0x10));
}
static void e11(pw_x64 *x) {
    pw__x64_store(x, 1, x_memi(X_R12, X_RAX, 1, 0), X_RCX);
}
static void e12(pw_x64 *x) {
    pw__x64_store(x, 2, x_memi(X_R12, X_RAX, 1, 0), X_RCX);
}
static void e13(pw_x64 *x) {
    pw__x64_store(x, 8, x_mem(X_RBX, 0x40), X_RAX);
}
static void e14(pw_x64 *x) {
    pw__x64_mov_ri64(x, X_RAX, 0x8000000000000000ull);
}
static void e15(pw_x64 *x) {
    pw__x64_mov_ri64(x, X_R9, 0xffffffffffffffffull);
}
static void e16(pw_x64 *x) {
    pw__x64_mov_ri32(x, X_R10, 7);
}
static void e17(pw_x64 *x) {
    pw__x64_shift_cl(x, X_SAR, true, X_RAX);
}
static void e18(pw_x64 *x) {
    pw__x64_shift_i(x, X_ROL, false, X_RAX, 5);
}
static void e19(pw_x64 *x) {
    pw__x64_imul_rr(x, true, X_RAX, X_RCX);
}
static void e20(pw_x64 *x) {
    pw__x64_imul_rri(x, false, X_RAX, X_RAX, 1000);
}
static void e21(pw_x64 *x) {
    pw__x64_div(x, true, true, X_RCX);
}
static void e22(pw_x64 *x) {
    pw__x64_div(x, false, false, X_RCX);
}
static void e23(pw_x64 *x) {
    pw__x64_cdq(x, true);
}
static void e24(pw_x64 *x) {
    pw__x64_setcc(x, X_CC_L, X_RAX);
}
static void e25(pw_x64 *x) {
    pw__x64_movzx8(x, X_RAX, X_RAX);
}
static void e26(pw_x64 *x) {
    pw__x64_cmov(x, X_CC_A, false, X_RAX, X_RCX);
}
static void e27(pw_x64 *x) {
    pw__x64_bsr(x, true, X_RAX, X_RAX);
}
static void e28(pw_x64 *x) {
    pw__x64_popcnt(x, false, X_RAX, X_RAX);
}
static void e29(pw_x64 *x) {
    pw__x64_movsx_rr(x, 1, true, X_RAX, X_RAX);
}
static void e30(pw_x64 *x) {
    pw__x64_movsx_rr(x, 4, true, X_RCX, X_RCX);
}
static void e31(pw_x64 *x) {
    pw__x64_push(x, X_R15);
}
static void e32(pw_x64 *x) {
    pw__x64_pop(x, X_RBX);
}
static void e33(pw_x64 *x) {
    pw__x64_call_r(x, X_RAX);
}
static void e34(pw_x64 *x) {
    pw__x64_jmp_r(x, X_RAX);
}
static void e35(pw_x64 *x) {
    pw__x64_lea(x, true, X_RDX, x_mem(X_RAX, 4));
}
static void e36(pw_x64 *x) {
    pw__x64_test_rr(x, false, X_RAX, X_RAX);
}
static void e37(pw_x64 *x) {
    pw__x64_mov_rr(x, true, X_RBX, X_RDI);
}
static void e38(pw_x64 *x) {
    pw__x64_bsf(x, false, X_RAX, X_RAX);
}
static void e39(pw_x64 *x) {
    pw__x64_ret(x);
}
/* Register pinning: slot operands that are registers (x_reg / x_xreg),
 * GPR <-> xmm moves, register copies and the inline float conversions. */
static void e40(pw_x64 *x) {
    pw__x64_alu_rm(x, X_ADD, false, X_RAX, x_reg(X_RBP));
}
static void e41(pw_x64 *x) {
    pw__x64_load(x, X_LD64, X_RCX, x_reg(X_R11));
}
static void e42(pw_x64 *x) {
    pw__x64_store(x, 4, x_reg(X_RSI), X_RAX);
}
static void e43(pw_x64 *x) {
    pw__x64_alu_mi(x, X_CMP, false, x_reg(X_R8), 2);
}
static void e44(pw_x64 *x) {
    pw__x64_sse_rm(x, 0xF2, X_SSE_ADD, false, 0, x_xreg(9));
}
static void e45(pw_x64 *x) {
    pw__x64_sse_rr(x, 0x66, X_SSE_MOVDST, true, 3, X_RCX);
}
static void e46(pw_x64 *x) {
    pw__x64_sse_rr(x, 0x66, X_SSE_MOVD, false, 12, X_RAX);
}
static void e47(pw_x64 *x) {
    pw__x64_sse_rr(x, -1, X_SSE_MOVAPS, false, 2, 15);
}
static void e48(pw_x64 *x) {
    pw__x64_sse_rr(x, 0xF2, X_SSE_SQRT, false, 5, 5);
}
static void e49(pw_x64 *x) {
    pw__x64_sse_rr(x, 0xF2, X_SSE_CVTSI2, true, 0, X_RAX);
}
static void e50(pw_x64 *x) {
    pw__x64_sse_rr(x, 0xF3, X_SSE_CVTSI2, false, 1, X_RAX);
}
static void e51(pw_x64 *x) {
    pw__x64_sse_rr(x, 0xF2, X_SSE_CVTF, false, 0, 1);
}
static void e52(pw_x64 *x) {
    pw__x64_sse_rm(x, 0xF2, X_SSE_MOVST, false, 10, x_mem(X_R12, 0));
}
static void e53(pw_x64 *x) {
    pw__x64_store(x, 1, x_memi(X_R12, X_RAX, 1, 0), X_RSI);
}
/* rip-relative forms (the GOT, br_table's table); the field is patched as the JIT does */
static void e54(pw_x64 *x) {
    pw__x64_patch32(x, pw__x64_load_rip(x, X_R9), 0x10);
}
static void e55(pw_x64 *x) {
    pw__x64_patch32(x, pw__x64_call_rip(x), -0x80);
}
static void e56(pw_x64 *x) {
    pw__x64_patch32(x, pw__x64_lea_rip(x, X_RCX), 8);
}
static void e57(pw_x64 *x) {
    pw__x64_alu_mi(x, X_CMP, false, x_mem(X_R15, 4096), 0);
}
/* AVX's three-operand forms: two-byte VEX (C5) without REX.X/B, three-byte (C4)
 * with either; the destination, second source (vvvv) and r/m each past xmm7 */
static void e58(pw_x64 *x) {
    pw__x64_vex_rr(x, 0xF2, X_SSE_ADD, 0, 1, 2);
}
static void e59(pw_x64 *x) {
    pw__x64_vex_rr(x, 0xF2, X_SSE_MUL, 10, 5, 3);
}
static void e60(pw_x64 *x) {
    pw__x64_vex_rr(x, 0xF3, X_SSE_DIV, 1, 14, 11);
}
static void e61(pw_x64 *x) {
    pw__x64_vex_rm(x, 0xF2, X_SSE_SUB, 2, 9, x_memi(X_R12, X_RAX, 1, 8));
}
static void e62(pw_x64 *x) {
    pw__x64_vex_rm(x, 0xF3, X_SSE_MUL, 15, 2, x_memi(X_R12, X_R8, 1, 0));
}
static void e63(pw_x64 *x) {
    pw__x64_vex_rm(x, 0xF2, X_SSE_ADD, 3, 4, x_mem(X_RBX, 0x40));
}
static void e64(pw_x64 *x) {
    pw__x64_vex_rr(x, 0xF3, X_SSE_SUB, 12, 13, 7);
}
static void e65(pw_x64 *x) {
    pw__x64_patch32(x, pw__x64_vex_rip(x, 0xF2, X_SSE_DIV, 10, 11), 0x20);
}

/* The displacement's three lengths: none for 0 (but rbp and r13 as a base need a
 * byte: their mod 00 codes mean rip-relative or no base), one byte from -128 to
 * 127, four beyond; rsp and r12 as a base need a SIB byte; rbp as an index does not
 * change the form */
static void e66(pw_x64 *x) {
    pw__x64_load(x, X_LD32, X_RAX, x_mem(X_RBP, 0));
}
static void e67(pw_x64 *x) {
    pw__x64_load(x, X_LD64, X_RCX, x_mem(X_R13, 0));
}
static void e68(pw_x64 *x) {
    pw__x64_store(x, 4, x_memi(X_R13, X_RAX, 1, 0), X_R9);
}
static void e69(pw_x64 *x) {
    pw__x64_store(x, 8, x_mem(X_RSP, 8), X_RAX);
}
static void e70(pw_x64 *x) {
    pw__x64_lea(x, true, X_RDX, x_mem(X_RSP, 0));
}
static void e71(pw_x64 *x) {
    pw__x64_alu_rm(x, X_ADD, false, X_RSI, x_mem(X_RBX, 127));
}
static void e72(pw_x64 *x) {
    pw__x64_alu_rm(x, X_SUB, true, X_R10, x_mem(X_RBX, 128));
}
static void e73(pw_x64 *x) {
    pw__x64_load(x, X_LD16S, X_RDI, x_mem(X_R12, -128));
}
static void e74(pw_x64 *x) {
    pw__x64_load(x, X_LD8U, X_R11, x_mem(X_R12, -129));
}
static void e75(pw_x64 *x) {
    pw__x64_load(x, X_LD32, X_RSI, x_memi(X_RDI, X_RBP, 8, 0));
}
static void e76(pw_x64 *x) {
    pw__x64_vex_rm(x, 0xF2, X_SSE_MUL, 1, 2, x_memi(X_RBP, X_R9, 2, 0));
}
static void e77(pw_x64 *x) {
    pw__x64_alu_mi(x, X_CMP, true, x_memi(X_R12, X_RCX, 4, -4), 1000);
}
/* The short jumps of a loop's back-edge: rel8, to the farthest target behind */
static void e78(pw_x64 *x) {
    pw__x64_jshort(x, X_CC_B, -128);
}
static void e79(pw_x64 *x) {
    pw__x64_jshort(x, -1, -2);
}
static void e80(pw_x64 *x) {
    pw__x64_jshort(x, X_CC_G, -40);
}
/* Legacy SSE forms reading the literal pool: REX.R past xmm7, a three-byte map */
static void e81(pw_x64 *x) {
    pw__x64_patch32(x, pw__x64_sse_rip(x, 0x66, 0, X_SSE_UCOMI, 9), 0x10);
}
static void e82(pw_x64 *x) {
    pw__x64_patch32(x, pw__x64_sse_rip(x, 0x66, 0x38, 0x00, 2), 0x40);
}

static void e83(pw_x64 *x) {
    pw__x64_mul(x, true, X_RDX);
}
static void e84(pw_x64 *x) {
    pw__x64_mul(x, false, X_R9);
}
static const enc_case cases[] = {
    {e0, "add eax,ecx"},
    {e1, "sub r8,r15"},
    {e2, "xor eax,DWORD PTR [rbx+0x18]"},
    {e3, "cmp r9,QWORD PTR [r12+0x8]"},
    {e4, "and eax,0x7fffffff"},
    {e5, "add rsp,0x8"},
    {e6, "cmp DWORD PTR [r15+0x10],0x0"},
    {e7, "movsx ecx,BYTE PTR [r12+rax*1]"},
    {e8, "movzx ecx,WORD PTR [r12+rax*1]"},
    {e9, "movsxd rax,DWORD PTR [rcx+rax*4]"},
    {e10, "mov r13,QWORD PTR [rax+0x10]"},
    {e11, "mov BYTE PTR [r12+rax*1],cl"},
    {e12, "mov WORD PTR [r12+rax*1],cx"},
    {e13, "mov QWORD PTR [rbx+0x40],rax"},
    {e14, "movabs rax,0x8000000000000000"},
    {e15, "mov r9,0xffffffffffffffff"},
    {e16, "mov r10d,0x7"},
    {e17, "sar rax,cl"},
    {e18, "rol eax,0x5"},
    {e19, "imul rax,rcx"},
    {e20, "imul eax,eax,0x3e8"},
    {e21, "idiv rcx"},
    {e22, "div ecx"},
    {e23, "cqo"},
    {e24, "setl al"},
    {e25, "movzx eax,al"},
    {e26, "cmova eax,ecx"},
    {e27, "bsr rax,rax"},
    {e28, "popcnt eax,eax"},
    {e29, "movsx rax,al"},
    {e30, "movsxd rcx,ecx"},
    {e31, "push r15"},
    {e32, "pop rbx"},
    {e33, "call rax"},
    {e34, "jmp rax"},
    {e35, "lea rdx,[rax+0x4]"},
    {e36, "test eax,eax"},
    {e37, "mov rbx,rdi"},
    {e38, "bsf eax,eax"},
    {e39, "ret"},
    {e40, "add eax,ebp"},
    {e41, "mov rcx,r11"},
    {e42, "mov esi,eax"},
    {e43, "cmp r8d,0x2"},
    {e44, "addsd xmm0,xmm9"},
    {e45, "movq rcx,xmm3"},
    {e46, "movd xmm12,eax"},
    {e47, "movaps xmm2,xmm15"},
    {e48, "sqrtsd xmm5,xmm5"},
    {e49, "cvtsi2sd xmm0,rax"},
    {e50, "cvtsi2ss xmm1,eax"},
    {e51, "cvtsd2ss xmm0,xmm1"},
    {e52, "movsd QWORD PTR [r12],xmm10"},
    {e53, "mov BYTE PTR [r12+rax*1],sil"},
    {e54, "mov r9,QWORD PTR [rip+0x10]"},
    {e55, "call QWORD PTR [rip+0xffffffffffffff80]"},
    {e56, "lea rcx,[rip+0x8]"},
    {e57, "cmp DWORD PTR [r15+0x1000],0x0"},
    {e58, "vaddsd xmm0,xmm1,xmm2"},
    {e59, "vmulsd xmm10,xmm5,xmm3"},
    {e60, "vdivss xmm1,xmm14,xmm11"},
    {e61, "vsubsd xmm2,xmm9,QWORD PTR [r12+rax*1+0x8]"},
    {e62, "vmulss xmm15,xmm2,DWORD PTR [r12+r8*1]"},
    {e63, "vaddsd xmm3,xmm4,QWORD PTR [rbx+0x40]"},
    {e64, "vsubss xmm12,xmm13,xmm7"},
    {e65, "vdivsd xmm10,xmm11,QWORD PTR [rip+0x20]"},
    {e66, "mov eax,DWORD PTR [rbp+0x0]"},
    {e67, "mov rcx,QWORD PTR [r13+0x0]"},
    {e68, "mov DWORD PTR [r13+rax*1+0x0],r9d"},
    {e69, "mov QWORD PTR [rsp+0x8],rax"},
    {e70, "lea rdx,[rsp]"},
    {e71, "add esi,DWORD PTR [rbx+0x7f]"},
    {e72, "sub r10,QWORD PTR [rbx+0x80]"},
    {e73, "movsx edi,WORD PTR [r12-0x80]"},
    {e74, "movzx r11d,BYTE PTR [r12-0x81]"},
    {e75, "mov esi,DWORD PTR [rdi+rbp*8]"},
    {e76, "vmulsd xmm1,xmm2,QWORD PTR [rbp+r9*2+0x0]"},
    {e77, "cmp QWORD PTR [r12+rcx*4-0x4],0x3e8"},
    {e78, "jb 0x%lx|-128"},
    {e79, "jmp 0x%lx|-2"},
    {e80, "jg 0x%lx|-40"},
    {e81, "ucomisd xmm9,QWORD PTR [rip+0x10]"},
    {e82, "pshufb xmm2,XMMWORD PTR [rip+0x40]"},
    {e83, "mul rdx"},
    {e84, "mul r9d"},
};
#define NCASES (sizeof cases / sizeof cases[0])

/* Collapse runs of spaces and drop them after commas. */
static void norm(char *s) {
    char *o = s;
    bool sp = false;
    for (char *p = s; *p; p++) {
        if (*p == ' ' || *p == '\t') {
            sp = true;
            continue;
        }
        if (sp && o != s && o[-1] != ',' && *p != ',') *o++ = ' ';
        sp = false;
        *o++ = *p;
    }
    *o = 0;
}

static void test_encoder_objdump(void **state) {
    (void)state;
    if (access("/usr/bin/objdump", X_OK) != 0) {
        const char *ci = getenv("CI");
        if (ci && strcmp(ci, "true") == 0) fail_msg("objdump (binutils) is required in CI");
        skip();
    }
    char dir[] = "/tmp/peri-jit-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char bin[256], cmd[1024];
    snprintf(bin, sizeof bin, "%s/code.bin", dir);
    /* One instruction per case; each case's start offset is recorded. */
    pw_x64 x = {0};
    size_t starts[NCASES];
    for (size_t i = 0; i < NCASES; i++) {
        starts[i] = x.len;
        cases[i].emit(&x);
    }
    assert_false(x.oom);
    FILE *f = fopen(bin, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(x.buf, 1, x.len, f), x.len);
    fclose(f);
    snprintf(cmd, sizeof cmd, "objdump -D -b binary -m i386:x86-64 -M intel --no-show-raw-insn %s",
             bin);
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    char line[512];
    size_t seen = 0;
    while (fgets(line, sizeof line, p)) {
        unsigned long off;
        char text[400];
        if (sscanf(line, " %lx: %399[^\n]", &off, text) != 2) continue;
        char *note = strstr(text, "#"); /* objdump's "# <address>" of rip-relative forms */
        if (note) *note = 0;
        norm(text);
        size_t i = 0;
        while (i < NCASES && starts[i] != off)
            i++;
        if (i == NCASES) fail_msg("objdump split an instruction: offset %lx '%s'", off, text);
        char want[128];
        snprintf(want, sizeof want, "%s", cases[i].text);
        char *bar = strchr(want, '|');
        if (bar) {
            long rel = strtol(bar + 1, NULL, 10);
            *bar = 0;
            char fmt[128];
            snprintf(fmt, sizeof fmt, "%s", want);
            snprintf(want, sizeof want, fmt, (unsigned long)((long)starts[i] + 2 + rel));
        }
        if (strcmp(text, want) != 0)
            fail_msg("case %zu: objdump says '%s', expected '%s'", i, text, want);
        seen++;
    }
    pclose(p);
    assert_int_equal(seen, NCASES);
    free(x.buf);
    unlink(bin);
    rmdir(dir);
}

/* ---------------------------------------------------------------- tiers */

/* Types: 0 (i32)->i32, 1 ()->(). Functions: 0 sum (loop), 1 spin (loop br 0),
 * 2 div (100 / x), 3 load (i32.load x), 4 fib (recursive), 5 runaway (call self).
 * One memory of one page. */
static const uint8_t MOD[] = {0x00,
                              0x61,
                              0x73,
                              0x6d,
                              0x01,
                              0x00,
                              0x00,
                              0x00,
                              /* type */ 0x01,
                              0x09,
                              0x02,
                              0x60,
                              0x01,
                              0x7f,
                              0x01,
                              0x7f,
                              0x60,
                              0x00,
                              0x00,
                              /* func */ 0x03,
                              0x07,
                              0x06,
                              0x00,
                              0x01,
                              0x00,
                              0x00,
                              0x00,
                              0x01,
                              /* memory */ 0x05,
                              0x03,
                              0x01,
                              0x00,
                              0x01,
                              /* export */ 0x07,
                              0x2b,
                              0x06,
                              0x03,
                              's',
                              'u',
                              'm',
                              0x00,
                              0x00,
                              0x04,
                              's',
                              'p',
                              'i',
                              'n',
                              0x00,
                              0x01,
                              0x03,
                              'd',
                              'i',
                              'v',
                              0x00,
                              0x02,
                              0x04,
                              'l',
                              'o',
                              'a',
                              'd',
                              0x00,
                              0x03,
                              0x03,
                              'f',
                              'i',
                              'b',
                              0x00,
                              0x04,
                              0x07,
                              'r',
                              'u',
                              'n',
                              'a',
                              'w',
                              'a',
                              'y',
                              0x00,
                              0x05,
                              /* code */ 0x0a,
                              0x5e,
                              0x06,
                              /* sum */ 0x21,
                              0x01,
                              0x01,
                              0x7f,
                              0x02,
                              0x40,
                              0x03,
                              0x40,
                              0x20,
                              0x00,
                              0x45,
                              0x0d,
                              0x01,
                              0x20,
                              0x01,
                              0x20,
                              0x00,
                              0x6a,
                              0x21,
                              0x01,
                              0x20,
                              0x00,
                              0x41,
                              0x01,
                              0x6b,
                              0x21,
                              0x00,
                              0x0c,
                              0x00,
                              0x0b,
                              0x0b,
                              0x20,
                              0x01,
                              0x0b,
                              /* spin */ 0x07,
                              0x00,
                              0x03,
                              0x40,
                              0x0c,
                              0x00,
                              0x0b,
                              0x0b,
                              /* div */ 0x08,
                              0x00,
                              0x41,
                              0xe4,
                              0x00,
                              0x20,
                              0x00,
                              0x6d,
                              0x0b,
                              /* load */ 0x07,
                              0x00,
                              0x20,
                              0x00,
                              0x28,
                              0x02,
                              0x00,
                              0x0b,
                              /* fib */ 0x1c,
                              0x00,
                              0x20,
                              0x00,
                              0x41,
                              0x02,
                              0x48,
                              0x04,
                              0x7f,
                              0x20,
                              0x00,
                              0x05,
                              0x20,
                              0x00,
                              0x41,
                              0x01,
                              0x6b,
                              0x10,
                              0x04,
                              0x20,
                              0x00,
                              0x41,
                              0x02,
                              0x6b,
                              0x10,
                              0x04,
                              0x6a,
                              0x0b,
                              0x0b,
                              /* runaway */ 0x04,
                              0x00,
                              0x10,
                              0x05,
                              0x0b};

/* call_indirect through a table of 5: [dbl, inc, other, null, triple].
 * (func $dbl (type 0) (local i32): p0 + p0 + l1, then l1 = 1000 (a declared local
 * left dirty, so a missing zeroing shows); $inc (type 0): p0 + 1; $other (type 1,
 * () -> i32): 7; $triple (type 3, the same signature as type 0 under another index):
 * p0 * 3. Exports: "ci" (x, i) = call_indirect (type 0) table[i](x); "loop" (n) =
 * the sum over i < n of table[i & 1](i). Built from the binary format by hand. */
static const char CI_MOD[] = "\x00\x61\x73\x6d\x01\x00\x00\x00\x01\x15\x04\x60\x01\x7f\x01\x7f"
                             "\x60\x00\x01\x7f\x60\x02\x7f\x7f\x01\x7f\x60\x01\x7f\x01\x7f\x03"
                             "\x07\x06\x00\x00\x01\x02\x00\x03\x04\x04\x01\x70\x00\x05\x07\x0d"
                             "\x02\x02\x63\x69\x00\x03\x04\x6c\x6f\x6f\x70\x00\x04\x09\x0f\x02"
                             "\x00\x41\x00\x0b\x03\x00\x01\x02\x00\x41\x04\x0b\x01\x05\x0a\x5e"
                             "\x06\x11\x01\x01\x7f\x20\x00\x20\x00\x6a\x20\x01\x6a\x41\xe8\x07"
                             "\x21\x01\x0b\x07\x00\x20\x00\x41\x01\x6a\x0b\x04\x00\x41\x07\x0b"
                             "\x09\x00\x20\x00\x20\x01\x11\x00\x00\x0b\x2b\x01\x02\x7f\x02\x40"
                             "\x03\x40\x20\x01\x20\x00\x4f\x0d\x01\x20\x02\x20\x01\x20\x01\x41"
                             "\x01\x71\x11\x00\x00\x6a\x21\x02\x20\x01\x41\x01\x6a\x21\x01\x0c"
                             "\x00\x0b\x0b\x20\x02\x0b\x07\x00\x20\x00\x41\x03\x6c\x0b";

typedef struct rig {
    pw_module *m;
    pw_store *s;
    pw_instance *inst;
} rig;

static void rig_open_cfg(rig *r, const pw_store_config *cfg, const void *mod, size_t len) {
    pw_error err;
    guard_restore(cfg->bounds_checks);
    r->m = pw_module_new(mod, len, NULL, &err);
    if (!r->m) fail_msg("module: %s", err.message);
    r->s = pw_store_new(cfg, &err);
    assert_non_null(r->s);
    r->inst = pw_instantiate(r->s, r->m, NULL, NULL, &err);
    if (!r->inst) fail_msg("instantiate: %s", err.message);
    guard_check(cfg->bounds_checks, r->inst);
}

static void rig_open_mod(rig *r, int engine, const void *mod, size_t len) {
    pw_store_config cfg = {.engine = engine};
    rig_open_cfg(r, &cfg, mod, len);
}

static void rig_open(rig *r, int engine) {
    rig_open_mod(r, engine, MOD, sizeof MOD);
}

static void rig_close(rig *r) {
    pw_store_free(r->s);
    pw_module_free(r->m);
}

/* The binary of a test's WAT text (caller frees); fails the test on a parse error. */
static uint8_t *wat_module(const char *wat, size_t *n) {
    uint8_t *mod = NULL;
    pw_error err;
    if (pw_wat_to_wasm(wat, strlen(wat), &mod, n, &err) != PW_OK) fail_msg("wat: %s", err.message);
    return mod;
}

static pw_func *fn(rig *r, const char *name) {
    pw_extern ex;
    assert_true(pw_instance_export(r->inst, name, strlen(name), &ex));
    return ex.u.func;
}

/* Call name(arg) -> status, result, error text. */
static pw_status call1(rig *r, const char *name, int32_t arg, int32_t *res, pw_error *err) {
    pw_val a = {.bits = (uint32_t)arg}, out = {0};
    pw_status st = pw_call(r->s, fn(r, name), &a, 1, &out, 1, err);
    *res = (int32_t)out.bits;
    return st;
}

static void test_tiers_agree(void **state) {
    (void)state;
    if (!PW_JIT_AVAILABLE) skip();
    rig in, jt;
    rig_open(&in, PW_ENGINE_INTERP);
    rig_open(&jt, PW_ENGINE_JIT);
    static const struct {
        const char *name;
        int32_t arg;
    } calls[] = {{"sum", 0},   {"sum", 1000}, {"div", 7},      {"div", 0},
                 {"div", -1},  {"load", 0},   {"load", 65532}, {"load", 65533},
                 {"load", -1}, {"fib", 20},   {"fib", 1}};
    for (size_t i = 0; i < sizeof calls / sizeof calls[0]; i++) {
        pw_error e1, e2;
        int32_t r1 = 0, r2 = 0;
        memset(&e1, 0, sizeof e1);
        memset(&e2, 0, sizeof e2);
        pw_status s1 = call1(&in, calls[i].name, calls[i].arg, &r1, &e1);
        pw_status s2 = call1(&jt, calls[i].name, calls[i].arg, &r2, &e2);
        assert_int_equal(s1, s2);
        if (s1 == PW_OK) {
            assert_int_equal(r1, r2);
        } else {
            assert_int_equal(e1.trap, e2.trap);
            assert_string_equal(e1.message, e2.message);
        }
        /* really compiled by the JIT, not left on the interpreter */
        assert_int_equal(pw__jit_state(fn(&jt, calls[i].name)), 1);
        assert_int_equal(pw__jit_state(fn(&in, calls[i].name)), 0);
    }
    int32_t r;
    pw_error e;
    assert_int_equal(call1(&jt, "sum", 1000, &r, &e), PW_OK);
    assert_int_equal(r, 500500);
    assert_int_equal(call1(&jt, "fib", 20, &r, &e), PW_OK);
    assert_int_equal(r, 6765);
    assert_int_equal(call1(&jt, "div", 0, &r, &e), PW_ERR_TRAP);
    assert_string_equal(e.message, "integer divide by zero");
    assert_int_equal(call1(&jt, "load", 65533, &r, &e), PW_ERR_TRAP);
    assert_string_equal(e.message, "out of bounds memory access");
    rig_close(&in);
    rig_close(&jt);
}

static pw_status call2(rig *r, const char *name, int32_t a0, int32_t a1, int32_t *res,
                       pw_error *err) {
    pw_val a[2] = {{.bits = (uint32_t)a0}, {.bits = (uint32_t)a1}}, out = {0};
    memset(err, 0, sizeof *err);
    pw_status st = pw_call(r->s, fn(r, name), a, 2, &out, 1, err);
    *res = (int32_t)out.bits;
    return st;
}

/* call_indirect under the JIT (inline fast path, and the helper for everything it
 * does not take) against the interpreter: results, and each trap with its message. */
static void test_call_indirect(void **state) {
    (void)state;
    rig in, jt;
    rig_open_mod(&in, PW_ENGINE_INTERP, CI_MOD, sizeof CI_MOD - 1);
    rig_open_mod(&jt, PW_ENGINE_JIT, CI_MOD, sizeof CI_MOD - 1);
    static const struct {
        int32_t x, i, want; /* want: the result, or -1 for a trap */
        const char *msg;
    } calls[] = {
        {21, 0, 42, NULL},
        {21, 0, 42, NULL}, /* twice: the local must be zeroed again */
        {41, 1, 42, NULL},
        {14, 4, 42, NULL}, /* another type index, the same type */
        {1, 2, -1, "indirect call type mismatch"},
        {1, 3, -1, "uninitialized element"},
        {1, 5, -1, "undefined element"},
        {1, -1, -1, "undefined element"},
        {21, 0, 42, NULL}, /* the store stays usable after each trap */
    };
    for (size_t k = 0; k < sizeof calls / sizeof calls[0]; k++) {
        for (int e = 0; e < 2; e++) {
            rig *r = e ? &jt : &in;
            int32_t res = 0;
            pw_error err;
            pw_status st = call2(r, "ci", calls[k].x, calls[k].i, &res, &err);
            if (calls[k].msg) {
                assert_int_equal(st, PW_ERR_TRAP);
                assert_string_equal(err.message, calls[k].msg);
            } else {
                assert_int_equal(st, PW_OK);
                assert_int_equal(res, calls[k].want);
            }
        }
    }
    /* many calls from a loop whose values are held in registers across them */
    int64_t want = 0;
    for (int32_t i = 0; i < 10000; i++)
        want += i & 1 ? i + 1 : 2 * i;
    for (int e = 0; e < 2; e++) {
        int32_t res = 0;
        pw_error err;
        assert_int_equal(call1(e ? &jt : &in, "loop", 10000, &res, &err), PW_OK);
        assert_int_equal(res, (int32_t)want);
    }
    if (PW_JIT_AVAILABLE) {
        assert_int_equal(pw__jit_state(fn(&jt, "ci")), 1);
        assert_int_equal(pw__jit_state(fn(&jt, "loop")), 1);
    }
    rig_close(&in);
    rig_close(&jt);
}

/* Calls of a function by itself (the memory registers are kept across one that
 * cannot change memory 0, reloaded across one that can). One memory of one page.
 * (func $grow (param i32) (result i32): n ? (grow(n - 1), i32.load (65536) +
 * memory.size) : (memory.grow 1, i32.store (65536) 7, 0)): every level reads the page
 * its innermost call added and the new size, through the memory registers.
 * (func $sum (param i32) (result i32): n ? (i32.store8 (n) n, sum(n - 1) +
 * i32.load8_u (n)) : 0): no call sequence other than itself, so memory reads after
 * its calls use r12/r13 as they were. (func $igrow: $grow with its call made by
 * call_indirect through a table holding $igrow, the inline fast path.) Built from the
 * binary format by hand. */
static const char SELF_MOD[] = "\x00\x61\x73\x6d\x01\x00\x00\x00\x01\x06\x01\x60\x01\x7f\x01\x7f"
                               "\x03\x04\x03\x00\x00\x00\x04\x04\x01\x70\x00\x01\x05\x03\x01\x00"
                               "\x01\x07\x16\x03\x04\x67\x72\x6f\x77\x00\x00\x03\x73\x75\x6d\x00"
                               "\x01\x05\x69\x67\x72\x6f\x77\x00\x02\x09\x07\x01\x00\x41\x00\x0b"
                               "\x01\x02\x0a\x79\x03\x2a\x00\x20\x00\x04\x7f\x20\x00\x41\x01\x6b"
                               "\x10\x00\x1a\x41\x80\x80\x04\x28\x02\x00\x3f\x00\x6a\x05\x41\x01"
                               "\x40\x00\x1a\x41\x80\x80\x04\x41\x07\x36\x02\x00\x41\x00\x0b\x0b"
                               "\x1e\x00\x20\x00\x04\x7f\x20\x00\x20\x00\x3a\x00\x00\x20\x00\x41"
                               "\x01\x6b\x10\x01\x20\x00\x2d\x00\x00\x6a\x05\x41\x00\x0b\x0b\x2d"
                               "\x00\x20\x00\x04\x7f\x20\x00\x41\x01\x6b\x41\x00\x11\x00\x00\x1a"
                               "\x41\x80\x80\x04\x28\x02\x00\x3f\x00\x6a\x05\x41\x01\x40\x00\x1a"
                               "\x41\x80\x80\x04\x41\x07\x36\x02\x00\x41\x00\x0b\x0b";

/* The tiers a behaviour is compared across: the interpreter, the JIT with guard pages,
 * the JIT with explicit bounds checks, and (probe_tiers) the JIT with guard pages using
 * plain SSE2 only (no AVX forms, no SSE4.1). */
static const struct {
    int engine, bounds;
    bool sse2;
} tiers[] = {{PW_ENGINE_INTERP, PW_BOUNDS_GUARD, false},
             {PW_ENGINE_JIT, PW_BOUNDS_GUARD, false},
             {PW_ENGINE_JIT, PW_BOUNDS_EXPLICIT, false},
             {PW_ENGINE_JIT, PW_BOUNDS_GUARD, true}};

static void test_self_calls(void **state) {
    (void)state;
    /* each tier with a small frame limit (a deep recursion traps) and a small native stack
     * budget (deeper calls move to the interpreter, which calls back into the JIT) */
    static const struct {
        const char *name;
        int32_t arg;
        bool traps; /* "call stack exhausted" */
    } calls[] = {{"grow", 0, false},    {"grow", 1, false},   {"grow", 5, false},
                 {"grow", 40, false},   {"sum", 0, false},    {"sum", 3, false},
                 {"sum", 300, false},   {"sum", 2990, false}, {"sum", 3100, true},
                 {"grow", 3100, true},  {"grow", 2, false},   {"sum", 255, false},
                 {"igrow", 0, false},   {"igrow", 1, false},  {"igrow", 30, false},
                 {"igrow", 3100, true}, {"grow", 1, false}};
    int32_t want[sizeof calls / sizeof calls[0]];
    for (size_t mi = 0; mi < sizeof tiers / sizeof tiers[0]; mi++) {
        pw_store_config cfg = {.engine = tiers[mi].engine,
                               .bounds_checks = tiers[mi].bounds,
                               .max_call_depth = 3000,
                               .jit_native_stack = 16 * 1024};
        rig r;
        rig_open_cfg(&r, &cfg, SELF_MOD, sizeof SELF_MOD - 1);
        for (size_t k = 0; k < sizeof calls / sizeof calls[0]; k++) {
            int32_t res = 0;
            pw_error err;
            memset(&err, 0, sizeof err);
            pw_status st = call1(&r, calls[k].name, calls[k].arg, &res, &err);
            if (calls[k].traps) {
                assert_int_equal(st, PW_ERR_TRAP);
                assert_string_equal(err.message, "call stack exhausted");
                continue;
            }
            if (st != PW_OK) fail_msg("%s(%d): %s", calls[k].name, calls[k].arg, err.message);
            if (mi == 0)
                want[k] = res; /* the interpreter's */
            else
                assert_int_equal(res, want[k]);
        }
        if (mi == 0) {                        /* the interpreter's results, worked out by hand */
            assert_int_equal(want[1], 7 + 3); /* the page added by grow(0), then by grow(1) */
            assert_int_equal(want[3], 7 + 5);
            assert_int_equal(want[6], 32640 + 990); /* the bytes are n & 255 */
            assert_int_equal(want[10], 7 + 6);
            assert_int_equal(want[14], 7 + 9);
            assert_int_equal(want[16], 7 + 10);
        }
        rig_close(&r);
    }
}

/* call_indirect's cache (docs/jit.md "call_indirect"): $site(k, i) runs call site k
 * of 96, each a call_indirect of table[i] (of type $a at even k, $b at odd k); the
 * sites share the instance's cells, so many of them meet sites of the other type in
 * one. $fa and $fc are of type $a, $fb of type $b: table = [$fa, $fb, $deep]. Every
 * even site fills its cell with $fa, then every odd site calls $fa and must trap on
 * its type, not take the cell; the same the other way round. "swap" puts $fc where
 * $fa was: every site that held $fa in its cell must now reach $fc. $deep (type $a,
 * a frame of 2,100 slots, more than the margin past the value stack's end) calls
 * itself through the table, noting its depth, until the value stack runs out: with
 * the frame size a cell holds, the JIT must stop at the interpreter's depth (one
 * level more would write past the stack). Every tier against the interpreter. */
#define IC_SITES 96
static char *ic_wat(void) {
    size_t cap = 128 * 1024, n = 0;
    char *w = malloc(cap);
    assert_non_null(w);
#define IC_PUT(...) (n += (size_t)snprintf(w + n, cap - n, __VA_ARGS__), assert_true(n < cap))
    IC_PUT("(module (type $a (func (param i32) (result i32)))\n"
           " (type $b (func (param i32 i32) (result i32)))\n"
           " (table 3 funcref) (elem (i32.const 0) $fa $fb $deep) (elem declare func $fc)\n"
           " (func $fa (type $a) (i32.add (local.get 0) (i32.const 1)))\n"
           " (func $fb (type $b) (i32.mul (local.get 0) (local.get 1)))\n"
           " (func $fc (type $a) (i32.mul (local.get 0) (i32.const 5)))\n"
           " (func (export \"swap\") (table.set (i32.const 0) (ref.func $fc)))\n"
           " (global $depth (mut i32) (i32.const 0))\n"
           " (func (export \"depth\") (result i32) (global.get $depth))\n"
           " (func $deep (type $a)");
    for (int k = 0; k < 2100; k++)
        IC_PUT(" (local i64)");
    IC_PUT(" (global.set $depth (local.get 0))\n"
           "  (local.set 2100 (i64.extend_i32_u (local.get 0)))\n"
           "  (call_indirect (type $a) (i32.add (local.get 0) (i32.const 1)) (i32.const 2)))\n"
           " (func (export \"deep\") (param i32) (result i32)\n"
           "  (call_indirect (type $a) (local.get 0) (i32.const 2)))\n"
           " (func (export \"site\") (param $k i32) (param $i i32) (result i32)\n"
           "  block $d\n");
    for (int k = IC_SITES - 1; k >= 0; k--)
        IC_PUT("  block $s%d\n", k);
    IC_PUT("  local.get $k\n  br_table");
    for (int k = 0; k < IC_SITES; k++)
        IC_PUT(" $s%d", k);
    IC_PUT(" $d\n");
    for (int k = 0; k < IC_SITES; k++)
        IC_PUT("  end\n  i32.const %d\n%s  local.get $i\n  call_indirect (type %s)\n  return\n",
               10 + k, k & 1 ? "  i32.const 3\n" : "", k & 1 ? "$b" : "$a");
    IC_PUT("  end\n  i32.const -1))\n");
#undef IC_PUT
    return w;
}

static void test_call_indirect_cache(void **state) {
    (void)state;
    char *wat = ic_wat();
    size_t n = 0;
    uint8_t *mod = wat_module(wat, &n);
    free(wat);
    /* results of every round, the interpreter's first: -1 a type trap */
    enum { ROUNDS = 6 };
    static int32_t want[ROUNDS][IC_SITES], want_depth[3];
    for (size_t mi = 0; mi < sizeof tiers / sizeof tiers[0]; mi++) {
        pw_store_config cfg = {.engine = tiers[mi].engine,
                               .bounds_checks = tiers[mi].bounds,
                               .value_stack_bytes = 1 << 20};
        rig r;
        rig_open_cfg(&r, &cfg, mod, n);
        /* rounds: (parity of the sites first, table index), swap before round 4 */
        static const struct {
            int first, i;
        } rounds[ROUNDS] = {{0, 0}, {1, 0}, {1, 1}, {0, 1}, {0, 0}, {1, 0}};
        for (int rd = 0; rd < ROUNDS; rd++) {
            if (rd == 4) {
                pw_error err;
                assert_int_equal(pw_call(r.s, fn(&r, "swap"), NULL, 0, NULL, 0, &err), PW_OK);
            }
            for (int half = 0; half < 2; half++)
                for (int k = (rounds[rd].first + half) & 1; k < IC_SITES; k += 2) {
                    int32_t res = 0;
                    pw_error err;
                    pw_status st = call2(&r, "site", k, rounds[rd].i, &res, &err);
                    if (st != PW_OK) {
                        assert_int_equal(st, PW_ERR_TRAP);
                        assert_string_equal(err.message, "indirect call type mismatch");
                        res = -1;
                    }
                    if (mi == 0)
                        want[rd][k] = res;
                    else if (res != want[rd][k])
                        fail_msg("tier %zu round %d site %d: %d, the interpreter's %d", mi, rd, k,
                                 res, want[rd][k]);
                }
        }
        if (mi == 0) { /* worked out by hand: $fa, $fb, a trap, $fc */
            assert_int_equal(want[0][4], 15);
            assert_int_equal(want[0][5], -1);
            assert_int_equal(want[2][5], 45);
            assert_int_equal(want[2][4], -1);
            assert_int_equal(want[4][6], 80);
            assert_int_equal(want[5][7], -1);
        }
        for (int t = 0; t < 3; t++) {
            int32_t res = 0;
            pw_error err;
            memset(&err, 0, sizeof err);
            assert_int_equal(call1(&r, "deep", t, &res, &err), PW_ERR_TRAP);
            assert_string_equal(err.message, "call stack exhausted");
            pw_val d = {0};
            assert_int_equal(pw_call(r.s, fn(&r, "depth"), NULL, 0, &d, 1, &err), PW_OK);
            if (mi == 0)
                want_depth[t] = (int32_t)d.bits;
            else if ((int32_t)d.bits != want_depth[t])
                fail_msg("tier %zu: deep(%d) reached %d, the interpreter %d", mi, t,
                         (int32_t)d.bits, want_depth[t]);
        }
        if (mi == 0)
            assert_true(want_depth[0] > 50 && want_depth[0] < 70); /* 1 MiB / 2,100 slots */
        if (PW_JIT_AVAILABLE && tiers[mi].engine == PW_ENGINE_JIT)
            assert_int_equal(pw__jit_state(fn(&r, "site")), 1);
        rig_close(&r);
    }
    free(mod);
}

static void test_runaway_recursion(void **state) {
    (void)state;
    rig jt;
    rig_open(&jt, PW_ENGINE_JIT);
    pw_error e;
    assert_int_equal(pw_call(jt.s, fn(&jt, "runaway"), NULL, 0, NULL, 0, &e), PW_ERR_TRAP);
    assert_string_equal(e.message, "call stack exhausted");
    if (PW_JIT_AVAILABLE) assert_int_equal(pw__jit_state(fn(&jt, "runaway")), 1);
    /* the store stays usable */
    int32_t r;
    assert_int_equal(call1(&jt, "fib", 10, &r, &e), PW_OK);
    assert_int_equal(r, 55);
    rig_close(&jt);
}

static void test_interrupt_under_jit(void **state) {
    (void)state;
    rig jt;
    rig_open(&jt, PW_ENGINE_JIT);
    raiser it = {jt.s, 50, 0};
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, raise_later, &it), 0);
    pw_error e;
    pw_status st = pw_call(jt.s, fn(&jt, "spin"), NULL, 0, NULL, 0, &e);
    double stopped = now_ms();
    pthread_join(th, NULL);
    assert_int_equal(st, PW_ERR_TRAP);
    assert_int_equal(e.trap, PW_TRAP_INTERRUPTED);
    assert_true(stopped - it.at < 2000.0); /* "did not hang" */
    if (PW_JIT_AVAILABLE) assert_int_equal(pw__jit_state(fn(&jt, "spin")), 1);
    /* a call that starts with the flag raised stops at once (function entry) */
    int32_t r;
    assert_int_equal(call1(&jt, "fib", 25, &r, &e), PW_ERR_TRAP);
    assert_int_equal(e.trap, PW_TRAP_INTERRUPTED);
    pw_store_clear_interrupt(jt.s);
    assert_int_equal(call1(&jt, "fib", 10, &r, &e), PW_OK);
    rig_close(&jt);
}

/* The interrupt poll page (docs/jit.md "Interrupt"): the guard variant polls at loop
 * heads by loading the store's poll page, which pw_store_interrupt makes unreadable
 * and pw_store_clear_interrupt readable again; the explicit variant tests the flag.
 * Under both variants and under whole-module and lazy translation: an endless loop
 * stops with the interpreter's trap; the page's protection follows the flag; a page
 * made unreadable with the flag down stops a guard-variant loop (so the guard variant
 * really polls the page) and not an explicit one (which polls the flag); a store
 * freed while interrupted does not hand its page to the next store of its pool. */
static const char POLL_WAT[] =
    "(module (memory 1)\n"
    " (func (export \"count\") (param $n i32) (result i32) (local $i i32)\n"
    "  (loop $l (local.set $i (i32.add (local.get $i) (i32.const 1)))\n"
    "   (i32.store (i32.const 8) (local.get $i))\n"
    "   (br_if $l (i32.lt_u (local.get $i) (local.get $n))))\n"
    "  (i32.load (i32.const 8)))\n"
    " (func (export \"spin\") (loop (br 0))))\n";

/* Whether the process can read the byte at p: write(2) reports EFAULT for a page it
 * cannot read instead of raising a signal. */
static bool readable(const void *p) {
    int fd[2];
    assert_int_equal(pipe(fd), 0);
    bool ok = write(fd[1], p, 1) == 1;
    close(fd[0]);
    close(fd[1]);
    return ok;
}

static void test_interrupt_poll_page(void **state) {
    (void)state;
    size_t n = 0;
    uint8_t *mod = wat_module(POLL_WAT, &n);
    pw_error err;
    static const struct {
        int engine, bounds;
    } modes[] = {{PW_ENGINE_JIT, PW_BOUNDS_GUARD},
                 {PW_ENGINE_JIT, PW_BOUNDS_EXPLICIT},
                 {PW_ENGINE_LAZY, PW_BOUNDS_GUARD},
                 {PW_ENGINE_LAZY, PW_BOUNDS_EXPLICIT}};
    for (size_t mi = 0; mi < sizeof modes / sizeof modes[0]; mi++) {
        pw_store_config cfg = {.engine = modes[mi].engine, .bounds_checks = modes[mi].bounds};
        rig r;
        rig_open_cfg(&r, &cfg, mod, n);
        bool guarded = r.inst->mem0->guarded;
        if (modes[mi].bounds == PW_BOUNDS_EXPLICIT) assert_false(guarded);
        uint8_t *page = (uint8_t *)r.s + PW_STORE_POLL_OFF;
        int32_t v;
        assert_true(readable(page));
        assert_int_equal(call1(&r, "count", 1000, &v, &err), PW_OK);
        assert_int_equal(v, 1000);
        if (PW_JIT_AVAILABLE) assert_int_equal(pw__jit_state(fn(&r, "count")), 1);

        /* the page follows the flag */
        pw_store_interrupt(r.s);
        if (PW_JIT_AVAILABLE) assert_false(readable(page));
        assert_int_equal(call1(&r, "count", 10, &v, &err), PW_ERR_TRAP);
        assert_int_equal(err.trap, PW_TRAP_INTERRUPTED);
        assert_string_equal(err.message, "interrupted");
        pw_store_clear_interrupt(r.s);
        assert_true(readable(page));
        assert_int_equal(call1(&r, "count", 1000, &v, &err), PW_OK);

        if (PW_JIT_AVAILABLE) {
            /* the page alone, the flag down: only the guard variant polls it (the
             * loop runs 2e8 times: seconds, were the poll missed) */
            assert_int_equal(mprotect(page, PW_POLL_PAGE, PROT_NONE), 0);
            pw_status st = call1(&r, "count", 200000000, &v, &err);
            assert_int_equal(mprotect(page, PW_POLL_PAGE, PROT_READ), 0);
            if (guarded) {
                assert_int_equal(st, PW_ERR_TRAP);
                assert_int_equal(err.trap, PW_TRAP_INTERRUPTED);
                assert_string_equal(err.message, "interrupted");
            } else {
                assert_int_equal(st, PW_OK);
                assert_int_equal(v, 200000000);
            }
        }

        /* an endless loop, interrupted from another thread, twice */
        for (int round = 0; round < 2; round++) {
            raiser it = {r.s, 30, 0};
            pthread_t th;
            assert_int_equal(pthread_create(&th, NULL, raise_later, &it), 0);
            pw_status st = pw_call(r.s, fn(&r, "spin"), NULL, 0, NULL, 0, &err);
            double stopped = now_ms();
            pthread_join(th, NULL);
            assert_int_equal(st, PW_ERR_TRAP);
            assert_int_equal(err.trap, PW_TRAP_INTERRUPTED);
            assert_string_equal(err.message, "interrupted");
            assert_true(stopped - it.at < 2000.0); /* "did not hang" */
            pw_store_clear_interrupt(r.s);
            assert_int_equal(call1(&r, "count", 1000, &v, &err), PW_OK);
            assert_int_equal(v, 1000);
        }
        rig_close(&r);
    }

    /* a pool: an interrupted store's mapping is unmapped, a cleared one kept */
    pw_pool *pool = pw_pool_new();
    assert_non_null(pool);
    for (int k = 0; k < 4; k++) {
        pw_store_config cfg = {.engine = PW_ENGINE_JIT, .pool = pool};
        rig r;
        rig_open_cfg(&r, &cfg, mod, n);
        uint8_t *page = (uint8_t *)r.s + PW_STORE_POLL_OFF;
        assert_true(readable(page));
        assert_false(pw_store_interrupted(r.s));
        int32_t v;
        assert_int_equal(call1(&r, "count", 100000, &v, &err), PW_OK);
        assert_int_equal(v, 100000);
        pw_store_interrupt(r.s);
        if (k == 1) pw_store_clear_interrupt(r.s); /* k = 0, 2: freed interrupted */
        rig_close(&r);
    }
    pw_pool_free(pool);
    free(mod);
}

/* A call of name(arg) in a table of probes: the message of the trap it must raise
 * (NULL: none) and, when known, the i32 result it must return. */
typedef struct probe {
    const char *name;
    int64_t arg;
    const char *trap;
    bool known;
    int32_t want;
} probe;

/* Calls each probe in the rig of tier mi (tiers[]): a trap must be the one named; a
 * result must equal the interpreter's (got[k], filled in mode 0) and, when known, the
 * probe's; in the JIT modes each function must run as machine code. */
static void call_probes(rig *r, size_t mi, const probe *p, size_t np, int64_t *got) {
    for (size_t k = 0; k < np; k++) {
        pw_error err;
        pw_val a = {.bits = (uint64_t)p[k].arg}, out = {0};
        memset(&err, 0, sizeof err);
        pw_status st = pw_call(r->s, fn(r, p[k].name), &a, 1, &out, 1, &err);
        if (p[k].trap) {
            if (st != PW_ERR_TRAP || strcmp(err.message, p[k].trap) != 0)
                fail_msg("mode %zu %s(%lld): status %d, %s", mi, p[k].name, (long long)p[k].arg,
                         (int)st, err.message);
            continue;
        }
        if (st != PW_OK)
            fail_msg("mode %zu %s(%lld): %s", mi, p[k].name, (long long)p[k].arg, err.message);
        int64_t v = (int32_t)out.bits;
        if (mi == 0)
            got[k] = v;
        else if (v != got[k])
            fail_msg("mode %zu %s(%lld): %lld, interpreter %lld", mi, p[k].name,
                     (long long)p[k].arg, (long long)v, (long long)got[k]);
        if (p[k].known && v != p[k].want)
            fail_msg("mode %zu %s(%lld): %lld, want %d", mi, p[k].name, (long long)p[k].arg,
                     (long long)v, p[k].want);
        if (PW_JIT_AVAILABLE && mi > 0) assert_int_equal(pw__jit_state(fn(r, p[k].name)), 1);
    }
}

/* Calls the probes in a store of each tier (tiers[]), the interpreter's first, whose
 * results the others must give too (call_probes). */
static void probe_tiers(const void *mod, size_t n, const probe *calls, size_t np) {
    int64_t *got = calloc(np, sizeof *got);
    assert_non_null(got);
    for (size_t mi = 0; mi < sizeof tiers / sizeof tiers[0]; mi++) {
        pw_store_config cfg = {.engine = tiers[mi].engine,
                               .bounds_checks = tiers[mi].bounds,
                               .jit_sse2 = tiers[mi].sse2};
        rig r;
        rig_open_cfg(&r, &cfg, mod, n);
        call_probes(&r, mi, calls, np, got);
        rig_close(&r);
    }
    free(got);
}

/* Addresses formed once (docs/jit.md "Addresses formed once"): an access right after another
 * through the same pinned base takes the zero-extended base the first one left in rax,
 * unless the first loaded into the base itself (p = p->next, then p->value), a label
 * lies between, or the first formed something else; an integer operator into a
 * register other than the base and rax between them keeps it (x = load [p]; x += k;
 * store [p], x), one into the base does not (p += 16), nor a compare (whose 0/1
 * passes through al); float arithmetic into an xmm keeps it, unless its constant
 * operand passed through rax; a copy or a constant into another register keeps it,
 * one into the base does not. Against the interpreter and the
 * values worked out by hand, with guard pages and explicit checks (where the second
 * access is out of bounds, too). */
static const char ZX_WAT[] =
    "(module (memory 1)\n"
    " (data (i32.const 16) \"\\20\\00\\00\\00\\07\\00\\00\\00\")\n"
    " (data (i32.const 32) \"\\30\\00\\00\\00\\09\\00\\00\\00\")\n"
    " (data (i32.const 48) \"\\20\\00\\00\\00\\0b\\00\\00\\00\")\n"
    " (func (export \"walk\") (param $p i32) (result i32) (local $s i32) (local $k i32)\n"
    "  (local $v i32)\n"
    "  (block $done (loop $l\n"
    "   (br_if $done (i32.ge_u (local.get $k) (i32.const 5)))\n"
    "   (local.set $v (i32.load offset=4 (local.get $p)))\n"
    "   (local.set $p (i32.load (local.get $p)))\n"
    "   (local.set $s (i32.add (i32.mul (local.get $s) (i32.const 3)) (local.get $v)))\n"
    "   (local.set $k (i32.add (local.get $k) (i32.const 1)))\n"
    "   (br $l)))\n"
    "  (local.get $s))\n"
    " (func (export \"hops\") (param $p i32) (result i32) (local $s i32) (local $n i32)\n"
    "  (local $v i32)\n"
    "  (local.set $n (i32.const 4))\n"
    "  (loop $l\n"
    "   (local.set $p (i32.load (local.get $p)))\n"
    "   (local.set $v (i32.load offset=4 (local.get $p)))\n"
    "   (local.set $s (i32.add (i32.mul (local.get $s) (i32.const 3)) (local.get $v)))\n"
    "   (br_if $l (local.tee $n (i32.sub (local.get $n) (i32.const 1)))))\n"
    "  (local.get $s))\n"
    " (func (export \"swap\") (param $p i32) (result i32) (local $a i32) (local $b i32)\n"
    "  (local.set $a (i32.load (local.get $p)))\n"
    "  (local.set $b (i32.load offset=4 (local.get $p)))\n"
    "  (i32.store (local.get $p) (local.get $b))\n"
    "  (i32.store offset=4 (local.get $p) (local.get $a))\n"
    "  (i32.sub (i32.load (local.get $p)) (i32.load offset=4 (local.get $p))))\n"
    " (func (export \"bump\") (param $p i32) (result i32) (local $k i32) (local $x i32)\n"
    "  (loop $l\n"
    "   (local.set $x (i32.load offset=4 (local.get $p)))\n"
    "   (local.set $x (i32.add (local.get $x) (local.get $k)))\n"
    "   (i32.store offset=4 (local.get $p) (local.get $x))\n"
    "   (local.set $x (i32.load offset=4 (local.get $p)))\n"
    "   (local.set $p (i32.add (local.get $p) (i32.const 16)))\n"
    "   (local.set $x (i32.add (local.get $x) (i32.load offset=4 (local.get $p))))\n"
    "   (local.set $p (i32.load (local.get $p)))\n"
    "   (local.set $k (i32.add (local.get $k) (local.get $x)))\n"
    "   (br_if $l (i32.lt_u (local.get $k) (i32.const 1000))))\n"
    "  (local.get $k))\n"
    " (func (export \"cmpb\") (param $p i32) (result i32) (local $x i32) (local $c i32)\n"
    "  (local $k i32)\n"
    "  (loop $l\n"
    "   (local.set $x (i32.load (local.get $p)))\n"
    "   (local.set $c (i32.lt_u (local.get $x) (i32.const 40)))\n"
    "   (local.set $k (i32.add (local.get $k)\n"
    "    (i32.add (local.get $c) (i32.load offset=4 (local.get $p)))))\n"
    "   (local.set $p (local.get $x))\n"
    "   (br_if $l (i32.lt_u (local.get $k) (i32.const 1000))))\n"
    "  (local.get $k))\n"
    " (func (export \"facc\") (param $p i32) (result i32) (local $k i32) (local $x f64)\n"
    "  (local $a f64)\n"
    "  (local.set $a (f64.const 1.5))\n"
    "  (loop $l\n"
    "   (local.set $x (f64.load offset=64 (local.get $p)))\n"
    "   (local.set $x (f64.add (local.get $x) (local.get $a)))\n"
    "   (f64.store offset=64 (local.get $p) (local.get $x))\n"
    "   (local.set $x (f64.load offset=72 (local.get $p)))\n"
    "   (local.set $x (f64.add (local.get $x) (f64.const 2.25)))\n"
    "   (f64.store offset=72 (local.get $p) (local.get $x))\n"
    "   (local.set $k (i32.add (local.get $k) (i32.const 1)))\n"
    "   (br_if $l (i32.lt_u (local.get $k) (i32.const 10))))\n"
    "  (i32.add (i32.trunc_f64_s (f64.load offset=64 (local.get $p)))\n"
    "   (i32.trunc_f64_s (f64.load offset=72 (local.get $p)))))\n"
    " (data (i32.const 1024) \"\\10\\04\\00\\00\\05\\00\\00\\00\")\n"
    " (data (i32.const 1040) \"\\00\\04\\00\\00\\06\\00\\00\\00\")\n"
    " (func (export \"cpy\") (param $p i32) (result i32) (local $x i32) (local $y i32)\n"
    "  (local $k i32)\n"
    "  (loop $l\n"
    "   (local.set $x (i32.load offset=4 (local.get $p)))\n"
    "   (local.set $y (local.get $x))\n"
    "   (i32.store offset=8 (local.get $p) (local.get $y))\n"
    "   (local.set $x (i32.load (local.get $p)))\n"
    "   (local.set $p (local.get $x))\n"
    "   (local.set $k (i32.add (local.get $k) (i32.load offset=4 (local.get $p))))\n"
    "   (local.set $y (i32.load offset=8 (local.get $p)))\n"
    "   (local.set $p (i32.const 1024))\n"
    "   (local.set $k (i32.add (local.get $k) (i32.load offset=4 (local.get $p))))\n"
    "   (br_if $l (i32.lt_u (local.get $k) (i32.const 500))))\n"
    "  (local.get $k))\n"
    " (func (export \"lab\") (param $c i32) (result i32) (local $p i32) (local $q i32)\n"
    "  (local $s i32)\n"
    "  (local.set $p (i32.const 16)) (local.set $q (i32.const 32))\n"
    "  (local.set $s (i32.load offset=8 (local.get $q)))\n"
    "  (block $b (br_if $b (local.get $c)) (local.set $s (i32.load (local.get $p))))\n"
    "  (i32.add (local.get $s) (i32.load offset=4 (local.get $p))))\n"
    " (func (export \"edge\") (param $p i32) (result i32) (local $k i32) (local $s i32)\n"
    "  (loop $l\n"
    "   (local.set $s (i32.add (local.get $s) (i32.load (local.get $p))))\n"
    "   (local.set $s (i32.xor (local.get $s) (i32.load offset=4 (local.get $p))))\n"
    "   (local.set $k (i32.add (local.get $k) (i32.const 1)))\n"
    "   (br_if $l (i32.lt_u (local.get $k) (i32.const 3))))\n"
    "  (local.get $s)))\n";

static void test_address_reuse(void **state) {
    (void)state;
    size_t n = 0;
    uint8_t *mod = wat_module(ZX_WAT, &n);
    /* the list: 16 -> 32 -> 48 -> 32 -> 48 ..., values 7, 9, 11 */
    static const probe calls[] = {
        {"walk", 16, NULL, true, (((7 * 3 + 9) * 3 + 11) * 3 + 9) * 3 + 11},
        {"hops", 16, NULL, true, ((9 * 3 + 11) * 3 + 9) * 3 + 11},
        {"lab", 0, NULL, true, 32 + 7},
        {"lab", 1, NULL, true, 7},        /* the jump arrives with rax = q + 8, not p */
        {"swap", 16, NULL, true, 7 - 32}, /* swaps the first node's fields */
        {"edge", 0, NULL, true, 0},       /* zero memory: 0 */
        {"edge", 65528, NULL, true, 0},
        {"edge", 65529, "out of bounds memory access", false, 0}, /* the second access */
        {"edge", 65532, "out of bounds memory access", false, 0},
        {"bump", 16, NULL, true, 2212},   /* after swap: [16] = 7, [20] = 32 */
        {"cmpb", 32, NULL, true, 1001},   /* after bump: [36] = 9, [52] = 52 */
        {"cpy", 1024, NULL, true, 506},   /* its own list: 1024 -> 1040 -> 1024 */
        {"facc", 0, NULL, true, 15 + 22}, /* 10 × 1.5 at 64, 10 × 2.25 at 72 */
    };
    probe_tiers(mod, n, calls, sizeof calls / sizeof calls[0]);
    free(mod);
}

/* Zero-extended indexes and flags after a store (docs/jit.md "Addresses formed
 * once"): an i32 the previous instruction wrote with a 32-bit write (a load of
 * p->info, an operator) indexes the next access as it is, from its pinned register
 * or from the register its frame cell was just stored from; a 64-bit load, a
 * sign-extending one or a 64-bit operator does not (the wrapped value's upper half is
 * not zero: used as it is, the access would land 4 GiB away), and neither does rcx for
 * a store, whose value passes through rcx. A br_if of an operator's result that went
 * through rax to an operand-stack temporary uses the operator's flags and drops the
 * temporary's store; not after a lea (no flags) nor for a local (read again). */
/* Ten rounds over eight hot locals $a..$h and the counter $i (declared by the
 * function), after `(loop $l`: more hot slots than pin registers, so that what
 * follows the loop keeps its temporaries in the frame. */
#define PRESS_LOOP                                                                                 \
    "   (local.set $a (i32.add (local.get $a) (local.get $i)))\n"                                  \
    "   (local.set $b (i32.xor (local.get $b) (local.get $a)))\n"                                  \
    "   (local.set $c (i32.add (local.get $c) (local.get $b)))\n"                                  \
    "   (local.set $d (i32.sub (local.get $d) (local.get $c)))\n"                                  \
    "   (local.set $e (i32.add (local.get $e) (local.get $d)))\n"                                  \
    "   (local.set $f (i32.xor (local.get $f) (local.get $e)))\n"                                  \
    "   (local.set $g (i32.add (local.get $g) (local.get $f)))\n"                                  \
    "   (local.set $h (i32.rotl (local.get $h) (local.get $g)))\n"                                 \
    "   (local.set $i (i32.add (local.get $i) (i32.const 1)))\n"                                   \
    "   (br_if $l (i32.lt_u (local.get $i) (i32.const 10))))\n"

static const char ZR_WAT[] =
    "(module (memory 1)\n"
    /* a list 64 -> 80 -> 96 of (next, info), infos (data16, idx16) at 256, 264, 272 */
    " (data (i32.const 64) \"\\50\\00\\00\\00\\00\\01\\00\\00\")\n"
    " (data (i32.const 80) \"\\60\\00\\00\\00\\08\\01\\00\\00\")\n"
    " (data (i32.const 96) \"\\00\\00\\00\\00\\10\\01\\00\\00\")\n"
    " (data (i32.const 256) \"\\05\\00\\01\\00\")\n"
    " (data (i32.const 264) \"\\07\\00\\02\\00\")\n"
    " (data (i32.const 272) \"\\09\\00\\03\\00\")\n"
    /* an i64 whose low half is 256 and high half 1; an i32 with its top bit set; a
     * byte 0x80; the address 700 */
    " (data (i32.const 512) \"\\00\\01\\00\\00\\01\\00\\00\\00\")\n"
    " (data (i32.const 520) \"\\08\\01\\00\\80\\80\")\n"
    " (data (i32.const 600) \"\\bc\\02\\00\\00\")\n"
    /* 800: 7, 804: 808, 808: 812, 812: 9 */
    " (data (i32.const 800) \"\\07\\00\\00\\00\\28\\03\\00\\00\\2c\\03\\00\\00\\09\\00\\00\\00\")\n"
    /* the data16 of the node whose idx16 is k (0: none) */
    " (func (export \"find\") (param $k i32) (result i32) (local $p i32) (local $q i32)\n"
    "  (local.set $p (i32.const 64))\n"
    "  (block $out (loop $l\n"
    "    (local.set $q (i32.load offset=4 (local.get $p)))\n"
    "    (br_if $out (i32.eq (i32.load16_u offset=2 (local.get $q)) (local.get $k)))\n"
    "    (local.set $p (i32.load (local.get $p)))\n"
    "    (br_if $l (local.get $p))))\n"
    "  (if (result i32) (local.get $p) (then (i32.load16_u (local.get $q)))\n"
    "   (else (i32.const 0))))\n"
    " (func (export \"ld64\") (param $p i32) (result i32)\n"
    "  (i32.load (i32.wrap_i64 (i64.load (local.get $p)))))\n"
    " (func (export \"ld32s\") (param $p i32) (result i32)\n"
    "  (i32.load (i32.wrap_i64 (i64.load32_s (local.get $p)))))\n"
    " (func (export \"ld8s\") (param $p i32) (result i32)\n"
    "  (i32.load (i32.wrap_i64 (i64.load8_s (local.get $p)))))\n"
    " (func (export \"or64\") (param $p i32) (result i32)\n"
    "  (i32.load (i32.wrap_i64 (i64.or (i64.extend_i32_u (local.get $p))\n"
    "   (i64.const 0x100000000)))))\n"
    /* an i32 taken from the register its temporary was stored from is zero-extended
     * there unless that register's last write was 32 bits wide: here the wrapped
     * product's upper half is $p, and the extension's must be 0; an i32 constant's
     * 32-bit move needs none */
    " (func (export \"wrapx\") (param $p i32) (result i32)\n"
    "  (local $i i32) (local $a i32) (local $b i32) (local $c i32) (local $d i32)\n"
    "  (local $e i32) (local $f i32) (local $g i32) (local $h i32)\n"
    "  (loop $l\n" /* hot locals, so that the temporaries below stay in the frame */
    PRESS_LOOP "  (i32.add (i32.wrap_i64 (i64.shr_u (i64.extend_i32_u (i32.wrap_i64 (i64.mul\n"
    "   (i64.extend_i32_u (local.get $p)) (i64.const 0x100000001)))) (i64.const 32)))\n"
    "  (i32.wrap_i64 (i64.shr_u (i64.extend_i32_u (i32.const -1)) (i64.const 31)))))\n"
    /* rax keeps p's zero-extension across an access indexed by another register
     * and a compare-and-branch or br_if on registers, but not across an access
     * that loads p itself, nor a br_if or compare whose operand passed through rax
     * ($m: more hot locals than registers keep it in the frame) */
    " (func (export \"zk\") (param $p i32) (result i32) (local $q i32)\n"
    "  (local.set $q (i32.load offset=4 (local.get $p)))\n"
    "  (local.set $p (i32.load (local.get $q)))\n"
    "  (local.set $q (i32.add (local.get $q) (i32.const 1)))\n"
    "  (i32.add (local.get $q) (i32.load (local.get $p))))\n"
    " (func (export \"zb\") (param $p i32) (result i32) (local $q i32) (local $i i32)\n"
    "  (local $a i32) (local $b i32) (local $c i32) (local $d i32) (local $e i32)\n"
    "  (local $m i32) (local $s i32)\n"
    "  (local.set $m (i32.and (local.get $p) (i32.const 3)))\n"
    "  (loop $l\n"
    "   (local.set $a (i32.add (local.get $a) (local.get $i)))\n"
    "   (local.set $b (i32.xor (local.get $b) (local.get $a)))\n"
    "   (local.set $c (i32.add (local.get $c) (local.get $b)))\n"
    "   (local.set $d (i32.sub (local.get $d) (local.get $c)))\n"
    "   (local.set $e (i32.add (local.get $e) (local.get $d)))\n"
    "   (local.set $i (i32.add (local.get $i) (i32.const 1)))\n"
    "   (br_if $l (i32.lt_u (local.get $i) (i32.load (local.get $p)))))\n"
    "  (local.set $q (i32.load offset=4 (local.get $p)))\n"
    "  (block $x (br_if $x (local.get $m))\n"
    "   (local.set $s (i32.load offset=8 (local.get $p))))\n"
    "  (local.set $q (i32.load offset=4 (local.get $p)))\n"
    "  (block $y (br_if $y (i32.eq (local.get $m) (i32.const 3)))\n"
    "   (local.set $s (i32.add (local.get $s) (i32.load offset=12 (local.get $p)))))\n"
    "  (block $z (br_if $z (i32.eq (local.get $q) (i32.const 3)))\n"
    "   (local.set $s (i32.add (local.get $s) (i32.load (local.get $p)))))\n"
    "  (local.set $q (i32.load offset=4 (local.get $p)))\n"
    "  (local.set $e (i32.load (local.get $m)))\n" /* rax: m's address */
    "  (local.set $q (i32.add (local.get $q) (i32.load offset=8 (local.get $p))))\n"
    "  (i32.add (i32.add (local.get $s) (local.get $q)) (i32.add (local.get $a)\n"
    "   (i32.add (local.get $e) (local.get $i)))))\n"
    /* a label between a 32-bit write and the access: the jump arrives with $p as
     * passed, whose upper half need not be zero */
    " (func (export \"join\") (param $p i32) (result i32)\n"
    "  (block $b (br_if $b (i32.and (local.get $p) (i32.const 64)))\n"
    "   (local.set $p (i32.load offset=4 (local.get $p))))\n"
    "  (i32.load (local.get $p)))\n"
    /* more hot locals than registers, so that the code after the loop keeps its
     * temporaries, $v and $k in the frame */
    " (func (export \"press\") (param $v i32) (result i32)\n"
    "  (local $i i32) (local $a i32) (local $b i32) (local $c i32) (local $d i32)\n"
    "  (local $e i32) (local $f i32) (local $g i32) (local $h i32) (local $s i32)\n"
    "  (local $p i32) (local $k i32) (local $m i32)\n"
    "  (local.set $p (i32.const 600))\n"
    "  (loop $l\n" PRESS_LOOP
    /* [700] = v: the address, loaded into rcx, must not be where v goes */
    "  (i32.store (i32.load (local.get $p)) (local.get $v))\n"
    "  (block $z (br_if $z (i32.eqz (i32.xor (local.get $a) (local.get $v))))\n"
    "   (local.set $s (i32.const 100)))\n"
    "  (block $y (br_if $y (i32.xor (local.get $b) (local.get $v)))\n"
    "   (local.set $s (i32.add (local.get $s) (i32.const 1000))))\n"
    /* a lea leaves the flags of what came before it: here ZF = 1 */
    "  (local.set $m (i32.sub (local.get $v) (local.get $v)))\n"
    "  (block $x (br_if $x (i32.eqz (i32.add (local.get $c) (i32.const 5))))\n"
    "   (local.set $s (i32.add (local.get $s) (i32.const 10000))))\n"
    /* a local's store stays: $k is read again */
    "  (block $w (br_if $w (i32.eqz (local.tee $k (i32.xor (local.get $d) (local.get $v)))))\n"
    "   (local.set $s (i32.add (local.get $s) (i32.const 3))))\n"
    "  (i32.add (i32.add (i32.add (local.get $a) (local.get $b)) (i32.add (local.get $c)\n"
    "   (local.get $d))) (i32.add (i32.add (i32.add (local.get $e) (local.get $f))\n"
    "   (i32.add (local.get $g) (local.get $h))) (i32.add (i32.add (local.get $s)\n"
    "   (local.get $k)) (i32.load (i32.const 700))))))\n"
    ")\n";

static void test_zero_extended_index(void **state) {
    (void)state;
    size_t n = 0;
    uint8_t *mod = wat_module(ZR_WAT, &n);
    static const probe calls[] = {
        {"find", 1, NULL, true, 5},
        {"find", 2, NULL, true, 7},
        {"find", 3, NULL, true, 9},
        {"find", 4, NULL, true, 0},
        {"ld64", 512, NULL, true, 0x10005}, /* [256] as an i32 */
        {"or64", 256, NULL, true, 0x10005},
        {"wrapx", 5, NULL, true, 1},
        {"wrapx", -1, NULL, true, 1},
        {"wrapx", 0x7fffffff, NULL, true, 1},
        {"zk", 800, NULL, true, 809 + 9},
        {"zb", 800, NULL, false, 0},
        {"zb", 801, NULL, false, 0},
        {"zb", 803, NULL, false, 0},
        {"zb", 804, NULL, false, 0},
        {"join", 64, NULL, true, 80},
        {"join", 0x100000040, NULL, true, 80}, /* an i32 argument with a nonzero upper half */
        {"join", 0x100000050, NULL, true, 96}, /* [80] */
        {"join", 0x10000003c, NULL, true, 96}, /* $p = [60 + 4] = 80, then [80] */
        {"ld32s", 520, "out of bounds memory access", false, 0}, /* at 0x80000108 */
        {"ld8s", 524, "out of bounds memory access", false, 0},  /* at 0xffffff80 */
        {"press", 1234, NULL, false, 0},
        {"press", 0, NULL, false, 0},
        {"press", -17, NULL, false, 0},
        {"press", 7, NULL, false, 0},
        {"press", 45, NULL, false, 0}, /* $a: the first branch is taken */
    };
    probe_tiers(mod, n, calls, sizeof calls / sizeof calls[0]);
    free(mod);
}

/* Float operands (docs/jit.md "Float operands from memory"): float arithmetic reads
 * an operand the previous instruction loaded into a temporary from memory itself
 * (b as the r/m operand, a into the register computed in), but not a local, not
 * across a label, and not when a and b are one slot; with AVX it computes from a's
 * register in one three-operand instruction, the destination in b's register, in
 * a's, in both, or in neither. Results are the bits (NaN payloads included), folded
 * to 32 by $h; against the interpreter, with guard pages, explicit checks and plain
 * SSE2 (jit_sse2), a folded access out of bounds trapping as any other. */
static const char FL_WAT[] =
    "(module (memory 1)\n"
    " (func $h (param $x f64) (result i32)\n"
    "  (i32.wrap_i64 (i64.xor (i64.reinterpret_f64 (local.get $x))\n"
    "   (i64.shr_u (i64.reinterpret_f64 (local.get $x)) (i64.const 29)))))\n"
    " (func (export \"init\") (param $k i32) (result i32)\n"
    "  (f64.store (i32.const 64) (f64.const 1.5))\n"
    "  (f64.store (i32.const 72) (f64.const -2.25))\n"
    "  (f64.store (i32.const 80) (f64.const 3e10))\n"
    "  (f32.store (i32.const 96) (f32.const 0.75))\n"
    "  (f32.store (i32.const 100) (f32.const -5.5))\n"
    "  (i64.store (i32.const 112) (i64.const 0x7ff8000000000123))\n"
    "  (i64.store (i32.const 120) (i64.const 0xfff8000000000456))\n"
    "  (i32.const 0))\n"
    /* b loaded, into the accumulation (d = a) and into a product (a pinned) */
    " (func (export \"dotb\") (param $p i32) (result i32) (local $s f64) (local $x f64)\n"
    "  (local $k i32)\n"
    "  (local.set $x (f64.const 1.25))\n"
    "  (loop $l\n"
    "   (local.set $s (f64.add (local.get $s)\n"
    "    (f64.mul (local.get $x) (f64.load (local.get $p)))))\n"
    "   (local.set $x (f64.sub (local.get $x) (f64.load offset=8 (local.get $p))))\n"
    "   (local.set $p (i32.add (local.get $p) (i32.const 8)))\n"
    "   (br_if $l (i32.lt_u (local.tee $k (i32.add (local.get $k) (i32.const 1)))\n"
    "    (i32.const 3))))\n"
    "  (call $h (f64.add (local.get $s) (local.get $x))))\n"
    /* a loaded: the order of a non-commuting operator; both loaded; a loaded with a
     * constant b */
    " (func (export \"suba\") (param $p i32) (result i32) (local $x f64)\n"
    "  (local.set $x (f64.const 0.5))\n"
    "  (local.set $x (f64.sub (f64.load (local.get $p)) (local.get $x)))\n"
    "  (local.set $x (f64.add (local.get $x)\n"
    "   (f64.div (f64.load offset=8 (local.get $p)) (f64.load (local.get $p)))))\n"
    "  (call $h (f64.mul (f64.load offset=16 (local.get $p)) (f64.const 0.25))))\n"
    " (func (export \"f32\") (param $p i32) (result i32) (local $y f32)\n"
    "  (local.set $y (f32.const 3.5))\n"
    "  (local.set $y (f32.mul (local.get $y) (f32.load (local.get $p))))\n"
    "  (local.set $y (f32.sub (f32.load offset=4 (local.get $p)) (local.get $y)))\n"
    "  (i32.reinterpret_f32 (f32.div (local.get $y) (f32.load offset=4 (local.get $p)))))\n"
    /* loads through reinterpretations */
    " (func (export \"reint\") (param $p i32) (result i32) (local $x f64) (local $y f32)\n"
    "  (local.set $x (f64.const 7))\n"
    "  (local.set $y (f32.const 2))\n"
    "  (local.set $x (f64.add (local.get $x) (f64.reinterpret_i64 (i64.load (local.get $p)))))\n"
    "  (local.set $y (f32.mul (local.get $y) (f32.reinterpret_i32 (i32.load offset=32\n"
    "   (local.get $p)))))\n"
    "  (i32.add (call $h (local.get $x)) (i32.reinterpret_f32 (local.get $y))))\n"
    /* the load went to a local, which is read again: it must be written */
    " (func (export \"keep\") (param $p i32) (result i32) (local $t f64) (local $x f64)\n"
    "  (local.set $x (f64.const 2))\n"
    "  (local.set $t (f64.load (local.get $p)))\n"
    "  (local.set $x (f64.mul (local.get $x) (local.get $t)))\n"
    "  (call $h (f64.add (local.get $x) (local.get $t))))\n"
    /* a label between the load and its use: the branch brings another load's value */
    " (func (export \"lab\") (param $c i32) (result i32) (local $x f64)\n"
    "  (local.set $x (f64.const 3))\n"
    "  (call $h (f64.mul (local.get $x)\n"
    "   (block $b (result f64)\n"
    "    (br_if $b (f64.load (i32.const 64)) (local.get $c))\n"
    "    (drop)\n"
    "    (f64.load (i32.const 72))))))\n"
    /* A NaN operand, first or second, from a register, memory or the pool: its
     * payload comes back quieted. (Two NaNs are not tried: which one x86 returns
     * depends on the operand order, and the C compiler may build the interpreter's
     * `a + b` either way round.) */
    " (func (export \"nan\") (param $k i32) (result i32) (local $a f64) (local $b f64)\n"
    "  (local $r f64) (local $q f64) (local $i i32)\n"
    "  (local.set $a (f64.load (i32.const 112)))\n"
    "  (local.set $b (f64.convert_i32_s (local.get $k)))\n"
    "  (loop $l\n"
    "   (local.set $r (f64.add (local.get $a) (local.get $b)))\n"
    "   (local.set $q (f64.mul (local.get $b) (f64.load (i32.const 120))))\n"
    "   (local.set $q (f64.sub (local.get $q) (f64.const 1.5)))\n"
    "   (br_if $l (i32.lt_u (local.tee $i (i32.add (local.get $i) (i32.const 1)))\n"
    "    (i32.const 2))))\n"
    "  (i32.xor (i32.xor (call $h (local.get $r)) (call $h (local.get $q)))\n"
    "   (call $h (f64.div (f64.const 2) (f64.load (i32.const 120))))))\n"
    /* every register shape of the three-operand form, in a loop (pinned) */
    " (func (export \"regs\") (param $k i32) (result i32) (local $x f64) (local $y f64)\n"
    "  (local $z f64) (local $i i32)\n"
    "  (local.set $x (f64.convert_i32_s (local.get $k)))\n"
    "  (local.set $y (f64.const 0.5))\n"
    "  (loop $l\n"
    "   (local.set $z (f64.div (local.get $x) (local.get $y)))\n"
    "   (local.set $y (f64.add (local.get $z) (local.get $y)))\n"
    "   (local.set $x (f64.sub (local.get $x) (local.get $y)))\n"
    "   (local.set $z (f64.mul (local.get $z) (local.get $z)))\n"
    "   (local.set $y (f64.div (local.get $z) (local.get $z)))\n"
    "   (local.set $x (f64.add (local.get $x) (f64.const 0.125)))\n"
    "   (br_if $l (i32.lt_u (local.tee $i (i32.add (local.get $i) (i32.const 1)))\n"
    "    (i32.const 4))))\n"
    "  (i32.xor (call $h (local.get $x))\n"
    "   (i32.xor (call $h (local.get $y)) (call $h (local.get $z)))))\n"
    /* constants from the literal pool: as an operand (f64 and f32), into a pinned
     * register (zero, negative zero, a NaN's bits, through an i64 constant) */
    " (func (export \"consts\") (param $k i32) (result i32) (local $x f64) (local $y f32)\n"
    "  (local $z f64) (local $i i32)\n"
    "  (local.set $x (f64.convert_i32_s (local.get $k)))\n"
    "  (loop $l\n"
    "   (local.set $z (f64.const -0))\n"
    "   (local.set $x (f64.add (local.get $x) (f64.const 0.1)))\n"
    "   (local.set $x (f64.add (local.get $x) (f64.copysign (f64.const 1) (local.get $z))))\n"
    "   (local.set $z (f64.const 0))\n"
    "   (local.set $x (f64.sub (local.get $x) (f64.sub (local.get $z) (f64.const 0.25))))\n"
    "   (local.set $y (f32.mul (f32.add (local.get $y) (f32.const 1.5)) (f32.const -0.5)))\n"
    "   (local.set $z (f64.reinterpret_i64 (i64.const 0x7ff4000000000001)))\n"
    "   (local.set $x (f64.div (local.get $x) (f64.const 3)))\n"
    "   (br_if $l (i32.lt_u (local.tee $i (i32.add (local.get $i) (i32.const 1)))\n"
    "    (i32.const 3))))\n"
    "  (i32.xor (call $h (local.get $x))\n"
    "   (i32.xor (i32.reinterpret_f32 (local.get $y)) (call $h (local.get $z)))))\n"
    /* float compares tested by br_if and if on their flags: each of lt, gt, le, ge
     * (and eq, ne, which are not fused) with ordered and NaN operands, in a loop
     * whose back-edge is the compare; a compare into a local, read again; a label
     * between the compare and its branch */
    " (func $cmp (param $a f64) (param $b f64) (result i32) (local $r i32)\n"
    "  (if (f64.lt (local.get $a) (local.get $b)) (then (local.set $r (i32.const 1))))\n"
    "  (if (f32.gt (f32.demote_f64 (local.get $a)) (f32.demote_f64 (local.get $b)))\n"
    "   (then (local.set $r (i32.or (local.get $r) (i32.const 2)))))\n"
    "  (block $x (br_if $x (f64.le (local.get $a) (local.get $b)))\n"
    "   (local.set $r (i32.or (local.get $r) (i32.const 4))))\n"
    "  (block $x (br_if $x (f64.ge (local.get $a) (local.get $b)))\n"
    "   (local.set $r (i32.or (local.get $r) (i32.const 8))))\n"
    "  (if (f64.eq (local.get $a) (local.get $b))\n"
    "   (then (local.set $r (i32.or (local.get $r) (i32.const 16)))))\n"
    "  (if (f64.ne (local.get $a) (local.get $b))\n"
    "   (then (local.set $r (i32.or (local.get $r) (i32.const 32)))))\n"
    "  (local.get $r))\n"
    " (func (export \"fcmp\") (param $k i32) (result i32) (local $n f64)\n"
    "  (local.set $n (f64.load (i32.const 112)))\n"
    "  (i32.or (i32.or (call $cmp (f64.const 1) (f64.const 2))\n"
    "   (i32.shl (call $cmp (f64.const 2) (f64.const 1)) (i32.const 6)))\n"
    "   (i32.or (i32.shl (call $cmp (f64.const 2) (f64.const 2)) (i32.const 12))\n"
    "    (i32.or (i32.shl (call $cmp (local.get $n) (f64.const 2)) (i32.const 18))\n"
    "     (i32.shl (call $cmp (f64.const 2) (local.get $n)) (i32.const 24))))))\n"
    " (func (export \"floop\") (param $k i32) (result i32) (local $x f64) (local $i i32)\n"
    "  (local $c i32)\n"
    "  (loop $l\n"
    "   (local.set $x (f64.add (local.get $x) (f64.const 0.75)))\n"
    "   (local.set $i (i32.add (local.get $i) (i32.const 1)))\n"
    "   (br_if $l (f64.lt (local.get $x) (f64.convert_i32_s (local.get $k)))))\n"
    "  (local.set $c (f64.gt (local.get $x) (f64.const 4)))\n"
    "  (if (local.get $c) (then (local.set $i (i32.add (local.get $i) (i32.const 100)))))\n"
    "  (i32.add (i32.mul (local.get $i) (i32.const 1000)) (local.get $c)))\n"
    " (func (export \"flab\") (param $k i32) (result i32)\n"
    "  (block $t (result i32)\n"
    "   (br_if $t (i32.const 7)\n"
    "    (block $b (result i32)\n"
    "     (br_if $b (f64.gt (f64.const 1) (f64.const 2)) (local.get $k))\n"
    "     (drop)\n"
    "     (f64.lt (f64.const 1) (f64.const 2))))\n"
    "   (drop)\n"
    "   (i32.const 9)))\n"
    /* compares of a register with a loaded operand, in either order */
    " (func (export \"fload\") (param $p i32) (result i32) (local $x f64) (local $n i32)\n"
    "  (loop $l\n"
    "   (local.set $x (f64.add (local.get $x) (f64.const 0.5)))\n"
    "   (local.set $n (i32.add (local.get $n) (i32.const 1)))\n"
    "   (br_if $l (f64.lt (local.get $x) (f64.load (local.get $p)))))\n"
    "  (local.set $n (i32.add (local.get $n)\n"
    "   (i32.mul (i32.const 10) (f64.ge (f64.load (local.get $p)) (local.get $x)))))\n"
    "  (if (f64.lt (f64.load offset=8 (local.get $p)) (local.get $x))\n"
    "   (then (local.set $n (i32.add (local.get $n) (i32.const 100)))))\n"
    "  (if (f64.gt (local.get $x) (f64.load offset=16 (local.get $p)))\n"
    "   (then (local.set $n (i32.add (local.get $n) (i32.const 1000)))))\n"
    "  (if (f64.eq (local.get $x) (f64.load (local.get $p)))\n"
    "   (then (local.set $n (i32.add (local.get $n) (i32.const 10000)))))\n"
    "  (local.get $n))\n"
    " (func (export \"oob\") (param $p i32) (result i32) (local $x f64)\n"
    "  (local.set $x (f64.const 2))\n"
    "  (local.set $x (f64.mul (local.get $x) (f64.load (local.get $p))))\n"
    "  (call $h (f64.sub (f64.load offset=8 (local.get $p)) (local.get $x)))))\n";

static void test_float_operands(void **state) {
    (void)state;
    size_t n = 0;
    uint8_t *mod = wat_module(FL_WAT, &n);
    static const probe calls[] = {
        {"init", 0, NULL, true, 0},
        {"dotb", 64, NULL, false, 0},
        {"suba", 64, NULL, false, 0},
        {"f32", 96, NULL, false, 0},
        {"reint", 64, NULL, false, 0},
        {"keep", 72, NULL, false, 0},
        {"lab", 0, NULL, false, 0},
        {"lab", 1, NULL, false, 0},
        {"nan", 0, NULL, false, 0},
        {"nan", -3, NULL, false, 0},
        {"regs", 3, NULL, false, 0},
        {"regs", -7, NULL, false, 0},
        {"consts", 5, NULL, false, 0},
        {"consts", -2, NULL, false, 0},
        {"fcmp", 0, NULL, true, 0x29 | 0x26 << 6 | 0x10 << 12 | 0x2c << 18 | 0x2c << 24},
        {"floop", 10, NULL, true, 114 * 1000 + 1},
        {"floop", -3, NULL, true, 1 * 1000},
        {"flab", 1, NULL, true, 9}, /* the branch to $b carries gt's 0 */
        {"flab", 0, NULL, true, 7},
        {"fload", 64, NULL, true, 10113},
        {"fload", 112, NULL, true, 1001}, /* NaN, NaN, then 0 at 128 */
        {"oob", 65520, NULL, false, 0},
        {"oob", 65521, "out of bounds memory access", false, 0}, /* the second load */
        {"oob", 65529, "out of bounds memory access", false, 0}, /* the first */
    };
    probe_tiers(mod, n, calls, sizeof calls / sizeof calls[0]);
    free(mod);
}

/* Float to integer truncations inline (docs/jit.md "Truncations, rounding, abs and
 * neg"): every trapping and saturating form but those to u64, from f64 and (demoted)
 * f32, over values in range, at and just past each bound, NaN, infinity and -1 < a <
 * 0; rounding (SSE4.1, and the helper under plain SSE2) and abs/neg in xmm registers
 * over those and a signalling NaN's payload, halves, -0 and 2^52 - 0.5, their bits;
 * against the interpreter and the expected trap, with guard pages, explicit checks and
 * plain SSE2. */
static const char TR_WAT[] =
    "(module (memory 1)\n"
    " (func (export \"init\") (param $k i32) (result i32)\n"
    "  (f64.store (i32.const 0) (f64.const 1.5))\n"
    "  (f64.store (i32.const 8) (f64.const -1.5))\n"
    "  (f64.store (i32.const 16) (f64.const 2147483647.9))\n"
    "  (f64.store (i32.const 24) (f64.const -2147483648.9))\n"
    "  (f64.store (i32.const 32) (f64.const 2147483648))\n"
    "  (f64.store (i32.const 40) (f64.const -2147483649))\n"
    "  (i64.store (i32.const 48) (i64.const 0x7ff8000000000000))\n"
    "  (i64.store (i32.const 56) (i64.const 0x7ff0000000000000))\n"
    "  (f64.store (i32.const 64) (f64.const 4294967295.9))\n"
    "  (f64.store (i32.const 72) (f64.const -0.9))\n"
    "  (f64.store (i32.const 80) (f64.const 9.2e18))\n"
    "  (f64.store (i32.const 88) (f64.const -9223372036854775808))\n"
    "  (f64.store (i32.const 96) (f64.const 1e19))\n"
    "  (f64.store (i32.const 104) (f64.const -1))\n"
    "  (i64.store (i32.const 112) (i64.const 0xfff0000000000000))\n"
    "  (i64.store (i32.const 120) (i64.const 0xfff4000000000123))\n"
    "  (f64.store (i32.const 128) (f64.const -0.5))\n"
    "  (f64.store (i32.const 136) (f64.const 2.5))\n"
    "  (f64.store (i32.const 144) (f64.const -0))\n"
    "  (f64.store (i32.const 152) (f64.const 4503599627370495.5))\n"
    "  (f64.store (i32.const 160) (f64.const -3.5))\n"
    "  (i32.const 0))\n"
    " (func $v (param $k i32) (result f64) (f64.load (i32.shl (local.get $k) (i32.const 3))))\n"
    " (func $w (param $x i64) (result i32)\n"
    "  (i32.xor (i32.wrap_i64 (local.get $x)) (i32.wrap_i64 (i64.shr_u (local.get $x)\n"
    "   (i64.const 32)))))\n"
    " (func (export \"ts32\") (param $k i32) (result i32) (i32.trunc_f64_s (call $v (local.get "
    "$k))))\n"
    " (func (export \"tu32\") (param $k i32) (result i32) (i32.trunc_f64_u (call $v (local.get "
    "$k))))\n"
    " (func (export \"ts64\") (param $k i32) (result i32)\n"
    "  (call $w (i64.trunc_f64_s (call $v (local.get $k)))))\n"
    " (func (export \"fs32\") (param $k i32) (result i32)\n"
    "  (i32.trunc_f32_s (f32.demote_f64 (call $v (local.get $k)))))\n"
    " (func (export \"fu32\") (param $k i32) (result i32)\n"
    "  (i32.trunc_f32_u (f32.demote_f64 (call $v (local.get $k)))))\n"
    " (func (export \"fs64\") (param $k i32) (result i32)\n"
    "  (call $w (i64.trunc_f32_s (f32.demote_f64 (call $v (local.get $k))))))\n"
    " (func (export \"ss32\") (param $k i32) (result i32)\n"
    "  (i32.trunc_sat_f64_s (call $v (local.get $k))))\n"
    " (func (export \"su32\") (param $k i32) (result i32)\n"
    "  (i32.trunc_sat_f64_u (call $v (local.get $k))))\n"
    " (func (export \"ss64\") (param $k i32) (result i32)\n"
    "  (call $w (i64.trunc_sat_f64_s (call $v (local.get $k)))))\n"
    " (func (export \"gs32\") (param $k i32) (result i32)\n"
    "  (i32.trunc_sat_f32_s (f32.demote_f64 (call $v (local.get $k)))))\n"
    " (func (export \"gu32\") (param $k i32) (result i32)\n"
    "  (i32.trunc_sat_f32_u (f32.demote_f64 (call $v (local.get $k)))))\n"
    " (func (export \"gs64\") (param $k i32) (result i32)\n"
    "  (call $w (i64.trunc_sat_f32_s (f32.demote_f64 (call $v (local.get $k))))))\n"
    /* rounding (roundsd/roundss with SSE4.1), abs/neg (sign masks) and sqrt (from
     * another register with AVX), their bits */
    " (func $h (param $x f64) (result i32) (call $w (i64.reinterpret_f64 (local.get $x))))\n"
    " (func (export \"rnd\") (param $k i32) (result i32) (local $x f64)\n"
    "  (local.set $x (call $v (local.get $k)))\n"
    "  (i32.xor (i32.xor (call $h (f64.ceil (local.get $x)))\n"
    "    (i32.rotl (call $h (f64.floor (local.get $x))) (i32.const 8)))\n"
    "   (i32.xor (i32.rotl (call $h (f64.trunc (local.get $x))) (i32.const 16))\n"
    "    (i32.rotl (call $h (f64.nearest (local.get $x))) (i32.const 24)))))\n"
    " (func (export \"rndf\") (param $k i32) (result i32) (local $y f32)\n"
    "  (local.set $y (f32.demote_f64 (call $v (local.get $k))))\n"
    "  (i32.xor (i32.xor (i32.reinterpret_f32 (f32.ceil (local.get $y)))\n"
    "    (i32.rotl (i32.reinterpret_f32 (f32.floor (local.get $y))) (i32.const 8)))\n"
    "   (i32.xor (i32.rotl (i32.reinterpret_f32 (f32.trunc (local.get $y))) (i32.const 16))\n"
    "    (i32.rotl (i32.reinterpret_f32 (f32.nearest (local.get $y))) (i32.const 24)))))\n"
    " (func (export \"absneg\") (param $k i32) (result i32) (local $x f64) (local $y f32)\n"
    "  (local $a f64) (local $q f64) (local $b f32) (local $i i32)\n"
    "  (local.set $x (call $v (local.get $k)))\n"
    "  (local.set $y (f32.demote_f64 (local.get $x)))\n"
    "  (loop $l\n"
    "   (local.set $a (f64.abs (local.get $x)))\n"
    "   (local.set $q (f64.sqrt (local.get $x)))\n"
    "   (local.set $x (f64.neg (local.get $x)))\n"
    "   (local.set $b (f32.abs (local.get $y)))\n"
    "   (local.set $y (f32.neg (local.get $y)))\n"
    "   (br_if $l (i32.lt_u (local.tee $i (i32.add (local.get $i) (i32.const 1)))\n"
    "    (i32.const 3))))\n"
    "  (i32.xor (i32.xor (call $h (local.get $x)) (i32.rotl (call $h (local.get $a)) (i32.const "
    "7)))\n"
    "   (i32.xor (i32.rotl (call $h (local.get $q)) (i32.const 13))\n"
    "    (i32.xor (i32.reinterpret_f32 (local.get $y))\n"
    "     (i32.rotl (i32.reinterpret_f32 (local.get $b)) (i32.const 3))))))\n"
    /* in a loop, the operand pinned */
    " (func (export \"tsum\") (param $k i32) (result i32) (local $x f64) (local $s i32)\n"
    "  (local.set $x (f64.const -3.75))\n"
    "  (loop $l\n"
    "   (local.set $s (i32.add (i32.mul (local.get $s) (i32.const 7))\n"
    "    (i32.add (i32.trunc_f64_s (local.get $x)) (i32.trunc_sat_f64_u (local.get $x)))))\n"
    "   (local.set $x (f64.add (local.get $x) (f64.const 1.25)))\n"
    "   (br_if $l (f64.lt (local.get $x) (f64.convert_i32_s (local.get $k)))))\n"
    "  (local.get $s)))\n";

static void test_truncations(void **state) {
    (void)state;
    size_t n = 0;
    uint8_t *mod = wat_module(TR_WAT, &n);
    /* per function, per value (init's order): '.' a result, 'o' integer overflow, 'n'
     * invalid conversion; the saturating ones return for every value */
    static const struct {
        const char *fn, *traps;
    } fns[] = {
        {"ts32", "....oonoo.ooo.o"}, {"tu32", ".o.o.ono..ooooo"}, {"ts64", "......no....o.o"},
        {"fs32", "..o.o.noo.ooo.o"}, {"fu32", ".o.o.onoo.ooooo"}, {"fs64", "......no....o.o"},
        {"ss32", "..............."}, {"su32", "..............."}, {"ss64", "..............."},
        {"gs32", "..............."}, {"gu32", "..............."}, {"gs64", "..............."},
    };
    enum { NV = 15, NF = sizeof fns / sizeof fns[0] };
    probe *calls = calloc(1 + NF * NV + 3 * (NV + 6) + 3, sizeof *calls);
    assert_non_null(calls);
    size_t np = 0;
    calls[np++] = (probe){"init", 0, NULL, true, 0};
    for (size_t f = 0; f < NF; f++)
        for (int k = 0; k < NV; k++) {
            char t = fns[f].traps[k];
            calls[np++] = (probe){fns[f].fn, k,
                                  t == 'o'   ? "integer overflow"
                                  : t == 'n' ? "invalid conversion to integer"
                                             : NULL,
                                  false, 0};
        }
    for (int k = 0; k < NV + 6; k++) {
        calls[np++] = (probe){"rnd", k, NULL, false, 0};
        calls[np++] = (probe){"rndf", k, NULL, false, 0};
        calls[np++] = (probe){"absneg", k, NULL, false, 0};
    }
    calls[np++] = (probe){"tsum", 4, NULL, false, 0};
    calls[np++] = (probe){"tsum", -9, NULL, false, 0};
    calls[np++] = (probe){"tsum", 40, NULL, false, 0};
    probe_tiers(mod, n, calls, np);
    free(calls);
    free(mod);
}

/* Loops and slot traffic (docs/jit.md "Loops and the frame"): loop heads poll the
 * interrupt flag and back-edges are one jump; a load of a frame cell that the previous
 * instruction stored takes the stored register; br_if tests a pinned register in
 * place; a copy goes straight into a pinned register. Against the interpreter, with
 * guard pages and with explicit checks. */
static const char LOOPS_WAT[] =
    "(module (memory 1)\n"
    /* a linked list of n nodes (next, value) at 8, 16, ...; the walk loads the next
     * address from the node just loaded; twelve locals churned so that some slots
     * stay in the frame */
    " (func (export \"list\") (param $n i32) (result i32)\n"
    "  (local $i i32) (local $p i32) (local $s i32) (local $a i32) (local $b i32)\n"
    "  (local $c i32) (local $d i32) (local $e i32) (local $f i32) (local $g i32)\n"
    "  (local $h i32) (local $k i32)\n"
    "  (block $done (loop $mk (br_if $done (i32.ge_u (local.get $i) (local.get $n)))\n"
    "   (local.set $p (i32.add (i32.shl (local.get $i) (i32.const 3)) (i32.const 8)))\n"
    "   (i32.store (local.get $p) (select (i32.add (local.get $p) (i32.const 8)) (i32.const 0)\n"
    "     (i32.lt_u (i32.add (local.get $i) (i32.const 1)) (local.get $n))))\n"
    "   (i32.store offset=4 (local.get $p) (i32.mul (local.get $i) (i32.const 3)))\n"
    "   (local.set $i (i32.add (local.get $i) (i32.const 1))) (br $mk)))\n"
    "  (local.set $p (i32.const 8))\n"
    "  (loop $walk\n"
    "   (local.set $s (i32.add (local.get $s) (i32.load offset=4 (local.get $p))))\n"
    "   (local.set $a (i32.xor (local.get $a) (local.get $s)))\n"
    "   (local.set $b (i32.add (local.get $b) (local.get $a)))\n"
    "   (local.set $c (i32.sub (local.get $c) (local.get $b)))\n"
    "   (local.set $d (i32.rotl (local.get $d) (local.get $c)))\n"
    "   (local.set $e (i32.add (local.get $e) (i32.load16_u offset=4 (local.get $p))))\n"
    "   (local.set $f (i32.mul (local.get $f) (i32.const 31)))\n"
    "   (local.set $g (i32.add (local.get $g) (local.get $f)))\n"
    "   (local.set $h (i32.or (local.get $h) (local.get $e)))\n"
    "   (local.set $k (i32.add (local.get $k) (i32.const 1)))\n"
    "   (local.set $p (i32.load (i32.load (local.get $p))))\n"
    "   (br_if $walk (local.get $p)))\n"
    "  (i32.add (i32.add (i32.add (local.get $s) (local.get $a)) (i32.add (local.get $b)\n"
    "   (local.get $c))) (i32.add (i32.add (local.get $d) (local.get $e)) (i32.add\n"
    "   (i32.add (local.get $f) (local.get $g)) (i32.add (local.get $h) (local.get $k))))))\n"
    /* br_if on an i32 whose register holds an i64 with a zero low half: no branch */
    " (func (export \"wrapbr\") (param $x i64) (result i32) (local $i i32) (local $n i32)\n"
    "  (loop $l\n"
    "   (block $z (br_if $z (i32.eqz (i32.wrap_i64 (i64.add (local.get $x)\n"
    "      (i64.extend_i32_u (local.get $i))))))\n"
    "    (local.set $n (i32.add (local.get $n) (i32.const 1))))\n"
    "   (block $y (br_if $y (i32.wrap_i64 (i64.add (local.get $x) (i64.extend_i32_u\n"
    "      (local.get $i)))))\n"
    "    (local.set $n (i32.add (local.get $n) (i32.const 1000))))\n"
    "   (local.set $i (i32.add (local.get $i) (i32.const 1)))\n"
    "   (br_if $l (i32.lt_u (local.get $i) (i32.const 100))))\n"
    "  (local.get $n))\n"
    /* i32 wraparound: iterations from start until the counter wraps to 0 */
    " (func (export \"count\") (param $i i32) (result i32) (local $n i32)\n"
    "  (loop $l (local.set $n (i32.add (local.get $n) (i32.const 1)))\n"
    "   (local.set $i (i32.add (local.get $i) (i32.const 1)))\n"
    "   (br_if $l (local.get $i)))\n"
    "  (local.get $n))\n"
    /* nested loops: the inner one branches back to the outer head */
    " (func (export \"nest\") (param $n i32) (result i32) (local $i i32) (local $j i32)\n"
    "  (local $s i32)\n"
    "  (loop $o (local.set $j (i32.const 0))\n"
    "   (loop $in (local.set $s (i32.add (local.get $s) (i32.mul (local.get $i)\n"
    "     (local.get $j))))\n"
    "    (local.set $j (i32.add (local.get $j) (i32.const 1)))\n"
    "    (if (i32.eq (local.get $j) (i32.const 7)) (then\n"
    "     (local.set $i (i32.add (local.get $i) (i32.const 1)))\n"
    "     (br_if $o (i32.lt_u (local.get $i) (local.get $n)))\n"
    "     (return (local.get $s))))\n"
    "    (br $in)))\n"
    "  (unreachable))\n"
    /* a load per iteration up to base + 4 * 8: the last is out of bounds for base >
     * 65500, at the exact boundary for base = 65500 */
    " (func (export \"oob\") (param $b i32) (result i32) (local $i i32) (local $s i32)\n"
    "  (loop $l (local.set $s (i32.add (local.get $s) (i32.load (i32.add (local.get $b)\n"
    "     (i32.shl (local.get $i) (i32.const 2))))))\n"
    "   (local.set $i (i32.add (local.get $i) (i32.const 1)))\n"
    "   (br_if $l (i32.le_u (local.get $i) (i32.const 8))))\n"
    "  (local.get $s))\n"
    /* NaN bounds: a float compare fused into the back-edge */
    " (func (export \"fl\") (param $n i32) (result i32) (local $x f64) (local $k i32)\n"
    "  (local $lim f64)\n"
    "  (local.set $lim (select (f64.const nan) (f64.const 10) (i32.eqz (local.get $n))))\n"
    "  (loop $l (local.set $k (i32.add (local.get $k) (i32.const 1)))\n"
    "   (local.set $x (f64.add (local.get $x) (f64.const 1.5)))\n"
    "   (br_if $l (f64.lt (local.get $x) (local.get $lim))))\n"
    "  (local.get $k))\n"
    /* a block result stored by the fallthrough path's last instruction and by the
     * branch's: the load after the label must not take the fallthrough's register;
     * nine hot locals keep the result slot in the frame */
    " (func (export \"join\") (param $x i32) (result i32) (local $a i32) (local $b i32)\n"
    "  (local $c i32) (local $d i32) (local $e i32) (local $f i32) (local $g i32)\n"
    "  (local $h i32) (local $i i32)\n"
    "  (loop $l (local.set $a (i32.add (local.get $a) (i32.const 1)))\n"
    "   (local.set $b (i32.add (local.get $b) (local.get $a)))\n"
    "   (local.set $c (i32.add (local.get $c) (local.get $b)))\n"
    "   (local.set $d (i32.add (local.get $d) (local.get $c)))\n"
    "   (local.set $e (i32.add (local.get $e) (local.get $d)))\n"
    "   (local.set $f (i32.add (local.get $f) (local.get $e)))\n"
    "   (local.set $g (i32.add (local.get $g) (local.get $f)))\n"
    "   (local.set $h (i32.add (local.get $h) (local.get $g)))\n"
    "   (local.set $i (i32.add (local.get $i) (i32.const 1)))\n"
    "   (br_if $l (i32.lt_u (local.get $i) (i32.const 3))))\n"
    "  (i32.store (i32.const 0) (i32.const 1234))\n"
    "  (i32.add (i32.add (block $r (result i32) (drop (br_if $r (i32.const 7)\n"
    "    (local.get $x))) (i32.load (i32.const 0))) (local.get $a)) (local.get $h)))\n"
    /* an endless loop whose only back-edge is conditional */
    " (func (export \"spin2\") (param $i i32) (result i32)\n"
    "  (loop $l (local.set $i (i32.add (local.get $i) (i32.const 2)))\n"
    "   (br_if $l (i32.and (local.get $i) (i32.const 1)))) (local.get $i))\n"
    /* an endless loop whose only back-edge is a br_table entry (pass 1 records it as
     * a loop: its head polls; the table itself does not) */
    " (func (export \"spin3\") (param $i i32) (result i32)\n"
    "  (block $out (loop $l (local.set $i (i32.add (local.get $i) (i32.const 2)))\n"
    "    (br_table $out $l (i32.and (local.get $i) (i32.const 1))))) (local.get $i))\n"
    /* a state machine: br_table to forward cases, back to the loop head and out */
    " (func (export \"sm\") (param $n i32) (result i32) (local $acc i32)\n"
    "  (block $done (loop $l (br_if $done (i32.eqz (local.get $n)))\n"
    "    (local.set $n (i32.sub (local.get $n) (i32.const 1)))\n"
    "    (block $c2 (block $c1 (block $c0\n"
    "       (br_table $c0 $c1 $c2 $l $l $done (i32.rem_u (i32.mul (local.get $n)\n"
    "        (i32.const 7)) (i32.const 5))))\n"
    "      (local.set $acc (i32.add (local.get $acc) (i32.const 1))) (br $l))\n"
    "     (local.set $acc (i32.mul (local.get $acc) (i32.const 3))) (br $l))\n"
    "    (local.set $acc (i32.xor (local.get $acc) (local.get $n))) (br $l)))\n"
    "  (local.get $acc)))\n";

static void test_loops_and_slots(void **state) {
    (void)state;
    size_t n = 0;
    uint8_t *mod = wat_module(LOOPS_WAT, &n);
    pw_error err;
    static const probe calls[] = {{"list", 1, NULL, false, 0},
                                  {"list", 2, NULL, false, 0},
                                  {"list", 1000, NULL, false, 0},
                                  {"wrapbr", 0, NULL, false, 0},
                                  {"wrapbr", -50, NULL, false, 0},
                                  {"wrapbr", 0x100000000LL - 7, NULL, false, 0},
                                  {"wrapbr", -0x100000000LL, NULL, false, 0},
                                  {"count", -1, NULL, false, 0},
                                  {"count", -300, NULL, false, 0},
                                  {"count", INT32_MIN + 5, NULL, false, 0},
                                  {"nest", 1, NULL, false, 0},
                                  {"nest", 50, NULL, false, 0},
                                  {"oob", 0, NULL, false, 0},
                                  {"oob", 65500, NULL, false, 0},
                                  {"oob", 65501, "out of bounds memory access", false, 0},
                                  {"oob", 65533, "out of bounds memory access", false, 0},
                                  {"oob", -4, "out of bounds memory access", false, 0},
                                  {"fl", 0, NULL, false, 0},
                                  {"fl", 1, NULL, false, 0},
                                  {"join", 0, NULL, false, 0},
                                  {"join", 1, NULL, false, 0},
                                  {"sm", 0, NULL, false, 0},
                                  {"sm", 1, NULL, false, 0},
                                  {"sm", 7, NULL, false, 0},
                                  {"sm", 1000, NULL, false, 0}};
    int64_t want[sizeof calls / sizeof calls[0]] = {0};
    for (size_t mi = 0; mi < sizeof tiers / sizeof tiers[0]; mi++) {
        pw_store_config cfg = {.engine = tiers[mi].engine, .bounds_checks = tiers[mi].bounds};
        rig r;
        rig_open_cfg(&r, &cfg, mod, n);
        call_probes(&r, mi, calls, sizeof calls / sizeof calls[0], want);
        if (mi == 0) { /* the interpreter's results, worked out by hand */
            assert_int_equal(want[3], 1000 + 99); /* i = 0: the sum is 0 */
            assert_int_equal(want[6], 1000 + 99); /* i = 0: low half 0, high half not */
            assert_int_equal(want[7], 1);
            assert_int_equal(want[8], 300);
            assert_int_equal(want[17], 1); /* NaN limit: the compare is false */
            assert_int_equal(want[18], 7);
            assert_int_equal(want[19], 1234 + 3 + 45); /* a = 3, h = 45 */
            assert_int_equal(want[20], 7 + 3 + 45);
        }
        if (tiers[mi].engine == PW_ENGINE_JIT) { /* the conditional back-edge polls */
            raiser it = {r.s, 50, 0};
            pthread_t th;
            assert_int_equal(pthread_create(&th, NULL, raise_later, &it), 0);
            pw_val a = {.bits = 1}, out = {0};
            pw_status st = pw_call(r.s, fn(&r, "spin2"), &a, 1, &out, 1, &err);
            double stopped = now_ms();
            pthread_join(th, NULL);
            assert_int_equal(st, PW_ERR_TRAP);
            assert_int_equal(err.trap, PW_TRAP_INTERRUPTED);
            assert_true(stopped - it.at < 2000.0);
            /* the same through a br_table back-edge */
            pw_store_clear_interrupt(r.s);
            it = (raiser){r.s, 50, 0};
            assert_int_equal(pthread_create(&th, NULL, raise_later, &it), 0);
            st = pw_call(r.s, fn(&r, "spin3"), &a, 1, &out, 1, &err);
            stopped = now_ms();
            pthread_join(th, NULL);
            assert_int_equal(st, PW_ERR_TRAP);
            assert_int_equal(err.trap, PW_TRAP_INTERRUPTED);
            assert_true(stopped - it.at < 2000.0);
        }
        rig_close(&r);
    }
    free(mod);
}

/* Direct calls (docs/jit.md "Calls in both directions"): no frame record is written by
 * a JIT-to-JIT call; the records are derived from the native stack when a call helper
 * runs. Under a collection at every allocation (allocations are in interpreted
 * functions: struct.new falls back), a recursion of JIT frames each holding a struct
 * in a local (direct and through call_indirect) must keep every struct alive, and
 * every derived record must name a call site with a stack map (gc_nomap stays 0). An
 * endless recursion with no loop (each call makes two) is stopped by the interrupt
 * flag (the direct calls' bound). "call stack exhausted" at exactly the
 * interpreter's depth. */
static const char FRAMES_WAT[] =
    "(module (type $box (struct (field i32))) (type $t (func (param i32) (result i32)))\n"
    " (table 2 funcref) (elem (i32.const 0) $ideep)\n"
    " (func $mk (param i32) (result (ref null $box)) (struct.new $box (local.get 0)))\n"
    " (func $get (param (ref null $box)) (result i32) (struct.get $box 0 (local.get 0)))\n"
    " (func $deep (export \"deep\") (param $n i32) (result i32) (local $r (ref null $box))\n"
    "  (if (result i32) (i32.eqz (local.get $n))\n"
    "   (then (call $get (call $mk (i32.const 1000))))\n"
    "   (else (local.set $r (call $mk (local.get $n)))\n"
    "    (i32.add (call $deep (i32.sub (local.get $n) (i32.const 1)))\n"
    "             (call $get (local.get $r))))))\n"
    " (func $ideep (export \"ideep\") (param $n i32) (result i32) (local $r (ref null $box))\n"
    "  (if (result i32) (i32.eqz (local.get $n))\n"
    "   (then (call $get (call $mk (i32.const 1000))))\n"
    "   (else (local.set $r (call $mk (local.get $n)))\n"
    "    (i32.add (call_indirect (type $t) (i32.sub (local.get $n) (i32.const 1))\n"
    "              (i32.const 0))\n"
    "             (call $get (local.get $r))))))\n"
    " (func $two (export \"two\") (param $n i32) (result i32)\n"
    "  (if (result i32) (i32.eqz (local.get $n)) (then (i32.const 1))\n"
    "   (else (i32.add (call $two (i32.sub (local.get $n) (i32.const 1)))\n"
    "                  (call $two (i32.sub (local.get $n) (i32.const 1)))))))\n"
    /* pins across direct calls: the loop keeps seven values in registers across calls of
     * $churn (directly and through the table), whose own loop churns seven values
     * of its own in the same registers; its inner entry must restore them; and of
     * $cgrow, which saves none but calls C code (memory.grow), which clobbers them */
    " (func $churn (param $n i32) (result i32) (local $a i32) (local $b i32) (local $c i32)\n"
    "  (local $d i32) (local $e i32) (local $f i32)\n"
    "  (loop $l (local.set $a (i32.add (local.get $a) (local.get $n)))\n"
    "   (local.set $b (i32.xor (local.get $b) (local.get $a)))\n"
    "   (local.set $c (i32.add (local.get $c) (local.get $b)))\n"
    "   (local.set $d (i32.sub (local.get $d) (local.get $c)))\n"
    "   (local.set $e (i32.add (local.get $e) (i32.mul (local.get $d) (i32.const 3))))\n"
    "   (local.set $f (i32.xor (local.get $f) (local.get $e)))\n"
    "   (br_if $l (local.tee $n (i32.sub (local.get $n) (i32.const 1)))))\n"
    "  (i32.add (local.get $a) (i32.add (local.get $b) (i32.add (local.get $c)\n"
    "   (i32.add (local.get $d) (i32.add (local.get $e) (local.get $f)))))))\n"
    " (elem (i32.const 1) $churn)\n"
    " (memory 1)\n"
    " (func $cgrow (param $n i32) (result i32) (drop (memory.grow (i32.const 0))) (local.get $n))\n"
    " (func (export \"keep\") (param $n i32) (result i32) (local $a i32) (local $b i32)\n"
    "  (local $c i32) (local $d i32) (local $e i32) (local $f i32)\n"
    "  (loop $l (local.set $a (i32.add (local.get $a) (call $churn (i32.const 5))))\n"
    "   (local.set $b (i32.add (local.get $b) (local.get $n)))\n"
    "   (local.set $c (i32.xor (local.get $c) (local.get $a)))\n"
    "   (local.set $d (i32.add (local.get $d)\n"
    "    (call_indirect (type $t) (local.get $n) (i32.const 1))))\n"
    "   (local.set $e (i32.add (local.get $e) (call $cgrow (local.get $b))))\n"
    "   (local.set $f (i32.sub (local.get $f) (local.get $c)))\n"
    "   (br_if $l (local.tee $n (i32.sub (local.get $n) (i32.const 1)))))\n"
    "  (i32.add (local.get $a) (i32.add (local.get $b) (i32.add (local.get $c)\n"
    "   (i32.add (local.get $d) (i32.add (local.get $e) (local.get $f)))))))\n"
    /* a reference pinned across direct calls: $r lives in a register (it and $n are
     * the heaviest slots) across the direct call of $alloc, whose allocation collects;
     * the collection reads $r from gckeep's frame (the call site's stack map), so it
     * must be stored there before the call */
    " (func $alloc (param $n i32) (result i32) (drop (call $mk (local.get $n))) (local.get $n))\n"
    " (func (export \"gckeep\") (param $n i32) (result i32) (local $r (ref null $box))\n"
    "  (local.set $r (call $mk (i32.const 1000)))\n"
    "  (loop $l (drop (call $alloc (local.get $n)))\n"
    "   (local.set $n (i32.sub (local.get $n) (ref.is_null (local.get $r))))\n"
    "   (br_if $l (i32.and (i32.eqz (ref.is_null (local.get $r)))\n"
    "    (i32.ne (local.tee $n (i32.sub (local.get $n) (i32.const 1))) (i32.const 0)))))\n"
    "  (call $get (local.get $r)))\n"
    " (func $sum (export \"sum\") (param $n i32) (result i32)\n"
    "  (if (result i32) (i32.eqz (local.get $n)) (then (i32.const 0))\n"
    "   (else (i32.add (local.get $n) (call $sum (i32.sub (local.get $n) (i32.const 1))))))))\n";

static void test_call_frames(void **state) {
    (void)state;
    size_t n = 0;
    uint8_t *mod = wat_module(FRAMES_WAT, &n);
    pw_error err;
    int32_t deepest = -1;  /* the interpreter's deepest sum(n) under 300 frame records */
    int32_t kept[2] = {0}; /* the interpreter's keep(1), keep(300) */
    for (size_t mi = 0; mi < sizeof tiers / sizeof tiers[0]; mi++) {
        pw_store_config cfg = {.engine = tiers[mi].engine, .bounds_checks = tiers[mi].bounds};
        rig r;
        rig_open_cfg(&r, &cfg, mod, n);
        r.s->gc_stress = true;
        const char *names[] = {"deep", "ideep"};
        for (int k = 0; k < 2; k++)
            for (int32_t d = 0; d <= 200; d += 40) {
                int32_t res = 0;
                if (call1(&r, names[k], d, &res, &err) != PW_OK)
                    fail_msg("%s(%d): %s", names[k], d, err.message);
                assert_int_equal(res, 1000 + d * (d + 1) / 2);
            }
        for (int32_t d = 1; d <= 64; d *= 4) {
            int32_t res = 0;
            if (call1(&r, "gckeep", d, &res, &err) != PW_OK)
                fail_msg("gckeep(%d): %s", d, err.message);
            assert_int_equal(res, 1000);
        }
        assert_int_equal(r.s->gc_nomap, 0);
        for (int32_t k = 1; k <= 300; k += 299) {
            int32_t res = 0;
            if (call1(&r, "keep", k, &res, &err) != PW_OK) fail_msg("keep: %s", err.message);
            if (mi == 0)
                kept[k > 1] = res;
            else
                assert_int_equal(res, kept[k > 1]);
        }
        if (PW_JIT_AVAILABLE && mi > 0) {
            assert_int_equal(pw__jit_state(fn(&r, "deep")), 1);
            assert_int_equal(pw__jit_state(fn(&r, "ideep")), 1);
            assert_int_equal(pw__jit_state(fn(&r, "two")), 1);
            assert_int_equal(pw__jit_state(fn(&r, "keep")), 1);
            assert_int_equal(pw__jit_state(fn(&r, "gckeep")), 1);
        }
        if (tiers[mi].engine == PW_ENGINE_JIT) { /* 2^60 calls, 61 deep, no loop */
            raiser it = {r.s, 50, 0};
            pthread_t th;
            assert_int_equal(pthread_create(&th, NULL, raise_later, &it), 0);
            int32_t res;
            pw_status st = call1(&r, "two", 60, &res, &err);
            double stopped = now_ms();
            pthread_join(th, NULL);
            assert_int_equal(st, PW_ERR_TRAP);
            assert_int_equal(err.trap, PW_TRAP_INTERRUPTED);
            assert_true(stopped - it.at < 2000.0);
            pw_store_clear_interrupt(r.s);
            assert_int_equal(call1(&r, "two", 3, &res, &err), PW_OK);
            assert_int_equal(res, 8);
        }
        rig_close(&r);
        /* The depth limit at its exact boundary: with the default native stack budget
         * (every level a JIT frame) and with one so small that the deeper levels run on
         * the interpreter. The interpreter's entry takes a frame record of its own
         * (ret_pc NULL) that an entry into JIT code does not, so JIT frames alone reach
         * one level deeper than the interpreter alone; with the interpreter taking over
         * below, the same depth as the interpreter. */
        for (int small = 0; small < 2; small++) {
            cfg.max_call_depth = 300;
            cfg.jit_native_stack = small ? 4096 : 0;
            rig_open_cfg(&r, &cfg, mod, n);
            int32_t limit = deepest + (mi > 0 && !small);
            for (int32_t d = 280; d <= 310; d++) {
                int32_t res = 0;
                pw_status st = call1(&r, "sum", d, &res, &err);
                if (mi == 0 && !small && st == PW_OK) limit = deepest = d;
                if (d <= limit) {
                    if (st != PW_OK) fail_msg("mode %zu sum(%d): %s", mi, d, err.message);
                    assert_int_equal(res, d * (d + 1) / 2);
                } else {
                    assert_int_equal(st, PW_ERR_TRAP);
                    assert_string_equal(err.message, "call stack exhausted");
                }
            }
            rig_close(&r);
        }
        assert_true(deepest > 280 && deepest < 310);
    }
    free(mod);
}

/* Pinned registers across calls (docs/jit.md "Registers: pinned slots"): a direct
 * JIT-to-JIT call keeps the caller's integer pins below its argbase in their
 * registers, so every callee's inner entry must restore the pin registers it uses,
 * and any JIT code that calls C (host functions, the helper paths, call_indirect to
 * another instance) must keep the registers it did not save, which hold its callers'
 * pins. $live keeps nine i32/i64/f64 values across: $wide, which churns nine values of
 * its own (every pin register); $viahost, which calls a host function; $viafb, whose
 * own pins live across calls of a function without JIT code ($fb: GC instructions
 * fall back) and through call_indirect to a function of another instance (the slow
 * paths); call_indirect of $wide; and the host function called directly. $trapper
 * does the same with a callee that traps on 7; a later call must be unaffected. Every
 * loop is also bounded by a global (memory, not a register), so a corrupted counter
 * fails the comparison instead of looping for hours. */
static const char PINS_WAT[] =
    "(module (type $t (func (param i32) (result i32)))\n"
    " (import \"env\" \"h\" (func $h (type $t)))\n"
    " (import \"other\" \"f\" (func $of (type $t)))\n"
    " (table 2 funcref) (elem (i32.const 0) $wide $of)\n"
    " (global $cap (mut i32) (i32.const 0))\n"
    " (func $wide (type $t) (local $a i32) (local $b i32) (local $c i64) (local $d i64)\n"
    "  (local $e i32) (local $f i32) (local $g i32) (local $x f64) (local $y f64)\n"
    "  (local.set $g (i32.const 3))\n"
    "  (loop $l (local.set $a (i32.add (local.get $a) (local.get 0)))\n"
    "   (local.set $b (i32.xor (local.get $b) (i32.mul (local.get $a) (i32.const 7))))\n"
    "   (local.set $c (i64.add (local.get $c) (i64.extend_i32_u (local.get $b))))\n"
    "   (local.set $d (i64.xor (local.get $d) (i64.rotl (local.get $c) (i64.const 9))))\n"
    "   (local.set $e (i32.add (local.get $e) (i32.wrap_i64 (local.get $d))))\n"
    "   (local.set $f (i32.sub (local.get $f) (local.get $e)))\n"
    "   (local.set $x (f64.add (local.get $x) (f64.convert_i32_s (local.get $f))))\n"
    "   (local.set $y (f64.sub (local.get $y) (f64.mul (local.get $x) (f64.const 0.5))))\n"
    "   (br_if $l (i32.gt_s (local.tee $g (i32.sub (local.get $g) (i32.const 1)))\n"
    "    (i32.const 0))))\n"
    "  (i32.add (i32.add (local.get $a) (local.get $b)) (i32.add (local.get $e)\n"
    "   (i32.add (local.get $f) (i32.wrap_i64 (i64.xor (local.get $d)\n"
    "    (i64.reinterpret_f64 (f64.add (local.get $x) (local.get $y)))))))))\n"
    " (func $viahost (type $t) (i32.add (call $h (local.get 0)) (i32.const 1)))\n"
    " (func $fb (type $t) (i32.add (local.get 0) (i31.get_s (ref.i31 (i32.const 2)))))\n"
    " (func $viafb (type $t) (local $k i32) (local $s i32) (local $u i32)\n"
    "  (local.set $k (i32.const 3))\n"
    "  (loop $l (local.set $s (i32.add (local.get $s) (call $fb (local.get 0))))\n"
    "   (local.set $u (i32.xor (local.get $u) (i32.add (local.get $s) (local.get $k))))\n"
    "   (local.set $s (i32.add (local.get $s)\n"
    "    (call_indirect (type $t) (local.get $u) (i32.const 1))))\n"
    "   (global.set $cap (i32.sub (global.get $cap) (i32.const 1)))\n"
    "   (br_if $l (i32.and (i32.ne (local.tee $k (i32.sub (local.get $k) (i32.const 1)))\n"
    "    (i32.const 0)) (i32.gt_s (global.get $cap) (i32.const 0)))))\n"
    "  (i32.add (local.get $s) (local.get $u)))\n"
    " (func $maytrap (type $t) (if (i32.eq (local.get 0) (i32.const 7)) (then unreachable))\n"
    "  (call $wide (local.get 0)))\n"
    " (func $live (export \"live\") (param $n i32) (result i32) (local $a i32) (local $b i32)\n"
    "  (local $c i32) (local $d i64) (local $e i64) (local $f i64) (local $x f64) (local $y f64)\n"
    "  (local $z f64) (local $k i32)\n"
    "  (local.set $x (f64.const 1.5)) (local.set $y (f64.const -2.25))\n"
    "  (local.set $z (f64.const 0.125)) (local.set $e (i64.const 0x123456789))\n"
    "  (global.set $cap (i32.const 100000))\n"
    "  (loop $l (local.set $a (i32.add (local.get $a) (call $wide (local.get $n))))\n"
    "   (local.set $b (i32.xor (local.get $b) (i32.add (local.get $a) (local.get $n))))\n"
    "   (local.set $d (i64.add (local.get $d) (i64.extend_i32_u (local.get $b))))\n"
    "   (local.set $x (f64.add (local.get $x) (f64.convert_i32_s (call $viahost (local.get "
    "$a)))))\n"
    "   (local.set $c (i32.add (local.get $c) (local.get $b)))\n"
    "   (local.set $e (i64.xor (local.get $e) (i64.mul (local.get $d) (i64.const 0x9E3779B9))))\n"
    "   (local.set $k (i32.const 4))\n" /* an inner loop: x, y, z weigh enough for xmm */
    "   (loop $m (local.set $x (f64.add (local.get $x) (local.get $y)))\n"
    "    (local.set $y (f64.mul (local.get $y) (f64.const 0.999)))\n"
    "    (local.set $z (f64.sub (local.get $z) (f64.mul (local.get $x) (f64.const 0.25))))\n"
    "    (br_if $m (local.tee $k (i32.sub (local.get $k) (i32.const 1)))))\n"
    "   (local.set $c (i32.add (local.get $c) (call $viafb (local.get $c))))\n"
    "   (local.set $f (i64.add (local.get $f) (i64.rotl (local.get $e) (i64.const 13))))\n"
    "   (local.set $z (f64.add (local.get $z) (f64.sub (local.get $x) (local.get $y))))\n"
    "   (local.set $a (i32.sub (local.get $a)\n"
    "    (call_indirect (type $t) (local.get $b) (i32.const 0))))\n"
    "   (local.set $d (i64.add (local.get $d) (i64.extend_i32_s (call $h (local.get $c)))))\n"
    "   (global.set $cap (i32.sub (global.get $cap) (i32.const 1)))\n"
    "   (br_if $l (i32.and (i32.ne (local.tee $n (i32.sub (local.get $n) (i32.const 1)))\n"
    "    (i32.const 0)) (i32.gt_s (global.get $cap) (i32.const 0)))))\n"
    "  (i32.add (i32.add (local.get $a) (local.get $b)) (i32.add (local.get $c)\n"
    "   (i32.wrap_i64 (i64.xor (i64.xor (local.get $d) (i64.rotl (local.get $e) (i64.const 7)))\n"
    "    (i64.xor (local.get $f) (i64.reinterpret_f64 (f64.add (local.get $x)\n"
    "     (f64.add (local.get $y) (local.get $z))))))))))\n"
    " (func $trapper (export \"trapper\") (param $n i32) (result i32) (local $a i32)\n"
    "  (local $b i32) (local $c i32) (local $d i64) (local $x f64)\n"
    "  (global.set $cap (i32.const 100000))\n"
    "  (loop $l (local.set $a (i32.add (local.get $a) (call $maytrap (local.get $n))))\n"
    "   (local.set $b (i32.xor (local.get $b) (i32.add (local.get $a) (local.get $n))))\n"
    "   (local.set $c (i32.add (local.get $c) (local.get $b)))\n"
    "   (local.set $d (i64.add (local.get $d) (i64.extend_i32_u (local.get $c))))\n"
    "   (local.set $x (f64.add (local.get $x) (f64.convert_i32_s (local.get $a))))\n"
    "   (global.set $cap (i32.sub (global.get $cap) (i32.const 1)))\n"
    "   (br_if $l (i32.and (i32.ne (local.tee $n (i32.sub (local.get $n) (i32.const 1)))\n"
    "    (i32.const 0)) (i32.gt_s (global.get $cap) (i32.const 0)))))\n"
    "  (i32.add (i32.add (local.get $a) (local.get $b)) (i32.add (local.get $c)\n"
    "   (i32.wrap_i64 (i64.xor (local.get $d) (i64.reinterpret_f64 (local.get $x)))))))\n"
    ")\n";
static const char PINS_OTHER_WAT[] =
    "(module (func (export \"f\") (param i32) (result i32)\n"
    " (i32.add (i32.mul (local.get 0) (i32.const 5)) (i32.const 11))))\n";

/* The host function: C code that uses many registers. */
static pw_status h_mix(pw_call_ctx *cx, void *env, const pw_val *args, pw_val *results) {
    (void)cx, (void)env;
    char buf[64];
    int n = snprintf(buf, sizeof buf, "%d %u %x %lld", (int32_t)args[0].bits,
                     (unsigned)args[0].bits * 3u, (unsigned)args[0].bits ^ 0x5a5au,
                     (long long)args[0].bits * 7);
    uint32_t h = 2166136261u;
    for (int i = 0; i < n; i++)
        h = (h ^ (uint8_t)buf[i]) * 16777619u;
    results[0].bits = h & 0xffff;
    return PW_OK;
}

static bool pins_resolve(void *ctx, pw_store *s, const pw_module *m, const pw_import_desc *imp,
                         pw_extern *out) {
    pw_error err;
    if (imp->module_len == 5 && memcmp(imp->module, "other", 5) == 0) {
        *out = *(const pw_extern *)ctx;
        return true;
    }
    out->kind = PW_EXTERN_FUNC;
    out->u.func = pw_func_new_host_for_import(s, m, imp->index, h_mix, NULL, &err);
    return out->u.func != NULL;
}

static void test_pins_across_calls(void **state) {
    (void)state;
    size_t n = 0, on = 0;
    uint8_t *mod = wat_module(PINS_WAT, &n), *omod = wat_module(PINS_OTHER_WAT, &on);
    pw_error err;
    static const int32_t args[] = {1, 2, 13, 500};
    int32_t want[4] = {0}, want_tr = 0; /* the interpreter's live(args[k]), trapper(5) */
    for (size_t mi = 0; mi < sizeof tiers / sizeof tiers[0]; mi++) {
        pw_store_config cfg = {.engine = tiers[mi].engine, .bounds_checks = tiers[mi].bounds};
        rig r;
        pw_module *om = pw_module_new(omod, on, NULL, &err);
        if (!om) fail_msg("module: %s", err.message);
        r.s = pw_store_new(&cfg, &err);
        assert_non_null(r.s);
        pw_instance *oi = pw_instantiate(r.s, om, NULL, NULL, &err);
        if (!oi) fail_msg("instantiate: %s", err.message);
        pw_extern of;
        assert_true(pw_instance_export(oi, "f", 1, &of));
        r.m = pw_module_new(mod, n, NULL, &err);
        if (!r.m) fail_msg("module: %s", err.message);
        r.inst = pw_instantiate(r.s, r.m, pins_resolve, &of, &err);
        if (!r.inst) fail_msg("instantiate: %s", err.message);
        for (int round = 0; round < 2; round++) {
            for (size_t k = 0; k < sizeof args / sizeof args[0]; k++) {
                int32_t res = 0;
                if (call1(&r, "live", args[k], &res, &err) != PW_OK)
                    fail_msg("live(%d): %s", args[k], err.message);
                if (mi == 0 && round == 0)
                    want[k] = res;
                else if (res != want[k])
                    fail_msg("tier %zu live(%d) = %d, the interpreter's %d", mi, args[k], res,
                             want[k]);
            }
            /* a trap from a callee deep in the loop (n = 7 on the way down), then
             * the same loop without one */
            int32_t res = 0;
            assert_int_equal(call1(&r, "trapper", 10, &res, &err), PW_ERR_TRAP);
            assert_int_equal(err.trap, PW_TRAP_UNREACHABLE);
            assert_int_equal(call1(&r, "trapper", 5, &res, &err), PW_OK);
            if (mi == 0 && round == 0)
                want_tr = res;
            else
                assert_int_equal(res, want_tr);
        }
        if (PW_JIT_AVAILABLE && mi > 0) {
            static const char *jitted[] = {"live", "trapper"};
            for (size_t k = 0; k < 2; k++)
                assert_int_equal(pw__jit_state(fn(&r, jitted[k])), 1);
        }
        pw_store_free(r.s);
        pw_module_free(r.m);
        pw_module_free(om);
    }
    free(mod);
    free(omod);
}

/* The first 4 KiB of memory filled with i * 2654435761 (local $i counts to 1024). */
#define FILL_4K                                                                                    \
    "  (loop $fill (i32.store (i32.shl (local.get $i) (i32.const 2))\n"                            \
    "    (i32.mul (local.get $i) (i32.const 2654435761)))\n"                                       \
    "   (br_if $fill (i32.lt_u (local.tee $i (i32.add (local.get $i) (i32.const 1)))\n"            \
    "    (i32.const 1024))))\n"

/* Dead stores (docs/jit.md "Store-to-load forwarding"): more hot locals than pin
 * registers, so some live in the frame; each is loaded from memory and then rewritten
 * by the next instruction from itself (x = x + 1: the load's store is dead), from
 * itself twice (x = x + x, x = load(x + x): the operand read from the frame too, so
 * the store must stay), or read into another local (y = x * 3: must stay). The
 * tiers agree with the interpreter. */
static const char DS_WAT[] =
    "(module (memory 1)\n"
    " (func (export \"ds\") (param $n i32) (result i32)\n"
    "  (local $a i32) (local $b i32) (local $c i32) (local $d i32) (local $e i32)\n"
    "  (local $f i32) (local $g i32) (local $h i32) (local $i i32) (local $j i32)\n"
    "  (local $k i32) (local $x i32) (local $y i32) (local $z i32) (local $m i32)\n" FILL_4K
    "  (local.set $i (i32.const 0))\n"
    "  (loop $l\n"
    "   (local.set $x (i32.load (i32.and (i32.add (local.get $x) (local.get $i))\n"
    "    (i32.const 0xffc))))\n"
    "   (local.set $x (i32.add (local.get $x) (local.get $x)))\n"
    "   (local.set $y (i32.load (i32.and (local.get $x) (i32.const 0xffc))))\n"
    "   (local.set $y (i32.add (local.get $y) (i32.const 1)))\n"
    "   (local.set $z (i32.load16_u offset=2 (i32.and (local.get $y) (i32.const 0xffc))))\n"
    "   (local.set $z (i32.load (i32.and (i32.add (local.get $z) (local.get $z))\n"
    "    (i32.const 0xffc))))\n"
    "   (local.set $a (i32.add (local.get $a) (local.get $z)))\n"
    "   (local.set $b (i32.xor (local.get $b) (i32.mul (local.get $y) (i32.const 3))))\n"
    "   (local.set $m (i32.const 0))\n"
    "   (loop $in\n"
    "    (local.set $c (i32.add (local.get $c) (local.get $b)))\n"
    "    (local.set $d (i32.sub (local.get $d) (local.get $c)))\n"
    "    (local.set $e (i32.rotl (local.get $e) (local.get $a)))\n"
    "    (local.set $f (i32.add (local.get $f) (local.get $e)))\n"
    "    (local.set $g (i32.xor (local.get $g) (local.get $d)))\n"
    "    (local.set $h (i32.add (local.get $h) (local.get $g)))\n"
    "    (local.set $j (i32.add (local.get $j) (local.get $h)))\n"
    "    (local.set $k (i32.xor (local.get $k) (i32.add (local.get $j) (local.get $f))))\n"
    "    (br_if $in (i32.lt_u (local.tee $m (i32.add (local.get $m) (i32.const 1)))\n"
    "     (i32.const 2))))\n"
    "   (br_if $l (i32.lt_u (local.tee $i (i32.add (local.get $i) (i32.const 1)))\n"
    "    (local.get $n))))\n"
    "  (i32.add (i32.add (i32.add (local.get $a) (local.get $b)) (i32.add (local.get $c)\n"
    "   (local.get $d))) (i32.add (i32.add (i32.add (local.get $e) (local.get $f))\n"
    "   (i32.add (local.get $g) (local.get $h))) (i32.add (i32.add (local.get $j) (local.get $k))\n"
    "   (i32.add (local.get $x) (i32.add (local.get $y) (local.get $z))))))))\n";

static void test_dead_stores(void **state) {
    (void)state;
    size_t n = 0;
    uint8_t *mod = wat_module(DS_WAT, &n);
    pw_error err;
    static const int32_t args[] = {1, 2, 7, 3000};
    int32_t want[4] = {0};
    for (size_t mi = 0; mi < sizeof tiers / sizeof tiers[0]; mi++) {
        pw_store_config cfg = {.engine = tiers[mi].engine, .bounds_checks = tiers[mi].bounds};
        rig r;
        rig_open_cfg(&r, &cfg, mod, n);
        for (size_t k = 0; k < sizeof args / sizeof args[0]; k++) {
            int32_t res = 0;
            if (call1(&r, "ds", args[k], &res, &err) != PW_OK)
                fail_msg("ds(%d): %s", args[k], err.message);
            if (mi == 0)
                want[k] = res;
            else if (res != want[k])
                fail_msg("tier %zu ds(%d) = %d, the interpreter's %d", mi, args[k], res, want[k]);
        }
        if (PW_JIT_AVAILABLE && mi > 0) assert_int_equal(pw__jit_state(fn(&r, "ds")), 1);
        rig_close(&r);
    }
    free(mod);
}

/* Forwarded operands (docs/jit.md "Store-to-load forwarding"): more hot locals than pin
 * registers, so results go through the frame. An operator's second operand that the
 * previous instruction just stored is taken from its register: sub, shl, mul, a
 * compare and a compare-and-branch of a frame local and a fresh temporary, whose
 * register is also where the first operand is loaded (rax), so it moves to rcx. A
 * store's value that the previous instruction just stored is taken from its register
 * too, moved to rcx before the address is formed in rax: a temporary (its store
 * dropped), a local read again later (its store kept), 8-, 16-, 32- and 64-bit
 * stores, through a pinned address and one formed with a constant; and a store whose
 * address is the temporary just stored (dropped). The second operand an operator reads
 * from memory itself, the load before it taken back: sub, xor, a compare, an i64 mul
 * and a shift count, through a pinned address and one formed in rax, which is also
 * where the first operand of `e = b - load(...)` goes (b and e in the frame: no fold
 * there). The memory is summed at the end, so a value stored wrongly shows. */
static const char FWD_WAT[] =
    "(module (memory 1)\n"
    " (func (export \"fw\") (param $n i32) (result i32)\n"
    "  (local $a i32) (local $b i32) (local $c i32) (local $d i32) (local $e i32)\n"
    "  (local $f i32) (local $g i32) (local $h i32) (local $i i32) (local $j i32)\n"
    "  (local $k i32) (local $x i32) (local $y i32) (local $z i32) (local $s i32)\n"
    "  (local $w i64) (local $m i32)\n"
    "  (local.set $a (i32.const 0x12345678)) (local.set $b (i32.const 0x0badf00d))\n"
    "  (local.set $x (i32.const 0x7f4a7c15)) (local.set $w (i64.const 0x1234567))\n"
    "  (loop $l\n"
    "   (local.set $m (i32.and (i32.shl (local.get $i) (i32.const 2)) (i32.const 0xffc)))\n"
    "   (local.set $k (i32.sub (local.get $x) (i32.xor (local.get $a) (local.get $b))))\n"
    "   (local.set $j (i32.shl (local.get $x) (i32.and (local.get $k) (i32.const 7))))\n"
    "   (local.set $h (i32.mul (local.get $j) (i32.or (local.get $k) (i32.const 1))))\n"
    "   (local.set $g (i32.lt_u (local.get $x) (i32.add (local.get $h) (local.get $k))))\n"
    "   (i32.store (i32.and (local.get $x) (i32.const 0xffc))\n"
    "    (i32.add (local.get $y) (local.get $h)))\n"
    "   (local.set $y (i32.xor (local.get $k) (local.get $j)))\n"
    "   (i32.store offset=4096 (i32.and (local.get $y) (i32.const 0xffc)) (local.get $y))\n"
    "   (i32.store8 offset=8192 (i32.and (local.get $h) (i32.const 0xfff))\n"
    "    (i32.sub (local.get $i) (local.get $j)))\n"
    "   (i32.store16 offset=12288 (i32.and (local.get $k) (i32.const 0xffe))\n"
    "    (i32.rotl (local.get $h) (local.get $i)))\n"
    "   (i64.store offset=16384 (i32.and (local.get $j) (i32.const 0xff8))\n"
    "    (i64.mul (local.get $w) (i64.extend_i32_u (local.get $h))))\n"
    "   (local.set $w (i64.add (local.get $w) (i64.extend_i32_u (local.get $y))))\n"
    "   (i32.store offset=20480 (i32.and (i32.add (local.get $z) (local.get $i))\n"
    "    (i32.const 0xffc)) (local.get $x))\n"
    "   (local.set $z (i32.add (local.get $z) (local.get $y)))\n"
    "   (local.set $c (i32.sub (local.get $c) (i32.load offset=4096 (local.get $m))))\n"
    "   (local.set $d (i32.xor (local.get $d) (i32.load offset=24576\n"
    "    (i32.and (local.get $k) (i32.const 0xffc)))))\n"
    "   (local.set $e (i32.sub (local.get $b) (i32.load offset=4 (i32.and (local.get $e)\n"
    "    (i32.const 0xff8)))))\n"
    "   (local.set $g (i32.add (local.get $g) (i32.lt_s (local.get $h)\n"
    "    (i32.load offset=12288 (local.get $m)))))\n"
    "   (local.set $w (i64.add (local.get $w) (i64.mul (i64.extend_i32_u (local.get $x))\n"
    "    (i64.load offset=16384 (i32.and (local.get $y) (i32.const 0xff8))))))\n"
    "   (local.set $f (i32.shl (local.get $f) (i32.load offset=8192 (local.get $m))))\n"
    "   (local.set $a (i32.add (local.get $a) (local.get $h)))\n"
    "   (local.set $b (i32.xor (local.get $b) (i32.rotl (local.get $a) (i32.const 5))))\n"
    "   (local.set $c (i32.add (local.get $c) (i32.xor (local.get $g) (local.get $j))))\n"
    "   (i32.store offset=24576 (local.get $m) (local.get $c))\n"
    "   (local.set $d (i32.add (local.get $d) (local.get $c)))\n"
    "   (local.set $e (i32.xor (local.get $e) (i32.add (local.get $d) (local.get $k))))\n"
    "   (i32.store8 offset=24576 (i32.add (local.get $m) (i32.const 1)) (local.get $e))\n"
    "   (local.set $f (i32.add (local.get $f) (local.get $e)))\n"
    "   (local.set $x (i32.add (i32.mul (local.get $x) (i32.const 1664525))\n"
    "    (i32.const 1013904223)))\n"
    "   (block $skip\n"
    "    (br_if $skip (i32.ge_u (local.get $f) (i32.xor (local.get $e) (local.get $d))))\n"
    "    (local.set $c (i32.add (local.get $c) (i32.const 3))))\n"
    "   (br_if $l (i32.lt_u (local.tee $i (i32.add (local.get $i) (i32.const 1)))\n"
    "    (local.get $n))))\n"
    "  (local.set $i (i32.const 0))\n"
    "  (loop $sum\n"
    "   (local.set $s (i32.add (i32.rotl (local.get $s) (i32.const 1))\n"
    "    (i32.load (local.get $i))))\n"
    "   (br_if $sum (i32.lt_u (local.tee $i (i32.add (local.get $i) (i32.const 4)))\n"
    "    (i32.const 28672))))\n"
    "  (i32.add (i32.add (i32.add (local.get $a) (local.get $b)) (i32.add (local.get $c)\n"
    "   (local.get $d))) (i32.add (i32.add (i32.add (local.get $e) (local.get $f))\n"
    "   (i32.add (local.get $g) (local.get $h))) (i32.add (i32.add (local.get $j) (local.get $k))\n"
    "   (i32.add (i32.add (local.get $x) (local.get $s)) (i32.add (local.get $y)\n"
    "   (i32.add (local.get $z) (i32.wrap_i64 (local.get $w))))))))))\n";

/* select with its operands and result in pinned registers and in the frame: the
 * result register holding the second operand, the first, neither, or the condition;
 * i32, i64 and f64 (xmm pins); few locals (all pinned) and many (some in the frame).
 * Compares and eqz whose result goes to a pinned register, of pinned operands;
 * `d = a op d` on pinned registers (computed in place when op commutes, not for sub);
 * `d = a ± constant` (one lea), INT32_MIN included. */
/* Seven hot locals (a, b, c, e, d, q and the counter i) that take the pin registers
 * and two cold ones (x, y) left in the frame: the locals, six statements of a loop
 * body that keep the hot ones hot (one rotation among the additions and xors, so that
 * a wrong bit reaches all 32 instead of moving up and out of the word), and the loop's
 * end with the function's result. */
#define HOT_LOCALS                                                                                 \
    "  (local $i i32) (local $a i32) (local $b i32) (local $c i32) (local $e i32)\n"               \
    "  (local $d i32) (local $q i32) (local $x i32) (local $y i32)\n"
#define HOT_SIX                                                                                    \
    "   (local.set $a (i32.add (local.get $a) (i32.rotl (i32.xor (local.get $i) (local.get $b))\n" \
    "    (i32.const 9))))\n"                                                                       \
    "   (local.set $b (i32.xor (local.get $b) (i32.add (local.get $a) (local.get $c))))\n"         \
    "   (local.set $c (i32.add (local.get $c) (i32.xor (local.get $b) (local.get $e))))\n"         \
    "   (local.set $e (i32.xor (local.get $e) (i32.add (local.get $c) (local.get $d))))\n"         \
    "   (local.set $d (i32.add (local.get $d) (i32.xor (local.get $e) (local.get $q))))\n"         \
    "   (local.set $q (i32.xor (local.get $q) (i32.add (local.get $d) (local.get $a))))\n"
#define HOT_END                                                                                    \
    "   (br_if $l (i32.lt_u (local.tee $i (i32.add (local.get $i) (i32.const 1)))\n"               \
    "    (local.get $n))))\n"                                                                      \
    "  (i32.add (i32.add (local.get $a) (local.get $b)) (i32.add (i32.add (local.get $c)\n"        \
    "   (local.get $e)) (i32.add (i32.add (local.get $d) (local.get $q)) (i32.xor (local.get "     \
    "$x)\n"                                                                                        \
    "   (local.get $y))))))\n"

static const char SEL_WAT[] =
    "(module (memory 1)\n"
    " (func (export \"sel\") (param $n i32) (result i32)\n"
    "  (local $i i32) (local $x i32) (local $y i32) (local $z i32) (local $c i32)\n"
    "  (local $p i64) (local $q i64) (local $u f64) (local $v f64)\n"
    "  (local.set $y (i32.const 0x9e3779b9)) (local.set $q (i64.const 7))\n"
    "  (local.set $v (f64.const 1.5))\n"
    "  (loop $l\n"
    "   (local.set $c (i32.and (i32.add (local.get $x) (local.get $i)) (i32.const 3)))\n"
    "   (local.set $x (select (local.get $y) (local.get $x) (local.get $c)))\n"
    "   (local.set $x (i32.add (local.get $x) (i32.const 0x61c88647)))\n"
    "   (local.set $y (select (local.get $y) (local.get $x) (i32.and (local.get $i) (i32.const "
    "1))))\n"
    "   (local.set $y (i32.xor (local.get $y) (i32.shl (local.get $y) (i32.const 5))))\n"
    "   (local.set $z (select (local.get $x) (local.get $y) (i32.and (local.get $i) (i32.const "
    "2))))\n"
    "   (local.set $c (select (local.get $x) (local.get $z) (local.get $c)))\n"
    "   (local.set $p (select (local.get $q) (i64.extend_i32_u (local.get $c))\n"
    "    (i32.and (local.get $z) (i32.const 4))))\n"
    "   (local.set $q (i64.add (local.get $q) (local.get $p)))\n"
    "   (local.set $u (select (local.get $v) (f64.convert_i32_u (local.get $z))\n"
    "    (i32.and (local.get $y) (i32.const 8))))\n"
    "   (local.set $v (f64.add (local.get $v) (local.get $u)))\n"
    "   (local.set $x (i32.add (local.get $x) (local.get $c)))\n"
    "   (br_if $l (i32.lt_u (local.tee $i (i32.add (local.get $i) (i32.const 1)))\n"
    "    (local.get $n))))\n"
    "  (i32.add (i32.add (local.get $x) (local.get $y))\n"
    "   (i32.add (i32.wrap_i64 (local.get $q)) (i32.trunc_sat_f64_u (local.get $v)))))\n"
    " (func (export \"selm\") (param $n i32) (result i32)\n"
    "  (local $i i32) (local $a i32) (local $b i32) (local $c i32) (local $d i32)\n"
    "  (local $e i32) (local $f i32) (local $g i32) (local $h i32) (local $j i32)\n"
    "  (local $k i32) (local $m i32)\n"
    "  (loop $l\n"
    "   (local.set $a (i32.add (local.get $a) (i32.const 0x3c6ef372)))\n"
    "   (local.set $b (select (local.get $a) (local.get $b) (i32.and (local.get $i) (i32.const "
    "1))))\n"
    "   (local.set $c (select (local.get $c) (local.get $b) (i32.and (local.get $a) (i32.const "
    "2))))\n"
    "   (local.set $d (select (local.get $e) (local.get $f) (local.get $g)))\n"
    "   (local.set $e (i32.xor (local.get $e) (local.get $c)))\n"
    "   (local.set $f (i32.add (local.get $f) (local.get $d)))\n"
    "   (local.set $g (i32.and (local.get $a) (i32.const 4)))\n"
    "   (local.set $h (select (local.get $h) (local.get $j) (local.get $h)))\n"
    "   (local.set $j (i32.add (local.get $j) (local.get $e)))\n"
    "   (local.set $k (select (i32.add (local.get $k) (i32.const 1)) (local.get $m)\n"
    "    (i32.and (local.get $f) (i32.const 8))))\n"
    "   (local.set $m (i32.sub (local.get $m) (local.get $k)))\n"
    /* d = a op d and d = a - const with a or d in the frame (more locals than pins) */
    "   (local.set $e (i32.xor (local.get $h) (local.get $e)))\n"
    "   (local.set $g (i32.sub (local.get $k) (local.get $g)))\n"
    "   (local.set $h (i32.add (local.get $m) (local.get $h)))\n"
    "   (local.set $d (i32.mul (local.get $j) (local.get $d)))\n"
    "   (local.set $c (i32.sub (local.get $a) (i32.const 77)))\n"
    "   (local.set $b (i32.add (local.get $i) (i32.const -5)))\n"
    "   (br_if $l (i32.lt_u (local.tee $i (i32.add (local.get $i) (i32.const 1)))\n"
    "    (local.get $n))))\n"
    "  (i32.add (i32.add (i32.add (local.get $a) (local.get $b)) (i32.add (local.get $c)\n"
    "   (local.get $d))) (i32.add (i32.add (i32.add (local.get $e) (local.get $f))\n"
    "   (i32.add (local.get $g) (local.get $h))) (i32.add (i32.add (local.get $j)\n"
    "   (local.get $k)) (local.get $m)))))\n"
    " (func (export \"cmp\") (param $n i32) (result i32)\n"
    "  (local $i i32) (local $x i32) (local $b i32) (local $e i32) (local $p i64) (local $s i32)\n"
    "  (local $r i64)\n"
    "  (local.set $x (i32.const 12345))\n"
    "  (loop $l\n"
    "   (local.set $x (i32.add (i32.mul (local.get $x) (i32.const 1103515245))\n"
    "    (i32.const 12345)))\n"
    "   (local.set $b (i32.lt_u (local.get $x) (local.get $b)))\n"
    "   (local.set $e (i32.eqz (i32.and (local.get $x) (i32.const 0x300))))\n"
    "   (local.set $p (i64.add (local.get $p) (i64.extend_i32_u (local.get $x))))\n"
    "   (local.set $e (i32.add (local.get $e) (i64.eqz (i64.and (local.get $p) (i64.const 7)))))\n"
    "   (local.set $b (i32.add (local.get $b) (i32.gt_s (local.get $x) (i32.const 0))))\n"
    "   (local.set $x (i32.xor (local.get $x) (i32.eqz (local.get $b))))\n"
    "   (local.set $s (i32.add (local.get $s) (i32.add (i32.mul (local.get $b) (i32.const 3))\n"
    "    (local.get $e))))\n"
    "   (local.set $s (i32.sub (local.get $x) (local.get $s)))\n"
    "   (local.set $s (i32.xor (local.get $b) (local.get $s)))\n"
    "   (local.set $e (i32.mul (local.get $x) (local.get $e)))\n"
    "   (local.set $e (i32.or (local.get $s) (local.get $e)))\n"
    "   (local.set $p (i64.add (i64.extend_i32_u (local.get $e)) (local.get $p)))\n"
    "   (local.set $e (i32.add (local.get $x) (i32.const -7)))\n"
    "   (local.set $b (i32.sub (local.get $e) (i32.const 100)))\n"
    "   (local.set $s (i32.add (local.get $s) (i32.sub (local.get $b) (i32.const 0x80000000))))\n"
    "   (local.set $r (i64.sub (local.get $p) (i64.const 5)))\n"
    "   (local.set $p (i64.add (local.get $r) (i64.const -3)))\n"

    "   (br_if $l (i32.lt_u (local.tee $i (i32.add (local.get $i) (i32.const 1)))\n"
    "    (local.get $n))))\n"
    "  (i32.add (i32.add (local.get $s) (local.get $x)) (i32.wrap_i64 (i64.shr_u (local.get $p)\n"
    "   (i64.const 7)))))\n"
    " (func (export \"lea64\") (param $n i32) (result i32) (local $i i32) (local $p i64)\n"
    "  (local $r i64)\n"
    "  (loop $l\n"
    "   (local.set $r (i64.sub (local.get $p) (i64.const -2147483648)))\n"
    "   (local.set $p (i64.xor (local.get $r) (i64.extend_i32_u (local.get $i))))\n"
    "   (br_if $l (i32.lt_u (local.tee $i (i32.add (local.get $i) (i32.const 1)))\n"
    "    (local.get $n))))\n"
    "  (i32.wrap_i64 (i64.xor (local.get $p) (i64.shr_u (local.get $p) (i64.const 32)))))\n"
    /* addresses from pinned locals that wrap past 2^32: base + constant and base +
     * base, loaded and stored (a 64-bit sum would land past the memory and trap) */
    " (func (export \"addr\") (param $n i32) (result i32)\n"
    "  (local $i i32) (local $p i32) (local $q i32) (local $s i32)\n"
    "  (local.set $p (i32.const -256)) (local.set $s (i32.const 7))\n"
    "  (loop $l\n"
    "   (local.set $q (i32.add (i32.and (i32.mul (local.get $i) (i32.const 4)) (i32.const 0xfc))\n"
    "    (i32.const 0x300)))\n"
    "   (i32.store (i32.add (local.get $p) (local.get $q)) (i32.add (local.get $i) (local.get "
    "$s)))\n"
    "   (i32.store (i32.add (local.get $p) (i32.const 0x208)) (local.get $q))\n"
    "   (local.set $s (i32.xor (i32.rotl (local.get $s) (i32.const 5))\n"
    "    (i32.load (i32.add (local.get $p) (i32.const 0x204)))))\n"
    "   (local.set $s (i32.add (local.get $s) (i32.load (i32.add (local.get $p) (local.get "
    "$q)))))\n"
    "   (br_if $l (i32.lt_u (local.tee $i (i32.add (local.get $i) (i32.const 1)))\n"
    "    (local.get $n))))\n"
    "  (local.get $s))\n"
    /* a test taken from the flags of the previous instruction's add/sub/and/or/xor:
     * select, br_if and eqz right after one, a label between them (the jump arrives
     * with other flags), and an i64 result tested as an i32 (64-bit flags) */
    " (func (export \"flags\") (param $n i32) (result i32)\n"
    "  (local $i i32) (local $x i32) (local $k i32) (local $p i64) (local $s i32)\n"
    "  (local.set $x (i32.const 0x2545f491)) (local.set $p (i64.const 0x100000000))\n"
    "  (loop $l\n"
    "   (local.set $x (i32.xor (local.get $x) (i32.shl (local.get $x) (i32.const 13))))\n"
    "   (local.set $x (i32.xor (local.get $x) (i32.shr_u (local.get $x) (i32.const 17))))\n"
    "   (local.set $x (i32.xor (local.get $x) (i32.shl (local.get $x) (i32.const 5))))\n"
    "   (local.set $k (i32.and (local.get $x) (i32.const 3)))\n"
    "   (local.set $s (select (local.get $s) (i32.add (local.get $s) (i32.const 5)) (local.get "
    "$k)))\n"
    "   (local.set $k (i32.and (local.get $x) (i32.const 4)))\n"
    "   (if (i32.and (local.get $x) (i32.const 8))\n"
    "    (then (local.set $k (i32.xor (local.get $k) (i32.const 4)))))\n"
    "   (if (local.get $k) (then (local.set $s (i32.add (local.get $s) (i32.const 3)))))\n"
    "   (local.set $k (i32.sub (local.get $x) (i32.const 0x100)))\n"
    "   (if (i32.eqz (local.get $k)) (then (local.set $s (i32.add (local.get $s) (i32.const "
    "11)))))\n"
    "   (local.set $k (i32.or (local.get $x) (local.get $s)))\n"
    "   (local.set $s (i32.add (local.get $s) (i32.eqz (local.get $k))))\n"
    "   (block $b\n"
    "    (local.set $k (i32.and (local.get $x) (i32.const 0x40)))\n"
    "    (br_if $b (local.get $k))\n"
    "    (local.set $s (i32.mul (local.get $s) (i32.const 3))))\n"
    "   (local.set $p (i64.and (local.get $p) (i64.const 0x1ffffffff)))\n"
    "   (local.set $s (select (local.get $s) (i32.const 99) (i32.wrap_i64 (local.get $p))))\n"
    "   (local.set $p (i64.add (local.get $p) (i64.extend_i32_u (i32.and (local.get $x) (i32.const "
    "1)))))\n"
    "   (br_if $l (i32.lt_u (local.tee $i (i32.add (local.get $i) (i32.const 1)))\n"
    "    (local.get $n))))\n"
    "  (local.get $s))\n"
    /* seven hot locals in pins, two cold ones (x, y) in the frame: d = x - d (must not
     * commute), q = y + q (q += y from the frame), y = a - 9 (lea into rax, stored) */
    " (func (export \"cold\") (param $n i32) (result i32)\n" HOT_LOCALS
    "  (local.set $x (i32.const 1000)) (local.set $y (i32.const 7))\n"
    "  (loop $l\n" HOT_SIX
    "   (local.set $a (i32.xor (local.get $a) (i32.add (local.get $q) (local.get $b))))\n"
    "   (local.set $d (i32.sub (local.get $x) (local.get $d)))\n"
    "   (local.set $q (i32.add (local.get $y) (local.get $q)))\n"
    "   (local.set $x (i32.add (local.get $x) (i32.const 3)))\n"
    "   (local.set $y (i32.sub (local.get $a) (i32.const 9)))\n" HOT_END
    /* the same seven hot locals; x = a is one store from a's register, which the
     * next instruction overwrites (a += b): y = x + y must read x from the frame, not
     * from the register the store forwarded from (an operator that writes the
     * forwarded register must end the record) */
    " (func (export \"cpy\") (param $n i32) (result i32)\n" HOT_LOCALS "  (loop $l\n" HOT_SIX
    "   (local.set $x (local.get $a))\n"
    "   (local.set $a (i32.add (local.get $a) (local.get $b)))\n"
    "   (local.set $y (i32.add (local.get $x) (local.get $y)))\n" HOT_END ")\n";

/* Each function of names[nf] on each argument of args[na], in every tier against the
 * interpreter's result (every JIT tier must have translated it), and against
 * known(name, arg) when given; the stores get the limits of base. */
static void tiers_agree_i32(const char *wat, const char *const *names, size_t nf,
                            const int32_t *args, size_t na, pw_store_config base,
                            int32_t (*known)(const char *, int32_t)) {
    size_t n = 0;
    uint8_t *mod = wat_module(wat, &n);
    pw_error err;
    int32_t *want = calloc(nf * na, sizeof *want);
    assert_non_null(want);
    for (size_t mi = 0; mi < sizeof tiers / sizeof tiers[0]; mi++) {
        pw_store_config cfg = base;
        cfg.engine = tiers[mi].engine;
        cfg.bounds_checks = tiers[mi].bounds;
        rig r;
        rig_open_cfg(&r, &cfg, mod, n);
        for (size_t f = 0; f < nf; f++) {
            for (size_t k = 0; k < na; k++) {
                int32_t res = 0;
                if (call1(&r, names[f], args[k], &res, &err) != PW_OK)
                    fail_msg("%s(%d): %s", names[f], args[k], err.message);
                if (known && res != known(names[f], args[k]))
                    fail_msg("tier %zu %s(%d) = %d, not %d", mi, names[f], args[k], res,
                             known(names[f], args[k]));
                if (mi == 0)
                    want[f * na + k] = res;
                else if (res != want[f * na + k])
                    fail_msg("tier %zu %s(%d) = %d, the interpreter's %d", mi, names[f], args[k],
                             res, want[f * na + k]);
            }
            if (PW_JIT_AVAILABLE && mi > 0) assert_int_equal(pw__jit_state(fn(&r, names[f])), 1);
        }
        rig_close(&r);
    }
    free(want);
    free(mod);
}

/* Bulk memory and table instructions (docs/jit.md "Per-function fallback"): a call of
 * the interpreter's own code for each, so functions using them are translated. Each
 * loop keeps hot locals in pin registers across the calls; results, traps and the
 * fatal cap of table.grow against the interpreter, in every tier. */
static const char BULK_WAT[] =
    "(module (type $ti (func (param i32) (result i32)))\n"
    " (memory 1) (data $d \"abcdefghijklmnop\")\n"
    " (table $t 4 16 funcref) (table $u 4 funcref) (table $big 1 funcref)\n"
    " (elem $e func $f1 $f2 $f3) (elem declare func $f1)\n"
    " (func $f1 (type $ti) (i32.add (local.get 0) (i32.const 1)))\n"
    " (func $f2 (type $ti) (i32.mul (local.get 0) (i32.const 3)))\n"
    " (func $f3 (type $ti) (i32.sub (local.get 0) (i32.const 7)))\n"
    " (func (export \"mem\") (param $n i32) (result i32)\n"
    "  (local $i i32) (local $s i32) (local $a i32) (local $b i32)\n"
    "  (local.set $a (i32.const 3)) (local.set $b (i32.const 5))\n"
    "  (loop $l\n"
    "   (memory.fill (i32.and (i32.mul (local.get $i) (i32.const 37)) (i32.const 4095))\n"
    "    (i32.add (local.get $i) (local.get $a)) (i32.const 13))\n"
    "   (memory.copy (i32.const 4096) (i32.and (i32.mul (local.get $i) (i32.const 11))\n"
    "    (i32.const 4095)) (i32.const 40))\n"
    "   (memory.init $d (i32.add (i32.const 5000) (local.get $i))\n"
    "    (i32.and (local.get $i) (i32.const 7)) (i32.const 8))\n"
    "   (local.set $s (i32.add (i32.rotl (local.get $s) (i32.const 5))\n"
    "    (i32.xor (i32.load (i32.const 4096)) (i32.load offset=5000 (local.get $i)))))\n"
    "   (local.set $a (i32.add (local.get $a) (local.get $b)))\n"
    "   (local.set $i (i32.add (local.get $i) (i32.const 1)))\n"
    "   (br_if $l (i32.lt_u (local.get $i) (local.get $n))))\n"
    "  (i32.add (local.get $s) (local.get $a)))\n"
    " (func (export \"tab\") (param $n i32) (result i32) (local $i i32) (local $s i32)\n"
    "  (local $k i32)\n"
    "  (local.set $k (i32.const 1))\n"
    "  (table.init $t $e (i32.const 0) (i32.const 0) (i32.const 3))\n"
    "  (loop $l\n"
    "   (table.set $t (i32.const 3) (table.get $t (i32.rem_u (local.get $i) (i32.const 3))))\n"
    "   (local.set $s (i32.add (local.get $s)\n"
    "    (call_indirect $t (type $ti) (local.get $i) (i32.const 3))))\n"
    "   (table.copy $u $t (i32.const 0) (i32.const 1) (i32.const 3))\n"
    "   (local.set $s (i32.xor (local.get $s)\n"
    "    (call_indirect $u (type $ti) (local.get $k) (i32.const 2))))\n"
    "   (table.fill $u (i32.const 1) (ref.func $f1) (i32.const 2))\n"
    "   (local.set $s (i32.add (local.get $s)\n"
    "    (call_indirect $u (type $ti) (local.get $k) (i32.const 2))))\n"
    "   (local.set $k (i32.add (local.get $k) (table.size $t)))\n"
    "   (local.set $i (i32.add (local.get $i) (i32.const 1)))\n"
    "   (br_if $l (i32.lt_u (local.get $i) (local.get $n))))\n"
    "  (i32.add (local.get $s) (local.get $k)))\n"
    " (func (export \"grow\") (param $n i32) (result i32)\n"
    "  (i32.add (table.grow $t (ref.null func) (local.get $n))\n"
    "   (i32.mul (table.size $t) (i32.const 100))))\n"
    " (func (export \"biggrow\") (param $n i32) (result i32)\n"
    "  (table.grow $big (ref.null func) (local.get $n)))\n"
    " (func (export \"drop\") (param $n i32) (result i32)\n"
    "  (elem.drop $e) (data.drop $d) (local.get $n))\n"
    " (func (export \"fill\") (param $n i32) (result i32)\n"
    "  (memory.fill (local.get $n) (i32.const 1) (i32.const 100)) (i32.const 0))\n"
    " (func (export \"copy\") (param $n i32) (result i32)\n"
    "  (memory.copy (i32.const 0) (local.get $n) (i32.const 100)) (i32.const 0))\n"
    " (func (export \"init\") (param $n i32) (result i32)\n"
    "  (memory.init $d (i32.const 0) (i32.const 0) (local.get $n)) (i32.const 0))\n"
    " (func (export \"tinit\") (param $n i32) (result i32)\n"
    "  (table.init $u $e (i32.const 0) (i32.const 0) (local.get $n)) (i32.const 0))\n"
    " (func (export \"tget\") (param $n i32) (result i32)\n"
    "  (ref.is_null (table.get $t (local.get $n))))\n"
    " (func (export \"tset\") (param $n i32) (result i32)\n"
    "  (table.set $u (local.get $n) (ref.null func)) (i32.const 0))\n"
    " (func (export \"tfill\") (param $n i32) (result i32)\n"
    "  (table.fill $u (local.get $n) (ref.null func) (i32.const 2)) (i32.const 0))\n"
    " (func (export \"tcopy\") (param $n i32) (result i32)\n"
    "  (table.copy $t $u (local.get $n) (i32.const 0) (i32.const 2)) (i32.const 0)))\n";

static void test_bulk_and_tables(void **state) {
    (void)state;
    static const char *const names[] = {"mem", "tab", "grow"};
    static const int32_t args[] = {1, 2, 7, 3000};
    tiers_agree_i32(BULK_WAT, names, 3, args, 4, (pw_store_config){0}, NULL);
    /* traps: the interpreter's code and message in every tier, from translated code */
    static const struct {
        const char *name;
        int32_t arg;
        pw_trap_code trap; /* PW_TRAP_NONE: returns */
    } calls[] = {
        {"fill", 65436, PW_TRAP_NONE},      {"fill", 65437, PW_TRAP_MEM_OOB},
        {"copy", 65436, PW_TRAP_NONE},      {"copy", 65437, PW_TRAP_MEM_OOB},
        {"init", 16, PW_TRAP_NONE},         {"init", 17, PW_TRAP_MEM_OOB},
        {"tinit", 3, PW_TRAP_NONE},         {"tinit", 4, PW_TRAP_ELEM_SEG_OOB},
        {"tget", 3, PW_TRAP_NONE},          {"tget", 4, PW_TRAP_TABLE_OOB},
        {"tset", 3, PW_TRAP_NONE},          {"tset", -1, PW_TRAP_TABLE_OOB},
        {"tfill", 2, PW_TRAP_NONE},         {"tfill", 3, PW_TRAP_TABLE_OOB},
        {"tcopy", 2, PW_TRAP_NONE},         {"tcopy", 3, PW_TRAP_TABLE_OOB},
        {"drop", 0, PW_TRAP_NONE},          {"init", 0, PW_TRAP_NONE},
        {"init", 1, PW_TRAP_MEM_OOB},       {"tinit", 0, PW_TRAP_NONE},
        {"tinit", 1, PW_TRAP_ELEM_SEG_OOB},
    };
    size_t n = 0;
    uint8_t *mod = wat_module(BULK_WAT, &n);
    pw_error err;
    for (size_t mi = 0; mi < sizeof tiers / sizeof tiers[0]; mi++) {
        for (int fatal = 0; fatal < 2; fatal++) {
            pw_store_config cfg = {.engine = tiers[mi].engine,
                                   .bounds_checks = tiers[mi].bounds,
                                   .memory_cap = 1u << 20,
                                   .cap_is_fatal = fatal};
            rig r;
            rig_open_cfg(&r, &cfg, mod, n);
            for (size_t k = 0; k < sizeof calls / sizeof calls[0]; k++) {
                int32_t res = -5;
                pw_status st = call1(&r, calls[k].name, calls[k].arg, &res, &err);
                if (calls[k].trap == PW_TRAP_NONE) {
                    if (st != PW_OK)
                        fail_msg("tier %zu %s(%d): %s", mi, calls[k].name, calls[k].arg,
                                 err.message);
                    continue;
                }
                assert_int_equal(st, PW_ERR_TRAP);
                assert_int_equal(err.trap, calls[k].trap);
                assert_string_equal(err.message, pw_trap_message(calls[k].trap, PW_MSG_SPEC));
            }
            /* table.grow past the store's cap: -1, or the run ends for want of memory */
            int32_t res = 0;
            assert_int_equal(call1(&r, "biggrow", 100, &res, &err), PW_OK);
            assert_int_equal(res, 1);
            pw_status st = call1(&r, "biggrow", 1000000, &res, &err);
            if (fatal) {
                assert_int_equal(st, PW_ERR_OOM);
            } else {
                assert_int_equal(st, PW_OK);
                assert_int_equal(res, -1);
            }
            if (PW_JIT_AVAILABLE && mi > 0) {
                static const char *const all[] = {"fill", "copy",  "init",  "tinit", "tget",
                                                  "tset", "tfill", "tcopy", "drop",  "biggrow"};
                for (size_t k = 0; k < sizeof all / sizeof all[0]; k++)
                    assert_int_equal(pw__jit_state(fn(&r, all[k])), 1);
            }
            rig_close(&r);
        }
    }
    free(mod);
}

static void test_forwarded_operands(void **state) {
    (void)state;
    static const char *const names[] = {"fw"};
    static const int32_t args[] = {1, 2, 7, 3000};
    tiers_agree_i32(FWD_WAT, names, 1, args, 4, (pw_store_config){0}, NULL);
}

/* Call results in rax (docs/jit.md "Results in rax"): a callee with one i32 or i64
 * result leaves it in rax as well as in its cell, and the caller reads rax instead
 * of the cell. The loop uses results as every kind of operand: either side of an
 * operator, a pinned destination's other operand, a compare, a branch condition, a
 * store's address and value, a load's address, an argument, a select's operand. The
 * callees return from a pinned register, from a load, from a frame cell, or from a
 * wrap whose register keeps the upper half (an i32 result read as an address or
 * zero-extended must not see it). Results that are not in rax must not be taken from
 * it: an f64, two results. And rax must hold the result on every path: the helper
 * paths of a direct call (a callee without JIT code: i31 instructions fall back) and of
 * call_indirect (a subtype, which only the helper accepts), and the direct paths. */
static const char CR_WAT[] =
    "(module (type $ti (sub (func (param i32) (result i32))))\n"
    " (type $ts (sub $ti (func (param i32) (result i32))))\n"
    " (memory 1) (table 4 funcref) (elem (i32.const 0) func $sq $wrap $sub $fb)\n"
    " (global $g (mut i32) (i32.const 5))\n"
    " (func $sq (type $ti) (i32.add (i32.mul (local.get 0) (local.get 0)) (i32.const 3)))\n"
    " (func $big (param i32) (result i64)\n"
    "  (i64.mul (i64.extend_i32_u (local.get 0)) (i64.const 0x100000001)))\n"
    " (func $wrap (type $ti) (i32.wrap_i64 (i64.or (i64.shl (i64.extend_i32_u\n"
    "  (i32.add (local.get 0) (i32.const 1))) (i64.const 32))\n"
    "  (i64.extend_i32_u (i32.and (i32.shl (local.get 0) (i32.const 2)) (i32.const 0xffc))))))\n"
    " (func $mem (type $ti) (i32.load (i32.and (i32.shl (local.get 0) (i32.const 2))\n"
    "  (i32.const 0xffc))))\n"
    " (func $glob (type $ti) (global.set $g (i32.add (global.get $g) (local.get 0)))\n"
    "  (global.get $g))\n"
    " (func $fl (param i32) (result f64) (f64.mul (f64.convert_i32_s (local.get 0))\n"
    "  (f64.const 1.75)))\n"
    " (func $two (param i32) (result i32 i32) (i32.add (local.get 0) (i32.const 9))\n"
    "  (i32.xor (local.get 0) (i32.const 0x55)))\n"
    " (func $sub (type $ts) (i32.sub (i32.const 1000) (local.get 0)))\n"
    " (func $fb (type $ti) (i32.add (local.get 0) (i31.get_s (ref.i31 (i32.const 4)))))\n"
    " (func $deep (type $ti) (if (result i32) (i32.eqz (local.get 0)) (then (i32.const 1))\n"
    "  (else (i32.add (call $deep (i32.sub (local.get 0) (i32.const 1))) (local.get 0)))))\n"
    " (func $heavy (type $ti) (local $k i32) (local $a i32) (local $b i32) (local $c i32)\n"
    "  (local $d i32) (local $e i32) (local $f i32) (local $g i32) (local $h i32)\n"
    "  (local.set $k (i32.const 3))\n"
    "  (loop $l (local.set $a (i32.add (local.get $a) (local.get 0)))\n"
    "   (local.set $b (i32.xor (local.get $b) (i32.mul (local.get $a) (i32.const 7))))\n"
    "   (local.set $c (i32.add (local.get $c) (i32.rotl (local.get $b) (local.get 0))))\n"
    "   (local.set $d (i32.sub (local.get $d) (i32.xor (local.get $c) (local.get 0))))\n"
    "   (local.set $e (i32.add (local.get $e) (i32.mul (local.get $d) (local.get 0))))\n"
    "   (local.set $f (i32.xor (local.get $f) (i32.add (local.get $e) (local.get $a))))\n"
    "   (local.set $g (i32.add (local.get $g) (i32.sub (local.get $f) (local.get 0))))\n"
    "   (local.set $h (i32.xor (local.get $h) (i32.add (local.get $g) (local.get $b))))\n"
    "   (local.set 0 (i32.add (i32.mul (local.get 0) (i32.const 5)) (local.get $h)))\n"
    "   (br_if $l (local.tee $k (i32.sub (local.get $k) (i32.const 1)))))\n"
    "  (local.get 0))\n"
    " (func $xr (param f64) (result i32) (local $k i32) (local.set $k (i32.const 4))\n"
    "  (loop $l (local.set 0 (f64.add (f64.mul (local.get 0) (f64.const 1.5)) (f64.const 0.25)))\n"
    "   (br_if $l (local.tee $k (i32.sub (local.get $k) (i32.const 1)))))\n"
    "  (i32.reinterpret_f32 (f32.demote_f64 (local.get 0))))\n"
    " (func (export \"cr1\") (param $n i32) (result i32) (local $x i32) (local $y i64)\n"
    "  (local.set $x (i32.load (call $wrap (local.get $n))))\n"
    "  (local.set $y (i64.extend_i32_u (call $wrap (local.get $x))))\n"
    "  (local.set $y (i64.add (local.get $y) (i64.reinterpret_f64 (call $fl (local.get $n)))))\n"
    "  (call $two (local.get $n)) (drop) (local.set $x (i32.add (local.get $x)))\n"
    "  (local.set $x (i32.add (local.get $x) (call $heavy (local.get $n))))\n"
    "  (local.set $x (i32.sub (local.get $x) (call $xr (f64.convert_i32_s (local.get $n)))))\n"
    "  (i32.add (local.get $x) (i32.wrap_i64 (i64.xor (local.get $y)\n"
    "   (i64.shr_u (local.get $y) (i64.const 29))))))\n"
    " (func (export \"cr\") (param $n i32) (result i32) (local $s i32) (local $t i32)\n"
    "  (local $u i64) (local $i i32) (local $v i32) (local $w i32) (local $x i32)\n"
    "  (local $y i32) (local $z i32)\n" FILL_4K "  (local.set $i (i32.const 0))\n"
    "  (loop $l\n"
    "   (local.set $s (i32.add (call $sq (local.get $i)) (local.get $s)))\n"
    "   (local.set $t (i32.sub (call $sq (local.get $s)) (local.get $t)))\n"
    "   (local.set $t (i32.sub (local.get $t) (call $mem (local.get $i))))\n"
    "   (local.set $u (i64.add (local.get $u) (call $big (local.get $t))))\n"
    "   (local.set $u (i64.xor (local.get $u) (i64.extend_i32_u (call $wrap (local.get $i)))))\n"
    "   (local.set $v (i32.add (local.get $v) (i32.load (call $wrap (local.get $s)))))\n"
    "   (i32.store (i32.and (call $sq (local.get $i)) (i32.const 0xffc))\n"
    "    (call $glob (local.get $t)))\n"
    "   (if (i32.lt_s (call $sq (local.get $i)) (local.get $s))\n"
    "    (then (local.set $w (i32.add (local.get $w) (i32.const 1)))))\n"
    "   (if (call $mem (local.get $s))\n"
    "    (then (local.set $w (i32.add (local.get $w) (i32.const 3)))))\n"
    "   (local.set $w (i32.add (local.get $w)\n"
    "    (i32.wrap_i64 (i64.reinterpret_f64 (call $fl (local.get $i))))))\n"
    "   (call $two (local.get $s)) (local.set $y) (local.set $x)\n"
    "   (local.set $w (i32.add (local.get $w) (i32.mul (local.get $x) (local.get $y))))\n"
    "   (local.set $s (i32.add (local.get $s)\n"
    "    (call_indirect (type $ti) (local.get $i) (i32.and (local.get $i) (i32.const 3)))))\n"
    "   (local.set $z (i32.xor (local.get $z) (call $fb (local.get $i))))\n"
    "   (local.set $z (i32.add (local.get $z)\n"
    "    (call $deep (i32.and (local.get $i) (i32.const 15)))))\n"
    "   (local.set $z (i32.add (local.get $z) (call $sq (call $glob (local.get $i)))))\n"
    "   (local.set $z (i32.xor (local.get $z) (call $heavy (local.get $s))))\n"
    "   (local.set $u (i64.add (local.get $u) (i64.reinterpret_f64 (call $fl (local.get $t)))))\n"
    "   (call $two (local.get $t)) (drop) (local.set $x)\n"
    "   (local.set $v (select (local.get $s) (local.get $v) (call $mem (local.get $v))))\n"
    "   (drop (call $sq (local.get $v)))\n"
    "   (br_if $l (i32.lt_u (local.tee $i (i32.add (local.get $i) (i32.const 1)))\n"
    "    (local.get $n))))\n"
    "  (i32.add (i32.add (i32.add (local.get $s) (local.get $t)) (i32.wrap_i64 (i64.xor\n"
    "   (local.get $u) (i64.shr_u (local.get $u) (i64.const 32)))))\n"
    "   (i32.add (i32.add (local.get $v) (local.get $w)) (i32.add (local.get $z)\n"
    "   (i32.load (i32.const 64))))))\n"
    ")\n";

static void test_call_results(void **state) {
    (void)state;
    tiers_agree_i32(CR_WAT, (const char *const[]){"cr", "cr1"}, 2, (const int32_t[]){1, 2, 7, 300},
                    4, (pw_store_config){0}, NULL);
}

/* i32 division and remainder by a constant (docs/jit.md "Division by a constant"):
 * every signed and unsigned form by divisors around the edges of the multiplication
 * (1, powers of two, 2^31 - 1, 2^31, 2^32 - 1, negative ones, a large prime, 3's
 * multiplier pattern), of dividends that start at the argument (0, 1, -1, INT32_MIN,
 * INT32_MAX, ...) and walk over the range; a constant dividend (it must not be taken
 * for the divisor) and divisors that are not constants; against the interpreter. */
#define DV(op, k)                                                                                  \
    "   (local.set $h (i32.xor (i32.mul (local.get $h) (i32.const 31)) (i32." op                   \
    " (local.get $v) (i32.const " k "))))\n"
#define DV4(k) DV("div_u", k) DV("rem_u", k) DV("div_s", k) DV("rem_s", k)
/* clang-format off */
static const char DIV_WAT[] =
    "(module (func (export \"dv\") (param $x i32) (result i32) (local $h i32) (local $i i32)\n"
    "  (local $v i32) (local $w i32)\n"
    "  (loop $l (local.set $v (i32.add (local.get $x)\n"
    "    (i32.mul (local.get $i) (i32.const 0x9E3779B9))))\n"
    "   (local.set $w (i32.or (local.get $v) (i32.const 1)))\n"
    DV4("1") DV4("2") DV4("3") DV4("7") DV4("10") DV4("16") DV4("641")
    DV4("0x7fffffff") DV4("0x80000000") DV("rem_s", "0xffffffff")
    DV4("-2") DV4("-7") DV4("-10") DV4("6700417") DV4("0x55555555") DV4("0xaaaaaaab")
    DV4("-0x7fffffff") DV("div_u", "-1") DV("rem_u", "-1")
    "   (local.set $h (i32.add (local.get $h) (i32.div_u (i32.const 1000000) (local.get $w))))\n"
    "   (local.set $h (i32.add (local.get $h) (i32.rem_s (i32.const -1000003) (local.get $w))))\n"
    "   (local.set $h (i32.add (local.get $h) (i32.div_s (local.get $v) (local.get $w))))\n"
    "   (local.set $h (i32.add (local.get $h) (i32.rem_u (local.get $v) (local.get $w))))\n"
    "   (br_if $l (i32.lt_u (local.tee $i (i32.add (local.get $i) (i32.const 1)))\n"
    "    (i32.const 200))))\n"
    "  (local.get $h)))\n";
/* clang-format on */
#undef DV4
#undef DV

/* The constants whose traps stay with div/idiv: INT32_MIN / -1 overflows, a constant 0
 * divides by zero; -1 otherwise negates. */
static const char DIV_TRAP_WAT[] =
    "(module (func (export \"m1\") (param i32) (result i32)\n"
    "  (i32.div_s (local.get 0) (i32.const -1)))\n"
    " (func (export \"z\") (param i32) (result i32) (i32.rem_u (local.get 0) (i32.const 0))))\n";

static void test_division_by_constant(void **state) {
    (void)state;
    static const char *const names[] = {"dv"};
    static const int32_t args[] = {0, 1, -1, INT32_MIN, INT32_MAX, 12345, -98765, 0x40000000};
    tiers_agree_i32(DIV_WAT, names, 1, args, sizeof args / sizeof args[0], (pw_store_config){0},
                    NULL);
    size_t n = 0;
    uint8_t *mod = wat_module(DIV_TRAP_WAT, &n);
    for (size_t mi = 0; mi < sizeof tiers / sizeof tiers[0]; mi++) {
        pw_store_config cfg = {.engine = tiers[mi].engine, .bounds_checks = tiers[mi].bounds};
        rig r;
        rig_open_cfg(&r, &cfg, mod, n);
        pw_error err;
        int32_t res = 0;
        assert_int_equal(call1(&r, "m1", 5, &res, &err), PW_OK);
        assert_int_equal(res, -5);
        assert_int_equal(call1(&r, "m1", INT32_MIN, &res, &err), PW_ERR_TRAP);
        assert_int_equal(err.trap, PW_TRAP_INT_OVERFLOW);
        assert_int_equal(call1(&r, "z", 5, &res, &err), PW_ERR_TRAP);
        assert_int_equal(err.trap, PW_TRAP_REM_ZERO);
        rig_close(&r);
    }
    free(mod);
}

/* Traps the spec words alike and V8 words apart get codes of their own in every tier:
 * division vs remainder by zero, division overflow vs a float out of the integer range
 * (NaN is the separate invalid conversion), and the GC segment instructions and
 * table.init past their segment vs memory and table accesses. The spec message stays
 * the shared one; the V8 message is V8's. Integer and float functions must really run
 * as JIT code in the JIT tiers (the GC ones may stay on the interpreter). */
/* clang-format off */
static const char SPLIT_TRAP_WAT[] =
    "(module (type $b (array (mut i8))) (type $f (array (mut funcref)))\n"
    " (memory 1) (table 4 funcref) (elem $e func $nop $nop)\n"
    " (data $d \"\\01\\02\\03\\04\") (func $nop)\n"
    " (func (export \"div_s\") (param i32) (result i32) (i32.div_s (i32.const 7) (local.get 0)))\n"
    " (func (export \"div_u\") (param i32) (result i32) (i32.div_u (i32.const 7) (local.get 0)))\n"
    " (func (export \"rem_s\") (param i32) (result i32) (i32.rem_s (i32.const 7) (local.get 0)))\n"
    " (func (export \"rem_u\") (param i32) (result i32) (i32.rem_u (i32.const 7) (local.get 0)))\n"
    " (func (export \"div_s64\") (param i32) (result i32)\n"
    "  (i32.wrap_i64 (i64.div_s (i64.const 0x8000000000000000) (i64.extend_i32_s (local.get 0)))))\n"
    " (func (export \"div_u64\") (param i32) (result i32)\n"
    "  (i32.wrap_i64 (i64.div_u (i64.const 7) (i64.extend_i32_s (local.get 0)))))\n"
    " (func (export \"rem_s64\") (param i32) (result i32)\n"
    "  (i32.wrap_i64 (i64.rem_s (i64.const 7) (i64.extend_i32_s (local.get 0)))))\n"
    " (func (export \"rem_u64\") (param i32) (result i32)\n"
    "  (i32.wrap_i64 (i64.rem_u (i64.const 7) (i64.extend_i32_s (local.get 0)))))\n"
    " (func (export \"divov\") (param i32) (result i32) (i32.div_s (i32.const 0x80000000) (local.get 0)))\n"
    /* the truncations take the float's bits (an f64's high word) */
    " (func (export \"t32s_f32\") (param i32) (result i32) (i32.trunc_f32_s (f32.reinterpret_i32 (local.get 0))))\n"
    " (func (export \"t32u_f32\") (param i32) (result i32) (i32.trunc_f32_u (f32.reinterpret_i32 (local.get 0))))\n"
    " (func (export \"t64s_f32\") (param i32) (result i32)\n"
    "  (i32.wrap_i64 (i64.trunc_f32_s (f32.reinterpret_i32 (local.get 0)))))\n"
    " (func (export \"t64u_f32\") (param i32) (result i32)\n"
    "  (i32.wrap_i64 (i64.trunc_f32_u (f32.reinterpret_i32 (local.get 0)))))\n"
    " (func $hi (param i32) (result f64)\n"
    "  (f64.reinterpret_i64 (i64.shl (i64.extend_i32_u (local.get 0)) (i64.const 32))))\n"
    " (func (export \"t32s_f64\") (param i32) (result i32) (i32.trunc_f64_s (call $hi (local.get 0))))\n"
    " (func (export \"t32u_f64\") (param i32) (result i32) (i32.trunc_f64_u (call $hi (local.get 0))))\n"
    " (func (export \"t64s_f64\") (param i32) (result i32)\n"
    "  (i32.wrap_i64 (i64.trunc_f64_s (call $hi (local.get 0)))))\n"
    " (func (export \"t64u_f64\") (param i32) (result i32)\n"
    "  (i32.wrap_i64 (i64.trunc_f64_u (call $hi (local.get 0)))))\n"
    " (func (export \"new_data\") (param i32) (result i32)\n"
    "  (array.len (array.new_data $b $d (local.get 0) (i32.const 2))))\n"
    " (func (export \"init_data\") (param i32) (result i32)\n"
    "  (array.init_data $b $d (array.new_default $b (i32.const 4)) (i32.const 0) (local.get 0)\n"
    "   (i32.const 2)) (i32.const 0))\n"
    " (func (export \"new_elem\") (param i32) (result i32)\n"
    "  (array.len (array.new_elem $f $e (local.get 0) (i32.const 2))))\n"
    " (func (export \"init_elem\") (param i32) (result i32)\n"
    "  (array.init_elem $f $e (array.new_default $f (i32.const 4)) (i32.const 0) (local.get 0)\n"
    "   (i32.const 2)) (i32.const 0))\n"
    " (func (export \"table_init\") (param i32) (result i32)\n"
    "  (table.init $e (i32.const 0) (local.get 0) (i32.const 2)) (i32.const 0))\n"
    " (func (export \"table_init_dst\") (param i32) (result i32)\n"
    "  (table.init $e (local.get 0) (i32.const 1) (i32.const 2)) (i32.const 0)))\n";
/* clang-format on */

static void test_split_trap_codes(void **state) {
    (void)state;
    enum { F32_INF = 0x7f800000, F32_NINF = (int32_t)0xff800000, F32_NAN = 0x7fc00000 };
    enum { F64_INF = 0x7ff00000, F64_NINF = (int32_t)0xfff00000, F64_NAN = 0x7ff80000 };
    static const struct {
        const char *name;
        int32_t arg;
        pw_trap_code code; /* PW_TRAP_NONE: returns want */
        int32_t want;
        bool jit; /* must be JIT code in the JIT tiers */
    } calls[] = {
        {"div_s", 2, PW_TRAP_NONE, 3, true},
        {"div_s", 0, PW_TRAP_DIV_ZERO, 0, true},
        {"div_u", 0, PW_TRAP_DIV_ZERO, 0, true},
        {"rem_s", 2, PW_TRAP_NONE, 1, true},
        {"rem_s", 0, PW_TRAP_REM_ZERO, 0, true},
        {"rem_s", -1, PW_TRAP_NONE, 0, true},
        {"rem_u", 0, PW_TRAP_REM_ZERO, 0, true},
        {"div_s64", -1, PW_TRAP_INT_OVERFLOW, 0, true},
        {"div_s64", 0, PW_TRAP_DIV_ZERO, 0, true},
        {"div_u64", 0, PW_TRAP_DIV_ZERO, 0, true},
        {"rem_s64", 0, PW_TRAP_REM_ZERO, 0, true},
        {"rem_u64", 0, PW_TRAP_REM_ZERO, 0, true},
        {"rem_u64", 4, PW_TRAP_NONE, 3, true},
        {"divov", -1, PW_TRAP_INT_OVERFLOW, 0, true},
        {"t32s_f32", 0x3fc00000 /* 1.5 */, PW_TRAP_NONE, 1, true},
        {"t32s_f32", 0x4f000000 /* 2^31 */, PW_TRAP_CONV_OVERFLOW, 0, true},
        {"t32s_f32", F32_NINF, PW_TRAP_CONV_OVERFLOW, 0, true},
        {"t32s_f32", F32_NAN, PW_TRAP_INVALID_CONV, 0, true},
        {"t32u_f32", (int32_t)0xbf800000 /* -1 */, PW_TRAP_CONV_OVERFLOW, 0, true},
        {"t32u_f32", F32_INF, PW_TRAP_CONV_OVERFLOW, 0, true},
        {"t32u_f32", F32_NAN, PW_TRAP_INVALID_CONV, 0, true},
        {"t64s_f32", F32_INF, PW_TRAP_CONV_OVERFLOW, 0, true},
        {"t64s_f32", F32_NAN, PW_TRAP_INVALID_CONV, 0, true},
        {"t64u_f32", F32_NINF, PW_TRAP_CONV_OVERFLOW, 0, true},
        {"t64u_f32", 0x40000000 /* 2 */, PW_TRAP_NONE, 2, true},
        {"t32s_f64", 0x41e00000 /* 2^31 */, PW_TRAP_CONV_OVERFLOW, 0, true},
        {"t32s_f64", F64_NAN, PW_TRAP_INVALID_CONV, 0, true},
        {"t32u_f64", (int32_t)0xbff00000 /* -1 */, PW_TRAP_CONV_OVERFLOW, 0, true},
        {"t32u_f64", 0x41f00000 /* 2^32 */, PW_TRAP_CONV_OVERFLOW, 0, true},
        {"t64s_f64", 0x43e00000 /* 2^63 */, PW_TRAP_CONV_OVERFLOW, 0, true},
        {"t64s_f64", F64_NINF, PW_TRAP_CONV_OVERFLOW, 0, true},
        {"t64u_f64", 0x43f00000 /* 2^64 */, PW_TRAP_CONV_OVERFLOW, 0, true},
        {"t64u_f64", F64_NAN, PW_TRAP_INVALID_CONV, 0, true},
        {"t64u_f64", 0x40080000 /* 3 */, PW_TRAP_NONE, 3, true},
        {"new_data", 2, PW_TRAP_NONE, 2, false},
        {"new_data", 3, PW_TRAP_DATA_SEG_OOB, 0, false},
        {"init_data", 3, PW_TRAP_DATA_SEG_OOB, 0, false},
        {"new_elem", 1, PW_TRAP_ELEM_SEG_OOB, 0, false},
        {"init_elem", 1, PW_TRAP_ELEM_SEG_OOB, 0, false},
        {"table_init", 1, PW_TRAP_ELEM_SEG_OOB, 0, false},
        {"table_init_dst", 3, PW_TRAP_TABLE_OOB, 0, false},
    };
    static const struct {
        pw_trap_code code;
        const char *spec, *v8;
    } texts[] = {
        {PW_TRAP_DIV_ZERO, "integer divide by zero", "divide by zero"},
        {PW_TRAP_REM_ZERO, "integer divide by zero", "remainder by zero"},
        {PW_TRAP_INT_OVERFLOW, "integer overflow", "divide result unrepresentable"},
        {PW_TRAP_CONV_OVERFLOW, "integer overflow", "float unrepresentable in integer range"},
        {PW_TRAP_INVALID_CONV, "invalid conversion to integer",
         "float unrepresentable in integer range"},
        {PW_TRAP_DATA_SEG_OOB, "out of bounds memory access", "data segment out of bounds"},
        {PW_TRAP_ELEM_SEG_OOB, "out of bounds table access", "element segment out of bounds"},
        {PW_TRAP_TABLE_OOB, "out of bounds table access", "table index is out of bounds"},
    };
    size_t n = 0;
    uint8_t *mod = wat_module(SPLIT_TRAP_WAT, &n);
    for (int t = -1; t < (int)(sizeof tiers / sizeof tiers[0]); t++) {
        /* t = -1: the default tier (auto) */
        pw_store_config cfg = {.engine = t < 0 ? PW_ENGINE_AUTO : tiers[t].engine,
                               .bounds_checks = t < 0 ? PW_BOUNDS_GUARD : tiers[t].bounds};
        if (cfg.engine == PW_ENGINE_JIT && !PW_JIT_AVAILABLE) continue;
        rig r;
        rig_open_cfg(&r, &cfg, mod, n);
        for (size_t i = 0; i < sizeof calls / sizeof calls[0]; i++) {
            pw_error err;
            int32_t res = 0;
            memset(&err, 0, sizeof err);
            pw_status st = call1(&r, calls[i].name, calls[i].arg, &res, &err);
            if (calls[i].code == PW_TRAP_NONE) {
                if (st != PW_OK)
                    fail_msg("tier %d %s(%d): %s", t, calls[i].name, calls[i].arg, err.message);
                assert_int_equal(res, calls[i].want);
            } else {
                if (st != PW_ERR_TRAP || err.trap != calls[i].code)
                    fail_msg("tier %d %s(%d): status %d trap %d (%s), want trap %d", t,
                             calls[i].name, calls[i].arg, st, err.trap, err.message, calls[i].code);
                size_t k = 0;
                while (texts[k].code != calls[i].code)
                    k++;
                assert_string_equal(err.message, texts[k].spec);
                assert_string_equal(pw_trap_message(err.trap, PW_MSG_SPEC), texts[k].spec);
                assert_string_equal(pw_trap_message(err.trap, PW_MSG_V8), texts[k].v8);
            }
            if (cfg.engine == PW_ENGINE_JIT && calls[i].jit)
                assert_int_equal(pw__jit_state(fn(&r, calls[i].name)), 1);
        }
        rig_close(&r);
    }
    free(mod);
}

/* An add of two registers into a third is one lea (docs/jit.md "Three-operand
 * adds"): it must give the low 32 bits zero-extended (the sum here carries past
 * 2^32, and is then used as an address at once, where a register already
 * zero-extended is used as it is) and must not claim flags it did not set (the sum is
 * tested for zero right after it, 0 in the first round). Hot locals, so p, q and s
 * are all in registers; against the interpreter. */
static const char LEA_WAT[] =
    "(module (memory 1)\n"
    " (func (export \"la\") (param $n i32) (result i32) (local $p i32) (local $q i32)\n"
    "  (local $s i32) (local $t i32) (local $c i32) (local $i i32) (local $u i64)\n" FILL_4K
    "  (local.set $p (i32.const 0xFFFFFF00)) (local.set $q (i32.const 0x100))\n"
    "  (local.set $i (i32.const 0))\n"
    "  (loop $l\n"
    "   (local.set $s (i32.add (local.get $p) (local.get $q)))\n"
    "   (if (local.get $s) (then (local.set $c (i32.add (local.get $c) (i32.const 1)))))\n"
    "   (local.set $s (i32.add (local.get $p) (local.get $q)))\n"
    "   (local.set $t (i32.add (local.get $t) (i32.load (local.get $s))))\n"
    "   (local.set $t (i32.xor (local.get $t) (i32.load offset=4 (local.get $s))))\n"
    "   (local.set $u (i64.add (local.get $u) (i64.extend_i32_u (i32.add (local.get $p)\n"
    "    (local.get $q)))))\n"
    "   (local.set $p (i32.add (local.get $p) (i32.const 4)))\n"
    "   (local.set $q (i32.add (local.get $q) (i32.const 4)))\n"
    "   (br_if $l (i32.lt_u (local.tee $i (i32.add (local.get $i) (i32.const 1)))\n"
    "    (local.get $n))))\n"
    "  (i32.add (i32.add (local.get $t) (i32.mul (local.get $c) (i32.const 1000003)))\n"
    "   (i32.wrap_i64 (i64.xor (local.get $u) (i64.shr_u (local.get $u) (i64.const 32))))))\n"
    ")\n";

static void test_lea_adds(void **state) {
    (void)state;
    tiers_agree_i32(LEA_WAT, (const char *const[]){"la"}, 1, (const int32_t[]){1, 2, 100}, 3,
                    (pw_store_config){0}, NULL);
}

static void test_select(void **state) {
    (void)state;
    static const char *const names[] = {"sel",  "selm",  "cmp",  "lea64",
                                        "addr", "flags", "cold", "cpy"};
    static const int32_t args[] = {1, 2, 5, 1000};
    tiers_agree_i32(SEL_WAT, names, sizeof names / sizeof names[0], args,
                    sizeof args / sizeof args[0], (pw_store_config){0}, NULL);
}

/* Loop pins: two loops whose hot locals differ (a..q, then x..w; a rotation spreads a
 * wrong bit to all 32 over the iterations), more of them than pin registers, so each innermost loop
 * takes GPRs of function pins it does not use. The second loop runs inside an outer one (entered
 * and left again, its values carried in the frame between), and leaves through a br_if to an outer
 * block, a br_table entry, a return of values held in its registers, and its fallthrough; it makes
 * a direct call and a C helper call (memory.grow) while its pins are in place. */
#define LP_LOOP2(extra)                                                                            \
    "    (loop $l2\n"                                                                              \
    "     (local.set $x (i32.add (local.get $x) (i32.rotl (i32.xor (local.get $j) (local.get "     \
    "$y))\n"                                                                                       \
    "      (i32.const 7))))\n"                                                                     \
    "     (local.set $y (i32.xor (local.get $y) (i32.add (local.get $x) (local.get $z))))\n"       \
    "     (local.set $z (i32.add (local.get $z) (i32.xor (local.get $y) (local.get $u))))\n"       \
    "     (local.set $u (i32.xor (local.get $u) (i32.add (local.get $z) (local.get $v))))\n"       \
    "     (local.set $v (i32.add (local.get $v) (i32.xor (local.get $u) (local.get $w))))\n"       \
    "     (local.set $w (i32.xor (local.get $w) (i32.add (local.get $v) (local.get $x))))\n" extra \
    "     (br_if $l2 (i32.lt_u (local.tee $j (i32.add (local.get $j) (i32.const 1)))\n"            \
    "      (local.get $n))))\n"
#define LP_HEAD(name)                                                                              \
    " (func $" name " (export \"" name "\") (param $n i32) (result i32)\n" HOT_LOCALS              \
    "  (local $z i32) (local $u i32) (local $v i32) (local $w i32) (local $j i32) (local $k "      \
    "i32)\n"                                                                                       \
    "  (loop $o1 (loop $o2\n"                                                                      \
    "  (loop $l\n" HOT_SIX "   (br_if $l (i32.lt_u (local.tee $i (i32.add (local.get $i)\n"        \
    "    (i32.const 1))) (local.get $n))))\n"                                                      \
    "  (br_if $o2 (i32.eq (local.tee $k (i32.add (local.get $k) (i32.const 1))) (i32.const "       \
    "1))))\n"                                                                                      \
    "  (br_if $o1 (i32.lt_u (local.get $k) (i32.const 3))))\n  (local.set $k (i32.const 0))\n"     \
    "  (block $out\n   (loop $outer\n    (local.set $j (i32.const 0))\n"
#define LP_TAIL                                                                                    \
    "    (br_if $outer (i32.lt_u (local.tee $k (i32.add (local.get $k) (i32.const 1)))\n"          \
    "     (i32.const 3)))))\n"                                                                     \
    "  (i32.add (i32.add (i32.add (local.get $a) (local.get $q)) (i32.mul (local.get $k)\n"        \
    "   (i32.const 1000003))) (i32.add (i32.add (local.get $x) (local.get $y))\n"                  \
    "   (i32.add (i32.add (local.get $z) (local.get $u)) (i32.add (local.get $v)\n"                \
    "   (i32.sub (local.get $w) (local.get $j)))))))\n"
/* How the second loop leaves: br_if to the outer block; return from inside; a direct
 * call, memory.grow (a C helper) and a br_table entry to the outer block. */
#define LP_EXITS                                                                                   \
    "     (br_if $out (i32.eq (i32.and (local.get $x) (i32.const 1023)) (i32.const 77)))\n"        \
    "     (br_if $out (i32.gt_u (local.get $j) (i32.const 700)))\n"
#define LP_RET                                                                                     \
    "     (if (i32.eq (local.get $j) (i32.const 500)) (then (return (i32.add (i32.add\n"           \
    "      (local.get $x) (local.get $w)) (i32.mul (local.get $k) (local.get $z))))))\n"
#define LP_CALLS                                                                                   \
    "     (local.set $y (call $id (local.get $y)))\n"                                              \
    "     (local.set $u (i32.add (local.get $u) (memory.grow (i32.const 0))))\n"                   \
    "     (block $next (br_table $next $out (i32.eq (local.get $j) (i32.const 600))))\n"
/* the first exit of LP_EXITS through a br_table's table, which lies after the body (its
 * entry 0; the default is a jump of its own) */
#define LP_TAB                                                                                     \
    "     (block $next (br_table $out $next (i32.ne (i32.and (local.get $x) (i32.const 1023))\n"   \
    "      (i32.const 77))))\n"                                                                    \
    "     (br_if $out (i32.gt_u (local.get $j) (i32.const 700)))\n"
/* a self call at the loop's second step (the first time round the outer loop): under a small native
 * stack budget the deeper calls take the direct call's helper path, emitted after the body with
 * these pins */
#define LP_REC                                                                                     \
    "     (if (i32.and (i32.eqz (i32.or (i32.xor (local.get $j) (i32.const 1)) (local.get $k)))\n" \
    "      (i32.gt_u (local.get $n) (i32.const 1))) (then (local.set $y (i32.add (local.get $y)\n" \
    "      (call $lprec (i32.sub (local.get $n) (i32.const 1)))))))\n"
#define LP_FUNC(name, extra) LP_HEAD(name) LP_LOOP2(extra) LP_TAIL
static const char LP_WAT[] =
    "(module (memory 1 2)\n"
    " (func $id (param i32) (result i32) (i32.add (local.get 0) "
    "(i32.const 3)))\n" LP_FUNC("lp", LP_EXITS) LP_FUNC("lpret", LP_RET) LP_FUNC("lpcall", LP_CALLS)
        LP_FUNC("lprec", LP_REC) LP_FUNC("lptab", LP_TAB) ")\n";

static void test_loop_pins(void **state) {
    (void)state;
    static const char *const names[] = {"lp", "lpret", "lpcall", "lprec", "lptab"};
    static const int32_t args[] = {1, 2, 5, 550, 650, 1000};
    tiers_agree_i32(LP_WAT, names, sizeof names / sizeof names[0], args,
                    sizeof args / sizeof args[0],
                    (pw_store_config){.max_call_depth = 3000, .jit_native_stack = 16 * 1024}, NULL);
}

/* Definite assignment (compile.c): an entry zeroes only the declared locals that may be
 * read before they are written. Each probe runs right after a call of $dirty from the
 * same place, whose twelve non-zero arguments are passed in the very cells the probe's
 * locals take, so a local the analysis wrongly counts as written reads them instead of
 * zero: every tier is checked against the values the probes must return (da_want). */
#define DA_PROBE(name, locals, body)                                                               \
    " (func $" name " (param $n i32) (result i32) " locals "\n" body ")\n"                         \
    " (func (export \"" name "\") (param $n i32) (result i32)\n"                                   \
    "  (drop (call $dirty " DA_DIRTY ")) (call $" name " (local.get $n)))\n"
#define DA_ODD "(i32.and (local.get $n) (i32.const 1))"
#define DA_DIRTY                                                                                   \
    "(i64.const 0x5a5a5a5a5a5a5a51) (i64.const 0x5a5a5a5a5a5a5a52) (i64.const 0x5a5a5a5a5a5a5a53)" \
    "(i64.const 0x5a5a5a5a5a5a5a54) (i64.const 0x5a5a5a5a5a5a5a55) (i64.const 0x5a5a5a5a5a5a5a56)" \
    "(i64.const 0x5a5a5a5a5a5a5a57) (i64.const 0x5a5a5a5a5a5a5a58) (i64.const 0x5a5a5a5a5a5a5a59)" \
    "(i64.const 0x5a5a5a5a5a5a5a5a) (i64.const 0x5a5a5a5a5a5a5a5b) (i64.const 0x5a5a5a5a5a5a5a5c)"
static const char DA_WAT[] =
    "(module (memory 1) (tag $e)\n"
    " (func $id (param i64) (result i64) (local.get 0))\n"
    " (func $thrower (param $n i32) (if (i32.and (local.get $n) (i32.const 2)) (then (throw "
    "$e))))\n"
    /* its parameters are passed in the cells of the callee's frame */
    " (func $dirty (param i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64) (result i32)\n"
    "  (i32.const 0))\n"
    /* written in the then-branch only */
    DA_PROBE("p_if", "(local $x i32)",
             "  (if " DA_ODD " (then (local.set $x (i32.const 5)))) (local.get $x)")
    /* the else-branch reads what only the then-branch wrote */
    DA_PROBE("p_else", "(local $x i32) (local $y i32)",
             "  (if " DA_ODD
             " (then (local.set $x (i32.const 5)) (local.set $y (i32.mul (local.get "
             "$x)\n   (i32.const 3))))\n  (else (local.set $y (i32.add (local.get $x) (i32.const "
             "6)))))\n"
             "  (local.get $y)")
    /* a branch out of the block before the write */
    DA_PROBE("p_br", "(local $x i64)",
             "  (block $b (br_if $b " DA_ODD ") (local.set $x (i64.const 9)))\n"
             "  (i32.wrap_i64 (i64.xor (local.get $x) (i64.shr_u (local.get $x) (i64.const "
             "32))))")
    /* a branch out after the first write and before the second */
    DA_PROBE("p_merge", "(local $x i32) (local $y i32)",
             "  (block $b (local.set $x (i32.add (local.get $n) (i32.const 1)))\n"
             "   (br_if $b " DA_ODD ") (local.set $y (i32.const 8)))\n"
             "  (i32.add (local.get $x) (i32.mul (local.get $y) (i32.const 3)))")
    /* a loop left before its first write (n = 0) */
    DA_PROBE("p_loop", "(local $i i32) (local $x i32)",
             "  (block $b (loop $l (br_if $b (i32.ge_u (local.get $i) (local.get $n)))\n"
             "   (local.set $x (i32.add (local.get $i) (i32.const 100)))\n"
             "   (local.set $i (i32.add (local.get $i) (i32.const 1))) (br $l)))\n"
             "  (local.get $x)")
    /* a br_table entry past the write */
    DA_PROBE("p_table", "(local $x i32)",
             "  (block $o (block $i (br_table $i $o " DA_ODD ")) (local.set $x (i32.const 3)))\n"
             "  (local.get $x)")
    /* an exception thrown before the write (n & 2), caught by try_table */
    DA_PROBE("p_try", "(local $x i32)",
             "  (block $h (try_table (catch $e $h) (call $thrower (local.get $n))\n"
             "   (local.set $x (i32.const 4))))\n  (local.get $x)")
    /* a legacy catch reads what the try body had not written yet */
    DA_PROBE("p_legacy", "(local $x i32) (local $y i32)",
             "  (try (do (call $thrower (local.get $n)) (local.set $x (i32.const 4))\n"
             "   (local.set $y (local.get $x)))\n"
             "   (catch $e (local.set $y (i32.add (local.get $x) (i32.const 1)))))\n"
             "  (local.get $y)")
    /* a block with no branch to it keeps its write, but not past the if around it */
    DA_PROBE("p_nest", "(local $x i32) (local $y i32)",
             "  (if " DA_ODD " (then (block (local.set $x (i32.const 2)))\n"
             "   (local.set $y (i32.add (local.get $x) (i32.const 1)))))\n"
             "  (i32.add (local.get $x) (local.get $y))")
    /* wider kinds: f64 bits, v128 lanes */
    DA_PROBE("p_f64", "(local $f f64)",
             "  (if " DA_ODD " (then (local.set $f (f64.const 2.5))))\n"
             "  (i32.wrap_i64 (i64.rotl (i64.reinterpret_f64 (local.get $f)) (i64.const 17)))")
        DA_PROBE(
            "p_v128", "(local $v v128)",
            "  (if " DA_ODD " (then (local.set $v (v128.const i32x4 1 2 3 4))))\n"
            "  (i32.add (i32x4.extract_lane 0 (local.get $v)) (i32x4.extract_lane 3 (local.get "
            "$v)))")
    /* a v128 local.tee before the first loop whose constant has a zero half: that
     * half's write is dropped (the entry's zero), and the tee's value, which nothing
     * else reads, comes from the cell */
    DA_PROBE("p_vtee", "(local $v v128) (local $w v128)",
             "  (i32.add (i32x4.extract_lane 1 (local.tee $v (v128.const i32x4 0 0 2 3)))\n"
             "   (i32x4.extract_lane 3 (local.tee $w (v128.const i32x4 7 8 0 0))))")
    /* a zero written before the first loop is dropped (the entry's zero is kept):
     * the local still needs it */
    DA_PROBE("p_zero", "(local $x i32) (local $i i32)",
             "  (local.set $x (i32.const 0))\n"
             "  (loop $l (local.set $x (i32.add (local.get $x) (local.get $i)))\n"
             "   (br_if $l (i32.lt_u (local.tee $i (i32.add (local.get $i) (i32.const 1)))\n"
             "    (local.get $n))))\n  (local.get $x)")
    /* before the first loop, a second zero store after a forward branch is dropped
     * too (nothing stored another value), and the twin without it compiles the same */
    DA_PROBE("p_zero2", "(local $x i32)",
             "  (local.set $x (i32.const 0))\n"
             "  (block $b (br_if $b " DA_ODD ") (local.set $x (i32.const 0)))\n"
             "  (i32.add (local.get $x) (local.get $n))")
        DA_PROBE("p_zero2t", "(local $x i32)",
                 "  (local.set $x (i32.const 0))\n"
                 "  (block $b (br_if $b " DA_ODD "))\n"
                 "  (i32.add (local.get $x) (local.get $n))")
    /* but a zero stored after another value is a store */
    DA_PROBE("p_rezero", "(local $x i32)",
             "  (local.set $x (i32.add (local.get $n) (i32.const 5)))\n"
             "  (if " DA_ODD " (then (local.set $x (i32.const 0))))\n"
             "  (local.get $x)")
    /* constant addresses read the hidden local that stays zero (the cell after $n) */
    DA_PROBE("p_const", "",
             "  (i32.store offset=4 (i32.const 60) (i32.add (local.get $n) (i32.const 11)))\n"
             "  (i32.load (i32.const 64))")
    /* every read after a write: nothing to zero (a block no branch targets, a loop) */
    DA_PROBE("p_all", "(local $x i32) (local $y i32) (local $z i64)",
             "  (local.set $x (i32.mul (local.get $n) (i32.const 3)))\n"
             "  (block (local.set $y (i32.add (local.get $x) (i32.const 1))))\n"
             "  (loop (local.set $z (i64.extend_i32_u (local.get $y))))\n"
             "  (i32.add (i32.wrap_i64 (local.get $z)) (local.get $x))") ")\n";

/* What probe `name` returns for n, its locals starting at zero: every tier is checked
 * against this too, so the test does not rest on the interpreter zeroing every local. */
static int32_t da_want(const char *name, int32_t n) {
    bool odd = n & 1, thrown = n & 2;
    int32_t m = n > 1 ? n : 1;
    static const struct {
        const char *name;
        int32_t odd, even; /* INT32_MIN: computed below */
    } fixed[] = {{"p_if", 5, 0},   {"p_else", 15, 6},   {"p_br", 0, 9},   {"p_table", 0, 3},
                 {"p_nest", 5, 0}, {"p_f64", 32776, 0}, {"p_v128", 5, 0}, {"p_vtee", 0, 0}};
    for (size_t k = 0; k < sizeof fixed / sizeof fixed[0]; k++)
        if (!strcmp(name, fixed[k].name)) return odd ? fixed[k].odd : fixed[k].even;
    if (!strcmp(name, "p_merge")) return odd ? n + 1 : n + 25;
    if (!strcmp(name, "p_loop")) return n ? n + 99 : 0;
    if (!strcmp(name, "p_try")) return thrown ? 0 : 4;
    if (!strcmp(name, "p_legacy")) return thrown ? 1 : 4;
    if (!strcmp(name, "p_zero")) return m * (m - 1) / 2;
    if (!strcmp(name, "p_all")) return 6 * n + 1;
    if (!strcmp(name, "p_const")) return n + 11;
    if (!strcmp(name, "p_zero2") || !strcmp(name, "p_zero2t")) return n;
    if (!strcmp(name, "p_rezero")) return odd ? 0 : n + 5;
    fail_msg("no expected value for %s", name);
    return 0;
}

static void test_definite_assignment(void **state) {
    (void)state;
    static const char *const names[] = {"p_if",    "p_else",   "p_br",     "p_merge", "p_loop",
                                        "p_table", "p_try",    "p_legacy", "p_nest",  "p_f64",
                                        "p_v128",  "p_zero",   "p_all",    "p_const", "p_vtee",
                                        "p_zero2", "p_zero2t", "p_rezero"};
    static const int32_t args[] = {0, 1, 2, 3, 6, 7};
    tiers_agree_i32(DA_WAT, names, sizeof names / sizeof names[0], args,
                    sizeof args / sizeof args[0], (pw_store_config){0}, da_want);
    size_t n = 0;
    uint8_t *mod = wat_module(DA_WAT, &n);
    pw_error err;
    /* and the analysis is not simply off: which declared cells each probe's entry skips
     * (bit i: cell 1 + i; v128 takes two cells) */
    static const struct {
        const char *name;
        uint64_t skip, zero; /* bits that must be set, and clear, in nozero */
    } want[] = {{"p_if", 0, 1},   {"p_else", 2, 1},  {"p_br", 0, 1},   {"p_merge", 1, 2},
                {"p_loop", 0, 3}, {"p_table", 0, 1}, {"p_try", 0, 1},  {"p_legacy", 2, 1},
                {"p_nest", 0, 3}, {"p_f64", 0, 1},   {"p_v128", 0, 3}, {"p_zero", 0, 3},
                {"p_all", 7, 0},  {"p_const", 0, 1}, {"p_vtee", 6, 9}};
    rig r;
    rig_open_cfg(&r, &(pw_store_config){.engine = PW_ENGINE_INTERP}, mod, n);
    for (size_t k = 0; k < sizeof want / sizeof want[0]; k++) {
        int32_t res;
        if (call1(&r, want[k].name, 1, &res, &err) != PW_OK) fail_msg("%s", err.message);
        /* the export's callee is the probe: the function before it */
        const pw_cfunc *cf = fn(&r, want[k].name)->code - 1;
        if ((cf->nozero & want[k].skip) != want[k].skip || (cf->nozero & want[k].zero))
            fail_msg("%s: nozero %#llx", want[k].name, (unsigned long long)cf->nozero);
    }
    int32_t res;
    if (call1(&r, "p_zero2", 1, &res, &err) != PW_OK ||
        call1(&r, "p_zero2t", 1, &res, &err) != PW_OK)
        fail_msg("%s", err.message);
    const pw_cfunc *z2 = fn(&r, "p_zero2")->code - 1, *z2t = fn(&r, "p_zero2t")->code - 1;
    if (z2->ncode != z2t->ncode)
        fail_msg("p_zero2: %u internal code words, %u without its second zero store", z2->ncode,
                 z2t->ncode);
    rig_close(&r);
    free(mod);
}

int main(void) {
    guard_keep();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_encoder_objdump),
        cmocka_unit_test(test_tiers_agree),
        cmocka_unit_test(test_call_indirect),
        cmocka_unit_test(test_call_indirect_cache),
        cmocka_unit_test(test_runaway_recursion),
        cmocka_unit_test(test_interrupt_under_jit),
        cmocka_unit_test(test_interrupt_poll_page), /* the interrupt poll page */
        cmocka_unit_test(test_address_reuse),
        cmocka_unit_test(test_zero_extended_index),
        cmocka_unit_test(test_float_operands),
        cmocka_unit_test(test_truncations),
        cmocka_unit_test(test_self_calls),
        cmocka_unit_test(test_loops_and_slots),
        cmocka_unit_test(test_call_frames),
        cmocka_unit_test(test_pins_across_calls),
        cmocka_unit_test(test_dead_stores),
        cmocka_unit_test(test_forwarded_operands),
        cmocka_unit_test(test_bulk_and_tables),
        cmocka_unit_test(test_call_results),
        cmocka_unit_test(test_division_by_constant),
        cmocka_unit_test(test_split_trap_codes),
        cmocka_unit_test(test_lea_adds),
        cmocka_unit_test(test_select),
        cmocka_unit_test(test_loop_pins),
        cmocka_unit_test(test_definite_assignment),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
