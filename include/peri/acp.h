/*
 * peri/acp.h — the ACP (Agent Client Protocol v1) server of the agent host
 * (prefix pacp_).
 *
 * JSON-RPC 2.0, one frame per line, over a pair of file descriptors (stdio for
 * `peri acp`, a pipe pair for the in-process `peri print`). The server maps ACP
 * methods onto the controller and controller events onto session/update; it holds
 * no business logic. Requests are read on the calling thread; session/prompt runs on
 * controller workers, so cancel and close stay responsive; one locked writer keeps
 * frames whole. Only protocol frames go to out_fd; diagnostics go to stderr.
 */
#ifndef PERI_ACP_H
#define PERI_ACP_H

#include <stddef.h>

typedef struct pacp_options {
    const char *db_path;     /* NULL: $HOME/.peri/peri.db */
    const char *home;        /* NULL: $HOME */
    const char *default_cwd; /* used when session/new omits cwd; NULL: process cwd */
    /* Issue 11 (pct_config): Ruby's ruby+stdlib.wasm, the native WASI runner argv. */
    const char *ruby_wasm;
    const char *const *wasm_runner;
    size_t nwasm_runner;
    const char *bwrap; /* the sandbox's bubblewrap binary; NULL: /usr/bin/bwrap */
} pacp_options;

/* Serves until EOF on in_fd, then closes every session like session/close and
 * returns 0. Returns -1 with a message in err when the host could not start (store
 * cannot be opened, ...). Bad input never ends the loop. */
int pacp_serve(const pacp_options *opt, int in_fd, int out_fd, char *err, size_t errlen);

#endif
