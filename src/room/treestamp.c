/*
 * treestamp.c — a digest of a host directory tree's metadata: the identity of what an
 * interpreter's boot may read from it (python.c: the standard library), so that a
 * startup snapshot saved by one process is used by another only while that tree is
 * as it was.
 *
 * SHA-256 over, for the root and then every entry below it in name order, depth
 * first: the entry's name, type and mode, size, device and inode, and its
 * modification and status-change times in ns; a symbolic link's target text (links
 * are not followed); a marker at the end of each directory. A file rewritten in
 * place with its old modification time put back still changes the stamp: no user can
 * set the status-change time.
 *
 * Bounds: a tree deeper than 32 levels or with more than 100,000 entries gives no
 * stamp (the caller then boots every time); so does any error reading it. Everything
 * is opened beneath the directory descriptor with O_NOFOLLOW.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "room_int.h"

#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define STAMP_DEPTH   32
#define STAMP_ENTRIES 100000u

typedef struct stamp_walk {
    pb_sha256_ctx h;
    size_t entries;
} stamp_walk;

static void put_u64(stamp_walk *w, uint64_t v) {
    pb_sha256_update(&w->h, &v, sizeof v);
}

static void put_stat(stamp_walk *w, const struct stat *st) {
    put_u64(w, (uint64_t)st->st_mode);
    put_u64(w, (uint64_t)st->st_size);
    put_u64(w, (uint64_t)st->st_dev);
    put_u64(w, (uint64_t)st->st_ino);
    put_u64(w, (uint64_t)st->st_mtim.tv_sec * 1000000000ull + (uint64_t)st->st_mtim.tv_nsec);
    put_u64(w, (uint64_t)st->st_ctim.tv_sec * 1000000000ull + (uint64_t)st->st_ctim.tv_nsec);
}

static int by_name(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The names in the directory fd (without . and ..), sorted; *n their count. The
 * array and each name are malloc'd (free_names). NULL on an error or past the bound. */
static char **read_names(int fd, stamp_walk *w, size_t *n) {
    *n = 0;
    int dup_fd = openat(fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dup_fd < 0) return NULL;
    DIR *d = fdopendir(dup_fd);
    if (!d) {
        close(dup_fd);
        return NULL;
    }
    char **names = NULL;
    size_t cap = 0;
    bool good = true;
    struct dirent *e;
    while (good && (e = readdir(d)) != NULL) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        if (++w->entries > STAMP_ENTRIES) {
            good = false;
            break;
        }
        if (*n == cap) {
            size_t nc = cap ? cap * 2 : 32;
            char **g = realloc(names, nc * sizeof *g);
            if (!g) {
                good = false;
                break;
            }
            names = g;
            cap = nc;
        }
        if (!(names[*n] = strdup(e->d_name)))
            good = false;
        else
            (*n)++;
    }
    closedir(d);
    if (!good) {
        for (size_t i = 0; i < *n; i++)
            free(names[i]);
        free(names);
        return NULL;
    }
    if (*n) qsort(names, *n, sizeof *names, by_name);
    return names ? names : calloc(1, sizeof *names);
}

static bool walk_dir(int fd, stamp_walk *w, int depth) {
    if (depth > STAMP_DEPTH) return false;
    size_t n;
    char **names = read_names(fd, w, &n);
    if (!names) return false;
    bool good = true;
    for (size_t i = 0; good && i < n; i++) {
        struct stat st;
        size_t len = strlen(names[i]);
        put_u64(w, len);
        pb_sha256_update(&w->h, names[i], len);
        if (fstatat(fd, names[i], &st, AT_SYMLINK_NOFOLLOW) != 0) {
            good = false;
            break;
        }
        put_stat(w, &st);
        if (S_ISLNK(st.st_mode)) {
            char target[PATH_MAX];
            ssize_t k = readlinkat(fd, names[i], target, sizeof target);
            good = k >= 0;
            if (good) {
                put_u64(w, (uint64_t)k);
                pb_sha256_update(&w->h, target, (size_t)k);
            }
        } else if (S_ISDIR(st.st_mode)) {
            int sub = openat(fd, names[i], O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
            good = sub >= 0 && walk_dir(sub, w, depth + 1);
            if (sub >= 0) close(sub);
        }
    }
    put_u64(w, UINT64_MAX); /* end of this directory */
    for (size_t i = 0; i < n; i++)
        free(names[i]);
    free(names);
    return good;
}

bool pr__tree_stamp(int dirfd, uint8_t out[32]) {
    stamp_walk w = {.entries = 0};
    struct stat st;
    if (dirfd < 0 || fstat(dirfd, &st) != 0 || !S_ISDIR(st.st_mode)) return false;
    pb_sha256_init(&w.h);
    pb_sha256_update(&w.h, "peri-tree-stamp", sizeof "peri-tree-stamp");
    put_stat(&w, &st);
    if (!walk_dir(dirfd, &w, 0)) {
        uint8_t discard[PB_SHA256_LEN];
        pb_sha256_final(&w.h, discard);
        return false;
    }
    pb_sha256_final(&w.h, out);
    return true;
}
