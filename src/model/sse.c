/*
 * sse.c — incremental Server-Sent Events parser. Bytes arrive in arbitrary pieces from
 * curl; lines may be split at any byte, including between \r and \n.
 */
#include "model_int.h"

#include <string.h>

#define DEFAULT_MAX (16u << 20)

void pm__sse_init(pm__sse *p) {
    memset(p, 0, sizeof *p);
}

void pm__sse_free(pm__sse *p) {
    pb_buf_free(&p->line);
    pb_buf_free(&p->event);
    pb_buf_free(&p->data);
}

static int dispatch(pm__sse *p, pm__sse_fn fn, void *ctx) {
    int rc = 0;
    if (p->has_data) {
        size_t n = p->data.len;
        if (n > 0 && p->data.p[n - 1] == '\n') /* the spec drops the last newline */
            n--;
        rc = fn(ctx, p->event.len ? p->event.p : "message", n ? p->data.p : "", n);
    }
    pb_buf_reset(&p->data);
    pb_buf_reset(&p->event);
    p->has_data = false;
    return rc;
}

/* One complete line (without its terminator). */
static int process_line(pm__sse *p, const char *line, size_t n, pm__sse_fn fn, void *ctx) {
    if (n == 0) return dispatch(p, fn, ctx);
    if (line[0] == ':') return 0; /* comment, e.g. ": keep-alive" */
    const char *colon = memchr(line, ':', n);
    size_t name_len = colon ? (size_t)(colon - line) : n;
    const char *value = colon ? colon + 1 : line + n;
    size_t value_len = (size_t)(line + n - value);
    if (value_len > 0 && value[0] == ' ') {
        value++;
        value_len--;
    }
    if (name_len == 4 && memcmp(line, "data", 4) == 0) {
        if (!pb_buf_put(&p->data, value, value_len) || !pb_buf_put(&p->data, "\n", 1)) return -1;
        p->has_data = true;
    } else if (name_len == 5 && memcmp(line, "event", 5) == 0) {
        pb_buf_reset(&p->event);
        if (!pb_buf_put(&p->event, value, value_len)) return -1;
    }
    /* id, retry and unknown fields are ignored: the adapters do not reconnect. */
    return 0;
}

int pm__sse_feed(pm__sse *p, const char *bytes, size_t n, pm__sse_fn fn, void *ctx) {
    size_t max = p->max_line ? p->max_line : DEFAULT_MAX;
    size_t i = 0;
    if (p->skip_lf && n > 0) {
        p->skip_lf = false;
        if (bytes[0] == '\n') i = 1;
    }
    while (i < n) {
        /* find the next line end in this piece */
        size_t j = i;
        while (j < n && bytes[j] != '\n' && bytes[j] != '\r')
            j++;
        if (j == n) { /* unfinished: keep for the next feed */
            if (p->line.len + (n - i) > max || !pb_buf_put(&p->line, bytes + i, n - i)) return -1;
            return 0;
        }
        int rc;
        if (p->line.len) {
            if (p->line.len + (j - i) > max || !pb_buf_put(&p->line, bytes + i, j - i)) return -1;
            rc = process_line(p, p->line.p, p->line.len, fn, ctx);
            pb_buf_reset(&p->line);
        } else {
            rc = process_line(p, bytes + i, j - i, fn, ctx);
        }
        if (rc) return rc;
        if (p->data.len > max) return -1;
        if (bytes[j] == '\r') {
            if (j + 1 < n) {
                if (bytes[j + 1] == '\n') j++;
            } else {
                p->skip_lf = true;
            }
        }
        i = j + 1;
    }
    return 0;
}

int pm__sse_finish(pm__sse *p, pm__sse_fn fn, void *ctx) {
    int rc = 0;
    if (p->line.len) {
        rc = process_line(p, p->line.p, p->line.len, fn, ctx);
        pb_buf_reset(&p->line);
    }
    if (!rc) rc = dispatch(p, fn, ctx);
    return rc;
}
