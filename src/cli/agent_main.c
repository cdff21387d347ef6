/*
 * agent_main.c — peri-agent: the agent commands of `peri` (acp, print, place) in their own
 * program, so that only they load the HTTP and store libraries. `peri acp ...` execs
 * `peri-agent acp ...` (agent_exec.c); the arguments mean the same.
 */
#include "cli/commands.h"

#include <stdio.h>
#include <string.h>

int main(int argc, char **argv) {
    if (argc >= 2 && strcmp(argv[1], "acp") == 0) return peri_cmd_acp(argc - 1, argv + 1);
    if (argc >= 2 && strcmp(argv[1], "print") == 0) return peri_cmd_print(argc - 1, argv + 1);
    if (argc >= 2 && strcmp(argv[1], "place") == 0) return peri_cmd_place(argc - 1, argv + 1);
    if (argc >= 2 && strcmp(argv[1], "mcp") == 0) return peri_cmd_mcp(argc - 1, argv + 1);
    if (argc >= 2 && strcmp(argv[1], "tui") == 0) return peri_cmd_tui(argc - 1, argv + 1);
    if (argc >= 2 && strcmp(argv[1], "trust") == 0) return peri_cmd_trust(argc - 1, argv + 1);
    fprintf(stderr, "usage: peri-agent acp|print|place|mcp [arguments]  (started by `peri acp`,\n"
                    "       `peri print`, `peri place`, `peri mcp`)\n");
    return 2;
}
