/*
 * sandbox.c — the native_sandbox backend: one run of a shell command, a Ruby script or
 * a WASI module (through the configured runner) under bubblewrap, and its evidence
 * `peri.native-lifecycle.v1`.
 *
 * The sandbox: new user, PID (the command is PID 1), IPC, UTS, cgroup and network
 * namespaces. With the network (the request asks AND the policy permits) the network
 * namespace is still its own, connected by pasta (netns.c: bwrap holds the command back
 * until pasta is ready); only the policy's explicit host_network shares the host's. A
 * tmpfs root on which the top-level entries of a private
 * scratch directory are bound (/tmp, /home, /数据, /响应 and the request's files at
 * their guest paths; results collected from /数据/ and /响应/); /usr and the /bin,
 * /lib* links read-only; a minimal /etc; no $HOME, /root, /tmp or processes of the
 * host; a clean environment (PATH, HOME=/home, LANG, TMPDIR); rlimits (CPU, processes,
 * file size, open files, no core; address space only without a memory cgroup); a
 * cgroup leaf (memory, pids, CPU accounting) when the machine allows one; the seccomp
 * filter of seccomp.c; --die-with-parent and --disable-userns.
 *
 * Identity: the tree never runs as host uid 0. When the caller is root it runs as a
 * fresh unprivileged uid (a per-run uid above 2,000,000,000), so the kernel's
 * RLIMIT_NPROC applies and host files stay protected by their modes; for
 * native_workspace_ref it runs as the workspace's owner, and when that owner is root,
 * as the fresh uid with the workspace idmapped to it (idmap.c), so that what it writes
 * there is root's. A child that gives up before exec says why on a status pipe.
 *
 * Stopping: at the CPU limit (cgroup CPU accounting polled every 10 ms, RLIMIT_CPU as
 * a backstop), the wall limit, the output limit or a cancel (an eventfd in the poll
 * set), every process of the cgroup but the outer bwrap is SIGKILLed, so that the
 * outer bwrap reaps the namespace's PID 1 and exits (no zombie is left to init); it is
 * SIGKILLed itself 300 ms later if it has not. Without a cgroup the outer bwrap is
 * SIGKILLed and the namespace dies with its PID 1 (PDEATHSIG). The evidence says
 * "confirmed" only after the reap was seen (outer bwrap reaped and the cgroup empty).
 * pasta (in the same cgroup) is killed and reaped when the tree stops or its PID 1 is
 * reaped; a pasta that fails before it is ready ends the run unstarted (exit -1).
 *
 * Steps (run_steps, all sharing one run_state): plan_identity, setup_host (scratch tree,
 * cgroup, id mapping), build_command, build_args (bubblewrap's namespaces and mounts, the
 * masks, the seccomp fd), start_child (pipes, the child cloned like posix_spawn, its pre-exec
 * status), supervise (pasta, stdin, output, limits, cancel, reap), finish (cleanup, result,
 * evidence). A failing setup step leaves why in the state and goes straight to finish.
 *
 * Invariants: the scratch directory and the cgroup leaf are removed before return
 * (the evidence records whether that succeeded); no child process outlives the call.
 */
#include "sandbox_int.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define INNER_UID       1000
#define UID_BASE        2000000000u
#define UID_RANGE       100000000u
#define FILES_MAX       256
#define FILES_BYTES_MAX 1048576
#define POLL_CPU_MS     10
#define PL_IDMAP_MAX    16 /* root-owned writable dirs idmapped besides the workspace */

/* ---------------------------------------------------------------- small helpers */

typedef struct strv {
    char **v;
    size_t n, cap;
    bool oom;
} strv;

static void sv_add(strv *s, const char *a) {
    if (s->oom) return;
    if (s->n + 2 > s->cap) {
        size_t nc = s->cap ? s->cap * 2 : 64;
        char **nv = realloc(s->v, nc * sizeof *nv);
        if (!nv) {
            s->oom = true;
            return;
        }
        s->v = nv;
        s->cap = nc;
    }
    if (!(s->v[s->n] = strdup(a))) {
        s->oom = true;
        return;
    }
    s->n++;
    s->v[s->n] = NULL;
}

static void sv_free(strv *s) {
    for (size_t i = 0; i < s->n; i++)
        free(s->v[i]);
    free(s->v);
    memset(s, 0, sizeof *s);
}

static int64_t now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

static bool write_all_file(const char *path, const char *data, size_t n, mode_t mode) {
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
    if (fd < 0) return false;
    size_t off = 0;
    while (off < n) {
        ssize_t k = write(fd, data + off, n - off);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) break;
        off += (size_t)k;
    }
    return close(fd) == 0 && off == n;
}

/* mkdir -p of the parents of `path` (absolute, below an existing base). */
static bool mkparents(char *path, uid_t uid, gid_t gid, bool chown_them, size_t base_len) {
    for (char *p = path + base_len + 1; *p; p++) {
        if (*p != '/') continue;
        *p = 0;
        int rc = mkdir(path, 0755);
        bool ok = rc == 0 || errno == EEXIST;
        if (rc == 0 && chown_them && chown(path, uid, gid) != 0) ok = false;
        *p = '/';
        if (!ok) return false;
    }
    return true;
}

/* ---------------------------------------------------------------- output files */

/* Entries (of any type) the host looks at after a run, in all: the guest controls how
 * many names it leaves, so the walk is bounded before any sort or stat. */
#define WALK_ENTRIES_MAX 8192

typedef struct collect {
    pl_result *res;
    size_t cap, total;
    size_t seen;      /* directory entries read so far (WALK_ENTRIES_MAX) */
    const char *fail; /* the room's interface message when over a limit / not UTF-8 */
    char bad_path[512];
} collect;

static int cmp_names(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static void walk(int dfd, char *guest, size_t glen, collect *c, int depth) {
    DIR *d = fdopendir(dfd);
    if (!d) {
        close(dfd);
        return;
    }
    struct dirent *e;
    /* sorted order: read names first */
    char **names = NULL;
    size_t n = 0, cap = 0;
    while ((e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        if (++c->seen > WALK_ENTRIES_MAX) {
            c->fail = "隔离运行失败：500：运行数据超过上限";
            break;
        }
        if (n == cap) {
            size_t nc = cap ? cap * 2 : 16;
            char **nn = realloc(names, nc * sizeof *nn);
            if (!nn) break;
            names = nn;
            cap = nc;
        }
        if (!(names[n] = strdup(e->d_name))) break;
        n++;
    }
    if (n > 1) qsort(names, n, sizeof *names, cmp_names);
    for (size_t i = 0; i < n && !c->fail; i++) {
        size_t nl = strlen(names[i]);
        if (glen + 1 + nl >= 4096) continue;
        struct stat st;
        if (fstatat(dirfd(d), names[i], &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
        memcpy(guest + glen, names[i], nl);
        guest[glen + nl] = 0;
        if (S_ISDIR(st.st_mode) && depth < 64) {
            int fd = openat(dirfd(d), names[i], O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
            guest[glen + nl] = '/';
            guest[glen + nl + 1] = 0;
            if (fd >= 0) walk(fd, guest, glen + nl + 1, c, depth + 1);
            continue;
        }
        if (!S_ISREG(st.st_mode)) continue; /* symlinks, fifos, devices: never followed */
        if (c->res->nfiles >= FILES_MAX || c->total + (size_t)st.st_size > FILES_BYTES_MAX) {
            c->fail = "隔离运行失败：500：运行数据超过上限";
            break;
        }
        int fd = openat(dirfd(d), names[i], O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
        if (fd < 0) continue;
        size_t sz = (size_t)st.st_size;
        char *buf = malloc(sz + 1);
        ssize_t got = buf ? read(fd, buf, sz) : -1;
        close(fd);
        if (got != (ssize_t)sz) {
            free(buf);
            continue;
        }
        buf[sz] = 0;
        if (!pl__utf8_valid(buf, sz)) {
            free(buf);
            snprintf(c->bad_path, sizeof c->bad_path, "%s", guest);
            c->fail = "隔离运行失败：500：输出文件不是有效 UTF-8：";
            break;
        }
        size_t skip = sz >= 3 && memcmp(buf, "\xEF\xBB\xBF", 3) == 0 ? 3 : 0;
        if (c->res->nfiles == c->cap) {
            size_t nc = c->cap ? c->cap * 2 : 8;
            pl_out_file *nf = realloc(c->res->files, nc * sizeof *nf);
            if (!nf) {
                free(buf);
                break;
            }
            c->res->files = nf;
            c->cap = nc;
        }
        pl_out_file *of = &c->res->files[c->res->nfiles];
        of->path = strdup(guest);
        of->len = sz - skip;
        of->text = buf;
        if (skip) memmove(buf, buf + 3, sz - 2);
        if (!of->path) {
            free(buf);
            break;
        }
        c->res->nfiles++;
        c->total += sz;
    }
    for (size_t i = 0; i < n; i++)
        free(names[i]);
    free(names);
    closedir(d);
}

/* Collects /数据/ and /响应/ below root. Returns the interface error text or NULL. */
static char *collect_files(const char *root, pl_result *res) {
    collect c = {.res = res};
    static const char *const dirs[] = {"数据", "响应"};
    int rfd = open(root, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (rfd < 0) return NULL;
    for (int i = 0; i < 2 && !c.fail; i++) {
        int fd = openat(rfd, dirs[i], O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0) continue;
        char guest[4096];
        int gl = snprintf(guest, sizeof guest, "/%s/", dirs[i]);
        walk(fd, guest, (size_t)gl, &c, 0);
    }
    close(rfd);
    if (!c.fail) return NULL;
    size_t n = strlen(c.fail) + strlen(c.bad_path) + 1;
    char *m = malloc(n);
    if (m) snprintf(m, n, "%s%s", c.fail, c.bad_path);
    return m;
}

/* ---------------------------------------------------------------- the run */

typedef enum end_kind {
    END_EXITED = 0,
    END_CPU,
    END_WALL,
    END_MEMORY,
    END_OUTPUT,
    END_CANCELLED,
    END_SIGNALED,
    END_SPAWN,
} end_kind;

static const char *end_name(end_kind e) {
    static const char *const n[] = {"exited",       "cpu_limit", "wall_limit", "memory_limit",
                                    "output_limit", "cancelled", "signaled",   "spawn_failed"};
    return n[e];
}

typedef struct run_io {
    char *buf[2];
    size_t len[2];
    uint64_t total, max;
    bool over;
} run_io;

static bool io_take(run_io *io, int which, int fd) {
    char tmp[65536];
    ssize_t k = read(fd, tmp, sizeof tmp);
    if (k < 0) return errno == EAGAIN || errno == EINTR;
    if (k == 0) return false;
    size_t keep = (size_t)k;
    if (io->total + keep > io->max) {
        keep = (size_t)(io->max - io->total);
        io->over = true;
    }
    if (keep) {
        char *nb = realloc(io->buf[which], io->len[which] + keep + 1);
        if (nb) {
            memcpy(nb + io->len[which], tmp, keep);
            io->buf[which] = nb;
            io->len[which] += keep;
            io->total += keep;
        }
    }
    return true;
}

typedef struct spawn_plan {
    char *const *argv;
    char *const *envp;
    const char *exe;
    const char *cwd; /* unsandboxed only */
    char procs[3][PL_CG_PATH + 16];
    size_t nprocs;
    int in_fd, out_fd, err_fd, bpf_fd;
    int etc_fd[2];       /* -> fds 4 and 5 (sandboxed runs) */
    int info_fd, blk_fd; /* -> fds 6 and 7 (network through pasta), else -1 */
    int status_fd;       /* write end (close-on-exec): a pre-exec failure's stage + errno */
    int idmap_fd;        /* >= 0: the paths below are idmapped first (idmap.c) */
    const char *const *idmap_paths;   /* host directories ... */
    const char *const *idmap_targets; /* ... mounted here (empty dirs in the scratch dir) */
    const char *const *reach_src, *const *reach_dst; /* pl__reach_apply */
    size_t nreach;
    const pl_masks *masks;        /* mounted by the child (pl__masks_apply) or NULL */
    const unsigned char *seccomp; /* unsandboxed: the filter the child installs itself */
    size_t seccomp_len;
    size_t nidmap;
    bool switch_ids;
    uid_t uid;
    gid_t gid;
    struct rlimit rl_cpu, rl_as, rl_nproc, rl_fsize, rl_nofile, rl_core;
    bool set_nproc, set_as;
} spawn_plan;

/* What a child reports on the status pipe before it gives up (parent: spawn_status). */
enum { ST_CGROUP = 1, ST_IDMAP, ST_REACH, ST_MASKS, ST_FDS, ST_IDS, ST_CHDIR, ST_SECCOMP, ST_EXEC };

static void child_fail(int fd, int stage) { /* async-signal-safe */
    int msg[2] = {stage, errno};
    if (fd >= 0 && write(fd, msg, sizeof msg) < 0) _exit(126);
    _exit(stage == ST_EXEC ? 127 : 126);
}

/* The child's body, up to its execve. It shares the parent's memory (spawn), so it only
 * makes system calls (raw ones for the id changes: glibc's setgroups/setres[ug]id would
 * signal the parent's threads to change theirs too) and writes nothing but its own
 * stack and errno. */
static int spawn_child(void *arg) {
    const spawn_plan *p = arg;
    pl__child_signals_default();
    int sfd = p->status_fd;
    char num[24];
    pb_utoa(num, (unsigned long)getpid()); /* async-signal-safe */
    for (size_t i = 0; i < p->nprocs; i++) {
        int fd = open(p->procs[i], O_WRONLY | O_CLOEXEC);
        if (fd < 0 || write(fd, num, strlen(num)) < 0) child_fail(sfd, ST_CGROUP);
        close(fd);
    }
    if (p->idmap_fd >= 0) {
        int e = pl__idmap_apply(p->idmap_fd, p->idmap_paths, p->idmap_targets, p->nidmap);
        if (e) {
            errno = e;
            child_fail(sfd, ST_IDMAP);
        }
    }
    if (p->nreach) {
        int e = pl__reach_apply(p->idmap_fd >= 0, p->reach_src, p->reach_dst, p->nreach);
        if (e) {
            errno = e;
            child_fail(sfd, ST_REACH);
        }
    }
    if (p->masks) {
        /* only in the private mount namespace made above, never on the host's */
        int e = p->idmap_fd >= 0 || p->nreach ? pl__masks_apply(p->masks) : EINVAL;
        if (e) {
            errno = e;
            child_fail(sfd, ST_MASKS);
        }
    }
    if (dup2(p->in_fd, 0) < 0 || dup2(p->out_fd, 1) < 0 || dup2(p->err_fd, 2) < 0)
        child_fail(sfd, ST_FDS);
    if (p->bpf_fd >= 0) {
        /* move the fds above 9 first so that the dup2s below cannot clobber one */
        int b = fcntl(p->bpf_fd, F_DUPFD, 10), e0 = fcntl(p->etc_fd[0], F_DUPFD, 10),
            e1 = fcntl(p->etc_fd[1], F_DUPFD, 10);
        int inf = p->info_fd >= 0 ? fcntl(p->info_fd, F_DUPFD, 10) : -1;
        int blk = p->blk_fd >= 0 ? fcntl(p->blk_fd, F_DUPFD, 10) : -1;
        int s2 = sfd >= 0 ? fcntl(sfd, F_DUPFD_CLOEXEC, 10) : -1;
        if (b < 0 || e0 < 0 || e1 < 0 || dup2(b, 3) < 0 || dup2(e0, 4) < 0 || dup2(e1, 5) < 0 ||
            (p->info_fd >= 0 && (inf < 0 || dup2(inf, 6) < 0)) ||
            (p->blk_fd >= 0 && (blk < 0 || dup2(blk, 7) < 0)) || (sfd >= 0 && s2 < 0))
            child_fail(sfd, ST_FDS);
        if (sfd >= 0) {
            if (dup3(s2, 8, O_CLOEXEC) < 0) child_fail(sfd, ST_FDS);
            sfd = 8;
        }
        syscall(SYS_close_range, 9, ~0u, 0);
        if (p->info_fd < 0) close(6);
        if (p->blk_fd < 0) close(7);
        if (sfd < 0) close(8);
    } else {
        int s2 = sfd >= 0 ? fcntl(sfd, F_DUPFD_CLOEXEC, 10) : -1;
        if (sfd >= 0 && (s2 < 0 || dup3(s2, 3, O_CLOEXEC) < 0)) child_fail(sfd, ST_FDS);
        if (sfd >= 0) sfd = 3;
        syscall(SYS_close_range, sfd >= 0 ? 4 : 3, ~0u, 0);
    }
    setrlimit(RLIMIT_CPU, &p->rl_cpu);
    if (p->set_as) setrlimit(RLIMIT_AS, &p->rl_as);
    setrlimit(RLIMIT_FSIZE, &p->rl_fsize);
    setrlimit(RLIMIT_NOFILE, &p->rl_nofile);
    setrlimit(RLIMIT_CORE, &p->rl_core);
    if (p->set_nproc) setrlimit(RLIMIT_NPROC, &p->rl_nproc);
    if (p->switch_ids) {
        if (syscall(SYS_setgroups, 0, NULL) != 0 ||
            syscall(SYS_setresgid, p->gid, p->gid, p->gid) != 0 ||
            syscall(SYS_setresuid, p->uid, p->uid, p->uid) != 0)
            child_fail(sfd, ST_IDS);
    }
    prctl(PR_SET_PDEATHSIG, SIGKILL); /* after the id change, which clears it */
    if (getppid() == 1) _exit(126);
    setpgid(0, 0);
    if (p->cwd && chdir(p->cwd) != 0) child_fail(sfd, ST_CHDIR);
    if (p->seccomp) {
        /* an unsandboxed run keeps the sandbox's system-call filter (bubblewrap
         * installs it for a sandboxed one) */
        struct sock_fprog prog = {(unsigned short)(p->seccomp_len / sizeof(struct sock_filter)),
                                  (struct sock_filter *)(uintptr_t)p->seccomp};
        if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 ||
            syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) != 0)
            child_fail(sfd, ST_SECCOMP);
    }
    execve(p->exe, p->argv, p->envp);
    child_fail(sfd, ST_EXEC);
    _exit(127);
    return 127;
}

/* Starts the child like posix_spawn does: cloned with CLONE_VM | CLONE_VFORK on a stack
 * of its own, so no page table of the caller (a large, threaded agent) is copied and no
 * page of it becomes copy-on-write; the caller's thread waits until the child has
 * exec'd or given up. Every signal is blocked around the clone, so that no handler of
 * the caller ever runs on the child (which resets them all before unblocking). */
static pid_t spawn(const spawn_plan *p) {
    enum { STACK = 256 * 1024 };
    char *stack = pl__stack_map(STACK);
    if (!stack) return -1;
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    pid_t pid = clone(spawn_child, stack + STACK, CLONE_VM | CLONE_VFORK | SIGCHLD, (void *)p);
    int e = errno;
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    pl__stack_unmap(stack, STACK); /* the child's frames never returned */
    errno = e;
    return pid;
}

/* After spawn: blocks until the child has exec'd (the status pipe closes empty) or
 * reports why it gave up (then why says so and false). */
static bool spawn_status(int rfd, char *why, size_t whylen) {
    int msg[2];
    ssize_t k;
    do
        k = read(rfd, msg, sizeof msg);
    while (k < 0 && errno == EINTR);
    if (k != (ssize_t)sizeof msg) return true;
    static const char *const what[] = {"",
                                       "cannot join the run's cgroup",
                                       ("cannot map the workspace to the run's uid (idmapped "
                                        "mount; this kernel or file system may not support it)"),
                                       "cannot make a host path reachable for the run's uid",
                                       "cannot protect the agent's control files",
                                       "cannot pass the sandbox's file descriptors",
                                       "cannot switch to the run's uid",
                                       "cannot enter the working directory",
                                       "cannot install the seccomp filter",
                                       "cannot execute"};
    int st = msg[0] >= ST_CGROUP && msg[0] <= ST_EXEC ? msg[0] : 0;
    snprintf(why, whylen, "%s: %s", what[st], strerror(msg[1]));
    return false;
}

static void add_etc(strv *a, const char *path) {
    if (access(path, F_OK) != 0) return;
    sv_add(a, "--ro-bind");
    sv_add(a, path);
    sv_add(a, path);
}

static void add_top_link(strv *a, const char *name) {
    char p[64], t[PATH_MAX];
    snprintf(p, sizeof p, "/%s", name);
    struct stat st;
    if (lstat(p, &st) != 0) return;
    if (S_ISLNK(st.st_mode)) {
        ssize_t n = readlink(p, t, sizeof t - 1);
        if (n <= 0) return;
        t[n] = 0;
        sv_add(a, "--symlink");
        sv_add(a, t);
        sv_add(a, p);
    } else if (S_ISDIR(st.st_mode)) {
        sv_add(a, "--ro-bind");
        sv_add(a, p);
        sv_add(a, p);
    }
}

/* Two pipes holding /etc/passwd and /etc/group; out[] gets their read ends. */
static bool etc_pipes(int out[2]) {
    static const char passwd[] = "root:x:0:0:root:/root:/usr/sbin/nologin\n"
                                 "user:x:1000:1000:user:/home:/bin/sh\n"
                                 "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n";
    static const char group[] = "root:x:0:\nuser:x:1000:\nnogroup:x:65534:\n";
    const char *data[2] = {passwd, group};
    size_t len[2] = {sizeof passwd - 1, sizeof group - 1};
    for (int i = 0; i < 2; i++) {
        int p[2];
        if (pipe2(p, O_CLOEXEC) != 0) return false;
        bool ok = write(p[1], data[i], len[i]) == (ssize_t)len[i];
        close(p[1]);
        if (!ok) {
            close(p[0]);
            return false;
        }
        out[i] = p[0];
    }
    return true;
}

typedef struct native_ctx {
    pl_ctx *pc;
    const pl_request *r;
    const pl_policy *pol;
    pl_cancel *cancel;
    bool unsandboxed;
    const char *decision_id, *execution_id;
    pl_result *res;
    char **evidence;
} native_ctx;

static char *native_evidence(const native_ctx *n, const char *sandbox, const char *network,
                             const pl_cgroup *cg, end_kind end, bool stop_confirmed, bool reaped,
                             bool cg_removed, bool scratch_removed, bool ws_lease, uint64_t cpu_ms,
                             long max_rss_kib, uint64_t mem_peak, unsigned uid) {
    pj_t *o = pj_object(), *pk = pj_object();
    bool ok = o && pk;
    const char *cgname = cg->mode == 2 ? "v2" : cg->mode == 1 ? "v1" : "none";
    ok = ok && !pj_object_set_new(o, "schema_version", pj_string("peri.native-lifecycle.v1")) &&
         !pj_object_set_new(o, "execution_id", pj_string(n->execution_id)) &&
         !pj_object_set_new(o, "decision", pj_string(n->decision_id)) &&
         !pj_object_set_new(o, "backend", pj_string("native_sandbox")) &&
         !pj_object_set_new(o, "sandbox", pj_string(sandbox)) &&
         !pj_object_set_new(o, "uid", pj_integer(uid)) &&
         !pj_object_set_new(o, "network", pj_string(network)) &&
         !pj_object_set_new(o, "cgroup", pj_string(cgname)) &&
         !pj_object_set_new(o, "end", pj_string(end_name(end))) &&
         !pj_object_set_new(o, "stopped",
                            pj_string(stop_confirmed ? "confirmed" : "not confirmed")) &&
         !pj_object_set_new(o, "process_tree_reaped", pj_boolean(reaped)) &&
         !pj_object_set_new(o, "cgroup_removed", pj_boolean(cg_removed)) &&
         !pj_object_set_new(o, "scratch_removed", pj_boolean(scratch_removed)) &&
         !pj_object_set_new(o, "workspace_lease", pj_string(ws_lease ? "released" : "none")) &&
         !pj_object_set_new(pk, "cpu_ms", pj_integer((pj_int_t)cpu_ms)) &&
         !pj_object_set_new(pk, "max_rss_kib", pj_integer(max_rss_kib)) &&
         !pj_object_set_new(pk, "memory_bytes", pj_integer((pj_int_t)mem_peak)) &&
         !pj_object_set(o, "peaks", pk);
    char *s = ok ? pl__json_dump(o, NULL) : NULL;
    pj_decref(pk);
    pj_decref(o);
    return s;
}

/* Lays out the scratch tree. Returns false (with *why) on failure. */
static bool layout(native_ctx *n, const char *scr, uid_t uid, gid_t gid, bool chown_them,
                   const char **prog_name, char *why, size_t whylen) {
    const pl_request *r = n->r;
    char p[PATH_MAX + 64];
    int rc = 0;
#define MK(sub, mode, own)                                                                         \
    do {                                                                                           \
        snprintf(p, sizeof p, "%s/%s", scr, sub);                                                  \
        if (mkdir(p, mode) != 0 || chmod(p, mode) != 0 || ((own) && chown(p, uid, gid) != 0))      \
            rc = -1;                                                                               \
    } while (0)
    MK("root", 0700, chown_them); /* only the run's uid may enter its tree */
    MK("root/tmp", 01777, chown_them);
    MK("root/home", 0755, chown_them);
    MK("root/数据", 0755, chown_them);
    MK("root/响应", 0755, chown_them);
    if (r->kind != PL_PROGRAM_SHELL) MK("prog", 0700, chown_them);
#undef MK
    if (rc) {
        snprintf(why, whylen, "cannot lay out the scratch directory: %s", strerror(errno));
        return false;
    }
    bool ok = true;
    *prog_name = NULL;
    if (r->kind == PL_PROGRAM_RUBY || r->kind == PL_PROGRAM_PYTHON) {
        *prog_name = r->kind == PL_PROGRAM_RUBY ? "program.rb" : "program.py";
        snprintf(p, sizeof p, "%s/prog/%s", scr, *prog_name);
        ok = ok && write_all_file(p, r->program, strlen(r->program), 0644);
    } else if (r->kind == PL_PROGRAM_WASM) {
        uint8_t *b;
        size_t len;
        if (!pl__read_file(r->program, (size_t)1 << 30, &b, &len)) {
            snprintf(why, whylen, "cannot read the WebAssembly module %.300s", r->program);
            return false;
        }
        *prog_name = "program.wasm";
        snprintf(p, sizeof p, "%s/prog/program.wasm", scr);
        ok = ok && write_all_file(p, (const char *)b, len, 0644);
        free(b);
    }
    static const char *const reserved[] = {"usr",    "bin", "sbin", "lib", "lib32", "lib64",
                                           "libx32", "etc", "proc", "dev", ".peri"};
    for (size_t i = 0; i < r->nfiles; i++) {
        const char *top = r->files[i].path + 1;
        size_t tl = strcspn(top, "/");
        for (size_t k = 0; k < sizeof reserved / sizeof reserved[0]; k++)
            if (strlen(reserved[k]) == tl && memcmp(reserved[k], top, tl) == 0) {
                snprintf(why, whylen,
                         "files: %.200s lies in a system directory of the sandbox (/%s)",
                         r->files[i].path, reserved[k]);
                return false;
            }
    }
    size_t base = strlen(scr) + 5; /* "<scr>/root" */
    for (size_t i = 0; ok && i < r->nfiles; i++) {
        snprintf(p, sizeof p, "%s/root%s", scr, r->files[i].path);
        ok = mkparents(p, uid, gid, chown_them, base) &&
             write_all_file(p, r->files[i].text, r->files[i].text_len, 0644) &&
             (!chown_them || chown(p, uid, gid) == 0);
    }
    if (!ok) snprintf(why, whylen, "cannot write the request's files: %s", strerror(errno));
    return ok;
}

/* Host paths the sandbox binds without an idmapped view, made reachable for a run with
 * a uid of its own (pl__reach_apply): each gets a mount point (a directory or an empty
 * file owned by the run's uid) in the scratch directory. No set: paths pass through. */
#define PL_REACH_MAX (PL_IDMAP_MAX + 12)
typedef struct reach_set {
    size_t n;
    const char *src[PL_REACH_MAX], *dst[PL_REACH_MAX];
    char dst_buf[PL_REACH_MAX][PATH_MAX + 32];
} reach_set;

/* Where bubblewrap should take host path `path` from: itself (no set, or missing: the
 * bind's own rules decide), or its mount point. NULL (errno) when the set is full or
 * the mount point cannot be made. */
static const char *reach(reach_set *rs, const char *scr, const char *path, uid_t uid, gid_t gid) {
    struct stat st;
    if (!rs || stat(path, &st) != 0) return path;
    if (rs->n >= PL_REACH_MAX) {
        errno = E2BIG;
        return NULL;
    }
    char *d = rs->dst_buf[rs->n];
    snprintf(d, PATH_MAX + 32, "%s/reach-%zu", scr, rs->n);
    if (S_ISDIR(st.st_mode)) {
        if (mkdir(d, 0700) != 0 || chown(d, uid, gid) != 0) return NULL;
    } else {
        int fd = open(d, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0400);
        if (fd < 0) return NULL;
        bool ok = fchown(fd, uid, gid) == 0;
        close(fd);
        if (!ok) return NULL;
    }
    rs->src[rs->n] = path;
    rs->dst[rs->n] = d;
    rs->n++;
    return d;
}

/* Where the child's bubblewrap finds host directory `path`: its idmapped view when it
 * has one, else the path itself. */
static const char *idmap_source(const char *path, const char *const *paths,
                                const char *const *targets, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (paths[i] == path) return targets[i];
    return path;
}

/* True when one absolute path is the other or lies below it (a trailing '/' ignored). */
static bool path_related(const char *a, const char *b) {
    size_t la = strlen(a), lb = strlen(b);
    while (la > 1 && a[la - 1] == '/')
        la--;
    while (lb > 1 && b[lb - 1] == '/')
        lb--;
    size_t m = la < lb ? la : lb;
    if (strncmp(a, b, m) != 0) return false;
    if (la == lb || m == 1) return true; /* equal, or one of them is "/" */
    return (la < lb ? b : a)[m] == '/';
}

static void sv_add_cb(void *a, const char *arg) {
    sv_add(a, arg);
}

/* Everything one native run holds, from its setup to its evidence; run_native's steps
 * share it. */
typedef struct run_state {
    native_ctx *n;
    pl_ctx *pc;
    const pl_request *r;
    pl_result *res;
    pl_limits lim;
    bool network, use_pasta, root, ws, switch_ids;
    char why[512];
    unsigned seq;
    uid_t uid; /* the tree's host uid and gid */
    gid_t gid;
    /* root-owned directories the run may write, seen through an idmapped mount */
    const char *idmap_paths[1 + PL_IDMAP_MAX], *idmap_targets[1 + PL_IDMAP_MAX];
    char (*idmap_tgt)[PATH_MAX + 32]; /* nidmap of them, allocated when there are any */
    size_t nidmap;
    gid_t idmap_gid;
    char scr[PATH_MAX];
    char root_dir[PATH_MAX + 8];
    const char *prog_name;
    pl_cgroup cg;
    strv cmd, argv, envp;
    int in_p[2], out_p[2], err_p[2], bpf_p[2];
    int etc_p[2];            /* read ends of the passwd and group pipes */
    int st_p[2];             /* the child's pre-exec status (spawn_status) */
    int info_p[2], blk_p[2]; /* bwrap --info-fd / --block-fd (pasta) */
    int idmap_fd;
    pl_net net;
    int pidfd;
    pid_t child;
    end_kind end;
    int exit_code;
    bool reaped, failed_setup, net_failed;
    struct rusage ru;
    run_io io;
    /* with a uid of its own the run may not reach the host paths it binds (reach) */
    reach_set *reach_p;
    pl_masks *masks;               /* the masks over the workspace's control files (masks.c) */
    bool child_masks;              /* mounted by the child (root caller) */
    const char **wviews;           /* where each writable dir is bound from (owned array) */
    const unsigned char *unsb_bpf; /* the filter an unsandboxed run installs */
    size_t unsb_bpf_len;
    int64_t t0; /* the child's start (CLOCK_MONOTONIC ms) */
} run_state;

/* The host side of the run: scratch tree, cgroup leaf, id mapping. false with S->why. */
static bool setup_host(run_state *S) {
    if (!layout(S->n, S->scr, S->uid, S->gid, S->switch_ids, &S->prog_name, S->why,
                sizeof S->why)) {
        S->failed_setup = true;
        return false;
    }
    char cgname[64];
    snprintf(cgname, sizeof cgname, "peri-%d-%u", (int)getpid(), S->seq);
    pl_limits cglim = S->lim;
    if (S->use_pasta) cglim.processes += 2; /* pasta and its short-lived helper */
    pl__cg_create(S->pc, cgname, &cglim, &S->cg);
    if (S->switch_ids && S->uid == 0) { /* an invariant: the tree never runs as host uid 0 */
        snprintf(S->why, sizeof S->why, "refusing to run the sandbox as host uid 0");
        S->failed_setup = true;
        return false;
    }
    if (S->use_pasta && access(S->pc->pasta, X_OK) != 0) {
        snprintf(S->why, sizeof S->why,
                 "network access needs pasta (Debian package passt), not found at %.200s; "
                 "install passt, or set \"host_network\": true in the policy to share the "
                 "host's network (its local services and abstract sockets become reachable)",
                 S->pc->pasta);
        S->failed_setup = true;
        return false;
    }
    if (S->nidmap &&
        !(S->switch_ids && (S->idmap_fd = pl__idmap_userns(0, S->uid, S->idmap_gid, S->gid, S->why,
                                                           sizeof S->why)) >= 0)) {
        S->failed_setup = true;
        return false;
    }
    /* The idmapped views are mounted on empty directories of the scratch directory, in
     * the child's private mount namespace only (the host, and pl__remove_tree, only ever
     * see the empty directories): the run's uid reaches them there even when a parent of
     * the workspace is closed to it (a 0700 directory of root's). */
    if (S->nidmap && !(S->idmap_tgt = malloc(S->nidmap * sizeof *S->idmap_tgt))) {
        snprintf(S->why, sizeof S->why, "out of memory");
        S->failed_setup = true;
        return false;
    }
    for (size_t i = 0; i < S->nidmap; i++) {
        snprintf(S->idmap_tgt[i], sizeof S->idmap_tgt[i], "%s/idmap-%zu", S->scr, i);
        S->idmap_targets[i] = S->idmap_tgt[i];
        if (mkdir(S->idmap_tgt[i], 0755) != 0) {
            snprintf(S->why, sizeof S->why, "cannot prepare the workspace's mount point: %s",
                     strerror(errno));
            S->failed_setup = true;
            return false;
        }
    }

    return true;
}

/* The command line of the program itself (S->cmd). false with S->why. */
static bool build_command(run_state *S) {
    /* the command */
    char progpath[PATH_MAX + 32];
    if (S->n->unsandboxed)
        snprintf(progpath, sizeof progpath, "%s/prog/%s", S->scr, S->prog_name ? S->prog_name : "");
    else
        snprintf(progpath, sizeof progpath, "/.peri/%s", S->prog_name ? S->prog_name : "");
    if (S->r->kind == PL_PROGRAM_SHELL) {
        sv_add(&S->cmd, "/bin/sh");
        sv_add(&S->cmd, "-c");
        sv_add(&S->cmd, S->r->program);
    } else if (S->r->kind == PL_PROGRAM_RUBY || S->r->kind == PL_PROGRAM_PYTHON) {
        sv_add(&S->cmd, S->r->kind == PL_PROGRAM_RUBY ? S->pc->ruby : S->pc->python);
        sv_add(&S->cmd, progpath);
    } else {
        if (!S->pc->nwasm_runner) {
            sv_free(&S->cmd);
            snprintf(
                S->why, sizeof S->why,
                "no native runner for WebAssembly programs is configured (pl_config.wasm_runner)");
            S->failed_setup = true;
            return false;
        }
        bool placed = false;
        for (size_t i = 0; i < S->pc->nwasm_runner; i++) {
            bool slot = strcmp(S->pc->wasm_runner[i], "{module}") == 0;
            sv_add(&S->cmd, slot ? progpath : S->pc->wasm_runner[i]);
            placed = placed || slot;
        }
        if (!placed) sv_add(&S->cmd, progpath);
        for (size_t i = 0; i < S->r->nargs; i++)
            sv_add(&S->cmd, S->r->args[i]);
    }

    return true;
}

/* bubblewrap's arguments around S->cmd (or the command alone, unsandboxed) into
 * S->argv; frees S->cmd. false with S->why. */
static bool build_args(run_state *S) {
    if (S->n->unsandboxed) {
        if (!(S->unsb_bpf = pl__seccomp_bpf(S->pc, S->network, &S->unsb_bpf_len))) {
            sv_free(&S->cmd);
            snprintf(S->why, sizeof S->why, "cannot build the seccomp filter");
            S->failed_setup = true;
            return false;
        }
        for (size_t i = 0; i < S->cmd.n; i++)
            sv_add(&S->argv, S->cmd.v[i]);
    } else {
        size_t bl;
        const unsigned char *bpf = pl__seccomp_bpf(S->pc, S->network, &bl);
        if (!bpf || pipe2(S->bpf_p, O_CLOEXEC) != 0 || write(S->bpf_p[1], bpf, bl) != (ssize_t)bl) {
            sv_free(&S->cmd);
            snprintf(S->why, sizeof S->why, "cannot build the seccomp filter");
            S->failed_setup = true;
            return false;
        }
        close(S->bpf_p[1]);
        S->bpf_p[1] = -1;
        char num[16];
        snprintf(num, sizeof num, "%d", INNER_UID);
        const char *fixed[] = {S->pc->bwrap,
                               "--unshare-user",
                               "--unshare-pid",
                               "--unshare-ipc",
                               "--unshare-uts",
                               "--unshare-cgroup-try",
                               "--as-pid-1",
                               "--uid",
                               num,
                               "--gid",
                               num,
                               "--disable-userns",
                               "--die-with-parent",
                               "--new-session",
                               "--hostname",
                               "sandbox",
                               "--tmpfs",
                               "/",
                               "--ro-bind",
                               "/usr",
                               "/usr"};
        for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++)
            sv_add(&S->argv, fixed[i]);
        if (!S->network || S->use_pasta) sv_add(&S->argv, "--unshare-net");
        if (S->use_pasta) {
            /* bwrap tells us the sandbox's pid (fd 6) and holds the command back until
             * pasta has connected its network namespace (fd 7) */
            static const char *const pa[] = {"--info-fd", "6", "--block-fd", "7"};
            for (size_t i = 0; i < 4; i++)
                sv_add(&S->argv, pa[i]);
            if (pipe2(S->info_p, O_CLOEXEC) != 0 || pipe2(S->blk_p, O_CLOEXEC) != 0) {
                snprintf(S->why, sizeof S->why, "pipe: %s", strerror(errno));
                S->failed_setup = true;
                return false;
            }
        }
        /* the guest's writable tree: each top-level entry of the scratch root, bound
         * at its own name (the root itself is a tmpfs, so bwrap's mount points never
         * touch the scratch directory) */
        DIR *rd = opendir(S->root_dir);
        for (struct dirent *e; rd && (e = readdir(rd));) {
            if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
            char src[2 * PATH_MAX], dst[NAME_MAX + 2];
            snprintf(src, sizeof src, "%s/%s", S->root_dir, e->d_name);
            snprintf(dst, sizeof dst, "/%s", e->d_name);
            sv_add(&S->argv, "--bind");
            sv_add(&S->argv, src);
            sv_add(&S->argv, dst);
        }
        if (rd) closedir(rd);
        static const char *const tops[] = {"bin", "sbin", "lib", "lib32", "lib64", "libx32"};
        for (size_t i = 0; i < 6; i++)
            add_top_link(&S->argv, tops[i]);
        char p[PATH_MAX + 32];
        /* /etc/passwd and /etc/group: copied by bwrap from pipes (fds 4, 5) */
        static const char *const etcfiles[] = {"--perms", "0444", "--file", "4", "/etc/passwd",
                                               "--perms", "0444", "--file", "5", "/etc/group"};
        for (size_t i = 0; i < 10; i++)
            sv_add(&S->argv, etcfiles[i]);
        if (!etc_pipes(S->etc_p)) {
            snprintf(S->why, sizeof S->why, "cannot pass /etc files: %s", strerror(errno));
            S->failed_setup = true;
            return false;
        }
        static const char *const etc[] = {"/etc/ld.so.cache",  "/etc/ld.so.conf",
                                          "/etc/ld.so.conf.d", "/etc/alternatives",
                                          "/etc/localtime",    "/etc/nsswitch.conf"};
        for (size_t i = 0; i < 6; i++)
            add_etc(&S->argv, etc[i]);
        if (S->network) {
            /* with pasta, the resolver is pasta's forwarded DNS address */
            static const char *const netf[] = {"/etc/hosts", "/etc/gai.conf", "/etc/ssl",
                                               "/etc/ca-certificates", "/etc/resolv.conf"};
            for (size_t i = 0; i < (S->use_pasta ? 4u : 5u); i++)
                add_etc(&S->argv, netf[i]);
            if (S->use_pasta) {
                const char *rc = pl__net_resolv_conf();
                snprintf(p, sizeof p, "%s/resolv.conf", S->scr);
                if (!write_all_file(p, rc, strlen(rc), 0644)) {
                    snprintf(S->why, sizeof S->why, "cannot write resolv.conf: %s",
                             strerror(errno));
                    S->failed_setup = true;
                    return false;
                }
                sv_add(&S->argv, "--ro-bind");
                sv_add(&S->argv, p);
                sv_add(&S->argv, "/etc/resolv.conf");
            }
        }
        sv_add(&S->argv, "--proc");
        sv_add(&S->argv, "/proc");
        sv_add(&S->argv, "--dev");
        sv_add(&S->argv, "/dev");
        if (S->prog_name) {
            snprintf(p, sizeof p, "%s/prog", S->scr);
            sv_add(&S->argv, "--ro-bind");
            sv_add(&S->argv, p);
            sv_add(&S->argv, "/.peri");
        }
        /* the runner's binaries (absolute paths outside /usr), read-only at their paths */
        const char *from;
        bool reached = true;
        for (size_t i = 0; S->r->kind == PL_PROGRAM_WASM && i < S->pc->nwasm_runner; i++) {
            const char *a = S->pc->wasm_runner[i];
            struct stat rs;
            if (a[0] == '/' && strncmp(a, "/usr/", 5) != 0 && stat(a, &rs) == 0 &&
                S_ISREG(rs.st_mode) &&
                (reached = (from = reach(S->reach_p, S->scr, a, S->uid, S->gid)))) {
                sv_add(&S->argv, "--ro-bind");
                sv_add(&S->argv, from);
                sv_add(&S->argv, a);
            }
        }
        if (reached && S->r->kind == PL_PROGRAM_RUBY && strncmp(S->pc->ruby, "/usr/", 5) != 0 &&
            access(S->pc->ruby, F_OK) == 0 &&
            (reached = (from = reach(S->reach_p, S->scr, S->pc->ruby, S->uid, S->gid)))) {
            sv_add(&S->argv, "--ro-bind");
            sv_add(&S->argv, from);
            sv_add(&S->argv, S->pc->ruby);
        }
        /* a directory without an idmapped view is reached like the runner */
        const char *ws_from =
            S->ws ? idmap_source(S->r->workspace, S->idmap_paths, S->idmap_targets, S->nidmap)
                  : NULL;
        if (reached && S->ws && ws_from == S->r->workspace)
            reached =
                (ws_from = reach(S->reach_p, S->scr, S->r->workspace, S->uid, S->gid)) != NULL;
        if (!reached) {
            snprintf(S->why, sizeof S->why, "cannot prepare a host path for the run's uid: %s",
                     strerror(errno));
            S->failed_setup = true;
            return false;
        }
        if (S->ws) {
            /* the agent's control files stay read-only (masks.c): a root caller's child
             * mounts them on the workspace's view (one recursive bind carries them),
             * any other run has bubblewrap mount them after the workspace's bind */
            S->child_masks = S->switch_ids && ws_from != S->r->workspace;
            if (!pl__masks_plan(S->pc, S->masks, S->r->workspace, ws_from,
                                S->child_masks ? ws_from : S->r->workspace, S->child_masks, S->why,
                                sizeof S->why)) {
                S->failed_setup = true;
                return false;
            }
            /* the host's own directories inside the workspace (protect.c), after its
             * masks */
            if (!pl__protect_plan(S->masks, S->n->pol, S->r->workspace, ws_from, S->child_masks,
                                  S->why, sizeof S->why)) {
                S->failed_setup = true;
                return false;
            }
            size_t n_ws = S->masks->nmnt;
            /* an idmapped directory is bound from its view in the scratch directory; the
             * policy's writable dirs first, so that one around the workspace cannot
             * cover the workspace's bind and its masks */
            size_t nw = S->n->pol ? S->n->pol->nwritable : 0;
            if (nw && !(S->wviews = calloc(nw, sizeof *S->wviews))) {
                snprintf(S->why, sizeof S->why, "out of memory");
                S->failed_setup = true;
                return false;
            }
            for (size_t i = 0; i < nw; i++) {
                const char *w = S->n->pol->writable[i];
                const char *wf = idmap_source(w, S->idmap_paths, S->idmap_targets, S->nidmap);
                if (wf == w && !(wf = reach(S->reach_p, S->scr, w, S->uid, S->gid))) {
                    snprintf(S->why, sizeof S->why, "cannot prepare %s for the run's uid: %s", w,
                             strerror(errno));
                    S->failed_setup = true;
                    return false;
                }
                S->wviews[i] = wf;
                sv_add(&S->argv, "--bind-try");
                sv_add(&S->argv, wf);
                sv_add(&S->argv, w);
            }
            /* ... and the host's own directories inside them, before the workspace's bind
             * (a parent pinned from its host path must not cover the workspace's masks);
             * a writable dir that bubblewrap will not bind (missing) is skipped */
            for (size_t i = 0; i < nw; i++)
                if (!pl__protect_plan(S->masks, S->n->pol, S->n->pol->writable[i], S->wviews[i],
                                      S->child_masks, S->why, sizeof S->why)) {
                    S->failed_setup = true;
                    return false;
                }
            if (!S->child_masks)
                pl__masks_args(S->masks, n_ws, S->masks->nmnt, sv_add_cb, &S->argv);
            sv_add(&S->argv, "--bind");
            sv_add(&S->argv, ws_from);
            sv_add(&S->argv, S->r->workspace);
            if (!S->child_masks) pl__masks_args(S->masks, 0, n_ws, sv_add_cb, &S->argv);
            char home[PATH_MAX + 16];
            snprintf(home, sizeof home, "%s/home", S->root_dir);
            if (!pl__masks_git_ignore(S->masks, home, S->uid, S->gid, S->switch_ids)) {
                snprintf(S->why, sizeof S->why, "cannot write the sandbox's git excludes: %s",
                         strerror(errno));
                S->failed_setup = true;
                return false;
            }
        }
        sv_add(&S->argv, "--chdir");
        sv_add(&S->argv, S->ws ? S->r->workspace : "/home");
        sv_add(&S->argv, "--clearenv");
        static const char *const env[] = {
            "PATH", "/usr/local/bin:/usr/bin:/bin", "HOME", "/home", "LANG", "C.UTF-8", "TMPDIR",
            "/tmp"};
        for (size_t i = 0; i < 8; i += 2) {
            sv_add(&S->argv, "--setenv");
            sv_add(&S->argv, env[i]);
            sv_add(&S->argv, env[i + 1]);
        }
        sv_add(&S->argv, "--seccomp");
        sv_add(&S->argv, "3");
        sv_add(&S->argv, "--");
        if (!S->root && access("/usr/bin/prlimit", X_OK) == 0) {
            char np[48];
            snprintf(np, sizeof np, "--nproc=%u", S->lim.processes + 1);
            sv_add(&S->argv, "/usr/bin/prlimit");
            sv_add(&S->argv, np);
            sv_add(&S->argv, "--");
        }
        for (size_t i = 0; i < S->cmd.n; i++)
            sv_add(&S->argv, S->cmd.v[i]);
    }
    sv_free(&S->cmd);
    return true;
}

/* The environment, the pipes, the fork; true once the child has exec'd. false with
 * S->why (the child, if any, reaped). */
static bool start_child(run_state *S) {
    if (S->n->unsandboxed) {
        sv_add(&S->envp, "PATH=/usr/local/bin:/usr/bin:/bin");
        char h[2 * PATH_MAX];
        snprintf(h, sizeof h, "HOME=%s/home", S->root_dir);
        sv_add(&S->envp, h);
        sv_add(&S->envp, "LANG=C.UTF-8");
    } else {
        sv_add(&S->envp, "LANG=C.UTF-8");
    }
    if (S->argv.oom || S->envp.oom || !S->argv.v || !S->envp.v) {
        snprintf(S->why, sizeof S->why, "out of memory");
        S->failed_setup = true;
        return false;
    }
    /* stdin is a socket so that writing to a closed reader gives EPIPE via
     * MSG_NOSIGNAL instead of SIGPIPE (no process-wide signal disposition changes) */
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, S->in_p) || pipe2(S->out_p, O_CLOEXEC) ||
        pipe2(S->err_p, O_CLOEXEC) || pipe2(S->st_p, O_CLOEXEC)) {
        snprintf(S->why, sizeof S->why, "pipe: %s", strerror(errno));
        S->failed_setup = true;
        return false;
    }
    spawn_plan sp = {
        .argv = S->argv.v,
        .envp = S->envp.v,
        .exe = S->argv.v[0],
        .cwd = S->n->unsandboxed ? (S->ws ? idmap_source(S->r->workspace, S->idmap_paths,
                                                         S->idmap_targets, S->nidmap)
                                          : S->root_dir)
                                 : NULL,
        .in_fd = S->in_p[0],
        .out_fd = S->out_p[1],
        .err_fd = S->err_p[1],
        .bpf_fd = S->bpf_p[0],
        .etc_fd = {S->etc_p[0], S->etc_p[1]},
        .info_fd = S->info_p[1],
        .blk_fd = S->blk_p[0],
        .status_fd = S->st_p[1],
        .idmap_fd = S->idmap_fd,
        .idmap_paths = S->idmap_paths,
        .idmap_targets = S->idmap_targets,
        .reach_src = S->reach_p ? S->reach_p->src : NULL,
        .reach_dst = S->reach_p ? S->reach_p->dst : NULL,
        .nreach = S->reach_p ? S->reach_p->n : 0,
        .masks = S->child_masks ? S->masks : NULL,
        .seccomp = S->unsb_bpf,
        .seccomp_len = S->unsb_bpf_len,
        .nidmap = S->nidmap,
        .switch_ids = S->switch_ids,
        .uid = S->uid,
        .gid = S->gid,
    };
    sp.nprocs = pl__cg_procs_paths(&S->cg, sp.procs);
    rlim_t cpu_s = (S->lim.cpu_ms + 999) / 1000 + 1;
    sp.rl_cpu = (struct rlimit){cpu_s, cpu_s + 1};
    rlim_t as = ((rlim_t)S->lim.memory_mib << 20) + ((rlim_t)64 << 20);
    sp.rl_as = (struct rlimit){as, as};
    /* The address-space limit is only the fallback for the memory limit: with a memory
     * cgroup it would only break runtimes that reserve address space (ASan, Go, JVMs). */
    sp.set_as = S->cg.mode == 0;
    sp.rl_fsize = (struct rlimit){(rlim_t)1 << 30, (rlim_t)1 << 30};
    sp.rl_nofile = (struct rlimit){256, 256};
    sp.rl_core = (struct rlimit){0, 0};
    /* RLIMIT_NPROC counts the processes of a uid. Set before bwrap only when the run
     * has a uid of its own (root caller); root itself is exempt (the cgroup holds it);
     * a non-root caller gets it inside the new user namespace (prlimit, see above),
     * where it counts only the run's processes. */
    sp.set_nproc = S->switch_ids;
    rlim_t nproc =
        S->lim.processes + 2 + (S->use_pasta && S->root ? 2 : 0); /* pasta runs as the uid */
    sp.rl_nproc = (struct rlimit){nproc, nproc};
    S->t0 = now_ms();
    S->child = spawn(&sp);
    if (S->child < 0) {
        snprintf(S->why, sizeof S->why, "fork: %s", strerror(errno));
        S->failed_setup = true;
        return false;
    }
    close(S->in_p[0]);
    close(S->out_p[1]);
    close(S->err_p[1]);
    S->in_p[0] = S->out_p[1] = S->err_p[1] = -1;
    if (S->bpf_p[0] >= 0) close(S->bpf_p[0]);
    S->bpf_p[0] = -1;
    for (int i = 0; i < 2; i++)
        if (S->etc_p[i] >= 0) close(S->etc_p[i]);
    S->etc_p[0] = S->etc_p[1] = -1;
    int fds_child[] = {S->st_p[1], S->info_p[1], S->blk_p[0]};
    for (size_t i = 0; i < 3; i++)
        if (fds_child[i] >= 0) close(fds_child[i]);
    S->st_p[1] = S->info_p[1] = S->blk_p[0] = -1;
    if (!spawn_status(S->st_p[0], S->why, sizeof S->why)) {
        /* the child gave up before exec: nothing of the command ran */
        int st;
        if (wait4(S->child, &st, 0, &S->ru) == S->child) S->reaped = true;
        S->failed_setup = true;
        return false;
    }
    return true;
}

/* From the child's exec to its reap: pasta, stdin, output, limits, cancel. */
static void supervise(run_state *S) {
    S->pidfd = (int)syscall(SYS_pidfd_open, S->child, 0);
    int cfd = S->n->cancel ? S->n->cancel->efd : -1;
    bool killed = false;
    int64_t kill_by = 0;
    if (S->use_pasta) {
        /* connect the sandbox's network namespace, then let the command start; a cancel
         * or the wall limit meanwhile is handled by the loop below like any other */
        pid_t target = pl__net_read_child_pid(S->info_p[0], S->t0 + S->lim.wall_ms, cfd);
        int w = 0;
        if (target > 0)
            w = pl__net_start(S->pc, &S->net, target, &S->cg, S->root, S->uid, S->gid, S->scr,
                              S->why, sizeof S->why)
                    ? pl__net_wait(&S->net, S->t0 + S->lim.wall_ms, cfd, S->why, sizeof S->why)
                    : -1;
        if (w == 1 && write(S->blk_p[1], "x", 1) != 1) {
            snprintf(S->why, sizeof S->why, "network: cannot release the command: %s",
                     strerror(errno));
            w = -1;
        }
        if (w == -1) { /* the command never ran: end the tree, report the setup failure */
            S->net_failed = killed = true;
            kill_by = now_ms() + 300;
            pl__net_stop(&S->net);
            /* bubblewrap's child (the sandbox's pid 1, still held on the block fd) first:
             * killed alone, the outer bubblewrap would leave it to die later of its
             * parent-death signal, after this run was reported over; killed first, the
             * outer one reaps it and exits. Through a pidfd: the pid cannot be reused
             * while the fd is open. */
            int tfd = target > 0 ? (int)syscall(SYS_pidfd_open, target, 0) : -1;
            if (tfd >= 0) {
                (void)syscall(SYS_pidfd_send_signal, tfd, SIGKILL, NULL, 0);
                close(tfd);
            }
            if (!S->cg.mode || pl__cg_signal_all(&S->cg, S->child) <= 0) kill(S->child, SIGKILL);
        }
    }
    fcntl(S->out_p[0], F_SETFL, O_NONBLOCK);
    fcntl(S->err_p[0], F_SETFL, O_NONBLOCK);
    fcntl(S->in_p[1], F_SETFL, O_NONBLOCK);
    size_t in_off = 0;
    if (!S->r->stdin_len) {
        close(S->in_p[1]);
        S->in_p[1] = -1;
    }
    if (S->in_p[1] >= 0) shutdown(S->in_p[1], SHUT_RD);

    bool out_open = true, err_open = true;
    int64_t wall_end = S->t0 + S->lim.wall_ms, drain_end = 0;
    bool use_cpu = pl__cg_has_cpu(&S->cg);
    while (out_open || err_open || !S->reaped) {
        struct pollfd fds[5];
        int nf = 0, i_out = -1, i_err = -1, i_in = -1, i_pid = -1, i_can = -1;
        if (out_open) fds[i_out = nf++] = (struct pollfd){S->out_p[0], POLLIN, 0};
        if (err_open) fds[i_err = nf++] = (struct pollfd){S->err_p[0], POLLIN, 0};
        if (S->in_p[1] >= 0) fds[i_in = nf++] = (struct pollfd){S->in_p[1], POLLOUT, 0};
        if (!S->reaped && S->pidfd >= 0) fds[i_pid = nf++] = (struct pollfd){S->pidfd, POLLIN, 0};
        if (!killed && cfd >= 0) fds[i_can = nf++] = (struct pollfd){cfd, POLLIN, 0};
        int64_t now = now_ms();
        int64_t tmo = killed ? 20 : wall_end - now;
        if (S->reaped && !drain_end) drain_end = now + 1000;
        if (drain_end) tmo = drain_end - now;
        if (!killed && use_cpu && tmo > POLL_CPU_MS) tmo = POLL_CPU_MS;
        if (S->pidfd < 0 && !S->reaped && tmo > 10) tmo = 10;
        if (tmo < 0) tmo = 0;
        int pr = poll(fds, (nfds_t)nf, (int)tmo);
        if (pr < 0 && errno != EINTR) break;
        if (pr > 0) {
            if (i_out >= 0 && fds[i_out].revents && !io_take(&S->io, 0, S->out_p[0]))
                out_open = false;
            if (i_err >= 0 && fds[i_err].revents && !io_take(&S->io, 1, S->err_p[0]))
                err_open = false;
            if (i_in >= 0 && fds[i_in].revents) {
                ssize_t k = send(S->in_p[1], S->r->stdin_data + in_off, S->r->stdin_len - in_off,
                                 MSG_NOSIGNAL | MSG_DONTWAIT);
                if (k > 0) in_off += (size_t)k;
                if ((k < 0 && errno != EAGAIN) || in_off >= S->r->stdin_len) {
                    shutdown(S->in_p[1], SHUT_WR);
                    close(S->in_p[1]);
                    S->in_p[1] = -1;
                }
            }
        }
        if (!killed) {
            end_kind stop = END_EXITED;
            if (S->io.over)
                stop = END_OUTPUT;
            else if (pl_cancel_triggered(S->n->cancel))
                stop = END_CANCELLED;
            else if (use_cpu && pl__cg_cpu_ns(&S->cg) >= (uint64_t)S->lim.cpu_ms * 1000000u)
                stop = END_CPU;
            else if (now_ms() >= wall_end && !S->reaped)
                stop = END_WALL;
            if (stop != END_EXITED) {
                /* Kill the tree below the outer bwrap first, so that it reaps its child
                 * (PID 1 of the namespace) and exits itself: no zombie is left to init. */
                S->end = stop;
                killed = true;
                kill_by = now_ms() + 300;
                pl__net_stop(&S->net);
                if (!S->cg.mode || pl__cg_signal_all(&S->cg, S->child) <= 0)
                    kill(S->child, SIGKILL);
            }
        } else if (!S->reaped) {
            if (S->cg.mode) pl__cg_signal_all(&S->cg, S->child);
            if (now_ms() >= kill_by) kill(S->child, SIGKILL);
        }
        if (!S->reaped) {
            int st;
            pid_t w = wait4(S->child, &st, WNOHANG, &S->ru);
            if (w < 0 && errno == ECHILD) {
                /* the application ignores SIGCHLD: the kernel reaped it, status lost */
                S->reaped = true;
                if (S->cg.mode && !pl__cg_empty(&S->cg)) pl__cg_kill_all(&S->cg);
            } else if (w == S->child) {
                S->reaped = true;
                pl__net_stop(&S->net); /* the namespace's last process is gone */
                if (WIFEXITED(st))
                    S->exit_code = WEXITSTATUS(st);
                else if (WIFSIGNALED(st)) {
                    S->exit_code = 128 + WTERMSIG(st);
                    if (!killed) S->end = END_SIGNALED;
                }
                if (S->cg.mode && !pl__cg_empty(&S->cg)) pl__cg_kill_all(&S->cg);
            }
        }
        if (drain_end && now_ms() >= drain_end) {
            /* a process kept the pipes open after the run ended: end it */
            if (S->cg.mode) pl__cg_kill_all(&S->cg);
            break;
        }
    }
    if (!S->reaped) {
        kill(S->child, SIGKILL);
        int st;
        if (wait4(S->child, &st, 0, &S->ru) == S->child) S->reaped = true;
    }
}

/* Stops what is left, removes the cgroup and the scratch tree, fills the result and the
 * evidence. false only on a host error. */
static bool finish(run_state *S, pl_error *err) {
    char *file_err = NULL;
    pl__net_stop(&S->net);
    if (S->net_failed) { /* the command never ran */
        S->failed_setup = true;
        S->exit_code = -1;
    }
    bool tree_gone = S->reaped;
    bool cg_removed = true;
    uint64_t mem_peak = 0, cpu_ns = 0;
    bool oom = false;
    if (S->cg.mode) {
        tree_gone = S->reaped && (pl__cg_empty(&S->cg) || pl__cg_kill_all(&S->cg));
        cpu_ns = pl__cg_cpu_ns(&S->cg);
        pl__cg_peaks(&S->cg, &mem_peak, &oom);
        cg_removed = pl__cg_remove(&S->cg);
    }
    if (!cpu_ns)
        cpu_ns = ((uint64_t)(S->ru.ru_utime.tv_sec + S->ru.ru_stime.tv_sec) * 1000000u +
                  (uint64_t)(S->ru.ru_utime.tv_usec + S->ru.ru_stime.tv_usec)) *
                 1000u;
    for (int i = 0; i < 2; i++) {
        if ((i ? S->bpf_p : S->in_p)[0] >= 0) close((i ? S->bpf_p : S->in_p)[0]);
        if ((i ? S->bpf_p : S->in_p)[1] >= 0) close((i ? S->bpf_p : S->in_p)[1]);
    }
    int fds_to_close[] = {S->out_p[0],  S->out_p[1], S->err_p[0], S->err_p[1], S->pidfd,
                          S->etc_p[0],  S->etc_p[1], S->st_p[0],  S->st_p[1],  S->info_p[0],
                          S->info_p[1], S->blk_p[0], S->blk_p[1], S->idmap_fd};
    for (size_t i = 0; i < sizeof fds_to_close / sizeof *fds_to_close; i++)
        if (fds_to_close[i] >= 0) close(fds_to_close[i]);
    if (S->masks) pl__masks_release(S->pc, S->masks);
    free(S->masks);
    free(S->reach_p);
    if (!S->failed_setup) file_err = collect_files(S->root_dir, S->res);
    bool scratch_removed = pl__remove_tree(S->scr);
    sv_free(&S->cmd);
    sv_free(&S->argv);
    sv_free(&S->envp);

    if (!S->failed_setup && S->end == END_EXITED && S->exit_code == 128 + SIGKILL && oom)
        S->end = END_MEMORY;
    if (!S->failed_setup && (S->end == END_EXITED || S->end == END_SIGNALED) && oom &&
        S->exit_code != 0)
        S->end = END_MEMORY;
    if (!S->failed_setup && (S->end == END_EXITED || S->end == END_SIGNALED) &&
        (S->exit_code == 128 + SIGXCPU || S->exit_code == 128 + SIGKILL) &&
        cpu_ns >= (uint64_t)S->lim.cpu_ms * 1000000u)
        S->end = END_CPU;
    S->res->stdout_text =
        pl__utf8_lenient(S->io.buf[0] ? S->io.buf[0] : "", S->io.len[0], &S->res->stdout_len);
    S->res->stderr_text =
        pl__utf8_lenient(S->io.buf[1] ? S->io.buf[1] : "", S->io.len[1], &S->res->stderr_len);
    free(S->io.buf[0]);
    free(S->io.buf[1]);
    S->res->exit_code = S->exit_code;
    char msg[640];
    msg[0] = 0;
    if (S->failed_setup)
        snprintf(msg, sizeof msg, "native sandbox: %s", S->why);
    else if (S->end == END_CPU)
        snprintf(msg, sizeof msg, "CPU time over %u ms", S->lim.cpu_ms);
    else if (S->end == END_WALL)
        snprintf(msg, sizeof msg, "run time over %u ms", S->lim.wall_ms);
    else if (S->end == END_MEMORY)
        snprintf(msg, sizeof msg, "memory over %u MiB", S->lim.memory_mib);
    else if (S->end == END_OUTPUT)
        snprintf(msg, sizeof msg, "output over %llu bytes",
                 (unsigned long long)S->lim.output_bytes);
    else if (S->end == END_CANCELLED)
        snprintf(msg, sizeof msg, "cancelled");
    else if (S->end == END_SIGNALED)
        snprintf(msg, sizeof msg, "killed by signal %d", S->exit_code - 128);
    else if (file_err)
        snprintf(msg, sizeof msg, "%s", file_err);
    else if (!tree_gone)
        snprintf(msg, sizeof msg, "the process tree could not be confirmed stopped");
    free(file_err);
    S->res->ok = !msg[0] && S->exit_code == 0;
    S->res->has_limits = true;
    S->res->limits = S->lim;
    S->res->stop = S->end == END_CPU         ? PL_STOP_CPU
                   : S->end == END_WALL      ? PL_STOP_WALL
                   : S->end == END_MEMORY    ? PL_STOP_MEMORY
                   : S->end == END_OUTPUT    ? PL_STOP_OUTPUT
                   : S->end == END_CANCELLED ? PL_STOP_CANCELLED
                                             : PL_STOP_NONE;
    if (S->failed_setup) S->res->stop = PL_STOP_NONE;
    if (msg[0] && !(S->res->error = strdup(msg)))
        return pl__fail(err, PL_ERR_HOST, "out of memory");
    if (!S->res->stdout_text || !S->res->stderr_text)
        return pl__fail(err, PL_ERR_HOST, "out of memory");
    if (S->n->evidence)
        *S->n->evidence = native_evidence(
            S->n, S->n->unsandboxed ? "none" : "bubblewrap",
            !S->network     ? "none"
            : !S->use_pasta ? "host"
                            : "pasta",
            &S->cg, S->failed_setup ? END_SPAWN : S->end, tree_gone, tree_gone, cg_removed,
            scratch_removed, S->ws, cpu_ns / 1000000u, S->ru.ru_maxrss, mem_peak, (unsigned)S->uid);
    return true;
}

/* Identity: the tree's uid and gid, and the root-owned directories it sees idmapped.
 * false when the run cannot start (the result says why). */
static bool plan_identity(run_state *S) {
    const pl_request *r = S->r;
    const pl_policy *pol = S->n->pol;
    S->uid = getuid();
    S->gid = getgid();
    if (!S->root) return true;
    /* never host uid 0: a fresh unprivileged uid, or the workspace's owner */
    S->uid = S->gid = UID_BASE + ((unsigned)getpid() * 977u + S->seq) % UID_RANGE;
    if (!S->ws) return true;
    struct stat st;
    if (stat(r->workspace, &st) != 0 || !S_ISDIR(st.st_mode)) {
        pl__result_fail(S->res, "workspace: not a directory");
        if (S->n->evidence) *S->n->evidence = NULL;
        return false;
    }
    if (st.st_uid != 0) {
        S->uid = st.st_uid;
        S->gid = st.st_gid;
    } else {
        S->idmap_paths[S->nidmap++] = r->workspace;
        S->idmap_gid = st.st_gid;
    }
    /* the policy's writable dirs that root owns, too (past PL_IDMAP_MAX they stay
     * read-only for the run) */
    for (size_t i = 0; S->nidmap && pol && i < pol->nwritable && S->nidmap < 1 + PL_IDMAP_MAX;
         i++) {
        struct stat wst;
        bool nested = false; /* inside or around one already mapped: leave it */
        for (size_t k = 0; k < S->nidmap; k++)
            nested = nested || path_related(S->idmap_paths[k], pol->writable[i]);
        if (!nested && stat(pol->writable[i], &wst) == 0 && S_ISDIR(wst.st_mode) && wst.st_uid == 0)
            S->idmap_paths[S->nidmap++] = pol->writable[i];
    }
    return true;
}

/* One native run in steps; S is zeroed. */
static bool run_steps(run_state *S, native_ctx *n, pl_error *err) {
    pl_ctx *pc = n->pc;
    const pl_request *r = n->r;
    S->n = n;
    S->pc = pc;
    S->r = r;
    S->res = n->res;
    S->lim = pl__limits_effective(&r->limits);
    S->network = r->network && n->pol && n->pol->network_allowed;
    /* a namespace of its own connected by pasta, unless the policy explicitly shares
     * the host's (or the run is unsandboxed, which has no namespaces at all) */
    S->use_pasta = S->network && !n->pol->host_network && !n->unsandboxed;
    S->root = geteuid() == 0;
    S->ws = r->state_class == PL_STATE_NATIVE_WORKSPACE_REF && r->workspace;
    S->seq = atomic_fetch_add(&pc->seq, 1);
    if (!plan_identity(S)) return true;
    S->switch_ids = S->root;
    struct stat rs;
    if (S->switch_ids && stat(pc->scratch_root, &rs) == 0 && !(rs.st_mode & S_IXOTH))
        return pl__fail(err, PL_ERR_HOST,
                        "scratch directory %s cannot be entered by other users (mode %03o); "
                        "use mode 0711 or 0755: the sandbox runs as its own uid",
                        pc->scratch_root, (unsigned)(rs.st_mode & 0777));
    /* the owner's pid in the name: a later context reclaims it if this process dies
     * before cleanup (pl__reclaim_stale) */
    snprintf(S->scr, sizeof S->scr, "%s/peri-sbx-%d-XXXXXX", pc->scratch_root, (int)getpid());
    if (!mkdtemp(S->scr))
        return pl__fail(err, PL_ERR_HOST, "scratch directory: %s", strerror(errno));
    chmod(S->scr, 0711);
    S->cg.cpu_fd = -1;
    int *fds[] = {S->in_p, S->out_p, S->err_p, S->bpf_p, S->etc_p, S->st_p, S->info_p, S->blk_p};
    for (size_t i = 0; i < sizeof fds / sizeof *fds; i++)
        fds[i][0] = fds[i][1] = -1;
    S->idmap_fd = S->pidfd = -1;
    pl__net_init(&S->net);
    S->child = -1;
    S->end = END_EXITED;
    S->exit_code = -1;
    S->io.max = S->lim.output_bytes;
    snprintf(S->root_dir, sizeof S->root_dir, "%s/root", S->scr);
    S->reach_p = S->switch_ids && !n->unsandboxed ? calloc(1, sizeof *S->reach_p) : NULL;
    S->masks = S->ws && !n->unsandboxed ? calloc(1, sizeof *S->masks) : NULL;
    if (S->masks) S->masks->lock_fd = -1;
    if ((S->switch_ids && !n->unsandboxed && !S->reach_p) ||
        (S->ws && !n->unsandboxed && !S->masks)) {
        snprintf(S->why, sizeof S->why, "out of memory");
        S->failed_setup = true;
    } else if (!setup_host(S) || !build_command(S) || !build_args(S) || !start_child(S)) {
        S->failed_setup = true;
    } else {
        supervise(S);
    }
    return finish(S, err);
}

static bool run_native(native_ctx *n, pl_error *err) {
    run_state *S = calloc(1, sizeof *S);
    if (!S) return pl__fail(err, PL_ERR_HOST, "out of memory");
    bool ok = run_steps(S, n, err);
    free(S->idmap_tgt);
    free(S->wviews);
    free(S);
    return ok;
}

bool pl__native_attempt(pl_ctx *pc, const pl_request *r, const pl_policy *pol, pl_cancel *cancel,
                        pl_attempt *at, pl_error *err) {
    native_ctx n = {pc,
                    r,
                    pol,
                    cancel,
                    at->dec->unsandboxed,
                    at->dec->identity,
                    at->execution_id,
                    at->res,
                    at->evidence};
    if (!run_native(&n, err)) return false;
    return pl__result_finish(at->res, at->dec) || pl__fail(err, PL_ERR_HOST, "out of memory");
}

bool pl_native_available(pl_ctx *pc, char *why, size_t why_len) {
    pthread_mutex_lock(&pc->mu);
    int state = pc->probe;
    pthread_mutex_unlock(&pc->mu);
    if (state == 0) {
        char msg[256] = "";
        if (access(pc->bwrap, X_OK) != 0) {
            snprintf(msg, sizeof msg, "bubblewrap not found at %s", pc->bwrap);
        } else {
            pl_request q = {.run_id = "probe", .kind = PL_PROGRAM_SHELL, .program = "exit 0"};
            pl_result res;
            pl__result_init(&res);
            pl_error e = {0};
            native_ctx n = {pc, &q, NULL, NULL, false, "", "probe", &res, NULL};
            if (!run_native(&n, &e))
                snprintf(msg, sizeof msg, "%.200s", e.message);
            else if (!res.ok)
                snprintf(msg, sizeof msg,
                         "the sandbox does not start (user namespaces?): exit %d: %.150s",
                         res.exit_code, res.error ? res.error : res.stderr_text);
            pl__result_clear(&res);
        }
        pthread_mutex_lock(&pc->mu);
        pc->probe = msg[0] ? -1 : 1;
        snprintf(pc->probe_why, sizeof pc->probe_why, "%s", msg);
        state = pc->probe;
        pthread_mutex_unlock(&pc->mu);
    }
    if (why && why_len) {
        pthread_mutex_lock(&pc->mu);
        snprintf(why, why_len, "%s", pc->probe_why);
        pthread_mutex_unlock(&pc->mu);
    }
    return state == 1;
}
