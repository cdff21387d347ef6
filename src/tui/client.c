/*
 * client.c — the TUI's ACP connection: spawns `peri-agent acp` with its stdin/stdout on
 * pipes (stderr to a log file, never the screen; in its own session, without the
 * terminal), writes JSON-RPC frames one per line, splits what comes back into frames,
 * and closes with a bound: EOF on the agent's stdin (the agent then closes its
 * sessions), at most grace_ms, then SIGTERM, SIGKILL. Request ids are increasing
 * integers from 1; the caller matches responses to them.
 */
#include "peri/rpc.h"
#include "tui/tui.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

int pt_client_start(pt_client *c, const ptui_options *o, char *err, size_t errlen) {
    memset(c, 0, sizeof *c);
    c->pid = -1;
    c->wfd = c->rfd = -1;
    int to[2], from[2];
    if (pipe2(to, O_CLOEXEC)) {
        snprintf(err, errlen, "pipe: %s", strerror(errno));
        return -1;
    }
    if (pipe2(from, O_CLOEXEC)) {
        snprintf(err, errlen, "pipe: %s", strerror(errno));
        close(to[0]);
        close(to[1]);
        return -1;
    }
    int logfd =
        open(o->log ? o->log : "/dev/null", O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    const char *argv[8];
    int n = 0;
    argv[n++] = o->agent;
    argv[n++] = "acp";
    argv[n++] = "--cwd";
    argv[n++] = o->cwd;
    if (o->db) {
        argv[n++] = "--db";
        argv[n++] = o->db;
    }
    argv[n] = NULL;
    pid_t pid = fork();
    if (pid == 0) {
        /* its own session: no controlling terminal, so neither the agent nor anything it
         * runs can write on the screen or get the terminal's signals; it ends on EOF */
        setsid();
        dup2(to[0], 0);
        dup2(from[1], 1);
        if (logfd >= 0) dup2(logfd, 2);
        signal(SIGPIPE, SIG_DFL);
        execv(o->agent, (char *const *)argv);
        _exit(127);
    }
    int e = errno;
    close(to[0]);
    close(from[1]);
    if (logfd >= 0) close(logfd);
    if (pid < 0) {
        close(to[1]);
        close(from[0]);
        snprintf(err, errlen, "cannot start %s: %s", o->agent, strerror(e));
        return -1;
    }
    c->pid = pid;
    c->wfd = to[1];
    c->rfd = from[0];
    fcntl(c->rfd, F_SETFL, fcntl(c->rfd, F_GETFL) | O_NONBLOCK);
    return 0;
}

static int send_frame(pt_client *c, pj_t *f) {
    if (!f || c->wfd < 0) {
        pj_decref(f);
        return -1;
    }
    size_t left = 0;
    char *s = pb_rpc_encode(f, true, &left);
    pj_decref(f);
    if (!s) return -1;
    const char *p = s;
    int rc = 0;
    while (left) {
        ssize_t w = write(c->wfd, p, left);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) {
            rc = -1;
            break;
        }
        p += w;
        left -= (size_t)w;
    }
    free(s);
    return rc;
}

int pt_client_request(pt_client *c, const char *method, pj_t *params) {
    int id = ++c->next_id;
    pj_t *f = pb_rpc_request(id, method, params ? params : pj_object());
    return send_frame(c, f) ? -1 : id;
}

int pt_client_notify(pt_client *c, const char *method, pj_t *params) {
    pj_t *f = pb_rpc_notification(method, params ? params : pj_object());
    return send_frame(c, f);
}

int pt_client_reply(pt_client *c, pj_t *id, pj_t *result) {
    pj_t *f = pb_rpc_result(id, result);
    return send_frame(c, f);
}

int pt_client_read(pt_client *c) {
    char buf[65536];
    for (;;) {
        ssize_t n = read(c->rfd, buf, sizeof buf);
        if (n > 0) {
            if (pt_buf_add(&c->in, buf, (size_t)n)) return -1;
            continue;
        }
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return 0;
        c->eof = true;
        return -1;
    }
}

pj_t *pt_client_next(pt_client *c) {
    while (c->in.n) {
        char *nl = memchr(c->in.s, '\n', c->in.n);
        if (!nl) return NULL;
        size_t len = (size_t)(nl - c->in.s);
        pj_t *f = pj_loadb(c->in.s, len, 0, NULL);
        memmove(c->in.s, nl + 1, c->in.n - len - 1);
        c->in.n -= len + 1;
        if (f) return f; /* a line that is not JSON is skipped */
    }
    return NULL;
}

static bool reaped(pid_t pid, int ms) {
    struct timespec ts = {0, 10 * 1000 * 1000};
    for (int t = 0; t <= ms; t += 10) {
        if (waitpid(pid, NULL, WNOHANG) == pid) return true;
        nanosleep(&ts, NULL);
    }
    return false;
}

void pt_client_close(pt_client *c, int grace_ms) {
    if (c->wfd >= 0) close(c->wfd);
    c->wfd = -1;
    if (c->pid > 0 && !reaped(c->pid, grace_ms)) {
        kill(c->pid, SIGTERM);
        if (!reaped(c->pid, 1000)) {
            kill(c->pid, SIGKILL);
            waitpid(c->pid, NULL, 0);
        }
    }
    c->pid = -1;
    if (c->rfd >= 0) close(c->rfd);
    c->rfd = -1;
    pt_buf_free(&c->in);
}

int pt_client_error(pt_client *c, pj_t *id, int code, const char *message) {
    pj_t *f = pb_rpc_error(id, code, message, NULL);
    return send_frame(c, f);
}
