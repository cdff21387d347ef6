/*
 * guest_cli.h — the one driver of `peri python` and `peri ruby` (guest_cli.c): a script
 * of an interpreter guest run in the room like the native interpreter runs it. Each
 * command describes its language (where the build is, its texts, which options it
 * has) in a peri_guest_cli and hands argv to peri_guest_main.
 */
#ifndef PERI_CLI_GUEST_CLI_H
#define PERI_CLI_GUEST_CLI_H

#include "peri/room.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

enum {
    PERI_GUEST_SCRIPT_DASH = 1 << 0,   /* "-" is a script read from standard input */
    PERI_GUEST_CAPABILITIES = 1 << 1,  /* --lease DIR, --lease-write, --allow-network, --evidence */
    PERI_GUEST_CONTRACT_TEXT = 1 << 2, /* a room message prints the contract's text first */
    PERI_GUEST_FLUSH_STDOUT = 1 << 3,  /* stdout is flushed after every write of the script */
};

typedef struct peri_guest_cli {
    const char *name;       /* messages start "peri NAME: "; the program's name */
    const char *usage_head; /* the usage's first lines: the synopsis and the build option */
    const char *stdin_also; /* the --stdin line's end: when the script's stdin is empty */
    const char *module;     /* the capability module's name in scripts ("peri", "Peri") */
    const char *build_opt;  /* the option naming the build ("--python-dir", "--wasm") */
    const char *no_script;  /* the usage error when the script is missing */
    unsigned flags;         /* PERI_GUEST_*: which of the optional behaviours it has */
    const char *boot_note;  /* the first-boot progress note's subject ("Ruby"), or NULL */
    /* The default build when the option is absent: into buf, or NULL with *why (a
     * usage error). */
    const char *(*default_build)(char *buf, size_t n, const char **why);
    /* Opens the build: the module file (an fd the caller closes; the room reads it) and
     * the standard library's directory (*lib, -1 when the language has none). -1 with
     * why (printed after "peri NAME: "). */
    int (*load)(const char *build, int *lib, char *why, size_t why_len);
    const char *not_wasm; /* printf format naming the build when the module is not Wasm */
    /* Whether the loaded program is this language's (why says why not); NULL: any. */
    bool (*check)(const char *build, pr_program *p, char *why, size_t why_len);
} peri_guest_cli;

/* The capability handler with HTTP (tools/fetch_cap.c) in peri-agent (guest_net.c);
 * NULL in `peri` (guest_nonet.c), which then hands a run granted the network to
 * peri-agent. */
pr_cap_fn peri_guest_fetch(void);

/* Runs the command; returns the exit status (the script's; 1 when it cannot run or a
 * limit stopped it; 2 for a usage error). */
int peri_guest_main(const peri_guest_cli *g, int argc, char **argv);

#endif
