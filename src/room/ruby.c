/*
 * ruby.c — guest ABI 3: Ruby's official WebAssembly build (the npm package
 * @ruby/3.4-wasm-wasi, dist/ruby+stdlib.wasm) run as a room program.
 *
 * That module is a WASI *reactor* made for a JavaScript host: it exports
 * `_initialize`, `ruby-init`, `rb-eval-string-protect` and more (canonical ABI), and
 * imports ~24 functions from `rb-js-abi-host` and `canonical_abi` besides WASI. This
 * file is the host the room gives it:
 *   - WASI imports are the room's WASI (wasi.c): in-memory files, counted output;
 *   - every JavaScript-host import is a function that ends the run with a clear error
 *     naming it (a script that calls into JS, e.g. `require "js"`, gets that error);
 *   - the run is `_initialize`, `ruby-init ["ruby.wasm", "-EUTF-8", "-e_=0"]`, then one
 *     `rb-eval-string-protect` of a driver that evaluates the script (the run's
 *     opt->source) as file "main.rb" at top level, prints an uncaught exception like
 *     `ruby` does, flushes, and leaves with `exit!(status)` — so stdout, stderr and the
 *     exit status come back exactly like a WASI command's (0, the `exit` status, 1).
 *
 * Startup snapshot: `_initialize` + `ruby-init` take seconds in an interpreter and are
 * the same for every script. The first run of a cached program does them (with
 * PR_RUBY_INIT_GRACE_MS extra CPU/wall time, then the limits restart for the script),
 * and snapshots the instance (pw_snapshot: memory, globals, tables) into the cache
 * entry. Every later run instantiates from the snapshot: its memory is a private
 * copy-on-write mapping, so each run still starts from the exact post-init state and
 * nothing one run does is seen by another. The driver reseeds Random for each run
 * (the seed would otherwise be part of the snapshot).
 *
 * Invariants: no snapshot is taken unless the WASI state is the initial one (only
 * descriptors 0-3, stdin unread) and the run produced no output so far.
 */
#include "capability.h"
#include "room_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define JS_HOST    "rb-js-abi-host"
#define CANON      "canonical_abi"
#define INIT_GRACE 60000u /* ms of extra CPU/wall time for the one-time initialisation */

/* The boot reads nothing but the module (its standard library is inside it) and the
 * run's inputs: the saved snapshot needs no stamp. */
static const pr_boot_persist RUBY_PERSIST = {NULL};

typedef struct js_trap {
    pr_run_state *rs;
    const char *module, *name;
    size_t module_len, name_len;
} js_trap;

typedef struct ruby_state {
    js_trap *traps;
    size_t ntraps, cap;
    bool from_snapshot;
} ruby_state;

static bool ruby_matches(const pw_module *m) {
    uint32_t n = pw_module_import_count(m);
    for (uint32_t i = 0; i < n; i++) {
        pw_import_desc d;
        pw_module_import(m, i, &d);
        if (d.module_len == strlen(JS_HOST) && memcmp(d.module, JS_HOST, d.module_len) == 0)
            return true;
    }
    return false;
}

static ruby_state *rstate(pr_run_state *rs) {
    if (!rs->lang_state) {
        ruby_state *st = calloc(1, sizeof *st);
        if (!st) return NULL;
        rs->cap_files = true; /* the Peri module's way to the dispatch */
        rs->lang_state = st;
    }
    return rs->lang_state;
}

static pw_status js_import_called(pw_call_ctx *cx, void *env, const pw_val *args, pw_val *res) {
    (void)res;
    js_trap *t = env;
    pr_run_state *rs = t->rs;
    rs->end = PR_END_HOST;
    if (t->name_len == strlen("rb_wasm_throw_prohibit_rewind_exception") &&
        memcmp(t->name, "rb_wasm_throw_prohibit_rewind_exception", t->name_len) == 0) {
        uint64_t size = 0;
        uint8_t *base = pw_ctx_memory(cx, &size);
        uint32_t p = (uint32_t)args[0].i32, n = (uint32_t)args[1].i32;
        if (n > 300) n = 300;
        int shown = base && (uint64_t)p + n <= size ? (int)n : 0;
        snprintf(rs->end_msg, sizeof rs->end_msg,
                 "ruby: the VM stack may not be rewound in the room (%.*s)", shown,
                 shown ? (const char *)base + p : "");
    } else {
        /* Cut the WIT signature ("eval-js: func(...) -> ...") to the function name. */
        size_t n = t->name_len;
        const char *colon = memchr(t->name, ':', n);
        if (colon) n = (size_t)(colon - t->name);
        snprintf(rs->end_msg, sizeof rs->end_msg,
                 "ruby: the JavaScript host function %.*s.%.*s is not available in the room "
                 "(there is no JavaScript here; `require \"js\"` cannot work)",
                 (int)t->module_len, t->module, (int)n, t->name);
    }
    return pw_ctx_trap(cx, "%s", rs->end_msg);
}

static bool ruby_resolve(void *ctx, pw_store *s, const pw_module *m, const pw_import_desc *imp,
                         pw_extern *out) {
    pr_run_state *rs = ctx;
    bool js =
        (imp->module_len == strlen(JS_HOST) &&
         memcmp(imp->module, JS_HOST, imp->module_len) == 0) ||
        (imp->module_len == strlen(CANON) && memcmp(imp->module, CANON, imp->module_len) == 0);
    if (!js) return pr__wasi_resolve(ctx, s, m, imp, out);
    if (imp->kind != PW_EXTERN_FUNC) return false;
    ruby_state *st = rstate(rs);
    if (!st) return false;
    if (st->ntraps == st->cap) {
        /* The traps' addresses are host-function environments: grow only before any
         * is handed out, so reserve once for every import of the module. */
        if (st->cap) return false;
        st->cap = pw_module_import_count(m);
        st->traps = calloc(st->cap ? st->cap : 1, sizeof *st->traps);
        if (!st->traps) return false;
    }
    js_trap *t = &st->traps[st->ntraps++];
    *t = (js_trap){rs, imp->module, imp->name, imp->module_len, imp->name_len};
    pw_error e;
    pw_func *f = pw_func_new_host_for_import(s, m, imp->index, js_import_called, t, &e);
    if (!f) return false;
    out->kind = PW_EXTERN_FUNC;
    out->u.func = f;
    return true;
}

/* The export whose name is `name` or starts with "name:" (WIT signatures follow). */
static pw_func *export_fn(pw_instance *inst, const char *name) {
    const pw_module *m = pw_instance_module(inst);
    size_t k = strlen(name);
    uint32_t n = pw_module_export_count(m);
    for (uint32_t i = 0; i < n; i++) {
        pw_export_desc d;
        pw_module_export(m, i, &d);
        if (d.kind != PW_EXTERN_FUNC || d.name_len < k || memcmp(d.name, name, k) != 0) continue;
        if (d.name_len != k && d.name[k] != ':') continue;
        pw_extern ex;
        if (pw_instance_export(inst, d.name, d.name_len, &ex)) return ex.u.func;
    }
    return NULL;
}

static pw_status missing(pr_run_state *rs, pw_error *err, const char *what) {
    rs->end = PR_END_HOST;
    snprintf(rs->end_msg, sizeof rs->end_msg, "ruby: the module has no export %s", what);
    err->status = PW_ERR_TRAP;
    err->trap = PW_TRAP_HOST;
    return PW_ERR_TRAP;
}

/* cabi_realloc(0, 0, align, n) and a copy of data into it; the guest address in *at. */
static pw_status guest_copy(pr_run_state *rs, pw_func *realloc_fn, const void *data, size_t n,
                            uint32_t align, uint32_t *at, pw_error *err) {
    pw_val a[4] = {{.i32 = 0}, {.i32 = 0}, {.i32 = (int32_t)align}, {.i32 = (int32_t)n}}, r;
    pw_status st = pw_call(rs->store, realloc_fn, a, 4, &r, 1, err);
    if (st != PW_OK) return st;
    pw_extern ex;
    uint64_t size = 0;
    uint8_t *base = NULL;
    if (pw_instance_export(rs->inst, "memory", 6, &ex) && ex.kind == PW_EXTERN_MEMORY)
        base = pw_memory_data(ex.u.memory, &size);
    uint32_t p = (uint32_t)r.i32;
    if (!base || (uint64_t)p + n > size) {
        rs->end = PR_END_HOST;
        snprintf(rs->end_msg, sizeof rs->end_msg, "ruby: cabi_realloc returned a bad address");
        err->status = PW_ERR_TRAP;
        err->trap = PW_TRAP_HOST;
        return PW_ERR_TRAP;
    }
    if (n) memcpy(base + p, data, n);
    *at = p;
    return PW_OK;
}

/* _initialize, then ruby-init(["ruby.wasm", "-EUTF-8", "-e_=0"]) (NUL-terminated
 * strings, as the JavaScript host passes them). */
static pw_status ruby_boot(pr_run_state *rs, pw_error *err) {
    pw_func *init = export_fn(rs->inst, "_initialize");
    pw_func *rinit = export_fn(rs->inst, "ruby-init");
    pw_func *re = export_fn(rs->inst, "cabi_realloc");
    if (!init) return missing(rs, err, "_initialize");
    if (!rinit) return missing(rs, err, "ruby-init");
    if (!re) return missing(rs, err, "cabi_realloc");
    pw_status st = pw_call(rs->store, init, NULL, 0, NULL, 0, err);
    if (st != PW_OK) return st;
    static const char *const ARGS[] = {"ruby.wasm", "-EUTF-8", "-e_=0"};
    enum { NARGS = 3 };
    uint8_t list[NARGS * 8];
    for (int i = 0; i < NARGS; i++) {
        uint32_t at;
        size_t n = strlen(ARGS[i]) + 1;
        st = guest_copy(rs, re, ARGS[i], n, 1, &at, err);
        if (st != PW_OK) return st;
        uint32_t len = (uint32_t)n;
        memcpy(list + 8 * i, &at, 4); /* little-endian host (x86-64, arm64) */
        memcpy(list + 8 * i + 4, &len, 4);
    }
    uint32_t lp;
    st = guest_copy(rs, re, list, sizeof list, 4, &lp, err);
    if (st != PW_OK) return st;
    pw_val a[2] = {{.i32 = (int32_t)lp}, {.i32 = NARGS}};
    return pw_call(rs->store, rinit, a, 2, NULL, 0, err);
}

static pw_instance *ruby_instantiate(pr_run_state *rs, pw_error *err) {
    ruby_state *st = rstate(rs);
    if (!st) {
        err->status = PW_ERR_NOMEM;
        return NULL;
    }
    return pr__boot_instantiate(rs, ruby_resolve, true, &RUBY_PERSIST, &st->from_snapshot, err);
}

/* Appends s as a Ruby double-quoted string literal: every byte outside [A-Za-z0-9 ]
 * as \xNN, so no source text can end the literal or interpolate. */
static bool ruby_literal(pb_buf *b, const char *s, size_t n) {
    static const char HEX[] = "0123456789abcdef";
    if (!pb_buf_reserve(b, n * 4 + 2)) return false;
    pb_buf_putc(b, '"');
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
            c == ' ') {
            pb_buf_putc(b, (char)c);
        } else {
            char e[4] = {'\\', 'x', HEX[c >> 4], HEX[c & 15]};
            pb_buf_put(b, e, 4);
        }
    }
    return pb_buf_putc(b, '"');
}

/* The driver: the Peri module (the capability dispatch's file face, capability.c),
 * then the script as main.rb at top level, exiting like `ruby main.rb`. */
static const char DRIVER_HEAD[] =
    "module Peri\n"
    "  class RefusedError < StandardError; end\n"
    "  class FailedError < IOError; end\n"
    "  def self.dispatch(op, arg, data = \"\")\n"
    "    op, arg = op.to_s, arg.to_s\n"
    "    raise ArgumentError, \"op and arg are one line each\" if (op + arg).include?(\"\\n\")\n"
    "    File.binwrite(\"" PR_CAP_REQUEST "\", \"#{op}\\n#{arg}\\n\".b + data.to_s.b)\n"
    "    r = File.binread(\"" PR_CAP_REPLY "\")\n"
    "    body = r.byteslice(2, r.bytesize) || \"\".b\n"
    "    case r.getbyte(0)\n"
    "    when 48 then return body\n"
    "    when 49 then raise RefusedError, body.dup.force_encoding(Encoding::UTF_8).scrub\n"
    "    when 51 then raise ArgumentError, body.dup.force_encoding(Encoding::UTF_8).scrub\n"
    "    else raise FailedError, body.dup.force_encoding(Encoding::UTF_8).scrub\n"
    "    end\n"
    "  end\n"
    "  def self.fetch(url) = dispatch(\"http.fetch\", url)\n"
    "  def self.read_bytes(path) = dispatch(\"file.read\", path)\n"
    "  def self.read_text(path) = read_bytes(path).force_encoding(Encoding::UTF_8)\n"
    "  def self.write_bytes(path, data) = dispatch(\"file.write\", path, data).to_i\n"
    "  def self.write_text(path, text) = write_bytes(path, text.to_s.encode(Encoding::UTF_8))\n"
    "end\n"
    "->(src) {\n"
    "  Random.srand\n"
    "  $0 = \"main.rb\"\n"
    "  $stdout.sync = true\n"
    "  code = 0\n"
    "  begin\n"
    "    TOPLEVEL_BINDING.eval(src.force_encoding(Encoding::UTF_8), \"main.rb\", 1)\n"
    "  rescue SystemExit => e\n"
    "    code = e.status\n"
    "  rescue Exception => e\n"
    /* Printed like ruby's top level does (without error_highlight's annotations,
     * which cost seconds in an interpreter): "main.rb:N:in 'm': msg (Class)". */
    "    begin\n"
    "      bt = (e.backtrace || []).select { |l| l.start_with?(\"main.rb:\") }\n"
    "      msg = e.message.to_s\n"
    "      msg = \"unhandled exception\" if msg.empty?\n"
    "      first, rest = msg.split(\"\\n\", 2)\n"
    "      head = bt.empty? ? \"main.rb\" : bt[0]\n"
    "      out = +\"#{head}: #{first} (#{e.class})\\n\"\n"
    "      out << rest << \"\\n\" if rest && !rest.empty?\n"
    "      bt.drop(1).each { |l| out << \"\\tfrom #{l}\\n\" }\n"
    "      $stderr.write(out)\n"
    "    rescue Exception\n"
    "      $stderr.write(\"main.rb: uncaught exception\\n\")\n"
    "    end\n"
    "    code = 1\n"
    "  end\n"
    "  begin; $stdout.flush; rescue Exception; end\n"
    "  begin; $stderr.flush; rescue Exception; end\n"
    "  exit!(code)\n"
    "}.call(";

static pw_status ruby_start(pr_run_state *rs, pw_error *err) {
    ruby_state *st = rstate(rs);
    if (!st) {
        err->status = PW_ERR_NOMEM;
        return PW_ERR_NOMEM;
    }
    pw_status s;
    if (!st->from_snapshot) {
        pr__watch_grant(&rs->host->wd, rs->watch, INIT_GRACE);
        s = ruby_boot(rs, err);
        if (s != PW_OK) return s;
        pr__boot_done(rs, pr__wasi_only_std_fds(rs), &RUBY_PERSIST);
    }
    pw_func *eval = export_fn(rs->inst, "rb-eval-string-protect");
    pw_func *re = export_fn(rs->inst, "cabi_realloc");
    if (!eval) return missing(rs, err, "rb-eval-string-protect");
    if (!re) return missing(rs, err, "cabi_realloc");
    pb_buf drv = {0};
    const pr_str src = rs->opt->source;
    if (!pb_buf_puts(&drv, DRIVER_HEAD) || !ruby_literal(&drv, src.ptr ? src.ptr : "", src.len) ||
        !pb_buf_puts(&drv, ")\n")) {
        pb_buf_free(&drv);
        err->status = PW_ERR_NOMEM;
        return PW_ERR_NOMEM;
    }
    uint32_t at;
    s = guest_copy(rs, re, drv.p, drv.len, 1, &at, err);
    size_t dlen = drv.len;
    pb_buf_free(&drv);
    if (s != PW_OK) return s;
    pw_val a[2] = {{.i32 = (int32_t)at}, {.i32 = (int32_t)dlen}}, r;
    s = pw_call(rs->store, eval, a, 2, &r, 1, err);
    if (s != PW_OK) return s;
    /* The driver always leaves through exit!; returning means it could not run. */
    rs->end = PR_END_HOST;
    snprintf(rs->end_msg, sizeof rs->end_msg, "ruby: the script driver failed to run");
    err->status = PW_ERR_TRAP;
    err->trap = PW_TRAP_HOST;
    return PW_ERR_TRAP;
}

static void ruby_finish(pr_run_state *rs) {
    ruby_state *st = rs->lang_state;
    if (st) {
        free(st->traps);
        free(st);
        rs->lang_state = NULL;
    }
    pr__wasi_finish(rs);
}

const pr_abi pr__abi_ruby = {.name = "ruby",
                             .matches = ruby_matches,
                             .resolve = ruby_resolve,
                             .instantiate = ruby_instantiate,
                             .start = ruby_start,
                             .finish = ruby_finish};
