/*
 * locate.c — how `peri` and `peri-agent` find each other.
 *
 * `peri` execs `peri-agent` for the agent commands, and `peri-agent` runs `peri run` as
 * the native WASI runner. In the build tree both sit in build/; installed (make install,
 * the .deb) they are PREFIX/bin/peri and PREFIX/libexec/peri/peri-agent. Each program
 * looks relative to its own real location, never in the working directory, so an
 * installed tree still works after it is moved and a project cannot plant a program
 * that is picked up instead.
 *
 * It also owns where the downloaded guests live (Ruby's wasm and the like): the same
 * cache scripts/deps.sh fills, $PERI_CACHE_DIR, else $XDG_CACHE_HOME/peri, else
 * ~/.cache/peri, so moving the cache moves it for both.
 */
#include "cli/commands.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

bool peri_locate(const char *name, char *out, size_t n) {
    char self[PATH_MAX];
    ssize_t k = readlink("/proc/self/exe", self, sizeof self - 1);
    if (k <= 0) return false;
    self[k] = 0;
    char *slash = strrchr(self, '/');
    if (!slash) return false;
    *slash = 0; /* self is now the program's own directory */
    static const char *const rel[] = {"", "/../libexec/peri", "/../../bin"};
    for (size_t i = 0; i < sizeof rel / sizeof rel[0]; i++) {
        char cand[PATH_MAX + 64], real[PATH_MAX];
        int w = snprintf(cand, sizeof cand, "%s%s/%s", self, rel[i], name);
        if (w < 0 || (size_t)w >= sizeof cand) continue;
        if (access(cand, X_OK) != 0 || !realpath(cand, real)) continue;
        if (strlen(real) + 1 > n) return false;
        memcpy(out, real, strlen(real) + 1);
        return true;
    }
    return false;
}

bool peri_self_peri(char *buf, size_t n) {
    return peri_locate("peri", buf, n);
}

bool peri_cache_path(const char *rel, char *out, size_t n) {
    const char *dir = getenv("PERI_CACHE_DIR"), *xdg = getenv("XDG_CACHE_HOME");
    const char *home = getenv("HOME");
    int w;
    if (dir && *dir)
        w = snprintf(out, n, "%s/%s", dir, rel);
    else if (xdg && *xdg)
        w = snprintf(out, n, "%s/peri/%s", xdg, rel);
    else if (home && *home)
        w = snprintf(out, n, "%s/.cache/peri/%s", home, rel);
    else
        return false;
    return w > 0 && (size_t)w < n;
}
