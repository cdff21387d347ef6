/*
 * prompt_message.c — the user message of a session/prompt: ACP ContentBlock[] mapped onto
 * a pm_message (text, resource links, embedded resources, images, audio, PDFs), with the
 * notice of what was refused and why. Pure mapping without threads or I/O, shared by
 * the native ACP server (methods.c) and the agent module's reactor (src/agentwasm/).
 *
 * Invariants: the parts keep the blocks' order (consecutive texts join into one part, a
 * line each; a medium or a resource link starts a part of its own); a resource link's
 * part carries the client's block, which a replay shows in its place.
 */
#include "acp/prompt_message.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void set_err(pacp_prompt_err *r, int code, const char *msg) {
    r->code = code;
    snprintf(r->message, sizeof r->message, "%.300s", msg);
}

/* Growing text buffer for the prompt's text and the refusal notice. */

static void tb_add(pacp_tbuf *b, const char *s, const char *sep) {
    if (b->oom) return;
    size_t n = strlen(s), k = b->len && sep ? strlen(sep) : 0;
    char *np = realloc(b->p, b->len + k + n + 1);
    if (!np) {
        b->oom = true;
        return;
    }
    memcpy(np + b->len, sep ? sep : "", k);
    memcpy(np + b->len + k, s, n + 1);
    b->p = np;
    b->len += k + n;
}

/* tb_add of a formatted text (cut at 1199 bytes). */
static void tb_addf(pacp_tbuf *b, const char *sep, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void tb_addf(pacp_tbuf *b, const char *sep, const char *fmt, ...) {
    char tmp[1200];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    tb_add(b, tmp, sep);
}

static bool image_mime(const char *m) {
    return m && (!strcmp(m, "image/png") || !strcmp(m, "image/jpeg") || !strcmp(m, "image/gif") ||
                 !strcmp(m, "image/webp"));
}

/* Plausible base64: non-empty, only the base64 alphabet (and padding). */
static bool base64_ok(const char *d) {
    if (!d || !*d) return false;
    for (const char *p = d; *p; p++)
        if (!((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') ||
              *p == '+' || *p == '/' || *p == '=' || *p == '\n' || *p == '\r'))
            return false;
    return true;
}

static bool audio_mime(const char *m) {
    return m && (!strcmp(m, "audio/wav") || !strcmp(m, "audio/x-wav") || !strcmp(m, "audio/wave") ||
                 !strcmp(m, "audio/mpeg") || !strcmp(m, "audio/mp3"));
}

/* The workspace-relative path of a file:// URI inside cwd, decided on the text alone
 * (the request thread touches no file): cwd, a '/', then a plain relative path - one or
 * more segments, none empty (so no "//", no leading or trailing '/'), none "." or "..",
 * and no percent escapes (nothing is decoded), backslashes or controls anywhere. NULL
 * when it is not one: "file://<cwd>//etc/passwd" names /etc/passwd, not a workspace
 * file. (A URI with a NUL byte never gets here: the prompt is refused first.) */
static const char *workspace_path(const char *uri, const char *cwd) {
    static const char scheme[] = "file://";
    if (!uri || !cwd[0] || strncmp(uri, scheme, sizeof scheme - 1) != 0) return NULL;
    const char *p = uri + sizeof scheme - 1;
    size_t n = strlen(cwd);
    if (p[0] != '/' || strncmp(p, cwd, n) != 0 || p[n] != '/') return NULL;
    for (const char *q = p; *q; q++)
        if ((unsigned char)*q < 0x20 || *q == 0x7f || *q == '%' || *q == '\\') return NULL;
    const char *rel = p + n + 1;
    for (const char *seg = rel;; seg++) {
        size_t k = strcspn(seg, "/");
        if (k == 0 || (k == 1 && seg[0] == '.') || (k == 2 && seg[0] == '.' && seg[1] == '.'))
            return NULL;
        seg += k;
        if (!*seg) return rel;
    }
}

/* The first string field of block b that holds a NUL byte ("text", "resource.uri", ...),
 * or NULL. Such a field cannot go on whole (the message and the store take C strings),
 * and cutting it short would pass on something the client did not send. */
static const char *nul_field(pj_t *b) {
    static const char *const keys[] = {"type", "text", "uri", "name", "mimeType", "data"};
    static const char *const rkeys[] = {"uri", "text", "blob", "mimeType"};
    static const char *const rnames[] = {"resource.uri", "resource.text", "resource.blob",
                                         "resource.mimeType"};
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
        pj_t *v = pj_object_get(b, keys[i]);
        if (pj_is_string(v) && strlen(pj_string_value(v)) != pj_string_length(v)) return keys[i];
    }
    pj_t *res = pj_object_get(b, "resource");
    for (size_t i = 0; i < sizeof rkeys / sizeof rkeys[0]; i++) {
        pj_t *v = pj_object_get(res, rkeys[i]);
        if (pj_is_string(v) && strlen(pj_string_value(v)) != pj_string_length(v)) return rnames[i];
    }
    return NULL;
}

/* The text gathered so far as one part, put before a part of another kind: the blocks
 * reach the model, the history and a replay in the order the client sent them. */
static void flush_text(pm_message *m, pacp_tbuf *text) {
    if (text->len && !text->oom && pm_message_add_text(m, text->p) != PM_OK) text->oom = true;
    free(text->p);
    text->p = NULL;
    text->len = 0;
}

/* A resource_link outside the workspace or in it: its line for the model, a part of its
 * own that a replay shows as the client's block. */
static void add_link(pm_message *m, pacp_tbuf *text, pj_t *block, const char *line) {
    flush_text(m, text);
    char *src = pj_dumps(block, PJ_COMPACT);
    if (!src || pm_message_add_text_source(m, line, src) != PM_OK) text->oom = true;
    free(src);
}

int pacp__build_message(pj_t *blocks, pm_message *m, pacp_tbuf *notice, pacp_prompt_err *r,
                        const pacp_accepts *acc) {
    pacp_tbuf text = {0};
    size_t i, usable = 0;
    pj_t *b;
    pm_message_init(m, PM_ROLE_USER);
    pj_array_foreach(blocks, i, b) {
        const char *bad = nul_field(b);
        if (bad) {
            /* refused as a whole, naming the block: never passed on cut short */
            char msg[300];
            snprintf(msg, sizeof msg, "prompt[%zu].%s must not contain a NUL character (U+0000)", i,
                     bad);
            free(text.p);
            pm_message_clear(m);
            set_err(r, PB_RPC_INVALID_PARAMS, msg);
            return -1;
        }
        const char *type = pj_string_value(pj_object_get(b, "type"));
        const char *why = NULL;
        if (!type) {
            why = "a content block without a type";
        } else if (!strcmp(type, "text")) {
            const char *t = pj_string_value(pj_object_get(b, "text"));
            if (!t)
                why = "a text block without text";
            else {
                tb_add(&text, t, "\n");
                usable++;
            }
        } else if (!strcmp(type, "resource_link")) {
            const char *uri = pj_string_value(pj_object_get(b, "uri"));
            const char *name = pj_string_value(pj_object_get(b, "name"));
            const char *rel = workspace_path(uri, acc->cwd);
            char line[1200];
            if (!uri)
                why = "a resource_link block without uri";
            else {
                if (rel) /* a workspace file: the model reads it with its tools */
                    snprintf(line, sizeof line,
                             "[Resource: %.300s](%.400s) - the workspace file %.400s (read it "
                             "with your tools)",
                             name ? name : uri, uri, rel);
                else
                    snprintf(line, sizeof line, "[Resource: %.500s](%.600s)", name ? name : uri,
                             uri);
                add_link(m, &text, b, line);
                usable++;
            }
        } else if (!strcmp(type, "resource")) {
            pj_t *res = pj_object_get(b, "resource");
            const char *uri = pj_string_value(pj_object_get(res, "uri"));
            const char *t = pj_string_value(pj_object_get(res, "text"));
            const char *blob = pj_string_value(pj_object_get(res, "blob"));
            const char *mime = pj_string_value(pj_object_get(res, "mimeType"));
            if (!uri) {
                why = "a resource block without resource.uri";
            } else if (t) {
                tb_addf(&text, "\n", "[Resource: %.1000s]", uri);
                tb_add(&text, t, "\n");
                usable++;
            } else if (blob && image_mime(mime) && base64_ok(blob)) {
                flush_text(m, &text);
                if (pm_message_add_image(m, mime, blob) != PM_OK) text.oom = true;
                usable++;
            } else if (blob && workspace_path(uri, acc->cwd) &&
                       !(mime && !strcmp(mime, "application/pdf"))) {
                /* another binary blob of a workspace file: offered as that file */
                tb_addf(&text, "\n",
                        "[Resource: %.400s (%.100s) - the workspace file %.400s (read it with "
                        "your tools)]",
                        uri, mime ? mime : "binary", workspace_path(uri, acc->cwd));
                usable++;
            } else if (blob && mime && !strcmp(mime, "application/pdf") && base64_ok(blob)) {
                /* a PDF goes to the model as a document (both providers take them) */
                tb_addf(&text, "\n", "[Document: %.1000s]", uri);
                flush_text(m, &text);
                if (pm_message_add_document(m, mime, blob) != PM_OK) text.oom = true;
                usable++;
            } else {
                tb_addf(notice, "; ",
                        "the resource %.300s (%.100s): binary attachments other than images "
                        "(png, jpeg, gif, webp) and PDF documents are not supported",
                        uri, mime ? mime : "no mimeType");
                continue;
            }
        } else if (!strcmp(type, "image") || !strcmp(type, "audio")) {
            /* base64 media: images for every model, audio for the models that take it */
            bool image = type[0] == 'i';
            const char *data = pj_string_value(pj_object_get(b, "data"));
            const char *mime = pj_string_value(pj_object_get(b, "mimeType"));
            if (!image && !acc->audio) {
                tb_addf(notice, "; ",
                        "an audio block: the model %.150s does not take audio input (OpenAI "
                        "audio models do)",
                        acc->model);
                continue;
            }
            if (!(image ? image_mime(mime) : audio_mime(mime))) {
                tb_addf(notice, "; ",
                        image
                            ? "an image of type %.100s: only png, jpeg, gif and webp are supported"
                            : "audio of type %.100s: only wav and mp3 are supported",
                        mime ? mime : "(none)");
                continue;
            }
            if (!base64_ok(data)) {
                why = image ? "an image block without base64 data"
                            : "an audio block without base64 data";
            } else {
                flush_text(m, &text);
                pm_status st = image ? pm_message_add_image(m, mime, data)
                                     : pm_message_add_audio(m, mime, data);
                if (st != PM_OK) text.oom = true;
                usable++;
            }
        } else {
            tb_addf(notice, "; ", "a content block of unsupported type %.100s", type);
            continue;
        }
        if (why) tb_add(notice, why, "; ");
    }
    flush_text(m, &text);
    if (text.oom || notice->oom) {
        pm_message_clear(m);
        set_err(r, PB_RPC_INTERNAL_ERROR, "out of memory");
        return -1;
    }
    if (usable == 0) {
        char msg[300];
        snprintf(msg, sizeof msg, "prompt has no usable content: %.250s",
                 notice->p ? notice->p : "empty prompt");
        pm_message_clear(m);
        set_err(r, PB_RPC_INVALID_PARAMS, msg);
        return -1;
    }
    if (notice->p) {
        /* The model is told too, so it does not answer as if it had seen the block. */
        size_t n = notice->len + 96;
        char *note = malloc(n);
        if (note) snprintf(note, n, "[Not shown to you (refused by the host): %s]", notice->p);
        if (!note || pm_message_add_text(m, note) != PM_OK) {
            free(note);
            pm_message_clear(m);
            set_err(r, PB_RPC_INTERNAL_ERROR, "out of memory");
            return -1;
        }
        free(note);
    }
    return 0;
}
