/*
 * hostdir.h — the room's host-directory backend (prefix pr_hd_, file hostdir.c): WASI
 * path operations on a real directory that `peri run --dir HOST[::GUEST]` preopens.
 *
 * Invariant: every path a guest gives is resolved beneath the directory descriptor it
 * is relative to, never by the kernel's own path walk. The walk goes component by
 * component with openat(O_PATH | O_DIRECTORY | O_NOFOLLOW) from descriptors it holds,
 * so a symlink swapped in during the walk is never followed by the kernel: symlinks
 * are read (readlinkat) and spliced into the remaining path by the walk itself, an
 * absolute path or symlink target is refused, ".." never goes above the starting
 * directory, and the last component is handed to the *at() call that does the work
 * with AT_SYMLINK_NOFOLLOW / O_NOFOLLOW. Functions return WASI errno values (0 ok).
 */
#ifndef PERI_ROOM_HOSTDIR_H
#define PERI_ROOM_HOSTDIR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* WASI errno numbers used by the backend and wasi.c. */
enum {
    PR_E_SUCCESS = 0,
    PR_E_ACCES = 2,
    PR_E_BADF = 8,
    PR_E_EXIST = 20,
    PR_E_FAULT = 21,
    PR_E_INVAL = 28,
    PR_E_IO = 29,
    PR_E_ISDIR = 31,
    PR_E_LOOP = 32,
    PR_E_NAMETOOLONG = 37,
    PR_E_NOENT = 44,
    PR_E_NOMEM = 48,
    PR_E_NOTDIR = 54,
    PR_E_PERM = 63,
    PR_E_NOTCAPABLE = 76,
};

/* Maps a host errno to the WASI errno. */
int pr__hd_errno(int host_errno);

/* Opens path beneath dirfd. oflags/fdflags/lookup are WASI's; read/write say which
 * access the rights ask for. On success *out is an owned host descriptor and *is_dir
 * whether it is a directory. */
int pr__hd_open(int dirfd, const char *path, size_t len, uint32_t lookup, uint32_t oflags,
                uint16_t fdflags, bool read, bool write, int *out, bool *is_dir);
int pr__hd_mkdir(int dirfd, const char *path, size_t len);
int pr__hd_rmdir(int dirfd, const char *path, size_t len);
int pr__hd_unlink(int dirfd, const char *path, size_t len);
int pr__hd_rename(int d1, const char *p1, size_t l1, int d2, const char *p2, size_t l2);
int pr__hd_link(int d1, uint32_t lookup, const char *p1, size_t l1, int d2, const char *p2,
                size_t l2);
/* target is the symlink's contents: an absolute target is refused (E_PERM). */
int pr__hd_symlink(const char *target, size_t tlen, int dirfd, const char *path, size_t len);
/* Writes at most cap bytes of the link's contents into buf; *n the count. */
int pr__hd_readlink(int dirfd, const char *path, size_t len, uint8_t *buf, uint32_t cap,
                    uint32_t *n);
/* The 64-byte WASI filestat of path (lookup & 1: follow a final symlink). */
int pr__hd_stat(int dirfd, uint32_t lookup, const char *path, size_t len, uint8_t out[64]);
int pr__hd_set_times(int dirfd, uint32_t lookup, const char *path, size_t len, uint64_t atim,
                     uint64_t mtim, uint32_t fst);

/* Descriptor-level operations. */
int pr__hd_fstat(int fd, uint8_t out[64]);
int pr__hd_futimes(int fd, uint64_t atim, uint64_t mtim, uint32_t fst);
/* WASI fd_readdir over a host directory: "." and ".." first, then the entries in the
 * kernel's order; cookies are entry indices. */
int pr__hd_readdir(int fd, uint8_t *buf, uint32_t cap, uint64_t cookie, uint32_t *used);
/* The WASI filetype of an open descriptor. */
uint8_t pr__hd_filetype(int fd);
/* readv/writev (off < 0: at the descriptor's position) over the guest's iovec array
 * at guest address iovs (n entries) in memory mem[0..size). *count the bytes moved.
 * Every entry is bounds-checked (EFAULT); only the first PR_HD_IOV_MAX non-empty ones
 * take part (a short count), held on the stack: no host allocation grows with n. */
enum { PR_HD_IOV_MAX = 1024 };
int pr__hd_rw(int fd, uint8_t *mem, uint64_t size, uint32_t iovs, uint32_t n, bool write,
              int64_t off, uint32_t *count);

/* A guest's fd_readdir buffer being filled (hostdir.c, wasi.c). */
typedef struct pr_dirents {
    uint8_t *buf;
    uint32_t cap, used;
} pr_dirents;
/* Appends one WASI dirent (its 24-byte header, then the name), cut at the buffer's end:
 * the guest sees a full buffer and asks again. false once the buffer is full. */
bool pr__dirent_put(pr_dirents *d, uint64_t next, uint64_t ino, const char *name, size_t n,
                    uint8_t type);

#endif
