/* fib.c — the bundled example module for `make demo`: naive recursive Fibonacci,
 * exported as "fib" (i32 -> i32). Rebuild fib.wasm with examples/build.sh. */
__attribute__((visibility("default"))) int fib(int n) {
    return n < 2 ? n : fib(n - 1) + fib(n - 2);
}
