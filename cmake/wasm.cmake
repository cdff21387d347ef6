# cmake/wasm.cmake: the agent host's WebAssembly form. Compiles the core of the agent
# host's lower layers for wasm32-wasi (clang-14, wasm-ld, Debian's wasi-libc in
# /usr/lib/wasm32-wasi) into build/wasm/libperi-core.a, and links build/peri-agent.wasm
# (a wasm32-wasip1 reactor, docs/wasm-host.md) from that archive and every
# src/agentwasm/*.c when that folder has sources. Both are part of ALL. The module is
# linked from the archive, so only what the reactor reaches is linked.
#
# Invariants: the native build is untouched (nothing here adds to the peri library);
# a missing toolchain only warns outside CI and fails the configure when CI=true.
# `-mexec-model=reactor` is a link flag only (with -c and -Werror clang rejects it).
#
# The core list is the closure found by compiling each file for wasm32-wasi:
#   base (all but thread.c), net (err, port_wasm, http_codec, http_client),
#   model (all but http.c and models.c, which need libcurl),
#   the remote store (remote*, pgwire*, pg_shared, rules_sql, uuid_form, error),
#   the agent core (session, turn, loop, settings, settings_schema, context, compact,
#   project; middleware chain, decl, goal, permission), the tools registry and output.c;
#   the pure ACP parts (acp/updates, acp/prompt_message, acp/params) and the
#   event-driven MCP client (mcp/ev*, proto, sse). The archive holds objects with
#   references nothing in the module reaches (ptl_read_beneath from project.c, the tool
#   bodies the registry names): an archive link leaves them out.
# Left out: base/thread.c, model/http.c+models.c (libcurl), store/uuid.c, agent/trust.c
# (libcrypto), middleware cron.c and hooks.c (threads, processes), every tool.
find_program(PERI_WASM_CLANG NAMES clang-14 clang)
find_program(PERI_WASM_LD NAMES wasm-ld wasm-ld-14)
find_program(PERI_WASM_AR NAMES llvm-ar-14 llvm-ar)
set(PERI_WASI_SYSROOT_LIBC /usr/lib/wasm32-wasi/libc.a)
if(NOT PERI_WASM_CLANG OR NOT PERI_WASM_LD OR NOT PERI_WASM_AR OR NOT EXISTS ${PERI_WASI_SYSROOT_LIBC})
  if("$ENV{CI}" STREQUAL "true")
    message(FATAL_ERROR "wasm: clang-14, wasm-ld, llvm-ar or Debian's wasi-libc (/usr/lib/wasm32-wasi) "
                        "missing; the WebAssembly form of the agent host cannot be built (CI=true)")
  endif()
  message(WARNING "wasm: clang-14, wasm-ld, llvm-ar or wasi-libc missing: build/peri-agent.wasm not built")
  return()
endif()

set(PERI_WASM_CFLAGS --target=wasm32-wasi -std=c17 -O2 -D_GNU_SOURCE -Wall -Wextra -Werror
                     -I${CMAKE_SOURCE_DIR}/include -I${CMAKE_SOURCE_DIR}/src)
file(GLOB _pw_base ${CMAKE_SOURCE_DIR}/src/base/*.c)
list(REMOVE_ITEM _pw_base ${CMAKE_SOURCE_DIR}/src/base/thread.c)
file(GLOB _pw_model ${CMAKE_SOURCE_DIR}/src/model/*.c)
list(REMOVE_ITEM _pw_model ${CMAKE_SOURCE_DIR}/src/model/http.c ${CMAKE_SOURCE_DIR}/src/model/models.c)
set(_pw_s ${CMAKE_SOURCE_DIR}/src/store)
# PERI_WASM_CORE_SOURCES: the core list (absolute paths), for other wasm rules to reuse.
set(PERI_WASM_CORE_SOURCES
    ${_pw_base} ${CMAKE_SOURCE_DIR}/src/net/err.c ${CMAKE_SOURCE_DIR}/src/net/port_wasm.c
    ${CMAKE_SOURCE_DIR}/src/net/http_codec.c ${CMAKE_SOURCE_DIR}/src/net/http_client.c ${_pw_model}
    ${_pw_s}/remote.c ${_pw_s}/remote_conn.c ${_pw_s}/rules_sql.c ${_pw_s}/pg_shared.c ${_pw_s}/error.c
    ${_pw_s}/uuid_form.c ${_pw_s}/pgwire.c ${_pw_s}/pgwire_scram.c)
foreach(f session turn loop settings settings_schema context compact project telemetry middleware/chain
          middleware/decl middleware/goal middleware/permission)
  list(APPEND PERI_WASM_CORE_SOURCES ${CMAKE_SOURCE_DIR}/src/agent/${f}.c)
endforeach()
list(APPEND PERI_WASM_CORE_SOURCES ${CMAKE_SOURCE_DIR}/src/tools/registry.c ${CMAKE_SOURCE_DIR}/src/tools/output.c)
# The WebAssembly form's replacements (never in the native library): the model transport
# without libcurl (pm_stream fails with a reason; calls go through pm_call) and command
# hooks that report they cannot run.
# The pure parts of the ACP server (the update projection, the prompt mapping, the
# parameter checks) and the event-driven MCP client over the ports, which the module's
# reactor uses.
foreach(f acp/updates acp/prompt_message acp/params mcp/ev mcp/ev_ports mcp/proto mcp/sse)
  list(APPEND PERI_WASM_CORE_SOURCES ${CMAKE_SOURCE_DIR}/src/${f}.c)
endforeach()
list(APPEND PERI_WASM_CORE_SOURCES ${CMAKE_SOURCE_DIR}/src/model/wasi/transport.c
     ${CMAKE_SOURCE_DIR}/src/agent/wasi/hooks.c)
file(GLOB_RECURSE _pw_headers ${CMAKE_SOURCE_DIR}/include/peri/*.h ${CMAKE_SOURCE_DIR}/src/*.h)

set(PERI_WASM_DIR ${CMAKE_BINARY_DIR}/wasm)
set(PERI_WASM_CORE_OBJECTS "")
foreach(src ${PERI_WASM_CORE_SOURCES})
  file(RELATIVE_PATH rel ${CMAKE_SOURCE_DIR}/src ${src})
  string(REPLACE "/" "_" obj ${rel})
  set(obj ${PERI_WASM_DIR}/obj/${obj}.o)
  add_custom_command(OUTPUT ${obj}
                     COMMAND ${CMAKE_COMMAND} -E make_directory ${PERI_WASM_DIR}/obj
                     COMMAND ${PERI_WASM_CLANG} ${PERI_WASM_CFLAGS} -c ${src} -o ${obj}
                     DEPENDS ${src} ${_pw_headers}
                     COMMENT "wasm32-wasi: ${rel}")
  list(APPEND PERI_WASM_CORE_OBJECTS ${obj})
endforeach()

# PERI_WASM_CORE_LINK: what a wasm link passes for the core (the archive, or the objects).
if(PERI_WASM_AR)
  set(PERI_WASM_CORE_LIB ${PERI_WASM_DIR}/libperi-core.a)
  add_custom_command(OUTPUT ${PERI_WASM_CORE_LIB}
                     COMMAND ${CMAKE_COMMAND} -E rm -f ${PERI_WASM_CORE_LIB}
                     COMMAND ${PERI_WASM_AR} rcs ${PERI_WASM_CORE_LIB} ${PERI_WASM_CORE_OBJECTS}
                     DEPENDS ${PERI_WASM_CORE_OBJECTS}
                     COMMENT "wasm32-wasi: libperi-core.a")
  set(PERI_WASM_CORE_LINK ${PERI_WASM_CORE_LIB})
else()
  set(PERI_WASM_CORE_LINK ${PERI_WASM_CORE_OBJECTS})
endif()
add_custom_target(peri_wasm_core ALL DEPENDS ${PERI_WASM_CORE_LINK})

# build/peri-agent.wasm: the reactor = src/agentwasm/*.c + the core. The ABI exports of
# docs/wasm-host.md: port_wasm.c defines peri_port_event/peri_alloc/peri_free, the
# reactor peri_start/peri_input/peri_input_end/peri_close.
file(GLOB PERI_AGENTWASM_SOURCES CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/src/agentwasm/*.c)
if(PERI_AGENTWASM_SOURCES)
  set(PERI_AGENT_WASM ${CMAKE_BINARY_DIR}/peri-agent.wasm)
  set(_pw_exports "")
  foreach(e peri_port_event peri_alloc peri_free peri_start peri_input peri_input_end peri_close)
    list(APPEND _pw_exports -Wl,--export=${e})
  endforeach()
  add_custom_command(OUTPUT ${PERI_AGENT_WASM}
                     COMMAND ${PERI_WASM_CLANG} ${PERI_WASM_CFLAGS} -mexec-model=reactor
                             "-DPERI_VERSION=\"${PROJECT_VERSION}\"" ${PERI_AGENTWASM_SOURCES} ${PERI_WASM_CORE_LINK} ${_pw_exports}
                             -Wl,--stack-first -Wl,-z,stack-size=1048576 -Wl,--strip-debug
                             -o ${PERI_AGENT_WASM}
                     DEPENDS ${PERI_AGENTWASM_SOURCES} ${PERI_WASM_CORE_LINK} ${_pw_headers}
                     COMMENT "peri-agent.wasm: the agent module (wasm32-wasi reactor)" VERBATIM)
  # The C stack first, below the data, and 1 MiB of it: the JSON reader and writer
  # recurse once per nesting level (80 bytes a level, 2,048 levels allowed), and with the
  # default 64 KiB above the data a deep tool-call argument from the model overwrote the
  # module's own strings (its SQL, its role names). Below the data, an overflow runs off
  # address 0 and traps instead of writing anything.
  # Linked from the archive, so only what the reactor reaches comes in: the registry's
  # tool bodies (shell, files) are never referenced and never linked.
  add_custom_target(peri_agent_wasm ALL DEPENDS ${PERI_AGENT_WASM})
  # The Makefile generator repeats the core's custom commands in every target that
  # depends on their outputs; without this order, make -j built the objects and the
  # archive twice at once, one job deleting libperi-core.a as the other linked it.
  add_dependencies(peri_agent_wasm peri_wasm_core)
endif()
