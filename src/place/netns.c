/*
 * netns.c — the network of a network-on sandbox: a network namespace of its own
 * (bubblewrap's --unshare-net), connected to the outside by pasta (Debian package passt,
 * user-mode networking: the guest's TCP/UDP/ICMP flows become ordinary sockets of the
 * pasta process on the host).
 *
 * Why not the host's network namespace: there, sandboxed code reaches every service on
 * the host's loopback (databases, dev servers, agents) and every abstract AF_UNIX socket
 * (X11, D-Bus, ssh/gpg agents), which are per network namespace. In a namespace of its
 * own it sees only its loopback and pasta's tap interface.
 *
 * How: bubblewrap reports the sandbox's PID 1 (--info-fd) and holds the command back
 * (--block-fd). pl__net_start opens that process's network namespace and the user
 * namespace that owns it (NS_GET_USERNS: bubblewrap nests a second user namespace for
 * --disable-userns, so the process's own one is the wrong one), and starts pasta in
 * the foreground on both (inherited fds, --userns/--netns /proc/self/fd/N). pasta
 * writes its pid to a pipe (-P) once the tap interface, addresses and routes are set
 * up: that is the signal to release the command. pasta runs as the sandbox's host uid,
 * in the run's cgroup (its CPU and memory count against the run; the cgroup kill and
 * the stale-leaf reclaim end it with the run), with PDEATHSIG.
 *
 * pasta's options: no port forwarding in either direction (-t/-u none: nothing of the
 * host is forwarded in; -T/-U none: no namespace port reaches the host's loopback),
 * --no-map-gw (the gateway address is NOT the host's loopback), DNS through one mapped
 * address (--dns-forward, PL_NET_DNS) to the host's first resolver, UDP port 53 only.
 *
 * Root callers: /dev/net/tun is often 0600 root, which the run's uid cannot open. The
 * pasta child then gets a private mount namespace with its own device node for tun,
 * owned by the run's uid, before it drops to that uid; the host's /dev is not changed.
 *
 * Invariants: pasta is our child until pl__net_stop has killed and reaped it; nothing
 * is mounted where the host can see it.
 */
#include "sandbox_int.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <linux/nsfs.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static int64_t mono_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

void pl__net_init(pl_net *net) {
    memset(net, 0, sizeof *net);
    net->pid = -1;
    net->ready_fd = -1;
    net->log_fd = -1;
    net->pidfd = -1;
}

/* Reads bubblewrap's --info-fd JSON ({"child-pid": N, ...}) until EOF or deadline. */
pid_t pl__net_read_child_pid(int info_fd, int64_t deadline, int cancel_fd) {
    char buf[1024];
    size_t n = 0;
    for (;;) {
        int64_t left = deadline - mono_ms();
        if (left <= 0) return 0;
        struct pollfd p[2] = {{info_fd, POLLIN, 0}, {cancel_fd, POLLIN, 0}};
        int pr = poll(p, cancel_fd >= 0 ? 2 : 1, (int)(left > 1000 ? 1000 : left));
        if (pr < 0 && errno != EINTR) return 0;
        if (pr <= 0) continue;
        if (cancel_fd >= 0 && p[1].revents) return 0;
        if (!p[0].revents) continue;
        ssize_t k = read(info_fd, buf + n, sizeof buf - 1 - n);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) break;
        n += (size_t)k;
        buf[n] = 0;
        if (n == sizeof buf - 1 || strchr(buf, '}')) break; /* the whole object */
    }
    buf[n] = 0;
    const char *k = strstr(buf, "\"child-pid\"");
    if (!k) return 0;
    k = strchr(k, ':');
    long v = k ? strtol(k + 1, NULL, 10) : 0;
    return v > 0 && v < 0x40000000 ? (pid_t)v : 0;
}

static void child_fail(int log_fd, const char *what) { /* async-signal-safe */
    if (log_fd >= 0) {
        ssize_t w = write(log_fd, what, strlen(what));
        (void)w;
    }
    _exit(126);
}

bool pl__net_start(pl_ctx *pc, pl_net *net, pid_t target, const pl_cgroup *cg, bool root, uid_t uid,
                   gid_t gid, const char *scr, char *why, size_t whylen) {
    char p[PATH_MAX];
    snprintf(p, sizeof p, "/proc/%d/ns/net", (int)target);
    int nfd = open(p, O_RDONLY | O_CLOEXEC);
    int ufd = nfd >= 0 ? ioctl(nfd, NS_GET_USERNS) : -1;
    if (ufd >= 0) fcntl(ufd, F_SETFD, FD_CLOEXEC);
    /* the ready signal: a FIFO of the run's uid that pasta opens by name as its pid file */
    char fifo[PATH_MAX];
    snprintf(fifo, sizeof fifo, "%s/pasta.ready", scr);
    snprintf(net->log_path, sizeof net->log_path, "%s/pasta.log", scr);
    net->log_fd = open(net->log_path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (nfd < 0 || ufd < 0 || net->log_fd < 0 || mkfifo(fifo, 0600) != 0 ||
        (root && chown(fifo, uid, gid) != 0) ||
        (net->ready_fd = open(fifo, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOFOLLOW)) < 0) {
        snprintf(why, whylen, "network: cannot reach the sandbox's network namespace: %s",
                 strerror(errno));
        if (net->ready_fd >= 0) close(net->ready_fd);
        net->ready_fd = -1;
        if (nfd >= 0) close(nfd);
        if (ufd >= 0) close(ufd);
        return false;
    }
    char procs[3][PL_CG_PATH + 16];
    size_t nprocs = pl__cg_procs_paths(cg, procs);
    /* a root caller's run uid may not open the host's tun device (often 0600 root) */
    struct stat ts;
    bool tun_node = root && !(stat("/dev/net/tun", &ts) == 0 && (ts.st_mode & 0006) == 0006);
    const char *argv[] = {pc->pasta,
                          "--quiet",
                          "--foreground",
                          "--config-net",
                          "--tcp-ports",
                          "none",
                          "--udp-ports",
                          "none",
                          "--tcp-ns",
                          "none",
                          "--udp-ns",
                          "none",
                          "--no-map-gw",
                          "--dns-forward",
                          PL_NET_DNS,
                          "--no-netns-quit",
                          "--pid",
                          fifo,
                          "--userns",
                          "/proc/self/fd/3",
                          "--netns",
                          "/proc/self/fd/4",
                          NULL};
    static const char *const envp[] = {"PATH=/usr/local/bin:/usr/bin:/bin", "LANG=C.UTF-8", NULL};
    pid_t pid = fork();
    if (pid == 0) {
        /* child: async-signal-safe calls only */
        pl__child_signals_default();
        char num[24], t[24];
        int nd = 0, nn = 0;
        for (unsigned long v = (unsigned long)getpid(); v || !nd; v /= 10)
            t[nd++] = (char)('0' + v % 10);
        while (nd)
            num[nn++] = t[--nd];
        num[nn] = 0;
        for (size_t i = 0; i < nprocs; i++) {
            int fd = open(procs[i], O_WRONLY | O_CLOEXEC);
            if (fd < 0 || write(fd, num, strlen(num)) < 0) child_fail(net->log_fd, "cgroup\n");
            close(fd);
        }
        int devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
        int u = fcntl(ufd, F_DUPFD, 10), ne = fcntl(nfd, F_DUPFD, 10),
            l = fcntl(net->log_fd, F_DUPFD, 10);
        if (devnull < 0 || u < 0 || ne < 0 || l < 0 || dup2(devnull, 0) < 0 ||
            dup2(devnull, 1) < 0 || dup2(l, 2) < 0 || dup2(u, 3) < 0 || dup2(ne, 4) < 0)
            child_fail(net->log_fd, "fds\n");
        syscall(SYS_close_range, 5, ~0u, 0);
        if (tun_node) {
            /* a tun node of the run's uid in a mount namespace of pasta's own */
            if (unshare(CLONE_NEWNS) != 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) ||
                mount("tmpfs", "/dev/net", "tmpfs", MS_NOSUID | MS_NOEXEC, "mode=0755,size=16k") ||
                mknod("/dev/net/tun", S_IFCHR | 0600, makedev(10, 200)) ||
                chown("/dev/net/tun", uid, gid))
                child_fail(2, "pasta: cannot prepare /dev/net/tun\n");
        }
        if (root) {
            if (setgroups(0, NULL) != 0 || setresgid(gid, gid, gid) != 0 ||
                setresuid(uid, uid, uid) != 0)
                child_fail(2, "pasta: cannot switch to the run's uid\n");
        }
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() == 1) _exit(126);
        setpgid(0, 0);
        execve(argv[0], (char *const *)argv, (char *const *)envp);
        child_fail(2, "pasta: cannot execute it\n");
    }
    close(nfd);
    close(ufd);
    if (pid < 0) {
        snprintf(why, whylen, "network: fork: %s", strerror(errno));
        return false;
    }
    net->pid = pid;
    net->pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
    return true;
}

/* The first lines of pasta's log that say something (not its syslog complaints). */
static void log_text(pl_net *net, char *out, size_t cap) {
    char buf[2048];
    ssize_t k = net->log_fd >= 0 ? pread(net->log_fd, buf, sizeof buf - 1, 0) : -1;
    out[0] = 0;
    if (k <= 0) return;
    buf[k] = 0;
    size_t o = 0;
    char *save = NULL;
    for (char *line = strtok_r(buf, "\n", &save); line && o + 2 < cap;
         line = strtok_r(NULL, "\n", &save)) {
        if (!strncmp(line, "Failed to send", 14) || !*line) continue;
        int w = snprintf(out + o, cap - o, "%s%s", o ? "; " : "", line);
        if (w < 0) break;
        o += (size_t)w;
    }
    for (char *c = out; *c; c++)
        if ((unsigned char)*c < 0x20) *c = ' ';
}

int pl__net_wait(pl_net *net, int64_t deadline, int cancel_fd, char *why, size_t whylen) {
    for (;;) {
        int64_t left = deadline - mono_ms();
        if (left <= 0) return 0;
        struct pollfd p[3] = {
            {net->ready_fd, POLLIN, 0}, {net->pidfd, POLLIN, 0}, {cancel_fd, POLLIN, 0}};
        int pr = poll(p, cancel_fd >= 0 ? 3 : 2, (int)(left > 20 ? 20 : left));
        if (pr < 0 && errno != EINTR) return 0;
        if (cancel_fd >= 0 && p[2].revents) return 0;
        char b[32];
        if (read(net->ready_fd, b, sizeof b) > 0) return 1; /* pasta wrote its pid: ready */
        int st = 0;
        pid_t w = waitpid(net->pid, &st, WNOHANG);
        if (w == 0 || (w < 0 && errno == EINTR)) continue;
        /* pasta ended before it was ready */
        net->pid = -1;
        char log[300];
        log_text(net, log, sizeof log);
        snprintf(why, whylen,
                 "network: pasta could not connect the sandbox's network namespace (%s %d)%s%s",
                 WIFSIGNALED(st) ? "signal" : "exit",
                 WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st), log[0] ? ": " : "", log);
        if (strstr(log, "tun")) {
            size_t o = strlen(why);
            snprintf(why + o, whylen - o,
                     " (/dev/net/tun must be readable and writable by the user the agent "
                     "runs as)");
        }
        return -1;
    }
}

void pl__net_stop(pl_net *net) {
    if (net->pid > 0) {
        kill(net->pid, SIGKILL);
        waitpid(net->pid, NULL, 0);
        net->pid = -1;
    }
    int fds[] = {net->ready_fd, net->log_fd, net->pidfd};
    for (size_t i = 0; i < 3; i++)
        if (fds[i] >= 0) close(fds[i]);
    net->ready_fd = net->log_fd = net->pidfd = -1;
}

const char *pl__net_resolv_conf(void) {
    return "nameserver " PL_NET_DNS "\n";
}
