/*
 * array.c — appending to a growable array of fixed-size elements: the array pointer,
 * its length and its capacity live in the caller's struct; growth goes through pb_grow
 * (doubling, overflow-checked), and the new element starts zeroed.
 */
#include "peri/base.h"

#include <string.h>

void *pb_push(void *arrayp, size_t *n, size_t *cap, size_t elem, size_t min_cap) {
    /* arrayp points at a T *; every object pointer has one representation on the
     * platforms we build for, so it is read and written as bytes. */
    char *a;
    memcpy(&a, arrayp, sizeof a);
    if (*n == *cap) {
        char *g = pb_grow(a, cap, elem, min_cap);
        if (!g) return NULL;
        a = g;
        memcpy(arrayp, &a, sizeof a);
    }
    char *e = a + *n * elem;
    (*n)++;
    memset(e, 0, elem);
    return e;
}
