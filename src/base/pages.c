/*
 * pages.c — page mappings with a purpose beyond malloc's.
 *
 * A hint that a big buffer may live on transparent huge pages. A buffer of tens of MB
 * written once front to back (a module read from disk, the internal code compiled
 * from it) otherwise takes one page fault per 4 KiB, which on a VM costs about as much
 * as filling the page. The hint changes no byte, never fails the caller, and is a
 * no-op where there is no madvise (wasm32) or THP is off.
 *
 * Guarded mappings: the engine's value and frame stacks and the stacks of placement's
 * CLONE_VM children. Invariant: the guards are PROT_NONE from the first instant to the
 * unmap (reserved so, then only the middle opened), so a write that overruns the
 * usable bytes faults whatever the kernel placed next to the mapping.
 */
#include "peri/base.h"

#include <errno.h>
#include <stdint.h>
#if !defined(__wasi__)
#include <sys/mman.h>
#endif

void pb_huge_hint(void *p, size_t n) {
#if !defined(__wasi__) && defined(MADV_HUGEPAGE)
    if (!p || n < PB_HUGE_HINT_MIN) return;
    /* the buffer's whole pages: the mapping holding it is not split around it */
    uintptr_t pg = 4096, a = (uintptr_t)p & ~(pg - 1), e = ((uintptr_t)p + n + pg - 1) & ~(pg - 1);
    (void)madvise((void *)a, e - a, MADV_HUGEPAGE);
#else
    (void)p;
    (void)n;
#endif
}

void *pb_guard_map(size_t below, size_t n, size_t above, int flags) {
#if !defined(__wasi__)
    size_t span = below + n;
    if (n == 0 || span < n || span + above < span) {
        errno = EINVAL;
        return NULL;
    }
    span += above;
    char *m = mmap(NULL, span, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | flags, -1, 0);
    if (m == MAP_FAILED) return NULL;
    if (mprotect(m + below, n, PROT_READ | PROT_WRITE) != 0) {
        int e = errno;
        munmap(m, span);
        errno = e;
        return NULL;
    }
    return m + below;
#else
    (void)below, (void)n, (void)above, (void)flags;
    errno = ENOSYS;
    return NULL;
#endif
}

void pb_guard_unmap(void *p, size_t below, size_t n, size_t above) {
#if !defined(__wasi__)
    if (p) munmap((char *)p - below, below + n + above);
#else
    (void)p, (void)below, (void)n, (void)above;
#endif
}
