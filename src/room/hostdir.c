/*
 * hostdir.c — WASI path and descriptor operations on a real host directory, resolved
 * beneath it (see hostdir.h for the invariant). Used by wasi.c for descriptors that
 * `peri run --dir` preopens and everything opened through them.
 *
 * The walk (walk_path) is the only place a guest path meets the host file system:
 * it holds one O_PATH descriptor per directory level, so ".." pops a level (and is
 * refused at the starting level) instead of asking the kernel, and each step is
 * openat(O_NOFOLLOW): a symlink (even one swapped in by another process between two
 * steps) is never followed by the kernel, only read and resolved here, inside.
 */
#include "hostdir.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#define MAX_LINKS 40 /* symlinks expanded per resolution (Linux's own limit) */

enum {
    FT_UNKNOWN = 0,
    FT_BLOCK = 1,
    FT_CHAR = 2,
    FT_DIR = 3,
    FT_FILE = 4,
    FT_SOCK = 6,
    FT_LNK = 7
};

int pr__hd_errno(int e) {
    switch (e) {
    case 0: return 0;
    case E2BIG: return 1;
    case EACCES: return PR_E_ACCES;
    case EAGAIN: return 6;
    case EBADF: return PR_E_BADF;
    case EBUSY: return 10;
    case EEXIST: return PR_E_EXIST;
    case EFBIG: return 22;
    case EINTR: return 27;
    case EINVAL: return PR_E_INVAL;
    case EIO: return PR_E_IO;
    case EISDIR: return PR_E_ISDIR;
    case ELOOP: return PR_E_LOOP;
    case EMFILE: return 33;
    case EMLINK: return 34;
    case ENAMETOOLONG: return PR_E_NAMETOOLONG;
    case ENFILE: return 41;
    case ENOENT: return PR_E_NOENT;
    case ENOMEM: return PR_E_NOMEM;
    case ENOSPC: return 51;
    case ENOSYS: return 52;
    case ENOTDIR: return PR_E_NOTDIR;
    case ENOTEMPTY: return 55;
    case ENOTSUP: return 58;
    case ENXIO: return 60;
    case EOVERFLOW: return 61;
    case EPERM: return PR_E_PERM;
    case EROFS: return 69;
    case ESPIPE: return 70;
    case ETXTBSY: return 74;
    case EXDEV: return 75;
    case EDQUOT: return 19;
    default: return PR_E_IO;
    }
}

/* ---------------------------------------------------------------- the walk */

typedef struct walk {
    int parent;              /* owned: the directory holding the last component */
    char name[NAME_MAX + 2]; /* the last component ("." for the directory itself) */
    bool slash;              /* the path ended in '/': the target must be a directory */
} walk;

/* Reads the symlink dir/name into a malloc'd string (*out, NUL-terminated). Returns
 * 0, or the host errno (EINVAL: not a symlink). */
static int read_link(int dir, const char *name, char **out, size_t *n) {
    size_t cap = 256;
    for (;;) {
        char *b = malloc(cap);
        if (!b) return ENOMEM;
        ssize_t k = readlinkat(dir, name, b, cap);
        if (k < 0) {
            int e = errno;
            free(b);
            return e;
        }
        if ((size_t)k < cap) {
            b[k] = 0;
            *out = b;
            *n = (size_t)k;
            return 0;
        }
        free(b);
        if (cap >= PATH_MAX * 4) return ENAMETOOLONG;
        cap *= 4;
    }
}

/* rem = target + "/" + rest (rest may be empty; the "/" then only if slash). */
static int splice_link(char **rem, size_t *remlen, const char *target, size_t tn, const char *rest,
                       size_t rn, bool slash) {
    char *b = malloc(tn + rn + 2);
    if (!b) return ENOMEM;
    memcpy(b, target, tn);
    size_t k = tn;
    if (rn || slash) b[k++] = '/';
    memcpy(b + k, rest, rn);
    k += rn;
    b[k] = 0;
    free(*rem);
    *rem = b;
    *remlen = k;
    return 0;
}

/* Resolves path beneath root. follow: resolve a final symlink too. Returns a WASI
 * errno; on success w->parent is owned by the caller. */
static int walk_path(int root, const char *path, size_t len, bool follow, walk *w) {
    if (len == 0) return PR_E_NOENT;
    if (path[0] == '/') return PR_E_NOTCAPABLE; /* WASI paths are relative */
    int stack_small[32], *st = stack_small;
    size_t depth = 0, cap = 32;
    st[0] = root;
    char *rem = malloc(len + 1);
    if (!rem) return PR_E_NOMEM;
    memcpy(rem, path, len);
    rem[len] = 0;
    size_t remlen = len, pos = 0;
    int links = 0, e = 0;
    for (;;) {
        while (pos < remlen && rem[pos] == '/')
            pos++;
        if (pos == remlen) { /* "" after slashes: the current directory */
            strcpy(w->name, ".");
            w->slash = true;
            break;
        }
        size_t start = pos;
        while (pos < remlen && rem[pos] != '/')
            pos++;
        size_t cl = pos - start;
        if (cl > NAME_MAX) {
            e = PR_E_NAMETOOLONG;
            goto out;
        }
        char comp[NAME_MAX + 1];
        memcpy(comp, rem + start, cl);
        comp[cl] = 0;
        size_t after = pos;
        while (after < remlen && rem[after] == '/')
            after++;
        bool last = after == remlen, trail = last && after > pos;
        if (strcmp(comp, ".") == 0) {
            if (last) {
                strcpy(w->name, ".");
                w->slash = trail;
                break;
            }
            continue;
        }
        if (strcmp(comp, "..") == 0) {
            if (depth == 0) {
                e = PR_E_NOTCAPABLE; /* ".." never leaves the directory */
                goto out;
            }
            close(st[depth--]);
            if (last) {
                strcpy(w->name, ".");
                w->slash = trail;
                break;
            }
            continue;
        }
        if (last && !follow) { /* the operation acts on the link itself */
            strcpy(w->name, comp);
            w->slash = trail;
            break;
        }
        int fd = -1;
        if (!last) fd = openat(st[depth], comp, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd >= 0) {
            if (depth + 1 == cap) {
                int *ns = malloc(2 * cap * sizeof *ns);
                if (!ns) {
                    close(fd);
                    e = PR_E_NOMEM;
                    goto out;
                }
                memcpy(ns, st, cap * sizeof *ns);
                if (st != stack_small) free(st);
                st = ns;
                cap *= 2;
            }
            st[++depth] = fd;
            continue;
        }
        int oe = last ? EINVAL : errno;
        if (!last && oe != ENOTDIR && oe != ELOOP) {
            e = pr__hd_errno(oe);
            goto out;
        }
        /* Maybe a symlink: read it and resolve its target here, inside. */
        char *target = NULL;
        size_t tn = 0;
        int le = read_link(st[depth], comp, &target, &tn);
        if (le == EINVAL || (last && le == ENOENT)) { /* not a symlink */
            if (last) {
                strcpy(w->name, comp);
                w->slash = trail;
                break;
            }
            e = pr__hd_errno(oe);
            goto out;
        }
        if (le) {
            e = pr__hd_errno(le);
            goto out;
        }
        if (++links > MAX_LINKS) {
            free(target);
            e = PR_E_LOOP;
            goto out;
        }
        if (tn == 0 || target[0] == '/') {
            free(target);
            e = tn ? PR_E_NOTCAPABLE : PR_E_NOENT; /* absolute: it points out */
            goto out;
        }
        int se = splice_link(&rem, &remlen, target, tn, rem + after, remlen - after, trail);
        free(target);
        if (se) {
            e = PR_E_NOMEM;
            goto out;
        }
        pos = 0;
    }
    if (depth == 0) {
        w->parent = fcntl(root, F_DUPFD_CLOEXEC, 0);
        if (w->parent < 0) e = pr__hd_errno(errno);
    } else {
        w->parent = st[depth--];
    }
out:
    while (depth > 0)
        close(st[depth--]);
    if (st != stack_small) free(st);
    free(rem);
    return e;
}

/* ---------------------------------------------------------------- stat */

static uint8_t ftype(mode_t m) {
    if (S_ISREG(m)) return FT_FILE;
    if (S_ISDIR(m)) return FT_DIR;
    if (S_ISLNK(m)) return FT_LNK;
    if (S_ISCHR(m)) return FT_CHAR;
    if (S_ISBLK(m)) return FT_BLOCK;
    if (S_ISSOCK(m)) return FT_SOCK;
    return FT_UNKNOWN;
}

static uint64_t ns(struct timespec t) {
    return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

static void put64(uint8_t *p, uint64_t v) {
    memcpy(p, &v, 8);
}

static void filestat(const struct stat *s, uint8_t out[64]) {
    memset(out, 0, 64);
    put64(out, (uint64_t)s->st_dev);
    put64(out + 8, (uint64_t)s->st_ino);
    out[16] = ftype(s->st_mode);
    put64(out + 24, (uint64_t)s->st_nlink);
    put64(out + 32, (uint64_t)s->st_size);
    put64(out + 40, ns(s->st_atim));
    put64(out + 48, ns(s->st_mtim));
    put64(out + 56, ns(s->st_ctim));
}

uint8_t pr__hd_filetype(int fd) {
    struct stat s;
    return fstat(fd, &s) == 0 ? ftype(s.st_mode) : FT_UNKNOWN;
}

int pr__hd_fstat(int fd, uint8_t out[64]) {
    struct stat s;
    if (fstat(fd, &s) != 0) return pr__hd_errno(errno);
    filestat(&s, out);
    return 0;
}

int pr__hd_stat(int dirfd, uint32_t lookup, const char *path, size_t len, uint8_t out[64]) {
    walk w;
    int e = walk_path(dirfd, path, len, lookup & 1, &w);
    if (e) return e;
    struct stat s;
    if (fstatat(w.parent, w.name, &s, AT_SYMLINK_NOFOLLOW) != 0)
        e = pr__hd_errno(errno);
    else if (w.slash && !S_ISDIR(s.st_mode))
        e = PR_E_NOTDIR;
    else
        filestat(&s, out);
    close(w.parent);
    return e;
}

/* WASI fstflags: 1 atim, 2 atim_now, 4 mtim, 8 mtim_now. */
static int times_of(uint64_t atim, uint64_t mtim, uint32_t fst, struct timespec ts[2]) {
    if ((fst & 1 && fst & 2) || (fst & 4 && fst & 8) || (fst & ~15u)) return PR_E_INVAL;
    ts[0].tv_nsec = fst & 2 ? UTIME_NOW : fst & 1 ? 0 : UTIME_OMIT;
    ts[1].tv_nsec = fst & 8 ? UTIME_NOW : fst & 4 ? 0 : UTIME_OMIT;
    ts[0].tv_sec = ts[1].tv_sec = 0;
    if (fst & 1) {
        ts[0].tv_sec = (time_t)(atim / 1000000000ull);
        ts[0].tv_nsec = (long)(atim % 1000000000ull);
    }
    if (fst & 4) {
        ts[1].tv_sec = (time_t)(mtim / 1000000000ull);
        ts[1].tv_nsec = (long)(mtim % 1000000000ull);
    }
    return 0;
}

int pr__hd_futimes(int fd, uint64_t atim, uint64_t mtim, uint32_t fst) {
    struct timespec ts[2];
    int e = times_of(atim, mtim, fst, ts);
    if (e) return e;
    return futimens(fd, ts) == 0 ? 0 : pr__hd_errno(errno);
}

int pr__hd_set_times(int dirfd, uint32_t lookup, const char *path, size_t len, uint64_t atim,
                     uint64_t mtim, uint32_t fst) {
    struct timespec ts[2];
    int e = times_of(atim, mtim, fst, ts);
    if (e) return e;
    walk w;
    e = walk_path(dirfd, path, len, lookup & 1, &w);
    if (e) return e;
    if (utimensat(w.parent, w.name, ts, AT_SYMLINK_NOFOLLOW) != 0) e = pr__hd_errno(errno);
    close(w.parent);
    return e;
}

/* ---------------------------------------------------------------- open */

enum { O_CREAT_ = 1, O_DIRECTORY_ = 2, O_EXCL_ = 4, O_TRUNC_ = 8 };
enum { FDF_APPEND = 1, FDF_DSYNC = 2, FDF_NONBLOCK = 4, FDF_RSYNC = 8, FDF_SYNC = 16 };

int pr__hd_open(int dirfd, const char *path, size_t len, uint32_t lookup, uint32_t oflags,
                uint16_t fdflags, bool read, bool write, int *out, bool *is_dir) {
    (void)read;
    walk w;
    /* O_CREAT | O_EXCL never follows a final symlink: it exists (EEXIST), as in POSIX. */
    bool excl = (oflags & O_CREAT_) && (oflags & O_EXCL_);
    int e = walk_path(dirfd, path, len, (lookup & 1) && !excl, &w);
    if (e) return e;
    int fl = O_CLOEXEC | O_NOFOLLOW | O_NOCTTY | O_NONBLOCK;
    if (oflags & O_CREAT_) fl |= O_CREAT;
    if (oflags & O_EXCL_) fl |= O_EXCL;
    if (oflags & O_TRUNC_) fl |= O_TRUNC;
    if ((oflags & O_DIRECTORY_) || w.slash) fl |= O_DIRECTORY;
    if (write && !(fl & O_DIRECTORY)) fl |= read ? O_RDWR : O_WRONLY;
    if (fdflags & FDF_APPEND) fl |= O_APPEND;
    if (fdflags & FDF_DSYNC) fl |= O_DSYNC;
    if (fdflags & FDF_SYNC) fl |= O_SYNC;
    if (fdflags & FDF_RSYNC) fl |= O_RSYNC;
    if ((oflags & O_DIRECTORY_) && (oflags & (O_CREAT_ | O_TRUNC_))) {
        close(w.parent);
        return PR_E_INVAL;
    }
    if ((fl & O_DIRECTORY) && write) { /* a directory is never opened for writing */
        close(w.parent);
        return PR_E_ISDIR;
    }
    int fd = openat(w.parent, w.name, fl, 0666);
    if (fd < 0) {
        e = errno;
        /* O_NOFOLLOW on a final symlink: ELOOP, as WASI expects without SYMLINK_FOLLOW. */
        if (e == ENXIO || e == ENODEV) e = ENOTSUP;
        close(w.parent);
        return pr__hd_errno(e);
    }
    close(w.parent);
    struct stat s;
    if (fstat(fd, &s) != 0) {
        e = pr__hd_errno(errno);
        close(fd);
        return e;
    }
    if (!(fdflags & FDF_NONBLOCK)) {
        int cur = fcntl(fd, F_GETFL);
        if (cur >= 0) fcntl(fd, F_SETFL, cur & ~O_NONBLOCK);
    }
    *out = fd;
    *is_dir = S_ISDIR(s.st_mode);
    return 0;
}

/* ---------------------------------------------------------------- namespace changes */

/* mkdir (rmdir false) or rmdir of path's last name in its parent. */
static int dir_op(int dirfd, const char *path, size_t len, bool rmdir) {
    walk w;
    int e = walk_path(dirfd, path, len, false, &w);
    if (e) return e;
    int rc = rmdir ? unlinkat(w.parent, w.name, AT_REMOVEDIR) : mkdirat(w.parent, w.name, 0777);
    if (rc != 0) e = pr__hd_errno(errno);
    close(w.parent);
    return e;
}

int pr__hd_mkdir(int dirfd, const char *path, size_t len) {
    return dir_op(dirfd, path, len, false);
}

int pr__hd_rmdir(int dirfd, const char *path, size_t len) {
    return dir_op(dirfd, path, len, true);
}

int pr__hd_unlink(int dirfd, const char *path, size_t len) {
    walk w;
    int e = walk_path(dirfd, path, len, false, &w);
    if (e) return e;
    struct stat s;
    if (w.slash) {
        /* "name/" names a directory: unlink refuses it either way. */
        if (fstatat(w.parent, w.name, &s, AT_SYMLINK_NOFOLLOW) != 0)
            e = pr__hd_errno(errno);
        else
            e = S_ISDIR(s.st_mode) ? PR_E_ISDIR : PR_E_NOTDIR;
    } else if (unlinkat(w.parent, w.name, 0) != 0) {
        e = pr__hd_errno(errno);
    }
    close(w.parent);
    return e;
}

/* Whether a trailing slash is allowed: only on a directory. */
static int slash_ok(const walk *w) {
    if (!w->slash) return 0;
    struct stat s;
    if (fstatat(w->parent, w->name, &s, AT_SYMLINK_NOFOLLOW) != 0) return pr__hd_errno(errno);
    return S_ISDIR(s.st_mode) ? 0 : PR_E_NOTDIR;
}

int pr__hd_rename(int d1, const char *p1, size_t l1, int d2, const char *p2, size_t l2) {
    walk a, b;
    int e = walk_path(d1, p1, l1, false, &a);
    if (e) return e;
    e = walk_path(d2, p2, l2, false, &b);
    if (e) {
        close(a.parent);
        return e;
    }
    e = slash_ok(&a);
    if (!e && b.slash) {
        struct stat s;
        if (fstatat(a.parent, a.name, &s, AT_SYMLINK_NOFOLLOW) == 0 && !S_ISDIR(s.st_mode))
            e = PR_E_NOTDIR;
    }
    if (!e && renameat(a.parent, a.name, b.parent, b.name) != 0) e = pr__hd_errno(errno);
    close(a.parent);
    close(b.parent);
    return e;
}

int pr__hd_link(int d1, uint32_t lookup, const char *p1, size_t l1, int d2, const char *p2,
                size_t l2) {
    walk a, b;
    int e = walk_path(d1, p1, l1, lookup & 1, &a);
    if (e) return e;
    e = walk_path(d2, p2, l2, false, &b);
    if (e) {
        close(a.parent);
        return e;
    }
    if (a.slash || b.slash) { /* as linkat(2) on Linux */
        struct stat s;
        if (fstatat(a.parent, a.name, &s, AT_SYMLINK_NOFOLLOW) != 0)
            e = pr__hd_errno(errno);
        else if (S_ISDIR(s.st_mode))
            e = PR_E_PERM;
        else
            e = a.slash ? PR_E_NOTDIR : PR_E_NOENT;
    }
    /* Never AT_SYMLINK_FOLLOW: the walk resolved a final symlink already. */
    if (!e && linkat(a.parent, a.name, b.parent, b.name, 0) != 0) e = pr__hd_errno(errno);
    close(a.parent);
    close(b.parent);
    return e;
}

int pr__hd_symlink(const char *target, size_t tlen, int dirfd, const char *path, size_t len) {
    if (tlen == 0) return PR_E_NOENT;
    if (target[0] == '/') return PR_E_PERM; /* a link out of the directory is never made */
    char *t = malloc(tlen + 1);
    if (!t) return PR_E_NOMEM;
    memcpy(t, target, tlen);
    t[tlen] = 0;
    walk w;
    int e = walk_path(dirfd, path, len, false, &w);
    if (!e) {
        if (w.slash) {
            struct stat s;
            e = fstatat(w.parent, w.name, &s, AT_SYMLINK_NOFOLLOW) == 0 ? PR_E_EXIST : PR_E_NOENT;
        } else if (symlinkat(t, w.parent, w.name) != 0) {
            e = pr__hd_errno(errno);
        }
        close(w.parent);
    }
    free(t);
    return e;
}

int pr__hd_readlink(int dirfd, const char *path, size_t len, uint8_t *buf, uint32_t cap,
                    uint32_t *n) {
    walk w;
    int e = walk_path(dirfd, path, len, false, &w);
    if (e) return e;
    char *t = NULL;
    size_t tn = 0;
    int le = w.slash ? ENOTDIR : read_link(w.parent, w.name, &t, &tn);
    close(w.parent);
    if (le) return pr__hd_errno(le);
    uint32_t k = tn < cap ? (uint32_t)tn : cap;
    memcpy(buf, t, k);
    *n = k;
    free(t);
    return 0;
}

/* ---------------------------------------------------------------- readdir */

struct linux_dirent64 {
    uint64_t d_ino;
    int64_t d_off;
    unsigned short d_reclen;
    unsigned char d_type;
    char d_name[];
};

bool pr__dirent_put(pr_dirents *r, uint64_t next, uint64_t ino, const char *name, size_t n,
                    uint8_t type) {
    uint8_t hdr[24] = {0};
    put64(hdr, next);
    put64(hdr + 8, ino);
    uint32_t nl = (uint32_t)n;
    memcpy(hdr + 16, &nl, 4);
    hdr[20] = type;
    uint32_t room = r->cap - r->used, k = room < 24 ? room : 24;
    memcpy(r->buf + r->used, hdr, k);
    r->used += k;
    room = r->cap - r->used;
    k = room < n ? room : (uint32_t)n;
    memcpy(r->buf + r->used, name, k);
    r->used += k;
    return r->used < r->cap;
}

static uint8_t dtype(int fd, const char *name, unsigned char t) {
    switch (t) {
    case DT_REG: return FT_FILE;
    case DT_DIR: return FT_DIR;
    case DT_LNK: return FT_LNK;
    case DT_CHR: return FT_CHAR;
    case DT_BLK: return FT_BLOCK;
    case DT_SOCK: return FT_SOCK;
    case DT_FIFO: return FT_UNKNOWN;
    default: {
        struct stat s;
        return fstatat(fd, name, &s, AT_SYMLINK_NOFOLLOW) == 0 ? ftype(s.st_mode) : FT_UNKNOWN;
    }
    }
}

int pr__hd_readdir(int fd, uint8_t *buf, uint32_t cap, uint64_t cookie, uint32_t *used) {
    pr_dirents r = {buf, cap, 0};
    *used = 0;
    if (cap == 0) return 0;
    struct stat self, up;
    if (fstat(fd, &self) != 0) return pr__hd_errno(errno);
    if (fstatat(fd, "..", &up, 0) != 0) up.st_ino = 0;
    if (cookie == 0 && !pr__dirent_put(&r, 1, self.st_ino, ".", 1, FT_DIR)) goto done;
    if (cookie <= 1 && !pr__dirent_put(&r, 2, up.st_ino, "..", 2, FT_DIR)) goto done;
    if (lseek(fd, 0, SEEK_SET) < 0) return pr__hd_errno(errno);
    uint64_t index = 2; /* entries after "." and ".." are numbered from 3 */
    _Alignas(8) char kbuf[8192];
    for (;;) {
        long k = syscall(SYS_getdents64, fd, kbuf, sizeof kbuf);
        if (k < 0) return pr__hd_errno(errno);
        if (k == 0) break;
        for (long off = 0; off < k;) {
            struct linux_dirent64 *d = (struct linux_dirent64 *)(void *)(kbuf + off);
            off += d->d_reclen;
            if (strcmp(d->d_name, ".") == 0 || strcmp(d->d_name, "..") == 0) continue;
            index++;
            if (index <= cookie) continue;
            if (!pr__dirent_put(&r, index, d->d_ino, d->d_name, strlen(d->d_name),
                                dtype(fd, d->d_name, d->d_type)))
                goto done;
        }
    }
done:
    *used = r.used;
    return 0;
}

/* ---------------------------------------------------------------- read, write */

int pr__hd_rw(int fd, uint8_t *mem, uint64_t size, uint32_t iovs, uint32_t n, bool write,
              int64_t off, uint32_t *count) {
    *count = 0;
    if ((uint64_t)iovs + 8ull * n > size) return PR_E_FAULT;
    /* Every entry is checked, but only the first IOV_MAX non-empty ones are kept (one
     * readv/writev moves no more, and a short count is allowed): host memory stays
     * fixed however many entries the guest passes. */
    struct iovec v[PR_HD_IOV_MAX];
    int cnt = 0;
    for (uint32_t i = 0; i < n; i++) {
        uint32_t ptr, len;
        memcpy(&ptr, mem + iovs + 8ull * i, 4);
        memcpy(&len, mem + iovs + 8ull * i + 4, 4);
        if ((uint64_t)ptr + len > size) return PR_E_FAULT;
        if (len && cnt < PR_HD_IOV_MAX) v[cnt++] = (struct iovec){mem + ptr, len};
    }
    ssize_t r;
    if (cnt == 0)
        r = 0;
    else if (off < 0)
        r = write ? writev(fd, v, cnt) : readv(fd, v, cnt);
    else
        r = write ? pwritev(fd, v, cnt, off) : preadv(fd, v, cnt, off);
    int e = r < 0 ? pr__hd_errno(errno) : 0;
    if (r > 0) *count = r > UINT32_MAX ? UINT32_MAX : (uint32_t)r;
    return e;
}
