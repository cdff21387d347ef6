/*
 * sdk_int.h — libperi-sdk internals shared by client.c (sandbox, agent, reader
 * thread, requests, sessions), close.c (the bounded close replay), error.c and the
 * transport helpers. Internal to src/sdk/.
 *
 * Locking: agent.mu guards calls, sessions, ended and every session's close state;
 * agent.send_mu serialises transport sends. Callbacks run on the reader thread with
 * no SDK lock held.
 */
#ifndef PSDK_INT_H
#define PSDK_INT_H

#include "peri/base.h"
#include "peri/sdk.h"

#include "peri/json.h"
#include <pthread.h>

/* One outstanding request. Filled by the reader thread, consumed by the caller. */
typedef struct psdk_call {
    struct psdk_call *next;
    pj_int_t id;
    bool done;
    pj_t *result;               /* owned on success */
    psdk_error err;             /* on failure */
    struct psdk_session *sess;  /* prompt: wake when this session closes */
    struct psdk_session *adopt; /* session/new: link this handle when the answer arrives */
} psdk_call;

struct psdk_sandbox {
    psdk_transport_factory factory;
    void *factory_ctx;
    char *store_locator, *credential, *machine_id; /* owned copies, may be NULL */
    long answer_timeout_ms;
};

struct psdk_session {
    struct psdk_session *next;
    psdk_agent *a;
    char id[40];
    psdk_handlers h;
    bool linked; /* in a->sessions (frames are routed to it) */
    /* close state (a->mu) */
    bool closed;
    bool closing;       /* an operation is running; other callers join it */
    uint64_t close_gen; /* bumped when an operation finishes */
    psdk_status close_rc;
    psdk_error close_err;
};

struct psdk_agent {
    psdk_sandbox *sb;
    psdk_transport *t;
    char *path;
    pthread_t reader;    /* set by the reader itself (a->mu) */
    bool reader_started; /* a->mu */
    pthread_t joinable;  /* the creator's handle, for the join */
    bool has_reader;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    pthread_mutex_t send_mu;
    pj_int_t next_id;
    psdk_call *calls;
    psdk_session *sessions;
    bool ended;
    char end_msg[200];
};

/* error.c */
void psdk__ok(psdk_error *e);
psdk_status psdk__fail(psdk_error *e, psdk_status st, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* client.c */
/* Sends method(params) (params stolen) and waits for the answer. timeout_ms < 0: no
 * limit. *result (may be NULL) receives the result (caller decrefs). */
psdk_status psdk__rpc(psdk_agent *a, const char *method, pj_t *params, long timeout_ms,
                      psdk_session *prompt_of, pj_t **result, psdk_error *err);
bool psdk__on_reader(psdk_agent *a);
/* Wakes prompt waiters of s (after a settled close). Caller holds a->mu. */
void psdk__wake_locked(psdk_agent *a);

/* fdtransport.c */
typedef struct psdk_fdt psdk_fdt;
/* Child of the fd transport: stdio.c and inproc.c add a teardown hook run by free
 * after the fds are closed. */
psdk_transport *psdk__fdt_new(int in_fd, int out_fd, bool own, void (*teardown)(void *),
                              void *teardown_ctx, psdk_error *err);

#endif
