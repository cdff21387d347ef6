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

static void usage(FILE *f) {
    fprintf(f,
            "usage: peri ruby [OPTIONS] SCRIPT.rb\n"
            "Runs a Ruby script in the room (Ruby 3.4's WebAssembly build).\n"
            "  --wasm PATH     ruby+stdlib.wasm (default: $PERI_RUBY_WASM, else the cache of\n"
            "                  scripts/deps.sh: $PERI_CACHE_DIR, else ~/.cache/peri, then\n"
            "                  ruby-3.4-wasm-wasi-2.10.1/ruby+stdlib.wasm)\n"
            "  --stdin FILE    the script's standard input (default: this command's stdin\n"
            "                  when it is a pipe or a file; empty on a terminal)\n"
            "  --file GUEST=HOST  put host file HOST at GUEST in the room (e.g. /请求/in.txt)\n"
            "  --cpu-ms N      CPU limit per run (default 1000, at most 1000)\n"
            "  --repeat N      run N times in one process (later runs start from the snapshot)\n"
            "  --time          print each run's wall and CPU time on stderr\n"
            "  --lease DIR     lease host directory DIR to the script's capability calls\n"
            "                  (Peri.read_text(path), read-only unless --lease-write)\n"
            "  --lease-write   the lease also allows Peri.write_text(path, text)\n"
            "  --allow-network the network policy allows Peri.fetch(url) (default: refused):\n"
            "                  http/https GET, no redirects, not this machine's addresses\n"
            "  --evidence      print each capability dispatch (what, when, committed) on stderr\n"
            "  --engine E      execution tier: auto (default; $PERI_ENGINE if set), interp\n"
            "                  or jit (docs/jit.md)\n"
            "Exit status: the script's; 1 when it cannot run (missing files, limits);\n"
            "2 for a usage error.\n");
}

/* The default module: $PERI_RUBY_WASM, else the deps.sh cache. */
static const char *default_wasm(char *buf, size_t n, const char **why) {
    const char *env = getenv("PERI_RUBY_WASM");
    if (env && *env) return env;
    if (peri_cache_path(PERI_RUBY_CACHED, buf, n)) return buf;
    *why = "no Ruby build: set --wasm, PERI_RUBY_WASM or HOME";
    return NULL;
}

static unsigned char *load(const char *wasm, size_t *len, int *lib, char *why, size_t why_len) {
    *lib = -1;
    unsigned char *mod = (unsigned char *)peri_read_file(wasm, false, len);
    if (!mod)
        snprintf(why, why_len,
                 "cannot read Ruby's WebAssembly build at %s: %s\n"
                 "Fetch it with scripts/deps.sh (@ruby/3.4-wasm-wasi), or name it with --wasm "
                 "PATH or $PERI_RUBY_WASM.",
                 wasm, strerror(errno));
    return mod;
}

static const peri_guest_cli RUBY = {
    .name = "ruby",
    .usage = usage,
    .build_opt = "--wasm",
    .no_script = "the script (SCRIPT.rb) is missing",
    .capabilities = true,
    .boot_note = "Ruby",
    .default_build = default_wasm,
    .load = load,
    .not_wasm = "%s is not Ruby's WebAssembly build (ruby+stdlib.wasm)",
    .module_name = "ruby",
};

int peri_cmd_ruby(int argc, char **argv) {
    return peri_guest_main(&RUBY, argc, argv);
}
