/*
 * outcome.c — the typed `runtime_unsupported` outcome (schema_version 1): its JSON
 * form, a strict decoder (duplicate keys, unknown fields, trailing data, wrong types
 * and missing fields rejected) and the validator (every constant, the digest format,
 * the digest of the exact raw request, features known, sorted and unique).
 *
 * Only the room backend's admission step creates one (room_backend.c); guest output is
 * never decoded into it.
 */
#include "place_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define KIND        "runtime_unsupported"
#define REASON      "required_features_unsupported"
#define NOT_STARTED "not_started"

static bool copy_str(pj_t *v, char *dst, size_t cap, const char *field, pl_error *err) {
    if (!pj_is_string(v))
        return pl__fail(err, PL_ERR_OUTCOME, "outcome.%s: required string", field);
    if (pj_string_length(v) >= cap)
        return pl__fail(err, PL_ERR_OUTCOME, "outcome.%s: too long", field);
    memcpy(dst, pj_string_value(v), pj_string_length(v) + 1);
    return true;
}

bool pl_outcome_decode(const char *json, size_t len, pl_outcome *out, pl_error *err) {
    memset(out, 0, sizeof *out);
    pj_t *root = pl__json_strict(json, len, "outcome", PL_ERR_OUTCOME, err);
    if (!root) return false;
    bool ok = false;
    static const char *const keys[] = {"schema_version",
                                       "kind",
                                       "escalation_required",
                                       "escalation_reason",
                                       "required_features",
                                       "workspace_disposition",
                                       "effect_disposition",
                                       "evidence",
                                       NULL};
    const char *k;
    pj_t *v;
    if (!pj_is_object(root)) {
        pl__fail(err, PL_ERR_OUTCOME, "outcome: not a JSON object");
        goto done;
    }
    pj_object_foreach(root, k, v) {
        bool known = false;
        for (size_t i = 0; keys[i]; i++)
            known = known || strcmp(k, keys[i]) == 0;
        if (!known) {
            pl__fail(err, PL_ERR_OUTCOME, "outcome: unknown field \"%.100s\"", k);
            goto done;
        }
    }
    for (size_t i = 0; keys[i]; i++)
        if (!pj_object_get(root, keys[i])) {
            pl__fail(err, PL_ERR_OUTCOME, "outcome.%s: missing", keys[i]);
            goto done;
        }
    v = pj_object_get(root, "schema_version");
    if (!pj_is_integer(v) || pj_integer_value(v) < 0 || pj_integer_value(v) > UINT32_MAX) {
        pl__fail(err, PL_ERR_OUTCOME, "outcome.schema_version: must be an unsigned integer");
        goto done;
    }
    out->schema_version = (uint32_t)pj_integer_value(v);
    v = pj_object_get(root, "escalation_required");
    if (!pj_is_boolean(v)) {
        pl__fail(err, PL_ERR_OUTCOME, "outcome.escalation_required: must be a boolean");
        goto done;
    }
    out->escalation_required = pj_is_true(v);
    if (!copy_str(pj_object_get(root, "kind"), out->kind, sizeof out->kind, "kind", err) ||
        !copy_str(pj_object_get(root, "escalation_reason"), out->escalation_reason,
                  sizeof out->escalation_reason, "escalation_reason", err) ||
        !copy_str(pj_object_get(root, "workspace_disposition"), out->workspace_disposition,
                  sizeof out->workspace_disposition, "workspace_disposition", err) ||
        !copy_str(pj_object_get(root, "effect_disposition"), out->effect_disposition,
                  sizeof out->effect_disposition, "effect_disposition", err))
        goto done;
    v = pj_object_get(root, "required_features");
    if (!pj_is_array(v)) {
        pl__fail(err, PL_ERR_OUTCOME, "outcome.required_features: must be an array");
        goto done;
    }
    if (pj_array_size(v) > PL_OUTCOME_FEATURES_MAX) {
        pl__fail(err, PL_ERR_OUTCOME, "outcome.required_features: too many");
        goto done;
    }
    for (size_t i = 0; i < pj_array_size(v); i++)
        if (!copy_str(pj_array_get(v, i), out->features[i], sizeof out->features[i],
                      "required_features[]", err))
            goto done;
    out->nfeatures = pj_array_size(v);
    v = pj_object_get(root, "evidence");
    if (!pj_is_object(v) || pj_object_size(v) != 1 || !pj_object_get(v, "request_sha256")) {
        pl__fail(err, PL_ERR_OUTCOME,
                 "outcome.evidence: must be an object with only \"request_sha256\"");
        goto done;
    }
    if (!copy_str(pj_object_get(v, "request_sha256"), out->request_sha256,
                  sizeof out->request_sha256, "evidence.request_sha256", err))
        goto done;
    ok = true;
done:
    pj_decref(root);
    return ok;
}

bool pl_outcome_validate(const pl_outcome *o, const char *raw, size_t raw_len, pl_error *err) {
    if (o->schema_version != 1)
        return pl__fail(err, PL_ERR_OUTCOME, "outcome.schema_version: must be 1");
    if (strcmp(o->kind, KIND) != 0)
        return pl__fail(err, PL_ERR_OUTCOME, "outcome.kind: must be \"" KIND "\"");
    if (!o->escalation_required)
        return pl__fail(err, PL_ERR_OUTCOME, "outcome.escalation_required: must be true");
    if (strcmp(o->escalation_reason, REASON) != 0)
        return pl__fail(err, PL_ERR_OUTCOME, "outcome.escalation_reason: must be \"" REASON "\"");
    if (strcmp(o->workspace_disposition, NOT_STARTED) != 0)
        return pl__fail(err, PL_ERR_OUTCOME,
                        "outcome.workspace_disposition: must be \"not_started\" (got \"%s\")",
                        o->workspace_disposition);
    if (strcmp(o->effect_disposition, NOT_STARTED) != 0)
        return pl__fail(err, PL_ERR_OUTCOME,
                        "outcome.effect_disposition: must be \"not_started\" (got \"%s\")",
                        o->effect_disposition);
    if (o->nfeatures < 1 || o->nfeatures > PL_REQ_COUNT)
        return pl__fail(err, PL_ERR_OUTCOME, "outcome.required_features: 1 to %d entries",
                        PL_REQ_COUNT);
    int prev = -1;
    for (size_t i = 0; i < o->nfeatures; i++) {
        int k = -1;
        for (unsigned j = 0; j < PL_REQ_COUNT; j++)
            if (strcmp(o->features[i], pl_feature_name(j)) == 0) k = (int)j;
        if (k < 0)
            return pl__fail(err, PL_ERR_OUTCOME, "outcome.required_features: unknown \"%s\"",
                            o->features[i]);
        if (k == prev)
            return pl__fail(err, PL_ERR_OUTCOME, "outcome.required_features: duplicate \"%s\"",
                            o->features[i]);
        if (k < prev) return pl__fail(err, PL_ERR_OUTCOME, "outcome.required_features: not sorted");
        prev = k;
    }
    if (!pl__digest_well_formed(o->request_sha256))
        return pl__fail(err, PL_ERR_OUTCOME,
                        "outcome.evidence.request_sha256: must be \"sha256:\" + 64 lowercase hex");
    if (raw) {
        char d[PL_DIGEST_LEN];
        pl__sha256_tag(raw, raw_len, d);
        if (strcmp(d, o->request_sha256) != 0)
            return pl__fail(err, PL_ERR_OUTCOME,
                            "outcome.evidence.request_sha256: does not match this request");
    }
    return true;
}

char *pl_outcome_json(const pl_outcome *o, size_t *len) {
    pj_t *j = pj_object(), *f = pj_array(), *ev = pj_object();
    bool ok = j && f && ev;
    for (size_t i = 0; ok && i < o->nfeatures; i++)
        ok = !pj_array_append_new(f, pj_string(o->features[i]));
    ok = ok && !pj_object_set_new(ev, "request_sha256", pj_string(o->request_sha256));
    ok = ok && !pj_object_set_new(j, "schema_version", pj_integer(o->schema_version)) &&
         !pj_object_set_new(j, "kind", pj_string(o->kind)) &&
         !pj_object_set_new(j, "escalation_required", pj_boolean(o->escalation_required)) &&
         !pj_object_set_new(j, "escalation_reason", pj_string(o->escalation_reason)) &&
         !pj_object_set(j, "required_features", f) &&
         !pj_object_set_new(j, "workspace_disposition", pj_string(o->workspace_disposition)) &&
         !pj_object_set_new(j, "effect_disposition", pj_string(o->effect_disposition)) &&
         !pj_object_set(j, "evidence", ev);
    char *s = ok ? pl__json_dump(j, len) : NULL;
    pj_decref(f);
    pj_decref(ev);
    pj_decref(j);
    return s;
}

/* The host-authored outcome for `features` (PL_REQ_* bits, non-zero) and raw bytes. */
void pl__outcome_make(pl_outcome *o, uint32_t features, const char *raw, size_t raw_len) {
    memset(o, 0, sizeof *o);
    o->schema_version = 1;
    snprintf(o->kind, sizeof o->kind, "%s", KIND);
    o->escalation_required = true;
    snprintf(o->escalation_reason, sizeof o->escalation_reason, "%s", REASON);
    for (unsigned i = 0; i < PL_REQ_COUNT; i++)
        if (features & (1u << i))
            snprintf(o->features[o->nfeatures++], sizeof o->features[0], "%s", pl_feature_name(i));
    snprintf(o->workspace_disposition, sizeof o->workspace_disposition, NOT_STARTED);
    snprintf(o->effect_disposition, sizeof o->effect_disposition, NOT_STARTED);
    pl__sha256_tag(raw, raw_len, o->request_sha256);
}
