/*
 * acp_bench.c — agent host benchmark: ACP overhead per prompt turn against an
 * instant model, memory per idle session, and time to session/load a 10,000-message
 * session.
 *
 * Also the time from session/cancel to the cancelled answer of a streaming prompt.
 *
 * Everything runs in one process: a tiny HTTP server on 127.0.0.1 answers every
 * chat-completions call at once with a canned two-chunk OpenAI stream, the ACP
 * server runs on a thread over a pipe pair (the path `peri print` uses), and the
 * main thread is the client. Usage: peri-acp-bench [TURNS] [SESSIONS] [MESSAGES] [STORE]
 * STORE: a postgresql:// URL to run against instead of a temp SQLite file.
 */
#include "peri/acp.h"
#include "peri/model.h"
#include "peri/store.h"

#include <arpa/inet.h>
#include "peri/json.h"
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

/* ---------------------------------------------------------------- instant model */

static const char sse_body[] =
    "data: {\"id\":\"b\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,"
    "\"delta\":{\"role\":\"assistant\",\"content\":\"ok\"},\"finish_reason\":null}]}\n\n"
    "data: {\"id\":\"b\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,"
    "\"delta\":{},\"finish_reason\":\"stop\"}],\"usage\":{\"prompt_tokens\":5,"
    "\"completion_tokens\":1,\"total_tokens\":6}}\n\n"
    "data: [DONE]\n\n";

static void *serve_conn(void *arg) {
    int fd = (int)(intptr_t)arg;
    char buf[1 << 16];
    size_t have = 0;
    for (;;) {
        char *hdr_end = NULL;
        while (!(hdr_end = memmem(buf, have, "\r\n\r\n", 4))) {
            if (have == sizeof buf) goto out;
            ssize_t n = read(fd, buf + have, sizeof buf - have);
            if (n <= 0) goto out;
            have += (size_t)n;
        }
        size_t hlen = (size_t)(hdr_end - buf) + 4;
        size_t clen = 0;
        char *cl = strcasestr(buf, "content-length:");
        if (cl && cl < hdr_end) clen = strtoul(cl + 15, NULL, 10);
        size_t need = hlen + clen;
        /* Bodies may exceed the buffer: count and discard. */
        size_t got = have;
        int hang = memmem(buf, have, "HANG-NOW", 8) != NULL;
        while (got < need) {
            ssize_t n = read(fd, buf, sizeof buf);
            if (n <= 0) goto out;
            got += (size_t)n;
            hang = hang || memmem(buf, (size_t)n, "HANG-NOW", 8) != NULL;
        }
        have = 0;
        if (hang) {
            /* Start a stream, send one chunk, then nothing until the client leaves. */
            static const char head[] = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\n";
            const char *first = sse_body; /* its first event is the "ok" chunk */
            const char *end = strstr(first, "\n\n") + 2;
            if (write(fd, head, sizeof head - 1) < 0 || write(fd, first, (size_t)(end - first)) < 0)
                goto out;
            while (read(fd, buf, sizeof buf) > 0) {
            }
            goto out;
        }
        /* One write: split writes meet Nagle + delayed ACK (40 ms per turn). */
        char msg[1024];
        int mn = snprintf(msg, sizeof msg,
                          "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
                          "Content-Length: %zu\r\n\r\n%s",
                          sizeof sse_body - 1, sse_body);
        if (write(fd, msg, (size_t)mn) != mn) goto out;
    }
out:
    close(fd);
    return NULL;
}

static void *http_main(void *arg) {
    int ls = (int)(intptr_t)arg;
    for (;;) {
        int fd = accept(ls, NULL, NULL);
        if (fd < 0) return NULL;
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        pthread_t th;
        if (pthread_create(&th, NULL, serve_conn, (void *)(intptr_t)fd) == 0)
            pthread_detach(th);
        else
            close(fd);
    }
}

static int start_http(void) {
    int ls = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t al = sizeof a;
    if (ls < 0 || bind(ls, (struct sockaddr *)&a, sizeof a) || listen(ls, 64) ||
        getsockname(ls, (struct sockaddr *)&a, &al))
        return -1;
    pthread_t th;
    pthread_create(&th, NULL, http_main, (void *)(intptr_t)ls);
    pthread_detach(th);
    return ntohs(a.sin_port);
}

/* ---------------------------------------------------------------- ACP client */

typedef struct client {
    FILE *in;
    int out;
    int next_id;
} client;

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int send_req(client *c, const char *method, pj_t *params) {
    int id = ++c->next_id;
    pj_t *f = pj_pack("{s:s, s:i, s:s, s:o}", "jsonrpc", "2.0", "id", id, "method", method,
                      "params", params);
    char *s = pj_dumps(f, PJ_COMPACT);
    pj_decref(f);
    size_t n = strlen(s);
    if (write(c->out, s, n) != (ssize_t)n || write(c->out, "\n", 1) != 1) id = -1;
    free(s);
    return id;
}

/* Reads frames until the response to id; counts session/update frames. */
static pj_t *wait_resp(client *c, int id, long *updates) {
    char *line = NULL;
    size_t cap = 0;
    pj_t *res = NULL;
    while (getline(&line, &cap, c->in) > 0) {
        pj_t *f = pj_loads(line, 0, NULL);
        if (!f) continue;
        pj_t *fid = pj_object_get(f, "id");
        if (!pj_object_get(f, "method") && pj_is_integer(fid) && pj_integer_value(fid) == id) {
            res = f;
            break;
        }
        if (updates) (*updates)++;
        pj_decref(f);
    }
    free(line);
    return res;
}

/* Reads frames until the next agent_message_chunk update. */
static void wait_update(client *c) {
    char *line = NULL;
    size_t cap = 0;
    while (getline(&line, &cap, c->in) > 0) {
        pj_t *f = pj_loads(line, 0, NULL);
        const char *u = pj_string_value(
            pj_object_get(pj_object_get(pj_object_get(f, "params"), "update"), "sessionUpdate"));
        int hit = u && !strcmp(u, "agent_message_chunk");
        pj_decref(f);
        if (hit) break;
    }
    free(line);
}

static long rss_kb(void) {
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long kb = -1;
    while (f && fgets(line, sizeof line, f))
        if (!strncmp(line, "VmRSS:", 6)) kb = atol(line + 6);
    if (f) fclose(f);
    return kb;
}

static int cmp_d(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

typedef struct srv_job {
    pacp_options opt;
    int in_fd, out_fd;
    char err[256];
} srv_job;

static void *srv_main(void *arg) {
    srv_job *j = arg;
    if (pacp_serve(&j->opt, j->in_fd, j->out_fd, j->err, sizeof j->err))
        fprintf(stderr, "acp_bench: %s\n", j->err);
    close(j->out_fd);
    return NULL;
}

/* Fills a stored session with n messages (user/assistant pairs) directly in the store. */
static int seed_session(const char *db, const char *home, const char *cwd, long n,
                        char id_out[PST_ID_LEN]) {
    pst_error e;
    char mid[PST_ID_LEN], ws[PST_ID_LEN];
    pst_store *s = pst_open(db, &e);
    if (!s || pst_machine_id_resolve(home, NULL, mid, &e) ||
        pst_workspace_ensure(s, mid, cwd, ws, &e))
        return -1;
    pst_thread th;
    pst_thread_new tn = {.workspace_id = ws, .title = "seeded"};
    if (pst_thread_create(s, &tn, &th, &e)) return -1;
    memcpy(id_out, th.id, PST_ID_LEN);
    pst_thread_clear(&th);
    for (long i = 0; i < n; i += 2) {
        char u[160], a[160];
        snprintf(u, sizeof u,
                 "{\"role\":\"user\",\"parts\":[{\"type\":\"text\",\"text\":\"question %ld\"}]}",
                 i);
        snprintf(a, sizeof a,
                 "{\"role\":\"assistant\",\"parts\":[{\"type\":\"text\",\"text\":\"answer %ld "
                 "with a few more words in it\"}]}",
                 i);
        pst_message_in in[2] = {{"user", u, NULL}, {"assistant", a, NULL}};
        if (pst_messages_append(s, id_out, in, 2, NULL, &e)) return -1;
    }
    pst_close(s);
    return 0;
}

int main(int argc, char **argv) {
    long turns = argc > 1 ? atol(argv[1]) : 2000;
    long sessions = argc > 2 ? atol(argv[2]) : 1000;
    long messages = argc > 3 ? atol(argv[3]) : 10000;
    char tmp[] = "/tmp/peri-acp-bench-XXXXXX";
    if (!mkdtemp(tmp)) return 1;
    char home[300], db[300], url[100];
    snprintf(home, sizeof home, "%s", tmp);
    snprintf(db, sizeof db, "%s/bench.db", tmp);
    if (argc > 4 && strlen(argv[4]) < sizeof db) snprintf(db, sizeof db, "%s", argv[4]);
    int port = start_http();
    if (port < 0) return 1;
    snprintf(url, sizeof url, "http://127.0.0.1:%d/v1", port);
    pm_global_init();

    char seeded[PST_ID_LEN];
    if (seed_session(db, home, tmp, messages, seeded)) {
        fprintf(stderr, "acp_bench: seeding failed\n");
        return 1;
    }
    int to[2], from[2];
    if (pipe(to) || pipe(from)) return 1;
    /* The start object: the library reads no environment. */
    char mid[PST_ID_LEN];
    pst_error me;
    if (pst_machine_id_resolve(home, NULL, mid, &me)) return 1;
    pj_t *settings = pj_pack("{s:s, s:{s:{s:s, s:s}}}", "model", "openai:bench", "providers",
                             "openai", "baseUrl", url, "apiKey", "bench");
    srv_job job = {
        .opt = {.cwd = tmp, .settings = settings, .storage = {.locator = db}, .machine_id = mid},
        .in_fd = to[0],
        .out_fd = from[1]};
    pthread_t th;
    pthread_create(&th, NULL, srv_main, &job);
    client c = {.in = fdopen(from[0], "r"), .out = to[1]};
    pj_decref(
        wait_resp(&c, send_req(&c, "initialize", pj_pack("{s:i}", "protocolVersion", 1)), NULL));
    pj_t *r = wait_resp(
        &c, send_req(&c, "session/new", pj_pack("{s:s,s:[]}", "cwd", tmp, "mcpServers")), NULL);
    char sid[64];
    snprintf(sid, sizeof sid, "%s",
             pj_string_value(pj_object_get(pj_object_get(r, "result"), "sessionId")));
    pj_decref(r);

    /* 1. turns against the instant model */
    double *lat = calloc((size_t)turns, sizeof *lat);
    long ok = 0;
    for (long i = 0; i < 50; i++) { /* warm-up */
        pj_t *blocks = pj_pack("[{s:s,s:s}]", "type", "text", "text", "hi");
        pj_decref(wait_resp(&c,
                            send_req(&c, "session/prompt",
                                     pj_pack("{s:s,s:o}", "sessionId", sid, "prompt", blocks)),
                            NULL));
    }
    /* Conversations of 20 turns: each turn resends the whole history to the model,
     * so one endless session would measure history serialisation, not ACP overhead. */
    double t0 = now_s();
    for (long i = 0; i < turns; i++) {
        if (i % 20 == 0) {
            r = wait_resp(
                &c, send_req(&c, "session/new", pj_pack("{s:s,s:[]}", "cwd", tmp, "mcpServers")),
                NULL);
            snprintf(sid, sizeof sid, "%s",
                     pj_string_value(pj_object_get(pj_object_get(r, "result"), "sessionId")));
            pj_decref(r);
        }
        pj_t *blocks = pj_pack("[{s:s,s:s}]", "type", "text", "text", "hi");
        double a = now_s();
        pj_t *resp = wait_resp(&c,
                               send_req(&c, "session/prompt",
                                        pj_pack("{s:s,s:o}", "sessionId", sid, "prompt", blocks)),
                               NULL);
        lat[i] = now_s() - a;
        const char *stop =
            pj_string_value(pj_object_get(pj_object_get(resp, "result"), "stopReason"));
        if (stop && !strcmp(stop, "end_turn")) ok++;
        pj_decref(resp);
    }
    double total = now_s() - t0;
    qsort(lat, (size_t)turns, sizeof *lat, cmp_d);
    printf("turns: %ld in 20-turn sessions (%ld end_turn) in %.2f s = %.0f turns/s; latency p50 "
           "%.3f ms, p99 %.3f ms\n",
           turns, ok, total, (double)turns / total, lat[turns / 2] * 1e3,
           lat[(turns * 99) / 100] * 1e3);
    free(lat);

    /* 2. memory per idle session */
    long before = rss_kb();
    for (long i = 0; i < sessions; i++)
        pj_decref(wait_resp(
            &c, send_req(&c, "session/new", pj_pack("{s:s,s:[]}", "cwd", tmp, "mcpServers")),
            NULL));
    long after = rss_kb();
    printf("idle sessions: %ld, RSS %ld -> %ld KiB = %.1f KiB per session\n", sessions, before,
           after, (double)(after - before) / (double)sessions);

    /* 3. cancel mid-stream: time from session/cancel to the cancelled answer */
    long ncancel = 100;
    double *cl = calloc((size_t)ncancel, sizeof *cl);
    r = wait_resp(&c, send_req(&c, "session/new", pj_pack("{s:s,s:[]}", "cwd", tmp, "mcpServers")),
                  NULL);
    snprintf(sid, sizeof sid, "%s",
             pj_string_value(pj_object_get(pj_object_get(r, "result"), "sessionId")));
    pj_decref(r);
    long cancelled = 0;
    for (long i = 0; i < ncancel; i++) {
        pj_t *blocks = pj_pack("[{s:s,s:s}]", "type", "text", "text", "HANG-NOW");
        int id = send_req(&c, "session/prompt",
                          pj_pack("{s:s,s:o}", "sessionId", sid, "prompt", blocks));
        wait_update(&c); /* the stream is running */
        pj_t *n = pj_pack("{s:s, s:s, s:{s:s}}", "jsonrpc", "2.0", "method", "session/cancel",
                          "params", "sessionId", sid);
        char *txt = pj_dumps(n, PJ_COMPACT);
        pj_decref(n);
        double a = now_s();
        if (write(c.out, txt, strlen(txt)) < 0 || write(c.out, "\n", 1) < 0) return 1;
        free(txt);
        pj_t *resp = wait_resp(&c, id, NULL);
        cl[i] = now_s() - a;
        const char *stop =
            pj_string_value(pj_object_get(pj_object_get(resp, "result"), "stopReason"));
        if (stop && !strcmp(stop, "cancelled")) cancelled++;
        pj_decref(resp);
    }
    qsort(cl, (size_t)ncancel, sizeof *cl, cmp_d);
    printf("cancel mid-stream: %ld/%ld cancelled; session/cancel -> answer p50 %.3f ms, p99 %.3f "
           "ms, max %.3f ms\n",
           cancelled, ncancel, cl[ncancel / 2] * 1e3, cl[(ncancel * 99) / 100] * 1e3,
           cl[ncancel - 1] * 1e3);
    free(cl);

    /* 4. session/load of a seeded session */
    long updates = 0;
    double l0 = now_s();
    r = wait_resp(
        &c,
        send_req(&c, "session/load",
                 pj_pack("{s:s,s:s,s:[]}", "sessionId", seeded, "cwd", tmp, "mcpServers")),
        &updates);
    double lt = now_s() - l0;
    printf("session/load of %ld messages: %.1f ms (%ld replayed updates, %s)\n", messages, lt * 1e3,
           updates, pj_object_get(r, "result") ? "ok" : "error");
    pj_decref(r);

    close(to[1]);
    char *line = NULL;
    size_t cap = 0;
    while (getline(&line, &cap, c.in) > 0) {
    }
    free(line);
    pthread_join(th, NULL);
    pj_decref(settings);
    fclose(c.in);
    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmp);
    if (system(cmd)) return 0;
    return 0;
}
