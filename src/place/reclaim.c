/*
 * reclaim.c — what sandbox runs of dead processes left behind.
 *
 * A run removes its scratch directory and cgroup leaf before it returns. A process killed
 * in the middle (kill -9 of the agent) cannot, so every new context looks once for
 * leftovers named after a process that no longer exists: scratch directories
 * `peri-sbx-<pid>-XXXXXX` under its scratch root (with what the guest wrote) and cgroup
 * leaves `peri-<pid>-<seq>` (cgroup.c), and the journals `peri-masks-<pid>-XXXXXX` of
 * the control-file placeholders it made in projects (masks.c). A name whose process is alive, or
 * that cannot be checked, is left alone, so two live agents never reclaim each other's runs.
 */
#include "sandbox_int.h"

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The pid in "<prefix><pid>-...", or 0 when the name is not of that form. */
static pid_t owner_of(const char *name, const char *prefix) {
    size_t n = strlen(prefix);
    if (strncmp(name, prefix, n) != 0) return 0;
    char *end;
    long pid = strtol(name + n, &end, 10);
    if (end == name + n || *end != '-' || pid <= 0 || pid > 0x3FFFFFFF) return 0;
    return (pid_t)pid;
}

bool pl__owner_dead(const char *name, const char *prefix) {
    pid_t pid = owner_of(name, prefix);
    return pid > 0 && pid != getpid() && kill(pid, 0) != 0 && errno == ESRCH;
}

void pl__reclaim_stale(pl_ctx *pc) {
    DIR *d = opendir(pc->scratch_root);
    for (struct dirent *e; d && (e = readdir(d));) {
        bool scratch = pl__owner_dead(e->d_name, "peri-sbx-");
        bool journal = !scratch && pl__owner_dead(e->d_name, "peri-masks-");
        char p[4096];
        if ((!scratch && !journal) ||
            snprintf(p, sizeof p, "%s/%s", pc->scratch_root, e->d_name) >= (int)sizeof p)
            continue;
        if (scratch)
            pl__remove_tree(p);
        else
            pl__masks_reclaim(p); /* the placeholders it left in projects (masks.c) */
    }
    if (d) closedir(d);
    pl__cg_reclaim(pc);
}
