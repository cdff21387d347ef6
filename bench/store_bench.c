/*
 * store_bench.c — session store benchmark: message appends per second on one
 * backend, SQLite or PostgreSQL, through the public pst_* API.
 *
 *   peri-store-bench LOCATOR [APPENDS] [REPS]
 *
 * LOCATOR: an SQLite path (created in a temp dir when it is "sqlite") or a postgresql://
 * URL (an empty database: the store migrates it). Per rep: a fresh thread, APPENDS
 * single-message appends (each its own transaction: what a turn's user message costs),
 * then APPENDS/2 two-message batches (an assistant message + its tool result), then a
 * load of the whole thread. Prints the median of REPS reps for each measure.
 */
#include "peri/store.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int cmp_d(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, int n) {
    qsort(v, (size_t)n, sizeof *v, cmp_d);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: peri-store-bench sqlite|PATH|postgresql://... [APPENDS] [REPS]\n");
        return 2;
    }
    long n = argc > 2 ? atol(argv[2]) : 2000;
    int reps = argc > 3 ? atoi(argv[3]) : 5;
    if (n < 2 || reps < 1 || reps > 50) return 2;
    char tmp[] = "/tmp/peri-store-bench-XXXXXX", path[200];
    const char *loc = argv[1];
    bool made_tmp = false;
    if (!strcmp(loc, "sqlite")) {
        if (!mkdtemp(tmp)) return 1;
        snprintf(path, sizeof path, "%s/bench.db", tmp);
        loc = path;
        made_tmp = true;
    }
    pst_error e;
    pst_store *s = pst_open(loc, &e);
    if (!s) {
        fprintf(stderr, "store-bench: %s\n", e.message);
        return 1;
    }
    const char *mid = "bench000-0000-4000-8000-000000000001";
    char ws[PST_ID_LEN];
    if (pst_workspace_ensure(s, mid, "/bench", ws, &e)) {
        fprintf(stderr, "store-bench: %s\n", e.message);
        return 1;
    }
    double single[50], batch[50], load[50];
    static const char user[] =
        "{\"role\":\"user\",\"parts\":[{\"type\":\"text\",\"text\":\"a question of ordinary "
        "length, about as long as a line typed by a person at a prompt\"}]}";
    static const char asst[] =
        "{\"role\":\"assistant\",\"parts\":[{\"type\":\"tool_call\",\"id\":\"c1\",\"name\":"
        "\"read\",\"arguments\":\"{\\\"path\\\":\\\"src/main.c\\\"}\"}]}";
    static const char tool[] = "{\"role\":\"tool\",\"parts\":[{\"type\":\"tool_result\",\"id\":"
                               "\"c1\",\"text\":\"int main(void) { return 0; }\"}]}";
    for (int r = 0; r < reps; r++) {
        pst_thread th;
        pst_thread_new tn = {.workspace_id = ws};
        if (pst_thread_create(s, &tn, &th, &e)) {
            fprintf(stderr, "store-bench: %s\n", e.message);
            return 1;
        }
        pst_message_in one = {"user", user, NULL};
        double t0 = now_s();
        for (long i = 0; i < n; i++)
            if (pst_messages_append(s, th.id, &one, 1, NULL, &e)) {
                fprintf(stderr, "store-bench: %s\n", e.message);
                return 1;
            }
        single[r] = (double)n / (now_s() - t0);
        pst_message_in two[2] = {{"assistant", asst, NULL}, {"tool", tool, NULL}};
        t0 = now_s();
        for (long i = 0; i < n / 2; i++)
            if (pst_messages_append(s, th.id, two, 2, NULL, &e)) {
                fprintf(stderr, "store-bench: %s\n", e.message);
                return 1;
            }
        batch[r] = (double)(n / 2 * 2) / (now_s() - t0);
        pst_message_list l;
        t0 = now_s();
        if (pst_messages_load(s, th.id, &l, &e)) return 1;
        load[r] = (now_s() - t0) * 1e3;
        if ((long)l.count != n + n / 2 * 2) {
            fprintf(stderr, "store-bench: %zu messages, want %ld\n", l.count, n + n / 2 * 2);
            return 1;
        }
        pst_message_list_clear(&l);
        pst_thread_clear(&th);
    }
    printf("%s: single-message appends %.0f/s, 2-message batches %.0f messages/s, "
           "load of %ld messages %.1f ms (medians of %d)\n",
           pst_backend_name(s), median(single, reps), median(batch, reps), n + n / 2 * 2,
           median(load, reps), reps);
    pst_close(s);
    if (made_tmp) {
        char cmd[300];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmp);
        if (system(cmd)) return 0;
    }
    return 0;
}
