/*
 * func.c — function instances (Wasm and host), the embedder's call entry point
 * pw_call, and the host-call context (pw_ctx_*).
 */
#include "wasm/jit/jit.h"
#include "wasm/runtime.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Nested host -> Wasm -> host -> ... entries recurse on the C stack; bound them. */
#define PW_MAX_HOST_DEPTH 200u

/* pw_func.nparams/nresults count cells: a v128 takes two (peri/wasm.h). */
static uint32_t cells(const pw_valtype *t, uint32_t n) {
    uint32_t k = n;
    for (uint32_t i = 0; i < n; i++)
        k += t[i] == PW_VT_V128;
    return k;
}

static pw_func *new_host(pw_store *s, uint32_t np, const pw_valtype *params, uint32_t nr,
                         const pw_valtype *results, pw_host_fn fn, void *env, pw_error *err) {
    pw_valtype *types = malloc((np + nr + 1) * sizeof *types);
    if (!types) goto oom;
    if (np) memcpy(types, params, np * sizeof *types);
    if (nr) memcpy(types + np, results, nr * sizeof *types);
    bool oom = false;
    uint32_t id = pw__store_type_id(s, np, nr, types, &oom);
    if (oom) {
        free(types);
        goto oom;
    }
    pw_func *f = pw__store_alloc_obj(s, sizeof *f, PW_OBJ_FUNC);
    if (!f) {
        free(types);
        goto oom;
    }
    f->hdr.type_id = id;
    f->host = fn;
    f->env = env;
    f->nparams = cells(types, np);
    f->nresults = cells(types + np, nr);
    f->ft = (pw_functype){np, nr, types, types + np};
    return f;
oom:
    pw__fail(err, PW_ERR_NOMEM, "out of memory");
    return NULL;
}

pw_func *pw_func_new_host(pw_store *s, const pw_functype *type, pw_host_fn fn, void *env,
                          pw_error *err) {
    if (!type || !fn) {
        pw__fail(err, PW_ERR_ARG, "pw_func_new_host: missing type or function");
        return NULL;
    }
    return new_host(s, type->nparams, type->params, type->nresults, type->results, fn, env, err);
}

pw_func *pw_func_new_host_for_import(pw_store *s, const pw_module *m, uint32_t import_index,
                                     pw_host_fn fn, void *env, pw_error *err) {
    if (import_index >= m->nimports || m->imports[import_index].kind != PW_EXTERN_FUNC || !fn) {
        pw__fail(err, PW_ERR_ARG, "import %u is not a function import", import_index);
        return NULL;
    }
    uint32_t ti = m->imports[import_index].u.func_type;
    const pw_deftype *t = &m->types[ti];
    pw_func *f = new_host(s, t->u.func.nparams, t->u.func.types, t->u.func.nresults,
                          t->u.func.types + t->u.func.nparams, fn, env, err);
    if (!f) return NULL;
    /* The type may use the module's own types: identify it by (module, index). */
    bool oom = false;
    uint32_t id = pw__store_type_id_mod(s, m, ti, &oom);
    if (oom) {
        pw__fail(err, PW_ERR_NOMEM, "out of memory");
        return NULL;
    }
    f->hdr.type_id = id;
    f->tmod = m;
    f->tidx = ti;
    return f;
}

pw_func *pw__func_create_wasm(pw_store *s, pw_instance *inst, uint32_t idx) {
    const pw_module *m = inst->mod;
    pw_func *f = pw__store_alloc_obj(s, sizeof *f, PW_OBJ_FUNC);
    if (!f) return NULL;
    uint32_t ti = m->func_types[idx];
    const pw_deftype *t = &m->types[ti];
    f->hdr.type_id = inst->type_ids[ti];
    f->tmod = m;
    f->tidx = ti;
    f->inst = inst;
    f->code = &m->code->funcs[idx - m->nfunc_imports];
    uint32_t np = t->u.func.nparams, nr = t->u.func.nresults;
    f->nparams = cells(t->u.func.types, np);
    f->nresults = cells(t->u.func.types + np, nr);
    f->ft = (pw_functype){np, nr, t->u.func.types, t->u.func.types + np};
    return f;
}

void pw_func_type(const pw_func *f, pw_functype *out) {
    *out = f->ft;
}

pw_ref pw_func_ref(pw_func *f) {
    return (pw_ref)f;
}

pw_func *pw_ref_func(pw_ref r) {
    if (!r || (r & 1)) return NULL;
    pw_obj *o = (pw_obj *)r;
    return o->kind == PW_OBJ_FUNC ? (pw_func *)o : NULL;
}

pw_status pw__invoke(pw_store *s, pw_func *f, pw_error *err) {
    pw_slot *argp = s->stack_top;
    uint32_t need = f->nparams > f->nresults ? f->nparams : f->nresults;
    if (argp + need > s->stack_end || s->host_depth >= PW_MAX_HOST_DEPTH) {
        s->trap = PW_TRAP_STACK_EXHAUSTED;
        return pw__trap(err, PW_TRAP_STACK_EXHAUSTED);
    }
    s->host_depth++;
    s->trap = PW_TRAP_NONE;
    if (s->jit_auto && !f->host) pw__tier_enter(s, f);
    pw_status st = f->host ? pw__call_host(s, NULL, f, argp) : pw__exec(s, f, argp);
    if (s->jit_auto && !f->host) pw__tier_leave(s, f);
    s->host_depth--;
    if (st == PW_ERR_TRAP && err) {
        err->status = PW_ERR_TRAP;
        err->trap = s->trap;
        if (s->trap == PW_TRAP_HOST && s->trap_msg[0])
            snprintf(err->message, sizeof err->message, "%s", s->trap_msg);
        else
            snprintf(err->message, sizeof err->message, "%s",
                     pw_trap_message(s->trap, PW_MSG_SPEC));
    } else if (st != PW_OK && err) {
        err->status = st;
        snprintf(err->message, sizeof err->message, "%s",
                 st == PW_ERR_EXCEPTION ? "uncaught exception"
                 : st == PW_ERR_OOM     ? "out of memory: the store's memory cap was hit"
                                        : "call failed");
    }
    return st;
}

pw_status pw_call(pw_store *s, pw_func *f, const pw_val *args, uint32_t nargs, pw_val *results,
                  uint32_t nresults, pw_error *err) {
    if (!f || nargs != f->nparams || nresults != f->nresults)
        return pw__fail(err, PW_ERR_ARG, "pw_call: arity mismatch");
    if (!pw__store_ensure_stack(s)) return pw__fail(err, PW_ERR_NOMEM, "out of memory");
    pw_slot *argp = s->stack_top;
    uint32_t need = nargs > nresults ? nargs : nresults;
    if (argp + need > s->stack_end) {
        s->trap = PW_TRAP_STACK_EXHAUSTED;
        return pw__trap(err, PW_TRAP_STACK_EXHAUSTED);
    }
    for (uint32_t i = 0; i < nargs; i++)
        argp[i].u64 = args[i].bits;
    s->trap_msg[0] = 0;
    pw_status st = pw__invoke(s, f, err);
    if (st == PW_OK)
        for (uint32_t i = 0; i < nresults; i++)
            results[i].bits = argp[i].u64;
    if (st == PW_OK && err) {
        err->status = PW_OK;
        err->message[0] = 0;
    }
    return st;
}

pw_store *pw_ctx_store(pw_call_ctx *cx) {
    return cx->store;
}

pw_instance *pw_ctx_instance(pw_call_ctx *cx) {
    return cx->inst;
}

uint8_t *pw_ctx_memory(pw_call_ctx *cx, uint64_t *size) {
    if (!cx->inst || cx->inst->mod->nmems == 0) {
        if (size) *size = 0;
        return NULL;
    }
    if (size) *size = cx->inst->mem0->size;
    return cx->inst->mem0->data;
}

pw_status pw_ctx_trap(pw_call_ctx *cx, const char *fmt, ...) {
    pw_store *s = cx->store;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(s->trap_msg, sizeof s->trap_msg, fmt, ap);
    va_end(ap);
    s->trap = PW_TRAP_HOST;
    return PW_ERR_TRAP;
}
