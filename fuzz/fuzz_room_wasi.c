/*
 * fuzz_room_wasi.c — libFuzzer target: WASI calls with random arguments.
 *
 * Each input becomes one WASI command module: it imports all 46 preview-1 functions
 * with their own types (wasi_sig.c; now and then one with a wrong type, which must
 * fail to link), has one page of memory whose first 2 KiB are input bytes (so pointers
 * land on structured garbage: iovecs, paths, lengths), and a _start that makes up to
 * 96 calls with arguments drawn from the input (small numbers, descriptors, addresses
 * in and around memory, all-ones, full random words). It runs through pr_run with a
 * few input files. Oracle: no crash or sanitizer report, a valid result or a typed
 * exception, host memory bounded (libFuzzer's -rss_limit_mb).
 */
#include "fuzz_room.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *const NAMES[] = {"args_get",
                                    "args_sizes_get",
                                    "environ_get",
                                    "environ_sizes_get",
                                    "clock_res_get",
                                    "clock_time_get",
                                    "fd_advise",
                                    "fd_allocate",
                                    "fd_close",
                                    "fd_datasync",
                                    "fd_fdstat_get",
                                    "fd_fdstat_set_flags",
                                    "fd_fdstat_set_rights",
                                    "fd_filestat_get",
                                    "fd_filestat_set_size",
                                    "fd_filestat_set_times",
                                    "fd_pread",
                                    "fd_prestat_get",
                                    "fd_prestat_dir_name",
                                    "fd_pwrite",
                                    "fd_read",
                                    "fd_readdir",
                                    "fd_renumber",
                                    "fd_seek",
                                    "fd_sync",
                                    "fd_tell",
                                    "fd_write",
                                    "path_create_directory",
                                    "path_filestat_get",
                                    "path_filestat_set_times",
                                    "path_link",
                                    "path_open",
                                    "path_readlink",
                                    "path_remove_directory",
                                    "path_rename",
                                    "path_symlink",
                                    "path_unlink_file",
                                    "poll_oneoff",
                                    "proc_exit",
                                    "proc_raise",
                                    "sched_yield",
                                    "random_get",
                                    "sock_accept",
                                    "sock_recv",
                                    "sock_send",
                                    "sock_shutdown"};
#define NF        (sizeof NAMES / sizeof *NAMES)
#define PROC_EXIT 38

static int64_t arg_value(fin *f, bool wide) {
    uint8_t k = fin_u8(f);
    switch (k & 7) {
    case 0: return k >> 3;                   /* small: flags, whences */
    case 1: return 3 + (k >> 6);             /* descriptors */
    case 2: return (int64_t)(k >> 3) * 2048; /* addresses in memory */
    case 3: return 65536 - (k >> 3);         /* the end of memory */
    case 4: return -1;
    case 5: return wide ? (int64_t)fin_u64(f) : (int32_t)fin_u32(f);
    case 6: return (int64_t)fin_u8(f) * 8 + 0x100; /* near the data */
    default: return (int32_t)(fin_u32(f) & 0x1ffff);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fin f = {data, size, 0};
    wbuf m = {0}, s = {0}, code = {0};
    static const uint8_t head[] = {0, 'a', 's', 'm', 1, 0, 0, 0};
    wb_put(&m, head, sizeof head);
    /* one type per import (maybe one wrong), then () -> () for _start */
    uint8_t wrong = fin_u8(&f);
    pw_functype ft[NF];
    uint8_t decl[NF][10]; /* the declared parameter types (0x7f i32, 0x7e i64) */
    wb_uleb(&s, NF + 1);
    for (size_t i = 0; i < NF; i++) {
        if (!pr__wasi_functype(NAMES[i], &ft[i])) abort();
        wb_u8(&s, 0x60);
        bool bad = wrong < NF && i == wrong; /* ~18% of inputs: one wrong type */
        uint32_t np = ft[i].nparams + (bad && (fin_u8(&f) & 1) ? 1 : 0);
        if (bad && np == ft[i].nparams && np) np--;
        wb_uleb(&s, np);
        for (uint32_t k = 0; k < np; k++) {
            decl[i][k] = k < ft[i].nparams && ft[i].params[k] == PW_VT_I64 ? 0x7e : 0x7f;
            wb_u8(&s, decl[i][k]);
        }
        wb_uleb(&s, ft[i].nresults);
        if (ft[i].nresults) wb_u8(&s, 0x7f);
        ft[i].nparams = np;
    }
    wb_u8(&s, 0x60), wb_u8(&s, 0), wb_u8(&s, 0);
    wb_section(&m, 1, &s);
    wb_uleb(&s, NF);
    for (size_t i = 0; i < NF; i++) {
        wb_name(&s, "wasi_snapshot_preview1");
        wb_name(&s, NAMES[i]);
        wb_u8(&s, 0), wb_uleb(&s, i);
    }
    wb_section(&m, 2, &s);
    wb_u8(&s, 1), wb_uleb(&s, NF);
    wb_section(&m, 3, &s);
    wb_u8(&s, 1), wb_u8(&s, 1), wb_u8(&s, 1), wb_u8(&s, 2); /* memory 1..2 pages */
    wb_section(&m, 5, &s);
    wb_u8(&s, 2);
    wb_name(&s, "memory"), wb_u8(&s, 2), wb_u8(&s, 0);
    wb_name(&s, "_start"), wb_u8(&s, 0), wb_uleb(&s, NF);
    wb_section(&m, 7, &s);
    /* _start: calls */
    wb_u8(&code, 0); /* no locals */
    size_t seg = size - f.at < 2048 ? size - f.at : 2048;
    const uint8_t *segp = data + f.at;
    f.at += seg / 2; /* the calls read the second half of the segment's bytes too */
    for (int c = 0; c < 96 && !fin_done(&f); c++) {
        uint8_t k = fin_u8(&f) % NF;
        if (k == PROC_EXIT && (fin_u8(&f) & 3)) continue;
        for (uint32_t p = 0; p < ft[k].nparams; p++) {
            bool wide = decl[k][p] == 0x7e;
            wb_u8(&code, wide ? 0x42 : 0x41);
            int64_t v = arg_value(&f, wide);
            wb_sleb(&code, wide ? v : (int32_t)v);
        }
        wb_u8(&code, 0x10), wb_uleb(&code, k);
        if (ft[k].nresults) wb_u8(&code, 0x1a);
    }
    wb_u8(&code, 0x0b);
    wb_u8(&s, 1), wb_uleb(&s, code.n), wb_put(&s, code.p, code.n);
    wb_section(&m, 10, &s);
    /* data: the segment at 0x100 */
    wb_u8(&s, 1), wb_u8(&s, 0), wb_u8(&s, 0x41), wb_sleb(&s, 0x100), wb_u8(&s, 0x0b);
    wb_uleb(&s, seg), wb_put(&s, segp, seg);
    wb_section(&m, 11, &s);
    fz_run(m.p, m.n,
           "{\"args\":[\"a\",\"b\"],\"files\":{\"/a.txt\":\"hello\",\"/d/b.txt\":\"x\","
           "\"/数据/c\":\"y\"}}");
    wb_free(&m), wb_free(&s), wb_free(&code);
    return 0;
}
