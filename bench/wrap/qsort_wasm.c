/* qsort_wasm.c — wraps ../shared/bench/programs/qsort.c (included unchanged) as the
 * import-free export "qsort"; returns the 31-bit hash of what the program printed. */
#include "pb_rt.h"

#define main pb_program_main
#include "qsort.c"
#undef main

PB_EXPORT("qsort") int32_t pb_export_qsort(int32_t a0) {
    const int32_t a[] = {a0};
    return pb_run_main(pb_program_main, "qsort", 1, a);
}
