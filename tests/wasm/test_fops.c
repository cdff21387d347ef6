/*
 * test_fops.c — the engine's own float rounding and square root (src/wasm/fops.h,
 * which `peri` uses instead of libm) against libm, bit for bit: ±0, ±inf, NaNs
 * (signalling and quiet, with payloads), subnormals, halves and their neighbours,
 * values around 2^52 / 2^23 and the integer limits, and many random bit patterns
 * (uniform, and biased to the magnitudes where rounding does something). libm returns
 * a signalling NaN unchanged; ours must return it quieted with its payload kept.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "wasm/fops.h"

/* xorshift64*: a fixed seed, so that a failure repeats */
static uint64_t next(uint64_t *s) {
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    return *s * 0x2545F4914F6CDD1Dull;
}

static double d_of(uint64_t u) {
    double d;
    memcpy(&d, &u, 8);
    return d;
}
static float f_of(uint32_t u) {
    float f;
    memcpy(&f, &u, 4);
    return f;
}

/* What Wasm wants of libm's answer r for input a: a NaN input comes back quieted */
static uint64_t want64(double a, double r) {
    return a != a ? f64_bits(a) | 0x0008000000000000ull : f64_bits(r);
}
static uint32_t want32(float a, float r) {
    return a != a ? f32_bits(a) | 0x00400000u : f32_bits(r);
}

static int fails;
static void check64(uint64_t u) {
    double a = d_of(u);
    struct {
        const char *name;
        double ours, libm;
        bool quiet;
    } c[] = {{"trunc", pw_trunc(a), trunc(a), true},
             {"floor", pw_floor(a), floor(a), true},
             {"ceil", pw_ceil(a), ceil(a), true},
             {"nearbyint", pw_nearbyint(a), nearbyint(a), true},
             {"sqrt", pw_sqrt(a), sqrt(a), false}};
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
        uint64_t w = c[i].quiet ? want64(a, c[i].libm) : f64_bits(c[i].libm);
        if (f64_bits(c[i].ours) != w && fails++ < 20)
            fprintf(stderr, "%s(0x%016llx): 0x%016llx, libm 0x%016llx\n", c[i].name,
                    (unsigned long long)u, (unsigned long long)f64_bits(c[i].ours),
                    (unsigned long long)w);
    }
}
static void check32(uint32_t u) {
    float a = f_of(u);
    struct {
        const char *name;
        float ours, libm;
        bool quiet;
    } c[] = {{"truncf", pw_truncf(a), truncf(a), true},
             {"floorf", pw_floorf(a), floorf(a), true},
             {"ceilf", pw_ceilf(a), ceilf(a), true},
             {"nearbyintf", pw_nearbyintf(a), nearbyintf(a), true},
             {"sqrtf", pw_sqrtf(a), sqrtf(a), false}};
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
        uint32_t w = c[i].quiet ? want32(a, c[i].libm) : f32_bits(c[i].libm);
        if (f32_bits(c[i].ours) != w && fails++ < 20)
            fprintf(stderr, "%s(0x%08x): 0x%08x, libm 0x%08x\n", c[i].name, (unsigned)u,
                    (unsigned)f32_bits(c[i].ours), (unsigned)w);
    }
}

/* the value, its two neighbours, and all three negated */
static void around64(double d) {
    uint64_t u = f64_bits(d) & 0x7fffffffffffffffull;
    for (int s = 0; s < 2; s++)
        for (int k = -1; k <= 1; k++) {
            if (u == 0 && k < 0) continue;
            check64((u + (uint64_t)(int64_t)k) | (s ? 0x8000000000000000ull : 0));
        }
}
static void around32(float f) {
    uint32_t u = f32_bits(f) & 0x7fffffffu;
    for (int s = 0; s < 2; s++)
        for (int k = -1; k <= 1; k++) {
            if (u == 0 && k < 0) continue;
            check32((u + (uint32_t)(int32_t)k) | (s ? 0x80000000u : 0));
        }
}

static void test_edges(void **state) {
    (void)state;
    fails = 0;
    static const uint64_t special64[] = {
        0x0000000000000000ull, 0x8000000000000000ull, 0x0000000000000001ull, /* ±0, subnormal */
        0x000fffffffffffffull, 0x0010000000000000ull, 0x7ff0000000000000ull, /* ±inf */
        0xfff0000000000000ull, 0x7ff8000000000000ull, 0xfff8000000000000ull, /* quiet NaNs */
        0x7ff0000000000001ull, 0xfff4000000000123ull, 0x7ff7ffffffffffffull, /* signalling */
        0x7ffc00000000abcdull, 0x7fefffffffffffffull};
    for (size_t i = 0; i < sizeof special64 / sizeof special64[0]; i++) {
        check64(special64[i]);
        check64(special64[i] ^ 0x8000000000000000ull);
    }
    static const double at64[] = {0.5,
                                  1.0,
                                  1.5,
                                  2.5,
                                  0.49999999999999994,
                                  3.5,
                                  1e-300,
                                  0x1p51,
                                  0x1p51 + 0.5,
                                  0x1p52,
                                  0x1p52 + 1,
                                  0x1p53,
                                  0x1p62,
                                  0x1p63,
                                  0x1p64,
                                  0x1p31,
                                  0x1p32,
                                  4503599627370495.5,
                                  1e300};
    for (size_t i = 0; i < sizeof at64 / sizeof at64[0]; i++)
        around64(at64[i]);
    static const uint32_t special32[] = {0x00000000u, 0x00000001u, 0x007fffffu, 0x00800000u,
                                         0x7f800000u, 0x7fc00000u, 0x7f800001u, 0x7fa00123u,
                                         0x7fbfffffu, 0x7fe0abcdu, 0x7f7fffffu};
    for (size_t i = 0; i < sizeof special32 / sizeof special32[0]; i++) {
        check32(special32[i]);
        check32(special32[i] ^ 0x80000000u);
    }
    static const float at32[] = {0.5f,    1.0f,    1.5f,           2.5f,    0.49999997f, 3.5f,
                                 1e-30f,  0x1p22f, 0x1p22f + 0.5f, 0x1p23f, 0x1p23f + 1, 0x1p24f,
                                 0x1p31f, 0x1p32f, 8388607.5f,     1e30f};
    for (size_t i = 0; i < sizeof at32 / sizeof at32[0]; i++)
        around32(at32[i]);
    /* every small half and integer, where ties to even alternate */
    for (int i = -2000; i <= 2000; i++) {
        around64(i / 2.0);
        around32((float)i / 2.0f);
        check64(f64_bits(i / 4.0));
        check32(f32_bits((float)i / 4.0f));
    }
    assert_int_equal(fails, 0);
}

static void test_random(void **state) {
    (void)state;
    fails = 0;
    uint64_t s = 0x9E3779B97F4A7C15ull;
    for (int i = 0; i < 2000000; i++) {
        uint64_t r = next(&s);
        check64(r);
        check32((uint32_t)r);
        /* magnitudes 2^-4 .. 2^60 (f32: 2^-4 .. 2^28), where rounding does something */
        uint64_t e = 1023 - 4 + (r >> 58);
        check64((r & 0x800fffffffffffffull) | (e << 52));
        uint32_t e32 = 127 - 4 + (uint32_t)((r >> 27) & 31);
        check32(((uint32_t)(r >> 32) & 0x807fffffu) | (e32 << 23));
    }
    assert_int_equal(fails, 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_edges),
        cmocka_unit_test(test_random),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
