/*
 * lex.c — the text format's tokens, strings and numeric literals.
 *
 * Tokens follow the Wasm 3.0 lexical grammar: a maximal run of identifier characters
 * and strings is one token; a lone string is a string, "$" + idchars or "$" + one
 * string is an identifier, idchars alone are a keyword or number, anything else is a
 * reserved token (rejected where it is used: "unknown operator"). Comments (";;" to
 * the end of the line, nested "(; ;)") and whitespace separate tokens. "(@name" starts
 * an annotation. Numbers are checked against the literal grammar exactly (underscores
 * only between digits, ranges per width, NaN payloads), then converted; floats use the C
 * library's correctly rounded strtof/strtod on the underscore-free text.
 */
#include "wasm/text/wat.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

bool pw__wt_fail(wt_ctx *c, const wt_tok *at, const char *fmt, ...) {
    if (c->failed) return false;
    c->failed = true;
    char msg[200];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    c->err->status = PW_ERR_MALFORMED;
    c->err->trap = 0;
    if (at)
        snprintf(c->err->message, sizeof c->err->message, "%s (at %u:%u)", msg, at->line, at->col);
    else
        snprintf(c->err->message, sizeof c->err->message, "%s", msg);
    return false;
}

void *pw__wt_alloc(wt_ctx *c, size_t n) {
    if (c->nowned == c->capowned) {
        size_t cap = c->capowned ? c->capowned * 2 : 64;
        void **v = realloc(c->owned, cap * sizeof *v);
        if (!v) return NULL;
        c->owned = v;
        c->capowned = cap;
    }
    void *p = calloc(1, n ? n : 1);
    if (!p) return NULL;
    c->owned[c->nowned++] = p;
    return p;
}

static bool is_idchar(unsigned char ch) {
    if ((ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z'))
        return true;
    return ch && strchr("!#$%&'*+-./:<=>?@\\^_`|~", ch) != NULL;
}

static bool push(wt_ctx *c, uint8_t kind, uint32_t line, uint32_t col, const char *s,
                 uint32_t len) {
    if (c->nt == c->cap) {
        size_t cap = c->cap ? c->cap * 2 : 256;
        wt_tok *t = realloc(c->t, cap * sizeof *t);
        if (!t) {
            c->err->status = PW_ERR_NOMEM;
            snprintf(c->err->message, sizeof c->err->message, "out of memory");
            c->failed = true;
            return false;
        }
        c->t = t;
        c->cap = cap;
    }
    c->t[c->nt++] = (wt_tok){.kind = kind, .line = line, .col = col, .s = s, .len = len};
    return true;
}

bool pw__wt_utf8_ok(const char *s, size_t n) {
    const unsigned char *p = (const unsigned char *)s, *e = p + n;
    while (p < e) {
        unsigned char b = *p;
        if (b < 0x80) {
            p++;
            continue;
        }
        int k;
        uint32_t cp, min;
        if ((b & 0xE0) == 0xC0)
            k = 1, cp = b & 0x1F, min = 0x80;
        else if ((b & 0xF0) == 0xE0)
            k = 2, cp = b & 0x0F, min = 0x800;
        else if ((b & 0xF8) == 0xF0)
            k = 3, cp = b & 0x07, min = 0x10000;
        else
            return false;
        if (e - p <= k) return false;
        for (int i = 1; i <= k; i++) {
            if ((p[i] & 0xC0) != 0x80) return false;
            cp = cp << 6 | (p[i] & 0x3F);
        }
        if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp < 0xE000)) return false;
        p += k + 1;
    }
    return true;
}

/* Scans a string starting at the opening quote; returns the index past the closing
 * quote, or 0 on an unterminated/illegal string (error set). */
static size_t scan_string(wt_ctx *c, size_t i, uint32_t line, uint32_t col) {
    const char *s = c->src;
    size_t start = ++i;
    while (i < c->len && s[i] != '"') {
        unsigned char ch = (unsigned char)s[i];
        if (ch < 0x20 || ch == 0x7F) {
            wt_tok at = {.line = line, .col = col};
            pw__wt_fail(c, &at,
                        ch == '\n' ? "unclosed string" : "illegal control character in string");
            return 0;
        }
        if (ch == '\\') {
            if (i + 1 >= c->len) break;
            i += 2;
            continue;
        }
        i++;
    }
    if (i >= c->len) {
        wt_tok at = {.line = line, .col = col};
        pw__wt_fail(c, &at, "unclosed string");
        return 0;
    }
    if (!pw__wt_utf8_ok(s + start, i - start)) {
        wt_tok at = {.line = line, .col = col};
        pw__wt_fail(c, &at, "malformed UTF-8 encoding");
        return 0;
    }
    return i + 1;
}

/* ',' ';' '[' ']' '{' '}' only ever occur in reserved tokens (";;" starts a comment). */
static bool is_reserved_char(const char *s, size_t n, size_t i) {
    char ch = s[i];
    if (ch == ';') return !(i + 1 < n && s[i + 1] == ';');
    return ch == ',' || ch == '[' || ch == ']' || ch == '{' || ch == '}';
}

/* Drops every annotation "(@id ...)" except @custom and @name, which the module parser
 * places (anywhere else they are misplaced). Their contents must nest properly. */
static bool strip_annotations(wt_ctx *c) {
    size_t k = 0;
    for (size_t i = 0; i < c->nt;) {
        wt_tok *t = &c->t[i];
        bool keep = t->kind != WT_ANNOT || (t->len == 6 && memcmp(t->s, "custom", 6) == 0) ||
                    (t->len == 4 && memcmp(t->s, "name", 4) == 0);
        if (keep) {
            c->t[k++] = c->t[i++];
            continue;
        }
        size_t depth = 1, j = i + 1;
        while (depth && j < c->nt) {
            if (c->t[j].kind == WT_LP || c->t[j].kind == WT_ANNOT)
                depth++;
            else if (c->t[j].kind == WT_RP)
                depth--;
            else if (c->t[j].kind == WT_EOF)
                break;
            j++;
        }
        if (depth) return pw__wt_fail(c, t, "unclosed annotation");
        i = j;
    }
    c->nt = k;
    return true;
}

bool pw__wt_lex(wt_ctx *c) {
    const char *s = c->src;
    size_t i = 0, n = c->len;
    uint32_t line = 1;
    size_t line_start = 0;
    int adepth = 0; /* parentheses open inside an annotation */
#define COL ((uint32_t)(i - line_start + 1))
    while (i < n) {
        unsigned char ch = (unsigned char)s[i];
        if (ch == '\n') {
            i++;
            line++;
            line_start = i;
            continue;
        }
        if (ch == ' ' || ch == '\t' || ch == '\r') {
            i++;
            continue;
        }
        if (ch == ';' && i + 1 < n && s[i + 1] == ';') {
            while (i < n && s[i] != '\n' && s[i] != '\r')
                i++;
            continue;
        }
        if (ch == '(' && i + 1 < n && s[i + 1] == ';') {
            uint32_t l0 = line, c0 = COL;
            int depth = 1;
            i += 2;
            while (i < n && depth > 0) {
                if (s[i] == '(' && i + 1 < n && s[i + 1] == ';')
                    depth++, i += 2;
                else if (s[i] == ';' && i + 1 < n && s[i + 1] == ')')
                    depth--, i += 2;
                else if (s[i] == '\n')
                    i++, line++, line_start = i;
                else
                    i++;
            }
            if (depth > 0) {
                wt_tok at = {.line = l0, .col = c0};
                return pw__wt_fail(c, &at, "unclosed comment");
            }
            continue;
        }
        if (ch == '(') {
            if (i + 1 < n && s[i + 1] == '@') {
                size_t j = i + 2;
                while (j < n && is_idchar((unsigned char)s[j]))
                    j++;
                if (j == i + 2 && j < n && s[j] == '"') {
                    size_t e = scan_string(c, j, line, COL);
                    if (!e) return false;
                    wt_tok at = {.kind = WT_STR,
                                 .line = line,
                                 .col = COL,
                                 .s = s + j + 1,
                                 .len = (uint32_t)(e - j - 2)};
                    wt_str id;
                    if (!pw__wt_string(c, &at, &id)) return false;
                    if (id.len == 0 && adepth == 0)
                        return pw__wt_fail(c, &at, "empty annotation id");
                    if (!pw__wt_utf8_ok(id.s, id.len))
                        return pw__wt_fail(c, &at, "malformed UTF-8 encoding");
                    if (!push(c, WT_ANNOT, line, COL, s + j + 1, (uint32_t)(e - j - 2)))
                        return false;
                    adepth++;
                    i = e;
                    continue;
                }
                if (j == i + 2 && adepth == 0) {
                    wt_tok at = {.line = line, .col = COL};
                    return pw__wt_fail(c, &at, "empty annotation id");
                }
                if (j == i + 2) {
                    /* inside an annotation "(@" alone is "(" and a reserved token */
                    if (!push(c, WT_LP, line, COL, s + i, 1)) return false;
                    adepth++;
                    i++;
                    continue;
                }
                if (!push(c, WT_ANNOT, line, COL, s + i + 2, (uint32_t)(j - i - 2))) return false;
                adepth++;
                i = j;
                continue;
            }
            if (!push(c, WT_LP, line, COL, s + i, 1)) return false;
            if (adepth) adepth++;
            i++;
            continue;
        }
        if (ch == ')') {
            if (adepth) adepth--;
            if (!push(c, WT_RP, line, COL, s + i, 1)) return false;
            i++;
            continue;
        }
        if (ch == '"' || is_idchar(ch) || is_reserved_char(s, n, i)) {
            uint32_t col = COL;
            size_t start = i;
            int strings = 0, idchars = 0, others = 0;
            while (i < n &&
                   (s[i] == '"' || is_idchar((unsigned char)s[i]) || is_reserved_char(s, n, i))) {
                if (is_reserved_char(s, n, i)) {
                    i++;
                    others++;
                } else if (s[i] == '"') {
                    size_t e = scan_string(c, i, line, COL);
                    if (!e) return false;
                    i = e;
                    strings++;
                } else {
                    i++;
                    idchars++;
                }
            }
            uint32_t len = (uint32_t)(i - start);
            const char *t = s + start;
            bool ok;
            if (others) {
                ok = push(c, WT_RESERVED, line, col, t, len);
            } else if (strings == 1 && idchars == 0) {
                ok = push(c, WT_STR, line, col, t + 1, len - 2);
            } else if (t[0] == '$' && strings == 0 && len > 1) {
                ok = push(c, WT_ID, line, col, t + 1, len - 1);
            } else if (t[0] == '$' && strings == 1 && idchars == 1 && t[1] == '"') {
                ok = push(c, WT_ID, line, col, t + 2, len - 3);
                if (ok) c->t[c->nt - 1].quoted = true;
            } else if (strings == 0) {
                ok = push(c, WT_ATOM, line, col, t, len);
            } else {
                ok = push(c, WT_RESERVED, line, col, t, len);
            }
            if (!ok) return false;
            continue;
        }
        wt_tok at = {.line = line, .col = COL};
        if (ch >= 0x80) {
            /* Non-ASCII outside strings and comments is never a token. */
            return pw__wt_fail(c, &at, "malformed UTF-8 encoding or unknown character");
        }
        return pw__wt_fail(c, &at, "unexpected character");
    }
    if (!push(c, WT_EOF, line, COL, s + n, 0)) return false;
#undef COL
    return strip_annotations(c);
}

bool pw__wt_is(const wt_tok *t, const char *kw) {
    size_t n = strlen(kw);
    return t->kind == WT_ATOM && t->len == n && memcmp(t->s, kw, n) == 0;
}

static int hexval(char ch) {
    if (ch >= '0' && ch <= '9') return ch - '0';
    if (ch >= 'a' && ch <= 'f') return ch - 'a' + 10;
    if (ch >= 'A' && ch <= 'F') return ch - 'A' + 10;
    return -1;
}

static bool put_utf8(char *o, size_t *k, uint32_t cp) {
    if (cp < 0x80) {
        o[(*k)++] = (char)cp;
    } else if (cp < 0x800) {
        o[(*k)++] = (char)(0xC0 | cp >> 6);
        o[(*k)++] = (char)(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
        if (cp >= 0xD800 && cp < 0xE000) return false;
        o[(*k)++] = (char)(0xE0 | cp >> 12);
        o[(*k)++] = (char)(0x80 | (cp >> 6 & 0x3F));
        o[(*k)++] = (char)(0x80 | (cp & 0x3F));
    } else if (cp < 0x110000) {
        o[(*k)++] = (char)(0xF0 | cp >> 18);
        o[(*k)++] = (char)(0x80 | (cp >> 12 & 0x3F));
        o[(*k)++] = (char)(0x80 | (cp >> 6 & 0x3F));
        o[(*k)++] = (char)(0x80 | (cp & 0x3F));
    } else {
        return false;
    }
    return true;
}

bool pw__wt_string(wt_ctx *c, const wt_tok *t, wt_str *out) {
    if (!memchr(t->s, '\\', t->len)) {
        out->s = t->s;
        out->len = t->len;
        return true;
    }
    char *o = pw__wt_alloc(c, t->len + 1);
    if (!o) return pw__wt_fail(c, t, "out of memory");
    size_t k = 0;
    for (uint32_t i = 0; i < t->len; i++) {
        char ch = t->s[i];
        if (ch != '\\') {
            o[k++] = ch;
            continue;
        }
        if (++i >= t->len) return pw__wt_fail(c, t, "illegal escape");
        ch = t->s[i];
        switch (ch) {
        case 't': o[k++] = '\t'; break;
        case 'n': o[k++] = '\n'; break;
        case 'r': o[k++] = '\r'; break;
        case '"': o[k++] = '"'; break;
        case '\'': o[k++] = '\''; break;
        case '\\': o[k++] = '\\'; break;
        case 'u': {
            if (i + 1 >= t->len || t->s[i + 1] != '{') return pw__wt_fail(c, t, "illegal escape");
            i += 2;
            uint32_t cp = 0;
            int digits = 0;
            bool under = false;
            while (i < t->len && t->s[i] != '}') {
                if (t->s[i] == '_' && digits && !under) {
                    under = true;
                    i++;
                    continue;
                }
                int h = hexval(t->s[i]);
                if (h < 0) return pw__wt_fail(c, t, "illegal escape");
                if (cp > 0x10FFFF) return pw__wt_fail(c, t, "illegal escape");
                cp = cp * 16 + (uint32_t)h;
                digits++;
                under = false;
                i++;
            }
            if (i >= t->len || !digits || under) return pw__wt_fail(c, t, "illegal escape");
            if (!put_utf8(o, &k, cp)) return pw__wt_fail(c, t, "illegal escape");
            break;
        }
        default: {
            int h1 = hexval(ch), h2 = i + 1 < t->len ? hexval(t->s[i + 1]) : -1;
            if (h1 < 0 || h2 < 0) return pw__wt_fail(c, t, "illegal escape");
            o[k++] = (char)(h1 * 16 + h2);
            i++;
        }
        }
    }
    out->s = o;
    out->len = (uint32_t)k;
    return true;
}

/* ---------------------------------------------------------------- numbers */

/* Digits with single underscores between them; base 10 or 16. Returns the count of
 * characters consumed (0: none/bad). */
static size_t digits(const char *s, size_t n, int base) {
    size_t i = 0;
    bool last_digit = false;
    while (i < n) {
        char ch = s[i];
        bool d = base == 16 ? hexval(ch) >= 0 : (ch >= '0' && ch <= '9');
        if (d) {
            last_digit = true;
        } else if (ch == '_' && last_digit && i + 1 < n &&
                   (base == 16 ? hexval(s[i + 1]) >= 0 : (s[i + 1] >= '0' && s[i + 1] <= '9'))) {
            last_digit = false;
        } else {
            break;
        }
        i++;
    }
    return i;
}

/* Unsigned literal (dec or 0x hex) of the whole string; false on syntax or > 64 bits. */
static bool parse_nat(const char *s, size_t n, uint64_t *out) {
    int base = 10;
    if (n > 2 && s[0] == '0' && s[1] == 'x') base = 16, s += 2, n -= 2;
    if (!n || digits(s, n, base) != n) return false;
    uint64_t v = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] == '_') continue;
        uint64_t d = (uint64_t)hexval(s[i]);
        if (v > (UINT64_MAX - d) / (uint64_t)base) return false;
        v = v * (uint64_t)base + d;
    }
    *out = v;
    return true;
}

bool pw__wt_nat64(const wt_tok *t, uint64_t *out) {
    return t->kind == WT_ATOM && parse_nat(t->s, t->len, out);
}

bool pw__wt_nat32(const wt_tok *t, uint32_t *out) {
    uint64_t v;
    if (!pw__wt_nat64(t, &v) || v > UINT32_MAX) return false;
    *out = (uint32_t)v;
    return true;
}

bool pw__wt_int(const wt_tok *t, int bits, uint64_t *out) {
    if (t->kind != WT_ATOM || !t->len) return false;
    const char *s = t->s;
    size_t n = t->len;
    int sign = 0;
    if (s[0] == '+' || s[0] == '-') sign = s[0] == '-' ? -1 : 1, s++, n--;
    uint64_t v;
    if (!parse_nat(s, n, &v)) return false;
    uint64_t umax = bits == 64 ? UINT64_MAX : ((uint64_t)1 << bits) - 1;
    uint64_t half = (uint64_t)1 << (bits - 1);
    if (sign == 0) {
        if (v > umax) return false;
        *out = v;
    } else if (sign > 0) {
        if (v >= half) return false;
        *out = v;
    } else {
        if (v > half) return false;
        *out = (0 - v) & umax;
    }
    return true;
}

/* Float literal syntax check; fills buf with the underscore-free text for strtod.
 * kind: 0 number, 1 inf, 2 nan, 3 nan:0x payload (in *payload). */
static bool float_syntax(const wt_tok *t, char *buf, size_t cap, int *kind, bool *neg,
                         uint64_t *payload) {
    if (t->kind != WT_ATOM || !t->len) return false;
    const char *s = t->s;
    size_t n = t->len;
    *neg = false;
    if (s[0] == '+' || s[0] == '-') *neg = s[0] == '-', s++, n--;
    if (n == 3 && memcmp(s, "inf", 3) == 0) return *kind = 1, true;
    if (n == 3 && memcmp(s, "nan", 3) == 0) return *kind = 2, true;
    if (n > 6 && memcmp(s, "nan:0x", 6) == 0) {
        *kind = 3;
        return parse_nat(s + 4, n - 4, payload);
    }
    *kind = 0;
    int base = 10;
    size_t i = 0;
    if (n > 2 && s[0] == '0' && s[1] == 'x') base = 16, i = 2;
    size_t d = digits(s + i, n - i, base);
    if (!d) return false;
    i += d;
    if (i < n && s[i] == '.') {
        i++;
        i += digits(s + i, n - i, base);
    }
    if (i < n && (base == 10 ? (s[i] == 'e' || s[i] == 'E') : (s[i] == 'p' || s[i] == 'P'))) {
        i++;
        if (i < n && (s[i] == '+' || s[i] == '-')) i++;
        size_t e = digits(s + i, n - i, 10);
        if (!e) return false;
        i += e;
    }
    if (i != n) return false;
    size_t k = 0;
    if (n + 2 > cap) return false;
    if (*neg) buf[k++] = '-';
    for (size_t j = 0; j < n; j++)
        if (s[j] != '_') buf[k++] = s[j];
    buf[k] = 0;
    return true;
}

/* The bits of a float literal of width 32 or 64 (one rule for both: infinities, the
 * canonical NaN, nan:0x payloads of 1 .. mantissa mask, finite values rounded by
 * strtof/strtod and refused when they overflow to infinity). */
static bool float_bits(const wt_tok *t, bool is64, uint64_t *out) {
    const uint64_t inf = is64 ? 0x7FF0000000000000ull : 0x7F800000u;
    const uint64_t quiet = is64 ? 0x0008000000000000ull : 0x00400000u;
    const uint64_t sign = is64 ? 0x8000000000000000ull : 0x80000000u;
    const int mbits = is64 ? 52 : 23;
    char stack[128];
    size_t cap = t->len + 8;
    char *buf = cap <= sizeof stack ? stack : malloc(cap);
    if (!buf) return false;
    int kind;
    bool neg, ok = true;
    uint64_t payload = 0;
    if (!float_syntax(t, buf, cap, &kind, &neg, &payload)) {
        ok = false;
    } else if (kind == 1) {
        *out = inf;
    } else if (kind == 2) {
        *out = inf | quiet;
    } else if (kind == 3) {
        if (payload == 0 || payload >= (1ull << mbits)) ok = false;
        *out = inf | payload;
    } else {
        errno = 0;
        if (is64) {
            double f = strtod(buf, NULL);
            ok = !isinf(f);
            memcpy(out, &f, 8);
        } else {
            float f = strtof(buf, NULL);
            uint32_t b;
            ok = !isinf(f);
            memcpy(&b, &f, 4);
            *out = b;
        }
        neg = false; /* the sign is in the text */
    }
    if (ok && neg) *out |= sign;
    if (buf != stack) free(buf);
    return ok;
}

bool pw__wt_f32(const wt_tok *t, uint32_t *out) {
    uint64_t b = 0;
    bool ok = float_bits(t, false, &b);
    *out = (uint32_t)b;
    return ok;
}

bool pw__wt_f64(const wt_tok *t, uint64_t *out) {
    return float_bits(t, true, out);
}

bool pw__wt_is_num(const wt_tok *t) {
    if (t->kind != WT_ATOM || !t->len) return false;
    char ch = t->s[0];
    if (ch == '+' || ch == '-') {
        if (t->len < 2) return false;
        ch = t->s[1];
    }
    return ch >= '0' && ch <= '9';
}

/* ---------------------------------------------------------------- encoders */

bool pw__wt_byte(pb_buf *b, uint8_t v) {
    return pb_buf_put(b, &v, 1);
}

bool pw__wt_u64(pb_buf *b, uint64_t v) {
    uint8_t tmp[10];
    size_t k = 0;
    do {
        uint8_t byte = v & 0x7F;
        v >>= 7;
        if (v) byte |= 0x80;
        tmp[k++] = byte;
    } while (v);
    return pb_buf_put(b, tmp, k);
}

bool pw__wt_u32(pb_buf *b, uint32_t v) {
    return pw__wt_u64(b, v);
}

bool pw__wt_s64(pb_buf *b, int64_t v) {
    uint8_t tmp[10];
    size_t k = 0;
    for (;;) {
        uint8_t byte = v & 0x7F;
        v >>= 7; /* arithmetic shift: implementation-defined but universal */
        bool done = (v == 0 && !(byte & 0x40)) || (v == -1 && (byte & 0x40));
        if (!done) byte |= 0x80;
        tmp[k++] = byte;
        if (done) break;
    }
    return pb_buf_put(b, tmp, k);
}

bool pw__wt_s32(pb_buf *b, int32_t v) {
    return pw__wt_s64(b, v);
}

bool pw__wt_name(pb_buf *b, const wt_str *s) {
    return pw__wt_u32(b, s->len) && pb_buf_put(b, s->s, s->len);
}
