/*
 * cmd_ruby.c — `peri ruby [OPTIONS] SCRIPT.rb`: runs a Ruby script in the room with
 * Ruby's WebAssembly build (docs/ruby.md), like `ruby SCRIPT.rb`: stdout and stderr
 * stream, the exit status is the script's. --repeat N runs it N times in one process
 * (every run after the first starts from the startup snapshot) and --time prints each
 * run's wall and CPU time on stderr (bench/ruby.sh uses both). The first boot of Ruby
 * takes seconds: when nothing has happened after one second, a progress note goes to
 * stderr. Errors are in English; the room's limits are the contract's (CPU at most
 * 1000 ms per run). The driver is guest_cli.c's; this file says where Ruby's build is.
 */
#include "cli/commands.h"
#include "cli/guest_cli.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static const char USAGE[] =
    "usage: peri ruby [OPTIONS] SCRIPT.rb\n"
    "Runs a Ruby script in the room (Ruby 3.4's WebAssembly build).\n"
    "  --wasm PATH     ruby+stdlib.wasm (default: $PERI_RUBY_WASM, else the cache of\n"
    "                  scripts/deps.sh: $PERI_CACHE_DIR, else ~/.cache/peri, then\n"
    "                  ruby-3.4-wasm-wasi-2.10.1/ruby+stdlib.wasm)\n";

/* The default module: $PERI_RUBY_WASM, else the deps.sh cache. */
static const char *default_wasm(char *buf, size_t n, const char **why) {
    const char *env = getenv("PERI_RUBY_WASM");
    if (env && *env) return env;
    if (peri_cache_path(PERI_RUBY_CACHED, buf, n)) return buf;
    *why = "no Ruby build: set --wasm, PERI_RUBY_WASM or HOME";
    return NULL;
}

static int load(const char *wasm, int *lib, char *why, size_t why_len) {
    *lib = -1;
    int fd = peri_open_file(wasm);
    if (fd < 0)
        snprintf(why, why_len,
                 "cannot read Ruby's WebAssembly build at %s: %s\n"
                 "Fetch it with scripts/deps.sh (@ruby/3.4-wasm-wasi), or name it with --wasm "
                 "PATH or $PERI_RUBY_WASM.",
                 wasm, strerror(errno));
    return fd;
}

static const peri_guest_cli RUBY = {
    .name = "ruby",
    .usage_head = USAGE,
    .stdin_also = "on a terminal",
    .module = "Peri",
    .build_opt = "--wasm",
    .no_script = "the script (SCRIPT.rb) is missing",
    .flags = PERI_GUEST_CAPABILITIES,
    .boot_note = "Ruby",
    .default_build = default_wasm,
    .load = load,
    .not_wasm = "%s is not Ruby's WebAssembly build (ruby+stdlib.wasm)",
};

int peri_cmd_ruby(int argc, char **argv) {
    return peri_guest_main(&RUBY, argc, argv);
}
