/*
 * capability.h — the room's capability dispatch ABI (capability.c), for the guest ABIs
 * that offer it: the import face (python.c) and the file face (ruby.c, wasi.c).
 * Internal to src/room/.
 */
#ifndef PERI_ROOM_CAPABILITY_H
#define PERI_ROOM_CAPABILITY_H

#include "room_int.h"

#define PR_CAP_MODULE "peri_capability"

bool pr__cap_is_import(const pw_import_desc *imp);
/* Resolves a "peri_capability" import (dispatch or reply) with c as the host
 * functions' environment; false for anything else (a link error). */
bool pr__cap_resolve(pr__cap *c, pw_store *s, const pw_import_desc *imp, pw_extern *out);
/* The file face, for a guest that imports nothing but WASI: the guest writes a request
 * ("OP\nARG\n" then the data) to PR_CAP_REQUEST and opens PR_CAP_REPLY; path_open of
 * the reply (wasi.c, with rs->cap_files set) calls this first, which takes and removes
 * the request, dispatches it like the import, and writes the reply file: the status
 * digit, "\n", the reply. Without a request the reply file opens as it is. */
#define PR_CAP_REQUEST "/.peri/capability/request"
#define PR_CAP_REPLY   "/.peri/capability/reply"
void pr__cap_fs_open(pr__cap *c, pr_fs *fs, const char *norm, size_t n);
void pr__cap_free(pr__cap *c);

#endif
