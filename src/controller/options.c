/*
 * options.c — a live session's user-chosen options: mode, model, remembered permission
 * answers; their persistence in the thread's meta; their ACP shapes (modes,
 * configOptions) as JSON text.
 *
 * Invariants: the thread meta always holds the whole option set (frozenContext, mode,
 * model, allowAlways, rejectAlways) and is written under the session's mu, so two
 * writers cannot interleave a stale copy. The model switch itself happens on the worker
 * thread between turns (pct__apply_model); a change made during a turn applies to the
 * next one. A mode change applies at the next tool call.
 */
#include "controller/ctl_impl.h"

#include "peri/json.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static pj_t *str_array(char **l, size_t n) {
    pj_t *a = pj_array();
    for (size_t i = 0; a && i < n; i++)
        pj_array_append_new(a, pj_string(l[i]));
    return a;
}

int pct__save_meta(pct_sess *s) {
    pthread_mutex_lock(&s->mu);
    pj_t *m = pj_pack("{s:i, s:s, s:s}", "format", PCT_HISTORY_FORMAT, "frozenContext",
                      s->frozen ? s->frozen : "", "mode", pag_mode_id(pag_session_mode(s->agent)));
    if (m && s->model_spec) pj_object_set_new(m, "model", pj_string(s->model_spec));
    if (m) pj_object_set_new(m, "allowAlways", str_array(s->allow_always, s->nallow));
    if (m) pj_object_set_new(m, "rejectAlways", str_array(s->reject_always, s->nreject));
    if (m) pj_object_set_new(m, "epoch", pj_integer((pj_int_t)s->epoch));
    if (m && s->effort[0]) pj_object_set_new(m, "thinkingEffort", pj_string(s->effort));
    if (m && s->ctx1m) pj_object_set_new(m, "context1m", pj_true());
    if (m) pct__mw_meta(s, m); /* goal and cron records */
    if (m && s->close_intent_ms)
        pj_object_set_new(
            m, "closeIntent",
            pj_pack("{s:I, s:I}", "epoch", (pj_int_t)s->epoch, "at", (pj_int_t)s->close_intent_ms));
    pj_t *hid = m && s->hidden ? pj_loads(s->hidden, 0, NULL) : NULL;
    if (pj_is_array(hid))
        pj_object_set_new(m, "hidden", hid);
    else
        pj_decref(hid);
    char *txt = m ? pj_dumps(m, PJ_COMPACT) : NULL;
    pj_decref(m);
    pst_error pe;
    int rc = 0;
    if (!txt || pst_thread_set_meta(s->c->store, s->id, txt, &pe) != PST_OK) {
        pb_log(&s->c->log, PB_LOG_ERROR, "session %s: options not persisted", s->id);
        rc = -1;
    }
    if (s->model_spec) pst_thread_set_model(s->c->store, s->id, s->model_spec, &pe);
    pthread_mutex_unlock(&s->mu);
    free(txt);
    return rc;
}

char *pct__current_model(pct_sess *s) {
    pthread_mutex_lock(&s->mu);
    const char *spec = s->model_spec ? s->model_spec : pag_settings_default_model(s->c->settings);
    char *out = spec ? strdup(spec) : NULL;
    pthread_mutex_unlock(&s->mu);
    return out;
}

void pct__apply_model(pct_sess *s) {
    char *want = pct__current_model(s);
    const pag_settings *now = s->c->settings; /* a new version after an authenticate */
    pthread_mutex_lock(&s->mu);
    bool same_1m = s->ctx1m == s->ctx1m_applied;
    pthread_mutex_unlock(&s->mu);
    if (want && s->model_applied && strcmp(want, s->model_applied) == 0 &&
        now == s->settings_applied && same_1m) {
        free(want);
        return;
    }
    s->settings_applied = now;
    const char *name = NULL;
    pm_config cfg;
    if (pag_settings_model_spec(now, want, &cfg, &name, s->model_missing,
                                sizeof s->model_missing) != 0)
        name = NULL;
    pthread_mutex_lock(&s->mu);
    s->ctx1m_applied = s->ctx1m;
    pthread_mutex_unlock(&s->mu);
    cfg.context_1m = s->ctx1m_applied && pct__model_1m(now, want);
    pm_client_free(s->client);
    s->client = NULL;
    s->model_cfg = cfg;
    free(s->model_applied);
    s->model_applied = want; /* name points into it */
    pag_session_set_model(s->agent, name, s->model_missing);
}

/* ---------------------------------------------------------------- shapes */

/* The provider kind and model name of spec (name borrowed from spec). */
static bool kind_of(const pag_settings *st, const char *spec, pm_provider *kind,
                    const char **name) {
    pm_config cfg;
    char why[300];
    if (!spec || pag_settings_model_spec(st, spec, &cfg, name, why, sizeof why) != 0) return false;
    *kind = cfg.provider;
    return true;
}

static bool has_prefix(const char *s, const char *const *prefixes) {
    for (; *prefixes; prefixes++)
        if (!strncmp(s, *prefixes, strlen(*prefixes))) return true;
    return false;
}

bool pct__model_effort(const pag_settings *st, const char *spec) {
    static const char *const openai[] = {"o1", "o3", "o4", "gpt-5", NULL};
    static const char *const anthropic[] = {"claude-3-7",       "claude-sonnet-4", "claude-opus-4",
                                            "claude-haiku-4-5", "claude-4",        NULL};
    pm_provider k;
    const char *name;
    if (!kind_of(st, spec, &k, &name)) return false;
    return has_prefix(name, k == PM_PROVIDER_OPENAI ? openai : anthropic);
}

bool pct__model_1m(const pag_settings *st, const char *spec) {
    static const char *const one_m[] = {"claude-sonnet-4", NULL};
    pm_provider k;
    const char *name;
    return kind_of(st, spec, &k, &name) && k == PM_PROVIDER_ANTHROPIC && has_prefix(name, one_m);
}

/* Audio input: OpenAI's audio models (input_audio); no Anthropic model takes audio. */
static bool model_audio(const pag_settings *st, const char *spec) {
    pm_provider k;
    const char *name;
    return kind_of(st, spec, &k, &name) && k == PM_PROVIDER_OPENAI && strstr(name, "audio");
}

bool pct_session_audio(pct_controller *c, const char *id, char *model, size_t len) {
    pct_sess *s = pct__sess_get(c, id);
    if (!s) return false;
    char *cur = pct__current_model(s);
    bool ok = model_audio(c->settings, cur);
    if (model) snprintf(model, len, "%s", cur ? cur : "(no model)");
    free(cur);
    pct__sess_release(s);
    return ok;
}

bool pct_session_cwd(pct_controller *c, const char *id, char *out, size_t len) {
    pct_sess *s = pct__sess_get(c, id);
    if (!s) return false;
    bool ok = (size_t)snprintf(out, len, "%s", s->cwd) < len;
    pct__sess_release(s);
    return ok;
}

bool pct_default_audio(pct_controller *c) {
    return model_audio(c->settings, pag_settings_default_model(c->settings));
}

/* The thinking_effort and context_1m options of the current model, when it has them. */
static void add_model_options(pct_sess *s, const pag_settings *st, const char *cur, pj_t *arr) {
    pthread_mutex_lock(&s->mu);
    char effort[8];
    memcpy(effort, s->effort, sizeof effort);
    bool one_m = s->ctx1m;
    pthread_mutex_unlock(&s->mu);
    if (pct__model_effort(st, cur))
        pj_array_append_new(
            arr, pj_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:[{s:s, s:s}, {s:s, s:s}, {s:s, s:s}, "
                         "{s:s, s:s}]}",
                         "id", "thinking_effort", "name", "Thinking effort", "description",
                         "How much the model reasons before it answers (reasoning effort, or "
                         "a thinking budget)",
                         "category", "thought_level", "type", "select", "currentValue",
                         effort[0] ? effort : "off", "options", "value", "off", "name", "Off",
                         "value", "low", "name", "Low", "value", "medium", "name", "Medium",
                         "value", "high", "name", "High"));
    if (pct__model_1m(st, cur))
        pj_array_append_new(
            arr, pj_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:[{s:s, s:s}, {s:s, s:s}]}", "id",
                         "context_1m", "name", "1M context", "description",
                         "Ask the provider for its 1M-token context window", "category",
                         "model_config", "type", "select", "currentValue", one_m ? "on" : "off",
                         "options", "value", "off", "name", "Off", "value", "on", "name", "On"));
}

char *pct__config_json(pct_sess *s) {
    const pag_settings *st = s->c->settings;
    char *cur = pct__current_model(s);
    pj_t *models = pj_array();
    for (size_t i = 0; models && i < st->nmodels; i++)
        pag_model_choice_add(models, st, st->models[i].id);
    if (models) pag_model_choice_add(models, st, pag_settings_default_model(st));
    if (models) pag_model_choice_add(models, st, cur);
    /* then what the providers report (discover.c), when a listing succeeded */
    char *found = pct__discovered(s->c);
    pj_t *fa = found ? pj_loads(found, 0, NULL) : NULL;
    size_t i;
    pj_t *v;
    pj_array_foreach(fa, i, v) {
        if (models && pj_is_string(v)) pag_model_choice_add(models, st, pj_string_value(v));
    }
    pj_decref(fa);
    free(found);
    pj_t *modes = pj_array();
    for (int i = 0; modes && i < PAG_MODE_COUNT; i++)
        pj_array_append_new(modes,
                            pj_pack("{s:s, s:s, s:s}", "value", pag_mode_id(i), "name",
                                    pag_mode_name(i), "description", pag_mode_description(i)));
    pj_t *arr = pj_array();
    if (arr && models && pj_array_size(models) > 0)
        pj_array_append_new(arr, pj_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:O}", "id", "model",
                                         "name", "Model", "description",
                                         "The model that answers in this session", "category",
                                         "model", "type", "select", "currentValue", cur ? cur : "",
                                         "options", models));
    if (arr) add_model_options(s, st, cur, arr);
    if (arr && modes)
        pj_array_append_new(arr,
                            pj_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:O}", "id", "mode", "name",
                                    "Mode", "description", "What the agent may do without asking",
                                    "category", "mode", "type", "select", "currentValue",
                                    pag_mode_id(pag_session_mode(s->agent)), "options", modes));
    char *txt = arr ? pj_dumps(arr, PJ_COMPACT) : NULL;
    pj_decref(arr);
    pj_decref(models);
    pj_decref(modes);
    free(cur);
    return txt;
}

char *pct__modes_json(pct_sess *s) {
    pj_t *avail = pj_array();
    for (int i = 0; avail && i < PAG_MODE_COUNT; i++)
        pj_array_append_new(avail,
                            pj_pack("{s:s, s:s, s:s}", "id", pag_mode_id(i), "name",
                                    pag_mode_name(i), "description", pag_mode_description(i)));
    pj_t *m = avail ? pj_pack("{s:s, s:o}", "currentModeId",
                              pag_mode_id(pag_session_mode(s->agent)), "availableModes", avail)
                    : NULL;
    char *txt = m ? pj_dumps(m, PJ_COMPACT) : NULL;
    pj_decref(m);
    return txt;
}

/* ---------------------------------------------------------------- changes */

static void emit_config(pct_sess *s, uint64_t turn) {
    char *cfg = pct__config_json(s);
    if (!cfg) return;
    pag_event ev = {.kind = PAG_EV_CONFIG, .turn = turn, .content_json = cfg};
    pct__emit(s, &ev);
    free(cfg);
}

pct_status pct__sess_set_mode(pct_sess *s, const char *mode_id, uint64_t turn, pct_error *err) {
    pag_mode m;
    if (!pag_mode_parse(mode_id, &m)) {
        err->status = PCT_BAD_ARG;
        snprintf(err->message, sizeof err->message,
                 "unknown modeId: %.100s (default, acceptEdits, plan, bypassPermissions)",
                 mode_id ? mode_id : "");
        return PCT_BAD_ARG;
    }
    pag_session_set_mode(s->agent, m);
    pct__save_meta(s);
    pag_event ev = {.kind = PAG_EV_MODE, .turn = turn, .text = pag_mode_id(m)};
    pct__emit(s, &ev);
    emit_config(s, turn);
    return PCT_OK;
}

pct_status pct__sess_set_model(pct_sess *s, const char *spec, uint64_t turn, pct_error *err) {
    char *cfg = pct__config_json(s);
    pj_t *arr = cfg ? pj_loads(cfg, 0, NULL) : NULL;
    free(cfg);
    bool ok = false;
    size_t i;
    pj_t *o;
    pj_array_foreach(arr, i, o) {
        if (!strcmp(pj_string_value(pj_object_get(o, "id")), "model"))
            ok = spec && pag_model_choice_seen(pj_object_get(o, "options"), spec);
    }
    pj_decref(arr);
    if (!ok) {
        err->status = PCT_BAD_ARG;
        snprintf(err->message, sizeof err->message, "unknown value for config option model: %.150s",
                 spec ? spec : "");
        return PCT_BAD_ARG;
    }
    char *copy = strdup(spec);
    if (!copy) {
        err->status = PCT_FAILED;
        snprintf(err->message, sizeof err->message, "out of memory");
        return PCT_FAILED;
    }
    pthread_mutex_lock(&s->mu);
    free(s->model_spec);
    s->model_spec = copy;
    pthread_mutex_unlock(&s->mu);
    pct__save_meta(s);
    emit_config(s, turn);
    return PCT_OK;
}

/* ---------------------------------------------------------------- public API */

static pct_sess *live(pct_controller *c, const char *id, pct_error *err) {
    pct_sess *s = pct__sess_get(c, id);
    if (!s && err) {
        err->status = PCT_NOT_FOUND;
        snprintf(err->message, sizeof err->message, "Session not found: %.100s", id ? id : "");
    }
    return s;
}

/* what(s) of the live session id (malloc'd JSON text), NULL when it is not live. */
static char *live_json(pct_controller *c, const char *id, char *(*what)(pct_sess *)) {
    pct_sess *s = live(c, id, NULL);
    if (!s) return NULL;
    char *t = what(s);
    pct__sess_release(s);
    return t;
}

char *pct_session_modes(pct_controller *c, const char *id) {
    return live_json(c, id, pct__modes_json);
}

char *pct_session_config(pct_controller *c, const char *id) {
    return live_json(c, id, pct__config_json);
}

/* Not live here: another machine's session is named as such, else not found. */
static pct_status not_live(pct_controller *c, const char *id, pct_error *err) {
    return pct__check_owner(c, id, err) != PCT_OK ? PCT_FOREIGN : PCT_NOT_FOUND;
}

pct_status pct_set_mode(pct_controller *c, const char *id, const char *mode_id, pct_error *err) {
    pct_sess *s = live(c, id, err);
    if (!s) return not_live(c, id, err);
    pct_status rc = pct__sess_guard(s, err);
    if (rc == PCT_OK) rc = pct__sess_writable(s, err); /* read-only: options are persisted */
    if (rc == PCT_OK) rc = pct__sess_set_mode(s, mode_id, 0, err);
    pct__sess_release(s);
    return rc;
}

/* thinking_effort (effort) or context_1m: only while the current model offers it. */
static pct_status set_model_option(pct_sess *s, bool effort, const char *value, pct_error *err) {
    char *cur = pct__current_model(s);
    const pag_settings *st = s->c->settings;
    bool offered = effort ? pct__model_effort(st, cur) : pct__model_1m(st, cur);
    bool ok = value && (effort ? (!strcmp(value, "off") || !strcmp(value, "low") ||
                                  !strcmp(value, "medium") || !strcmp(value, "high"))
                               : (!strcmp(value, "off") || !strcmp(value, "on")));
    if (!offered || !ok) {
        err->status = PCT_BAD_ARG;
        snprintf(err->message, sizeof err->message, "%s",
                 !offered ? (effort ? "thinking_effort is not offered by the current model "
                                      "(see configOptions)"
                                    : "context_1m is not offered by the current model (see "
                                      "configOptions)")
                 : effort ? "unknown value for thinking_effort (off, low, medium, high)"
                          : "unknown value for context_1m (off, on)");
        free(cur);
        return PCT_BAD_ARG;
    }
    free(cur);
    pthread_mutex_lock(&s->mu);
    if (effort)
        snprintf(s->effort, sizeof s->effort, "%s", strcmp(value, "off") ? value : "");
    else
        s->ctx1m = !strcmp(value, "on");
    pthread_mutex_unlock(&s->mu);
    pct__save_meta(s);
    emit_config(s, 0);
    return PCT_OK;
}

pct_status pct_set_config(pct_controller *c, const char *id, const char *config_id,
                          const char *value, pct_error *err) {
    pct_sess *s = live(c, id, err);
    if (!s) return not_live(c, id, err);
    pct_status rc;
    if (pct__sess_guard(s, err) != PCT_OK) {
        rc = PCT_CLOSING;
    } else if (s->read_only) { /* options are persisted: not for another machine's session */
        rc = pct__sess_writable(s, err);
    } else if (config_id && !strcmp(config_id, "model")) {
        rc = pct__sess_set_model(s, value, 0, err);
    } else if (config_id && !strcmp(config_id, "mode")) {
        rc = pct__sess_set_mode(s, value, 0, err);
    } else if (config_id && !strcmp(config_id, "thinking_effort")) {
        rc = set_model_option(s, true, value, err);
    } else if (config_id && !strcmp(config_id, "context_1m")) {
        rc = set_model_option(s, false, value, err);
    } else {
        err->status = rc = PCT_BAD_ARG;
        snprintf(err->message, sizeof err->message,
                 "unknown configId: %.100s (model, mode, thinking_effort, context_1m)",
                 config_id ? config_id : "");
    }
    pct__sess_release(s);
    return rc;
}

void pct_notice(pct_controller *c, const char *id, const char *text) {
    pct_sess *s = live(c, id, NULL);
    if (!s) return;
    if (s->read_only) { /* its prompt is refused: nothing to tell about it */
        pct__sess_release(s);
        return;
    }
    pag_event ev = {.kind = PAG_EV_TEXT, .text = text};
    pct__emit(s, &ev);
    pct__sess_release(s);
}
