/*
 * registry.c — the built-in tool table (names, descriptions, input schemas, ACP kinds,
 * permission flags), titles for tool_call updates, and ptl_run's input handling.
 */
#include "tools_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const ptl_tool TOOLS[] = {
    {"read",
     "Read a text file in the workspace. Returns its lines; use offset (1-based line) and "
     "limit (number of lines) for large files.",
     "{\"type\":\"object\",\"properties\":{"
     "\"path\":{\"type\":\"string\",\"description\":\"File path, relative to the workspace\"},"
     "\"offset\":{\"type\":\"integer\",\"minimum\":1,\"description\":\"First line (1-based)\"},"
     "\"limit\":{\"type\":\"integer\",\"minimum\":1,\"description\":\"Number of lines\"}},"
     "\"required\":[\"path\"],\"additionalProperties\":false}",
     PTL_KIND_READ, false, ptl__read},
    {"write",
     "Create or overwrite a file in the workspace with the given content. Missing parent "
     "directories are created.",
     "{\"type\":\"object\",\"properties\":{"
     "\"path\":{\"type\":\"string\",\"description\":\"File path, relative to the workspace\"},"
     "\"content\":{\"type\":\"string\",\"description\":\"The whole new file content\"}},"
     "\"required\":[\"path\",\"content\"],\"additionalProperties\":false}",
     PTL_KIND_EDIT, true, ptl__write},
    {"edit",
     "Replace an exact string in a file. old_string must occur exactly once unless "
     "replace_all is true; include enough surrounding context to make it unique.",
     "{\"type\":\"object\",\"properties\":{"
     "\"path\":{\"type\":\"string\",\"description\":\"File path, relative to the workspace\"},"
     "\"old_string\":{\"type\":\"string\",\"description\":\"Exact text to replace\"},"
     "\"new_string\":{\"type\":\"string\",\"description\":\"Replacement text\"},"
     "\"replace_all\":{\"type\":\"boolean\",\"description\":\"Replace every occurrence\"}},"
     "\"required\":[\"path\",\"old_string\",\"new_string\"],\"additionalProperties\":false}",
     PTL_KIND_EDIT, true, ptl__edit},
    {"list", "List a directory of the workspace (directories end with '/').",
     "{\"type\":\"object\",\"properties\":{"
     "\"path\":{\"type\":\"string\",\"description\":\"Directory, relative to the workspace "
     "(default: the workspace root)\"}},\"additionalProperties\":false}",
     PTL_KIND_READ, false, ptl__list},
    {"glob",
     "Find files whose workspace-relative path matches a glob pattern such as '**/*.c' or "
     "'src/*.h'.",
     "{\"type\":\"object\",\"properties\":{"
     "\"pattern\":{\"type\":\"string\",\"description\":\"Glob pattern; ** matches any number "
     "of directories\"},"
     "\"path\":{\"type\":\"string\",\"description\":\"Directory to search (default: the "
     "workspace root)\"}},\"required\":[\"pattern\"],\"additionalProperties\":false}",
     PTL_KIND_SEARCH, false, ptl__glob},
    {"grep",
     "Search file contents with a POSIX extended regular expression. Prints path:line: text "
     "for each matching line.",
     "{\"type\":\"object\",\"properties\":{"
     "\"pattern\":{\"type\":\"string\",\"description\":\"POSIX extended regex\"},"
     "\"path\":{\"type\":\"string\",\"description\":\"File or directory to search (default: "
     "the workspace root)\"},"
     "\"glob\":{\"type\":\"string\",\"description\":\"Only files matching this glob, e.g. "
     "'*.c' or 'src/**/*.h'\"},"
     "\"ignore_case\":{\"type\":\"boolean\"},"
     "\"max_results\":{\"type\":\"integer\",\"minimum\":1,\"description\":\"Default 200\"}},"
     "\"required\":[\"pattern\"],\"additionalProperties\":false}",
     PTL_KIND_SEARCH, false, ptl__grep},
    {"shell",
     "Run a shell command (/bin/sh -c) in the workspace directory, inside the native "
     "sandbox: the workspace is writable, the rest of the machine read-only or hidden, no "
     "network unless the user allowed it. Returns its combined stdout and stderr and its "
     "exit code. For pure computation prefer the run tool.",
     "{\"type\":\"object\",\"properties\":{"
     "\"command\":{\"type\":\"string\",\"description\":\"The command line\"},"
     "\"timeout_ms\":{\"type\":\"integer\",\"minimum\":1,\"description\":\"Kill the command "
     "after this many milliseconds (default 120000)\"}},"
     "\"required\":[\"command\"],\"additionalProperties\":false}",
     PTL_KIND_EXECUTE, true, ptl__shell_placed},
    {"run", PTL__RUN_DESCRIPTION, PTL__RUN_SCHEMA, PTL_KIND_EXECUTE, false, ptl__run},
};
#define NTOOLS (sizeof TOOLS / sizeof TOOLS[0])

size_t ptl_count(void) {
    return NTOOLS;
}

const ptl_tool *ptl_at(size_t i) {
    return i < NTOOLS ? &TOOLS[i] : NULL;
}

const ptl_tool *ptl_find(const char *name) {
    for (size_t i = 0; name && i < NTOOLS; i++)
        if (strcmp(TOOLS[i].name, name) == 0) return &TOOLS[i];
    return NULL;
}

const char *ptl_name(const ptl_tool *t) {
    return t->name;
}
const char *ptl_description(const ptl_tool *t) {
    return t->description;
}
const char *ptl_schema_json(const ptl_tool *t) {
    return t->schema;
}
ptl_kind ptl_kind_of(const ptl_tool *t) {
    return t->kind;
}
bool ptl_needs_permission(const ptl_tool *t) {
    return t->needs_permission;
}

const char *ptl_kind_name(ptl_kind k) {
    static const char *const names[] = {"read",    "edit",  "delete", "move", "search",
                                        "execute", "think", "fetch",  "other"};
    return (unsigned)k < sizeof names / sizeof names[0] ? names[k] : "other";
}

char *ptl_title(const ptl_tool *t, const char *input_json) {
    pj_error_t je;
    pj_t *in = input_json ? pj_loads(input_json, 0, &je) : NULL;
    const char *verb = NULL, *arg = NULL;
    char *out = NULL;
    if (strcmp(t->name, "read") == 0)
        verb = "Read", arg = pj_string_value(pj_object_get(in, "path"));
    else if (strcmp(t->name, "write") == 0)
        verb = "Write", arg = pj_string_value(pj_object_get(in, "path"));
    else if (strcmp(t->name, "edit") == 0)
        verb = "Edit", arg = pj_string_value(pj_object_get(in, "path"));
    else if (strcmp(t->name, "list") == 0) {
        verb = "List", arg = pj_string_value(pj_object_get(in, "path"));
        if (!arg) arg = ".";
    } else if (strcmp(t->name, "glob") == 0)
        verb = "Find", arg = pj_string_value(pj_object_get(in, "pattern"));
    else if (strcmp(t->name, "grep") == 0)
        verb = "Search for", arg = pj_string_value(pj_object_get(in, "pattern"));
    /* every model-supplied text in a title is made visible: a control character cannot
     * rewrite or hide what the user reads in a permission prompt */
    char *varg = arg ? pb_visible_prompt(arg, 4096, false) : NULL; /* a path whole (PATH_MAX) */
    arg = varg; /* out of memory: the title is the tool's name */
    if (strcmp(t->name, "run") == 0) {
        out = ptl__run_title(in);
    } else if (strcmp(t->name, "shell") == 0) {
        const char *cmd = pj_string_value(pj_object_get(in, "command"));
        if (cmd) {
            /* one line, every character visible (a newline cannot hide a second command
             * behind the first one's comment); long commands cut with a marker */
            char *v = pb_visible_prompt(cmd, 200, false);
            if (v && asprintf(&out, "Run `%s`", v) < 0) out = NULL;
            free(v);
        }
    } else if (strcmp(t->name, "write") == 0 && arg) {
        /* the permission request says how much will be written */
        size_t n = pj_string_length(pj_object_get(in, "content"));
        if (asprintf(&out, "Write %s (%zu bytes)", arg, n) < 0) out = NULL;
    } else if (strcmp(t->name, "edit") == 0 && arg) {
        /* ... and what an edit replaces with what; with replace_all the result is bounded
         * by the tool (32 MiB), and the prompt says every occurrence changes */
        size_t o = pj_string_length(pj_object_get(in, "old_string"));
        size_t n = pj_string_length(pj_object_get(in, "new_string"));
        bool all = pj_is_true(pj_object_get(in, "replace_all"));
        if (asprintf(&out, "Edit %s (replace %zu bytes with %zu bytes%s)", arg, o, n,
                     all ? ", every occurrence" : "") < 0)
            out = NULL;
    } else if (verb && arg) {
        if (asprintf(&out, "%s %s", verb, arg) < 0) out = NULL;
    }
    free(varg);
    pj_decref(in);
    return out ? out : strdup(t->name);
}

void ptl_result_clear(ptl_result *r) {
    if (!r) return;
    free(r->output);
    free(r->content_json);
    free(r->locations_json);
    free(r->meta_json);
    free(r->raw_output_json);
    memset(r, 0, sizeof *r);
    r->exit_code = -1;
}

ptl_status ptl_run(const ptl_tool *t, const char *input_json, const ptl_ctx *ctx, ptl_result *out) {
    memset(out, 0, sizeof *out);
    out->exit_code = -1;
    if (!t || !ctx || !ctx->cwd || ctx->cwd[0] != '/')
        return ptl__error(out, "tool called without an absolute workspace directory");
    if (ctx->cancel && atomic_load(ctx->cancel)) {
        ptl__error(out, "cancelled before it started");
        return PTL_CANCELLED;
    }
    pj_error_t je;
    pj_t *in = pj_loads(input_json && *input_json ? input_json : "{}", 0, &je);
    if (!pj_is_object(in)) {
        pj_decref(in);
        return ptl__error(out, "%s: the input is not a JSON object (%s)", t->name, je.text);
    }
    ptl_status st = t->run(in, ctx, out);
    pj_decref(in);
    if (!out->output && st != PTL_ERR_NOMEM) st = ptl__error(out, "%s: no output", t->name);
    return st;
}
