/*
 * params.c — checks of ACP request parameters shared by the native ACP server and the
 * agent module's reactor (params.h).
 */
#include "acp/params.h"

#include <stdio.h>
#include <string.h>

bool pacp__has_nul(const pj_t *v) {
    return pj_is_string(v) && strlen(pj_string_value(v)) != pj_string_length(v);
}

bool pacp__nul_refusal(const pj_t *v, const char *name, char *msg, size_t len) {
    if (!pacp__has_nul(v)) return false;
    snprintf(msg, len, "%.100s must not contain a NUL character (U+0000)", name);
    return true;
}
