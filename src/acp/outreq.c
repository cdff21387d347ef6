/*
 * outreq.c — requests the server sends to its client (permission questions, fs/...,
 * terminal/..., elicitation/create): the pending list they wait in, their fresh ids, and
 * the routing of each answer to the request it answers.
 *
 * Invariants: srv->mu guards the list and every request's answer fields; an answer is
 * decoded on the reader thread into plain C values (no pj_t crosses threads) by the
 * decoder of the request's kind, and wakes its waiter on srv->cv. An answer whose id no
 * waiting request has is ignored.
 */
#include "acp/server_impl.h"

bool pacp__outreq_link(pacp_server *srv, pacp_outreq *req) {
    if (srv->eof) return false;
    req->id = ++srv->next_id;
    req->next = srv->pending;
    srv->pending = req;
    return true;
}

void pacp__outreq_unlink(pacp_server *srv, pacp_outreq *req) {
    for (pacp_outreq **p = &srv->pending; *p; p = &(*p)->next) {
        if (*p == req) {
            *p = req->next;
            return;
        }
    }
}

void pacp__outreq_withdraw(pacp_server *srv, pj_int_t id) {
    pj_t *params = pj_pack("{s:I}", "requestId", id);
    pj_t *f = params ? pb_rpc_notification("$/cancel_request", params) : NULL;
    if (f) pacp__writer_send(&srv->w, f); /* best effort: the waiter has its answer */
    pj_decref(f);
}

void pacp__on_response(pacp_server *srv, const pb_rpc_msg *m) {
    if (!pj_is_integer(m->id)) return; /* not one of ours: ignore */
    pj_int_t id = pj_integer_value(m->id);
    pthread_mutex_lock(&srv->mu);
    for (pacp_outreq *r = srv->pending; r; r = r->next) {
        if (r->id != id || r->done) continue;
        switch (r->kind) {
        case PACP_REQ_PERMISSION: pacp__perm_answer(r, m); break;
        case PACP_REQ_FS: pacp__fs_answer(r, m); break;
        case PACP_REQ_TERM: pacp__term_answer(r, m); break;
        case PACP_REQ_ASK: pacp__ask_answer(r, m); break;
        }
        r->done = true;
        pthread_cond_broadcast(&srv->cv);
        break;
    }
    pthread_mutex_unlock(&srv->mu);
}
