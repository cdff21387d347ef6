/*
 * check.c — the contract's request checks, in the reference host's order, with its
 * exact messages: runner length, scope, digest, program text length, input size,
 * Base64, decoded length, SHA-256. (Grant, binding, Wasm validity and input JSON
 * follow in room.c, in that order.)
 */
#include "room_int.h"

#include <stdlib.h>
#include <string.h>

#define MSG_RUNNER   "运行器名无效"
#define MSG_SCOPE    "隔离范围无效"
#define MSG_DIGEST   "产物摘要无效"
#define MSG_PROGRAM  "运行产物无效"
#define MSG_INPUT    "运行输入超过上限"
#define MSG_BASE64   "运行产物无效：不是有效的 Base64"
#define MSG_MISMATCH "运行产物摘要不匹配"

static bool scope_ok(pr_str s) {
    if (s.len < 1 || s.len > PR_NAME_MAX) return false;
    for (size_t i = 0; i < s.len; i++) {
        unsigned char c = (unsigned char)s.ptr[i];
        if (c < 32 || c == 127) return false;
    }
    return true;
}

static bool digest_ok(pr_str d) {
    if (d.len != 64) return false;
    for (size_t i = 0; i < 64; i++) {
        char c = d.ptr[i];
        if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
    }
    return true;
}

bool pr__check_shape(const pr_request *req, pr_error *err) {
    if (req->runner.len < 1 || req->runner.len > PR_NAME_MAX) {
        pr__err_set(err, PR_KIND_VIOLATION, MSG_RUNNER);
        return false;
    }
    if (!scope_ok(req->scope)) {
        pr__err_set(err, PR_KIND_VIOLATION, MSG_SCOPE);
        return false;
    }
    if (!digest_ok(req->digest)) {
        pr__err_set(err, PR_KIND_VIOLATION, MSG_DIGEST);
        return false;
    }
    if (req->program.len < 1 || req->program.len > PR_PROGRAM_TEXT_MAX) {
        pr__err_set(err, PR_KIND_VIOLATION, MSG_PROGRAM);
        return false;
    }
    if (req->input.len > PR_INPUT_MAX) {
        pr__err_set(err, PR_KIND_VIOLATION, MSG_INPUT);
        return false;
    }
    return true;
}

bool pr__check_program(const pr_request *req, uint8_t **bytes, size_t *len, pr_error *err) {
    int rc = pr__base64_decode(req->program.ptr, req->program.len, PR_PROGRAM_MAX, bytes, len);
    if (rc == -1) {
        pr__err_set(err, PR_KIND_VIOLATION, MSG_BASE64);
        return false;
    }
    if (rc == -2) {
        pr__err_set(err, PR_KIND_VIOLATION, MSG_PROGRAM);
        return false;
    }
    if (rc == -3) {
        pr__err_set(err, PR_KIND_RUN_FAILED, "隔离运行失败：内存不足");
        return false;
    }
    uint8_t d[32];
    char hex[65];
    if (!pr__sha256(*bytes, *len, d)) {
        free(*bytes);
        *bytes = NULL;
        pr__err_set(err, PR_KIND_RUN_FAILED, "隔离运行失败：SHA-256 不可用");
        return false;
    }
    pr__hex(d, 32, hex);
    if (memcmp(hex, req->digest.ptr, 64) != 0) {
        free(*bytes);
        *bytes = NULL;
        pr__err_set(err, PR_KIND_VIOLATION, MSG_MISMATCH);
        return false;
    }
    return true;
}
