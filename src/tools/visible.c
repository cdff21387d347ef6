/*
 * visible.c — text shown to a person who must decide on it (a permission prompt, a
 * title) made exactly visible: nothing in it can hide, reorder or overwrite what the
 * person reads.
 *
 * Rules: a newline becomes "⏎" (followed by a real line break only in multi-line
 * output), tab "\t", carriage return "\r", ESC "␛", every other C0 control and DEL
 * "\xNN", C1 controls and the invisible or reordering format characters (U+200B–U+200F,
 * U+202A–U+202E, U+2060–U+2064, U+2066–U+2069, U+FEFF) "<U+XXXX>", bytes that are not
 * valid UTF-8 "\xNN". Past `max` input bytes the text is cut at a character boundary
 * and ends with "… [N more bytes]", so a cut is never silent.
 */
#include "peri/tools.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct vbuf {
    char *p;
    size_t n, cap;
    bool oom;
} vbuf;

static void put(vbuf *b, const char *s, size_t n) {
    if (b->oom) return;
    if (b->n + n + 1 > b->cap) {
        size_t nc = (b->cap ? b->cap * 2 : 64) + n;
        char *np = realloc(b->p, nc);
        if (!np) {
            b->oom = true;
            return;
        }
        b->p = np;
        b->cap = nc;
    }
    memcpy(b->p + b->n, s, n);
    b->n += n;
    b->p[b->n] = '\0';
}

/* Length of the valid UTF-8 sequence at s (1..4), 0 when invalid; *cp its code point. */
static size_t utf8_at(const unsigned char *s, size_t avail, unsigned *cp) {
    unsigned c = s[0];
    size_t n = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    if (!n || n > avail) return 0;
    unsigned v = n == 1 ? c : n == 2 ? c & 0x1F : n == 3 ? c & 0x0F : c & 0x07;
    for (size_t i = 1; i < n; i++) {
        if ((s[i] & 0xC0) != 0x80) return 0;
        v = (v << 6) | (s[i] & 0x3F);
    }
    static const unsigned min[5] = {0, 0, 0x80, 0x800, 0x10000};
    if (v < min[n] || v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF)) return 0;
    *cp = v;
    return n;
}

static bool hidden_format(unsigned cp) {
    return (cp >= 0x80 && cp <= 0x9F) || (cp >= 0x200B && cp <= 0x200F) ||
           (cp >= 0x202A && cp <= 0x202E) || (cp >= 0x2060 && cp <= 0x2064) ||
           (cp >= 0x2066 && cp <= 0x2069) || cp == 0xFEFF;
}

char *ptl_visible(const char *text, size_t max, bool multiline) {
    vbuf b = {0};
    put(&b, "", 0);
    const unsigned char *s = (const unsigned char *)(text ? text : "");
    size_t len = strlen((const char *)s), i = 0;
    char tmp[24];
    while (i < len && i < max) {
        unsigned cp = 0;
        size_t n = utf8_at(s + i, len - i, &cp);
        if (n == 0) {
            snprintf(tmp, sizeof tmp, "\\x%02X", s[i]);
            put(&b, tmp, strlen(tmp));
            i++;
            continue;
        }
        if (i + n > max) break;
        if (cp == '\n')
            put(&b, multiline ? "\xE2\x8F\x8E\n" : "\xE2\x8F\x8E", multiline ? 4 : 3);
        else if (cp == '\t')
            put(&b, "\\t", 2);
        else if (cp == '\r')
            put(&b, "\\r", 2);
        else if (cp == 0x1B)
            put(&b, "\xE2\x90\x9B", 3);
        else if (cp < 0x20 || cp == 0x7F) {
            snprintf(tmp, sizeof tmp, "\\x%02X", cp);
            put(&b, tmp, strlen(tmp));
        } else if (hidden_format(cp)) {
            snprintf(tmp, sizeof tmp, "<U+%04X>", cp);
            put(&b, tmp, strlen(tmp));
        } else
            put(&b, (const char *)s + i, n);
        i += n;
    }
    if (i < len) {
        snprintf(tmp, sizeof tmp, "%zu", len - i);
        put(&b, "\xE2\x80\xA6 [", 5);
        put(&b, tmp, strlen(tmp));
        put(&b, " more bytes]", 12);
    }
    if (b.oom) {
        free(b.p);
        return NULL;
    }
    return b.p;
}
