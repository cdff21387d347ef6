/*
 * search.c — the search tools: glob (workspace-relative paths matching a pattern with
 * "**") and grep (POSIX extended regex over files, optional file glob). Both walk the
 * tree without following symlinks, skip .git, honour the cancel flag and bound output.
 */
#include "tools_int.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAX_SEGMENTS     128
#define MAX_VISIT        200000 /* entries a walk may look at */
#define MAX_GLOB_RESULTS 1000
#define MAX_GREP_FILE    (8u << 20)
#define MAX_LINE_SHOWN   400

/* ---------------------------------------------------------------- glob matching */

typedef struct segs {
    const char *s[MAX_SEGMENTS];
    size_t n[MAX_SEGMENTS];
    size_t count;
} segs;

static bool split(const char *p, segs *out) {
    out->count = 0;
    while (*p) {
        while (*p == '/')
            p++;
        if (!*p) break;
        size_t n = strcspn(p, "/");
        if (out->count == MAX_SEGMENTS) return false;
        out->s[out->count] = p;
        out->n[out->count++] = n;
        p += n;
    }
    return true;
}

/* One pattern token at p[*pi] against the character c: '?', '[...]' ('!' or '^' negates,
 * a-z ranges), '\x' escapes, else a literal. Advances *pi past the token on a match. */
static bool token_match(const char *p, size_t pn, size_t *pi, unsigned char c) {
    size_t i = *pi;
    if (p[i] == '?') {
        *pi = i + 1;
        return true;
    }
    if (p[i] == '\\' && i + 1 < pn) {
        *pi = i + 2;
        return (unsigned char)p[i + 1] == c;
    }
    if (p[i] == '[') {
        size_t j = i + 1;
        bool neg = j < pn && (p[j] == '!' || p[j] == '^');
        if (neg) j++;
        bool hit = false, first = true;
        while (j < pn && (p[j] != ']' || first)) {
            first = false;
            unsigned char lo = (unsigned char)p[j], hi = lo;
            if (j + 2 < pn && p[j + 1] == '-' && p[j + 2] != ']') {
                hi = (unsigned char)p[j + 2];
                j += 3;
            } else {
                j++;
            }
            if (c >= lo && c <= hi) hit = true;
        }
        if (j < pn) { /* a closed class */
            *pi = j + 1;
            return hit != neg;
        }
        /* no closing ']': the '[' is a literal */
    }
    *pi = i + 1;
    return (unsigned char)p[i] == c;
}

/* fnmatch for one path segment, in O(len(pattern) * len(name)) at worst: '*' keeps only
 * its latest backtrack point (enough, since every other token matches one character).
 * period: a leading '.' of the name must be matched by a literal '.' (FNM_PERIOD). */
static bool seg_match(const char *p, size_t pn, const char *s, size_t sn, bool period) {
    if (period && sn && s[0] == '.' && !(pn && p[0] == '.')) return false;
    size_t pi = 0, si = 0, star_p = (size_t)-1, star_s = 0;
    while (si < sn) {
        if (pi < pn) {
            if (p[pi] == '*') {
                star_p = ++pi;
                star_s = si;
                continue;
            }
            size_t next = pi;
            if (token_match(p, pn, &next, (unsigned char)s[si])) {
                pi = next;
                si++;
                continue;
            }
        }
        if (star_p == (size_t)-1) return false;
        pi = star_p;
        si = ++star_s;
    }
    while (pi < pn && p[pi] == '*')
        pi++;
    return pi == pn;
}

/* Whole-path matching with "**" (zero or more segments, not hidden ones). Memoised on
 * (pattern index, path index): at most (MAX_SEGMENTS + 1)^2 states, each tried once, so
 * any number of "**" stays polynomial. memo: 0 unknown, 1 no, 2 yes. */
typedef struct matcher {
    const segs *pat, *path;
    unsigned char memo[MAX_SEGMENTS + 1][MAX_SEGMENTS + 1];
} matcher;

static bool match_from(matcher *m, size_t pi, size_t si) {
    if (m->memo[pi][si]) return m->memo[pi][si] == 2;
    const segs *pat = m->pat, *path = m->path;
    bool ok;
    if (pi == pat->count) {
        ok = si == path->count;
    } else if (pat->n[pi] == 2 && memcmp(pat->s[pi], "**", 2) == 0) {
        ok = false;
        for (size_t k = si; k <= path->count && !ok; k++) {
            if (match_from(m, pi + 1, k))
                ok = true;
            else if (k < path->count && path->s[k][0] == '.')
                break;
        }
    } else {
        ok = si < path->count &&
             seg_match(pat->s[pi], pat->n[pi], path->s[si], path->n[si], true) &&
             match_from(m, pi + 1, si + 1);
    }
    m->memo[pi][si] = ok ? 2 : 1;
    return ok;
}

bool ptl__glob_match(const char *pattern, const char *path) {
    segs p, s;
    if (!split(pattern, &p) || !split(path, &s)) return false;
    matcher *m = calloc(1, sizeof *m);
    if (!m) return false;
    m->pat = &p;
    m->path = &s;
    bool ok = match_from(m, 0, 0);
    free(m);
    return ok;
}

/* ---------------------------------------------------------------- tree walk */

static int cmp_name(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

#define MAX_DEPTH 256 /* directory levels below the start (each holds a descriptor) */

typedef struct walk {
    const ptl_ctx *ctx;
    size_t visited;
    bool cancelled, limit_hit;
    /* called for each regular file (dirfd/name; rel is relative to the walk start).
     * Returns false to stop the walk. */
    bool (*on_file)(struct walk *w, int dirfd, const char *name, const char *rel);
    void *ud;
} walk;

static bool walk_cancelled(walk *w) {
    if (w->ctx->cancel && atomic_load(w->ctx->cancel)) w->cancelled = true;
    return w->cancelled;
}

/* Walks the directory open at dfd (not closed here). Every child is reached through
 * its parent's descriptor with O_NOFOLLOW: a symlink swapped in during the walk is never
 * followed out of the workspace. */
static bool walk_dir(walk *w, int dfd, const char *rel, int depth) {
    int lfd = openat(dfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    DIR *d = lfd >= 0 ? fdopendir(lfd) : NULL;
    if (!d) {
        if (lfd >= 0) close(lfd);
        return true; /* unreadable directories are skipped */
    }
    struct dirent *e;
    bool go = true;
    char **names = NULL;
    size_t n = 0, cap = 0;
    while ((e = readdir(d))) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0 ||
            strcmp(e->d_name, ".git") == 0)
            continue;
        if ((n & 1023) == 0 && walk_cancelled(w)) {
            go = false;
            break;
        }
        if (n == cap) {
            cap = cap ? cap * 2 : 32;
            char **nn = realloc(names, cap * sizeof *nn);
            if (!nn) break;
            names = nn;
        }
        if (!(names[n] = strdup(e->d_name))) break;
        n++;
    }
    closedir(d);
    /* sorted so results are stable across file systems */
    if (n > 1) qsort(names, n, sizeof *names, cmp_name);
    for (size_t i = 0; i < n && go; i++) {
        if (walk_cancelled(w)) {
            go = false;
            break;
        }
        if (++w->visited > MAX_VISIT) {
            w->limit_hit = true;
            go = false;
            break;
        }
        char *crel = NULL;
        if (asprintf(&crel, "%s%s%s", rel, *rel ? "/" : "", names[i]) < 0) crel = NULL;
        struct stat sb;
        if (crel && fstatat(dfd, names[i], &sb, AT_SYMLINK_NOFOLLOW) == 0) {
            if (S_ISDIR(sb.st_mode) && depth < MAX_DEPTH) {
                int cfd = openat(dfd, names[i],
                                 O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
                if (cfd >= 0) {
                    go = walk_dir(w, cfd, crel, depth + 1);
                    close(cfd);
                }
            } else if (S_ISREG(sb.st_mode)) {
                go = w->on_file(w, dfd, names[i], crel);
            }
        }
        free(crel);
    }
    pb_strv_free(names, n);
    return go;
}

/* ---------------------------------------------------------------- glob tool */

typedef struct glob_state {
    const char *pattern;
    const char *prefix; /* walk start relative to root, "" for root */
    char **hits;
    size_t n, cap, total;
    bool oom;
} glob_state;

static bool glob_file(walk *w, int dirfd, const char *name, const char *rel) {
    (void)dirfd, (void)name;
    glob_state *g = w->ud;
    if (!ptl__glob_match(g->pattern, rel)) return true;
    g->total++;
    if (g->n >= MAX_GLOB_RESULTS) return true;
    if (g->n == g->cap) {
        g->cap = g->cap ? g->cap * 2 : 64;
        char **nh = realloc(g->hits, g->cap * sizeof *nh);
        if (!nh) {
            g->oom = true;
            return false;
        }
        g->hits = nh;
    }
    if (asprintf(&g->hits[g->n], "%s%s%s", g->prefix, *g->prefix ? "/" : "", rel) < 0) {
        g->oom = true;
        return false;
    }
    g->n++;
    return true;
}

/* Resolves an optional path argument beneath the root: *fd (O_RDONLY, a directory or a
 * regular file; caller closes) and *prefix, its path relative to the root ("" for the
 * root). On failure the tool error is in r and *fd is -1. */
static ptl_status start_at(const ptl_ctx *ctx, ptl_result *r, const char *tool, const char *path,
                           int *fd, struct stat *sb, char **prefix) {
    *fd = -1;
    *prefix = NULL;
    if (!path) path = ".";
    char *rel = NULL;
    int rc = *path ? ptl__rel(ctx->cwd, path, &rel) : -ENOENT;
    int rootfd = rc < 0 ? rc : ptl__root_fd(ctx->cwd);
    if (rootfd < 0) {
        free(rel);
        if (rc == -ENOMEM) return PTL_ERR_NOMEM;
        if (rc == -EXDEV) return ptl__error(r, "path escapes the workspace: %s", path);
        if (rc < 0) return ptl__error(r, "no such file or directory: %s", path);
        return ptl__error(r, "the workspace directory is not accessible: %s", ctx->cwd);
    }
    int f = ptl__open_beneath(rootfd, rel, O_RDONLY, 0, 0);
    close(rootfd);
    if (f < 0) {
        free(rel);
        ptl_fstatus s = ptl__errno_status(-f);
        if (s == PTL_F_NOMEM) return PTL_ERR_NOMEM;
        return ptl__error(r, "%s: %s: %s", tool, ptl_fstatus_text(s), path);
    }
    if (fstat(f, sb) != 0 || !(S_ISDIR(sb->st_mode) || S_ISREG(sb->st_mode))) {
        close(f);
        free(rel);
        return ptl__error(r, "%s: not a directory or regular file: %s", tool, path);
    }
    /* the prefix shown in results: the normalised path below the root */
    char *root = realpath(ctx->cwd, NULL), *abs = ptl__fd_path(f, ctx->cwd, rel);
    *prefix = root && abs ? ptl__relative(root, abs) : NULL;
    free(root);
    free(abs);
    free(rel);
    if (!*prefix) {
        close(f);
        return PTL_ERR_NOMEM;
    }
    if (strcmp(*prefix, ".") == 0) (*prefix)[0] = '\0';
    *fd = f;
    return PTL_OK;
}

ptl_status ptl__glob(pj_t *in, const ptl_ctx *ctx, ptl_result *r) {
    bool bad = false;
    const char *pattern = ptl__str(in, "pattern", &bad), *path = ptl__str(in, "path", &bad);
    if (bad || !pattern || !*pattern)
        return ptl__error(r, "glob: needs \"pattern\" (string) and optional \"path\"");
    int fd;
    struct stat sb;
    char *prefix;
    ptl_status st = start_at(ctx, r, "glob", path, &fd, &sb, &prefix);
    if (fd < 0) return st;
    if (!S_ISDIR(sb.st_mode)) {
        st = ptl__error(r, "glob: not a directory: %s", path);
        goto done;
    }
    glob_state g = {.pattern = pattern, .prefix = prefix};
    walk w = {.ctx = ctx, .on_file = glob_file, .ud = &g};
    walk_dir(&w, fd, "", 0);
    if (g.oom) {
        st = PTL_ERR_NOMEM;
    } else {
        ptl__out o;
        ptl__out_init(&o, ctx->max_output);
        for (size_t i = 0; i < g.n; i++)
            ptl__out_addf(&o, "%s\n", g.hits[i]);
        if (g.total == 0) ptl__out_addf(&o, "no files match %s", pattern);
        if (g.total > g.n) ptl__out_addf(&o, "[%zu more matches not shown]\n", g.total - g.n);
        if (w.limit_hit) ptl__out_addf(&o, "[search stopped after %d entries]\n", MAX_VISIT);
        if (w.cancelled) ptl__out_addf(&o, "[cancelled]\n");
        st = ptl__finish(r, &o, false);
        if (st == PTL_OK) st = ptl__text_content(r);
        if (st == PTL_OK && w.cancelled) st = PTL_CANCELLED;
    }
    pb_strv_free(g.hits, g.n);
done:
    close(fd);
    free(prefix);
    return st;
}

/* ---------------------------------------------------------------- grep tool */

typedef struct grep_state {
    regex_t re;
    const char *file_glob;
    const char *prefix;
    long long max_results, results;
    ptl__out *o;
    size_t files_with_hits;
} grep_state;

static bool file_glob_ok(const char *glob, const char *rel) {
    if (!glob) return true;
    if (strchr(glob, '/')) return ptl__glob_match(glob, rel);
    const char *base = strrchr(rel, '/');
    base = base ? base + 1 : rel;
    return seg_match(glob, strlen(glob), base, strlen(base), false);
}

static bool grep_buffer(walk *w, char *data, size_t len, const char *rel);

static bool grep_file(walk *w, int dirfd, const char *name, const char *rel) {
    grep_state *g = w->ud;
    if (!file_glob_ok(g->file_glob, rel)) return true;
    /* opened through its directory's descriptor, never followed if it became a symlink;
     * FIFOs, devices and hard-linked files are skipped */
    int fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    if (fd < 0) return true;
    struct stat sb;
    char *data = NULL;
    size_t len = 0;
    ptl_fstatus fs = ptl__check_regular(fd, &sb);
    if (fs == PTL_F_OK) fs = ptl__read_fd(fd, MAX_GREP_FILE, false, &data, &len);
    close(fd);
    bool go = fs != PTL_F_OK || grep_buffer(w, data, len, rel);
    free(data);
    return go;
}

/* Greps one file's content (data is changed: newlines become NULs). */
static bool grep_buffer(walk *w, char *data, size_t len, const char *rel) {
    grep_state *g = w->ud;
    if (ptl__is_binary(data, len)) return true;
    bool any = false;
    long long lineno = 0;
    char *p = data, *end = data + len;
    while (p < end) {
        if ((lineno & 255) == 0 && walk_cancelled(w)) break;
        char *nl = memchr(p, '\n', (size_t)(end - p));
        if (nl) *nl = '\0';
        lineno++;
        if (regexec(&g->re, p, 0, NULL, 0) == 0) {
            size_t n = strlen(p);
            ptl__out_addf(g->o, "%s%s%s:%lld: %.*s%s\n", g->prefix, *g->prefix ? "/" : "", rel,
                          lineno, (int)(n > MAX_LINE_SHOWN ? MAX_LINE_SHOWN : n), p,
                          n > MAX_LINE_SHOWN ? "…" : "");
            any = true;
            if (++g->results >= g->max_results) break;
        }
        if (!nl) break;
        p = nl + 1;
    }
    g->files_with_hits += any;
    return g->results < g->max_results && !g->o->truncated && !w->cancelled;
}

ptl_status ptl__grep(pj_t *in, const ptl_ctx *ctx, ptl_result *r) {
    bool bad = false;
    const char *pattern = ptl__str(in, "pattern", &bad), *path = ptl__str(in, "path", &bad);
    const char *fglob = ptl__str(in, "glob", &bad);
    bool icase = ptl__bool(in, "ignore_case", false, &bad);
    long long maxr = ptl__int(in, "max_results", 200, &bad);
    if (bad || !pattern || !*pattern || maxr < 1)
        return ptl__error(r, "grep: needs \"pattern\" (string); optional \"path\", \"glob\" "
                             "(strings), \"ignore_case\" (boolean), \"max_results\" (>= 1)");
    grep_state g = {.file_glob = fglob, .max_results = maxr};
    int rc = regcomp(&g.re, pattern, REG_EXTENDED | REG_NOSUB | (icase ? REG_ICASE : 0));
    if (rc != 0) {
        char msg[256];
        regerror(rc, &g.re, msg, sizeof msg);
        return ptl__error(r, "grep: bad regular expression: %s", msg);
    }
    int fd;
    struct stat sb;
    char *prefix;
    ptl_status st = start_at(ctx, r, "grep", path, &fd, &sb, &prefix);
    if (fd < 0) {
        regfree(&g.re);
        return st;
    }
    ptl__out o;
    ptl__out_init(&o, ctx->max_output);
    g.o = &o;
    walk w = {.ctx = ctx, .on_file = grep_file, .ud = &g};
    if (S_ISREG(sb.st_mode) && sb.st_nlink > 1) {
        /* refused like by read: another name of the file may be outside */
        close(fd);
        regfree(&g.re);
        free(prefix);
        ptl__out_free(&o);
        return ptl__error(r, "grep: %s: %s", ptl_fstatus_text(PTL_F_HARDLINK), path);
    }
    if (S_ISREG(sb.st_mode)) {
        /* a single file: report it relative to the root; read through its descriptor */
        char *slash = strrchr(prefix, '/');
        char *name = strdup(slash ? slash + 1 : prefix);
        if (slash)
            *slash = '\0';
        else
            prefix[0] = '\0';
        g.prefix = prefix;
        g.file_glob = NULL;
        if (name) {
            char *data = NULL;
            size_t len = 0;
            if (ptl__read_fd(fd, MAX_GREP_FILE, false, &data, &len) == PTL_F_OK)
                grep_buffer(&w, data, len, name);
            free(data);
        }
        free(name);
    } else {
        g.prefix = prefix;
        walk_dir(&w, fd, "", 0);
    }
    close(fd);
    if (g.results == 0)
        ptl__out_addf(&o, "no matches for %s", pattern);
    else if (g.results >= g.max_results)
        ptl__out_addf(&o, "[stopped at %lld matches]\n", g.max_results);
    if (w.limit_hit) ptl__out_addf(&o, "[search stopped after %d entries]\n", MAX_VISIT);
    st = ptl__finish(r, &o, false);
    if (st == PTL_OK) st = ptl__text_content(r);
    if (st == PTL_OK && w.cancelled) st = PTL_CANCELLED;
    regfree(&g.re);
    free(prefix);
    return st;
}
