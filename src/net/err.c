/*
 * err.c — the English names of the ports' typed errors (pn_err_name). Built in both
 * forms: the native loop and the wasm32 guest side of the ports (port_wasm.c).
 */
#include "peri/net.h"

const char *pn_err_name(pn_err e) {
    switch (e) {
    case PN_OK: return "ok";
    case PN_E_AGAIN: return "again";
    case PN_E_INVALID: return "invalid";
    case PN_E_DENIED: return "denied";
    case PN_E_NOT_FOUND: return "not_found";
    case PN_E_REFUSED: return "refused";
    case PN_E_UNREACHABLE: return "unreachable";
    case PN_E_TIMEOUT: return "timeout";
    case PN_E_TLS: return "tls";
    case PN_E_RESET: return "reset";
    case PN_E_CLOSED: return "closed";
    case PN_E_CANCELLED: return "cancelled";
    case PN_E_LIMIT: return "limit";
    case PN_E_IO: return "io";
    }
    return "unknown";
}
