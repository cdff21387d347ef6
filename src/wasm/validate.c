/*
 * validate.c — module validation (work in progress: type section only so far).
 */
#include "wasm/module.h"

pw_status pw_validate(pw_module *m, pw_error *err) {
    return pw_types_check(m, err);
}
