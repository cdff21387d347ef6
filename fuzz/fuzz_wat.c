/*
 * fuzz_wat.c — libFuzzer target: the text-format parser on arbitrary text.
 *
 * Any input must end in PW_OK (with a binary that then decodes to OK or a typed error)
 * or PW_ERR_MALFORMED/PW_ERR_NOMEM with a NUL-terminated, non-empty message; anything
 * else, and every sanitizer report, is a finding. Seed it with the spectest .wast
 * files: build-fuzz/fuzz-wasm-wat CORPUS_DIR build/testdata/spectest/wast
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "peri/wasm.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    pw_error err;
    memset(&err, 0x5A, sizeof err);
    uint8_t *bin = NULL;
    size_t n = 0;
    pw_status st = pw_wat_to_wasm((const char *)data, size, &bin, &n, &err);
    if (st != err.status) abort();
    if (st == PW_OK) {
        if (!bin) abort();
        pw_error e2;
        pw_status vs = pw_module_validate(bin, n, &e2);
        if (vs != PW_OK && vs != PW_ERR_MALFORMED && vs != PW_ERR_INVALID && vs != PW_ERR_NOMEM)
            abort();
        free(bin);
        return 0;
    }
    if (bin || (st != PW_ERR_MALFORMED && st != PW_ERR_NOMEM)) abort();
    if (memchr(err.message, 0, sizeof err.message) == NULL || !err.message[0]) abort();
    return 0;
}
