/*
 * visible.c — outside text made visible: whatever a model, an MCP server, a program or
 * a project chose is shown so that nothing in it can hide, reorder or overwrite what a
 * person reads on a terminal, in a log or in a question put to them.
 *
 * One scanner classifies each character (kept, control, invisible format character,
 * byte that is not valid UTF-8); two renderings share it:
 *   - for logs and terminals (pb_visible, pb_buf_put_visible): one message stays one
 *     line, escapes in the \n / \xNN form;
 *   - for a person deciding on it (pb_visible_prompt: a permission prompt, a title):
 *     the same, with a visible newline mark "⏎", ESC as "␛", and a bounded length whose
 *     cut is never silent.
 * Invariant: in either rendering, every byte of the output that is not the input's own
 * kept text is ASCII or one of the two marks above, and every kept character is valid
 * UTF-8 that is neither a control (C0, DEL, C1) nor an invisible format character
 * (U+200B–U+200F, U+202A–U+202E, U+2060–U+2064, U+2066–U+2069, U+FEFF).
 */
#include "visible_int.h"
#include "peri/base.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { V_KEEP, V_CTRL, V_FORMAT, V_BAD };

static bool format_char(unsigned cp) {
    return (cp >= 0x200B && cp <= 0x200F) || (cp >= 0x202A && cp <= 0x202E) ||
           (cp >= 0x2060 && cp <= 0x2064) || (cp >= 0x2066 && cp <= 0x2069) || cp == 0xFEFF;
}

/* The character at u[0..n) (n >= 1): its class, its length in bytes (1 for V_BAD) and
 * its code point (the byte for V_BAD). Valid UTF-8 only: no overlong form, no surrogate,
 * nothing past U+10FFFF. */
static int classify(const unsigned char *u, size_t n, size_t *len, unsigned *cp) {
    unsigned c = u[0];
    *len = 1;
    *cp = c;
    if (c < 0x80) return (c < 0x20 || c == 0x7F) ? V_CTRL : V_KEEP;
    size_t l = (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    if (!l || l > n) return V_BAD;
    unsigned v = l == 2 ? c & 0x1F : l == 3 ? c & 0x0F : c & 0x07;
    for (size_t i = 1; i < l; i++) {
        if ((u[i] & 0xC0) != 0x80) return V_BAD;
        v = (v << 6) | (u[i] & 0x3F);
    }
    static const unsigned least[5] = {0, 0, 0x80, 0x800, 0x10000};
    if (v < least[l] || v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF)) return V_BAD;
    *len = l;
    *cp = v;
    if (v <= 0x9F) return V_CTRL; /* C1 */
    return format_char(v) ? V_FORMAT : V_KEEP;
}

/* Passes the log rendering of one character that is not kept as it is to put. */
static bool put_log_escape(int cls, const unsigned char *u, size_t len, unsigned cp,
                           pb__visible_put_fn put, void *ctx) {
    char tmp[16];
    if (cls == V_FORMAT) {
        int k = snprintf(tmp, sizeof tmp, "<U+%04X>", cp);
        return put(ctx, tmp, (size_t)k);
    }
    if (cp == '\n' || cp == '\r') return put(ctx, cp == '\n' ? "\\n" : "\\r", 2);
    for (size_t i = 0; i < len; i++) { /* a C1 control shows both of its bytes */
        static const char hex[] = "0123456789abcdef";
        char e[4] = {'\\', 'x', hex[u[i] >> 4], hex[u[i] & 15]};
        if (!put(ctx, e, 4)) return false;
    }
    return true;
}

/* Allocates nothing itself, so the log sink can write through it when memory is short. */
bool pb__visible_log(const char *s, size_t n, pb__visible_put_fn put, void *ctx) {
    const unsigned char *u = (const unsigned char *)s;
    size_t start = 0, i = 0;
    while (i < n) {
        size_t len;
        unsigned cp;
        int cls = classify(u + i, n - i, &len, &cp);
        if (cls == V_KEEP || cp == '\t') {
            i += len;
            continue;
        }
        if (i > start && !put(ctx, s + start, i - start)) return false;
        if (!put_log_escape(cls, u + i, len, cp, put, ctx)) return false;
        start = i += len;
    }
    return i == start || put(ctx, s + start, i - start);
}

static bool put_buf(void *ctx, const char *p, size_t n) {
    return pb_buf_put(ctx, p, n);
}

bool pb_buf_put_visible(pb_buf *b, const char *s, size_t n) {
    size_t len0 = b->len;
    if (pb__visible_log(s, n, put_buf, b)) return pb_buf_reserve(b, 0); /* NUL even for n == 0 */
    b->len = len0; /* out of memory: as it was */
    if (b->p) b->p[len0] = 0;
    return false;
}

char *pb_visible(const char *s) {
    pb_buf b = {0};
    if (!s || !pb_buf_put_visible(&b, s, strlen(s))) {
        pb_buf_free(&b); /* storage a failed growth may have left */
        return NULL;
    }
    return pb_buf_take(&b, NULL);
}

/* Appends the prompt rendering of one character that is not kept as it is. */
static bool put_prompt_escape(pb_buf *b, int cls, unsigned cp, bool multiline) {
    char tmp[16];
    const char *lit = NULL;
    switch (cls == V_CTRL ? cp : UINT32_MAX) {
    case '\n': lit = multiline ? "\xE2\x8F\x8E\n" : "\xE2\x8F\x8E"; break;
    case '\t': lit = "\\t"; break;
    case '\r': lit = "\\r"; break;
    case 0x1B: lit = "\xE2\x90\x9B"; break;
    default: break;
    }
    if (lit) return pb_buf_put(b, lit, strlen(lit));
    int k = (cls == V_BAD || (cls == V_CTRL && cp < 0x80))
                ? snprintf(tmp, sizeof tmp, "\\x%02X", cp)
                : snprintf(tmp, sizeof tmp, "<U+%04X>", cp); /* C1 and format characters */
    return pb_buf_put(b, tmp, (size_t)k);
}

char *pb_visible_prompt(const char *text, size_t max, bool multiline) {
    pb_buf b = {0};
    const unsigned char *u = (const unsigned char *)(text ? text : "");
    size_t n = strlen((const char *)u), i = 0;
    bool ok = true;
    while (ok && i < n && i < max) {
        size_t len;
        unsigned cp;
        int cls = classify(u + i, n - i, &len, &cp);
        if (i + len > max) break; /* cut at a character boundary */
        ok = cls == V_KEEP ? pb_buf_put(&b, (const char *)u + i, len)
                           : put_prompt_escape(&b, cls, cp, multiline);
        i += len;
    }
    if (ok && i < n) {
        char tmp[48];
        int k = snprintf(tmp, sizeof tmp, "\xE2\x80\xA6 [%zu more bytes]", n - i);
        ok = pb_buf_put(&b, tmp, (size_t)k);
    }
    if (!ok || !pb_buf_reserve(&b, 0)) {
        pb_buf_free(&b);
        return NULL;
    }
    return pb_buf_take(&b, NULL);
}
