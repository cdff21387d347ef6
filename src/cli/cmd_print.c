/*
 * cmd_print.c — `peri print "PROMPT" [--cwd DIR] [--db PATH] [--allow]`: a one-shot
 * ACP client. It runs the ACP server in-process on a pipe pair (the same path as
 * `peri acp`), sends initialize, session/new and session/prompt, streams the answer
 * to stdout and tool activity to stderr, and exits 0 on end_turn.
 */
#include "cli/commands.h"
#include "cli/host_env.h"
#include "peri/acp.h"
#include "peri/model.h"
#include "peri/room.h"
#include "peri/rpc.h"

#include "peri/json.h"
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct server_job {
    peri_host_args args;
    peri_host_start host;
    int in_fd, out_fd;
    int rc;
    char err[512];
} server_job;

static void *server_main(void *arg) {
    server_job *j = arg;
    j->rc = pacp_serve(&j->host.opt, j->in_fd, j->out_fd, j->err, sizeof j->err);
    close(j->out_fd); /* the client sees EOF once the server is done */
    return NULL;
}

static int send_frame(int fd, pj_t *frame) {
    size_t n = 0;
    char *s = pb_rpc_encode(frame, true, &n);
    pj_decref(frame);
    if (!s) return -1;
    int rc = pb_write_all(fd, s, n) == 0 ? 0 : -1;
    free(s);
    return rc;
}

static pj_t *request(int id, const char *method, pj_t *params) {
    return pb_rpc_request(id, method, params);
}

/* Reads one line from fd (blocking); returns a decoded frame or NULL at EOF. */
static pj_t *read_frame(FILE *in) {
    char *line = NULL;
    size_t cap = 0;
    for (;;) {
        ssize_t n = getline(&line, &cap, in);
        if (n < 0) {
            free(line);
            return NULL;
        }
        pj_t *f = pj_loads(line, 0, NULL);
        if (f) {
            free(line);
            return f;
        }
    }
}

/* where a shell/run call ran (the update's _meta) and its output, indented. */
static void show_placement(pj_t *u) {
    pj_t *p = pj_object_get(pj_object_get(u, "_meta"), "peri.placement");
    if (!pj_is_object(p)) return;
    const char *id = pj_string_value(pj_object_get(p, "identity"));
    fprintf(stderr, "       placement: %s (reason %s%s) decision %.19s%s\n",
            pj_string_value(pj_object_get(p, "backend")),
            pj_string_value(pj_object_get(p, "reason")),
            pj_is_true(pj_object_get(p, "unsandboxed")) ? ", UNSANDBOXED" : "", id ? id : "",
            id && strlen(id) > 19 ? "…" : "");
    pj_t *c = pj_array_get(pj_object_get(u, "content"), 1);
    const char *text = pj_string_value(pj_object_get(pj_object_get(c, "content"), "text"));
    bool tty = isatty(2);
    pb_buf vis = {0};
    for (int lines = 0; text && *text && lines < 12; lines++) {
        size_t n = strcspn(text, "\n");
        /* the program's output: its control characters are shown, not sent */
        pb_buf_reset(&vis);
        fprintf(stderr, "       | %s\n",
                pb_buf_put_visible(&vis, text, n) ? vis.p : "(out of memory)");
        /* a contract message (Chinese, byte for byte) gets its English beside it on a
         * terminal */
        char line[1600], en[700];
        if (tty && n < sizeof line) {
            memcpy(line, text, n);
            line[n] = 0;
            const char *m = strstr(line, "隔离运行");
            if (!m) m = strstr(line, "输出超过");
            if (m && pr_message_english(m, en, sizeof en)) fprintf(stderr, "       |   (%s)\n", en);
        }
        text += n + (text[n] == '\n');
    }
    pb_buf_free(&vis);
}

/* What has gone to stdout: the answer's text parts are joined as the model wrote them
 * within one message; text that follows the end of a message (a tool call, a thought,
 * the usage of a step: the next message of the model) starts on a new line. */
typedef struct out_state {
    bool printed; /* some answer text went to stdout */
    bool at_nl;   /* ... and it ended with a newline */
    bool gap;     /* something other than answer text came since */
    bool tty;     /* stdout is a terminal: the answer's control characters are shown */
} out_state;

/* Appends s[0..n) to b for a terminal: newlines and tabs as they are, every other
 * control character, ESC included, and invalid UTF-8 made visible (pb_buf_put_visible). */
static bool put_lines(pb_buf *b, const char *s, size_t n) {
    size_t from = 0;
    for (size_t i = 0; i <= n; i++)
        if (i == n || s[i] == '\n' || s[i] == '\t') {
            if (!pb_buf_put_visible(b, s + from, i - from)) return false;
            if (i < n && !pb_buf_putc(b, s[i])) return false;
            from = i + 1;
        }
    return true;
}

/* Writes a chunk of the answer. To a pipe or file it goes as the model wrote it (it is
 * the program's output); to a terminal, the model (or whoever answers for it) could
 * otherwise set the window title, write the clipboard (OSC 52), clear the screen or move
 * the cursor, so its control characters are shown, never sent. Each chunk is a whole
 * JSON string (valid UTF-8), so no character is cut between chunks. */
static void put_answer(out_state *o, const char *t) {
    if (!o->tty) {
        fputs(t, stdout);
        return;
    }
    pb_buf b = {0};
    if (put_lines(&b, t, strlen(t))) fwrite(b.p, 1, b.len, stdout);
    pb_buf_free(&b);
}

/* Ends the answer's last line, if it is open (before a message on stderr, at the end). */
static void finish_line(out_state *o) {
    if (o->printed && !o->at_nl) {
        fputc('\n', stdout);
        fflush(stdout);
        o->at_nl = true;
    }
}

static void show_update(out_state *o, pj_t *params) {
    pj_t *u = pj_object_get(params, "update");
    const char *tag = pj_string_value(pj_object_get(u, "sessionUpdate"));
    if (!tag) return;
    if (!strcmp(tag, "agent_message_chunk")) {
        const char *t = pj_string_value(pj_object_get(pj_object_get(u, "content"), "text"));
        if (t && *t) {
            if (o->gap) finish_line(o);
            o->gap = false;
            put_answer(o, t);
            fflush(stdout);
            o->printed = true;
            o->at_nl = t[strlen(t) - 1] == '\n';
        }
        return;
    }
    /* the end of a model message: its usage, a thought, a tool call or its result, a
     * plan (not the title, mode or command list, which may come at any time) */
    if (!strcmp(tag, "usage_update") || !strcmp(tag, "agent_thought_chunk") ||
        !strncmp(tag, "tool_call", 9) || !strcmp(tag, "plan"))
        o->gap = true;
    if (!strcmp(tag, "tool_call")) {
        finish_line(o);
        char *vt = pb_visible(pj_string_value(pj_object_get(u, "title")));
        fprintf(stderr, "[tool] %s\n", vt ? vt : "?");
        free(vt);
    } else if (!strcmp(tag, "tool_call_update")) {
        const char *st = pj_string_value(pj_object_get(u, "status"));
        if (st && (!strcmp(st, "completed") || !strcmp(st, "failed"))) {
            finish_line(o);
            fprintf(stderr, "[tool] %s\n", st);
            show_placement(u);
        }
    }
}

static void usage(FILE *f) {
    fprintf(f, "usage: peri print \"PROMPT\" [--cwd DIR] [--db PATH] [--allow]\n"
               "  --cwd DIR  the session's directory (default: the current one)\n"
               "  --db PATH  the session store (default: $PERI_STORE, else ~/.peri/peri.db)\n"
               "  --allow    allow tools that need permission (default: reject them)\n"
               "The answer goes to stdout, tool activity and errors to stderr.\n"
               "Exit status: 0 the turn ended normally (end_turn); 1 it did not (an error,\n"
               "a refusal, the step limit; the reason on stderr); 2 usage error.\n");
}

int peri_cmd_print(int argc, char **argv) {
    const char *prompt = NULL;
    int allow = 0;
    server_job job = {0};
    peri_place_opts po; /* how code runs (Ruby module, bwrap, WASI runner) */
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            usage(stdout);
            return 0;
        } else if (peri_host_arg(argc, argv, &i, &job.args)) {
            continue;
        } else if (!strcmp(argv[i], "--allow")) {
            allow = 1;
        } else if (!prompt && argv[i][0] != '-') {
            prompt = argv[i];
        } else {
            fprintf(stderr, "peri print: unexpected argument \"%s\"%s\n", argv[i],
                    !strcmp(argv[i], "--cwd") || !strcmp(argv[i], "--db") ? " (it needs a value)"
                    : prompt && argv[i][0] != '-' ? " (one prompt only: quote it)"
                                                  : "");
            usage(stderr);
            return 2;
        }
    }
    if (!prompt) {
        fprintf(stderr, "peri print: the prompt is missing\n");
        usage(stderr);
        return 2;
    }
    char abs[PATH_MAX];
    const char *cwd = job.args.cwd ? job.args.cwd : ".";
    if (!realpath(cwd, abs)) {
        fprintf(stderr, "peri print: no such directory: %s\n", cwd);
        return 1;
    }
    signal(SIGPIPE, SIG_IGN);
    job.args.cwd = abs;
    char herr[512];
    if (peri_host_start_init(&job.host, &job.args, herr, sizeof herr) != 0) {
        fprintf(stderr, "peri print: %s\n", herr);
        return 1;
    }
    peri_place_opts_fill(&po, &job.host.opt);
    job.host.opt.log = (pb_logger){pb_log_to_file, stderr};
    if (pm_global_init() != PM_OK) {
        peri_host_start_clear(&job.host);
        return 1;
    }
    int to_srv[2], from_srv[2];
    if (pipe(to_srv) || pipe(from_srv)) {
        perror("peri print: pipe");
        return 1;
    }
    job.in_fd = to_srv[0];
    job.out_fd = from_srv[1];
    pthread_t th;
    if (pthread_create(&th, NULL, server_main, &job)) {
        fprintf(stderr, "peri print: cannot start the agent\n");
        return 1;
    }
    FILE *in = fdopen(from_srv[0], "r");
    int wfd = to_srv[1];
    int status = 1;
    const char *stop = NULL;
    send_frame(wfd, request(1, "initialize", pj_pack("{s:i}", "protocolVersion", 1)));
    send_frame(wfd, request(2, "session/new", pj_pack("{s:s, s:[]}", "cwd", abs, "mcpServers")));
    pj_t *f;
    char sid[64] = "";
    out_state out = {.tty = isatty(STDOUT_FILENO) == 1};
    while (in && (f = read_frame(in))) {
        pj_t *id = pj_object_get(f, "id");
        const char *method = pj_string_value(pj_object_get(f, "method"));
        pj_t *err = pj_object_get(f, "error");
        if (method && !strcmp(method, "session/update")) {
            show_update(&out, pj_object_get(f, "params"));
        } else if (method && !strcmp(method, "session/request_permission")) {
            pj_t *tc = pj_object_get(pj_object_get(f, "params"), "toolCall");
            const char *title = pj_string_value(pj_object_get(tc, "title"));
            /* A project-trust question is never answered yes here, not even with --allow:
             * trusting a project is a decision the user makes with `peri trust`. */
            bool trust_q = pj_object_get(pj_object_get(tc, "_meta"), "peri.trustRequest");
            /* An ask_user question: nobody is here to answer it; the model is told it was
             * declined and goes on without the answer. */
            bool question = pj_object_get(pj_object_get(tc, "_meta"), "peri.question");
            finish_line(&out);
            char *vt = pb_visible(title); /* a title may quote a server's or model's text */
            if (question)
                fprintf(stderr, "[question] %s: declined (peri print cannot answer questions)\n",
                        vt ? vt : "the agent asks");
            else if (trust_q)
                fprintf(stderr,
                        "[trust] %s: not trusted (review and trust it with `peri trust DIR`)\n",
                        vt ? vt : "project configuration");
            else
                fprintf(stderr, "[permission] %s: %s\n", vt ? vt : "tool",
                        allow ? "allowed (--allow)" : "rejected (run with --allow to permit)");
            free(vt);
            send_frame(wfd, pb_rpc_result(id, pj_pack("{s:{s:s, s:s}}", "outcome", "outcome",
                                                      "selected", "optionId",
                                                      question            ? "decline"
                                                      : allow && !trust_q ? "allow_once"
                                                                          : "reject_once")));
        } else if (method && !strcmp(method, "_peri/mcp_login")) {
            /* a remote MCP server needs an OAuth login: the user opens the URL */
            pj_t *p = pj_object_get(f, "params");
            const char *srv = pj_string_value(pj_object_get(p, "server"));
            const char *url = pj_string_value(pj_object_get(p, "url"));
            finish_line(&out);
            /* the URL is the authorization server's choice: control characters shown */
            char *vs = pb_visible(srv), *vu = pb_visible(url);
            fprintf(stderr, "[login] MCP server \"%s\" needs a login: open %s\n", vs ? vs : "?",
                    vu ? vu : "?");
            free(vs);
            free(vu);
        } else if (pj_is_integer(id) && err) {
            finish_line(&out);
            char *m = pb_visible(pj_string_value(pj_object_get(err, "message")));
            fprintf(stderr, "peri print: %s\n", m ? m : "the agent answered an error");
            free(m);
            pj_decref(f);
            break;
        } else if (pj_is_integer(id) && pj_integer_value(id) == 2) {
            const char *s = pj_string_value(pj_object_get(pj_object_get(f, "result"), "sessionId"));
            snprintf(sid, sizeof sid, "%s", s ? s : "");
            pj_t *blocks = pj_pack("[{s:s, s:s}]", "type", "text", "text", prompt);
            send_frame(wfd, request(3, "session/prompt",
                                    pj_pack("{s:s, s:o}", "sessionId", sid, "prompt", blocks)));
        } else if (pj_is_integer(id) && pj_integer_value(id) == 3) {
            stop = pj_string_value(pj_object_get(pj_object_get(f, "result"), "stopReason"));
            status = stop && !strcmp(stop, "end_turn") ? 0 : 1;
            finish_line(&out);
            if (status) fprintf(stderr, "peri print: stopped: %s\n", stop ? stop : "?");
            pj_decref(f);
            break;
        }
        pj_decref(f);
    }
    finish_line(&out); /* the answer's last line; nothing when there was no answer */
    close(wfd);        /* EOF: the server closes the session and returns */
    while (in && (f = read_frame(in)))
        pj_decref(f);
    pthread_join(th, NULL);
    if (in) fclose(in);
    close(to_srv[0]);
    if (job.rc) {
        fprintf(stderr, "peri print: %s\n", job.err);
        status = 1;
    }
    pm_global_cleanup();
    peri_host_start_clear(&job.host);
    return status;
}
