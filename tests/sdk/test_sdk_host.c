/*
 * test_sdk_host.c — libperi-sdk against real hosts and the mock model
 * (tests/host/mock_model.py):
 *   - the stdio helper drives build/peri acp: new -> prompt -> close; a close while a
 *     turn is unwinding returns incomplete or settles within its budget, never hangs;
 *   - two pacp_serve hosts in one process (in-process pairs) with two machine ids and
 *     two settings documents on one shared store do not see each other's sessions or
 *     settings; load/prompt of the other machine's session is refused naming it; a
 *     changed identity is refused; a shared store without machineId is not written;
 *     same machine + same root = same workspace id;
 *   - the TCP helper against a pacp_serve on a loopback socket.
 */
#include "../model/mock_harness.h"
#include "peri/acp.h"
#include "peri/model.h"
#include "peri/sdk.h"
#include "peri/store.h"

#include <arpa/inet.h>
#include "peri/json.h"
#include <limits.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#define MID_STDIN "dddddddd-0000-4000-8000-00000000000d"
#define MID_A     "aaaaaaaa-0000-4000-8000-00000000000a"
#define MID_B     "bbbbbbbb-0000-4000-8000-00000000000b"

static mock_server mock;
static char tmp[64];

static int64_t now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void write_file(const char *path, const char *text) {
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

/* The "model" field of the last request the mock received. */
static char *last_model(void) {
    char *txt = mock_requests(&mock);
    pj_t *arr = pj_loads(txt, 0, NULL);
    free(txt);
    size_t n = pj_array_size(arr);
    const char *m =
        n ? pj_string_value(pj_object_get(pj_object_get(pj_array_get(arr, n - 1), "body"), "model"))
          : NULL;
    char *out = strdup(m ? m : "");
    pj_decref(arr);
    return out;
}

typedef struct collect {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    char text[4096];
    int chunks;
} collect;

static void on_update(void *ctx, const psdk_update *u) {
    collect *c = ctx;
    pthread_mutex_lock(&c->mu);
    if (u->text && u->kind && !strcmp(u->kind, "agent_message_chunk")) {
        strncat(c->text, u->text, sizeof c->text - strlen(c->text) - 1);
        c->chunks++;
        pthread_cond_broadcast(&c->cv);
    }
    pthread_mutex_unlock(&c->mu);
}

static void collect_init(collect *c) {
    memset(c, 0, sizeof *c);
    pthread_mutex_init(&c->mu, NULL);
    pthread_cond_init(&c->cv, NULL);
}

typedef struct prompt_job {
    psdk_session *s;
    const char *text;
    psdk_status rc;
    char stop[32];
    psdk_error err;
} prompt_job;

static void *prompt_main(void *arg) {
    prompt_job *j = arg;
    j->rc = psdk_session_prompt(j->s, j->text, j->stop, sizeof j->stop, &j->err);
    return NULL;
}

/* ---------------------------------------------------------------- stdio: peri acp */

static void test_stdio_peri_acp(void **state) {
    (void)state;
    char home[128], dotperi[160], settings[200], db[160], work[160];
    snprintf(home, sizeof home, "%s/home", tmp);
    snprintf(dotperi, sizeof dotperi, "%s/.peri", home);
    snprintf(settings, sizeof settings, "%s/settings.json", dotperi);
    snprintf(db, sizeof db, "%s/stdio.db", tmp);
    snprintf(work, sizeof work, "%s/work/not-yet-there", tmp); /* the host creates it */
    mkdir(home, 0700);
    mkdir(dotperi, 0700);
    char doc[512];
    snprintf(doc, sizeof doc,
             "{\"model\":\"openai:stdio-model\",\"closeGraceMs\":100,\"maxRetries\":0,"
             "\"providers\":{\"openai\":{\"baseUrl\":\"%s/v1\",\"apiKey\":\"k\"}}}",
             mock.base);
    write_file(settings, doc);
    char env_home[200], env_path[1200];
    snprintf(env_home, sizeof env_home, "HOME=%s", home);
    const char *p = getenv("PATH"); /* the test maps its own environment, the SDK does not */
    snprintf(env_path, sizeof env_path, "PATH=%s", p ? p : "/usr/bin:/bin");
    const char *asan = getenv("ASAN_OPTIONS");
    char env_asan[600];
    snprintf(env_asan, sizeof env_asan, "ASAN_OPTIONS=%s", asan ? asan : "");
    const char *envp[] = {env_home, env_path, env_asan, NULL};
    psdk_stdio_options so = {.peri = PERI_BIN, .envp = envp, .exit_wait_ms = 5000};
    psdk_sandbox_options o = {.transport_factory = psdk_stdio_factory,
                              .factory_ctx = &so,
                              .store_locator = db,
                              .machine_id = "aaaaaaaa-1111-4111-8111-000000000001"};
    psdk_error err;
    psdk_sandbox *sb = psdk_sandbox_new(&o, &err);
    assert_non_null(sb);
    psdk_agent *a = psdk_agent_connect(sb, work, &err);
    assert_non_null(a);
    char info[64];
    assert_int_equal(psdk_agent_initialize(a, info, sizeof info, &err), PSDK_OK);
    assert_non_null(strstr(info, "peri-c"));

    /* new -> prompt -> close */
    mock_script(&mock, "[{\"text\": [\"Hel\", \"lo\"]}]");
    collect c;
    collect_init(&c);
    psdk_handlers h = {.ctx = &c, .on_update = on_update};
    psdk_session *s = psdk_session_new(a, NULL, &h, &err);
    if (!s) fail_msg("session/new: %s", err.message);
    char stop[32];
    assert_int_equal(psdk_session_prompt(s, "hi", stop, sizeof stop, &err), PSDK_OK);
    assert_string_equal(stop, "end_turn");
    assert_string_equal(c.text, "Hello");
    char *model = last_model();
    assert_string_equal(model, "stdio-model");
    free(model);
    assert_int_equal(psdk_session_close(s, 3000, &err), PSDK_OK);
    assert_true(psdk_session_is_closed(s));
    assert_int_equal(psdk_session_close(s, 3000, &err), PSDK_OK); /* no-op */
    assert_int_equal(psdk_session_prompt(s, "again", stop, sizeof stop, &err), PSDK_ERR_STATE);
    psdk_session_list l;
    assert_int_equal(psdk_agent_list(a, NULL, NULL, &l, &err), PSDK_OK);
    bool listed = false;
    for (size_t i = 0; i < l.count; i++)
        listed |= !strcmp(l.items[i].id, psdk_session_id(s));
    psdk_session_list_clear(&l);
    assert_true(listed);

    /* load replays the history through on_update before it returns; resume does not */
    collect cl;
    collect_init(&cl);
    psdk_handlers hl = {.ctx = &cl, .on_update = on_update};
    psdk_session *ls = psdk_session_load(a, psdk_session_id(s), NULL, &hl, &err);
    if (!ls) fail_msg("session/load: %s", err.message);
    assert_string_equal(cl.text, "Hello");
    assert_int_equal(psdk_session_close(ls, 3000, &err), PSDK_OK);
    collect cr;
    collect_init(&cr);
    psdk_handlers hr = {.ctx = &cr, .on_update = on_update};
    psdk_session *rs = psdk_session_resume(a, psdk_session_id(s), NULL, &hr, &err);
    if (!rs) fail_msg("session/resume: %s", err.message);
    assert_int_equal(cr.chunks, 0);
    mock_script(&mock, "[{\"text\": \"again\"}]");
    assert_int_equal(psdk_session_prompt(rs, "more", stop, sizeof stop, &err), PSDK_OK);
    assert_string_equal(cr.text, "again");
    assert_int_equal(psdk_session_close(rs, 3000, &err), PSDK_OK);

    /* close while a turn is unwinding: the model hangs mid-stream; close without a
     * cancel first. It settles within the budget or says incomplete; never hangs. */
    mock_script(&mock, "[{\"text\": [\"x\", \"y\"], \"hang\": true, \"hang_after\": 2}]");
    collect c2;
    collect_init(&c2);
    psdk_handlers h2 = {.ctx = &c2, .on_update = on_update};
    psdk_session *s2 = psdk_session_new(a, NULL, &h2, &err);
    assert_non_null(s2);
    prompt_job pj = {.s = s2, .text = "hang"};
    pthread_t th;
    pthread_create(&th, NULL, prompt_main, &pj);
    pthread_mutex_lock(&c2.mu);
    int64_t until = now_ms() + 10000;
    while (c2.chunks < 1 && now_ms() < until) {
        pthread_mutex_unlock(&c2.mu);
        usleep(10000);
        pthread_mutex_lock(&c2.mu);
    }
    pthread_mutex_unlock(&c2.mu);
    assert_true(c2.chunks >= 1);
    int64_t t0 = now_ms();
    psdk_status rc = psdk_session_close(s2, 300, &err);
    int64_t el = now_ms() - t0;
    assert_true(rc == PSDK_OK || rc == PSDK_ERR_SESSION_CLOSE_INCOMPLETE);
    if (rc != PSDK_OK) {
        assert_non_null(strstr(err.message, "Session close is incomplete: "));
        assert_false(psdk_session_is_closed(s2));
        /* the transport stayed open: close again until it settles */
        rc = psdk_session_close(s2, 5000, &err);
        assert_true(rc == PSDK_OK || rc == PSDK_ERR_SESSION_CLOSE_INCOMPLETE);
    }
    /* generous: budget + one answer (the host waits closeGraceMs per attempt) */
    assert_true(el < 300 + 5000);
    pthread_join(th, NULL);
    assert_int_equal(pj.rc, PSDK_OK);
    assert_string_equal(pj.stop, "cancelled");
    fprintf(stderr, "close while unwinding: %s in %lld ms\n", psdk_status_name(rc), (long long)el);

    psdk_agent_free(a); /* the child sees EOF, settles and is reaped */
    psdk_sandbox_free(sb);
}

/* `peri acp --settings -`: the settings document is the first line on the agent's
 * stdin, before any JSON-RPC frame. A wrapping factory sends it. */
typedef struct stdin_settings {
    psdk_stdio_options so;
    const char *doc;
} stdin_settings;

static int settings_first_factory(void *ctx, const psdk_connect *c, psdk_transport **out,
                                  psdk_error *err) {
    stdin_settings *ss = ctx;
    if (psdk_stdio_factory(&ss->so, c, out, err) != 0) return -1;
    return (*out)->send(*out, ss->doc, strlen(ss->doc));
}

static void test_stdio_settings_stdin(void **state) {
    (void)state;
    char db[160], work[160], doc[512], env_path[1200];
    snprintf(db, sizeof db, "%s/stdin.db", tmp);
    snprintf(work, sizeof work, "%s/stdin-ws", tmp);
    snprintf(doc, sizeof doc,
             "{\"model\":\"openai:stdin-model\",\"maxRetries\":0,"
             "\"providers\":{\"openai\":{\"baseUrl\":\"%s/v1\",\"apiKey\":\"k\"}}}",
             mock.base);
    const char *p = getenv("PATH");
    snprintf(env_path, sizeof env_path, "PATH=%s", p ? p : "/usr/bin:/bin");
    const char *asan = getenv("ASAN_OPTIONS");
    char env_asan[600];
    snprintf(env_asan, sizeof env_asan, "ASAN_OPTIONS=%s", asan ? asan : "");
    /* no HOME at all: everything comes from the command line and the document */
    const char *envp[] = {env_path, env_asan, NULL};
    const char *argv[] = {PERI_BIN,       "acp",     "--settings", "-",  "--db", db,
                          "--machine-id", MID_STDIN, "--cwd",      work, NULL};
    stdin_settings ss = {.so = {.argv = argv, .envp = envp}, .doc = doc};
    psdk_sandbox_options o = {.transport_factory = settings_first_factory, .factory_ctx = &ss};
    psdk_error err;
    psdk_sandbox *sb = psdk_sandbox_new(&o, &err);
    psdk_agent *a = psdk_agent_connect(sb, work, &err);
    assert_non_null(a);
    assert_int_equal(psdk_agent_initialize(a, NULL, 0, &err), PSDK_OK);
    mock_script(&mock, "[{\"text\": \"ok\"}]");
    psdk_session *s = psdk_session_new(a, NULL, NULL, &err);
    assert_non_null(s);
    char stop[32];
    assert_int_equal(psdk_session_prompt(s, "hi", stop, sizeof stop, &err), PSDK_OK);
    char *model = last_model();
    assert_string_equal(model, "stdin-model");
    free(model);
    assert_int_equal(psdk_session_close(s, 3000, &err), PSDK_OK);
    psdk_agent_free(a);
    psdk_sandbox_free(sb);
}

/* ---------------------------------------------------------------- in-process hosts */

typedef struct host {
    pacp_options opt;
    int fd;
    int rc;
    char err[256];
    pthread_t th;
    bool started;
} host;

static void *host_main(void *arg) {
    host *h = arg;
    h->rc = pacp_serve(&h->opt, h->fd, h->fd, h->err, sizeof h->err);
    close(h->fd);
    return NULL;
}

/* A transport factory whose ctx is a host: an in-process pair, pacp_serve on a thread. */
static int inproc_factory(void *ctx, const psdk_connect *c, psdk_transport **out, psdk_error *err) {
    (void)c;
    host *h = ctx;
    if (psdk_inproc_pair(out, &h->fd, err) != 0) return -1;
    h->started = pthread_create(&h->th, NULL, host_main, h) == 0;
    return h->started ? 0 : -1;
}

typedef struct conn {
    host h;
    psdk_sandbox *sb;
    psdk_agent *a;
    pj_t *keyed; /* the settings when the test gives none: a provider key, so that
                      session/new does not answer auth_required */
} conn;

static void conn_open(conn *c, const char *db, bool shared, const char *mid, pj_t *settings,
                      const char *cwd, const char *sdk_mid) {
    memset(c, 0, sizeof *c);
    if (!settings)
        settings = c->keyed = pj_pack("{s:{s:{s:s}}}", "providers", "openai", "apiKey", "k");
    c->h.opt = (pacp_options){.cwd = cwd,
                              .settings = settings,
                              .storage = {.locator = db, .shared = shared},
                              .machine_id = mid};
    psdk_sandbox_options o = {
        .transport_factory = inproc_factory, .factory_ctx = &c->h, .machine_id = sdk_mid};
    psdk_error err;
    c->sb = psdk_sandbox_new(&o, &err);
    assert_non_null(c->sb);
    c->a = psdk_agent_connect(c->sb, cwd, &err);
    assert_non_null(c->a);
}

static void conn_close(conn *c) {
    psdk_agent_free(c->a);
    if (c->h.started) pthread_join(c->h.th, NULL);
    psdk_sandbox_free(c->sb);
    pj_decref(c->keyed);
}

static bool lists(psdk_agent *a, const char *sid) {
    psdk_session_list l;
    psdk_error err;
    assert_int_equal(psdk_agent_list(a, NULL, NULL, &l, &err), PSDK_OK);
    bool found = false;
    for (size_t i = 0; i < l.count; i++)
        found |= !strcmp(l.items[i].id, sid);
    psdk_session_list_clear(&l);
    return found;
}

static void test_two_hosts_one_process(void **state) {
    (void)state;
    char db[160], root[160], url[128];
    snprintf(db, sizeof db, "%s/shared.db", tmp);
    snprintf(root, sizeof root, "%s/ws", tmp);
    snprintf(url, sizeof url, "%s/v1", mock.base);
    pj_t *sa = pj_pack("{s:s, s:i, s:{s:{s:s, s:s}}}", "model", "openai:model-a", "maxRetries", 0,
                       "providers", "openai", "baseUrl", url, "apiKey", "ka");
    pj_t *sbd = pj_pack("{s:s, s:i, s:{s:{s:s, s:s}}}", "model", "openai:model-b", "maxRetries", 0,
                        "providers", "openai", "baseUrl", url, "apiKey", "kb");
    conn A, B;
    conn_open(&A, db, true, MID_A, sa, root, MID_A);
    conn_open(&B, db, true, MID_B, sbd, root, NULL);
    psdk_error err;
    if (psdk_agent_initialize(A.a, NULL, 0, &err) != PSDK_OK)
        fail_msg("initialize A: %s (rpc %d; host: %s)", err.message, err.rpc_code, A.h.err);
    if (psdk_agent_initialize(B.a, NULL, 0, &err) != PSDK_OK)
        fail_msg("initialize B: %s (rpc %d; host: %s)", err.message, err.rpc_code, B.h.err);

    char stop[32];
    mock_script(&mock, "{\"default\": {\"text\": \"ok\"}}");
    psdk_session *s_a = psdk_session_new(A.a, NULL, NULL, &err);
    assert_non_null(s_a);
    assert_int_equal(psdk_session_prompt(s_a, "from a", stop, sizeof stop, &err), PSDK_OK);
    char *m = last_model();
    assert_string_equal(m, "model-a"); /* host A's settings document */
    free(m);
    psdk_session *s_b = psdk_session_new(B.a, NULL, NULL, &err);
    assert_non_null(s_b);
    assert_int_equal(psdk_session_prompt(s_b, "from b", stop, sizeof stop, &err), PSDK_OK);
    m = last_model();
    assert_string_equal(m, "model-b"); /* ... and B's: nothing global */
    free(m);
    assert_int_equal(psdk_session_prompt(s_a, "a again", stop, sizeof stop, &err), PSDK_OK);
    m = last_model();
    assert_string_equal(m, "model-a");
    free(m);

    /* Each host lists its own machine's sessions only. */
    assert_true(lists(A.a, psdk_session_id(s_a)));
    assert_false(lists(A.a, psdk_session_id(s_b)));
    assert_true(lists(B.a, psdk_session_id(s_b)));
    assert_false(lists(B.a, psdk_session_id(s_a)));

    /* B may read A's session (load opens it read-only, issue 15 follow-up) but not prompt
     * it; the error names A's machine. */
    psdk_session *foreign = psdk_session_load(B.a, psdk_session_id(s_a), NULL, NULL, &err);
    assert_non_null(foreign);
    assert_int_equal(psdk_session_prompt(foreign, "hijack", stop, sizeof stop, &err), PSDK_ERR_RPC);
    assert_int_equal(err.rpc_code, -32602);
    assert_non_null(strstr(err.message, "belongs to machine " MID_A));
    assert_non_null(strstr(err.message, MID_B));
    assert_int_equal(psdk_session_close(foreign, 3000, &err), PSDK_OK);
    /* resume (no replay) is read-only too */
    foreign = psdk_session_resume(B.a, psdk_session_id(s_a), NULL, NULL, &err);
    assert_non_null(foreign);
    assert_int_equal(psdk_session_prompt(foreign, "hijack", stop, sizeof stop, &err), PSDK_ERR_RPC);
    assert_non_null(strstr(err.message, "belongs to machine " MID_A));
    assert_int_equal(psdk_session_close(foreign, 3000, &err), PSDK_OK);

    assert_int_equal(psdk_session_close(s_a, 3000, &err), PSDK_OK);
    assert_int_equal(psdk_session_close(s_b, 3000, &err), PSDK_OK);
    conn_close(&A);
    conn_close(&B);
    assert_int_equal(A.h.rc, 0);
    assert_int_equal(B.h.rc, 0);
    pj_decref(sa); /* borrowed by each pacp_serve until it returned */
    pj_decref(sbd);

    /* One host holds one identity: a client asking for another is refused. */
    conn C;
    conn_open(&C, db, true, MID_A, NULL, root, MID_B);
    assert_int_equal(psdk_agent_initialize(C.a, NULL, 0, &err), PSDK_ERR_RPC);
    assert_non_null(strstr(err.message, "machine identity is fixed for this host"));
    conn_close(&C);

    /* A shared store without a machine id: nothing is written. */
    conn D;
    conn_open(&D, db, true, NULL, NULL, root, NULL);
    assert_int_equal(psdk_agent_initialize(D.a, NULL, 0, &err), PSDK_OK);
    assert_null(psdk_session_new(D.a, NULL, NULL, &err));
    assert_non_null(strstr(err.message, "machineId is required to write to a shared store"));
    conn_close(&D);

    /* Same machine + same root = same workspace identity, in any store. */
    char real[PATH_MAX];
    assert_non_null(realpath(root, real));
    pst_error pe;
    pst_store *st = pst_open(db, &pe);
    assert_non_null(st);
    pst_list_query q = {.machine_id = MID_A};
    pst_thread_page page;
    assert_int_equal(pst_thread_list(st, &q, &page, &pe), PST_OK);
    assert_true(page.count >= 1);
    char want[PST_ID_LEN];
    assert_true(pst_workspace_id(MID_A, real, want));
    assert_string_equal(page.items[0].workspace_id, want);
    pst_thread_page_clear(&page);
    pst_close(st);
    pst_store *other = pst_open(":memory:", &pe);
    char ws1[PST_ID_LEN], ws2[PST_ID_LEN];
    assert_int_equal(pst_workspace_ensure(other, MID_A, real, ws1, &pe), PST_OK);
    assert_string_equal(ws1, want);
    assert_int_equal(pst_workspace_ensure(other, MID_B, real, ws2, &pe), PST_OK);
    assert_string_not_equal(ws1, ws2);
    pst_close(other);
}

/* Prompting another machine's session (never loaded here) is refused by name. */
static void test_prompt_foreign_refused(void **state) {
    (void)state;
    char db[160], root[160];
    snprintf(db, sizeof db, "%s/foreign.db", tmp);
    snprintf(root, sizeof root, "%s/ws2", tmp);
    conn A;
    conn_open(&A, db, true, MID_A, NULL, root, NULL);
    psdk_error err;
    assert_int_equal(psdk_agent_initialize(A.a, NULL, 0, &err), PSDK_OK);
    psdk_session *s = psdk_session_new(A.a, NULL, NULL, &err);
    assert_non_null(s);
    char sid[40];
    snprintf(sid, sizeof sid, "%s", psdk_session_id(s));
    assert_int_equal(psdk_session_close(s, 3000, &err), PSDK_OK);
    conn_close(&A);

    /* Host B sends session/prompt for A's session id straight away. */
    conn B;
    conn_open(&B, db, true, MID_B, NULL, root, NULL);
    assert_int_equal(psdk_agent_initialize(B.a, NULL, 0, &err), PSDK_OK);
    char params[200], *res = NULL;
    snprintf(params, sizeof params,
             "{\"sessionId\":\"%s\",\"prompt\":[{\"type\":\"text\",\"text\":\"x\"}]}", sid);
    assert_int_equal(psdk_agent_request(B.a, "session/prompt", params, &res, &err), PSDK_ERR_RPC);
    assert_null(res);
    assert_int_equal(err.rpc_code, -32602);
    assert_non_null(strstr(err.message, "belongs to machine " MID_A));
    /* and B's own sessions are fine */
    psdk_session *mine = psdk_session_new(B.a, NULL, NULL, &err);
    assert_non_null(mine);
    assert_int_equal(psdk_session_close(mine, 3000, &err), PSDK_OK);
    conn_close(&B);
}

/* ---------------------------------------------------------------- TCP */

typedef struct tcp_host {
    int lfd;
    host h;
} tcp_host;

static void *tcp_main(void *arg) {
    tcp_host *t = arg;
    int fd = accept(t->lfd, NULL, NULL);
    if (fd < 0) return NULL;
    t->h.fd = fd;
    host_main(&t->h);
    return NULL;
}

static void test_tcp(void **state) {
    (void)state;
    char db[160], root[160];
    snprintf(db, sizeof db, "%s/tcp.db", tmp);
    snprintf(root, sizeof root, "%s/tcpws", tmp);
    tcp_host t = {0};
    t.lfd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    assert_int_equal(bind(t.lfd, (struct sockaddr *)&sa, sizeof sa), 0);
    assert_int_equal(listen(t.lfd, 1), 0);
    socklen_t sl = sizeof sa;
    getsockname(t.lfd, (struct sockaddr *)&sa, &sl);
    pj_t *keyed = pj_pack("{s:{s:{s:s}}}", "providers", "openai", "apiKey", "k");
    t.h.opt = (pacp_options){
        .cwd = root, .settings = keyed, .storage = {.locator = db}, .machine_id = MID_A};
    pthread_t th;
    pthread_create(&th, NULL, tcp_main, &t);
    psdk_tcp_options to = {.host = "127.0.0.1", .port = ntohs(sa.sin_port)};
    psdk_sandbox_options o = {.transport_factory = psdk_tcp_factory, .factory_ctx = &to};
    psdk_error err;
    psdk_sandbox *sb = psdk_sandbox_new(&o, &err);
    psdk_agent *a = psdk_agent_connect(sb, root, &err);
    assert_non_null(a);
    assert_int_equal(psdk_agent_initialize(a, NULL, 0, &err), PSDK_OK);
    psdk_session *s = psdk_session_new(a, NULL, NULL, &err);
    assert_non_null(s);
    assert_int_equal(psdk_session_close(s, 0, &err), PSDK_OK);
    psdk_agent_free(a);
    pthread_join(th, NULL);
    close(t.lfd);
    psdk_sandbox_free(sb);
    pj_decref(keyed);
    assert_int_equal(t.h.rc, 0);
}

static int group_setup(void **state) {
    (void)state;
    snprintf(tmp, sizeof tmp, "/tmp/peri-sdk-test-XXXXXX");
    if (!mkdtemp(tmp)) return -1;
    return mock_start(&mock) ? 0 : -1;
}

static int group_teardown(void **state) {
    (void)state;
    mock_stop(&mock);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmp);
    return system(cmd) ? -1 : 0;
}

int main(void) {
    if (pm_global_init() != PM_OK) return 1;
    mock_server probe;
    if (!mock_start(&probe)) {
        const char *ci = getenv("CI");
        if (ci && !strcmp(ci, "true")) {
            printf("FAIL: the mock model server cannot run here (CI)\n");
            return 1;
        }
        printf("SKIP: the mock model server cannot run here\n");
        return 77;
    }
    mock_stop(&probe);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_stdio_peri_acp),
        cmocka_unit_test(test_stdio_settings_stdin),
        cmocka_unit_test(test_two_hosts_one_process),
        cmocka_unit_test(test_prompt_foreign_refused),
        cmocka_unit_test(test_tcp),
    };
    int rc = cmocka_run_group_tests(tests, group_setup, group_teardown);
    pm_global_cleanup();
    return rc;
}
