/* rgb.c — interleaved RGB to grey (stride-3 byte loads: shuffles), and RGBA channel
 * swap to BGRA, over a 640x480 frame, repeated. SIMD benchmark
 * (bench/simd_bench.sh). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define PIX (640 * 480)

static uint8_t rgb[PIX * 3], grey[PIX], rgba[PIX * 4], bgra[PIX * 4];

static void to_grey(uint8_t *restrict g, const uint8_t *restrict p, unsigned n) {
    for (unsigned i = 0; i < n; i++)
        g[i] = (uint8_t)((77u * p[3 * i] + 150u * p[3 * i + 1] + 29u * p[3 * i + 2]) >> 8);
}

static void swap_rb(uint8_t *restrict d, const uint8_t *restrict s, unsigned n) {
    for (unsigned i = 0; i < n; i++) {
        d[4 * i] = s[4 * i + 2];
        d[4 * i + 1] = s[4 * i + 1];
        d[4 * i + 2] = s[4 * i];
        d[4 * i + 3] = s[4 * i + 3];
    }
}

int main(int argc, char **argv) {
    int reps = argc > 1 ? atoi(argv[1]) : 120;
    uint32_t r = 3;
    for (unsigned i = 0; i < PIX * 3; i++) {
        r = r * 1103515245u + 12345u;
        rgb[i] = (uint8_t)(r >> 24);
    }
    for (unsigned i = 0; i < PIX * 4; i++)
        rgba[i] = (uint8_t)(i * 31u + (i >> 9));
    uint32_t h = 2166136261u;
    for (int t = 0; t < reps; t++) {
        to_grey(grey, rgb, PIX);
        swap_rb(bgra, rgba, PIX);
        h = (h ^ grey[(t * 7919u) % PIX] ^ bgra[(t * 104729u) % (PIX * 4)]) * 16777619u;
        rgb[(t * 31u) % (PIX * 3)] ^= (uint8_t)h;
        rgba[(t * 17u) % (PIX * 4)] ^= (uint8_t)(h >> 8);
    }
    for (unsigned i = 0; i < PIX; i += 97)
        h = (h ^ grey[i] ^ bgra[4 * i]) * 16777619u;
    printf("rgb %d %u\n", reps, h);
    return 0;
}
