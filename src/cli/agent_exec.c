/*
 * agent_exec.c — the agent commands of `peri` (acp, print) run in a second program,
 * peri-agent, installed next to peri. `peri` itself links only the engine and the
 * room (libc, libm, pthreads), so `peri run`, `peri wasm`, `peri isolate` and
 * `peri --help` start like a small runtime; only the agent commands load libcurl,
 * SQLite, jansson and OpenSSL (docs/wasi.md, "Cold start"). This file replaces the
 * process image with peri-agent, passing the arguments unchanged.
 */
#include "cli/commands.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define AGENT_NAME "peri-agent"

int peri_cmd_agent(int argc, char **argv) {
    (void)argc;
    char path[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", path, sizeof path - sizeof AGENT_NAME - 1);
    if (n > 0) {
        path[n] = 0;
        char *slash = strrchr(path, '/');
        if (slash) {
            strcpy(slash + 1, AGENT_NAME);
            execv(path, argv - 1);
        }
    }
    execvp(AGENT_NAME, argv - 1); /* not next to peri: try PATH */
    fprintf(stderr, "peri: cannot start %s for \"%s\": %s\n", AGENT_NAME, argv[0], strerror(errno));
    return 1;
}
