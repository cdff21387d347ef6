/*
 * host_env.c — the environment and ~/.peri/ mapped into the host start object.
 *
 * Owns every environment read of the agent host (the library has none): HOME for the
 * default store, settings file and machine-id file; PERI_MACHINE_ID; the provider keys
 * and PERI_* knobs as settings overrides. Everything ends up in pacp_options. The
 * settings file is checked against the schema (src/agent/settings_schema.c) before the
 * environment is applied: unknown keys are warned about on stderr, wrong types and
 * broken JSON stop the start with a message naming the field or line and column.
 */
#include "cli/host_env.h"
#include "peri/agent.h"

#include <errno.h>
#include <libpq-fe.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *env_value(const char *(*ge)(const char *), const char *name) {
    const char *v = ge(name);
    return v && *v ? v : NULL;
}

static const char *plain_getenv(const char *name) {
    return getenv(name);
}

/* doc[k1][k2] = v (objects created as needed). */
static int set_path(pj_t *doc, const char *k1, const char *k2, pj_t *v) {
    if (!v) return -1;
    if (!k2) return pj_object_set_new(doc, k1, v);
    pj_t *o = pj_object_get(doc, k1);
    if (!pj_is_object(o)) {
        o = pj_object();
        if (!o || pj_object_set_new(doc, k1, o)) {
            pj_decref(v);
            return -1;
        }
    }
    return pj_object_set_new(o, k2, v);
}

int peri_settings_apply_env(pj_t *doc, const char *(*getenv_fn)(const char *)) {
    const char *(*ge)(const char *) = getenv_fn ? getenv_fn : plain_getenv;
    static const struct {
        const char *env, *provider, *key;
    } prov[] = {{"OPENAI_API_KEY", "openai", "apiKey"},
                {"OPENAI_BASE_URL", "openai", "baseUrl"},
                {"ANTHROPIC_API_KEY", "anthropic", "apiKey"},
                {"ANTHROPIC_BASE_URL", "anthropic", "baseUrl"}};
    for (size_t i = 0; i < sizeof prov / sizeof prov[0]; i++) {
        const char *v = env_value(ge, prov[i].env);
        if (!v) continue;
        pj_t *providers = pj_object_get(doc, "providers");
        if (!pj_is_object(providers)) {
            providers = pj_object();
            if (!providers || pj_object_set_new(doc, "providers", providers)) return -1;
        }
        if (set_path(providers, prov[i].provider, prov[i].key, pj_string(v))) return -1;
    }
    const char *v;
    if ((v = env_value(ge, "PERI_MODEL")) && set_path(doc, "model", NULL, pj_string(v))) return -1;
    if ((v = env_value(ge, "PERI_CONTEXT_BUDGET")) && atoll(v) > 0 &&
        set_path(doc, "contextBudget", NULL, pj_integer(atoll(v))))
        return -1;
    if ((v = env_value(ge, "PERI_CLOSE_GRACE_MS")) && atol(v) >= 0 &&
        set_path(doc, "closeGraceMs", NULL, pj_integer(atol(v))))
        return -1;
    return 0;
}

/* The first line of fd 0, byte by byte (the ACP frames that follow stay unread). */
static char *read_stdin_line(void) {
    size_t len = 0, cap = 4096;
    char *buf = malloc(cap);
    while (buf) {
        char c;
        ssize_t r = read(0, &c, 1);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0 || c == '\n') break;
        if (len + 2 > cap) {
            char *nb = len < (64u << 20) ? realloc(buf, cap *= 2) : NULL;
            if (!nb) {
                free(buf);
                return NULL;
            }
            buf = nb;
        }
        buf[len++] = c;
    }
    if (buf) buf[len] = '\0';
    return buf;
}

pj_t *peri_settings_read(const char *path, bool optional, char *err, size_t errlen) {
    pj_error_t je;
    pj_t *doc;
    if (!strcmp(path, "-")) {
        char *line = read_stdin_line();
        if (!line) {
            snprintf(err, errlen, "cannot read the settings line from stdin");
            return NULL;
        }
        doc = pj_loads(line, 0, &je);
        free(line);
    } else {
        FILE *f = fopen(path, "rb");
        if (!f) {
            if (optional && errno == ENOENT) return pj_object();
            snprintf(err, errlen, "%s: %s", path, strerror(errno));
            return NULL;
        }
        doc = pj_loadf(f, 0, &je);
        fclose(f);
    }
    const char *name = strcmp(path, "-") ? path : "settings from stdin";
    if (!doc)
        snprintf(err, errlen,
                 "%s:%d:%d: not valid JSON: %s (fix the file, or move it away to start "
                 "without it)",
                 name, je.line, je.column, je.text);
    else if (!pj_is_object(doc))
        snprintf(err, errlen, "%s: settings must be an object ({...})", name);
    if (!pj_is_object(doc)) {
        pj_decref(doc);
        return NULL;
    }
    return doc;
}

typedef struct settings_report {
    const char *name;
    FILE *to;
} settings_report;

static void print_finding(void *ud, bool error, const char *message) {
    settings_report *r = ud;
    fprintf(r->to, "peri: %s: %s%s\n", r->name, error ? "" : "warning: ", message);
}

int peri_settings_validate(const pj_t *doc, const char *name, FILE *to, char *err, size_t errlen) {
    settings_report r = {name, to};
    size_t n = pag_settings_check(doc, print_finding, &r);
    if (n) {
        snprintf(err, errlen, "%s: %zu setting%s to fix (above)", name, n, n == 1 ? "" : "s");
        return -1;
    }
    return 0;
}

/* --- the standard libpq environment -> the PostgreSQL store URL ---- */

static int url_append(char **url, size_t *len, size_t *cap, const char *s, bool encode) {
    for (; *s; s++) {
        char buf[4];
        size_t n = 1;
        unsigned char c = (unsigned char)*s;
        if (encode && !((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                        (c >= '0' && c <= '9') || c == '-' || c == '.' || c == '_' || c == '~')) {
            snprintf(buf, sizeof buf, "%%%02X", c);
            n = 3;
        } else {
            buf[0] = (char)c;
        }
        if (*len + n + 1 > *cap) {
            size_t nc = (*cap + n + 1) * 2;
            char *g = realloc(*url, nc);
            if (!g) return -1;
            *url = g;
            *cap = nc;
        }
        memcpy(*url + *len, buf, n);
        *len += n;
        (*url)[*len] = '\0';
    }
    return 0;
}

char *peri_store_url_apply_env(const char *url, const char *(*getenv_fn)(const char *)) {
    static const struct {
        const char *env, *key;
    } map[] = {{"PGHOST", "host"},
               {"PGHOSTADDR", "hostaddr"},
               {"PGPORT", "port"},
               {"PGUSER", "user"},
               {"PGPASSWORD", "password"},
               {"PGPASSFILE", "passfile"},
               {"PGDATABASE", "dbname"},
               {"PGSSLMODE", "sslmode"},
               {"PGSSLROOTCERT", "sslrootcert"},
               {"PGCONNECT_TIMEOUT", "connect_timeout"},
               {"PGAPPNAME", "application_name"},
               {"PGOPTIONS", "options"}};
    const char *(*ge)(const char *) = getenv_fn ? getenv_fn : plain_getenv;
    char *perr = NULL;
    PQconninfoOption *opts = PQconninfoParse(url, &perr);
    PQfreemem(perr);
    size_t len = 0, cap = strlen(url) + 64;
    char *out = malloc(cap);
    if (!out) goto fail;
    out[0] = '\0';
    if (url_append(&out, &len, &cap, url, false)) goto fail;
    if (!opts) return out; /* not a valid URL: the store reports it */
    bool has_query = strchr(url, '?') != NULL;
    for (size_t i = 0; i < sizeof map / sizeof map[0]; i++) {
        const char *v = env_value(ge, map[i].env);
        if (!v) continue;
        bool given = false;
        for (PQconninfoOption *o = opts; o->keyword; o++)
            if (!strcmp(o->keyword, map[i].key)) given = o->val && *o->val;
        if (given) continue; /* the URL wins over the environment */
        if (url_append(&out, &len, &cap, has_query ? "&" : "?", false) ||
            url_append(&out, &len, &cap, map[i].key, false) ||
            url_append(&out, &len, &cap, "=", false) || url_append(&out, &len, &cap, v, true))
            goto fail;
        has_query = true;
    }
    PQconninfoFree(opts);
    return out;
fail:
    PQconninfoFree(opts);
    free(out);
    return NULL;
}

bool peri_host_arg(int argc, char **argv, int *i, peri_host_args *a) {
    if (*i + 1 >= argc) return false;
    if (!strcmp(argv[*i], "--cwd"))
        a->cwd = argv[++*i];
    else if (!strcmp(argv[*i], "--db"))
        a->db = argv[++*i];
    else
        return false;
    return true;
}

int peri_host_start_init(peri_host_start *h, const peri_host_args *a, char *err, size_t errlen) {
    memset(h, 0, sizeof *h);
    const char *home = env_value(plain_getenv, "HOME");
    /* cwd: the command line's, relative to the process cwd; the host creates it. */
    const char *cwd = a->cwd ? a->cwd : ".";
    if (cwd[0] == '/') {
        snprintf(h->cwd, sizeof h->cwd, "%s", cwd);
    } else {
        char here[PATH_MAX];
        if (!getcwd(here, sizeof here)) {
            snprintf(err, errlen, "cannot read the current directory: %s", strerror(errno));
            return -1;
        }
        if (!strcmp(cwd, "."))
            snprintf(h->cwd, sizeof h->cwd, "%s", here);
        else if (snprintf(h->cwd, sizeof h->cwd, "%s/%s", here, cwd) >= (int)sizeof h->cwd) {
            snprintf(err, errlen, "cwd too long");
            return -1;
        }
    }
    /* settings: --settings FILE|-, else ~/.peri/settings.json; then the environment */
    /* Both are checked against the schema (unknown keys warned about, wrong types and
     * broken JSON refused, naming the field or the line and column). */
    char path[PATH_MAX];
    if (a->settings) {
        snprintf(path, sizeof path, "%s",
                 strcmp(a->settings, "-") ? a->settings : "settings from stdin");
        h->settings = peri_settings_read(a->settings, false, err, errlen);
    } else if (home) {
        snprintf(path, sizeof path, "%s/.peri/settings.json", home);
        h->settings = peri_settings_read(path, true, err, errlen);
    } else {
        path[0] = 0;
        h->settings = pj_object();
    }
    if (!h->settings) goto fail;
    if (path[0] && peri_settings_validate(h->settings, path, stderr, err, errlen) != 0) goto fail;
    if (peri_settings_apply_env(h->settings, NULL) != 0) {
        snprintf(err, errlen, "out of memory reading the environment");
        goto fail;
    }
    /* store: --store/--db, else $PERI_STORE, else the settings' "storage" string (issue
     * 15), else ~/.peri/peri.db. A postgresql:// URL gets the standard libpq environment
     * (PGHOST, PGPASSWORD, ...) for what it leaves out: the library itself reads none. */
    const char *loc = a->db ? a->db : env_value(plain_getenv, "PERI_STORE");
    if (!loc && pj_is_string(pj_object_get(h->settings, "storage")) &&
        pj_string_length(pj_object_get(h->settings, "storage")) > 0)
        loc = pj_string_value(pj_object_get(h->settings, "storage"));
    if (loc && pst_locator_is_remote(loc))
        h->db = peri_store_url_apply_env(loc, NULL);
    else
        h->db = loc ? strdup(loc) : pst_default_db_path(home);
    if (!h->db) {
        snprintf(err, errlen, "no database path: set HOME or pass --db");
        goto fail;
    }
    /* machine identity: --machine-id, PERI_MACHINE_ID, ~/.peri/machine-id */
    pst_error pe;
    const char *mid = a->machine_id ? a->machine_id : env_value(plain_getenv, "PERI_MACHINE_ID");
    if (pst_machine_id_resolve(home, mid, h->machine_id, &pe) != PST_OK) {
        snprintf(err, errlen, "machine id: %s", pe.message);
        goto fail;
    }
    h->opt.cwd = h->cwd;
    h->opt.settings = h->settings;
    h->opt.storage.locator = h->db;
    /* a PostgreSQL store is shared by nature (several hosts, one history) */
    h->opt.storage.shared = a->shared_store || pst_locator_is_remote(h->db);
    h->opt.machine_id = h->machine_id;
    if (home && !(h->home = strdup(home))) {
        snprintf(err, errlen, "out of memory");
        goto fail;
    }
    h->opt.home = h->home;
    return 0;
fail:
    peri_host_start_clear(h);
    return -1;
}

void peri_host_start_clear(peri_host_start *h) {
    pj_decref(h->settings);
    free(h->db);
    free(h->home);
    memset(h, 0, sizeof *h);
}
