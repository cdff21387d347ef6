/*
 * host_ext.c — small embedder additions for guest ABIs that exchange GC values and
 * exceptions with the host (the room's 豫言 ABI): a host function throwing a
 * module-defined tag, and read-only introspection of a module's import types, tag
 * types, defined types and custom sections.
 */
#include "wasm/gc.h"
#include "wasm/module.h"
#include "wasm/runtime.h"

#include <string.h>

pw_status pw_ctx_throw(pw_call_ctx *cx, pw_tag *tag, const pw_val *args, uint32_t nargs) {
    pw_store *s = cx->store;
    if (nargs != tag->nparams) return pw_ctx_trap(cx, "exception payload arity mismatch");
    pw_exn *e = pw__gc_new_exn(s, tag, (const pw_slot *)args, NULL); /* GC heap */
    if (!e) return PW_ERR_OOM;
    s->exn = e;
    return PW_ERR_EXCEPTION;
}

bool pw_module_import_functype(const pw_module *m, uint32_t i, pw_functype *out) {
    if (i >= m->nimports || m->imports[i].kind != PW_EXTERN_FUNC) return false;
    pw__functype_view(&m->types[m->imports[i].u.func_type], out);
    return true;
}

bool pw_module_export_tagtype(const pw_module *m, const char *name, size_t name_len,
                              pw_functype *out) {
    const pw_export *e = pw__export_find(m, name, name_len);
    if (!e || e->kind != PW_EXTERN_TAG) return false;
    pw__functype_view(&m->types[m->tag_types[e->index]], out);
    return true;
}

int pw_module_type_form(const pw_module *m, uint32_t ti) {
    return ti < m->ntypes ? m->types[ti].form : 0;
}

uint32_t pw_module_type_nfields(const pw_module *m, uint32_t ti) {
    if (ti >= m->ntypes) return 0;
    const pw_deftype *t = &m->types[ti];
    return t->form == PW_FORM_STRUCT ? t->u.strct.nfields : t->form == PW_FORM_ARRAY ? 1 : 0;
}

bool pw_module_type_field(const pw_module *m, uint32_t ti, uint32_t i, pw_valtype *type,
                          uint8_t *packed, bool *mut) {
    if (i >= pw_module_type_nfields(m, ti)) return false;
    const pw_deftype *t = &m->types[ti];
    const pw_field *f = t->form == PW_FORM_ARRAY ? &t->u.array : &t->u.strct.fields[i];
    *type = f->type;
    *packed = f->packed;
    *mut = f->mut != 0;
    return true;
}

/* The module was validated, so the section framing is sound; still bound every read. */
static bool leb(const uint8_t *p, size_t n, size_t *at, uint32_t *v) {
    uint32_t r = 0;
    for (int sh = 0; sh < 35 && *at < n; sh += 7) {
        uint8_t b = p[(*at)++];
        r |= (uint32_t)(b & 0x7F) << sh;
        if (!(b & 0x80)) {
            *v = r;
            return true;
        }
    }
    return false;
}

const uint8_t *pw_module_custom_section(const pw_module *m, const char *name, size_t name_len,
                                        uint32_t nth, size_t *len) {
    const uint8_t *p = m->bytes;
    size_t n = m->nbytes, at = 8;
    while (at < n) {
        uint8_t id = p[at++];
        uint32_t size, nl;
        if (!leb(p, n, &at, &size) || size > n - at) return NULL;
        size_t end = at + size;
        if (id == 0) {
            size_t q = at;
            if (leb(p, end, &q, &nl) && nl <= end - q && nl == name_len &&
                memcmp(p + q, name, nl) == 0 && nth-- == 0) {
                *len = end - (q + nl);
                return p + q + nl;
            }
        }
        at = end;
    }
    return NULL;
}
