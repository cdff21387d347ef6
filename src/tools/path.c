/*
 * path.c — ptl_resolve_path (the confinement CHECK exposed to tests and hosts) and small
 * path helpers. The check uses the same beneath-the-root resolution as the tools
 * (confine.c), so it gives the same answers; the tools themselves never re-open a
 * checked name: they work on the descriptor of one resolution.
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

static int set_err(char *errbuf, size_t errlen, const char *fmt, const char *path,
                   const char *extra) {
    if (errbuf && errlen) snprintf(errbuf, errlen, fmt, path, extra ? extra : "");
    return -1;
}

/* For a missing path: the descriptor of its longest existing prefix (beneath rootfd) and
 * the offset in rel where the missing tail starts. -errno on failure. */
static int existing_prefix(int rootfd, char *rel, size_t *tail) {
    size_t n = strlen(rel);
    for (;;) {
        while (n > 0 && rel[n - 1] == '/')
            n--;
        while (n > 0 && rel[n - 1] != '/')
            n--; /* drop the last component */
        size_t end = n;
        while (end > 0 && rel[end - 1] == '/')
            end--;
        char saved = rel[end];
        rel[end] = '\0';
        int fd = ptl__open_beneath(rootfd, end ? rel : ".", O_PATH | O_DIRECTORY, 0, 0);
        rel[end] = saved;
        if (fd >= 0) {
            *tail = n;
            return fd;
        }
        if (fd != -ENOENT || end == 0) return fd;
    }
}

int ptl_resolve_path(const char *cwd, const char *path, bool for_create, char **out, char *errbuf,
                     size_t errlen) {
    *out = NULL;
    if (!path || !*path) return set_err(errbuf, errlen, "empty path%s%s", "", NULL);
    if (strlen(path) >= PATH_MAX)
        return set_err(errbuf, errlen, "path too long: %.200s%s", path, NULL);
    char *rel = NULL;
    int rc = ptl__rel(cwd, path, &rel);
    if (rc == -EXDEV)
        return set_err(errbuf, errlen, "path escapes the workspace: %s%s", path, NULL);
    if (rc < 0) return set_err(errbuf, errlen, "cannot resolve %s: %s", path, strerror(-rc));
    int rootfd = ptl__root_fd(cwd);
    if (rootfd < 0) {
        free(rel);
        return set_err(errbuf, errlen, "the workspace directory is not accessible: %s%s", cwd,
                       NULL);
    }
    int result = -1;
    int fd = ptl__open_beneath(rootfd, rel, O_PATH, 0, 0);
    if (fd >= 0) {
        *out = ptl__fd_path(fd, cwd, rel);
        close(fd);
        result = *out ? 0 : set_err(errbuf, errlen, "out of memory%s%s", "", NULL);
    } else if (fd == -EXDEV || fd == -ELOOP) {
        set_err(errbuf, errlen, "path escapes the workspace: %s%s", path, NULL);
    } else if (fd != -ENOENT) {
        set_err(errbuf, errlen, "cannot resolve %s: %s", path, strerror(-fd));
    } else {
        size_t tail = 0;
        int pfd = existing_prefix(rootfd, rel, &tail);
        if (pfd == -EXDEV || pfd == -ELOOP) {
            set_err(errbuf, errlen, "path escapes the workspace: %s%s", path, NULL);
        } else if (pfd < 0) {
            set_err(errbuf, errlen, "cannot resolve %s: %s", path, strerror(-pfd));
        } else {
            /* the missing rest: no "..", and its first component is not a dangling link */
            bool bad = false, dangling = false;
            for (const char *s = rel + tail; *s;) {
                while (*s == '/')
                    s++;
                size_t n = strcspn(s, "/");
                if (n == 2 && s[0] == '.' && s[1] == '.') bad = true;
                s += n;
            }
            size_t first = strcspn(rel + tail, "/");
            char *c = strndup(rel + tail, first);
            struct stat st;
            if (c && fstatat(pfd, c, &st, AT_SYMLINK_NOFOLLOW) == 0) dangling = true;
            free(c);
            if (bad || dangling) {
                set_err(errbuf, errlen, "path escapes the workspace: %s%s", path,
                        dangling ? " (dangling symlink)" : NULL);
            } else if (!for_create) {
                set_err(errbuf, errlen, "no such file or directory: %s%s", path, NULL);
            } else {
                char *dir = ptl__fd_path(pfd, cwd, ".");
                if (dir &&
                    asprintf(out, "%s%s%s", strcmp(dir, "/") == 0 ? "" : dir, "/", rel + tail) < 0)
                    *out = NULL;
                free(dir);
                result = *out ? 0 : set_err(errbuf, errlen, "out of memory%s%s", "", NULL);
            }
            close(pfd);
        }
    }
    close(rootfd);
    free(rel);
    return result;
}

char *ptl__root(const ptl_ctx *ctx) {
    return realpath(ctx->cwd, NULL);
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
