/*
 * global.c — global variables (store objects, shared between instances by linking).
 */
#include "wasm/runtime.h"

pw_global *pw_global_new(pw_store *s, pw_valtype type, bool mutable_, pw_val init, pw_error *err) {
    pw_global *g = pw__store_alloc_obj(s, sizeof *g, PW_OBJ_GLOBAL);
    if (!g) {
        pw__fail(err, PW_ERR_NOMEM, "out of memory");
        return NULL;
    }
    g->type = type;
    g->mut = mutable_;
    g->val.u64 = init.bits;
    return g;
}

uint64_t pw_global_get_hi(const pw_global *g) {
    return g->type == PW_VT_V128 ? g->hi : 0;
}

pw_val pw_global_get(const pw_global *g) {
    pw_val v;
    v.bits = g->val.u64;
    return v;
}

pw_valtype pw_global_type(const pw_global *g) {
    return g->type;
}
