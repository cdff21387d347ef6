/*
 * project.c — the project's own files the agent reads or writes: guides, skills, user
 * slash commands, all confined beneath the session's cwd. (The project's permission
 * allow-list and MCP servers are trust-gated: trust.c.)
 *
 * Invariants: a project file is read through the tools layer's ptl_read_beneath
 * (resolved once beneath the cwd's descriptor: no "..", no symlink leading out, no magic
 * link, O_NONBLOCK so a FIFO cannot block, regular files only, no hard links, bounded);
 * the directories listed here (commands) are opened component by component with
 * openat(O_NOFOLLOW). Nothing here writes inside the project or keeps global state.
 */
#include "peri/agent.h"
#include "peri/tools.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include "peri/json.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAX_COMPONENTS 16

/* A plain name: no '/', not "." or "..", not empty. */
static bool plain_name(const char *s, size_t n) {
    if (n == 0 || (n == 1 && s[0] == '.') || (n == 2 && s[0] == '.' && s[1] == '.')) return false;
    return memchr(s, '/', n) == NULL && memchr(s, '\0', n) == NULL;
}

/* Opens the directory holding the last component of rel beneath root; *last points at
 * that component. Returns the directory fd or -1. */
static int open_parent(const char *root, const char *rel, const char **last) {
    int fd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return -1;
    const char *p = rel;
    for (int depth = 0;; depth++) {
        const char *slash = strchr(p, '/');
        if (!slash) {
            if (!plain_name(p, strlen(p))) break;
            *last = p;
            return fd;
        }
        size_t n = (size_t)(slash - p);
        char comp[256];
        if (depth >= MAX_COMPONENTS || n >= sizeof comp || !plain_name(p, n)) break;
        memcpy(comp, p, n);
        comp[n] = '\0';
        int next = openat(fd, comp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        close(fd);
        if (next < 0) return -1;
        fd = next;
        p = slash + 1;
    }
    close(fd);
    return -1;
}

char *pag_read_beneath(const char *root, const char *rel, size_t max, size_t *len) {
    if (!root || !rel || rel[0] == '/') return NULL;
    /* The tools layer's confined reader: resolved beneath root (no "..", no symlink out
     * of it, no magic link), O_NONBLOCK, regular files only, no hard links, bounded. */
    char *data = NULL;
    size_t n = 0;
    if (ptl_read_beneath(root, rel, max, true, &data, &n) != PTL_F_OK) return NULL;
    if (len) *len = n;
    return data;
}

/* ---------------------------------------------------------------- front matter */

const char *pag_front_matter(const char *text, const char *key, char **value) {
    *value = NULL;
    if (strncmp(text, "---", 3) != 0 || (text[3] != '\n' && text[3] != '\r')) return text;
    const char *p = strchr(text, '\n') + 1;
    size_t klen = strlen(key);
    while (*p) {
        const char *eol = strchr(p, '\n');
        size_t n = eol ? (size_t)(eol - p) : strlen(p);
        if (n >= 3 && strncmp(p, "---", 3) == 0) return eol ? eol + 1 : p + n;
        if (!*value && n > klen && strncmp(p, key, klen) == 0 && p[klen] == ':') {
            const char *v = p + klen + 1;
            const char *e = p + n;
            while (v < e && (*v == ' ' || *v == '\t'))
                v++;
            while (e > v && (e[-1] == ' ' || e[-1] == '\r' || e[-1] == '\t'))
                e--;
            if (e - v >= 2 && (*v == '"' || *v == '\'') && e[-1] == *v) {
                v++;
                e--;
            }
            *value = strndup(v, (size_t)(e - v));
        }
        if (!eol) break;
        p = eol + 1;
    }
    return text; /* unterminated front matter: treat the whole text as body */
}

/* ---------------------------------------------------------------- skills */

char *pag_skill_body(const char *cwd, const char *name) {
    if (!name || !plain_name(name, strlen(name)) || strlen(name) > 200) return NULL;
    char rel[300];
    snprintf(rel, sizeof rel, ".peri/skills/%s/SKILL.md", name);
    char *txt = pag_read_beneath(cwd, rel, 256u << 10, NULL);
    if (!txt) return NULL;
    char *dummy = NULL;
    const char *body = pag_front_matter(txt, "name", &dummy);
    free(dummy);
    char *out = strdup(body);
    free(txt);
    return out;
}

/* ---------------------------------------------------------------- user commands */

static int cmp_names(const void *a, const void *b) {
    return strcmp(((const pag_user_command *)a)->name, ((const pag_user_command *)b)->name);
}

/* Adds the *.md commands of <root>/<dir> not already present. */
static int load_dir(const char *root, const char *dir, pag_user_command **out, size_t *n,
                    size_t *cap) {
    const char *last = NULL;
    char probe[128];
    snprintf(probe, sizeof probe, "%s/x", dir);
    int pfd = open_parent(root, probe, &last);
    if (pfd < 0) return 0;
    DIR *d = fdopendir(pfd);
    if (!d) {
        close(pfd);
        return 0;
    }
    int rc = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL && *n < 200) {
        size_t len = strlen(e->d_name);
        if (len < 4 || len > 64 || strcmp(e->d_name + len - 3, ".md") != 0) continue;
        char name[64];
        memcpy(name, e->d_name, len - 3);
        name[len - 3] = '\0';
        bool ok = name[0] != '.';
        for (size_t i = 0; name[i]; i++)
            if (!(name[i] == '-' || name[i] == '_' || name[i] == ':' ||
                  (name[i] >= 'a' && name[i] <= 'z') || (name[i] >= 'A' && name[i] <= 'Z') ||
                  (name[i] >= '0' && name[i] <= '9')))
                ok = false;
        for (size_t i = 0; ok && i < *n; i++)
            if (!strcmp((*out)[i].name, name)) ok = false;
        if (!ok) continue;
        char rel[256];
        int w = snprintf(rel, sizeof rel, "%s/%s", dir, e->d_name);
        if (w < 0 || (size_t)w >= sizeof rel) continue; /* a name that does not fit is skipped */
        char *txt = pag_read_beneath(root, rel, 64u << 10, NULL);
        if (!txt) continue;
        if (*n == *cap) {
            size_t nc = *cap ? *cap * 2 : 8;
            pag_user_command *nb = realloc(*out, nc * sizeof *nb);
            if (!nb) {
                free(txt);
                rc = -1;
                break;
            }
            *out = nb;
            *cap = nc;
        }
        pag_user_command *c = &(*out)[*n];
        memset(c, 0, sizeof *c);
        const char *body = pag_front_matter(txt, "description", &c->description);
        char *hint = NULL;
        pag_front_matter(txt, "argument-hint", &hint);
        c->hint = hint;
        c->name = strdup(name);
        c->body = strdup(body);
        if (!c->description) {
            const char *b = body;
            while (*b == '\n' || *b == '#' || *b == ' ')
                b++;
            c->description = strndup(b, strcspn(b, "\n") > 100 ? 100 : strcspn(b, "\n"));
        }
        free(txt);
        if (!c->name || !c->body || !c->description) {
            free(c->name);
            free(c->body);
            free(c->description);
            free(c->hint);
            rc = -1;
            break;
        }
        (*n)++;
    }
    closedir(d);
    return rc;
}

int pag_user_commands_load(const char *cwd, const char *home, pag_user_command **out, size_t *n) {
    size_t cap = 0;
    *out = NULL;
    *n = 0;
    int rc = cwd ? load_dir(cwd, ".peri/commands", out, n, &cap) : 0;
    if (rc == 0 && home && *home) rc = load_dir(home, ".peri/commands", out, n, &cap);
    if (rc != 0) {
        pag_user_commands_free(*out, *n);
        *out = NULL;
        *n = 0;
        return -1;
    }
    if (*n > 1) qsort(*out, *n, sizeof **out, cmp_names);
    return 0;
}

void pag_user_commands_free(pag_user_command *c, size_t n) {
    for (size_t i = 0; i < n; i++) {
        free(c[i].name);
        free(c[i].description);
        free(c[i].hint);
        free(c[i].body);
    }
    free(c);
}

char *pag_expand_arguments(const char *body, const char *args) {
    static const char key[] = "$ARGUMENTS";
    const size_t klen = sizeof key - 1;
    if (!args) args = "";
    size_t count = 0;
    for (const char *p = strstr(body, key); p; p = strstr(p + klen, key))
        count++;
    size_t alen = strlen(args);
    size_t n = strlen(body) + count * alen + 1;
    char *out = malloc(n);
    if (!out) return NULL;
    char *w = out;
    const char *p = body;
    for (const char *q = strstr(p, key); q; q = strstr(p, key)) {
        memcpy(w, p, (size_t)(q - p));
        w += q - p;
        memcpy(w, args, alen);
        w += alen;
        p = q + klen;
    }
    strcpy(w, p);
    return out;
}
