/*
 * cmd_compile.c — `peri compile MODULE.wasm -o FILE`: translates a whole module to
 * machine code ahead of time and writes the artifact (docs/jit.md, "Compiled-code
 * cache") that `peri run --compiled FILE` maps instead of translating.
 */
#include "cli/commands.h"
#include "peri/base.h"
#include "peri/wasm.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char USAGE[] =
    "usage: peri compile [OPTIONS] MODULE.wasm -o FILE|--into-cache\n"
    "Translates every function of MODULE to x86-64 machine code and writes it to FILE,\n"
    "bound to this module, this build of peri and this CPU's features; `peri run\n"
    "--compiled FILE MODULE.wasm` then runs it without translating. (peri run, ruby and\n"
    "python also keep such translations in a cache by themselves: see --code-cache.)\n"
    "\n"
    "  -o FILE                 the artifact to write\n"
    "  --into-cache            put it in the code cache instead, where peri run, ruby,\n"
    "                          python and isolate find it (e.g. after installing a module)\n"
    "  --code-cache DIR        that cache (default: $PERI_CODE_CACHE, else\n"
    "                          ~/.cache/peri/code)\n"
    "  --bounds-checks MODE    guard (default: what peri run uses) or explicit\n"
    "  --sse2                  SIMD with plain SSE2 only (runs on any x86-64 CPU)\n"
    "  -h, --help              this text\n";

static int write_file(const char *path, const uint8_t *p, size_t n) {
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) return -1;
    while (n) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) {
            close(fd);
            return -1;
        }
        p += w;
        n -= (size_t)w;
    }
    return close(fd);
}

int peri_cmd_compile(int argc, char **argv) {
    const char *in = NULL, *out = NULL, *cache = NULL;
    char ccdir[4096];
    int bounds = PW_BOUNDS_GUARD;
    bool sse2 = false, into = false;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            fputs(USAGE, stdout);
            return 0;
        } else if (!strcmp(a, "-o") && i + 1 < argc) {
            out = argv[++i];
        } else if (!strcmp(a, "--bounds-checks") && i + 1 < argc) {
            bounds = peri_bounds_parse(argv[++i]);
            if (bounds < 0) {
                fprintf(stderr,
                        "peri compile: --bounds-checks wants guard or explicit, got \"%s\"\n",
                        argv[i]);
                return 2;
            }
        } else if (!strcmp(a, "--sse2")) {
            sse2 = true;
        } else if (!strcmp(a, "--into-cache")) {
            into = true;
        } else if (!strcmp(a, "--code-cache") && i + 1 < argc) {
            cache = argv[++i];
        } else if (a[0] == '-' && a[1]) {
            fprintf(stderr, "peri compile: unknown option %s\n%s", a, USAGE);
            return 2;
        } else if (!in) {
            in = a;
        } else {
            fprintf(stderr, "peri compile: one module at a time\n%s", USAGE);
            return 2;
        }
    }
    if (!in || !out == !into) {
        fprintf(stderr, "peri compile: %s\n%s",
                !in ? "no module given" : "give one of -o FILE and --into-cache", USAGE);
        return 2;
    }
    if (into && !cache && !(cache = peri_code_cache_dir(ccdir, sizeof ccdir))) {
        fprintf(stderr, "peri compile: no code cache (PERI_CODE_CACHE is off, or no HOME)\n");
        return 1;
    }
    size_t len = 0;
    uint8_t *bytes = (uint8_t *)peri_read_file(in, false, &len);
    if (!bytes) {
        fprintf(stderr, "peri compile: cannot read %s: %s\n", in, strerror(errno));
        return 1;
    }
    pw_error pe = {0};
    pw_module *m = pw_module_new(bytes, len, NULL, &pe);
    uint8_t digest[32];
    pb_sha256(bytes, len, digest);
    free(bytes);
    if (!m) {
        fprintf(stderr, "peri compile: %s: %s\n", in, pe.message);
        return 1;
    }
    uint8_t *art = NULL;
    size_t alen = 0;
    pw_code_err ce;
    int rc = 1;
    pw_code_cache_config cc = {.dir = cache};
    if (into) {
        if (sse2) fprintf(stderr, "peri compile: --sse2 is ignored with --into-cache\n");
        if (pw_code_cache_fill(m, digest, &cc, bounds, &ce) != PW_CODE_OK)
            fprintf(stderr, "peri compile: %s: %s (%s)\n", in, ce.message,
                    pw_code_error_name(ce.kind));
        else
            rc = 0;
    } else if (pw_code_compile(m, digest, bounds, sse2, &art, &alen, &ce) != PW_CODE_OK)
        fprintf(stderr, "peri compile: %s: %s (%s)\n", in, ce.message, pw_code_error_name(ce.kind));
    else if (write_file(out, art, alen) != 0)
        fprintf(stderr, "peri compile: cannot write %s: %s\n", out, strerror(errno));
    else
        rc = 0;
    free(art);
    pw_module_free(m);
    return rc;
}
