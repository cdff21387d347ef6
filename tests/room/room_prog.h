/*
 * room_prog.h — test-only helpers shared by the room's C tests: a program as a
 * contract request carries it (Base64 text + SHA-256 hex digest), built from bytes or
 * loaded from a fixture file. Header-only (static functions) so each test binary stays
 * one translation unit; needs room/room_int.h (pr_sha256, pr_hex) included first.
 */
#ifndef PERI_TESTS_ROOM_PROG_H
#define PERI_TESTS_ROOM_PROG_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

typedef struct prog {
    char *b64; /* malloc'd Base64 text, NUL-terminated; freed by the test */
    size_t b64_len;
    char digest[65]; /* lowercase hex SHA-256 of the bytes */
} prog;

/* Standard Base64 with padding. Returns a malloc'd NUL-terminated text (caller frees)
 * or NULL on OOM. */
static inline char *room_b64enc(const uint8_t *d, size_t n, size_t *out_len) {
    static const char A[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    char *o = malloc((n + 2) / 3 * 4 + 1);
    if (!o) return NULL;
    size_t k = 0;
    for (size_t i = 0; i < n; i += 3) {
        uint32_t v = (uint32_t)d[i] << 16 | (i + 1 < n ? (uint32_t)d[i + 1] << 8 : 0) |
                     (i + 2 < n ? d[i + 2] : 0);
        o[k++] = A[v >> 18];
        o[k++] = A[(v >> 12) & 63];
        o[k++] = i + 1 < n ? A[(v >> 6) & 63] : '=';
        o[k++] = i + 2 < n ? A[v & 63] : '=';
    }
    o[k] = 0;
    *out_len = k;
    return o;
}

/* Fills p from the program bytes. False on OOM. */
static inline bool room_prog_make(prog *p, const uint8_t *bytes, size_t n) {
    uint8_t d[32];
    pr_sha256(bytes, n, d);
    pr_hex(d, 32, p->digest);
    p->b64 = room_b64enc(bytes, n, &p->b64_len);
    return p->b64 != NULL;
}

/* Fills p from the file dir/name. False when it cannot be read, is empty, or on OOM. */
static inline bool room_prog_load(prog *p, const char *dir, const char *name) {
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "rb");
    if (!f) return false;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *b = n > 0 ? malloc((size_t)n) : NULL;
    bool ok = b && fread(b, 1, (size_t)n, f) == (size_t)n;
    fclose(f);
    ok = ok && room_prog_make(p, b, (size_t)n);
    free(b);
    return ok;
}

#endif
