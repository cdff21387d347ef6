/*
 * peri/base.h — the bottom layer every other layer uses: growable buffers and arrays
 * with overflow-checked growth, a size-capped body sink, EINTR-safe descriptor loops,
 * a newline frame reader, detached threads and worker counts, clocks and deadlines,
 * ISO 8601 time, an async-signal-safe decimal, SHA-256, HMAC, PBKDF2 and strict Base64,
 * and the log hook through which library code reports what it cannot return.
 *
 * Prefix pb_. No global state: a logger is a value the caller owns and passes in.
 */
#ifndef PERI_BASE_H
#define PERI_BASE_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

/* Cancel flags in the API are C11 atomic_int. C++ has <stdatomic.h> only from C++23;
 * before that std::atomic<int> has the same size, alignment and lock-free operations. */
#if defined(__cplusplus) && __cplusplus <= 202002L
#include <atomic>
using atomic_int = std::atomic<int>;
#else
#include <stdatomic.h>
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* ---- buffers (buf.c) --------------------------------------------------------------
 * A growable byte buffer, always NUL-terminated once anything was put (p[len] == 0).
 * Zero-initialise it ({0}); growth doubles and refuses sizes that would overflow.
 * Every function that can allocate returns false on failure and leaves the buffer as
 * it was. */
typedef struct pb_buf {
    char *p;
    size_t len, cap;
} pb_buf;

bool pb_buf_reserve(pb_buf *b, size_t extra); /* room for extra more bytes + the NUL */
bool pb_buf_put(pb_buf *b, const void *data, size_t n);
bool pb_buf_puts(pb_buf *b, const char *s);
static inline bool pb_buf_putc(pb_buf *b, char c) { /* inline: per-character output paths */
    if (b->len + 2 > b->cap && !pb_buf_reserve(b, 1)) return false;
    b->p[b->len++] = c;
    b->p[b->len] = 0;
    return true;
}
bool pb_buf_printf(pb_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
bool pb_buf_vprintf(pb_buf *b, const char *fmt, va_list ap);
void pb_buf_reset(pb_buf *b); /* length 0, storage kept */
void pb_buf_free(pb_buf *b);
/* The contents (NUL-terminated; "" when empty) handed to the caller, who frees them; the
 * buffer is empty afterwards. NULL only when allocating the empty string fails. */
char *pb_buf_take(pb_buf *b, size_t *len);

/* Growth of an array of elem-byte elements whose capacity *cap is full: the array
 * reallocated to twice the capacity (min_cap when it was 0), checked against overflow.
 * Returns the new array and updates *cap; NULL (the old array and *cap untouched) when
 * out of memory or the size would overflow. */
void *pb_grow(void *array, size_t *cap, size_t elem, size_t min_cap);

/* ---- byte queues (fifo.c) ----------------------------------------------------------
 * A first-in first-out byte queue: bytes are pushed at the back and consumed from the
 * front; the unconsumed bytes are moved to the front of the storage before it would
 * grow. Zero-initialise it ({0}). The queue owns its storage (pb_fifo_free releases it);
 * the view of pb_fifo_data is borrowed and valid until the next push, consume or free. */
typedef struct pb_fifo {
    uint8_t *p; /* owned; the queued bytes are p[off .. off + len) */
    size_t off, len, cap;
} pb_fifo;

/* Appends n bytes unless the queue would then hold more than max bytes. false (the queue
 * unchanged) past the bound or when out of memory; the storage never grows past max. */
bool pb_fifo_push(pb_fifo *f, const void *data, size_t n, size_t max);
static inline const uint8_t *pb_fifo_data(const pb_fifo *f) { /* NULL when never grown */
    return f->p ? f->p + f->off : NULL;
}
static inline size_t pb_fifo_size(const pb_fifo *f) {
    return f->len;
}
void pb_fifo_consume(pb_fifo *f, size_t n); /* drops min(n, size) bytes at the front */
void pb_fifo_free(pb_fifo *f);              /* releases the storage; the queue is empty */

/* ---- descriptors (io.c) -----------------------------------------------------------
 * Whole writes and reads that retry on EINTR and short counts. */
int pb_write_all(int fd, const void *p, size_t n); /* 0, or -1 with errno */
ssize_t pb_read_some(int fd, void *p, size_t n);   /* read(2) without EINTR */
ssize_t pb_read_full(int fd, void *p, size_t n);   /* up to n bytes; < n only at EOF */

/* ---- clocks (clock.c) -------------------------------------------------------------- */
int64_t pb_mono_ms(void); /* CLOCK_MONOTONIC in milliseconds */
int64_t pb_mono_us(void);
int64_t pb_wall_ms(void); /* CLOCK_REALTIME in milliseconds since the epoch */
/* The absolute time ms milliseconds from now on clock (for pthread_cond_timedwait with
 * CLOCK_REALTIME, or clock_nanosleep with CLOCK_MONOTONIC). Negative ms count as 0. */
struct timespec pb_deadline(clockid_t clock, int64_t ms);
void pb_sleep_us(int64_t us); /* sleeps the whole time, through signals */
/* "2026-12-04T05:30:00.123Z" (UTC, milliseconds) into out. */
#define PB_ISO_TIME_LEN 32
void pb_iso_time(int64_t wall_ms, char out[PB_ISO_TIME_LEN]);

/* ---- logging (log.c) ----------------------------------------------------------------
 * Library code never writes to stderr: what it must report outside a return value (a
 * server's diagnostics, a record that could not be persisted) goes to the logger its
 * caller configured. A NULL logger or a NULL fn drops the message. The message has no
 * trailing newline. The callback may be called from any thread the library runs. */
typedef enum pb_log_level { PB_LOG_DEBUG, PB_LOG_INFO, PB_LOG_WARN, PB_LOG_ERROR } pb_log_level;
typedef void (*pb_log_fn)(void *ud, pb_log_level level, const char *msg);
typedef struct pb_logger {
    pb_log_fn fn;
    void *ud;
} pb_logger;
void pb_log(const pb_logger *lg, pb_log_level level, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
const char *pb_log_level_name(pb_log_level level); /* "debug", "info", "warning", "error" */
/* A pb_log_fn that writes "peri: <level>: <msg>\n" to the FILE * in ud (a command's own
 * choice, e.g. stderr; the library never installs it by itself). A message may carry
 * text an MCP server or a program chose; it is written as pb_buf_put_visible renders it,
 * so one message is one line and no control sequence reaches a terminal. A sink of one's
 * own that writes to a terminal or a line-based log should do the same. */
void pb_log_to_file(void *ud, pb_log_level level, const char *msg);

/* Visible text: outside text (an MCP server's log message or HTTP error body, an OAuth
 * error, a program's output) made safe to write to a terminal or a log. Valid UTF-8 and
 * tab stay byte for byte; a newline becomes the two characters \n, a carriage return \r;
 * every other C0 control, DEL, a C1 control (U+0080..U+009F, each of its two bytes) and
 * each byte that is not part of valid UTF-8 becomes \xNN (lower-case hex); an invisible
 * or reordering format character (U+200B–U+200F, U+202A–U+202E, U+2060–U+2064,
 * U+2066–U+2069, U+FEFF) becomes <U+XXXX>. A backslash stays as it is: the result is
 * for reading, not for decoding back.
 * pb_buf_put_visible appends s[0..n) (NUL bytes included) so rendered to b; false when
 * out of memory, b as it was. pb_visible returns the rendering of the string s as a new
 * NUL-terminated string the caller frees with free(); NULL when s is NULL or out of
 * memory. */
bool pb_buf_put_visible(pb_buf *b, const char *s, size_t n);
char *pb_visible(const char *s);
/* The same text for a person deciding on it (a permission question, a tool's title):
 * a newline becomes "⏎" (followed by a real line break only when multiline), tab \t,
 * carriage return \r, ESC "␛", every other C0 control and DEL \xNN (upper-case hex),
 * a C1 control or a format character <U+XXXX>, a byte that is not valid UTF-8 \xNN.
 * Past max input bytes the text is cut at a character boundary and ends with
 * "… [N more bytes]", so a cut is never silent. text NULL reads as "". Returns a new
 * string the caller frees; NULL when out of memory. */
char *pb_visible_prompt(const char *text, size_t max, bool multiline);

/* ---- arrays (array.c) ----------------------------------------------------------------
 * Appends one zeroed element to the array *arrayp (a T **, passed as &s->v) of *n
 * elements of elem bytes and capacity *cap, growing it through pb_grow when full.
 * Returns the new element (owned by the array), or NULL (nothing changed) when out of
 * memory. */
void *pb_push(void *arrayp, size_t *n, size_t *cap, size_t elem, size_t min_cap);
/* Frees the n strings of v and v itself (an owned string list; NULL v: nothing). */
void pb_strv_free(char **v, size_t n);
/* Frees each of the n pointers (NULL ones too, as free does). pb_free_all(a, b, c) is
 * the usual spelling: the release of a struct's owned fields in one statement, the
 * array built in place as a compound literal. */
void pb_free_each(void *const *ptrs, size_t n);
#define pb_free_all(...)                                                                           \
    pb_free_each((void *const[]){__VA_ARGS__},                                                     \
                 sizeof((void *const[]){__VA_ARGS__}) / sizeof(void *))

/* ---- page hints (pages.c) -------------------------------------------------------------
 * A buffer of at least PB_HUGE_HINT_MIN bytes may live on transparent huge pages
 * (madvise over its whole pages; no byte changes, failure ignored; smaller: nothing). */
#define PB_HUGE_HINT_MIN ((size_t)4 << 20)
void pb_huge_hint(void *p, size_t n);

/* n read/write bytes between `below` bytes of PROT_NONE under them and `above` bytes
 * over them (each a multiple of the page size, n too; either guard may be 0): a run
 * past either end faults instead of reaching the next mapping. The whole span is
 * reserved inaccessible first and only the middle opened, so a guard is never
 * writable, not even for a moment. `flags` adds to MAP_PRIVATE | MAP_ANONYMOUS
 * (MAP_NORESERVE, MAP_STACK). Returns the low end of the n bytes, or NULL with errno
 * set (ENOSYS where there is no mmap). pb_guard_unmap gives back the whole span, guards
 * included, given the same sizes. */
void *pb_guard_map(size_t below, size_t n, size_t above, int flags);
void pb_guard_unmap(void *p, size_t below, size_t n, size_t above);

/* ---- lines (lines.c) -----------------------------------------------------------------
 * Newline-delimited frames read from a descriptor. A returned line is NUL-terminated in
 * the reader's buffer, without its newline and a CR before it, valid until the next call;
 * the last line counts without a newline; a line longer than max is dropped whole and
 * reported once as PB_LINE_TOO_LONG. Blank lines are returned (pb_line_blank tells). */
typedef struct pb_lines {
    int fd;
    size_t max;
    char *buf;
    size_t len, cap, start;
    bool eof;
} pb_lines;
typedef enum pb_lines_status {
    PB_LINE = 0,
    PB_LINES_EOF,
    PB_LINE_TOO_LONG, /* the line was dropped */
    PB_LINES_ERROR,   /* I/O or allocation failure */
} pb_lines_status;
void pb_lines_init(pb_lines *r, int fd, size_t max);
void pb_lines_free(pb_lines *r); /* the buffer; the descriptor stays the caller's */
pb_lines_status pb_lines_next(pb_lines *r, char **line, size_t *len);
bool pb_line_blank(const char *s, size_t n); /* only spaces and tabs (keep-alive lines) */

/* Threads exist only in the native form: the WebAssembly form (wasm32-wasi, no
 * threads) builds base without them. */
#ifndef __wasi__
#include <pthread.h>

/* ---- threads (thread.c) -------------------------------------------------------------- */
/* Starts fn(arg) on a detached thread: 0, or the pthread error number (nothing runs). */
int pb_thread_detached(void *(*fn)(void *), void *arg);
/* A counted worker's exit: decrements *count under mu and wakes every waiter on cv. */
void pb_count_leave(pthread_mutex_t *mu, pthread_cond_t *cv, int *count);
/* Waits up to ms milliseconds for *count (guarded by mu, announced on cv, whose clock is
 * CLOCK_REALTIME) to reach 0. Returns the count then: 0 when every worker left. */
int pb_count_wait(pthread_mutex_t *mu, pthread_cond_t *cv, const int *count, int64_t ms);
#endif

/* ---- bounded body sink (buf.c) -------------------------------------------------------
 * An answer body gathered up to max bytes, through an fwrite-shaped callback (curl's
 * CURLOPT_WRITEFUNCTION with the pb_capped as its data). Past max it sets over and
 * returns 0 (the transfer stops: "too large"); out of memory it returns 0 with over
 * unset. The text in b is NUL-terminated; free it with pb_buf_free. */
typedef struct pb_capped {
    pb_buf b;
    size_t max;
    bool over;
} pb_capped;
size_t pb_capped_write(char *data, size_t size, size_t n, void *capped);

/* ---- async-signal-safe decimal (io.c) -----------------------------------------------
 * v in decimal into out (room for 21 bytes), NUL-terminated; returns the digits'
 * count. No stdio, no malloc: usable in a forked child of a threaded process. */
size_t pb_utoa(char *out, unsigned long v);

/* ---- SHA-256 (sha256.c) --------------------------------------------------------------
 * FIPS 180-4 SHA-256 without libcrypto, usable in the WebAssembly form. A context is a
 * plain caller-owned value (no allocation, nothing to free): init, update any number of
 * times with any lengths, final (which leaves the context re-initialised). pb_sha256 is
 * the one-shot form. pb_hex writes n bytes as 2n lower-case hex digits and a NUL. */
#define PB_SHA256_LEN   32 /* digest bytes */
#define PB_SHA256_BLOCK 64 /* block bytes (HMAC's key block) */
typedef struct pb_sha256_ctx {
    uint32_t h[8];
    uint64_t len; /* bytes fed so far */
    uint8_t buf[PB_SHA256_BLOCK];
    size_t nbuf; /* bytes waiting in buf, always < PB_SHA256_BLOCK between calls */
} pb_sha256_ctx;
void pb_sha256_init(pb_sha256_ctx *c);
void pb_sha256_update(pb_sha256_ctx *c, const void *data, size_t n);
void pb_sha256_final(pb_sha256_ctx *c, uint8_t digest[PB_SHA256_LEN]);
void pb_sha256(const void *data, size_t n, uint8_t digest[PB_SHA256_LEN]);
void pb_hex(const uint8_t *in, size_t n, char *out /* room for 2n+1 */);

/* ---- Integrity sum (sum.c) -----------------------------------------------------------
 * A fast 256-bit checksum (eight CRC-32C lanes over 64-byte stripes, then the length)
 * for files the engine writes and reads back itself (compiled-code artifacts, saved
 * snapshots): it rejects damaged, truncated or foreign bytes at memory speed. Not a
 * cryptographic hash: never use it where someone could choose the bytes to match a
 * sum kept elsewhere (module digests, cache keys stay SHA-256). Same context rules as
 * SHA-256; pb_sum_init_portable forces the bit-by-bit form (tests). */
#define PB_SUM_LEN    32
#define PB_SUM_LANES  8
#define PB_SUM_STRIPE 64
typedef struct pb_sum_ctx {
    uint32_t lane[PB_SUM_LANES];
    uint64_t len;
    uint8_t buf[PB_SUM_STRIPE];
    size_t nbuf;
    bool portable;
} pb_sum_ctx;
void pb_sum_init(pb_sum_ctx *c);
void pb_sum_init_portable(pb_sum_ctx *c);
void pb_sum_update(pb_sum_ctx *c, const void *data, size_t n);
void pb_sum_final(pb_sum_ctx *c, uint8_t out[PB_SUM_LEN]);
void pb_sum(const void *data, size_t n, uint8_t out[PB_SUM_LEN]);

/* ---- HMAC-SHA-256, PBKDF2, comparison (hmac.c) ---------------------------------------
 * RFC 2104 HMAC over pb_sha256 and RFC 8018 PBKDF2-HMAC-SHA-256. The context holds the
 * keyed hash states (a plain caller-owned value); final wipes it. pb_pbkdf2_sha256 fills
 * out[0..outlen) and returns false (out untouched) for 0 iterations or an outlen beyond
 * the RFC's limit. pb_ct_equal compares in time independent of the contents (for MACs
 * and proofs); pb_wipe zeroes memory in a way the compiler keeps. */
typedef struct pb_hmac_sha256_ctx {
    pb_sha256_ctx inner, outer;
} pb_hmac_sha256_ctx;
void pb_hmac_sha256_init(pb_hmac_sha256_ctx *c, const void *key, size_t keylen);
void pb_hmac_sha256_update(pb_hmac_sha256_ctx *c, const void *data, size_t n);
void pb_hmac_sha256_final(pb_hmac_sha256_ctx *c, uint8_t mac[PB_SHA256_LEN]);
void pb_hmac_sha256(const void *key, size_t keylen, const void *data, size_t n,
                    uint8_t mac[PB_SHA256_LEN]);
bool pb_pbkdf2_sha256(const void *password, size_t pwlen, const void *salt, size_t saltlen,
                      uint32_t iterations, uint8_t *out, size_t outlen);
bool pb_ct_equal(const void *a, const void *b, size_t n);
void pb_wipe(void *p, size_t n);

/* ---- Base64 (base64.c) ---------------------------------------------------------------
 * RFC 4648 standard alphabet with padding, into caller buffers. pb_base64_encode writes
 * PB_BASE64_LEN(n) characters and a NUL (out needs PB_BASE64_LEN(n) + 1) and returns the
 * length. pb_base64_decode is strict (no whitespace, canonical padding and bits) and
 * false for any other text or a result longer than max; out needs max bytes. */
#define PB_BASE64_LEN(n) (((n) + 2) / 3 * 4)
size_t pb_base64_encode(const void *in, size_t n, char *out);
bool pb_base64_decode(const char *in, size_t n, uint8_t *out, size_t max, size_t *out_len);

#ifdef __cplusplus
}
#endif
#endif
