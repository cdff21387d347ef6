/*
 * sha256.c — SHA-256 through OpenSSL libcrypto (EVP), and lower-case hex.
 */
#include "room_int.h"

#include <openssl/evp.h>

bool pr_sha256(const void *data, size_t n, uint8_t digest[32]) {
    unsigned int len = 0;
    return EVP_Digest(data, n, digest, &len, EVP_sha256(), NULL) == 1 && len == 32;
}

void pr_hex(const uint8_t *in, size_t n, char *out) {
    static const char HEX[] = "0123456789abcdef";
    for (size_t i = 0; i < n; i++) {
        out[2 * i] = HEX[in[i] >> 4];
        out[2 * i + 1] = HEX[in[i] & 15];
    }
    out[2 * n] = 0;
}
