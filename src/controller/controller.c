/*
 * controller.c — composes store + runtime + tools + agent per session.
 *
 * Owns the session lifecycle on the way in (new, load, resume, list, delete) and
 * the ports the agent sees (model, tools, permission, persistence, events). Turn
 * execution, cancel and close live in turns.c.
 */
#include "controller/ctl_impl.h"

#include "peri/json.h"
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#define PCT_CONNECT_WAIT_S 65 /* at exit: the longest wait for MCP servers still starting */

pct_status pct__fail(pct_error *err, pct_status st, const char *msg) {
    if (!err) return st;
    err->status = st;
    snprintf(err->message, sizeof err->message, "%.250s", msg);
    return st;
}

static void set_err(pct_error *err, pct_status st, const char *fmt, const char *arg) {
    char tmp[1024];
    snprintf(tmp, sizeof tmp, fmt, arg ? arg : "");
    pct__fail(err, st, tmp);
}

/* The stored thread id into *th (the caller clears it): PCT_NOT_FOUND for an unknown or
 * malformed id, PCT_FAILED when the store fails, with the message in err. */
static pct_status stored_thread(pct_controller *c, const char *id, pst_thread *th, pct_error *err) {
    pst_error pe;
    pst_status ps = pst_thread_get(c->store, id, th, &pe);
    if (ps == PST_ERR_NOT_FOUND || ps == PST_ERR_ARG) {
        set_err(err, PCT_NOT_FOUND, "Session not found: %s", id);
        return PCT_NOT_FOUND;
    }
    if (ps != PST_OK) {
        set_err(err, PCT_FAILED, "store: %s", pe.message);
        return PCT_FAILED;
    }
    return PCT_OK;
}

/* ---------------------------------------------------------------- refcounting */

void pct__sess_retain(void *h) {
    atomic_fetch_add(&((pct_sess *)h)->refs, 1);
}

void pct__sess_release(pct_sess *s) {
    if (!s || atomic_fetch_sub(&s->refs, 1) != 1) return;
    pag_cron_free(s->cron); /* no schedule fires after this; none is ever revived */
    pag_session_free(s->agent);
    pct__mw_free(s);
    pct__tasks_free(s);      /* ended: their threads held a reference until the end */
    pmcp_pool_close(s->mcp); /* no server process survives the session */
    pmcp_pool_close(s->ext);
    free(s->mcp_names);
    free(s->mcp_errors);
    free(s->mcp_final);
    free((char *)s->oauth.dir); /* after the pools: they borrow it */
    free(s->tools);
    while (s->old_tools) {
        pct_old_tools *o = s->old_tools;
        s->old_tools = o->next;
        free(o->tools);
        free(o);
    }
    pm_client_free(s->client);
    pthread_mutex_destroy(&s->mu);
    pthread_cond_destroy(&s->cv);
    pthread_mutex_destroy(&s->emit_mu);
    pb_free_all(s->cwd, s->frozen, s->model_spec, s->model_applied, s->hidden, s->mcp_json);
    pb_strv_free(s->allow_always, s->nallow);
    pb_strv_free(s->reject_always, s->nreject);
    free(s);
}

pct_sess *pct__sess_get(pct_controller *c, const char *id) {
    return id ? prt_acquire(c->rt, id) : NULL;
}

/* ---------------------------------------------------------------- events */

void pct__turn_id(char out[48], uint64_t epoch, uint64_t n) {
    snprintf(out, 48, "turn-%llu-%llu", (unsigned long long)epoch, (unsigned long long)n);
}

void pct__attempt_id(char out[48], uint64_t epoch, uint64_t n) {
    snprintf(out, 48, "attempt-%llu-%llu", (unsigned long long)epoch, (unsigned long long)n);
}

void pct__emit_agent(pct_sess *s, pag_event *ev, const char *agent_id) {
    pthread_mutex_lock(&s->emit_mu);
    /* A turn's event passes only while that turn is the running attempt and not gated
     * by a cancel; events outside turns (turn 0) always pass. */
    bool pass = ev->turn == 0 || (ev->turn > s->gate_gen && ev->turn == s->cur_gen);
    uint64_t seq = pass ? prt_next_seq_of(s->c->rt, s->id, s) : 0;
    if (seq) {
        ev->session_id = s->id;
        ev->session_seq = seq;
        pct_event_ids ids = {.session_epoch = s->epoch,
                             .turn_id = ev->turn ? s->cur_turn_id : NULL,
                             .attempt_id = ev->turn ? s->cur_attempt_id : NULL,
                             .agent_id = agent_id ? agent_id : s->id};
        if (s->c->sink.on_event_ids)
            s->c->sink.on_event_ids(s->c->sink.ctx, ev, &ids);
        else if (s->c->sink.on_event)
            s->c->sink.on_event(s->c->sink.ctx, ev);
    }
    pthread_mutex_unlock(&s->emit_mu);
}

void pct__emit(pct_sess *s, pag_event *ev) {
    pct__emit_agent(s, ev, NULL);
}

/* ---------------------------------------------------------------- agent ports */

static pm_status port_reason(void *ctx, const pm_request *req, pm_event_fn on_event, void *ev_ctx,
                             atomic_int *cancel, pm_response *out, pm_error *err) {
    pct_sess *s = ctx;
    if (!s->client && !(s->client = pm_client_new(&s->model_cfg, err))) {
        memset(out, 0, sizeof *out);
        return err->status;
    }
    /* the session's thinking effort, when its model takes one */
    pm_request r = *req;
    pthread_mutex_lock(&s->mu);
    static const char *const efforts[] = {"low", "medium", "high"};
    for (size_t i = 0; i < 3; i++)
        if (!strcmp(s->effort, efforts[i])) r.reasoning_effort = efforts[i];
    pthread_mutex_unlock(&s->mu);
    if (r.reasoning_effort && !pct__model_effort(s->settings_applied, s->model_applied))
        r.reasoning_effort = NULL;
    pm_status st = pm_stream(s->client, &r, on_event, ev_ctx, cancel, out, err);
    s->tel_calls++; /* (the worker thread's own counters) */
    s->tel_in += out->usage.input_tokens;
    s->tel_out += out->usage.output_tokens;
    return st;
}

static int port_run_tool(void *ctx, const char *name, const char *args, atomic_int *cancel,
                         pag_tool_output *out) {
    return pct__run_tool(ctx, name, args, cancel, out, false);
}

/* MCP progress: a notifications/progress of a running MCP call becomes a
 * tool_call_update of that call (status in_progress, a text content line and
 * _meta["peri.progress"] = {progress, total?, message?}), at most one per
 * PCT_PROGRESS_MS per call, except that the last step (progress == total) always
 * passes. Runs on the MCP client's reader thread while the caller waits, so the
 * struct on the caller's stack is alive and every update precedes the final one. */
#define PCT_PROGRESS_MS 100

typedef struct progress_ctx {
    pct_sess *s;
    char call_id[128];
    uint64_t turn;
    int64_t last_ms; /* monotonic ms of the last update sent, 0 = none */
} progress_ctx;

/* 3 rather than 3.0 when the number is whole (what servers usually send). */
static pj_t *json_num(double v) {
    if (v > -9e15 && v < 9e15 && v == (double)(pj_int_t)v) return pj_integer((pj_int_t)v);
    return pj_real(v);
}

static void on_progress(void *ctx, double progress, double total, const char *message) {
    progress_ctx *pc = ctx;
    int64_t now = pb_mono_ms();
    bool last = total > 0 && progress >= total;
    if (pc->last_ms && now - pc->last_ms < PCT_PROGRESS_MS && !last) return;
    pc->last_ms = now;
    pj_t *meta = pj_pack("{s:{s:o}}", "peri.progress", "progress", json_num(progress));
    pj_t *pm = pj_object_get(meta, "peri.progress");
    if (total > 0) pj_object_set_new(pm, "total", json_num(total));
    if (message) pj_object_set_new(pm, "message", pj_string(message));
    char line[600];
    if (total > 0)
        snprintf(line, sizeof line, "%s%s%g/%g", message ? message : "", message ? " " : "",
                 progress, total);
    else
        snprintf(line, sizeof line, "%s%s%g", message ? message : "", message ? " " : "", progress);
    pj_t *content = pj_pack("[{s:s, s:{s:s, s:s}}]", "type", "content", "content", "type", "text",
                            "text", line);
    char *mt = meta ? pj_dumps(meta, PJ_COMPACT) : NULL;
    char *ct = content ? pj_dumps(content, PJ_COMPACT) : NULL;
    pj_decref(meta);
    pj_decref(content);
    if (mt && ct) {
        pag_event ev = {.kind = PAG_EV_TOOL_UPDATE,
                        .turn = pc->turn,
                        .tool_call_id = pc->call_id,
                        .status = "in_progress",
                        .content_json = ct,
                        .meta_json = mt};
        pct__emit(pc->s, &ev);
    }
    free(mt);
    free(ct);
}

int pct__run_tool(pct_sess *s, const char *name, const char *args, atomic_int *cancel,
                  pag_tool_output *out, bool child) {
    /* The workspace tools (through the builtin in-process Workspace server) and every
     * configured MCP server's tools: one route, the session's pool. */
    if (!child && pct__task_background(name, args)) return pct__task_start(s, name, args, out);
    pmcp_pool *pool = pmcp_pool_has(s->mcp, name) ? s->mcp : pct__mcp_ext(s);
    if (pool && pmcp_pool_has(pool, name)) {
        progress_ctx pc = {.s = s, .turn = pag_session_turn_gen(s->agent)};
        snprintf(pc.call_id, sizeof pc.call_id, "%s", s->cur_call);
        bool forward = !child && s->cur_call[0];
        pmcp_pool_result r;
        int rc = pmcp_pool_run(pool, name, args, cancel, forward ? on_progress : NULL,
                               forward ? &pc : NULL, &r);
        out->output = r.output;
        out->is_error = r.is_error;
        out->content_json = r.content_json;
        out->locations_json = r.locations_json;
        out->meta_json = r.meta_json;
        out->raw_output_json = r.raw_output_json;
        memset(&r, 0, sizeof r);
        return rc;
    }
    if (!child && name && strcmp(name, "task") == 0) return pct__subagent_run(s, args, cancel, out);
    int tr = child ? -2 : pct__task_tool(s, name, args, cancel, out);
    if (tr != -2) return tr;
    if (name && strcmp(name, "ask_user") == 0) return pct__ask_user_run(s, args, cancel, out);
    int hr = pct__host_tool(s, name, args, out);
    if (hr != -2) return hr;
    return -1; /* unknown: the workspace tools are all served by the pool */
}

/* the tools' client file system, bound to this session. */
/* A background task of the session (a shell, or a subagent's calls) may be changing the
 * workspace between the tools' checks and the editor's open of a path by name: while one
 * lives the client's file system is "not offered" and the tools use the disk through
 * their descriptors (src/tools/fs.c, docs/tools-confinement.md). */
static bool tasks_live(pct_sess *s) {
    pthread_mutex_lock(&s->mu);
    bool live = s->live_tasks > 0;
    pthread_mutex_unlock(&s->mu);
    return live;
}

static int client_read(void *ctx, const char *abs, char **data, size_t *len, atomic_int *cancel) {
    pct_sess *s = ctx;
    const pct_sink *k = &s->c->sink;
    if (!(k->fs_read_cancel || k->fs_read) || tasks_live(s)) return 1;
    return k->fs_read_cancel ? k->fs_read_cancel(k->ctx, s->id, abs, data, len, cancel)
                             : k->fs_read(k->ctx, s->id, abs, data, len);
}

static int client_write(void *ctx, const char *abs, const char *data, size_t len,
                        atomic_int *cancel) {
    pct_sess *s = ctx;
    const pct_sink *k = &s->c->sink;
    if (!(k->fs_write_cancel || k->fs_write) || tasks_live(s)) return 1;
    return k->fs_write_cancel ? k->fs_write_cancel(k->ctx, s->id, abs, data, len, cancel)
                              : k->fs_write(k->ctx, s->id, abs, data, len);
}

static int client_term_run(void *ctx, const char *cwd, const char *command, long long timeout_ms,
                           size_t max_output, atomic_int *cancel, ptl_term_result *out) {
    pct_sess *s = ctx;
    if (!s->c->sink.term_run) return 1;
    return s->c->sink.term_run(s->c->sink.ctx, s->id, cwd, command, timeout_ms, max_output, cancel,
                               out);
}

static char *port_tool_title(void *ctx, const char *name, const char *args) {
    (void)ctx;
    return pct__tool_title(name, args);
}

/* Titles of the host's and the middlewares' tools; the model's text in them made
 * visible (pb_visible_prompt), as in the builtin tools' titles. */
char *pct__tool_title(const char *name, const char *args) {
    const ptl_tool *t = ptl_find(name);
    if (t) return ptl_title(t, args);
    if (!name) return NULL;
    pj_t *a = pj_loads(args ? args : "{}", 0, NULL);
    const char *d = pj_string_value(pj_object_get(a, "description"));
    const char *n = pj_string_value(pj_object_get(a, "name"));
    const char *sched = pj_string_value(pj_object_get(a, "schedule"));
    const char *prompt = pj_string_value(pj_object_get(a, "prompt"));
    char *out = NULL, *v1 = NULL, *v2 = NULL;
    if (!strcmp(name, "task")) {
        v1 = pb_visible_prompt(d ? d : "task", 150, false);
        if (v1 && asprintf(&out, "Subagent: %s", v1) < 0) out = NULL;
    } else if (!strcmp(name, "skill")) {
        v1 = pb_visible_prompt(n ? n : "", 150, false);
        if (v1 && asprintf(&out, "Load skill %s", v1) < 0) out = NULL;
    } else if (!strcmp(name, "todo")) {
        out = strdup("Update plan");
    } else if (!strcmp(name, "cron_create")) {
        /* the permission prompt says when and what will run, unattended */
        v1 = pb_visible_prompt(sched ? sched : "", 200, false);
        v2 = pb_visible_prompt(prompt ? prompt : "", 4000, false);
        if (v1 && v2 && asprintf(&out, "Schedule `%s`: run the prompt \"%s\"", v1, v2) < 0)
            out = NULL;
    }
    free(v1);
    free(v2);
    pj_decref(a);
    return out;
}

static bool in_list(char **list, size_t n, const char *name) {
    for (size_t i = 0; i < n; i++)
        if (!strcmp(list[i], name)) return true;
    return false;
}

/* Remembers an "always" answer for the session (and persists it). */
static void remember(pct_sess *s, const char *tool, bool allow) {
    pthread_mutex_lock(&s->mu);
    char ***list = allow ? &s->allow_always : &s->reject_always;
    size_t *n = allow ? &s->nallow : &s->nreject;
    if (!in_list(*list, *n, tool)) {
        char **nl = realloc(*list, (*n + 1) * sizeof *nl);
        char *copy = strdup(tool);
        if (nl) *list = nl;
        if (nl && copy)
            (*list)[(*n)++] = copy;
        else
            free(copy);
    }
    pthread_mutex_unlock(&s->mu);
    pct__save_meta(s);
}

bool pct__tool_needs_permission(void *ctx, const char *name, const char *args) {
    (void)ctx;
    const ptl_tool *t = ptl_find(name);
    return t && ptl_tool_needs_permission(t, args);
}

static void warn_unsandboxed(void *ud, const char *msg) {
    pct_controller *c = ud;
    pb_log(&c->log, PB_LOG_WARN, "%s", msg);
}

pag_permission pct__port_ask(void *ctx, const pag_event *call, atomic_int *cancel) {
    pct_sess *s = ctx;
    const char *tool = call->tool_name ? call->tool_name : "";
    if (pag_settings_allows(s->c->settings, tool)) return PAG_PERM_ALLOW;
    pthread_mutex_lock(&s->mu);
    bool allow = in_list(s->allow_always, s->nallow, tool);
    bool reject = in_list(s->reject_always, s->nreject, tool);
    pthread_mutex_unlock(&s->mu);
    if (reject) return PAG_PERM_REJECT;
    if (allow || pag_project_allows(s->c->home, s->cwd, tool)) return PAG_PERM_ALLOW;
    if (!s->c->sink.ask_permission) return PAG_PERM_REJECT;
    pag_permission p = s->c->sink.ask_permission(s->c->sink.ctx, s->id, call, cancel);
    switch (p) {
    case PAG_PERM_TRUST_PROJECT: return PAG_PERM_REJECT; /* not an answer to a tool call */
    case PAG_PERM_ALLOW_ALWAYS: remember(s, tool, true); return PAG_PERM_ALLOW;
    case PAG_PERM_REJECT_ALWAYS: remember(s, tool, false); return PAG_PERM_REJECT;
    case PAG_PERM_ALLOW_PROJECT: {
        /* user state only: the project's own files are never written for this */
        remember(s, tool, true);
        char e[256];
        if (pag_trust_user_allow_add(s->c->home, s->cwd, tool, e, sizeof e) != 0)
            pb_log(&s->c->log, PB_LOG_WARN, "session %s: %s", s->id, e);
        return PAG_PERM_ALLOW;
    }
    default: return p;
    }
}

int pct__persist(pst_store *store, const char *id, const pm_message *msgs, size_t n,
                 int64_t *first_seq, pst_error *e) {
    pst_message_in in[2];
    char *json[2] = {NULL, NULL};
    int rc = -1;
    if (n > 2) return -1;
    for (size_t i = 0; i < n; i++) {
        json[i] = pm_message_to_json(&msgs[i]);
        if (!json[i]) goto out;
        in[i] = (pst_message_in){.role = pm_role_name(msgs[i].role), .content = json[i]};
    }
    rc = pst_messages_append(store, id, in, n, first_seq, e) == PST_OK ? 0 : -2;
out:
    free(json[0]);
    free(json[1]);
    return rc;
}

static int port_persist(void *ctx, const pm_message *msgs, size_t n) {
    pct_sess *s = ctx;
    pst_error e;
    int64_t first = 0;
    int rc = pct__persist(s->c->store, s->id, msgs, n, &first, &e);
    /* the turn's user message is the only user-role batch the agent persists */
    if (rc == 0) pct__turn_stored(s, n > 0 && msgs[0].role == PM_ROLE_USER, first, n);
    if (rc != -2) return rc;
    atomic_store(&s->persist_bad, true); /* close reports it until the store answers */
    pb_log(&s->c->log, PB_LOG_ERROR, "persisting session %s failed: %s", s->id, e.message);
    return -1;
}

static void port_emit(void *ctx, const pag_event *ev) {
    pct_sess *s = ctx;
    pag_event copy = *ev;
    if (ev->kind == PAG_EV_TOOL_UPDATE && ev->status && !strcmp(ev->status, "in_progress"))
        snprintf(s->cur_call, sizeof s->cur_call, "%s", ev->tool_call_id ? ev->tool_call_id : "");
    if (ev->kind == PAG_EV_USAGE) {
        /* size = the model's context window; cost when its prices are known */
        const char *spec = s->model_applied;
        int64_t window = pag_model_context_window(s->c->settings, spec);
        copy.size = window > 0 ? window : s->c->settings->context_budget;
        double pin, pout;
        if (pag_model_price(s->c->settings, spec, &pin, &pout)) {
            pthread_mutex_lock(&s->emit_mu);
            s->cost_usd +=
                ((double)ev->input_tokens * pin + (double)ev->output_tokens * pout) / 1e6;
            copy.cost_usd = s->cost_usd;
            pthread_mutex_unlock(&s->emit_mu);
            copy.has_cost = true;
        }
    }
    pct__emit(s, &copy);
}

/* ---------------------------------------------------------------- lifecycle */

/* Placement: the room (with Ruby and Python when their builds are configured) and the
 * native sandbox around it. False with err filled; what was made is freed by
 * close_placement. */
static bool open_placement(pct_controller *c, const pct_config *cfg, pct_error *err) {
    pr_error re;
    pl_error le;
    /* real clocks: a program the agent runs for the user asking the time wants it */
    pr_host_config rc = {.code_cache_dir = cfg->code_cache_dir, .real_clocks = true};
    c->room = pr_host_new(&rc, &re);
    if (!c->room) {
        char msg[200];
        snprintf(msg, sizeof msg, "%.190s", re.message);
        set_err(err, PCT_FAILED, "room: %s", msg);
        return false;
    }
    if (cfg->ruby_wasm && !(c->ruby = pr_ruby_new(c->room, cfg->ruby_wasm))) {
        set_err(err, PCT_FAILED, "out of memory%s", NULL);
        return false;
    }
    c->ruby_hook = pl_ruby_room_hook(c->ruby);
    if (cfg->python_dir && !(c->python = pr_python_new(c->room, cfg->python_dir))) {
        set_err(err, PCT_FAILED, "out of memory%s", NULL);
        return false;
    }
    c->python_hook = pl_python_room_hook(c->python);
    pl_config pcfg = {.room = c->room,
                      .wasm_runner = cfg->wasm_runner,
                      .nwasm_runner = cfg->nwasm_runner,
                      .bwrap = cfg->bwrap,
                      .ruby_hook = c->ruby ? &c->ruby_hook : NULL,
                      .python_hook = c->python ? &c->python_hook : NULL};
    c->place = pl_new(&pcfg, &le);
    if (!c->place) {
        set_err(err, PCT_FAILED, "placement: %s", le.message);
        return false;
    }
    return true;
}

/* Placement before the room it runs in (and the languages the room hosts); any part may
 * be NULL. */
static void close_placement(pct_controller *c) {
    pl_free(c->place);
    pr_ruby_free(c->ruby);
    pr_python_free(c->python);
    pr_host_free(c->room);
}

/* Frees what a controller owns, in the order its parts depend on each other (placement
 * before the room it runs in, the store last but the runtime). Also the failure path of
 * pct_new, so every part may still be NULL. */
static void destroy(pct_controller *c) {
    pct__tel_free(c->tel, true);
    close_placement(c);
    pst_close(c->store);
    prt_free(c->rt);
    pb_free_all(c->tools, c->shell_schema, c->home, c->disc_json, c->prot_store);
    for (size_t i = 0; i < sizeof c->prot_own / sizeof *c->prot_own; i++)
        free(c->prot_own[i]);
    while (c->old_settings) {
        pct_old_settings *o = c->old_settings;
        c->old_settings = o->next;
        pag_settings_clear(o->s);
        free(o->s);
        free(o);
    }
    pthread_mutex_destroy(&c->auth_mu);
    pthread_mutex_destroy(&c->mu);
    pthread_cond_destroy(&c->cv);
    free(c);
}

/* Add dir (absolute; resolved where it exists) to the protected directories. */
static bool protect_add(pct_controller *c, const char *dir) {
    char r[PATH_MAX];
    if (!dir || dir[0] != '/' || c->policy.nprotect >= sizeof c->prot_v / sizeof *c->prot_v)
        return true;
    char *p = strdup(realpath(dir, r) ? r : dir);
    if (!p) return false;
    c->prot_own[c->policy.nprotect] = p;
    c->prot_v[c->policy.nprotect++] = p;
    c->policy.protect = c->prot_v;
    return true;
}

/* The host's own state that sandboxed code must never write, even when a writable dir
 * or the workspace contains it (placement's policy.protect): the user's Peri home
 * (~/.peri: settings, trust, OAuth tokens, machine id); the code cache, whose files
 * decide what machine code the host runs (a planted translation, or a "validated"
 * record that lets an invalid module skip validation, would be code execution on the
 * host); the directories of the Ruby and Python builds the room runs (with such a
 * record, a swapped module); and the directory of a local session store. Where one
 * really lives is resolved when it exists. false: out of memory. */
static bool protect_state(pct_controller *c, const pct_config *cfg) {
    char p[PATH_MAX], r[PATH_MAX];
    if (c->home && c->home[0] == '/' &&
        snprintf(p, sizeof p, "%s/.peri", c->home) < (int)sizeof p && !protect_add(c, p))
        return false;
    if (!protect_add(c, cfg->code_cache_dir)) return false;
    if (cfg->ruby_wasm && snprintf(p, sizeof p, "%s", cfg->ruby_wasm) < (int)sizeof p) {
        char *slash = strrchr(p, '/');
        if (slash && slash != p) *slash = '\0';
        if (slash && slash != p && !protect_add(c, p)) return false;
    }
    if (!protect_add(c, cfg->python_dir)) return false;
    const char *db = cfg->db_path;
    if (db && strcmp(db, ":memory:") != 0 && !pst_locator_is_remote(db) &&
        snprintf(p, sizeof p, "%s", db) < (int)sizeof p) {
        char *slash = strrchr(p, '/');
        if (slash == p)
            p[1] = '\0';
        else if (slash)
            *slash = '\0';
        else
            snprintf(p, sizeof p, ".");
        /* never "/" itself: every directory lies inside it */
        if (realpath(p, r) && strcmp(r, "/") != 0) {
            if (!(c->prot_store = strdup(r))) return false;
            c->around_v[0] = c->prot_store;
            c->policy.protect_around = c->around_v;
            c->policy.nprotect_around = 1;
        }
    }
    return true;
}

pct_controller *pct_new(const pct_config *cfg, const pct_sink *sink, pct_error *err) {
    pct_controller *c = calloc(1, sizeof *c);
    if (!c) {
        set_err(err, PCT_FAILED, "out of memory%s", NULL);
        return NULL;
    }
    c->settings = cfg->settings;
    c->sink = *sink;
    c->log = cfg->log;
    if (cfg->home && !(c->home = strdup(cfg->home))) {
        free(c);
        set_err(err, PCT_FAILED, "out of memory%s", NULL);
        return NULL;
    }
    pthread_mutex_init(&c->mu, NULL);
    pthread_cond_init(&c->cv, NULL);
    pthread_mutex_init(&c->auth_mu, NULL);
    pst_error pe;
    c->shared_store = cfg->shared_store;
    if (cfg->machine_id) {
        size_t n = strlen(cfg->machine_id);
        bool ok = n > 0 && n < PST_ID_LEN;
        for (size_t i = 0; ok && i < n; i++)
            ok = cfg->machine_id[i] > ' ' && cfg->machine_id[i] <= '~';
        if (!ok) {
            set_err(err, PCT_BAD_ARG,
                    "machineId must be a nonempty string of at most 36 printable characters%s",
                    NULL);
            goto fail;
        }
        memcpy(c->machine_id, cfg->machine_id, n + 1);
    } else if (!cfg->shared_store && !pst_uuid_v4(c->machine_id)) {
        set_err(err, PCT_FAILED, "no randomness for a machine id%s", NULL);
        goto fail;
    } /* shared store without an identity: machine_id stays "" and nothing is written */
    /* Ownership is enforced by the store itself too: writes go only to this
     * machine's workspaces; a shared store without an identity is opened read-only. */
    pst_open_options so = {.owner_machine_id = c->machine_id[0] ? c->machine_id : NULL,
                           .read_only = !c->machine_id[0],
                           .password = cfg->db_credential};
    c->store = pst_open_ex(cfg->db_path, &so, &pe);
    c->list_all = pst_locator_is_remote(cfg->db_path);
    if (!c->store) {
        set_err(err, PCT_FAILED, "store: %s", pe.message);
        goto fail;
    }
    if (c->machine_id[0] && pst_machine_ensure(c->store, c->machine_id, NULL, &pe) != PST_OK) {
        set_err(err, PCT_FAILED, "store: %s", pe.message);
        goto fail;
    }
    c->rt = prt_new(pct__sess_retain);
    c->ntools = ptl_count();
    c->tools = calloc(c->ntools + PCT_HOST_TOOLS, sizeof *c->tools);
    if (!c->rt || !c->tools) {
        set_err(err, PCT_FAILED, "out of memory%s", NULL);
        goto fail;
    }
    if (!open_placement(c, cfg, err)) goto fail;
    const pag_settings *st = cfg->settings;
    c->policy = (pl_policy){.native = PL_NATIVE_AUTO,
                            .network_allowed = st && st->sandbox_network,
                            .host_network = st && st->sandbox_host_network,
                            .writable = st ? (const char *const *)st->sandbox_writable : NULL,
                            .nwritable = st ? st->nwritable : 0};
    if (!protect_state(c, cfg)) {
        set_err(err, PCT_FAILED, "out of memory%s", NULL);
        goto fail;
    }
    c->sandbox = (ptl_sandbox){.place = c->place,
                               .policy = &c->policy,
                               .off = st && st->sandbox_off,
                               .warn = warn_unsandboxed,
                               .warn_ud = c};
    if (c->policy.host_network)
        pb_log(&c->log, PB_LOG_WARN,
               "settings: \"sandbox\": {\"network\": \"host\"}: sandboxed commands share "
               "this machine's network, its local services and abstract sockets included");
    for (size_t i = 0; i < c->ntools; i++) {
        const ptl_tool *t = ptl_at(i);
        c->tools[i] = (pag_tool_info){.name = ptl_name(t),
                                      .description = ptl_description(t),
                                      .schema_json = ptl_schema_json(t),
                                      .kind = ptl_kind_name(ptl_kind_of(t)),
                                      .needs_permission = ptl_needs_permission(t),
                                      .read_only = ptl_kind_of(t) == PTL_KIND_READ ||
                                                   ptl_kind_of(t) == PTL_KIND_SEARCH};
    }
    pct__host_tools_add(c->tools, &c->ntools);
    if (pct__tasks_catalogue(c) != 0) goto fail;
    if (pct__tel_new(c, cfg, err) != 0) goto fail;
    return c;
fail:
    destroy(c);
    return NULL;
}

int pct_free(pct_controller *c, long wait_ms) {
    if (!c) return 0;
    pct_close_all(c, wait_ms);
    /* MCP servers still starting: each start is bounded by its initialize timeout (30 s
     * by default, and each start may page tools/list), and the connector closes what it
     * started once it sees the session closed, so no server process is left behind. */
    int starting = pb_count_wait(&c->mu, &c->cv, &c->connectors, PCT_CONNECT_WAIT_S * 1000L);
    if (starting > 0) {
        pb_log(&c->log, PB_LOG_WARN, "%d MCP server start(s) still running at exit", starting);
        return 1;
    }
    pct_close_all(c, wait_ms); /* the sessions that waited for them settle now */
    /* Workers still alive after the grace period hold references into c: keep c
     * allocated rather than free memory a thread may still touch. */
    /* a settled worker is only finishing its exit path */
    int left = pb_count_wait(&c->mu, &c->cv, &c->workers, (wait_ms / 1000 + 1) * 1000L);
    if (left > 0) {
        pb_log(&c->log, PB_LOG_WARN, "%d prompt worker(s) still unwinding at exit", left);
        return 1;
    }
    destroy(c);
    return 0;
}

/* The session's tool list: builtin and host tools first, then mcp__<server>__<tool>
 * as the pool has them now. */
static int build_tools(pct_sess *s) {
    pct_controller *c = s->c;
    pmcp_pool *ext = pct__mcp_ext(s);
    s->ext_built = ext;
    size_t nm = pmcp_pool_tool_count(ext);
    pag_tool_info *t = calloc(c->ntools + nm + 1, sizeof *t);
    if (!t) return -1;
    memcpy(t, c->tools, c->ntools * sizeof *t);
    size_t k = c->ntools;
    for (size_t i = 0; i < nm; i++) {
        const pmcp_pool_tool *pt = pmcp_pool_tool_at(ext, i);
        if (!pt) break;
        t[k++] = (pag_tool_info){.name = pt->name,
                                 .description = pt->description,
                                 .schema_json = pt->schema_json,
                                 .kind = "other",
                                 .needs_permission = true};
    }
    s->tools = t;
    s->ntools = k;
    return 0;
}

/* The tool list: before each model request, a server's list_changed is taken in
 * (the pool re-lists that server) and the new list is what the model sees. */
static const pag_tool_info *port_tools_now(void *ctx, size_t *ntools) {
    pct_sess *s = ctx;
    char *why = NULL;
    pmcp_pool *ext = pct__mcp_ext(s);
    int rc = pmcp_pool_refresh(ext, &why);
    if (why) pb_log(&s->c->log, PB_LOG_WARN, "session %s: %s", s->id, why);
    free(why);
    if (rc == 1 || ext != s->ext_built) pct__rebuild_tools(s); /* servers came up */
    *ntools = s->ntools;
    return s->tools;
}

/* A session's tools: the workspace's and the host's, MCP servers' as they change. */
static const pag_tool_ops session_tools = {.now = port_tools_now,
                                           .run = port_run_tool,
                                           .title = port_tool_title,
                                           .needs_permission = pct__tool_needs_permission};

int pct__rebuild_tools(pct_sess *s) {
    pct_old_tools *o = calloc(1, sizeof *o);
    pag_tool_info *prev = s->tools;
    size_t nprev = s->ntools;
    if (o && build_tools(s) == 0) {
        o->tools = prev;
        o->next = s->old_tools;
        s->old_tools = o;
        return 0;
    }
    free(o);
    s->tools = prev;
    s->ntools = nprev;
    return -1;
}

/* Builds the live session for a stored thread and maps it. */
static pct_status make_live(pct_controller *c, const pst_thread *th, const char *mcp_json,
                            char **notices, pct_sess **out, pct_error *err) {
    pct_sess *s = calloc(1, sizeof *s);
    if (!s || !(s->cwd = strdup(th->cwd))) {
        free(s);
        set_err(err, PCT_FAILED, "out of memory%s", NULL);
        return PCT_FAILED;
    }
    atomic_init(&s->refs, 1);
    s->c = c;
    memcpy(s->id, th->id, PST_ID_LEN);
    pthread_mutex_init(&s->mu, NULL);
    pthread_cond_init(&s->cv, NULL);
    pthread_mutex_init(&s->emit_mu, NULL);
    s->titled = th->title != NULL;
    s->client_fs =
        (ptl_client_fs){.ctx = s, .read_cancel = client_read, .write_cancel = client_write};
    s->client_term = (ptl_client_term){.ctx = s, .run = client_term_run};
    /* Another machine's session: open for reading only. Its cwd is a
     * path on that machine, so nothing here touches it: no tool pool (no MCP server, no
     * workspace server), only the static tool catalogue so that replayed tool calls get
     * the same kinds and titles as on the owner. */
    s->read_only = strcmp(th->machine_id, c->machine_id) != 0;
    memcpy(s->owner, th->machine_id, PST_ID_LEN);
    /* A history in another format than this host writes: replayed as stored, never
     * continued (its messages may not mean to this host's agent what they meant when
     * written), and nothing here rewrites its meta. */
    s->format = pct_history_format(th->meta);
    if (s->format != PCT_HISTORY_FORMAT) s->read_only = true;
    char why[512];
    if (!s->read_only && pag_cwd_refused(th->cwd, c->home, why, sizeof why)) {
        pct__sess_release(s);
        set_err(err, PCT_BAD_ARG, "%s", why);
        return PCT_BAD_ARG;
    }
    if (s->read_only) {
        if (!(s->tools = calloc(c->ntools + 1, sizeof *s->tools))) {
            pct__sess_release(s);
            set_err(err, PCT_FAILED, "out of memory%s", NULL);
            return PCT_FAILED;
        }
        memcpy(s->tools, c->tools, c->ntools * sizeof *s->tools);
        s->ntools = c->ntools;
    } else if (pct__mcp_open(s, mcp_json, notices) != 0 || build_tools(s) != 0) {
        pct__sess_release(s);
        set_err(err, PCT_FAILED, "cannot start the session's tools (builtin workspace server)%s",
                NULL);
        return PCT_FAILED;
    }
    char *frozen = NULL;
    pj_t *meta = th->meta ? pj_loads(th->meta, 0, NULL) : NULL;
    pj_t *fz = pj_object_get(meta, "frozenContext");
    if (pj_is_string(fz)) frozen = strdup(pj_string_value(fz));
    if (!frozen) frozen = s->read_only ? strdup("") : pag_frozen_context(th->cwd, pb_wall_ms());
    pj_t *hid = pj_object_get(meta, "hidden");
    if (pj_is_array(hid) && pj_array_size(hid) > 0 && !(s->hidden = pj_dumps(hid, PJ_COMPACT))) {
        pj_decref(meta);
        free(frozen);
        pct__sess_release(s);
        set_err(err, PCT_FAILED, "out of memory%s", NULL);
        return PCT_FAILED;
    }
    if (mcp_json && !(s->mcp_json = strdup(mcp_json))) {
        pj_decref(meta);
        free(frozen);
        pct__sess_release(s);
        set_err(err, PCT_FAILED, "out of memory%s", NULL);
        return PCT_FAILED;
    }
    const char *eff = pj_string_value(pj_object_get(meta, "thinkingEffort"));
    if (eff && (!strcmp(eff, "low") || !strcmp(eff, "medium") || !strcmp(eff, "high")))
        snprintf(s->effort, sizeof s->effort, "%s", eff);
    s->ctx1m = pj_is_true(pj_object_get(meta, "context1m"));
    /* A new epoch each time a process makes the session live: one more than any
     * epoch stored before (kept below by pct__save_meta), so none is ever reused. */
    pj_t *ep = pj_object_get(meta, "epoch");
    s->epoch =
        (pj_is_integer(ep) && pj_integer_value(ep) > 0 ? (uint64_t)pj_integer_value(ep) : 0) + 1;
    pag_mode mode = PAG_MODE_DEFAULT;
    if (!pag_mode_parse(pj_string_value(pj_object_get(meta, "mode")), &mode))
        mode = PAG_MODE_DEFAULT;
    const char *spec = pj_string_value(pj_object_get(meta, "model"));
    int bad = spec && !(s->model_spec = strdup(spec));
    const char *lists[2] = {"allowAlways", "rejectAlways"};
    for (int k = 0; k < 2 && !bad; k++) {
        pj_t *arr = pj_object_get(meta, lists[k]);
        size_t n = pj_array_size(arr), i;
        pj_t *v;
        char **l = n ? calloc(n, sizeof *l) : NULL;
        size_t m = 0;
        if (n && !l) bad = 1;
        pj_array_foreach(arr, i, v) {
            if (l && pj_is_string(v) && (l[m] = strdup(pj_string_value(v)))) m++;
        }
        if (k == 0) {
            s->allow_always = l;
            s->nallow = m;
        } else {
            s->reject_always = l;
            s->nreject = m;
        }
    }
    pj_t *mw_meta = meta; /* the middlewares' part is read once the agent exists */
    pag_ports ports = {.ctx = s,
                       .reason = port_reason,
                       .model_name = NULL,
                       .model_missing_reason = s->model_missing,
                       .tools = s->tools,
                       .ntools = s->ntools,
                       .tool_ops = &session_tools,
                       .ask_permission = pct__port_ask,
                       .persist = port_persist,
                       .emit = port_emit};
    pag_session_config sc = {.id = th->id,
                             .cwd = th->cwd,
                             .system_prompt = frozen,
                             .context_budget = c->settings->context_budget,
                             .max_steps = c->settings->max_steps,
                             .auto_compact_threshold = c->settings->auto_compact_threshold};
    s->frozen = frozen;
    if (!bad && pct__mw_mount(s, &ports) != 0) bad = 1;
    s->agent = frozen && !bad ? pag_session_new(&sc, &ports) : NULL;
    if (!s->agent) {
        pj_decref(mw_meta);
        pct__sess_release(s);
        set_err(err, PCT_FAILED, "out of memory%s", NULL);
        return PCT_FAILED;
    }
    pag_session_set_mode(s->agent, mode);
    if (pct__mw_live(s, mw_meta) != 0) {
        pj_decref(mw_meta);
        pct__sess_release(s);
        set_err(err, PCT_FAILED, "out of memory%s", NULL);
        return PCT_FAILED;
    }
    pj_decref(mw_meta);
    pct__apply_model(s);
    if (!s->read_only) pct__save_meta(s); /* the epoch is taken */
    *out = s;
    return PCT_OK;
}

static pct_status insert_live(pct_controller *c, pct_sess *s, pct_error *err) {
    int rc = prt_insert(c->rt, s->id, s);
    if (rc == 0) return PCT_OK;
    pct__sess_release(s);
    if (rc > 0) {
        set_err(err, PCT_BUSY, "session %s is already live", s->id);
        return PCT_BUSY;
    }
    set_err(err, PCT_FAILED, "out of memory%s", NULL);
    return PCT_FAILED;
}

const char *pct_machine_id(const pct_controller *c) {
    return c->machine_id;
}

static pct_status foreign(const pct_controller *c, const char *id, const char *owner,
                          pct_error *err) {
    if (err) {
        err->status = PCT_FOREIGN;
        if (c->machine_id[0])
            snprintf(err->message, sizeof err->message,
                     "Session %.40s belongs to machine %.40s, not to this host's machine %.40s", id,
                     owner, c->machine_id);
        else
            snprintf(err->message, sizeof err->message,
                     "Session %.40s belongs to machine %.40s; this host has no machine identity "
                     "(a shared store without machineId)",
                     id, owner);
    }
    return PCT_FOREIGN;
}

int pct_history_format(const char *meta_json) {
    if (!meta_json) return 1;
    pj_t *m = pj_loads(meta_json, 0, NULL);
    pj_t *f = pj_object_get(m, "format");
    int v = !f ? 1
            : pj_is_integer(f) && pj_integer_value(f) >= 0 && pj_integer_value(f) <= 1000000
                ? (int)pj_integer_value(f)
                : -1;
    pj_decref(m);
    return v;
}

int pct_session_history_format(pct_controller *c, const char *id) {
    pct_sess *s = pct__sess_get(c, id);
    int f = s ? s->format : 0;
    pct__sess_release(s);
    return f;
}

static pct_status old_format(const pct_sess *s, pct_error *err) {
    if (err) {
        err->status = PCT_OLD_FORMAT;
        if (s->format >= 0)
            snprintf(err->message, sizeof err->message,
                     "Session %.40s was written in history format %d and this host writes "
                     "format %d: its history can be read but not continued; start a new session",
                     s->id, s->format, PCT_HISTORY_FORMAT);
        else
            snprintf(err->message, sizeof err->message,
                     "Session %.40s has an unreadable history format: its history can be read "
                     "but not continued; start a new session",
                     s->id);
    }
    return PCT_OLD_FORMAT;
}

pct_status pct__sess_writable(const pct_sess *s, pct_error *err) {
    if (!s->read_only) return PCT_OK;
    if (s->format != PCT_HISTORY_FORMAT) return old_format(s, err);
    return foreign(s->c, s->id, s->owner, err);
}

bool pct_session_read_only(pct_controller *c, const char *id, char owner[PST_ID_LEN]) {
    pct_sess *s = pct__sess_get(c, id);
    bool ro = s && s->read_only && s->format == PCT_HISTORY_FORMAT;
    if (ro && owner) memcpy(owner, s->owner, PST_ID_LEN);
    pct__sess_release(s);
    return ro;
}

pct_status pct__check_owner(pct_controller *c, const char *id, pct_error *err) {
    pst_thread th;
    if (!id || pst_thread_get(c->store, id, &th, NULL) != PST_OK) return PCT_OK;
    pct_status rc = PCT_OK;
    if (strcmp(th.machine_id, c->machine_id) != 0) rc = foreign(c, id, th.machine_id, err);
    pst_thread_clear(&th);
    return rc;
}

pct_status pct_session_new(pct_controller *c, const char *cwd, char out_id[PST_ID_LEN],
                           pct_error *err) {
    return pct_session_new_mcp(c, cwd, NULL, out_id, NULL, err);
}

pct_status pct_session_new_mcp(pct_controller *c, const char *cwd, const char *mcp_json,
                               char out_id[PST_ID_LEN], char **notices, pct_error *err) {
    if (notices) *notices = NULL;
    pct__discover(c, true); /* the model selector lists what the providers report */
    if (!c->machine_id[0]) {
        set_err(err, PCT_BAD_ARG,
                "machineId is required to write to a shared store: this host has none%s", NULL);
        return PCT_BAD_ARG;
    }
    if (!cwd || cwd[0] != '/') {
        set_err(err, PCT_BAD_ARG, "cwd must be an absolute path%s", NULL);
        return PCT_BAD_ARG;
    }
    char real[PATH_MAX];
    struct stat st;
    if (!realpath(cwd, real) || stat(real, &st) != 0 || !S_ISDIR(st.st_mode)) {
        set_err(err, PCT_BAD_ARG, "cwd is not an existing directory: %s", cwd);
        return PCT_BAD_ARG;
    }
    char why[512];
    if (pag_cwd_refused(real, c->home, why, sizeof why)) {
        set_err(err, PCT_BAD_ARG, "%s", why);
        return PCT_BAD_ARG;
    }
    char ws[PST_ID_LEN];
    pst_error pe;
    if (pst_workspace_ensure(c->store, c->machine_id, real, ws, &pe) != PST_OK) {
        set_err(err, PCT_FAILED, "store: %s", pe.message);
        return PCT_FAILED;
    }
    char *frozen = pag_frozen_context(real, pb_wall_ms());
    pj_t *meta = pj_object();
    char *meta_txt = NULL;
    if (frozen && meta && pj_object_set_new(meta, "frozenContext", pj_string(frozen)) == 0)
        meta_txt = pj_dumps(meta, PJ_COMPACT);
    pj_decref(meta);
    free(frozen);
    if (!meta_txt) {
        set_err(err, PCT_FAILED, "out of memory%s", NULL);
        return PCT_FAILED;
    }
    pst_thread th;
    pst_thread_new tn = {.workspace_id = ws, .meta = meta_txt};
    pst_status ps = pst_thread_create(c->store, &tn, &th, &pe);
    free(meta_txt);
    if (ps != PST_OK) {
        set_err(err, PCT_FAILED, "store: %s", pe.message);
        return PCT_FAILED;
    }
    pct_sess *s = NULL;
    pct_status rc = make_live(c, &th, mcp_json, notices, &s, err);
    if (rc == PCT_OK) rc = insert_live(c, s, err);
    if (rc == PCT_OK) memcpy(out_id, th.id, PST_ID_LEN);
    pst_thread_clear(&th);
    return rc;
}

void pct_session_announce(pct_controller *c, const char *id) {
    pct_sess *s = pct__sess_get(c, id);
    if (!s) return;
    char *cmds = pct__commands_json(s);
    pag_event ev = {.kind = PAG_EV_COMMANDS, .content_json = cmds};
    pct__emit(s, &ev);
    free(cmds);
    pct__sess_release(s);
}

/* Replay: the history's events as the agent rebuilds them, plus what the host's own
 * tools showed live: a completed todo call is preceded by its plan update, as in the
 * turn. Same code for an own session and a read-only foreign one, so both replays of
 * one history are identical. */
static void replay_emit(void *ctx, const pag_event *ev) {
    pag_event copy = *ev;
    if (ev->kind == PAG_EV_TOOL_UPDATE && ev->tool_name && !strcmp(ev->tool_name, "todo") &&
        ev->status && !strcmp(ev->status, "completed")) {
        char *plan = pct__plan_of_todo(ev->raw_input);
        if (plan) {
            pag_event pe = {.kind = PAG_EV_PLAN, .replay = true, .content_json = plan};
            pct__emit(ctx, &pe);
            free(plan);
        }
    }
    pct__emit(ctx, &copy);
}

pct_status pct_session_load(pct_controller *c, const char *id, bool replay, pct_error *err) {
    return pct_session_load_mcp(c, id, replay, NULL, NULL, err);
}

pct_status pct_session_load_mcp(pct_controller *c, const char *id, bool replay,
                                const char *mcp_json, char **notices, pct_error *err) {
    if (notices) *notices = NULL;
    pct_sess *s = pct__sess_get(c, id);
    if (s && s->read_only && replay) {
        /* A foreign session is a snapshot of the store: its owner may have appended since.
         * A new load reads it again (close the old view; it never runs anything). */
        pct__sess_release(s);
        s = NULL;
        pct_status crc = pct_close(c, id, err);
        if (crc != PCT_OK) return crc;
    }
    if (s) {
        pthread_mutex_lock(&s->mu);
        sess_state st = s->state;
        bool busy = s->running;
        pthread_mutex_unlock(&s->mu);
        pct_status rc = PCT_OK;
        if (st != SESS_OPEN) {
            set_err(err, PCT_CLOSING, "Session is closing%s", NULL);
            rc = PCT_CLOSING;
        } else if (busy && replay) {
            set_err(err, PCT_BUSY, "session %s is running a prompt", id);
            rc = PCT_BUSY;
        } else if (replay) {
            pag_session_replay(s->agent, replay_emit, s);
        }
        pct__sess_release(s);
        return rc;
    }
    pct__discover(c, true);
    pst_thread th;
    pst_error pe;
    pct_status grc = stored_thread(c, id, &th, err);
    if (grc != PCT_OK) return grc;
    /* Another machine's session opens read-only (make_live marks it): the history is
     * replayed from the store's read path, and every write is refused naming the owner. */
    pct_status rc = make_live(c, &th, mcp_json, notices, &s, err);
    pst_thread_clear(&th);
    if (rc != PCT_OK) return rc;
    pst_message_list ml;
    if (pst_messages_load(c->store, id, &ml, &pe) != PST_OK) {
        pct__sess_release(s);
        set_err(err, PCT_FAILED, "store: %s", pe.message);
        return PCT_FAILED;
    }
    const char **rows = calloc(ml.count ? ml.count : 1, sizeof *rows);
    size_t skipped = 0;
    int ok = rows != NULL;
    size_t nrows = 0;
    for (size_t i = 0; ok && i < ml.count; i++)
        if (!pct__row_hidden(s->hidden, ml.items[i].seq)) rows[nrows++] = ml.items[i].content;
    if (ok) ok = pag_session_restore(s->agent, rows, nrows, &skipped) == 0;
    free(rows);
    pst_message_list_clear(&ml);
    if (!ok) {
        pct__sess_release(s);
        set_err(err, PCT_FAILED, "out of memory%s", NULL);
        return PCT_FAILED;
    }
    if (skipped)
        pb_log(&c->log, PB_LOG_WARN, "session %s: %zu unreadable message(s) skipped", id, skipped);
    /* Map first so replay events are stamped by the runtime. */
    pct__sess_retain(s);
    rc = insert_live(c, s, err);
    if (rc == PCT_OK && replay) pag_session_replay(s->agent, replay_emit, s);
    pct__sess_release(s);
    return rc;
}

pct_status pct_session_list(pct_controller *c, const char *cwd, const char *cursor,
                            pst_thread_page *out, pct_error *err) {
    return pct_session_list_ex(c, cwd, cursor, -1, out, err);
}

pct_status pct_session_list_ex(pct_controller *c, const char *cwd, const char *cursor,
                               int all_machines, pst_thread_page *out, pct_error *err) {
    return pct_session_list_opts(c, cwd, cursor, all_machines, false, out, err);
}

pct_status pct_session_list_opts(pct_controller *c, const char *cwd, const char *cursor,
                                 int all_machines, bool include_archived, pst_thread_page *out,
                                 pct_error *err) {
    char real[PATH_MAX];
    if (cwd && realpath(cwd, real)) cwd = real; /* workspaces are keyed by canonical path */
    /* A host lists the sessions of its own machine (with their child threads); on a
     * PostgreSQL store (or when asked) every machine's, the foreign ones read-only. */
    bool all = all_machines < 0 ? c->list_all : all_machines > 0;
    pst_list_query q = {.cwd = cwd,
                        .cursor = cursor,
                        .machine_id = all ? NULL : c->machine_id,
                        .include_archived = include_archived,
                        .include_children = true};
    pst_error pe;
    pst_status ps = pst_thread_list(c->store, &q, out, &pe);
    if (ps == PST_ERR_ARG) {
        set_err(err, PCT_BAD_ARG, "%s", pe.message);
        return PCT_BAD_ARG;
    }
    if (ps != PST_OK) {
        set_err(err, PCT_FAILED, "store: %s", pe.message);
        return PCT_FAILED;
    }
    return PCT_OK;
}

pct_status pct_session_delete(pct_controller *c, const char *id, pct_error *err) {
    if (pct__check_owner(c, id, err) != PCT_OK) return PCT_FOREIGN;
    pct_status rc = pct_close(c, id, err);
    if (rc != PCT_OK) return rc;
    pst_error pe;
    pst_status ps = pst_thread_delete(c->store, id, &pe);
    if (ps != PST_OK && ps != PST_ERR_NOT_FOUND && ps != PST_ERR_ARG) {
        set_err(err, PCT_FAILED, "store: %s", pe.message);
        return PCT_FAILED;
    }
    return PCT_OK;
}

size_t pct_live_count(pct_controller *c) {
    return prt_count(c->rt);
}

/* ---------------------------------------------------------------- fork */

pct_status pct_session_fork(pct_controller *c, const char *id, char out_id[PST_ID_LEN],
                            pct_error *err) {
    pct_sess *live = pct__sess_get(c, id);
    char *meta_txt = NULL;
    if (live && live->read_only) { /* the fork would be written into a foreign */
        pct_status frc = pct__sess_writable(live, err); /* workspace */
        pct__sess_release(live);
        return frc;
    }
    if (live && pct__sess_guard(live, err) != PCT_OK) { /* the source is closing */
        pct__sess_release(live);
        return PCT_CLOSING;
    }
    if (live) {
        pthread_mutex_lock(&live->mu);
        bool busy = live->running || live->qhead != NULL;
        pthread_mutex_unlock(&live->mu);
        if (busy) {
            pct__sess_release(live);
            set_err(err, PCT_ACTIVE,
                    "Session is active: wait for its prompt to finish (or cancel it) before "
                    "forking%s",
                    NULL);
            return PCT_ACTIVE;
        }
        pct__save_meta(live); /* the fork copies the current options */
        pct__sess_release(live);
    }
    pst_thread src;
    pst_error pe;
    pct_status grc = stored_thread(c, id, &src, err);
    if (grc != PCT_OK) return grc;
    pst_status ps;
    if (strcmp(src.machine_id, c->machine_id) != 0) {         /* the fork would be written */
        pct_status frc = foreign(c, id, src.machine_id, err); /* into a foreign workspace */
        pst_thread_clear(&src);
        return frc;
    }
    /* The fork copies the visible history: rows hidden by a rewind stay behind, and the
     * copy's meta has no hidden range (its rows are numbered afresh). */
    char *hidden = NULL;
    pj_t *sm = src.meta ? pj_loads(src.meta, 0, NULL) : NULL;
    if (pj_is_array(pj_object_get(sm, "hidden"))) {
        hidden = pj_dumps(pj_object_get(sm, "hidden"), PJ_COMPACT);
        pj_object_del(sm, "hidden");
        meta_txt = pj_dumps(sm, PJ_COMPACT);
        if (!hidden || !meta_txt) {
            free(hidden);
            free(meta_txt);
            pj_decref(sm);
            pst_thread_clear(&src);
            set_err(err, PCT_FAILED, "out of memory%s", NULL);
            return PCT_FAILED;
        }
    } else if (src.meta) {
        meta_txt = strdup(src.meta);
    }
    pj_decref(sm);
    char title[160];
    snprintf(title, sizeof title, "Fork of %.120s", src.title ? src.title : "session");
    pst_thread_new tn = {.workspace_id = src.workspace_id,
                         .parent_id = src.id,
                         .title = title,
                         .model = src.model,
                         .meta = meta_txt};
    pst_thread th;
    ps = pst_thread_create(c->store, &tn, &th, &pe);
    pst_thread_clear(&src);
    free(meta_txt);
    if (ps != PST_OK) {
        free(hidden);
        set_err(err, PCT_FAILED, "store: %s", pe.message);
        return PCT_FAILED;
    }
    pst_message_list ml;
    ps = pst_messages_load(c->store, id, &ml, &pe);
    bool loaded = ps == PST_OK;
    if (ps == PST_OK && ml.count > 0) {
        pst_message_in *in = calloc(ml.count, sizeof *in);
        if (!in) {
            ps = PST_ERR_NOMEM;
        } else {
            size_t k = 0;
            for (size_t i = 0; i < ml.count; i++)
                if (!pct__row_hidden(hidden, ml.items[i].seq))
                    in[k++] = (pst_message_in){.role = ml.items[i].role,
                                               .content = ml.items[i].content,
                                               .meta = ml.items[i].meta};
            ps = k ? pst_messages_append(c->store, th.id, in, k, NULL, &pe) : PST_OK;
            free(in);
        }
    }
    if (loaded) pst_message_list_clear(&ml);
    free(hidden);
    char fid[PST_ID_LEN];
    memcpy(fid, th.id, PST_ID_LEN);
    pst_thread_clear(&th);
    if (ps != PST_OK) {
        pst_thread_delete(c->store, fid, &pe);
        set_err(err, PCT_FAILED, "store: could not copy the history%s", NULL);
        return PCT_FAILED;
    }
    pct_status rc = pct_session_load(c, fid, false, err);
    if (rc == PCT_OK) memcpy(out_id, fid, PST_ID_LEN);
    return rc;
}
