/*
 * sourcepass.h — placement's source-pass stage (sourcepass.c): a pre-execution
 * transform of a request's source by a plugin. Internal to src/place/.
 */
#ifndef PERI_PLACE_SOURCEPASS_H
#define PERI_PLACE_SOURCEPASS_H

#include "peri/base.h"
#include "peri/place.h"

typedef enum pl__sp_status {
    PL__SP_DERIVED = 0,    /* *out holds the derived source */
    PL__SP_NOT_APPLICABLE, /* nothing to transform: the original runs */
    PL__SP_FAILED,         /* the transform failed (why says how): the original runs */
} pl__sp_status;

/* A source-pass plugin: applies() says whether it reads this kind of request at all;
 * transform() derives a new source, or says why not. Plugins are pure functions of
 * the source: no I/O, no state. */
typedef struct pl__sp_plugin {
    const char *name;
    bool (*applies)(const pl_request *r);
    pl__sp_status (*transform)(const char *src, size_t len, pb_buf *out, char *why, size_t why_len);
} pl__sp_plugin;

/* The plugin named name, or NULL. */
const pl__sp_plugin *pl__sp_find(const char *name);

/* The stage: with the policy's plugin (NULL name: disabled), derives a source for r.
 * Returns the derived source (caller frees) or NULL when the original runs; rec gets
 * the stage's record (JSON: plugin, path "derived" or "original", reason). Never
 * fails: every failure means the original runs. */
char *pl__sourcepass(const char *plugin, const pl_request *r, char *rec, size_t rec_len);

/* The REPL plugin's transform on its own (tests). */
pl__sp_status pl__sp_repl_print(const char *src, size_t len, pb_buf *out, char *why,
                                size_t why_len);

#endif
