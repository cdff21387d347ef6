/*
 * idmap.c — a root-owned workspace for a run whose caller is root, without host uid 0.
 *
 * Why: the sandbox must never run as host uid 0 (inside a user namespace a uid-0 tree
 * still writes files as root and may hand root-owned results to local users), yet the
 * agent's shell must be able to edit a project that root owns, and what it writes there
 * must stay owned by root (the workspace's owner), not by a throwaway uid.
 *
 * How: the run gets a fresh unprivileged host uid U (sandbox.c), and its process tree
 * sees the workspace (and the policy's writable dirs that root owns) through an
 * idmapped mount whose map sends on-disk uid 0 to U and the workspace's gid to U's gid:
 * existing files appear as U's own, and files U creates are stored as root's. Any other
 * on-disk owner appears as the overflow uid (nobody), so those files stay read-only.
 * The mount is made in a private mount namespace of the forked child just before it
 * drops to U and execs bubblewrap, on an empty directory of the run's scratch directory
 * (which U can reach even when a parent of the workspace is closed to it), and bubblewrap
 * binds it from there at the workspace's path. The host's mount table is never changed:
 * on the host that directory stays empty, so the scratch directory's removal can never
 * reach the project; the mount goes away with the run's last process.
 *
 * The map is carried by a user namespace (pl__idmap_userns): a short-lived helper
 * process is cloned into a new one (sharing the caller's memory, so that no page
 * tables are copied), the caller (root) writes its uid_map and gid_map, opens
 * /proc/<helper>/ns/user, then lets the helper exit; the fd keeps the namespace.
 *
 * setuid/setgid bits cannot be set through it: the seccomp filter refuses those modes.
 */
#include "sandbox_int.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

static bool write_map(pid_t pid, const char *file, unsigned from, unsigned to) {
    char p[64], line[64];
    snprintf(p, sizeof p, "/proc/%d/%s", (int)pid, file);
    int n = snprintf(line, sizeof line, "%u %u 1\n", from, to);
    int fd = open(p, O_WRONLY | O_CLOEXEC);
    if (fd < 0) return false;
    bool ok = write(fd, line, (size_t)n) == n;
    return close(fd) == 0 && ok;
}

/* The helper: born in a new user namespace, it only waits for its go pipe to close.
 * It shares the caller's memory (CLONE_VM, like posix_spawn's child), so it makes raw
 * system calls only and touches nothing of the caller's state. */
static int helper(void *arg) {
    const int *go = arg; /* the pipe: read end, write end (its own copy: closed here) */
    char c;
    syscall(SYS_close, go[1]);
    while (syscall(SYS_read, go[0], &c, 1) < 0) {
    }
    syscall(SYS_exit, 0);
    return 0;
}

int pl__idmap_userns(uid_t owner, uid_t to, gid_t owner_gid, gid_t to_gid, char *why,
                     size_t whylen) {
    enum { STACK = 64 * 1024 };
    int go[2];
    if (pipe2(go, O_CLOEXEC) != 0) goto fail;
    char *stack = pl__stack_map(STACK);
    if (!stack) {
        int e = errno;
        close(go[0]);
        close(go[1]);
        errno = e;
        goto fail;
    }
    /* a copy of the fd numbers on the helper's own stack page */
    int *arg = (int *)(void *)(stack + STACK - 64);
    arg[0] = go[0];
    arg[1] = go[1];
    /* CLONE_VM: no copy of the caller's page tables (a fork of a large agent costs
     * milliseconds); the helper is born in its user namespace, so no unshare */
    sigset_t all, old; /* no signal handler ever runs on the helper (as posix_spawn) */
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    pid_t h = clone(helper, stack + STACK - 128, CLONE_VM | CLONE_NEWUSER | SIGCHLD, arg);
    int clone_errno = errno;
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    errno = clone_errno;
    int fd = -1, saved = h < 0 ? errno : 0;
    if (h > 0) {
        /* the map, as the kernel reads it: "inside outside count"; an idmapped mount
         * shows on-disk id `inside` as `outside` */
        char p[64];
        snprintf(p, sizeof p, "/proc/%d/ns/user", (int)h);
        if (write_map(h, "uid_map", (unsigned)owner, (unsigned)to) &&
            write_map(h, "gid_map", (unsigned)owner_gid, (unsigned)to_gid))
            fd = open(p, O_RDONLY | O_CLOEXEC);
        saved = errno;
    }
    close(go[1]); /* the helper exits */
    if (h > 0)
        while (waitpid(h, NULL, __WALL) < 0 && errno == EINTR) {
        }
    close(go[0]);
    pl__stack_unmap(stack, STACK);
    if (fd >= 0) return fd;
    errno = saved;
fail:
    snprintf(why, whylen,
             "cannot prepare the workspace's id mapping (a user namespace for an idmapped "
             "mount): %s",
             strerror(errno));
    return -1;
}

int pl__idmap_apply(int userns_fd, const char *const *paths, const char *const *targets, size_t n) {
    if (unshare(CLONE_NEWNS) != 0) return errno;
    if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0) return errno;
    for (size_t i = 0; i < n; i++) {
        struct pl_mount_attr a = {.attr_set = MOUNT_ATTR_IDMAP, .userns_fd = (unsigned)userns_fd};
        /* with its submounts when every one of them can be idmapped, else alone */
        int t = (int)syscall(SYS_open_tree, AT_FDCWD, paths[i],
                             OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_RECURSIVE);
        if (t >= 0 &&
            syscall(SYS_mount_setattr, t, "", AT_EMPTY_PATH | AT_RECURSIVE, &a, sizeof a) != 0) {
            close(t);
            t = (int)syscall(SYS_open_tree, AT_FDCWD, paths[i],
                             OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC);
            if (t >= 0 && syscall(SYS_mount_setattr, t, "", AT_EMPTY_PATH, &a, sizeof a) != 0) {
                int e = errno;
                close(t);
                return e;
            }
        }
        if (t < 0) return errno;
        if (syscall(SYS_move_mount, t, "", AT_FDCWD, targets[i], MOVE_MOUNT_F_EMPTY_PATH) != 0) {
            int e = errno;
            close(t);
            return e;
        }
        close(t);
    }
    return 0;
}

int pl__reach_apply(bool ns_ready, const char *const *src, const char *const *dst, size_t n) {
    if (!ns_ready) {
        if (unshare(CLONE_NEWNS) != 0) return errno;
        if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0) return errno;
    }
    for (size_t i = 0; i < n; i++)
        if (mount(src[i], dst[i], NULL, MS_BIND | MS_REC, NULL) != 0) return errno;
    return 0;
}
