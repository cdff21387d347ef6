/*
 * snapfile.c — instance snapshots saved in the code-cache directory, so that a new
 * process starts an instance from the state another process captured (docs/ruby.md,
 * "The startup snapshot": the room saves Ruby's post-initialisation state).
 *
 * A file is:
 *
 *   header (sf_header: magic, format, engine id, module digest, tag digest, the
 *           module's counts, section offsets, total length), zero-padded to 4 KiB
 *   meta   (per memory: offset in the memory section and size; the globals' cells;
 *           per table: its size, then its function indices; elem and data dropped
 *           flags), zero-padded to 64 KiB
 *   memory (each memory at a 64 KiB-aligned offset; zero blocks are holes)
 *   digest (integrity sum, pb_sum, of the header and meta with their paddings, then, for every
 *           4 KiB block of the memory section holding a non-zero byte, its offset
 *           and bytes: this fixes every byte of the file, and a reader need not
 *           read the holes)
 *
 * and is named by SHA-256("peri-snapshot", module digest, engine id, tag digest), 64
 * hex digits + ".pcc", beside the translations (so the cache's size bound and its
 * eviction cover it too). It is written like a translation (a temporary file 0600,
 * fsync, rename), so a reader sees a whole file or none and concurrent writers just
 * replace each other's files.
 *
 * Invariants: a loaded snapshot is used only after every check below passed: the
 * file is ours and not writable by others, its header names this module, engine and
 * tag, every count equals the module's, every offset and size is inside the file and
 * 64 KiB-aligned, every table element is one of the module's functions or null,
 * every reference global is null, and the digest of the whole file is right. The
 * memory is then mapped from the file (private, copy-on-write): cache files are
 * never written in place, only replaced by rename, and the directory is the user's
 * own. The digest is an integrity check, not a signature: whoever can write the
 * cache can write any program the user runs.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "peri/base.h"
#include "wasm/codecache.h"
#include "wasm/snapshot.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define SF_FORMAT   2u
#define SF_HEAD     4096u
#define SF_BLOCK    4096u /* unit of the memory section's digest */
#define SF_NAME_MAX (64 + sizeof ".pcc")

static const char SF_MAGIC[8] = {'P', 'E', 'R', 'I', 'S', 'N', 'A', 'P'};

typedef struct sf_header {
    char magic[8];
    uint32_t format;
    uint32_t header_size;
    uint8_t engine[PW_CC_DIGEST];
    uint8_t module[PW_CC_DIGEST];
    uint8_t tag[PW_CC_DIGEST];
    uint32_t nmems, nglobals, ntables, nelems, ndatas, nfuncs;
    uint64_t meta_len; /* bytes of meta at SF_HEAD */
    uint64_t mem_off;  /* the memory section: 64 KiB-aligned */
    uint64_t mem_len;
    uint64_t total; /* file length, trailing digest included */
} sf_header;
_Static_assert(sizeof(sf_header) == 168, "no padding in the header");

static void tag_digest(const void *tag, size_t len, uint8_t out[PW_CC_DIGEST]) {
    pb_sha256_ctx c;
    pb_sha256_init(&c);
    pb_sha256_update(&c, "peri-snapshot-tag", sizeof "peri-snapshot-tag");
    pb_sha256_update(&c, tag, len);
    pb_sha256_final(&c, out);
}

static void file_name(const struct pw_ccref *cc, const uint8_t tag[PW_CC_DIGEST],
                      char name[SF_NAME_MAX]) {
    uint8_t key[PW_CC_DIGEST];
    pb_sha256_ctx c;
    pb_sha256_init(&c);
    pb_sha256_update(&c, "peri-snapshot", sizeof "peri-snapshot");
    pb_sha256_update(&c, cc->module, sizeof cc->module);
    pb_sha256_update(&c, cc->engine, sizeof cc->engine);
    pb_sha256_update(&c, tag, PW_CC_DIGEST);
    pb_sha256_final(&c, key);
    pb_hex(key, sizeof key, name);
    memcpy(name + 64, ".pcc", sizeof ".pcc");
}

static uint64_t round_up(uint64_t x, uint64_t a) {
    return (x + a - 1) / a * a;
}

/* The metadata's size for a snapshot's counts and table sizes. */
static uint64_t meta_size(const pw_snapshot *sn) {
    uint64_t n = (uint64_t)sn->nmems * 16 + (uint64_t)sn->nglobals * sizeof(pw_slot) +
                 (uint64_t)sn->ntables * 4 + sn->nelems + sn->ndatas;
    for (uint32_t t = 0; t < sn->ntables; t++)
        n += (uint64_t)sn->tables[t].size * 4;
    return n;
}

static void put(uint8_t **p, const void *src, size_t n) {
    if (n) memcpy(*p, src, n);
    *p += n;
}

/* ---------------------------------------------------------------- saving */

static bool pwrite_all(int fd, const void *buf, uint64_t n, uint64_t off) {
    const uint8_t *p = buf;
    while (n) {
        ssize_t w = pwrite(fd, p, n > (1u << 30) ? (1u << 30) : (size_t)n, (off_t)off);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return false;
        p += w;
        off += (uint64_t)w;
        n -= (uint64_t)w;
    }
    return true;
}

/* The digest's part for one 4 KiB block of the memory section at offset at: its
 * offset and bytes when it holds a non-zero byte, nothing when it is all zero. So
 * the digest fixes every byte, and a reader skips the file's holes unhashed. */
static void hash_block(pb_sum_ctx *c, uint64_t at, const uint8_t *b, size_t len) {
    static const uint8_t zero[SF_BLOCK];
    if (memcmp(b, zero, len) == 0) return;
    pb_sum_update(c, &at, sizeof at);
    pb_sum_update(c, b, len);
}

/* Copy [0, n) of the snapshot's memfd to fd at to, leaving zero blocks as holes, and
 * hash it (hash_block). */
static bool copy_memory(int from, uint64_t n, int fd, uint64_t to, pb_sum_ctx *c, uint8_t *buf,
                        size_t bufsz) {
    static const uint8_t zero[SF_BLOCK];
    for (uint64_t at = 0; at < n;) {
        size_t chunk = n - at < bufsz ? (size_t)(n - at) : bufsz;
        for (size_t got = 0; got < chunk;) {
            ssize_t r = pread(from, buf + got, chunk - got, (off_t)(at + got));
            if (r < 0 && errno == EINTR) continue;
            if (r <= 0) return false;
            got += (size_t)r;
        }
        for (size_t b = 0; b < chunk; b += SF_BLOCK) {
            size_t len = chunk - b < SF_BLOCK ? chunk - b : SF_BLOCK;
            hash_block(c, at + b, buf + b, len);
            if (memcmp(buf + b, zero, len) != 0 && !pwrite_all(fd, buf + b, len, to + at + b))
                return false;
        }
        at += chunk;
    }
    return true;
}

bool pw_snapshot_save_cached(const pw_module *m, const pw_snapshot *sn, const void *tag,
                             size_t tag_len) {
    struct pw_ccref *cc = pw__cc_of(m);
    if (!cc || !sn || sn->mod != m) return false;
    sf_header h;
    memset(&h, 0, sizeof h);
    memcpy(h.magic, SF_MAGIC, sizeof SF_MAGIC);
    h.format = SF_FORMAT;
    h.header_size = sizeof h;
    memcpy(h.engine, cc->engine, PW_CC_DIGEST);
    memcpy(h.module, cc->module, PW_CC_DIGEST);
    tag_digest(tag, tag_len, h.tag);
    h.nmems = sn->nmems, h.nglobals = sn->nglobals, h.ntables = sn->ntables;
    h.nelems = sn->nelems, h.ndatas = sn->ndatas, h.nfuncs = m->nfuncs;
    h.meta_len = meta_size(sn);
    h.mem_off = round_up(SF_HEAD + h.meta_len, PAGE);
    h.mem_len = sn->total;
    h.total = h.mem_off + h.mem_len + PW_CC_DIGEST;
    if (h.total > cc->max_bytes) return false;

    /* header + meta + padding, in memory */
    size_t front = (size_t)h.mem_off;
    uint8_t *a = calloc(1, front);
    if (!a) return false;
    memcpy(a, &h, sizeof h);
    uint8_t *p = a + SF_HEAD;
    for (uint32_t i = 0; i < sn->nmems; i++) {
        uint64_t v[2] = {sn->mem_off[i], sn->mem_size[i]};
        put(&p, v, sizeof v);
    }
    put(&p, sn->globals, (size_t)sn->nglobals * sizeof(pw_slot));
    for (uint32_t t = 0; t < sn->ntables; t++)
        put(&p, &sn->tables[t].size, 4);
    for (uint32_t t = 0; t < sn->ntables; t++)
        put(&p, sn->tables[t].funcs, (size_t)sn->tables[t].size * 4);
    put(&p, sn->elem_dropped, sn->nelems);
    put(&p, sn->data_dropped, sn->ndatas);

    char name[SF_NAME_MAX], tmp[PW_CC_TMP_MAX];
    file_name(cc, h.tag, name);
    int fd = pw__cc_tmp_create(cc, name, tmp);
    size_t bufsz = 1u << 20;
    uint8_t *buf = fd >= 0 ? malloc(bufsz) : NULL;
    if (!buf) {
        if (fd >= 0) pw__cc_commit(cc, fd, false, tmp, name);
        free(a);
        return false;
    }
    pb_sum_ctx c;
    pb_sum_init(&c);
    pb_sum_update(&c, a, front);
    uint8_t d[PW_CC_DIGEST];
    bool good = ftruncate(fd, (off_t)h.total) == 0 && pwrite_all(fd, a, front, 0) &&
                (sn->total == 0 || copy_memory(sn->fd, sn->total, fd, h.mem_off, &c, buf, bufsz));
    pb_sum_final(&c, d);
    good = good && pwrite_all(fd, d, sizeof d, h.total - PW_CC_DIGEST);
    free(buf);
    free(a);
    return pw__cc_commit(cc, fd, good, tmp, name);
}

/* ---------------------------------------------------------------- loading */

typedef struct reader {
    const uint8_t *p, *end;
} reader;

static bool take(reader *r, void *dst, size_t n) {
    if ((size_t)(r->end - r->p) < n) return false;
    if (n) memcpy(dst, r->p, n);
    r->p += n;
    return true;
}

static bool read_at(int fd, void *buf, size_t n, uint64_t off) {
    uint8_t *p = buf;
    while (n) {
        ssize_t r = pread(fd, p, n, (off_t)off);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) return false;
        p += r;
        off += (uint64_t)r;
        n -= (size_t)r;
    }
    return true;
}

/* Fill sn's arrays from the meta bytes, checking each value against the module. */
static pw_code_error parse_meta(pw_snapshot *sn, const pw_module *m, const uint8_t *meta,
                                size_t len, uint64_t mem_len, pw_code_err *err) {
    reader r = {meta, meta + len};
    for (uint32_t i = 0; i < sn->nmems; i++) {
        uint64_t v[2];
        if (!take(&r, v, sizeof v))
            return pw__cc_fail(err, PW_CODE_MALFORMED, "snapshot: short meta");
        bool own = i >= m->nmem_imports;
        if ((!own && (v[0] || v[1])) || v[0] % PAGE || v[1] % PAGE || v[0] > mem_len ||
            v[1] > mem_len - v[0])
            return pw__cc_fail(err, PW_CODE_MALFORMED, "snapshot: a memory is outside the file");
        sn->mem_off[i] = v[0];
        sn->mem_size[i] = v[1];
    }
    if (!take(&r, sn->globals, (size_t)sn->nglobals * sizeof(pw_slot)))
        return pw__cc_fail(err, PW_CODE_MALFORMED, "snapshot: short meta");
    for (uint32_t i = m->nglobal_imports; i < sn->nglobals; i++) {
        uint8_t k = (uint8_t)PW_VT_KIND(m->globals[i].type.type);
        if ((k == PW_K_REF && sn->globals[i].ref != PW_NULL_REF) || k == PW_K_V128)
            return pw__cc_fail(err, PW_CODE_MALFORMED, "snapshot: a global holds a reference");
    }
    for (uint32_t t = 0; t < sn->ntables; t++)
        if (!take(&r, &sn->tables[t].size, 4) || (t < m->ntable_imports && sn->tables[t].size != 0))
            return pw__cc_fail(err, PW_CODE_MALFORMED, "snapshot: bad table size");
    for (uint32_t t = 0; t < sn->ntables; t++) {
        snap_table *st = &sn->tables[t];
        if ((size_t)(r.end - r.p) / 4 < st->size)
            return pw__cc_fail(err, PW_CODE_MALFORMED, "snapshot: short meta");
        st->funcs = malloc(st->size ? (size_t)st->size * 4 : 1);
        if (!st->funcs) return pw__cc_fail(err, PW_CODE_NOMEM, "out of memory");
        take(&r, st->funcs, (size_t)st->size * 4);
        for (uint32_t j = 0; j < st->size; j++)
            if (st->funcs[j] != NULL_FUNC && st->funcs[j] >= m->nfuncs)
                return pw__cc_fail(err, PW_CODE_MALFORMED,
                                   "snapshot: a table element is no function");
    }
    if (!take(&r, sn->elem_dropped, sn->nelems) || !take(&r, sn->data_dropped, sn->ndatas) ||
        r.p != r.end)
        return pw__cc_fail(err, PW_CODE_MALFORMED, "snapshot: bad meta length");
    for (uint32_t k = 0; k < sn->nelems; k++)
        if (sn->elem_dropped[k] > 1)
            return pw__cc_fail(err, PW_CODE_MALFORMED, "snapshot: bad flag");
    for (uint32_t k = 0; k < sn->ndatas; k++)
        if (sn->data_dropped[k] > 1)
            return pw__cc_fail(err, PW_CODE_MALFORMED, "snapshot: bad flag");
    return PW_CODE_OK;
}

static bool hash_range(int fd, uint64_t from, uint64_t to, uint64_t base, bool blocks,
                       pb_sum_ctx *c, uint8_t *buf, size_t bufsz) {
    for (uint64_t at = from; at < to;) {
        size_t chunk = to - at < bufsz ? (size_t)(to - at) : bufsz;
        if (!read_at(fd, buf, chunk, at)) return false;
        if (!blocks) {
            pb_sum_update(c, buf, chunk);
        } else {
            for (size_t b = 0; b < chunk; b += SF_BLOCK)
                hash_block(c, at + b - base, buf + b, chunk - b < SF_BLOCK ? chunk - b : SF_BLOCK);
        }
        at += chunk;
    }
    return true;
}

/* The digest of the file (the front whole, the memory section by hash_block) equal
 * to want. Holes of the memory section (SEEK_HOLE) read as zeros and add nothing to
 * the digest, so they are skipped; where the file system cannot tell, all is read. */
static pw_code_error check_digest(int fd, const sf_header *h, const uint8_t want[PW_CC_DIGEST],
                                  pw_code_err *err) {
    size_t bufsz = 1u << 20;
    uint8_t *buf = malloc(bufsz);
    if (!buf) return pw__cc_fail(err, PW_CODE_NOMEM, "out of memory");
    pb_sum_ctx c;
    pb_sum_init(&c);
    bool good = hash_range(fd, 0, h->mem_off, 0, false, &c, buf, bufsz);
    uint64_t end = h->mem_off + h->mem_len;
    for (uint64_t at = h->mem_off; good && at < end;) {
        off_t d = lseek(fd, (off_t)at, SEEK_DATA);
        if (d < 0 && errno == ENXIO) break; /* only a hole is left */
        uint64_t data = d < 0 ? at : (uint64_t)d;
        if (data >= end) break;
        data -= (data - h->mem_off) % SF_BLOCK; /* whole blocks (holes are block-aligned) */
        off_t hole = d < 0 ? -1 : lseek(fd, (off_t)data, SEEK_HOLE);
        uint64_t stop = hole < 0 || (uint64_t)hole > end ? end : (uint64_t)hole;
        stop += (SF_BLOCK - (stop - h->mem_off) % SF_BLOCK) % SF_BLOCK;
        if (stop > end) stop = end;
        good = hash_range(fd, data, stop, h->mem_off, true, &c, buf, bufsz);
        at = stop;
    }
    free(buf);
    if (!good) return pw__cc_fail(err, PW_CODE_TRUNCATED, "snapshot: cannot read the file");
    uint8_t d[PW_CC_DIGEST];
    pb_sum_final(&c, d);
    return memcmp(d, want, sizeof d)
               ? pw__cc_fail(err, PW_CODE_CORRUPT, "snapshot: digest mismatch")
               : PW_CODE_OK;
}

static pw_code_error load_fd(int fd, const pw_module *m, struct pw_ccref *cc,
                             const uint8_t tag[PW_CC_DIGEST], pw_snapshot *sn, pw_code_err *err) {
    struct stat st;
    sf_header h;
    if (fstat(fd, &st) != 0) return pw__cc_fail(err, PW_CODE_IO, "snapshot: cannot stat the file");
    if (!read_at(fd, &h, sizeof h, 0) || memcmp(h.magic, SF_MAGIC, sizeof SF_MAGIC) != 0)
        return pw__cc_fail(err, PW_CODE_NOT_CODE, "not a snapshot");
    if (h.format != SF_FORMAT || h.header_size != sizeof h)
        return pw__cc_fail(err, PW_CODE_FORMAT, "snapshot: another format");
    if (memcmp(h.engine, cc->engine, PW_CC_DIGEST) != 0)
        return pw__cc_fail(err, PW_CODE_ENGINE, "snapshot: another engine build");
    if (memcmp(h.module, cc->module, PW_CC_DIGEST) != 0 || memcmp(h.tag, tag, PW_CC_DIGEST) != 0 ||
        h.nmems != m->nmems || h.nglobals != m->nglobals || h.ntables != m->ntables ||
        h.nelems != m->nelems || h.ndatas != m->ndatas || h.nfuncs != m->nfuncs)
        return pw__cc_fail(err, PW_CODE_MODULE, "snapshot: another module or initialisation");
    if (h.total != (uint64_t)st.st_size)
        return pw__cc_fail(err, PW_CODE_TRUNCATED, "snapshot: wrong length");
    if (h.mem_off % PAGE || h.meta_len > h.mem_off - SF_HEAD || h.mem_off < SF_HEAD ||
        h.total < PW_CC_DIGEST || h.mem_len != h.total - PW_CC_DIGEST - h.mem_off ||
        h.mem_off > h.total - PW_CC_DIGEST)
        return pw__cc_fail(err, PW_CODE_MALFORMED, "snapshot: bad layout");
    uint8_t want[PW_CC_DIGEST];
    if (!read_at(fd, want, sizeof want, h.total - PW_CC_DIGEST))
        return pw__cc_fail(err, PW_CODE_TRUNCATED, "snapshot: cannot read the file");
    /* a file unchanged since its full check is not summed again (filedigest.c) */
    pw_code_error e = PW_CODE_OK;
    if (!pw__cc_checked(cc, fd, h.total, want)) {
        e = check_digest(fd, &h, want, err);
        if (e) return e;
        pw__cc_mark_checked(cc, fd, &st, want);
    }
    uint8_t *meta = malloc(h.meta_len ? (size_t)h.meta_len : 1);
    if (!meta) return pw__cc_fail(err, PW_CODE_NOMEM, "out of memory");
    if (!read_at(fd, meta, (size_t)h.meta_len, SF_HEAD)) {
        free(meta);
        return pw__cc_fail(err, PW_CODE_TRUNCATED, "snapshot: cannot read the file");
    }
    e = parse_meta(sn, m, meta, (size_t)h.meta_len, h.mem_len, err);
    free(meta);
    if (e) return e;
    for (uint32_t i = 0; i < sn->nmems; i++)
        sn->mem_off[i] += h.mem_off;
    sn->total = h.mem_len;
    return PW_CODE_OK;
}

pw_code_error pw_snapshot_load_cached(const pw_module *m, const void *tag, size_t tag_len,
                                      pw_snapshot **out, pw_code_err *err) {
    *out = NULL;
    struct pw_ccref *cc = pw__cc_of(m);
    if (!cc) return pw__cc_fail(err, PW_CODE_IO, "no code cache attached");
    uint8_t td[PW_CC_DIGEST];
    tag_digest(tag, tag_len, td);
    char name[SF_NAME_MAX];
    file_name(cc, td, name);
    int fd = pw__cc_open_entry(cc, name);
    if (fd < 0) return pw__cc_fail(err, PW_CODE_IO, "no saved snapshot");
    pw_snapshot *sn = pw__snapshot_new(m);
    pw_code_error e =
        sn ? load_fd(fd, m, cc, td, sn, err) : pw__cc_fail(err, PW_CODE_NOMEM, "out of memory");
    if (e == PW_CODE_OK) {
        if (pw__cc_touch_due(fd)) futimens(fd, NULL); /* last use, for eviction */
        sn->fd = fd;
        *out = sn;
        return PW_CODE_OK;
    }
    if (e != PW_CODE_NOMEM && e != PW_CODE_IO) unlinkat(cc->dirfd, name, 0); /* saved again */
    close(fd);
    pw_snapshot_free(sn);
    return e;
}
