/*
 * ev_wasm.c — a wasm32-wasi reactor that drives the event-driven MCP client
 * (peri/mcp_ev.h) over the guest side of the ports (src/net/port_wasm.c): built by
 * tests/mcp/ev_wasm.sh to prove the client compiles and links for the agent host's
 * WebAssembly form with nothing but wasi-libc (no threads, no libcurl).
 *
 * Exports: ev_start(url_ptr, url_len) → 0 when the connect started; ev_call(name_ptr,
 * name_len) → 0 when a call started; ev_cancel(); ev_close() → 0 when the close
 * started; ev_state() → 0 nothing yet, 1 ready, 2 failed, 3 settled (+ 4 per call done).
 */
#include "peri/mcp_ev.h"
#include "peri/net.h"

#include <stdlib.h>
#include <string.h>

static pmcp_ev_client *g_client;
static pmcp_ev_call *g_call;
static int g_state, g_dones;

static void on_event(void *ctx, const pn_event *ev) {
    (void)ctx;
    pmcp_ev_on_event(g_client, ev);
}

static void on_ready(void *ctx, pmcp_ev_status st, const char *err) {
    (void)ctx, (void)err;
    g_state = st == PMCP_EV_OK ? 1 : 2;
}

static void on_done(void *ctx, const pmcp_ev_result *r) {
    (void)ctx, (void)r;
    g_call = NULL;
    g_dones++;
}

static void on_settled(void *ctx) {
    (void)ctx;
    g_client = NULL;
    g_state = 3;
}

static char *copy(const char *p, int n) {
    char *s = malloc((size_t)n + 1);
    if (s) {
        memcpy(s, p, (size_t)n);
        s[n] = 0;
    }
    return s;
}

__attribute__((export_name("ev_start"))) int ev_start(const char *url, int len) {
    char *u = copy(url, len);
    pmcp_ev_opts o = {.url = u, .name = "wasm"};
    g_client = u ? pmcp_ev_new(pn_wasm_ports(on_event, NULL), &o, NULL, NULL, 0) : NULL;
    free(u);
    return g_client && pmcp_ev_connect(g_client, on_ready, NULL) == PMCP_EV_OK ? 0 : 1;
}

__attribute__((export_name("ev_call"))) int ev_call(const char *name, int len) {
    char *n = copy(name, len);
    g_call = n && pmcp_ev_tool_count(g_client) && pmcp_ev_tool_at(g_client, 0)
                 ? pmcp_ev_call_tool(g_client, n, "{}", 0, on_done, NULL, NULL, NULL, 0)
                 : NULL;
    free(n);
    return g_call ? 0 : 1;
}

__attribute__((export_name("ev_cancel"))) void ev_cancel(void) {
    pmcp_ev_cancel(g_call);
}

__attribute__((export_name("ev_close"))) int ev_close(void) {
    return pmcp_ev_close(g_client, on_settled, NULL) == PMCP_EV_OK ? 0 : 1;
}

__attribute__((export_name("ev_state"))) int ev_state(void) {
    return g_state + 4 * g_dones;
}
