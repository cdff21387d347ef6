/*
 * run.c — one run of a program in a fresh room: a fresh store and instance per run
 * (the compiled module comes shared from the cache), the guest ABI chosen per module
 * from its imports, the watchdog around the whole run, and the mapping of how the run
 * ended onto the contract: program failures are outcomes (ok false), platform
 * failures (CPU/wall limit, memory cap, link errors) are exceptions.
 */
#include "capability.h"
#include "room_int.h"

#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <stdio.h>
#include <sys/random.h>

#define MSG_NOT_WASM "隔离运行失败：动态 Worker 程序不是有效 Wasm"
#define MSG_NOMEM    "隔离运行失败：内存不足"

/* Guest ABIs, tried in order. The 豫言 file-style ABI (GC values) joins this list
 * once the engine has GC and exceptions; WASI is the fallback for everything else. */
static const pr_abi *const ABIS[] = {&pr__abi_yuyan, &pr__abi_ruby, &pr__abi_python, &pr__abi_wasi};

static const pr_abi *choose_abi(const pw_module *m) {
    for (size_t i = 0; i < sizeof ABIS / sizeof *ABIS; i++)
        if (ABIS[i]->matches(m)) return ABIS[i];
    return &pr__abi_wasi;
}

/* What a startup snapshot depends on besides the module and the engine: the ABI, the
 * host's resource version and everything the boot could read from the run's options
 * (argv, environment and, with seeded, the random/clock seed), then the stamp of what
 * else it reads (pr_boot_persist.stamp), if any. An in-process snapshot is shared by runs
 * with another seed (docs/python.md: the hash seed is the program's); a saved one is
 * not. false: out of memory. */
static bool boot_tag(const pr_run_state *rs, bool seeded, pb_buf *b) {
    const pr_exec_options *o = rs->opt;
    bool good = pb_buf_put(b, "peri-room-boot", sizeof "peri-room-boot") &&
                pb_buf_put(b, rs->prog->abi->name, strlen(rs->prog->abi->name) + 1) &&
                pb_buf_put(b, pr_host_resource_version(), strlen(pr_host_resource_version()) + 1);
    const pr_str *lists[2] = {o->args, o->env};
    size_t counts[2] = {o->nargs, o->nenv};
    uint64_t n = o->argv0.ptr ? o->argv0.len : UINT64_MAX;
    good = good && pb_buf_put(b, &n, sizeof n) && (!o->argv0.ptr || pb_buf_put(b, o->argv0.ptr, n));
    for (int l = 0; l < 2; l++) {
        n = counts[l];
        good = good && pb_buf_put(b, &n, sizeof n);
        for (size_t i = 0; good && i < counts[l]; i++) {
            n = lists[l][i].len;
            good = pb_buf_put(b, &n, sizeof n) && pb_buf_put(b, lists[l][i].ptr, n);
        }
    }
    if (!seeded) return good;
    uint8_t has_seed = o->seed != NULL;
    good = good && pb_buf_put(b, &has_seed, 1) && (!o->seed || pb_buf_put(b, o->seed, 32));
    uint8_t stamped = rs->boot_stamped;
    return good && pb_buf_put(b, &stamped, 1) &&
           (!stamped || pb_buf_put(b, rs->boot_stamp, sizeof rs->boot_stamp));
}

/* The digest of the run's unseeded boot tag: which in-process snapshot it may use. */
static bool boot_inputs(const pr_run_state *rs, uint8_t out[PB_SHA256_LEN]) {
    pb_buf tag = {0};
    bool good = boot_tag(rs, false, &tag);
    if (good) pb_sha256(tag.p, tag.len, out);
    pb_buf_free(&tag);
    return good;
}

/* Installs snap as p's startup snapshot, taken with inputs, unless another run was
 * first; false (snap freed) then. */
static bool install_snapshot(pr_run_state *rs, pw_snapshot *snap, const uint8_t *inputs) {
    pr_program *p = rs->prog;
    pthread_mutex_lock(&p->snap_mu);
    bool mine = p->snap == NULL;
    if (mine) {
        p->snap = snap;
        memcpy(p->snap_inputs, inputs, sizeof p->snap_inputs);
    }
    pthread_mutex_unlock(&p->snap_mu);
    if (mine)
        pr__cache_charge(&rs->host->cache, p, (size_t)pw_snapshot_bytes(snap));
    else
        pw_snapshot_free(snap);
    return mine;
}

/* The saved snapshot of an earlier process with this run's tag, if the code cache
 * has one (a refused file is removed), installed as p's. */
static void load_saved(pr_run_state *rs, const pr_boot_persist *persist, const uint8_t *inputs) {
    rs->boot_stamped = persist->stamp && persist->stamp(rs, rs->boot_stamp);
    if (persist->stamp && !rs->boot_stamped) return; /* no stamp, no saved snapshot */
    pb_buf tag = {0};
    pw_snapshot *got = NULL;
    if (boot_tag(rs, true, &tag) &&
        pw_snapshot_load_cached(rs->prog->module, tag.p, tag.len, &got, NULL) == PW_CODE_OK)
        install_snapshot(rs, got, inputs);
    pb_buf_free(&tag);
}

pw_instance *pr__boot_instantiate(pr_run_state *rs, pw_resolve_fn resolve, bool snapshot_ok,
                                  const pr_boot_persist *persist, bool *from_snapshot,
                                  pw_error *err) {
    pr_program *p = rs->prog;
    uint8_t inputs[PB_SHA256_LEN];
    snapshot_ok = snapshot_ok && boot_inputs(rs, inputs);
    pthread_mutex_lock(&p->snap_mu);
    bool try_file = snapshot_ok && persist && !p->snap && !p->snap_file_tried;
    if (try_file) p->snap_file_tried = true;
    pthread_mutex_unlock(&p->snap_mu);
    if (try_file) load_saved(rs, persist, inputs);
    pthread_mutex_lock(&p->snap_mu);
    /* a snapshot taken with other inputs (argv, environment) is not this run's */
    pw_snapshot *snap = snapshot_ok && p->snap && memcmp(p->snap_inputs, inputs, sizeof inputs) == 0
                            ? p->snap
                            : NULL;
    pthread_mutex_unlock(&p->snap_mu);
    *from_snapshot = snap != NULL;
    if (snap) return pw_instantiate_snapshot(rs->store, p->module, snap, resolve, rs, err);
    /* A boot: its stamp is taken first (what the boot reads must not change before the
     * snapshot is saved, pr__boot_done), and it cannot see the run's files. */
    if (!try_file) /* (else load_saved took it) */
        rs->boot_stamped = persist && persist->stamp && persist->stamp(rs, rs->boot_stamp);
    rs->boot_blind = true;
    return pw_instantiate(rs->store, p->module, resolve, rs, err);
}

void pr__boot_done(pr_run_state *rs, bool snapshot_ok, const pr_boot_persist *persist) {
    rs->boot_blind = false;
    pw_error se = {0};
    uint8_t inputs[PB_SHA256_LEN];
    /* No snapshot (memfd unavailable...): every run boots; still correct. */
    pw_snapshot *snap = snapshot_ok && rs->out_bytes == 0 && boot_inputs(rs, inputs)
                            ? pw_snapshot_take(rs->inst, &se)
                            : NULL;
    if (snap && install_snapshot(rs, snap, inputs) && persist) {
        /* for the next process, if what the boot read is as it was before it; a failure
         * (no cache, I/O) only costs that process the boot */
        uint8_t now[sizeof rs->boot_stamp];
        bool same = !persist->stamp || (rs->boot_stamped && persist->stamp(rs, now) &&
                                        memcmp(now, rs->boot_stamp, sizeof now) == 0);
        pb_buf tag = {0};
        if (same && boot_tag(rs, true, &tag))
            pw_snapshot_save_cached(rs->prog->module, snap, tag.p, tag.len);
        pb_buf_free(&tag);
    }
    pr__watch_restart(&rs->host->wd, rs->watch);
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    rs->wall_deadline_ns = (uint64_t)now.tv_sec * 1000000000ull + (uint64_t)now.tv_nsec +
                           (uint64_t)rs->wall_ms * 1000000ull;
}

size_t pr__program_key_max(pr_str scope) {
    return scope.len + 66 + strlen(pr_host_resource_version());
}

size_t pr__program_key(pr_str scope, const char hex[64], char *key) {
    const char *ver = pr_host_resource_version();
    size_t vlen = strlen(ver), klen = scope.len + 1 + 64;
    memcpy(key, scope.ptr, scope.len);
    key[scope.len] = ':';
    memcpy(key + scope.len + 1, hex, 64);
    key[klen] = 0; /* the version follows the NUL: the identity is the first part */
    memcpy(key + klen + 1, ver, vlen);
    return klen + 1 + vlen;
}

/* 64 lower-case hex digits (checked by the contract checks or made by pr__hex). */
static void digest_bytes(const char *hex, uint8_t out[32]) {
    for (int i = 0; i < 32; i++) {
        int hi = hex[2 * i] <= '9' ? hex[2 * i] - '0' : hex[2 * i] - 'a' + 10;
        int lo = hex[2 * i + 1] <= '9' ? hex[2 * i + 1] - '0' : hex[2 * i + 1] - 'a' + 10;
        out[i] = (uint8_t)(hi << 4 | lo);
    }
}

/* pr__program_load_digest; with own (bytes held in a malloc'd buffer or a mapping,
 * taken over and released on every path) a new module keeps them instead of a copy. */
static pr_program *program_load(pr_host *h, pr_str scope, const char hex[64], const uint8_t *bytes,
                                size_t len, pw_bytes *own, pr_str text, pr_error *err) {
    char stackkey[256];
    size_t kmax = pr__program_key_max(scope);
    char *key = kmax <= sizeof stackkey ? stackkey : malloc(kmax);
    if (!key) {
        pw_bytes_free(own);
        goto nomem;
    }
    size_t full = pr__program_key(scope, hex, key);
    pr_program *p = pr__cache_get(&h->cache, key, full);
    if (p) {
        if (key != stackkey) free(key);
        pw_bytes_free(own);
        return p;
    }
    pw_error pe = {0};
    /* bytes this engine build validated before (a record in the code cache) are not
     * validated again: the digest is known here already */
    uint8_t dg[32];
    digest_bytes(hex, dg);
    pw_code_cache_config ccv = {.dir = h->code_cache_dir, .max_bytes = h->code_cache_bytes};
    pw_module_config mc = {.code_cache = h->code_cache_dir ? &ccv : NULL, .digest = dg};
    pw_module *m = own ? pw_module_new_bytes(own, &mc, &pe) : pw_module_new(bytes, len, &mc, &pe);
    if (!m) {
        if (key != stackkey) free(key);
        if (pe.status == PW_ERR_NOMEM) goto nomem;
        pr__err_set(err, PR_KIND_RUN_FAILED, MSG_NOT_WASM);
        return NULL;
    }
    p = calloc(1, sizeof *p);
    char *k = malloc(full);
    char *t = text.len ? malloc(text.len) : NULL;
    if (!p || !k || (text.len && !t)) {
        free(p);
        free(k);
        free(t);
        pw_module_free(m);
        if (key != stackkey) free(key);
        goto nomem;
    }
    memcpy(k, key, full);
    if (key != stackkey) free(key);
    if (t) memcpy(t, text.ptr, text.len);
    atomic_init(&p->refs, 1);
    if (pthread_mutex_init(&p->snap_mu, NULL) != 0) {
        free(p);
        free(k);
        free(t);
        pw_module_free(m);
        goto nomem;
    }
    p->module = m;
    if (h->code_cache_dir) { /* before the module is shared; a refused dir: no cache */
        uint8_t d[32];
        digest_bytes(hex, d);
        pw_code_cache_config cc = {.dir = h->code_cache_dir, .max_bytes = h->code_cache_bytes};
        pw_module_set_code_cache(m, d, &cc, NULL);
    }
    p->key = k;
    p->key_len = full;
    p->text = t;
    p->text_len = text.len;
    p->abi = choose_abi(m);
    /* The cache is charged an estimate of the compiled form (the code grows about 3x
     * from bytes to the interpreter's instruction stream) plus the remembered text. */
    p->bytes = len * 3 + text.len + sizeof *p + full;
    return pr__cache_put(&h->cache, p);
nomem:
    pr__err_set(err, PR_KIND_RUN_FAILED, MSG_NOMEM);
    return NULL;
}

pr_program *pr__program_load_digest(pr_host *h, pr_str scope, const char hex[64],
                                    const uint8_t *bytes, size_t len, pr_str text, pr_error *err) {
    return program_load(h, scope, hex, bytes, len, NULL, text, err);
}

void pr_program_digest(const pr_program *p, uint8_t out[32]) {
    /* The key is "scope:<64 hex>" NUL version: the hex ends at the NUL. */
    digest_bytes(p->key + strlen(p->key) - 64, out);
}

/* pr_program_load and its owning form: the key is the digest of the bytes. */
static pr_program *program_load_hashed(pr_host *h, pr_str scope, const uint8_t *bytes, size_t len,
                                       uint8_t *own, pr_error *err) {
    uint8_t d[32];
    char hex[65];
    if (!pr__sha256(bytes, len, d)) {
        free(own);
        pr__err_set(err, PR_KIND_RUN_FAILED, "隔离运行失败：SHA-256 不可用");
        return NULL;
    }
    pr__hex(d, 32, hex);
    pw_bytes ob = {own, len, 0};
    return program_load(h, scope, hex, bytes, len, own ? &ob : NULL, (pr_str){NULL, 0}, err);
}

pr_program *pr_program_load(pr_host *h, pr_str scope, const uint8_t *bytes, size_t len,
                            pr_error *err) {
    return program_load_hashed(h, scope, bytes, len, NULL, err);
}

pr_program *pr_program_load_owned(pr_host *h, pr_str scope, uint8_t *bytes, size_t len,
                                  pr_error *err) {
    return program_load_hashed(h, scope, bytes, len, bytes, err);
}

pr_program *pr_program_load_fd(pr_host *h, pr_str scope, int fd, pr_error *err) {
    pw_code_cache_config cc = {.dir = h->code_cache_dir, .max_bytes = h->code_cache_bytes};
    pw_code_err ce = {0};
    uint8_t d[32];
    pw_bytes b;
    /* a big module file may come back as a mapping of the cache's copy of it */
    pw_code_error e =
        pw_file_load_digest(fd, (uint64_t)1 << 31, h->code_cache_dir ? &cc : NULL, &b, d, &ce);
    if (e != PW_CODE_OK) {
        pr__err_set(err, PR_KIND_RUN_FAILED, "隔离运行失败：无法读取模块文件（%s）", ce.message);
        return NULL;
    }
    char hex[65];
    pr__hex(d, 32, hex);
    return program_load(h, scope, hex, b.p, b.len, &b, (pr_str){NULL, 0}, err);
}

const pw_module *pr_program_module(const pr_program *p) {
    return p->module;
}

uint64_t pr__run_output_max(const pr_run_state *rs) {
    return rs->opt->output_max ? rs->opt->output_max : PR_OUTPUT_MAX;
}

bool pr__run_output(pr_run_state *rs, int stream, const uint8_t *data, size_t n) {
    uint64_t max = pr__run_output_max(rs);
    if (n > max - rs->out_bytes) {
        rs->end = PR_END_OUTPUT;
        return false;
    }
    rs->out_bytes += n;
    if (rs->opt->raw_output) { /* peri run: the bytes as they are, nothing kept */
        if (rs->opt->on_output && n) rs->opt->on_output(rs->opt->ud, stream, (const char *)data, n);
        return true;
    }
    pb_buf *b = stream == PR_STDERR ? &rs->err : &rs->out;
    size_t at = b->len;
    if (!pr__utf8_lenient(b, data, n)) {
        rs->end = PR_END_PLATFORM;
        snprintf(rs->end_msg, sizeof rs->end_msg, "%s", MSG_NOMEM);
        return false;
    }
    if (rs->opt->on_output && b->len > at)
        rs->opt->on_output(rs->opt->ud, stream, b->p + at, b->len - at);
    return true;
}

static uint64_t rotl(uint64_t x, int k) {
    return (x << k) | (x >> (64 - k));
}

uint64_t pr__run_random(pr_run_state *rs) {
    if (!rs->opt->seed) {
        uint64_t v = 0;
        size_t got = 0;
        while (got < sizeof v) {
            ssize_t r = getrandom((uint8_t *)&v + got, sizeof v - got, 0);
            if (r > 0) {
                got += (size_t)r;
            } else if (r == 0 || errno != EINTR) {
                /* No kernel randomness (never seen on Linux ≥ 3.17): never spin in a
                 * host function; mix the clock into the generator instead. */
                struct timespec t;
                clock_gettime(CLOCK_MONOTONIC, &t);
                rs->rng[0] ^= (uint64_t)t.tv_nsec * 0x9E3779B97F4A7C15ull ^ (uint64_t)t.tv_sec;
                rs->rng[1] |= 1;
                break;
            }
        }
        if (got == sizeof v) return v;
    }
    /* xoshiro256** seeded from SHA-256(digest ‖ input): a fixed function of both
     * (and the fallback above when the kernel gives no randomness). */
    uint64_t *s = rs->rng;
    uint64_t r = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return r;
}

void pr_outcome_clear(pr_outcome *o) {
    free(o->stdout_text);
    free(o->stderr_text);
    free(o->error);
    memset(o, 0, sizeof *o);
}

static bool set_error(pr_outcome *o, const char *msg) {
    o->error = strdup(msg);
    return o->error != NULL;
}

/* The message a trap shows as in the reference host (V8's wording). */
static const char *trap_text(const pw_error *e) {
    if (e->trap == PW_TRAP_STACK_EXHAUSTED) return "Maximum call stack size exceeded";
    return pw_trap_message(e->trap, PW_MSG_V8);
}

bool pr_exec(pr_host *h, pr_program *p, const pr_exec_options *opt, pr_outcome *out,
             pr_error *err) {
    memset(out, 0, sizeof *out);
    if (!opt->fs || (opt->nargs && !opt->args)) {
        pr__err_set(err, PR_KIND_RUN_FAILED, "隔离运行失败：pr_exec 需要文件系统");
        return false;
    }
    pr_run_state rs;
    memset(&rs, 0, sizeof rs);
    rs.host = h;
    rs.prog = p;
    rs.opt = opt;
    rs.fs = opt->fs;
    rs.cap.rs = &rs;
    if (opt->seed) {
        memcpy(rs.rng, opt->seed, sizeof rs.rng);
        if (!(rs.rng[0] | rs.rng[1] | rs.rng[2] | rs.rng[3])) rs.rng[0] = 1;
    }
    /* The run's limits: the host's, or lower ones the caller asked for (pr_run_with). */
    rs.cpu_ms = opt->cpu_ms && opt->cpu_ms < h->cpu_ms ? opt->cpu_ms : h->cpu_ms;
    rs.wall_ms = opt->wall_ms && opt->wall_ms < h->wall_ms ? opt->wall_ms : h->wall_ms;
    uint64_t memory_cap =
        opt->memory_cap && opt->memory_cap < h->memory_cap ? opt->memory_cap : h->memory_cap;
    pw_error pe = {0};
    /* The contract makes the memory cap a platform limit (an exception), not a -1
     * from memory.grow that the program could ignore. */
    pw_pool *pool = pr__host_pool_take(h);
    pw_store_config sc = {.memory_cap = memory_cap,
                          .cap_is_fatal = !h->beyond_contract,
                          .pool = pool,
                          .engine = h->engine,
                          .bounds_checks = h->bounds_checks};
    rs.store = pw_store_new(&sc, &pe);
    if (!rs.store) {
        pr__host_pool_put(h, pool);
        pr__err_set(err, PR_KIND_RUN_FAILED, MSG_NOMEM);
        return false;
    }
    pr_watch_slot slot = {0};
    /* Set before the slot is published; pr__watch_begin leaves them as they are. */
    slot.cancelled = opt->cancelled;
    slot.cancel_ud = opt->cancel_ud;
    slot.cpu_ms = rs.cpu_ms;
    slot.wall_ms = rs.wall_ms;
    slot.cpu_memo = opt->cpu_memo;
    if (!pr__watch_begin(&h->wd, &slot, rs.store)) {
        pw_store_free(rs.store);
        pr__host_pool_put(h, pool);
        pr__err_set(err, PR_KIND_RUN_FAILED, "隔离运行失败：无法启动运行限制");
        return false;
    }
    rs.watch = &slot;
    rs.wall_deadline_ns = (uint64_t)slot.wall_start.tv_sec * 1000000000ull +
                          (uint64_t)slot.wall_start.tv_nsec + (uint64_t)rs.wall_ms * 1000000ull;
    pw_status st;
    rs.inst = p->abi->instantiate ? p->abi->instantiate(&rs, &pe)
                                  : pw_instantiate(rs.store, p->module, p->abi->resolve, &rs, &pe);
    if (rs.inst)
        st = p->abi->start(&rs, &pe);
    else
        st = pe.status;
    int fired = pr__watch_end(&h->wd, &slot);
    if (p->abi->finish) p->abi->finish(&rs);
    pr__cap_free(&rs.cap);
    pw_store_free(rs.store);
    pr__host_pool_put(h, pool);

    bool ok = true;
    if (fired == PR_FIRED_CPU) {
        pr__err_set(err, PR_KIND_RUN_FAILED, "隔离运行失败：CPU 时间超过 %u ms", rs.cpu_ms);
        err->stop = PR_STOP_CPU;
        ok = false;
    } else if (fired == PR_FIRED_CANCEL) {
        pr__err_set(err, PR_KIND_RUN_FAILED, "隔离运行失败：已取消");
        err->stop = PR_STOP_CANCEL;
        ok = false;
    } else if (fired == PR_FIRED_WALL) {
        pr__err_set(err, PR_KIND_RUN_FAILED, "隔离运行失败：运行时间超过 %u ms", rs.wall_ms);
        err->stop = PR_STOP_WALL;
        ok = false;
    } else if (st == PW_OK) {
        out->ok = true;
    } else if (rs.end == PR_END_EXIT) {
        out->exit_code = rs.exit_code;
        out->ok = rs.exit_code == 0;
    } else if (rs.end == PR_END_OUTPUT) {
        out->exit_code = 1;
        out->stop = PR_STOP_OUTPUT;
        uint64_t max = pr__run_output_max(&rs);
        if (max == PR_OUTPUT_MAX || max == UINT64_MAX || opt->raw_output) {
            ok = set_error(out, "输出超过 64 KB"); /* the contract's text (and peri run's) */
        } else {                                   /* a lower cap (pr_run_with): its own number */
            char msg[64];
            snprintf(msg, sizeof msg, "输出超过 %llu 字节", (unsigned long long)max);
            ok = set_error(out, msg);
        }
    } else if (rs.end == PR_END_HOST) {
        out->exit_code = 1;
        ok = set_error(out, rs.end_msg);
    } else if (rs.end == PR_END_PLATFORM) {
        pr__err_set(err, PR_KIND_RUN_FAILED, "%s", rs.end_msg);
        err->stop = rs.stop;
        ok = false;
    } else if (st == PW_ERR_TRAP) {
        out->exit_code = 1;
        out->trapped = true;
        ok = set_error(out, trap_text(&pe));
    } else if (st == PW_ERR_EXCEPTION) {
        out->exit_code = 1;
        out->trapped = true;
        ok = set_error(out, p->abi->uncaught ? p->abi->uncaught : "uncaught Wasm exception");
    } else if (st == PW_ERR_UNLINKABLE || st == PW_ERR_ARG) {
        pr__err_set(err, PR_KIND_RUN_FAILED, "隔离运行失败：%s", pe.message);
        ok = false;
    } else if (st == PW_ERR_OOM) {
        pr__err_set(err, PR_KIND_RUN_FAILED, "隔离运行失败：内存超过上限");
        err->stop = PR_STOP_MEMORY;
        ok = false;
    } else {
        pr__err_set(err, PR_KIND_RUN_FAILED, "%s", MSG_NOMEM);
        ok = false;
    }
    if (!ok && opt->keep_output_on_stop && err->stop != PR_STOP_NONE) {
        /* what the program wrote before it was stopped (NULL texts when memory ran out) */
        pr_outcome_clear(out);
        out->exit_code = 1;
        out->stop = err->stop;
        out->stdout_text = pb_buf_take(&rs.out, &out->stdout_len);
        out->stderr_text = pb_buf_take(&rs.err, &out->stderr_len);
        pb_buf_free(&rs.out);
        pb_buf_free(&rs.err);
        return false;
    }
    if (ok) {
        out->stdout_text = pb_buf_take(&rs.out, &out->stdout_len);
        out->stderr_text = pb_buf_take(&rs.err, &out->stderr_len);
        if (!out->stdout_text || !out->stderr_text) {
            pr__err_set(err, PR_KIND_RUN_FAILED, "%s", MSG_NOMEM);
            ok = false;
        }
    }
    pb_buf_free(&rs.out);
    pb_buf_free(&rs.err);
    if (!ok) pr_outcome_clear(out);
    return ok;
}
