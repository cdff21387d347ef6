/*
 * prompt_message.h — ACP ContentBlock[] to the user message of a turn (prompt_message.c),
 * shared by the native ACP server and the agent module's reactor. No threads, no I/O.
 */
#ifndef PACP_PROMPT_MESSAGE_H
#define PACP_PROMPT_MESSAGE_H

#include "peri/json.h"
#include "peri/model.h"
#include "peri/rpc.h"

#include <stdbool.h>
#include <stddef.h>

/* Growing text buffer for the prompt's text and the refusal notice (p malloc'd). */
typedef struct pacp_tbuf {
    char *p;
    size_t len;
    bool oom;
} pacp_tbuf;

/* What the session's model takes beside text and images. */
typedef struct pacp_accepts {
    bool audio;
    char model[160];
    char cwd[4096]; /* the session's directory ("" unknown) */
} pacp_accepts;

/* Why a prompt was refused: a JSON-RPC code and its message. */
typedef struct pacp_prompt_err {
    int code;
    char message[320];
} pacp_prompt_err;

/* Builds the user message from ContentBlock[]: text, resource links and embedded text
 * resources become text; images (and image blobs) become image parts. A block that
 * cannot be passed on is refused on its own: notice says which and why, the rest of the
 * prompt goes through. A string field with a NUL byte (which would cut the text short)
 * refuses the whole prompt instead, naming it: "prompt[N].text must not contain ...".
 * 0, or -1 with *r set (nothing usable, or a NUL byte: -32602; out of memory: -32603);
 * m is left empty then. */
int pacp__build_message(pj_t *blocks, pm_message *m, pacp_tbuf *notice, pacp_prompt_err *r,
                        const pacp_accepts *acc);

#endif
