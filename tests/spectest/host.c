/*
 * host.c — the `spectest` host module (MANIFEST.md §7): print functions that do
 * nothing, four immutable globals, a funcref table (10..20) and a memory (1..2 pages),
 * and `table64`, the same table with i64 addresses. One instance per script, created
 * in the script's store and shared by every module of the script. The objects have
 * fixed types; the engine's import matching decides whether a module may import them
 * ("incompatible import type").
 */
#include "st.h"

#include <stdlib.h>
#include <string.h>

enum { ST_NFUNC = 7, ST_NGLOBAL = 4, ST_NEXPORTS = ST_NFUNC + ST_NGLOBAL + 3 };

struct st_host {
    struct {
        const char *name;
        pw_extern ext;
    } exports[ST_NEXPORTS];
    int n;
};

static pw_status st_print(pw_call_ctx *cx, void *env, const pw_val *args, pw_val *results) {
    (void)cx, (void)env, (void)args, (void)results;
    return PW_OK;
}

static const pw_valtype st_t_i32[] = {PW_VT_I32};
static const pw_valtype st_t_i64[] = {PW_VT_I64};
static const pw_valtype st_t_f32[] = {PW_VT_F32};
static const pw_valtype st_t_f64[] = {PW_VT_F64};
static const pw_valtype st_t_i32_f32[] = {PW_VT_I32, PW_VT_F32};
static const pw_valtype st_t_f64_f64[] = {PW_VT_F64, PW_VT_F64};

static const struct {
    const char *name;
    uint32_t n;
    const pw_valtype *params;
} st_funcs[ST_NFUNC] = {
    {"print", 0, NULL},
    {"print_i32", 1, st_t_i32},
    {"print_i64", 1, st_t_i64},
    {"print_f32", 1, st_t_f32},
    {"print_f64", 1, st_t_f64},
    {"print_i32_f32", 2, st_t_i32_f32},
    {"print_f64_f64", 2, st_t_f64_f64},
};

static bool st_add(st_host *h, const char *name, pw_extern ext) {
    h->exports[h->n].name = name;
    h->exports[h->n].ext = ext;
    h->n++;
    return true;
}

st_host *st_host_new(pw_store *s, pw_error *err) {
    st_host *h = calloc(1, sizeof *h);
    if (!h) {
        err->status = PW_ERR_NOMEM;
        strcpy(err->message, "out of memory");
        return NULL;
    }
    for (int i = 0; i < ST_NFUNC; i++) {
        pw_functype ft = {st_funcs[i].n, 0, st_funcs[i].params, NULL};
        pw_extern e = {.kind = PW_EXTERN_FUNC};
        e.u.func = pw_func_new_host(s, &ft, st_print, NULL, err);
        if (!e.u.func) goto fail;
        st_add(h, st_funcs[i].name, e);
    }
    static const struct {
        const char *name;
        pw_valtype type;
        uint64_t bits;
    } globals[ST_NGLOBAL] = {
        {"global_i32", PW_VT_I32, 666},
        {"global_i64", PW_VT_I64, 666},
        {"global_f32", PW_VT_F32, 0x4426a666u},
        {"global_f64", PW_VT_F64, 0x4084d4cccccccccdull},
    };
    for (int i = 0; i < ST_NGLOBAL; i++) {
        pw_val v = {.bits = 0};
        switch (PW_VT_KIND(globals[i].type)) {
        case PW_K_I32: v.i32 = (int32_t)globals[i].bits; break;
        case PW_K_F32: v.f32 = (uint32_t)globals[i].bits; break;
        default: v.bits = globals[i].bits; break;
        }
        pw_extern e = {.kind = PW_EXTERN_GLOBAL};
        e.u.global = pw_global_new(s, globals[i].type, false, v, err);
        if (!e.u.global) goto fail;
        st_add(h, globals[i].name, e);
    }
    pw_extern t = {.kind = PW_EXTERN_TABLE};
    t.u.table = pw_table_new(s, PW_VT_FUNCREF, 10, 20, PW_NULL_REF, err);
    if (!t.u.table) goto fail;
    st_add(h, "table", t);
    pw_extern t64 = {.kind = PW_EXTERN_TABLE};
    t64.u.table = pw_table_new64(s, PW_VT_FUNCREF, 10, 20, PW_NULL_REF, err);
    if (!t64.u.table) goto fail;
    st_add(h, "table64", t64);
    pw_extern m = {.kind = PW_EXTERN_MEMORY};
    m.u.memory = pw_memory_new(s, 1, 2, err);
    if (!m.u.memory) goto fail;
    st_add(h, "memory", m);
    return h;
fail:
    free(h);
    return NULL;
}

bool st_host_lookup(const st_host *h, const char *name, size_t len, pw_extern *out) {
    for (int i = 0; i < h->n; i++)
        if (strlen(h->exports[i].name) == len && memcmp(h->exports[i].name, name, len) == 0) {
            *out = h->exports[i].ext;
            return true;
        }
    return false;
}

void st_host_free(st_host *h) {
    free(h);
}
