/* lanehash.c — a four-lane multiplicative hash over a 256 KiB buffer (each lane an
 * independent u32 accumulator: xor, multiply, rotate, as xxHash's lanes), and an
 * adler-style pair of sums; i32x4 mul/shifts/adds. SIMD benchmark
 * (bench/simd_bench.sh). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define WORDS (1u << 16)

static uint32_t data[WORDS];

static void lanes(uint32_t *restrict acc, const uint32_t *restrict p, unsigned n) {
    uint32_t h[8];
    memcpy(h, acc, sizeof h);
    for (unsigned i = 0; i < n; i += 8)
        for (unsigned j = 0; j < 8; j++) {
            uint32_t v = h[j] + p[i + j] * 0x85EBCA77u;
            v = (v << 13) | (v >> 19);
            h[j] = v * 0x9E3779B1u;
        }
    memcpy(acc, h, sizeof h);
}

static uint32_t sums(const uint32_t *p, unsigned n) {
    uint32_t a = 0, b = 0;
    for (unsigned i = 0; i < n; i++) {
        a += p[i] & 0xFFFF;
        b += p[i] >> 16;
    }
    return a ^ (b << 7);
}

int main(int argc, char **argv) {
    int reps = argc > 1 ? atoi(argv[1]) : 300;
    uint32_t r = 5;
    for (unsigned i = 0; i < WORDS; i++) {
        r = r * 1103515245u + 12345u;
        data[i] = r;
    }
    uint32_t acc[8] = {1, 2, 3, 4, 5, 6, 7, 8}, s = 0;
    for (int t = 0; t < reps; t++) {
        lanes(acc, data, WORDS);
        s += sums(data, WORDS);
        data[t % WORDS] ^= acc[t % 8];
    }
    printf("lanehash %d %u %u %u %u\n", reps, acc[0] ^ acc[4], acc[1] ^ acc[5], acc[2] ^ acc[6],
           acc[3] ^ s);
    return 0;
}
