/*
 * settings.c — agent settings: $HOME/.peri/settings.json plus environment overrides.
 *
 * File format (every key optional):
 *   {"model": "openai:gpt-4o-mini",
 *    "providers": {"openai": {"baseUrl": "...", "apiKey": "..."},
 *                  "anthropic": {"baseUrl": "...", "apiKey": "..."}},
 *    "permissions": {"allow": ["write", "edit", "shell"]}   (or "allow": "*"),
 *    "contextBudget": 100000, "maxSteps": 50, "maxRetries": 3, "closeGraceMs": 500,
 *    "sandbox": {"network": false, "writable": ["/extra/dir"], "mode": "off"}}
 * "sandbox" (issue 11) shapes the native sandbox of the shell tool; "mode": "off" (the
 * only accepted mode) runs shell commands unsandboxed, with a warning per call. It is
 * read from the user's file only: a project cannot loosen the user's sandbox.
 * Environment wins over the file. A provider counts as configured when it has a
 * base URL or a key; a missing provider is reported at the first prompt, not here.
 */
#include "peri/agent.h"

#include <jansson.h>
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

static int load_provider(pag_provider *p, json_t *obj) {
    if (!json_is_object(obj)) return 0;
    json_t *u = json_object_get(obj, "baseUrl");
    json_t *k = json_object_get(obj, "apiKey");
    if (json_is_string(u) && set_str(&p->base_url, json_string_value(u))) return -1;
    if (json_is_string(k) && set_str(&p->api_key, json_string_value(k))) return -1;
    return 0;
}

static int load_allow(pag_settings *s, json_t *allow) {
    if (json_is_string(allow)) {
        s->allow_tools = calloc(1, sizeof(char *));
        if (!s->allow_tools || !(s->allow_tools[0] = strdup(json_string_value(allow)))) return -1;
        s->nallow = 1;
        return 0;
    }
    if (!json_is_array(allow)) return 0;
    size_t n = json_array_size(allow);
    s->allow_tools = calloc(n ? n : 1, sizeof(char *));
    if (!s->allow_tools) return -1;
    for (size_t i = 0; i < n; i++) {
        json_t *v = json_array_get(allow, i);
        if (!json_is_string(v)) continue;
        if (!(s->allow_tools[s->nallow] = strdup(json_string_value(v)))) return -1;
        s->nallow++;
    }
    return 0;
}

static int load_file(pag_settings *s, const char *path, char *err, size_t errlen) {
    FILE *f = fopen(path, "rb");
    if (!f) return 0; /* absent file: defaults */
    json_error_t jerr;
    json_t *root = json_loadf(f, 0, &jerr);
    fclose(f);
    if (!json_is_object(root)) {
        snprintf(err, errlen, "%s: %s", path, root ? "settings must be an object" : jerr.text);
        json_decref(root);
        return -1;
    }
    int rc = -1;
    json_t *providers = json_object_get(root, "providers");
    json_t *v;
    if (load_provider(&s->openai, json_object_get(providers, "openai")) ||
        load_provider(&s->anthropic, json_object_get(providers, "anthropic")))
        goto oom;
    if (json_is_string(v = json_object_get(root, "model")) &&
        set_str(&s->model, json_string_value(v)))
        goto oom;
    if (load_allow(s, json_object_get(json_object_get(root, "permissions"), "allow"))) goto oom;
    json_t *sb = json_object_get(root, "sandbox");
    if (sb && !json_is_object(sb)) {
        snprintf(err, errlen, "%s: \"sandbox\" must be an object", path);
        goto done;
    }
    if (json_is_object(sb)) {
        json_t *mode = json_object_get(sb, "mode"), *net = json_object_get(sb, "network");
        json_t *wr = json_object_get(sb, "writable");
        if ((mode && !(json_is_string(mode) && strcmp(json_string_value(mode), "off") == 0)) ||
            (net && !json_is_boolean(net)) || (wr && !json_is_array(wr))) {
            snprintf(err, errlen,
                     "%s: \"sandbox\" is {\"network\": bool, \"writable\": [absolute dirs], "
                     "\"mode\": \"off\"}",
                     path);
            goto done;
        }
        s->sandbox_off = mode != NULL;
        s->sandbox_network = json_is_true(net);
        size_t n = json_array_size(wr);
        if (n) {
            s->sandbox_writable = calloc(n, sizeof(char *));
            if (!s->sandbox_writable) goto oom;
            for (size_t i = 0; i < n; i++) {
                const char *d = json_string_value(json_array_get(wr, i));
                if (!d || d[0] != '/') {
                    snprintf(err, errlen, "%s: sandbox.writable entries are absolute paths", path);
                    goto done;
                }
                if (!(s->sandbox_writable[s->nwritable] = strdup(d))) goto oom;
                s->nwritable++;
            }
        }
    }
    if (json_is_integer(v = json_object_get(root, "contextBudget")) && json_integer_value(v) > 0)
        s->context_budget = json_integer_value(v);
    if (json_is_integer(v = json_object_get(root, "maxSteps")) && json_integer_value(v) > 0)
        s->max_steps = (int)json_integer_value(v);
    if (json_is_integer(v = json_object_get(root, "maxRetries")) && json_integer_value(v) >= 0)
        s->max_retries = (int)json_integer_value(v);
    if (json_is_integer(v = json_object_get(root, "closeGraceMs")) && json_integer_value(v) >= 0)
        s->close_grace_ms = (long)json_integer_value(v);
    rc = 0;
    goto done;
oom:
    snprintf(err, errlen, "out of memory reading %s", path);
done:
    json_decref(root);
    return rc;
}

static const char *env_or_null(const char *(*ge)(const char *), const char *name) {
    const char *v = ge(name);
    return v && *v ? v : NULL;
}

static const char *plain_getenv(const char *name) {
    return getenv(name);
}

int pag_settings_load(pag_settings *s, const char *home, const char *(*getenv_fn)(const char *),
                      char *err, size_t errlen) {
    memset(s, 0, sizeof *s);
    s->context_budget = 100000;
    s->max_steps = 50;
    s->max_retries = 3;
    s->close_grace_ms = 500;
    if (!getenv_fn) getenv_fn = plain_getenv;
    if (home && *home) {
        size_t n = strlen(home) + 32;
        char *path = malloc(n);
        if (!path) goto oom;
        snprintf(path, n, "%s/.peri/settings.json", home);
        int rc = load_file(s, path, err, errlen);
        free(path);
        if (rc) {
            pag_settings_clear(s);
            return -1;
        }
    }
    const char *v;
    if ((v = env_or_null(getenv_fn, "OPENAI_API_KEY")) && set_str(&s->openai.api_key, v)) goto oom;
    if ((v = env_or_null(getenv_fn, "OPENAI_BASE_URL")) && set_str(&s->openai.base_url, v))
        goto oom;
    if ((v = env_or_null(getenv_fn, "ANTHROPIC_API_KEY")) && set_str(&s->anthropic.api_key, v))
        goto oom;
    if ((v = env_or_null(getenv_fn, "ANTHROPIC_BASE_URL")) && set_str(&s->anthropic.base_url, v))
        goto oom;
    if ((v = env_or_null(getenv_fn, "PERI_MODEL")) && set_str(&s->model, v)) goto oom;
    if ((v = env_or_null(getenv_fn, "PERI_CONTEXT_BUDGET")) && atoll(v) > 0)
        s->context_budget = atoll(v);
    if ((v = env_or_null(getenv_fn, "PERI_CLOSE_GRACE_MS")) && atol(v) >= 0)
        s->close_grace_ms = atol(v);
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
    for (size_t i = 0; i < s->nwritable; i++)
        free(s->sandbox_writable[i]);
    free(s->sandbox_writable);
    for (size_t i = 0; i < s->nallow; i++)
        free(s->allow_tools[i]);
    free(s->allow_tools);
    memset(s, 0, sizeof *s);
}

bool pag_settings_allows(const pag_settings *s, const char *tool_name) {
    for (size_t i = 0; i < s->nallow; i++)
        if (strcmp(s->allow_tools[i], "*") == 0 || strcmp(s->allow_tools[i], tool_name) == 0)
            return true;
    /* MCP (issue 12): "mcp__server__*" allows every tool of one server. */
    for (size_t i = 0; i < s->nallow; i++) {
        size_t n = strlen(s->allow_tools[i]);
        if (n > 6 && !strncmp(s->allow_tools[i], "mcp__", 5) && s->allow_tools[i][n - 1] == '*' &&
            !strncmp(s->allow_tools[i], tool_name, n - 1))
            return true;
    }
    return false;
}

int pag_settings_model(const pag_settings *s, pm_config *cfg, const char **model_name, char *err,
                       size_t errlen) {
    memset(cfg, 0, sizeof *cfg);
    const char *spec = s->model;
    if (!spec) {
        if (s->openai.present)
            spec = "openai:gpt-4o-mini";
        else if (s->anthropic.present)
            spec = "anthropic:claude-3-5-haiku-latest";
        else {
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
