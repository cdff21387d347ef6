/*
 * ev_int.h — internals of the event-driven MCP client (peri/mcp_ev.h; prefix pmcp__ev).
 *
 * ev_ports.c : a pn_ports table over the host's that puts the client as the ud of every
 *              handle it opens (so the host routes by one pointer) and remembers which
 *              owner inside the client (an HTTP request, or the client itself) each
 *              handle belongs to, until that handle's settling event.
 * ev.c       : the client: message exchanges (one POST each), connect, calls, close.
 *
 * Invariant: a handle is in the table from the moment the host returned it until its
 * settling event was taken (PN_EV_CLOSED, PN_EV_TIMER, PN_EV_RESOLVED); the table never
 * has to grow while a handle is being made (room is reserved before), so every handle
 * the host returned is routed.
 */
#ifndef PMCP_EV_INT_H
#define PMCP_EV_INT_H

#include "peri/net.h"

#include <stdbool.h>
#include <stddef.h>

typedef struct pmcp__ev_route {
    pn_handle h;
    void *owner;
} pmcp__ev_route;

typedef struct pmcp__ev_ports {
    pn_ports table;       /* what the client's HTTP requests are given: ctx = this struct */
    const pn_ports *real; /* the host's (borrowed) */
    void *ud;             /* put on every handle made through the table */
    pmcp__ev_route *routes;
    size_t n, cap;
} pmcp__ev_ports;

/* p must stay where it is (the table points at it). */
void pmcp__ev_ports_init(pmcp__ev_ports *p, const pn_ports *real, void *ud);
void pmcp__ev_ports_free(pmcp__ev_ports *p);
/* Room for `extra` more handles; false when out of memory. */
bool pmcp__ev_ports_reserve(pmcp__ev_ports *p, size_t extra);
/* The owner of ev's handle (NULL when unknown); the route is dropped when the event
 * settles the handle. */
void *pmcp__ev_ports_take(pmcp__ev_ports *p, const pn_event *ev);
/* Handles made through the table and not yet settled. */
size_t pmcp__ev_ports_live(const pmcp__ev_ports *p);

#endif
