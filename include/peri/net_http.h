/*
 * net_http.h — the project's own HTTP/1.1 client, in two parts:
 *
 *  - a sans-IO codec (src/net/http_codec.c): request serialisation and a response parser
 *    fed with arbitrary byte splits. It opens nothing and reads no clock; it never reads
 *    past the bytes it is given, and every malformed input is a typed pn_http_err.
 *  - an event-driven client (src/net/http_client.c) over a pn_ports table (net.h): it
 *    parses the URL, opens one byte stream (TLS with SNI = host for https), writes the
 *    request, feeds the codec on PN_EV_READABLE and reports through callbacks.
 *
 * Scope: one request per connection. Every request carries "Connection: close"; there
 * is no keep-alive pooling, no pipelining, no redirects, no proxy, no content coding
 * (no Accept-Encoding is sent) and no 101 upgrade. Bodies are delivered as they arrive.
 *
 * Ownership: strings passed in are copied before the call returns; pointers handed to a
 * callback (the parser view, body bytes, header texts) are valid only during it.
 */
#ifndef PERI_NET_HTTP_H
#define PERI_NET_HTTP_H

#include "peri/base.h"
#include "peri/net.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Typed outcome of the codec and of a request. */
typedef enum pn_http_err {
    PN_HTTP_OK = 0,
    PN_HTTP_E_NOMEM,       /* an allocation failed */
    PN_HTTP_E_ARG,         /* a bad request part: method, target, header name or value
                              (CR, LF, NUL, control bytes), a header the client sets */
    PN_HTTP_E_URL,         /* not an http(s) URL, bad host or port, userinfo present */
    PN_HTTP_E_STATUS_LINE, /* malformed status line or unsupported HTTP version */
    PN_HTTP_E_HEADER,      /* malformed header field (or trailer field) */
    PN_HTTP_E_FOLDED,      /* obsolete line folding (a field line starting with SP/HT) */
    PN_HTTP_E_FRAMING,     /* bad or conflicting Content-Length, an unsupported
                              Transfer-Encoding, an unexpected 101 */
    PN_HTTP_E_CHUNK,       /* malformed chunk size, extension or chunk terminator */
    PN_HTTP_E_HEAD_LIMIT,  /* status line, field line, header block or field count bound */
    PN_HTTP_E_BODY_LIMIT,  /* the body is longer than the configured bound */
    PN_HTTP_E_TRUNCATED,   /* the stream ended before the response was complete */
    PN_HTTP_E_STOPPED,     /* a callback returned nonzero */
    PN_HTTP_E_NET,         /* the byte stream failed; the result's net says how */
    PN_HTTP_E_TIMEOUT,     /* a deadline passed (the request's, its idle bound, or the
                              host's connect bound); never reported as a cancel */
    PN_HTTP_E_CANCELLED,   /* pn_http_cancel */
} pn_http_err;

/* English name ("truncated", "timeout", ...); never NULL. */
const char *pn_http_err_name(pn_http_err e);

typedef struct pn_http_header {
    const char *name;
    const char *value;
} pn_http_header;

/* ---- request serialisation ----------------------------------------------------------- */

/* Appends one request to out: "METHOD target HTTP/1.1", Host, the given headers,
 * Content-Length when body != NULL or the method is POST/PUT/PATCH, "Connection: close",
 * the blank line and the body. method is a token; target is origin-form ("/path?q",
 * visible ASCII, no '#'); host is the Host field value (host or [v6], with ":port" when
 * not the scheme's default). A header named Host, Content-Length, Transfer-Encoding or
 * Connection is refused (the codec owns framing). On error out is left as it was and
 * detail (when given) says what. */
pn_http_err pn_http_write_request(pb_buf *out, const char *method, const char *target,
                                  const char *host, const pn_http_header *headers, size_t nheaders,
                                  const void *body, size_t body_len, char *detail,
                                  size_t detail_len);

/* ---- response parser ----------------------------------------------------------------- */

/* Bounds of one response; a 0 field takes the default (line and head bounds above 1 GiB
 * are taken as 1 GiB, chunk digits above 16 as 16). */
typedef struct pn_http_limits {
    size_t max_line;         /* status line, one field line, one chunk-size line; 0: 8 KiB */
    size_t max_head;         /* one header block (or the trailers), bytes; 0: 64 KiB */
    size_t max_headers;      /* field lines of one header block; 0: 100 */
    size_t max_chunk_digits; /* hex digits of a chunk size (leading zeros count); 0: 16 */
    uint64_t max_body;       /* decoded body bytes; 0: 64 MiB */
} pn_http_limits;

typedef struct pn_http_parser pn_http_parser;

/* Callbacks of the parser: on_head runs once, for the final (non-1xx) response, when its
 * status line and headers are complete and before its first body byte; on_body gets the
 * decoded body bytes as they come (chunk framing removed). A nonzero return stops the
 * parser with PN_HTTP_E_STOPPED. Either may be NULL. */
typedef struct pn_http_parser_cb {
    int (*on_head)(void *ud, const pn_http_parser *p);
    int (*on_body)(void *ud, const char *data, size_t len);
    void *ud;
} pn_http_parser_cb;

/* Owned by the caller; free with pn_http_parser_free. head_request: the request was
 * HEAD (the response has no body whatever its headers say). NULL on out of memory. */
pn_http_parser *pn_http_parser_new(bool head_request, const pn_http_limits *lim,
                                   const pn_http_parser_cb *cb);
void pn_http_parser_free(pn_http_parser *p);

/* Feeds the next bytes of the stream (any split, len may be 0). Returns PN_HTTP_OK while
 * more is wanted or once the response is complete (pn_http_parser_done); *used (when
 * given) says how many bytes belong to the response: bytes after a complete response are
 * not consumed. After an error every later call returns that error again. */
pn_http_err pn_http_parser_feed(pn_http_parser *p, const void *data, size_t len, size_t *used);
/* The stream ended: completes a body delimited by the close; PN_HTTP_E_TRUNCATED when the
 * response was not complete. */
pn_http_err pn_http_parser_finish(pn_http_parser *p);
bool pn_http_parser_done(const pn_http_parser *p);
/* English detail of the last error ("" when none). */
const char *pn_http_parser_detail(const pn_http_parser *p);

/* The final response's head (valid from on_head until the parser is freed or fed past
 * an error; status 0 and no headers before that). */
int pn_http_status(const pn_http_parser *p);
const char *pn_http_reason(const pn_http_parser *p); /* "" when absent */
int pn_http_minor_version(const pn_http_parser *p);  /* HTTP/1.x: x */
size_t pn_http_header_count(const pn_http_parser *p);
/* The i-th field in arrival order (names as sent, values without surrounding OWS). */
pn_http_header pn_http_header_at(const pn_http_parser *p, size_t i);
/* The first field named name (ASCII case-insensitive), or NULL. */
const char *pn_http_header_get(const pn_http_parser *p, const char *name);
/* Retry-After as milliseconds from now: delta-seconds, or an IMF-fixdate against
 * wall_now_ms (Unix ms; a date in the past gives 0). -1 when absent or unreadable. */
int64_t pn_http_retry_after_ms(const pn_http_parser *p, int64_t wall_now_ms);

/* ---- URLs ---------------------------------------------------------------------------- */

typedef struct pn_http_url {
    bool tls;         /* https */
    char host[256];   /* for open: a name or a numeric address, IPv6 without brackets */
    uint16_t port;    /* explicit or the scheme's default */
    char *target;     /* owned: path and query, "/" when empty; the fragment is dropped */
    char *host_field; /* owned: the Host field value ("[::1]:8080", "example.com") */
} pn_http_url;

/* Parses an absolute http:// or https:// URL. Userinfo ("user@"), an empty host, a port
 * outside 1..65535, spaces, control bytes and non-ASCII bytes are refused with
 * PN_HTTP_E_URL (PN_HTTP_E_NOMEM on allocation failure). Free with pn_http_url_free. */
pn_http_err pn_http_url_parse(const char *url, pn_http_url *out, char *detail, size_t detail_len);
void pn_http_url_free(pn_http_url *u);

/* ---- the client over pn_ports -------------------------------------------------------- */

typedef struct pn_http_req pn_http_req;

/* The final outcome of a request (valid during on_done only). */
typedef struct pn_http_result {
    pn_http_err err;  /* PN_HTTP_OK: the whole response arrived */
    pn_err net;       /* PN_HTTP_E_NET / _TIMEOUT / _CANCELLED: the port error (PN_E_TIMEOUT,
                         PN_E_CANCELLED for those two); PN_OK otherwise */
    int status;       /* the final status, 0 when no head arrived */
    char detail[160]; /* English, "" when none */
} pn_http_result;

/* on_head and on_body are the parser's (above), with the request's ud; on_done is the one
 * final callback of every started request, made only after everything the request held is
 * settled (its stream closed, its timers fired or cancelled). The request is freed as soon
 * as on_done returns. */
typedef struct pn_http_callbacks {
    int (*on_head)(void *ud, const pn_http_parser *p);
    int (*on_body)(void *ud, const char *data, size_t len);
    void (*on_done)(void *ud, const pn_http_result *r); /* required */
    void *ud;
} pn_http_callbacks;

typedef struct pn_http_opts {
    uint32_t deadline_ms; /* the whole request, from pn_http_request; 0: none */
    uint32_t idle_ms;     /* longest time without a byte received; 0: none */
    pn_http_limits limits;
} pn_http_opts;

/* Starts a request. url: http(s)://host[:port]/path?query. method: "GET", "POST", ...
 * body: NULL for none (a POST without one sends Content-Length: 0). opts may be NULL.
 * Returns the request, whose outcome comes through cb->on_done from a later event; or
 * NULL when it could not start (bad URL or header, a port refused at once, out of
 * memory): then *fail (when given) says why and no callback is ever made.
 *
 * Events: the request is the ud of every handle it opens. The owner of the ports' event
 * callback routes each event whose ud is a request to pn_http_event. The request is
 * driven on the loop's thread only. */
pn_http_req *pn_http_request(const pn_ports *ports, const char *url, const char *method,
                             const pn_http_header *headers, size_t nheaders, const void *body,
                             size_t body_len, const pn_http_callbacks *cb, const pn_http_opts *opts,
                             pn_http_result *fail);

/* Delivers one port event whose ud is r. */
void pn_http_event(pn_http_req *r, const pn_event *ev);

/* Cancels r (also from inside its own on_head/on_body): the stream is closed, timers
 * are cancelled, no more body is delivered, and on_done follows with PN_HTTP_E_CANCELLED
 * once all has settled. No effect once the request is already finishing. */
void pn_http_cancel(pn_http_req *r);

#ifdef __cplusplus
}
#endif
#endif
