/*
 * compact.c — the Compact step's arithmetic: token estimates and the trim point.
 *
 * Compaction trims the oldest turns of the model-facing view (the store keeps the
 * full history). A cut is only ever made just before a user message, so an
 * assistant tool-call message is never separated from its tool results, and the
 * latest user message is always kept.
 *
 * The model-written summary (pag__summarize) serves /compact and the automatic
 * compaction before a turn (loop.c): the model sees the same view and one more user
 * message asking for the summary; nothing is persisted here.
 */
#include "agent/session_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int64_t part_bytes(const pm_part *p) {
    if (p->kind == PM_PART_IMAGE) return 6000; /* ~1500 tokens, whatever its base64 size */
    if (p->kind == PM_PART_AUDIO || p->kind == PM_PART_DOCUMENT) /* base64: ~3/4 of a byte each */
        return p->text ? strlen(p->text) : 0;
    int64_t b = 16;
    if (p->text) b += (int64_t)strlen(p->text);
    if (p->id) b += (int64_t)strlen(p->id);
    if (p->name) b += (int64_t)strlen(p->name);
    if (p->arguments) b += (int64_t)strlen(p->arguments);
    return b;
}

static int64_t message_tokens(const pm_message *m) {
    int64_t b = 16;
    for (size_t i = 0; i < m->nparts; i++)
        b += part_bytes(&m->parts[i]);
    return b / 4;
}

int64_t pag_estimate_tokens(const pm_message *msgs, size_t n) {
    int64_t t = 0;
    for (size_t i = 0; i < n; i++)
        t += message_tokens(&msgs[i]);
    return t;
}

int64_t pag__view_tokens(const struct pag_session *s, const pm_message *extra) {
    size_t v = s->view <= s->nhist ? s->view : 0;
    const pm_message *h = s->hist + v;
    int64_t est = pag_estimate_tokens(h, s->nhist - v);
    if (s->usage_tokens > 0 && s->usage_at >= v && s->usage_at <= s->nhist) {
        int64_t prefix = pag_estimate_tokens(h, s->usage_at - v);
        int64_t real = s->usage_tokens + (est - prefix);
        if (real > est) est = real;
    }
    return est + (extra ? pag_estimate_tokens(extra, 1) : 0);
}

int pag__summary_request(const struct pag_session *s, const char *focus, pag__summary *out) {
    static const char ask[] =
        "Summarize the conversation so far for your own later use: the user's goals, what "
        "was done (files read or changed, commands run, results), decisions made and what is "
        "still open. Be complete but concise; this summary will replace the earlier messages.";
    memset(out, 0, sizeof *out);
    size_t base = s->view <= s->nhist ? s->view : 0;
    size_t n = sizeof ask + (focus ? strlen(focus) + 32 : 0);
    char *text = malloc(n);
    out->msgs = calloc(s->nhist - base + 1, sizeof *out->msgs);
    if (!text || !out->msgs) {
        free(text);
        free(out->msgs);
        out->msgs = NULL;
        return -1;
    }
    snprintf(text, n, "%s%s%s", ask, focus && *focus ? "\nFocus: " : "",
             focus && *focus ? focus : "");
    memcpy(out->msgs, s->hist + base, (s->nhist - base) * sizeof *out->msgs); /* borrowed */
    pm_message *q = &out->msgs[s->nhist - base];
    pm_message_init(q, PM_ROLE_USER);
    pm_status st = pm_message_add_text(q, text);
    free(text);
    if (st != PM_OK) {
        free(out->msgs);
        out->msgs = NULL;
        return -1;
    }
    out->nmsgs = s->nhist - base + 1;
    out->req = (pm_request){.model = s->ports.model_name,
                            .system = s->system_prompt,
                            .messages = out->msgs,
                            .nmessages = out->nmsgs,
                            .temperature = -1};
    return 0;
}

void pag__summary_free(pag__summary *sr) {
    if (sr->msgs) pm_message_clear(&sr->msgs[sr->nmsgs - 1]); /* only the question is owned */
    free(sr->msgs);
    memset(sr, 0, sizeof *sr);
}

pm_status pag__summary_text(pm_status st, const pm_response *resp, char **summary, pm_error *err) {
    *summary = NULL;
    if (st != PM_OK) return st;
    *summary = pm_message_text(&resp->message);
    if (!*summary || !**summary) { /* an empty summary would lose everything */
        free(*summary);
        *summary = NULL;
        snprintf(err->message, sizeof err->message, "the model wrote an empty summary");
        return PM_ERR_PROTOCOL;
    }
    return PM_OK;
}

pm_status pag__summarize(struct pag_session *s, const char *focus, char **summary, pm_error *err) {
    *summary = NULL;
    pag__summary sr;
    if (pag__summary_request(s, focus, &sr)) {
        snprintf(err->message, sizeof err->message, "out of memory");
        return PM_ERR_NOMEM;
    }
    pm_response resp;
    memset(&resp, 0, sizeof resp);
    pm_status st = s->ports.reason(s->ports.ctx, &sr.req, NULL, NULL, s->cancelp, &resp, err);
    pag__summary_free(&sr);
    st = pag__summary_text(st, &resp, summary, err);
    pm_response_clear(&resp);
    return st;
}

size_t pag_compact_start(const pm_message *msgs, size_t n, int64_t budget) {
    size_t last_user = n;
    for (size_t i = n; i-- > 0;) {
        if (msgs[i].role == PM_ROLE_USER) {
            last_user = i;
            break;
        }
    }
    if (last_user == n) return 0; /* no user message: nothing safe to cut */
    int64_t suffix = pag_estimate_tokens(msgs, n);
    if (suffix <= budget) return 0;
    for (size_t i = 0; i < last_user; i++) {
        suffix -= message_tokens(&msgs[i]); /* now the estimate of msgs[i+1..n) */
        if (msgs[i + 1].role == PM_ROLE_USER && suffix <= budget) return i + 1;
    }
    return last_user;
}
