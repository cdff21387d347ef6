/*
 * script.c — runs one testsuite script: its commands in order, in one fresh store
 * with one fresh `spectest` instance (MANIFEST.md §6, §9).
 *
 * State: module definitions and instances (separate namespaces, names compared as
 * byte strings), the current module and instance, and the registry (newest
 * registration of a name wins). A command that cannot even be performed (module file
 * unreadable, no current instance, missing export) fails its assertion; nothing here
 * aborts the script, and nothing trusts the engine to succeed.
 */
#include "st.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct st_binding {
    const char *name; /* points into the script's JSON; NULL for unnamed */
    size_t len;
    void *obj; /* pw_module * or pw_instance *; NULL when its creation failed */
} st_binding;

typedef struct st_list {
    st_binding *v;
    size_t n, cap;
} st_list;

typedef struct st_script {
    const st_opts *o;
    const char *dir, *name;
    st_counts *c;
    long details; /* failure details printed so far */
    pw_store *store;
    st_host *host;
    st_list mods;  /* every module created, named or not; all freed at the end */
    st_list insts; /* named instances */
    st_list regs;  /* registry; obj NULL stands for the spectest host */
    pw_module *cur_mod;
    pw_instance *cur_inst;
    st_wast *wast; /* text mode: the script's .wast source */
    long line;
    const char *cmd;
} st_script;

/* ------------------------------------------------------------ helpers */

static const char *st_str(pj_t *o, const char *key) {
    return pj_string_value(pj_object_get(o, key));
}

static bool st_push(st_list *l, const char *name, size_t len, void *obj) {
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 16;
        st_binding *v = realloc(l->v, cap * sizeof *v);
        if (!v) return false;
        l->v = v;
        l->cap = cap;
    }
    l->v[l->n++] = (st_binding){name, len, obj};
    return true;
}

/* Newest binding named (name, len); NULL if none. */
static st_binding *st_find(st_list *l, const char *name, size_t len) {
    for (size_t i = l->n; i-- > 0;)
        if (l->v[i].name && l->v[i].len == len && memcmp(l->v[i].name, name, len) == 0)
            return &l->v[i];
    return NULL;
}

/* Writes a printable, bounded rendering of a (possibly NUL-containing) name. */
static void st_fmt_name(const char *s, size_t len, char *buf, size_t n) {
    size_t o = 0;
    for (size_t i = 0; i < len && o + 5 < n; i++) {
        unsigned char ch = (unsigned char)s[i];
        if (i >= 48) {
            o += (size_t)snprintf(buf + o, n - o, "...");
            break;
        }
        if (ch >= 0x20 && ch < 0x7f && ch != '"' && ch != '\\')
            buf[o++] = (char)ch;
        else
            o += (size_t)snprintf(buf + o, n - o, "\\%02x", ch);
    }
    buf[o < n ? o : n - 1] = 0;
}

static void st_fail(st_script *sc, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void st_fail(st_script *sc, const char *fmt, ...) {
    sc->c->failed++;
    if (!sc->o->verbose && sc->details >= ST_MAX_DETAILS) {
        if (sc->details++ == ST_MAX_DETAILS)
            printf("  %s: more failures not shown (use -v)\n", sc->name);
        return;
    }
    sc->details++;
    printf("  %s.wast:%ld: %s: ", sc->name, sc->line, sc->cmd);
    va_list ap;
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    putchar('\n');
}

static void st_note(st_script *sc, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void st_note(st_script *sc, const char *fmt, ...) {
    sc->c->mismatched++;
    if (sc->o->strict) sc->c->failed++, sc->c->passed--;
    if (!sc->o->verbose && !sc->o->strict) return;
    printf("  %s.wast:%ld: %s: %s", sc->name, sc->line, sc->cmd, sc->o->strict ? "" : "note: ");
    va_list ap;
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    putchar('\n');
}

static const char *st_status_name(pw_status s) {
    switch (s) {
    case PW_OK: return "ok";
    case PW_ERR_MALFORMED: return "malformed";
    case PW_ERR_INVALID: return "invalid";
    case PW_ERR_UNLINKABLE: return "unlinkable";
    case PW_ERR_TRAP: return "trap";
    case PW_ERR_EXCEPTION: return "exception";
    case PW_ERR_OOM: return "out of memory (cap)";
    case PW_ERR_NOMEM: return "out of memory (host)";
    case PW_ERR_ARG: return "bad argument";
    }
    return "?";
}

/* Same imports and exports (names, kinds, order)? */
static bool st_same_interface(const pw_module *a, const pw_module *b) {
    if (pw_module_import_count(a) != pw_module_import_count(b) ||
        pw_module_export_count(a) != pw_module_export_count(b))
        return false;
    for (uint32_t i = 0; i < pw_module_import_count(a); i++) {
        pw_import_desc x, y;
        pw_module_import(a, i, &x);
        pw_module_import(b, i, &y);
        if (x.kind != y.kind || x.module_len != y.module_len || x.name_len != y.name_len ||
            memcmp(x.module, y.module, x.module_len) || memcmp(x.name, y.name, x.name_len))
            return false;
    }
    for (uint32_t i = 0; i < pw_module_export_count(a); i++) {
        pw_export_desc x, y;
        pw_module_export(a, i, &x);
        pw_module_export(b, i, &y);
        if (x.kind != y.kind || x.name_len != y.name_len || memcmp(x.name, y.name, x.name_len))
            return false;
    }
    return true;
}

/* Reads an unsigned LEB128 at d[*i] (bounded by n); false when malformed. */
static bool st_leb(const uint8_t *d, size_t n, size_t *i, uint32_t *out) {
    uint32_t v = 0;
    for (int sh = 0; sh < 35 && *i < n; sh += 7) {
        uint8_t b = d[(*i)++];
        v |= (uint32_t)(b & 0x7F) << sh;
        if (!(b & 0x80)) return *out = v, true;
    }
    return false;
}

static size_t st_put_leb(uint8_t *o, uint32_t v) {
    size_t k = 0;
    do {
        o[k] = v & 0x7F;
        v >>= 7;
        if (v) o[k] |= 0x80;
        k++;
    } while (v);
    return k;
}

/* The reference encoder pads section and function-body sizes to 5-byte LEB128s; the
 * same module with minimal sizes (into a new buffer of at most n bytes), or len 0 when
 * the module does not even split into sections. */
static size_t st_minimal_sizes(const uint8_t *d, size_t n, uint8_t *o) {
    if (n < 8) return 0;
    memcpy(o, d, 8);
    size_t i = 8, k = 8;
    while (i < n) {
        uint8_t id = d[i++];
        uint32_t sz;
        if (!st_leb(d, n, &i, &sz) || sz > n - i) return 0;
        o[k++] = id;
        if (id != 10) {
            k += st_put_leb(o + k, sz);
            memcpy(o + k, d + i, sz);
            k += sz;
            i += sz;
            continue;
        }
        /* code: count, then size-prefixed bodies */
        size_t j = i, end = i + sz, body = 0;
        uint8_t tmp[10];
        uint32_t cnt;
        if (!st_leb(d, end, &j, &cnt)) return 0;
        uint8_t *sec = o + k + 5; /* room for the section size, fixed below */
        size_t m = st_put_leb(sec, cnt);
        for (uint32_t f = 0; f < cnt; f++) {
            uint32_t bs;
            if (!st_leb(d, end, &j, &bs) || bs > end - j) return 0;
            m += st_put_leb(sec + m, bs);
            memcpy(sec + m, d + j, bs);
            m += bs;
            j += bs;
        }
        if (j != end) return 0;
        body = st_put_leb(tmp, (uint32_t)m);
        memmove(o + k + body, sec, m);
        memcpy(o + k, tmp, body);
        k += body + m;
        i = end;
    }
    return k;
}

/* Text mode: replaces the reference binary (*bytes, *len) by the engine's own encoding
 * of the module's text in the .wast source, counting modules that are byte-identical
 * and checking that the two have the same imports and exports when both compile.
 * False (err PW_ERR_ARG, so that every assertion on it fails) when the text cannot be
 * found or the parser rejects it. */
static bool st_wat_bytes(st_script *sc, pj_t *cmd, uint8_t **bytes, size_t *len, pw_error *err) {
    const char *text;
    size_t tlen;
    if (!st_wast_module(sc->wast, sc->line, &text, &tlen)) {
        err->status = PW_ERR_ARG;
        snprintf(err->message, sizeof err->message, "no module text at line %ld", sc->line);
        sc->c->wat_failed++;
        return false;
    }
    uint8_t *mine = NULL;
    size_t mlen = 0;
    if (pw_wat_to_wasm(text, tlen, &mine, &mlen, err) != PW_OK) {
        err->status = PW_ERR_ARG;
        char msg[sizeof err->message];
        snprintf(msg, sizeof msg, "%s", err->message);
        snprintf(err->message, sizeof err->message, "text parser rejected the module: %.200s", msg);
        sc->c->wat_failed++;
        return false;
    }
    sc->c->wat_modules++;
    (void)cmd;
    uint8_t *norm = malloc(*len + 16);
    size_t nlen = norm ? st_minimal_sizes(*bytes, *len, norm) : 0;
    bool same = (mlen == *len && memcmp(mine, *bytes, mlen) == 0) ||
                (nlen == mlen && memcmp(mine, norm, mlen) == 0);
    free(norm);
    if (same) {
        sc->c->wat_identical++;
    } else {
        pw_error e1, e2;
        pw_module *ref = pw_module_new(*bytes, *len, NULL, &e1);
        pw_module *own = pw_module_new(mine, mlen, NULL, &e2);
        if (ref && !own) {
            st_fail(sc, "text: the reference module compiles, ours does not: %s", e2.message);
            sc->c->wat_failed++;
        } else if (ref && own && !st_same_interface(ref, own)) {
            st_fail(sc, "text: imports or exports differ from the reference module");
            sc->c->wat_failed++;
        }
        if (ref) pw_module_free(ref);
        if (own) pw_module_free(own);
    }
    free(*bytes);
    *bytes = mine;
    *len = mlen;
    return true;
}

/* Loads and compiles the module of command `cmd`; NULL with err set on failure. A .wat
 * file (a text module) goes through the text parser first; in text mode (--wat) the
 * module's text in the .wast source replaces every .wasm file (st_wat_bytes).
 * The module is recorded in sc->mods (owned there) when it compiles. */
static pw_module *st_load(st_script *sc, pj_t *cmd, pw_error *err) {
    const char *file = st_str(cmd, "filename");
    memset(err, 0, sizeof *err);
    if (!file) {
        err->status = PW_ERR_ARG;
        snprintf(err->message, sizeof err->message, "command has no filename");
        return NULL;
    }
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", sc->dir, file);
    FILE *f = fopen(path, "rb");
    if (!f) {
        err->status = PW_ERR_ARG;
        snprintf(err->message, sizeof err->message, "cannot open %.200s", file);
        return NULL;
    }
    uint8_t *bytes = NULL;
    size_t len = 0, cap = 0, got;
    do {
        if (len == cap) {
            cap = cap ? cap * 2 : 4096;
            uint8_t *nb = realloc(bytes, cap);
            if (!nb) {
                free(bytes);
                fclose(f);
                err->status = PW_ERR_NOMEM;
                snprintf(err->message, sizeof err->message, "out of memory reading %.200s", file);
                return NULL;
            }
            bytes = nb;
        }
        got = fread(bytes + len, 1, cap - len, f);
        len += got;
    } while (got > 0);
    fclose(f);
    size_t flen = strlen(file);
    if (flen > 4 && strcmp(file + flen - 4, ".wat") == 0) {
        uint8_t *bin = NULL;
        size_t blen = 0;
        pw_status st = pw_wat_to_wasm((const char *)bytes, len, &bin, &blen, err);
        free(bytes);
        if (st != PW_OK) return NULL;
        bytes = bin;
        len = blen;
    } else if (sc->o->wat && !st_wat_bytes(sc, cmd, &bytes, &len, err)) {
        free(bytes);
        return NULL;
    }
    pw_module_config mc = {.compile_eagerly = sc->o->eager};
    pw_module *m = pw_module_new(bytes, len, &mc, err);
    free(bytes);
    if (m && !st_push(&sc->mods, NULL, 0, m)) {
        pw_module_free(m);
        err->status = PW_ERR_NOMEM;
        snprintf(err->message, sizeof err->message, "out of memory");
        return NULL;
    }
    return m;
}

static bool st_resolve(void *ctx, pw_store *s, const pw_module *m, const pw_import_desc *imp,
                       pw_extern *out) {
    (void)s, (void)m;
    st_script *sc = ctx;
    st_binding *b = st_find(&sc->regs, imp->module, imp->module_len);
    if (!b) return false;
    if (!b->obj) return st_host_lookup(sc->host, imp->name, imp->name_len, out);
    return pw_instance_export(b->obj, imp->name, imp->name_len, out);
}

static pw_instance *st_instantiate(st_script *sc, pw_module *m, pw_error *err) {
    memset(err, 0, sizeof *err);
    return pw_instantiate(sc->store, m, st_resolve, sc, err);
}

/* The module named by key `key` of cmd, or the current one. */
static pw_module *st_module_ref(st_script *sc, pj_t *cmd, const char *key) {
    pj_t *n = pj_object_get(cmd, key);
    if (!n) return sc->cur_mod;
    st_binding *b = st_find(&sc->mods, pj_string_value(n), pj_string_length(n));
    return b ? b->obj : NULL;
}

static bool st_bind(st_script *sc, st_list *l, pj_t *name, void *obj) {
    if (!name) return true;
    if (st_push(l, pj_string_value(name), pj_string_length(name), obj)) return true;
    st_fail(sc, "out of memory");
    return false;
}

/* ------------------------------------------------------------ actions */

typedef struct st_outcome {
    bool performed;   /* false: the runner could not even start the action (why) */
    pw_status status; /* engine result when performed */
    pw_error err;
    uint32_t n;
    const pw_valtype *types;
    pw_val *vals; /* owned; freed by st_outcome_free */
    pw_valtype one_type;
    char why[256];
    char desc[160]; /* "invoke \"f\"" for messages */
} st_outcome;

static void st_outcome_free(st_outcome *r) {
    free(r->vals);
}

static void st_action(st_script *sc, pj_t *a, st_outcome *r) {
    memset(r, 0, sizeof *r);
    const char *type = st_str(a, "type");
    pj_t *field = pj_object_get(a, "field");
    char fname[200];
    st_fmt_name(pj_string_value(field) ? pj_string_value(field) : "", pj_string_length(field),
                fname, sizeof fname);
    snprintf(r->desc, sizeof r->desc, "%.10s \"%.140s\"", type ? type : "?", fname);
    pw_instance *inst = sc->cur_inst;
    pj_t *mod = pj_object_get(a, "module");
    if (mod) {
        st_binding *b = st_find(&sc->insts, pj_string_value(mod), pj_string_length(mod));
        inst = b ? b->obj : NULL;
    }
    if (!inst) {
        snprintf(r->why, sizeof r->why, "no instance (an earlier module failed)");
        return;
    }
    pw_extern ext;
    if (!field ||
        !pw_instance_export(inst, pj_string_value(field), pj_string_length(field), &ext)) {
        snprintf(r->why, sizeof r->why, "no export \"%s\"", fname);
        return;
    }
    if (type && strcmp(type, "get") == 0) {
        if (ext.kind != PW_EXTERN_GLOBAL) {
            snprintf(r->why, sizeof r->why, "export \"%s\" is not a global", fname);
            return;
        }
        r->performed = true;
        r->status = PW_OK;
        r->n = 1;
        r->one_type = pw_global_type(ext.u.global);
        r->types = &r->one_type;
        r->vals = calloc(2, sizeof *r->vals); /* a v128 global takes two cells */
        if (!r->vals) {
            r->performed = false;
            snprintf(r->why, sizeof r->why, "out of memory");
            return;
        }
        r->vals[0] = pw_global_get(ext.u.global);
        r->vals[1].bits = pw_global_get_hi(ext.u.global);
        return;
    }
    if (!type || strcmp(type, "invoke") != 0) {
        snprintf(r->why, sizeof r->why, "unknown action type");
        return;
    }
    if (ext.kind != PW_EXTERN_FUNC) {
        snprintf(r->why, sizeof r->why, "export \"%s\" is not a function", fname);
        return;
    }
    pw_functype ft;
    pw_func_type(ext.u.func, &ft);
    pj_t *args = pj_object_get(a, "args");
    size_t nargs = pj_array_size(args);
    if (nargs != ft.nparams) {
        snprintf(r->why, sizeof r->why, "%zu arguments for %u parameters", nargs, ft.nparams);
        return;
    }
    /* cells: a v128 takes two (peri/wasm.h) */
    uint32_t nacells = 0, nrcells = 0;
    for (uint32_t i = 0; i < ft.nparams; i++)
        nacells += ft.params[i] == PW_VT_V128 ? 2 : 1;
    for (uint32_t i = 0; i < ft.nresults; i++)
        nrcells += ft.results[i] == PW_VT_V128 ? 2 : 1;
    pw_val *argv = calloc(nacells ? nacells : 1, sizeof *argv);
    r->vals = calloc(nrcells ? nrcells : 1, sizeof *r->vals);
    if (!argv || !r->vals) {
        free(argv);
        snprintf(r->why, sizeof r->why, "out of memory");
        return;
    }
    for (size_t i = 0, k = 0; i < nargs; k += ft.params[i] == PW_VT_V128 ? 2 : 1, i++)
        if (!st_value_arg(pj_array_get(args, i), sc->store, ft.params[i], &argv[k], r->why,
                          sizeof r->why)) {
            free(argv);
            return;
        }
    r->performed = true;
    r->n = ft.nresults;
    r->types = ft.results;
    r->status = pw_call(sc->store, ext.u.func, argv, nacells, r->vals, nrcells, &r->err);
    free(argv);
}

/* "trap: out of bounds memory access" and the like, for messages. */
static void st_outcome_fmt(const st_outcome *r, char *buf, size_t n) {
    if (!r->performed)
        snprintf(buf, n, "not performed: %s", r->why);
    else if (r->status == PW_ERR_TRAP)
        snprintf(buf, n, "trap \"%s\" (%s)", pw_trap_message(r->err.trap, PW_MSG_SPEC),
                 r->err.message);
    else if (r->status != PW_OK)
        snprintf(buf, n, "%s: %s", st_status_name(r->status), r->err.message);
    else {
        size_t o = (size_t)snprintf(buf, n, "[");
        for (uint32_t i = 0, k = 0; i < r->n && o < n;
             k += r->types[i] == PW_VT_V128 ? 2 : 1, i++) {
            char v[96];
            st_value_fmt(r->types[i], &r->vals[k], v, sizeof v);
            o += (size_t)snprintf(buf + o, n - o, "%s%s", i ? " " : "", v);
        }
        if (o < n) snprintf(buf + o, n - o, "]");
    }
}

/* Does the engine's trap message agree with the reference text? Either may be the
 * longer one ("uninitialized element 2" vs "uninitialized element"). */
static bool st_text_agrees(const char *msg, const char *text) {
    if (!text) return true;
    size_t a = strlen(msg), b = strlen(text);
    if (a == 0) return false;
    return strncmp(msg, text, a < b ? a : b) == 0;
}

/* ------------------------------------------------------------ commands */

static void st_cmd_assert_return(st_script *sc, pj_t *cmd) {
    st_outcome r;
    st_action(sc, pj_object_get(cmd, "action"), &r);
    pj_t *exp = pj_object_get(cmd, "expected");
    size_t nexp = pj_array_size(exp);
    bool ok = r.performed && r.status == PW_OK && r.n == nexp;
    for (size_t i = 0, k = 0; ok && i < nexp; k += r.types[i] == PW_VT_V128 ? 2 : 1, i++)
        ok = st_value_match(pj_array_get(exp, i), r.types[i], &r.vals[k]);
    if (ok)
        sc->c->passed++;
    else {
        char want[512], got[512];
        size_t o = (size_t)snprintf(want, sizeof want, "[");
        for (size_t i = 0; i < nexp && o < sizeof want; i++) {
            char v[200];
            st_value_fmt_expected(pj_array_get(exp, i), v, sizeof v);
            o += (size_t)snprintf(want + o, sizeof want - o, "%s%s", i ? " " : "", v);
        }
        if (o < sizeof want) snprintf(want + o, sizeof want - o, "]");
        st_outcome_fmt(&r, got, sizeof got);
        st_fail(sc, "%s: expected %s, got %s", r.desc, want, got);
    }
    st_outcome_free(&r);
}

static void st_cmd_assert_trap(st_script *sc, pj_t *cmd, bool exhaustion) {
    st_outcome r;
    st_action(sc, pj_object_get(cmd, "action"), &r);
    const char *text = st_str(cmd, "text");
    bool ok = r.performed && r.status == PW_ERR_TRAP &&
              st_text_agrees(pw_trap_message(r.err.trap, PW_MSG_SPEC), text);
    if (exhaustion && ok) ok = r.err.trap == PW_TRAP_STACK_EXHAUSTED;
    if (ok)
        sc->c->passed++;
    else {
        char got[512];
        st_outcome_fmt(&r, got, sizeof got);
        st_fail(sc, "%s: expected trap \"%s\", got %s", r.desc, text ? text : "", got);
    }
    st_outcome_free(&r);
}

static void st_cmd_assert_exception(st_script *sc, pj_t *cmd) {
    st_outcome r;
    st_action(sc, pj_object_get(cmd, "action"), &r);
    if (r.performed && r.status == PW_ERR_EXCEPTION)
        sc->c->passed++;
    else {
        char got[512];
        st_outcome_fmt(&r, got, sizeof got);
        st_fail(sc, "%s: expected an exception, got %s", r.desc, got);
    }
    st_outcome_free(&r);
}

static void st_cmd_action(st_script *sc, pj_t *cmd) {
    st_outcome r;
    st_action(sc, pj_object_get(cmd, "action"), &r);
    if (!r.performed || r.status != PW_OK) {
        char got[512];
        st_outcome_fmt(&r, got, sizeof got);
        st_fail(sc, "%s: %s", r.desc, got);
    }
    st_outcome_free(&r);
}

static void st_cmd_module(st_script *sc, pj_t *cmd, bool instantiate) {
    pw_error err;
    pw_module *m = st_load(sc, cmd, &err);
    pj_t *name = pj_object_get(cmd, "name");
    sc->cur_mod = m;
    if (!st_bind(sc, &sc->mods, name, m)) return;
    if (!instantiate) {
        if (!m) st_fail(sc, "module rejected: %s: %s", st_status_name(err.status), err.message);
        return;
    }
    /* The unnamed current instance is the newest one; a failed module leaves none. */
    sc->cur_inst = NULL;
    if (!m) {
        st_fail(sc, "module rejected: %s: %s", st_status_name(err.status), err.message);
        st_bind(sc, &sc->insts, name, NULL);
        return;
    }
    pw_instance *inst = st_instantiate(sc, m, &err);
    if (!inst)
        st_fail(sc, "instantiation failed: %s: %s%s%s", st_status_name(err.status), err.message,
                err.status == PW_ERR_TRAP ? " / " : "",
                err.status == PW_ERR_TRAP ? pw_trap_message(err.trap, PW_MSG_SPEC) : "");
    sc->cur_inst = inst;
    st_bind(sc, &sc->insts, name, inst);
}

static void st_cmd_module_instance(st_script *sc, pj_t *cmd) {
    pw_module *m = st_module_ref(sc, cmd, "module");
    pw_instance *inst = NULL;
    if (!m)
        st_fail(sc, "no such module definition");
    else {
        pw_error err;
        inst = st_instantiate(sc, m, &err);
        if (!inst)
            st_fail(sc, "instantiation failed: %s: %s", st_status_name(err.status), err.message);
    }
    sc->cur_inst = inst;
    st_bind(sc, &sc->insts, pj_object_get(cmd, "instance"), inst);
}

static void st_cmd_register(st_script *sc, pj_t *cmd) {
    pw_instance *inst = sc->cur_inst;
    pj_t *name = pj_object_get(cmd, "name");
    if (name) {
        st_binding *b = st_find(&sc->insts, pj_string_value(name), pj_string_length(name));
        inst = b ? b->obj : NULL;
    }
    pj_t *as = pj_object_get(cmd, "as");
    if (!inst || !as) {
        st_fail(sc, "nothing to register (an earlier module failed)");
        return;
    }
    if (!st_push(&sc->regs, pj_string_value(as), pj_string_length(as), inst))
        st_fail(sc, "out of memory");
}

/* assert_malformed / assert_invalid on a binary module. */
static void st_cmd_assert_rejected(st_script *sc, pj_t *cmd, pw_status want) {
    pw_error err;
    pw_module *m = st_load(sc, cmd, &err);
    const char *text = st_str(cmd, "text");
    if (m) {
        st_fail(sc, "module accepted, expected %s \"%s\"", st_status_name(want), text ? text : "");
        return;
    }
    if (err.status != PW_ERR_MALFORMED && err.status != PW_ERR_INVALID) {
        st_fail(sc, "expected %s \"%s\", got %s: %s", st_status_name(want), text ? text : "",
                st_status_name(err.status), err.message);
        return;
    }
    sc->c->passed++;
    if (err.status != want)
        st_note(sc, "expected %s \"%s\", got %s: %s", st_status_name(want), text ? text : "",
                st_status_name(err.status), err.message);
}

/* assert_unlinkable / assert_uninstantiable: the module compiles, instantiation
 * fails in the expected way. Nothing is bound. */
static void st_cmd_assert_instantiate_fails(st_script *sc, pj_t *cmd, bool link) {
    pw_error err;
    pw_module *m;
    if (pj_object_get(cmd, "filename")) {
        m = st_load(sc, cmd, &err);
        if (!m) {
            st_fail(sc, "module rejected: %s: %s", st_status_name(err.status), err.message);
            return;
        }
    } else if (!(m = st_module_ref(sc, cmd, "module"))) {
        st_fail(sc, "no such module definition");
        return;
    }
    const char *text = st_str(cmd, "text");
    pw_instance *inst = st_instantiate(sc, m, &err);
    bool ok;
    if (inst)
        ok = false;
    else if (link)
        ok = err.status == PW_ERR_UNLINKABLE;
    else
        ok = err.status == PW_ERR_EXCEPTION ||
             (err.status == PW_ERR_TRAP &&
              st_text_agrees(pw_trap_message(err.trap, PW_MSG_SPEC), text));
    if (ok)
        sc->c->passed++;
    else if (inst)
        st_fail(sc, "instantiation succeeded, expected \"%s\"", text ? text : "");
    else
        st_fail(sc, "expected \"%s\", got %s: %s", text ? text : "", st_status_name(err.status),
                err.message);
}

bool st_is_assertion(const char *type) {
    return type && strncmp(type, "assert_", 7) == 0;
}

static void st_command(st_script *sc, pj_t *cmd) {
    const char *type = st_str(cmd, "type");
    sc->cmd = type ? type : "?";
    sc->line = (long)pj_integer_value(pj_object_get(cmd, "line"));
    if (!type)
        st_fail(sc, "command without type");
    else if (strcmp(type, "module") == 0)
        st_cmd_module(sc, cmd, true);
    else if (strcmp(type, "module_definition") == 0)
        st_cmd_module(sc, cmd, false);
    else if (strcmp(type, "module_instance") == 0)
        st_cmd_module_instance(sc, cmd);
    else if (strcmp(type, "register") == 0)
        st_cmd_register(sc, cmd);
    else if (strcmp(type, "action") == 0)
        st_cmd_action(sc, cmd);
    else if (strcmp(type, "assert_return") == 0)
        st_cmd_assert_return(sc, cmd);
    else if (strcmp(type, "assert_trap") == 0)
        st_cmd_assert_trap(sc, cmd, false);
    else if (strcmp(type, "assert_exhaustion") == 0)
        st_cmd_assert_trap(sc, cmd, true);
    else if (strcmp(type, "assert_exception") == 0)
        st_cmd_assert_exception(sc, cmd);
    else if (strcmp(type, "assert_malformed") == 0 || strcmp(type, "assert_malformed_custom") == 0)
        st_cmd_assert_rejected(sc, cmd, PW_ERR_MALFORMED);
    else if (strcmp(type, "assert_invalid") == 0 || strcmp(type, "assert_invalid_custom") == 0)
        st_cmd_assert_rejected(sc, cmd, PW_ERR_INVALID);
    else if (strcmp(type, "assert_unlinkable") == 0)
        st_cmd_assert_instantiate_fails(sc, cmd, true);
    else if (strcmp(type, "assert_uninstantiable") == 0)
        st_cmd_assert_instantiate_fails(sc, cmd, false);
    else
        st_fail(sc, "unknown command type");
}

/* ------------------------------------------------------------ scripts */

static pj_t *st_load_json(const char *path) {
    pj_error_t jerr;
    pj_t *root = pj_load_file(path, PJ_ALLOW_NUL, &jerr);
    if (!root) fprintf(stderr, "peri-spectest: %s:%d: %s\n", path, jerr.line, jerr.text);
    return root;
}

bool st_count_assertions(const char *json_path, long *runnable, long *text_only) {
    *text_only = 0; /* every text module is parsed now */
    pj_t *root = st_load_json(json_path);
    if (!root) return false;
    size_t i;
    pj_t *cmd;
    pj_array_foreach(pj_object_get(root, "commands"), i, cmd) {
        if (!st_is_assertion(st_str(cmd, "type"))) continue;
        (*runnable)++;
    }
    pj_decref(root);
    return true;
}

bool st_run_script(const char *json_path, const char *name, const st_opts *o, st_counts *c) {
    pj_t *root = st_load_json(json_path);
    if (!root) return false;
    char dir[4096];
    snprintf(dir, sizeof dir, "%s", json_path);
    char *slash = strrchr(dir, '/');
    if (slash)
        *slash = 0;
    else
        strcpy(dir, ".");

    st_script sc = {.o = o, .dir = dir, .name = name, .c = c, .cmd = "setup"};
    if (o->wat && !(sc.wast = st_wast_open(json_path))) {
        fprintf(stderr, "peri-spectest: %s: cannot read the script's .wast source\n", name);
        pj_decref(root);
        return false;
    }
    pw_error err;
    memset(&err, 0, sizeof err);
    pw_store_config cfg = {
        .engine = o->engine, .jit_sse2 = o->jit_sse2, .bounds_checks = o->bounds};
    sc.store = pw_store_new(&cfg, &err);
    if (sc.store) sc.host = st_host_new(sc.store, &err);
    pj_t *cmds = pj_object_get(root, "commands");
    if (!sc.store || !sc.host || !st_push(&sc.regs, "spectest", 8, NULL)) {
        /* Without a store nothing can run: every assertion fails. */
        st_fail(&sc, "cannot set up store/spectest: %s", err.message);
        size_t i;
        pj_t *cmd;
        pj_array_foreach(cmds, i, cmd) {
            if (st_is_assertion(st_str(cmd, "type"))) c->failed++;
        }
    } else {
        size_t i;
        pj_t *cmd;
        pj_array_foreach(cmds, i, cmd) st_command(&sc, cmd);
    }
    if (sc.store) pw_store_free(sc.store);
    st_host_free(sc.host);
    for (size_t i = 0; i < sc.mods.n; i++)
        if (sc.mods.v[i].obj && !sc.mods.v[i].name) pw_module_free(sc.mods.v[i].obj);
    free(sc.mods.v);
    free(sc.insts.v);
    free(sc.regs.v);
    st_wast_free(sc.wast);
    pj_decref(root);
    return true;
}
