/*
 * permission.c — the permission middleware (the agent's own): before a tool call, the
 * session's mode decides whether the call runs, is refused (plan mode: read-only tools
 * only) or needs the user's approval, which goes through the injected HITL broker
 * (pag_ports.ask_permission; the host's remembered answers and allow rules live behind
 * it). A refusal or a rejection is a deny whose reason is the tool result the model sees.
 */
#include "agent/middleware/chain.h"
#include "agent/session_impl.h"

#include <string.h>

/* Whether a tool call must ask the user, may run, or is refused, by mode. */
typedef enum gate { GATE_RUN = 0, GATE_ASK, GATE_REFUSE } gate;

static gate mode_gate(const pag_session *s, const pag_tool_info *ti, const char *args) {
    /* A tool asks by its flag, or when the port says this call needs it (e.g. `run`
     * asks only when its request goes to the native sandbox). */
    bool needs =
        ti->needs_permission || (s->ports.tool_ops->needs_permission &&
                                 s->ports.tool_ops->needs_permission(s->ports.ctx, ti->name, args));
    switch (pag_session_mode(s)) {
    case PAG_MODE_PLAN: return ti->read_only ? GATE_RUN : GATE_REFUSE;
    case PAG_MODE_BYPASS: return GATE_RUN;
    case PAG_MODE_ACCEPT_EDITS:
        if (ti->kind && strcmp(ti->kind, "edit") == 0) return GATE_RUN;
        return needs ? GATE_ASK : GATE_RUN;
    default: return needs ? GATE_ASK : GATE_RUN;
    }
}

static void on_hook(void *ctx, const pag_hook_call *call, pag_hook_answer *ans) {
    pag_session *s = ctx;
    if (call->hook != PAG_HOOK_PRE_TOOL || !call->tool || !call->call) return;
    const char *args = call->call->raw_input ? call->call->raw_input : "{}";
    gate g = mode_gate(s, call->tool, args);
    if (g == GATE_REFUSE) {
        pag_hook_answer_deny(ans, "refused: plan mode allows read-only tools only; describe the "
                                  "change in your plan instead of making it");
    } else if (g == GATE_ASK && s->ports.ask_permission) {
        pag_permission p = s->ports.ask_permission(s->ports.ctx, call->call, s->cancelp);
        if (p == PAG_PERM_REJECT || p == PAG_PERM_REJECT_ALWAYS)
            pag_hook_answer_deny(ans, "rejected: the user did not allow this tool call");
        else if (p == PAG_PERM_CANCELLED)
            pag_hook_answer_deny(ans, "cancelled: the permission request was cancelled");
    }
}

int pag__permission_mount(pag_session *s, pag_middleware *out) {
    *out = (pag_middleware){.name = "permission",
                            .hooks = PAG_HOOK_BIT(PAG_HOOK_PRE_TOOL),
                            .ctx = s,
                            .on_hook = on_hook};
    return 0;
}
