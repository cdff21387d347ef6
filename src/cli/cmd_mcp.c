/*
 * cmd_mcp.c — `peri mcp workspace --root DIR [--unsandboxed]`: the builtin Workspace MCP
 * server on stdio, so any MCP client can use Peri-C's confined file tools and shell.
 * The shell tool runs through placement, in the native sandbox, exactly like the agent's
 * own shell (the root bound read-write, its control files read-only, nothing else of
 * the machine writable, no network); only --unsandboxed runs it directly, with a warning
 * on stderr for every call. stdout carries only protocol frames; diagnostics go to
 * stderr.
 *
 * With --listen HOST:PORT the same server is served over MCP streamable HTTP
 * (pmcp_serve_http) at http://HOST:PORT/mcp, for clients on another machine or in
 * another form (the agent module has no file system). Every request needs the bearer
 * token: --token-file FILE (0600, owned by the user), else a fresh random token written
 * to a new 0600 file whose path is printed on stderr (removed at exit). --port-file
 * FILE receives the bound port (for --listen HOST:0). SIGINT/SIGTERM stop it cleanly.
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

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

/* The write end of the stop pipe of `--listen` (a signal handler can reach nothing else). */
static volatile sig_atomic_t g_stop_wfd = -1;

static void on_stop_signal(int sig) {
    (void)sig;
    int saved = errno;
    if (g_stop_wfd >= 0) {
        ssize_t w = write(g_stop_wfd, "x", 1);
        (void)w;
    }
    errno = saved;
}

typedef struct listen_info {
    const char *port_file;
    const char *token_path;
    bool generated;
} listen_info;

static void on_listen(void *ud, const char *host, uint16_t port) {
    listen_info *li = ud;
    bool v6 = strchr(host, ':') != NULL;
    fprintf(stderr, "peri mcp workspace: listening on http://%s%s%s:%u/mcp\n", v6 ? "[" : "", host,
            v6 ? "]" : "", (unsigned)port);
    if (li->generated)
        fprintf(stderr,
                "peri mcp workspace: the bearer token is in %s (0600); clients send\n"
                "  Authorization: Bearer <its content>\n"
                "  e.g. settings \"mcpServers\": {\"ws\": {\"type\": \"http\", \"url\": "
                "\"http://%s%s%s:%u/mcp\", \"headers\": {\"Authorization\": \"Bearer ...\"}}}\n",
                li->token_path, v6 ? "[" : "", host, v6 ? "]" : "", (unsigned)port);
    if (li->port_file) {
        char tmp[4096];
        snprintf(tmp, sizeof tmp, "%s.tmp", li->port_file);
        FILE *f = fopen(tmp, "w");
        if (f) {
            fprintf(f, "%u\n", (unsigned)port);
            if (fclose(f) == 0) rename(tmp, li->port_file);
        }
    }
}

/* The token of --token-file: a regular file of the user's, not readable by others; its
 * first line, at least 16 bytes. Owned by the caller. */
static char *read_token_file(const char *path) {
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0) {
        fprintf(stderr, "peri mcp workspace: --token-file %s: %s\n", path, strerror(errno));
        if (fd >= 0) close(fd);
        return NULL;
    }
    if (!S_ISREG(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 077)) {
        fprintf(stderr,
                "peri mcp workspace: --token-file %s must be a regular file of yours with mode "
                "0600 (no access for group or others)\n",
                path);
        close(fd);
        return NULL;
    }
    char buf[1024];
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n < 0) n = 0;
    buf[n] = 0;
    buf[strcspn(buf, "\r\n")] = 0;
    if (strlen(buf) < 16) {
        fprintf(stderr,
                "peri mcp workspace: --token-file %s: the token must have at least 16 "
                "characters\n",
                path);
        return NULL;
    }
    char *t = strdup(buf);
    pb_wipe(buf, sizeof buf);
    return t;
}

/* A fresh token (256 random bits, hex) in DIR/token, DIR a new 0700 directory under
 * TMPDIR. Owned by the caller; *dir_out and *path_out name what to remove. */
static char *new_token_file(char *dir_out, size_t dlen, char *path_out, size_t plen) {
    const char *tmp = getenv("TMPDIR");
    snprintf(dir_out, dlen, "%s/peri-mcp-XXXXXX", tmp && tmp[0] == '/' ? tmp : "/tmp");
    uint8_t rnd[32];
    char hex[65];
    if (getrandom(rnd, sizeof rnd, 0) != (ssize_t)sizeof rnd || !mkdtemp(dir_out)) {
        fprintf(stderr, "peri mcp workspace: cannot create the token file: %s\n", strerror(errno));
        return NULL;
    }
    pb_hex(rnd, sizeof rnd, hex);
    snprintf(path_out, plen, "%s/token", dir_out);
    int fd = open(path_out, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
    bool ok = fd >= 0 && write(fd, hex, 64) == 64 && write(fd, "\n", 1) == 1;
    if (fd >= 0 && close(fd) != 0) ok = false;
    if (!ok) {
        fprintf(stderr, "peri mcp workspace: cannot write %s: %s\n", path_out, strerror(errno));
        unlink(path_out);
        rmdir(dir_out);
        return NULL;
    }
    return strdup(hex);
}

/* Serves o over HTTP on LISTEN ("HOST:PORT", "[V6]:PORT"). */
static int serve_listen(const pmcp_server_opts *o, const char *listen, const char *token_file,
                        const char *port_file) {
    char host[256];
    const char *colon = strrchr(listen, ':');
    size_t hl = colon ? (size_t)(colon - listen) : 0;
    const char *hs = listen;
    if (hl >= 2 && listen[0] == '[' && listen[hl - 1] == ']') {
        hs++;
        hl -= 2;
    }
    char *end = NULL;
    long port = colon ? strtol(colon + 1, &end, 10) : -1;
    if (!colon || hl == 0 || hl >= sizeof host || !colon[1] || *end || port < 0 || port > 65535) {
        fprintf(stderr, "peri mcp workspace: --listen wants HOST:PORT (e.g. 127.0.0.1:8765)\n");
        return 2;
    }
    memcpy(host, hs, hl);
    host[hl] = 0;
    if (!strcmp(host, "localhost")) snprintf(host, sizeof host, "127.0.0.1");
    listen_info li = {.port_file = port_file, .token_path = token_file};
    char dir[4096] = "", path[4200] = "";
    char *token = token_file ? read_token_file(token_file)
                             : new_token_file(dir, sizeof dir, path, sizeof path);
    if (!token) return 1;
    if (!token_file) {
        li.token_path = path;
        li.generated = true;
    }
    int pfd[2];
    if (pipe2(pfd, O_CLOEXEC | O_NONBLOCK) != 0) {
        free(token);
        return 1;
    }
    g_stop_wfd = pfd[1];
    struct sigaction sa = {.sa_handler = on_stop_signal, .sa_flags = SA_RESTART};
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    pmcp_http_opts ho = {.server = o,
                         .host = host,
                         .port = (uint16_t)port,
                         .token = token,
                         .stop_fd = pfd[0],
                         .on_listen = on_listen,
                         .ud = &li};
    char err[512] = "";
    int rc = pmcp_serve_http(&ho, err, sizeof err);
    if (rc != 0)
        fprintf(stderr, "peri mcp workspace: %s\n", err);
    else
        fprintf(stderr, "peri mcp workspace: stopped\n");
    signal(SIGINT, SIG_DFL);
    signal(SIGTERM, SIG_DFL);
    g_stop_wfd = -1;
    close(pfd[0]);
    close(pfd[1]);
    pb_wipe(token, strlen(token));
    free(token);
    if (li.generated) {
        unlink(path);
        rmdir(dir);
    }
    return rc == 0 ? 0 : 1;
}

static void warn_unsandboxed(void *ud, const char *msg) {
    (void)ud;
    fprintf(stderr, "peri mcp workspace: warning: %s\n", msg);
}

static void print_login(void *ctx, const char *server, const char *url) {
    (void)ctx;
    /* the URL is the authorization server's: control characters shown, not sent */
    char *vs = pb_visible(server), *vu = pb_visible(url);
    printf("To log in to the MCP server \"%s\", open this URL in a browser on this machine:\n\n"
           "  %s\n\nWaiting for the browser (5 minutes at most)...\n",
           vs ? vs : "?", vu ? vu : "?");
    fflush(stdout);
    free(vs);
    free(vu);
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
            /* err quotes what the servers answered (resource, issuer, error codes) */
            char *v = pb_visible(err);
            fprintf(stderr, "peri mcp login: %s\n", v ? v : "failed (out of memory)");
            free(v);
            rc = 1;
        } else {
            printf("Logged in; the tokens are in %s.\n", dir);
        }
    }
    free(url);
    return rc;
}

static void usage(FILE *f) {
    fprintf(
        f, "usage: peri mcp login NAME|URL | logout NAME|URL\n"
           "  login: the OAuth login of a remote MCP server (NAME from ~/.peri/settings.json)\n"
           "usage: peri mcp workspace --root DIR [--unsandboxed]\n"
           "                          [--listen HOST:PORT [--token-file FILE] [--port-file FILE]]\n"
           "  Serves the workspace tools (read, write, edit, list, glob, grep, shell, ...)\n"
           "  as an MCP server on stdin/stdout. Every path is confined to DIR.\n"
           "  The shell tool runs commands in the native sandbox (bubblewrap): DIR\n"
           "  writable except its control files, nothing else writable, no network.\n"
           "  --unsandboxed runs shell commands directly on this machine (logged on\n"
           "  stderr for every call): only for clients you would let run anything.\n"
           "  --listen HOST:PORT serves the same tools over MCP streamable HTTP at\n"
           "  http://HOST:PORT/mcp instead (HOST numeric or localhost; 127.0.0.1 keeps\n"
           "  it on this machine; PORT 0: any free port). Every request needs\n"
           "  \"Authorization: Bearer TOKEN\": TOKEN is the first line of --token-file\n"
           "  (mode 0600), else a new random token written to a 0600 file whose path\n"
           "  is printed on stderr. --port-file FILE receives the bound port.\n"
           "  Browsers' cross-origin requests are refused; SIGINT/SIGTERM stop it.\n");
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
    const char *listen = NULL, *token_file = NULL, *port_file = NULL;
    bool unsandboxed = false;
    for (int i = 2; i < argc; i++) {
        if (!strcmp(argv[i], "--root") && i + 1 < argc) {
            root = argv[++i];
        } else if (!strcmp(argv[i], "--listen") && i + 1 < argc) {
            listen = argv[++i];
        } else if (!strcmp(argv[i], "--token-file") && i + 1 < argc) {
            token_file = argv[++i];
        } else if (!strcmp(argv[i], "--port-file") && i + 1 < argc) {
            port_file = argv[++i];
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
    if (!listen && (token_file || port_file)) {
        fprintf(stderr, "peri mcp workspace: --token-file and --port-file need --listen\n");
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
    /* The user's Peri home, the code cache (its files decide what machine code the
     * host runs) and the room's Ruby and Python builds stay read-only even inside a
     * root that contains them (docs/placement.md, "Protected directories"). */
    const char *home = getenv("HOME");
    char peri_home[4096], ruby_dir[4096];
    const char *prot[4];
    size_t np = 0;
    if (home && home[0] == '/' &&
        snprintf(peri_home, sizeof peri_home, "%s/.peri", home) < (int)sizeof peri_home)
        prot[np++] = peri_home;
    if (ao.code_cache_dir && ao.code_cache_dir[0] == '/') prot[np++] = ao.code_cache_dir;
    if (ao.ruby_wasm && ao.ruby_wasm[0] == '/' &&
        snprintf(ruby_dir, sizeof ruby_dir, "%s", ao.ruby_wasm) < (int)sizeof ruby_dir) {
        char *slash = strrchr(ruby_dir, '/');
        if (slash != ruby_dir) *slash = '\0';
        if (slash != ruby_dir) prot[np++] = ruby_dir;
    }
    if (ao.python_dir && ao.python_dir[0] == '/') prot[np++] = ao.python_dir;
    pol.protect = np ? prot : NULL;
    pol.nprotect = np;
    ptl_sandbox sb = {.place = place, .policy = &pol, .off = unsandboxed, .warn = warn_unsandboxed};
    char real[4096];
    if (!realpath(root, real)) {
        fprintf(stderr, "peri mcp workspace: %s: no such directory\n", root);
        pl_free(place);
        return 1;
    }
    ptl_ctx tc = {.cwd = real, .sandbox = &sb};
    pmcp_server_opts o = {.root = real, .tool_ctx = &tc, .log = {pb_log_to_file, stderr}};
    if (unsandboxed && listen)
        fprintf(stderr, "peri mcp workspace: warning: --unsandboxed: every shell call of every "
                        "client runs directly on this machine\n");
    int rc = listen                      ? serve_listen(&o, listen, token_file, port_file)
             : pmcp_serve(&o, 0, 1) == 0 ? 0
                                         : 1;
    pl_free(place);
    return rc;
}
