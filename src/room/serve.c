/*
 * serve.c — `isolate serve`: newline-delimited JSON-RPC 2.0. The calling thread
 * splits the input into lines; `workers` threads check and run them (pr_run) and write each
 * answer as one line under a mutex, so answers may come out of order (matched by
 * id). The queue is bounded: a fast client is slowed down rather than buffered
 * without limit. Method: "isolate/run", params {runner, scope, digest, program,
 * input} (strings); result {"output", "isolate"}; a contract exception is error
 * -32000 with data.kind; malformed requests get the standard codes (a JSON array,
 * i.e. a batch, is answered -32600).
 */
#include "room_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define LINE_MAX_BYTES (64u << 20)

typedef struct job {
    struct job *next;
    char *line; /* the request as read; parsed by the worker, then freed */
    size_t n;
    char *id; /* serialised JSON id, or NULL for a notification */
    char *fields[5];
    size_t lens[5];
} job;

typedef struct server {
    pr_host *host;
    int out_fd;
    pthread_mutex_t mu, out_mu;
    pthread_cond_t have_job, have_room;
    job *head, *tail;
    size_t queued, max_queued;
    bool eof;
    bool io_error;
} server;

static void job_free(job *j) {
    if (!j) return;
    free(j->line);
    free(j->id);
    for (int i = 0; i < 5; i++)
        free(j->fields[i]);
    free(j);
}

static void write_line(server *sv, pr_buf *b) {
    if (!pr_buf_putc(b, '\n')) return;
    pthread_mutex_lock(&sv->out_mu);
    size_t off = 0;
    while (off < b->len) {
        ssize_t k = write(sv->out_fd, b->p + off, b->len - off);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) {
            sv->io_error = true;
            break;
        }
        off += (size_t)k;
    }
    pthread_mutex_unlock(&sv->out_mu);
}

static void send_error(server *sv, const char *id, int code, const char *msg, const char *kind) {
    pr_buf b = {0};
    char num[32];
    snprintf(num, sizeof num, "%d", code);
    bool ok = pr_buf_puts(&b, "{\"jsonrpc\":\"2.0\",\"id\":") &&
              pr_buf_puts(&b, id ? id : "null") && pr_buf_puts(&b, ",\"error\":{\"code\":") &&
              pr_buf_puts(&b, num) && pr_buf_puts(&b, ",\"message\":") &&
              pr_json_str(&b, msg, strlen(msg));
    if (ok && kind)
        ok = pr_buf_puts(&b, ",\"data\":{\"kind\":") && pr_json_str(&b, kind, strlen(kind)) &&
             pr_buf_putc(&b, '}');
    if (ok && pr_buf_puts(&b, "}}")) write_line(sv, &b);
    pr_buf_free(&b);
}

static void run_job(server *sv, job *j) {
    pr_request req = {{j->fields[0], j->lens[0]},
                      {j->fields[1], j->lens[1]},
                      {j->fields[2], j->lens[2]},
                      {j->fields[3], j->lens[3]},
                      {j->fields[4], j->lens[4]}};
    pr_response res;
    pr_error err;
    bool ok = pr_run(sv->host, &req, &res, &err);
    if (!j->id) {
        if (ok) pr_response_clear(&res);
        return;
    }
    if (!ok) {
        send_error(sv, j->id, -32000, err.message, pr_kind_name(err.kind));
        return;
    }
    pr_buf b = {0};
    if (pr_buf_puts(&b, "{\"jsonrpc\":\"2.0\",\"id\":") && pr_buf_puts(&b, j->id) &&
        pr_buf_puts(&b, ",\"result\":{\"output\":") &&
        pr_json_str(&b, res.output, res.output_len) && pr_buf_puts(&b, ",\"isolate\":") &&
        pr_json_str(&b, res.isolate, strlen(res.isolate)) && pr_buf_puts(&b, "}}"))
        write_line(sv, &b);
    else
        send_error(sv, j->id, -32603, "Internal error", NULL);
    pr_buf_free(&b);
    pr_response_clear(&res);
}

static bool parse_line(server *sv, job *j);

static void *worker_main(void *arg) {
    server *sv = arg;
    for (;;) {
        pthread_mutex_lock(&sv->mu);
        while (!sv->head && !sv->eof)
            pthread_cond_wait(&sv->have_job, &sv->mu);
        job *j = sv->head;
        if (!j) {
            pthread_mutex_unlock(&sv->mu);
            return NULL;
        }
        sv->head = j->next;
        if (!sv->head) sv->tail = NULL;
        sv->queued--;
        pthread_cond_signal(&sv->have_room);
        pthread_mutex_unlock(&sv->mu);
        if (parse_line(sv, j)) run_job(sv, j);
        job_free(j);
    }
}

static void enqueue(server *sv, job *j) {
    pthread_mutex_lock(&sv->mu);
    while (sv->queued >= sv->max_queued)
        pthread_cond_wait(&sv->have_room, &sv->mu);
    if (sv->tail)
        sv->tail->next = j;
    else
        sv->head = j;
    sv->tail = j;
    sv->queued++;
    pthread_cond_signal(&sv->have_job);
    pthread_mutex_unlock(&sv->mu);
}

static const char *const PARAMS[5] = {"runner", "scope", "digest", "program", "input"};

/* The decoded string at a member offset (at = offset + 1, 0 = absent) equals want. */
static bool string_is(const char *line, size_t n, size_t at, const char *want) {
    if (!at || line[at - 1] != '"') return false;
    size_t len;
    char *v = pr_json_string_dup(line, n, at - 1, &len);
    bool eq = v && len == strlen(want) && memcmp(v, want, len) == 0;
    free(v);
    return eq;
}

/* Checks one request line (in a worker) and fills j's id and fields, or answers it
 * with an error and returns false. The room's own strict JSON parser reads it: no tree
 * is built, the program text is copied once, and the id is echoed back exactly as the
 * client wrote it. */
static bool parse_line(server *sv, job *j) {
    const char *line = j->line;
    size_t n = j->n;
    static const char *const TOP[4] = {"jsonrpc", "id", "method", "params"};
    size_t at[4], pat[5];
    pr_json_keys top = {TOP, 4, at}, params = {PARAMS, 5, pat};
    if (!pr_utf8_valid((const uint8_t *)line, n) || !pr_json_scan(line, n, &top)) {
        send_error(sv, NULL, -32700, "Parse error", NULL);
        return false;
    }
    size_t i = 0;
    while (line[i] == ' ' || line[i] == '\t' || line[i] == '\r' || line[i] == '\n')
        i++;
    bool is_obj = line[i] == '{';
    char *id = NULL;
    if (is_obj && at[1]) {
        char k = line[at[1] - 1];
        if (!(k == '"' || k == 'n' || k == '-' || (k >= '0' && k <= '9'))) {
            send_error(sv, NULL, -32600, "Invalid Request", NULL);
            return false;
        }
        size_t end = pr_json_value_end(line, n, at[1] - 1);
        id = strndup(line + at[1] - 1, end - (at[1] - 1));
        if (!id) {
            send_error(sv, NULL, -32603, "Internal error", NULL);
            return false;
        }
    }
    if (!is_obj || !string_is(line, n, at[0], "2.0") || !at[2] || line[at[2] - 1] != '"') {
        send_error(sv, id, -32600, "Invalid Request", NULL);
        free(id);
        return false;
    }
    if (!string_is(line, n, at[2], "isolate/run")) {
        if (id) send_error(sv, id, -32601, "Method not found", NULL);
        free(id);
        return false;
    }
    if (at[3])
        pr_json_members(line, n, at[3] - 1, &params);
    else
        memset(pat, 0, sizeof pat);
    j->id = id; /* freed with j from here on */
    for (int f = 0; f < 5; f++) {
        if (!pat[f] || line[pat[f] - 1] != '"') {
            if (id) send_error(sv, id, -32602, "Invalid params", NULL);
            return false;
        }
        j->fields[f] = pr_json_string_dup(line, n, pat[f] - 1, &j->lens[f]);
        if (!j->fields[f]) {
            if (id) send_error(sv, id, -32603, "Internal error", NULL);
            return false;
        }
    }
    free(j->line);
    j->line = NULL;
    return true;
}

/* The reading thread only splits lines: parsing a request (a 56 KB program text is
 * usual) is left to the workers, so that more workers also parse more requests. */
static void queue_line(server *sv, const char *line, size_t n) {
    job *j = calloc(1, sizeof *j);
    char *copy = j ? malloc(n + 1) : NULL;
    if (!copy) {
        free(j);
        send_error(sv, NULL, -32603, "Internal error", NULL);
        return;
    }
    memcpy(copy, line, n);
    copy[n] = 0;
    j->line = copy;
    j->n = n;
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
    sv.max_queued = 4 * (size_t)workers;
    pthread_mutex_init(&sv.mu, NULL);
    pthread_mutex_init(&sv.out_mu, NULL);
    pthread_cond_init(&sv.have_job, NULL);
    pthread_cond_init(&sv.have_room, NULL);
    pthread_t *tids = calloc(workers, sizeof *tids);
    unsigned started = 0;
    int rc = 0;
    if (!tids) rc = -1;
    for (unsigned i = 0; tids && i < workers; i++) {
        if (pthread_create(&tids[i], NULL, worker_main, &sv) != 0) break;
        started++;
    }
    if (!started) rc = -1;

    pr_buf in = {0};
    size_t scan = 0;
    bool skipping = false; /* inside an over-long line: drop until its newline */
    while (rc == 0) {
        char *nl = in.len > scan ? memchr(in.p + scan, '\n', in.len - scan) : NULL;
        if (nl) {
            size_t n = (size_t)(nl - in.p);
            if (!skipping && !blank(in.p, n)) queue_line(&sv, in.p, n);
            skipping = false;
            memmove(in.p, nl + 1, in.len - n - 1);
            in.len -= n + 1;
            scan = 0;
            continue;
        }
        scan = in.len;
        if (in.len > LINE_MAX_BYTES) {
            if (!skipping) send_error(&sv, NULL, -32600, "Invalid Request", NULL);
            skipping = true;
            in.len = scan = 0;
        }
        if (!pr_buf_reserve(&in, 1 << 16)) {
            rc = -1;
            break;
        }
        ssize_t k = read(in_fd, in.p + in.len, in.cap - in.len - 1);
        if (k < 0 && errno == EINTR) continue;
        if (k < 0) rc = -1;
        if (k <= 0) break;
        in.len += (size_t)k;
    }
    if (rc == 0 && !skipping && in.len && !blank(in.p, in.len)) queue_line(&sv, in.p, in.len);
    pr_buf_free(&in);

    pthread_mutex_lock(&sv.mu);
    sv.eof = true;
    pthread_cond_broadcast(&sv.have_job);
    pthread_mutex_unlock(&sv.mu);
    for (unsigned i = 0; i < started; i++)
        pthread_join(tids[i], NULL);
    free(tids);
    pthread_cond_destroy(&sv.have_job);
    pthread_cond_destroy(&sv.have_room);
    pthread_mutex_destroy(&sv.mu);
    pthread_mutex_destroy(&sv.out_mu);
    return rc == 0 && !sv.io_error ? 0 : -1;
}
