/*
 * cmd_login.c — `peri login [openai|anthropic]`: the terminal's way to give Peri a
 * provider's API key, kept where ACP's authenticate keeps it: providers.<name>.apiKey
 * in ~/.peri/settings.json (rewritten atomically, mode 0600, other entries kept; a
 * symlinked or foreign-owned file is refused), never in a project.
 *
 * The key is read from the terminal without echo, or as one line from stdin when stdin
 * is not a terminal (`pass show openai | peri login openai`); it is never taken from the
 * command line, where other users could read it in the process list.
 */
#include "cli/commands.h"
#include "peri/acp.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <unistd.h>

static void usage(FILE *f) {
    fprintf(f, "usage: peri login [openai|anthropic]\n"
               "  Reads the provider's API key (from the terminal without echo, or one line\n"
               "  from stdin) and keeps it in ~/.peri/settings.json (mode 0600). The default\n"
               "  provider is openai. Exit status: 0 kept, 1 an error, 2 usage error.\n");
}

/* One line of at most n-1 bytes into buf, without its newline; echo off on a terminal. */
static bool read_key(char *buf, size_t n) {
    bool tty = isatty(0);
    struct termios old, quiet;
    if (tty) {
        fprintf(stderr, "API key: ");
        fflush(stderr);
        if (tcgetattr(0, &old) == 0) {
            quiet = old;
            quiet.c_lflag &= ~(tcflag_t)ECHO;
            tcsetattr(0, TCSAFLUSH, &quiet);
        } else {
            tty = false;
        }
    }
    bool ok = fgets(buf, (int)n, stdin) != NULL;
    if (tty) {
        tcsetattr(0, TCSAFLUSH, &old);
        fputc('\n', stderr);
    }
    if (!ok) return false;
    size_t len = strcspn(buf, "\r\n");
    if (buf[len] == 0 && len == n - 1) return false; /* longer than any real key */
    buf[len] = 0;
    while (len > 0 && (buf[len - 1] == ' ' || buf[len - 1] == '\t'))
        buf[--len] = 0;
    size_t lead = strspn(buf, " \t"); /* pasted keys often carry blanks */
    memmove(buf, buf + lead, len - lead + 1);
    return true;
}

int peri_cmd_login(int argc, char **argv) {
    const char *provider = "openai";
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            usage(stdout);
            return 0;
        }
        if (strcmp(argv[i], "openai") && strcmp(argv[i], "anthropic")) {
            fprintf(stderr, "peri login: unknown provider \"%s\" (openai or anthropic)\n", argv[i]);
            usage(stderr);
            return 2;
        }
        if (i > 1) {
            fprintf(stderr, "peri login: one provider at a time\n");
            return 2;
        }
        provider = argv[i];
    }
    const char *home = getenv("HOME");
    if (!home || !*home) {
        fprintf(stderr, "peri login: HOME is not set: there is no ~/.peri to keep the key in\n");
        return 1;
    }
    char key[4096];
    if (!read_key(key, sizeof key) || !key[0]) {
        fprintf(stderr, "peri login: no key was given; nothing was changed\n");
        return 1;
    }
    char err[512] = "";
    int rc = pacp_store_api_key(home, provider, key, err, sizeof err);
    explicit_bzero(key, sizeof key);
    if (rc != 0) {
        fprintf(stderr, "peri login: %s\n", err);
        return 1;
    }
    printf("peri login: the %s API key is kept in %s/.peri/settings.json (mode 0600)\n", provider,
           home);
    return 0;
}
