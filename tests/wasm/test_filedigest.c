/*
 * test_filedigest.c — pw_file_read_digest (src/wasm/filedigest.c): the bytes and the
 * SHA-256 of a file, with a memo in the code cache for files unchanged since they were
 * hashed. Checked: a file just written is hashed and not remembered; a file left alone
 * for two seconds is remembered, and the memo is then used (shown by planting a memo
 * with another digest and a right sum); any change to the file (even one that keeps
 * its size and puts the old mtime back) makes it hashed again; a damaged memo is
 * ignored and removed; no cache means no memo; bad inputs give typed errors. Module
 * copies (pw_file_load_digest): a big quiet file is copied into the cache, the copy
 * is read and checked until it is quiet and then mapped, a module keeps and unmaps
 * the mapping, and a copy damaged in place is refused, removed and written again.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "peri/base.h"
#include "peri/wasm.h"
#include "wasm/jit/jit.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

/* The memo's layout (filedigest.c): magic, format, size, identity (7 x 8 bytes),
 * digest, then the integrity sum of those 104 bytes. */
#define REC_DIGEST 72
#define REC_LEN    104

static char *tmpdir(void) {
    char *d = strdup("/tmp/peri-fd-XXXXXX");
    assert_non_null(d);
    assert_non_null(mkdtemp(d));
    return d;
}

static void rm_rf(const char *dir) {
    char cmd[512];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    assert_int_equal(system(cmd), 0);
}

static void put(const char *path, const char *text) {
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    close(fd);
}

/* The .pcc files of dir; the path of one into one (may be NULL). */
static int memos(const char *dir, char *one, size_t cap) {
    DIR *d = opendir(dir);
    if (!d) return 0;
    int n = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        size_t l = strlen(de->d_name);
        if (l > 4 && !strcmp(de->d_name + l - 4, ".pcc")) {
            if (one) snprintf(one, cap, "%s/%s", dir, de->d_name);
            n++;
        }
    }
    closedir(d);
    return n;
}

/* Read path through pw_file_read_digest; checks the bytes, returns the digest. */
static void read_digest(const char *path, const char *cache, const char *want_text,
                        uint8_t digest[32]) {
    pw_code_cache_config cc = {.dir = cache};
    int fd = open(path, O_RDONLY);
    assert_true(fd >= 0);
    uint8_t *b = NULL;
    size_t n = 0;
    pw_code_err e;
    assert_int_equal(pw_file_read_digest(fd, 1 << 20, cache ? &cc : NULL, &b, &n, digest, &e),
                     PW_CODE_OK);
    close(fd);
    assert_int_equal(n, strlen(want_text));
    assert_memory_equal(b, want_text, n);
    free(b);
}

static bool ctime_kept_here(const char *dir) {
    struct statfs fs;
    assert_int_equal(statfs(dir, &fs), 0);
    switch ((unsigned long)fs.f_type) {
    case 0xEF53UL:
    case 0x58465342UL:
    case 0x9123683EUL:
    case 0x01021994UL:
    case 0xF2F52010UL:
    case 0x794C7630UL: return true;
    default: return false;
    }
}

static void test_memo(void **state) {
    (void)state;
    char *root = tmpdir(), file[300], cache[300], memo[700];
    snprintf(file, sizeof file, "%s/m.wasm", root);
    snprintf(cache, sizeof cache, "%s/code", root);
    if (!PW_JIT_AVAILABLE || !ctime_kept_here(root)) { /* no JIT: no engine id, no cache */
        print_message("skipped: no JIT, or /tmp's file system is not one the memo trusts\n");
        rm_rf(root);
        free(root);
        skip();
    }
    const char *v1 = "version one of the module", *v2 = "version two of the module";
    uint8_t d1[32], d2[32], got[32];
    pb_sha256(v1, strlen(v1), d1);
    pb_sha256(v2, strlen(v2), d2);
    put(file, v1);
    /* just written: hashed, not remembered (a write in the same clock tick could follow) */
    read_digest(file, cache, v1, got);
    assert_memory_equal(got, d1, 32);
    assert_int_equal(memos(cache, NULL, 0), 0);
    /* left alone past the quiet period: remembered */
    sleep(3);
    read_digest(file, cache, v1, got);
    assert_memory_equal(got, d1, 32);
    assert_int_equal(memos(cache, memo, sizeof memo), 1);
    /* the memo is what a later read uses: plant another digest with a right sum */
    uint8_t rec[REC_LEN + PB_SUM_LEN];
    int fd = open(memo, O_RDWR);
    assert_true(fd >= 0);
    assert_int_equal(read(fd, rec, sizeof rec), (ssize_t)sizeof rec);
    memset(rec + REC_DIGEST, 0x5a, 32);
    pb_sum(rec, REC_LEN, rec + REC_LEN);
    assert_int_equal(pwrite(fd, rec, sizeof rec, 0), (ssize_t)sizeof rec);
    close(fd);
    read_digest(file, cache, v1, got);
    for (int i = 0; i < 32; i++)
        assert_int_equal(got[i], 0x5a);
    /* without the cache: hashed */
    read_digest(file, NULL, v1, got);
    assert_memory_equal(got, d1, 32);
    /* a change of the same size with the old mtime put back: hashed again (ctime moved) */
    struct stat st;
    assert_int_equal(stat(file, &st), 0);
    put(file, v2);
    struct timespec times[2] = {st.st_atim, st.st_mtim};
    assert_int_equal(utimensat(AT_FDCWD, file, times, 0), 0);
    read_digest(file, cache, v2, got);
    assert_memory_equal(got, d2, 32);
    /* a damaged memo: not used, removed */
    sleep(3);
    read_digest(file, cache, v2, got); /* remembers v2 */
    assert_memory_equal(got, d2, 32);
    assert_true(memos(cache, memo, sizeof memo) >= 1);
    int n0 = memos(cache, NULL, 0);
    fd = open(memo, O_RDWR);
    assert_true(fd >= 0);
    assert_int_equal(pread(fd, rec, sizeof rec, 0), (ssize_t)sizeof rec);
    rec[REC_DIGEST] ^= 1; /* the sum no longer matches */
    assert_int_equal(pwrite(fd, rec, sizeof rec, 0), (ssize_t)sizeof rec);
    close(fd);
    read_digest(file, cache, v2, got);
    assert_memory_equal(got, d2, 32);
    /* the damaged one was removed, and this read (a quiet file) wrote a good one back */
    assert_int_equal(memos(cache, NULL, 0), n0);
    read_digest(file, cache, v2, got);
    assert_memory_equal(got, d2, 32);
    rm_rf(root);
    free(root);
}

/* A module of n bytes (a custom section "big" of filler) at path. */
static void put_big(const char *path, size_t n) {
    uint8_t *b = malloc(n);
    assert_non_null(b);
    size_t body = n - 8 - 1 - 5; /* magic+version, section id, a 5-byte size */
    memcpy(b, "\0asm\1\0\0\0", 8);
    b[8] = 0;
    for (int k = 0; k < 5; k++)
        b[9 + k] = (uint8_t)(((body >> (7 * k)) & 0x7f) | (k < 4 ? 0x80 : 0));
    b[14] = 3;
    memcpy(b + 15, "big", 3);
    for (size_t i = 18; i < n; i++)
        b[i] = (uint8_t)(i * 131 + (i >> 9));
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, b, n), (ssize_t)n);
    close(fd);
    free(b);
}

/* The path of the .pcc file of dir that is exactly size bytes long; false if none. */
static bool find_size(const char *dir, off_t size, char *out, size_t cap) {
    DIR *d = opendir(dir);
    if (!d) return false;
    bool found = false;
    struct dirent *de;
    while (!found && (de = readdir(d))) {
        struct stat st;
        snprintf(out, cap, "%s/%s", dir, de->d_name);
        found = stat(out, &st) == 0 && S_ISREG(st.st_mode) && st.st_size == size;
    }
    closedir(d);
    return found;
}

/* pw_file_load_digest of path: the bytes equal the file's, *maplen says how it came. */
static void load_big(const char *path, const char *cache, uint8_t digest[32], pw_bytes *out) {
    pw_code_cache_config cc = {.dir = cache};
    int fd = open(path, O_RDONLY);
    assert_true(fd >= 0);
    pw_code_err e;
    assert_int_equal(pw_file_load_digest(fd, 1 << 30, cache ? &cc : NULL, out, digest, &e),
                     PW_CODE_OK);
    close(fd);
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(out->len, (size_t)st.st_size);
    uint8_t want[32];
    pb_sha256(out->p, out->len, want); /* the bytes handed out are the file's */
    assert_memory_equal(want, digest, 32);
}

/* Module copies: a big file is kept in the cache once it is quiet, read and checked
 * until the copy itself is quiet, then mapped; a copy damaged in place is refused
 * and removed, and the file is read instead. */
static void test_copy(void **state) {
    (void)state;
    char *root = tmpdir(), file[300], cache[300], copy[700];
    snprintf(file, sizeof file, "%s/big.wasm", root);
    snprintf(cache, sizeof cache, "%s/code", root);
    if (!PW_JIT_AVAILABLE || !ctime_kept_here(root)) {
        print_message("skipped: no JIT, or /tmp's file system is not one the memo trusts\n");
        rm_rf(root);
        free(root);
        skip();
    }
    const size_t n = (3u << 20) / 2; /* over the 1 MiB below which nothing is copied */
    put_big(file, n);
    uint8_t want[32], got[32];
    {
        pw_bytes b;
        load_big(file, NULL, want, &b); /* no cache: read */
        assert_int_equal(b.maplen, 0);
        pw_bytes_free(&b);
        assert_null(b.p);
    }
    sleep(3); /* the file is quiet: its digest is remembered and a copy kept */
    pw_bytes b;
    load_big(file, cache, got, &b);
    assert_int_equal(b.maplen, 0);
    pw_bytes_free(&b);
    assert_true(find_size(cache, (off_t)n, copy, sizeof copy));
    /* the copy is new: read and checked, not yet trusted without a check */
    load_big(file, cache, got, &b);
    assert_int_equal(b.maplen, 0);
    pw_bytes_free(&b);
    sleep(3);
    load_big(file, cache, got, &b); /* checked while quiet: remembered */
    assert_int_equal(b.maplen, 0);
    pw_bytes_free(&b);
    load_big(file, cache, got, &b); /* mapped */
    assert_memory_equal(got, want, 32);
    assert_int_equal(b.maplen, n);
    /* a module keeps the mapping and unmaps it */
    pw_error pe;
    pw_module *m = pw_module_new_bytes(&b, NULL, &pe);
    assert_non_null(m);
    assert_null(b.p);
    size_t clen = 0;
    const uint8_t *sec = pw_module_custom_section(m, "big", 3, 0, &clen);
    assert_non_null(sec);
    assert_int_equal(clen, n - 18);
    assert_int_equal(sec[0], (uint8_t)(18 * 131 + (18 >> 9)));
    pw_module_free(m);
    /* damaged in place (a write moves its ctime): refused, removed, the file read */
    int fd = open(copy, O_RDWR);
    assert_true(fd >= 0);
    uint8_t x = 0;
    assert_int_equal(pread(fd, &x, 1, 4096), 1);
    x ^= 0xff;
    assert_int_equal(pwrite(fd, &x, 1, 4096), 1);
    close(fd);
    load_big(file, cache, got, &b);
    assert_memory_equal(got, want, 32);
    assert_int_equal(b.maplen, 0);
    pw_bytes_free(&b);
    /* a good copy was kept again in its place (the file is quiet) */
    assert_true(find_size(cache, (off_t)n, copy, sizeof copy));
    fd = open(copy, O_RDONLY);
    assert_true(fd >= 0);
    assert_int_equal(pread(fd, &x, 1, 4096), 1);
    close(fd);
    assert_int_equal(x, (uint8_t)(4096 * 131 + (4096 >> 9)));
    /* a module that fails to load unmaps a mapping it was given (free() on it would be
     * caught under ASan) */
    size_t pg = 2 * 4096;
    uint8_t *junk = mmap(NULL, pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    assert_true(junk != MAP_FAILED);
    memset(junk, 0x77, pg);
    pw_bytes bad = {junk, pg, pg};
    assert_null(pw_module_new_bytes(&bad, NULL, &pe));
    assert_null(bad.p);
    rm_rf(root);
    free(root);
}

static void test_errors(void **state) {
    (void)state;
    char *root = tmpdir(), file[300];
    snprintf(file, sizeof file, "%s/m.wasm", root);
    put(file, "0123456789");
    uint8_t *b = (uint8_t *)1, d[32];
    size_t n = 7;
    pw_code_err e;
    int fd = open(file, O_RDONLY);
    assert_true(fd >= 0);
    assert_int_equal(pw_file_read_digest(fd, 9, NULL, &b, &n, d, &e), PW_CODE_IO);
    assert_null(b);
    assert_int_equal(n, 0);
    assert_non_null(strstr(e.message, "larger"));
    assert_int_equal(pw_file_read_digest(fd, 10, NULL, &b, &n, d, NULL), PW_CODE_OK);
    assert_int_equal(n, 10);
    free(b);
    close(fd);
    fd = open(root, O_RDONLY | O_DIRECTORY);
    assert_true(fd >= 0);
    assert_int_equal(pw_file_read_digest(fd, 100, NULL, &b, &n, d, &e), PW_CODE_IO);
    assert_non_null(strstr(e.message, "regular"));
    close(fd);
    assert_int_equal(pw_file_read_digest(-1, 100, NULL, &b, &n, d, &e), PW_CODE_IO);
    rm_rf(root);
    free(root);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_memo),
        cmocka_unit_test(test_copy),
        cmocka_unit_test(test_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
