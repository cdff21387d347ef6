/*
 * context.c — the frozen context: the system prompt a session keeps for its life.
 *
 * Built once at session creation from the project guides (AGENTS.md, then PERI.md and
 * CLAUDE.md when present; at most 64 KiB in all), a Skills summary (name and
 * description from each .peri/skills/<name>/SKILL.md front matter; the body is loaded
 * on demand with the `skill` tool), the date and the cwd, then persisted with the
 * thread so a reload sees the same text rather than today's files. Every project file
 * is read confined beneath cwd (pag_read_beneath over the tools layer's
 * ptl_read_beneath: no escape, no FIFO or device, no hard link, bounded).
 */
#include "peri/agent.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MAX_INSTRUCTIONS (64u << 10)
#define MAX_SKILLS       64

typedef struct sbuf {
    pb_buf b;
    bool oom; /* the first failed append sticks: checked once at the end */
} sbuf;

static void sb_add(sbuf *b, const char *s, size_t n) {
    if (!b->oom) b->oom = !pb_buf_put(&b->b, s, n);
}

static void sb_str(sbuf *b, const char *s) {
    sb_add(b, s, strlen(s));
}

static int cmp_str(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* "- name: description" lines for every skill, sorted by name. */
static void skills_summary(const char *cwd, sbuf *b) {
    int cfd = open(cwd, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (cfd < 0) return;
    int pfd = openat(cfd, ".peri", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    close(cfd);
    if (pfd < 0) return;
    int sfd = openat(pfd, "skills", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    close(pfd);
    if (sfd < 0) return;
    DIR *d = fdopendir(sfd);
    if (!d) {
        close(sfd);
        return;
    }
    char *names[MAX_SKILLS];
    size_t n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL && n < MAX_SKILLS) {
        if (e->d_name[0] == '.' || strlen(e->d_name) > 100) continue;
        char *c = strdup(e->d_name);
        if (c) names[n++] = c;
    }
    closedir(d);
    qsort(names, n, sizeof names[0], cmp_str);
    bool any = false;
    for (size_t i = 0; i < n; i++) {
        char rel[160];
        snprintf(rel, sizeof rel, ".peri/skills/%s/SKILL.md", names[i]);
        char *txt = pag_read_beneath(cwd, rel, 16u << 10, NULL);
        if (txt) {
            char *name = NULL, *desc = NULL;
            pag_front_matter(txt, "name", &name);
            pag_front_matter(txt, "description", &desc);
            if (!any)
                sb_str(b, "\nSkills (load one's full instructions with the `skill` tool when "
                          "the task matches its description):\n");
            any = true;
            sb_str(b, "- ");
            sb_str(b, names[i]);
            if (name && strcmp(name, names[i]) != 0) {
                sb_str(b, " (");
                sb_str(b, name);
                sb_str(b, ")");
            }
            sb_str(b, ": ");
            sb_add(b, desc ? desc : "", desc ? strnlen(desc, 300) : 0);
            sb_str(b, "\n");
            free(name);
            free(desc);
            free(txt);
        }
        free(names[i]);
    }
}

char *pag_frozen_context(const char *cwd, int64_t now_ms) {
    static const char intro[] =
        "You are Peri, a coding agent working in the user's workspace. Use the tools to "
        "read, search and change files and to run commands; paths are relative to the "
        "working directory. Be concise.";
    char date[32] = "unknown";
    time_t t = (time_t)(now_ms / 1000);
    struct tm tm;
    if (gmtime_r(&t, &tm)) strftime(date, sizeof date, "%Y-%m-%d", &tm);
    sbuf b = {0};
    char head[4352];
    snprintf(head, sizeof head, "%s\n\nWorking directory: %.4000s\nToday's date (UTC): %s\n", intro,
             cwd, date);
    sb_str(&b, head);
    static const char *const guides[] = {"AGENTS.md", "PERI.md", "CLAUDE.md"};
    size_t left = MAX_INSTRUCTIONS;
    for (size_t i = 0; i < 3 && left > 0; i++) {
        size_t len = 0;
        char *txt = pag_read_beneath(cwd, guides[i], left, &len);
        if (!txt) continue;
        sb_str(&b, "\nProject instructions (");
        sb_str(&b, guides[i]);
        sb_str(&b, "):\n");
        sb_add(&b, txt, len);
        sb_str(&b, "\n");
        left -= len;
        free(txt);
    }
    skills_summary(cwd, &b);
    if (b.oom) {
        pb_buf_free(&b.b);
        return NULL;
    }
    return b.b.p;
}
