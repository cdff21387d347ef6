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
 * drops to U and execs bubblewrap: the host's mount table is never changed, nothing is
 * attached under the scratch directory (whose removal must never reach the project),
 * and the mount goes away with the run's last process.
 *
 * The map is carried by a user namespace (pl_idmap_userns): a short-lived helper
 * process unshares one, the caller (root) writes its uid_map and gid_map, opens
 * /proc/<helper>/ns/user, then lets the helper exit; the fd keeps the namespace.
 *
 * setuid/setgid bits cannot be set through it: the seccomp filter refuses those modes.
 */
#include "sandbox_int.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef OPEN_TREE_CLONE
#define OPEN_TREE_CLONE 1
#endif
#ifndef OPEN_TREE_CLOEXEC
#define OPEN_TREE_CLOEXEC O_CLOEXEC
#endif
#ifndef MOVE_MOUNT_F_EMPTY_PATH
#define MOVE_MOUNT_F_EMPTY_PATH 0x00000004
#endif
#ifndef MOUNT_ATTR_IDMAP
#define MOUNT_ATTR_IDMAP 0x00100000
#endif
#ifndef AT_RECURSIVE
#define AT_RECURSIVE 0x8000
#endif

struct pl_mount_attr { /* struct mount_attr of <linux/mount.h> (MOUNT_ATTR_SIZE_VER0) */
    unsigned long long attr_set, attr_clr, propagation, userns_fd;
};

static bool write_map(pid_t pid, const char *file, unsigned from, unsigned to) {
    char p[64], line[64];
    snprintf(p, sizeof p, "/proc/%d/%s", (int)pid, file);
    int n = snprintf(line, sizeof line, "%u %u 1\n", from, to);
    int fd = open(p, O_WRONLY | O_CLOEXEC);
    if (fd < 0) return false;
    bool ok = write(fd, line, (size_t)n) == n;
    return close(fd) == 0 && ok;
}

int pl_idmap_userns(uid_t owner, uid_t to, gid_t owner_gid, gid_t to_gid, char *why,
                    size_t whylen) {
    int go[2], ready[2];
    if (pipe2(go, O_CLOEXEC) != 0) goto fail;
    if (pipe2(ready, O_CLOEXEC) != 0) {
        close(go[0]);
        close(go[1]);
        goto fail;
    }
    pid_t h = fork();
    if (h == 0) { /* async-signal-safe only: unshare, say so, wait for the go pipe's EOF */
        close(go[1]);
        close(ready[0]);
        char c = unshare(CLONE_NEWUSER) == 0 ? 'y' : 'n';
        if (write(ready[1], &c, 1) != 1) _exit(1);
        while (read(go[0], &c, 1) < 0 && errno == EINTR) {
        }
        _exit(0);
    }
    close(go[0]);
    close(ready[1]);
    int fd = -1, saved = 0;
    char c = 0;
    if (h > 0 && read(ready[0], &c, 1) == 1 && c == 'y') {
        /* the map, as the kernel reads it: "inside outside count"; an idmapped mount
         * shows on-disk id `inside` as `outside` */
        char p[64];
        snprintf(p, sizeof p, "/proc/%d/ns/user", (int)h);
        if (write_map(h, "uid_map", (unsigned)owner, (unsigned)to) &&
            write_map(h, "gid_map", (unsigned)owner_gid, (unsigned)to_gid))
            fd = open(p, O_RDONLY | O_CLOEXEC);
        saved = errno;
    } else {
        saved = h < 0 ? errno : EPERM;
    }
    close(go[1]);
    close(ready[0]);
    if (h > 0)
        while (waitpid(h, NULL, 0) < 0 && errno == EINTR) {
        }
    if (fd >= 0) return fd;
    errno = saved;
fail:
    snprintf(why, whylen,
             "cannot prepare the workspace's id mapping (a user namespace for an idmapped "
             "mount): %s",
             strerror(errno));
    return -1;
}

int pl_idmap_apply(int userns_fd, const char *const *paths, size_t n) {
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
        if (syscall(SYS_move_mount, t, "", AT_FDCWD, paths[i], MOVE_MOUNT_F_EMPTY_PATH) != 0) {
            int e = errno;
            close(t);
            return e;
        }
        close(t);
    }
    return 0;
}
