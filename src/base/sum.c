/* Integrity checksum for the engine's own cache files (see base.h, "Integrity sum").
 *
 * Eight CRC-32C lanes (Castagnoli polynomial, reflected 0x82F63B78): the input is cut
 * into 64-byte stripes and lane k takes the k-th 8-byte word of every stripe, so the
 * eight chains are independent and run at the CPU's one-CRC-per-cycle rate. The last,
 * partial stripe is padded with zeros and every lane then takes the total length, so
 * inputs that differ only by trailing zeros or by length differ. Each lane detects any
 * error confined to 32 consecutive bits of its stream, so any changed byte is caught;
 * the 256 bits together make an accidental match (random damage) negligible.
 *
 * It is not a cryptographic hash, and it does not need to be: the sum is stored in the
 * file it checks, so whoever can write the file can write a matching sum whatever the
 * function (a SHA-256 stored beside the bytes never protected against that either). It
 * guards against damage: torn or truncated writes, bit rot, a file of another kind.
 *
 * x86-64 with SSE4.2: the crc32 instruction (chosen at run time); elsewhere bit by bit
 * (slow, but it gives the same values; tests/base/test_sum.c checks both).
 */
#include "peri/base.h"

#include "cpu.h"

#include <string.h>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__)) && !defined(PB_SUM_PORTABLE)
#include <immintrin.h>
#define PB_SUM_HW 1
#endif

static uint32_t crc_portable(uint32_t c, uint64_t w) {
    for (int i = 0; i < 64; i++)
        c = (c >> 1) ^ (0x82F63B78u & (0u - ((c ^ (uint32_t)(w >> i)) & 1u)));
    return c;
}

static uint64_t word_at(const uint8_t *p) {
    uint64_t w = 0;
    for (int i = 7; i >= 0; i--)
        w = (w << 8) | p[i]; /* little-endian, any host */
    return w;
}

static void stripes_portable(uint32_t lane[PB_SUM_LANES], const uint8_t *p, size_t n) {
    for (size_t s = 0; s < n; s++, p += PB_SUM_STRIPE)
        for (int k = 0; k < PB_SUM_LANES; k++)
            lane[k] = crc_portable(lane[k], word_at(p + 8 * k));
}

#ifdef PB_SUM_HW
__attribute__((target("sse4.2"))) static void stripes_hw(uint32_t lane[PB_SUM_LANES],
                                                         const uint8_t *p, size_t n) {
    uint64_t a = lane[0], b = lane[1], c = lane[2], d = lane[3];
    uint64_t e = lane[4], f = lane[5], g = lane[6], h = lane[7];
    for (size_t s = 0; s < n; s++, p += PB_SUM_STRIPE) {
        uint64_t w[PB_SUM_LANES];
        memcpy(w, p, sizeof w); /* x86-64 is little-endian */
        a = _mm_crc32_u64(a, w[0]);
        b = _mm_crc32_u64(b, w[1]);
        c = _mm_crc32_u64(c, w[2]);
        d = _mm_crc32_u64(d, w[3]);
        e = _mm_crc32_u64(e, w[4]);
        f = _mm_crc32_u64(f, w[5]);
        g = _mm_crc32_u64(g, w[6]);
        h = _mm_crc32_u64(h, w[7]);
    }
    lane[0] = (uint32_t)a, lane[1] = (uint32_t)b, lane[2] = (uint32_t)c, lane[3] = (uint32_t)d;
    lane[4] = (uint32_t)e, lane[5] = (uint32_t)f, lane[6] = (uint32_t)g, lane[7] = (uint32_t)h;
}
#endif

static void stripes(pb_sum_ctx *c, const uint8_t *p, size_t n) {
#ifdef PB_SUM_HW
    if (!c->portable && pb_cpu_has(PB_CPU_SSE42)) {
        stripes_hw(c->lane, p, n);
        return;
    }
#endif
    stripes_portable(c->lane, p, n);
}

static void sum_init(pb_sum_ctx *c, bool portable) {
    for (int k = 0; k < PB_SUM_LANES; k++)
        c->lane[k] = ~(uint32_t)k; /* lanes start apart */
    c->len = 0;
    c->nbuf = 0;
    c->portable = portable;
}

void pb_sum_init(pb_sum_ctx *c) {
    sum_init(c, false);
}

void pb_sum_init_portable(pb_sum_ctx *c) {
    sum_init(c, true);
}

void pb_sum_update(pb_sum_ctx *c, const void *data, size_t n) {
    const uint8_t *p = data;
    c->len += n;
    if (c->nbuf) {
        size_t take = PB_SUM_STRIPE - c->nbuf < n ? PB_SUM_STRIPE - c->nbuf : n;
        memcpy(c->buf + c->nbuf, p, take);
        c->nbuf += take;
        p += take;
        n -= take;
        if (c->nbuf < PB_SUM_STRIPE) return;
        stripes(c, c->buf, 1);
        c->nbuf = 0;
    }
    stripes(c, p, n / PB_SUM_STRIPE);
    p += n / PB_SUM_STRIPE * PB_SUM_STRIPE;
    c->nbuf = n % PB_SUM_STRIPE;
    if (c->nbuf) memcpy(c->buf, p, c->nbuf);
}

void pb_sum_final(pb_sum_ctx *c, uint8_t out[PB_SUM_LEN]) {
    if (c->nbuf) { /* the tail, zero-padded to a stripe (the length below tells it apart) */
        uint8_t last[PB_SUM_STRIPE] = {0};
        memcpy(last, c->buf, c->nbuf);
        stripes(c, last, 1);
    }
    uint8_t len[PB_SUM_STRIPE];
    for (int k = 0; k < PB_SUM_LANES; k++)
        for (int i = 0; i < 8; i++)
            len[8 * k + i] = (uint8_t)(c->len >> (8 * i));
    stripes(c, len, 1);
    for (int k = 0; k < PB_SUM_LANES; k++)
        for (int i = 0; i < 4; i++)
            out[4 * k + i] = (uint8_t)(~c->lane[k] >> (8 * i));
    sum_init(c, c->portable);
}

void pb_sum(const void *data, size_t n, uint8_t out[PB_SUM_LEN]) {
    pb_sum_ctx c;
    pb_sum_init(&c);
    pb_sum_update(&c, data, n);
    pb_sum_final(&c, out);
}
