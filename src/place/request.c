/*
 * request.c — run requests and policies: the strict JSON decoder (unknown fields,
 * duplicate keys, trailing data and wrong types are errors naming the field), the
 * validator shared with C-built requests, and the canonical serialisation whose bytes
 * a C-built request's request_sha256 covers.
 *
 * Invariants: a request that passed pl_request_validate has a run_id of 1..128 bytes,
 * a known program kind with its program text, args only for wasm, guest paths that
 * are absolute without "..", requirements within the known bits, a workspace exactly
 * when the state class is native_workspace_ref, and limits within their bounds.
 */
#include "place_int.h"

#include <stdlib.h>
#include <string.h>

static const char *const FEATURES[PL_REQ_COUNT] = {
    "browser_runtime",
    "daemon",
    "dynamic_package_install",
    "native_extension",
    "native_threads",
    "network",
    "posix",
    "shell",
    "subprocess",
};

const char *pl_feature_name(unsigned i) {
    return i < PL_REQ_COUNT ? FEATURES[i] : NULL;
}

static int feature_index(const char *s) {
    for (int i = 0; i < PL_REQ_COUNT; i++)
        if (strcmp(s, FEATURES[i]) == 0) return i;
    return -1;
}

static const char *const STATES[] = {"portable_value", "native_workspace_ref", "native_process_ref",
                                     "opaque"};

const char *pl__state_name(pl_state_class s) {
    return (unsigned)s < 4 ? STATES[s] : "";
}

bool pl__guest_path_ok(const char *p) {
    size_t n = p ? strlen(p) : 0;
    if (n < 2 || n > 4096 || p[0] != '/' || !pl__utf8_valid(p, n)) return false;
    const char *s = p + 1;
    while (*s) {
        const char *e = strchr(s, '/');
        size_t k = e ? (size_t)(e - s) : strlen(s);
        if (k == 0 || (k == 1 && s[0] == '.') || (k == 2 && s[0] == '.' && s[1] == '.'))
            return false;
        if (!e) break;
        s = e + 1;
        if (!*s) return false; /* trailing slash: not a file */
    }
    return true;
}

#define LIM_MS_MAX   3600000u
#define LIM_MEM_MAX  65536u
#define LIM_OUT_MAX  (1ull << 30)
#define LIM_PROC_MAX 4096u
#define RUN_ID_MAX   128u
#define PROGRAM_MAX  (16u << 20)

bool pl_request_validate(const pl_request *r, pl_error *err) {
    if (!r) return pl__fail(err, PL_ERR_REQUEST, "request: missing");
    size_t n = r->run_id ? strlen(r->run_id) : 0;
    if (n < 1 || n > RUN_ID_MAX || !pl__utf8_valid(r->run_id, n))
        return pl__fail(err, PL_ERR_REQUEST, "run_id: must be 1..128 bytes of UTF-8");
    if (r->kind < PL_PROGRAM_WASM || r->kind > PL_PROGRAM_PYTHON)
        return pl__fail(err, PL_ERR_REQUEST, "program: unknown kind");
    size_t pn = r->program ? strlen(r->program) : 0;
    if (!r->program || pn > PROGRAM_MAX || !pl__utf8_valid(r->program, pn))
        return pl__fail(err, PL_ERR_REQUEST, "program: missing, over 16 MiB or not UTF-8");
    if (r->kind != PL_PROGRAM_RUBY && r->kind != PL_PROGRAM_PYTHON && pn == 0)
        return pl__fail(err, PL_ERR_REQUEST, "program: empty");
    if (r->nargs && r->kind != PL_PROGRAM_WASM)
        return pl__fail(err, PL_ERR_REQUEST, "program.args: only for wasm programs");
    if (r->nargs > 4096) return pl__fail(err, PL_ERR_REQUEST, "program.args: over 4096");
    for (size_t i = 0; i < r->nargs; i++)
        if (!r->args || !r->args[i] || !pl__utf8_valid(r->args[i], strlen(r->args[i])))
            return pl__fail(err, PL_ERR_REQUEST, "program.args[%zu]: not a UTF-8 string", i);
    if (r->stdin_len && !r->stdin_data) return pl__fail(err, PL_ERR_REQUEST, "stdin: missing");
    if (r->nfiles > 4096) return pl__fail(err, PL_ERR_REQUEST, "files: over 4096");
    for (size_t i = 0; i < r->nfiles; i++) {
        const pl_file *f = &r->files[i];
        if (!pl__guest_path_ok(f->path))
            return pl__fail(err, PL_ERR_REQUEST,
                            "files: path \"%.200s\" must be absolute, without \"..\", \".\" "
                            "or empty names",
                            f->path ? f->path : "");
        if ((f->text_len && !f->text) || !pl__utf8_valid(f->text, f->text_len))
            return pl__fail(err, PL_ERR_REQUEST, "files[\"%.200s\"]: not UTF-8 text", f->path);
        for (size_t j = 0; j < i; j++)
            if (strcmp(r->files[j].path, f->path) == 0)
                return pl__fail(err, PL_ERR_REQUEST, "files: duplicate path \"%.200s\"", f->path);
    }
    if (r->requirements >> PL_REQ_COUNT)
        return pl__fail(err, PL_ERR_REQUEST, "requirements: unknown feature bit");
    if ((unsigned)r->state_class > PL_STATE_OPAQUE)
        return pl__fail(err, PL_ERR_REQUEST, "state_class: unknown");
    bool ws = r->state_class == PL_STATE_NATIVE_WORKSPACE_REF;
    if (ws && (!r->workspace || r->workspace[0] != '/'))
        return pl__fail(err, PL_ERR_REQUEST,
                        "workspace: native_workspace_ref needs an absolute host directory");
    if (!ws && r->workspace)
        return pl__fail(err, PL_ERR_REQUEST, "workspace: only with native_workspace_ref");
    if (r->workspace && (strlen(r->workspace) > 4096 || strstr(r->workspace, "/../") ||
                         (strlen(r->workspace) >= 3 &&
                          strcmp(r->workspace + strlen(r->workspace) - 3, "/..") == 0)))
        return pl__fail(err, PL_ERR_REQUEST, "workspace: must not contain \"..\"");
    const pl_limits *l = &r->limits;
    if (l->cpu_ms > LIM_MS_MAX || l->wall_ms > LIM_MS_MAX)
        return pl__fail(err, PL_ERR_REQUEST, "limits: cpu_ms and wall_ms at most 3600000");
    if (l->memory_mib > LIM_MEM_MAX)
        return pl__fail(err, PL_ERR_REQUEST, "limits.memory_mib: at most 65536");
    if (l->output_bytes > LIM_OUT_MAX)
        return pl__fail(err, PL_ERR_REQUEST, "limits.output_bytes: at most 1073741824");
    if (l->processes > LIM_PROC_MAX)
        return pl__fail(err, PL_ERR_REQUEST, "limits.processes: at most 4096");
    return true;
}

/* ---------------------------------------------------------------- JSON decoding */

typedef struct owned_request {
    pl_request r; /* first: pl_request_free casts back */
    pj_t *root;
    char *raw;
    const char **args;
    pl_file *files;
} owned_request;

void pl_request_free(pl_request *r) {
    if (!r) return;
    owned_request *o = (owned_request *)r;
    pj_decref(o->root);
    free(o->raw);
    free(o->args);
    free(o->files);
    free(o);
}

static bool only_keys(pj_t *obj, const char *const *keys, const char *where, pl_error *err) {
    const char *k;
    pj_t *v;
    pj_object_foreach(obj, k, v) {
        bool known = false;
        for (size_t i = 0; keys[i]; i++)
            known = known || strcmp(k, keys[i]) == 0;
        if (!known) return pl__fail(err, PL_ERR_REQUEST, "%s: unknown field \"%.100s\"", where, k);
    }
    return true;
}

static bool get_u(pj_t *lim, const char *key, uint64_t max, uint64_t *out, pl_error *err) {
    pj_t *v = pj_object_get(lim, key);
    if (!v) return true;
    if (!pj_is_integer(v) || pj_integer_value(v) < 1 || (uint64_t)pj_integer_value(v) > max)
        return pl__fail(err, PL_ERR_REQUEST, "limits.%s: an integer from 1 to %llu", key,
                        (unsigned long long)max);
    *out = (uint64_t)pj_integer_value(v);
    return true;
}

static bool decode(owned_request *o, pl_error *err) {
    pl_request *r = &o->r;
    pj_t *root = o->root;
    static const char *const top[] = {"run_id",       "program",     "stdin",  "files",
                                      "requirements", "state_class", "limits", "network",
                                      "workspace",    "model_risk",  NULL};
    if (!pj_is_object(root)) return pl__fail(err, PL_ERR_REQUEST, "request: not a JSON object");
    if (!only_keys(root, top, "request", err)) return false;
    pj_t *v = pj_object_get(root, "run_id");
    if (!pj_is_string(v)) return pl__fail(err, PL_ERR_REQUEST, "run_id: required string");
    r->run_id = pj_string_value(v);
    pj_t *prog = pj_object_get(root, "program");
    if (!pj_is_object(prog)) return pl__fail(err, PL_ERR_REQUEST, "program: required object");
    static const char *const pk[] = {"wasm", "shell", "ruby", "python", "args", NULL};
    if (!only_keys(prog, pk, "program", err)) return false;
    int kinds = 0;
    const char *names[] = {"wasm", "shell", "ruby", "python"};
    for (int i = 0; i < 4; i++) {
        pj_t *p = pj_object_get(prog, names[i]);
        if (!p) continue;
        if (!pj_is_string(p))
            return pl__fail(err, PL_ERR_REQUEST, "program.%s: must be a string", names[i]);
        kinds++;
        r->kind = (pl_program_kind)(PL_PROGRAM_WASM + i);
        r->program = pj_string_value(p);
    }
    if (kinds != 1)
        return pl__fail(err, PL_ERR_REQUEST,
                        "program: exactly one of \"wasm\", \"shell\", \"ruby\", \"python\"");
    pj_t *args = pj_object_get(prog, "args");
    if (args) {
        if (r->kind != PL_PROGRAM_WASM)
            return pl__fail(err, PL_ERR_REQUEST, "program.args: only for wasm programs");
        if (!pj_is_array(args))
            return pl__fail(err, PL_ERR_REQUEST, "program.args: must be an array of strings");
        size_t n = pj_array_size(args);
        o->args = calloc(n ? n : 1, sizeof *o->args);
        if (!o->args) return pl__fail(err, PL_ERR_HOST, "out of memory");
        for (size_t i = 0; i < n; i++) {
            pj_t *a = pj_array_get(args, i);
            if (!pj_is_string(a))
                return pl__fail(err, PL_ERR_REQUEST, "program.args[%zu]: must be a string", i);
            o->args[i] = pj_string_value(a);
        }
        r->args = o->args;
        r->nargs = n;
    }
    if ((v = pj_object_get(root, "stdin"))) {
        if (!pj_is_string(v)) return pl__fail(err, PL_ERR_REQUEST, "stdin: must be a string");
        r->stdin_data = pj_string_value(v);
        r->stdin_len = pj_string_length(v);
    }
    if ((v = pj_object_get(root, "files"))) {
        if (!pj_is_object(v))
            return pl__fail(err, PL_ERR_REQUEST, "files: must be an object of path to text");
        size_t n = pj_object_size(v), i = 0;
        o->files = calloc(n ? n : 1, sizeof *o->files);
        if (!o->files) return pl__fail(err, PL_ERR_HOST, "out of memory");
        const char *k;
        pj_t *t;
        pj_object_foreach(v, k, t) {
            if (!pj_is_string(t))
                return pl__fail(err, PL_ERR_REQUEST, "files[\"%.200s\"]: must be a string", k);
            o->files[i++] = (pl_file){k, pj_string_value(t), pj_string_length(t)};
        }
        r->files = o->files;
        r->nfiles = i;
    }
    if ((v = pj_object_get(root, "requirements"))) {
        if (!pj_is_array(v))
            return pl__fail(err, PL_ERR_REQUEST, "requirements: must be an array of strings");
        for (size_t i = 0; i < pj_array_size(v); i++) {
            pj_t *f = pj_array_get(v, i);
            int k = pj_is_string(f) ? feature_index(pj_string_value(f)) : -1;
            if (k < 0)
                return pl__fail(err, PL_ERR_REQUEST, "requirements[%zu]: unknown feature", i);
            if (r->requirements & (1u << k))
                return pl__fail(err, PL_ERR_REQUEST, "requirements: duplicate \"%s\"", FEATURES[k]);
            r->requirements |= 1u << k;
        }
    }
    if ((v = pj_object_get(root, "state_class"))) {
        int k = -1;
        for (int i = 0; i < 4 && pj_is_string(v); i++)
            if (strcmp(pj_string_value(v), STATES[i]) == 0) k = i;
        if (k < 0)
            return pl__fail(err, PL_ERR_REQUEST,
                            "state_class: one of portable_value, native_workspace_ref, "
                            "native_process_ref, opaque");
        r->state_class = (pl_state_class)k;
    }
    if ((v = pj_object_get(root, "limits"))) {
        static const char *const lk[] = {"cpu_ms",       "wall_ms",   "memory_mib",
                                         "output_bytes", "processes", NULL};
        if (!pj_is_object(v)) return pl__fail(err, PL_ERR_REQUEST, "limits: must be an object");
        if (!only_keys(v, lk, "limits", err)) return false;
        uint64_t c = 0, w = 0, m = 0, b = 0, p = 0;
        if (!get_u(v, "cpu_ms", LIM_MS_MAX, &c, err) || !get_u(v, "wall_ms", LIM_MS_MAX, &w, err) ||
            !get_u(v, "memory_mib", LIM_MEM_MAX, &m, err) ||
            !get_u(v, "output_bytes", LIM_OUT_MAX, &b, err) ||
            !get_u(v, "processes", LIM_PROC_MAX, &p, err))
            return false;
        r->limits = (pl_limits){(uint32_t)c, (uint32_t)w, (uint32_t)m, b, (uint32_t)p};
    }
    if ((v = pj_object_get(root, "network"))) {
        if (!pj_is_boolean(v)) return pl__fail(err, PL_ERR_REQUEST, "network: must be a boolean");
        r->network = pj_is_true(v);
    }
    if ((v = pj_object_get(root, "model_risk"))) {
        if (!pj_is_boolean(v))
            return pl__fail(err, PL_ERR_REQUEST, "model_risk: must be a boolean");
        r->model_risk = pj_is_true(v);
    }
    if ((v = pj_object_get(root, "workspace"))) {
        if (!pj_is_string(v)) return pl__fail(err, PL_ERR_REQUEST, "workspace: must be a string");
        r->workspace = pj_string_value(v);
    }
    return pl_request_validate(r, err);
}

/* The JSON library's error text for a decode failure, with our wording for the cases the
 * contract names. */
static bool load_error(const pj_error_t *je, const char *what, pl_code code, pl_error *err) {
    if (strstr(je->text, "duplicate object key"))
        return pl__fail(err, code, "%s: duplicate key (%s)", what, je->text);
    if (strstr(je->text, "end of file expected"))
        return pl__fail(err, code, "%s: trailing data after the JSON value (line %d)", what,
                        je->line);
    return pl__fail(err, code, "%s: invalid JSON: %s (line %d)", what, je->text, je->line);
}

pj_t *pl__json_strict(const char *text, size_t len, const char *what, pl_code code, pl_error *err) {
    pj_error_t je;
    pj_t *root = pj_loadb(text, len, PJ_REJECT_DUPLICATES, &je);
    if (!root) load_error(&je, what, code, err);
    return root;
}

pl_request *pl_request_parse(const char *json, size_t len, pl_error *err) {
    owned_request *o = calloc(1, sizeof *o);
    if (!o || !(o->raw = malloc(len + 1))) {
        free(o);
        pl__fail(err, PL_ERR_HOST, "out of memory");
        return NULL;
    }
    memcpy(o->raw, json, len);
    o->raw[len] = 0;
    o->r.raw = o->raw;
    o->r.raw_len = len;
    o->root = pl__json_strict(json, len, "request", PL_ERR_REQUEST, err);
    if (!o->root || !decode(o, err)) {
        pl_request_free(&o->r);
        return NULL;
    }
    return &o->r;
}

/* ---------------------------------------------------------------- canonical JSON */

static bool add(pj_t *o, const char *k, pj_t *v) {
    return v && pj_object_set_new(o, k, v) == 0;
}

char *pl_request_json(const pl_request *r, size_t *len) {
    pj_t *o = pj_object(), *prog = pj_object();
    bool ok = o && prog && add(o, "run_id", pj_string(r->run_id));
    static const char *const kn[] = {"", "wasm", "shell", "ruby", "python"};
    ok = ok && add(prog, kn[r->kind], pj_string(r->program));
    if (ok && r->nargs) {
        pj_t *a = pj_array();
        for (size_t i = 0; a && i < r->nargs; i++)
            if (pj_array_append_new(a, pj_string(r->args[i]))) {
                pj_decref(a);
                a = NULL;
            }
        ok = add(prog, "args", a);
    }
    ok = ok && add(o, "program", pj_incref(prog));
    if (ok && r->stdin_data) ok = add(o, "stdin", pj_stringn(r->stdin_data, r->stdin_len));
    if (ok && r->nfiles) {
        pj_t *f = pj_object();
        for (size_t i = 0; f && i < r->nfiles; i++)
            if (!add(f, r->files[i].path, pj_stringn(r->files[i].text, r->files[i].text_len))) {
                pj_decref(f);
                f = NULL;
            }
        ok = add(o, "files", f);
    }
    if (ok && r->requirements) {
        pj_t *a = pj_array();
        for (unsigned i = 0; a && i < PL_REQ_COUNT; i++)
            if ((r->requirements & (1u << i)) && pj_array_append_new(a, pj_string(FEATURES[i]))) {
                pj_decref(a);
                a = NULL;
            }
        ok = add(o, "requirements", a);
    }
    if (ok && r->state_class) ok = add(o, "state_class", pj_string(STATES[r->state_class]));
    const pl_limits *l = &r->limits;
    if (ok && (l->cpu_ms || l->wall_ms || l->memory_mib || l->output_bytes || l->processes)) {
        pj_t *lim = pj_object();
        ok = lim != NULL;
        if (ok && l->cpu_ms) ok = add(lim, "cpu_ms", pj_integer(l->cpu_ms));
        if (ok && l->wall_ms) ok = add(lim, "wall_ms", pj_integer(l->wall_ms));
        if (ok && l->memory_mib) ok = add(lim, "memory_mib", pj_integer(l->memory_mib));
        if (ok && l->output_bytes)
            ok = add(lim, "output_bytes", pj_integer((pj_int_t)l->output_bytes));
        if (ok && l->processes) ok = add(lim, "processes", pj_integer(l->processes));
        ok = ok ? add(o, "limits", lim) : (pj_decref(lim), false);
    }
    if (ok && r->network) ok = add(o, "network", pj_true());
    if (ok && r->workspace) ok = add(o, "workspace", pj_string(r->workspace));
    if (ok && r->model_risk) ok = add(o, "model_risk", pj_true());
    char *s = ok ? pl__json_dump(o, len) : NULL;
    pj_decref(prog);
    pj_decref(o);
    return s;
}

const char *pl__request_raw(const pl_request *r, size_t *len, char **owned) {
    *owned = NULL;
    if (r->raw) {
        *len = r->raw_len;
        return r->raw;
    }
    *owned = pl_request_json(r, len);
    return *owned;
}

/* ---------------------------------------------------------------- policy */

typedef struct owned_policy {
    pl_policy p;
    pj_t *root;
    const char **writable, **protect;
} owned_policy;

void pl_policy_free(pl_policy *p) {
    if (!p) return;
    owned_policy *o = (owned_policy *)p;
    pj_decref(o->root);
    free(o->writable);
    free(o->protect);
    free(o);
}

/* A policy's list of absolute directories (borrowed from v; the array is the caller's
 * to free), or NULL with *err. No "." or ".." component: the path is the directory. */
static const char **path_list(pj_t *v, const char *field, size_t *n, pl_error *err) {
    if (!pj_is_array(v)) {
        pl__fail(err, PL_ERR_POLICY, "policy.%s: array of absolute paths", field);
        return NULL;
    }
    *n = pj_array_size(v);
    const char **out = calloc(*n ? *n : 1, sizeof *out);
    if (!out) {
        pl__fail(err, PL_ERR_HOST, "out of memory");
        return NULL;
    }
    for (size_t i = 0; i < *n; i++) {
        pj_t *s = pj_array_get(v, i);
        const char *p = pj_is_string(s) ? pj_string_value(s) : "";
        bool ok = p[0] == '/' && !strstr(p, "/./") && !strstr(p, "..");
        size_t l = strlen(p);
        if (ok && l >= 2 && p[l - 1] == '.' && p[l - 2] == '/') ok = false;
        if (!ok) {
            free(out);
            pl__fail(err, PL_ERR_POLICY, "policy.%s[%zu]: an absolute path without \".\" or \"..\"",
                     field, i);
            return NULL;
        }
        out[i] = p;
    }
    return out;
}

static bool decode_policy(owned_policy *o, pl_error *err) {
    static const char *const keys[] = {
        "native", "network", "native_unsandboxed", "writable", "host_network", "protect", NULL};
    pj_t *root = o->root, *v;
    if (!pj_is_object(root)) return pl__fail(err, PL_ERR_POLICY, "policy: not a JSON object");
    const char *k;
    pj_object_foreach(root, k, v) {
        bool known = false;
        for (size_t i = 0; keys[i]; i++)
            known = known || strcmp(k, keys[i]) == 0;
        if (!known) return pl__fail(err, PL_ERR_POLICY, "policy: unknown field \"%.100s\"", k);
    }
    if ((v = pj_object_get(root, "native"))) {
        const char *s = pj_is_string(v) ? pj_string_value(v) : "";
        if (strcmp(s, "auto") == 0)
            o->p.native = PL_NATIVE_AUTO;
        else if (strcmp(s, "yes") == 0)
            o->p.native = PL_NATIVE_YES;
        else if (strcmp(s, "no") == 0)
            o->p.native = PL_NATIVE_NO;
        else
            return pl__fail(err, PL_ERR_POLICY, "policy.native: \"auto\", \"yes\" or \"no\"");
    }
    if ((v = pj_object_get(root, "network"))) {
        if (!pj_is_boolean(v)) return pl__fail(err, PL_ERR_POLICY, "policy.network: boolean");
        o->p.network_allowed = pj_is_true(v);
    }
    if ((v = pj_object_get(root, "host_network"))) {
        if (!pj_is_boolean(v)) return pl__fail(err, PL_ERR_POLICY, "policy.host_network: boolean");
        o->p.host_network = pj_is_true(v);
    }
    if ((v = pj_object_get(root, "native_unsandboxed"))) {
        if (!pj_is_boolean(v))
            return pl__fail(err, PL_ERR_POLICY, "policy.native_unsandboxed: boolean");
        o->p.native_unsandboxed = pj_is_true(v);
    }
    if ((v = pj_object_get(root, "writable")) &&
        !(o->writable = path_list(v, "writable", &o->p.nwritable, err)))
        return false;
    o->p.writable = o->writable;
    if ((v = pj_object_get(root, "protect")) &&
        !(o->protect = path_list(v, "protect", &o->p.nprotect, err)))
        return false;
    o->p.protect = o->protect;
    return true;
}

pl_policy *pl_policy_parse(const char *json, size_t len, pl_error *err) {
    owned_policy *o = calloc(1, sizeof *o);
    if (!o) {
        pl__fail(err, PL_ERR_HOST, "out of memory");
        return NULL;
    }
    o->root = pl__json_strict(json, len, "policy", PL_ERR_POLICY, err);
    if (!o->root || !decode_policy(o, err)) {
        pl_policy_free(&o->p);
        return NULL;
    }
    return &o->p;
}
