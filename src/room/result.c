/*
 * result.c — the return value: collects the output files (/数据/ and /响应/, first-
 * write order, at most 256 files and 1,048,576 content bytes, strict UTF-8) and
 * writes the JSON text exactly as JSON.stringify writes the reference object:
 * {"ok","stdout","stderr","exitCode"[,"error"],"files"} with no whitespace.
 */
#include "room_int.h"

#include <stdio.h>
#include <string.h>

#define DIR_DATA "/数据/"
#define DIR_RESP "/响应/"
#define BODY_MAX 300 /* the reference cuts a failure body to 300 characters */

static bool returned_path(const char *p, size_t n) {
    size_t a = sizeof DIR_DATA - 1, b = sizeof DIR_RESP - 1;
    return (n >= a && memcmp(p, DIR_DATA, a) == 0) || (n >= b && memcmp(p, DIR_RESP, b) == 0);
}

static void interface_failure(pr_error *err, const char *body, size_t n) {
    size_t cut = pr__utf8_cut_utf16(body, n, BODY_MAX);
    pr__err_set(err, PR_KIND_INTERFACE, "隔离运行失败：500：%.*s", (int)cut, body);
}

bool pr__result_json(const pr_outcome *o, const pr_fs *fs, pb_buf *out, pr_error *err) {
    char num[48];
    bool ok = pb_buf_puts(out, o->ok ? "{\"ok\":true,\"stdout\":" : "{\"ok\":false,\"stdout\":") &&
              pr__json_str(out, o->stdout_text ? o->stdout_text : "", o->stdout_len) &&
              pb_buf_puts(out, ",\"stderr\":") &&
              pr__json_str(out, o->stderr_text ? o->stderr_text : "", o->stderr_len);
    pr__json_exit_code(num, sizeof num, o->exit_code);
    ok = ok && pb_buf_puts(out, num);
    if (ok && o->error)
        ok = pb_buf_puts(out, ",\"error\":") && pr__json_str(out, o->error, strlen(o->error));
    ok = ok && pb_buf_puts(out, ",\"files\":{");
    size_t cur = 0, count = 0, total = 0;
    const char *path;
    size_t plen, len;
    const uint8_t *data;
    while (ok && pr_fs_next(fs, &cur, &path, &plen, &data, &len)) {
        if (!returned_path(path, plen)) continue;
        total += len;
        if (total > PR_FILES_BYTES_MAX || count >= PR_FILES_MAX) {
            static const char msg[] = "运行数据超过上限";
            interface_failure(err, msg, sizeof msg - 1);
            return false;
        }
        if (!pr__utf8_valid(data, len)) {
            pb_buf body = {0};
            if (!pb_buf_puts(&body, "输出文件不是有效 UTF-8：") || !pb_buf_put(&body, path, plen)) {
                pb_buf_free(&body);
                break;
            }
            interface_failure(err, body.p, body.len);
            pb_buf_free(&body);
            return false;
        }
        size_t skip = len >= 3 && memcmp(data, "\xEF\xBB\xBF", 3) == 0 ? 3 : 0; /* TextDecoder */
        ok = (count == 0 || pb_buf_putc(out, ',')) && pr__json_str(out, path, plen) &&
             pb_buf_putc(out, ':') && pr__json_str(out, (const char *)data + skip, len - skip);
        count++;
    }
    if (ok && pb_buf_puts(out, "}}")) return true;
    pr__err_set(err, PR_KIND_RUN_FAILED, "隔离运行失败：内存不足");
    return false;
}

bool pr__respond(const pr_outcome *o, const pr_fs *fs, const char *isolate, pr_response *out,
                 pr_error *err) {
    pb_buf res = {0};
    bool ok = false;
    if (pr__result_json(o, fs, &res, err)) {
        out->output = pb_buf_take(&res, &out->output_len);
        if (out->output) {
            snprintf(out->isolate, sizeof out->isolate, "%s", isolate);
            out->stop = o->stop;
            ok = true;
        } else {
            pr__err_set(err, PR_KIND_RUN_FAILED, "隔离运行失败：内存不足");
        }
    }
    pb_buf_free(&res);
    return ok;
}
