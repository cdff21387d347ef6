/*
 * shell.c — the shell tool: /bin/sh -c COMMAND in the workspace, as the leader of its own
 * process group, stdout+stderr captured through one pipe (bounded: head and tail kept),
 * with a timeout and the cancel flag polled every POLL_MS; on either the whole group is
 * killed, so grandchildren die too.
 */
#include "tools_int.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

ptl_status ptl__shell(json_t *in, const ptl_ctx *ctx, ptl_result *r) {
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
    pid_t pid = fork();
    if (pid < 0) {
        st = ptl__error(r, "shell: cannot fork: %s", strerror(errno));
        goto out;
    }
    if (pid == 0) child(root, cmd, fds[1]);
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
                kill(-pid, SIGKILL);
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
                kill(-pid, SIGKILL);
                killed = true;
                waitpid(pid, &status, 0);
                break;
            }
            struct timespec ts = {0, 5000000};
            nanosleep(&ts, NULL);
        }
    } else {
        waitpid(pid, &status, 0);
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
