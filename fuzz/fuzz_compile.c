/*
 * fuzz_compile.c — libFuzzer target: decode + validate + compile (pw_module_new).
 *
 * Valid modules reach the back end's compiler (every function at once:
 * compile_eagerly, not each at its first call), so this target exercises lowering on
 * whatever the validator accepts. Any input must end in a module or a typed error.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "peri/wasm.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    pw_error err;
    memset(&err, 0x5A, sizeof err);
    pw_module_config mc = {.compile_eagerly = true};
    pw_module *m = pw_module_new(data, size, &mc, &err);
    if (m) {
        pw_module_free(m);
        return 0;
    }
    if (err.status == PW_OK || memchr(err.message, 0, sizeof err.message) == NULL) abort();
    return 0;
}
