/*
 * jsonrpc.h — ACP's JSON-RPC: its error codes and its rules for the library's one
 * codec (base/rpc.h). ACP follows JSON-RPC 2.0 as written: an id may be null, params
 * may be an array, and strings may hold U+0000.
 */
#ifndef PACP_JSONRPC_H
#define PACP_JSONRPC_H

#include "peri/rpc.h"

/* JSON-RPC 2.0 and ACP error codes. */
#define PACP_PARSE_ERROR      PB_RPC_PARSE_ERROR
#define PACP_INVALID_REQUEST  PB_RPC_INVALID_REQUEST
#define PACP_METHOD_NOT_FOUND PB_RPC_METHOD_NOT_FOUND
#define PACP_INVALID_PARAMS   PB_RPC_INVALID_PARAMS
#define PACP_INTERNAL_ERROR   PB_RPC_INTERNAL_ERROR
#define PACP_TURN_FAILED      (-32000)
#define PACP_NOT_FOUND        (-32002)
#define PACP_CLOSE_INCOMPLETE (-32010)
#define PACP_AUTH_REQUIRED    (-32000) /* ACP auth_required: "Authentication required" */

/* The rules pb_rpc_decode applies to ACP frames. */
#define PACP_RPC_RULES PB_RPC_ACP_RULES

#endif
