/*
 * options.c — a live session's options in the agent module (its mode and its model),
 * their ACP shapes (configOptions) and their persistence in the thread's meta, with the
 * native host's texts; and the refusals of writes to sessions this instance may only
 * read.
 *
 * Invariants: the meta written back is the stored one with this form's keys updated
 * (format, frozenContext, mode, model), so what another host kept there survives. A
 * model is offered only when it can be built from the instance's settings; its key
 * comes from the embedding host (credential model:<provider>), never from the settings.
 */
#include "paw_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

pm_client *paw__model_new(paw *p, const char *spec, const char **name, char *why, size_t n) {
    pm_config cfg;
    const char *mname = NULL;
    char merr[300] = "";
    if (pag_settings_model_spec(&p->settings, spec, &cfg, &mname, merr, sizeof merr) != 0) {
        snprintf(why, n, "%.290s", merr);
        return NULL;
    }
    const char *sp = spec ? spec : pag_settings_default_model(&p->settings);
    const char *colon = sp ? strchr(sp, ':') : NULL;
    char prov[64], kind[120];
    snprintf(prov, sizeof prov, "%.*s", colon ? (int)(colon - sp) : 63, sp ? sp : "");
    snprintf(kind, sizeof kind, "model:%s", prov);
    if (cfg.api_key && *cfg.api_key)
        paw__log(p, 1,
                 "settings carry an API key for %s: it is not used; the module asks the host "
                 "for credential %s",
                 prov, kind);
    char *key = paw__credential(p, kind);
    cfg.api_key = key;
    cfg.proxy = "";
    if (cfg.max_retries == 0) cfg.max_retries = p->settings.max_retries;
    pm_error pe = {0};
    pm_client *c = pm_client_new(&cfg, &pe);
    if (key) {
        memset(key, 0, strlen(key));
        free(key);
    }
    if (!c) {
        snprintf(why, n, "model client: %.250s", pe.message);
        return NULL;
    }
    *name = mname;
    return c;
}

const char *paw__sess_model_spec(const paw_sess *s) {
    return s->model_spec ? s->model_spec : s->p->model_spec;
}

/* ---------------------------------------------------------------- configOptions */

/* The model choices: the settings' models, the default, the current (as native, without
 * the providers' listings: this form does not ask them). */
static pj_t *model_choices(const paw_sess *s) {
    const pag_settings *st = &s->p->settings;
    pj_t *models = pj_array();
    for (size_t i = 0; models && i < st->nmodels; i++)
        pag_model_choice_add(models, st, st->models[i].id);
    if (models) pag_model_choice_add(models, st, pag_settings_default_model(st));
    if (models) pag_model_choice_add(models, st, paw__sess_model_spec(s));
    return models;
}

pj_t *paw__config_options(paw_sess *s) {
    pj_t *models = model_choices(s);
    pj_t *modes = pj_array();
    for (int i = 0; modes && i < PAG_MODE_COUNT; i++)
        pj_array_append_new(modes,
                            pj_pack("{s:s, s:s, s:s}", "value", pag_mode_id(i), "name",
                                    pag_mode_name(i), "description", pag_mode_description(i)));
    pj_t *arr = models && modes ? pj_array() : NULL;
    if (arr && pj_array_size(models) > 0)
        pj_array_append_new(arr, pj_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:O}", "id", "model",
                                         "name", "Model", "description",
                                         "The model that answers in this session", "category",
                                         "model", "type", "select", "currentValue",
                                         paw__sess_model_spec(s), "options", models));
    if (arr)
        pj_array_append_new(arr,
                            pj_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:O}", "id", "mode", "name",
                                    "Mode", "description", "What the agent may do without asking",
                                    "category", "mode", "type", "select", "currentValue",
                                    pag_mode_id(pag_session_mode(s->agent)), "options", modes));
    pj_decref(models);
    pj_decref(modes);
    return arr;
}

/* ---------------------------------------------------------------- the model */

int paw__sess_set_model(paw_sess *s, const char *spec, char *why, size_t n) {
    pj_t *choices = model_choices(s);
    bool ok = choices && spec && pag_model_choice_seen(choices, spec);
    pj_decref(choices);
    if (!ok) {
        snprintf(why, n, "unknown value for config option model: %.150s", spec ? spec : "");
        return -1;
    }
    if (!strcmp(spec, paw__sess_model_spec(s))) return 0;
    char *copy = strdup(spec);
    if (!copy) {
        snprintf(why, n, "out of memory");
        return -1;
    }
    char missing[300] = "";
    const char *name = NULL;
    pm_client *c = paw__model_new(s->p, copy, &name, missing, sizeof missing);
    pm_client_free(s->model);
    free(s->model_spec);
    s->model = c; /* NULL: the turn says why (model_missing) */
    s->model_spec = copy;
    pag_session_set_model(s->agent, c ? name : NULL, c ? NULL : missing);
    return 0;
}

/* ---------------------------------------------------------------- meta */

void paw__sess_apply_meta(paw_sess *s) {
    const char *mode = pj_string_value(pj_object_get(s->meta, "mode"));
    pag_mode m;
    if (mode && pag_mode_parse(mode, &m)) pag_session_set_mode(s->agent, m);
    const char *model = pj_string_value(pj_object_get(s->meta, "model"));
    char why[300];
    if (model && *model && strcmp(model, paw__sess_model_spec(s)) != 0 &&
        paw__sess_set_model(s, model, why, sizeof why) != 0)
        paw__log(s->p, 1, "session %s: its model %s is not offered here; it keeps %s", s->id, model,
                 paw__sess_model_spec(s));
}

pst_status paw__sess_save_meta(paw_sess *s, pst_remote_cb cb, void *ud, pst_error *e) {
    pj_t *m = s->meta && pj_is_object(s->meta) ? pj_copy(s->meta) : pj_object();
    if (m) {
        pj_object_set_new(m, "format", pj_integer(1));
        pj_object_set_new(m, "frozenContext", pj_string(s->frozen ? s->frozen : ""));
        pj_object_set_new(m, "mode", pj_string(pag_mode_id(pag_session_mode(s->agent))));
        if (s->model_spec) pj_object_set_new(m, "model", pj_string(s->model_spec));
    }
    char *txt = m ? pj_dumps(m, PJ_COMPACT) : NULL;
    if (!txt) {
        pj_decref(m);
        snprintf(e->message, sizeof e->message, "out of memory");
        return PST_ERR_NOMEM;
    }
    pst_status st = pst_remote_thread_set_meta(s->p->store, s->id, txt, cb, ud, e);
    free(txt);
    if (st == PST_OK) {
        pj_decref(s->meta);
        s->meta = m;
    } else {
        pj_decref(m);
    }
    return st;
}

/* ---------------------------------------------------------------- refusals */

void paw__refuse_foreign(paw *p, pj_t *id, const char *sid, const char *owner) {
    char msg[300];
    snprintf(msg, sizeof msg,
             "Session %.40s belongs to machine %.40s, not to this host's machine %.40s", sid, owner,
             p->machine_id);
    paw__reply_error(p, id, PB_RPC_INVALID_PARAMS, msg, pj_pack("{s:s}", "sessionId", sid));
}

void paw__refuse_read_only(paw *p, pj_t *id, const paw_sess *s) {
    if (s->format == 1) return paw__refuse_foreign(p, id, s->id, s->owner);
    char msg[300];
    if (s->format >= 0)
        snprintf(msg, sizeof msg,
                 "Session %.40s was written in history format %d and this host writes format "
                 "%d: its history can be read but not continued; start a new session",
                 s->id, s->format, 1);
    else
        snprintf(msg, sizeof msg,
                 "Session %.40s has an unreadable history format: its history can be read but "
                 "not continued; start a new session",
                 s->id);
    paw__reply_error(p, id, PB_RPC_INVALID_PARAMS, msg,
                     pj_pack("{s:s, s:s}", "sessionId", s->id, "reason", "history_format"));
}
