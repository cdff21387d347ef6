/*
 * pyscan.c — placement's static reader of Python sources: which native features a
 * script needs, from its imports (see pyscan.h). Part of L1's "declared
 * requirements" step for {"python": ...} requests: a script that imports subprocess,
 * socket, ctypes, multiprocessing or a known native-extension package (numpy,
 * pandas...) needs the native sandbox (Debian's python3); anything else runs in the
 * room, where a failing import is an ordinary ImportError, never a promotion.
 *
 * The reader is a small tokenizer, not a parser: it walks the source once, skips
 * comments and string literals (all prefixes, triple quotes, escapes), joins
 * bracketed and backslash-continued lines into logical statements, and looks at the
 * first words of each statement (and at `;`-separated ones). Dynamic imports are seen
 * only with a literal name. Invariants: never reads past len; no allocation.
 */
#include "pyscan.h"

#include "peri/place.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

typedef struct rule {
    const char *module; /* a top-level module (or "a.b" for a dotted one) */
    uint32_t req;
} rule;

/* Modules whose use needs the native sandbox. Top-level names match "x" and "x.*". */
static const rule RULES[] = {
    /* processes */
    {"subprocess", PL_REQ_SUBPROCESS},
    {"multiprocessing", PL_REQ_SUBPROCESS},
    {"pty", PL_REQ_SUBPROCESS},
    {"concurrent.futures.process", PL_REQ_SUBPROCESS},
    /* network */
    {"socket", PL_REQ_NETWORK},
    {"ssl", PL_REQ_NETWORK},
    {"socketserver", PL_REQ_NETWORK},
    {"http.client", PL_REQ_NETWORK},
    {"http.server", PL_REQ_NETWORK},
    {"urllib.request", PL_REQ_NETWORK},
    {"ftplib", PL_REQ_NETWORK},
    {"smtplib", PL_REQ_NETWORK},
    {"poplib", PL_REQ_NETWORK},
    {"imaplib", PL_REQ_NETWORK},
    {"requests", PL_REQ_NETWORK},
    {"httpx", PL_REQ_NETWORK},
    {"aiohttp", PL_REQ_NETWORK},
    {"urllib3", PL_REQ_NETWORK},
    /* threads (the room's CPython has none) */
    {"threading", PL_REQ_NATIVE_THREADS},
    {"_thread", PL_REQ_NATIVE_THREADS},
    {"concurrent.futures", PL_REQ_NATIVE_THREADS},
    /* native code: foreign functions, and stdlib modules the WASI build lacks */
    {"ctypes", PL_REQ_NATIVE_EXTENSION},
    {"cffi", PL_REQ_NATIVE_EXTENSION},
    {"sqlite3", PL_REQ_NATIVE_EXTENSION},
    {"bz2", PL_REQ_NATIVE_EXTENSION},
    {"lzma", PL_REQ_NATIVE_EXTENSION},
    {"readline", PL_REQ_NATIVE_EXTENSION},
    {"curses", PL_REQ_NATIVE_EXTENSION},
    {"tkinter", PL_REQ_NATIVE_EXTENSION},
    {"mmap", PL_REQ_POSIX},
    {"fcntl", PL_REQ_POSIX},
    {"termios", PL_REQ_POSIX},
    {"resource", PL_REQ_POSIX},
    {"pwd", PL_REQ_POSIX},
    {"grp", PL_REQ_POSIX},
    {"signal", PL_REQ_POSIX},
    /* well-known packages built as native extensions */
    {"numpy", PL_REQ_NATIVE_EXTENSION},
    {"pandas", PL_REQ_NATIVE_EXTENSION},
    {"scipy", PL_REQ_NATIVE_EXTENSION},
    {"matplotlib", PL_REQ_NATIVE_EXTENSION},
    {"sklearn", PL_REQ_NATIVE_EXTENSION},
    {"torch", PL_REQ_NATIVE_EXTENSION},
    {"tensorflow", PL_REQ_NATIVE_EXTENSION},
    {"PIL", PL_REQ_NATIVE_EXTENSION},
    {"cv2", PL_REQ_NATIVE_EXTENSION},
    {"lxml", PL_REQ_NATIVE_EXTENSION},
    {"psycopg2", PL_REQ_NATIVE_EXTENSION},
    {"yaml", PL_REQ_NATIVE_EXTENSION},
    {"cryptography", PL_REQ_NATIVE_EXTENSION},
    {"numba", PL_REQ_NATIVE_EXTENSION},
    {"pyarrow", PL_REQ_NATIVE_EXTENSION},
    {"polars", PL_REQ_NATIVE_EXTENSION},
    {"shapely", PL_REQ_NATIVE_EXTENSION},
    {"regex", PL_REQ_NATIVE_EXTENSION},
    {"ujson", PL_REQ_NATIVE_EXTENSION},
    {"orjson", PL_REQ_NATIVE_EXTENSION},
    {"msgpack", PL_REQ_NATIVE_EXTENSION},
    {"zmq", PL_REQ_NATIVE_EXTENSION},
    {"grpc", PL_REQ_NATIVE_EXTENSION},
    {"h5py", PL_REQ_NATIVE_EXTENSION},
    {"skimage", PL_REQ_NATIVE_EXTENSION},
};

/* os's process calls: os.NAME( or `from os import NAME`. */
static const char *const OS_PROC[] = {
    "system",  "popen",    "fork",        "forkpty",      "execv",  "execve",
    "execvp",  "execvpe",  "execl",       "execle",       "execlp", "execlpe",
    "spawnv",  "spawnve",  "spawnvp",     "spawnvpe",     "spawnl", "spawnle",
    "spawnlp", "spawnlpe", "posix_spawn", "posix_spawnp", "kill",   "killpg"};

typedef struct scan {
    const char *s;
    size_t n, i;
    unsigned line; /* 1-based line of s[i] */
    pl_pyscan *out;
} scan;

static bool ident_start(unsigned char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c >= 0x80;
}
static bool ident_char(unsigned char c) {
    return ident_start(c) || (c >= '0' && c <= '9');
}

static void note(scan *sc, uint32_t req, unsigned line, const char *what, const char *name,
                 size_t name_len) {
    if (!req) return;
    if (!sc->out->requirements)
        snprintf(sc->out->why, sizeof sc->out->why, "line %u: %s %.*s", line, what,
                 (int)(name_len > 100 ? 100 : name_len), name);
    sc->out->requirements |= req;
}

/* The requirement of a dotted module name: the first rule that is the name or one of
 * its dotted prefixes (most specific first: rules list dotted names before their
 * parents where it matters). */
static uint32_t module_req(const char *name, size_t len) {
    uint32_t best = 0;
    size_t best_len = 0;
    for (size_t r = 0; r < sizeof RULES / sizeof *RULES; r++) {
        size_t k = strlen(RULES[r].module);
        if (k > len || memcmp(name, RULES[r].module, k) != 0) continue;
        if (k < len && name[k] != '.') continue;
        if (k > best_len) {
            best = RULES[r].req;
            best_len = k;
        }
    }
    return best;
}

static bool is_os_proc(const char *name, size_t len) {
    for (size_t k = 0; k < sizeof OS_PROC / sizeof *OS_PROC; k++)
        if (strlen(OS_PROC[k]) == len && memcmp(OS_PROC[k], name, len) == 0) return true;
    return false;
}

/* ------------------------------------------------------------ the logical line */

/* A logical statement with comments removed and every string literal replaced by a
 * single placeholder token; literals' first 100 bytes are kept for dynamic imports. */
enum { T_NAME = 1, T_DOT, T_COMMA, T_LPAREN, T_RPAREN, T_STR, T_SEMI, T_STAR, T_OTHER, T_EOL };

typedef struct tok {
    int kind;
    const char *p; /* T_NAME: the name; T_STR: the literal's body */
    size_t len;
    unsigned line;
} tok;

/* Skips a string literal starting at s[i] (the quote); sets the body. */
static void skip_string(scan *sc, tok *t) {
    const char *s = sc->s;
    char q = s[sc->i];
    bool triple = sc->i + 2 < sc->n && s[sc->i + 1] == q && s[sc->i + 2] == q;
    sc->i += triple ? 3 : 1;
    size_t start = sc->i;
    while (sc->i < sc->n) {
        char c = s[sc->i];
        if (c == '\\' && sc->i + 1 < sc->n) {
            if (s[sc->i + 1] == '\n') sc->line++;
            sc->i += 2;
            continue;
        }
        if (c == '\n') {
            if (!triple) break; /* an unterminated literal ends at the line */
            sc->line++;
        }
        if (c == q && (!triple || (sc->i + 2 < sc->n && s[sc->i + 1] == q && s[sc->i + 2] == q))) {
            t->p = s + start;
            t->len = sc->i - start;
            sc->i += triple ? 3 : 1;
            return;
        }
        sc->i++;
    }
    t->p = s + start;
    t->len = sc->i - start;
}

/* The next token; *depth tracks brackets (newlines inside brackets do not end the
 * statement). */
static tok next(scan *sc, int *depth) {
    const char *s = sc->s;
    for (;;) {
        if (sc->i >= sc->n) return (tok){T_EOL, NULL, 0, sc->line};
        unsigned char c = (unsigned char)s[sc->i];
        if (c == '#') {
            while (sc->i < sc->n && s[sc->i] != '\n')
                sc->i++;
            continue;
        }
        if (c == '\\' && sc->i + 1 < sc->n && s[sc->i + 1] == '\n') {
            sc->i += 2;
            sc->line++;
            continue;
        }
        if (c == '\n') {
            sc->i++;
            sc->line++;
            if (*depth > 0) continue;
            return (tok){T_EOL, NULL, 0, sc->line - 1};
        }
        if (c == ' ' || c == '\t' || c == '\r' || c == '\f') {
            sc->i++;
            continue;
        }
        tok t = {T_OTHER, s + sc->i, 1, sc->line};
        if (c == '"' || c == '\'') {
            t.kind = T_STR;
            skip_string(sc, &t);
            return t;
        }
        if (ident_start(c)) {
            size_t st = sc->i;
            while (sc->i < sc->n && ident_char((unsigned char)s[sc->i]))
                sc->i++;
            /* a string prefix (r, b, f, u, rb, br, fr, rf...) directly before a quote */
            if (sc->i < sc->n && (s[sc->i] == '"' || s[sc->i] == '\'') && sc->i - st <= 2) {
                bool prefix = true;
                for (size_t k = st; k < sc->i; k++)
                    if (!strchr("rRbBfFuU", s[k])) prefix = false;
                if (prefix) {
                    t.kind = T_STR;
                    skip_string(sc, &t);
                    return t;
                }
            }
            t.kind = T_NAME;
            t.p = s + st;
            t.len = sc->i - st;
            return t;
        }
        sc->i++;
        switch (c) {
        case '.': t.kind = T_DOT; break;
        case ',': t.kind = T_COMMA; break;
        case ';': t.kind = *depth > 0 ? T_OTHER : T_SEMI; break;
        case '*': t.kind = T_STAR; break;
        case '(':
        case '[':
        case '{':
            (*depth)++;
            t.kind = c == '(' ? T_LPAREN : T_OTHER;
            break;
        case ')':
        case ']':
        case '}':
            if (*depth > 0) (*depth)--;
            t.kind = c == ')' ? T_RPAREN : T_OTHER;
            break;
        default: break;
        }
        return t;
    }
}

static bool name_is(const tok *t, const char *w) {
    return t->kind == T_NAME && t->len == strlen(w) && memcmp(t->p, w, t->len) == 0;
}

#define MAXTOK 512 /* tokens looked at per statement; the rest are skipped */

/* A dotted name starting at toks[*k]; written into buf (NUL-terminated). */
static size_t dotted(const tok *toks, size_t nt, size_t *k, char *buf, size_t cap) {
    size_t len = 0;
    while (*k < nt && toks[*k].kind == T_NAME) {
        if (len + toks[*k].len + 1 >= cap) return 0;
        memcpy(buf + len, toks[*k].p, toks[*k].len);
        len += toks[*k].len;
        (*k)++;
        if (*k < nt && toks[*k].kind == T_DOT && *k + 1 < nt && toks[*k + 1].kind == T_NAME) {
            buf[len++] = '.';
            (*k)++;
        } else {
            break;
        }
    }
    buf[len] = 0;
    return len;
}

/* One simple statement toks[0..nt). */
static void statement(scan *sc, const tok *toks, size_t nt) {
    char name[256];
    size_t k = 0;
    if (nt && name_is(&toks[0], "import")) {
        k = 1;
        while (k < nt) {
            unsigned line = toks[k].line;
            size_t len = dotted(toks, nt, &k, name, sizeof name);
            if (len) note(sc, module_req(name, len), line, "import", name, len);
            while (k < nt && toks[k].kind != T_COMMA)
                k++; /* "as alias" */
            k++;
        }
    } else if (nt && name_is(&toks[0], "from")) {
        k = 1;
        unsigned line = toks[0].line;
        if (k < nt && toks[k].kind == T_DOT) return; /* a relative import: the script's own */
        size_t len = dotted(toks, nt, &k, name, sizeof name);
        if (!len) return;
        note(sc, module_req(name, len), line, "from", name, len);
        if (k < nt && name_is(&toks[k], "import")) {
            bool os = len == 2 && memcmp(name, "os", 2) == 0;
            for (k++; k < nt; k++) {
                if (toks[k].kind != T_NAME || name_is(&toks[k], "as")) continue;
                if (k > 0 && name_is(&toks[k - 1], "as")) continue;
                if (os && is_os_proc(toks[k].p, toks[k].len)) {
                    note(sc, PL_REQ_SUBPROCESS, line, "from os import", toks[k].p, toks[k].len);
                } else if (len + 1 + toks[k].len < sizeof name) {
                    /* from concurrent.futures import ProcessPoolExecutor, from http
                     * import client: the submodule's own rule */
                    char sub[256];
                    int sl =
                        snprintf(sub, sizeof sub, "%s.%.*s", name, (int)toks[k].len, toks[k].p);
                    uint32_t r = module_req(sub, (size_t)sl);
                    if (r && r != module_req(name, len))
                        note(sc, r, line, "from-import", sub, (size_t)sl);
                }
            }
        }
    }
    /* Anywhere in the statement: os.system(...), __import__("x"),
     * importlib.import_module("x"), ProcessPoolExecutor. */
    for (k = 0; k < nt; k++) {
        if (k + 3 < nt && name_is(&toks[k], "os") && toks[k + 1].kind == T_DOT &&
            toks[k + 2].kind == T_NAME && is_os_proc(toks[k + 2].p, toks[k + 2].len) &&
            toks[k + 3].kind == T_LPAREN)
            note(sc, PL_REQ_SUBPROCESS, toks[k].line, "os.", toks[k + 2].p, toks[k + 2].len);
        if (name_is(&toks[k], "ProcessPoolExecutor"))
            note(sc, PL_REQ_SUBPROCESS, toks[k].line, "uses", toks[k].p, toks[k].len);
        bool dyn = name_is(&toks[k], "__import__") ||
                   (name_is(&toks[k], "import_module") && k >= 2 && toks[k - 1].kind == T_DOT &&
                    name_is(&toks[k - 2], "importlib"));
        if (dyn && k + 2 < nt && toks[k + 1].kind == T_LPAREN && toks[k + 2].kind == T_STR) {
            const tok *s = &toks[k + 2];
            note(sc, module_req(s->p, s->len), s->line, "dynamic import", s->p, s->len);
        }
    }
}

void pl__pyscan(const char *src, size_t len, pl_pyscan *out) {
    memset(out, 0, sizeof *out);
    if (!src) return;
    scan sc = {src, len, 0, 1, out};
    /* A UTF-8 byte order mark is not part of the first statement. */
    if (len >= 3 && memcmp(src, "\xEF\xBB\xBF", 3) == 0) sc.i = 3;
    tok toks[MAXTOK];
    size_t nt = 0;
    int depth = 0;
    for (;;) {
        tok t = next(&sc, &depth);
        bool end = t.kind == T_EOL || t.kind == T_SEMI;
        /* `if x: import y` and `try: import y`: a colon at depth 0 starts a new
         * simple statement on the same line. */
        bool colon = t.kind == T_OTHER && depth == 0 && t.len == 1 && t.p[0] == ':';
        if (end || colon) {
            statement(&sc, toks, nt);
            nt = 0;
            if (t.kind == T_EOL && sc.i >= sc.n) break;
            continue;
        }
        if (nt < MAXTOK) toks[nt++] = t;
    }
}
