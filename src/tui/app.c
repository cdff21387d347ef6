/*
 * app.c — the TUI's event loop and its state: one poll over the terminal, the agent's
 * stdout and the signal pipe. Keys edit the input or answer the open prompt
 * (permission, session picker); ACP frames update the transcript, the status fields
 * or open prompts; every pass ends with one diffed frame. Startup: initialize, then
 * session/new, session/load (--resume), or session/list + session/load (--continue).
 * Quit (Ctrl-C twice, Ctrl-D on an empty input, /quit, a terminating signal): the
 * terminal is restored first, then the agent is closed with a bound.
 * All state lives in one struct app on ptui_run's stack.
 */
#include "tui/tui.h"

#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define CLOSE_GRACE_MS   3000
#define CTRL_C_WINDOW_MS 2000
#define ESC_WAIT_MS      25

typedef enum rq_kind {
    RQ_NONE,
    RQ_INIT,
    RQ_NEW,
    RQ_LOAD,
    RQ_PROMPT,
    RQ_LIST,          /* /resume: the picker */
    RQ_LIST_CONTINUE, /* --continue: the latest */
    RQ_OTHER,
} rq_kind;

typedef struct app {
    const ptui_options *o;
    pt_client c;
    pt_transcript t;
    pt_input in;
    pt_keys keys;
    pt_screen scr;
    struct {
        int id;
        rq_kind kind;
    } rq[64];
    char sid[128]; /* the session shown */
    bool ready;    /* a session is open */
    int prompts;   /* prompts in flight */
    bool cancelling;
    json_t *perm_id; /* an open permission request (its JSON-RPC id), or NULL */
    json_t *perm;    /* its params */
    json_t *pick;    /* /resume: the sessions offered, or NULL */
    size_t pick_sel;
    json_t *commands; /* availableCommands */
    char model[128], mode[64], title[160];
    long long used, size;
    double cost;
    bool has_usage, has_cost;
    char msg[256]; /* a transient hint (errors, "press Ctrl-C again") */
    uint16_t msg_attr;
    long long ctrlc_at; /* ms of the first Ctrl-C, 0 = not armed */
    long long esc_at;   /* ms when a lone ESC began waiting */
    int scroll;
    bool quit;
    unsigned spin;
} app;

static long long now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static const char *or_empty(const char *s) {
    return s ? s : "";
}

static void set_msg(app *a, uint16_t attr, const char *fmt, const char *arg) {
    snprintf(a->msg, sizeof a->msg, fmt, arg ? arg : "");
    a->msg_attr = attr;
}

static void notice(app *a, uint16_t attr, const char *text) {
    pt_transcript_add(&a->t, PT_E_NOTICE, text, attr);
}

static void track(app *a, int id, rq_kind kind) {
    if (id <= 0) return;
    for (size_t i = 0; i < sizeof a->rq / sizeof a->rq[0]; i++)
        if (a->rq[i].kind == RQ_NONE) {
            a->rq[i].id = id;
            a->rq[i].kind = kind;
            return;
        }
}

static rq_kind untrack(app *a, json_t *id) {
    if (!json_is_integer(id)) return RQ_NONE;
    for (size_t i = 0; i < sizeof a->rq / sizeof a->rq[0]; i++)
        if (a->rq[i].kind != RQ_NONE && a->rq[i].id == json_integer_value(id)) {
            rq_kind k = a->rq[i].kind;
            a->rq[i].kind = RQ_NONE;
            return k;
        }
    return RQ_NONE;
}

static void request(app *a, const char *method, json_t *params, rq_kind kind) {
    int id = pt_client_request(&a->c, method, params);
    if (id < 0)
        set_msg(a, PT_FG(PT_RED), "cannot reach the agent (%s)", method);
    else
        track(a, id, kind);
}

/* ------------------------------------------------------------------ session */

static void new_session(app *a) {
    request(a, "session/new", json_pack("{s:s, s:[]}", "cwd", a->o->cwd, "mcpServers"), RQ_NEW);
}

static void load_session(app *a, const char *id) {
    if (a->ready && a->sid[0])
        request(a, "session/close", json_pack("{s:s}", "sessionId", a->sid), RQ_OTHER);
    pt_transcript_free(&a->t);
    a->ready = false;
    a->prompts = 0;
    a->title[0] = 0;
    a->has_usage = a->has_cost = false;
    a->scroll = 0;
    snprintf(a->sid, sizeof a->sid, "%s", id);
    request(a, "session/load",
            json_pack("{s:s, s:s, s:[]}", "sessionId", id, "cwd", a->o->cwd, "mcpServers"),
            RQ_LOAD);
}

/* modes and configOptions of a session/new or session/load answer, or an update */
static void take_config(app *a, json_t *cfg) {
    size_t i;
    json_t *o;
    json_array_foreach(cfg, i, o) {
        const char *id = json_string_value(json_object_get(o, "id"));
        const char *cur = json_string_value(json_object_get(o, "currentValue"));
        if (!id || !cur) continue;
        if (!strcmp(id, "mode")) snprintf(a->mode, sizeof a->mode, "%s", cur);
        if (!strcmp(id, "model")) {
            const char *name = cur;
            size_t k;
            json_t *c;
            json_array_foreach(json_object_get(o, "options"), k, c) {
                const char *v = json_string_value(json_object_get(c, "value"));
                const char *nm = json_string_value(json_object_get(c, "name"));
                if (v && nm && !strcmp(v, cur)) name = nm;
            }
            snprintf(a->model, sizeof a->model, "%s", name);
        }
    }
}

static void take_session(app *a, json_t *res) {
    const char *m =
        json_string_value(json_object_get(json_object_get(res, "modes"), "currentModeId"));
    if (m) snprintf(a->mode, sizeof a->mode, "%s", m);
    take_config(a, json_object_get(res, "configOptions"));
    a->ready = true;
}

/* --continue: the most recently updated top-level session */
static const char *latest(json_t *sessions) {
    const char *best = NULL, *best_at = "";
    size_t i;
    json_t *s;
    json_array_foreach(sessions, i, s) {
        if (json_object_get(json_object_get(s, "_meta"), "peri.parentSessionId")) continue;
        const char *id = json_string_value(json_object_get(s, "sessionId"));
        const char *at = json_string_value(json_object_get(s, "updatedAt"));
        if (id && (!best || (at && strcmp(at, best_at) > 0))) {
            best = id;
            best_at = at ? at : "";
        }
    }
    return best;
}

static void on_response(app *a, json_t *f) {
    rq_kind k = untrack(a, json_object_get(f, "id"));
    json_t *res = json_object_get(f, "result");
    json_t *err = json_object_get(f, "error");
    const char *emsg = json_string_value(json_object_get(err, "message"));
    char buf[512];
    switch (k) {
    case RQ_INIT:
        if (err) {
            set_msg(a, PT_FG(PT_RED), "the agent refused initialize: %s", emsg);
        } else if (a->o->resume_id) {
            load_session(a, a->o->resume_id);
        } else if (a->o->cont) {
            request(a, "session/list", json_pack("{s:s}", "cwd", a->o->cwd), RQ_LIST_CONTINUE);
        } else {
            new_session(a);
        }
        break;
    case RQ_NEW:
        if (err) {
            snprintf(buf, sizeof buf, "Cannot start a session: %s", emsg ? emsg : "error");
            notice(a, PT_FG(PT_RED) | PT_BOLD, buf);
            break;
        }
        snprintf(a->sid, sizeof a->sid, "%s",
                 or_empty(json_string_value(json_object_get(res, "sessionId"))));
        take_session(a, res);
        break;
    case RQ_LOAD:
        if (err) {
            snprintf(buf, sizeof buf, "Cannot resume %s: %s", a->sid, emsg ? emsg : "error");
            notice(a, PT_FG(PT_RED) | PT_BOLD, buf);
            a->sid[0] = 0;
            new_session(a);
            break;
        }
        take_session(a, res);
        snprintf(buf, sizeof buf, "Resumed session %s", a->sid);
        notice(a, PT_DIM, "");
        notice(a, PT_DIM | PT_FG(PT_GREEN), buf);
        break;
    case RQ_PROMPT: {
        if (a->prompts > 0) a->prompts--;
        const char *stop = json_string_value(json_object_get(res, "stopReason"));
        if (err) {
            snprintf(buf, sizeof buf, "Error: %s", emsg ? emsg : "the turn failed");
            notice(a, PT_FG(PT_RED) | PT_BOLD, "");
            notice(a, PT_FG(PT_RED) | PT_BOLD, buf);
        } else if (stop && !strcmp(stop, "cancelled")) {
            notice(a, PT_FG(PT_YELLOW), "");
            notice(a, PT_FG(PT_YELLOW) | PT_BOLD,
                   a->scr.st.utf8 ? "\xE2\x96\xA0 Turn cancelled" : "[x] Turn cancelled");
        } else if (stop && strcmp(stop, "end_turn")) {
            snprintf(buf, sizeof buf, "Stopped: %s", stop);
            notice(a, PT_FG(PT_YELLOW), "");
            notice(a, PT_FG(PT_YELLOW), buf);
        }
        if (!a->prompts) a->cancelling = false;
        break;
    }
    case RQ_LIST:
        if (err) {
            set_msg(a, PT_FG(PT_RED), "session/list failed: %s", emsg);
            break;
        }
        json_decref(a->pick);
        a->pick = json_incref(json_object_get(res, "sessions"));
        a->pick_sel = 0;
        if (!json_array_size(a->pick)) {
            json_decref(a->pick);
            a->pick = NULL;
            set_msg(a, PT_DIM, "No earlier sessions in this directory.%s", "");
        }
        break;
    case RQ_LIST_CONTINUE: {
        const char *id = err ? NULL : latest(json_object_get(res, "sessions"));
        if (id) {
            char copy[128];
            snprintf(copy, sizeof copy, "%s", id);
            load_session(a, copy);
        } else {
            notice(a, PT_DIM, "No earlier session in this directory: starting a new one.");
            new_session(a);
        }
        break;
    }
    default: break;
    }
}

static void on_update(app *a, json_t *params) {
    const char *sid = json_string_value(json_object_get(params, "sessionId"));
    if (!sid || strcmp(sid, a->sid)) return;
    json_t *u = json_object_get(params, "update");
    const char *tag = json_string_value(json_object_get(u, "sessionUpdate"));
    if (!tag) return;
    if (!strcmp(tag, "available_commands_update")) {
        json_decref(a->commands);
        a->commands = json_incref(json_object_get(u, "availableCommands"));
    } else if (!strcmp(tag, "current_mode_update")) {
        const char *m = json_string_value(json_object_get(u, "currentModeId"));
        if (m) snprintf(a->mode, sizeof a->mode, "%s", m);
    } else if (!strcmp(tag, "config_option_update")) {
        take_config(a, json_object_get(u, "configOptions"));
    } else if (!strcmp(tag, "usage_update")) {
        a->used = json_integer_value(json_object_get(u, "used"));
        a->size = json_integer_value(json_object_get(u, "size"));
        a->has_usage = true;
        json_t *cost = json_object_get(json_object_get(u, "cost"), "amount");
        if (json_is_number(cost)) {
            a->cost = json_number_value(cost);
            a->has_cost = true;
        }
    } else if (!strcmp(tag, "session_info_update")) {
        const char *t = json_string_value(json_object_get(u, "title"));
        if (t) snprintf(a->title, sizeof a->title, "%s", t);
    } else {
        pt_transcript_update(&a->t, u);
    }
}

static void on_frame(app *a, json_t *f) {
    const char *method = json_string_value(json_object_get(f, "method"));
    json_t *id = json_object_get(f, "id");
    if (!method) {
        on_response(a, f);
    } else if (!strcmp(method, "session/update")) {
        on_update(a, json_object_get(f, "params"));
    } else if (!strcmp(method, "session/request_permission") && id) {
        if (a->perm_id) /* only one open at a time: the older one is cancelled */
            pt_client_reply(&a->c, a->perm_id,
                            json_pack("{s:{s:s}}", "outcome", "outcome", "cancelled"));
        json_decref(a->perm_id);
        json_decref(a->perm);
        a->perm_id = json_incref(id);
        a->perm = json_incref(json_object_get(f, "params"));
        a->scroll = 0;
    } else if (id) {
        pt_client_error(&a->c, id, -32601, "method not supported by this client");
    }
}

/* ------------------------------------------------------------------ input */

static void answer_permission(app *a, size_t k) {
    json_t *opts = json_object_get(a->perm, "options");
    json_t *opt = json_array_get(opts, k);
    const char *oid = json_string_value(json_object_get(opt, "optionId"));
    if (!oid) return;
    pt_client_reply(&a->c, a->perm_id,
                    json_pack("{s:{s:s, s:s}}", "outcome", "outcome", "selected", "optionId", oid));
    char buf[320];
    const char *title =
        json_string_value(json_object_get(json_object_get(a->perm, "toolCall"), "title"));
    snprintf(buf, sizeof buf, "  %s: %s",
             json_string_value(json_object_get(opt, "name"))
                 ? json_string_value(json_object_get(opt, "name"))
                 : oid,
             title ? title : "tool");
    const char *kind = json_string_value(json_object_get(opt, "kind"));
    notice(a, (kind && !strncmp(kind, "reject", 6) ? PT_FG(PT_RED) : PT_FG(PT_GREEN)) | PT_DIM,
           buf);
    json_decref(a->perm_id);
    json_decref(a->perm);
    a->perm_id = a->perm = NULL;
}

static void cancel_turn(app *a) {
    if (a->perm_id) {
        pt_client_reply(&a->c, a->perm_id,
                        json_pack("{s:{s:s}}", "outcome", "outcome", "cancelled"));
        json_decref(a->perm_id);
        json_decref(a->perm);
        a->perm_id = a->perm = NULL;
    }
    if (a->prompts > 0 && a->sid[0]) {
        pt_client_notify(&a->c, "session/cancel", json_pack("{s:s}", "sessionId", a->sid));
        a->cancelling = true;
    }
}

/* Mentions: every "@path" naming an existing file or directory beneath or at an
 * absolute path becomes a resource_link block after the text. */
static void add_mentions(app *a, json_t *blocks, const char *text) {
    for (const char *p = text; (p = strchr(p, '@'));) {
        bool start = p == text || p[-1] == ' ' || p[-1] == '\n' || p[-1] == '\t';
        const char *q = ++p;
        while (*q && *q != ' ' && *q != '\n' && *q != '\t')
            q++;
        size_t n = (size_t)(q - p);
        while (n && strchr(",.;:!?)\"'", p[n - 1]))
            n--;
        if (!start || !n || n > PATH_MAX / 2) continue;
        char rel[PATH_MAX], abs[PATH_MAX];
        if (p[0] == '/')
            snprintf(rel, sizeof rel, "%.*s", (int)n, p);
        else
            snprintf(rel, sizeof rel, "%s/%.*s", a->o->cwd, (int)n, p);
        struct stat sb;
        if (!realpath(rel, abs) || stat(abs, &sb)) continue;
        const char *base = strrchr(abs, '/');
        char uri[PATH_MAX + 8];
        snprintf(uri, sizeof uri, "file://%s", abs);
        json_array_append_new(blocks, json_pack("{s:s, s:s, s:s}", "type", "resource_link", "uri",
                                                uri, "name", base && base[1] ? base + 1 : abs));
    }
}

static void send_input(app *a) {
    const char *s = a->in.b.s ? a->in.b.s : "";
    while (*s == ' ' || *s == '\n')
        s++;
    if (!*s) return;
    if (!strcmp(s, "/quit") || !strcmp(s, "/exit")) {
        a->quit = true;
        return;
    }
    if (!strcmp(s, "/resume")) {
        free(pt_input_take(&a->in));
        request(a, "session/list", json_pack("{s:s}", "cwd", a->o->cwd), RQ_LIST);
        return;
    }
    if (!a->ready) {
        set_msg(a, PT_FG(PT_YELLOW), "The session is not open yet.%s", "");
        return;
    }
    char *text = pt_input_take(&a->in);
    if (!text) return;
    json_t *blocks = json_pack("[{s:s, s:s}]", "type", "text", "text", text);
    if (blocks) add_mentions(a, blocks, text);
    pt_entry *e = pt_transcript_add(&a->t, PT_E_USER, text, 0);
    (void)e;
    free(text);
    a->scroll = 0;
    a->msg[0] = 0;
    int id = pt_client_request(&a->c, "session/prompt",
                               json_pack("{s:s, s:o}", "sessionId", a->sid, "prompt", blocks));
    if (id < 0) {
        notice(a, PT_FG(PT_RED), "The agent is gone: the prompt was not sent.");
        return;
    }
    track(a, id, RQ_PROMPT);
    a->prompts++;
}

/* Slash commands: the agent's (available_commands_update) and the client's own. */
static const char *const CLIENT_CMDS[] = {"resume", "quit"};

static void complete(app *a) {
    const char *s = a->in.b.s;
    if (!s || s[0] != '/' || strpbrk(s, " \n")) return;
    const char *pre = s + 1;
    size_t pl = strlen(pre);
    char common[128] = "";
    int matches = 0;
    size_t n = json_array_size(a->commands);
    for (size_t i = 0; i < n + 2; i++) {
        const char *name =
            i < n ? json_string_value(json_object_get(json_array_get(a->commands, i), "name"))
                  : CLIENT_CMDS[i - n];
        if (!name || strncmp(name, pre, pl)) continue;
        if (!matches++) {
            snprintf(common, sizeof common, "%s", name);
        } else {
            size_t k = 0;
            while (common[k] && common[k] == name[k])
                k++;
            common[k] = 0;
        }
    }
    if (!matches) return;
    char buf[160];
    snprintf(buf, sizeof buf, "/%s%s", common, matches == 1 ? " " : "");
    pt_input_set(&a->in, buf);
}

static void completion_hint(app *a, char *out, size_t len) {
    const char *s = a->in.b.s;
    out[0] = 0;
    if (!s || s[0] != '/' || strpbrk(s, " \n")) return;
    size_t pl = strlen(s + 1), used = 0;
    size_t n = json_array_size(a->commands);
    for (size_t i = 0; i < n + 2 && used + 1 < len; i++) {
        json_t *c = i < n ? json_array_get(a->commands, i) : NULL;
        const char *name = c ? json_string_value(json_object_get(c, "name")) : CLIENT_CMDS[i - n];
        if (!name || strncmp(name, s + 1, pl)) continue;
        const char *desc = c ? json_string_value(json_object_get(c, "description")) : NULL;
        int w = snprintf(out + used, len - used, "%s/%s%s%s", used ? "  " : "", name,
                         desc && pl ? " - " : "", desc && pl ? desc : "");
        if (w < 0) break;
        used += (size_t)w;
        if (used >= len) break;
    }
}

static void pick_session(app *a, size_t k) {
    const char *id = json_string_value(json_object_get(json_array_get(a->pick, k), "sessionId"));
    if (!id) return;
    char copy[128];
    snprintf(copy, sizeof copy, "%s", id);
    json_decref(a->pick);
    a->pick = NULL;
    load_session(a, copy);
}

static void on_key(app *a, const pt_key *k) {
    if (k->type != PK_CTRL || k->ctrl != 'c') a->ctrlc_at = 0;
    if (a->pick) {
        size_t n = json_array_size(a->pick);
        if (k->type == PK_CHAR && k->text[0] >= '1' && k->text[0] <= '9' &&
            (size_t)(k->text[0] - '1') < n) {
            pick_session(a, (size_t)(k->text[0] - '1'));
            return;
        }
        if (k->type == PK_UP && a->pick_sel > 0) a->pick_sel--;
        if (k->type == PK_DOWN && a->pick_sel + 1 < n) a->pick_sel++;
        if (k->type == PK_ENTER) pick_session(a, a->pick_sel);
        if (k->type == PK_ESC) {
            json_decref(a->pick);
            a->pick = NULL;
        }
        if (k->type != PK_CTRL) return;
    }
    if (a->perm_id && k->type == PK_CHAR && k->text[0] >= '1' && k->text[0] <= '9') {
        size_t idx = (size_t)(k->text[0] - '1');
        if (idx < json_array_size(json_object_get(a->perm, "options"))) answer_permission(a, idx);
        return;
    }
    switch (k->type) {
    case PK_CHAR: pt_input_insert(&a->in, k->text, strlen(k->text)); break;
    case PK_ENTER:
        if (a->in.cur > 0 && a->in.b.s[a->in.cur - 1] == '\\') {
            pt_input_backspace(&a->in);
            pt_input_insert(&a->in, "\n", 1);
        } else {
            send_input(a);
        }
        break;
    case PK_ALT_ENTER: pt_input_insert(&a->in, "\n", 1); break;
    case PK_BACKSPACE: pt_input_backspace(&a->in); break;
    case PK_DELETE: pt_input_delete(&a->in); break;
    case PK_LEFT: pt_input_left(&a->in); break;
    case PK_RIGHT: pt_input_right(&a->in); break;
    case PK_UP: pt_input_up(&a->in); break;
    case PK_DOWN: pt_input_down(&a->in); break;
    case PK_HOME: pt_input_home(&a->in); break;
    case PK_END: pt_input_end(&a->in); break;
    case PK_PGUP: a->scroll += a->scr.rows / 2 > 1 ? a->scr.rows / 2 : 1; break;
    case PK_PGDN: a->scroll -= a->scr.rows / 2 > 1 ? a->scr.rows / 2 : 1; break;
    case PK_TAB: complete(a); break;
    case PK_ESC:
        if (a->prompts > 0 || a->perm_id)
            cancel_turn(a);
        else
            a->scroll = 0;
        break;
    case PK_PASTE: {
        /* CR LF and CR become LF; other control characters (but tab) are dropped */
        for (size_t i = 0; i < k->paste_len; i++) {
            char c = k->paste[i];
            if (c == '\r') {
                if (i + 1 < k->paste_len && k->paste[i + 1] == '\n') continue;
                c = '\n';
            }
            if ((unsigned char)c < 0x20 && c != '\n' && c != '\t') continue;
            pt_input_insert(&a->in, &c, 1);
        }
        break;
    }
    case PK_CTRL:
        switch (k->ctrl) {
        case 'c': {
            long long t = now_ms();
            if (a->ctrlc_at && t - a->ctrlc_at <= CTRL_C_WINDOW_MS) {
                a->quit = true;
                break;
            }
            a->ctrlc_at = t;
            cancel_turn(a);
            pt_input_set(&a->in, "");
            set_msg(a, PT_FG(PT_YELLOW) | PT_BOLD, "Press Ctrl-C again to quit.%s", "");
            break;
        }
        case 'd':
            if (!a->in.b.n)
                a->quit = true;
            else
                pt_input_delete(&a->in);
            break;
        case 'a': pt_input_home(&a->in); break;
        case 'e': pt_input_end(&a->in); break;
        case 'k': pt_input_kill_line(&a->in); break;
        case 'u': pt_input_kill_back(&a->in); break;
        case 'w': pt_input_kill_word(&a->in); break;
        case 'j': pt_input_insert(&a->in, "\n", 1); break;
        case 'l': a->scr.full = true; break;
        default: break;
        }
        break;
    default: break;
    }
}

/* ------------------------------------------------------------------ frame */

static int add_line(pt_lines *ls, const char *text, uint16_t attr, int width, bool utf8,
                    const char *first, const char *rest) {
    pt_line p = {0};
    int rc = pt_line_adds(&p, text, attr, utf8);
    if (!rc) rc = pt_wrap(ls, &p, width, first, rest, attr, utf8);
    pt_line_free(&p);
    return rc;
}

static void extra_lines(app *a, pt_lines *ls) {
    int w = a->scr.cols;
    bool u = a->scr.st.utf8;
    char buf[512];
    if (a->perm_id) {
        json_t *tc = json_object_get(a->perm, "toolCall");
        const char *title = json_string_value(json_object_get(tc, "title"));
        const char *kind = json_string_value(json_object_get(tc, "kind"));
        pt_lines_push(ls);
        snprintf(buf, sizeof buf, "Permission: %s (%s)", title ? title : "tool",
                 kind ? kind : "other");
        add_line(ls, buf, PT_BOLD | PT_FG(PT_YELLOW), w, u, u ? "\xE2\x9A\xA0 " : "! ", "  ");
        json_t *ri = json_object_get(tc, "rawInput");
        const char *cmd = json_string_value(json_object_get(ri, "command"));
        if (!cmd) cmd = json_string_value(json_object_get(ri, "path"));
        if (cmd) add_line(ls, cmd, PT_DIM, w, u, "    ", "    ");
        size_t i;
        json_t *opt;
        json_array_foreach(json_object_get(a->perm, "options"), i, opt) {
            if (i >= 9) break;
            char pre[16];
            snprintf(pre, sizeof pre, "  %zu. ", i + 1);
            const char *name = json_string_value(json_object_get(opt, "name"));
            add_line(ls, name ? name : "?", 0, w, u, pre, "     ");
        }
        add_line(ls, "Press a number to answer, Esc to cancel the turn.", PT_DIM, w, u, "  ", "  ");
    }
    if (a->pick) {
        pt_lines_push(ls);
        add_line(ls, "Resume a session (1-9 or arrows + Enter; Esc closes):", PT_BOLD, w, u, "",
                 "");
        size_t i;
        json_t *s;
        json_array_foreach(a->pick, i, s) {
            if (i >= 9) break;
            const char *title = json_string_value(json_object_get(s, "title"));
            const char *at = json_string_value(json_object_get(s, "updatedAt"));
            const char *id = json_string_value(json_object_get(s, "sessionId"));
            snprintf(buf, sizeof buf, "%s  %.16s", title ? title : id ? id : "?", at ? at : "");
            char pre[16];
            snprintf(pre, sizeof pre, "%s%zu. ",
                     i == a->pick_sel ? (u ? "\xE2\x80\xBA " : "> ") : "  ", i + 1);
            add_line(ls, buf, i == a->pick_sel ? PT_REV : 0, w, u, pre, "     ");
        }
    }
}

static void draw(app *a) {
    char left[256], right[200], hint[512];
    const char *spin_u[] = {"\xE2\xA0\x8B", "\xE2\xA0\x99", "\xE2\xA0\xB9", "\xE2\xA0\xB8",
                            "\xE2\xA0\xBC", "\xE2\xA0\xB4", "\xE2\xA0\xA6", "\xE2\xA0\xA7"};
    const char *spin_a[] = {"|", "/", "-", "\\"};
    const char *dot = a->scr.st.utf8 ? " \xC2\xB7 " : " | ";
    int n = snprintf(left, sizeof left, "%s%s%s", a->model[0] ? a->model : "(model)", dot,
                     a->mode[0] ? a->mode : "default");
    if (a->has_usage && n > 0 && (size_t)n < sizeof left) {
        double pct = a->size > 0 ? 100.0 * (double)a->used / (double)a->size : 0;
        n += snprintf(left + n, sizeof left - (size_t)n, "%sctx %.0f%% (%lld/%lld)", dot, pct,
                      a->used, a->size);
        if (a->has_cost && n > 0 && (size_t)n < sizeof left)
            snprintf(left + n, sizeof left - (size_t)n, "%s$%.4f", dot, a->cost);
    }
    snprintf(right, sizeof right, "%s", a->title);
    hint[0] = 0;
    uint16_t hattr = PT_DIM;
    completion_hint(a, hint, sizeof hint);
    if (!hint[0] && a->msg[0]) {
        snprintf(hint, sizeof hint, "%s", a->msg);
        hattr = a->msg_attr;
    }
    if (!hint[0] && !a->ready) snprintf(hint, sizeof hint, "Starting the agent...");
    if (!hint[0] && a->prompts > 0) {
        const char *sp = a->scr.st.utf8 ? spin_u[a->spin % 8] : spin_a[a->spin % 4];
        snprintf(hint, sizeof hint, "%s %s", sp,
                 a->cancelling ? "Cancelling..." : "Working... (Esc to cancel)");
        hattr = PT_FG(PT_CYAN);
    }
    pt_lines extra = {0};
    extra_lines(a, &extra);
    pt_frame f = {.t = &a->t,
                  .extra = &extra,
                  .in = &a->in,
                  .hint = hint,
                  .hint_attr = hattr,
                  .status_left = left,
                  .status_right = right,
                  .scroll = a->scroll};
    pt_screen_draw(&a->scr, &f);
    a->scroll = f.scroll;
    pt_lines_clear(&extra);
}

/* ------------------------------------------------------------------ close */

/* The bounded close (as libperi-sdk's): session/close, replayed every 50 ms while the
 * agent answers -32010 (not settled yet), within CLOSE_GRACE_MS. Requests that arrive
 * meanwhile are answered "cancelled" / not supported. 0 closed, -1 not settled or no
 * answer in time (then the agent's stdin is closed anyway). */
static int close_session(app *a) {
    long long deadline = now_ms() + CLOSE_GRACE_MS;
    int id = pt_client_request(&a->c, "session/close", json_pack("{s:s}", "sessionId", a->sid));
    while (id > 0 && !a->c.eof) {
        long long left = deadline - now_ms();
        if (left <= 0) return -1;
        struct pollfd p = {a->c.rfd, POLLIN, 0};
        if (poll(&p, 1, (int)left) <= 0) continue;
        if (pt_client_read(&a->c) < 0 && a->c.eof) break;
        json_t *f;
        while ((f = pt_client_next(&a->c))) {
            json_t *fid = json_object_get(f, "id");
            const char *method = json_string_value(json_object_get(f, "method"));
            if (method && fid) {
                if (!strcmp(method, "session/request_permission"))
                    pt_client_reply(&a->c, fid,
                                    json_pack("{s:{s:s}}", "outcome", "outcome", "cancelled"));
                else
                    pt_client_error(&a->c, fid, -32601, "method not supported by this client");
            } else if (!method && json_is_integer(fid) && json_integer_value(fid) == id) {
                json_t *err = json_object_get(f, "error");
                long long code = json_integer_value(json_object_get(err, "code"));
                json_decref(f);
                if (!err) return 0;
                if (code != -32010) return -1;
                struct timespec ts = {0, 50 * 1000 * 1000};
                nanosleep(&ts, NULL);
                id = pt_client_request(&a->c, "session/close",
                                       json_pack("{s:s}", "sessionId", a->sid));
                break;
            }
            json_decref(f);
        }
    }
    return -1;
}

/* ------------------------------------------------------------------ loop */

int ptui_run(const ptui_options *o) {
    app *a = calloc(1, sizeof *a);
    if (!a) return 1;
    a->o = o;
    a->scr.st.color = o->color;
    a->scr.st.utf8 = o->utf8;
    a->scr.full = true;
    pt_input_set(&a->in, "");
    char err[512] = "";
    int status = 0;
    if (pt_client_start(&a->c, o, err, sizeof err)) {
        fprintf(stderr, "peri tui: %s\n", err);
        free(a);
        return 1;
    }
    int sig_fd = -1;
    if (pt_term_enter(&sig_fd)) {
        pt_term_restore();
        fprintf(stderr, "peri tui: cannot set up the terminal: %s\n", strerror(errno));
        pt_client_close(&a->c, CLOSE_GRACE_MS);
        free(a);
        return 1;
    }
    pt_term_size(&a->scr.rows, &a->scr.cols);
    request(a, "initialize",
            json_pack("{s:i, s:{s:{s:b, s:b}, s:b}, s:{s:s, s:s}}", "protocolVersion", 1,
                      "clientCapabilities", "fs", "readTextFile", 0, "writeTextFile", 0, "terminal",
                      0, "clientInfo", "name", "peri-tui", "version", "1"),
            RQ_INIT);
    bool dirty = true;
    long long last_spin = now_ms();
    while (!a->quit) {
        if (dirty) {
            draw(a);
            dirty = false;
        }
        int timeout = -1;
        long long t = now_ms();
        if (pt_keys_pending(&a->keys)) timeout = ESC_WAIT_MS;
        if (a->prompts > 0) timeout = timeout < 0 || timeout > 120 ? 120 : timeout;
        if (a->ctrlc_at) {
            long long left = a->ctrlc_at + CTRL_C_WINDOW_MS - t;
            int l = left < 0 ? 0 : (int)left + 1;
            timeout = timeout < 0 || timeout > l ? l : timeout;
        }
        struct pollfd p[3] = {{0, POLLIN, 0}, {a->c.rfd, POLLIN, 0}, {sig_fd, POLLIN, 0}};
        int pr = poll(p, a->c.eof ? 1 : 2, timeout);
        (void)pr;
        struct pollfd ps = {sig_fd, POLLIN, 0};
        if (poll(&ps, 1, 0) > 0) {
            char b[64];
            while (read(sig_fd, b, sizeof b) > 0) {
            }
            if (pt_term_quit_signal()) break;
            pt_term_size(&a->scr.rows, &a->scr.cols);
            a->scr.full = true;
            dirty = true;
        }
        if (p[0].revents & (POLLIN | POLLHUP)) {
            char b[4096];
            ssize_t n = read(0, b, sizeof b);
            if (n == 0 || (n < 0 && errno != EINTR && errno != EAGAIN))
                break; /* the terminal is gone */
            if (n > 0) pt_keys_feed(&a->keys, b, (size_t)n);
            if (n > 0 && b[n - 1] == 0x1b) a->esc_at = now_ms();
        }
        bool flush = pt_keys_pending(&a->keys) && now_ms() - a->esc_at >= ESC_WAIT_MS;
        pt_key k;
        while (!a->quit && pt_keys_next(&a->keys, &k, flush) == 1) {
            if (k.type != PK_NONE) on_key(a, &k);
            dirty = true;
        }
        if (!a->c.eof && (p[1].revents & (POLLIN | POLLHUP))) {
            if (pt_client_read(&a->c) < 0 && a->c.eof) {
                notice(a, PT_FG(PT_RED) | PT_BOLD,
                       "The agent exited. Ctrl-C twice quits; details in the log (--log FILE).");
                a->prompts = 0; /* nothing will answer them */
                a->ready = false;
            }
            json_t *f;
            while ((f = pt_client_next(&a->c))) {
                on_frame(a, f);
                json_decref(f);
            }
            dirty = true;
        }
        if (a->ctrlc_at && now_ms() - a->ctrlc_at > CTRL_C_WINDOW_MS) {
            a->ctrlc_at = 0;
            a->msg[0] = 0;
            dirty = true;
        }
        if (a->prompts > 0 && now_ms() - last_spin >= 120) {
            a->spin++;
            last_spin = now_ms();
            dirty = true;
        }
    }
    pt_term_restore();
    if (a->perm_id)
        pt_client_reply(&a->c, a->perm_id,
                        json_pack("{s:{s:s}}", "outcome", "outcome", "cancelled"));
    if (a->prompts > 0 && a->sid[0])
        pt_client_notify(&a->c, "session/cancel", json_pack("{s:s}", "sessionId", a->sid));
    int closed = a->ready && a->sid[0] ? close_session(a) : 0;
    pt_client_close(&a->c, CLOSE_GRACE_MS);
    if (closed < 0)
        fprintf(stderr, "peri tui: the agent did not settle session %s within %d ms\n", a->sid,
                CLOSE_GRACE_MS);
    if (a->ready && a->sid[0] && !pt_term_quit_signal())
        printf("Resume this session with: peri --resume %s\n", a->sid);
    int sig = pt_term_quit_signal();
    json_decref(a->perm_id);
    json_decref(a->perm);
    json_decref(a->pick);
    json_decref(a->commands);
    pt_transcript_free(&a->t);
    pt_input_free(&a->in);
    pt_keys_free(&a->keys);
    pt_screen_free(&a->scr);
    free(a);
    if (sig) {
        signal(sig, SIG_DFL);
        raise(sig);
    }
    return status;
}
