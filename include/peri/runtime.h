/*
 * peri/runtime.h — the session registry of the agent host (prefix prt_).
 *
 * The runtime holds only the map session_id -> handle and the per-session event
 * sequence counter. It owns no session state: handles are opaque and their
 * lifetime is managed by the caller through the retain hook, which the runtime
 * calls under its lock so a looked-up handle cannot be freed underneath the caller.
 * Thread-safe.
 */
#ifndef PERI_RUNTIME_H
#define PERI_RUNTIME_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct prt_runtime prt_runtime;
typedef void (*prt_retain_fn)(void *handle);

/* Returns a new runtime (free with prt_free) or NULL when out of memory. */
prt_runtime *prt_new(prt_retain_fn retain);
void prt_free(prt_runtime *rt);

/* 0 on success, 1 when the id is already mapped, -1 when out of memory. */
int prt_insert(prt_runtime *rt, const char *session_id, void *handle);
/* The handle, retained through the hook, or NULL. */
void *prt_acquire(prt_runtime *rt, const char *session_id);
/* Unmaps and returns the handle (the map's reference moves to the caller). */
void *prt_remove(prt_runtime *rt, const char *session_id);
/* Next value of the session's monotonic event counter (1, 2, ...); 0 if unmapped. */
uint64_t prt_next_seq(prt_runtime *rt, const char *session_id);
/* Like prt_next_seq, but only while session_id is mapped to exactly `handle`: 0 when it
 * is unmapped or mapped to another handle (a later live instance of the same session),
 * so a late event of a closed instance can never be stamped into its successor. */
uint64_t prt_next_seq_of(prt_runtime *rt, const char *session_id, const void *handle);
/* Copies up to `max` mapped ids (malloc'd, caller frees each) into ids[]; returns
 * how many were copied. */
size_t prt_list(prt_runtime *rt, char **ids, size_t max);
size_t prt_count(prt_runtime *rt);

#ifdef __cplusplus
}
#endif
#endif
