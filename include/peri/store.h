/*
 * peri/store.h — the session store: Peri's machine → workspace → thread (= session) →
 * messages model (prefix pst_) on one of two backends sharing all rules (src/store/):
 * SQLite (WAL, default, a file) or PostgreSQL (a postgresql:// URL: the shared store of
 * several hosts). See docs/store.md.
 *
 * Schema (see docs/host-lower.md):
 *   schema_version(version)                      migrations run in one transaction at open
 *   machines(id, name, identity_kind, created_at)
 *   workspaces(id, machine_id → machines, path, path_source, created_at,
 *              UNIQUE(machine_id, path))
 *   threads(id UUIDv7, workspace_id → workspaces NOT NULL, parent_thread_id, title, model,
 *           archived, meta, message_count, next_seq, created_at, updated_at)
 *   messages(thread_id → threads ON DELETE CASCADE, seq, role, content, meta, created_at,
 *            PRIMARY KEY(thread_id, seq))
 *
 * Objects and ownership:
 *   pst_store   one database connection guarded by a mutex: any thread may call any
 *               function; calls are serialised. Open several stores on the same file /
 *               database from several processes if needed (SQLite: WAL + busy timeout;
 *               PostgreSQL: row locks on the thread).
 *   pst_thread  value filled by get/create/list; its heap strings are owned by it and
 *               freed by pst_thread_clear.
 *
 * Durability: journal_mode=WAL, synchronous=NORMAL: a committed transaction survives a
 * crash of the process (kill -9); a power loss may drop the last commits.
 *
 * Timestamps are Unix milliseconds. Ids are lowercase UUID text (36 chars + NUL).
 *
 * CHANGES (after first publication; additive only):
 *   - pst_workspace_id: workspaces created from now on get a name-based id derived
 *     from (machine_id, path) instead of a random one (existing rows keep theirs).
 *   --- PostgreSQL backend (pst_open/pst_open_ex with a postgresql:// URL);
 *     pst_open_ex + pst_open_options (owner machine, read-only); pst_locator_is_remote;
 *     pst_backend_name; statuses PST_ERR_CONN and PST_ERR_FOREIGN (appended at the end);
 *     pst_open_options.password.
 *   --- the remote store client (pst_remote_*: asynchronous, over the host's ports).
 *     pst_error.sqlite_code stays the SQLite extended code; it is 0 for PostgreSQL (the
 *     SQLSTATE is in the message).
 */
#ifndef PERI_STORE_H
#define PERI_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define PST_ID_LEN         37 /* 36 chars + NUL */
#define PST_SCHEMA_VERSION 1

typedef enum pst_status {
    PST_OK = 0,
    PST_ERR_NOT_FOUND, /* no such thread/workspace/machine */
    PST_ERR_IO,        /* SQLite or file system error (message says which) */
    PST_ERR_BUSY,      /* the database stayed locked past the busy timeout */
    PST_ERR_SCHEMA,    /* the file has a newer or unknown schema version */
    PST_ERR_ARG,       /* bad argument (NULL, empty id, bad cursor, bad JSON) */
    PST_ERR_NOMEM,
    PST_ERR_CONN,    /* the database server is unreachable or the connection was lost: the
                        operation did not happen (or its transaction rolled back); the next
                        call reconnects */
    PST_ERR_FOREIGN, /* a write to another machine's session/workspace, or any write on a
                        read-only store (shared store, no machine identity) */
} pst_status;

typedef struct pst_error {
    pst_status status;
    int sqlite_code; /* extended SQLite result code, 0 if none */
    char message[256];
} pst_error;

const char *pst_status_name(pst_status s);

/* ---------------------------------------------------------------- ids and paths */

/* New lowercase UUID v7 (48-bit ms timestamp + random from the OS/libcrypto).
 * Returns false only if no randomness was available. */
bool pst_uuid_v7(char out[PST_ID_LEN]);
/* New UUID v4. */
bool pst_uuid_v4(char out[PST_ID_LEN]);
/* The workspace identity of (machine_id, canonical root path): a name-based UUID
 * (version 8 over SHA-256 of both), so the same machine and the same root give the
 * same workspace id in every store. pst_workspace_ensure creates workspaces with it. */
bool pst_workspace_id(const char *machine_id, const char *path, char out[PST_ID_LEN]);
/* True when s is a well-formed UUID text (any version). */
bool pst_uuid_valid(const char *s);
/* A machine identity as a host may be given one (PERI_MACHINE_ID, the module's start
 * object): 1..36 printable ASCII characters without spaces; a generated one is a UUID. */
bool pst_machine_id_ok(const char *s);

/* "<home>/.peri/peri.db" (malloc'd, caller frees), NULL on OOM or home NULL/empty. */
char *pst_default_db_path(const char *home);

/* Machine id rules (Peri): env_value (the CLI passes $PERI_MACHINE_ID) if
 * non-empty; else the first line of <home>/.peri/machine-id if it holds a valid UUID;
 * else a new UUID v4 written there (directory created, file 0600, written atomically via
 * rename). out receives the id. An env value that is not a UUID is used as is when it is
 * 1..36 printable non-space characters, else PST_ERR_ARG. */
pst_status pst_machine_id_resolve(const char *home, const char *env_value, char out[PST_ID_LEN],
                                  pst_error *err);

/* ---------------------------------------------------------------- open/close */

typedef struct pst_store pst_store;

/* Opens (creating parent directories with 0700 and the file) and migrates to
 * PST_SCHEMA_VERSION. path ":memory:" gives a private in-memory store. Returns NULL and
 * fills err on failure. Free with pst_close. */
pst_store *pst_open(const char *path, pst_error *err);
void pst_close(pst_store *s);
int pst_schema_version(pst_store *s);

/* Open options. */
typedef struct pst_open_options {
    /* Non-NULL: this store writes only threads of workspaces owned by this machine (and
     * creates/changes no other machine); other writes fail with PST_ERR_FOREIGN. Reads
     * are never restricted. */
    const char *owner_machine_id;
    /* Every write fails with PST_ERR_FOREIGN (a shared store without machine identity). */
    bool read_only;
    /* PostgreSQL: the password when the URL gives none (keeps it off URLs and command
     * lines); ignored by SQLite. NULL: none (libpq may then use the passfile). */
    const char *password;
} pst_open_options;

/* locator: an SQLite file path or ":memory:" as for pst_open, or a PostgreSQL URL
 * "postgresql://[user[:password]@][host][:port][/dbname][?param=value&...]" (also
 * "postgres://"; libpq's URI parameters such as host=/socket/dir, passfile=, sslmode=).
 * Connection parameters come only from the URL: no environment variable is read by this
 * library (see docs/store.md for libpq's PGPASSWORD caveat). o may be NULL. */
pst_store *pst_open_ex(const char *locator, const pst_open_options *o, pst_error *err);
/* True for a postgresql:// or postgres:// locator. */
bool pst_locator_is_remote(const char *locator);
/* "sqlite" or "postgresql". */
const char *pst_backend_name(const pst_store *s);

/* ---------------------------------------------------------------- machines, workspaces */

/* Insert the machine if absent (identity_kind "known"); name may be NULL. */
pst_status pst_machine_ensure(pst_store *s, const char *machine_id, const char *name,
                              pst_error *err);

/* Find or create the workspace (machine_id, path); ensures the machine too. path should
 * be canonical and absolute (the caller realpath()s it). out_id receives the id. */
pst_status pst_workspace_ensure(pst_store *s, const char *machine_id, const char *path,
                                char out_id[PST_ID_LEN], pst_error *err);

/* ---------------------------------------------------------------- threads */

typedef struct pst_thread {
    char id[PST_ID_LEN];
    char workspace_id[PST_ID_LEN];
    char parent_id[PST_ID_LEN]; /* "" for a root thread */
    char machine_id[PST_ID_LEN];
    char *cwd;   /* workspace path (owned) */
    char *title; /* owned, NULL if none */
    char *model; /* owned, NULL if none */
    char *meta;  /* owned JSON object text chosen by the caller, NULL if none */
    bool archived;
    int64_t message_count;
    int64_t created_at;
    int64_t updated_at;
} pst_thread;

void pst_thread_clear(pst_thread *t);

typedef struct pst_thread_new {
    const char *id;           /* NULL: a new UUID v7 is generated */
    const char *workspace_id; /* required */
    const char *parent_id;    /* NULL for a root thread; the parent must exist */
    const char *title;        /* may be NULL */
    const char *model;        /* may be NULL */
    const char *meta;         /* JSON text, may be NULL */
} pst_thread_new;

/* out (may be NULL) receives the created row. */
pst_status pst_thread_create(pst_store *s, const pst_thread_new *in, pst_thread *out,
                             pst_error *err);
pst_status pst_thread_get(pst_store *s, const char *id, pst_thread *out, pst_error *err);
/* Deletes the thread, its messages and (recursively) its child threads.
 * PST_ERR_NOT_FOUND if it does not exist. */
pst_status pst_thread_delete(pst_store *s, const char *id, pst_error *err);
pst_status pst_thread_set_archived(pst_store *s, const char *id, bool archived, pst_error *err);
/* title NULL clears it. Updates updated_at. */
pst_status pst_thread_rename(pst_store *s, const char *id, const char *title, pst_error *err);
pst_status pst_thread_set_model(pst_store *s, const char *id, const char *model, pst_error *err);
pst_status pst_thread_set_meta(pst_store *s, const char *id, const char *meta_json, pst_error *err);

typedef struct pst_list_query {
    const char *cwd;        /* only threads whose workspace path equals this; NULL: all */
    const char *machine_id; /* only this machine; NULL: all */
    const char *cursor;     /* from a previous page's next_cursor; NULL: first page */
    int limit;              /* 1..500; 0: 100 */
    bool include_archived;  /* default list hides archived threads */
    bool include_empty;     /* default list hides threads with no message */
    bool include_children;  /* default list shows only root threads */
} pst_list_query;

typedef struct pst_thread_page {
    pst_thread *items; /* newest updated_at first, ties by id descending */
    size_t count;
    char *next_cursor; /* owned; NULL when this is the last page */
} pst_thread_page;

pst_status pst_thread_list(pst_store *s, const pst_list_query *q, pst_thread_page *out,
                           pst_error *err);
void pst_thread_page_clear(pst_thread_page *p);

/* ---------------------------------------------------------------- messages */

typedef struct pst_message_in {
    const char *role;    /* "user" "assistant" "tool" "system" (not checked beyond non-empty) */
    const char *content; /* JSON text (e.g. pm_message_to_json); validated as JSON */
    const char *meta;    /* optional JSON text for the caller (ACP replay data), or NULL */
} pst_message_in;

typedef struct pst_message {
    int64_t seq; /* 1, 2, 3, ... per thread, never reused */
    char *role;
    char *content;
    char *meta; /* NULL if none */
    int64_t created_at;
} pst_message;

typedef struct pst_message_list {
    pst_message *items; /* ascending seq */
    size_t count;
} pst_message_list;

/* Appends n messages to the thread in ONE transaction (all or nothing) and bumps the
 * thread's message_count and updated_at. first_seq (may be NULL) receives the seq of the
 * first appended message. */
pst_status pst_messages_append(pst_store *s, const char *thread_id, const pst_message_in *msgs,
                               size_t n, int64_t *first_seq, pst_error *err);

/* All messages of the thread in seq order. out is initialised by the call. */
pst_status pst_messages_load(pst_store *s, const char *thread_id, pst_message_list *out,
                             pst_error *err);
void pst_message_list_clear(pst_message_list *l);

pst_status pst_messages_count(pst_store *s, const char *thread_id, int64_t *count, pst_error *err);

/* ---------------------------------------------------------------- remote (asynchronous)
 *
 * The remote store client of the agent host's WebAssembly form (src/store/remote*.c):
 * the same schema, rules and messages as the PostgreSQL backend above, reached through
 * the host's network port (peri/net.h) instead of libpq, without threads or blocking
 * calls. An operation is started and returns at once; its result arrives in the
 * callback once the server's answer has been read (from inside pst_remote_on_event,
 * never from the call that started it). A call that returns anything but PST_OK started
 * nothing and its callback is never called (bad arguments, a write without a machine
 * identity, a closed store).
 *
 * Ownership: pst_remote is the caller's (pst_remote_free after pst_remote_settled). The
 * result handed to a callback is the library's: it is cleared when the callback returns;
 * a callback keeps a part by moving it out (copy the field, then zero it in the result).
 */
struct pn_ports;
struct pn_event;
typedef struct pst_remote pst_remote;

typedef struct pst_remote_result {
    pst_status status;
    pst_error error;           /* status != PST_OK: why (same texts as the native store) */
    pst_thread thread;         /* thread_create, thread_get */
    pst_thread_page page;      /* thread_list */
    pst_message_list messages; /* messages_load */
    int64_t value;             /* messages_append: first seq; messages_count: the count;
                                  open: the schema version */
    char id[PST_ID_LEN];       /* workspace_ensure */
} pst_remote_result;

typedef void (*pst_remote_cb)(void *ud, pst_remote_result *res);

typedef struct pst_remote_options {
    const struct pn_ports *ports; /* required, borrowed; its events for this store's stream
                                     must be passed to pst_remote_on_event */
    /* "postgresql://user@host[:port][/db][?sslmode=disable|direct]": a local store
     * locator is refused; so is a password in it, and an sslmode the port cannot do. */
    const char *locator;
    const char *password; /* the credential (copied, wiped at free); NULL: none */
    /* The instance's machine identity (fixed for the store's life). NULL: every write is
     * refused with PST_ERR_FOREIGN, reads are allowed. */
    const char *machine_id;
    /* Randomness for the SCRAM nonce (required). */
    bool (*random)(void *ctx, void *buf, size_t n);
    void *random_ctx;
} pst_remote_options;

/* Connects, authenticates and checks/migrates the schema (the PostgreSQL backend's
 * migrations; a newer schema: PST_ERR_SCHEMA); cb gets the outcome (value = the schema
 * version). Until cb has reported PST_OK, operations are refused (PST_ERR_CONN). NULL +
 * err on a bad option (a local or password-bearing locator, an sslmode the port cannot
 * do, no ports / randomness / callback). */
pst_remote *pst_remote_open(const pst_remote_options *o, pst_remote_cb cb, void *ud,
                            pst_error *err);
/* Routes an event of the ports: true when it was this store's (ev->ud == the store). */
bool pst_remote_on_event(pst_remote *r, const struct pn_event *ev);
/* Fails every pending operation (PST_ERR_CONN), ends the session and closes the stream;
 * pst_remote_settled is true once the stream has settled. */
void pst_remote_close(pst_remote *r);
bool pst_remote_settled(const pst_remote *r);
void pst_remote_free(pst_remote *r);
void pst_remote_result_clear(pst_remote_result *res);

pst_status pst_remote_machine_ensure(pst_remote *r, const char *machine_id, const char *name,
                                     pst_remote_cb cb, void *ud, pst_error *err);
pst_status pst_remote_workspace_ensure(pst_remote *r, const char *machine_id, const char *path,
                                       pst_remote_cb cb, void *ud, pst_error *err);
pst_status pst_remote_thread_create(pst_remote *r, const pst_thread_new *in, pst_remote_cb cb,
                                    void *ud, pst_error *err);
pst_status pst_remote_thread_get(pst_remote *r, const char *id, pst_remote_cb cb, void *ud,
                                 pst_error *err);
pst_status pst_remote_thread_list(pst_remote *r, const pst_list_query *q, pst_remote_cb cb,
                                  void *ud, pst_error *err);
pst_status pst_remote_thread_rename(pst_remote *r, const char *id, const char *title,
                                    pst_remote_cb cb, void *ud, pst_error *err);
pst_status pst_remote_thread_set_model(pst_remote *r, const char *id, const char *model,
                                       pst_remote_cb cb, void *ud, pst_error *err);
pst_status pst_remote_thread_set_meta(pst_remote *r, const char *id, const char *meta_json,
                                      pst_remote_cb cb, void *ud, pst_error *err);
pst_status pst_remote_thread_set_archived(pst_remote *r, const char *id, bool archived,
                                          pst_remote_cb cb, void *ud, pst_error *err);
pst_status pst_remote_thread_delete(pst_remote *r, const char *id, pst_remote_cb cb, void *ud,
                                    pst_error *err);
/* The strings of msgs are copied before the call returns. */
pst_status pst_remote_messages_append(pst_remote *r, const char *thread_id,
                                      const pst_message_in *msgs, size_t n, pst_remote_cb cb,
                                      void *ud, pst_error *err);
pst_status pst_remote_messages_load(pst_remote *r, const char *thread_id, pst_remote_cb cb,
                                    void *ud, pst_error *err);
pst_status pst_remote_messages_count(pst_remote *r, const char *thread_id, pst_remote_cb cb,
                                     void *ud, pst_error *err);

#ifdef __cplusplus
}
#endif
#endif
