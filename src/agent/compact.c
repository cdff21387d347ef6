/*
 * compact.c — the Compact step's arithmetic: token estimates and the trim point.
 *
 * Compaction trims the oldest turns of the model-facing view (the store keeps the
 * full history). A cut is only ever made just before a user message, so an
 * assistant tool-call message is never separated from its tool results, and the
 * latest user message is always kept.
 */
#include "peri/agent.h"

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
