# The HTTP/1.1 client (src/net/http*.c): the sans-IO codec, and the client over an
# in-memory pn_ports written in the test (scripted server bytes, failures, a fake clock).
if(NOT CMOCKA_FOUND)
  return()
endif()
add_executable(test_http_codec ${CMAKE_CURRENT_LIST_DIR}/test_http_codec.c)
target_link_libraries(test_http_codec PRIVATE peri PkgConfig::CMOCKA)
add_test(NAME net.http_codec COMMAND test_http_codec)
set_tests_properties(net.http_codec PROPERTIES TIMEOUT 120)
add_executable(test_http_client ${CMAKE_CURRENT_LIST_DIR}/test_http_client.c
                                ${CMAKE_CURRENT_LIST_DIR}/http_fake_ports.c)
target_link_libraries(test_http_client PRIVATE peri PkgConfig::CMOCKA)
add_test(NAME net.http_client COMMAND test_http_client)
# a streamed model answer through the client into the model layer's SSE parser and decoder
add_executable(test_http_sse ${CMAKE_CURRENT_LIST_DIR}/test_http_sse.c
                             ${CMAKE_CURRENT_LIST_DIR}/http_fake_ports.c)
target_include_directories(test_http_sse PRIVATE ${CMAKE_SOURCE_DIR}/src)
target_link_libraries(test_http_sse PRIVATE peri PkgConfig::CMOCKA)
add_test(NAME net.http_sse COMMAND test_http_sse)
set_tests_properties(net.http_client net.http_sse PROPERTIES TIMEOUT 120)
# the client over the native ports loop: real sockets on 127.0.0.1, a server thread
add_executable(test_http_loop ${CMAKE_CURRENT_LIST_DIR}/test_http_loop.c)
target_link_libraries(test_http_loop PRIVATE peri PkgConfig::CMOCKA Threads::Threads)
add_test(NAME net.http_loop COMMAND test_http_loop)
set_tests_properties(net.http_loop PROPERTIES TIMEOUT 120)
