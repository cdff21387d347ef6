/*
 * placed.c — the tools that run code, through placement (docs/run-tools.md):
 *
 *   shell  {"command", "timeout_ms"}: a {"shell": COMMAND} request with requirements
 *          ["shell"] and state_class native_workspace_ref, i.e. the native sandbox with
 *          the session's cwd bound read-write at its own path and no network (unless the
 *          policy allows it). An unavailable sandbox is a tool error naming what is
 *          missing; the only unsandboxed path is ctx->sandbox->off (settings
 *          "sandbox": {"mode": "off"}), which warns on every call.
 *   run    {"wasm": PATH, "args"} or {"ruby": SOURCE}, with "stdin", "files",
 *          "requirements": the WebAssembly room first (fresh instance, in-memory files,
 *          CPU limit, no network, no host files but those passed in); declared
 *          requirements send it to the native sandbox, and admission may promote once.
 *          "source_pass": "repl_print" turns placement's source-pass stage on for the
 *          call ("off" turns it off; default: the policy's). A room guest's capability
 *          dispatches go to the session's handler (fetch_cap.c: http.fetch only when the
 *          policy allows network; no workspace lease), built per call from the policy.
 *
 * Each call's placement decision goes back as meta_json ({"peri.placement": {backend,
 * reason, identity, unsandboxed, decisions[, source_pass][, capabilities,
 * no_promotion]}}) and the placement result JSON as
 * raw_output_json, for the ACP tool_call_update (_meta, rawOutput).
 *
 * Cancel: a pl_cancel_link turns ctx->cancel into pl_cancel_trigger within 10 ms, so
 * a native run's process tree is killed and a room run stops at the watchdog's next
 * check; the tool then returns PTL_CANCELLED.
 */
#include "peri/place.h"
#include "tools_int.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <time.h>

#define RUN_FILES_MAX  64
#define RUN_SOURCE_MAX (1u << 20)
#define RUN_TITLE_MAX  4000 /* bytes of a script (or module path) shown in its title */

const char PTL__RUN_DESCRIPTION[] =
    "Run code in an isolated WebAssembly room (fresh instance, in-memory file system, CPU "
    "limit about 1 s, no network, no access to the workspace or any host file). Give "
    "either \"python\" (a Python 3.11 script; the standard library is available, e.g. import "
    "json; a script importing subprocess, socket, ctypes, numpy... runs natively instead, "
    "after the user's permission), \"ruby\" (a Ruby 3.4 script; the standard library is "
    "available, e.g. require 'json') or \"wasm\" (the workspace path of a WASI command "
    "module) with \"args\". "
    "\"files\" maps room paths to text contents: put inputs under /请求/ or /数据/; files "
    "the program writes under /数据/ and /响应/ are returned. \"stdin\" is its standard "
    "input. Returns stdout, stderr, the exit code and the returned files. To keep a result, "
    "write it to the workspace with the write tool. Only if the code truly needs a native "
    "feature (e.g. \"subprocess\", \"network\", \"native_extension\") declare it in "
    "\"requirements\": it then runs in the native sandbox, after the user's permission.";

const char PTL__RUN_SCHEMA[] =
    "{\"type\":\"object\",\"properties\":{"
    "\"python\":{\"type\":\"string\",\"description\":\"Python source to run as main.py\"},"
    "\"ruby\":{\"type\":\"string\",\"description\":\"Ruby source to run as main.rb\"},"
    "\"wasm\":{\"type\":\"string\",\"description\":\"Workspace path of a WASI .wasm module\"},"
    "\"args\":{\"type\":\"array\",\"items\":{\"type\":\"string\"},\"description\":\"argv[1..] "
    "for wasm\"},"
    "\"stdin\":{\"type\":\"string\",\"description\":\"Standard input\"},"
    "\"files\":{\"type\":\"object\",\"additionalProperties\":{\"type\":\"string\"},"
    "\"description\":\"Room path (e.g. /请求/input.csv) -> text content\"},"
    "\"requirements\":{\"type\":\"array\",\"items\":{\"type\":\"string\",\"enum\":["
    "\"browser_runtime\",\"daemon\",\"dynamic_package_install\",\"native_extension\","
    "\"native_threads\",\"network\",\"posix\",\"shell\",\"subprocess\"]},"
    "\"description\":\"Native features the code needs (usually none)\"},"
    "\"source_pass\":{\"type\":\"string\",\"enum\":[\"repl_print\",\"off\"],"
    "\"description\":\"repl_print: a Python script's top-level expressions print their values, "
    "as in the REPL\"}},"
    "\"additionalProperties\":false}";

/* ---------------------------------------------------------------- results */

static char *meta_of(const pl_report *rep) {
    pj_t *decs = pj_array();
    for (size_t i = 0; decs && i < rep->ndecisions; i++) {
        char *dj = pl_decision_json(&rep->decisions[i], NULL);
        pj_t *d = dj ? pj_loads(dj, 0, NULL) : NULL;
        free(dj);
        if (d) pj_array_append_new(decs, d);
    }
    const pl_decision *last = rep->ndecisions ? &rep->decisions[rep->ndecisions - 1] : NULL;
    pj_t *p = pj_pack("{s:s, s:s, s:s, s:b, s:b, s:o*}", "backend",
                      last ? pl_backend_name(last->backend) : "", "reason",
                      last ? pl_reason_name(last->reason) : "", "identity",
                      last ? last->identity : "", "selected", last ? last->selected : 0,
                      "unsandboxed", last ? last->unsandboxed : 0, "decisions", decs);
    /* Which source ran (source-pass stage) and every capability dispatch. */
    pj_t *sp = rep->source_pass[0] ? pj_loads(rep->source_pass, 0, NULL) : NULL;
    if (p && sp) pj_object_set_new(p, "source_pass", sp);
    char *cj = rep->caps.n_all ? pl_cap_log_json(&rep->caps, NULL) : NULL;
    pj_t *caps = cj ? pj_loads(cj, 0, NULL) : NULL;
    free(cj);
    if (p && caps) pj_object_set_new(p, "capabilities", caps);
    if (p && rep->no_promotion[0])
        pj_object_set_new(p, "no_promotion", pj_string(rep->no_promotion));
    pj_t *m = p ? pj_pack("{s:o}", "peri.placement", p) : NULL;
    char *s = m ? pj_dumps(m, PJ_COMPACT | PJ_PRESERVE_ORDER) : NULL;
    pj_decref(m);
    return s;
}

/* content: the command or script, then the output. */
static char *content_of(const char *shown, const char *lang, const char *output) {
    size_t n = strlen(shown) + strlen(lang) + 16;
    char *code = malloc(n);
    if (!code) return NULL;
    snprintf(code, n, "```%s\n%s\n```", lang, shown);
    pj_t *c =
        pj_pack("[{s:s, s:{s:s, s:s}}, {s:s, s:{s:s, s:s}}]", "type", "content", "content", "type",
                "text", "text", code, "type", "content", "content", "type", "text", "text", output);
    free(code);
    char *s = c ? pj_dumps(c, PJ_COMPACT | PJ_PRESERVE_ORDER) : NULL;
    pj_decref(c);
    return s;
}

/* Runs rq through placement and fills r. shown/lang: what the content shows first. */
/* native_asked: the user was asked for this run as a native one (the tool's permission
 * check said so); otherwise the native sandbox is out of reach for it, whatever L1
 * finds (a module whose imports the room lacks, no Python build), so a run the user
 * was not asked about never leaves the room. */
static ptl_status place_and_run(const ptl_ctx *ctx, const pl_request *rq, const char *shown,
                                const char *lang, const char *source_pass, bool native_asked,
                                ptl_result *r) {
    const ptl_sandbox *sb = ctx->sandbox;
    pl_policy pol = {0};
    if (sb->policy) pol = *sb->policy;
    if (!native_asked) {
        pol.native = PL_NATIVE_NO;
        pol.native_unsandboxed = false;
    }
    if (source_pass) pol.source_pass = strcmp(source_pass, "off") ? source_pass : NULL;
    /* Room guests ask the session for HTTP under its own network policy. */
    ptl_fetch_cap fc = {.network = pol.network_allowed, .local = pol.host_network};
    if (!pol.capability) {
        pol.capability = ptl_fetch_cap_handle;
        pol.cap_ud = &fc;
    }
    pl_cancel *cancel = pl_cancel_new();
    if (!cancel) return PTL_ERR_NOMEM;
    pl_cancel_link br;
    pl_cancel_link_start(&br, ctx->cancel, cancel);
    pl_report rep;
    memset(&rep, 0, sizeof rep);
    pl_error err = {0};
    bool ran = pl_run(sb->place, rq, &pol, cancel, &rep, &err);
    pl_cancel_link_stop(&br);
    bool was_cancelled = pl_cancel_triggered(cancel) || (ctx->cancel && atomic_load(ctx->cancel));
    pl_cancel_free(cancel);
    if (!ran) {
        ptl_status st = ptl__error(r, "%s: %s", rq->kind == PL_PROGRAM_SHELL ? "shell" : "run",
                                   err.message[0] ? err.message : "placement failed");
        return st;
    }
    if (!native_asked && rep.ndecisions && !rep.decisions[0].selected) {
        pl_reason why = rep.native_reason;
        pl_report_clear(&rep);
        return ptl__error(
            r,
            "run: this program needs the native sandbox (%s), and a native run needs the "
            "user's permission: declare what it needs in \"requirements\" (e.g. \"posix\" "
            "for a module whose imports are not WASI's) to ask for it",
            pl_reason_name(why));
    }
    const pl_result *res = &rep.result;
    size_t limit = ctx->max_output ? ctx->max_output : PTL_DEFAULT_MAX_OUTPUT;
    ptl__out o;
    ptl__out_init(&o, limit);
    if (res->stdout_len) ptl__out_add(&o, res->stdout_text, res->stdout_len);
    if (res->stderr_len) {
        if (o.len && o.p[o.len - 1] != '\n') ptl__out_add(&o, "\n", 1);
        ptl__out_addf(&o, "[stderr]\n");
        ptl__out_add(&o, res->stderr_text, res->stderr_len);
    }
    for (size_t i = 0; i < res->nfiles; i++) {
        if (o.len && o.p[o.len - 1] != '\n') ptl__out_add(&o, "\n", 1);
        ptl__out_addf(&o, "[file %s]\n", res->files[i].path);
        ptl__out_add(&o, res->files[i].text, res->files[i].len);
    }
    if (o.len && o.p[o.len - 1] != '\n') ptl__out_add(&o, "\n", 1);
    const pl_decision *last = rep.ndecisions ? &rep.decisions[rep.ndecisions - 1] : NULL;
    ptl__out_addf(&o, "[exit code %d; ran in %s]", res->exit_code,
                  last && last->selected ? pl_backend_name(last->backend) : "nothing");
    if (res->error) ptl__out_addf(&o, "\nerror: %s", res->error);
    r->exit_code = res->exit_code;
    r->truncated = o.truncated;
    ptl_status st = ptl__finish(r, &o, !res->ok);
    if (st == PTL_OK && r->output) {
        r->meta_json = meta_of(&rep);
        r->raw_output_json = res->json ? strdup(res->json) : NULL;
        r->content_json = content_of(shown, lang, r->output);
    }
    pl_report_clear(&rep);
    if (st == PTL_OK && was_cancelled) st = PTL_CANCELLED;
    return st;
}

/* ---------------------------------------------------------------- shell */

/* "<prefix>-<seconds>-<nanoseconds>" of the wall clock: a placement run's id. */
static void run_id_of(char out[PTL_RUN_ID_LEN], const char *prefix) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    snprintf(out, PTL_RUN_ID_LEN, "%s-%lld-%09ld", prefix, (long long)ts.tv_sec, ts.tv_nsec);
}

void ptl_shell_request(pl_request *rq, char run_id[PTL_RUN_ID_LEN], const char *prefix,
                       const ptl_sandbox *sb, const char *workspace, const char *cmd,
                       long long timeout_ms, uint32_t memory_mib, uint32_t processes) {
    run_id_of(run_id, prefix);
    *rq = (pl_request){.run_id = run_id,
                       .kind = PL_PROGRAM_SHELL,
                       .program = cmd,
                       .requirements = PL_REQ_SHELL,
                       .state_class = PL_STATE_NATIVE_WORKSPACE_REF,
                       .workspace = workspace,
                       .network = sb->policy && sb->policy->network_allowed,
                       .limits = {.cpu_ms = (uint32_t)timeout_ms,
                                  .wall_ms = (uint32_t)timeout_ms,
                                  .memory_mib = memory_mib,
                                  .processes = processes}};
}

/* sandbox mode off and the ACP client offers terminals: the command runs
 * in a terminal the client creates, and the content embeds it. Returns false when the
 * client offers none (the direct runner is used); otherwise *st is the outcome. */
static bool shell_in_client_term(const ptl_ctx *ctx, const char *cmd, long long timeout,
                                 ptl_result *r, ptl_status *st) {
    const ptl_client_term *ct = ctx->client_term;
    if (!ct || !ct->run) return false;
    char *root = ptl__root(ctx);
    if (!root) {
        *st = ptl__error(r, "the workspace directory is not accessible: %s", ctx->cwd);
        return true;
    }
    size_t limit = ctx->max_output ? ctx->max_output : PTL_DEFAULT_MAX_OUTPUT;
    ptl_term_result tr = {.exit_code = -1};
    int rc = ct->run(ct->ctx, root, cmd, timeout, limit, ctx->cancel, &tr);
    free(root);
    if (rc == 1) return false;
    if (rc != 0) {
        *st = ptl__error(r, "shell: the client's terminal failed: %s", strerror(errno));
        return true;
    }
    r->exit_code = tr.exit_code;
    r->timed_out = tr.timed_out;
    r->truncated = tr.truncated;
    ptl__out o;
    ptl__out_init(&o, limit + 256);
    size_t n = strlen(tr.output);
    ptl__out_add(&o, tr.output, n);
    if (n && tr.output[n - 1] != '\n') ptl__out_add(&o, "\n", 1);
    if (tr.truncated) ptl__out_addf(&o, "[output truncated by the terminal]\n");
    if (tr.cancelled)
        ptl__out_addf(&o, "[cancelled]");
    else if (tr.timed_out)
        ptl__out_addf(&o, "[timed out after %lld ms]", timeout);
    else
        ptl__out_addf(&o, "[exit code %d]", tr.exit_code);
    free(tr.output);
    *st = ptl__finish(r, &o, tr.cancelled || tr.timed_out || tr.exit_code != 0);
    if (*st == PTL_OK) {
        pj_t *c = pj_pack("[{s:s, s:s}]", "type", "terminal", "terminalId", tr.terminal_id);
        r->content_json = c ? pj_dumps(c, PJ_COMPACT) : NULL;
        pj_decref(c);
        if (!r->content_json) *st = PTL_ERR_NOMEM;
    }
    if (*st == PTL_OK && tr.cancelled) *st = PTL_CANCELLED;
    return true;
}

ptl_status ptl__shell_placed(pj_t *in, const ptl_ctx *ctx, ptl_result *r) {
    const ptl_sandbox *sb = ctx->sandbox;
    if (!sb) return ptl__shell(in, ctx, r); /* embedders/tests without a sandbox config */
    bool bad = false;
    const char *cmd = ptl__str(in, "command", &bad);
    long long timeout = ptl__int(
        in, "timeout_ms", ctx->timeout_ms > 0 ? ctx->timeout_ms : PTL_DEFAULT_TIMEOUT_MS, &bad);
    if (bad || !cmd) return ptl__error(r, "shell: \"command\" (a string) is required");
    if (timeout < 1 || timeout > 3600000) timeout = PTL_DEFAULT_TIMEOUT_MS;
    if (sb->off) {
        char msg[400];
        /* says exactly what is left: nothing of the sandbox, not even its filter */
        snprintf(msg, sizeof msg,
                 "sandbox mode is off: running the shell command UNSANDBOXED in %s (no "
                 "namespaces, no seccomp filter, no limits but the timeout%s): %.120s",
                 ctx->cwd, geteuid() == 0 ? "; the agent runs as root" : "", cmd);
        if (sb->warn) sb->warn(sb->warn_ud, msg);
        ptl_status st;
        if (!shell_in_client_term(ctx, cmd, timeout, r, &st)) st = ptl__shell(in, ctx, r);
        if (st == PTL_OK || st == PTL_CANCELLED)
            r->meta_json = strdup("{\"peri.placement\":{\"backend\":\"unsandboxed\",\"reason\":"
                                  "\"sandbox_mode_off\",\"identity\":\"\",\"selected\":true,"
                                  "\"unsandboxed\":true,\"decisions\":[]}}");
        return st;
    }
    if (!sb->place) return ptl__error(r, "shell: the native sandbox is not configured");
    char run_id[PTL_RUN_ID_LEN];
    pl_request rq;
    ptl_shell_request(&rq, run_id, "shell", sb, ctx->cwd, cmd, timeout, 2048, 256);
    return place_and_run(ctx, &rq, cmd, "sh", NULL, true, r);
}

/* ---------------------------------------------------------------- run */

static uint32_t requirement_bits(pj_t *a, bool *bad) {
    uint32_t bits = 0;
    size_t i;
    pj_t *v;
    pj_array_foreach(a, i, v) {
        const char *s = pj_string_value(v);
        bool known = false;
        for (unsigned b = 0; s && b < PL_REQ_COUNT; b++)
            if (strcmp(pl_feature_name(b), s) == 0) {
                bits |= 1u << b;
                known = true;
            }
        if (!known) *bad = true;
    }
    return bits;
}

/* Whether a run call asks the user: it declares requirements, or its Python imports
 * need the native sandbox (py_bits, pyscan). The permission check and the run itself
 * both decide by this, so a run that did not ask is never placed natively. */
static bool run_asks(const pj_t *req, uint32_t py_bits) {
    return (pj_is_array(req) && pj_array_size(req) > 0) || py_bits != 0;
}

bool ptl_tool_needs_permission(const ptl_tool *t, const char *input_json) {
    if (strcmp(t->name, "run") != 0) return t->needs_permission;
    pj_t *in = pj_loads(input_json && *input_json ? input_json : "{}", 0, NULL);
    pj_t *py = pj_object_get(in, "python");
    uint32_t py_bits = pj_is_string(py) ? pl_python_requirements(pj_string_value(py),
                                                                 pj_string_length(py), NULL, 0)
                                        : 0;
    bool asks = run_asks(pj_object_get(in, "requirements"), py_bits);
    pj_decref(in);
    return asks; /* the room cannot touch the host: only native runs ask */
}

/* The title says what will run: the whole script on one line, every character visible
 * (a newline cannot hide a second line, a control cannot rewrite what the user reads),
 * cut only past RUN_TITLE_MAX bytes and then with a marker saying how much more. */
char *ptl__run_title(pj_t *in) {
    const char *ruby = pj_string_value(pj_object_get(in, "ruby"));
    const char *python = pj_string_value(pj_object_get(in, "python"));
    const char *wasm = pj_string_value(pj_object_get(in, "wasm"));
    char *out = NULL;
    const char *what = ruby || python ? (ruby ? ruby : python) : wasm;
    char *v = what ? pb_visible_prompt(what, RUN_TITLE_MAX, false) : NULL;
    if (!v) return NULL;
    if (ruby || python) {
        if (asprintf(&out, "Run %s `%s`", ruby ? "Ruby" : "Python", v) < 0) out = NULL;
    } else if (asprintf(&out, "Run %s", v) < 0) {
        out = NULL;
    }
    free(v);
    return out;
}

ptl_status ptl__run(pj_t *in, const ptl_ctx *ctx, ptl_result *r) {
    const ptl_sandbox *sb = ctx->sandbox;
    if (!sb || !sb->place) return ptl__error(r, "run: placement is not configured");
    pj_t *ruby = pj_object_get(in, "ruby"), *wasm = pj_object_get(in, "wasm");
    pj_t *python = pj_object_get(in, "python");
    pj_t *args = pj_object_get(in, "args"), *stdin_v = pj_object_get(in, "stdin");
    pj_t *files = pj_object_get(in, "files"), *req = pj_object_get(in, "requirements");
    const char *key;
    pj_t *v;
    pj_object_foreach(in, key, v) {
        if (strcmp(key, "ruby") && strcmp(key, "python") && strcmp(key, "wasm") &&
            strcmp(key, "args") && strcmp(key, "stdin") && strcmp(key, "files") &&
            strcmp(key, "requirements") && strcmp(key, "source_pass"))
            return ptl__error(r, "run: unknown field \"%s\"", key);
    }
    if (!!ruby + !!python + !!wasm != 1)
        return ptl__error(r, "run: give exactly one of \"python\" or \"ruby\" (source) or "
                             "\"wasm\" (path)");
    if ((ruby && !pj_is_string(ruby)) || (wasm && !pj_is_string(wasm)) ||
        (python && !pj_is_string(python)))
        return ptl__error(r, "run: \"python\", \"ruby\" and \"wasm\" are strings");
    if (ruby && pj_string_length(ruby) > RUN_SOURCE_MAX)
        return ptl__error(r, "run: the Ruby source is over 1 MiB");
    if (python && pj_string_length(python) > RUN_SOURCE_MAX)
        return ptl__error(r, "run: the Python source is over 1 MiB");
    /* What the script's imports need joins the declared requirements (pyscan). */
    uint32_t py_bits =
        python ? pl_python_requirements(pj_string_value(python), pj_string_length(python), NULL, 0)
               : 0;
    if (args && (!pj_is_array(args) || !wasm))
        return ptl__error(r, "run: \"args\" is an array of strings, for \"wasm\" only");
    if (stdin_v && !pj_is_string(stdin_v)) return ptl__error(r, "run: \"stdin\" is a string");
    if (files && (!pj_is_object(files) || pj_object_size(files) > RUN_FILES_MAX))
        return ptl__error(r, "run: \"files\" maps at most %d room paths to strings", RUN_FILES_MAX);
    if (req && !pj_is_array(req)) return ptl__error(r, "run: \"requirements\" is an array");
    pj_t *sp = pj_object_get(in, "source_pass");
    const char *sps = pj_string_value(sp);
    if (sp && (!sps || (strcmp(sps, "repl_print") && strcmp(sps, "off"))))
        return ptl__error(r, "run: \"source_pass\" is \"repl_print\" or \"off\"");
    bool bad = false;
    uint32_t bits = (req ? requirement_bits(req, &bad) : 0) | py_bits;
    if (bad) return ptl__error(r, "run: unknown requirement (see the tool's schema)");

    size_t nargs = args ? pj_array_size(args) : 0, nfiles = files ? pj_object_size(files) : 0;
    const char **av = calloc(nargs ? nargs : 1, sizeof *av);
    pl_file *pf = calloc(nfiles ? nfiles : 1, sizeof *pf);
    char *module = NULL;
    ptl_status st;
    if (!av || !pf) {
        st = PTL_ERR_NOMEM;
        goto done;
    }
    for (size_t i = 0; i < nargs; i++) {
        av[i] = pj_string_value(pj_array_get(args, i));
        if (!av[i]) {
            st = ptl__error(r, "run: \"args\" items are strings");
            goto done;
        }
    }
    size_t k = 0;
    pj_object_foreach(files, key, v) {
        if (!pj_is_string(v) || key[0] != '/') {
            st = ptl__error(r, "run: \"files\" keys are absolute room paths (e.g. /请求/in.txt) "
                               "and values strings");
            goto done;
        }
        pf[k++] = (pl_file){key, pj_string_value(v), pj_string_length(v)};
    }
    if (wasm) {
        /* The module is a workspace file: confined like every path argument. */
        char errbuf[512];
        if (ptl_resolve_path(ctx->cwd, pj_string_value(wasm), false, &module, errbuf,
                             sizeof errbuf) != 0) {
            st = ptl__error(r, "run: %s", errbuf);
            goto done;
        }
    }
    char run_id[PTL_RUN_ID_LEN];
    run_id_of(run_id, "run");
    pl_request rq = {.run_id = run_id,
                     .kind = ruby     ? PL_PROGRAM_RUBY
                             : python ? PL_PROGRAM_PYTHON
                                      : PL_PROGRAM_WASM,
                     .program = ruby     ? pj_string_value(ruby)
                                : python ? pj_string_value(python)
                                         : module,
                     .args = av,
                     .nargs = nargs,
                     .stdin_data = stdin_v ? pj_string_value(stdin_v) : NULL,
                     .stdin_len = stdin_v ? pj_string_length(stdin_v) : 0,
                     .files = pf,
                     .nfiles = nfiles,
                     .requirements = bits,
                     .network = (bits & PL_REQ_NETWORK) != 0};
    st = place_and_run(ctx, &rq,
                       ruby     ? pj_string_value(ruby)
                       : python ? pj_string_value(python)
                                : pj_string_value(wasm),
                       ruby     ? "ruby"
                       : python ? "python"
                                : "",
                       sps, run_asks(req, py_bits), r);
done:
    free(av);
    free(pf);
    free(module);
    return st;
}
