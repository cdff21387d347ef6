/*
 * decl.c — what the middlewares declare to the model: their tools' descriptors (static,
 * immutable), all in one place. The implementations are elsewhere: the host's (the
 * controller runs `task`, `skill`, `ask_user` and the background-task tools), the
 * agent's own for goal_complete (goal.c) and the cron tools (cron.c). The chain lists
 * these declarations in its production order, so the tool catalogue follows the chain.
 */
#include "agent/middleware/chain.h"

#include <stddef.h>

static const char skill_schema[] =
    "{\"type\":\"object\",\"properties\":{\"name\":{\"type\":\"string\",\"description\":"
    "\"The skill's directory name from the Skills list\"}},\"required\":[\"name\"]}";
static const char task_schema[] =
    "{\"type\":\"object\",\"properties\":{\"description\":{\"type\":\"string\",\"description\":"
    "\"A short (3-5 word) title\"},\"prompt\":{\"type\":\"string\",\"description\":\"The "
    "complete task for the subagent; it sees nothing of this conversation\"},\"tools\":{"
    "\"type\":\"array\",\"items\":{\"type\":\"string\"},\"description\":\"Tools the subagent "
    "may use (default: read, list, glob, grep, skill)\"},\"background\":{\"type\":\"boolean\","
    "\"description\":\"Run in the background: returns a task id at once; several subagents "
    "can run at the same time (task_output, task_wait, task_stop)\"}},\"required\":["
    "\"description\",\"prompt\"]}";
static const char ask_schema[] =
    "{\"type\":\"object\",\"properties\":{\"question\":{\"type\":\"string\",\"description\":"
    "\"The question, complete and self-contained\"},\"options\":{\"type\":\"array\","
    "\"items\":{\"type\":\"string\"},\"maxItems\":8,\"description\":\"Choices to offer (the "
    "user picks one); omit for a free-text answer\"}},\"required\":[\"question\"]}";

const pag_tool_info pag__askuser_tools[] = {
    {.name = "ask_user",
     .description = "Ask the user a question and wait for the answer: give \"options\" for a "
                    "choice, or none for a free-text answer. Use it when you cannot proceed "
                    "without a decision only the user can make.",
     .schema_json = ask_schema,
     .kind = "other",
     .read_only = true},
    {.name = NULL}};

const pag_tool_info pag__subagent_tools[] = {
    {.name = "task",
     .description = "Run a subagent on a self-contained task in its own thread, with its own "
                    "tools; returns its final answer. Use for research that would flood "
                    "this conversation.",
     .schema_json = task_schema,
     .kind = "other",
     .read_only = true},
    {.name = NULL}};

static const char task_output_schema[] =
    "{\"type\":\"object\",\"properties\":{\"task_id\":{\"type\":\"string\"},\"max_bytes\":{"
    "\"type\":\"integer\",\"minimum\":1,\"description\":\"Keep the last N bytes (default "
    "8000, at most 64000)\"}},\"required\":[\"task_id\"]}";
static const char task_wait_schema[] =
    "{\"type\":\"object\",\"properties\":{\"task_id\":{\"type\":\"string\"},\"timeout_ms\":{"
    "\"type\":\"integer\",\"minimum\":0,\"description\":\"Wait at most this long (default "
    "30000, at most 600000)\"},\"max_bytes\":{\"type\":\"integer\",\"minimum\":1}},"
    "\"required\":[\"task_id\"]}";
static const char task_stop_schema[] =
    "{\"type\":\"object\",\"properties\":{\"task_id\":{\"type\":\"string\"}},\"required\":["
    "\"task_id\"]}";

const pag_tool_info pag__tasks_tools[] = {
    {.name = "task_output",
     .description = "The output so far of a background task (a shell or subagent started with "
                    "\"background\": true) and whether it is still running.",
     .schema_json = task_output_schema,
     .kind = "read",
     .read_only = true},
    {.name = "task_wait",
     .description = "Wait (bounded) for a background task to end; returns its status and "
                    "output.",
     .schema_json = task_wait_schema,
     .kind = "other",
     .read_only = true},
    {.name = "task_stop",
     .description = "Stop a background task (its whole process tree ends).",
     .schema_json = task_stop_schema,
     .kind = "other",
     .read_only = true},
    {.name = NULL}};

const pag_tool_info pag__skills_tools[] = {
    {.name = "skill",
     .description = "Load the full instructions of a skill listed in the Skills summary.",
     .schema_json = skill_schema,
     .kind = "read",
     .read_only = true},
    {.name = NULL}};

static const char goal_schema[] =
    "{\"type\":\"object\",\"properties\":{\"summary\":{\"type\":\"string\",\"description\":"
    "\"What shows the goal is met\"}},\"required\":[\"summary\"]}";

/* The goal middleware's declared tools (the chain lists them; NULL-name terminated). */
const pag_tool_info pag__goal_tools[] = {
    {.name = "goal_complete",
     .description = "Declare the session's standing goal met (only when it truly is; the "
                    "summary says what shows it). Without a goal it does nothing.",
     .schema_json = goal_schema,
     .kind = "think",
     .read_only = true},
    {.name = NULL}};

static const char cron_create_schema[] =
    "{\"type\":\"object\",\"properties\":{\"schedule\":{\"type\":\"string\",\"description\":"
    "\"5-field cron expression in UTC (minute hour day-of-month month day-of-week, e.g. "
    "\\\"*/15 * * * *\\\") or an interval (\\\"every 30s\\\", \\\"every 10m\\\", \\\"every "
    "2h\\\")\"},\"prompt\":{\"type\":\"string\",\"description\":\"The prompt to run in this "
    "session each time\"}},\"required\":[\"schedule\",\"prompt\"]}";
static const char cron_list_schema[] = "{\"type\":\"object\",\"properties\":{}}";
static const char cron_delete_schema[] =
    "{\"type\":\"object\",\"properties\":{\"id\":{\"type\":\"integer\",\"description\":\"The "
    "schedule's id from cron_create or cron_list\"}},\"required\":[\"id\"]}";

/* The cron middleware's declared tools (the chain lists them; NULL-name terminated). */
const pag_tool_info pag__cron_tools[] = {
    {.name = "cron_create",
     .description = "Schedule a prompt to run in this session at times (cron, UTC) or at an "
                    "interval, while this session stays open. Schedules end with the session "
                    "and are not restored after a restart.",
     .schema_json = cron_create_schema,
     .kind = "other",
     /* a schedule starts turns later, unattended, for as long as the session is open:
      * the user agrees to it first */
     .needs_permission = true,
     .read_only = false},
    {.name = "cron_list",
     .description = "List this session's scheduled prompts (id, schedule, prompt, runs, "
                    "skipped runs, next time).",
     .schema_json = cron_list_schema,
     .kind = "read",
     .read_only = true},
    {.name = "cron_delete",
     .description = "Delete one of this session's scheduled prompts by id.",
     .schema_json = cron_delete_schema,
     .kind = "other",
     .read_only = false},
    {.name = NULL}};
