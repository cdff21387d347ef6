/*
 * fops.h — float semantics shared by the interpreter (interp.c) and the JIT's C
 * helpers (jit/jit.c), so both tiers compute the same bits: saturating conversions,
 * rounding functions and square roots of our own (no libm; NaNs quieted), and
 * min/max with the spec's NaN and signed-zero rules. Header-only (static inline).
 */
#ifndef PW_FOPS_H
#define PW_FOPS_H

#include "wasm/runtime.h"

#include <string.h>
#if defined(__x86_64__)
#include <emmintrin.h>
#endif

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

/* Rounding and square root without libm: `peri` links no libm (docs/wasi.md, "Cold
 * start"), and these are exact. Only SSE2 is assumed. A NaN comes back quieted
 * (a + a), as Wasm wants (libm returns a signalling NaN unchanged). A value of
 * magnitude 2^52 (f32: 2^23) or more, and an infinity, is already an integer. Below
 * that the conversion to a signed integer (cvttsd2si) truncates exactly, and the sign
 * is put back, so that -0.5 rounds to -0 and -0 stays -0. */
static inline double pw_sign_like(double r, double a) {
    uint64_t u = f64_bits(r) | (f64_bits(a) & 0x8000000000000000ull);
    memcpy(&r, &u, 8);
    return r;
}
static inline float pw_sign_likef(float r, float a) {
    uint32_t u = f32_bits(r) | (f32_bits(a) & 0x80000000u);
    memcpy(&r, &u, 4);
    return r;
}
/* mode: 0 trunc, 1 floor, 2 ceil, 3 nearest, ties to even (the default rounding mode,
 * which Wasm never changes: adding and taking away 2^52 rounds exactly once) */
static inline double pw_round64(double a, int mode) {
    if (a != a) return a + a;
    double m = __builtin_fabs(a);
    if (!(m < 0x1p52)) return a;
    double t;
    if (mode == 3) {
        t = (m + 0x1p52) - 0x1p52;
    } else {
        t = (double)(int64_t)a;
        if (mode == 1 && t > a) t -= 1.0;
        if (mode == 2 && t < a) t += 1.0;
    }
    return pw_sign_like(t, a);
}
static inline float pw_round32(float a, int mode) {
    if (a != a) return a + a;
    float m = __builtin_fabsf(a);
    if (!(m < 0x1p23f)) return a;
    float t;
    if (mode == 3) {
        t = (m + 0x1p23f) - 0x1p23f;
    } else {
        t = (float)(int32_t)a;
        if (mode == 1 && t > a) t -= 1.0f;
        if (mode == 2 && t < a) t += 1.0f;
    }
    return pw_sign_likef(t, a);
}
static inline double pw_trunc(double a) {
    return pw_round64(a, 0);
}
static inline double pw_floor(double a) {
    return pw_round64(a, 1);
}
static inline double pw_ceil(double a) {
    return pw_round64(a, 2);
}
static inline double pw_nearbyint(double a) {
    return pw_round64(a, 3);
}
static inline float pw_truncf(float a) {
    return pw_round32(a, 0);
}
static inline float pw_floorf(float a) {
    return pw_round32(a, 1);
}
static inline float pw_ceilf(float a) {
    return pw_round32(a, 2);
}
static inline float pw_nearbyintf(float a) {
    return pw_round32(a, 3);
}

/* sqrtsd/sqrtss: correctly rounded; what libm's sqrt computes on x86-64, NaN bits
 * included (the default NaN for a negative, payloads quieted), and what the JIT emits.
 * The intrinsic, not sqrt(), which calls libm for a negative argument to set errno. */
static inline double pw_sqrt(double a) {
#if defined(__x86_64__)
    return _mm_cvtsd_f64(_mm_sqrt_pd(_mm_set_sd(a)));
#else
    return __builtin_sqrt(a);
#endif
}
static inline float pw_sqrtf(float a) {
#if defined(__x86_64__)
    return _mm_cvtss_f32(_mm_sqrt_ss(_mm_set_ss(a)));
#else
    return __builtin_sqrtf(a);
#endif
}

/* min/max per spec: NaN if either is NaN; -0 < +0. */
static inline uint32_t f32_minmax(pw_slot a, pw_slot b, bool max) {
    if (a.f32 != a.f32 || b.f32 != b.f32) return f32_bits(a.f32 + b.f32);
    if (a.f32 == b.f32) return max ? (a.u32 & b.u32) : (a.u32 | b.u32);
    return (a.f32 < b.f32) != max ? a.u32 : b.u32;
}
static inline uint64_t f64_minmax(pw_slot a, pw_slot b, bool max) {
    if (a.f64 != a.f64 || b.f64 != b.f64) return f64_bits(a.f64 + b.f64);
    if (a.f64 == b.f64) return max ? (a.u64 & b.u64) : (a.u64 | b.u64);
    return (a.f64 < b.f64) != max ? a.u64 : b.u64;
}

#endif
