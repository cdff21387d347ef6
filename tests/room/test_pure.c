/*
 * test_pure.c — unit tests of the room's engine-free parts: request checks (every
 * rule at and one past its bound, in the reference order), atob Base64, SHA-256,
 * JSON.stringify output, lenient/strict UTF-8, input parsing, path normalisation, the
 * in-memory file system, the isolate cache and result collection.
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

#define S(lit) ((pr_str){lit, sizeof(lit) - 1})

static pr_str dup_str(const char *s, size_t n) {
    return (pr_str){s, n};
}

static char *repeat(char c, size_t n) {
    char *p = malloc(n + 1);
    assert_non_null(p);
    memset(p, c, n);
    p[n] = 0;
    return p;
}

/* A valid request for the program bytes "\0asm\1\0\0\0" (an empty module). */
static const char EMPTY_B64[] = "AGFzbQEAAAA=";
static char empty_digest[65];

static pr_request base_req(void) {
    if (!empty_digest[0]) {
        uint8_t d[32];
        const uint8_t mod[8] = {0, 'a', 's', 'm', 1, 0, 0, 0};
        assert_true(pr__sha256(mod, 8, d));
        pr__hex(d, 32, empty_digest);
    }
    pr_request r = {S("LOADER"), S("站点:甲/乙 丙"), {empty_digest, 64}, S(EMPTY_B64), S("{}")};
    return r;
}

static void expect_shape(const pr_request *r, const char *msg) {
    pr_error e = {0};
    if (!msg) {
        assert_true(pr__check_shape(r, &e));
        return;
    }
    assert_false(pr__check_shape(r, &e));
    assert_int_equal(e.kind, PR_KIND_VIOLATION);
    assert_string_equal(e.message, msg);
}

static void test_runner_bounds(void **st) {
    (void)st;
    pr_request r = base_req();
    char *s = repeat('r', 129);
    r.runner = dup_str(s, 0);
    expect_shape(&r, "运行器名无效");
    r.runner = dup_str(s, 1);
    expect_shape(&r, NULL);
    r.runner = dup_str(s, 128);
    expect_shape(&r, NULL);
    r.runner = dup_str(s, 129);
    expect_shape(&r, "运行器名无效");
    r.runner = S("a\x01\x7f"); /* no control-character rule for runners */
    expect_shape(&r, NULL);
    free(s);
}

static void test_scope_bounds(void **st) {
    (void)st;
    pr_request r = base_req();
    char *s = repeat('s', 129);
    r.scope = dup_str(s, 0);
    expect_shape(&r, "隔离范围无效");
    r.scope = dup_str(s, 128);
    expect_shape(&r, NULL);
    r.scope = dup_str(s, 129);
    expect_shape(&r, "隔离范围无效");
    /* 43 CJK characters = 129 bytes fail, 42 pass. */
    char cjk[43 * 3 + 1];
    for (int i = 0; i < 43; i++)
        memcpy(cjk + 3 * i, "甲", 3);
    r.scope = dup_str(cjk, 129);
    expect_shape(&r, "隔离范围无效");
    r.scope = dup_str(cjk, 126);
    expect_shape(&r, NULL);
    for (int c = 0; c < 32; c++) {
        char b[3] = {'a', (char)c, 'b'};
        r.scope = dup_str(b, 3);
        expect_shape(&r, "隔离范围无效");
    }
    r.scope = S("a\x7f");
    expect_shape(&r, "隔离范围无效");
    r.scope = S("甲\x01乙");
    expect_shape(&r, "隔离范围无效");
    r.scope = S(" ~\x80"); /* 32, 126 and high bytes are fine */
    expect_shape(&r, NULL);
    free(s);
}

static void test_digest_rules(void **st) {
    (void)st;
    pr_request r = base_req();
    char d[66];
    memcpy(d, empty_digest, 64);
    d[64] = '0';
    r.digest = dup_str(d, 65);
    expect_shape(&r, "产物摘要无效");
    r.digest = dup_str(d, 63);
    expect_shape(&r, "产物摘要无效");
    r.digest = S("");
    expect_shape(&r, "产物摘要无效");
    for (int i = 0; i < 64; i++)
        d[i] = "0123456789abcdef"[i % 16];
    r.digest = dup_str(d, 64);
    expect_shape(&r, NULL);
    d[10] = 'A';
    expect_shape(&r, "产物摘要无效");
    d[10] = 'g';
    expect_shape(&r, "产物摘要无效");
}

static void test_program_and_input_bounds(void **st) {
    (void)st;
    pr_request r = base_req();
    r.program = S("");
    expect_shape(&r, "运行产物无效");
    char *p = repeat('A', PR_PROGRAM_TEXT_MAX + 1);
    r.program = dup_str(p, PR_PROGRAM_TEXT_MAX);
    expect_shape(&r, NULL);
    r.program = dup_str(p, PR_PROGRAM_TEXT_MAX + 1);
    expect_shape(&r, "运行产物无效");
    r.program = S(EMPTY_B64);
    char *in = repeat(' ', PR_INPUT_MAX + 1);
    r.input = dup_str(in, PR_INPUT_MAX);
    expect_shape(&r, NULL);
    r.input = dup_str(in, PR_INPUT_MAX + 1);
    expect_shape(&r, "运行输入超过上限");
    free(p);
    free(in);
}

static void test_order(void **st) {
    (void)st;
    /* Each request breaks this rule and every later one: the first rule reports. */
    char *in = repeat(' ', PR_INPUT_MAX + 1);
    pr_request r = {S(""), S(""), S("X"), S(""), {in, PR_INPUT_MAX + 1}};
    expect_shape(&r, "运行器名无效");
    r.runner = S("LOADER");
    expect_shape(&r, "隔离范围无效");
    r.scope = S("s");
    expect_shape(&r, "产物摘要无效");
    r.digest = dup_str(empty_digest, 64);
    expect_shape(&r, "运行产物无效");
    r.program = S("@@@@");
    expect_shape(&r, "运行输入超过上限");
    r.input = S("不是JSON");
    expect_shape(&r, NULL);
    pr_error e;
    uint8_t *b = NULL;
    size_t n;
    assert_false(pr__check_program(&r, &b, &n, &e));
    assert_string_equal(e.message, "运行产物无效：不是有效的 Base64");
    r.program = S(" \t\n\f\r "); /* whitespace only decodes to nothing */
    assert_false(pr__check_program(&r, &b, &n, &e));
    assert_string_equal(e.message, "运行产物无效");
    r.program = S("AGFzbQEAAAB="); /* leftover bits ignored: the same 8 bytes */
    assert_true(pr__check_program(&r, &b, &n, &e));
    free(b);
    r.program = S("AGFzbQEAAAE=");
    assert_false(pr__check_program(&r, &b, &n, &e));
    assert_int_equal(e.kind, PR_KIND_VIOLATION);
    assert_string_equal(e.message, "运行产物摘要不匹配");
    r.program = S("\r\n  AGFz\r\nbQEA AAA"); /* CRLF, leading spaces, no padding */
    bool ok = pr__check_program(&r, &b, &n, &e);
    if (!ok) fail_msg("%s", e.message);
    assert_int_equal(n, 8);
    free(b);
    free(in);
}

static int b64(const char *s, char *out, size_t *n) {
    uint8_t *b = NULL;
    int rc = pr__base64_decode(s, strlen(s), 100, &b, n);
    if (rc == 0) {
        memcpy(out, b, *n);
        free(b);
    }
    return rc;
}

/* The encoder: known vectors, and decode(encode(x)) == x for every length 1..300. */
static void test_base64_encode(void **st) {
    (void)st;
    size_t n;
    char *t = pr__base64_encode((const uint8_t *)"foob", 4, &n);
    assert_non_null(t);
    assert_string_equal(t, "Zm9vYg==");
    assert_int_equal(n, 8);
    free(t);
    t = pr__base64_encode((const uint8_t *)"", 0, &n);
    assert_non_null(t);
    assert_string_equal(t, "");
    free(t);
    uint8_t src[300];
    for (size_t i = 0; i < sizeof src; i++)
        src[i] = (uint8_t)(i * 37 + 11);
    for (size_t len = 1; len <= sizeof src; len++) {
        t = pr__base64_encode(src, len, &n);
        assert_non_null(t);
        assert_int_equal(n, (len + 2) / 3 * 4);
        uint8_t *b;
        size_t bl;
        assert_int_equal(pr__base64_decode(t, n, len, &b, &bl), 0);
        assert_int_equal(bl, len);
        assert_memory_equal(b, src, len);
        free(b);
        free(t);
    }
}

static void test_base64_atob(void **st) {
    (void)st;
    char o[128];
    size_t n;
    assert_int_equal(b64("aGk=", o, &n), 0);
    assert_int_equal(n, 2);
    assert_memory_equal(o, "hi", 2);
    assert_int_equal(b64("aGk", o, &n), 0);
    assert_int_equal(n, 2);
    assert_int_equal(b64("aGl=", o, &n), 0); /* non-zero leftover bits are ignored */
    assert_int_equal(b64("YQ==", o, &n), 0);
    assert_int_equal(n, 1);
    assert_int_equal(b64("YQ", o, &n), 0);
    assert_int_equal(b64("Y Q = =", o, &n), 0);
    assert_int_equal(b64("YQ=", o, &n), -1);
    assert_int_equal(b64("Y===", o, &n), -1);
    assert_int_equal(b64("A", o, &n), -1);
    assert_int_equal(b64("AAAAA", o, &n), -1);
    assert_int_equal(b64("@@@@", o, &n), -1);
    assert_int_equal(b64("YQ==YQ==", o, &n), -1);
    assert_int_equal(b64("aG\vk=", o, &n), -1); /* VT is not atob whitespace */
    assert_int_equal(b64("a-_k", o, &n), -1);   /* no URL alphabet */
    assert_int_equal(b64("", o, &n), -2);
    assert_int_equal(b64("====", o, &n), -1);
    assert_int_equal(b64("+/+/", o, &n), 0);
    assert_int_equal(n, 3);
    assert_memory_equal(o, "\xfb\xff\xbf", 3);
    /* Decoded length bound: exactly max passes, one more fails. */
    uint8_t *b = NULL;
    assert_int_equal(pr__base64_decode("AAAA", 4, 3, &b, &n), 0);
    free(b);
    assert_int_equal(pr__base64_decode("AAAAAA", 6, 3, &b, &n), -2);
}

static void test_decoded_length_bound(void **st) {
    (void)st;
    /* 3,145,728 decoded bytes pass the length rule (then fail the digest); one more
     * byte is 运行产物无效. */
    size_t ok_len = PR_PROGRAM_MAX / 3 * 4;
    char *t = repeat('A', ok_len + 4);
    pr_request r = base_req();
    r.program = dup_str(t, ok_len);
    pr_error e;
    uint8_t *b = NULL;
    size_t n;
    assert_false(pr__check_program(&r, &b, &n, &e));
    assert_string_equal(e.message, "运行产物摘要不匹配");
    r.program = dup_str(t, ok_len + 2); /* one more byte */
    assert_false(pr__check_program(&r, &b, &n, &e));
    assert_string_equal(e.message, "运行产物无效");
    free(t);
}

static void test_sha256(void **st) {
    (void)st;
    uint8_t d[32];
    char hex[65];
    assert_true(pr__sha256("abc", 3, d));
    pr__hex(d, 32, hex);
    assert_string_equal(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

static void json_is(const char *in, size_t n, const char *want) {
    pb_buf b = {0};
    assert_true(pr__json_str(&b, in, n));
    assert_string_equal(b.p, want);
    pb_buf_free(&b);
}

static void test_json_stringify(void **st) {
    (void)st;
    json_is("a\"b\\c/d", 7, "\"a\\\"b\\\\c/d\"");
    json_is("\b\t\n\f\r", 5, "\"\\b\\t\\n\\f\\r\"");
    json_is("\x00\x01\x1f\x7f", 4, "\"\\u0000\\u0001\\u001f\x7f\"");
    json_is("\x0b", 1, "\"\\u000b\"");
    json_is("你好😀", strlen("你好😀"), "\"你好😀\"");
    json_is("", 0, "\"\"");
}

static void lenient_is(const char *in, size_t n, const char *want) {
    pb_buf b = {0};
    assert_true(pr__utf8_lenient(&b, (const uint8_t *)in, n));
    assert_non_null(b.p);
    assert_int_equal(b.len, strlen(want));
    assert_memory_equal(b.p, want, b.len);
    pb_buf_free(&b);
}

#define FFFD "\xEF\xBF\xBD"
static void test_utf8(void **st) {
    (void)st;
    lenient_is("abc", 3, "abc");
    lenient_is("\xEF\xBB\xBF"
               "a",
               4, "a");                              /* BOM dropped */
    lenient_is("a\xEF\xBB\xBF", 4, "a\xEF\xBB\xBF"); /* only a leading one */
    lenient_is("\xE4\xBD", 2, FFFD);                 /* truncated sequence */
    lenient_is("\xE4\xBD"
               "a",
               3, FFFD "a");
    lenient_is("\xC0\x80", 2, FFFD FFFD);                   /* overlong */
    lenient_is("\xED\xA0\x80", 3, FFFD FFFD FFFD);          /* surrogate */
    lenient_is("\xF0\x9F\x98", 3, FFFD);                    /* maximal subpart */
    lenient_is("\xF4\x90\x80\x80", 4, FFFD FFFD FFFD FFFD); /* > U+10FFFF */
    lenient_is("\xFF", 1, FFFD);
    lenient_is("\x80\x80", 2, FFFD FFFD);
    assert_true(pr__utf8_valid((const uint8_t *)"你好", 6));
    assert_false(pr__utf8_valid((const uint8_t *)"\xE4\xBD", 2));
    assert_false(pr__utf8_valid((const uint8_t *)"\xED\xA0\x80", 3));
    assert_true(pr__utf8_valid((const uint8_t *)"\xF0\x9F\x98\x80", 4));
    assert_int_equal(pr__utf8_cut_utf16("ab😀c", 7, 4), 6);
    assert_int_equal(pr__utf8_cut_utf16("ab😀c", 7, 3), 2);
    assert_int_equal(pr__utf8_cut_utf16("ab😀c", 7, 2), 2);
    assert_int_equal(pr__utf8_cut_utf16("你好", 6, 1), 3);
}

static void norm_is(const char *in, const char *want) {
    char out[256];
    size_t n = pr__path_normalize(in, strlen(in), out);
    assert_int_equal(n, strlen(want));
    assert_string_equal(out, want);
}

static void test_path_normalize(void **st) {
    (void)st;
    norm_is("", "/");
    norm_is("/", "/");
    norm_is("a", "/a");
    norm_is("a/b/../c", "/a/c");
    norm_is("../../x", "/x");
    norm_is("//a//./b/", "/a/b");
    norm_is("/a/..", "/");
    norm_is("/数据/../数据/旧.txt", "/数据/旧.txt");
    norm_is("...", "/...");
}

static void input_err(const char *text, const char *msg) {
    pr_input in;
    pr_error e = {0};
    assert_false(pr__input_parse(text, strlen(text), &in, &e));
    assert_int_equal(e.kind, PR_KIND_VIOLATION);
    assert_string_equal(e.message, msg);
}

static void test_input(void **st) {
    (void)st;
    const char *J = "隔离运行输入无效：输入不是有效 JSON";
    const char *A = "隔离运行输入无效：args 须为字符串数组";
    const char *F = "隔离运行输入无效：files 须为路径到文字的对象";
    input_err("不是JSON", J);
    input_err("", J);
    input_err("{", J);
    input_err("{} x", J);
    input_err("{\"a\":01}", J);
    input_err("{\"a\":\"\x01\"}", J);
    input_err("{'a':1}", J);
    input_err("{\"args\":[1]}", A);
    input_err("{\"args\":\"x\"}", A);
    input_err("{\"args\":{}}", A);
    input_err("{\"args\":false}", A);
    input_err("{\"files\":{\"/a\":1}}", F);
    input_err("{\"files\":[]}", F);
    input_err("{\"files\":\"\"}", F);
    input_err("{\"files\":0}", F);
    input_err("{\"args\":[1],\"files\":1}", A); /* args is checked first */
    input_err("{\"files\":{\"/a\":1},\"args\":[1]}", A);
    input_err("{\"args\":[1], oops}", J); /* any JSON error wins */

    pr_input in;
    pr_error e;
    const char *ok =
        "\xEF\xBB\xBF {\"args\":[\"echo\",\"\\u4f60\\ud83d\\ude00\\ud800\"],\"x\":[1,{\"y\":null}],"
        "\"files\":{\"b\":\"1\",\"7\":\"7\",\"a\":\"2\",\"b\":\"3\",\"0\":\"0\",\"01\":\"x\"}} ";
    assert_true(pr__input_parse(ok, strlen(ok), &in, &e));
    assert_int_equal(in.nargs, 2);
    assert_memory_equal(in.args[0].ptr, "echo", 4);
    assert_int_equal(in.args[1].len, strlen("你😀" FFFD));
    assert_memory_equal(in.args[1].ptr, "你😀" FFFD, in.args[1].len);
    /* JS own-key order: array indices ascending first, then insertion order; a
     * repeated key keeps its first position and takes the last value. */
    assert_int_equal(in.nfiles, 5);
    const char *want_k[] = {"0", "7", "b", "a", "01"}, *want_v[] = {"0", "7", "3", "2", "x"};
    for (int i = 0; i < 5; i++) {
        assert_int_equal(in.paths[i].len, strlen(want_k[i]));
        assert_memory_equal(in.paths[i].ptr, want_k[i], in.paths[i].len);
        assert_memory_equal(in.texts[i].ptr, want_v[i], in.texts[i].len);
    }
    pr__input_free(&in);
    /* null, missing and non-object top levels mean "no args, no files". */
    const char *empties[] = {
        "null", "[]", "5", "\"s\"", "{\"args\":null,\"files\":null}", "{}", "{\"\\u0061rgs\":[]}",
        "true"};
    for (size_t i = 0; i < sizeof empties / sizeof *empties; i++) {
        assert_true(pr__input_parse(empties[i], strlen(empties[i]), &in, &e));
        assert_int_equal(in.nargs, 0);
        assert_int_equal(in.nfiles, 0);
        pr__input_free(&in);
    }
    input_err("{\"\\u0061rgs\":[1]}", A);
    /* A repeated key: JSON.parse keeps the last value, so an early non-string is fine
     * and a late one is not. */
    const char *dup = "{\"files\":{\"a\":1,\"a\":\"2\"}}";
    assert_true(pr__input_parse(dup, strlen(dup), &in, &e));
    assert_int_equal(in.nfiles, 1);
    assert_memory_equal(in.texts[0].ptr, "2", 1);
    pr__input_free(&in);
    input_err("{\"files\":{\"a\":\"1\",\"a\":[]}}", F);
    /* Escapes, quotes and control characters at every offset of the 8-byte scan. */
    for (int pos = 0; pos < 20; pos++) {
        char text[128], want[64];
        int k = snprintf(text, sizeof text, "{\"args\":[\"%.*s\\n\\\"%s\"]}", pos,
                         "abcdefghijklmnopqrstuvwxyz", "éxyz0123456789");
        assert_true(k > 0);
        assert_true(pr__input_parse(text, (size_t)k, &in, &e));
        int w = snprintf(want, sizeof want, "%.*s\n\"%s", pos, "abcdefghijklmnopqrstuvwxyz",
                         "éxyz0123456789");
        assert_int_equal(in.nargs, 1);
        assert_int_equal(in.args[0].len, (size_t)w);
        assert_memory_equal(in.args[0].ptr, want, (size_t)w);
        pr__input_free(&in);
        k = snprintf(text, sizeof text, "{\"args\":[\"%.*s\x01zzzzzzzzzz\"]}", pos,
                     "abcdefghijklmnopqrstuvwxyz");
        input_err(text, J);
    }
    /* Any nesting depth, as JSON.parse (no recursion in the parser). */
    size_t deep = 500000;
    char *nest = malloc(8 * deep + 64);
    size_t k = 0;
    k += (size_t)sprintf(nest, "{\"x\":");
    for (size_t i = 0; i < deep; i++)
        nest[k++] = i % 2 ? '[' : '{', k += i % 2 ? 0 : (size_t)sprintf(nest + k, "\"k\":");
    for (size_t i = deep; i-- > 0;)
        nest[k++] = i % 2 ? ']' : '}';
    k += (size_t)sprintf(nest + k, ",\"args\":[\"a\"]}");
    assert_true(pr__input_parse(nest, k, &in, &e));
    assert_int_equal(in.nargs, 1);
    pr__input_free(&in);
    nest[k - 3] = ','; /* break the end: invalid JSON */
    assert_false(pr__input_parse(nest, k, &in, &e));
    assert_string_equal(e.message, J);
    free(nest);
    const char *big = "{\"n\":-12345678901234567890123.5e+400,\"s\":\"\\u0000\"}";
    assert_true(pr__input_parse(big, strlen(big), &in, &e));
    pr__input_free(&in);
}

static void test_fs(void **st) {
    (void)st;
    pr_fs *fs = pr_fs_new();
    assert_non_null(fs);
    assert_int_equal(pr_fs_write(fs, "b/x", 3, "1", 1), 0);
    assert_int_equal(pr_fs_write(fs, "/a", 2, "22", 2), 0);
    assert_int_equal(pr_fs_write(fs, "/b/./x", 6, "333", 3), 0); /* rewrite keeps place */
    pr_file *f = pr__fs_find(fs, "/b/x", 4);
    assert_non_null(f);
    assert_int_equal(f->node->len, 3);
    assert_int_equal(f->node->mtime, 4); /* clock starts at 1; three writes */
    /* a write of zero bytes past the end changes nothing (a guest's pwrite(fd, "", 0,
     * 1000) or write after a seek past the end) */
    assert_int_equal(pr__fs_pwrite(fs, f->node, "", 0, 1000), 0);
    assert_int_equal(f->node->len, 3);
    assert_int_equal(f->node->mtime, 4);
    assert_true(pr__fs_is_dir(fs, "/b", 2));
    assert_true(pr__fs_is_dir(fs, "/", 1));
    assert_false(pr__fs_is_dir(fs, "/a", 2));
    assert_false(pr__fs_is_dir(fs, "/c", 2));
    pr__fs_remove(fs, pr__fs_find(fs, "/a", 2));
    assert_null(pr__fs_find(fs, "/a", 2));
    assert_int_equal(pr_fs_write(fs, "/c", 2, "", 0), 0);
    assert_int_equal(pr_fs_write(fs, "/a", 2, "4", 1), 0); /* recreated: moves to the end */
    size_t cur = 0, pl, l;
    const char *p;
    const uint8_t *d;
    const char *order[] = {"/b/x", "/c", "/a"};
    for (int i = 0; i < 3; i++) {
        assert_true(pr_fs_next(fs, &cur, &p, &pl, &d, &l));
        assert_int_equal(pl, strlen(order[i]));
        assert_memory_equal(p, order[i], pl);
    }
    assert_false(pr_fs_next(fs, &cur, &p, &pl, &d, &l));
    assert_int_equal(fs->total, 4);
    /* Many files: the hash table grows and compacts dead entries. */
    char name[32];
    for (int i = 0; i < 2000; i++) {
        int k = snprintf(name, sizeof name, "/d/%d", i);
        assert_int_equal(pr_fs_write(fs, name, (size_t)k, "z", 1), 0);
        if (i % 2) pr__fs_remove(fs, pr__fs_find(fs, name, (size_t)k));
    }
    assert_non_null(pr__fs_find(fs, "/d/1998", 7));
    assert_null(pr__fs_find(fs, "/d/1999", 7));
    assert_int_equal(fs->total, 4 + 1000);
    pr_fs_free(fs);
}

static void test_fs_cap(void **st) {
    (void)st;
    pr_fs *fs = pr_fs_new();
    size_t half = PR_FS_MAX / 2;
    char *big = calloc(1, half + 1);
    assert_non_null(big);
    assert_int_equal(pr_fs_write(fs, "/a", 2, big, half), 0);
    assert_int_equal(pr_fs_write(fs, "/b", 2, big, half), 0); /* exactly 128 MiB */
    assert_int_equal(pr_fs_write(fs, "/c", 2, big, 1), -2);
    assert_int_equal(pr_fs_write(fs, "/b", 2, big, half + 1), -2);
    assert_int_equal(pr_fs_write(fs, "/b", 2, big, 10), 0); /* rewrite frees space */
    assert_int_equal(pr_fs_write(fs, "/c", 2, big, 100), 0);
    free(big);
    pr_fs_free(fs);
}

/* an unlinked file that a descriptor still holds keeps its bytes counted, so
 * unlinking open files and writing new ones cannot grow host memory past the budget.
 * Variants: the held file is grown after the unlink; several files are held at once;
 * the bytes come back at the last close (pr__fs_node_close). */
static void test_fs_unlinked_open_counts(void **st) {
    (void)st;
    pr_fs *fs = pr_fs_new();
    size_t half = PR_FS_MAX / 2;
    char *big = calloc(1, half + 1);
    assert_non_null(big);
    assert_int_equal(pr_fs_write(fs, "/a", 2, big, half), 0);
    pr_node *a = pr__fs_find(fs, "/a", 2)->node;
    pr__fs_node_open(a); /* as an open WASI descriptor */
    pr__fs_remove(fs, pr__fs_find(fs, "/a", 2));
    assert_int_equal(pr_fs_write(fs, "/b", 2, big, half), 0);
    pr_node *b = pr__fs_find(fs, "/b", 2)->node;
    pr__fs_node_open(b);
    pr__fs_remove(fs, pr__fs_find(fs, "/b", 2));
    assert_int_equal(a->nlink, 0);
    /* Both halves are still held: nothing more fits, live or through the dead files. */
    assert_int_equal(pr_fs_write(fs, "/c", 2, big, 1), -2);
    assert_int_equal(pr__fs_pwrite(fs, a, "x", 1, half), -2);
    assert_int_equal(pr__fs_truncate(fs, b, half + 1), -2);
    /* Shrinking a held file gives its bytes back at once. */
    assert_int_equal(pr__fs_truncate(fs, b, 0), 0);
    assert_int_equal(pr_fs_write(fs, "/c", 2, big, half), 0);
    /* The last close of the other one frees its half. */
    pr__fs_node_close(fs, a);
    assert_int_equal(pr_fs_write(fs, "/d", 2, big, half), 0);
    assert_int_equal(pr_fs_write(fs, "/e", 2, big, 1), -2);
    pr__fs_node_close(fs, b);
    free(big);
    pr_fs_free(fs);
}

/* the inode layer under the names. Hard links share one node, whose bytes
 * count once in the budget and which goes with its last name; a node unlinked while
 * open stays counted until its last close; symbolic links are nodes too. */
static void test_fs_nodes(void **st) {
    (void)st;
    pr_fs *fs = pr_fs_new();
    size_t half = PR_FS_MAX / 2;
    char *big = calloc(1, half + 1);
    assert_non_null(big);
    assert_int_equal(pr_fs_write(fs, "/a", 2, big, half), 0);
    pr_node *nd = pr__fs_find(fs, "/a", 2)->node;
    assert_int_equal(nd->nlink, 1);
    /* 1000 links: the half counts once, and the other half still fits. */
    char name[32];
    for (int i = 0; i < 1000; i++) {
        int k = snprintf(name, sizeof name, "/l/%d", i);
        assert_non_null(pr__fs_link(fs, name, (size_t)k, nd));
    }
    assert_int_equal(nd->nlink, 1001);
    assert_int_equal(fs->total, half);
    assert_int_equal(pr_fs_write(fs, "/b", 2, big, half), 0);
    assert_int_equal(pr_fs_write(fs, "/c", 2, big, 1), -2);
    /* A write through one name is seen through every other (one node). */
    assert_int_equal(pr_fs_write(fs, "/l/7", 4, "shared", 6), 0);
    assert_int_equal(pr__fs_find(fs, "/a", 2)->node->len, 6);
    assert_memory_equal(pr__fs_find(fs, "/l/999", 6)->node->data, "shared", 6);
    assert_int_equal(fs->total, half + 6);
    /* Removing names keeps the node until the last one; an open node stays counted
     * after its last name until its last close. */
    pr__fs_node_open(nd);
    pr__fs_remove(fs, pr__fs_find(fs, "/a", 2));
    for (int i = 0; i < 1000; i++) {
        int k = snprintf(name, sizeof name, "/l/%d", i);
        pr__fs_remove(fs, pr__fs_find(fs, name, (size_t)k));
    }
    assert_int_equal(nd->nlink, 0);
    assert_int_equal(pr__fs_pwrite(fs, nd, big, half - 6, 6), 0); /* grows while unlinked */
    assert_int_equal(fs->total, 2 * half);
    assert_int_equal(pr_fs_write(fs, "/c", 2, big, 1), -2);
    pr__fs_node_close(fs, nd); /* freed: its half comes back */
    assert_int_equal(fs->total, half);
    assert_int_equal(pr_fs_write(fs, "/c", 2, big, half), 0);
    /* A symbolic link is a node of its own (its target counts as contents), never an
     * output file, and writing its name replaces it with a file. */
    pr__fs_remove(fs, pr__fs_find(fs, "/c", 2));
    size_t before = fs->total;
    pr_file *s = pr__fs_symlink(fs, "/s", 2, "b", 1);
    assert_non_null(s);
    assert_true(pr_file_is_link(s));
    assert_int_equal(fs->total, before + 1);
    size_t cur = 0, pl, l;
    const char *p;
    const uint8_t *d;
    int nfiles = 0;
    while (pr_fs_next(fs, &cur, &p, &pl, &d, &l))
        nfiles++;
    assert_int_equal(nfiles, 1); /* /b only */
    assert_int_equal(pr_fs_write(fs, "/s", 2, "x", 1), 0);
    assert_false(pr_file_is_link(pr__fs_find(fs, "/s", 2)));
    assert_int_equal(fs->total, before + 1);
    /* Churn of links and names does not grow the entries' budget. */
    size_t meta = fs->meta;
    pr_node *b = pr__fs_find(fs, "/b", 2)->node;
    for (int i = 0; i < 100000; i++) {
        assert_non_null(pr__fs_link(fs, "/churn", 6, b));
        pr__fs_remove(fs, pr__fs_find(fs, "/churn", 6));
    }
    assert_true(fs->meta < meta + 64 * 1024);
    assert_int_equal(b->nlink, 1);
    free(big);
    pr_fs_free(fs);
}

/* Entries have their own 128 MiB budget (paths count), and removed entries are
 * reclaimed, so neither long names nor create/unlink churn grow host memory. */
static void test_fs_entries_budget(void **st) {
    (void)st;
    pr_fs *fs = pr_fs_new();
    size_t plen = 1 << 20;
    char *p = repeat('p', plen);
    p[0] = '/';
    int made = 0, rc = 0;
    for (int i = 0; i < 200 && rc == 0; i++) {
        p[1] = (char)('A' + i % 26), p[2] = (char)('A' + i / 26);
        rc = pr_fs_write(fs, p, plen, "", 0);
        made += rc == 0;
    }
    assert_int_equal(rc, -2);
    assert_true(made >= 120 && made < 128);
    assert_true(fs->meta <= PR_FS_MAX);
    /* Removing entries gives the budget back. */
    size_t cur = 0, pl, l;
    const char *path;
    const uint8_t *d;
    while (pr_fs_next(fs, &cur, &path, &pl, &d, &l))
        pr__fs_remove(fs, pr__fs_find(fs, path, pl));
    assert_int_equal(pr_fs_write(fs, p, plen, "x", 1), 0);
    pr_fs_free(fs);
    free(p);
    fs = pr_fs_new();
    for (int i = 0; i < 100000; i++) {
        assert_int_equal(pr_fs_write(fs, "/churn", 6, "x", 1), 0);
        pr__fs_remove(fs, pr__fs_find(fs, "/churn", 6));
    }
    assert_true(fs->meta < 64 * 1024); /* dead entries were freed, not kept */
    assert_int_equal(fs->total, 0);
    pr_fs_free(fs);
}

static bool collect_child(void *ud, const char *name, size_t n, bool is_dir) {
    pb_buf *b = ud;
    return pb_buf_put(b, name, n) && pb_buf_putc(b, is_dir ? 'D' : 'F') && pb_buf_putc(b, ',');
}

static void test_fs_children(void **st) {
    (void)st;
    pr_fs *fs = pr_fs_new();
    pr_fs_write(fs, "/x/b", 4, "", 0);
    pr_fs_write(fs, "/x/a/1", 6, "", 0);
    pr_fs_write(fs, "/x/b2", 5, "", 0);
    pr_fs_write(fs, "/x/a/2", 6, "", 0);
    pr_fs_write(fs, "/xy", 3, "", 0);
    pb_buf b = {0};
    assert_true(pr__fs_children(fs, "/x", 2, collect_child, &b));
    assert_string_equal(b.p, "bF,aD,b2F,");
    b.len = 0;
    assert_true(pr__fs_children(fs, "/", 1, collect_child, &b));
    assert_string_equal(b.p, "xD,xyF,");
    /* Many entries: still each name once, in first-write order. */
    char name[64];
    for (int i = 0; i < 3000; i++) {
        int k = snprintf(name, sizeof name, "/m/%d/%s", i % 1000, i < 1000 ? "a" : "b");
        pr_fs_write(fs, name, (size_t)k, "", 0);
    }
    b.len = 0;
    assert_true(pr__fs_children(fs, "/m", 2, collect_child, &b));
    size_t commas = 0;
    for (size_t i = 0; i < b.len; i++)
        commas += b.p[i] == ',';
    assert_int_equal(commas, 1000);
    assert_memory_equal(b.p, "0D,1D,2D,", 9);
    pb_buf_free(&b);
    pr_fs_free(fs);
}

static pr_program *mkprog(const char *key, size_t bytes) {
    pr_program *p = calloc(1, sizeof *p);
    p->key = strdup(key);
    p->key_len = strlen(key);
    p->bytes = bytes;
    atomic_init(&p->refs, 1);
    return p;
}

static void test_cache(void **st) {
    (void)st;
    pr_cache c;
    assert_true(pr__cache_init(&c, 100));
    assert_null(pr__cache_get(&c, "s:a", 3));
    pr_program *a = pr__cache_put(&c, mkprog("s:a", 40));
    pr_program *b = pr__cache_put(&c, mkprog("s:b", 40));
    pr_program *a2 = pr__cache_get(&c, "s:a", 3);
    assert_ptr_equal(a, a2);
    pr_program_release(a2);
    /* c pushes the total over 100: the least recently used (b) goes. */
    pr_program *cc = pr__cache_put(&c, mkprog("s:c", 40));
    assert_null(pr__cache_get(&c, "s:b", 3));
    pr_program *a3 = pr__cache_get(&c, "s:a", 3);
    assert_non_null(a3);
    pr_program_release(a3);
    /* The evicted program stays alive for its holder. */
    assert_int_equal(atomic_load(&b->refs), 1);
    pr_program_release(b);
    /* A second put of a cached key returns the cached program. */
    pr_program *dup = pr__cache_put(&c, mkprog("s:a", 40));
    assert_ptr_equal(dup, a);
    pr_program_release(dup);
    /* Different scopes are different keys. */
    assert_null(pr__cache_get(&c, "t:a", 3));
    assert_int_equal(c.st.entries, 2);
    assert_int_equal(c.st.evictions, 1);
    /* Too big for the cache: returned uncached. */
    pr_program *huge = pr__cache_put(&c, mkprog("s:h", 1000));
    assert_false(huge->in_cache);
    pr_program_release(huge);
    pr_program_release(a);
    pr_program_release(cc);
    pr__cache_destroy(&c);
}

static void test_result_json(void **st) {
    (void)st;
    pr_fs *fs = pr_fs_new();
    pr_fs_write(fs, "/请求/路径.txt", strlen("/请求/路径.txt"), "/x", 2);
    pr_fs_write(fs, "/数据/旧.txt", strlen("/数据/旧.txt"), "旧", 3);
    pr_fs_write(fs, "/其他/密.txt", strlen("/其他/密.txt"), "x", 1);
    pr_fs_write(fs, "/响应/正文.txt", strlen("/响应/正文.txt"), "\xEF\xBB\xBF\"b\"\n", 7);
    pr_fs_write(fs, "/数据x/y", strlen("/数据x/y"), "x", 1);
    pr_outcome o = {.ok = false,
                    .exit_code = 1,
                    .stdout_text = "你好\n",
                    .stdout_len = 7,
                    .stderr_text = "",
                    .stderr_len = 0,
                    .error = "输出超过 64 KB"};
    pb_buf b = {0};
    pr_error e;
    assert_true(pr__result_json(&o, fs, &b, &e));
    assert_string_equal(b.p, "{\"ok\":false,\"stdout\":\"你好\\n\",\"stderr\":\"\",\"exitCode\":1,"
                             "\"error\":\"输出超过 64 KB\",\"files\":{\"/数据/旧.txt\":\"旧\","
                             "\"/响应/正文.txt\":\"\\\"b\\\"\\n\"}}");
    pb_buf_free(&b);
    o.ok = true;
    o.exit_code = 0;
    o.error = NULL;
    pr_fs_write(fs, "/响应/坏.txt", strlen("/响应/坏.txt"), "\xff", 1);
    assert_false(pr__result_json(&o, fs, &b, &e));
    assert_int_equal(e.kind, PR_KIND_INTERFACE);
    assert_string_equal(e.message, "隔离运行失败：500：输出文件不是有效 UTF-8：/响应/坏.txt");
    pb_buf_free(&b);
    pr_fs_free(fs);
}

static void test_result_limits(void **st) {
    (void)st;
    pr_outcome o = {.ok = true, .stdout_text = "", .stderr_text = ""};
    char name[64];
    for (int total = 256; total <= 257; total++) {
        pr_fs *fs = pr_fs_new();
        for (int i = 0; i < total; i++) {
            int k = snprintf(name, sizeof name, "/数据/%d.txt", i);
            pr_fs_write(fs, name, (size_t)k, "a", 1);
        }
        pr_fs_write(fs, "/其他", strlen("/其他"), "a", 1);
        pb_buf b = {0};
        pr_error e;
        bool ok = pr__result_json(&o, fs, &b, &e);
        assert_int_equal(ok, total == 256);
        if (!ok) assert_string_equal(e.message, "隔离运行失败：500：运行数据超过上限");
        pb_buf_free(&b);
        pr_fs_free(fs);
    }
    char *big = repeat('x', PR_FILES_BYTES_MAX + 1);
    for (size_t len = PR_FILES_BYTES_MAX; len <= PR_FILES_BYTES_MAX + 1; len++) {
        pr_fs *fs = pr_fs_new();
        pr_fs_write(fs, "/数据/大.txt", strlen("/数据/大.txt"), big, len);
        pr_fs_write(fs, "/请求/大.txt", strlen("/请求/大.txt"), big, len); /* not counted */
        pb_buf b = {0};
        pr_error e;
        bool ok = pr__result_json(&o, fs, &b, &e);
        assert_int_equal(ok, len == PR_FILES_BYTES_MAX);
        if (!ok) assert_string_equal(e.message, "隔离运行失败：500：运行数据超过上限");
        pb_buf_free(&b);
        pr_fs_free(fs);
    }
    free(big);
    /* A long bad path: the body is cut to 300 characters. */
    pr_fs *fs = pr_fs_new();
    char *lp = repeat('p', 400);
    memcpy(lp, "/数据/", strlen("/数据/"));
    pr_fs_write(fs, lp, 400, "\xff", 1);
    pb_buf b = {0};
    pr_error e;
    assert_false(pr__result_json(&o, fs, &b, &e));
    const char *pre = "隔离运行失败：500：";
    /* 15 characters of text, 4 of "/数据/", then 281 of the path's "p"s. */
    assert_int_equal(strlen(e.message) - strlen(pre),
                     strlen("输出文件不是有效 UTF-8：") + strlen("/数据/") + 281);
    pb_buf_free(&b);
    pr_fs_free(fs);
    free(lp);
}

/* Random and mutated inputs through every text parser: no crash, no leak (ASan), and
 * results that agree with the parsers' own invariants. Deterministic (fixed seed). */
static uint64_t rnd_state = 0x9E3779B97F4A7C15ull;
static uint32_t rnd(void) {
    rnd_state ^= rnd_state << 13;
    rnd_state ^= rnd_state >> 7;
    rnd_state ^= rnd_state << 17;
    return (uint32_t)rnd_state;
}

static void test_fuzz_parsers(void **st) {
    (void)st;
    static const char *seeds[] = {
        "{\"args\":[\"echo\",\"\\u4f60\"],\"files\":{\"/a\":\"x\",\"b/../c\":\"\\n\"}}",
        "AGFzbQEAAAA=",
        "[1,2,{\"a\":null}]",
        "\"\\ud800\"",
        "-1.5e+10",
        "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"isolate/run\",\"params\":{}}"};
    const char alphabet[] = "{}[]\",:\\/ \t\nabu0123456789eE+-.ntrfl=AZaz\x01\x7f\xc3\xa9\xff";
    char buf[256];
    for (int iter = 0; iter < 20000; iter++) {
        const char *sd = seeds[rnd() % (sizeof seeds / sizeof *seeds)];
        size_t n = strlen(sd);
        memcpy(buf, sd, n);
        int muts = 1 + (int)(rnd() % 4);
        for (int m = 0; m < muts; m++) {
            uint32_t op = rnd() % 3, at = n ? rnd() % (uint32_t)n : 0;
            char c = alphabet[rnd() % (sizeof alphabet - 1)];
            if (op == 0 && n)
                buf[at] = c;
            else if (op == 1 && n + 1 < sizeof buf) {
                memmove(buf + at + 1, buf + at, n - at);
                buf[at] = c;
                n++;
            } else if (n) {
                memmove(buf + at, buf + at + 1, n - at - 1);
                n--;
            }
        }
        pr_input in;
        pr_error e;
        if (pr__input_parse(buf, n, &in, &e)) {
            for (size_t i = 0; i < in.nfiles; i++) {
                char norm[300];
                size_t l = pr__path_normalize(in.paths[i].ptr, in.paths[i].len, norm);
                assert_true(l >= 1 && norm[0] == '/');
            }
            pr__input_free(&in);
        } else {
            assert_int_not_equal(e.kind, PR_KIND_NONE);
        }
        uint8_t *b = NULL;
        size_t bl;
        if (pr__base64_decode(buf, n, 1000, &b, &bl) == 0) {
            assert_true(bl >= 1 && bl <= n);
            free(b);
        }
        size_t at[2];
        static const char *const names[2] = {"id", "params"};
        pr_json_keys keys = {.names = names, .n = 2, .at = at};
        if (pr__json_scan(buf, n, &keys) && at[0]) {
            size_t end = pr__json_value_end(buf, n, at[0] - 1);
            assert_true(end <= n && end > at[0] - 1);
        }
        pb_buf o = {0};
        assert_true(pr__utf8_lenient(&o, (const uint8_t *)buf, n));
        assert_true(pr__utf8_valid((const uint8_t *)o.p, o.len));
        pb_buf_free(&o);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_runner_bounds), cmocka_unit_test(test_scope_bounds),
        cmocka_unit_test(test_digest_rules),  cmocka_unit_test(test_program_and_input_bounds),
        cmocka_unit_test(test_order),         cmocka_unit_test(test_base64_atob),
        cmocka_unit_test(test_base64_encode), cmocka_unit_test(test_decoded_length_bound),
        cmocka_unit_test(test_sha256),        cmocka_unit_test(test_json_stringify),
        cmocka_unit_test(test_utf8),          cmocka_unit_test(test_path_normalize),
        cmocka_unit_test(test_input),         cmocka_unit_test(test_fs),
        cmocka_unit_test(test_fs_cap),        cmocka_unit_test(test_fs_unlinked_open_counts),
        cmocka_unit_test(test_fs_nodes),      cmocka_unit_test(test_fs_entries_budget),
        cmocka_unit_test(test_fs_children),   cmocka_unit_test(test_cache),
        cmocka_unit_test(test_result_json),   cmocka_unit_test(test_result_limits),
        cmocka_unit_test(test_fuzz_parsers),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
