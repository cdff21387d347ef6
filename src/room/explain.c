/*
 * explain.c — the English meaning of the room's contract messages, for people.
 *
 * The isolation contract prescribes its error texts in Chinese, byte for byte
 * (`peri isolate`, the run tool's result); they stay as they are wherever the contract
 * applies, and nothing here changes them. The user-facing commands (`peri run`,
 * `peri ruby`) speak English instead, and `peri isolate` / `peri print` add the English
 * beside the contract text on a terminal. The room owns the messages, so it owns their
 * meanings: a table of prefixes (with an optional suffix) whose remainder — a number, a
 * name — is carried into the English text. Unknown messages have no explanation (NULL);
 * the caller then shows the message as it is. Pure functions, no state.
 */
#include "peri/room.h"

#include <stdio.h>
#include <string.h>

typedef struct explain_row {
    const char *prefix;  /* the contract message up to its variable part */
    const char *suffix;  /* after the variable part ("" for none) */
    const char *english; /* printf format with at most one %s: the variable part */
} explain_row;

/* Longer prefixes before the shorter ones they start with. */
static const explain_row rows[] = {
    {"隔离运行失败：动态 Worker 程序不是有效 Wasm", "",
     "not a WebAssembly module (a .wasm file starts with the bytes \\0asm); compile the "
     "program to WebAssembly (for C: a wasm32-wasi target) and pass the .wasm file"},
    {"隔离运行失败：CPU 时间超过 ", " ms", "stopped after %s ms of CPU time (the CPU time limit)"},
    {"隔离运行失败：运行时间超过 ", " ms",
     "stopped after %s ms of wall-clock time (the wall-clock limit)"},
    {"隔离运行失败：内存超过上限", "", "stopped: the program's memory went over the limit"},
    {"隔离运行失败：内存不足", "", "out of memory"},
    {"隔离运行失败：编译文件超过 128 MiB 上限", "", "the module is larger than the 128 MiB limit"},
    {"隔离运行失败：未授权的LOADER绑定：", "",
     "the runner \"%s\" is not a granted LOADER binding (grant it with --grant NAME)"},
    {"隔离运行失败：绑定不存在：", "", "there is no binding named \"%s\""},
    {"隔离运行失败：无法链接导入：", "（宿主只提供函数）",
     "cannot link the import %s: the host provides only functions"},
    {"隔离运行失败：导入类型不符：", "",
     "an import of the program does not have the type the host provides"},
    {"隔离运行失败：宿主签名有误", "", "a host function's signature does not match"},
    {"隔离运行失败：已取消", "", "cancelled"},
    {"隔离运行失败：无法启动运行限制", "", "cannot start the run's time limits"},
    {"隔离运行失败：SHA-256 不可用", "", "SHA-256 is not available"},
    {"隔离运行失败：500：", "", "the program failed: %s"},
    {"隔离运行输入无效：输入不是有效 JSON", "",
     "the input (--input) is not valid JSON; it is an object like "
     "{\"args\": [...], \"files\": {...}}"},
    {"隔离运行输入无效：args 须为字符串数组", "",
     "in the input (--input), \"args\" must be an array of strings"},
    {"隔离运行输入无效：files 须为路径到文字的对象", "",
     "in the input (--input), \"files\" must be an object mapping paths to text"},
    {"运行器名无效", "", "the runner name (--runner) must be 1 to 128 bytes"},
    {"隔离范围无效", "", "the scope (--scope) must be 1 to 128 bytes without control characters"},
    {"产物摘要无效", "",
     "the digest (--digest) must be the SHA-256 of the module as 64 lowercase hex digits "
     "(sha256sum FILE.wasm)"},
    {"运行产物无效：不是有效的 Base64", "",
     "the program (--program) is not Base64 text: encode the module first "
     "(base64 -w0 FILE.wasm > FILE.b64)"},
    {"运行产物无效", "", "the program (--program) is empty or too large"},
    {"运行输入超过上限", "", "the input (--input) is larger than the limit"},
    {"运行产物摘要不匹配", "",
     "the digest (--digest) is not the SHA-256 of the decoded module (sha256sum FILE.wasm)"},
    {"CPU 时间上限不能超过 ", " ms", "the CPU time limit cannot be more than %s ms"},
    {"输出超过 64 KB", "", "the output went over 64 KB"},
    {"输出超过 ", " 字节", "the output went over %s bytes"},
    {"程序没有导出 ", "", "the program exports no %s"},
    {"运行数据超过上限", "", "the returned files are larger than the limit"},
    {"输出文件不是有效 UTF-8：", "", "a returned file is not valid UTF-8: %s"},
    {"违规：Ruby 任务无效（源码超过 1 MiB 或文件过多）", "",
     "the Ruby task is invalid: the source is over 1 MiB or there are too many files"},
    {"违规：文件路径必须以 / 开头：", "", "file paths in the room start with /: %s"},
};

const char *pr_message_english(const char *msg, char *buf, size_t n) {
    if (!msg || !buf || n == 0) return NULL;
    size_t ml = strlen(msg);
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        const explain_row *r = &rows[i];
        size_t pl = strlen(r->prefix), sl = strlen(r->suffix);
        if (ml < pl + sl || memcmp(msg, r->prefix, pl) != 0) continue;
        if (sl && memcmp(msg + ml - sl, r->suffix, sl) != 0) continue;
        bool has_var = strstr(r->english, "%s") != NULL;
        /* A row without a variable part matches the whole message only. */
        if (!has_var && ml != pl + sl) continue;
        if (has_var) {
            /* the variable part is not NUL-terminated inside msg: copy it bounded */
            char var[512];
            snprintf(var, sizeof var, "%.*s", (int)(ml - pl - sl), msg + pl);
            snprintf(buf, n, r->english, var);
        } else {
            snprintf(buf, n, "%s", r->english);
        }
        return buf;
    }
    return NULL;
}
