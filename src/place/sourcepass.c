/*
 * sourcepass.c — placement's source-pass stage: a pre-execution transform of the
 * request's source by a plugin (the interface in sourcepass.h), and its one real
 * plugin, "repl_print".
 *
 * The stage runs after L1 and before the attempt. When the policy names no plugin
 * (disabled), the plugin does not apply to the request's kind, finds nothing to
 * transform (not applicable) or fails, the host runs the unchanged original request;
 * otherwise the derived source runs in its place. Either way there is exactly one
 * execution: the stage is not a promotion (no parent/child attempt, no second
 * decision), and once the derived source has started, whatever happens is its result —
 * it is reported, never replayed with the original. The stage's record (pl_report's
 * source_pass) says which path ran and why.
 *
 * repl_print (Python): every top-level expression statement prints its value as the
 * REPL does — `expr` becomes `__import__('sys').displayhook((expr))` in place, on the
 * same lines, so line numbers, tracebacks and everything else stay the same; a value
 * None prints nothing. Conservative: a statement is rewritten only when it is surely
 * an expression statement (column 0, not a keyword statement or decorator, no
 * assignment, colon or semicolon outside brackets, not a string alone — a docstring);
 * anything unclear is left as it is. An unterminated string or unbalanced brackets
 * fail the transform.
 */
#include "sourcepass.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char WRAP_OPEN[] = "__import__('sys').displayhook((";
static const char WRAP_CLOSE[] = "))";

/* Keywords that begin a statement that is not an expression statement. */
static const char *const STMT_KW[] = {"assert", "async",  "await",  "break", "class",  "continue",
                                      "def",    "del",    "elif",   "else",  "except", "finally",
                                      "for",    "from",   "global", "if",    "import", "nonlocal",
                                      "pass",   "raise",  "return", "try",   "while",  "with",
                                      "yield",  "lambda", "match",  "case",  "type"};

static bool ident_start(unsigned char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c >= 0x80;
}
static bool ident_char(unsigned char c) {
    return ident_start(c) || (c >= '0' && c <= '9');
}

/* One logical statement as the scanner saw it. */
typedef struct stmt {
    size_t start, end; /* first byte; one past the last significant byte */
    bool col0, candidate, only_strings, any;
} stmt;

/* Skips the string literal at s[*i] (a quote); false when it is unterminated. */
static bool skip_string(const char *s, size_t n, size_t *i) {
    char q = s[*i];
    bool triple = *i + 2 < n && s[*i + 1] == q && s[*i + 2] == q;
    *i += triple ? 3 : 1;
    while (*i < n) {
        char c = s[*i];
        if (c == '\\') {
            *i += 2;
            continue;
        }
        if (!triple && c == '\n') return false;
        if (c == q && (!triple || (*i + 2 < n && s[*i + 1] == q && s[*i + 2] == q))) {
            *i += triple ? 3 : 1;
            return true;
        }
        (*i)++;
    }
    return false;
}

static bool is_stmt_keyword(const char *w, size_t n) {
    for (size_t k = 0; k < sizeof STMT_KW / sizeof *STMT_KW; k++)
        if (strlen(STMT_KW[k]) == n && memcmp(STMT_KW[k], w, n) == 0) return true;
    return false;
}

typedef struct edits {
    size_t *at; /* pairs: open position, close position */
    size_t n, cap;
} edits;

static bool add_edit(edits *e, size_t open, size_t close) {
    if (e->n + 2 > e->cap) { /* cap is even (32, doubled): one growth makes room for two */
        size_t *na = pb_grow(e->at, &e->cap, sizeof *na, 32);
        if (!na) return false;
        e->at = na;
    }
    e->at[e->n++] = open;
    e->at[e->n++] = close;
    return true;
}

static bool finish_stmt(stmt *st, edits *e) {
    bool ok = true;
    if (st->any && st->col0 && st->candidate && !st->only_strings)
        ok = add_edit(e, st->start, st->end);
    *st = (stmt){0};
    return ok;
}

pl__sp_status pl__sp_repl_print(const char *s, size_t n, pb_buf *out, char *why, size_t why_len) {
    edits e = {0};
    stmt st = {0};
    int depth = 0;
    size_t i = 0;
    bool line_start = true; /* at the start of a physical line outside brackets */
    size_t line_indent = 0;
    pl__sp_status rc = PL__SP_NOT_APPLICABLE;
    if (n >= 3 && memcmp(s, "\xEF\xBB\xBF", 3) == 0) i = 3;
    while (i < n) {
        unsigned char c = (unsigned char)s[i];
        if (line_start && depth == 0) {
            line_indent = 0;
            while (i < n && (s[i] == ' ' || s[i] == '\t' || s[i] == '\f')) {
                i++;
                line_indent++;
            }
            line_start = false;
            continue;
        }
        if (c == '#') {
            while (i < n && s[i] != '\n')
                i++;
            continue;
        }
        if (c == '\\' && i + 1 < n && (s[i + 1] == '\n' || s[i + 1] == '\r')) {
            i += s[i + 1] == '\r' && i + 2 < n && s[i + 2] == '\n' ? 3 : 2;
            continue;
        }
        if (c == '\n') {
            i++;
            if (depth == 0) {
                if (!finish_stmt(&st, &e)) goto nomem;
                line_start = true;
            }
            continue;
        }
        if (c == ' ' || c == '\t' || c == '\r' || c == '\f') {
            i++;
            continue;
        }
        /* a significant token */
        size_t tok = i;
        bool first = !st.any;
        if (first) {
            st = (stmt){.start = tok,
                        .col0 = line_indent == 0,
                        .candidate = true,
                        .only_strings = true,
                        .any = true};
        }
        if (c == '"' || c == '\'' ||
            (ident_start(c) && i + 1 < n && (s[i + 1] == '"' || s[i + 1] == '\'') &&
             strchr("rRbBfFuU", (char)c)) ||
            (ident_start(c) && i + 2 < n && (s[i + 2] == '"' || s[i + 2] == '\'') &&
             strchr("rRbBfFuU", (char)c) && strchr("rRbBfFuU", s[i + 1]))) {
            while (s[i] != '"' && s[i] != '\'')
                i++;
            if (!skip_string(s, n, &i)) {
                snprintf(why, why_len, "an unterminated string literal");
                rc = PL__SP_FAILED;
                goto fail;
            }
            st.end = i;
            continue;
        }
        st.only_strings = false;
        if (ident_start(c)) {
            while (i < n && ident_char((unsigned char)s[i]))
                i++;
            if (first && is_stmt_keyword(s + tok, i - tok)) st.candidate = false;
            st.end = i;
            continue;
        }
        i++;
        st.end = i;
        if (first && c == '@') st.candidate = false; /* a decorator */
        switch (c) {
        case '(':
        case '[':
        case '{': depth++; break;
        case ')':
        case ']':
        case '}':
            if (--depth < 0) {
                snprintf(why, why_len, "an unbalanced closing bracket");
                rc = PL__SP_FAILED;
                goto fail;
            }
            break;
        case ':':
            if (depth == 0) st.candidate = false; /* compound, annotation, lambda */
            break;
        case ';':
            if (depth == 0) st.candidate = false; /* several statements: left alone */
            break;
        case '=':
            if (i < n && s[i] == '=') {
                i++; /* "==": a comparison, one token */
                st.end = i;
            } else if (depth == 0) {
                /* != <= >= compare; <<= >>= += -= ... := and = assign */
                bool shift = tok >= 2 && (s[tok - 1] == '<' || s[tok - 1] == '>') &&
                             s[tok - 2] == s[tok - 1];
                bool cmp = tok >= 1 && s[tok - 1] && strchr("!<>", s[tok - 1]) && !shift;
                if (!cmp) st.candidate = false;
            }
            break;
        default: break;
        }
    }
    if (depth != 0) {
        snprintf(why, why_len, "unbalanced brackets at the end of the source");
        rc = PL__SP_FAILED;
        goto fail;
    }
    if (!finish_stmt(&st, &e)) goto nomem;
    if (e.n == 0) {
        snprintf(why, why_len, "no top-level expression statement");
        free(e.at);
        return PL__SP_NOT_APPLICABLE;
    }
    size_t at = 0;
    for (size_t k = 0; k < e.n; k += 2) {
        if (!pb_buf_put(out, s + at, e.at[k] - at) || !pb_buf_puts(out, WRAP_OPEN) ||
            !pb_buf_put(out, s + e.at[k], e.at[k + 1] - e.at[k]) || !pb_buf_puts(out, WRAP_CLOSE))
            goto nomem;
        at = e.at[k + 1];
    }
    if (!pb_buf_put(out, s + at, n - at)) goto nomem;
    free(e.at);
    why[0] = 0;
    return PL__SP_DERIVED;
nomem:
    snprintf(why, why_len, "out of memory");
    rc = PL__SP_FAILED;
fail:
    free(e.at);
    out->len = 0;
    return rc;
}

static bool repl_applies(const pl_request *r) {
    return r->kind == PL_PROGRAM_PYTHON;
}

static const pl__sp_plugin PLUGINS[] = {
    {"repl_print", repl_applies, pl__sp_repl_print},
};

const pl__sp_plugin *pl__sp_find(const char *name) {
    for (size_t k = 0; name && k < sizeof PLUGINS / sizeof *PLUGINS; k++)
        if (strcmp(PLUGINS[k].name, name) == 0) return &PLUGINS[k];
    return NULL;
}

/* The record: {"stage":"source_pass","plugin":...,"path":...,"reason":...}; the
 * reason is plain ASCII from this file (no escaping needed). */
static void record(char *rec, size_t n, const char *plugin, const char *path, const char *reason) {
    if (!rec || !n) return;
    char p[48];
    snprintf(p, sizeof p, "%s", plugin ? plugin : "");
    for (char *c = p; *c; c++)
        if (!ident_char((unsigned char)*c)) *c = '_';
    snprintf(rec, n,
             "{\"stage\":\"source_pass\",\"plugin\":%s%s%s,\"path\":\"%s\",\"reason\":\"%s\"}",
             plugin ? "\"" : "", plugin ? p : "null", plugin ? "\"" : "", path, reason);
}

char *pl__sourcepass(const char *plugin, const pl_request *r, char *rec, size_t rec_len) {
    if (!plugin) {
        record(rec, rec_len, NULL, "original", "disabled");
        return NULL;
    }
    const pl__sp_plugin *p = pl__sp_find(plugin);
    if (!p) {
        record(rec, rec_len, plugin, "original", "unknown plugin");
        return NULL;
    }
    if (!p->applies(r) || !r->program) {
        record(rec, rec_len, plugin, "original", "not applicable: another program kind");
        return NULL;
    }
    pb_buf out = {0};
    char why[120] = "";
    pl__sp_status st = p->transform(r->program, strlen(r->program), &out, why, sizeof why);
    if (st != PL__SP_DERIVED || !pb_buf_putc(&out, 0)) {
        char reason[160];
        snprintf(reason, sizeof reason, "%s: %s",
                 st == PL__SP_NOT_APPLICABLE ? "not applicable" : "transform failed",
                 why[0] ? why : "out of memory");
        for (char *c = reason; *c; c++)
            if (*c == '"' || *c == '\\' || (unsigned char)*c < 0x20) *c = ' ';
        record(rec, rec_len, plugin, "original", reason);
        pb_buf_free(&out);
        return NULL;
    }
    record(rec, rec_len, plugin, "derived", "transformed");
    size_t len;
    return pb_buf_take(&out, &len);
}
