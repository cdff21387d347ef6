/*
 * path.c — workspace confinement. A requested path is resolved against the session cwd;
 * the longest existing prefix is canonicalised with realpath() (so symlinks, final or
 * intermediate, are followed to where they really lead) and must stay inside the
 * canonical cwd; the missing rest may not contain "..". Plus the file helpers the tools
 * use to read and write inside the workspace.
 */
#include "tools_int.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static bool inside(const char *root, const char *p) {
    size_t n = strlen(root);
    if (strcmp(root, "/") == 0) return p[0] == '/';
    return strncmp(p, root, n) == 0 && (p[n] == '\0' || p[n] == '/');
}

static int set_err(char *errbuf, size_t errlen, const char *fmt, const char *path,
                   const char *extra) {
    if (errbuf && errlen) snprintf(errbuf, errlen, fmt, path, extra ? extra : "");
    return -1;
}

int ptl_resolve_path(const char *cwd, const char *path, bool for_create, char **out, char *errbuf,
                     size_t errlen) {
    *out = NULL;
    if (!path || !*path) return set_err(errbuf, errlen, "empty path%s%s", "", NULL);
    if (strlen(path) >= PATH_MAX)
        return set_err(errbuf, errlen, "path too long: %.200s%s", path, NULL);
    char *root = realpath(cwd, NULL);
    if (!root)
        return set_err(errbuf, errlen, "the workspace directory is not accessible: %s%s", cwd,
                       NULL);
    char *joined = NULL, *prefix = NULL, *canon = NULL;
    int rc = -1;
    if (asprintf(&joined, "%s%s%s", path[0] == '/' ? "" : root, path[0] == '/' ? "" : "/", path) <
        0) {
        joined = NULL;
        set_err(errbuf, errlen, "out of memory%s%s", "", NULL);
        goto done;
    }
    /* drop trailing slashes (but keep "/") */
    for (size_t n = strlen(joined); n > 1 && joined[n - 1] == '/'; n--)
        joined[n - 1] = '\0';
    prefix = strdup(joined);
    if (!prefix) {
        set_err(errbuf, errlen, "out of memory%s%s", "", NULL);
        goto done;
    }
    /* walk up until a prefix exists; tail = joined + strlen(prefix) */
    size_t plen = strlen(prefix);
    for (;;) {
        canon = realpath(prefix, NULL);
        if (canon) break;
        if (errno != ENOENT && errno != ENOTDIR) {
            set_err(errbuf, errlen, "cannot resolve %s: %s", path, strerror(errno));
            goto done;
        }
        char *slash = strrchr(prefix, '/');
        if (!slash || slash == prefix) { /* nothing exists below "/" (cannot happen) */
            set_err(errbuf, errlen, "path escapes the workspace: %s%s", path, NULL);
            goto done;
        }
        *slash = '\0';
        plen = (size_t)(slash - prefix);
    }
    const char *tail = joined + plen; /* "" or "/a/b" */
    if (!inside(root, canon)) {
        set_err(errbuf, errlen, "path escapes the workspace: %s%s", path, NULL);
        goto done;
    }
    if (*tail) {
        /* ".." after a missing directory would be resolved lexically by the kernel later;
         * refuse it rather than reason about it. */
        const char *s = tail;
        while (*s) {
            while (*s == '/')
                s++;
            size_t n = strcspn(s, "/");
            if (n == 2 && s[0] == '.' && s[1] == '.') {
                set_err(errbuf, errlen, "path escapes the workspace: %s%s", path, NULL);
                goto done;
            }
            s += n;
        }
        /* the first missing component may still exist as a dangling symlink: following it
         * when creating the file could land anywhere */
        char *first = NULL;
        size_t n = strcspn(tail + 1, "/");
        struct stat st;
        if (asprintf(&first, "%s/%.*s", canon, (int)n, tail + 1) >= 0) {
            bool link = lstat(first, &st) == 0;
            free(first);
            if (link) {
                set_err(errbuf, errlen, "path escapes the workspace: %s%s", path,
                        " (dangling symlink)");
                goto done;
            }
        }
        if (!for_create) {
            set_err(errbuf, errlen, "no such file or directory: %s%s", path, NULL);
            goto done;
        }
        char *full = NULL;
        if (asprintf(&full, "%s%s", strcmp(canon, "/") == 0 ? "" : canon, tail) < 0) {
            set_err(errbuf, errlen, "out of memory%s%s", "", NULL);
            goto done;
        }
        *out = full;
    } else {
        *out = canon;
        canon = NULL;
    }
    rc = 0;
done:
    free(root);
    free(joined);
    free(prefix);
    free(canon);
    return rc;
}

char *ptl__root(const ptl_ctx *ctx) {
    return realpath(ctx->cwd, NULL);
}

char *ptl__resolve(const ptl_ctx *ctx, ptl_result *r, const char *path, bool for_create,
                   ptl_status *st) {
    char err[512], *out = NULL;
    if (ptl_resolve_path(ctx->cwd, path, for_create, &out, err, sizeof err) != 0) {
        *st = ptl__error(r, "%s", err);
        return NULL;
    }
    return out;
}

char *ptl__relative(const char *root, const char *abs) {
    size_t n = strlen(root);
    if (strcmp(abs, root) == 0) return strdup(".");
    if (strcmp(root, "/") == 0) return strdup(abs + 1);
    if (strncmp(abs, root, n) == 0 && abs[n] == '/') return strdup(abs + n + 1);
    return strdup(abs);
}

bool ptl__is_binary(const char *data, size_t len) {
    return memchr(data, '\0', len < 8192 ? len : 8192) != NULL;
}
