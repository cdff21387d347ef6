/*
 * limits.h — the front end's implementation limits (internal to src/wasm/).
 *
 * Modules beyond these are rejected as malformed with an "implementation limit"
 * message. The numbers follow V8's limits where V8 has one, so that a module that
 * runs in a browser decodes here too; they exist to keep memory and time bounded on
 * hostile input (docs/engine-frontend.md).
 */
#ifndef PW_LIMITS_H
#define PW_LIMITS_H

#define PW_MAX_TYPES    1000000u
#define PW_MAX_FUNCS    1000000u
#define PW_MAX_IMPORTS  1000000u
#define PW_MAX_EXPORTS  1000000u
#define PW_MAX_GLOBALS  1000000u
#define PW_MAX_TAGS     1000000u
#define PW_MAX_TABLES   100000u
#define PW_MAX_MEMORIES 100000u
#define PW_MAX_SEGMENTS 1000000u
#define PW_MAX_ELEMS    10000000u /* entries in one element segment */
#define PW_MAX_PARAMS   1000u
#define PW_MAX_RESULTS  1000u
#define PW_MAX_FIELDS   10000u /* fields of one struct type */
#define PW_MAX_LOCALS   50000u /* declared locals of one function (params excluded) */
/* Declared locals over the whole module: this many plus one per module byte. */
#define PW_MAX_MODULE_LOCALS 4000000u
/* Length of a declared supertype chain (V8's limit): keeps subtype checks, which
 * walk the chain, bounded by a constant. */
#define PW_MAX_SUBTYPE_DEPTH 63u

#endif
