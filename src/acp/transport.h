/*
 * transport.h — newline-delimited frames over file descriptors (prefix pacp_).
 *
 * Owns: writing whole frames under a mutex so concurrent writers never interleave
 * bytes on the wire. Lines are read with base's pb_lines, up to PACP_MAX_FRAME.
 */
#ifndef PACP_TRANSPORT_H
#define PACP_TRANSPORT_H

#include "peri/json.h"
#include <pthread.h>
#include <stddef.h>

#define PACP_MAX_FRAME (64u << 20) /* a longer line is discarded and reported */

typedef struct pacp_writer {
    int fd;
    int broken; /* set after a write error; later sends fail fast */
    pthread_mutex_t mu;
} pacp_writer;

int pacp__writer_init(pacp_writer *w, int fd);
void pacp__writer_destroy(pacp_writer *w);
/* Sends one frame (borrowed). 0 on success, -1 when it could not be written. */
int pacp__writer_send(pacp_writer *w, const pj_t *frame);

#endif
