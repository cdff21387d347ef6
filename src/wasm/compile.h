/*
 * compile.h — the back end's entry points as seen by the front end.
 *
 * pw__compile_module lowers every validated function body of m into the internal
 * code the interpreter runs and stores it in m->code. It runs once per module; the
 * result is immutable and shared by every instance in every store.
 */
#ifndef PW_COMPILE_H
#define PW_COMPILE_H

#include "wasm/module.h"

pw_status pw__compile_module(pw_module *m, pw_error *err);
void pw__compile_free(struct pw_cmodule *code);

#endif
