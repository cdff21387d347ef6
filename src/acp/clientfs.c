/*
 * clientfs.c — ACP client file system: when the client advertised
 * clientCapabilities.fs.readTextFile / writeTextFile in initialize, the workspace
 * read/write/edit tools read and write through fs/read_text_file and
 * fs/write_text_file, so the editor sees unsaved buffers and keeps its own undo.
 *
 * Invariants: paths reaching here were already confined by the tools (default deny is
 * unchanged); a request waits at most 30 s, and gives up at EOF of the client or as soon
 * as the tool call's cancel flag is raised (a cancelled turn settles at once, as with
 * the client's terminals); answers are decoded on the reader thread into plain C
 * strings (no pj_t crosses threads).
 */
#include "acp/server_impl.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define FS_TIMEOUT_MS 30000
#define FS_POLL_MS    20 /* how often a wait looks at the cancel flag */

void pacp__fs_caps(pacp_server *srv, pj_t *caps) {
    pj_t *fs = pj_object_get(caps, "fs");
    atomic_store(&srv->fs_read, pj_is_true(pj_object_get(fs, "readTextFile")));
    atomic_store(&srv->fs_write, pj_is_true(pj_object_get(fs, "writeTextFile")));
}

void pacp__fs_answer(pacp_outreq *r, const pb_rpc_msg *m) {
    pj_t *content = pj_object_get(m->result, "content");
    if (m->error || !m->result) {
        r->error = true;
    } else if (pj_is_string(content)) {
        size_t n = pj_string_length(content);
        r->text = malloc(n + 1);
        if (r->text) {
            memcpy(r->text, pj_string_value(content), n + 1);
            r->text_len = n;
        } else {
            r->error = true;
        }
    }
}

/* Sends one fs/... request and waits for its answer. Returns the finished request (the
 * caller frees it and its text) or NULL with errno set when it could not be sent, timed
 * out or *cancel (may be NULL) became non-zero (ECANCELED). */
static pacp_outreq *fs_call(pacp_server *srv, const char *method, pj_t *params,
                            atomic_int *cancel) {
    pacp_outreq *req = calloc(1, sizeof *req);
    if (!req || !params || (cancel && atomic_load(cancel))) {
        errno = req && params ? ECANCELED : ENOMEM;
        free(req);
        pj_decref(params);
        return NULL;
    }
    req->kind = PACP_REQ_FS;
    pthread_mutex_lock(&srv->mu);
    bool linked = pacp__outreq_link(srv, req);
    pthread_mutex_unlock(&srv->mu);
    if (!linked) {
        pj_decref(params);
        free(req);
        errno = EIO;
        return NULL;
    }
    pj_t *f = pb_rpc_request(req->id, method, params);
    int sent = f && pacp__writer_send(&srv->w, f) == 0;
    pj_decref(f);
    long long end = pb_mono_ms() + FS_TIMEOUT_MS;
    bool stopped = false;
    pthread_mutex_lock(&srv->mu);
    while (sent && !req->done && !srv->eof) {
        if (cancel && atomic_load(cancel)) {
            stopped = true; /* the turn goes on without the answer (a late one is ignored) */
            break;
        }
        if (pb_mono_ms() >= end) break;
        struct timespec dl = pb_deadline(CLOCK_REALTIME, cancel ? FS_POLL_MS : FS_TIMEOUT_MS);
        pthread_cond_timedwait(&srv->cv, &srv->mu, &dl);
    }
    pacp__outreq_unlink(srv, req);
    bool done = req->done;
    pthread_mutex_unlock(&srv->mu);
    if (!done) {
        free(req->text);
        free(req);
        errno = stopped ? ECANCELED : EIO;
        return NULL;
    }
    return req;
}

int pacp__fs_read(void *ctx, const char *session_id, const char *abs_path, char **data, size_t *len,
                  atomic_int *cancel) {
    pacp_server *srv = ctx;
    if (!atomic_load(&srv->fs_read)) return 1;
    pacp_outreq *r =
        fs_call(srv, "fs/read_text_file",
                pj_pack("{s:s, s:s}", "sessionId", session_id, "path", abs_path), cancel);
    if (!r || r->error || !r->text) {
        int e = r ? ENOENT : errno; /* an error answer: the client has no such file */
        if (r) free(r->text);
        free(r);
        errno = e;
        return -1;
    }
    *data = r->text;
    *len = r->text_len;
    free(r);
    return 0;
}

int pacp__fs_write(void *ctx, const char *session_id, const char *abs_path, const char *data,
                   size_t len, atomic_int *cancel) {
    pacp_server *srv = ctx;
    if (!atomic_load(&srv->fs_write)) return 1;
    pj_t *content = pj_stringn(data, len);
    if (!content) { /* not UTF-8: the text API cannot carry it; write it on disk */
        return 1;
    }
    pacp_outreq *r = fs_call(
        srv, "fs/write_text_file",
        pj_pack("{s:s, s:s, s:o}", "sessionId", session_id, "path", abs_path, "content", content),
        cancel);
    int e = r ? EIO : errno; /* an error answer, or no answer (ECANCELED when cancelled) */
    int rc = r && !r->error ? 0 : -1;
    if (r) free(r->text);
    if (rc) errno = e;
    free(r);
    return rc;
}
