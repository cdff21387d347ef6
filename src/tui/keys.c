/*
 * keys.c — terminal input bytes to key events. Knows the VT/xterm sequences tmux and
 * common terminals send (CSI and SS3 arrows, Home/End, PgUp/PgDn, Delete), Alt-Enter
 * (ESC CR), bracketed paste (ESC [200~ ... ESC [201~, delivered as one event) and
 * UTF-8 characters. A lone ESC is only decided after a quiet time (the caller's
 * flush), so an arrow key is never mistaken for Esc. Unknown sequences are dropped.
 */
#include "tui/tui.h"

#include <stdlib.h>
#include <string.h>

int pt_keys_feed(pt_keys *k, const void *bytes, size_t n) {
    if (!n) return 0;
    if (k->n + n > k->cap) {
        size_t cap = k->cap ? k->cap * 2 : 256;
        while (cap < k->n + n)
            cap *= 2;
        unsigned char *b = realloc(k->buf, cap);
        if (!b) return -1;
        k->buf = b;
        k->cap = cap;
    }
    memcpy(k->buf + k->n, bytes, n);
    k->n += n;
    return 0;
}

bool pt_keys_pending(const pt_keys *k) {
    return k->n > 0;
}

void pt_keys_free(pt_keys *k) {
    free(k->buf);
    pt_buf_free(&k->paste);
    memset(k, 0, sizeof *k);
}

static void consume(pt_keys *k, size_t n) {
    memmove(k->buf, k->buf + n, k->n - n);
    k->n -= n;
}

static const char PASTE_END[] = "\x1b[201~";

static int paste(pt_keys *k, pt_key *out) {
    /* look for the end marker; keep a possible partial marker at the end */
    for (size_t i = 0; i < k->n; i++) {
        if (k->buf[i] == 0x1b && k->n - i >= sizeof PASTE_END - 1 &&
            !memcmp(k->buf + i, PASTE_END, sizeof PASTE_END - 1)) {
            if (pt_buf_add(&k->paste, (char *)k->buf, i)) return -1;
            consume(k, i + sizeof PASTE_END - 1);
            k->in_paste = false;
            out->type = PK_PASTE;
            out->paste = k->paste.s ? k->paste.s : "";
            out->paste_len = k->paste.n;
            return 1;
        }
    }
    size_t keep = 0;
    for (size_t m = sizeof PASTE_END - 2; m > 0; m--)
        if (k->n >= m && !memcmp(k->buf + k->n - m, PASTE_END, m)) {
            keep = m;
            break;
        }
    if (pt_buf_add(&k->paste, (char *)k->buf, k->n - keep)) return -1;
    consume(k, k->n - keep);
    return 0;
}

static int csi(pt_keys *k, pt_key *out, bool flush) {
    size_t i = 2;
    while (i < k->n && (k->buf[i] < 0x40 || k->buf[i] > 0x7e))
        i++;
    if (i >= k->n) {
        if (!flush && k->n < 32) return 0;
        consume(k, k->n); /* garbage */
        out->type = PK_NONE;
        return 1;
    }
    char fin = (char)k->buf[i];
    char params[32] = "";
    size_t pl = i - 2 < sizeof params - 1 ? i - 2 : sizeof params - 1;
    memcpy(params, k->buf + 2, pl);
    consume(k, i + 1);
    out->type = PK_NONE;
    switch (fin) {
    case 'A': out->type = PK_UP; break;
    case 'B': out->type = PK_DOWN; break;
    case 'C': out->type = PK_RIGHT; break;
    case 'D': out->type = PK_LEFT; break;
    case 'H': out->type = PK_HOME; break;
    case 'F': out->type = PK_END; break;
    case 'Z': out->type = PK_BACKTAB; break;
    case '~': {
        int n = atoi(params);
        if (n == 1 || n == 7) out->type = PK_HOME;
        if (n == 4 || n == 8) out->type = PK_END;
        if (n == 3) out->type = PK_DELETE;
        if (n == 5) out->type = PK_PGUP;
        if (n == 6) out->type = PK_PGDN;
        if (n == 200) {
            k->in_paste = true;
            k->paste.n = 0;
            /* the paste may be complete already; else a NONE event for now */
            return paste(k, out) < 0 ? -1 : 1;
        }
        break;
    }
    }
    return 1;
}

int pt_keys_next(pt_keys *k, pt_key *out, bool flush) {
    memset(out, 0, sizeof *out);
    if (k->in_paste) return paste(k, out);
    if (!k->n) return 0;
    unsigned char c = k->buf[0];
    if (c == 0x1b) {
        if (k->n == 1) {
            if (!flush) return 0;
            consume(k, 1);
            out->type = PK_ESC;
            return 1;
        }
        unsigned char d = k->buf[1];
        if (d == '[') {
            int rc = csi(k, out, flush);
            if (rc == 1 && out->type == PK_NONE && k->in_paste) return 1;
            return rc;
        }
        if (d == 'O') {
            if (k->n < 3) {
                if (!flush) return 0;
                consume(k, k->n);
                out->type = PK_NONE;
                return 1;
            }
            char f = (char)k->buf[2];
            consume(k, 3);
            out->type = f == 'A'   ? PK_UP
                        : f == 'B' ? PK_DOWN
                        : f == 'C' ? PK_RIGHT
                        : f == 'D' ? PK_LEFT
                        : f == 'H' ? PK_HOME
                        : f == 'F' ? PK_END
                                   : PK_NONE;
            return 1;
        }
        if (d == '\r' || d == '\n') {
            consume(k, 2);
            out->type = PK_ALT_ENTER;
            return 1;
        }
        if (d == 0x1b) { /* ESC ESC: the first one is an Esc */
            consume(k, 1);
            out->type = PK_ESC;
            return 1;
        }
        consume(k, 2); /* Alt-<key>: not bound */
        out->type = PK_NONE;
        return 1;
    }
    /* the one-byte keys: Enter, Backspace (DEL or ^H), Tab, and Ctrl-<letter> */
    pt_keytype one = c == '\r'                ? PK_ENTER
                     : c == 0x7f || c == 0x08 ? PK_BACKSPACE
                     : c == '\t'              ? PK_TAB
                     : c < 0x20               ? PK_CTRL
                                              : PK_NONE;
    if (one != PK_NONE) {
        consume(k, 1);
        out->type = one;
        if (one == PK_CTRL) out->ctrl = (char)('a' + c - 1);
        return 1;
    }
    size_t len = c < 0x80             ? 1
                 : (c & 0xE0) == 0xC0 ? 2
                 : (c & 0xF0) == 0xE0 ? 3
                 : (c & 0xF8) == 0xF0 ? 4
                                      : 1;
    if (k->n < len) {
        if (!flush) return 0;
        len = k->n;
    }
    out->type = PK_CHAR;
    memcpy(out->text, k->buf, len);
    out->text[len] = 0;
    consume(k, len);
    return 1;
}
