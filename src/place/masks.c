/*
 * masks.c — the agent's control files inside a workspace that the native sandbox binds
 * read-write: which they are, and the read-only masks that keep sandboxed code from
 * writing them whether or not they exist when the run starts.
 *
 * Why: the workspace holds files the host later acts on. `.peri/` names MCP servers and
 * allow rules (honoured only once trusted, see docs/security.md, but never the sandbox's
 * to write); the guides are the model's instructions; `.git/config` and `.git/hooks/`
 * run code on the user's next git command (core.fsmonitor, core.hooksPath, hooks).
 *
 * What (pl__masks_plan, in this order, so that a mask on `.git` lies under its own):
 *   - an existing control directory is bound onto itself (a mount point can be neither
 *     renamed nor removed), read-only for `.peri`, read-write for `.git` itself (so
 *     commits still work) with read-only masks on top over everything git reads from it
 *     that can run code or send it to another git directory: `config`, `hooks/`,
 *     `commondir` (whose git directory's config git would read instead), `config.worktree`,
 *     `modules/` and `worktrees/` (the git directories of submodules and worktrees);
 *   - an existing control file is bound read-only onto itself;
 *   - a missing one is covered by an empty read-only file or directory of the context's
 *     mask directory (sources) (a missing `.git/commondir` by one that says "." — git must be able
 * to read a commondir that exists, and "." is the git directory itself), bound on a placeholder
 * that the host creates. Placeholders are counted per context: two concurrent runs share one, and
 * only the last to end removes it (removing a mount point would detach the other run's mask); those
 * inside a git directory, which git never lists, live as long as the context. Runs of other
 * processes hold a shared flock of the workspace while they run, and a placeholder is removed only
 * under an exclusive one taken without waiting, and only while it is unchanged. The run's own git
 * excludes file names its top-level placeholders (git status inside passes over them);
 *   - a `.git` directory without HEAD is no repository to git: only made read-only;
 *   - a `.git` file naming a git directory inside the workspace masks that directory
 *     like `.git`; one reaching it through a symlink, ".." or a missing path is refused;
 *   - a control path that is a symlink: `.git`, and an entry of a git directory that
 *     leads back into the workspace, refuse the run (git follows them, and the sandbox
 *     could write what they lead to); any other is masked by the link itself, cloned
 *     read-only onto its own name, so that it can be neither removed nor replaced.
 *     That needs the new mount API (a root caller's run, below); where bubblewrap
 *     mounts the masks (its binds follow a symlink), an entry of a git directory that
 *     is a symlink refuses the run, and a top-level one stays unmasked: the host never
 *     reads through it, and what could replace it is honoured only once trusted.
 *
 * How (two ways to mount the same plan):
 *   - a root caller's run already prepares the workspace in a private mount namespace
 *     of its forked child (idmap.c): there pl__masks_apply clones each mask with the
 *     new mount API, read-only, nosuid and nodev, onto the workspace's view, and
 *     bubblewrap's one recursive bind of the view carries them all (it remounts only
 *     mounts whose flags differ, and these already have its flags). No per-mask work is
 *     left to bubblewrap, which otherwise reads /proc/self/mountinfo and remounts once
 *     per bind;
 *   - any other run passes them as bubblewrap arguments (pl__masks_args).
 *
 * Invariants: only paths directly named here are touched; a mask is never silently
 * left out (a plan that cannot hold one refuses the run); a placeholder is removed
 * only by the last holder, with no run of any process on the workspace, while it is
 * unchanged.
 */
#include "sandbox_int.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

static const char *const top_files[] = {".mcp.json", "AGENTS.md", "PERI.md", "CLAUDE.md"};

bool pl_is_control_path(const char *rel) {
    if (!rel) return false;
    while (rel[0] == '.' && rel[1] == '/')
        rel += 2;
    size_t n = strcspn(rel, "/");
    if ((n == 5 && !strncmp(rel, ".peri", 5)) || (n == 4 && !strncmp(rel, ".git", 4))) return true;
    for (size_t i = 0; i < sizeof top_files / sizeof *top_files; i++)
        if (strlen(top_files[i]) == n && !strncmp(rel, top_files[i], n) && rel[n] == '\0')
            return true;
    return false;
}

/* ---------------------------------------------------------------- placeholders */

struct pl_mask_ref {
    char *path, *ws; /* the placeholder, its workspace (for ws_idle) */
    unsigned refs;
    char kind;
};

/* Runs of other contexts (other processes) do not see this context's counts, so every
 * run holds a shared lock on its workspace directory (flock(2): another open file
 * description of the same directory) while it runs, and a placeholder is removed only
 * under an exclusive lock taken without waiting: never while a run of anyone holds the
 * name under a mask. Sandboxed code can take these locks too; that only leaves
 * placeholders behind, or (an exclusive lock held) makes a run go on unlocked after
 * 50 ms rather than wait. */
static int ws_lock_shared(const char *ws) {
    int fd = open(ws, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    for (int i = 0; fd >= 0 && i < 50 && flock(fd, LOCK_SH | LOCK_NB) != 0; i++)
        usleep(1000);
    return fd;
}

/* An fd holding the exclusive lock of ws (close it when done), or -1: busy. */
static int ws_idle(const char *ws) {
    int fd = open(ws, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd >= 0 && flock(fd, LOCK_EX | LOCK_NB) != 0) {
        close(fd);
        fd = -1;
    }
    return fd;
}

/* What a placeholder file holds: nothing, except `.git/commondir` (kind 'c'), which git
 * must be able to read once it exists: "." names the git directory itself. */
#define COMMONDIR ".\n"
static const char *content(char kind) {
    return kind == 'c' ? COMMONDIR : "";
}

/* Makes the placeholder p: 0, or -1 with errno (EEXIST: something is there). */
static int make(const char *p, char kind, uid_t owner, gid_t group) {
    if (kind == 'd') {
        if (mkdir(p, 0755) != 0) return -1; /* the host's view; the sandbox sees the mask */
        if (lchown(p, owner, group) != 0) { /* best effort: it is removed later */
        }
        return 0;
    }
    int fd = open(p, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0444);
    if (fd < 0) return -1;
    if (fchown(fd, owner, group) != 0) { /* best effort, as above */
    }
    const char *c = content(kind);
    size_t n = strlen(c);
    bool ok = n == 0 || write(fd, c, n) == (ssize_t)n;
    close(fd);
    if (ok) return 0;
    unlink(p);
    errno = EIO;
    return -1;
}

/* ---------------------------------------------------------------- the journal */

static void remove_placeholder(const char *p, char kind);

/* Placeholders are files in the user's project: a process killed before pl_free would
 * leave them there. So each one is recorded, as it is made, in a journal of the context
 * (NUL-separated: kind, device, inode, change time, workspace, path), which pl_free
 * deletes and a later context of any process reads when this one is dead (reclaim.c),
 * removing each placeholder that is still the very file made (same device, inode and
 * change time: an inode number alone is reused at once by a file made after a removal)
 * and unchanged.
 * Best effort: a placeholder that cannot be recorded is still removed by pl_free.
 * *jfd: the journal, opened at a plan's first record and closed at the plan's end
 * (-1: not open yet). */
static void journal_write(pl_ctx *pc, int *jfd, char kind, const char *id, size_t idn,
                          const char *ws, const char *p) {
    if (!pc->mask_journal) {
        char tmpl[4200];
        int w =
            snprintf(tmpl, sizeof tmpl, "%s/peri-masks-%d-XXXXXX", pc->scratch_root, (int)getpid());
        if (w < 0 || (size_t)w >= sizeof tmpl) return;
        int fd = mkstemp(tmpl); /* 0600, ours */
        if (fd < 0) return;
        close(fd);
        if (!(pc->mask_journal = strdup(tmpl))) {
            unlink(tmpl);
            return;
        }
    }
    if (*jfd < 0) *jfd = open(pc->mask_journal, O_WRONLY | O_APPEND | O_NOFOLLOW | O_CLOEXEC);
    int fd = *jfd;
    if (fd < 0) return;
    /* one write per record: a record is whole or absent after a kill */
    size_t wl = strlen(ws) + 1, pl = strlen(p) + 1, n = 2 + idn + wl + pl;
    char *rec = malloc(n);
    if (rec) {
        rec[0] = kind;
        rec[1] = 0;
        memcpy(rec + 2, id, idn);
        memcpy(rec + 2 + idn, ws, wl);
        memcpy(rec + 2 + idn + wl, p, pl);
        if (write(fd, rec, n) != (ssize_t)n) { /* best effort, as above */
        }
        free(rec);
    }
}

/* The record of placeholder p, made: its identity (device, inode, change time). */
static void journal_add(pl_ctx *pc, int *jfd, char kind, const char *ws, const char *p) {
    struct stat st;
    if (lstat(p, &st) != 0) return;
    char id[96];
    int n = snprintf(id, sizeof id, "%llu%c%llu%c%lld.%09ld%c", (unsigned long long)st.st_dev, 0,
                     (unsigned long long)st.st_ino, 0, (long long)st.st_ctim.tv_sec,
                     (long)st.st_ctim.tv_nsec, 0);
    if (n > 0 && (size_t)n < sizeof id) journal_write(pc, jfd, kind, id, (size_t)n, ws, p);
}

/* The record that placeholder p is about to be made, written before it is: a kill
 * between the make and its full record would otherwise leave an unrecorded file in
 * the user's project. It has no identity (device "0", inode "0", change time ""), so
 * reclaim removes p for it only when no full record of p follows and p is still
 * exactly an empty placeholder (remove_placeholder's test: an empty directory, or a
 * file holding only a placeholder's content), which loses nothing whoever made it. */
static void journal_intent(pl_ctx *pc, int *jfd, char kind, const char *ws, const char *p) {
    static const char id[] = {'0', 0, '0', 0, 0};
    journal_write(pc, jfd, kind, id, sizeof id, ws, p);
}

void pl__masks_reclaim(const char *path) {
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    struct stat st;
    /* only a journal this user made (the scratch root may be the shared /tmp) */
    if (fd < 0 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid() ||
        (st.st_mode & 077) || st.st_size > (1 << 20)) {
        if (fd >= 0) close(fd);
        return;
    }
    size_t n = st.st_size > 0 ? (size_t)st.st_size : 0;
    char *buf = n <= (1u << 20) ? malloc(n + 1) : NULL;
    ssize_t got = buf ? pb_read_full(fd, buf, n) : -1;
    close(fd);
    if (got != (ssize_t)n) {
        free(buf);
        return;
    }
    buf[n] = 0;
    /* the fields (6 per record), then the records removed latest (deepest) first */
    bool busy = false;
    size_t nf = 0;
    for (size_t i = 0; i < n; i++)
        nf += buf[i] == 0;
    const char **f = calloc(nf + 1, sizeof *f);
    size_t k = 0;
    for (size_t i = 0; f && i < n && k < nf; i += strlen(buf + i) + 1)
        f[k++] = buf + i;
    for (size_t r = f ? k / 6 : 0; r-- > 0;) {
        const char **rec = f + 6 * r;
        char kind = rec[0][0];
        const char *ws = rec[4], *p = rec[5];
        size_t wl = strlen(ws);
        struct stat ps;
        bool mine = (kind == 'f' || kind == 'c' || kind == 'd') && ws[0] == '/' &&
                    strncmp(p, ws, wl) == 0 && p[wl] == '/' && lstat(p, &ps) == 0;
        if (!mine) continue;
        if (rec[3][0] == 0) { /* an intent (journal_intent): only if no record of p follows */
            bool made = false;
            for (size_t q = r + 1; q < k / 6 && !made; q++)
                made = strcmp(f[6 * q + 5], p) == 0;
            if (made) continue;
        } else {
            char ct[48];
            snprintf(ct, sizeof ct, "%lld.%09ld", (long long)ps.st_ctim.tv_sec,
                     (long)ps.st_ctim.tv_nsec);
            if ((unsigned long long)ps.st_dev != strtoull(rec[1], NULL, 10) ||
                (unsigned long long)ps.st_ino != strtoull(rec[2], NULL, 10) ||
                strcmp(ct, rec[3]) != 0)
                continue;
        }
        int lock = ws_idle(ws);
        if (lock < 0) { /* a run holds the workspace: a later context tries again */
            busy = true;
            continue;
        }
        remove_placeholder(p, kind);
        close(lock);
    }
    free(f);
    free(buf);
    if (!busy) unlink(path);
}

/* Takes a placeholder for the missing path p (kind 'f' file, 'c' commondir file, 'd'
 * directory), under pc->mu: one this context already holds (made again if someone
 * removed it), or a new one; pin: the context keeps it until pl_free (the ones inside a
 * git directory, which git never shows: no creation and removal per run). 1 held, 0 p
 * exists (an ordinary control file, *st filled), -1 error (errno). */
static int hold(pl_ctx *pc, int *jfd, const char *ws, const char *p, char kind, bool pin,
                uid_t owner, gid_t group, struct stat *st) {
    for (size_t i = 0; i < pc->nmask_refs; i++)
        if (!strcmp(pc->mask_refs[i].path, p)) {
            bool there = lstat(p, st) == 0;
            if (!there &&
                (errno != ENOENT || (make(p, kind, owner, group) != 0 && errno != EEXIST)))
                return -1;
            /* replaced by something else meanwhile: judged like any existing path */
            if (there && (kind == 'd' ? !S_ISDIR(st->st_mode) : !S_ISREG(st->st_mode))) return 0;
            pc->mask_refs[i].refs++;
            return 1;
        }
    if (lstat(p, st) == 0) return 0;
    if (errno != ENOENT) return -1;
    if (pc->nmask_refs == pc->cap_mask_refs) {
        size_t nc = pc->cap_mask_refs ? pc->cap_mask_refs * 2 : 8;
        struct pl_mask_ref *nr = realloc(pc->mask_refs, nc * sizeof *nr);
        if (!nr) return -1;
        pc->mask_refs = nr;
        pc->cap_mask_refs = nc;
    }
    char *dup = strdup(p), *wdup = strdup(ws);
    if (!dup || !wdup) {
        free(dup);
        free(wdup);
        return -1;
    }
    journal_intent(pc, jfd, kind, ws, p);
    if (make(p, kind, owner, group) != 0) {
        int e = errno;
        free(dup);
        free(wdup);
        if (e == EEXIST && lstat(p, st) == 0) return 0; /* made meanwhile by someone else */
        errno = e;
        return -1;
    }
    pc->mask_refs[pc->nmask_refs++] = (struct pl_mask_ref){dup, wdup, pin ? 2u : 1u, kind};
    journal_add(pc, jfd, kind, ws, p);
    return 1;
}

/* True when the regular file p still holds exactly c. */
static bool holds_only(const char *p, const char *c) {
    size_t n = strlen(c);
    char buf[8];
    int fd = open(p, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) return false;
    ssize_t k = read(fd, buf, sizeof buf);
    close(fd);
    return k == (ssize_t)n && memcmp(buf, c, n) == 0;
}

/* Removes the placeholder p while it is unchanged (an empty directory, a file with its
 * content). */
static void remove_placeholder(const char *p, char kind) {
    struct stat st;
    if (lstat(p, &st) != 0) return;
    if (S_ISDIR(st.st_mode))
        rmdir(p); /* fails, as it should, when not empty */
    else if (S_ISREG(st.st_mode) && (size_t)st.st_size == strlen(content(kind)) &&
             (st.st_size == 0 || holds_only(p, content(kind))))
        unlink(p);
}

/* Forgets entry i of the table (its placeholder already removed or left). */
static void forget(pl_ctx *pc, size_t i) {
    free(pc->mask_refs[i].path);
    free(pc->mask_refs[i].ws);
    pc->mask_refs[i] = pc->mask_refs[--pc->nmask_refs];
}

/* Drops one hold of p; the last one removes the placeholder while it is unchanged, when
 * may_remove (no run of anyone holds the workspace); otherwise it stays in the table
 * with no holder, for a later release (sweep) or pl_free to remove. */
static void unhold(pl_ctx *pc, const char *p, bool may_remove) {
    for (size_t i = 0; i < pc->nmask_refs; i++) {
        struct pl_mask_ref *r = &pc->mask_refs[i];
        if (strcmp(r->path, p) != 0) continue;
        if (r->refs && --r->refs == 0 && may_remove) {
            remove_placeholder(p, r->kind);
            forget(pc, i);
        }
        return;
    }
}

/* Removes the placeholders nobody holds any more, of workspaces no run holds now. */
static void sweep(pl_ctx *pc) {
    for (size_t i = pc->nmask_refs; i-- > 0;) {
        if (pc->mask_refs[i].refs) continue;
        int fd = ws_idle(pc->mask_refs[i].ws);
        if (fd < 0) continue;
        remove_placeholder(pc->mask_refs[i].path, pc->mask_refs[i].kind);
        close(fd);
        forget(pc, i);
    }
}

void pl__masks_free_refs(pl_ctx *pc) {
    /* the pinned placeholders (no run is left), deepest first */
    for (size_t i = pc->nmask_refs; i-- > 0;) {
        int fd = ws_idle(pc->mask_refs[i].ws);
        if (fd >= 0) {
            remove_placeholder(pc->mask_refs[i].path, pc->mask_refs[i].kind);
            close(fd);
        }
        free(pc->mask_refs[i].path);
        free(pc->mask_refs[i].ws);
    }
    free(pc->mask_refs);
    pc->mask_refs = NULL;
    pc->nmask_refs = pc->cap_mask_refs = 0;
    if (pc->mask_src) pl__remove_tree(pc->mask_src);
    free(pc->mask_src);
    pc->mask_src = NULL;
    if (pc->mask_journal) unlink(pc->mask_journal);
    free(pc->mask_journal);
    pc->mask_journal = NULL;
}

/* The empty file, the empty directory and the commondir file that masks are taken from,
 * made once per context (under pc->mu) in <scratch root>/peri-sbx-<pid>-m<random>, which
 * pl_free removes and a later context reclaims when this process died (reclaim.c).
 * Sandboxed code never sees them but through a read-only mount. NULL with errno. */
static const char *sources(pl_ctx *pc) {
    if (pc->mask_src) return pc->mask_src;
    size_t n = strlen(pc->scratch_root) + 48;
    char *d = malloc(n);
    if (!d) return NULL;
    snprintf(d, n, "%s/peri-sbx-%d-mXXXXXX", pc->scratch_root, (int)getpid());
    if (!mkdtemp(d) || chmod(d, 0711) != 0) {
        int e = errno;
        free(d);
        errno = e;
        return NULL;
    }
    char p[PATH_MAX + 64];
    snprintf(p, sizeof p, "%s/mask-file", d);
    int fd = open(p, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0444);
    bool ok = fd >= 0 && close(fd) == 0;
    snprintf(p, sizeof p, "%s/mask-commondir", d);
    fd = ok ? open(p, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0444) : -1;
    ok = fd >= 0 && write(fd, COMMONDIR, 2) == 2;
    if (fd >= 0 && close(fd) != 0) ok = false;
    snprintf(p, sizeof p, "%s/mask-dir", d);
    ok = ok && mkdir(p, 0555) == 0;
    if (!ok) {
        int e = errno;
        pl__remove_tree(d);
        free(d);
        errno = e;
        return NULL;
    }
    return pc->mask_src = d;
}

/* ---------------------------------------------------------------- the plan */

typedef struct plan_ctx {
    pl_ctx *pc;
    pl_masks *m;
    const char *ws, *src_base, *dst_base;
    uid_t owner;
    gid_t group;
    char *why;
    size_t whylen;
    bool in_git; /* planning the entries of a git directory (git follows symlinks) */
    bool links;  /* masks are mounted with the new mount API, which can mount on a symlink */
    int jfd;     /* the placeholder journal while this plan writes to it, or -1 */
} plan_ctx;

/* "<a><sep><b>" in a new string (the caller frees it), or NULL. */
static char *join(const char *a, const char *sep, const char *b) {
    size_t n = strlen(a) + strlen(sep) + strlen(b) + 1;
    char *s = malloc(n);
    if (s) snprintf(s, n, "%s%s%s", a, sep, b);
    return s;
}

bool pl__masks_mount(pl_masks *m, const char *src, const char *dst, bool rw) {
    for (size_t i = 0; i < m->nmnt; i++)
        if (!strcmp(m->mnt[i].dst, dst) && (!m->mnt[i].rw || rw)) return true;
    if (m->nmnt >= PL_MOUNTS_MAX) {
        errno = E2BIG;
        return false;
    }
    char *s = strdup(src), *d = strdup(dst);
    if (!s || !d) {
        free(s);
        free(d);
        errno = ENOMEM;
        return false;
    }
    m->mnt[m->nmnt].src = s;
    m->mnt[m->nmnt].dst = d;
    m->mnt[m->nmnt++].rw = rw;
    return true;
}

static bool add_mount(plan_ctx *c, const char *src, const char *rel, bool rw) {
    char *dst = join(c->dst_base, "/", rel);
    if (!dst || !pl__masks_mount(c->m, src, dst, rw)) { /* never a mask silently left out */
        snprintf(c->why, c->whylen, "cannot protect %s/%s: %s", c->ws, rel,
                 dst && errno == E2BIG ? "too many masks" : "out of memory");
        free(dst);
        return false;
    }
    free(dst);
    return true;
}

/* Plans one mask. kind: 'f' file, 'd' dir; rw: bind an existing dir read-write onto
 * itself. */
static bool mask(plan_ctx *c, const char *rel, char kind, bool rw, bool pin) {
    pl_masks *m = c->m;
    char p[PATH_MAX], src[PATH_MAX + 64];
    if (snprintf(p, sizeof p, "%s/%s", c->ws, rel) >= (int)sizeof p ||
        snprintf(src, sizeof src, "%s/%s", c->src_base, rel) >= (int)sizeof src) {
        snprintf(c->why, c->whylen, "cannot protect %s/%s: path too long", c->ws, rel);
        return false;
    }
    struct stat st;
    pthread_mutex_lock(&c->pc->mu);
    int h = m->nheld < PL_MASKS_MAX
                ? hold(c->pc, &c->jfd, c->ws, p, kind, pin, c->owner, c->group, &st)
                : -1;
    if (m->nheld >= PL_MASKS_MAX) errno = E2BIG;
    if (h == 1 && !(m->held[m->nheld] = strdup(p))) {
        unhold(c->pc, p, false);
        h = -1;
    }
    if (h == 1) m->nheld++;
    pthread_mutex_unlock(&c->pc->mu);
    if (h < 0) {
        snprintf(c->why, c->whylen, "cannot protect %s: %s", p, strerror(errno));
        return false;
    }
    if (h == 1)
        return add_mount(c,
                         kind == 'd'   ? m->empty_dir
                         : kind == 'c' ? m->commondir
                                       : m->empty_file,
                         rel, false);
    if (S_ISLNK(st.st_mode) && c->in_git) {
        /* git follows it: refused when it leads back into the workspace (the sandbox
         * could write there) or nowhere; one that leads out (not bound) is masked like
         * the top-level links below, or refused where it cannot be */
        char res[PATH_MAX], rws[PATH_MAX];
        size_t nw = realpath(c->ws, rws) ? strlen(rws) : 0;
        bool out = nw && realpath(p, res) &&
                   (strncmp(res, rws, nw) != 0 || (res[nw] != '/' && res[nw] != '\0'));
        if (!out) {
            snprintf(c->why, c->whylen,
                     "%s is a symlink into the workspace (or to nothing): git would follow it, "
                     "and the sandbox could write what it leads to; replace it with the file "
                     "or directory, or use core.hooksPath",
                     p);
            return false;
        }
        if (!c->links) {
            snprintf(c->why, c->whylen,
                     "%s is a symlink, which this sandbox cannot protect: sandboxed code could "
                     "replace it with hooks or a config that the host's git would run; replace "
                     "it with the directory or file, or use core.hooksPath",
                     p);
            return false;
        }
    }
    /* A symlink is masked by the link itself, cloned read-only onto its own name: a
     * mount point can be neither removed nor renamed, so sandboxed code cannot put a
     * file or directory of its own where the host later looks, and the link reads as
     * before. Only the new mount API can mount on a symlink (bubblewrap's binds follow
     * it); without it a top-level link stays unmasked: the host never reads through
     * it, and what could replace it (settings, server lists) is honoured only once
     * trusted by its content (docs/placement.md). */
    if (S_ISLNK(st.st_mode) && !c->links) return true;
    return add_mount(c, src, rel, rw && !S_ISLNK(st.st_mode));
}

/* The masks of a git directory at workspace-relative rel: itself bound writable onto
 * itself (commits work; it cannot be renamed or replaced), everything git reads from it
 * that can run code or send it elsewhere read-only: config, hooks, commondir (another
 * git directory's config), config.worktree, the submodules' and worktrees' git
 * directories. The missing ones are placeholders, inside the git directory where git
 * status never shows them. */
static bool git_dir(plan_ctx *c, const char *rel) {
    static const struct {
        const char *name;
        char kind;
    } in_git[] = {{"config", 'f'},  {"hooks", 'd'},     {"commondir", 'c'},
                  {"modules", 'd'}, {"worktrees", 'd'}, {"config.worktree", 'f'}};
    if (!mask(c, rel, 'd', true, false)) return false;
    c->in_git = true;
    for (size_t i = 0; i < sizeof in_git / sizeof *in_git; i++) {
        char r[PATH_MAX];
        if (snprintf(r, sizeof r, "%s/%s", rel, in_git[i].name) >= (int)sizeof r) {
            snprintf(c->why, c->whylen, "cannot protect %s/%s: path too long", c->ws, rel);
            return false;
        }
        if (!mask(c, r, in_git[i].kind, false, true)) return false;
    }
    return true;
}

/* A .git file ("gitdir: PATH") whose git directory lies inside the workspace (`git init
 * --separate-git-dir=.g`): that directory is masked like .git. It must be named by a
 * plain path below the workspace (no "..", no symlink, existing); anything else that
 * leads inside is refused, since the sandbox could re-point or create it. A git
 * directory outside the workspace is not bound at all. */
static bool gitdir_file(plan_ctx *c, const char *git) {
    char buf[PATH_MAX + 16], cand[2 * PATH_MAX], res[PATH_MAX], rws[PATH_MAX];
    int fd = open(git, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    struct stat st;
    ssize_t k = -1;
    if (fd >= 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) k = read(fd, buf, sizeof buf - 1);
    if (fd >= 0) close(fd);
    if (k < 0) return true; /* git cannot read it either */
    buf[k] = '\0';
    if (strncmp(buf, "gitdir: ", 8) != 0) return true;
    char *path = buf + 8;
    path[strcspn(path, "\r\n")] = '\0';
    if (path[0] == '/')
        snprintf(cand, sizeof cand, "%s", path);
    else
        snprintf(cand, sizeof cand, "%s/%s", c->ws, path);
    if (!realpath(c->ws, rws)) return true;
    size_t nw = strlen(rws);
    bool exists = realpath(cand, res) != NULL;
    bool inside = exists && strncmp(res, rws, nw) == 0 && (res[nw] == '/' || res[nw] == '\0');
    /* the plain path below the workspace that names it, if it is one */
    const char *rel = NULL;
    size_t nws = strlen(c->ws);
    if (path[0] != '/')
        rel = path;
    else if (strncmp(path, c->ws, nws) == 0 && path[nws] == '/')
        rel = path + nws + 1;
    else if (strncmp(path, rws, nw) == 0 && path[nw] == '/')
        rel = path + nw + 1;
    while (rel && rel[0] == '.' && rel[1] == '/')
        rel += 2;
    bool plain = rel && rel[0];
    for (const char *q = rel; plain && q && *q; q = strchr(q, '/') ? strchr(q, '/') + 1 : NULL) {
        size_t n = strcspn(q, "/");
        if (n == 0 || (n == 1 && q[0] == '.') || (n == 2 && q[0] == '.' && q[1] == '.'))
            plain = false;
        char pre[2 * PATH_MAX];
        snprintf(pre, sizeof pre, "%s/%.*s", c->ws, (int)(q - rel + (ptrdiff_t)n), rel);
        if (plain && (lstat(pre, &st) != 0 || S_ISLNK(st.st_mode))) plain = false;
    }
    if (!inside && !plain && !exists) {
        /* a missing git directory: refused when its path leads into the workspace,
         * where the sandbox could create it */
        inside = (path[0] != '/') || strncmp(cand, c->ws, nws) == 0 || strncmp(cand, rws, nw) == 0;
    }
    if (!inside) return true;
    if (plain && S_ISDIR(st.st_mode)) return git_dir(c, rel);
    snprintf(c->why, c->whylen,
             "%s names the git directory %.200s inside the workspace through a symlink, \"..\" "
             "or a missing path: the sandbox could re-point it; name it by its plain path",
             git, path);
    return false;
}

/* The plan's masks, in order (pl__masks_plan). */
static bool plan_all(plan_ctx *c) {
    bool ok = mask(c, ".peri", 'd', false, false);
    for (size_t i = 0; ok && i < sizeof top_files / sizeof *top_files; i++)
        ok = mask(c, top_files[i], 'f', false, false);
    if (!ok) return false;
    char git[PATH_MAX];
    snprintf(git, sizeof git, "%s/.git", c->ws);
    struct stat st;
    if (lstat(git, &st) != 0) return mask(c, ".git", 'd', false, false);
    if (S_ISLNK(st.st_mode)) {
        snprintf(c->why, c->whylen,
                 "%s is a symlink: git would follow it, and the sandbox cannot protect its "
                 "hooks and config; replace it with the directory or a gitdir file",
                 git);
        return false;
    }
    if (!S_ISDIR(st.st_mode)) /* a gitdir file (worktree, submodule): read-only */
        return mask(c, ".git", 'f', false, false) && gitdir_file(c, git);
    /* a directory without HEAD is no repository to git (a placeholder of another
     * process's run, an empty directory): read-only, so that it cannot become one */
    char head[PATH_MAX + 8];
    snprintf(head, sizeof head, "%s/HEAD", git);
    if (lstat(head, &st) != 0) return mask(c, ".git", 'd', false, false);
    return git_dir(c, ".git");
}

bool pl__masks_plan(pl_ctx *pc, pl_masks *m, const char *ws, const char *src_base,
                    const char *dst_base, bool links, char *why, size_t whylen) {
    memset(m, 0, sizeof *m);
    m->lock_fd = -1;
    if (!strcmp(ws, "/")) {
        snprintf(why, whylen, "refusing to bind \"/\" as a workspace");
        return false;
    }
    pthread_mutex_lock(&pc->mu);
    const char *src = sources(pc);
    int e = errno;
    if (src && (!(m->empty_file = join(src, "/", "mask-file")) ||
                !(m->empty_dir = join(src, "/", "mask-dir")) ||
                !(m->commondir = join(src, "/", "mask-commondir")))) {
        src = NULL;
        e = ENOMEM;
    }
    pthread_mutex_unlock(&pc->mu);
    if (!src || !(m->ws = strdup(ws))) {
        snprintf(why, whylen, "cannot prepare the control-file masks: %s",
                 strerror(src ? ENOMEM : e));
        return false;
    }
    struct stat wst;
    if (stat(ws, &wst) != 0) {
        snprintf(why, whylen, "workspace %s: %s", ws, strerror(errno));
        return false;
    }
    m->lock_fd = ws_lock_shared(ws);
    plan_ctx c = {pc,         m,   ws,     src_base, dst_base, wst.st_uid,
                  wst.st_gid, why, whylen, false,    links,    -1};
    bool ok = plan_all(&c);
    if (c.jfd >= 0) close(c.jfd);
    return ok;
}

bool pl__masks_git_ignore(const pl_masks *m, const char *home, uid_t uid, gid_t gid,
                          bool chown_them) {
    char names[PL_MASKS_MAX * (NAME_MAX + 2) + 1];
    size_t n = 0, wl = m->ws ? strlen(m->ws) : 0;
    names[0] = '\0';
    for (size_t i = 0; i < m->nheld; i++) {
        const char *rel = m->held[i] + wl + 1;
        struct stat st;
        /* the top-level placeholder files (an empty directory git never lists) */
        if (strlen(m->held[i]) <= wl || strchr(rel, '/') || lstat(m->held[i], &st) != 0 ||
            !S_ISREG(st.st_mode) || strlen(rel) > NAME_MAX)
            continue;
        n += (size_t)snprintf(names + n, sizeof names - n, "%s\n", rel);
    }
    if (!n) return true;
    char p[PATH_MAX + 32];
    const char *const parts[] = {"/.config", "/.config/git"};
    for (size_t i = 0; i < 2; i++) {
        snprintf(p, sizeof p, "%s%s", home, parts[i]);
        if ((mkdir(p, 0755) != 0 && errno != EEXIST) || (chown_them && chown(p, uid, gid) != 0))
            return false;
    }
    snprintf(p, sizeof p, "%s/.config/git/ignore", home);
    int fd = open(p, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd < 0) return false;
    bool ok = write(fd, names, n) == (ssize_t)n && (!chown_them || fchown(fd, uid, gid) == 0);
    return close(fd) == 0 && ok;
}

void pl__masks_args(const pl_masks *m, size_t from, size_t to, void (*add)(void *, const char *),
                    void *a) {
    for (size_t i = from; i < to && i < m->nmnt; i++) {
        add(a, m->mnt[i].rw ? "--bind" : "--ro-bind");
        add(a, m->mnt[i].src);
        add(a, m->mnt[i].dst);
    }
}

int pl__masks_apply(const pl_masks *m) {
    for (size_t i = 0; i < m->nmnt; i++) {
        /* this mount alone (no AT_RECURSIVE), the trailing name never followed */
        int t = (int)syscall(SYS_open_tree, AT_FDCWD, m->mnt[i].src,
                             OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_SYMLINK_NOFOLLOW);
        if (t < 0) return errno;
        struct pl_mount_attr a = {
            MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | (m->mnt[i].rw ? 0 : MOUNT_ATTR_RDONLY), 0, 0, 0};
        if (syscall(SYS_mount_setattr, t, "", AT_EMPTY_PATH, &a, sizeof a) != 0 ||
            syscall(SYS_move_mount, t, "", AT_FDCWD, m->mnt[i].dst, MOVE_MOUNT_F_EMPTY_PATH) != 0) {
            int e = errno;
            close(t);
            return e;
        }
        close(t);
    }
    return 0;
}

void pl__masks_release(pl_ctx *pc, pl_masks *m) {
    pthread_mutex_lock(&pc->mu);
    /* this run's shared lock becomes the exclusive one when no other run holds the
     * workspace (a conversion that fails drops it: this run is over anyway) */
    int idle = m->lock_fd;
    if (idle >= 0 && (!m->nheld || flock(idle, LOCK_EX | LOCK_NB) != 0)) {
        close(idle);
        idle = -1;
    }
    if (idle < 0 && m->nheld && m->lock_fd < 0) idle = ws_idle(m->ws);
    m->lock_fd = -1;
    /* deepest first: .git/config before .git */
    for (size_t i = m->nheld; i-- > 0;) {
        unhold(pc, m->held[i], idle >= 0);
        free(m->held[i]);
    }
    if (idle >= 0) close(idle);
    sweep(pc);
    pthread_mutex_unlock(&pc->mu);
    m->nheld = 0;
    for (size_t i = 0; i < m->nmnt; i++) {
        free(m->mnt[i].src);
        free(m->mnt[i].dst);
    }
    m->nmnt = 0;
    free(m->ws);
    free(m->empty_file);
    free(m->empty_dir);
    free(m->commondir);
    m->ws = m->empty_file = m->empty_dir = m->commondir = NULL;
}
