/*
 * markdown.c — agent text as styled lines: the Markdown a model writes, rendered
 * sensibly for a terminal. Block level: ATX headings, bullet and numbered lists (nested
 * by indentation), block quotes, fenced code blocks, rules; inline: `code` and
 * **bold**. Anything else is plain text. Streamed text is re-rendered whole, so an
 * unterminated fence or ** simply runs to the end. Never fails on any input except OOM.
 */
#include "tui/tui.h"

#include <stdio.h>
#include <string.h>

/* Inline spans of one source line into a paragraph line. */
static int inline_spans(pt_line *p, const char *s, size_t n, uint16_t base, bool utf8) {
    bool bold = false;
    size_t i = 0, run = 0;
    while (i < n) {
        if (s[i] == '`') {
            const char *close = memchr(s + i + 1, '`', n - i - 1);
            if (close) {
                if (pt_line_add(p, s + run, i - run, base | (bold ? PT_BOLD : 0), utf8)) return -1;
                size_t clen = (size_t)(close - (s + i + 1));
                if (pt_line_add(p, s + i + 1, clen, base | PT_FG(PT_CYAN), utf8)) return -1;
                i = (size_t)(close - s) + 1;
                run = i;
                continue;
            }
        }
        if (s[i] == '*' && i + 1 < n && s[i + 1] == '*') {
            if (pt_line_add(p, s + run, i - run, base | (bold ? PT_BOLD : 0), utf8)) return -1;
            bold = !bold;
            i += 2;
            run = i;
            continue;
        }
        i++;
    }
    return pt_line_add(p, s + run, n - run, base | (bold ? PT_BOLD : 0), utf8);
}

static int emit(pt_lines *out, const char *s, size_t n, int width, const char *first,
                const char *rest, uint16_t base, uint16_t pattr, bool utf8) {
    pt_line p = {0};
    int rc = inline_spans(&p, s, n, base, utf8);
    if (!rc) rc = pt_wrap(out, &p, width, first, rest, pattr, utf8);
    pt_line_free(&p);
    return rc;
}

static size_t indent_of(const char *s, size_t n) {
    size_t i = 0;
    while (i < n && s[i] == ' ')
        i++;
    return i;
}

int pt_markdown(pt_lines *out, const char *text, size_t len, int width, bool utf8) {
    bool fence = false;
    const char *bullet = utf8 ? "\xE2\x80\xA2 " : "* ";
    const char *bar = utf8 ? "\xE2\x94\x82 " : "| ";
    size_t pos = 0;
    while (pos < len) {
        const char *s = text + pos;
        const char *nl = memchr(s, '\n', len - pos);
        size_t n = nl ? (size_t)(nl - s) : len - pos;
        pos += n + (nl ? 1 : 0);
        if (n && s[n - 1] == '\r') n--;
        size_t ind = indent_of(s, n);
        const char *t = s + ind;
        size_t tn = n - ind;
        int rc = 0;
        if (tn >= 3 && (!strncmp(t, "```", 3) || !strncmp(t, "~~~", 3))) {
            fence = !fence;
            if (fence && tn > 3) { /* the language, dimmed */
                pt_line *l = pt_lines_push(out);
                if (!l) return -1;
                rc = pt_line_add(l, t + 3, tn - 3, PT_DIM, utf8);
                pt_line_cut(l, width);
            }
        } else if (fence) {
            pt_line p = {0};
            rc = pt_line_add(&p, s, n, PT_FG(PT_CYAN), utf8);
            if (!rc) rc = pt_wrap(out, &p, width, bar, bar, PT_DIM, utf8);
            pt_line_free(&p);
        } else if (tn == 0) {
            rc = pt_lines_push(out) ? 0 : -1;
        } else if (t[0] == '#') {
            size_t h = 0;
            while (h < tn && t[h] == '#')
                h++;
            if (h <= 6 && h < tn && t[h] == ' ') {
                uint16_t a = PT_BOLD | (h == 1 ? PT_UNDER : 0) | PT_FG(PT_MAGENTA);
                rc = emit(out, t + h + 1, tn - h - 1, width, "", "", a, 0, utf8);
            } else {
                rc = emit(out, s, n, width, "", "", 0, 0, utf8);
            }
        } else if (tn >= 3 && (t[0] == '-' || t[0] == '*' || t[0] == '_') &&
                   strspn(t, "-*_ ") >= tn && t[1] == t[0]) {
            pt_line *l = pt_lines_push(out);
            if (!l) return -1;
            for (int i = 0; i < width && !rc; i++)
                rc = pt_line_adds(l, utf8 ? "\xE2\x94\x80" : "-", PT_DIM, utf8);
        } else if (tn >= 2 && (t[0] == '-' || t[0] == '*' || t[0] == '+') && t[1] == ' ') {
            char first[64], rest[64];
            size_t lvl = ind / 2 > 8 ? 8 : ind / 2;
            snprintf(first, sizeof first, "%*s%s", (int)(lvl * 2), "", bullet);
            snprintf(rest, sizeof rest, "%*s  ", (int)(lvl * 2), "");
            rc = emit(out, t + 2, tn - 2, width, first, rest, 0, PT_FG(PT_YELLOW), utf8);
        } else if (tn >= 3 && t[0] >= '0' && t[0] <= '9' && strspn(t, "0123456789") < tn &&
                   strspn(t, "0123456789") <= 4 && t[strspn(t, "0123456789")] == '.' &&
                   strspn(t, "0123456789") + 1 < tn && t[strspn(t, "0123456789") + 1] == ' ') {
            size_t d = strspn(t, "0123456789");
            char first[64], rest[64];
            size_t lvl = ind / 2 > 8 ? 8 : ind / 2;
            snprintf(first, sizeof first, "%*s%.*s. ", (int)(lvl * 2), "", (int)d, t);
            snprintf(rest, sizeof rest, "%*s%*s", (int)(lvl * 2), "", (int)d + 2, "");
            rc = emit(out, t + d + 2, tn - d - 2, width, first, rest, 0, PT_FG(PT_YELLOW), utf8);
        } else if (t[0] == '>') {
            size_t k = tn > 1 && t[1] == ' ' ? 2 : 1;
            rc = emit(out, t + k, tn - k, width, bar, bar, PT_ITALIC, PT_DIM, utf8);
        } else {
            rc = emit(out, s, n, width, "", "", 0, 0, utf8);
        }
        if (rc) return -1;
    }
    return 0;
}
