/*
 * controller.c — composes store + runtime + tools + agent per session.
 *
 * Owns the session lifecycle on the way in (new, load, resume, list, delete) and
 * the ports the agent sees (model, tools, permission, persistence, events). Turn
 * execution, cancel and close live in turns.c.
 */
#include "controller/ctl_impl.h"

#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

static void set_err(pct_error *err, pct_status st, const char *fmt, const char *arg) {
    if (!err) return;
    err->status = st;
    char tmp[1024];
    snprintf(tmp, sizeof tmp, fmt, arg ? arg : "");
    snprintf(err->message, sizeof err->message, "%.250s", tmp);
}

static int64_t now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ---------------------------------------------------------------- refcounting */

void pct_sess_retain(void *h) {
    atomic_fetch_add(&((pct_sess *)h)->refs, 1);
}

void pct_sess_release(pct_sess *s) {
    if (!s || atomic_fetch_sub(&s->refs, 1) != 1) return;
    pag_session_free(s->agent);
    pmcp_pool_close(s->mcp); /* no server process survives the session */
    free(s->tools);
    pm_client_free(s->client);
    pthread_mutex_destroy(&s->mu);
    pthread_cond_destroy(&s->cv);
    pthread_mutex_destroy(&s->emit_mu);
    free(s->cwd);
    free(s);
}

pct_sess *pct_sess_get(pct_controller *c, const char *id) {
    return id ? prt_acquire(c->rt, id) : NULL;
}

/* ---------------------------------------------------------------- events */

void pct_emit(pct_sess *s, pag_event *ev) {
    pthread_mutex_lock(&s->emit_mu);
    if (ev->turn == 0 || ev->turn > s->gate_gen) {
        ev->session_id = s->id;
        ev->session_seq = prt_next_seq(s->c->rt, s->id);
        if (s->c->sink.on_event) s->c->sink.on_event(s->c->sink.ctx, ev);
    }
    pthread_mutex_unlock(&s->emit_mu);
}

/* ---------------------------------------------------------------- agent ports */

static pm_status port_reason(void *ctx, const pm_request *req, pm_event_fn on_event, void *ev_ctx,
                             atomic_int *cancel, pm_response *out, pm_error *err) {
    pct_sess *s = ctx;
    if (!s->client && !(s->client = pm_client_new(&s->model_cfg, err))) {
        memset(out, 0, sizeof *out);
        return err->status;
    }
    return pm_stream(s->client, req, on_event, ev_ctx, cancel, out, err);
}

static int port_run_tool(void *ctx, const char *name, const char *args, atomic_int *cancel,
                         pag_tool_output *out) {
    pct_sess *s = ctx;
    if (pmcp_pool_has(s->mcp, name))
        return pmcp_pool_call(s->mcp, name, args, cancel, &out->output, &out->is_error,
                              &out->content_json);
    const ptl_tool *t = ptl_find(name);
    if (!t) return -1;
    ptl_ctx tc = {.cwd = s->cwd, .cancel = cancel, .sandbox = &s->c->sandbox};
    if (s->c->sink.fs_read || s->c->sink.fs_write) tc.client_fs = &s->client_fs;
    ptl_result r;
    ptl_status st = ptl_run(t, args, &tc, &r);
    out->output = r.output;
    out->is_error = r.is_error;
    out->content_json = r.content_json;
    out->locations_json = r.locations_json;
    out->meta_json = r.meta_json;
    out->raw_output_json = r.raw_output_json;
    r.output = r.content_json = r.locations_json = r.meta_json = r.raw_output_json = NULL;
    ptl_result_clear(&r);
    return st == PTL_OK ? 0 : st == PTL_CANCELLED ? 1 : -1;
}

/* Issue 12: the tools' client file system, bound to this session. */
static int client_read(void *ctx, const char *abs, char **data, size_t *len) {
    pct_sess *s = ctx;
    if (!s->c->sink.fs_read) return 1;
    return s->c->sink.fs_read(s->c->sink.ctx, s->id, abs, data, len);
}

static int client_write(void *ctx, const char *abs, const char *data, size_t len) {
    pct_sess *s = ctx;
    if (!s->c->sink.fs_write) return 1;
    return s->c->sink.fs_write(s->c->sink.ctx, s->id, abs, data, len);
}

static char *port_tool_title(void *ctx, const char *name, const char *args) {
    (void)ctx;
    const ptl_tool *t = ptl_find(name);
    return t ? ptl_title(t, args) : NULL;
}

static bool port_needs_permission(void *ctx, const char *name, const char *args) {
    (void)ctx;
    const ptl_tool *t = ptl_find(name);
    return t && ptl_tool_needs_permission(t, args);
}

static void warn_unsandboxed(void *ud, const char *msg) {
    (void)ud;
    fprintf(stderr, "peri: warning: %s\n", msg);
}

static pag_permission port_ask(void *ctx, const pag_event *call, atomic_int *cancel) {
    pct_sess *s = ctx;
    if (call->tool_name && pag_settings_allows(s->c->settings, call->tool_name))
        return PAG_PERM_ALLOW;
    if (!s->c->sink.ask_permission) return PAG_PERM_REJECT;
    return s->c->sink.ask_permission(s->c->sink.ctx, s->id, call, cancel);
}

static int port_persist(void *ctx, const pm_message *msgs, size_t n) {
    pct_sess *s = ctx;
    pst_message_in in[2];
    char *json[2] = {NULL, NULL};
    int rc = -1;
    if (n > 2) return -1;
    for (size_t i = 0; i < n; i++) {
        json[i] = pm_message_to_json(&msgs[i]);
        if (!json[i]) goto out;
        in[i].role = pm_role_name(msgs[i].role);
        in[i].content = json[i];
        in[i].meta = NULL;
    }
    pst_error e;
    if (pst_messages_append(s->c->store, s->id, in, n, NULL, &e) == PST_OK)
        rc = 0;
    else
        fprintf(stderr, "peri: persisting session %s failed: %s\n", s->id, e.message);
out:
    free(json[0]);
    free(json[1]);
    return rc;
}

static void port_emit(void *ctx, const pag_event *ev) {
    pag_event copy = *ev;
    pct_emit(ctx, &copy);
}

/* ---------------------------------------------------------------- lifecycle */

pct_controller *pct_new(const pct_config *cfg, const pct_sink *sink, pct_error *err) {
    pct_controller *c = calloc(1, sizeof *c);
    if (!c) {
        set_err(err, PCT_FAILED, "out of memory%s", NULL);
        return NULL;
    }
    c->settings = cfg->settings;
    c->sink = *sink;
    if (cfg->home && !(c->home = strdup(cfg->home))) {
        free(c);
        set_err(err, PCT_FAILED, "out of memory%s", NULL);
        return NULL;
    }
    pthread_mutex_init(&c->mu, NULL);
    pthread_cond_init(&c->cv, NULL);
    pst_error pe;
    if (pst_machine_id_resolve(cfg->home, cfg->machine_id_env, c->machine_id, &pe) != PST_OK) {
        set_err(err, PCT_FAILED, "machine id: %s", pe.message);
        goto fail;
    }
    c->store = pst_open(cfg->db_path, &pe);
    if (!c->store) {
        set_err(err, PCT_FAILED, "store: %s", pe.message);
        goto fail;
    }
    if (pst_machine_ensure(c->store, c->machine_id, NULL, &pe) != PST_OK) {
        set_err(err, PCT_FAILED, "store: %s", pe.message);
        goto fail;
    }
    c->rt = prt_new(pct_sess_retain);
    c->ntools = ptl_count();
    c->tools = calloc(c->ntools ? c->ntools : 1, sizeof *c->tools);
    if (!c->rt || !c->tools) {
        set_err(err, PCT_FAILED, "out of memory%s", NULL);
        goto fail;
    }
    /* Placement: the room (with Ruby when its module is configured) and the native
     * sandbox; the settings' "sandbox" shapes the policy. */
    pr_error re;
    pl_error le;
    c->room = pr_host_new(NULL, &re);
    if (!c->room) {
        char msg[200];
        snprintf(msg, sizeof msg, "%.190s", re.message);
        set_err(err, PCT_FAILED, "room: %s", msg);
        goto fail;
    }
    if (cfg->ruby_wasm && !(c->ruby = pr_ruby_new(c->room, cfg->ruby_wasm))) {
        set_err(err, PCT_FAILED, "out of memory%s", NULL);
        goto fail;
    }
    c->ruby_hook = pl_ruby_room_hook(c->ruby);
    pl_config pcfg = {.room = c->room,
                      .wasm_runner = cfg->wasm_runner,
                      .nwasm_runner = cfg->nwasm_runner,
                      .bwrap = cfg->bwrap,
                      .ruby_hook = c->ruby ? &c->ruby_hook : NULL};
    c->place = pl_new(&pcfg, &le);
    if (!c->place) {
        set_err(err, PCT_FAILED, "placement: %s", le.message);
        goto fail;
    }
    const pag_settings *st = cfg->settings;
    c->policy = (pl_policy){.native = PL_NATIVE_AUTO,
                            .network_allowed = st && st->sandbox_network,
                            .writable = st ? (const char *const *)st->sandbox_writable : NULL,
                            .nwritable = st ? st->nwritable : 0};
    c->sandbox = (ptl_sandbox){.place = c->place,
                               .policy = &c->policy,
                               .off = st && st->sandbox_off,
                               .warn = warn_unsandboxed};
    for (size_t i = 0; i < c->ntools; i++) {
        const ptl_tool *t = ptl_at(i);
        c->tools[i] = (pag_tool_info){.name = ptl_name(t),
                                      .description = ptl_description(t),
                                      .schema_json = ptl_schema_json(t),
                                      .kind = ptl_kind_name(ptl_kind_of(t)),
                                      .needs_permission = ptl_needs_permission(t)};
    }
    return c;
fail:
    pl_free(c->place);
    pr_ruby_free(c->ruby);
    pr_host_free(c->room);
    pst_close(c->store);
    prt_free(c->rt);
    free(c->tools);
    free(c->home);
    pthread_mutex_destroy(&c->mu);
    pthread_cond_destroy(&c->cv);
    free(c);
    return NULL;
}

int pct_free(pct_controller *c, long wait_ms) {
    if (!c) return 0;
    pct_close_all(c, wait_ms);
    /* Workers still alive after the grace period hold references into c: keep c
     * allocated rather than free memory a thread may still touch. */
    struct timespec dl;
    clock_gettime(CLOCK_REALTIME, &dl);
    dl.tv_sec += wait_ms / 1000 + 1; /* a settled worker is only finishing its exit path */
    pthread_mutex_lock(&c->mu);
    while (c->workers > 0 && pthread_cond_timedwait(&c->cv, &c->mu, &dl) == 0) {
    }
    int left = c->workers;
    pthread_mutex_unlock(&c->mu);
    if (left > 0) {
        fprintf(stderr, "peri: %d prompt worker(s) still unwinding at exit\n", left);
        return 1;
    }
    pl_free(c->place);
    pr_ruby_free(c->ruby);
    pr_host_free(c->room);
    pst_close(c->store);
    prt_free(c->rt);
    free(c->tools);
    free(c->home);
    pthread_mutex_destroy(&c->mu);
    pthread_cond_destroy(&c->cv);
    free(c);
    return 0;
}

/* MCP (issue 12): connects the session's MCP servers and builds its tool list
 * (builtin tools first, then mcp__<server>__<tool>). Failures become notices. */
static int open_mcp(pct_sess *s, const char *mcp_json, char **notices) {
    pct_controller *c = s->c;
    pmcp_pool_opts po = {.cwd = s->cwd, .home = c->home, .acp_servers_json = mcp_json};
    char *why = NULL;
    s->mcp = pmcp_pool_open(&po, &why);
    size_t nm = pmcp_pool_tool_count(s->mcp);
    s->tools = calloc(c->ntools + nm + 1, sizeof *s->tools);
    if (!s->mcp || !s->tools) {
        free(why);
        return -1;
    }
    memcpy(s->tools, c->tools, c->ntools * sizeof *s->tools);
    for (size_t i = 0; i < nm; i++) {
        const pmcp_pool_tool *t = pmcp_pool_tool_at(s->mcp, i);
        s->tools[c->ntools + i] = (pag_tool_info){.name = t->name,
                                                  .description = t->description,
                                                  .schema_json = t->schema_json,
                                                  .kind = "other",
                                                  .needs_permission = true};
    }
    s->ntools = c->ntools + nm;
    if (why) fprintf(stderr, "peri: session %s: %s", s->id, why);
    if (notices)
        *notices = why;
    else
        free(why);
    return 0;
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
    s->client_fs = (ptl_client_fs){.ctx = s, .read = client_read, .write = client_write};
    if (open_mcp(s, mcp_json, notices) != 0) {
        pct_sess_release(s);
        set_err(err, PCT_FAILED, "out of memory%s", NULL);
        return PCT_FAILED;
    }
    const char *model = NULL;
    if (pag_settings_model(c->settings, &s->model_cfg, &model, s->model_missing,
                           sizeof s->model_missing) != 0)
        model = NULL;
    char *frozen = NULL;
    json_t *meta = th->meta ? json_loads(th->meta, 0, NULL) : NULL;
    json_t *fz = json_object_get(meta, "frozenContext");
    if (json_is_string(fz)) frozen = strdup(json_string_value(fz));
    if (!frozen) frozen = pag_frozen_context(th->cwd, now_ms());
    json_decref(meta);
    pag_ports ports = {.ctx = s,
                       .reason = port_reason,
                       .model_name = model,
                       .model_missing_reason = s->model_missing,
                       .tools = s->tools,
                       .ntools = s->ntools,
                       .run_tool = port_run_tool,
                       .tool_title = port_tool_title,
                       .ask_permission = port_ask,
                       .tool_needs_permission = port_needs_permission,
                       .persist = port_persist,
                       .emit = port_emit};
    pag_session_config sc = {.id = th->id,
                             .cwd = th->cwd,
                             .system_prompt = frozen,
                             .context_budget = c->settings->context_budget,
                             .max_steps = c->settings->max_steps};
    s->agent = frozen ? pag_session_new(&sc, &ports) : NULL;
    free(frozen);
    if (!s->agent) {
        pct_sess_release(s);
        set_err(err, PCT_FAILED, "out of memory%s", NULL);
        return PCT_FAILED;
    }
    *out = s;
    return PCT_OK;
}

static pct_status insert_live(pct_controller *c, pct_sess *s, pct_error *err) {
    int rc = prt_insert(c->rt, s->id, s);
    if (rc == 0) return PCT_OK;
    pct_sess_release(s);
    if (rc > 0) {
        set_err(err, PCT_BUSY, "session %s is already live", s->id);
        return PCT_BUSY;
    }
    set_err(err, PCT_FAILED, "out of memory%s", NULL);
    return PCT_FAILED;
}

pct_status pct_session_new(pct_controller *c, const char *cwd, char out_id[PST_ID_LEN],
                           pct_error *err) {
    return pct_session_new_mcp(c, cwd, NULL, out_id, NULL, err);
}

pct_status pct_session_new_mcp(pct_controller *c, const char *cwd, const char *mcp_json,
                               char out_id[PST_ID_LEN], char **notices, pct_error *err) {
    if (notices) *notices = NULL;
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
    char ws[PST_ID_LEN];
    pst_error pe;
    if (pst_workspace_ensure(c->store, c->machine_id, real, ws, &pe) != PST_OK) {
        set_err(err, PCT_FAILED, "store: %s", pe.message);
        return PCT_FAILED;
    }
    char *frozen = pag_frozen_context(real, now_ms());
    json_t *meta = json_object();
    char *meta_txt = NULL;
    if (frozen && meta && json_object_set_new(meta, "frozenContext", json_string(frozen)) == 0)
        meta_txt = json_dumps(meta, JSON_COMPACT);
    json_decref(meta);
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
    pct_sess *s = pct_sess_get(c, id);
    if (!s) return;
    pag_event ev = {.kind = PAG_EV_COMMANDS};
    pct_emit(s, &ev);
    pct_sess_release(s);
}

static void replay_emit(void *ctx, const pag_event *ev) {
    pag_event copy = *ev;
    pct_emit(ctx, &copy);
}

pct_status pct_session_load(pct_controller *c, const char *id, bool replay, pct_error *err) {
    return pct_session_load_mcp(c, id, replay, NULL, NULL, err);
}

pct_status pct_session_load_mcp(pct_controller *c, const char *id, bool replay,
                                const char *mcp_json, char **notices, pct_error *err) {
    if (notices) *notices = NULL;
    pct_sess *s = pct_sess_get(c, id);
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
        pct_sess_release(s);
        return rc;
    }
    pst_thread th;
    pst_error pe;
    pst_status ps = pst_thread_get(c->store, id, &th, &pe);
    if (ps == PST_ERR_NOT_FOUND || ps == PST_ERR_ARG) {
        set_err(err, PCT_NOT_FOUND, "Session not found: %s", id);
        return PCT_NOT_FOUND;
    }
    if (ps != PST_OK) {
        set_err(err, PCT_FAILED, "store: %s", pe.message);
        return PCT_FAILED;
    }
    pct_status rc = make_live(c, &th, mcp_json, notices, &s, err);
    pst_thread_clear(&th);
    if (rc != PCT_OK) return rc;
    pst_message_list ml;
    if (pst_messages_load(c->store, id, &ml, &pe) != PST_OK) {
        pct_sess_release(s);
        set_err(err, PCT_FAILED, "store: %s", pe.message);
        return PCT_FAILED;
    }
    const char **rows = calloc(ml.count ? ml.count : 1, sizeof *rows);
    size_t skipped = 0;
    int ok = rows != NULL;
    for (size_t i = 0; ok && i < ml.count; i++)
        rows[i] = ml.items[i].content;
    if (ok) ok = pag_session_restore(s->agent, rows, ml.count, &skipped) == 0;
    free(rows);
    pst_message_list_clear(&ml);
    if (!ok) {
        pct_sess_release(s);
        set_err(err, PCT_FAILED, "out of memory%s", NULL);
        return PCT_FAILED;
    }
    if (skipped)
        fprintf(stderr, "peri: session %s: %zu unreadable message(s) skipped\n", id, skipped);
    /* Map first so replay events are stamped by the runtime. */
    pct_sess_retain(s);
    rc = insert_live(c, s, err);
    if (rc == PCT_OK && replay) pag_session_replay(s->agent, replay_emit, s);
    pct_sess_release(s);
    return rc;
}

pct_status pct_session_list(pct_controller *c, const char *cwd, const char *cursor,
                            pst_thread_page *out, pct_error *err) {
    char real[PATH_MAX];
    if (cwd && realpath(cwd, real)) cwd = real; /* workspaces are keyed by canonical path */
    pst_list_query q = {.cwd = cwd, .cursor = cursor};
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
