/*
 * test_pyscan.c — placement's reading of Python imports (cmocka): which scripts need
 * the native sandbox (subprocess, socket, ctypes, multiprocessing, os.system, numpy...)
 * and which run in the room (stdlib only, unknown modules, imports inside strings and
 * comments), plus the L1 decision for a {"python": ...} request: required_native_feature
 * for a script importing subprocess, never for one that merely fails to import.
 */
#include "peri/place.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint32_t req(const char *src) {
    return pl_python_requirements(src, strlen(src), NULL, 0);
}

static void test_native_imports(void **state) {
    (void)state;
    assert_int_equal(req("import subprocess\n"), PL_REQ_SUBPROCESS);
    assert_int_equal(req("import os, subprocess as sp\n"), PL_REQ_SUBPROCESS);
    assert_int_equal(req("from subprocess import run\n"), PL_REQ_SUBPROCESS);
    assert_int_equal(req("import multiprocessing.pool\n"), PL_REQ_SUBPROCESS);
    assert_int_equal(req("import socket\n"), PL_REQ_NETWORK);
    assert_int_equal(req("from urllib.request import urlopen\n"), PL_REQ_NETWORK);
    assert_int_equal(req("from urllib import request\n"), PL_REQ_NETWORK);
    assert_int_equal(req("import ctypes\n"), PL_REQ_NATIVE_EXTENSION);
    assert_int_equal(req("import numpy as np\n"), PL_REQ_NATIVE_EXTENSION);
    assert_int_equal(req("import pandas.io\n"), PL_REQ_NATIVE_EXTENSION);
    assert_int_equal(req("from scipy import stats\n"), PL_REQ_NATIVE_EXTENSION);
    assert_int_equal(req("import threading\n"), PL_REQ_NATIVE_THREADS);
    assert_int_equal(req("from concurrent.futures import ThreadPoolExecutor\n"),
                     PL_REQ_NATIVE_THREADS);
    assert_true(req("from concurrent.futures import ProcessPoolExecutor\n") & PL_REQ_SUBPROCESS);
    assert_int_equal(req("import subprocess, socket\n"), PL_REQ_SUBPROCESS | PL_REQ_NETWORK);
}

static void test_process_calls(void **state) {
    (void)state;
    assert_int_equal(req("import os\nos.system('ls')\n"), PL_REQ_SUBPROCESS);
    assert_int_equal(req("import os\nx = os.popen ('ls').read()\n"), PL_REQ_SUBPROCESS);
    assert_int_equal(req("from os import execvp\n"), PL_REQ_SUBPROCESS);
    assert_int_equal(req("import os\npid = os.fork()\n"), PL_REQ_SUBPROCESS);
    assert_int_equal(req("m = __import__('subprocess')\n"), PL_REQ_SUBPROCESS);
    assert_int_equal(req("import importlib\nimportlib.import_module(\"socket\")\n"),
                     PL_REQ_NETWORK);
    /* not a call: only a name */
    assert_int_equal(req("import os\nprint(os.getcwd(), os.sep)\n"), 0);
}

static void test_room_scripts(void **state) {
    (void)state;
    assert_int_equal(req(""), 0);
    assert_int_equal(req("import json, re, math\nfrom collections import Counter\n"), 0);
    assert_int_equal(req("import mypackage_that_does_not_exist\n"), 0); /* an ImportError */
    assert_int_equal(req("from . import sibling\n"), 0);
    assert_int_equal(req("# import subprocess\nprint('import socket')\n"), 0);
    assert_int_equal(req("s = '''\nimport subprocess\n'''\nt = r\"import ctypes\"\n"), 0);
    assert_int_equal(req("x = \"os.system('x')\"\n"), 0);
    assert_int_equal(req("import subprocessing\nimport sockets\nimport numpyx\n"), 0);
    assert_int_equal(req("import concurrent\n"), 0);
    /* statements after a colon or a semicolon, in brackets, after continuations */
    assert_int_equal(req("try: import subprocess\nexcept ImportError: pass\n"), PL_REQ_SUBPROCESS);
    assert_int_equal(req("x = 1; import socket\n"), PL_REQ_NETWORK);
    assert_int_equal(req("from os import (path,\n    system)\n"), PL_REQ_SUBPROCESS);
    assert_int_equal(req("import json, \\\n    ctypes\n"), PL_REQ_NATIVE_EXTENSION);
    assert_int_equal(req("\xEF\xBB\xBFimport ctypes\n"), PL_REQ_NATIVE_EXTENSION);
    assert_int_equal(req("def f():\n    import subprocess\n"), PL_REQ_SUBPROCESS);
}

static void test_why(void **state) {
    (void)state;
    char why[160];
    const char *src = "import json\n\nimport subprocess\n";
    assert_int_equal(pl_python_requirements(src, strlen(src), why, sizeof why), PL_REQ_SUBPROCESS);
    assert_string_equal(why, "line 3: import subprocess");
    src = "import json\n";
    assert_int_equal(pl_python_requirements(src, strlen(src), why, sizeof why), 0);
    assert_string_equal(why, "");
}

/* Hostile input: unterminated strings, NULs, deep brackets, long names, truncation. */
static void test_bad_input(void **state) {
    (void)state;
    const char *srcs[] = {"'''",      "\"abc",    "import",      "from",      "from .",
                          "import .", "((((((((", "))))",        "import a.", "from a import",
                          "\\",       "r'",       "__import__(", "os.system"};
    for (size_t i = 0; i < sizeof srcs / sizeof *srcs; i++)
        req(srcs[i]);
    char big[70000];
    memset(big, '(', sizeof big);
    assert_int_equal(pl_python_requirements(big, sizeof big, NULL, 0), 0);
    memset(big, 'a', sizeof big);
    memcpy(big, "import ", 7);
    assert_int_equal(pl_python_requirements(big, sizeof big, NULL, 0), 0);
    const char nul[] = "import json\0import subprocess\n";
    (void)pl_python_requirements(nul, sizeof nul - 1, NULL, 0);
    assert_int_equal(pl_python_requirements(NULL, 0, NULL, 0), 0);
    /* every prefix of a real script is read without going past it */
    const char *s = "import os\nos.system('x')\nfrom a.b import (c,\n d)\n";
    for (size_t n = 0; n <= strlen(s); n++) {
        char buf[128];
        memcpy(buf, s, n);
        (void)pl_python_requirements(buf, n, NULL, 0);
    }
}

/* L1: a Python script importing subprocess is decided native at L1 with the reason
 * required_native_feature (or unavailable where the sandbox is missing); one that only
 * imports a missing module is never a native reason. */
static void test_decide(void **state) {
    (void)state;
    pl_error err = {0};
    pl_config cfg = {0};
    pl_ctx *pc = pl_new(&cfg, &err);
    assert_non_null(pc);
    pl_policy no_native = {.native = PL_NATIVE_NO};
    pl_request r = {.run_id = "r", .kind = PL_PROGRAM_PYTHON, .program = "import subprocess\n"};
    pl_decision d;
    assert_true(pl_decide(pc, &r, &no_native, &d, &err));
    assert_false(d.selected);
    assert_string_equal(pl_reason_name(d.reason), "native_unavailable");
    char *j = pl_decision_json(&d, NULL);
    assert_non_null(j);
    assert_non_null(strstr(j, "\"status\":\"unavailable\""));
    free(j);
    /* the request's canonical JSON names the kind */
    char *rj = pl_request_json(&r, NULL);
    assert_non_null(rj);
    assert_non_null(strstr(rj, "\"python\":\"import subprocess\\n\""));
    free(rj);
    /* a missing module: no native reason; the room has no Python here (no hook), so it is
     * the room runtime that is missing, never a required feature */
    r.program = "import numpy_not_installed_anywhere\n";
    assert_true(pl_decide(pc, &r, &no_native, &d, &err));
    assert_string_equal(pl_reason_name(d.reason), "native_unavailable");
    /* parsed from JSON */
    const char *js = "{\"run_id\":\"x\",\"program\":{\"python\":\"print(1)\\n\"}}";
    pl_request *pr = pl_request_parse(js, strlen(js), &err);
    assert_non_null(pr);
    assert_int_equal(pr->kind, PL_PROGRAM_PYTHON);
    pl_request_free(pr);
    pl_free(pc);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_native_imports), cmocka_unit_test(test_process_calls),
        cmocka_unit_test(test_room_scripts),   cmocka_unit_test(test_why),
        cmocka_unit_test(test_bad_input),      cmocka_unit_test(test_decide),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
