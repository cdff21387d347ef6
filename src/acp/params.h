/*
 * params.h — checks of ACP request parameters (params.c) shared by the native ACP server
 * (methods.c) and the agent module's reactor (src/agentwasm/), so that both refuse the
 * same parameters with the same words. No threads, no I/O.
 */
#ifndef PACP_PARAMS_H
#define PACP_PARAMS_H

#include "peri/json.h"

#include <stdbool.h>
#include <stddef.h>

/* True when v is a string holding a NUL byte: as a C string it would be cut short there
 * (`"<id>\u0000x"` would name <id>), so such a parameter is refused, never truncated. */
bool pacp__has_nul(const pj_t *v);

/* True when the string parameter `name` (v) holds a NUL byte; msg (len bytes) receives the
 * -32602 message then: "<name> must not contain a NUL character (U+0000)". */
bool pacp__nul_refusal(const pj_t *v, const char *name, char *msg, size_t len);

#endif
