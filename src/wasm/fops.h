/*
 * fops.h — float semantics shared by the interpreter (interp.c) and the JIT's C
 * helpers (jit/jit.c), so both tiers compute the same bits: saturating conversions,
 * rounding functions that quiet signalling NaNs (libm returns them unchanged), and
 * min/max with the spec's NaN and signed-zero rules. Header-only (static inline).
 */
#ifndef PW_FOPS_H
#define PW_FOPS_H

#include "wasm/runtime.h"

#include <math.h>
#include <string.h>

/* Saturating truncation to an integer range whose bounds lo and hi are exact doubles:
 * NaN gives 0, a <= lo gives min, a >= hi gives max, anything between truncates. The
 * i32, u32 and i64 cases fit int64_t; u64 alone needs its own unsigned cast. */
static inline int64_t pw_sat_range(double a, double lo, double hi, int64_t min, int64_t max) {
    if (a != a) return 0;
    if (a <= lo) return min;
    if (a >= hi) return max;
    return (int64_t)a;
}
static inline int32_t pw_sat_i32(double a) {
    return (int32_t)pw_sat_range(a, -2147483648.0, 2147483648.0, INT32_MIN, INT32_MAX);
}
static inline uint32_t pw_sat_u32(double a) {
    return (uint32_t)pw_sat_range(a, 0.0, 4294967296.0, 0, UINT32_MAX);
}
static inline int64_t pw_sat_i64(double a) {
    return pw_sat_range(a, -9223372036854775808.0, 9223372036854775808.0, INT64_MIN, INT64_MAX);
}
static inline uint64_t pw_sat_u64(double a) {
    if (a != a || a <= 0.0) return 0;
    if (a >= 18446744073709551616.0) return UINT64_MAX;
    return (uint64_t)a;
}

/* libm's rounding functions return a signalling NaN unchanged; Wasm wants it quieted. */
#define PW_QUIET(fn, T)                                                                            \
    static inline T pw_##fn(T a) {                                                                 \
        return a != a ? a + a : fn(a);                                                             \
    }
PW_QUIET(ceilf, float)
PW_QUIET(floorf, float)
PW_QUIET(truncf, float)
PW_QUIET(nearbyintf, float)
PW_QUIET(ceil, double)
PW_QUIET(floor, double)
PW_QUIET(trunc, double)
PW_QUIET(nearbyint, double)

static inline uint32_t f32_bits(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}
static inline uint64_t f64_bits(double f) {
    uint64_t u;
    memcpy(&u, &f, 8);
    return u;
}

/* min/max per spec: NaN if either is NaN; -0 < +0. */
static uint32_t f32_minmax(pw_slot a, pw_slot b, bool max) {
    if (a.f32 != a.f32 || b.f32 != b.f32) return f32_bits(a.f32 + b.f32);
    if (a.f32 == b.f32) return max ? (a.u32 & b.u32) : (a.u32 | b.u32);
    return (a.f32 < b.f32) != max ? a.u32 : b.u32;
}
static uint64_t f64_minmax(pw_slot a, pw_slot b, bool max) {
    if (a.f64 != a.f64 || b.f64 != b.f64) return f64_bits(a.f64 + b.f64);
    if (a.f64 == b.f64) return max ? (a.u64 & b.u64) : (a.u64 | b.u64);
    return (a.f64 < b.f64) != max ? a.u64 : b.u64;
}

#endif
