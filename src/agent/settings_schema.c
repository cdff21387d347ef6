/*
 * settings_schema.c — checks a settings document against the keys the host reads.
 *
 * The loader (settings.c) takes what it understands and ignores the rest, so a
 * misspelled key ("modle") or a value of the wrong type ("maxSteps": "50") would pass
 * without a word. This checker walks the same document and reports, per finding, one
 * message naming the field by its path ("providers.openai.baseUrl: ..."):
 *   - a warning for a key the host does not read, with the nearest known key of that
 *     object when one is close (edit distance with transpositions, case-insensitive);
 *   - an error for a value of the wrong type or shape, saying what it must be.
 * The schema is the one settings.c documents, plus "storage" (src/cli/host_env.c),
 * "mcpServers" (src/mcp/pool.c), "hooks" (src/agent/middleware/hooks.c) and "$schema"
 * (for editors). It reads nothing but the
 * document, keeps no state, and allocates nothing but its message buffer on the stack.
 */
#include "agent/checker.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

typedef pag__checker checker;

void pag__finding(checker *c, bool error, const char *where, const char *fmt, ...) {
    char msg[600];
    int n = 0;
    if (where && *where) n = snprintf(msg, sizeof msg, "%s: ", where);
    if (n < 0 || (size_t)n >= sizeof msg) n = 0;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg + n, sizeof msg - (size_t)n, fmt, ap);
    va_end(ap);
    if (error) c->errors++;
    if (c->report) c->report(c->ud, error, msg);
}

/* where + "." + key (or key alone at the top) into buf, cut to fit. */
static const char *join(char *buf, size_t n, const char *where, const char *key) {
    size_t len = 0;
    const char *parts[3] = {where, *where ? "." : "", key};
    for (int i = 0; i < 3; i++)
        for (const char *p = parts[i]; *p && len + 1 < n; p++)
            buf[len++] = *p;
    buf[len] = 0;
    return buf;
}

/* The edit distance of a and b (optimal string alignment: insertions, deletions,
 * substitutions and swaps of neighbours), ASCII case folded; long keys are not compared
 * (SIZE_MAX). */
size_t pag_edit_distance(const char *a, const char *b) {
    size_t la = strlen(a), lb = strlen(b);
    enum { MAX = 64 };
    if (la > MAX || lb > MAX) return (size_t)-1;
    size_t d[MAX + 1][MAX + 1];
    for (size_t i = 0; i <= la; i++)
        d[i][0] = i;
    for (size_t j = 0; j <= lb; j++)
        d[0][j] = j;
    for (size_t i = 1; i <= la; i++)
        for (size_t j = 1; j <= lb; j++) {
            int ca = tolower((unsigned char)a[i - 1]), cb = tolower((unsigned char)b[j - 1]);
            size_t best = d[i - 1][j - 1] + (ca != cb);
            if (d[i - 1][j] + 1 < best) best = d[i - 1][j] + 1;
            if (d[i][j - 1] + 1 < best) best = d[i][j - 1] + 1;
            if (i > 1 && j > 1 && ca == tolower((unsigned char)b[j - 2]) &&
                tolower((unsigned char)a[i - 2]) == cb && d[i - 2][j - 2] + 1 < best)
                best = d[i - 2][j - 2] + 1;
            d[i][j] = best;
        }
    return d[la][lb];
}

/* The known key closest to key, or NULL when none is close enough to be a slip: at
 * most 1 edit for keys up to 4 characters, 2 for longer ones, 3 for 10 and more. */
static const char *nearest(const char *key, const char *const *known) {
    const char *best = NULL;
    size_t bd = (size_t)-1;
    for (size_t i = 0; known[i]; i++) {
        size_t d = pag_edit_distance(key, known[i]);
        size_t len = strlen(known[i]);
        size_t limit = len <= 4 ? 1 : len < 10 ? 2 : 3;
        if (d <= limit && d < bd) {
            bd = d;
            best = known[i];
        }
    }
    return best;
}

/* Warns about each key of obj that is not in known (NULL-terminated). */
static void unknown_keys(checker *c, const pj_t *obj, const char *where, const char *const *known) {
    const char *key;
    pj_t *v;
    pj_object_foreach((pj_t *)obj, key, v) {
        bool found = false;
        for (size_t i = 0; known[i] && !found; i++)
            found = strcmp(key, known[i]) == 0;
        if (found) continue;
        const char *near = nearest(key, known);
        if (near)
            pag__finding(c, false, where,
                         "unknown key \"%.80s\" (did you mean \"%s\"?); it is ignored", key, near);
        else {
            char list[300] = "";
            size_t n = 0;
            for (size_t i = 0; known[i] && n < sizeof list; i++)
                n += (size_t)snprintf(list + n, sizeof list - n, "%s%s", i ? ", " : "", known[i]);
            pag__finding(c, false, where, "unknown key \"%.80s\" is ignored (known keys: %s)", key,
                         list);
        }
    }
}

static const char *type_name(const pj_t *v) {
    if (!v) return "missing";
    switch (pj_typeof(v)) {
    case PJ_OBJECT: return "an object";
    case PJ_ARRAY: return "an array";
    case PJ_STRING: return "a string";
    case PJ_INTEGER: return "an integer";
    case PJ_REAL: return "a number";
    case PJ_TRUE:
    case PJ_FALSE: return "a boolean";
    case PJ_NULL: return "null";
    }
    return "?";
}

/* Each want_* checks one value; false (and an error) when it is not what it must be. */
static bool want(checker *c, const pj_t *v, bool ok, const char *where, const char *what) {
    if (!ok && !v) pag__finding(c, true, where, "is missing; it must be %s", what);
    if (!ok && v) pag__finding(c, true, where, "must be %s, not %s", what, type_name(v));
    return ok;
}

static bool want_string(checker *c, const pj_t *v, const char *where) {
    return want(c, v, pj_is_string(v), where, "a string");
}

static bool want_object(checker *c, const pj_t *v, const char *where) {
    return want(c, v, pj_is_object(v), where, "an object");
}

static void want_int(checker *c, const pj_t *v, const char *where, pj_int_t min) {
    if (pj_is_integer(v) && pj_integer_value(v) >= min) return;
    pag__finding(c, true, where, "must be %s integer, not %s%s",
                 min > 0 ? "a positive" : "a non-negative", pj_is_integer(v) ? "" : type_name(v),
                 pj_is_integer(v) ? (min > 0 ? "zero or less" : "below zero") : "");
}

static void want_string_array(checker *c, const pj_t *v, const char *where) {
    if (!want(c, v, pj_is_array(v), where, "an array of strings")) return;
    size_t i;
    pj_t *e;
    char w[256];
    pj_array_foreach((pj_t *)v, i, e) {
        snprintf(w, sizeof w, "%s[%zu]", where, i);
        want_string(c, e, w);
    }
}

/* An object of named entries (providers, mcpServers): each must be an object with only
 * the known keys; then one() checks the entry (w: where it is). */
static void check_named(checker *c, const pj_t *v, const char *where, const char *const *keys,
                        void (*one)(checker *c, const char *name, pj_t *e, const char *w)) {
    if (!want_object(c, v, where)) return;
    const char *name;
    pj_t *e;
    char w[256];
    pj_object_foreach((pj_t *)v, name, e) {
        join(w, sizeof w, where, name);
        if (!want_object(c, e, w)) continue;
        unknown_keys(c, e, w, keys);
        one(c, name, e, w);
    }
}

static const char *const provider_keys[] = {"type", "baseUrl", "apiKey", NULL};

static void check_provider(checker *c, const char *name, pj_t *p, const char *w) {
    char w2[256];
    pj_t *t = pj_object_get(p, "type");
    bool builtin = !strcmp(name, "openai") || !strcmp(name, "anthropic");
    if (t && want_string(c, t, join(w2, sizeof w2, w, "type")) &&
        strcmp(pj_string_value(t), "openai") && strcmp(pj_string_value(t), "anthropic"))
        pag__finding(c, true, w2,
                     "must be \"openai\" or \"anthropic\" (the API it speaks), not "
                     "\"%.60s\"",
                     pj_string_value(t));
    else if (!t && !builtin)
        pag__finding(c, true, w,
                     "a provider other than openai and anthropic needs \"type\": \"openai\" or "
                     "\"anthropic\" (the API it speaks)");
    for (size_t i = 1; provider_keys[i]; i++) {
        pj_t *s = pj_object_get(p, provider_keys[i]);
        if (s) want_string(c, s, join(w2, sizeof w2, w, provider_keys[i]));
    }
}

static void check_models(checker *c, const pj_t *v, const char *where) {
    static const char *const keys[] = {"id", "name", "contextWindow", "price", NULL};
    static const char *const price_keys[] = {"input", "output", NULL};
    if (!want(c, v, pj_is_array(v), where, "an array")) return;
    size_t i;
    pj_t *m;
    char w[256], w2[256], w3[256];
    pj_array_foreach((pj_t *)v, i, m) {
        snprintf(w, sizeof w, "%s[%zu]", where, i);
        const pj_t *id = m;
        if (pj_is_object(m)) {
            unknown_keys(c, m, w, keys);
            id = pj_object_get(m, "id");
            join(w2, sizeof w2, w, "id");
            if (!id) {
                pag__finding(c, true, w, "needs \"id\": \"provider:model\"");
                continue;
            }
        } else if (!pj_is_string(m)) {
            pag__finding(c, true, w, "must be \"provider:model\" or an object with \"id\", not %s",
                         type_name(m));
            continue;
        } else {
            snprintf(w2, sizeof w2, "%s", w);
        }
        if (want_string(c, id, w2) && !strchr(pj_string_value(id), ':'))
            pag__finding(c, true, w2,
                         "must look like provider:model (e.g. openai:gpt-4o), not \"%.60s\"",
                         pj_string_value(id));
        if (!pj_is_object(m)) continue;
        pj_t *x;
        if ((x = pj_object_get(m, "name"))) want_string(c, x, join(w2, sizeof w2, w, "name"));
        if ((x = pj_object_get(m, "contextWindow")))
            want_int(c, x, join(w2, sizeof w2, w, "contextWindow"), 1);
        if ((x = pj_object_get(m, "price")) && want_object(c, x, join(w2, sizeof w2, w, "price"))) {
            unknown_keys(c, x, w2, price_keys);
            for (size_t k = 0; price_keys[k]; k++) {
                pj_t *n = pj_object_get(x, price_keys[k]);
                want(c, n, pj_is_number(n), join(w3, sizeof w3, w2, price_keys[k]),
                     "a number (USD per million tokens)");
            }
        }
    }
}

static void check_sandbox(checker *c, const pj_t *v, const char *where) {
    static const char *const keys[] = {"network", "writable", "mode", NULL};
    if (!want_object(c, v, where)) return;
    unknown_keys(c, v, where, keys);
    pj_t *x;
    char w[256];
    if ((x = pj_object_get(v, "network")))
        want(c, x, pj_is_boolean(x) || (pj_is_string(x) && !strcmp(pj_string_value(x), "host")),
             join(w, sizeof w, where, "network"),
             "true (own network namespace), false, or \"host\" (the host's network)");
    if ((x = pj_object_get(v, "mode")) && !(pj_is_string(x) && !strcmp(pj_string_value(x), "off")))
        pag__finding(
            c, true, join(w, sizeof w, where, "mode"),
            "the only mode is \"off\" (run shell commands unsandboxed); leave it out to keep "
            "the sandbox");
    if ((x = pj_object_get(v, "writable"))) {
        join(w, sizeof w, where, "writable");
        want_string_array(c, x, w);
        size_t i;
        pj_t *e;
        pj_array_foreach(x, i, e) {
            if (pj_is_string(e) && pj_string_value(e)[0] != '/')
                pag__finding(c, true, w, "entry %zu (\"%.80s\") must be an absolute path", i,
                             pj_string_value(e));
        }
    }
}

static const char *const mcp_keys[] = {"name", "type", "command", "args",
                                       "env",  "url",  "headers", NULL};

static void check_mcp_server(checker *c, const char *name, pj_t *e, const char *w) {
    (void)name;
    char w2[256];
    pj_t *x, *t = pj_object_get(e, "type");
    if (t && want_string(c, t, join(w2, sizeof w2, w, "type"))) {
        const char *ts = pj_string_value(t);
        if (strcmp(ts, "stdio") && strcmp(ts, "http") && strcmp(ts, "streamable-http") &&
            strcmp(ts, "sse"))
            pag__finding(c, true, w2, "must be stdio, http, streamable-http or sse, not \"%.40s\"",
                         ts);
    }
    const char *ts = pj_string_value(t);
    bool remote =
        ts && (!strcmp(ts, "http") || !strcmp(ts, "streamable-http") || !strcmp(ts, "sse"));
    if ((x = pj_object_get(e, "command"))) want_string(c, x, join(w2, sizeof w2, w, "command"));
    if ((x = pj_object_get(e, "url"))) want_string(c, x, join(w2, sizeof w2, w, "url"));
    if ((x = pj_object_get(e, "args"))) want_string_array(c, x, join(w2, sizeof w2, w, "args"));
    if ((x = pj_object_get(e, "env")))
        want(c, x, pj_is_object(x) || pj_is_array(x), join(w2, sizeof w2, w, "env"),
             "an object of strings");
    if ((x = pj_object_get(e, "headers")))
        want(c, x, pj_is_object(x) || pj_is_array(x), join(w2, sizeof w2, w, "headers"),
             "an object of strings");
    if (remote && !pj_object_get(e, "url"))
        pag__finding(c, true, w, "a server of type \"%s\" needs \"url\"", pj_string_value(t));
    if ((!ts || !strcmp(ts, "stdio")) && !pj_object_get(e, "command"))
        pag__finding(c, true, w,
                     "a stdio server needs \"command\" (and \"type\": \"http\" with "
                     "\"url\" for a remote one)");
}

size_t pag_settings_check(const pj_t *doc, pag_settings_report_fn report, void *ud) {
    static const char *const keys[] = {
        "model",       "providers",  "permissions",  "contextBudget",
        "maxSteps",    "maxRetries", "closeGraceMs", "models",
        "sandbox",     "storage",    "mcpServers",   "$schema",
        "autoCompact", "goal",       "hooks", /* session hooks (middleware/hooks.c) */
        "telemetry",                          /* one OTLP span per turn (telemetry.c) */
        NULL};
    static const char *const tel_keys[] = {"url", "serviceName", NULL};
    static const char *const ac_keys[] = {"enabled", "threshold", NULL};
    static const char *const goal_keys[] = {"maxContinuations", NULL};
    static const char *const perm_keys[] = {"allow", NULL};
    checker c = {report, ud, 0};
    if (!pj_is_object(doc)) {
        pag__finding(&c, true, NULL, "settings must be a JSON object ({...}), not %s",
                     doc ? type_name(doc) : "nothing");
        return c.errors;
    }
    unknown_keys(&c, doc, "", keys);
    pj_t *v;
    if ((v = pj_object_get(doc, "model")) && want_string(&c, v, "model") &&
        !strchr(pj_string_value(v), ':'))
        pag__finding(&c, true, "model",
                     "must look like provider:model (e.g. openai:gpt-4o-mini), not "
                     "\"%.60s\"",
                     pj_string_value(v));
    if ((v = pj_object_get(doc, "providers")))
        check_named(&c, v, "providers", provider_keys, check_provider);
    if ((v = pj_object_get(doc, "permissions")) && want_object(&c, v, "permissions")) {
        unknown_keys(&c, v, "permissions", perm_keys);
        pj_t *a = pj_object_get(v, "allow");
        if (a && !pj_is_string(a)) want_string_array(&c, a, "permissions.allow");
    }
    if ((v = pj_object_get(doc, "contextBudget"))) want_int(&c, v, "contextBudget", 1);
    if ((v = pj_object_get(doc, "maxSteps"))) want_int(&c, v, "maxSteps", 1);
    if ((v = pj_object_get(doc, "maxRetries"))) want_int(&c, v, "maxRetries", 0);
    if ((v = pj_object_get(doc, "closeGraceMs"))) want_int(&c, v, "closeGraceMs", 0);
    if ((v = pj_object_get(doc, "models"))) check_models(&c, v, "models");
    if ((v = pj_object_get(doc, "sandbox"))) check_sandbox(&c, v, "sandbox");
    if ((v = pj_object_get(doc, "storage"))) want_string(&c, v, "storage");
    if ((v = pj_object_get(doc, "mcpServers")))
        check_named(&c, v, "mcpServers", mcp_keys, check_mcp_server);
    if ((v = pj_object_get(doc, "autoCompact")) && want_object(&c, v, "autoCompact")) {
        unknown_keys(&c, v, "autoCompact", ac_keys);
        pj_t *x;
        if ((x = pj_object_get(v, "enabled")))
            want(&c, x, pj_is_boolean(x), "autoCompact.enabled", "true or false");
        if ((x = pj_object_get(v, "threshold")))
            want(&c, x, pj_is_number(x) && pj_number_value(x) > 0 && pj_number_value(x) <= 1,
                 "autoCompact.threshold", "a number above 0 and at most 1");
    }
    if ((v = pj_object_get(doc, "goal")) && want_object(&c, v, "goal")) {
        unknown_keys(&c, v, "goal", goal_keys);
        pj_t *x;
        if ((x = pj_object_get(v, "maxContinuations"))) want_int(&c, x, "goal.maxContinuations", 0);
    }
    if ((v = pj_object_get(doc, "telemetry")) && want_object(&c, v, "telemetry")) {
        unknown_keys(&c, v, "telemetry", tel_keys);
        pj_t *x = pj_object_get(v, "url");
        if (!x)
            pag__finding(&c, true, "telemetry", "needs \"url\" (an OTLP/HTTP traces endpoint)");
        else if (want_string(&c, x, "telemetry.url") &&
                 strncmp(pj_string_value(x), "http://", 7) != 0 &&
                 strncmp(pj_string_value(x), "https://", 8) != 0)
            pag__finding(&c, true, "telemetry.url", "must be an http(s) URL, not \"%.60s\"",
                         pj_string_value(x));
        if ((x = pj_object_get(v, "serviceName"))) want_string(&c, x, "telemetry.serviceName");
    }
    if ((v = pj_object_get(doc, "hooks"))) c.errors += pag_hooks_check(v, "hooks", report, ud);
    return c.errors;
}
