/*
 * tools_int.h — what the tool files share: the tool descriptor, input accessors, output
 * building (bounded) and the workspace path helpers. Not a public header.
 */
#ifndef PERI_TOOLS_INT_H
#define PERI_TOOLS_INT_H

#include "peri/tools.h"

#include "peri/json.h"
#include <stdint.h>

#define PTL_DEFAULT_MAX_OUTPUT 65536
#define PTL_DEFAULT_TIMEOUT_MS 120000

typedef ptl_status (*ptl_run_fn)(pj_t *in, const ptl_ctx *ctx, ptl_result *out);

struct ptl_tool {
    const char *name;
    const char *description;
    const char *schema;
    ptl_kind kind;
    bool needs_permission;
    ptl_run_fn run;
};

/* ---------------------------------------------------------------- output text */

typedef struct ptl__out {
    char *p;
    size_t len, cap;
    size_t limit; /* bytes kept; later text only sets truncated */
    bool truncated;
    bool oom;
} ptl__out;

void ptl__out_init(ptl__out *o, size_t limit);
void ptl__out_add(ptl__out *o, const char *s, size_t n);
void ptl__out_addf(ptl__out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void ptl__out_free(ptl__out *o);

/* Sets out->output to a copy of the text and is_error; returns PTL_OK or PTL_ERR_NOMEM. */
ptl_status ptl__finish(ptl_result *r, ptl__out *o, bool is_error);
/* A tool-level error with a formatted message. */
ptl_status ptl__error(ptl_result *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* content_json = [{"type":"content","content":{"type":"text","text":output}}] */
ptl_status ptl__text_content(ptl_result *r);
/* locations_json = [{"path":path[,"line":line]}] (line <= 0: omitted) */
ptl_status ptl__location(ptl_result *r, const char *path, long line);

/* ---------------------------------------------------------------- inputs */

/* Field accessors: NULL/def when absent. *bad is set when present with the wrong type. */
const char *ptl__str(pj_t *in, const char *key, bool *bad);
long long ptl__int(pj_t *in, const char *key, long long def, bool *bad);
bool ptl__bool(pj_t *in, const char *key, bool def, bool *bad);

/* ---------------------------------------------------------------- paths */

/* Path of abs relative to root ("." for root itself), malloc'd. */
char *ptl__relative(const char *root, const char *abs);
/* Canonical cwd (malloc'd) or NULL. */
char *ptl__root(const ptl_ctx *ctx);
/* True if the first 8 KiB contain a NUL byte. */
bool ptl__is_binary(const char *data, size_t len);
/* ---------------------------------------------------------------- confined handles
 * (confine.c). Every tool resolves a path once, beneath a descriptor of the root. */

#include <sys/stat.h>

#define PTL__WALK_ONLY 1u /* how: skip openat2 (tests of the portable walk) */

/* ptl_open_beneath with a choice of implementation. */
int ptl__open_beneath(int rootfd, const char *rel, int flags, mode_t mode, unsigned how);
/* open(cwd, O_RDONLY|O_DIRECTORY): fd or -errno. */
int ptl__root_fd(const char *cwd);
/* The path relative to the root: relative paths as given, absolute ones with the root
 * (cwd as given, or canonical) stripped; -EXDEV when absolute elsewhere. *rel malloc'd. */
int ptl__rel(const char *cwd, const char *path, char **rel);
/* fstat + regular, not hard-linked. */
ptl_fstatus ptl__check_regular(int fd, struct stat *st);
ptl_fstatus ptl__errno_status(int err);
/* Opens a regular, singly-linked file beneath rootfd for reading (blocking reads). */
ptl_fstatus ptl__open_regular(int rootfd, const char *rel, int *fd, struct stat *st);
/* Reads an open file, bounded. */
ptl_fstatus ptl__read_fd(int fd, size_t max, bool truncate, char **data, size_t *len);
/* Asked before a missing directory name is made in the directory dirfd: false leaves it
 * unmade (ptl__target_at returns -EACCES). */
typedef struct ptl__mkdir_guard {
    bool (*may)(void *ud, int dirfd, const char *name);
    void *ud;
} ptl__mkdir_guard;
/* Where a write of rel lands: the descriptor of its (real) directory and the final name,
 * which is not a symlink (inside symlinks are followed by text, beneath the root). Missing
 * directories are created when create_dirs, each only if guard (may be NULL) allows it.
 * 0 or -errno (-EXDEV escape, -EACCES a directory guard refused). */
int ptl__target_at(int rootfd, const char *rel, bool create_dirs, const ptl__mkdir_guard *guard,
                   int *dirfd, char **name);
/* Writes data to a temporary file beside dirfd/name, fsyncs it and renames it over name;
 * old (the replaced file's stat, or NULL) gives the mode and owner to keep. 0 or errno;
 * on failure the original file is untouched. */
int ptl__replace_at(int dirfd, const char *name, const char *data, size_t len,
                    const struct stat *old, atomic_int *cancel);
/* Display path of an open descriptor (from /proc/self/fd, else root/rel). malloc'd. */
char *ptl__fd_path(int fd, const char *root, const char *rel);

/* ---------------------------------------------------------------- the tools */

ptl_status ptl__read(pj_t *in, const ptl_ctx *ctx, ptl_result *out);
ptl_status ptl__write(pj_t *in, const ptl_ctx *ctx, ptl_result *out);
ptl_status ptl__edit(pj_t *in, const ptl_ctx *ctx, ptl_result *out);
ptl_status ptl__list(pj_t *in, const ptl_ctx *ctx, ptl_result *out);
ptl_status ptl__glob(pj_t *in, const ptl_ctx *ctx, ptl_result *out);
ptl_status ptl__grep(pj_t *in, const ptl_ctx *ctx, ptl_result *out);
ptl_status ptl__shell(pj_t *in, const ptl_ctx *ctx, ptl_result *out);
/* placed.c: shell through placement (or the direct runner when the sandbox
 * is explicitly off / not configured), the run tool, its title. */
ptl_status ptl__shell_placed(pj_t *in, const ptl_ctx *ctx, ptl_result *out);
ptl_status ptl__run(pj_t *in, const ptl_ctx *ctx, ptl_result *out);
char *ptl__run_title(pj_t *in);
extern const char PTL__RUN_DESCRIPTION[];
extern const char PTL__RUN_SCHEMA[];

/* Glob matching of a relative path ("a/b/c.c") against a pattern with "**" segments. */
bool ptl__glob_match(const char *pattern, const char *path);

#endif
