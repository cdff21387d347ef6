/*
 * values.h — Wasm values on the command line (values.c).
 */
#ifndef PERI_CLI_VALUES_H
#define PERI_CLI_VALUES_H

#include "peri/wasm.h"

#include <stdbool.h>

const char *peri_val_type_name(pw_valtype t);
/* Parses one argument by its parameter type; false on a malformed value. */
bool peri_val_parse(const char *s, pw_valtype t, pw_val *out);
/* Prints one result and a newline on stdout. */
void peri_val_print(pw_valtype t, pw_val v);

#endif
