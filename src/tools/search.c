/*
 * search.c — the search tools: glob (workspace-relative paths matching a pattern with
 * "**") and grep (POSIX extended regex over files, optional file glob). Both walk the
 * tree without following symlinks, skip .git, honour the cancel flag and bound output.
 */
#include "tools_int.h"

#include <dirent.h>
#include <errno.h>
#include <fnmatch.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

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

static bool seg_match(const char *pat, size_t pn, const char *name, size_t nn) {
    char pb[512], nb[512];
    if (pn >= sizeof pb || nn >= sizeof nb) return false;
    memcpy(pb, pat, pn);
    pb[pn] = '\0';
    memcpy(nb, name, nn);
    nb[nn] = '\0';
    return fnmatch(pb, nb, FNM_PERIOD) == 0;
}

static bool match_from(const segs *pat, size_t pi, const segs *path, size_t si) {
    while (pi < pat->count) {
        if (pat->n[pi] == 2 && memcmp(pat->s[pi], "**", 2) == 0) {
            /* "**" eats zero or more whole segments (not hidden ones) */
            for (size_t k = si; k <= path->count; k++) {
                if (match_from(pat, pi + 1, path, k)) return true;
                if (k < path->count && path->s[k][0] == '.') return false;
            }
            return false;
        }
        if (si >= path->count || !seg_match(pat->s[pi], pat->n[pi], path->s[si], path->n[si]))
            return false;
        pi++;
        si++;
    }
    return si == path->count;
}

bool ptl__glob_match(const char *pattern, const char *path) {
    segs p, s;
    if (!split(pattern, &p) || !split(path, &s)) return false;
    return match_from(&p, 0, &s, 0);
}

/* ---------------------------------------------------------------- tree walk */

typedef struct walk {
    const ptl_ctx *ctx;
    const char *root; /* canonical workspace root */
    size_t visited;
    bool cancelled, limit_hit;
    /* called for each regular file; rel is relative to the walk start, abs absolute.
     * Returns false to stop the walk. */
    bool (*on_file)(struct walk *w, const char *abs, const char *rel);
    void *ud;
} walk;

static bool walk_dir(walk *w, const char *abs, const char *rel) {
    DIR *d = opendir(abs);
    if (!d) return true; /* unreadable directories are skipped */
    struct dirent *e;
    bool go = true;
    char **names = NULL;
    size_t n = 0, cap = 0;
    while ((e = readdir(d))) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0 ||
            strcmp(e->d_name, ".git") == 0)
            continue;
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
    for (size_t i = 1; i < n; i++)
        for (size_t j = i; j > 0 && strcmp(names[j - 1], names[j]) > 0; j--) {
            char *t = names[j];
            names[j] = names[j - 1];
            names[j - 1] = t;
        }
    for (size_t i = 0; i < n && go; i++) {
        if (w->ctx->cancel && atomic_load(w->ctx->cancel)) {
            w->cancelled = true;
            go = false;
            break;
        }
        if (++w->visited > MAX_VISIT) {
            w->limit_hit = true;
            go = false;
            break;
        }
        char *cabs = NULL, *crel = NULL;
        if (asprintf(&cabs, "%s/%s", abs, names[i]) < 0) cabs = NULL;
        if (asprintf(&crel, "%s%s%s", rel, *rel ? "/" : "", names[i]) < 0) crel = NULL;
        struct stat sb;
        if (cabs && crel && lstat(cabs, &sb) == 0) { /* lstat: symlinks are not followed */
            if (S_ISDIR(sb.st_mode))
                go = walk_dir(w, cabs, crel);
            else if (S_ISREG(sb.st_mode))
                go = w->on_file(w, cabs, crel);
        }
        free(cabs);
        free(crel);
    }
    for (size_t i = 0; i < n; i++)
        free(names[i]);
    free(names);
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

static bool glob_file(walk *w, const char *abs, const char *rel) {
    (void)abs;
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

/* Resolves an optional directory argument; returns abs + prefix (relative to root). */
static ptl_status start_dir(const ptl_ctx *ctx, ptl_result *r, const char *path, char **abs,
                            char **root, char **prefix) {
    ptl_status st = PTL_OK;
    *root = *prefix = NULL;
    *abs = ptl__resolve(ctx, r, path ? path : ".", false, &st);
    if (!*abs) return st;
    *root = ptl__root(ctx);
    *prefix = *root ? ptl__relative(*root, *abs) : NULL;
    if (!*root || !*prefix) {
        free(*abs);
        free(*root);
        free(*prefix);
        *abs = *root = *prefix = NULL;
        return PTL_ERR_NOMEM;
    }
    if (strcmp(*prefix, ".") == 0) (*prefix)[0] = '\0';
    return PTL_OK;
}

ptl_status ptl__glob(json_t *in, const ptl_ctx *ctx, ptl_result *r) {
    bool bad = false;
    const char *pattern = ptl__str(in, "pattern", &bad), *path = ptl__str(in, "path", &bad);
    if (bad || !pattern || !*pattern)
        return ptl__error(r, "glob: needs \"pattern\" (string) and optional \"path\"");
    char *abs, *root, *prefix;
    ptl_status st = start_dir(ctx, r, path, &abs, &root, &prefix);
    if (!abs) return st;
    struct stat sb;
    if (stat(abs, &sb) != 0 || !S_ISDIR(sb.st_mode)) {
        st = ptl__error(r, "glob: not a directory: %s", path);
        goto done;
    }
    glob_state g = {.pattern = pattern, .prefix = prefix};
    walk w = {.ctx = ctx, .root = root, .on_file = glob_file, .ud = &g};
    walk_dir(&w, abs, "");
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
        st = ptl__finish(r, &o, false);
        if (st == PTL_OK) st = ptl__text_content(r);
        if (st == PTL_OK && w.cancelled) st = PTL_CANCELLED;
    }
    for (size_t i = 0; i < g.n; i++)
        free(g.hits[i]);
    free(g.hits);
done:
    free(abs);
    free(root);
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
    return fnmatch(glob, base ? base + 1 : rel, 0) == 0;
}

static bool grep_file(walk *w, const char *abs, const char *rel) {
    grep_state *g = w->ud;
    if (!file_glob_ok(g->file_glob, rel)) return true;
    char *data;
    size_t len;
    if (ptl__read_file(abs, MAX_GREP_FILE, &data, &len) != 0) return true;
    if (ptl__is_binary(data, len)) {
        free(data);
        return true;
    }
    bool any = false;
    long long lineno = 0;
    char *p = data, *end = data + len;
    while (p < end) {
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
    free(data);
    g->files_with_hits += any;
    return g->results < g->max_results && !g->o->truncated;
}

ptl_status ptl__grep(json_t *in, const ptl_ctx *ctx, ptl_result *r) {
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
    char *abs, *root, *prefix;
    ptl_status st = start_dir(ctx, r, path, &abs, &root, &prefix);
    if (!abs) {
        regfree(&g.re);
        return st;
    }
    ptl__out o;
    ptl__out_init(&o, ctx->max_output);
    g.o = &o;
    walk w = {.ctx = ctx, .root = root, .on_file = grep_file, .ud = &g};
    struct stat sb;
    if (stat(abs, &sb) == 0 && S_ISREG(sb.st_mode)) {
        /* a single file: report it relative to the root */
        char *slash = strrchr(prefix, '/');
        const char *name = slash ? slash + 1 : prefix;
        if (slash)
            *slash = '\0';
        else
            prefix[0] = '\0';
        g.prefix = prefix;
        g.file_glob = NULL;
        grep_file(&w, abs, name);
    } else {
        g.prefix = prefix;
        walk_dir(&w, abs, "");
    }
    if (g.results == 0)
        ptl__out_addf(&o, "no matches for %s", pattern);
    else if (g.results >= g.max_results)
        ptl__out_addf(&o, "[stopped at %lld matches]\n", g.max_results);
    if (w.limit_hit) ptl__out_addf(&o, "[search stopped after %d entries]\n", MAX_VISIT);
    st = ptl__finish(r, &o, false);
    if (st == PTL_OK) st = ptl__text_content(r);
    if (st == PTL_OK && w.cancelled) st = PTL_CANCELLED;
    regfree(&g.re);
    free(abs);
    free(root);
    free(prefix);
    return st;
}
