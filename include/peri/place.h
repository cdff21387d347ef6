/*
 * peri/place.h — placement (prefix pl_): which backend runs a request, and the native
 * sandbox. Layer: above the room (pr_), below the agent host.
 *
 * Every run request gets a placement decision: the WebAssembly room (`wasm_room`) by
 * default, the native sandbox (`native_sandbox`, bubblewrap + seccomp + cgroup) only
 * when the request needs it (L1 routing). A room attempt may be promoted to native once
 * (L2) only when the room's host-side admission step returned the typed
 * `runtime_unsupported` outcome, i.e. the host proved that neither the workspace nor
 * any effect was started. Nothing runs unsandboxed unless the caller's policy says
 * `native_unsandboxed` (and the decision records it). docs/placement.md has the rules.
 *
 * Usage (in-process):
 *
 *     pl_error err;
 *     pl_ctx *pc = pl_new(&(pl_config){.room = my_room_host}, &err);   // once; thread-safe
 *     pl_request *rq = pl_request_parse(json, len, &err);              // or fill a struct:
 *     //   pl_request r = {.run_id = "r1", .kind = PL_PROGRAM_SHELL, .program = "ls -l",
 *     //                   .requirements = PL_REQ_SHELL,
 *     //                   .state_class = PL_STATE_NATIVE_WORKSPACE_REF, .workspace = cwd};
 *     pl_policy pol = {.native = PL_NATIVE_AUTO, .network_allowed = false};
 *     pl_cancel *cancel = pl_cancel_new();   // another thread may call pl_cancel_trigger
 *     pl_report rep;
 *     if (pl_run(pc, rq, &pol, cancel, &rep, &err)) {
 *         // rep.decisions[0..ndecisions-1]: L1 decision, then the L2 child if promoted
 *         // rep.has_outcome: the typed runtime_unsupported outcome that caused promotion
 *         // rep.evidence[0..nevidence-1]: JSON text, one per physical attempt
 *         // rep.result: ok/stdout/stderr/exit_code/files/error, backend, decision identity
 *     } else {
 *         // host error (err.code, err.message): nothing was produced
 *     }
 *     pl_report_clear(&rep); pl_cancel_free(cancel); pl_request_free(rq); pl_free(pc);
 *
 * A guest failure (non-zero exit, trap, CPU/wall/memory limit, cancel) is a result with
 * ok = false and an error text, not a host error. A decision with status `unavailable`
 * also produces a result (ok = false, error names why) and no attempt.
 *
 * Cancel: pl_cancel_trigger (any thread; lock-free and async-signal-safe) makes a
 * running native attempt kill its whole process tree (SIGKILL to the sandbox's PID
 * namespace and every process in its cgroup) and return within a few milliseconds;
 * a running room attempt is interrupted by the room's watchdog (it polls the caller's
 * pl_cancel every 5 ms and raises the engine's interrupt, which the guest sees at its
 * next loop back-edge or call). Either way the result says "cancelled"
 * (pl_result.stop = PL_STOP_CANCELLED) and the evidence says how the run ended.
 *
 * Limits: a native attempt runs under the request's limits; a room attempt under the
 * tighter of the request's and the room host's (CPU <= 1000 ms, wall 5000 ms, memory
 * 128 MiB, output 64 KiB by default): a request above a ceiling is lowered to it,
 * never refused, and the result and evidence record the applied limits and which
 * were lowered (docs/placement.md).
 *
 * Ownership: everything a pl_ function returns through an out-parameter is owned by
 * the caller and freed with the matching _free/_clear function. Borrowed pointers in
 * pl_request / pl_policy / pl_config must stay valid for the duration of the call
 * (pl_config's for the ctx's lifetime).
 *
 * Thread safety: one pl_ctx may be used by any number of threads at once. No global
 * mutable state; the library reads no environment variable.
 */
#ifndef PERI_PLACE_H
#define PERI_PLACE_H

#include "peri/room.h"

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------- errors */

typedef enum pl_code {
    PL_OK = 0,
    PL_ERR_REQUEST, /* the request JSON/struct is invalid (unknown field, duplicate key...) */
    PL_ERR_POLICY,  /* the policy is invalid */
    PL_ERR_OUTCOME, /* a runtime_unsupported outcome failed to decode or validate */
    PL_ERR_NATIVE,  /* native required (--native yes) but the sandbox is unavailable */
    PL_ERR_HOST,    /* the host failed (out of memory, fork, scratch dir...) */
} pl_code;

typedef struct pl_error {
    pl_code code;
    char message[512]; /* UTF-8, NUL-terminated */
} pl_error;

/* ---------------------------------------------------------------- requests */

typedef enum pl_program_kind {
    PL_PROGRAM_WASM = 1, /* {"wasm": PATH, "args": [...]}: a WASI command or a 豫言 program */
    PL_PROGRAM_SHELL,    /* {"shell": "COMMAND"}: /bin/sh -c COMMAND (native only) */
    PL_PROGRAM_RUBY,     /* {"ruby": "SOURCE"}: the room's Ruby (pl_ruby_hook) or native ruby */
    PL_PROGRAM_PYTHON,   /* {"python": "SOURCE"}: the room's Python (pl_config.python_hook) or
                            native python3, chosen by the imports (pl_python_requirements) */
} pl_program_kind;

typedef enum pl_state_class {
    PL_STATE_PORTABLE_VALUE = 0, /* default */
    PL_STATE_NATIVE_WORKSPACE_REF,
    PL_STATE_NATIVE_PROCESS_REF,
    PL_STATE_OPAQUE,
} pl_state_class;

/* Requirement / feature bits. Bit order is the sorted order of the names, so iterating
 * bits from low to high yields the sorted feature list. `network` is Peri-C's addition
 * to Pysolate's eight features. */
enum {
    PL_REQ_BROWSER_RUNTIME = 1u << 0,
    PL_REQ_DAEMON = 1u << 1,
    PL_REQ_DYNAMIC_PACKAGE_INSTALL = 1u << 2,
    PL_REQ_NATIVE_EXTENSION = 1u << 3,
    PL_REQ_NATIVE_THREADS = 1u << 4,
    PL_REQ_NETWORK = 1u << 5,
    PL_REQ_POSIX = 1u << 6,
    PL_REQ_SHELL = 1u << 7,
    PL_REQ_SUBPROCESS = 1u << 8,
};
#define PL_REQ_COUNT 9
/* "browser_runtime", ... for bit i (0..PL_REQ_COUNT-1); NULL past the end. */
const char *pl_feature_name(unsigned bit_index);

/* Limits; 0 means the default (docs/placement.md): cpu_ms 1000 (the room never more),
 * wall_ms 5000, memory_mib 256, output_bytes 1 MiB (stdout+stderr; the room's own
 * 64 KiB applies there), processes 64. */
typedef struct pl_limits {
    uint32_t cpu_ms, wall_ms, memory_mib;
    uint64_t output_bytes;
    uint32_t processes;
} pl_limits;

typedef struct pl_file {
    const char *path; /* guest path, e.g. "/数据/in.txt" (NUL-terminated UTF-8) */
    const char *text; /* UTF-8 contents */
    size_t text_len;
} pl_file;

typedef struct pl_request {
    const char *run_id; /* required, 1..128 bytes */
    pl_program_kind kind;
    const char *program;     /* wasm: module path; shell: command; ruby, python: source */
    const char *const *args; /* wasm only: argv[1..] */
    size_t nargs;
    const char *stdin_data; /* NULL: none */
    size_t stdin_len;
    const pl_file *files;
    size_t nfiles;
    uint32_t requirements; /* PL_REQ_* bits */
    pl_state_class state_class;
    pl_limits limits;
    bool network;          /* the request wants network access (native only, policy permitting) */
    const char *workspace; /* host directory; only with PL_STATE_NATIVE_WORKSPACE_REF */
    bool model_risk;       /* the model-risk signal (L1 step 2), Peri-C's request field */
    /* The raw request bytes that request_sha256 covers. pl_request_parse sets them to
     * the parsed text; for a struct built in C leave NULL: the canonical JSON
     * serialisation (pl_request_json) is used. */
    const char *raw;
    size_t raw_len;
} pl_request;

/* Parses and validates a request JSON text (unknown fields, duplicate keys, trailing
 * data, wrong types, bad enum values are rejected with PL_ERR_REQUEST and a message
 * naming the field). Returns an owned request (free with pl_request_free) whose raw
 * bytes are a copy of `json`. */
pl_request *pl_request_parse(const char *json, size_t len, pl_error *err);
void pl_request_free(pl_request *r);
/* Validates a C-built request the same way. */
bool pl_request_validate(const pl_request *r, pl_error *err);
/* The canonical JSON of a request (fixed field order, defaults omitted). Caller frees. */
char *pl_request_json(const pl_request *r, size_t *len);

/* ---------------------------------------------------------------- policy */

typedef enum pl_native_mode {
    PL_NATIVE_AUTO = 0, /* native is available when the sandbox probe passes */
    PL_NATIVE_YES,      /* like auto, but an unavailable sandbox is a host error */
    PL_NATIVE_NO,       /* native is never available: native reasons give `unavailable` */
} pl_native_mode;

typedef struct pl_policy {
    pl_native_mode native;
    bool network_allowed;    /* a request's network:true is honoured (native only): the
                                sandbox gets a network namespace of its own, connected by
                                pasta (user-mode networking; none of the host's loopback
                                services or abstract sockets is reachable); without pasta
                                a network run fails with an error saying so */
    bool host_network;       /* explicit: with network_allowed, share the HOST's network
                                namespace instead (its loopback services and abstract
                                AF_UNIX sockets become reachable); recorded in the
                                evidence ("network": "host") */
    bool native_unsandboxed; /* explicit: run native WITHOUT the sandbox when it is
                                unavailable; recorded in the decision ("unsandboxed") */
    /* Extra host directories bound read-write (at their own paths) for
     * native_workspace_ref runs, besides the workspace. */
    const char *const *writable;
    size_t nwritable;
    /* Host directories of the host's own state that sandboxed code never writes, even
     * inside a writable dir or the workspace (the host passes the user's Peri home;
     * docs/placement.md, "Protected directories"). Each stays read-only at its path, its
     * parents up to the bound dir cannot be renamed or removed, a missing one is
     * created (0700) first; a symlink on the way refuses the run, and so does a bound dir
     * that is one of them or lies inside one. */
    const char *const *protect;
    size_t nprotect;
    /* The same, except that a bound dir inside one is allowed (the session store's
     * directory, which may hold the project too); a bound dir that is one is refused. */
    const char *const *protect_around;
    size_t nprotect_around;
    /* The source-pass stage's plugin (docs/python.md): NULL disables the stage;
     * "repl_print" makes a Python script's top-level expression statements print their
     * values, as the REPL does. Any failure runs the original. */
    const char *source_pass;
    /* The session's capability handler for room guests (docs/python.md,
     * "Capabilities"): every dispatch of a room run of a {"python"} or {"ruby"} request
     * goes to it, and is recorded in pl_report.caps and the attempt's evidence. NULL:
     * every dispatch is refused. The handler applies the session's own policy (e.g.
     * network_allowed for http.fetch: tools/fetch_cap.c). */
    pr_cap_fn capability;
    void *cap_ud;
} pl_policy;

/* Parses a policy JSON: {"native":"auto|yes|no","network":bool,"host_network":bool,
 * "native_unsandboxed":bool,"writable":[dirs],"protect":[dirs]} (all optional, strict). Owned; free
 * with pl_policy_free. */
pl_policy *pl_policy_parse(const char *json, size_t len, pl_error *err);
void pl_policy_free(pl_policy *p);

/* ---------------------------------------------------------------- context */

struct pl_cancel;

/* The room's Ruby adapter (filled in by the room's Ruby support). run executes the
 * source once in a fresh room and fills *out like a WASI command's outcome (stdout,
 * stderr, exit code, files under /数据/ and /响应/ as room JSON text in out->output).
 * Returns false with *err on a platform failure (pr_error kinds as pr_run's). limits are
 * the attempt's applied limits (the tighter of the request's and the room host's),
 * which the run must not exceed; out->stop / err->stop say which one stopped it. It
 * should poll pl_cancel_triggered(cancel) (cancel may be NULL) and stop early when set
 * (err->stop = PR_STOP_CANCEL). grant (may be NULL: none) is the run's capability
 * grant: the guest's dispatches go to its handler and are recorded in its log. */
/* A run's capability grant: the handler (NULL: every dispatch refused) and the log
 * every dispatch is recorded in (NULL: none). */
typedef struct pl_grant {
    pr_cap_fn fn;
    void *ud;
    pr_cap_log *log;
} pl_grant;

typedef struct pl_ruby_hook {
    bool (*run)(void *ud, pr_host *room, const char *source, size_t source_len,
                const pl_file *files, size_t nfiles, const char *stdin_data, size_t stdin_len,
                const pl_limits *limits, const pl_grant *grant, const struct pl_cancel *cancel,
                pr_response *out, pr_error *err);
    void *ud;
} pl_ruby_hook;

/* The hook that runs {"ruby": ...} requests with the room's Ruby (pr_ruby, room.h);
 * rb must outlive every pl_ctx configured with it. */
pl_ruby_hook pl_ruby_room_hook(pr_ruby *rb);
/* The same for {"python": ...} requests with the room's Python (pr_python, room.h);
 * py must outlive every pl_ctx configured with it. */
pl_ruby_hook pl_python_room_hook(pr_python *py);
/* What a Python source needs that the room's Python cannot give, read from its imports
 * (subprocess, socket, ctypes, multiprocessing, threading, numpy, pandas...): PL_REQ_*
 * bits, 0 for a script the room runs. why (optional) gets the first finding, e.g.
 * "line 3: import subprocess". The L1 analyser applies the same reading. */
uint32_t pl_python_requirements(const char *src, size_t len, char *why, size_t why_len);

typedef struct pl_config {
    pr_host *room;            /* borrowed room host; NULL: pl_new creates one (defaults) */
    const char *bwrap;        /* NULL: "/usr/bin/bwrap" */
    const char *scratch_root; /* NULL: "/tmp" (scratch dirs peri-sbx-XXXXXX, removed after) */
    const char *cgroup_root;  /* NULL: "/sys/fs/cgroup" (v2 there, or v1 memory/pids/cpuacct) */
    /* argv that runs a WASI module natively: an element "{module}" is replaced by the
     * module's path inside the sandbox (else the path is appended), then the request's
     * args are appended; e.g. {"/usr/local/bin/peri", "run", "{module}", "--"}. The
     * binary is bound read-only into the sandbox. NULL: wasm programs cannot run
     * natively (a promoted wasm request then fails with a clear error). */
    const char *const *wasm_runner;
    size_t nwasm_runner;
    const char *ruby;              /* native ruby interpreter; NULL: "/usr/bin/ruby" */
    const char *pasta;             /* user-mode networking for network runs (Debian package passt);
                                      NULL: "/usr/bin/pasta" */
    const pl_ruby_hook *ruby_hook; /* NULL: the room has no Ruby ("ruby program kind
                                      unavailable in the room") */
    const char *python;            /* native python; NULL: "/usr/bin/python3" */
    const pl_ruby_hook *python_hook; /* NULL: the room has no Python */
} pl_config;

typedef struct pl_ctx pl_ctx;
pl_ctx *pl_new(const pl_config *cfg, pl_error *err); /* free with pl_free */
void pl_free(pl_ctx *pc);

/* Whether the native sandbox works on this machine (probed once, then cached). When
 * false, `why` says what is missing (bwrap, user namespaces...). */
bool pl_native_available(pl_ctx *pc, char *why, size_t why_len);

/* ---------------------------------------------------------------- decisions */

typedef enum pl_backend {
    PL_BACKEND_NONE = 0,
    PL_BACKEND_WASM_ROOM,
    PL_BACKEND_NATIVE_SANDBOX
} pl_backend;
const char *pl_backend_name(pl_backend b); /* "wasm_room", "native_sandbox", "" */

typedef enum pl_reason {
    PL_REASON_QUALIFIED_RUNTIME = 1, /* "qualified_wasm_runtime" */
    PL_REASON_NATIVE_STATE,          /* "native_state_dependency" */
    PL_REASON_MODEL_RISK,            /* "model_risk_signal" */
    PL_REASON_REQUIRED_FEATURE,      /* "required_native_feature" */
    PL_REASON_SOURCE_INDETERMINATE,  /* "source_indeterminate" */
    PL_REASON_NO_QUALIFIED_RUNTIME,  /* "no_qualified_wasm_runtime" */
    PL_REASON_WASM_UNAVAILABLE,      /* "wasm_runtime_unavailable" */
    PL_REASON_NATIVE_UNAVAILABLE,    /* "native_unavailable" */
    PL_REASON_PROMOTION,             /* "l2_not_started_promotion" */
} pl_reason;
const char *pl_reason_name(pl_reason r);

#define PL_DIGEST_LEN 72 /* "sha256:" + 64 hex + NUL */

typedef struct pl_decision {
    bool selected; /* status: "selected" or "unavailable" */
    pl_backend backend;
    pl_reason reason;
    char request_sha256[PL_DIGEST_LEN];
    char runtime_profile[64];           /* set only for wasm_room */
    char runtime_sha256[PL_DIGEST_LEN]; /* set only for wasm_room */
    pl_state_class state_class;
    char parent_decision_id[PL_DIGEST_LEN]; /* "" unless an L2 child */
    bool unsandboxed;                       /* native without the sandbox (policy said so) */
    char identity[PL_DIGEST_LEN];           /* sha256 of the canonical JSON of the above */
} pl_decision;

/* L1 only: validates the request and decides. No attempt is made. */
bool pl_decide(pl_ctx *pc, const pl_request *r, const pl_policy *pol, pl_decision *out,
               pl_error *err);
/* The record as JSON text (fixed field order, identity last). Caller frees. */
char *pl_decision_json(const pl_decision *d, size_t *len);
/* Recomputes d->identity from the other fields. */
void pl_decision_seal(pl_decision *d);

/* ---------------------------------------------------------------- typed outcome */

#define PL_OUTCOME_FEATURES_MAX 16
typedef struct pl_outcome {
    uint32_t schema_version;    /* 1 */
    char kind[32];              /* "runtime_unsupported" */
    bool escalation_required;   /* true */
    char escalation_reason[48]; /* "required_features_unsupported" */
    char features[PL_OUTCOME_FEATURES_MAX][32];
    size_t nfeatures;
    char workspace_disposition[24];     /* "not_started" */
    char effect_disposition[24];        /* "not_started" */
    char request_sha256[PL_DIGEST_LEN]; /* evidence.request_sha256 */
} pl_outcome;

/* Strict decoder: rejects unknown fields, duplicate keys, trailing data, wrong types. */
bool pl_outcome_decode(const char *json, size_t len, pl_outcome *out, pl_error *err);
/* Every constant, the digest format, features sorted/unique/known (1..9). When raw is
 * not NULL the digest must also equal sha256(raw bytes). */
bool pl_outcome_validate(const pl_outcome *o, const char *raw, size_t raw_len, pl_error *err);
char *pl_outcome_json(const pl_outcome *o, size_t *len); /* caller frees */

/* ---------------------------------------------------------------- running */

typedef struct pl_cancel pl_cancel;
pl_cancel *pl_cancel_new(void); /* NULL when out of memory */
void pl_cancel_trigger(pl_cancel *c);
bool pl_cancel_triggered(const pl_cancel *c);
void pl_cancel_free(pl_cancel *c);

/* A caller's cancel flag (an atomic_int set by another thread) linked to a pl_cancel: a
 * thread polls the flag every 10 ms and triggers c once it is set, so a run started with
 * c stops when the caller's flag rises. Start before pl_run, stop after it returns; a
 * NULL flag links nothing. Owns nothing: flag and c must outlive the link. */
typedef struct pl_cancel_link {
    atomic_int *flag;
    pl_cancel *cancel;
    atomic_int done;
    pthread_t th;
    bool started;
} pl_cancel_link;
void pl_cancel_link_start(pl_cancel_link *l, atomic_int *flag, pl_cancel *c);
void pl_cancel_link_stop(pl_cancel_link *l);

/* Why the host stopped a run (pl_result.stop, result JSON "stopped_by"): the request
 * limit that was reached, or a cancel. A limit is never reported as a cancel, a cancel
 * never as a limit or a trap. */
typedef enum pl_stop {
    PL_STOP_NONE = 0,
    PL_STOP_CPU,      /* "cpu_ms" */
    PL_STOP_WALL,     /* "wall_ms" */
    PL_STOP_MEMORY,   /* "memory_mib" */
    PL_STOP_OUTPUT,   /* "output_bytes" */
    PL_STOP_CANCELLED /* "cancelled" */
} pl_stop;
const char *pl_stop_name(pl_stop s); /* the names above; "" for PL_STOP_NONE */

/* pl_result.capped bits: a request limit above the backend's ceiling, lowered to it. */
enum {
    PL_LIMIT_CPU_MS = 1u << 0,
    PL_LIMIT_WALL_MS = 1u << 1,
    PL_LIMIT_MEMORY_MIB = 1u << 2,
    PL_LIMIT_OUTPUT_BYTES = 1u << 3,
};

typedef struct pl_out_file {
    char *path; /* guest path, e.g. "/响应/out.txt" */
    char *text;
    size_t len;
} pl_out_file;

typedef struct pl_result {
    bool ok;
    int exit_code;
    char *stdout_text, *stderr_text; /* NUL-terminated UTF-8 (invalid bytes → U+FFFD) */
    size_t stdout_len, stderr_len;
    pl_out_file *files;
    size_t nfiles;
    char *error; /* NULL when ok */
    pl_backend backend;
    char decision[PL_DIGEST_LEN]; /* identity of the decision that produced it */
    /* The limits the attempt ran under (has_limits): the request's (defaults filled
     * in), in the room lowered to the room host's ceilings; `capped` says which request
     * values were lowered. stop: which limit stopped the run, or a cancel. */
    bool has_limits;
    pl_limits limits;
    unsigned capped; /* PL_LIMIT_* bits */
    pl_stop stop;
    char *json; /* {"ok":...,"stdout":...,"stderr":...,"exitCode":...,"files":{...},
                   "backend":...,"decision":...[,"limits":{cpu_ms,wall_ms,memory_mib,
                   output_bytes[,processes]}][,"capped":[...]][,"stopped_by":...]} */
    size_t json_len;
} pl_result;

typedef struct pl_report {
    pl_decision decisions[2]; /* [0] the L1 decision, [1] the L2 child when promoted */
    size_t ndecisions;
    bool has_outcome;
    pl_outcome outcome;
    char *evidence[2]; /* JSON text per physical attempt (peri.native-lifecycle.v1 or
                          peri.room-lifecycle.v1); owned */
    size_t nevidence;
    pl_result result;
    /* The source-pass stage's record (JSON): which path ran ("derived" or "original")
     * and why; "" when the request never reached the stage. */
    char source_pass[256];
    /* Every capability dispatch of the room attempt (pl_policy.capability), in order;
     * caps.committed: one may have had an effect outside the room, so the run can no
     * longer be promoted (no_promotion says why). */
    pr_cap_log caps;
    char no_promotion[200]; /* "" unless a committed dispatch ruled promotion out */
    /* Why L1 wanted the native sandbox (a native reason, or wasm_runtime_unavailable
     * when the room has no runtime for the kind); PL_REASON_QUALIFIED_RUNTIME when it
     * did not. Set whenever decisions[0] is. */
    pl_reason native_reason;
} pl_report;

/* Decides, runs (with at most one L2 promotion) and fills *out. Returns false only on
 * a host error (invalid request/policy, out of memory, PL_ERR_NATIVE). cancel may be
 * NULL. */
bool pl_run(pl_ctx *pc, const pl_request *r, const pl_policy *pol, pl_cancel *cancel,
            pl_report *out, pl_error *err);
/* A capability log as JSON: [{"op","arg","at" (ISO time),"status","committed"}...].
 * Caller frees; NULL when out of memory. */
char *pl_cap_log_json(const pr_cap_log *l, size_t *len);
void pl_report_clear(pl_report *rep);

/* True when a workspace-relative path is one of the agent's control files, which the
 * native sandbox never lets sandboxed code write (docs/placement.md, "Sandbox
 * integrity"): .peri/..., .git/..., .mcp.json, AGENTS.md, PERI.md, CLAUDE.md. */
bool pl_is_control_path(const char *rel);

#ifdef __cplusplus
}
#endif
#endif
