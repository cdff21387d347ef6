/*
 * tui.h — the interactive terminal client of `peri tui`, internal API.
 * The TUI is an ACP endpoint: it spawns `peri-agent acp` and renders only what arrives
 * over ACP (docs/tui.md). One concern per file:
 *   client.c      the ACP connection to the child (spawn, frames, request ids, close)
 *   transcript.c  the transcript model: session/update notifications -> entries
 *   text.c        styled text: sanitising, display width, word wrap (UTF-8 or ASCII)
 *   markdown.c    agent text -> styled lines (headings, lists, code blocks, inline)
 *   render.c      transcript entries -> styled lines (tools, diffs, plans, thoughts)
 *   keys.c        terminal bytes -> key events (escape sequences, bracketed paste)
 *   input.c       the multi-line input editor and its history
 *   term.c        raw mode, alternate screen, restore on exit/signal/crash, size
 *   screen.c      frame composition (transcript, prompts, input, status) and output
 *   app.c         the event loop gluing the above
 * Invariants: the terminal is restored on every exit path (term.c); nothing is shown
 * that did not arrive over ACP except the client's own prompts and notices.
 */
#ifndef PERI_TUI_H
#define PERI_TUI_H

#include "peri/base.h"

#include "peri/json.h"
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* ---- options (filled by src/cli/cmd_tui.c, which reads the environment) ---- */
typedef struct ptui_options {
    const char *agent;     /* path of the peri-agent program */
    const char *cwd;       /* absolute working directory of the session */
    const char *db;        /* --db for the agent, or NULL */
    const char *log;       /* the agent's stderr goes here (NULL: /dev/null) */
    const char *resume_id; /* --resume ID, or NULL */
    bool cont;             /* --continue: the latest session of cwd */
    bool color;            /* false under NO_COLOR */
    bool utf8;             /* the locale's codeset is UTF-8 */
} ptui_options;

/* Runs the TUI until the user quits. Returns the exit status (0, or 1 with a message
 * on stderr after the terminal is restored). */
int ptui_run(const ptui_options *o);

/* ---- text.c: styled lines ---- */
enum {
    PT_BOLD = 1,
    PT_DIM = 2,
    PT_ITALIC = 4,
    PT_UNDER = 8,
    PT_REV = 16,
};
/* Colours (attr bits 8..11): 0 = default. */
enum { PT_RED = 1, PT_GREEN, PT_YELLOW, PT_BLUE, PT_MAGENTA, PT_CYAN, PT_GREY };
#define PT_FG(c)    ((uint16_t)((c) << 8))
#define PT_FG_OF(a) (((a) >> 8) & 15)

/* One line of styled text: bytes (sanitised UTF-8, or ASCII) and one attribute per
 * byte. Owned by its pt_lines. */
typedef struct pt_line {
    char *s;
    uint16_t *a;
    size_t n, cap;
} pt_line;

typedef struct pt_lines {
    pt_line *v;
    size_t n, cap;
} pt_lines;

void pt_line_free(pt_line *l);
/* Appends text, sanitised: control characters dropped (tab -> spaces), invalid UTF-8
 * and, when !utf8, every non-ASCII character become '?'. -1 when out of memory. */
int pt_line_add(pt_line *l, const char *s, size_t n, uint16_t attr, bool utf8);
int pt_line_adds(pt_line *l, const char *s, uint16_t attr, bool utf8);
/* Appends an already sanitised line as is. */
int pt_line_append(pt_line *l, const pt_line *src);
/* Display width of a sanitised line. */
int pt_line_width(const pt_line *l);
/* Byte length and display width of the character at s (sanitised text). */
size_t pt_char(const char *s, size_t n, int *w);
void pt_lines_clear(pt_lines *ls);
pt_line *pt_lines_push(pt_lines *ls); /* a new empty line at the end, NULL on OOM */
/* Word-wraps the paragraph p to width columns: each output line starts with the prefix
 * (first on the first line, rest on the others). */
int pt_wrap(pt_lines *out, const pt_line *p, int width, const char *first, const char *rest,
            uint16_t prefix_attr, bool utf8);
/* Cuts the line to width columns (for lines never wrapped, such as code). */
void pt_line_cut(pt_line *l, int width);

/* ---- markdown.c ---- */
int pt_markdown(pt_lines *out, const char *text, size_t len, int width, bool utf8);

/* ---- transcript.c ---- */
typedef enum pt_kind {
    PT_E_USER,
    PT_E_AGENT,
    PT_E_THOUGHT,
    PT_E_TOOL,
    PT_E_PLAN,
    PT_E_NOTICE,
} pt_kind;

typedef struct pt_buf {
    char *s;
    size_t n, cap;
} pt_buf;
int pt_buf_add(pt_buf *b, const char *s, size_t n);
void pt_buf_free(pt_buf *b);

typedef struct pt_entry {
    pt_kind kind;
    pt_buf text;     /* user/agent/thought/notice text; tool: output preview */
    pj_t *call;      /* tool: toolCallId, title, kind, status as the updates last said */
    char *placement; /* tool: "ran in room (reason x)" / "ran in sandbox ..." */
    pt_buf diff;     /* "-old\n+new\n" lines */
    pj_t *plan;      /* plan entries (owned) */
    uint16_t attr;   /* notice style */
} pt_entry;

typedef struct pt_transcript {
    pt_entry *v;
    size_t n, cap;
    unsigned version; /* bumped on every change */
} pt_transcript;

void pt_transcript_free(pt_transcript *t);
/* Applies one session/update's "update" object. */
void pt_transcript_update(pt_transcript *t, pj_t *update);
pt_entry *pt_transcript_add(pt_transcript *t, pt_kind kind, const char *text, uint16_t attr);
/* A tool entry's field key ("toolCallId", "title", "kind", "status"), NULL when absent. */
const char *pt_tool_field(const pt_entry *e, const char *key);

/* ---- render.c ---- */
typedef struct pt_style {
    bool color, utf8;
} pt_style;
int pt_render_entry(pt_lines *out, const pt_entry *e, int width, const pt_style *st);

/* ---- keys.c ---- */
typedef enum pt_keytype {
    PK_NONE,
    PK_CHAR, /* text holds one UTF-8 character */
    PK_ENTER,
    PK_ALT_ENTER,
    PK_BACKSPACE,
    PK_DELETE,
    PK_LEFT,
    PK_RIGHT,
    PK_UP,
    PK_DOWN,
    PK_HOME,
    PK_END,
    PK_PGUP,
    PK_PGDN,
    PK_TAB,
    PK_BACKTAB, /* Shift-Tab */
    PK_ESC,
    PK_CTRL,  /* ctrl holds the letter: 'c', 'd', 'a', 'e', 'k', 'u', 'w', 'l', 'j' */
    PK_PASTE, /* paste holds the pasted bytes (owned by the decoder until the next call) */
} pt_keytype;

typedef struct pt_key {
    pt_keytype type;
    char text[8];
    char ctrl;
    const char *paste;
    size_t paste_len;
} pt_key;

typedef struct pt_keys {
    unsigned char *buf;
    size_t n, cap;
    pt_buf paste;
    bool in_paste;
} pt_keys;

int pt_keys_feed(pt_keys *k, const void *bytes, size_t n);
/* Next decoded key: 1, or 0 when more bytes are needed. With flush, a lone ESC (or an
 * incomplete sequence) is decoded as is: call it after a short quiet time. */
int pt_keys_next(pt_keys *k, pt_key *out, bool flush);
bool pt_keys_pending(const pt_keys *k);
void pt_keys_free(pt_keys *k);

/* ---- input.c ---- */
typedef struct pt_input {
    pt_buf b;
    size_t cur; /* byte offset into b */
    char **hist;
    size_t hn, hcap, hpos; /* hpos == hn: editing a new line */
    char *saved;           /* the new line while browsing history */
} pt_input;

void pt_input_free(pt_input *in);
int pt_input_insert(pt_input *in, const char *s, size_t n);
void pt_input_backspace(pt_input *in);
void pt_input_delete(pt_input *in);
void pt_input_left(pt_input *in);
void pt_input_right(pt_input *in);
void pt_input_home(pt_input *in);
void pt_input_end(pt_input *in);
void pt_input_kill_line(pt_input *in); /* Ctrl-K: to the end of the line */
void pt_input_kill_back(pt_input *in); /* Ctrl-U: to the start of the line */
void pt_input_kill_word(pt_input *in); /* Ctrl-W */
/* Up/Down: moves between lines of a multi-line input, else through history. */
void pt_input_up(pt_input *in);
void pt_input_down(pt_input *in);
/* Takes the text (caller frees), records it in history, clears the editor. */
char *pt_input_take(pt_input *in);
void pt_input_set(pt_input *in, const char *s);

/* ---- term.c ---- */
/* Enters raw mode and the alternate screen, with bracketed paste; installs the
 * restoring signal handlers. sig_fd receives one byte per SIGWINCH. -1 on failure. */
int pt_term_enter(int *sig_fd);
/* Restores the terminal (idempotent, async-signal-safe). */
void pt_term_restore(void);
void pt_term_size(int *rows, int *cols);
int pt_term_write(const char *s, size_t n);
/* Non-zero when a terminating signal (TERM, HUP, INT, QUIT) arrived. */
int pt_term_quit_signal(void);

/* ---- screen.c ---- */
/* What one frame shows, bottom-up: status line, hint line, input box, then the
 * transcript followed by extra (prompts and pickers), scrolled back by scroll lines. */
typedef struct pt_frame {
    const pt_transcript *t;
    const pt_lines *extra;
    const pt_input *in;
    const char *hint;
    uint16_t hint_attr;
    const char *status_left, *status_right;
    int scroll; /* clamped by the draw */
} pt_frame;

typedef struct pt_screen {
    int rows, cols;
    char **prev; /* the rows last written (for the diff), owned */
    int prev_n;
    bool full; /* redraw everything next time */
    pt_style st;
    pt_buf out;
} pt_screen;

int pt_screen_draw(pt_screen *s, pt_frame *f);
void pt_screen_free(pt_screen *s);
/* Appends l as terminal bytes (SGR attributes; colours only when st->color). */
int pt_screen_emit(pt_buf *out, const pt_line *l, const pt_style *st);

/* ---- client.c ---- */
typedef struct pt_client {
    pid_t pid;
    int wfd, rfd;
    pt_buf in; /* unparsed bytes from the agent */
    int next_id;
    bool eof;
} pt_client;

int pt_client_start(pt_client *c, const ptui_options *o, char *err, size_t errlen);
/* Sends a request; returns its id (>0) or -1. params is consumed. */
int pt_client_request(pt_client *c, const char *method, pj_t *params);
int pt_client_notify(pt_client *c, const char *method, pj_t *params);
int pt_client_reply(pt_client *c, pj_t *id, pj_t *result);
int pt_client_error(pt_client *c, pj_t *id, int code, const char *message);
/* Reads what is available (call when rfd is readable); 0, or -1 at EOF/error. */
int pt_client_read(pt_client *c);
/* The next complete frame (new reference) or NULL. */
pj_t *pt_client_next(pt_client *c);
/* Closes the agent's stdin and waits for it at most grace_ms, then SIGTERM, SIGKILL. */
void pt_client_close(pt_client *c, int grace_ms);

#endif
