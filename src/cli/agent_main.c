/*
 * agent_main.c — peri-agent: the agent commands of `peri` (acp, print, place) in their own
 * program, so that only they load the HTTP and store libraries. `peri acp ...` execs
 * `peri-agent acp ...` (agent_exec.c); the arguments mean the same.
 */
#include "cli/commands.h"

#include <signal.h>
#include <stdio.h>
#include <string.h>

#ifndef PERI_VERSION
#define PERI_VERSION "0.0.0-unknown" /* set by CMake from project(VERSION) */
#endif

int main(int argc, char **argv) {
    /* Every agent command writes to pipes whose reader may be gone (a sandbox that
     * exited early, an editor that closed): that is a write error to report, never a
     * process killed by SIGPIPE. */
    signal(SIGPIPE, SIG_IGN);
    if (argc >= 2 &&
        (!strcmp(argv[1], "--version") || !strcmp(argv[1], "-V") || !strcmp(argv[1], "version"))) {
        printf("peri-agent %s\n", PERI_VERSION);
        return 0;
    }
    if (argc >= 2 && strcmp(argv[1], "acp") == 0) return peri_cmd_acp(argc - 1, argv + 1);
    if (argc >= 2 && strcmp(argv[1], "print") == 0) return peri_cmd_print(argc - 1, argv + 1);
    if (argc >= 2 && strcmp(argv[1], "place") == 0) return peri_cmd_place(argc - 1, argv + 1);
    if (argc >= 2 && strcmp(argv[1], "mcp") == 0) return peri_cmd_mcp(argc - 1, argv + 1);
    if (argc >= 2 && strcmp(argv[1], "tui") == 0) return peri_cmd_tui(argc - 1, argv + 1);
    if (argc >= 2 && strcmp(argv[1], "trust") == 0) return peri_cmd_trust(argc - 1, argv + 1);
    if (argc >= 2 && strcmp(argv[1], "login") == 0) return peri_cmd_login(argc - 1, argv + 1);
    /* `peri python|ruby --allow-network`: the guest's HTTP is here (guest_net.c). */
    if (argc >= 2 && strcmp(argv[1], "python") == 0) return peri_cmd_python(argc - 1, argv + 1);
    if (argc >= 2 && strcmp(argv[1], "ruby") == 0) return peri_cmd_ruby(argc - 1, argv + 1);
    if (argc >= 2) fprintf(stderr, "peri-agent: unknown command \"%s\"\n", argv[1]);
    fprintf(stderr,
            "usage: peri-agent acp|print|place|mcp|tui|trust|login|python|ruby [arguments]\n"
            "       (started by `peri acp`, `peri print`, `peri place`, `peri mcp`, `peri tui`,\n"
            "       `peri trust`, `peri login`, and `peri python|ruby --allow-network`);\n"
            "       peri-agent --version prints the version\n");
    return 2;
}
