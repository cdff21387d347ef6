/*
 * screen.c — composes a frame and writes it: the transcript (bottom-aligned, scrolled
 * back on request), extra lines (permission prompt, session picker), a rule, the input
 * box (hard-wrapped, at most a third of the screen, scrolled to the cursor), a hint
 * line and the status line. Only rows that changed since the last frame are written,
 * all in one write. Under NO_COLOR no colour is emitted (bold, dim, reverse remain).
 * Works at any size down to 1x1 (nothing is written outside the screen).
 */
#include "tui/tui.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int sgr(pt_buf *out, uint16_t a, const pt_style *st) {
    char b[48] = "\x1b[0";
    if (a & PT_BOLD) strcat(b, ";1");
    if (a & PT_DIM) strcat(b, ";2");
    if (a & PT_ITALIC) strcat(b, ";3");
    if (a & PT_UNDER) strcat(b, ";4");
    if (a & PT_REV) strcat(b, ";7");
    int fg = PT_FG_OF(a);
    if (st->color && fg) {
        char c[8];
        snprintf(c, sizeof c, ";%d", fg == PT_GREY ? 90 : 30 + fg);
        strcat(b, c);
    }
    strcat(b, "m");
    return pt_buf_add(out, b, strlen(b));
}

int pt_screen_emit(pt_buf *out, const pt_line *l, const pt_style *st) {
    uint16_t cur = 0;
    for (size_t i = 0; i < l->n; i++) {
        if (l->a[i] != cur) {
            if (sgr(out, l->a[i], st)) return -1;
            cur = l->a[i];
        }
        if (pt_buf_add(out, l->s + i, 1)) return -1;
    }
    return cur ? pt_buf_add(out, "\x1b[0m", 4) : 0;
}

/* The input as hard-wrapped lines of at most width columns; the cursor's row/col. */
static int input_lines(pt_lines *ls, const pt_input *in, int width, bool utf8, int *crow,
                       int *ccol) {
    pt_line *l = pt_lines_push(ls);
    if (!l) return -1;
    int col = 0;
    *crow = 0;
    *ccol = 0;
    const char *s = in->b.s ? in->b.s : "";
    size_t n = in->b.n;
    for (size_t i = 0; i <= n;) {
        if (i == in->cur) {
            if (col >= width) { /* the cursor sits past a full line: on the next one */
                if (!(l = pt_lines_push(ls))) return -1;
                col = 0;
            }
            *crow = (int)ls->n - 1;
            *ccol = col;
        }
        if (i == n) break;
        if (s[i] == '\n') {
            if (!(l = pt_lines_push(ls))) return -1;
            col = 0;
            i++;
            continue;
        }
        pt_line tmp = {0};
        int cw;
        size_t len = pt_char(s + i, n - i, &cw);
        if (pt_line_add(&tmp, s + i, len, 0, utf8)) return -1;
        cw = pt_line_width(&tmp);
        if (col + cw > width && col > 0) {
            if (!(l = pt_lines_push(ls))) {
                pt_line_free(&tmp);
                return -1;
            }
            col = 0;
        }
        if (pt_line_append(l, &tmp)) {
            pt_line_free(&tmp);
            return -1;
        }
        pt_line_free(&tmp);
        col += cw;
        i += len;
    }
    return 0;
}

void pt_screen_free(pt_screen *s) {
    for (int i = 0; i < s->prev_n; i++)
        free(s->prev[i]);
    free(s->prev);
    s->prev = NULL;
    s->prev_n = 0;
    pt_buf_free(&s->out);
}

static int row_bytes(pt_buf *row, const pt_line *l, const pt_style *st) {
    row->n = 0;
    if (pt_buf_add(row, "", 0)) return -1;
    return l ? pt_screen_emit(row, l, st) : 0;
}

static int status_line(pt_line *l, const char *left, const char *right, int cols, bool utf8) {
    uint16_t a = PT_REV;
    if (pt_line_adds(l, " ", a, utf8) || pt_line_adds(l, left, a, utf8)) return -1;
    pt_line_cut(l, cols);
    int w = pt_line_width(l);
    pt_line r = {0};
    if (right && *right && pt_line_adds(&r, right, a | PT_BOLD, utf8)) return -1;
    pt_line_cut(&r, cols - w - 2 > 0 ? cols - w - 2 : 0);
    int rw = pt_line_width(&r);
    while (w < cols - rw - 1) {
        if (pt_line_add(l, " ", 1, a, utf8)) return -1;
        w++;
    }
    if (pt_line_append(l, &r)) return -1;
    pt_line_free(&r);
    w = pt_line_width(l);
    while (w < cols) {
        if (pt_line_add(l, " ", 1, a, utf8)) return -1;
        w++;
    }
    return 0;
}

int pt_screen_draw(pt_screen *s, pt_frame *f) {
    int rows = s->rows, cols = s->cols;
    if (rows < 1 || cols < 1) return 0;
    bool u = s->st.utf8;
    int rc = -1;
    pt_lines trans = {0}, inl = {0}, bottom = {0};
    pt_line **grid = calloc((size_t)rows, sizeof *grid);
    pt_buf row = {0};
    pt_lines *parts = NULL; /* one rendering per visible entry, newest first */
    size_t np = 0, capp = 0;
    if (!grid) return -1;
    /* bottom part: rule, input, hint, status */
    int crow, ccol;
    int iw = cols - 2 > 1 ? cols - 2 : 1;
    if (input_lines(&inl, f->in, iw, u, &crow, &ccol)) goto done;
    int maxin = rows / 3 > 1 ? rows / 3 : 1;
    int shown = (int)inl.n < maxin ? (int)inl.n : maxin;
    int first = crow - shown + 1 > 0 ? crow - shown + 1 : 0;
    if (first + shown > (int)inl.n) first = (int)inl.n - shown;
    pt_line *rule = pt_lines_push(&bottom);
    if (!rule) goto done;
    for (int i = 0; i < cols; i++)
        if (pt_line_adds(rule, u ? "\xE2\x94\x80" : "-", PT_DIM, u)) goto done;
    for (int i = 0; i < shown; i++) {
        pt_line *l = pt_lines_push(&bottom);
        if (!l) goto done;
        const char *pre = first + i == 0 ? (u ? "\xE2\x80\xBA " : "> ") : "  ";
        if (pt_line_adds(l, pre, PT_BOLD | PT_FG(PT_BLUE), u)) goto done;
        if (pt_line_append(l, &inl.v[first + i])) goto done;
    }
    if (f->hint && *f->hint) {
        pt_lines hl = {0};
        pt_line p = {0};
        int e = pt_line_adds(&p, f->hint, f->hint_attr, u);
        if (!e) e = pt_wrap(&hl, &p, cols, "", "", 0, u);
        pt_line_free(&p);
        for (size_t i = 0; !e && i < hl.n && i < 3; i++) {
            pt_line *l = pt_lines_push(&bottom);
            if (!l)
                e = -1;
            else {
                *l = hl.v[i];
                memset(&hl.v[i], 0, sizeof hl.v[i]);
            }
        }
        pt_lines_clear(&hl);
        if (e) goto done;
    }
    pt_line *st = pt_lines_push(&bottom);
    if (!st || status_line(st, f->status_left ? f->status_left : "", f->status_right, cols, u))
        goto done;
    /* the transcript above, bottom-aligned. Only what can be seen is rendered: entries
     * from the last one back until the rows (plus the scroll) are filled. */
    int bh = (int)bottom.n > rows ? rows : (int)bottom.n;
    int th = rows - bh;
    if (f->scroll < 0) f->scroll = 0;
    size_t need = (size_t)th + (size_t)f->scroll, have = f->extra ? f->extra->n : 0;
    size_t from = f->t ? f->t->n : 0;
    while (from > 0 && have < need) {
        if (np == capp) {
            pt_lines *v = pb_grow(parts, &capp, sizeof *v, 16);
            if (!v) goto done;
            parts = v;
        }
        memset(&parts[np], 0, sizeof parts[np]);
        if (pt_render_entry(&parts[np++], &f->t->v[from - 1], cols, &s->st)) goto done;
        have += parts[np - 1].n;
        from--;
    }
    for (size_t k = np; k-- > 0;) /* oldest first; the lines move, not copy */
        for (size_t i = 0; i < parts[k].n; i++) {
            pt_line *l = pt_lines_push(&trans);
            if (!l) goto done;
            *l = parts[k].v[i];
            memset(&parts[k].v[i], 0, sizeof parts[k].v[i]);
        }
    for (size_t i = 0; f->extra && i < f->extra->n; i++) {
        pt_line *l = pt_lines_push(&trans);
        if (!l) goto done;
        if (pt_line_append(l, &f->extra->v[i])) goto done;
        pt_line_cut(l, cols);
    }
    if (from == 0) { /* everything rendered: the scroll cannot go past the first line */
        int maxscroll = (int)trans.n - th > 0 ? (int)trans.n - th : 0;
        if (f->scroll > maxscroll) f->scroll = maxscroll;
    }
    int end = (int)trans.n - f->scroll; /* one past the last transcript line shown */
    for (int r = 0; r < th; r++) {
        int idx = end - th + r;
        grid[r] = idx >= 0 && idx < (int)trans.n ? &trans.v[idx] : NULL;
    }
    for (int r = 0; r < bh; r++)
        grid[th + r] = &bottom.v[bottom.n - (size_t)bh + (size_t)r];
    /* cursor: row of the input line */
    int cur_r = th + 1 + (crow - first), cur_c = 2 + ccol;
    if (cur_r >= rows) cur_r = rows - 1;
    if (cur_c >= cols) cur_c = cols - 1;
    /* diff against the previous frame */
    if (s->prev_n != rows) {
        pt_screen_free(s);
        s->prev = calloc((size_t)rows, sizeof *s->prev);
        if (!s->prev) goto done;
        s->prev_n = rows;
        s->full = true;
    }
    s->out.n = 0;
    if (pt_buf_add(&s->out, "\x1b[?25l", 6)) goto done;
    if (s->full && pt_buf_add(&s->out, "\x1b[0m\x1b[2J", 8)) goto done;
    for (int r = 0; r < rows; r++) {
        if (grid[r]) pt_line_cut(grid[r], cols);
        if (row_bytes(&row, grid[r], &s->st)) goto done;
        if (!s->full && s->prev[r] && !strcmp(s->prev[r], row.s)) continue;
        char pos[32];
        snprintf(pos, sizeof pos, "\x1b[%d;1H", r + 1);
        /* a full row leaves the cursor in the pending-wrap state, where EL would erase
         * the last column: erase only rows shorter than the screen */
        bool full_row = grid[r] && pt_line_width(grid[r]) >= cols;
        if (pt_buf_add(&s->out, pos, strlen(pos)) || pt_buf_add(&s->out, row.s, row.n) ||
            pt_buf_add(&s->out, "\x1b[0m\x1b[K", full_row ? 4 : 7))
            goto done;
        char *copy = strdup(row.s);
        if (!copy) goto done;
        free(s->prev[r]);
        s->prev[r] = copy;
    }
    char pos[48];
    snprintf(pos, sizeof pos, "\x1b[%d;%dH\x1b[?25h", cur_r + 1, cur_c + 1);
    if (pt_buf_add(&s->out, pos, strlen(pos))) goto done;
    s->full = false;
    rc = pt_term_write(s->out.s, s->out.n);
done:
    for (size_t k = 0; k < np; k++)
        pt_lines_clear(&parts[k]);
    free(parts);
    free(grid);
    pt_buf_free(&row);
    pt_lines_clear(&trans);
    pt_lines_clear(&inl);
    pt_lines_clear(&bottom);
    return rc;
}
