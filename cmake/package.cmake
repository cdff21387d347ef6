# cmake/package.cmake: `make install` and the Debian package (`make deb`, CPack).
#
# Layout under PREFIX (default /usr/local; the .deb uses /usr):
#   bin/peri                      the command
#   libexec/peri/peri-agent       the agent commands' program; `peri` finds it relative
#                                 to its own location (src/cli/locate.c), so the tree
#                                 may be moved or unpacked anywhere
#   lib/libperi.a, include/peri/  the library and its headers, for embedders (docs/sdk.md)
#   share/doc/peri/               README, licence, the docs
include(GNUInstallDirs)
install(TARGETS peri_cli RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(TARGETS peri_agent RUNTIME DESTINATION ${CMAKE_INSTALL_LIBEXECDIR}/peri)
install(TARGETS peri ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(DIRECTORY ${CMAKE_SOURCE_DIR}/include/peri DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(FILES ${CMAKE_SOURCE_DIR}/README.md ${CMAKE_SOURCE_DIR}/LICENSE
        DESTINATION ${CMAKE_INSTALL_DOCDIR})
install(DIRECTORY ${CMAKE_SOURCE_DIR}/docs/ DESTINATION ${CMAKE_INSTALL_DOCDIR}/docs
        FILES_MATCHING PATTERN "*.md")

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME peri)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_VENDOR "Peri-C")
set(CPACK_PACKAGE_CONTACT "Peri-C developers <peri-c@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY
    "Run AI agents and the untrusted code they write in a WebAssembly room or a native sandbox")
set(CPACK_PACKAGE_DESCRIPTION
    "Peri-C is an agent execution system: a WebAssembly engine (interpreter and x86-64 JIT),\n\
an isolation room with WASI preview 1, a bubblewrap/seccomp/cgroup native sandbox, and an\n\
agent host speaking ACP to editors, with MCP servers, a terminal UI and a C SDK.")
set(CPACK_PACKAGE_DIRECTORY ${CMAKE_BINARY_DIR})
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT) # peri_<version>_<arch>.deb
set(CPACK_DEBIAN_PACKAGE_SECTION devel)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON) # libc, libcurl, libsqlite3, ... from the binaries
# bubblewrap: the native sandbox; without it `shell` is refused, never run unsandboxed.
set(CPACK_DEBIAN_PACKAGE_DEPENDS "bubblewrap")
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "git")
set(CPACK_DEBIAN_PACKAGE_SUGGESTS "nodejs, postgresql")
set(CPACK_STRIP_FILES ON)
include(CPack)
