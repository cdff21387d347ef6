/*
 * sandbox_int.h — internals of the native sandbox (sandbox.c, cgroup.c, seccomp.c).
 */
#ifndef PERI_PLACE_SANDBOX_INT_H
#define PERI_PLACE_SANDBOX_INT_H

#include "place_int.h"

#include <sys/types.h>

#define PL_CG_PATH 1024

typedef struct pl_cgroup {
    int mode; /* 0 none, 1 v1 (dir[0] memory, dir[1] pids, dir[2] cpuacct), 2 v2 (dir[0]) */
    char dir[3][PL_CG_PATH];
    int ndir;
    int cpu_fd;
} pl_cgroup;

bool pl_cg_create(pl_ctx *pc, const char *name, const pl_limits *lim, pl_cgroup *cg);
size_t pl_cg_procs_paths(const pl_cgroup *cg, char paths[3][PL_CG_PATH + 16]);
uint64_t pl_cg_cpu_ns(pl_cgroup *cg);
bool pl_cg_has_cpu(const pl_cgroup *cg);
void pl_cg_peaks(pl_cgroup *cg, uint64_t *mem_peak, bool *oom);
int pl_cg_signal_all(pl_cgroup *cg, pid_t spare);
bool pl_cg_kill_all(pl_cgroup *cg);
bool pl_cg_empty(pl_cgroup *cg);
bool pl_cg_remove(pl_cgroup *cg);

/* The seccomp program (BPF bytes) for network off (0) or on (1), built once per ctx.
 * Returns a pointer into the ctx (valid for its lifetime) or NULL. */
const unsigned char *pl_seccomp_bpf(pl_ctx *pc, bool network, size_t *len);

#endif
