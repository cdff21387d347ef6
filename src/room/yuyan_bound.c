/*
 * yuyan_bound.c — boundary signatures of the 豫言 ABI (research §2.4): the shape
 * grammar "[shape{，shape}]→result" of the 豫言边界 custom section and of the host's
 * own table, the Wasm type each top-level shape has (整 i64, 小 f64, 爻 i32, 串 (ref
 * $bytes), 资 (ref extern), 组/列/变 (ref $tuple), 元 omitted), the check of an
 * import's type against it, and the look-up of an import's declared signature.
 */
#include "yuyan_int.h"

#include <stdio.h>
#include <string.h>

typedef struct cur {
    const char *p, *end;
    int depth;
} cur;

static bool eat(cur *c, const char *tok) {
    size_t n = strlen(tok);
    if ((size_t)(c->end - c->p) < n || memcmp(c->p, tok, n) != 0) return false;
    c->p += n;
    return true;
}

static bool peek(const cur *c, const char *tok) {
    size_t n = strlen(tok);
    return (size_t)(c->end - c->p) >= n && memcmp(c->p, tok, n) == 0;
}

static uint8_t shape(cur *c);

/* shape{，shape} up to (not eating) one of the stop tokens; count in *n. */
static bool shape_list(cur *c, const char *stop1, const char *stop2, uint8_t *first, size_t max,
                       size_t *n) {
    *n = 0;
    if (peek(c, stop1) || (stop2 && peek(c, stop2))) return true;
    for (;;) {
        uint8_t s = shape(c);
        if (!s) return false;
        if (*n < max) first[*n] = s;
        (*n)++;
        if (!eat(c, "，")) return true;
    }
}

static uint8_t shape(cur *c) {
    if (++c->depth > 64) return YS_NONE;
    uint8_t r = YS_NONE;
    uint8_t tmp[1];
    size_t n;
    if (eat(c, "整"))
        r = YS_INT;
    else if (eat(c, "小"))
        r = YS_FLOAT;
    else if (eat(c, "爻"))
        r = YS_BOOL;
    else if (eat(c, "串"))
        r = YS_STR;
    else if (eat(c, "元"))
        r = YS_UNIT;
    else if (eat(c, "资"))
        r = YS_RES;
    else if (eat(c, "组")) {
        if (eat(c, "〔") && shape_list(c, "〕", NULL, tmp, 0, &n) && eat(c, "〕")) r = YS_TUPLE;
    } else if (eat(c, "列")) {
        if (eat(c, "〔") && shape(c) && eat(c, "〕")) r = YS_TUPLE;
    } else if (eat(c, "变")) {
        if (eat(c, "〔")) {
            for (;;) {
                if (!shape_list(c, "｜", "〕", tmp, 0, &n)) break;
                if (eat(c, "｜")) continue;
                if (eat(c, "〕")) r = YS_TUPLE;
                break;
            }
        }
    }
    c->depth--;
    return r;
}

bool pr__yy_sig_parse(const char *s, size_t n, yy_sig *out) {
    cur c = {s, s + n, 0};
    uint8_t ps[YY_MAX_PARAMS + 1];
    size_t np;
    memset(out, 0, sizeof *out);
    if (!shape_list(&c, "→", NULL, ps, YY_MAX_PARAMS + 1, &np) || !eat(&c, "→")) return false;
    uint8_t r;
    if (eat(&c, "异")) {
        r = eat(&c, "〔") ? shape(&c) : YS_NONE;
        if (r && !eat(&c, "〕")) r = YS_NONE;
    } else {
        r = shape(&c);
    }
    if (!r || c.p != c.end) return false;
    for (size_t i = 0; i < np && i < YY_MAX_PARAMS + 1; i++) {
        if (ps[i] == YS_UNIT) continue;
        if (out->nparams == YY_MAX_PARAMS) return false;
        out->params[out->nparams++] = ps[i];
    }
    if (np > YY_MAX_PARAMS + 1) return false;
    out->result = r;
    return true;
}

static bool array_of(const pw_module *m, uint32_t ti, pw_valtype want, uint8_t packed) {
    pw_valtype t;
    uint8_t pk;
    bool mut;
    return pw_module_type_form(m, ti) == 0x5E && pw_module_type_field(m, ti, 0, &t, &pk, &mut) &&
           mut && pk == packed && (packed || t == want);
}

bool pr__yy_type_is_bytes(const pw_module *m, uint32_t ti) {
    return array_of(m, ti, PW_VT_I32, 1);
}

bool pr__yy_type_is_tuple(const pw_module *m, uint32_t ti) {
    return array_of(m, ti, PW_VT_ABSREF(PW_HT_EQ, 1), 0);
}

static bool type_is(const pw_module *m, pw_valtype t, uint8_t s) {
    switch (s) {
    case YS_INT: return t == PW_VT_I64;
    case YS_FLOAT: return t == PW_VT_F64;
    case YS_BOOL: return t == PW_VT_I32;
    case YS_RES: return t == PW_VT_ABSREF(PW_HT_EXTERN, 0);
    case YS_STR:
    case YS_TUPLE:
        if (PW_VT_KIND(t) != PW_K_REF || PW_VT_NULLABLE(t) || (PW_VT_HEAP(t) & PW_HT_ABS))
            return false;
        return s == YS_STR ? pr__yy_type_is_bytes(m, PW_VT_HEAP(t))
                           : pr__yy_type_is_tuple(m, PW_VT_HEAP(t));
    default: return false;
    }
}

static const char *type_name(const pw_module *m, pw_valtype t) {
    if (t == PW_VT_I32) return "i32";
    if (t == PW_VT_I64) return "i64";
    if (t == PW_VT_F32) return "f32";
    if (t == PW_VT_F64) return "f64";
    if (PW_VT_KIND(t) != PW_K_REF) return "v128";
    uint32_t h = PW_VT_HEAP(t);
    bool nul = PW_VT_NULLABLE(t);
    if (h & PW_HT_ABS) {
        switch (h & 0xFF) {
        case PW_HT_EXTERN: return nul ? "externref" : "(ref extern)";
        case PW_HT_EQ: return nul ? "(ref null eq)" : "(ref eq)";
        case PW_HT_ANY: return nul ? "anyref" : "(ref any)";
        case PW_HT_FUNC: return nul ? "funcref" : "(ref func)";
        default: return nul ? "(ref null …)" : "(ref …)";
        }
    }
    if (pr__yy_type_is_bytes(m, h)) return nul ? "(ref null $bytes)" : "(ref $bytes)";
    if (pr__yy_type_is_tuple(m, h)) return nul ? "(ref null $tuple)" : "(ref $tuple)";
    return nul ? "(ref null $?)" : "(ref $?)";
}

bool pr__yy_sig_check(const pw_module *m, uint32_t i, const yy_sig *sig, char *why, size_t whylen) {
    pw_functype ft;
    if (!pw_module_import_functype(m, i, &ft)) {
        snprintf(why, whylen, "不是函数");
        return false;
    }
    bool ok = ft.nparams == sig->nparams && ft.nresults == (sig->result == YS_UNIT ? 0u : 1u);
    for (uint32_t k = 0; ok && k < ft.nparams; k++)
        ok = type_is(m, ft.params[k], sig->params[k]);
    if (ok && ft.nresults) ok = type_is(m, ft.results[0], sig->result);
    if (ok) return true;
    size_t at = 0;
    at += (size_t)snprintf(why + at, whylen - at, "(func");
    for (uint32_t k = 0; k < ft.nparams && at < whylen; k++)
        at += (size_t)snprintf(why + at, whylen - at, " (param %s)", type_name(m, ft.params[k]));
    for (uint32_t k = 0; k < ft.nresults && at < whylen; k++)
        at += (size_t)snprintf(why + at, whylen - at, " (result %s)", type_name(m, ft.results[k]));
    if (at < whylen) snprintf(why + at, whylen - at, ")");
    return false;
}

const char *pr__yy_bound_declared(const pw_module *m, const char *mod, size_t modlen,
                                  const char *field, size_t fieldlen, size_t *len) {
    static const char tag[] = "导入\t";
    size_t sl;
    const uint8_t *sec;
    for (uint32_t nth = 0;
         (sec = pw_module_custom_section(m, YY_BOUND, sizeof YY_BOUND - 1, nth, &sl)) != NULL;
         nth++) {
        const char *p = (const char *)sec, *end = p + sl;
        while (p < end) {
            const char *nl = memchr(p, '\n', (size_t)(end - p));
            const char *le = nl ? nl : end;
            size_t ll = (size_t)(le - p);
            /* 导入⇥module⇥field⇥sig: exactly four tab-separated columns. */
            if (ll > sizeof tag - 1 && memcmp(p, tag, sizeof tag - 1) == 0) {
                const char *a = p + sizeof tag - 1;
                const char *t1 = memchr(a, '\t', (size_t)(le - a));
                const char *t2 = t1 ? memchr(t1 + 1, '\t', (size_t)(le - t1 - 1)) : NULL;
                if (t2 && !memchr(t2 + 1, '\t', (size_t)(le - t2 - 1)) &&
                    (size_t)(t1 - a) == modlen && memcmp(a, mod, modlen) == 0 &&
                    (size_t)(t2 - t1 - 1) == fieldlen && memcmp(t1 + 1, field, fieldlen) == 0) {
                    const char *sig = t2 + 1;
                    size_t n = (size_t)(le - sig);
                    if (n && sig[n - 1] == '\r') n--;
                    *len = n;
                    return sig;
                }
            }
            p = nl ? nl + 1 : end;
        }
    }
    *len = 0;
    return NULL;
}
