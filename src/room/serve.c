/*
 * serve.c — `isolate serve`: newline-delimited JSON-RPC 2.0. The calling thread
 * reads and checks requests; `workers` threads run them (pr_run) and write each
 * answer as one line under a mutex, so answers may come out of order (matched by
 * id). The queue is bounded: a fast client is slowed down rather than buffered
 * without limit. Method: "isolate/run", params {runner, scope, digest, program,
 * input} (strings); result {"output", "isolate"}; a contract exception is error
 * -32000 with data.kind; malformed requests get the standard codes.
 */
#include "room_int.h"

#include <errno.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define LINE_MAX_BYTES (64u << 20)

typedef struct job {
    struct job *next;
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
        run_job(sv, j);
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

/* Checks one request line and queues it (or answers it with an error at once). */
static void handle_line(server *sv, const char *line, size_t n) {
    json_error_t je;
    json_t *req = json_loadb(line, n, JSON_ALLOW_NUL | JSON_DECODE_ANY, &je);
    if (!req) {
        send_error(sv, NULL, -32700, "Parse error", NULL);
        return;
    }
    char *id = NULL;
    json_t *jid = json_is_object(req) ? json_object_get(req, "id") : NULL;
    if (jid && !(json_is_string(jid) || json_is_number(jid) || json_is_null(jid))) {
        send_error(sv, NULL, -32600, "Invalid Request", NULL);
        goto out;
    }
    if (jid && !(id = json_dumps(jid, JSON_ENCODE_ANY | JSON_COMPACT))) {
        send_error(sv, NULL, -32603, "Internal error", NULL);
        goto out;
    }
    json_t *ver = json_is_object(req) ? json_object_get(req, "jsonrpc") : NULL;
    json_t *method = json_is_object(req) ? json_object_get(req, "method") : NULL;
    if (!json_is_object(req) || !json_is_string(ver) ||
        strcmp(json_string_value(ver), "2.0") != 0 || !json_is_string(method)) {
        send_error(sv, id ? id : NULL, -32600, "Invalid Request", NULL);
        goto out;
    }
    if (strcmp(json_string_value(method), "isolate/run") != 0) {
        if (id) send_error(sv, id, -32601, "Method not found", NULL);
        goto out;
    }
    json_t *params = json_object_get(req, "params");
    job *j = calloc(1, sizeof *j);
    if (!j) {
        if (id) send_error(sv, id, -32603, "Internal error", NULL);
        goto out;
    }
    for (int i = 0; i < 5; i++) {
        json_t *v = json_is_object(params) ? json_object_get(params, PARAMS[i]) : NULL;
        if (!json_is_string(v)) {
            if (id) send_error(sv, id, -32602, "Invalid params", NULL);
            job_free(j);
            goto out;
        }
        size_t l = json_string_length(v);
        j->fields[i] = malloc(l + 1);
        if (!j->fields[i]) {
            if (id) send_error(sv, id, -32603, "Internal error", NULL);
            job_free(j);
            goto out;
        }
        memcpy(j->fields[i], json_string_value(v), l + 1);
        j->lens[i] = l;
    }
    j->id = id;
    id = NULL;
    json_decref(req);
    req = NULL;
    enqueue(sv, j);
out:
    free(id);
    json_decref(req);
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
            if (!skipping && !blank(in.p, n)) handle_line(&sv, in.p, n);
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
    if (rc == 0 && !skipping && in.len && !blank(in.p, in.len)) handle_line(&sv, in.p, in.len);
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
