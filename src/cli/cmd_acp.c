/*
 * cmd_acp.c — `peri acp [--cwd DIR] [--db PATH | --store URL] [--settings FILE|-]
 * [--machine-id ID] [--shared-store] [--login [PROVIDER]]`: the ACP agent on stdio. The environment
 * and ~/.peri/ are mapped into the host start object by host_env.c; stdout carries only protocol
 * frames; diagnostics go to stderr.
 */
#include "cli/commands.h"
#include "cli/host_env.h"
#include "peri/acp.h"
#include "peri/model.h"

#include <signal.h>
#include <stdio.h>
#include <string.h>

static void usage(FILE *f) {
    fprintf(f, "usage: peri acp [--cwd DIR] [--db PATH | --store URL] [--settings FILE|-]\n"
               "                [--machine-id ID] [--shared-store]\n"
               "       peri acp --wasm ...  (the agent host's WebAssembly form: --wasm --help)\n"
               "  Runs the Agent Client Protocol server on stdin/stdout.\n"
               "  --cwd DIR          the host's working directory (created; default: the\n"
               "                     current directory); session/new still names its own cwd\n"
               "  --db PATH          session database (default $PERI_STORE, else\n"
               "                     $HOME/.peri/peri.db)\n"
               "  --store URL        the shared PostgreSQL store, postgresql://... (libpq URI;\n"
               "                     PGHOST, PGPORT, PGUSER, PGPASSWORD, PGPASSFILE,\n"
               "                     PGDATABASE, PGSSLMODE fill what the URL leaves out);\n"
               "                     implies --shared-store\n"
               "  --settings FILE|-  the whole settings document, replacing\n"
               "                     ~/.peri/settings.json; '-' reads it from the first line\n"
               "                     of stdin, before any JSON-RPC frame. Environment\n"
               "                     overrides (PERI_MODEL, OPENAI_API_KEY, ...) still apply.\n"
               "  --machine-id ID    persistent machine identity (default $PERI_MACHINE_ID,\n"
               "                     else ~/.peri/machine-id)\n"
               "  --shared-store     the database is shared with other machines\n"
               "  --login [PROVIDER] instead of serving, ask for the provider's API key in the\n"
               "                     terminal and keep it as `peri login` does (ACP's terminal\n"
               "                     login: a client runs its configured `peri acp` command\n"
               "                     with these arguments appended); PROVIDER is openai\n"
               "                     (the default) or anthropic\n"
               "  The settings are checked against their schema: unknown keys are warned\n"
               "  about (did you mean ...), wrong types and broken JSON stop the start.\n"
               "  Exit status: 0 at the end of input; 1 when the server cannot start (the\n"
               "  reason on stderr) or fails; 2 usage error.\n");
}

int peri_cmd_acp(int argc, char **argv) {
    for (int i = 0; i < argc; i++)
        if (!strcmp(argv[i], "--wasm")) return peri_cmd_acp_wasm(argc, argv);
    peri_host_args a = {0};
    peri_place_opts po;       /* how code runs (Ruby module, bwrap, WASI runner) */
    const char *login = NULL; /* --login: the provider, "" for the default */
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            usage(stdout);
            return 0;
        } else if (peri_host_arg(argc, argv, &i, &a)) {
            continue;
        } else if (!strcmp(argv[i], "--store") && i + 1 < argc) {
            a.db = argv[++i];
        } else if (!strcmp(argv[i], "--settings") && i + 1 < argc) {
            a.settings = argv[++i];
        } else if (!strcmp(argv[i], "--machine-id") && i + 1 < argc) {
            a.machine_id = argv[++i];
        } else if (!strcmp(argv[i], "--shared-store")) {
            a.shared_store = true;
        } else if (!strcmp(argv[i], "--login")) {
            login = i + 1 < argc && argv[i + 1][0] != '-' ? argv[++i] : "";
        } else {
            fprintf(stderr, "peri acp: unexpected argument \"%s\"\n", argv[i]);
            usage(stderr);
            return 2;
        }
    }
    if (login) {
        /* The options of the client's base launch command (--cwd, --db, ...) were
         * checked above and mean nothing to a login. */
        char *largv[] = {"login", *login ? (char *)login : NULL, NULL};
        return peri_cmd_login(*login ? 2 : 1, largv);
    }
    signal(SIGPIPE, SIG_IGN); /* a vanished client is a write error, not a crash */
    char err[512] = "";
    peri_host_start h;
    if (peri_host_start_init(&h, &a, err, sizeof err) != 0) {
        fprintf(stderr, "peri acp: %s\n", err);
        return 1;
    }
    peri_place_opts_fill(&po, &h.opt);
    h.opt.log = (pb_logger){pb_log_to_file, stderr}; /* stdout is the protocol */
    if (pm_global_init() != PM_OK) {
        fprintf(stderr, "peri acp: cannot initialise libcurl\n");
        peri_host_start_clear(&h);
        return 1;
    }
    int rc = pacp_serve(&h.opt, 0, 1, err, sizeof err);
    if (rc) fprintf(stderr, "peri acp: %s\n", err);
    pm_global_cleanup();
    peri_host_start_clear(&h);
    return rc ? 1 : 0;
}
