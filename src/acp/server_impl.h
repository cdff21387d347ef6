/*
 * server_impl.h — the ACP server object shared by server.c (loop, outgoing
 * requests, controller sink), methods.c (ACP method handlers) and updates.c
 * (event -> session/update mapping). Internal to src/acp/.
 */
#ifndef PACP_SERVER_IMPL_H
#define PACP_SERVER_IMPL_H

#include "acp/jsonrpc.h"
#include "acp/transport.h"
#include "peri/acp.h"
#include "peri/controller.h"

#include <stdbool.h>

typedef struct pacp_outreq {
    struct pacp_outreq *next;
    json_int_t id;
    int outcome; /* pag_permission decoded by the reader thread (no json_t crosses threads) */
    bool done;
} pacp_outreq;

typedef struct pacp_server {
    pacp_writer w;
    pct_controller *ctl;
    const char *default_cwd;
    pthread_mutex_t mu; /* outgoing requests */
    pthread_cond_t cv;
    json_int_t next_id;
    pacp_outreq *pending;
    struct prompt_token
        *prompts; /* in-flight session/prompt tokens (server.c), for $/cancel_request */
    bool eof;
} pacp_server;

/* A reply: exactly one of result / error. */
typedef struct pacp_reply {
    json_t *result;
    int code;
    char message[320];
    json_t *data;
    void *prompt_token;        /* in: the route of the session/prompt answer */
    bool deferred;             /* session/prompt: answered later by the controller */
    char announce[PST_ID_LEN]; /* session/new: announce this session after the reply */
} pacp_reply;

/* Runs one request. session/prompt takes out->prompt_token and sets out->deferred. */
void pacp_dispatch(pacp_server *srv, const char *method, json_t *params, pacp_reply *out);
void pacp_notify(pacp_server *srv, const char *method, json_t *params);

/* session/update params for one stamped event; NULL for events with no wire form. */
json_t *pacp_update_params(const pag_event *ev);

void pacp_reply_error(pacp_reply *r, int code, const char *msg);
void pacp_send_reply(pacp_server *srv, json_t *id, pacp_reply *r);

#endif
