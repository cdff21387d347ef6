/*
 * guest_run.c — pr_guest (pr_ruby, pr_python): scripts of an interpreter guest (Ruby's
 * official WebAssembly build, ruby.c; the room's CPython build, python.c) as room runs
 * for the layers above (placement's guest hooks, the `run` tool, the CLI). One runner
 * serves both; a per-language descriptor (guest_lang) says where the module is, which
 * ABI it must have, whether a standard library directory is preopened, and the texts
 * of its errors.
 *
 * A handle owns its path (Ruby: the module file; Python: the build's directory)
 * and, after the first run, a reference to the compiled program (whose cache entry
 * also holds the startup snapshot) and, for Python, the open read-only descriptor of
 * the standard library. Each run: a fresh in-memory file system with the job's files,
 * the library preopened read-only when the language has one, one pr_exec of the
 * script with the job's limits, cancel and capability grant, the room's result JSON
 * (result.c) back.
 *
 * Invariants: the program and the library descriptor are set up once under `mu`;
 * runs after that share them without the lock (each run duplicates the descriptor).
 * A missing or wrong module is a clear, typed error naming the path — never a crash,
 * never some other runtime.
 */
#include "room_int.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define SOURCE_MAX (1u << 20)
#define WASM_MAX   (64u << 20)

typedef struct guest_lang {
    const pr_abi *abi;   /* its name is the program's and the isolate's prefix */
    const char *module;  /* NULL: the path is the module; else the module's file in the path */
    const char *lib;     /* the standard library's directory in the path, preopened read-only
                            at PR_PYTHON_STDLIB_GUEST; NULL: none */
    const char *bad_job; /* the contract text for an invalid job */
    const char *missing; /* "%s (%s)": the path (or unset) and why */
    const char *unset;   /* shown for an empty path */
    const char *unset_why;
    const char *wrong_abi; /* "%s": the module's path */
} guest_lang;

static const guest_lang RUBY = {
    .abi = &pr__abi_ruby,
    .bad_job = "违规：Ruby 任务无效（源码超过 1 MiB 或文件过多）",
    .missing = "ruby program kind unavailable: cannot read Ruby's WebAssembly build at %s "
               "(%s); scripts/deps.sh fetches @ruby/3.4-wasm-wasi into that cache",
    .unset = "(no path configured)",
    .unset_why = "not set",
    .wrong_abi = "ruby program kind unavailable: %s is not Ruby's reactor build (it does not "
                 "import rb-js-abi-host)",
};

static const guest_lang PYTHON = {
    .abi = &pr__abi_python,
    .module = "python.wasm",
    .lib = "lib/python3.11",
    .bad_job = "违规：Python 任务无效（源码超过 1 MiB 或文件过多）",
    .missing = "python program kind unavailable: cannot read CPython's WebAssembly build in %s "
               "(%s); scripts/deps.sh builds it into that cache (scripts/python-wasi.sh)",
    .unset = "(no directory configured)",
    .unset_why = "No such file or directory",
    .wrong_abi = "python program kind unavailable: %s is not the room's CPython build (it lacks "
                 "the peri_py_* entry points)",
};

struct pr_guest {
    const guest_lang *lang;
    pr_host *host;
    char *path;
    pthread_mutex_t mu;
    pr_program *prog; /* NULL until the first run loads it */
    int lib_fd;       /* the standard library directory, or -1 */
};
typedef pr_guest guest;

static bool guest_init(guest *g, const guest_lang *lang, pr_host *h, const char *path) {
    g->lang = lang;
    g->host = h;
    g->lib_fd = -1;
    g->path = strdup(path ? path : "");
    if (g->path && pthread_mutex_init(&g->mu, NULL) == 0) return true;
    free(g->path);
    return false;
}

static void guest_fini(guest *g) {
    pr_program_release(g->prog);
    if (g->lib_fd >= 0) close(g->lib_fd);
    pthread_mutex_destroy(&g->mu);
    free(g->path);
}

/* Opens the module file for pr_program_load_fd (which reads it, and takes its digest
 * from the code cache's memo when it has not changed): a regular file of at most
 * WASM_MAX bytes. Caller closes; -1 with errno. */
static int open_module(const char *path) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    struct stat st;
    int e = fstat(fd, &st) != 0               ? errno
            : S_ISDIR(st.st_mode)             ? EISDIR
            : !S_ISREG(st.st_mode)            ? EINVAL
            : (uint64_t)st.st_size > WASM_MAX ? EFBIG
                                              : 0;
    if (e) {
        close(fd);
        errno = e;
        return -1;
    }
    return fd;
}

/* The module's path (and the library's) under g->path; false when too long. */
static bool paths_of(const guest *g, char *mod, char *lib, size_t cap) {
    const guest_lang *l = g->lang;
    if (!l->module) return (size_t)snprintf(mod, cap, "%s", g->path) < cap;
    return (size_t)snprintf(mod, cap, "%s/%s", g->path, l->module) < cap &&
           (!l->lib || (size_t)snprintf(lib, cap, "%s/%s", g->path, l->lib) < cap);
}

/* Loads the program (and opens the library) once; a new reference to the program. */
static pr_program *program(guest *g, int *lib_fd, pr_error *err) {
    const guest_lang *l = g->lang;
    pthread_mutex_lock(&g->mu);
    if (!g->prog) {
        char mod[4096], lib[4096];
        int e = ENOENT, fd = -1, mfd = -1;
        if (g->path[0] && paths_of(g, mod, lib, sizeof mod)) {
            mfd = open_module(mod);
            e = errno;
        } else if (g->path[0]) {
            e = ENAMETOOLONG;
        }
        if (mfd >= 0 && l->lib) {
            fd = open(lib, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
            e = errno;
        }
        if (mfd < 0 || (l->lib && fd < 0)) {
            pr__err_set(err, PR_KIND_RUN_FAILED, l->missing, g->path[0] ? g->path : l->unset,
                        g->path[0] ? strerror(e) : l->unset_why);
        } else {
            g->prog =
                pr_program_load_fd(g->host, (pr_str){l->abi->name, strlen(l->abi->name)}, mfd, err);
            if (g->prog && g->prog->abi != l->abi) {
                pr_program_release(g->prog);
                g->prog = NULL;
                pr__err_set(err, PR_KIND_RUN_FAILED, l->wrong_abi, mod);
            }
            if (g->prog)
                g->lib_fd = fd;
            else if (fd >= 0)
                close(fd);
        }
        if (mfd >= 0) close(mfd);
    }
    pr_program *p = g->prog;
    if (p) atomic_fetch_add(&p->refs, 1);
    *lib_fd = g->lib_fd;
    pthread_mutex_unlock(&g->mu);
    return p;
}

bool pr_guest_run(pr_guest *g, const pr_guest_job *job, pr_response *out, pr_error *err) {
    memset(out, 0, sizeof *out);
    if (job->source.len > SOURCE_MAX || (job->source.len && !job->source.ptr) ||
        job->nfiles > PR_FILES_MAX || (job->nfiles && (!job->paths || !job->contents))) {
        pr__err_set(err, PR_KIND_VIOLATION, "%s", g->lang->bad_job);
        return false;
    }
    int lib_fd = -1;
    pr_program *p = program(g, &lib_fd, err);
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
                           .dirs = lib_fd >= 0 ? &lib : NULL,
                           .ndirs = lib_fd >= 0 ? 1 : 0,
                           .dirs_read_only = lib_fd >= 0,
                           .stdin_data = (const uint8_t *)job->stdin_data.ptr,
                           .stdin_len = job->stdin_data.len,
                           .source = job->source,
                           .cancelled = job->cancelled,
                           .cancel_ud = job->cancel_ud,
                           .capability = job->capability,
                           .cap_ud = job->cap_ud,
                           .cap_log = job->cap_log,
                           .keep_output_on_stop = true};
    pr__exec_limits(&opt, &job->limits);
    pr_outcome oc;
    bool ran = pr_exec(g->host, p, &opt, &oc, err);
    uint8_t d[32];
    char hex[65], iso[80];
    pr_program_digest(p, d);
    pr__hex(d, 32, hex);
    snprintf(iso, sizeof iso, "%s:%s", g->lang->abi->name, hex);
    if (ran) {
        ok = pr__respond(&oc, fs, iso, out, err);
    } else if (err->stop != PR_STOP_NONE) {
        /* stopped: the error stands; what it wrote so far goes with it when it can be
         * put in a result (else nothing, never a second error) */
        pr_error ignored = {0};
        if (!pr__respond(&oc, fs, iso, out, &ignored)) pr_response_clear(out);
    }
    pr_outcome_clear(&oc);
done:
    pr_fs_free(fs);
    pr_program_release(p);
    return ok;
}

static guest *guest_new(const guest_lang *lang, pr_host *h, const char *path) {
    guest *g = calloc(1, sizeof *g);
    if (g && !guest_init(g, lang, h, path)) {
        free(g);
        return NULL;
    }
    return g;
}

pr_ruby *pr_ruby_new(pr_host *h, const char *wasm_path) {
    return guest_new(&RUBY, h, wasm_path);
}

pr_python *pr_python_new(pr_host *h, const char *dir) {
    return guest_new(&PYTHON, h, dir);
}

void pr_guest_free(pr_guest *g) {
    if (g) guest_fini(g);
    free(g);
}

void pr_ruby_free(pr_ruby *rb) {
    pr_guest_free(rb);
}

void pr_python_free(pr_python *py) {
    pr_guest_free(py);
}
