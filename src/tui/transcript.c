/*
 * transcript.c — the TUI's transcript model: what session/update notifications said,
 * as a list of entries (user turns, agent text, thoughts, tool calls, plans, notices).
 * Pure data: no terminal here. Consecutive chunks of the same kind merge into one
 * entry; a tool_call_update finds its call by id; a plan replaces the plan of the
 * current turn. Unknown or malformed updates are ignored (never a crash).
 */
#include "tui/tui.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int pt_buf_add(pt_buf *b, const char *s, size_t n) {
    if (b->n + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap * 2 : 128;
        while (cap < b->n + n + 1)
            cap *= 2;
        char *p = realloc(b->s, cap);
        if (!p) return -1;
        b->s = p;
        b->cap = cap;
    }
    if (n) memcpy(b->s + b->n, s, n);
    b->n += n;
    b->s[b->n] = 0;
    return 0;
}

void pt_buf_free(pt_buf *b) {
    free(b->s);
    memset(b, 0, sizeof *b);
}

static void entry_free(pt_entry *e) {
    pt_buf_free(&e->text);
    pt_buf_free(&e->diff);
    free(e->placement);
    pj_decref(e->call);
    pj_decref(e->plan);
}

void pt_transcript_free(pt_transcript *t) {
    for (size_t i = 0; i < t->n; i++)
        entry_free(&t->v[i]);
    free(t->v);
    memset(t, 0, sizeof *t);
}

pt_entry *pt_transcript_add(pt_transcript *t, pt_kind kind, const char *text, uint16_t attr) {
    pt_entry *e = pb_push(&t->v, &t->n, &t->cap, sizeof *e, 32);
    if (!e) return NULL;
    e->kind = kind;
    e->attr = attr;
    if (text) pt_buf_add(&e->text, text, strlen(text));
    t->version++;
    return e;
}

const char *pt_tool_field(const pt_entry *e, const char *key) {
    return pj_string_value(pj_object_get(e->call, key));
}

static const char *text_of(pj_t *u) {
    return pj_string_value(pj_object_get(pj_object_get(u, "content"), "text"));
}

static void chunk(pt_transcript *t, pt_kind kind, pj_t *u) {
    const char *s = text_of(u);
    if (!s) {
        const char *type = pj_string_value(pj_object_get(pj_object_get(u, "content"), "type"));
        if (kind != PT_E_USER || !type) return;
        s = !strcmp(type, "image")           ? "[image]"
            : !strcmp(type, "resource_link") ? "[file]"
                                             : "[content]";
    }
    pt_entry *e = t->n ? &t->v[t->n - 1] : NULL;
    if (!e || e->kind != kind) e = pt_transcript_add(t, kind, NULL, 0);
    if (!e) return;
    pt_buf_add(&e->text, s, strlen(s));
    t->version++;
}

static pt_entry *find_tool(pt_transcript *t, const char *id) {
    for (size_t i = t->n; i-- > 0;)
        if (t->v[i].kind == PT_E_TOOL) {
            const char *tid = pt_tool_field(&t->v[i], "toolCallId");
            if (tid && !strcmp(tid, id)) return &t->v[i];
        }
    return NULL;
}

/* Lines of s as [start, end) pairs walked by the caller. */
static size_t count_lines(const char *s) {
    size_t n = 0;
    for (const char *p = s; *p; p++)
        n += *p == '\n';
    return n + (*s && s[strlen(s) - 1] != '\n');
}

static const char *nth_line(const char *s, size_t k, size_t *len) {
    while (k-- && s)
        s = (s = strchr(s, '\n')) ? s + 1 : NULL;
    if (!s) return NULL;
    *len = strcspn(s, "\n");
    return s;
}

static bool same_line(const char *a, size_t k, const char *b, size_t m) {
    size_t la = 0, lb = 0;
    const char *x = nth_line(a, k, &la), *y = nth_line(b, m, &lb);
    return x && y && la == lb && !memcmp(x, y, la);
}

/* Lines from..to-1 of s, each after mark, into d. */
static void diff_lines(pt_buf *d, const char *mark, const char *s, size_t from, size_t to) {
    for (size_t k = from; k < to; k++) {
        size_t len = 0;
        const char *l = nth_line(s, k, &len);
        if (!l) break;
        pt_buf_add(d, mark, 1);
        pt_buf_add(d, l, len);
        pt_buf_add(d, "\n", 1);
    }
}

/* A whole-file change as -/+ lines: the common head and tail are left out. */
static void make_diff(pt_buf *d, const char *old_text, const char *new_text) {
    const char *o = old_text ? old_text : "";
    const char *n = new_text ? new_text : "";
    size_t on = count_lines(o), nn = count_lines(n), head = 0, tail = 0;
    while (head < on && head < nn && same_line(o, head, n, head))
        head++;
    while (tail < on - head && tail < nn - head && same_line(o, on - 1 - tail, n, nn - 1 - tail))
        tail++;
    d->n = 0;
    if (d->s) d->s[0] = 0;
    diff_lines(d, "-", o, head, on - tail);
    diff_lines(d, "+", n, head, nn - tail);
}

static void tool_content(pt_entry *e, pj_t *content) {
    if (!pj_is_array(content)) return;
    const char *last_text = NULL;
    size_t i;
    pj_t *c;
    pj_array_foreach(content, i, c) {
        const char *type = pj_string_value(pj_object_get(c, "type"));
        if (!type) continue;
        if (!strcmp(type, "content")) {
            const char *s = pj_string_value(pj_object_get(pj_object_get(c, "content"), "text"));
            if (s) last_text = s;
        } else if (!strcmp(type, "diff")) {
            make_diff(&e->diff, pj_string_value(pj_object_get(c, "oldText")),
                      pj_string_value(pj_object_get(c, "newText")));
        } else if (!strcmp(type, "terminal")) {
            last_text = "(output in the client's terminal)";
        }
    }
    if (last_text) {
        e->text.n = 0;
        pt_buf_add(&e->text, last_text, strlen(last_text));
    }
}

static void tool_placement(pt_entry *e, pj_t *u) {
    pj_t *p = pj_object_get(pj_object_get(u, "_meta"), "peri.placement");
    if (!pj_is_object(p)) return;
    const char *backend = pj_string_value(pj_object_get(p, "backend"));
    const char *reason = pj_string_value(pj_object_get(p, "reason"));
    char buf[256];
    snprintf(buf, sizeof buf, "ran in %s%s%s%s%s", backend ? backend : "?", reason ? " (" : "",
             reason ? reason : "", reason ? ")" : "",
             pj_is_true(pj_object_get(p, "unsandboxed")) ? " UNSANDBOXED" : "");
    char *d = strdup(buf);
    if (!d) return; /* the last placement stays */
    free(e->placement);
    e->placement = d;
}

static void tool(pt_transcript *t, pj_t *u, bool is_update) {
    const char *id = pj_string_value(pj_object_get(u, "toolCallId"));
    if (!id) return;
    pt_entry *e = find_tool(t, id);
    if (!e) {
        if (!(e = pt_transcript_add(t, PT_E_TOOL, NULL, 0))) return;
        e->call = pj_pack("{s:s}", "toolCallId", id);
        if (!e->call) {
            t->n--;
            entry_free(e);
            return;
        }
    }
    static const char *const fields[] = {"title", "kind", "status"};
    for (size_t i = 0; i < sizeof fields / sizeof *fields; i++) {
        pj_t *v = pj_object_get(u, fields[i]);
        if (pj_is_string(v)) pj_object_set(e->call, fields[i], v);
    }
    if (!pt_tool_field(e, "status")) pj_object_set_new(e->call, "status", pj_string("pending"));
    if (is_update || pj_object_get(u, "content")) tool_content(e, pj_object_get(u, "content"));
    tool_placement(e, u);
    t->version++;
}

static void plan(pt_transcript *t, pj_t *u) {
    pj_t *entries = pj_object_get(u, "entries");
    if (!pj_is_array(entries)) return;
    pt_entry *e = NULL;
    for (size_t i = t->n; i-- > 0 && t->v[i].kind != PT_E_USER;)
        if (t->v[i].kind == PT_E_PLAN) {
            e = &t->v[i];
            break;
        }
    if (!e && !(e = pt_transcript_add(t, PT_E_PLAN, NULL, 0))) return;
    pj_decref(e->plan);
    e->plan = pj_incref(entries);
    t->version++;
}

void pt_transcript_update(pt_transcript *t, pj_t *u) {
    const char *tag = pj_string_value(pj_object_get(u, "sessionUpdate"));
    if (!tag) return;
    if (!strcmp(tag, "agent_message_chunk"))
        chunk(t, PT_E_AGENT, u);
    else if (!strcmp(tag, "agent_thought_chunk"))
        chunk(t, PT_E_THOUGHT, u);
    else if (!strcmp(tag, "user_message_chunk"))
        chunk(t, PT_E_USER, u);
    else if (!strcmp(tag, "tool_call"))
        tool(t, u, false);
    else if (!strcmp(tag, "tool_call_update"))
        tool(t, u, true);
    else if (!strcmp(tag, "plan"))
        plan(t, u);
}
