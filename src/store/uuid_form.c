/*
 * uuid_form.c — UUID layouts without I/O: the text form, v7 from given random bytes and
 * a millisecond time, and the name-based workspace id (version 8 over SHA-256 of the
 * machine id and the root path). uuid.c adds the OS randomness and clock for the native
 * store; the remote client passes the embedder's randomness and the port's wall clock.
 * Compiles for wasm32-wasi (SHA-256 is base's pb_sha256).
 */
#include "store_sql.h"
#include "peri/base.h"

#include <string.h>

void pst__uuid_format(const unsigned char b[16], char out[PST_ID_LEN]) {
    static const char hex[] = "0123456789abcdef";
    size_t o = 0;
    for (int i = 0; i < 16; i++) {
        if (i == 4 || i == 6 || i == 8 || i == 10) out[o++] = '-';
        out[o++] = hex[b[i] >> 4];
        out[o++] = hex[b[i] & 15];
    }
    out[o] = '\0';
}

void pst__uuid_v7_from(const unsigned char random16[16], uint64_t ms, char out[PST_ID_LEN]) {
    unsigned char b[16];
    memcpy(b, random16, sizeof b);
    for (int i = 0; i < 6; i++)
        b[i] = (unsigned char)(ms >> (40 - 8 * i));
    b[6] = (unsigned char)(0x70 | (b[6] & 0x0f));
    b[8] = (unsigned char)(0x80 | (b[8] & 0x3f));
    pst__uuid_format(b, out);
}

bool pst_workspace_id(const char *machine_id, const char *path, char out[PST_ID_LEN]) {
    if (!machine_id || !path) return false;
    static const char tag[] = "peri.workspace.v1";
    uint8_t md[PB_SHA256_LEN];
    pb_sha256_ctx c;
    pb_sha256_init(&c);
    pb_sha256_update(&c, tag, sizeof tag); /* NUL-separated fields */
    pb_sha256_update(&c, machine_id, strlen(machine_id) + 1);
    pb_sha256_update(&c, path, strlen(path));
    pb_sha256_final(&c, md);
    md[6] = (unsigned char)((md[6] & 0x0f) | 0x80); /* version 8: name-based, custom hash */
    md[8] = (unsigned char)((md[8] & 0x3f) | 0x80); /* RFC 4122 variant */
    pst__uuid_format(md, out);
    return true;
}

bool pst_machine_id_ok(const char *s) {
    size_t n = s ? strlen(s) : 0;
    if (n == 0 || n > 36) return false;
    for (size_t i = 0; i < n; i++)
        if (s[i] <= ' ' || s[i] > '~') return false;
    return true;
}
