/*
 * exports.c — the agent module's ABI (docs/wasm-host.md): the exports peri_start,
 * peri_input, peri_input_end and peri_close mapped onto the reactor (peri/agentwasm.h),
 * and the reactor's host table over the peri_host imports (send, log, settled,
 * credential) and the peri_port imports (src/net/port_wasm.c, which also defines
 * peri_alloc, peri_free and peri_port_event). Compiled only for wasm32 (__wasi__);
 * natively this file is empty.
 *
 * Owns: the module's one reactor. It is module-global by necessity: an export carries no
 * context and one instance is exactly one agent host, so the instance is the
 * caller-owned context here (as in port_wasm.c). Blocks the host passes to an export
 * were allocated with peri_alloc and are the module's: freed before the export returns.
 */
#ifdef __wasi__
#include "peri/agentwasm.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#define IMPORT(mod, name) __attribute__((import_module(mod), import_name(name)))
#define EXPORT(name)      __attribute__((export_name(name)))

IMPORT("peri_host", "send") int32_t paw__imp_send(const void *p, uint32_t len);
IMPORT("peri_host", "log") void paw__imp_log(int32_t level, const void *p, uint32_t len);
IMPORT("peri_host", "settled") void paw__imp_settled(const void *p, uint32_t len);
IMPORT("peri_host", "credential")
int32_t paw__imp_credential(const char *kind, uint32_t kind_len, char *buf, uint32_t cap,
                            uint32_t *out_len);

static paw *paw__the; /* the module's one reactor (see the header comment) */

static void on_event(void *ctx, const pn_event *ev) {
    (void)ctx;
    if (paw__the) paw_event(paw__the, ev);
}

static int h_send(void *ctx, const char *data, size_t len) {
    (void)ctx;
    return paw__imp_send(data, (uint32_t)len);
}

static void h_log(void *ctx, int level, const char *text) {
    (void)ctx;
    paw__imp_log(level, text, (uint32_t)strlen(text));
}

static void h_settled(void *ctx, const char *json, size_t len) {
    (void)ctx;
    paw__imp_settled(json, (uint32_t)len);
}

static pn_err h_credential(void *ctx, const char *kind, char *buf, size_t cap, size_t *len) {
    (void)ctx;
    uint32_t got = 0;
    int32_t e = paw__imp_credential(kind, (uint32_t)strlen(kind), buf, (uint32_t)cap, &got);
    *len = got;
    return (pn_err)e;
}

/* wasi-libc's getentropy is WASI's random_get (at most 256 bytes a call). */
static bool h_random(void *ctx, void *buf, size_t n) {
    (void)ctx;
    unsigned char *p = buf;
    while (n > 0) {
        size_t k = n > 256 ? 256 : n;
        if (getentropy(p, k) != 0) return false;
        p += k;
        n -= k;
    }
    return true;
}

/* The reactor, made at the first export that needs it. */
static paw *reactor(void) {
    if (!paw__the)
        paw__the = paw_new(&(paw_host){.ports = pn_wasm_ports(on_event, NULL),
                                       .send = h_send,
                                       .log = h_log,
                                       .settled = h_settled,
                                       .credential = h_credential,
                                       .random = h_random});
    return paw__the;
}

EXPORT("peri_start") int32_t peri_start(char *ptr, uint32_t len) {
    paw *p = reactor();
    char err[400];
    int32_t rc = p ? paw_start(p, ptr, len, err, sizeof err) : PN_E_LIMIT;
    free(ptr);
    return rc;
}

EXPORT("peri_input") int32_t peri_input(char *ptr, uint32_t len) {
    paw *p = reactor();
    int32_t rc = p ? paw_input(p, ptr, len) : PN_E_LIMIT;
    free(ptr);
    return rc;
}

EXPORT("peri_input_end") void peri_input_end(void) {
    paw *p = reactor();
    if (p) paw_input_end(p);
}

EXPORT("peri_close") int32_t peri_close(void) {
    paw *p = reactor();
    if (!p) {
        static const char report[] = "{\"settled\":true,\"error\":\"out of memory\"}";
        paw__imp_settled(report, sizeof report - 1);
        return PN_E_LIMIT;
    }
    return paw_close(p);
}
#endif
