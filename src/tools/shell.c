/*
 * shell.c — the shell tool (unsandboxed runner): /bin/sh -c COMMAND in the workspace,
 * stdout+stderr captured through one pipe (bounded: head and tail kept), with a timeout and
 * the cancel flag polled every POLL_MS.
 *
 * Process tree: the host forks a small REAPER process (leader of a new process group) that
 * makes itself a child subreaper (PR_SET_CHILD_SUBREAPER) and forks the shell. Every
 * descendant of the shell whose parent dies -- a `setsid` daemon, a double fork -- is
 * reparented to the reaper, never to init, so none can escape. The reaper ends the whole
 * subtree (scanning its children in /proc and killing until none is left) when:
 *   - the host asks (SIGTERM: cancel or timeout),
 *   - the host thread that started it dies (PR_SET_PDEATHSIG: agent exit),
 *   - the shell has exited and DRAIN_MS have passed (leftover background jobs).
 * The reaper then exits with the shell's status (re-raising its signal). It only uses
 * system calls between fork and exit (the host is multi-threaded). Sandboxed runs get the
 * same guarantee from their PID namespace.
 */
#include "tools_int.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define POLL_MS  20
#define DRAIN_MS 100 /* after a kill, how long leftover output is still read */

static long long now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Output kept as head + tail: the end of a build log is usually what matters. */
typedef struct capture {
    char *head;
    size_t head_len, head_cap;
    char *tail; /* ring buffer */
    size_t tail_cap, tail_pos, tail_len;
    size_t total;
} capture;

static void cap_add(capture *c, const char *s, size_t n) {
    c->total += n;
    size_t h = c->head_cap - c->head_len;
    if (h > n) h = n;
    memcpy(c->head + c->head_len, s, h);
    c->head_len += h;
    s += h;
    n -= h;
    for (size_t i = 0; i < n; i++) {
        c->tail[c->tail_pos] = s[i];
        c->tail_pos = (c->tail_pos + 1) % c->tail_cap;
        if (c->tail_len < c->tail_cap) c->tail_len++;
    }
}

static void child(const char *cwd, const char *cmd, int wfd) {
    /* only async-signal-safe calls between fork and exec */
    setpgid(0, 0);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL); /* the host may block signals for its own use */
    int devnull = open("/dev/null", O_RDONLY);
    if (devnull >= 0) {
        dup2(devnull, 0);
        close(devnull);
    }
    dup2(wfd, 1);
    dup2(wfd, 2);
    /* no descriptor of the host (database, sockets) leaks into the command */
    if (close_range(3, ~0U, 0) != 0)
        for (int fd = 3; fd < 1024; fd++)
            close(fd);
    if (chdir(cwd) != 0) _exit(126);
    signal(SIGPIPE, SIG_DFL);
    execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
    _exit(127);
}

/* ---------------------------------------------------------------- the reaper
 * Runs in a forked child of a multi-threaded process: system calls only (no malloc, no
 * stdio). */

#define REAPER_TICK_MS 10
#define REAPER_ROUNDS  10000 /* kill rounds before giving up on a fork storm */

/* Parses decimal pids from buf[0..n) and SIGKILLs each; returns how many. */
static int kill_listed(const char *buf, size_t n) {
    int killed = 0;
    long v = -1;
    for (size_t i = 0; i <= n; i++) {
        char c = i < n ? buf[i] : ' ';
        if (c >= '0' && c <= '9') {
            v = (v < 0 ? 0 : v * 10) + (c - '0');
        } else if (v > 0) {
            kill((pid_t)v, SIGKILL);
            killed++;
            v = -1;
        } else {
            v = -1;
        }
    }
    return killed;
}

/* Kills the reaper's current children (listed by /proc/self/task/TID/children); falls back
 * to killing its process group's members when that file is missing. Returns how many it
 * signalled, or -1 if it could not list them. */
static int kill_children(void) {
    char path[64] = "/proc/self/task/";
    size_t k = strlen(path);
    k += pb_utoa(path + k, (unsigned long)syscall(SYS_gettid));
    memcpy(path + k, "/children", 10);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    char buf[4096];
    int total = 0;
    ssize_t n;
    /* the file is read in one go per round; a partial last number is rare and only
     * delays that child to the next round */
    while ((n = read(fd, buf, sizeof buf)) > 0)
        total += kill_listed(buf, (size_t)n);
    close(fd);
    return total;
}

/* Ends every descendant: kill the children, reap them (their own children are then
 * reparented to us), repeat until none is left. */
static void kill_tree(pid_t shell_pgid) {
    kill(-shell_pgid, SIGKILL); /* the shell's process group first: one call */
    for (int round = 0; round < REAPER_ROUNDS; round++) {
        int n = kill_children();
        int st;
        pid_t w;
        bool any = false;
        while ((w = waitpid(-1, &st, __WALL | WNOHANG)) > 0)
            any = true;
        if (w < 0 && errno == ECHILD) return; /* nobody left */
        if (n < 0) kill(-shell_pgid, SIGKILL);
        if (!any) {
            struct timespec ts = {0, 1000000};
            nanosleep(&ts, NULL);
        }
    }
}

static _Noreturn void reaper_exit(int status) {
    if (WIFSIGNALED(status)) {
        int sig = WTERMSIG(status);
        struct rlimit none = {0, 0};
        setrlimit(RLIMIT_CORE, &none);
        struct sigaction sa = {.sa_handler = SIG_DFL};
        sigaction(sig, &sa, NULL);
        sigset_t set;
        sigemptyset(&set);
        sigaddset(&set, sig);
        sigprocmask(SIG_UNBLOCK, &set, NULL);
        kill(getpid(), sig);
        _exit(128 + sig);
    }
    _exit(WIFEXITED(status) ? WEXITSTATUS(status) : 127);
}

static _Noreturn void reaper(const char *cwd, const char *cmd, int rfd, int wfd, pid_t host) {
    /* SIGTERM (from the host, or as the death signal) and SIGCHLD are waited for */
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGCHLD);
    sigprocmask(SIG_BLOCK, &set, NULL);
    /* the host may ignore them (SIGCHLD ignored would auto-reap: no status, no ECHILD
     * bookkeeping); the reaper needs the defaults */
    struct sigaction dfl = {.sa_handler = SIG_DFL};
    sigaction(SIGCHLD, &dfl, NULL);
    sigaction(SIGTERM, &dfl, NULL);
    prctl(PR_SET_CHILD_SUBREAPER, 1);
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (getppid() != host) _exit(126); /* the host thread died already */
    close(rfd);
    /* hold nothing of the host's (ACP stdio, database, sockets): the pipe's write end
     * moves to fd 3 for the shell, everything else goes, stdio becomes /dev/null */
    if (wfd != 3) {
        if (dup2(wfd, 3) < 0) _exit(126);
        wfd = 3;
    }
    if (close_range(4, ~0U, 0) != 0)
        for (int fd = 4; fd < 1024; fd++)
            close(fd);
    int nul = open("/dev/null", O_RDWR);
    if (nul >= 0) {
        dup2(nul, 0);
        dup2(nul, 1);
        dup2(nul, 2);
        if (nul > 3) close(nul);
    }
    pid_t sh = fork();
    if (sh < 0) _exit(126);
    if (sh == 0) {
        prctl(PR_SET_PDEATHSIG, 0);
        child(cwd, cmd, wfd);
    }
    setpgid(sh, sh); /* the shell leads its own group (also set by the child) */
    close(wfd);
    int shell_status = 0;
    bool shell_done = false;
    long long drain_end = 0;
    for (;;) {
        int st;
        pid_t w;
        while ((w = waitpid(-1, &st, __WALL | WNOHANG)) > 0)
            if (w == sh) {
                shell_status = st;
                shell_done = true;
                drain_end = pb_mono_ms() + DRAIN_MS;
            }
        if (shell_done && w < 0 && errno == ECHILD) reaper_exit(shell_status);
        if (shell_done && pb_mono_ms() >= drain_end) {
            kill_tree(sh);
            reaper_exit(shell_status);
        }
        struct timespec tick = {0, REAPER_TICK_MS * 1000000L};
        int sig = sigtimedwait(&set, NULL, &tick);
        if (sig == SIGTERM) {
            /* cancel, timeout or the host thread's death: nothing survives */
            kill_tree(sh);
            reaper_exit(shell_done ? shell_status : SIGKILL); /* 0x9: "killed by SIGKILL" */
        }
    }
}

/* Waits for the reaper after SIGTERM; if it does not end in time (it always should),
 * its whole group is killed. */
static void reap_reaper(pid_t pid, int *status) {
    int64_t end = pb_mono_ms() + 5000;
    while (waitpid(pid, status, WNOHANG) == 0) {
        if (pb_mono_ms() >= end) {
            kill(-pid, SIGKILL);
            waitpid(pid, status, 0);
            return;
        }
        struct timespec ts = {0, 2000000};
        nanosleep(&ts, NULL);
    }
}

ptl_status ptl__shell(pj_t *in, const ptl_ctx *ctx, ptl_result *r) {
    bool bad = false;
    const char *cmd = ptl__str(in, "command", &bad);
    long long timeout = ptl__int(
        in, "timeout_ms", ctx->timeout_ms > 0 ? ctx->timeout_ms : PTL_DEFAULT_TIMEOUT_MS, &bad);
    if (bad || !cmd || !*cmd || timeout < 1)
        return ptl__error(r, "shell: needs \"command\" (string) and optional \"timeout_ms\" "
                             "(integer >= 1)");
    char *root = ptl__root(ctx);
    if (!root) return ptl__error(r, "the workspace directory is not accessible: %s", ctx->cwd);
    size_t limit = ctx->max_output ? ctx->max_output : PTL_DEFAULT_MAX_OUTPUT;
    capture cap = {.head_cap = limit / 2, .tail_cap = limit - limit / 2};
    if (cap.tail_cap == 0) cap.tail_cap = 1;
    cap.head = malloc(cap.head_cap + 1);
    cap.tail = malloc(cap.tail_cap);
    int fds[2] = {-1, -1};
    ptl_status st = PTL_OK;
    if (!cap.head || !cap.tail) {
        st = PTL_ERR_NOMEM;
        goto out;
    }
    if (pipe2(fds, O_CLOEXEC) != 0) {
        st = ptl__error(r, "shell: cannot create a pipe: %s", strerror(errno));
        goto out;
    }
    pid_t host = getpid();
    pid_t pid = fork();
    if (pid < 0) {
        st = ptl__error(r, "shell: cannot fork: %s", strerror(errno));
        goto out;
    }
    if (pid == 0) {
        setpgid(0, 0);
        reaper(root, cmd, fds[0], fds[1], host);
    }
    setpgid(pid, pid); /* also from the parent: no race with an early kill */
    close(fds[1]);
    fds[1] = -1;
    long long start = now_ms(), deadline = start + timeout, drain_until = 0;
    bool killed = false, cancelled = false, timed_out = false, eof = false, exited = false;
    int status = 0;
    char buf[8192];
    while (!eof) {
        long long now = now_ms();
        siginfo_t si = {0};
        /* WNOWAIT: the shell stays a zombie, so its pid (= the group id) cannot be reused
         * before we kill what is left of the group */
        if (!killed && !exited && waitid(P_PID, (id_t)pid, &si, WEXITED | WNOHANG | WNOWAIT) == 0 &&
            si.si_pid == pid) {
            /* the shell is gone; a background child may still hold the pipe open */
            exited = true;
            drain_until = now + DRAIN_MS;
        }
        if (exited) {
            if (now >= drain_until) break;
        } else if (!killed) {
            if (ctx->cancel && atomic_load(ctx->cancel))
                cancelled = true;
            else if (now >= deadline)
                timed_out = true;
            if (cancelled || timed_out) {
                kill(pid, SIGTERM); /* the reaper ends the whole tree */
                killed = true;
                drain_until = now + DRAIN_MS;
            }
        } else if (now >= drain_until) {
            break; /* a process that escaped the group may keep the pipe open: stop reading */
        }
        struct pollfd pfd = {.fd = fds[0], .events = POLLIN};
        int pr = poll(&pfd, 1, POLL_MS);
        if (pr < 0 && errno != EINTR) break;
        if (pr > 0) {
            ssize_t n = read(fds[0], buf, sizeof buf);
            if (n > 0)
                cap_add(&cap, buf, (size_t)n);
            else if (n == 0 || (errno != EINTR && errno != EAGAIN))
                eof = true;
        }
    }
    if (exited) {
        kill(-pid, SIGKILL); /* leftovers of the group die with the command */
        waitpid(pid, &status, 0);
    } else if (!killed) {
        /* output closed: the shell is exiting; if it lingers (daemonised children keep no
         * pipe), the deadline and cancel flag still apply */
        while (waitpid(pid, &status, WNOHANG) == 0) {
            if ((ctx->cancel && atomic_load(ctx->cancel)) || now_ms() >= deadline) {
                cancelled = ctx->cancel && atomic_load(ctx->cancel);
                timed_out = !cancelled;
                kill(pid, SIGTERM);
                killed = true;
                reap_reaper(pid, &status);
                break;
            }
            struct timespec ts = {0, 5000000};
            nanosleep(&ts, NULL);
        }
    } else {
        reap_reaper(pid, &status);
    }
    if (killed) kill(-pid, SIGKILL); /* anything left in the group */
    r->exit_code = WIFEXITED(status)     ? WEXITSTATUS(status)
                   : WIFSIGNALED(status) ? 128 + WTERMSIG(status)
                                         : -1;
    r->timed_out = timed_out;
    ptl__out o;
    ptl__out_init(&o, limit + 256);
    ptl__out_add(&o, cap.head, cap.head_len);
    if (cap.total > cap.head_len + cap.tail_len)
        ptl__out_addf(&o, "\n[... %zu bytes of output omitted ...]\n",
                      cap.total - cap.head_len - cap.tail_len);
    size_t first = (cap.tail_pos + cap.tail_cap - cap.tail_len) % cap.tail_cap;
    for (size_t i = 0; i < cap.tail_len; i++)
        ptl__out_add(&o, &cap.tail[(first + i) % cap.tail_cap], 1);
    if (o.len && o.p[o.len - 1] != '\n') ptl__out_add(&o, "\n", 1);
    if (cancelled)
        ptl__out_addf(&o, "[cancelled]");
    else if (timed_out)
        ptl__out_addf(&o, "[timed out after %lld ms]", timeout);
    else
        ptl__out_addf(&o, "[exit code %d]", r->exit_code);
    r->truncated = cap.total > cap.head_len + cap.tail_len;
    st = ptl__finish(r, &o, cancelled || timed_out || r->exit_code != 0);
    if (st == PTL_OK) st = ptl__text_content(r);
    if (st == PTL_OK && cancelled) st = PTL_CANCELLED;
out:
    if (fds[0] >= 0) close(fds[0]);
    if (fds[1] >= 0) close(fds[1]);
    free(cap.head);
    free(cap.tail);
    free(root);
    return st;
}
