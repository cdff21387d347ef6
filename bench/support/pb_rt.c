/*
 * pb_rt.c — libc subset for the import-free benchmark modules: an output buffer
 * behind printf/puts/putchar/fputs, a size-class allocator over memory.grow,
 * fwrite, memcpy/memset/memmove/memcmp, atoi/atol, abort, sqrt.
 *
 * Only what the benchmark programs use; compiled for wasm32 with -nostdlib. The
 * allocator is deliberately simple but O(1) for small blocks, so that alloc.c
 * measures the engine and not a slow malloc.
 */
#include "pb_rt.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------ output buffer */

#define PB_OUT_CAP 8192
static char pb_out[PB_OUT_CAP];
static size_t pb_out_len;

void pb_out_reset(void) {
    pb_out_len = 0;
}

static void pb_putc(char c) {
    if (pb_out_len < PB_OUT_CAP) pb_out[pb_out_len++] = c;
}

int32_t pb_out_hash(void) {
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < pb_out_len; i++)
        h = (h ^ (uint8_t)pb_out[i]) * 16777619u;
    return (int32_t)(h & 0x7fffffffu);
}

static void pb_puts_n(const char *s, size_t n) {
    for (size_t i = 0; i < n; i++)
        pb_putc(s[i]);
}

/* Pads `body` (len n, optional sign) to `width` with zeros or spaces. */
static void pb_emit(const char *sign, const char *body, size_t n, int width, int zero) {
    size_t sl = sign ? strlen(sign) : 0;
    int pad = width - (int)(n + sl);
    if (!zero)
        while (pad-- > 0)
            pb_putc(' ');
    if (sign) pb_puts_n(sign, sl);
    if (zero)
        while (pad-- > 0)
            pb_putc('0');
    pb_puts_n(body, n);
}

static size_t pb_utoa(char *end, uint64_t v, unsigned base) {
    size_t n = 0;
    do {
        *--end = "0123456789abcdef"[v % base];
        v /= base;
        n++;
    } while (v);
    return n;
}

/* %.Nf with correct rounding for the magnitudes the programs print (< 2^53). */
static void pb_fmt_f(double v, int prec, int width, int zero) {
    const char *sign = NULL;
    if (v < 0 || (v == 0 && 1 / v < 0)) {
        sign = "-";
        v = -v;
    }
    double scale = 1;
    for (int i = 0; i < prec; i++)
        scale *= 10;
    uint64_t ip = (uint64_t)v;
    double frac = (v - (double)ip) * scale;
    uint64_t fp = (uint64_t)frac;
    double rem = frac - (double)fp;
    if (rem > 0.5 || (rem == 0.5 && (fp & 1))) fp++;
    if ((double)fp >= scale) {
        fp -= (uint64_t)scale;
        ip++;
    }
    char buf[64], *end = buf + sizeof buf;
    char *p = end;
    if (prec > 0) {
        for (int i = 0; i < prec; i++) {
            *--p = (char)('0' + fp % 10);
            fp /= 10;
        }
        *--p = '.';
    }
    p -= pb_utoa(p, ip, 10);
    pb_emit(sign, p, (size_t)(end - p), width, zero);
}

int vprintf(const char *fmt, va_list ap) {
    size_t start = pb_out_len;
    for (const char *f = fmt; *f; f++) {
        if (*f != '%') {
            pb_putc(*f);
            continue;
        }
        f++;
        int zero = 0, width = 0, prec = -1, lng = 0;
        if (*f == '0') {
            zero = 1;
            f++;
        }
        while (*f >= '0' && *f <= '9')
            width = width * 10 + (*f++ - '0');
        if (*f == '.') {
            prec = 0;
            f++;
            while (*f >= '0' && *f <= '9')
                prec = prec * 10 + (*f++ - '0');
        }
        while (*f == 'l' || *f == 'z') {
            lng += *f == 'l' ? 1 : 2;
            f++;
        }
        char buf[32], *end = buf + sizeof buf;
        switch (*f) {
        case 'd':
        case 'i': {
            int64_t v = lng >= 2 ? va_arg(ap, long long) : lng ? va_arg(ap, long) : va_arg(ap, int);
            uint64_t u = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
            size_t n = pb_utoa(end, u, 10);
            pb_emit(v < 0 ? "-" : NULL, end - n, n, width, zero);
            break;
        }
        case 'u':
        case 'x': {
            uint64_t v = lng >= 2 ? va_arg(ap, unsigned long long)
                         : lng    ? va_arg(ap, unsigned long)
                                  : va_arg(ap, unsigned);
            size_t n = pb_utoa(end, v, *f == 'x' ? 16 : 10);
            pb_emit(NULL, end - n, n, width, zero);
            break;
        }
        case 'f': pb_fmt_f(va_arg(ap, double), prec < 0 ? 6 : prec, width, zero); break;
        case 's': {
            const char *s = va_arg(ap, const char *);
            pb_emit(NULL, s, strlen(s), width, 0);
            break;
        }
        case 'c': pb_putc((char)va_arg(ap, int)); break;
        case '%': pb_putc('%'); break;
        default: pb_putc('?'); break;
        }
    }
    return (int)(pb_out_len - start);
}

int printf(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int n = vprintf(fmt, ap);
    va_end(ap);
    return n;
}

int puts(const char *s) {
    pb_puts_n(s, strlen(s));
    pb_putc('\n');
    return 0;
}

int putchar(int c) {
    pb_putc((char)c);
    return c;
}

/* stderr text is not part of the checked output. */
FILE *const stderr = NULL;
int fputs(const char *s, FILE *f) {
    if (f != stderr) pb_puts_n(s, strlen(s));
    return 0;
}

size_t fwrite(const void *p, size_t size, size_t n, FILE *f) {
    if (f != stderr) pb_puts_n(p, size * n);
    return n;
}

_Noreturn void abort(void) {
    __builtin_trap();
}

int32_t pb_run_main(int (*main_fn)(int, char **), const char *prog, int n, const int32_t *a) {
    char store[8][16];
    char *argv[10];
    argv[0] = (char *)prog;
    if (n > 8) n = 8;
    for (int i = 0; i < n; i++) {
        char *end = store[i] + 15, *p = end;
        *end = 0;
        uint32_t u = a[i] < 0 ? 0u - (uint32_t)a[i] : (uint32_t)a[i];
        p -= pb_utoa(p, u, 10);
        if (a[i] < 0) *--p = '-';
        argv[i + 1] = p;
    }
    argv[n + 1] = NULL;
    pb_out_reset();
    main_fn(n + 1, argv);
    return pb_out_hash();
}

/* ------------------------------------------------------------ strings, numbers */

void *memcpy(void *restrict d, const void *restrict s, size_t n) {
    unsigned char *dp = d;
    const unsigned char *sp = s;
    while (n--)
        *dp++ = *sp++;
    return d;
}

void *memmove(void *d, const void *s, size_t n) {
    unsigned char *dp = d;
    const unsigned char *sp = s;
    if (dp < sp)
        while (n--)
            *dp++ = *sp++;
    else
        while (n--)
            dp[n] = sp[n];
    return d;
}

void *memset(void *d, int c, size_t n) {
    unsigned char *dp = d;
    while (n--)
        *dp++ = (unsigned char)c;
    return d;
}

int memcmp(const void *a, const void *b, size_t n) {
    const unsigned char *x = a, *y = b;
    for (; n; n--, x++, y++)
        if (*x != *y) return *x - *y;
    return 0;
}

size_t strlen(const char *s) {
    size_t n = 0;
    while (s[n])
        n++;
    return n;
}

long atol(const char *s) {
    long v = 0, neg = 0;
    while (*s == ' ')
        s++;
    if (*s == '-' || *s == '+') neg = *s++ == '-';
    while (*s >= '0' && *s <= '9')
        v = v * 10 + (*s++ - '0');
    return neg ? -v : v;
}

int atoi(const char *s) {
    return (int)atol(s);
}

double sqrt(double x) {
    return __builtin_sqrt(x);
}

/* ------------------------------------------------------------ allocator */

/*
 * Blocks carry an 8-byte header holding their usable size. Small sizes (up to
 * 1 KiB, in 16-byte classes) come from per-class free lists refilled by bumping;
 * larger blocks go to one first-fit list. Memory grows with memory.grow.
 */
#define PB_CLASS  16
#define PB_NCLASS 64
extern unsigned char __heap_base;
static uintptr_t pb_brk, pb_end;
static void *pb_free_small[PB_NCLASS + 1];
static void *pb_free_big;

static void *pb_bump(size_t total) {
    if (!pb_brk) pb_brk = pb_end = ((uintptr_t)&__heap_base + 15) & ~(uintptr_t)15;
    if (pb_end - pb_brk < total) {
        size_t need = total - (pb_end - pb_brk);
        size_t pages = (need + 65535) / 65536;
        uintptr_t cur = (uintptr_t)__builtin_wasm_memory_size(0) * 65536;
        if (__builtin_wasm_memory_grow(0, pages) == (size_t)-1) return NULL;
        if (pb_end < cur) pb_brk = pb_end = cur; /* someone else owns up to cur */
        pb_end = cur + pages * 65536;
        if (pb_end - pb_brk < total) return NULL;
    }
    void *p = (void *)pb_brk;
    pb_brk += total;
    return p;
}

void *malloc(size_t n) {
    size_t sz = (n + PB_CLASS - 1) & ~(size_t)(PB_CLASS - 1);
    if (sz == 0) sz = PB_CLASS;
    if (sz <= PB_CLASS * PB_NCLASS) {
        size_t c = sz / PB_CLASS;
        void *b = pb_free_small[c];
        if (b) {
            pb_free_small[c] = *(void **)b;
            return b;
        }
    } else {
        void **link = &pb_free_big;
        for (void *b = pb_free_big; b; link = (void **)b, b = *(void **)b)
            if (((size_t *)b)[-2] >= sz) {
                *link = *(void **)b;
                return b;
            }
    }
    unsigned char *p = pb_bump(sz + 16);
    if (!p) return NULL;
    ((size_t *)(p + 16))[-2] = sz;
    return p + 16;
}

void free(void *p) {
    if (!p) return;
    size_t sz = ((size_t *)p)[-2];
    if (sz <= PB_CLASS * PB_NCLASS) {
        size_t c = sz / PB_CLASS;
        *(void **)p = pb_free_small[c];
        pb_free_small[c] = p;
    } else {
        *(void **)p = pb_free_big;
        pb_free_big = p;
    }
}
