/*
 * oauth_int.h — what the OAuth files of src/mcp/ share (prefix pmcp__oa_ / pmcp__auth_).
 *
 * oauth_net.c   : URL rules (canonical form, origin, https-or-loopback), the curl handle
 *                 every MCP and OAuth request starts from (the HTTP transport uses it
 *                 too), bounded JSON GET/POST that never follow a redirect, the loopback
 *                 redirect listener.
 * oauth_store.c : the per-user token files (0600 in a 0700 directory, no symlinks).
 * oauth.c       : discovery, registration, PKCE, the code exchange, refresh, and the
 *                 per-connection token holder the HTTP transport asks for a header.
 */
#ifndef PMCP_OAUTH_INT_H
#define PMCP_OAUTH_INT_H

#include "peri/mcp.h"

#include <curl/curl.h>
#include "peri/json.h"
#include <stdbool.h>
#include <stddef.h>

/* ---------------------------------------------------------------- URLs */

/* scheme://host[:port]/path with scheme and host lower-cased, the default port, query,
 * fragment and a trailing '/' dropped (the form RFC 8707 resource values take). NULL when
 * not an http(s) URL or out of memory. Caller frees. */
char *pmcp__oa_canonical(const char *url);
/* scheme://host:port (port always present), lower case. NULL when unparsable. */
char *pmcp__oa_origin(const char *url);
/* https, or http to a loopback host (127.0.0.1, ::1, localhost). */
bool pmcp__oa_secure(const char *url);
/* pmcp__oa_secure, and http only when the MCP server itself is on a loopback host (a
 * remote server cannot make Peri talk plain HTTP to local services). */
bool pmcp__oa_secure_for(const char *url, const char *server);
/* The path of url ("" when none or "/"), malloc'd. */
char *pmcp__oa_path(const char *url);

/* ---------------------------------------------------------------- HTTP */

/* A curl handle for url with headers h (borrowed: must outlive it), as every request of
 * the MCP HTTP transport and of OAuth starts: no signals, no redirect followed, http and
 * https only. NULL when out of memory. */
CURL *pmcp__easy(const char *url, struct curl_slist *h);

/* GET (form == NULL) or POST of form (application/x-www-form-urlencoded, or JSON when
 * json is true) to url, never following a redirect; the answer's JSON object in *out
 * (new reference) when the body is one. Returns the HTTP status, or -1 with err when the
 * transfer failed. Bodies above 1 MiB are refused. */
long pmcp__oa_http(const char *url, const char *body, bool json, pj_t **out, char *err,
                   size_t errlen);
/* POSTs an unauthenticated initialize to an MCP server URL: the status, and its
 * WWW-Authenticate value in *www (malloc'd, NULL when absent); -1 with err. */
long pmcp__oa_probe(const char *url, char **www, char *err, size_t errlen);
/* Appends k=v (percent-encoded) to a form or query text (*buf grows; sep '&' or '?'). */
int pmcp__oa_param(char **buf, const char *k, const char *v);

/* ---------------------------------------------------------------- loopback */

typedef struct pmcp__oa_listener {
    int fd;
    int port;
} pmcp__oa_listener;

/* Listens on 127.0.0.1 at a random port. 0 or -1. */
int pmcp__oa_listen(pmcp__oa_listener *l);
/* Waits for GET /callback with the expected state: *code (malloc'd) on success. A request
 * with another state is answered 400 and waiting goes on. -1 with err on timeout, stop,
 * an error answer from the authorization server (error=...), or an iss other than
 * issuer (RFC 9207). */
int pmcp__oa_wait_code(pmcp__oa_listener *l, const char *state, const char *issuer, long timeout_ms,
                       const atomic_int *stop, char **code, char *err, size_t errlen);
void pmcp__oa_close(pmcp__oa_listener *l);

/* ---------------------------------------------------------------- store */

typedef struct pmcp__oa_token {
    char *resource;       /* canonical server URL */
    char *issuer;         /* the authorization server */
    char *token_endpoint; /* same origin as issuer (checked at login) */
    char *client_id;
    char *client_secret; /* may be NULL (public client) */
    char *access_token;
    char *refresh_token;  /* may be NULL */
    long long expires_at; /* unix seconds; 0: unknown */
} pmcp__oa_token;

void pmcp__oa_token_clear(pmcp__oa_token *t);
/* Reads the token of canonical resource from dir. 0, 1 when none, -1 when unreadable
 * or unsafe (symlink, other owner). */
int pmcp__oa_load(const char *dir, const char *resource, pmcp__oa_token *t);
/* Writes it atomically (0600; creates dir 0700). 0 or -1. */
int pmcp__oa_save(const char *dir, const pmcp__oa_token *t);
int pmcp__oa_remove(const char *dir, const char *resource);

/* ---------------------------------------------------------------- per connection */

typedef struct pmcp__auth pmcp__auth;

/* NULL when o is NULL / has no dir, or out of memory. name and url are copied. */
pmcp__auth *pmcp__auth_new(const pmcp_oauth_opts *o, const char *name, const char *url);
void pmcp__auth_free(pmcp__auth *a);
/* Writes "Authorization: Bearer ..." for the current token into buf (refreshing an
 * expired one first). 1 when written, 0 when there is no token. */
int pmcp__auth_header(pmcp__auth *a, char *buf, size_t n);
/* After a 401 answered to a request that carried header `used` ("" when none):
 * remembers the challenge and tries a refresh. 1 when a newer token exists (retry once),
 * 0 when the user must log in. */
int pmcp__auth_on_401(pmcp__auth *a, const char *www_authenticate, const char *used);
/* True once a 401 could not be answered with a stored or refreshed token. */
bool pmcp__auth_needs_login(pmcp__auth *a);
/* Runs the interactive login from the last challenge (or the well-known locations).
 * 0, or -1 with err. */
int pmcp__auth_login(pmcp__auth *a, char *err, size_t errlen);

#endif
