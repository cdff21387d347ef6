/*
 * cmd_mcp.c — `peri mcp workspace --root DIR`: the builtin Workspace MCP server on
 * stdio, so any MCP client can use Peri-C's confined file tools and shell.
 * stdout carries only protocol frames; diagnostics go to stderr.
 */
#include "cli/commands.h"
#include "peri/mcp.h"

#include <signal.h>
#include <stdio.h>
#include <string.h>

static void usage(FILE *f) {
    fprintf(f, "usage: peri mcp workspace --root DIR\n"
               "  Serves the workspace tools (read, write, edit, list, glob, grep, shell, ...)\n"
               "  as an MCP server on stdin/stdout. Every path is confined to DIR.\n"
               "  The shell tool runs commands in DIR without a sandbox: only give this\n"
               "  server to clients you would let run commands.\n");
}

int peri_cmd_mcp(int argc, char **argv) {
    if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
        usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    if (strcmp(argv[1], "workspace") != 0) {
        fprintf(stderr, "peri mcp: unknown subcommand \"%s\"\n", argv[1]);
        usage(stderr);
        return 2;
    }
    const char *root = NULL;
    for (int i = 2; i < argc; i++) {
        if (!strcmp(argv[i], "--root") && i + 1 < argc) {
            root = argv[++i];
        } else if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            usage(stdout);
            return 0;
        } else {
            fprintf(stderr, "peri mcp: unexpected argument \"%s\"\n", argv[i]);
            usage(stderr);
            return 2;
        }
    }
    if (!root) {
        fprintf(stderr, "peri mcp workspace: --root DIR is required\n");
        return 2;
    }
    signal(SIGPIPE, SIG_IGN); /* a vanished client is a write error, not a crash */
    pmcp_server_opts o = {.root = root};
    return pmcp_serve(&o, 0, 1) == 0 ? 0 : 1;
}
