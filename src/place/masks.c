/*
 * masks.c — the agent's control files inside a workspace that the native sandbox binds
 * read-write: which they are, and the read-only masks that keep sandboxed code from
 * writing them whether or not they exist when the run starts.
 *
 * Why: the workspace holds files the host later acts on. `.peri/` names MCP servers and
 * allow rules (honoured only once trusted, see docs/security.md, but never the sandbox's
 * to write); the guides are the model's instructions; `.git/config` and `.git/hooks/`
 * run code on the user's next git command (core.fsmonitor, core.hooksPath, hooks).
 *
 * How (bubblewrap, after the read-write workspace bind):
 *   - an existing control directory is bound onto itself (a mount point can be neither
 *     renamed nor removed), read-only for `.peri` and `.git/hooks` / `.git/modules` /
 *     `.git/worktrees`, read-write for `.git` itself (so commits still work) with its
 *     `config` read-only on top;
 *   - an existing control file is bound read-only onto itself;
 *   - a missing one is covered by an empty read-only file or directory from the scratch
 *     directory; bubblewrap creates the mount point, which pl__masks_cleanup removes after
 *     the run when it is still empty;
 *   - a control path that is a symlink cannot carry a mount: for `.git` the run is
 *     refused (git follows it); for the rest the host never reads through a symlink.
 *
 * Invariants: only paths directly named here are touched; cleanup removes only mount
 * points this run created and only while they are empty.
 */
#include "sandbox_int.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *const top_files[] = {".mcp.json", "AGENTS.md", "PERI.md", "CLAUDE.md"};

bool pl_is_control_path(const char *rel) {
    if (!rel) return false;
    while (rel[0] == '.' && rel[1] == '/')
        rel += 2;
    size_t n = strcspn(rel, "/");
    if ((n == 5 && !strncmp(rel, ".peri", 5)) || (n == 4 && !strncmp(rel, ".git", 4))) return true;
    for (size_t i = 0; i < sizeof top_files / sizeof *top_files; i++)
        if (strlen(top_files[i]) == n && !strncmp(rel, top_files[i], n) && rel[n] == '\0')
            return true;
    return false;
}

/* Adds one mask. kind: 'f' file, 'd' dir; rw: bind an existing dir read-write onto itself.
 * Returns false (with why) when the run must not go on. */
static bool mask(pl_masks *m, void (*add)(void *, const char *), void *a, const char *ws,
                 const char *ws_src, const char *rel, char kind, bool rw, char *why,
                 size_t whylen) {
    char p[PATH_MAX], src[PATH_MAX];
    if (snprintf(p, sizeof p, "%s/%s", ws, rel) >= (int)sizeof p ||
        snprintf(src, sizeof src, "%s/%s", ws_src, rel) >= (int)sizeof src)
        return true;
    struct stat st;
    if (lstat(p, &st) == 0) {
        if (S_ISLNK(st.st_mode)) return true; /* the host never reads through it */
        add(a, rw ? "--bind" : "--ro-bind");
        add(a, src);
        add(a, p);
        return true;
    }
    if (errno != ENOENT) {
        snprintf(why, whylen, "cannot protect %s: %s", p, strerror(errno));
        return false;
    }
    if (m->ncreated >= PL_MASKS_MAX) return true;
    add(a, "--ro-bind");
    add(a, kind == 'd' ? m->empty_dir : m->empty_file);
    add(a, p);
    m->created[m->ncreated].kind = kind;
    snprintf(m->created[m->ncreated].path, sizeof m->created[m->ncreated].path, "%s", p);
    m->ncreated++;
    return true;
}

bool pl__masks_add(pl_masks *m, const char *scratch, const char *ws, const char *ws_src,
                  void (*add)(void *, const char *), void *a, char *why, size_t whylen) {
    memset(m, 0, sizeof *m);
    snprintf(m->empty_file, sizeof m->empty_file, "%s/mask-file", scratch);
    snprintf(m->empty_dir, sizeof m->empty_dir, "%s/mask-dir", scratch);
    FILE *f = fopen(m->empty_file, "wx");
    if (!f || fclose(f) != 0 || chmod(m->empty_file, 0444) != 0 || mkdir(m->empty_dir, 0555) != 0) {
        snprintf(why, whylen, "cannot prepare the control-file masks: %s", strerror(errno));
        return false;
    }
    if (!strcmp(ws, "/")) {
        snprintf(why, whylen, "refusing to bind \"/\" as a workspace");
        return false;
    }
    char git[PATH_MAX];
    snprintf(git, sizeof git, "%s/.git", ws);
    struct stat st;
    bool ok = mask(m, add, a, ws, ws_src, ".peri", 'd', false, why, whylen);
    for (size_t i = 0; ok && i < sizeof top_files / sizeof *top_files; i++)
        ok = mask(m, add, a, ws, ws_src, top_files[i], 'f', false, why, whylen);
    if (!ok) return false;
    if (lstat(git, &st) != 0) return mask(m, add, a, ws, ws_src, ".git", 'd', false, why, whylen);
    if (S_ISLNK(st.st_mode)) {
        snprintf(why, whylen,
                 "%s is a symlink: git would follow it, and the sandbox cannot protect its "
                 "hooks and config; replace it with the directory or a gitdir file",
                 git);
        return false;
    }
    if (!S_ISDIR(st.st_mode)) /* a gitdir file (worktree, submodule): read-only */
        return mask(m, add, a, ws, ws_src, ".git", 'f', false, why, whylen);
    ok = mask(m, add, a, ws, ws_src, ".git", 'd', true, why, whylen) &&
         mask(m, add, a, ws, ws_src, ".git/config", 'f', false, why, whylen) &&
         mask(m, add, a, ws, ws_src, ".git/hooks", 'd', false, why, whylen);
    /* .git/modules, .git/worktrees and .git/config.worktree when they exist */
    static const char *const extra[] = {".git/modules", ".git/worktrees", ".git/config.worktree"};
    for (size_t i = 0; ok && i < sizeof extra / sizeof *extra; i++) {
        char p[PATH_MAX], src[PATH_MAX];
        if (snprintf(p, sizeof p, "%s/%s", ws, extra[i]) >= (int)sizeof p ||
            snprintf(src, sizeof src, "%s/%s", ws_src, extra[i]) >= (int)sizeof src)
            continue;
        bool want_dir = i < 2;
        if (lstat(p, &st) == 0 && (want_dir ? S_ISDIR(st.st_mode) : S_ISREG(st.st_mode))) {
            add(a, "--ro-bind");
            add(a, src);
            add(a, p);
        }
    }
    return ok;
}

void pl__masks_cleanup(const pl_masks *m) {
    /* deepest first: .git/config before .git */
    for (size_t i = m->ncreated; i-- > 0;) {
        const char *p = m->created[i].path;
        struct stat st;
        if (lstat(p, &st) != 0) continue;
        if (m->created[i].kind == 'd' && S_ISDIR(st.st_mode))
            rmdir(p); /* fails, as it should, when not empty */
        else if (m->created[i].kind == 'f' && S_ISREG(st.st_mode) && st.st_size == 0)
            unlink(p);
    }
}
