/*
 * app.c — the TUI's event loop: one poll over the terminal, the agent's stdout and the
 * signal pipe. Keys edit the input or answer the open prompt (permission, session
 * picker), local commands (/help, /resume, /quit; an unknown /name is refused here,
 * never sent) and completion live here; ACP frames go to
 * session.c; every pass ends with one diffed frame (the prompts and the status line
 * are composed here). Quit (Ctrl-C twice, Ctrl-D on an empty input, /quit, a
 * terminating signal): the terminal is restored first, then the session is closed
 * with a bound (session.c). All state lives in one pt_app on the heap (app.h).
 */
#include "tui/app.h"
#include "peri/tools.h"

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

#define CTRL_C_WINDOW_MS 2000
#define ESC_WAIT_MS      25

/* ------------------------------------------------------------------ input */

/* Slash commands: the agent's (available_commands_update) and the client's own. */
static const char *const CLIENT_CMDS[] = {"help", "resume", "quit"};
#define NCLIENT (sizeof CLIENT_CMDS / sizeof CLIENT_CMDS[0])
static const char *const CLIENT_DESC[] = {"this list of commands and keys",
                                          "pick an earlier session of this directory to resume",
                                          "quit (also /exit, Ctrl-D on an empty line)"};

/* The command name of s into name: "/" + letters, digits, '-', '_', ':' or '.', ended by
 * a space, a newline or the end. false for anything else ("/usr/lib is ..." is a
 * prompt, not a command). */
static bool slash_name(const char *s, char *name, size_t n) {
    if (s[0] != '/') return false;
    size_t k = 0;
    for (const char *p = s + 1; *p && *p != ' ' && *p != '\n'; p++) {
        char c = *p;
        bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                  c == '-' || c == '_' || c == ':' || c == '.';
        if (!ok || k + 1 >= n) return false;
        name[k++] = c;
    }
    name[k] = 0;
    return k > 0;
}

static bool agent_command(const pt_app *a, const char *name) {
    for (size_t i = 0; i < pj_array_size(a->commands); i++) {
        const char *c = pj_string_value(pj_object_get(pj_array_get(a->commands, i), "name"));
        if (c && !strcmp(c, name)) return true;
    }
    return false;
}

/* /help: the commands (the client's, then the agent's with their descriptions) and the
 * keys, as a notice in the transcript; nothing goes to the agent. */
static void show_help(pt_app *a) {
    pt_buf b = {0};
    char line[512];
    pt_buf_add(&b, "Commands (handled here):", 24);
    for (size_t i = 0; i < NCLIENT; i++) {
        int w = snprintf(line, sizeof line, "\n  /%-10s %s", CLIENT_CMDS[i], CLIENT_DESC[i]);
        if (w > 0) pt_buf_add(&b, line, strlen(line));
    }
    size_t n = pj_array_size(a->commands);
    if (n) pt_buf_add(&b, "\nCommands of the agent:", 23);
    for (size_t i = 0; i < n; i++) {
        pj_t *c = pj_array_get(a->commands, i);
        const char *name = pj_string_value(pj_object_get(c, "name"));
        const char *desc = pj_string_value(pj_object_get(c, "description"));
        if (!name) continue;
        int w = snprintf(line, sizeof line, "\n  /%-10s %.300s", name, desc ? desc : "");
        if (w > 0) pt_buf_add(&b, line, strlen(line));
    }
    const char *keys = "\nKeys: Enter sends; \\+Enter, Alt-Enter or Ctrl-J add a line; Up/Down "
                       "history; Tab completes /commands; Shift-Tab cycles the mode; Esc cancels "
                       "the turn; PgUp/PgDn scroll; Ctrl-C twice quits.";
    pt_buf_add(&b, keys, strlen(keys));
    pt_app_notice(a, PT_FG(PT_CYAN), b.s ? b.s : "");
    pt_buf_free(&b);
}

static void send_input(pt_app *a) {
    const char *s = a->in.b.s ? a->in.b.s : "";
    while (*s == ' ' || *s == '\n')
        s++;
    if (!*s) return;
    char name[64];
    bool cmd = slash_name(s, name, sizeof name);
    if (cmd && (!strcmp(name, "quit") || !strcmp(name, "exit"))) {
        a->quit = true;
        return;
    }
    if (cmd && !strcmp(name, "help")) {
        free(pt_input_take(&a->in));
        a->scroll = 0;
        a->msg[0] = 0;
        show_help(a);
        return;
    }
    /* An unknown command stays in the input, unsent, with a word why. Before the agent
     * has listed its commands nothing can be called unknown. */
    if (cmd && strcmp(name, "resume") && a->commands && !agent_command(a, name)) {
        char m[128];
        snprintf(m, sizeof m, "Unknown command /%s: /help lists the commands.", name);
        pt_app_msg(a, PT_FG(PT_YELLOW), "%s", m);
        return;
    }
    if (!strcmp(s, "/resume")) {
        if (a->prompts > 0) {
            pt_app_msg(a, PT_FG(PT_YELLOW), "A turn is running: Esc cancels it, then /resume.%s",
                       "");
            return;
        }
        free(pt_input_take(&a->in));
        pt_app_request(a, "session/list", pj_pack("{s:s}", "cwd", a->o->cwd), RQ_LIST);
        return;
    }
    if (!a->ready) {
        pt_app_msg(a, PT_FG(PT_YELLOW), "The session is not open yet.%s", "");
        return;
    }
    char *text = pt_input_take(&a->in);
    if (!text) return;
    a->scroll = 0;
    a->msg[0] = 0;
    pt_session_prompt(a, text);
    free(text);
}

static void complete(pt_app *a) {
    const char *s = a->in.b.s;
    if (!s || s[0] != '/' || strpbrk(s, " \n")) return;
    const char *pre = s + 1;
    size_t pl = strlen(pre);
    char common[128] = "";
    int matches = 0;
    size_t n = pj_array_size(a->commands);
    for (size_t i = 0; i < n + NCLIENT; i++) {
        const char *name =
            i < n ? pj_string_value(pj_object_get(pj_array_get(a->commands, i), "name"))
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

static void completion_hint(pt_app *a, char *out, size_t len) {
    const char *s = a->in.b.s;
    out[0] = 0;
    if (!s || s[0] != '/' || strpbrk(s, " \n")) return;
    size_t pl = strlen(s + 1), used = 0;
    size_t n = pj_array_size(a->commands);
    for (size_t i = 0; i < n + NCLIENT && used + 1 < len; i++) {
        pj_t *c = i < n ? pj_array_get(a->commands, i) : NULL;
        const char *name = c ? pj_string_value(pj_object_get(c, "name")) : CLIENT_CMDS[i - n];
        if (!name || strncmp(name, s + 1, pl)) continue;
        const char *desc = c ? pj_string_value(pj_object_get(c, "description")) : NULL;
        int w = snprintf(out + used, len - used, "%s/%s%s%s", used ? "  " : "", name,
                         desc && pl ? " - " : "", desc && pl ? desc : "");
        if (w < 0) break;
        used += (size_t)w;
        if (used >= len) break;
    }
}

static void close_pick(pt_app *a) {
    pj_decref(a->pick);
    a->pick = NULL;
}

static void pick_session(pt_app *a, size_t k) {
    const char *id = pj_string_value(pj_object_get(pj_array_get(a->pick, k), "sessionId"));
    if (!id) return;
    char copy[128];
    snprintf(copy, sizeof copy, "%s", id);
    close_pick(a);
    pt_session_load(a, copy);
}

static void on_key(pt_app *a, const pt_key *k) {
    if (k->type != PK_CTRL || k->ctrl != 'c') a->ctrlc_at = 0;
    if (a->pick) {
        size_t n = pj_array_size(a->pick);
        if (k->type == PK_CHAR && k->text[0] >= '1' && k->text[0] <= '9' &&
            (size_t)(k->text[0] - '1') < n) {
            pick_session(a, (size_t)(k->text[0] - '1'));
            return;
        }
        if (k->type == PK_UP && a->pick_sel > 0) a->pick_sel--;
        if (k->type == PK_DOWN && a->pick_sel + 1 < n) a->pick_sel++;
        if (k->type == PK_ENTER) pick_session(a, a->pick_sel);
        if (k->type == PK_ESC) close_pick(a);
        if (k->type != PK_CTRL) return;
    }
    if (a->perm_id && k->type == PK_CHAR && k->text[0] >= '1' && k->text[0] <= '9') {
        size_t idx = (size_t)(k->text[0] - '1');
        if (idx < pj_array_size(pj_object_get(a->perm, "options"))) pt_session_answer(a, idx);
        return;
    }
    switch (k->type) {
    case PK_CHAR: pt_input_insert(&a->in, k->text, strlen(k->text)); break;
    case PK_ENTER:
        if (a->ask_id) { /* the input line is the answer to the open question */
            char *ans = pt_input_take(&a->in);
            pt_session_reply_ask(a, ans ? ans : "", false);
            free(ans);
            break;
        }
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
    case PK_BACKTAB: pt_session_next_mode(a); break;
    case PK_ESC:
        if (a->ask_id)
            pt_session_reply_ask(a, NULL, false); /* declined */
        else if (a->prompts > 0 || a->perm_id)
            pt_session_cancel(a);
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
            long long t = pb_mono_ms();
            if (a->ctrlc_at && t - a->ctrlc_at <= CTRL_C_WINDOW_MS) {
                a->quit = true;
                break;
            }
            a->ctrlc_at = t;
            pt_session_cancel(a);
            pt_input_set(&a->in, "");
            pt_app_msg(a, PT_FG(PT_YELLOW) | PT_BOLD, "Press Ctrl-C again to quit.%s", "");
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

static void extra_lines(pt_app *a, pt_lines *ls) {
    int w = a->scr.cols;
    bool u = a->scr.st.utf8;
    char buf[512];
    if (a->ask_id) {
        const char *m = pj_string_value(pj_object_get(a->ask, "message"));
        pt_lines_push(ls);
        char *vm = pb_visible_prompt(m ? m : "", 2000, true);
        snprintf(buf, sizeof buf, "Question: %s", vm ? vm : "");
        free(vm);
        add_line(ls, buf, PT_BOLD | PT_FG(PT_CYAN), w, u, "? ", "  ");
        add_line(ls, "Type your answer and press Enter; Esc declines.", PT_DIM, w, u, "  ", "  ");
    }
    if (a->perm_id) {
        pj_t *tc = pj_object_get(a->perm, "toolCall");
        const char *title = pj_string_value(pj_object_get(tc, "title"));
        const char *kind = pj_string_value(pj_object_get(tc, "kind"));
        pt_lines_push(ls);
        char *vt = pb_visible_prompt(title ? title : "tool", 300, false);
        snprintf(buf, sizeof buf, "Permission: %s (%s)", vt ? vt : "tool", kind ? kind : "other");
        free(vt);
        add_line(ls, buf, PT_BOLD | PT_FG(PT_YELLOW), w, u, u ? "\xE2\x9A\xA0 " : "! ", "  ");
        pj_t *ri = pj_object_get(tc, "rawInput");
        const char *cmd = pj_string_value(pj_object_get(ri, "command"));
        if (!cmd) cmd = pj_string_value(pj_object_get(ri, "path"));
        if (!cmd) cmd = pj_string_value(pj_object_get(ri, "ruby")); /* `run`'s script */
        if (!cmd) cmd = pj_string_value(pj_object_get(ri, "python"));
        /* a request that explains itself in its content (e.g. trusting a project's
         * configuration: every server command in full) shows that text */
        if (!cmd)
            cmd = pj_string_value(pj_object_get(
                pj_object_get(pj_array_get(pj_object_get(tc, "content"), 0), "content"), "text"));
        if (cmd) {
            /* the exact text that will run: controls made visible, one screen line per
             * line of the command, long commands cut with a marker */
            char *v = pb_visible_prompt(cmd, 4000, true);
            for (char *line = v, *nl; line && *line; line = nl ? nl + 1 : NULL) {
                nl = strchr(line, '\n');
                if (nl) *nl = '\0';
                add_line(ls, line, PT_DIM, w, u, "    ", "    ");
                if (!nl) break;
            }
            free(v);
        }
        size_t i;
        pj_t *opt;
        pj_array_foreach(pj_object_get(a->perm, "options"), i, opt) {
            if (i >= 9) break;
            char pre[16];
            snprintf(pre, sizeof pre, "  %zu. ", i + 1);
            const char *name = pj_string_value(pj_object_get(opt, "name"));
            add_line(ls, name ? name : "?", 0, w, u, pre, "     ");
        }
        add_line(ls, "Press a number to answer, Esc to cancel the turn.", PT_DIM, w, u, "  ", "  ");
    }
    if (a->pick) {
        pt_lines_push(ls);
        add_line(ls, "Resume a session (1-9 or arrows + Enter; Esc closes):", PT_BOLD, w, u, "",
                 "");
        size_t i;
        pj_t *s;
        pj_array_foreach(a->pick, i, s) {
            if (i >= 9) break;
            const char *title = pj_string_value(pj_object_get(s, "title"));
            const char *at = pj_string_value(pj_object_get(s, "updatedAt"));
            const char *id = pj_string_value(pj_object_get(s, "sessionId"));
            snprintf(buf, sizeof buf, "%s  %.16s", title ? title : id ? id : "?", at ? at : "");
            char pre[16];
            snprintf(pre, sizeof pre, "%s%zu. ",
                     i == a->pick_sel ? (u ? "\xE2\x80\xBA " : "> ") : "  ", i + 1);
            add_line(ls, buf, i == a->pick_sel ? PT_REV : 0, w, u, pre, "     ");
        }
    }
}

static void draw(pt_app *a) {
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
    if (!hint[0] && a->scroll > 0)
        snprintf(hint, sizeof hint, "Scrolled back (PgDn, Esc: back to the end)");
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
    pt_lines_clear(&extra);
    if (f.scroll != a->scroll) { /* clamped to the transcript: redraw with the true hint */
        a->scroll = f.scroll;
        draw(a);
    }
}

/* ------------------------------------------------------------------ loop */

int ptui_run(const ptui_options *o) {
    pt_app *a = calloc(1, sizeof *a);
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
    pt_session_start(a);
    bool dirty = true;
    long long last_spin = pb_mono_ms();
    while (!a->quit) {
        if (dirty) {
            draw(a);
            dirty = false;
        }
        int timeout = -1;
        long long t = pb_mono_ms();
        if (pt_keys_pending(&a->keys)) timeout = ESC_WAIT_MS;
        if (a->prompts > 0) timeout = timeout < 0 || timeout > 120 ? 120 : timeout;
        if (a->ctrlc_at) {
            long long left = a->ctrlc_at + CTRL_C_WINDOW_MS - t;
            int l = left < 0 ? 0 : (int)left + 1;
            timeout = timeout < 0 || timeout > l ? l : timeout;
        }
        /* the terminal, the signal pipe (SIGWINCH, terminating signals), the agent */
        struct pollfd p[3] = {{0, POLLIN, 0}, {sig_fd, POLLIN, 0}, {a->c.rfd, POLLIN, 0}};
        if (poll(p, a->c.eof ? 2 : 3, timeout) < 0 && errno != EINTR) break;
        if (p[1].revents & POLLIN) {
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
            if (n > 0 && b[n - 1] == 0x1b) a->esc_at = pb_mono_ms();
        }
        bool flush = pt_keys_pending(&a->keys) && pb_mono_ms() - a->esc_at >= ESC_WAIT_MS;
        pt_key k;
        while (!a->quit && pt_keys_next(&a->keys, &k, flush) == 1) {
            if (k.type != PK_NONE) on_key(a, &k);
            dirty = true;
        }
        if (!a->c.eof && (p[2].revents & (POLLIN | POLLHUP))) {
            if (pt_client_read(&a->c) < 0 && a->c.eof) {
                pt_app_notice(
                    a, PT_FG(PT_RED) | PT_BOLD,
                    "The agent exited. Ctrl-C twice quits; details in the log (--log FILE).");
                a->prompts = 0; /* nothing will answer them */
                a->ready = false;
            }
            pj_t *f;
            while ((f = pt_client_next(&a->c))) {
                pt_session_frame(a, f);
                pj_decref(f);
            }
            dirty = true;
        }
        if (a->ctrlc_at && pb_mono_ms() - a->ctrlc_at > CTRL_C_WINDOW_MS) {
            a->ctrlc_at = 0;
            a->msg[0] = 0;
            dirty = true;
        }
        if (a->prompts > 0 && pb_mono_ms() - last_spin >= 120) {
            a->spin++;
            last_spin = pb_mono_ms();
            dirty = true;
        }
    }
    pt_term_restore();
    pt_session_reply_ask(a, NULL, true);
    pt_session_perm_cancel(a);
    if (a->prompts > 0 && a->sid[0])
        pt_client_notify(&a->c, "session/cancel", pj_pack("{s:s}", "sessionId", a->sid));
    int closed = a->ready && a->sid[0] ? pt_session_close(a) : 0;
    pt_client_close(&a->c, CLOSE_GRACE_MS);
    if (closed < 0)
        fprintf(stderr, "peri tui: the agent did not settle session %s within %d ms\n", a->sid,
                CLOSE_GRACE_MS);
    if (a->ready && a->sid[0] && !pt_term_quit_signal())
        printf("Resume this session with: peri --resume %s\n", a->sid);
    int sig = pt_term_quit_signal();
    close_pick(a);
    pj_decref(a->commands);
    pj_decref(a->modes);
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
