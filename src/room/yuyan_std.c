/*
 * yuyan_std.c — the 36 標准库 functions the file-style host implements, and 构建基础
 * (research §2.5), over the room's in-memory file system and counted output. Every
 * other field of a linked interface module is a stub (yuyan.c).
 * Errors: a missing file in 同步读取文件(字节串) or 取得真实路径 ends the run
 * ("文件不存在：<path>", ok false, exitCode 1, output and files so far); the other
 * reference errors (an unsupported date directive, 获取随机整数 with n <= 0) are
 * catchable 豫言 errors (tag yy_错误).
 */
#include "yuyan_int.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NOT_FOUND "文件不存在："

/* ---------------------------------------------------------------- paths */

typedef struct npath {
    char stack[256];
    char *p;
    size_t n;
} npath;

static bool norm(npath *np, const yy_val *a) {
    np->p = a->n + 2 <= sizeof np->stack ? np->stack : malloc(a->n + 2);
    if (!np->p) return false;
    np->n = pr__path_normalize((const char *)a->s, a->n, np->p);
    return true;
}

static void norm_free(npath *np) {
    if (np->p != np->stack) free(np->p);
}

static pr_file *file_at(const pr_fs *fs, const npath *np) {
    pr_file *f = pr__fs_find(fs, np->p, np->n);
    return f && !f->dead && !f->dir ? f : NULL;
}

/* The reference's 是目录: some file lies under path + "/" (the root: any file). */
static bool is_dir(const pr_fs *fs, const npath *np) {
    if (np->n == 1) return fs->nlive > 0;
    return pr__fs_is_dir(fs, np->p, np->n);
}

#define NOMEM(c) pr__yy_platform(c, "隔离运行失败：内存不足")

static pw_status missing(yy_call *c, const yy_val *a, bool catchable) {
    pb_buf m = {0};
    if (!pb_buf_puts(&m, NOT_FOUND) || !pr__yy_text(&m, a->s, a->n)) {
        pb_buf_free(&m);
        return NOMEM(c);
    }
    pw_status st = catchable ? pr__yy_raise(c, m.p, m.len) : pr__yy_fail(c, "%s", m.p);
    pb_buf_free(&m);
    return st;
}

/* ---------------------------------------------------------------- command line */

static pw_status program_name(yy_call *c, const yy_val *a, yy_val *r) {
    (void)a;
    return pr__yy_new_str(c, "/程序.wasm", sizeof "/程序.wasm" - 1, &r->ref);
}

static pw_status args(yy_call *c, const yy_val *a, yy_val *r) {
    (void)a;
    const pr_exec_options *o = c->rs->opt;
    pw_store *s = pw_ctx_store(c->cx);
    pw_error pe = {0};
    pw_handle h = 0;
    pw_status st = pr__yy_new_tuple(c, (uint32_t)o->nargs, &r->ref);
    /* The list is not a root while its strings are allocated: hold it by a handle. */
    if (st == PW_OK && !(h = pw_handle_new(s, r->ref, &pe))) st = NOMEM(c);
    for (size_t i = 0; st == PW_OK && i < o->nargs; i++) {
        pw_ref str;
        st = pr__yy_new_str(c, o->args[i].ptr, o->args[i].len, &str);
        if (st == PW_OK) pw_array_set(pw_handle_get(s, h), (uint32_t)i, (pw_val){.ref = str});
    }
    if (st == PW_OK) r->ref = pw_handle_get(s, h);
    if (h) pw_handle_free(s, h);
    return st;
}

static pw_status cwd(yy_call *c, const yy_val *a, yy_val *r) {
    (void)a;
    return pr__yy_new_str(c, "/", 1, &r->ref);
}

static pw_status none_pair(yy_call *c, const yy_val *a, yy_val *r) {
    (void)a;
    return pr__yy_new_pair(c, false, "", &r->ref);
}

/* ---------------------------------------------------------------- files */

static pw_status mtime(yy_call *c, const yy_val *a, yy_val *r) {
    npath np;
    if (!norm(&np, a)) return NOMEM(c);
    pr_file *f = file_at(c->rs->fs, &np);
    r->i = f ? (int64_t)f->node->mtime : 1;
    norm_free(&np);
    return PW_OK;
}

static pw_status read_file(yy_call *c, const yy_val *a, yy_val *r) {
    npath np;
    if (!norm(&np, a)) return NOMEM(c);
    pr_file *f = file_at(c->rs->fs, &np);
    norm_free(&np);
    if (!f) return missing(c, a, false);
    return pr__yy_new_str(c, f->node->data, f->node->len, &r->ref);
}

static pw_status write_file(yy_call *c, const yy_val *a, yy_val *r) {
    (void)r;
    int rc = pr_fs_write(c->rs->fs, (const char *)a[0].s, a[0].n, a[1].s, a[1].n);
    if (rc == -2) return pr__yy_fail(c, "编译文件超过 128 MiB 上限");
    if (rc) return NOMEM(c);
    return PW_OK;
}

static pw_status delete_file(yy_call *c, const yy_val *a, yy_val *r) {
    (void)r;
    npath np;
    if (!norm(&np, a)) return NOMEM(c);
    pr_file *f = file_at(c->rs->fs, &np);
    if (f) pr__fs_remove(c->rs->fs, f);
    norm_free(&np);
    return PW_OK;
}

typedef struct lister {
    yy_call *c;
    pw_handle h;
    uint32_t at;
    pw_status st;
} lister;

static bool count_child(void *ud, const char *name, size_t n, bool dir) {
    (void)name, (void)n, (void)dir;
    ((lister *)ud)->at++;
    return true;
}

static bool put_child(void *ud, const char *name, size_t n, bool dir) {
    (void)dir;
    lister *l = ud;
    pw_ref s;
    l->st = pr__yy_new_str(l->c, name, n, &s);
    if (l->st != PW_OK) return false;
    pw_store *st = pw_ctx_store(l->c->cx);
    pw_array_set(pw_handle_get(st, l->h), l->at++, (pw_val){.ref = s});
    return true;
}

static pw_status list_dir(yy_call *c, const yy_val *a, yy_val *r) {
    npath np;
    if (!norm(&np, a)) return NOMEM(c);
    lister l = {c, 0, 0, PW_OK};
    pw_status st = PW_OK;
    if (!pr__fs_children(c->rs->fs, np.p, np.n, count_child, &l)) st = NOMEM(c);
    uint32_t total = l.at + 2;
    pw_store *s = pw_ctx_store(c->cx);
    pw_error pe = {0};
    if (st == PW_OK) st = pr__yy_new_tuple(c, total, &r->ref);
    if (st == PW_OK && !(l.h = pw_handle_new(s, r->ref, &pe))) st = NOMEM(c);
    static const char *const dots[2] = {".", ".."};
    for (int i = 0; st == PW_OK && i < 2; i++) {
        pw_ref d;
        st = pr__yy_new_str(c, dots[i], strlen(dots[i]), &d);
        if (st == PW_OK) pw_array_set(pw_handle_get(s, l.h), (uint32_t)i, (pw_val){.ref = d});
    }
    l.at = 2;
    if (st == PW_OK && !pr__fs_children(c->rs->fs, np.p, np.n, put_child, &l))
        st = l.st != PW_OK ? l.st : NOMEM(c);
    if (st == PW_OK) r->ref = pw_handle_get(s, l.h);
    if (l.h) pw_handle_free(s, l.h);
    norm_free(&np);
    return st;
}

static pw_status exists(yy_call *c, const yy_val *a, yy_val *r) {
    npath np;
    if (!norm(&np, a)) return NOMEM(c);
    r->i = file_at(c->rs->fs, &np) || is_dir(c->rs->fs, &np);
    norm_free(&np);
    return PW_OK;
}

static pw_status is_folder(yy_call *c, const yy_val *a, yy_val *r) {
    npath np;
    if (!norm(&np, a)) return NOMEM(c);
    r->i = is_dir(c->rs->fs, &np);
    norm_free(&np);
    return PW_OK;
}

static pw_status is_file(yy_call *c, const yy_val *a, yy_val *r) {
    npath np;
    if (!norm(&np, a)) return NOMEM(c);
    r->i = file_at(c->rs->fs, &np) != NULL;
    norm_free(&np);
    return PW_OK;
}

static pw_status real_path(yy_call *c, const yy_val *a, yy_val *r) {
    npath np;
    if (!norm(&np, a)) return NOMEM(c);
    pw_status st;
    if (file_at(c->rs->fs, &np) || is_dir(c->rs->fs, &np))
        st = pr__yy_new_str(c, np.p, np.n, &r->ref);
    else
        st = missing(c, a, false); /* ends the run, as the reference host does */
    norm_free(&np);
    return st;
}

/* ---------------------------------------------------------------- environment */

static pw_status no(yy_call *c, const yy_val *a, yy_val *r) {
    (void)c, (void)a;
    r->i = 0;
    return PW_OK;
}

static pw_status one(yy_call *c, const yy_val *a, yy_val *r) {
    (void)c, (void)a;
    r->i = 1;
    return PW_OK;
}

/* ---------------------------------------------------------------- output */

static pw_status emit(yy_call *c, int stream, const yy_val *a, bool newline) {
    const uint8_t *data = a->s;
    size_t n = a->n;
    uint8_t stack[512], *tmp = NULL;
    if (n + newline > pr__run_output_max(c->rs) - c->rs->out_bytes) { /* before copying */
        c->rs->end = PR_END_OUTPUT;
        return pw_ctx_trap(c->cx, "%s", "输出超过 64 KB");
    }
    if (newline) {
        /* One write of value + "\n", counted and decoded as one, like the reference. */
        tmp = n + 1 <= sizeof stack ? stack : malloc(n + 1);
        if (!tmp) return NOMEM(c);
        memcpy(tmp, a->s, n);
        tmp[n++] = '\n';
        data = tmp;
    }
    bool ok = pr__run_output(c->rs, stream, data, n);
    if (tmp && tmp != stack) free(tmp);
    if (ok) return PW_OK;
    /* pr__run_output set how the run ends (output limit, or out of memory). */
    return pw_ctx_trap(c->cx, "%s", c->rs->end == PR_END_OUTPUT ? "输出超过 64 KB" : "内存不足");
}

static pw_status print_line(yy_call *c, const yy_val *a, yy_val *r) {
    (void)r;
    return emit(c, PR_STDOUT, a, true);
}

static pw_status eprint_line(yy_call *c, const yy_val *a, yy_val *r) {
    (void)r;
    return emit(c, PR_STDERR, a, true);
}

static pw_status print_str(yy_call *c, const yy_val *a, yy_val *r) {
    (void)r;
    return emit(c, PR_STDOUT, a, false);
}

/* ---------------------------------------------------------------- time, random */

#define DET_EPOCH_S 1767225600ll /* 2026-01-01T00:00:00Z, as the WASI clocks */
#define DET_STEP_NS 1000000ull

/* Nanoseconds since the run started (deterministic: n-th reading is n ms). */
static uint64_t elapsed_ns(yy_call *c) {
    pr_run_state *rs = c->rs;
    if (rs->opt->seed) {
        uint64_t t = rs->det_clock;
        rs->det_clock += DET_STEP_NS;
        return t;
    }
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    int64_t d =
        (int64_t)(ts.tv_sec - c->y->t0.tv_sec) * 1000000000 + (ts.tv_nsec - c->y->t0.tv_nsec);
    return d > 0 ? (uint64_t)d : 0;
}

static pw_status date_time(yy_call *c, const yy_val *a, yy_val *r) {
    time_t now;
    if (c->rs->opt->seed) {
        now = (time_t)(DET_EPOCH_S + (int64_t)(elapsed_ns(c) / 1000000000ull));
    } else {
        now = time(NULL);
    }
    struct tm tm;
    gmtime_r(&now, &tm); /* the reference room (a Worker) runs in UTC */
    pb_buf b = {0};
    int rc = pr__yy_fmt_date(&b, a->s, a->n, &tm);
    pw_status st;
    if (rc > 0) {
        char msg[64];
        int k = rc - 1;
        size_t n = (size_t)snprintf(msg, sizeof msg, "暂不支持日期格式：%%%c", (char)k);
        st = pr__yy_raise(c, msg, n);
    } else if (rc < 0) {
        st = NOMEM(c);
    } else {
        st = pr__yy_new_str(c, b.p ? b.p : "", b.len, &r->ref);
    }
    pb_buf_free(&b);
    return st;
}

static pw_status nanos(yy_call *c, const yy_val *a, yy_val *r) {
    (void)a;
    /* performance.now() is in ms with µs resolution; × 1e6 as the reference does */
    uint64_t ns = elapsed_ns(c);
    r->f = (double)(ns / 1000) / 1000.0 * 1e6;
    return PW_OK;
}

static pw_status rand_int(yy_call *c, const yy_val *a, yy_val *r) {
    if (a->i <= 0) {
        static const char msg[] = "随机整数上界须大于零";
        return pr__yy_raise(c, msg, sizeof msg - 1);
    }
    r->i = (int64_t)(pr__run_random(c->rs) % (uint64_t)a->i);
    return PW_OK;
}

static pw_status rand_float(yy_call *c, const yy_val *a, yy_val *r) {
    (void)a;
    r->f = (double)(pr__run_random(c->rs) >> 11) * 0x1.0p-53;
    return PW_OK;
}

/* ---------------------------------------------------------------- floats */

static pw_status float_text(yy_call *c, double x, bool exact, yy_val *r) {
    pb_buf b = {0};
    pw_status st;
    if (!(exact ? pr__yy_fmt_exact(&b, x) : pr__yy_fmt_fixed(&b, x)))
        st = NOMEM(c);
    else
        st = pr__yy_new_str(c, b.p, b.len, &r->ref);
    pb_buf_free(&b);
    return st;
}

static pw_status float_fixed(yy_call *c, const yy_val *a, yy_val *r) {
    return float_text(c, a->f, false, r);
}

static pw_status float_exact(yy_call *c, const yy_val *a, yy_val *r) {
    return float_text(c, a->f, true, r);
}

static pw_status parse_float(yy_call *c, const yy_val *a, yy_val *r) {
    (void)c;
    r->f = pr__yy_parse_float(a->s, a->n);
    return PW_OK;
}

/* ---------------------------------------------------------------- exit */

static pw_status exit_process(yy_call *c, const yy_val *a, yy_val *r) {
    (void)r;
    c->rs->end = PR_END_EXIT;
    c->rs->exit_code = a->i; /* the whole i64: result.c writes it as the reference's Number */
    return pw_ctx_trap(c->cx, "程序退出");
}

/* ---------------------------------------------------------------- 构建基础 */

static pw_status sha_placeholder(yy_call *c, const yy_val *a, yy_val *r) {
    (void)a;
    static const char s[] = "浏览器编译器";
    return pr__yy_new_str(c, s, sizeof s - 1, &r->ref);
}

/* ---------------------------------------------------------------- the table */

/* Name lengths are compile-time constants: resolving runs once per import per run. */
#define F(mod, name, sig, fn)                                                                      \
    { mod, name, sig, fn, sizeof mod - 1, sizeof name - 1 }
static const yy_fn FNS[] = {
    F(YY_STD, "获取命令行程序名", "→串", program_name),
    F(YY_STD, "获取命令行参数", "→列〔串〕", args),
    F(YY_STD, "获取当前工作目录", "→串", cwd),
    F(YY_STD, "获取环境变量", "串→组〔爻，串〕", none_pair),
    F(YY_STD, "查找可执行程序", "串→组〔爻，串〕", none_pair),
    F(YY_STD, "获取文件修改时间", "串→整", mtime),
    F(YY_STD, "同步读取文件", "串→串", read_file),
    F(YY_STD, "同步读取文件字节串", "串→串", read_file),
    F(YY_STD, "同步写入文件", "串，串→元", write_file),
    F(YY_STD, "同步写入文件字节串", "串，串→元", write_file),
    F(YY_STD, "同步删除文件", "串→元", delete_file),
    F(YY_STD, "同步列出文件夹", "串→列〔串〕", list_dir),
    F(YY_STD, "路径存在", "串→爻", exists),
    F(YY_STD, "路径是文件夹", "串→爻", is_folder),
    F(YY_STD, "路径是普通文件", "串→爻", is_file),
    F(YY_STD, "路径为符号链接", "串→爻", no),
    F(YY_STD, "路径可执行", "串→爻", no),
    F(YY_STD, "取得真实路径", "串→串", real_path),
    F(YY_STD, "在线处理器数量", "→整", one),
    F(YY_STD, "运行于Windows", "→爻", no),
    F(YY_STD, "运行于MacOS", "→爻", no),
    F(YY_STD, "运行于Linux", "→爻", no),
    F(YY_STD, "标准输出是终端", "→爻", no),
    F(YY_STD, "标准输入是终端", "→爻", no),
    F(YY_STD, "尝试读取标准输入行", "→组〔爻，串〕", none_pair),
    F(YY_STD, "打印行", "串→元", print_line),
    F(YY_STD, "标准错误打印行", "串→元", eprint_line),
    F(YY_STD, "打印字符串", "串→元", print_str),
    F(YY_STD, "格式化当前本地日期时间", "串→串", date_time),
    F(YY_STD, "获取当前纳秒时间", "→小", nanos),
    F(YY_STD, "获取随机整数", "整→整", rand_int),
    F(YY_STD, "获取随机小数", "→小", rand_float),
    F(YY_STD, "小数转字符串", "小→串", float_fixed),
    F(YY_STD, "小数精确表示", "小→串", float_exact),
    F(YY_STD, "字符串转小数", "串→小", parse_float),
    F(YY_STD, "退出进程", "整→元", exit_process),
    F(YY_BUILD, "可绘监视面板", "→爻", no),
    F(YY_BUILD, "获取当前程序SHA256", "→串", sha_placeholder),
};

const yy_fn *pr__yy_std_find(const char *mod, size_t modlen, const char *name, size_t namelen) {
    for (size_t i = 0; i < sizeof FNS / sizeof *FNS; i++) {
        const yy_fn *f = &FNS[i];
        if (f->name_len == namelen && f->module_len == modlen &&
            memcmp(f->name, name, namelen) == 0 && memcmp(f->module, mod, modlen) == 0)
            return f;
    }
    return NULL;
}
