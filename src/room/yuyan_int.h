/*
 * yuyan_int.h — internal interfaces of the room's 豫言 file-style guest ABI (the files
 * src/room/yuyan*.c): boundary shapes and signatures (yuyan_bound.c), the text forms
 * of floats and dates (yuyan_fmt.c), the standard-library table (yuyan_std.c) and the
 * per-run state and value helpers of the ABI itself (yuyan.c).
 */
#ifndef PERI_ROOM_YUYAN_INT_H
#define PERI_ROOM_YUYAN_INT_H

#include "room_int.h"

#include <time.h>

#define YY_STD   "标准库"
#define YY_BUILD "构建基础"
#define YY_GC    "yuyan:gc-host/v1"
#define YY_WEB   "yuyan:browser/v1"
#define YY_BOUND "豫言边界"

/* ---------------------------------------------------------------- yuyan_bound.c */

/* Top-level shape kinds of a boundary signature (§2.4). */
typedef enum yy_shape {
    YS_NONE = 0,
    YS_INT,   /* 整 i64 */
    YS_FLOAT, /* 小 f64 */
    YS_BOOL,  /* 爻 i32 */
    YS_STR,   /* 串 (ref $bytes) */
    YS_UNIT,  /* 元 omitted */
    YS_RES,   /* 资 (ref extern) */
    YS_TUPLE, /* 组〔…〕 列〔T〕 变〔…〕: (ref $tuple) */
} yy_shape;

#define YY_MAX_PARAMS 8

typedef struct yy_sig {
    uint8_t nparams;
    uint8_t params[YY_MAX_PARAMS]; /* yy_shape, 元 parameters dropped */
    uint8_t result;
} yy_sig;

/* Parses "[shape{，shape}]→result" (result may be 异〔shape〕). false if malformed. */
bool pr__yy_sig_parse(const char *s, size_t n, yy_sig *out);
/* Does import i of m have exactly the Wasm type of sig? On a mismatch writes what the
 * import has (as Wasm text-ish) into why. */
bool pr__yy_sig_check(const pw_module *m, uint32_t i, const yy_sig *sig, char *why, size_t whylen);
/* Is heap type ti of m the $bytes (array (mut i8)) / $tuple (array (mut (ref null eq)))
 * shape? */
bool pr__yy_type_is_bytes(const pw_module *m, uint32_t ti);
bool pr__yy_type_is_tuple(const pw_module *m, uint32_t ti);
/* The declared signature text of (module, field) in the module's 豫言边界 sections,
 * or NULL (*len set). */
const char *pr__yy_bound_declared(const pw_module *m, const char *mod, size_t modlen,
                                  const char *field, size_t fieldlen, size_t *len);

/* ---------------------------------------------------------------- yuyan_fmt.c */

/* C "%f" with the reference's special cases (nan, inf, -inf, -0.000000, |x| >= 1e21
 * written as an integer). Appends to b. */
bool pr__yy_fmt_fixed(pb_buf *b, double x);
/* "%.17g" with trailing zeros stripped; -0 → "-0"; nan / inf / -inf. */
bool pr__yy_fmt_exact(pb_buf *b, double x);
/* Like the reference's 理解小数: leading/trailing white space trimmed, nan / inf
 * prefixes, else the longest decimal prefix (parseFloat), 0 when none. */
double pr__yy_parse_float(const uint8_t *s, size_t n);
/* strftime with only %Y %m %d %H %M %S %% (UTC). Returns 0 ok, -1 nomem, or the
 * unsupported directive character + 1 (as a positive value). */
int pr__yy_fmt_date(pb_buf *b, const uint8_t *fmt, size_t n, const struct tm *tm);

/* ---------------------------------------------------------------- yuyan.c (values) */

typedef struct yy_bind yy_bind;

/* Per-run state of the ABI (rs->abi_state). */
typedef struct yy_state {
    pr_run_state *rs;
    yy_bind *binds; /* one per import of the module */
    uint32_t nbinds;
    bool ready; /* prototypes and tag looked up */
    bool have_bytes, have_tuple, have_big, have_float, have_ext;
    uint32_t t_bytes, t_tuple, t_big, t_float, t_ext; /* module type indices */
    /* t_ext is looked up with the others; no implemented function builds a 资 value. */
    pw_tag *tag_err;    /* the exported yy_错误, or NULL */
    struct timespec t0; /* monotonic start of the run (获取当前纳秒时间) */
} yy_state;

/* One call of a standard-library function. */
typedef struct yy_call {
    pw_call_ctx *cx;
    yy_state *y;
    pr_run_state *rs;
} yy_call;

/* Arguments and result of a standard-library function, by shape: strings as bytes
 * (valid during the call), scalars decoded; results as a GC reference or scalar. */
typedef struct yy_val {
    const uint8_t *s;
    uint32_t n;
    int64_t i;
    double f;
    pw_ref ref;
} yy_val;

typedef pw_status (*yy_impl)(yy_call *c, const yy_val *args, yy_val *res);

/* Result builders (PW_OK, or the status that ends the run). */
pw_status pr__yy_new_str(yy_call *c, const void *bytes, size_t n, pw_ref *out);
/* A $tuple of n elements (null); kept alive through a handle while being filled. */
pw_status pr__yy_new_tuple(yy_call *c, uint32_t n, pw_ref *out);
/* (爻, 串) pair as a $tuple [i31 b, $bytes s]. */
pw_status pr__yy_new_pair(yy_call *c, bool b, const char *s, pw_ref *out);
/* Ends the run with a host error (ok false, exitCode 1, error msg). */
pw_status pr__yy_fail(yy_call *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* A catchable error: throws yy_错误 with msg when the module exports it, else fails. */
pw_status pr__yy_raise(yy_call *c, const char *msg, size_t n);
/* Ends the run as a platform failure (exception 隔离运行失败：…). */
pw_status pr__yy_platform(yy_call *c, const char *msg);
/* Lenient UTF-8 text of bytes for messages. */
bool pr__yy_text(pb_buf *b, const uint8_t *s, size_t n);

/* ---------------------------------------------------------------- yuyan_std.c */

typedef struct yy_fn {
    const char *module; /* YY_STD or YY_BUILD */
    const char *name;
    const char *sig; /* boundary signature text */
    yy_impl impl;
    uint8_t module_len, name_len;
} yy_fn;

/* The functions the file-style host implements; NULL if (module, name) is not one. */
const yy_fn *pr__yy_std_find(const char *mod, size_t modlen, const char *name, size_t namelen);

#endif
