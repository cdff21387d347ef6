/*
 * peri/agentwasm.h — the agent module's reactor (prefix paw_): the ACP server of the
 * WebAssembly form of the agent host (docs/wasm-host.md).
 *
 * Event-driven and single-threaded: it never blocks and never opens, resolves or reads
 * a clock by itself. Everything outside comes through the host table below: the
 * network, names and timers through a pn_ports (net.h), the client's bytes through
 * paw_input, the answers through send, secrets through credential. It drives the agent
 * core's resumable turn (pag_turn) with pm_call over pn_http (the model), pst_remote
 * (the shared store) and host timers (retry waits), and projects events with the native
 * ACP server's own projection, so both forms send the same session/update bytes.
 *
 * It compiles into the native library too (over pn_loop's ports; tests/agentwasm/), and
 * into peri-agent.wasm, where src/agentwasm/exports.c maps the ABI exports onto it.
 *
 * Threads: none. Every paw_* call is made from the one thread that drives the ports, and
 * never from inside a callback of this table (no re-entrancy), as the ABI says.
 *
 * Ownership: paw_new's result is the caller's (paw_free once paw_settled, or at any time
 * after paw_close when the ports were closed by the host). Strings handed to paw_* are
 * copied or used during the call only; strings handed to the callbacks are valid during
 * the call only.
 */
#ifndef PERI_AGENTWASM_H
#define PERI_AGENTWASM_H

#include "peri/agent.h"
#include "peri/net.h"

#include <stdbool.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* What the host gives the reactor. ports, send and random are required. */
typedef struct paw_host {
    void *ctx; /* passed first to every callback */
    const pn_ports *ports;
    /* Bytes for the client: whole newline-terminated JSON-RPC frames. 0, or a pn_err. */
    int (*send)(void *ctx, const char *data, size_t len);
    /* A diagnostic line; level 0 error, 1 warning, 2 info, 3 debug. May be NULL. */
    void (*log)(void *ctx, int level, const char *text);
    /* The cleanup report (JSON), once, after paw_close when everything settled. */
    void (*settled)(void *ctx, const char *json, size_t len);
    /* A secret of kind ("store", "model:<provider>", "mcp:<name>"): copies it into buf
     * and its length to *len; PN_E_NOT_FOUND when the host has none, PN_E_LIMIT when cap
     * is too small (*len = the size needed). May be NULL (no secrets at all). */
    pn_err (*credential)(void *ctx, const char *kind, char *buf, size_t cap, size_t *len);
    /* Randomness (store session ids, the SCRAM nonce). */
    bool (*random)(void *ctx, void *buf, size_t n);
} paw_host;

typedef struct paw paw;

/* ---- the tool seam: where the model's tools come from in this form (an MCP client
 * over streamable HTTP is one source). Nothing of the host's file system or shell is
 * ever offered. Every function runs on the reactor's thread and returns at once. */

/* The one answer of a started call: rc 0 ran (out->is_error tells a tool failure), 1
 * cancelled, -1 internal failure; out's strings are taken. */
typedef void (*paw_tool_done_fn)(void *call_ud, int rc, pag_tool_output *out);

typedef struct paw_tool_source {
    void *ctx;
    /* The tools offered now (borrowed until the next call of list or close). A tool's
     * needs_permission sends its calls through the permission gate. */
    const pag_tool_info *(*list)(void *ctx, size_t *n);
    /* Starts tool name with args (JSON text). 0: done(call_ud, ...) follows exactly once,
     * never from inside start; *handle names the call for cancel. Nonzero: nothing
     * started and nothing follows. */
    int (*start)(void *ctx, const char *name, const char *args_json, paw_tool_done_fn done,
                 void *call_ud, void **handle);
    /* Asks a started call to stop (its done still follows, rc 1 when it stopped). */
    void (*cancel)(void *ctx, void *handle);
    /* A port event: true when it was this source's (the reactor asks every source). */
    bool (*on_event)(void *ctx, const pn_event *ev);
    /* Closes what the source holds; settled is true once all of it has settled. */
    void (*close)(void *ctx);
    bool (*settled)(void *ctx);
} paw_tool_source;

/* Adds a tool source (copied; its ctx must outlive the reactor). Before paw_start; at most
 * 8. 0, or PN_E_LIMIT / PN_E_INVALID (a required function missing, or after start). */
int paw_add_tool_source(paw *p, const paw_tool_source *src);

/* A reactor over h (copied; the table's pointers must outlive it). NULL when out of
 * memory or a required entry is missing. */
paw *paw_new(const paw_host *h);
/* The start object (docs/wasm-host.md, "The start object"): cwd, settings, storage and
 * machineId, all required and checked before anything starts. 0, or a negative pn_err
 * with an English message in err (also logged): PN_E_INVALID for a bad start object (a
 * local store locator among them), PN_E_CLOSED after paw_close, PN_E_LIMIT when called
 * a second time (one instance holds one identity). */
int paw_start(paw *p, const char *json, size_t len, char *err, size_t errlen);
/* Bytes the client sent, in any split (newline-delimited JSON-RPC). 0, or a pn_err
 * (PN_E_CLOSED after close). Frames that arrive before the store is open are kept and
 * run in order once it is. */
int paw_input(paw *p, const char *data, size_t len);
/* The client closed its side: running turns are cancelled and everything is closed, as
 * by paw_close (no client is left to answer). */
void paw_input_end(paw *p);
/* One event of the ports (the host's event callback routes every event here). */
void paw_event(paw *p, const pn_event *ev);
/* Begins shutdown: cancels turns, closes the model requests, the store, MCP
 * connections and timers; the settled callback follows once all of it has settled
 * (possibly before this returns, when nothing was open). 0, or PN_E_CLOSED again. */
int paw_close(paw *p);
/* True once everything the reactor opened has settled after paw_close. */
bool paw_settled(const paw *p);
void paw_free(paw *p);

#ifdef __cplusplus
}
#endif
#endif
