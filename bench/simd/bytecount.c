/* bytecount.c — counts newlines and a byte class (digits) in a 1 MiB buffer and
 * lower-cases ASCII letters in place, repeated: i8x16 compares, selects and
 * widening reductions. SIMD benchmark (bench/simd_bench.sh). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define LEN (1u << 20)

static uint8_t buf[LEN], out[LEN];

static unsigned count_nl(const uint8_t *p, unsigned n) {
    unsigned c = 0;
    for (unsigned i = 0; i < n; i++)
        c += p[i] == '\n';
    return c;
}

static unsigned count_digits(const uint8_t *p, unsigned n) {
    unsigned c = 0;
    for (unsigned i = 0; i < n; i++)
        c += (uint8_t)(p[i] - '0') < 10;
    return c;
}

static void lower(uint8_t *restrict d, const uint8_t *restrict s, unsigned n) {
    for (unsigned i = 0; i < n; i++) {
        uint8_t ch = s[i];
        d[i] = (uint8_t)(ch - 'A') < 26 ? ch + 32 : ch;
    }
}

int main(int argc, char **argv) {
    int reps = argc > 1 ? atoi(argv[1]) : 150;
    uint32_t r = 99;
    for (unsigned i = 0; i < LEN; i++) {
        r = r * 1103515245u + 12345u;
        unsigned v = (r >> 16) & 127;
        buf[i] = (uint8_t)(v < 3 ? '\n' : v < 32 ? ' ' + v : v);
    }
    unsigned long long total = 0;
    for (int t = 0; t < reps; t++) {
        total += count_nl(buf, LEN);
        total += count_digits(buf, LEN) * 3ull;
        lower(out, buf, LEN);
        total += out[(t * 7919u) % LEN];
        buf[(t * 104729u) % LEN] ^= 0x20;
    }
    printf("bytecount %d %llu\n", reps, total);
    return 0;
}
