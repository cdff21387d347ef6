/*
 * auth.c — model provider credentials: whether the host has a usable one, and storing
 * a key the user gave (ACP authenticate).
 *
 * A key is kept in the user's own settings, <home>/.peri/settings.json (created 0600 in a
 * 0700 directory; rewritten atomically, mode 0600), never in a project. That file is
 * the only one the library reads or writes for this, and only here: opened without
 * following links, without blocking, regular, owned by the user, at most 1 MiB.
 *
 * Invariants: the controller's settings are replaced, never changed in place: a new
 * document (the old one plus the key) is parsed into a new pag_settings and published
 * through the atomic pointer; every earlier version stays allocated until pct_free,
 * because live sessions borrow strings from the version they started with.
 */
#include "controller/ctl_impl.h"

#include <errno.h>
#include <fcntl.h>
#include "peri/json.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define PCT_KEY_MAX      512
#define PCT_SETTINGS_MAX (1u << 20)

bool pct__credentials(pct_controller *c, char *why, size_t whylen) {
    pm_config cfg;
    const char *name = NULL;
    return pag_settings_model_spec(c->settings, NULL, &cfg, &name, why, whylen) == 0;
}

bool pct_has_credentials(pct_controller *c, char *why, size_t whylen) {
    return pct__credentials(c, why, whylen);
}

/* The user's settings document (a new reference; {} when there is none), or NULL with why. */
static pj_t *read_user_settings(int dirfd, char *why, size_t whylen) {
    int fd = openat(dirfd, "settings.json", O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0 && errno == ENOENT) return pj_object();
    if (fd < 0) {
        snprintf(why, whylen, "~/.peri/settings.json cannot be opened: %s", strerror(errno));
        return NULL;
    }
    struct stat st;
    pj_t *doc = NULL;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid() ||
        st.st_size > (off_t)PCT_SETTINGS_MAX) {
        snprintf(why, whylen,
                 "~/.peri/settings.json is not a regular file of yours (at most 1 MiB): not "
                 "changed");
    } else {
        char *buf = malloc((size_t)st.st_size + 1);
        ssize_t n = buf ? read(fd, buf, (size_t)st.st_size) : -1;
        if (n >= 0) {
            buf[n] = '\0';
            doc = n ? pj_loads(buf, 0, NULL) : pj_object();
            if (!pj_is_object(doc)) {
                pj_decref(doc);
                doc = NULL;
                snprintf(why, whylen, "~/.peri/settings.json is not a JSON object: not changed");
            }
        } else {
            snprintf(why, whylen, "~/.peri/settings.json cannot be read");
        }
        free(buf);
    }
    close(fd);
    return doc;
}

/* doc.providers[provider].apiKey = key. 0, or -1 (a providers entry of another shape). */
static int set_key(pj_t *doc, const char *provider, const char *key) {
    pj_t *ps = pj_object_get(doc, "providers");
    if (!ps) {
        ps = pj_object();
        if (!ps || pj_object_set_new(doc, "providers", ps)) return -1;
    }
    if (!pj_is_object(ps)) return -1;
    pj_t *p = pj_object_get(ps, provider);
    if (!p) {
        p = pj_object();
        if (!p || pj_object_set_new(ps, provider, p)) return -1;
    }
    if (!pj_is_object(p)) return -1;
    return pj_object_set_new(p, "apiKey", pj_string(key)) ? -1 : 0;
}

/* Writes the key into <home>/.peri/settings.json. 0, or -1 with why. */
static int store_key(const char *home, const char *provider, const char *key, char *why,
                     size_t whylen) {
    char dir[4096];
    if (snprintf(dir, sizeof dir, "%s/.peri", home) >= (int)sizeof dir) {
        snprintf(why, whylen, "the home directory path is too long");
        return -1;
    }
    if (mkdir(dir, 0700) != 0 && errno != EEXIST) {
        snprintf(why, whylen, "~/.peri cannot be created: %s", strerror(errno));
        return -1;
    }
    int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    struct stat st;
    if (dfd < 0 || fstat(dfd, &st) != 0 || st.st_uid != geteuid()) {
        snprintf(why, whylen, "~/.peri is not a directory of yours");
        if (dfd >= 0) close(dfd);
        return -1;
    }
    pj_t *doc = read_user_settings(dfd, why, whylen);
    int rc = -1;
    char *txt = NULL;
    if (doc && set_key(doc, provider, key) != 0)
        snprintf(why, whylen,
                 "~/.peri/settings.json: \"providers\" has another shape: not changed");
    else if (doc)
        txt = pj_dumps(doc, PJ_INDENT(2));
    pj_decref(doc);
    char tmp[64];
    snprintf(tmp, sizeof tmp, ".settings.json.%ld.tmp", (long)getpid());
    int fd =
        txt ? openat(dfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600) : -1;
    if (txt && fd < 0) snprintf(why, whylen, "~/.peri cannot be written: %s", strerror(errno));
    if (fd >= 0) {
        size_t len = strlen(txt), off = 0;
        while (off < len) {
            ssize_t w = write(fd, txt + off, len - off);
            if (w <= 0) break;
            off += (size_t)w;
        }
        bool ok = off == len && fchmod(fd, 0600) == 0 && fsync(fd) == 0;
        close(fd);
        if (ok && renameat(dfd, tmp, dfd, "settings.json") == 0) {
            rc = 0;
        } else {
            unlinkat(dfd, tmp, 0);
            snprintf(why, whylen, "~/.peri/settings.json could not be replaced");
        }
    }
    free(txt);
    close(dfd);
    return rc;
}

/* Checks provider and key. PCT_OK, or PCT_BAD_ARG with err. */
static pct_status check_key(const char *provider, const char *key, pct_error *err) {
    if (!provider || (strcmp(provider, "openai") != 0 && strcmp(provider, "anthropic") != 0))
        return pct__fail(err, PCT_BAD_ARG, "provider must be openai or anthropic");
    size_t n = key ? strlen(key) : 0;
    if (n == 0 || n > PCT_KEY_MAX)
        return pct__fail(err, PCT_BAD_ARG, "the API key must be 1 to 512 bytes");
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)key[i] <= 0x20 || (unsigned char)key[i] >= 0x7f)
            return pct__fail(err, PCT_BAD_ARG,
                             "the API key must be printable ASCII without spaces");
    return PCT_OK;
}

pct_status pct_store_api_key(const char *home, const char *provider, const char *key,
                             pct_error *err) {
    if (check_key(provider, key, err) != PCT_OK) return PCT_BAD_ARG;
    if (!home || home[0] != '/')
        return pct__fail(err, PCT_FAILED, "no user home to keep the key in");
    char why[300];
    if (store_key(home, provider, key, why, sizeof why) != 0)
        return pct__fail(err, PCT_FAILED, why);
    return PCT_OK;
}

pct_status pct_authenticate(pct_controller *c, const char *provider, const char *key,
                            pct_error *err) {
    if (check_key(provider, key, err) != PCT_OK) return PCT_BAD_ARG;
    pthread_mutex_lock(&c->auth_mu); /* one authenticate at a time: file and settings */
    pct_status rc = pct_store_api_key(c->home, provider, key, err);
    if (rc == PCT_OK) {
        /* the host's settings, with the key: a new version, published atomically */
        const pag_settings *cur = c->settings;
        pj_t *doc = cur->doc ? pj_deep_copy(cur->doc) : pj_object();
        pag_settings *ns = calloc(1, sizeof *ns);
        pct_old_settings *keep = calloc(1, sizeof *keep);
        char serr[300] = "";
        if (!doc || !ns || !keep || set_key(doc, provider, key) != 0 ||
            pag_settings_from_doc(ns, doc, serr, sizeof serr) != 0) {
            free(ns);
            free(keep);
            rc = pct__fail(err, PCT_FAILED, "the key was stored but could not be applied: restart");
        } else {
            keep->s = ns;
            keep->next = c->old_settings;
            c->old_settings = keep;
            c->settings = ns;
        }
        pj_decref(doc);
    }
    pthread_mutex_unlock(&c->auth_mu);
    return rc;
}
