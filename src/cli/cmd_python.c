/*
 * cmd_python.c — `peri python [OPTIONS] SCRIPT.py|-`: runs a Python script in the room
 * with CPython's WebAssembly build (docs/python.md), like `python3 SCRIPT.py`: stdout
 * and stderr stream, the exit status is the script's (sys.exit(n) -> n, an uncaught
 * exception -> its traceback and 1). `-` reads the script from standard input (the
 * script's own stdin is then empty unless --stdin names a file). The standard library
 * is mapped read-only; the room's limits hold (CPU at most 1000 ms per run). The
 * driver (options, stdin, --repeat, --time, limits' messages, capabilities) is
 * guest_cli.c's; this file says where CPython's build is and how it is checked.
 */
#include "cli/commands.h"
#include "cli/guest_cli.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define PY_BUILD PERI_PYTHON_CACHED

static const char USAGE[] =
    "usage: peri python [OPTIONS] SCRIPT.py|-\n"
    "Runs a Python script in the room (CPython 3.11 built for WASI).\n"
    "  --python-dir DIR  the build: DIR/python.wasm and DIR/lib/python3.11 (default:\n"
    "                  $PERI_PYTHON_DIR, else the cache of scripts/deps.sh:\n"
    "                  ~/.cache/peri/" PY_BUILD "/, $PERI_CACHE_DIR respected)\n";

/* The default build directory: $PERI_PYTHON_DIR, else the deps.sh cache. */
static const char *default_dir(char *buf, size_t n, const char **why) {
    (void)why;
    const char *env = getenv("PERI_PYTHON_DIR");
    if (env && *env) return env;
    if (!peri_cache_path(PERI_PYTHON_CACHED, buf, n)) snprintf(buf, n, ".cache/peri/" PY_BUILD);
    return buf;
}

static int load(const char *dir, int *lib, char *why, size_t why_len) {
    char path[4200];
    snprintf(path, sizeof path, "%s/python.wasm", dir);
    int fd = peri_open_file(path);
    int e = errno;
    snprintf(path, sizeof path, "%s/lib/python3.11", dir);
    *lib = fd >= 0 ? open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC) : -1;
    if (fd >= 0 && *lib >= 0) return fd;
    snprintf(why, why_len,
             "cannot read CPython's WebAssembly build in %s: %s\n"
             "scripts/deps.sh builds it (scripts/python-wasi.sh); or name a build with "
             "--python-dir DIR or $PERI_PYTHON_DIR.",
             dir, strerror(fd >= 0 ? errno : e));
    if (fd >= 0) close(fd);
    return -1;
}

static bool check(const char *dir, pr_program *p, char *why, size_t why_len) {
    if (pr_python_module(pr_program_module(p))) return true;
    snprintf(why, why_len,
             "%s/python.wasm is not the room's CPython build (it lacks the peri_py_* entry "
             "points of scripts/python-wasi.sh)",
             dir);
    return false;
}

static const peri_guest_cli PYTHON = {
    .name = "python",
    .usage_head = USAGE,
    .stdin_also = "on a terminal or with -",
    .module = "peri",
    .build_opt = "--python-dir",
    .no_script = "the script (SCRIPT.py or -) is missing",
    .flags = PERI_GUEST_SCRIPT_DASH | PERI_GUEST_CAPABILITIES | PERI_GUEST_CONTRACT_TEXT |
             PERI_GUEST_FLUSH_STDOUT,
    .default_build = default_dir,
    .load = load,
    .not_wasm = "%s/python.wasm is not a WebAssembly module",
    .check = check,
};

int peri_cmd_python(int argc, char **argv) {
    return peri_guest_main(&PYTHON, argc, argv);
}
