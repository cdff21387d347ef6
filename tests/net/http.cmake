# The HTTP/1.1 client (src/net/http*.c): the sans-IO codec, and the client over an
# in-memory pn_ports written in the test (scripted server bytes, failures, a fake clock).
if(NOT CMOCKA_FOUND)
  return()
endif()
add_executable(test_http_codec ${CMAKE_CURRENT_LIST_DIR}/test_http_codec.c)
target_link_libraries(test_http_codec PRIVATE peri PkgConfig::CMOCKA)
add_test(NAME net.http_codec COMMAND test_http_codec)
set_tests_properties(net.http_codec PROPERTIES TIMEOUT 120)
