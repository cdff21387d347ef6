/*
 * place_int.h — internals of the placement layer (src/place/), shared by its files
 * only. Owns: the context (pl_ctx), the cancel handle, small helpers (errors,
 * SHA-256, JSON), and the interfaces between the orchestrator (run.c), the L1 analyser
 * (decide.c), the room backend (room_backend.c) and the native sandbox (sandbox*.c).
 */
#ifndef PERI_PLACE_INT_H
#define PERI_PLACE_INT_H

#include "peri/place.h"

#include "peri/json.h"
#include <pthread.h>
#include <stdatomic.h>

#define PL_ANALYZER_VERSION "static-v1"
#define PL_DECISION_SCHEMA  "peri.placement-decision.v1"
#define PL_RUNTIME_PROFILE  "room-wasi-p1-yuyan-v1"
#define PL_ROOM_MODULE_MAX  3145728u /* the contract's decoded program bound */

/* Defaults of pl_limits (0 fields). */
#define PL_DEF_CPU_MS       1000u
#define PL_DEF_WALL_MS      5000u
#define PL_DEF_MEMORY_MIB   256u
#define PL_DEF_OUTPUT_BYTES (1u << 20)
#define PL_DEF_PROCESSES    64u

struct pl_cancel {
    atomic_int flag;
    int efd; /* eventfd made readable by pl_cancel_trigger (-1 if none) */
};

struct pl_ctx {
    pr_host *room;
    bool own_room;
    char *bwrap, *scratch_root, *cgroup_root, *ruby, *pasta, *python;
    char **wasm_runner;
    size_t nwasm_runner;
    const pl_ruby_hook *ruby_hook;
    const pl_ruby_hook *python_hook;
    pthread_mutex_t mu; /* guards the probe, the seccomp cache and mask_refs below */
    int probe;          /* 0 not yet, 1 available, -1 unavailable */
    char probe_why[256];
    unsigned char *bpf[2]; /* exported seccomp programs: [0] network off, [1] on */
    size_t bpf_len[2];
    atomic_uint seq; /* execution ids, per-run uids and cgroup names */
    /* the control-file placeholders the context's runs hold (masks.c), under mu */
    struct pl_mask_ref *mask_refs;
    size_t nmask_refs, cap_mask_refs;
    char *mask_src; /* the directory the masks are taken from (masks.c) */
    /* <scratch root>/peri-masks-<pid>-XXXXXX: every placeholder this context made, so a
     * later context removes them when this process died before it could (masks.c) */
    char *mask_journal;
};

/* Errors */
bool pl__fail(pl_error *err, pl_code code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Lower-case hex of b[0..n) into out (2n + 1 bytes, NUL-terminated). */
void pl__hex(const unsigned char *b, size_t n, char *out);
/* "sha256:" + hex of SHA-256(data) into out[PL_DIGEST_LEN]. */
void pl__sha256_tag(const void *data, size_t len, char out[PL_DIGEST_LEN]);
bool pl__digest_well_formed(const char *s);

/* Effective limits (defaults filled in). */
pl_limits pl__limits_effective(const pl_limits *l);

/* The raw bytes a request's digest covers: r->raw or its canonical JSON. *owned is
 * set to a buffer the caller frees (NULL when r->raw is used). */
const char *pl__request_raw(const pl_request *r, size_t *len, char **owned);

/* Guest path check: absolute, UTF-8, no "..", no empty name, <= 4096 bytes. */
bool pl__guest_path_ok(const char *p);

/* L1 (decide.c). *native_why (may be NULL): why native was wanted (pl_report's
 * native_reason), also when native was unavailable. */
bool pl__decide_l1(pl_ctx *pc, const pl_request *r, const pl_policy *pol, const char *raw,
                   size_t raw_len, pl_decision *out, pl_reason *native_why, pl_error *err);
/* Static scan of a module's import section: 1 all imports qualified, 0 some import
 * outside the room profile, -1 not analysable (not a module / malformed). */
int pl__wasm_scan_imports(const uint8_t *b, size_t n);
bool pl__read_file(const char *path, size_t max, uint8_t **out, size_t *len);

/* Room backend (room_backend.c): admission (the only producer of the typed outcome),
 * then the run. Returns true when the attempt ran or was refused; *promotable is set
 * (with *outcome) when admission returned runtime_unsupported. */
typedef struct pl_attempt {
    pl_result *res;
    char **evidence; /* set to an owned JSON text */
    const pl_decision *dec;
    const char *execution_id;
    const pl_grant *grant; /* the room attempt's capability grant (NULL: none) */
} pl_attempt;
bool pl__room_attempt(pl_ctx *pc, const pl_request *r, const char *raw, size_t raw_len,
                      pl_cancel *cancel, pl_attempt *at, bool *promotable, pl_outcome *outcome,
                      pl_error *err);

/* The host-authored runtime_unsupported outcome (outcome.c). */
void pl__outcome_make(pl_outcome *o, uint32_t features, const char *raw, size_t raw_len);

/* Native backend (sandbox.c). */
bool pl__native_attempt(pl_ctx *pc, const pl_request *r, const pl_policy *pol, pl_cancel *cancel,
                        pl_attempt *at, pl_error *err);

/* L2 (run.c): whether a promotion may happen (why says why not), and the child. */
bool pl__promotion_allowed(const pl_decision *parent, bool typed, const pl_outcome *o,
                           const char *raw, size_t raw_len, bool native_ok, pl_error *why);
void pl__child_decision(const pl_decision *parent, bool unsandboxed, pl_decision *child);

/* Result helpers (result.c). */
void pl__result_init(pl_result *res);
void pl__result_clear(pl_result *res);
bool pl__result_fail(pl_result *res, const char *error);      /* ok=false, empty outputs */
bool pl__result_finish(pl_result *res, const pl_decision *d); /* builds res->json */
/* Strict UTF-8 check; lenient decode (invalid → U+FFFD) into an owned string. */
bool pl__utf8_valid(const char *s, size_t n);
char *pl__utf8_lenient(const char *s, size_t n, size_t *out_len);

/* The applied limits as {"cpu_ms","wall_ms","memory_mib","output_bytes"[,"processes"]}
 * and the capped bits as a sorted name array (new references, NULL on OOM). */
pj_t *pl__limits_json(const pl_limits *l, bool processes);
pj_t *pl__capped_json(unsigned capped);
/* The result's extra fields ("limits", "capped", "stopped_by") as JSON members
 * without braces ("" when none), to append to the room's own result text. Owned. */
char *pl__result_extra_text(const pl_result *res, size_t *len);

/* "portable_value", ... */
const char *pl__state_name(pl_state_class s);
/* Strict JSON load (duplicate keys and trailing data rejected); NULL with *err. */
pj_t *pl__json_strict(const char *text, size_t len, const char *what, pl_code code, pl_error *err);

/* JSON emission with a fixed field order (pj_dumps, compact, insertion order). */
char *pl__json_dump(pj_t *j, size_t *len);

#endif
