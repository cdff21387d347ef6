/*
 * wasi_sig.c — the exact Wasm types of the 46 wasi_snapshot_preview1 functions (the
 * preview-1 witx). wasi.c builds its host functions with these types, not with the
 * types the guest's imports declare: an import of another type fails to link
 * ("incompatible import type"), so a host function never reads arguments the guest
 * did not pass or writes a result it has no room for.
 * Invariant: every name in wasi.c's table has an entry here (wasi_resolve refuses a
 * name without one).
 */
#include "room_int.h"

#include <string.h>

typedef struct wsig {
    const char *name;
    const char *params; /* 'i' i32, 'I' i64 */
    bool result;        /* one i32 (the errno); false only for proc_exit */
} wsig;

static const wsig SIGS[] = {
    {"args_get", "ii", true},
    {"args_sizes_get", "ii", true},
    {"environ_get", "ii", true},
    {"environ_sizes_get", "ii", true},
    {"clock_res_get", "ii", true},
    {"clock_time_get", "iIi", true},
    {"fd_advise", "iIIi", true},
    {"fd_allocate", "iII", true},
    {"fd_close", "i", true},
    {"fd_datasync", "i", true},
    {"fd_fdstat_get", "ii", true},
    {"fd_fdstat_set_flags", "ii", true},
    {"fd_fdstat_set_rights", "iII", true},
    {"fd_filestat_get", "ii", true},
    {"fd_filestat_set_size", "iI", true},
    {"fd_filestat_set_times", "iIIi", true},
    {"fd_pread", "iiiIi", true},
    {"fd_prestat_get", "ii", true},
    {"fd_prestat_dir_name", "iii", true},
    {"fd_pwrite", "iiiIi", true},
    {"fd_read", "iiii", true},
    {"fd_readdir", "iiiIi", true},
    {"fd_renumber", "ii", true},
    {"fd_seek", "iIii", true},
    {"fd_sync", "i", true},
    {"fd_tell", "ii", true},
    {"fd_write", "iiii", true},
    {"path_create_directory", "iii", true},
    {"path_filestat_get", "iiiii", true},
    {"path_filestat_set_times", "iiiiIIi", true},
    {"path_link", "iiiiiii", true},
    {"path_open", "iiiiiIIii", true},
    {"path_readlink", "iiiiii", true},
    {"path_remove_directory", "iii", true},
    {"path_rename", "iiiiii", true},
    {"path_symlink", "iiiii", true},
    {"path_unlink_file", "iii", true},
    {"poll_oneoff", "iiii", true},
    {"proc_exit", "i", false},
    {"proc_raise", "i", true},
    {"sched_yield", "", true},
    {"random_get", "ii", true},
    {"sock_accept", "iii", true},
    {"sock_recv", "iiiiii", true},
    {"sock_send", "iiiii", true},
    {"sock_shutdown", "ii", true},
};

#define MAXP 9
static const pw_valtype I32S[MAXP] = {PW_VT_I32, PW_VT_I32, PW_VT_I32, PW_VT_I32, PW_VT_I32,
                                      PW_VT_I32, PW_VT_I32, PW_VT_I32, PW_VT_I32};

/* Parameter lists, built once per distinct string: the few shapes with an i64. */
static const pw_valtype P_iIi[] = {PW_VT_I32, PW_VT_I64, PW_VT_I32};
static const pw_valtype P_iIIi[] = {PW_VT_I32, PW_VT_I64, PW_VT_I64, PW_VT_I32};
static const pw_valtype P_iII[] = {PW_VT_I32, PW_VT_I64, PW_VT_I64};
static const pw_valtype P_iI[] = {PW_VT_I32, PW_VT_I64};
static const pw_valtype P_iiiIi[] = {PW_VT_I32, PW_VT_I32, PW_VT_I32, PW_VT_I64, PW_VT_I32};
static const pw_valtype P_iIii[] = {PW_VT_I32, PW_VT_I64, PW_VT_I32, PW_VT_I32};
static const pw_valtype P_iiiiIIi[] = {PW_VT_I32, PW_VT_I32, PW_VT_I32, PW_VT_I32,
                                       PW_VT_I64, PW_VT_I64, PW_VT_I32};
static const pw_valtype P_iiiiiIIii[] = {PW_VT_I32, PW_VT_I32, PW_VT_I32, PW_VT_I32, PW_VT_I32,
                                         PW_VT_I64, PW_VT_I64, PW_VT_I32, PW_VT_I32};

static const pw_valtype *params_of(const char *p) {
    static const struct {
        const char *s;
        const pw_valtype *t;
    } WITH_I64[] = {{"iIi", P_iIi},         {"iIIi", P_iIIi},          {"iII", P_iII},
                    {"iI", P_iI},           {"iiiIi", P_iiiIi},        {"iIii", P_iIii},
                    {"iiiiIIi", P_iiiiIIi}, {"iiiiiIIii", P_iiiiiIIii}};
    if (!strchr(p, 'I')) return I32S;
    for (size_t i = 0; i < sizeof WITH_I64 / sizeof *WITH_I64; i++)
        if (strcmp(WITH_I64[i].s, p) == 0) return WITH_I64[i].t;
    return NULL;
}

bool pr__wasi_functype(const char *name, pw_functype *out) {
    for (size_t i = 0; i < sizeof SIGS / sizeof *SIGS; i++) {
        if (strcmp(SIGS[i].name, name) != 0) continue;
        const pw_valtype *p = params_of(SIGS[i].params);
        if (!p) return false;
        out->nparams = (uint32_t)strlen(SIGS[i].params);
        out->params = p;
        out->nresults = SIGS[i].result ? 1 : 0;
        out->results = I32S;
        return true;
    }
    return false;
}
