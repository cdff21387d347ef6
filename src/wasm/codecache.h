/*
 * codecache.h — saved JIT translations (internal to src/wasm/; design in docs/jit.md,
 * "Compiled-code cache"). codecache.c owns the artifact format (header, code,
 * per-function offsets, integrity digest), its verification, and the on-disk cache
 * directory; jit.c asks it for a saved translation before translating a module and
 * hands it every translation it makes.
 *
 * Ownership: a pw_ccref belongs to the module's JIT table (jit.c, pw__jit_attach_cache)
 * and is freed with it by pw__cc_ref_free; it holds the cache directory open.
 * Invariant: nothing from a file is executed before every check of pw__cc_verify
 * passed on the bytes that are then mapped (they are read into private memory first,
 * so a file changed afterwards changes nothing).
 */
#ifndef PW_CODECACHE_H
#define PW_CODECACHE_H

#include "wasm/runtime.h"

#include <stdatomic.h>

#define PW_CC_DIGEST  32
#define PW_CC_TMP_MAX (64 + 5 + 64) /* a temporary file's name */

struct pw_ccref {
    int dirfd;                    /* the cache directory (O_RDONLY), owned */
    uint64_t max_bytes;           /* bound on the artifacts' total size */
    uint8_t module[PW_CC_DIGEST]; /* SHA-256 of the module's bytes */
    uint8_t engine[PW_CC_DIGEST]; /* this engine build (engine_id, codecache.c) */
    atomic_int probe[2][16];      /* per variant and feature set: 0 unknown, 1 absent, 2 present */
};

void pw__cc_ref_free(struct pw_ccref *cc);
/* Map the saved translation of m for (v, isa) if the cache has a valid one. */
bool pw__cc_load(struct pw_ccref *cc, const pw_module *m, int v, unsigned isa);
/* Save a translation of cm just made (code/len/offs as pw__jit_translate gives them,
 * or a lazy translation's, with PW_JIT_ABSENT entries).
 * Failures are silent: the cache is an optimisation. */
void pw__cc_save(struct pw_ccref *cc, const struct pw_cmodule *cm, int v, unsigned isa,
                 const uint8_t *code, size_t len, const int64_t *offs);
/* 1 the cache holds a file for (v, isa), 0 not (checked once, then remembered). */
int pw__cc_probe(struct pw_ccref *cc, const pw_module *m, int v, unsigned isa);

/* Helpers for other files kept in the cache directory (snapfile.c). Every cache
 * file is named by 64 hex digits + ".pcc" (eviction counts them all). */
/* Open the cache file name for reading: a regular file of ours, not writable by
 * others, not a link; -1 otherwise. Caller closes. */
int pw__cc_open_entry(const struct pw_ccref *cc, const char *name);
/* Create a temporary file (0600, O_EXCL) to become name; its name goes to tmp.
 * -1 on failure. */
int pw__cc_tmp_create(const struct pw_ccref *cc, const char *name, char tmp[PW_CC_TMP_MAX]);
/* Finish a write begun by pw__cc_tmp_create (good: every write succeeded): fsync,
 * close, rename over name, fsync the directory, evict past the bound. Takes fd; on
 * failure the temporary file is removed and false returned. */
bool pw__cc_commit(struct pw_ccref *cc, int fd, bool good, const char *tmp, const char *name);
/* Set err (may be NULL) to kind k and the formatted message; returns k. */
__attribute__((format(printf, 3, 4))) pw_code_error pw__cc_fail(pw_code_err *err, pw_code_error k,
                                                                const char *fmt, ...);
/* "Validated" records (module.c): a reference to cfg's cache for the module of
 * digest, not attached to a module (NULL: no cache, an unsafe directory, no engine
 * build id; free with pw__cc_ref_free). pw__cc_validated: the cache holds a valid
 * record for (digest, this engine) (a damaged or foreign one is removed).
 * pw__cc_mark_validated: write it (tmp + fsync + rename, 0600; failures silent). */
struct pw_ccref *pw__cc_open(const pw_code_cache_config *cfg, const uint8_t digest[32]);
bool pw__cc_validated(struct pw_ccref *cc);
void pw__cc_mark_validated(struct pw_ccref *cc);
/* Cache files checked before (filedigest.c): pw__cc_checked — the file at fd has the
 * identity (device, inode, size, mtime, ctime) recorded after a full check passed on
 * it, and that check's stored sum is sum, so it need not be checked again (false when
 * cc is NULL, size (the file's) is under 1 MiB, or on a file system that does not
 * keep ctime). pw__cc_mark_checked —
 * record it after a full check passed, if the identity is still before's and the
 * file has been quiet for two seconds. pw__cc_touch_due — a hit should touch the
 * file's mtime (last use) now: it is an hour old (a touch changes the identity). */
struct stat;
bool pw__cc_checked(const struct pw_ccref *cc, int fd, uint64_t size, const uint8_t sum[32]);
void pw__cc_mark_checked(struct pw_ccref *cc, int fd, const struct stat *before,
                         const uint8_t sum[32]);
bool pw__cc_touch_due(int fd);
/* The code cache attached to m, or NULL (jit.c keeps it). */
struct pw_ccref *pw__cc_of(const pw_module *m);

#endif
