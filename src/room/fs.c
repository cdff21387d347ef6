/*
 * fs.c — the room's in-memory file system, with the reference host's semantics:
 * files keyed by normalised path in first-write order (rewriting keeps the position,
 * delete + recreate moves to the end), implicit directories (a path is a directory
 * when some file lies under it), a logical clock for mtimes (starts at 1, every
 * write takes the next value) and a 128 MiB cap on file contents.
 * Explicit (empty) directories made through WASI are entries with dir set; they never
 * appear in the output files.
 * Names and contents are apart: an entry (pr_file, keyed by path) points at a node
 * (pr_node: contents, times, link and open counts). Beyond the contract (peri run)
 * several entries may share a node (hard links) and a node may be a symbolic link;
 * contract runs only ever have one entry per node. Budget invariants: fs->total is the
 * sum of the lengths of the nodes alive (each once, however many names), fs->meta the
 * bytes of entries and nodes; a node is freed when its last name goes and no
 * descriptor holds it, or at its last close after that.
 */
#include "room_int.h"

#include <stdlib.h>
#include <string.h>

#define TOMB UINT32_MAX

static uint32_t hash_path(const char *s, size_t n) {
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < n; i++)
        h = (h ^ (uint8_t)s[i]) * 16777619u;
    return h ? h : 1;
}

uint64_t pr__path_ino(const char *p, size_t n) {
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++)
        h = (h ^ (uint8_t)p[i]) * 1099511628211ull;
    return h;
}

pr_fs *pr_fs_new(void) {
    pr_fs *fs = calloc(1, sizeof *fs);
    if (fs) fs->clock = 1;
    return fs;
}

void pr_fs_set_clock(pr_fs *fs, uint64_t start) {
    if (start > fs->clock) fs->clock = start;
}

/* Frees a node that no name and no descriptor holds; its bytes leave the budget. */
static void node_free(pr_fs *fs, pr_node *nd) {
    if (fs) {
        fs->total -= nd->len;
        fs->meta -= sizeof *nd;
    }
    free(nd->data);
    free(nd);
}

/* One name less for nd; freed with its last name unless a descriptor holds it (or
 * always, when the whole file system goes: force). */
static void node_unref(pr_fs *fs, pr_node *nd, bool force) {
    if (!nd) return;
    nd->nlink--;
    if (nd->nlink == 0 && (nd->nopen == 0 || force)) node_free(fs, nd);
}

void pr_fs_free(pr_fs *fs) {
    if (!fs) return;
    for (size_t i = 0; i < fs->norder; i++) {
        pr_file *f = fs->order[i];
        if (!f->dead) node_unref(NULL, f->node, true);
        free(f);
    }
    free(fs->order);
    free(fs->slots);
    free(fs);
}

pr_file *pr__fs_find(const pr_fs *fs, const char *norm, size_t n) {
    if (!fs->nslots) return NULL;
    uint32_t h = hash_path(norm, n);
    size_t mask = fs->nslots - 1;
    for (size_t i = h & mask;; i = (i + 1) & mask) {
        uint32_t s = fs->slots[i];
        if (s == 0) return NULL;
        if (s == TOMB) continue;
        pr_file *f = fs->order[s - 1];
        if (f->hash == h && f->path_len == n && memcmp(f->path, norm, n) == 0) return f;
    }
}

static size_t entry_cost(const pr_file *f) {
    return sizeof *f + f->path_len + 1;
}

/* Rebuilds the hash table with nslots slots and compacts the order array, freeing
 * removed entries (their nodes are managed by pr__fs_remove / pr__fs_node_close). */
static bool rehash(pr_fs *fs, size_t nslots) {
    uint32_t *s = calloc(nslots, sizeof *s);
    if (!s) return false;
    size_t k = 0;
    for (size_t i = 0; i < fs->norder; i++) {
        pr_file *f = fs->order[i];
        if (!f->dead) {
            fs->order[k++] = f;
        } else {
            fs->meta -= entry_cost(f);
            free(f);
        }
    }
    fs->norder = k;
    for (size_t i = 0; i < k; i++) {
        size_t j = fs->order[i]->hash & (nslots - 1);
        while (s[j])
            j = (j + 1) & (nslots - 1);
        s[j] = (uint32_t)i + 1;
    }
    free(fs->slots);
    fs->slots = s;
    fs->nslots = nslots;
    return true;
}

/* A new entry (name) at norm, with no node yet; extra = bytes of a node made with it,
 * charged to the entries' budget too. */
static pr_file *new_entry(pr_fs *fs, const char *norm, size_t n, bool dir, size_t extra) {
    fs->create_err = -1;
    /* Entries (paths and bookkeeping) have their own 128 MiB budget next to the
     * contents': a guest must not grow host memory through names or unlink churn. */
    size_t cost = sizeof(pr_file) + n + 1 + extra;
    if (cost > PR_FS_MAX - fs->meta) {
        if (fs->nslots && fs->norder > fs->nlive) rehash(fs, fs->nslots); /* reclaim */
        if (cost > PR_FS_MAX - fs->meta) {
            fs->create_err = -2;
            return NULL;
        }
    }
    /* Keep the table at most half full counting dead entries (tombstones). */
    if ((fs->norder + 1) * 2 > fs->nslots) {
        size_t ns = fs->nslots ? fs->nslots : 16;
        while ((fs->nlive + 1) * 2 > ns / 2)
            ns *= 2;
        if (!rehash(fs, ns)) return NULL;
    }
    if (fs->norder == fs->cap_order) {
        pr_file **o = pb_grow(fs->order, &fs->cap_order, sizeof *o, 16);
        if (!o) return NULL;
        fs->order = o;
    }
    pr_file *f = calloc(1, sizeof *f + n + 1);
    if (!f) return NULL;
    f->path = (char *)(f + 1);
    memcpy(f->path, norm, n);
    f->path_len = n;
    f->hash = hash_path(norm, n);
    f->dir = dir;
    fs->meta += cost - extra;
    fs->order[fs->norder++] = f;
    fs->nlive++;
    size_t mask = fs->nslots - 1;
    size_t j = f->hash & mask;
    while (fs->slots[j] && fs->slots[j] != TOMB)
        j = (j + 1) & mask;
    fs->slots[j] = (uint32_t)fs->norder;
    return f;
}

/* A new node of kind for entry f (owned by f: nlink 1). false when out of memory. */
static bool attach_node(pr_fs *fs, pr_file *f, uint8_t kind) {
    pr_node *nd = calloc(1, sizeof *nd);
    if (!nd) return false;
    nd->kind = kind;
    nd->nlink = 1;
    nd->mtime = fs->clock; /* only writes advance the clock, as in the reference */
    nd->ino = pr__path_ino(f->path, f->path_len);
    nd->serial = ++fs->serial;
    fs->meta += sizeof *nd;
    f->node = nd;
    return true;
}

/* Takes back an entry just made (out of memory for its node). */
static void drop_entry(pr_fs *fs, pr_file *f) {
    pr__fs_remove(fs, f);
}

pr_file *pr__fs_create(pr_fs *fs, const char *norm, size_t n, bool dir) {
    pr_file *f = new_entry(fs, norm, n, dir, dir ? 0 : sizeof(pr_node));
    if (!f || dir) return f;
    if (!attach_node(fs, f, PR_NODE_FILE)) {
        drop_entry(fs, f);
        fs->create_err = -1;
        return NULL;
    }
    return f;
}

pr_file *pr__fs_link(pr_fs *fs, const char *norm, size_t n, pr_node *node) {
    pr_file *f = new_entry(fs, norm, n, false, 0);
    if (!f) return NULL;
    f->node = node;
    node->nlink++;
    return f;
}

pr_file *pr__fs_symlink(pr_fs *fs, const char *norm, size_t n, const char *t, size_t tn) {
    if (tn > PR_FS_MAX - fs->total) {
        fs->create_err = -2;
        return NULL;
    }
    pr_file *f = new_entry(fs, norm, n, false, sizeof(pr_node));
    if (!f) return NULL;
    uint8_t *d = malloc(tn ? tn : 1);
    if (!d || !attach_node(fs, f, PR_NODE_LINK)) {
        free(d);
        drop_entry(fs, f);
        fs->create_err = -1;
        return NULL;
    }
    memcpy(d, t, tn);
    f->node->data = d;
    f->node->len = f->node->cap = tn;
    fs->total += tn;
    return f;
}

void pr__fs_remove(pr_fs *fs, pr_file *f) {
    size_t mask = fs->nslots - 1;
    for (size_t j = f->hash & mask;; j = (j + 1) & mask) {
        uint32_t s = fs->slots[j];
        if (s == 0) return;
        if (s != TOMB && fs->order[s - 1] == f) {
            fs->slots[j] = TOMB;
            break;
        }
    }
    f->dead = true;
    fs->nlive--;
    /* As in POSIX, an unlinked node's bytes stay counted until its last close: an open
     * descriptor keeps it readable and writable, and host memory must stay within the
     * budget however often a guest unlinks open files. */
    pr_node *nd = f->node;
    f->node = NULL;
    node_unref(fs, nd, false);
}

static int grow(pr_fs *fs, pr_node *f, size_t len) {
    if (len > f->len && len - f->len > PR_FS_MAX - fs->total) return -2;
    if (len > f->cap) {
        size_t c = f->cap ? f->cap : 64;
        while (c < len)
            c = c > SIZE_MAX / 2 ? len : c * 2;
        uint8_t *d = realloc(f->data, c);
        if (!d) return -1;
        f->data = d;
        f->cap = c;
    }
    return 0;
}

int pr__fs_truncate(pr_fs *fs, pr_node *f, size_t len) {
    if (len > f->len) {
        int rc = grow(fs, f, len);
        if (rc) return rc;
        memset(f->data + f->len, 0, len - f->len);
    }
    fs->total = fs->total - f->len + len;
    f->len = len;
    f->mtime = ++fs->clock;
    return 0;
}

int pr__fs_pwrite(pr_fs *fs, pr_node *f, const void *data, size_t n, size_t off) {
    if (n == 0) return 0; /* as POSIX write(2) of zero bytes: no growth, no new mtime */
    if (off > SIZE_MAX - n) return -2;
    size_t end = off + n;
    if (end > f->len) {
        int rc = grow(fs, f, end);
        if (rc) return rc;
        if (off > f->len) memset(f->data + f->len, 0, off - f->len);
        fs->total += end - f->len;
        f->len = end;
    }
    if (n) memcpy(f->data + off, data, n);
    f->mtime = ++fs->clock;
    return 0;
}

void pr__fs_node_open(pr_node *f) {
    f->nopen++;
}

void pr__fs_node_close(pr_fs *fs, pr_node *f) {
    if (--f->nopen == 0 && f->nlink == 0) node_free(fs, f);
}

void pr__fs_touch(pr_fs *fs, pr_node *f) {
    f->mtime = ++fs->clock;
}

int pr_fs_write(pr_fs *fs, const char *path, size_t path_len, const void *data, size_t len) {
    char stackbuf[512];
    char *norm = path_len + 2 <= sizeof stackbuf ? stackbuf : malloc(path_len + 2);
    if (!norm) return -1;
    size_t n = pr__path_normalize(path, path_len, norm);
    pr_file *f = pr__fs_find(fs, norm, n);
    int rc = 0;
    if (f && pr_file_is_link(f)) { /* a symbolic link (beyond the contract) is replaced */
        pr__fs_remove(fs, f);
        f = NULL;
    }
    if (f && f->dir) {
        /* An explicit directory replaced by a file: the reference FS has no such
         * thing, so the file simply takes the entry. */
        if (!attach_node(fs, f, PR_NODE_FILE))
            rc = -1;
        else
            f->dir = false;
    }
    if (!f && !rc) {
        if (len > PR_FS_MAX - fs->total)
            rc = -2;
        else if (!(f = pr__fs_create(fs, norm, n, false)))
            rc = fs->create_err;
    }
    if (!rc) {
        pr_node *nd = f->node;
        size_t old = nd->len;
        if (len > old && len - old > PR_FS_MAX - fs->total)
            rc = -2;
        else {
            fs->total -= old;
            nd->len = 0;
            rc = grow(fs, nd, len);
            if (!rc) {
                if (len) memcpy(nd->data, data, len);
                nd->len = len;
                fs->total += len;
                nd->mtime = ++fs->clock;
            } else {
                nd->len = old;
                fs->total += old;
            }
        }
    }
    if (norm != stackbuf) free(norm);
    return rc;
}

bool pr_fs_next(const pr_fs *fs, size_t *cursor, const char **path, size_t *path_len,
                const uint8_t **data, size_t *len) {
    while (*cursor < fs->norder) {
        pr_file *f = fs->order[(*cursor)++];
        if (f->dead || f->dir || pr_file_is_link(f)) continue;
        *path = f->path;
        *path_len = f->path_len;
        *data = f->node->data;
        *len = f->node->len;
        return true;
    }
    return false;
}

/* prefix = norm + "/" (norm "/" gives "/"). */
static bool under(const pr_file *f, const char *norm, size_t n) {
    if (n == 1) return f->path_len > 1;
    return f->path_len > n + 1 && f->path[n] == '/' && memcmp(f->path, norm, n) == 0;
}

bool pr__fs_is_dir(const pr_fs *fs, const char *norm, size_t n) {
    if (n == 1) return true;
    for (size_t i = 0; i < fs->norder; i++) {
        const pr_file *f = fs->order[i];
        if (f->dead) continue;
        if (f->dir && f->path_len == n && memcmp(f->path, norm, n) == 0) return true;
        if (under(f, norm, n)) return true;
    }
    return false;
}

bool pr__fs_children(const pr_fs *fs, const char *norm, size_t n, pr_fs_child_fn fn, void *ud) {
    size_t pre = n == 1 ? 1 : n + 1;
    /* Names already produced, in a small open-addressing set (name pointers into the
     * entries' paths), so listing stays linear in the number of files. */
    size_t nslots = 64, used = 0;
    const char **slot_name = calloc(nslots, sizeof *slot_name);
    size_t *slot_len = calloc(nslots, sizeof *slot_len);
    bool ok = slot_name && slot_len;
    for (size_t i = 0; ok && i < fs->norder; i++) {
        const pr_file *f = fs->order[i];
        if (f->dead || !under(f, norm, n)) continue;
        const char *name = f->path + pre;
        size_t rest = f->path_len - pre;
        const char *slash = memchr(name, '/', rest);
        size_t l = slash ? (size_t)(slash - name) : rest;
        size_t j = hash_path(name, l) & (nslots - 1);
        bool seen = false;
        while (slot_name[j]) {
            if (slot_len[j] == l && memcmp(slot_name[j], name, l) == 0) {
                seen = true;
                break;
            }
            j = (j + 1) & (nslots - 1);
        }
        if (seen) continue;
        slot_name[j] = name;
        slot_len[j] = l;
        if (++used * 2 > nslots) {
            size_t ns = nslots * 2;
            const char **nn = calloc(ns, sizeof *nn);
            size_t *nl = calloc(ns, sizeof *nl);
            if (!nn || !nl) {
                free(nn);
                free(nl);
                ok = false;
                break;
            }
            for (size_t k = 0; k < nslots; k++) {
                if (!slot_name[k]) continue;
                size_t h = hash_path(slot_name[k], slot_len[k]) & (ns - 1);
                while (nn[h])
                    h = (h + 1) & (ns - 1);
                nn[h] = slot_name[k];
                nl[h] = slot_len[k];
            }
            free(slot_name);
            free(slot_len);
            slot_name = nn;
            slot_len = nl;
            nslots = ns;
        }
        if (!fn(ud, name, l, slash != NULL || f->dir)) {
            ok = false;
            break;
        }
    }
    free(slot_name);
    free(slot_len);
    return ok;
}
