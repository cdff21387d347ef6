/*
 * mock_harness.h — start/stop tests/host/mock_model.py from a C test and talk to its
 * control endpoints (/_script, /_requests).
 */
#ifndef PERI_TEST_MOCK_HARNESS_H
#define PERI_TEST_MOCK_HARNESS_H

#include <stdbool.h>
#include <sys/types.h>

typedef struct mock_server {
    pid_t pid;
    int port;
    char base[64]; /* "http://127.0.0.1:<port>" */
    char dir[64];
} mock_server;

/* false (with a message on stderr) when python3 or the script is unavailable. */
bool mock_start(mock_server *m);
void mock_stop(mock_server *m);
/* POST /_script; aborts the test on failure. */
void mock_script(mock_server *m, const char *json);
/* GET /_requests (malloc'd JSON text). */
char *mock_requests(mock_server *m);

#endif
