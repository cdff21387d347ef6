/*
 * guest_nonet.c — in `peri`, no HTTP for room guests: `peri` links only the engine and
 * the room (docs/wasi.md, "Cold start"), so a guest granted the network is run by
 * peri-agent instead (guest_cli.c execs it); file.* calls go to the room's lease.
 */
#include "cli/guest_cli.h"

pr_cap_fn peri_guest_fetch(void) {
    return NULL;
}
