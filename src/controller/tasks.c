/*
 * tasks.c — background tasks: a `shell` call or a subagent (`task`) with
 * "background": true runs on a thread of its own and the call returns its task id at
 * once; task_output (its output so far, bounded), task_wait (a bounded wait) and
 * task_stop act on it. The client sees each task start and end as a session/update
 * (session_info_update with _meta "peri.task", docs/acp.md).
 *
 * A task belongs to this process and this live session: nothing of it is stored but
 * the tool results the model saw, so loading the session in another process (or again
 * after a restart) finds no task, and no result of an old task is ever delivered again.
 * While a task runs, close cancels it and reports "background_task" until it has ended.
 *
 * A background shell runs through placement in the native sandbox like `shell`, with one
 * more writable directory (a fresh /tmp/peri-task-XXXXXX, mode 0700) holding its output
 * file, which task_output reads through the confined reader (a symlink or a hard link
 * planted there by the command is refused, never followed). With the sandbox mode off it
 * runs through the shell tool unsandboxed (warned), and its output comes at the end.
 *
 * Invariants: s->tasks, s->live_tasks and every task's state are guarded by s->mu; a
 * task's thread holds a reference on its session and counts as a controller connector
 * (pct_free waits for it); a finished task's output is immutable.
 */
#include "controller/ctl_impl.h"

#include <dirent.h>
#include <pthread.h>
#include "peri/json.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define TASK_TIMEOUT_MS     600000L /* a background shell's default limit */
#define TASK_TIMEOUT_MAX_MS 3600000L
#define TASK_OUT_DEFAULT    8000
#define TASK_OUT_MAX        64000
#define TASK_OUT_KEEP       (1u << 20)
#define TASK_WAIT_MAX_MS    600000L

typedef enum task_state { T_RUNNING = 0, T_COMPLETED, T_FAILED, T_STOPPED } task_state;

struct pct_task {
    struct pct_task *next;
    pct_sess *s;
    char id[32];
    bool subagent;
    char *args;  /* the call's arguments without "background" */
    char *model; /* subagent: the parent's model spec when it started */
    char call_id[128];
    atomic_int cancel;
    task_state state;
    int exit_code; /* shell, when ended by itself */
    char *output;  /* when ended */
    char dir[64];  /* shell: the output directory while it exists ("" none) */
    int64_t started_ms, ended_ms;
};

static const char *state_name(task_state st) {
    static const char *const n[] = {"running", "completed", "failed", "stopped"};
    return n[st];
}

/* The start/end update: session_info_update, _meta {"peri.task": {...}}, outside turns. */
static void announce(pct_task *t, task_state st, int exit_code, const char *agent_id) {
    pj_t *m = pj_pack("{s:{s:s, s:s, s:s, s:s}}", "peri.task", "taskId", t->id, "kind",
                      t->subagent ? "subagent" : "shell", "status",
                      st == T_RUNNING ? "started" : state_name(st), "toolCallId", t->call_id);
    pj_t *pt = pj_object_get(m, "peri.task");
    if (pt && !t->subagent && st == T_COMPLETED)
        pj_object_set_new(pt, "exitCode", pj_integer(exit_code));
    if (pt && agent_id && *agent_id) pj_object_set_new(pt, "agentId", pj_string(agent_id));
    char *mj = m ? pj_dumps(m, PJ_COMPACT) : NULL;
    pj_decref(m);
    if (!mj) return;
    pag_event ev = {.kind = PAG_EV_SESSION_INFO, .used = pb_wall_ms(), .meta_json = mj};
    pct__emit(t->s, &ev);
    free(mj);
}

static void remove_dir(char *dir) {
    if (!dir[0]) return;
    DIR *d = opendir(dir);
    struct dirent *e;
    while (d && (e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        unlinkat(dirfd(d), e->d_name, 0);
    }
    if (d) closedir(d);
    rmdir(dir);
    dir[0] = '\0';
}

/* ---------------------------------------------------------------- running */

static char *read_out(const char *dir) {
    char *data = NULL;
    size_t len = 0;
    if (!dir[0] || ptl_read_beneath(dir, "out", TASK_OUT_KEEP, true, &data, &len) != PTL_F_OK)
        return NULL;
    return data;
}

/* pl_run, with the task's own flag turned into the placement cancel by a cancel link. */
static bool place_run(pl_ctx *pc, const pl_request *rq, const pl_policy *pol, pl_cancel *cancel,
                      atomic_int *flag, pl_report *rep, pl_error *err) {
    pl_cancel_link link;
    pl_cancel_link_start(&link, flag, cancel);
    if (!link.started) {
        snprintf(err->message, sizeof err->message, "no thread for the cancel watcher");
        return false;
    }
    bool ran = pl_run(pc, rq, pol, cancel, rep, err);
    pl_cancel_link_stop(&link);
    return ran;
}

static void run_shell(pct_task *t, pag_tool_output *o) {
    pct_sess *s = t->s;
    pct_controller *c = s->c;
    pj_t *a = pj_loads(t->args, 0, NULL);
    const char *cmd = pj_string_value(pj_object_get(a, "command"));
    pj_t *to = pj_object_get(a, "timeout_ms");
    long long timeout = pj_is_integer(to) ? pj_integer_value(to) : TASK_TIMEOUT_MS;
    if (timeout < 1 || timeout > TASK_TIMEOUT_MAX_MS) timeout = TASK_TIMEOUT_MS;
    if (c->sandbox.off || !c->sandbox.place) {
        /* the user's sandbox mode is off: the shell tool as is (it warns), output at the end */
        ptl_ctx ctx = {.cwd = s->cwd,
                       .cancel = &t->cancel,
                       .timeout_ms = (long)timeout,
                       .max_output = TASK_OUT_KEEP,
                       .sandbox = &c->sandbox};
        ptl_result r;
        ptl_status st = ptl_run(ptl_find("shell"), t->args, &ctx, &r);
        o->output = r.output;
        r.output = NULL;
        o->is_error = st != PTL_OK || r.is_error;
        t->exit_code = r.exit_code;
        ptl_result_clear(&r);
        pj_decref(a);
        return;
    }
    size_t n = strlen(cmd) + strlen(t->dir) + 32;
    char *wrapped = malloc(n);
    const char **writable = calloc(c->policy.nwritable + 1, sizeof *writable);
    if (!wrapped || !writable) {
        free(wrapped);
        free(writable);
        pj_decref(a);
        o->output = strdup("background shell: out of memory");
        o->is_error = true;
        return;
    }
    snprintf(wrapped, n, "{ %s\n} >%s/out 2>&1", cmd, t->dir);
    for (size_t i = 0; i < c->policy.nwritable; i++)
        writable[i] = c->policy.writable[i];
    writable[c->policy.nwritable] = t->dir;
    pl_policy pol = c->policy;
    pol.writable = writable;
    pol.nwritable = c->policy.nwritable + 1;
    pl_request rq = {.run_id = t->id,
                     .kind = PL_PROGRAM_SHELL,
                     .program = wrapped,
                     .requirements = PL_REQ_SHELL,
                     .state_class = PL_STATE_NATIVE_WORKSPACE_REF,
                     .workspace = s->cwd,
                     .network = pol.network_allowed,
                     .limits = {.cpu_ms = (uint32_t)timeout,
                                .wall_ms = (uint32_t)timeout,
                                .memory_mib = 2048,
                                .processes = 256}};
    pl_cancel *pc = pl_cancel_new();
    pl_report rep;
    memset(&rep, 0, sizeof rep);
    pl_error err = {0};
    bool ran = false;
    if (pc) {
        ran = place_run(c->place, &rq, &pol, pc, &t->cancel, &rep, &err);
        pl_cancel_free(pc);
    }
    char *out = read_out(t->dir);
    const char *body = out ? out : "";
    char tail[200];
    if (!ran)
        snprintf(tail, sizeof tail, "[not run: %.150s]", err.message[0] ? err.message : "failed");
    else
        snprintf(tail, sizeof tail, "[exit code %d%s]", rep.result.exit_code,
                 rep.result.stop != PL_STOP_NONE ? "; stopped by a limit or a cancel" : "");
    size_t k = strlen(body) + strlen(tail) + 2;
    o->output = malloc(k);
    if (o->output)
        snprintf(o->output, k, "%s%s%s", body, *body && body[strlen(body) - 1] != '\n' ? "\n" : "",
                 tail);
    o->is_error = !ran || !rep.result.ok;
    t->exit_code = ran ? rep.result.exit_code : -1;
    free(out);
    pl_report_clear(&rep);
    free(wrapped);
    free(writable);
    pj_decref(a);
}

static void *task_main(void *arg) {
    pct_task *t = arg;
    pct_sess *s = t->s;
    pct_controller *c = s->c;
    pag_tool_output o = {0};
    char agent_id[PST_ID_LEN] = "";
    if (t->subagent)
        pct__subagent_run_bg(s, t->args, &t->cancel, &o, t->call_id, t->model, agent_id);
    else
        run_shell(t, &o);
    pthread_mutex_lock(&s->mu);
    t->state = atomic_load(&t->cancel) ? T_STOPPED : o.is_error ? T_FAILED : T_COMPLETED;
    t->output = o.output ? o.output : strdup("");
    o.output = NULL;
    t->ended_ms = pb_mono_ms();
    task_state st = t->state;
    remove_dir(t->dir);
    s->live_tasks--;
    pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->mu);
    pag_tool_output_clear(&o);
    announce(t, st, t->exit_code, agent_id);
    pct__sess_release(s);
    pb_count_leave(&c->mu, &c->cv, &c->connectors);
    return NULL;
}

/* ---------------------------------------------------------------- the tools */

bool pct__task_background(const char *name, const char *args) {
    if (!name || (strcmp(name, "shell") && strcmp(name, "task"))) return false;
    pj_t *a = pj_loads(args ? args : "{}", 0, NULL);
    bool bg = pj_is_true(pj_object_get(a, "background"));
    pj_decref(a);
    return bg;
}

static int say(pag_tool_output *out, bool error, const char *text) {
    out->output = strdup(text);
    out->is_error = error;
    return out->output ? 0 : -1;
}

/* One task that ended (or never started), with its output directory. */
static void task_free(pct_task *t) {
    if (!t) return;
    remove_dir(t->dir);
    free(t->args);
    free(t->model);
    free(t->output);
    free(t);
}

int pct__task_start(pct_sess *s, const char *name, const char *args, pag_tool_output *out) {
    bool subagent = !strcmp(name, "task");
    pj_t *a = pj_loads(args, 0, NULL);
    pj_object_del(a, "background");
    const char *label = pj_string_value(pj_object_get(a, subagent ? "description" : "command"));
    if (!subagent && !label) {
        pj_decref(a);
        return say(out, true, "shell: \"command\" (a string) is required");
    }
    if (subagent && !pj_string_value(pj_object_get(a, "prompt"))) {
        pj_decref(a);
        return say(out, true, "task: \"prompt\" (and \"description\") are required");
    }
    char shown[201]; /* the command or the subagent's description, as the answer shows it */
    snprintf(shown, sizeof shown, "%s", label ? label : "subagent task");
    pct_task *t = calloc(1, sizeof *t);
    if (t) {
        t->s = s;
        t->subagent = subagent;
        t->args = pj_dumps(a, PJ_COMPACT);
        t->model = s->model_applied ? strdup(s->model_applied) : NULL;
        snprintf(t->call_id, sizeof t->call_id, "%s", s->cur_call);
        atomic_init(&t->cancel, 0);
        t->started_ms = pb_mono_ms();
    }
    pj_decref(a);
    if (!t || !t->args || (s->model_applied && !t->model)) goto nomem;
    if (!subagent) {
        snprintf(t->dir, sizeof t->dir, "/tmp/peri-task-XXXXXX");
        if (!mkdtemp(t->dir)) {
            t->dir[0] = '\0';
            task_free(t);
            return say(out, true, "shell: cannot create the background task's output directory");
        }
    }
    pct_controller *c = s->c;
    pthread_mutex_lock(&s->mu);
    snprintf(t->id, sizeof t->id, "task-%u", ++s->task_seq);
    t->next = s->tasks;
    s->tasks = t;
    s->live_tasks++;
    pthread_mutex_unlock(&s->mu);
    pthread_mutex_lock(&c->mu);
    c->connectors++;
    pthread_mutex_unlock(&c->mu);
    pct__sess_retain(s);
    announce(t, T_RUNNING, 0, NULL); /* before its thread can announce its end */
    if (pb_thread_detached(task_main, t) != 0) {
        pthread_mutex_lock(&s->mu);
        t->state = T_FAILED;
        t->output = strdup("the task could not start");
        s->live_tasks--;
        remove_dir(t->dir);
        pthread_cond_broadcast(&s->cv);
        pthread_mutex_unlock(&s->mu);
        pct__sess_release(s);
        pb_count_leave(&c->mu, &c->cv, &c->connectors);
        announce(t, T_FAILED, 0, NULL);
        return say(out, true, "the background task could not start (no thread)");
    }
    char msg[400];
    snprintf(msg, sizeof msg,
             "Started background task %s (%s: %s). It runs on while you continue; use "
             "task_output, task_wait or task_stop with \"task_id\": \"%s\".",
             t->id, subagent ? "subagent" : "shell", shown, t->id);
    pj_t *meta = pj_pack("{s:{s:s, s:s}}", "peri.task", "taskId", t->id, "status", "started");
    out->meta_json = meta ? pj_dumps(meta, PJ_COMPACT) : NULL;
    pj_decref(meta);
    return say(out, false, msg);
nomem:
    task_free(t);
    return -1;
}

void pct__tasks_free(pct_sess *s) {
    while (s->tasks) {
        pct_task *t = s->tasks;
        s->tasks = t->next;
        task_free(t);
    }
}

static pct_task *find(pct_sess *s, const char *id) {
    for (pct_task *t = s->tasks; id && t; t = t->next)
        if (!strcmp(t->id, id)) return t;
    return NULL;
}

/* The status line and the output (so far), its last max bytes (s->mu held). */
static char *report(pct_task *t, size_t max) {
    char *live = NULL;
    const char *body = t->output;
    if (t->state == T_RUNNING) {
        live = t->subagent ? NULL : read_out(t->dir);
        body = live ? live : t->subagent ? "(a subagent's answer comes when it ends)" : "";
    }
    size_t len = strlen(body);
    const char *from = body;
    bool cut = len > max;
    if (cut) {
        from = body + len - max;
        while (*from && ((unsigned char)*from & 0xC0) == 0x80)
            from++; /* whole characters */
    }
    int64_t end = t->state == T_RUNNING ? pb_mono_ms() : t->ended_ms;
    char head[200];
    snprintf(head, sizeof head, "[task %s (%s): %s after %lld s%s]\n", t->id,
             t->subagent ? "subagent" : "shell", state_name(t->state),
             (long long)((end - t->started_ms) / 1000), cut ? "; earlier output cut" : "");
    size_t n = strlen(head) + strlen(from) + 1;
    char *out = malloc(n);
    if (out) snprintf(out, n, "%s%s", head, from);
    free(live);
    return out;
}

int pct__task_tool(pct_sess *s, const char *name, const char *args, atomic_int *cancel,
                   pag_tool_output *out) {
    if (!name ||
        (strcmp(name, "task_output") && strcmp(name, "task_wait") && strcmp(name, "task_stop")))
        return -2;
    pj_t *a = pj_loads(args ? args : "{}", 0, NULL);
    const char *id = pj_string_value(pj_object_get(a, "task_id"));
    pj_t *mb = pj_object_get(a, "max_bytes");
    size_t max = pj_is_integer(mb) && pj_integer_value(mb) > 0 ? (size_t)pj_integer_value(mb)
                                                               : TASK_OUT_DEFAULT;
    if (max > TASK_OUT_MAX) max = TASK_OUT_MAX;
    pj_t *tm = pj_object_get(a, "timeout_ms");
    long wait_ms =
        pj_is_integer(tm) && pj_integer_value(tm) >= 0 ? (long)pj_integer_value(tm) : 30000;
    if (wait_ms > TASK_WAIT_MAX_MS) wait_ms = TASK_WAIT_MAX_MS;
    int rc;
    pthread_mutex_lock(&s->mu);
    pct_task *t = find(s, id);
    if (!t) {
        pthread_mutex_unlock(&s->mu);
        char msg[400];
        snprintf(msg, sizeof msg,
                 "%s: no task \"%.60s\" in this session. Tasks belong to the process that "
                 "started them: a restart or a reload of the session never revives one, and "
                 "the result of an old task is not delivered again.",
                 name, id ? id : "");
        pj_decref(a);
        return say(out, true, msg);
    }
    if (!strcmp(name, "task_stop")) atomic_store(&t->cancel, 1);
    if (strcmp(name, "task_output") != 0) {
        /* task_wait: until it ends, the bound or a cancel of the turn; task_stop: until
         * the stopped task has ended (bounded) */
        int64_t dl = pb_mono_ms() + (!strcmp(name, "task_stop") ? 10000 : wait_ms);
        while (t->state == T_RUNNING && pb_mono_ms() < dl && !(cancel && atomic_load(cancel))) {
            struct timespec ts = pb_deadline(CLOCK_REALTIME, 50);
            pthread_cond_timedwait(&s->cv, &s->mu, &ts);
        }
    }
    char *text = report(t, max);
    pthread_mutex_unlock(&s->mu);
    out->output = text;
    rc = text ? 0 : -1;
    if (cancel && atomic_load(cancel) && !strcmp(name, "task_wait")) rc = text ? 1 : -1;
    pj_decref(a);
    return rc;
}

void pct__tasks_cancel(pct_sess *s) {
    pthread_mutex_lock(&s->mu);
    for (pct_task *t = s->tasks; t; t = t->next)
        if (t->state == T_RUNNING) atomic_store(&t->cancel, 1);
    pthread_mutex_unlock(&s->mu);
}

const char *pct__tasks_live(pct_sess *s) {
    for (pct_task *t = s->tasks; t; t = t->next)
        if (t->state == T_RUNNING) return t->id;
    return NULL;
}

/* ---------------------------------------------------------------- the catalogue */

int pct__tasks_catalogue(pct_controller *c) {
    for (size_t i = 0; i < c->ntools; i++) {
        if (strcmp(c->tools[i].name, "shell") != 0) continue;
        pj_t *sch = pj_loads(c->tools[i].schema_json, 0, NULL);
        pj_t *props = pj_object_get(sch, "properties");
        if (!pj_is_object(props)) {
            pj_decref(sch);
            return 0; /* an unknown shape: left as it is */
        }
        pj_object_set_new(props, "background",
                          pj_pack("{s:s, s:s}", "type", "boolean", "description",
                                  "Run in the background: returns a task id at once "
                                  "(task_output, task_wait, task_stop)"));
        c->shell_schema = pj_dumps(sch, PJ_COMPACT | PJ_PRESERVE_ORDER);
        pj_decref(sch);
        if (!c->shell_schema) return -1;
        c->tools[i].schema_json = c->shell_schema;
    }
    return 0;
}
