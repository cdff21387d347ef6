/*
 * test_tui.c — unit tests of the TUI's pure parts: key decoding, text
 * sanitising and wrapping, Markdown, the transcript model, the input editor.
 * The terminal-facing parts are tested end to end in tmux (tui_tmux.py).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "tui/tui.h"

#include <locale.h>
#include <stdlib.h>
#include <string.h>

static char *plain(const pt_line *l) {
    char *s = malloc(l->n + 1);
    memcpy(s, l->s, l->n);
    s[l->n] = 0;
    return s;
}

static void feed(pt_keys *k, const char *s) {
    assert_int_equal(pt_keys_feed(k, s, strlen(s)), 0);
}

static void test_keys(void **st) {
    (void)st;
    pt_keys k = {0};
    pt_key e;
    feed(&k, "\x1b[A\x1bOB\x1b[3~\x1b\r\x03"
             "a");
    assert_int_equal(pt_keys_next(&k, &e, false), 1);
    assert_int_equal(e.type, PK_UP);
    assert_int_equal(pt_keys_next(&k, &e, false), 1);
    assert_int_equal(e.type, PK_DOWN);
    assert_int_equal(pt_keys_next(&k, &e, false), 1);
    assert_int_equal(e.type, PK_DELETE);
    assert_int_equal(pt_keys_next(&k, &e, false), 1);
    assert_int_equal(e.type, PK_ALT_ENTER);
    assert_int_equal(pt_keys_next(&k, &e, false), 1);
    assert_int_equal(e.type, PK_CTRL);
    assert_int_equal(e.ctrl, 'c');
    assert_int_equal(pt_keys_next(&k, &e, false), 1);
    assert_int_equal(e.type, PK_CHAR);
    assert_string_equal(e.text, "a");
    assert_int_equal(pt_keys_next(&k, &e, false), 0);
    feed(&k, "\x1b[Z");
    assert_int_equal(pt_keys_next(&k, &e, false), 1);
    assert_int_equal(e.type, PK_BACKTAB);
    /* a lone ESC waits for the quiet time; an arrow split across reads is one key */
    feed(&k, "\x1b");
    assert_int_equal(pt_keys_next(&k, &e, false), 0);
    feed(&k, "[");
    assert_int_equal(pt_keys_next(&k, &e, false), 0);
    feed(&k, "D");
    assert_int_equal(pt_keys_next(&k, &e, false), 1);
    assert_int_equal(e.type, PK_LEFT);
    feed(&k, "\x1b");
    assert_int_equal(pt_keys_next(&k, &e, true), 1);
    assert_int_equal(e.type, PK_ESC);
    /* UTF-8 split across reads */
    feed(&k, "\xC3");
    assert_int_equal(pt_keys_next(&k, &e, false), 0);
    feed(&k, "\xA9");
    assert_int_equal(pt_keys_next(&k, &e, false), 1);
    assert_string_equal(e.text, "\xC3\xA9");
    /* bracketed paste, split inside the end marker; Enter inside is text */
    feed(&k, "\x1b[200~line 1\rline 2\x1b[20");
    assert_int_equal(pt_keys_next(&k, &e, false), 1);
    assert_int_equal(e.type, PK_NONE);
    assert_int_equal(pt_keys_next(&k, &e, false), 0);
    feed(&k, "1~x");
    assert_int_equal(pt_keys_next(&k, &e, false), 1);
    assert_int_equal(e.type, PK_PASTE);
    assert_int_equal(e.paste_len, 13);
    assert_memory_equal(e.paste, "line 1\rline 2", 13);
    assert_int_equal(pt_keys_next(&k, &e, false), 1);
    assert_string_equal(e.text, "x");
    pt_keys_free(&k);
}

static void test_sanitise(void **st) {
    (void)st;
    pt_line l = {0};
    /* escape sequences and controls from the agent never reach the terminal */
    assert_int_equal(pt_line_adds(&l, "a\x1b[31mb\x07\tc\xff", 0, true), 0);
    char *s = plain(&l);
    assert_string_equal(s, "a[31mb    c?");
    free(s);
    pt_line_free(&l);
    /* non-UTF-8 locale: ASCII only */
    assert_int_equal(pt_line_adds(&l, "caf\xC3\xA9 \xE2\x9C\x93", 0, false), 0);
    s = plain(&l);
    assert_string_equal(s, "caf? ?");
    free(s);
    pt_line_free(&l);
    /* wide characters count two columns */
    assert_int_equal(pt_line_adds(&l, "\xE4\xBD\xA0\xE5\xA5\xBD", 0, true), 0);
    assert_int_equal(pt_line_width(&l), 4);
    pt_line_free(&l);
}

static void test_wrap(void **st) {
    (void)st;
    pt_line p = {0};
    pt_lines out = {0};
    pt_line_adds(&p, "the quick brown fox jumps over the lazy dog", 0, true);
    assert_int_equal(pt_wrap(&out, &p, 12, "> ", "  ", 0, true), 0);
    for (size_t i = 0; i < out.n; i++)
        assert_true(pt_line_width(&out.v[i]) <= 12);
    char *s0 = plain(&out.v[0]), *s1 = plain(&out.v[1]);
    assert_string_equal(s0, "> the quick");
    assert_string_equal(s1, "  brown fox");
    free(s0);
    free(s1);
    pt_lines_clear(&out);
    pt_line_free(&p);
    /* a word longer than the line is cut hard; wide chars never straddle the edge */
    pt_line_adds(&p, "abcdefghijklmnop \xE4\xBD\xA0\xE4\xBD\xA0\xE4\xBD\xA0", 0, true);
    assert_int_equal(pt_wrap(&out, &p, 5, "", "", 0, true), 0);
    for (size_t i = 0; i < out.n; i++)
        assert_true(pt_line_width(&out.v[i]) <= 5);
    assert_int_equal(out.n, 6); /* abcde fghij klmno "p" 你你 你 */
    pt_lines_clear(&out);
    /* width 1 still terminates; a prefix never leaves the text no room */
    assert_int_equal(pt_wrap(&out, &p, 1, "> ", "> ", 0, true), 0);
    for (size_t i = 0; i < out.n; i++)
        assert_true(out.v[i].n > 0);
    pt_lines_clear(&out);
    pt_line_free(&p);
}

static void test_markdown(void **st) {
    (void)st;
    pt_lines out = {0};
    const char *md =
        "# Title\nsome **bold** and `code`\n- one\n  - nested\n1. first\n```c\nint x;\n"
        "```\n> quoted";
    assert_int_equal(pt_markdown(&out, md, strlen(md), 40, false), 0);
    const char *want[] = {"Title", "some bold and code", "* one",   "  * nested", "1. first",
                          "c",     "| int x;",           "| quoted"};
    assert_int_equal(out.n, sizeof want / sizeof want[0]);
    for (size_t i = 0; i < out.n; i++) {
        char *s = plain(&out.v[i]);
        assert_string_equal(s, want[i]);
        free(s);
    }
    assert_true(out.v[0].a[0] & PT_BOLD);
    assert_true(out.v[1].a[5] & PT_BOLD);                /* "bold" */
    assert_int_equal(PT_FG_OF(out.v[1].a[14]), PT_CYAN); /* "code" */
    pt_lines_clear(&out);
    /* an unterminated fence and stray markers are fine */
    assert_int_equal(pt_markdown(&out, "```\n**x", 7, 10, true), 0);
    pt_lines_clear(&out);
}

static pj_t *J(const char *s) {
    pj_t *v = pj_loads(s, 0, NULL);
    assert_non_null(v);
    return v;
}

static void upd(pt_transcript *t, const char *s) {
    pj_t *u = J(s);
    pt_transcript_update(t, u);
    pj_decref(u);
}

static void test_transcript(void **st) {
    (void)st;
    pt_transcript t = {0};
    upd(&t, "{\"sessionUpdate\":\"agent_message_chunk\",\"content\":{\"type\":\"text\",\"text\":"
            "\"He\"}}");
    upd(&t, "{\"sessionUpdate\":\"agent_message_chunk\",\"content\":{\"type\":\"text\",\"text\":"
            "\"llo\"}}");
    assert_int_equal(t.n, 1);
    assert_string_equal(t.v[0].text.s, "Hello");
    upd(&t, "{\"sessionUpdate\":\"tool_call\",\"toolCallId\":\"c1\",\"title\":\"Write a\","
            "\"kind\":\"edit\",\"status\":\"pending\"}");
    upd(&t,
        "{\"sessionUpdate\":\"plan\",\"entries\":[{\"content\":\"x\",\"status\":\"pending\"}]}");
    upd(&t,
        "{\"sessionUpdate\":\"tool_call_update\",\"toolCallId\":\"c1\",\"status\":\"completed\","
        "\"content\":[{\"type\":\"diff\",\"path\":\"/a\",\"oldText\":\"k\\nold\\nz\\n\","
        "\"newText\":\"k\\nnew\\nz\\n\"}],\"_meta\":{\"peri.placement\":{\"backend\":\"room\","
        "\"reason\":\"wasm\"}}}");
    upd(&t,
        "{\"sessionUpdate\":\"plan\",\"entries\":[{\"content\":\"x\",\"status\":\"completed\"}]}");
    assert_int_equal(t.n, 3);
    pt_entry *tool = &t.v[1];
    assert_int_equal(tool->kind, PT_E_TOOL);
    assert_string_equal(pt_tool_field(tool, "status"), "completed");
    assert_string_equal(pt_tool_field(tool, "title"), "Write a");
    assert_string_equal(tool->diff.s, "-old\n+new\n");
    assert_string_equal(tool->placement, "ran in room (wasm)");
    assert_string_equal(pj_string_value(pj_object_get(pj_array_get(t.v[2].plan, 0), "status")),
                        "completed");
    /* rendering never exceeds the width */
    pt_style style = {true, true};
    for (int w = 1; w < 50; w += 7) {
        pt_lines out = {0};
        for (size_t i = 0; i < t.n; i++)
            assert_int_equal(pt_render_entry(&out, &t.v[i], w, &style), 0);
        for (size_t i = 0; i < out.n; i++)
            assert_true(pt_line_width(&out.v[i]) <= (w < 8 ? 8 : w));
        pt_lines_clear(&out);
    }
    /* malformed updates are ignored */
    upd(&t, "{\"sessionUpdate\":\"tool_call_update\"}");
    upd(&t, "{\"sessionUpdate\":\"plan\",\"entries\":3}");
    upd(&t, "{\"sessionUpdate\":42}");
    upd(&t, "{\"sessionUpdate\":\"agent_message_chunk\",\"content\":7}");
    assert_int_equal(t.n, 3);
    pt_transcript_free(&t);
}

static void test_input(void **st) {
    (void)st;
    pt_input in = {0};
    pt_input_set(&in, "");
    pt_input_insert(&in, "h\xC3\xA9", 3);
    pt_input_backspace(&in);
    assert_string_equal(in.b.s, "h");
    pt_input_insert(&in, "i\nthere", 7);
    pt_input_up(&in); /* to the first line, not history */
    assert_true(in.cur <= 2);
    char *s = pt_input_take(&in);
    assert_string_equal(s, "hi\nthere");
    free(s);
    pt_input_insert(&in, "second", 6);
    free(pt_input_take(&in));
    pt_input_insert(&in, "draft", 5);
    pt_input_up(&in);
    assert_string_equal(in.b.s, "second");
    pt_input_up(&in);
    assert_string_equal(in.b.s, "hi\nthere");
    pt_input_down(&in); /* cursor at the end of the last line: next history entry */
    assert_string_equal(in.b.s, "second");
    pt_input_down(&in);
    assert_string_equal(in.b.s, "draft");
    pt_input_kill_word(&in);
    assert_string_equal(in.b.s, "");
    pt_input_free(&in);
}

/* Random bytes: the decoder, the sanitiser, Markdown and wrap never crash, never emit a
 * control byte, never exceed the width. */
static void test_random(void **st) {
    (void)st;
    unsigned seed = 12345;
    for (int round = 0; round < 300; round++) {
        char buf[257];
        size_t n = (size_t)(rand_r(&seed) % 256);
        for (size_t i = 0; i < n; i++) {
            int r = rand_r(&seed) % 10;
            buf[i] = r < 2   ? '\x1b'
                     : r < 3 ? '\n'
                     : r < 4 ? '['
                     : r < 5 ? ' '
                             : (char)rand_r(&seed);
        }
        buf[n] = 0;
        pt_keys k = {0};
        pt_keys_feed(&k, buf, n);
        pt_key e;
        int guard = 0;
        while (pt_keys_next(&k, &e, true) == 1 && guard++ < 1000) {
        }
        assert_true(guard < 1000);
        pt_keys_free(&k);
        int width = 1 + rand_r(&seed) % 50;
        pt_lines out = {0};
        assert_int_equal(pt_markdown(&out, buf, n, width, round % 2), 0);
        for (size_t i = 0; i < out.n; i++) {
            assert_true(pt_line_width(&out.v[i]) <= width);
            for (size_t b = 0; b < out.v[i].n; b++)
                assert_true((unsigned char)out.v[i].s[b] >= 0x20 && out.v[i].s[b] != 0x7f);
        }
        pt_lines_clear(&out);
    }
}

int main(void) {
    setlocale(LC_ALL, "C.UTF-8");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_keys),       cmocka_unit_test(test_sanitise),
        cmocka_unit_test(test_wrap),       cmocka_unit_test(test_markdown),
        cmocka_unit_test(test_transcript), cmocka_unit_test(test_input),
        cmocka_unit_test(test_random),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
