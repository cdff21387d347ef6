/*
 * context.c — the frozen context: the system prompt a session keeps for its life.
 *
 * Built once at session creation from the project instructions file (AGENTS.md,
 * else PERI.md, in cwd; at most 64 KiB; read confined beneath cwd by ptl_read_beneath,
 * so no symlink, FIFO, device or hard link can bring in or block on an outside file),
 * the date and the cwd, then persisted with the thread so a reload sees the same text
 * rather than today's files.
 */
#include "peri/agent.h"
#include "peri/tools.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_INSTRUCTIONS (64u << 10)

/* The guide file `name` in cwd, read through ptl_read_beneath: a symlink leading out of
 * the workspace, a FIFO, a device, a /proc magic link or a hard-linked file is never read
 * (nothing outside the workspace reaches the model provider or the session store, and
 * nothing blocks). At most MAX_INSTRUCTIONS bytes. NULL when absent or refused. */
static char *read_capped(const char *dir, const char *name, size_t *len) {
    char *data = NULL;
    if (ptl_read_beneath(dir, name, MAX_INSTRUCTIONS, true, &data, len) != PTL_F_OK) return NULL;
    return data;
}

char *pag_frozen_context(const char *cwd, int64_t now_ms) {
    static const char intro[] =
        "You are Peri, a coding agent working in the user's workspace. Use the tools to "
        "read, search and change files and to run commands; paths are relative to the "
        "working directory. Be concise.";
    char date[32] = "unknown";
    time_t t = (time_t)(now_ms / 1000);
    struct tm tm;
    if (gmtime_r(&t, &tm)) strftime(date, sizeof date, "%Y-%m-%d", &tm);
    size_t ilen = 0;
    const char *iname = "AGENTS.md";
    char *instr = read_capped(cwd, iname, &ilen);
    if (!instr) {
        iname = "PERI.md";
        instr = read_capped(cwd, iname, &ilen);
    }
    size_t n = sizeof intro + strlen(cwd) + ilen + 256;
    char *out = malloc(n);
    if (out) {
        int k = snprintf(out, n, "%s\n\nWorking directory: %s\nToday's date (UTC): %s\n", intro,
                         cwd, date);
        if (instr && k > 0 && (size_t)k < n)
            snprintf(out + k, n - (size_t)k, "\nProject instructions (%s):\n%s\n", iname, instr);
    }
    free(instr);
    return out;
}
