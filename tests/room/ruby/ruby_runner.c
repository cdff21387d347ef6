/*
 * ruby_runner.c — test driver: runs Ruby scripts in the room, one after another in ONE
 * host (so every run after the first starts from the startup snapshot), and writes what
 * each run returned for ruby_test.py to compare with native `ruby`.
 *
 *   ruby_runner [--engine auto|interp|jit|lazy] RUBY.wasm OUTDIR SCRIPT.rb...
 *
 * For SCRIPT NAME.rb: NAME.in (if present) is the room file /请求/in.txt and NAME.stdin
 * (if present) is stdin. Writes OUTDIR/NAME.out, NAME.err, NAME.code (the exit status,
 * or "platform: <message>") and the returned files under OUTDIR/NAME.files/ (their
 * room paths, e.g. NAME.files/响应/x.txt). Prints one line per run: "NAME <ms>".
 */
#include "peri/room.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

static unsigned char *slurp(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    if (fseek(f, 0, SEEK_END) != 0) {
        fclose(f);
        return NULL;
    }
    long n = ftell(f);
    rewind(f);
    unsigned char *b = malloc(n > 0 ? (size_t)n : 1);
    if (b && n > 0 && fread(b, 1, (size_t)n, f) != (size_t)n) {
        free(b);
        b = NULL;
    }
    fclose(f);
    *len = n > 0 ? (size_t)n : 0;
    return b;
}

static int spit(const char *path, const void *data, size_t n) {
    FILE *f = fopen(path, "wb");
    if (!f) return -1;
    size_t w = n ? fwrite(data, 1, n, f) : 0;
    return fclose(f) == 0 && w == n ? 0 : -1;
}

/* mkdir -p for the parents of path. */
static void parents(char *path) {
    for (char *p = path + 1; *p; p++) {
        if (*p != '/') continue;
        *p = 0;
        mkdir(path, 0755);
        *p = '/';
    }
}

int main(int argc, char **argv) {
    pr_host_config cfg = {0}; /* engine: PW_ENGINE_AUTO, the default */
    if (argc > 2 && strcmp(argv[1], "--engine") == 0) {
        const char *e = argv[2];
        cfg.engine = !strcmp(e, "interp") ? PW_ENGINE_INTERP
                     : !strcmp(e, "jit")  ? PW_ENGINE_JIT
                     : !strcmp(e, "auto") ? PW_ENGINE_AUTO
                     : !strcmp(e, "lazy") ? PW_ENGINE_LAZY
                                          : -1;
        if (cfg.engine < 0) {
            fprintf(stderr, "ruby_runner: --engine wants auto, interp, jit or lazy\n");
            return 2;
        }
        argc -= 2;
        argv += 2;
    }
    if (argc < 4) {
        fprintf(stderr, "usage: ruby_runner [--engine E] RUBY.wasm OUTDIR SCRIPT.rb...\n");
        return 2;
    }
    size_t wlen;
    unsigned char *wasm = slurp(argv[1], &wlen);
    if (!wasm) {
        fprintf(stderr, "ruby_runner: cannot read %s\n", argv[1]);
        return 2;
    }
    pr_error err;
    pr_host *h = pr_host_new(&cfg, &err);
    pr_program *prog = h ? pr_program_load(h, (pr_str){"test", 4}, wasm, wlen, &err) : NULL;
    free(wasm);
    if (!prog) {
        fprintf(stderr, "ruby_runner: %s\n", err.message);
        pr_host_free(h);
        return 2;
    }
    int rc = 0;
    for (int i = 3; i < argc; i++) {
        const char *script = argv[i];
        const char *base = strrchr(script, '/');
        base = base ? base + 1 : script;
        char name[256], path[1024];
        snprintf(name, sizeof name, "%.*s",
                 (int)(strlen(base) > 3 ? strlen(base) - 3 : strlen(base)), base);
        size_t slen, inlen = 0, stdlen = 0;
        unsigned char *src = slurp(script, &slen);
        snprintf(path, sizeof path, "%.*s.in", (int)(strlen(script) - 3), script);
        unsigned char *in = slurp(path, &inlen);
        snprintf(path, sizeof path, "%.*s.stdin", (int)(strlen(script) - 3), script);
        unsigned char *sin = slurp(path, &stdlen);
        pr_fs *fs = pr_fs_new();
        if (!src || !fs) {
            fprintf(stderr, "ruby_runner: cannot read %s\n", script);
            rc = 2;
        } else {
            if (in) pr_fs_write(fs, "/请求/in.txt", strlen("/请求/in.txt"), in, inlen);
            pr_exec_options opt = {.fs = fs,
                                   .stdin_data = sin,
                                   .stdin_len = stdlen,
                                   .source = {(const char *)src, slen}};
            pr_outcome oc;
            struct timespec t0, t1;
            clock_gettime(CLOCK_MONOTONIC, &t0);
            bool ok = pr_exec(h, prog, &opt, &oc, &err);
            clock_gettime(CLOCK_MONOTONIC, &t1);
            char code[1700];
            snprintf(path, sizeof path, "%s/%s.out", argv[2], name);
            spit(path, ok ? oc.stdout_text : "", ok ? oc.stdout_len : 0);
            snprintf(path, sizeof path, "%s/%s.err", argv[2], name);
            if (ok && oc.error) {
                char *e = malloc(oc.stderr_len + strlen(oc.error) + 8);
                if (e) {
                    int n =
                        sprintf(e, "%.*speri: %s\n", (int)oc.stderr_len, oc.stderr_text, oc.error);
                    spit(path, e, (size_t)n);
                    free(e);
                }
            } else {
                spit(path, ok ? oc.stderr_text : "", ok ? oc.stderr_len : 0);
            }
            if (ok)
                snprintf(code, sizeof code, "%lld", (long long)oc.exit_code);
            else
                snprintf(code, sizeof code, "platform: %s", err.message);
            snprintf(path, sizeof path, "%s/%s.code", argv[2], name);
            spit(path, code, strlen(code));
            size_t cur = 0, pl, dl;
            const char *fp;
            const uint8_t *data;
            while (ok && pr_fs_next(fs, &cur, &fp, &pl, &data, &dl)) {
                bool ret = (pl > strlen("/响应/") && memcmp(fp, "/响应/", strlen("/响应/")) == 0) ||
                           (pl > strlen("/数据/") && memcmp(fp, "/数据/", strlen("/数据/")) == 0);
                if (!ret) continue;
                snprintf(path, sizeof path, "%s/%s.files%.*s", argv[2], name, (int)pl, fp);
                parents(path);
                spit(path, data, dl);
            }
            if (ok) pr_outcome_clear(&oc);
            printf("%s %.1f\n", name,
                   (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6);
            fflush(stdout);
        }
        free(src);
        free(in);
        free(sin);
        pr_fs_free(fs);
    }
    pr_program_release(prog);
    pr_host_free(h);
    return rc;
}
