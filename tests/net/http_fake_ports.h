/*
 * http_fake_ports.h — an in-memory pn_ports for the HTTP client's tests: streams whose
 * server side the test scripts (bytes, end of stream, reset, failures), timers on a fake
 * clock, and an event queue the test pumps. It checks the ports' contract from the
 * caller's side: no event is delivered from inside a port call, every handle settles
 * exactly once, no event arrives for a settled handle.
 */
#ifndef PERI_TEST_HTTP_FAKE_PORTS_H
#define PERI_TEST_HTTP_FAKE_PORTS_H

#include "peri/net_http.h"

#define FAKE_STREAMS 8
#define FAKE_TIMERS  16
#define FAKE_EVENTS  64
#define FAKE_TIMER0  100 /* timer handles are FAKE_TIMER0 + 1 + slot */

typedef struct fake_stream {
    bool used, settled, settling; /* settling: a CLOSED is queued */
    char host[256], sni[256];
    uint16_t port;
    bool tls;
    void *ud;
    pb_buf written; /* what the client wrote */
    pb_buf inbox;   /* what the server sent, read from rpos */
    size_t rpos;
    bool eof;
    int closes; /* close calls */
} fake_stream;

typedef struct fake_timer {
    bool used, armed, settled; /* armed: not yet fired or cancelled */
    uint64_t due;
    void *ud;
} fake_timer;

typedef struct fake_ports {
    pn_ports ports;
    fake_stream s[FAKE_STREAMS];
    fake_timer t[FAKE_TIMERS];
    pn_event q[FAKE_EVENTS];
    size_t qhead, qlen;
    uint64_t now;
    /* scripted behaviour */
    pn_err open_result;  /* returned by open itself */
    pn_err opened_err;   /* the outcome of the OPENED event */
    pn_err write_result; /* returned by write */
    pn_err read_result;  /* returned by read once the inbox is empty (PN_OK: AGAIN/EOF) */
    pn_err timer_result; /* returned by timer_set */
    size_t read_max;     /* bytes per read (0: the caller's capacity) */
    int timer_cancels;
    int events_delivered;
    bool in_call; /* inside a port call: no event may be delivered now */
} fake_ports;

void fake_init(fake_ports *f);
void fake_free(fake_ports *f);
/* Delivers queued events one at a time (to pn_http_event) until none is left. */
void fake_pump(fake_ports *f);
/* The server side of stream h: bytes to read, the end of the stream, a failure. */
void fake_send(fake_ports *f, pn_handle h, const char *data, size_t len);
void fake_eof(fake_ports *f, pn_handle h);
void fake_fail(fake_ports *f, pn_handle h, pn_err e);
/* Moves the clock and fires the timers that are due (then pumps). */
void fake_advance(fake_ports *f, uint64_t ms);
/* True when every handle ever returned has settled. */
bool fake_all_settled(const fake_ports *f);
int fake_live_timers(const fake_ports *f);

#endif
