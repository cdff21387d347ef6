/*
 * host_env.h — maps the environment and ~/.peri/ into the host start object
 * (pacp_options) for `peri acp` and `peri print`. The library reads no environment;
 * this is where HOME, PERI_MACHINE_ID, PERI_MODEL, the provider keys and the other
 * PERI_* knobs are read (src/cli/host_env.c).
 */
#ifndef PERI_CLI_HOST_ENV_H
#define PERI_CLI_HOST_ENV_H

#include "peri/acp.h"
#include "peri/store.h"

#include <limits.h>
#include <stdio.h>

/* What the command line said; NULL fields take the defaults below. */
typedef struct peri_host_args {
    const char *cwd;        /* NULL: the process cwd; relative: resolved against it */
    const char *db;         /* --db PATH or --store URL; NULL: $PERI_STORE, else
                               $HOME/.peri/peri.db */
    const char *settings;   /* FILE, or "-" = the first line of stdin; NULL:
                               $HOME/.peri/settings.json when it exists */
    const char *machine_id; /* NULL: $PERI_MACHINE_ID, else $HOME/.peri/machine-id
                               (created with a new UUID when absent) */
    bool shared_store;
} peri_host_args;

typedef struct peri_host_start {
    pacp_options opt; /* points into the fields below */
    pj_t *settings;   /* owned */
    char *db;         /* owned */
    char *home;       /* owned ($HOME), may be NULL */
    char machine_id[PST_ID_LEN];
    char cwd[PATH_MAX];
} peri_host_start;

/* The options of `peri acp` and `peri print` that say where the session lives: --cwd DIR
 * and --db PATH into a. True when argv[*i] is one of them and its value follows (*i then
 * moves onto the value); false otherwise (the caller reports a missing value). */
bool peri_host_arg(int argc, char **argv, int *i, peri_host_args *a);

/* Fills h (clear it with peri_host_start_clear). 0, or -1 with a message in err. */
int peri_host_start_init(peri_host_start *h, const peri_host_args *a, char *err, size_t errlen);
void peri_host_start_clear(peri_host_start *h);

/* Applies the environment overrides to a settings document (an object):
 * OPENAI_API_KEY, OPENAI_BASE_URL, ANTHROPIC_API_KEY, ANTHROPIC_BASE_URL -> providers;
 * PERI_MODEL -> model; PERI_CONTEXT_BUDGET -> contextBudget; PERI_CLOSE_GRACE_MS ->
 * closeGraceMs. The environment wins over the file. getenv_fn lets tests pass their
 * own environment. 0, or -1 when out of memory. */
int peri_settings_apply_env(pj_t *doc, const char *(*getenv_fn)(const char *));

/* Reads a settings document: path "-" = the first line of fd 0 (read byte by byte so
 * that the JSON-RPC frames after it stay unread). Missing file with optional: {}.
 * Returns a new object or NULL with err ("settings must be an object", or a parse error
 * naming the line and column: "FILE:3:5: not valid JSON: ..."). */
pj_t *peri_settings_read(const char *path, bool optional, char *err, size_t errlen);

/* Checks a settings document against the schema (pag_settings_check): each finding is
 * printed to `to` as "peri: NAME: ..." (warnings too). 0 when there are no errors, else
 * -1 with a summary in err. */
int peri_settings_validate(const pj_t *doc, const char *name, FILE *to, char *err, size_t errlen);

/* url (postgresql://...) with the standard libpq environment variables
 * (PGHOST, PGHOSTADDR, PGPORT, PGUSER, PGPASSWORD, PGPASSFILE, PGDATABASE, PGSSLMODE,
 * PGSSLROOTCERT, PGCONNECT_TIMEOUT, PGAPPNAME, PGOPTIONS) appended as URI parameters
 * for what the URL does not already give (the URL wins). malloc'd; NULL on OOM. */
char *peri_store_url_apply_env(const char *url, const char *(*getenv_fn)(const char *));

#endif
