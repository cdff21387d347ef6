/*
 * uuid.c — UUID v7 (session/thread ids: time-ordered) and v4 (machine ids) as lowercase
 * text. Randomness comes from getrandom(), falling back to libcrypto's RAND_bytes.
 */
#include "peri/store.h"

#include <errno.h>
#include <openssl/evp.h>
#include <openssl/rand.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

static bool fill_random(unsigned char *buf, size_t n) {
    size_t got = 0;
    while (got < n) {
        ssize_t r = getrandom(buf + got, n - got, 0);
        if (r < 0) {
            if (errno == EINTR) continue;
            break;
        }
        got += (size_t)r;
    }
    if (got == n) return true;
    return RAND_bytes(buf, (int)n) == 1;
}

static void format_uuid(const unsigned char b[16], char out[PST_ID_LEN]) {
    static const char hex[] = "0123456789abcdef";
    size_t o = 0;
    for (int i = 0; i < 16; i++) {
        if (i == 4 || i == 6 || i == 8 || i == 10) out[o++] = '-';
        out[o++] = hex[b[i] >> 4];
        out[o++] = hex[b[i] & 15];
    }
    out[o] = '\0';
}

bool pst_uuid_v7(char out[PST_ID_LEN]) {
    unsigned char b[16];
    struct timespec ts;
    if (!fill_random(b, sizeof b)) return false;
    clock_gettime(CLOCK_REALTIME, &ts);
    uint64_t ms = (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
    for (int i = 0; i < 6; i++)
        b[i] = (unsigned char)(ms >> (40 - 8 * i));
    b[6] = (unsigned char)(0x70 | (b[6] & 0x0f));
    b[8] = (unsigned char)(0x80 | (b[8] & 0x3f));
    format_uuid(b, out);
    return true;
}

bool pst_uuid_v4(char out[PST_ID_LEN]) {
    unsigned char b[16];
    if (!fill_random(b, sizeof b)) return false;
    b[6] = (unsigned char)(0x40 | (b[6] & 0x0f));
    b[8] = (unsigned char)(0x80 | (b[8] & 0x3f));
    format_uuid(b, out);
    return true;
}

bool pst_uuid_valid(const char *s) {
    if (!s) return false;
    for (int i = 0; i < 36; i++) {
        char c = s[i];
        if (i == 8 || i == 13 || i == 18 || i == 23) {
            if (c != '-') return false;
        } else if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'))) {
            return false;
        }
    }
    return s[36] == '\0';
}

bool pst_workspace_id(const char *machine_id, const char *path, char out[PST_ID_LEN]) {
    if (!machine_id || !path) return false;
    static const char tag[] = "peri.workspace.v1";
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int mdlen = 0;
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    bool ok = ctx && EVP_DigestInit_ex(ctx, EVP_sha256(), NULL) == 1 &&
              EVP_DigestUpdate(ctx, tag, sizeof tag) == 1 && /* NUL-separated fields */
              EVP_DigestUpdate(ctx, machine_id, strlen(machine_id) + 1) == 1 &&
              EVP_DigestUpdate(ctx, path, strlen(path)) == 1 &&
              EVP_DigestFinal_ex(ctx, md, &mdlen) == 1 && mdlen >= 16;
    EVP_MD_CTX_free(ctx);
    if (!ok) return false;
    md[6] = (unsigned char)((md[6] & 0x0f) | 0x80); /* version 8: name-based, custom hash */
    md[8] = (unsigned char)((md[8] & 0x3f) | 0x80); /* RFC 4122 variant */
    format_uuid(md, out);
    return true;
}
