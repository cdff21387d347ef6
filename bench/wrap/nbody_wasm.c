/* nbody_wasm.c — wraps ../shared/bench/programs/nbody.c (included unchanged) as the
 * import-free export "nbody"; returns the 31-bit hash of what the program printed. */
#include "pb_rt.h"

#define main pb_program_main
#include "nbody.c"
#undef main

PB_EXPORT("nbody") int32_t pb_export_nbody(int32_t a0) {
    const int32_t a[] = {a0};
    return pb_run_main(pb_program_main, "nbody", 1, a);
}
