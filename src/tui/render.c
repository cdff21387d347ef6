/*
 * render.c — transcript entries as styled lines for a given width: user turns, agent
 * Markdown, dimmed thoughts, tool calls (status, kind, title, placement, a short output
 * preview, coloured diffs), plans as a checklist, notices. ASCII glyphs when the
 * locale is not UTF-8. Colour is only attributes; screen.c drops it under NO_COLOR.
 */
#include "tui/tui.h"

#include <stdio.h>
#include <string.h>

#define PREVIEW_LINES 4
#define DIFF_LINES    12
#define USER_LINES    12 /* a long paste shows its start */

static int para(pt_lines *out, const char *s, size_t n, uint16_t attr, int width, const char *first,
                const char *rest, uint16_t pattr, bool utf8) {
    pt_line p = {0};
    int rc = pt_line_add(&p, s, n, attr, utf8);
    if (!rc) rc = pt_wrap(out, &p, width, first, rest, pattr, utf8);
    pt_line_free(&p);
    return rc;
}

/* Each source line of text as its own wrapped paragraph; at most max lines (0: all),
 * then "… N more lines". */
static int lines_of(pt_lines *out, const char *text, size_t len, uint16_t attr, int width,
                    const char *first, const char *rest, uint16_t pattr, bool utf8, size_t max) {
    size_t shown = 0, total = 0, pos = 0;
    while (pos < len) {
        const char *s = text + pos;
        const char *nl = memchr(s, '\n', len - pos);
        size_t n = nl ? (size_t)(nl - s) : len - pos;
        pos += n + (nl ? 1 : 0);
        total++;
        if (max && shown >= max) continue;
        uint16_t a = attr;
        if (attr == 0xFFFF) /* diff colouring */
            a = n && s[0] == '-' ? PT_FG(PT_RED) : n && s[0] == '+' ? PT_FG(PT_GREEN) : 0;
        if (para(out, s, n, a, width, shown ? rest : first, rest, pattr, utf8)) return -1;
        shown++;
    }
    if (total > shown) {
        char more[64];
        snprintf(more, sizeof more, "%s %zu more lines", utf8 ? "\xE2\x80\xA6" : "...",
                 total - shown);
        if (para(out, more, strlen(more), PT_DIM, width, rest, rest, pattr, utf8)) return -1;
    }
    return 0;
}

static uint16_t status_attr(const char *st) {
    if (!st) return 0;
    if (!strcmp(st, "completed")) return PT_FG(PT_GREEN);
    if (!strcmp(st, "failed")) return PT_FG(PT_RED) | PT_BOLD;
    if (!strcmp(st, "in_progress")) return PT_FG(PT_CYAN);
    return PT_FG(PT_YELLOW);
}

static const char *status_icon(const char *st, bool utf8) {
    if (!st) st = "pending";
    if (!strcmp(st, "completed")) return utf8 ? "\xE2\x9C\x93 " : "+ ";
    if (!strcmp(st, "failed")) return utf8 ? "\xE2\x9C\x97 " : "x ";
    if (!strcmp(st, "in_progress")) return utf8 ? "\xE2\x97\x90 " : "~ ";
    return utf8 ? "\xE2\x97\x8B " : "o ";
}

static int tool(pt_lines *out, const pt_entry *e, int width, bool utf8) {
    pt_line p = {0};
    const char *title = pt_tool_field(e, "title"), *kind = pt_tool_field(e, "kind");
    const char *status = pt_tool_field(e, "status");
    uint16_t sa = status_attr(status);
    int rc = pt_line_adds(&p, title ? title : "tool", PT_BOLD, utf8);
    if (!rc) rc = pt_line_adds(&p, utf8 ? " \xC2\xB7 " : " - ", PT_DIM, utf8);
    if (!rc) rc = pt_line_adds(&p, kind ? kind : "other", PT_DIM, utf8);
    if (!rc) rc = pt_line_adds(&p, " [", PT_DIM, utf8);
    if (!rc) rc = pt_line_adds(&p, status ? status : "pending", sa, utf8);
    if (!rc) rc = pt_line_adds(&p, "]", PT_DIM, utf8);
    if (!rc) rc = pt_wrap(out, &p, width, status_icon(status, utf8), "  ", sa, utf8);
    pt_line_free(&p);
    if (rc) return -1;
    const char *hook = utf8 ? "  \xE2\x8E\xBF " : "  | ";
    if (e->placement && para(out, e->placement, strlen(e->placement), PT_FG(PT_BLUE), width, hook,
                             "    ", PT_DIM, utf8))
        return -1;
    if (e->diff.n && lines_of(out, e->diff.s, e->diff.n, 0xFFFF, width,
                              e->placement ? "    " : hook, "    ", PT_DIM, utf8, DIFF_LINES))
        return -1;
    else if (!e->diff.n && e->text.n) {
        /* the preview: a fenced command block is skipped, the output shown */
        if (lines_of(out, e->text.s, e->text.n, PT_DIM, width, e->placement ? "    " : hook, "    ",
                     PT_DIM, utf8, PREVIEW_LINES))
            return -1;
    }
    return 0;
}

static int plan(pt_lines *out, const pt_entry *e, int width, bool utf8) {
    if (para(out, "Plan", 4, PT_BOLD, width, "", "", 0, utf8)) return -1;
    size_t i;
    pj_t *it;
    pj_array_foreach(e->plan, i, it) {
        const char *c = pj_string_value(pj_object_get(it, "content"));
        const char *st = pj_string_value(pj_object_get(it, "status"));
        const char *box = "[ ] ";
        uint16_t a = 0;
        if (st && !strcmp(st, "completed")) {
            box = "[x] ";
            a = PT_FG(PT_GREEN) | PT_DIM;
        } else if (st && !strcmp(st, "in_progress")) {
            box = "[~] ";
            a = PT_FG(PT_YELLOW) | PT_BOLD;
        }
        char first[16];
        snprintf(first, sizeof first, "  %s", box);
        if (para(out, c ? c : "", c ? strlen(c) : 0, a, width, first, "      ", a, utf8)) return -1;
    }
    return 0;
}

int pt_render_entry(pt_lines *out, const pt_entry *e, int width, const pt_style *st) {
    bool u = st->utf8;
    if (width < 8) width = 8;
    switch (e->kind) {
    case PT_E_USER:
        if (!pt_lines_push(out)) return -1;
        return lines_of(out, e->text.s ? e->text.s : "", e->text.n, PT_BOLD, width,
                        u ? "\xE2\x9D\xAF " : "> ", "  ", PT_FG(PT_BLUE) | PT_BOLD, u, USER_LINES);
    case PT_E_AGENT:
        if (!pt_lines_push(out)) return -1;
        return pt_markdown(out, e->text.s ? e->text.s : "", e->text.n, width, u);
    case PT_E_THOUGHT:
        if (!pt_lines_push(out)) return -1;
        return lines_of(out, e->text.s ? e->text.s : "", e->text.n, PT_DIM | PT_ITALIC, width,
                        u ? "\xE2\x9C\xBB " : "* ", "  ", PT_DIM, u, 0);
    case PT_E_TOOL:
        if (!pt_lines_push(out)) return -1;
        return tool(out, e, width, u);
    case PT_E_PLAN:
        if (!pt_lines_push(out)) return -1;
        return plan(out, e, width, u);
    case PT_E_NOTICE:
        return lines_of(out, e->text.s ? e->text.s : "", e->text.n, e->attr, width, "", "", 0, u,
                        0);
    }
    return 0;
}
