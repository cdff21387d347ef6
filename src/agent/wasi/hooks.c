/*
 * agent/wasi/hooks.c — command hooks in the WebAssembly form (wasm32-wasi, built only by
 * cmake/wasm.cmake; the native library uses middleware/hooks.c). The module cannot
 * start processes, so any configured hook is an error the settings check reports.
 */
#include "peri/agent.h"

#include <stdio.h>

size_t pag_hooks_check(const pj_t *hooks, const char *path, pag_settings_report_fn report,
                       void *ud) {
    if (!hooks || pj_is_null(hooks)) return 0;
    char msg[256];
    snprintf(msg, sizeof msg, "%s: command hooks cannot run inside the WebAssembly form",
             path ? path : "hooks");
    if (report) report(ud, true, msg);
    return 1;
}
