/*
 * fdlink.c — MCP over a pair of file descriptors: a spawned stdio server or the
 * in-process workspace server on a socketpair.
 *
 * Invariants (stdio): the server runs in a new process group led by a guardian
 * process (see guardian()) that kills the whole group when the agent closes the link or
 * dies, even by kill -9; the server itself also has PR_SET_PDEATHSIG=SIGKILL. close()
 * closes the server's stdin, gives it 1 s to exit, then releases the guardian (SIGTERM
 * to the group, SIGKILL 1 s later) and reaps it. No fd of the agent leaks into the
 * server except its three pipes. Its stderr is logged line by line, prefixed
 * "peri mcp[<name>]: ".
 */
#include "mcp/mcp_int.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/close_range.h>
#include <stdatomic.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

typedef struct fdlink {
    pmcp__link base;
    pmcp__link_cb cb;
    int in_fd;   /* we read frames here */
    int out_fd;  /* we write frames here */
    int err_fd;  /* child's stderr, -1 if none */
    pid_t pid;   /* the guardian (group leader), 0 if none */
    int life_fd; /* write end of the guardian's life pipe, -1 if none */
    atomic_bool reader_done;
    char name[64];
    pthread_mutex_t wmu;
    pthread_t reader, errlog, server;
    bool has_reader, has_errlog, has_server;
    int server_fd;           /* inproc: the server's end */
    char *root;              /* inproc */
    const ptl_ctx *tool_ctx; /* inproc: borrowed (the session's) */
    bool acp_meta;           /* inproc */
} fdlink;

static int fd_send(pmcp__link *l, const char *text, size_t len) {
    fdlink *f = (fdlink *)l;
    pthread_mutex_lock(&f->wmu);
    int rc = f->out_fd < 0 ? -1 : pb_write_all(f->out_fd, text, len);
    if (rc == 0) rc = pb_write_all(f->out_fd, "\n", 1);
    pthread_mutex_unlock(&f->wmu);
    return rc;
}

static void *reader_main(void *arg) {
    fdlink *f = arg;
    pmcp__lines r;
    pmcp__lines_init(&r, f->in_fd);
    const char *why = "the server closed the connection";
    for (;;) {
        char *line;
        size_t len;
        int st = pmcp__lines_next(&r, &line, &len);
        if (st == 0) break;
        if (st < 0) {
            why = "read error on the server connection";
            break;
        }
        if (st == 2) {
            pb_log(&f->cb.log, PB_LOG_WARN, "mcp[%s]: dropped a frame longer than %u bytes",
                   f->name, PMCP_MAX_FRAME);
            continue;
        }
        if (len == 0) continue;
        f->cb.on_frame(f->cb.ctx, line, len);
    }
    pmcp__lines_free(&r);
    atomic_store(&f->reader_done, true);
    if (f->cb.on_closed) f->cb.on_closed(f->cb.ctx, why);
    return NULL;
}

static void *errlog_main(void *arg) {
    fdlink *f = arg;
    pmcp__lines r;
    pmcp__lines_init(&r, f->err_fd);
    for (;;) {
        char *line;
        size_t len;
        int st = pmcp__lines_next(&r, &line, &len);
        if (st <= 0) break;
        if (st == 1)
            pb_log(&f->cb.log, PB_LOG_INFO, "mcp[%s]: %.*s", f->name,
                   (int)(len > 4000 ? 4000 : len), line);
    }
    pmcp__lines_free(&r);
    return NULL;
}

/* Waits (without reaping) for pid to exit, up to ms. */
static bool wait_exit(pid_t pid, long ms) {
    for (long waited = 0;; waited += 10) {
        siginfo_t si;
        memset(&si, 0, sizeof si);
        if (waitid(P_PID, (id_t)pid, &si, WEXITED | WNOHANG | WNOWAIT) != 0) return true;
        if (si.si_pid == pid) return true;
        if (waited >= ms) return false;
        struct timespec ts = {0, 10 * 1000000L};
        nanosleep(&ts, NULL);
    }
}

static void fd_close(pmcp__link *l) {
    fdlink *f = (fdlink *)l;
    pthread_mutex_lock(&f->wmu);
    if (f->out_fd >= 0) close(f->out_fd); /* EOF for the server */
    f->out_fd = -1;
    pthread_mutex_unlock(&f->wmu);
    if (f->pid > 0) {
        /* The server should exit at EOF; then the guardian takes the group down. */
        for (int i = 0; i < 100 && !atomic_load(&f->reader_done); i++) {
            struct timespec ts = {0, 10 * 1000000L};
            nanosleep(&ts, NULL);
        }
        close(f->life_fd);
        f->life_fd = -1;
        siginfo_t si;
        if (!wait_exit(f->pid, 3000)) kill(-f->pid, SIGKILL);
        waitid(P_PID, (id_t)f->pid, &si, WEXITED | WNOWAIT);
        kill(-f->pid, SIGKILL); /* the group id cannot be reused before the reap below */
        waitpid(f->pid, NULL, 0);
    }
    if (f->life_fd >= 0) close(f->life_fd);
    if (f->has_server) { /* inproc: the server returns at EOF */
        shutdown(f->in_fd, SHUT_WR);
        pthread_join(f->server, NULL);
        close(f->server_fd);
    }
    if (f->has_reader) {
        shutdown(f->in_fd, SHUT_RDWR); /* socketpair; harmless on pipes */
        pthread_join(f->reader, NULL);
    }
    if (f->has_errlog) pthread_join(f->errlog, NULL);
    if (f->in_fd >= 0) close(f->in_fd);
    if (f->err_fd >= 0) close(f->err_fd);
    pthread_mutex_destroy(&f->wmu);
    free(f->root);
    free(f);
}

static fdlink *fdlink_new(const char *name, const pmcp__link_cb *cb) {
    fdlink *f = calloc(1, sizeof *f);
    if (!f) return NULL;
    f->base.send = fd_send;
    f->base.close = fd_close;
    f->cb = *cb;
    f->in_fd = f->out_fd = f->err_fd = f->server_fd = f->life_fd = -1;
    snprintf(f->name, sizeof f->name, "%s", name ? name : "?");
    pthread_mutex_init(&f->wmu, NULL);
    return f;
}

static int start_threads(fdlink *f, char *err, size_t errlen) {
    if (pthread_create(&f->reader, NULL, reader_main, f) != 0) {
        snprintf(err, errlen, "cannot start a reader thread");
        return -1;
    }
    f->has_reader = true;
    if (f->err_fd >= 0) {
        if (pthread_create(&f->errlog, NULL, errlog_main, f) != 0) {
            snprintf(err, errlen, "cannot start a stderr thread");
            return -1;
        }
        f->has_errlog = true;
    }
    return 0;
}

/* The child side of a spawn (async-signal-safe calls only: the agent is threaded).
 *
 * Process G (the guardian, group leader) forks the server S into its own new process
 * group, then closes every fd but the read end of the "life" pipe and blocks on it.
 * The agent holds the only write end: when the agent closes it (close()) or dies (even
 * by kill -9), G wakes, sends SIGTERM to the group, waits up to 1 s for S, then sends
 * SIGKILL to the whole group (itself included). S additionally has
 * PR_SET_PDEATHSIG=SIGKILL tied to G. So no server process or grandchild survives. */
static _Noreturn void guardian(char **argv, char **envp, const char *cwd, int in[2], int out[2],
                               int er[2], int ex[2], int life[2]) {
    setpgid(0, 0);
    prctl(PR_SET_NAME, "peri-mcp-guard"); /* shown by ps -o comm, top */
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = SIG_IGN;
    sigaction(SIGTERM, &sa, NULL);
    pid_t me = getpid();
    pid_t srv = fork();
    if (srv == 0) {
        sa.sa_handler = SIG_DFL;
        sigaction(SIGTERM, &sa, NULL);
        sigaction(SIGPIPE, &sa, NULL);
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != me) _exit(127);
        dup2(in[0], 0);
        dup2(out[1], 1);
        dup2(er[1], 2);
        close_range(3, ~0U, CLOSE_RANGE_CLOEXEC); /* only ex[1] matters until exec */
        int e = 0;
        if (cwd && chdir(cwd) != 0) e = errno;
        if (!e) {
            execvpe(argv[0], argv, envp);
            e = errno;
        }
        ssize_t wr = write(ex[1], &e, sizeof e);
        (void)wr;
        _exit(127);
    }
    if (srv < 0) {
        int e = errno;
        ssize_t wr = write(ex[1], &e, sizeof e);
        (void)wr;
        _exit(127);
    }
    int keep = life[0];
    int cr = keep > 0 ? close_range(0, (unsigned)keep - 1, 0) : 0;
    if (cr == 0) cr = close_range((unsigned)keep + 1, ~0U, 0);
    for (int fd = 0; cr != 0 && fd < 65536; fd++) /* kernels before 5.9 */
        if (fd != keep) close(fd);
    char b;
    while (read(keep, &b, 1) != 0 && errno == EINTR) {
    }
    kill(0, SIGTERM);
    for (int i = 0; i < 50; i++) {
        pid_t w = waitpid(srv, NULL, WNOHANG);
        if (w == srv || w < 0) break;
        struct timespec ts = {0, 20 * 1000000L};
        nanosleep(&ts, NULL);
    }
    kill(0, SIGKILL);
    _exit(0);
}

pmcp__link *pmcp__link_stdio(const pmcp_server_config *cfg, const char *cwd,
                             const pmcp__link_cb *cb, char *err, size_t errlen) {
    if (!cfg->command || !cfg->command[0]) {
        snprintf(err, errlen, "no command given");
        return NULL;
    }
    /* Everything the child needs is prepared before fork (no malloc after it). */
    char **argv = calloc(cfg->nargs + 2, sizeof *argv);
    size_t nenviron = 0;
    while (environ[nenviron])
        nenviron++;
    char **envs = calloc(cfg->nenv + 1, sizeof *envs);
    char **envp = calloc(cfg->nenv + nenviron + 1, sizeof *envp);
    fdlink *f = fdlink_new(cfg->name, cb);
    int in[2] = {-1, -1}, out[2] = {-1, -1}, er[2] = {-1, -1}, ex[2] = {-1, -1}, life[2] = {-1, -1};
    if (!argv || !envs || !envp || !f) {
        snprintf(err, errlen, "out of memory");
        goto fail;
    }
    argv[0] = cfg->command;
    for (size_t i = 0; i < cfg->nargs; i++)
        argv[i + 1] = cfg->args[i];
    for (size_t i = 0; i < cfg->nenv; i++) {
        size_t n = strlen(cfg->env[i].name) + strlen(cfg->env[i].value) + 2;
        if (!(envs[i] = malloc(n))) {
            snprintf(err, errlen, "out of memory");
            goto fail;
        }
        snprintf(envs[i], n, "%s=%s", cfg->env[i].name, cfg->env[i].value);
    }
    size_t ne = 0;
    for (size_t i = 0; i < cfg->nenv; i++)
        envp[ne++] = envs[i];
    for (size_t i = 0; i < nenviron; i++) {
        const char *eq = strchr(environ[i], '=');
        size_t klen = eq ? (size_t)(eq - environ[i]) : strlen(environ[i]);
        bool overridden = false;
        for (size_t j = 0; j < cfg->nenv && !overridden; j++)
            overridden = strlen(cfg->env[j].name) == klen &&
                         strncmp(cfg->env[j].name, environ[i], klen) == 0;
        if (!overridden) envp[ne++] = environ[i];
    }
    if (pipe2(in, O_CLOEXEC) || pipe2(out, O_CLOEXEC) || pipe2(er, O_CLOEXEC) ||
        pipe2(ex, O_CLOEXEC)) {
        snprintf(err, errlen, "pipe: %s", strerror(errno));
        goto fail;
    }
    if (pipe2(life, O_CLOEXEC)) {
        snprintf(err, errlen, "pipe: %s", strerror(errno));
        goto fail;
    }
    pid_t pid = fork();
    if (pid < 0) {
        snprintf(err, errlen, "fork: %s", strerror(errno));
        goto fail;
    }
    if (pid == 0) guardian(argv, envp, cwd, in, out, er, ex, life); /* never returns */
    setpgid(pid, pid); /* also from here, so the group exists before we may signal it */
    f->pid = pid;
    f->life_fd = life[1];
    life[1] = -1;
    close(life[0]);
    close(in[0]);
    close(out[1]);
    close(er[1]);
    close(ex[1]);
    life[0] = in[0] = out[1] = er[1] = ex[1] = -1;
    int e = 0;
    ssize_t got;
    do
        got = read(ex[0], &e, sizeof e);
    while (got < 0 && errno == EINTR);
    close(ex[0]);
    ex[0] = -1;
    f->out_fd = in[1];
    f->in_fd = out[0];
    f->err_fd = er[0];
    in[1] = out[0] = er[0] = -1;
    if (got == (ssize_t)sizeof e) {
        snprintf(err, errlen, "cannot start `%s`: %s", cfg->command, strerror(e));
        fd_close(&f->base);
        f = NULL;
        goto fail;
    }
    if (start_threads(f, err, errlen) != 0) {
        fd_close(&f->base);
        f = NULL;
        goto fail;
    }
    pb_log(&f->cb.log, PB_LOG_INFO, "mcp[%s]: started `%s` (pid %d)", f->name, cfg->command,
           (int)pid);
    pb_strv_free(envs, cfg->nenv);
    free(envp);
    free(argv);
    return &f->base;
fail:
    for (int i = 0; i < 2; i++) {
        if (in[i] >= 0) close(in[i]);
        if (out[i] >= 0) close(out[i]);
        if (er[i] >= 0) close(er[i]);
        if (ex[i] >= 0) close(ex[i]);
        if (life[i] >= 0) close(life[i]);
    }
    pb_strv_free(envs, cfg->nenv);
    free(envp);
    free(argv);
    if (f) fd_close(&f->base);
    return NULL;
}

/* ---------------------------------------------------------------- in process */

static void *server_main(void *arg) {
    fdlink *f = arg;
    pmcp_server_opts o = {.root = f->root,
                          .name = "peri-workspace",
                          .tool_ctx = f->tool_ctx,
                          .acp_meta = f->acp_meta};
    pmcp_serve(&o, f->server_fd, f->server_fd);
    shutdown(f->server_fd, SHUT_RDWR); /* the client's reader sees EOF */
    return NULL;
}

pmcp__link *pmcp__link_inproc(const pmcp_server_config *cfg, const pmcp__link_cb *cb, char *err,
                              size_t errlen) {
    int sv[2];
    const char *root = cfg->tool_ctx ? cfg->tool_ctx->cwd : cfg->root;
    fdlink *f = fdlink_new("workspace", cb);
    if (f) {
        f->tool_ctx = cfg->tool_ctx;
        f->acp_meta = cfg->acp_meta;
    }
    if (!f || !(f->root = strdup(root ? root : "/"))) {
        snprintf(err, errlen, "out of memory");
        if (f) fd_close(&f->base);
        return NULL;
    }
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) {
        snprintf(err, errlen, "socketpair: %s", strerror(errno));
        fd_close(&f->base);
        return NULL;
    }
    f->in_fd = sv[0];
    f->out_fd = dup(sv[0]);
    f->server_fd = sv[1];
    if (f->out_fd < 0 || pthread_create(&f->server, NULL, server_main, f) != 0) {
        snprintf(err, errlen, "cannot start the in-process server");
        fd_close(&f->base);
        return NULL;
    }
    f->has_server = true;
    if (start_threads(f, err, errlen) != 0) {
        fd_close(&f->base);
        return NULL;
    }
    return &f->base;
}
