/*
 * wast.c — the original .wast source of a script, split into its top-level commands,
 * for the runner's text mode (--wat): each module command of the JSON is found by its
 * line, and the module's own text is what the engine's text parser gets.
 *
 * Only the structure is scanned here (parentheses, strings, both comment forms); the
 * module text handed out is a byte range of the file, parsed by pw_wat_to_wasm.
 */
#include "st.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct st_form {
    long line;
    size_t start, end;   /* [start, end) of the command */
    size_t mstart, mend; /* its module form; mend == 0 when it has none */
    long mline;          /* the line where the module form starts */
    bool used;
} st_form;

struct st_wast {
    char *text;
    size_t len;
    st_form *f;
    size_t n;
};

/* Past the string starting at text[i] == '"'. */
static size_t skip_string(const char *t, size_t n, size_t i) {
    for (i++; i < n && t[i] != '"'; i++)
        if (t[i] == '\\') i++;
    return i < n ? i + 1 : n;
}

/* Skips whitespace and comments; counts lines. */
static size_t skip_space(const char *t, size_t n, size_t i, long *line) {
    for (;;) {
        if (i >= n) return n;
        if (t[i] == '\n') {
            (*line)++;
            i++;
        } else if (t[i] == ' ' || t[i] == '\t' || t[i] == '\r') {
            i++;
        } else if (t[i] == ';' && i + 1 < n && t[i + 1] == ';') {
            while (i < n && t[i] != '\n')
                i++;
        } else if (t[i] == '(' && i + 1 < n && t[i + 1] == ';') {
            int depth = 1;
            i += 2;
            while (i < n && depth) {
                if (t[i] == '(' && i + 1 < n && t[i + 1] == ';')
                    depth++, i += 2;
                else if (t[i] == ';' && i + 1 < n && t[i + 1] == ')')
                    depth--, i += 2;
                else {
                    if (t[i] == '\n') (*line)++;
                    i++;
                }
            }
        } else {
            return i;
        }
    }
}

/* Past the balanced form starting at t[i] == '('. */
static size_t skip_form(const char *t, size_t n, size_t i, long *line) {
    int depth = 0;
    while (i < n) {
        i = skip_space(t, n, i, line);
        if (i >= n) break;
        if (t[i] == '(') {
            depth++;
            i++;
        } else if (t[i] == ')') {
            i++;
            if (--depth == 0) return i;
        } else if (t[i] == '"') {
            i = skip_string(t, n, i);
        } else {
            i++;
        }
    }
    return n;
}

static bool starts_module(const char *t, size_t n, size_t i) {
    long line = 0;
    if (i >= n || t[i] != '(') return false;
    i = skip_space(t, n, i + 1, &line);
    while (i + 1 < n && t[i] == '(' && t[i + 1] == '@') /* annotations */
        i = skip_space(t, n, skip_form(t, n, i, &line), &line);
    return i + 6 < n && memcmp(t + i, "module", 6) == 0 && strchr(" \t\r\n();", t[i + 6]);
}

st_wast *st_wast_load(const char *path) {
    FILE *fp = fopen(path, "rb");
    if (!fp) return NULL;
    st_wast *w = calloc(1, sizeof *w);
    size_t cap = 0;
    if (!w) goto fail;
    for (;;) {
        if (w->len + 4096 > cap) {
            cap = cap ? cap * 2 : 65536;
            char *nt = realloc(w->text, cap);
            if (!nt) goto fail;
            w->text = nt;
        }
        size_t got = fread(w->text + w->len, 1, cap - w->len, fp);
        if (!got) break;
        w->len += got;
    }
    fclose(fp);
    fp = NULL;
    const char *t = w->text;
    size_t n = w->len, i = 0, capf = 0;
    long line = 1;
    for (;;) {
        i = skip_space(t, n, i, &line);
        if (i >= n || t[i] != '(') break;
        if (w->n == capf) {
            capf = capf ? capf * 2 : 256;
            st_form *nf = realloc(w->f, capf * sizeof *nf);
            if (!nf) goto fail;
            w->f = nf;
        }
        st_form *f = &w->f[w->n++];
        memset(f, 0, sizeof *f);
        f->line = line;
        f->start = i;
        long l2 = line;
        f->end = skip_form(t, n, i, &line);
        if (starts_module(t, n, i)) {
            f->mstart = i;
            f->mend = f->end;
            f->mline = f->line;
        } else {
            /* the first (module ...) child */
            size_t j = i + 1;
            while (j < f->end) {
                j = skip_space(t, n, j, &l2);
                if (j >= f->end) break;
                if (t[j] == '(') {
                    long at = l2;
                    size_t e = skip_form(t, n, j, &l2);
                    if (starts_module(t, n, j)) {
                        f->mstart = j;
                        f->mend = e;
                        f->mline = at;
                        break;
                    }
                    j = e;
                } else if (t[j] == '"') {
                    j = skip_string(t, n, j);
                } else {
                    j++;
                }
            }
        }
        i = f->end;
    }
    return w;
fail:
    if (fp) fclose(fp);
    st_wast_free(w);
    return NULL;
}

bool st_wast_module(st_wast *w, long line, const char **text, size_t *len) {
    for (size_t i = 0; i < w->n; i++) {
        st_form *f = &w->f[i];
        if (f->mline != line || f->used || !f->mend) continue;
        f->used = true;
        *text = w->text + f->mstart;
        *len = f->mend - f->mstart;
        return true;
    }
    /* A script that is one inline module (fields at the top level, no commands). */
    bool any = false;
    for (size_t i = 0; i < w->n; i++)
        any = any || w->f[i].mend;
    if (!any && w->n && w->f[0].line == line) {
        *text = w->text;
        *len = w->len;
        return true;
    }
    return false;
}

void st_wast_free(st_wast *w) {
    if (!w) return;
    free(w->text);
    free(w->f);
    free(w);
}

st_wast *st_wast_open(const char *json_path) {
    /* <root>/<group>/<name>/<name>.json -> <root>/wast/<name>.wast (core) or
     * <root>/wast/<group>/<name>.wast */
    char buf[4096];
    snprintf(buf, sizeof buf, "%s", json_path);
    char *parts[3] = {NULL, NULL, NULL};
    for (int k = 0; k < 3; k++) {
        char *slash = strrchr(buf, '/');
        if (!slash) return NULL;
        *slash = 0;
        parts[k] = slash + 1;
    }
    /* parts[0] = name.json, parts[1] = name, parts[2] = group; buf = root */
    char path[4096 + 64];
    if (strcmp(parts[2], "core") == 0)
        snprintf(path, sizeof path, "%s/wast/%s.wast", buf, parts[1]);
    else
        snprintf(path, sizeof path, "%s/wast/%s/%s.wast", buf, parts[2], parts[1]);
    return st_wast_load(path);
}
