/*
 * cmd_trust.c — `peri trust [DIR] [--yes] | --list | --revoke DIR`: the terminal's way to
 * decide whether a project's own configuration (.peri/settings.json: MCP servers that
 * start on this machine, tools allowed without asking) may take effect.
 *
 * It prints exactly what trusting would allow (JSON, control characters and non-ASCII
 * escaped, so nothing hides; the path with its control characters made visible) with its
 * digest, then asks on the terminal. `--digest SHA256` accepts without asking exactly the
 * content that was reviewed (refused when the file changed since); `--yes` accepts
 * whatever the file holds now (for scripts). The decision lands in ~/.peri/trust.json
 * (user state), bound to the content: a changed file asks again.
 */
#include "cli/commands.h"
#include "peri/agent.h"
#include "peri/tools.h"

#include "peri/json.h"
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void usage(FILE *f) {
    fprintf(f, "usage: peri trust [DIR] [--yes]   review and trust DIR's .peri/settings.json\n"
               "       peri trust [DIR] --digest SHA256\n"
               "                                  trust it only if it is still the content\n"
               "                                  of that digest (the one shown on review)\n"
               "       peri trust --list          list the trusted projects\n"
               "       peri trust --revoke DIR    forget every decision about DIR\n"
               "DIR defaults to the current directory. Exit status: 0 trusted (or listed,\n"
               "revoked), 1 not trusted or an error, 2 usage error.\n");
}

static void show(const pag_project_config *pc) {
    pj_t *m = pj_loads(pc->material, 0, NULL);
    int flags = PJ_INDENT(2) | PJ_SORT_KEYS | PJ_ENSURE_ASCII;
    pj_t *servers = pj_object_get(m, "mcpServers");
    pj_t *allow = pj_object_get(m, "allow");
    pj_t *hooks = pj_object_get(m, "hooks");
    char *sv = servers ? pj_dumps(servers, flags) : NULL;
    char *al = allow ? pj_dumps(allow, flags) : NULL;
    char *hk = hooks ? pj_dumps(hooks, flags) : NULL;
    char *where = pb_visible_prompt(pc->real_path, 4096, false);
    printf("Project: %s\nContent SHA-256: %s\n\n", where ? where : "(out of memory)", pc->digest);
    free(where);
    printf("MCP servers it would start on this machine (outside the sandbox, as you):\n%s\n\n",
           sv ? sv : "(none)");
    printf("Tools it would let run without asking:\n%s\n\n", al ? al : "(none)");
    printf("Hooks it would run at session events (sandboxed unless a hook says "
           "\"unsandboxed\"):\n%s\n\n",
           hk ? hk : "(none)");
    free(sv);
    free(al);
    free(hk);
    pj_decref(m);
}

static void print_finding(void *ud, bool error, const char *message) {
    (void)ud;
    fprintf(stderr, "peri trust: .peri/settings.json: %s%s\n", error ? "" : "warning: ", message);
}

/* The project file checked like the user's settings (unknown keys with "did you mean",
 * wrong types, broken JSON with its line and column), plus the keys a project cannot
 * set: only mcpServers, permissions.allow and hooks of a project apply (after trust);
 * models, providers, the sandbox and the rest are the user's. Printed on stderr, never
 * fatal: what is shown for trust is what would apply. Read through the confined reader,
 * like the agent reads it. */
static void check_project_file(const char *real) {
    size_t len = 0;
    char *txt = pag_read_beneath(real, ".peri/settings.json", 1u << 20, &len);
    if (!txt) return;
    pj_error_t je;
    pj_t *doc = pj_loadb(txt, len, 0, &je);
    free(txt);
    if (!doc) {
        fprintf(stderr, "peri trust: .peri/settings.json: broken JSON at line %d, column %d: %s\n",
                je.line, je.column, je.text);
        return;
    }
    pag_settings_check(doc, print_finding, NULL);
    static const char *const project_keys[] = {"mcpServers", "permissions", "hooks", "$schema"};
    const char *key;
    pj_t *v;
    pj_object_foreach(doc, key, v) {
        bool ok = false;
        for (size_t i = 0; i < sizeof project_keys / sizeof project_keys[0]; i++)
            ok = ok || !strcmp(key, project_keys[i]);
        if (!ok)
            fprintf(stderr,
                    "peri trust: .peri/settings.json: warning: \"%.100s\" is not read from a "
                    "project (only mcpServers, permissions.allow and hooks are); set it in "
                    "~/.peri/settings.json\n",
                    key);
    }
    pj_decref(doc);
}

int peri_cmd_trust(int argc, char **argv) {
    const char *dir = NULL, *revoke = NULL, *digest = NULL;
    bool yes = false, list = false;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--yes") || !strcmp(argv[i], "-y"))
            yes = true;
        else if (!strcmp(argv[i], "--list"))
            list = true;
        else if (!strcmp(argv[i], "--revoke") && i + 1 < argc)
            revoke = argv[++i];
        else if (!strcmp(argv[i], "--digest") && i + 1 < argc)
            digest = argv[++i];
        else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            usage(stdout);
            return 0;
        } else if (argv[i][0] != '-' && !dir)
            dir = argv[i];
        else {
            fprintf(stderr, "peri trust: unknown argument '%s'\n", argv[i]);
            usage(stderr);
            return 2;
        }
    }
    const char *home = getenv("HOME");
    if (!home || home[0] != '/') {
        fprintf(stderr, "peri trust: HOME is not set: trust decisions live in ~/.peri\n");
        return 1;
    }
    char err[600];
    if (list) {
        char *txt = pag_trust_list(home);
        printf("%s\n", txt ? txt : "{}");
        free(txt);
        return 0;
    }
    if (revoke) {
        if (pag_trust_revoke(home, revoke, err, sizeof err) != 0) {
            fprintf(stderr, "peri trust: %s\n", err);
            return 1;
        }
        printf("Forgot every trust decision about %s.\n", revoke);
        return 0;
    }
    char cwd[PATH_MAX];
    if (!dir) dir = getcwd(cwd, sizeof cwd) ? cwd : ".";
    char real[PATH_MAX];
    if (!realpath(dir, real)) {
        fprintf(stderr, "peri trust: %s: no such directory\n", dir);
        return 1;
    }
    /* the path as printed: a directory name may hold control characters too */
    char *shown = pb_visible_prompt(real, 4096, false);
    if (!shown) {
        fprintf(stderr, "peri trust: out of memory\n");
        return 1;
    }
    pag_project_config pc;
    if (pag_project_config_read(real, &pc) != 0) {
        fprintf(stderr, "peri trust: %s: cannot read the project configuration\n", shown);
        free(shown);
        return 1;
    }
    int rc = 1;
    check_project_file(real);
    if (pc.broken) {
        fprintf(stderr,
                "peri trust: %s/.peri/settings.json is not a JSON object: nothing of it "
                "applies; fix the file first\n",
                shown);
        goto out;
    }
    if (!pag_project_config_any(&pc)) {
        printf("%s has no MCP servers, hooks or allow rules in .peri/settings.json: nothing to "
               "trust.\n",
               shown);
        rc = 0;
        goto out;
    }
    show(&pc);
    if (pag_trust_is_trusted(home, &pc)) {
        printf("Already trusted (this exact content).\n");
        rc = 0;
        goto out;
    }
    if (digest && strcmp(digest, pc.digest) != 0) {
        fprintf(stderr,
                "peri trust: the content is not the one you reviewed (its SHA-256 is now %s, "
                "not %s): review it again\n",
                pc.digest, digest);
        goto out;
    }
    if (!yes && !digest) {
        if (!isatty(0)) {
            fprintf(stderr,
                    "peri trust: not a terminal: review the content above and run `peri trust "
                    "DIR --digest %s` to trust exactly it\n",
                    pc.digest);
            goto out;
        }
        printf("Trust this exact configuration? [y/N] ");
        fflush(stdout);
        char line[16];
        if (!fgets(line, sizeof line, stdin) || (line[0] != 'y' && line[0] != 'Y')) {
            printf("Not trusted.\n");
            goto out;
        }
    }
    if (pag_trust_record(home, &pc, err, sizeof err) != 0) {
        fprintf(stderr, "peri trust: %s\n", err);
        goto out;
    }
    printf("Trusted. Sessions in %s now start its MCP servers, run its hooks and honour its "
           "allow rules.\n",
           shown);
    rc = 0;
out:
    pag_project_config_free(&pc);
    free(shown);
    return rc;
}
