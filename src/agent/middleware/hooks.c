/*
 * hooks.c — the "hooks" middleware: the user's session hooks from settings ("hooks" in
 * ~/.peri/settings.json) and, once the user trusted that exact content, the project's
 * (.peri/settings.json, part of the project-trust material).
 *
 * A hook is a command or an MCP tool bound to one hook point (SessionStart,
 * UserPromptSubmit, PreToolUse, PostToolUse, PreCompact, Stop, SubagentStop), for tool
 * points optionally filtered by a matcher ("shell|write", "*"). It receives the event as
 * one JSON object (the command on stdin, the MCP tool as its arguments) and answers:
 *   - exit 0 and a JSON object on stdout: {"decision": "deny"|"block", "reason": R}
 *     denies; {"additionalContext": C} (or "context") adds context; anything else (or
 *     "decision": "allow") is no opinion. "allow" never skips the permission middleware.
 *   - exit 0 and other stdout: context for SessionStart and UserPromptSubmit, ignored
 *     for the other points;
 *   - exit 2: deny; the reason is stderr (else stdout);
 *   - any other exit, a timeout, a failure to start: the hook failed. It is logged and
 *     does not block, unless the hook says "failClosed": true (then it denies, naming
 *     the failure).
 * Commands run like the shell tool: through placement in the native sandbox (the session
 * directory read-write, no network unless the policy allows it), with the hook's timeout
 * (default 30 s, at most 600 s) as the wall-clock limit; only a hook with its own
 * "unsandboxed": true (or the user's sandbox mode "off") runs directly, and every such
 * run is logged. A cancel of the turn kills a running hook at once.
 *
 * Ownership: a pag_hooks owns deep copies of both hook objects; project hooks can be
 * replaced while a hook runs elsewhere (mu guards the pointer; a run holds a reference).
 */
#include "agent/checker.h"
#include "agent/middleware/chain.h"
#include "peri/place.h"
#include "peri/tools.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define HOOK_TIMEOUT_S   30
#define HOOK_TIMEOUT_MAX 600
#define HOOK_OUT_MAX     (64u * 1024)
#define HOOK_REASON_MAX  2000

struct pag_hooks {
    pag_hooks_env env;
    pj_t *user;         /* validated "hooks" object or NULL */
    pthread_mutex_t mu; /* project */
    pj_t *project;      /* validated, trusted "hooks" object or NULL */
};

/* ---------------------------------------------------------------- validation */

typedef pag__checker checker;

static void check_entry(checker *c, const char *path, pj_t *e) {
    if (!pj_is_object(e)) {
        pag__finding(c, true, NULL, "%s: must be an object", path);
        return;
    }
    const char *type = pj_string_value(pj_object_get(e, "type"));
    if (!type) type = pj_object_get(e, "command") ? "command" : NULL;
    if (!type || (strcmp(type, "command") && strcmp(type, "mcp_tool"))) {
        pag__finding(c, true, NULL, "%s.type: must be \"command\" or \"mcp_tool\"", path);
        return;
    }
    if (!strcmp(type, "command") && !pj_is_string(pj_object_get(e, "command")))
        pag__finding(c, true, NULL, "%s.command: must be a string", path);
    if (!strcmp(type, "mcp_tool") &&
        (!pj_is_string(pj_object_get(e, "server")) || !pj_is_string(pj_object_get(e, "tool"))))
        pag__finding(c, true, NULL, "%s: an mcp_tool hook needs \"server\" and \"tool\" (strings)",
                     path);
    pj_t *t = pj_object_get(e, "timeout");
    if (t && (!pj_is_number(t) || pj_number_value(t) <= 0 || pj_number_value(t) > HOOK_TIMEOUT_MAX))
        pag__finding(c, true, NULL, "%s.timeout: must be a number of seconds in (0, %d]", path,
                     HOOK_TIMEOUT_MAX);
    static const char *const flags[] = {"unsandboxed", "failClosed"};
    for (size_t i = 0; i < 2; i++) {
        pj_t *f = pj_object_get(e, flags[i]);
        if (f && !pj_is_boolean(f))
            pag__finding(c, true, NULL, "%s.%s: must be true or false", path, flags[i]);
    }
}

static size_t check_hooks(const pj_t *hooks, const char *path, pag_settings_report_fn report,
                          void *ud) {
    checker c = {.report = report, .ud = ud};
    if (!hooks) return 0;
    if (!pj_is_object(hooks)) {
        pag__finding(&c, true, NULL, "%s: must be an object", path);
        return c.errors;
    }
    const char *ev;
    pj_t *groups;
    pj_object_foreach((pj_t *)hooks, ev, groups) {
        pag_hook h;
        if (!pag_hook_parse(ev, &h)) {
            pag__finding(&c, true, NULL,
                         "%s.%s: not a hook event (SessionStart, UserPromptSubmit, PreToolUse, "
                         "PostToolUse, PreCompact, Stop, SubagentStop)",
                         path, ev);
            continue;
        }
        if (!pj_is_array(groups)) {
            pag__finding(&c, true, NULL, "%s.%s: must be an array", path, ev);
            continue;
        }
        size_t i;
        pj_t *g;
        pj_array_foreach(groups, i, g) {
            char gp[300];
            snprintf(gp, sizeof gp, "%s.%s[%zu]", path, ev, i);
            pj_t *m = pj_object_get(g, "matcher");
            if (!pj_is_object(g)) {
                pag__finding(&c, true, NULL, "%s: must be an object", gp);
                continue;
            }
            if (m && !pj_is_string(m))
                pag__finding(&c, true, NULL, "%s.matcher: must be a string", gp);
            pj_t *list = pj_object_get(g, "hooks");
            if (!pj_is_array(list)) {
                pag__finding(&c, true, NULL, "%s.hooks: must be an array", gp);
                continue;
            }
            size_t k;
            pj_t *e;
            pj_array_foreach(list, k, e) {
                char ep[340];
                snprintf(ep, sizeof ep, "%s.hooks[%zu]", gp, k);
                check_entry(&c, ep, e);
            }
        }
    }
    return c.errors;
}

size_t pag_hooks_check(const pj_t *hooks, const char *path, pag_settings_report_fn report,
                       void *ud) {
    return check_hooks(hooks, path ? path : "hooks", report, ud);
}

typedef struct first_err {
    char *buf;
    size_t len;
    bool set;
} first_err;

static void keep_first(void *ud, bool error, const char *message) {
    first_err *f = ud;
    if (!error || f->set || !f->buf) return;
    snprintf(f->buf, f->len, "%s", message);
    f->set = true;
}

/* ---------------------------------------------------------------- life */

pag_hooks *pag_hooks_new(const pj_t *user_hooks, const pag_hooks_env *env, char *err,
                         size_t errlen) {
    first_err fe = {.buf = err, .len = errlen};
    if (check_hooks(user_hooks, "hooks", keep_first, &fe) > 0) return NULL;
    pag_hooks *h = calloc(1, sizeof *h);
    if (!h) {
        if (err) snprintf(err, errlen, "out of memory");
        return NULL;
    }
    h->env = *env;
    pthread_mutex_init(&h->mu, NULL);
    if (user_hooks && pj_object_size(user_hooks) > 0) {
        h->user = pj_deep_copy(user_hooks);
        if (!h->user) {
            pag_hooks_free(h);
            if (err) snprintf(err, errlen, "out of memory");
            return NULL;
        }
    }
    return h;
}

void pag_hooks_free(pag_hooks *h) {
    if (!h) return;
    pj_decref(h->user);
    pj_decref(h->project);
    pthread_mutex_destroy(&h->mu);
    free(h);
}

int pag_hooks_set_project(pag_hooks *h, const char *hooks_json, char *err, size_t errlen) {
    pj_t *p = NULL;
    int rc = 0;
    if (hooks_json) {
        p = pj_loads(hooks_json, 0, NULL);
        first_err fe = {.buf = err, .len = errlen};
        if (!pj_is_object(p) || check_hooks(p, "project hooks", keep_first, &fe) > 0) {
            if (!fe.set && err) snprintf(err, errlen, "project hooks: must be an object");
            pj_decref(p);
            p = NULL;
            rc = -1;
        }
    }
    pthread_mutex_lock(&h->mu);
    pj_t *old = h->project;
    h->project = p;
    pthread_mutex_unlock(&h->mu);
    pj_decref(old);
    return rc;
}

/* ---------------------------------------------------------------- running */

static bool matches(const char *matcher, const char *tool) {
    if (!matcher || !*matcher || !strcmp(matcher, "*")) return true;
    if (!tool) return false;
    size_t tl = strlen(tool);
    for (const char *p = matcher;;) {
        size_t n = strcspn(p, "|");
        if (n == tl && !strncmp(p, tool, n)) return true;
        if (!p[n]) return false;
        p += n + 1;
    }
}

static pj_t *event_json(const pag_hook_call *call) {
    pj_t *e = pj_pack("{s:s}", "hook_event_name", pag_hook_name(call->hook));
    if (!e) return NULL;
    if (call->session_id) pj_object_set_new(e, "session_id", pj_string(call->session_id));
    if (call->cwd) pj_object_set_new(e, "cwd", pj_string(call->cwd));
    if (call->prompt) pj_object_set_new(e, "prompt", pj_string(call->prompt));
    if (call->call) {
        const char *name = call->call->tool_name ? call->call->tool_name : "";
        pj_object_set_new(e, "tool_name", pj_string(name));
        if (call->call->tool_call_id)
            pj_object_set_new(e, "tool_call_id", pj_string(call->call->tool_call_id));
        pj_t *in = call->call->raw_input ? pj_loads(call->call->raw_input, 0, NULL) : NULL;
        pj_object_set_new(e, "tool_input", in ? in : pj_object());
    }
    if (call->hook == PAG_HOOK_POST_TOOL) {
        /* the output as the model sees it, its first HOOK_OUT_MAX bytes (whole chars) */
        const char *o = call->tool_output ? call->tool_output : "";
        size_t n = strlen(o);
        if (n > HOOK_OUT_MAX) {
            n = HOOK_OUT_MAX;
            while (n && ((unsigned char)o[n] & 0xC0) == 0x80)
                n--;
        }
        pj_t *r = pj_object();
        pj_object_set_new(r, "output", pj_stringn(o, n));
        pj_object_set_new(r, "is_error", pj_boolean(call->tool_error));
        pj_object_set_new(e, "tool_response", r);
    }
    if (call->stop_reason) pj_object_set_new(e, "stop_reason", pj_string(call->stop_reason));
    if (call->agent_id) pj_object_set_new(e, "agent_id", pj_string(call->agent_id));
    return e;
}

/* What one run produced. */
typedef struct run_out {
    bool ran;      /* started and ended by itself (not timed out, not cancelled) */
    int exit_code; /* when ran */
    char *out, *err;
    char why[300]; /* when !ran */
} run_out;

static void run_out_clear(run_out *r) {
    free(r->out);
    free(r->err);
}

static int64_t now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Reads what is available on fd into *buf (bounded). false at EOF or error. */
static bool drain(int fd, char **buf, size_t *len) {
    char tmp[4096];
    ssize_t k = read(fd, tmp, sizeof tmp);
    if (k < 0 && (errno == EINTR || errno == EAGAIN)) return true;
    if (k <= 0) return false;
    size_t keep = *len + (size_t)k > HOOK_OUT_MAX ? HOOK_OUT_MAX - *len : (size_t)k;
    if (keep) {
        char *n = realloc(*buf, *len + keep + 1);
        if (n) {
            memcpy(n + *len, tmp, keep);
            *len += keep;
            n[*len] = '\0';
            *buf = n;
        }
    }
    return true;
}

/* The explicit opt-out: /bin/sh -c command in cwd, its own process group (killed whole at
 * the deadline or on cancel), stdin from an anonymous memory file (no pipe, so no
 * SIGPIPE whatever the host's signal disposition). */
static void run_direct(const char *cmd, const char *cwd, const char *input, long timeout_ms,
                       atomic_int *cancel, run_out *r) {
    int in = memfd_create("peri-hook-event", MFD_CLOEXEC);
    int op[2] = {-1, -1}, ep[2] = {-1, -1};
    size_t ilen = strlen(input);
    if (in < 0 || pb_write_all(in, input, ilen) != 0 || lseek(in, 0, SEEK_SET) != 0 ||
        pipe2(op, O_CLOEXEC) || pipe2(ep, O_CLOEXEC)) {
        snprintf(r->why, sizeof r->why, "could not start: %s", strerror(errno));
        goto out;
    }
    pid_t pid = fork();
    if (pid < 0) {
        snprintf(r->why, sizeof r->why, "could not start: %s", strerror(errno));
        goto out;
    }
    if (pid == 0) {
        setpgid(0, 0);
        if (dup2(in, 0) < 0 || dup2(op[1], 1) < 0 || dup2(ep[1], 2) < 0 || chdir(cwd) != 0)
            _exit(127);
        execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
        _exit(127);
    }
    setpgid(pid, pid);
    close(op[1]);
    close(ep[1]);
    op[1] = ep[1] = -1;
    fcntl(op[0], F_SETFL, O_NONBLOCK);
    fcntl(ep[0], F_SETFL, O_NONBLOCK);
    int64_t deadline = now_ms() + timeout_ms;
    size_t olen = 0, elen = 0;
    bool oopen = true, eopen = true, killed = false;
    while (oopen || eopen) {
        if (cancel && atomic_load(cancel)) {
            snprintf(r->why, sizeof r->why, "cancelled");
            killed = true;
            break;
        }
        int64_t left = deadline - now_ms();
        if (left <= 0) {
            snprintf(r->why, sizeof r->why, "timed out after %ld ms", timeout_ms);
            killed = true;
            break;
        }
        struct pollfd pf[2] = {{.fd = oopen ? op[0] : -1, .events = POLLIN},
                               {.fd = eopen ? ep[0] : -1, .events = POLLIN}};
        if (poll(pf, 2, left < 20 ? (int)left : 20) < 0 && errno != EINTR) break;
        if (oopen && (pf[0].revents & (POLLIN | POLLHUP | POLLERR)))
            oopen = drain(op[0], &r->out, &olen);
        if (eopen && (pf[1].revents & (POLLIN | POLLHUP | POLLERR)))
            eopen = drain(ep[0], &r->err, &elen);
    }
    if (killed) kill(-pid, SIGKILL);
    /* the shell ended its output; wait for it to exit (not reaping it yet, so its process
     * group cannot be reused) within what is left of the deadline */
    while (!killed) {
        siginfo_t si;
        memset(&si, 0, sizeof si);
        if (waitid(P_PID, (id_t)pid, &si, WEXITED | WNOHANG | WNOWAIT) == 0 && si.si_pid == pid)
            break;
        if (now_ms() >= deadline || (cancel && atomic_load(cancel))) {
            snprintf(r->why, sizeof r->why, "%s",
                     cancel && atomic_load(cancel) ? "cancelled" : "timed out");
            killed = true;
            break;
        }
        struct timespec ts = {0, 5 * 1000000L};
        nanosleep(&ts, NULL);
    }
    kill(-pid, SIGKILL); /* whatever is left of its process group ends with it */
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    if (!killed) {
        r->ran = true;
        r->exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    }
out:
    if (in >= 0) close(in);
    for (int i = 0; i < 2; i++) {
        if (op[i] >= 0) close(op[i]);
        if (ep[i] >= 0) close(ep[i]);
    }
}

/* The default: through placement, in the native sandbox like `shell`. */
static void run_placed(const pag_hooks *h, const char *cmd, const char *input, long timeout_ms,
                       atomic_int *cancel, run_out *r) {
    const ptl_sandbox *sb = h->env.sandbox;
    if (!sb || !sb->place) {
        snprintf(r->why, sizeof r->why, "the native sandbox is not configured");
        return;
    }
    char run_id[PTL_RUN_ID_LEN];
    pl_request rq;
    ptl_shell_request(&rq, run_id, "hook", sb, h->env.cwd, cmd, timeout_ms, 1024, 64);
    rq.stdin_data = input;
    rq.stdin_len = strlen(input);
    pl_policy none = {0};
    pl_cancel *pc = pl_cancel_new();
    if (!pc) {
        snprintf(r->why, sizeof r->why, "out of memory");
        return;
    }
    pl_cancel_link br;
    pl_cancel_link_start(&br, cancel, pc);
    pl_report rep;
    memset(&rep, 0, sizeof rep);
    pl_error err = {0};
    bool ok = pl_run(sb->place, &rq, sb->policy ? sb->policy : &none, pc, &rep, &err);
    pl_cancel_link_stop(&br);
    bool was_cancelled = pl_cancel_triggered(pc);
    pl_cancel_free(pc);
    if (!ok) {
        snprintf(r->why, sizeof r->why, "%.280s",
                 err.message[0] ? err.message : "placement failed");
    } else if (was_cancelled) {
        snprintf(r->why, sizeof r->why, "cancelled");
    } else if (rep.result.has_limits && rep.result.stop != PL_STOP_NONE) {
        snprintf(r->why, sizeof r->why, "timed out after %ld ms", timeout_ms);
    } else {
        r->ran = true;
        r->exit_code = rep.result.exit_code;
        r->out = rep.result.stdout_text ? strndup(rep.result.stdout_text, HOOK_OUT_MAX) : NULL;
        r->err = rep.result.stderr_text ? strndup(rep.result.stderr_text, HOOK_OUT_MAX) : NULL;
    }
    pl_report_clear(&rep);
}

static void run_mcp(const pag_hooks *h, pj_t *e, const char *input, atomic_int *cancel,
                    run_out *r) {
    const char *server = pj_string_value(pj_object_get(e, "server"));
    const char *tool = pj_string_value(pj_object_get(e, "tool"));
    if (!h->env.run_tool) {
        snprintf(r->why, sizeof r->why, "MCP tools are not available to hooks here");
        return;
    }
    char name[300];
    snprintf(name, sizeof name, "mcp__%.120s__%.120s", server, tool);
    char *text = NULL;
    int rc = h->env.run_tool(h->env.ctx, name, input, cancel, &text);
    if (rc < 0) {
        snprintf(r->why, sizeof r->why, "%.80s: %.200s", name, text ? text : "the call failed");
        free(text);
        return;
    }
    r->ran = true;
    r->exit_code = rc == 1 ? 2 : 0; /* a tool error denies, its text the reason */
    if (rc == 1)
        r->err = text;
    else
        r->out = text;
}

static char *bounded(const char *s) {
    if (!s) return NULL;
    size_t n = strlen(s);
    while (n && (s[n - 1] == '\n' || s[n - 1] == ' ' || s[n - 1] == '\r'))
        n--;
    if (n > HOOK_REASON_MAX) n = HOOK_REASON_MAX;
    return strndup(s, n);
}

/* Turns one run into the answer (see the header comment for the conventions). */
static void judge(const pag_hooks *h, pag_hook hook, const char *label, pj_t *e, const run_out *r,
                  pag_hook_answer *ans) {
    bool fail_closed = pj_is_true(pj_object_get(e, "failClosed"));
    if (!r->ran || (r->exit_code != 0 && r->exit_code != 2)) {
        char why[400];
        if (r->ran)
            snprintf(why, sizeof why, "exited with status %d", r->exit_code);
        else
            snprintf(why, sizeof why, "%s", r->why);
        pb_log(&h->env.log, PB_LOG_WARN, "%s hook %s failed: %s%s", pag_hook_name(hook), label, why,
               fail_closed ? " (failClosed: denied)" : " (ignored)");
        if (fail_closed) {
            char reason[600];
            snprintf(reason, sizeof reason, "the %s hook %.100s failed (%s)", pag_hook_name(hook),
                     label, why);
            pag_hook_answer_deny(ans, reason);
        }
        return;
    }
    if (r->exit_code == 2) {
        char *why = bounded(r->err && *r->err ? r->err : r->out);
        pag_hook_answer_deny(ans, why && *why ? why : "denied by a hook");
        free(why);
        return;
    }
    pj_t *o = r->out ? pj_loads(r->out, 0, NULL) : NULL;
    if (pj_is_object(o)) {
        const char *d = pj_string_value(pj_object_get(o, "decision"));
        const char *reason = pj_string_value(pj_object_get(o, "reason"));
        const char *ctx = pj_string_value(pj_object_get(o, "additionalContext"));
        if (!ctx) ctx = pj_string_value(pj_object_get(o, "context"));
        char *c = bounded(ctx);
        if (c) pag_hook_answer_add_context(ans, c);
        free(c);
        if (d && (!strcmp(d, "deny") || !strcmp(d, "block"))) {
            char *why = bounded(reason);
            pag_hook_answer_deny(ans, why && *why ? why : "denied by a hook");
            free(why);
        }
    } else if (r->out && (hook == PAG_HOOK_SESSION_START || hook == PAG_HOOK_PROMPT)) {
        char *c = bounded(r->out);
        if (c) pag_hook_answer_add_context(ans, c);
        free(c);
    }
    pj_decref(o);
}

static void run_entry(const pag_hooks *h, const pag_hook_call *call, pj_t *e, const char *input,
                      pag_hook_answer *ans) {
    pj_t *t = pj_object_get(e, "timeout");
    long timeout_ms = (long)((t ? pj_number_value(t) : HOOK_TIMEOUT_S) * 1000.0);
    if (timeout_ms < 1) timeout_ms = 1;
    const char *cmd = pj_string_value(pj_object_get(e, "command"));
    run_out r = {0};
    char label[120];
    if (cmd) {
        snprintf(label, sizeof label, "`%.100s`", cmd);
        bool direct =
            pj_is_true(pj_object_get(e, "unsandboxed")) || (h->env.sandbox && h->env.sandbox->off);
        if (direct) {
            pb_log(&h->env.log, PB_LOG_WARN, "%s hook %s runs UNSANDBOXED in %s",
                   pag_hook_name(call->hook), label, h->env.cwd);
            run_direct(cmd, h->env.cwd, input, timeout_ms, call->cancel, &r);
        } else {
            run_placed(h, cmd, input, timeout_ms, call->cancel, &r);
        }
    } else {
        snprintf(label, sizeof label, "mcp__%.40s__%.40s",
                 pj_string_value(pj_object_get(e, "server")),
                 pj_string_value(pj_object_get(e, "tool")));
        run_mcp(h, e, input, call->cancel, &r);
    }
    judge(h, call->hook, label, e, &r, ans);
    run_out_clear(&r);
}

/* The hooks of one source (user or project) for this point, in their written order. */
static void run_source(const pag_hooks *h, pj_t *src, const pag_hook_call *call, const char *input,
                       pag_hook_answer *ans) {
    pj_t *groups = pj_object_get(src, pag_hook_name(call->hook));
    const char *tool = call->call ? call->call->tool_name : NULL;
    bool tool_point = call->hook == PAG_HOOK_PRE_TOOL || call->hook == PAG_HOOK_POST_TOOL;
    size_t i;
    pj_t *g;
    pj_array_foreach(groups, i, g) {
        if (tool_point && !matches(pj_string_value(pj_object_get(g, "matcher")), tool)) continue;
        size_t k;
        pj_t *e;
        pj_array_foreach(pj_object_get(g, "hooks"), k, e) {
            if (ans->deny && !pag_hook_is_after(call->hook)) return;
            if (call->cancel && atomic_load(call->cancel)) return;
            run_entry(h, call, e, input, ans);
        }
    }
}

static void on_hook(void *ctx, const pag_hook_call *call, pag_hook_answer *ans) {
    pag_hooks *h = ctx;
    pthread_mutex_lock(&h->mu);
    pj_t *project = pj_incref(h->project);
    pthread_mutex_unlock(&h->mu);
    const char *name = pag_hook_name(call->hook);
    if (!pj_object_get(h->user, name) && !pj_object_get(project, name)) {
        pj_decref(project);
        return;
    }
    pj_t *ev = event_json(call);
    char *input = ev ? pj_dumps(ev, PJ_COMPACT) : NULL;
    pj_decref(ev);
    if (input) {
        run_source(h, h->user, call, input, ans);
        run_source(h, project, call, input, ans);
    } else {
        pb_log(&h->env.log, PB_LOG_WARN, "%s hooks skipped: out of memory", name);
    }
    free(input);
    pj_decref(project);
}

pag_middleware pag_hooks_middleware(pag_hooks *h) {
    unsigned all = 0;
    for (unsigned i = 0; i < PAG_HOOK_COUNT; i++)
        all |= PAG_HOOK_BIT(i);
    return (pag_middleware){.name = "hooks", .hooks = all, .ctx = h, .on_hook = on_hook};
}
