/*
 * text.c — styled text for the TUI: sanitising (no control characters reach the
 * terminal; non-UTF-8 locales get ASCII), display width (wcwidth) and word wrap.
 * Invariant: a pt_line holds only printable characters; every byte has an attribute.
 */
#include "tui/tui.h"

#include <stdlib.h>
#include <string.h>
#include <wchar.h>

void pt_line_free(pt_line *l) {
    free(l->s);
    free(l->a);
    memset(l, 0, sizeof *l);
}

static int reserve(pt_line *l, size_t more) {
    if (l->n + more <= l->cap) return 0;
    size_t cap = l->cap ? l->cap * 2 : 64;
    while (cap < l->n + more)
        cap *= 2;
    char *s = realloc(l->s, cap);
    if (!s) return -1;
    l->s = s;
    uint16_t *a = realloc(l->a, cap * sizeof *a);
    if (!a) return -1;
    l->a = a;
    l->cap = cap;
    return 0;
}

static int put(pt_line *l, const char *s, size_t n, uint16_t attr) {
    if (reserve(l, n)) return -1;
    memcpy(l->s + l->n, s, n);
    for (size_t i = 0; i < n; i++)
        l->a[l->n + i] = attr;
    l->n += n;
    return 0;
}

/* Decodes one UTF-8 character; returns its length (0 when invalid). */
static size_t utf8_dec(const unsigned char *s, size_t n, uint32_t *cp) {
    if (s[0] < 0x80) {
        *cp = s[0];
        return 1;
    }
    size_t len;
    uint32_t c;
    if ((s[0] & 0xE0) == 0xC0) {
        len = 2;
        c = s[0] & 0x1F;
    } else if ((s[0] & 0xF0) == 0xE0) {
        len = 3;
        c = s[0] & 0x0F;
    } else if ((s[0] & 0xF8) == 0xF0) {
        len = 4;
        c = s[0] & 0x07;
    } else {
        return 0;
    }
    if (len > n) return 0;
    for (size_t i = 1; i < len; i++) {
        if ((s[i] & 0xC0) != 0x80) return 0;
        c = (c << 6) | (s[i] & 0x3F);
    }
    if ((len == 2 && c < 0x80) || (len == 3 && c < 0x800) || (len == 4 && c < 0x10000) ||
        c > 0x10FFFF || (c >= 0xD800 && c <= 0xDFFF))
        return 0;
    *cp = c;
    return len;
}

int pt_line_add(pt_line *l, const char *s, size_t n, uint16_t attr, bool utf8) {
    const unsigned char *u = (const unsigned char *)s;
    size_t i = 0;
    while (i < n) {
        if (u[i] == '\t') {
            if (put(l, "    ", 4, attr)) return -1;
            i++;
            continue;
        }
        if (u[i] < 0x20 || u[i] == 0x7F) { /* control characters never reach the screen */
            i++;
            continue;
        }
        if (u[i] < 0x80) {
            if (put(l, s + i, 1, attr)) return -1;
            i++;
            continue;
        }
        uint32_t cp = 0;
        size_t len = utf8_dec(u + i, n - i, &cp);
        if (!len) {
            if (put(l, "?", 1, attr)) return -1;
            i++;
            continue;
        }
        int w = utf8 ? wcwidth((wchar_t)cp) : -1;
        if (cp >= 0x80 && cp < 0xA0) w = -1; /* C1 controls */
        if (w < 0) {
            if (put(l, "?", 1, attr)) return -1;
        } else if (put(l, s + i, len, attr)) {
            return -1;
        }
        i += len;
    }
    return 0;
}

int pt_line_append(pt_line *l, const pt_line *src) {
    if (reserve(l, src->n)) return -1;
    if (src->n) {
        memcpy(l->s + l->n, src->s, src->n);
        memcpy(l->a + l->n, src->a, src->n * sizeof *l->a);
    }
    l->n += src->n;
    return 0;
}

int pt_line_adds(pt_line *l, const char *s, uint16_t attr, bool utf8) {
    return s ? pt_line_add(l, s, strlen(s), attr, utf8) : 0;
}

size_t pt_char(const char *s, size_t n, int *w) {
    uint32_t cp = 0;
    size_t len = utf8_dec((const unsigned char *)s, n, &cp);
    if (!len) {
        *w = 1;
        return 1;
    }
    int cw = cp < 0x80 ? 1 : wcwidth((wchar_t)cp);
    *w = cw < 0 ? 1 : cw;
    return len;
}

int pt_line_width(const pt_line *l) {
    int w = 0;
    for (size_t i = 0; i < l->n;) {
        int cw;
        i += pt_char(l->s + i, l->n - i, &cw);
        w += cw;
    }
    return w;
}

void pt_line_cut(pt_line *l, int width) {
    int w = 0;
    for (size_t i = 0; i < l->n;) {
        int cw;
        size_t len = pt_char(l->s + i, l->n - i, &cw);
        if (w + cw > width) {
            l->n = i;
            return;
        }
        w += cw;
        i += len;
    }
}

void pt_lines_clear(pt_lines *ls) {
    for (size_t i = 0; i < ls->n; i++)
        pt_line_free(&ls->v[i]);
    free(ls->v);
    memset(ls, 0, sizeof *ls);
}

pt_line *pt_lines_push(pt_lines *ls) {
    return pb_push(&ls->v, &ls->n, &ls->cap, sizeof *ls->v, 32);
}

int pt_wrap(pt_lines *out, const pt_line *p, int width, const char *first, const char *rest,
            uint16_t prefix_attr, bool utf8) {
    size_t i = 0;
    bool firstline = true;
    do {
        pt_line *l = pt_lines_push(out);
        if (!l || pt_line_adds(l, firstline ? first : rest, prefix_attr, utf8)) return -1;
        firstline = false;
        int w = pt_line_width(l);
        if (w >= width) { /* a prefix as wide as the screen: cut it, keep room for text */
            pt_line_cut(l, width - 1);
            w = pt_line_width(l);
        }
        size_t start = i, j = i, brk = 0;
        while (j < p->n) {
            int cw;
            size_t len = pt_char(p->s + j, p->n - j, &cw);
            if (p->s[j] == ' ') brk = j;
            if (w + cw > width && j > start) break;
            w += cw;
            j += len;
        }
        size_t end = j;
        if (j < p->n && brk > start) end = brk;
        if (end > start) {
            if (reserve(l, end - start)) return -1;
            memcpy(l->s + l->n, p->s + start, end - start);
            memcpy(l->a + l->n, p->a + start, (end - start) * sizeof *l->a);
            l->n += end - start;
        }
        i = end;
        if (i < p->n)
            while (i < p->n && p->s[i] == ' ')
                i++;
    } while (i < p->n);
    return 0;
}
