/*
 * run.c — the placement context and the orchestrator: L1 decision, one attempt on
 * the chosen backend, and at most one L2 promotion.
 *
 * L2 promotes only when ALL hold: the L1 decision was wasm_room; the attempt ended
 * with the typed outcome from the room's admission step (never a result, whatever
 * the guest printed); that outcome, serialised and decoded again by the strict
 * decoder, validates against this exact request's raw bytes; native is available.
 * The child decision is selected/native_sandbox/l2_not_started_promotion with
 * parent_decision_id = the parent's identity, and runs once with a fresh execution
 * id. There is no loop and no way back to the room: any failure of the child, and
 * every other failure of the first attempt (trap, limits, cancel, malformed output,
 * anything after the room's file system was built), is returned as it is. A
 * capability dispatch that committed (pl_report.caps) rules promotion out on its own,
 * and the report says so (no_promotion).
 */
#include "place_int.h"
#include "sandbox_int.h"
#include "sourcepass.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

static char *dup_or(const char *s, const char *def) {
    return strdup(s ? s : def);
}

pl_ctx *pl_new(const pl_config *cfg, pl_error *err) {
    pl_config none = {0};
    if (!cfg) cfg = &none;
    pl_ctx *pc = calloc(1, sizeof *pc);
    if (!pc) {
        pl__fail(err, PL_ERR_HOST, "out of memory");
        return NULL;
    }
    pthread_mutex_init(&pc->mu, NULL);
    atomic_init(&pc->seq, 0);
    pc->bwrap = dup_or(cfg->bwrap, "/usr/bin/bwrap");
    pc->scratch_root = dup_or(cfg->scratch_root, "/tmp");
    pc->cgroup_root = dup_or(cfg->cgroup_root, "/sys/fs/cgroup");
    pc->ruby = dup_or(cfg->ruby, "/usr/bin/ruby");
    pc->pasta = dup_or(cfg->pasta, "/usr/bin/pasta");
    pc->ruby_hook = cfg->ruby_hook;
    pc->python = dup_or(cfg->python, "/usr/bin/python3");
    pc->python_hook = cfg->python_hook;
    bool ok =
        pc->bwrap && pc->scratch_root && pc->cgroup_root && pc->ruby && pc->pasta && pc->python;
    if (ok && cfg->nwasm_runner) {
        pc->wasm_runner = calloc(cfg->nwasm_runner, sizeof *pc->wasm_runner);
        ok = pc->wasm_runner != NULL;
        for (size_t i = 0; ok && i < cfg->nwasm_runner; i++) {
            ok = cfg->wasm_runner[i] && (pc->wasm_runner[i] = strdup(cfg->wasm_runner[i]));
            if (ok) pc->nwasm_runner = i + 1;
        }
    }
    if (ok && cfg->room) {
        pc->room = cfg->room;
    } else if (ok) {
        pr_error pe;
        pr_host_config rc = {.real_clocks = true}; /* programs run for a person */
        pc->room = pr_host_new(&rc, &pe);
        pc->own_room = true;
        if (!pc->room) {
            pl_free(pc);
            pl__fail(err, PL_ERR_HOST, "room host: %s", pe.message);
            return NULL;
        }
    }
    if (!ok) {
        pl_free(pc);
        pl__fail(err, PL_ERR_HOST, "out of memory");
        return NULL;
    }
    pl__reclaim_stale(pc); /* what runs of dead processes left behind */
    return pc;
}

void pl_free(pl_ctx *pc) {
    if (!pc) return;
    if (pc->own_room) pr_host_free(pc->room);
    pb_free_all(pc->bwrap, pc->scratch_root, pc->cgroup_root, pc->ruby, pc->python, pc->pasta,
                pc->bpf[0], pc->bpf[1]);
    pb_strv_free(pc->wasm_runner, pc->nwasm_runner);
    pl__masks_free_refs(pc);
    pthread_mutex_destroy(&pc->mu);
    free(pc);
}

void pl_report_clear(pl_report *rep) {
    if (!rep) return;
    for (size_t i = 0; i < rep->nevidence; i++)
        free(rep->evidence[i]);
    pr_cap_log_clear(&rep->caps);
    pl__result_clear(&rep->result);
    memset(rep, 0, sizeof *rep);
    pl__result_init(&rep->result);
}

static void execution_id(char out[40]) {
    unsigned char b[12];
    if (getrandom(b, sizeof b, 0) != (ssize_t)sizeof b) memset(b, 0, sizeof b);
    memcpy(out, "exec-", 5);
    pl__hex(b, sizeof b, out + 5);
}

static bool attempt(pl_ctx *pc, const pl_request *r, const pl_policy *pol, pl_cancel *cancel,
                    const char *raw, size_t raw_len, pl_report *rep, const pl_decision *d,
                    bool *promotable, pl_outcome *outcome, pl_error *err) {
    char xid[40];
    execution_id(xid);
    pl__result_clear(&rep->result);
    pl_grant grant = {pol->capability, pol->cap_ud, &rep->caps};
    pl_attempt at = {&rep->result, &rep->evidence[rep->nevidence], d, xid, &grant};
    bool ok;
    *promotable = false;
    if (d->backend == PL_BACKEND_WASM_ROOM)
        ok = pl__room_attempt(pc, r, raw, raw_len, cancel, &at, promotable, outcome, err);
    else
        ok = pl__native_attempt(pc, r, pol, cancel, &at, err);
    if (rep->evidence[rep->nevidence]) rep->nevidence++;
    return ok;
}

bool pl__promotion_allowed(const pl_decision *parent, bool typed, const pl_outcome *o,
                           const char *raw, size_t raw_len, bool native_ok, pl_error *why) {
    if (!parent->selected || parent->backend != PL_BACKEND_WASM_ROOM ||
        parent->parent_decision_id[0])
        return pl__fail(why, PL_ERR_OUTCOME,
                        "the parent decision is not an initial wasm_room decision");
    if (!typed) return pl__fail(why, PL_ERR_OUTCOME, "no typed runtime_unsupported outcome");
    /* The typed value crosses a strict codec: what is validated is what was encoded. */
    size_t n = 0;
    char *j = pl_outcome_json(o, &n);
    if (!j) return pl__fail(why, PL_ERR_HOST, "out of memory");
    pl_outcome back;
    bool ok = pl_outcome_decode(j, n, &back, why) && pl_outcome_validate(&back, raw, raw_len, why);
    free(j);
    if (!ok) return false;
    if (!native_ok) return pl__fail(why, PL_ERR_NATIVE, "native is unavailable");
    return true;
}

void pl__child_decision(const pl_decision *parent, bool unsandboxed, pl_decision *child) {
    memset(child, 0, sizeof *child);
    child->selected = true;
    child->backend = PL_BACKEND_NATIVE_SANDBOX;
    child->reason = PL_REASON_PROMOTION;
    memcpy(child->request_sha256, parent->request_sha256, PL_DIGEST_LEN);
    child->state_class = parent->state_class;
    memcpy(child->parent_decision_id, parent->identity, PL_DIGEST_LEN);
    child->unsandboxed = unsandboxed;
    pl_decision_seal(child);
}

bool pl_run(pl_ctx *pc, const pl_request *r, const pl_policy *pol, pl_cancel *cancel,
            pl_report *out, pl_error *err) {
    memset(out, 0, sizeof *out);
    pl__result_init(&out->result);
    pl_policy none = {0};
    if (!pol) pol = &none;
    if (!pc) return pl__fail(err, PL_ERR_HOST, "no placement context");
    if (!pl_request_validate(r, err)) return false;
    size_t raw_len;
    char *owned, *derived = NULL;
    pl_request dr;
    const char *raw = pl__request_raw(r, &raw_len, &owned);
    if (!raw) return pl__fail(err, PL_ERR_HOST, "out of memory");
    bool ok = pl__decide_l1(pc, r, pol, raw, raw_len, &out->decisions[0], &out->native_reason, err);
    if (!ok) goto done;
    out->ndecisions = 1;
    const pl_decision *d = &out->decisions[0];
    if (!d->selected) {
        char why[256] = "disabled by the policy";
        if (pol->native != PL_NATIVE_NO) pl_native_available(pc, why, sizeof why);
        char msg[400];
        snprintf(msg, sizeof msg,
                 "native_unavailable: the request needs the native sandbox (%s), "
                 "which is unavailable: %s",
                 pl_reason_name(out->native_reason), why);
        ok = (pl__result_fail(&out->result, msg) && pl__result_finish(&out->result, d)) ||
             pl__fail(err, PL_ERR_HOST, "out of memory");
        goto done;
    }
    /* The source-pass stage: the derived source runs in place of the original, once;
     * its failures are its result, never replayed (sourcepass.c). */
    derived = pl__sourcepass(pol->source_pass, r, out->source_pass, sizeof out->source_pass);
    if (derived) {
        dr = *r;
        dr.program = derived;
        r = &dr;
    }
    bool promotable = false;
    pl_outcome oc;
    ok = attempt(pc, r, pol, cancel, raw, raw_len, out, d, &promotable, &oc, err);
    if (ok && out->caps.committed) {
        /* Admission is the only source of promotion and runs before any guest code, so
         * no promotable attempt can have dispatched; this holds the rule on its own. */
        snprintf(out->no_promotion, sizeof out->no_promotion,
                 "a capability dispatch committed an effect outside the room; the request is "
                 "never run again");
        promotable = false;
    }
    if (!ok || !promotable) goto done;
    out->has_outcome = true;
    out->outcome = oc;
    bool sandbox_ok = pol->native != PL_NATIVE_NO && pl_native_available(pc, NULL, 0);
    bool native_ok = sandbox_ok || (pol->native != PL_NATIVE_NO && pol->native_unsandboxed);
    pl_error why;
    if (!pl__promotion_allowed(d, true, &oc, raw, raw_len, native_ok, &why)) goto done;
    pl__child_decision(d, !sandbox_ok, &out->decisions[1]);
    out->ndecisions = 2;
    ok = attempt(pc, r, pol, cancel, raw, raw_len, out, &out->decisions[1], &promotable, &oc, err);
done:
    free(derived);
    free(owned);
    if (!ok) pl_report_clear(out);
    return ok;
}
