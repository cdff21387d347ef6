/*
 * agent_exec.c — the agent commands of `peri` (acp, print) run in a second program,
 * peri-agent, found by peri_locate (locate.c): beside peri or in PREFIX/libexec/peri. `peri` itself
 * links only the engine and the room (libc, libm, pthreads), so `peri run`, `peri wasm`, `peri
 * isolate` and `peri --help` start like a small runtime; only the agent commands load libcurl,
 * SQLite and OpenSSL (docs/wasi.md, "Cold start"). This file replaces the
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
    if (peri_locate(AGENT_NAME, path, sizeof path)) {
        execv(path, argv - 1);
        fprintf(stderr, "peri: cannot start %s for `peri %s`: %s\n", path, argv[0],
                strerror(errno));
        return 1;
    }
    execvp(AGENT_NAME, argv - 1); /* neither beside peri nor in its libexec: try PATH */
    fprintf(stderr,
            "peri: `peri %s` needs the program %s, which was found neither beside peri, nor in\n"
            "  ../libexec/peri/ relative to it, nor on PATH. Install both with `make install`\n"
            "  (or the .deb), or run peri from the build folder that holds both.\n",
            argv[0], AGENT_NAME);
    return 1;
}
