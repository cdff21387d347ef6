/*
 * test_serve.c — the cached-program fast path of `isolate serve`:
 * a request whose program text is byte-identical to a cached program's text is
 * recognised in the request line (stats.line_hits) and skips Base64 and SHA-256
 * (stats.text_hits); any other text takes the full path. Every answer of the server is
 * compared byte for byte with the answer the full path gives: the same request through
 * pr_run on a fresh host (empty cache), formatted as serve formats it.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "room/room_int.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#ifndef ROOM_FIXTURES
#define ROOM_FIXTURES "tests/room/fixtures"
#endif

#include "room_prog.h"

static prog probe, hello;

static bool load_prog(prog *p, const char *name) {
    return room_prog_load(p, ROOM_FIXTURES, name);
}

/* The digest of what a Base64 text decodes to (or 64 'a' when it is not Base64). */
static void digest_of_text(const char *text, size_t n, char hex[65]) {
    uint8_t *bytes, d[32];
    size_t len;
    if (pr__base64_decode(text, n, PR_PROGRAM_MAX, &bytes, &len) != 0) {
        memset(hex, 'a', 64);
        hex[64] = 0;
        return;
    }
    pr__sha256(bytes, len, d);
    pr__hex(d, 32, hex);
    free(bytes);
}

/* One request of a batch: its fields as they are sent (raw_program: the program
 * member's JSON string content exactly as written in the line, escapes and all). */
typedef struct req {
    const char *runner, *scope, *digest;
    const char *program; /* decoded value */
    size_t program_len;
    const char *raw_program; /* NULL: the value is written as is */
    const char *input;
    const char *line; /* non-NULL: sent instead of the line the fields make (no '\n') */
    int id;           /* the id in line (0: the line has none of its own) */
    const char *want; /* non-NULL: the answer expected (an error before pr_run) */
} req;

static void put_json(pb_buf *b, const char *s, size_t n) {
    assert_true(pr__json_str(b, s, n));
}

static void request_line(pb_buf *b, int id, const req *r) {
    if (r->line) {
        assert_true(pb_buf_puts(b, r->line));
        assert_true(pb_buf_putc(b, '\n'));
        return;
    }
    char head[64];
    snprintf(head, sizeof head, "{\"jsonrpc\":\"2.0\",\"id\":%d,", id);
    assert_true(pb_buf_puts(b, head));
    assert_true(pb_buf_puts(b, "\"method\":\"isolate/run\",\"params\":{\"runner\":"));
    put_json(b, r->runner, strlen(r->runner));
    assert_true(pb_buf_puts(b, ",\"scope\":"));
    put_json(b, r->scope, strlen(r->scope));
    assert_true(pb_buf_puts(b, ",\"digest\":"));
    put_json(b, r->digest, strlen(r->digest));
    assert_true(pb_buf_puts(b, ",\"program\":\""));
    if (r->raw_program)
        assert_true(pb_buf_puts(b, r->raw_program));
    else
        assert_true(pb_buf_put(b, r->program, r->program_len));
    assert_true(pb_buf_puts(b, "\",\"input\":"));
    put_json(b, r->input, strlen(r->input));
    assert_true(pb_buf_puts(b, "}}\n"));
}

/* The answer the full path gives: pr_run on a host with an empty cache. */
static char *full_path_answer(int id, const req *r) {
    pr_error e;
    pr_host *h = pr_host_new(NULL, &e);
    assert_non_null(h);
    pr_request q = {{r->runner, strlen(r->runner)},
                    {r->scope, strlen(r->scope)},
                    {r->digest, strlen(r->digest)},
                    {r->program, r->program_len},
                    {r->input, strlen(r->input)}};
    pr_response res;
    pb_buf b = {0};
    char head[64];
    snprintf(head, sizeof head, "{\"jsonrpc\":\"2.0\",\"id\":%d,", id);
    assert_true(pb_buf_puts(&b, head));
    if (pr_run(h, &q, &res, &e)) {
        assert_true(pb_buf_puts(&b, "\"result\":{\"output\":"));
        put_json(&b, res.output, res.output_len);
        assert_true(pb_buf_puts(&b, ",\"isolate\":"));
        put_json(&b, res.isolate, strlen(res.isolate));
        assert_true(pb_buf_puts(&b, "}}"));
        pr_response_clear(&res);
    } else {
        assert_true(pb_buf_puts(&b, "\"error\":{\"code\":-32000,\"message\":"));
        put_json(&b, e.message, strlen(e.message));
        assert_true(pb_buf_puts(&b, ",\"data\":{\"kind\":"));
        put_json(&b, pr_kind_name(e.kind), strlen(pr_kind_name(e.kind)));
        assert_true(pb_buf_puts(&b, "}}}"));
    }
    pr_host_free(h);
    size_t len;
    return pb_buf_take(&b, &len);
}

static int temp_fd(void) {
    const char *dir = getenv("TMPDIR");
    char path[512];
    snprintf(path, sizeof path, "%s/peri-serve-test-XXXXXX", dir && *dir ? dir : "/tmp");
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    unlink(path);
    return fd;
}

/* Serves the requests (one worker, so answers come in order) on host h and checks
 * every answer against the full path. Returns the change of h's stats. */
static pr_cache_stats serve_batch(pr_host *h, const req *rs, size_t n) {
    pb_buf in = {0};
    for (size_t i = 0; i < n; i++)
        request_line(&in, (int)i + 1, &rs[i]);
    int in_fd = temp_fd(), out_fd = temp_fd();
    assert_int_equal(write(in_fd, in.p, in.len), (ssize_t)in.len);
    assert_int_equal(lseek(in_fd, 0, SEEK_SET), 0);
    pr_cache_stats before, after;
    pr_host_cache_stats(h, &before);
    assert_int_equal(pr_serve(h, in_fd, out_fd, 1), 0);
    pr_host_cache_stats(h, &after);
    off_t size = lseek(out_fd, 0, SEEK_END);
    char *out = malloc((size_t)size + 1);
    assert_int_equal(pread(out_fd, out, (size_t)size, 0), (ssize_t)size);
    out[size] = 0;
    char *line = out;
    for (size_t i = 0; i < n; i++) {
        char *nl = strchr(line, '\n');
        assert_non_null(nl);
        *nl = 0;
        char *want = full_path_answer((int)i + 1, &rs[i]);
        if (getenv("SERVE_TEST_SHOW")) fprintf(stderr, "%.300s\n", line);
        assert_string_equal(line, want);
        free(want);
        line = nl + 1;
    }
    assert_string_equal(line, ""); /* nothing more */
    free(out);
    pb_buf_free(&in);
    close(in_fd);
    close(out_fd);
    return (pr_cache_stats){.text_hits = after.text_hits - before.text_hits,
                            .line_hits = after.line_hits - before.line_hits,
                            .misses = after.misses - before.misses};
}

static req with(const prog *p, const char *input) {
    return (req){"LOADER", "甲", p->digest, p->b64, p->b64_len, NULL, input, NULL, 0, NULL};
}

static int setup(void **st) {
    (void)st;
    if (!load_prog(&probe, "probe.wasm") || !load_prog(&hello, "hello.wasm")) {
        fprintf(stderr, "room fixtures missing under %s\n", ROOM_FIXTURES);
        return -1;
    }
    return 0;
}

static int teardown(void **st) {
    (void)st;
    free(probe.b64);
    free(hello.b64);
    return 0;
}

/* A byte-identical text hits: the first request compiles, the next ones are
 * recognised in the line and skip decoding and hashing. */
static void test_identical_text_hits(void **st) {
    (void)st;
    pr_error e;
    pr_host *h = pr_host_new(NULL, &e);
    req rs[3] = {with(&hello, "{}"), with(&hello, "{}"), with(&hello, "{}")};
    pr_cache_stats d = serve_batch(h, rs, 3);
    assert_int_equal(d.line_hits, 2);
    assert_int_equal(d.text_hits, 2);
    /* A later server on the same host finds it at once. */
    d = serve_batch(h, rs, 1);
    assert_int_equal(d.line_hits, 1);
    assert_int_equal(d.text_hits, 1);
    pr_host_free(h);
}

/* The same text with other args, files or stdin gives those fields' results. */
static void test_same_text_other_fields(void **st) {
    (void)st;
    pr_error e;
    pr_host *h = pr_host_new(NULL, &e);
    req rs[] = {
        with(&probe, "{\"args\":[\"args\",\"x\"]}"),
        with(&probe, "{\"args\":[\"args\",\"y\",\"z\"]}"),
        with(&probe, "{\"args\":[\"echo\"],\"files\":{\"/请求/路径.txt\":\"/a\"}}"),
        with(&probe, "{\"args\":[\"echo\"],\"files\":{\"/请求/路径.txt\":\"/b\"}}"),
        with(&probe, "{\"args\":[\"env\"]}"),
        with(&probe, "{\"args\":[\"fail\"]}"),
        with(&probe, "{\"args\":[\"args\"],\"files\":7}"),
        with(&probe, "not json"),
    };
    size_t n = sizeof rs / sizeof *rs;
    /* Another scope, an ungranted runner, a wrong digest: same text, every check. */
    req scope = with(&probe, "{\"args\":[\"args\"]}");
    scope.scope = "乙";
    req runner = with(&probe, "{}");
    runner.runner = "OTHER";
    req digest = with(&probe, "{}");
    digest.digest = hello.digest;
    req all[16];
    memcpy(all, rs, sizeof rs);
    all[n] = scope;
    all[n + 1] = runner;
    all[n + 2] = digest;
    pr_cache_stats d = serve_batch(h, all, n + 3);
    /* Every request after the first recognises the text; the wrong digest then
     * misses the verified-text memo (its key is another program's) and is checked in
     * full (a digest mismatch), as is the other scope's first call. */
    assert_int_equal(d.line_hits, n + 2);
    assert_int_equal(d.text_hits, n - 1 + 1 /* runner: checks come after the memo */);
    pr_host_free(h);
}

/* Copies the text with one byte changed. */
static char *mutate(const prog *p, size_t at, char c) {
    char *t = malloc(p->b64_len + 1);
    memcpy(t, p->b64, p->b64_len + 1);
    t[at] = c;
    return t;
}

/* A text one byte away from the cached one (same length; in the middle, at the very
 * end) never hits and gets its own result, with the cached digest or its own. */
static void test_one_byte_off_takes_full_path(void **st) {
    (void)st;
    pr_error e;
    pr_host *h = pr_host_new(NULL, &e);
    /* The middle change lies between the windows of the text index's sample hash, so
     * both texts share a bucket and a sample: only the memcmp tells them apart. */
    size_t mid = (hello.b64_len - 8) / 7 * 3 + 100, last = hello.b64_len - 1;
    char *m1 = mutate(&hello, mid, hello.b64[mid] == 'A' ? 'B' : 'A');
    char *m2 = mutate(&hello, last, hello.b64[last] == 'A' ? 'B' : 'A');
    char *bad = mutate(&hello, mid, '*'); /* not Base64, same length */
    assert_true(pr__cache_text_sample(m1, hello.b64_len) ==
                pr__cache_text_sample(hello.b64, hello.b64_len));
    char d1[65], d2[65];
    digest_of_text(m1, hello.b64_len, d1);
    digest_of_text(m2, hello.b64_len, d2);
    req base = with(&hello, "{}");
    req rs[7] = {base, base, base, base, base, base, base};
    rs[1].program = m1;                    /* cached digest: mismatch */
    rs[2].program = m2;                    /* last byte: mismatch */
    rs[3].program = bad;                   /* not Base64 */
    rs[4].program = m1, rs[4].digest = d1; /* its own digest: its own result */
    rs[5].program = m2, rs[5].digest = d2;
    pr_cache_stats d = serve_batch(h, rs, 7);
    assert_int_equal(d.line_hits, 1); /* only the last one, the cached text again */
    assert_int_equal(d.text_hits, 1);
    /* The three texts (all valid Wasm: the changes fall in data) are cached now, two
     * with the same sample hash: each request finds its own. */
    req again[3] = {rs[4], rs[5], base};
    d = serve_batch(h, again, 3);
    assert_int_equal(d.line_hits, 3);
    assert_int_equal(d.text_hits, 3);
    free(m1);
    free(m2);
    free(bad);
    pr_host_free(h);
}

/* The cached text written with a JSON escape is the same value but not the same
 * bytes in the line: the line scan decodes it, the verified-text memo still applies. */
static void test_escaped_text(void **st) {
    (void)st;
    pr_error e;
    pr_host *h = pr_host_new(NULL, &e);
    char *raw = malloc(hello.b64_len + 8);
    snprintf(raw, hello.b64_len + 8, "\\u%04x%s", (unsigned char)hello.b64[0], hello.b64 + 1);
    req rs[2] = {with(&hello, "{}"), with(&hello, "{}")};
    rs[1].raw_program = raw;
    pr_cache_stats d = serve_batch(h, rs, 2);
    assert_int_equal(d.line_hits, 0);
    assert_int_equal(d.text_hits, 1);
    free(raw);
    pr_host_free(h);
}

/* Two programs alternating: the text index holds both. */
static void test_two_programs(void **st) {
    (void)st;
    pr_error e;
    pr_host *h = pr_host_new(NULL, &e);
    req rs[6] = {with(&hello, "{}"), with(&probe, "{\"args\":[\"args\",\"1\"]}"),
                 with(&hello, "{}"), with(&probe, "{\"args\":[\"args\",\"2\"]}"),
                 with(&hello, "{}"), with(&probe, "{\"args\":[\"args\",\"3\"]}")};
    pr_cache_stats d = serve_batch(h, rs, 6);
    assert_int_equal(d.line_hits, 4);
    assert_int_equal(d.text_hits, 4);
    pr_host_free(h);
}

/* An evicted program leaves the text index: a tiny cache keeps one program. */
static void test_evicted_text(void **st) {
    (void)st;
    pr_error e;
    /* A program is charged about 3.25 times its text (room/run.c): room for probe and
     * half of hello. */
    pr_host_config cfg = {.cache_bytes = probe.b64_len * 13 / 4 + hello.b64_len * 13 / 8};
    pr_host *h = pr_host_new(&cfg, &e);
    assert_non_null(h);
    req rs[4] = {with(&hello, "{}"), with(&probe, "{\"args\":[\"args\"]}"), with(&hello, "{}"),
                 with(&hello, "{}")};
    pr_cache_stats d = serve_batch(h, rs, 4);
    pr_cache_stats now;
    pr_host_cache_stats(h, &now);
    assert_true(now.evictions >= 1);
    assert_int_equal(d.line_hits, 1); /* hello was evicted by probe, then cached again */
    pr_host_free(h);
}

static pr_cache_stats serve_lockstep(pr_host *h, const req *rs, size_t n);

/* The reader's hint names an evicted program: it is not used (the text then takes the
 * full path and is cached again), and the server lets go of it. */
static void test_evicted_hint(void **st) {
    (void)st;
    pr_error e;
    pr_host_config cfg = {.cache_bytes = probe.b64_len * 13 / 4 + hello.b64_len * 13 / 8};
    pr_host *h = pr_host_new(&cfg, &e);
    assert_non_null(h);
    req he = with(&hello, "{}"), pr = with(&probe, "{\"args\":[\"args\"]}");
    /* 1 compiles hello, 2 recognises it (the hint), 3 evicts it, 4 carries the stale
     * hint (not used: compiled and cached again), 5 by the index, 6 by the new hint. */
    req rs[6] = {he, he, pr, he, he, he};
    pr_cache_stats d = serve_lockstep(h, rs, 6);
    pr_cache_stats now;
    pr_host_cache_stats(h, &now);
    assert_true(now.evictions >= 1);
    assert_int_equal(d.line_hits, 3);
    assert_int_equal(d.line_hint_hits, 1);
    assert_int_equal(d.text_hits, 3);
    pr_host_free(h);
}

/* Input chunking: requests across 1 MiB chunk boundaries, blank lines, a line over
 * 64 MiB (refused once with -32600 and skipped), a last line without '\n'. */
static void test_chunk_boundaries(void **st) {
    (void)st;
    pr_error e;
    pr_host *h = pr_host_new(NULL, &e);
    req r = with(&hello, "{}");
    pb_buf in = {0};
    for (int i = 0; i < 40; i++) {
        request_line(&in, 1, &r);
        if (i % 7 == 0) assert_true(pb_buf_puts(&in, " \r\n\n"));
    }
    size_t big = (64u << 20) + 10;
    assert_true(pb_buf_reserve(&in, big + 1));
    memset(in.p + in.len, 'x', big);
    in.len += big;
    assert_true(pb_buf_putc(&in, '\n'));
    request_line(&in, 1, &r);
    in.len--; /* no final newline */
    int in_fd = temp_fd(), out_fd = temp_fd();
    for (size_t off = 0; off < in.len;) {
        ssize_t k = write(in_fd, in.p + off, in.len - off);
        assert_true(k > 0);
        off += (size_t)k;
    }
    assert_int_equal(lseek(in_fd, 0, SEEK_SET), 0);
    assert_int_equal(pr_serve(h, in_fd, out_fd, 1), 0);
    pb_buf_free(&in);
    off_t size = lseek(out_fd, 0, SEEK_END);
    char *out = malloc((size_t)size + 1);
    assert_int_equal(pread(out_fd, out, (size_t)size, 0), (ssize_t)size);
    out[size] = 0;
    char *want = full_path_answer(1, &r);
    int results = 0, refused = 0, other = 0;
    for (char *line = out, *nl; (nl = strchr(line, '\n')); line = nl + 1) {
        *nl = 0;
        if (strcmp(line, want) == 0)
            results++;
        else if (strcmp(line, "{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-32600,"
                              "\"message\":\"Invalid Request\"}}") == 0)
            refused++;
        else
            other++;
    }
    assert_int_equal(results, 41);
    assert_int_equal(refused, 1);
    assert_int_equal(other, 0);
    pr_cache_stats cs;
    pr_host_cache_stats(h, &cs);
    assert_int_equal(cs.line_hits, 40);
    free(want);
    free(out);
    close(in_fd);
    close(out_fd);
    pr_host_free(h);
}

typedef struct serve_thread {
    pr_host *h;
    int in_fd, out_fd, rc;
} serve_thread;

static void *serve_main(void *arg) {
    serve_thread *t = arg;
    t->rc = pr_serve(t->h, t->in_fd, t->out_fd, 1);
    close(t->out_fd);
    return NULL;
}

/* Reads one answer line from fd (buffered in *acc); returns it (owned by the caller). */
static char *read_answer(int fd, pb_buf *acc) {
    for (;;) {
        char *nl = acc->len ? memchr(acc->p, '\n', acc->len) : NULL;
        if (nl) {
            size_t n = (size_t)(nl - acc->p);
            char *line = strndup(acc->p, n);
            memmove(acc->p, nl + 1, acc->len - n - 1);
            acc->len -= n + 1;
            return line;
        }
        char tmp[4096];
        ssize_t k = read(fd, tmp, sizeof tmp);
        assert_true(k > 0);
        assert_true(pb_buf_put(acc, tmp, (size_t)k));
    }
}

/* Like serve_batch, but through pipes, one request at a time: each is written (in three
 * pieces, 1 ms apart, so the server reads it in parts) after the previous answer came
 * back, so the reading thread already knows where the last recognised text stood (its
 * hint) when the next line arrives. Every answer is compared with the full path. */
static pr_cache_stats serve_lockstep(pr_host *h, const req *rs, size_t n) {
    int in[2], out[2];
    assert_int_equal(pipe(in), 0);
    assert_int_equal(pipe(out), 0);
    serve_thread t = {h, in[0], out[1], -1};
    pr_cache_stats before, after;
    pr_host_cache_stats(h, &before);
    pthread_t tid;
    assert_int_equal(pthread_create(&tid, NULL, serve_main, &t), 0);
    pb_buf acc = {0};
    for (size_t i = 0; i < n; i++) {
        pb_buf b = {0};
        int id = rs[i].id ? rs[i].id : (int)i + 1;
        request_line(&b, id, &rs[i]);
        size_t cut[4] = {0, b.len / 3, b.len * 2 / 3, b.len};
        for (int k = 0; k < 3; k++) {
            assert_int_equal(write(in[1], b.p + cut[k], cut[k + 1] - cut[k]),
                             (ssize_t)(cut[k + 1] - cut[k]));
            if (k < 2) usleep(1000);
        }
        pb_buf_free(&b);
        char *line = read_answer(out[0], &acc);
        char *want = rs[i].want ? strdup(rs[i].want) : full_path_answer(id, &rs[i]);
        if (getenv("SERVE_TEST_SHOW")) fprintf(stderr, "%.300s\n", line);
        assert_string_equal(line, want);
        free(want);
        free(line);
    }
    close(in[1]);
    pthread_join(tid, NULL);
    assert_int_equal(t.rc, 0);
    assert_int_equal(acc.len, 0);
    char rest[16];
    assert_int_equal(read(out[0], rest, sizeof rest), 0); /* nothing more */
    close(out[0]);
    pb_buf_free(&acc);
    pr_host_cache_stats(h, &after);
    return (pr_cache_stats){.text_hits = after.text_hits - before.text_hits,
                            .line_hits = after.line_hits - before.line_hits,
                            .line_hint_hits = after.line_hint_hits - before.line_hint_hits,
                            .misses = after.misses - before.misses};
}

/* The reading thread's hint: once a worker has recognised a text, the reader compares
 * the next lines' bytes at the same place with it, and the worker reads none of them
 * (line_hint_hits). Whatever those bytes are — the same text, one byte off, the text
 * and more, a line that ends inside it, the same text in another member — every
 * answer is the full path's. */
static void test_reader_hint(void **st) {
    (void)st;
    pr_error e;
    pr_host *h = pr_host_new(NULL, &e);
    assert_non_null(h);
    req base = with(&hello, "{}");
    /* 1 compiles, 2 is found by the text index (and becomes the hint), 3 and 4 by the
     * hint. */
    req rs[4] = {base, base, base, base};
    pr_cache_stats d = serve_lockstep(h, rs, 4);
    assert_int_equal(d.line_hits, 3);
    assert_int_equal(d.line_hint_hits, 2);
    assert_int_equal(d.text_hits, 3);

    /* The hint of the next server comes from its own first recognition. */
    size_t mid = (hello.b64_len - 8) / 7 * 3 + 100;
    char *m1 = mutate(&hello, mid, hello.b64[mid] == 'A' ? 'B' : 'A');
    char *longer = malloc(hello.b64_len + 2);
    memcpy(longer, hello.b64, hello.b64_len);
    memcpy(longer + hello.b64_len, "AA", 2);
    /* A line cut inside the text: a parse error, not a wait for the rest. */
    pb_buf cut = {0};
    request_line(&cut, 7, &base);
    cut.len = cut.len / 2;
    assert_true(pb_buf_putc(&cut, 0));
    /* The same text as "input", at the very offset of "program" (the member names
     * padded with blanks to the same length): recognised, but not the program. */
    pb_buf swap = {0};
    char head[400];
    snprintf(head, sizeof head,
             "{\"jsonrpc\":\"2.0\",\"id\":8,\"method\":\"isolate/run\",\"params\":{"
             "\"runner\":\"LOADER\",\"scope\":\"甲\",\"digest\":\"%s\",\"input\":  \"",
             hello.digest);
    assert_true(pb_buf_puts(&swap, head) && pb_buf_put(&swap, hello.b64, hello.b64_len) &&
                pb_buf_puts(&swap, "\",\"program\":\"QUJD\"}}") && pb_buf_putc(&swap, 0));
    req r_m1 = base, r_long = base, r_cut = base, r_swap = base, r_id = base, r_junk = base;
    r_m1.program = m1;
    r_long.program = longer;
    r_long.program_len = hello.b64_len + 2;
    r_cut.line = cut.p;
    r_cut.want = "{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-32700,"
                 "\"message\":\"Parse error\"}}";
    r_swap.line = swap.p;
    r_swap.id = 8;
    r_swap.program = "QUJD";
    r_swap.program_len = 4;
    r_swap.input = hello.b64;
    r_id.id = 123456; /* a longer id: the text one byte further on */
    r_junk.line = "[]";
    r_junk.want = "{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-32600,"
                  "\"message\":\"Invalid Request\"}}";
    req more[12] = {base, base, r_m1, base, r_long, base, r_cut, r_swap, r_id, r_id, r_junk, r_id};
    d = serve_lockstep(h, more, 12);
    pb_buf_free(&cut);
    pb_buf_free(&swap);
    free(m1);
    free(longer);
    /* Hits: base x4 (the first by the index, then the hint: after m1 and after the
     * longer text it still holds), swap (by the hint, not used as the program), r_id x3
     * (the index, then the new hint, also after the junk line). */
    assert_int_equal(d.line_hits, 8);
    assert_int_equal(d.line_hint_hits, 6);
    pr_host_free(h);
}

static double mono(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Gathered answers are not held back by a long request behind them: a quick answer
 * followed by a request that runs into the CPU limit (300 ms) arrives long before the
 * second answer (FLUSH_DELAY_MS, 1 ms; the bound here only says "not held"). */
static void test_answer_not_held(void **st) {
    (void)st;
    pr_error e;
    pr_host_config cfg = {.cpu_ms = 300};
    pr_host *h = pr_host_new(&cfg, &e);
    assert_non_null(h);
    int in[2], out[2];
    assert_int_equal(pipe(in), 0);
    assert_int_equal(pipe(out), 0);
    serve_thread t = {h, in[0], out[1], -1};
    pthread_t tid;
    assert_int_equal(pthread_create(&tid, NULL, serve_main, &t), 0);
    req quick = with(&hello, "{}"), loop = with(&probe, "{\"args\":[\"loop\"]}");
    pb_buf b = {0};
    request_line(&b, 1, &quick);
    request_line(&b, 2, &loop);
    double t0 = mono();
    assert_int_equal(write(in[1], b.p, b.len), (ssize_t)b.len);
    char got[4096];
    size_t len = 0;
    double first = 0;
    for (ssize_t k; (k = read(out[0], got + len, sizeof got - 1 - len)) > 0;) {
        len += (size_t)k;
        got[len] = 0;
        if (!first && strchr(got, '\n')) first = mono() - t0;
        if (strchr(got, '\n') != strrchr(got, '\n')) break; /* two answers */
    }
    double second = mono() - t0;
    close(in[1]);
    pthread_join(tid, NULL);
    assert_int_equal(t.rc, 0);
    char *want1 = full_path_answer(1, &quick);
    assert_true(strncmp(got, want1, strlen(want1)) == 0);
    assert_non_null(strstr(got, "\"id\":2,\"error\":{\"code\":-32000,\"message\":"
                                "\"隔离运行失败：CPU 时间超过 300 ms\""));
    /* The second answer needs at least 300 ms of CPU; the first came well before. */
    assert_true(second >= 0.29);
    assert_true(first < second - 0.1);
    free(want1);
    pb_buf_free(&b);
    close(out[0]);
    pr_host_free(h);
}

static int64_t ns_of(const struct timespec *t) {
    return (int64_t)t->tv_sec * 1000000000 + t->tv_nsec;
}

/* The CPU-clock memo of serve's workers (pr_cpu_memo, watchdog.c): a run starting
 * within 1 ms of the memo's reading on the same thread takes memo.cpu + the wall time
 * since as its CPU start (an upper bound: its CPU is never over-counted); an older
 * memo or another thread's is replaced by a real reading. */
static void test_cpu_memo(void **st) {
    (void)st;
    pr_watchdog w;
    assert_true(pr__watchdog_init(&w, 1000, 5000));
    pw_error pe = {0};
    pw_store *s = pw_store_new(NULL, &pe);
    assert_non_null(s);
    pr_cpu_memo memo = {0};
    pr_watch_slot slot = {0};
    slot.cpu_memo = &memo;
    struct timespec before;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &before);
    assert_true(pr__watch_begin(&w, &slot, s));
    assert_int_equal(pr__watch_end(&w, &slot), 0);
    assert_true(memo.valid); /* a real reading */
    assert_true(ns_of(&memo.cpu) >= ns_of(&before));
    assert_true(ns_of(&memo.cpu) == ns_of(&slot.cpu_start));
    assert_true(ns_of(&memo.wall) == ns_of(&slot.wall_start));
    pr_cpu_memo first = memo;
    /* Within 1 ms: the bound, no new reading. */
    slot = (pr_watch_slot){.cpu_memo = &memo};
    assert_true(pr__watch_begin(&w, &slot, s));
    pr__watch_end(&w, &slot);
    int64_t gap = ns_of(&slot.wall_start) - ns_of(&first.wall);
    if (gap < PR_CPU_MEMO_NS) {
        assert_true(ns_of(&memo.wall) == ns_of(&first.wall));
        assert_true(ns_of(&slot.cpu_start) == ns_of(&first.cpu) + gap);
        /* The bound is at least the CPU the thread had when the run began. */
        assert_true(ns_of(&slot.cpu_start) >= ns_of(&first.cpu));
        assert_true(ns_of(&slot.cpu_start) - ns_of(&first.cpu) <= PR_CPU_MEMO_NS);
    }
    /* Over 1 ms later: a new reading. */
    usleep(3000);
    slot = (pr_watch_slot){.cpu_memo = &memo};
    assert_true(pr__watch_begin(&w, &slot, s));
    pr__watch_end(&w, &slot);
    assert_true(ns_of(&memo.wall) == ns_of(&slot.wall_start));
    assert_true(ns_of(&memo.cpu) == ns_of(&slot.cpu_start));
    assert_true(ns_of(&memo.wall) - ns_of(&first.wall) >= 3000000);
    /* Another thread's memo is not used. */
    memo.thread = (pthread_t)0;
    struct timespec old = memo.wall;
    slot = (pr_watch_slot){.cpu_memo = &memo};
    assert_true(pr__watch_begin(&w, &slot, s));
    pr__watch_end(&w, &slot);
    assert_true(pthread_equal(memo.thread, pthread_self()));
    assert_true(ns_of(&memo.wall) >= ns_of(&old));
    assert_true(ns_of(&memo.wall) == ns_of(&slot.wall_start));
    pw_store_free(s);
    pr__watchdog_destroy(&w);
}

/* With the memo, serve's CPU limit still ends an infinite loop run right after quick
 * runs on the same worker, with the exact message, and the server answers the next
 * request. */
static void test_cpu_limit_after_quick_runs(void **st) {
    (void)st;
    pr_error e;
    pr_host_config cfg = {.cpu_ms = 100};
    pr_host *h = pr_host_new(&cfg, &e);
    assert_non_null(h);
    req quick = with(&hello, "{}"), loop = with(&probe, "{\"args\":[\"loop\"]}");
    req rs[5] = {quick, quick, loop, quick, loop};
    pb_buf in = {0};
    for (int i = 0; i < 5; i++)
        request_line(&in, i + 1, &rs[i]);
    int in_fd = temp_fd(), out_fd = temp_fd();
    assert_int_equal(write(in_fd, in.p, in.len), (ssize_t)in.len);
    assert_int_equal(lseek(in_fd, 0, SEEK_SET), 0);
    struct timespec c0, c1;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c0);
    assert_int_equal(pr_serve(h, in_fd, out_fd, 1), 0);
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c1);
    /* Two loops of at least 100 ms of CPU each. */
    assert_true(ns_of(&c1) - ns_of(&c0) >= 200000000);
    off_t size = lseek(out_fd, 0, SEEK_END);
    char *out = malloc((size_t)size + 1);
    assert_int_equal(pread(out_fd, out, (size_t)size, 0), (ssize_t)size);
    out[size] = 0;
    char *want = full_path_answer(1, &quick);
    char *line = out;
    for (int i = 0; i < 5; i++) {
        char *nl = strchr(line, '\n');
        assert_non_null(nl);
        *nl = 0;
        char head[64];
        snprintf(head, sizeof head, "{\"jsonrpc\":\"2.0\",\"id\":%d,", i + 1);
        assert_true(strncmp(line, head, strlen(head)) == 0);
        if (rs[i].input == loop.input)
            assert_non_null(strstr(line, "\"error\":{\"code\":-32000,\"message\":"
                                         "\"隔离运行失败：CPU 时间超过 100 ms\""));
        else
            assert_string_equal(line + strlen(head),
                                want + strlen("{\"jsonrpc\":\"2.0\",\"id\":1,"));
        line = nl + 1;
    }
    free(want);
    free(out);
    pb_buf_free(&in);
    close(in_fd);
    close(out_fd);
    pr_host_free(h);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_identical_text_hits),
        cmocka_unit_test(test_same_text_other_fields),
        cmocka_unit_test(test_one_byte_off_takes_full_path),
        cmocka_unit_test(test_escaped_text),
        cmocka_unit_test(test_two_programs),
        cmocka_unit_test(test_evicted_text),
        cmocka_unit_test(test_chunk_boundaries),
        cmocka_unit_test(test_reader_hint),
        cmocka_unit_test(test_evicted_hint),
        cmocka_unit_test(test_cpu_memo),
        cmocka_unit_test(test_cpu_limit_after_quick_runs),
        cmocka_unit_test(test_answer_not_held),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
