/*
 * value.c — the testsuite's value encodings (MANIFEST.md §8): decimal bit strings
 * for numbers, NaN patterns, reference patterns and `either`. Floats are handled as
 * raw bits throughout so that NaN payloads survive (never through C float).
 */
#include "st.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *st_str(pj_t *o, const char *key) {
    return pj_string_value(pj_object_get(o, key));
}

static uint64_t st_u64(const char *s) {
    return s ? strtoull(s, NULL, 10) : 0;
}

/* Reference type names of §8.4 that denote a null when value is "null". */
static bool st_is_ref_type(const char *t) {
    static const char *const names[] = {
        "funcref",       "externref",  "anyref",  "eqref",   "i31ref",
        "structref",     "arrayref",   "exnref",  "nullref", "nullfuncref",
        "nullexternref", "nullexnref", "refnull",
    };
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (strcmp(t, names[i]) == 0) return true;
    return false;
}

static const char *st_kind_name(pw_valkind k) {
    switch (k) {
    case PW_K_I32: return "i32";
    case PW_K_I64: return "i64";
    case PW_K_F32: return "f32";
    case PW_K_F64: return "f64";
    case PW_K_V128: return "v128";
    case PW_K_REF: return "ref";
    default: return "?";
    }
}

bool st_value_arg(pj_t *v, pw_store *s, pw_valtype want, pw_val *out, char *why, size_t n) {
    const char *type = st_str(v, "type");
    const char *val = st_str(v, "value");
    pw_valkind k = PW_VT_KIND(want);
    out->bits = 0;
    if (!type) {
        snprintf(why, n, "argument without type");
        return false;
    }
    pw_valkind jk = strcmp(type, "i32") == 0    ? PW_K_I32
                    : strcmp(type, "i64") == 0  ? PW_K_I64
                    : strcmp(type, "f32") == 0  ? PW_K_F32
                    : strcmp(type, "f64") == 0  ? PW_K_F64
                    : strcmp(type, "v128") == 0 ? PW_K_V128
                    : st_is_ref_type(type)      ? PW_K_REF
                                                : 0;
    if (jk == 0) {
        snprintf(why, n, "unknown argument type %s", type);
        return false;
    }
    if (jk != k) {
        snprintf(why, n, "argument of type %s for a %s parameter", type, st_kind_name(k));
        return false;
    }
    if (k == PW_K_V128) { /* four u32 lanes (MANIFEST §8.3) */
        pj_t *lanes = pj_object_get(v, "value");
        if (pj_array_size(lanes) != 4) {
            snprintf(why, n, "v128 argument without four i32 lanes");
            return false;
        }
        uint64_t l[4];
        for (size_t i = 0; i < 4; i++)
            l[i] = (uint32_t)st_u64(pj_string_value(pj_array_get(lanes, i)));
        out[0].bits = l[0] | l[1] << 32;
        out[1].bits = l[2] | l[3] << 32;
        return true;
    }
    switch (k) {
    case PW_K_I32: out->i32 = (int32_t)(uint32_t)st_u64(val); return true;
    case PW_K_I64: out->i64 = (int64_t)st_u64(val); return true;
    case PW_K_F32: out->f32 = (uint32_t)st_u64(val); return true;
    case PW_K_F64: out->f64 = st_u64(val); return true;
    default: break;
    }
    if (!val || strcmp(val, "null") == 0) {
        out->ref = PW_NULL_REF;
        return true;
    }
    if (strcmp(type, "externref") == 0 || strcmp(type, "anyref") == 0) {
        /* anyref N is host value N inside the any hierarchy; the public API only
         * offers host references, which the engine internalizes as needed. */
        pw_error err;
        out->ref = pw_externref_new(s, st_u64(val), &err);
        if (out->ref == PW_NULL_REF) {
            snprintf(why, n, "pw_externref_new failed: %s", err.message);
            return false;
        }
        return true;
    }
    snprintf(why, n, "cannot pass a non-null %s argument", type);
    return false;
}

static bool st_match_float(const char *val, uint64_t bits, int is64) {
    if (!val) return false;
    uint64_t canon = is64 ? 0x7ff8000000000000ull : 0x7fc00000u;
    uint64_t sign = is64 ? 0x8000000000000000ull : 0x80000000u;
    if (strcmp(val, "nan:canonical") == 0) return (bits & ~sign) == canon;
    if (strcmp(val, "nan:arithmetic") == 0) return (bits & canon) == canon;
    return bits == st_u64(val);
}

static bool st_match_ref(const char *type, const char *val, pw_ref r) {
    if (strcmp(type, "refnull") == 0 || (val && strcmp(val, "null") == 0)) return r == PW_NULL_REF;
    if (r == PW_NULL_REF) return false;
    uint64_t host;
    bool is_host = pw_externref_value(r, &host);
    bool is_i31 = (r & 1u) != 0;
    bool is_func = !is_i31 && pw_ref_func(r) != NULL;
    if (val) { /* host value N */
        if (strcmp(type, "externref") != 0 && strcmp(type, "anyref") != 0) return false;
        return is_host && host == st_u64(val);
    }
    if (strcmp(type, "funcref") == 0) return is_func;
    if (strcmp(type, "externref") == 0) return true;
    if (strcmp(type, "i31ref") == 0) return is_i31;
    if (strcmp(type, "anyref") == 0 || strcmp(type, "eqref") == 0) return !is_func;
    if (strcmp(type, "structref") == 0 || strcmp(type, "arrayref") == 0)
        return !is_func && !is_i31 && !is_host;
    if (strcmp(type, "exnref") == 0) return !is_func && !is_i31 && !is_host;
    return false; /* nullref & co. only ever expect null */
}

/* A v128 result (two cells) against {"lane_type", "value": [lanes]}. */
static bool st_match_v128(pj_t *e, const pw_val *got) {
    const char *lt = st_str(e, "lane_type");
    pj_t *lanes = pj_object_get(e, "value");
    if (!lt) return false;
    unsigned bits = strcmp(lt, "i8") == 0                              ? 8
                    : strcmp(lt, "i16") == 0                           ? 16
                    : strcmp(lt, "i32") == 0 || strcmp(lt, "f32") == 0 ? 32
                                                                       : 64;
    size_t nl = 128 / bits;
    if (pj_array_size(lanes) != nl) return false;
    uint8_t b[16];
    memcpy(b, &got[0].bits, 8);
    memcpy(b + 8, &got[1].bits, 8);
    for (size_t i = 0; i < nl; i++) {
        uint64_t x = 0;
        memcpy(&x, b + i * bits / 8, bits / 8);
        const char *val = pj_string_value(pj_array_get(lanes, i));
        bool ok = lt[0] == 'f' ? st_match_float(val, x, bits == 64)
                               : x == (st_u64(val) & (bits == 64 ? ~0ull : (1ull << bits) - 1));
        if (!ok) return false;
    }
    return true;
}

bool st_value_match(pj_t *e, pw_valtype t, const pw_val *gotp) {
    pw_val got = *gotp;
    const char *type = st_str(e, "type");
    if (!type) return false;
    if (strcmp(type, "either") == 0) {
        pj_t *alts = pj_object_get(e, "values");
        size_t i;
        pj_t *a;
        pj_array_foreach(alts, i, a) if (st_value_match(a, t, gotp)) return true;
        return false;
    }
    const char *val = st_str(e, "value");
    pw_valkind k = PW_VT_KIND(t);
    if (strcmp(type, "i32") == 0)
        return k == PW_K_I32 && (uint32_t)got.i32 == (uint32_t)st_u64(val);
    if (strcmp(type, "i64") == 0) return k == PW_K_I64 && (uint64_t)got.i64 == st_u64(val);
    if (strcmp(type, "f32") == 0) return k == PW_K_F32 && st_match_float(val, got.f32, 0);
    if (strcmp(type, "f64") == 0) return k == PW_K_F64 && st_match_float(val, got.f64, 1);
    if (st_is_ref_type(type)) return k == PW_K_REF && st_match_ref(type, val, got.ref);
    if (strcmp(type, "v128") == 0) return k == PW_K_V128 && st_match_v128(e, gotp);
    return false;
}

void st_value_fmt(pw_valtype t, const pw_val *vp, char *buf, size_t n) {
    pw_val v = *vp;
    switch (PW_VT_KIND(t)) {
    case PW_K_V128:
        snprintf(buf, n, "v128:0x%016" PRIx64 "%016" PRIx64, vp[1].bits, vp[0].bits);
        break;
    case PW_K_I32: snprintf(buf, n, "i32:%" PRIu32 " (%" PRId32 ")", (uint32_t)v.i32, v.i32); break;
    case PW_K_I64: snprintf(buf, n, "i64:%" PRIu64 " (%" PRId64 ")", (uint64_t)v.i64, v.i64); break;
    case PW_K_F32: snprintf(buf, n, "f32:%" PRIu32 " (0x%08" PRIx32 ")", v.f32, v.f32); break;
    case PW_K_F64: snprintf(buf, n, "f64:%" PRIu64 " (0x%016" PRIx64 ")", v.f64, v.f64); break;
    case PW_K_REF: {
        uint64_t host;
        if (v.ref == PW_NULL_REF)
            snprintf(buf, n, "ref:null");
        else if (v.ref & 1u)
            snprintf(buf, n, "ref:i31");
        else if (pw_ref_func(v.ref))
            snprintf(buf, n, "ref:func");
        else if (pw_externref_value(v.ref, &host))
            snprintf(buf, n, "ref:host %" PRIu64, host);
        else
            snprintf(buf, n, "ref:object");
        break;
    }
    default: snprintf(buf, n, "%s:?", st_kind_name(PW_VT_KIND(t))); break;
    }
}

void st_value_fmt_expected(pj_t *e, char *buf, size_t n) {
    const char *type = st_str(e, "type");
    pj_t *val = pj_object_get(e, "value");
    if (type && strcmp(type, "either") == 0) {
        size_t used = (size_t)snprintf(buf, n, "either(");
        size_t i;
        pj_t *a;
        pj_array_foreach(pj_object_get(e, "values"), i, a) {
            if (used >= n) break;
            st_value_fmt_expected(a, buf + used, n - used);
            used += strlen(buf + used);
            bool last = i + 1 == pj_array_size(pj_object_get(e, "values"));
            if (used < n) used += (size_t)snprintf(buf + used, n - used, last ? ")" : ", ");
        }
        return;
    }
    if (pj_is_string(val))
        snprintf(buf, n, "%s:%s", type ? type : "?", pj_string_value(val));
    else if (pj_is_array(val)) {
        size_t used = (size_t)snprintf(buf, n, "%s[", type ? type : "?");
        size_t i;
        pj_t *l;
        pj_array_foreach(val, i, l) {
            if (used >= n) break;
            used += (size_t)snprintf(buf + used, n - used, "%s%s", i ? " " : "",
                                     pj_string_value(l) ? pj_string_value(l) : "?");
        }
        if (used < n) snprintf(buf + used, n - used, "]");
    } else
        snprintf(buf, n, "%s (non-null)", type ? type : "?");
}
