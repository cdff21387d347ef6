/* matmul_wasm.c — wraps ../shared/bench/programs/matmul.c (included unchanged) as the
 * import-free export "matmul"; returns the 31-bit hash of what the program printed. */
#include "pb_rt.h"

#define main pb_program_main
#include "matmul.c"
#undef main

PB_EXPORT("matmul") int32_t pb_export_matmul(int32_t a0) {
    const int32_t a[] = {a0};
    return pb_run_main(pb_program_main, "matmul", 1, a);
}
