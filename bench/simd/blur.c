/* blur.c — 3x3 binomial blur ([1 2 1] vertically, then horizontally, in 16-bit
 * sums) of a 512x512 grey image, repeated; prints a checksum. SIMD benchmark
 * (bench/simd_bench.sh): auto-vectorised by clang -msimd128 (u8 -> u16 extends,
 * shifts, narrows) and by gcc -O2. The horizontal pass takes the row three times
 * as separate read-only pointers so that clang-14 vectorises it. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define W 512
#define H 512

static uint8_t img[H][W], tmp[H][W];
static uint16_t vs[W];

static void vert(uint16_t *restrict v, const uint8_t *restrict a, const uint8_t *restrict b,
                 const uint8_t *restrict c) {
    for (int x = 0; x < W; x++)
        v[x] = (uint16_t)(a[x] + 2 * b[x] + c[x]);
}

static void horiz(uint8_t *restrict d, const uint16_t *restrict v0, const uint16_t *restrict v1,
                  const uint16_t *restrict v2) {
    for (int x = 0; x < W - 2; x++)
        d[x] = (uint8_t)((v0[x] + 2 * v1[x] + v2[x]) >> 4);
}

static void blur(uint8_t (*dst)[W], uint8_t (*src)[W]) {
    for (int y = 1; y < H - 1; y++) {
        vert(vs, src[y - 1], src[y], src[y + 1]);
        horiz(dst[y] + 1, vs, vs + 1, vs + 2);
    }
}

int main(int argc, char **argv) {
    int passes = argc > 1 ? atoi(argv[1]) : 150;
    uint32_t r = 12345;
    for (int y = 0; y < H; y++)
        for (int x = 0; x < W; x++) {
            r = r * 1103515245u + 12345u;
            img[y][x] = (uint8_t)(r >> 24);
        }
    for (int p = 0; p < passes; p++) {
        blur(tmp, img);
        blur(img, tmp);
    }
    uint32_t h = 2166136261u;
    for (int y = 0; y < H; y++)
        for (int x = 0; x < W; x++)
            h = (h ^ img[y][x]) * 16777619u;
    printf("blur %d %u\n", passes, h);
    return 0;
}
