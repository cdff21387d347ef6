/*
 * test_codecache.c — saved JIT translations (src/wasm/codecache.c, docs/jit.md
 * "Compiled-code cache"): an artifact made by pw_code_compile runs in a fresh module
 * without translating and gives the interpreter's results; every flipped byte and
 * every truncation is rejected with a typed error; foreign format, engine, CPU
 * features and module are rejected as such; the on-disk cache saves, finds, replaces
 * a damaged file, refuses unsafe directories, stays within its size bound, and
 * several processes filling one cache at once leave only whole, valid files.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "peri/base.h"
#include "peri/wasm.h"
#include "wasm/codecache.h"
#include "wasm/icode.h"
#include "wasm/jit/jit.h"
#include "wasm/runtime.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* Every kind of GOT reference: direct calls (fib), call_indirect, call_ref, a float
 * helper (floor), the interpreter's XOP helper (a SIMD floor), memory.grow, loads and
 * stores. SEED varies the module for the eviction and concurrency tests. */
static const char WAT[] =
    "(module (type $t (func (param i32) (result i32)))\n"
    " (memory 1) (table 2 funcref) (elem (i32.const 0) $fib $sq) (elem declare func $sq)\n"
    " (func $fib (export \"fib\") (type $t) (if (result i32) (i32.lt_s (local.get 0) (i32.const "
    "2))\n"
    "   (then (local.get 0)) (else (i32.add (call $fib (i32.sub (local.get 0) (i32.const 1)))\n"
    "     (call $fib (i32.sub (local.get 0) (i32.const 2)))))))\n"
    " (func $sq (type $t) (i32.mul (local.get 0) (local.get 0)))\n"
    " (func (export \"ind\") (param i32 i32) (result i32)\n"
    "   (call_indirect (type $t) (local.get 0) (local.get 1)))\n"
    " (func (export \"ref\") (param i32) (result i32) (call_ref $t (local.get 0) (ref.func $sq)))\n"
    " (func (export \"floor\") (param f32) (result i32) (i32.trunc_f32_s (f32.floor (local.get "
    "0))))\n"
    " (func (export \"vfloor\") (param f32) (result i32)\n"
    "   (i32.trunc_f32_s (f32x4.extract_lane 0 (f32x4.floor (f32x4.splat (local.get 0))))))\n"
    " (func (export \"mem\") (param i32) (result i32)\n"
    "   (drop (memory.grow (i32.const 1))) (i32.store (i32.const 70000) (local.get 0))\n"
    "   (i32.add (i32.load (i32.const 70000)) (i32.add (memory.size) (i32.const SEED)))))\n";

#define BIG_OPS 80000
#define BIG_1   (1 + BIG_OPS / 2) /* big(1): 1 + 0.5 per op */

typedef struct mod {
    uint8_t *bytes;
    size_t len;
    uint8_t digest[32];
    pw_module *m;
} mod;

/* The module of seed; with big, also an export "big" whose one body translates to
 * more than 1 MiB of machine code (test_checked), and BIG_FILL small functions, so
 * that a saved translation's table of entries fills whole pages (whose functions are
 * compiled at their first call, not when the translation is installed). */
#define BIG_FILL 600
static void mod_make_as(mod *x, int seed, bool big) {
    size_t cap = sizeof WAT + 16 + (big ? (size_t)BIG_OPS * 32 + BIG_FILL * 48 + 256 : 0);
    char *text = malloc(cap);
    assert_non_null(text);
    const char *at = strstr(WAT, "SEED");
    int n = snprintf(text, cap, "%.*s%d%s", (int)(at - WAT), WAT, seed, at + 4);
    assert_true(n > 0 && (size_t)n < cap);
    if (big) { /* before the module's closing parenthesis */
        size_t k = (size_t)n - 2;
        k += (size_t)snprintf(text + k, cap - k,
                              " (func (export \"big\") (param i32) (result i32) "
                              "(local.get 0) (f64.convert_i32_s)");
        for (int i = 0; i < BIG_OPS; i++)
            k += (size_t)snprintf(text + k, cap - k, " (f64.const 0.5) (f64.add)");
        k += (size_t)snprintf(text + k, cap - k, " (i32.trunc_sat_f64_s))");
        for (int i = 0; i < BIG_FILL; i++)
            k += (size_t)snprintf(text + k, cap - k, " (func (result i32) (i32.const %d))", i);
        k += (size_t)snprintf(text + k, cap - k, ")\n");
        assert_true(k < cap);
        n = (int)k;
    }
    pw_error err;
    if (pw_wat_to_wasm(text, (size_t)n, &x->bytes, &x->len, &err) != PW_OK)
        fail_msg("wat: %s", err.message);
    free(text);
    pb_sha256(x->bytes, x->len, x->digest);
    x->m = pw_module_new(x->bytes, x->len, NULL, &err);
    if (!x->m) fail_msg("module: %s", err.message);
}

static void mod_make(mod *x, int seed) {
    mod_make_as(x, seed, false);
}

static void mod_free(mod *x) {
    pw_module_free(x->m);
    free(x->bytes);
}

typedef struct run {
    pw_store *s;
    pw_instance *inst;
} run;

static void run_open(run *r, const pw_module *m, int engine) {
    pw_error err;
    pw_store_config cfg = {.engine = engine, .bounds_checks = PW_BOUNDS_EXPLICIT};
    r->s = pw_store_new(&cfg, &err);
    assert_non_null(r->s);
    r->inst = pw_instantiate(r->s, m, NULL, NULL, &err);
    if (!r->inst) fail_msg("instantiate: %s", err.message);
}

static pw_func *fn(run *r, const char *name) {
    pw_extern ex;
    assert_true(pw_instance_export(r->inst, name, strlen(name), &ex));
    return ex.u.func;
}

static uint32_t call(run *r, const char *name, uint64_t a, uint64_t b) {
    pw_val in[2] = {{.bits = a}, {.bits = b}}, out = {0};
    pw_error e;
    pw_func *f = fn(r, name);
    if (pw_call(r->s, f, in, f->nparams, &out, 1, &e) != PW_OK) fail_msg("%s: %s", name, e.message);
    return (uint32_t)out.bits;
}

/* The results every tier must give (seed 0). */
static void check_results(run *r, int seed) {
    uint32_t f25;
    memcpy(&f25, &(float){2.5f}, 4);
    uint32_t fm;
    memcpy(&fm, &(float){-3.25f}, 4);
    assert_int_equal(call(r, "fib", 20, 0), 6765);
    assert_int_equal(call(r, "ind", 7, 1), 49);
    assert_int_equal(call(r, "ind", 10, 0), 55);
    assert_int_equal(call(r, "ref", 9, 0), 81);
    assert_int_equal(call(r, "floor", f25, 0), 2);
    assert_int_equal(call(r, "floor", fm, 0), (uint32_t)-4);
    assert_int_equal(call(r, "vfloor", fm, 0), (uint32_t)-4);
    assert_int_equal(call(r, "mem", 5, 0), 5 + 2 + (uint32_t)seed);
}

static char *tmpdir(void) {
    char *d = strdup("/tmp/peri-cc-XXXXXX");
    assert_non_null(d);
    assert_non_null(mkdtemp(d));
    return d;
}

static void rm_rf(const char *dir) {
    char cmd[512];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    assert_int_equal(system(cmd), 0);
}

static void write_file(const char *path, const uint8_t *p, size_t n) {
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(p, 1, n, f), n);
    assert_int_equal(fclose(f), 0);
}

/* An artifact runs in a fresh module of the same bytes with no translation: every
 * function is published before the first call, and the results are right. */
static void test_round_trip(void **state) {
    (void)state;
    mod a, b;
    mod_make(&a, 0);
    mod_make(&b, 0);
    uint8_t *art;
    size_t len;
    pw_code_err ce;
    assert_int_equal(pw_code_compile(a.m, a.digest, PW_BOUNDS_EXPLICIT, false, &art, &len, &ce),
                     PW_CODE_OK);
    assert_int_equal(pw_code_verify(b.m, b.digest, art, len, &ce), PW_CODE_OK);
    char *dir = tmpdir(), path[300];
    snprintf(path, sizeof path, "%s/a.pcc", dir);
    write_file(path, art, len);
    assert_int_equal(pw_code_load(b.m, b.digest, path, &ce), PW_CODE_OK);
    run r;
    run_open(&r, b.m, PW_ENGINE_JIT);
    assert_int_equal(pw__jit_state(fn(&r, "fib")), 1); /* mapped, not translated */
    check_results(&r, 0);
    pw_store_free(r.s);
    /* the interpreter agrees */
    run_open(&r, a.m, PW_ENGINE_INTERP);
    check_results(&r, 0);
    pw_store_free(r.s);
    free(art);
    rm_rf(dir);
    free(dir);
    mod_free(&a);
    mod_free(&b);
}

/* Every byte flipped (one at a time) and every truncation is rejected; the file path
 * rejects them too and nothing is installed. */
static void test_corruption(void **state) {
    (void)state;
    mod a;
    mod_make(&a, 0);
    uint8_t *art;
    size_t len;
    pw_code_err ce;
    assert_int_equal(pw_code_compile(a.m, a.digest, PW_BOUNDS_EXPLICIT, false, &art, &len, &ce),
                     PW_CODE_OK);
    for (size_t i = 0; i < len; i++) {
        art[i] ^= 0x10;
        pw_code_error e = pw_code_verify(a.m, a.digest, art, len, &ce);
        if (e == PW_CODE_OK) fail_msg("byte %zu flipped was accepted", i);
        assert_int_equal(ce.kind, e);
        art[i] ^= 0x10;
    }
    for (size_t n = 0; n < len; n += n < 300 ? 1 : 997) {
        pw_code_error e = pw_code_verify(a.m, a.digest, art, n, &ce);
        if (e != PW_CODE_TRUNCATED && e != PW_CODE_NOT_CODE)
            fail_msg("truncated to %zu: %s", n, pw_code_error_name(e));
    }
    char *dir = tmpdir(), path[300];
    snprintf(path, sizeof path, "%s/bad.pcc", dir);
    for (size_t i = 0; i < len; i += 4099) { /* a flipped byte in the file */
        art[i] ^= 1;
        write_file(path, art, len);
        mod b;
        mod_make(&b, 0);
        assert_int_not_equal(pw_code_load(b.m, b.digest, path, &ce), PW_CODE_OK);
        run r;
        run_open(&r, b.m, PW_ENGINE_INTERP);
        assert_int_equal(pw__jit_state(fn(&r, "fib")), 0); /* nothing installed */
        pw_store_free(r.s);
        mod_free(&b);
        art[i] ^= 1;
    }
    write_file(path, art, len - 1);
    assert_int_equal(pw_code_load(a.m, a.digest, path, &ce), PW_CODE_TRUNCATED);
    write_file(path, art, 5);
    assert_int_equal(pw_code_load(a.m, a.digest, path, &ce), PW_CODE_NOT_CODE);
    rm_rf(dir);
    free(dir);
    free(art);
    mod_free(&a);
}

/* Header fields at their offsets (cc_header in codecache.c). */
enum { H_FORMAT = 8, H_ENGINE = 16, H_MODULE = 48, H_FEATURES = 80 };

static void test_foreign(void **state) {
    (void)state;
    mod a, other;
    mod_make(&a, 0);
    mod_make(&other, 1);
    uint8_t *art;
    size_t len;
    pw_code_err ce;
    assert_int_equal(pw_code_compile(a.m, a.digest, PW_BOUNDS_EXPLICIT, false, &art, &len, &ce),
                     PW_CODE_OK);
    assert_int_equal(pw_code_verify(other.m, other.digest, art, len, &ce), PW_CODE_MODULE);
    /* the artifact's digest passed with a module of another shape: still refused (the
     * digest is the binding; the shape catches a caller passing a wrong one) */
    static const char SMALL[] = "(module (func (export \"f\") (param i32) (result i32) "
                                "(local.get 0)))";
    uint8_t *sb;
    size_t sl;
    pw_error err;
    assert_int_equal(pw_wat_to_wasm(SMALL, sizeof SMALL - 1, &sb, &sl, &err), PW_OK);
    pw_module *small = pw_module_new(sb, sl, NULL, &err);
    assert_non_null(small);
    assert_int_equal(pw_code_verify(small, a.digest, art, len, &ce), PW_CODE_MODULE);
    pw_module_free(small);
    free(sb);
    art[H_FORMAT] ^= 2;
    assert_int_equal(pw_code_verify(a.m, a.digest, art, len, &ce), PW_CODE_FORMAT);
    art[H_FORMAT] ^= 2;
    art[H_ENGINE + 3] ^= 1;
    assert_int_equal(pw_code_verify(a.m, a.digest, art, len, &ce), PW_CODE_ENGINE);
    art[H_ENGINE + 3] ^= 1;
    art[H_FEATURES + 3] |= 0x80; /* a feature no CPU has */
    assert_int_equal(pw_code_verify(a.m, a.digest, art, len, &ce), PW_CODE_CPU);
    assert_non_null(strstr(ce.message, "CPU"));
    art[H_FEATURES + 3] &= 0x7f;
    art[H_MODULE] ^= 1;
    assert_int_equal(pw_code_verify(a.m, a.digest, art, len, &ce), PW_CODE_MODULE);
    art[H_MODULE] ^= 1;
    assert_int_equal(pw_code_verify(a.m, a.digest, art, len, &ce), PW_CODE_OK);
    assert_string_equal(pw_code_error_name(PW_CODE_CPU), "foreign-cpu");
    free(art);
    mod_free(&a);
    mod_free(&other);
}

/* The .pcc files of dir: count and total size; *tmp counts leftover temporaries. */
static size_t list_dir(const char *dir, uint64_t *total, size_t *tmp, char *one, size_t onecap) {
    DIR *d = opendir(dir);
    assert_non_null(d);
    size_t n = 0;
    *total = 0;
    if (tmp) *tmp = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        size_t l = strlen(de->d_name);
        if (l > 4 && !strcmp(de->d_name + l - 4, ".pcc")) {
            char p[600];
            snprintf(p, sizeof p, "%s/%s", dir, de->d_name);
            struct stat st;
            assert_int_equal(stat(p, &st), 0);
            assert_int_equal(st.st_mode & 0777, 0600);
            *total += (uint64_t)st.st_size;
            if (one) snprintf(one, onecap, "%s", p);
            n++;
        } else if (tmp && !strncmp(de->d_name, ".tmp.", 5)) {
            (*tmp)++;
        }
    }
    closedir(d);
    return n;
}

static void attach(mod *x, const char *dir, uint64_t max) {
    pw_code_cache_config cfg = {.dir = dir, .max_bytes = max};
    pw_code_err ce;
    if (pw_module_set_code_cache(x->m, x->digest, &cfg, &ce) != PW_CODE_OK)
        fail_msg("cache: %s", ce.message);
}

/* Miss (translated, saved 0600 in a 0700 directory it created), hit (mapped: the
 * file's last use moves), a damaged file (refused, translated, saved again). */
static void test_cache(void **state) {
    (void)state;
    char *root = tmpdir(), dir[300], one[700];
    snprintf(dir, sizeof dir, "%s/a/code", root);
    mod a;
    mod_make(&a, 0);
    attach(&a, dir, 0);
    struct stat st;
    assert_int_equal(stat(dir, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0700);
    run r;
    run_open(&r, a.m, PW_ENGINE_JIT);
    check_results(&r, 0);
    pw_store_free(r.s);
    mod_free(&a);
    uint64_t total;
    assert_int_equal(list_dir(dir, &total, NULL, one, sizeof one), 1);
    /* a hit: the file's time is its last use */
    struct timespec old[2] = {{.tv_sec = 946684800}, {.tv_sec = 946684800}};
    assert_int_equal(utimensat(AT_FDCWD, one, old, 0), 0);
    mod b;
    mod_make(&b, 0);
    attach(&b, dir, 0);
    run_open(&r, b.m, PW_ENGINE_JIT);
    check_results(&r, 0);
    assert_int_equal(pw__jit_state(fn(&r, "fib")), 1);
    pw_store_free(r.s);
    mod_free(&b);
    assert_int_equal(stat(one, &st), 0);
    assert_true(st.st_mtim.tv_sec > 946684800);
    /* a damaged file: refused, translated again, replaced */
    int fd = open(one, O_RDWR);
    assert_true(fd >= 0);
    assert_int_equal(pwrite(fd, "\xff\xff", 2, 5000), 2);
    close(fd);
    mod c;
    mod_make(&c, 0);
    attach(&c, dir, 0);
    run_open(&r, c.m, PW_ENGINE_JIT);
    check_results(&r, 0);
    pw_store_free(r.s);
    mod_free(&c);
    assert_int_equal(list_dir(dir, &total, NULL, one, sizeof one), 1);
    mod d;
    mod_make(&d, 0);
    fd = open(one, O_RDONLY);
    uint8_t *buf = malloc((size_t)total);
    assert_non_null(buf);
    assert_int_equal(read(fd, buf, (size_t)total), (ssize_t)total);
    close(fd);
    assert_int_equal(pw_code_verify(d.m, d.digest, buf, (size_t)total, NULL), PW_CODE_OK);
    free(buf);
    mod_free(&d);
    rm_rf(root);
    free(root);
}

/* The largest .pcc file of dir (a translation, not a memo) into path. */
static void largest(const char *dir, char *path, size_t cap) {
    DIR *d = opendir(dir);
    assert_non_null(d);
    off_t best = -1;
    struct dirent *de;
    while ((de = readdir(d))) {
        size_t l = strlen(de->d_name);
        if (l <= 4 || strcmp(de->d_name + l - 4, ".pcc")) continue;
        char p[700];
        snprintf(p, sizeof p, "%s/%s", dir, de->d_name);
        struct stat st;
        assert_int_equal(stat(p, &st), 0);
        if (st.st_size > best) best = st.st_size, snprintf(path, cap, "%s", p);
    }
    closedir(d);
    assert_true(best > 0);
}

/* Whether the cache remembers the file at path as checked (filedigest.c). */
static bool checked(const char *dir, const char *path, const uint8_t digest[32]) {
    pw_code_cache_config cfg = {.dir = dir};
    struct pw_ccref *cc = pw__cc_open(&cfg, digest);
    assert_non_null(cc);
    int fd = open(path, O_RDONLY);
    assert_true(fd >= 0);
    struct stat st;
    assert_int_equal(fstat(fd, &st), 0);
    uint8_t sum[32];
    assert_int_equal(pread(fd, sum, sizeof sum, st.st_size - 32), 32);
    bool yes = pw__cc_checked(cc, fd, (uint64_t)st.st_size, sum);
    close(fd);
    pw__cc_ref_free(cc);
    return yes;
}

/* Makes the module with the big function into *x (the caller frees it), runs it under
 * the JIT with the cache at dir: every result right, the big function translated
 * (it ran); hit: fib's translation came from the cache. */
static void run_big(mod *x, const char *dir, bool hit) {
    run r;
    mod_make_as(x, 0, true);
    attach(x, dir, 0);
    run_open(&r, x->m, PW_ENGINE_JIT);
    check_results(&r, 0);
    assert_int_equal(call(&r, "big", 1, 0), BIG_1);
    if (hit) assert_int_equal(pw__jit_state(fn(&r, "fib")), 1);
    pw_store_free(r.s);
}

/* A translation whose full check passed is remembered by its identity once it is two
 * seconds old, and later hits skip the sum; a write to it (a changed ctime, whatever
 * the mtime) makes it checked in full again, and a damaged one is refused. */
static void test_checked(void **state) {
    (void)state;
    char *root = tmpdir(), dir[300], one[700];
    snprintf(dir, sizeof dir, "%s/code", root);
    struct statfs fs;
    assert_int_equal(statfs(root, &fs), 0);
    if (fs.f_type != 0xEF53 && fs.f_type != 0x01021994 && fs.f_type != 0x58465342 &&
        fs.f_type != 0x9123683E && fs.f_type != 0x794C7630) {
        rm_rf(root);
        free(root);
        skip(); /* a file system whose ctime the memo does not trust */
    }
    for (int k = 0; k < 3; k++) { /* saved; checked (too new: not remembered); remembered */
        if (k == 2) sleep(3);
        mod a;
        run_big(&a, dir, k > 0);
        largest(dir, one, sizeof one);
        struct stat big;
        assert_int_equal(stat(one, &big), 0);
        assert_true(big.st_size > (1 << 20)); /* memos are kept for files of 1 MiB or more */
        struct timespec now;
        clock_gettime(CLOCK_REALTIME, &now);
        /* saved, or checked while under two seconds old (when this machine was quick
         * enough to tell): not remembered; checked when quiet: remembered */
        if (k == 0 || (k == 1 && now.tv_sec - big.st_ctim.tv_sec < 2))
            assert_false(checked(dir, one, a.digest));
        if (k == 2) assert_true(checked(dir, one, a.digest));
        mod_free(&a);
    }
    /* a hit by the memo gives the same results */
    mod b;
    run_big(&b, dir, true);
    /* damaged in place, its mtime put back: no longer remembered, refused, replaced */
    struct stat st;
    assert_int_equal(stat(one, &st), 0);
    int fd = open(one, O_RDWR);
    assert_true(fd >= 0);
    assert_int_equal(pwrite(fd, "\xff\xff", 2, 5000), 2);
    close(fd);
    struct timespec t[2] = {st.st_atim, st.st_mtim};
    assert_int_equal(utimensat(AT_FDCWD, one, t, 0), 0);
    assert_false(checked(dir, one, b.digest));
    mod_free(&b);
    mod c;
    run_big(&c, dir, false);
    /* translated and saved again: the file there now is whole */
    largest(dir, one, sizeof one);
    assert_int_equal(stat(one, &st), 0);
    fd = open(one, O_RDONLY);
    assert_true(fd >= 0);
    uint8_t *buf = malloc((size_t)st.st_size);
    assert_non_null(buf);
    assert_int_equal(read(fd, buf, (size_t)st.st_size), (ssize_t)st.st_size);
    close(fd);
    assert_int_equal(pw_code_verify(c.m, c.digest, buf, (size_t)st.st_size, NULL), PW_CODE_OK);
    free(buf);
    mod_free(&c);
    rm_rf(root);
    free(root);
}

/* A directory writable by others, or a link, is refused. */
static void test_unsafe_dir(void **state) {
    (void)state;
    char *root = tmpdir(), dir[300], link[300];
    snprintf(dir, sizeof dir, "%s/open", root);
    assert_int_equal(mkdir(dir, 0700), 0);
    assert_int_equal(chmod(dir, 0777), 0);
    mod a;
    mod_make(&a, 0);
    pw_code_cache_config cfg = {.dir = dir};
    pw_code_err ce;
    assert_int_equal(pw_module_set_code_cache(a.m, a.digest, &cfg, &ce), PW_CODE_UNSAFE_DIR);
    assert_int_equal(chmod(dir, 0720), 0);
    assert_int_equal(pw_module_set_code_cache(a.m, a.digest, &cfg, &ce), PW_CODE_UNSAFE_DIR);
    assert_int_equal(chmod(dir, 0700), 0);
    snprintf(link, sizeof link, "%s/link", root);
    assert_int_equal(symlink(dir, link), 0);
    cfg.dir = link;
    assert_int_equal(pw_module_set_code_cache(a.m, a.digest, &cfg, &ce), PW_CODE_UNSAFE_DIR);
    cfg.dir = dir;
    assert_int_equal(pw_module_set_code_cache(a.m, a.digest, &cfg, &ce), PW_CODE_OK);
    mod_free(&a);
    rm_rf(root);
    free(root);
}

/* Six modules into a cache bounded to about two artifacts: the bound holds and the
 * newest is there. */
static void test_eviction(void **state) {
    (void)state;
    char *dir = tmpdir();
    mod a;
    mod_make(&a, 0);
    uint8_t *art;
    size_t len;
    assert_int_equal(pw_code_compile(a.m, a.digest, PW_BOUNDS_EXPLICIT, false, &art, &len, NULL),
                     PW_CODE_OK);
    free(art);
    mod_free(&a);
    uint64_t max = len * 2 + len / 2, total;
    for (int seed = 1; seed <= 6; seed++) {
        mod x;
        mod_make(&x, seed);
        attach(&x, dir, max);
        run r;
        run_open(&r, x.m, PW_ENGINE_JIT);
        check_results(&r, seed);
        pw_store_free(r.s);
        mod_free(&x);
        size_t n = list_dir(dir, &total, NULL, NULL, 0);
        assert_true(total <= max);
        assert_true(n >= 1 && n <= 2);
    }
    mod last; /* the newest is a hit */
    mod_make(&last, 6);
    attach(&last, dir, max);
    run r;
    run_open(&r, last.m, PW_ENGINE_JIT);
    assert_int_equal(pw__jit_cached(r.s, fn(&r, "fib")), 1);
    check_results(&r, 6);
    pw_store_free(r.s);
    mod_free(&last);
    rm_rf(dir);
    free(dir);
}

/* Eight processes fill one cache with three modules at once, twice over: every file
 * left is whole and valid, and no temporary file is left. */
static void test_concurrent(void **state) {
    (void)state;
    char *dir = tmpdir();
    for (int round = 0; round < 2; round++) {
        pid_t kids[8];
        for (int k = 0; k < 8; k++) {
            kids[k] = fork();
            assert_true(kids[k] >= 0);
            if (kids[k] == 0) {
                mod x;
                mod_make(&x, k % 3);
                attach(&x, dir, 0);
                run r;
                run_open(&r, x.m, PW_ENGINE_JIT);
                check_results(&r, k % 3);
                pw_store_free(r.s);
                mod_free(&x);
                _exit(0);
            }
        }
        for (int k = 0; k < 8; k++) {
            int ws;
            assert_int_equal(waitpid(kids[k], &ws, 0), kids[k]);
            assert_true(WIFEXITED(ws) && WEXITSTATUS(ws) == 0);
        }
    }
    uint64_t total;
    size_t tmp;
    assert_int_equal(list_dir(dir, &total, &tmp, NULL, 0), 3);
    assert_int_equal(tmp, 0);
    for (int seed = 0; seed < 3; seed++) { /* each is found and right */
        mod x;
        mod_make(&x, seed);
        attach(&x, dir, 0);
        run r;
        run_open(&r, x.m, PW_ENGINE_JIT);
        assert_int_equal(pw__jit_cached(r.s, fn(&r, "fib")), 1);
        check_results(&r, seed);
        pw_store_free(r.s);
        mod_free(&x);
    }
    rm_rf(dir);
    free(dir);
}

/* "Validated" records (module.c, codecache.c): bytes validated once are not
 * validated again. Observed without timing: a module whose one body is invalid is
 * accepted only when made with the digest of a valid module that has a record. Records
 * are kept only for modules of 64 KiB or more: the test modules carry a custom section
 * of padding (PADDED), and the unpadded one shows the floor. */
static const uint8_t VALID[] = {0,    'a', 's', 'm', 1, 0,  0, 0, 1, 5, 1,    0x60, 0,   1,
                                0x7f, 3,   2,   1,   0, 10, 6, 1, 4, 0, 0x41, 0,    0x0b};
#define PAD    70000u
#define PADDED (sizeof VALID + 1 + 5 + 1 + 3 + PAD)
/* VALID (with its last body byte but two set to `op`) and a custom section "pad". */
static void padded(uint8_t out[PADDED], uint8_t op) {
    memcpy(out, VALID, sizeof VALID);
    out[sizeof VALID - 3] = op;
    uint8_t *p = out + sizeof VALID;
    uint32_t n = 1 + 3 + PAD;
    *p++ = 0; /* custom section, size as a 5-byte LEB128 */
    for (int i = 0; i < 5; i++, n >>= 7)
        *p++ = (uint8_t)((n & 0x7f) | (i < 4 ? 0x80 : 0));
    *p++ = 3;
    memcpy(p, "pad", 3);
    memset(p + 3, 0, PAD);
}
static pw_module *new_with(const uint8_t *b, size_t len, const uint8_t digest[32], const char *dir,
                           pw_error *err) {
    pw_code_cache_config cc = {.dir = dir};
    pw_module_config cfg = {.code_cache = dir ? &cc : NULL, .digest = digest};
    return pw_module_new(b, len, &cfg, err);
}

static void test_validated(void **state) {
    (void)state;
    static uint8_t good[PADDED], bad[PADDED];
    padded(good, 0x41);
    padded(bad, 0x42); /* i64.const where the result is i32 */
    uint8_t dv[32], di[32], dx[32], ds[32];
    pb_sha256(good, sizeof good, dv);
    pb_sha256(bad, sizeof bad, di);
    pb_sha256(VALID, sizeof VALID, ds);
    memset(dx, 7, sizeof dx);
    char *root = tmpdir(), dir[300], rec[700], rec2[700];
    snprintf(dir, sizeof dir, "%s/code", root);
    pw_error e1, e2;
    uint64_t total;
    assert_int_equal(mkdir(dir, 0700), 0);
    /* a small module: validated, no record read or written */
    pw_module *m = new_with(VALID, sizeof VALID, ds, dir, &e1);
    assert_non_null(m);
    pw_module_free(m);
    assert_int_equal(list_dir(dir, &total, NULL, NULL, 0), 0);
    /* an invalid module: the same error every time, never recorded */
    assert_null(new_with(bad, sizeof bad, di, dir, &e1));
    assert_null(new_with(bad, sizeof bad, di, dir, &e2));
    assert_int_equal(e1.status, PW_ERR_INVALID);
    assert_int_equal(e2.status, e1.status);
    assert_string_equal(e2.message, e1.message);
    assert_int_equal(list_dir(dir, &total, NULL, NULL, 0), 0);
    /* no record yet: bodies are validated */
    assert_null(new_with(bad, sizeof bad, dv, dir, &e2));
    assert_string_equal(e2.message, e1.message);
    /* a full validation writes the record (0600, checked by list_dir) */
    m = new_with(good, sizeof good, dv, dir, &e2);
    assert_non_null(m);
    pw_module_free(m);
    assert_int_equal(list_dir(dir, &total, NULL, rec, sizeof rec), 1);
    /* with it the bodies are skipped; the rest still runs */
    m = new_with(bad, sizeof bad, dv, dir, &e2);
    assert_non_null(m);
    pw_module_free(m);
    assert_int_equal(list_dir(dir, &total, NULL, NULL, 0), 1);
    /* no cache, or a record of another digest: validated */
    assert_null(new_with(bad, sizeof bad, dv, NULL, &e2));
    assert_string_equal(e2.message, e1.message);
    assert_null(new_with(bad, sizeof bad, dx, dir, &e2));
    assert_string_equal(e2.message, e1.message);
    /* a damaged record: ignored (validated), removed, written again by a validation */
    int fd = open(rec, O_RDWR);
    assert_true(fd >= 0);
    assert_int_equal(pwrite(fd, "\xff", 1, 20), 1);
    close(fd);
    assert_null(new_with(bad, sizeof bad, dv, dir, &e2));
    assert_string_equal(e2.message, e1.message);
    assert_int_equal(list_dir(dir, &total, NULL, NULL, 0), 0);
    m = new_with(good, sizeof good, dv, dir, &e2);
    assert_non_null(m);
    pw_module_free(m);
    m = new_with(bad, sizeof bad, dv, dir, &e2);
    assert_non_null(m);
    pw_module_free(m);
    /* a whole, valid record of another module under this one's name: not used */
    m = new_with(good, sizeof good, dx, dir, &e2); /* the record of dx */
    assert_non_null(m);
    pw_module_free(m);
    assert_int_equal(list_dir(dir, &total, NULL, NULL, 0), 2);
    DIR *d = opendir(dir);
    assert_non_null(d);
    struct dirent *de;
    rec2[0] = 0;
    while ((de = readdir(d)))
        if (strlen(de->d_name) > 4 && strcmp(strrchr(rec, '/') + 1, de->d_name) != 0 &&
            de->d_name[0] != '.')
            snprintf(rec2, sizeof rec2, "%s/%s", dir, de->d_name);
    closedir(d);
    assert_true(rec2[0]);
    assert_int_equal(rename(rec2, rec), 0);
    assert_null(new_with(bad, sizeof bad, dv, dir, &e2));
    assert_string_equal(e2.message, e1.message);
    rm_rf(root);
    free(root);
}

/* Functions of x compiled to internal code now. */
static uint32_t ready_funcs(const mod *x) {
    const struct pw_cmodule *cm = x->m->code;
    uint32_t n = 0;
    for (uint32_t i = 0; i < cm->nfuncs; i++)
        n += pw__cfunc_ready(&cm->funcs[i]);
    return n;
}

/* Offsets in an artifact (cc_header, codecache.c) and one function's record entry. */
enum { H_NFUNCS = 88, H_ICODE_OFF = 136, H_TOTAL = 152 };

static uint64_t hdr64(const uint8_t *art, size_t off) {
    uint64_t v;
    memcpy(&v, art + off, 8);
    return v;
}

/* Word k of the artifact's internal code section (icode.h), set to v, and the
 * integrity sum made right again, as a forger (or a bug) would. */
static void set_icode_word(uint8_t *art, size_t len, uint64_t k, uint32_t v) {
    memcpy(art + hdr64(art, H_ICODE_OFF) + k * 4, &v, 4);
    pb_sum(art, len - 32, art + len - 32);
}

static uint32_t icode_word(const uint8_t *art, uint64_t k) {
    uint32_t v;
    memcpy(&v, art + hdr64(art, H_ICODE_OFF) + k * 4, 4);
    return v;
}

/* An artifact carries its functions' internal code: a module that loads it takes
 * every function's code from there at its first call instead of compiling the body,
 * and that code is the very code compiling gives. A section whose records reach past
 * it is refused as malformed (even with a right sum); a record that is inconsistent
 * inside is not used (the body is compiled) and the results stay right. */
static void test_icode(void **state) {
    (void)state;
    mod a, b, c;
    mod_make_as(&a, 0, true); /* big: compiled function by function, not packed */
    uint8_t *art;
    size_t len;
    pw_code_err ce;
    assert_int_equal(pw_code_compile(a.m, a.digest, PW_BOUNDS_EXPLICIT, false, &art, &len, &ce),
                     PW_CODE_OK);
    assert_int_equal(hdr64(art, H_TOTAL), len);
    char *dir = tmpdir(), path[300];
    snprintf(path, sizeof path, "%s/a.pcc", dir);
    write_file(path, art, len);
    mod_make_as(&b, 0, true);
    assert_int_equal(pw_code_load(b.m, b.digest, path, &ce), PW_CODE_OK);
    run r;
    run_open(&r, b.m, PW_ENGINE_JIT);
    check_results(&r, 0);
    assert_int_equal(call(&r, "big", 1, 0), BIG_1);
    pw_store_free(r.s);
    uint32_t nb = ready_funcs(&b);
    assert_true(nb >= 7);
    assert_int_equal(b.m->code->restored, nb); /* none compiled from its body */
    /* the same code as compiling the bodies */
    const struct pw_cmodule *ca = a.m->code, *cb = b.m->code;
    for (uint32_t i = 0; i < cb->nfuncs; i++) {
        const pw_cfunc *x = &ca->funcs[i], *y = &cb->funcs[i];
        if (!pw__cfunc_ready(y)) continue;
        assert_true(pw__cfunc_ready(x));
        assert_int_equal(x->ncode, y->ncode);
        assert_int_equal(x->frame_slots, y->frame_slots);
        assert_int_equal(x->nhandlers, y->nhandlers);
        assert_int_equal(x->gc_nsites, y->gc_nsites);
        assert_memory_equal(x->code, y->code, (size_t)x->ncode * 4);
        assert_true(y->code == cb->code + y->slot); /* in its slot, where the JIT reads it */
    }
    mod_free(&b);
    /* function 0's entry past the section: malformed, whatever the sum says */
    uint32_t nf;
    memcpy(&nf, art + H_NFUNCS, 4);
    uint32_t ent0 = icode_word(art, 0);
    assert_int_not_equal(ent0, UINT32_MAX);
    set_icode_word(art, len, 0, 0x7fffffff);
    assert_int_equal(pw_code_verify(a.m, a.digest, art, len, &ce), PW_CODE_MALFORMED);
    write_file(path, art, len);
    mod_make_as(&c, 0, true);
    assert_int_equal(pw_code_load(c.m, c.digest, path, &ce), PW_CODE_MALFORMED);
    assert_null(atomic_load(&c.m->code->icode));
    mod_free(&c);
    /* function 0 (fib) with a frame no larger than its locals, then with an extent
     * one word longer than its parts: not taken, compiled */
    set_icode_word(art, len, 0, ent0);
    uint32_t frame = icode_word(art, 2ull * nf + ent0 + 1), elen = icode_word(art, 1);
    for (int k = 0; k < 2; k++) {
        set_icode_word(art, len, 2ull * nf + ent0 + 1, k == 0 ? 0 : frame);
        set_icode_word(art, len, 1, k == 0 ? elen : elen + 1);
        assert_int_equal(pw_code_verify(a.m, a.digest, art, len, &ce), PW_CODE_OK);
        write_file(path, art, len);
        mod_make_as(&c, 0, true);
        assert_int_equal(pw_code_load(c.m, c.digest, path, &ce), PW_CODE_OK);
        run_open(&r, c.m, PW_ENGINE_JIT);
        check_results(&r, 0);
        pw_store_free(r.s);
        assert_int_equal(c.m->code->restored, ready_funcs(&c) - 1);
        assert_true(c.m->code->funcs[0].frame_slots > c.m->code->funcs[0].nlocals);
        mod_free(&c);
    }
    free(art);
    rm_rf(dir);
    free(dir);
    mod_free(&a);
}

/* Lazy translation with a cache: each process saves what ran, and the internal code
 * of functions saved before but not run this time goes with them, so a third
 * process compiles no body of anything the first two ran. */
static void test_icode_lazy(void **state) {
    (void)state;
    char *root = tmpdir(), dir[300];
    snprintf(dir, sizeof dir, "%s/code", root);
    uint32_t f25;
    memcpy(&f25, &(float){2.5f}, 4);
    mod x[3];
    for (int k = 0; k < 3; k++) {
        run r;
        mod_make_as(&x[k], 0, true);
        attach(&x[k], dir, 0);
        run_open(&r, x[k].m, PW_ENGINE_LAZY);
        if (k != 1) assert_int_equal(call(&r, "fib", 20, 0), 6765);
        if (k != 0) assert_int_equal(call(&r, "floor", f25, 0), 2);
        pw_store_free(r.s);
        uint32_t ready = ready_funcs(&x[k]), restored = x[k].m->code->restored;
        if (k == 0) assert_int_equal(restored, 0);
        if (k == 1) assert_int_equal(restored, ready - 1); /* floor: compiled */
        if (k == 2) assert_int_equal(restored, ready);
        assert_true(ready >= (k == 2 ? 2u : 1u));
        mod_free(&x[k]); /* saves what ran */
    }
    rm_rf(root);
    free(root);
}

int main(void) {
    if (!PW_JIT_AVAILABLE) return 77; /* no JIT here: nothing to cache */
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trip), cmocka_unit_test(test_corruption),
        cmocka_unit_test(test_foreign),    cmocka_unit_test(test_cache),
        cmocka_unit_test(test_unsafe_dir), cmocka_unit_test(test_eviction),
        cmocka_unit_test(test_concurrent), cmocka_unit_test(test_validated),
        cmocka_unit_test(test_checked),    cmocka_unit_test(test_icode),
        cmocka_unit_test(test_icode_lazy),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
