/*
 * python_hook.c — placement's Python hook filled with the room's Python (pr_python):
 * a {"python": SOURCE} request placed in wasm_room runs the script in a fresh room
 * with the request's files and stdin, under the attempt's limits (the tighter of the
 * request's and the room host's, room_backend.c), and the run stops when the request
 * is cancelled. Also the public face of the import reader (pyscan.c).
 */
#include "place_int.h"
#include "pyscan.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

uint32_t pl_python_requirements(const char *src, size_t len, char *why, size_t why_len) {
    pl_pyscan sc;
    pl__pyscan(src, len, &sc);
    if (why && why_len) snprintf(why, why_len, "%s", sc.why);
    return sc.requirements;
}

static bool hook_cancelled(void *ud) {
    return pl_cancel_triggered((const pl_cancel *)ud);
}

static bool hook_run(void *ud, pr_host *room, const char *source, size_t source_len,
                     const pl_file *files, size_t nfiles, const char *stdin_data, size_t stdin_len,
                     const pl_limits *limits, const struct pl_cancel *cancel, pr_response *out,
                     pr_error *err) {
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
    pr_python_job job = {.source = {source, source_len},
                         .paths = paths,
                         .contents = texts,
                         .nfiles = nfiles,
                         .stdin_data = {stdin_data, stdin_len},
                         .cancelled = cancel ? hook_cancelled : NULL,
                         .cancel_ud = (void *)cancel};
    if (limits)
        job.limits = (pr_limits){.cpu_ms = limits->cpu_ms,
                                 .wall_ms = limits->wall_ms,
                                 .memory_cap = (uint64_t)limits->memory_mib << 20,
                                 .output_max = limits->output_bytes};
    bool ok = pr_python_run((pr_python *)ud, &job, out, err);
    free(paths);
    free(texts);
    return ok;
}

pl_ruby_hook pl_python_room_hook(pr_python *py) {
    return (pl_ruby_hook){.run = hook_run, .ud = py};
}
