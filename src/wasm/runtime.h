/*
 * runtime.h — the back end's run-time structures (internal to src/wasm/).
 *
 * Everything here is owned by a pw_store. Every store-owned object starts with a
 * pw_obj header and is linked into the store's object list, so pw_store_free can
 * release everything and a tracing GC (Wasm 3.0) can enumerate and identify objects.
 * Compiled code (pw_cmodule/pw_cfunc) belongs to the module, not the store; each
 * function is compiled once (at its first use by default) and immutable after.
 */
#ifndef PW_RUNTIME_H
#define PW_RUNTIME_H

#include "wasm/module.h"

#include <stdatomic.h>

/* One 64-bit value cell of the value stack. Same size and layout as pw_val. */
typedef union pw_slot {
    uint32_t u32;
    int32_t i32;
    uint64_t u64;
    int64_t i64;
    float f32;
    double f64;
    pw_ref ref;
} pw_slot;

/* Object kinds. Low values are the kinds a reference can point to. */
enum pw_objkind {
    PW_OBJ_FUNC = 1,
    PW_OBJ_HOSTREF = 2, /* externref host value */
    PW_OBJ_STRUCT = 3,  /* Wasm 3.0 GC */
    PW_OBJ_ARRAY = 4,   /* Wasm 3.0 GC */
    PW_OBJ_EXN = 5,     /* Wasm 3.0 exception package */
    PW_OBJ_MEMORY = 16,
    PW_OBJ_TABLE,
    PW_OBJ_GLOBAL,
    PW_OBJ_TAG,
    PW_OBJ_INSTANCE,
};

/* The common object header. `next` links every object of a store (allocation order,
 * newest first); `mark` is reserved for the collector. */
typedef struct pw_obj {
    uint8_t kind;
    uint8_t mark;
    uint16_t flags;
    uint32_t type_id; /* store type id (functions, GC objects, tags), else 0 */
    struct pw_obj *next;
} pw_obj;

/* ---------------------------------------------------------------- compiled code */

/* One compiled function. Code is an array of 32-bit words: a handler word (offset of
 * the handler from the interpreter's base label) followed by operands (frame slot
 * indices, immediates, relative branch offsets in words). */
/* A try_table: code offsets (within the function) of its TRY instruction, which holds
 * the catch clauses, and of its end. Listed innermost first. */
typedef struct pw_handler {
    uint32_t try_pos, end_pos;
} pw_handler;

/* One defined function. nparams, nresults, nlocals, type and slot are set when the
 * module is made; the rest when its body is compiled, which by default happens at its
 * first call (compile.c, "Compiling on first use"): until then `code` is NULL. The
 * compiler fills every field, then publishes `code` with a release store; readers
 * test it with pw__cfunc_ready (an acquire load) before reading the others. */
typedef struct pw_cfunc {
    uint32_t *code; /* NULL: not compiled yet */
    uint32_t ncode;
    pw_handler *handlers;
    uint32_t nhandlers;
    uint32_t nparams, nresults;
    uint32_t nlocals;     /* params + declared locals */
    uint32_t frame_slots; /* locals + maximum operand stack */
    uint32_t type;        /* module type index */
    uint32_t slot;        /* word offset of its slot in pw_cmodule.code */
    uint32_t index;       /* its defined function index: pw_cmodule.funcs[index] */
    uint32_t gc_nsites;
    struct pw_gcsite *gc_sites; /* sorted by pc (relative to code) */
    uint32_t *gc_maps;          /* the sites' slot lists (compile_gc.h) */
    /* Bit i: the declared local cell nparams + i is written before every read
     * (compile.c, "Definite assignment"), so an entry need not zero it; cells from
     * nparams + 64 on are always zeroed. 0 (every cell zeroed) until compiled. */
    uint64_t nozero;
} pw_cfunc;

struct pw_cmodule {
    uint32_t nfuncs; /* defined functions */
    pw_cfunc *funcs;
    /* The code of all functions: a reservation of nslot words (address space only,
     * pages are committed as code is written), function i at funcs[i].slot, with
     * room for body.len * 2 + 16 words: so a function's code sits at the same offset
     * in every process (the JIT's saved translations address it from `code`). A
     * function whose code does not fit its slot (rare) lives in its own allocation
     * and stays on the interpreter. A small module (nslot <= PW_COMPILE_SMALL_WORDS)
     * is compiled whole at once and packed: code is then one heap array (packed)
     * with each slot just large enough. */
    uint32_t *code;
    size_t nslot;
    bool packed;
    size_t ncode; /* estimated code words of the module (the `auto` tier's measure) */
    /* The `auto` tier (tier.c): interpreted calls counted by every store that ran this
     * module and has not turned to the JIT, added at the end of each entry; the
     * background translation (0 not started, 1 started: tier_job, joined by
     * pw__tier_free when the code is freed; 2 could not start). */
    atomic_uint_least64_t tier_calls;
    atomic_int tier_state;
    struct pw_tierjob *tier_job;
    /* Compiling on first use: lock serialises the compiler, whose reusable state is
     * comp; both live as long as the module. */
    struct pw_compile_lock *lock;
    /* Wasm 3.0 GC (gc.h): layouts per type index. */
    struct pw_gclayout *gc_layouts; /* gc_nlayouts = the module's type count */
    uint32_t gc_nlayouts;
    struct pw_jitmod *jit; /* JIT code per function (jit/jit.h); NULL: none */
    /* Internal code saved with a translation the JIT mapped (icode.h): set once, under
     * lock, by pw__compile_adopt; compiling a function takes its record from here when
     * it has one. restored counts the functions taken so (under lock). */
    _Atomic(struct pw_icode *) icode;
    uint32_t restored;
};

/* Modules with at most this many words of code slots are compiled whole when made. */
#define PW_COMPILE_SMALL_WORDS 65536u

/* Whether cf is compiled (then every field of it may be read). */
static inline bool pw__cfunc_ready(const pw_cfunc *cf) {
    return __atomic_load_n(&cf->code, __ATOMIC_ACQUIRE) != NULL;
}
/* compile.c: compile cf (a function of m) if it is not yet; false when it cannot be
 * (out of memory). Thread-safe. */
bool pw__compile_lazy(const pw_module *m, const pw_cfunc *cf);
/* compile.c: give cm the saved internal code of a translation (icode.h; sec is
 * bytes long, checked by pw__icode_check, inside the mapping map/maplen, which cm then
 * owns). False when cm has one already (the caller keeps the mapping). Thread-safe. */
bool pw__compile_adopt(struct pw_cmodule *cm, const uint8_t *sec, size_t bytes, void *map,
                       size_t maplen);
/* compile.c: the compiled function whose code holds pc (a return pc or the pc of a
 * running instruction of a function of cm). */
const pw_cfunc *pw__cfunc_at(const struct pw_cmodule *cm, const uint32_t *pc);

/* ---------------------------------------------------------------- store objects */

struct pw_func {
    pw_obj hdr;            /* hdr.type_id: store type id of the function type */
    pw_instance *inst;     /* Wasm functions: the defining instance; host: NULL */
    const pw_cfunc *code;  /* Wasm functions */
    const pw_module *tmod; /* module giving meaning to the type (NULL: host type) */
    uint32_t tidx;         /* type index in tmod */
    pw_host_fn host;       /* host functions */
    void *env;
    pw_functype ft; /* host: owned copy; Wasm: points into the module */
    uint32_t nparams, nresults;
};

struct pw_memory {
    pw_obj hdr;
    uint8_t *data;      /* reserved mapping; [0, size) is read/write */
    uint64_t size;      /* bytes */
    uint64_t max_pages; /* UINT64_MAX when unbounded */
    uint64_t reserved;  /* bytes the memory may reach (its maximum, capped) */
    uint64_t mapped;    /* bytes of the mapping at data (>= reserved when pooled) */
    uint64_t rw;        /* [0, rw) is read/write (>= size; never shrinks) */
    uint64_t dirty;     /* [size, dirty) may hold a previous store's bytes (pool.c) */
    pw_store *store;
    bool is64; /* i64 addresses (memory64); its size is still capped at 2^16 pages */
    /* Guard pages (docs/jit.md, "Bounds checks"): a 32-bit memory whose mapping is
     * PW_GUARD_RESERVE bytes, with [size, mapped) PROT_NONE (rw == size): JIT code
     * accesses it without bounds checks and an access out of bounds faults
     * (jit/guard.c). The interpreter and the helpers check explicitly either way. */
    bool guarded;
};

struct pw_table {
    pw_obj hdr;
    pw_ref *elems;
    uint32_t size, cap;
    uint64_t max; /* UINT64_MAX when unbounded */
    pw_valtype elem;
    const pw_module *tmod; /* module that gives meaning to a concrete elem type */
    pw_store *store;
    bool is64; /* i64 indices (table64); its size is still at most PW_TABLE_LIMIT */
};

struct pw_global {
    pw_obj hdr;
    pw_slot val;
    uint64_t hi; /* v128 globals: the high half (val holds the low half) */
    pw_valtype type;
    bool mut;
    const pw_module *tmod;
};

struct pw_tag {
    pw_obj hdr;
    const pw_module *tmod;
    uint32_t type;    /* module type index */
    uint32_t nparams; /* payload size */
};

/* An exception package (exnref): its tag and payload. */
typedef struct pw_exn {
    pw_obj hdr;
    pw_tag *tag;
    uint32_t n;
    pw_slot vals[];
} pw_exn;

typedef struct pw_hostref {
    pw_obj hdr;
    uint64_t value;
} pw_hostref;

/* One cell of an instance's call_indirect cache (jit.c, call_indirect): the function
 * a call site last reached through a table, once the full checks passed for it (an
 * exact type match with the site's type, a function of this instance, JIT code in
 * this instance's variant), with that code's inner entry and its frame size. A site
 * hits when the table's entry is f and its type index is `type`; the sites of all the
 * instance's functions share the cells by a hash of the site. Nothing else reads them. */
typedef struct pw_icell {
    const struct pw_func *f;
    void *entry;    /* inner entry of f's JIT code (never freed before the module) */
    uint32_t type;  /* module type index of the site; UINT32_MAX: empty */
    uint32_t frame; /* f's frame_slots */
    uint32_t miss;  /* misses to count before another function takes the cell */
    uint32_t pad;
} pw_icell;
#define PW_IC_CELLS 64

struct pw_instance {
    pw_obj hdr;
    const pw_module *mod;
    pw_store *store;
    pw_func **funcs;
    pw_table **tables;
    pw_memory **mems;
    pw_global **globals;
    pw_tag **tags;
    pw_memory *mem0;    /* memory 0, or the store's empty memory */
    uint32_t *type_ids; /* store type id of each module type */
    pw_ref **elem_refs; /* per elem segment: evaluated references (NULL when dropped) */
    uint32_t *elem_len;
    uint8_t *data_dropped;
    pw_icell ic[PW_IC_CELLS]; /* the JIT's call_indirect cache (empty at creation) */
};

/* A call frame record (the value slots live on the value stack). */
typedef struct pw_frame {
    const uint32_t *ret_pc; /* where the caller resumes */
    pw_slot *fp;            /* the caller's frame */
    pw_instance *inst;      /* the caller's instance */
} pw_frame;

/* A defined type registered in a store: store type ids are indices here (+1). Either
 * a module's type (m, idx; equivalence is iso-recursive, decided by the front end's
 * pw__deftype_equiv) or a host function type (m == NULL; abstract types only). */
typedef struct pw_regtype {
    const pw_module *m;
    uint32_t idx;
    uint32_t shape; /* cheap prefilter: equal types have equal shapes */
    uint32_t nparams, nresults;
    pw_valtype *types; /* host types only */
} pw_regtype;

struct pw_store {
    pw_store_config cfg;
    atomic_int interrupt;
    pw_obj *objects;   /* every object, newest first */
    uint64_t mem_used; /* bytes of linear memory + tables, against cfg.memory_cap */

    pw_slot *stack, *stack_end; /* value stack */
    pw_slot *stack_top;         /* first free slot outside running frames */
    pw_frame *frames, *frames_end;
    pw_frame *frame_top; /* next free frame record */
    uint32_t host_depth; /* nested host -> Wasm entries */

    pw_memory *empty_mem; /* for instances without memory */

    pw_regtype *types;
    uint32_t ntypes, captypes;

    pw_hostref **hostrefs; /* open-addressing map value -> object */
    uint32_t nhostrefs, caphostrefs;

    /* Trap raised by the interpreter or a host function. */
    pw_trap_code trap;
    char trap_msg[256];
    pw_exn *exn; /* the exception escaping a call (status PW_ERR_EXCEPTION) */

    /* Wasm 3.0 GC heap (gc.c). */
    struct pw_gcheap *gc_heap;      /* structs and arrays (gc_heap.c); NULL until used */
    uint64_t gc_bytes;              /* bytes allocated on the GC heap (live + garbage) */
    uint64_t gc_threshold;          /* collect when gc_bytes passes this */
    uint64_t gc_peak, gc_live;      /* peak heap; live bytes after the last collection */
    uint64_t gc_count;              /* collections run */
    uint32_t gc_inhibit;            /* > 0: allocation never collects (const exprs) */
    bool gc_stress;                 /* tests: collect at every allocation */
    uint64_t gc_nomap;              /* collections that met a frame without a stack map */
    struct pw_hostroots *hostroots; /* arguments of running host calls */
    pw_ref *handles;                /* host handles (pw_handle_new); 0 = free */
    uint32_t nhandles, caphandles, free_handle;
    uint64_t cast_cache[256]; /* (obj type id, target id) << 1 | is-subtype */
    /* Baseline JIT (jit/jit.h): enabled for this store; native stack bound of the
     * current outermost entry (below it, calls run on the interpreter). */
    bool jit_on;
    char *jit_stack_limit;
    /* JIT code of the innermost entry from C (jit.c, docs/jit.md "Calls in both
     * directions"): jit_sp, the outer entry's rsp (a trap unwinds to it; the walk of
     * the frames direct calls made ends there); jit_walk, the return-address slot of
     * the JIT frame that calls a call helper (where that walk starts); jit_call_limit,
     * the lowest rsp at which a direct JIT-to-JIT call may be made without a look by
     * the helper (native stack budget, frame records left; the maximum while the
     * interrupt flag is raised, so that every direct call polls). */
    char *jit_sp;
    const void *jit_walk;
    _Atomic(uintptr_t) jit_call_limit;
    /* The `auto` tier (tier.c): true while the store still interprets and counts its
     * calls (jit_on is then false); cleared when the store turns to the JIT. */
    bool jit_auto;
    uint64_t jit_auto_calls; /* counted in this entry from the host, not yet added */
    /* JIT: translate each function alone at its first call (jit.c, docs/jit.md "Lazy
     * translation"): PW_ENGINE_LAZY, or `auto` on a big module whose code cache has
     * no translation for it yet (tier.c). */
    bool jit_lazy;
};

/* The interrupt poll page (docs/jit.md, "Interrupt"). A store is the start of one
 * mapping of PW_STORE_MAP_BYTES: the struct, then, PW_STORE_POLL_OFF bytes from its
 * start, a page of its own that is read-only while the interrupt flag is down and
 * PROT_NONE from pw_store_interrupt until pw_store_clear_interrupt. The guard variant
 * of JIT code (whose SIGSEGV handler is in place) polls at loop heads with one load
 * of it, [r15 + PW_STORE_POLL_OFF], instead of a compare and a branch on the flag;
 * the load faults once the store is interrupted, and the handler (guard.c) resumes
 * the function at the module's interrupt stub. */
#define PW_POLL_PAGE       4096u
#define PW_STORE_POLL_OFF  ((sizeof(pw_store) + PW_POLL_PAGE - 1) / PW_POLL_PAGE * PW_POLL_PAGE)
#define PW_STORE_MAP_BYTES (PW_STORE_POLL_OFF + PW_POLL_PAGE)

struct pw_call_ctx {
    pw_store *store;
    pw_instance *inst;
};

/* tier.c: the `auto` tier policy (docs/jit.md, "Choosing the tier"). A module of at
 * most PW_TIER_SMALL_WORDS internal code words is translated at its first call; a
 * bigger one after ncode / PW_TIER_WORDS_PER_CALL interpreted calls, in the
 * background. Entry from the host into Wasm function f: turns the store to the JIT
 * at once when f's module is small or already translated. */
#define PW_TIER_SMALL_WORDS    65536u
#define PW_TIER_WORDS_PER_CALL 2u
void pw__tier_enter(pw_store *s, const pw_func *f);
/* A call of Wasm function f made by the interpreter while s->jit_auto: counts it and
 * returns true when the store has turned to the JIT (f's module then translated). */
bool pw__tier_hot(pw_store *s, pw_func *f);
/* The end of that entry: adds the store's count to f's module. */
void pw__tier_leave(pw_store *s, const pw_func *f);
/* Waits for the module's background translation, if any, and frees its job. */
void pw__tier_free(struct pw_cmodule *cm);

/* store.c */
void *pw__store_alloc_obj(pw_store *s, size_t size, uint8_t kind); /* zeroed, linked */
uint32_t pw__store_type_id(pw_store *s, uint32_t nparams, uint32_t nresults,
                           const pw_valtype *types, bool *oom);
uint32_t pw__store_type_id_mod(pw_store *s, const pw_module *m, uint32_t idx, bool *oom);
/* Is function f's type a subtype of type t of module m (Wasm 3.0 subtyping)? */
bool pw__func_type_sub(const pw_func *f, const pw_module *m, uint32_t t);
/* Is value type a (of module ma; NULL when a is abstract) a subtype of b (of mb)? */
bool pw__valtype_sub_cross(const pw_module *ma, pw_valtype a, const pw_module *mb, pw_valtype b);
bool pw__store_ensure_stack(pw_store *s);

/* memory.c */
pw_memory *pw__memory_create(pw_store *s, uint64_t min_pages, uint64_t max_pages, bool is64);
/* Grow results: the old size, -1 (refused), or PW_GROW_OVER_CAP (refused because the
 * store's memory cap would be passed; Wasm sees -1 unless cfg.cap_is_fatal). */
#define PW_GROW_OVER_CAP (-2)
int64_t pw__memory_grow(pw_memory *m, uint64_t delta_pages);

/* pool.c: mappings from the store's pool (cfg.pool; NULL: plain mmap/munmap).
 * A stack is `bytes` read/write between two PW_STACK_GUARD guards of PROT_NONE (1 MiB:
 * more than a frame of 131,072 slots, so an access a bug takes past either end of
 * the stack faults rather than reach another mapping); its usable part is rounded up
 * to PW_STACK_GUARD_PAGE, a multiple of any page size the engine runs with. */
#define PW_STACK_GUARD      ((size_t)1 << 20)
#define PW_STACK_GUARD_PAGE ((size_t)1 << 16)
void *pw__stack_map(pw_pool *p, size_t bytes); /* read/write; NULL on failure */
void pw__stack_unmap(pw_pool *p, void *base, size_t bytes);
/* Sets m->data, mapped, rw, dirty for a reservation of at least `bytes`. */
bool pw__mem_map(pw_pool *p, pw_memory *m, uint64_t bytes);
void pw__mem_unmap(pw_pool *p, pw_memory *m);
/* A store's mapping (PW_STORE_MAP_BYTES, the poll page read-only) kept by the pool,
 * or NULL; and giving one back (false: the pool keeps no more, the caller unmaps). */
void *pw__pool_take_store(pw_pool *p);
bool pw__pool_keep_store(pw_pool *p, void *base);
void pw__pool_attach(pw_pool *p); /* a store starts using p */
void pw__pool_detach(pw_pool *p); /* ... and stops (may free a closed pool) */
void pw__pool_stats(const pw_pool *p, uint32_t *stacks, uint32_t *mems,
                    uint64_t *dirty); /* tests */

/* table.c */
pw_table *pw__table_create(pw_store *s, pw_valtype elem, const pw_module *tmod, uint32_t min,
                           uint64_t max, pw_ref init);
int64_t pw__table_grow(pw_table *t, uint32_t delta, pw_ref init); /* as pw__memory_grow */

/* snapshot.c: gives a fresh instance (imports linked, functions made, memories,
 * tables and globals not yet created) the snapshot's memories, tables, globals and
 * segment state. */
bool pw__snapshot_apply(pw_instance *inst, const pw_snapshot *snap, pw_error *err);
bool pw__snapshot_matches(const pw_snapshot *snap, const pw_module *m);

/* func.c */
pw_func *pw__func_create_wasm(pw_store *s, pw_instance *inst, uint32_t func_index);
/* Run f with arguments at s->stack_top (results replace them). */
pw_status pw__invoke(pw_store *s, pw_func *f, pw_error *err);

/* interp.c */
/* Execute Wasm function f whose arguments are at fp[0..]; returns PW_OK or PW_ERR_TRAP
 * with s->trap set. */
pw_status pw__interp(pw_store *s, pw_func *f, pw_slot *fp);
/* Handler offsets for compile.c, indexed by internal opcode (interp.h). */
const int32_t *pw__interp_handlers(void);
/* For the JIT: runs the extension instruction XOP (interp.h, PW_XOPS) at pc on frame
 * fp; returns its trap code (PW_TRAP_NONE: done; PW_TRAP_COUNT_: memory.grow hit a
 * fatal memory cap). */
pw_trap_code pw__interp_xop(pw_store *s, pw_instance *inst, pw_slot *fp, const uint32_t *pc);
/* For the JIT: runs the bulk memory instruction of memory 0 or the table instruction
 * (memory.fill/copy/init, data.drop, table.get/set/size/grow/fill/copy/init,
 * elem.drop) whose internal opcode is op at pc on frame fp, exactly as the interpreter
 * does; returns its trap code (PW_TRAP_COUNT_: table.grow hit a fatal cap). */
pw_trap_code pw__interp_bulk(pw_store *s, pw_instance *inst, pw_slot *fp, const uint32_t *pc,
                             uint32_t op);
/* Host call made by the interpreter (args at argp, results replace them). */
pw_status pw__call_host(pw_store *s, pw_instance *caller, pw_func *f, pw_slot *argp);

/* instance.c: evaluate a constant expression of m for instance inst. */
bool pw__eval_const(pw_instance *inst, pw_span expr, pw_slot *out, pw_error *err);

/* jit/guard.c: the mapping of a guarded memory covers every address a 32-bit
 * access can form: a 32-bit address + a 32-bit static offset + up to 16 bytes
 * (8 GiB + 14 bytes), rounded up to a 64 KiB guard. pw__guard_ready installs the
 * fault handler (once per process, thread-safe) and tells whether it is in place
 * (false: memories are not guarded, the JIT checks explicitly). */
#define PW_GUARD_RESERVE (((uint64_t)8 << 30) + 65536)
bool pw__guard_ready(void);

/* trap.c */
pw_status pw__trap(pw_error *err, pw_trap_code code);

#endif
