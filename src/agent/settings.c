/*
 * settings.c — agent settings parsed from the settings document the host supplies.
 *
 * The document is the whole settings object (what ~/.peri/settings.json holds for the
 * CLI, or what an embedder passes in pacp_options.settings); it is never read from
 * disk or the environment here (src/cli/ maps those). Format (every key optional):
 *   {"model": "openai:gpt-4o-mini",
 *    "providers": {"openai": {"baseUrl": "...", "apiKey": "..."},
 *                  "anthropic": {"baseUrl": "...", "apiKey": "..."}},
 *    "permissions": {"allow": ["write", "edit", "shell"]}   (or "allow": "*"),
 *    "contextBudget": 100000, "maxSteps": 50, "maxRetries": 3, "closeGraceMs": 500,
 *    "models": [{"id": "openai:gpt-4o", "name": "GPT-4o", "contextWindow": 128000,
 *                "price": {"input": 2.5, "output": 10}}],
 *    "sandbox": {"network": false, "writable": ["/extra/dir"], "mode": "off"}}
 * Other keys of "providers" name extra providers: {"local": {"type": "openai",
 * "baseUrl": ..., "apiKey": ...}}, used as "local:model-name".
 * A private deep copy of the document stays in pag_settings.doc so that other modules
 * read their own keys from the same object. A provider counts as configured when it
 * has a base URL or a key; a missing provider is reported at the first prompt.
 * "sandbox" shapes the native sandbox of the shell tool; "mode": "off" (the
 * only accepted mode) runs shell commands unsandboxed, with a warning per call. The
 * CLI takes it from the user's file only: a project cannot loosen the user's sandbox.
 */
#include "peri/agent.h"

#include "peri/json.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DEFAULT_OPENAI_URL    "https://api.openai.com/v1"
#define DEFAULT_ANTHROPIC_URL "https://api.anthropic.com"

static int set_str(char **dst, const char *v) {
    char *c = strdup(v);
    if (!c) return -1;
    free(*dst);
    *dst = c;
    return 0;
}

static int load_provider(pag_provider *p, pj_t *obj) {
    if (!pj_is_object(obj)) return 0;
    pj_t *u = pj_object_get(obj, "baseUrl");
    pj_t *k = pj_object_get(obj, "apiKey");
    if (pj_is_string(u) && set_str(&p->base_url, pj_string_value(u))) return -1;
    if (pj_is_string(k) && set_str(&p->api_key, pj_string_value(k))) return -1;
    return 0;
}

static int load_allow(pag_settings *s, pj_t *allow) {
    if (pj_is_string(allow)) {
        s->allow_tools = calloc(1, sizeof(char *));
        if (!s->allow_tools || !(s->allow_tools[0] = strdup(pj_string_value(allow)))) return -1;
        s->nallow = 1;
        return 0;
    }
    if (!pj_is_array(allow)) return 0;
    size_t n = pj_array_size(allow);
    s->allow_tools = calloc(n ? n : 1, sizeof(char *));
    if (!s->allow_tools) return -1;
    for (size_t i = 0; i < n; i++) {
        pj_t *v = pj_array_get(allow, i);
        if (!pj_is_string(v)) continue;
        if (!(s->allow_tools[s->nallow] = strdup(pj_string_value(v)))) return -1;
        s->nallow++;
    }
    return 0;
}

static int load_named(pag_settings *s, pj_t *providers) {
    const char *key;
    pj_t *v;
    size_t n = pj_object_size(providers);
    if (!n) return 0;
    s->providers = calloc(n, sizeof *s->providers);
    if (!s->providers) return -1;
    pj_object_foreach(providers, key, v) {
        if (!strcmp(key, "openai") || !strcmp(key, "anthropic") || !pj_is_object(v)) continue;
        pm_provider kind;
        if (!pm_provider_parse(pj_string_value(pj_object_get(v, "type")), &kind)) continue;
        pag_named_provider *np = &s->providers[s->nproviders];
        if (!(np->name = strdup(key))) return -1;
        s->nproviders++;
        np->kind = kind;
        if (load_provider(&np->p, v)) return -1;
        np->p.present = np->p.base_url != NULL;
    }
    return 0;
}

static int load_models(pag_settings *s, pj_t *models) {
    size_t n = pj_array_size(models);
    if (!n) return 0;
    s->models = calloc(n, sizeof *s->models);
    if (!s->models) return -1;
    for (size_t i = 0; i < n; i++) {
        pj_t *m = pj_array_get(models, i);
        const char *id = pj_string_value(pj_is_string(m) ? m : pj_object_get(m, "id"));
        if (!id || !strchr(id, ':')) continue;
        pag_model_entry *e = &s->models[s->nmodels];
        const char *name = pj_string_value(pj_object_get(m, "name"));
        if (!(e->id = strdup(id)) || !(e->name = strdup(name ? name : id))) {
            free(e->id);
            e->id = NULL;
            return -1;
        }
        s->nmodels++;
        pj_t *cw = pj_object_get(m, "contextWindow");
        if (pj_is_integer(cw) && pj_integer_value(cw) > 0) e->context_window = pj_integer_value(cw);
        pj_t *pr = pj_object_get(m, "price");
        pj_t *pi = pj_object_get(pr, "input"), *po = pj_object_get(pr, "output");
        if (pj_is_number(pi) && pj_is_number(po)) {
            e->has_price = true;
            e->price_in = pj_number_value(pi);
            e->price_out = pj_number_value(po);
        }
    }
    return 0;
}

/* Parses the document root. Messages name the field only: the caller says where the
 * document came from ("settings: ..."), so they never repeat that prefix. */
static int load_doc(pag_settings *s, pj_t *root, char *err, size_t errlen) {
    int rc = -1;
    pj_t *providers = pj_object_get(root, "providers");
    pj_t *v;
    if (load_provider(&s->openai, pj_object_get(providers, "openai")) ||
        load_provider(&s->anthropic, pj_object_get(providers, "anthropic")) ||
        (pj_is_object(providers) && load_named(s, providers)) ||
        load_models(s, pj_object_get(root, "models")))
        goto oom;
    if (pj_is_string(v = pj_object_get(root, "model")) && set_str(&s->model, pj_string_value(v)))
        goto oom;
    if (load_allow(s, pj_object_get(pj_object_get(root, "permissions"), "allow"))) goto oom;
    pj_t *sb = pj_object_get(root, "sandbox");
    if (sb && !pj_is_object(sb)) {
        snprintf(err, errlen, "\"sandbox\" must be an object");
        goto done;
    }
    if (pj_is_object(sb)) {
        pj_t *mode = pj_object_get(sb, "mode"), *net = pj_object_get(sb, "network");
        pj_t *wr = pj_object_get(sb, "writable");
        if ((mode && !(pj_is_string(mode) && strcmp(pj_string_value(mode), "off") == 0)) ||
            (net && !pj_is_boolean(net) &&
             !(pj_is_string(net) && !strcmp(pj_string_value(net), "host"))) ||
            (wr && !pj_is_array(wr))) {
            snprintf(err, errlen,
                     "\"sandbox\" is {\"network\": true | false | \"host\", \"writable\": "
                     "[absolute dirs], \"mode\": \"off\"}");
            goto done;
        }
        s->sandbox_off = mode != NULL;
        /* true: a network namespace of the run's own (pasta); "host": the host's */
        s->sandbox_host_network = pj_is_string(net);
        s->sandbox_network = pj_is_true(net) || s->sandbox_host_network;
        size_t n = pj_array_size(wr);
        if (n) {
            s->sandbox_writable = calloc(n, sizeof(char *));
            if (!s->sandbox_writable) goto oom;
            for (size_t i = 0; i < n; i++) {
                const char *d = pj_string_value(pj_array_get(wr, i));
                if (!d || d[0] != '/') {
                    snprintf(err, errlen, "sandbox.writable entries are absolute paths");
                    goto done;
                }
                if (!(s->sandbox_writable[s->nwritable] = strdup(d))) goto oom;
                s->nwritable++;
            }
        }
    }
    if (pj_is_integer(v = pj_object_get(root, "contextBudget")) && pj_integer_value(v) > 0)
        s->context_budget = pj_integer_value(v);
    if (pj_is_integer(v = pj_object_get(root, "maxSteps")) && pj_integer_value(v) > 0)
        s->max_steps = (int)pj_integer_value(v);
    if (pj_is_integer(v = pj_object_get(root, "maxRetries")) && pj_integer_value(v) >= 0)
        s->max_retries = (int)pj_integer_value(v);
    if (pj_is_integer(v = pj_object_get(root, "closeGraceMs")) && pj_integer_value(v) >= 0)
        s->close_grace_ms = (long)pj_integer_value(v);
    pj_t *ac = pj_object_get(root, "autoCompact");
    if (pj_is_false(pj_object_get(ac, "enabled"))) s->auto_compact_threshold = 0;
    if (pj_is_number(v = pj_object_get(ac, "threshold")) && pj_number_value(v) > 0 &&
        pj_number_value(v) <= 1 && !pj_is_false(pj_object_get(ac, "enabled")))
        s->auto_compact_threshold = pj_number_value(v);
    pj_t *goal = pj_object_get(root, "goal");
    if (pj_is_integer(v = pj_object_get(goal, "maxContinuations")) && pj_integer_value(v) >= 0 &&
        pj_integer_value(v) <= 1000)
        s->goal_max_continuations = (int)pj_integer_value(v);
    rc = 0;
    goto done;
oom:
    snprintf(err, errlen, "out of memory");
done:
    return rc;
}

int pag_settings_from_doc(pag_settings *s, const pj_t *doc, char *err, size_t errlen) {
    memset(s, 0, sizeof *s);
    s->context_budget = 100000;
    s->max_steps = 50;
    s->max_retries = 3;
    s->close_grace_ms = 500;
    s->auto_compact_threshold = 0.85;
    s->goal_max_continuations = 3;
    if (doc && !pj_is_object(doc)) {
        snprintf(err, errlen, "settings must be an object");
        return -1;
    }
    s->doc = doc ? pj_deep_copy(doc) : pj_object();
    if (!s->doc) goto oom;
    if (load_doc(s, s->doc, err, errlen)) { /* err says why */
        pag_settings_clear(s);
        return -1;
    }
    pag_provider *ps[2] = {&s->openai, &s->anthropic};
    const char *defaults[2] = {DEFAULT_OPENAI_URL, DEFAULT_ANTHROPIC_URL};
    for (int i = 0; i < 2; i++) {
        ps[i]->present = ps[i]->base_url || ps[i]->api_key;
        if (ps[i]->present && !ps[i]->base_url && set_str(&ps[i]->base_url, defaults[i])) goto oom;
    }
    return 0;
oom:
    snprintf(err, errlen, "out of memory loading settings");
    pag_settings_clear(s);
    return -1;
}

void pag_settings_clear(pag_settings *s) {
    free(s->openai.base_url);
    free(s->openai.api_key);
    free(s->anthropic.base_url);
    free(s->anthropic.api_key);
    free(s->model);
    pb_strv_free(s->sandbox_writable, s->nwritable);
    pb_strv_free(s->allow_tools, s->nallow);
    pj_decref(s->doc);
    for (size_t i = 0; i < s->nproviders; i++) {
        free(s->providers[i].name);
        free(s->providers[i].p.base_url);
        free(s->providers[i].p.api_key);
    }
    free(s->providers);
    for (size_t i = 0; i < s->nmodels; i++) {
        free(s->models[i].id);
        free(s->models[i].name);
    }
    free(s->models);
    memset(s, 0, sizeof *s);
}

bool pag_settings_allows(const pag_settings *s, const char *tool_name) {
    for (size_t i = 0; i < s->nallow; i++)
        if (strcmp(s->allow_tools[i], "*") == 0 || strcmp(s->allow_tools[i], tool_name) == 0)
            return true;
    /* "mcp__<server>__*" allows every tool of that one server, matched on the whole
     * server name: in a tool name "mcp__<server>__<tool>" the server part never contains
     * "__" nor ends in '_' (mcp/pool.c), so it runs up to the first "__" after "mcp__".
     * A rule whose server part could not be such a name matches nothing. */
    const char *ts = !strncmp(tool_name, "mcp__", 5) ? tool_name + 5 : NULL;
    const char *te = ts ? strstr(ts, "__") : NULL;
    for (size_t i = 0; te && i < s->nallow; i++) {
        const char *r = s->allow_tools[i];
        size_t n = strlen(r);
        if (n < 9 || strncmp(r, "mcp__", 5) || strcmp(r + n - 3, "__*")) continue;
        const char *rs = r + 5;
        size_t rn = n - 8; /* the rule's server part */
        if (rn == (size_t)(te - ts) && !strncmp(rs, ts, rn) && rs[rn - 1] != '_') return true;
    }
    return false;
}

const char *pag_settings_default_model(const pag_settings *s) {
    if (s->model) return s->model;
    if (s->nmodels) return s->models[0].id;
    if (s->openai.present) return "openai:gpt-4o-mini";
    if (s->anthropic.present) return "anthropic:claude-3-5-haiku-latest";
    return NULL;
}

const pag_model_entry *pag_settings_model_entry(const pag_settings *s, const char *spec) {
    for (size_t i = 0; spec && i < s->nmodels; i++)
        if (strcmp(s->models[i].id, spec) == 0) return &s->models[i];
    return NULL;
}

/* Known models: context window (tokens) and list prices (USD per million tokens,
 * input/output; 0 = unknown). Matched by prefix of the model name after the colon,
 * longest first. */
static const struct known {
    const char *prefix;
    int64_t window;
    double in, out;
} known[] = {
    {"gpt-4o-mini", 128000, 0.15, 0.60},
    {"gpt-4o", 128000, 2.50, 10.00},
    {"gpt-4.1-nano", 1047576, 0.10, 0.40},
    {"gpt-4.1-mini", 1047576, 0.40, 1.60},
    {"gpt-4.1", 1047576, 2.00, 8.00},
    {"gpt-4-turbo", 128000, 10.00, 30.00},
    {"gpt-5-nano", 400000, 0.05, 0.40},
    {"gpt-5-mini", 400000, 0.25, 2.00},
    {"gpt-5", 400000, 1.25, 10.00},
    {"o4-mini", 200000, 1.10, 4.40},
    {"o3-mini", 200000, 1.10, 4.40},
    {"o3", 200000, 2.00, 8.00},
    {"o1", 200000, 15.00, 60.00},
    {"claude-3-5-haiku", 200000, 0.80, 4.00},
    {"claude-3-5-sonnet", 200000, 3.00, 15.00},
    {"claude-3-7-sonnet", 200000, 3.00, 15.00},
    {"claude-haiku-4", 200000, 1.00, 5.00},
    {"claude-sonnet-4", 200000, 3.00, 15.00},
    {"claude-opus-4", 200000, 15.00, 75.00},
    {"claude-3-opus", 200000, 15.00, 75.00},
    {"claude-3-haiku", 200000, 0.25, 1.25},
};

static const struct known *known_model(const char *spec) {
    const char *name = spec ? strchr(spec, ':') : NULL;
    name = name ? name + 1 : spec;
    const struct known *best = NULL;
    for (size_t i = 0; name && i < sizeof known / sizeof known[0]; i++) {
        size_t n = strlen(known[i].prefix);
        if (strncmp(name, known[i].prefix, n) == 0 && (!best || n > strlen(best->prefix)))
            best = &known[i];
    }
    return best;
}

int64_t pag_model_context_window(const pag_settings *s, const char *spec) {
    const pag_model_entry *e = pag_settings_model_entry(s, spec);
    if (e && e->context_window > 0) return e->context_window;
    const struct known *k = known_model(spec);
    return k ? k->window : 0;
}

bool pag_model_choice_seen(const pj_t *opts, const char *spec) {
    size_t i;
    pj_t *o;
    pj_array_foreach(opts, i, o) {
        const char *v = pj_string_value(pj_object_get(o, "value"));
        if (v && spec && !strcmp(v, spec)) return true;
    }
    return false;
}

void pag_model_choice_add(pj_t *opts, const pag_settings *s, const char *spec) {
    if (!spec || !*spec || pag_model_choice_seen(opts, spec)) return;
    const pag_model_entry *e = pag_settings_model_entry(s, spec);
    pj_t *o = pj_pack("{s:s, s:s}", "value", spec, "name", e ? e->name : spec);
    int64_t w = pag_model_context_window(s, spec);
    if (o && w > 0) {
        char d[64];
        snprintf(d, sizeof d, "context window %lld tokens", (long long)w);
        pj_object_set_new(o, "description", pj_string(d));
    }
    if (o) pj_array_append_new(opts, o);
}

bool pag_model_price(const pag_settings *s, const char *spec, double *in, double *out) {
    const pag_model_entry *e = pag_settings_model_entry(s, spec);
    if (e && e->has_price) {
        *in = e->price_in;
        *out = e->price_out;
        return true;
    }
    const struct known *k = known_model(spec);
    if (!k || (k->in <= 0 && k->out <= 0)) return false;
    *in = k->in;
    *out = k->out;
    return true;
}

int pag_settings_model(const pag_settings *s, pm_config *cfg, const char **model_name, char *err,
                       size_t errlen) {
    return pag_settings_model_spec(s, NULL, cfg, model_name, err, errlen);
}

int pag_settings_model_spec(const pag_settings *s, const char *spec, pm_config *cfg,
                            const char **model_name, char *err, size_t errlen) {
    memset(cfg, 0, sizeof *cfg);
    if (!spec) spec = pag_settings_default_model(s);
    if (!spec) {
        {
            snprintf(err, errlen,
                     "no model provider configured: set PERI_MODEL (e.g. openai:gpt-4o-mini) "
                     "and OPENAI_API_KEY/OPENAI_BASE_URL or ANTHROPIC_API_KEY/"
                     "ANTHROPIC_BASE_URL, or providers in ~/.peri/settings.json");
            return -1;
        }
    }
    const char *colon = strchr(spec, ':');
    if (!colon || colon == spec || !colon[1]) {
        snprintf(err, errlen, "model must look like provider:model, got \"%s\"", spec);
        return -1;
    }
    size_t plen = (size_t)(colon - spec);
    const pag_provider *p;
    if (plen == 6 && strncmp(spec, "openai", 6) == 0) {
        cfg->provider = PM_PROVIDER_OPENAI;
        p = &s->openai;
    } else if (plen == 9 && strncmp(spec, "anthropic", 9) == 0) {
        cfg->provider = PM_PROVIDER_ANTHROPIC;
        p = &s->anthropic;
    } else {
        p = NULL;
        for (size_t i = 0; i < s->nproviders; i++)
            if (strlen(s->providers[i].name) == plen &&
                strncmp(spec, s->providers[i].name, plen) == 0) {
                cfg->provider = s->providers[i].kind;
                p = &s->providers[i].p;
            }
    }
    if (!p) {
        snprintf(err, errlen, "unknown model provider in \"%s\" (use openai or anthropic)", spec);
        return -1;
    }
    if (!p->present) {
        snprintf(err, errlen,
                 "model provider %.*s is not configured: set its API key / base URL in the "
                 "environment or in ~/.peri/settings.json",
                 (int)plen, spec);
        return -1;
    }
    cfg->base_url = p->base_url;
    cfg->api_key = p->api_key;
    cfg->max_retries = s->max_retries;
    *model_name = colon + 1;
    return 0;
}
