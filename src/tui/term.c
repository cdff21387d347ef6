/*
 * term.c — the terminal: raw mode, the alternate screen, bracketed paste, the size,
 * and the guarantee that the terminal is restored on every exit path: normal exit
 * (atexit), terminating signals (TERM, HUP, INT, QUIT: the loop is told and quits
 * cleanly), and crashes (SEGV, BUS, FPE, ILL, ABRT: restore, then re-raise with the
 * default action so the exit status and core dump are the crash's).
 *
 * The one piece of process-wide state in the TUI lives here: the saved termios and the
 * signal pipe, because a signal handler can reach nothing else. It is written before
 * the handlers are installed and only read by them (async-signal-safe calls only).
 */
#include "tui/tui.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

static struct termios term_saved;
static volatile sig_atomic_t term_active;
static volatile sig_atomic_t term_quit;
static int term_pipe[2] = {-1, -1};

/* alternate screen, bracketed paste */
static const char ENTER_SEQ[] = "\x1b[?1049h\x1b[?2004h\x1b[H\x1b[2J";
/* attributes off, bracketed paste off, cursor visible, main screen */
static const char LEAVE_SEQ[] = "\x1b[0m\x1b[?2004l\x1b[?25h\x1b[?1049l";

void pt_term_restore(void) {
    if (!term_active) return;
    term_active = 0;
    ssize_t w = write(STDOUT_FILENO, LEAVE_SEQ, sizeof LEAVE_SEQ - 1);
    (void)w;
    tcsetattr(STDIN_FILENO, TCSAFLUSH, &term_saved);
}

static void on_winch(int sig) {
    (void)sig;
    int e = errno;
    if (term_pipe[1] >= 0) {
        ssize_t w = write(term_pipe[1], "w", 1);
        (void)w;
    }
    errno = e;
}

static void on_quit(int sig) {
    int e = errno;
    term_quit = sig;
    if (term_pipe[1] >= 0) {
        ssize_t w = write(term_pipe[1], "q", 1);
        (void)w;
    }
    errno = e;
}

static void on_crash(int sig) {
    pt_term_restore();
    signal(sig, SIG_DFL);
    raise(sig);
}

int pt_term_quit_signal(void) {
    return term_quit;
}

int pt_term_write(const char *s, size_t n) {
    while (n) {
        ssize_t w = write(STDOUT_FILENO, s, n);
        if (w < 0) {
            if (errno == EINTR || errno == EAGAIN) continue;
            return -1;
        }
        s += w;
        n -= (size_t)w;
    }
    return 0;
}

void pt_term_size(int *rows, int *cols) {
    struct winsize ws;
    if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_row > 0 && ws.ws_col > 0) {
        *rows = ws.ws_row;
        *cols = ws.ws_col;
    } else {
        *rows = 24;
        *cols = 80;
    }
}

int pt_term_enter(int *sig_fd) {
    if (tcgetattr(STDIN_FILENO, &term_saved) != 0) return -1;
    if (term_pipe[0] < 0 && pipe(term_pipe) != 0) return -1;
    for (int i = 0; i < 2; i++) {
        fcntl(term_pipe[i], F_SETFL, fcntl(term_pipe[i], F_GETFL) | O_NONBLOCK);
        fcntl(term_pipe[i], F_SETFD, FD_CLOEXEC);
    }
    *sig_fd = term_pipe[0];
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sigemptyset(&sa.sa_mask);
    sa.sa_handler = on_winch;
    sa.sa_flags = SA_RESTART;
    sigaction(SIGWINCH, &sa, NULL);
    sa.sa_handler = on_quit;
    int quit[] = {SIGTERM, SIGHUP, SIGINT, SIGQUIT};
    for (size_t i = 0; i < sizeof quit / sizeof quit[0]; i++)
        sigaction(quit[i], &sa, NULL);
    sa.sa_handler = on_crash;
    sa.sa_flags = SA_RESETHAND;
    int crash[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT};
    for (size_t i = 0; i < sizeof crash / sizeof crash[0]; i++)
        sigaction(crash[i], &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
    struct termios raw = term_saved;
    raw.c_iflag &= ~(tcflag_t)(BRKINT | ICRNL | INPCK | ISTRIP | IXON);
    raw.c_oflag &= ~(tcflag_t)OPOST;
    raw.c_cflag |= CS8;
    raw.c_lflag &= ~(tcflag_t)(ECHO | ICANON | IEXTEN | ISIG);
    raw.c_cc[VMIN] = 1;
    raw.c_cc[VTIME] = 0;
    term_active = 1;
    atexit(pt_term_restore);
    if (tcsetattr(STDIN_FILENO, TCSAFLUSH, &raw) != 0) {
        term_active = 0;
        return -1;
    }
    return pt_term_write(ENTER_SEQ, sizeof ENTER_SEQ - 1);
}
