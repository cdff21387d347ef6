/*
 * peri/room.h — the isolation room (prefix pr_): isolation run contract 0.1.0.
 *
 * A pr_host is what an application owns: the granted LOADER list, the limits, the
 * isolate cache (compiled modules shared between threads) and the CPU/wall watchdog.
 * pr_run is the contract call runIsolated(runner, scope, digest, program, input): it
 * validates in the reference host's order, runs the program once in a fresh room
 * (fresh instance, fresh in-memory file system) and returns the result JSON text, or
 * fails with a typed contract exception (pr_error).
 *
 * Thread safety: pr_run may be called on the same host from any number of threads at
 * once. Nothing here touches global mutable state.
 *
 * Lower level (used by `peri run`): pr_program_load + pr_exec run a module with
 * arbitrary args and files and report the outcome as a struct, streaming output.
 */
#ifndef PERI_ROOM_H
#define PERI_ROOM_H

#ifndef __wasi__ /* wasm32-wasi (the agent module) has no threads */
#include <pthread.h>
#endif
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "peri/base.h"
#include "peri/wasm.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------- errors */

typedef enum pr_kind {
    PR_KIND_NONE = 0,
    PR_KIND_VIOLATION,  /* the request broke a rule (违规): bad runner, digest, input... */
    PR_KIND_RUN_FAILED, /* 隔离运行失败：… (not granted, not Wasm, CPU limit, link error) */
    PR_KIND_INTERFACE, /* 隔离运行失败：500：… (output files over the limits / not UTF-8) */
} pr_kind;

/* "violation", "run_failed", "interface" (or "none"); a static string. */
const char *pr_kind_name(pr_kind k);

/* The English meaning of a contract message (msg is one of the room's Chinese texts)
 * into buf, for a person reading a terminal; the contract's text itself is unchanged.
 * Returns buf, or NULL when msg is not a message it knows (src/room/explain.c). */
const char *pr_message_english(const char *msg, char *buf, size_t n);

/* Why the room stopped a run (beyond the contract: the contract's messages are
 * unchanged; this says which limit class a message belongs to). */
typedef enum pr_stop {
    PR_STOP_NONE = 0,
    PR_STOP_CPU,    /* 隔离运行失败：CPU 时间超过 N ms */
    PR_STOP_WALL,   /* 隔离运行失败：运行时间超过 N ms */
    PR_STOP_MEMORY, /* 隔离运行失败：内存超过上限 */
    PR_STOP_OUTPUT, /* result error 输出超过 64 KB (or 输出超过 N 字节 under a lower cap) */
    PR_STOP_CANCEL, /* 隔离运行失败：已取消 */
} pr_stop;

typedef struct pr_error {
    pr_kind kind;
    char message[1600]; /* the exact contract message, UTF-8, NUL-terminated */
    pr_stop stop;       /* the limit class of a run_failed exception, or PR_STOP_NONE */
} pr_error;

/* A byte string that need not be NUL-terminated (contract strings may contain NUL). */
typedef struct pr_str {
    const char *ptr;
    size_t len;
} pr_str;

/* ---------------------------------------------------------------- hosts */

#define PR_CPU_MS_MAX          1000u        /* the contract's limit; hosts may only lower it */
#define PR_WALL_MS_DEFAULT     5000u        /* the reference host's wall-clock watchdog */
#define PR_MEMORY_CAP_DEFAULT  (128u << 20) /* linear memory + GC heap per run */
#define PR_CACHE_BYTES_DEFAULT (256u << 20)

typedef struct pr_host_config {
    /* Runner names granted to the application (its LOADER list). NULL: {"LOADER"}. */
    const char *const *granted;
    size_t ngranted;
    /* Runner bindings that exist on this host. NULL: the granted list. */
    const char *const *bound;
    size_t nbound;
    uint32_t cpu_ms;     /* 0: 1000. Values over 1000 are refused by pr_host_new. */
    uint32_t wall_ms;    /* 0: 5000 */
    uint64_t memory_cap; /* 0: 128 MiB */
    size_t cache_bytes;  /* 0: 256 MiB; bound on the compiled-module cache (LRU by bytes) */
    /* The contract's runs (pr_run) see clocks and random_get as a fixed function of
     * (digest, input), so one program and one input give one result on every host
     * (docs/room.md, "Clocks and randomness"). real_clocks: the host's real clocks and
     * getrandom instead, for a host that runs programs for a person (the agent's
     * placement, `peri run`), where a program asking the time wants the time. */
    bool real_clocks;
    /* `peri run`: the limits are the caller's own, not the contract's (cpu_ms may exceed
     * 1000), and memory.grow past memory_cap returns -1 to the guest instead of ending
     * the run. */
    bool beyond_contract;
    /* Engine tier of every run (pw_store_config.engine: PW_ENGINE_AUTO = 0, the
     * default; PW_ENGINE_INTERP; PW_ENGINE_JIT). Results, traps and limits are the same. */
    int engine;
    /* Bounds checks of every run's 32-bit memories (pw_store_config.bounds_checks:
     * PW_BOUNDS_GUARD = 0, the default: guard pages where the address space allows;
     * PW_BOUNDS_EXPLICIT: every access checked). Results and traps are the same. */
    int bounds_checks;
    /* An on-disk cache of JIT translations shared by processes (docs/jit.md,
     * "Compiled-code cache"; pw_module_set_code_cache): every compiled program uses
     * it. NULL: none. A directory the engine refuses (not ours, writable by others)
     * leaves programs uncached; runs are unaffected. */
    const char *code_cache_dir;
    uint64_t code_cache_bytes; /* 0: the engine's default (1 GiB) */
} pr_host_config;

typedef struct pr_host pr_host;

/* cfg may be NULL for defaults. Caller frees with pr_host_free (which waits for no
 * runs: the caller must not free a host that is still running requests). */
pr_host *pr_host_new(const pr_host_config *cfg, pr_error *err);
void pr_host_free(pr_host *h);

/* The host resource version that, with (scope, digest), keys the isolate cache. */
const char *pr_host_resource_version(void);

typedef struct pr_cache_stats {
    size_t entries, bytes, hits, misses, evictions;
    /* text_hits: contract calls whose program text was byte-identical to the text a
     * cached program was verified from, so Base64 decoding and SHA-256 were skipped.
     * line_hits: `isolate serve` requests whose program text was recognised in the
     * request line by the text index (one memcmp instead of scanning and copying it).
     * line_hint_hits: those of line_hits whose text the reading thread had already
     * compared with the text the previous request had at the same place (no byte of it
     * read by the worker; serve.c). */
    size_t text_hits, line_hits, line_hint_hits;
} pr_cache_stats;
void pr_host_cache_stats(pr_host *h, pr_cache_stats *out);

/* ---------------------------------------------------------------- the contract call */

typedef struct pr_request {
    pr_str runner, scope, digest, program, input;
} pr_request;

typedef struct pr_response {
    char *output; /* the return JSON text, NUL-terminated; free with pr_response_clear */
    size_t output_len;
    char isolate[200]; /* the isolate identity "scope:digest" (NUL-terminated) */
    pr_stop stop;      /* PR_STOP_OUTPUT when the output limit ended the run (ok false) */
} pr_response;

/* Runs the request. On success returns true and fills *out (caller owns out->output).
 * On a contract exception returns false and fills *err. Never aborts. */
bool pr_run(pr_host *h, const pr_request *req, pr_response *out, pr_error *err);
void pr_response_clear(pr_response *r);
/* pr_run whose run stops (隔离运行失败：已取消) once cancelled(ud) returns true; polled by
 * the watchdog every few ms (a cancelled tool call). */
bool pr_run_cancellable(pr_host *h, const pr_request *req, bool (*cancelled)(void *), void *ud,
                        pr_response *out, pr_error *err);

/* Per-run limits, beyond the contract (placement, docs/placement.md): each field 0
 * keeps the host's own limit; a value above the host's is lowered to it (a run never
 * gets more than its host). output_max counts stdout + stderr bytes (host: 65,536). */
typedef struct pr_limits {
    uint32_t cpu_ms, wall_ms;
    uint64_t memory_cap; /* bytes of linear memory + GC heap */
    uint64_t output_max;
} pr_limits;

/* The host's own limits (its ceilings for pr_run_with). */
void pr_host_limits(const pr_host *h, pr_limits *out);

typedef struct pr_run_opts {
    pr_limits limits;            /* tighter per-run limits (0 fields: the host's) */
    bool (*cancelled)(void *ud); /* optional, as pr_run_cancellable */
    void *cancel_ud;
} pr_run_opts;

/* pr_run with per-run limits and cancel. A run stopped at a limit ends with the room's
 * message for that class, carrying the applied (lower) number: CPU and wall
 * exceptions say the run's own limit, the memory exception is the contract's text,
 * and the output result error is 输出超过 64 KB at the contract's cap, else
 * 输出超过 N 字节. Which class stopped it: err->stop (an exception) or out->stop (the
 * output limit, a result). With all limits 0 and no cancel it is exactly pr_run. */
bool pr_run_with(pr_host *h, const pr_request *req, const pr_run_opts *opts, pr_response *out,
                 pr_error *err);

/* ---------------------------------------------------------------- lower level */

typedef struct pr_program pr_program; /* a compiled, cached module + its guest ABI */
typedef struct pr_fs pr_fs;           /* an in-memory file system */

/* Loads (or finds in the cache) the program with these bytes. scope may be empty for
 * the CLI. Returns a reference the caller releases with pr_program_release. On failure
 * err has the contract message (隔离运行失败：动态 Worker 程序不是有效 Wasm, ...). */
pr_program *pr_program_load(pr_host *h, pr_str scope, const uint8_t *bytes, size_t len,
                            pr_error *err);
/* pr_program_load of the module file open at fd (at most 2 GiB; the caller keeps fd).
 * With the host's code cache, the digest of a file unchanged since it was last hashed
 * comes from a memo there instead of hashing it again, and a file of 1 MiB or more is
 * not read at all once the cache holds a checked copy of it, which is mapped instead
 * (pw_file_load_digest). A read failure: 隔离运行失败：无法读取模块文件（reason in
 * English）. */
pr_program *pr_program_load_fd(pr_host *h, pr_str scope, int fd, pr_error *err);
/* pr_program_load taking ownership of `bytes` (from malloc; the caller holds no other
 * reference): a newly compiled module keeps the buffer instead of copying it; it is
 * freed when the program was already cached and on failure. */
pr_program *pr_program_load_owned(pr_host *h, pr_str scope, uint8_t *bytes, size_t len,
                                  pr_error *err);
void pr_program_release(pr_program *p);
/* The SHA-256 of the program's bytes. */
void pr_program_digest(const pr_program *p, uint8_t out[32]);
/* The compiled module (owned by p), e.g. to look up an export's type. */
const pw_module *pr_program_module(const pr_program *p);

pr_fs *pr_fs_new(void); /* NULL when out of memory; free with pr_fs_free */
void pr_fs_free(pr_fs *fs);
/* Beyond the contract (peri run): the file system's logical clock starts at start
 * instead of 1, e.g. the run's start time in ns, so that timestamps read as times;
 * every write still advances it by one. Contract runs never call it. */
void pr_fs_set_clock(pr_fs *fs, uint64_t start);
/* Writes a whole file (path normalised). 0 ok, -1 out of memory, -2 over 128 MiB. */
int pr_fs_write(pr_fs *fs, const char *path, size_t path_len, const void *data, size_t len);
/* Iterates files in first-write order: returns false at the end. *cursor starts at 0. */
bool pr_fs_next(const pr_fs *fs, size_t *cursor, const char **path, size_t *path_len,
                const uint8_t **data, size_t *len);

/* A host directory preopened for the guest (peri run --dir). fd is an open directory
 * descriptor the caller keeps (the run uses a duplicate); guest is its WASI name. */
typedef struct pr_dir {
    int fd;
    const char *guest;
} pr_dir;

/* ---------------------------------------------------------------- capabilities */

/* Capability dispatch (docs/python.md, "Capabilities"): the one way a room guest asks
 * the host for authority-bearing work (an HTTP fetch, a workspace file). The guest
 * imports "peri_capability" (dispatch, reply); the room hands each call to the run's
 * handler, which decides and does the work, and records every call — handled or not —
 * in the run's log. Without a handler every call is refused. */
typedef enum pr_cap_status {
    PR_CAP_OK = 0,      /* done; the reply is the result (e.g. the body, the file) */
    PR_CAP_REFUSED = 1, /* not allowed (policy, no lease): nothing happened */
    PR_CAP_FAILED = 2,  /* allowed but failed; the reply says why */
    PR_CAP_INVALID = 3, /* malformed call (bad pointers, unknown operation) */
} pr_cap_status;
typedef struct pr_cap_call {
    pr_str op;   /* "http.fetch", "file.read", "file.write" */
    pr_str arg;  /* the URL or the workspace-relative path */
    pr_str data; /* file.write: the contents */
} pr_cap_call;
/* Decides and performs one call; appends the reply (or the reason) to *reply and sets
 * *committed when the work may have had an effect outside the room (a write, a
 * request sent), even if it then failed. */
typedef pr_cap_status (*pr_cap_fn)(void *ud, const pr_cap_call *call, pb_buf *reply,
                                   bool *committed);
typedef struct pr_cap_record {
    char op[32], arg[160]; /* cut to fit */
    int64_t at_ms;         /* wall clock, ms since the epoch */
    pr_cap_status status;
    bool committed;
} pr_cap_record;
/* The run's record of dispatches; caller-owned, zero-initialised; appended in order. */
typedef struct pr_cap_log {
    pr_cap_record *v;
    size_t n, cap;
    bool committed; /* some dispatch committed: the run had effects outside the room */
    bool truncated; /* records beyond PR_CAP_LOG_MAX were dropped (still counted in n_all) */
    size_t n_all;
} pr_cap_log;
#define PR_CAP_LOG_MAX 1024
void pr_cap_log_clear(pr_cap_log *l);
const char *pr_cap_status_name(pr_cap_status s); /* "ok", "refused", "failed", "invalid" */

/* A workspace lease for pr_cap_fn (capability_lease.c): file.read and file.write of
 * paths beneath one host directory the host opened (never above it, no symlink out,
 * no absolute path), files up to PR_CAP_FILE_MAX bytes; http.fetch is refused unless
 * network is true, and then fails (the room has no HTTP client of its own). */
#define PR_CAP_FILE_MAX (4u << 20)
typedef struct pr_cap_lease {
    int dir_fd;   /* -1: no workspace lease (file operations refused) */
    bool write;   /* file.write allowed */
    bool network; /* the session's network policy allows HTTP */
} pr_cap_lease;
pr_cap_status pr_cap_lease_handle(void *lease, const pr_cap_call *call, pb_buf *reply,
                                  bool *committed);

/* The length (1..4) of the well-formed UTF-8 sequence at s[0..n) (n >= 1), or 0 when
 * it is ill-formed, with *bad the length of its maximal ill-formed subpart (what the
 * WHATWG decoder replaces with one U+FFFD). */
size_t pr_utf8_seq(const uint8_t *s, size_t n, size_t *bad);

enum { PR_STDOUT = 1, PR_STDERR = 2 };
typedef void (*pr_output_fn)(void *ud, int stream, const char *utf8, size_t len);

typedef struct pr_exec_options {
    const pr_str *args; /* argv[1..]; argv[0] is always "/程序.wasm" */
    size_t nargs;
    pr_fs *fs;              /* the room's file system; the run writes into it */
    pr_output_fn on_output; /* optional: each write as decoded text, as it happens */
    void *ud;
    const uint8_t *seed; /* 32 bytes for deterministic clocks/random, or NULL */
    /* ---- peri run only (all zero in the contract's room) ---- */
    const pr_str *env; /* the WASI environment, "NAME=VALUE" strings */
    size_t nenv;
    pr_str argv0;         /* .ptr NULL: "/程序.wasm" */
    bool stdin_connected; /* stdin reads host descriptor stdin_fd (else it is empty) */
    int stdin_fd;
    /* Host directories, preopened from fd 3 in order; when one is named "/", the
     * in-memory file system is not preopened (fs is then unused). */
    const pr_dir *dirs;
    size_t ndirs;
    bool dirs_read_only; /* the dirs have no right that writes, creates, removes or renames */
    bool no_memory_root; /* do not preopen the in-memory "/" at all */
    uint64_t output_max; /* 0: the contract's 65,536 bytes; UINT64_MAX: no limit */
    bool raw_output;     /* on_output gets the raw bytes; the outcome keeps no text */
    /* Call this export instead of _start, with args, results into invoke_results. */
    const char *invoke;
    const pw_val *invoke_args;
    uint32_t invoke_nargs;
    pw_val *invoke_results;
    uint32_t invoke_nresults;
    /* ---- Ruby and cancellable runs ---- */
    const uint8_t *stdin_data; /* fd 0 reads these bytes, then EOF (unless stdin_connected) */
    size_t stdin_len;
    /* For a language runtime module (the Ruby ABI, docs/ruby.md): the script's source
     * text, run as file "main.rb". Ignored by plain WASI programs. */
    pr_str source;
    /* Optional: polled every few ms while the program runs; when it returns true the
     * run stops (pr_exec fails with 隔离运行失败：已取消, kind run_failed). */
    bool (*cancelled)(void *cancel_ud);
    void *cancel_ud;
    /* Optional per-run limits (pr_run_with): 0 keeps the host's; never above it. The
     * output cap is output_max above. */
    uint32_t cpu_ms, wall_ms;
    uint64_t memory_cap;
    /* Optional: the calling thread's CPU-clock memo (pr_cpu_memo), for a thread that
     * makes many short runs (serve's workers). */
    struct pr_cpu_memo *cpu_memo;
    /* Capability dispatch (Python's ABI): the handler (NULL: every call refused) and
     * the log every call is recorded in (may be NULL). */
    pr_cap_fn capability;
    void *cap_ud;
    pr_cap_log *cap_log;
    /* When a limit or a cancel stops the run (pr_exec fails with err->stop set), still
     * hand back what it wrote: out->stdout_text/stderr_text (out->stop = err->stop),
     * which the caller then clears. Off in the contract's room, whose failed run
     * returns nothing. */
    bool keep_output_on_stop;
} pr_exec_options;

/* A caller-owned, per-thread memo of one reading of that thread's CPU clock and the
 * monotonic clock just before it (zero-initialise; use it from one thread only). The
 * CPU limit needs the thread's CPU time at the start of each run, a system call; with
 * a memo, a run starting less than 1 ms (PR_CPU_MEMO_NS) after the memo's reading
 * takes instead memo.cpu + the wall time since: an upper bound (a thread never spends
 * more CPU than wall time passes), so the run's CPU is never over-counted and the
 * limit fires at most 1 ms later than with a reading of its own. */
typedef struct pr_cpu_memo {
    bool valid;
#ifndef __wasi__
    pthread_t thread;
#endif
    struct timespec wall, cpu;
} pr_cpu_memo;

typedef struct pr_outcome {
    bool ok;
    int64_t exit_code;               /* the result's exitCode (a JSON number: exact up to 2^53) */
    char *stdout_text, *stderr_text; /* decoded per write; NUL-terminated; owned */
    size_t stdout_len, stderr_len;
    char *error;  /* NULL, or why the program failed (owned) */
    bool trapped; /* the program trapped (or threw an uncaught exception) */
    pr_stop stop; /* PR_STOP_OUTPUT when the output limit ended it, else PR_STOP_NONE */
} pr_outcome;

/* Runs p once in a fresh instance over opt->fs. Program failures are outcomes (returns
 * true); platform failures (CPU limit, link error, memory cap) return false with err. */
bool pr_exec(pr_host *h, pr_program *p, const pr_exec_options *opt, pr_outcome *out, pr_error *err);
void pr_outcome_clear(pr_outcome *o);

/* ---------------------------------------------------------------- Ruby and Python */

/* Scripts of an interpreter built for WebAssembly, run as room programs: Ruby
 * (docs/ruby.md: @ruby/3.4-wasm-wasi's dist/ruby+stdlib.wasm, fetched by
 * scripts/deps.sh) and Python (docs/python.md: CPython 3.11 built for WASI by
 * scripts/python-wasi.sh, python.wasm and its standard library lib/python3.11 in
 * ~/.cache/peri/python/3.11.2/). One handle type serves both: pr_ruby_new and
 * pr_python_new say which language and where its build is, pr_guest_run runs a script.
 * The module is read and compiled on the first run (then cached in the host's isolate
 * cache, with the startup snapshot that makes later runs start fast). */
typedef struct pr_guest pr_guest;
typedef pr_guest pr_ruby;
typedef pr_guest pr_python;

/* Python's standard library is a host directory preopened read-only at this guest
 * path as the run's only host directory. */
#define PR_PYTHON_STDLIB_GUEST "/usr/local/lib/python3.11"

/* The path (Ruby: the module file; Python: the build's directory) is copied; nothing
 * is read yet. NULL when out of memory. Free with pr_guest_free (after every run on
 * it has returned). h must outlive it. */
pr_ruby *pr_ruby_new(pr_host *h, const char *wasm_path);
pr_python *pr_python_new(pr_host *h, const char *dir);
void pr_guest_free(pr_guest *g); /* NULL is fine */
void pr_ruby_free(pr_ruby *rb);  /* pr_guest_free */
void pr_python_free(pr_python *py);

/* Whether m is the room's CPython build (it exports the peri_py_* entry points). */
bool pr_python_module(const pw_module *m);

/* A script for an interpreter guest: one job type for both languages. */
typedef struct pr_guest_job {
    pr_str source;       /* the script, run as main.rb / main.py */
    const pr_str *paths; /* room files (e.g. "/请求/in.txt") and their contents */
    const pr_str *contents;
    size_t nfiles;
    pr_str stdin_data;
    bool (*cancelled)(void *cancel_ud); /* as in pr_exec_options; may be NULL */
    void *cancel_ud;
    pr_limits limits; /* optional tighter limits, as pr_run_with (0 fields: the host's);
                         out->stop / err->stop say which one stopped the run */
    /* The run's capability grant, as in pr_exec_options: the handler (NULL: every
     * dispatch refused) and the log every dispatch is recorded in (may be NULL). */
    pr_cap_fn capability;
    void *cap_ud;
    pr_cap_log *cap_log;
} pr_guest_job;
typedef pr_guest_job pr_ruby_job;
typedef pr_guest_job pr_python_job;

/* Runs the script once in a fresh room. On success out->output is the room's result
 * JSON ({"ok","stdout","stderr","exitCode"[,"error"],"files"}, as pr_run returns) and
 * out->isolate "ruby:<digest>" or "python:<digest>". false + err when the language is
 * unavailable (its build is missing: the message names the path and scripts/deps.sh),
 * on a platform failure (CPU limit, cancel, memory) or bad input. When a limit or a
 * cancel stopped the script (false, err->stop set), out->output may still hold such a
 * result (ok false, exitCode 1) with what it had written to stdout, stderr and the
 * returned files until then, so the caller can show it; clear out either way.
 * Thread-safe. */
bool pr_guest_run(pr_guest *g, const pr_guest_job *job, pr_response *out, pr_error *err);

/* ---------------------------------------------------------------- serve */

/* Newline-delimited JSON-RPC 2.0 on in_fd/out_fd with `workers` threads (>= 1).
 * Returns 0 at end of input, -1 on an I/O error. */
int pr_serve(pr_host *h, int in_fd, int out_fd, unsigned workers);

#ifdef __cplusplus
}
#endif
#endif
