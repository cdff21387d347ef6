/*
 * tcp.c — the TCP transport helper: connects to host:port and speaks
 * newline-delimited JSON-RPC over the socket (the fd transport underneath).
 */
#include "sdk/sdk_int.h"

#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

psdk_transport *psdk_tcp_connect(const char *host, int port, psdk_error *err) {
    psdk__ok(err);
    if (!host || !*host || port <= 0 || port > 65535) {
        psdk__fail(err, PSDK_ERR_ARG, "a host and a port in 1..65535 are required");
        return NULL;
    }
    char ps[16];
    snprintf(ps, sizeof ps, "%d", port);
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM}, *res = NULL;
    int g = getaddrinfo(host, ps, &hints, &res);
    if (g != 0) {
        psdk__fail(err, PSDK_ERR_TRANSPORT, "cannot resolve %s: %s", host, gai_strerror(g));
        return NULL;
    }
    int fd = -1, last = 0;
    for (struct addrinfo *ai = res; ai; ai = ai->ai_next) {
        fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
        if (fd < 0) {
            last = errno;
            continue;
        }
        if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0) break;
        last = errno;
        close(fd);
        fd = -1;
    }
    freeaddrinfo(res);
    if (fd < 0) {
        psdk__fail(err, PSDK_ERR_TRANSPORT, "cannot connect to %s:%d: %s", host, port,
                   strerror(last));
        return NULL;
    }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    psdk_transport *t = psdk__fdt_new(fd, fd, true, NULL, NULL, err);
    if (!t) close(fd);
    return t;
}

int psdk_tcp_factory(void *ctx, const psdk_connect *c, psdk_transport **out, psdk_error *err) {
    (void)c; /* the path travels in session/new, not in the connection */
    const psdk_tcp_options *o = ctx;
    if (!o) {
        psdk__fail(err, PSDK_ERR_ARG, "psdk_tcp_factory needs psdk_tcp_options as ctx");
        return -1;
    }
    *out = psdk_tcp_connect(o->host, o->port, err);
    return *out ? 0 : -1;
}
