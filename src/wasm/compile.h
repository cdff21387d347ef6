/*
 * compile.h — the back end's entry points as seen by the front end.
 *
 * pw__compile_module prepares m->code, the internal code the interpreter runs, shared
 * by every instance in every store. With eager, every validated function body is
 * lowered at once; otherwise each is lowered at its first use (pw__compile_lazy,
 * runtime.h), once, under the module's lock.
 */
#ifndef PW_COMPILE_H
#define PW_COMPILE_H

#include "wasm/module.h"

pw_status pw__compile_module(pw_module *m, bool eager, pw_error *err);
void pw__compile_free(struct pw_cmodule *code);

#endif
