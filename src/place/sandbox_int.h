/*
 * sandbox_int.h — internals of the native sandbox (sandbox.c, cgroup.c, seccomp.c).
 */
#ifndef PERI_PLACE_SANDBOX_INT_H
#define PERI_PLACE_SANDBOX_INT_H

#include "place_int.h"
#include "peri/base.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/types.h>
#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#endif

#define PL_CG_PATH 1024

typedef struct pl_cgroup {
    int mode; /* 0 none, 1 v1 (dir[0] memory, dir[1] pids, dir[2] cpuacct), 2 v2 (dir[0]) */
    char dir[3][PL_CG_PATH];
    int ndir;
    int cpu_fd;
} pl_cgroup;

bool pl__cg_create(pl_ctx *pc, const char *name, const pl_limits *lim, pl_cgroup *cg);
size_t pl__cg_procs_paths(const pl_cgroup *cg, char paths[3][PL_CG_PATH + 16]);
uint64_t pl__cg_cpu_ns(pl_cgroup *cg);
bool pl__cg_has_cpu(const pl_cgroup *cg);
void pl__cg_peaks(pl_cgroup *cg, uint64_t *mem_peak, bool *oom);
int pl__cg_signal_all(pl_cgroup *cg, pid_t spare);
bool pl__cg_kill_all(pl_cgroup *cg);
bool pl__cg_empty(pl_cgroup *cg);
bool pl__cg_remove(pl_cgroup *cg);

/* The seccomp program (BPF bytes) for network off (0) or on (1), built once per ctx.
 * Returns a pointer into the ctx (valid for its lifetime) or NULL. */
const unsigned char *pl__seccomp_bpf(pl_ctx *pc, bool network, size_t *len);

/* Removes a directory tree, fd-relative at any depth and never following a symlink
 * (rmtree.c); true when it is gone. */
bool pl__remove_tree(const char *dir);
/* Reclaims what runs of dead processes left: scratch directories peri-sbx-<pid>-* under
 * the scratch root and cgroup leaves peri-<pid>-* under our own cgroups, only when
 * <pid> is gone (kill(pid, 0) says ESRCH); a live process's are never touched. */
void pl__reclaim_stale(pl_ctx *pc);
/* True when name is "<prefix><pid>-..." and <pid> is not a live process. */
bool pl__owner_dead(const char *name, const char *prefix);
void pl__cg_reclaim(pl_ctx *pc);

/* netns.c: pasta for a network-on sandbox (see the file's header). */
#define PL_NET_DNS "169.254.1.1" /* the guest's resolver, forwarded to the host's */
typedef struct pl_net {
    pid_t pid;    /* pasta (our child) or -1 */
    int pidfd;    /* pasta's pidfd or -1 */
    int ready_fd; /* read end of the FIFO pasta writes its pid to once it is ready */
    int log_fd;   /* pasta's stderr, a file in the scratch directory */
    char log_path[4096];
} pl_net;
void pl__net_init(pl_net *net);
/* The sandbox's PID 1 (host pid) from bubblewrap's --info-fd; 0 on EOF without one, at
 * the deadline (CLOCK_MONOTONIC ms) or when cancel_fd (-1: none) becomes readable. */
pid_t pl__net_read_child_pid(int info_fd, int64_t deadline, int cancel_fd);
/* Starts pasta on the network namespace of `target`, as uid/gid when root, in cg.
 * false with why when it cannot start. */
bool pl__net_start(pl_ctx *pc, pl_net *net, pid_t target, const pl_cgroup *cg, bool root, uid_t uid,
                   gid_t gid, const char *scr, char *why, size_t whylen);
/* 1 ready, 0 deadline or cancel, -1 pasta failed (why says what it reported). */
int pl__net_wait(pl_net *net, int64_t deadline, int cancel_fd, char *why, size_t whylen);
/* Kills and reaps pasta; closes the fds. Idempotent. */
void pl__net_stop(pl_net *net);
/* The sandbox's /etc/resolv.conf. */
const char *pl__net_resolv_conf(void);

/* In a forked child before execve: every signal back to its default action and none
 * blocked. The host may ignore SIGPIPE or block signals for its own use, and both
 * survive exec: a sandboxed `yes | head` must end, pasta must install its handlers.
 * Async-signal-safe. */
static inline void pl__child_signals_default(void) {
    struct sigaction dfl;
    memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    for (int sig = 1; sig < NSIG; sig++)
        if (sig != SIGKILL && sig != SIGSTOP) sigaction(sig, &dfl, NULL);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
}

/* The stack of a child cloned with CLONE_VM (sandbox.c's spawn, idmap.c's helper) is
 * memory of the caller: under AddressSanitizer the shadow of its frames, which never
 * return (the child execs or exits), must not stay poisoned for whatever is mapped there
 * next. Call it before the clone and before the munmap; nothing without ASan. */
static inline void pl__stack_clean(void *p, size_t n) {
#if defined(__SANITIZE_ADDRESS__)
    __asan_unpoison_memory_region(p, n);
#else
    (void)p;
    (void)n;
#endif
}

/* The stack of a child cloned with CLONE_VM: n bytes (a multiple of the page size)
 * above PL_STACK_GUARD bytes of PROT_NONE. The child's frames grow down towards the
 * guard, so overrunning them faults in the child instead of writing into whatever
 * mapping of the caller lies below. Returns the low end of the n usable bytes, or
 * NULL (errno set). */
#define PL_STACK_GUARD ((size_t)64 * 1024)
static inline char *pl__stack_map(size_t n) {
    char *m = pb_guard_map(PL_STACK_GUARD, n, 0, MAP_STACK);
    if (m) pl__stack_clean(m, n);
    return m;
}
/* Gives back what pl__stack_map returned, guard included (after pl__stack_clean). */
static inline void pl__stack_unmap(char *p, size_t n) {
    pl__stack_clean(p, n);
    pb_guard_unmap(p, PL_STACK_GUARD, n, 0);
}

/* The new mount API (open_tree, mount_setattr, move_mount) as idmap.c and masks.c use
 * it, for C libraries whose headers predate it. */
#ifndef OPEN_TREE_CLONE
#define OPEN_TREE_CLONE 1
#endif
#ifndef OPEN_TREE_CLOEXEC
#define OPEN_TREE_CLOEXEC O_CLOEXEC
#endif
#ifndef MOVE_MOUNT_F_EMPTY_PATH
#define MOVE_MOUNT_F_EMPTY_PATH 0x00000004
#endif
#ifndef AT_RECURSIVE
#define AT_RECURSIVE 0x8000
#endif
#ifndef MOUNT_ATTR_RDONLY
#define MOUNT_ATTR_RDONLY 0x00000001
#endif
#ifndef MOUNT_ATTR_NOSUID
#define MOUNT_ATTR_NOSUID 0x00000002
#endif
#ifndef MOUNT_ATTR_NODEV
#define MOUNT_ATTR_NODEV 0x00000004
#endif
#ifndef MOUNT_ATTR_IDMAP
#define MOUNT_ATTR_IDMAP 0x00100000
#endif
struct pl_mount_attr { /* struct mount_attr of <linux/mount.h> (MOUNT_ATTR_SIZE_VER0) */
    unsigned long long attr_set, attr_clr, propagation, userns_fd;
};

/* idmap.c: the workspace of a root caller's run, owned by root, seen through an
 * idmapped mount (see the file's header). */
/* A user namespace fd whose map sends host uid `owner` to `to` and gid `owner_gid` to
 * `to_gid` (for MOUNT_ATTR_IDMAP); -1 with why. */
int pl__idmap_userns(uid_t owner, uid_t to, gid_t owner_gid, gid_t to_gid, char *why,
                     size_t whylen);
/* In the calling (forked, single-threaded, privileged) child: a private mount namespace
 * in which an idmapped clone of each paths[i] is mounted on targets[i] (an empty
 * directory). Async-signal-safe; 0 or the failing errno. */
int pl__idmap_apply(int userns_fd, const char *const *paths, const char *const *targets, size_t n);
/* In the same child, after pl__idmap_apply (ns_ready) or alone: binds each src onto its
 * dst (a mount point in the scratch directory that the run's uid can reach) in the
 * child's private mount namespace, for host paths without an idmapped view whose
 * parents may be closed to the run's uid (the native runner below /root, a user's
 * workspace below a 0700 directory of root's). The host's mount table never changes.
 * 0 or the failing errno. */
int pl__reach_apply(bool ns_ready, const char *const *src, const char *const *dst, size_t n);

/* masks.c: read-only masks over the agent's control files in a read-write workspace
 * (see the file's header). */
#define PL_MASKS_MAX  16
#define PL_MOUNTS_MAX 64 /* masks and protected dirs (protect.c) */
typedef struct pl_masks {
    /* in the scratch directory; the workspace (all owned, freed by pl__masks_release) */
    char *empty_file, *empty_dir, *commondir, *ws;
    int lock_fd;              /* the run's shared lock of ws (masks.c), or -1 */
    char *held[PL_MASKS_MAX]; /* placeholders this run holds (pl__masks_release) */
    size_t nheld;
    struct {
        char *src, *dst;
        bool rw;
    } mnt[PL_MOUNTS_MAX]; /* in mount order: the masks, then the protected dirs */
    size_t nmnt;
} pl_masks;
/* Plans the masks of workspace ws (creating the placeholders of missing control paths),
 * each taken from below src_base (the workspace as the mounting side sees it) and
 * mounted below dst_base; links: they will be mounted by pl__masks_apply, which can mount
 * on a symlink (bubblewrap's binds cannot). False with why when the run must not start
 * (ws is "/", .git is a symlink, a mask cannot be prepared). Call pl__masks_release in
 * every case. */
bool pl__masks_plan(pl_ctx *pc, pl_masks *m, const char *ws, const char *src_base,
                    const char *dst_base, bool links, char *why, size_t whylen);
/* Lists the run's top-level placeholder files in the sandbox's own git excludes file
 * (<home>/.config/git/ignore; home is the scratch directory's /home), so that git status
 * and git add -A inside the sandbox pass over them. false on a file system error. */
bool pl__masks_git_ignore(const pl_masks *m, const char *home, uid_t uid, gid_t gid,
                          bool chown_them);
/* Mounts [from, to) of the plan as bubblewrap arguments (through add(a, arg)): the
 * workspace's after its bind, the writable dirs' protections after theirs. */
void pl__masks_args(const pl_masks *m, size_t from, size_t to, void (*add)(void *, const char *),
                    void *a);
/* In a forked child, in its private mount namespace: mounts the plan (read-only,
 * nosuid, nodev clones). Async-signal-safe; 0 or the failing errno. */
int pl__masks_apply(const pl_masks *m);
/* After the run: drops this run's placeholders (the last holder removes them while
 * they are empty). */
void pl__masks_release(pl_ctx *pc, pl_masks *m);
/* Appends one mount to the plan (copies src and dst); false when the plan is full or
 * out of memory (the run must then be refused: no mount is silently left out). A mount
 * whose dst is already planned read-only, or as rw when rw is asked again, is skipped:
 * a later clone would cover what lies below it. */
bool pl__masks_mount(pl_masks *m, const char *src, const char *dst, bool rw);

/* protect.c: the policy's protected directories (see the file's header) inside one
 * directory the run binds read-write: host is its path (where the sandbox sees it),
 * view where the mounting side takes it from (the idmapped or reach view, or host
 * itself), child whether the child mounts the plan (then on the view) or bubblewrap
 * does (then at host). Appends to m->mnt; false with why when the run must not start
 * (a symlink on the way, the bound dir at or inside a protected one, a mount that
 * cannot be prepared). */
bool pl__protect_plan(pl_masks *m, const pl_policy *pol, const char *host, const char *view,
                      bool child, char *why, size_t whylen);

/* At pl_free: the context's placeholder table. */
void pl__masks_free_refs(pl_ctx *pc);
/* Removes the placeholders a dead process's context recorded in the journal at path
 * (still unchanged, their workspace idle), then the journal (masks.c). */
void pl__masks_reclaim(const char *path);

#endif
