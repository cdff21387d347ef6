/*
 * store_locator.c — the shared store's URL for a host that hands it to the agent module
 * (`peri acp --wasm`): read with libpq's own parser (so every form `peri acp` takes, with
 * the PG* variables host_env.c already folded in, means the same thing), the password
 * taken out of it (the userinfo, password=, else the password file as libpq reads it),
 * the password file's name dropped, and the destination the network grant needs.
 *
 * Invariants: the locator handed on holds no secret; the password is returned to the
 * caller only (who wipes it). A password file that others may read is ignored, as libpq
 * does, with a warning.
 */
#include "cli/store_locator.h"

#include <libpq-fe.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* The value of keyword in opts ("" → NULL). */
static const char *opt(const PQconninfoOption *opts, const char *keyword) {
    for (const PQconninfoOption *o = opts; o && o->keyword; o++)
        if (!strcmp(o->keyword, keyword)) return o->val && *o->val ? o->val : NULL;
    return NULL;
}

/* One field of a .pgpass line (\ escapes : and \); *p moves past its ':'. */
static bool field_matches(const char **p, const char *want) {
    const char *s = *p;
    bool star = s[0] == '*' && (s[1] == ':' || s[1] == '\0');
    bool eq = want != NULL;
    const char *w = want ? want : "";
    while (*s && *s != ':') {
        char c = *s;
        if (c == '\\' && s[1]) c = *++s;
        if (eq && *w == c)
            w++;
        else
            eq = false;
        s++;
    }
    if (*w) eq = false;
    *p = *s == ':' ? s + 1 : s;
    return star || eq;
}

/* The password of host:port:db:user in a libpq password file, malloc'd; NULL if none. */
static char *pgpass_lookup(const char *path, const char *host, const char *port, const char *db,
                           const char *user, void (*warn)(const char *msg)) {
    struct stat st;
    if (stat(path, &st) != 0 || !S_ISREG(st.st_mode)) return NULL;
    if (st.st_mode & (S_IRWXG | S_IRWXO)) {
        char m[700];
        snprintf(m, sizeof m,
                 "password file \"%.500s\" has group or world access; permissions should be "
                 "u=rw (0600) or less: it is not used",
                 path);
        if (warn) warn(m);
        return NULL;
    }
    FILE *f = fopen(path, "r");
    if (!f) return NULL;
    char line[1024];
    char *found = NULL;
    while (!found && fgets(line, sizeof line, f)) {
        line[strcspn(line, "\r\n")] = '\0';
        if (line[0] == '#' || !line[0]) continue;
        const char *p = line;
        if (!field_matches(&p, host) || !field_matches(&p, port) || !field_matches(&p, db) ||
            !field_matches(&p, user) || !*p)
            continue;
        size_t n = strlen(p);
        if (!(found = malloc(n + 1))) break;
        size_t k = 0;
        for (size_t i = 0; i < n; i++) /* the password field: \ escapes too */
            found[k++] = p[i] == '\\' && p[i + 1] ? p[++i] : p[i];
        found[k] = '\0';
    }
    memset(line, 0, sizeof line);
    fclose(f);
    return found;
}

/* Drops every name=... parameter of url's query, in place. */
static void drop_param(char *url, const char *name) {
    size_t nl = strlen(name);
    char *q = strchr(url, '?');
    while (q) {
        char *param = q + 1;
        char *next = strchr(param, '&');
        if (!strncmp(param, name, nl) && param[nl] == '=') {
            if (!next) {
                q[0] = '\0'; /* the last parameter, with its separator */
                break;
            }
            memmove(param, next + 1, strlen(next + 1) + 1);
            continue;
        }
        q = next;
    }
}

/* Drops the password of the userinfo (user:password@), in place. */
static void drop_userinfo_password(char *url) {
    char *p = strstr(url, "://");
    if (!p) return;
    p += 3;
    size_t auth = strcspn(p, "/?#");
    char *at = memchr(p, '@', auth);
    char *colon = at ? memchr(p, ':', (size_t)(at - p)) : NULL;
    if (colon) memmove(colon, at, strlen(at) + 1);
}

int peri_store_locator(const char *url, const char *home, peri_store_locator_t *out,
                       void (*warn)(const char *msg), char *err, size_t errlen) {
    memset(out, 0, sizeof *out);
    char *perr = NULL;
    PQconninfoOption *opts = PQconninfoParse(url, &perr);
    if (!opts) {
        snprintf(err, errlen, "the store URL cannot be read: %s", perr ? perr : "out of memory");
        PQfreemem(perr);
        return -1;
    }
    const char *host = opt(opts, "hostaddr") ? opt(opts, "hostaddr") : opt(opts, "host");
    const char *port = opt(opts, "port") ? opt(opts, "port") : "5432";
    const char *user = opt(opts, "user");
    const char *db = opt(opts, "dbname") ? opt(opts, "dbname") : user;
    int rc = -1;
    if (!(out->locator = strdup(url))) goto oom;
    drop_userinfo_password(out->locator);
    drop_param(out->locator, "password");
    drop_param(out->locator, "passfile");
    if (host && host[0] != '/' && !strchr(host, ',')) {
        snprintf(out->host, sizeof out->host, "%s", host);
        out->port = (unsigned)strtoul(port, NULL, 10);
    }
    if (opt(opts, "password")) {
        if (!(out->password = strdup(opt(opts, "password")))) goto oom;
    } else {
        char def[4096];
        const char *pf = opt(opts, "passfile");
        if (!pf && home && *home) {
            snprintf(def, sizeof def, "%s/.pgpass", home);
            pf = def;
        }
        /* libpq looks a socket host up as "localhost" */
        const char *as = !host || host[0] == '/' ? "localhost" : host;
        if (pf) out->password = pgpass_lookup(pf, as, port, db, user, warn);
    }
    rc = 0;
    goto done;
oom:
    snprintf(err, errlen, "out of memory");
    peri_store_locator_clear(out);
done:
    for (PQconninfoOption *o = opts; o->keyword; o++) /* the password in libpq's copy */
        if (o->val && !strcmp(o->keyword, "password")) memset(o->val, 0, strlen(o->val));
    PQconninfoFree(opts);
    return rc;
}

void peri_store_locator_clear(peri_store_locator_t *l) {
    if (l->password) {
        memset(l->password, 0, strlen(l->password));
        free(l->password);
    }
    free(l->locator);
    memset(l, 0, sizeof *l);
}
