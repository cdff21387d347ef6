/*
 * fuzz_mcp.c — libFuzzer target for the MCP JSON-RPC frame decoder and the
 * SSE parser that feeds it over HTTP: any bytes must decode to a classified message or
 * a typed error, never a crash, leak or undefined behaviour. The input is also split at
 * every newline and fed to the SSE parser in two chunks.
 *   make fuzz && ./build-fuzz/fuzz-mcp-decode -max_total_time=60
 */
#include "mcp/mcp_int.h"

#include <stdint.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void on_event(void *ctx, const char *event, const char *data, size_t len) {
    size_t *n = ctx;
    pb_rpc_msg m;
    pb_rpc_decode(data, len, NULL, &m);
    *n += (size_t)m.kind + strlen(event);
    pb_rpc_clear(&m);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    pb_rpc_msg m;
    pb_rpc_decode((const char *)data, size, NULL, &m);
    if (m.kind == PB_RPC_REQUEST || m.kind == PB_RPC_NOTIFICATION) {
        if (!m.method || !m.method[0]) __builtin_trap();
    } else if (m.kind == PB_RPC_RESPONSE) {
        if (!m.id || (!m.result) == (!m.error)) __builtin_trap();
    } else if (m.err_code != PMCP_PARSE_ERROR && m.err_code != PMCP_INVALID_REQUEST) {
        __builtin_trap();
    }
    pb_rpc_clear(&m);
    pmcp__sse p;
    memset(&p, 0, sizeof p);
    size_t n = 0, half = size / 2;
    pmcp__sse_feed(&p, (const char *)data, half, on_event, &n);
    pmcp__sse_feed(&p, (const char *)data + half, size - half, on_event, &n);
    pmcp__sse_feed(&p, "\n\n", 2, on_event, &n);
    pmcp__sse_free(&p);
    return 0;
}
