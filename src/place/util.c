/*
 * util.c — small helpers of the placement layer: typed errors, SHA-256 tags, the
 * cancel handle (an atomic flag plus an eventfd the native backend can poll), UTF-8
 * checks and the result object (pl_result) with its JSON text.
 */
#include "place_int.h"

#include <openssl/evp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

bool pl__fail(pl_error *err, pl_code code, const char *fmt, ...) {
    if (err) {
        err->code = code;
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err->message, sizeof err->message, fmt, ap);
        va_end(ap);
    }
    return false;
}

void pl__hex(const unsigned char *b, size_t n, char *out) {
    static const char hx[] = "0123456789abcdef";
    for (size_t i = 0; i < n; i++) {
        out[2 * i] = hx[b[i] >> 4];
        out[2 * i + 1] = hx[b[i] & 15];
    }
    out[2 * n] = 0;
}

void pl__sha256_tag(const void *data, size_t len, char out[PL_DIGEST_LEN]) {
    unsigned char md[32];
    unsigned int mdlen = 0;
    if (!EVP_Digest(data, len, md, &mdlen, EVP_sha256(), NULL) || mdlen != 32)
        memset(md, 0, sizeof md);
    memcpy(out, "sha256:", 7);
    pl__hex(md, 32, out + 7);
}

bool pl__digest_well_formed(const char *s) {
    if (!s || strlen(s) != 71 || memcmp(s, "sha256:", 7) != 0) return false;
    for (int i = 7; i < 71; i++)
        if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f'))) return false;
    return true;
}

pl_limits pl__limits_effective(const pl_limits *l) {
    pl_limits e = l ? *l : (pl_limits){0};
    if (!e.cpu_ms) e.cpu_ms = PL_DEF_CPU_MS;
    if (!e.wall_ms) e.wall_ms = PL_DEF_WALL_MS;
    if (!e.memory_mib) e.memory_mib = PL_DEF_MEMORY_MIB;
    if (!e.output_bytes) e.output_bytes = PL_DEF_OUTPUT_BYTES;
    if (!e.processes) e.processes = PL_DEF_PROCESSES;
    return e;
}

const char *pl_stop_name(pl_stop s) {
    static const char *const NAMES[] = {[PL_STOP_NONE] = "",
                                        [PL_STOP_CPU] = "cpu_ms",
                                        [PL_STOP_WALL] = "wall_ms",
                                        [PL_STOP_MEMORY] = "memory_mib",
                                        [PL_STOP_OUTPUT] = "output_bytes",
                                        [PL_STOP_CANCELLED] = "cancelled"};
    return (unsigned)s < sizeof NAMES / sizeof *NAMES ? NAMES[s] : "";
}

static const char *const LIMIT_NAMES[] = {"cpu_ms", "wall_ms", "memory_mib", "output_bytes"};

pj_t *pl__limits_json(const pl_limits *l, bool processes) {
    pj_t *o = pj_object();
    bool ok = o && !pj_object_set_new(o, "cpu_ms", pj_integer(l->cpu_ms)) &&
              !pj_object_set_new(o, "wall_ms", pj_integer(l->wall_ms)) &&
              !pj_object_set_new(o, "memory_mib", pj_integer(l->memory_mib)) &&
              !pj_object_set_new(o, "output_bytes", pj_integer((pj_int_t)l->output_bytes));
    if (ok && processes) ok = !pj_object_set_new(o, "processes", pj_integer(l->processes));
    if (!ok) {
        pj_decref(o);
        return NULL;
    }
    return o;
}

pj_t *pl__capped_json(unsigned capped) {
    pj_t *a = pj_array();
    for (unsigned i = 0; a && i < 4; i++)
        if ((capped & (1u << i)) && pj_array_append_new(a, pj_string(LIMIT_NAMES[i]))) {
            pj_decref(a);
            return NULL;
        }
    return a;
}

/* Adds "limits", "capped" and "stopped_by" (each only when there is something to say). */
static bool result_extra(const pl_result *res, pj_t *o) {
    bool ok = true;
    if (res->has_limits)
        ok = !pj_object_set_new(
            o, "limits", pl__limits_json(&res->limits, res->backend == PL_BACKEND_NATIVE_SANDBOX));
    if (ok && res->capped) ok = !pj_object_set_new(o, "capped", pl__capped_json(res->capped));
    if (ok && res->stop)
        ok = !pj_object_set_new(o, "stopped_by", pj_string(pl_stop_name(res->stop)));
    return ok;
}

char *pl__result_extra_text(const pl_result *res, size_t *len) {
    pj_t *o = pj_object();
    bool ok = o && result_extra(res, o);
    size_t n = 0;
    char *s = ok ? pl__json_dump(o, &n) : NULL;
    pj_decref(o);
    if (!s) return NULL;
    /* "{...}" → "..." (or "" when empty) */
    memmove(s, s + 1, n - 2);
    s[n - 2] = 0;
    *len = n - 2;
    return s;
}

char *pl__json_dump(pj_t *j, size_t *len) {
    if (!j) return NULL;
    char *s = pj_dumps(j, PJ_COMPACT | PJ_PRESERVE_ORDER | PJ_ENCODE_ANY);
    if (s && len) *len = strlen(s);
    return s;
}

/* ---------------------------------------------------------------- cancel */

pl_cancel *pl_cancel_new(void) {
    pl_cancel *c = calloc(1, sizeof *c);
    if (!c) return NULL;
    atomic_init(&c->flag, 0);
    c->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    return c;
}

void pl_cancel_trigger(pl_cancel *c) {
    if (!c) return;
    atomic_store(&c->flag, 1);
    if (c->efd >= 0) {
        uint64_t one = 1;
        ssize_t w = write(c->efd, &one, sizeof one);
        (void)w;
    }
}

bool pl_cancel_triggered(const pl_cancel *c) {
    return c && atomic_load(&((pl_cancel *)c)->flag) != 0;
}

void pl_cancel_free(pl_cancel *c) {
    if (!c) return;
    if (c->efd >= 0) close(c->efd);
    free(c);
}

/* ---------------------------------------------------------------- UTF-8 */

/* Length of the well-formed sequence at s[i..n), or 0 when ill-formed (room's reading). */
static size_t utf8_seq(const unsigned char *s, size_t i, size_t n) {
    size_t bad = 0;
    return pr_utf8_seq(s + i, n - i, &bad);
}

bool pl__utf8_valid(const char *s, size_t n) {
    const unsigned char *u = (const unsigned char *)s;
    for (size_t i = 0; i < n;) {
        size_t k = utf8_seq(u, i, n);
        if (!k) return false;
        i += k;
    }
    return true;
}

char *pl__utf8_lenient(const char *s, size_t n, size_t *out_len) {
    const unsigned char *u = (const unsigned char *)s;
    if (n > SIZE_MAX / 3 - 1) return NULL;
    char *o = malloc(n * 3 + 1);
    if (!o) return NULL;
    size_t w = 0;
    for (size_t i = 0; i < n;) {
        size_t k = utf8_seq(u, i, n);
        if (k) {
            memcpy(o + w, s + i, k);
            w += k;
            i += k;
            continue;
        }
        /* one U+FFFD per maximal ill-formed prefix: skip the lead byte and the
         * continuation bytes that could still belong to it */
        size_t j = i + 1;
        while (j < n && j < i + 4 && (u[j] & 0xC0) == 0x80 && u[i] >= 0xC2 && u[i] <= 0xF4 &&
               utf8_seq(u, j, n) == 0)
            j++;
        memcpy(o + w, "\xEF\xBF\xBD", 3);
        w += 3;
        i = j;
    }
    o[w] = 0;
    if (out_len) *out_len = w;
    return o;
}

/* ---------------------------------------------------------------- results */

void pl__result_init(pl_result *res) {
    memset(res, 0, sizeof *res);
    res->exit_code = -1;
}

void pl__result_clear(pl_result *res) {
    if (!res) return;
    for (size_t i = 0; i < res->nfiles; i++)
        pb_free_all(res->files[i].path, res->files[i].text);
    pb_free_all(res->stdout_text, res->stderr_text, res->files, res->error, res->json);
    pl__result_init(res);
}

bool pl__result_fail(pl_result *res, const char *error) {
    res->ok = false;
    free(res->error);
    res->error = strdup(error ? error : "failed");
    if (!res->stdout_text) res->stdout_text = strdup("");
    if (!res->stderr_text) res->stderr_text = strdup("");
    return res->error && res->stdout_text && res->stderr_text;
}

bool pl__result_finish(pl_result *res, const pl_decision *d) {
    res->backend = d ? d->backend : PL_BACKEND_NONE;
    snprintf(res->decision, sizeof res->decision, "%s", d ? d->identity : "");
    if (!res->stdout_text && !(res->stdout_text = strdup(""))) return false;
    if (!res->stderr_text && !(res->stderr_text = strdup(""))) return false;
    pj_t *o = pj_object(), *files = pj_object();
    if (!o || !files) {
        pj_decref(o);
        pj_decref(files);
        return false;
    }
    bool ok = !pj_object_set_new(o, "ok", pj_boolean(res->ok)) &&
              !pj_object_set_new(o, "stdout", pj_stringn(res->stdout_text, res->stdout_len)) &&
              !pj_object_set_new(o, "stderr", pj_stringn(res->stderr_text, res->stderr_len)) &&
              !pj_object_set_new(o, "exitCode", pj_integer(res->exit_code));
    if (ok && res->error) ok = !pj_object_set_new(o, "error", pj_string(res->error));
    for (size_t i = 0; ok && i < res->nfiles; i++)
        ok = !pj_object_set_new(files, res->files[i].path,
                                pj_stringn(res->files[i].text, res->files[i].len));
    bool gave = false;
    if (ok) {
        ok = !pj_object_set_new(o, "files", files); /* steals files, even on failure */
        gave = true;
    }
    if (!gave) pj_decref(files);
    ok = ok && !pj_object_set_new(o, "backend", pj_string(pl_backend_name(res->backend))) &&
         !pj_object_set_new(o, "decision", pj_string(res->decision)) && result_extra(res, o);
    free(res->json);
    res->json = ok ? pl__json_dump(o, &res->json_len) : NULL;
    pj_decref(o);
    return res->json != NULL;
}

/* ---------------------------------------------------------------- cancel links */

static void *link_main(void *arg) {
    pl_cancel_link *l = arg;
    while (!atomic_load(&l->done)) {
        if (atomic_load(l->flag)) {
            pl_cancel_trigger(l->cancel);
            break;
        }
        struct timespec ts = {0, 10 * 1000000L};
        nanosleep(&ts, NULL);
    }
    return NULL;
}

void pl_cancel_link_start(pl_cancel_link *l, atomic_int *flag, pl_cancel *c) {
    l->flag = flag;
    l->cancel = c;
    atomic_init(&l->done, 0);
    l->started = flag && c && pthread_create(&l->th, NULL, link_main, l) == 0;
}

void pl_cancel_link_stop(pl_cancel_link *l) {
    atomic_store(&l->done, 1);
    if (l->started) pthread_join(l->th, NULL);
    l->started = false;
}
