/*
 * paw_engine.c — runs the agent module (peri-agent.wasm) under Peri-C's engine host
 * (pwh_*, include/peri/wasmhost.h), with the client on stdin/stdout: the same tests as
 * paw_native.c, with the reactor inside the module instead of linked natively.
 *
 *   paw_engine MODULE.wasm START.json
 *
 * Environment of this test program: PAW_ALLOW (comma-separated host:port the instance
 * may open), PAW_STORE_PASSWORD ("store") and PAW_MODEL_KEY ("model:openai",
 * "model:anthropic"), PAW_TELEMETRY_TOKEN ("telemetry"), PAW_CONNECT_TIMEOUT_MS,
 * PAW_CLOSE_AFTER_MS (pwh_close after that
 * long). Logs go to stderr as "paw: <level>: <text>", the module's report as
 * "paw: settled <json>". Exit status 0 after a settled close, 2 when the start object was
 * refused, 1 otherwise.
 */
#include "peri/wasmhost.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static void on_send(void *ud, const uint8_t *data, size_t len) {
    (void)ud;
    while (len > 0) {
        ssize_t n = write(1, data, len);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return;
        data += n;
        len -= (size_t)n;
    }
}

static void on_log(void *ud, int level, const char *text, size_t len) {
    (void)ud;
    static const char *names[] = {"error", "warning", "info", "debug"};
    fprintf(stderr, "paw: %s: %.*s\n", names[level & 3], (int)len, text);
}

static void on_settled(void *ud, const char *json, size_t len) {
    (void)ud;
    fprintf(stderr, "paw: settled %.*s\n", (int)len, json);
}

static char *read_file(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    char *buf = NULL;
    size_t cap = 0, n = 0;
    for (;;) {
        if (n + 65536 > cap) {
            cap = (n + 65536) * 2;
            char *nb = realloc(buf, cap);
            if (!nb) break;
            buf = nb;
        }
        size_t k = fread(buf + n, 1, cap - n, f);
        n += k;
        if (k == 0) break;
    }
    fclose(f);
    *len = n;
    return buf;
}

static long now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000L + ts.tv_nsec / 1000000L;
}

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: paw_engine MODULE.wasm START.json\n");
        return 1;
    }
    size_t mlen = 0, slen = 0;
    char *bytes = read_file(argv[1], &mlen);
    char *start = read_file(argv[2], &slen);
    if (!bytes || !start) {
        fprintf(stderr, "paw_engine: cannot read the module or the start object\n");
        return 1;
    }
    pw_error pe;
    pw_module *m = pw_module_new((const uint8_t *)bytes, mlen, NULL, &pe);
    free(bytes);
    if (!m) {
        fprintf(stderr, "paw_engine: the module does not load\n");
        return 1;
    }
    const char *allow_env = getenv("PAW_ALLOW");
    char *allow_buf = strdup(allow_env ? allow_env : "");
    const char *allow[32];
    size_t nallow = 0;
    for (char *tok = strtok(allow_buf, ","); tok && nallow < 32; tok = strtok(NULL, ","))
        allow[nallow++] = tok;
    pwh_credential creds[4];
    size_t ncreds = 0;
    if (getenv("PAW_STORE_PASSWORD"))
        creds[ncreds++] = (pwh_credential){"store", getenv("PAW_STORE_PASSWORD")};
    if (getenv("PAW_MODEL_KEY")) {
        creds[ncreds++] = (pwh_credential){"model:openai", getenv("PAW_MODEL_KEY")};
        creds[ncreds++] = (pwh_credential){"model:anthropic", getenv("PAW_MODEL_KEY")};
    }
    if (getenv("PAW_TELEMETRY_TOKEN"))
        creds[ncreds++] = (pwh_credential){"telemetry", getenv("PAW_TELEMETRY_TOKEN")};
    const char *cto = getenv("PAW_CONNECT_TIMEOUT_MS");
    pwh_opts o = {.module = m,
                  .allow = allow,
                  .nallow = nallow,
                  .credentials = creds,
                  .ncredentials = ncreds,
                  .connect_timeout_ms = cto ? (uint32_t)atoi(cto) : 0,
                  .on_send = on_send,
                  .on_log = on_log,
                  .on_settled = on_settled};
    char err[300];
    pwh_instance *w = pwh_new(&o, err, sizeof err);
    if (!w) {
        fprintf(stderr, "paw_engine: %s\n", err);
        return 1;
    }
    int rc = 1;
    if (pwh_start(w, start, slen) != PWH_OK) {
        fprintf(stderr, "paw_engine: start refused: %s\n", pwh_error(w));
        rc = 2;
        pwh_close(w);
    } else {
        const char *cam = getenv("PAW_CLOSE_AFTER_MS");
        long close_at = cam ? now_ms() + atol(cam) : -1;
        bool input_open = true, closed = false;
        char buf[65536];
        for (;;) {
            pwh_settlement se;
            pwh_settlement_get(w, &se);
            if (closed && se.module_reported && se.settled) break;
            if (se.ended) break;
            if (input_open) {
                struct pollfd pf = {.fd = 0, .events = POLLIN};
                if (poll(&pf, 1, 0) > 0) {
                    ssize_t n = read(0, buf, sizeof buf);
                    if (n > 0) {
                        pwh_input(w, buf, (size_t)n);
                    } else if (n == 0 || errno != EINTR) {
                        input_open = false;
                        closed = true;
                        pwh_input_end(w);
                    }
                }
            }
            if (close_at >= 0 && now_ms() >= close_at) {
                close_at = -1;
                closed = true;
                pwh_close(w);
            }
            if (pwh_run_once(w, 10) < 0) break;
        }
        pwh_settlement se;
        pwh_settlement_get(w, &se);
        rc = se.settled && se.module_reported && !se.ended ? 0 : 1;
        if (rc) fprintf(stderr, "paw_engine: not settled (ended %d)\n", se.ended);
    }
    if (rc == 2) {
        for (int i = 0; i < 100; i++) {
            pwh_settlement se;
            pwh_settlement_get(w, &se);
            if (se.settled) break;
            pwh_run_once(w, 20);
        }
    }
    pwh_free(w);
    pw_module_free(m);
    free(start);
    free(allow_buf);
    return rc;
}
