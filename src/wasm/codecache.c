/*
 * codecache.c — saved JIT translations: the artifact format, its verification, `peri
 * compile`'s artifacts and the automatic on-disk cache (docs/jit.md, "Compiled-code
 * cache").
 *
 * An artifact is one whole-module translation (jit.c, position independent: its
 * absolute addresses live in a GOT the loader writes) for one bounds-check variant:
 *
 *   header (cc_header: magic, format, engine build id, module digest, CPU features,
 *           variant, the compiled module's shape, section offsets, total length),
 *           zero-padded to CC_PAGE bytes
 *   code   (GOT zeroed, then the fault stub and the functions), zero-padded to a
 *           multiple of CC_PAGE, so that it can be mapped from the file
 *   offs   (int64 per defined function: entry offset in code, or -1)
 *   icode  (the functions' internal code, icode.h: taken at a function's first call
 *           instead of compiling its body)
 *   digest (integrity sum, pb_sum, of every byte before it)
 *
 * Invariants: an artifact is executed only after the checks below all passed on the
 * very bytes that are mapped, which are writable while they are checked and then made
 * read/execute (never both); nothing of a file that fails is mapped executable. A
 * file named by the caller (pw_code_load) is read into a private anonymous mapping,
 * so a later change to the file changes nothing. A cache file is mapped from the file
 * (private, its pages shared with the page cache and other processes): the cache
 * directory is the user's own and not writable by others, and its files are only
 * ever replaced by rename, never written in place. The engine build id (the ELF
 * build id of the object holding the engine, with the version) binds the code to the
 * structure layouts and helper addresses it was made with; the module digest and the
 * shape (function count, code slots, frames) bind it to the module.
 *
 * The cache directory is opened once per attached module (pw_ccref.dirfd) and every
 * file in it is reached relative to it, without following links. Writers write a
 * temporary file (O_EXCL, 0600), fsync it, rename it over the final name and fsync
 * the directory, so a reader sees a whole file or none; a hit touches the file's
 * mtime, and eviction removes the least recently used files past the size bound.
 * No global state: everything lives in the caller's module.
 */
#include "wasm/codecache.h"
#include "peri/base.h"
#include "wasm/icode.h"
#include "wasm/jit/jit.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if PW_JIT_AVAILABLE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#endif

#ifndef PERI_VERSION
#define PERI_VERSION "0"
#endif

#define CC_FORMAT      6u
#define CC_DEFAULT_MAX (1ull << 30)
#define CC_SUFFIX      ".pcc"
#define CC_TMP_PREFIX  ".tmp."
#define CC_TMP_STALE_S 3600 /* a temporary file this old belongs to a dead writer */
#define CC_NAME_MAX    (64 + sizeof CC_SUFFIX)
#define CC_PAGE        4096u /* alignment of the code section in the file */

static const char CC_MAGIC[8] = {'P', 'E', 'R', 'I', 'C', 'O', 'D', 'E'};

typedef struct cc_header {
    char magic[8];
    uint32_t format;
    uint32_t header_size;
    uint8_t engine[PW_CC_DIGEST];
    uint8_t module[PW_CC_DIGEST];
    uint32_t features; /* PW_JIT_* the code may use */
    uint32_t variant;  /* PW_JIT_VARIANT_* */
    uint32_t nfuncs;
    uint32_t reserved; /* 0 */
    uint64_t ncode;    /* words of the module's code slots (pw_cmodule.nslot) */
    uint64_t shape;    /* hash of the functions' frames and code sizes */
    uint64_t code_off, code_len;
    uint64_t offs_off;
    uint64_t icode_off, icode_len; /* right after offs */
    uint64_t total;                /* file length, trailing digest included */
} cc_header;
_Static_assert(sizeof(cc_header) == 160, "no padding in the header");

static const char *const NAMES[] = {
    [PW_CODE_OK] = "ok",
    [PW_CODE_IO] = "io",
    [PW_CODE_NOMEM] = "out-of-memory",
    [PW_CODE_NOT_CODE] = "not-an-artifact",
    [PW_CODE_FORMAT] = "foreign-format",
    [PW_CODE_ENGINE] = "foreign-engine",
    [PW_CODE_CPU] = "foreign-cpu",
    [PW_CODE_MODULE] = "foreign-module",
    [PW_CODE_TRUNCATED] = "truncated",
    [PW_CODE_CORRUPT] = "corrupt",
    [PW_CODE_MALFORMED] = "malformed",
    [PW_CODE_UNSAFE_DIR] = "unsafe-cache-directory",
    [PW_CODE_UNSUPPORTED] = "unsupported",
};

const char *pw_code_error_name(pw_code_error e) {
    return (unsigned)e < sizeof NAMES / sizeof NAMES[0] && NAMES[e] ? NAMES[e] : "unknown";
}

pw_code_error pw__cc_fail(pw_code_err *err, pw_code_error k, const char *fmt, ...) {
    if (err) {
        err->kind = k;
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err->message, sizeof err->message, fmt, ap);
        va_end(ap);
    }
    return k;
}

static pw_code_error ok(pw_code_err *err) {
    if (err) {
        err->kind = PW_CODE_OK;
        err->message[0] = 0;
    }
    return PW_CODE_OK;
}

/* FNV-1a over what the compiled module's layout is made of before any function is
 * compiled (slots, frames' parameters and locals, types): a module that lays out
 * otherwise cannot take this code even if the caller passed a wrong digest. The code
 * inside a slot is bound by the engine build and the module digest (compiling is
 * deterministic). */
static uint64_t shape_of(const struct pw_cmodule *cm) {
    uint64_t h = 0xcbf29ce484222325ull;
    uint32_t v[5];
    for (uint32_t i = 0; i < cm->nfuncs; i++) {
        const pw_cfunc *f = &cm->funcs[i];
        v[0] = f->slot, v[1] = f->nparams, v[2] = f->nresults, v[3] = f->nlocals, v[4] = f->type;
        const uint8_t *b = (const uint8_t *)v;
        for (size_t k = 0; k < sizeof v; k++)
            h = (h ^ b[k]) * 0x100000001b3ull;
    }
    return h;
}

#if PW_JIT_AVAILABLE

/* ---------------------------------------------------------------- engine identity */

typedef struct build_id_find {
    uintptr_t addr;
    const uint8_t *id;
    size_t len;
} build_id_find;

static int find_build_id(struct dl_phdr_info *info, size_t size, void *arg) {
    (void)size;
    build_id_find *b = arg;
    bool mine = false;
    for (int i = 0; i < info->dlpi_phnum && !mine; i++) {
        const ElfW(Phdr) *p = &info->dlpi_phdr[i];
        uintptr_t lo = info->dlpi_addr + p->p_vaddr;
        mine = p->p_type == PT_LOAD && b->addr >= lo && b->addr - lo < p->p_memsz;
    }
    if (!mine) return 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *p = &info->dlpi_phdr[i];
        if (p->p_type != PT_NOTE) continue;
        const uint8_t *n = (const uint8_t *)(info->dlpi_addr + p->p_vaddr), *end = n + p->p_memsz;
        while ((size_t)(end - n) >= sizeof(ElfW(Nhdr))) {
            const ElfW(Nhdr) *nh = (const ElfW(Nhdr) *)(const void *)n;
            size_t name = (nh->n_namesz + 3u) & ~3u, desc = (nh->n_descsz + 3u) & ~3u;
            const uint8_t *d = n + sizeof *nh + name;
            if (name > (size_t)(end - n) || desc > (size_t)(end - d)) break;
            if (nh->n_type == NT_GNU_BUILD_ID && nh->n_namesz == 4 &&
                memcmp(n + sizeof *nh, "GNU", 4) == 0 && nh->n_descsz > 0) {
                b->id = d;
                b->len = nh->n_descsz;
                return 1;
            }
            n = d + desc;
        }
    }
    return 1; /* the engine's object, without a build id */
}

/* SHA-256 of the version and the build id of the object holding the engine; false
 * when it has no build id (then nothing is cached: a rebuilt engine could not be
 * told apart). */
static bool engine_id(uint8_t out[PW_CC_DIGEST]) {
    build_id_find b = {(uintptr_t)(const void *)engine_id, NULL, 0};
    dl_iterate_phdr(find_build_id, &b);
    if (!b.id) return false;
    pb_sha256_ctx c;
    pb_sha256_init(&c);
    pb_sha256_update(&c, "peri-code\0" PERI_VERSION, sizeof "peri-code\0" PERI_VERSION);
    pb_sha256_update(&c, b.id, b.len);
    pb_sha256_final(&c, out);
    return true;
}

/* ---------------------------------------------------------------- verification */

static uint64_t page_round(uint64_t n) {
    return (n + CC_PAGE - 1) / CC_PAGE * CC_PAGE;
}

/* The header's checks, in the order that names the first difference: what the bytes
 * are, who made them, for which CPU and module, and whether the layout adds up. */
static pw_code_error check_header(const cc_header *h, uint64_t file_len, const pw_module *m,
                                  const uint8_t digest[32], const uint8_t engine[32], unsigned cpu,
                                  pw_code_err *err) {
    const struct pw_cmodule *cm = m->code;
    if (memcmp(h->magic, CC_MAGIC, sizeof CC_MAGIC) != 0)
        return pw__cc_fail(err, PW_CODE_NOT_CODE, "not a compiled-code artifact (bad magic)");
    if (h->format != CC_FORMAT || h->header_size != sizeof *h)
        return pw__cc_fail(err, PW_CODE_FORMAT, "artifact format %u, this engine reads format %u",
                           h->format, CC_FORMAT);
    if (memcmp(h->engine, engine, PW_CC_DIGEST) != 0)
        return pw__cc_fail(err, PW_CODE_ENGINE, "artifact made by another engine build");
    if (h->features & ~cpu)
        return pw__cc_fail(err, PW_CODE_CPU, "artifact uses CPU features 0x%x, this CPU has 0x%x",
                           h->features, cpu);
    if (memcmp(h->module, digest, PW_CC_DIGEST) != 0)
        return pw__cc_fail(err, PW_CODE_MODULE,
                           "artifact made for another module (digest differs)");
    if (h->nfuncs != cm->nfuncs || h->ncode != cm->nslot || h->shape != shape_of(cm))
        return pw__cc_fail(err, PW_CODE_MODULE, "artifact made for another module (shape differs)");
    if (h->total != file_len)
        return pw__cc_fail(err, PW_CODE_TRUNCATED, "artifact is %llu bytes, its header says %llu",
                           (unsigned long long)file_len, (unsigned long long)h->total);
    uint64_t offs_bytes = (uint64_t)h->nfuncs * 8;
    if (h->variant > PW_JIT_VARIANT_GUARD || h->reserved != 0 || h->code_off != CC_PAGE ||
        h->code_len < pw__jit_got_bytes(h->nfuncs) || h->code_len > (1ull << 40) ||
        h->offs_off != h->code_off + page_round(h->code_len) ||
        h->icode_off != h->offs_off + offs_bytes || h->icode_len > (1ull << 40) ||
        h->total != h->icode_off + h->icode_len + PW_CC_DIGEST)
        return pw__cc_fail(err, PW_CODE_MALFORMED, "artifact sections are inconsistent");
    return ok(err);
}

/* After the digest matched: every entry is -1 (interpreted), PW_JIT_ABSENT (not
 * saved: translated at its first call) or a 16-byte aligned offset past the GOT and
 * inside the code. */
static pw_code_error check_offsets(const int64_t *offs, uint32_t n, uint64_t code_len,
                                   pw_code_err *err) {
    for (uint32_t i = 0; i < n; i++)
        if (offs[i] != -1 && offs[i] != PW_JIT_ABSENT &&
            ((uint64_t)offs[i] < pw__jit_got_bytes(n) || (uint64_t)offs[i] >= code_len ||
             offs[i] % 16 != 0))
            return pw__cc_fail(err, PW_CODE_MALFORMED, "artifact entry %u is out of range", i);
    return ok(err);
}

/* After the digest matched: the entry offsets (check_offsets), then every extent of
 * the internal code section (icode.h) inside it. */
static pw_code_error check_parts(const cc_header *h, const int64_t *offs, const uint8_t *icode,
                                 pw_code_err *err) {
    pw_code_error e = check_offsets(offs, h->nfuncs, h->code_len, err);
    if (!e && !pw__icode_check(icode, (size_t)h->icode_len, h->nfuncs))
        e = pw__cc_fail(err, PW_CODE_MALFORMED, "artifact internal code is inconsistent");
    return e;
}

static const uint8_t ZEROS[CC_PAGE];

/* The digest of the file's bytes before the digest, from its parts: the header page
 * (CC_PAGE bytes, the header first), the code with its padding (code_len bytes of
 * code, then `pad` bytes: NULL for zeros as written), offs, icode. */
static void digest_parts(const uint8_t *head, const uint8_t *code, const uint8_t *pad,
                         const int64_t *offs, const uint8_t *icode, uint8_t out[PW_CC_DIGEST]) {
    cc_header h;
    memcpy(&h, head, sizeof h);
    pb_sum_ctx c;
    pb_sum_init(&c);
    pb_sum_update(&c, head, CC_PAGE);
    pb_sum_update(&c, code, h.code_len);
    pb_sum_update(&c, pad ? pad : ZEROS, page_round(h.code_len) - h.code_len);
    pb_sum_update(&c, offs, (size_t)h.nfuncs * 8);
    pb_sum_update(&c, icode, (size_t)h.icode_len);
    pb_sum_final(&c, out);
}

pw_code_error pw_code_verify(const pw_module *m, const uint8_t digest[32], const uint8_t *art,
                             size_t len, pw_code_err *err) {
    uint8_t engine[PW_CC_DIGEST], d[PW_CC_DIGEST];
    if (!m->code->jit || !engine_id(engine))
        return pw__cc_fail(err, PW_CODE_UNSUPPORTED, "this engine build cannot check artifacts");
    cc_header h;
    if (len < sizeof h) {
        if (len < sizeof CC_MAGIC || memcmp(art, CC_MAGIC, sizeof CC_MAGIC) != 0)
            return pw__cc_fail(err, PW_CODE_NOT_CODE, "not a compiled-code artifact (bad magic)");
        return pw__cc_fail(err, PW_CODE_TRUNCATED, "artifact is %zu bytes, shorter than its header",
                           len);
    }
    memcpy(&h, art, sizeof h);
    pw_code_error e = check_header(&h, len, m, digest, engine, pw__jit_features(false), err);
    if (e) return e;
    int64_t *offs = malloc(h.nfuncs ? (size_t)h.nfuncs * 8 : 1);
    if (!offs) return pw__cc_fail(err, PW_CODE_NOMEM, "out of memory");
    memcpy(offs, art + h.offs_off, (size_t)h.nfuncs * 8);
    pb_sum(art, len - PW_CC_DIGEST, d);
    if (memcmp(d, art + len - PW_CC_DIGEST, PW_CC_DIGEST) != 0)
        e = pw__cc_fail(err, PW_CODE_CORRUPT, "artifact integrity digest does not match");
    else
        e = check_parts(&h, offs, art + h.icode_off, err);
    free(offs);
    return e;
}

/* ---------------------------------------------------------------- reading */

static bool read_at(int fd, void *buf, size_t n, uint64_t off) {
    uint8_t *p = buf;
    while (n) {
        ssize_t r = pread(fd, p, n > (1u << 30) ? (1u << 30) : n, (off_t)off);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) return false;
        p += r;
        n -= (size_t)r;
        off += (uint64_t)r;
    }
    return true;
}

/* Read, verify and install the artifact open at fd. want_variant/want_isa:
 * what a cache lookup expects (-1: anything, for pw_code_load). from_file: map the
 * code from the file (cache files only: see the invariants above), else read it. */
static pw_code_error load_fd(int fd, const pw_module *m, const uint8_t digest[32],
                             const uint8_t engine[32], int want_variant, int want_isa,
                             bool from_file, struct pw_ccref *cc, pw_code_err *err) {
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))
        return pw__cc_fail(err, PW_CODE_IO, "artifact is not a regular file");
    cc_header h;
    uint64_t flen = (uint64_t)st.st_size;
    if (flen < sizeof h) {
        char mg[sizeof CC_MAGIC] = {0};
        if (flen < sizeof mg || !read_at(fd, mg, sizeof mg, 0) ||
            memcmp(mg, CC_MAGIC, sizeof mg) != 0)
            return pw__cc_fail(err, PW_CODE_NOT_CODE, "not a compiled-code artifact (bad magic)");
        return pw__cc_fail(err, PW_CODE_TRUNCATED,
                           "artifact is %llu bytes, shorter than its header",
                           (unsigned long long)flen);
    }
    if (!read_at(fd, &h, sizeof h, 0))
        return pw__cc_fail(err, PW_CODE_IO, "cannot read the artifact");
    unsigned cpu = pw__jit_features(false);
    pw_code_error e = check_header(&h, flen, m, digest, engine, cpu, err);
    if (e) return e;
    if ((want_variant >= 0 && h.variant != (uint32_t)want_variant) ||
        (want_isa >= 0 && h.features != (uint32_t)want_isa))
        return pw__cc_fail(err, PW_CODE_MODULE, "artifact made for another variant or feature set");
    size_t maplen = (size_t)page_round(h.code_len);
    int64_t *offs = malloc(h.nfuncs ? (size_t)h.nfuncs * 8 : 1);
    if (!offs) return pw__cc_fail(err, PW_CODE_NOMEM, "out of memory");
    uint8_t *map = MAP_FAILED, *file = MAP_FAILED, head[CC_PAGE];
    uint8_t want[PW_CC_DIGEST], got[PW_CC_DIGEST];
    /* the internal code section: kept mapped and given to the module (icode.h) */
    uint8_t *ic = NULL, *icmap = MAP_FAILED;
    size_t icmaplen = 0;
    bool checked = false; /* a cache file unchanged since its full check (filedigest.c) */
    if (from_file) {      /* the whole file, private: checked where it will run */
        checked = read_at(fd, want, sizeof want, h.total - PW_CC_DIGEST) &&
                  pw__cc_checked(cc, fd, h.total, want);
        /* unchecked, every page is read now: fill them in one go */
        file = mmap(NULL, (size_t)h.total, PROT_READ | PROT_WRITE,
                    MAP_PRIVATE | (checked ? 0 : MAP_POPULATE), fd, 0);
        if (file == MAP_FAILED) {
            e = pw__cc_fail(err, PW_CODE_IO, "cannot map the artifact");
        } else {
            map = file + h.code_off;
            ic = file + h.icode_off;
            memcpy(offs, file + h.offs_off, (size_t)h.nfuncs * 8);
            memcpy(want, file + h.total - PW_CC_DIGEST, sizeof want);
            if (checked)
                memcpy(got, want, sizeof got);
            else
                pb_sum(file, (size_t)h.total - PW_CC_DIGEST, got);
        }
    } else { /* read into private memory: a later change to the file changes nothing */
        map = mmap(NULL, maplen, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        icmaplen = (size_t)page_round(h.icode_len ? h.icode_len : 1);
        icmap = mmap(NULL, icmaplen, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        ic = icmap == MAP_FAILED ? NULL : icmap;
        if (map == MAP_FAILED || icmap == MAP_FAILED)
            e = pw__cc_fail(err, PW_CODE_NOMEM, "out of memory");
        else if (!read_at(fd, head, CC_PAGE, 0) || !read_at(fd, map, maplen, h.code_off) ||
                 !read_at(fd, offs, (size_t)h.nfuncs * 8, h.offs_off) ||
                 !read_at(fd, ic, (size_t)h.icode_len, h.icode_off) ||
                 !read_at(fd, want, sizeof want, h.total - PW_CC_DIGEST))
            e = pw__cc_fail(err, PW_CODE_TRUNCATED, "artifact ends early");
        else if (memcmp(head, &h, sizeof h) != 0) /* what was checked is what is hashed */
            e = pw__cc_fail(err, PW_CODE_CORRUPT, "artifact changed while it was read");
        else
            digest_parts(head, map, map + h.code_len, offs, ic, got);
    }
    if (!e && memcmp(got, want, sizeof got) != 0)
        e = pw__cc_fail(err, PW_CODE_CORRUPT, "artifact integrity digest does not match");
    if (!e) e = check_parts(&h, offs, ic, err);
    if (!e && from_file && !checked) pw__cc_mark_checked(cc, fd, &st, want);
    if (file != MAP_FAILED) { /* keep only the code and internal code pages */
        size_t after = (size_t)(h.code_off + maplen);
        size_t iclo = (size_t)(h.icode_off / CC_PAGE * CC_PAGE); /* >= after */
        munmap(file, h.code_off);
        if (iclo > after) munmap(file + after, iclo - after);
        icmap = file + iclo;
        icmaplen = (size_t)h.total - iclo;
        /* drop the page table entries the check filled: the code (and internal code)
         * that runs faults its pages back from the page cache, the rest costs this
         * process nothing */
        if (!e && !checked) {
            madvise(map, maplen, MADV_DONTNEED);
            madvise(icmap, icmaplen, MADV_DONTNEED);
        }
    }
    /* the module takes the internal code (read only from now on) before the code is
     * installed: installing may compile functions at once (a packed module has
     * compiled them all when it was made) */
    if (!e && !m->code->packed && h.icode_len > h.nfuncs * 8ull &&
        mprotect(icmap, icmaplen, PROT_READ) == 0 &&
        pw__compile_adopt(m->code, ic, (size_t)h.icode_len, icmap, icmaplen))
        icmap = MAP_FAILED;
    if (icmap != MAP_FAILED) munmap(icmap, icmaplen);
    if (!e) {
        /* takes the mapping: made read/execute after the GOT is written */
        if (!pw__jit_install(m, (int)h.variant, map, maplen, h.code_len, offs))
            e = pw__cc_fail(err, PW_CODE_NOMEM, "cannot map the artifact's code");
        map = MAP_FAILED;
    }
    if (map != MAP_FAILED) munmap(map, maplen);
    free(offs);
    return e;
}

pw_code_error pw_code_load(const pw_module *m, const uint8_t digest[32], const char *path,
                           pw_code_err *err) {
    uint8_t engine[PW_CC_DIGEST];
    if (!m->code->jit || !engine_id(engine))
        return pw__cc_fail(err, PW_CODE_UNSUPPORTED, "this engine build cannot load artifacts");
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return pw__cc_fail(err, PW_CODE_IO, "cannot open %s: %s", path, strerror(errno));
    pw_code_error e = load_fd(fd, m, digest, engine, -1, -1, false, NULL, err);
    close(fd);
    return e;
}

/* ---------------------------------------------------------------- writing */

static void fill_header(cc_header *h, const struct pw_cmodule *cm, const uint8_t digest[32],
                        const uint8_t engine[32], int v, unsigned isa, size_t code_len,
                        size_t icode_len) {
    memset(h, 0, sizeof *h);
    memcpy(h->magic, CC_MAGIC, sizeof CC_MAGIC);
    h->format = CC_FORMAT;
    h->header_size = sizeof *h;
    memcpy(h->engine, engine, PW_CC_DIGEST);
    memcpy(h->module, digest, PW_CC_DIGEST);
    h->features = isa;
    h->variant = (uint32_t)v;
    h->nfuncs = cm->nfuncs;
    h->ncode = cm->nslot;
    h->shape = shape_of(cm);
    h->code_off = CC_PAGE;
    h->code_len = code_len;
    h->offs_off = h->code_off + page_round(code_len);
    h->icode_off = h->offs_off + (uint64_t)h->nfuncs * 8;
    h->icode_len = icode_len;
    h->total = h->icode_off + icode_len + PW_CC_DIGEST;
}

pw_code_error pw_code_compile(const pw_module *m, const uint8_t digest[32], int bounds_checks,
                              bool sse2_only, uint8_t **out, size_t *len, pw_code_err *err) {
    *out = NULL;
    *len = 0;
    uint8_t engine[PW_CC_DIGEST];
    if (!m->code->jit || !engine_id(engine))
        return pw__cc_fail(err, PW_CODE_UNSUPPORTED, "this engine build cannot make artifacts");
    int v = bounds_checks == PW_BOUNDS_EXPLICIT ? PW_JIT_VARIANT_EXPLICIT : PW_JIT_VARIANT_GUARD;
    unsigned isa = pw__jit_features(sse2_only);
    uint8_t *code;
    size_t clen;
    int64_t *offs;
    if (pw__jit_translate(m, v, isa, &code, &clen, &offs) != PW_OK)
        return pw__cc_fail(err, PW_CODE_NOMEM, "out of memory");
    size_t iclen = 0;
    uint8_t *ic = pw__icode_build(m->code, &iclen); /* after translating: all compiled */
    cc_header h;
    fill_header(&h, m->code, digest, engine, v, isa, clen, iclen);
    uint8_t *a = ic ? malloc((size_t)h.total) : NULL;
    if (!a) {
        free(code);
        free(offs);
        free(ic);
        return pw__cc_fail(err, PW_CODE_NOMEM, "out of memory");
    }
    memset(a, 0, (size_t)h.offs_off); /* the paddings */
    memcpy(a, &h, sizeof h);
    memcpy(a + h.code_off, code, clen);
    memcpy(a + h.offs_off, offs, (size_t)h.nfuncs * 8);
    memcpy(a + h.icode_off, ic, iclen);
    pb_sum(a, (size_t)h.total - PW_CC_DIGEST, a + h.total - PW_CC_DIGEST);
    free(code);
    free(offs);
    free(ic);
    *out = a;
    *len = (size_t)h.total;
    return ok(err);
}

/* ---------------------------------------------------------------- the cache */

/* The file name of (module, engine, variant, features): 64 hex digits + ".pcc". */
static void cache_name(const struct pw_ccref *cc, int v, unsigned isa, char name[CC_NAME_MAX]) {
    uint8_t key[PW_CC_DIGEST];
    uint32_t vi[2] = {(uint32_t)v, isa};
    pb_sha256_ctx c;
    pb_sha256_init(&c);
    pb_sha256_update(&c, cc->module, sizeof cc->module);
    pb_sha256_update(&c, cc->engine, sizeof cc->engine);
    pb_sha256_update(&c, vi, sizeof vi);
    pb_sha256_final(&c, key);
    pb_hex(key, sizeof key, name);
    memcpy(name + 64, CC_SUFFIX, sizeof CC_SUFFIX);
}

void pw__cc_ref_free(struct pw_ccref *cc) {
    if (!cc) return;
    close(cc->dirfd);
    free(cc);
}

/* Open a cache file for reading: a regular file of ours, not writable by others. */
int pw__cc_open_entry(const struct pw_ccref *cc, const char *name) {
    int fd = openat(cc->dirfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0) return -1;
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid() ||
        (st.st_mode & 022)) {
        close(fd);
        return -1;
    }
    return fd;
}

int pw__cc_probe(struct pw_ccref *cc, const pw_module *m, int v, unsigned isa) {
    (void)m;
    atomic_int *p = &cc->probe[v & 1][isa & 15];
    int known = atomic_load_explicit(p, memory_order_relaxed);
    if (known) return known == 2;
    char name[CC_NAME_MAX];
    cache_name(cc, v, isa, name);
    struct stat st;
    bool there = fstatat(cc->dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode);
    atomic_store_explicit(p, there ? 2 : 1, memory_order_relaxed);
    return there;
}

bool pw__cc_load(struct pw_ccref *cc, const pw_module *m, int v, unsigned isa) {
    char name[CC_NAME_MAX];
    cache_name(cc, v, isa, name);
    int fd = pw__cc_open_entry(cc, name);
    if (fd < 0) return false;
    pw_code_err err;
    pw_code_error e = load_fd(fd, m, cc->module, cc->engine, v, (int)isa, true, cc, &err);
    /* a file mapping that cannot become executable (a noexec mount, a policy against
     * executing modified file pages): read it into memory instead */
    if (e == PW_CODE_NOMEM || e == PW_CODE_IO)
        e = load_fd(fd, m, cc->module, cc->engine, v, (int)isa, false, cc, &err);
    if (e == PW_CODE_OK) {
        if (pw__cc_touch_due(fd)) futimens(fd, NULL); /* last use, for eviction */
    } else if (e != PW_CODE_NOMEM && e != PW_CODE_IO) {
        unlinkat(cc->dirfd, name, 0); /* a bad file is translated and saved again */
    }
    close(fd);
    return e == PW_CODE_OK;
}

typedef struct cc_entry {
    char name[CC_NAME_MAX];
    uint64_t size;
    struct timespec mtime;
} cc_entry;

static int by_age(const void *a, const void *b) {
    const cc_entry *x = a, *y = b;
    if (x->mtime.tv_sec != y->mtime.tv_sec) return x->mtime.tv_sec < y->mtime.tv_sec ? -1 : 1;
    if (x->mtime.tv_nsec != y->mtime.tv_nsec) return x->mtime.tv_nsec < y->mtime.tv_nsec ? -1 : 1;
    return strcmp(x->name, y->name);
}

static bool is_entry_name(const char *n) {
    size_t len = strlen(n);
    if (len != 64 + strlen(CC_SUFFIX) || strcmp(n + 64, CC_SUFFIX) != 0) return false;
    for (size_t i = 0; i < 64; i++)
        if (!((n[i] >= '0' && n[i] <= '9') || (n[i] >= 'a' && n[i] <= 'f'))) return false;
    return true;
}

/* Remove the least recently used artifacts until the rest fit in max_bytes, and
 * temporary files left by writers that died. Races with other processes are
 * harmless: a file removed under a reader stays readable through its descriptor. */
static void evict(struct pw_ccref *cc) {
    int fd = dup(cc->dirfd);
    if (fd < 0) return;
    DIR *d = fdopendir(fd);
    if (!d) {
        close(fd);
        return;
    }
    rewinddir(d);
    cc_entry *e = NULL;
    size_t n = 0, cap = 0;
    uint64_t total = 0;
    time_t now = time(NULL);
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        struct stat st;
        if (fstatat(cc->dirfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode))
            continue;
        if (strncmp(de->d_name, CC_TMP_PREFIX, strlen(CC_TMP_PREFIX)) == 0) {
            if (now - st.st_mtim.tv_sec > CC_TMP_STALE_S) unlinkat(cc->dirfd, de->d_name, 0);
            continue;
        }
        if (!is_entry_name(de->d_name)) continue;
        if (n == cap) {
            size_t nc = cap ? cap * 2 : 32;
            cc_entry *ne = realloc(e, nc * sizeof *ne);
            if (!ne) break; /* out of memory: evict what was seen */
            e = ne;
            cap = nc;
        }
        memcpy(e[n].name, de->d_name, CC_NAME_MAX);
        e[n].size = (uint64_t)st.st_size;
        e[n].mtime = st.st_mtim;
        total += e[n].size;
        n++;
    }
    closedir(d);
    if (total > cc->max_bytes && n) {
        qsort(e, n, sizeof *e, by_age);
        for (size_t i = 0; i < n && total > cc->max_bytes; i++)
            if (unlinkat(cc->dirfd, e[i].name, 0) == 0 || errno == ENOENT) total -= e[i].size;
    }
    free(e);
}

int pw__cc_tmp_create(const struct pw_ccref *cc, const char *name, char tmp[PW_CC_TMP_MAX]) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    /* unique among live writers: pid, the thread's stack, the time */
    snprintf(tmp, PW_CC_TMP_MAX, CC_TMP_PREFIX "%ld.%lx.%lx.%.16s", (long)getpid(),
             (unsigned long)(uintptr_t)&ts >> 4, (unsigned long)ts.tv_nsec, name);
    return openat(cc->dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
}

bool pw__cc_commit(struct pw_ccref *cc, int fd, bool good, const char *tmp, const char *name) {
    good = fsync(fd) == 0 && good;
    good = close(fd) == 0 && good;
    if (!good || renameat(cc->dirfd, tmp, cc->dirfd, name) != 0) {
        unlinkat(cc->dirfd, tmp, 0);
        return false;
    }
    fsync(cc->dirfd);
    evict(cc);
    return true;
}

/* Write the cache file of (v, isa); false when it could not be (nothing is left). */
static bool save(struct pw_ccref *cc, const struct pw_cmodule *cm, int v, unsigned isa,
                 const uint8_t *code, size_t len, const int64_t *offs) {
    uint8_t head[CC_PAGE] = {0};
    size_t iclen = 0;
    uint8_t *ic = pw__icode_build(cm, &iclen);
    if (!ic) return false;
    cc_header h;
    fill_header(&h, cm, cc->module, cc->engine, v, isa, len, iclen);
    if (h.total > cc->max_bytes) { /* would not fit even alone */
        free(ic);
        return false;
    }
    memcpy(head, &h, sizeof h);
    uint8_t d[PW_CC_DIGEST];
    digest_parts(head, code, NULL, offs, ic, d);
    char name[CC_NAME_MAX], tmp[PW_CC_TMP_MAX];
    cache_name(cc, v, isa, name);
    int fd = pw__cc_tmp_create(cc, name, tmp);
    if (fd < 0) {
        free(ic);
        return false;
    }
    bool good = pb_write_all(fd, head, CC_PAGE) == 0 && pb_write_all(fd, code, len) == 0 &&
                pb_write_all(fd, ZEROS, (size_t)(page_round(len) - len)) == 0 &&
                pb_write_all(fd, offs, (size_t)h.nfuncs * 8) == 0 &&
                pb_write_all(fd, ic, iclen) == 0 && pb_write_all(fd, d, sizeof d) == 0;
    free(ic);
    if (!pw__cc_commit(cc, fd, good, tmp, name)) return false;
    atomic_store_explicit(&cc->probe[v & 1][isa & 15], 2, memory_order_relaxed);
    return true;
}

void pw__cc_save(struct pw_ccref *cc, const struct pw_cmodule *cm, int v, unsigned isa,
                 const uint8_t *code, size_t len, const int64_t *offs) {
    save(cc, cm, v, isa, code, len, offs); /* a failure leaves the cache as it was */
}

/* Take fd (dir) as the cache directory if it is ours and not writable by others. */
static pw_code_error check_dir(int fd, const char *dir, int *out, pw_code_err *err) {
    struct stat st;
    if (fstat(fd, &st) != 0 || st.st_uid != geteuid() || (st.st_mode & 022)) {
        close(fd);
        return pw__cc_fail(err, PW_CODE_UNSAFE_DIR,
                           "cache directory %s is owned by another user or writable by others",
                           dir);
    }
    *out = fd;
    return ok(err);
}

/* Create the missing components of dir (0700) and open it, refusing a link, another
 * owner and group/world write permission. */
static pw_code_error open_dir(const char *dir, int *out, pw_code_err *err) {
    size_t n = strlen(dir);
    if (!n) return pw__cc_fail(err, PW_CODE_IO, "empty cache directory name");
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd >= 0) return check_dir(fd, dir, out, err); /* the common case: it exists */
    char *p = malloc(n + 1);
    if (!p) return pw__cc_fail(err, PW_CODE_NOMEM, "out of memory");
    memcpy(p, dir, n + 1);
    for (size_t i = 1; i <= n; i++) {
        if (p[i] != '/' && p[i] != 0) continue;
        char keep = p[i];
        p[i] = 0;
        if (mkdir(p, 0700) != 0 && errno != EEXIST) {
            int e = errno;
            pw_code_error r = pw__cc_fail(err, PW_CODE_IO, "cannot create %s: %s", p, strerror(e));
            free(p);
            return r;
        }
        p[i] = keep;
    }
    free(p);
    fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) {
        if (errno == ELOOP || errno == ENOTDIR)
            return pw__cc_fail(err, PW_CODE_UNSAFE_DIR,
                               "cache directory %s is a link or not a directory", dir);
        return pw__cc_fail(err, PW_CODE_IO, "cannot open %s: %s", dir, strerror(errno));
    }
    return check_dir(fd, dir, out, err);
}

/* A cache reference for m (caller frees with pw__cc_ref_free). */
static pw_code_error ref_new(const pw_module *m, const uint8_t digest[32],
                             const pw_code_cache_config *cfg, struct pw_ccref **out,
                             pw_code_err *err) {
    if (!cfg || !cfg->dir) return pw__cc_fail(err, PW_CODE_IO, "no cache directory");
    struct pw_ccref *cc = calloc(1, sizeof *cc);
    if (!cc) return pw__cc_fail(err, PW_CODE_NOMEM, "out of memory");
    if (!m->code->jit || !engine_id(cc->engine)) {
        free(cc);
        return pw__cc_fail(err, PW_CODE_UNSUPPORTED, "this engine build cannot cache code");
    }
    pw_code_error e = open_dir(cfg->dir, &cc->dirfd, err);
    if (e) {
        free(cc);
        return e;
    }
    memcpy(cc->module, digest, PW_CC_DIGEST);
    cc->max_bytes = cfg->max_bytes ? cfg->max_bytes : CC_DEFAULT_MAX;
    *out = cc;
    return ok(err);
}

pw_code_error pw_module_set_code_cache(pw_module *m, const uint8_t digest[32],
                                       const pw_code_cache_config *cfg, pw_code_err *err) {
    struct pw_ccref *cc = NULL;
    pw_code_error e = ref_new(m, digest, cfg, &cc, err);
    if (!e) pw__jit_attach_cache(m->code->jit, cc);
    return e;
}

pw_code_error pw_code_cache_fill(const pw_module *m, const uint8_t digest[32],
                                 const pw_code_cache_config *cfg, int bounds_checks,
                                 pw_code_err *err) {
    struct pw_ccref *cc = NULL;
    pw_code_error e = ref_new(m, digest, cfg, &cc, err);
    if (e) return e;
    int v = bounds_checks == PW_BOUNDS_EXPLICIT ? PW_JIT_VARIANT_EXPLICIT : PW_JIT_VARIANT_GUARD;
    unsigned isa = pw__jit_features(false);
    uint8_t *code;
    size_t len;
    int64_t *offs;
    if (pw__jit_translate(m, v, isa, &code, &len, &offs) != PW_OK) {
        e = pw__cc_fail(err, PW_CODE_NOMEM, "out of memory");
    } else if (!save(cc, m->code, v, isa, code, len, offs)) {
        e = pw__cc_fail(err, PW_CODE_IO,
                        "cannot write the cache file (larger than the cache's bound?)");
    }
    free(code);
    free(offs);
    pw__cc_ref_free(cc);
    return e;
}

/* ---------------------------------------------------------------- validated records
 * A record that the module of a digest passed full validation under this engine
 * build, so that module.c skips validating its function bodies next time (docs/
 * engine.md, "Skipping validation"). It adds no trust: whoever can write the cache
 * can already make us run native code. Layout: cv_record, then pb_sum of it; named
 * like every cache file (64 hex digits + ".pcc", from module, engine and a tag). */

#define CV_FORMAT 1u
static const char CV_MAGIC[8] = {'P', 'E', 'R', 'I', 'V', 'A', 'L', 'D'};

typedef struct cv_record {
    char magic[8];
    uint32_t format;
    uint32_t size; /* sizeof (cv_record) */
    uint8_t engine[PW_CC_DIGEST];
    uint8_t module[PW_CC_DIGEST];
} cv_record;

static void valid_name(const struct pw_ccref *cc, char name[CC_NAME_MAX]) {
    uint8_t key[PW_CC_DIGEST];
    pb_sha256_ctx c;
    pb_sha256_init(&c);
    pb_sha256_update(&c, cc->module, sizeof cc->module);
    pb_sha256_update(&c, cc->engine, sizeof cc->engine);
    pb_sha256_update(&c, "validated", 9);
    pb_sha256_final(&c, key);
    pb_hex(key, sizeof key, name);
    memcpy(name + 64, CC_SUFFIX, sizeof CC_SUFFIX);
}

struct pw_ccref *pw__cc_open(const pw_code_cache_config *cfg, const uint8_t digest[32]) {
    if (!cfg || !cfg->dir || !digest) return NULL;
    struct pw_ccref *cc = calloc(1, sizeof *cc);
    if (!cc) return NULL;
    if (!engine_id(cc->engine) || open_dir(cfg->dir, &cc->dirfd, NULL) != PW_CODE_OK) {
        free(cc);
        return NULL;
    }
    memcpy(cc->module, digest, PW_CC_DIGEST);
    cc->max_bytes = cfg->max_bytes ? cfg->max_bytes : CC_DEFAULT_MAX;
    return cc;
}

bool pw__cc_validated(struct pw_ccref *cc) {
    char name[CC_NAME_MAX];
    valid_name(cc, name);
    int fd = pw__cc_open_entry(cc, name);
    if (fd < 0) return false;
    uint8_t buf[sizeof(cv_record) + PB_SUM_LEN + 1], sum[PB_SUM_LEN];
    cv_record r;
    bool good = read_at(fd, buf, sizeof buf - 1, 0);
    if (good) { /* exactly that long */
        struct stat st;
        good = fstat(fd, &st) == 0 && (uint64_t)st.st_size == sizeof buf - 1;
    }
    if (good) {
        memcpy(&r, buf, sizeof r);
        pb_sum(buf, sizeof r, sum);
        good = memcmp(r.magic, CV_MAGIC, sizeof r.magic) == 0 && r.format == CV_FORMAT &&
               r.size == sizeof r && memcmp(r.engine, cc->engine, PW_CC_DIGEST) == 0 &&
               memcmp(r.module, cc->module, PW_CC_DIGEST) == 0 &&
               memcmp(sum, buf + sizeof r, PB_SUM_LEN) == 0;
    }
    if (good)
        futimens(fd, NULL); /* last use, for eviction */
    else
        unlinkat(cc->dirfd, name, 0); /* damaged or foreign: validated and written again */
    close(fd);
    return good;
}

void pw__cc_mark_validated(struct pw_ccref *cc) {
    cv_record r;
    memset(&r, 0, sizeof r);
    memcpy(r.magic, CV_MAGIC, sizeof r.magic);
    r.format = CV_FORMAT;
    r.size = sizeof r;
    memcpy(r.engine, cc->engine, PW_CC_DIGEST);
    memcpy(r.module, cc->module, PW_CC_DIGEST);
    uint8_t sum[PB_SUM_LEN];
    pb_sum(&r, sizeof r, sum);
    char name[CC_NAME_MAX], tmp[PW_CC_TMP_MAX];
    valid_name(cc, name);
    int fd = pw__cc_tmp_create(cc, name, tmp);
    if (fd < 0) return; /* the cache is an optimisation: next time validates again */
    bool good = pb_write_all(fd, &r, sizeof r) == 0 && pb_write_all(fd, sum, sizeof sum) == 0;
    pw__cc_commit(cc, fd, good, tmp, name);
}

#else /* no JIT on this host */

void pw__cc_ref_free(struct pw_ccref *cc) {
    free(cc);
}
bool pw__cc_load(struct pw_ccref *cc, const pw_module *m, int v, unsigned isa) {
    (void)cc, (void)m, (void)v, (void)isa;
    return false;
}
void pw__cc_save(struct pw_ccref *cc, const struct pw_cmodule *cm, int v, unsigned isa,
                 const uint8_t *code, size_t len, const int64_t *offs) {
    (void)cc, (void)cm, (void)v, (void)isa, (void)code, (void)len, (void)offs;
}
int pw__cc_probe(struct pw_ccref *cc, const pw_module *m, int v, unsigned isa) {
    (void)cc, (void)m, (void)v, (void)isa;
    return 0;
}
int pw__cc_open_entry(const struct pw_ccref *cc, const char *name) {
    (void)cc, (void)name;
    return -1;
}
int pw__cc_tmp_create(const struct pw_ccref *cc, const char *name, char tmp[PW_CC_TMP_MAX]) {
    (void)cc, (void)name, (void)tmp;
    return -1;
}
bool pw__cc_commit(struct pw_ccref *cc, int fd, bool good, const char *tmp, const char *name) {
    (void)cc, (void)fd, (void)good, (void)tmp, (void)name; /* fd is never valid here */
    return false;
}
static pw_code_error unsupported(pw_code_err *err) {
    (void)ok;
    return pw__cc_fail(err, PW_CODE_UNSUPPORTED, "no JIT on this host");
}
pw_code_error pw_code_compile(const pw_module *m, const uint8_t digest[32], int bounds_checks,
                              bool sse2_only, uint8_t **out, size_t *len, pw_code_err *err) {
    (void)m, (void)digest, (void)bounds_checks, (void)sse2_only;
    *out = NULL;
    *len = 0;
    return unsupported(err);
}
pw_code_error pw_code_verify(const pw_module *m, const uint8_t digest[32], const uint8_t *art,
                             size_t len, pw_code_err *err) {
    (void)m, (void)digest, (void)art, (void)len, (void)shape_of;
    return unsupported(err);
}
pw_code_error pw_code_load(const pw_module *m, const uint8_t digest[32], const char *path,
                           pw_code_err *err) {
    (void)m, (void)digest, (void)path;
    return unsupported(err);
}
pw_code_error pw_module_set_code_cache(pw_module *m, const uint8_t digest[32],
                                       const pw_code_cache_config *cfg, pw_code_err *err) {
    (void)m, (void)digest, (void)cfg;
    return unsupported(err);
}
struct pw_ccref *pw__cc_open(const pw_code_cache_config *cfg, const uint8_t digest[32]) {
    (void)cfg;
    (void)digest;
    return NULL; /* no engine build id to bind a record to */
}
bool pw__cc_validated(struct pw_ccref *cc) {
    (void)cc;
    return false;
}
void pw__cc_mark_validated(struct pw_ccref *cc) {
    (void)cc;
}
pw_code_error pw_code_cache_fill(const pw_module *m, const uint8_t digest[32],
                                 const pw_code_cache_config *cfg, int bounds_checks,
                                 pw_code_err *err) {
    (void)m, (void)digest, (void)cfg, (void)bounds_checks;
    return unsupported(err);
}

#endif
