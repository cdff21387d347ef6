/*
 * room_prog.h — test-only helpers shared by the room's C tests: a program as a
 * contract request carries it (Base64 text + SHA-256 hex digest), built from bytes or
 * loaded from a fixture file. Header-only (static functions) so each test binary stays
 * one translation unit; needs room/room_int.h (pr_sha256, pr_hex, pr_base64_encode) included first.
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

/* Fills p from the program bytes. False on OOM. */
static inline bool room_prog_make(prog *p, const uint8_t *bytes, size_t n) {
    uint8_t d[32];
    pr_sha256(bytes, n, d);
    pr_hex(d, 32, p->digest);
    p->b64 = pr_base64_encode(bytes, n, &p->b64_len);
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
