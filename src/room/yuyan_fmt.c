/*
 * yuyan_fmt.c — the text forms the 豫言 file-style host gives floats and dates, as
 * the reference (JavaScript) host computes them: 小数转字符串 is Number.toFixed(6)
 * with its special cases, 小数精确表示 is toExponential(16)/toFixed trimmed (%.17g
 * stripped), 字符串转小数 is trim + nan/inf prefixes + parseFloat, and the date
 * formatter knows only %Y %m %d %H %M %S %%.
 * JavaScript rounds exact halves away from zero (toFixed/toExponential pick "the
 * larger n"); glibc's printf rounds them to even. printf does the common case; when
 * an exact half is possible, rounding is done here on the exact decimal expansion.
 */
#include "yuyan_int.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The exact decimal expansion of finite |x|: up to 309 integer digits, '.', 1100
 * fraction digits (every double's expansion ends before that: 2^-1074 has 1074). */
#define EXACT_FRAC 1100
#define EXACT_MAX  (EXACT_FRAC + 320)
typedef struct exact {
    char s[EXACT_MAX];
    size_t int_len; /* digits before '.' */
} exact;

static void exact_of(exact *e, double ax) {
    snprintf(e->s, sizeof e->s, "%.*f", EXACT_FRAC, ax);
    e->int_len = strcspn(e->s, ".");
}

/* Rounds the digit string d[0..n) half up at position keep (digits after it are
 * dropped); returns true when a carry ran off the front (d becomes 1 then zeros). */
static bool round_half_up(char *d, size_t n, size_t keep) {
    if (keep >= n || d[keep] < '5') return false;
    for (size_t i = keep; i-- > 0;) {
        if (d[i] == '9') {
            d[i] = '0';
        } else {
            d[i]++;
            return false;
        }
    }
    return true;
}

/* The exact decimal digits of |x| without the point (the int part, then EXACT_FRAC
 * fraction digits) into d; their count, and the int part's length in *il. */
static size_t digits_of(double x, char d[EXACT_MAX], size_t *il) {
    exact e;
    exact_of(&e, fabs(x));
    *il = e.int_len;
    memcpy(d, e.s, *il);
    memcpy(d + *il, e.s + *il + 1, EXACT_FRAC);
    return *il + EXACT_FRAC;
}

/* toFixed(f) of finite |x| < 1e21, sign added by the caller's x. */
static bool to_fixed(pb_buf *b, double x, int f) {
    char d[EXACT_MAX];
    size_t il, n = digits_of(x, d, &il), keep = il + (size_t)f;
    bool carry = round_half_up(d, n, keep);
    /* JS toFixed: "-" exactly when x < 0, so a negative value that rounds to zero
     * keeps its sign ("-0.000000"). */
    if (x < 0 && !pb_buf_putc(b, '-')) return false;
    if (carry && !pb_buf_putc(b, '1')) return false;
    if (!pb_buf_put(b, d, il)) return false;
    if (f > 0 && (!pb_buf_putc(b, '.') || !pb_buf_put(b, d + il, (size_t)f))) return false;
    return true;
}

/* toExponential(16) of finite non-zero x: mantissa digits (17) and exponent. */
static void to_exp17(double x, char dig[18], int *exp10) {
    char d[EXACT_MAX];
    size_t il, n = digits_of(x, d, &il), first = 0;
    while (first < n && d[first] == '0')
        first++;
    int ex = (int)il - 1 - (int)first;
    bool carry = round_half_up(d + first, n - first, 17);
    if (carry) {
        dig[0] = '1';
        memset(dig + 1, '0', 16);
        ex++;
    } else {
        memcpy(dig, d + first, 17);
    }
    dig[17] = 0;
    *exp10 = ex;
}

static bool nonfinite(pb_buf *b, double x) {
    return pb_buf_puts(b, isnan(x) ? "nan" : x > 0 ? "inf" : "-inf");
}

/* Could rounding |x| to 17 significant digits meet an exact half (where JavaScript and
 * glibc part ways)? Digits 18..41 of a correctly rounded %.40e read 5000… or 4999…
 * only then (or when so close to half that the exact path must decide anyway). */
static bool near_half17(double ax) {
    char t[64];
    snprintf(t, sizeof t, "%.40e", ax); /* d.<40 digits>e±XX: digit k (k >= 2) is t[k] */
    char first = t[18], rest = first == '5' ? '0' : first == '4' ? '9' : 0;
    if (!rest) return false;
    for (int k = 19; k <= 41; k++)
        if (t[k] != rest) return false;
    return true;
}

/* Strips fraction zeros, then a bare point, from the number written since at. */
static void strip_zeros(pb_buf *b, size_t at) {
    if (!memchr(b->p + at, '.', b->len - at)) return;
    while (b->len > at && b->p[b->len - 1] == '0')
        b->len--;
    if (b->p[b->len - 1] == '.') b->len--;
    b->p[b->len] = 0;
}

bool pr__yy_fmt_exact(pb_buf *b, double x) {
    if (!isfinite(x)) return nonfinite(b, x);
    if (x == 0) return pb_buf_puts(b, signbit(x) ? "-0" : "0");
    char dig[18];
    int ex;
    bool slow = near_half17(fabs(x));
    if (slow) {
        to_exp17(x, dig, &ex);
    } else {
        char t[40]; /* -d.<16 digits>e±XXX */
        snprintf(t, sizeof t, "%.16e", fabs(x));
        dig[0] = t[0];
        memcpy(dig + 1, t + 2, 16);
        dig[17] = 0;
        ex = atoi(t + 19);
    }
    if (ex < -4 || ex >= 17) {
        size_t n = 17;
        while (n > 1 && dig[n - 1] == '0')
            n--;
        char tail[16];
        snprintf(tail, sizeof tail, "e%c%02d", ex >= 0 ? '+' : '-', ex >= 0 ? ex : -ex);
        return (x >= 0 || pb_buf_putc(b, '-')) && pb_buf_put(b, dig, 1) &&
               (n == 1 || (pb_buf_putc(b, '.') && pb_buf_put(b, dig + 1, n - 1))) &&
               pb_buf_puts(b, tail);
    }
    size_t at = b->len;
    int f = 16 - ex > 0 ? 16 - ex : 0;
    if (slow) {
        if (!to_fixed(b, x, f)) return false;
    } else {
        char t[64];
        snprintf(t, sizeof t, "%.*f", f, x);
        if (!pb_buf_puts(b, t)) return false;
    }
    strip_zeros(b, at);
    return true;
}

bool pr__yy_fmt_fixed(pb_buf *b, double x) {
    if (!isfinite(x)) return nonfinite(b, x);
    if (x == 0 && signbit(x)) return pb_buf_puts(b, "-0.000000");
    if (fabs(x) >= 1e21) {
        char tmp[400];
        snprintf(tmp, sizeof tmp, "%.0f.000000", x); /* integers: printed exactly */
        return pb_buf_puts(b, tmp);
    }
    /* An exact half at the 6th decimal needs 2·|x|·10^6 odd, i.e. |x|·128 an odd
     * integer: only then round it here (half away from zero); else printf agrees.
     * (Tested without libm's fmod: at 2^53 and above every double is even.) */
    double h = fabs(x) * 128;
    if (h < 0x1p53 && h == (double)(int64_t)h && ((int64_t)h & 1)) return to_fixed(b, x, 6);
    char t[64];
    snprintf(t, sizeof t, "%.6f", x);
    return pb_buf_puts(b, t);
}

/* ECMAScript WhiteSpace + LineTerminator (String.prototype.trim), as UTF-8. */
static size_t js_space(const uint8_t *s, size_t n) {
    if (!n) return 0;
    uint8_t c = s[0];
    if (c == ' ' || (c >= 9 && c <= 13)) return 1;
    if (n >= 2 && c == 0xC2 && s[1] == 0xA0) return 2;
    if (n < 3) return 0;
    uint32_t u = (uint32_t)(c & 0x0F) << 12 | (uint32_t)(s[1] & 0x3F) << 6 | (s[2] & 0x3F);
    if ((c & 0xF0) != 0xE0) return 0;
    if (u == 0x1680 || (u >= 0x2000 && u <= 0x200A) || u == 0x2028 || u == 0x2029 || u == 0x202F ||
        u == 0x205F || u == 0x3000 || u == 0xFEFF)
        return 3;
    return 0;
}

static bool prefix_ci(const uint8_t *s, size_t n, const char *w) {
    size_t l = strlen(w);
    if (n < l) return false;
    for (size_t i = 0; i < l; i++)
        if ((s[i] | 0x20) != w[i]) return false;
    return true;
}

double pr__yy_parse_float(const uint8_t *s, size_t n) {
    size_t k;
    while ((k = js_space(s, n)) != 0) {
        s += k;
        n -= k;
    }
    size_t sg = n && (s[0] == '+' || s[0] == '-') ? 1 : 0;
    bool neg = sg && s[0] == '-';
    if (prefix_ci(s + sg, n - sg, "nan")) return NAN;
    if (prefix_ci(s + sg, n - sg, "inf")) return neg ? -INFINITY : INFINITY;
    /* parseFloat's StrDecimalLiteral prefix: digits [. digits] [e [+-] digits] */
    size_t i = sg, digits = 0;
    while (i < n && s[i] >= '0' && s[i] <= '9')
        i++, digits++;
    if (i < n && s[i] == '.') {
        size_t j = i + 1, fd = 0;
        while (j < n && s[j] >= '0' && s[j] <= '9')
            j++, fd++;
        if (digits || fd) {
            i = j;
            digits += fd;
        }
    }
    if (!digits) return 0;
    if (i < n && (s[i] == 'e' || s[i] == 'E')) {
        size_t j = i + 1;
        if (j < n && (s[j] == '+' || s[j] == '-')) j++;
        size_t ed = 0;
        while (j < n && s[j] >= '0' && s[j] <= '9')
            j++, ed++;
        if (ed) i = j;
    }
    char stack[128];
    char *t = i < sizeof stack ? stack : malloc(i + 1);
    if (!t) return 0;
    memcpy(t, s, i);
    t[i] = 0;
    double v = strtod(t, NULL);
    if (t != stack) free(t);
    return v;
}

int pr__yy_fmt_date(pb_buf *b, const uint8_t *fmt, size_t n, const struct tm *tm) {
    for (size_t i = 0; i < n; i++) {
        uint8_t c = fmt[i];
        bool letter = i + 1 < n && (((fmt[i + 1] | 0x20) >= 'a' && (fmt[i + 1] | 0x20) <= 'z') ||
                                    fmt[i + 1] == '%');
        if (c != '%' || !letter) {
            if (!pb_buf_putc(b, (char)c)) return -1;
            continue;
        }
        char k = (char)fmt[++i], tmp[32];
        switch (k) {
        case 'Y': snprintf(tmp, sizeof tmp, "%d", tm->tm_year + 1900); break;
        case 'm': snprintf(tmp, sizeof tmp, "%02d", tm->tm_mon + 1); break;
        case 'd': snprintf(tmp, sizeof tmp, "%02d", tm->tm_mday); break;
        case 'H': snprintf(tmp, sizeof tmp, "%02d", tm->tm_hour); break;
        case 'M': snprintf(tmp, sizeof tmp, "%02d", tm->tm_min); break;
        case 'S': snprintf(tmp, sizeof tmp, "%02d", tm->tm_sec); break;
        case '%': snprintf(tmp, sizeof tmp, "%%"); break;
        default: return (unsigned char)k + 1;
        }
        if (!pb_buf_puts(b, tmp)) return -1;
    }
    return 0;
}
