/*
 * json_roundtrip.c — a small program built twice, natively (linked with libperi) and
 * for wasm32-wasi (the JSON library alone, with clang and Debian's wasi-libc), that
 * parses a fixed set of documents and writes their dumps under several flag sets, plus
 * a few values built by pj_pack and by hand. base.json_wasm runs the wasm build on the
 * project's own engine (`peri run`) and requires the two outputs to be identical.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "peri/json.h"

static const char *docs[] = {
    "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"session/update\",\"params\":{\"update\":"
    "{\"sessionUpdate\":\"agent_message_chunk\",\"content\":{\"type\":\"text\",\"text\":"
    "\"h\\u00e9llo \\ud83d\\ude00 \\\"q\\\" \\n\"}}}}",
    ("[0, -0, 9223372036854775807, -9223372036854775808, 0.1, 1e300, 4.9e-324, -2.5e-7, 1e22, "
     "123456789.987654321, 3.0]"),
    "{\"z\":[],\"a\":{},\"m\":[true,false,null,\"/\\u001f\\u007f\"]}",
    "[1,]",
    "{\"a\":1} x",
    "[\"\\ud800\"]",
    "[99999999999999999999]",
};

static const size_t flags[] = {0, PJ_COMPACT, PJ_INDENT(2) | PJ_SORT_KEYS,
                               PJ_ENSURE_ASCII | PJ_COMPACT | PJ_ESCAPE_SLASH,
                               PJ_REAL_PRECISION(6)};

int main(void) {
    for (size_t i = 0; i < sizeof docs / sizeof *docs; i++) {
        pj_error_t e;
        pj_t *v = pj_loads(docs[i], 0, &e);
        if (!v) {
            printf("doc %zu: error %d:%d:%d %s\n", i, e.line, e.column, e.position, e.text);
            continue;
        }
        for (size_t f = 0; f < sizeof flags / sizeof *flags; f++) {
            char *s = pj_dumps(v, flags[f]);
            printf("doc %zu flags %zx: %s\n", i, flags[f], s ? s : "(null)");
            free(s);
        }
        pj_decref(v);
    }
    pj_t *p = pj_pack("{s:s, s:i, s:I, s:f, s:b, s:n, s:o, s:[s, s?]}", "k", "v", "i", 42, "I",
                      -((pj_int_t)1 << 62), "f", 0.1 + 0.2, "b", 0, "n", "o", pj_real(1e-5), "a",
                      "x", NULL);
    char *s = pj_dumps(p, PJ_COMPACT);
    printf("pack: %s\n", s ? s : "(null)");
    free(s);
    pj_decref(p);
    printf("pack NULL s: %s\n", pj_pack("{s:s}", "k", NULL) ? "built" : "refused");
    /* the deepest document the parser takes, and one level more: the recursion must fit
     * the wasm stack (the module is linked with a 1 MiB one, see json_wasm.sh) */
    static char deep[2 * 2049 + 1];
    for (int depth = 2048; depth <= 2049; depth++) {
        memset(deep, '[', (size_t)depth);
        memset(deep + depth, ']', (size_t)depth);
        deep[2 * depth] = 0;
        pj_error_t e;
        pj_t *v = pj_loads(deep, 0, &e);
        pj_t *c = pj_deep_copy(v);
        char *d = pj_dumps(c, PJ_COMPACT);
        printf("depth %d: %s, copy %s, dump %s\n", depth, v ? "parsed" : e.text,
               pj_equal(v, c) ? "equal" : "differs", d && !strcmp(d, deep) ? "same" : "differs");
        free(d);
        pj_decref(c);
        pj_decref(v);
    }
    return 0;
}
