/*
 * icode.c — the saved-internal-code section: building it from a compiled module,
 * checking its structure, and reading one function's record (format in icode.h).
 *
 * Invariant: building reads only functions already published (pw__cfunc_ready, an
 * acquire load; a published function's fields never change), each decided once, so a
 * function compiled by another thread meanwhile is simply left out.
 */
#include "wasm/icode.h"
#include "wasm/gc.h"

#include <stdlib.h>
#include <string.h>

/* Words of cf's GC maps (compile_gc.h): a site's map is [locals list, n, slot * n],
 * the locals list [k, local * k]; the furthest end of either is their length. */
static uint32_t map_words(const pw_cfunc *cf) {
    uint32_t n = 0;
    for (uint32_t k = 0; k < cf->gc_nsites; k++) {
        const uint32_t *map = cf->gc_maps + cf->gc_sites[k].map;
        uint32_t end = cf->gc_sites[k].map + 2 + map[1], lend = map[0] + 1 + cf->gc_maps[map[0]];
        if (end > n) n = end;
        if (lend > n) n = lend;
    }
    return n;
}

static uint64_t rec_words(const pw_icode_rec *r) {
    return PW_ICODE_HEAD + (uint64_t)r->ncode + 2ull * r->nhandlers + 2ull * r->gc_nsites +
           r->gc_nmaps;
}

/* Function i's record from its compiled code, else from cm's adopted section; none
 * for a packed module (every function compiled when the module is made). */
static bool rec_of(const struct pw_cmodule *cm, uint32_t i, pw_icode_rec *r) {
    const pw_cfunc *cf = &cm->funcs[i];
    if (cm->packed) return false;
    if (pw__cfunc_ready(cf)) {
        *r = (pw_icode_rec){.ncode = cf->ncode,
                            .frame_slots = cf->frame_slots,
                            .nhandlers = cf->nhandlers,
                            .gc_nsites = cf->gc_nsites,
                            .gc_nmaps = map_words(cf),
                            .nozero = cf->nozero,
                            .code = cf->code,
                            .handlers = (const uint32_t *)cf->handlers,
                            .sites = (const uint32_t *)cf->gc_sites,
                            .maps = cf->gc_maps};
        return true;
    }
    const pw_icode *ic = atomic_load_explicit(&cm->icode, memory_order_acquire);
    return ic && pw__icode_get(ic, i, cf, r);
}

_Static_assert(sizeof(pw_handler) == 8 && sizeof(pw_gcsite) == 8, "records hold word pairs");

uint8_t *pw__icode_build(const struct pw_cmodule *cm, size_t *bytes) {
    uint32_t n = cm->nfuncs;
    pw_icode_rec *recs = malloc((n ? n : 1) * sizeof *recs);
    bool *have = malloc(n ? n : 1);
    if (!recs || !have) {
        free(recs);
        free(have);
        return NULL;
    }
    uint64_t total = 2ull * n; /* ent[] */
    for (uint32_t i = 0; i < n; i++) {
        have[i] = rec_of(cm, i, &recs[i]);
        if (have[i]) total += rec_words(&recs[i]);
    }
    uint32_t *w = total < (1ull << 32) ? malloc(total * 4) : NULL;
    if (!w) {
        free(recs);
        free(have);
        return NULL;
    }
    uint64_t at = 0; /* in words after ent[] */
    uint32_t *words = w + 2 * (size_t)n;
    for (uint32_t i = 0; i < n; i++) {
        if (!have[i]) {
            w[2 * i] = PW_ICODE_NONE, w[2 * i + 1] = 0;
            continue;
        }
        const pw_icode_rec *r = &recs[i];
        w[2 * i] = (uint32_t)at, w[2 * i + 1] = (uint32_t)rec_words(r);
        uint32_t *p = words + at;
        p[0] = r->ncode, p[1] = r->frame_slots, p[2] = r->nhandlers, p[3] = r->gc_nsites;
        p[4] = r->gc_nmaps;
        p[5] = (uint32_t)r->nozero, p[6] = (uint32_t)(r->nozero >> 32);
        p += PW_ICODE_HEAD;
        memcpy(p, r->code, (size_t)r->ncode * 4);
        p += r->ncode;
        if (r->nhandlers) memcpy(p, r->handlers, (size_t)r->nhandlers * 8); /* else NULL */
        p += 2 * (size_t)r->nhandlers;
        if (r->gc_nsites) memcpy(p, r->sites, (size_t)r->gc_nsites * 8);
        p += 2 * (size_t)r->gc_nsites;
        if (r->gc_nmaps) memcpy(p, r->maps, (size_t)r->gc_nmaps * 4);
        at += rec_words(r);
    }
    free(recs);
    free(have);
    *bytes = (size_t)total * 4;
    return (uint8_t *)w;
}

/* Word k of sec, whatever sec's alignment (an artifact in the caller's buffer). */
static uint32_t word(const uint8_t *sec, uint64_t k) {
    uint32_t w;
    memcpy(&w, sec + k * 4, 4);
    return w;
}

/* Whether the extent (at, len) can be a record's: inside nwords, at least its head. */
static bool extent_ok(uint64_t at, uint64_t len, uint64_t nwords) {
    return len >= PW_ICODE_HEAD && at <= nwords && len <= nwords - at;
}

bool pw__icode_check(const uint8_t *sec, size_t bytes, uint32_t nfuncs) {
    if (bytes % 4 || bytes / 4 < 2ull * nfuncs) return false;
    uint64_t nwords = bytes / 4 - 2ull * nfuncs;
    for (uint32_t i = 0; i < nfuncs; i++) {
        uint32_t at = word(sec, 2ull * i), len = word(sec, 2ull * i + 1);
        if (at == PW_ICODE_NONE ? len != 0 : !extent_ok(at, len, nwords)) return false;
    }
    return true;
}

bool pw__icode_get(const pw_icode *ic, uint32_t i, const pw_cfunc *cf, pw_icode_rec *out) {
    uint32_t at = ic->ent[2 * (size_t)i], len = ic->ent[2 * (size_t)i + 1];
    if (at == PW_ICODE_NONE || !extent_ok(at, len, ic->nwords)) return false;
    const uint32_t *p = ic->words + at;
    pw_icode_rec r = {.ncode = p[0],
                      .frame_slots = p[1],
                      .nhandlers = p[2],
                      .gc_nsites = p[3],
                      .gc_nmaps = p[4],
                      .nozero = p[5] | (uint64_t)p[6] << 32};
    if (rec_words(&r) != len) return false; /* its parts fill its extent exactly */
    r.code = p + PW_ICODE_HEAD;
    r.handlers = r.code + r.ncode;
    r.sites = r.handlers + 2 * (size_t)r.nhandlers;
    r.maps = r.sites + 2 * (size_t)r.gc_nsites;
    /* what the interpreter, the unwinder and the GC index with these numbers */
    if (r.ncode == 0 || r.frame_slots <= cf->nlocals) return false;
    for (uint32_t k = 0; k < r.nhandlers; k++)
        if (r.handlers[2 * k] >= r.ncode || r.handlers[2 * k + 1] > r.ncode) return false;
    for (uint32_t k = 0; k < r.gc_nsites; k++) { /* maps as in map_words */
        uint32_t pc = r.sites[2 * k], map = r.sites[2 * k + 1];
        if (pc > r.ncode || (k && pc < r.sites[2 * k - 2]) || map >= r.gc_nmaps ||
            r.gc_nmaps - map < 2 || r.maps[map + 1] > r.gc_nmaps - map - 2)
            return false;
        uint32_t loc = r.maps[map];
        if (loc >= r.gc_nmaps || r.maps[loc] > r.gc_nmaps - loc - 1) return false;
        for (uint32_t s = 0; s < r.maps[map + 1]; s++)
            if (r.maps[map + 2 + s] >= r.frame_slots) return false;
        for (uint32_t s = 0; s < r.maps[loc]; s++)
            if (r.maps[loc + 1 + s] >= cf->nlocals) return false;
    }
    *out = r;
    return true;
}
