/*
 * askuser.c — questions to the user through the HITL broker (pct_sink.ask_user, the
 * same broker that asks permission):
 *   ask_user   the model's tool: {"question", "options"?}. With options the user picks
 *              one ("choice"); without, the answer is free text (a one-field form). The
 *              tool result says what the user chose or wrote, that they declined, or
 *              that the question was cancelled (a cancel of the turn, a close, or the
 *              client going away end a pending question at once).
 *   elicitation an MCP server's elicitation/create (form mode): its message and
 *              requestedSchema go to the user as a form, naming the server; the answer
 *              goes back to the server as {"action", "content"?}. A client that cannot
 *              show forms gets nothing: the server is told "decline".
 * Everything the user sees of a question is the model's or the server's text: it is
 * passed as data, never interpreted.
 */
#include "controller/ctl_impl.h"

#include "peri/json.h"
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define ASK_OPTIONS_MAX 8
#define ASK_TEXT_MAX    4000

static int result(pag_tool_output *out, bool error, const char *fmt, const char *arg) {
    size_t n = strlen(fmt) + (arg ? strlen(arg) : 0) + 1;
    out->output = malloc(n);
    if (!out->output) return -1;
    snprintf(out->output, n, fmt, arg ? arg : "");
    out->is_error = error;
    return 0;
}

int pct__ask_user_run(pct_sess *s, const char *args, atomic_int *cancel, pag_tool_output *out) {
    pj_t *a = pj_loads(args ? args : "{}", 0, NULL);
    const char *q = pj_string_value(pj_object_get(a, "question"));
    pj_t *opts = pj_object_get(a, "options");
    int rc;
    if (!q || !*q || strlen(q) > ASK_TEXT_MAX) {
        rc = result(out, true,
                    "ask_user: \"question\" (a string of at most 4000 bytes) is required", NULL);
        goto done;
    }
    if (opts && (!pj_is_array(opts) || pj_array_size(opts) > ASK_OPTIONS_MAX)) {
        rc = result(out, true, "ask_user: \"options\" must be an array of at most 8 strings", NULL);
        goto done;
    }
    size_t i;
    pj_t *v;
    pj_array_foreach(opts, i, v) {
        if (!pj_is_string(v) || !pj_string_length(v) || pj_string_length(v) > 200) {
            rc =
                result(out, true, "ask_user: each option must be a string of 1 to 200 bytes", NULL);
            goto done;
        }
    }
    if (!s->c->sink.ask_user) {
        rc = result(out, true, "ask_user: this client cannot be asked questions", NULL);
        goto done;
    }
    bool choice = pj_array_size(opts) > 0;
    pj_t *qj =
        choice ? pj_pack("{s:s, s:s, s:O}", "kind", "choice", "message", q, "options", opts)
               : pj_pack("{s:s, s:s, s:{s:s, s:{s:{s:s, s:s}}, s:[s]}}", "kind", "form", "message",
                         q, "requestedSchema", "type", "object", "properties", "answer", "type",
                         "string", "title", "Your answer", "required", "answer");
    if (qj && s->cur_call[0]) pj_object_set_new(qj, "toolCallId", pj_string(s->cur_call));
    char *qtxt = qj ? pj_dumps(qj, PJ_COMPACT) : NULL;
    pj_decref(qj);
    if (!qtxt) {
        rc = -1;
        goto done;
    }
    char *ans = s->c->sink.ask_user(s->c->sink.ctx, s->id, qtxt, cancel);
    free(qtxt);
    pj_t *aj = ans ? pj_loads(ans, 0, NULL) : NULL;
    free(ans);
    const char *action = pj_string_value(pj_object_get(aj, "action"));
    pj_t *ch = pj_object_get(aj, "choice");
    const char *text = pj_string_value(pj_object_get(pj_object_get(aj, "content"), "answer"));
    if (!aj) {
        rc = result(out, true,
                    choice ? "ask_user: this client cannot be asked questions"
                           : "ask_user: this client cannot take a free-text answer; ask again "
                             "with \"options\"",
                    NULL);
    } else if (action && !strcmp(action, "cancel")) {
        rc = result(out, true, "cancelled: the question was cancelled before the user answered",
                    NULL);
        if (rc == 0) rc = 1;
    } else if (action && !strcmp(action, "accept") && choice && pj_is_integer(ch) &&
               pj_integer_value(ch) >= 0 && (size_t)pj_integer_value(ch) < pj_array_size(opts)) {
        rc = result(out, false, "The user chose: %s",
                    pj_string_value(pj_array_get(opts, (size_t)pj_integer_value(ch))));
    } else if (action && !strcmp(action, "accept") && !choice && text) {
        rc = result(out, false, "The user answered: %s", text);
    } else {
        rc = result(out, false, "The user declined to answer.", NULL);
    }
    pj_decref(aj);
done:
    pj_decref(a);
    return rc;
}

/* Raises `both` when either flag rises (the server's or client's end of the question, or
 * a cancel of the session's turn), until done. */
typedef struct either {
    atomic_int *a, *b, both, done;
} either;

static void *watch(void *arg) {
    either *e = arg;
    while (!atomic_load(&e->done)) {
        if ((e->a && atomic_load(e->a)) || atomic_load(e->b)) {
            atomic_store(&e->both, 1);
            break;
        }
        struct timespec ts = {0, 10 * 1000000L};
        nanosleep(&ts, NULL);
    }
    return NULL;
}

char *pct__elicit(void *ctx, const char *server, const char *params_json, atomic_int *cancel) {
    pct_sess *s = ctx;
    pj_t *p = pj_loads(params_json ? params_json : "{}", 0, NULL);
    const char *mode = pj_string_value(pj_object_get(p, "mode"));
    const char *msg = pj_string_value(pj_object_get(p, "message"));
    pj_t *schema = pj_object_get(p, "requestedSchema");
    char *out = NULL;
    if (!s->c->sink.ask_user || (mode && strcmp(mode, "form") != 0) || !msg ||
        !pj_is_object(schema)) {
        pj_decref(p);
        return strdup("{\"action\":\"decline\"}"); /* URL mode and bad requests: declined */
    }
    pj_t *q = pj_pack("{s:s, s:s, s:O, s:s}", "kind", "form", "message", msg, "requestedSchema",
                      schema, "server", server ? server : "");
    if (q && s->cur_call[0]) pj_object_set_new(q, "toolCallId", pj_string(s->cur_call));
    char *qtxt = q ? pj_dumps(q, PJ_COMPACT) : NULL;
    pj_decref(q);
    pj_decref(p);
    either e = {.a = cancel, .b = &s->hitl_cancel};
    atomic_init(&e.both, 0);
    atomic_init(&e.done, 0);
    pthread_t th;
    bool watching = pthread_create(&th, NULL, watch, &e) == 0;
    if (qtxt && watching) out = s->c->sink.ask_user(s->c->sink.ctx, s->id, qtxt, &e.both);
    atomic_store(&e.done, 1);
    if (watching) pthread_join(th, NULL);
    free(qtxt);
    if (!out) out = strdup("{\"action\":\"decline\"}");
    return out;
}
