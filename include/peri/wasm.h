/*
 * peri/wasm.h — the public API of the Peri-C WebAssembly engine (prefix pw_).
 *
 * Objects and ownership:
 *   pw_module    decoded + validated + compiled code. Immutable after creation, so one
 *                module may be shared by any number of threads and stores.
 *   pw_store     everything a run owns: instances, memories, tables, globals, tags,
 *                function instances and (Wasm 3.0) the GC heap. Single-threaded: one
 *                thread at a time uses a store. Limits (memory cap, call depth) and
 *                the interrupt flag live here. Freeing the store frees all of it.
 *   pw_instance  a module instantiated in a store; owned by the store.
 *   pw_func, pw_memory, pw_table, pw_global, pw_tag
 *                store-owned external values, shared between instances by linking.
 *
 * No function here touches global mutable state; two stores on two threads never
 * interfere. Every function that can fail reports through a caller-supplied pw_error.
 */
#ifndef PERI_WASM_H
#define PERI_WASM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------- errors */

typedef enum pw_status {
    PW_OK = 0,
    PW_ERR_MALFORMED,  /* binary does not decode ("malformed" in the spec) */
    PW_ERR_INVALID,    /* decodes but does not validate */
    PW_ERR_UNLINKABLE, /* an import is unknown or of an incompatible type */
    PW_ERR_TRAP,       /* execution trapped; see pw_error.trap */
    PW_ERR_EXCEPTION,  /* an uncaught Wasm exception escaped to the embedder */
    PW_ERR_OOM,        /* the store's memory cap was hit (GC heap, tables) */
    PW_ERR_NOMEM,      /* the host allocator failed */
    PW_ERR_ARG,        /* the embedder passed something wrong (arity, types, names) */
} pw_status;

typedef enum pw_trap_code {
    PW_TRAP_NONE = 0,
    PW_TRAP_UNREACHABLE,
    PW_TRAP_MEM_OOB,         /* out of bounds memory access */
    PW_TRAP_TABLE_OOB,       /* out of bounds table access */
    PW_TRAP_INT_OVERFLOW,    /* integer overflow (INT_MIN / -1) */
    PW_TRAP_INVALID_CONV,    /* invalid conversion to integer */
    PW_TRAP_DIV_ZERO,        /* integer divide by zero (div_s/div_u) */
    PW_TRAP_UNINIT_ELEM,     /* uninitialized element (null in call_indirect) */
    PW_TRAP_UNDEF_ELEM,      /* undefined element (index out of table in call_indirect) */
    PW_TRAP_SIG_MISMATCH,    /* indirect call type mismatch */
    PW_TRAP_STACK_EXHAUSTED, /* call stack exhausted */
    PW_TRAP_INTERRUPTED,     /* the store's interrupt flag was raised */
    PW_TRAP_CAST_FAILURE,    /* cast failure (ref.cast) */
    PW_TRAP_NULL_REF,        /* null reference */
    PW_TRAP_NULL_FUNC_REF,   /* null function reference */
    PW_TRAP_NULL_STRUCT_REF, /* null structure reference */
    PW_TRAP_NULL_ARRAY_REF,  /* null array reference */
    PW_TRAP_NULL_I31_REF,    /* null i31 reference */
    PW_TRAP_ARRAY_OOB,       /* out of bounds array access */
    PW_TRAP_HOST,            /* a host function reported a failure (message in pw_error) */
    /* Traps the spec words like an older code but V8 words apart; added last so the
     * codes above keep their values. */
    PW_TRAP_REM_ZERO,      /* integer remainder by zero (spec: "integer divide by zero") */
    PW_TRAP_CONV_OVERFLOW, /* float-to-integer truncation out of range (spec: "integer overflow") */
    PW_TRAP_DATA_SEG_OOB,  /* array.new_data/init_data past the data segment
                              (spec: "out of bounds memory access") */
    PW_TRAP_ELEM_SEG_OOB,  /* array.new_elem/init_elem, table.init past the element segment
                              (spec: "out of bounds table access") */
    PW_TRAP_COUNT_
} pw_trap_code;

typedef enum pw_msg_style {
    PW_MSG_SPEC = 0, /* the reference interpreter's wording ("out of bounds memory access") */
    PW_MSG_V8 = 1,   /* V8's wording ("memory access out of bounds") */
} pw_msg_style;

/* The message for a trap code; a static string, never NULL. */
const char *pw_trap_message(pw_trap_code code, pw_msg_style style);

typedef struct pw_error {
    pw_status status;
    pw_trap_code trap; /* when status == PW_ERR_TRAP */
    char message[256]; /* human-readable, NUL-terminated; for MALFORMED/INVALID the
                          spec's wording starts the message ("unexpected end", "type
                          mismatch", ...) */
} pw_error;

/* ---------------------------------------------------------------- types and values */

/*
 * A value type packed in 32 bits so that type comparisons are integer compares.
 *   bits 0..3  kind (pw_valkind)
 *   bit  4     nullable (references only)
 *   bits 8..31 heap type (references only): a type index within the module that
 *              declares the value, or PW_HT_ABS | abstract heap type code.
 */
typedef uint32_t pw_valtype;

typedef enum pw_valkind {
    PW_K_I32 = 1,
    PW_K_I64 = 2,
    PW_K_F32 = 3,
    PW_K_F64 = 4,
    PW_K_V128 = 5,
    PW_K_REF = 6,
    PW_K_BOT = 7, /* validator only: the unknown type of unreachable code */
} pw_valkind;

#define PW_HT_ABS 0x800000u
/* Abstract heap types, by their binary encoding. */
enum {
    PW_HT_NOEXN = 0x74,
    PW_HT_NOFUNC = 0x73,
    PW_HT_NOEXTERN = 0x72,
    PW_HT_NONE = 0x71,
    PW_HT_FUNC = 0x70,
    PW_HT_EXTERN = 0x6F,
    PW_HT_ANY = 0x6E,
    PW_HT_EQ = 0x6D,
    PW_HT_I31 = 0x6C,
    PW_HT_STRUCT = 0x6B,
    PW_HT_ARRAY = 0x6A,
    PW_HT_EXN = 0x69,
};

#define PW_VT_KIND(t)     ((pw_valkind)((t)&0xFu))
#define PW_VT_NULLABLE(t) (((t) >> 4) & 1u)
#define PW_VT_HEAP(t)     ((t) >> 8)
#define PW_VT_MAKE_REF(heap, nullable)                                                             \
    ((pw_valtype)(PW_K_REF | ((nullable) ? 0x10u : 0u) | ((uint32_t)(heap) << 8)))
#define PW_VT_ABSREF(code, nullable) PW_VT_MAKE_REF(PW_HT_ABS | (uint32_t)(code), nullable)
#define PW_VT_I32                    ((pw_valtype)PW_K_I32)
#define PW_VT_I64                    ((pw_valtype)PW_K_I64)
#define PW_VT_F32                    ((pw_valtype)PW_K_F32)
#define PW_VT_F64                    ((pw_valtype)PW_K_F64)
#define PW_VT_V128                   ((pw_valtype)PW_K_V128)
#define PW_VT_FUNCREF                PW_VT_ABSREF(PW_HT_FUNC, 1)
#define PW_VT_EXTERNREF              PW_VT_ABSREF(PW_HT_EXTERN, 1)

/*
 * A reference value. NULL is the null reference. Non-null references are either
 * tagged i31 values (low bit 1) or pointers to store-owned objects that begin with a
 * common header (functions, structs, arrays, exceptions, host references).
 */
typedef uintptr_t pw_ref;
#define PW_NULL_REF ((pw_ref)0)

/* An untagged 64-bit value cell; its type comes from context (a function type). A
 * v128 value (SIMD) takes two consecutive cells, the low 64 bits first, in every
 * array of values: pw_call's arguments and results (nargs and nresults count cells),
 * host function arguments and results, exception payloads. */
typedef union pw_val {
    int32_t i32;
    int64_t i64;
    uint32_t f32; /* bit pattern */
    uint64_t f64; /* bit pattern */
    pw_ref ref;
    uint64_t bits;
} pw_val;

/* A function type described without a module: only abstract reference types. */
typedef struct pw_functype {
    uint32_t nparams, nresults;
    const pw_valtype *params, *results;
} pw_functype;

typedef enum pw_extern_kind {
    PW_EXTERN_FUNC = 0,
    PW_EXTERN_TABLE = 1,
    PW_EXTERN_MEMORY = 2,
    PW_EXTERN_GLOBAL = 3,
    PW_EXTERN_TAG = 4,
} pw_extern_kind;

typedef struct pw_module pw_module;
typedef struct pw_store pw_store;
typedef struct pw_instance pw_instance;
typedef struct pw_func pw_func;
typedef struct pw_table pw_table;
typedef struct pw_memory pw_memory;
typedef struct pw_global pw_global;
typedef struct pw_tag pw_tag;

typedef struct pw_extern {
    pw_extern_kind kind;
    union {
        pw_func *func;
        pw_table *table;
        pw_memory *memory;
        pw_global *global;
        pw_tag *tag;
    } u;
} pw_extern;

/* ---------------------------------------------------------------- modules */

typedef struct pw_module_config {
    int reserved; /* zero-initialise; room for future knobs */
    /* Compile every function to the interpreter's internal code when the module is
     * made (an error in any body then fails pw_module_new). Default (false): each
     * function is compiled at its first call, so a large module whose run touches
     * few functions (Ruby's start) pays only for those. Both give the same code. */
    bool compile_eagerly;
    /* With both set (digest: SHA-256 of the bytes, which the caller hashed for the
     * cache anyway), a module whose bytes already passed validation under this engine
     * build (a "validated" record in that cache, written after a full validation) has
     * its function bodies not validated again; everything else is. A wrong digest is
     * trusted like the cache's code is: callers pass the bytes' own. NULL: validate.
     * Modules under 64 KiB are always validated (cheaper than the record's I/O). */
    const struct pw_code_cache_config *code_cache;
    const uint8_t *digest;
} pw_module_config;

/* Decode, validate and compile. The bytes are copied where needed; the caller keeps
 * ownership of `bytes`. Returns NULL with err set on failure. Caller frees the result
 * with pw_module_free. cfg may be NULL. */
pw_module *pw_module_new(const uint8_t *bytes, size_t len, const pw_module_config *cfg,
                         pw_error *err);
/* pw_module_new taking ownership of `bytes` (from malloc, len bytes long): the module
 * keeps that buffer instead of a copy (no copy of a 30 MB module, no second set of
 * its pages) and frees it; on failure it is freed at once. The caller must hold no
 * other reference to it. */
pw_module *pw_module_new_owned(uint8_t *bytes, size_t len, const pw_module_config *cfg,
                               pw_error *err);
/* A module's bytes held by their owner: malloc'd (maplen 0), or a private read-only
 * mapping of maplen bytes (pw_file_load_digest). pw_bytes_free releases either and
 * zeroes *b. */
typedef struct pw_bytes {
    uint8_t *p;
    size_t len;
    size_t maplen;
} pw_bytes;
void pw_bytes_free(pw_bytes *b);
/* pw_module_new_owned for bytes of either kind: the module takes *b over (also on
 * failure) and *b is zeroed. */
pw_module *pw_module_new_bytes(pw_bytes *b, const pw_module_config *cfg, pw_error *err);
/* Decode and validate only (no compile), for `peri wasm validate` and fuzzing. */
pw_status pw_module_validate(const uint8_t *bytes, size_t len, pw_error *err);
/* The WebAssembly text format (a module: "(module ...)", its fields alone, or the
 * "(module binary ...)" / "(module quote ...)" forms) to the binary format. On success
 * *out (caller frees with free()) holds *out_len bytes; the result is not validated
 * (decode it with pw_module_new / pw_module_validate). Text that the grammar rejects
 * gives PW_ERR_MALFORMED with "<what> (at line:column)" in err->message; PW_ERR_NOMEM
 * when allocation fails. `text` need not be NUL-terminated. */
pw_status pw_wat_to_wasm(const char *text, size_t len, uint8_t **out, size_t *out_len,
                         pw_error *err);
void pw_module_free(pw_module *m);

typedef struct pw_import_desc {
    const char *module, *name; /* UTF-8, not NUL-terminated: use the lengths */
    size_t module_len, name_len;
    pw_extern_kind kind;
    uint32_t index; /* import index, for pw_func_new_host_for_import */
} pw_import_desc;

typedef struct pw_export_desc {
    const char *name;
    size_t name_len;
    pw_extern_kind kind;
} pw_export_desc;

uint32_t pw_module_import_count(const pw_module *m);
void pw_module_import(const pw_module *m, uint32_t i, pw_import_desc *out);
uint32_t pw_module_export_count(const pw_module *m);
void pw_module_export(const pw_module *m, uint32_t i, pw_export_desc *out);
/* The function type of exported function `name`; false if there is none. */
bool pw_module_export_functype(const pw_module *m, const char *name, size_t name_len,
                               pw_functype *out);

/* ---------------------------------------------------------------- stores */

typedef struct pw_store_config {
    uint64_t memory_cap;      /* bytes over all linear memories + GC heap + tables; 0 = 4 GiB */
    uint32_t max_call_depth;  /* Wasm frames; 0 = default (100,000) */
    size_t value_stack_bytes; /* 0 = default (64 MiB of slots) */
    /* false (the spec's behaviour): memory.grow / table.grow past memory_cap return -1.
     * true: they end the run with PW_ERR_OOM, like a GC allocation that cannot be
     * satisfied — for hosts whose contract makes the cap a platform limit. A grow past
     * the memory's or table's own declared maximum still returns -1 either way. */
    bool cap_is_fatal;
    /* Optional mapping pool (pw_pool_new): the store takes its stacks and linear
     * memories from it and gives them back in pw_store_free. NULL: mmap/munmap. */
    struct pw_pool *pool;
    /* Execution tier (docs/jit.md, "Choosing the tier"): PW_ENGINE_AUTO (0, the
     * default: the interpreter first, the baseline JIT for a module once it is hot),
     * PW_ENGINE_INTERP (the interpreter only) or PW_ENGINE_JIT (the JIT from the first
     * call for every function it can translate, the interpreter for the rest). On
     * hosts without a JIT (anything but x86-64 Linux) every setting runs the
     * interpreter. Results, traps and limits are the same in every tier. */
    int engine;
    /* JIT: bytes of native (C) stack that nested JIT calls may use below an entry
     * from the host; deeper calls continue on the interpreter. 0 = 512 KiB. */
    size_t jit_native_stack;
    /* PW_ENGINE_JIT: compile every function at instantiation instead of at its first
     * call (ignored by auto, which translates when the module is hot). */
    bool jit_eager;
    /* JIT: translate SIMD with plain SSE2 only, even where the CPU has SSSE3 and
     * SSE4.1 (tests the baseline path on any machine). The store that triggers a
     * module's translation decides for that module. */
    bool jit_sse2;
    /* Bounds checks of 32-bit memories (docs/jit.md, "Bounds checks"): PW_BOUNDS_GUARD
     * (0, the default): each is reserved with guard pages where the address space
     * allows, and the JIT then accesses memory 0 without checks (an out-of-bounds
     * access faults and becomes the same trap, through a SIGSEGV/SIGBUS handler the
     * engine installs once per process and chains to the previous one);
     * PW_BOUNDS_EXPLICIT: no reservation beyond the memory's maximum and no signal
     * handler, every access checked explicitly. Traps are the same either way. */
    int bounds_checks;
} pw_store_config;

/* PW_ENGINE_LAZY: as PW_ENGINE_JIT, but each function is translated alone at its
 * first call, so a big module pays only for what runs (docs/jit.md, "Lazy
 * translation"; off by default while it is measured). */
enum { PW_ENGINE_AUTO = 0, PW_ENGINE_INTERP = 1, PW_ENGINE_JIT = 2, PW_ENGINE_LAZY = 3 };
enum { PW_BOUNDS_GUARD = 0, PW_BOUNDS_EXPLICIT = 1 };

/* A cache of the mappings stores use (value/frame stacks, linear-memory
 * reservations), so a short run makes no mmap/munmap/mprotect call: those take the
 * process-wide mm lock and send TLB shootdowns to every other thread. Memory handed
 * out again reads as zero (the engine zeroes what a previous store dirtied). A pool
 * keeps a few entries and a bounded number of dirtied bytes; the rest is unmapped.
 * Not thread-safe: one thread at a time uses a pool and every store made with it
 * (handing it to another thread needs a happens-before, e.g. a mutex). */
typedef struct pw_pool pw_pool;
/* Caller frees with pw_pool_free. NULL when out of memory. */
pw_pool *pw_pool_new(void);
/* Unmaps what the pool holds. Stores still using it stay valid: the pool is then
 * released by the last of them (their mappings are unmapped, not kept). */
void pw_pool_free(pw_pool *p);

/* cfg may be NULL for defaults. Caller frees with pw_store_free. */
pw_store *pw_store_new(const pw_store_config *cfg, pw_error *err);
void pw_store_free(pw_store *s);

/* Thread-safe: ask the code running in `s` to stop. It traps with
 * PW_TRAP_INTERRUPTED at the next loop back-edge or call. The flag stays raised
 * until pw_store_clear_interrupt. */
void pw_store_interrupt(pw_store *s);
void pw_store_clear_interrupt(pw_store *s);
/* Is the interrupt flag raised? Host functions doing long work on guest data poll it
 * and end the call (a trap) when it is. */
bool pw_store_interrupted(const pw_store *s);

/* ---------------------------------------------------------------- instantiation */

/* Resolves one import. Fill *out and return true, or return false to make the
 * import unknown (instantiation then fails with PW_ERR_UNLINKABLE "unknown import").
 * Type compatibility is checked by the engine after the resolver returns. */
typedef bool (*pw_resolve_fn)(void *ctx, pw_store *s, const pw_module *m, const pw_import_desc *imp,
                              pw_extern *out);

/* Link, initialise segments, run the start function. On failure returns NULL; effects
 * on imported memories/tables made before a trap persist (as the spec requires). */
pw_instance *pw_instantiate(pw_store *s, const pw_module *m, pw_resolve_fn resolve, void *ctx,
                            pw_error *err);

bool pw_instance_export(pw_instance *inst, const char *name, size_t name_len, pw_extern *out);
const pw_module *pw_instance_module(const pw_instance *inst);

/* ---------------------------------------------------------------- snapshots */

/*
 * A snapshot is the state of one instance's own memories, globals and tables at a
 * moment (e.g. after a slow initialisation), detached from its store. Instances made
 * from it start in exactly that state: each memory is a private copy-on-write mapping
 * of the snapshot's bytes (a page is copied only when the new instance writes it),
 * so any number of stores on any threads may use one snapshot at once and no write
 * of one instance is ever seen by another. Immutable after creation; thread-safe.
 * Supported: numeric globals (a reference-typed global must be null), function
 * tables holding null or functions of the instance (its own or its imports).
 */
typedef struct pw_snapshot pw_snapshot;

/* Captures inst's defined memories, globals and tables (and which segments were
 * dropped). Call it outside any Wasm call of inst's store. NULL with err on failure
 * (PW_ERR_ARG: state a snapshot cannot hold; PW_ERR_NOMEM). Caller frees with
 * pw_snapshot_free; the snapshot may outlive inst and its store, not the module. */
pw_snapshot *pw_snapshot_take(pw_instance *inst, pw_error *err);
void pw_snapshot_free(pw_snapshot *snap);
/* The bytes of memory the snapshot holds (for cache accounting). */
uint64_t pw_snapshot_bytes(const pw_snapshot *snap);
/* Instantiates m (the module snap was taken from) in s like pw_instantiate, imports
 * resolved the same way, but starting from the snapshot's state: no segment
 * initialisation and no start function (both happened before the snapshot). */
pw_instance *pw_instantiate_snapshot(pw_store *s, const pw_module *m, const pw_snapshot *snap,
                                     pw_resolve_fn resolve, void *ctx, pw_error *err);

/* ---------------------------------------------------------------- calls */

void pw_func_type(const pw_func *f, pw_functype *out); /* valid while f lives */

/* Call f. args has nparams cells, results room for nresults cells. Argument types are
 * not checked beyond arity; the embedder passes values of the declared types. */
pw_status pw_call(pw_store *s, pw_func *f, const pw_val *args, uint32_t nargs, pw_val *results,
                  uint32_t nresults, pw_error *err);

/* Host functions. The context gives access to the calling instance. */
typedef struct pw_call_ctx pw_call_ctx;
/* Return PW_OK, or a failure made with pw_ctx_trap (or PW_ERR_EXCEPTION after
 * pw_ctx_throw in Wasm 3.0). */
typedef pw_status (*pw_host_fn)(pw_call_ctx *cx, void *env, const pw_val *args, pw_val *results);

pw_func *pw_func_new_host(pw_store *s, const pw_functype *type, pw_host_fn fn, void *env,
                          pw_error *err);
/* A host function whose type is exactly that of import `import_index` of m (which may
 * use module-defined reference types). */
pw_func *pw_func_new_host_for_import(pw_store *s, const pw_module *m, uint32_t import_index,
                                     pw_host_fn fn, void *env, pw_error *err);

pw_store *pw_ctx_store(pw_call_ctx *cx);
pw_instance *pw_ctx_instance(pw_call_ctx *cx); /* the caller's instance, may be NULL */
/* The caller's memory 0 (base and size in bytes); NULL base when it has none. The
 * pointer is valid until the next call into Wasm or memory.grow. */
uint8_t *pw_ctx_memory(pw_call_ctx *cx, uint64_t *size);
pw_status pw_ctx_trap(pw_call_ctx *cx, const char *fmt, ...);

/* ---------------------------------------------------------------- external objects */

pw_memory *pw_memory_new(pw_store *s, uint64_t min_pages, uint64_t max_pages /* UINT64_MAX: none */,
                         pw_error *err);
uint8_t *pw_memory_data(pw_memory *mem, uint64_t *size);
pw_table *pw_table_new(pw_store *s, pw_valtype elem, uint32_t min,
                       uint32_t max /* UINT32_MAX: none */, pw_ref init, pw_error *err);
/* The same objects with i64 addresses (memory64, table64): they match only imports
 * that declare i64 addresses, and the plain ones only i32 imports. The engine still
 * caps a memory at 2^16 pages (4 GiB) and a table at 10^7 elements. */
pw_memory *pw_memory_new64(pw_store *s, uint64_t min_pages, uint64_t max_pages, pw_error *err);
pw_table *pw_table_new64(pw_store *s, pw_valtype elem, uint32_t min,
                         uint64_t max /* UINT64_MAX: none */, pw_ref init, pw_error *err);
pw_global *pw_global_new(pw_store *s, pw_valtype type, bool mutable_, pw_val init, pw_error *err);
pw_val pw_global_get(const pw_global *g);      /* a v128 global: its low half */
uint64_t pw_global_get_hi(const pw_global *g); /* a v128 global's high half, else 0 */
pw_valtype pw_global_type(const pw_global *g);

/* Host (extern) references: a non-null reference standing for host value v. Two
 * calls with the same v give references that compare equal (same object). */
pw_ref pw_externref_new(pw_store *s, uint64_t v, pw_error *err);
/* If r is a host reference, store its value in *v and return true. */
bool pw_externref_value(pw_ref r, uint64_t *v);
/* A function instance as a reference value (funcref). */
pw_ref pw_func_ref(pw_func *f);
pw_func *pw_ref_func(pw_ref r); /* NULL unless r is a function reference */

/* ---------------------------------------------------------------- Wasm 3.0 GC heap */

/*
 * Host handles. The collector may run whenever Wasm code or one of the allocating
 * functions below (pw_struct_new, pw_array_new*) runs. A host function's own
 * arguments and result cells are roots while it runs; any other reference the host
 * keeps across such a call (in a C variable, a data structure, between calls) must be
 * held through a handle, or the object may be freed. Handles are freed explicitly
 * or with the store.
 */
typedef uint32_t pw_handle; /* 0 = none */
/* Returns 0 (and sets err) when out of memory. */
pw_handle pw_handle_new(pw_store *s, pw_ref r, pw_error *err);
pw_ref pw_handle_get(const pw_store *s, pw_handle h);
void pw_handle_set(pw_store *s, pw_handle h, pw_ref r);
void pw_handle_free(pw_store *s, pw_handle h);

typedef enum pw_ref_kind {
    PW_REF_NULL = 0,
    PW_REF_I31,
    PW_REF_STRUCT,
    PW_REF_ARRAY,
    PW_REF_FUNC,
    PW_REF_EXTERN, /* host reference (pw_externref_new) */
    PW_REF_EXN,
} pw_ref_kind;
pw_ref_kind pw_ref_kind_of(pw_ref r);

/* i31 references: v is truncated to 31 bits; get_s sign-extends, get_u does not. */
pw_ref pw_i31_new(uint32_t v);
int32_t pw_i31_get_s(pw_ref r);
uint32_t pw_i31_get_u(pw_ref r);

/* Allocate a struct / array of type `type_index` of inst's module (a struct / array
 * type). Field and element values are pw_val cells of the declared field types (packed
 * i8/i16 fields take the low bits of .i32). fields may be NULL for default (zero/null)
 * values. On failure returns PW_NULL_REF with err: PW_ERR_OOM when the store's memory
 * cap is reached even after a collection, PW_ERR_ARG for a wrong type index. */
pw_ref pw_struct_new(pw_store *s, pw_instance *inst, uint32_t type_index, const pw_val *fields,
                     pw_error *err);
/* len elements, all equal to *init (NULL: default value). */
pw_ref pw_array_new(pw_store *s, pw_instance *inst, uint32_t type_index, uint32_t len,
                    const pw_val *init, pw_error *err);
/* An array of an i8 element type holding a copy of bytes[0..len). */
pw_ref pw_array_new_bytes(pw_store *s, pw_instance *inst, uint32_t type_index, const uint8_t *bytes,
                          uint32_t len, pw_error *err);

/* Readers. Out-of-range indices or wrong kinds return false. Packed fields read with
 * sign extension when `sign`, else zero extension. */
uint32_t pw_struct_field_count(const pw_store *s, pw_ref r);
bool pw_struct_get(const pw_store *s, pw_ref r, uint32_t field, bool sign, pw_val *out);
bool pw_struct_set(const pw_store *s, pw_ref r, uint32_t field, pw_val v);
uint32_t pw_array_len(pw_ref r); /* 0 unless r is an array */
bool pw_array_get(pw_ref r, uint32_t i, bool sign, pw_val *out);
bool pw_array_set(pw_ref r, uint32_t i, pw_val v);
/* The bytes of an i8 array (len in *len), NULL if r is not one. Valid while the array
 * lives; writes through it are visible to Wasm. */
uint8_t *pw_array_bytes(pw_ref r, uint32_t *len);
/* Is r an instance of type `type_index` of inst's module (Wasm subtyping)? */
bool pw_ref_test_type(pw_store *s, pw_instance *inst, pw_ref r, uint32_t type_index);

typedef struct pw_gc_stats {
    uint64_t heap_bytes;  /* bytes currently allocated (live + not yet collected) */
    uint64_t peak_bytes;  /* the largest heap_bytes seen */
    uint64_t live_bytes;  /* live bytes found by the last collection */
    uint64_t collections; /* collections run */
} pw_gc_stats;
void pw_store_gc_stats(const pw_store *s, pw_gc_stats *out);
/* Run a full collection now (only from the host, outside Wasm calls or inside a host
 * function). */
void pw_store_gc(pw_store *s);

/* ---------------------------------------------------------------- host extensions */

/* From a host function: throw an exception of tag (args: its payload cells), to be
 * caught by the calling Wasm code; return the result (PW_ERR_EXCEPTION). nargs must be
 * the tag's payload arity (else a trap); payload types are the caller's duty. */
pw_status pw_ctx_throw(pw_call_ctx *cx, pw_tag *tag, const pw_val *args, uint32_t nargs);
/* The function type of import i (module-relative type indices); false if it is not a
 * function import. The arrays stay valid while m lives. */
bool pw_module_import_functype(const pw_module *m, uint32_t i, pw_functype *out);
/* The function type (payload) of the tag exported as name; false if there is none. */
bool pw_module_export_tagtype(const pw_module *m, const char *name, size_t name_len,
                              pw_functype *out);
/* Defined type ti of m: its form (0x60 func, 0x5F struct, 0x5E array; 0 when out of
 * range), field count (array: 1) and each field's storage (packed: 0 none, 1 i8, 2 i16). */
int pw_module_type_form(const pw_module *m, uint32_t ti);
uint32_t pw_module_type_nfields(const pw_module *m, uint32_t ti);
bool pw_module_type_field(const pw_module *m, uint32_t ti, uint32_t i, pw_valtype *type,
                          uint8_t *packed, bool *mut);
/* The contents of the nth (from 0) custom section called name, or NULL. */
const uint8_t *pw_module_custom_section(const pw_module *m, const char *name, size_t name_len,
                                        uint32_t nth, size_t *len);

/* ---------------------------------------------------------------- compiled code
 * Saved JIT translations (docs/jit.md, "Compiled-code cache"). An artifact holds one
 * whole-module translation for one bounds-check mode, bound to the module (the
 * SHA-256 of its bytes, which the caller passes: the caller hashed them anyway), to
 * this exact engine build and to the CPU features the code uses, with an integrity
 * digest over all of it. Anything that does not match is rejected with its kind and
 * never executed. On hosts without the JIT every call reports PW_CODE_UNSUPPORTED. */
typedef enum pw_code_error {
    PW_CODE_OK = 0,
    PW_CODE_IO,          /* reading, writing or creating failed (the message says which) */
    PW_CODE_NOMEM,       /* out of memory */
    PW_CODE_NOT_CODE,    /* not an artifact (no magic) */
    PW_CODE_FORMAT,      /* another artifact format version */
    PW_CODE_ENGINE,      /* made by another engine build */
    PW_CODE_CPU,         /* uses CPU features this CPU lacks */
    PW_CODE_MODULE,      /* made for another module */
    PW_CODE_TRUNCATED,   /* shorter or longer than its header says */
    PW_CODE_CORRUPT,     /* the integrity digest does not match */
    PW_CODE_MALFORMED,   /* digest right, contents inconsistent (offsets, sizes) */
    PW_CODE_UNSAFE_DIR,  /* cache directory not ours, group/world-writable, or a link */
    PW_CODE_UNSUPPORTED, /* no JIT on this host, or no engine build id to bind to */
} pw_code_error;

typedef struct pw_code_err {
    pw_code_error kind;
    char message[256]; /* NUL-terminated, English */
} pw_code_err;

/* The stable name of a kind ("corrupt", "foreign-engine", ...). */
const char *pw_code_error_name(pw_code_error e);

/* Translate all of m into an artifact. bounds_checks: PW_BOUNDS_GUARD or
 * PW_BOUNDS_EXPLICIT (the stores that will run it); sse2_only as
 * pw_store_config.jit_sse2. On PW_CODE_OK *out (*len bytes) belongs to the caller
 * (free). digest: SHA-256 of the bytes m was made from. */
pw_code_error pw_code_compile(const pw_module *m, const uint8_t digest[32], int bounds_checks,
                              bool sse2_only, uint8_t **out, size_t *len, pw_code_err *err);
/* Check an artifact in memory against m (every check pw_code_load makes), without
 * installing it. */
pw_code_error pw_code_verify(const pw_module *m, const uint8_t digest[32], const uint8_t *art,
                             size_t len, pw_code_err *err);
/* Verify the artifact at path and install it into m: stores running m with the
 * artifact's bounds mode run its machine code without translating (the other mode
 * is translated as usual). Safe while m is shared (the code is published the way the
 * JIT publishes a translation); a translation published first wins. */
pw_code_error pw_code_load(const pw_module *m, const uint8_t digest[32], const char *path,
                           pw_code_err *err);

/* An automatic on-disk cache of translations, keyed by module digest, engine build
 * and CPU features. dir is created (0700) when missing and refused when it (or the
 * created path's last component) is a link, not owned by the effective user, or
 * group/world-writable. Files are 0600, written to a temporary name, synced and
 * renamed, so concurrent processes never read a partial file; the oldest (by last
 * use) are removed when the total passes max_bytes. */
typedef struct pw_code_cache_config {
    const char *dir;    /* required */
    uint64_t max_bytes; /* 0 = 1 GiB */
} pw_code_cache_config;
/* Attach the cache to m (call before m is shared): its first translation for a store
 * is read from the cache when a valid one is there, else translated and saved. Under
 * PW_ENGINE_AUTO a big module with a saved translation runs it from its first call,
 * and one without is translated lazily (each function at its first call) from its
 * first call; what ran is saved when m is freed, so that the next process finds it
 * (PW_ENGINE_LAZY saves the same way). digest: SHA-256 of the bytes m was made from. */
pw_code_error pw_module_set_code_cache(pw_module *m, const uint8_t digest[32],
                                       const pw_code_cache_config *cfg, pw_code_err *err);
/* Translate all of m now and put it in the cache at cfg (for the stores of
 * bounds_checks, with this CPU's features), as a first run would: `peri compile
 * --into-cache`, e.g. at install time. */
pw_code_error pw_code_cache_fill(const pw_module *m, const uint8_t digest[32],
                                 const pw_code_cache_config *cfg, int bounds_checks,
                                 pw_code_err *err);

/* Read the regular file open at fd whole (at most max bytes) into *bytes (malloc'd,
 * *len bytes; the caller frees) and set digest to their SHA-256. With cfg, a memo in
 * that cache remembers the digest of a file by its identity (device, inode, size,
 * mtime and ctime to the nanosecond), so a file unchanged since it was hashed is not
 * hashed again; it is written only for a file left alone for two seconds, used only
 * on local file systems that keep ctime (filedigest.c says why that is sound), and
 * never trusted across a change seen while reading. PW_CODE_IO: not a regular file,
 * too big, unreadable, or changed size while read; PW_CODE_NOMEM. */
pw_code_error pw_file_read_digest(int fd, uint64_t max, const pw_code_cache_config *cfg,
                                  uint8_t **bytes, size_t *len, uint8_t digest[32],
                                  pw_code_err *err);
/* pw_file_read_digest into *out, which may instead be a private read-only mapping of
 * the cache's own copy of the file (free it with pw_bytes_free, or hand it to
 * pw_module_new_bytes): with cfg, a file of at least 1 MiB is also kept in the cache
 * under its digest, and a later load whose digest comes from the memo maps that copy
 * once it passed a full check (SHA-256 equal to the digest) and has not been written
 * since, instead of reading the file: no copy into fresh memory, and only the pages
 * that decoding and compiling touch are read. The copy is trusted like the cache's
 * translations (docs/jit.md, "Module copies"). Errors as pw_file_read_digest. */
pw_code_error pw_file_load_digest(int fd, uint64_t max, const pw_code_cache_config *cfg,
                                  pw_bytes *out, uint8_t digest[32], pw_code_err *err);

/* Snapshots saved in the code cache attached to m (pw_module_set_code_cache), so that
 * another process starts from them instead of initialising again. tag (tag_len bytes)
 * names whatever else the state depends on (how the instance was initialised); a file
 * is bound to the module's digest, the engine build and the tag, written like a
 * translation (0600, temporary name, synced, renamed) and counted in the cache's
 * bound. pw_snapshot_save_cached: false when nothing was saved (no cache, I/O, over
 * the bound). pw_snapshot_load_cached: PW_CODE_OK with *out (caller frees with
 * pw_snapshot_free; it must not outlive m, its memory is mapped copy-on-write from
 * the file); PW_CODE_IO when there is none; any other kind when a file was refused
 * (another module, engine or tag, a bad layout, a wrong digest), which is then
 * removed. */
bool pw_snapshot_save_cached(const pw_module *m, const pw_snapshot *snap, const void *tag,
                             size_t tag_len);
pw_code_error pw_snapshot_load_cached(const pw_module *m, const void *tag, size_t tag_len,
                                      pw_snapshot **out, pw_code_err *err);

#ifdef __cplusplus
}
#endif
#endif
