/*
 * test_sourcepass.c — placement's source-pass stage (cmocka).
 *
 * Unit mode (no argument): the repl_print transform (what it rewrites, what it leaves
 * alone, when it fails) and the stage's record for each path: disabled, unknown
 * plugin, another program kind, not applicable, transform failed, derived.
 *
 * Run mode (--run PYTHON_DIR): pl_run with the room's Python: the derived source runs
 * (REPL-style values on stdout); with the stage disabled or not applicable the
 * original runs; a failed transform runs the original; a derived run that fails is
 * reported once — one decision, one attempt, never replayed with the original.
 * Exit 77 when the build is missing (1 under CI=true).
 */
#include "peri/place.h"
#include "peri/room.h"
#include "place/sourcepass.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char *derive(const char *src, pl__sp_status *st) {
    pb_buf out = {0};
    char why[120];
    *st = pl__sp_repl_print(src, strlen(src), &out, why, sizeof why);
    if (*st != PL__SP_DERIVED) {
        pb_buf_free(&out);
        return NULL;
    }
    pb_buf_putc(&out, 0);
    size_t n;
    return pb_buf_take(&out, &n);
}

#define W(x) "__import__('sys').displayhook((" x "))"

static void expect(const char *src, const char *want) {
    pl__sp_status st;
    char *got = derive(src, &st);
    if (!want) {
        assert_int_not_equal(st, PL__SP_DERIVED);
    } else {
        assert_int_equal(st, PL__SP_DERIVED);
        assert_string_equal(got, want);
    }
    free(got);
}

static void test_rewrites(void **state) {
    (void)state;
    expect("1 + 2\n", W("1 + 2") "\n");
    expect("x = 3\nx\nprint('a')\n", "x = 3\n" W("x") "\n" W("print('a')") "\n");
    expect("a == b\na != b\na <= b\nnot a\n",
           W("a == b") "\n" W("a != b") "\n" W("a <= b") "\n" W("not a") "\n");
    expect("f(x=1)  # call\n", W("f(x=1)") "  # call\n");
    expect("[1,\n 2]\nd['k']\n", W("[1,\n 2]") "\n" W("d['k']") "\n");
    expect("x = 1\nx \\\n + 1\n", "x = 1\n" W("x \\\n + 1") "\n");
    expect("b'x' + b'y'\n", W("b'x' + b'y'") "\n");
    expect("1", W("1")); /* no newline at the end */
}

static void test_leaves_alone(void **state) {
    (void)state;
    /* nothing to rewrite: not applicable */
    const char *none[] = {"x = 1\n",
                          "def f():\n    1\n",
                          "@dec\ndef f(): pass\n",
                          "if x: y\n",
                          "a <<= 1\na >>= 2\na += 1\na := 1\n",
                          "x: int = 3\n",
                          "'''docstring'''\n",
                          "lambda: 0\n",
                          "x = 1; x\n",
                          "import os\nfor i in y:\n    i\n",
                          "class A:\n    x\n",
                          "# only a comment\n",
                          ""};
    for (size_t i = 0; i < sizeof none / sizeof *none; i++) {
        pb_buf out = {0};
        char why[120];
        assert_int_equal(pl__sp_repl_print(none[i], strlen(none[i]), &out, why, sizeof why),
                         PL__SP_NOT_APPLICABLE);
        assert_int_equal(out.len, 0);
        pb_buf_free(&out);
    }
    /* a mix: only the sure ones */
    expect("'''doc'''\nx = [\n 1]\nx\nwhile x:\n    x.pop()\nlen(x)\n",
           "'''doc'''\nx = [\n 1]\n" W("x") "\nwhile x:\n    x.pop()\n" W("len(x)") "\n");
}

static void test_fails(void **state) {
    (void)state;
    const char *bad[] = {"x = '''abc\n", "(1, 2\n", "1)\n", "'abc\n"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        pb_buf out = {0};
        char why[120] = "";
        assert_int_equal(pl__sp_repl_print(bad[i], strlen(bad[i]), &out, why, sizeof why),
                         PL__SP_FAILED);
        assert_true(why[0] != 0);
        assert_int_equal(out.len, 0);
        pb_buf_free(&out);
    }
}

static void test_stage_records(void **state) {
    (void)state;
    char rec[256];
    pl_request r = {.run_id = "r", .kind = PL_PROGRAM_PYTHON, .program = "1 + 1\n"};
    assert_null(pl__sourcepass(NULL, &r, rec, sizeof rec));
    assert_string_equal(rec, "{\"stage\":\"source_pass\",\"plugin\":null,\"path\":\"original\","
                             "\"reason\":\"disabled\"}");
    assert_null(pl__sourcepass("nope", &r, rec, sizeof rec));
    assert_non_null(strstr(rec, "\"path\":\"original\",\"reason\":\"unknown plugin\""));
    char *d = pl__sourcepass("repl_print", &r, rec, sizeof rec);
    assert_non_null(d);
    assert_string_equal(d, W("1 + 1") "\n");
    assert_string_equal(rec, "{\"stage\":\"source_pass\",\"plugin\":\"repl_print\",\"path\":"
                             "\"derived\",\"reason\":\"transformed\"}");
    free(d);
    r.program = "x = 1\n";
    assert_null(pl__sourcepass("repl_print", &r, rec, sizeof rec));
    assert_non_null(strstr(rec, "\"path\":\"original\",\"reason\":\"not applicable: no top-level"));
    r.program = "x = '''\n";
    assert_null(pl__sourcepass("repl_print", &r, rec, sizeof rec));
    assert_non_null(
        strstr(rec, "\"path\":\"original\",\"reason\":\"transform failed: an unterminated"));
    pl_request rb = {.run_id = "r", .kind = PL_PROGRAM_RUBY, .program = "1 + 1\n"};
    assert_null(pl__sourcepass("repl_print", &rb, rec, sizeof rec));
    assert_non_null(strstr(rec, "not applicable: another program kind"));
}

/* ---------------------------------------------------------------- run mode */

static const char *g_dir;

static void run_one(const char *src, const char *plugin, pl_report *rep) {
    pr_error re;
    pr_host *room = pr_host_new(NULL, &re);
    assert_non_null(room);
    pr_python *py = pr_python_new(room, g_dir);
    assert_non_null(py);
    pl_ruby_hook hook = pl_python_room_hook(py);
    pl_config cfg = {.room = room, .python_hook = &hook};
    pl_error err = {0};
    pl_ctx *pc = pl_new(&cfg, &err);
    assert_non_null(pc);
    pl_policy pol = {.native = PL_NATIVE_NO, .source_pass = plugin};
    pl_request r = {.run_id = "sp", .kind = PL_PROGRAM_PYTHON, .program = src};
    assert_true(pl_run(pc, &r, &pol, NULL, rep, &err));
    pl_free(pc);
    pr_python_free(py);
    pr_host_free(room);
}

static void test_run_paths(void **state) {
    (void)state;
    pl_report rep;
    const char *src = "1 + 1\nprint('x')\n[1, 'a']\nNone\n";
    run_one(src, "repl_print", &rep);
    assert_true(rep.result.ok);
    assert_string_equal(rep.result.stdout_text, "2\nx\n[1, 'a']\n");
    assert_non_null(strstr(rep.source_pass, "\"path\":\"derived\""));
    assert_int_equal(rep.ndecisions, 1);
    pl_report_clear(&rep);
    /* disabled: the original */
    run_one(src, NULL, &rep);
    assert_string_equal(rep.result.stdout_text, "x\n");
    assert_non_null(strstr(rep.source_pass, "\"reason\":\"disabled\""));
    pl_report_clear(&rep);
    /* failed transform: the original runs (and fails on its own) */
    run_one("print('before')\nx = '''\n", "repl_print", &rep);
    assert_false(rep.result.ok);
    assert_non_null(strstr(rep.result.stderr_text, "SyntaxError"));
    assert_non_null(strstr(rep.source_pass, "transform failed"));
    pl_report_clear(&rep);
    /* the derived run fails after it started: reported once, never replayed */
    run_one("print('once')\n1 / 0\n", "repl_print", &rep);
    assert_false(rep.result.ok);
    assert_string_equal(rep.result.stdout_text, "once\n");
    assert_non_null(strstr(rep.result.stderr_text, "ZeroDivisionError"));
    assert_non_null(strstr(rep.source_pass, "\"path\":\"derived\""));
    assert_int_equal(rep.ndecisions, 1);
    assert_int_equal(rep.nevidence, 1);
    assert_false(rep.has_outcome);
    pl_report_clear(&rep);
}

int main(int argc, char **argv) {
    if (argc == 3 && !strcmp(argv[1], "--run")) {
        g_dir = argv[2];
        char p[4096];
        snprintf(p, sizeof p, "%s/python.wasm", g_dir);
        if (access(p, R_OK) != 0) {
            const char *ci = getenv("CI");
            printf("%s: CPython's WASI build is missing in %s (scripts/deps.sh)\n",
                   ci && !strcmp(ci, "true") ? "FAIL (CI)" : "SKIPPED", g_dir);
            return ci && !strcmp(ci, "true") ? 1 : 77;
        }
        const struct CMUnitTest run[] = {cmocka_unit_test(test_run_paths)};
        return cmocka_run_group_tests(run, NULL, NULL);
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rewrites),
        cmocka_unit_test(test_leaves_alone),
        cmocka_unit_test(test_fails),
        cmocka_unit_test(test_stage_records),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
