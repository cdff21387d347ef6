/*
 * transport.h — newline-delimited frames over file descriptors (prefix pacp_).
 *
 * Owns: reading one line at a time from an fd (any length up to a cap, partial
 * reads, EINTR) and writing whole frames under a mutex so concurrent writers never
 * interleave bytes on the wire.
 */
#ifndef PACP_TRANSPORT_H
#define PACP_TRANSPORT_H

#include <jansson.h>
#include <pthread.h>
#include <stddef.h>

#define PACP_MAX_FRAME (64u << 20) /* a longer line is discarded and reported */

typedef struct pacp_reader {
    int fd;
    char *buf;
    size_t len, cap, start;
    int eof;
} pacp_reader;

typedef enum pacp_read_status {
    PACP_READ_LINE = 0, /* *line / *len valid until the next call */
    PACP_READ_EOF,
    PACP_READ_TOO_LONG, /* the line was dropped */
    PACP_READ_ERROR,    /* I/O or allocation failure */
} pacp_read_status;

void pacp__reader_init(pacp_reader *r, int fd);
void pacp__reader_free(pacp_reader *r);
pacp_read_status pacp__reader_next(pacp_reader *r, char **line, size_t *len);

typedef struct pacp_writer {
    int fd;
    int broken; /* set after a write error; later sends fail fast */
    pthread_mutex_t mu;
} pacp_writer;

int pacp__writer_init(pacp_writer *w, int fd);
void pacp__writer_destroy(pacp_writer *w);
/* Sends one frame (borrowed). 0 on success, -1 when it could not be written. */
int pacp__writer_send(pacp_writer *w, const json_t *frame);

#endif
