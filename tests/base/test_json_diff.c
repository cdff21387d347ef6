/*
 * test_json_diff.c — differential test of the project's JSON library (pj_) against
 * jansson, which the native build still links: the same documents are parsed by both
 * under each decoding flag set and, when both accept, dumped by both under each encoding
 * flag set; the texts must agree byte for byte, and a document one refuses the other
 * must refuse too, with the same error text.
 *
 * Documents: a hand-written corpus (valid and invalid), thousands of seeded random
 * documents (nested values, escapes, non-ASCII, numbers of every shape), random
 * mutations of both (flipped, inserted, deleted and truncated bytes), and values built
 * through the API (random doubles by bit pattern, control characters, huge integers).
 * The seed is fixed so a failure reproduces; PJ_DIFF_SEED overrides it.
 */
#include <jansson.h>

#include <locale.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "peri/base.h"
#include "peri/json.h"

#include "json_locale.h"

/* ---- a seeded generator ---------------------------------------------------------------- */
static uint64_t rng_state;
static uint64_t rnd(void) {
    uint64_t x = rng_state;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return rng_state = x;
}
static unsigned rn(unsigned n) {
    return n ? (unsigned)(rnd() % n) : 0;
}

static const size_t load_flags[] = {0,
                                    PJ_DECODE_ANY,
                                    PJ_DECODE_ANY | PJ_REJECT_DUPLICATES,
                                    PJ_DECODE_ANY | PJ_ALLOW_NUL,
                                    PJ_DECODE_INT_AS_REAL,
                                    PJ_DISABLE_EOF_CHECK | PJ_DECODE_ANY};
static const size_t dump_flags[] = {0,
                                    PJ_COMPACT,
                                    PJ_INDENT(2),
                                    PJ_INDENT(4) | PJ_SORT_KEYS,
                                    PJ_ENSURE_ASCII,
                                    PJ_COMPACT | PJ_ENSURE_ASCII | PJ_SORT_KEYS,
                                    PJ_ESCAPE_SLASH | PJ_INDENT(1) | PJ_COMPACT,
                                    PJ_REAL_PRECISION(5),
                                    PJ_REAL_PRECISION(1) | PJ_COMPACT};

typedef struct stats {
    long docs, accepted, refused, dumps, text_mismatch;
} stats;
static stats st;
/* Under a foreign LC_NUMERIC jansson quotes a number token with the locale's point in its
 * error texts ("near '2,5'"): texts are then not compared, everything else is. */
static bool foreign_locale;
static char first_text_mismatch[600];

/* Compares one document under every flag set; fails the test on a behaviour mismatch.
 * Error texts are compared too; their mismatches are counted and must stay zero. */
static void diff_doc(const char *doc, size_t len) {
    st.docs++;
    for (size_t f = 0; f < sizeof load_flags / sizeof *load_flags; f++) {
        size_t fl = load_flags[f];
        json_error_t je;
        pj_error_t pe;
        json_t *j = json_loadb(doc, len, fl, &je);
        pj_t *p = pj_loadb(doc, len, fl, &pe);
        if (!j != !p) {
            fprintf(stderr, "accept mismatch (flags %zx): jansson %s, pj %s\n  doc: %.*s\n", fl,
                    j ? "accepts" : je.text, p ? "accepts" : pe.text, (int)(len > 300 ? 300 : len),
                    doc);
            fail();
        }
        if (!j) {
            st.refused++;
            if (!foreign_locale && strcmp(je.text, pe.text)) {
                if (!st.text_mismatch)
                    snprintf(first_text_mismatch, sizeof first_text_mismatch,
                             "jansson '%s' pj '%s' doc '%.*s'", je.text, pe.text,
                             (int)(len > 200 ? 200 : len), doc);
                st.text_mismatch++;
            }
            continue;
        }
        st.accepted++;
        for (size_t d = 0; d < sizeof dump_flags / sizeof *dump_flags; d++) {
            size_t df = dump_flags[d] | PJ_ENCODE_ANY;
            char *js = json_dumps(j, df), *ps = pj_dumps(p, df);
            if (!js != !ps || (js && strcmp(js, ps))) {
                fprintf(stderr,
                        "dump mismatch (load %zx dump %zx)\n  doc: %.*s\n  jansson: %s\n  pj:      "
                        "%s\n",
                        fl, df, (int)(len > 300 ? 300 : len), doc, js ? js : "(null)",
                        ps ? ps : "(null)");
                fail();
            }
            st.dumps++;
            free(js);
            free(ps);
        }
        json_decref(j);
        pj_decref(p);
    }
}

static void diff_str(const char *doc) {
    diff_doc(doc, strlen(doc));
}

/* ---- the corpus ---------------------------------------------------------------------- */
static const char *corpus[] = {
    "{}",
    "[]",
    "{\"a\":1}",
    "[1,2,3]",
    " [ 1 , 2 ] ",
    "\t{\n\"k\" :\r\"v\"}\n",
    "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"session/prompt\",\"params\":{\"sessionId\":\"s-1\","
    "\"prompt\":[{\"type\":\"text\",\"text\":\"héllo 世界 😀\"}]}}",
    "[0, -0, 1, -1, 9223372036854775807, -9223372036854775808]",
    "[9223372036854775808]",
    "[-9223372036854775809]",
    "[99999999999999999999999]",
    "[1.0, -0.0, 0.5, 1e10, 1E+2, 1e-2]",
    "[1.7976931348623157e308, 4.9e-324, 2.2250738585072014e-308, 1e309, -1e309, 1e-400]",
    "[0.1, 0.2, 0.30000000000000004, 123456789012345678, 1.5e300, 3.14159265358979323846]",
    "[1e22, 1e23, 9007199254740993, 9007199254740993.0, 1.00000000000000011102230246251565]",
    "[01]",
    "[1.]",
    "[.5]",
    "[-]",
    "[+1]",
    "[1e]",
    "[1e+]",
    "[0x10]",
    "[1.5e3.2]",
    "[- 1]",
    "[NaN]",
    "[Infinity]",
    "[-Infinity]",
    "[true, false, null]",
    "[tru]",
    "[truex]",
    "[nul]",
    "[True]",
    "[\"\\u0041\\u00e9\\u4e16\\ud83d\\ude00\"]",
    "[\"\\ud83d\"]",
    "[\"\\ude00\"]",
    "[\"\\ud83d\\u0041\"]",
    "[\"\\ud83dx\"]",
    "[\"\\u00\"]",
    "[\"\\u00zz\"]",
    "[\"\\x\"]",
    "[\"a\\/b\"]",
    "[\"a/b\"]",
    "[\"\\b\\f\\n\\r\\t\\\"\\\\\"]",
    "[\"\\u0000\"]",
    "{\"a\\u0000b\":1}",
    "[\"\\u001f\\u007f\\u0080\"]",
    "[\"abc",
    "[\"abc\\",
    "[\"\t\"]",
    "[\"line\nbreak\"]",
    "{\"a\":1,\"a\":2}",
    "{\"a\":1,\"b\":2,\"a\":3}",
    "{\"a\" 1}",
    "{\"a\":}",
    "{\"a\":1,}",
    "[1,]",
    "[,1]",
    "[1 2]",
    "{1:2}",
    "{\"a\":1",
    "[1",
    "[",
    "{",
    "]",
    "}",
    "",
    " ",
    "1",
    "\"s\"",
    "null",
    "true",
    "-5",
    "2.5",
    "[1] x",
    "{} {}",
    "[1]  ",
    "[\"\xc3\xa9\"]",
    "[\"\xc3\"]",
    "[\"\xff\"]",
    "[\"\xed\xa0\x80\"]",
    "[\"\xf4\x90\x80\x80\"]",
    "[\"\xc0\xaf\"]",
    "[\"\xe0\x80\xaf\"]",
    "[\"\xf0\x9f\x98\x80\"]",
    "[\xc3\xa9]",
    "[1\xff]",
    "\xef\xbb\xbf[]",
    "[\"\xe2\x80\xa8\xe2\x80\xa9\"]",
    "{\"z\":1,\"a\":{\"y\":[],\"b\":{}},\"m\":[{},[]]}",
    "[[[[[[[[[[[]]]]]]]]]]]",
    "{\"\":\"\",\" \":\" \"}",
    "[\"\\\"quoted\\\"\"]",
    "[1e5, 1E5, 1e05, 12e-005]",
    "[100000000000000000000.0, 1e16, 1e17, 123456789.123456789]",
    "[5e-324, 1e-5, 0.0001, 0.00001, 123e-20]",
};

static void test_corpus(void **state) {
    (void)state;
    for (size_t i = 0; i < sizeof corpus / sizeof *corpus; i++)
        diff_str(corpus[i]);
    /* depth: exactly at the limit, and one past it */
    for (int depth = 2046; depth <= 2050; depth++) {
        pb_buf b = {0};
        for (int i = 0; i < depth; i++)
            assert_true(pb_buf_putc(&b, '['));
        for (int i = 0; i < depth; i++)
            assert_true(pb_buf_putc(&b, ']'));
        diff_doc(b.p, b.len);
        b.len = (size_t)depth; /* the same depth with a scalar at the bottom */
        assert_true(pb_buf_puts(&b, "1"));
        for (int i = 0; i < depth; i++)
            assert_true(pb_buf_putc(&b, ']'));
        diff_doc(b.p, b.len);
        pb_buf_free(&b);
    }
    /* embedded NUL bytes in the buffer */
    diff_doc("[\"a\0b\"]", 7);
    diff_doc("[1]\0", 4);
    diff_doc("[\0]", 3);
}

/* ---- random documents ------------------------------------------------------------------- */
static void gen_ws(pb_buf *b) {
    static const char *ws[] = {"", "", "", " ", "\n", "\t", "\r\n  "};
    pb_buf_puts(b, ws[rn(7)]);
}

static void gen_string(pb_buf *b) {
    static const char *pieces[] = {"a",
                                   "key",
                                   "text",
                                   " ",
                                   "é",
                                   "世界",
                                   "😀",
                                   "\\n",
                                   "\\t",
                                   "\\\"",
                                   "\\\\",
                                   "\\/",
                                   "/",
                                   "\\u0041",
                                   "\\u00e9",
                                   "\\u2028",
                                   "\\ud83d\\ude00",
                                   "\\u0001",
                                   "\\u001F",
                                   "\\u0000",
                                   "\x7f",
                                   "\\b\\f\\r",
                                   "<tag>",
                                   "'",
                                   "id",
                                   "type",
                                   "content"};
    pb_buf_putc(b, '"');
    unsigned n = rn(6);
    for (unsigned i = 0; i < n; i++)
        pb_buf_puts(b, pieces[rn(sizeof pieces / sizeof *pieces)]);
    pb_buf_putc(b, '"');
}

static void gen_number_any(pb_buf *b);
static void gen_number(pb_buf *b) { /* printf under a foreign locale writes ',' */
    size_t from = b->len;
    gen_number_any(b);
    for (size_t i = from; i < b->len; i++)
        if (b->p[i] == ',') b->p[i] = '.';
}

static void gen_number_any(pb_buf *b) {
    switch (rn(8)) {
    case 0: pb_buf_printf(b, "%d", (int)rn(1000) - 500); break;
    case 1: pb_buf_printf(b, "%lld", (long long)rnd()); break;
    case 2: {
        double d;
        uint64_t bits = rnd();
        memcpy(&d, &bits, sizeof d);
        if (d != d || d - d != 0) d = 1.5;
        pb_buf_printf(b, "%.17g", d);
        if (!strpbrk(b->p + b->len - 1, ".e")) pb_buf_puts(b, "");
        break;
    }
    case 3: pb_buf_printf(b, "%u.%u", rn(100000), rn(1000000)); break;
    case 4:
        pb_buf_printf(b, "%s%ue%s%u", rn(2) ? "-" : "", rn(100), rn(2) ? "-" : "+", rn(400));
        break;
    case 5: pb_buf_printf(b, "0.%0*u", (int)rn(20) + 1, rn(1000)); break;
    case 6: pb_buf_printf(b, "%.*g", (int)rn(17) + 1, (double)rn(1u << 30) / (rn(1000) + 1)); break;
    default:
        pb_buf_printf(b, "%llu%llu", (unsigned long long)rnd(), (unsigned long long)rn(10));
        break;
    }
}

static void gen_value(pb_buf *b, int depth) {
    unsigned k = depth > 6 ? rn(6) : rn(9);
    gen_ws(b);
    switch (k) {
    case 0: pb_buf_puts(b, "null"); break;
    case 1: pb_buf_puts(b, rn(2) ? "true" : "false"); break;
    case 2:
    case 3: gen_number(b); break;
    case 4:
    case 5: gen_string(b); break;
    case 6: {
        pb_buf_putc(b, '[');
        unsigned n = rn(6);
        for (unsigned i = 0; i < n; i++) {
            if (i) pb_buf_putc(b, ',');
            gen_value(b, depth + 1);
        }
        gen_ws(b);
        pb_buf_putc(b, ']');
        break;
    }
    default: {
        pb_buf_putc(b, '{');
        unsigned n = rn(6);
        for (unsigned i = 0; i < n; i++) {
            if (i) pb_buf_putc(b, ',');
            gen_ws(b);
            gen_string(b);
            gen_ws(b);
            pb_buf_putc(b, ':');
            gen_value(b, depth + 1);
        }
        gen_ws(b);
        pb_buf_putc(b, '}');
    }
    }
    gen_ws(b);
}

static const char mutation_bytes[] = "{}[]:,\"\\ 0-.eE+tfnu1\xff\xc3\x80\n\x01";

static void mutate(pb_buf *b) {
    unsigned n = 1 + rn(3);
    for (unsigned i = 0; i < n && b->len; i++) {
        size_t at = rn((unsigned)b->len);
        char c = mutation_bytes[rn(sizeof mutation_bytes - 1)];
        switch (rn(4)) {
        case 0: b->p[at] = c; break;
        case 1: /* insert */
            if (pb_buf_putc(b, 0)) {
                memmove(b->p + at + 1, b->p + at, b->len - at - 1);
                b->p[at] = c;
            }
            break;
        case 2: /* delete */
            memmove(b->p + at, b->p + at + 1, b->len - at - 1);
            b->len--;
            break;
        default: b->len = at; /* truncate */
        }
        b->p[b->len] = 0;
    }
}

static uint64_t seed(void) {
    const char *s = getenv("PJ_DIFF_SEED");
    return s && *s ? strtoull(s, NULL, 0) | 1 : 0x9E3779B97F4A7C15ull;
}

static void test_random(void **state) {
    (void)state;
    rng_state = seed();
    for (int i = 0; i < 4000; i++) {
        pb_buf b = {0};
        gen_value(&b, 0);
        diff_doc(b.p, b.len);
        mutate(&b);
        diff_doc(b.p ? b.p : "", b.len);
        pb_buf_free(&b);
    }
    for (size_t i = 0; i < sizeof corpus / sizeof *corpus; i++) {
        for (int k = 0; k < 40; k++) {
            pb_buf b = {0};
            pb_buf_puts(&b, corpus[i]);
            mutate(&b);
            diff_doc(b.p ? b.p : "", b.len);
            pb_buf_free(&b);
        }
    }
}

/* ---- values built through the API -------------------------------------------------------- */
static void same_dump(json_t *j, pj_t *p) {
    for (size_t d = 0; d < sizeof dump_flags / sizeof *dump_flags; d++) {
        size_t df = dump_flags[d] | PJ_ENCODE_ANY;
        char *js = json_dumps(j, df), *ps = pj_dumps(p, df);
        if (!js != !ps || (js && strcmp(js, ps))) {
            fprintf(stderr, "built value dump mismatch (%zx): jansson %s pj %s\n", df,
                    js ? js : "(null)", ps ? ps : "(null)");
            fail();
        }
        free(js);
        free(ps);
    }
}

static void test_built(void **state) {
    (void)state;
    rng_state = seed() ^ 0x5555;
    for (int i = 0; i < 20000; i++) { /* reals by bit pattern: the formatter */
        double d;
        uint64_t bits = rnd();
        if (i % 3 == 0) bits &= 0xC00FFFFFFFFFFFFFull | ((uint64_t)(1023 + rn(80) - 40) << 52);
        memcpy(&d, &bits, sizeof d);
        json_t *j = json_real(d);
        pj_t *p = pj_real(d);
        assert_true(!j == !p);
        if (j) {
            same_dump(j, p);
            /* and read back: the parser's conversion must agree bit for bit */
            char *txt = json_dumps(j, JSON_ENCODE_ANY);
            pj_t *back = pj_loads(txt, PJ_DECODE_ANY, NULL);
            json_t *jback = json_loads(txt, JSON_DECODE_ANY, NULL);
            assert_non_null(back);
            assert_non_null(jback);
            double a = pj_real_value(back), b = json_real_value(jback);
            assert_memory_equal(&a, &b, sizeof a);
            pj_decref(back);
            json_decref(jback);
            free(txt);
        }
        json_decref(j);
        pj_decref(p);
    }
    for (int i = 0; i < 2000; i++) { /* integers */
        long long v = (long long)rnd() >> rn(64);
        json_t *j = json_integer(v);
        pj_t *p = pj_integer(v);
        same_dump(j, p);
        json_decref(j);
        pj_decref(p);
    }
    for (int c = 0; c < 0x100; c++) { /* every byte alone in a string (invalid ones fail both) */
        char s[2] = {(char)c, 0};
        json_t *j = json_stringn_nocheck(s, 1);
        pj_t *p = pj_stringn_nocheck(s, 1);
        same_dump(j, p);
        json_decref(j);
        pj_decref(p);
    }
    /* an object built in a scrambled order, with a deleted and a re-set key */
    json_t *jo = json_object();
    pj_t *po = pj_object();
    for (int i = 0; i < 200; i++) {
        char k[16];
        snprintf(k, sizeof k, "k%u", rn(100));
        json_object_set_new(jo, k, json_integer(i));
        pj_object_set_new(po, k, pj_integer(i));
        if (i % 7 == 0) {
            snprintf(k, sizeof k, "k%u", rn(100));
            assert_int_equal(json_object_del(jo, k), pj_object_del(po, k));
        }
    }
    same_dump(jo, po);
    json_decref(jo);
    pj_decref(po);
}

static void test_report(void **state) {
    (void)state;
    printf("differential: %ld documents, %ld parses accepted, %ld refused, %ld dumps compared, "
           "%ld error texts differ\n",
           st.docs, st.accepted, st.refused, st.dumps, st.text_mismatch);
    if (st.text_mismatch) printf("first error text difference: %s\n", first_text_mismatch);
    assert_true(st.docs > 8000);
    assert_int_equal(st.text_mismatch, 0);
}

/* "--locale NAME": run everything under that LC_NUMERIC (json_locale.h). */
int main(int argc, char **argv) {
    int rc = json_test_locale(argc, argv, &foreign_locale);
    if (rc) return rc;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_corpus),
        cmocka_unit_test(test_random),
        cmocka_unit_test(test_built),
        cmocka_unit_test(test_report),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
