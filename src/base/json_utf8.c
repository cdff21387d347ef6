/*
 * json_utf8.c — the text rules the parser and the serializer share: strict UTF-8
 * decoding and encoding (shortest forms only, no surrogates, nothing above U+10FFFF:
 * what RFC 3629 and jansson accept) and the two-character escapes of JSON strings.
 */
#include "json_int.h"

size_t pj__utf8_decode(const unsigned char *s, size_t n, int32_t *cp) {
    if (n == 0) return 0;
    unsigned c = s[0];
    if (c < 0x80) {
        *cp = (int32_t)c;
        return 1;
    }
    size_t len;
    int32_t v, min;
    if (c >= 0xC2 && c <= 0xDF) {
        len = 2, v = c & 0x1F, min = 0x80;
    } else if (c >= 0xE0 && c <= 0xEF) {
        len = 3, v = c & 0x0F, min = 0x800;
    } else if (c >= 0xF0 && c <= 0xF4) {
        len = 4, v = c & 0x07, min = 0x10000;
    } else {
        return 0; /* a continuation byte, C0/C1 (always overlong) or F5..FF */
    }
    if (n < len) return 0;
    for (size_t i = 1; i < len; i++) {
        if ((s[i] & 0xC0) != 0x80) return 0;
        v = (v << 6) | (s[i] & 0x3F);
    }
    if (v < min || v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF)) return 0;
    *cp = v;
    return len;
}

bool pj__utf8_valid(const char *s, size_t n) {
    const unsigned char *p = (const unsigned char *)s;
    size_t i = 0;
    while (i < n) {
        if (p[i] < 0x80) { /* the common case, one byte at a time without a call */
            i++;
            continue;
        }
        int32_t cp;
        size_t k = pj__utf8_decode(p + i, n - i, &cp);
        if (!k) return false;
        i += k;
    }
    return true;
}

size_t pj__utf8_encode(int32_t cp, char out[4]) {
    if (cp < 0x80) {
        out[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        out[0] = (char)(0xC0 | (cp >> 6));
        out[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        out[0] = (char)(0xE0 | (cp >> 12));
        out[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        out[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    out[0] = (char)(0xF0 | (cp >> 18));
    out[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
    out[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
    out[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

/* The short escapes as (name, byte) pairs: "\n" stands for a newline, and so on. */
static const char pj__short_escapes[] = "\"\"\\\\//b\bf\fn\nr\rt\t";

char pj__escape_name(unsigned char c) {
    for (const char *e = pj__short_escapes; *e; e += 2)
        if ((unsigned char)e[1] == c) return e[0];
    return 0;
}

int pj__escape_byte(char name) {
    for (const char *e = pj__short_escapes; *e; e += 2)
        if (e[0] == name) return (unsigned char)e[1];
    return -1;
}
