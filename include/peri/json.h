/*
 * peri/json.h — the project's own JSON library (base layer, prefix pj_), built for the
 * native host and for wasm32-wasi alike: plain C17, no locale dependence.
 *
 * The API mirrors jansson 2.14 name for name (json_X -> pj_X, JSON_X -> PJ_X,
 * json_t -> pj_t) and keeps the semantics callers rely on, so a code base written for
 * jansson switches over by a mechanical rename (scripts/json-switch.sh, docs/json.md):
 *
 *  - values are reference counted: a new value has one reference, owned by the caller;
 *    pj_decref frees at zero; the "_new" setters and the pack format 'o' steal the
 *    reference they are given (also when they fail);
 *  - pj_true/pj_false/pj_null are immutable shared values whose counts never move;
 *  - integers (long long, 64 bits) and reals (finite doubles) are distinct types;
 *  - strings carry an explicit length and may hold NUL bytes (pj_stringn, PJ_ALLOW_NUL);
 *    constructors that "check" refuse invalid UTF-8;
 *  - objects keep insertion order (re-setting a key keeps its place) and look keys up
 *    through a hash; keys are NUL-terminated UTF-8;
 *  - accessors are total: pj_object_get on a non-object, pj_string_value on a
 *    non-string, pj_array_get out of range give NULL; pj_integer_value on a
 *    non-integer and the other scalar getters give 0;
 *  - pj_dumps writes byte for byte what jansson writes for the same value and flags;
 *    pj_loads accepts and refuses what jansson does (RFC 8259, UTF-8 validated,
 *    depth 2048), with jansson's error texts for the common errors.
 *
 * Values are not locked: a value shared between threads must not be changed while
 * another thread reads it; reference counts themselves are atomic.
 */
#ifndef PERI_JSON_H
#define PERI_JSON_H

#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum pj_type {
    PJ_OBJECT,
    PJ_ARRAY,
    PJ_STRING,
    PJ_INTEGER,
    PJ_REAL,
    PJ_TRUE,
    PJ_FALSE,
    PJ_NULL
} pj_type;

/* The header every value starts with. Read type through the macros below; the count is
 * the library's (SIZE_MAX marks the shared immutable true/false/null). */
typedef struct pj_t {
    pj_type type;
    volatile size_t refcount;
} pj_t;

typedef long long pj_int_t; /* 64 bits on every target the project builds for */
#define PJ_INTEGER_FORMAT "lld"

/* ---- errors (pj_loads and friends) ------------------------------------------------- */
#define PJ_ERROR_TEXT_LENGTH   160
#define PJ_ERROR_SOURCE_LENGTH 80
typedef struct pj_error_t {
    int line;     /* 1-based line of the offending byte, -1 when not about the text */
    int column;   /* 1-based column in code points on that line */
    int position; /* bytes read when the error was found */
    char source[PJ_ERROR_SOURCE_LENGTH]; /* "<string>", "<buffer>", "<stream>" */
    char text[PJ_ERROR_TEXT_LENGTH];     /* jansson's wording, e.g. "invalid token near '}'" */
} pj_error_t;

/* ---- type tests ---------------------------------------------------------------------- */
#define pj_typeof(v)     ((v)->type)
#define pj_is_object(v)  ((v) && pj_typeof(v) == PJ_OBJECT)
#define pj_is_array(v)   ((v) && pj_typeof(v) == PJ_ARRAY)
#define pj_is_string(v)  ((v) && pj_typeof(v) == PJ_STRING)
#define pj_is_integer(v) ((v) && pj_typeof(v) == PJ_INTEGER)
#define pj_is_real(v)    ((v) && pj_typeof(v) == PJ_REAL)
#define pj_is_number(v)  (pj_is_integer(v) || pj_is_real(v))
#define pj_is_true(v)    ((v) && pj_typeof(v) == PJ_TRUE)
#define pj_is_false(v)   ((v) && pj_typeof(v) == PJ_FALSE)
#define pj_boolean_value pj_is_true
#define pj_is_boolean(v) (pj_is_true(v) || pj_is_false(v))
#define pj_is_null(v)    ((v) && pj_typeof(v) == PJ_NULL)

/* ---- reference counts (json_value.c) --------------------------------------------------- */
pj_t *pj_incref(pj_t *v); /* v (NULL passes through) */
void pj_decref(pj_t *v);  /* frees at zero; NULL is a no-op */

/* ---- constructors (json_value.c): a new reference, NULL when out of memory ----------- */
pj_t *pj_object(void);
pj_t *pj_array(void);
pj_t *pj_string(const char *s);            /* NULL for NULL or bad UTF-8 */
pj_t *pj_stringn(const char *s, size_t n); /* may hold NUL bytes */
pj_t *pj_string_nocheck(const char *s);    /* no UTF-8 check */
pj_t *pj_stringn_nocheck(const char *s, size_t n);
pj_t *pj_integer(pj_int_t v);
pj_t *pj_real(double v); /* NULL for NaN and infinities */
pj_t *pj_true(void);     /* shared; decref is harmless */
pj_t *pj_false(void);
pj_t *pj_null(void);
#define pj_boolean(b) ((b) ? pj_true() : pj_false())

/* ---- scalars: 0 / NULL for the wrong type ---------------------------------------------- */
const char *pj_string_value(const pj_t *v);
size_t pj_string_length(const pj_t *v);
pj_int_t pj_integer_value(const pj_t *v);
double pj_real_value(const pj_t *v);
double pj_number_value(const pj_t *v);     /* integer or real as double */
int pj_string_set(pj_t *v, const char *s); /* 0, or -1 (not a string, bad UTF-8, memory) */
int pj_stringn_set(pj_t *v, const char *s, size_t n);
int pj_integer_set(pj_t *v, pj_int_t i);
int pj_real_set(pj_t *v, double d);

/* ---- arrays: setters return 0 or -1; "_new" steals value even on failure ------------- */
size_t pj_array_size(const pj_t *a);
pj_t *pj_array_get(const pj_t *a, size_t i); /* borrowed */
int pj_array_set_new(pj_t *a, size_t i, pj_t *value);
int pj_array_append_new(pj_t *a, pj_t *value);
int pj_array_insert_new(pj_t *a, size_t i, pj_t *value);
int pj_array_remove(pj_t *a, size_t i);
int pj_array_clear(pj_t *a);
int pj_array_extend(pj_t *a, pj_t *other); /* appends other's elements (new references) */
static inline int pj_array_set(pj_t *a, size_t i, pj_t *value) {
    return pj_array_set_new(a, i, pj_incref(value));
}
static inline int pj_array_append(pj_t *a, pj_t *value) {
    return pj_array_append_new(a, pj_incref(value));
}
static inline int pj_array_insert(pj_t *a, size_t i, pj_t *value) {
    return pj_array_insert_new(a, i, pj_incref(value));
}

/* ---- objects ------------------------------------------------------------------------------ */
size_t pj_object_size(const pj_t *o);
pj_t *pj_object_get(const pj_t *o, const char *key); /* borrowed */
pj_t *pj_object_getn(const pj_t *o, const char *key, size_t keylen);
int pj_object_set_new(pj_t *o, const char *key, pj_t *value); /* key must be UTF-8 */
int pj_object_set_new_nocheck(pj_t *o, const char *key, pj_t *value);
int pj_object_del(pj_t *o, const char *key); /* 0, or -1 when absent */
int pj_object_clear(pj_t *o);
int pj_object_update(pj_t *o, pj_t *other); /* sets every key of other (new references) */
static inline int pj_object_set(pj_t *o, const char *key, pj_t *value) {
    return pj_object_set_new(o, key, pj_incref(value));
}
static inline int pj_object_set_nocheck(pj_t *o, const char *key, pj_t *value) {
    return pj_object_set_new_nocheck(o, key, pj_incref(value));
}
/* Iteration by position, insertion order (what the foreach macro uses). */
const char *pj_object_key_at(const pj_t *o, size_t i); /* NULL past the end */
pj_t *pj_object_value_at(const pj_t *o, size_t i);

/* Loops. The body must not add or remove members of the container it walks (it may
 * change values in place). key is const char *, index is size_t. */
#define pj_array_foreach(array, index, value)                                                      \
    for ((index) = 0;                                                                              \
         (index) < pj_array_size(array) && ((value) = pj_array_get((array), (index))); (index)++)
#define PJ__CAT2(a, b) a##b
#define PJ__CAT(a, b)  PJ__CAT2(a, b)
#define pj_object_foreach(object, key, value)                                                      \
    for (size_t PJ__CAT(pj__i, __LINE__) = 0;                                                      \
         ((key) = pj_object_key_at((object), PJ__CAT(pj__i, __LINE__))) &&                         \
         ((value) = pj_object_value_at((object), PJ__CAT(pj__i, __LINE__)));                       \
         PJ__CAT(pj__i, __LINE__)++)

/* ---- whole values (json_value.c) ---------------------------------------------------------- */
pj_t *pj_copy(pj_t *v);                     /* shallow: a new container holding the same members */
pj_t *pj_deep_copy(const pj_t *v);          /* fully independent; NULL when out of memory */
int pj_equal(const pj_t *a, const pj_t *b); /* 1 when equal (objects: any order), else 0 */

/* ---- decoding (json_load.c) ---------------------------------------------------------------- */
#define PJ_REJECT_DUPLICATES  0x1
#define PJ_DISABLE_EOF_CHECK  0x2
#define PJ_DECODE_ANY         0x4
#define PJ_DECODE_INT_AS_REAL 0x8
#define PJ_ALLOW_NUL          0x10
#define PJ_PARSER_MAX_DEPTH   2048
/* A new value, or NULL with *error filled (error may be NULL). */
pj_t *pj_loads(const char *text, size_t flags, pj_error_t *error);
pj_t *pj_loadb(const char *buf, size_t len, size_t flags, pj_error_t *error);
pj_t *pj_loadf(FILE *f, size_t flags, pj_error_t *error); /* reads f to its end */
pj_t *pj_load_file(const char *path, size_t flags, pj_error_t *error);
/* Peri's own: how deep the decoder nests on the JSON text of len bytes (each value one
 * level, the outermost 1, as PJ_PARSER_MAX_DEPTH counts), read in one pass without
 * decoding; what a frame sent to a peer with this decoder may not exceed. For text that
 * is not JSON the number means nothing. */
size_t pj_text_depth(const char *text, size_t len);

/* ---- encoding (json_dump.c) ----------------------------------------------------------------- */
#define PJ_MAX_INDENT        0x1F
#define PJ_INDENT(n)         ((n)&PJ_MAX_INDENT)
#define PJ_COMPACT           0x20
#define PJ_ENSURE_ASCII      0x40
#define PJ_SORT_KEYS         0x80
#define PJ_PRESERVE_ORDER    0x100 /* always so; accepted for jansson's sake */
#define PJ_ENCODE_ANY        0x200
#define PJ_ESCAPE_SLASH      0x400
#define PJ_REAL_PRECISION(n) (((n)&0x1F) << 11)
#define PJ_EMBED             0x10000
/* Called with consecutive pieces of the text; a non-zero return stops the dump. */
typedef int (*pj_dump_callback_t)(const char *buffer, size_t size, void *data);
/* A malloc'd NUL-terminated text the caller frees, or NULL (out of memory, invalid UTF-8
 * in a string, a non-container without PJ_ENCODE_ANY, nesting deeper than 2048). */
char *pj_dumps(const pj_t *v, size_t flags);
int pj_dump_callback(const pj_t *v, pj_dump_callback_t cb, void *data, size_t flags);
int pj_dumpf(const pj_t *v, FILE *f, size_t flags);

/* ---- building (json_pack.c) ------------------------------------------------------------------
 * jansson's json_pack formats: { } [ ] objects and arrays; s (const char *, UTF-8), s#
 * (const char *, int length), s% (const char *, size_t length), s+ (concatenate with the
 * next s), n, b (int), i (int), I (pj_int_t), f (double), o (pj_t *, stolen), O (pj_t *,
 * new reference). A '?' after s, o or O packs null for a NULL argument; a '*' after a
 * value leaves out the member (or element) whose argument is NULL. Spaces, ':' and ','
 * are ignored. On any error (a NULL argument without a modifier, bad UTF-8, a bad
 * format, memory) it returns NULL and still consumes every argument, releasing every
 * 'o' reference, so nothing leaks. */
pj_t *pj_pack(const char *fmt, ...);
pj_t *pj_vpack(const char *fmt, va_list ap);

#ifdef __cplusplus
}
#endif
#endif
