/*
 * capability_lease.c — pr_cap_lease_handle: a capability handler (room.h) for a host
 * that leases one workspace directory to a run. file.read and file.write work on paths
 * resolved beneath the lease's directory descriptor with openat2(RESOLVE_BENEATH |
 * RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS): no absolute path, no "..", no symlink
 * can leave it; file.write also needs the lease's write right. http.fetch is refused
 * unless the session's network policy allows it, and then fails: the room has no HTTP
 * client of its own (a host with one handles the operation before delegating here).
 *
 * Invariants: nothing is opened outside the lease; without openat2 every file
 * operation fails closed; a write counts as committed from the moment the file was
 * opened for writing (truncation is already an effect).
 */
#include "room_int.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

static bool is(const pr_str *s, const char *w) {
    return s->len == strlen(w) && memcmp(s->ptr, w, s->len) == 0;
}

static pr_cap_status say(pb_buf *reply, pr_cap_status st, const char *fmt, const char *a,
                         const char *b) {
    char msg[512];
    snprintf(msg, sizeof msg, fmt, a, b);
    pb_buf_puts(reply, msg);
    return st;
}

/* Opens path beneath dir (flags as open); -1 with errno. */
static int open_beneath(int dir, const char *path, int flags) {
#ifdef SYS_openat2
    struct open_how how = {.flags = (uint64_t)flags | O_CLOEXEC | O_NOFOLLOW,
                           .mode = (flags & O_CREAT) ? 0644 : 0,
                           .resolve =
                               RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS};
    return (int)syscall(SYS_openat2, dir, path, &how, sizeof how);
#else
    (void)dir;
    (void)path;
    (void)flags;
    errno = ENOSYS;
    return -1;
#endif
}

pr_cap_status pr_cap_lease_handle(void *ud, const pr_cap_call *call, pb_buf *reply,
                                  bool *committed) {
    const pr_cap_lease *l = ud;
    *committed = false;
    if (is(&call->op, "http.fetch")) {
        if (!l || !l->network)
            return say(reply, PR_CAP_REFUSED,
                       "refused: the session's network policy does not allow HTTP%s%s", "", "");
        return say(reply, PR_CAP_FAILED, "failed: this host has no HTTP client for guests%s%s", "",
                   "");
    }
    bool rd = is(&call->op, "file.read"), wr = is(&call->op, "file.write");
    if (!rd && !wr) {
        char op[41];
        size_t n = call->op.len < 40 ? call->op.len : 40;
        memcpy(op, call->op.ptr, n);
        op[n] = 0;
        return say(reply, PR_CAP_INVALID, "invalid: unknown operation \"%s\"%s", op, "");
    }
    if (!l || l->dir_fd < 0)
        return say(reply, PR_CAP_REFUSED, "refused: no workspace lease was granted to this run%s%s",
                   "", "");
    if (wr && !l->write)
        return say(reply, PR_CAP_REFUSED, "refused: the workspace lease is read-only%s%s", "", "");
    char path[4096];
    if (call->arg.len == 0 || call->arg.len >= sizeof path ||
        memchr(call->arg.ptr, 0, call->arg.len))
        return say(reply, PR_CAP_INVALID, "invalid: a relative path is required%s%s", "", "");
    memcpy(path, call->arg.ptr, call->arg.len);
    path[call->arg.len] = 0;
    if (wr && call->data.len > PR_CAP_FILE_MAX)
        return say(reply, PR_CAP_INVALID, "invalid: %.300s is over the 4 MiB file limit%s", path,
                   "");
    int fd = open_beneath(l->dir_fd, path, wr ? O_WRONLY | O_CREAT | O_TRUNC : O_RDONLY);
    if (fd < 0) {
        int e = errno;
        if (e == EXDEV || e == ELOOP)
            return say(reply, PR_CAP_REFUSED, "refused: %.300s is outside the workspace lease%s",
                       path, "");
        return say(reply, PR_CAP_FAILED, "failed: %.300s: %s", path, strerror(e));
    }
    pr_cap_status st = PR_CAP_OK;
    if (wr) {
        *committed = true;
        size_t off = 0;
        while (off < call->data.len) {
            ssize_t n = write(fd, call->data.ptr + off, call->data.len - off);
            if (n < 0 && errno == EINTR) continue;
            if (n <= 0) {
                st = say(reply, PR_CAP_FAILED, "failed: writing %.300s: %s", path, strerror(errno));
                break;
            }
            off += (size_t)n;
        }
        if (st == PR_CAP_OK) {
            char msg[64];
            snprintf(msg, sizeof msg, "%zu", off);
            pb_buf_puts(reply, msg);
        }
    } else {
        struct stat sb;
        if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
            st = say(reply, PR_CAP_FAILED, "failed: %.300s is not a regular file%s", path, "");
        } else if ((uint64_t)sb.st_size > PR_CAP_FILE_MAX) {
            st = say(reply, PR_CAP_FAILED, "failed: %.300s is over the 4 MiB file limit%s", path,
                     "");
        } else {
            char buf[65536];
            for (;;) {
                ssize_t n = read(fd, buf, sizeof buf);
                if (n < 0 && errno == EINTR) continue;
                if (n < 0) {
                    reply->len = 0;
                    st = say(reply, PR_CAP_FAILED, "failed: reading %.300s: %s", path,
                             strerror(errno));
                    break;
                }
                if (n == 0) break;
                if (reply->len + (size_t)n > PR_CAP_FILE_MAX ||
                    !pb_buf_put(reply, buf, (size_t)n)) {
                    reply->len = 0;
                    st = say(reply, PR_CAP_FAILED, "failed: %.300s is too large%s", path, "");
                    break;
                }
            }
        }
    }
    close(fd);
    return st;
}
