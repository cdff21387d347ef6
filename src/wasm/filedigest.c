/*
 * filedigest.c — reading a module file whole together with its SHA-256, where the
 * digest of a file that has not changed since it was last hashed comes from a memo in
 * the code cache instead of being computed again (docs/jit.md, "Digest memo").
 *
 * Hashing Ruby's 30 MB module costs ~19 ms, an eighth of a warm `peri ruby` start;
 * everything the cache holds for a module (translations, snapshots, validated
 * records) is keyed by that digest. The memo is a cache file (64 hex digits + ".pcc",
 * 0600, written by temporary name + fsync + rename like every other) named from the
 * file's device and inode, holding the file's identity — device, inode, size, mtime,
 * ctime, each to the nanosecond — the digest, and an integrity sum (pb_sum).
 *
 * Why a matching identity means the same bytes: every change to a file's data sets its
 * ctime to the current time, and no unprivileged process can set ctime. A memo is
 * written only when (1) the identity did not change while the file was read (fstat
 * before and after) and (2) the ctime was at least PW_FD_QUIET seconds old when the
 * read ended. Any later write then gets a ctime later than the recorded one, even on a
 * file system whose timestamps advance in coarse ticks (the "racy" case git's index
 * guards the same way). The memo is used only when the identity before and after this
 * read equals the recorded one, and only on file systems known to keep ctime that way
 * (ext2/3/4, XFS, Btrfs, tmpfs, F2FS, overlayfs); on any other (FAT sets ctime from
 * mtime, network file systems take the server's clock) every read is hashed. A clock
 * set back by an administrator could in principle let a write reuse a recorded ctime;
 * the memo's trust is that of the cache directory itself, whose files already decide
 * what machine code runs (codecache.c).
 *
 * A file of at least 1 MiB is also copied into the cache once it is quiet, and a
 * later load whose digest comes from the memo maps that copy instead of reading the
 * file ("module copies", below).
 *
 * No global state; the memo is an optimisation: every failure to read or write it
 * falls back to hashing.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "peri/base.h"
#include "wasm/codecache.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <time.h>
#include <unistd.h>

#define FD_FORMAT 1u
/* Seconds a file's ctime must lie in the past before its digest is remembered. */
#define PW_FD_QUIET 2

static const char FD_MAGIC[8] = {'P', 'E', 'R', 'I', 'F', 'D', 'I', 'G'};

/* A file's identity: what changes when its data may have changed. */
typedef struct fd_ident {
    uint64_t dev, ino, size;
    int64_t mtime_s, mtime_ns, ctime_s, ctime_ns;
} fd_ident;

typedef struct fd_record {
    char magic[8];
    uint32_t format;
    uint32_t size; /* sizeof (fd_record) */
    fd_ident id;
    uint8_t digest[32];
} fd_record;
_Static_assert(sizeof(fd_record) == 8 + 4 + 4 + 7 * 8 + 32, "no padding in the record");

static fd_ident ident_of(const struct stat *st) {
    fd_ident id;
    memset(&id, 0, sizeof id);
    id.dev = (uint64_t)st->st_dev;
    id.ino = (uint64_t)st->st_ino;
    id.size = (uint64_t)st->st_size;
    id.mtime_s = (int64_t)st->st_mtim.tv_sec;
    id.mtime_ns = (int64_t)st->st_mtim.tv_nsec;
    id.ctime_s = (int64_t)st->st_ctim.tv_sec;
    id.ctime_ns = (int64_t)st->st_ctim.tv_nsec;
    return id;
}

static bool ident_eq(const fd_ident *a, const fd_ident *b) {
    return memcmp(a, b, sizeof *a) == 0;
}

/* File systems whose ctime every data change sets from the local clock. */
static bool ctime_kept(int fd) {
    struct statfs fs;
    if (fstatfs(fd, &fs) != 0) return false;
    switch ((unsigned long)fs.f_type) {
    case 0xEF53UL:     /* ext2/3/4 */
    case 0x58465342UL: /* XFS */
    case 0x9123683EUL: /* Btrfs */
    case 0x01021994UL: /* tmpfs */
    case 0xF2F52010UL: /* F2FS */
    case 0x794C7630UL: /* overlayfs */ return true;
    default: return false;
    }
}

/* Memos of module files' digests, and of cache files that passed their full check. */
#define DOMAIN_DIGEST  "peri-file-digest"
#define DOMAIN_CHECKED "peri-cache-checked"

/* A cache file's name here: SHA-256(domain with its NUL, key) in hex + ".pcc". */
static void entry_name(const char *domain, const void *key, size_t klen, char name[64 + 5]) {
    uint8_t h[32];
    pb_sha256_ctx c;
    pb_sha256_init(&c);
    pb_sha256_update(&c, domain, strlen(domain) + 1);
    pb_sha256_update(&c, key, klen);
    pb_sha256_final(&c, h);
    pb_hex(h, sizeof h, name);
    memcpy(name + 64, ".pcc", 5);
}

/* A memo's name: from the file's device and inode. */
static void memo_name(const char *domain, const fd_ident *id, char name[64 + 5]) {
    uint64_t key[2] = {id->dev, id->ino};
    entry_name(domain, key, sizeof key, name);
}

/* Whether a file whose ctime is ctime_s has been left alone long enough to remember. */
static bool quiet(int64_t ctime_s) {
    struct timespec now;
    return clock_gettime(CLOCK_REALTIME, &now) == 0 && (int64_t)now.tv_sec - ctime_s > PW_FD_QUIET;
}

/* The remembered value (digest) of the file of identity id, if the memo holds a whole one. */
static bool memo_get(const struct pw_ccref *cc, const char *domain, const fd_ident *id,
                     uint8_t digest[32]) {
    char name[64 + 5];
    memo_name(domain, id, name);
    int fd = pw__cc_open_entry(cc, name);
    if (fd < 0) return false;
    uint8_t buf[sizeof(fd_record) + PB_SUM_LEN + 1], sum[PB_SUM_LEN];
    ssize_t n = pb_read_full(fd, buf, sizeof buf);
    fd_record r;
    bool good = n == (ssize_t)(sizeof buf - 1); /* exactly that long */
    if (good) {
        memcpy(&r, buf, sizeof r);
        pb_sum(buf, sizeof r, sum);
        good = memcmp(sum, buf + sizeof r, PB_SUM_LEN) == 0 &&
               memcmp(r.magic, FD_MAGIC, sizeof r.magic) == 0 && r.format == FD_FORMAT &&
               r.size == sizeof r;
    }
    if (!good) unlinkat(cc->dirfd, name, 0); /* damaged: written again by the next hash */
    close(fd);
    if (!good || !ident_eq(&r.id, id)) return false; /* the file changed since */
    memcpy(digest, r.digest, 32);
    return true;
}

static void memo_put(struct pw_ccref *cc, const char *domain, const fd_ident *id,
                     const uint8_t digest[32]) {
    fd_record r;
    memset(&r, 0, sizeof r);
    memcpy(r.magic, FD_MAGIC, sizeof r.magic);
    r.format = FD_FORMAT;
    r.size = sizeof r;
    r.id = *id;
    memcpy(r.digest, digest, 32);
    uint8_t out[sizeof r + PB_SUM_LEN];
    memcpy(out, &r, sizeof r);
    pb_sum(&r, sizeof r, out + sizeof r);
    char name[64 + 5], tmp[PW_CC_TMP_MAX];
    memo_name(domain, id, name);
    int fd = pw__cc_tmp_create(cc, name, tmp);
    if (fd < 0) return;
    pw__cc_commit(cc, fd, pb_write_all(fd, out, sizeof out) == 0, tmp, name);
}

/* Read n bytes of fd from offset 0 into *out (malloc'd): exactly n, one more byte
 * asked for so that a file that grew is seen, not cut. */
static pw_code_error read_whole(int fd, size_t n, uint8_t **out, pw_code_err *err) {
    *out = NULL;
    uint8_t *b = malloc(n + 1);
    if (!b) return pw__cc_fail(err, PW_CODE_NOMEM, "out of memory");
    pb_huge_hint(b, n + 1); /* a 30 MB module: fewer first-touch faults */
    size_t got = 0;
    while (got < n + 1) {
        ssize_t r = pread(fd, b + got, n + 1 - got, (off_t)got);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) {
            int e = errno;
            free(b);
            return pw__cc_fail(err, PW_CODE_IO, "cannot read the file: %s", strerror(e));
        }
        if (r == 0) break;
        got += (size_t)r;
    }
    if (got != n) {
        free(b);
        return pw__cc_fail(err, PW_CODE_IO, "the file changed while it was read");
    }
    *out = b;
    return PW_CODE_OK;
}

/* The checks every module file gets before it is read: a regular file, not over max. */
static pw_code_error file_size(int fd, uint64_t max, struct stat *st, pw_code_err *err) {
    if (fstat(fd, st) != 0)
        return pw__cc_fail(err, PW_CODE_IO, "cannot stat the file: %s", strerror(errno));
    if (!S_ISREG(st->st_mode)) return pw__cc_fail(err, PW_CODE_IO, "not a regular file");
    if ((uint64_t)st->st_size > max || (uint64_t)st->st_size >= SIZE_MAX)
        return pw__cc_fail(err, PW_CODE_IO, "the file is larger than %llu bytes",
                           (unsigned long long)max);
    return PW_CODE_OK;
}

/* A reference to cfg's cache for memos (keyed by identity alone: the reference's
 * "module" digest is unused); NULL without a cache or on a file system whose ctime
 * cannot be trusted. */
static struct pw_ccref *memo_cache(const pw_code_cache_config *cfg, int fd) {
    static const uint8_t none[32];
    return cfg && ctime_kept(fd) ? pw__cc_open(cfg, none) : NULL;
}

/* Read the file open at fd (st: its fstat, checked by file_size) into *bytes and set
 * digest: from the memo in cc (may be NULL) when the file did not change while it was
 * read, else hashed, and remembered when it is also quiet. *kept: the file did not
 * change while read and is quiet (a file left alone, so likely loaded again). */
static pw_code_error read_digest(int fd, const struct stat *st, struct pw_ccref *cc,
                                 uint8_t **bytes, uint8_t digest[32], bool *kept,
                                 pw_code_err *err) {
    size_t n = (size_t)st->st_size;
    fd_ident before = ident_of(st);
    uint8_t *b;
    *kept = false;
    pw_code_error e = read_whole(fd, n, &b, err);
    if (e != PW_CODE_OK) return e;
    struct stat st2;
    if (fstat(fd, &st2) != 0) {
        free(b);
        return pw__cc_fail(err, PW_CODE_IO, "the file changed while it was read");
    }
    fd_ident after = ident_of(&st2);
    if (!ident_eq(&before, &after)) cc = NULL; /* no memo to use or write */
    *kept = cc && quiet(after.ctime_s);
    if (!cc || !memo_get(cc, DOMAIN_DIGEST, &after, digest)) {
        pb_sha256(b, n, digest);
        if (*kept) memo_put(cc, DOMAIN_DIGEST, &after, digest);
    }
    *bytes = b;
    if (err) err->kind = PW_CODE_OK, err->message[0] = 0;
    return PW_CODE_OK;
}

pw_code_error pw_file_read_digest(int fd, uint64_t max, const pw_code_cache_config *cfg,
                                  uint8_t **bytes, size_t *len, uint8_t digest[32],
                                  pw_code_err *err) {
    *bytes = NULL;
    *len = 0;
    struct stat st;
    pw_code_error e = file_size(fd, max, &st, err);
    if (e != PW_CODE_OK) return e;
    struct pw_ccref *cc = memo_cache(cfg, fd);
    bool kept;
    e = read_digest(fd, &st, cc, bytes, digest, &kept, err);
    pw__cc_ref_free(cc);
    if (e == PW_CODE_OK) *len = (size_t)st.st_size;
    return e;
}

/* ---------------------------------------------------------------- module copies
 * A module file of at least CHECKED_MIN bytes is also kept in the cache, named from
 * its digest, so that a load whose digest comes from the memo maps that copy instead
 * of reading the file (Ruby's 30 MB module: the read was a third of a warm start,
 * most of it the kernel filling fresh pages). The copy is not the user's file, which
 * may change at any time under a mapping; it is the cache's own, written once by
 * temporary name and rename, and trusted like the translations there: mapped only
 * once a full check (its SHA-256 equals the digest it is named by) passed on it and
 * its identity did not change since (pw__cc_checked); before that it is read and
 * checked. A copy that fails its check is removed. */

#define DOMAIN_COPY "peri-module-copy"
#define CHECKED_MIN (1u << 20)

static void copy_name(const uint8_t digest[32], char name[64 + 5]) {
    entry_name(DOMAIN_COPY, digest, 32, name);
}

/* The cache's copy of the module of this digest, n bytes long, into *out. False:
 * there is none, or it failed its check (then it is removed). */
static bool copy_use(struct pw_ccref *cc, const uint8_t digest[32], size_t n, pw_bytes *out) {
    char name[64 + 5];
    copy_name(digest, name);
    int fd = pw__cc_open_entry(cc, name);
    if (fd < 0) return false;
    struct stat st;
    bool ok = false, bad = true;
    if (fstat(fd, &st) == 0 && (uint64_t)st.st_size == n) {
        if (pw__cc_checked(cc, fd, n, digest)) {
            void *p = mmap(NULL, n, PROT_READ, MAP_PRIVATE, fd, 0);
            if (p != MAP_FAILED) *out = (pw_bytes){p, n, n}, ok = true;
            bad = false;
        } else {
            uint8_t *b, got[32];
            if (read_whole(fd, n, &b, NULL) == PW_CODE_OK) {
                pb_sha256(b, n, got);
                if (memcmp(got, digest, 32) == 0) {
                    pw__cc_mark_checked(cc, fd, &st, digest); /* mapped from now on */
                    *out = (pw_bytes){b, n, 0}, ok = true;
                } else {
                    free(b);
                }
            }
            bad = !ok;
        }
    }
    if (bad) unlinkat(cc->dirfd, name, 0);
    if (ok && pw__cc_touch_due(fd)) futimens(fd, NULL); /* last use, for eviction */
    close(fd);
    return ok;
}

/* Keep a copy of bytes (the module of this digest) in the cache, unless it has one. */
static void copy_put(struct pw_ccref *cc, const uint8_t digest[32], const uint8_t *b, size_t n) {
    char name[64 + 5], tmp[PW_CC_TMP_MAX];
    copy_name(digest, name);
    struct stat st;
    if (fstatat(cc->dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0) return;
    int fd = pw__cc_tmp_create(cc, name, tmp);
    if (fd < 0) return;
    pw__cc_commit(cc, fd, pb_write_all(fd, b, n) == 0, tmp, name);
}

pw_code_error pw_file_load_digest(int fd, uint64_t max, const pw_code_cache_config *cfg,
                                  pw_bytes *out, uint8_t digest[32], pw_code_err *err) {
    memset(out, 0, sizeof *out);
    struct stat st;
    pw_code_error e = file_size(fd, max, &st, err);
    if (e != PW_CODE_OK) return e;
    size_t n = (size_t)st.st_size;
    struct pw_ccref *cc = memo_cache(cfg, fd);
    fd_ident id = ident_of(&st);
    if (cc && n >= CHECKED_MIN && memo_get(cc, DOMAIN_DIGEST, &id, digest) &&
        copy_use(cc, digest, n, out)) {
        pw__cc_ref_free(cc);
        if (err) err->kind = PW_CODE_OK, err->message[0] = 0;
        return PW_CODE_OK;
    }
    bool kept;
    e = read_digest(fd, &st, cc, &out->p, digest, &kept, err);
    if (e == PW_CODE_OK) {
        out->len = n;
        if (kept && n >= CHECKED_MIN) copy_put(cc, digest, out->p, n); /* loaded again */
    }
    pw__cc_ref_free(cc);
    return e;
}

/* ---------------------------------------------------------------- checked cache files
 * The same argument for the cache's own files: a translation or snapshot whose
 * identity equals the one recorded right after its full integrity check passed has
 * not been written since, so the check (a sum over every byte: 13 MB of Ruby's
 * translation, 22 MB of its snapshot) is not repeated. The memo also holds the file's
 * stored sum, which must still match; files under 1 MiB are always summed. Hits touch
 * a file's mtime (eviction's last use) only when it is an hour old (pw__cc_touch_due), since a
 * touch changes ctime. */

#define TOUCH_S 3600
/* Smaller files are summed (~0.1 ms per MiB) faster than a memo is looked up:
 * CHECKED_MIN, above. */

bool pw__cc_checked(const struct pw_ccref *cc, int fd, uint64_t size, const uint8_t sum[32]) {
    struct stat st;
    uint8_t got[32];
    if (!cc || size < CHECKED_MIN || fstat(fd, &st) != 0 || !ctime_kept(fd)) return false;
    fd_ident id = ident_of(&st);
    return memo_get(cc, DOMAIN_CHECKED, &id, got) && memcmp(got, sum, 32) == 0;
}

void pw__cc_mark_checked(struct pw_ccref *cc, int fd, const struct stat *before,
                         const uint8_t sum[32]) {
    struct stat st;
    if (!cc || (uint64_t)before->st_size < CHECKED_MIN || fstat(fd, &st) != 0 || !ctime_kept(fd))
        return;
    fd_ident a = ident_of(before), b = ident_of(&st);
    if (ident_eq(&a, &b) && quiet(b.ctime_s)) memo_put(cc, DOMAIN_CHECKED, &b, sum);
}

bool pw__cc_touch_due(int fd) {
    struct stat st;
    struct timespec now;
    if (fstat(fd, &st) != 0 || clock_gettime(CLOCK_REALTIME, &now) != 0) return true;
    return (int64_t)now.tv_sec - (int64_t)st.st_mtim.tv_sec >= TOUCH_S;
}
