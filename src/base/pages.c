/*
 * pages.c — a hint that a big buffer may live on transparent huge pages. A buffer of
 * tens of MB written once front to back (a module read from disk, the internal code
 * compiled from it) otherwise takes one page fault per 4 KiB, which on a VM costs about
 * as much as filling the page. The hint changes no byte, never fails the caller, and is
 * a no-op where there is no madvise (wasm32) or THP is off.
 */
#include "peri/base.h"

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
