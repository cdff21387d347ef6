/*
 * trust.c — project trust: which parts of a project's own configuration may take effect.
 *
 * A project's `.peri/settings.json` can name MCP servers (programs the host starts),
 * session hooks (commands run at hook points) and permission allow rules (tools that
 * then run without asking). All came with the
 * repository, or were written by code that ran in it, so none takes effect until the
 * user trusted that exact content. This file owns:
 *   - the trust material: a canonical JSON text (sorted keys, compact) of every
 *     trust-relevant value of the project file ("mcpServers" whole: commands, arguments,
 *     environment, URLs, headers; "hooks" whole; "permissions.allow"), read once through the
 * confined reader, and its SHA-256 bound to the project's real path;
 *   - the trust store, `<home>/.peri/trust.json`: user state, never inside a project. It
 *     maps a project's real path to the digest the user trusted and to the tools the user
 *     allowed "always in this project". It is written through a temporary file, fsync and
 *     rename, mode 0600, each read-modify-write under an exclusive flock of
 *     `<home>/.peri` (no lost or torn updates between sessions or processes); a missing,
 *     oversized or corrupt store trusts nothing.
 *
 * Invariants: the digest and the allow rules a caller acts on come from ONE read of the
 * project file (no check-then-read race); a changed file has another digest and so is
 * untrusted again; nothing here writes inside a project; no global state.
 */
#include "peri/agent.h"

#include <errno.h>
#include <fcntl.h>
#include "peri/json.h"
#include <limits.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#define PROJECT_FILE  ".peri/settings.json"
#define PROJECT_MAX   (1u << 20)
#define STORE_MAX     (4u << 20)
#define STORE_REL     ".peri/trust.json"
#define STORE_DIR_REL ".peri"

void pag_project_config_free(pag_project_config *pc) {
    if (!pc) return;
    free(pc->material);
    free(pc->servers_json);
    free(pc->hooks_json);
    pb_strv_free(pc->allow, pc->nallow);
    free(pc->real_path);
    memset(pc, 0, sizeof *pc);
}

static void hex(const unsigned char *d, size_t n, char *out) {
    static const char x[] = "0123456789abcdef";
    for (size_t i = 0; i < n; i++) {
        out[2 * i] = x[d[i] >> 4];
        out[2 * i + 1] = x[d[i] & 15];
    }
    out[2 * n] = '\0';
}

static int digest_of(const char *path, const char *material, char out[PAG_TRUST_DIGEST_HEX]) {
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int mdl = 0;
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    int ok = ctx && EVP_DigestInit_ex(ctx, EVP_sha256(), NULL) == 1 &&
             EVP_DigestUpdate(ctx, "peri-project-trust-v1\n", 22) == 1 &&
             EVP_DigestUpdate(ctx, path, strlen(path) + 1) == 1 &&
             EVP_DigestUpdate(ctx, material, strlen(material)) == 1 &&
             EVP_DigestFinal_ex(ctx, md, &mdl) == 1 && mdl == 32;
    EVP_MD_CTX_free(ctx);
    if (!ok) return -1;
    hex(md, 32, out);
    return 0;
}

int pag_project_config_read(const char *cwd, pag_project_config *out) {
    memset(out, 0, sizeof *out);
    if (!cwd || cwd[0] != '/') return -1;
    char real[PATH_MAX];
    if (!realpath(cwd, real)) return -1;
    size_t len = 0;
    char *txt = pag_read_beneath(real, PROJECT_FILE, PROJECT_MAX, &len);
    if (!txt) return 0; /* absent or refused: nothing to trust */
    pj_error_t je;
    pj_t *root = pj_loadb(txt, len, 0, &je);
    free(txt);
    if (!pj_is_object(root)) {
        pj_decref(root);
        out->broken = true;
        return 0;
    }
    pj_t *servers = pj_object_get(root, "mcpServers");
    pj_t *allow = pj_object_get(pj_object_get(root, "permissions"), "allow");
    pj_t *hooks = pj_object_get(root, "hooks"); /* commands, like servers */
    pj_t *mat = pj_object();
    int rc = mat ? 0 : -1;
    if (rc == 0 && servers) rc = pj_object_set(mat, "mcpServers", servers);
    if (rc == 0 && allow) rc = pj_object_set(mat, "allow", allow);
    if (rc == 0 && hooks) rc = pj_object_set(mat, "hooks", hooks);
    if (rc == 0 && pj_is_object(hooks) && pj_object_size(hooks) > 0 &&
        !(out->hooks_json = pj_dumps(hooks, PJ_COMPACT)))
        rc = -1;
    if (rc == 0 && pj_object_size(mat) > 0) {
        out->material = pj_dumps(mat, PJ_SORT_KEYS | PJ_COMPACT | PJ_ENSURE_ASCII);
        out->real_path = strdup(real);
        if (!out->material || !out->real_path || digest_of(real, out->material, out->digest))
            rc = -1;
    }
    if (rc == 0 && pj_is_object(servers) && pj_object_size(servers) > 0) {
        pj_t *wrap = pj_pack("{s:O}", "mcpServers", servers);
        out->servers_json = wrap ? pj_dumps(wrap, PJ_COMPACT) : NULL;
        pj_decref(wrap);
        if (!out->servers_json) rc = -1;
    }
    if (rc == 0 && pj_is_array(allow)) {
        size_t n = pj_array_size(allow), i;
        pj_t *v;
        out->allow = calloc(n ? n : 1, sizeof *out->allow);
        if (!out->allow) rc = -1;
        pj_array_foreach(allow, i, v) {
            if (rc || !pj_is_string(v)) continue;
            if (!(out->allow[out->nallow] = strdup(pj_string_value(v))))
                rc = -1;
            else
                out->nallow++;
        }
    }
    pj_decref(mat);
    pj_decref(root);
    if (rc != 0) pag_project_config_free(out);
    return rc;
}

bool pag_project_config_any(const pag_project_config *pc) {
    return pc && pc->material != NULL;
}

/* ---------------------------------------------------------------- the store */

/* The store's document: {"version":1,"projects":{path:{"digest":..,"allow":[..]}}}.
 * Never NULL unless out of memory: a missing or corrupt file gives an empty store. */
static pj_t *store_load(const char *home, bool *corrupt) {
    if (corrupt) *corrupt = false;
    char *txt = NULL;
    size_t len = 0;
    if (home && home[0] == '/') txt = pag_read_beneath(home, STORE_REL, STORE_MAX, &len);
    pj_t *doc = txt ? pj_loadb(txt, len, 0, NULL) : NULL;
    free(txt);
    if (txt && !pj_is_object(pj_object_get(doc, "projects"))) {
        if (corrupt) *corrupt = true;
        pj_decref(doc);
        doc = NULL;
    }
    if (!doc) doc = pj_pack("{s:i, s:{}}", "version", 1, "projects");
    return doc;
}

/* Opens <home>/.peri (created 0700 when missing, never through a symlink) and takes the
 * store's lock: an exclusive flock on that directory, held by the caller for one whole
 * read-modify-write so that concurrent writers (sessions of one agent, `peri trust` in a
 * terminal) neither lose each other's decisions nor share a temporary file. flock locks
 * of separate opens conflict within one process too. The wait is bounded (the holders
 * are the user's own Peri processes). Returns the locked directory (close to release) or
 * -1 with err. */
#define LOCK_TRIES    2000
#define LOCK_PAUSE_US 5000
static int store_lock(const char *home, char *err, size_t errlen) {
    if (!home || home[0] != '/') {
        snprintf(err, errlen, "no home directory to keep trust decisions in");
        return -1;
    }
    int dfd = -1, hfd = open(home, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (hfd >= 0 && (mkdirat(hfd, STORE_DIR_REL, 0700) == 0 || errno == EEXIST))
        dfd = openat(hfd, STORE_DIR_REL, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    int saved = errno;
    if (hfd >= 0) close(hfd);
    if (dfd < 0) {
        snprintf(err, errlen, "cannot open %s/%s: %s", home, STORE_DIR_REL, strerror(saved));
        return -1;
    }
    for (int i = 0; i < LOCK_TRIES; i++) {
        if (flock(dfd, LOCK_EX | LOCK_NB) == 0) return dfd;
        if (errno != EWOULDBLOCK && errno != EINTR) break;
        usleep(LOCK_PAUSE_US);
    }
    snprintf(err, errlen, "cannot lock %s/%s: %s", home, STORE_DIR_REL,
             errno == EWOULDBLOCK ? "another Peri process holds it" : strerror(errno));
    close(dfd);
    return -1;
}

/* Replaces the store in the locked directory dfd (store_lock) by doc: a temporary file
 * (0600), fsync, rename, fsync of the directory. */
static int store_save(int dfd, const char *home, pj_t *doc, char *err, size_t errlen) {
    char *txt = pj_dumps(doc, PJ_INDENT(2) | PJ_SORT_KEYS);
    if (!txt) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    int rc = -1, fd = -1;
    char tmp[64];
    /* one writer at a time holds the lock, so one name per process is enough; O_EXCL
     * after an unlink of a leftover from a crashed run of this pid */
    snprintf(tmp, sizeof tmp, ".trust.json.%ld.tmp", (long)getpid());
    unlinkat(dfd, tmp, 0);
    fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0) goto fail;
    if (fchmod(fd, 0600) != 0) goto fail_unlink;
    size_t n = strlen(txt), off = 0;
    while (off < n) {
        ssize_t w = write(fd, txt + off, n - off);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) goto fail_unlink;
        off += (size_t)w;
    }
    if (write(fd, "\n", 1) != 1 || fsync(fd) != 0) goto fail_unlink;
    if (close(fd) != 0) {
        fd = -1;
        goto fail_unlink;
    }
    fd = -1;
    if (renameat(dfd, tmp, dfd, "trust.json") != 0) goto fail_unlink;
    fsync(dfd);
    rc = 0;
    goto done;
fail_unlink:
    unlinkat(dfd, tmp, 0);
fail:
    snprintf(err, errlen, "cannot write %s/%s: %s", home, STORE_REL, strerror(errno));
done:
    if (fd >= 0) close(fd);
    free(txt);
    return rc;
}

static pj_t *project_entry(pj_t *doc, const char *real, bool create) {
    pj_t *projects = pj_object_get(doc, "projects");
    pj_t *e = pj_object_get(projects, real);
    if (!pj_is_object(e) && create) {
        e = pj_object();
        if (!e || pj_object_set_new(projects, real, e) != 0) return NULL;
    }
    return pj_is_object(e) ? e : NULL;
}

bool pag_trust_is_trusted(const char *home, const pag_project_config *pc) {
    if (!pag_project_config_any(pc)) return false;
    pj_t *doc = store_load(home, NULL);
    pj_t *e = project_entry(doc, pc->real_path, false);
    const char *d = pj_string_value(pj_object_get(e, "digest"));
    bool ok = d && strcmp(d, pc->digest) == 0;
    pj_decref(doc);
    return ok;
}

/* One change of the store: under the lock, load, apply edit (0, or -1 when out of
 * memory), save. 0, or -1 with err. */
static int store_edit(const char *home, int (*edit)(pj_t *doc, const void *arg), const void *arg,
                      char *err, size_t errlen) {
    int dfd = store_lock(home, err, errlen);
    if (dfd < 0) return -1;
    pj_t *doc = store_load(home, NULL);
    int rc = -1;
    if (!doc || edit(doc, arg) != 0)
        snprintf(err, errlen, "out of memory");
    else
        rc = store_save(dfd, home, doc, err, errlen);
    pj_decref(doc);
    close(dfd);
    return rc;
}

static int edit_record(pj_t *doc, const void *arg) {
    const pag_project_config *pc = arg;
    pj_t *e = project_entry(doc, pc->real_path, true);
    return e && pj_object_set_new(e, "digest", pj_string(pc->digest)) == 0 ? 0 : -1;
}

int pag_trust_record(const char *home, const pag_project_config *pc, char *err, size_t errlen) {
    if (!pag_project_config_any(pc)) {
        snprintf(err, errlen, "the project has no configuration to trust");
        return -1;
    }
    return store_edit(home, edit_record, pc, err, errlen);
}

static int edit_revoke(pj_t *doc, const void *real) {
    pj_object_del(pj_object_get(doc, "projects"), real);
    return 0;
}

int pag_trust_revoke(const char *home, const char *cwd, char *err, size_t errlen) {
    char real[PATH_MAX];
    if (!cwd || !realpath(cwd, real)) {
        snprintf(err, errlen, "%s: %s", cwd ? cwd : "(null)", strerror(errno));
        return -1;
    }
    return store_edit(home, edit_revoke, real, err, errlen);
}

char *pag_trust_list(const char *home) {
    bool corrupt;
    pj_t *doc = store_load(home, &corrupt);
    char *txt = doc ? pj_dumps(pj_object_get(doc, "projects"), PJ_INDENT(2) | PJ_SORT_KEYS) : NULL;
    pj_decref(doc);
    return txt;
}

/* The project's real path, or false. */
static bool real_of(const char *cwd, char real[PATH_MAX]) {
    return cwd && cwd[0] == '/' && realpath(cwd, real) != NULL;
}

bool pag_trust_user_allows(const char *home, const char *cwd, const char *tool) {
    char real[PATH_MAX];
    if (!tool || !real_of(cwd, real)) return false;
    pj_t *doc = store_load(home, NULL);
    pj_t *allow = pj_object_get(project_entry(doc, real, false), "allow");
    bool ok = false;
    size_t i;
    pj_t *v;
    pj_array_foreach(allow, i, v) {
        if (pj_is_string(v) && !strcmp(pj_string_value(v), tool)) ok = true;
    }
    pj_decref(doc);
    return ok;
}

typedef struct allow_arg {
    const char *real, *tool;
} allow_arg;

static int edit_allow_add(pj_t *doc, const void *arg) {
    const allow_arg *aa = arg;
    pj_t *e = project_entry(doc, aa->real, true);
    pj_t *allow = pj_object_get(e, "allow");
    if (e && !pj_is_array(allow)) {
        allow = pj_array();
        if (allow && pj_object_set_new(e, "allow", allow) != 0) allow = NULL;
    }
    if (!allow) return -1;
    size_t i;
    pj_t *v;
    pj_array_foreach(allow, i, v) {
        if (pj_is_string(v) && !strcmp(pj_string_value(v), aa->tool)) return 0;
    }
    return pj_array_append_new(allow, pj_string(aa->tool)) == 0 ? 0 : -1;
}

int pag_trust_user_allow_add(const char *home, const char *cwd, const char *tool, char *err,
                             size_t errlen) {
    char real[PATH_MAX];
    if (!tool || !real_of(cwd, real)) {
        snprintf(err, errlen, "%s: not a directory", cwd ? cwd : "(null)");
        return -1;
    }
    allow_arg aa = {.real = real, .tool = tool};
    return store_edit(home, edit_allow_add, &aa, err, errlen);
}

bool pag_project_allows(const char *home, const char *cwd, const char *tool_name) {
    if (!tool_name) return false;
    /* The user's own "always in this project" answers (user state). */
    if (pag_trust_user_allows(home, cwd, tool_name)) return true;
    /* The project file's rules: only once the user trusted that exact content, and only
     * whole tool names ("*" is never honoured from a project). */
    pag_project_config pc;
    if (pag_project_config_read(cwd, &pc) != 0) return false;
    bool ok = false;
    if (pc.nallow && pag_trust_is_trusted(home, &pc))
        for (size_t i = 0; i < pc.nallow && !ok; i++)
            ok = strcmp(pc.allow[i], tool_name) == 0;
    pag_project_config_free(&pc);
    return ok;
}

/* True when path is dir or lies beneath it (both absolute, without trailing '/'). */
static bool beneath(const char *path, const char *dir) {
    size_t n = strlen(dir);
    return !strncmp(path, dir, n) && (path[n] == '\0' || path[n] == '/');
}

bool pag_cwd_refused(const char *cwd, const char *home, char *why, size_t whylen) {
    char real[PATH_MAX], rhome[PATH_MAX];
    if (!cwd || !realpath(cwd, real)) return false; /* existence is checked elsewhere */
    if (!strcmp(real, "/")) {
        snprintf(why, whylen,
                 "the session directory is \"/\": the agent's tools and sandbox would reach the "
                 "whole machine. Open a project directory instead");
        return true;
    }
    if (home && realpath(home, rhome)) {
        /* the user config dir itself or anything inside it (spelled under the home, or
         * where ~/.peri really lives when it is a symlink): the sandbox would bind the
         * user's settings (which start MCP servers without asking) and the trust store
         * read-write */
        char cfg[PATH_MAX + 8], rcfg[PATH_MAX];
        snprintf(cfg, sizeof cfg, "%s/%s", rhome, STORE_DIR_REL);
        bool resolved = realpath(cfg, rcfg) != NULL;
        if (beneath(real, cfg) || (resolved && beneath(real, rcfg))) {
            snprintf(why, whylen,
                     "the session directory %s is inside your Peri configuration directory "
                     "(%s): the agent could change your own settings and trust decisions. "
                     "Open a project directory instead",
                     real, cfg);
            return true;
        }
        /* a directory that contains where ~/.peri really lives (a symlink into a dotfiles
         * directory): its files would be the session's, reachable by a relative path */
        if (resolved && strcmp(rcfg, cfg) != 0 && beneath(rcfg, real)) {
            snprintf(why, whylen,
                     "the session directory contains %s, where your Peri configuration "
                     "directory ~/.peri really lives: the agent could change your own "
                     "settings and trust decisions. Open a project directory instead",
                     rcfg);
            return true;
        }
        size_t n = strlen(real);
        /* the home itself, or any ancestor of it (which contains ~/.peri) */
        if (!strcmp(real, rhome) ||
            (!strncmp(rhome, real, n) && (rhome[n] == '/' || real[n - 1] == '/'))) {
            snprintf(why, whylen,
                     "the session directory %s is your home directory (or contains it): the "
                     "agent could change your own settings in ~/.peri. Open a project "
                     "directory instead",
                     real);
            return true;
        }
    }
    return false;
}
