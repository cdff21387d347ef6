/*
 * message.c — the neutral conversation shape: pm_message building, copying, names, and
 * its JSON form (what the store persists).
 */
#include "model_int.h"

#include <stdlib.h>
#include <string.h>

static const char *const role_names[] = {"system", "user", "assistant", "tool"};

const char *pm_role_name(pm_role r) {
    return (unsigned)r < 4 ? role_names[r] : "user";
}

bool pm_role_parse(const char *name, pm_role *out) {
    for (int i = 0; name && i < 4; i++)
        if (strcmp(name, role_names[i]) == 0) {
            *out = (pm_role)i;
            return true;
        }
    return false;
}

void pm_message_init(pm_message *m, pm_role role) {
    memset(m, 0, sizeof *m);
    m->role = role;
}

static void part_free(pm_part *p) {
    free(p->text);
    free(p->id);
    free(p->name);
    free(p->arguments);
    free(p->signature);
}

void pm_message_clear(pm_message *m) {
    if (!m) return;
    for (size_t i = 0; i < m->nparts; i++)
        part_free(&m->parts[i]);
    free(m->parts);
    m->parts = NULL;
    m->nparts = m->cap_ = 0;
}

/* Takes ownership of the strings in *p on success; frees them on failure. */
static pm_status push_part(pm_message *m, pm_part *p) {
    if (m->nparts == m->cap_) {
        size_t cap = m->cap_ ? m->cap_ * 2 : 4;
        pm_part *np = realloc(m->parts, cap * sizeof *np);
        if (!np) {
            part_free(p);
            return PM_ERR_NOMEM;
        }
        m->parts = np;
        m->cap_ = cap;
    }
    m->parts[m->nparts++] = *p;
    return PM_OK;
}

static bool dup_ok(char **dst, const char *src) {
    *dst = src ? strdup(src) : NULL;
    return !src || *dst;
}

static pm_status add(pm_message *m, pm_part_kind kind, const char *text, const char *id,
                     const char *name, const char *args, const char *sig, bool is_error) {
    pm_part p = {.kind = kind, .is_error = is_error};
    if (!dup_ok(&p.text, text) || !dup_ok(&p.id, id) || !dup_ok(&p.name, name) ||
        !dup_ok(&p.arguments, args) || !dup_ok(&p.signature, sig)) {
        part_free(&p);
        return PM_ERR_NOMEM;
    }
    return push_part(m, &p);
}

pm_status pm_message_add_text(pm_message *m, const char *text) {
    return add(m, PM_PART_TEXT, text ? text : "", NULL, NULL, NULL, NULL, false);
}

pm_status pm_message_add_text_source(pm_message *m, const char *text, const char *source_json) {
    return add(m, PM_PART_TEXT, text ? text : "", NULL, NULL, source_json, NULL, false);
}

pm_status pm_message_add_thinking(pm_message *m, const char *text, const char *signature) {
    return add(m, PM_PART_THINKING, text ? text : "", NULL, NULL, NULL, signature, false);
}

pm_status pm_message_add_tool_call(pm_message *m, const char *id, const char *name,
                                   const char *arguments_json) {
    return add(m, PM_PART_TOOL_CALL, NULL, id ? id : "", name ? name : "",
               arguments_json && *arguments_json ? arguments_json : "{}", NULL, false);
}

pm_status pm_message_add_tool_result(pm_message *m, const char *tool_call_id, const char *content,
                                     bool is_error) {
    return add(m, PM_PART_TOOL_RESULT, content ? content : "", tool_call_id ? tool_call_id : "",
               NULL, NULL, NULL, is_error);
}

pm_status pm_message_add_audio(pm_message *m, const char *mime, const char *data_b64) {
    return add(m, PM_PART_AUDIO, data_b64 ? data_b64 : "", NULL, mime ? mime : "audio/wav", NULL,
               NULL, false);
}

pm_status pm_message_add_document(pm_message *m, const char *mime, const char *data_b64) {
    return add(m, PM_PART_DOCUMENT, data_b64 ? data_b64 : "", NULL, mime ? mime : "application/pdf",
               NULL, NULL, false);
}

pm_status pm_message_add_image(pm_message *m, const char *mime, const char *data_b64) {
    return add(m, PM_PART_IMAGE, data_b64 ? data_b64 : "", NULL, mime ? mime : "image/png", NULL,
               NULL, false);
}

pm_status pm_message_copy(pm_message *dst, const pm_message *src) {
    pm_message_init(dst, src->role);
    for (size_t i = 0; i < src->nparts; i++) {
        const pm_part *p = &src->parts[i];
        if (add(dst, p->kind, p->text, p->id, p->name, p->arguments, p->signature, p->is_error) !=
            PM_OK) {
            pm_message_clear(dst);
            return PM_ERR_NOMEM;
        }
    }
    return PM_OK;
}

char *pm_message_text_sep(const pm_message *m, const char *sep) {
    pb_buf b = {0};
    size_t k = sep ? strlen(sep) : 0;
    bool first = true;
    for (size_t i = 0; i < m->nparts; i++) {
        if (m->parts[i].kind != PM_PART_TEXT || !m->parts[i].text) continue;
        if ((!first && k && !pb_buf_put(&b, sep, k)) ||
            !pb_buf_put(&b, m->parts[i].text, strlen(m->parts[i].text))) {
            pb_buf_free(&b);
            return NULL;
        }
        first = false;
    }
    return pb_buf_take(&b, NULL);
}

char *pm_message_text(const pm_message *m) {
    return pm_message_text_sep(m, "");
}

/* ---------------------------------------------------------------- JSON form */

static const char *const part_types[] = {"text",  "thinking", "tool_call", "tool_result",
                                         "image", "audio",    "document"};

static int set_str(pj_t *o, const char *k, const char *v) {
    return v ? pj_object_set_new(o, k, pj_string(v)) : 0;
}

char *pm_message_to_json(const pm_message *m) {
    pj_t *root = pj_object(), *parts = pj_array();
    int bad = !root || !parts;
    if (!bad) {
        bad |= pj_object_set_new(root, "role", pj_string(pm_role_name(m->role)));
        bad |= pj_object_set(root, "parts", parts);
    }
    for (size_t i = 0; !bad && i < m->nparts; i++) {
        const pm_part *p = &m->parts[i];
        pj_t *o = pj_object();
        if (!o) {
            bad = 1;
            break;
        }
        bad |= pj_object_set_new(o, "type", pj_string(part_types[p->kind]));
        switch (p->kind) {
        case PM_PART_TEXT: {
            bad |= set_str(o, "text", p->text ? p->text : "");
            /* the client's block it stands for, kept as the object it is */
            pj_t *src = p->arguments ? pj_loads(p->arguments, 0, NULL) : NULL;
            if (pj_is_object(src)) bad |= pj_object_set(o, "source", src);
            pj_decref(src);
            break;
        }
        case PM_PART_THINKING:
            bad |= set_str(o, "text", p->text ? p->text : "");
            bad |= set_str(o, "signature", p->signature);
            break;
        case PM_PART_TOOL_CALL:
            bad |= set_str(o, "id", p->id ? p->id : "");
            bad |= set_str(o, "name", p->name ? p->name : "");
            bad |= set_str(o, "arguments", p->arguments ? p->arguments : "{}");
            break;
        case PM_PART_TOOL_RESULT:
            bad |= set_str(o, "id", p->id ? p->id : "");
            bad |= set_str(o, "text", p->text ? p->text : "");
            bad |= pj_object_set_new(o, "is_error", pj_boolean(p->is_error));
            break;
        case PM_PART_IMAGE:
        case PM_PART_AUDIO:
        case PM_PART_DOCUMENT:
            bad |= set_str(o, "mime", p->name ? p->name : "image/png");
            bad |= set_str(o, "data", p->text ? p->text : "");
            break;
        }
        bad |= pj_array_append_new(parts, o);
    }
    char *out = bad ? NULL : pj_dumps(root, PJ_COMPACT | PJ_ENSURE_ASCII);
    pj_decref(parts);
    pj_decref(root);
    return out;
}

pm_status pm_message_from_json(const char *json, pm_message *m, pm_error *err) {
    pm_message_init(m, PM_ROLE_USER);
    pj_error_t je;
    pj_t *root = json ? pj_loads(json, 0, &je) : NULL;
    if (!root) return pm__fail(err, PM_ERR_PROTOCOL, "message JSON does not parse");
    pm_status st = PM_OK;
    pj_t *parts = pj_object_get(root, "parts");
    if (!pj_is_object(root) || !pm_role_parse(pm__jstr(root, "role"), &m->role) ||
        !pj_is_array(parts)) {
        st = pm__fail(err, PM_ERR_PROTOCOL, "message JSON needs \"role\" and \"parts\"");
        goto out;
    }
    size_t i;
    pj_t *o;
    pj_array_foreach(parts, i, o) {
        const char *type = pm__jstr(o, "type");
        if (!type) {
            st = pm__fail(err, PM_ERR_PROTOCOL, "part %zu has no type", i);
            break;
        }
        if (strcmp(type, "text") == 0) {
            pj_t *src = pj_object_get(o, "source");
            char *sj = pj_is_object(src) ? pj_dumps(src, PJ_COMPACT) : NULL;
            st = pj_is_object(src) && !sj ? PM_ERR_NOMEM
                                          : pm_message_add_text_source(m, pm__jstr(o, "text"), sj);
            free(sj);
        } else if (strcmp(type, "thinking") == 0)
            st = pm_message_add_thinking(m, pm__jstr(o, "text"), pm__jstr(o, "signature"));
        else if (strcmp(type, "tool_call") == 0)
            st = pm_message_add_tool_call(m, pm__jstr(o, "id"), pm__jstr(o, "name"),
                                          pm__jstr(o, "arguments"));
        else if (strcmp(type, "tool_result") == 0)
            st = pm_message_add_tool_result(m, pm__jstr(o, "id"), pm__jstr(o, "text"),
                                            pj_is_true(pj_object_get(o, "is_error")));
        else if (strcmp(type, "image") == 0 && pm__jstr(o, "data"))
            st = pm_message_add_image(m, pm__jstr(o, "mime"), pm__jstr(o, "data"));
        else if (strcmp(type, "audio") == 0 && pm__jstr(o, "data"))
            st = pm_message_add_audio(m, pm__jstr(o, "mime"), pm__jstr(o, "data"));
        else if (strcmp(type, "document") == 0 && pm__jstr(o, "data"))
            st = pm_message_add_document(m, pm__jstr(o, "mime"), pm__jstr(o, "data"));
        else
            st = pm__fail(err, PM_ERR_PROTOCOL, "part %zu has unknown type \"%s\"", i, type);
        if (st == PM_ERR_NOMEM) pm__fail(err, st, "out of memory");
        if (st != PM_OK) break;
    }
out:
    pj_decref(root);
    if (st != PM_OK) pm_message_clear(m);
    return st;
}
