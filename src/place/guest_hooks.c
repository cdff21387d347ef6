/*
 * guest_hooks.c — placement's interpreter hooks filled with the room's interpreters:
 * a {"ruby": SOURCE} request placed in wasm_room runs the script with pr_ruby, a
 * {"python": SOURCE} request with pr_python, each in a fresh room with the request's
 * files and stdin, under the attempt's limits (the tighter of the request's and the
 * room host's, room_backend.c) and the attempt's capability grant (the session's
 * handler, the report's log); the run stops when the request is cancelled. Both
 * interpreters are one handle type (pr_guest) with one job (pr_guest_job), so one hook
 * maps a placement request onto either. Also the public face of the Python import reader
 * (pyscan.c).
 */
#include "place_int.h"
#include "pyscan.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool hook_cancelled(void *ud) {
    return pl_cancel_triggered((const pl_cancel *)ud);
}

/* The hook: builds the room job of a request and runs it with the guest (ud). */
static bool guest_hook(void *ud, pr_host *room, const char *source, size_t source_len,
                       const pl_file *files, size_t nfiles, const char *stdin_data,
                       size_t stdin_len, const pl_limits *limits, const pl_grant *grant,
                       const struct pl_cancel *cancel, pr_response *out, pr_error *err) {
    (void)room;
    pr_str *paths = nfiles ? calloc(nfiles, sizeof *paths) : NULL;
    pr_str *texts = nfiles ? calloc(nfiles, sizeof *texts) : NULL;
    if (nfiles && (!paths || !texts)) {
        free(paths);
        free(texts);
        snprintf(err->message, sizeof err->message, "隔离运行失败：内存不足");
        err->kind = PR_KIND_RUN_FAILED;
        return false;
    }
    for (size_t i = 0; i < nfiles; i++) {
        paths[i] = (pr_str){files[i].path, strlen(files[i].path)};
        texts[i] = (pr_str){files[i].text, files[i].text_len};
    }
    pr_guest_job job = {.source = {source, source_len},
                        .paths = paths,
                        .contents = texts,
                        .nfiles = nfiles,
                        .stdin_data = {stdin_data, stdin_len},
                        .cancelled = cancel ? hook_cancelled : NULL,
                        .cancel_ud = (void *)cancel,
                        .capability = grant ? grant->fn : NULL,
                        .cap_ud = grant ? grant->ud : NULL,
                        .cap_log = grant ? grant->log : NULL};
    if (limits)
        job.limits = (pr_limits){.cpu_ms = limits->cpu_ms,
                                 .wall_ms = limits->wall_ms,
                                 .memory_cap = (uint64_t)limits->memory_mib << 20,
                                 .output_max = limits->output_bytes};
    bool ok = pr_guest_run(ud, &job, out, err);
    free(paths);
    free(texts);
    return ok;
}

pl_ruby_hook pl_ruby_room_hook(pr_ruby *rb) {
    return (pl_ruby_hook){.run = guest_hook, .ud = rb};
}

pl_ruby_hook pl_python_room_hook(pr_python *py) {
    return (pl_ruby_hook){.run = guest_hook, .ud = py};
}

uint32_t pl_python_requirements(const char *src, size_t len, char *why, size_t why_len) {
    pl_pyscan sc;
    pl__pyscan(src, len, &sc);
    if (why && why_len) snprintf(why, why_len, "%s", sc.why);
    return sc.requirements;
}
