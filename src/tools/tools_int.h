/*
 * tools_int.h — what the tool files share: the tool descriptor, input accessors, output
 * building (bounded) and the workspace path helpers. Not a public header.
 */
#ifndef PERI_TOOLS_INT_H
#define PERI_TOOLS_INT_H

#include "peri/tools.h"

#include <jansson.h>
#include <stdint.h>

#define PTL_DEFAULT_MAX_OUTPUT 65536
#define PTL_DEFAULT_TIMEOUT_MS 120000

typedef ptl_status (*ptl_run_fn)(json_t *in, const ptl_ctx *ctx, ptl_result *out);

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
const char *ptl__str(json_t *in, const char *key, bool *bad);
long long ptl__int(json_t *in, const char *key, long long def, bool *bad);
bool ptl__bool(json_t *in, const char *key, bool def, bool *bad);

/* ---------------------------------------------------------------- paths */

/* ptl_resolve_path with the workspace error text in r (tool error) on failure. Returns
 * malloc'd canonical path or NULL (then r is already filled unless OOM: *oom set). */
char *ptl__resolve(const ptl_ctx *ctx, ptl_result *r, const char *path, bool for_create,
                   ptl_status *st);
/* Path of abs relative to root ("." for root itself), malloc'd. */
char *ptl__relative(const char *root, const char *abs);
/* Canonical cwd (malloc'd) or NULL. */
char *ptl__root(const ptl_ctx *ctx);
/* Reads a whole regular file (bounded by max bytes). 0 ok; -1 errno set; -2 too large. */
int ptl__read_file(const char *path, size_t max, char **data, size_t *len);
/* True if the first 8 KiB contain a NUL byte. */
bool ptl__is_binary(const char *data, size_t len);
/* Writes data to path atomically enough: O_NOFOLLOW, creating missing parent directories
 * (which were checked to be inside the workspace). 0 ok, else errno. */
int ptl__write_file(const char *root, const char *path, const char *data, size_t len);

/* ---------------------------------------------------------------- the tools */

ptl_status ptl__read(json_t *in, const ptl_ctx *ctx, ptl_result *out);
ptl_status ptl__write(json_t *in, const ptl_ctx *ctx, ptl_result *out);
ptl_status ptl__edit(json_t *in, const ptl_ctx *ctx, ptl_result *out);
ptl_status ptl__list(json_t *in, const ptl_ctx *ctx, ptl_result *out);
ptl_status ptl__glob(json_t *in, const ptl_ctx *ctx, ptl_result *out);
ptl_status ptl__grep(json_t *in, const ptl_ctx *ctx, ptl_result *out);
ptl_status ptl__shell(json_t *in, const ptl_ctx *ctx, ptl_result *out);
/* placed.c (issue 11): shell through placement (or the direct runner when the sandbox
 * is explicitly off / not configured), the run tool, its title. */
ptl_status ptl__shell_placed(json_t *in, const ptl_ctx *ctx, ptl_result *out);
ptl_status ptl__run(json_t *in, const ptl_ctx *ctx, ptl_result *out);
char *ptl__run_title(json_t *in);
extern const char PTL__RUN_DESCRIPTION[];
extern const char PTL__RUN_SCHEMA[];

/* Glob matching of a relative path ("a/b/c.c") against a pattern with "**" segments. */
bool ptl__glob_match(const char *pattern, const char *path);

#endif
