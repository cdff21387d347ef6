/*
 * confine.c — opening files beneath a root directory without check-then-open races.
 *
 * Every file operation of the tools goes through a handle: the path is resolved ONCE,
 * relative to a descriptor of the workspace root, and the tool then works on the
 * descriptor it got (fstat, read, fdopendir, renameat in the parent's descriptor). No
 * path is checked and then opened again by name.
 *
 * Resolution rules (both implementations give the same answers):
 *   - "..", absolute symlinks and symlinks whose target leaves the root are refused
 *     (EXDEV); relative symlinks that stay beneath the root are followed (at most 40);
 *   - /proc magic links (/proc/self/fd/N, /proc/self/root...) are never followed;
 *   - every open uses O_NONBLOCK and O_NOCTTY, so a FIFO or a device never blocks the
 *     caller; callers fstat the descriptor and refuse anything but what they expect.
 *
 * Implementation: openat2(RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS) where the kernel has
 * it (Linux >= 5.6), else a walk component by component with O_NOFOLLOW, following
 * relative symlinks by hand and keeping a stack of directory descriptors for "..".
 *
 * Invariants: no global state; every descriptor opened here is O_CLOEXEC and either
 * returned to the caller (who closes it) or closed before returning.
 */
#include "tools_int.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#define MAX_LINKS 40
#define MAX_DEPTH 512

static int sys_openat2(int dirfd, const char *path, int flags, mode_t mode) {
#ifdef SYS_openat2
    struct open_how how = {.flags = (unsigned long long)flags,
                           .mode = (flags & (O_CREAT | O_TMPFILE)) ? mode : 0,
                           .resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS};
    for (int tries = 0; tries < 8; tries++) {
        long fd = syscall(SYS_openat2, dirfd, path, &how, sizeof how);
        if (fd >= 0) return (int)fd;
        if (errno != EAGAIN && errno != EINTR) return -errno;
    }
    return -EAGAIN;
#else
    (void)dirfd, (void)path, (void)flags, (void)mode;
    return -ENOSYS;
#endif
}

/* Replaces the component [c, c+n) of *buf with target (a symlink's text); the rest of the
 * path follows it. Returns the new buffer (old one freed) or NULL (out of memory). */
static char *splice_link(char *buf, size_t c, size_t n, const char *target) {
    const char *rest = buf + c + n;
    size_t tl = strlen(target), rl = strlen(rest);
    char *nb = malloc(tl + rl + 2);
    if (!nb) return NULL;
    memcpy(nb, target, tl);
    memcpy(nb + tl, rest, rl + 1); /* rest starts with '/' or is "" */
    free(buf);
    return nb;
}

/* The portable walk. flags are the caller's open flags for the last component. */
static int walk_open(int rootfd, const char *rel, int flags, mode_t mode) {
    int *stack = malloc(MAX_DEPTH * sizeof *stack);
    char *buf = strdup(rel);
    if (!stack || !buf) {
        free(stack);
        free(buf);
        return -ENOMEM;
    }
    int depth = 0, links = 0, rc = -EINVAL;
    stack[0] = rootfd; /* not ours: never closed */
    size_t p = 0;
    for (;;) {
        while (buf[p] == '/')
            p++;
        int top = stack[depth];
        if (!buf[p]) { /* the path names a directory we already hold */
            int fd =
                openat(top, ".",
                       (flags & ~(O_CREAT | O_EXCL | O_TRUNC)) | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
            rc = fd >= 0 ? fd : -errno;
            break;
        }
        size_t n = strcspn(buf + p, "/");
        size_t after = p + n;
        while (buf[after] == '/')
            after++;
        bool last = buf[after] == '\0';
        char saved = buf[p + n];
        buf[p + n] = '\0';
        const char *comp = buf + p;
        if (strcmp(comp, ".") == 0) {
            buf[p + n] = saved;
            p += n;
            continue;
        }
        if (strcmp(comp, "..") == 0) {
            buf[p + n] = saved;
            if (depth == 0) {
                rc = -EXDEV;
                break;
            }
            close(stack[depth--]);
            p += n;
            continue;
        }
        int fd;
        if (!last)
            fd = openat(top, comp, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        else
            fd = openat(top, comp, flags | O_NOFOLLOW | O_CLOEXEC, mode);
        int err = fd < 0 ? errno : 0;
        struct stat st;
        bool is_link = false;
        if (fd < 0 && (err == ELOOP || err == ENOTDIR))
            is_link = fstatat(top, comp, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode);
        else if (fd >= 0 && (flags & O_PATH) && last)
            is_link = fstat(fd, &st) == 0 && S_ISLNK(st.st_mode);
        if (is_link && !(last && (flags & O_EXCL))) {
            if (fd >= 0) close(fd);
            char target[PATH_MAX];
            ssize_t tl = readlinkat(top, comp, target, sizeof target - 1);
            if (tl <= 0 || ++links > MAX_LINKS) {
                rc = tl <= 0 ? -EXDEV : -ELOOP;
                break;
            }
            target[tl] = '\0';
            if (target[0] == '/') {
                rc = -EXDEV;
                break;
            }
            buf[p + n] = saved;
            char *nb = splice_link(buf, p, n, target);
            if (!nb) {
                rc = -ENOMEM;
                break;
            }
            buf = nb;
            p = 0; /* the target's components are read next, from the same directory */
            continue;
        }
        buf[p + n] = saved;
        if (fd < 0) {
            rc = -err;
            break;
        }
        if (last) {
            rc = fd;
            break;
        }
        if (depth + 1 >= MAX_DEPTH) {
            close(fd);
            rc = -ENAMETOOLONG;
            break;
        }
        stack[++depth] = fd;
        p += n;
    }
    while (depth > 0)
        close(stack[depth--]);
    free(stack);
    free(buf);
    return rc;
}

int ptl__open_beneath(int rootfd, const char *rel, int flags, mode_t mode, unsigned how) {
    if (!rel || !*rel) return -ENOENT;
    if (rel[0] == '/') return -EXDEV;
    flags |= O_CLOEXEC;
    if (!(flags & O_PATH)) flags |= O_NONBLOCK | O_NOCTTY; /* openat2: O_PATH takes no more */
    if (!(how & PTL__WALK_ONLY)) {
        int fd = sys_openat2(rootfd, rel, flags, mode);
        if (fd != -ENOSYS && fd != -EPERM) return fd;
    }
    return walk_open(rootfd, rel, flags, mode);
}

int ptl_open_beneath(int rootfd, const char *path, int flags, mode_t mode) {
    return ptl__open_beneath(rootfd, path, flags, mode, 0);
}

/* ---------------------------------------------------------------- root and relative path */

int ptl__root_fd(const char *cwd) {
    int fd = open(cwd, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    return fd >= 0 ? fd : -errno;
}

static const char *strip_root(const char *root, const char *path) {
    size_t n = strlen(root);
    while (n > 1 && root[n - 1] == '/')
        n--;
    if (n == 1 && root[0] == '/') return path + 1;
    if (strncmp(path, root, n) != 0) return NULL;
    if (path[n] == '\0') return ".";
    if (path[n] != '/') return NULL;
    return path + n + 1;
}

int ptl__rel(const char *cwd, const char *path, char **rel) {
    *rel = NULL;
    if (!path || !*path) return -ENOENT;
    if (strlen(path) >= PATH_MAX) return -ENAMETOOLONG;
    const char *r = path;
    if (path[0] == '/') {
        r = strip_root(cwd, path);
        if (!r) {
            char *canon = realpath(cwd, NULL);
            if (!canon) return -errno;
            r = strip_root(canon, path);
            if (r) {
                *rel = strdup(*r ? r : ".");
                free(canon);
                return *rel ? 0 : -ENOMEM;
            }
            free(canon);
            return -EXDEV;
        }
    }
    *rel = strdup(*r ? r : ".");
    return *rel ? 0 : -ENOMEM;
}

/* ---------------------------------------------------------------- regular files */

ptl_fstatus ptl__check_regular(int fd, struct stat *st) {
    if (fstat(fd, st) != 0) return PTL_F_IO;
    if (S_ISDIR(st->st_mode)) return PTL_F_IS_DIR;
    if (!S_ISREG(st->st_mode)) return PTL_F_NOT_REGULAR;
    /* another name of this file may be outside the workspace: its content is not ours */
    if (st->st_nlink > 1) return PTL_F_HARDLINK;
    return PTL_F_OK;
}

ptl_fstatus ptl__errno_status(int err) {
    switch (err) {
    case EXDEV:
    case ELOOP: return PTL_F_ESCAPES;
    case ENOENT:
    case ENOTDIR: return PTL_F_MISSING;
    case EISDIR: return PTL_F_IS_DIR;
    case ENXIO:
    case ENODEV: return PTL_F_NOT_REGULAR;
    case ENOMEM: return PTL_F_NOMEM;
    default: return PTL_F_IO;
    }
}

ptl_fstatus ptl__read_fd(int fd, size_t max, bool truncate, char **data, size_t *len) {
    *data = NULL;
    *len = 0;
    struct stat st;
    if (fstat(fd, &st) != 0) return PTL_F_IO;
    if ((size_t)st.st_size > max && !truncate) return PTL_F_TOO_LARGE;
    size_t cap = ((size_t)st.st_size > max ? max : (size_t)st.st_size) + 1, n = 0;
    char *buf = malloc(cap);
    if (!buf) return PTL_F_NOMEM;
    for (;;) {
        if (n + 1 >= cap) { /* the file grew while we read it */
            if (n >= max) {
                if (!truncate) {
                    /* one more byte tells "exactly max" from "larger" */
                    char c;
                    ssize_t r = read(fd, &c, 1);
                    if (r != 0) {
                        free(buf);
                        return r < 0 ? PTL_F_IO : PTL_F_TOO_LARGE;
                    }
                }
                break;
            }
            size_t ncap = cap * 2 > max + 1 ? max + 1 : cap * 2;
            char *nb = realloc(buf, ncap);
            if (!nb) {
                free(buf);
                return PTL_F_NOMEM;
            }
            buf = nb;
            cap = ncap;
        }
        ssize_t r = read(fd, buf + n, cap - n - 1);
        if (r < 0) {
            if (errno == EINTR) continue;
            free(buf);
            return PTL_F_IO;
        }
        if (r == 0) break;
        n += (size_t)r;
    }
    buf[n] = '\0';
    *data = buf;
    *len = n;
    return PTL_F_OK;
}

ptl_fstatus ptl__open_regular(int rootfd, const char *rel, int *fd_out, struct stat *st) {
    *fd_out = -1;
    int fd = ptl__open_beneath(rootfd, rel, O_RDONLY, 0, 0);
    if (fd < 0) return ptl__errno_status(-fd);
    ptl_fstatus s = ptl__check_regular(fd, st);
    if (s != PTL_F_OK) {
        close(fd);
        return s;
    }
    /* a regular file: blocking reads from here on */
    int fl = fcntl(fd, F_GETFL);
    if (fl >= 0) fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
    *fd_out = fd;
    return PTL_F_OK;
}

ptl_fstatus ptl_read_beneath(const char *root, const char *path, size_t max, bool truncate,
                             char **data, size_t *len) {
    *data = NULL;
    *len = 0;
    char *rel = NULL;
    int rc = ptl__rel(root, path, &rel);
    if (rc < 0) return ptl__errno_status(-rc);
    int rootfd = ptl__root_fd(root);
    if (rootfd < 0) {
        free(rel);
        return PTL_F_IO;
    }
    int fd;
    struct stat st;
    ptl_fstatus s = ptl__open_regular(rootfd, rel, &fd, &st);
    if (s == PTL_F_OK) {
        s = ptl__read_fd(fd, max, truncate, data, len);
        close(fd);
    }
    close(rootfd);
    free(rel);
    return s;
}

const char *ptl_fstatus_text(ptl_fstatus s) {
    static const char *const texts[] = {
        [PTL_F_OK] = "ok",
        [PTL_F_MISSING] = "no such file or directory",
        [PTL_F_ESCAPES] = "path escapes the workspace",
        [PTL_F_IS_DIR] = "is a directory, not a file",
        [PTL_F_NOT_REGULAR] = "not a regular file",
        [PTL_F_HARDLINK] =
            "refused: the file has other hard links, which may lie outside the workspace",
        [PTL_F_TOO_LARGE] = "file too large",
        [PTL_F_NOMEM] = "out of memory",
        [PTL_F_IO] = "input/output error",
        [PTL_F_PROTECTED] = "refused: the file is in one of the host's protected directories",
    };
    _Static_assert(sizeof texts / sizeof texts[0] == PTL_F_PROTECTED + 1,
                   "a text for every status");
    return (unsigned)s < sizeof texts / sizeof texts[0] ? texts[s] : texts[PTL_F_IO];
}

/* ---------------------------------------------------------------- writing */

/* Splits rel into its directory part and last component. */
static int split_last(const char *rel, char **dir, char **name) {
    size_t n = strlen(rel);
    while (n > 1 && rel[n - 1] == '/')
        n--;
    size_t s = n;
    while (s > 0 && rel[s - 1] != '/')
        s--;
    *name = strndup(rel + s, n - s);
    size_t d = s;
    while (d > 1 && rel[d - 1] == '/')
        d--;
    *dir = d ? strndup(rel, d) : strdup(".");
    if (!*name || !*dir) {
        free(*name);
        free(*dir);
        *name = *dir = NULL;
        return -ENOMEM;
    }
    return 0;
}

/* Opens directory dir beneath rootfd, creating missing components (mkdirat in the parent's
 * descriptor, then resolved again beneath the root) where guard (if any) allows them:
 * -EACCES when it does not. */
static int open_dir_creating(int rootfd, const char *dir, bool create,
                             const ptl__mkdir_guard *guard) {
    int fd = ptl__open_beneath(rootfd, dir, O_RDONLY | O_DIRECTORY, 0, 0);
    if (fd >= 0 || fd != -ENOENT || !create) return fd;
    /* walk prefix by prefix; each prefix is resolved beneath the root from scratch */
    char *p = strdup(dir);
    if (!p) return -ENOMEM;
    int prev = dup(rootfd), rc = 0;
    if (prev < 0) {
        free(p);
        return -errno;
    }
    size_t len = strlen(p), i = 0;
    while (i < len) {
        while (i < len && p[i] == '/')
            i++;
        if (i >= len) break;
        size_t j = i + strcspn(p + i, "/");
        char saved = p[j];
        p[j] = '\0';
        fd = ptl__open_beneath(rootfd, p, O_RDONLY | O_DIRECTORY, 0, 0);
        if (fd == -ENOENT) {
            const char *comp = p + i;
            if (guard && !guard->may(guard->ud, prev, comp)) {
                rc = -EACCES;
                break;
            }
            if (mkdirat(prev, comp, 0755) != 0 && errno != EEXIST) {
                rc = -errno;
                break;
            }
            fd = ptl__open_beneath(rootfd, p, O_RDONLY | O_DIRECTORY, 0, 0);
        }
        if (fd < 0) {
            rc = fd;
            break;
        }
        close(prev);
        prev = fd;
        p[j] = saved;
        i = j;
    }
    free(p);
    if (rc < 0) {
        close(prev);
        return rc;
    }
    return prev;
}

int ptl__target_at(int rootfd, const char *rel, bool create_dirs, const ptl__mkdir_guard *guard,
                   int *dirfd, char **name) {
    *dirfd = -1;
    *name = NULL;
    char *cur = strdup(rel);
    if (!cur) return -ENOMEM;
    int rc = 0;
    for (int links = 0;; links++) {
        char *dir, *base;
        if (split_last(cur, &dir, &base) != 0) {
            rc = -ENOMEM;
            break;
        }
        if (!*base || strcmp(base, ".") == 0 || strcmp(base, "..") == 0) {
            free(dir);
            free(base);
            rc = strcmp(cur, "..") == 0 || strncmp(cur, "../", 3) == 0 ? -EXDEV : -EISDIR;
            break;
        }
        int dfd = open_dir_creating(rootfd, dir, create_dirs, guard);
        if (dfd < 0) {
            free(dir);
            free(base);
            rc = dfd;
            break;
        }
        struct stat st;
        char target[PATH_MAX];
        ssize_t tl = -1;
        if (fstatat(dfd, base, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode))
            tl = readlinkat(dfd, base, target, sizeof target - 1);
        if (tl < 0) { /* not a symlink (or gone): the target is dfd/base */
            *dirfd = dfd;
            *name = base;
            free(dir);
            break;
        }
        /* a symlink: write where it points, if that is beneath the root */
        close(dfd);
        free(base);
        target[tl] = '\0';
        if (target[0] == '/' || links >= MAX_LINKS) {
            free(dir);
            rc = target[0] == '/' ? -EXDEV : -ELOOP;
            break;
        }
        char *next = NULL;
        if (asprintf(&next, "%s/%s", dir, target) < 0) next = NULL;
        free(dir);
        if (!next) {
            rc = -ENOMEM;
            break;
        }
        free(cur);
        cur = next;
    }
    free(cur);
    return rc;
}

int ptl__replace_at(int dirfd, const char *name, const char *data, size_t len,
                    const struct stat *old, atomic_int *cancel) {
    char tmp[64];
    int fd = -1;
    for (unsigned i = 0; i < 100 && fd < 0; i++) {
        /* a name that cannot collide with ours in another thread: the fd number of dirfd,
         * the pid and a counter */
        snprintf(tmp, sizeof tmp, ".peri-tmp-%d-%d-%u", (int)getpid(), dirfd, i);
        fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
                    old ? 0600 : 0644);
        if (fd < 0 && errno != EEXIST) return errno;
    }
    if (fd < 0) return EEXIST;
    int rc = 0;
    if (old) { /* keep the file's mode and owner */
        if (fchmod(fd, old->st_mode & 07777) != 0) rc = errno;
        struct stat now;
        if (!rc && fstat(fd, &now) == 0 &&
            (now.st_uid != old->st_uid || now.st_gid != old->st_gid) &&
            fchown(fd, old->st_uid, old->st_gid) != 0)
            rc = errno;
    }
    size_t off = 0;
    while (!rc && off < len) {
        if (cancel && atomic_load(cancel)) {
            rc = ECANCELED;
            break;
        }
        size_t chunk = len - off > (1u << 20) ? (1u << 20) : len - off;
        ssize_t w = write(fd, data + off, chunk);
        if (w < 0) {
            if (errno == EINTR) continue;
            rc = errno;
            break;
        }
        off += (size_t)w;
    }
    if (!rc && fsync(fd) != 0) rc = errno;
    if (close(fd) != 0 && !rc) rc = errno;
    if (!rc && renameat(dirfd, tmp, dirfd, name) != 0) rc = errno;
    if (rc) {
        unlinkat(dirfd, tmp, 0);
        return rc;
    }
    fsync(dirfd); /* the rename itself survives a crash */
    return 0;
}

char *ptl__fd_path(int fd, const char *root, const char *rel) {
    char link[64], buf[PATH_MAX];
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    ssize_t n = readlink(link, buf, sizeof buf - 1);
    if (n > 0 && buf[0] == '/') {
        buf[n] = '\0';
        return strdup(buf);
    }
    char *out = NULL;
    if (asprintf(&out, "%s/%s", root, rel) < 0) out = NULL;
    return out;
}
