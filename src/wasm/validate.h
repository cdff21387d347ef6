/*
 * validate.h — the expression validator's context, shared by validate.c (module
 * level) and validate_expr.c (instruction sequences). Internal to src/wasm/.
 *
 * One context validates every body and constant expression of a module; its stacks
 * grow as needed and are reused, so validation allocates O(max nesting + max stack)
 * per module, never per instruction.
 */
#ifndef PW_VALIDATE_H
#define PW_VALIDATE_H

#include "wasm/instr.h"

typedef struct pw_vctl {
    uint32_t op;          /* 0 function, 0x02 block, 0x03 loop, 0x04 if, 0x05 else, 0x1F try */
    uint32_t height;      /* operand stack height at entry */
    uint32_t init_height; /* initialised-locals stack height at entry */
    uint8_t unreachable;
    uint8_t bt;         /* PW_BT_*; the function frame uses PW_BT_TYPE */
    pw_valtype single;  /* PW_BT_VAL */
    uint32_t type;      /* PW_BT_TYPE: function type index */
    uint32_t brt_stamp; /* last br_table that checked this label (see brt_gen) */
} pw_vctl;

typedef struct pw_vctx {
    pw_module *m;
    pw_error *err;
    pw_reader r;

    pw_valtype *vals;
    uint32_t nvals, capvals;
    pw_vctl *ctls;
    uint32_t nctls, capctls;

    /* Locals of the current function: types (params first), initialisation flags,
     * and the stack of locals initialised inside open blocks. */
    pw_valtype *ltypes;
    uint8_t *linit;
    uint32_t nlocals, caplocals;
    uint32_t *inits;
    uint32_t ninits, capinits;

    uint32_t brt_gen; /* numbers br_tables so each checks a label's types once */

    /* Constant expressions: only constant instructions, and only the first
     * `nglobals_visible` globals. */
    bool const_mode;
    uint32_t nglobals_visible;
} pw_vctx;

/* pw__validate, with full false checking everything but the function bodies and the
 * constant expressions (whose checks only reject, and build nothing later stages
 * use): for a module whose bytes (by digest) already passed a full validation under
 * this engine build (module.c, a "validated" record in the code cache, codecache.c). */
pw_status pw__validate_module(pw_module *m, bool full, pw_error *err);
/* Validate the function body of defined function `i` (0-based among defined). */
pw_status pw__validate_func(pw_vctx *v, uint32_t i);
/* Validate constant expression `e` producing one value of type t. */
pw_status pw__validate_const(pw_vctx *v, pw_span e, pw_valtype t, uint32_t nglobals_visible);
/* Is value type t well formed (its type index, if any, is known)? */
pw_status pw__check_valtype(pw_vctx *v, pw_valtype t);
void pw__vctx_free(pw_vctx *v);

#endif
