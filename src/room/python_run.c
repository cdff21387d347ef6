/*
 * python_run.c — pr_python: Python scripts as room runs for the layers above
 * (placement's Python hook, the `run` tool). Owns the build's directory, the open
 * read-only descriptor of its standard library and, after the first run, a reference
 * to the compiled program (whose cache entry also holds the startup snapshot,
 * python.c). Each run: a fresh in-memory file system with the job's files, the
 * standard library preopened read-only at PR_PYTHON_STDLIB_GUEST, one pr_exec of the
 * script, the room's result JSON (result.c) back.
 *
 * Invariants: the program and the library descriptor are set up once under `mu`;
 * runs after that share them without the lock (each run duplicates the descriptor).
 * A missing build is a clear, typed error naming the path — never a crash.
 */
#include "room_int.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define PYTHON_SOURCE_MAX (1u << 20)
#define WASM_MAX          (64u << 20)

struct pr_python {
    pr_host *host;
    char *dir;
    pthread_mutex_t mu;
    pr_program *prog; /* NULL until the first run loads it */
    int lib_fd;       /* the standard library directory, or -1 until then */
};

pr_python *pr_python_new(pr_host *h, const char *dir) {
    pr_python *py = calloc(1, sizeof *py);
    if (!py) return NULL;
    py->host = h;
    py->lib_fd = -1;
    py->dir = strdup(dir ? dir : "");
    if (!py->dir || pthread_mutex_init(&py->mu, NULL) != 0) {
        free(py->dir);
        free(py);
        return NULL;
    }
    return py;
}

void pr_python_free(pr_python *py) {
    if (!py) return;
    pr_program_release(py->prog);
    if (py->lib_fd >= 0) close(py->lib_fd);
    pthread_mutex_destroy(&py->mu);
    free(py->dir);
    free(py);
}

/* Reads the whole file (caller frees); NULL with errno. */
static uint8_t *read_all(const char *path, size_t *len) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return NULL;
    uint8_t *b = NULL;
    size_t n = 0, cap = 0;
    for (;;) {
        if (n == cap) {
            size_t nc = cap ? cap * 2 : (4u << 20);
            if (nc > WASM_MAX) {
                errno = EFBIG;
                break;
            }
            uint8_t *nb = realloc(b, nc);
            if (!nb) {
                errno = ENOMEM;
                break;
            }
            b = nb;
            cap = nc;
        }
        ssize_t got = read(fd, b + n, cap - n);
        if (got < 0 && errno == EINTR) continue;
        if (got < 0) break;
        if (got == 0) {
            close(fd);
            *len = n;
            return b;
        }
        n += (size_t)got;
    }
    int e = errno;
    close(fd);
    free(b);
    errno = e;
    return NULL;
}

/* Loads the program and opens the library once; a new reference to the program. */
static pr_program *program(pr_python *py, int *lib_fd, pr_error *err) {
    pthread_mutex_lock(&py->mu);
    if (!py->prog) {
        char path[4096];
        size_t len = 0;
        uint8_t *bytes = NULL;
        int e = 0;
        if (py->dir[0] &&
            (size_t)snprintf(path, sizeof path, "%s/python.wasm", py->dir) < sizeof path) {
            bytes = read_all(path, &len);
            e = errno;
        } else {
            e = py->dir[0] ? ENAMETOOLONG : ENOENT;
        }
        int fd = -1;
        if (bytes &&
            (size_t)snprintf(path, sizeof path, "%s/lib/python3.11", py->dir) < sizeof path) {
            fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
            e = errno;
        }
        if (!bytes || fd < 0) {
            pr__err_set(err, PR_KIND_RUN_FAILED,
                        "python program kind unavailable: cannot read CPython's WebAssembly "
                        "build in %s (%s); scripts/deps.sh builds it into that cache "
                        "(scripts/python-wasi.sh)",
                        py->dir[0] ? py->dir : "(no directory configured)", strerror(e));
            free(bytes);
        } else {
            py->prog = pr_program_load(py->host, (pr_str){"python", 6}, bytes, len, err);
            free(bytes);
            if (py->prog && py->prog->abi != &pr__abi_python) {
                pr_program_release(py->prog);
                py->prog = NULL;
                pr__err_set(err, PR_KIND_RUN_FAILED,
                            "python program kind unavailable: %s/python.wasm is not the room's "
                            "CPython build (it lacks the peri_py_* entry points)",
                            py->dir);
            }
            if (py->prog)
                py->lib_fd = fd;
            else
                close(fd);
        }
    }
    pr_program *p = py->prog;
    if (p) atomic_fetch_add(&p->refs, 1);
    *lib_fd = py->lib_fd;
    pthread_mutex_unlock(&py->mu);
    return p;
}

bool pr_python_run(pr_python *py, const pr_python_job *job, pr_response *out, pr_error *err) {
    memset(out, 0, sizeof *out);
    if (job->source.len > PYTHON_SOURCE_MAX || (job->source.len && !job->source.ptr) ||
        job->nfiles > PR_FILES_MAX || (job->nfiles && (!job->paths || !job->contents))) {
        pr__err_set(err, PR_KIND_VIOLATION, "违规：Python 任务无效（源码超过 1 MiB 或文件过多）");
        return false;
    }
    int lib_fd = -1;
    pr_program *p = program(py, &lib_fd, err);
    if (!p) return false;
    bool ok = false;
    pr_fs *fs = pr_fs_new();
    if (!fs) {
        pr__err_set(err, PR_KIND_RUN_FAILED, "隔离运行失败：内存不足");
        goto done;
    }
    for (size_t i = 0; i < job->nfiles; i++) {
        if (job->paths[i].len == 0 || job->paths[i].ptr[0] != '/') {
            pr__err_set(err, PR_KIND_VIOLATION, "违规：文件路径必须以 / 开头：%.*s",
                        (int)(job->paths[i].len > 200 ? 200 : job->paths[i].len),
                        job->paths[i].ptr ? job->paths[i].ptr : "");
            goto done;
        }
        if (pr_fs_write(fs, job->paths[i].ptr, job->paths[i].len, job->contents[i].ptr,
                        job->contents[i].len) != 0) {
            pr__err_set(err, PR_KIND_RUN_FAILED, "隔离运行失败：内存不足");
            goto done;
        }
    }
    pr_dir lib = {lib_fd, PR_PYTHON_STDLIB_GUEST};
    pr_exec_options opt = {.fs = fs,
                           .dirs = &lib,
                           .ndirs = 1,
                           .dirs_read_only = true,
                           .stdin_data = (const uint8_t *)job->stdin_data.ptr,
                           .stdin_len = job->stdin_data.len,
                           .source = job->source,
                           .cancelled = job->cancelled,
                           .cancel_ud = job->cancel_ud,
                           .cpu_ms = job->limits.cpu_ms,
                           .wall_ms = job->limits.wall_ms,
                           .memory_cap = job->limits.memory_cap,
                           .output_max = pr_output_cap(job->limits.output_max)};
    pr_outcome oc;
    if (!pr_exec(py->host, p, &opt, &oc, err)) goto done;
    pb_buf res = {0};
    if (pr__result_json(&oc, fs, &res, err)) {
        out->output = pb_buf_take(&res, &out->output_len);
        if (out->output) {
            uint8_t d[32];
            char hex[65];
            pr_program_digest(p, d);
            pr__hex(d, 32, hex);
            snprintf(out->isolate, sizeof out->isolate, "python:%s", hex);
            out->stop = oc.stop;
            ok = true;
        } else {
            pr__err_set(err, PR_KIND_RUN_FAILED, "隔离运行失败：内存不足");
        }
    }
    pb_buf_free(&res);
    pr_outcome_clear(&oc);
done:
    pr_fs_free(fs);
    pr_program_release(p);
    return ok;
}
