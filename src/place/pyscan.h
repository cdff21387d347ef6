/*
 * pyscan.h — placement's static reader of Python sources (pyscan.c), shared with
 * decide.c. Internal to src/place/.
 */
#ifndef PERI_PLACE_PYSCAN_H
#define PERI_PLACE_PYSCAN_H

#include <stddef.h>
#include <stdint.h>

/* What a Python source needs that the room's Python cannot give. */
typedef struct pl_pyscan {
    uint32_t requirements; /* PL_REQ_* bits (place.h) */
    /* The first finding, for the decision record and the permission request, e.g.
     * "line 3: import subprocess (subprocess)"; empty when requirements is 0. */
    char why[160];
} pl_pyscan;

/* Reads the imports of src[0..len) (import / from-import statements, __import__ and
 * importlib.import_module with a literal name) and the process calls of os (system,
 * popen, exec*, spawn*, fork...). Comments and string literals are skipped. A module
 * that only fails to import in the room (unknown, or not installed anywhere) adds
 * nothing: its ImportError is an ordinary result of the room. Never fails; bounded by
 * len. */
void pl__pyscan(const char *src, size_t len, pl_pyscan *out);

#endif
