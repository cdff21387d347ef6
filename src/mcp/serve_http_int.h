/*
 * serve_http_int.h — the strict HTTP/1.1 request-head parser of the workspace server's
 * streamable HTTP transport (serve_http_parse.c; prefix pmcp__hreq).
 *
 * Invariants: only origin-form targets, HTTP/1.0 or 1.1, CRLF line ends, token header
 * names, no obs-fold, no control characters in values, at most one Host,
 * Content-Length, Authorization, Origin and Mcp-Session-Id; Transfer-Encoding is refused
 * (bodies are Content-Length only, so no request smuggling). The parsed fields point
 * into the caller's buffer, which the parser NUL-terminates in place.
 */
#ifndef PMCP_SERVE_HTTP_INT_H
#define PMCP_SERVE_HTTP_INT_H

#include <stdbool.h>
#include <stddef.h>

typedef struct pmcp__hreq {
    const char *method, *target;
    const char *host, *origin, *auth, *session, *proto; /* NULL when absent */
    size_t content_length;
    bool has_length, close, http10;
} pmcp__hreq;

/* Parses the head at buf[0..len). >0: the head's length (through the blank line),
 * fields set, buf modified; 0: incomplete (nothing modified); <0: minus the HTTP status
 * to answer (400, 431, 501, 505). */
long pmcp__hreq_parse(char *buf, size_t len, size_t max_head, pmcp__hreq *r);

#endif
