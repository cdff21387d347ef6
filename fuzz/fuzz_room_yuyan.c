/*
 * fuzz_room_yuyan.c — libFuzzer target: the 豫言 host ABI with random values, types and
 * arities.
 *
 * Each input becomes one 豫言 module: the legacy imports (gc-host call, browser check
 * and fail) and up to 8 typed 标准库 imports (exact types; now and then one of a wrong
 * type, which must fail to link), prototype globals whose $big / $float shapes are
 * drawn from the input (the right one struct, a second reference field, a wrong field
 * type), and a _start of up to 48 statements: legacy calls of every primitive (and of
 * random names) with argument lists of random length built from random values (null,
 * i31, $big, $float, a struct holding a reference, $bytes, an immutable i8 array, an
 * i32 array, tuples, 1 MiB arrays, the tuple being built — cycles — and earlier
 * results), some inside try_table catch_all (so thrown 豫言 errors go on); typed calls
 * with random scalars and strings; a final browser fail of a random value graph.
 * Oracle: no crash or sanitizer report, a valid result or a typed exception.
 */
#include "fuzz_room.h"
#include "room/yuyan_int.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *const STD[] = {"获取命令行程序名",
                                  "获取命令行参数",
                                  "获取当前工作目录",
                                  "获取环境变量",
                                  "查找可执行程序",
                                  "获取文件修改时间",
                                  "同步读取文件",
                                  "同步读取文件字节串",
                                  "同步写入文件",
                                  "同步写入文件字节串",
                                  "同步删除文件",
                                  "同步列出文件夹",
                                  "路径存在",
                                  "路径是文件夹",
                                  "路径是普通文件",
                                  "路径为符号链接",
                                  "路径可执行",
                                  "取得真实路径",
                                  "在线处理器数量",
                                  "运行于Windows",
                                  "运行于MacOS",
                                  "运行于Linux",
                                  "标准输出是终端",
                                  "标准输入是终端",
                                  "尝试读取标准输入行",
                                  "打印行",
                                  "标准错误打印行",
                                  "打印字符串",
                                  "格式化当前本地日期时间",
                                  "获取当前纳秒时间",
                                  "获取随机整数",
                                  "获取随机小数",
                                  "小数转字符串",
                                  "小数精确表示",
                                  "字符串转小数",
                                  "退出进程",
                                  "未实现的函数"};
#define NSTD (sizeof STD / sizeof *STD)

/* Types. */
enum {
    T_BYTES,
    T_TUPLE,
    T_BIG,
    T_FLOAT,
    T_ODD,
    T_IBYTES,
    T_INTS,
    T_VOID,
    T_CALL,
    T_FAIL,
    T_STD0 /* one type per typed import */
};
#define MAXTYPED 8

typedef struct gen {
    fin *f;
    wbuf *c;
    uint8_t big_shape, float_shape; /* 0 right; 1 extra ref field; 2 wrong field type */
    uint32_t name_off[NSTD], name_len[NSTD];
    uint32_t data_len;
    int budget; /* values left to generate (bounds the module size) */
} gen;

static void op(gen *g, uint8_t b) {
    wb_u8(g->c, b);
}
static void gc(gen *g, uint8_t sub) {
    wb_u8(g->c, 0xfb);
    wb_uleb(g->c, sub);
}
static void i32c(gen *g, int32_t v) {
    op(g, 0x41);
    wb_sleb(g->c, v);
}

static void value(gen *g, int depth);

/* A field of the given value type (0x7e i64, 0x7c f64, 0x7f i32, 0x6d eqref). */
static void field(gen *g, uint8_t t, int depth) {
    switch (t) {
    case 0x7e: op(g, 0x42), wb_sleb(g->c, (int64_t)fin_u64(g->f)); break;
    case 0x7c: {
        uint64_t b = fin_u64(g->f);
        op(g, 0x44), wb_put(g->c, &b, 8);
        break;
    }
    case 0x7f: i32c(g, (int32_t)fin_u32(g->f)); break;
    default: value(g, depth + 1); break;
    }
}

static void bytes_of(gen *g) {
    uint8_t k = fin_u8(g->f);
    uint32_t off, len;
    if (k < 160) {
        uint32_t i = k % NSTD;
        off = g->name_off[i] + (k & 1 ? 0 : 7); /* with or without the 豫言_ prefix */
        len = g->name_len[i] - (k & 1 ? 0 : 7);
    } else {
        off = fin_u8(g->f) % g->data_len;
        len = fin_u8(g->f) % (g->data_len - off + 1);
    }
    i32c(g, (int32_t)off), i32c(g, (int32_t)len);
    gc(g, 0x09), wb_uleb(g->c, T_BYTES), wb_uleb(g->c, 0); /* array.new_data */
}

/* Pushes one (ref null eq) value. Locals: 0 the tuple being built, 1 the last result. */
static void value(gen *g, int depth) {
    uint8_t k = fin_u8(g->f) % 16;
    if (--g->budget < 0 || depth > 6) k = 0;
    switch (k) {
    case 0: op(g, 0xd0), op(g, 0x6d); break; /* ref.null eq */
    case 1: i32c(g, (int32_t)fin_u32(g->f)), gc(g, 0x1c); break;
    case 2:
        field(g, g->big_shape == 2 ? 0x7f : 0x7e, depth);
        if (g->big_shape == 1) field(g, 0x6d, depth);
        gc(g, 0x00), wb_uleb(g->c, T_BIG);
        break;
    case 3:
        field(g, g->float_shape == 2 ? 0x7e : 0x7c, depth);
        if (g->float_shape == 1) field(g, 0x6d, depth);
        gc(g, 0x00), wb_uleb(g->c, T_FLOAT);
        break;
    case 4: value(g, depth + 1), gc(g, 0x00), wb_uleb(g->c, T_ODD); break;
    case 5:
    case 6: bytes_of(g); break;
    case 7: {
        uint8_t n = fin_u8(g->f) % 4;
        for (uint8_t i = 0; i < n; i++)
            i32c(g, fin_u8(g->f));
        gc(g, 0x08), wb_uleb(g->c, T_IBYTES), wb_uleb(g->c, n);
        break;
    }
    case 8: {
        uint8_t n = fin_u8(g->f) % 3;
        for (uint8_t i = 0; i < n; i++)
            i32c(g, (int32_t)fin_u32(g->f));
        gc(g, 0x08), wb_uleb(g->c, T_INTS), wb_uleb(g->c, n);
        break;
    }
    case 9:
    case 10: {
        uint8_t n = fin_u8(g->f) % 5;
        for (uint8_t i = 0; i < n; i++)
            value(g, depth + 1);
        gc(g, 0x08), wb_uleb(g->c, T_TUPLE), wb_uleb(g->c, n);
        break;
    }
    case 11: op(g, 0x20), wb_uleb(g->c, 0); break; /* the tuple being built */
    case 12: op(g, 0x20), wb_uleb(g->c, 1); break; /* the last result */
    case 13: /* a large array: 1 MiB of bytes, or many references to one value */
        if (fin_u8(g->f) & 1) {
            i32c(g, 1 << 20), gc(g, 0x07), wb_uleb(g->c, T_BYTES);
        } else {
            value(g, depth + 1), i32c(g, fin_u8(g->f) * 64);
            gc(g, 0x06), wb_uleb(g->c, T_TUPLE);
        }
        break;
    default: value(g, depth + 1), i32c(g, fin_u8(g->f) % 3), gc(g, 0x06), wb_uleb(g->c, T_TUPLE);
    }
}

/* Parameter / result types of a typed import, from its boundary signature. */
static uint8_t shape_type(uint8_t sh, uint8_t *ref_idx) {
    *ref_idx = 0xff;
    switch (sh) {
    case YS_INT: return 0x7e;
    case YS_FLOAT: return 0x7c;
    case YS_BOOL: return 0x7f;
    case YS_STR: *ref_idx = T_BYTES; return 0x64;
    default: *ref_idx = T_TUPLE; return 0x64;
    }
}

static void put_type(wbuf *s, uint8_t t, uint8_t idx) {
    wb_u8(s, t);
    if (idx != 0xff) wb_uleb(s, idx);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fin f = {data, size, 0};
    wbuf m = {0}, s = {0}, code = {0}, dat = {0};
    gen g = {&f, &code, 0, 0, {0}, {0}, 0, 400};
    uint8_t shapes = fin_u8(&f);
    g.big_shape = shapes & 3 ? (shapes & 3) - 1 : 0;
    g.float_shape = (shapes >> 2) & 3 ? ((shapes >> 2) & 3) - 1 : 0;
    if (g.big_shape > 2) g.big_shape = 0;
    if (g.float_shape > 2) g.float_shape = 0;
    /* the typed imports */
    uint8_t ntyped = fin_u8(&f) % (MAXTYPED + 1), wrong = fin_u8(&f);
    uint32_t typed[MAXTYPED];
    yy_sig sig[MAXTYPED];
    for (uint8_t i = 0; i < ntyped; i++) {
        typed[i] = fin_u8(&f) % (NSTD - 1);
        const yy_fn *fn =
            pr__yy_std_find(YY_STD, sizeof YY_STD - 1, STD[typed[i]], strlen(STD[typed[i]]));
        if (!fn || !pr__yy_sig_parse(fn->sig, strlen(fn->sig), &sig[i])) abort();
    }
    /* data: every name as 豫言_<name>, then input bytes */
    for (size_t i = 0; i < NSTD; i++) {
        g.name_off[i] = (uint32_t)dat.n;
        wb_put(&dat, "豫言_", 7);
        wb_put(&dat, STD[i], strlen(STD[i]));
        g.name_len[i] = (uint32_t)(dat.n - g.name_off[i]);
    }
    uint8_t extra = fin_u8(&f);
    for (uint8_t i = 0; i < extra && !fin_done(&f); i++)
        wb_u8(&dat, fin_u8(&f));
    g.data_len = (uint32_t)dat.n;

    static const uint8_t head[] = {0, 'a', 's', 'm', 1, 0, 0, 0};
    wb_put(&m, head, sizeof head);
    /* types */
    wb_uleb(&s, T_STD0 + ntyped);
    wb_u8(&s, 0x5e), wb_u8(&s, 0x78), wb_u8(&s, 1);       /* $bytes */
    wb_u8(&s, 0x5e), wb_u8(&s, 0x6d), wb_u8(&s, 1);       /* $tuple */
    wb_u8(&s, 0x5f), wb_u8(&s, g.big_shape == 1 ? 2 : 1); /* $big */
    wb_u8(&s, g.big_shape == 2 ? 0x7f : 0x7e), wb_u8(&s, 0);
    if (g.big_shape == 1) wb_u8(&s, 0x6d), wb_u8(&s, 0);
    wb_u8(&s, 0x5f), wb_u8(&s, g.float_shape == 1 ? 2 : 1); /* $float */
    wb_u8(&s, g.float_shape == 2 ? 0x7e : 0x7c), wb_u8(&s, 0);
    if (g.float_shape == 1) wb_u8(&s, 0x6d), wb_u8(&s, 0);
    wb_u8(&s, 0x5f), wb_u8(&s, 1), wb_u8(&s, 0x6d), wb_u8(&s, 0); /* $odd */
    wb_u8(&s, 0x5e), wb_u8(&s, 0x78), wb_u8(&s, 0);               /* $ibytes */
    wb_u8(&s, 0x5e), wb_u8(&s, 0x7f), wb_u8(&s, 1);               /* $ints */
    wb_u8(&s, 0x60), wb_u8(&s, 0), wb_u8(&s, 0);                  /* $void */
    wb_u8(&s, 0x60), wb_u8(&s, 2), wb_u8(&s, 0x6d), wb_u8(&s, 0x6d), wb_u8(&s, 1),
        wb_u8(&s, 0x6d);                                          /* call */
    wb_u8(&s, 0x60), wb_u8(&s, 1), wb_u8(&s, 0x6d), wb_u8(&s, 0); /* fail, yy_错误 */
    for (uint8_t i = 0; i < ntyped; i++) {
        uint8_t idx, np = sig[i].nparams;
        bool bad = wrong == i;
        wb_u8(&s, 0x60);
        wb_uleb(&s, bad ? np + 1 : np);
        for (uint8_t k = 0; k < np; k++) {
            uint8_t t = shape_type(sig[i].params[k], &idx);
            put_type(&s, t, idx);
        }
        if (bad) wb_u8(&s, 0x7f);
        if (sig[i].result == YS_UNIT) {
            wb_u8(&s, 0);
        } else {
            uint8_t t = shape_type(sig[i].result, &idx);
            wb_u8(&s, 1), put_type(&s, t, idx);
        }
    }
    wb_section(&m, 1, &s);
    /* imports: 0 call, 1 check, 2 fail, 3.. typed */
    wb_uleb(&s, 3 + ntyped);
    wb_name(&s, "yuyan:gc-host/v1"), wb_name(&s, "call"), wb_u8(&s, 0), wb_uleb(&s, T_CALL);
    wb_name(&s, "yuyan:browser/v1"), wb_name(&s, "check"), wb_u8(&s, 0), wb_uleb(&s, T_VOID);
    wb_name(&s, "yuyan:browser/v1"), wb_name(&s, "fail"), wb_u8(&s, 0), wb_uleb(&s, T_FAIL);
    for (uint8_t i = 0; i < ntyped; i++) {
        wb_name(&s, YY_STD), wb_name(&s, STD[typed[i]]), wb_u8(&s, 0);
        wb_uleb(&s, T_STD0 + i);
    }
    wb_section(&m, 2, &s);
    uint32_t start = 3 + ntyped;
    wb_u8(&s, 1), wb_uleb(&s, T_VOID);
    wb_section(&m, 3, &s);
    wb_u8(&s, 1), wb_u8(&s, 0), wb_uleb(&s, T_FAIL); /* tag yy_错误 */
    wb_section(&m, 13, &s);
    /* prototype globals: (ref $t) immutable, struct.new_default / array.new_fixed 0 */
    static const uint8_t protos[4] = {T_BYTES, T_TUPLE, T_BIG, T_FLOAT};
    wb_u8(&s, 4);
    for (int i = 0; i < 4; i++) {
        wb_u8(&s, 0x64), wb_uleb(&s, protos[i]), wb_u8(&s, 0);
        wb_u8(&s, 0xfb);
        if (i < 2)
            wb_u8(&s, 0x08), wb_uleb(&s, protos[i]), wb_u8(&s, 0);
        else
            wb_u8(&s, 0x01), wb_uleb(&s, protos[i]);
        wb_u8(&s, 0x0b);
    }
    wb_section(&m, 6, &s);
    static const char *const gnames[4] = {"yy_bytes", "yy_tuple", "yy_big", "yy_float"};
    wb_u8(&s, 6);
    wb_name(&s, "_start"), wb_u8(&s, 0), wb_uleb(&s, start);
    for (int i = 0; i < 4; i++)
        wb_name(&s, gnames[i]), wb_u8(&s, 3), wb_u8(&s, (uint8_t)i);
    wb_name(&s, "yy_错误"), wb_u8(&s, 4), wb_u8(&s, 0);
    wb_section(&m, 7, &s);
    wb_u8(&s, 1);
    wb_section(&m, 12, &s); /* data count */
    /* _start */
    wb_u8(&code, 2);
    wb_u8(&code, 1), wb_u8(&code, 0x63), wb_uleb(&code, T_TUPLE); /* local 0: (ref null $tuple) */
    wb_u8(&code, 1), wb_u8(&code, 0x6d);                          /* local 1: eqref */
    for (int st = 0; st < 48 && !fin_done(&f) && g.budget > 0; st++) {
        uint8_t k = fin_u8(&f) % 8;
        bool guarded = k >= 6;
        if (guarded) { /* block { try_table (catch_all 0) ... } } */
            op(&g, 0x02), op(&g, 0x40);
            op(&g, 0x1f), op(&g, 0x40), op(&g, 1), op(&g, 0x02), op(&g, 0);
            k = fin_u8(&f) % 4;
        }
        switch (k) {
        case 0:
        case 1: /* legacy call: a known (or random) name, a random argument list */
            if (fin_u8(&f) < 240)
                bytes_of(&g);
            else
                value(&g, 0);
            value(&g, 0);
            op(&g, 0x10), wb_uleb(&code, 0), op(&g, 0x21), wb_uleb(&code, 1);
            break;
        case 2: /* a tuple that may contain itself */
            value(&g, 0);
            value(&g, 0);
            gc(&g, 0x08), wb_uleb(&code, T_TUPLE), wb_uleb(&code, 2);
            op(&g, 0x21), wb_uleb(&code, 0);
            op(&g, 0x20), wb_uleb(&code, 0), i32c(&g, fin_u8(&f) & 1), value(&g, 0);
            gc(&g, 0x0e), wb_uleb(&code, T_TUPLE);
            break;
        case 3: /* a typed call with random values */
            if (!ntyped || wrong < ntyped) {
                op(&g, 0x10), wb_uleb(&code, 1); /* check */
                break;
            }
            {
                uint8_t i = fin_u8(&f) % ntyped;
                for (uint8_t p = 0; p < sig[i].nparams; p++) {
                    switch (sig[i].params[p]) {
                    case YS_INT: field(&g, 0x7e, 0); break;
                    case YS_FLOAT: field(&g, 0x7c, 0); break;
                    case YS_BOOL: field(&g, 0x7f, 0); break;
                    default: bytes_of(&g); break;
                    }
                }
                op(&g, 0x10), wb_uleb(&code, 3 + i);
                if (sig[i].result != YS_UNIT) op(&g, 0x1a);
            }
            break;
        case 4: op(&g, 0x10), wb_uleb(&code, 1); break; /* check */
        default: /* fail of a random value graph: ends the run */
            value(&g, 0);
            op(&g, 0x10), wb_uleb(&code, 2);
            break;
        }
        if (guarded) op(&g, 0x0b), op(&g, 0x0b);
    }
    if (fin_u8(&f) & 1) op(&g, 0x20), wb_uleb(&code, 0), op(&g, 0x10), wb_uleb(&code, 2);
    op(&g, 0x0b);
    wb_u8(&s, 1), wb_uleb(&s, code.n), wb_put(&s, code.p, code.n);
    wb_section(&m, 10, &s);
    wb_u8(&s, 1), wb_u8(&s, 1), wb_uleb(&s, dat.n), wb_put(&s, dat.p, dat.n);
    wb_section(&m, 11, &s);
    fz_run(m.p, m.n, "{\"args\":[\"甲\"],\"files\":{\"/a.txt\":\"文\"}}");
    wb_free(&m), wb_free(&s), wb_free(&code), wb_free(&dat);
    return 0;
}
