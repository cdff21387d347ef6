/*
 * rmtree.c — removing a directory tree that sandboxed code wrote (a run's scratch
 * directory, a dead process's leftovers), whatever its shape.
 *
 * Why not nftw: it works on paths, and unlink/rmdir fail with ENAMETOOLONG once a path
 * passes PATH_MAX, so a guest that nests directories deeply enough would leave them on
 * the host after every run, piling up disk use past its per-run limits. Here every
 * operation is relative to a directory descriptor, and the walk is iterative: it goes
 * down with openat(name) and back up with openat(".."), holding one descriptor and no
 * path at any depth, so neither the path length, the depth nor the number of open
 * files bounds what it can remove.
 *
 * Invariants: symlinks are removed, never followed (O_NOFOLLOW on every descent), so the
 * walk never leaves the tree; it runs only after every sandboxed process is gone (no one
 * moves directories under it, so ".." leads back to the directory it came from); a
 * directory the caller cannot enter or write is made 0700 first (sandboxed code may
 * have left it 000 for a caller that is not root); an entry that still cannot be
 * removed ends the walk with false instead of looping.
 */
#include "sandbox_int.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <sys/stat.h>
#include <unistd.h>

/* Opens directory `name` of dirfd for the walk (never a symlink), making it 0700 when
 * it cannot be opened or written as it is. -1 when it cannot be opened. */
static int open_dir(int dirfd, const char *name) {
    int fl = O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC;
    int fd = openat(dirfd, name, fl);
    if (fd < 0 && errno == EACCES && fchmodat(dirfd, name, 0700, 0) == 0)
        fd = openat(dirfd, name, fl);
    if (fd >= 0 && faccessat(fd, ".", W_OK | X_OK, AT_EACCESS) != 0) (void)fchmod(fd, 0700);
    return fd;
}

/* Removes what it can of directory fd's entries; returns 1 with *sub the first
 * subdirectory that is not empty (opened), 0 when fd is now empty, -1 when an entry
 * could be neither removed nor entered. */
static int clear_level(int fd, int *sub) {
    int dfd = dup(fd);
    DIR *d = dfd >= 0 ? fdopendir(dfd) : NULL;
    if (!d) {
        if (dfd >= 0) close(dfd);
        return -1;
    }
    rewinddir(d); /* dup shares the offset of fd's earlier streams */
    bool left = false;
    *sub = -1;
    struct dirent *e;
    while ((e = readdir(d))) {
        const char *n = e->d_name;
        if (n[0] == '.' && (n[1] == 0 || (n[1] == '.' && n[2] == 0))) continue;
        if (unlinkat(fd, n, 0) == 0 || errno == ENOENT) continue;
        if ((errno == EISDIR || errno == EPERM) && unlinkat(fd, n, AT_REMOVEDIR) == 0) continue;
        if (errno == ENOTEMPTY || errno == EEXIST || errno == EACCES || errno == EPERM) {
            int s = open_dir(fd, n);
            if (s >= 0) {
                *sub = s;
                break;
            }
        }
        left = true;
    }
    closedir(d);
    return *sub >= 0 ? 1 : left ? -1 : 0;
}

bool pl__remove_tree(const char *dir) {
    int fd = open_dir(AT_FDCWD, dir);
    if (fd < 0) return (unlink(dir) == 0 || errno == ENOENT) && access(dir, F_OK) != 0;
    size_t depth = 0;
    bool ok = true;
    for (;;) {
        int sub;
        int r = clear_level(fd, &sub);
        if (r == 1) { /* down */
            close(fd);
            fd = sub;
            depth++;
            continue;
        }
        if (r < 0 || depth == 0) {
            ok = r == 0;
            break;
        }
        /* empty: up, where the next pass removes it */
        int up = openat(fd, "..", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        close(fd);
        if (up < 0) return false;
        fd = up;
        depth--;
    }
    close(fd);
    return ok && rmdir(dir) == 0;
}
