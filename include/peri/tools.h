/*
 * peri/tools.h — workspace tools confined to a session's cwd (prefix ptl_).
 *
 * Tools: read, write, edit, list, glob, grep, shell. Each is a static, immutable
 * descriptor (ptl_tool) with a name, a description and a JSON Schema for the model, its
 * ACP ToolKind, and whether it needs the user's permission before running.
 *
 * Confinement: every path argument is resolved ONCE, beneath a descriptor of ctx->cwd
 * (openat2 RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS, or an equivalent O_NOFOLLOW walk),
 * and the tool then works on the descriptor it got: "..", absolute paths elsewhere,
 * absolute symlinks, symlinks leading out and /proc magic links are refused with
 *   "path escapes the workspace: <path as given>"
 * and a symlink swapped in during the call cannot redirect it. read, edit and grep refuse
 * FIFOs, devices (without blocking) and hard-linked files (st_nlink > 1: another name may
 * be outside). write and edit replace a file by a temporary file renamed over it (mode and
 * owner kept, fsync'd), so a failure never leaves it truncated; their results are bounded
 * (32 MiB). glob matching is polynomial and every long loop polls ctx->cancel. The shell
 * tool runs arbitrary commands in cwd and is not confined (its permission prompt is the
 * control); all its descendants, setsid ones included, end with it. See
 * docs/tools-confinement.md.
 *
 * Ownership: ptl_result strings are malloc'd and owned by the result; free with
 * ptl_result_clear. Nothing here keeps global mutable state.
 *
 * CHANGES (after first publication; additive only):
 *   ptl_fstatus, ptl_fstatus_text, ptl_open_beneath, ptl_read_beneath; titles of
 *   write/edit state sizes ("Write p (N bytes)", "Edit p (replace N bytes with M bytes[,
 *   every occurrence])"); symlinks with absolute targets are no longer followed even when
 *   they point inside the workspace.
 *   ptl_ctx.client_fs — read/write/edit may read and write files through the
 *             ACP client (the editor's buffers) after the same confinement;
 *             ptl_client_fs.read_cancel / write_cancel take the call's cancel flag.
 *   ptl_ctx.client_term, ptl_client_term, ptl_term_result — with the
 *             sandbox mode off, shell runs in the ACP client's terminal when offered.
 *   the `run` tool (WASI programs and Ruby scripts, placed by pl_run: the
 *   WebAssembly room first); `shell` through placement when ctx->sandbox is set
 *   (native sandbox: cwd read-write, no network); ptl_ctx.sandbox, ptl_result.meta_json
 *   and raw_output_json; ptl_tool_needs_permission.
 *   PTL_F_PROTECTED, ptl_protected_dir: write and edit refuse the directories of the
 *   host's own state that ctx->sandbox->policy protects (protect, protect_around), even
 *   inside the workspace.
 */
#ifndef PERI_TOOLS_H
#define PERI_TOOLS_H

#include "peri/base.h"
#include "peri/room.h"
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum ptl_kind { /* ACP ToolKind */
                        PTL_KIND_READ = 0,
                        PTL_KIND_EDIT,
                        PTL_KIND_DELETE,
                        PTL_KIND_MOVE,
                        PTL_KIND_SEARCH,
                        PTL_KIND_EXECUTE,
                        PTL_KIND_THINK,
                        PTL_KIND_FETCH,
                        PTL_KIND_OTHER,
} ptl_kind;

/* "read" "edit" "delete" "move" "search" "execute" "think" "fetch" "other" */
const char *ptl_kind_name(ptl_kind k);

typedef struct ptl_tool ptl_tool;

/* The built-in tools, in a fixed order: read, write, edit, list, glob, grep, shell. */
size_t ptl_count(void);
const ptl_tool *ptl_at(size_t i);           /* NULL when i >= ptl_count() */
const ptl_tool *ptl_find(const char *name); /* NULL if unknown */

const char *ptl_name(const ptl_tool *t);
const char *ptl_description(const ptl_tool *t);
const char *ptl_schema_json(const ptl_tool *t); /* JSON Schema object text */
ptl_kind ptl_kind_of(const ptl_tool *t);
bool ptl_needs_permission(const ptl_tool *t); /* write, edit, shell: true */

/* Human title for the ACP tool_call ("Read src/main.c", "Run `make test`"). Never NULL
 * unless out of memory; falls back to the tool name on bad input. Caller frees. */
char *ptl_title(const ptl_tool *t, const char *input_json);

/* The editor's view of files (ACP fs/read_text_file, fs/write_text_file).
 * Paths given are canonical and already confined. Each returns 0 on success, 1 when the
 * client does not offer it (the disk is used), -1 on failure with errno set. read's
 * *data is malloc'd (caller frees). Either function may be NULL (= the disk).
 * read_cancel / write_cancel, when set, are used instead of read / write: the same with
 * the call's ctx->cancel (may be NULL), which ends the wait for the client when it
 * becomes non-zero (-1, errno ECANCELED). */
typedef struct ptl_client_fs {
    void *ctx;
    int (*read)(void *ctx, const char *abs_path, char **data, size_t *len);
    int (*write)(void *ctx, const char *abs_path, const char *data, size_t len);
    int (*read_cancel)(void *ctx, const char *abs_path, char **data, size_t *len,
                       atomic_int *cancel);
    int (*write_cancel)(void *ctx, const char *abs_path, const char *data, size_t len,
                        atomic_int *cancel);
} ptl_client_fs;

/* The client's terminal (ACP terminal/... requests): used ONLY by the shell tool
 * when the sandbox mode is off (the client's terminal is not our sandbox). run() runs
 * /bin/sh -c command in cwd in a client-created terminal, waits for its exit (killing it
 * at timeout_ms or when *cancel becomes non-zero) and fills *out. 0 ran (out->output
 * malloc'd, caller frees), 1 the client offers no terminal, -1 failed (errno set). */
typedef struct ptl_term_result {
    char terminal_id[128];
    char *output;
    int exit_code; /* -1 unknown; 128+9 when the client reports a signal */
    bool truncated, timed_out, cancelled;
} ptl_term_result;

typedef struct ptl_client_term {
    void *ctx;
    int (*run)(void *ctx, const char *cwd, const char *command, long long timeout_ms,
               size_t max_output, atomic_int *cancel, ptl_term_result *out);
} ptl_client_term;

struct pl_ctx;
struct pl_policy;

/* How `shell` and `run` execute (docs/run-tools.md).
 *   place set, off false: through placement (pl_run). shell: requirements ["shell"],
 *     state_class native_workspace_ref — the native sandbox with the cwd bound read-write
 *     at its own path, the policy's extra writable dirs, network only if the policy
 *     allows it; if the sandbox is unavailable the tool fails with a clear error.
 *     run: the room first; declared requirements send it to the native sandbox.
 *   off true: the settings said "sandbox": {"mode": "off"}: shell runs unsandboxed (the
 *     direct runner) and warn() is called for every such call; run still uses the room.
 * ctx->sandbox NULL (embedders and tests only; Peri's controller always sets it):
 *   shell is the direct runner, run fails with "run: placement is not configured". */
typedef struct ptl_sandbox {
    struct pl_ctx *place;
    const struct pl_policy *policy;
    bool off;
    void (*warn)(void *ud, const char *msg);
    void *warn_ud;
} ptl_sandbox;

struct pl_request;

/* The placement request of a shell command in the native sandbox over workspace, as
 * `shell` sends it and the hooks do: requirements ["shell"], state_class
 * native_workspace_ref, network only if sb's policy allows it, cpu and wall limits of
 * timeout_ms, the given memory and process limits, no stdin (the caller may add it).
 * run_id receives "<prefix>-<seconds>-<nanoseconds>" and must outlive rq; cmd and
 * workspace are borrowed. */
#define PTL_RUN_ID_LEN 64
void ptl_shell_request(struct pl_request *rq, char run_id[PTL_RUN_ID_LEN], const char *prefix,
                       const ptl_sandbox *sb, const char *workspace, const char *cmd,
                       long long timeout_ms, uint32_t memory_mib, uint32_t processes);

/* The session's capability handler for room guests (fetch_cap.c; pl_policy.capability
 * with this as cap_ud): http.fetch with libcurl under the session's network policy —
 * refused unless network is true; http/https only; the host on `hosts` when that list
 * is not empty; no redirect followed, no proxy from the environment, at most max_bytes
 * (0: 8 MiB) within timeout_ms (0: 10 s); loopback and link-local addresses only when
 * `local` (the policy shares the host's network). file.read / file.write go to `lease`
 * (pr_cap_lease_handle), refused when it is NULL. Borrowed pointers must outlive the
 * runs that use it. */
typedef struct ptl_fetch_cap {
    bool network, local;
    const char *const *hosts;
    size_t nhosts;
    size_t max_bytes;
    long timeout_ms;
    pr_cap_lease *lease;
} ptl_fetch_cap;
pr_cap_status ptl_fetch_cap_handle(void *fetch_cap, const pr_cap_call *call, pb_buf *reply,
                                   bool *committed);

/* Whether this call needs the user's permission: the tool's flag, except `run`, which
 * asks only when it would run natively (declared requirements or network). */
bool ptl_tool_needs_permission(const ptl_tool *t, const char *input_json);

typedef struct ptl_ctx {
    const char *cwd;    /* absolute session directory (required) */
    atomic_int *cancel; /* may be NULL; non-zero = stop now */
    size_t max_output;  /* bytes of output kept for the model; 0: 65536 */
    long timeout_ms;    /* shell default timeout when the input has none; 0: 120000 */

    /* may be NULL (files are read and written on disk). */
    const ptl_client_fs *client_fs;
    /* may be NULL; used only when sandbox->off (see ptl_client_term). */
    const ptl_client_term *client_term;
    /* how shell and run execute; may be NULL (see ptl_sandbox). */
    const ptl_sandbox *sandbox;
} ptl_ctx;

typedef struct ptl_result {
    char *output;          /* text for the model (NULL only after PTL_ERR_NOMEM) */
    bool is_error;         /* tool-level failure: output explains it */
    char *content_json;    /* ACP ToolCallContent[] JSON text, or NULL: e.g. for edit/write
                              [{"type":"diff","path":ABS,"oldText":..,"newText":..}];
                              otherwise [{"type":"content","content":{"type":"text",..}}] */
    char *locations_json;  /* ACP locations JSON array ([{"path":ABS,"line":N}]) or NULL */
    int exit_code;         /* shell: exit status, 128+signal if killed; -1 otherwise */
    bool timed_out;        /* shell: killed by its timeout */
    bool truncated;        /* output was cut to max_output */
    char *meta_json;       /* run/shell via placement: {"peri.placement":{...}} or NULL */
    char *raw_output_json; /* run/shell via placement: the placement result JSON or NULL */
} ptl_result;

typedef enum ptl_status {
    PTL_OK = 0,       /* the tool ran; result->is_error tells tool-level failure */
    PTL_CANCELLED,    /* ctx->cancel was raised; the result holds partial output */
    PTL_ERR_NOMEM,    /* host failure: out of memory (result output may be "") */
    PTL_ERR_INTERNAL, /* host failure: fork/pipe/etc. failed (output says which) */
} ptl_status;

/* Runs the tool. input_json is the model's arguments object text; malformed or invalid
 * input is a tool error (PTL_OK, is_error, output explains). out is initialised by the
 * call and must be cleared with ptl_result_clear whatever the status. */
ptl_status ptl_run(const ptl_tool *t, const char *input_json, const ptl_ctx *ctx, ptl_result *out);
void ptl_result_clear(ptl_result *r);

/* Confinement check used by the tools, exposed for tests and for the host: resolve `path`
 * (relative to cwd, or absolute) and store the canonical absolute path in *out
 * (malloc'd). for_create: the path and some of its parent directories may not exist yet
 * (the missing part may not contain ".."). Returns 0 on success, -1 with a message in
 * errbuf otherwise (for an escape: "path escapes the workspace: <path>"). */
int ptl_resolve_path(const char *cwd, const char *path, bool for_create, char **out, char *errbuf,
                     size_t errlen);

/* ---- Confined file access ----
 * The tools never check a path and open it again by name: a path is resolved once,
 * beneath a descriptor of the root, and the tool works on the descriptor it got.
 * Resolution refuses "..", absolute symlinks and symlinks leading out of the root, and
 * /proc magic links; relative symlinks that stay beneath the root are followed. Opens use
 * O_NONBLOCK|O_NOCTTY so FIFOs and devices never block. openat2(RESOLVE_BENEATH |
 * RESOLVE_NO_MAGICLINKS) where the kernel has it, else an equivalent walk with
 * O_NOFOLLOW per component. */
typedef enum ptl_fstatus {
    PTL_F_OK = 0,
    PTL_F_MISSING,     /* no such file or directory */
    PTL_F_ESCAPES,     /* resolution would leave the root */
    PTL_F_IS_DIR,      /* a directory where a file was wanted */
    PTL_F_NOT_REGULAR, /* FIFO, device, socket... */
    PTL_F_HARDLINK,    /* st_nlink > 1: another name may be outside the root */
    PTL_F_TOO_LARGE,   /* larger than the bound (and truncation was not asked) */
    PTL_F_NOMEM,
    PTL_F_IO,
    PTL_F_PROTECTED, /* write/edit: in one of the host's protected directories
                        (ptl_protected_dir) */
} ptl_fstatus;

/* Short English text for a status ("path escapes the workspace", ...). Static. */
const char *ptl_fstatus_text(ptl_fstatus s);

struct pl_policy;
/* The protected directory write and edit refuse real, an absolute real path, for: the
 * first of pol->protect that real is or lies inside, or of pol->protect_around unless the
 * workspace root (its real path) lies inside that one (placement's rule for the session
 * store's directory); each is compared both as named and where it really lives (a
 * symlinked ~/.peri). Returned as the policy names it; NULL for none or a NULL pol. These
 * are the host's own state (the user's Peri home with its settings and trust decisions,
 * the code cache, the room's builds, the session store: docs/placement.md, "Protected
 * directories"), which a workspace may contain when it contains where they live. */
const char *ptl_protected_dir(const struct pl_policy *pol, const char *root, const char *real);

/* Opens path, relative to the directory rootfd, beneath it (an absolute path: -EXDEV). Returns a
 * descriptor (O_CLOEXEC, O_NONBLOCK unless O_PATH; caller closes) or -errno: -EXDEV/-ELOOP for an
 * escape. */
int ptl_open_beneath(int rootfd, const char *path, int flags, mode_t mode);

/* Reads the regular file path (relative to root, or absolute inside it) beneath the
 * directory root: refuses escapes, non-regular files (FIFOs and devices without blocking)
 * and hard-linked files. At most max bytes: a larger file is PTL_F_TOO_LARGE, or its first
 * max bytes when truncate. On PTL_F_OK *data is malloc'd, NUL-terminated (caller frees). */
ptl_fstatus ptl_read_beneath(const char *root, const char *path, size_t max, bool truncate,
                             char **data, size_t *len);

#ifdef __cplusplus
}
#endif
#endif
