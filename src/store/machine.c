/*
 * machine.c — where the store lives and which machine this is: the default database
 * path and Peri's machine-id rules (PERI_MACHINE_ID, then ~/.peri/machine-id, then a new
 * UUID written there). The caller passes HOME and the override value: no environment
 * read here.
 */
#include "store_int.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

char *pst_default_db_path(const char *home) {
    if (!home || !*home) return NULL;
    size_t n = strlen(home) + sizeof "/.peri/peri.db";
    char *p = malloc(n);
    if (p) snprintf(p, n, "%s/.peri/peri.db", home);
    return p;
}

/* Reads the first line of path into out if it is a valid UUID. 1 found, 0 absent or
 * invalid, -1 I/O error other than ENOENT. */
static int read_id_file(const char *path, char out[PST_ID_LEN]) {
    FILE *f = fopen(path, "r");
    if (!f) return errno == ENOENT ? 0 : -1;
    char line[128] = {0};
    bool got = fgets(line, sizeof line, f) != NULL;
    fclose(f);
    if (!got) return 0;
    line[strcspn(line, "\r\n \t")] = '\0';
    if (!pst_uuid_valid(line)) return 0;
    for (int i = 0; i < 36; i++)
        out[i] = (char)((line[i] >= 'A' && line[i] <= 'F') ? line[i] + 32 : line[i]);
    out[36] = '\0';
    return 1;
}

pst_status pst_machine_id_resolve(const char *home, const char *env_value, char out[PST_ID_LEN],
                                  pst_error *err) {
    pst__ok(err);
    if (env_value && *env_value) {
        if (!pst_machine_id_ok(env_value))
            return pst__fail(err, PST_ERR_ARG, 0,
                             "PERI_MACHINE_ID must be 1..36 printable characters");
        snprintf(out, PST_ID_LEN, "%s", env_value);
        return PST_OK;
    }
    if (!home || !*home)
        return pst__fail(err, PST_ERR_ARG, 0, "no home directory to keep the machine id in");
    size_t n = strlen(home) + 64;
    char *dir = malloc(n), *file = malloc(n), *tmp = malloc(n);
    pst_status st = PST_OK;
    if (!dir || !file || !tmp) {
        st = pst__fail(err, PST_ERR_NOMEM, 0, "out of memory");
        goto done;
    }
    snprintf(dir, n, "%s/.peri", home);
    snprintf(file, n, "%s/.peri/machine-id", home);
    snprintf(tmp, n, "%s/.peri/machine-id.%ld.tmp", home, (long)getpid());
    int r = read_id_file(file, out);
    if (r == 1) goto done;
    if (r < 0) {
        st = pst__fail(err, PST_ERR_IO, 0, "cannot read %s: %s", file, strerror(errno));
        goto done;
    }
    if (mkdir(dir, 0700) != 0 && errno != EEXIST) {
        st = pst__fail(err, PST_ERR_IO, 0, "cannot create %s: %s", dir, strerror(errno));
        goto done;
    }
    if (!pst_uuid_v4(out)) {
        st = pst__fail(err, PST_ERR_IO, 0, "no randomness available for a machine id");
        goto done;
    }
    /* Write to a private temp file then rename: a concurrent reader never sees half an id.
     * If two processes race, the last rename wins and both then use the file's value. */
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0) {
        st = pst__fail(err, PST_ERR_IO, 0, "cannot write %s: %s", tmp, strerror(errno));
        goto done;
    }
    char line[PST_ID_LEN + 1];
    int len = snprintf(line, sizeof line, "%s\n", out);
    bool ok = write(fd, line, (size_t)len) == len && fsync(fd) == 0;
    ok = (close(fd) == 0) && ok;
    if (!ok || rename(tmp, file) != 0) {
        st = pst__fail(err, PST_ERR_IO, 0, "cannot write %s: %s", file, strerror(errno));
        unlink(tmp);
        goto done;
    }
    if (read_id_file(file, out) != 1)
        st = pst__fail(err, PST_ERR_IO, 0, "machine id file %s vanished", file);
done:
    free(dir);
    free(file);
    free(tmp);
    return st;
}
