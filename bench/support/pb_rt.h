/*
 * pb_rt.h — the tiny runtime that lets the shared benchmark programs run as
 * import-free WebAssembly modules (no WASI, no libc).
 *
 * The programs in ../shared/bench/programs/ are ordinary C with main(); a wrapper in
 * bench/wrap/ renames main, includes the program unchanged, and exports one function
 * taking i32 arguments. printf and friends write into an in-memory buffer; the
 * exported function returns a 31-bit FNV-1a hash of that text so the result can be
 * checked against the native program's output without any I/O import.
 */
#ifndef PB_RT_H
#define PB_RT_H

#include <stddef.h>
#include <stdint.h>

#define PB_EXPORT(name) __attribute__((export_name(name), visibility("default")))

/* Forget previous output (each exported call starts clean). */
void pb_out_reset(void);
/* FNV-1a 32 of the output so far, masked to 31 bits so that signed and unsigned
 * printers agree. */
int32_t pb_out_hash(void);
/* Calls main with argv = {prog, a[0], ..., a[n-1]} rendered as decimal strings and
 * returns pb_out_hash(). */
int32_t pb_run_main(int (*main_fn)(int, char **), const char *prog, int n, const int32_t *a);

#endif
