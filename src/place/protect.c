/*
 * protect.c — the host's own directories (the user's Peri home with its settings, trust
 * decisions, OAuth tokens and machine id; the session store's directory) when a
 * directory the native sandbox binds read-write (a policy `writable` dir, the workspace)
 * contains them: sandboxed code must not write what the host trusts later.
 *
 * What (pl__protect_plan, per bound dir D and protected dir P inside it):
 *   - P is bound read-only onto itself;
 *   - every directory between D and P is bound onto itself (read-write: its other
 *     entries stay the sandbox's), so that none can be renamed or removed to put
 *     another P in its place: rename(2) and rmdir(2) of a mount point fail with EBUSY,
 *     while a directory that only contains one could be renamed with it;
 *   - a missing P (or parent) is created first on the host, 0700, as the caller, so
 *     that there is something to mount and nothing the sandbox could create;
 *   - the walk from D to P opens each component beneath the last with O_NOFOLLOW:
 *     a symlink (or anything but a directory) on the way refuses the run, naming it;
 *   - P is also taken where it really lives (its realpath), and D by both its path and
 *     its realpath, so a symlinked P or D is no way around;
 *   - what a mount cannot cover refuses the run: a file of P with another hard link
 *     (the sandbox could write it through a link in D), a symlink in P that leads into
 *     D (a dotfiles link); the scan is bounded (SCAN_ENTRIES_MAX, SCAN_DEPTH_MAX);
 *   - a D that is a protected dir, or (for `protect`, not `protect_around`) lies
 *     inside one, refuses the run: its contents are the host's state.
 *
 * How: the mounts join the masks' plan (masks.c), the workspace's after its masks, the
 * writable dirs' after those, so the same two ways mount them: a root caller's child
 * clones them onto the bound dir's view (idmapped or reach: the same view the writable
 * bind is taken from), any other run passes them to bubblewrap, the writable dirs'
 * right after the writable binds and before the workspace's bind (a parent pinned from
 * its host path must not cover the workspace's masks), the workspace's after its masks.
 *
 * Invariants: nothing is mounted or created outside a bound dir; a protection is never
 * silently left out (a plan that cannot hold it refuses the run).
 */
#include "sandbox_int.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The length of b without trailing '/' (but "/" stays 1). */
static size_t trimmed(const char *b) {
    size_t n = strlen(b);
    while (n > 1 && b[n - 1] == '/')
        n--;
    return n;
}

/* When a is b or lies below it: the offset of a's part below b (its length when equal),
 * else -1. */
static long below(const char *a, const char *b) {
    size_t la = trimmed(a), lb = trimmed(b);
    if (lb == 1 && b[0] == '/') return la > 1 ? 1 : (long)la;
    if (la < lb || strncmp(a, b, lb) != 0) return -1;
    if (la == lb) return (long)la;
    return a[lb] == '/' ? (long)lb + 1 : -1;
}

typedef struct prot_ctx {
    pl_masks *m;
    const char *host, *real, *view;
    bool child;
    char *why;
    size_t whylen;
} prot_ctx;

/* One mount at rel (below the bound dir): from the real path (bubblewrap) or the view
 * (the child), onto the path the mounting side sees. */
static bool add(prot_ctx *c, const char *rel, size_t rl, bool rw) {
    char src[PATH_MAX + 64], dst[PATH_MAX + 64];
    const char *from = c->child ? c->view : c->real, *to = c->child ? c->view : c->host;
    size_t fl = trimmed(from), tl = trimmed(to);
    if (snprintf(src, sizeof src, "%.*s/%.*s", (int)fl, from, (int)rl, rel) >= (int)sizeof src ||
        snprintf(dst, sizeof dst, "%.*s/%.*s", (int)tl, to, (int)rl, rel) >= (int)sizeof dst) {
        snprintf(c->why, c->whylen, "cannot protect %.*s/%.*s: path too long", (int)tl, to, (int)rl,
                 rel);
        return false;
    }
    if (pl__masks_mount(c->m, src, dst, rw)) return true;
    snprintf(c->why, c->whylen, "cannot protect %s: %s", dst,
             errno == E2BIG ? "too many protected paths" : strerror(errno));
    return false;
}

#define SCAN_ENTRIES_MAX 4096
#define SCAN_DEPTH_MAX   8

/* What the mounts cannot cover: a file of the protected dir that is also reachable
 * from the bound dir. A regular file with another hard link (made there before, or by
 * a run without this protection: a write through the link changes it), a symlink that
 * leads into the bound dir (a dotfiles link from ~/.peri/settings.json to a file below a
 * writable home). path: the directory's real path (a buffer of PATH_MAX, restored). */
static bool scan(prot_ctx *c, int dfd, char *path, int depth, size_t *budget) {
    int fd = openat(dfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    if (!d) {
        if (fd >= 0) close(fd);
        return true; /* unreadable to the host as well */
    }
    bool ok = true;
    size_t pl = strlen(path);
    for (struct dirent *e; ok && *budget && (e = readdir(d));) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        --*budget;
        struct stat st;
        if (fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
        if (snprintf(path + pl, PATH_MAX - pl, "/%s", e->d_name) >= (int)(PATH_MAX - pl)) continue;
        char to[PATH_MAX];
        if (S_ISREG(st.st_mode) && st.st_nlink > 1) {
            snprintf(c->why, c->whylen,
                     "%s has %lu hard links: sandboxed code could write it through one in %s; "
                     "give it a single link (copy it)",
                     path, (unsigned long)st.st_nlink, c->host);
            ok = false;
        } else if (S_ISLNK(st.st_mode) && realpath(path, to) && below(to, c->real) >= 0) {
            snprintf(c->why, c->whylen,
                     "%s is a symlink to %s, which sandboxed code may write (it lies in %s); "
                     "replace the link with the file",
                     path, to, c->host);
            ok = false;
        } else if (S_ISDIR(st.st_mode) && depth < SCAN_DEPTH_MAX) {
            int sub = openat(dirfd(d), e->d_name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
            if (sub >= 0) {
                ok = scan(c, sub, path, depth + 1, budget);
                close(sub);
            }
        }
        path[pl] = '\0';
    }
    closedir(d);
    return ok;
}

/* Walks rel below the bound dir's real path, component by component, never following
 * a symlink, creating what is missing (0700), and plans the mounts. */
static bool walk(prot_ctx *c, const char *rel, const char *prot) {
    int fd = open(c->real, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) {
        snprintf(c->why, c->whylen, "cannot protect %s: %s: %s", prot, c->real, strerror(errno));
        return false;
    }
    bool ok = true;
    const char *p = rel;
    while (ok && *p) {
        size_t n = strcspn(p, "/");
        char comp[NAME_MAX + 1];
        const char *next = p + n + strspn(p + n, "/");
        if (n == 0 || n > NAME_MAX) {
            snprintf(c->why, c->whylen, "cannot protect %s: bad path", prot);
            ok = false;
            break;
        }
        memcpy(comp, p, n);
        comp[n] = '\0';
        int nfd = openat(fd, comp, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (nfd < 0 && errno == ENOENT && (mkdirat(fd, comp, 0700) == 0 || errno == EEXIST))
            nfd = openat(fd, comp, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (nfd < 0) {
            int e = errno;
            struct stat st;
            bool link = fstatat(fd, comp, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode);
            snprintf(c->why, c->whylen,
                     "%s/%.*s %s: the sandbox could put its own %s there; replace it with the "
                     "directory itself or name the real path",
                     c->real, (int)(p + n - rel), rel,
                     link           ? "is a symlink"
                     : e == ENOTDIR ? "is not a directory"
                                    : strerror(e),
                     prot);
            ok = false;
            break;
        }
        close(fd);
        fd = nfd;
        /* the parents stay writable mount points, the protected dir itself read-only */
        ok = add(c, rel, (size_t)(p + n - rel), *next != '\0');
        p = next;
    }
    char path[PATH_MAX];
    size_t budget = SCAN_ENTRIES_MAX;
    if (ok && snprintf(path, sizeof path, "%s/%s", c->real, rel) < (int)sizeof path) {
        size_t l = trimmed(path);
        path[l] = '\0';
        ok = scan(c, fd, path, 0, &budget);
    }
    close(fd);
    return ok;
}

/* P (one spelling of a protected dir) against the bound dir. */
static bool one(prot_ctx *c, const char *prot, const char *shown, bool whole) {
    const char *bases[2] = {c->host, c->real};
    for (int i = 0; i < 2; i++) {
        long at = below(bases[i], prot);
        if (at >= 0 && (whole || (size_t)at == trimmed(bases[i]))) {
            snprintf(c->why, c->whylen,
                     "%s %s the protected directory %s: sandboxed code could write the host's "
                     "own state; make another directory writable",
                     c->host, (size_t)at == trimmed(bases[i]) ? "is" : "lies inside", shown);
            return false;
        }
    }
    for (int i = 0; i < 2; i++) {
        long at = below(prot, bases[i]);
        if (at < 0 || (size_t)at >= trimmed(prot)) continue;
        const char *rel = prot + at;
        while (*rel == '/') /* "//.peri" of a HOME of "/" */
            rel++;
        return walk(c, rel, shown);
    }
    return true;
}

bool pl__protect_plan(pl_masks *m, const pl_policy *pol, const char *host, const char *view,
                      bool child, char *why, size_t whylen) {
    if (!pol || (!pol->nprotect && !pol->nprotect_around)) return true;
    char real[PATH_MAX];
    if (!realpath(host, real)) return true; /* not bound (bubblewrap's --bind-try) */
    prot_ctx c = {m, host, real, view, child, why, whylen};
    for (size_t k = 0; k < pol->nprotect + pol->nprotect_around; k++) {
        bool whole = k < pol->nprotect;
        const char *p = whole ? pol->protect[k] : pol->protect_around[k - pol->nprotect];
        if (!p || p[0] != '/') continue;
        char rp[PATH_MAX];
        if (!one(&c, p, p, whole)) return false;
        /* where it really lives, when that is elsewhere (a symlinked ~/.peri) */
        if (realpath(p, rp) && (trimmed(rp) != trimmed(p) || strncmp(rp, p, trimmed(p)) != 0) &&
            !one(&c, rp, p, whole))
            return false;
    }
    return true;
}
