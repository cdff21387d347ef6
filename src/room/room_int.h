/*
 * room_int.h — internal interfaces between the files of the room (src/room/).
 * Each group below is owned by the file named in its comment.
 */
#ifndef PERI_ROOM_INT_H
#define PERI_ROOM_INT_H

#include "peri/room.h"
#include "peri/wasm.h"

#include "peri/base.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <time.h>

/* ---------------------------------------------------------------- buf.c */

/* The byte buffer is the base layer's pb_buf (peri/base.h). */

void pr__err_set(pr_error *err, pr_kind kind, const char *fmt, ...);

/* ---------------------------------------------------------------- utf8.c */

/* Appends bytes decoded like WHATWG TextDecoder("utf-8") (non-fatal, a leading BOM
 * removed, maximal ill-formed subparts → U+FFFD). */
bool pr__utf8_lenient(pb_buf *out, const uint8_t *in, size_t n);
/* Strict (fatal) decoding: true if valid UTF-8. */
bool pr__utf8_valid(const uint8_t *in, size_t n);
/* The number of bytes of s that keep at most max UTF-16 code units, cut at a code
 * point boundary (JS String.prototype.slice on whole characters). */
size_t pr__utf8_cut_utf16(const char *s, size_t n, size_t max_units);

/* ---------------------------------------------------------------- json_out.c */

/* Appends s as a JSON string exactly like JavaScript JSON.stringify (s is valid UTF-8). */
bool pr__json_str(pb_buf *b, const char *s, size_t n);
/* Writes `,"exitCode":N` into buf (>= 48 bytes): v as the reference's JavaScript
 * Number(v) prints: exact up to 2^53, beyond that the nearest double in JavaScript's
 * shortest round-trip digits (9223372036854775807 -> 9223372036854776000). */
void pr__json_exit_code(char *buf, size_t cap, int64_t v);

/* ---------------------------------------------------------------- base64.c */

/* JavaScript atob rules. Returns 0 ok (caller frees *out), -1 not valid Base64,
 * -2 decoded length outside 1..max (nothing allocated), -3 out of memory. */
int pr__base64_decode(const char *in, size_t n, size_t max, uint8_t **out, size_t *out_len);
/* Standard Base64 with padding, the inverse for well-formed text. Returns a malloc'd
 * NUL-terminated text (caller frees; length in *out_len) or NULL on OOM/overflow. Used
 * by tests and benchmarks to build requests; not on the request path. */
char *pr__base64_encode(const uint8_t *in, size_t n, size_t *out_len);

/* ---------------------------------------------------------------- SHA-256 (base) */

static inline bool pr__sha256(const void *data, size_t n, uint8_t digest[32]) {
    pb_sha256(data, n, digest);
    return true;
}
#define pr__hex pb_hex

/* ---------------------------------------------------------------- check.c */

#define PR_NAME_MAX         128u
#define PR_PROGRAM_TEXT_MAX 4194304u
#define PR_INPUT_MAX        1572864u
#define PR_PROGRAM_MAX      3145728u
#define PR_OUTPUT_MAX       65536u
#define PR_FILES_MAX        256u
#define PR_FILES_BYTES_MAX  1048576u
#define PR_FS_MAX           (128u << 20)

/* The output cap of one run: a per-run limit only ever lowers the room's own (0 = none). */
static inline size_t pr_output_cap(size_t per_run) {
    return per_run && per_run < PR_OUTPUT_MAX ? per_run : 0;
}

/* Applies a run's own limits (0 fields: the host's) to its exec options. */
static inline void pr__exec_limits(pr_exec_options *o, const pr_limits *l) {
    o->cpu_ms = l->cpu_ms;
    o->wall_ms = l->wall_ms;
    o->memory_cap = l->memory_cap;
    o->output_max = pr_output_cap(l->output_max);
}

/* Rules 1-5 of the reference order (runner, scope, digest, program length, input
 * size). false + err on the first broken rule. */
bool pr__check_shape(const pr_request *req, pr_error *err);
/* pr_run_cancellable with the calling thread's CPU-clock memo (or NULL; room.c). */
bool pr__run_memo(pr_host *h, const pr_request *req, bool (*cancelled)(void *), void *ud,
                  pr_cpu_memo *memo, pr_response *out, pr_error *err);
/* Rules 6-8: Base64, decoded length, SHA-256. On success *bytes (caller frees). */
bool pr__check_program(const pr_request *req, uint8_t **bytes, size_t *len, pr_error *err);

/* ---------------------------------------------------------------- input.c */

typedef struct pr_input {
    pr_str *args;
    size_t nargs;
    pr_str *paths, *texts; /* files, in JS Object.entries order (normalised later) */
    size_t nfiles;
    char *arena; /* owns every string above */
    size_t arena_len;
} pr_input;

/* Parses the input JSON like the reference child (JSON.parse + args/files checks).
 * false + err (隔离运行输入无效：<reason>) or out of memory (run_failed). */
bool pr__input_parse(const char *text, size_t n, pr_input *in, pr_error *err);
void pr__input_free(pr_input *in);

/* Generic JSON scanning (the same strict parser), used by serve.c. */
typedef struct pr_json_keys {
    const char *const *names;
    size_t n;
    size_t *at; /* per name: offset of the member's value + 1 (last wins), 0 = absent */
    /* Optional (pr__json_scan): the members of the object value of names[sub_of] are
     * recorded in *sub too (from the last such member; all 0 if it is not an object). */
    struct pr_json_keys *sub;
    size_t sub_of;
    /* Optional (pr__json_scan): called at every string of the text, at = offset of its
     * first content byte. A nonzero return L promises that s[at..at+L) is a string's
     * whole raw content, ends at a '"' (s[at+L]) and holds no '\\', no control and no
     * non-ASCII byte; the scanner then skips those bytes unread. 0: scan as usual. */
    size_t (*known)(void *ud, const char *s, size_t n, size_t at);
    void *known_ud;
} pr_json_keys;
/* Validates s as one JSON value (whitespace around allowed); when it is an object,
 * records where its named members' values start. */
bool pr__json_scan(const char *s, size_t n, pr_json_keys *keys);
/* The end offset of the (already validated) value at offset at. */
size_t pr__json_value_end(const char *s, size_t n, size_t at);
/* The decoded string value at at, malloc'd and NUL-terminated; NULL if not a string. */
char *pr__json_string_dup(const char *s, size_t n, size_t at, size_t *len);

/* Normalises a path: split on '/', drop empty and '.', '..' pops, leading '/'.
 * Writes at most n+2 bytes (with the NUL) into out; returns the length. */
size_t pr__path_normalize(const char *in, size_t n, char *out);

/* ---------------------------------------------------------------- fs.c */

/* A node holds what a name points at: contents and times. Names (pr_file) that are
 * hard links share one node; a node's bytes count once in the budget. A node lives
 * while a name or an open WASI descriptor holds it: the last unlink of a node still
 * open keeps its bytes counted until its last close (pr__fs_node_close). Symbolic links
 * (beyond the contract only) are nodes of kind PR_NODE_LINK whose data is the target.
 * Contract runs never make links: every node has exactly one name there. */
enum { PR_NODE_FILE = 0, PR_NODE_LINK = 1 };

typedef struct pr_node {
    uint8_t *data;
    size_t len, cap;
    uint64_t mtime;  /* logical: the FS clock after the write */
    uint64_t atime;  /* beyond the contract only: a stored atime (own_atime set) */
    uint64_t ino;    /* contract: FNV-1a of the node's path (follows renames) */
    uint64_t serial; /* beyond the contract: the node's inode number (1, 2, ...) */
    uint32_t nopen;  /* open WASI descriptors */
    uint32_t nlink;  /* names (live pr_file entries) pointing here */
    uint8_t kind;    /* PR_NODE_FILE / PR_NODE_LINK */
    bool own_atime;  /* atime set through WASI (never in contract runs); else atime = mtime */
} pr_node;

typedef struct pr_file {
    char *path;
    size_t path_len;
    pr_node *node; /* NULL for an explicit directory, and once removed */
    uint32_t hash;
    bool dir;  /* explicit directory (WASI path_create_directory) */
    bool dead; /* removed; kept for order until compaction */
} pr_file;

static inline bool pr_file_is_link(const pr_file *f) {
    return f->node && f->node->kind == PR_NODE_LINK;
}

struct pr_fs {
    pr_file **order; /* first-write order, may contain dead entries */
    size_t norder, cap_order, nlive;
    uint32_t *slots; /* open addressing: index+1 into order, 0 empty, UINT32_MAX tomb */
    size_t nslots;
    uint64_t clock;
    uint64_t serial; /* nodes made so far (their serial numbers) */
    size_t total;    /* bytes of node contents (≤ 128 MiB), each node once */
    size_t meta;     /* bytes of entries and nodes: structs + paths (≤ 128 MiB) */
    int create_err;  /* why pr__fs_create last returned NULL: -1 no memory, -2 full */
};

/* FNV-1a 64 of a path: the contract's inode numbers (wasi.c, fs.c). */
uint64_t pr__path_ino(const char *p, size_t n);
pr_file *pr__fs_find(const pr_fs *fs, const char *norm, size_t n);
/* Creates an empty file with a new node (or an explicit directory, no node) at
 * normalised path; NULL when out of memory or over the entries' budget
 * (fs->create_err -1 / -2). May free removed entries: do not keep pointers to removed
 * entries across it (nodes stay valid while a name or descriptor holds them). */
pr_file *pr__fs_create(pr_fs *fs, const char *norm, size_t n, bool dir);
/* A new name for an existing node (a hard link; rename): nlink + 1. NULL as above. */
pr_file *pr__fs_link(pr_fs *fs, const char *norm, size_t n, pr_node *node);
/* A new symbolic link at norm whose target is t[0..tn). NULL as above (-2 also when
 * the target does not fit the contents' budget). */
pr_file *pr__fs_symlink(pr_fs *fs, const char *norm, size_t n, const char *t, size_t tn);
/* Removes a name; its node goes with its last name unless a descriptor holds it. */
void pr__fs_remove(pr_fs *fs, pr_file *f);
/* Sets the node's length (zero-fills growth). 0 ok, -1 nomem, -2 over 128 MiB. */
int pr__fs_truncate(pr_fs *fs, pr_node *f, size_t len);
/* Writes at offset, growing the node. 0 / -1 / -2 as above. Bumps mtime. */
int pr__fs_pwrite(pr_fs *fs, pr_node *f, const void *data, size_t n, size_t off);
void pr__fs_touch(pr_fs *fs, pr_node *f);
/* A WASI descriptor opens / closes a node. The last close of a node without names
 * frees it and gives its bytes back to fs's budget (fs NULL: the run is over, nothing
 * to account). */
void pr__fs_node_open(pr_node *f);
void pr__fs_node_close(pr_fs *fs, pr_node *f);
/* True if norm is an implicit (some file under it) or explicit directory; "/" always. */
bool pr__fs_is_dir(const pr_fs *fs, const char *norm, size_t n);
/* Direct children of a directory in first-write order, unique; calls fn per name.
 * Returns false if fn returned false or memory ran out. */
typedef bool (*pr_fs_child_fn)(void *ud, const char *name, size_t n, bool is_dir);
bool pr__fs_children(const pr_fs *fs, const char *norm, size_t n, pr_fs_child_fn fn, void *ud);

/* ---------------------------------------------------------------- cache.c */

typedef struct pr_abi pr_abi;

struct pr_program {
    atomic_uint refs;
    pw_module *module;
    const pr_abi *abi;
    size_t bytes; /* the cost charged to the cache */
    char *key;    /* "scope:digest" + '\0' + resource version */
    size_t key_len;
    /* The Base64 text this program was verified from (decoded, SHA-256 checked);
     * immutable once cached. A later call with the identical text can skip decoding
     * and hashing: both are pure functions of the text. NULL when unknown. */
    char *text;
    size_t text_len;
    /* Set by pr__cache_put: the text is "JSON-plain" (only bytes 0x20..0x7E other than
     * '"' and '\\', so a JSON string with exactly these raw bytes has exactly this
     * value) and its sample hash (pr__cache_text_sample). Only plain texts are in the
     * cache's text index. */
    bool text_plain;
    uint64_t text_sample;
    struct pr_program *lru_prev, *lru_next, *hnext, *tnext;
    bool in_cache;
    /* The state after a language runtime's initialisation (ruby.c), taken by the
     * first run and used by every later one; NULL until then. Guarded by snap_mu. */
    pthread_mutex_t snap_mu;
    pw_snapshot *snap;
    bool snap_file_tried;    /* the code cache was asked for a saved one */
    uint8_t snap_inputs[32]; /* digest of the boot inputs snap was taken with (run.c) */
};

typedef struct pr_cache {
    pthread_mutex_t mu;
    pr_program **buckets;
    pr_program **tbuckets;           /* the text index: plain texts by (length, sample hash) */
    size_t nbuckets;                 /* of both tables */
    pr_program *lru_head, *lru_tail; /* head = most recent */
    size_t limit;
    pr_cache_stats st;
} pr_cache;

bool pr__cache_init(pr_cache *c, size_t limit);
void pr__cache_destroy(pr_cache *c);
/* A new reference to the cached program for key, or NULL. */
pr_program *pr__cache_get(pr_cache *c, const char *key, size_t key_len);
/* Inserts p (taking one reference for the cache) unless key is present: returns the
 * program to use (p, or the one already cached, with a reference for the caller). */
pr_program *pr__cache_put(pr_cache *c, pr_program *p);
void pr__program_free_(pr_program *p);
/* Charges p extra bytes (a snapshot made after it was cached), evicting others. */
void pr__cache_charge(pr_cache *c, pr_program *p, size_t extra);
/* A cheap hash of a text's length and eight 8-byte windows spread over it (the whole
 * text when shorter than 64 bytes): the key of the text index. */
uint64_t pr__cache_text_sample(const char *s, size_t n);
/* The text index: a new reference to a cached program whose plain text is byte for
 * byte s[0..n), or NULL. Compares the whole text (memcmp) outside the lock; counts a
 * hit in stats.line_hits. */
pr_program *pr__cache_find_text(pr_cache *c, const char *s, size_t n);
/* A request line holds p's text, compared byte for byte by the caller (serve's reading
 * thread): true, counting a hit in stats.line_hits and line_hint_hits, while p is still
 * cached (an evicted program is no longer found by its text). */
bool pr__cache_claim_text(pr_cache *c, const pr_program *p);
/* Counts one contract call that skipped Base64 decoding and SHA-256 (stats.text_hits). */
void pr__cache_count_text_hit(pr_cache *c);

/* ---------------------------------------------------------------- watchdog.c */

typedef struct pr_watch_slot {
    struct pr_watch_slot *next, *prev;
    pw_store *store;
    clockid_t cpu_clock;
    struct timespec cpu_start, wall_start;
    int fired;                   /* 0, PR_FIRED_CPU or PR_FIRED_WALL: set by the watchdog thread */
    uint32_t extra_ms;           /* added to both limits (a runtime's one-time initialisation) */
    uint32_t cpu_ms, wall_ms;    /* this run's limits (0: the watchdog's); set before begin */
    bool (*cancelled)(void *ud); /* polled by the watchdog; true stops the run */
    void *cancel_ud;
    pr_cpu_memo *cpu_memo; /* or NULL: cpu_start is then always read */
} pr_watch_slot;

/* How old a pr_cpu_memo reading may be to stand for a run's CPU start. */
#define PR_CPU_MEMO_NS 1000000

enum { PR_FIRED_CPU = 1, PR_FIRED_WALL = 2, PR_FIRED_CANCEL = 3 };

typedef struct pr_watchdog {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    pthread_t thread;
    bool started, stop;
    pr_watch_slot *active;
    uint32_t cpu_ms, wall_ms;
} pr_watchdog;

bool pr__watchdog_init(pr_watchdog *w, uint32_t cpu_ms, uint32_t wall_ms);
void pr__watchdog_destroy(pr_watchdog *w);
/* Starts watching the calling thread's CPU clock for store s (slot->cancelled,
 * cancel_ud and cpu_memo are kept as the caller set them). */
bool pr__watch_begin(pr_watchdog *w, pr_watch_slot *slot, pw_store *s);
/* A one-time initialisation (ruby.c) gets extra_ms more CPU and wall time; the
 * program itself then starts from zero with pr__watch_restart (limits as usual). */
void pr__watch_grant(pr_watchdog *w, pr_watch_slot *slot, uint32_t extra_ms);
void pr__watch_restart(pr_watchdog *w, pr_watch_slot *slot);
/* Stops watching; returns slot->fired. */
int pr__watch_end(pr_watchdog *w, pr_watch_slot *slot);

/* ---------------------------------------------------------------- run.c / abi */

/* Per-run state every guest ABI shares; lives on the run's stack. A host function
 * ends the run by setting `end` and returning pw_ctx_trap(cx, ...):
 *   PR_END_EXIT      exit_code set: ok = (exit_code == 0), no error (proc_exit, 退出进程)
 *   PR_END_OUTPUT    set by pr__run_output when a write would pass 65,536 bytes
 *   PR_END_HOST      end_msg is the result's error text (ok false, exitCode 1)
 *   PR_END_PLATFORM  end_msg is the whole exception message (隔离运行失败：…)
 * Anything else that stops the run is mapped by run.c (traps → V8 wording). */
/* One run's capability dispatch state: the reply of the last call, until the guest takes
 * it (capability.c). */
typedef struct pr__cap {
    struct pr_run_state *rs;
    pb_buf reply;
} pr__cap;

typedef struct pr_run_state {
    pr_host *host;
    pr_program *prog;
    const pr_exec_options *opt;
    pw_store *store;
    pw_instance *inst;
    pr_fs *fs;
    pb_buf out, err;  /* decoded stdout / stderr text */
    size_t out_bytes; /* raw stdout+stderr bytes, counted before appending */
    /* How the run ended when a host function stopped it. */
    enum { PR_END_NONE, PR_END_EXIT, PR_END_OUTPUT, PR_END_HOST, PR_END_PLATFORM } end;
    int64_t exit_code;  /* 退出进程 takes an i64; WASI's proc_exit an i32 */
    char end_msg[1024]; /* PR_END_HOST: the run's error text; PR_END_PLATFORM: the exception */
    uint64_t rng[4];    /* deterministic xoshiro state */
    uint64_t det_clock;
    uint64_t wall_deadline_ns; /* CLOCK_MONOTONIC time at which the wall limit is reached */
    void *abi_state;
    void *lang_state; /* a language ABI's own state on top of WASI (ruby.c) */
    /* The run's capability dispatch state (capability.c): the last reply. cap_files: the
     * dispatch's file face is on (ruby.c); otherwise its paths are ordinary files. */
    pr__cap cap;
    bool cap_files;
    pr_watch_slot *watch;     /* the run's watchdog slot */
    uint32_t cpu_ms, wall_ms; /* this run's limits: the host's, or lower (pr_run_with) */
    pr_stop stop;             /* PR_END_PLATFORM: the limit class of end_msg, if any */
    /* While an interpreter boots (pr__boot_instantiate .. pr__boot_done) its in-memory
     * tree looks empty (wasi.c): the boot's state becomes a startup snapshot that later
     * runs share, so no file a run was given may reach it. */
    bool boot_blind;
    /* The persisted snapshot's stamp taken before the boot (pr_boot_persist.stamp). */
    bool boot_stamped;
    uint8_t boot_stamp[32];
} pr_run_state;

struct pr_abi {
    const char *name;
    /* true if this ABI serves module m (chosen from its imports). */
    bool (*matches)(const pw_module *m);
    pw_resolve_fn resolve; /* ctx is the pr_run_state */
    /* Runs the entry points after instantiation; returns the pw_call status. */
    pw_status (*start)(pr_run_state *rs, pw_error *err);
    /* Releases the ABI's per-run state (may be NULL). Called before the store goes. */
    void (*finish)(pr_run_state *rs);
    /* The result's error text when a Wasm exception escapes the entry point (NULL:
     * "uncaught Wasm exception"). */
    const char *uncaught;
    /* Optional: makes the instance (NULL: pw_instantiate with resolve). */
    pw_instance *(*instantiate)(pr_run_state *rs, pw_error *err);
};

pr_program *pr__program_load_digest(pr_host *h, pr_str scope, const char hex[64],
                                    const uint8_t *bytes, size_t len, pr_str text, pr_error *err);
/* The cache key of (scope, digest): "scope:digest" NUL version. Returns its length;
 * buf must hold scope.len + 66 + strlen(version) bytes. */
size_t pr__program_key(pr_str scope, const char hex[64], char *buf);
size_t pr__program_key_max(pr_str scope);

extern const pr_abi pr__abi_wasi;
extern const pr_abi pr__abi_ruby;   /* ruby.c: Ruby's reactor build (@ruby/3.4-wasm-wasi) */
extern const pr_abi pr__abi_python; /* python.c: CPython's reactor build (python-wasi.sh) */
/* wasi.c, for ABIs built on WASI: its import resolver, per-run cleanup, and whether
 * only the initial descriptors (0-3, untouched stdin) are open. */
bool pr__wasi_resolve(void *ctx, pw_store *s, const pw_module *m, const pw_import_desc *imp,
                      pw_extern *out);
void pr__wasi_finish(pr_run_state *rs);
bool pr__wasi_only_std_fds(const pr_run_state *rs);
/* The same with the run's host directories (pr_exec_options.dirs) preopened at 3..,
 * then the in-memory "/" (python.c). */
bool pr__wasi_only_initial_fds(const pr_run_state *rs);
/* How an interpreter guest's startup snapshot outlives the process: saved in the
 * module's code cache (pw_snapshot_save_cached) under a tag of the ABI, the run's argv,
 * environment and seed and, when stamp is set, a digest of what else the boot reads
 * (python.c: its standard library's tree, taken before the boot and again after it; a
 * change in between means no file is saved; no stamp means none is used or saved). */
typedef struct pr_boot_persist {
    bool (*stamp)(const pr_run_state *rs, uint8_t out[32]);
} pr_boot_persist;
/* The end of an interpreter guest's one-time boot (ruby.c, python.c): when snapshot_ok
 * (the WASI state is the initial one) and nothing was written, the instance is
 * snapshotted into the program's cache entry (the first such run wins; runs with
 * another argv or environment do not use it) and, with persist, saved for later
 * processes; then the run's limits restart for the script (CPU, wall deadline). */
void pr__boot_done(pr_run_state *rs, bool snapshot_ok, const pr_boot_persist *persist);
/* An interpreter guest's instance: from the program's startup snapshot when there is
 * one for this run's inputs and snapshot_ok (then *from_snapshot: the boot is
 * skipped), else fresh, and the boot that follows sees an empty in-memory tree until
 * pr__boot_done. With persist, when the program has no snapshot yet, the code cache is
 * asked once for one an earlier process saved with the same tag. */
pw_instance *pr__boot_instantiate(pr_run_state *rs, pw_resolve_fn resolve, bool snapshot_ok,
                                  const pr_boot_persist *persist, bool *from_snapshot,
                                  pw_error *err);
/* treestamp.c: a digest of the metadata of the tree below the open directory dirfd
 * (names, types, modes, sizes, inodes, modification and status-change times), in a
 * fixed order; false when it cannot be read whole or passes the bounds (depth 32,
 * 100,000 entries). */
bool pr__tree_stamp(int dirfd, uint8_t out[32]);
extern const pr_abi pr__abi_yuyan; /* yuyan.c: the 豫言 file-style ABI */

/* Output from the guest: counts raw bytes against the limit first; false when the
 * write would pass 65,536 bytes (rs->end set to PR_END_OUTPUT, nothing appended). */
bool pr__run_output(pr_run_state *rs, int stream, const uint8_t *data, size_t n);
/* The run's output budget in raw bytes: the contract's 65,536, or what `peri run`
 * set (pr_exec_options.output_max; UINT64_MAX: none). */
uint64_t pr__run_output_max(const pr_run_state *rs);
/* A fresh 64-bit random value (CSPRNG, or the deterministic generator). */
uint64_t pr__run_random(pr_run_state *rs);

/* ---------------------------------------------------------------- host.c */

#define PR_POOLS_MAX 16 /* idle pools kept: more than the runs a host runs at once */

struct pr_host {
    char **granted, **bound;
    size_t ngranted, nbound;
    uint32_t cpu_ms, wall_ms;
    uint64_t memory_cap;
    bool deterministic;
    bool beyond_contract; /* peri run: caller's limits; memory.grow fails softly */
    int engine;           /* pw_store_config.engine for every run */
    int bounds_checks;    /* pw_store_config.bounds_checks for every run */
    char *code_cache_dir; /* owned; NULL: no code cache */
    uint64_t code_cache_bytes;
    pr_cache cache;
    pr_watchdog wd;
    /* Mapping pools (pw_pool) of idle runs: a run takes one and puts it back, so each
     * concurrent run has its own and a steady state maps nothing (host.c). */
    pthread_mutex_t pool_mu;
    pw_pool *pools[PR_POOLS_MAX];
    size_t npools;
};

/* A mapping pool for one run, put back after its store is freed. NULL (out of
 * memory) is fine: the run then maps afresh. */
pw_pool *pr__host_pool_take(pr_host *h);
void pr__host_pool_put(pr_host *h, pw_pool *p);

bool pr__host_granted(const pr_host *h, pr_str runner);
bool pr__host_bound(const pr_host *h, pr_str runner);

/* ---------------------------------------------------------------- result.c */

/* Collects /数据/ and /响应/ files and writes the return JSON into out. false + err
 * (interface) on the limits / strict UTF-8. */
bool pr__result_json(const pr_outcome *o, const pr_fs *fs, pb_buf *out, pr_error *err);
/* The run's response: the return JSON (pr__result_json) in out->output, isolate copied
 * (cut to fit), the outcome's stop. false + err as pr__result_json, or out of memory. */
bool pr__respond(const pr_outcome *o, const pr_fs *fs, const char *isolate, pr_response *out,
                 pr_error *err);

/* ---------------------------------------------------------------- wasi_sig.c */

/* The exact type of wasi_snapshot_preview1 function name; false if it has none. */
bool pr__wasi_functype(const char *name, pw_functype *out);

#endif
