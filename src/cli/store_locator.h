/*
 * store_locator.h — the shared store's URL made fit for a host that hands it to the
 * agent module (store_locator.c). Internal to the CLI.
 */
#ifndef PERI_CLI_STORE_LOCATOR_H
#define PERI_CLI_STORE_LOCATOR_H

#include <stdbool.h>
#include <stddef.h>

typedef struct peri_store_locator_t {
    char *locator;  /* the URL without password= / passfile= / user:password@ (owned) */
    char *password; /* from the URL, else the password file (owned, wiped); NULL: none */
    char host[256]; /* the TCP destination ("" when none: a socket or several hosts) */
    unsigned port;
} peri_store_locator_t;

/* Reads a postgresql:// URL the way libpq does. The password file is passfile= or, when
 * none is named, HOME/.pgpass (skipped with warn(msg) when others may read it). 0, or -1
 * with err (a URL libpq cannot read, out of memory). Free with peri_store_locator_clear. */
int peri_store_locator(const char *url, const char *home, peri_store_locator_t *out,
                       void (*warn)(const char *msg), char *err, size_t errlen);
void peri_store_locator_clear(peri_store_locator_t *l);

#endif
