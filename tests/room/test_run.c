/*
 * test_run.c — the contract's conformance examples through pr_run with real WASI
 * programs (fixtures/probe.c, fixtures/hello.c): exact return texts and exception
 * messages, the reference check order on whole requests, the isolate identity and
 * cache, limits (output, files, CPU), determinism, and 1000 runs in a row.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "room/room_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#ifndef ROOM_FIXTURES
#define ROOM_FIXTURES "tests/room/fixtures"
#endif

#include "room_prog.h"

static prog probe, hello;

static void make_prog(prog *p, const uint8_t *bytes, size_t n) {
    assert_true(room_prog_make(p, bytes, n));
}

static bool load_prog(prog *p, const char *name) {
    return room_prog_load(p, ROOM_FIXTURES, name);
}

/* Runs and returns the output text, or "!" + the exception message. Caller frees. */
static char *run4(pr_host *h, const char *runner, const char *scope, const prog *p,
                  const char *input, char *isolate_out) {
    pr_request r = {{runner, strlen(runner)},
                    {scope, strlen(scope)},
                    {p->digest, strlen(p->digest)},
                    {p->b64, p->b64_len},
                    {input, strlen(input)}};
    pr_response res;
    pr_error e;
    if (pr_run(h, &r, &res, &e)) {
        if (isolate_out) strcpy(isolate_out, res.isolate);
        return res.output;
    }
    char *m = malloc(strlen(e.message) + 2);
    m[0] = '!';
    strcpy(m + 1, e.message);
    return m;
}

static char *run(pr_host *h, const char *input) {
    return run4(h, "LOADER", "测试", &probe, input, NULL);
}

static void expect(pr_host *h, const char *input, const char *want) {
    char *got = run(h, input);
    assert_string_equal(got, want);
    free(got);
}

static int setup(void **st) {
    if (!load_prog(&probe, "probe.wasm") || !load_prog(&hello, "hello.wasm")) {
        fprintf(stderr, "room fixtures missing under %s\n", ROOM_FIXTURES);
        return -1;
    }
    pr_error e;
    *st = room_host_new(NULL, &e);
    return *st ? 0 : -1;
}

static int teardown(void **st) {
    pr_host_free(*st);
    free(probe.b64);
    free(hello.b64);
    return 0;
}

static void test_program_a(void **st) {
    expect(*st,
           "{\"args\":[\"echo\"],\"files\":{\"/请求/路径.txt\":\"/x\",\"/数据/旧.txt\":\"旧\"}}",
           "{\"ok\":true,\"stdout\":\"你好\\n\",\"stderr\":\"\",\"exitCode\":0,\"files\":{"
           "\"/数据/旧.txt\":\"旧\",\"/数据/记录.txt\":\"见：/x\\n\",\"/响应/正文.txt\":\"回显：/"
           "x\\n\"}}");
    /* Missing request file reads as empty. */
    expect(*st, "{\"args\":[\"echo\"]}",
           "{\"ok\":true,\"stdout\":\"你好\\n\",\"stderr\":\"\",\"exitCode\":0,\"files\":{"
           "\"/数据/记录.txt\":\"见：\\n\",\"/响应/正文.txt\":\"回显：\\n\"}}");
}

static void test_program_failures(void **st) {
    expect(*st, "{\"args\":[\"fail\"]}",
           "{\"ok\":false,\"stdout\":\"\",\"stderr\":\"\",\"exitCode\":3,\"files\":{}}");
    expect(*st, "{\"args\":[\"trap\"]}",
           "{\"ok\":false,\"stdout\":\"\",\"stderr\":\"\",\"exitCode\":1,\"error\":\"unreachable\","
           "\"files\":{}}");
    expect(*st, "{\"args\":[\"stderr\"]}",
           "{\"ok\":true,\"stdout\":\"照常\\n\",\"stderr\":\"警告：探针\\n\",\"exitCode\":0,"
           "\"files\":{}}");
    expect(*st, "{\"args\":[\"exit0\"]}",
           "{\"ok\":true,\"stdout\":\"bye\\n\",\"stderr\":\"\",\"exitCode\":0,\"files\":{}}");
    expect(*st, "{\"args\":[\"没有这个命令\"]}",
           "{\"ok\":true,\"stdout\":\"未知命令：没有这个命令\\n\",\"stderr\":\"\",\"exitCode\":0,"
           "\"files\":{}}");
    /* Deep recursion overflows the C stack in linear memory: a trap, not a crash. */
    char *got = run(*st, "{\"args\":[\"recurse\"]}");
    assert_non_null(strstr(got, "\"ok\":false"));
    assert_non_null(strstr(got, "\"exitCode\":1,\"error\":"));
    free(got);
}

/* The number of 'x' in runs of at least two (the probe's filler, not "exitCode"). */
static size_t count_x(const char *s) {
    size_t n = 0;
    for (; *s; s++)
        if (*s == 'x' && (s[1] == 'x' || (n && s[-1] == 'x'))) n++;
    return n;
}

static void test_output_limit(void **st) {
    /* 65,537 bytes in 1000-byte writes: 65 writes kept, the 66th dropped whole. */
    char *got = run(*st, "{\"args\":[\"bigout\"]}");
    assert_non_null(strstr(got, "\"error\":\"输出超过 64 KB\""));
    assert_non_null(strstr(got, "{\"ok\":false,"));
    assert_non_null(strstr(got, "\"exitCode\":1,"));
    assert_int_equal(count_x(got), 65000);
    free(got);
    /* Exactly 65,536 bytes pass. */
    got = run(*st, "{\"args\":[\"out\",\"65536\",\"1024\"]}");
    assert_non_null(strstr(got, "{\"ok\":true,"));
    assert_int_equal(count_x(got), 65536);
    free(got);
    /* One write of 65,537 bytes: dropped, nothing written. */
    expect(
        *st, "{\"args\":[\"out\",\"65537\",\"65537\"]}",
        "{\"ok\":false,\"stdout\":\"\",\"stderr\":\"\",\"exitCode\":1,\"error\":\"输出超过 64 KB\","
        "\"files\":{}}");
}

static void test_output_files_limits(void **st) {
    char *got = run(*st, "{\"args\":[\"many:256\"]}");
    assert_non_null(strstr(got, "\"/数据/255.txt\":\"a\""));
    free(got);
    expect(*st, "{\"args\":[\"many:257\"]}", "!隔离运行失败：500：运行数据超过上限");
    got = run(*st, "{\"args\":[\"big:1048576\"]}");
    assert_int_equal(count_x(got), 1048576);
    free(got);
    expect(*st, "{\"args\":[\"big:1048577\"]}", "!隔离运行失败：500：运行数据超过上限");
    expect(*st, "{\"args\":[\"badutf8\"]}",
           "!隔离运行失败：500：输出文件不是有效 UTF-8：/数据/坏.txt");
    /* Untouched input files under /数据/ come back; /请求/ and others never do. */
    expect(*st,
           "{\"args\":[\"x\"],\"files\":{\"数据/a\":\"1\",\"/请求/b\":\"2\",\"/响应/../数据/"
           "c\":\"3\"}}",
           "{\"ok\":true,\"stdout\":\"未知命令：x\\n\",\"stderr\":\"\",\"exitCode\":0,\"files\":{"
           "\"/数据/a\":\"1\",\"/数据/c\":\"3\"}}");
}

static void test_violations(void **st) {
    pr_host *h = *st;
    prog p = probe;
    char d[70];
    strcpy(d, probe.digest);
    strcat(d, "0");
    p = probe;
    strcpy(p.digest, "0000000000000000000000000000000000000000000000000000000000000000");
    char *got = run4(h, "LOADER", "s", &p, "{}", NULL);
    assert_string_equal(got, "!运行产物摘要不匹配");
    free(got);
    prog q = probe;
    for (char *c = q.digest; *c; c++)
        if (*c >= 'a' && *c <= 'f') *c = (char)(*c - 32);
    got = run4(h, "LOADER", "s", &q, "{}", NULL);
    assert_string_equal(got, "!产物摘要无效");
    free(got);
    pr_request r = {{"LOADER", 6}, {"s", 1}, {d, 65}, {probe.b64, probe.b64_len}, {"{}", 2}};
    pr_response res;
    pr_error e;
    assert_false(pr_run(h, &r, &res, &e));
    assert_string_equal(e.message, "产物摘要无效");
    assert_int_equal(e.kind, PR_KIND_VIOLATION);
    r.digest = (pr_str){probe.digest, 64};
    r.program = (pr_str){"@@@@", 4};
    assert_false(pr_run(h, &r, &res, &e));
    assert_string_equal(e.message, "运行产物无效：不是有效的 Base64");
    r.program = (pr_str){probe.b64, probe.b64_len};
    r.scope = (pr_str){"", 0};
    assert_false(pr_run(h, &r, &res, &e));
    assert_string_equal(e.message, "隔离范围无效");
    r.scope = (pr_str){"甲\x01乙", 7};
    assert_false(pr_run(h, &r, &res, &e));
    assert_string_equal(e.message, "隔离范围无效");
    r.scope = (pr_str){"s", 1};
    r.runner = (pr_str){"", 0};
    assert_false(pr_run(h, &r, &res, &e));
    assert_string_equal(e.message, "运行器名无效");
    r.runner = (pr_str){"OTHER", 5};
    assert_false(pr_run(h, &r, &res, &e));
    assert_int_equal(e.kind, PR_KIND_RUN_FAILED);
    assert_string_equal(e.message, "隔离运行失败：未授权的LOADER绑定：OTHER");
    /* A cached (scope, digest) does not excuse a different text: it is decoded and
     * hashed again and fails the digest. The same text with whitespace still runs. */
    char *ok = run4(h, "LOADER", "s", &hello, "{}", NULL);
    free(ok);
    prog mixed = hello;
    mixed.b64 = probe.b64;
    mixed.b64_len = probe.b64_len;
    got = run4(h, "LOADER", "s", &mixed, "{}", NULL);
    assert_string_equal(got, "!运行产物摘要不匹配");
    free(got);
    prog spaced = hello;
    spaced.b64 = malloc(hello.b64_len + 3);
    memcpy(spaced.b64, " \r\n", 3);
    memcpy(spaced.b64 + 3, hello.b64, hello.b64_len);
    spaced.b64_len = hello.b64_len + 3;
    got = run4(h, "LOADER", "s", &spaced, "{}", NULL);
    assert_string_equal(
        got, "{\"ok\":true,\"stdout\":\"hello\\n\",\"stderr\":\"\",\"exitCode\":0,\"files\":{}}");
    free(got);
    free(spaced.b64);
    /* Input checks. */
    expect(h, "不是JSON", "!隔离运行输入无效：输入不是有效 JSON");
    expect(h, "{\"args\":[1]}", "!隔离运行输入无效：args 须为字符串数组");
    expect(h, "{\"files\":{\"/a\":1}}", "!隔离运行输入无效：files 须为路径到文字的对象");
}

static void test_wasm_and_binding(void **st) {
    pr_host *h = *st;
    prog junk;
    const uint8_t notwasm[] = "this is not wasm";
    make_prog(&junk, notwasm, sizeof notwasm - 1);
    char *got = run4(h, "LOADER", "s", &junk, "{}", NULL);
    assert_string_equal(got, "!隔离运行失败：动态 Worker 程序不是有效 Wasm");
    free(got);
    /* Order: not granted beats not-Wasm, not-Wasm beats bad input. */
    got = run4(h, "NOPE", "s", &junk, "不是JSON", NULL);
    assert_string_equal(got, "!隔离运行失败：未授权的LOADER绑定：NOPE");
    free(got);
    got = run4(h, "LOADER", "s", &junk, "不是JSON", NULL);
    assert_string_equal(got, "!隔离运行失败：动态 Worker 程序不是有效 Wasm");
    free(got);
    /* Bad input beats a link error (the run comes last). */
    const uint8_t imports_env[] = {0, 'a', 's', 'm', 1, 0,   0,   0,   1, 4,   1, 0x60, 0,
                                   0, 2,   9,   1,   3, 'e', 'n', 'v', 1, 'f', 0, 0};
    prog link;
    make_prog(&link, imports_env, sizeof imports_env);
    got = run4(h, "LOADER", "s", &link, "{\"args\":[1]}", NULL);
    assert_string_equal(got, "!隔离运行输入无效：args 须为字符串数组");
    free(got);
    got = run4(h, "LOADER", "s", &link, "{}", NULL);
    assert_string_equal(got, "!隔离运行失败：unknown import: env.f");
    free(got);
    /* Linear memory declared over the 128 MiB cap: a platform limit (exception). */
    const uint8_t bigmem[] = {0,   'a', 's', 'm', 1,   0,   0, 0, 1,    4,    1, 0x60, 0, 0,
                              3,   2,   1,   0,   5,   4,   1, 0, 0xb8, 0x17, 7, 10,   1, 6,
                              '_', 's', 't', 'a', 'r', 't', 0, 0, 10,   4,    1, 2,    0, 0x0b};
    prog mem;
    make_prog(&mem, bigmem, sizeof bigmem);
    got = run4(h, "LOADER", "s", &mem, "{}", NULL);
    assert_string_equal(got, "!隔离运行失败：内存超过上限");
    free(got);
    /* Endless Wasm recursion exhausts the engine's call stack: a trap (a result). */
    const uint8_t rec[] = {0,   'a', 's', 'm', 1,  0, 0,  0, 1, 4,    1,   0x60, 0,
                           0,   3,   2,   1,   0,  7, 10, 1, 6, '_',  's', 't',  'a',
                           'r', 't', 0,   0,   10, 6, 1,  4, 0, 0x10, 0,   0x0b};
    prog deep;
    make_prog(&deep, rec, sizeof rec);
    got = run4(h, "LOADER", "s", &deep, "{}", NULL);
    assert_string_equal(got, "{\"ok\":false,\"stdout\":\"\",\"stderr\":\"\",\"exitCode\":1,"
                             "\"error\":\"Maximum call stack size exceeded\",\"files\":{}}");
    free(got);
    /* No _start: the program fails (a result), like calling a missing export. */
    const uint8_t nostart[] = {0, 'a', 's', 'm', 1, 0, 0, 0};
    prog ns;
    make_prog(&ns, nostart, sizeof nostart);
    got = run4(h, "LOADER", "s", &ns, "{}", NULL);
    assert_string_equal(got, "{\"ok\":false,\"stdout\":\"\",\"stderr\":\"\",\"exitCode\":1,"
                             "\"error\":\"程序没有导出 _start\",\"files\":{}}");
    free(got);
    free(mem.b64);
    free(deep.b64);
    free(ns.b64);
    free(junk.b64);
    free(link.b64);
    /* A granted runner without a binding. */
    const char *granted[] = {"A", "B"}, *bound[] = {"A"};
    pr_host_config cfg = {.granted = granted, .ngranted = 2, .bound = bound, .nbound = 1};
    pr_error e;
    pr_host *h2 = room_host_new(&cfg, &e);
    got = run4(h2, "B", "s", &hello, "{}", NULL);
    assert_string_equal(got, "!隔离运行失败：绑定不存在：B");
    free(got);
    got = run4(h2, "LOADER", "s", &hello, "{}", NULL);
    assert_string_equal(got, "!隔离运行失败：未授权的LOADER绑定：LOADER");
    free(got);
    got = run4(h2, "A", "s", &hello, "{}", NULL);
    assert_string_equal(
        got, "{\"ok\":true,\"stdout\":\"hello\\n\",\"stderr\":\"\",\"exitCode\":0,\"files\":{}}");
    free(got);
    pr_host_free(h2);
    cfg = (pr_host_config){.cpu_ms = 1001};
    assert_null(room_host_new(&cfg, &e));
}

static void test_isolate_identity(void **st) {
    (void)st;
    pr_error e;
    pr_host *h = room_host_new(NULL, &e);
    char a[200], b[200], c[200];
    char *o1 = run4(h, "LOADER", "甲", &hello, "{}", a);
    char *o2 = run4(h, "LOADER", "甲", &hello, "{}", b);
    char *o3 = run4(h, "LOADER", "乙", &hello, "{}", c);
    assert_string_equal(o1, o2);
    assert_string_equal(o1, o3);
    assert_string_equal(a, b);
    assert_string_not_equal(a, c);
    char want[200];
    snprintf(want, sizeof want, "甲:%s", hello.digest);
    assert_string_equal(a, want);
    pr_cache_stats cs;
    pr_host_cache_stats(h, &cs);
    assert_int_equal(cs.entries, 2); /* 甲 and 乙: the second 甲 run used the cached one */
    assert_int_equal(cs.hits, 1);
    free(o1);
    free(o2);
    free(o3);
    pr_host_free(h);
}

static void test_room_environment(void **st) {
    expect(
        *st, "{\"args\":[\"args\",\"a b\",\"\\u4f60\",\"\"]}",
        "{\"ok\":true,\"stdout\":\"[/程序.wasm]\\n[args]\\n[a b]\\n[你]\\n[]\\n\",\"stderr\":\"\","
        "\"exitCode\":0,\"files\":{}}");
    expect(*st, "{\"args\":[\"env\"]}",
           "{\"ok\":true,\"stdout\":\"environ=0\\nstdin=0\\n\",\"stderr\":\"\",\"exitCode\":0,"
           "\"files\":{}}");
    expect(*st, "{\"args\":[\"ls\",\"/\"],\"files\":{\"/b/x\":\"\",\"/a\":\"\",\"/b/y\":\"\"}}",
           "{\"ok\":true,\"stdout\":\"./\\n../\\nb/\\na\\n\",\"stderr\":\"\",\"exitCode\":0,"
           "\"files\":{}}");
    expect(*st, "{\"args\":[\"cat\",\"/请求/../请求/a\"],\"files\":{\"请求/a\":\"内容\"}}",
           "{\"ok\":true,\"stdout\":\"内容\",\"stderr\":\"\",\"exitCode\":0,\"files\":{}}");
    /* Per-write lenient decoding: a character split across writes is two U+FFFD, and a
     * BOM at the start of a write is dropped. */
    expect(
        *st, "{\"args\":[\"split\"]}",
        "{\"ok\":true,\"stdout\":\"\xEF\xBF\xBD\xEF\xBF\xBDok\\n\",\"stderr\":\"\",\"exitCode\":0,"
        "\"files\":{}}");
    expect(
        *st, "{\"args\":[\"fsops\"]}",
        "{\"ok\":true,\"stdout\":\"mkdir=0\\nmkdir again=-1 errno=File exists\\nrename=0\\n"
        "stat=0 size=1 dir=0\\nstat dir=0 dir=1\\nunlink=0\\nunlink again=-1 errno=No such file "
        "or directory\\nrmdir=0\\nopen missing=-1 errno=No such file or directory\\nread=2 '12'\\n"
        "lseek=2\\nftruncate=0\\ncwd=/\\nchdir-free relative open: 0\\n\",\"stderr\":\"\","
        "\"exitCode\":0,\"files\":{\"/数据/追加.txt\":\"1\"}}");
    expect(*st, "{\"args\":[\"fsops2\"]}",
           "{\"ok\":true,\"stdout\":\"rmdir full=-1 errno=Directory not empty\\nrename dir=0\\n"
           "moved=2 old=-1\\nrename into itself=-1 errno=Invalid argument\\nrename over=0\\n"
           "bad name=-1 errno=Illegal byte sequence\\n"
           "./\\n../\\n树/\\n覆盖.txt\\nunlink open=0\\nread after unlink=10 'still here' "
           "close=0\\n\",\"stderr\":\"\",\"exitCode\":0,\"files\":{"
           "\"/数据/树/1.txt\":\"1\",\"/数据/树/b/2.txt\":\"2\",\"/数据/覆盖.txt\":\"new\"}}");
    /* Memory over the 128 MiB cap is a platform limit: the run throws instead of
     * memory.grow returning -1 (linear memory and GC heap share the cap). */
    expect(*st, "{\"args\":[\"grow\"]}", "!隔离运行失败：内存超过上限");
}

/* fd_readdir over many entries: wasi-libc reads in several calls with cookies. */
static void test_readdir_many(void **st) {
    pb_buf in = {0}, want = {0};
    char line[128];
    pb_buf_puts(&in, "{\"args\":[\"ls\",\"/d\"],\"files\":{");
    pb_buf_puts(&want, "{\"ok\":true,\"stdout\":\"./\\n../\\n");
    for (int i = 0; i < 300; i++) {
        snprintf(line, sizeof line, "%s\"/d/a-rather-long-file-name-number-%03d\":\"x\"",
                 i ? "," : "", (i * 7) % 300);
        pb_buf_puts(&in, line);
        snprintf(line, sizeof line, "a-rather-long-file-name-number-%03d\\n", (i * 7) % 300);
        pb_buf_puts(&want, line);
    }
    pb_buf_puts(&in, ",\"/d/sub/x\":\"\"}}");
    pb_buf_puts(&want, "sub/\\n\",\"stderr\":\"\",\"exitCode\":0,\"files\":{}}");
    expect(*st, in.p, want.p);
    pb_buf_free(&in);
    pb_buf_free(&want);
}

static void test_deterministic(void **st) {
    (void)st;
    pr_host_config cfg = {0}; /* deterministic: the default */
    pr_error e;
    pr_host *h = room_host_new(&cfg, &e);
    char *a = run(h, "{\"args\":[\"rand\"]}");
    char *b = run(h, "{\"args\":[\"rand\"]}");
    char *c = run(h, "{\"args\":[\"rand\"],\"x\":1}");
    assert_string_equal(a, b);
    assert_string_not_equal(a, c);
    /* The clocks start at 2026-01-01T00:00:00Z (realtime) and 0 (monotonic), 1 ms apart. */
    assert_non_null(strstr(a, " 1767225600.000000000 0.001000000\\n"));
    free(a);
    free(b);
    free(c);
    pr_host_free(h);
    /* the contract's default (no config at all) is the same; real_clocks opts out */
    h = room_host_new(NULL, &e);
    a = run(h, "{\"args\":[\"rand\"]}");
    assert_non_null(strstr(a, " 1767225600.000000000 0.001000000\\n"));
    free(a);
    pr_host_free(h);
    pr_host_config real = {.real_clocks = true};
    h = room_host_new(&real, &e);
    a = run(h, "{\"args\":[\"rand\"]}");
    b = run(h, "{\"args\":[\"rand\"]}");
    assert_string_not_equal(a, b);
    free(a);
    free(b);
    pr_host_free(h);
}

static double cpu_now(void) {
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static void test_cpu_limit(void **st) {
    (void)st;
    pr_error e;
    /* A long wall-clock bound: on a loaded machine 1 s of CPU can take over 5 s. */
    pr_host_config c1 = {.wall_ms = 120000};
    pr_host *h = room_host_new(&c1, &e);
    double t0 = cpu_now();
    char *got = run(h, "{\"args\":[\"loop\"]}");
    double used = cpu_now() - t0;
    assert_string_equal(got, "!隔离运行失败：CPU 时间超过 1000 ms");
    free(got);
    assert_true(used >= 0.99 && used < 1.5);
    /* The host stays healthy. */
    expect(h, "{\"args\":[\"fail\"]}",
           "{\"ok\":false,\"stdout\":\"\",\"stderr\":\"\",\"exitCode\":3,\"files\":{}}");
    pr_host_free(h);
    pr_host_config cfg = {.cpu_ms = 100, .wall_ms = 120000};
    h = room_host_new(&cfg, &e);
    t0 = cpu_now();
    got = run(h, "{\"args\":[\"loop\"]}");
    used = cpu_now() - t0;
    assert_string_equal(got, "!隔离运行失败：CPU 时间超过 100 ms");
    assert_true(used >= 0.099 && used < 0.5);
    free(got);
    pr_host_free(h);
}

/* A trap's error is V8's text for that trap, including the ones the spec words like
 * another trap: remainder vs division by zero, a float out of the integer range vs
 * division overflow, and the GC segment instructions and table.init past their data
 * or element segment vs memory and table accesses (texts as node 22 gives them). Each
 * program's _start runs one instruction that traps (the tier is the suite's: auto,
 * interp or jit). */
static void test_trap_texts(void **st) {
    pr_host *h = *st;
    static const struct {
        const char *body, *error;
    } cases[] = {
        {"(drop (i32.div_s (i32.const 1) (i32.const 0)))", "divide by zero"},
        {"(drop (i64.div_u (i64.const 1) (i64.const 0)))", "divide by zero"},
        {"(drop (i32.rem_s (i32.const 1) (i32.const 0)))", "remainder by zero"},
        {"(drop (i32.rem_u (i32.const 1) (i32.const 0)))", "remainder by zero"},
        {"(drop (i64.rem_s (i64.const 1) (i64.const 0)))", "remainder by zero"},
        {"(drop (i64.rem_u (i64.const 1) (i64.const 0)))", "remainder by zero"},
        {"(drop (i32.div_s (i32.const 0x80000000) (i32.const -1)))",
         "divide result unrepresentable"},
        {"(drop (i32.trunc_f32_s (f32.const 1e10)))", "float unrepresentable in integer range"},
        {"(drop (i32.trunc_f64_u (f64.const -1)))", "float unrepresentable in integer range"},
        {"(drop (i64.trunc_f64_s (f64.const 1e19)))", "float unrepresentable in integer range"},
        {"(drop (i64.trunc_f32_u (f32.const -2)))", "float unrepresentable in integer range"},
        {"(drop (i32.trunc_f32_s (f32.const nan)))", "float unrepresentable in integer range"},
        {"(drop (array.new_data $b $d (i32.const 3) (i32.const 2)))", "data segment out of bounds"},
        {"(array.init_data $b $d (array.new_default $b (i32.const 4)) (i32.const 0) (i32.const 3) "
         "(i32.const 2))",
         "data segment out of bounds"},
        {"(drop (array.new_elem $f $e (i32.const 1) (i32.const 2)))",
         "element segment out of bounds"},
        {"(array.init_elem $f $e (array.new_default $f (i32.const 4)) (i32.const 0) (i32.const 1) "
         "(i32.const 2))",
         "element segment out of bounds"},
        {"(table.init $e (i32.const 0) (i32.const 1) (i32.const 2))",
         "element segment out of bounds"},
        {"(table.init $e (i32.const 3) (i32.const 0) (i32.const 2))",
         "table index is out of bounds"},
        {"(memory.init $d (i32.const 0) (i32.const 3) (i32.const 2))",
         "memory access out of bounds"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char wat[1024], want[256];
        snprintf(wat, sizeof wat,
                 "(module (type $b (array (mut i8))) (type $f (array (mut funcref)))\n"
                 " (memory 1) (table 4 funcref) (elem $e func $nop $nop)\n"
                 " (data $d \"\\01\\02\\03\\04\") (func $nop)\n"
                 " (func (export \"_start\") %s))",
                 cases[i].body);
        uint8_t *bytes = NULL;
        size_t n = 0;
        pw_error we;
        if (pw_wat_to_wasm(wat, strlen(wat), &bytes, &n, &we) != PW_OK)
            fail_msg("wat %s: %s", cases[i].body, we.message);
        prog p;
        make_prog(&p, bytes, n);
        free(bytes);
        char *got = run4(h, "LOADER", "s", &p, "{}", NULL);
        snprintf(want, sizeof want,
                 "{\"ok\":false,\"stdout\":\"\",\"stderr\":\"\",\"exitCode\":1,\"error\":\"%s\","
                 "\"files\":{}}",
                 cases[i].error);
        if (strcmp(got, want) != 0) fail_msg("%s:\n got  %s\n want %s", cases[i].body, got, want);
        free(got);
        free(p.b64);
    }
}

/* the JIT tier gives the room the same outputs, traps and limits as the
 * interpreter (deterministic mode, so clocks and randomness cannot differ), and an
 * endless loop under the JIT stops at the CPU limit with the interpreter's message. */
static void test_jit_engine(void **st) {
    (void)st;
    pr_error e;
    pr_host_config ci = {.wall_ms = 120000, .engine = PW_ENGINE_INTERP};
    pr_host_config cj = {.wall_ms = 120000, .engine = PW_ENGINE_JIT};
    pr_host *hi = room_host_new(&ci, &e), *hj = room_host_new(&cj, &e);
    assert_non_null(hi);
    assert_non_null(hj);
    static const char *const inputs[] = {
        "{\"args\":[\"echo\"],\"files\":{\"/请求/路径.txt\":\"/x\"}}",
        "{\"args\":[\"fail\"]}",
        "{\"args\":[\"trap\"]}",
        "{\"args\":[\"recurse\"]}",
        "{\"args\":[\"grow\"]}",
        "{\"args\":[\"fsops\"]}",
        "{\"args\":[\"fsops2\"]}",
        "{\"args\":[\"rand\"]}",
        "{\"args\":[\"env\"]}",
        "{\"args\":[\"args\",\"a b\",\"\\u4f60\",\"\"]}",
        "{\"args\":[\"big:1048577\"]}",
        "{\"args\":[\"out\",\"65537\",\"65537\"]}",
        "{\"args\":[\"ls\",\"/\"]}",
    };
    for (size_t i = 0; i < sizeof inputs / sizeof inputs[0]; i++) {
        char *a = run(hi, inputs[i]), *b = run(hj, inputs[i]);
        if (strcmp(a, b) != 0) fail_msg("input %s:\n interp %s\n jit    %s", inputs[i], a, b);
        free(a);
        free(b);
    }
    pr_host_free(hi);
    pr_host_free(hj);
    pr_host_config cfg = {.cpu_ms = 100, .wall_ms = 120000, .engine = PW_ENGINE_JIT};
    pr_host *h = room_host_new(&cfg, &e);
    double t0 = cpu_now();
    char *got = run(h, "{\"args\":[\"loop\"]}");
    double used = cpu_now() - t0;
    assert_string_equal(got, "!隔离运行失败：CPU 时间超过 100 ms");
    assert_true(used >= 0.099 && used < 0.5);
    free(got);
    pr_host_free(h);
}

typedef struct chunks {
    char text[256];
    int writes[3];
} chunks;

static void on_out(void *ud, int stream, const char *t, size_t n) {
    chunks *c = ud;
    strncat(c->text, t, n);
    strcat(c->text, "|");
    c->writes[stream]++;
}

/* The lower-level API used by `peri run`: any args, host files, streamed output. */
static void test_exec_api(void **st) {
    pr_host *h = *st;
    FILE *f = fopen(ROOM_FIXTURES "/probe.wasm", "rb");
    assert_non_null(f);
    uint8_t *b = malloc(1 << 20);
    size_t n = fread(b, 1, 1 << 20, f);
    fclose(f);
    pr_error e;
    pr_program *p = pr_program_load(h, (pr_str){"", 0}, b, n, &e);
    assert_non_null(p);
    uint8_t d[32], want[32];
    pr_program_digest(p, d);
    pr__sha256(b, n, want);
    assert_memory_equal(d, want, 32);
    free(b);
    pr_fs *fs = pr_fs_new();
    assert_int_equal(pr_fs_write(fs, "/请求/路径.txt", strlen("/请求/路径.txt"), "\xff", 1), 0);
    pr_str args[1] = {{"echo", 4}};
    chunks c = {0};
    pr_exec_options opt = {.args = args, .nargs = 1, .fs = fs, .on_output = on_out, .ud = &c};
    pr_outcome oc;
    assert_true(pr_exec(h, p, &opt, &oc, &e));
    assert_true(oc.ok);
    assert_int_equal(oc.exit_code, 0);
    assert_string_equal(oc.stdout_text, "你好\n");
    assert_string_equal(c.text, "你好\n|");
    assert_int_equal(c.writes[PR_STDOUT], 1);
    pr_outcome_clear(&oc);
    /* The run wrote into the caller's FS; the raw byte survives (no UTF-8 check here). */
    size_t cur = 0, pl, l;
    const char *path;
    const uint8_t *data;
    bool found = false;
    while (pr_fs_next(fs, &cur, &path, &pl, &data, &l))
        if (pl == strlen("/数据/记录.txt") && memcmp(path, "/数据/记录.txt", pl) == 0)
            found = l == strlen("见：") + 2 && data[l - 2] == 0xff;
    assert_true(found);
    pr_fs_free(fs);
    pr_program_release(p);
}

/* pr_program_load_owned: the module keeps the caller's buffer (no copy); a program
 * already cached, or bytes that are not a module, free it (ASan: no leak, no reuse). */
static uint8_t *probe_bytes(size_t *n) {
    FILE *f = fopen(ROOM_FIXTURES "/probe.wasm", "rb");
    assert_non_null(f);
    uint8_t *b = malloc(1 << 20);
    assert_non_null(b);
    *n = fread(b, 1, 1 << 20, f);
    fclose(f);
    return b;
}

static void test_program_load_owned(void **st) {
    pr_host *h = *st;
    size_t n, n2;
    uint8_t *b = probe_bytes(&n), *copy = probe_bytes(&n2), want[32], d[32];
    assert_int_equal(n, n2);
    pr__sha256(copy, n, want);
    pr_error e;
    pr_program *p = pr_program_load_owned(h, (pr_str){"own", 3}, b, n, &e);
    assert_non_null(p);
    pr_program_digest(p, d);
    assert_memory_equal(d, want, 32);
    pr_str args[1] = {{"fail", 4}};
    pr_fs *fs = pr_fs_new();
    assert_non_null(fs);
    pr_exec_options opt = {.args = args, .nargs = 1, .fs = fs};
    pr_outcome oc;
    assert_true(pr_exec(h, p, &opt, &oc, &e));
    assert_int_equal(oc.exit_code, 3);
    pr_outcome_clear(&oc);
    pr_fs_free(fs);
    /* The same bytes again: the cached program, and this buffer is freed. */
    uint8_t *again = malloc(n);
    assert_non_null(again);
    memcpy(again, copy, n);
    pr_program *q = pr_program_load_owned(h, (pr_str){"own", 3}, again, n, &e);
    assert_ptr_equal(q, p);
    pr_program_release(q);
    /* Not a module (the magic broken, then cut short): refused, buffer freed. */
    uint8_t *bad = malloc(n);
    assert_non_null(bad);
    memcpy(bad, copy, n);
    bad[0] ^= 0xff;
    assert_null(pr_program_load_owned(h, (pr_str){"own", 3}, bad, n, &e));
    assert_string_equal(e.message, "隔离运行失败：动态 Worker 程序不是有效 Wasm");
    uint8_t *cut = malloc(n);
    assert_non_null(cut);
    memcpy(cut, copy, n);
    assert_null(pr_program_load_owned(h, (pr_str){"own", 3}, cut, n - 7, &e));
    assert_string_equal(e.message, "隔离运行失败：动态 Worker 程序不是有效 Wasm");
    free(copy);
    pr_program_release(p);
}

static void test_wall_limit(void **st) {
    (void)st;
    pr_host_config cfg = {.wall_ms = 50};
    pr_error e;
    pr_host *h = room_host_new(&cfg, &e);
    char *got = run(h, "{\"args\":[\"loop\"]}");
    assert_string_equal(got, "!隔离运行失败：运行时间超过 50 ms");
    free(got);
    expect(h, "{\"args\":[\"fail\"]}",
           "{\"ok\":false,\"stdout\":\"\",\"stderr\":\"\",\"exitCode\":3,\"files\":{}}");
    pr_host_free(h);
}

static double wall_now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* sleep() → poll_oneoff: real clocks really wait (no CPU), bounded by the wall limit;
 * deterministic clocks move forward at once. */
static void test_sleep(void **st) {
    (void)st;
    pr_error e;
    pr_host_config det = {0}; /* deterministic: the default */
    pr_host *h = room_host_new(&det, &e);
    double t0 = wall_now();
    expect(h, "{\"args\":[\"sleep\"]}",
           "{\"ok\":true,\"stdout\":\"slept>=2s=1\\n\",\"stderr\":\"\",\"exitCode\":0,"
           "\"files\":{}}");
    assert_true(wall_now() - t0 < 1.0);
    pr_host_free(h);
    pr_host_config real = {.real_clocks = true};
    h = room_host_new(&real, &e);
    t0 = wall_now();
    expect(h, "{\"args\":[\"sleep\"]}",
           "{\"ok\":true,\"stdout\":\"slept>=2s=1\\n\",\"stderr\":\"\",\"exitCode\":0,"
           "\"files\":{}}");
    assert_true(wall_now() - t0 >= 2.0);
    pr_host_free(h);
    pr_host_config shortwall = {.wall_ms = 300, .real_clocks = true};
    h = room_host_new(&shortwall, &e);
    t0 = wall_now();
    char *got = run(h, "{\"args\":[\"sleep\"]}");
    assert_string_equal(got, "!隔离运行失败：运行时间超过 300 ms");
    assert_true(wall_now() - t0 < 1.5);
    free(got);
    pr_host_free(h);
}

static void test_thousand_runs(void **st) {
    pr_host *h = *st;
    for (int i = 0; i < 1000; i++) {
        char *got = run4(h, "LOADER", "千", &hello, "{}", NULL);
        assert_string_equal(
            got,
            "{\"ok\":true,\"stdout\":\"hello\\n\",\"stderr\":\"\",\"exitCode\":0,\"files\":{}}");
        free(got);
    }
    for (int i = 0; i < 1000; i++) {
        char *got = run(h, "{\"args\":[\"trap\"]}");
        assert_non_null(strstr(got, "\"error\":\"unreachable\""));
        free(got);
        got = run(h, "{\"args\":[1]}");
        assert_string_equal(got, "!隔离运行输入无效：args 须为字符串数组");
        free(got);
    }
}

/* links exist only beyond the contract (peri run --file). A contract run of
 * the links probe (tests/wasi/fixtures/wasi_probe.wasm) gets ENOTSUP (58) from
 * path_symlink and path_link and EINVAL (28) from path_readlink, and paths are
 * normalised as the reference FS does: ".." stops at "/", an absolute path is taken
 * from "/" (both refused or walked only beyond the contract). */
static void test_no_links_in_contract(void **st) {
    prog wp;
    assert_true(load_prog(&wp, "../../wasi/fixtures/wasi_probe.wasm"));
    char *got = run4(*st, "LOADER", "测试", &wp, "{\"args\":[\"links\"]}", NULL);
    const char *want[] = {"\"ok\":true",
                          "link f h: errno 58\\n",
                          "symlink d/../f s: errno 58\\n",
                          "readlink f 255: errno 28 []\\n",
                          "link d dl: errno 58\\n",
                          "symlink /etc/passwd abs: errno 58\\n",
                          "stat f 0: type 4 size 5 nlink 1\\n",
                          "stat f/ 1: type 4 size 5 nlink 1\\n",
                          "read s: errno 44\\n"};
    for (size_t i = 0; i < sizeof want / sizeof *want; i++)
        if (!strstr(got, want[i])) fail_msg("%s not in %s", want[i], got);
    free(got);
    got = run4(*st, "LOADER", "测试", &wp, "{\"args\":[\"clamp\"]}", NULL);
    if (!strstr(got, "read ../../f: root\\nread /f: root\\nsymlink ../../../f up: errno 58"))
        fail_msg("clamp: %s", got);
    free(got);
    free(wp.b64);
}

int main(int argc, char **argv) {
    if (!room_engine_args(argc, argv)) return 2;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_program_a),
        cmocka_unit_test(test_program_failures),
        cmocka_unit_test(test_output_limit),
        cmocka_unit_test(test_output_files_limits),
        cmocka_unit_test(test_violations),
        cmocka_unit_test(test_wasm_and_binding),
        cmocka_unit_test(test_trap_texts),
        cmocka_unit_test(test_isolate_identity),
        cmocka_unit_test(test_room_environment),
        cmocka_unit_test(test_deterministic),
        cmocka_unit_test(test_cpu_limit),
        cmocka_unit_test(test_jit_engine),
        cmocka_unit_test(test_readdir_many),
        cmocka_unit_test(test_exec_api),
        cmocka_unit_test(test_program_load_owned),
        cmocka_unit_test(test_sleep),
        cmocka_unit_test(test_wall_limit),
        cmocka_unit_test(test_thousand_runs),
        cmocka_unit_test(test_no_links_in_contract),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
