/*
 * http_codec.c — the sans-IO HTTP/1.1 client codec: request serialisation, the response
 * parser and URL parsing (declared in include/peri/net_http.h).
 *
 * The parser is a byte-driven state machine. Lines of the head (status line, field lines,
 * chunk-size lines, trailers) are gathered into p->line, bounded by max_line, so a line
 * split across any number of feeds reads the same as one fed whole; body bytes are never
 * copied: each feed hands the slice that belongs to the body to on_body.
 *
 * Invariants: the parser never reads past data+len; every state change that ends the
 * response (error or done) is sticky; p->head holds the final response's status reason
 * and its fields as NUL-terminated texts, and p->fields points into it only once the
 * head is complete (head_done); the body delivered never exceeds max_body. Lines end with
 * LF, an optional CR before it is dropped, a CR anywhere else is an error. Obsolete line
 * folding is refused, as are both Content-Length and Transfer-Encoding in one response.
 */
#include "peri/net_http.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DEF_MAX_LINE     (8u << 10)
#define DEF_MAX_HEAD     (64u << 10)
#define DEF_MAX_HEADERS  100u
#define DEF_CHUNK_DIGITS 16u
#define DEF_MAX_BODY     (64ull << 20)
#define MAX_INTERIM      16u               /* 1xx responses skipped before the final one */
#define MAX_BOUND        ((size_t)1 << 30) /* the largest line or header block bound taken */

enum state {
    ST_STATUS,
    ST_FIELDS,
    ST_BODY_LEN,
    ST_BODY_CLOSE,
    ST_CHUNK_SIZE,
    ST_CHUNK_DATA,
    ST_CHUNK_END,
    ST_TRAILER,
    ST_DONE,
    ST_ERROR,
};

struct pn_http_parser {
    pn_http_limits lim;
    pn_http_parser_cb cb;
    bool head_request;
    enum state st;
    pn_http_err err;
    char detail[128];
    pb_buf line;            /* the line being gathered, without its LF */
    pb_buf head;            /* reason\0 then name\0value\0 per field */
    size_t *offs;           /* name offsets into head, one per field */
    size_t offcap;          /* capacity of offs */
    pn_http_header *fields; /* materialised once head_done */
    size_t nfields;         /* fields kept of the final head */
    size_t nblock;          /* field lines of the current header block or trailer section */
    size_t block_bytes;     /* bytes of the current header block or trailer section */
    bool head_done;
    int status, minor;
    unsigned interim;
    uint64_t remaining;  /* body bytes left of the Content-Length or of the chunk */
    uint64_t body_total; /* body bytes delivered */
    bool chunk_cr;       /* ST_CHUNK_END: the CR was seen */
};

const char *pn_http_err_name(pn_http_err e) {
    switch (e) {
    case PN_HTTP_OK: return "ok";
    case PN_HTTP_E_NOMEM: return "out of memory";
    case PN_HTTP_E_ARG: return "bad request argument";
    case PN_HTTP_E_URL: return "bad url";
    case PN_HTTP_E_STATUS_LINE: return "bad status line";
    case PN_HTTP_E_HEADER: return "bad header field";
    case PN_HTTP_E_FOLDED: return "folded header field";
    case PN_HTTP_E_FRAMING: return "bad message framing";
    case PN_HTTP_E_CHUNK: return "bad chunk";
    case PN_HTTP_E_HEAD_LIMIT: return "header too large";
    case PN_HTTP_E_BODY_LIMIT: return "body too large";
    case PN_HTTP_E_TRUNCATED: return "truncated";
    case PN_HTTP_E_STOPPED: return "stopped";
    case PN_HTTP_E_NET: return "network";
    case PN_HTTP_E_TIMEOUT: return "timeout";
    case PN_HTTP_E_CANCELLED: return "cancelled";
    }
    return "unknown";
}

/* ---------------------------------------------------------------- character classes */

static bool is_tchar(unsigned char c) {
    if ((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) return true;
    return c && strchr("!#$%&'*+-.^_`|~", c) != NULL;
}

/* field-vchar, SP, HTAB and obs-text: what a field value (or reason phrase) may hold */
static bool is_text(unsigned char c) {
    return c == '\t' || (c >= 0x20 && c != 0x7f);
}

/* The first byte of s[0..n) that ok refuses, or NULL. */
static const char *first_bad(const char *s, size_t n, bool (*ok)(unsigned char)) {
    for (size_t i = 0; i < n; i++)
        if (!ok((unsigned char)s[i])) return s + i;
    return NULL;
}

static bool is_ows(char c) {
    return c == ' ' || c == '\t';
}

static int lower(int c) {
    return c >= 'A' && c <= 'Z' ? c + ('a' - 'A') : c;
}

static bool ascii_ieq(const char *a, size_t alen, const char *b) {
    size_t blen = strlen(b);
    if (alen != blen) return false;
    for (size_t i = 0; i < alen; i++)
        if (lower((unsigned char)a[i]) != lower((unsigned char)b[i])) return false;
    return true;
}

static void set_detail(char *d, size_t dl, const char *fmt, ...) {
    if (!d || !dl) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(d, dl, fmt, ap);
    va_end(ap);
}

/* ---------------------------------------------------------------- request */

static pn_http_err check_token(const char *s, const char *what, char *d, size_t dl) {
    if (!s || !*s) {
        set_detail(d, dl, "empty %s", what);
        return PN_HTTP_E_ARG;
    }
    const char *c = first_bad(s, strlen(s), is_tchar);
    if (c) {
        set_detail(d, dl, "%s holds a byte 0x%02x that is not a token character", what,
                   (unsigned char)*c);
        return PN_HTTP_E_ARG;
    }
    return PN_HTTP_OK;
}

/* visible ASCII without the bytes in `bad` */
static pn_http_err check_visible(const char *s, const char *bad, const char *what, char *d,
                                 size_t dl) {
    if (!s || !*s) {
        set_detail(d, dl, "empty %s", what);
        return PN_HTTP_E_ARG;
    }
    for (const char *c = s; *c; c++) {
        unsigned char u = (unsigned char)*c;
        if (u <= 0x20 || u >= 0x7f || strchr(bad, u)) {
            set_detail(d, dl, "%s holds a forbidden byte 0x%02x", what, u);
            return PN_HTTP_E_ARG;
        }
    }
    return PN_HTTP_OK;
}

static bool body_method(const char *m) {
    return !strcmp(m, "POST") || !strcmp(m, "PUT") || !strcmp(m, "PATCH");
}

pn_http_err pn_http_write_request(pb_buf *out, const char *method, const char *target,
                                  const char *host, const pn_http_header *headers, size_t nheaders,
                                  const void *body, size_t body_len, char *detail,
                                  size_t detail_len) {
    static const char *const owned[] = {"host", "content-length", "transfer-encoding",
                                        "connection"};
    pn_http_err e;
    if (detail && detail_len) detail[0] = '\0';
    if ((e = check_token(method, "method", detail, detail_len))) return e;
    if ((e = check_visible(target, "#", "request target", detail, detail_len))) return e;
    if (target[0] != '/') {
        set_detail(detail, detail_len, "request target does not start with '/'");
        return PN_HTTP_E_ARG;
    }
    if ((e = check_visible(host, "/?#@", "host", detail, detail_len))) return e;
    if (nheaders && !headers) {
        set_detail(detail, detail_len, "headers missing");
        return PN_HTTP_E_ARG;
    }
    for (size_t i = 0; i < nheaders; i++) {
        const char *n = headers[i].name, *v = headers[i].value;
        if ((e = check_token(n, "header name", detail, detail_len))) return e;
        for (size_t k = 0; k < sizeof owned / sizeof owned[0]; k++)
            if (ascii_ieq(n, strlen(n), owned[k])) {
                set_detail(detail, detail_len, "header %s is set by the client", n);
                return PN_HTTP_E_ARG;
            }
        const char *c = v ? first_bad(v, strlen(v), is_text) : NULL;
        if (!v || c) {
            set_detail(detail, detail_len, "header %s: %s", n, v ? "control byte" : "no value");
            return PN_HTTP_E_ARG;
        }
    }
    if (!body && body_len) {
        set_detail(detail, detail_len, "body missing");
        return PN_HTTP_E_ARG;
    }
    size_t keep = out->len;
    bool ok = pb_buf_printf(out, "%s %s HTTP/1.1\r\nHost: %s\r\n", method, target, host);
    for (size_t i = 0; ok && i < nheaders; i++)
        ok = pb_buf_printf(out, "%s: %s\r\n", headers[i].name, headers[i].value);
    if (ok && (body || body_method(method)))
        ok = pb_buf_printf(out, "Content-Length: %zu\r\n", body ? body_len : 0);
    ok = ok && pb_buf_puts(out, "Connection: close\r\n\r\n");
    if (ok && body_len) ok = pb_buf_put(out, body, body_len);
    if (!ok) {
        out->len = keep;
        if (out->p) out->p[keep] = '\0';
        set_detail(detail, detail_len, "out of memory");
        return PN_HTTP_E_NOMEM;
    }
    return PN_HTTP_OK;
}

/* ---------------------------------------------------------------- parser state */

pn_http_parser *pn_http_parser_new(bool head_request, const pn_http_limits *lim,
                                   const pn_http_parser_cb *cb) {
    pn_http_parser *p = calloc(1, sizeof *p);
    if (!p) return NULL;
    if (lim) p->lim = *lim;
    if (!p->lim.max_line) p->lim.max_line = DEF_MAX_LINE;
    if (!p->lim.max_head) p->lim.max_head = DEF_MAX_HEAD;
    if (p->lim.max_line > MAX_BOUND) p->lim.max_line = MAX_BOUND; /* sums stay far from SIZE_MAX */
    if (p->lim.max_head > MAX_BOUND) p->lim.max_head = MAX_BOUND;
    if (!p->lim.max_headers) p->lim.max_headers = DEF_MAX_HEADERS;
    if (!p->lim.max_chunk_digits || p->lim.max_chunk_digits > DEF_CHUNK_DIGITS)
        p->lim.max_chunk_digits = DEF_CHUNK_DIGITS; /* 16 hex digits fit in 64 bits */
    if (!p->lim.max_body) p->lim.max_body = DEF_MAX_BODY;
    if (cb) p->cb = *cb;
    p->head_request = head_request;
    p->st = ST_STATUS;
    return p;
}

void pn_http_parser_free(pn_http_parser *p) {
    if (!p) return;
    pb_buf_free(&p->line);
    pb_buf_free(&p->head);
    free(p->offs);
    free(p->fields);
    free(p);
}

static pn_http_err fail(pn_http_parser *p, pn_http_err e, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(p->detail, sizeof p->detail, fmt, ap);
    va_end(ap);
    p->err = e;
    p->st = ST_ERROR;
    return e;
}

bool pn_http_parser_done(const pn_http_parser *p) {
    return p->st == ST_DONE;
}

const char *pn_http_parser_detail(const pn_http_parser *p) {
    return p->detail;
}

int pn_http_status(const pn_http_parser *p) {
    return p->head_done ? p->status : 0;
}

const char *pn_http_reason(const pn_http_parser *p) {
    return p->head_done ? p->head.p : "";
}

int pn_http_minor_version(const pn_http_parser *p) {
    return p->minor;
}

size_t pn_http_header_count(const pn_http_parser *p) {
    return p->head_done ? p->nfields : 0;
}

pn_http_header pn_http_header_at(const pn_http_parser *p, size_t i) {
    pn_http_header none = {NULL, NULL};
    return p->head_done && i < p->nfields ? p->fields[i] : none;
}

const char *pn_http_header_get(const pn_http_parser *p, const char *name) {
    if (!p->head_done || !name || !*name) return NULL;
    for (size_t i = 0; i < p->nfields; i++)
        if (ascii_ieq(p->fields[i].name, strlen(p->fields[i].name), name))
            return p->fields[i].value;
    return NULL;
}

/* ---------------------------------------------------------------- head */

static void reset_block(pn_http_parser *p) {
    pb_buf_reset(&p->head);
    p->nfields = 0;
    p->nblock = 0;
    p->block_bytes = 0;
}

static pn_http_err status_line(pn_http_parser *p, const char *l, size_t n) {
    /* HTTP/1.x SP 3DIGIT [SP reason] */
    if (n < 12 || memcmp(l, "HTTP/1.", 7) || l[7] < '0' || l[7] > '9' || l[8] != ' ')
        return fail(p, PN_HTTP_E_STATUS_LINE, "not an HTTP/1.x status line");
    for (int i = 9; i < 12; i++)
        if (l[i] < '0' || l[i] > '9') return fail(p, PN_HTTP_E_STATUS_LINE, "bad status code");
    int code = (l[9] - '0') * 100 + (l[10] - '0') * 10 + (l[11] - '0');
    if (code < 100) return fail(p, PN_HTTP_E_STATUS_LINE, "status code %d below 100", code);
    size_t r = 12;
    if (n > 12) {
        if (l[12] != ' ') return fail(p, PN_HTTP_E_STATUS_LINE, "bad status code");
        r = 13;
    }
    if (first_bad(l + r, n - r, is_text))
        return fail(p, PN_HTTP_E_STATUS_LINE, "control byte in the reason phrase");
    p->minor = l[7] - '0';
    p->status = code;
    pb_buf_reset(&p->head); /* block_bytes already counts this line */
    p->nfields = 0;
    p->nblock = 0;
    if (!pb_buf_put(&p->head, l + r, n - r) || !pb_buf_putc(&p->head, '\0'))
        return fail(p, PN_HTTP_E_NOMEM, "out of memory");
    p->st = ST_FIELDS;
    return PN_HTTP_OK;
}

/* Validates one field line; store: keep it in p->head (header block) or drop it (trailer). */
static pn_http_err field_line(pn_http_parser *p, const char *l, size_t n, bool store) {
    if (is_ows(l[0])) return fail(p, PN_HTTP_E_FOLDED, "obsolete line folding");
    const char *colon = memchr(l, ':', n);
    if (!colon || colon == l) return fail(p, PN_HTTP_E_HEADER, "field line without a name");
    size_t nl = (size_t)(colon - l);
    const char *bad = first_bad(l, nl, is_tchar);
    if (bad)
        return fail(p, PN_HTTP_E_HEADER, "bad byte 0x%02x in a field name", (unsigned char)*bad);
    const char *v = colon + 1, *end = l + n;
    while (v < end && is_ows(*v))
        v++;
    while (end > v && is_ows(end[-1]))
        end--;
    if ((bad = first_bad(v, (size_t)(end - v), is_text)))
        return fail(p, PN_HTTP_E_HEADER, "control byte 0x%02x in field %.*s", (unsigned char)*bad,
                    (int)(nl > 40 ? 40 : nl), l);
    if (++p->nblock > p->lim.max_headers)
        return fail(p, PN_HTTP_E_HEAD_LIMIT, "more than %zu fields", p->lim.max_headers);
    if (!store) return PN_HTTP_OK;
    if (++p->nfields > p->offcap) {
        size_t *o = pb_grow(p->offs, &p->offcap, sizeof *o, 16);
        if (!o) return fail(p, PN_HTTP_E_NOMEM, "out of memory");
        p->offs = o;
    }
    p->offs[p->nfields - 1] = p->head.len;
    if (!pb_buf_put(&p->head, l, nl) || !pb_buf_putc(&p->head, '\0') ||
        !pb_buf_put(&p->head, v, (size_t)(end - v)) || !pb_buf_putc(&p->head, '\0'))
        return fail(p, PN_HTTP_E_NOMEM, "out of memory");
    return PN_HTTP_OK;
}

/* Content-Length: one or more fields, each a comma list of equal decimal values. */
static pn_http_err content_length(pn_http_parser *p, const char *v, bool *seen, uint64_t *cl) {
    const char *c = v;
    for (;;) {
        while (is_ows(*c))
            c++;
        uint64_t x = 0;
        int digits = 0;
        for (; *c >= '0' && *c <= '9'; c++, digits++) {
            if (x > (UINT64_MAX - 9) / 10)
                return fail(p, PN_HTTP_E_FRAMING, "Content-Length overflows");
            x = x * 10 + (uint64_t)(*c - '0');
        }
        while (is_ows(*c))
            c++;
        if (!digits || (*c && *c != ',')) return fail(p, PN_HTTP_E_FRAMING, "bad Content-Length");
        if (*seen && x != *cl) return fail(p, PN_HTTP_E_FRAMING, "conflicting Content-Length");
        *seen = true;
        *cl = x;
        if (!*c) return PN_HTTP_OK;
        c++;
    }
}

/* Transfer-Encoding: exactly one coding overall, "chunked". */
static pn_http_err transfer_encoding(pn_http_parser *p, const char *v, int *chunked) {
    const char *c = v;
    for (;;) {
        while (is_ows(*c) || *c == ',')
            c++;
        if (!*c) return PN_HTTP_OK;
        const char *s = c;
        while (*c && *c != ',' && !is_ows(*c))
            c++;
        const char *e = c;
        while (is_ows(*c))
            c++;
        if ((*c && *c != ',') || !ascii_ieq(s, (size_t)(e - s), "chunked") || *chunked)
            return fail(p, PN_HTTP_E_FRAMING, "unsupported Transfer-Encoding");
        *chunked = 1;
    }
}

static pn_http_err end_of_head(pn_http_parser *p) {
    if (p->status < 200) {
        if (p->status == 101) return fail(p, PN_HTTP_E_FRAMING, "unexpected 101 upgrade");
        if (++p->interim > MAX_INTERIM)
            return fail(p, PN_HTTP_E_HEAD_LIMIT, "more than %u interim responses", MAX_INTERIM);
        reset_block(p);
        p->st = ST_STATUS;
        return PN_HTTP_OK;
    }
    free(p->fields);
    p->fields = NULL;
    if (p->nfields) {
        p->fields = calloc(p->nfields, sizeof *p->fields);
        if (!p->fields) return fail(p, PN_HTTP_E_NOMEM, "out of memory");
    }
    bool cl_seen = false;
    uint64_t cl = 0;
    int chunked = 0, te_seen = 0;
    for (size_t i = 0; i < p->nfields; i++) {
        const char *name = p->head.p + p->offs[i];
        const char *value = name + strlen(name) + 1;
        p->fields[i].name = name;
        p->fields[i].value = value;
        pn_http_err e = PN_HTTP_OK;
        if (ascii_ieq(name, strlen(name), "content-length")) {
            e = content_length(p, value, &cl_seen, &cl);
        } else if (ascii_ieq(name, strlen(name), "transfer-encoding")) {
            te_seen = 1;
            e = transfer_encoding(p, value, &chunked);
        }
        if (e) return e;
    }
    p->head_done = true;
    bool no_body = p->head_request || p->status == 204 || p->status == 304;
    if (!no_body) {
        if (te_seen && cl_seen)
            return fail(p, PN_HTTP_E_FRAMING, "both Content-Length and Transfer-Encoding");
        if (te_seen && !chunked) return fail(p, PN_HTTP_E_FRAMING, "empty Transfer-Encoding");
        if (cl_seen && cl > p->lim.max_body)
            return fail(p, PN_HTTP_E_BODY_LIMIT, "Content-Length %llu above the bound %llu",
                        (unsigned long long)cl, (unsigned long long)p->lim.max_body);
    }
    if (p->cb.on_head && p->cb.on_head(p->cb.ud, p))
        return fail(p, PN_HTTP_E_STOPPED, "stopped by the head callback");
    if (no_body || (cl_seen && !te_seen && cl == 0)) {
        p->st = ST_DONE;
    } else if (chunked) {
        p->st = ST_CHUNK_SIZE;
    } else if (cl_seen) {
        p->remaining = cl;
        p->st = ST_BODY_LEN;
    } else {
        p->st = ST_BODY_CLOSE;
    }
    p->block_bytes = 0;
    return PN_HTTP_OK;
}

static pn_http_err chunk_size(pn_http_parser *p, const char *l, size_t n) {
    size_t i = 0;
    uint64_t size = 0;
    for (; i < n; i++) {
        int c = lower((unsigned char)l[i]), d;
        if (c >= '0' && c <= '9')
            d = c - '0';
        else if (c >= 'a' && c <= 'f')
            d = c - 'a' + 10;
        else
            break;
        if (i >= p->lim.max_chunk_digits)
            return fail(p, PN_HTTP_E_CHUNK, "chunk size has more than %zu digits",
                        p->lim.max_chunk_digits);
        size = size << 4 | (uint64_t)d;
    }
    if (i == 0) return fail(p, PN_HTTP_E_CHUNK, "chunk size missing");
    while (i < n && is_ows(l[i]))
        i++;
    if (i < n && l[i] != ';') return fail(p, PN_HTTP_E_CHUNK, "bad byte after the chunk size");
    if (first_bad(l + i, n - i, is_text)) /* extensions are ignored; they must be text */
        return fail(p, PN_HTTP_E_CHUNK, "bad chunk extension");
    if (size > p->lim.max_body - p->body_total)
        return fail(p, PN_HTTP_E_BODY_LIMIT, "body above the bound %llu",
                    (unsigned long long)p->lim.max_body);
    if (size == 0) {
        p->nblock = 0; /* the trailer section is bounded on its own */
        p->block_bytes = 0;
        p->st = ST_TRAILER;
    } else {
        p->remaining = size;
        p->st = ST_CHUNK_DATA;
    }
    return PN_HTTP_OK;
}

/* One complete line of the current state (without LF; a CR before it removed). */
static pn_http_err line_done(pn_http_parser *p, const char *l, size_t n) {
    if (memchr(l, '\r', n)) return fail(p, PN_HTTP_E_HEADER, "bare CR in a line");
    switch (p->st) {
    case ST_STATUS: return status_line(p, l, n);
    case ST_FIELDS: return n ? field_line(p, l, n, true) : end_of_head(p);
    case ST_CHUNK_SIZE: return chunk_size(p, l, n);
    case ST_TRAILER:
        if (n) return field_line(p, l, n, false); /* validated, bounded, dropped */
        p->st = ST_DONE;
        return PN_HTTP_OK;
    default: return fail(p, PN_HTTP_E_HEADER, "internal: no line expected");
    }
}

/* Gathers bytes of a line; returns bytes consumed (a complete line is processed). */
static size_t gather(pn_http_parser *p, const char *d, size_t len) {
    const char *lf = memchr(d, '\n', len);
    size_t take = lf ? (size_t)(lf - d) + 1 : len;
    size_t body = lf ? take - 1 : take; /* bytes of the line text in this piece */
    bool head = p->st == ST_STATUS || p->st == ST_FIELDS || p->st == ST_TRAILER;
    if (p->line.len + body > p->lim.max_line + 1) { /* + 1: the CR before the LF */
        fail(p, p->st == ST_CHUNK_SIZE ? PN_HTTP_E_CHUNK : PN_HTTP_E_HEAD_LIMIT,
             "line longer than %zu bytes", p->lim.max_line);
        return 0;
    }
    if (head) {
        p->block_bytes += take;
        if (p->block_bytes > p->lim.max_head) {
            fail(p, PN_HTTP_E_HEAD_LIMIT, "header block longer than %zu bytes", p->lim.max_head);
            return 0;
        }
    }
    if (body && !pb_buf_put(&p->line, d, body)) {
        fail(p, PN_HTTP_E_NOMEM, "out of memory");
        return 0;
    }
    if (!lf) return take;
    size_t n = p->line.len;
    const char *l = n ? p->line.p : "";
    if (n && l[n - 1] == '\r') n--;
    if (n > p->lim.max_line) {
        fail(p, p->st == ST_CHUNK_SIZE ? PN_HTTP_E_CHUNK : PN_HTTP_E_HEAD_LIMIT,
             "line longer than %zu bytes", p->lim.max_line);
        return 0;
    }
    line_done(p, l, n);
    pb_buf_reset(&p->line);
    return take;
}

static pn_http_err deliver(pn_http_parser *p, const char *d, size_t n) {
    p->body_total += n;
    if (n && p->cb.on_body && p->cb.on_body(p->cb.ud, d, n))
        return fail(p, PN_HTTP_E_STOPPED, "stopped by the body callback");
    return PN_HTTP_OK;
}

pn_http_err pn_http_parser_feed(pn_http_parser *p, const void *data, size_t len, size_t *used) {
    const char *d = data;
    size_t i = 0;
    while (i < len && p->st != ST_DONE && p->st != ST_ERROR) {
        size_t avail = len - i;
        switch (p->st) {
        case ST_STATUS:
        case ST_FIELDS:
        case ST_CHUNK_SIZE:
        case ST_TRAILER: i += gather(p, d + i, avail); break;
        case ST_BODY_LEN:
        case ST_CHUNK_DATA: {
            size_t n = avail < p->remaining ? avail : (size_t)p->remaining;
            p->remaining -= n;
            i += n;
            if (p->remaining == 0) p->st = p->st == ST_BODY_LEN ? ST_DONE : ST_CHUNK_END;
            deliver(p, d + i - n, n);
            break;
        }
        case ST_BODY_CLOSE: {
            /* up to the bound is delivered whatever the split, then the error */
            uint64_t room = p->lim.max_body - p->body_total;
            size_t n = avail < room ? avail : (size_t)room;
            i += n;
            if (deliver(p, d + i - n, n) == PN_HTTP_OK && n < avail)
                fail(p, PN_HTTP_E_BODY_LIMIT, "body above the bound %llu",
                     (unsigned long long)p->lim.max_body);
            break;
        }
        case ST_CHUNK_END:
            if (!p->chunk_cr && d[i] == '\r') {
                p->chunk_cr = true;
                i++;
            } else if (d[i] == '\n') {
                p->chunk_cr = false;
                p->st = ST_CHUNK_SIZE;
                i++;
            } else {
                fail(p, PN_HTTP_E_CHUNK, "chunk data longer than its size");
            }
            break;
        case ST_DONE:
        case ST_ERROR: break;
        }
    }
    if (used) *used = i;
    return p->st == ST_ERROR ? p->err : PN_HTTP_OK;
}

pn_http_err pn_http_parser_finish(pn_http_parser *p) {
    switch (p->st) {
    case ST_ERROR: return p->err;
    case ST_DONE: return PN_HTTP_OK;
    case ST_BODY_CLOSE: p->st = ST_DONE; return PN_HTTP_OK;
    case ST_STATUS:
        return fail(p, PN_HTTP_E_TRUNCATED,
                    p->line.len || p->interim ? "the stream ended inside the status line"
                                              : "the stream ended before any response");
    case ST_FIELDS: return fail(p, PN_HTTP_E_TRUNCATED, "the stream ended inside the header");
    default: return fail(p, PN_HTTP_E_TRUNCATED, "the stream ended inside the body");
    }
}

/* ---------------------------------------------------------------- Retry-After */

/* days since 1970-01-01 of a proleptic Gregorian date */
static int64_t days_from_civil(int64_t y, int m, int d) {
    y -= m <= 2;
    int64_t era = (y >= 0 ? y : y - 399) / 400;
    int64_t yoe = y - era * 400;
    int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

static bool digits(const char *s, int n, int *out) {
    int v = 0;
    for (int i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9') return false;
        v = v * 10 + (s[i] - '0');
    }
    *out = v;
    return true;
}

/* IMF-fixdate: "Sun, 06 Nov 1994 08:49:37 GMT" -> Unix ms, or -1 */
static int64_t imf_fixdate(const char *s) {
    static const char months[] = "JanFebMarAprMayJunJulAugSepOctNovDec";
    if (strlen(s) != 29 || s[3] != ',' || s[4] != ' ' || s[7] != ' ' || s[11] != ' ' ||
        s[16] != ' ' || s[19] != ':' || s[22] != ':' || s[25] != ' ' || memcmp(s + 26, "GMT", 3))
        return -1;
    int day, year, hh, mm, ss, mon = -1;
    if (!digits(s + 5, 2, &day) || !digits(s + 12, 4, &year) || !digits(s + 17, 2, &hh) ||
        !digits(s + 20, 2, &mm) || !digits(s + 23, 2, &ss))
        return -1;
    for (int i = 0; i < 12; i++)
        if (!memcmp(s + 8, months + 3 * i, 3)) mon = i + 1;
    if (mon < 0 || day < 1 || day > 31 || hh > 23 || mm > 59 || ss > 60) return -1;
    int64_t secs = days_from_civil(year, mon, day) * 86400 + hh * 3600 + mm * 60 + ss;
    return secs * 1000;
}

int64_t pn_http_retry_after_ms(const pn_http_parser *p, int64_t wall_now_ms) {
    const char *v = pn_http_header_get(p, "retry-after");
    if (!v || !*v) return -1;
    if (*v >= '0' && *v <= '9') {
        int64_t secs = 0;
        for (const char *c = v; *c; c++) {
            if (*c < '0' || *c > '9') return -1;
            if (secs <= 100000000) secs = secs * 10 + (*c - '0');
        }
        if (secs > 100000000) secs = 100000000; /* about three years: clamped */
        return secs * 1000;
    }
    int64_t at = imf_fixdate(v);
    if (at < 0) return -1;
    return at > wall_now_ms ? at - wall_now_ms : 0;
}

/* ---------------------------------------------------------------- URLs */

void pn_http_url_free(pn_http_url *u) {
    if (!u) return;
    free(u->target);
    free(u->host_field);
    u->target = u->host_field = NULL;
}

static bool host_char(unsigned char c) {
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '-' ||
           c == '.' || c == '_' || c == '~';
}

static bool scheme_is(const char *u, size_t n, const char *s) {
    return ascii_ieq(u, n, s);
}

pn_http_err pn_http_url_parse(const char *url, pn_http_url *out, char *d, size_t dl) {
    memset(out, 0, sizeof *out);
    if (d && dl) d[0] = '\0';
    if (!url) {
        set_detail(d, dl, "no URL");
        return PN_HTTP_E_URL;
    }
    for (const char *c = url; *c; c++)
        if ((unsigned char)*c <= 0x20 || (unsigned char)*c >= 0x7f) {
            set_detail(d, dl, "URL holds a space, control or non-ASCII byte");
            return PN_HTTP_E_URL;
        }
    const char *sep = strstr(url, "://");
    if (!sep || !(scheme_is(url, (size_t)(sep - url), "http") ||
                  scheme_is(url, (size_t)(sep - url), "https"))) {
        set_detail(d, dl, "not an http:// or https:// URL");
        return PN_HTTP_E_URL;
    }
    out->tls = (size_t)(sep - url) == 5;
    const char *a = sep + 3;
    size_t alen = strcspn(a, "/?#");
    const char *rest = a + alen;
    if (memchr(a, '@', alen)) {
        set_detail(d, dl, "userinfo in a URL is refused");
        return PN_HTTP_E_URL;
    }
    const char *h = a, *hend, *port = NULL;
    if (alen && a[0] == '[') {
        const char *close = memchr(a, ']', alen);
        if (!close) {
            set_detail(d, dl, "unclosed IPv6 literal");
            return PN_HTTP_E_URL;
        }
        h = a + 1;
        hend = close;
        for (const char *c = h; c < hend; c++)
            if (!((*c >= '0' && *c <= '9') || (lower(*c) >= 'a' && lower(*c) <= 'f') || *c == ':' ||
                  *c == '.')) {
                set_detail(d, dl, "bad IPv6 literal");
                return PN_HTTP_E_URL;
            }
        if (close + 1 < a + alen) {
            if (close[1] != ':') {
                set_detail(d, dl, "bad byte after the IPv6 literal");
                return PN_HTTP_E_URL;
            }
            port = close + 2;
        }
    } else {
        const char *colon = memchr(a, ':', alen);
        hend = colon ? colon : a + alen;
        if (colon) port = colon + 1;
        for (const char *c = h; c < hend; c++)
            if (!host_char((unsigned char)*c)) {
                set_detail(d, dl, "bad byte '%c' in the host", *c);
                return PN_HTTP_E_URL;
            }
    }
    size_t hl = (size_t)(hend - h);
    if (hl == 0 || hl >= sizeof out->host) {
        set_detail(d, dl, hl ? "host name too long" : "empty host");
        return PN_HTTP_E_URL;
    }
    memcpy(out->host, h, hl);
    out->host[hl] = '\0';
    out->port = out->tls ? 443 : 80;
    bool explicit_port = false;
    if (port) {
        const char *pe = a + alen;
        unsigned long v = 0;
        if (port == pe || pe - port > 5) {
            set_detail(d, dl, "bad port");
            return PN_HTTP_E_URL;
        }
        for (const char *c = port; c < pe; c++) {
            if (*c < '0' || *c > '9') {
                set_detail(d, dl, "bad port");
                return PN_HTTP_E_URL;
            }
            v = v * 10 + (unsigned long)(*c - '0');
        }
        if (v == 0 || v > 65535) {
            set_detail(d, dl, "port outside 1..65535");
            return PN_HTTP_E_URL;
        }
        out->port = (uint16_t)v;
        explicit_port = out->port != (out->tls ? 443 : 80);
    }
    size_t tl = strcspn(rest, "#");
    pb_buf t = {0}, hf = {0};
    bool ok = (rest[0] == '/' ? true : pb_buf_putc(&t, '/')) && pb_buf_put(&t, rest, tl);
    bool v6 = a[0] == '[';
    ok = ok && pb_buf_printf(&hf, "%s%s%s", v6 ? "[" : "", out->host, v6 ? "]" : "");
    if (ok && explicit_port) ok = pb_buf_printf(&hf, ":%u", (unsigned)out->port);
    if (!ok) {
        pb_buf_free(&t);
        pb_buf_free(&hf);
        set_detail(d, dl, "out of memory");
        return PN_HTTP_E_NOMEM;
    }
    out->target = pb_buf_take(&t, NULL);
    out->host_field = pb_buf_take(&hf, NULL);
    return PN_HTTP_OK;
}
