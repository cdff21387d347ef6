/*
 * room_prog.h — test-only helpers shared by the room's C tests: a program as a
 * contract request carries it (Base64 text + SHA-256 hex digest), built from bytes or
 * loaded from a fixture file. Header-only (static functions) so each test binary stays
 * one translation unit; needs room/room_int.h (pr__sha256, pr__hex, pr__base64_encode) included
 * first. Also the execution tier a test runs under: `--engine auto|interp|jit` on the test's
 * command line (room_engine_args) sets the tier of every host the test makes through room_host_new
 * whose config leaves the tier at the default; hosts that name a tier keep it. CTest runs the
 * engine-heavy room suites once per forced tier.
 */
#ifndef PERI_TESTS_ROOM_PROG_H
#define PERI_TESTS_ROOM_PROG_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct prog {
    char *b64; /* malloc'd Base64 text, NUL-terminated; freed by the test */
    size_t b64_len;
    char digest[65]; /* lowercase hex SHA-256 of the bytes */
} prog;

/* Fills p from the program bytes. False on OOM. */
static inline bool room_prog_make(prog *p, const uint8_t *bytes, size_t n) {
    uint8_t d[32];
    pr__sha256(bytes, n, d);
    pr__hex(d, 32, p->digest);
    p->b64 = pr__base64_encode(bytes, n, &p->b64_len);
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

/* The forced tier: -1 none (the library's default). */
static inline int *room_engine_slot(void) {
    static int engine = -1;
    return &engine;
}

/* Reads `--engine E` from a test's arguments. False (and a message) for anything else. */
static inline bool room_engine_args(int argc, char **argv) {
    if (argc == 1) return true;
    if (argc == 3 && strcmp(argv[1], "--engine") == 0) {
        const char *e = argv[2];
        int v = !strcmp(e, "auto")     ? PW_ENGINE_AUTO
                : !strcmp(e, "interp") ? PW_ENGINE_INTERP
                : !strcmp(e, "jit")    ? PW_ENGINE_JIT
                                       : -1;
        if (v >= 0) {
            *room_engine_slot() = v;
            printf("room tests: engine %s\n", e);
            return true;
        }
    }
    fprintf(stderr, "usage: %s [--engine auto|interp|jit]\n", argv[0]);
    return false;
}

/* pr_host_new with the forced tier (cfg may be NULL). */
static inline pr_host *room_host_new(const pr_host_config *cfg, pr_error *e) {
    pr_host_config c = {0};
    if (cfg) c = *cfg;
    if (*room_engine_slot() >= 0 && c.engine == PW_ENGINE_AUTO) c.engine = *room_engine_slot();
    return pr_host_new(&c, e);
}

#endif
