/*
 * test_base.c — the base layer: pb_buf growth, printf and ownership; the pb_fifo byte
 * queue (order, bound, compaction); EINTR-safe
 * descriptor loops; deadlines and ISO time; the log hook and the visible rendering of
 * outside text it writes with; the CPU features the library
 * reads from the C library (base/cpu.h) against the compiler runtime's own probe.
 */
#include "peri/base.h"
#include "peri/rpc.h"

#include "base/cpu.h" /* internal: white-box */

#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <sys/mman.h>

#include "pt_fault.h"

static void buf_grows_and_stays_terminated(void **st) {
    (void)st;
    pb_buf b = {0};
    for (int i = 0; i < 10000; i++)
        assert_true(pb_buf_putc(&b, (char)('a' + i % 26)));
    assert_int_equal(b.len, 10000);
    assert_int_equal(b.p[b.len], 0);
    assert_true(b.cap > b.len);
    assert_true(pb_buf_puts(&b, "xyz"));
    assert_memory_equal(b.p + 10000, "xyz", 4);
    pb_buf_reset(&b);
    assert_int_equal(b.len, 0);
    assert_string_equal(b.p, "");
    pb_buf_free(&b);
    assert_null(b.p);
}

static void buf_refuses_overflow(void **st) {
    (void)st;
    pb_buf b = {0};
    assert_true(pb_buf_puts(&b, "keep"));
    assert_false(pb_buf_reserve(&b, SIZE_MAX - 2));
    assert_false(pb_buf_reserve(&b, SIZE_MAX / 2));
    assert_string_equal(b.p, "keep"); /* unchanged after a refused growth */
    assert_int_equal(b.len, 4);
    pb_buf_free(&b);
}

static void fifo_keeps_order_bound_and_compacts(void **st) {
    (void)st;
    pb_fifo f = {0};
    assert_null(pb_fifo_data(&f));
    assert_int_equal(pb_fifo_size(&f), 0);
    assert_true(pb_fifo_push(&f, NULL, 0, 16));
    uint8_t src[20000];
    for (size_t i = 0; i < sizeof src; i++)
        src[i] = (uint8_t)(i * 7);
    /* pushed and consumed in uneven steps, the bytes come out in order */
    size_t in = 0, out = 0;
    while (out < sizeof src) {
        size_t n = in < sizeof src ? (sizeof src - in < 3001 ? sizeof src - in : 3001) : 0;
        assert_true(pb_fifo_push(&f, src + in, n, 10000));
        in += n;
        size_t take = pb_fifo_size(&f) < 2500 ? pb_fifo_size(&f) : 2500;
        assert_memory_equal(pb_fifo_data(&f), src + out, take);
        pb_fifo_consume(&f, take);
        out += take;
    }
    assert_true(f.cap <= 10000); /* the storage never grew past the bound */
    /* the bound: refused whole, the queue unchanged */
    assert_true(pb_fifo_push(&f, src, 10, 12));
    assert_false(pb_fifo_push(&f, src, 3, 12));
    assert_false(pb_fifo_push(&f, src, SIZE_MAX, SIZE_MAX));
    assert_int_equal(pb_fifo_size(&f), 10);
    assert_memory_equal(pb_fifo_data(&f), src, 10);
    pb_fifo_consume(&f, 100); /* more than is there: empty */
    assert_int_equal(pb_fifo_size(&f), 0);
    pb_fifo_free(&f);
    assert_null(f.p);
    assert_int_equal(f.cap, 0);
}

static void buf_printf_small_and_large(void **st) {
    (void)st;
    pb_buf b = {0};
    assert_true(pb_buf_printf(&b, "%d-%s", 42, "x"));
    assert_string_equal(b.p, "42-x");
    char big[5000];
    memset(big, 'q', sizeof big - 1);
    big[sizeof big - 1] = 0;
    assert_true(pb_buf_printf(&b, "[%s]", big));
    assert_int_equal(b.len, 4 + 2 + 4999);
    assert_int_equal(b.p[b.len - 1], ']');
    assert_int_equal(b.p[b.len], 0);
    size_t len = 0;
    char *owned = pb_buf_take(&b, &len);
    assert_int_equal(len, 4 + 2 + 4999);
    assert_null(b.p);
    assert_int_equal(b.len, 0);
    free(owned);
    char *empty = pb_buf_take(&b, &len); /* a never-grown buffer gives "" */
    assert_non_null(empty);
    assert_string_equal(empty, "");
    assert_int_equal(len, 0);
    free(empty);
}

static void on_alarm(int sig) {
    (void)sig;
}

typedef struct writer {
    int fd;
    size_t n;
} writer;

static void *write_side(void *arg) {
    writer *w = arg;
    char *data = malloc(w->n);
    for (size_t i = 0; i < w->n; i++)
        data[i] = (char)(i * 7);
    int rc = pb_write_all(w->fd, data, w->n);
    free(data);
    close(w->fd);
    return (void *)(intptr_t)rc;
}

static void io_loops_survive_signals_and_short_counts(void **st) {
    (void)st;
    struct sigaction sa = {0};
    sa.sa_handler = on_alarm; /* no SA_RESTART: reads and writes see EINTR */
    sigaction(SIGALRM, &sa, NULL);
    int p[2];
    assert_int_equal(pipe(p), 0);
    writer w = {p[1], 1 << 20}; /* 1 MiB through a 64 KiB pipe: many short writes */
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, write_side, &w), 0);
    char *got = malloc(w.n + 10);
    size_t have = 0;
    for (int round = 0; have < w.n; round++) {
        if (round % 3 == 0) kill(getpid(), SIGALRM);
        ssize_t r = pb_read_full(p[0], got + have, 4096 + (size_t)round % 5000);
        assert_true(r > 0);
        have += (size_t)r;
    }
    assert_int_equal(pb_read_full(p[0], got, 10), 0); /* EOF */
    void *rc;
    pthread_join(th, &rc);
    assert_int_equal((intptr_t)rc, 0);
    for (size_t i = 0; i < w.n; i++)
        if (got[i] != (char)(i * 7)) fail_msg("byte %zu differs", i);
    free(got);
    close(p[0]);
    assert_int_equal(pb_write_all(p[0], "x", 1), -1); /* a closed descriptor: -1 + errno */
    assert_int_equal(errno, EBADF);
}

static void deadlines_are_normalised(void **st) {
    (void)st;
    for (int64_t ms = -5; ms < 3000; ms += 97) {
        struct timespec before, dl = pb_deadline(CLOCK_MONOTONIC, ms);
        clock_gettime(CLOCK_MONOTONIC, &before);
        assert_true(dl.tv_nsec >= 0 && dl.tv_nsec < 1000000000L);
        int64_t diff =
            ((int64_t)dl.tv_sec - before.tv_sec) * 1000 + (dl.tv_nsec - before.tv_nsec) / 1000000;
        assert_true(diff <= (ms < 0 ? 0 : ms) + 1);
        assert_true(diff >= (ms < 0 ? 0 : ms) - 50);
    }
    int64_t a = pb_mono_us();
    pb_sleep_us(20000);
    int64_t b = pb_mono_us();
    assert_true(b - a >= 20000);
    assert_true(pb_wall_ms() > 1700000000000LL);
}

static void iso_time_is_utc_with_milliseconds(void **st) {
    (void)st;
    char out[PB_ISO_TIME_LEN];
    pb_iso_time(0, out);
    assert_string_equal(out, "1970-01-01T00:00:00.000Z");
    pb_iso_time(1796362200123LL, out);
    assert_string_equal(out, "2026-12-04T05:30:00.123Z");
    pb_iso_time(-1, out); /* one millisecond before the epoch */
    assert_string_equal(out, "1969-12-31T23:59:59.999Z");
}

typedef struct seen {
    int calls;
    pb_log_level level;
    char msg[4096];
} seen;

static void record(void *ud, pb_log_level level, const char *msg) {
    seen *s = ud;
    s->calls++;
    s->level = level;
    snprintf(s->msg, sizeof s->msg, "%s", msg);
}

static void log_hook_delivers_and_drops(void **st) {
    (void)st;
    pb_log(NULL, PB_LOG_ERROR, "dropped %d", 1); /* no logger: nothing, no crash */
    pb_logger none = {0};
    pb_log(&none, PB_LOG_ERROR, "dropped %d", 2);
    seen s = {0};
    pb_logger lg = {record, &s};
    pb_log(&lg, PB_LOG_WARN, "server %s: %d frames\n\n", "files", 3);
    assert_int_equal(s.calls, 1);
    assert_int_equal(s.level, PB_LOG_WARN);
    assert_string_equal(s.msg, "server files: 3 frames"); /* trailing newlines removed */
    char big[6000];
    memset(big, 'z', sizeof big - 1);
    big[sizeof big - 1] = 0;
    pb_log(&lg, PB_LOG_INFO, "%s", big); /* long messages are cut, not overflowed */
    assert_int_equal(s.calls, 2);
    assert_true(strlen(s.msg) > 1000 && strlen(s.msg) < sizeof big);
    assert_string_equal(pb_log_level_name(PB_LOG_WARN), "warning");
}

/* Outside text rendered for a terminal or a log (pb_visible, pb_buf_put_visible): no
 * control sequence survives, a newline cannot start a forged line, valid UTF-8 stays. */
static void visible_text_shows_controls_keeps_utf8(void **st) {
    (void)st;
    static const struct {
        const char *in, *want;
    } cases[] = {
        {"\x1b]0;PWNED-TITLE\x07\x1b[2J\x1b[31mFAKE: all good",
         "\\x1b]0;PWNED-TITLE\\x07\\x1b[2J\\x1b[31mFAKE: all good"},
        {"one\nperi: forged\rtwo\tthree", "one\\nperi: forged\\rtwo\tthree"},
        {"\x01\x08\x0b\x0c\x1f\x7f", "\\x01\\x08\\x0b\\x0c\\x1f\\x7f"},
        {"csi \xc2\x9b"
         "2J nel \xc2\x85 osc \xc2\x9d",
         "csi \\xc2\\x9b"
         "2J nel \\xc2\\x85 osc \\xc2\\x9d"},
        {"\xff \xfe \x80 \xc0\xaf \xc1\xbf",
         "\\xff \\xfe \\x80 \\xc0\\xaf \\xc1\\xbf"}, /* overlong */
        {"\xe0\x80\xaf \xed\xa0\x80 \xf0\x80\x80\xaf",
         "\\xe0\\x80\\xaf \\xed\\xa0\\x80 \\xf0\\x80\\x80\\xaf"},
        {"\xf4\x90\x80\x80 \xf5\x80", "\\xf4\\x90\\x80\\x80 \\xf5\\x80"}, /* past U+10FFFF */
        {"cut \xe4\xb8", "cut \\xe4\\xb8"},                               /* a sequence cut short */
        {"\xe4\x1b[2J", "\\xe4\\x1b[2J"},             /* a control inside a sequence */
        {"中文：隔离运行失败", "中文：隔离运行失败"}, /* valid UTF-8 byte for byte */
        {"nbsp\xc2\xa0 é € 😀 \xf4\x8f\xbf\xbf", "nbsp\xc2\xa0 é € 😀 \xf4\x8f\xbf\xbf"},
        {"plain ASCII, a \\ backslash and ~", "plain ASCII, a \\ backslash and ~"},
        /* format characters that would reorder or hide what is read (a right-to-left
         * override flipping "exe.txt", a zero-width joiner, a byte order mark) */
        {"a\xe2\x80\xaetxt.exe b\xe2\x80\x8d c\xef\xbb\xbf d\xe2\x81\xa6"
         "e\xe2\x80\x8b",
         "a<U+202E>txt.exe b<U+200D> c<U+FEFF> d<U+2066>e<U+200B>"},
        {"\xe2\x80\x8a \xe2\x80\x90 \xe2\x81\xa5",
         "\xe2\x80\x8a \xe2\x80\x90 \xe2\x81\xa5"}, /* neighbours stay */
        {"", ""},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *v = pb_visible(cases[i].in);
        assert_non_null(v);
        assert_string_equal(v, cases[i].want);
        free(v);
    }
    assert_null(pb_visible(NULL));
    /* the appender: after what the buffer holds, NUL bytes included, n == 0 still "" */
    pb_buf b = {0};
    assert_true(pb_buf_put_visible(&b, "", 0));
    assert_non_null(b.p);
    assert_string_equal(b.p, "");
    assert_true(pb_buf_puts(&b, "x="));
    assert_true(pb_buf_put_visible(&b, "a\0b\n", 4));
    assert_string_equal(b.p, "x=a\\x00b\\n");
    assert_int_equal(b.len, strlen("x=a\\x00b\\n"));
    pb_buf_free(&b);
}

/* Text for a person deciding on it (pb_visible_prompt): every control and format
 * character shown, newlines marked, a cut at a character boundary and announced. */
static void visible_prompt_marks_and_cuts(void **st) {
    (void)st;
    static const struct {
        const char *in;
        size_t max;
        bool multiline;
        const char *want;
    } cases[] = {
        {"a\nb\x01\xff\xc2\x85z", 100, true, "a⏎\nb\\x01\\xFF<U+0085>z"},
        {"a\nb", 100, false, "a⏎b"},
        {"\x1b[2J\t\r\x7f", 100, false, "␛[2J\\t\\r\\x7F"},
        {"rm -rf /\xe2\x80\xae#/ \xef\xbb\xbf", 100, false, "rm -rf /<U+202E>#/ <U+FEFF>"},
        {"中文：隔离运行失败", 100, false, "中文：隔离运行失败"},
        {"abcdef", 3, false, "abc… [3 more bytes]"},
        {"ab中", 4, false, "ab… [3 more bytes]"}, /* never half a character */
        {"ab中", 5, false, "ab中"},
        {"\xe4\xb8", 100, false, "\\xE4\\xB8"},
        {"", 10, false, ""},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *v = pb_visible_prompt(cases[i].in, cases[i].max, cases[i].multiline);
        assert_non_null(v);
        assert_string_equal(v, cases[i].want);
        free(v);
    }
    char *v = pb_visible_prompt(NULL, 10, false);
    assert_non_null(v);
    assert_string_equal(v, "");
    free(v);
}

/* pb_log_to_file: one message, one line; what a server put in it is shown, not sent. */
static void log_to_file_makes_controls_visible(void **st) {
    (void)st;
    FILE *f = tmpfile();
    assert_non_null(f);
    pb_logger lg = {pb_log_to_file, f};
    pb_log(&lg, PB_LOG_INFO, "mcp[%s]: %s: %s", "evil", "error",
           "\x1b]0;PWNED-TITLE\x07\x1b[2J\x1b[31mFAKE: all good\nperi: forged\r\xc2\x9b\xff");
    pb_log_to_file(f, PB_LOG_WARN, "中文 and plain ASCII\tstay");
    pb_log_to_file(f, PB_LOG_ERROR, "HTTP 500 from the MCP server: \x1b[8m\x7fhidden");
    rewind(f);
    char out[1024];
    size_t n = fread(out, 1, sizeof out - 1, f);
    fclose(f);
    out[n] = 0;
    assert_string_equal(out,
                        "peri: mcp[evil]: error: \\x1b]0;PWNED-TITLE\\x07\\x1b[2J\\x1b[31mFAKE: "
                        "all good\\nperi: forged\\r\\xc2\\x9b\\xff\n"
                        "peri: warning: 中文 and plain ASCII\tstay\n"
                        "peri: error: HTTP 500 from the MCP server: \\x1b[8m\\x7fhidden\n");
    int lines = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)out[i];
        assert_true(c >= 0x20 || c == '\n' || c == '\t');
        assert_true(c != 0x7F);
        lines += c == '\n';
    }
    assert_int_equal(lines, 3);
}

static pb_rpc_kind kind_of(const char *text, const pb_rpc_rules *rules, pb_rpc_msg *m) {
    pb_rpc_decode(text, strlen(text), rules, m);
    return m->kind;
}

/* The rules where ACP and MCP differ, and the rules they share. */
static void rpc_rules_differ_only_where_declared(void **state) {
    (void)state;
    pb_rpc_msg m;
    const char *null_id = "{\"jsonrpc\":\"2.0\",\"id\":null,\"method\":\"x\"}";
    assert_int_equal(kind_of(null_id, NULL, &m), PB_RPC_INVALID);
    assert_int_equal(m.err_code, PB_RPC_INVALID_REQUEST);
    pb_rpc_clear(&m);
    assert_int_equal(kind_of(null_id, PB_RPC_ACP_RULES, &m), PB_RPC_REQUEST);
    assert_true(pj_is_null(m.id));
    pb_rpc_clear(&m);
    const char *arr = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"x\",\"params\":[1]}";
    assert_int_equal(kind_of(arr, NULL, &m), PB_RPC_INVALID);
    assert_non_null(m.id); /* still correlatable */
    pb_rpc_clear(&m);
    assert_int_equal(kind_of(arr, PB_RPC_ACP_RULES, &m), PB_RPC_REQUEST);
    pb_rpc_clear(&m);
    const char nul[] = "{\"jsonrpc\":\"2.0\",\"method\":\"x\",\"params\":{\"a\":\"\\u0000\"}}";
    assert_int_equal(kind_of(nul, NULL, &m), PB_RPC_INVALID);
    assert_int_equal(m.err_code, PB_RPC_PARSE_ERROR);
    pb_rpc_clear(&m);
    assert_int_equal(kind_of(nul, PB_RPC_ACP_RULES, &m), PB_RPC_NOTIFICATION);
    pb_rpc_clear(&m);
    /* common to both */
    static const char *const bad[] = {
        "[{\"jsonrpc\":\"2.0\",\"method\":\"x\"}]",                /* batch */
        "{\"jsonrpc\":\"1.0\",\"method\":\"x\"}",                  /* version */
        "{\"jsonrpc\":\"2.0\",\"method\":\"\"}",                   /* empty method */
        "{\"jsonrpc\":\"2.0\",\"method\":\"x\",\"method\":\"y\"}", /* duplicate key */
        "{\"jsonrpc\":\"2.0\",\"id\":1}",                          /* neither result nor error */
        "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":1,\"error\":{\"code\":1}}",
        "{\"jsonrpc\":\"2.0\",\"id\":1,\"error\":{\"code\":\"1\"}}",
        "{\"jsonrpc\":\"2.0\",\"id\":1.5,\"method\":\"x\"}",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_int_equal(kind_of(bad[i], NULL, &m), PB_RPC_INVALID);
        pb_rpc_clear(&m);
        assert_int_equal(kind_of(bad[i], PB_RPC_ACP_RULES, &m), PB_RPC_INVALID);
        char why[160];
        assert_non_null(
            strstr(pb_rpc_invalid_text(&m, why, sizeof why),
                   m.err_code == PB_RPC_PARSE_ERROR ? "Parse error" : "Invalid Request"));
        pb_rpc_clear(&m);
    }
    const char *np = "{\"jsonrpc\":\"2.0\",\"id\":\"a\",\"method\":\"x\",\"params\":null}";
    assert_int_equal(kind_of(np, NULL, &m), PB_RPC_REQUEST);
    assert_null(m.params);
    pb_rpc_clear(&m);
}

/* JSON-RPC 2.0: text that is not JSON is a parse error (-32700); valid JSON that is not a
 * request object - a bare scalar as much as an array - is an Invalid Request (-32600). */
static void rpc_scalar_is_invalid_request(void **state) {
    (void)state;
    static const char *const scalars[] = {"1", "\"x\"", "null", "true", "-2.5", " 7 "};
    const pb_rpc_rules *rules[] = {NULL, PB_RPC_ACP_RULES};
    pb_rpc_msg m;
    for (size_t r = 0; r < 2; r++) {
        for (size_t i = 0; i < sizeof scalars / sizeof scalars[0]; i++) {
            if (kind_of(scalars[i], rules[r], &m) != PB_RPC_INVALID)
                fail_msg("accepted: %s", scalars[i]);
            if (m.err_code != PB_RPC_INVALID_REQUEST)
                fail_msg("%s: code %d, want -32600", scalars[i], m.err_code);
            assert_null(m.id);
            char why[160];
            assert_string_equal(pb_rpc_invalid_text(&m, why, sizeof why),
                                "Invalid Request: not a JSON object");
            pb_rpc_clear(&m);
        }
        static const char *const broken[] = {"", "{x", "1 2", "nul", "\"x"};
        for (size_t i = 0; i < sizeof broken / sizeof broken[0]; i++) {
            assert_int_equal(kind_of(broken[i], rules[r], &m), PB_RPC_INVALID);
            if (m.err_code != PB_RPC_PARSE_ERROR)
                fail_msg("%s: code %d, want -32700", broken[i], m.err_code);
            assert_string_equal(m.err_msg, "Parse error");
            pb_rpc_clear(&m);
        }
    }
}

/* Builders keep the field order and steal what they say they steal. */
static void rpc_builders_and_encoding(void **state) {
    (void)state;
    pj_t *id = pj_integer(7);
    size_t n = 0;
    pj_t *f = pb_rpc_error(id, -32602, "bad", pj_pack("{s:s}", "k", "v"));
    char *s = pb_rpc_encode(f, true, &n);
    assert_string_equal(s, "{\"jsonrpc\":\"2.0\",\"id\":7,\"error\":{\"code\":-32602,"
                           "\"message\":\"bad\",\"data\":{\"k\":\"v\"}}}\n");
    assert_int_equal(n, strlen(s));
    free(s);
    pj_decref(f);
    f = pb_rpc_request(3, "m", NULL);
    s = pb_rpc_encode(f, false, NULL);
    assert_string_equal(s, "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"m\"}");
    free(s);
    pj_decref(f);
    f = pb_rpc_notification("n", pj_pack("{s:s}", "t", "a\nb"));
    s = pb_rpc_encode(f, true, &n);
    assert_non_null(s);
    assert_ptr_equal(strchr(s, '\n'), s + n - 1); /* one line */
    free(s);
    pj_decref(f);
    assert_null(pb_rpc_result(id, NULL)); /* the caller's failed allocation */
    pj_decref(id);
}

/* Each PB_CPU_* bit says what the compiler runtime's CPUID probe says, one by one
 * (asked alone and all together), so a feature mapped to the wrong bit or a bit
 * reported that was not asked for fails here on any x86-64 machine. */
static void cpu_features_match_the_probe(void **state) {
    (void)state;
#if defined(__x86_64__) && !(defined(__clang__) && __clang_major__ < 15)
    __builtin_cpu_init();
    const struct {
        unsigned bit;
        bool has;
    } f[] = {
        {PB_CPU_POPCNT, __builtin_cpu_supports("popcnt")},
        {PB_CPU_SSSE3, __builtin_cpu_supports("ssse3")},
        {PB_CPU_SSE41, __builtin_cpu_supports("sse4.1")},
        {PB_CPU_SSE42, __builtin_cpu_supports("sse4.2")},
        {PB_CPU_AVX, __builtin_cpu_supports("avx")},
        {PB_CPU_SHA, __builtin_cpu_supports("sha")},
    };
    unsigned all = 0, want = 0;
    for (size_t i = 0; i < sizeof f / sizeof f[0]; i++) {
        if (f[i].has) all |= f[i].bit;
        want |= f[i].bit;
        assert_int_equal(pb_cpu_has(f[i].bit), f[i].has ? f[i].bit : 0u);
    }
    assert_int_equal(pb_cpu_has(want), all);
    assert_int_equal(pb_cpu_has(0), 0u);
#else
    assert_int_equal(pb_cpu_has(PB_CPU_SSE42 | PB_CPU_AVX) & ~(PB_CPU_SSE42 | PB_CPU_AVX), 0u);
#endif
}

/* A guarded mapping: its n bytes are read/write, a write one byte past either end
 * and anywhere in either guard faults, the guards lie exactly below and above (a
 * guard of 0 leaves the neighbour unreserved), and the unmap frees the whole span,
 * guards included (MAP_FIXED_NOREPLACE over it succeeds). Bad sizes are refused. */
static void guard_map_faults_past_either_end(void **state) {
    (void)state;
    const size_t pg = (size_t)sysconf(_SC_PAGESIZE);
    const struct {
        size_t below, n, above;
    } c[] = {{16 * pg, 8 * pg, 4 * pg}, {16 * pg, pg, 0}, {0, 2 * pg, pg}};
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
        char *m = pb_guard_map(c[i].below, c[i].n, c[i].above, MAP_NORESERVE);
        assert_non_null(m);
        memset(m, 0x5a, c[i].n);
        assert_int_equal(m[0] + m[c[i].n - 1], 0xb4);
        unsigned char v[1];
        if (c[i].below) {
            pt_assert_write_faults(m - 1);
            pt_assert_write_faults(m - c[i].below);
            assert_int_equal(mincore(m - c[i].below, pg, v), 0); /* reserved */
        }
        if (c[i].above) {
            pt_assert_write_faults(m + c[i].n);
            pt_assert_write_faults(m + c[i].n + c[i].above - 1);
        }
        char *lo = m - c[i].below;
        size_t span = c[i].below + c[i].n + c[i].above;
        pb_guard_unmap(m, c[i].below, c[i].n, c[i].above);
        void *again =
            mmap(lo, span, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
        assert_ptr_equal(again, lo);
        munmap(again, span);
    }
    errno = 0;
    assert_null(pb_guard_map(pg, 0, pg, 0));
    assert_int_equal(errno, EINVAL);
    assert_null(pb_guard_map(SIZE_MAX - pg + 1, 2 * pg, 0, 0)); /* the span wraps */
    assert_int_equal(errno, EINVAL);
    pb_guard_unmap(NULL, pg, pg, pg); /* nothing */
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(buf_grows_and_stays_terminated),
        cmocka_unit_test(guard_map_faults_past_either_end),
        cmocka_unit_test(buf_refuses_overflow),
        cmocka_unit_test(buf_printf_small_and_large),
        cmocka_unit_test(fifo_keeps_order_bound_and_compacts),
        cmocka_unit_test(io_loops_survive_signals_and_short_counts),
        cmocka_unit_test(deadlines_are_normalised),
        cmocka_unit_test(iso_time_is_utc_with_milliseconds),
        cmocka_unit_test(log_hook_delivers_and_drops),
        cmocka_unit_test(visible_text_shows_controls_keeps_utf8),
        cmocka_unit_test(visible_prompt_marks_and_cuts),
        cmocka_unit_test(log_to_file_makes_controls_visible),
        cmocka_unit_test(rpc_rules_differ_only_where_declared),
        cmocka_unit_test(rpc_scalar_is_invalid_request),
        cmocka_unit_test(rpc_builders_and_encoding),
        cmocka_unit_test(cpu_features_match_the_probe),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
