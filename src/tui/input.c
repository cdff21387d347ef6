/*
 * input.c — the TUI's input editor: a UTF-8 buffer with a cursor (byte offset, always
 * on a character boundary), multi-line, with a history of sent inputs (Up/Down walk it
 * when the cursor is on the first/last line). Owns its buffer and history strings.
 */
#include "tui/tui.h"

#include <stdlib.h>
#include <string.h>

#define HIST_MAX 200

void pt_input_free(pt_input *in) {
    pt_buf_free(&in->b);
    pb_strv_free(in->hist, in->hn);
    free(in->saved);
    memset(in, 0, sizeof *in);
}

static bool cont(char c) {
    return ((unsigned char)c & 0xC0) == 0x80;
}

int pt_input_insert(pt_input *in, const char *s, size_t n) {
    size_t old = in->b.n;
    if (pt_buf_add(&in->b, s, n)) return -1; /* grow, then move the tail */
    memmove(in->b.s + in->cur + n, in->b.s + in->cur, old - in->cur);
    memcpy(in->b.s + in->cur, s, n);
    in->cur += n;
    return 0;
}

static void erase(pt_input *in, size_t from, size_t to) {
    memmove(in->b.s + from, in->b.s + to, in->b.n - to);
    in->b.n -= to - from;
    in->b.s[in->b.n] = 0;
    if (in->cur > to)
        in->cur -= to - from;
    else if (in->cur > from)
        in->cur = from;
}

void pt_input_left(pt_input *in) {
    while (in->cur > 0) {
        in->cur--;
        if (!cont(in->b.s[in->cur])) break;
    }
}

void pt_input_right(pt_input *in) {
    if (in->cur >= in->b.n) return;
    in->cur++;
    while (in->cur < in->b.n && cont(in->b.s[in->cur]))
        in->cur++;
}

void pt_input_backspace(pt_input *in) {
    size_t end = in->cur;
    pt_input_left(in);
    if (in->cur < end) erase(in, in->cur, end);
}

void pt_input_delete(pt_input *in) {
    size_t start = in->cur;
    pt_input_right(in);
    size_t end = in->cur;
    in->cur = start;
    if (end > start) erase(in, start, end);
}

static size_t line_start(const pt_input *in, size_t pos) {
    while (pos > 0 && in->b.s[pos - 1] != '\n')
        pos--;
    return pos;
}

static size_t line_end(const pt_input *in, size_t pos) {
    while (pos < in->b.n && in->b.s[pos] != '\n')
        pos++;
    return pos;
}

void pt_input_home(pt_input *in) {
    in->cur = line_start(in, in->cur);
}

void pt_input_end(pt_input *in) {
    in->cur = line_end(in, in->cur);
}

void pt_input_kill_line(pt_input *in) {
    size_t e = line_end(in, in->cur);
    if (e == in->cur && e < in->b.n) e++; /* at the end of a line: join the next */
    erase(in, in->cur, e);
}

void pt_input_kill_back(pt_input *in) {
    erase(in, line_start(in, in->cur), in->cur);
}

void pt_input_kill_word(pt_input *in) {
    size_t p = in->cur;
    while (p > 0 && (in->b.s[p - 1] == ' ' || in->b.s[p - 1] == '\n'))
        p--;
    while (p > 0 && in->b.s[p - 1] != ' ' && in->b.s[p - 1] != '\n')
        p--;
    erase(in, p, in->cur);
}

/* Moves to column col (in characters) of the line starting at ls. */
static void to_col(pt_input *in, size_t ls, size_t col) {
    size_t e = line_end(in, ls);
    in->cur = ls;
    while (col-- && in->cur < e)
        pt_input_right(in);
}

static size_t col_of(const pt_input *in) {
    size_t c = 0;
    for (size_t p = line_start(in, in->cur); p < in->cur; p++)
        c += !cont(in->b.s[p]);
    return c;
}

void pt_input_set(pt_input *in, const char *s) {
    in->b.n = 0;
    in->cur = 0;
    pt_buf_add(&in->b, "", 0);
    if (s) pt_input_insert(in, s, strlen(s));
}

static void hist_go(pt_input *in, size_t pos) {
    if (in->hpos == in->hn) { /* leaving the new line: keep it */
        free(in->saved);
        in->saved = strdup(in->b.s ? in->b.s : "");
    }
    in->hpos = pos;
    pt_input_set(in, pos == in->hn ? in->saved : in->hist[pos]);
}

void pt_input_up(pt_input *in) {
    size_t ls = line_start(in, in->cur);
    if (ls > 0) {
        to_col(in, line_start(in, ls - 1), col_of(in));
        return;
    }
    if (in->hpos > 0) hist_go(in, in->hpos - 1);
}

void pt_input_down(pt_input *in) {
    size_t le = line_end(in, in->cur);
    if (le < in->b.n) {
        to_col(in, le + 1, col_of(in));
        return;
    }
    if (in->hpos < in->hn) hist_go(in, in->hpos + 1);
}

char *pt_input_take(pt_input *in) {
    char *s = strndup(in->b.s ? in->b.s : "", in->b.n);
    if (!s) return NULL;
    if (*s && (!in->hn || strcmp(in->hist[in->hn - 1], s))) {
        if (in->hn == HIST_MAX) {
            free(in->hist[0]);
            memmove(in->hist, in->hist + 1, (HIST_MAX - 1) * sizeof *in->hist);
            in->hn--;
        }
        if (in->hn == in->hcap) {
            size_t cap = in->hcap ? in->hcap * 2 : 16;
            char **h = realloc(in->hist, cap * sizeof *h);
            if (h) {
                in->hist = h;
                in->hcap = cap;
            }
        }
        char *copy = in->hn < in->hcap ? strdup(s) : NULL;
        if (copy) in->hist[in->hn++] = copy;
    }
    in->hpos = in->hn;
    free(in->saved);
    in->saved = NULL;
    pt_input_set(in, "");
    return s;
}
