/*
 * serve_http_parse.c — the strict request-head parser of the workspace server's
 * streamable HTTP transport (serve_http_int.h says what it accepts). Pure: no I/O, no
 * allocation; every index is checked against the given length.
 */
#include "mcp/serve_http_int.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static bool is_tchar(unsigned char c) {
    if ((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) return true;
    return c && strchr("!#$%&'*+-.^_`|~", c) != NULL;
}

/* One header into r. false: refused (duplicate, bad value). */
static int header(pmcp__hreq *r, const char *name, char *val) {
    const char **slot = NULL;
    if (!strcasecmp(name, "host"))
        slot = &r->host;
    else if (!strcasecmp(name, "origin"))
        slot = &r->origin;
    else if (!strcasecmp(name, "authorization"))
        slot = &r->auth;
    else if (!strcasecmp(name, "mcp-session-id"))
        slot = &r->session;
    else if (!strcasecmp(name, "mcp-protocol-version"))
        slot = &r->proto;
    else if (!strcasecmp(name, "transfer-encoding"))
        return 501;
    else if (!strcasecmp(name, "connection")) {
        if (!strcasecmp(val, "close")) r->close = true;
        return 0;
    } else if (!strcasecmp(name, "content-length")) {
        if (r->has_length || !val[0] || strlen(val) > 15) return 400;
        size_t n = 0;
        for (const char *p = val; *p; p++) {
            if (*p < '0' || *p > '9') return 400;
            n = n * 10 + (size_t)(*p - '0');
        }
        r->has_length = true;
        r->content_length = n;
        return 0;
    }
    if (slot) {
        if (*slot) return 400;
        *slot = val;
    }
    return 0;
}

long pmcp__hreq_parse(char *buf, size_t len, size_t max_head, pmcp__hreq *r) {
    size_t end = 0;
    bool found = false;
    for (size_t i = 0; i + 3 < len && i + 4 <= max_head; i++)
        if (buf[i] == '\r' && buf[i + 1] == '\n' && buf[i + 2] == '\r' && buf[i + 3] == '\n') {
            end = i + 4;
            found = true;
            break;
        }
    if (!found) {
        /* a bare LF anywhere so far is refused at once, not after max_head bytes */
        for (size_t i = 0; i < len; i++)
            if (buf[i] == '\n' && (i == 0 || buf[i - 1] != '\r')) return -400;
        return len >= max_head ? -431 : 0;
    }
    memset(r, 0, sizeof *r);
    /* every line ends in CRLF; no other CR or LF, no NUL */
    for (size_t i = 0; i < end; i++) {
        unsigned char c = (unsigned char)buf[i];
        if (c == '\n' && (i == 0 || buf[i - 1] != '\r')) return -400;
        if (c == '\r' && (i + 1 >= end || buf[i + 1] != '\n')) return -400;
        if (c == 0 || c == 0x7f || (c < 0x20 && c != '\t' && c != '\r' && c != '\n')) return -400;
    }
    /* request line */
    char *p = buf;
    char *eol = strstr(p, "\r\n");
    if (!eol) return -400;
    *eol = 0;
    char *sp1 = strchr(p, ' ');
    if (!sp1 || sp1 == p || sp1 - p > 16) return -400;
    *sp1 = 0;
    for (char *q = p; *q; q++)
        if (*q < 'A' || *q > 'Z') return -400;
    r->method = p;
    char *tgt = sp1 + 1;
    char *sp2 = strchr(tgt, ' ');
    if (!sp2 || tgt[0] != '/' || sp2 - tgt > 2048) return -400;
    *sp2 = 0;
    for (char *q = tgt; *q; q++)
        if ((unsigned char)*q <= 0x20 || (unsigned char)*q >= 0x7f) return -400;
    r->target = tgt;
    const char *ver = sp2 + 1;
    if (!strcmp(ver, "HTTP/1.0"))
        r->http10 = r->close = true;
    else if (strcmp(ver, "HTTP/1.1") != 0)
        return strncmp(ver, "HTTP/", 5) ? -400 : -505;
    /* headers */
    p = eol + 2;
    while ((size_t)(p - buf) < end - 2) {
        eol = strstr(p, "\r\n");
        if (!eol) return -400;
        *eol = 0;
        if (*p == ' ' || *p == '\t') return -400; /* obs-fold */
        char *colon = strchr(p, ':');
        if (!colon || colon == p) return -400;
        *colon = 0;
        for (char *q = p; *q; q++)
            if (!is_tchar((unsigned char)*q)) return -400;
        char *v = colon + 1;
        while (*v == ' ' || *v == '\t')
            v++;
        char *ve = v + strlen(v);
        while (ve > v && (ve[-1] == ' ' || ve[-1] == '\t'))
            *--ve = 0;
        int st = header(r, p, v);
        if (st) return -st;
        p = eol + 2;
    }
    if (!r->http10 && !r->host) return -400; /* HTTP/1.1 requires Host */
    return (long)end;
}
