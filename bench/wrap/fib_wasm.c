/* fib_wasm.c — wraps ../shared/bench/programs/fib.c (included unchanged) as the
 * import-free export "fib"; returns the 31-bit hash of what the program printed. */
#include "pb_rt.h"

#define main pb_program_main
#include "fib.c"
#undef main

PB_EXPORT("fib") int32_t pb_export_fib(int32_t a0) {
    const int32_t a[] = {a0};
    return pb_run_main(pb_program_main, "fib", 1, a);
}
