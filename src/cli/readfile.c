/*
 * readfile.c — reads a whole file (or stdin) into memory for the CLI commands.
 *
 * One copy for every subcommand that takes a module, a program or a request file. The
 * result is malloc'd and NUL-terminated (the terminator is not counted in *len), so
 * JSON and text readers can use it directly. Files past 2 GiB are refused rather than
 * grown into. peri_open_file opens a file the room reads itself (a module).
 */
#include "cli/commands.h"
#include "peri/base.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define READ_MAX ((size_t)1 << 31)

/* Caller frees. NULL with errno set on failure (ENOMEM, EFBIG, EISDIR, or fopen's/fread's). */
char *peri_read_file(const char *path, bool dash_is_stdin, size_t *len) {
    FILE *f = dash_is_stdin && strcmp(path, "-") == 0 ? stdin : fopen(path, "rb");
    if (!f) return NULL;
    struct stat st = {0};
    if (f != stdin && fstat(fileno(f), &st) == 0 && S_ISDIR(st.st_mode)) {
        fclose(f); /* a directory opens but does not read: say what it is */
        errno = EISDIR;
        return NULL;
    }
    size_t cap = 1 << 16, n = 0;
    /* A regular file: its size, plus one so the read that finds the end needs no growth. */
    if (f != stdin && S_ISREG(st.st_mode) && st.st_size > 0 && (size_t)st.st_size < READ_MAX)
        cap = (size_t)st.st_size + 1;
    char *b = malloc(cap + 1);
    pb_huge_hint(b, cap + 1); /* a 30 MB module: fewer first-touch faults */
    while (b) {
        if (n == cap) {
            size_t nc = cap * 2 < READ_MAX ? cap * 2 : READ_MAX;
            char *nb = cap >= READ_MAX ? NULL : realloc(b, nc + 1);
            if (!nb) {
                free(b);
                b = NULL;
                errno = cap >= READ_MAX ? EFBIG : ENOMEM;
                break;
            }
            b = nb;
            cap = nc;
        }
        size_t k = fread(b + n, 1, cap - n, f);
        if (k == 0) break;
        n += k;
    }
    if (b && ferror(f)) {
        free(b);
        b = NULL;
        errno = EIO;
    }
    if (f != stdin) fclose(f);
    if (b) b[n] = '\0';
    *len = n;
    return b;
}

/* Caller closes. -1 with errno set (EISDIR for a directory, or open's). */
int peri_open_file(const char *path) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    struct stat st;
    if (fd >= 0 && fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) {
        close(fd);
        errno = EISDIR;
        return -1;
    }
    return fd;
}
