/*
 * cmd_tui.c — `peri tui [--cwd DIR] [--db PATH] [--continue | --resume ID] [--log FILE]`
 * (also `peri` alone on a terminal, `peri --continue`, `peri --resume ID`): the
 * interactive terminal client (src/tui/, docs/tui.md). This file maps the command line
 * and the environment (NO_COLOR, the locale) into ptui_options; the TUI reads neither.
 * The user's settings file is checked before the screen is taken (host_env.c): a broken
 * one stops here with the reason, instead of an agent that exits into a log.
 */
#include "cli/commands.h"
#include "cli/host_env.h"
#include "tui/tui.h"

#include <langinfo.h>
#include <limits.h>
#include <locale.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void usage(FILE *f) {
    fprintf(f, "usage: peri [tui] [--cwd DIR] [--db PATH] [--continue | --resume ID] [--log FILE]\n"
               "  The interactive terminal client: talks ACP to `peri-agent acp`.\n"
               "  --continue   resume the latest session of this directory\n"
               "  --resume ID  resume session ID (/resume inside lists them)\n"
               "  --log FILE   append the agent's diagnostics to FILE (default: discarded)\n"
               "  Keys: Enter sends; \\+Enter, Alt-Enter or Ctrl-J add a line; Up/Down history;\n"
               "  /help lists the commands; Tab completes /commands; Shift-Tab cycles the mode; "
               "1-9 answer a permission "
               "prompt; Esc cancels the\n"
               "  turn; PgUp/PgDn scroll; Ctrl-C twice quits. NO_COLOR=1 turns colour off.\n"
               "  Exit status: 0 after a quit; 1 when it cannot start (settings, peri-agent);\n"
               "  2 usage error or no terminal.\n");
}

int peri_cmd_tui(int argc, char **argv) {
    ptui_options o = {0};
    const char *cwd = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(argv[i], "--cwd") && i + 1 < argc) {
            cwd = argv[++i];
        } else if (!strcmp(argv[i], "--db") && i + 1 < argc) {
            o.db = argv[++i];
        } else if (!strcmp(argv[i], "--log") && i + 1 < argc) {
            o.log = argv[++i];
        } else if (!strcmp(argv[i], "--resume") && i + 1 < argc) {
            o.resume_id = argv[++i];
        } else if (!strcmp(argv[i], "--continue") || !strcmp(argv[i], "-c")) {
            o.cont = true;
        } else {
            fprintf(stderr, "peri tui: unexpected argument \"%s\"\n", argv[i]);
            usage(stderr);
            return 2;
        }
    }
    if (!isatty(0) || !isatty(1)) {
        fprintf(stderr, "peri tui: needs a terminal (use `peri print` or `peri acp` otherwise)\n");
        return 2;
    }
    /* The agent checks the settings too, but its messages go to the log: a broken file
     * is said here, before the screen is taken; warnings stay visible after the TUI. */
    const char *home = getenv("HOME");
    if (home && *home) {
        char path[PATH_MAX], err[1024];
        snprintf(path, sizeof path, "%s/.peri/settings.json", home);
        pj_t *doc = peri_settings_read(path, true, err, sizeof err);
        int bad = !doc || peri_settings_validate(doc, path, stderr, err, sizeof err) != 0;
        pj_decref(doc);
        if (bad) {
            fprintf(stderr, "peri tui: %s\n", err);
            return 1;
        }
    }
    char abs[PATH_MAX], self[PATH_MAX];
    if (!realpath(cwd ? cwd : ".", abs)) {
        fprintf(stderr, "peri tui: no such directory: %s\n", cwd ? cwd : ".");
        return 1;
    }
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0) {
        fprintf(stderr, "peri tui: cannot find peri-agent (/proc/self/exe)\n");
        return 1;
    }
    self[n] = 0;
    o.agent = self;
    o.cwd = abs;
    setlocale(LC_ALL, "");
    const char *cs = nl_langinfo(CODESET);
    o.utf8 = cs && (!strcmp(cs, "UTF-8") || !strcmp(cs, "utf8"));
    const char *nc = getenv("NO_COLOR"); /* https://no-color.org: set and non-empty */
    o.color = !(nc && *nc);
    const char *term = getenv("TERM");
    if (term && !strcmp(term, "dumb")) o.color = false;
    return ptui_run(&o);
}
