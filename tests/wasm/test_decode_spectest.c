/*
 * test_decode_spectest.c — the front end against the spec testsuite: for every
 * script of spectest/scope.json (the "wasm2", "wasm3" and "later" lists), each binary
 * `module`/`module_definition` (and the modules of assert_unlinkable and
 * assert_uninstantiable) must decode and validate, each binary assert_malformed
 * must fail with PW_ERR_MALFORMED and each assert_invalid with PW_ERR_INVALID, the
 * message starting with the expected text. Skips (77) when the testsuite is absent.
 */
#include "peri/json.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "peri/wasm.h"

static uint8_t *slurp(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    uint8_t *b = NULL;
    if (fseek(f, 0, SEEK_END) == 0) {
        long n = ftell(f);
        if (n >= 0 && fseek(f, 0, SEEK_SET) == 0 && (b = malloc((size_t)n + 1))) {
            if (fread(b, 1, (size_t)n, f) != (size_t)n) {
                free(b);
                b = NULL;
            }
            *len = (size_t)n;
        }
    }
    fclose(f);
    return b;
}

static int run_script(const char *dir, const char *name, int *cases) {
    char path[4096];
    snprintf(path, sizeof path, "%s/spectest/core/%s/%s.json", dir, name, name);
    pj_error_t je;
    pj_t *root = pj_load_file(path, PJ_ALLOW_NUL, &je);
    if (!root) {
        printf("FAIL %s: cannot read %s\n", name, path);
        return 1;
    }
    int bad = 0;
    size_t i;
    pj_t *cmd;
    pj_array_foreach(pj_object_get(root, "commands"), i, cmd) {
        const char *type = pj_string_value(pj_object_get(cmd, "type"));
        const char *file = pj_string_value(pj_object_get(cmd, "filename"));
        const char *mt = pj_string_value(pj_object_get(cmd, "module_type"));
        const char *text = pj_string_value(pj_object_get(cmd, "text"));
        if (!type || !file || (mt && strcmp(mt, "binary") != 0)) continue;
        pw_status want;
        if (!strcmp(type, "module") || !strcmp(type, "module_definition") ||
            !strcmp(type, "assert_unlinkable") || !strcmp(type, "assert_uninstantiable")) {
            want = PW_OK;
            text = NULL;
        } else if (!strcmp(type, "assert_malformed")) {
            want = PW_ERR_MALFORMED;
        } else if (!strcmp(type, "assert_invalid")) {
            want = PW_ERR_INVALID;
        } else {
            continue;
        }
        snprintf(path, sizeof path, "%s/spectest/core/%s/%s", dir, name, file);
        size_t len = 0;
        uint8_t *b = slurp(path, &len);
        if (!b) {
            printf("FAIL %s: cannot read %s\n", name, path);
            bad++;
            continue;
        }
        pw_error e;
        memset(&e, 0, sizeof e);
        pw_status got = pw_module_validate(b, len, &e);
        free(b);
        (*cases)++;
        if (got != want || (text && strncmp(e.message, text, strlen(text)) != 0)) {
            printf("FAIL %s:%lld %s: want %d \"%s\", got %d \"%s\"\n", name,
                   (long long)pj_integer_value(pj_object_get(cmd, "line")), file, want,
                   text ? text : "", got, e.message);
            bad++;
        }
    }
    pj_decref(root);
    return bad;
}

int main(void) {
    const char *dir = getenv("PERI_SHARED_DIR");
    if (!dir || !*dir) dir = "../shared";
    char path[4096];
    snprintf(path, sizeof path, "%s/spectest/scope.json", dir);
    pj_error_t je;
    pj_t *scope = pj_load_file(path, 0, &je);
    if (!scope) {
        printf("SKIP: spec testsuite not found (%s); set PERI_SHARED_DIR\n", path);
        return 77;
    }
    int bad = 0, cases = 0;
    /* "later" (SIMD, relaxed SIMD, memory64, multi-memory) too: the engine has them */
    const char *groups[] = {"wasm2", "wasm3", "later"};
    for (int g = 0; g < 3; g++) {
        size_t i;
        pj_t *name;
        pj_array_foreach(pj_object_get(scope, groups[g]), i, name) {
            bad += run_script(dir, pj_string_value(name), &cases);
        }
    }
    pj_decref(scope);
    printf("%d modules checked, %d wrong\n", cases, bad);
    return bad ? 1 : 0;
}
