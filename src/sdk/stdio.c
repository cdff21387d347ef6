/*
 * stdio.c — the stdio transport helper: starts an agent command (default `peri acp`)
 * with pipes on its stdin/stdout and speaks newline-delimited JSON-RPC over them.
 *
 * This is the ONLY place in the SDK where a process is started. The child is reaped
 * by the transport's free: stdin is closed (the agent settles its sessions on EOF),
 * then up to exit_wait_ms for it to exit, then SIGTERM, then SIGKILL. Arguments go to
 * the child as given (no shell); the path is forwarded verbatim as --cwd.
 */
#include "sdk/sdk_int.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

typedef struct child {
    pid_t pid;
    long wait_ms;
} child;

/* Waits up to ms for pid; true when reaped. */
static bool reap_within(pid_t pid, long ms) {
    int64_t end = pb_mono_ms() + ms;
    for (;;) {
        int st;
        pid_t r = waitpid(pid, &st, WNOHANG);
        if (r == pid || (r < 0 && errno != EINTR)) return true;
        if (pb_mono_ms() >= end) return false;
        pb_sleep_us(10 * 1000);
    }
}

static void child_teardown(void *ctx) {
    child *c = ctx;
    if (!reap_within(c->pid, c->wait_ms)) {
        kill(c->pid, SIGTERM);
        if (!reap_within(c->pid, 2000)) {
            kill(c->pid, SIGKILL);
            while (waitpid(c->pid, NULL, 0) < 0 && errno == EINTR) {
            }
        }
    }
    free(c);
}

/* "name value" appended at argv[n] when value is given; the new count. */
static size_t option(const char **argv, size_t n, const char *name, const char *value) {
    if (!value) return n;
    argv[n++] = name;
    argv[n++] = value;
    return n;
}

int psdk_stdio_factory(void *ctx, const psdk_connect *c, psdk_transport **out, psdk_error *err) {
    psdk__ok(err);
    const psdk_stdio_options *o = ctx;
    const char *argv_default[12];
    const char *const *argv = o ? o->argv : NULL;
    if (!argv) {
        size_t n = 0;
        argv_default[n++] = o && o->peri ? o->peri : "peri";
        argv_default[n++] = "acp";
        n = option(argv_default, n, "--cwd", c->path);
        n = option(argv_default, n, "--db", c->store_locator);
        n = option(argv_default, n, "--machine-id", c->machine_id);
        argv_default[n] = NULL;
        argv = argv_default;
    }
    if (!argv[0]) {
        psdk__fail(err, PSDK_ERR_ARG, "empty agent command");
        return -1;
    }
    int to_child[2], from_child[2];
    if (pipe2(to_child, O_CLOEXEC) != 0) {
        psdk__fail(err, PSDK_ERR_TRANSPORT, "pipe: %s", strerror(errno));
        return -1;
    }
    if (pipe2(from_child, O_CLOEXEC) != 0) {
        psdk__fail(err, PSDK_ERR_TRANSPORT, "pipe: %s", strerror(errno));
        close(to_child[0]);
        close(to_child[1]);
        return -1;
    }
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, to_child[0], 0);
    posix_spawn_file_actions_adddup2(&fa, from_child[1], 1);
    pid_t pid;
    int rc = posix_spawnp(&pid, argv[0], &fa, NULL, (char *const *)argv,
                          o && o->envp ? (char *const *)o->envp : environ);
    posix_spawn_file_actions_destroy(&fa);
    close(to_child[0]);
    close(from_child[1]);
    if (rc != 0) {
        close(to_child[1]);
        close(from_child[0]);
        psdk__fail(err, PSDK_ERR_TRANSPORT, "cannot start %s: %s", argv[0], strerror(rc));
        return -1;
    }
    child *ch = malloc(sizeof *ch);
    psdk_transport *t =
        ch ? psdk__fdt_new(from_child[0], to_child[1], true, child_teardown, ch, err) : NULL;
    if (!t) {
        close(to_child[1]);
        close(from_child[0]);
        if (ch) {
            ch->pid = pid;
            ch->wait_ms = 5000;
            child_teardown(ch);
        } else {
            kill(pid, SIGKILL);
            waitpid(pid, NULL, 0);
            psdk__fail(err, PSDK_ERR_NOMEM, "out of memory");
        }
        return -1;
    }
    ch->pid = pid;
    ch->wait_ms = o && o->exit_wait_ms > 0 ? o->exit_wait_ms : 5000;
    *out = t;
    return 0;
}
