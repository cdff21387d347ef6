/*
 * oauth.c — OAuth 2.1 for remote MCP servers (the MCP authorization specification):
 * discovery from the server's 401 (RFC 9728 protected resource metadata, RFC 8414
 * authorization server metadata), dynamic client registration (RFC 7591), the
 * authorization code flow with PKCE S256 through a loopback redirect, resource
 * indicators (RFC 8707) and refresh; and pmcp__auth, the token holder one HTTP
 * connection asks for its Authorization header.
 *
 * Invariants (a hostile MCP server, metadata document or authorization server must not
 * obtain a token meant for another party):
 *   - a token is stored and looked up under the canonical URL of the configured server
 *     and only the HTTP transport of that URL sends it (it never follows redirects);
 *   - the protected resource metadata must name that server (same origin, a path that
 *     is the server's or a parent of it); the authorization server must be the one it
 *     names, its metadata's issuer must be exactly that URL, and its token and
 *     registration endpoints must share the issuer's origin (so refresh tokens and codes
 *     only go there);
 *   - every URL must be https, except loopback hosts;
 *   - the code is accepted only with this login's random state (and the issuer, when
 *     the callback names one), and only with PKCE S256.
 */
#include "mcp/oauth_int.h"

#include <openssl/evp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>
#include <time.h>

#define OA_DEFAULT_LOGIN_MS 300000L

/* ---------------------------------------------------------------- helpers */

static int random_b64url(char *out, size_t nbytes) {
    static const char a[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    unsigned char b[64];
    if (nbytes > sizeof b) return -1;
    size_t got = 0;
    while (got < nbytes) {
        ssize_t k = getrandom(b + got, nbytes - got, 0);
        if (k <= 0) return -1;
        got += (size_t)k;
    }
    for (size_t i = 0; i < nbytes; i++)
        out[i] = a[b[i] & 63];
    out[nbytes] = '\0';
    return 0;
}

/* base64url(SHA-256(verifier)) without padding (43 characters). */
static int s256(const char *verifier, char out[64]) {
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int ml = 0;
    if (!EVP_Digest(verifier, strlen(verifier), md, &ml, EVP_sha256(), NULL) || ml != 32) return -1;
    unsigned char enc[64];
    int n = EVP_EncodeBlock(enc, md, 32);
    if (n <= 0) return -1;
    size_t o = 0;
    for (int i = 0; i < n; i++) {
        char c = (char)enc[i];
        if (c == '=') break;
        out[o++] = c == '+' ? '-' : c == '/' ? '_' : c;
    }
    out[o] = '\0';
    return 0;
}

/* The value of parameter key in a WWW-Authenticate Bearer challenge (malloc'd) or NULL. */
static char *challenge_param(const char *h, const char *key) {
    if (!h) return NULL;
    size_t kl = strlen(key);
    for (const char *p = h; *p; p++) {
        if (strncasecmp(p, key, kl) || (p != h && p[-1] != ' ' && p[-1] != ',')) continue;
        const char *q = p + kl;
        while (*q == ' ')
            q++;
        if (*q != '=') continue;
        q++;
        while (*q == ' ')
            q++;
        const char *end;
        if (*q == '"') {
            q++;
            end = strchr(q, '"');
        } else {
            end = q + strcspn(q, " ,");
        }
        if (!end) return NULL;
        char *v = malloc((size_t)(end - q) + 1);
        if (v) {
            memcpy(v, q, (size_t)(end - q));
            v[end - q] = '\0';
        }
        return v;
    }
    return NULL;
}

static bool same_origin(const char *a, const char *b) {
    char *oa = pmcp__oa_origin(a), *ob = pmcp__oa_origin(b);
    bool same = oa && ob && !strcmp(oa, ob);
    free(oa);
    free(ob);
    return same;
}

/* "origin/.well-known/<name><path>" for url (path insertion, RFC 8414 §3.1). */
static char *well_known(const char *url, const char *name, bool with_path) {
    char *canon = pmcp__oa_canonical(url), *path = pmcp__oa_path(url);
    char *out = NULL;
    if (canon && path) {
        /* canon is scheme://host[:port]<path without trailing slash> */
        size_t pl = strlen(path);
        while (pl && path[pl - 1] == '/')
            pl--;
        size_t base = strlen(canon) - pl;
        size_t n = base + strlen(name) + pl + 16;
        if ((out = malloc(n)))
            snprintf(out, n, "%.*s/.well-known/%s%.*s", (int)base, canon, name,
                     with_path ? (int)pl : 0, path);
    }
    free(canon);
    free(path);
    return out;
}

/* ---------------------------------------------------------------- discovery */

typedef struct as_meta {
    char *issuer, *authorize, *token, *registration;
} as_meta;

static void as_meta_clear(as_meta *m) {
    free(m->issuer);
    free(m->authorize);
    free(m->token);
    free(m->registration);
    memset(m, 0, sizeof *m);
}

static char *jstr(pj_t *o, const char *k) {
    const char *v = pj_string_value(pj_object_get(o, k));
    return v ? strdup(v) : NULL;
}

/* Fetches and checks the protected resource metadata; *as_url the authorization server
 * it names. 0 or -1 with err. */
static int resource_metadata(const char *server, const char *challenge, char **as_url, char **scope,
                             char *err, size_t errlen) {
    *as_url = NULL;
    char *canon = pmcp__oa_canonical(server);
    char *from = challenge_param(challenge, "resource_metadata");
    char *tries[3] = {from, NULL, NULL};
    if (!from) {
        tries[0] = well_known(server, "oauth-protected-resource", true);
        tries[1] = well_known(server, "oauth-protected-resource", false);
    }
    pj_t *doc = NULL;
    char used[1024] = "";
    for (int i = 0; i < 2 && tries[i] && !doc; i++) {
        if (!pmcp__oa_secure_for(tries[i], server)) {
            snprintf(err, errlen, "the resource metadata URL %.300s is neither https nor loopback",
                     tries[i]);
            break;
        }
        pj_t *j;
        long st = pmcp__oa_http(tries[i], NULL, false, &j, err, errlen);
        if (st == 200 && j) {
            doc = j;
            snprintf(used, sizeof used, "%s", tries[i]);
        } else {
            pj_decref(j);
            if (st >= 0) snprintf(err, errlen, "%.300s answered HTTP %ld", tries[i], st);
        }
    }
    for (int i = 0; i < 3; i++)
        free(tries[i]);
    int rc = -1;
    const char *res = pj_string_value(pj_object_get(doc, "resource"));
    pj_t *ass = pj_object_get(doc, "authorization_servers");
    const char *as = pj_string_value(pj_array_get(ass, 0));
    char *rcanon = res ? pmcp__oa_canonical(res) : NULL;
    size_t rl = rcanon ? strlen(rcanon) : 0;
    if (!doc) {
        if (!err[0]) snprintf(err, errlen, "no protected resource metadata");
    } else if (!rcanon || !canon || !same_origin(rcanon, canon) || strncmp(canon, rcanon, rl) ||
               (canon[rl] != '\0' && canon[rl] != '/')) {
        snprintf(err, errlen,
                 "the resource metadata at %.200s names another resource (%.200s), not %.200s; "
                 "refused",
                 used, res ? res : "none", canon ? canon : server);
    } else if (!as) {
        snprintf(err, errlen, "the resource metadata names no authorization server");
    } else if (!pmcp__oa_secure_for(as, server)) {
        snprintf(err, errlen, "the authorization server %.300s is neither https nor loopback", as);
    } else if (!(*as_url = strdup(as))) {
        snprintf(err, errlen, "out of memory");
    } else {
        rc = 0;
        char *sc = challenge_param(challenge, "scope");
        if (!sc) {
            pj_t *ss = pj_object_get(doc, "scopes_supported");
            size_t i;
            pj_t *s;
            char buf[1024] = "";
            pj_array_foreach(ss, i, s) {
                const char *v = pj_string_value(s);
                if (v && strlen(buf) + strlen(v) + 2 < sizeof buf) {
                    if (buf[0]) strcat(buf, " ");
                    strcat(buf, v);
                }
            }
            if (buf[0]) sc = strdup(buf);
        }
        *scope = sc;
    }
    free(rcanon);
    free(canon);
    pj_decref(doc);
    return rc;
}

static bool has_s256(pj_t *doc) {
    size_t i;
    pj_t *m;
    pj_array_foreach(pj_object_get(doc, "code_challenge_methods_supported"), i, m) {
        if (pj_is_string(m) && !strcmp(pj_string_value(m), "S256")) return true;
    }
    return false;
}

/* Fetches and checks the authorization server's metadata. 0 or -1 with err. */
static int server_metadata(const char *as, const char *server, as_meta *m, char *err,
                           size_t errlen) {
    memset(m, 0, sizeof *m);
    char *path = pmcp__oa_path(as);
    bool has_path = path && path[0];
    free(path);
    char *tries[4] = {well_known(as, "oauth-authorization-server", true),
                      well_known(as, "openid-configuration", true), has_path ? NULL : NULL, NULL};
    if (has_path) { /* OpenID Connect's own form: the path before .well-known */
        char *c = pmcp__oa_canonical(as);
        size_t n = c ? strlen(c) + 40 : 0;
        if (c && (tries[2] = malloc(n)))
            snprintf(tries[2], n, "%s/.well-known/openid-configuration", c);
        free(c);
    }
    pj_t *doc = NULL;
    for (int i = 0; i < 3 && !doc; i++) {
        if (!tries[i]) continue;
        pj_t *j;
        long st = pmcp__oa_http(tries[i], NULL, false, &j, err, errlen);
        if (st == 200 && j)
            doc = j;
        else
            pj_decref(j);
    }
    for (int i = 0; i < 4; i++)
        free(tries[i]);
    if (!doc) {
        snprintf(err, errlen, "no authorization server metadata for %.300s", as);
        return -1;
    }
    m->issuer = jstr(doc, "issuer");
    m->authorize = jstr(doc, "authorization_endpoint");
    m->token = jstr(doc, "token_endpoint");
    m->registration = jstr(doc, "registration_endpoint");
    char *ci = m->issuer ? pmcp__oa_canonical(m->issuer) : NULL, *ca = pmcp__oa_canonical(as);
    int rc = -1;
    if (!ci || !ca || strcmp(ci, ca)) {
        snprintf(err, errlen,
                 "the authorization server metadata names issuer %.200s, not %.200s; refused",
                 m->issuer ? m->issuer : "none", as);
    } else if (!m->authorize || !m->token || !pmcp__oa_secure_for(m->authorize, server) ||
               !pmcp__oa_secure_for(m->token, server)) {
        snprintf(err, errlen, "the authorization server metadata lacks secure endpoints");
    } else if (!same_origin(m->token, m->issuer) ||
               (m->registration && !same_origin(m->registration, m->issuer))) {
        snprintf(err, errlen,
                 "the authorization server's token or registration endpoint is on another "
                 "origin than its issuer %.200s; refused",
                 m->issuer);
    } else if (!has_s256(doc)) {
        snprintf(err, errlen, "the authorization server does not offer PKCE S256; refused");
    } else if (!m->registration) {
        snprintf(err, errlen,
                 "the authorization server offers no dynamic client registration, which Peri "
                 "needs");
    } else {
        rc = 0;
    }
    free(ci);
    free(ca);
    pj_decref(doc);
    if (rc) as_meta_clear(m);
    return rc;
}

/* ---------------------------------------------------------------- tokens */

/* Reads a token answer into t (access, refresh, expiry). 0 or -1 with err. */
static int take_tokens(long st, pj_t *j, pmcp__oa_token *t, char *err, size_t errlen) {
    const char *at = pj_string_value(pj_object_get(j, "access_token"));
    const char *tt = pj_string_value(pj_object_get(j, "token_type"));
    if (st != 200 || !at || !tt || strcasecmp(tt, "bearer") || strpbrk(at, "\r\n") ||
        strlen(at) > 8192) {
        const char *e = pj_string_value(pj_object_get(j, "error"));
        if (st >= 0)
            snprintf(err, errlen, "the token endpoint answered HTTP %ld%s%.200s", st, e ? ": " : "",
                     e ? e : "");
        return -1;
    }
    char *na = strdup(at);
    if (!na) return -1;
    free(t->access_token);
    t->access_token = na;
    const char *rt = pj_string_value(pj_object_get(j, "refresh_token"));
    if (rt) {
        free(t->refresh_token);
        t->refresh_token = strdup(rt);
    }
    pj_t *ei = pj_object_get(j, "expires_in");
    t->expires_at = pj_is_integer(ei) && pj_integer_value(ei) > 0
                        ? (long long)time(NULL) + pj_integer_value(ei)
                        : 0;
    return 0;
}

static int refresh(const char *dir, pmcp__oa_token *t, char *err, size_t errlen) {
    if (!t->refresh_token) {
        snprintf(err, errlen, "no refresh token");
        return -1;
    }
    char *form = NULL;
    int bad = pmcp__oa_param(&form, "grant_type", "refresh_token") ||
              pmcp__oa_param(&form, "refresh_token", t->refresh_token) ||
              pmcp__oa_param(&form, "client_id", t->client_id) ||
              pmcp__oa_param(&form, "resource", t->resource) ||
              (t->client_secret && pmcp__oa_param(&form, "client_secret", t->client_secret));
    if (bad) {
        free(form);
        return -1;
    }
    pj_t *j;
    long st = pmcp__oa_http(t->token_endpoint, form, false, &j, err, errlen);
    free(form);
    int rc = take_tokens(st, j, t, err, errlen);
    pj_decref(j);
    if (rc == 0 && pmcp__oa_save(dir, t)) {
        snprintf(err, errlen, "cannot write the token store");
        rc = -1;
    }
    return rc;
}

/* RFC 7591: registers a public client for redirect. 0 or -1 with err. */
static int register_client(const as_meta *m, const char *redirect, const char *scope,
                           pmcp__oa_token *t, char *err, size_t errlen) {
    pj_t *req =
        pj_pack("{s:s, s:[s], s:[s, s], s:[s], s:s}", "client_name", "Peri", "redirect_uris",
                redirect, "grant_types", "authorization_code", "refresh_token", "response_types",
                "code", "token_endpoint_auth_method", "none");
    if (req && scope) pj_object_set_new(req, "scope", pj_string(scope));
    char *body = req ? pj_dumps(req, PJ_COMPACT) : NULL;
    pj_decref(req);
    if (!body) return -1;
    pj_t *j;
    long st = pmcp__oa_http(m->registration, body, true, &j, err, errlen);
    free(body);
    const char *id = pj_string_value(pj_object_get(j, "client_id"));
    int rc = -1;
    if ((st == 200 || st == 201) && id) {
        t->client_id = strdup(id);
        t->client_secret = jstr(j, "client_secret");
        rc = t->client_id ? 0 : -1;
    } else if (st >= 0) {
        snprintf(err, errlen, "client registration answered HTTP %ld", st);
    }
    pj_decref(j);
    return rc;
}

static int login(const pmcp_oauth_opts *o, const char *name, const char *url, const char *challenge,
                 char *err, size_t errlen) {
    err[0] = '\0';
    if (!pmcp__oa_secure(url)) {
        snprintf(err, errlen, "OAuth needs an https server URL (or a loopback one)");
        return -1;
    }
    char *as = NULL, *scope = NULL, *canon = pmcp__oa_canonical(url);
    as_meta m = {0};
    pmcp__oa_token t = {0};
    pmcp__oa_listener l = {.fd = -1};
    char *authz = NULL, *code = NULL, *form = NULL;
    int rc = -1;
    char verifier[65], state[33], chal[64], redirect[64];
    if (!canon || resource_metadata(url, challenge, &as, &scope, err, errlen) ||
        server_metadata(as, url, &m, err, errlen))
        goto out;
    if (pmcp__oa_listen(&l)) {
        snprintf(err, errlen, "cannot listen on 127.0.0.1 for the login redirect");
        goto out;
    }
    snprintf(redirect, sizeof redirect, "http://127.0.0.1:%d/callback", l.port);
    if (register_client(&m, redirect, scope, &t, err, errlen)) goto out;
    if (random_b64url(verifier, 64) || random_b64url(state, 32) || s256(verifier, chal)) {
        snprintf(err, errlen, "no randomness");
        goto out;
    }
    authz = strdup(m.authorize);
    char *q = NULL;
    if (!authz || pmcp__oa_param(&q, "response_type", "code") ||
        pmcp__oa_param(&q, "client_id", t.client_id) ||
        pmcp__oa_param(&q, "redirect_uri", redirect) ||
        pmcp__oa_param(&q, "code_challenge", chal) ||
        pmcp__oa_param(&q, "code_challenge_method", "S256") || pmcp__oa_param(&q, "state", state) ||
        pmcp__oa_param(&q, "resource", canon) || (scope && pmcp__oa_param(&q, "scope", scope))) {
        free(q);
        goto out;
    }
    size_t n = strlen(authz) + strlen(q) + 2;
    char *full = malloc(n);
    if (full) snprintf(full, n, "%s%c%s", authz, strchr(authz, '?') ? '&' : '?', q);
    free(q);
    free(authz);
    authz = full;
    if (!authz) goto out;
    o->show_login(o->ctx, name, authz);
    if (pmcp__oa_wait_code(&l, state, m.issuer,
                           o->login_timeout_ms > 0 ? o->login_timeout_ms : OA_DEFAULT_LOGIN_MS,
                           o->stop, &code, err, errlen))
        goto out;
    if (pmcp__oa_param(&form, "grant_type", "authorization_code") ||
        pmcp__oa_param(&form, "code", code) || pmcp__oa_param(&form, "redirect_uri", redirect) ||
        pmcp__oa_param(&form, "client_id", t.client_id) ||
        pmcp__oa_param(&form, "code_verifier", verifier) ||
        pmcp__oa_param(&form, "resource", canon) ||
        (t.client_secret && pmcp__oa_param(&form, "client_secret", t.client_secret)))
        goto out;
    pj_t *j;
    long st = pmcp__oa_http(m.token, form, false, &j, err, errlen);
    int took = take_tokens(st, j, &t, err, errlen);
    pj_decref(j);
    if (took) goto out;
    t.resource = canon;
    canon = NULL;
    t.issuer = strdup(m.issuer);
    t.token_endpoint = strdup(m.token);
    if (!t.issuer || !t.token_endpoint || pmcp__oa_save(o->dir, &t)) {
        snprintf(err, errlen, "cannot write the token store %.200s", o->dir);
        goto out;
    }
    rc = 0;
out:
    if (rc && !err[0]) snprintf(err, errlen, "out of memory");
    pmcp__oa_close(&l);
    pmcp__oa_token_clear(&t);
    as_meta_clear(&m);
    free(as);
    free(scope);
    free(canon);
    free(authz);
    free(code);
    free(form);
    return rc;
}

/* ---------------------------------------------------------------- per connection */

struct pmcp__auth {
    pthread_mutex_t mu;
    pmcp_oauth_opts o; /* dir owned (copy) */
    char *name, *url, *canon;
    pmcp__oa_token tok;
    bool have;
    bool loaded;
    bool need_login;
    char *challenge;
};

pmcp__auth *pmcp__auth_new(const pmcp_oauth_opts *o, const char *name, const char *url) {
    if (!o || !o->dir || !url) return NULL;
    pmcp__auth *a = calloc(1, sizeof *a);
    if (!a) return NULL;
    a->o = *o;
    a->o.dir = strdup(o->dir);
    a->name = strdup(name ? name : "?");
    a->url = strdup(url);
    a->canon = pmcp__oa_canonical(url);
    if (!a->o.dir || !a->name || !a->url || !a->canon) {
        free((char *)a->o.dir);
        free(a->name);
        free(a->url);
        free(a->canon);
        free(a);
        return NULL;
    }
    pthread_mutex_init(&a->mu, NULL);
    return a;
}

void pmcp__auth_free(pmcp__auth *a) {
    if (!a) return;
    pmcp__oa_token_clear(&a->tok);
    free((char *)a->o.dir);
    free(a->name);
    free(a->url);
    free(a->canon);
    free(a->challenge);
    pthread_mutex_destroy(&a->mu);
    free(a);
}

static void load_locked(pmcp__auth *a) {
    if (a->loaded) return;
    a->loaded = true;
    pmcp__oa_token_clear(&a->tok);
    a->have = pmcp__oa_load(a->o.dir, a->canon, &a->tok) == 0;
}

int pmcp__auth_header(pmcp__auth *a, char *buf, size_t n) {
    pthread_mutex_lock(&a->mu);
    load_locked(a);
    if (a->have && a->tok.expires_at && (long long)time(NULL) + 30 >= a->tok.expires_at &&
        a->tok.refresh_token) {
        char err[256];
        if (refresh(a->o.dir, &a->tok, err, sizeof err)) a->have = false;
    }
    int rc = 0;
    if (a->have) {
        int k = snprintf(buf, n, "Authorization: Bearer %s", a->tok.access_token);
        rc = k > 0 && (size_t)k < n ? 1 : 0;
    }
    pthread_mutex_unlock(&a->mu);
    return rc;
}

int pmcp__auth_on_401(pmcp__auth *a, const char *www, const char *used) {
    pthread_mutex_lock(&a->mu);
    if (www) {
        free(a->challenge);
        a->challenge = strdup(www);
    }
    load_locked(a);
    int rc = 0;
    char cur[8300] = "";
    if (a->have) snprintf(cur, sizeof cur, "Authorization: Bearer %s", a->tok.access_token);
    if (a->have && strcmp(cur, used ? used : "")) {
        rc = 1; /* another request refreshed meanwhile, or a stored token appeared */
    } else if (a->have && a->tok.refresh_token) {
        char err[256];
        rc = refresh(a->o.dir, &a->tok, err, sizeof err) == 0 ? 1 : 0;
        if (!rc) a->have = false;
    } else {
        a->have = false;
    }
    if (!rc) a->need_login = true;
    pthread_mutex_unlock(&a->mu);
    return rc;
}

bool pmcp__auth_needs_login(pmcp__auth *a) {
    pthread_mutex_lock(&a->mu);
    bool v = a->need_login;
    pthread_mutex_unlock(&a->mu);
    return v;
}

int pmcp__auth_login(pmcp__auth *a, char *err, size_t errlen) {
    if (!a->o.show_login) {
        snprintf(err, errlen, "the server needs an OAuth login: run `peri mcp login %s`", a->name);
        return -1;
    }
    pthread_mutex_lock(&a->mu);
    char *ch = a->challenge ? strdup(a->challenge) : NULL;
    pthread_mutex_unlock(&a->mu);
    int rc = login(&a->o, a->name, a->url, ch, err, errlen);
    free(ch);
    pthread_mutex_lock(&a->mu);
    if (rc == 0) {
        a->loaded = false;
        a->need_login = false;
        load_locked(a);
    }
    pthread_mutex_unlock(&a->mu);
    return rc;
}

/* ---------------------------------------------------------------- public */

/* The server's challenge to an unauthenticated initialize (malloc'd; NULL with err
 * empty when it answered 401 without one, NULL with err when it did not ask). */
static char *probe(const char *url, char *err, size_t errlen) {
    char *www = NULL;
    long st = pmcp__oa_probe(url, &www, err, errlen);
    if (st == 401) return www;
    free(www);
    if (st >= 0) snprintf(err, errlen, "%.300s did not ask for authorization (HTTP %ld)", url, st);
    return NULL;
}

int pmcp_oauth_login(const pmcp_oauth_opts *o, const char *name, const char *url, char *err,
                     size_t errlen) {
    if (!o || !o->dir || !o->show_login || !url) {
        snprintf(err, errlen, "no token store or no way to show the login URL");
        return -1;
    }
    err[0] = '\0';
    char *ch = probe(url, err, errlen);
    if (!ch && err[0]) return -1;
    int rc = login(o, name, url, ch, err, errlen);
    free(ch);
    return rc;
}

int pmcp_oauth_forget(const pmcp_oauth_opts *o, const char *url) {
    char *canon = o && o->dir ? pmcp__oa_canonical(url) : NULL;
    int rc = canon ? pmcp__oa_remove(o->dir, canon) : -1;
    free(canon);
    return rc;
}
