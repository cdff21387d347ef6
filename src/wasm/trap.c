/*
 * trap.c — trap messages in two wordings: the spec reference interpreter's (used by
 * the spec runner, MANIFEST §6.9) and V8's (for hosts that promise V8-compatible
 * messages).
 */
#include "wasm/runtime.h"

#include <stdio.h>

/* Each trap's message in both wordings: {spec reference interpreter, V8}. */
static const struct {
    const char *spec, *v8;
} msgs[PW_TRAP_COUNT_] = {
    [PW_TRAP_NONE] = {"no trap", "no trap"},
    [PW_TRAP_UNREACHABLE] = {"unreachable", "unreachable"},
    [PW_TRAP_MEM_OOB] = {"out of bounds memory access", "memory access out of bounds"},
    [PW_TRAP_TABLE_OOB] = {"out of bounds table access", "table index is out of bounds"},
    [PW_TRAP_INT_OVERFLOW] = {"integer overflow", "divide result unrepresentable"},
    [PW_TRAP_INVALID_CONV] = {"invalid conversion to integer",
                              "float unrepresentable in integer range"},
    [PW_TRAP_DIV_ZERO] = {"integer divide by zero", "divide by zero"},
    [PW_TRAP_UNINIT_ELEM] = {"uninitialized element",
                             "null function or function signature mismatch"},
    [PW_TRAP_UNDEF_ELEM] = {"undefined element", "table index is out of bounds"},
    [PW_TRAP_SIG_MISMATCH] = {"indirect call type mismatch",
                              "null function or function signature mismatch"},
    [PW_TRAP_STACK_EXHAUSTED] = {"call stack exhausted", "Maximum call stack size exceeded"},
    [PW_TRAP_INTERRUPTED] = {"interrupted", "interrupted"},
    [PW_TRAP_CAST_FAILURE] = {"cast failure", "illegal cast"},
    [PW_TRAP_NULL_REF] = {"null reference", "dereferencing a null pointer"},
    [PW_TRAP_NULL_FUNC_REF] = {"null function reference", "dereferencing a null pointer"},
    [PW_TRAP_NULL_STRUCT_REF] = {"null structure reference", "dereferencing a null pointer"},
    [PW_TRAP_NULL_ARRAY_REF] = {"null array reference", "dereferencing a null pointer"},
    [PW_TRAP_NULL_I31_REF] = {"null i31 reference", "dereferencing a null pointer"},
    [PW_TRAP_ARRAY_OOB] = {"out of bounds array access", "array element access out of bounds"},
    [PW_TRAP_HOST] = {"host function failed", "host function failed"},
    [PW_TRAP_REM_ZERO] = {"integer divide by zero", "remainder by zero"},
    [PW_TRAP_CONV_OVERFLOW] = {"integer overflow", "float unrepresentable in integer range"},
    [PW_TRAP_DATA_SEG_OOB] = {"out of bounds memory access", "data segment out of bounds"},
    [PW_TRAP_ELEM_SEG_OOB] = {"out of bounds table access", "element segment out of bounds"},
};

const char *pw_trap_message(pw_trap_code code, pw_msg_style style) {
    if ((unsigned)code >= PW_TRAP_COUNT_) return "unknown trap";
    return style == PW_MSG_V8 ? msgs[code].v8 : msgs[code].spec;
}

pw_status pw__trap(pw_error *err, pw_trap_code code) {
    if (err) {
        err->status = PW_ERR_TRAP;
        err->trap = code;
        snprintf(err->message, sizeof err->message, "%s", pw_trap_message(code, PW_MSG_SPEC));
    }
    return PW_ERR_TRAP;
}
