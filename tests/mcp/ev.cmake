# The event-driven MCP client (src/mcp/ev*.c, peri/mcp_ev.h): over the native ports loop
# against the Python servers of ev_server.py (honest and hostile), against the MCP
# reference server in streamableHttp mode (77 when it is not installed), and built for
# wasm32-wasi (77 without the toolchain).
if(CMOCKA_FOUND AND Python3_FOUND)
  add_executable(test_mcp_ev ${CMAKE_CURRENT_LIST_DIR}/test_mcp_ev.c)
  target_include_directories(test_mcp_ev PRIVATE ${CMAKE_SOURCE_DIR}/src)
  target_link_libraries(test_mcp_ev PRIVATE peri PkgConfig::CMOCKA)
  add_test(NAME mcp.ev COMMAND test_mcp_ev ${Python3_EXECUTABLE}
                               ${CMAKE_CURRENT_LIST_DIR}/ev_server.py)
  set_tests_properties(mcp.ev PROPERTIES TIMEOUT 180)
  if(DEFINED ENV{PERI_NPM_DIR})
    set(ev_npm $ENV{PERI_NPM_DIR})
  else()
    set(ev_npm $ENV{HOME}/.cache/peri-c/npm)
  endif()
  find_program(PERI_NODE node)
  if(NOT PERI_NODE)
    set(PERI_NODE node)
  endif()
  add_test(NAME mcp.ev.everything
           COMMAND test_mcp_ev --everything ${PERI_NODE}
                   ${ev_npm}/node_modules/@modelcontextprotocol/server-everything/dist/index.js)
  set_tests_properties(mcp.ev.everything PROPERTIES TIMEOUT 120 SKIP_RETURN_CODE 77)
endif()
add_test(NAME mcp.ev.wasm
         COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/ev_wasm.sh ${CMAKE_SOURCE_DIR}
                 ${CMAKE_CURRENT_BINARY_DIR}/ev_wasm)
set_tests_properties(mcp.ev.wasm PROPERTIES TIMEOUT 120 SKIP_RETURN_CODE 77)
