/*
 * json_value.c — the pj_t value model: reference counts, constructors, scalar access,
 * arrays, insertion-ordered hashed objects, shallow and deep copies, equality.
 *
 * Invariants: see json_int.h. true/false/null are static immutable values whose count
 * is SIZE_MAX and never moves. Every "_new" entry point releases the value it was
 * given when it fails, so callers never leak on an error path. Containers refuse to
 * hold themselves.
 */
#include "json_int.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define PJ__SHARED SIZE_MAX
#define PJ__LINEAR 8 /* objects up to this size are searched without a hash */

static pj_t pj__true = {PJ_TRUE, PJ__SHARED};
static pj_t pj__false = {PJ_FALSE, PJ__SHARED};
static pj_t pj__null = {PJ_NULL, PJ__SHARED};

/* ---- reference counts -------------------------------------------------------------- */

pj_t *pj_incref(pj_t *v) {
    if (v && v->refcount != PJ__SHARED) __atomic_add_fetch(&v->refcount, 1, __ATOMIC_ACQUIRE);
    return v;
}

static void pj__free(pj_t *v);

void pj_decref(pj_t *v) {
    if (v && v->refcount != PJ__SHARED &&
        __atomic_sub_fetch(&v->refcount, 1, __ATOMIC_RELEASE) == 0)
        pj__free(v);
}

static void pj__free(pj_t *v) {
    switch (v->type) {
    case PJ_OBJECT: {
        pj__object *o = (pj__object *)v;
        for (size_t i = 0; i < o->len; i++) {
            free(o->ent[i].key);
            pj_decref(o->ent[i].value);
        }
        free(o->ent);
        free(o->slot);
        break;
    }
    case PJ_ARRAY: {
        pj__array *a = (pj__array *)v;
        for (size_t i = 0; i < a->len; i++)
            pj_decref(a->items[i]);
        free(a->items);
        break;
    }
    case PJ_STRING: {
        pj__string *str = (pj__string *)v;
        if (str->value != (char *)(str + 1)) free(str->value); /* replaced by a setter */
        break;
    }
    default: break;
    }
    free(v);
}

/* ---- constructors ------------------------------------------------------------------ */

static void *pj__alloc(size_t size, pj_type type) {
    pj_t *v = calloc(1, size);
    if (v) {
        v->type = type;
        v->refcount = 1;
    }
    return v;
}

/* As pj__alloc, without clearing what follows the header (the caller fills it). */
static void *pj__alloc_bytes(size_t size, pj_type type) {
    pj_t *v = malloc(size);
    if (v) {
        v->type = type;
        v->refcount = 1;
    }
    return v;
}

pj_t *pj_object(void) {
    return pj__alloc(sizeof(pj__object), PJ_OBJECT);
}

pj_t *pj_array(void) {
    return pj__alloc(sizeof(pj__array), PJ_ARRAY);
}

pj_t *pj_stringn_nocheck(const char *s, size_t n) {
    if (!s || n > SIZE_MAX - sizeof(pj__string) - 1) return NULL;
    /* one block: the header, then the bytes (one allocation per string, not two) */
    pj__string *v = pj__alloc_bytes(sizeof *v + n + 1, PJ_STRING);
    if (!v) return NULL;
    v->value = (char *)(v + 1);
    memcpy(v->value, s, n);
    v->value[n] = 0;
    v->length = n;
    return &v->head;
}

pj_t *pj_string_nocheck(const char *s) {
    return s ? pj_stringn_nocheck(s, strlen(s)) : NULL;
}

pj_t *pj_stringn(const char *s, size_t n) {
    if (!s || !pj__utf8_valid(s, n)) return NULL;
    return pj_stringn_nocheck(s, n);
}

pj_t *pj_string(const char *s) {
    return s ? pj_stringn(s, strlen(s)) : NULL;
}

pj_t *pj_integer(pj_int_t i) {
    pj__integer *v = pj__alloc(sizeof *v, PJ_INTEGER);
    if (v) v->value = i;
    return v ? &v->head : NULL;
}

pj_t *pj_real(double d) {
    if (!isfinite(d)) return NULL;
    pj__real *v = pj__alloc(sizeof *v, PJ_REAL);
    if (v) v->value = d;
    return v ? &v->head : NULL;
}

pj_t *pj_true(void) {
    return &pj__true;
}

pj_t *pj_false(void) {
    return &pj__false;
}

pj_t *pj_null(void) {
    return &pj__null;
}

/* ---- scalars ----------------------------------------------------------------------- */

const char *pj_string_value(const pj_t *v) {
    return pj_is_string(v) ? ((const pj__string *)v)->value : NULL;
}

size_t pj_string_length(const pj_t *v) {
    return pj_is_string(v) ? ((const pj__string *)v)->length : 0;
}

pj_int_t pj_integer_value(const pj_t *v) {
    return pj_is_integer(v) ? ((const pj__integer *)v)->value : 0;
}

double pj_real_value(const pj_t *v) {
    return pj_is_real(v) ? ((const pj__real *)v)->value : 0.0;
}

double pj_number_value(const pj_t *v) {
    if (pj_is_integer(v)) return (double)((const pj__integer *)v)->value;
    return pj_real_value(v);
}

int pj_stringn_set(pj_t *v, const char *s, size_t n) {
    if (!pj_is_string(v) || !s || n == SIZE_MAX || !pj__utf8_valid(s, n)) return -1;
    char *copy = malloc(n + 1);
    if (!copy) return -1;
    memcpy(copy, s, n);
    copy[n] = 0;
    pj__string *str = (pj__string *)v;
    if (str->value != (char *)(str + 1)) free(str->value);
    str->value = copy;
    str->length = n;
    return 0;
}

int pj_string_set(pj_t *v, const char *s) {
    return s ? pj_stringn_set(v, s, strlen(s)) : -1;
}

int pj_integer_set(pj_t *v, pj_int_t i) {
    if (!pj_is_integer(v)) return -1;
    ((pj__integer *)v)->value = i;
    return 0;
}

int pj_real_set(pj_t *v, double d) {
    if (!pj_is_real(v) || !isfinite(d)) return -1;
    ((pj__real *)v)->value = d;
    return 0;
}

/* ---- arrays ------------------------------------------------------------------------ */

size_t pj_array_size(const pj_t *a) {
    return pj_is_array(a) ? ((const pj__array *)a)->len : 0;
}

pj_t *pj_array_get(const pj_t *a, size_t i) {
    if (!pj_is_array(a) || i >= ((const pj__array *)a)->len) return NULL;
    return ((const pj__array *)a)->items[i];
}

static bool pj__array_room(pj__array *a) {
    if (a->len < a->cap) return true;
    size_t cap = a->cap ? a->cap * 2 : 8;
    if (cap > SIZE_MAX / sizeof(pj_t *)) return false;
    pj_t **items = realloc(a->items, cap * sizeof(pj_t *));
    if (!items) return false;
    a->items = items;
    a->cap = cap;
    return true;
}

int pj_array_set_new(pj_t *a, size_t i, pj_t *value) {
    if (!value) return -1;
    if (!pj_is_array(a) || a == value || i >= ((pj__array *)a)->len) {
        pj_decref(value);
        return -1;
    }
    pj__array *arr = (pj__array *)a;
    pj_decref(arr->items[i]);
    arr->items[i] = value;
    return 0;
}

int pj_array_insert_new(pj_t *a, size_t i, pj_t *value) {
    if (!value) return -1;
    pj__array *arr = (pj__array *)a;
    if (!pj_is_array(a) || a == value || i > arr->len || !pj__array_room(arr)) {
        pj_decref(value);
        return -1;
    }
    memmove(arr->items + i + 1, arr->items + i, (arr->len - i) * sizeof(pj_t *));
    arr->items[i] = value;
    arr->len++;
    return 0;
}

int pj_array_append_new(pj_t *a, pj_t *value) {
    if (!value) return -1;
    if (!pj_is_array(a)) {
        pj_decref(value);
        return -1;
    }
    return pj_array_insert_new(a, ((pj__array *)a)->len, value);
}

int pj_array_remove(pj_t *a, size_t i) {
    pj__array *arr = (pj__array *)a;
    if (!pj_is_array(a) || i >= arr->len) return -1;
    pj_decref(arr->items[i]);
    memmove(arr->items + i, arr->items + i + 1, (arr->len - i - 1) * sizeof(pj_t *));
    arr->len--;
    return 0;
}

int pj_array_clear(pj_t *a) {
    if (!pj_is_array(a)) return -1;
    pj__array *arr = (pj__array *)a;
    for (size_t i = 0; i < arr->len; i++)
        pj_decref(arr->items[i]);
    arr->len = 0;
    return 0;
}

int pj_array_extend(pj_t *a, pj_t *other) {
    if (!pj_is_array(a) || !pj_is_array(other)) return -1;
    size_t n = ((pj__array *)other)->len; /* a may be other: append only what was there */
    for (size_t i = 0; i < n; i++)
        if (pj_array_append(a, ((pj__array *)other)->items[i])) return -1;
    return 0;
}

/* ---- objects ----------------------------------------------------------------------- */

static uint32_t pj__hash(const char *key, size_t len) {
    uint32_t h = 2166136261u; /* FNV-1a */
    for (size_t i = 0; i < len; i++)
        h = (h ^ (unsigned char)key[i]) * 16777619u;
    return h;
}

/* The member index of key, or SIZE_MAX. */
static size_t pj__find(const pj__object *o, const char *key, size_t len, uint32_t h) {
    if (!o->slot) {
        for (size_t i = 0; i < o->len; i++)
            if (o->ent[i].keylen == len && o->ent[i].hash == h && !memcmp(o->ent[i].key, key, len))
                return i;
        return SIZE_MAX;
    }
    size_t mask = o->nslot - 1;
    for (size_t s = h & mask;; s = (s + 1) & mask) {
        uint32_t e = o->slot[s];
        if (!e) return SIZE_MAX;
        const pj__member *m = &o->ent[e - 1];
        if (m->hash == h && m->keylen == len && !memcmp(m->key, key, len)) return e - 1;
    }
}

/* Rebuilds the hash index for the current members (nslot >= 2 * len, a power of two);
 * false when out of memory (the object then keeps its previous index). */
static bool pj__reindex(pj__object *o, size_t want) {
    if (o->len < PJ__LINEAR && want < PJ__LINEAR) {
        free(o->slot);
        o->slot = NULL;
        o->nslot = 0;
        return true;
    }
    size_t n = 16;
    while (n < want * 2) {
        if (n > SIZE_MAX / 4 / sizeof(uint32_t)) return false;
        n *= 2;
    }
    uint32_t *slot = calloc(n, sizeof(uint32_t));
    if (!slot) return false;
    for (size_t i = 0; i < o->len; i++) {
        size_t s = o->ent[i].hash & (n - 1);
        while (slot[s])
            s = (s + 1) & (n - 1);
        slot[s] = (uint32_t)(i + 1);
    }
    free(o->slot);
    o->slot = slot;
    o->nslot = n;
    return true;
}

size_t pj_object_size(const pj_t *o) {
    return pj_is_object(o) ? ((const pj__object *)o)->len : 0;
}

pj_t *pj_object_getn(const pj_t *o, const char *key, size_t keylen) {
    if (!pj_is_object(o) || !key) return NULL;
    const pj__object *obj = (const pj__object *)o;
    size_t i = pj__find(obj, key, keylen, pj__hash(key, keylen));
    return i == SIZE_MAX ? NULL : obj->ent[i].value;
}

pj_t *pj_object_get(const pj_t *o, const char *key) {
    return key ? pj_object_getn(o, key, strlen(key)) : NULL;
}

int pj__object_set_take_key(pj_t *o, char *key, size_t keylen, pj_t *value) {
    pj__object *obj = (pj__object *)o;
    if (!value || !key || !pj_is_object(o) || o == value) goto fail;
    uint32_t h = pj__hash(key, keylen);
    size_t i = pj__find(obj, key, keylen, h);
    if (i != SIZE_MAX) { /* an existing key keeps its place */
        pj_decref(obj->ent[i].value);
        obj->ent[i].value = value;
        free(key);
        return 0;
    }
    if (obj->len == obj->cap) {
        size_t cap = obj->cap ? obj->cap * 2 : 8; /* most objects fit the first */
        if (cap > UINT32_MAX - 1 || cap > SIZE_MAX / sizeof(pj__member)) goto fail;
        pj__member *ent = realloc(obj->ent, cap * sizeof *ent);
        if (!ent) goto fail;
        obj->ent = ent;
        obj->cap = cap;
    }
    if ((obj->len + 1) * 2 > obj->nslot && !pj__reindex(obj, obj->len + 1)) goto fail;
    obj->ent[obj->len] = (pj__member){key, keylen, h, value};
    obj->len++;
    if (obj->slot) {
        size_t mask = obj->nslot - 1, s = h & mask;
        while (obj->slot[s])
            s = (s + 1) & mask;
        obj->slot[s] = (uint32_t)obj->len;
    }
    return 0;
fail:
    free(key);
    pj_decref(value);
    return -1;
}

static int pj__object_setn(pj_t *o, const char *key, size_t keylen, pj_t *value) {
    char *copy = key ? malloc(keylen + 1) : NULL;
    if (copy) {
        memcpy(copy, key, keylen);
        copy[keylen] = 0;
    }
    if (!copy && value) {
        pj_decref(value);
        return -1;
    }
    return pj__object_set_take_key(o, copy, keylen, value);
}

int pj_object_set_new_nocheck(pj_t *o, const char *key, pj_t *value) {
    return pj__object_setn(o, key, key ? strlen(key) : 0, value);
}

int pj_object_set_new(pj_t *o, const char *key, pj_t *value) {
    if (!key || !pj__utf8_valid(key, strlen(key))) {
        pj_decref(value);
        return -1;
    }
    return pj_object_set_new_nocheck(o, key, value);
}

int pj_object_del(pj_t *o, const char *key) {
    if (!pj_is_object(o) || !key) return -1;
    pj__object *obj = (pj__object *)o;
    size_t len = strlen(key);
    size_t i = pj__find(obj, key, len, pj__hash(key, len));
    if (i == SIZE_MAX) return -1;
    free(obj->ent[i].key);
    pj_decref(obj->ent[i].value);
    memmove(obj->ent + i, obj->ent + i + 1, (obj->len - i - 1) * sizeof(pj__member));
    obj->len--;
    if (obj->slot && !pj__reindex(obj, obj->len)) {
        /* no memory for a new index: clear the old one in place and refill it */
        memset(obj->slot, 0, obj->nslot * sizeof(uint32_t));
        for (size_t k = 0; k < obj->len; k++) {
            size_t s = obj->ent[k].hash & (obj->nslot - 1);
            while (obj->slot[s])
                s = (s + 1) & (obj->nslot - 1);
            obj->slot[s] = (uint32_t)(k + 1);
        }
    }
    return 0;
}

int pj_object_clear(pj_t *o) {
    if (!pj_is_object(o)) return -1;
    pj__object *obj = (pj__object *)o;
    for (size_t i = 0; i < obj->len; i++) {
        free(obj->ent[i].key);
        pj_decref(obj->ent[i].value);
    }
    obj->len = 0;
    free(obj->slot);
    obj->slot = NULL;
    obj->nslot = 0;
    return 0;
}

int pj_object_update(pj_t *o, pj_t *other) {
    if (!pj_is_object(o) || !pj_is_object(other)) return -1;
    const pj__object *src = (const pj__object *)other;
    for (size_t i = 0; i < src->len; i++)
        if (pj__object_setn(o, src->ent[i].key, src->ent[i].keylen, pj_incref(src->ent[i].value)))
            return -1;
    return 0;
}

const char *pj_object_key_at(const pj_t *o, size_t i) {
    if (!pj_is_object(o) || i >= ((const pj__object *)o)->len) return NULL;
    return ((const pj__object *)o)->ent[i].key;
}

pj_t *pj_object_value_at(const pj_t *o, size_t i) {
    if (!pj_is_object(o) || i >= ((const pj__object *)o)->len) return NULL;
    return ((const pj__object *)o)->ent[i].value;
}

/* ---- whole values ------------------------------------------------------------------ */

static pj_t *pj__copy(const pj_t *v, bool deep, int depth) {
    if (!v || depth > PJ__MAX_DEPTH) return NULL;
    switch (v->type) {
    case PJ_OBJECT: {
        const pj__object *src = (const pj__object *)v;
        pj_t *o = pj_object();
        for (size_t i = 0; o && i < src->len; i++) {
            pj_t *m =
                deep ? pj__copy(src->ent[i].value, true, depth + 1) : pj_incref(src->ent[i].value);
            if (!m || pj__object_setn(o, src->ent[i].key, src->ent[i].keylen, m)) {
                pj_decref(o);
                return NULL;
            }
        }
        return o;
    }
    case PJ_ARRAY: {
        const pj__array *src = (const pj__array *)v;
        pj_t *a = pj_array();
        for (size_t i = 0; a && i < src->len; i++) {
            pj_t *m = deep ? pj__copy(src->items[i], true, depth + 1) : pj_incref(src->items[i]);
            if (!m || pj_array_append_new(a, m)) {
                pj_decref(a);
                return NULL;
            }
        }
        return a;
    }
    case PJ_STRING:
        return pj_stringn_nocheck(((const pj__string *)v)->value, ((const pj__string *)v)->length);
    case PJ_INTEGER: return pj_integer(((const pj__integer *)v)->value);
    case PJ_REAL: return pj_real(((const pj__real *)v)->value);
    default: return (pj_t *)v; /* the shared immutable constants */
    }
}

pj_t *pj_copy(pj_t *v) {
    return pj__copy(v, false, 0);
}

pj_t *pj_deep_copy(const pj_t *v) {
    return pj__copy(v, true, 0);
}

static int pj__equal(const pj_t *a, const pj_t *b, int depth) {
    if (!a || !b || depth > PJ__MAX_DEPTH) return 0;
    if (a == b) return 1;
    if (a->type != b->type) return 0;
    switch (a->type) {
    case PJ_OBJECT: {
        const pj__object *x = (const pj__object *)a;
        if (x->len != ((const pj__object *)b)->len) return 0;
        for (size_t i = 0; i < x->len; i++) {
            pj_t *w = pj_object_getn(b, x->ent[i].key, x->ent[i].keylen);
            if (!pj__equal(x->ent[i].value, w, depth + 1)) return 0;
        }
        return 1;
    }
    case PJ_ARRAY: {
        const pj__array *x = (const pj__array *)a, *y = (const pj__array *)b;
        if (x->len != y->len) return 0;
        for (size_t i = 0; i < x->len; i++)
            if (!pj__equal(x->items[i], y->items[i], depth + 1)) return 0;
        return 1;
    }
    case PJ_STRING: {
        const pj__string *x = (const pj__string *)a, *y = (const pj__string *)b;
        return x->length == y->length && !memcmp(x->value, y->value, x->length);
    }
    case PJ_INTEGER: return ((const pj__integer *)a)->value == ((const pj__integer *)b)->value;
    case PJ_REAL: return ((const pj__real *)a)->value == ((const pj__real *)b)->value;
    default: return 1; /* true, false, null: same type is enough */
    }
}

int pj_equal(const pj_t *a, const pj_t *b) {
    return pj__equal(a, b, 0);
}
