/*
 * test_hostile.c — hostile guests against the room (2, 3, 13),
 * through the contract call pr_run with WAT-built fixtures (tests/room/yuyan/fixtures,
 * scripts/build-yuyan-fixtures.sh):
 *   hostile.wasm   values of the wrong type / arity through the legacy gc-host call
 *                  (cases 1-18), value graphs for browser fail (20-25: cycles, 150 × a
 *                  1 MiB array, a 2^64-leaf DAG, a 100,000-deep chain, a long walk),
 *                  loops whose only way back is an exception (30-35);
 *   forge.wasm     prototypes of the wrong arity ($big / $float with a reference field);
 *   wasi_iov.wasm  fd_write / fd_pwrite with up to 512 overlapping whole-memory iovecs;
 *   and hand-assembled WASI modules whose fd_write import has another type (arity,
 *                  i64 for i32, no result, two results): they must not link.
 * Host memory is checked with the process's peak RSS (ru_maxrss), which the unbounded
 * versions raised by 535-626 MB; the bound asserted is 200 MB.
 *
 * Control transfers whose loops the CPU and wall limits are shown to stop here (the
 * engine-level list, with every branch and call form, is in tests/wasm/test_loops.c):
 * try_table catch of the loop's own throw (tag without payload), catch_all of a tag
 * with payload, throw_ref of a caught exnref, an exception thrown by a host function
 * (typed import and legacy call), an exception from a callee two frames down; and a
 * host function's long walk over guest data (the CPU limit polled inside it).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "room/yuyan_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#ifndef YY_FIXTURES
#define YY_FIXTURES "tests/room/yuyan/fixtures"
#endif

#include "../room_prog.h"

enum { P_HOSTILE, P_FORGE, P_IOV, P_COUNT };
static const char *const NAMES[P_COUNT] = {"hostile.wasm", "forge.wasm", "wasi_iov.wasm"};
static prog progs[P_COUNT];
static pr_host *host;      /* CPU limit 1000 ms, long wall limit */
static pr_host *wall_host; /* wall limit 300 ms */

static bool load_prog(prog *p, const char *name) {
    char path[512];
    snprintf(path, sizeof path, "%s/%s", YY_FIXTURES, name);
    FILE *f = fopen(path, "rb");
    if (!f) return false;
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *b = malloc((size_t)len + 1);
    bool ok = len > 0 && fread(b, 1, (size_t)len, f) == (size_t)len;
    fclose(f);
    if (ok) {
        uint8_t d[32];
        pr__sha256(b, (size_t)len, d);
        pr__hex(d, 32, p->digest);
        p->b64 = pr__base64_encode(b, (size_t)len, &p->b64_len);
    }
    free(b);
    return ok;
}

/* Runs and returns the output text, or "!" + the exception message. Caller frees. */
static char *run_on(pr_host *h, int which, const char *input) {
    const prog *p = &progs[which];
    const char *runner = "LOADER", *scope = "豫言测试";
    pr_request r = {{runner, strlen(runner)},
                    {scope, strlen(scope)},
                    {p->digest, 64},
                    {p->b64, p->b64_len},
                    {input, strlen(input)}};
    pr_response res;
    pr_error e;
    if (pr_run(h, &r, &res, &e)) return res.output;
    char *m = malloc(strlen(e.message) + 2);
    m[0] = '!';
    strcpy(m + 1, e.message);
    return m;
}

static char *run_case(int which, const char *arg) {
    char input[128];
    snprintf(input, sizeof input, "{\"args\":[\"%s\"]}", arg);
    return run_on(host, which, input);
}

/* The run's "error" field is exactly want. */
static void expect_error(int which, const char *arg, const char *want) {
    char *got = run_case(which, arg);
    char *field = malloc(strlen(want) + 16);
    sprintf(field, "\"error\":\"%s\"", want);
    if (!strstr(got, field)) fail_msg("case %s: %s\n  wanted error %s", arg, got, want);
    assert_non_null(strstr(got, "\"ok\":false"));
    free(field);
    free(got);
}

static void expect_exact(int which, const char *arg, const char *want) {
    char *got = run_case(which, arg);
    if (strcmp(got, want) != 0) fail_msg("case %s: %s\n  wanted %s", arg, got, want);
    free(got);
}

static long peak_rss_mb(void) {
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_maxrss / 1024;
}

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + t.tv_nsec / 1e9;
}

#define TYPE_ERR  "宿主原语参数类型不符："
#define ARITY_ERR "宿主原语参数个数不符："
#define LIST_ERR  "宿主原语参数不是元组："
#define CPU_LIMIT "!隔离运行失败：CPU 时间超过 1000 ms"

/* ---------------------------------------------------------------- memory bounds first */

/* Host memory stays bounded whatever the guest builds (run first: the peak RSS of the
 * process is the measure). */
static void test_host_memory_bounded(void **st) {
    (void)st;
    long before = peak_rss_mb();
    /* 150 references to one 1 MiB array: the text stops at the output limit, the
     * message keeps its first 1023 bytes. */
    char *got = run_case(P_HOSTILE, "22");
    assert_non_null(strstr(got, "\"error\":\"未捕捉的豫言异常：\\n0,0,0,0,"));
    assert_true(strlen(got) < 2048);
    free(got);
    /* 512 whole-memory iovecs: stdout and stderr end the run at the output limit... */
    expect_error(P_IOV, "a", "输出超过 64 KB");
    expect_error(P_IOV, "b", "输出超过 64 KB");
    /* ... a file write is refused (ENOSPC = 51) before anything is copied */
    expect_exact(P_IOV, "c",
                 "{\"ok\":false,\"stdout\":\"\",\"stderr\":\"\",\"exitCode\":51,\"files\":{}}");
    expect_exact(P_IOV, "d",
                 "{\"ok\":false,\"stdout\":\"\",\"stderr\":\"\",\"exitCode\":51,\"files\":{}}");
    expect_exact(P_IOV, "e",
                 "{\"ok\":false,\"stdout\":\"\",\"stderr\":\"\",\"exitCode\":51,\"files\":{}}");
    long after = peak_rss_mb();
    if (after - before > 200)
        fail_msg("peak RSS grew by %ld MB (%ld -> %ld)", after - before, before, after);
}

/* ---------------------------------------------------------------- legacy value types */

static void test_legacy_types(void **st) {
    (void)st;
    expect_exact(P_HOSTILE, "0",
                 "{\"ok\":true,\"stdout\":\"好\\n\",\"stderr\":\"\",\"exitCode\":0,\"files\":{}}");
    /* a reference-holding struct is never read as a number */
    expect_error(P_HOSTILE, "1", TYPE_ERR "豫言_小数精确表示");
    expect_error(P_HOSTILE, "2", TYPE_ERR "豫言_获取随机整数");
    expect_error(P_HOSTILE, "3", TYPE_ERR "豫言_获取随机整数");
    expect_error(P_HOSTILE, "4", TYPE_ERR "豫言_获取随机整数");
    /* 整 as $big is a number where 小 is expected */
    expect_exact(P_HOSTILE, "5",
                 "{\"ok\":true,\"stdout\":\"1099511627776\\n\",\"stderr\":\"\",\"exitCode\":0,"
                 "\"files\":{}}");
    expect_error(P_HOSTILE, "6", TYPE_ERR "豫言_打印行");
    expect_error(P_HOSTILE, "7", TYPE_ERR "豫言_打印行");
    expect_error(P_HOSTILE, "8", TYPE_ERR "豫言_打印行");
    expect_error(P_HOSTILE, "9", TYPE_ERR "豫言_打印行");
}

static void test_legacy_arity(void **st) {
    (void)st;
    expect_error(P_HOSTILE, "10", LIST_ERR "豫言_打印行");
    expect_error(P_HOSTILE, "11", ARITY_ERR "豫言_打印行");
    expect_error(P_HOSTILE, "12", ARITY_ERR "豫言_打印行");
    expect_error(P_HOSTILE, "13", LIST_ERR "豫言_打印行");
    expect_error(P_HOSTILE, "14", LIST_ERR "豫言_获取当前工作目录");
    expect_error(P_HOSTILE, "15", ARITY_ERR "豫言_获取当前工作目录");
    expect_error(P_HOSTILE, "16", "宿主原语名不是字节串");
    expect_error(P_HOSTILE, "17", "宿主原语名不是字节串");
    expect_error(P_HOSTILE, "18", "宿主原语名不是字节串");
}

/* Prototypes with a second (reference) field are refused, never filled from host
 * memory. */
static void test_forged_prototypes(void **st) {
    (void)st;
    expect_error(P_FORGE, "float", "程序没有导出原型 yy_float");
    expect_error(P_FORGE, "big", TYPE_ERR "豫言_获取随机整数");
}

/* ---------------------------------------------------------------- cyclic failure values */

static void test_fail_graphs(void **st) {
    (void)st;
    /* cycles join as "" (JavaScript's Array.prototype.join) */
    expect_error(P_HOSTILE, "20", "未捕捉的豫言异常：\\n231,148,178,");
    expect_error(P_HOSTILE, "21", "未捕捉的豫言异常：\\n1,,2");
    /* nesting is cut at 256 levels: the innermost 9 is not reached */
    expect_error(P_HOSTILE, "24", "未捕捉的豫言异常：\\n");
    /* 2^64 leaves: bounded by the output limit */
    double t0 = now_s();
    char *got = run_case(P_HOSTILE, "23");
    assert_non_null(strstr(got, "\"error\":\"未捕捉的豫言异常：\\n7,,7,,7,,7,"));
    free(got);
    /* a long walk (200,000 × a 255-deep chain): ends at the output limit or the CPU
     * limit, never hangs */
    got = run_case(P_HOSTILE, "25");
    assert_true(strstr(got, "\"error\":\"未捕捉的豫言异常：\\n,,,,") ||
                strcmp(got, CPU_LIMIT) == 0);
    free(got);
    assert_true(now_s() - t0 < 60);
}

/* ---------------------------------------------------------------- exception loops */

static void test_exception_loops_cpu(void **st) {
    (void)st;
    static const char *const cases[] = {"30", "31", "32", "33", "34", "35"};
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char *got = run_case(P_HOSTILE, cases[i]);
        if (strcmp(got, CPU_LIMIT) != 0) fail_msg("case %s: %s", cases[i], got);
        free(got);
    }
    /* the host stays healthy */
    expect_exact(P_HOSTILE, "0",
                 "{\"ok\":true,\"stdout\":\"好\\n\",\"stderr\":\"\",\"exitCode\":0,\"files\":{}}");
}

static void test_exception_loops_wall(void **st) {
    (void)st;
    static const char *const cases[] = {"30", "32", "33", "35"};
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char input[64];
        snprintf(input, sizeof input, "{\"args\":[\"%s\"]}", cases[i]);
        char *got = run_on(wall_host, P_HOSTILE, input);
        if (strcmp(got, "!隔离运行失败：运行时间超过 300 ms") != 0 &&
            strcmp(got, CPU_LIMIT) != 0) /* a stalled watchdog tick can see both */
            fail_msg("case %s: %s", cases[i], got);
        free(got);
    }
}

/* ---------------------------------------------------------------- WASI iovecs */

static void test_wasi_iovecs(void **st) {
    (void)st;
    /* an iovec array past the end of memory: EFAULT (21) */
    expect_exact(P_IOV, "f",
                 "{\"ok\":false,\"stdout\":\"\",\"stderr\":\"\",\"exitCode\":21,\"files\":{}}");
    /* overlapping iovecs are gathered in order, as one write */
    expect_exact(P_IOV, "g",
                 "{\"ok\":true,\"stdout\":\"ababb\",\"stderr\":\"\",\"exitCode\":0,\"files\":{}}");
    /* into a file at an offset; then no iovecs at offset 8 leave it as it was (as
     * write(2) of zero bytes: no growth) */
    expect_exact(P_IOV, "h",
                 "{\"ok\":true,\"stdout\":\"\",\"stderr\":\"\",\"exitCode\":0,\"files\":{\"/数据/"
                 "y.txt\":\"\\u0000abab\"}}");
    /* 60 whole-memory iovecs (60 MiB) into a file: within the budget, all written */
    expect_exact(P_IOV, "i",
                 "{\"ok\":true,\"stdout\":\"\",\"stderr\":\"\",\"exitCode\":0,\"files\":{}}");
}

/* A WASI module importing fd_write with the given type and a _start that does nothing
 * (hand-assembled). */
static char *run_wasi_import(const uint8_t *params, uint8_t np, const uint8_t *results,
                             uint8_t nr) {
    uint8_t m[256];
    size_t k = 0;
    static const uint8_t head[] = {0, 'a', 's', 'm', 1, 0, 0, 0};
    memcpy(m, head, sizeof head);
    k = sizeof head;
    uint8_t types[64];
    size_t t = 0;
    types[t++] = 2; /* two types */
    types[t++] = 0x60;
    types[t++] = np;
    if (np) memcpy(types + t, params, np), t += np;
    types[t++] = nr;
    if (nr) memcpy(types + t, results, nr), t += nr;
    types[t++] = 0x60, types[t++] = 0, types[t++] = 0;
    m[k++] = 1, m[k++] = (uint8_t)t;
    memcpy(m + k, types, t), k += t;
    static const char mod[] = "wasi_snapshot_preview1", fld[] = "fd_write";
    uint8_t imp = (uint8_t)(1 + 1 + strlen(mod) + 1 + strlen(fld) + 2);
    m[k++] = 2, m[k++] = imp, m[k++] = 1;
    m[k++] = (uint8_t)strlen(mod), memcpy(m + k, mod, strlen(mod)), k += strlen(mod);
    m[k++] = (uint8_t)strlen(fld), memcpy(m + k, fld, strlen(fld)), k += strlen(fld);
    m[k++] = 0, m[k++] = 0;                         /* func, type 0 */
    m[k++] = 3, m[k++] = 2, m[k++] = 1, m[k++] = 1; /* one function of type 1 */
    static const uint8_t exp[] = {7, 10, 1, 6, '_', 's', 't', 'a', 'r', 't', 0, 1};
    memcpy(m + k, exp, sizeof exp), k += sizeof exp;
    static const uint8_t code[] = {10, 4, 1, 2, 0, 0x0b};
    memcpy(m + k, code, sizeof code), k += sizeof code;
    prog p;
    uint8_t d[32];
    pr__sha256(m, k, d);
    pr__hex(d, 32, p.digest);
    p.b64 = pr__base64_encode(m, k, &p.b64_len);
    prog saved = progs[P_IOV];
    progs[P_IOV] = p;
    char *got = run_on(host, P_IOV, "{}");
    progs[P_IOV] = saved;
    free(p.b64);
    return got;
}

/* A WASI import of another type than the function's own does not link (the host would
 * read arguments that were never passed, or write a result with no room for it). */
static void test_wasi_import_types(void **st) {
    (void)st;
    static const uint8_t I = 0x7f, L = 0x7e;
    const uint8_t p4[] = {I, I, I, I}, p1[] = {I}, p5[] = {I, I, I, I, I}, p4l[] = {I, I, I, L},
                  r1[] = {I}, r1l[] = {L}, r2[] = {I, I};
    struct {
        const uint8_t *p, *r;
        uint8_t np, nr;
    } bad[] = {{p1, r1, 1, 1},  {NULL, r1, 0, 1}, {p4, NULL, 4, 0}, {p5, r1, 5, 1},
               {p4l, r1, 4, 1}, {p4, r1l, 4, 1},  {p4, r2, 4, 2}};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        char *got = run_wasi_import(bad[i].p, bad[i].np, bad[i].r, bad[i].nr);
        if (strncmp(got, "!隔离运行失败：", strlen("!隔离运行失败：")) != 0 ||
            !strstr(got, "incompatible import type"))
            fail_msg("variant %zu: %s", i, got);
        free(got);
    }
    char *got = run_wasi_import(p4, 4, r1, 1);
    assert_string_equal(
        got, "{\"ok\":true,\"stdout\":\"\",\"stderr\":\"\",\"exitCode\":0,\"files\":{}}");
    free(got);
}

static int setup(void **st) {
    (void)st;
    for (int i = 0; i < P_COUNT; i++) {
        if (!load_prog(&progs[i], NAMES[i])) {
            fprintf(stderr, "fixture %s missing under %s\n", NAMES[i], YY_FIXTURES);
            return -1;
        }
    }
    pr_error e;
    /* A long wall-clock bound: on a loaded machine 1 s of CPU can take over 5 s. */
    pr_host_config cfg = {.wall_ms = 120000};
    host = room_host_new(&cfg, &e);
    pr_host_config wcfg = {.wall_ms = 300};
    wall_host = room_host_new(&wcfg, &e);
    return host && wall_host ? 0 : -1;
}

static int teardown(void **st) {
    (void)st;
    pr_host_free(host);
    pr_host_free(wall_host);
    for (int i = 0; i < P_COUNT; i++)
        free(progs[i].b64);
    return 0;
}

int main(int argc, char **argv) {
    if (!room_engine_args(argc, argv)) return 2;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_host_memory_bounded),  cmocka_unit_test(test_legacy_types),
        cmocka_unit_test(test_legacy_arity),         cmocka_unit_test(test_forged_prototypes),
        cmocka_unit_test(test_fail_graphs),          cmocka_unit_test(test_exception_loops_cpu),
        cmocka_unit_test(test_exception_loops_wall), cmocka_unit_test(test_wasi_iovecs),
        cmocka_unit_test(test_wasi_import_types),
    };
    return cmocka_run_group_tests_name("room.hostile", tests, setup, teardown);
}
