/*
 * yuyan.c — guest ABI 1: the 豫言 file-style host (research §2.3-§2.5). A module is a
 * 豫言 program when it imports from 标准库 / 构建基础 / yuyan:gc-host/v1 /
 * yuyan:browser/v1, exports yy_bytes, or carries a 豫言边界 section. Its function
 * imports bind by (module, field): the standard library (yuyan_std.c) with the exact
 * Wasm types of their boundary shapes (a mismatch is a link failure), the legacy
 * gc-host `call` and browser `check`/`fail`, and a trapping stub for everything else
 * ("接口函数未绑定：<模块>.<字段>"). Values are built with the module's own types,
 * found through its prototype globals (yy_bytes, yy_tuple, yy_big, yy_float,
 * yy_extern); catchable errors are thrown with its exported tag yy_错误.
 * The run: _start, then 豫言操作系统启动/启动程序 when exported (the rule; the
 * reference host also wants a 豫言边界 section, which every module with typed imports
 * has). An exception escaping the run shows as V8's "illegal cast" (decision 5).
 */
#include "yuyan_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define START_EXPORT "豫言操作系统启动/启动程序"
#define ERR_TAG      "yy_错误"
#define UNBOUND      "接口函数未绑定："

struct yy_bind {
    yy_state *y;
    const yy_fn *fn;
    yy_sig sig;
    uint32_t res_type; /* module type index of a str/tuple result, UINT32_MAX: none */
    char *msg;         /* stubs: the trap message (owned) */
};

static bool eq(const char *a, size_t n, const char *lit) {
    return strlen(lit) == n && memcmp(a, lit, n) == 0;
}

/* ---------------------------------------------------------------- choosing the ABI */

static bool yy_matches(const pw_module *m) {
    uint32_t n = pw_module_import_count(m);
    for (uint32_t i = 0; i < n; i++) {
        pw_import_desc d;
        pw_module_import(m, i, &d);
        if (eq(d.module, d.module_len, YY_STD) || eq(d.module, d.module_len, YY_BUILD) ||
            eq(d.module, d.module_len, YY_GC) || eq(d.module, d.module_len, YY_WEB))
            return true;
    }
    uint32_t ne = pw_module_export_count(m);
    for (uint32_t i = 0; i < ne; i++) {
        pw_export_desc d;
        pw_module_export(m, i, &d);
        if (eq(d.name, d.name_len, "yy_bytes")) return true;
    }
    size_t len;
    return pw_module_custom_section(m, YY_BOUND, sizeof YY_BOUND - 1, 0, &len) != NULL;
}

/* ---------------------------------------------------------------- ending the run */

/* Copies msg into rs->end_msg, cut at a UTF-8 boundary. */
static void set_end(pr_run_state *rs, int how, const char *msg, size_t n) {
    size_t max = sizeof rs->end_msg - 1;
    if (n > max) {
        n = max;
        while (n > 0 && ((uint8_t)msg[n] & 0xC0) == 0x80)
            n--;
    }
    memcpy(rs->end_msg, msg, n);
    rs->end_msg[n] = 0;
    rs->end = how;
}

pw_status pr__yy_fail(yy_call *c, const char *fmt, ...) {
    char buf[2048]; /* > end_msg: set_end cuts at a character boundary */
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    set_end(c->rs, PR_END_HOST, buf,
            n < 0                    ? 0
            : (size_t)n < sizeof buf ? (size_t)n
                                     : sizeof buf - 1);
    return pw_ctx_trap(c->cx, "%s", c->rs->end_msg);
}

pw_status pr__yy_platform(yy_call *c, const char *msg) {
    set_end(c->rs, PR_END_PLATFORM, msg, strlen(msg));
    return pw_ctx_trap(c->cx, "%s", msg);
}

bool pr__yy_text(pb_buf *b, const uint8_t *s, size_t n) {
    return pr__utf8_lenient(b, s, n);
}

/* ---------------------------------------------------------------- the module's types */

static bool struct_of(const pw_module *m, uint32_t ti, pw_valtype want) {
    pw_valtype t;
    uint8_t pk;
    bool mut;
    /* Exactly one field: the host builds these structs from one value (a second field
     * would be filled from nothing, and a reference field from host memory). */
    return pw_module_type_form(m, ti) == 0x5F && pw_module_type_nfields(m, ti) == 1 &&
           pw_module_type_field(m, ti, 0, &t, &pk, &mut) && !pk && t == want;
}

static bool type_fits(const pw_module *m, int which, uint32_t ti) {
    switch (which) {
    case 0: return pr__yy_type_is_bytes(m, ti);
    case 1: return pr__yy_type_is_tuple(m, ti);
    case 2: return struct_of(m, ti, PW_VT_I64);
    case 3: return struct_of(m, ti, PW_VT_F64);
    default:
        return struct_of(m, ti, PW_VT_EXTERNREF) || struct_of(m, ti, PW_VT_ABSREF(PW_HT_EXTERN, 0));
    }
}

/* The type index of a prototype global: its declared heap type when concrete, else
 * the first type of the right shape its value belongs to. */
static bool prototype(yy_state *y, pw_instance *inst, int which, const char *name, uint32_t *out) {
    const pw_module *m = y->rs->prog->module;
    pw_extern ex;
    if (!pw_instance_export(inst, name, strlen(name), &ex) || ex.kind != PW_EXTERN_GLOBAL)
        return false;
    pw_valtype t = pw_global_type(ex.u.global);
    if (PW_VT_KIND(t) != PW_K_REF) return false;
    uint32_t h = PW_VT_HEAP(t);
    if (!(h & PW_HT_ABS)) {
        if (!type_fits(m, which, h)) return false;
        *out = h;
        return true;
    }
    pw_ref v = pw_global_get(ex.u.global).ref;
    if (!v) return false;
    for (uint32_t ti = 0; pw_module_type_form(m, ti) != 0; ti++) {
        if (type_fits(m, which, ti) && pw_ref_test_type(y->rs->store, inst, v, ti)) {
            *out = ti;
            return true;
        }
    }
    return false;
}

static void prepare(yy_state *y, pw_instance *inst) {
    if (y->ready || !inst) return;
    y->ready = true;
    const pw_module *m = y->rs->prog->module;
    bool hb = y->have_bytes, ht = y->have_tuple; /* from import types (resolve) */
    uint32_t tb = y->t_bytes, tt = y->t_tuple;
    y->have_bytes = prototype(y, inst, 0, "yy_bytes", &y->t_bytes);
    y->have_tuple = prototype(y, inst, 1, "yy_tuple", &y->t_tuple);
    y->have_big = prototype(y, inst, 2, "yy_big", &y->t_big);
    y->have_float = prototype(y, inst, 3, "yy_float", &y->t_float);
    y->have_ext = prototype(y, inst, 4, "yy_extern", &y->t_ext);
    if (!y->have_bytes && hb) y->have_bytes = true, y->t_bytes = tb;
    if (!y->have_tuple && ht) y->have_tuple = true, y->t_tuple = tt;
    /* yy_错误 must carry one reference a $bytes value may be stored in. */
    pw_functype ft;
    pw_extern ex;
    if (pw_module_export_tagtype(m, ERR_TAG, sizeof ERR_TAG - 1, &ft) && ft.nparams == 1 &&
        pw_instance_export(inst, ERR_TAG, sizeof ERR_TAG - 1, &ex) && ex.kind == PW_EXTERN_TAG) {
        pw_valtype p = ft.params[0];
        uint32_t h = PW_VT_HEAP(p);
        bool fits = PW_VT_KIND(p) == PW_K_REF &&
                    ((h & PW_HT_ABS) ? ((h & 0xFF) == PW_HT_EQ || (h & 0xFF) == PW_HT_ANY ||
                                        (h & 0xFF) == PW_HT_ARRAY)
                                     : (y->have_bytes && h == y->t_bytes));
        if (fits) y->tag_err = ex.u.tag;
    }
}

static pw_status need(yy_call *c, bool have, const char *proto) {
    if (have) return PW_OK;
    return pr__yy_fail(c, "程序没有导出原型 %s", proto);
}

static pw_status alloc_failed(yy_call *c, const pw_error *pe) {
    if (pe->status == PW_ERR_OOM) return pr__yy_platform(c, "隔离运行失败：内存超过上限");
    if (pe->status == PW_ERR_NOMEM) return pr__yy_platform(c, "隔离运行失败：内存不足");
    return pr__yy_fail(c, "宿主无法构造值：%s", pe->message);
}

static pw_instance *inst_of(yy_call *c) {
    return c->rs->inst ? c->rs->inst : pw_ctx_instance(c->cx);
}

pw_status pr__yy_new_str(yy_call *c, const void *bytes, size_t n, pw_ref *out) {
    pw_status st = need(c, c->y->have_bytes, "yy_bytes");
    if (st != PW_OK) return st;
    if (n > UINT32_MAX) return pr__yy_platform(c, "隔离运行失败：内存超过上限");
    pw_error pe = {0};
    *out =
        pw_array_new_bytes(pw_ctx_store(c->cx), inst_of(c), c->y->t_bytes, bytes, (uint32_t)n, &pe);
    return *out ? PW_OK : alloc_failed(c, &pe);
}

pw_status pr__yy_new_tuple(yy_call *c, uint32_t n, pw_ref *out) {
    pw_status st = need(c, c->y->have_tuple, "yy_tuple");
    if (st != PW_OK) return st;
    pw_error pe = {0};
    *out = pw_array_new(pw_ctx_store(c->cx), inst_of(c), c->y->t_tuple, n, NULL, &pe);
    return *out ? PW_OK : alloc_failed(c, &pe);
}

pw_status pr__yy_new_pair(yy_call *c, bool b, const char *s, pw_ref *out) {
    pw_ref str;
    pw_status st = pr__yy_new_str(c, s, strlen(s), &str);
    if (st != PW_OK) return st;
    /* str is not rooted while the tuple is allocated: hold it through a handle. */
    pw_store *ps = pw_ctx_store(c->cx);
    pw_error pe = {0};
    pw_handle h = pw_handle_new(ps, str, &pe);
    if (!h) return pr__yy_platform(c, "隔离运行失败：内存不足");
    st = pr__yy_new_tuple(c, 2, out);
    if (st == PW_OK) {
        pw_array_set(*out, 0, (pw_val){.ref = pw_i31_new(b ? 1 : 0)});
        pw_array_set(*out, 1, (pw_val){.ref = pw_handle_get(ps, h)});
    }
    pw_handle_free(ps, h);
    return st;
}

pw_status pr__yy_raise(yy_call *c, const char *msg, size_t n) {
    if (!c->y->tag_err) return pr__yy_fail(c, "%.*s", (int)n, msg);
    pw_ref s;
    pw_status st = pr__yy_new_str(c, msg, n, &s);
    if (st != PW_OK) return st;
    pw_val v = {.ref = s};
    return pw_ctx_throw(c->cx, c->y->tag_err, &v, 1);
}

/* ---------------------------------------------------------------- typed imports */

static pw_status arg_str(yy_call *c, pw_ref r, yy_val *v) {
    uint8_t *p = pw_array_bytes(r, &v->n);
    if (!p) return pr__yy_fail(c, "宿主函数的“串”参数不是字节串");
    v->s = p;
    return PW_OK;
}

static pw_status host_std(pw_call_ctx *cx, void *env, const pw_val *args, pw_val *results) {
    yy_bind *b = env;
    yy_call c = {cx, b->y, b->y->rs};
    prepare(c.y, inst_of(&c));
    yy_val a[YY_MAX_PARAMS];
    memset(a, 0, sizeof a);
    for (uint32_t k = 0; k < b->sig.nparams; k++) {
        switch (b->sig.params[k]) {
        case YS_INT: a[k].i = args[k].i64; break;
        case YS_FLOAT: memcpy(&a[k].f, &args[k].f64, 8); break;
        case YS_BOOL: a[k].i = args[k].i32 != 0; break;
        case YS_STR: {
            pw_status st = arg_str(&c, args[k].ref, &a[k]);
            if (st != PW_OK) return st;
            break;
        }
        default: a[k].ref = args[k].ref; break;
        }
    }
    yy_val r;
    memset(&r, 0, sizeof r);
    pw_status st = b->fn->impl(&c, a, &r);
    if (st != PW_OK) return st;
    switch (b->sig.result) {
    case YS_INT: results[0].i64 = r.i; break;
    case YS_FLOAT: memcpy(&results[0].f64, &r.f, 8); break;
    case YS_BOOL: results[0].i32 = r.i != 0; break;
    case YS_UNIT: break;
    default:
        /* The value was built with the prototype's type; the import promised its own
         * type index: they must agree, or the guest would see a wrongly typed object. */
        if (b->res_type != UINT32_MAX &&
            !pw_ref_test_type(pw_ctx_store(cx), inst_of(&c), r.ref, b->res_type))
            return pr__yy_fail(&c, "原型类型与导入类型不一致：%s.%s", b->fn->module, b->fn->name);
        results[0].ref = r.ref;
        break;
    }
    return PW_OK;
}

static pw_status host_stub(pw_call_ctx *cx, void *env, const pw_val *args, pw_val *results) {
    (void)args, (void)results;
    yy_bind *b = env;
    yy_call c = {cx, b->y, b->y->rs};
    return pr__yy_fail(&c, "%s", b->msg);
}

/* ---------------------------------------------------------------- legacy imports */

/* Is r a $tuple (so its elements are references)? */
static bool is_tuple(yy_call *c, pw_ref r) {
    return c->y->have_tuple && pw_ref_kind_of(r) == PW_REF_ARRAY &&
           pw_ref_test_type(pw_ctx_store(c->cx), inst_of(c), r, c->y->t_tuple);
}

/* Nested (in-tuple) scalars: i31 or $big for 整, $float for 小, i31 0/1 for 爻. Every
 * guest value is checked for its exact type before the host reads it: a struct's
 * field 0 is read only from the module's own $big / $float (one field of that type). */
static bool nested_int(yy_call *c, pw_ref r, int64_t *out) {
    if (pw_ref_kind_of(r) == PW_REF_I31) {
        *out = pw_i31_get_s(r);
        return true;
    }
    pw_store *s = pw_ctx_store(c->cx);
    pw_val v;
    if (c->y->have_big && pw_ref_kind_of(r) == PW_REF_STRUCT &&
        pw_ref_test_type(s, inst_of(c), r, c->y->t_big) && pw_struct_get(s, r, 0, true, &v)) {
        *out = v.i64;
        return true;
    }
    return false;
}

static bool nested_float(yy_call *c, pw_ref r, double *out) {
    pw_store *s = pw_ctx_store(c->cx);
    pw_val v;
    int64_t i;
    if (c->y->have_float && pw_ref_kind_of(r) == PW_REF_STRUCT &&
        pw_ref_test_type(s, inst_of(c), r, c->y->t_float) && pw_struct_get(s, r, 0, false, &v)) {
        memcpy(out, &v.f64, 8);
        return true;
    }
    if (!nested_int(c, r, &i)) return false;
    *out = (double)i;
    return true;
}

/* A 串 value: an i8 array, of the module's $bytes type when it has one. */
static const uint8_t *nested_bytes(yy_call *c, pw_ref r, uint32_t *n) {
    if (pw_ref_kind_of(r) != PW_REF_ARRAY) return NULL;
    if (c->y->have_bytes && !pw_ref_test_type(pw_ctx_store(c->cx), inst_of(c), r, c->y->t_bytes))
        return NULL;
    return pw_array_bytes(r, n);
}

static pw_status nested_out(yy_call *c, uint8_t shape, const yy_val *r, pw_ref *out) {
    pw_error pe = {0};
    pw_store *s = pw_ctx_store(c->cx);
    switch (shape) {
    case YS_UNIT: *out = PW_NULL_REF; return PW_OK;
    case YS_BOOL: *out = pw_i31_new(r->i ? 1 : 0); return PW_OK;
    case YS_INT:
        if (r->i >= -(1 << 30) && r->i < (1 << 30)) {
            *out = pw_i31_new((uint32_t)r->i);
            return PW_OK;
        } else {
            pw_status st = need(c, c->y->have_big, "yy_big");
            if (st != PW_OK) return st;
            pw_val f = {.i64 = r->i};
            *out = pw_struct_new(s, inst_of(c), c->y->t_big, &f, &pe);
            return *out ? PW_OK : alloc_failed(c, &pe);
        }
    case YS_FLOAT: {
        pw_status st = need(c, c->y->have_float, "yy_float");
        if (st != PW_OK) return st;
        pw_val f;
        memcpy(&f.f64, &r->f, 8);
        *out = pw_struct_new(s, inst_of(c), c->y->t_float, &f, &pe);
        return *out ? PW_OK : alloc_failed(c, &pe);
    }
    default: *out = r->ref; return PW_OK;
    }
}

/* Ends the run with "<what>：<primitive name>" (the name decoded leniently: it is the
 * program's bytes, and the result JSON needs valid UTF-8). */
static pw_status bad_call(yy_call *c, const char *what, const uint8_t *name, uint32_t n) {
    pb_buf m = {0};
    pw_status st;
    size_t max = sizeof c->rs->end_msg; /* the message is cut there anyway */
    if (pb_buf_puts(&m, what) && pb_buf_puts(&m, "：") && pr__yy_text(&m, name, n < max ? n : max))
        st = pr__yy_fail(c, "%s", m.p);
    else
        st = pr__yy_platform(c, "隔离运行失败：内存不足");
    pb_buf_free(&m);
    return st;
}

static pw_status host_gc_call(pw_call_ctx *cx, void *env, const pw_val *args, pw_val *results) {
    yy_bind *b = env;
    yy_call c = {cx, b->y, b->y->rs};
    prepare(c.y, inst_of(&c));
    uint32_t nl;
    const uint8_t *name = nested_bytes(&c, args[0].ref, &nl);
    if (!name) return pr__yy_fail(&c, "宿主原语名不是字节串");
    static const char pre[] = "豫言_";
    size_t pl = sizeof pre - 1;
    const uint8_t *fnm = name;
    size_t fl = nl;
    if (fl > pl && memcmp(fnm, pre, pl) == 0) fnm += pl, fl -= pl;
    const yy_fn *fn = pr__yy_std_find(YY_STD, sizeof YY_STD - 1, (const char *)fnm, fl);
    if (!fn) return bad_call(&c, UNBOUND YY_GC ".call", name, nl);
    yy_sig sig;
    if (!pr__yy_sig_parse(fn->sig, strlen(fn->sig), &sig)) return pr__yy_fail(&c, "宿主签名有误");
    pw_ref tup = args[1].ref;
    /* Elements are read as references: the argument list must be a $tuple of exactly
     * the primitive's arity (no arguments: null or an empty $tuple). */
    if ((tup || sig.nparams) && !is_tuple(&c, tup))
        return bad_call(&c, "宿主原语参数不是元组", name, nl);
    if (pw_array_len(tup) != sig.nparams) return bad_call(&c, "宿主原语参数个数不符", name, nl);
    yy_val a[YY_MAX_PARAMS];
    memset(a, 0, sizeof a);
    for (uint32_t k = 0; k < sig.nparams; k++) {
        pw_val e;
        bool ok = pw_array_get(tup, k, false, &e);
        switch (ok ? sig.params[k] : YS_NONE) {
        case YS_INT:
        case YS_BOOL: ok = nested_int(&c, e.ref, &a[k].i); break;
        case YS_FLOAT: ok = nested_float(&c, e.ref, &a[k].f); break;
        case YS_STR: ok = (a[k].s = nested_bytes(&c, e.ref, &a[k].n)) != NULL; break;
        case YS_TUPLE:
            ok = is_tuple(&c, e.ref);
            a[k].ref = e.ref;
            break;
        default: ok = false; break; /* no primitive takes other shapes */
        }
        if (!ok) return bad_call(&c, "宿主原语参数类型不符", name, nl);
    }
    yy_val r;
    memset(&r, 0, sizeof r);
    pw_status st = fn->impl(&c, a, &r);
    if (st != PW_OK) return st;
    return nested_out(&c, sig.result, &r, &results[0].ref);
}

static pw_status host_web_check(pw_call_ctx *cx, void *env, const pw_val *args, pw_val *results) {
    (void)args, (void)results;
    yy_bind *b = env;
    yy_call c = {cx, b->y, b->y->rs};
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    int64_t ms =
        (int64_t)(now.tv_sec - c.y->t0.tv_sec) * 1000 + (now.tv_nsec - c.y->t0.tv_nsec) / 1000000;
    uint32_t limit = c.rs->wall_ms ? c.rs->wall_ms : 5000;
    if (ms >= (int64_t)limit) return pr__yy_fail(&c, "Wasm 执行超过时限");
    return PW_OK;
}

/* String(value) of the reference's value bridge (桥.解): text for bytes, decimal for
 * integers, arrays joined by ",", null as "". Host work on a guest value graph is
 * bounded: a tuple already on the path prints as "" (Array.prototype.join's cycle
 * rule), nesting stops at JS_DEPTH, the text stops growing at the contract's output
 * limit (the message keeps far less), and the CPU/wall limit is polled as it walks. */
#define JS_DEPTH 256
#define JS_LIMIT (PR_OUTPUT_MAX + 64)

typedef struct js_walk {
    yy_call *c;
    pb_buf *b;
    pw_ref path[JS_DEPTH + 1]; /* tuples being joined (not GC-moved: no allocation here) */
    uint32_t depth;
    uint32_t steps;
    int stop; /* 0 go on, 1 the text is full, -1 out of memory, -2 interrupted */
} js_walk;

static bool js_full(js_walk *w) {
    if (w->b->len >= JS_LIMIT) w->stop = 1;
    if ((++w->steps & 1023) == 0 && pw_store_interrupted(pw_ctx_store(w->c->cx))) w->stop = -2;
    return w->stop != 0;
}

static void js_puts(js_walk *w, const char *s) {
    if (!pb_buf_puts(w->b, s)) w->stop = -1;
}

static void js_string(js_walk *w, pw_ref r, bool top) {
    yy_call *c = w->c;
    pw_store *s = pw_ctx_store(c->cx);
    uint32_t n;
    const uint8_t *p;
    int64_t i;
    char num[32];
    if (js_full(w) || w->depth > JS_DEPTH) return;
    if (!r) {
        if (top) js_puts(w, "null");
        return;
    }
    if ((p = pw_array_bytes(r, &n)) != NULL) {
        if (top) {
            if (!pr__yy_text(w->b, p, n < JS_LIMIT ? n : JS_LIMIT)) w->stop = -1;
            return;
        }
        for (uint32_t k = 0; k < n && !js_full(w); k++) { /* a Uint8Array in an array */
            snprintf(num, sizeof num, k ? ",%u" : "%u", p[k]);
            js_puts(w, num);
        }
        return;
    }
    if (pw_ref_kind_of(r) == PW_REF_I31 && nested_int(c, r, &i)) {
        snprintf(num, sizeof num, "%lld", (long long)i);
        js_puts(w, num);
        return;
    }
    if (is_tuple(c, r)) {
        for (uint32_t d = 0; d < w->depth; d++)
            if (w->path[d] == r) return; /* a cycle joins as "" */
        w->path[w->depth++] = r;
        uint32_t len = pw_array_len(r);
        for (uint32_t k = 0; k < len && !js_full(w); k++) {
            pw_val e;
            if (k && !pb_buf_putc(w->b, ',')) w->stop = -1;
            if (!w->stop && pw_array_get(r, k, false, &e)) js_string(w, e.ref, false);
        }
        w->depth--;
        return;
    }
    pw_val v;
    if (c->y->have_big && pw_ref_kind_of(r) == PW_REF_STRUCT &&
        pw_ref_test_type(s, inst_of(c), r, c->y->t_big) && pw_struct_get(s, r, 0, true, &v)) {
        snprintf(num, sizeof num, "%lld", (long long)v.i64);
        js_puts(w, num);
        return;
    }
    js_puts(w, "[object Object]");
}

static pw_status host_web_fail(pw_call_ctx *cx, void *env, const pw_val *args, pw_val *results) {
    (void)results;
    yy_bind *b = env;
    yy_call c = {cx, b->y, b->y->rs};
    prepare(c.y, inst_of(&c));
    pb_buf m = {0};
    pw_status st;
    js_walk *w = NULL;
    if (pb_buf_puts(&m, "未捕捉的豫言异常：\n") && (w = calloc(1, sizeof *w)) != NULL) {
        w->c = &c;
        w->b = &m;
        js_string(w, args[0].ref, true);
    }
    if (w && w->stop == -2)
        st = pw_ctx_trap(cx, "interrupted"); /* the watchdog fired: run.c reports the limit */
    else if (w && w->stop != -1)
        st = pr__yy_fail(&c, "%s", m.p);
    else
        st = pr__yy_platform(&c, "隔离运行失败：内存不足");
    free(w);
    pb_buf_free(&m);
    return st;
}

/* ---------------------------------------------------------------- linking */

static yy_state *state(pr_run_state *rs, const pw_module *m) {
    if (rs->abi_state) return rs->abi_state;
    yy_state *y = calloc(1, sizeof *y);
    if (!y) return NULL;
    y->rs = rs;
    y->nbinds = pw_module_import_count(m);
    y->binds = calloc(y->nbinds ? y->nbinds : 1, sizeof *y->binds);
    if (!y->binds) {
        free(y);
        return NULL;
    }
    clock_gettime(CLOCK_MONOTONIC, &y->t0);
    rs->abi_state = y;
    return y;
}

/* A link failure: the run throws 隔离运行失败：<why>. */
static bool link_fail(pr_run_state *rs, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static bool link_fail(pr_run_state *rs, const char *fmt, ...) {
    char buf[2048]; /* > end_msg: set_end cuts at a character boundary */
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    set_end(rs, PR_END_PLATFORM, buf,
            n < 0                    ? 0
            : (size_t)n < sizeof buf ? (size_t)n
                                     : sizeof buf - 1);
    return false;
}

static bool legacy_type(const pw_module *m, uint32_t i, uint32_t np, uint32_t nr) {
    pw_functype ft;
    if (!pw_module_import_functype(m, i, &ft) || ft.nparams != np || ft.nresults != nr)
        return false;
    for (uint32_t k = 0; k < np; k++)
        if (ft.params[k] != PW_VT_ABSREF(PW_HT_EQ, 1)) return false;
    for (uint32_t k = 0; k < nr; k++)
        if (ft.results[k] != PW_VT_ABSREF(PW_HT_EQ, 1)) return false;
    return true;
}

/* Notes the module's $bytes / $tuple types from a bound import, for modules without
 * prototype globals. */
static void note_types(yy_state *y, const pw_module *m, uint32_t i) {
    pw_functype ft;
    if (!pw_module_import_functype(m, i, &ft)) return;
    for (uint32_t k = 0; k < ft.nparams + ft.nresults; k++) {
        pw_valtype t = k < ft.nparams ? ft.params[k] : ft.results[k - ft.nparams];
        if (PW_VT_KIND(t) != PW_K_REF || (PW_VT_HEAP(t) & PW_HT_ABS)) continue;
        uint32_t h = PW_VT_HEAP(t);
        if (!y->have_bytes && pr__yy_type_is_bytes(m, h)) y->have_bytes = true, y->t_bytes = h;
        if (!y->have_tuple && pr__yy_type_is_tuple(m, h)) y->have_tuple = true, y->t_tuple = h;
    }
}

static bool yy_resolve(void *ctx, pw_store *s, const pw_module *m, const pw_import_desc *imp,
                       pw_extern *out) {
    pr_run_state *rs = ctx;
    yy_state *y = state(rs, m);
    if (!y) return link_fail(rs, "隔离运行失败：内存不足");
    const char *mod = imp->module, *name = imp->name;
    int ml = (int)imp->module_len, nl = (int)imp->name_len;
    if (imp->kind != PW_EXTERN_FUNC)
        return link_fail(rs, "隔离运行失败：无法链接导入：%.*s.%.*s（宿主只提供函数）", ml, mod, nl,
                         name);
    yy_bind *b = &y->binds[imp->index];
    b->y = y;
    b->res_type = UINT32_MAX;
    pw_host_fn fn;
    if (eq(mod, imp->module_len, YY_GC) && eq(name, imp->name_len, "call")) {
        if (!legacy_type(m, imp->index, 2, 1))
            return link_fail(
                rs,
                "隔离运行失败：导入类型不符：%.*s.%.*s 须为 (func (param (ref null eq) "
                "(ref null eq)) (result (ref null eq)))",
                ml, mod, nl, name);
        fn = host_gc_call;
    } else if (eq(mod, imp->module_len, YY_WEB) && eq(name, imp->name_len, "check")) {
        if (!legacy_type(m, imp->index, 0, 0))
            return link_fail(rs, "隔离运行失败：导入类型不符：%.*s.%.*s 须为 (func)", ml, mod, nl,
                             name);
        fn = host_web_check;
    } else if (eq(mod, imp->module_len, YY_WEB) && eq(name, imp->name_len, "fail")) {
        if (!legacy_type(m, imp->index, 1, 0))
            return link_fail(
                rs, "隔离运行失败：导入类型不符：%.*s.%.*s 须为 (func (param (ref null eq)))", ml,
                mod, nl, name);
        fn = host_web_fail;
    } else if ((b->fn = pr__yy_std_find(mod, imp->module_len, name, imp->name_len)) != NULL) {
        if (!pr__yy_sig_parse(b->fn->sig, strlen(b->fn->sig), &b->sig))
            return link_fail(rs, "隔离运行失败：宿主签名有误：%s", b->fn->sig);
        char why[400];
        if (!pr__yy_sig_check(m, imp->index, &b->sig, why, sizeof why)) {
            size_t dl;
            const char *decl =
                pr__yy_bound_declared(m, mod, imp->module_len, name, imp->name_len, &dl);
            if (decl && pr__utf8_valid((const uint8_t *)decl, dl)) /* section bytes: unchecked */
                return link_fail(rs,
                                 "隔离运行失败：导入类型不符：%.*s.%.*s 须为 %s，程序导入为 %s"
                                 "（豫言边界声明 %.*s）",
                                 ml, mod, nl, name, b->fn->sig, why, (int)dl, decl);
            return link_fail(rs, "隔离运行失败：导入类型不符：%.*s.%.*s 须为 %s，程序导入为 %s", ml,
                             mod, nl, name, b->fn->sig, why);
        }
        pw_functype ft;
        if (b->sig.result == YS_STR || b->sig.result == YS_TUPLE) {
            pw_module_import_functype(m, imp->index, &ft);
            b->res_type = PW_VT_HEAP(ft.results[0]);
        }
        note_types(y, m, imp->index);
        fn = host_std;
    } else {
        size_t len = sizeof UNBOUND - 1 + imp->module_len + 1 + imp->name_len + 1;
        if (!(b->msg = malloc(len))) return link_fail(rs, "隔离运行失败：内存不足");
        snprintf(b->msg, len, UNBOUND "%.*s.%.*s", ml, mod, nl, name);
        fn = host_stub;
    }
    pw_error pe = {0};
    pw_func *f = pw_func_new_host_for_import(s, m, imp->index, fn, b, &pe);
    if (!f) return link_fail(rs, "隔离运行失败：%s", pe.message);
    out->kind = PW_EXTERN_FUNC;
    out->u.func = f;
    return true;
}

/* ---------------------------------------------------------------- running */

static pw_status call_export(pr_run_state *rs, const char *name, bool required, pw_error *err) {
    pw_extern ex;
    if (!pw_instance_export(rs->inst, name, strlen(name), &ex) || ex.kind != PW_EXTERN_FUNC) {
        if (!required) return PW_OK;
        set_end(rs, PR_END_HOST, "程序没有导出 _start", strlen("程序没有导出 _start"));
        err->status = PW_ERR_TRAP;
        err->trap = PW_TRAP_HOST;
        return PW_ERR_TRAP;
    }
    pw_functype ft;
    pw_func_type(ex.u.func, &ft);
    if (ft.nparams || ft.nresults > 1) {
        if (!required) return PW_OK;
        set_end(rs, PR_END_HOST, "_start 的类型须为 () → ()", strlen("_start 的类型须为 () → ()"));
        err->status = PW_ERR_TRAP;
        err->trap = PW_TRAP_HOST;
        return PW_ERR_TRAP;
    }
    pw_val res[1];
    return pw_call(rs->store, ex.u.func, NULL, 0, res, ft.nresults, err);
}

static pw_status yy_start(pr_run_state *rs, pw_error *err) {
    yy_state *y = state(rs, rs->prog->module);
    if (!y) {
        err->status = PW_ERR_NOMEM;
        return PW_ERR_NOMEM;
    }
    prepare(y, rs->inst);
    pw_status st = call_export(rs, "_start", true, err);
    if (st == PW_OK) st = call_export(rs, START_EXPORT, false, err);
    return st; /* an escaping exception: .uncaught below */
}

static void yy_finish(pr_run_state *rs) {
    yy_state *y = rs->abi_state;
    if (!y) return;
    for (uint32_t i = 0; i < y->nbinds; i++)
        free(y->binds[i].msg);
    free(y->binds);
    free(y);
    rs->abi_state = NULL;
}

const pr_abi pr__abi_yuyan = {"豫言",    yy_matches,     yy_resolve, yy_start,
                              yy_finish, "illegal cast", NULL};
