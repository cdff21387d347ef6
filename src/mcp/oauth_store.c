/*
 * oauth_store.c — the user's MCP OAuth tokens on disk: one JSON file per server in the
 * directory the caller names (~/.peri/oauth), named by the SHA-256 of the server's
 * canonical URL, so a token is found only for exactly that resource.
 *
 * Invariants: the directory is 0700 and the files 0600, both owned by the user; a
 * symlink or a foreign-owned entry is never read or written through; a file is replaced
 * atomically (written beside it, then renamed), so a crash leaves the old or the new one.
 */
#include "mcp/oauth_int.h"

#include <errno.h>
#include <fcntl.h>
#include <openssl/evp.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The token's strings as stored, in the file's order: the one list that clear, load and
 * save walk (expires_at, the one number, is written after them). */
static const struct {
    const char *key;
    size_t off;
} token_strs[] = {
    {"resource", offsetof(pmcp__oa_token, resource)},
    {"issuer", offsetof(pmcp__oa_token, issuer)},
    {"token_endpoint", offsetof(pmcp__oa_token, token_endpoint)},
    {"client_id", offsetof(pmcp__oa_token, client_id)},
    {"client_secret", offsetof(pmcp__oa_token, client_secret)},
    {"access_token", offsetof(pmcp__oa_token, access_token)},
    {"refresh_token", offsetof(pmcp__oa_token, refresh_token)},
};
#define NTOKEN_STRS (sizeof token_strs / sizeof token_strs[0])

static char **token_str(pmcp__oa_token *t, size_t i) {
    return (char **)((char *)t + token_strs[i].off);
}

static const char *token_cstr(const pmcp__oa_token *t, size_t i) {
    return *(char *const *)((const char *)t + token_strs[i].off);
}

void pmcp__oa_token_clear(pmcp__oa_token *t) {
    for (size_t i = 0; i < NTOKEN_STRS; i++)
        free(*token_str(t, i));
    memset(t, 0, sizeof *t);
}

/* dir/<sha256(resource) hex>.json into out. 0 or -1. */
static int file_of(const char *dir, const char *resource, char *out, size_t n) {
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int ml = 0;
    if (!EVP_Digest(resource, strlen(resource), md, &ml, EVP_sha256(), NULL) || ml != 32) return -1;
    char hex[65];
    for (unsigned i = 0; i < 32; i++)
        snprintf(hex + 2 * i, 3, "%02x", md[i]);
    int k = snprintf(out, n, "%s/%s.json", dir, hex);
    return k > 0 && (size_t)k < n ? 0 : -1;
}

/* The directory exists (created 0700 if not), is a real directory of ours, 0700. */
static int dir_ok(const char *dir, bool create) {
    struct stat st;
    if (lstat(dir, &st) != 0) {
        if (!create || errno != ENOENT) return -1;
        /* the parent (~/.peri) is created too, 0700, when missing */
        char parent[4096];
        snprintf(parent, sizeof parent, "%s", dir);
        char *sl = strrchr(parent, '/');
        if (sl && sl != parent) {
            *sl = '\0';
            if (mkdir(parent, 0700) != 0 && errno != EEXIST) return -1;
        }
        if (mkdir(dir, 0700) != 0 && errno != EEXIST) return -1;
        if (lstat(dir, &st) != 0) return -1;
    }
    if (!S_ISDIR(st.st_mode) || st.st_uid != geteuid()) return -1;
    if ((st.st_mode & 077) && chmod(dir, 0700) != 0) return -1;
    return 0;
}

static char *dup_str(pj_t *o, const char *k) {
    const char *v = pj_string_value(pj_object_get(o, k));
    return v ? strdup(v) : NULL;
}

int pmcp__oa_load(const char *dir, const char *resource, pmcp__oa_token *t) {
    memset(t, 0, sizeof *t);
    char path[4200];
    if (file_of(dir, resource, path, sizeof path)) return -1;
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) return errno == ENOENT ? 1 : -1;
    struct stat st;
    if (fstat(fd, &st) || !S_ISREG(st.st_mode) || st.st_uid != geteuid() || st.st_size > 65536) {
        close(fd);
        return -1;
    }
    char buf[65537];
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0) return -1;
    pj_t *j = pj_loadb(buf, (size_t)n, 0, NULL);
    const char *r = pj_string_value(pj_object_get(j, "resource"));
    if (!r || strcmp(r, resource)) { /* another resource's file: never used */
        pj_decref(j);
        return -1;
    }
    for (size_t i = 0; i < NTOKEN_STRS; i++)
        *token_str(t, i) = dup_str(j, token_strs[i].key);
    t->expires_at = pj_integer_value(pj_object_get(j, "expires_at"));
    pj_decref(j);
    if (!t->resource || !t->issuer || !t->token_endpoint || !t->client_id || !t->access_token) {
        pmcp__oa_token_clear(t);
        return -1;
    }
    return 0;
}

static void put(pj_t *o, const char *k, const char *v) {
    if (v) pj_object_set_new(o, k, pj_string(v));
}

int pmcp__oa_save(const char *dir, const pmcp__oa_token *t) {
    if (dir_ok(dir, true)) return -1;
    char path[4200], tmp[4300];
    if (file_of(dir, t->resource, path, sizeof path)) return -1;
    snprintf(tmp, sizeof tmp, "%s.%ld.tmp", path, (long)getpid());
    pj_t *j = pj_object();
    for (size_t i = 0; i < NTOKEN_STRS; i++)
        put(j, token_strs[i].key, token_cstr(t, i));
    pj_object_set_new(j, "expires_at", pj_integer(t->expires_at));
    char *txt = j ? pj_dumps(j, PJ_INDENT(1)) : NULL;
    pj_decref(j);
    if (!txt) return -1;
    unlink(tmp);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    int rc = -1;
    if (fd >= 0) {
        size_t len = strlen(txt);
        rc = pb_write_all(fd, txt, len) == 0 && fsync(fd) == 0 ? 0 : -1;
        close(fd);
        if (rc == 0 && rename(tmp, path) != 0) rc = -1;
        if (rc != 0) unlink(tmp);
    }
    free(txt);
    return rc;
}

int pmcp__oa_remove(const char *dir, const char *resource) {
    char path[4200];
    if (file_of(dir, resource, path, sizeof path)) return -1;
    return unlink(path) == 0 || errno == ENOENT ? 0 : -1;
}
