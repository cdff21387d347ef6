/*
 * test_json.c — unit tests of the project's JSON library, one group per concern: the
 * value model (counts, accessors on the wrong type, object order and hashing, copies,
 * equality), the parser (flags, limits, error fields), the serializer (layouts,
 * escaping, reals) and the pack builder (every format the code base uses, NULL
 * arguments, no leak on failure). Also runs under a foreign LC_NUMERIC when one can be
 * loaded (test_json_locale: the locale test proper, skipped with code 77 otherwise).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <locale.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "peri/json.h"

#include "json_locale.h"

static char *dump(const pj_t *v, size_t flags) {
    static char out[4096];
    char *s = pj_dumps(v, flags | PJ_ENCODE_ANY);
    assert_non_null(s);
    snprintf(out, sizeof out, "%s", s);
    free(s);
    return out;
}

/* ---- value model ------------------------------------------------------------------------ */
static void test_refcount(void **state) {
    (void)state;
    pj_t *s = pj_string("x");
    assert_int_equal(s->refcount, 1);
    pj_t *a = pj_array();
    assert_int_equal(pj_array_append(a, s), 0);
    assert_int_equal(s->refcount, 2);
    pj_decref(a);
    assert_int_equal(s->refcount, 1);
    pj_decref(s);
    /* shared constants never move */
    pj_t *t = pj_true();
    size_t before = t->refcount;
    pj_decref(t);
    pj_decref(t);
    pj_incref(t);
    assert_int_equal(pj_true()->refcount, before);
    assert_true(pj_is_true(pj_true()) && pj_is_boolean(pj_false()) && pj_is_null(pj_null()));
    pj_decref(NULL);
    assert_null(pj_incref(NULL));
}

static void test_wrong_types(void **state) {
    (void)state;
    pj_t *i = pj_integer(42), *o = pj_object(), *str = pj_string("s");
    assert_null(pj_object_get(i, "a"));
    assert_null(pj_object_get(NULL, "a"));
    assert_null(pj_object_get(o, NULL));
    assert_null(pj_string_value(i));
    assert_null(pj_string_value(NULL));
    assert_int_equal(pj_integer_value(str), 0);
    pj_t *r = pj_real(1.5);
    assert_int_equal(pj_integer_value(r), 0); /* a real is not an integer */
    pj_decref(r);
    assert_true(pj_real_value(i) == 0.0);
    assert_true(pj_number_value(i) == 42.0);
    assert_int_equal(pj_array_size(o), 0);
    assert_null(pj_array_get(o, 0));
    assert_int_equal(pj_object_size(i), 0);
    assert_int_equal(pj_string_length(i), 0);
    /* "_new" setters steal even on failure; a container never holds itself */
    pj_t *v = pj_string("stolen");
    assert_int_equal(pj_object_set_new(i, "k", v), -1); /* v freed: ASan would see a leak */
    assert_int_equal(pj_array_append_new(o, pj_string("x")), -1);
    assert_int_equal(pj_object_set_new(o, "\xff", pj_integer(1)), -1); /* bad UTF-8 key */
    assert_int_equal(pj_object_set(o, "self", o), -1);
    assert_int_equal(o->refcount, 1);
    assert_int_equal(pj_object_set_new(o, "k", NULL), -1);
    assert_null(pj_string(NULL));
    assert_null(pj_string("\xc3"));
    assert_null(pj_real(0.0 / 0.0));
    assert_null(pj_real(1.0 / 0.0));
    pj_decref(i);
    pj_decref(o);
    pj_decref(str);
}

static void test_strings(void **state) {
    (void)state;
    pj_t *s = pj_stringn("a\0b", 3);
    assert_int_equal(pj_string_length(s), 3);
    assert_memory_equal(pj_string_value(s), "a\0b", 4);
    assert_string_equal(dump(s, 0), "\"a\\u0000b\"");
    assert_int_equal(pj_string_set(s, "new"), 0);
    assert_string_equal(pj_string_value(s), "new");
    assert_int_equal(pj_string_set(s, "\xff"), -1);
    pj_decref(s);
    s = pj_stringn_nocheck("\xff", 1); /* unchecked: holds it, but cannot be dumped */
    assert_null(pj_dumps(s, PJ_ENCODE_ANY));
    pj_decref(s);
}

static void test_object_order_and_hash(void **state) {
    (void)state;
    pj_t *o = pj_object();
    char k[32];
    for (int i = 0; i < 1000; i++) {
        snprintf(k, sizeof k, "key%d", (i * 7919) % 1000);
        assert_int_equal(pj_object_set_new(o, k, pj_integer(i)), 0);
    }
    assert_int_equal(pj_object_size(o), 1000);
    for (int i = 0; i < 1000; i++) {
        snprintf(k, sizeof k, "key%d", (i * 7919) % 1000);
        assert_int_equal(pj_integer_value(pj_object_get(o, k)), i);
        assert_string_equal(pj_object_key_at(o, (size_t)i), k); /* insertion order */
    }
    /* re-setting keeps the place; deleting closes the gap; lookups survive both */
    assert_int_equal(pj_object_set_new(o, "key0", pj_string("again")), 0);
    assert_string_equal(pj_object_key_at(o, 0), "key0");
    assert_int_equal(pj_object_del(o, "key0"), 0);
    assert_int_equal(pj_object_del(o, "key0"), -1);
    assert_int_equal(pj_object_size(o), 999);
    for (int i = 1; i < 1000; i++) {
        snprintf(k, sizeof k, "key%d", (i * 7919) % 1000);
        assert_int_equal(pj_integer_value(pj_object_get(o, k)), i);
    }
    const char *key;
    pj_t *val;
    int n = 0, prev = 0;
    pj_object_foreach(o, key, val) {
        assert_true(pj_integer_value(val) > prev);
        prev = (int)pj_integer_value(val);
        n++;
    }
    assert_int_equal(n, 999);
    pj_decref(o);
    /* small objects (linear search) and the order after a delete */
    o = pj_pack("{s:i, s:i, s:i}", "b", 1, "a", 2, "c", 3);
    pj_object_del(o, "a");
    pj_object_set_new(o, "a", pj_integer(4));
    assert_string_equal(dump(o, PJ_COMPACT), "{\"b\":1,\"c\":3,\"a\":4}");
    assert_string_equal(dump(o, PJ_COMPACT | PJ_SORT_KEYS), "{\"a\":4,\"b\":1,\"c\":3}");
    pj_t *u = pj_pack("{s:i, s:n}", "b", 9, "z", NULL);
    assert_int_equal(pj_object_update(o, u), 0);
    assert_string_equal(dump(o, PJ_COMPACT), "{\"b\":9,\"c\":3,\"a\":4,\"z\":null}");
    assert_int_equal(pj_object_clear(o), 0);
    assert_int_equal(pj_object_size(o), 0);
    pj_decref(u);
    pj_decref(o);
}

static void test_arrays(void **state) {
    (void)state;
    pj_t *a = pj_array();
    for (int i = 0; i < 100; i++)
        assert_int_equal(pj_array_append_new(a, pj_integer(i)), 0);
    assert_int_equal(pj_array_insert_new(a, 0, pj_integer(-1)), 0);
    assert_int_equal(pj_array_remove(a, 1), 0);
    assert_int_equal(pj_array_set_new(a, 2, pj_string("two")), 0);
    assert_int_equal(pj_array_set_new(a, 500, pj_integer(0)), -1);
    assert_int_equal(pj_array_size(a), 100);
    assert_int_equal(pj_integer_value(pj_array_get(a, 0)), -1);
    assert_string_equal(pj_string_value(pj_array_get(a, 2)), "two");
    assert_int_equal(pj_array_extend(a, a), 0); /* doubles itself, once */
    assert_int_equal(pj_array_size(a), 200);
    size_t i;
    pj_t *v;
    size_t n = 0;
    pj_array_foreach(a, i, v) n++;
    assert_int_equal(n, 200);
    assert_int_equal(pj_array_clear(a), 0);
    assert_int_equal(pj_array_size(a), 0);
    pj_decref(a);
}

static void test_copy_equal(void **state) {
    (void)state;
    pj_t *doc = pj_loads("{\"a\":[1,2.5,\"x\",{\"b\":null}],\"c\":true}", 0, NULL);
    assert_non_null(doc);
    pj_t *deep = pj_deep_copy(doc), *shallow = pj_copy(doc);
    assert_true(pj_equal(doc, deep) && pj_equal(doc, shallow));
    assert_ptr_not_equal(pj_object_get(deep, "a"), pj_object_get(doc, "a"));
    assert_ptr_equal(pj_object_get(shallow, "a"), pj_object_get(doc, "a"));
    pj_array_append_new(pj_object_get(deep, "a"), pj_integer(3));
    assert_false(pj_equal(doc, deep));
    pj_t *reordered = pj_loads("{\"c\":true,\"a\":[1,2.5,\"x\",{\"b\":null}]}", 0, NULL);
    assert_true(pj_equal(doc, reordered));
    pj_t *one = pj_integer(1), *onef = pj_real(1.0);
    assert_false(pj_equal(one, onef)); /* integer and real stay distinct */
    assert_false(pj_equal(one, NULL));
    pj_decref(one);
    pj_decref(onef);
    pj_decref(reordered);
    pj_decref(doc);
    pj_decref(deep);
    pj_decref(shallow);
}

/* ---- parser ----------------------------------------------------------------------------- */
static void test_load(void **state) {
    (void)state;
    pj_error_t e;
    assert_null(pj_loads("{\"a\":1} x", 0, &e));
    assert_string_equal(e.text, "end of file expected near 'x'");
    assert_int_equal(e.line, 1);
    assert_string_equal(e.source, "<string>");
    assert_null(pj_loads("[\n1,\n2,]", 0, &e));
    assert_string_equal(e.text, "unexpected token near ']'");
    assert_int_equal(e.line, 3);
    assert_int_equal(e.column, 3);
    assert_int_equal(e.position, 8);
    assert_null(pj_loads("1", 0, &e)); /* a scalar needs DECODE_ANY */
    pj_t *v = pj_loads("1", PJ_DECODE_ANY, &e);
    assert_int_equal(pj_integer_value(v), 1);
    pj_decref(v);
    assert_null(pj_loads("{\"a\":1,\"a\":2}", PJ_REJECT_DUPLICATES, &e));
    assert_string_equal(e.text, "duplicate object key near '\"a\"'");
    v = pj_loads("{\"a\":1,\"a\":2}", 0, &e); /* last one wins */
    assert_int_equal(pj_integer_value(pj_object_get(v, "a")), 2);
    pj_decref(v);
    assert_null(pj_loads("[\"a\\u0000\"]", 0, &e));
    v = pj_loadb("[\"a\\u0000\"]", 11, PJ_ALLOW_NUL, &e);
    assert_int_equal(pj_string_length(pj_array_get(v, 0)), 2);
    pj_decref(v);
    assert_null(pj_loads("[9223372036854775808]", 0, &e));
    assert_string_equal(e.text, "too big integer near '9223372036854775808'");
    v = pj_loads("[-9223372036854775808, 1e400000000000]", 0, &e);
    assert_null(v);
    assert_string_equal(e.text, "real number overflow near '1e400000000000'");
    v = pj_loads("[5]", PJ_DECODE_INT_AS_REAL, NULL);
    assert_true(pj_is_real(pj_array_get(v, 0)));
    pj_decref(v);
    assert_null(pj_loads(NULL, 0, &e));
    assert_string_equal(e.text, "wrong arguments");
    v = pj_loadb("[1]", 3, 0, NULL); /* a NULL error is fine */
    assert_non_null(v);
    pj_decref(v);
    char deep[5000];
    memset(deep, '[', 2049);
    memset(deep + 2049, ']', 2049);
    deep[4098] = 0;
    assert_null(pj_loads(deep, 0, &e));
    assert_string_equal(e.text, "maximum parsing depth reached near '['");
    deep[4097] = 0;
    v = pj_loads(deep + 1, 0, &e); /* 2048 deep is fine */
    assert_non_null(v);
    pj_decref(v);
}

/* pj_text_depth counts as the parser does: each value a level, keys none, strings with
 * brackets and escaped quotes inside none either; at the limit it agrees with pj_loads. */
static void test_text_depth(void **state) {
    (void)state;
    static const struct {
        const char *text;
        size_t depth;
    } cases[] = {
        {"", 0},
        {"{}", 1},
        {"[1]", 2},
        {" [ [ ] , \"x\" ]", 2},
        {"[[]]", 2},
        {"{\"k\":{}}", 2},
        {"{\"k\":1}", 2},
        {"{\"[[\\\"{\":\"]]\\\\\"}", 2},
        {"[{\"a\":[true,null,-1.5e3]}]", 4},
        {"7", 1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        assert_int_equal(pj_text_depth(cases[i].text, strlen(cases[i].text)), cases[i].depth);
    assert_int_equal(pj_text_depth(NULL, 3), 0);
    assert_int_equal(pj_text_depth("[[1]]", 2), 2); /* only len bytes are read */
    /* {"a": [[...[1]...]]} with n arrays: 1 + n + 1 deep */
    static char buf[5000];
    for (size_t n = 2044; n <= 2048; n++) {
        size_t k = (size_t)snprintf(buf, sizeof buf, "{\"a\":");
        memset(buf + k, '[', n);
        buf[k + n] = '1';
        memset(buf + k + n + 1, ']', n);
        buf[k + 2 * n + 1] = '}';
        buf[k + 2 * n + 2] = 0;
        size_t d = pj_text_depth(buf, strlen(buf));
        assert_int_equal(d, n + 2);
        pj_t *v = pj_loads(buf, 0, NULL);
        assert_int_equal(v != NULL, d <= PJ_PARSER_MAX_DEPTH);
        pj_decref(v);
    }
}

/* ---- serializer ------------------------------------------------------------------------- */
static void test_dump(void **state) {
    (void)state;
    pj_t *v = pj_loads("{\"a\":[1,{\"b\":\"é/\\u0001\"}],\"c\":{},\"d\":[]}", 0, NULL);
    assert_string_equal(dump(v, 0), "{\"a\": [1, {\"b\": \"é/\\u0001\"}], \"c\": {}, \"d\": []}");
    assert_string_equal(dump(v, PJ_COMPACT), "{\"a\":[1,{\"b\":\"é/\\u0001\"}],\"c\":{},\"d\":[]}");
    assert_string_equal(dump(v, PJ_INDENT(2)), "{\n  \"a\": [\n    1,\n    {\n      \"b\": "
                                               "\"é/\\u0001\"\n    }\n  ],\n  \"c\": {},\n  "
                                               "\"d\": []\n}");
    assert_string_equal(dump(v, PJ_COMPACT | PJ_ENSURE_ASCII | PJ_ESCAPE_SLASH),
                        "{\"a\":[1,{\"b\":\"\\u00E9\\/\\u0001\"}],\"c\":{},\"d\":[]}");
    pj_decref(v);
    v = pj_string("😀\x7f");
    assert_string_equal(dump(v, PJ_ENSURE_ASCII), "\"\\uD83D\\uDE00\x7f\"");
    pj_decref(v);
    assert_null(pj_dumps(NULL, 0));
    pj_t *i = pj_integer(5);
    assert_null(pj_dumps(i, 0)); /* a scalar needs ENCODE_ANY */
    assert_string_equal(dump(i, 0), "5");
    pj_decref(i);
    static const struct {
        double d;
        const char *text;
    } reals[] = {{1.0, "1.0"},
                 {-0.0, "-0.0"},
                 {0.1, "0.10000000000000001"},
                 {1e20, "1e20"},
                 {1e-5, "1.0000000000000001e-5"},
                 {123.0, "123.0"},
                 {1e300, "1.0000000000000001e300"},
                 {2.5, "2.5"}};
    for (size_t k = 0; k < sizeof reals / sizeof *reals; k++) {
        pj_t *r = pj_real(reals[k].d);
        assert_string_equal(dump(r, 0), reals[k].text);
        pj_decref(r);
    }
    pj_t *r = pj_real(0.1);
    assert_string_equal(dump(r, PJ_REAL_PRECISION(3)), "0.1");
    pj_decref(r);
}

static int collect(const char *buf, size_t n, void *data) {
    return fwrite(buf, 1, n, data) == n ? 0 : -1;
}

static void test_dump_callback(void **state) {
    (void)state;
    pj_t *v = pj_pack("[s, i]", "x", 1);
    char out[64] = {0};
    FILE *f = fmemopen(out, sizeof out - 1, "w");
    assert_int_equal(pj_dump_callback(v, collect, f, PJ_COMPACT), 0);
    fclose(f);
    assert_string_equal(out, "[\"x\",1]");
    pj_decref(v);
}

/* ---- pack ------------------------------------------------------------------------------- */
static void test_pack(void **state) {
    (void)state;
    pj_t *o = pj_integer(7), *O = pj_string("kept");
    pj_t *v =
        pj_pack("{s:s, s:s?, s:i, s:I, s:b, s:f, s:n, s:o, s:O, s:o?, s:O?, s:{}, s:[], "
                "s:s%, s:s#, s:s*, s:o*, s:[s, {s:s}]}",
                "s", "str", "q", NULL, "i", -3, "I", (pj_int_t)1 << 40, "b", 1, "f", 0.5, "n", "o",
                o, "O", O, "oq", NULL, "Oq", NULL, "obj", "arr", "pct", "abcdef", (size_t)3, "hash",
                "xyz", 2, "skip", NULL, "skipo", NULL, "nest", "e", "k", "v");
    assert_non_null(v);
    assert_string_equal(dump(v, PJ_COMPACT),
                        "{\"s\":\"str\",\"q\":null,\"i\":-3,\"I\":1099511627776,\"b\":true,"
                        "\"f\":0.5,\"n\":null,\"o\":7,\"O\":\"kept\",\"oq\":null,\"Oq\":null,"
                        "\"obj\":{},\"arr\":[],\"pct\":\"abc\",\"hash\":\"xy\",\"nest\":[\"e\","
                        "{\"k\":\"v\"}]}");
    assert_int_equal(O->refcount, 2);
    pj_decref(v);
    assert_int_equal(O->refcount, 1);
    pj_decref(O);
    v = pj_pack("[I, I]", (pj_int_t)1, (pj_int_t)-2);
    assert_string_equal(dump(v, PJ_COMPACT), "[1,-2]");
    pj_decref(v);
    v = pj_pack("s", "top");
    assert_string_equal(pj_string_value(v), "top");
    pj_decref(v);
    v = pj_pack("{s:s+}", "k", "ab", "cd");
    assert_string_equal(dump(v, PJ_COMPACT), "{\"k\":\"abcd\"}");
    pj_decref(v);
}

static void test_pack_failures(void **state) {
    (void)state;
    /* a NULL string fails cleanly, and the 'o' after it is still released */
    pj_t *held = pj_string("held");
    pj_incref(held);
    assert_null(pj_pack("{s:s, s:o}", "a", NULL, "b", held));
    assert_int_equal(held->refcount, 1);
    pj_incref(held);
    assert_null(pj_pack("{s:o, s:s}", "b", held, "a", NULL));
    assert_int_equal(held->refcount, 1);
    pj_decref(held);
    assert_null(pj_pack("{s:o}", "a", NULL));
    assert_null(pj_pack("{s:s}", NULL, "v"));   /* a NULL key */
    assert_null(pj_pack("{s:s}", "k", "\xff")); /* bad UTF-8 */
    assert_null(pj_pack("{s:f}", "k", 0.0 / 0.0));
    assert_null(pj_pack("[s", "x"));
    assert_null(pj_pack("{s:x}", "k"));
    assert_null(pj_pack("[] x"));
    assert_null(pj_pack(NULL));
}

/* "--locale NAME": run everything under that LC_NUMERIC (json_locale.h). */
int main(int argc, char **argv) {
    int rc = json_test_locale(argc, argv, NULL);
    if (rc) return rc;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_refcount), cmocka_unit_test(test_wrong_types),
        cmocka_unit_test(test_strings),  cmocka_unit_test(test_object_order_and_hash),
        cmocka_unit_test(test_arrays),   cmocka_unit_test(test_copy_equal),
        cmocka_unit_test(test_load),     cmocka_unit_test(test_text_depth),
        cmocka_unit_test(test_dump),     cmocka_unit_test(test_dump_callback),
        cmocka_unit_test(test_pack),     cmocka_unit_test(test_pack_failures),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
