/*
 * main.c — the `peri` command: dispatches `peri <subcommand> ...` through one
 * table. The command stays thin: subcommands parse their arguments and call the
 * library (libperi); nothing of substance lives in src/cli/.
 */
#include "cli/commands.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

typedef struct peri_command {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *summary;
} peri_command;

static const peri_command peri_commands[] = {
    {"wasm", peri_cmd_wasm, "validate a WebAssembly module or invoke one of its functions"},
    {"compile", peri_cmd_compile, "translate a module to machine code ahead of time (-o FILE)"},
    {"isolate", peri_cmd_isolate, "run a program under the isolation run contract (run, serve)"},
    {"run", peri_cmd_run, "run a WASI program in the room, streaming its output"},
    {"ruby", peri_cmd_ruby, "run a Ruby script in the room (Ruby's WebAssembly build)"},
    {"python", peri_cmd_python, "run a Python script in the room (CPython built for WASI)"},
    /* Agent commands run in peri-agent (agent_exec.c): peri itself stays small. */
    {"acp", peri_cmd_agent, "run the agent as an ACP server on stdio"},
    {"print", peri_cmd_agent, "run one prompt through the agent and print the answer"},
    {"place", peri_cmd_agent, "run a request where placement decides: WASM room or native sandbox"},
    {"mcp", peri_cmd_agent, "serve the workspace tools as an MCP server on stdio (mcp workspace)"},
    {"tui", peri_cmd_agent, "the interactive terminal client (also: peri alone on a terminal)"},
    {"login", peri_cmd_agent, "keep a provider's API key in ~/.peri/settings.json"},
    {"trust", peri_cmd_agent,
     "review and trust a project's own configuration (.peri/settings.json)"},
};

/* The exit status of the commands (with `peri --help`). */
static void peri_exit_codes(FILE *f) {
    fprintf(f, "Exit status: 0 success; 1 failure (the reason on stderr); 2 usage error (what\n"
               "was wrong, then the usage). `peri run` and `peri ruby` exit with the program's\n"
               "status (134 for a trap); `peri place run` exits 3 when its result says\n"
               "ok:false. Never 0 on a failure.\n");
}

static void peri_usage(FILE *f) {
    fprintf(f, "usage: peri <command> [arguments]\n\ncommands:\n");
    for (size_t i = 0; i < sizeof peri_commands / sizeof peri_commands[0]; i++)
        fprintf(f, "  %-10s %s\n", peri_commands[i].name, peri_commands[i].summary);
    fprintf(f, "\n`peri <command> --help` describes a command; `peri --version` prints the "
               "version.\n");
}

int main(int argc, char **argv) {
    /* `peri` alone on a terminal, `peri --continue`, `peri --resume ID` (and the
     * other options of `peri tui`) start the TUI (in peri-agent); without a terminal
     * `peri` alone prints the usage. */
    if ((argc < 2 && isatty(0) && isatty(1)) ||
        (argc >= 2 && (!strcmp(argv[1], "--continue") || !strcmp(argv[1], "-c") ||
                       !strcmp(argv[1], "--resume") || !strcmp(argv[1], "--cwd") ||
                       !strcmp(argv[1], "--db") || !strcmp(argv[1], "--log")))) {
        char *tui[argc + 2];
        tui[0] = argv[0];
        tui[1] = "tui";
        for (int i = 1; i <= argc; i++)
            tui[i + 1] = argv[i]; /* argv[argc] is NULL */
        return peri_cmd_agent(argc, tui + 1);
    }
    if (argc < 2) {
        fprintf(stderr, "peri: a command is missing\n");
        peri_usage(stderr);
        return 2;
    }
    if (strcmp(argv[1], "--version") == 0 || strcmp(argv[1], "version") == 0) {
        printf("peri %s\n", PERI_VERSION);
        return 0;
    }
    if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
        strcmp(argv[1], "help") == 0) {
        peri_usage(stdout);
        peri_exit_codes(stdout);
        return 0;
    }
    for (size_t i = 0; i < sizeof peri_commands / sizeof peri_commands[0]; i++)
        if (strcmp(argv[1], peri_commands[i].name) == 0)
            return peri_commands[i].run(argc - 1, argv + 1);
    fprintf(stderr, "peri: unknown command \"%s\"\n", argv[1]);
    peri_usage(stderr);
    return 2;
}
