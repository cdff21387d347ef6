/*
 * projection.h — the ACP projection of host events (updates.c): one stamped pag_event
 * becomes the params of one session/update notification. Pure mapping without threads,
 * locks or I/O, so the native ACP server (server.c) and the agent module's reactor
 * (src/agentwasm/) send the same bytes for the same event. Internal to the two of them.
 */
#ifndef PACP_PROJECTION_H
#define PACP_PROJECTION_H

#include "peri/agent.h"
#include "peri/controller.h" /* pct_event_ids (a plain struct) */
#include "peri/json.h"

/* session/update params for one stamped event (ids: its identity, may be NULL); NULL
 * for events with no wire form. */
pj_t *pacp__update_params(const pag_event *ev, const pct_event_ids *ids);
/* Adds "peri.sessionEpoch", "peri.agentId", "peri.turnId", "peri.attemptId" (those
 * present) to a _meta object. */
void pacp__ids_meta(pj_t *meta, const pct_event_ids *ids);
/* The result of session/list for one page of threads ({"sessions": [...], "nextCursor"}):
 * own_machine's threads as they are, another machine's and another history format's
 * marked read-only in _meta. history_format reads a thread's meta (the controller's
 * pct_history_format); current_format is the format this host writes. NULL when out of
 * memory. */
pj_t *pacp__session_list(const pst_thread_page *page, const char *own_machine,
                         int (*history_format)(const char *meta_json), int current_format);
/* The client's answer to session/request_permission (the response's result; errors and
 * unknown options refuse) as a pag_permission. trust: a project-trust question, where only
 * "trust_project" grants anything. */
int pacp__perm_outcome(const pj_t *result, bool trust);
/* A wall-clock time in ms as an ISO 8601 UTC JSON string (ACP's updatedAt). */
pj_t *pacp__iso_time(int64_t ms);

#endif
