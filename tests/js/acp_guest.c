/*
 * acp_guest.c — a tiny ACP agent as a wasm32-wasi reactor with the agent-host module's
 * exports (docs/wasm-host.md), for the JS tests of the whole chain: Sandbox →
 * wasmTransportFactory → WasmHost → this module → back. It answers initialize,
 * session/new (session "g1"), session/prompt (one update "pong", the answer after a
 * 20 ms timer of the host's timer port), session/close (-32010 twice, then settled)
 * and -32601 for anything else. Frames are read with a minimal scanner: the SDK sends
 * compact JSON.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define IMPORT(mod, name) __attribute__((import_module(mod), import_name(name)))
#define EXPORT(name)      __attribute__((export_name(name)))

IMPORT("peri_port", "timer_set") int32_t p_timer_set(int64_t delay, uint32_t *out);
IMPORT("peri_host", "send") int32_t h_send(const char *p, int32_t len);
IMPORT("peri_host", "settled") void h_settled(const char *p, int32_t len);

static char line[65536];
static size_t line_len;
static long prompt_id = -1;
static int close_attempts;

static void send_line(const char *s) {
    size_t n = strlen(s);
    char *b = malloc(n + 1);
    if (!b) return;
    memcpy(b, s, n);
    b[n] = '\n';
    h_send(b, (int32_t)n + 1);
    free(b);
}

static void frame(const char *f) {
    char out[512];
    const char *m = strstr(f, "\"method\":\"");
    const char *i = strstr(f, "\"id\":");
    if (!m) return;
    m += 10;
    const char *end = strchr(m, '"');
    if (!end) return;
    size_t ml = (size_t)(end - m);
    long id = i ? strtol(i + 5, NULL, 10) : -1;
#define IS(name) (ml == strlen(name) && !strncmp(m, name, ml))
    if (!i) return; /* notifications (session/cancel) need no answer */
    if (IS("initialize")) {
        snprintf(out, sizeof out,
                 "{\"jsonrpc\":\"2.0\",\"id\":%ld,\"result\":{\"protocolVersion\":1,"
                 "\"agentInfo\":{\"name\":\"guest-acp\",\"version\":\"0\"}}}",
                 id);
    } else if (IS("session/new")) {
        snprintf(out, sizeof out,
                 "{\"jsonrpc\":\"2.0\",\"id\":%ld,\"result\":{\"sessionId\":\"g1\"}}", id);
    } else if (IS("session/prompt")) {
        send_line("{\"jsonrpc\":\"2.0\",\"method\":\"session/update\",\"params\":{\"sessionId\":"
                  "\"g1\",\"update\":{\"sessionUpdate\":\"agent_message_chunk\",\"content\":{"
                  "\"type\":\"text\",\"text\":\"pong\"}}}}");
        uint32_t h;
        prompt_id = id;
        if (p_timer_set(20, &h) != 0) {
            snprintf(out, sizeof out,
                     "{\"jsonrpc\":\"2.0\",\"id\":%ld,\"error\":{\"code\":-32603,\"message\":"
                     "\"no timer\"}}",
                     id);
            send_line(out);
        }
        return;
    } else if (IS("session/close")) {
        if (++close_attempts <= 2)
            snprintf(out, sizeof out,
                     "{\"jsonrpc\":\"2.0\",\"id\":%ld,\"error\":{\"code\":-32010,\"message\":"
                     "\"guest settling\"}}",
                     id);
        else
            snprintf(out, sizeof out, "{\"jsonrpc\":\"2.0\",\"id\":%ld,\"result\":{}}", id);
    } else {
        snprintf(out, sizeof out,
                 "{\"jsonrpc\":\"2.0\",\"id\":%ld,\"error\":{\"code\":-32601,\"message\":"
                 "\"Method not found\"}}",
                 id);
    }
    send_line(out);
#undef IS
}

EXPORT("peri_alloc") void *peri_alloc(int32_t n) {
    return malloc(n > 0 ? (size_t)n : 1);
}
EXPORT("peri_free") void peri_free(void *p) {
    free(p);
}
EXPORT("peri_start") int32_t peri_start(char *p, int32_t len) {
    (void)len;
    free(p);
    return 0;
}
EXPORT("peri_input") int32_t peri_input(char *p, int32_t len) {
    for (int32_t k = 0; k < len; k++) {
        if (p[k] == '\n') {
            line[line_len] = 0;
            frame(line);
            line_len = 0;
        } else if (line_len < sizeof line - 1) {
            line[line_len++] = p[k];
        }
    }
    free(p);
    return 0;
}
EXPORT("peri_input_end") void peri_input_end(void) {}
EXPORT("peri_port_event")
void peri_port_event(int32_t kind, uint32_t h, int32_t err, char *p, int32_t len) {
    (void)h;
    (void)len;
    free(p);
    if (kind == 5 && err == 0 && prompt_id >= 0) {
        char out[128];
        snprintf(out, sizeof out,
                 "{\"jsonrpc\":\"2.0\",\"id\":%ld,\"result\":{\"stopReason\":\"end_turn\"}}",
                 prompt_id);
        prompt_id = -1;
        send_line(out);
    }
}
EXPORT("peri_close") int32_t peri_close(void) {
    static const char report[] = "{\"sessions\":1}";
    h_settled(report, (int32_t)sizeof report - 1);
    return 0;
}
