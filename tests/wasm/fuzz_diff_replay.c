/*
 * fuzz_diff_replay.c — the differential fuzzer (fuzz/fuzz_diff.c: the interpreter
 * against the JIT with guard pages, explicit bounds checks and SSE2-only SIMD) without
 * libFuzzer, for CTest (wasm.fuzz_diff): a bounded, reproducible run.
 *
 *   fuzz_diff_replay MUTANTS SEED DIR...
 *
 * Every *.wasm file of each DIR (in name order) goes through LLVMFuzzerTestOneInput
 * as it is, then, when it is a valid module, MUTANTS times changed by one to three byte edits drawn
 * from a PRNG seeded with SEED and the file's name (three in four mutants inside the code section):
 * a random byte, an "interesting" value (0, 0x7f, 0x80, 0xff, 0x40, 0x3f), a byte plus or minus
 * one. Mutants that no longer validate are skipped by the target; those that do run with changed
 * constants, offsets, alignments and opcodes. A difference aborts with the mode and call on stderr
 * (the file and mutant number are printed before each input, so a failure names its input); a DIR
 * without one valid module fails (it would compare nothing); exit 0 with the counts otherwise. Same
 * SEED, same inputs.
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "peri/wasm.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static uint64_t next(uint64_t *s) { /* xorshift64* */
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    return *s * 2685821657736338717ull;
}

static uint8_t *read_all(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    size_t cap = 1 << 16, n = 0;
    uint8_t *b = malloc(cap);
    while (b) {
        size_t k = fread(b + n, 1, cap - n, f);
        n += k;
        if (n < cap) break;
        uint8_t *nb = realloc(b, cap * 2);
        if (!nb) {
            free(b);
            b = NULL;
            break;
        }
        b = nb;
        cap *= 2;
    }
    fclose(f);
    *len = n;
    return b;
}

static int by_name(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The *.wasm names of dir, sorted; *n of them. Caller frees each and the array. */
static char **wasm_files(const char *dir, size_t *n) {
    *n = 0;
    DIR *d = opendir(dir);
    if (!d) return NULL;
    size_t cap = 64;
    char **v = malloc(cap * sizeof *v);
    struct dirent *e;
    while (v && (e = readdir(d))) {
        size_t l = strlen(e->d_name);
        if (l < 6 || strcmp(e->d_name + l - 5, ".wasm") != 0) continue;
        if (*n == cap) {
            char **nv = realloc(v, 2 * cap * sizeof *v);
            if (!nv) break;
            v = nv;
            cap *= 2;
        }
        if (!(v[*n] = strdup(e->d_name))) break;
        (*n)++;
    }
    closedir(d);
    if (v) qsort(v, *n, sizeof *v, by_name);
    return v;
}

/* The byte range [*lo, *hi) of the code section's contents; the whole module past the
 * header when there is none or the sections do not parse. */
static void code_range(const uint8_t *b, size_t len, size_t *lo, size_t *hi) {
    *lo = 8;
    *hi = len;
    size_t p = 8;
    while (p < len) {
        uint8_t id = b[p++];
        uint64_t size = 0;
        int shift = 0;
        while (p < len && shift < 35) {
            size |= (uint64_t)(b[p] & 0x7f) << shift;
            shift += 7;
            if (!(b[p++] & 0x80)) break;
        }
        if (size > len - p) return;
        if (id == 10 && size > 0) {
            *lo = p;
            *hi = p + size;
            return;
        }
        p += size;
    }
}

static const uint8_t INTERESTING[] = {0x00, 0x7f, 0x80, 0xff, 0x40, 0x3f};

int main(int argc, char **argv) {
    if (argc < 4) {
        fprintf(stderr, "usage: fuzz_diff_replay MUTANTS SEED DIR...\n");
        return 2;
    }
    long mutants = strtol(argv[1], NULL, 10);
    uint64_t seed = strtoull(argv[2], NULL, 10);
    size_t inputs = 0, files = 0, valid = 0, mutants_valid = 0;
    for (int a = 3; a < argc; a++) {
        size_t valid_before = valid;
        size_t n;
        char **names = wasm_files(argv[a], &n);
        if (!names || n == 0) {
            fprintf(stderr, "fuzz_diff_replay: no .wasm files in %s\n", argv[a]);
            return 1;
        }
        for (size_t i = 0; i < n; i++) {
            char path[4096];
            snprintf(path, sizeof path, "%s/%s", argv[a], names[i]);
            size_t len;
            uint8_t *orig = read_all(path, &len);
            uint8_t *buf = orig ? malloc(len ? len : 1) : NULL;
            if (!buf) {
                fprintf(stderr, "fuzz_diff_replay: cannot read %s\n", path);
                return 1;
            }
            files++;
            uint64_t s = seed * 0x9e3779b97f4a7c15ull + 1;
            for (const char *c = names[i]; *c; c++)
                s = (s ^ (uint8_t)*c) * 0x100000001b3ull;
            if (!s) s = 1;
            for (long m = 0; m <= mutants; m++) {
                memcpy(buf, orig, len);
                if (m > 0 && len > 8) { /* changed: mostly the code, else anywhere */
                    size_t lo, hi;
                    code_range(orig, len, &lo, &hi);
                    if (next(&s) % 4 == 0) lo = 8, hi = len;
                    int edits = 1 + (int)(next(&s) % 3);
                    for (int k = 0; k < edits; k++) {
                        size_t at = lo + next(&s) % (hi - lo);
                        uint64_t r = next(&s);
                        switch (r % 3) {
                        case 0: buf[at] = (uint8_t)(r >> 8); break;
                        case 1: buf[at] = INTERESTING[(r >> 8) % sizeof INTERESTING]; break;
                        default: buf[at] = (uint8_t)(buf[at] + ((r >> 8) & 1 ? 1 : -1));
                        }
                    }
                }
                fprintf(stderr, "%s #%ld\n", path, m);
                pw_error err;
                pw_module *mod = pw_module_new(buf, len, NULL, &err);
                if (mod) {
                    valid++;
                    mutants_valid += m > 0;
                    pw_module_free(mod);
                } else if (m == 0) {
                    break; /* an invalid module (assert_invalid): its mutants are too */
                }
                LLVMFuzzerTestOneInput(buf, len);
                inputs++;
            }
            free(buf);
            free(orig);
            free(names[i]);
        }
        free(names);
        if (valid == valid_before) {
            fprintf(stderr, "fuzz_diff_replay: no valid module in %s to compare\n", argv[a]);
            return 1;
        }
    }
    printf("fuzz_diff_replay: %zu inputs from %zu files, %zu of them valid modules (%zu "
           "mutants); every JIT mode agreed with the interpreter\n",
           inputs, files, valid, mutants_valid);
    return 0;
}
