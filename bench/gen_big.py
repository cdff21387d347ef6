#!/usr/bin/env python3
"""bench/gen_big.py N > big.c — writes a C file with N varied functions (loops,
switches, integer and float arithmetic, memory traffic, direct and indirect calls),
deterministic for a given N. Compiled to wasm by build.sh, it is the large module
that bench/compile_speed.c decodes, validates and compiles to measure MB/s."""
import random, sys

n = int(sys.argv[1]) if len(sys.argv) > 1 else 3000
rnd = random.Random(12345)
out = ['#include <stdint.h>', 'typedef uint32_t u32; typedef uint64_t u64;',
       'static u32 mem[4096]; static double fm[1024];',
       'typedef u32 (*fn_t)(u32, u32);']
ops = ['+', '-', '*', '^', '|', '&']
for i in range(n):
    k = rnd.randrange(6)
    body = []
    a, b = rnd.randrange(1, 1 << 20), rnd.randrange(1, 31)
    if k == 0:
        body.append(f'u32 s = x; for (u32 i = 0; i < (y & 63); i++) s = (s {rnd.choice(ops)} mem[(i * {a}) & 4095]) + (s >> {b});')
        body.append('return s;')
    elif k == 1:
        cases = ''.join(f' case {c}: r = x {rnd.choice(ops)} {rnd.randrange(1, 1000)}u; break;' for c in range(rnd.randrange(4, 12)))
        body.append(f'u32 r = y; switch (x % 13) {{{cases} default: r = y * {a}u; }} return r;')
    elif k == 2:
        body.append(f'double d = (double)x * {rnd.random():.6f}; for (u32 i = 0; i < 16; i++) {{ d = d * fm[(i + y) & 1023] + {rnd.random():.4f}; fm[(i * {b}) & 1023] = d; }}')
        body.append('return (u32)(int64_t)d;')
    elif k == 3 and i > 0:
        j = rnd.randrange(i)
        body.append(f'u64 w = (u64)x * {a}u + y; if (w & 1) return f{j}((u32)w, y + {b}); return (u32)(w >> {b});')
    elif k == 4:
        body.append(f'u32 acc = 0; for (u32 i = x & 7; i < 64; i += 3) {{ mem[(i + y) & 4095] += acc {rnd.choice(ops)} i; acc = (acc << {b % 8}) | (acc >> 3); if (acc == {a}u) break; }} return acc;')
    else:
        j = rnd.randrange(max(i, 1))
        body.append(f'static const fn_t t[2] = {{ 0 }}; fn_t f = t[x & 1]; return f ? f(x, y) : (x {rnd.choice(ops)} y) * {a}u;' if i == 0 else
                    f'fn_t f = (x & 1) ? (fn_t)f{j} : (fn_t)f{rnd.randrange(max(i, 1))}; return f(x >> 1, y ^ {a}u) + {b}u;')
    out.append(f'__attribute__((noinline)) u32 f{i}(u32 x, u32 y) {{ {" ".join(body)} }}')
out.append('__attribute__((export_name("run"))) u32 run(u32 x) { u32 s = 0;')
out.append(' '.join(f's += f{i}(x, s);' for i in range(0, n, max(1, n // 64))))
out.append('return s; }')
print('\n'.join(out))
