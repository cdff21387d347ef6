/*
 * checker.h — the settings checker's findings, shared by the settings schema
 * (settings_schema.c, which owns it) and the hooks middleware's own check of "hooks".
 *
 * A finding is one message through the caller's pag_settings_report_fn, "where: what"
 * (where may be NULL or empty), cut to 600 bytes; an error (not a warning) is counted.
 */
#ifndef PERI_AGENT_CHECKER_H
#define PERI_AGENT_CHECKER_H

#include "peri/agent.h"

#include <stdbool.h>
#include <stddef.h>

typedef struct pag__checker {
    pag_settings_report_fn report; /* may be NULL: findings are only counted */
    void *ud;
    size_t errors;
} pag__checker;

void pag__finding(pag__checker *c, bool error, const char *where, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

#endif
