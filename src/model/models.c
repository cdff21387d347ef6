/*
 * models.c — the model list a provider reports: GET <base>/models (OpenAI-compatible) or
 * GET <base>/v1/models (Anthropic), with the same headers as a model call.
 *
 * Bounded: one blocking request with a connect and a whole-request timeout, a body of at
 * most PM_MODELS_BODY bytes, at most PM_MODELS_MAX ids, each a printable id of at most
 * 128 bytes (others are skipped). http and https only; no redirect is followed.
 */
#include "model_int.h"

#include <curl/curl.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PM_MODELS_BODY (4u << 20)
#define PM_MODELS_MAX  500

static bool id_ok(const char *s) {
    size_t n = strlen(s);
    if (n == 0 || n > 128) return false;
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)s[i] <= 0x20 || (unsigned char)s[i] >= 0x7f) return false;
    return true;
}

void pm_models_free(char **ids, size_t n) {
    pb_strv_free(ids, n);
}

pm_status pm_list_models(const pm_config *cfg, long timeout_ms, char ***ids, size_t *n,
                         pm_error *err) {
    *ids = NULL;
    *n = 0;
    if (err) memset(err, 0, sizeof *err);
    if (!cfg || !cfg->base_url || !*cfg->base_url ||
        (cfg->provider != PM_PROVIDER_OPENAI && cfg->provider != PM_PROVIDER_ANTHROPIC))
        return pm__fail(err, PM_ERR_ARG, "listing models needs a provider and a base URL");
    size_t bl = strlen(cfg->base_url);
    while (bl > 0 && cfg->base_url[bl - 1] == '/')
        bl--;
    char *url = malloc(bl + 16);
    if (!url) return pm__fail(err, PM_ERR_NOMEM, "out of memory");
    snprintf(url, bl + 16, "%.*s%s", (int)bl, cfg->base_url,
             cfg->provider == PM_PROVIDER_OPENAI ? "/models" : "/v1/models");
    pb_buf h = {0};
    struct curl_slist *hdrs = curl_slist_append(NULL, "Accept: application/json");
    const char *key = cfg->api_key ? cfg->api_key : "";
    bool oom = !hdrs;
    if (!oom && *key) {
        const char *pre =
            cfg->provider == PM_PROVIDER_OPENAI ? "Authorization: Bearer " : "x-api-key: ";
        oom = !pb_buf_put(&h, pre, strlen(pre)) || !pb_buf_put(&h, key, strlen(key)) ||
              !curl_slist_append(hdrs, h.p);
    }
    if (!oom && cfg->provider == PM_PROVIDER_ANTHROPIC) {
        const char *v = cfg->anthropic_version ? cfg->anthropic_version : "2023-06-01";
        pb_buf_reset(&h);
        oom = !pb_buf_put(&h, "anthropic-version: ", 19) || !pb_buf_put(&h, v, strlen(v)) ||
              !curl_slist_append(hdrs, h.p);
    }
    CURL *e = oom ? NULL : curl_easy_init();
    pb_capped b = {.max = PM_MODELS_BODY};
    pm_status st = PM_OK;
    if (!e) {
        st = pm__fail(err, PM_ERR_NOMEM, "out of memory (or curl_global_init was not called)");
        goto out;
    }
    char ebuf[CURL_ERROR_SIZE] = "";
    long t = timeout_ms > 0 ? timeout_ms : 10000;
    curl_easy_setopt(e, CURLOPT_URL, url);
    curl_easy_setopt(e, CURLOPT_HTTPHEADER, hdrs);
    curl_easy_setopt(e, CURLOPT_HTTPGET, 1L);
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, pb_capped_write);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, &b);
    curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(e, CURLOPT_ERRORBUFFER, ebuf);
    curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, t < 5000 ? t : 5000L);
    curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, t);
    curl_easy_setopt(e, CURLOPT_ACCEPT_ENCODING, "");
    curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
    if (cfg->proxy) curl_easy_setopt(e, CURLOPT_PROXY, cfg->proxy);
    CURLcode cc = curl_easy_perform(e);
    long status = 0;
    curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &status);
    if (cc != CURLE_OK) {
        st = pm__fail(err, b.over ? PM_ERR_PROTOCOL : PM_ERR_NETWORK, "%s",
                      b.over ? "the model list is too large" : (*ebuf ? ebuf : "network error"));
        goto out;
    }
    if (status < 200 || status >= 300) {
        st = pm__fail(err, PM_ERR_HTTP, "HTTP %ld listing the models", status);
        if (err) err->http_status = status;
        goto out;
    }
    pj_t *doc = b.b.p ? pj_loadb(b.b.p, b.b.len, 0, NULL) : NULL;
    pj_t *data = pj_object_get(doc, "data");
    if (!pj_is_array(data)) {
        pj_decref(doc);
        st = pm__fail(err, PM_ERR_PROTOCOL, "the model list has no \"data\" array");
        goto out;
    }
    size_t cnt = pj_array_size(data) < PM_MODELS_MAX ? pj_array_size(data) : PM_MODELS_MAX;
    char **out = calloc(cnt ? cnt : 1, sizeof *out);
    size_t k = 0;
    for (size_t i = 0; out && i < cnt; i++) {
        const char *id = pj_string_value(pj_object_get(pj_array_get(data, i), "id"));
        if (id && id_ok(id) && (out[k] = strdup(id))) k++;
    }
    pj_decref(doc);
    if (!out) {
        st = pm__fail(err, PM_ERR_NOMEM, "out of memory");
        goto out;
    }
    *ids = out;
    *n = k;
out:
    if (e) curl_easy_cleanup(e);
    curl_slist_free_all(hdrs);
    pb_buf_free(&h);
    pb_buf_free(&b.b);
    free(url);
    return st;
}
