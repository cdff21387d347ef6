/*
 * probe.c — test driver for the MCP client (tests/mcp/interop.py): connects to one
 * server and runs actions, printing one JSON line per action on stdout.
 *
 *   mcp_probe --stdio CMD [ARG...] -- ACTION...
 *   mcp_probe --http URL ACTION...      mcp_probe --sse URL ACTION...
 *   mcp_probe --header NAME VALUE --http URL ACTION...   (one extra request header)
 *   mcp_probe --inproc ROOT ACTION...
 * Actions: list | ping | call NAME ARGS | progress NAME ARGS | cancel MS NAME ARGS |
 *          request METHOD PARAMS
 */
#include "peri/mcp.h"

#include <curl/curl.h>
#include "peri/json.h"
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static long now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000L + ts.tv_nsec / 1000000L;
}

typedef struct canceller {
    atomic_int *flag;
    long ms;
} canceller;

static void *cancel_main(void *arg) {
    canceller *c = arg;
    usleep((useconds_t)c->ms * 1000);
    atomic_store(c->flag, 1);
    return NULL;
}

typedef struct progress_log {
    pj_t *arr;
} progress_log;

static void on_progress(void *ctx, double p, double total, const char *msg) {
    progress_log *l = ctx;
    pj_array_append_new(l->arr,
                        pj_pack("{s:f, s:f, s:s?}", "progress", p, "total", total, "message", msg));
}

static void print_call(pmcp_status st, pmcp_call_result *r, pj_t *extra) {
    char *acp = pmcp_content_to_acp(r->content_json);
    pj_t *o =
        pj_pack("{s:i, s:b, s:s?, s:o?, s:o?}", "status", st, "isError", r->is_error, "text",
                r->text, "content", r->content_json ? pj_loads(r->content_json, 0, NULL) : NULL,
                "acp", acp ? pj_loads(acp, 0, NULL) : NULL);
    free(acp);
    if (extra) pj_object_update(o, extra);
    char *s = pj_dumps(o, PJ_COMPACT);
    puts(s ? s : "{}");
    fflush(stdout);
    free(s);
    pj_decref(o);
    pj_decref(extra);
}

int main(int argc, char **argv) {
    curl_global_init(CURL_GLOBAL_DEFAULT);
    signal(SIGPIPE, SIG_IGN); /* a dead server is a write error, not a crash */
    pmcp_server_config cfg = {.name = "probe"};
    int i = 1;
    pmcp_kv hdr;
    if (argc > 4 && !strcmp(argv[1], "--header")) {
        hdr.name = argv[2];
        hdr.value = argv[3];
        cfg.headers = &hdr;
        cfg.nheaders = 1;
        i = 4;
    }
    if (argc < i + 2) return 2;
    if (!strcmp(argv[i], "--stdio")) {
        cfg.kind = PMCP_STDIO;
        cfg.command = argv[++i];
        cfg.args = &argv[i + 1];
        while (i + 1 < argc && strcmp(argv[i + 1], "--") != 0) {
            i++;
            cfg.nargs++;
        }
        i += 2;
    } else if (!strcmp(argv[i], "--http") || !strcmp(argv[i], "--sse")) {
        cfg.kind = !strcmp(argv[i], "--http") ? PMCP_HTTP : PMCP_SSE;
        cfg.url = argv[++i];
        i++;
    } else if (!strcmp(argv[i], "--inproc")) {
        cfg.kind = PMCP_INPROC;
        cfg.root = argv[++i];
        i++;
    } else {
        return 2;
    }
    char err[512];
    pmcp_client_opts co = {
        .init_timeout_ms = 20000, .call_timeout_ms = 30000, .log = {pb_log_to_file, stderr}};
    long t0 = now_ms();
    pmcp_client *c = pmcp_client_connect(&cfg, &co, err, sizeof err);
    if (!c) {
        pj_t *e = pj_string(err);
        char *es = pj_dumps(e, PJ_ENCODE_ANY);
        printf("{\"connect\":false,\"error\":%s}\n", es ? es : "null");
        free(es);
        pj_decref(e);
        curl_global_cleanup();
        return 1;
    }
    printf("{\"connect\":true,\"protocol\":\"%s\",\"ms\":%ld}\n", pmcp_client_protocol(c),
           now_ms() - t0);
    fflush(stdout);
    int rc = 0;
    while (i < argc) {
        const char *a = argv[i++];
        if (!strcmp(a, "list")) {
            pmcp_tool *t;
            size_t n;
            pj_t *names = pj_array();
            if (pmcp_client_tools(c, &t, &n) == 0) {
                for (size_t k = 0; k < n; k++)
                    pj_array_append_new(names, pj_string(t[k].name));
                pmcp_tools_free(t, n);
            }
            pj_t *o = pj_pack("{s:o}", "tools", names);
            char *s = pj_dumps(o, PJ_COMPACT);
            puts(s);
            free(s);
            pj_decref(o);
        } else if (!strcmp(a, "ping") || (!strcmp(a, "request") && i + 1 < argc)) {
            const char *m = !strcmp(a, "ping") ? "ping" : argv[i++];
            const char *p = !strcmp(a, "ping") ? NULL : argv[i++];
            char *res = NULL;
            pmcp_status st = pmcp_client_request(c, m, p, NULL, 10000, &res, err, sizeof err);
            pj_t *o = pj_pack("{s:s, s:i, s:o?, s:s}", "method", m, "status", st, "result",
                              res ? pj_loads(res, 0, NULL) : NULL, "error", st ? err : "");
            char *s = pj_dumps(o, PJ_COMPACT);
            puts(s);
            free(s);
            free(res);
            pj_decref(o);
        } else if ((!strcmp(a, "call") || !strcmp(a, "progress")) && i + 1 < argc) {
            const char *name = argv[i++], *args = argv[i++];
            progress_log pl = {.arr = pj_array()};
            pmcp_call_result r;
            pmcp_status st = pmcp_client_call(
                c, name, args, NULL, !strcmp(a, "progress") ? on_progress : NULL, &pl, 0, &r);
            print_call(st, &r, pj_pack("{s:o}", "progress", pl.arr));
            pmcp_call_result_clear(&r);
        } else if (!strcmp(a, "cancel") && i + 2 < argc) {
            long ms = atol(argv[i++]);
            const char *name = argv[i++], *args = argv[i++];
            atomic_int flag = 0;
            canceller cc = {&flag, ms};
            pthread_t th;
            pthread_create(&th, NULL, cancel_main, &cc);
            long s0 = now_ms();
            pmcp_call_result r;
            pmcp_status st = pmcp_client_call(c, name, args, &flag, NULL, NULL, 0, &r);
            long el = now_ms() - s0;
            pthread_join(th, NULL);
            print_call(st, &r, pj_pack("{s:I}", "elapsed_ms", (pj_int_t)el));
            pmcp_call_result_clear(&r);
        } else {
            fprintf(stderr, "probe: bad action %s\n", a);
            rc = 2;
            break;
        }
        fflush(stdout);
    }
    t0 = now_ms();
    pmcp_client_close(c);
    printf("{\"closed\":true,\"ms\":%ld}\n", now_ms() - t0);
    curl_global_cleanup();
    return rc;
}
