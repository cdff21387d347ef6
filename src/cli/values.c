/*
 * values.c — Wasm values on the command line: parsing an argument by its parameter
 * type and printing a result (shared by `peri wasm invoke` and `peri run --invoke`).
 * i32/i64 decimal or 0x hex, f32/f64 decimal (inf, nan), references only as null;
 * floats print in the shortest form that reads back exactly.
 */
#include "cli/values.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *peri_val_type_name(pw_valtype t) {
    switch (PW_VT_KIND(t)) {
    case PW_K_I32: return "i32";
    case PW_K_I64: return "i64";
    case PW_K_F32: return "f32";
    case PW_K_F64: return "f64";
    case PW_K_V128: return "v128";
    case PW_K_REF: return "ref";
    default: return "?";
    }
}

/* Parses one argument by its parameter type; false on a malformed value. */
bool peri_val_parse(const char *s, pw_valtype t, pw_val *out) {
    char *end = NULL;
    errno = 0;
    out->bits = 0;
    switch (PW_VT_KIND(t)) {
    case PW_K_I32:
    case PW_K_I64: {
        bool neg = s[0] == '-';
        uint64_t mag = strtoull(neg ? s + 1 : s, &end, 0);
        if (errno || end == s || *end || (neg && (s[1] < '0' || s[1] > '9'))) return false;
        if (PW_VT_KIND(t) == PW_K_I32) {
            if (neg ? mag > 0x80000000u : mag > 0xffffffffu) return false;
            out->i32 = (int32_t)(uint32_t)(neg ? 0u - (uint32_t)mag : (uint32_t)mag);
        } else {
            if (neg && mag > 0x8000000000000000ull) return false;
            out->i64 = (int64_t)(neg ? 0 - mag : mag);
        }
        return true;
    }
    case PW_K_F32: {
        float f = strtof(s, &end);
        if (end == s || *end) return false;
        memcpy(&out->f32, &f, 4);
        return true;
    }
    case PW_K_F64: {
        double d = strtod(s, &end);
        if (end == s || *end) return false;
        memcpy(&out->f64, &d, 8);
        return true;
    }
    case PW_K_REF:
        if (strcmp(s, "null") != 0) return false;
        out->ref = PW_NULL_REF;
        return true;
    default: return false;
    }
}

/* Shortest %g form that reads back to the same bits; NaNs with their payload. */
static void print_float(uint64_t bits, bool is64) {
    double d; /* an f32 widens exactly */
    if (is64) {
        memcpy(&d, &bits, 8);
    } else {
        uint32_t b = (uint32_t)bits;
        float f;
        memcpy(&f, &b, 4);
        d = f;
    }
    if (isnan(d)) {
        uint64_t payload = bits & (is64 ? 0x000fffffffffffffull : 0x7fffffu);
        uint64_t canonical = is64 ? 0x0008000000000000ull : 0x400000u;
        printf("%snan", (bits >> (is64 ? 63 : 31)) & 1 ? "-" : "");
        if (payload != canonical) printf(":0x%" PRIx64, payload);
        putchar('\n');
        return;
    }
    char buf[40];
    for (int p = 1; p <= (is64 ? 17 : 9); p++) {
        snprintf(buf, sizeof buf, "%.*g", p, d);
        if (is64 ? strtod(buf, NULL) == d : strtof(buf, NULL) == (float)d) break;
    }
    printf("%s\n", buf);
}

void peri_val_print(pw_valtype t, pw_val v) {
    switch (PW_VT_KIND(t)) {
    case PW_K_I32: printf("%" PRId32 "\n", v.i32); break;
    case PW_K_I64: printf("%" PRId64 "\n", v.i64); break;
    case PW_K_F32: print_float(v.f32, false); break;
    case PW_K_F64: print_float(v.f64, true); break;
    case PW_K_REF: printf("%s\n", v.ref == PW_NULL_REF ? "null" : "ref"); break;
    default: printf("?\n"); break;
    }
}
