/*
 * array.c — arrays whose pointer, length and capacity live in the caller's struct:
 * appending (growth through pb_grow, doubling and overflow-checked; the new element
 * starts zeroed), freeing an owned list of strings, and freeing a struct's owned fields
 * in one call.
 */
#include "peri/base.h"

#include <stdlib.h>
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

void pb_strv_free(char **v, size_t n) {
    if (!v) return;
    for (size_t i = 0; i < n; i++)
        free(v[i]);
    free(v);
}

void pb_free_each(void *const *ptrs, size_t n) {
    for (size_t i = 0; i < n; i++)
        free(ptrs[i]);
}
