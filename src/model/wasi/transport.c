/*
 * model/wasi/transport.c — the model client's transport in the WebAssembly form
 * (wasm32-wasi, built only by cmake/wasm.cmake; the native library uses http.c). The
 * module has no libcurl and must not block: a client exists (no handles to make), and
 * every blocking attempt (pm_stream) fails with an explicit reason. Model calls run as
 * sans-IO pm_call values driven by the module over the host's ports.
 */
#include "../model_int.h"

#include <stdio.h>

bool pm__http_init(pm_client *c) {
    (void)c;
    return true;
}

void pm__http_free(pm_client *c) {
    (void)c;
}

pm_transport pm__perform(pm_client *c, pm_call *call, atomic_int *cancel, char *why,
                         size_t whylen) {
    (void)c, (void)call, (void)cancel;
    snprintf(why, whylen,
             "blocking model calls cannot run inside the WebAssembly form "
             "(drive a pm_call over the host's ports instead)");
    return PM_TRANSPORT_FAILED;
}
