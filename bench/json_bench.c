/*
 * json_bench.c — the project's JSON library (pj_) beside jansson on the messages the
 * agent host handles: an ACP session/update chunk, a model stream delta, a tool call
 * with arguments, an MCP tools/list answer, and a large document (a 10,000-message
 * session history, about 3 MB). For each: parse (loadb) and dump (compact) repeated
 * for about 0.2 s, seven times; the median per operation and MB/s are printed.
 *
 *   build/peri-json-bench [--quick]
 */
#include <jansson.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "peri/base.h"
#include "peri/json.h"

static const char *acp_chunk =
    "{\"jsonrpc\":\"2.0\",\"method\":\"session/update\",\"params\":{\"sessionId\":"
    "\"sess-4f1c2a\",\"update\":{\"sessionUpdate\":\"agent_message_chunk\",\"content\":"
    "{\"type\":\"text\",\"text\":\"Here is the change: the parser now keeps \\\"order\\\" and "
    "reports the line.\\n\"}}}}";
static const char *model_delta =
    "{\"id\":\"chatcmpl-9x8y7z\",\"object\":\"chat.completion.chunk\",\"created\":1733300000,"
    "\"model\":\"gpt-4o-2024-08-06\",\"system_fingerprint\":\"fp_abc123\",\"choices\":[{"
    "\"index\":0,\"delta\":{\"content\":\" the function returns a negative value when "
    "the input is empty, 日本語も\"},\"logprobs\":null,\"finish_reason\":null}],\"usage\":"
    "{\"prompt_tokens\":1234,\"completion_tokens\":56,\"total_tokens\":1290,\"cost\":0.00321}}";
static const char *tool_call =
    "{\"jsonrpc\":\"2.0\",\"id\":42,\"method\":\"session/request_permission\",\"params\":{"
    "\"sessionId\":\"sess-4f1c2a\",\"toolCall\":{\"toolCallId\":\"call_01HZX\",\"title\":"
    "\"Edit src/base/json_load.c\",\"kind\":\"edit\",\"status\":\"pending\",\"rawInput\":{"
    "\"path\":\"/home/user/project/src/base/json_load.c\",\"old_string\":\"static int "
    "pj__scan(pj__lex *lx) {\\n    const char *p = lx->p;\\n\",\"new_string\":\"static int "
    "pj__scan(pj__lex *lx) {\\n    if (lx->failed) return lx->tok = T_INVALID;\\n    const "
    "char *p = lx->p;\\n\",\"replace_all\":false},\"locations\":[{\"path\":\"/home/user/"
    "project/src/base/json_load.c\",\"line\":301}]},\"options\":[{\"optionId\":\"allow\","
    "\"name\":\"Allow\",\"kind\":\"allow_once\"},{\"optionId\":\"always\",\"name\":\"Always "
    "allow\",\"kind\":\"allow_always\"},{\"optionId\":\"reject\",\"name\":\"Reject\",\"kind\":"
    "\"reject_once\"}]}}";

static char *mcp_tools_list(void) {
    pb_buf b = {0};
    pb_buf_puts(&b, "{\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{\"tools\":[");
    for (int i = 0; i < 30; i++)
        pb_buf_printf(&b,
                      "%s{\"name\":\"tool_%d\",\"description\":\"Does thing %d to the "
                      "workspace; safe to call repeatedly.\",\"inputSchema\":{\"type\":"
                      "\"object\",\"properties\":{\"path\":{\"type\":\"string\"},\"limit\":"
                      "{\"type\":\"integer\",\"minimum\":1,\"maximum\":1000},\"ratio\":{"
                      "\"type\":\"number\",\"default\":0.75}},\"required\":[\"path\"]}}",
                      i ? "," : "", i, i);
    pb_buf_puts(&b, "]}}");
    return b.p;
}

static char *history(int n) {
    pb_buf b = {0};
    pb_buf_puts(&b, "{\"sessionId\":\"sess-4f1c2a\",\"messages\":[");
    for (int i = 0; i < n; i++)
        pb_buf_printf(&b,
                      "%s{\"seq\":%d,\"role\":\"%s\",\"at\":\"2026-12-04T05:30:%02d.123Z\","
                      "\"content\":[{\"type\":\"text\",\"text\":\"Message %d: résumé of "
                      "the step, with a \\\"quote\\\", a tab\\t and ✓ marks.\"}],\"usage\":{"
                      "\"input\":%d,\"output\":%d,\"cost\":%.6f}}",
                      i ? "," : "", i, i % 2 ? "assistant" : "user", i % 60, i, 1000 + i, i % 300,
                      i * 0.000137);
    pb_buf_puts(&b, "]}");
    return b.p;
}

typedef struct timing {
    double parse_ns, dump_ns;
} timing;

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Median ns per operation of op over rounds rounds, each about budget_us long. */
#define MEASURE(result, rounds, budget_us, setup, op, teardown)                                    \
    do {                                                                                           \
        double per[16];                                                                            \
        for (int r_ = 0; r_ < (rounds); r_++) {                                                    \
            long n_ = 0;                                                                           \
            int64_t t0_ = pb_mono_us(), t1_;                                                       \
            do {                                                                                   \
                for (int k_ = 0; k_ < 16; k_++) {                                                  \
                    setup;                                                                         \
                    op;                                                                            \
                    teardown;                                                                      \
                    n_++;                                                                          \
                }                                                                                  \
                t1_ = pb_mono_us();                                                                \
            } while (t1_ - t0_ < (budget_us));                                                     \
            per[r_] = (double)(t1_ - t0_) * 1000.0 / (double)n_;                                   \
        }                                                                                          \
        qsort(per, (size_t)(rounds), sizeof(double), cmp_double);                                  \
        (result) = per[(rounds) / 2];                                                              \
    } while (0)

static void bench(const char *name, const char *doc, int rounds, int64_t budget) {
    size_t len = strlen(doc);
    timing pj, ja;
    MEASURE(pj.parse_ns, rounds, budget, , pj_t *v = pj_loadb(doc, len, 0, NULL), pj_decref(v));
    MEASURE(ja.parse_ns, rounds, budget, , json_t *v = json_loadb(doc, len, 0, NULL),
            json_decref(v));
    pj_t *pv = pj_loadb(doc, len, 0, NULL);
    json_t *jv = json_loadb(doc, len, 0, NULL);
    if (!pv || !jv) {
        fprintf(stderr, "%s: does not parse\n", name);
        exit(1);
    }
    char *a = pj_dumps(pv, PJ_COMPACT), *b = json_dumps(jv, JSON_COMPACT);
    if (!a || !b || strcmp(a, b)) {
        fprintf(stderr, "%s: the two dumps differ\n", name);
        exit(1);
    }
    free(a);
    free(b);
    MEASURE(pj.dump_ns, rounds, budget, , char *s = pj_dumps(pv, PJ_COMPACT), free(s));
    MEASURE(ja.dump_ns, rounds, budget, , char *s = json_dumps(jv, JSON_COMPACT), free(s));
    pj_decref(pv);
    json_decref(jv);
    double mb = (double)len / 1e6;
    printf("%-16s %8zu B | parse  pj %10.0f ns (%6.1f MB/s)  jansson %10.0f ns (%6.1f MB/s)  "
           "x%.2f\n",
           name, len, pj.parse_ns, mb / (pj.parse_ns / 1e9), ja.parse_ns, mb / (ja.parse_ns / 1e9),
           ja.parse_ns / pj.parse_ns);
    printf("%-16s %8s   | dump   pj %10.0f ns (%6.1f MB/s)  jansson %10.0f ns (%6.1f MB/s)  "
           "x%.2f\n",
           "", "", pj.dump_ns, mb / (pj.dump_ns / 1e9), ja.dump_ns, mb / (ja.dump_ns / 1e9),
           ja.dump_ns / pj.dump_ns);
}

int main(int argc, char **argv) {
    bool quick = argc > 1 && !strcmp(argv[1], "--quick");
    int rounds = quick ? 3 : 7;
    int64_t budget = quick ? 20000 : 200000;
    char *tools = mcp_tools_list(), *big = history(10000);
    printf("pj_ vs jansson %s: median of %d rounds (x = jansson time / pj time)\n", JANSSON_VERSION,
           rounds);
    bench("acp chunk", acp_chunk, rounds, budget);
    bench("model delta", model_delta, rounds, budget);
    bench("tool call", tool_call, rounds, budget);
    bench("mcp tools/list", tools, rounds, budget);
    bench("history 10k", big, rounds, budget * 5);
    free(tools);
    free(big);
    return 0;
}
