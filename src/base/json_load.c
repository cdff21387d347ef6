/*
 * json_load.c — the JSON parser: text -> pj_t (pj_loads, pj_loadb, pj_loadf).
 *
 * Strict RFC 8259 with jansson's choices: the top level must be an object or array
 * unless PJ_DECODE_ANY; UTF-8 is validated everywhere; raw control characters in strings
 * are refused; \u escapes must pair surrogates; \u0000 needs PJ_ALLOW_NUL and is never
 * allowed in keys; integers that do not fit 64 bits are errors ("too big integer"), reals
 * that overflow are errors ("real number overflow"); values nest at most 2048 deep.
 * Error texts, and which token they quote, follow jansson's lexer so messages read the
 * same ("end of file expected near 'x'").
 *
 * Invariants: the parser reads only inside [start, end); recursion depth is bounded by
 * PJ_PARSER_MAX_DEPTH; the first error recorded is the one reported.
 */
#include "json_int.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "peri/base.h"

enum { T_EOF = 0, T_INVALID = 256, T_STRING, T_INTEGER, T_REAL, T_TRUE, T_FALSE, T_NULL };

typedef struct pj__lex {
    const char *start, *p, *end;
    size_t flags;
    pj_error_t *err;
    bool failed;
    int depth;
    int tok;
    const char *tok_start, *saved_end; /* the token text jansson would quote */
    pb_buf str;                        /* a string token's decoded bytes */
    bool str_has_nul;
    pj_int_t ival;
    double rval;
} pj__lex;

static void pj__err_init(pj_error_t *err, const char *source) {
    if (!err) return;
    err->line = -1;
    err->column = -1;
    err->position = 0;
    snprintf(err->source, sizeof err->source, "%s", source);
    err->text[0] = 0;
}

/* Records msg (the first error wins) with jansson's context: "near '<token text>'" when
 * the token read so far is 1..20 bytes, "near end of file" when nothing was read. */
__attribute__((format(printf, 3, 4))) static void pj__fail(pj__lex *lx, bool utf8, const char *fmt,
                                                           ...) {
    if (lx->failed) return;
    lx->failed = true;
    pj_error_t *err = lx->err;
    if (!err) return;
    char msg[96]; /* every message is short; room is left for the context */
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    size_t saved = lx->saved_end > lx->tok_start ? (size_t)(lx->saved_end - lx->tok_start) : 0;
    if (saved && !*lx->tok_start) saved = 0, utf8 = false; /* jansson quotes up to a NUL */
    if (saved && saved <= 20)
        snprintf(err->text, sizeof err->text, "%s near '%.*s'", msg, (int)saved, lx->tok_start);
    else if (saved || utf8)
        snprintf(err->text, sizeof err->text, "%s", msg);
    else
        snprintf(err->text, sizeof err->text, "%s near end of file", msg);
    /* line and column (in code points) of the read position, as jansson counts them */
    const char *upto = lx->saved_end > lx->p ? lx->saved_end : lx->p;
    int line = 1, col = 0;
    for (const char *q = lx->start; q < upto; q++) {
        unsigned char c = (unsigned char)*q;
        if (c == '\n') {
            line++;
            col = 0;
        } else if ((c & 0xC0) != 0x80) {
            col++;
        }
    }
    err->line = line;
    err->column = col;
    err->position = upto - lx->start > INT_MAX ? INT_MAX : (int)(upto - lx->start);
}

/* A byte >= 0x80 at p: its UTF-8 sequence length, or 0 after reporting the bad byte. */
static size_t pj__lex_utf8(pj__lex *lx, const char *p) {
    int32_t cp;
    size_t k = pj__utf8_decode((const unsigned char *)p, (size_t)(lx->end - p), &cp);
    if (!k) pj__fail(lx, true, "unable to decode byte 0x%x", (unsigned char)*p);
    return k;
}

static int pj__hex4(const char *p) {
    int v = 0;
    for (int i = 0; i < 4; i++) {
        char c = p[i];
        v <<= 4;
        if (c >= '0' && c <= '9')
            v |= c - '0';
        else if (c >= 'a' && c <= 'f')
            v |= c - 'a' + 10;
        else if (c >= 'A' && c <= 'F')
            v |= c - 'A' + 10;
        else
            return -1;
    }
    return v;
}

static bool pj__isxdigit(char c) {
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

/* The string token whose opening quote is at lx->p - 1. Like jansson, escapes are
 * checked for shape as the token is read, and surrogate pairing only once the whole
 * token is there: an unpaired surrogate is reported only when nothing else was wrong. */
static int pj__lex_string(pj__lex *lx) {
    pb_buf_reset(&lx->str);
    lx->str_has_nul = false;
    const char *p = lx->p;
    int32_t high = -1;     /* a high surrogate waiting for its low half */
    char pairing[64] = ""; /* the first surrogate error, reported at the end */
    for (;;) {
        const char *run = p;
        while (p < lx->end && *p != '"' && *p != '\\' && (unsigned char)*p >= 0x20 &&
               (unsigned char)*p < 0x80)
            p++;
        if (p > run && !pb_buf_put(&lx->str, run, (size_t)(p - run))) goto nomem;
        if (p >= lx->end) {
            lx->saved_end = p;
            pj__fail(lx, false, "premature end of input");
            return T_INVALID;
        }
        unsigned char c = (unsigned char)*p;
        if (c == '"') break;
        if (c < 0x20) {
            lx->saved_end = p;
            if (c == '\n')
                pj__fail(lx, false, "unexpected newline");
            else
                pj__fail(lx, false, "control character 0x%x", c);
            return T_INVALID;
        }
        if (c >= 0x80) {
            lx->saved_end = p;
            size_t k = pj__lex_utf8(lx, p);
            if (!k) return T_INVALID;
            if (!pb_buf_put(&lx->str, p, k)) goto nomem;
            p += k;
            continue;
        }
        /* a backslash: the end of input after it reads as a bad escape, as in jansson */
        char e = p + 1 < lx->end ? p[1] : 0;
        int out = e == 'u' ? 0 : pj__escape_byte(e);
        if (out < 0) {
            lx->saved_end = p + 1;
            if (p + 1 < lx->end && (unsigned char)e >= 0x80 && !pj__lex_utf8(lx, p + 1))
                return T_INVALID;
            lx->saved_end = p + 1 < lx->end ? p + 2 : p + 1;
            pj__fail(lx, false, "invalid escape");
            return T_INVALID;
        }
        if (e != 'u') {
            if (high >= 0 && !pairing[0])
                snprintf(pairing, sizeof pairing, "invalid Unicode '\\u%04X'", (unsigned)high);
            high = -1;
            if (!pb_buf_putc(&lx->str, (char)out)) goto nomem;
            p += 2;
            continue;
        }
        for (int i = 0; i < 4; i++) {
            const char *h = p + 2 + i;
            if (h >= lx->end || !pj__isxdigit(*h)) {
                lx->saved_end = h;
                if (h < lx->end && (unsigned char)*h >= 0x80 && !pj__lex_utf8(lx, h))
                    return T_INVALID;
                lx->saved_end = h < lx->end ? h + 1 : h;
                pj__fail(lx, false, "invalid escape");
                return T_INVALID;
            }
        }
        int32_t cp = pj__hex4(p + 2);
        p += 6;
        if (high >= 0) {
            if (cp >= 0xDC00 && cp <= 0xDFFF) {
                cp = 0x10000 + ((high - 0xD800) << 10) + (cp - 0xDC00);
            } else if (!pairing[0]) {
                snprintf(pairing, sizeof pairing, "invalid Unicode '\\u%04X\\u%04X'",
                         (unsigned)high, (unsigned)cp);
            }
            high = -1;
        } else if (cp >= 0xD800 && cp <= 0xDBFF) {
            if (p + 1 < lx->end && p[0] == '\\' && p[1] == 'u') {
                high = cp;
                continue;
            }
            if (!pairing[0])
                snprintf(pairing, sizeof pairing, "invalid Unicode '\\u%04X'", (unsigned)cp);
        } else if (cp >= 0xDC00 && cp <= 0xDFFF && !pairing[0]) {
            snprintf(pairing, sizeof pairing, "invalid Unicode '\\u%04X'", (unsigned)cp);
        }
        if (cp == 0) lx->str_has_nul = true;
        char u[4];
        if (!pb_buf_put(&lx->str, u, pj__utf8_encode(cp, u))) goto nomem;
    }
    lx->p = p + 1;
    lx->saved_end = lx->p;
    if (pairing[0]) {
        pj__fail(lx, false, "%s", pairing);
        return T_INVALID;
    }
    if (!lx->str.p && !pb_buf_reserve(&lx->str, 0)) goto nomem;
    return T_STRING;
nomem:
    lx->saved_end = NULL;
    pj__fail(lx, false, "out of memory");
    return T_INVALID;
}

/* jansson reads one character past a number or a word, decoding it: a bad UTF-8 byte
 * there is reported quoting the token, which itself stays good. */
static int pj__lookahead(pj__lex *lx, int tok) {
    if (lx->p < lx->end && (unsigned char)*lx->p >= 0x80) pj__lex_utf8(lx, lx->p);
    return tok;
}

static bool pj__digit(const char *p, const char *end) {
    return p < end && *p >= '0' && *p <= '9';
}

/* A number token starting at lx->p (a '-' or a digit), scanned as jansson does: the
 * longest prefix that fits the grammar; a malformed one is an invalid token quoting
 * what was read. */
static int pj__lex_number(pj__lex *lx) {
    const char *s = lx->p, *p = s, *end = lx->end;
    if (*p == '-') {
        p++;
        if (!pj__digit(p, end)) goto invalid;
    }
    if (*p == '0') {
        p++;
        if (pj__digit(p, end)) goto invalid;
    } else {
        while (pj__digit(p, end))
            p++;
    }
    bool real = (lx->flags & PJ_DECODE_INT_AS_REAL) != 0;
    if (p < end && *p == '.') {
        p++; /* jansson keeps the '.' in the token text it quotes */
        if (!pj__digit(p, end)) goto invalid;
        while (pj__digit(p, end))
            p++;
        real = true;
    }
    if (p < end && (*p == 'e' || *p == 'E')) {
        const char *q = p + 1;
        if (q < end && (*q == '+' || *q == '-')) q++;
        if (!pj__digit(q, end)) {
            p = q;
            goto invalid;
        }
        p = q;
        while (pj__digit(p, end))
            p++;
        real = true;
    }
    lx->p = p;
    lx->saved_end = p;
    pj__lookahead(lx, 0); /* read before the conversion, so its error comes first */
    if (!real) {
        bool neg = *s == '-';
        unsigned long long v = 0, lim = neg ? (unsigned long long)LLONG_MAX + 1 : LLONG_MAX;
        for (const char *q = s + neg; q < p; q++) {
            unsigned d = (unsigned)(*q - '0');
            if (v > (lim - d) / 10) {
                pj__fail(lx, false, neg ? "too big negative integer" : "too big integer");
                return T_INVALID;
            }
            v = v * 10 + d;
        }
        lx->ival =
            neg ? (v == (unsigned long long)LLONG_MAX + 1 ? LLONG_MIN : -(pj_int_t)v) : (pj_int_t)v;
        return T_INTEGER;
    }
    if (!pj__strtod(s, (size_t)(p - s), &lx->rval)) {
        pj__fail(lx, false, "real number overflow");
        return T_INVALID;
    }
    return T_REAL;
invalid:
    lx->p = p;
    lx->saved_end = p;
    return pj__lookahead(lx, T_INVALID);
}

static int pj__scan(pj__lex *lx) {
    if (lx->failed) return lx->tok = T_INVALID; /* as jansson's stream after an error */
    const char *p = lx->p;
    while (p < lx->end && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r'))
        p++;
    lx->p = p;
    lx->tok_start = p;
    lx->saved_end = p;
    if (p >= lx->end) return lx->tok = T_EOF;
    char c = *p;
    switch (c) {
    case '{':
    case '}':
    case '[':
    case ']':
    case ':':
    case ',':
        lx->p = p + 1;
        lx->saved_end = lx->p;
        return lx->tok = (unsigned char)c;
    case '"': lx->p = p + 1; return lx->tok = pj__lex_string(lx);
    default: break;
    }
    if (c == '-' || (c >= '0' && c <= '9')) return lx->tok = pj__lex_number(lx);
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) {
        const char *q = p;
        while (q < lx->end && ((*q >= 'a' && *q <= 'z') || (*q >= 'A' && *q <= 'Z')))
            q++;
        lx->p = q;
        lx->saved_end = q;
        size_t n = (size_t)(q - p);
        int tok = T_INVALID;
        if (n == 4 && !memcmp(p, "true", 4))
            tok = T_TRUE;
        else if (n == 5 && !memcmp(p, "false", 5))
            tok = T_FALSE;
        else if (n == 4 && !memcmp(p, "null", 4))
            tok = T_NULL;
        return lx->tok = pj__lookahead(lx, tok);
    }
    if ((unsigned char)c >= 0x80) {
        size_t k = pj__lex_utf8(lx, p);
        if (!k) return lx->tok = T_INVALID;
        lx->p = p + k;
        lx->saved_end = lx->p;
        return lx->tok = T_INVALID;
    }
    lx->p = p + 1;
    lx->saved_end = lx->p;
    return lx->tok = T_INVALID;
}

static pj_t *pj__value(pj__lex *lx);

/* A string token's bytes as an owned C string of exactly its size (the token buffer
 * stays with the lexer for the next string). */
static char *pj__take_str(pj__lex *lx, size_t *len) {
    char *s = malloc(lx->str.len + 1);
    if (!s) return NULL;
    memcpy(s, lx->str.p, lx->str.len + 1);
    *len = lx->str.len;
    return s;
}

/* One "key": value member of obj, its key token just scanned. */
static bool pj__parse_member(pj__lex *lx, pj_t *obj) {
    if (lx->tok != T_STRING) {
        pj__fail(lx, false, "string or '}' expected");
        return false;
    }
    if (lx->str_has_nul) {
        pj__fail(lx, false, "NUL byte in object key not supported");
        return false;
    }
    if ((lx->flags & PJ_REJECT_DUPLICATES) && pj_object_getn(obj, lx->str.p, lx->str.len)) {
        pj__fail(lx, false, "duplicate object key");
        return false;
    }
    size_t klen;
    char *key = pj__take_str(lx, &klen);
    if (!key) {
        pj__fail(lx, false, "out of memory");
        return false;
    }
    if (pj__scan(lx) != ':') {
        free(key);
        pj__fail(lx, false, "':' expected");
        return false;
    }
    pj__scan(lx);
    pj_t *v = pj__value(lx);
    if (!v) {
        free(key);
        return false;
    }
    if (pj__object_set_take_key(obj, key, klen, v)) {
        pj__fail(lx, false, "out of memory");
        return false;
    }
    return true;
}

/* An object or an array, its opening token just scanned, up to its closing token. As in
 * jansson, an array stops at the end of input before asking for a value; an object asks
 * for a key. */
static pj_t *pj__container(pj__lex *lx, bool object) {
    pj_t *c = object ? pj_object() : pj_array();
    if (!c) {
        pj__fail(lx, false, "out of memory");
        return NULL;
    }
    int close = object ? '}' : ']';
    pj__scan(lx);
    if (lx->tok == close) return c;
    while (object || lx->tok != T_EOF) {
        if (object) {
            if (!pj__parse_member(lx, c)) goto fail;
        } else {
            pj_t *v = pj__value(lx);
            if (!v) goto fail;
            if (pj_array_append_new(c, v)) {
                pj__fail(lx, false, "out of memory");
                goto fail;
            }
        }
        if (pj__scan(lx) != ',') break;
        pj__scan(lx);
    }
    if (lx->tok != close) {
        pj__fail(lx, false, object ? "'}' expected" : "']' expected");
        goto fail;
    }
    return c;
fail:
    pj_decref(c);
    return NULL;
}

/* The value whose first token was just scanned. */
static pj_t *pj__value(pj__lex *lx) {
    if (++lx->depth > PJ__MAX_DEPTH) {
        pj__fail(lx, false, "maximum parsing depth reached");
        return NULL;
    }
    pj_t *v = NULL;
    switch (lx->tok) {
    case T_STRING: {
        if (lx->str_has_nul && !(lx->flags & PJ_ALLOW_NUL)) {
            pj__fail(lx, false, "\\u0000 is not allowed without JSON_ALLOW_NUL");
            return NULL;
        }
        v = pj_stringn_nocheck(lx->str.p, lx->str.len); /* checked as it was read */
        break;
    }
    case T_INTEGER: v = pj_integer(lx->ival); break;
    case T_REAL: v = pj_real(lx->rval); break;
    case T_TRUE: v = pj_true(); break;
    case T_FALSE: v = pj_false(); break;
    case T_NULL: v = pj_null(); break;
    case '{': v = pj__container(lx, true); break;
    case '[': v = pj__container(lx, false); break;
    case T_INVALID: pj__fail(lx, false, "invalid token"); return NULL;
    default: pj__fail(lx, false, "unexpected token"); return NULL;
    }
    if (!v) {
        pj__fail(lx, false, "out of memory");
        return NULL;
    }
    lx->depth--;
    return v;
}

static pj_t *pj__parse(const char *buf, size_t len, size_t flags, pj_error_t *err) {
    pj__lex lx = {.start = buf, .p = buf, .end = buf + len, .flags = flags, .err = err};
    pj__scan(&lx);
    pj_t *v = NULL;
    if (!(flags & PJ_DECODE_ANY) && lx.tok != '[' && lx.tok != '{') {
        pj__fail(&lx, false, "'[' or '{' expected");
    } else {
        v = pj__value(&lx);
        if (v && !(flags & PJ_DISABLE_EOF_CHECK) && pj__scan(&lx) != T_EOF) {
            pj__fail(&lx, false, "end of file expected");
            pj_decref(v);
            v = NULL;
        }
    }
    pb_buf_free(&lx.str);
    if (v && err) err->position = (int)(lx.p - buf > INT_MAX ? INT_MAX : lx.p - buf);
    return v;
}

size_t pj_text_depth(const char *text, size_t len) {
    /* d containers are open: a container opened is at depth d, anything else starting
     * here at d + 1 (an object's keys too: each has a value at that depth beside it) */
    size_t d = 0, max = 0;
    for (size_t i = 0; text && i < len; i++) {
        char c = text[i];
        if (c == '[' || c == '{') {
            if (++d > max) max = d;
        } else if (c == ']' || c == '}') {
            if (d) d--;
        } else if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == ',' || c == ':') {
            continue;
        } else {
            if (d + 1 > max) max = d + 1;
            if (c == '"') /* past the string, escapes included */
                for (i++; i < len && text[i] != '"'; i++)
                    if (text[i] == '\\') i++;
        }
    }
    return max;
}

pj_t *pj_loads(const char *text, size_t flags, pj_error_t *error) {
    pj__err_init(error, "<string>");
    if (!text) {
        if (error) snprintf(error->text, sizeof error->text, "wrong arguments");
        return NULL;
    }
    return pj__parse(text, strlen(text), flags, error);
}

pj_t *pj_loadb(const char *buf, size_t len, size_t flags, pj_error_t *error) {
    pj__err_init(error, "<buffer>");
    if (!buf) {
        if (error) snprintf(error->text, sizeof error->text, "wrong arguments");
        return NULL;
    }
    return pj__parse(buf, len, flags, error);
}

pj_t *pj_loadf(FILE *f, size_t flags, pj_error_t *error) {
    pj__err_init(error, "<stream>");
    if (!f) {
        if (error) snprintf(error->text, sizeof error->text, "wrong arguments");
        return NULL;
    }
    pb_buf b = {0};
    char chunk[4096];
    size_t n;
    while ((n = fread(chunk, 1, sizeof chunk, f)) > 0) {
        if (!pb_buf_put(&b, chunk, n)) {
            pb_buf_free(&b);
            if (error) snprintf(error->text, sizeof error->text, "out of memory");
            return NULL;
        }
    }
    pj_t *v = pj__parse(b.p ? b.p : "", b.len, flags, error);
    pb_buf_free(&b);
    return v;
}

pj_t *pj_load_file(const char *path, size_t flags, pj_error_t *error) {
    FILE *f = path ? fopen(path, "rb") : NULL;
    if (!f) {
        pj__err_init(error, path ? path : "<file>");
        if (error)
            snprintf(error->text, sizeof error->text, "%s",
                     path ? "unable to open file" : "wrong arguments");
        return NULL;
    }
    pj_t *v = pj_loadf(f, flags, error);
    fclose(f);
    if (error) snprintf(error->source, sizeof error->source, "%s", path);
    return v;
}
