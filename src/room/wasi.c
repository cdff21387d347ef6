/*
 * wasi.c — guest ABI 2: the full wasi_snapshot_preview1 function set over the room's
 * in-memory file system. Descriptors 0/1/2 are an empty stdin and the counted
 * stdout/stderr (shown as character devices, so wasi-libc line-buffers stdout); 3 is
 * the preopened "/". argv[0] is "/程序.wasm", the environment is empty. Paths resolve
 * like the reference FS (normalised, ".." never above "/", directories implicit;
 * creating a file creates its parents). Clocks and random_get are real, or with the
 * deterministic option a fixed function of (digest, input): see docs/room.md.
 * Sockets do not exist in the room (ENOTSOCK). Symbolic and hard links do not exist
 * in a contract run (ENOTSUP); beyond the contract (peri run --file) the in-memory FS
 * has them: paths are then walked component by component (walk), symbolic links
 * spliced in, ".." above "/" refused, absolute paths and link targets refused.
 * For `peri run` (docs/wasi.md) the options add an environment, argv[0], a connected
 * stdin, --invoke, and host directories (K_HDIR/K_HFILE descriptors, every path
 * resolved beneath them by hostdir.c). Rights are enforced on every descriptor: a
 * directory never has read/write/seek rights, a dropped right stays dropped.
 */
#include "hostdir.h"
#include "capability.h"
#include "room_int.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define WASI_MODULE "wasi_snapshot_preview1"

enum {
    E_SUCCESS = 0,
    E_2BIG = 1,
    E_BADF = 8,
    E_BUSY = 10,
    E_EXIST = 20,
    E_FAULT = 21,
    E_ILSEQ = 25,
    E_INVAL = 28,
    E_ISDIR = 31,
    E_MFILE = 33,
    E_NOENT = 44,
    E_NOMEM = 48,
    E_NOSPC = 51,
    E_NOSYS = 52,
    E_NOTDIR = 54,
    E_NOTEMPTY = 55,
    E_NOTSOCK = 57,
    E_NOTSUP = 58,
    E_OVERFLOW = 61,
    E_SPIPE = 70,
    E_NOTCAPABLE = 76,
};
enum { FT_UNKNOWN = 0, FT_CHAR = 2, FT_DIR = 3, FT_FILE = 4, FT_SYMLINK = 7 };
enum { O_CREAT_ = 1, O_DIRECTORY_ = 2, O_EXCL_ = 4, O_TRUNC_ = 8 };
enum { FDF_APPEND = 1, FDF_NONBLOCK = 4 };
enum { FST_ATIM = 1, FST_ATIM_NOW = 2, FST_MTIM = 4, FST_MTIM_NOW = 8 };

#define R_FD_DATASYNC     (1ull << 0)
#define R_FD_READ         (1ull << 1)
#define R_FD_SEEK         (1ull << 2)
#define R_FD_SET_FLAGS    (1ull << 3)
#define R_FD_SYNC         (1ull << 4)
#define R_FD_TELL         (1ull << 5)
#define R_FD_WRITE        (1ull << 6)
#define R_FD_ADVISE       (1ull << 7)
#define R_FD_ALLOCATE     (1ull << 8)
#define R_MKDIR           (1ull << 9)
#define R_CREATE_FILE     (1ull << 10)
#define R_LINK_SOURCE     (1ull << 11)
#define R_LINK_TARGET     (1ull << 12)
#define R_PATH_OPEN       (1ull << 13)
#define R_FD_READDIR      (1ull << 14)
#define R_READLINK        (1ull << 15)
#define R_RENAME_SOURCE   (1ull << 16)
#define R_RENAME_TARGET   (1ull << 17)
#define R_PATH_STAT       (1ull << 18)
#define R_PATH_SET_SIZE   (1ull << 19)
#define R_PATH_SET_TIMES  (1ull << 20)
#define R_FD_FILESTAT_GET (1ull << 21)
#define R_FD_SET_SIZE     (1ull << 22)
#define R_FD_SET_TIMES    (1ull << 23)
#define R_SYMLINK         (1ull << 24)
#define R_RMDIR           (1ull << 25)
#define R_UNLINK          (1ull << 26)
#define R_POLL            (1ull << 27)
#define R_ALL             ((1ull << 30) - 1)
#define R_STDOUT          (R_FD_WRITE | R_FD_FILESTAT_GET | R_POLL)
#define R_STDIN           (R_FD_READ | R_FD_FILESTAT_GET | R_POLL)
/* What a descriptor of each type can ever have: a directory has no read, write or
 * seek right, a file no path rights. */
#define R_DIR_ALL                                                                                  \
    (R_FD_DATASYNC | R_FD_SET_FLAGS | R_FD_SYNC | R_MKDIR | R_CREATE_FILE | R_LINK_SOURCE |        \
     R_LINK_TARGET | R_PATH_OPEN | R_FD_READDIR | R_READLINK | R_RENAME_SOURCE | R_RENAME_TARGET | \
     R_PATH_STAT | R_PATH_SET_SIZE | R_PATH_SET_TIMES | R_FD_FILESTAT_GET | R_FD_SET_TIMES |       \
     R_SYMLINK | R_RMDIR | R_UNLINK | R_POLL)
#define R_FILE_ALL                                                                                 \
    (R_FD_DATASYNC | R_FD_READ | R_FD_SEEK | R_FD_SET_FLAGS | R_FD_SYNC | R_FD_TELL | R_FD_WRITE | \
     R_FD_ADVISE | R_FD_ALLOCATE | R_FD_FILESTAT_GET | R_FD_SET_SIZE | R_FD_SET_TIMES | R_POLL)

/* What a read-only host directory (pr_exec_options.dirs_read_only) and everything opened below it
 * never has: every right that writes, creates, removes, renames or retimes. */
#define R_WRITES                                                                                   \
    (R_FD_WRITE | R_FD_ALLOCATE | R_MKDIR | R_CREATE_FILE | R_LINK_SOURCE | R_LINK_TARGET |        \
     R_RENAME_SOURCE | R_RENAME_TARGET | R_PATH_SET_SIZE | R_PATH_SET_TIMES | R_FD_SET_SIZE |      \
     R_FD_SET_TIMES | R_SYMLINK | R_RMDIR | R_UNLINK)

/* K_HDIR / K_HFILE: host directories and files (peri run --dir), through hostdir.c. */
enum { K_FREE = 0, K_STDIN, K_STDOUT, K_STDERR, K_DIR, K_FILE, K_HDIR, K_HFILE };

typedef struct wfd {
    uint8_t kind;
    uint16_t flags;
    uint64_t rights, inherit;
    pr_node *file; /* K_FILE: the node (its names may change or go) */
    char *dir;     /* normalised path of a directory descriptor (owned; NULL = "/") */
    size_t dir_len;
    uint64_t off;
    int os;              /* K_HDIR / K_HFILE: the host descriptor (owned) */
    const char *preopen; /* a preopened directory's guest name (NUL-terminated), or NULL */
} wfd;

#define NFIXED  16
#define MAX_FDS 1024

typedef struct wasi {
    wfd *fds;
    uint32_t nfds;
    wfd fixed[NFIXED];
} wasi;

/* ---------------------------------------------------------------- helpers */

static inline pr_run_state *RS(void *env) {
    return env;
}

static inline uint8_t *mem(pw_call_ctx *cx, uint32_t ptr, uint64_t len) {
    uint64_t size;
    uint8_t *b = pw_ctx_memory(cx, &size);
    if (!b || (uint64_t)ptr + len > size) return NULL;
    return b + ptr;
}

static inline void st16(uint8_t *p, uint16_t v) {
    memcpy(p, &v, 2);
}
static inline void st32(uint8_t *p, uint32_t v) {
    memcpy(p, &v, 4);
}
static inline void st64(uint8_t *p, uint64_t v) {
    memcpy(p, &v, 8);
}
static inline uint16_t ld16(const uint8_t *p) {
    uint16_t v;
    memcpy(&v, p, 2);
    return v;
}
static inline uint32_t ld32(const uint8_t *p) {
    uint32_t v;
    memcpy(&v, p, 4);
    return v;
}
static inline uint64_t ld64(const uint8_t *p) {
    uint64_t v;
    memcpy(&v, p, 8);
    return v;
}

#define RET(e)                                                                                     \
    do {                                                                                           \
        r[0].i32 = (e);                                                                            \
        return PW_OK;                                                                              \
    } while (0)
#define U32(i) ((uint32_t)a[i].i32)
#define U64(i) ((uint64_t)a[i].i64)
#define UNUSED __attribute__((unused))
#define HOST(name)                                                                                 \
    static pw_status w_##name(UNUSED pw_call_ctx *cx, UNUSED void *env, UNUSED const pw_val *a,    \
                              UNUSED pw_val *r)

static wasi *W(void *env) {
    return RS(env)->abi_state;
}

static wfd *getfd(void *env, uint32_t fd) {
    wasi *w = W(env);
    if (fd >= w->nfds || w->fds[fd].kind == K_FREE) return NULL;
    return &w->fds[fd];
}

static bool is_host(const wfd *f) {
    return f->kind == K_HDIR || f->kind == K_HFILE;
}

/* E_NOTCAPABLE unless descriptor f holds every right in need. */
#define NEED(f, need)                                                                              \
    do {                                                                                           \
        if (((f)->rights & (need)) != (need)) RET(E_NOTCAPABLE);                                   \
    } while (0)

/* The guest's bytes of a path for the host backend (not NUL-terminated). */
static int guest_path(pw_call_ctx *cx, uint32_t ptr, uint32_t len, const char **out) {
    const uint8_t *p = mem(cx, ptr, len);
    if (!p) return E_FAULT;
    if (memchr(p, 0, len)) return E_INVAL;
    *out = (const char *)p;
    return E_SUCCESS;
}

/* fs: the run's file system, for the budget (NULL once the run is over). */
static void closefd(pr_fs *fs, wfd *f) {
    if (f->kind == K_FILE && f->file) pr__fs_node_close(fs, f->file);
    if (is_host(f)) close(f->os);
    free(f->dir);
    memset(f, 0, sizeof *f);
}

/* A free descriptor number (lowest), growing the table; -1 when full. */
static int64_t allocfd(wasi *w) {
    for (uint32_t i = 0; i < w->nfds; i++)
        if (w->fds[i].kind == K_FREE) return i;
    if (w->nfds >= MAX_FDS) return -1;
    uint32_t n = w->nfds * 2;
    wfd *nf;
    if (w->fds == w->fixed) {
        nf = malloc(n * sizeof *nf);
        if (nf) memcpy(nf, w->fixed, w->nfds * sizeof *nf);
    } else {
        nf = realloc(w->fds, n * sizeof *nf);
    }
    if (!nf) return -1;
    memset(nf + w->nfds, 0, (n - w->nfds) * sizeof *nf);
    w->fds = nf;
    int64_t at = w->nfds;
    w->nfds = n;
    return at;
}

#define MAX_LINKS     40   /* symbolic links followed per resolution (as Linux, hostdir.c) */
#define LINK_MAX_LEN  4096 /* bytes of a symbolic link's target (in-memory FS) */
#define E_LOOP        32
#define E_NAMETOOLONG 37
#define E_PERM        63

/* Beyond the contract: the walk of guest path p[0..len) from directory dp[0..dl) in
 * the in-memory FS, one component at a time. ".." pops a level; above the directory
 * dp (the descriptor the path is relative to) it is refused with ENOTCAPABLE, as
 * hostdir.c and wasmtime do; a symbolic link met on the way (or last, when follow) has its target
 * spliced in front of the rest of the path and the walk goes on from the link's
 * directory; an absolute target is refused (ENOTCAPABLE, as hostdir.c), more than 40
 * links give ELOOP, a regular file on the way ENOTDIR. A missing directory on the way
 * is no error here (as in the contract, creating a file creates its parents).
 * *slash: the path ended in '/' (the result must then be a directory). On success
 * *out (caller frees, NUL-terminated) is the normalised path of the last component. */
static int walk(const pr_fs *fs, const char *dp, size_t dl, const char *p, size_t len, bool follow,
                char **out, size_t *out_len, bool *slash) {
    size_t ccap = dl + len + 16, cl = dl;
    char *cur = malloc(ccap), *rem = malloc(len + 1);
    if (!cur || !rem) {
        free(cur);
        free(rem);
        return E_NOMEM;
    }
    if (p[0] == '/') { /* WASI paths are relative, as on a host directory */
        free(cur);
        free(rem);
        return E_NOTCAPABLE;
    }
    memcpy(cur, dp, dl);
    memcpy(rem, p, len);
    size_t rl = len, pos = 0;
    int links = 0, e = E_SUCCESS;
    *slash = false;
    for (;;) {
        while (pos < rl && rem[pos] == '/')
            pos++;
        if (pos == rl) { /* nothing after the slashes: the directory reached */
            *slash = true;
            break;
        }
        size_t start = pos;
        while (pos < rl && rem[pos] != '/')
            pos++;
        size_t nl = pos - start, after = pos;
        while (after < rl && rem[after] == '/')
            after++;
        bool last = after == rl, trail = last && after > pos;
        const char *name = rem + start;
        if (nl == 1 && name[0] == '.') {
            if (last) {
                *slash = trail;
                break;
            }
            continue;
        }
        if (nl == 2 && name[0] == '.' && name[1] == '.') {
            if (cl <= dl) { /* above the directory the walk started from: refused, as
                             * beneath a host directory descriptor (hostdir.c) */
                e = E_NOTCAPABLE;
                break;
            }
            while (cl > 1 && cur[cl - 1] != '/')
                cl--;
            if (cl > 1) cl--;
            if (last) {
                *slash = trail;
                break;
            }
            continue;
        }
        if (cl + nl + 2 > ccap) {
            size_t nc = (cl + nl + 2) * 2;
            char *c = realloc(cur, nc);
            if (!c) {
                e = E_NOMEM;
                break;
            }
            cur = c;
            ccap = nc;
        }
        size_t base = cl == 1 ? 1 : cl + 1;
        if (cl > 1) cur[cl] = '/';
        memcpy(cur + base, name, nl);
        size_t cand = base + nl;
        if (last && !follow) { /* the operation acts on the name itself */
            cl = cand;
            *slash = trail;
            break;
        }
        const pr_file *f = pr__fs_find(fs, cur, cand);
        if (f && pr_file_is_link(f)) {
            const pr_node *t = f->node;
            if (++links > MAX_LINKS) {
                e = E_LOOP;
                break;
            }
            if (t->len == 0 || t->data[0] == '/') {
                e = t->len ? E_NOTCAPABLE : E_NOENT; /* absolute: it points out */
                break;
            }
            /* rem = target + "/" + rest (the "/" also when the path ended in one) */
            size_t rest = rl - after, k = t->len;
            char *b = malloc(t->len + rest + 2);
            if (!b) {
                e = E_NOMEM;
                break;
            }
            memcpy(b, t->data, t->len);
            if (rest || trail) b[k++] = '/';
            memcpy(b + k, rem + after, rest);
            free(rem);
            rem = b;
            rl = k + rest;
            pos = 0;
            continue; /* from the link's directory: cur is unchanged */
        }
        cl = cand;
        if (last) {
            *slash = trail;
            break;
        }
        if (f && !f->dir) {
            e = E_NOTDIR;
            break;
        }
    }
    free(rem);
    if (e) {
        free(cur);
        return e;
    }
    cur[cl] = 0;
    *out = cur;
    *out_len = cl;
    return E_SUCCESS;
}

/* Resolves a guest path against a directory descriptor into a normalised path in a
 * malloc'd buffer (*out; caller frees). Returns an errno. A contract run normalises
 * the path as the reference FS does (no links exist there; *slash is always false);
 * beyond the contract the path is walked (walk: symbolic links, follow says whether a
 * final one is followed). */
static int resolve(pw_call_ctx *cx, void *env, uint32_t dirfd, uint32_t ptr, uint32_t len,
                   bool follow, char **out, size_t *out_len, bool *slash) {
    *slash = false;
    wfd *d = getfd(env, dirfd);
    if (!d) return E_BADF;
    if (d->kind != K_DIR) return E_NOTDIR;
    const uint8_t *p = mem(cx, ptr, len);
    if (!p) return E_FAULT;
    if (len == 0) return E_NOENT;
    if (memchr(p, 0, len)) return E_INVAL;
    /* Paths in the room are text (the reference FS keys are JS strings, and returned
     * paths become JSON keys): bytes that are not UTF-8 name nothing. */
    if (!pr__utf8_valid(p, len)) return E_ILSEQ;
    const char *dp = d->dir ? d->dir : "/";
    size_t dl = d->dir ? d->dir_len : 1;
    bool blind = RS(env)->boot_blind;
    if (RS(env)->host->beyond_contract && !blind)
        return walk(RS(env)->fs, dp, dl, (const char *)p, len, follow, out, out_len, slash);
    char *joined = malloc(dl + 1 + len + 2);
    if (!joined) return E_NOMEM;
    memcpy(joined, dp, dl);
    joined[dl] = '/';
    memcpy(joined + dl + 1, p, len);
    char *norm = malloc(dl + 1 + len + 2);
    if (!norm) {
        free(joined);
        return E_NOMEM;
    }
    *out_len = pr__path_normalize(joined, dl + 1 + len, norm);
    free(joined);
    /* An interpreter's boot sees an empty in-memory tree (pr_run_state.boot_blind): only
     * the root itself is there. */
    if (blind && !(*out_len == 1 && norm[0] == '/')) {
        free(norm);
        return E_NOENT;
    }
    *out = norm;
    return E_SUCCESS;
}

/* What every single-path path_* call starts with. The directory descriptor dirfd must
 * hold right (when it is a directory); below a host directory (K_HDIR) pa->host is set
 * with the guest's path bytes in pa->path/pa->len, for hostdir.c; otherwise the path is
 * resolved in the in-memory tree (resolve; follow: a final symbolic link is followed)
 * into pa->norm (owned: free it), pa->n and pa->slash, and pa->f is the entry there
 * (or NULL). Returns a WASI errno. */
typedef struct path_arg {
    wfd *host;
    const char *path;
    uint32_t len;
    char *norm;
    size_t n;
    bool slash;
    pr_file *f; /* the in-memory entry at norm, or NULL (pr__fs_find) */
} path_arg;

static int path_begin(pw_call_ctx *cx, void *env, uint32_t dirfd, uint32_t ptr, uint32_t len,
                      uint64_t right, bool follow, path_arg *pa) {
    memset(pa, 0, sizeof *pa);
    wfd *d = getfd(env, dirfd);
    if (d && (d->kind == K_DIR || d->kind == K_HDIR) && (d->rights & right) != right)
        return E_NOTCAPABLE;
    if (d && d->kind == K_HDIR) {
        int e = guest_path(cx, ptr, len, &pa->path);
        if (e) return e;
        pa->host = d;
        pa->len = len;
        return E_SUCCESS;
    }
    int e = resolve(cx, env, dirfd, ptr, len, follow, &pa->norm, &pa->n, &pa->slash);
    if (!e) pa->f = pr__fs_find(RS(env)->fs, pa->norm, pa->n);
    return e;
}

/* True when some proper ancestor of norm is a regular file (then norm cannot exist). */
static bool ancestor_is_file(const pr_fs *fs, const char *norm, size_t n) {
    for (size_t i = n; i > 1; i--) {
        if (norm[i - 1] != '/' || i - 1 == 0) continue;
        pr_file *f = pr__fs_find(fs, norm, i - 1);
        if (f && !f->dir) return true;
    }
    return false;
}

static uint64_t path_ino(const char *p, size_t n) {
    return pr__path_ino(p, n);
}

/* A node's inode number: the contract's path hash, or beyond the contract the node's
 * own serial number (hard links share it, renames keep it). */
static uint64_t node_ino(const pr_run_state *rs, const pr_node *nd) {
    return rs->host->beyond_contract ? nd->serial : nd->ino;
}

static void filestat(uint8_t *b, uint8_t type, uint64_t ino, uint64_t size, uint64_t mtime) {
    memset(b, 0, 64);
    st64(b + 8, ino);
    b[16] = type;
    st64(b + 24, 1);
    st64(b + 32, size);
    st64(b + 40, mtime);
    st64(b + 48, mtime);
    st64(b + 56, mtime);
}

/* A node's filestat: atim is its own only when set beyond the contract, and so are
 * the link count and the symbolic-link type (a contract run has neither). */
static void file_stat(const pr_run_state *rs, uint8_t *b, uint64_t ino, const pr_node *f) {
    filestat(b, f->kind == PR_NODE_LINK ? FT_SYMLINK : FT_FILE, ino, f->len, f->mtime);
    if (f->own_atime) st64(b + 40, f->atime);
    if (rs->host->beyond_contract) st64(b + 24, f->nlink);
}

/* ---------------------------------------------------------------- args, environ */

static const char ARGV0[] = "/程序.wasm";

HOST(args_sizes_get) {
    const pr_exec_options *o = RS(env)->opt;
    uint64_t size = o->argv0.ptr ? o->argv0.len + 1 : sizeof ARGV0;
    for (size_t i = 0; i < o->nargs; i++)
        size += o->args[i].len + 1;
    uint8_t *pc = mem(cx, U32(0), 4), *ps = mem(cx, U32(1), 4);
    if (!pc || !ps) RET(E_FAULT);
    if (size > UINT32_MAX) RET(E_OVERFLOW);
    st32(pc, (uint32_t)(o->nargs + 1));
    st32(ps, (uint32_t)size);
    RET(E_SUCCESS);
}

HOST(args_get) {
    const pr_exec_options *o = RS(env)->opt;
    uint32_t argv = U32(0), buf = U32(1);
    uint8_t *pv = mem(cx, argv, 4 * (uint64_t)(o->nargs + 1));
    if (!pv) RET(E_FAULT);
    for (size_t i = 0; i <= o->nargs; i++) {
        const char *s = i ? o->args[i - 1].ptr : o->argv0.ptr ? o->argv0.ptr : ARGV0;
        size_t n = i ? o->args[i - 1].len : o->argv0.ptr ? o->argv0.len : sizeof ARGV0 - 1;
        uint8_t *pb = mem(cx, buf, n + 1);
        if (!pb) RET(E_FAULT);
        pv = mem(cx, argv, 4 * (uint64_t)(o->nargs + 1)); /* memory is stable; re-get anyway */
        st32(pv + 4 * i, buf);
        memcpy(pb, s, n);
        pb[n] = 0;
        buf += (uint32_t)n + 1;
    }
    RET(E_SUCCESS);
}

/* The environment is empty in the contract's room; `peri run --env` fills it. */
HOST(environ_sizes_get) {
    const pr_exec_options *o = RS(env)->opt;
    uint8_t *pc = mem(cx, U32(0), 4), *ps = mem(cx, U32(1), 4);
    if (!pc || !ps) RET(E_FAULT);
    uint64_t size = 0;
    for (size_t i = 0; i < o->nenv; i++)
        size += o->env[i].len + 1;
    if (size > UINT32_MAX) RET(E_OVERFLOW);
    st32(pc, (uint32_t)o->nenv);
    st32(ps, (uint32_t)size);
    RET(E_SUCCESS);
}

HOST(environ_get) {
    const pr_exec_options *o = RS(env)->opt;
    uint32_t ev = U32(0), buf = U32(1);
    if (!mem(cx, ev, 4 * (uint64_t)o->nenv)) RET(E_FAULT);
    for (size_t i = 0; i < o->nenv; i++) {
        size_t n = o->env[i].len;
        uint8_t *pb = mem(cx, buf, n + 1);
        if (!pb) RET(E_FAULT);
        st32(mem(cx, ev, 4 * (uint64_t)o->nenv) + 4 * i, buf);
        memcpy(pb, o->env[i].ptr, n);
        pb[n] = 0;
        buf += (uint32_t)n + 1;
    }
    RET(E_SUCCESS);
}

/* ---------------------------------------------------------------- clocks, random */

#define DET_EPOCH_NS 1767225600000000000ull /* 2026-01-01T00:00:00Z */
#define DET_STEP_NS  1000000ull

HOST(clock_res_get) {
    uint32_t id = U32(0);
    if (id > 3) RET(E_INVAL);
    uint8_t *p = mem(cx, U32(1), 8);
    if (!p) RET(E_FAULT);
    st64(p, RS(env)->opt->seed ? DET_STEP_NS : 1);
    RET(E_SUCCESS);
}

HOST(clock_time_get) {
    pr_run_state *rs = RS(env);
    uint32_t id = U32(0);
    if (id > 3) RET(E_INVAL);
    uint8_t *p = mem(cx, U32(2), 8);
    if (!p) RET(E_FAULT);
    uint64_t t;
    if (rs->opt->seed) {
        /* Deterministic: the n-th clock reading (from 0) is n ms after the base. */
        t = rs->det_clock;
        rs->det_clock += DET_STEP_NS;
        if (id == 0) t += DET_EPOCH_NS;
    } else {
        static const clockid_t ids[4] = {CLOCK_REALTIME, CLOCK_MONOTONIC, CLOCK_THREAD_CPUTIME_ID,
                                         CLOCK_THREAD_CPUTIME_ID};
        struct timespec ts;
        clock_gettime(ids[id], &ts);
        t = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
    }
    st64(p, t);
    RET(E_SUCCESS);
}

HOST(random_get) {
    uint32_t len = U32(1);
    uint8_t *p = mem(cx, U32(0), len);
    if (!p) RET(E_FAULT);
    for (uint32_t i = 0; i < len; i += 8) {
        uint64_t v = pr__run_random(RS(env));
        memcpy(p + i, &v, len - i < 8 ? len - i : 8);
    }
    RET(E_SUCCESS);
}

HOST(sched_yield) {
    RET(E_SUCCESS);
}

HOST(proc_raise) {
    RET(E_NOSYS);
}

HOST(proc_exit) {
    pr_run_state *rs = RS(env);
    rs->end = PR_END_EXIT;
    rs->exit_code = a[0].i32;
    return pw_ctx_trap(cx, "proc_exit(%d)", a[0].i32);
}

/* ---------------------------------------------------------------- descriptors */

HOST(fd_close) {
    wfd *f = getfd(env, U32(0));
    if (!f) RET(E_BADF);
    closefd(RS(env)->fs, f);
    RET(E_SUCCESS);
}

HOST(fd_renumber) {
    wfd *from = getfd(env, U32(0)), *to = getfd(env, U32(1));
    if (!from || !to) RET(E_BADF);
    if (from == to) RET(E_SUCCESS);
    closefd(RS(env)->fs, to);
    *to = *from;
    memset(from, 0, sizeof *from);
    RET(E_SUCCESS);
}

static uint8_t filetype(const wfd *f) {
    switch (f->kind) {
    case K_STDIN:
    case K_STDOUT:
    case K_STDERR: return FT_CHAR;
    case K_DIR:
    case K_HDIR: return FT_DIR;
    case K_FILE: return FT_FILE;
    case K_HFILE: return pr__hd_filetype(f->os);
    default: return FT_UNKNOWN;
    }
}

HOST(fd_fdstat_get) {
    wfd *f = getfd(env, U32(0));
    if (!f) RET(E_BADF);
    uint8_t *p = mem(cx, U32(1), 24);
    if (!p) RET(E_FAULT);
    memset(p, 0, 24);
    p[0] = filetype(f);
    st16(p + 2, f->flags);
    st64(p + 8, f->rights);
    st64(p + 16, f->inherit);
    RET(E_SUCCESS);
}

HOST(fd_fdstat_set_flags) {
    wfd *f = getfd(env, U32(0));
    if (!f) RET(E_BADF);
    NEED(f, R_FD_SET_FLAGS);
    uint16_t fl = (uint16_t)U32(1);
    if (f->kind == K_HFILE) {
        int cur = fcntl(f->os, F_GETFL);
        if (cur < 0) RET(pr__hd_errno(errno));
        cur = (cur & ~(O_APPEND | O_NONBLOCK)) | (fl & FDF_APPEND ? O_APPEND : 0) |
              (fl & FDF_NONBLOCK ? O_NONBLOCK : 0);
        if (fcntl(f->os, F_SETFL, cur) != 0) RET(pr__hd_errno(errno));
    }
    if (f->kind == K_FILE || f->kind == K_HFILE) f->flags = fl;
    RET(E_SUCCESS);
}

HOST(fd_fdstat_set_rights) {
    wfd *f = getfd(env, U32(0));
    if (!f) RET(E_BADF);
    uint64_t base = U64(1), inh = U64(2);
    if ((base & ~f->rights) || (inh & ~f->inherit)) RET(E_NOTCAPABLE);
    f->rights = base;
    f->inherit = inh;
    RET(E_SUCCESS);
}

HOST(fd_prestat_get) {
    wfd *f = getfd(env, U32(0));
    if (!f || !f->preopen) RET(E_BADF);
    uint8_t *p = mem(cx, U32(1), 8);
    if (!p) RET(E_FAULT);
    memset(p, 0, 8);
    st32(p + 4, (uint32_t)strlen(f->preopen));
    RET(E_SUCCESS);
}

HOST(fd_prestat_dir_name) {
    wfd *f = getfd(env, U32(0));
    if (!f || !f->preopen) RET(E_BADF);
    size_t n = strlen(f->preopen);
    if (U32(2) < n) RET(E_INVAL);
    uint8_t *p = mem(cx, U32(1), n);
    if (!p) RET(E_FAULT);
    memcpy(p, f->preopen, n);
    RET(E_SUCCESS);
}

static int stat_fd(const pr_run_state *rs, const wfd *f, uint8_t *p) {
    if (f->kind == K_FILE) {
        file_stat(rs, p, node_ino(rs, f->file), f->file);
    } else if (f->kind == K_DIR) {
        filestat(p, FT_DIR, path_ino(f->dir ? f->dir : "/", f->dir ? f->dir_len : 1), 0, 0);
    } else {
        filestat(p, FT_CHAR, (uint64_t)f->kind, 0, 0);
    }
    return E_SUCCESS;
}

HOST(fd_filestat_get) {
    wfd *f = getfd(env, U32(0));
    if (!f) RET(E_BADF);
    NEED(f, R_FD_FILESTAT_GET);
    uint8_t *p = mem(cx, U32(1), 64);
    if (!p) RET(E_FAULT);
    if (is_host(f)) RET(pr__hd_fstat(f->os, p));
    RET(stat_fd(RS(env), f, p));
}

static int fs_errno(int rc) {
    return rc == -2 ? E_NOSPC : rc == -1 ? E_NOMEM : E_SUCCESS;
}

HOST(fd_filestat_set_size) {
    wfd *f = getfd(env, U32(0));
    if (!f) RET(E_BADF);
    if (f->kind == K_DIR || f->kind == K_HDIR) RET(E_ISDIR);
    NEED(f, R_FD_SET_SIZE);
    if (f->kind == K_HFILE) {
        if (U64(1) > INT64_MAX) RET(E_INVAL);
        RET(ftruncate(f->os, (off_t)U64(1)) == 0 ? E_SUCCESS : pr__hd_errno(errno));
    }
    if (f->kind != K_FILE) RET(E_INVAL);
    if (!(f->rights & R_FD_WRITE)) RET(E_BADF);
    if (U64(1) > SIZE_MAX) RET(E_NOSPC);
    RET(fs_errno(pr__fs_truncate(RS(env)->fs, f->file, (size_t)U64(1))));
}

/* Contract runs store an explicit mtime only (atim follows mtim, as in the reference);
 * runs beyond the contract (beyond) also store atim: explicit, or "now" = the FS clock. */
static int set_times(pr_fs *fs, pr_node *f, bool beyond, uint64_t atim, uint64_t mtim,
                     uint32_t flags) {
    if ((flags & FST_ATIM && flags & FST_ATIM_NOW) || (flags & FST_MTIM && flags & FST_MTIM_NOW))
        return E_INVAL;
    if (!f) return E_SUCCESS;      /* directories have no stored times */
    if (beyond && !f->own_atime) { /* atim stays where it was when only mtim changes */
        f->atime = f->mtime;
        f->own_atime = true;
    }
    if (flags & FST_MTIM)
        f->mtime = mtim;
    else if (flags & FST_MTIM_NOW)
        pr__fs_touch(fs, f);
    if (beyond && flags & (FST_ATIM | FST_ATIM_NOW)) {
        f->atime = flags & FST_ATIM ? atim : fs->clock;
        f->own_atime = true;
    }
    return E_SUCCESS;
}

HOST(fd_filestat_set_times) {
    wfd *f = getfd(env, U32(0));
    if (!f) RET(E_BADF);
    NEED(f, R_FD_SET_TIMES);
    if (is_host(f)) RET(pr__hd_futimes(f->os, U64(1), U64(2), U32(3)));
    RET(set_times(RS(env)->fs, f->kind == K_FILE ? f->file : NULL, RS(env)->host->beyond_contract,
                  U64(1), U64(2), U32(3)));
}

HOST(fd_advise) {
    wfd *f = getfd(env, U32(0));
    if (!f) RET(E_BADF);
    if (U32(3) > 5) RET(E_INVAL);
    if (f->kind == K_HDIR) RET(E_BADF);
    NEED(f, R_FD_ADVISE);
    if (f->kind == K_HFILE) RET(E_SUCCESS); /* advice only */
    RET(f->kind == K_FILE ? E_SUCCESS : f->kind == K_DIR ? E_BADF : E_SPIPE);
}

HOST(fd_allocate) {
    wfd *f = getfd(env, U32(0));
    if (!f) RET(E_BADF);
    if (f->kind == K_HDIR) RET(E_BADF);
    NEED(f, R_FD_ALLOCATE);
    if (f->kind == K_HFILE) {
        if (U64(1) > INT64_MAX || U64(2) > INT64_MAX) RET(E_INVAL);
        int rc = posix_fallocate(f->os, (off_t)U64(1), (off_t)U64(2));
        RET(rc == 0 ? E_SUCCESS : rc == EOPNOTSUPP ? E_NOTSUP : pr__hd_errno(rc));
    }
    if (f->kind != K_FILE) RET(f->kind == K_DIR ? E_BADF : E_SPIPE);
    uint64_t end = U64(1) + U64(2);
    if (end < U64(1) || end > SIZE_MAX) RET(E_NOSPC);
    if (end <= f->file->len) RET(E_SUCCESS);
    RET(fs_errno(pr__fs_truncate(RS(env)->fs, f->file, (size_t)end)));
}

HOST(fd_sync) {
    wfd *f = getfd(env, U32(0));
    if (!f) RET(E_BADF);
    if (is_host(f) && fsync(f->os) != 0 && errno != EINVAL) RET(pr__hd_errno(errno));
    RET(E_SUCCESS);
}

/* ---------------------------------------------------------------- read and write */

/* Reads up to the iovecs' total from file f at off into guest memory. */
static int read_file(pw_call_ctx *cx, pr_node *f, uint32_t iovs, uint32_t n, uint64_t off,
                     uint32_t *nread) {
    uint8_t *v = mem(cx, iovs, 8 * (uint64_t)n);
    if (!v) return E_FAULT;
    uint64_t total = 0;
    for (uint32_t i = 0; i < n; i++) {
        uint32_t ptr = ld32(v + 8 * i), len = ld32(v + 8 * i + 4);
        uint8_t *d = mem(cx, ptr, len);
        if (!d) return E_FAULT;
        if (off >= f->len) break;
        uint64_t k = f->len - off < len ? f->len - off : len;
        memcpy(d, f->data + off, (size_t)k);
        off += k;
        total += k;
        if (k < len) break;
    }
    *nread = (uint32_t)total;
    return E_SUCCESS;
}

/* readv/preadv on a host descriptor straight into guest memory. */
static int host_rw(pw_call_ctx *cx, int fd, uint32_t iovs, uint32_t n, bool write, int64_t off,
                   uint32_t *count) {
    uint64_t size = 0;
    uint8_t *base = pw_ctx_memory(cx, &size);
    if (!base) return E_FAULT;
    return pr__hd_rw(fd, base, size, iovs, n, write, off, count);
}

HOST(fd_read) {
    wfd *f = getfd(env, U32(0));
    if (!f) RET(E_BADF);
    uint8_t *pn = mem(cx, U32(3), 4);
    if (!pn) RET(E_FAULT);
    uint32_t nread = 0;
    if (f->kind == K_STDIN) {
        const pr_exec_options *o = RS(env)->opt;
        if (o->stdin_connected) {
            int e = host_rw(cx, o->stdin_fd, U32(1), U32(2), false, -1, &nread);
            if (e) RET(e);
        } else {
            /* o->stdin_data (empty when absent), read once from the start. */
            uint8_t *v = mem(cx, U32(1), 8 * (uint64_t)U32(2));
            if (!v) RET(E_FAULT);
            for (uint32_t i = 0; i < U32(2) && f->off < o->stdin_len; i++) {
                uint32_t len = ld32(v + 8 * i + 4);
                uint8_t *d = mem(cx, ld32(v + 8 * i), len);
                if (!d) RET(E_FAULT);
                uint64_t k = o->stdin_len - f->off < len ? o->stdin_len - f->off : len;
                memcpy(d, o->stdin_data + f->off, (size_t)k);
                f->off += k;
                nread += (uint32_t)k;
                if (k < len) break;
            }
        }
        st32(mem(cx, U32(3), 4), nread);
        RET(E_SUCCESS);
    }
    if (f->kind == K_DIR || f->kind == K_HDIR) RET(E_ISDIR);
    if (f->kind == K_HFILE) {
        NEED(f, R_FD_READ);
        int e = host_rw(cx, f->os, U32(1), U32(2), false, -1, &nread);
        if (e) RET(e);
        st32(mem(cx, U32(3), 4), nread);
        RET(E_SUCCESS);
    }
    if (f->kind != K_FILE || !(f->rights & R_FD_READ)) RET(E_BADF);
    int e = read_file(cx, f->file, U32(1), U32(2), f->off, &nread);
    if (e) RET(e);
    f->off += nread;
    st32(mem(cx, U32(3), 4), nread);
    RET(E_SUCCESS);
}

HOST(fd_pread) {
    wfd *f = getfd(env, U32(0));
    if (!f) RET(E_BADF);
    if (f->kind == K_DIR || f->kind == K_HDIR) RET(E_ISDIR);
    if (f->kind == K_HFILE) {
        NEED(f, R_FD_READ | R_FD_SEEK);
        if (U64(3) > INT64_MAX) RET(E_INVAL);
        uint32_t nread = 0;
        int e = host_rw(cx, f->os, U32(1), U32(2), false, (int64_t)U64(3), &nread);
        if (e) RET(e);
        uint8_t *pn = mem(cx, U32(4), 4);
        if (!pn) RET(E_FAULT);
        st32(pn, nread);
        RET(E_SUCCESS);
    }
    if (f->kind != K_FILE) RET(f->kind == K_STDIN ? E_SPIPE : E_BADF);
    if (!(f->rights & R_FD_READ)) RET(E_BADF);
    uint32_t nread = 0;
    int e = read_file(cx, f->file, U32(1), U32(2), U64(3), &nread);
    if (e) RET(e);
    uint8_t *pn = mem(cx, U32(4), 4);
    if (!pn) RET(E_FAULT);
    st32(pn, nread);
    RET(E_SUCCESS);
}

/* Output gathers only after the budget is checked: the iovecs' total (they may
 * overlap, each up to the whole memory) is summed first, and a write past the output
 * limit or the file-system budget fails before anything is copied. One fd_write to
 * stdout/stderr is one "write" of the reference host (decoded on its own, counted
 * whole): at most 64 KiB is gathered. A file write goes iovec by iovec straight into
 * the file (one logical mtime, as one write), so host memory stays within the room's
 * bounds (docs/room.md). */
static int iov_total(pw_call_ctx *cx, uint32_t iovs, uint32_t n, uint64_t *total) {
    uint8_t *v = mem(cx, iovs, 8 * (uint64_t)n);
    if (!v) return E_FAULT;
    uint64_t t = 0;
    for (uint32_t i = 0; i < n; i++) {
        uint32_t ptr = ld32(v + 8 * i), l = ld32(v + 8 * i + 4);
        if (!mem(cx, ptr, l)) return E_FAULT;
        t += l;
    }
    *total = t;
    return E_SUCCESS;
}

static void iov_copy(pw_call_ctx *cx, uint32_t iovs, uint32_t n, uint8_t *b) {
    uint8_t *v = mem(cx, iovs, 8 * (uint64_t)n);
    for (uint32_t i = 0; i < n; i++) {
        uint32_t ptr = ld32(v + 8 * i), l = ld32(v + 8 * i + 4);
        memcpy(b, mem(cx, ptr, l), l);
        b += l;
    }
}

/* 0 and *st set (PW_OK, or the trap that ends the run), or an errno. */
static int write_out(pw_call_ctx *cx, pr_run_state *rs, int stream, uint32_t iovs, uint32_t n,
                     uint64_t total, pw_status *st) {
    *st = PW_OK;
    if (total > pr__run_output_max(rs) - rs->out_bytes) {
        rs->end = PR_END_OUTPUT; /* what pr__run_output decides, without the copy */
        *st = pw_ctx_trap(cx, "%s", "输出超过 64 KB");
        return E_SUCCESS;
    }
    if (rs->opt->raw_output) { /* peri run: each iovec straight out, nothing gathered */
        uint8_t *v = mem(cx, iovs, 8 * (uint64_t)n);
        for (uint32_t i = 0; i < n; i++) {
            uint32_t l = ld32(v + 8 * i + 4);
            if (l && !pr__run_output(rs, stream, mem(cx, ld32(v + 8 * i), l), l)) {
                *st = pw_ctx_trap(cx, "%s",
                                  rs->end == PR_END_OUTPUT ? "输出超过 64 KB" : rs->end_msg);
                break;
            }
        }
        return E_SUCCESS;
    }
    uint8_t stackbuf[4096], *b = stackbuf;
    if (n == 1) /* common case: no copy */
        b = mem(cx, ld32(mem(cx, iovs, 8)), (uint32_t)total);
    else if (total > sizeof stackbuf && !(b = malloc((size_t)total)))
        return E_NOMEM;
    if (n != 1) iov_copy(cx, iovs, n, b);
    bool ok = pr__run_output(rs, stream, b, (size_t)total);
    if (b != stackbuf && n != 1) free(b);
    if (!ok) *st = pw_ctx_trap(cx, "%s", rs->end == PR_END_OUTPUT ? "输出超过 64 KB" : rs->end_msg);
    return E_SUCCESS;
}

static int write_file(pw_call_ctx *cx, pr_fs *fs, pr_node *f, uint32_t iovs, uint32_t n,
                      uint64_t total, uint64_t off) {
    if (total == 0) return E_SUCCESS; /* as write(2) of zero bytes: the file is untouched */
    if (off > SIZE_MAX || total > SIZE_MAX - off) return E_NOSPC;
    size_t end = (size_t)(off + total);
    if (end > f->len && end - f->len > PR_FS_MAX - fs->total) return E_NOSPC; /* as grow */
    uint64_t clock = fs->clock;
    int rc = 0;
    uint8_t *v = mem(cx, iovs, 8 * (uint64_t)n);
    size_t at = (size_t)off;
    for (uint32_t i = 0; i < n && rc == 0; i++) {
        uint32_t ptr = ld32(v + 8 * i), l = ld32(v + 8 * i + 4);
        if (l) rc = pr__fs_pwrite(fs, f, mem(cx, ptr, l), l, at);
        at += l;
    }
    if (rc == 0) f->mtime = fs->clock = clock + 1; /* one write, one tick */
    return rc ? fs_errno(rc) : E_SUCCESS;
}

static pw_status do_write(pw_call_ctx *cx, void *env, const pw_val *a, pw_val *r, bool positional) {
    pr_run_state *rs = RS(env);
    wfd *f = getfd(env, U32(0));
    if (!f) RET(E_BADF);
    uint32_t nw_ptr = positional ? U32(4) : U32(3);
    if (f->kind == K_DIR) RET(E_ISDIR);
    if (f->kind == K_STDIN) RET(E_BADF);
    if (positional && f->kind != K_FILE) RET(E_SPIPE);
    if (f->kind == K_FILE && !(f->rights & R_FD_WRITE)) RET(E_BADF);
    uint64_t len;
    int e = iov_total(cx, U32(1), U32(2), &len);
    if (e) RET(e);
    if (f->kind == K_STDOUT || f->kind == K_STDERR) {
        pw_status st;
        e = write_out(cx, rs, f->kind == K_STDOUT ? PR_STDOUT : PR_STDERR, U32(1), U32(2), len,
                      &st);
        if (e) RET(e);
        if (st != PW_OK) return st;
    } else {
        uint64_t off = positional ? U64(3) : (f->flags & FDF_APPEND) ? f->file->len : f->off;
        e = write_file(cx, rs->fs, f->file, U32(1), U32(2), len, off);
        if (e) RET(e);
        if (!positional) f->off = off + len;
    }
    uint8_t *pn = mem(cx, nw_ptr, 4);
    if (!pn) RET(E_FAULT);
    st32(pn, (uint32_t)len);
    RET(E_SUCCESS);
}

/* fd_write / fd_pwrite on a host file: writev/pwritev from guest memory. */
static pw_status host_write(pw_call_ctx *cx, wfd *f, const pw_val *a, pw_val *r, bool positional) {
    if (positional && U64(3) > INT64_MAX) RET(E_INVAL);
    uint32_t n = 0;
    int e = host_rw(cx, f->os, U32(1), U32(2), true, positional ? (int64_t)U64(3) : -1, &n);
    if (e) RET(e);
    uint8_t *pn = mem(cx, positional ? U32(4) : U32(3), 4);
    if (!pn) RET(E_FAULT);
    st32(pn, n);
    RET(E_SUCCESS);
}

HOST(fd_write) {
    wfd *f = getfd(env, U32(0));
    if (f && f->kind == K_HDIR) RET(E_ISDIR);
    if (f && f->kind == K_HFILE) {
        NEED(f, R_FD_WRITE);
        return host_write(cx, f, a, r, false);
    }
    return do_write(cx, env, a, r, false);
}

HOST(fd_pwrite) {
    wfd *f = getfd(env, U32(0));
    if (f && f->kind == K_HDIR) RET(E_ISDIR);
    if (f && f->kind == K_HFILE) {
        NEED(f, R_FD_WRITE | R_FD_SEEK);
        return host_write(cx, f, a, r, true);
    }
    return do_write(cx, env, a, r, true);
}

HOST(fd_seek) {
    wfd *f = getfd(env, U32(0));
    if (!f) RET(E_BADF);
    if (f->kind == K_DIR || f->kind == K_HDIR) RET(E_BADF); /* no seek right, ever */
    if (f->kind != K_FILE && f->kind != K_HFILE) RET(E_SPIPE);
    NEED(f, a[1].i64 == 0 && U32(2) == 1 ? R_FD_TELL : R_FD_SEEK);
    if (f->kind == K_HFILE) {
        if (U32(2) > 2) RET(E_INVAL);
        static const int whence[3] = {SEEK_SET, SEEK_CUR, SEEK_END};
        off_t o = lseek(f->os, (off_t)a[1].i64, whence[U32(2)]);
        if (o < 0) RET(pr__hd_errno(errno));
        uint8_t *p = mem(cx, U32(3), 8);
        if (!p) RET(E_FAULT);
        st64(p, (uint64_t)o);
        RET(E_SUCCESS);
    }
    if (f->kind != K_FILE) RET(f->kind == K_DIR ? E_BADF : E_SPIPE);
    int64_t off = a[1].i64, base;
    switch (U32(2)) {
    case 0: base = 0; break;
    case 1: base = (int64_t)f->off; break;
    case 2: base = (int64_t)f->file->len; break;
    default: RET(E_INVAL);
    }
    if ((off < 0 && base + off < 0) || (off > 0 && base > INT64_MAX - off)) RET(E_INVAL);
    uint8_t *p = mem(cx, U32(3), 8);
    if (!p) RET(E_FAULT);
    f->off = (uint64_t)(base + off);
    st64(p, f->off);
    RET(E_SUCCESS);
}

HOST(fd_tell) {
    wfd *f = getfd(env, U32(0));
    if (!f) RET(E_BADF);
    if (f->kind == K_DIR || f->kind == K_HDIR) RET(E_BADF);
    if (f->kind != K_FILE && f->kind != K_HFILE) RET(E_SPIPE);
    NEED(f, R_FD_TELL);
    if (f->kind == K_HFILE) {
        off_t o = lseek(f->os, 0, SEEK_CUR);
        if (o < 0) RET(pr__hd_errno(errno));
        uint8_t *p = mem(cx, U32(1), 8);
        if (!p) RET(E_FAULT);
        st64(p, (uint64_t)o);
        RET(E_SUCCESS);
    }
    if (f->kind != K_FILE) RET(f->kind == K_DIR ? E_BADF : E_SPIPE);
    uint8_t *p = mem(cx, U32(1), 8);
    if (!p) RET(E_FAULT);
    st64(p, f->off);
    RET(E_SUCCESS);
}

/* ---------------------------------------------------------------- directories */

typedef struct readdir_ctx {
    pr_dirents out;
    uint64_t cookie, index;
    const char *dir;
    size_t dir_len;
    const pr_run_state *rs;
} readdir_ctx;

static bool put_dirent(readdir_ctx *c, const char *name, size_t n, uint8_t type, uint64_t ino) {
    uint64_t idx = c->index++;
    if (idx < c->cookie) return true;
    return pr__dirent_put(&c->out, idx + 1, ino, name, n, type);
}

static bool readdir_child(void *ud, const char *name, size_t n, bool is_dir) {
    readdir_ctx *c = ud;
    char path[1024];
    uint64_t ino = 0;
    uint8_t type = is_dir ? FT_DIR : FT_FILE;
    if (c->dir_len + 1 + n <= sizeof path) {
        memcpy(path, c->dir, c->dir_len);
        size_t k = c->dir_len == 1 ? 1 : c->dir_len + 1;
        path[k - 1] = '/';
        memcpy(path + k, name, n);
        ino = path_ino(path, k + n);
        /* Beyond the contract: a symbolic link's type, a node's own number. */
        const pr_file *f =
            is_dir || !c->rs->host->beyond_contract ? NULL : pr__fs_find(c->rs->fs, path, k + n);
        if (f && f->node) {
            ino = node_ino(c->rs, f->node);
            if (pr_file_is_link(f)) type = FT_SYMLINK;
        }
    }
    return put_dirent(c, name, n, type, ino);
}

HOST(fd_readdir) {
    wfd *f = getfd(env, U32(0));
    if (!f) RET(E_BADF);
    if (f->kind != K_DIR && f->kind != K_HDIR) RET(E_NOTDIR);
    NEED(f, R_FD_READDIR);
    uint32_t cap = U32(2);
    uint8_t *buf = mem(cx, U32(1), cap), *pu = mem(cx, U32(4), 4);
    if (!buf || !pu) RET(E_FAULT);
    if (f->kind == K_HDIR) {
        uint32_t used = 0;
        int e = pr__hd_readdir(f->os, buf, cap, U64(3), &used);
        if (e) RET(e);
        st32(pu, used);
        RET(E_SUCCESS);
    }
    readdir_ctx c = {{buf, cap, 0},           U64(3), 0, f->dir ? f->dir : "/",
                     f->dir ? f->dir_len : 1, RS(env)};
    uint64_t ino = path_ino(c.dir, c.dir_len);
    if (cap && put_dirent(&c, ".", 1, FT_DIR, ino) && put_dirent(&c, "..", 2, FT_DIR, 0) &&
        !RS(env)->boot_blind)
        pr__fs_children(RS(env)->fs, c.dir, c.dir_len, readdir_child, &c);
    st32(pu, c.out.used);
    RET(E_SUCCESS);
}

/* ---------------------------------------------------------------- paths */

/* path_open below a host directory: the new descriptor's rights are the requested
 * ones within what the directory hands down, and within what its type can have. */
static pw_status host_open(pw_call_ctx *cx, void *env, wfd *d, const pw_val *a, pw_val *r) {
    wasi *w = W(env);
    uint32_t oflags = U32(4);
    uint64_t rights = U64(5) & d->inherit, inherit = U64(6) & d->inherit;
    uint16_t fdflags = (uint16_t)U32(7);
    const char *path;
    int e = guest_path(cx, U32(2), U32(3), &path);
    if (e) RET(e);
    if ((oflags & O_CREAT_) && !(d->rights & R_CREATE_FILE)) RET(E_NOTCAPABLE);
    if ((oflags & O_TRUNC_) && !(d->rights & R_PATH_SET_SIZE)) RET(E_NOTCAPABLE);
    bool rd = rights & (R_FD_READ | R_FD_READDIR);
    /* The access mode comes from the rights alone: APPEND is recorded (and applies to
     * writes), but without a write right the host file is opened for reading only. */
    bool wr = rights & (R_FD_WRITE | R_FD_ALLOCATE | R_FD_SET_SIZE);
    int os;
    bool is_dir;
    e = pr__hd_open(d->os, path, U32(3), U32(1), oflags, fdflags, rd, wr, &os, &is_dir);
    if (e) RET(e);
    int64_t fd = allocfd(w);
    if (fd < 0) {
        close(os);
        RET(E_MFILE);
    }
    wfd *f = &w->fds[fd];
    memset(f, 0, sizeof *f);
    f->kind = is_dir ? K_HDIR : K_HFILE;
    f->os = os;
    f->rights = rights & (is_dir ? R_DIR_ALL : R_FILE_ALL);
    f->inherit = inherit;
    f->flags = is_dir ? 0 : fdflags;
    st32(mem(cx, U32(8), 4), (uint32_t)fd);
    RET(E_SUCCESS);
}

HOST(path_open) {
    pr_run_state *rs = RS(env);
    wasi *w = W(env);
    uint32_t oflags = U32(4);
    uint64_t rights = U64(5), inherit = U64(6);
    uint16_t fdflags = (uint16_t)U32(7);
    uint8_t *pfd = mem(cx, U32(8), 4);
    if (!pfd) RET(E_FAULT);
    wfd *d = getfd(env, U32(0));
    if (d && (d->kind == K_DIR || d->kind == K_HDIR)) NEED(d, R_PATH_OPEN);
    if (d && d->kind == K_HDIR) return host_open(cx, env, d, a, r);
    if (d && d->kind == K_DIR) {
        rights &= d->inherit;
        inherit &= d->inherit;
        /* Beyond the contract, creating and truncating need their rights, as below a
         * host directory (a contract run answers as it always has). */
        if (rs->host->beyond_contract) {
            if ((oflags & O_CREAT_) && !(d->rights & R_CREATE_FILE)) RET(E_NOTCAPABLE);
            if ((oflags & O_TRUNC_) && !(d->rights & R_PATH_SET_SIZE)) RET(E_NOTCAPABLE);
        }
    }
    char *norm;
    size_t n;
    bool slash;
    /* O_CREAT | O_EXCL never follows a final symbolic link (it exists: EEXIST). */
    bool excl = (oflags & O_CREAT_) && (oflags & O_EXCL_);
    int e = resolve(cx, env, U32(0), U32(2), U32(3), (U32(1) & 1) && !excl, &norm, &n, &slash);
    if (e) RET(e);
    /* The capability dispatch's file face: opening its reply dispatches the request. */
    if (rs->cap_files) pr__cap_fs_open(&rs->cap, rs->fs, norm, n);
    pr_file *file = pr__fs_find(rs->fs, norm, n);
    bool is_dir = (file && file->dir) || (!file && pr__fs_is_dir(rs->fs, norm, n));
    if (file && file->dir) file = NULL;
    /* Beyond the contract, as below a host directory (hostdir.c): a trailing '/' asks
     * for a directory, and a directory is never opened for writing. */
    bool beyond = rs->host->beyond_contract;
    bool wr = rights & (R_FD_WRITE | R_FD_ALLOCATE | R_FD_SET_SIZE); /* not APPEND: as above */
    if (beyond && (oflags & O_DIRECTORY_) && (oflags & (O_CREAT_ | O_TRUNC_)))
        e = E_INVAL;
    else if (beyond && ((oflags & O_DIRECTORY_) || slash) && wr)
        e = E_ISDIR;
    else if (excl && (file || is_dir))
        e = E_EXIST;
    else if (file && pr_file_is_link(file)) /* a final symbolic link, not followed */
        e = (oflags & O_DIRECTORY_) || slash ? E_NOTDIR : E_LOOP;
    else if (slash && !is_dir)
        e = file ? E_NOTDIR : (oflags & O_CREAT_) ? E_ISDIR : E_NOENT;
    else if ((oflags & O_DIRECTORY_) && !is_dir)
        e = file ? E_NOTDIR : E_NOENT;
    else if (is_dir && (rights & R_FD_WRITE))
        e = E_ISDIR;
    else if (!file && !is_dir) {
        if (!(oflags & O_CREAT_))
            e = E_NOENT;
        else if (ancestor_is_file(rs->fs, norm, n))
            e = E_NOTDIR;
        else if (!(file = pr__fs_create(rs->fs, norm, n, false)))
            e = rs->fs->create_err == -2 ? E_NOSPC : E_NOMEM;
        else
            pr__fs_touch(rs->fs, file->node); /* creating is the file's first write */
    } else if (file && (oflags & O_TRUNC_)) {
        e = fs_errno(pr__fs_truncate(rs->fs, file->node, 0));
    }
    if (e) {
        free(norm);
        RET(e);
    }
    int64_t fd = allocfd(w);
    if (fd < 0) {
        free(norm);
        RET(E_MFILE);
    }
    wfd *f = &w->fds[fd];
    memset(f, 0, sizeof *f);
    f->rights = rights & (is_dir ? R_DIR_ALL : R_FILE_ALL);
    f->inherit = inherit & R_ALL;
    f->flags = is_dir ? 0 : fdflags;
    if (is_dir) {
        f->kind = K_DIR;
        f->dir = norm;
        f->dir_len = n;
    } else {
        free(norm);
        f->kind = K_FILE;
        f->file = file->node;
        pr__fs_node_open(file->node);
    }
    st32(mem(cx, U32(8), 4), (uint32_t)fd);
    RET(E_SUCCESS);
}

HOST(path_create_directory) {
    path_arg pa;
    int e = path_begin(cx, env, U32(0), U32(1), U32(2), R_MKDIR, false, &pa);
    if (e) RET(e);
    if (pa.host) RET(pr__hd_mkdir(pa.host->os, pa.path, pa.len));
    pr_run_state *rs = RS(env);
    if (pa.f || pr__fs_is_dir(rs->fs, pa.norm, pa.n))
        e = E_EXIST;
    else if (ancestor_is_file(rs->fs, pa.norm, pa.n))
        e = E_NOTDIR;
    else if (!pr__fs_create(rs->fs, pa.norm, pa.n, true))
        e = rs->fs->create_err == -2 ? E_NOSPC : E_NOMEM;
    free(pa.norm);
    RET(e);
}

HOST(path_filestat_get) {
    pr_run_state *rs = RS(env);
    uint8_t *p = mem(cx, U32(4), 64);
    if (!p) RET(E_FAULT);
    path_arg pa;
    int e = path_begin(cx, env, U32(0), U32(2), U32(3), R_PATH_STAT, U32(1) & 1, &pa);
    if (e) RET(e);
    if (pa.host) RET(pr__hd_stat(pa.host->os, U32(1), pa.path, pa.len, p));
    if (pa.f && !pa.f->dir && pa.slash)
        e = E_NOTDIR;
    else if (pa.f && !pa.f->dir)
        file_stat(rs, p, rs->host->beyond_contract ? pa.f->node->serial : path_ino(pa.norm, pa.n),
                  pa.f->node);
    else if (pa.f || pr__fs_is_dir(rs->fs, pa.norm, pa.n))
        filestat(p, FT_DIR, path_ino(pa.norm, pa.n), 0, 0);
    else
        e = E_NOENT;
    free(pa.norm);
    RET(e);
}

HOST(path_filestat_set_times) {
    path_arg pa;
    int e = path_begin(cx, env, U32(0), U32(2), U32(3), R_PATH_SET_TIMES, U32(1) & 1, &pa);
    if (e) RET(e);
    if (pa.host)
        RET(pr__hd_set_times(pa.host->os, U32(1), pa.path, pa.len, U64(4), U64(5), U32(6)));
    pr_run_state *rs = RS(env);
    if (pa.f && !pa.f->dir && pa.slash)
        e = E_NOTDIR;
    else if (pa.f && !pa.f->dir)
        e = set_times(rs->fs, pa.f->node, rs->host->beyond_contract, U64(4), U64(5), U32(6));
    else if (pa.f || pr__fs_is_dir(rs->fs, pa.norm, pa.n))
        e = set_times(rs->fs, NULL, false, 0, 0, U32(6));
    else
        e = E_NOENT;
    free(pa.norm);
    RET(e);
}

static int host_readlink(pw_call_ctx *cx, wfd *d, const char *path, const pw_val *a) {
    uint8_t *buf = mem(cx, U32(3), U32(4)), *pn = mem(cx, U32(5), 4);
    if (!buf || !pn) return E_FAULT;
    uint32_t n = 0;
    int e = pr__hd_readlink(d->os, path, U32(2), buf, U32(4), &n);
    if (!e) st32(pn, n);
    return e;
}

HOST(path_readlink) {
    path_arg pa;
    int e = path_begin(cx, env, U32(0), U32(1), U32(2), R_READLINK, false, &pa);
    if (e) RET(e);
    if (pa.host) RET(host_readlink(cx, pa.host, pa.path, a));
    pr_run_state *rs = RS(env);
    if (pa.f && pr_file_is_link(pa.f) && !pa.slash) {
        /* As readlink(2): at most the buffer's size, cut (no NUL); bufused says how much. */
        uint8_t *buf = mem(cx, U32(3), U32(4)), *pn = mem(cx, U32(5), 4);
        if (!buf || !pn)
            e = E_FAULT;
        else {
            uint32_t k = pa.f->node->len < U32(4) ? (uint32_t)pa.f->node->len : U32(4);
            memcpy(buf, pa.f->node->data, k);
            st32(pn, k);
        }
    } else if (pa.slash) {
        e = E_NOTDIR; /* "name/" is never a link (as hostdir.c) */
    } else {
        e = (pa.f || pr__fs_is_dir(rs->fs, pa.norm, pa.n)) ? E_INVAL : E_NOENT;
    }
    free(pa.norm);
    RET(e);
}

HOST(path_remove_directory) {
    path_arg pa;
    int e = path_begin(cx, env, U32(0), U32(1), U32(2), R_RMDIR, false, &pa);
    if (e) RET(e);
    if (pa.host) RET(pr__hd_rmdir(pa.host->os, pa.path, pa.len));
    pr_run_state *rs = RS(env);
    if (pa.n == 1)
        e = E_BUSY;
    else if (pa.f && !pa.f->dir)
        e = E_NOTDIR;
    else if (!pr__fs_is_dir(rs->fs, pa.norm, pa.n))
        e = E_NOENT;
    else {
        /* Implicit directories always have children; explicit ones may be empty. */
        bool empty = true;
        for (size_t i = 0; i < rs->fs->norder && empty; i++) {
            const pr_file *g = rs->fs->order[i];
            empty = g->dead || !(g->path_len > pa.n + 1 && g->path[pa.n] == '/' &&
                                 memcmp(g->path, pa.norm, pa.n) == 0);
        }
        if (!empty)
            e = E_NOTEMPTY;
        else
            pr__fs_remove(rs->fs, pa.f);
    }
    free(pa.norm);
    RET(e);
}

HOST(path_unlink_file) {
    path_arg pa;
    int e = path_begin(cx, env, U32(0), U32(1), U32(2), R_UNLINK, false, &pa);
    if (e) RET(e);
    if (pa.host) RET(pr__hd_unlink(pa.host->os, pa.path, pa.len));
    pr_run_state *rs = RS(env);
    if (pa.f && !pa.f->dir && pa.slash)
        e = E_NOTDIR; /* "name/" names a directory */
    else if (pa.f && !pa.f->dir)
        pr__fs_remove(rs->fs, pa.f); /* a symbolic link goes, not its target */
    else
        e = (pa.f || pr__fs_is_dir(rs->fs, pa.norm, pa.n)) ? E_ISDIR : E_NOENT;
    free(pa.norm);
    RET(e);
}

/* Moves every entry at or under old (length on) to the same place under nw. Live
 * entries are collected first: their pr_file pointers stay valid while entries are
 * created (a rehash only moves dead entries away), their order indices do not. */
static int rename_tree(pr_fs *fs, const char *old, size_t on, const char *nw, size_t nn) {
    pr_file **list = malloc((fs->norder ? fs->norder : 1) * sizeof *list);
    if (!list) return E_NOMEM;
    size_t m = 0;
    for (size_t i = 0; i < fs->norder; i++) {
        pr_file *f = fs->order[i];
        if (f->dead) continue;
        bool self = f->path_len == on && memcmp(f->path, old, on) == 0;
        bool below = f->path_len > on + 1 && f->path[on] == '/' && memcmp(f->path, old, on) == 0;
        if (self || below) list[m++] = f;
    }
    int e = E_SUCCESS;
    for (size_t k = 0; k < m && !e; k++) {
        pr_file *f = list[k];
        size_t tl = nn + (f->path_len - on);
        char *target = malloc(tl + 1);
        if (!target) {
            e = E_NOMEM;
            break;
        }
        memcpy(target, nw, nn);
        memcpy(target + nn, f->path + on, f->path_len - on);
        pr_file *g = pr__fs_find(fs, target, tl);
        if (g) pr__fs_remove(fs, g);
        /* The node moves to the new name (open descriptors keep it); the total stays. */
        g = f->node ? pr__fs_link(fs, target, tl, f->node) : pr__fs_create(fs, target, tl, f->dir);
        if (g && g->node) g->node->ino = pr__path_ino(target, tl); /* the contract's number */
        free(target);
        if (!g) {
            e = fs->create_err == -2 ? E_NOSPC : E_NOMEM;
            break;
        }
        pr__fs_remove(fs, f);
    }
    free(list);
    return e;
}

/* The two directories of a rename or link: both host, or both in memory. */
static int two_dirs(void *env, uint32_t fd1, uint64_t r1, uint32_t fd2, uint64_t r2, wfd **a,
                    wfd **b) {
    *a = getfd(env, fd1);
    *b = getfd(env, fd2);
    if (!*a || !*b) return E_BADF;
    bool ha = (*a)->kind == K_HDIR, hb = (*b)->kind == K_HDIR;
    if ((!ha && (*a)->kind != K_DIR) || (!hb && (*b)->kind != K_DIR)) return E_NOTDIR;
    if (((*a)->rights & r1) != r1 || ((*b)->rights & r2) != r2) return E_NOTCAPABLE;
    if (ha != hb) return 75; /* EXDEV: across file systems */
    return E_SUCCESS;
}

HOST(path_rename) {
    {
        wfd *da, *db;
        int e = two_dirs(env, U32(0), R_RENAME_SOURCE, U32(3), R_RENAME_TARGET, &da, &db);
        if (e) RET(e);
        if (da->kind == K_HDIR) {
            const char *p1, *p2;
            if ((e = guest_path(cx, U32(1), U32(2), &p1)) ||
                (e = guest_path(cx, U32(4), U32(5), &p2)))
                RET(e);
            RET(pr__hd_rename(da->os, p1, U32(2), db->os, p2, U32(5)));
        }
    }
    pr_run_state *rs = RS(env);
    char *on, *nw;
    size_t onl, nwl;
    bool sa, sb;
    int e = resolve(cx, env, U32(0), U32(1), U32(2), false, &on, &onl, &sa);
    if (e) RET(e);
    e = resolve(cx, env, U32(3), U32(4), U32(5), false, &nw, &nwl, &sb);
    if (e) {
        free(on);
        RET(e);
    }
    pr_fs *fs = rs->fs;
    pr_file *src = pr__fs_find(fs, on, onl), *dst = pr__fs_find(fs, nw, nwl);
    bool src_dir = (src && src->dir) || (!src && pr__fs_is_dir(fs, on, onl));
    bool dst_dir = (dst && dst->dir) || (!dst && pr__fs_is_dir(fs, nw, nwl));
    if (!src && !src_dir)
        e = E_NOENT;
    else if (onl == 1 || nwl == 1)
        e = E_BUSY;
    else if (!src_dir && (sa || sb)) /* "name/" names a directory */
        e = E_NOTDIR;
    else if ((onl == nwl && memcmp(on, nw, onl) == 0) ||
             (src && dst && src->node && src->node == dst->node))
        e = E_SUCCESS; /* the same name, or two links of one file: nothing to do */
    else if (!src_dir && dst_dir)
        e = E_ISDIR;
    else if (src_dir && dst && !dst->dir)
        e = E_NOTDIR;
    else if (src_dir && nwl > onl && nw[onl] == '/' && memcmp(nw, on, onl) == 0)
        e = E_INVAL;
    else if (ancestor_is_file(fs, nw, nwl))
        e = E_NOTDIR;
    else if (src_dir && dst_dir) {
        bool empty = !(dst == NULL); /* implicit destination dirs are never empty */
        for (size_t i = 0; i < fs->norder && empty; i++) {
            const pr_file *g = fs->order[i];
            empty = g->dead || !(g->path_len > nwl + 1 && g->path[nwl] == '/' &&
                                 memcmp(g->path, nw, nwl) == 0);
        }
        e = empty ? rename_tree(fs, on, onl, nw, nwl) : E_NOTEMPTY;
    } else {
        e = rename_tree(fs, on, onl, nw, nwl);
    }
    free(on);
    free(nw);
    RET(e);
}

/* Beyond the contract: path_link in the in-memory FS. The new name shares the node
 * (its bytes count once); a directory cannot be linked (EPERM), an existing name is
 * never replaced (EEXIST). */
static int mem_link(pw_call_ctx *cx, void *env, const pw_val *a) {
    pr_fs *fs = RS(env)->fs;
    char *on, *nw;
    size_t onl, nwl;
    bool sa, sb;
    int e = resolve(cx, env, U32(0), U32(2), U32(3), U32(1) & 1, &on, &onl, &sa);
    if (e) return e;
    e = resolve(cx, env, U32(4), U32(5), U32(6), false, &nw, &nwl, &sb);
    if (e) {
        free(on);
        return e;
    }
    pr_file *src = pr__fs_find(fs, on, onl);
    if (!src && !pr__fs_is_dir(fs, on, onl))
        e = E_NOENT;
    else if (sa || sb) /* as linkat(2) on Linux (and hostdir.c) */
        e = !src || src->dir ? E_PERM : sa ? E_NOTDIR : E_NOENT;
    else if (pr__fs_find(fs, nw, nwl) || pr__fs_is_dir(fs, nw, nwl))
        e = E_EXIST; /* checked before the source's type, as linkat(2) */
    else if (!src || src->dir)
        e = E_PERM;
    else if (ancestor_is_file(fs, nw, nwl))
        e = E_NOTDIR;
    else if (!pr__fs_link(fs, nw, nwl, src->node))
        e = fs->create_err == -2 ? E_NOSPC : E_NOMEM;
    free(on);
    free(nw);
    return e;
}

HOST(path_link) {
    wfd *da, *db;
    int e = two_dirs(env, U32(0), R_LINK_SOURCE, U32(4), R_LINK_TARGET, &da, &db);
    if (e) RET(e);
    if (da->kind != K_HDIR) {
        /* The contract's file system has no links; beyond the contract it has. */
        if (!RS(env)->host->beyond_contract) RET(E_NOTSUP);
        RET(mem_link(cx, env, a));
    }
    const char *p1, *p2;
    if ((e = guest_path(cx, U32(2), U32(3), &p1)) || (e = guest_path(cx, U32(5), U32(6), &p2)))
        RET(e);
    RET(pr__hd_link(da->os, U32(1), p1, U32(3), db->os, p2, U32(6)));
}

/* Beyond the contract: path_symlink in the in-memory FS. As on a host directory an
 * absolute target is refused (EPERM): a link never points out of the preopen. */
static int mem_symlink(pw_call_ctx *cx, void *env, const pw_val *a) {
    pr_fs *fs = RS(env)->fs;
    const char *t;
    int e = guest_path(cx, U32(0), U32(1), &t);
    if (e) return e;
    uint32_t tn = U32(1);
    if (tn == 0) return E_NOENT;
    if (t[0] == '/') return E_PERM;
    if (tn > LINK_MAX_LEN) return E_NAMETOOLONG;
    if (!pr__utf8_valid((const uint8_t *)t, tn)) return E_ILSEQ;
    char *nw;
    size_t nwl;
    bool slash;
    e = resolve(cx, env, U32(2), U32(3), U32(4), false, &nw, &nwl, &slash);
    if (e) return e;
    /* The target's bytes are copied first: guest memory is the caller's to change. */
    char small[256], *tc = tn <= sizeof small ? small : malloc(tn);
    if (!tc) {
        free(nw);
        return E_NOMEM;
    }
    memcpy(tc, t, tn);
    if (pr__fs_find(fs, nw, nwl) || pr__fs_is_dir(fs, nw, nwl))
        e = E_EXIST;
    else if (slash)
        e = E_NOENT;
    else if (ancestor_is_file(fs, nw, nwl))
        e = E_NOTDIR;
    else if (!pr__fs_symlink(fs, nw, nwl, tc, tn))
        e = fs->create_err == -2 ? E_NOSPC : E_NOMEM;
    if (tc != small) free(tc);
    free(nw);
    return e;
}

HOST(path_symlink) {
    wfd *d = getfd(env, U32(2));
    if (!d) RET(E_BADF);
    if (d->kind != K_DIR && d->kind != K_HDIR) RET(E_NOTDIR);
    NEED(d, R_SYMLINK);
    if (d->kind != K_HDIR) RET(RS(env)->host->beyond_contract ? mem_symlink(cx, env, a) : E_NOTSUP);
    const char *target, *path;
    int e;
    if ((e = guest_path(cx, U32(0), U32(1), &target)) ||
        (e = guest_path(cx, U32(3), U32(4), &path)))
        RET(e);
    RET(pr__hd_symlink(target, U32(1), d->os, path, U32(4)));
}

/* ---------------------------------------------------------------- poll, sockets */

/* The current time of clock id (0..3) without advancing the deterministic clock. */
static uint64_t clock_peek(const pr_run_state *rs, uint32_t id) {
    if (rs->opt->seed) return rs->det_clock + (id == 0 ? DET_EPOCH_NS : 0);
    static const clockid_t ids[4] = {CLOCK_REALTIME, CLOCK_MONOTONIC, CLOCK_THREAD_CPUTIME_ID,
                                     CLOCK_THREAD_CPUTIME_ID};
    struct timespec ts;
    clock_gettime(ids[id], &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Sleeps ns of wall time, but never past the run's wall-clock deadline: false when
 * the deadline cut the sleep short (the run is then over its wall limit). */
static bool room_sleep(const pr_run_state *rs, uint64_t ns) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    uint64_t t = (uint64_t)now.tv_sec * 1000000000ull + (uint64_t)now.tv_nsec;
    if (t >= rs->wall_deadline_ns) return false;
    bool cut = ns > rs->wall_deadline_ns - t;
    if (cut) ns = rs->wall_deadline_ns - t;
    struct timespec req = {(time_t)(ns / 1000000000ull), (long)(ns % 1000000000ull)}, rem;
    while (nanosleep(&req, &rem) != 0 && errno == EINTR)
        req = rem;
    return !cut;
}

/* A read subscription on a connected stdin (peri run): the one descriptor that can be
 * not ready. Everything else in the room is always ready. */
static bool stdin_sub(pr_run_state *rs, void *env, const uint8_t *s) {
    if (s[8] != 1 || !rs->opt->stdin_connected) return false;
    wfd *f = getfd(env, ld32(s + 16));
    return f && f->kind == K_STDIN;
}

/* Waits up to ms (-1: no bound) for stdin to be readable (or at its end). */
static bool stdin_wait(int fd, int ms) {
    struct pollfd p = {fd, POLLIN, 0};
    int rc;
    while ((rc = poll(&p, 1, ms)) < 0 && errno == EINTR)
        ;
    return rc > 0;
}

HOST(poll_oneoff) {
    pr_run_state *rs = RS(env);
    uint32_t nsubs = U32(2);
    if (nsubs == 0) RET(E_INVAL);
    uint8_t *in = mem(cx, U32(0), 48 * (uint64_t)nsubs),
            *out = mem(cx, U32(1), 32 * (uint64_t)nsubs);
    uint8_t *pn = mem(cx, U32(3), 4);
    if (!in || !out || !pn) RET(E_FAULT);
    /* Descriptors in the room are always ready (stdin at EOF, files, stdout), except a
     * connected stdin (peri run), which poll(2) asks: when a ready descriptor
     * subscription exists, poll returns those at once. Otherwise it waits for
     * the earliest clock subscription: real clocks sleep (bounded by the run's wall
     * limit; sleeping costs no CPU time), deterministic clocks just move forward. */
    uint32_t nev = 0;
    bool any_fd = false, has_stdin = false, stdin_now = false;
    int in_fd = rs->opt->stdin_fd;
    uint64_t wait = UINT64_MAX;
    for (uint32_t i = 0; i < nsubs; i++) {
        const uint8_t *s = in + 48 * i;
        if (stdin_sub(rs, env, s)) {
            has_stdin = true;
            if (!stdin_now && stdin_wait(in_fd, 0)) stdin_now = any_fd = true;
        } else if (s[8] == 1 || s[8] == 2) {
            any_fd = true;
        }
        if (s[8] != 0) continue;
        uint32_t id = ld32(s + 16);
        if (id > 3) {
            wait = 0; /* reported as an error event right away */
            continue;
        }
        uint64_t timeout = ld64(s + 24), rel = timeout;
        if (ld16(s + 40) & 1) { /* absolute */
            uint64_t now = clock_peek(rs, id);
            rel = timeout > now ? timeout - now : 0;
        }
        if (rel < wait) wait = rel;
    }
    if (any_fd) wait = 0;
    if (has_stdin && !any_fd && !rs->opt->seed) {
        /* Wait for stdin or the earliest clock, within the run's wall limit. */
        struct timespec now;
        clock_gettime(CLOCK_MONOTONIC, &now);
        uint64_t t = (uint64_t)now.tv_sec * 1000000000ull + (uint64_t)now.tv_nsec;
        uint64_t left = t < rs->wall_deadline_ns ? rs->wall_deadline_ns - t : 0;
        uint64_t w = wait < left ? wait : left;
        int ms = w / 1000000ull > INT32_MAX ? INT32_MAX : (int)((w + 999999ull) / 1000000ull);
        if (stdin_wait(in_fd, ms)) {
            stdin_now = any_fd = true;
            wait = 0;
        } else if (wait > left) {
            rs->end = PR_END_PLATFORM;
            rs->stop = PR_STOP_WALL;
            snprintf(rs->end_msg, sizeof rs->end_msg, "隔离运行失败：运行时间超过 %u ms",
                     rs->wall_ms);
            return pw_ctx_trap(cx, "%s", rs->end_msg);
        }
        /* Otherwise the earliest clock expired while waiting: reported below. */
    }
    if (wait && wait != UINT64_MAX && !(has_stdin && !rs->opt->seed)) {
        if (rs->opt->seed) {
            rs->det_clock += wait;
        } else if (!room_sleep(rs, wait)) {
            rs->end = PR_END_PLATFORM;
            rs->stop = PR_STOP_WALL;
            snprintf(rs->end_msg, sizeof rs->end_msg, "隔离运行失败：运行时间超过 %u ms",
                     rs->wall_ms);
            return pw_ctx_trap(cx, "%s", rs->end_msg);
        }
    }
    for (uint32_t i = 0; i < nsubs; i++) {
        const uint8_t *s = in + 48 * i;
        uint8_t tag = s[8];
        uint8_t ev[32] = {0};
        st64(ev, ld64(s));
        ev[10] = tag;
        if (tag == 0) {
            uint32_t id = ld32(s + 16);
            if (id > 3) {
                st16(ev + 8, E_INVAL);
            } else {
                uint64_t timeout = ld64(s + 24), rel = timeout;
                if (ld16(s + 40) & 1) {
                    uint64_t now = clock_peek(rs, id);
                    rel = timeout > now ? timeout - now : 0;
                }
                if (any_fd ? rel > 0 : rel > wait) continue; /* not expired */
            }
        } else if (stdin_sub(rs, env, s)) {
            if (!stdin_now) continue; /* not ready */
            int avail = 0;
            if (ioctl(in_fd, FIONREAD, &avail) != 0 || avail <= 0)
                st16(ev + 24, 1); /* hang-up: nothing to read is the end */
            else
                st64(ev + 16, (uint64_t)avail);
        } else if (tag == 1 || tag == 2) {
            wfd *f = getfd(env, ld32(s + 16));
            if (!f)
                st16(ev + 8, E_BADF);
            else if (tag == 1 && f->kind == K_STDIN)
                st16(ev + 24, 1); /* hang-up: EOF */
            else if (tag == 1 && f->kind == K_FILE && f->file->len > f->off)
                st64(ev + 16, f->file->len - f->off);
        } else {
            st16(ev + 8, E_INVAL);
        }
        memcpy(out + 32 * nev++, ev, 32);
    }
    st32(pn, nev);
    RET(E_SUCCESS);
}

HOST(sock_accept) {
    RET(getfd(env, U32(0)) ? E_NOTSOCK : E_BADF);
}
HOST(sock_recv) {
    RET(getfd(env, U32(0)) ? E_NOTSOCK : E_BADF);
}
HOST(sock_send) {
    RET(getfd(env, U32(0)) ? E_NOTSOCK : E_BADF);
}
HOST(sock_shutdown) {
    RET(getfd(env, U32(0)) ? E_NOTSOCK : E_BADF);
}

/* ---------------------------------------------------------------- binding */

typedef struct entry {
    const char *name;
    pw_host_fn fn;
} entry;

static const entry FUNCS[] = {
    {"args_get", w_args_get},
    {"args_sizes_get", w_args_sizes_get},
    {"environ_get", w_environ_get},
    {"environ_sizes_get", w_environ_sizes_get},
    {"clock_res_get", w_clock_res_get},
    {"clock_time_get", w_clock_time_get},
    {"fd_advise", w_fd_advise},
    {"fd_allocate", w_fd_allocate},
    {"fd_close", w_fd_close},
    {"fd_datasync", w_fd_sync},
    {"fd_fdstat_get", w_fd_fdstat_get},
    {"fd_fdstat_set_flags", w_fd_fdstat_set_flags},
    {"fd_fdstat_set_rights", w_fd_fdstat_set_rights},
    {"fd_filestat_get", w_fd_filestat_get},
    {"fd_filestat_set_size", w_fd_filestat_set_size},
    {"fd_filestat_set_times", w_fd_filestat_set_times},
    {"fd_pread", w_fd_pread},
    {"fd_prestat_get", w_fd_prestat_get},
    {"fd_prestat_dir_name", w_fd_prestat_dir_name},
    {"fd_pwrite", w_fd_pwrite},
    {"fd_read", w_fd_read},
    {"fd_readdir", w_fd_readdir},
    {"fd_renumber", w_fd_renumber},
    {"fd_seek", w_fd_seek},
    {"fd_sync", w_fd_sync},
    {"fd_tell", w_fd_tell},
    {"fd_write", w_fd_write},
    {"path_create_directory", w_path_create_directory},
    {"path_filestat_get", w_path_filestat_get},
    {"path_filestat_set_times", w_path_filestat_set_times},
    {"path_link", w_path_link},
    {"path_open", w_path_open},
    {"path_readlink", w_path_readlink},
    {"path_remove_directory", w_path_remove_directory},
    {"path_rename", w_path_rename},
    {"path_symlink", w_path_symlink},
    {"path_unlink_file", w_path_unlink_file},
    {"poll_oneoff", w_poll_oneoff},
    {"proc_exit", w_proc_exit},
    {"proc_raise", w_proc_raise},
    {"sched_yield", w_sched_yield},
    {"random_get", w_random_get},
    {"sock_accept", w_sock_accept},
    {"sock_recv", w_sock_recv},
    {"sock_send", w_sock_send},
    {"sock_shutdown", w_sock_shutdown},
};

static bool is_wasi_module(const pw_import_desc *imp) {
    return imp->module_len == sizeof WASI_MODULE - 1 &&
           memcmp(imp->module, WASI_MODULE, imp->module_len) == 0;
}

static bool wasi_matches(const pw_module *m) {
    uint32_t n = pw_module_import_count(m);
    for (uint32_t i = 0; i < n; i++) {
        pw_import_desc d;
        pw_module_import(m, i, &d);
        if (!is_wasi_module(&d)) return false;
    }
    return true;
}

static void wasi_free(wasi *w, pr_fs *fs) {
    for (uint32_t i = 0; i < w->nfds; i++)
        if (w->fds[i].kind != K_FREE) closefd(fs, &w->fds[i]);
    if (w->fds != w->fixed) free(w->fds);
    free(w);
}

/* Descriptors 0-2, then the host directories in order, then the room's "/" unless a
 * host directory is the guest's "/". */
static wasi *state(pr_run_state *rs) {
    if (rs->abi_state) return rs->abi_state;
    wasi *w = calloc(1, sizeof *w);
    if (!w) return NULL;
    w->fds = w->fixed;
    w->nfds = NFIXED;
    w->fixed[0] = (wfd){.kind = K_STDIN, .rights = R_STDIN};
    w->fixed[1] = (wfd){.kind = K_STDOUT, .rights = R_STDOUT};
    w->fixed[2] = (wfd){.kind = K_STDERR, .rights = R_STDOUT};
    const pr_exec_options *o = rs->opt;
    bool root_taken = false;
    for (size_t i = 0; i < o->ndirs; i++) {
        int64_t fd = allocfd(w);
        int os = fd < 0 ? -1 : fcntl(o->dirs[i].fd, F_DUPFD_CLOEXEC, 3);
        if (os < 0) {
            wasi_free(w, NULL);
            return NULL;
        }
        const char *name = o->dirs[i].guest ? o->dirs[i].guest : "/";
        uint64_t drop = o->dirs_read_only ? R_WRITES : 0;
        w->fds[fd] = (wfd){.kind = K_HDIR,
                           .os = os,
                           .rights = R_DIR_ALL & ~drop,
                           .inherit = R_ALL & ~drop,
                           .preopen = name};
        root_taken |= strcmp(name, "/") == 0;
    }
    if (!root_taken && !o->no_memory_root) {
        int64_t fd = allocfd(w);
        if (fd < 0) {
            wasi_free(w, NULL);
            return NULL;
        }
        w->fds[fd] = (wfd){.kind = K_DIR, .rights = R_DIR_ALL, .inherit = R_ALL, .preopen = "/"};
    }
    rs->abi_state = w;
    return w;
}

static bool wasi_resolve(void *ctx, pw_store *s, const pw_module *m, const pw_import_desc *imp,
                         pw_extern *out) {
    pr_run_state *rs = ctx;
    if (!is_wasi_module(imp) || imp->kind != PW_EXTERN_FUNC) return false;
    if (!state(rs)) return false;
    for (size_t i = 0; i < sizeof FUNCS / sizeof *FUNCS; i++) {
        if (strlen(FUNCS[i].name) != imp->name_len ||
            memcmp(FUNCS[i].name, imp->name, imp->name_len) != 0)
            continue;
        /* Built with the function's own type (wasi_sig.c), never the import's: an
         * import of another type fails to link (incompatible import type). */
        (void)m;
        pw_error e;
        pw_functype ft;
        pw_func *f = pr__wasi_functype(FUNCS[i].name, &ft)
                         ? pw_func_new_host(s, &ft, FUNCS[i].fn, rs, &e)
                         : NULL;
        if (!f) return false;
        out->kind = PW_EXTERN_FUNC;
        out->u.func = f;
        return true;
    }
    return false;
}

static pw_status wasi_start(pr_run_state *rs, pw_error *err) {
    if (!state(rs)) {
        err->status = PW_ERR_NOMEM;
        return PW_ERR_NOMEM;
    }
    pw_extern ex;
    const char *inv = rs->opt->invoke;
    if (inv) { /* peri run --invoke: the caller checked the export's type */
        if (!pw_instance_export(rs->inst, inv, strlen(inv), &ex) || ex.kind != PW_EXTERN_FUNC) {
            rs->end = PR_END_HOST;
            snprintf(rs->end_msg, sizeof rs->end_msg, "程序没有导出 %s", inv);
            err->status = PW_ERR_TRAP;
            err->trap = PW_TRAP_HOST;
            return PW_ERR_TRAP;
        }
        return pw_call(rs->store, ex.u.func, rs->opt->invoke_args, rs->opt->invoke_nargs,
                       rs->opt->invoke_results, rs->opt->invoke_nresults, err);
    }
    if (!pw_instance_export(rs->inst, "_start", 6, &ex) || ex.kind != PW_EXTERN_FUNC) {
        rs->end = PR_END_HOST;
        snprintf(rs->end_msg, sizeof rs->end_msg, "程序没有导出 _start");
        err->status = PW_ERR_TRAP;
        err->trap = PW_TRAP_HOST;
        return PW_ERR_TRAP;
    }
    return pw_call(rs->store, ex.u.func, NULL, 0, NULL, 0, err);
}

static void wasi_finish(pr_run_state *rs) {
    wasi *w = rs->abi_state;
    if (!w) return;
    wasi_free(w, rs->fs);
    rs->abi_state = NULL;
}

bool pr__wasi_resolve(void *ctx, pw_store *s, const pw_module *m, const pw_import_desc *imp,
                      pw_extern *out) {
    return wasi_resolve(ctx, s, m, imp, out);
}

void pr__wasi_finish(pr_run_state *rs) {
    wasi_finish(rs);
}

bool pr__wasi_only_std_fds(const pr_run_state *rs) {
    const wasi *w = rs->abi_state;
    if (!w) return true;
    for (uint32_t i = 0; i < w->nfds; i++) {
        uint8_t want = i == 0   ? K_STDIN
                       : i == 1 ? K_STDOUT
                       : i == 2 ? K_STDERR
                       : i == 3 ? K_DIR
                                : K_FREE;
        if (w->fds[i].kind != want || (i == 3 && w->fds[i].dir) || (i == 0 && w->fds[i].off))
            return false;
    }
    return true;
}

bool pr__wasi_only_initial_fds(const pr_run_state *rs) {
    const wasi *w = rs->abi_state;
    if (!w) return true;
    uint32_t ndirs = (uint32_t)rs->opt->ndirs;
    for (uint32_t i = 0; i < w->nfds; i++) {
        uint8_t want = i == 0           ? K_STDIN
                       : i == 1         ? K_STDOUT
                       : i == 2         ? K_STDERR
                       : i < 3 + ndirs  ? K_HDIR
                       : i == 3 + ndirs ? K_DIR
                                        : K_FREE;
        if (w->fds[i].kind != want || (want == K_HDIR && !w->fds[i].preopen) ||
            (want == K_DIR && w->fds[i].dir) || (i == 0 && w->fds[i].off))
            return false;
    }
    return true;
}

const pr_abi pr__abi_wasi = {.name = "wasi_snapshot_preview1",
                             .matches = wasi_matches,
                             .resolve = wasi_resolve,
                             .start = wasi_start,
                             .finish = wasi_finish};
