/*
 * decide.c — L1 placement (analyser "static-v1") and the decision record v1.
 *
 * L1 looks for a native reason in the research order: native state → model-risk
 * signal → declared requirements → program not analysable → no qualified WASM runtime;
 * otherwise the room. Availability then applies: a native reason with native
 * unavailable gives status "unavailable" (reason native_unavailable), never a silent
 * run without the sandbox; no native reason but no WASM runtime for the program kind
 * gives native (wasm_runtime_unavailable) when native is available.
 *
 * The record's identity is "sha256:" + hex SHA-256 of its canonical JSON without the
 * identity field: compact, fields in the order of docs/placement.md, empty optional
 * fields omitted.
 */
#include "place_int.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

const char *pl_backend_name(pl_backend b) {
    switch (b) {
    case PL_BACKEND_WASM_ROOM: return "wasm_room";
    case PL_BACKEND_NATIVE_SANDBOX: return "native_sandbox";
    default: return "";
    }
}

const char *pl_reason_name(pl_reason r) {
    switch (r) {
    case PL_REASON_QUALIFIED_RUNTIME: return "qualified_wasm_runtime";
    case PL_REASON_NATIVE_STATE: return "native_state_dependency";
    case PL_REASON_MODEL_RISK: return "model_risk_signal";
    case PL_REASON_REQUIRED_FEATURE: return "required_native_feature";
    case PL_REASON_SOURCE_INDETERMINATE: return "source_indeterminate";
    case PL_REASON_NO_QUALIFIED_RUNTIME: return "no_qualified_wasm_runtime";
    case PL_REASON_WASM_UNAVAILABLE: return "wasm_runtime_unavailable";
    case PL_REASON_NATIVE_UNAVAILABLE: return "native_unavailable";
    case PL_REASON_PROMOTION: return "l2_not_started_promotion";
    }
    return "";
}

/* ---------------------------------------------------------------- the record */

static pj_t *record(const pl_decision *d) {
    pj_t *o = pj_object();
    if (!o) return NULL;
    bool ok = !pj_object_set_new(o, "schema_version", pj_string(PL_DECISION_SCHEMA)) &&
              !pj_object_set_new(o, "status", pj_string(d->selected ? "selected" : "unavailable"));
    if (ok && d->backend)
        ok = !pj_object_set_new(o, "backend", pj_string(pl_backend_name(d->backend)));
    ok = ok && !pj_object_set_new(o, "reason", pj_string(pl_reason_name(d->reason))) &&
         !pj_object_set_new(o, "analyzer_version", pj_string(PL_ANALYZER_VERSION)) &&
         !pj_object_set_new(o, "request_sha256", pj_string(d->request_sha256));
    if (ok && d->runtime_profile[0])
        ok = !pj_object_set_new(o, "runtime_profile", pj_string(d->runtime_profile)) &&
             !pj_object_set_new(o, "runtime_sha256", pj_string(d->runtime_sha256));
    ok = ok && !pj_object_set_new(o, "state_class", pj_string(pl__state_name(d->state_class)));
    if (ok && d->parent_decision_id[0])
        ok = !pj_object_set_new(o, "parent_decision_id", pj_string(d->parent_decision_id));
    if (ok && d->unsandboxed) ok = !pj_object_set_new(o, "unsandboxed", pj_true());
    if (!ok) {
        pj_decref(o);
        return NULL;
    }
    return o;
}

void pl_decision_seal(pl_decision *d) {
    pj_t *o = record(d);
    size_t n = 0;
    char *s = pl__json_dump(o, &n);
    pj_decref(o);
    if (!s) {
        d->identity[0] = 0;
        return;
    }
    pl__sha256_tag(s, n, d->identity);
    free(s);
}

char *pl_decision_json(const pl_decision *d, size_t *len) {
    pj_t *o = record(d);
    if (!o) return NULL;
    char *s = NULL;
    if (!pj_object_set_new(o, "identity", pj_string(d->identity))) s = pl__json_dump(o, len);
    pj_decref(o);
    return s;
}

/* ---------------------------------------------------------------- static analysis */

bool pl__read_file(const char *path, size_t max, uint8_t **out, size_t *len) {
    *out = NULL;
    *len = 0;
    /* O_NONBLOCK: a FIFO or a device in the workspace must never block the host in
     * open(); anything but a regular file is refused below */
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
    if (fd < 0) return false;
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || (uint64_t)st.st_size > max) {
        close(fd);
        return false;
    }
    size_t n = (size_t)st.st_size;
    uint8_t *b = malloc(n ? n : 1);
    size_t got = 0;
    while (b && got < n) {
        ssize_t k = read(fd, b + got, n - got);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) break;
        got += (size_t)k;
    }
    close(fd);
    if (!b || got != n) {
        free(b);
        return false;
    }
    *out = b;
    *len = n;
    return true;
}

static bool leb_u32(const uint8_t *b, size_t n, size_t *i, uint32_t *v) {
    uint64_t x = 0;
    for (int sh = 0; sh < 35; sh += 7) {
        if (*i >= n) return false;
        uint8_t c = b[(*i)++];
        x |= (uint64_t)(c & 0x7f) << sh;
        if (!(c & 0x80)) {
            if (x > UINT32_MAX) return false;
            *v = (uint32_t)x;
            return true;
        }
    }
    return false;
}

/* Import module namespaces the room links: WASI preview 1 and the 豫言 ABI. */
static bool qualified_module(const uint8_t *s, uint32_t n) {
    static const char *const mods[] = {"wasi_snapshot_preview1", "标准库", "构建基础"};
    for (size_t i = 0; i < 3; i++)
        if (strlen(mods[i]) == n && memcmp(mods[i], s, n) == 0) return true;
    return n > 6 && memcmp(s, "yuyan:", 6) == 0;
}

static bool skip_leb(const uint8_t *b, size_t n, size_t *i) {
    for (int k = 0; k < 10; k++) {
        if (*i >= n) return false;
        if (!(b[(*i)++] & 0x80)) return true;
    }
    return false;
}

/* A value or reference type: one byte, or (ref null? heaptype) with a LEB heap type. */
static bool skip_type(const uint8_t *b, size_t n, size_t *i) {
    if (*i >= n) return false;
    uint8_t t = b[(*i)++];
    return (t == 0x63 || t == 0x64) ? skip_leb(b, n, i) : true;
}

static bool skip_limits(const uint8_t *b, size_t n, size_t *i) {
    if (*i >= n) return false;
    uint8_t fl = b[(*i)++];
    return skip_leb(b, n, i) && (!(fl & 1) || skip_leb(b, n, i));
}

/* Skips one import descriptor's type part. */
static bool skip_desc(const uint8_t *b, size_t n, size_t *i) {
    if (*i >= n) return false;
    switch (b[(*i)++]) {
    case 0: return skip_leb(b, n, i);                            /* func */
    case 1: return skip_type(b, n, i) && skip_limits(b, n, i);   /* table */
    case 2: return skip_limits(b, n, i);                         /* memory */
    case 3: return skip_type(b, n, i) && *i < n && (++*i, true); /* global */
    case 4: return *i < n && (++*i, true) && skip_leb(b, n, i);  /* tag */
    default: return false;
    }
}

int pl__wasm_scan_imports(const uint8_t *b, size_t n) {
    if (n < 8 || memcmp(b, "\0asm\1\0\0\0", 8) != 0) return -1;
    size_t i = 8;
    while (i < n) {
        uint8_t id = b[i++];
        uint32_t size;
        if (!leb_u32(b, n, &i, &size) || size > n - i) return -1;
        size_t end = i + size;
        if (id == 2) {
            uint32_t count;
            if (!leb_u32(b, end, &i, &count)) return -1;
            int verdict = 1;
            for (uint32_t k = 0; k < count; k++) {
                uint32_t ml, fl;
                if (!leb_u32(b, end, &i, &ml) || ml > end - i) return -1;
                const uint8_t *mod = b + i;
                i += ml;
                if (!leb_u32(b, end, &i, &fl) || fl > end - i) return -1;
                i += fl;
                if (!skip_desc(b, end, &i)) return -1;
                if (!qualified_module(mod, ml)) verdict = 0;
            }
            return i == end ? verdict : -1;
        }
        i = end;
    }
    return 1; /* no import section */
}

/* ---------------------------------------------------------------- L1 */

static void runtime_identity(pl_decision *d) {
    snprintf(d->runtime_profile, sizeof d->runtime_profile, "%s", PL_RUNTIME_PROFILE);
    char buf[256];
    int n = snprintf(buf, sizeof buf, "%s\n%s\n", PL_RUNTIME_PROFILE, pr_host_resource_version());
    pl__sha256_tag(buf, (size_t)n, d->runtime_sha256);
}

/* 0: no native reason; else the reason. *wasm_missing: the room has no runtime for the
 * program kind. */
static pl_reason native_reason(pl_ctx *pc, const pl_request *r, bool *wasm_missing) {
    *wasm_missing = false;
    if (r->state_class != PL_STATE_PORTABLE_VALUE) return PL_REASON_NATIVE_STATE;
    if (r->model_risk) return PL_REASON_MODEL_RISK;
    if (r->requirements) return PL_REASON_REQUIRED_FEATURE;
    switch (r->kind) {
    case PL_PROGRAM_WASM: {
        uint8_t *b;
        size_t n;
        struct stat st;
        if (stat(r->program, &st) == 0 && S_ISREG(st.st_mode) &&
            (uint64_t)st.st_size > PL_ROOM_MODULE_MAX)
            return PL_REASON_NO_QUALIFIED_RUNTIME; /* over the room's program bound */
        if (!pl__read_file(r->program, PL_ROOM_MODULE_MAX, &b, &n))
            return PL_REASON_SOURCE_INDETERMINATE;
        int v = pl__wasm_scan_imports(b, n);
        free(b);
        if (v < 0) return PL_REASON_SOURCE_INDETERMINATE;
        if (v == 0) return PL_REASON_NO_QUALIFIED_RUNTIME;
        return 0;
    }
    case PL_PROGRAM_SHELL: return PL_REASON_NO_QUALIFIED_RUNTIME; /* no shell in the room */
    case PL_PROGRAM_RUBY:
        if (!pc->ruby_hook || !pc->ruby_hook->run) *wasm_missing = true;
        return 0;
    case PL_PROGRAM_PYTHON: /* the imports name what the room lacks (pyscan.c) */
        if (pl_python_requirements(r->program, strlen(r->program), NULL, 0))
            return PL_REASON_REQUIRED_FEATURE;
        if (!pc->python_hook || !pc->python_hook->run) *wasm_missing = true;
        return 0;
    }
    return PL_REASON_SOURCE_INDETERMINATE;
}

bool pl__decide_l1(pl_ctx *pc, const pl_request *r, const pl_policy *pol, const char *raw,
                   size_t raw_len, pl_decision *out, pl_reason *native_why, pl_error *err) {
    pl_policy none = {0};
    if (!pol) pol = &none;
    memset(out, 0, sizeof *out);
    pl__sha256_tag(raw, raw_len, out->request_sha256);
    out->state_class = r->state_class;
    bool wasm_missing;
    pl_reason why = native_reason(pc, r, &wasm_missing);
    if (native_why)
        *native_why = why            ? why
                      : wasm_missing ? PL_REASON_WASM_UNAVAILABLE
                                     : PL_REASON_QUALIFIED_RUNTIME;
    /* Native availability is probed only when native could be chosen (the probe is a
     * real sandbox run, once per context). */
    bool sandbox_ok = false, native_ok = false;
    if ((why || wasm_missing || pol->native == PL_NATIVE_YES) && pol->native != PL_NATIVE_NO) {
        char msg[256];
        sandbox_ok = pl_native_available(pc, msg, sizeof msg);
        if (!sandbox_ok && pol->native == PL_NATIVE_YES && !pol->native_unsandboxed)
            return pl__fail(err, PL_ERR_NATIVE, "native required but unavailable: %s", msg);
        native_ok = sandbox_ok || pol->native_unsandboxed;
    }
    if (!why && !wasm_missing) {
        out->selected = true;
        out->backend = PL_BACKEND_WASM_ROOM;
        out->reason = PL_REASON_QUALIFIED_RUNTIME;
        runtime_identity(out);
    } else if (native_ok) {
        out->selected = true;
        out->backend = PL_BACKEND_NATIVE_SANDBOX;
        out->reason = why ? why : PL_REASON_WASM_UNAVAILABLE;
        out->unsandboxed = !sandbox_ok;
    } else {
        out->selected = false;
        out->backend = PL_BACKEND_NONE;
        out->reason = PL_REASON_NATIVE_UNAVAILABLE;
    }
    pl_decision_seal(out);
    return true;
}

bool pl_decide(pl_ctx *pc, const pl_request *r, const pl_policy *pol, pl_decision *out,
               pl_error *err) {
    if (!pc) return pl__fail(err, PL_ERR_HOST, "no placement context");
    if (!pl_request_validate(r, err)) return false;
    size_t n;
    char *owned;
    const char *raw = pl__request_raw(r, &n, &owned);
    if (!raw) return pl__fail(err, PL_ERR_HOST, "out of memory");
    bool ok = pl__decide_l1(pc, r, pol, raw, n, out, NULL, err);
    free(owned);
    return ok;
}
