/*
 * embed.c — a minimal host embedding libperi-sdk with the stdio transport helper.
 *
 *   embed [--agent CMD ARGS... --] [--close-budget-ms N] PROMPT
 *
 * Starts the agent (default `peri acp`), opens a session in the current directory,
 * prompts, prints the streamed text, then closes the session within the budget and
 * prints the close result on its last line: "closed", or the incomplete error text.
 */
#include "peri/sdk.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void on_update(void *ctx, const psdk_update *u) {
    (void)ctx;
    if (u->text && !strcmp(u->kind, "agent_message_chunk")) {
        fputs(u->text, stdout);
        fflush(stdout);
    }
}

static int usage(void) {
    fprintf(stderr, "usage: embed [--agent CMD ARGS... --] [--close-budget-ms N] PROMPT\n");
    return 2;
}

int main(int argc, char **argv) {
    const char **agent = NULL;
    long long budget = PSDK_CLOSE_BUDGET_DEFAULT_MS;
    const char *prompt = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--agent")) {
            agent = (const char **)&argv[i + 1];
            while (i < argc && strcmp(argv[i], "--") != 0)
                i++;
            if (i == argc || agent == (const char **)&argv[i]) return usage();
            argv[i] = NULL; /* ends the agent's argv */
        } else if (!strcmp(argv[i], "--close-budget-ms") && i + 1 < argc) {
            budget = atoll(argv[++i]);
        } else if (!prompt && argv[i][0] != '-') {
            prompt = argv[i];
        } else {
            return usage();
        }
    }
    if (!prompt) return usage();
    char cwd[PATH_MAX];
    if (!getcwd(cwd, sizeof cwd)) return 1;

    psdk_stdio_options so = {.argv = agent}; /* NULL: `peri acp --cwd <cwd>` */
    psdk_sandbox_options o = {.transport_factory = psdk_stdio_factory, .factory_ctx = &so};
    psdk_error err;
    psdk_sandbox *sb = psdk_sandbox_new(&o, &err);
    psdk_agent *a = sb ? psdk_agent_connect(sb, cwd, &err) : NULL;
    psdk_session *s = NULL;
    if (a && psdk_agent_initialize(a, NULL, 0, &err) == PSDK_OK) {
        psdk_handlers h = {.on_update = on_update};
        s = psdk_session_new(a, NULL, &h, &err);
    }
    int status = 1;
    if (s) {
        char stop[32];
        if (psdk_session_prompt(s, prompt, stop, sizeof stop, &err) == PSDK_OK)
            printf("\n[%s]\n", stop);
        else
            fprintf(stderr, "prompt: %s\n", err.message);
        /* Close the SESSION (bounded replay), then the transport. */
        if (psdk_session_close(s, budget, &err) == PSDK_OK) {
            puts("closed");
            status = 0;
        } else {
            puts(err.message);
        }
    } else {
        fprintf(stderr, "embed: %s\n", err.message);
    }
    psdk_agent_free(a);
    psdk_sandbox_free(sb);
    return status;
}
