/*
 * cmd_mcp.c — `peri mcp workspace --root DIR [--unsandboxed]`: the builtin Workspace MCP
 * server on stdio, so any MCP client can use Peri-C's confined file tools and shell.
 * The shell tool runs through placement, in the native sandbox, exactly like the agent's
 * own shell (the root bound read-write, its control files read-only, nothing else of
 * the machine writable, no network); only --unsandboxed runs it directly, with a warning
 * on stderr for every call. stdout carries only protocol frames; diagnostics go to
 * stderr.
 */
#include "cli/commands.h"
#include "peri/mcp.h"
#include "peri/place.h"

#include <signal.h>
#include <stdio.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

static void warn_unsandboxed(void *ud, const char *msg) {
    (void)ud;
    fprintf(stderr, "peri mcp workspace: warning: %s\n", msg);
}

static void usage(FILE *f) {
    fprintf(f, "usage: peri mcp workspace --root DIR [--unsandboxed]\n"
               "  Serves the workspace tools (read, write, edit, list, glob, grep, shell, ...)\n"
               "  as an MCP server on stdin/stdout. Every path is confined to DIR.\n"
               "  The shell tool runs commands in the native sandbox (bubblewrap): DIR\n"
               "  writable except its control files, nothing else writable, no network.\n"
               "  --unsandboxed runs shell commands directly on this machine (logged on\n"
               "  stderr for every call): only for clients you would let run anything.\n");
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
    bool unsandboxed = false;
    for (int i = 2; i < argc; i++) {
        if (!strcmp(argv[i], "--root") && i + 1 < argc) {
            root = argv[++i];
        } else if (!strcmp(argv[i], "--unsandboxed")) {
            unsandboxed = true;
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
    peri_place_opts po;
    pacp_options ao = {0};
    peri_place_opts_fill(&po, &ao);
    pl_config pcfg = {
        .bwrap = ao.bwrap, .wasm_runner = ao.wasm_runner, .nwasm_runner = ao.nwasm_runner};
    pl_error pe = {0};
    pl_ctx *place = pl_new(&pcfg, &pe);
    if (!place) {
        fprintf(stderr, "peri mcp workspace: placement: %s\n", pe.message);
        return 1;
    }
    pl_policy pol = {.native = PL_NATIVE_AUTO, .network_allowed = false};
    ptl_sandbox sb = {.place = place, .policy = &pol, .off = unsandboxed, .warn = warn_unsandboxed};
    char real[4096];
    if (!realpath(root, real)) {
        fprintf(stderr, "peri mcp workspace: %s: no such directory\n", root);
        pl_free(place);
        return 1;
    }
    ptl_ctx tc = {.cwd = real, .sandbox = &sb};
    pmcp_server_opts o = {.root = real, .tool_ctx = &tc, .log = {pb_log_to_file, stderr}};
    int rc = pmcp_serve(&o, 0, 1) == 0 ? 0 : 1;
    pl_free(place);
    return rc;
}
