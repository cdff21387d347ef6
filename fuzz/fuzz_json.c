/*
 * fuzz_json.c — libFuzzer target for the project's JSON library: the input (after one
 * flag byte) is parsed by pj_loadb and by jansson; both must accept or refuse it alike,
 * with the same error text, and an accepted value must dump to the same text in both
 * and parse back equal to itself.
 */
#include <jansson.h>

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "peri/json.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1) return 0;
    size_t lf = data[0] & (PJ_REJECT_DUPLICATES | PJ_DECODE_ANY | PJ_ALLOW_NUL |
                           PJ_DECODE_INT_AS_REAL | PJ_DISABLE_EOF_CHECK);
    size_t df = PJ_ENCODE_ANY | ((data[0] & 0x80) ? PJ_COMPACT | PJ_SORT_KEYS : PJ_INDENT(2)) |
                ((data[0] & 0x40) ? PJ_ENSURE_ASCII : 0);
    const char *doc = (const char *)data + 1;
    size_t len = size - 1;
    pj_error_t pe;
    json_error_t je;
    pj_t *p = pj_loadb(doc, len, lf, &pe);
    json_t *j = json_loadb(doc, len, lf, &je);
    /* jansson drops a NUL byte it reads ahead after a number or a word ("[5\0]" loads as
     * [5], and the error after one differs): a NUL byte in a buffer is refused here. */
    bool nul = memchr(doc, 0, len) != NULL;
    if (!p != !j && !(nul && !p)) abort();
    if (!p || !j) {
        if (!nul && strcmp(pe.text, je.text)) abort();
        pj_decref(p);
        json_decref(j);
        return 0;
    }
    char *a = pj_dumps(p, df), *b = json_dumps(j, df);
    if (!a != !b || (a && strcmp(a, b))) abort();
    if (a) {
        pj_t *back = pj_loads(a, PJ_DECODE_ANY | PJ_ALLOW_NUL, NULL);
        if (!back || !pj_equal(back, p)) abort();
        pj_decref(back);
    }
    free(a);
    free(b);
    pj_decref(p);
    json_decref(j);
    return 0;
}
