/*
 * base/cpu.h — which optional x86-64 instructions this process may use (internal to
 * the library: the SHA-256 and checksum fast paths, the JIT's templates).
 *
 * Where the C library is glibc 2.33 or later, the answer is read from what its
 * dynamic loader already probed at start-up (<sys/platform/x86.h>: "active" means the
 * CPU has the feature and the OS saves its state), so asking costs a few loads and
 * no CPUID. The compiler runtime's probe (__builtin_cpu_supports) would add its own
 * constructor running CPUID several times in every process, and in a virtual machine
 * each CPUID traps to the hypervisor (6–8 µs each on the reference machine, some
 * 50 µs per process start). Elsewhere on x86-64 that probe is the fallback; on other
 * architectures every answer is false.
 *
 * No state of its own: every call asks again.
 */
#ifndef PB_CPU_H
#define PB_CPU_H

#include <stdbool.h>

enum {
    PB_CPU_POPCNT = 1u << 0,
    PB_CPU_SSSE3 = 1u << 1,
    PB_CPU_SSE41 = 1u << 2,
    PB_CPU_SSE42 = 1u << 3,
    PB_CPU_AVX = 1u << 4, /* the OS saves the AVX state too */
    PB_CPU_SHA = 1u << 5
};

#if defined(__x86_64__) && defined(__has_include)
#if __has_include(<sys/platform/x86.h>)
#include <sys/platform/x86.h>
#define PB_CPU_GLIBC 1
#endif
#endif

/* The PB_CPU_* bits of the features in `want` that this process may use. */
static inline unsigned pb_cpu_has(unsigned want) {
    unsigned f = 0;
#if defined(PB_CPU_GLIBC)
    if ((want & PB_CPU_POPCNT) && CPU_FEATURE_ACTIVE(POPCNT)) f |= PB_CPU_POPCNT;
    if ((want & PB_CPU_SSSE3) && CPU_FEATURE_ACTIVE(SSSE3)) f |= PB_CPU_SSSE3;
    if ((want & PB_CPU_SSE41) && CPU_FEATURE_ACTIVE(SSE4_1)) f |= PB_CPU_SSE41;
    if ((want & PB_CPU_SSE42) && CPU_FEATURE_ACTIVE(SSE4_2)) f |= PB_CPU_SSE42;
    if ((want & PB_CPU_AVX) && CPU_FEATURE_ACTIVE(AVX)) f |= PB_CPU_AVX;
    if ((want & PB_CPU_SHA) && CPU_FEATURE_ACTIVE(SHA)) f |= PB_CPU_SHA;
#elif defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
    if ((want & PB_CPU_POPCNT) && __builtin_cpu_supports("popcnt")) f |= PB_CPU_POPCNT;
    if ((want & PB_CPU_SSSE3) && __builtin_cpu_supports("ssse3")) f |= PB_CPU_SSSE3;
    if ((want & PB_CPU_SSE41) && __builtin_cpu_supports("sse4.1")) f |= PB_CPU_SSE41;
    if ((want & PB_CPU_SSE42) && __builtin_cpu_supports("sse4.2")) f |= PB_CPU_SSE42;
    if ((want & PB_CPU_AVX) && __builtin_cpu_supports("avx")) f |= PB_CPU_AVX;
#if !(defined(__clang__) && __clang_major__ < 15) /* clang 14 does not know "sha" */
    if ((want & PB_CPU_SHA) && __builtin_cpu_supports("sha")) f |= PB_CPU_SHA;
#endif
#else
    (void)want;
#endif
    return f;
}

#endif
