/*
 * test_hostdir.c — the host-directory backend (src/room/hostdir.c) on its own: paths
 * stay beneath the directory, including while another thread swaps a symlink to /etc
 * in and out of the path being walked (the TOCTOU case a kernel path walk would lose);
 * and readv/writev over a guest's iovecs take host memory that does not grow with their
 * number.
 */
#include "room/hostdir.h"

#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

typedef struct fixture {
    char tmp[64];
    char root[96];
    int rootfd;
} fixture;

static void put(const char *path, const char *text) {
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static int setup(void **state) {
    fixture *fx = calloc(1, sizeof *fx);
    strcpy(fx->tmp, "/tmp/peri-hostdir-XXXXXX");
    if (!mkdtemp(fx->tmp)) return -1;
    snprintf(fx->root, sizeof fx->root, "%s/root", fx->tmp);
    char p[200];
    mkdir(fx->root, 0755);
    snprintf(p, sizeof p, "%s/d", fx->root);
    mkdir(p, 0755);
    snprintf(p, sizeof p, "%s/d/passwd", fx->root);
    put(p, "inside\n");
    snprintf(p, sizeof p, "%s/outside", fx->tmp);
    put(p, "SECRET\n");
    fx->rootfd = open(fx->root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    *state = fx;
    return fx->rootfd < 0 ? -1 : 0;
}

static int teardown(void **state) {
    fixture *fx = *state;
    close(fx->rootfd);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", fx->tmp);
    int rc = system(cmd);
    free(fx);
    return rc == 0 ? 0 : -1;
}

static int open_path(fixture *fx, const char *path, uint32_t lookup) {
    int fd = -1;
    bool dir = false;
    int e = pr__hd_open(fx->rootfd, path, strlen(path), lookup, 0, 0, true, false, &fd, &dir);
    return e ? -e : fd;
}

static void test_escapes_refused(void **state) {
    fixture *fx = *state;
    char p[200];
    snprintf(p, sizeof p, "%s/etc", fx->root);
    assert_int_equal(symlink("/etc", p), 0);
    snprintf(p, sizeof p, "%s/up", fx->root);
    assert_int_equal(symlink("../outside", p), 0);
    const char *bad[] = {"etc/passwd", "../outside", "d/../../outside", "/etc/passwd",
                         "up",         "etc",        "d/../..",         ".."};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        int fd = open_path(fx, bad[i], 1);
        if (fd >= 0) fail_msg("%s opened", bad[i]);
        assert_int_equal(-fd, PR_E_NOTCAPABLE);
    }
    uint8_t st[64];
    assert_int_equal(pr__hd_stat(fx->rootfd, 1, "etc/passwd", 10, st), PR_E_NOTCAPABLE);
    assert_int_equal(pr__hd_stat(fx->rootfd, 1, "..", 2, st), PR_E_NOTCAPABLE);
    assert_int_equal(pr__hd_mkdir(fx->rootfd, "../x", 4), PR_E_NOTCAPABLE);
    assert_int_equal(pr__hd_unlink(fx->rootfd, "etc/passwd", 10), PR_E_NOTCAPABLE);
    assert_int_equal(pr__hd_symlink("/etc", 4, fx->rootfd, "mine", 4), PR_E_PERM);
    assert_int_equal(pr__hd_link(fx->rootfd, 1, "up", 2, fx->rootfd, "h", 1), PR_E_NOTCAPABLE);
    assert_int_equal(pr__hd_rename(fx->rootfd, "d", 1, fx->rootfd, "../d", 4), PR_E_NOTCAPABLE);
    /* Not following: the link itself is the object (and unlinking it is fine). */
    int fd = open_path(fx, "etc", 0);
    assert_int_equal(-fd, PR_E_LOOP);
    assert_int_equal(pr__hd_unlink(fx->rootfd, "etc", 3), 0);
    struct stat s;
    assert_int_equal(stat("/etc/passwd", &s), 0); /* untouched */
    /* Inside is fine. */
    fd = open_path(fx, "d/./../d/passwd", 1);
    assert_true(fd >= 0);
    close(fd);
}

/* Swaps root/w between a real directory and a symlink to /etc (rename is atomic). */
typedef struct swapper {
    fixture *fx;
    atomic_bool stop;
    atomic_long swaps;
} swapper;

static void *swap_main(void *arg) {
    swapper *sw = arg;
    char w[200], wd[200], wl[200];
    snprintf(w, sizeof w, "%s/w", sw->fx->root);
    snprintf(wd, sizeof wd, "%s/w.dir", sw->fx->root);
    snprintf(wl, sizeof wl, "%s/w.lnk", sw->fx->root);
    while (!atomic_load(&sw->stop)) {
        /* w -> directory */
        mkdir(wd, 0755);
        char f[220];
        snprintf(f, sizeof f, "%s/passwd", wd);
        put(f, "inside\n");
        rename(wd, w);
        /* w -> symlink to /etc (replacing the directory needs it gone first) */
        symlink("/etc", wl);
        snprintf(f, sizeof f, "%s/passwd", w);
        unlink(f);
        rmdir(w);
        rename(wl, w);
        atomic_fetch_add(&sw->swaps, 1);
        unlink(w);
    }
    return NULL;
}

static void test_symlink_swapped_during_walk(void **state) {
    fixture *fx = *state;
    struct stat etc;
    assert_int_equal(stat("/etc/passwd", &etc), 0);
    swapper sw = {.fx = fx};
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, swap_main, &sw), 0);
    long opened = 0, refused = 0;
    for (int i = 0; i < 20000 || atomic_load(&sw.swaps) < 200; i++) {
        int fd = open_path(fx, "w/passwd", 1);
        if (fd < 0) {
            refused++;
            continue;
        }
        struct stat s;
        assert_int_equal(fstat(fd, &s), 0);
        if (s.st_dev == etc.st_dev && s.st_ino == etc.st_ino) fail_msg("opened /etc/passwd");
        char b[8] = {0};
        ssize_t n = read(fd, b, 6);
        assert_true(n == 6 || n == 0);
        if (n == 6) assert_memory_equal(b, "inside", 6);
        close(fd);
        opened++;
        if (i > 2000000) break;
    }
    atomic_store(&sw.stop, true);
    pthread_join(th, NULL);
    /* Both outcomes happened: the race was real. */
    printf("swaps %ld, opened inside %ld, refused %ld\n", atomic_load(&sw.swaps), opened, refused);
    assert_true(refused > 0);
}

/* The process's peak resident set (VmHWM), in KiB. */
static long peak_rss_kib(void) {
    FILE *f = fopen("/proc/self/status", "r");
    assert_non_null(f);
    char line[256];
    long kib = -1;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "VmHWM: %ld kB", &kib) == 1) break;
    fclose(f);
    assert_true(kib >= 0);
    return kib;
}

/* Four million one-byte iovecs (32 MB of "guest memory"): one writev moves the first
 * 1024, every entry is still bounds-checked, and the host memory taken does not grow
 * with the count (16 bytes per entry would be 64 MB more peak RSS). */
static void test_rw_many_iovecs(void **state) {
    fixture *fx = *state;
    enum { N = 4000000 };
    uint64_t size = 8ull * N + 4096;
    uint8_t *mem = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    assert_true(mem != MAP_FAILED);
    uint32_t data = 8u * N, one = 1;
    mem[data] = 'a';
    for (uint32_t i = 0; i < N; i++) {
        memcpy(mem + 8ull * i, &data, 4);
        memcpy(mem + 8ull * i + 4, &one, 4);
    }
    char p[200];
    snprintf(p, sizeof p, "%s/many", fx->root);
    int fd = open(p, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    assert_true(fd >= 0);
    long before = peak_rss_kib();
    uint32_t count = 0;
    assert_int_equal(pr__hd_rw(fd, mem, size, 0, N, true, -1, &count), 0);
    long grown = peak_rss_kib() - before;
    printf("%d iovecs: wrote %u bytes, peak RSS grew %ld KiB\n", N, count, grown);
    assert_int_equal(count, PR_HD_IOV_MAX);
    struct stat s;
    assert_int_equal(fstat(fd, &s), 0);
    assert_int_equal(s.st_size, PR_HD_IOV_MAX);
    assert_true(grown < 16 * 1024);
    /* Reading back fills the first 1024 (all the same byte here). */
    assert_int_equal(pr__hd_rw(fd, mem, size, 0, N, false, 0, &count), 0);
    assert_int_equal(count, PR_HD_IOV_MAX);
    /* An entry past the first 1024 out of bounds: EFAULT, nothing written. */
    uint32_t bad = (uint32_t)size;
    memcpy(mem + 8ull * (N - 1), &bad, 4);
    assert_int_equal(pr__hd_rw(fd, mem, size, 0, N, true, -1, &count), PR_E_FAULT);
    assert_int_equal(count, 0);
    assert_int_equal(fstat(fd, &s), 0);
    assert_int_equal(s.st_size, PR_HD_IOV_MAX);
    close(fd);
    munmap(mem, size);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_escapes_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(test_symlink_swapped_during_walk, setup, teardown),
        cmocka_unit_test_setup_teardown(test_rw_many_iovecs, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
