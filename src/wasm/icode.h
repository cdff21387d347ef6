/*
 * icode.h — internal code saved beside a JIT translation (internal to src/wasm/;
 * docs/jit.md, "Saved internal code").
 *
 * A saved translation's machine code reads its functions' internal code (return pcs,
 * helpers' instruction words) and frame sizes, so each function it holds must be
 * compiled to internal code before it runs. Compiling is deterministic, so the code
 * cache (codecache.c) saves the compiled functions' internal code too, and a module
 * that maps the translation takes each function's code from it at the function's
 * first call (compile.c) instead of compiling its body again.
 *
 * The section (all words uint32_t, native byte order like the machine code):
 *
 *   ent[2 * nfuncs]  per defined function i: the word index in `words` of its record
 *                    and the record's length in words; (PW_ICODE_NONE, 0): none
 *   words[]          records: ncode, frame_slots, nhandlers, gc_nsites, gc_nmaps,
 *                    nozero (low word, high word), then
 *                    code[ncode], handlers (try_pos, end_pos each), GC sites (pc,
 *                    map each), GC maps[gc_nmaps]
 *
 * Invariant: a section is adopted only after it passed the artifact's integrity sum
 * and pw__icode_check (every entry's extent inside the section: only the table is
 * read, so loading touches no record's pages); pw__icode_get checks one record
 * (its parts add up to its extent, its inner references) before it is used, so a
 * bad record means compiling the body, never reading outside its extent.
 */
#ifndef PW_ICODE_H
#define PW_ICODE_H

#include "wasm/runtime.h"

#define PW_ICODE_NONE UINT32_MAX
#define PW_ICODE_HEAD 7u /* words before a record's code */

/* A section adopted by a compiled module (pw_cmodule.icode), which owns it. */
typedef struct pw_icode {
    const uint32_t *ent; /* nfuncs entries of two words */
    const uint32_t *words;
    uint64_t nwords;
    void *map; /* the mapping holding them: munmap(map, maplen) when the module goes */
    size_t maplen;
} pw_icode;

/* One function's record, as pw__icode_get gives it (pointers into the section). */
typedef struct pw_icode_rec {
    uint32_t ncode, frame_slots, nhandlers, gc_nsites, gc_nmaps;
    uint64_t nozero; /* pw_cfunc.nozero */
    const uint32_t *code, *handlers, *sites, *maps;
} pw_icode_rec;

/* The section for cm: every defined function compiled now, and every other one its
 * adopted section holds (no record at all for a packed module: nothing to save). Returns a malloc'd
 * buffer of *bytes bytes (caller frees), or NULL when out of memory. Safe while other threads
 * compile functions of cm. */
uint8_t *pw__icode_build(const struct pw_cmodule *cm, size_t *bytes);
/* Whether sec (bytes long, any alignment) is a well-formed section for nfuncs
 * functions: whole words, and every entry's extent inside it. */
bool pw__icode_check(const uint8_t *sec, size_t bytes, uint32_t nfuncs);
/* Function i's record in ic, checked (handlers and GC sites inside its code, GC maps
 * inside its map words, a frame larger than its locals); false: none or bad. */
bool pw__icode_get(const pw_icode *ic, uint32_t i, const pw_cfunc *cf, pw_icode_rec *out);

#endif
