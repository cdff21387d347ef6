/*
 * scope.c — the runner's own additions to scope.json: scripts of its "later" stage
 * (SIMD, relaxed SIMD, memory64, multi-memory) that the engine now implements and
 * that pass under every tier. They run with scope wasm3, after the wasm3 list.
 *
 * scope.json belongs to the read-only data folder, so the stage of a script the
 * engine has caught up with is recorded here; a script is added only when it passes
 * with --engine interp and with --engine jit. Invariant: every name is in
 * scope.json's "later" list (others are ignored).
 */
#include "st.h"

#include <string.h>

static const char *const PROMOTED[] = {
    /* memory64, table64 and multi-memory (no SIMD) */
    "address0",
    "address1",
    "address64",
    "align0",
    "align64",
    "binary0",
    "binary_leb128_64",
    "bulk64",
    "call_indirect64",
    "data0",
    "data1",
    "data_drop0",
    "endianness64",
    "exports0",
    "float_exprs0",
    "float_exprs1",
    "float_memory0",
    "float_memory64",
    "imports0",
    "imports1",
    "imports2",
    "imports3",
    "imports4",
    "instance",
    "linking0",
    "linking1",
    "linking2",
    "linking3",
    "load0",
    "load1",
    "load2",
    "load64",
    "memory-multi",
    "memory64",
    "memory64-imports",
    "memory_copy0",
    "memory_copy1",
    "memory_copy64",
    "memory_fill0",
    "memory_fill64",
    "memory_grow",
    "memory_grow64",
    "memory_init0",
    "memory_init64",
    "memory_redundancy64",
    "memory_size0",
    "memory_size1",
    "memory_size2",
    "memory_size_import",
    "memory_trap0",
    "memory_trap1",
    "memory_trap64",
    "start0",
    "store0",
    "store1",
    "store2",
    "table64",
    "table_copy64",
    "table_copy_mixed",
    "table_fill64",
    "table_get64",
    "table_grow64",
    "table_init64",
    "table_set64",
    "table_size64",
    "traps0",
};

bool st_scope_promoted(const char *name) {
    for (size_t i = 0; i < sizeof PROMOTED / sizeof PROMOTED[0]; i++)
        if (strcmp(PROMOTED[i], name) == 0) return true;
    return false;
}
