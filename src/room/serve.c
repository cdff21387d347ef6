/*
 * serve.c — `isolate serve`: newline-delimited JSON-RPC 2.0. The calling thread reads
 * the input in chunks and splits it into lines, handed over in place; `workers` threads
 * check and run them (pr_run) and write each answer as one line, so answers may come
 * out of order (matched by id). The queue is bounded (in lines and bytes): a fast
 * client is slowed down rather than buffered without limit. Answers are written at
 * once when no other request is waiting; while requests are queued (a pipelining
 * client) they are gathered into one write, never held more than FLUSH_DELAY_MS (the
 * flusher thread). A program text byte-identical to a cached one is recognised in the
 * line without being scanned (known_text; docs/room.md, "serve fast path"): the reading
 * thread, which must look at every byte for the newline anyway, compares the bytes where
 * the last recognised text stood with that text instead (reader_hint), so that the
 * worker then reads none of them.
 * Method: "isolate/run", params {runner, scope, digest, program, input} (strings);
 * result {"output", "isolate"}; a contract exception is error -32000 with data.kind;
 * malformed requests get the standard codes (a JSON array, i.e. a batch, is answered
 * -32600).
 */
#include "room_int.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define LINE_MAX_BYTES (64u << 20)
/* The queue of read, not yet parsed lines: at most QUEUE_PER_WORKER per worker and
 * QUEUE_BYTES in all (one line always fits). */
#define QUEUE_PER_WORKER 16
#define QUEUE_BYTES      (16u << 20)
/* Gathered answers are written once they reach OUT_GATHER bytes, or FLUSH_DELAY_MS
 * after the first of them at the latest. */
#define OUT_GATHER     (64u << 10)
#define FLUSH_DELAY_MS 1
/* An idle worker is woken once WAKE_BATCH requests wait for it, or when the reader is
 * about to read (and perhaps sleep): a pipelining client's requests are then taken a
 * few at a time, with one wake-up (futex call) on each side instead of one per request,
 * and their answers written together. */
#define WAKE_BATCH 4
/* Pipes are asked for this much buffer (fewer reads, writes and wake-ups). */
#define PIPE_BYTES (1 << 20)
/* Input is read into chunks of CHUNK_BYTES (more for a longer line); finished chunks
 * are kept for reuse, at most SPARE_CHUNKS of them (no malloc, free, page faults or
 * heap trimming per chunk; at most 4 MiB idle). */
#define CHUNK_BYTES  (1u << 20)
#define SPARE_CHUNKS 4

/* A block of input as read. A line lying wholly inside it is handed to a worker in
 * place, with a reference: the reader never writes over bytes it has handed out, and
 * copies only a line cut by the chunk's end, into the next chunk. */
typedef struct chunk {
    atomic_uint refs; /* the reader's (while it reads into it) + one per job */
    size_t cap;
    struct chunk *next; /* in the spare list */
    char data[];
} chunk;

typedef struct job {
    struct job *next;
    const char *line; /* the request as read, inside `chunk`; parsed by the worker */
    size_t n;
    chunk *chunk;
    char *id; /* serialised JSON id, or NULL for a notification */
    /* The params' values: in place in the line when written without escapes, else
     * decoded copies (owned[i], freed with the job). */
    const char *fields[5];
    char *owned[5];
    size_t lens[5];
    /* When the program text was recognised in the line as a cached program's text
     * (the text index, cache.c): that program (one reference), whose text then stands
     * for fields[3] (left NULL); else NULL. */
    pr_program *prog;
    /* Set by the reader: line[hint_at, hint_at + hint->text_len) is byte for byte
     * hint's text (one reference); else NULL. */
    pr_program *hint;
    size_t hint_at;
} job;

typedef struct server {
    pr_host *host;
    int out_fd;
    pthread_mutex_t mu, out_mu;
    pthread_mutex_t io_mu; /* held while writing to out_fd (after out_mu, never before) */
    pthread_cond_t have_job, have_room;
    job *head, *tail;
    size_t queued, max_queued, queued_bytes;
    bool reader_waits; /* the reader sleeps on have_room until the queue is half empty */
    atomic_uint idle;  /* workers sleeping on have_job (changed under mu) */
    chunk *spare;      /* finished chunks for reuse (under mu) */
    size_t nspare;
    bool eof;
    /* Output, under out_mu: answers gathered for one write, and the flusher thread
     * that writes them at the latest FLUSH_DELAY_MS after they were first deferred. */
    pb_buf out;
    pthread_cond_t flush_cv;
    bool flush_armed, flush_stop;
    bool io_error; /* under io_mu */
    /* The cached text a worker last recognised in a line and its offset there (one
     * reference; under mu), and a generation count of its changes: the reader's hint. */
    pr_program *seen;
    size_t seen_at;
    atomic_uint seen_gen; /* written under mu, read without it by the reader */
} server;

/* The reading thread's copy of server.seen: where the next line probably holds that
 * text. Taken when a line's first bytes are in (refresh_hint), kept for that line. */
typedef struct reader_hint {
    pr_program *prog; /* one reference, or NULL */
    size_t at;
    unsigned gen; /* of server.seen when copied */
} reader_hint;

/* A chunk of at least cap bytes: a spare one or a new one (NULL: out of memory). */
static chunk *chunk_take(server *sv, size_t cap) {
    chunk *c = NULL;
    if (cap <= CHUNK_BYTES) {
        cap = CHUNK_BYTES;
        pthread_mutex_lock(&sv->mu);
        c = sv->spare;
        if (c) {
            sv->spare = c->next;
            sv->nspare--;
        }
        pthread_mutex_unlock(&sv->mu);
    }
    if (!c) c = malloc(sizeof *c + cap);
    if (!c) return NULL;
    atomic_init(&c->refs, 1);
    c->cap = cap;
    c->next = NULL;
    return c;
}

static void chunk_release(server *sv, chunk *c) {
    if (!c || atomic_fetch_sub(&c->refs, 1) != 1) return;
    pthread_mutex_lock(&sv->mu);
    if (c->cap == CHUNK_BYTES && sv->nspare < SPARE_CHUNKS) {
        c->next = sv->spare;
        sv->spare = c;
        sv->nspare++;
        c = NULL;
    }
    pthread_mutex_unlock(&sv->mu);
    free(c);
}

static void job_free(server *sv, job *j) {
    if (!j) return;
    free(j->id);
    for (int i = 0; i < 5; i++)
        free(j->owned[i]);
    pr_program_release(j->prog);
    pr_program_release(j->hint);
    chunk_release(sv, j->chunk);
    free(j);
}

/* Writes b->p[0..len) to out_fd (called holding io_mu); empties b. */
static void write_out(server *sv, pb_buf *b) {
    size_t off = 0;
    while (off < b->len && !sv->io_error) {
        ssize_t k = write(sv->out_fd, b->p + off, b->len - off);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) {
            sv->io_error = true;
            break;
        }
        off += (size_t)k;
    }
    b->len = 0;
}

/* Called holding out_mu: moves the gathered answers into w (the buffers are swapped,
 * nothing is copied), releases out_mu and writes them. io_mu is taken before out_mu is
 * released, so writes keep the order in which answers were gathered, while other
 * threads gather the next answers during the write. */
static void write_gathered(server *sv, pb_buf *w) {
    pb_buf t = sv->out;
    sv->out = *w;
    sv->out.len = 0;
    *w = t;
    pthread_mutex_lock(&sv->io_mu);
    pthread_mutex_unlock(&sv->out_mu);
    write_out(sv, w);
    pthread_mutex_unlock(&sv->io_mu);
}

/* Hands a thread's finished answer lines (ans, emptied) to the output. Written now,
 * with everything gathered before, unless `defer` (another request is already queued,
 * so a worker will be back soon): then gathered, and written by the next emit that does
 * not defer, once OUT_GATHER bytes are gathered, or by the flusher. */
static void emit(server *sv, pb_buf *ans, bool defer) {
    if (!ans->len) return;
    pthread_mutex_lock(&sv->out_mu);
    if (!pb_buf_put(&sv->out, ans->p, ans->len)) {
        pthread_mutex_lock(&sv->io_mu); /* out of memory: no gathering */
        write_out(sv, &sv->out);
        write_out(sv, ans);
        pthread_mutex_unlock(&sv->io_mu);
        pthread_mutex_unlock(&sv->out_mu);
        return;
    }
    ans->len = 0;
    if (!defer || sv->out.len >= OUT_GATHER) {
        write_gathered(sv, ans); /* ans comes back empty, maybe another buffer */
        return;
    }
    if (!sv->flush_armed) {
        sv->flush_armed = true;
        pthread_cond_signal(&sv->flush_cv);
    }
    pthread_mutex_unlock(&sv->out_mu);
}

/* Once armed, the flusher writes what was gathered every FLUSH_DELAY_MS and stays
 * armed while there was something to write: a steady stream of deferred answers costs
 * no wake-up per batch. It disarms (sleeps until the next deferred answer) after an
 * empty period. */
static void *flusher_main(void *arg) {
    server *sv = arg;
    pb_buf w = {0};
    pthread_mutex_lock(&sv->out_mu);
    for (;;) {
        if (!sv->flush_stop && !sv->flush_armed) {
            pthread_cond_wait(&sv->flush_cv, &sv->out_mu);
            continue;
        }
        if (!sv->flush_stop) {
            struct timespec until;
            until = pb_deadline(CLOCK_MONOTONIC, FLUSH_DELAY_MS);
            while (!sv->flush_stop &&
                   pthread_cond_timedwait(&sv->flush_cv, &sv->out_mu, &until) != ETIMEDOUT) {
            }
        }
        if (!sv->out.len) {
            sv->flush_armed = false;
            if (sv->flush_stop) break;
            continue;
        }
        write_gathered(sv, &w);
        pthread_mutex_lock(&sv->out_mu);
    }
    pthread_mutex_unlock(&sv->out_mu);
    pb_buf_free(&w);
    return NULL;
}

/* Appends one error answer line to ans (nothing when out of memory). */
static void send_error(pb_buf *ans, const char *id, int code, const char *msg, const char *kind) {
    size_t start = ans->len;
    char num[32];
    snprintf(num, sizeof num, "%d", code);
    bool ok = pb_buf_puts(ans, "{\"jsonrpc\":\"2.0\",\"id\":") &&
              pb_buf_puts(ans, id ? id : "null") && pb_buf_puts(ans, ",\"error\":{\"code\":") &&
              pb_buf_puts(ans, num) && pb_buf_puts(ans, ",\"message\":") &&
              pr__json_str(ans, msg, strlen(msg));
    if (ok && kind)
        ok = pb_buf_puts(ans, ",\"data\":{\"kind\":") && pr__json_str(ans, kind, strlen(kind)) &&
             pb_buf_putc(ans, '}');
    if (!(ok && pb_buf_puts(ans, "}}\n"))) ans->len = start;
}

/* Runs a parsed request; its answer line goes to ans. memo: the worker thread's. */
static void run_job(server *sv, job *j, pb_buf *ans, pr_cpu_memo *memo) {
    /* A recognised text is passed as the cached program's own bytes: pr_run then still
     * makes every check, and its verified-text memo sees the same pointer (room.c). */
    pr_str program =
        j->prog ? (pr_str){j->prog->text, j->prog->text_len} : (pr_str){j->fields[3], j->lens[3]};
    pr_request req = {{j->fields[0], j->lens[0]},
                      {j->fields[1], j->lens[1]},
                      {j->fields[2], j->lens[2]},
                      program,
                      {j->fields[4], j->lens[4]}};
    pr_response res;
    pr_error err;
    bool ok = pr__run_memo(sv->host, &req, NULL, NULL, memo, &res, &err);
    if (!j->id) {
        if (ok) pr_response_clear(&res);
        return;
    }
    if (!ok) {
        send_error(ans, j->id, -32000, err.message, pr_kind_name(err.kind));
        return;
    }
    size_t start = ans->len;
    if (!(pb_buf_puts(ans, "{\"jsonrpc\":\"2.0\",\"id\":") && pb_buf_puts(ans, j->id) &&
          pb_buf_puts(ans, ",\"result\":{\"output\":") &&
          pr__json_str(ans, res.output, res.output_len) && pb_buf_puts(ans, ",\"isolate\":") &&
          pr__json_str(ans, res.isolate, strlen(res.isolate)) && pb_buf_puts(ans, "}}\n"))) {
        ans->len = start;
        send_error(ans, j->id, -32603, "Internal error", NULL);
    }
    pr_response_clear(&res);
}

static bool parse_line(server *sv, job *j, pb_buf *ans);

/* Takes the first queued job (under mu), or NULL. */
static job *dequeue(server *sv) {
    job *j = sv->head;
    if (!j) return NULL;
    sv->head = j->next;
    if (!sv->head) sv->tail = NULL;
    sv->queued--;
    sv->queued_bytes -= j->n;
    /* Wake the reader once half the queue is free, not per request. */
    if (sv->reader_waits && sv->queued <= sv->max_queued / 2 &&
        sv->queued_bytes <= QUEUE_BYTES / 2) {
        sv->reader_waits = false;
        pthread_cond_signal(&sv->have_room);
    }
    return j;
}

static void *worker_main(void *arg) {
    server *sv = arg;
    pb_buf ans = {0}; /* this worker's answer lines not yet handed to the output */
    /* One CPU-clock reading stands for the start of the runs of the next 1 ms (the
     * CPU limit's start; pr_cpu_memo): no clock system call per request. */
    pr_cpu_memo memo = {0};
    for (;;) {
        pthread_mutex_lock(&sv->mu);
        job *j = dequeue(sv);
        pthread_mutex_unlock(&sv->mu);
        /* With a next request in hand the answer may wait for company; before going
         * idle it is written. */
        emit(sv, &ans, j != NULL);
        if (!j) {
            pthread_mutex_lock(&sv->mu);
            while (!sv->head && !sv->eof) {
                atomic_fetch_add(&sv->idle, 1);
                pthread_cond_wait(&sv->have_job, &sv->mu);
                atomic_fetch_sub(&sv->idle, 1);
            }
            j = dequeue(sv);
            pthread_mutex_unlock(&sv->mu);
            if (!j) break;
        }
        if (parse_line(sv, j, &ans)) run_job(sv, j, &ans, &memo);
        job_free(sv, j);
    }
    pb_buf_free(&ans);
    return NULL;
}

/* Wakes idle workers for the queued requests (the reader is about to read or wait). */
static void wake_workers(server *sv) {
    /* A worker going idle after this load saw the queue the reader filled before. */
    if (!atomic_load(&sv->idle)) return;
    pthread_mutex_lock(&sv->mu);
    size_t idle = atomic_load(&sv->idle), n = idle < sv->queued ? idle : sv->queued;
    pthread_mutex_unlock(&sv->mu);
    for (size_t i = 0; i < n; i++)
        pthread_cond_signal(&sv->have_job);
}

/* Queues j, waiting while the queue is full. */
static void enqueue(server *sv, job *j) {
    pthread_mutex_lock(&sv->mu);
    while (sv->queued && (sv->queued >= sv->max_queued || sv->queued_bytes + j->n > QUEUE_BYTES)) {
        sv->reader_waits = true;
        if (sv->idle) pthread_cond_broadcast(&sv->have_job);
        pthread_cond_wait(&sv->have_room, &sv->mu);
    }
    if (sv->tail)
        sv->tail->next = j;
    else
        sv->head = j;
    sv->tail = j;
    sv->queued++;
    sv->queued_bytes += j->n;
    bool wake = sv->idle && sv->queued >= WAKE_BATCH;
    pthread_mutex_unlock(&sv->mu);
    /* Signalled after unlocking, so the woken worker does not block on mu at once. */
    if (wake) pthread_cond_signal(&sv->have_job);
}

/* Brings the reader's hint up to date with server.seen (a lock only when it changed). */
static void refresh_hint(server *sv, reader_hint *rh) {
    if (atomic_load(&sv->seen_gen) == rh->gen) return;
    pthread_mutex_lock(&sv->mu);
    pr_program *old = rh->prog;
    rh->prog = sv->seen;
    if (rh->prog) atomic_fetch_add(&rh->prog->refs, 1);
    rh->at = sv->seen_at;
    rh->gen = atomic_load(&sv->seen_gen);
    pthread_mutex_unlock(&sv->mu);
    pr_program_release(old);
}

/* The hint's program p was evicted from the cache: the reader lets go of it at its
 * next line (so the hint keeps no evicted program alive beyond one request). */
static void forget_seen(server *sv, pr_program *p) {
    pthread_mutex_lock(&sv->mu);
    pr_program *old = NULL;
    if (sv->seen == p) {
        old = p;
        sv->seen = NULL;
        atomic_fetch_add(&sv->seen_gen, 1);
    }
    pthread_mutex_unlock(&sv->mu);
    pr_program_release(old);
}

/* A worker recognised p's text at offset `at` of a line by the text index: the reader
 * compares the next lines' bytes there with it. */
static void publish_seen(server *sv, pr_program *p, size_t at) {
    pthread_mutex_lock(&sv->mu);
    pr_program *old = NULL;
    if (sv->seen != p || sv->seen_at != at) {
        old = sv->seen;
        atomic_fetch_add(&p->refs, 1);
        sv->seen = p;
        sv->seen_at = at;
        atomic_fetch_add(&sv->seen_gen, 1);
    }
    pthread_mutex_unlock(&sv->mu);
    pr_program_release(old);
}

static const char *const PARAMS[5] = {"runner", "scope", "digest", "program", "input"};

/* The string whose opening quote is at `at` in a validated line, when it holds no
 * backslash: its value is then exactly its raw bytes, line[*start, *start + *len). */
static bool plain_string(const char *line, size_t n, size_t at, size_t *start, size_t *len) {
    const char *s = line + at + 1;
    const char *q = memchr(s, '"', n - at - 1);
    if (!q || memchr(s, '\\', (size_t)(q - s))) return false;
    *start = at + 1;
    *len = (size_t)(q - s);
    return true;
}

/* The decoded string at a member offset (at = offset + 1, 0 = absent) equals want. */
static bool string_is(const char *line, size_t n, size_t at, const char *want) {
    if (!at || line[at - 1] != '"') return false;
    size_t len, start;
    if (plain_string(line, n, at - 1, &start, &len))
        return len == strlen(want) && memcmp(line + start, want, len) == 0;
    char *v = pr__json_string_dup(line, n, at - 1, &len);
    bool eq = v && len == strlen(want) && memcmp(v, want, len) == 0;
    free(v);
    return eq;
}

/* Strings shorter than this are scanned as usual: looking them up costs more. */
#define KNOWN_MIN 64

/* The last string of a request line found to be a cached program's text. */
typedef struct line_match {
    pr_cache *cache;
    size_t at, len; /* its content's offset in the line and its length */
    pr_program *prog;
    bool by_hint; /* prog was the reader's hint */
    /* The reader's hint (job.hint, moved here: one reference, tried once), or NULL. */
    pr_program *hint;
    size_t hint_at;
    /* The hint, when its program has left the cache since (one reference): the
     * server then forgets it as the reader's hint. */
    pr_program *evicted;
} line_match;

/* The scanner's `known` hook (pr_json_keys): is the string at `at` a cached program's
 * text? The closing quote is found with memchr; when the bytes before it are byte for
 * byte a cached JSON-plain text (length and sample hash, then memcmp), they are that
 * string's whole content (a plain text has no backslash, so that quote is not escaped)
 * and need no scanning, no UTF-8 check and no copy.
 * When the reader has already compared the bytes at `at` with a cached text (the
 * hint), only the byte after them is read: a '"' there is the quote memchr would find
 * (the text holds none), so the answer is the same without reading the text again. */
/* m's program is now p (m's reference), known by its text at s[at..at+len). */
static size_t matched(line_match *m, pr_program *p, size_t at, size_t len, bool by_hint) {
    pr_program_release(m->prog);
    m->prog = p;
    m->at = at;
    m->len = len;
    m->by_hint = by_hint;
    return len;
}

static size_t known_text(void *ud, const char *s, size_t n, size_t at) {
    line_match *m = ud;
    if (n - at < KNOWN_MIN) return 0;
    if (m->hint && at == m->hint_at) {
        pr_program *h = m->hint;
        size_t len = h->text_len;
        m->hint = NULL;
        if (len < n - at && s[at + len] == '"') {
            if (pr__cache_claim_text(m->cache, h)) return matched(m, h, at, len, true);
            m->evicted = h; /* not used: an evicted program is not found by its text */
        } else {
            pr_program_release(h);
        }
    }
    const char *q = memchr(s + at, '"', n - at);
    size_t len = q ? (size_t)(q - (s + at)) : 0;
    if (len < KNOWN_MIN) return 0;
    pr_program *p = pr__cache_find_text(m->cache, s + at, len);
    if (!p) return 0;
    return matched(m, p, at, len, false);
}

/* The line is valid UTF-8; the recognised text (ASCII) is not read again. */
static bool line_utf8(const char *line, size_t n, const line_match *m) {
    const uint8_t *u = (const uint8_t *)line;
    if (!m->prog) return pr__utf8_valid(u, n);
    return pr__utf8_valid(u, m->at) && pr__utf8_valid(u + m->at + m->len, n - m->at - m->len);
}

/* Checks one request line (in a worker) and fills j's id and fields, or answers it
 * with an error and returns false. The room's own strict JSON parser reads it in one
 * pass (the params' members are found on the way): no tree is built, the id is echoed
 * back exactly as the client wrote it, and the program text is either recognised as a
 * cached one (known_text) or copied once. */
static bool parse_line(server *sv, job *j, pb_buf *ans) {
    const char *line = j->line;
    size_t n = j->n;
    static const char *const TOP[4] = {"jsonrpc", "id", "method", "params"};
    size_t at[4], pat[5];
    line_match m = {&sv->host->cache, 0, 0, NULL, false, j->hint, j->hint_at, NULL};
    j->hint = NULL; /* moved into m */
    pr_json_keys params = {.names = PARAMS, .n = 5, .at = pat};
    pr_json_keys top = {.names = TOP,
                        .n = 4,
                        .at = at,
                        .sub = &params,
                        .sub_of = 3,
                        .known = known_text,
                        .known_ud = &m};
    bool valid = pr__json_scan(line, n, &top) && line_utf8(line, n, &m);
    pr_program_release(m.hint); /* not reached by the scan */
    if (m.evicted) {
        forget_seen(sv, m.evicted);
        pr_program_release(m.evicted);
    }
    /* Used only when it is the (last) program member's value. */
    if (m.prog && pat[3] == m.at) {
        j->prog = m.prog;
        j->lens[3] = m.len;
        if (!m.by_hint) publish_seen(sv, m.prog, m.at);
    } else {
        pr_program_release(m.prog);
    }
    if (!valid) {
        send_error(ans, NULL, -32700, "Parse error", NULL);
        return false;
    }
    size_t i = 0;
    while (i < n && (line[i] == ' ' || line[i] == '\t' || line[i] == '\r' || line[i] == '\n'))
        i++;
    bool is_obj = i < n && line[i] == '{';
    char *id = NULL;
    if (is_obj && at[1]) {
        char k = line[at[1] - 1];
        if (!(k == '"' || k == 'n' || k == '-' || (k >= '0' && k <= '9'))) {
            send_error(ans, NULL, -32600, "Invalid Request", NULL);
            return false;
        }
        size_t end = pr__json_value_end(line, n, at[1] - 1);
        id = strndup(line + at[1] - 1, end - (at[1] - 1));
        if (!id) {
            send_error(ans, NULL, -32603, "Internal error", NULL);
            return false;
        }
    }
    if (!is_obj || !string_is(line, n, at[0], "2.0") || !at[2] || line[at[2] - 1] != '"') {
        send_error(ans, id, -32600, "Invalid Request", NULL);
        free(id);
        return false;
    }
    if (!string_is(line, n, at[2], "isolate/run")) {
        if (id) send_error(ans, id, -32601, "Method not found", NULL);
        free(id);
        return false;
    }
    j->id = id; /* freed with j from here on */
    for (int f = 0; f < 5; f++) {
        if (!pat[f] || line[pat[f] - 1] != '"') {
            if (id) send_error(ans, id, -32602, "Invalid params", NULL);
            return false;
        }
        if (f == 3 && j->prog) continue;
        size_t start;
        if (plain_string(line, n, pat[f] - 1, &start, &j->lens[f])) {
            j->fields[f] = line + start; /* the job holds the line's chunk */
            continue;
        }
        j->fields[f] = j->owned[f] = pr__json_string_dup(line, n, pat[f] - 1, &j->lens[f]);
        if (!j->fields[f]) {
            if (id) send_error(ans, id, -32603, "Internal error", NULL);
            return false;
        }
    }
    return true;
}

/* The reading thread only splits lines: parsing a request (a 56 KB program text is
 * usual) is left to the workers, so that more workers also parse more requests. */
/* An error answer from the reading thread, written at once. */
static void reader_error(server *sv, int code, const char *msg) {
    pb_buf b = {0};
    send_error(&b, NULL, code, msg, NULL);
    emit(sv, &b, false);
    pb_buf_free(&b);
}

/* Queues the line at c->data[at..at+n) (a new reference to c); `hit`: its bytes at
 * rh->at are rh's text. */
static void queue_line(server *sv, chunk *c, size_t at, size_t n, bool hit, reader_hint *rh) {
    job *j = calloc(1, sizeof *j);
    if (!j) {
        reader_error(sv, -32603, "Internal error");
        return;
    }
    atomic_fetch_add(&c->refs, 1);
    j->chunk = c;
    j->line = c->data + at;
    j->n = n;
    if (hit) {
        atomic_fetch_add(&rh->prog->refs, 1);
        j->hint = rh->prog;
        j->hint_at = rh->at;
    }
    enqueue(sv, j);
}

static bool blank(const char *s, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (s[i] != ' ' && s[i] != '\t' && s[i] != '\r') return false;
    return true;
}

int pr_serve(pr_host *h, int in_fd, int out_fd, unsigned workers) {
    if (workers < 1) workers = 1;
    server sv;
    memset(&sv, 0, sizeof sv);
    sv.host = h;
    sv.out_fd = out_fd;
    sv.max_queued = QUEUE_PER_WORKER * (size_t)workers;
    atomic_init(&sv.seen_gen, 0);
    pthread_mutex_init(&sv.mu, NULL);
    pthread_mutex_init(&sv.out_mu, NULL);
    pthread_mutex_init(&sv.io_mu, NULL);
    atomic_init(&sv.idle, 0);
    pthread_cond_init(&sv.have_job, NULL);
    pthread_cond_init(&sv.have_room, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&sv.flush_cv, &ca);
    pthread_condattr_destroy(&ca);
    /* Best effort, for pipes only (other descriptors refuse it harmlessly). */
    (void)fcntl(in_fd, F_SETPIPE_SZ, PIPE_BYTES);
    (void)fcntl(out_fd, F_SETPIPE_SZ, PIPE_BYTES);
    pthread_t flusher;
    bool flushing = pthread_create(&flusher, NULL, flusher_main, &sv) == 0;
    pthread_t *tids = calloc(workers, sizeof *tids);
    unsigned started = 0;
    int rc = 0;
    if (!tids || !flushing) rc = -1;
    for (unsigned i = 0; rc == 0 && i < workers; i++) {
        if (pthread_create(&tids[i], NULL, worker_main, &sv) != 0) break;
        started++;
    }
    if (!started) rc = -1;

    /* The current chunk holds bytes [0, len); the current line begins at start and
     * has no '\n' before scan. Bytes before start may belong to queued jobs. */
    chunk *cur = rc == 0 ? chunk_take(&sv, CHUNK_BYTES) : NULL;
    size_t len = 0, start = 0, scan = 0;
    bool skipping = false; /* inside an over-long line: drop until its newline */
    /* The hint: the current line's bytes from start + rh.at are being compared with
     * rh's text (hint_on; [start + rh.at, scan) matched so far), or all of them matched
     * (hint_hit). A plain text holds no '\n', so matched bytes need no newline search:
     * each byte of the line is still looked at once, by memchr or memcmp. */
    reader_hint rh = {NULL, 0, 0};
    bool hint_on = false, hint_hit = false;
    bool fresh = true; /* no byte of the current line seen yet */
    if (!cur) rc = -1;
    while (rc == 0) {
        char *nl = NULL;
        if (fresh && len > start) {
            /* The hint is taken when the line's first bytes are in: by then a worker
             * may have recognised the text of the line before. */
            fresh = false;
            refresh_hint(&sv, &rh);
            hint_on = rh.prog != NULL && !skipping;
        }
        if (hint_on) {
            size_t t0 = start + rh.at, t1 = t0 + rh.prog->text_len;
            if (scan < t0) {
                size_t lim = len < t0 ? len : t0;
                nl = lim > scan ? memchr(cur->data + scan, '\n', lim - scan) : NULL;
                if (nl)
                    hint_on = false;
                else
                    scan = lim;
            }
            if (hint_on && scan >= t0) {
                size_t lim = len < t1 ? len : t1;
                if (memcmp(cur->data + scan, rh.prog->text + (scan - t0), lim - scan) == 0) {
                    scan = lim;
                    hint_hit = scan == t1;
                    hint_on = !hint_hit;
                } else {
                    hint_on = false; /* the newline search goes on from scan */
                }
            }
        }
        if (!nl) nl = len > scan ? memchr(cur->data + scan, '\n', len - scan) : NULL;
        if (nl) {
            size_t end = (size_t)(nl - cur->data);
            if (!skipping && end - start > LINE_MAX_BYTES)
                reader_error(&sv, -32600, "Invalid Request");
            else if (!skipping && !blank(cur->data + start, end - start))
                queue_line(&sv, cur, start, end - start, hint_hit, &rh);
            skipping = false;
            start = scan = end + 1;
            hint_on = hint_hit = false;
            fresh = true;
            continue;
        }
        scan = len;
        if (len - start > LINE_MAX_BYTES) {
            if (!skipping) reader_error(&sv, -32600, "Invalid Request");
            skipping = true;
            hint_on = hint_hit = false;
            start = scan = len; /* dropped */
        }
        if (len == cur->cap) {
            /* Full: the cut line moves to the front, in place when no job holds this
             * chunk any more, else into a new chunk (twice its size when it is long). */
            size_t part = len - start;
            if (atomic_load(&cur->refs) == 1 && part < cur->cap / 2) {
                memmove(cur->data, cur->data + start, part);
            } else {
                chunk *next = chunk_take(&sv, part < CHUNK_BYTES / 2 ? CHUNK_BYTES : part * 2);
                if (!next) {
                    rc = -1;
                    break;
                }
                memcpy(next->data, cur->data + start, part);
                chunk_release(&sv, cur);
                cur = next;
            }
            len = scan = part;
            start = 0;
        }
        wake_workers(&sv);
        ssize_t k = read(in_fd, cur->data + len, cur->cap - len);
        if (k < 0 && errno == EINTR) continue;
        if (k < 0) rc = -1;
        if (k <= 0) break;
        len += (size_t)k;
    }
    if (rc == 0 && !skipping && len > start && !blank(cur->data + start, len - start))
        queue_line(&sv, cur, start, len - start, false, &rh);
    chunk_release(&sv, cur);
    pr_program_release(rh.prog);

    pthread_mutex_lock(&sv.mu);
    sv.eof = true;
    pthread_cond_broadcast(&sv.have_job);
    pthread_mutex_unlock(&sv.mu);
    for (unsigned i = 0; i < started; i++)
        pthread_join(tids[i], NULL);
    free(tids);
    if (flushing) { /* writes what is left */
        pthread_mutex_lock(&sv.out_mu);
        sv.flush_stop = true;
        pthread_cond_signal(&sv.flush_cv);
        pthread_mutex_unlock(&sv.out_mu);
        pthread_join(flusher, NULL);
    }
    pb_buf_free(&sv.out);
    pr_program_release(sv.seen);
    pthread_cond_destroy(&sv.flush_cv);
    while (sv.spare) {
        chunk *c = sv.spare;
        sv.spare = c->next;
        free(c);
    }
    pthread_cond_destroy(&sv.have_job);
    pthread_cond_destroy(&sv.have_room);
    pthread_mutex_destroy(&sv.mu);
    pthread_mutex_destroy(&sv.out_mu);
    pthread_mutex_destroy(&sv.io_mu);
    return rc == 0 && !sv.io_error ? 0 : -1;
}
