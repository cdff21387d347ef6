/*
 * fs.c — the file tools: read (offset/limit by lines), write (create/overwrite), edit
 * (exact-match replace, unique unless replace_all) and list (one directory).
 *
 * Every path is resolved once beneath the workspace root (confine.c) and the tool works
 * on the descriptor it got. read and edit refuse FIFOs, devices and hard-linked files.
 * write and edit never change a file in place: the new content goes to a temporary file
 * beside it (mode and owner kept, fsync'd) that is renamed over it, so a failure half-way
 * leaves the old file whole. Results are bounded by MAX_FILE (an edit with replace_all
 * cannot amplify a small input into a huge file).
 */
#include "tools_int.h"
#include "peri/place.h"

#include <limits.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAX_FILE           (32u << 20) /* files larger than this are not loaded */
#define DIFF_MAX           (1u << 20)  /* oldText/newText above this are left out of the diff */
#define DEFAULT_READ_LINES 2000
#define MAX_LIST           2000

static ptl_status bad_input(ptl_result *r, const char *tool, const char *what) {
    return ptl__error(r, "%s: %s", tool, what);
}

/* A tool error for a confined-file status (ptl_fstatus). */
static ptl_status status_error(ptl_result *r, const char *path, ptl_fstatus s) {
    switch (s) {
    case PTL_F_OK: break;
    case PTL_F_MISSING: return ptl__error(r, "no such file or directory: %s", path);
    case PTL_F_ESCAPES: return ptl__error(r, "path escapes the workspace: %s", path);
    case PTL_F_IS_DIR: return ptl__error(r, "is a directory, not a file: %s", path);
    case PTL_F_NOT_REGULAR: return ptl__error(r, "not a regular file: %s", path);
    case PTL_F_HARDLINK:
        return ptl__error(r,
                          "refused: %s has other hard links, which may lie outside the "
                          "workspace",
                          path);
    case PTL_F_TOO_LARGE:
        return ptl__error(r, "file too large (over %u MiB): %s", MAX_FILE >> 20, path);
    case PTL_F_NOMEM: return PTL_ERR_NOMEM;
    case PTL_F_PROTECTED: return ptl__error(r, "%s: %s", ptl_fstatus_text(s), path);
    case PTL_F_IO: break;
    }
    return ptl__error(r, "cannot read %s: %s", path, strerror(errno));
}

/* The workspace root descriptor and the path relative to it. On failure the tool error is
 * in r (returned through *st) and -1 is returned. */
static int open_root(const ptl_ctx *ctx, ptl_result *r, const char *path, char **rel,
                     ptl_status *st) {
    *rel = NULL;
    if (!*path) {
        *st = ptl__error(r, "empty path");
        return -1;
    }
    int rc = ptl__rel(ctx->cwd, path, rel);
    if (rc < 0) {
        *st = rc == -ENOMEM ? PTL_ERR_NOMEM : status_error(r, path, ptl__errno_status(-rc));
        return -1;
    }
    int fd = ptl__root_fd(ctx->cwd);
    if (fd < 0) {
        free(*rel);
        *rel = NULL;
        *st = ptl__error(r, "the workspace directory is not accessible: %s", ctx->cwd);
        return -1;
    }
    return fd;
}

/* True when rel (beneath the root) lies in a git directory at any depth: a component
 * named .git (a nested repository, a submodule), or a directory that is a git
 * directory by its contents (one made with --separate-git-dir, a bare repository, a
 * worktree's). Judged as git does, and of any file type, since git follows symlinks:
 * HEAD, and objects and refs or a commondir (which holds them elsewhere). Git runs a
 * repository's hooks and config on the host, so no tool writes there
 * (docs/security.md, "Git on the host"). */
static bool in_git_dir(int rootfd, const char *rel) {
    char part[PATH_MAX];
    size_t n = strlen(rel);
    if (n >= sizeof part) return true;
    for (size_t i = 0; i <= n; i++) {
        if (rel[i] != '/' && rel[i] != '\0') continue;
        size_t start = i;
        while (start > 0 && rel[start - 1] != '/')
            start--;
        if (i - start == 4 && memcmp(rel + start, ".git", 4) == 0) return true;
        if (rel[i] == '\0') break; /* the last component is the file itself */
        memcpy(part, rel, i);
        char probe[PATH_MAX + 16];
        struct stat st;
        snprintf(probe, sizeof probe, "%.*s/HEAD", (int)i, part);
        if (fstatat(rootfd, probe, &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
        snprintf(probe, sizeof probe, "%.*s/commondir", (int)i, part);
        if (fstatat(rootfd, probe, &st, AT_SYMLINK_NOFOLLOW) == 0) return true;
        snprintf(probe, sizeof probe, "%.*s/objects", (int)i, part);
        bool objects = fstatat(rootfd, probe, &st, AT_SYMLINK_NOFOLLOW) == 0;
        snprintf(probe, sizeof probe, "%.*s/refs", (int)i, part);
        if (objects && fstatat(rootfd, probe, &st, AT_SYMLINK_NOFOLLOW) == 0) return true;
    }
    return false;
}

/* The real path of an open descriptor, from /proc/self/fd. */
static bool fd_real(int fd, char out[PATH_MAX]) {
    char lp[64];
    snprintf(lp, sizeof lp, "/proc/self/fd/%d", fd);
    ssize_t n = readlink(lp, out, PATH_MAX - 1);
    if (n <= 0) return false;
    out[n] = '\0';
    return out[0] == '/';
}

/* True when the resolved target (the parent directory's descriptor plus a name) is one of
 * the agent's control files that no tool may write: anything in .peri or .git, .mcp.json (the
 * guides stay writable: /init writes AGENTS.md, and every write asks permission). The
 * real paths of the descriptors are compared, so a symlink or ".." that leads into
 * .git is caught as well as a plain path. */
static bool control_target(int rootfd, int dirfd, const char *name) {
    char root[PATH_MAX], dir[PATH_MAX];
    if (!fd_real(rootfd, root) || !fd_real(dirfd, dir)) return true; /* cannot tell: refuse */
    size_t n = strlen(root);
    if (strncmp(dir, root, n) != 0 || (dir[n] != '\0' && dir[n] != '/')) return true;
    char rel[PATH_MAX * 2];
    snprintf(rel, sizeof rel, "%s%s%s", dir[n] ? dir + n + 1 : "", dir[n] ? "/" : "", name);
    if (pl_is_control_path(rel) && (strncmp(rel, ".peri", 5) == 0 || strncmp(rel, ".git", 4) == 0 ||
                                    strcmp(rel, ".mcp.json") == 0))
        return true;
    return in_git_dir(rootfd, rel);
}

/* The refusal of a write to a control file (control_target). */
static ptl_status control_error(ptl_result *r, const char *tool, const char *path) {
    return ptl__error(r,
                      "%s: %s is one of the agent's control files (.peri, .mcp.json, or inside "
                      "a git directory at any depth), which tools never write; the user edits "
                      "them",
                      tool, path);
}

/* The length of dir without trailing '/' ("/" stays 1). */
static size_t trimmed(const char *dir) {
    size_t n = strlen(dir);
    while (n > 1 && dir[n - 1] == '/')
        n--;
    return n;
}

/* True when path (absolute, canonical) is dir or lies inside it; strictly: inside only. */
static bool within(const char *path, const char *dir, bool strictly) {
    size_t n = trimmed(dir);
    if (n == 1 && dir[0] == '/') return !strictly || path[1] != '\0';
    if (strncmp(path, dir, n) != 0) return false;
    return path[n] == '/' || (!strictly && path[n] == '\0');
}

const char *ptl_protected_dir(const pl_policy *pol, const char *root, const char *real) {
    if (!pol || !real) return NULL;
    for (size_t k = 0; k < pol->nprotect + pol->nprotect_around; k++) {
        bool whole = k < pol->nprotect;
        const char *p = whole ? pol->protect[k] : pol->protect_around[k - pol->nprotect];
        if (!p || p[0] != '/') continue;
        char rp[PATH_MAX];
        const char *forms[2] = {p, realpath(p, rp) ? rp : NULL};
        for (int i = 0; i < 2; i++) {
            if (!forms[i] || !within(real, forms[i], false)) continue;
            /* the session store's directory may hold the whole workspace, as in the
             * sandbox: then only a workspace that is the store's directory is refused */
            if (!whole && root && within(root, forms[i], true)) continue;
            return p;
        }
    }
    return NULL;
}

/* The protected directories of the session's sandbox policy, for write and edit. */
typedef struct prot_check {
    const pl_policy *pol;
    char root[PATH_MAX]; /* the workspace's real path */
    const char *hit;     /* the protected dir a refused target lies in */
} prot_check;

/* True when dirfd/name lies in none of pc's protected directories (a ptl__mkdir_guard,
 * asked before each missing directory is made, and for the target itself). */
static bool prot_may(void *ud, int dirfd, const char *name) {
    prot_check *pc = ud;
    char dir[PATH_MAX], path[PATH_MAX * 2];
    if (!fd_real(dirfd, dir)) { /* cannot tell: refuse */
        pc->hit = "(a directory whose real path cannot be read)";
        return false;
    }
    snprintf(path, sizeof path, "%s/%s", strcmp(dir, "/") ? dir : "", name);
    pc->hit = ptl_protected_dir(pc->pol, pc->root, path);
    return pc->hit == NULL;
}

/* The refusal of a write into a protected directory (prot_may). */
static ptl_status protected_error(ptl_result *r, const char *tool, const char *path,
                                  const char *dir) {
    return ptl__error(r,
                      "%s: %s: %s lies in %s, which holds the host's own state (the user's "
                      "Peri settings and trust decisions, the code cache, the room's builds or "
                      "the session store); tools never write there, even inside the "
                      "workspace; the user changes it",
                      tool, ptl_fstatus_text(PTL_F_PROTECTED), path, dir);
}

/* A tool error for a -errno from target resolution. */
static ptl_status target_error(ptl_result *r, const char *path, int neg) {
    if (neg == -ENOMEM) return PTL_ERR_NOMEM;
    if (neg == -EISDIR) return status_error(r, path, PTL_F_IS_DIR);
    if (neg == -ENOTDIR) return ptl__error(r, "not a directory: a parent of %s", path);
    ptl_fstatus s = ptl__errno_status(-neg);
    if (s == PTL_F_IO) return ptl__error(r, "cannot write %s: %s", path, strerror(-neg));
    return status_error(r, path, s);
}

/* ---------------------------------------------------------------- the editor's view
 *
 * The ACP client reads and writes a file by its path name: it resolves that name again
 * and follows symlinks. That is safe only while nothing can change the directories on the
 * way. Sandboxed code writes the workspace on the host, and every sandboxed run (a shell
 * call, a background task, a run of another session or process) holds a shared flock(2)
 * of its workspace directory while it runs (src/place/masks.c). So the client is asked
 * only when, just before the request (and, for a read, again after it): every directory
 * from "/" down to the file's opens without following a symlink and none is locked by
 * anyone (an exclusive lock tried without waiting, released at once), and the path still
 * names the directory (and file) the tool resolved. Otherwise the tool uses the disk
 * through its descriptors, as without a client. The client gets the real path of what
 * was resolved, never the model's string. The session adds its own background tasks:
 * its ptl_client_fs answers "not offered" while one lives (controller.c). */
typedef struct client_at {
    bool ok;             /* false: the disk is used */
    char path[PATH_MAX]; /* the real path handed to the client */
    size_t dirlen;       /* path[0, dirlen) is its directory ("" for "/") */
    struct stat dir, file;
    bool has_dir, has_file;
} client_at;

/* w = dir/name, dir a real path ("/..."). */
static void at_set(client_at *w, const char *dir, const char *name) {
    size_t d = strcmp(dir, "/") ? strlen(dir) : 0;
    w->ok = *name && !strchr(name, '/') && d + 1 + strlen(name) < sizeof w->path;
    if (!w->ok) return;
    memcpy(w->path, dir, d);
    w->path[d] = '/';
    strcpy(w->path + d + 1, name);
    w->dirlen = d;
}

/* The open file fd (stat st): read. */
static void at_file(client_at *w, const ptl_ctx *ctx, int fd, const struct stat *st) {
    char real[PATH_MAX];
    *w = (client_at){.file = *st, .has_file = true};
    if (!ctx->client_fs || !fd_real(fd, real)) return;
    char *slash = strrchr(real, '/');
    *slash = '\0';
    at_set(w, *real ? real : "/", slash + 1);
}

/* name in the directory dirfd (st: the file there, or NULL): write and edit. A file with
 * other hard links is never the client's: it would write through them, where the disk
 * route's rename breaks the link. */
static void at_name(client_at *w, const ptl_ctx *ctx, int dirfd, const char *name,
                    const struct stat *st) {
    char real[PATH_MAX];
    *w = (client_at){.has_file = st != NULL};
    if (st) w->file = *st;
    if (!ctx->client_fs || (st && st->st_nlink > 1) || !fd_real(dirfd, real) ||
        fstat(dirfd, &w->dir) != 0)
        return;
    w->has_dir = true;
    at_set(w, real, name);
}

/* The next directory of the walk, never through a symlink. *probe: it could be locked
 * (a directory this user cannot read cannot be locked by this user's runs either). */
static int walk_dir(int fd, const char *name, bool *probe) {
    int f = O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC;
    int d = openat(fd, name, O_RDONLY | f);
    *probe = d >= 0;
    if (d < 0 && errno == EACCES) d = openat(fd, name, O_PATH | f);
    return d;
}

/* No run holds the directory fd. */
static bool unlocked(int fd) {
    if (flock(fd, LOCK_EX | LOCK_NB) != 0) return false;
    flock(fd, LOCK_UN);
    return true;
}

/* True when the client may open w->path by name now (see above). */
static bool quiet(const client_at *w) {
    if (!w->ok) return false;
    char dir[PATH_MAX];
    memcpy(dir, w->path, w->dirlen);
    dir[w->dirlen] = '\0';
    int fd = open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    bool ok = fd >= 0 && unlocked(fd);
    for (char *s = w->dirlen ? dir + 1 : NULL; ok && s;) {
        char *slash = strchr(s, '/');
        if (slash) *slash = '\0';
        bool probe = false;
        int next = !*s || !strcmp(s, ".") || !strcmp(s, "..") ? -1 : walk_dir(fd, s, &probe);
        close(fd);
        fd = next;
        ok = fd >= 0 && (!probe || unlocked(fd));
        s = slash ? slash + 1 : NULL;
    }
    struct stat st;
    if (ok && w->has_dir)
        ok = fstat(fd, &st) == 0 && st.st_dev == w->dir.st_dev && st.st_ino == w->dir.st_ino;
    if (ok && w->has_file)
        ok = fstatat(fd, w->path + w->dirlen + 1, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
             st.st_dev == w->file.st_dev && st.st_ino == w->file.st_ino;
    if (fd >= 0) close(fd);
    return ok;
}

/* The editor's view of the file w when the client offers one and may be asked (quiet);
 * otherwise *data stays as read from disk. */
static ptl_fstatus client_read(const ptl_ctx *ctx, const client_at *w, char **data, size_t *len) {
    const ptl_client_fs *c = ctx->client_fs;
    if (!c || !(c->read || c->read_cancel) || !quiet(w)) return PTL_F_OK;
    char *d = NULL;
    size_t n = 0;
    int rc = c->read_cancel ? c->read_cancel(c->ctx, w->path, &d, &n, ctx->cancel)
                            : c->read(c->ctx, w->path, &d, &n);
    if (rc == 1) return PTL_F_OK; /* not offered: the disk's content stands */
    if (rc != 0) return errno == ENOENT ? PTL_F_MISSING : PTL_F_IO;
    if (!quiet(w)) { /* a run began meanwhile: the disk's content stands */
        free(d);
        return PTL_F_OK;
    }
    if (n > MAX_FILE) {
        free(d);
        return PTL_F_TOO_LARGE;
    }
    free(*data);
    *data = d;
    *len = n;
    return PTL_F_OK;
}

/* a write of w through the ACP client. -1: not offered or not to be asked now (write the
 * disk), 0: written, else an errno value. */
static int client_write(const ptl_ctx *ctx, const client_at *w, const char *data, size_t len) {
    const ptl_client_fs *c = ctx->client_fs;
    if (!c || !(c->write || c->write_cancel) || !quiet(w)) return -1;
    int rc = c->write_cancel ? c->write_cancel(c->ctx, w->path, data, len, ctx->cancel)
                             : c->write(c->ctx, w->path, data, len);
    if (rc == 1) return -1;
    return rc == 0 ? 0 : errno ? errno : EIO;
}

static bool cancelled(const ptl_ctx *ctx) {
    return ctx->cancel && atomic_load(ctx->cancel);
}

ptl_status ptl__read(pj_t *in, const ptl_ctx *ctx, ptl_result *r) {
    bool bad = false;
    const char *path = ptl__str(in, "path", &bad);
    long long offset = ptl__int(in, "offset", 1, &bad);
    long long limit = ptl__int(in, "limit", DEFAULT_READ_LINES, &bad);
    if (bad || !path)
        return bad_input(r, "read",
                         "needs \"path\" (string), optional \"offset\"/\"limit\" "
                         "(integers)");
    if (offset < 1 || limit < 1) return bad_input(r, "read", "offset and limit must be >= 1");
    ptl_status st = PTL_OK;
    char *rel;
    int rootfd = open_root(ctx, r, path, &rel, &st);
    if (rootfd < 0) return st;
    int fd;
    struct stat sb;
    char *data = NULL, *abs = NULL;
    size_t len;
    ptl_fstatus fs = ptl__open_regular(rootfd, rel, &fd, &sb);
    if (fs == PTL_F_OK) {
        fs = ptl__read_fd(fd, MAX_FILE, false, &data, &len);
        abs = ptl__fd_path(fd, ctx->cwd, rel);
        client_at w;
        at_file(&w, ctx, fd, &sb);
        close(fd);
        if (fs == PTL_F_OK && !abs) fs = PTL_F_NOMEM;
        if (fs == PTL_F_OK) fs = client_read(ctx, &w, &data, &len);
    }
    close(rootfd);
    free(rel);
    if (fs != PTL_F_OK) {
        free(data);
        free(abs);
        return status_error(r, path, fs);
    }
    if (ptl__is_binary(data, len)) {
        free(data);
        st = ptl__error(r, "binary file, not shown: %s", path);
        free(abs);
        return st;
    }
    ptl__out o;
    ptl__out_init(&o, ctx->max_output);
    long long line = 1, shown = 0, total = 0;
    const char *p = data, *end = data + len;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *next = nl ? nl + 1 : end;
        if (line >= offset && shown < limit) {
            ptl__out_add(&o, p, (size_t)(next - p));
            shown++;
        }
        total++;
        line++;
        p = next;
    }
    if (len == 0) ptl__out_add(&o, "", 0);
    if (offset > total && total > 0) {
        ptl__out_addf(&o, "[offset %lld is past the end: the file has %lld lines]", offset, total);
    } else if (offset + shown - 1 < total) {
        if (o.len && o.p[o.len - 1] != '\n') ptl__out_add(&o, "\n", 1);
        ptl__out_addf(&o, "[showing lines %lld-%lld of %lld; use offset=%lld to read more]", offset,
                      offset + shown - 1, total, offset + shown);
    }
    free(data);
    if (o.truncated) /* the byte bound hit first: say so where the model reads it */
        r->truncated = true;
    st = ptl__finish(r, &o, false);
    if (st == PTL_OK) st = ptl__text_content(r);
    if (st == PTL_OK) st = ptl__location(r, abs, offset);
    free(abs);
    return st;
}

/* ACP diff content for a whole-file change. */
static ptl_status diff_content(ptl_result *r, const char *abs, const char *old_text, size_t old_len,
                               const char *new_text, size_t new_len) {
    pj_t *d = pj_pack("{s:s, s:s}", "type", "diff", "path", abs);
    if (!d) return PTL_ERR_NOMEM;
    if (new_len <= DIFF_MAX)
        pj_object_set_new(d, "newText", pj_stringn(new_text, new_len));
    else
        pj_object_set_new(d, "newText", pj_string("(too large to show)"));
    if (old_text)
        pj_object_set_new(d, "oldText",
                          old_len <= DIFF_MAX ? pj_stringn(old_text, old_len)
                                              : pj_string("(too large)"));
    else
        pj_object_set_new(d, "oldText", pj_null());
    pj_t *arr = pj_array();
    if (!arr || pj_array_append_new(arr, d)) {
        pj_decref(arr);
        return PTL_ERR_NOMEM;
    }
    free(r->content_json);
    r->content_json = pj_dumps(arr, PJ_COMPACT);
    pj_decref(arr);
    return r->content_json ? PTL_OK : PTL_ERR_NOMEM;
}

/* The existing file at dirfd/name, for write and edit: *fd (-1 when there is none), its
 * stat. Symlinks at name were resolved by ptl__target_at; one raced in now is refused. */
static ptl_fstatus open_existing(int dirfd, const char *name, int *fd, struct stat *st) {
    *fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    if (*fd < 0) return errno == ENOENT ? PTL_F_MISSING : ptl__errno_status(errno);
    ptl_fstatus s = ptl__check_regular(*fd, st);
    if (s != PTL_F_OK && s != PTL_F_HARDLINK) {
        close(*fd);
        *fd = -1;
    }
    return s;
}

/* The file a write or edit changes: the workspace root, the path below it, the
 * directory that holds the file and its last name, the file's descriptor while open and
 * its display path. All owned; target_release closes and frees what is set. */
typedef struct target {
    int rootfd, dirfd, fd;
    char *rel, *name, *abs;
} target;

/* Opens the root and reaches the file write or edit (verb) changes (create: missing
 * directories are made). 0, or -1 with *st and r saying why (a bad path, or one of the
 * workspace's control files). Release t whatever it returns. */
static int open_target(const ptl_ctx *ctx, ptl_result *r, const char *path, bool create,
                       const char *verb, target *t, ptl_status *st) {
    *t = (target){.rootfd = -1, .dirfd = -1, .fd = -1};
    t->rootfd = open_root(ctx, r, path, &t->rel, st);
    if (t->rootfd < 0) return -1;
    /* the host's protected directories, where the workspace contains one: refused before
     * any missing directory is made in them, and as the target's real place */
    prot_check pc = {.pol = ctx->sandbox ? ctx->sandbox->policy : NULL};
    bool guarded = pc.pol && pc.pol->nprotect + pc.pol->nprotect_around > 0;
    if (guarded && !fd_real(t->rootfd, pc.root)) {
        *st = ptl__error(r, "the workspace directory is not accessible: %s", ctx->cwd);
        return -1;
    }
    ptl__mkdir_guard guard = {prot_may, &pc};
    int rc =
        ptl__target_at(t->rootfd, t->rel, create, guarded ? &guard : NULL, &t->dirfd, &t->name);
    if (rc == -EACCES && pc.hit) {
        *st = protected_error(r, verb, path, pc.hit);
        return -1;
    }
    if (rc < 0) {
        *st = target_error(r, path, rc);
        return -1;
    }
    if (control_target(t->rootfd, t->dirfd, t->name)) {
        *st = control_error(r, verb, path);
        return -1;
    }
    if (guarded && !prot_may(&pc, t->dirfd, t->name)) {
        *st = protected_error(r, verb, path, pc.hit);
        return -1;
    }
    return 0;
}

static void target_release(target *t) {
    if (t->fd >= 0) close(t->fd);
    if (t->dirfd >= 0) close(t->dirfd);
    if (t->rootfd >= 0) close(t->rootfd);
    free(t->abs);
    free(t->name);
    free(t->rel);
}

static char *join_path(int dirfd, const ptl_ctx *ctx, const char *name) {
    char *dir = ptl__fd_path(dirfd, ctx->cwd, "."), *out = NULL;
    if (dir && asprintf(&out, "%s/%s", dir, name) < 0) out = NULL;
    free(dir);
    return out;
}

ptl_status ptl__write(pj_t *in, const ptl_ctx *ctx, ptl_result *r) {
    bool bad = false;
    const char *path = ptl__str(in, "path", &bad);
    pj_t *cv = pj_object_get(in, "content");
    if (bad || !path || !pj_is_string(cv))
        return bad_input(r, "write", "needs \"path\" and \"content\" (strings)");
    const char *content = pj_string_value(cv);
    size_t clen = pj_string_length(cv);
    if (clen > MAX_FILE)
        return ptl__error(r, "write: content of %zu bytes is over the %u MiB limit: %s", clen,
                          MAX_FILE >> 20, path);
    ptl_status st = PTL_OK;
    char *old = NULL;
    size_t old_len = 0;
    target t;
    if (open_target(ctx, r, path, true, "write", &t, &st)) goto done;
    struct stat sb;
    ptl_fstatus fs = open_existing(t.dirfd, t.name, &t.fd, &sb);
    bool exists = fs == PTL_F_OK || fs == PTL_F_HARDLINK;
    if (!exists && fs != PTL_F_MISSING) {
        st = status_error(r, path, fs);
        goto done;
    }
    /* the old text goes into the diff, unless another name of the file may be outside */
    if (fs == PTL_F_OK && ptl__read_fd(t.fd, MAX_FILE, false, &old, &old_len) != PTL_F_OK) {
        free(old);
        old = NULL;
        old_len = 0;
    }
    if (t.fd >= 0) close(t.fd);
    t.fd = -1;
    t.abs = join_path(t.dirfd, ctx, t.name);
    if (!t.abs) {
        st = PTL_ERR_NOMEM;
        goto done;
    }
    client_at w;
    at_name(&w, ctx, t.dirfd, t.name, exists ? &sb : NULL);
    if (exists && old && client_read(ctx, &w, &old, &old_len) != PTL_F_OK) {
        free(old);
        old = NULL;
        old_len = 0;
    }
    int werr = client_write(ctx, &w, content, clen);
    if (werr < 0)
        werr = ptl__replace_at(t.dirfd, t.name, content, clen, exists ? &sb : NULL, ctx->cancel);
    if (werr) {
        if (werr == ECANCELED) {
            st = ptl__error(r, "cancelled: %s was not changed", path);
            if (st == PTL_OK) st = PTL_CANCELLED;
        } else {
            st = ptl__error(r, "cannot write %s: %s", path, strerror(werr));
        }
        goto done;
    }
    ptl__out o;
    ptl__out_init(&o, ctx->max_output);
    ptl__out_addf(&o, "%s %s (%zu bytes)", exists ? "Overwrote" : "Created", path, clen);
    st = ptl__finish(r, &o, false);
    if (st == PTL_OK) {
        static const char hidden[] = "(not shown: the file has other hard links)";
        const char *ot = !exists ? NULL : old ? old : hidden;
        st = diff_content(r, t.abs, ot, old ? old_len : sizeof hidden - 1, content, clen);
    }
    if (st == PTL_OK) st = ptl__location(r, t.abs, 0);
done:
    target_release(&t);
    free(old);
    return st;
}

/* Occurrences of needle in hay (non-overlapping). */
static size_t count_occurrences(const char *hay, size_t hlen, const char *needle, size_t nlen) {
    size_t count = 0;
    const char *p = hay, *end = hay + hlen;
    while (p + nlen <= end) {
        const char *hit = memmem(p, (size_t)(end - p), needle, nlen);
        if (!hit) break;
        count++;
        p = hit + nlen;
    }
    return count;
}

ptl_status ptl__edit(pj_t *in, const ptl_ctx *ctx, ptl_result *r) {
    bool bad = false;
    const char *path = ptl__str(in, "path", &bad);
    pj_t *ov = pj_object_get(in, "old_string"), *nv = pj_object_get(in, "new_string");
    bool all = ptl__bool(in, "replace_all", false, &bad);
    if (bad || !path || !pj_is_string(ov) || !pj_is_string(nv))
        return bad_input(r, "edit",
                         "needs \"path\", \"old_string\", \"new_string\" (strings) "
                         "and optional \"replace_all\" (boolean)");
    const char *olds = pj_string_value(ov), *news = pj_string_value(nv);
    size_t olen = pj_string_length(ov), nlen = pj_string_length(nv);
    if (olen == 0) return bad_input(r, "edit", "old_string is empty; use write to create a file");
    if (olen == nlen && memcmp(olds, news, olen) == 0)
        return bad_input(r, "edit", "old_string and new_string are identical");
    ptl_status st = PTL_OK;
    char *data = NULL, *result = NULL;
    size_t len = 0;
    target t;
    if (open_target(ctx, r, path, false, "edit", &t, &st)) goto done;
    struct stat sb;
    ptl_fstatus fs = open_existing(t.dirfd, t.name, &t.fd, &sb);
    if (fs == PTL_F_OK) fs = ptl__read_fd(t.fd, MAX_FILE, false, &data, &len);
    client_at at = {.ok = false};
    if (fs == PTL_F_OK) {
        at_name(&at, ctx, t.dirfd, t.name, &sb);
        fs = client_read(ctx, &at, &data, &len); /* the editor's buffer */
    }
    if (fs != PTL_F_OK) {
        st = status_error(r, path, fs);
        goto done;
    }
    size_t n = count_occurrences(data, len, olds, olen);
    if (n == 0) {
        st = ptl__error(r,
                        "old_string not found in %s (it must match exactly, including "
                        "whitespace and indentation)",
                        path);
        goto done;
    }
    if (n > 1 && !all) {
        st = ptl__error(r,
                        "old_string occurs %zu times in %s; add surrounding context to make "
                        "it unique, or set replace_all",
                        n, path);
        goto done;
    }
    /* the result is bounded like a write: no amplification into a huge file */
    size_t grow = 0, out_len = 0;
    if (__builtin_mul_overflow(n, nlen, &grow) ||
        __builtin_add_overflow(len - n * olen, grow, &out_len) || out_len > MAX_FILE) {
        st = ptl__error(r,
                        "edit: %zu replacements would make %s larger than the %u MiB limit; "
                        "nothing was changed",
                        n, path, MAX_FILE >> 20);
        goto done;
    }
    result = malloc(out_len + 1);
    if (!t.abs) t.abs = join_path(t.dirfd, ctx, t.name);
    if (!result || !t.abs) {
        st = PTL_ERR_NOMEM;
        goto done;
    }
    const char *p = data, *end = data + len;
    char *w = result;
    for (size_t k = 0; k < n; k++) {
        const char *hit = memmem(p, (size_t)(end - p), olds, olen);
        memcpy(w, p, (size_t)(hit - p));
        w += hit - p;
        memcpy(w, news, nlen);
        w += nlen;
        p = hit + olen;
    }
    memcpy(w, p, (size_t)(end - p));
    result[out_len] = '\0';
    close(t.fd);
    t.fd = -1;
    int werr = client_write(ctx, &at, result, out_len);
    if (werr < 0) werr = ptl__replace_at(t.dirfd, t.name, result, out_len, &sb, ctx->cancel);
    if (werr) {
        if (werr == ECANCELED) {
            st = ptl__error(r, "cancelled: %s was not changed", path);
            if (st == PTL_OK) st = PTL_CANCELLED;
        } else {
            st = ptl__error(r, "cannot write %s: %s (the file was not changed)", path,
                            strerror(werr));
        }
        goto done;
    }
    ptl__out o;
    ptl__out_init(&o, ctx->max_output);
    ptl__out_addf(&o, "Edited %s: %zu replacement%s", path, n, n == 1 ? "" : "s");
    st = ptl__finish(r, &o, false);
    if (st == PTL_OK) st = diff_content(r, t.abs, data, len, result, out_len);
    if (st == PTL_OK) st = ptl__location(r, t.abs, 0);
done:
    target_release(&t);
    free(result);
    free(data);
    return st;
}

static int cmp_str(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

ptl_status ptl__list(pj_t *in, const ptl_ctx *ctx, ptl_result *r) {
    bool bad = false;
    const char *path = ptl__str(in, "path", &bad);
    if (bad) return bad_input(r, "list", "\"path\" must be a string");
    if (!path) path = ".";
    ptl_status st = PTL_OK;
    char *rel;
    int rootfd = open_root(ctx, r, path, &rel, &st);
    if (rootfd < 0) return st;
    int fd = ptl__open_beneath(rootfd, rel, O_RDONLY | O_DIRECTORY, 0, 0);
    close(rootfd);
    if (fd < 0) {
        if (fd == -ENOTDIR) {
            /* a file, or a parent that is not a directory */
            st = ptl__error(r, "not a directory: %s", path);
        } else {
            ptl_fstatus fs = ptl__errno_status(-fd);
            st = fs == PTL_F_IO ? ptl__error(r, "cannot list %s: %s", path, strerror(-fd))
                                : status_error(r, path, fs);
        }
        free(rel);
        return st;
    }
    char *abs = ptl__fd_path(fd, ctx->cwd, rel);
    free(rel);
    int lfd = dup(fd);
    DIR *d = lfd >= 0 ? fdopendir(lfd) : NULL;
    if (!d || !abs) {
        if (lfd >= 0 && !d) close(lfd);
        st = abs ? ptl__error(r, "cannot list %s: %s", path, strerror(errno)) : PTL_ERR_NOMEM;
        close(fd);
        free(abs);
        return st;
    }
    char **names = NULL;
    size_t n = 0, cap = 0, total = 0;
    bool stop = false;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
        if ((total & 1023) == 0 && cancelled(ctx)) {
            stop = true;
            break;
        }
        total++;
        if (n >= MAX_LIST) continue;
        if (n == cap) {
            cap = cap ? cap * 2 : 64;
            char **nn = realloc(names, cap * sizeof *nn);
            if (!nn) {
                st = PTL_ERR_NOMEM;
                break;
            }
            names = nn;
        }
        unsigned char type = e->d_type;
        if (type == DT_UNKNOWN) {
            struct stat sb;
            if (fstatat(fd, e->d_name, &sb, AT_SYMLINK_NOFOLLOW) == 0)
                type = S_ISDIR(sb.st_mode) ? DT_DIR : S_ISLNK(sb.st_mode) ? DT_LNK : DT_REG;
        }
        if (asprintf(&names[n], "%s%s", e->d_name,
                     type == DT_DIR   ? "/"
                     : type == DT_LNK ? "@"
                                      : "") < 0) {
            st = PTL_ERR_NOMEM;
            break;
        }
        n++;
    }
    closedir(d);
    close(fd);
    if (st == PTL_OK) {
        if (n > 1) qsort(names, n, sizeof *names, cmp_str); /* qsort(NULL, 0) is UB */
        ptl__out o;
        ptl__out_init(&o, ctx->max_output);
        for (size_t i = 0; i < n; i++) {
            ptl__out_add(&o, names[i], strlen(names[i]));
            ptl__out_add(&o, "\n", 1);
        }
        if (total == 0 && !stop) ptl__out_addf(&o, "(empty directory)");
        if (total > n) ptl__out_addf(&o, "[%zu more entries not shown]\n", total - n);
        st = ptl__finish(r, &o, false);
        if (st == PTL_OK) st = ptl__text_content(r);
        if (st == PTL_OK) st = ptl__location(r, abs, 0);
        if (st == PTL_OK && stop) st = PTL_CANCELLED;
    }
    pb_strv_free(names, n);
    free(abs);
    return st;
}
