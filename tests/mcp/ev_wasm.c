/*
 * ev_wasm.c — a wasm32-wasi reactor guest of the agent module ABI (docs/wasm-host.md)
 * that drives the event-driven MCP client (peri/mcp_ev.h) over the guest side of the
 * ports (src/net/port_wasm.c). Built by tests/mcp/ev_wasm.sh with clang and wasi-libc
 * alone (no threads, no libcurl) and run on the project's engine by test_mcp_ev --wasm.
 *
 * peri_start's bytes are the server's URL: the guest connects, sends "ready <n> tools"
 * (or "failed: <error>"), calls echo {"message":"wasm"} and sends "echo: <text>", then
 * closes the client; once it settled, peri_host.settled reports {"settled":true}.
 * peri_close closes the client early.
 */
#include "peri/mcp_ev.h"
#include "peri/net.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

__attribute__((import_module("peri_host"), import_name("send"))) int32_t host_send(const void *p,
                                                                                   uint32_t n);
__attribute__((import_module("peri_host"), import_name("settled"))) void host_settled(const void *p,
                                                                                      uint32_t n);

static pmcp_ev_client *g_client;
static bool g_closing;

static void say(const char *s) {
    host_send(s, (uint32_t)strlen(s));
}

static void on_event(void *ctx, const pn_event *ev) {
    (void)ctx;
    if (g_client) pmcp_ev_on_event(g_client, ev);
}

static void on_settled(void *ctx) {
    (void)ctx;
    g_client = NULL;
    const char *r = "{\"settled\":true}";
    host_settled(r, (uint32_t)strlen(r));
}

static void close_client(void) {
    if (!g_client || g_closing) return;
    g_closing = true;
    if (pmcp_ev_close(g_client, on_settled, NULL) != PMCP_EV_OK) on_settled(NULL);
}

static void on_done(void *ctx, const pmcp_ev_result *r) {
    (void)ctx;
    char line[600];
    snprintf(line, sizeof line, "echo: %.500s (%s)\n", r->text, pmcp_ev_status_name(r->status));
    say(line);
    close_client();
}

static void on_ready(void *ctx, pmcp_ev_status st, const char *err) {
    (void)ctx;
    char line[600];
    if (st != PMCP_EV_OK) {
        snprintf(line, sizeof line, "failed: %.500s\n", err);
        say(line);
        close_client();
        return;
    }
    snprintf(line, sizeof line, "ready %zu tools, session %.100s\n", pmcp_ev_tool_count(g_client),
             pmcp_ev_session(g_client));
    say(line);
    if (!pmcp_ev_call_tool(g_client, "echo", "{\"message\":\"wasm\"}", 0, on_done, NULL, NULL, NULL,
                           0))
        close_client();
}

__attribute__((export_name("peri_start"))) int32_t peri_start(char *ptr, uint32_t len) {
    char *url = malloc((size_t)len + 1);
    if (url) {
        memcpy(url, ptr, len);
        url[len] = 0;
    }
    free(ptr);
    pmcp_ev_opts o = {.url = url, .name = "wasm", .init_deadline_ms = 10000};
    pmcp_ev_status st = PMCP_EV_E_NOMEM;
    g_client = url ? pmcp_ev_new(pn_wasm_ports(on_event, NULL), &o, &st, NULL, 0) : NULL;
    free(url);
    if (g_client) st = pmcp_ev_connect(g_client, on_ready, NULL);
    return st == PMCP_EV_OK ? 0 : -2;
}

__attribute__((export_name("peri_input"))) int32_t peri_input(char *ptr, uint32_t len) {
    (void)len;
    free(ptr);
    return 0;
}

__attribute__((export_name("peri_close"))) int32_t peri_close(void) {
    close_client();
    return 0;
}
