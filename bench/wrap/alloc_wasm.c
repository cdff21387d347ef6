/* alloc_wasm.c — wraps ../shared/bench/programs/alloc.c (included unchanged) as the
 * import-free export "alloc"; returns the 31-bit hash of what the program printed. */
#include "pb_rt.h"

#define main pb_program_main
#include "alloc.c"
#undef main

PB_EXPORT("alloc") int32_t pb_export_alloc(int32_t a0, int32_t a1) {
    const int32_t a[] = {a0, a1};
    return pb_run_main(pb_program_main, "alloc", 2, a);
}
