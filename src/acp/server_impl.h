/*
 * server_impl.h — the ACP server object shared by server.c (loop, outgoing
 * requests, controller sink), methods.c (ACP method handlers) and updates.c
 * (event -> session/update mapping). Internal to src/acp/.
 */
#ifndef PACP_SERVER_IMPL_H
#define PACP_SERVER_IMPL_H

#include "acp/jsonrpc.h"
#include "acp/projection.h"
#include "acp/transport.h"
#include "peri/acp.h"
#include "peri/controller.h"

#include <stdatomic.h>
#include <stdbool.h>

/* What a request the server sent to the client is, which decides who decodes its answer
 * (outreq.c routes it). */
typedef enum pacp_outreq_kind {
    PACP_REQ_PERMISSION, /* session/request_permission for a tool call (server.c) */
    PACP_REQ_FS,         /* fs/read_text_file, fs/write_text_file (clientfs.c) */
    PACP_REQ_TERM,       /* terminal/... (clientterm.c); text = result JSON */
    PACP_REQ_ASK,        /* a question (ask.c): text = the answer JSON once done */
} pacp_outreq_kind;

typedef struct pacp_outreq {
    struct pacp_outreq *next;
    pj_int_t id;
    pacp_outreq_kind kind;
    int outcome; /* pag_permission decoded by the reader thread (no pj_t crosses threads) */
    bool done;
    bool error; /* the client answered with an error */
    char *text; /* fs/read_text_file: the content (malloc'd), text_len bytes */
    size_t text_len;
    bool trust;              /* a project-trust request: only "trust_project" grants anything */
    int ask_options;         /* its number of choices (0: an elicitation/create form) */
    const char *ask_session; /* a question's session id (borrowed while it waits) */
} pacp_outreq;

typedef struct pacp_server {
    pacp_writer w;
    pb_logger log;
    pct_controller *ctl;
    const pag_settings *settings; /* the host's settings document, parsed (s->doc: whole) */
    char default_cwd[4096];       /* the start object's cwd, canonical */
    pthread_mutex_t mu;           /* outgoing requests */
    pthread_cond_t cv;
    pj_int_t next_id;
    pacp_outreq *pending;
    struct prompt_token
        *prompts; /* in-flight session/prompt tokens (server.c), for $/cancel_request */
    bool eof;
    /* what the client advertised in initialize (clientCapabilities.fs). */
    atomic_bool fs_read, fs_write;
    /* clientCapabilities.terminal, and the client terminals created for
     * shell calls that are not released yet (guarded by mu; clientterm.c). */
    atomic_bool term;
    struct pacp_term *terms;
    /* clientCapabilities.elicitation.form (ask.c) */
    atomic_bool elicit_form;
    /* session/new, load, resume and fork run on threads of their own (they start MCP
     * servers and read the store): the reading thread never waits on them. Guarded by
     * mu; EOF waits for them (bounded) before the controller goes. */
    int slow_running;
    /* The sessions those threads open (load, resume) or copy (fork) now, each with the
     * frames that named it since, held in arrival order until the opening answered
     * (server.c; guarded by mu). */
    struct pacp_opening *openings;
} pacp_server;

/* A reply: exactly one of result / error. */
typedef struct pacp_reply {
    pj_t *result;
    int code;
    char message[320];
    pj_t *data;
    void *prompt_token;        /* in: the route of the session/prompt answer */
    bool deferred;             /* session/prompt: answered later by the controller */
    char announce[PST_ID_LEN]; /* new/load/resume/fork: its commands follow the reply */
    char answered[PST_ID_LEN]; /* new/load/resume/fork: the reply named this session (its
                                  MCP status may follow: pct_session_answered) */
} pacp_reply;

/* Runs one request. session/prompt takes out->prompt_token and sets out->deferred. */
void pacp__dispatch(pacp_server *srv, const char *method, pj_t *params, pacp_reply *out);
void pacp__notify(pacp_server *srv, const char *method, pj_t *params);
/* session/cancel (notification or request): the target and clear_queue of params. */
void pacp__cancel(pacp_server *srv, pj_t *params);

/* pacp__update_params, pacp__ids_meta, pacp__iso_time: acp/projection.h. */

/* clientfs.c: the controller sink's fs hooks, the capability record made by
 * initialize, and the decoder of fs/... answers. */
int pacp__fs_read(void *ctx, const char *session_id, const char *abs_path, char **data, size_t *len,
                  atomic_int *cancel);
int pacp__fs_write(void *ctx, const char *session_id, const char *abs_path, const char *data,
                   size_t len, atomic_int *cancel);
void pacp__fs_caps(pacp_server *srv, pj_t *client_capabilities);
/* Questions (ask.c): the client's elicitation capability from initialize; the sink's
 * ask_user; the decoder of answers to its requests. */
void pacp__ask_caps(pacp_server *srv, pj_t *client_capabilities);
char *pacp__sink_ask_user(void *ctx, const char *session_id, const char *question_json,
                          atomic_int *cancel);
void pacp__ask_answer(pacp_outreq *r, const pb_rpc_msg *m);
void pacp__fs_answer(pacp_outreq *r, const pb_rpc_msg *m);

/* clientterm.c: the sink's terminal hook, the capability record, the
 * decoder of terminal/... answers, the release of terminals embedded in an update
 * just written (params of that session/update), and the release of all left at the end. */
int pacp__term_run(void *ctx, const char *session_id, const char *cwd, const char *command,
                   long long timeout_ms, size_t max_output, atomic_int *cancel,
                   ptl_term_result *out);
void pacp__term_caps(pacp_server *srv, pj_t *client_capabilities);
void pacp__term_answer(pacp_outreq *r, const pb_rpc_msg *m);
void pacp__term_after_update(pacp_server *srv, pj_t *params);
void pacp__term_release_all(pacp_server *srv);

/* outreq.c: requests to the client. link gives req a fresh id and puts it in the pending
 * list (false, nothing linked, once the client's input ended); unlink takes it out. Both
 * with srv->mu held. on_response is the reader's: it decodes an answer into the request
 * it answers (by id; the pacp__*_answer of its kind, called with srv->mu held), marks it
 * done and wakes its waiter. */
bool pacp__outreq_link(pacp_server *srv, pacp_outreq *req);
void pacp__outreq_unlink(pacp_server *srv, pacp_outreq *req);
/* The server stopped waiting for request id without an answer (the turn was cancelled,
 * the session closed): a $/cancel_request {requestId} tells the client, so a question
 * it still shows closes. Call without srv->mu, after the request was unlinked; an
 * answer that still comes is ignored like any unknown id. */
void pacp__outreq_withdraw(pacp_server *srv, pj_int_t id);
void pacp__on_response(pacp_server *srv, const pb_rpc_msg *m);
/* server.c: the decoder of a permission answer (srv->mu held). */
void pacp__perm_answer(pacp_outreq *r, const pb_rpc_msg *m);

void pacp__reply_error(pacp_reply *r, int code, const char *msg);
void pacp__send_reply(pacp_server *srv, pj_t *id, pacp_reply *r);

#endif
