/*
 * json_out.c — JSON string output byte-identical to JavaScript JSON.stringify: only
 * '"', '\\' and control characters below 0x20 are escaped (\b \t \n \f \r short
 * forms, else \u00XX lower-case hex); '/', DEL and non-ASCII pass through.
 */
#include "room_int.h"

static const char HEX[] = "0123456789abcdef";

bool pr_json_str(pr_buf *b, const char *s, size_t n) {
    if (!pr_buf_reserve(b, n + 2)) return false;
    b->p[b->len++] = '"';
    size_t run = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c >= 0x20 && c != '"' && c != '\\') continue;
        if (!pr_buf_put(b, s + run, i - run)) return false;
        char esc[6] = {'\\', 0};
        size_t k = 2;
        switch (c) {
        case '"': esc[1] = '"'; break;
        case '\\': esc[1] = '\\'; break;
        case '\b': esc[1] = 'b'; break;
        case '\t': esc[1] = 't'; break;
        case '\n': esc[1] = 'n'; break;
        case '\f': esc[1] = 'f'; break;
        case '\r': esc[1] = 'r'; break;
        default:
            esc[1] = 'u';
            esc[2] = '0';
            esc[3] = '0';
            esc[4] = HEX[c >> 4];
            esc[5] = HEX[c & 15];
            k = 6;
        }
        if (!pr_buf_put(b, esc, k)) return false;
        run = i + 1;
    }
    return pr_buf_put(b, s + run, n - run) && pr_buf_putc(b, '"');
}
