/*
 * app.h — the TUI client's state (one pt_app per run, on ptui_run's heap) and the
 * session half of the client (session.c): ACP requests and their answers, updates,
 * permission answers, cancel, prompts, the bounded close. app.c owns keys, the frame
 * and the loop. Internal to src/tui/.
 */
#ifndef PERI_TUI_APP_H
#define PERI_TUI_APP_H

#include "tui/tui.h"

#define CLOSE_GRACE_MS 3000 /* session/close budget, then the agent's exit wait */

typedef enum pt_rq {
    RQ_NONE,
    RQ_INIT,
    RQ_NEW,
    RQ_LOAD,
    RQ_PROMPT,
    RQ_LIST,          /* /resume: the picker */
    RQ_LIST_CONTINUE, /* --continue: the latest */
    RQ_OTHER,
} pt_rq;

typedef struct pt_app {
    const ptui_options *o;
    pt_client c;
    pt_transcript t;
    pt_input in;
    pt_keys keys;
    pt_screen scr;
    struct {
        int id;
        pt_rq kind;
    } rq[64];
    char sid[128]; /* the session shown */
    bool ready;    /* a session is open */
    int prompts;   /* prompts in flight */
    bool cancelling;
    pj_t *perm_id;      /* an open permission request (its JSON-RPC id), or NULL */
    pj_t *perm;         /* its params */
    pj_t *ask_id;       /* an open free-text question (elicitation/create), or NULL */
    pj_t *ask;          /* its params */
    char ask_field[64]; /* the one text field its answer fills */
    pj_t *pick;         /* /resume: the sessions offered, or NULL */
    size_t pick_sel;
    pj_t *commands; /* availableCommands */
    pj_t *modes;    /* availableModes of the session (Shift-Tab cycles them) */
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
} pt_app;

/* A transient hint under the input (fmt takes one %s). */
void pt_app_msg(pt_app *a, uint16_t attr, const char *fmt, const char *arg);
/* A notice line in the transcript. */
void pt_app_notice(pt_app *a, uint16_t attr, const char *text);
/* Sends a request and remembers what its answer is for (params consumed). */
void pt_app_request(pt_app *a, const char *method, pj_t *params, pt_rq kind);

/* session.c */
void pt_session_start(pt_app *a);                 /* initialize (then new/load/list) */
void pt_session_frame(pt_app *a, pj_t *f);        /* one frame from the agent */
void pt_session_load(pt_app *a, const char *id);  /* close the shown session, load id */
void pt_session_answer(pt_app *a, size_t option); /* the open permission prompt */
void pt_session_cancel(pt_app *a);                /* Esc: session/cancel (+ the prompt) */
void pt_session_perm_cancel(pt_app *a); /* answers the open permission prompt "cancelled" */
/* The open free-text question: answer (NULL: decline); cancelled: the question ends
 * unanswered ("cancel"). */
void pt_session_reply_ask(pt_app *a, const char *answer, bool cancelled);
void pt_session_prompt(pt_app *a, const char *text);
void pt_session_next_mode(pt_app *a); /* Shift-Tab: session/set_mode to the next mode */
/* Bounded close of the shown session: 0 closed, -1 not settled in CLOSE_GRACE_MS. */
int pt_session_close(pt_app *a);

#endif
