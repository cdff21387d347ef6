/*
 * guest_net.c — in peri-agent, the HTTP of room guests: `peri python|ruby
 * --allow-network` run here, where libcurl is linked, with the tools layer's fetch
 * handler (tools/fetch_cap.c: http.fetch under the network policy, file.* to the lease).
 */
#include "cli/guest_cli.h"
#include "peri/tools.h"

pr_cap_fn peri_guest_fetch(void) {
    return ptl_fetch_cap_handle;
}
