/*
 * hmac.c — HMAC-SHA-256 (RFC 2104), PBKDF2-HMAC-SHA-256 (RFC 8018), a constant-time
 * comparison and a wipe that the compiler cannot drop: what SCRAM-SHA-256 needs, without
 * libcrypto (the WebAssembly form of the agent host has none).
 *
 * Owns no memory. An HMAC context holds the keyed inner and outer SHA-256 states, not
 * the key; the padded key blocks live on the stack only while a key is set and are
 * wiped before returning. PBKDF2 keys HMAC once and copies the two keyed states for each
 * of its iterations.
 */
#include "peri/base.h"

#include <string.h>

void pb_wipe(void *p, size_t n) {
    volatile uint8_t *v = p; /* volatile stores: not removable as dead */
    while (n--)
        *v++ = 0;
}

bool pb_ct_equal(const void *a, const void *b, size_t n) {
    const volatile uint8_t *x = a, *y = b;
    uint8_t d = 0;
    for (size_t i = 0; i < n; i++)
        d |= (uint8_t)(x[i] ^ y[i]);
    return d == 0;
}

void pb_hmac_sha256_init(pb_hmac_sha256_ctx *c, const void *key, size_t keylen) {
    uint8_t block[PB_SHA256_BLOCK] = {0};
    if (keylen > PB_SHA256_BLOCK)
        pb_sha256(key, keylen, block); /* a long key is replaced by its digest */
    else if (keylen)
        memcpy(block, key, keylen);
    for (size_t i = 0; i < sizeof block; i++)
        block[i] ^= 0x36;
    pb_sha256_init(&c->inner);
    pb_sha256_update(&c->inner, block, sizeof block);
    for (size_t i = 0; i < sizeof block; i++)
        block[i] ^= 0x36 ^ 0x5c;
    pb_sha256_init(&c->outer);
    pb_sha256_update(&c->outer, block, sizeof block);
    pb_wipe(block, sizeof block);
}

void pb_hmac_sha256_update(pb_hmac_sha256_ctx *c, const void *data, size_t n) {
    pb_sha256_update(&c->inner, data, n);
}

void pb_hmac_sha256_final(pb_hmac_sha256_ctx *c, uint8_t mac[PB_SHA256_LEN]) {
    uint8_t in[PB_SHA256_LEN];
    pb_sha256_final(&c->inner, in);
    pb_sha256_update(&c->outer, in, sizeof in);
    pb_sha256_final(&c->outer, mac);
    pb_wipe(in, sizeof in);
    pb_wipe(c, sizeof *c); /* both states were keyed: no trace of the key is left */
}

void pb_hmac_sha256(const void *key, size_t keylen, const void *data, size_t n,
                    uint8_t mac[PB_SHA256_LEN]) {
    pb_hmac_sha256_ctx c;
    pb_hmac_sha256_init(&c, key, keylen);
    pb_hmac_sha256_update(&c, data, n);
    pb_hmac_sha256_final(&c, mac);
}

bool pb_pbkdf2_sha256(const void *password, size_t pwlen, const void *salt, size_t saltlen,
                      uint32_t iterations, uint8_t *out, size_t outlen) {
    /* RFC 8018 limits the output to (2^32 - 1) blocks; iterations must be at least 1 */
    if (iterations == 0 || (uint64_t)outlen > (uint64_t)UINT32_MAX * PB_SHA256_LEN) return false;
    pb_hmac_sha256_ctx keyed, c;
    pb_hmac_sha256_init(&keyed, password, pwlen);
    uint8_t u[PB_SHA256_LEN], t[PB_SHA256_LEN];
    for (uint32_t block = 1; outlen; block++) {
        uint8_t be[4] = {(uint8_t)(block >> 24), (uint8_t)(block >> 16), (uint8_t)(block >> 8),
                         (uint8_t)block};
        c = keyed;
        pb_hmac_sha256_update(&c, salt, saltlen);
        pb_hmac_sha256_update(&c, be, sizeof be);
        pb_hmac_sha256_final(&c, u);
        memcpy(t, u, sizeof t);
        for (uint32_t i = 1; i < iterations; i++) {
            c = keyed;
            pb_hmac_sha256_update(&c, u, sizeof u);
            pb_hmac_sha256_final(&c, u);
            for (size_t k = 0; k < sizeof t; k++)
                t[k] ^= u[k];
        }
        size_t take = outlen < sizeof t ? outlen : sizeof t;
        memcpy(out, t, take);
        out += take, outlen -= take;
    }
    pb_wipe(&keyed, sizeof keyed);
    pb_wipe(u, sizeof u);
    pb_wipe(t, sizeof t);
    return true;
}
