/*
 * cmd_mcp.c — `peri mcp workspace --root DIR [--unsandboxed]`: the builtin Workspace MCP
 * server on stdio, so any MCP client can use Peri-C's confined file tools and shell.
 * The shell tool runs through placement, in the native sandbox, exactly like the agent's
 * own shell (the root bound read-write, its control files read-only, nothing else of
 * the machine writable, no network); only --unsandboxed runs it directly, with a warning
 * on stderr for every call. stdout carries only protocol frames; diagnostics go to
 * stderr.
 *
 * `peri mcp login NAME|URL` runs the OAuth login of a remote (streamable HTTP) MCP server
 * now: NAME is looked up in the user's ~/.peri/settings.json "mcpServers"; the login URL
 * is printed, the browser comes back to a loopback listener, and the tokens are kept in
 * ~/.peri/oauth (0600). `peri mcp logout NAME|URL` forgets them.
 */
#include "cli/commands.h"
#include "peri/mcp.h"
#include "peri/model.h"
#include "peri/place.h"

#include "peri/json.h"

#include <signal.h>
#include <stdio.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

static void warn_unsandboxed(void *ud, const char *msg) {
    (void)ud;
    fprintf(stderr, "peri mcp workspace: warning: %s\n", msg);
}

static void print_login(void *ctx, const char *server, const char *url) {
    (void)ctx;
    printf("To log in to the MCP server \"%s\", open this URL in a browser on this machine:\n\n"
           "  %s\n\nWaiting for the browser (5 minutes at most)...\n",
           server, url);
    fflush(stdout);
}

/* The URL of NAME: NAME itself when it is a URL, else the user's settings entry. */
static char *server_url(const char *home, const char *name) {
    if (!strncmp(name, "https://", 8) || !strncmp(name, "http://", 7)) return strdup(name);
    char path[4096];
    snprintf(path, sizeof path, "%s/.peri/settings.json", home);
    size_t len = 0;
    char *txt = peri_read_file(path, false, &len);
    pj_t *doc = txt ? pj_loads(txt, 0, NULL) : NULL;
    free(txt);
    const char *u = pj_string_value(
        pj_object_get(pj_object_get(pj_object_get(doc, "mcpServers"), name), "url"));
    char *out = u ? strdup(u) : NULL;
    pj_decref(doc);
    return out;
}

static int cmd_login(int argc, char **argv, bool logout) {
    const char *what = logout ? "logout" : "login";
    if (argc != 3) {
        fprintf(stderr, "usage: peri mcp %s NAME|URL\n", what);
        return 2;
    }
    const char *home = getenv("HOME");
    if (!home || !home[0]) {
        fprintf(stderr, "peri mcp %s: HOME is not set\n", what);
        return 1;
    }
    char *url = server_url(home, argv[2]);
    if (!url) {
        fprintf(stderr,
                "peri mcp %s: \"%s\" is neither a URL nor a server with a \"url\" in "
                "%s/.peri/settings.json\n",
                what, argv[2], home);
        return 1;
    }
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/.peri/oauth", home);
    pmcp_oauth_opts o = {.dir = dir, .show_login = print_login};
    int rc = 0;
    if (logout) {
        rc = pmcp_oauth_forget(&o, url) == 0 ? 0 : 1;
        if (rc) fprintf(stderr, "peri mcp logout: cannot remove the tokens of %s\n", url);
    } else {
        signal(SIGPIPE, SIG_IGN);
        pm_global_init();
        char err[512];
        if (pmcp_oauth_login(&o, argv[2], url, err, sizeof err) != 0) {
            fprintf(stderr, "peri mcp login: %s\n", err);
            rc = 1;
        } else {
            printf("Logged in; the tokens are in %s.\n", dir);
        }
    }
    free(url);
    return rc;
}

static void usage(FILE *f) {
    fprintf(f, "usage: peri mcp login NAME|URL | logout NAME|URL\n"
               "  login: the OAuth login of a remote MCP server (NAME from ~/.peri/settings.json)\n"
               "usage: peri mcp workspace --root DIR [--unsandboxed]\n"
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
    if (!strcmp(argv[1], "login") || !strcmp(argv[1], "logout"))
        return cmd_login(argc, argv, !strcmp(argv[1], "logout"));
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
    /* the user's Peri home stays read-only even inside a root that contains it */
    const char *home = getenv("HOME");
    char peri_home[4096];
    const char *prot[1] = {peri_home};
    if (home && home[0] == '/' &&
        snprintf(peri_home, sizeof peri_home, "%s/.peri", home) < (int)sizeof peri_home) {
        pol.protect = prot;
        pol.nprotect = 1;
    }
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
