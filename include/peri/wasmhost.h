/*
 * wasmhost.h — the engine-side host of the agent host's WebAssembly form (prefix pwh_).
 *
 * A pwh_instance instantiates a reactor module that follows docs/wasm-host.md on
 * Peri-C's engine, links its peri_port imports onto a native ports loop (pn_loop, see
 * net.h) and its peri_host imports onto the caller's callbacks, and calls its exports.
 * Rules it keeps for the module:
 *  - no re-entrancy: an export is never called while another runs (a nested attempt
 *    fails with PWH_E_BUSY); port events reach the module only from pwh_run_once;
 *  - every pointer and length the module passes is checked against its memory: a bad
 *    one is answered with PN_E_INVALID, the host never reads or writes outside it;
 *  - the network is granted only to the destinations of the allow-list;
 *  - a trap ends the instance (PWH_E_TRAP); its ports are closed and still settle.
 * The caller learns when capacity can be reused from pwh_settlement.
 *
 * Threading: one instance is used by one thread at a time. Ownership: the caller owns
 * the instance (pwh_free); the module passed in is borrowed and must outlive it.
 */
#ifndef PERI_WASMHOST_H
#define PERI_WASMHOST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "peri/net.h"
#include "peri/wasm.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum pwh_status {
    PWH_OK = 0,
    PWH_E_ARG,    /* bad argument from the caller */
    PWH_E_LINK,   /* the module does not follow the ABI (imports, exports, types) */
    PWH_E_TRAP,   /* the module trapped or broke the ABI at run time: the instance ended */
    PWH_E_NOMEM,  /* the host or the module (peri_alloc returned 0) is out of memory */
    PWH_E_BUSY,   /* an export is already running (re-entrancy refused) */
    PWH_E_STATE,  /* wrong order: start twice, input before start, after close */
    PWH_E_MODULE, /* the export returned an error (the pn_err is in pwh_last_module_err) */
} pwh_status;

/* A credential the host hands the module on request (peri_host.credential): kind is
 * "store", "model:<name>", "mcp:<name>" or "telemetry"; value is the secret. */
typedef struct pwh_credential {
    const char *kind;
    const char *value;
} pwh_credential;

typedef struct pwh_opts {
    const pw_module *module; /* required; borrowed */
    /* The destinations the instance may open, "host:port" (host compared without case;
     * a numeric IPv6 address in brackets: "[::1]:443"). Resolution of a listed host is
     * granted too. Empty: no network at all. */
    const char *const *allow;
    size_t nallow;
    const pwh_credential *credentials;
    size_t ncredentials;
    const char *ca_file;         /* TLS trust store (NULL: the system's) */
    uint32_t connect_timeout_ms; /* 0: 30 s */
    uint32_t max_handles;        /* 0: 256 */
    uint64_t memory_cap;         /* the module's memory bound; 0: 1 GiB */
    int engine;                  /* PW_ENGINE_* */
    /* Callbacks (all optional), called on the caller's thread during pwh_* calls. */
    void (*on_send)(void *ud, const uint8_t *data, size_t len); /* ACP bytes out */
    void (*on_log)(void *ud, int level, const char *text, size_t len);
    void (*on_settled)(void *ud, const char *json, size_t len); /* the module's report */
    void *ud;
} pwh_opts;

typedef struct pwh_instance pwh_instance;

/* Instantiates the module and runs _initialize. NULL with err on failure. Caller frees
 * with pwh_free. */
pwh_instance *pwh_new(const pwh_opts *o, char *err, size_t errlen);
/* Closes every port (no event reaches the module any more) and frees everything. */
void pwh_free(pwh_instance *w);

/* The exports. Each returns PWH_OK, or an error with the reason in pwh_error(w). */
pwh_status pwh_start(pwh_instance *w, const char *json, size_t len);
pwh_status pwh_input(pwh_instance *w, const void *data, size_t len);
pwh_status pwh_input_end(pwh_instance *w);
/* Begins the module's shutdown (peri_close): it cancels its work and closes what it
 * opened; run the instance until pwh_settlement says settled. */
pwh_status pwh_close(pwh_instance *w);
/* The host's hard stop: every open port settles with PN_E_CLOSED (delivered to the
 * module by the next pwh_run_once, unless the instance ended). */
void pwh_close_ports(pwh_instance *w);

/* Waits up to timeout_ms (-1: no limit) for port events and delivers them to the
 * module. Returns the number delivered, or -1 when the loop failed. */
int pwh_run_once(pwh_instance *w, int timeout_ms);
/* Makes pwh_run_once also wake when fd (the client's input) is readable or hung up,
 * and call on_ready(arg) from it; on_ready may call pwh_input, pwh_input_end, pwh_close
 * and pwh_watch(w, -1, ...). The driver then waits on its client and the ports together
 * (no polling). fd < 0 removes the watch. 0, or -1 with errno (EPERM: a regular file,
 * which is always readable: read it without waiting). See pn_loop_watch. */
int pwh_watch(pwh_instance *w, int fd, void (*on_ready)(void *arg), void *arg);

typedef struct pwh_settlement {
    uint32_t streams_open; /* handles not yet settled, by kind */
    uint32_t resolutions_pending;
    uint32_t timers_pending;
    uint64_t streams_settled; /* settling events delivered so far, by kind */
    uint64_t resolutions_settled;
    uint64_t timers_settled;
    uint64_t closed_by_host; /* of those, settled by pwh_close_ports / an ended instance */
    bool module_reported;    /* the module called peri_host.settled */
    bool ended;              /* the instance trapped or broke the ABI */
    bool settled;            /* nothing open: the capacity may be reused */
} pwh_settlement;
void pwh_settlement_get(const pwh_instance *w, pwh_settlement *out);
/* The module's own cleanup report (JSON), or NULL before it sent one. */
const char *pwh_settled_report(const pwh_instance *w);

/* English reason of the last failure ("" when none); valid until the next call. */
const char *pwh_error(const pwh_instance *w);
/* The module's linear memory size in bytes now (it only grows while the instance runs). */
uint64_t pwh_memory_size(pwh_instance *w);
/* The pn_err an export returned with PWH_E_MODULE. */
int pwh_last_module_err(const pwh_instance *w);
/* The engine store of the instance (memory statistics, interrupt). Borrowed. */
pw_store *pwh_store(pwh_instance *w);

#ifdef __cplusplus
}
#endif
#endif
