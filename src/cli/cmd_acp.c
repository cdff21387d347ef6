/*
 * cmd_acp.c — `peri acp [--cwd DIR] [--db PATH]`: the ACP agent on stdio.
 * stdout carries only protocol frames; diagnostics go to stderr.
 */
#include "cli/commands.h"
#include "peri/acp.h"
#include "peri/model.h"

#include <signal.h>
#include <stdio.h>
#include <string.h>

static void usage(FILE *f) {
    fprintf(f, "usage: peri acp [--cwd DIR] [--db PATH]\n"
               "  Runs the Agent Client Protocol server on stdin/stdout.\n"
               "  --cwd DIR   directory for sessions whose session/new omits cwd\n"
               "  --db PATH   session database (default $HOME/.peri/peri.db)\n");
}

int peri_cmd_acp(int argc, char **argv) {
    pacp_options opt = {0};
    peri_place_opts po;
    peri_place_opts_fill(&po, &opt);
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(argv[i], "--cwd") && i + 1 < argc) {
            opt.default_cwd = argv[++i];
        } else if (!strcmp(argv[i], "--db") && i + 1 < argc) {
            opt.db_path = argv[++i];
        } else {
            fprintf(stderr, "peri acp: unexpected argument \"%s\"\n", argv[i]);
            usage(stderr);
            return 2;
        }
    }
    signal(SIGPIPE, SIG_IGN); /* a vanished client is a write error, not a crash */
    if (pm_global_init() != PM_OK) {
        fprintf(stderr, "peri acp: cannot initialise libcurl\n");
        return 1;
    }
    char err[512] = "";
    int rc = pacp_serve(&opt, 0, 1, err, sizeof err);
    if (rc) fprintf(stderr, "peri acp: %s\n", err);
    pm_global_cleanup();
    return rc ? 1 : 0;
}
