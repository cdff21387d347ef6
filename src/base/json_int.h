/*
 * json_int.h — the concrete shapes behind pj_t and the helpers the json*.c files share
 * (UTF-8 decoding, locale-independent number conversion). Private to src/base/json*.c.
 *
 * Invariants: a string's value is always NUL-terminated at value[length]; an object's
 * members sit in insertion order in ent[0..len), and slot[] (a power of two, at most
 * half full, 0 = empty, else index + 1 into ent) indexes them by key hash.
 */
#ifndef PERI_BASE_JSON_INT_H
#define PERI_BASE_JSON_INT_H

#include "peri/json.h"

#include <stdbool.h>
#include <stdint.h>

typedef struct pj__member {
    char *key; /* owned, NUL-terminated */
    size_t keylen;
    uint32_t hash;
    pj_t *value; /* owned reference */
} pj__member;

typedef struct pj__object {
    pj_t head;
    pj__member *ent;
    size_t len, cap;
    uint32_t *slot; /* NULL while small (linear search) */
    size_t nslot;
} pj__object;

typedef struct pj__array {
    pj_t head;
    pj_t **items; /* owned references */
    size_t len, cap;
} pj__array;

typedef struct pj__string {
    pj_t head;
    char *value; /* owned, value[length] == 0 */
    size_t length;
} pj__string;

typedef struct pj__integer {
    pj_t head;
    pj_int_t value;
} pj__integer;

typedef struct pj__real {
    pj_t head;
    double value;
} pj__real;

/* Nesting limit shared by the parser and the serializer. */
#define PJ__MAX_DEPTH PJ_PARSER_MAX_DEPTH

/* ---- json_utf8.c ---- */
/* Decodes one UTF-8 sequence at s (n bytes available): its length (1-4) and *cp, or 0
 * when it is invalid (overlong, surrogate, above U+10FFFF, truncated). */
size_t pj__utf8_decode(const unsigned char *s, size_t n, int32_t *cp);
bool pj__utf8_valid(const char *s, size_t n);
/* Encodes cp (a scalar value) into out (4 bytes); returns the length. */
size_t pj__utf8_encode(int32_t cp, char out[4]);
/* The short escapes of JSON strings: 'n' for a newline byte ('"', '\\', '/', b f n r t),
 * 0 when the byte has none; and back: the byte for a name, -1 when it is not one. */
char pj__escape_name(unsigned char c);
int pj__escape_byte(char name);

/* ---- json_number.c ---- */
/* The double a number token (already checked against the JSON grammar) denotes,
 * rounded correctly whatever the C locale; false when it overflows to infinity. */
bool pj__strtod(const char *tok, size_t len, double *out);
/* jansson's real format: "%.{prec}g" with '.' whatever the locale, ".0" appended when
 * the result looks like an integer, exponent without '+' and leading zeros. Writes a
 * NUL-terminated text into out and returns its length (< size), or -1. */
int pj__dtostr(char *out, size_t size, double v, int prec);

/* ---- json_value.c ---- */
int pj__object_set_take_key(pj_t *o, char *key, size_t keylen, pj_t *value); /* steals both */

#endif
