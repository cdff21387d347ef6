/*
 * sse.c — the server-sent events parser of MCP over HTTP (proto.h), shared by the
 * libcurl transports (http.c) and the event-driven client (ev*.c): lines split on LF
 * (a CR before it dropped), "data" lines joined with LF, "event" names kept (64 bytes),
 * comments skipped, an event dispatched at its blank line.
 *
 * Bounds: an event's data longer than PMCP_MAX_FRAME is dropped whole (never
 * delivered cut); the rest of a line longer than that is ignored. Any byte split gives
 * the same events.
 */
#include "mcp/proto.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int grow(char **p, size_t *cap, size_t need) {
    if (need <= *cap) return 0;
    size_t nc = *cap ? *cap : 256;
    while (nc < need)
        nc *= 2;
    char *np = realloc(*p, nc);
    if (!np) return -1;
    *p = np;
    *cap = nc;
    return 0;
}

static int sse_line(pmcp__sse *p, pmcp__sse_fn fn, void *ctx) {
    char *l = p->line ? p->line : "";
    size_t n = p->len;
    if (n && l[n - 1] == '\r') n--;
    if (n == 0) { /* dispatch */
        if (p->dlen > 0 || p->event[0]) {
            if (p->dlen && p->data[p->dlen - 1] == '\n') p->dlen--;
            if (grow(&p->data, &p->dcap, p->dlen + 1)) return -1;
            p->data[p->dlen] = '\0';
            if (!p->overflow) fn(ctx, p->event[0] ? p->event : "message", p->data, p->dlen);
        }
        p->dlen = 0;
        p->event[0] = '\0';
        p->overflow = false;
        return 0;
    }
    if (l[0] == ':') return 0; /* comment */
    size_t k = 0;
    while (k < n && l[k] != ':')
        k++;
    const char *val = k < n ? l + k + 1 : l + n;
    size_t vlen = k < n ? n - k - 1 : 0;
    if (vlen && val[0] == ' ') {
        val++;
        vlen--;
    }
    if (k == 4 && !memcmp(l, "data", 4)) {
        if (p->dlen + vlen + 1 > PMCP_MAX_FRAME) {
            p->overflow = true;
            return 0;
        }
        if (grow(&p->data, &p->dcap, p->dlen + vlen + 2)) return -1;
        memcpy(p->data + p->dlen, val, vlen);
        p->dlen += vlen;
        p->data[p->dlen++] = '\n';
    } else if (k == 5 && !memcmp(l, "event", 5)) {
        snprintf(p->event, sizeof p->event, "%.*s", (int)vlen, val);
    }
    return 0;
}

int pmcp__sse_feed(pmcp__sse *p, const char *bytes, size_t n, pmcp__sse_fn fn, void *ctx) {
    for (size_t i = 0; i < n; i++) {
        if (bytes[i] == '\n') {
            if (sse_line(p, fn, ctx)) return -1;
            p->len = 0;
            continue;
        }
        if (p->len > PMCP_MAX_FRAME) continue; /* absurd line: ignore the rest */
        if (grow(&p->line, &p->cap, p->len + 2)) return -1;
        p->line[p->len++] = bytes[i];
    }
    return 0;
}

void pmcp__sse_free(pmcp__sse *p) {
    free(p->line);
    free(p->data);
    memset(p, 0, sizeof *p);
}
