/*
 * capability.h — the room's capability dispatch ABI (capability.c), for the guest ABIs
 * that offer it (python.c). Internal to src/room/.
 */
#ifndef PERI_ROOM_CAPABILITY_H
#define PERI_ROOM_CAPABILITY_H

#include "room_int.h"

#define PR_CAP_MODULE "peri_capability"

/* One run's dispatch state: the reply of the last call, until the guest takes it. */
typedef struct pr__cap {
    pr_run_state *rs;
    pb_buf reply;
} pr__cap;

bool pr__cap_is_import(const pw_import_desc *imp);
/* Resolves a "peri_capability" import (dispatch or reply) with c as the host
 * functions' environment; false for anything else (a link error). */
bool pr__cap_resolve(pr__cap *c, pw_store *s, const pw_import_desc *imp, pw_extern *out);
void pr__cap_free(pr__cap *c);

#endif
