/*
 * wasmhost_int.h — what the files of the engine-side module host share (prefix pwh__).
 *
 * host.c owns the instance (store, engine instance, ports loop, export calls, event
 * delivery, settlement); imports.c owns the import functions (peri_port, peri_host and
 * the few WASI p1 functions wasi-libc needs) and the destination allow-list.
 */
#ifndef PERI_WASMHOST_INT_H
#define PERI_WASMHOST_INT_H

#include "peri/wasmhost.h"

typedef struct pwh__allow {
    char host[256]; /* lower case, without brackets */
    uint16_t port;
} pwh__allow;

/* The environment of a handle-only import: which call, on which instance. */
typedef struct pwh__op {
    struct pwh_instance *w;
    int op;
} pwh__op;

struct pwh_instance {
    pwh_opts o;
    pw_store *store;
    pw_instance *inst;
    pw_memory *mem;
    pn_loop *loop;
    const pn_ports *ports;
    pw_func *f_alloc, *f_free, *f_start, *f_input, *f_input_end, *f_event, *f_close;
    pwh__allow *allow; /* owned */
    size_t nallow;
    pwh_credential *creds; /* owned copies */
    size_t ncreds;
    bool busy;    /* an export is running */
    bool started; /* peri_start returned */
    bool closing; /* peri_close was called */
    bool ended;   /* trapped or broke the ABI: no more export calls */
    int module_err;
    pwh_settlement st;
    pwh__op ops[4]; /* shutdown, close, resolve_cancel, timer_cancel */
    char *report;   /* owned: the module's settled JSON */
    char err[320];
};

/* imports.c */
bool pwh__resolve(void *ctx, pw_store *s, const pw_module *m, const pw_import_desc *imp,
                  pw_extern *out);
bool pwh__policy(void *ctx, const char *name, const char *addr, uint16_t port);
/* Parses "host:port" entries into w->allow; false with w->err on a bad entry. */
bool pwh__allow_parse(pwh_instance *w, const char *const *v, size_t n);
/* Builds a function type from a signature string: 'i' i32, 'I' i64. */
void pwh__sig(const char *params, const char *results, pw_valtype *buf, pw_functype *out);

#endif
