/*
 * input.c — the run input: JSON text → args and files, exactly as the reference child
 * runner reads it (request.text() then JSON.parse, `入?.args ?? []`,
 * `入?.files ?? {}`, JS own-key order for files), and path normalisation.
 *
 * A small strict JSON parser is used instead of a general library so that the
 * corner cases follow JSON.parse: lone surrogate escapes are accepted (and become
 * U+FFFD when encoded, as TextEncoder does), "\u0000" is fine, numbers of any size
 * are fine, duplicate keys keep their first position and their last value.
 */
#include "room_int.h"

#include <stdlib.h>
#include <string.h>

#define MSG_JSON  "隔离运行输入无效：输入不是有效 JSON"
#define MSG_ARGS  "隔离运行输入无效：args 须为字符串数组"
#define MSG_FILES "隔离运行输入无效：files 须为路径到文字的对象"

typedef struct parser {
    const char *s;
    size_t n, i;
    const pr_json_keys *hook; /* its `known` recogniser, or NULL */
} parser;

static void ws(parser *p) {
    while (p->i < p->n) {
        char c = p->s[p->i];
        if (c != ' ' && c != '\t' && c != '\n' && c != '\r') break;
        p->i++;
    }
}

static int hexv(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

static bool hex4(parser *p, size_t at, unsigned *v) {
    if (at + 4 > p->n) return false;
    unsigned x = 0;
    for (int k = 0; k < 4; k++) {
        int h = hexv(p->s[at + (size_t)k]);
        if (h < 0) return false;
        x = x << 4 | (unsigned)h;
    }
    *v = x;
    return true;
}

static size_t put_utf8(char *o, unsigned cp) {
    if (cp < 0x80) {
        o[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        o[0] = (char)(0xC0 | cp >> 6);
        o[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        o[0] = (char)(0xE0 | cp >> 12);
        o[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        o[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    o[0] = (char)(0xF0 | cp >> 18);
    o[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
    o[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
    o[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

/* True when none of the 8 bytes at u is '"', '\\' or a control character (SWAR:
 * the has-less-than and has-zero-byte tests of "Bit Twiddling Hacks"). */
static inline bool plain8(const unsigned char *u) {
    const uint64_t ones = 0x0101010101010101ull, high = 0x8080808080808080ull;
    uint64_t v;
    memcpy(&v, u, 8);
    uint64_t ctl = (v - ones * 0x20) & ~v & high;
    uint64_t q = v ^ (ones * '"'), b = v ^ (ones * '\\');
    uint64_t hq = (q - ones) & ~q & high, hb = (b - ones) & ~b & high;
    return (ctl | hq | hb) == 0;
}

/* Parses a string at p->i (which is '"'). With out != NULL, writes the UTF-8 value
 * there (never longer than the source) and sets *len. */
static bool string(parser *p, char *out, size_t *len) {
    size_t i = p->i + 1, k = 0;
    const unsigned char *u = (const unsigned char *)p->s;
    if (p->hook && !out) {
        size_t known = p->hook->known(p->hook->known_ud, p->s, p->n, i);
        if (known) {
            p->i = i + known + 1;
            if (len) *len = known;
            return true;
        }
    }
    for (;;) {
        /* Fast path: a run of plain characters is scanned eight bytes at a time, then
         * copied at once (program texts are megabytes of plain characters). */
        size_t run = i;
        while (i + 8 <= p->n && plain8(u + i))
            i += 8;
        while (i < p->n && u[i] >= 0x20 && u[i] != '"' && u[i] != '\\')
            i++;
        if (out && i > run) memcpy(out + k, p->s + run, i - run);
        k += i - run;
        if (i >= p->n) return false;
        unsigned char c = u[i];
        if (c == '"') break;
        if (c < 0x20) return false;
        if (++i >= p->n) return false;
        char e = p->s[i++], r;
        switch (e) {
        case '"': r = '"'; break;
        case '\\': r = '\\'; break;
        case '/': r = '/'; break;
        case 'b': r = '\b'; break;
        case 'f': r = '\f'; break;
        case 'n': r = '\n'; break;
        case 'r': r = '\r'; break;
        case 't': r = '\t'; break;
        case 'u': {
            unsigned cp;
            if (!hex4(p, i, &cp)) return false;
            i += 4;
            if (cp >= 0xD800 && cp <= 0xDBFF) {
                unsigned lo;
                if (i + 1 < p->n && p->s[i] == '\\' && p->s[i + 1] == 'u' && hex4(p, i + 2, &lo) &&
                    lo >= 0xDC00 && lo <= 0xDFFF) {
                    i += 6;
                    cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                } else {
                    cp = 0xFFFD; /* lone high surrogate: TextEncoder writes U+FFFD */
                }
            } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
                cp = 0xFFFD;
            }
            char tmp[4];
            size_t m = put_utf8(tmp, cp);
            if (out) memcpy(out + k, tmp, m);
            k += m;
            continue;
        }
        default: return false;
        }
        if (out) out[k] = r;
        k++;
    }
    p->i = i + 1;
    if (len) *len = k;
    return true;
}

static bool digits(parser *p) {
    size_t st = p->i;
    while (p->i < p->n && p->s[p->i] >= '0' && p->s[p->i] <= '9')
        p->i++;
    return p->i > st;
}

static bool number(parser *p) {
    if (p->s[p->i] == '-') p->i++;
    if (p->i >= p->n) return false;
    if (p->s[p->i] == '0')
        p->i++;
    else if (!digits(p))
        return false;
    if (p->i < p->n && p->s[p->i] == '.') {
        p->i++;
        if (!digits(p)) return false;
    }
    if (p->i < p->n && (p->s[p->i] == 'e' || p->s[p->i] == 'E')) {
        p->i++;
        if (p->i < p->n && (p->s[p->i] == '+' || p->s[p->i] == '-')) p->i++;
        if (!digits(p)) return false;
    }
    return true;
}

static bool literal(parser *p, const char *w) {
    size_t l = strlen(w);
    if (p->n - p->i < l || memcmp(p->s + p->i, w, l) != 0) return false;
    p->i += l;
    return true;
}

typedef pr_json_keys spans;

static bool value(parser *p, spans *top);

static bool object(parser *p, spans *top) {
    p->i++;
    ws(p);
    if (p->i < p->n && p->s[p->i] == '}') {
        p->i++;
        return true;
    }
    for (;;) {
        ws(p);
        if (p->i >= p->n || p->s[p->i] != '"') return false;
        size_t key_at = p->i + 1;
        if (!string(p, NULL, NULL)) return false;
        size_t key_end = p->i - 1;
        ws(p);
        if (p->i >= p->n || p->s[p->i] != ':') return false;
        p->i++;
        ws(p);
        if (top) {
            /* An escaped key ("\u0061rgs") is the same key for JS: compare the decoded
             * form when the raw key has escapes. */
            char kb[40];
            size_t kl = 0;
            const char *k = p->s + key_at;
            size_t klen = key_end - key_at;
            if (klen <= 36 && memchr(k, '\\', klen)) {
                parser q = {p->s, p->n, key_at - 1, NULL};
                if (string(&q, kb, &kl)) k = kb, klen = kl;
            }
            bool nested = false;
            for (size_t w = 0; w < top->n; w++)
                if (strlen(top->names[w]) == klen && memcmp(k, top->names[w], klen) == 0) {
                    top->at[w] = p->i + 1;
                    nested = top->sub && w == top->sub_of;
                }
            if (nested) {
                for (size_t w = 0; w < top->sub->n; w++)
                    top->sub->at[w] = 0;
                if (p->i < p->n && p->s[p->i] == '{') {
                    if (!object(p, top->sub)) return false;
                    goto next;
                }
            }
        }
        if (!value(p, NULL)) return false;
    next:
        ws(p);
        if (p->i >= p->n) return false;
        if (p->s[p->i] == ',') {
            p->i++;
            continue;
        }
        if (p->s[p->i] != '}') return false;
        p->i++;
        return true;
    }
}

static bool scalar(parser *p) {
    switch (p->s[p->i]) {
    case '"': return string(p, NULL, NULL);
    case 't': return literal(p, "true");
    case 'f': return literal(p, "false");
    case 'n': return literal(p, "null");
    default: return (p->s[p->i] == '-' || (p->s[p->i] >= '0' && p->s[p->i] <= '9')) && number(p);
    }
}

/* Validates and skips one value without recursion: JSON.parse accepts any nesting
 * depth, and 1.5 MiB of input can nest 780,000 deep. The open containers are kept
 * on an explicit stack, one byte each ('{' or '['). */
static bool skip(parser *p) {
    char small[256], *st = small;
    size_t depth = 0, cap = sizeof small;
    bool ok = false;
    for (;;) {
        /* A value starts here. */
        ws(p);
        if (p->i >= p->n) goto out;
        char c = p->s[p->i];
        if (c == '{' || c == '[') {
            p->i++;
            ws(p);
            if (p->i < p->n && p->s[p->i] == (c == '{' ? '}' : ']')) {
                p->i++;
                goto after;
            }
            if (depth == cap) {
                char *ns = malloc(cap * 2);
                if (!ns) goto out;
                memcpy(ns, st, depth);
                if (st != small) free(st);
                st = ns;
                cap *= 2;
            }
            st[depth++] = c;
            if (c == '[') continue;
            goto key;
        }
        if (!scalar(p)) goto out;
    after:
        /* A value ended: close containers or go on to the next member/element. */
        for (;;) {
            if (depth == 0) {
                ok = true;
                goto out;
            }
            ws(p);
            if (p->i >= p->n) goto out;
            char d = p->s[p->i++];
            if (d == ',') break;
            if (d != (st[depth - 1] == '{' ? '}' : ']')) goto out;
            depth--;
        }
        if (st[depth - 1] == '[') continue;
    key:
        ws(p);
        if (p->i >= p->n || p->s[p->i] != '"' || !string(p, NULL, NULL)) goto out;
        ws(p);
        if (p->i >= p->n || p->s[p->i] != ':') goto out;
        p->i++;
    }
out:
    if (st != small) free(st);
    return ok;
}

static bool value(parser *p, spans *top) {
    if (p->i >= p->n) return false;
    if (top && p->s[p->i] == '{') return object(p, top);
    return skip(p);
}

/* ---- extraction */

static char kind_at(const parser *p, size_t at) {
    return p->s[at];
}

static bool is_null_at(const parser *p, size_t at) {
    return p->n - at >= 4 && memcmp(p->s + at, "null", 4) == 0;
}

static bool take_string(parser *p, pr_input *in, pr_str *out) {
    char *dst = in->arena + in->arena_len;
    size_t len;
    if (!string(p, dst, &len)) return false;
    in->arena_len += len;
    out->ptr = dst;
    out->len = len;
    return true;
}

static bool get_args(parser *p, size_t at, pr_input *in) {
    p->i = at;
    p->i++;
    ws(p);
    size_t cap = 0;
    if (p->i < p->n && p->s[p->i] == ']') return true;
    for (;;) {
        ws(p);
        if (p->s[p->i] != '"') return false;
        if (in->nargs == cap) {
            cap = cap ? cap * 2 : 8;
            pr_str *a = realloc(in->args, cap * sizeof *a);
            if (!a) return false;
            in->args = a;
        }
        if (!take_string(p, in, &in->args[in->nargs])) return false;
        in->nargs++;
        ws(p);
        if (p->s[p->i] == ',') {
            p->i++;
            continue;
        }
        return true;
    }
}

/* Canonical array index ("0", "17"; < 2^32 - 1): JS puts these keys first. */
static bool array_index(pr_str k, uint64_t *v) {
    if (k.len == 0 || k.len > 10 || (k.len > 1 && k.ptr[0] == '0')) return false;
    uint64_t x = 0;
    for (size_t i = 0; i < k.len; i++) {
        if (k.ptr[i] < '0' || k.ptr[i] > '9') return false;
        x = x * 10 + (uint64_t)(k.ptr[i] - '0');
    }
    if (x >= 4294967295u) return false;
    *v = x;
    return true;
}

typedef struct keyent {
    pr_str key, val;
    uint64_t idx;
    bool is_idx;
} keyent;

static int cmp_idx(const void *a, const void *b) {
    const keyent *x = a, *y = b;
    return x->idx < y->idx ? -1 : x->idx > y->idx;
}

static uint32_t hash_bytes(const char *s, size_t n) {
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < n; i++)
        h = (h ^ (uint8_t)s[i]) * 16777619u;
    return h;
}

/* Returns 1 ok, 0 not a path→string object, -1 out of memory. */
static int get_files(parser *p, size_t at, pr_input *in) {
    p->i = at;
    p->i++;
    ws(p);
    keyent *ents = NULL;
    size_t n = 0, cap = 0, nslots = 0;
    uint32_t *slots = NULL;
    int rc = 1;
    if (p->s[p->i] == '}') goto done;
    for (;;) {
        ws(p);
        pr_str key, val;
        if (!take_string(p, in, &key)) goto bad;
        ws(p);
        p->i++; /* ':' (already validated) */
        ws(p);
        /* A non-string value is only an error if no later duplicate key replaces
         * it (JSON.parse keeps the last value): remember it as {NULL, 0}. */
        if (p->s[p->i] == '"') {
            if (!take_string(p, in, &val)) goto bad;
        } else {
            if (!value(p, NULL)) goto bad;
            val = (pr_str){NULL, 0};
        }
        /* Dedup: a repeated key keeps its first position, takes the last value. */
        if (n * 2 >= nslots) {
            size_t ns = nslots ? nslots * 2 : 64;
            uint32_t *s2 = calloc(ns, sizeof *s2);
            if (!s2) goto nomem;
            for (size_t i = 0; i < n; i++) {
                size_t h = hash_bytes(ents[i].key.ptr, ents[i].key.len) & (ns - 1);
                while (s2[h])
                    h = (h + 1) & (ns - 1);
                s2[h] = (uint32_t)i + 1;
            }
            free(slots);
            slots = s2;
            nslots = ns;
        }
        size_t h = hash_bytes(key.ptr, key.len) & (nslots - 1);
        bool dup = false;
        while (slots[h]) {
            keyent *e = &ents[slots[h] - 1];
            if (e->key.len == key.len && memcmp(e->key.ptr, key.ptr, key.len) == 0) {
                e->val = val;
                dup = true;
                break;
            }
            h = (h + 1) & (nslots - 1);
        }
        if (!dup) {
            if (n == cap) {
                cap = cap ? cap * 2 : 16;
                keyent *e2 = realloc(ents, cap * sizeof *e2);
                if (!e2) goto nomem;
                ents = e2;
            }
            ents[n].key = key;
            ents[n].val = val;
            ents[n].is_idx = array_index(key, &ents[n].idx);
            slots[h] = (uint32_t)n + 1;
            n++;
        }
        ws(p);
        if (p->s[p->i] == ',') {
            p->i++;
            continue;
        }
        break;
    }
done:
    for (size_t i = 0; i < n; i++)
        if (!ents[i].val.ptr) goto bad;
    if (n) {
        in->paths = malloc(n * sizeof *in->paths);
        in->texts = malloc(n * sizeof *in->texts);
        keyent *idx = malloc(n * sizeof *idx);
        if (!in->paths || !in->texts || !idx) {
            free(idx);
            goto nomem;
        }
        size_t ni = 0;
        for (size_t i = 0; i < n; i++)
            if (ents[i].is_idx) idx[ni++] = ents[i];
        qsort(idx, ni, sizeof *idx, cmp_idx);
        size_t k = 0;
        for (size_t i = 0; i < ni; i++)
            in->paths[k] = idx[i].key, in->texts[k++] = idx[i].val;
        for (size_t i = 0; i < n; i++)
            if (!ents[i].is_idx) in->paths[k] = ents[i].key, in->texts[k++] = ents[i].val;
        in->nfiles = n;
        free(idx);
    }
    goto out;
bad:
    rc = 0;
    goto out;
nomem:
    rc = -1;
out:
    free(ents);
    free(slots);
    return rc;
}

bool pr__input_parse(const char *text, size_t n, pr_input *in, pr_error *err) {
    memset(in, 0, sizeof *in);
    /* request.text(): lenient UTF-8 with the BOM dropped. Valid input is used as is. */
    pb_buf dec = {0};
    const char *s = text;
    if (!pr__utf8_valid((const uint8_t *)text, n) ||
        (n >= 3 && memcmp(text, "\xEF\xBB\xBF", 3) == 0)) {
        if (!pr__utf8_lenient(&dec, (const uint8_t *)text, n)) goto nomem;
        s = dec.p;
        n = dec.len;
    }
    static const char *const names[2] = {"args", "files"};
    size_t at[2] = {0, 0};
    spans top = {.names = names, .n = 2, .at = at};
    parser p = {s, n, 0, NULL};
    ws(&p);
    bool ok = value(&p, p.i < n && s[p.i] == '{' ? &top : NULL);
    ws(&p);
    if (!ok || p.i != n) {
        pb_buf_free(&dec);
        pr__err_set(err, PR_KIND_VIOLATION, MSG_JSON);
        return false;
    }
    in->arena = malloc(n ? n : 1);
    if (!in->arena) goto nomem;
    if (at[0] && !is_null_at(&p, at[0] - 1)) {
        if (kind_at(&p, at[0] - 1) != '[' || !get_args(&p, at[0] - 1, in)) {
            pb_buf_free(&dec);
            pr__input_free(in);
            pr__err_set(err, PR_KIND_VIOLATION, MSG_ARGS);
            return false;
        }
    }
    if (at[1] && !is_null_at(&p, at[1] - 1)) {
        int rc = kind_at(&p, at[1] - 1) == '{' ? get_files(&p, at[1] - 1, in) : 0;
        if (rc == -1) goto nomem;
        if (rc == 0) {
            pb_buf_free(&dec);
            pr__input_free(in);
            pr__err_set(err, PR_KIND_VIOLATION, MSG_FILES);
            return false;
        }
    }
    pb_buf_free(&dec);
    return true;
nomem:
    pb_buf_free(&dec);
    pr__input_free(in);
    pr__err_set(err, PR_KIND_RUN_FAILED, "隔离运行失败：内存不足");
    return false;
}

void pr__input_free(pr_input *in) {
    pb_free_all(in->args, in->paths, in->texts, in->arena);
    memset(in, 0, sizeof *in);
}

size_t pr__path_normalize(const char *in, size_t n, char *out) {
    size_t o = 0, i = 0;
    while (i < n) {
        size_t j = i;
        while (j < n && in[j] != '/')
            j++;
        size_t l = j - i;
        if (l == 0 || (l == 1 && in[i] == '.')) {
        } else if (l == 2 && in[i] == '.' && in[i + 1] == '.') {
            while (o > 0 && out[o - 1] != '/')
                o--;
            if (o > 0) o--; /* drop the '/' too */
        } else {
            out[o++] = '/';
            memcpy(out + o, in + i, l);
            o += l;
        }
        i = j + 1;
    }
    if (o == 0) out[o++] = '/';
    out[o] = 0;
    return o;
}

/* ---------------------------------------------------------------- for serve.c */

bool pr__json_scan(const char *s, size_t n, pr_json_keys *keys) {
    for (size_t w = 0; w < keys->n; w++)
        keys->at[w] = 0;
    if (keys->sub)
        for (size_t w = 0; w < keys->sub->n; w++)
            keys->sub->at[w] = 0;
    parser p = {s, n, 0, keys->known ? keys : NULL};
    ws(&p);
    bool ok = value(&p, p.i < n && s[p.i] == '{' ? keys : NULL);
    ws(&p);
    return ok && p.i == n;
}

size_t pr__json_value_end(const char *s, size_t n, size_t at) {
    parser p = {s, n, at, NULL};
    value(&p, NULL);
    return p.i;
}

char *pr__json_string_dup(const char *s, size_t n, size_t at, size_t *len) {
    parser p = {s, n, at, NULL};
    if (at >= n || s[at] != '"') return NULL;
    /* A first pass measures the value, so that a short string in a long text does
     * not allocate the rest of the text. */
    size_t want;
    if (!string(&p, NULL, &want)) return NULL;
    char *out = malloc(want + 1);
    if (!out) return NULL;
    p.i = at;
    if (!string(&p, out, len)) {
        free(out);
        return NULL;
    }
    out[*len] = 0;
    return out;
}
