/* sha256_wasm.c — wraps ../shared/bench/programs/sha256.c (included unchanged) as the
 * import-free export "sha256"; returns the 31-bit hash of what the program printed. */
#include "pb_rt.h"

#define main pb_program_main
#include "sha256.c"
#undef main

PB_EXPORT("sha256") int32_t pb_export_sha256(int32_t a0) {
    const int32_t a[] = {a0};
    return pb_run_main(pb_program_main, "sha256", 1, a);
}
