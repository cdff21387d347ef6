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
#include "tools_int.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

/* The text grows in the tools' output buffer (output.c) with no limit of its own: the
 * cut at max is made here, on input bytes, with its marker. */
char *ptl_visible(const char *text, size_t max, bool multiline) {
    ptl__out b;
    ptl__out_init(&b, SIZE_MAX / 2);
    const unsigned char *s = (const unsigned char *)(text ? text : "");
    size_t len = strlen((const char *)s), i = 0;
    char tmp[24];
    while (i < len && i < max) {
        unsigned cp = 0;
        size_t n = utf8_at(s + i, len - i, &cp);
        if (n == 0) {
            snprintf(tmp, sizeof tmp, "\\x%02X", s[i]);
            ptl__out_add(&b, tmp, strlen(tmp));
            i++;
            continue;
        }
        if (i + n > max) break;
        if (cp == '\n')
            ptl__out_add(&b, multiline ? "\xE2\x8F\x8E\n" : "\xE2\x8F\x8E", multiline ? 4 : 3);
        else if (cp == '\t')
            ptl__out_add(&b, "\\t", 2);
        else if (cp == '\r')
            ptl__out_add(&b, "\\r", 2);
        else if (cp == 0x1B)
            ptl__out_add(&b, "\xE2\x90\x9B", 3);
        else if (cp < 0x20 || cp == 0x7F) {
            snprintf(tmp, sizeof tmp, "\\x%02X", cp);
            ptl__out_add(&b, tmp, strlen(tmp));
        } else if (hidden_format(cp)) {
            snprintf(tmp, sizeof tmp, "<U+%04X>", cp);
            ptl__out_add(&b, tmp, strlen(tmp));
        } else
            ptl__out_add(&b, (const char *)s + i, n);
        i += n;
    }
    if (i < len) {
        snprintf(tmp, sizeof tmp, "%zu", len - i);
        ptl__out_add(&b, "\xE2\x80\xA6 [", 5);
        ptl__out_add(&b, tmp, strlen(tmp));
        ptl__out_add(&b, " more bytes]", 12);
    }
    if (b.oom) {
        ptl__out_free(&b);
        return NULL;
    }
    return b.p ? b.p : strdup("");
}
