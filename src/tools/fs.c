/*
 * fs.c — the file tools: read (offset/limit by lines), write (create/overwrite), edit
 * (exact-match replace, unique unless replace_all) and list (one directory).
 */
#include "tools_int.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define MAX_FILE           (32u << 20) /* files larger than this are not loaded */
#define DIFF_MAX           (1u << 20)  /* oldText/newText above this are left out of the diff */
#define DEFAULT_READ_LINES 2000
#define MAX_LIST           2000

/* Issue 12: file contents through the ACP client when it offers them, else the disk.
 * Same return convention as ptl__read_file (0, -1 with errno, -2 too large). */
static int read_file(const ptl_ctx *ctx, const char *abs, char **data, size_t *len) {
    const ptl_client_fs *c = ctx->client_fs;
    if (c && c->read) {
        int rc = c->read(c->ctx, abs, data, len);
        if (rc == 0 && *len > MAX_FILE) {
            free(*data);
            *data = NULL;
            return -2;
        }
        if (rc != 1) return rc;
    }
    return ptl__read_file(abs, MAX_FILE, data, len);
}

/* 0 or an errno value, like ptl__write_file. */
static int write_file(const ptl_ctx *ctx, const char *root, const char *abs, const char *data,
                      size_t len) {
    const ptl_client_fs *c = ctx->client_fs;
    if (c && c->write) {
        int rc = c->write(c->ctx, abs, data, len);
        if (rc == 0) return 0;
        if (rc != 1) return errno ? errno : EIO;
    }
    return ptl__write_file(root, abs, data, len);
}

static ptl_status bad_input(ptl_result *r, const char *tool, const char *what) {
    return ptl__error(r, "%s: %s", tool, what);
}

static ptl_status file_error(ptl_result *r, const char *path, int rc) {
    if (rc == -2) return ptl__error(r, "file too large (over %u MiB): %s", MAX_FILE >> 20, path);
    if (errno == EISDIR) return ptl__error(r, "is a directory, not a file: %s", path);
    if (errno == EINVAL) return ptl__error(r, "not a regular file: %s", path);
    if (errno == ENOMEM) return PTL_ERR_NOMEM;
    return ptl__error(r, "cannot read %s: %s", path, strerror(errno));
}

ptl_status ptl__read(json_t *in, const ptl_ctx *ctx, ptl_result *r) {
    bool bad = false;
    const char *path = ptl__str(in, "path", &bad);
    long long offset = ptl__int(in, "offset", 1, &bad);
    long long limit = ptl__int(in, "limit", DEFAULT_READ_LINES, &bad);
    if (bad || !path)
        return bad_input(r, "read",
                         "needs \"path\" (string), optional \"offset\"/\"limit\" "
                         "(integers)");
    if (offset < 1 || limit < 1) return bad_input(r, "read", "offset and limit must be >= 1");
    ptl_status st = PTL_OK;
    char *abs = ptl__resolve(ctx, r, path, false, &st);
    if (!abs) return st;
    char *data;
    size_t len;
    int rc = read_file(ctx, abs, &data, &len);
    if (rc != 0) {
        st = file_error(r, path, rc);
        free(abs);
        return st;
    }
    if (ptl__is_binary(data, len)) {
        free(data);
        st = ptl__error(r, "binary file, not shown: %s", path);
        free(abs);
        return st;
    }
    ptl__out o;
    ptl__out_init(&o, ctx->max_output);
    long long line = 1, shown = 0, total = 0;
    const char *p = data, *end = data + len;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *next = nl ? nl + 1 : end;
        if (line >= offset && shown < limit) {
            ptl__out_add(&o, p, (size_t)(next - p));
            shown++;
        }
        total++;
        line++;
        p = next;
    }
    if (len == 0) ptl__out_add(&o, "", 0);
    if (offset > total && total > 0) {
        ptl__out_addf(&o, "[offset %lld is past the end: the file has %lld lines]", offset, total);
    } else if (offset + shown - 1 < total) {
        if (o.len && o.p[o.len - 1] != '\n') ptl__out_add(&o, "\n", 1);
        ptl__out_addf(&o, "[showing lines %lld-%lld of %lld; use offset=%lld to read more]", offset,
                      offset + shown - 1, total, offset + shown);
    }
    free(data);
    if (o.truncated) /* the byte bound hit first: say so where the model reads it */
        r->truncated = true;
    st = ptl__finish(r, &o, false);
    if (st == PTL_OK) st = ptl__text_content(r);
    if (st == PTL_OK) st = ptl__location(r, abs, offset);
    free(abs);
    return st;
}

/* ACP diff content for a whole-file change. */
static ptl_status diff_content(ptl_result *r, const char *abs, const char *old_text, size_t old_len,
                               const char *new_text, size_t new_len) {
    json_t *d = json_pack("{s:s, s:s}", "type", "diff", "path", abs);
    if (!d) return PTL_ERR_NOMEM;
    if (new_len <= DIFF_MAX)
        json_object_set_new(d, "newText", json_stringn(new_text, new_len));
    else
        json_object_set_new(d, "newText", json_string("(too large to show)"));
    if (old_text)
        json_object_set_new(d, "oldText",
                            old_len <= DIFF_MAX ? json_stringn(old_text, old_len)
                                                : json_string("(too large)"));
    else
        json_object_set_new(d, "oldText", json_null());
    json_t *arr = json_array();
    if (!arr || json_array_append_new(arr, d)) {
        json_decref(arr);
        return PTL_ERR_NOMEM;
    }
    free(r->content_json);
    r->content_json = json_dumps(arr, JSON_COMPACT);
    json_decref(arr);
    return r->content_json ? PTL_OK : PTL_ERR_NOMEM;
}

ptl_status ptl__write(json_t *in, const ptl_ctx *ctx, ptl_result *r) {
    bool bad = false;
    const char *path = ptl__str(in, "path", &bad);
    json_t *cv = json_object_get(in, "content");
    if (bad || !path || !json_is_string(cv))
        return bad_input(r, "write", "needs \"path\" and \"content\" (strings)");
    const char *content = json_string_value(cv);
    size_t clen = json_string_length(cv);
    ptl_status st = PTL_OK;
    char *abs = ptl__resolve(ctx, r, path, true, &st);
    if (!abs) return st;
    char *root = ptl__root(ctx);
    char *old = NULL;
    size_t old_len = 0;
    int rc = root ? read_file(ctx, abs, &old, &old_len) : 0;
    if (rc == -1 && errno == EISDIR) {
        st = ptl__error(r, "is a directory, not a file: %s", path);
        goto done;
    }
    if (!root) {
        st = PTL_ERR_NOMEM;
        goto done;
    }
    int werr = write_file(ctx, root, abs, content, clen);
    if (werr) {
        st = ptl__error(r, "cannot write %s: %s", path,
                        werr == EPERM ? "path escapes the workspace" : strerror(werr));
        goto done;
    }
    ptl__out o;
    ptl__out_init(&o, ctx->max_output);
    ptl__out_addf(&o, "%s %s (%zu bytes)", rc == 0 ? "Overwrote" : "Created", path, clen);
    st = ptl__finish(r, &o, false);
    if (st == PTL_OK) st = diff_content(r, abs, rc == 0 ? old : NULL, old_len, content, clen);
    if (st == PTL_OK) st = ptl__location(r, abs, 0);
done:
    free(old);
    free(root);
    free(abs);
    return st;
}

/* Occurrences of needle in hay (non-overlapping). */
static size_t count_occurrences(const char *hay, size_t hlen, const char *needle, size_t nlen) {
    size_t count = 0;
    const char *p = hay, *end = hay + hlen;
    while (p + nlen <= end) {
        const char *hit = memmem(p, (size_t)(end - p), needle, nlen);
        if (!hit) break;
        count++;
        p = hit + nlen;
    }
    return count;
}

ptl_status ptl__edit(json_t *in, const ptl_ctx *ctx, ptl_result *r) {
    bool bad = false;
    const char *path = ptl__str(in, "path", &bad);
    json_t *ov = json_object_get(in, "old_string"), *nv = json_object_get(in, "new_string");
    bool all = ptl__bool(in, "replace_all", false, &bad);
    if (bad || !path || !json_is_string(ov) || !json_is_string(nv))
        return bad_input(r, "edit",
                         "needs \"path\", \"old_string\", \"new_string\" (strings) "
                         "and optional \"replace_all\" (boolean)");
    const char *olds = json_string_value(ov), *news = json_string_value(nv);
    size_t olen = json_string_length(ov), nlen = json_string_length(nv);
    if (olen == 0) return bad_input(r, "edit", "old_string is empty; use write to create a file");
    if (olen == nlen && memcmp(olds, news, olen) == 0)
        return bad_input(r, "edit", "old_string and new_string are identical");
    ptl_status st = PTL_OK;
    char *abs = ptl__resolve(ctx, r, path, false, &st);
    if (!abs) return st;
    char *root = NULL, *data = NULL, *result = NULL;
    size_t len;
    int rc = read_file(ctx, abs, &data, &len);
    if (rc != 0) {
        st = file_error(r, path, rc);
        goto done;
    }
    size_t n = count_occurrences(data, len, olds, olen);
    if (n == 0) {
        st = ptl__error(r,
                        "old_string not found in %s (it must match exactly, including "
                        "whitespace and indentation)",
                        path);
        goto done;
    }
    if (n > 1 && !all) {
        st = ptl__error(r,
                        "old_string occurs %zu times in %s; add surrounding context to make "
                        "it unique, or set replace_all",
                        n, path);
        goto done;
    }
    size_t out_len = len - n * olen + n * nlen;
    result = malloc(out_len + 1);
    root = ptl__root(ctx);
    if (!result || !root) {
        st = PTL_ERR_NOMEM;
        goto done;
    }
    const char *p = data, *end = data + len;
    char *w = result;
    for (size_t k = 0; k < n; k++) {
        const char *hit = memmem(p, (size_t)(end - p), olds, olen);
        memcpy(w, p, (size_t)(hit - p));
        w += hit - p;
        memcpy(w, news, nlen);
        w += nlen;
        p = hit + olen;
    }
    memcpy(w, p, (size_t)(end - p));
    result[out_len] = '\0';
    int werr = write_file(ctx, root, abs, result, out_len);
    if (werr) {
        st = ptl__error(r, "cannot write %s: %s", path, strerror(werr));
        goto done;
    }
    ptl__out o;
    ptl__out_init(&o, ctx->max_output);
    ptl__out_addf(&o, "Edited %s: %zu replacement%s", path, n, n == 1 ? "" : "s");
    st = ptl__finish(r, &o, false);
    if (st == PTL_OK) st = diff_content(r, abs, data, len, result, out_len);
    if (st == PTL_OK) st = ptl__location(r, abs, 0);
done:
    free(result);
    free(data);
    free(root);
    free(abs);
    return st;
}

static int cmp_str(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

ptl_status ptl__list(json_t *in, const ptl_ctx *ctx, ptl_result *r) {
    bool bad = false;
    const char *path = ptl__str(in, "path", &bad);
    if (bad) return bad_input(r, "list", "\"path\" must be a string");
    if (!path) path = ".";
    ptl_status st = PTL_OK;
    char *abs = ptl__resolve(ctx, r, path, false, &st);
    if (!abs) return st;
    DIR *d = opendir(abs);
    if (!d) {
        st = ptl__error(r, errno == ENOTDIR ? "not a directory: %s" : "cannot list %s", path);
        free(abs);
        return st;
    }
    char **names = NULL;
    size_t n = 0, cap = 0, total = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
        total++;
        if (n >= MAX_LIST) continue;
        if (n == cap) {
            cap = cap ? cap * 2 : 64;
            char **nn = realloc(names, cap * sizeof *nn);
            if (!nn) {
                st = PTL_ERR_NOMEM;
                break;
            }
            names = nn;
        }
        bool dir = e->d_type == DT_DIR;
        if (e->d_type == DT_UNKNOWN) {
            struct stat sb;
            char *full = NULL;
            if (asprintf(&full, "%s/%s", abs, e->d_name) >= 0 && lstat(full, &sb) == 0)
                dir = S_ISDIR(sb.st_mode);
            free(full);
        }
        bool link = e->d_type == DT_LNK;
        if (asprintf(&names[n], "%s%s", e->d_name, dir ? "/" : link ? "@" : "") < 0) {
            st = PTL_ERR_NOMEM;
            break;
        }
        n++;
    }
    closedir(d);
    if (st == PTL_OK) {
        qsort(names, n, sizeof *names, cmp_str);
        ptl__out o;
        ptl__out_init(&o, ctx->max_output);
        for (size_t i = 0; i < n; i++) {
            ptl__out_add(&o, names[i], strlen(names[i]));
            ptl__out_add(&o, "\n", 1);
        }
        if (total == 0) ptl__out_addf(&o, "(empty directory)");
        if (total > n) ptl__out_addf(&o, "[%zu more entries not shown]\n", total - n);
        st = ptl__finish(r, &o, false);
        if (st == PTL_OK) st = ptl__text_content(r);
        if (st == PTL_OK) st = ptl__location(r, abs, 0);
    }
    for (size_t i = 0; i < n; i++)
        free(names[i]);
    free(names);
    free(abs);
    return st;
}
