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

#include "peri/base.h"

#include "peri/json.h"
#include <stdbool.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Where the host keeps sessions, and how it may write there. */
typedef struct pacp_storage {
    const char *locator;    /* required: a SQLite file path (parents created) or ":memory:",
                               or a postgresql:// URL (docs/store.md) */
    bool shared;            /* other machines write this store too: writing needs machine_id */
    const char *credential; /* the store credential: the PostgreSQL password when the URL
                               has none; a SQLite file needs none (unused) */
} pacp_storage;

/* The host start object (Peri's WASM start object, in C). The library reads no
 * environment variable and no ~/.peri file (except that ACP authenticate rewrites
 * <home>/.peri/settings.json to keep the key given): `peri acp` maps those into this struct
 * (src/cli/host_env.c); an embedder fills it explicitly. Several pacp_serve calls may
 * run at once in one process, each with its own options: nothing is global. */
typedef struct pacp_options {
    /* Required, absolute. Created (mkdir -p) and canonicalised at start; it is the cwd
     * of a session/new that names none. */
    const char *cwd;
    /* The whole settings document (a JSON object, borrowed until pacp_serve returns;
     * NULL = {}).
     * It replaces ~/.peri/settings.json: models, providers and keys, permissions, ...
     * A deep copy lives in the host context; nothing re-reads it from disk. */
    const pj_t *settings;
    pacp_storage storage;
    /* The persistent machine identity (a UUID; 1..36 printable characters). One host
     * holds one identity: an initialize asking for another one is rejected. NULL on a
     * private store: a fresh identity for this call only (its sessions cannot be
     * loaded by a later host). NULL on a shared store: nothing is written (session/new
     * is refused) and every stored session belongs to another machine. Sessions whose
     * workspace belongs to another machine are refused by session/load and
     * session/prompt. The same machine_id and the same root path give the same
     * workspace identity in any store. */
    const char *machine_id;
    /* Optional: the user's home for user-level files other than settings (e.g.
     * ~/.peri/commands). NULL: none. `peri acp` passes $HOME. */
    const char *home;
    /* pct_config: Ruby's ruby+stdlib.wasm, the native WASI runner argv. */
    const char *ruby_wasm;
    const char *python_dir;     /* pct_config: CPython's WASI build directory */
    const char *code_cache_dir; /* pct_config: the room's on-disk code cache; NULL: none */
    const char *const *wasm_runner;
    size_t nwasm_runner;
    const char *bwrap;           /* the sandbox's bubblewrap binary; NULL: /usr/bin/bwrap */
    const char *telemetry_token; /* pct_config: settings.telemetry's bearer token */
    /* The host's log (pb_logger, peri/base.h): unsandboxed runs, state that could not be
     * persisted, MCP servers' stderr. The library writes nowhere else. {0}: dropped;
     * `peri acp` logs to stderr. */
    pb_logger log;
} pacp_options;

/* A terminal login (`peri login`): keeps the API key of provider "openai" or
 * "anthropic" in <home>/.peri/settings.json (providers.<provider>.apiKey; the file is
 * rewritten atomically with mode 0600, other entries kept; a symlinked or foreign-owned
 * file is refused), exactly as ACP authenticate does, never in a project. 0, or -1 with
 * a message in err. */
int pacp_store_api_key(const char *home, const char *provider, const char *key, char *err,
                       size_t errlen);

/* Serves until EOF on in_fd, then closes every session like session/close and
 * returns 0. Returns -1 with a message in err when the host could not start (bad
 * start object, store cannot be opened, ...). Bad input never ends the loop. */
int pacp_serve(const pacp_options *opt, int in_fd, int out_fd, char *err, size_t errlen);

#ifdef __cplusplus
}
#endif
#endif
