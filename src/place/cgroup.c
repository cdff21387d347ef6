/*
 * cgroup.c — one cgroup leaf per native run: memory and process limits, CPU
 * accounting (for the cpu_ms limit over the whole process tree), peaks, kill-all and
 * removal. cgroup v2 when the unified hierarchy delegates memory and pids to our own
 * cgroup; otherwise the v1 memory, pids and cpuacct controllers (as on the build
 * machines). Leaves are created below the calling process's own cgroup of each
 * hierarchy (read from /proc/self/cgroup), so they nest inside its limits.
 *
 * Invariant: pl__cg_remove is called only after pl__cg_kill_all saw the leaf empty; a
 * leaf that cannot be removed is reported (evidence cgroup_removed: false).
 */
#include "place_int.h"
#include "sandbox_int.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static bool write_str(const char *dir, const char *file, const char *val) {
    char p[2 * PL_CG_PATH];
    if ((size_t)snprintf(p, sizeof p, "%s/%s", dir, file) >= sizeof p) return false;
    int fd = open(p, O_WRONLY | O_CLOEXEC);
    if (fd < 0) return false;
    ssize_t n = write(fd, val, strlen(val));
    close(fd);
    return n == (ssize_t)strlen(val);
}

static bool read_str(const char *dir, const char *file, char *buf, size_t cap) {
    char p[2 * PL_CG_PATH];
    if ((size_t)snprintf(p, sizeof p, "%s/%s", dir, file) >= sizeof p) return false;
    int fd = open(p, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return false;
    ssize_t n = read(fd, buf, cap - 1);
    close(fd);
    if (n < 0) return false;
    buf[n] = 0;
    return true;
}

static uint64_t read_u64(const char *dir, const char *file) {
    char b[64];
    return read_str(dir, file, b, sizeof b) ? strtoull(b, NULL, 10) : 0;
}

/* The calling process's /proc/self/cgroup, read once per leaf (every hierarchy's line
 * is in it): NUL-terminated in buf, false when it cannot be read or does not fit. */
static bool read_own(char *buf, size_t cap) {
    int fd = open("/proc/self/cgroup", O_RDONLY | O_CLOEXEC);
    if (fd < 0) return false;
    size_t n = 0;
    ssize_t k;
    while (n + 1 < cap && (k = read(fd, buf + n, cap - 1 - n)) > 0)
        n += (size_t)k;
    close(fd);
    buf[n] = 0;
    return n > 0 && n + 1 < cap;
}

/* The calling process's path (from own, its /proc/self/cgroup) in the hierarchy whose
 * controller list contains `ctl` ("" for the v2 line "0::"). */
static bool own_path(const char *own, const char *ctl, char *out, size_t cap) {
    size_t cl = strlen(ctl);
    for (const char *line = own; *line;) {
        const char *end = strchr(line, '\n');
        size_t ll = end ? (size_t)(end - line) : strlen(line);
        const char *a = memchr(line, ':', ll),
                   *b = a ? memchr(a + 1, ':', ll - (size_t)(a + 1 - line)) : NULL;
        if (b) {
            /* line..a: the hierarchy id ("0" for v2); a+1..b: its controllers ("" for v2) */
            bool match = false;
            if (!cl)
                match = a - line == 1 && line[0] == '0' && b == a + 1;
            else
                for (const char *t = a + 1; t < b && !match;) {
                    const char *c = memchr(t, ',', (size_t)(b - t));
                    size_t tl = c ? (size_t)(c - t) : (size_t)(b - t);
                    match = tl == cl && !memcmp(t, ctl, cl);
                    t += tl + 1;
                }
            if (match) {
                size_t pl = ll - (size_t)(b + 1 - line);
                bool root = pl == 1 && b[1] == '/';
                if (pl >= cap) return false;
                snprintf(out, cap, "%.*s", root ? 0 : (int)pl, b + 1);
                return true;
            }
        }
        line += ll + (end ? 1 : 0);
    }
    return false;
}

static bool make_leaf(const char *own_cg, const char *root, const char *hier, const char *ctl,
                      const char *name, char *out) {
    char own[512];
    if (!own_path(own_cg, ctl, own, sizeof own)) return false;
    int n = snprintf(out, PL_CG_PATH, "%s%s%s%s/%s", root, *hier ? "/" : "", hier, own, name);
    if (n <= 0 || n >= PL_CG_PATH) return false;
    if (mkdir(out, 0755) != 0) return false;
    return true;
}

bool pl__cg_create(pl_ctx *pc, const char *name, const pl_limits *lim, pl_cgroup *cg) {
    memset(cg, 0, sizeof *cg);
    cg->cpu_fd = -1;
    const char *root = pc->cgroup_root;
    char num[64];
    uint64_t mem = (uint64_t)lim->memory_mib << 20;
    /* v2: our own cgroup must delegate memory and pids. */
    char own[512], p[PL_CG_PATH + 64], ctl[512], own_cg[4096];
    if (!read_own(own_cg, sizeof own_cg)) return false;
    if (own_path(own_cg, "", own, sizeof own)) {
        snprintf(p, sizeof p, "%s%s", root, own);
        if (read_str(p, "cgroup.subtree_control", ctl, sizeof ctl) && strstr(ctl, "memory") &&
            strstr(ctl, "pids") && make_leaf(own_cg, root, "", "", name, cg->dir[0])) {
            cg->mode = 2;
            cg->ndir = 1;
            snprintf(num, sizeof num, "%llu", (unsigned long long)mem);
            bool ok = write_str(cg->dir[0], "memory.max", num);
            (void)write_str(cg->dir[0], "memory.swap.max", "0"); /* absent without swap */
            snprintf(num, sizeof num, "%u", lim->processes + 2);
            ok = ok && write_str(cg->dir[0], "pids.max", num);
            if (!ok) {
                pl__cg_remove(cg);
                cg->mode = 0;
            }
            return cg->mode == 2;
        }
    }
    /* v1: memory + pids required, cpuacct optional. */
    if (!make_leaf(own_cg, root, "memory", "memory", name, cg->dir[0])) return false;
    cg->ndir = 1;
    if (!make_leaf(own_cg, root, "pids", "pids", name, cg->dir[1])) {
        pl__cg_remove(cg);
        return false;
    }
    cg->ndir = 2;
    if (make_leaf(own_cg, root, "cpuacct", "cpuacct", name, cg->dir[2])) cg->ndir = 3;
    cg->mode = 1;
    snprintf(num, sizeof num, "%llu", (unsigned long long)mem);
    bool ok = write_str(cg->dir[0], "memory.limit_in_bytes", num);
    (void)write_str(cg->dir[0], "memory.memsw.limit_in_bytes", num); /* only with swap accounting */
    snprintf(num, sizeof num, "%u", lim->processes + 2);             /* + the two bwrap processes */
    ok = ok && write_str(cg->dir[1], "pids.max", num);
    if (!ok) {
        pl__cg_remove(cg);
        cg->mode = 0;
        return false;
    }
    return true;
}

/* Prepares "cgroup.procs" paths the forked child writes itself into (no allocation
 * after fork). */
size_t pl__cg_procs_paths(const pl_cgroup *cg, char paths[3][PL_CG_PATH + 16]) {
    for (int i = 0; i < cg->ndir; i++)
        snprintf(paths[i], PL_CG_PATH + 16, "%s/cgroup.procs", cg->dir[i]);
    return (size_t)cg->ndir;
}

uint64_t pl__cg_cpu_ns(pl_cgroup *cg) {
    char b[512];
    if (cg->mode == 1 && cg->ndir == 3) {
        if (cg->cpu_fd < 0) {
            char p[PL_CG_PATH + 32];
            snprintf(p, sizeof p, "%s/cpuacct.usage", cg->dir[2]);
            cg->cpu_fd = open(p, O_RDONLY | O_CLOEXEC);
        }
        ssize_t n = cg->cpu_fd >= 0 ? pread(cg->cpu_fd, b, sizeof b - 1, 0) : -1;
        if (n <= 0) return 0;
        b[n] = 0;
        return strtoull(b, NULL, 10);
    }
    if (cg->mode == 2 && read_str(cg->dir[0], "cpu.stat", b, sizeof b)) {
        char *u = strstr(b, "usage_usec ");
        return u ? strtoull(u + 11, NULL, 10) * 1000 : 0;
    }
    return 0;
}

bool pl__cg_has_cpu(const pl_cgroup *cg) {
    return (cg->mode == 1 && cg->ndir == 3) || cg->mode == 2;
}

void pl__cg_peaks(pl_cgroup *cg, uint64_t *mem_peak, bool *oom) {
    *mem_peak = 0;
    *oom = false;
    char b[2048];
    if (cg->mode == 1) {
        *mem_peak = read_u64(cg->dir[0], "memory.max_usage_in_bytes");
        if (read_str(cg->dir[0], "memory.oom_control", b, sizeof b)) {
            char *k = strstr(b, "oom_kill ");
            *oom = k && strtoull(k + 9, NULL, 10) > 0;
        }
        *oom = *oom || read_u64(cg->dir[0], "memory.failcnt") > 0;
    } else if (cg->mode == 2) {
        *mem_peak = read_u64(cg->dir[0], "memory.peak");
        if (read_str(cg->dir[0], "memory.events", b, sizeof b)) {
            char *k = strstr(b, "oom_kill ");
            *oom = k && strtoull(k + 9, NULL, 10) > 0;
        }
    }
}

/* One round: SIGKILL to every process of the leaf except `spare` (0: none spared).
 * Returns how many were signalled, -1 when the leaf cannot be read. */
int pl__cg_signal_all(pl_cgroup *cg, pid_t spare) {
    if (!cg->mode) return -1;
    const char *procs_dir = cg->mode == 1 ? cg->dir[1] : cg->dir[0]; /* pids sees all */
    char b[16384];
    if (!read_str(procs_dir, "cgroup.procs", b, sizeof b)) return -1;
    int n = 0;
    for (char *s = b; *s;) {
        char *e;
        long pid = strtol(s, &e, 10);
        if (e == s) break;
        if (pid > 0 && pid != spare) {
            kill((pid_t)pid, SIGKILL);
            n++;
        }
        s = e;
        while (*s == '\n')
            s++;
    }
    return n;
}

/* SIGKILLs every process of the leaf until it is empty (or ~2 s pass). True if empty. */
bool pl__cg_kill_all(pl_cgroup *cg) {
    if (!cg->mode) return false;
    if (cg->mode == 2) (void)write_str(cg->dir[0], "cgroup.kill", "1");
    for (int round = 0; round < 400; round++) {
        int n = pl__cg_signal_all(cg, 0);
        if (n < 0) return false;
        if (n == 0 && pl__cg_empty(cg)) return true;
        struct timespec ts = {0, 5 * 1000000L};
        nanosleep(&ts, NULL);
    }
    return false;
}

bool pl__cg_empty(pl_cgroup *cg) {
    char b[64];
    const char *d = cg->mode == 1 ? cg->dir[1] : cg->dir[0];
    return cg->mode && read_str(d, "cgroup.procs", b, sizeof b) && !b[0];
}

bool pl__cg_remove(pl_cgroup *cg) {
    if (cg->cpu_fd >= 0) close(cg->cpu_fd);
    cg->cpu_fd = -1;
    bool ok = true;
    for (int i = 0; i < cg->ndir; i++) {
        bool gone = false;
        for (int t = 0; t < 100 && !gone; t++) {
            gone = rmdir(cg->dir[i]) == 0 || errno == ENOENT;
            if (!gone) {
                struct timespec ts = {0, 2 * 1000000L};
                nanosleep(&ts, NULL);
            }
        }
        ok = ok && gone;
    }
    cg->ndir = 0;
    return ok;
}

/* Leaves of dead owners under one parent: their processes (if any survived) are killed,
 * then the leaf is removed. */
static void reclaim_under(const char *parent) {
    DIR *d = opendir(parent);
    for (struct dirent *e; d && (e = readdir(d));) {
        if (!pl__owner_dead(e->d_name, "peri-")) continue;
        char p[PL_CG_PATH + 300];
        if (snprintf(p, sizeof p, "%s/%s", parent, e->d_name) >= (int)sizeof p) continue;
        char procs[PL_CG_PATH + 320];
        snprintf(procs, sizeof procs, "%s/cgroup.procs", p);
        FILE *f = fopen(procs, "re");
        for (long pid; f && fscanf(f, "%ld", &pid) == 1;)
            if (pid > 1) kill((pid_t)pid, SIGKILL);
        if (f) fclose(f);
        for (int t = 0; t < 50 && rmdir(p) != 0 && errno == EBUSY; t++) {
            struct timespec ts = {0, 2 * 1000000L};
            nanosleep(&ts, NULL);
        }
    }
    if (d) closedir(d);
}

void pl__cg_reclaim(pl_ctx *pc) {
    const char *root = pc->cgroup_root;
    char own[512], p[PL_CG_PATH], own_cg[4096];
    static const char *const v1[] = {"memory", "pids", "cpuacct"};
    if (!read_own(own_cg, sizeof own_cg)) return;
    if (own_path(own_cg, "", own, sizeof own)) {
        snprintf(p, sizeof p, "%s%s", root, own);
        reclaim_under(p);
    }
    for (size_t i = 0; i < 3; i++) {
        if (!own_path(own_cg, v1[i], own, sizeof own)) continue;
        snprintf(p, sizeof p, "%s/%s%s", root, v1[i], own);
        reclaim_under(p);
    }
}
