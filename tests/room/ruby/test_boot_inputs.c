/*
 * test_boot_inputs.c — the startup snapshot of an interpreter guest is used only by
 * runs with the inputs it was booted with (run.c): two runs of Ruby's build in one
 * host with different environments each see their own ENV (the second boots again
 * instead of starting from the first one's snapshot), a third run with the first
 * one's environment starts from the snapshot and sees its own as well, and the boot
 * does not see the run's files: a Ruby file the run is given where a boot would load
 * it (RUBYLIB) is not loaded by the boot.
 *
 * usage: test_boot_inputs RUBY.wasm (exit 77 when it is missing, unless CI=true)
 */
#include "peri/room.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

static unsigned char *wasm;
static size_t wasm_len;

static unsigned char *slurp(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    unsigned char *b = NULL;
    size_t cap = 0, n = 0, k;
    do {
        if (n == cap) {
            cap = cap ? cap * 2 : 1 << 20;
            unsigned char *g = realloc(b, cap);
            if (!g) {
                free(b);
                fclose(f);
                return NULL;
            }
            b = g;
        }
        k = fread(b + n, 1, cap - n, f);
        n += k;
    } while (k > 0);
    fclose(f);
    *len = n;
    return b;
}

/* Runs src in a fresh room with env (n strings) and, if path, one file; returns the
 * script's stdout (malloc'd). */
static char *run(pr_host *h, pr_program *p, const char *src, const char *const *env, size_t n,
                 const char *path, const char *content) {
    pr_str e[4];
    for (size_t i = 0; i < n; i++)
        e[i] = (pr_str){env[i], strlen(env[i])};
    pr_fs *fs = pr_fs_new();
    assert_non_null(fs);
    if (path) assert_int_equal(pr_fs_write(fs, path, strlen(path), content, strlen(content)), 0);
    pr_exec_options opt = {.fs = fs, .source = {src, strlen(src)}, .env = e, .nenv = n};
    pr_outcome oc;
    pr_error err;
    assert_true(pr_exec(h, p, &opt, &oc, &err));
    if (oc.exit_code != 0) fprintf(stderr, "stderr: %.*s\n", (int)oc.stderr_len, oc.stderr_text);
    assert_int_equal(oc.exit_code, 0);
    char *out = strndup(oc.stdout_text, oc.stdout_len);
    assert_non_null(out);
    pr_outcome_clear(&oc);
    pr_fs_free(fs);
    return out;
}

/* A host with the default configuration, and Ruby's program loaded in it. */
static pr_host *new_host(void) {
    pr_host_config cfg = {0};
    pr_error err;
    pr_host *h = pr_host_new(&cfg, &err);
    assert_non_null(h);
    return h;
}

static pr_program *load_ruby(pr_host *h) {
    pr_error err;
    pr_program *p = pr_program_load(h, (pr_str){"test", 4}, wasm, wasm_len, &err);
    assert_non_null(p);
    return p;
}

static void test_env_per_run(void **state) {
    (void)state;
    pr_host *h = new_host();
    pr_program *p = load_ruby(h);
    const char *src = "puts ENV['PERI_T'].inspect\n";
    const char *one[] = {"PERI_T=one"}, *two[] = {"PERI_T=two"};
    char *o = run(h, p, src, one, 1, NULL, NULL);
    assert_string_equal(o, "\"one\"\n");
    free(o);
    o = run(h, p, src, two, 1, NULL, NULL);
    assert_string_equal(o, "\"two\"\n");
    free(o);
    o = run(h, p, src, one, 1, NULL, NULL);
    assert_string_equal(o, "\"one\"\n");
    free(o);
    o = run(h, p, src, NULL, 0, NULL, NULL);
    assert_string_equal(o, "nil\n");
    free(o);
    pr_program_release(p);
    pr_host_free(h);
}

/* A run's own file on the boot's load path: the boot never sees it. */
static void test_boot_blind(void **state) {
    (void)state;
    pr_host *h = new_host();
    pr_program *p = load_ruby(h);
    const char *env[] = {"RUBYOPT=-rperi_poison", "RUBYLIB=/lib"};
    const char *src = "puts defined?(PERI_POISON).inspect\n";
    for (int i = 0; i < 2; i++) {
        char *o = run(h, p, src, env, 2, "/lib/peri_poison.rb", "PERI_POISON = 1\n");
        assert_string_equal(o, "nil\n");
        free(o);
    }
    pr_program_release(p);
    pr_host_free(h);
}

int main(int argc, char **argv) {
    if (argc < 2 || !(wasm = slurp(argv[1], &wasm_len))) {
        fprintf(stderr, "Ruby's build is missing: %s\n", argc > 1 ? argv[1] : "(no path)");
        const char *ci = getenv("CI");
        return ci && !strcmp(ci, "true") ? 1 : 77;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_env_per_run),
        cmocka_unit_test(test_boot_blind),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    free(wasm);
    return rc;
}
