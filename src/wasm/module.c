/*
 * module.c — the module object: creation (decode → validate → compile, by default
 * each function at its first call: compile.c; function bodies and constant
 * expressions are not validated again for bytes with a "validated" record in the code
 * cache: codecache.c), release,
 * import/export queries, and the error helper pw__fail shared by the whole engine.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "wasm/codecache.h"
#include "wasm/compile.h"
#include "wasm/module.h"
#include "wasm/validate.h"

pw_status pw__failv(pw_error *err, pw_status st, const char *fmt, va_list ap) {
    if (!err) return st;
    err->status = st;
    err->trap = PW_TRAP_NONE;
    vsnprintf(err->message, sizeof err->message, fmt, ap);
    return st;
}

pw_status pw__fail(pw_error *err, pw_status st, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    pw__failv(err, st, fmt, ap);
    va_end(ap);
    return st;
}

void pw_bytes_free(pw_bytes *b) {
    if (!b) return;
    if (b->maplen)
        munmap(b->p, b->maplen);
    else
        free(b->p);
    memset(b, 0, sizeof *b);
}

/* Decode and validate bytes. With own (a malloc'd buffer or a mapping, maplen > 0,
 * holding the same bytes) the module keeps that buffer, else a copy; own is released
 * on failure. Caller owns the result (pw__module_destroy). */
static pw_module *load(const uint8_t *bytes, size_t len, uint8_t *own, size_t maplen, bool full,
                       pw_error *err) {
    pw_bytes ob = {own, len, maplen};
    if (len > UINT32_MAX) {
        /* Spans are 32-bit; no real module is this large. */
        pw_bytes_free(&ob);
        pw__fail(err, PW_ERR_MALFORMED, "implementation limit: module larger than 4 GiB");
        return NULL;
    }
    pw_module *m = calloc(1, sizeof *m);
    if (!m) {
        pw_bytes_free(&ob);
        pw__fail(err, PW_ERR_NOMEM, "out of memory");
        return NULL;
    }
    m->bytes = own ? own : malloc(len ? len : 1);
    if (!m->bytes) {
        free(m);
        pw__fail(err, PW_ERR_NOMEM, "out of memory");
        return NULL;
    }
    if (!own && len) memcpy(m->bytes, bytes, len);
    m->nbytes = len;
    m->bytes_map = own ? maplen : 0;
    if (pw__decode(m, err) != PW_OK || pw__validate_module(m, full, err) != PW_OK) {
        pw__module_destroy(m);
        return NULL;
    }
    return m;
}

/* Modules this small are always validated in full (module_new). */
#define VALIDATED_MIN 65536u

static pw_module *module_new(const uint8_t *bytes, size_t len, uint8_t *own, size_t maplen,
                             const pw_module_config *cfg, pw_error *err) {
    pw_error local;
    if (!err) err = &local;
    /* Bodies are ~all of validation (a quarter of a warm Ruby start), constant
     * expressions most of the rest (Ruby's 20,000): skip them for bytes
     * this engine build already validated (codecache.c, "validated records"). Below
     * VALIDATED_MIN bytes validating costs less than the record's file I/O (the engine
     * validates ~350 MB/s; opening, reading and touching a record ~20 us), so small
     * modules (`peri run hello.wasm`) neither read nor write one. */
    struct pw_ccref *cc = cfg && cfg->code_cache && len >= VALIDATED_MIN
                              ? pw__cc_open(cfg->code_cache, cfg->digest)
                              : NULL;
    bool known = cc && pw__cc_validated(cc);
    pw_module *m = load(bytes, len, own, maplen, !known, err);
    if (m && cc && !known) pw__cc_mark_validated(cc);
    pw__cc_ref_free(cc);
    if (!m) return NULL;
    if (pw__compile_module(m, cfg && cfg->compile_eagerly, err) != PW_OK) {
        pw__module_destroy(m);
        return NULL;
    }
    err->status = PW_OK;
    err->message[0] = 0;
    return m;
}

pw_module *pw_module_new(const uint8_t *bytes, size_t len, const pw_module_config *cfg,
                         pw_error *err) {
    return module_new(bytes, len, NULL, 0, cfg, err);
}

pw_module *pw_module_new_owned(uint8_t *bytes, size_t len, const pw_module_config *cfg,
                               pw_error *err) {
    if (!bytes) { /* nothing to own: an empty module (decode refuses it) */
        static const uint8_t none[1];
        return module_new(none, 0, NULL, 0, cfg, err);
    }
    return module_new(bytes, len, bytes, 0, cfg, err);
}

pw_module *pw_module_new_bytes(pw_bytes *b, const pw_module_config *cfg, pw_error *err) {
    pw_bytes own = *b;
    memset(b, 0, sizeof *b);
    if (!own.p) return pw_module_new_owned(NULL, 0, cfg, err);
    return module_new(own.p, own.len, own.p, own.maplen, cfg, err);
}

pw_status pw_module_validate(const uint8_t *bytes, size_t len, pw_error *err) {
    pw_error local;
    if (!err) err = &local;
    pw_module *m = load(bytes, len, NULL, 0, true, err);
    if (!m) return err->status;
    pw__module_destroy(m);
    err->status = PW_OK;
    err->message[0] = 0;
    return PW_OK;
}

void pw__module_destroy(pw_module *m) {
    if (!m) return;
    if (m->code) pw__compile_free(m->code);
    for (uint32_t i = 0; i < m->ntypes; i++) {
        pw_deftype *t = &m->types[i];
        if (t->form == PW_FORM_FUNC)
            free(t->u.func.types);
        else if (t->form == PW_FORM_STRUCT)
            free(t->u.strct.fields);
    }
    free(m->types);
    free(m->imports);
    free(m->func_types);
    if (m->funcs)
        for (uint32_t i = 0; i < m->nfuncs - m->nfunc_imports; i++)
            free(m->funcs[i].locals);
    free(m->funcs);
    free(m->tables);
    free(m->mems);
    free(m->globals);
    free(m->tag_types);
    free(m->exports);
    for (uint32_t i = 0; i < m->nelems; i++) {
        free(m->elems[i].funcs);
        free(m->elems[i].exprs);
    }
    free(m->elems);
    free(m->datas);
    free(m->func_declared);
    pw_bytes b = {m->bytes, m->nbytes, m->bytes_map};
    pw_bytes_free(&b);
    free(m);
}

void pw_module_free(pw_module *m) {
    pw__module_destroy(m);
}

uint32_t pw_module_import_count(const pw_module *m) {
    return m->nimports;
}

void pw_module_import(const pw_module *m, uint32_t i, pw_import_desc *out) {
    memset(out, 0, sizeof *out);
    if (i >= m->nimports) return;
    const pw_import *im = &m->imports[i];
    out->module = (const char *)m->bytes + im->module.off;
    out->module_len = im->module.len;
    out->name = (const char *)m->bytes + im->name.off;
    out->name_len = im->name.len;
    out->kind = im->kind;
    out->index = i;
}

uint32_t pw_module_export_count(const pw_module *m) {
    return m->nexports;
}

void pw_module_export(const pw_module *m, uint32_t i, pw_export_desc *out) {
    memset(out, 0, sizeof *out);
    if (i >= m->nexports) return;
    out->name = (const char *)m->bytes + m->exports[i].name.off;
    out->name_len = m->exports[i].name.len;
    out->kind = m->exports[i].kind;
}

const pw_export *pw__export_find(const pw_module *m, const char *name, size_t name_len) {
    for (uint32_t i = 0; i < m->nexports; i++) {
        const pw_export *e = &m->exports[i];
        if (e->name.len == name_len && memcmp(m->bytes + e->name.off, name, name_len) == 0)
            return e;
    }
    return NULL;
}

void pw__functype_view(const pw_deftype *t, pw_functype *out) {
    out->nparams = t->u.func.nparams;
    out->nresults = t->u.func.nresults;
    out->params = t->u.func.types;
    out->results = t->u.func.types + t->u.func.nparams;
}

bool pw_module_export_functype(const pw_module *m, const char *name, size_t name_len,
                               pw_functype *out) {
    const pw_export *e = pw__export_find(m, name, name_len);
    if (!e || e->kind != PW_EXTERN_FUNC) return false;
    const pw_deftype *t = pw__functype_of(m, e->index);
    if (!t) return false;
    pw__functype_view(t, out);
    return true;
}
