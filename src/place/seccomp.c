/*
 * seccomp.c — the native sandbox's system-call filter, built with libseccomp and
 * exported as BPF for bubblewrap's --seccomp. Default allow; denied with EPERM:
 * ptrace, process_vm_*, mount/umount2/pivot_root/move_mount/open_tree/fsopen/fsmount/
 * fsconfig/fspick, bpf, perf_event_open, keyctl/add_key/request_key, kexec_*,
 * init/finit/delete_module, setns, unshare and clone with CLONE_NEWUSER (clone3 gets
 * ENOSYS so libc falls back to clone, whose flags can be inspected), userfaultfd,
 * open_by_handle_at, swapon/off, reboot, acct, quotactl, syslog, and — with the network
 * off — socket() of any family but AF_UNIX (EAFNOSUPPORT); any mode with the setuid or
 * setgid bit in chmod/fchmod/fchmodat(2), open/openat/creat, mkdir(at), mknod(at) (EPERM;
 * openat2 and io_uring_setup/enter/register ENOSYS: their modes are out of the filter's
 * reach). System calls of a foreign
 * architecture are killed (libseccomp's default for a bad arch).
 *
 * The two programs (network off/on) are built once per context under its mutex.
 */
#include "sandbox_int.h"

#include <errno.h>
#include <sched.h>
#include <seccomp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *const DENY[] = {
    "ptrace",
    "process_vm_readv",
    "process_vm_writev",
    "mount",
    "umount2",
    "pivot_root",
    "move_mount",
    "open_tree",
    "fsopen",
    "fsmount",
    "fsconfig",
    "fspick",
    "mount_setattr",
    "bpf",
    "perf_event_open",
    "keyctl",
    "add_key",
    "request_key",
    "kexec_load",
    "kexec_file_load",
    "init_module",
    "finit_module",
    "delete_module",
    "setns",
    "userfaultfd",
    "open_by_handle_at",
    "swapon",
    "swapoff",
    "reboot",
    "acct",
    "quotactl",
    "syslog",
    "iopl",
    "ioperm",
    "lookup_dcookie",
};

static unsigned char *build(bool network, size_t *len) {
    scmp_filter_ctx f = seccomp_init(SCMP_ACT_ALLOW);
    if (!f) return NULL;
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < sizeof DENY / sizeof DENY[0]; i++) {
        int nr = seccomp_syscall_resolve_name(DENY[i]);
        if (nr == __NR_SCMP_ERROR) continue; /* not on this architecture */
        rc = seccomp_rule_add(f, SCMP_ACT_ERRNO(EPERM), nr, 0);
    }
    if (rc == 0)
        rc = seccomp_rule_add(f, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(unshare), 1,
                              SCMP_A0(SCMP_CMP_MASKED_EQ, CLONE_NEWUSER, CLONE_NEWUSER));
    if (rc == 0)
        rc = seccomp_rule_add(f, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(clone), 1,
                              SCMP_A0(SCMP_CMP_MASKED_EQ, CLONE_NEWUSER, CLONE_NEWUSER));
    if (rc == 0) {
        int nr = seccomp_syscall_resolve_name("clone3");
        if (nr != __NR_SCMP_ERROR) rc = seccomp_rule_add(f, SCMP_ACT_ERRNO(ENOSYS), nr, 0);
    }
    /* No setuid or setgid bit on anything the command leaves behind: a setuid file in the
     * workspace would hand the workspace owner's uid to any local user who runs it. The
     * mode argument of every call that sets or creates a mode is checked; openat2 (whose
     * mode sits in a struct the filter cannot read) reports ENOSYS, and libc falls back. */
    static const struct {
        const char *name;
        unsigned arg;
    } MODES[] = {{"chmod", 1},   {"fchmod", 1}, {"fchmodat", 2}, {"fchmodat2", 2},
                 {"open", 2},    {"openat", 3}, {"creat", 1},    {"mkdir", 1},
                 {"mkdirat", 2}, {"mknod", 1},  {"mknodat", 2}};
    for (size_t i = 0; rc == 0 && i < sizeof MODES / sizeof MODES[0]; i++) {
        int nr = seccomp_syscall_resolve_name(MODES[i].name);
        if (nr == __NR_SCMP_ERROR) continue;
        for (int bit = 0; rc == 0 && bit < 2; bit++) {
            scmp_datum_t m = bit ? S_ISGID : S_ISUID;
            struct scmp_arg_cmp c = {MODES[i].arg, SCMP_CMP_MASKED_EQ, m, m};
            rc = seccomp_rule_add_array(f, SCMP_ACT_ERRNO(EPERM), nr, 1, &c);
        }
    }
    /* io_uring performs opens and mkdirs (with their modes) where no filter sees them:
     * ENOSYS, as on kernels without it, and runtimes fall back to plain system calls */
    static const char *const NOSYS[] = {"openat2", "io_uring_setup", "io_uring_enter",
                                        "io_uring_register"};
    for (size_t i = 0; rc == 0 && i < sizeof NOSYS / sizeof NOSYS[0]; i++) {
        int nr = seccomp_syscall_resolve_name(NOSYS[i]);
        if (nr != __NR_SCMP_ERROR) rc = seccomp_rule_add(f, SCMP_ACT_ERRNO(ENOSYS), nr, 0);
    }
    if (rc == 0 && !network)
        rc = seccomp_rule_add(f, SCMP_ACT_ERRNO(EAFNOSUPPORT), SCMP_SYS(socket), 1,
                              SCMP_A0(SCMP_CMP_NE, AF_UNIX, 0));
    if (rc == 0 && network) /* raw packet sockets need capabilities anyway; be explicit */
        rc = seccomp_rule_add(f, SCMP_ACT_ERRNO(EAFNOSUPPORT), SCMP_SYS(socket), 1,
                              SCMP_A0(SCMP_CMP_EQ, AF_PACKET, 0));
    unsigned char *out = NULL;
    int fd = rc == 0 ? memfd_create("peri-seccomp", MFD_CLOEXEC) : -1;
    if (fd >= 0 && seccomp_export_bpf(f, fd) == 0) {
        off_t n = lseek(fd, 0, SEEK_END);
        if (n > 0 && n < (1 << 20) && (out = malloc((size_t)n)) &&
            pread(fd, out, (size_t)n, 0) == n) {
            *len = (size_t)n;
        } else {
            free(out);
            out = NULL;
        }
    }
    if (fd >= 0) close(fd);
    seccomp_release(f);
    return out;
}

const unsigned char *pl__seccomp_bpf(pl_ctx *pc, bool network, size_t *len) {
    int i = network ? 1 : 0;
    pthread_mutex_lock(&pc->mu);
    if (!pc->bpf[i]) pc->bpf[i] = build(network, &pc->bpf_len[i]);
    const unsigned char *b = pc->bpf[i];
    *len = pc->bpf_len[i];
    pthread_mutex_unlock(&pc->mu);
    return b;
}
