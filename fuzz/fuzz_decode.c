/*
 * fuzz_decode.c — libFuzzer target: decode + validate arbitrary bytes.
 *
 * Any input must end in PW_OK or a typed error (MALFORMED, INVALID, NOMEM) with a
 * NUL-terminated message; anything else, and every sanitizer report, is a finding.
 * Seed it with the spectest binaries: build-fuzz/fuzz-wasm-decode CORPUS_DIR SEEDS...
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "peri/wasm.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    pw_error err;
    memset(&err, 0x5A, sizeof err);
    pw_status st = pw_module_validate(data, size, &err);
    if (st != err.status) abort();
    if (st != PW_OK && st != PW_ERR_MALFORMED && st != PW_ERR_INVALID && st != PW_ERR_NOMEM)
        abort();
    if (st != PW_OK && (memchr(err.message, 0, sizeof err.message) == NULL || !err.message[0]))
        abort();
    return 0;
}
