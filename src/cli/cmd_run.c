/*
 * cmd_run.c — `peri run FILE.wasm [ARGS...] [--file GUEST=HOSTPATH]... [--out DIR]`:
 * the human-friendly way into the room. Computes the digest itself, puts the given
 * host files into the room's file system, streams the program's stdout and stderr as
 * they are written, exits with the program's exit code, and copies the files the
 * run returns (/数据/ and /响应/) into DIR.
 */
#include "cli/commands.h"
#include "peri/room.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#define MAX_FILES 256

static void usage(FILE *f) {
    fprintf(f, "usage: peri run FILE.wasm [ARGS...] [--file GUEST=HOSTPATH]... [--out DIR]\n"
               "                [--cpu-ms N] [--deterministic] [--stdin FILE]\n"
               "                [--ruby SCRIPT.rb] [--repeat N] [--time]\n"
               "  --ruby     FILE.wasm is Ruby's ruby+stdlib.wasm; run SCRIPT.rb with it\n"
               "  --repeat   run N times in one process (later runs start from the snapshot)\n"
               "  --time     print each run's wall time on stderr\n"
               "Options are recognised anywhere before a '--'; ARGS after '--' pass as is.\n");
}

static unsigned char *read_file(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    size_t cap = 1 << 16, n = 0;
    unsigned char *b = malloc(cap);
    while (b) {
        if (n == cap) {
            unsigned char *nb = realloc(b, cap * 2);
            if (!nb) {
                free(b);
                b = NULL;
                break;
            }
            b = nb;
            cap *= 2;
        }
        size_t k = fread(b + n, 1, cap - n, f);
        if (k == 0) break;
        n += k;
    }
    fclose(f);
    *len = n;
    return b;
}

static void on_output(void *ud, int stream, const char *text, size_t len) {
    (void)ud;
    FILE *f = stream == PR_STDERR ? stderr : stdout;
    fwrite(text, 1, len, f);
    fflush(f);
}

/* Creates the parent directories of path (which lies under an existing dir). */
static int make_parents(char *path) {
    for (char *p = path + 1; *p; p++) {
        if (*p != '/') continue;
        *p = 0;
        int rc = mkdir(path, 0755);
        *p = '/';
        if (rc != 0 && errno != EEXIST) return -1;
    }
    return 0;
}

static int copy_out(pr_fs *fs, const char *dir) {
    size_t cur = 0, plen, len;
    const char *path;
    const uint8_t *data;
    int rc = 0;
    while (pr_fs_next(fs, &cur, &path, &plen, &data, &len)) {
        if (!(plen > 8 && (memcmp(path, "/数据/", 8) == 0 || memcmp(path, "/响应/", 8) == 0)))
            continue;
        size_t dl = strlen(dir);
        char *host = malloc(dl + plen + 1);
        if (!host) return -1;
        memcpy(host, dir, dl);
        memcpy(host + dl, path, plen);
        host[dl + plen] = 0;
        FILE *f = NULL;
        if (make_parents(host) == 0) f = fopen(host, "wb");
        if (!f || fwrite(data, 1, len, f) != len) {
            fprintf(stderr, "peri run: cannot write %s\n", host);
            rc = -1;
        }
        if (f) fclose(f);
        free(host);
    }
    return rc;
}

int peri_cmd_run(int argc, char **argv) {
    const char *wasm = NULL, *out_dir = NULL, *ruby = NULL, *stdin_path = NULL;
    unsigned long repeat = 1;
    bool timed = false;
    const char *files[MAX_FILES];
    size_t nfiles = 0;
    pr_str *args = calloc((size_t)argc, sizeof *args);
    size_t nargs = 0;
    pr_host_config cfg = {0};
    bool opts = true;
    if (!args) return 1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (opts && strcmp(a, "--") == 0) {
            opts = false;
        } else if (opts && (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) && !wasm) {
            usage(stdout);
            free(args);
            return 0;
        } else if (opts && strcmp(a, "--file") == 0 && i + 1 < argc && nfiles < MAX_FILES &&
                   strchr(argv[i + 1], '=')) {
            files[nfiles++] = argv[++i];
        } else if (opts && strcmp(a, "--out") == 0 && i + 1 < argc) {
            out_dir = argv[++i];
        } else if (opts && strcmp(a, "--cpu-ms") == 0 && i + 1 < argc) {
            char *end;
            unsigned long v = strtoul(argv[++i], &end, 10);
            if (*end || v == 0 || v > PR_CPU_MS_MAX) goto bad;
            cfg.cpu_ms = (uint32_t)v;
        } else if (opts && strcmp(a, "--ruby") == 0 && i + 1 < argc) {
            ruby = argv[++i];
        } else if (opts && strcmp(a, "--stdin") == 0 && i + 1 < argc) {
            stdin_path = argv[++i];
        } else if (opts && strcmp(a, "--repeat") == 0 && i + 1 < argc) {
            char *end;
            repeat = strtoul(argv[++i], &end, 10);
            if (*end || repeat == 0 || repeat > 100000) goto bad;
        } else if (opts && strcmp(a, "--time") == 0) {
            timed = true;
        } else if (opts && strcmp(a, "--deterministic") == 0) {
            cfg.deterministic = true;
        } else if (opts && a[0] == '-' && a[1] == '-' && !wasm) {
            goto bad;
        } else if (!wasm) {
            wasm = a;
        } else {
            args[nargs++] = (pr_str){a, strlen(a)};
        }
    }
    if (!wasm) goto bad;

    size_t len;
    unsigned char *bytes = read_file(wasm, &len);
    if (!bytes) {
        fprintf(stderr, "peri run: cannot read %s\n", wasm);
        free(args);
        return 1;
    }
    int rc = 1;
    pr_error err;
    pr_fs *fs = NULL;
    size_t src_len = 0, in_len = 0;
    unsigned char *src = ruby ? read_file(ruby, &src_len) : NULL;
    unsigned char *in = stdin_path ? read_file(stdin_path, &in_len) : NULL;
    pr_host *h = pr_host_new(&cfg, &err);
    pr_program *p = h ? pr_program_load(h, (pr_str){"cli", 3}, bytes, len, &err) : NULL;
    if ((ruby && !src) || (stdin_path && !in)) {
        fprintf(stderr, "peri run: cannot read %s\n", ruby && !src ? ruby : stdin_path);
        goto done;
    }
    if (!h || !p) {
        fprintf(stderr, "%s\n", err.message);
        goto done;
    }
    for (unsigned long run = 0; run < repeat; run++) {
        pr_fs_free(fs);
        fs = pr_fs_new();
        if (!fs) {
            fprintf(stderr, "peri run: out of memory\n");
            goto done;
        }
        for (size_t i = 0; i < nfiles; i++) {
            const char *eq = strchr(files[i], '=');
            size_t flen;
            unsigned char *data = read_file(eq + 1, &flen);
            if (!data) {
                fprintf(stderr, "peri run: cannot read %s\n", eq + 1);
                goto done;
            }
            int w = pr_fs_write(fs, files[i], (size_t)(eq - files[i]), data, flen);
            free(data);
            if (w) {
                fprintf(stderr, "peri run: the room's file system is full (128 MiB)\n");
                goto done;
            }
        }
        /* Deterministic runs are seeded from the program alone: SHA-256 of its bytes. */
        uint8_t seed[32] = {0};
        if (cfg.deterministic) pr_program_digest(p, seed);
        pr_exec_options opt = {.args = args,
                               .nargs = nargs,
                               .fs = fs,
                               .on_output = on_output,
                               .seed = cfg.deterministic ? seed : NULL,
                               .stdin_data = in,
                               .stdin_len = in_len,
                               .source = {(const char *)src, src_len}};
        pr_outcome oc;
        struct timespec t0, t1, c0, c1;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c0);
        if (!pr_exec(h, p, &opt, &oc, &err)) {
            fprintf(stderr, "%s\n", err.message);
            goto done;
        }
        clock_gettime(CLOCK_MONOTONIC, &t1);
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c1);
        if (timed)
            fprintf(stderr, "peri run: run %lu: %.1f ms (cpu %.1f ms)\n", run + 1,
                    (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6,
                    (double)(c1.tv_sec - c0.tv_sec) * 1e3 +
                        (double)(c1.tv_nsec - c0.tv_nsec) / 1e6);
        if (oc.error) fprintf(stderr, "peri run: %s\n", oc.error);
        rc = oc.exit_code;
        if (out_dir && copy_out(fs, out_dir) != 0 && rc == 0) rc = 1;
        pr_outcome_clear(&oc);
    }
done:
    free(src);
    free(in);
    pr_program_release(p);
    pr_fs_free(fs);
    pr_host_free(h);
    free(bytes);
    free(args);
    return rc;
bad:
    usage(stderr);
    free(args);
    return 2;
}
