/*
 * sha256.c — SHA-256 (FIPS 180-4), incremental and one-shot, and lower-case hex.
 * Written here so that nothing below the agent host needs libcrypto: loading OpenSSL
 * costs a small runtime's whole start-up (docs/wasi.md, "Cold start"), and the
 * WebAssembly form of the agent host has no libcrypto at all. The room hashes programs
 * with it, the store's wire client derives SCRAM keys with it (hmac.c).
 *
 * Owns no memory: a pb_sha256_ctx is a plain value the caller owns. Invariants of a
 * context between calls: 0 <= nbuf < 64 bytes wait in buf; len counts every byte fed.
 * On x86-64 CPUs with the SHA extensions the compression runs on them (chosen at run
 * time); elsewhere (and on wasm32) the portable rounds. Both are checked against the
 * standard's test vectors and against libcrypto (tests/base/test_sha256.c).
 */
#include "peri/base.h"

#include "cpu.h"

#include <string.h>

/* clang before 15 does not know the "sha" feature of __builtin_cpu_supports, cpu.h's
 * fallback (the fuzz build uses clang-14): the portable code there. PB_SHA256_PORTABLE builds only
 * the portable rounds (the test that checks them on a CPU with the SHA extensions). */
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__)) &&                            \
    !(defined(__clang__) && __clang_major__ < 15) && !defined(PB_SHA256_PORTABLE)
#include <immintrin.h>
#define PB_SHA_NI 1
#endif

static const uint32_t K[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2};

static inline uint32_t ror(uint32_t x, int n) {
    return (x >> n) | (x << (32 - n));
}

static void blocks_portable(uint32_t h[8], const uint8_t *p, size_t nblocks) {
    for (; nblocks--; p += 64) {
        uint32_t w[64];
        for (int i = 0; i < 16; i++)
            w[i] = (uint32_t)p[4 * i] << 24 | (uint32_t)p[4 * i + 1] << 16 |
                   (uint32_t)p[4 * i + 2] << 8 | p[4 * i + 3];
        for (int i = 16; i < 64; i++) {
            uint32_t s0 = ror(w[i - 15], 7) ^ ror(w[i - 15], 18) ^ (w[i - 15] >> 3);
            uint32_t s1 = ror(w[i - 2], 17) ^ ror(w[i - 2], 19) ^ (w[i - 2] >> 10);
            w[i] = w[i - 16] + s0 + w[i - 7] + s1;
        }
        uint32_t a = h[0], b = h[1], c = h[2], d = h[3], e = h[4], f = h[5], g = h[6], hh = h[7];
        for (int i = 0; i < 64; i++) {
            uint32_t t1 =
                hh + (ror(e, 6) ^ ror(e, 11) ^ ror(e, 25)) + ((e & f) ^ (~e & g)) + K[i] + w[i];
            uint32_t t2 = (ror(a, 2) ^ ror(a, 13) ^ ror(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
            hh = g;
            g = f;
            f = e;
            e = d + t1;
            d = c;
            c = b;
            b = a;
            a = t1 + t2;
        }
        h[0] += a, h[1] += b, h[2] += c, h[3] += d, h[4] += e, h[5] += f, h[6] += g, h[7] += hh;
    }
}

#ifdef PB_SHA_NI
/* The SHA-NI rounds: state in (ABEF, CDGH) order, four rounds per sha256rnds2 pair. */
__attribute__((target("sha,sse4.1"))) static void blocks_ni(uint32_t h[8], const uint8_t *p,
                                                            size_t nblocks) {
    const __m128i swap = _mm_set_epi64x(0x0c0d0e0f08090a0bll, 0x0405060700010203ll);
    __m128i t = _mm_loadu_si128((const __m128i *)(const void *)h);        /* A B C D */
    __m128i s1 = _mm_loadu_si128((const __m128i *)(const void *)(h + 4)); /* E F G H */
    t = _mm_shuffle_epi32(t, 0xB1);                                       /* B A D C */
    s1 = _mm_shuffle_epi32(s1, 0x1B);                                     /* H G F E */
    __m128i s0 = _mm_alignr_epi8(t, s1, 8);                               /* A B E F */
    s1 = _mm_blend_epi16(s1, t, 0xF0);                                    /* C D G H */
    for (; nblocks--; p += 64) {
        __m128i a0 = s0, c0 = s1, m[4];
        for (int i = 0; i < 4; i++)
            m[i] = _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)(const void *)(p + 16 * i)),
                                    swap);
        for (int i = 0; i < 16; i++) {
            __m128i cur = m[i & 3];
            __m128i k =
                _mm_add_epi32(cur, _mm_loadu_si128((const __m128i *)(const void *)(K + 4 * i)));
            s1 = _mm_sha256rnds2_epu32(s1, s0, k);
            s0 = _mm_sha256rnds2_epu32(s0, s1, _mm_shuffle_epi32(k, 0x0E));
            if (i < 12) { /* the message schedule for block i + 4 */
                __m128i nx = _mm_sha256msg1_epu32(m[i & 3], m[(i + 1) & 3]);
                nx = _mm_add_epi32(nx, _mm_alignr_epi8(m[(i + 3) & 3], m[(i + 2) & 3], 4));
                m[i & 3] = _mm_sha256msg2_epu32(nx, m[(i + 3) & 3]);
            }
        }
        s0 = _mm_add_epi32(s0, a0);
        s1 = _mm_add_epi32(s1, c0);
    }
    t = _mm_shuffle_epi32(s0, 0x1B);   /* F E B A */
    s1 = _mm_shuffle_epi32(s1, 0xB1);  /* D C H G */
    s0 = _mm_blend_epi16(t, s1, 0xF0); /* D C B A */
    s1 = _mm_alignr_epi8(s1, t, 8);    /* H G F E */
    _mm_storeu_si128((__m128i *)(void *)h, s0);
    _mm_storeu_si128((__m128i *)(void *)(h + 4), s1);
}
#endif

static void blocks(uint32_t h[8], const uint8_t *p, size_t nblocks) {
#ifdef PB_SHA_NI
    if (pb_cpu_has(PB_CPU_SHA | PB_CPU_SSE41) == (PB_CPU_SHA | PB_CPU_SSE41)) {
        blocks_ni(h, p, nblocks);
        return;
    }
#endif
    blocks_portable(h, p, nblocks);
}

void pb_sha256_init(pb_sha256_ctx *c) {
    static const uint32_t IV[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                                   0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
    memcpy(c->h, IV, sizeof IV);
    c->len = 0;
    c->nbuf = 0;
}

void pb_sha256_update(pb_sha256_ctx *c, const void *data, size_t n) {
    const uint8_t *p = data;
    if (!n) return;
    c->len += (uint64_t)n;
    if (c->nbuf) { /* complete the waiting block first */
        size_t take = 64 - c->nbuf < n ? 64 - c->nbuf : n;
        memcpy(c->buf + c->nbuf, p, take);
        c->nbuf += take, p += take, n -= take;
        if (c->nbuf < 64) return;
        blocks(c->h, c->buf, 1);
        c->nbuf = 0;
    }
    size_t full = n / 64;
    if (full) blocks(c->h, p, full);
    p += full * 64, n -= full * 64;
    if (n) memcpy(c->buf, p, n);
    c->nbuf = n;
}

void pb_sha256_final(pb_sha256_ctx *c, uint8_t digest[PB_SHA256_LEN]) {
    uint8_t tail[128] = {0};
    size_t rest = c->nbuf;
    if (rest) memcpy(tail, c->buf, rest);
    tail[rest] = 0x80;
    size_t tl = rest + 9 <= 64 ? 64 : 128;
    uint64_t bits = c->len * 8;
    for (int i = 0; i < 8; i++)
        tail[tl - 1 - i] = (uint8_t)(bits >> (8 * i));
    blocks(c->h, tail, tl / 64);
    for (int i = 0; i < 8; i++) {
        digest[4 * i] = (uint8_t)(c->h[i] >> 24);
        digest[4 * i + 1] = (uint8_t)(c->h[i] >> 16);
        digest[4 * i + 2] = (uint8_t)(c->h[i] >> 8);
        digest[4 * i + 3] = (uint8_t)c->h[i];
    }
    pb_sha256_init(c); /* no digest state left behind; the context is reusable */
}

void pb_sha256(const void *data, size_t n, uint8_t digest[PB_SHA256_LEN]) {
    pb_sha256_ctx c;
    pb_sha256_init(&c);
    pb_sha256_update(&c, data, n);
    pb_sha256_final(&c, digest);
}

void pb_hex(const uint8_t *in, size_t n, char *out) {
    static const char HEX[] = "0123456789abcdef";
    for (size_t i = 0; i < n; i++) {
        out[2 * i] = HEX[in[i] >> 4];
        out[2 * i + 1] = HEX[in[i] & 15];
    }
    out[2 * n] = 0;
}
