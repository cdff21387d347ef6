/*
 * mock_harness.c — fork/exec of the Python mock model server and a tiny libcurl client
 * for its control endpoints.
 */
#include "mock_harness.h"

#include <curl/curl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

bool mock_start(mock_server *m) {
    memset(m, 0, sizeof *m);
    if (access(PERI_MOCK_MODEL, R_OK) != 0 || !*PERI_PYTHON3 || access(PERI_PYTHON3, X_OK) != 0) {
        fprintf(stderr, "mock model server unavailable (python3 or %s missing)\n", PERI_MOCK_MODEL);
        return false;
    }
    snprintf(m->dir, sizeof m->dir, "/tmp/peri-mock-XXXXXX");
    if (!mkdtemp(m->dir)) return false;
    char portfile[128];
    snprintf(portfile, sizeof portfile, "%s/port", m->dir);
    m->pid = fork();
    if (m->pid < 0) return false;
    if (m->pid == 0) {
        char ppid[32];
        snprintf(ppid, sizeof ppid, "%ld", (long)getppid());
        execl(PERI_PYTHON3, "python3", PERI_MOCK_MODEL, "--port-file", portfile, "--quiet",
              "--timeout", "300", "--parent-pid", ppid, (char *)NULL);
        _exit(127);
    }
    for (int i = 0; i < 1000; i++) {
        FILE *f = fopen(portfile, "r");
        if (f) {
            int ok = fscanf(f, "%d", &m->port);
            fclose(f);
            if (ok == 1 && m->port > 0) {
                snprintf(m->base, sizeof m->base, "http://127.0.0.1:%d", m->port);
                return true;
            }
        }
        struct timespec ts = {0, 10000000};
        nanosleep(&ts, NULL);
    }
    mock_stop(m);
    fprintf(stderr, "mock model server did not start\n");
    return false;
}

void mock_stop(mock_server *m) {
    if (m->pid > 0) {
        kill(m->pid, SIGTERM);
        waitpid(m->pid, NULL, 0);
        m->pid = 0;
    }
    if (m->dir[0]) {
        char p[128];
        snprintf(p, sizeof p, "%s/port", m->dir);
        unlink(p);
        rmdir(m->dir);
        m->dir[0] = '\0';
    }
}

typedef struct sbuf {
    char *p;
    size_t n;
} sbuf;

static size_t collect(char *d, size_t s, size_t n, void *ud) {
    sbuf *b = ud;
    char *p = realloc(b->p, b->n + s * n + 1);
    if (!p) return 0;
    memcpy(p + b->n, d, s * n);
    b->n += s * n;
    p[b->n] = '\0';
    b->p = p;
    return s * n;
}

static char *http(mock_server *m, const char *path, const char *post) {
    char url[160];
    snprintf(url, sizeof url, "%s%s", m->base, path);
    CURL *e = curl_easy_init();
    sbuf b = {0};
    if (!e) abort();
    curl_easy_setopt(e, CURLOPT_URL, url);
    if (post) curl_easy_setopt(e, CURLOPT_POSTFIELDS, post);
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, collect);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, &b);
    curl_easy_setopt(e, CURLOPT_TIMEOUT, 10L);
    CURLcode rc = curl_easy_perform(e);
    long status = 0;
    curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &status);
    curl_easy_cleanup(e);
    if (rc != CURLE_OK || status != 200) {
        fprintf(stderr, "mock %s failed: %s %ld %s\n", path, curl_easy_strerror(rc), status,
                b.p ? b.p : "");
        abort();
    }
    return b.p;
}

void mock_script(mock_server *m, const char *json) {
    free(http(m, "/_script", json));
    free(http(m, "/_reset", ""));
}

char *mock_requests(mock_server *m) {
    return http(m, "/_requests", NULL);
}
