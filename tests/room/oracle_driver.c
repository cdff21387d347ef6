/*
 * oracle_driver.c — the room's text primitives on stdin lines, for oracle.js, which
 * compares them with node's own JSON.stringify, TextDecoder, atob and JSON.parse.
 * usage: room_oracle_driver MODE < hex lines; MODE j (JSON string), u (lenient UTF-8),
 * s (strict UTF-8 validity), b (atob), i (input parsing). Output: one line per input.
 */
#include "room/room_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void hex_out(const void *p, size_t n) {
    const unsigned char *u = p;
    for (size_t i = 0; i < n; i++)
        printf("%02x", u[i]);
}

int main(int argc, char **argv) {
    if (argc < 2) return 2;
    char mode = argv[1][0];
    size_t cap = 1 << 16;
    char *line = malloc(cap);
    size_t n = 0;
    int c;
    while (line && (c = getchar()) != EOF) {
        if (c != '\n') {
            if (n + 1 == cap) line = realloc(line, cap *= 2);
            if (line) line[n++] = (char)c;
            continue;
        }
        size_t len = n / 2;
        unsigned char *b = malloc(len + 1);
        for (size_t i = 0; b && i < len; i++) {
            unsigned v;
            sscanf(line + 2 * i, "%2x", &v);
            b[i] = (unsigned char)v;
        }
        n = 0;
        if (!b) return 1;
        if (mode == 'j' || mode == 'u') {
            pb_buf o = {0};
            if (mode == 'j') {
                pr__json_str(&o, (const char *)b, len);
                fwrite(o.p, 1, o.len, stdout);
            } else {
                pr__utf8_lenient(&o, b, len);
                hex_out(o.p, o.len);
            }
            pb_buf_free(&o);
        } else if (mode == 's') {
            printf("%d", pr__utf8_valid(b, len));
        } else if (mode == 'b') {
            uint8_t *o = NULL;
            size_t ol = 0;
            int rc = pr__base64_decode((const char *)b, len, 1 << 20, &o, &ol);
            if (rc == -1)
                printf("ERR");
            else if (rc == -2)
                printf("EMPTY");
            else
                hex_out(o, ol);
            free(o);
        } else {
            pr_input in;
            pr_error e;
            if (!pr__input_parse((const char *)b, len, &in, &e)) {
                printf("E:%s", e.message + strlen("隔离运行输入无效："));
            } else {
                printf("A:");
                for (size_t i = 0; i < in.nargs; i++)
                    hex_out(in.args[i].ptr, in.args[i].len), putchar(',');
                printf("|F:");
                for (size_t i = 0; i < in.nfiles; i++) {
                    hex_out(in.paths[i].ptr, in.paths[i].len);
                    putchar('=');
                    hex_out(in.texts[i].ptr, in.texts[i].len);
                    putchar(',');
                }
                pr__input_free(&in);
            }
        }
        putchar('\n');
        free(b);
    }
    free(line);
    return 0;
}
