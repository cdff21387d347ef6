/*
 * readfile.c — reads a whole file (or stdin) into memory for the CLI commands.
 *
 * One copy for every subcommand that takes a module, a program or a request file. The
 * result is malloc'd and NUL-terminated (the terminator is not counted in *len), so
 * JSON and text readers can use it directly. Files past 2 GiB are refused rather than
 * grown into.
 */
#include "cli/commands.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define READ_MAX ((size_t)1 << 31)

/* Caller frees. NULL with errno set on failure (ENOMEM, EFBIG, EISDIR, or fopen's/fread's). */
char *peri_read_file(const char *path, bool dash_is_stdin, size_t *len) {
    FILE *f = dash_is_stdin && strcmp(path, "-") == 0 ? stdin : fopen(path, "rb");
    if (!f) return NULL;
    struct stat st;
    if (f != stdin && fstat(fileno(f), &st) == 0 && S_ISDIR(st.st_mode)) {
        fclose(f); /* a directory opens but does not read: say what it is */
        errno = EISDIR;
        return NULL;
    }
    size_t cap = 1 << 16, n = 0;
    char *b = malloc(cap + 1);
    while (b) {
        if (n == cap) {
            char *nb = cap >= READ_MAX ? NULL : realloc(b, cap * 2 + 1);
            if (!nb) {
                free(b);
                b = NULL;
                errno = cap >= READ_MAX ? EFBIG : ENOMEM;
                break;
            }
            b = nb;
            cap *= 2;
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
