/*
 * json_number.c — number text <-> double for the JSON library, independent of the C
 * locale (LC_NUMERIC may make strtod and printf use ',' for the decimal point).
 *
 * Reading: a token with at most 19 significant digits whose value and power of ten are
 * exact in a double (Clinger's fast path: mantissa <= 2^53, |exponent| <= 22) is one
 * correctly rounded multiplication or division; anything else goes to strtod with the
 * '.' swapped for the locale's decimal point, so strtod's correct rounding is kept.
 * Writing: snprintf("%.17g"), then whatever the locale put between the digits becomes
 * '.', then jansson's touches (".0" for integral-looking text, a bare exponent).
 */
#include "json_int.h"

#include <errno.h>
#include <langinfo.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const double pj__pow10[] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                   1e8,  1e9,  1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
                                   1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};

/* Clinger's fast path; false when the token needs the general conversion. */
static bool pj__fast(const char *p, const char *end, double *out) {
    bool neg = false;
    if (p < end && *p == '-') neg = true, p++;
    uint64_t m = 0;
    int digits = 0, exp10 = 0;
    bool frac = false;
    for (; p < end && *p != 'e' && *p != 'E'; p++) {
        if (*p == '.') {
            frac = true;
            continue;
        }
        if (m == 0 && *p == '0') { /* leading zeros carry no significance */
            if (frac) exp10--;
            continue;
        }
        if (++digits > 19) return false;
        m = m * 10 + (uint64_t)(*p - '0');
        if (frac) exp10--;
    }
    if (p < end) { /* the exponent */
        p++;
        bool eneg = false;
        if (*p == '+' || *p == '-') eneg = *p == '-', p++;
        int e = 0;
        for (; p < end; p++) {
            if (e > 100000) return false;
            e = e * 10 + (*p - '0');
        }
        exp10 += eneg ? -e : e;
    }
    if (m > (UINT64_C(1) << 53)) return false;
    double v = (double)m;
    if (m == 0) {
        v = 0.0;
    } else if (exp10 < 0) {
        if (exp10 < -22) return false;
        v /= pj__pow10[-exp10];
    } else {
        if (exp10 > 22) return false;
        v *= pj__pow10[exp10];
    }
    *out = neg ? -v : v;
    return true;
}

bool pj__strtod(const char *tok, size_t len, double *out) {
    if (pj__fast(tok, tok + len, out)) return true;
    const char *dp = nl_langinfo(RADIXCHAR); /* thread-safe, unlike localeconv */
    size_t dlen = dp && *dp ? strlen(dp) : 0;
    if (!dlen) dp = ".", dlen = 1;
    char small[128], *buf = small;
    if (len + dlen + 1 > sizeof small && !(buf = malloc(len + dlen + 1))) return false;
    size_t n = 0;
    for (size_t i = 0; i < len; i++) {
        if (tok[i] == '.') {
            memcpy(buf + n, dp, dlen);
            n += dlen;
        } else {
            buf[n++] = tok[i];
        }
    }
    buf[n] = 0;
    errno = 0;
    double v = strtod(buf, NULL);
    bool overflow = (v == HUGE_VAL || v == -HUGE_VAL) && errno == ERANGE;
    if (buf != small) free(buf);
    if (overflow) return false;
    *out = v;
    return true;
}

int pj__dtostr(char *out, size_t size, double v, int prec) {
    if (prec <= 0) prec = 17;
    char tmp[128];
    int r = snprintf(tmp, sizeof tmp, "%.*g", prec, v);
    if (r < 0 || (size_t)r >= sizeof tmp) return -1;
    /* back to '.': whatever the locale wrote that is not part of a number is its point */
    size_t n = 0;
    bool point = false, exp = false;
    for (int i = 0; i < r; i++) {
        char c = tmp[i];
        if ((c >= '0' && c <= '9') || c == '-' || c == '+') {
            out[n++] = c;
        } else if (c == 'e' || c == 'E') {
            out[n++] = 'e';
            exp = true;
        } else if (!point && !exp) {
            out[n++] = '.';
            point = true;
            while (i + 1 < r && !(tmp[i + 1] >= '0' && tmp[i + 1] <= '9'))
                i++; /* a multi-byte decimal point */
        }
        if (n + 4 >= size) return -1;
    }
    out[n] = 0;
    if (!point && !exp) { /* integral-looking: keep it a real when read back */
        out[n++] = '.';
        out[n++] = '0';
        out[n] = 0;
    }
    char *e = strchr(out, 'e');
    if (e) { /* "1e+20" -> "1e20", "1e-05" -> "1e-5" */
        char *start = e + 1, *digits = e + 1;
        if (*digits == '+' || *digits == '-') digits++;
        if (*start == '-') start++;
        while (*digits == '0' && digits[1])
            digits++;
        memmove(start, digits, strlen(digits) + 1);
        n = strlen(out);
    }
    return (int)n;
}
