/*
 * remote_wasm.c — the remote store client linked into a wasm32-wasi program on its own
 * (remote*.c, rules_sql.c, pg_shared.c, error.c, uuid_form.c, the wire client and base's
 * crypto: no libpq, no libcrypto, no threads) and run on the project's engine. It checks
 * what needs no server: locators the port cannot serve are refused with their words, the
 * name-based workspace id is the native one, and an operation on a store that is not
 * open is refused. Built and run by the store.remote_wasm test.
 */
#include "peri/net.h"
#include "peri/store.h"

#include <stdio.h>
#include <string.h>

static void cb(void *ud, pst_remote_result *res) {
    (void)ud;
    (void)res;
}

static bool no_random(void *ctx, void *buf, size_t n) {
    (void)ctx;
    memset(buf, 7, n);
    return true;
}

int main(void) {
    pn_ports ports = {0};
    const char *bad[] = {"/home/u/.peri/peri.db", "postgresql://u:pw@h/db",
                         "postgresql://u@h/db?sslmode=require"};
    int fails = 0;
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        pst_error e;
        pst_remote *r = pst_remote_open(
            &(pst_remote_options){.ports = &ports, .locator = bad[i], .random = no_random}, cb,
            NULL, &e);
        printf("%s -> %s: %s\n", bad[i], pst_status_name(e.status), e.message);
        fails += r != NULL || e.status != PST_ERR_ARG;
    }
    char id[PST_ID_LEN];
    pst_workspace_id("0190a000-0000-4000-8000-00000000000a", "/work/a", id);
    printf("workspace id %s\n", id);
    /* the value the libcrypto implementation gave: sha256("peri.workspace.v1\0" machine
     * "\0" path), version 8, RFC 4122 variant */
    fails += strcmp(id, "e26cbab8-c02b-8604-97c4-cd9baa46578d") != 0;
    pst_error e;
    fails += pst_remote_thread_get(NULL, "x", cb, NULL, &e) != PST_ERR_ARG;
    printf("%s\n", fails ? "FAIL" : "ok");
    return fails != 0;
}
