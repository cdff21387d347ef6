# Automatic model-written compaction, goal, cron: end-to-end over ACP with the scripted
# model (tests/host/mock_model.py), each scenario its own ctest.
find_package(Python3 COMPONENTS Interpreter)
if(Python3_FOUND)
  foreach(s autocompact autocompact_fallback goal cron cron_ask cron_restart)
    add_test(NAME middleware.${s}
             COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/e2e_mw2.py
                     $<TARGET_FILE:peri_cli> ${CMAKE_SOURCE_DIR}/tests/host/mock_model.py ${s})
    set_tests_properties(middleware.${s} PROPERTIES TIMEOUT 120)
  endforeach()
endif()

# the cron middleware's parser, next due time, timer and tools (cmocka)
if(CMOCKA_FOUND)
  add_executable(test_mw_cron test_cron.c)
  target_link_libraries(test_mw_cron PRIVATE peri PkgConfig::CMOCKA)
  add_test(NAME middleware.cron.unit COMMAND test_mw_cron)
  set_tests_properties(middleware.cron.unit PROPERTIES TIMEOUT 60)
endif()
