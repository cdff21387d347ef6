/*
 * trust_gate.c — asking the user to trust a project's own configuration.
 *
 * A session's project may carry `.peri/settings.json` with MCP servers (host programs),
 * hooks (commands at session events) and allow rules. open_mcp starts only the servers of content
 * the user already trusted (agent/trust.c). Here, before each turn, on the prompt's worker thread
 * (never on the request thread, which must stay free for cancel and other sessions):
 *   - content not trusted and not yet asked about in this session: a plain message says
 *     what was held back, then a permission request shows every server command,
 *     argument, environment entry, URL and header and every allow rule in full (JSON
 *     text: control characters and non-ASCII escaped, so nothing hides); only the
 *     explicit "Trust this exact configuration" answer records trust (user state) and
 *     starts the servers and hands the project's hooks to the hooks middleware;
 *   - content trusted before (at an earlier session, or meanwhile with `peri trust` in a
 *     terminal): its hooks are installed and its servers start, unless they already
 *     started with the session (pct__mcp_open: s->servers_on).
 * A changed file has another digest: its hooks stop and it is asked about again.
 *
 * Invariants: worker thread only (s->project_on, s->servers_on, s->trust_asked, the
 * pool's server list); a cancel of the turn ends an open question as "not trusted".
 */
#include "ctl_impl.h"

#include "peri/json.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void say(pct_sess *s, uint64_t turn, const char *text) {
    pag_event ev = {.kind = PAG_EV_TEXT, .turn = turn, .text = text};
    pct__emit(s, &ev);
}

/* The human-readable listing of what trusting would allow (malloc'd). */
static char *describe(const pag_project_config *pc) {
    pj_t *m = pj_loads(pc->material, 0, NULL);
    pj_t *servers = pj_object_get(m, "mcpServers");
    pj_t *allow = pj_object_get(m, "allow");
    pj_t *hooks = pj_object_get(m, "hooks");
    int flags = PJ_INDENT(2) | PJ_SORT_KEYS | PJ_ENSURE_ASCII;
    char *sv = servers ? pj_dumps(servers, flags) : NULL;
    char *al = allow ? pj_dumps(allow, flags) : NULL;
    char *hk = hooks ? pj_dumps(hooks, flags) : NULL;
    pj_decref(m);
    const char *fmt = "The project %s has its own configuration in .peri/settings.json. None of "
                      "it applies until you trust exactly this content (SHA-256 %.16s...).\n\n"
                      "MCP servers it would start on this machine, outside the sandbox, with "
                      "your user's rights:\n%s\n\nTools it would let run without asking:\n%s\n\n"
                      "Hooks it would run at session events (in the sandbox unless a hook says "
                      "\"unsandboxed\"):\n%s\n\n"
                      "Trust it only if you know where this project comes from. Any change to "
                      "these entries asks again.";
    char *where = pb_visible_prompt(pc->real_path, 4096, false); /* a path may hold controls too */
    size_t n = strlen(fmt) + (where ? strlen(where) : 0) + 16 + (sv ? strlen(sv) : 6) +
               (al ? strlen(al) : 6) + (hk ? strlen(hk) : 6) + 1;
    char *out = where ? malloc(n) : NULL;
    if (out)
        snprintf(out, n, fmt, where, pc->digest, sv ? sv : "(none)", al ? al : "(none)",
                 hk ? hk : "(none)");
    free(where);
    free(sv);
    free(al);
    free(hk);
    return out;
}

/* Puts the (now trusted) project configuration in force: its hooks, and its servers in
 * the session's pool unless they started with the session. */
static void start_servers(pct_sess *s, uint64_t turn, const pag_project_config *pc) {
    bool started = !strcmp(s->servers_on, pc->digest);
    pmcp_pool *ext = pct__mcp_ext(s);
    if (pc->servers_json && !started && !ext)
        return; /* servers still starting (a cancelled wait): the
                    next turn starts these */
    memcpy(s->project_on, pc->digest, sizeof s->project_on);
    pct__mw_project(s, pc, turn); /* the project's hooks, now trusted */
    if (!pc->servers_json || started) return;
    memcpy(s->servers_on, pc->digest, sizeof s->servers_on);
    char *notes = NULL;
    int rc = pmcp_pool_add_project(ext, pc->servers_json, &notes);
    if (rc == 1) pct__rebuild_tools(s);
    if (notes) say(s, turn, notes);
    free(notes);
}

/* Asks; true when the user trusted exactly pc. */
static bool ask(pct_sess *s, uint64_t turn, const pag_project_config *pc) {
    if (!s->c->sink.ask_permission) return false;
    char *text = describe(pc);
    pj_t *content = text ? pj_pack("[{s:s, s:{s:s, s:s}}]", "type", "content", "content", "type",
                                   "text", "text", text)
                         : NULL;
    pj_t *meta = pj_pack("{s:{s:s, s:s}}", "peri.trustRequest", "project", pc->real_path, "digest",
                         pc->digest);
    char *cj = content ? pj_dumps(content, PJ_COMPACT) : NULL;
    char *mj = meta ? pj_dumps(meta, PJ_COMPACT) : NULL;
    pj_decref(content);
    pj_decref(meta);
    char id[40], title[300];
    snprintf(id, sizeof id, "peri-trust-%.16s", pc->digest);
    char *where = pb_visible_prompt(pc->real_path, 160, false);
    snprintf(title, sizeof title, "Trust the configuration of project %s?",
             where ? where : "(out of memory)");
    free(where);
    pag_event call = {.kind = PAG_EV_TOOL_CALL,
                      .turn = turn,
                      .tool_call_id = id,
                      .tool_name = PAG_TRUST_REQUEST_TOOL,
                      .title = title,
                      .tool_kind = "other",
                      .status = "pending",
                      .raw_input = pc->material,
                      .content_json = cj,
                      .meta_json = mj};
    atomic_store(&s->trust_cancel, 0);
    pag_permission p =
        text && cj && mj ? s->c->sink.ask_permission(s->c->sink.ctx, s->id, &call, &s->trust_cancel)
                         : PAG_PERM_REJECT;
    free(text);
    free(cj);
    free(mj);
    return p == PAG_PERM_TRUST_PROJECT;
}

void pct__trust_before_turn(pct_sess *s, uint64_t turn) {
    if (s->read_only) return;
    pag_project_config pc;
    if (pag_project_config_read(s->cwd, &pc) != 0) return;
    /* hooks run only while the file holds exactly the trusted content */
    if (strcmp(s->project_on, pc.digest) != 0) {
        pct__mw_project(s, NULL, turn);
        s->project_on[0] = '\0'; /* nothing in force: that content back installs them again */
    }
    if (!pag_project_config_any(&pc) || !strcmp(s->project_on, pc.digest)) goto out;
    if (pag_trust_is_trusted(s->c->home, &pc)) {
        start_servers(s, turn, &pc);
        goto out;
    }
    if (!strcmp(s->trust_asked, pc.digest)) goto out; /* already said no in this session */
    memcpy(s->trust_asked, pc.digest, sizeof s->trust_asked);
    say(s, turn,
        "This project's .peri/settings.json names MCP servers, hooks or tool allow rules. "
        "They are not applied: you have not trusted this exact content yet.\n");
    if (!ask(s, turn, &pc)) {
        say(s, turn,
            "Project configuration not trusted: its MCP servers stay stopped and its hooks "
            "and allow rules do not apply (`peri trust DIR` decides from a terminal).\n");
        goto out;
    }
    char err[512];
    if (pag_trust_record(s->c->home, &pc, err, sizeof err) != 0) {
        char line[700];
        snprintf(line, sizeof line, "Trust could not be recorded: %s\n", err);
        say(s, turn, line);
        goto out;
    }
    start_servers(s, turn, &pc);
    say(s, turn, "Project configuration trusted.\n");
out:
    pag_project_config_free(&pc);
}
