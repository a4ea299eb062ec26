# Installation: headers, libbraid.so and libbraid.a, a CMake package (find_package(braid)) and a
# pkg-config file (pkg-config --cflags --libs braid).
include(CMakePackageConfigHelpers)

install(TARGETS braid braid_static EXPORT braidTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/braid DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})

set(braid_cmake_dir ${CMAKE_INSTALL_LIBDIR}/cmake/braid)
install(EXPORT braidTargets NAMESPACE braid:: DESTINATION ${braid_cmake_dir})
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/braidConfig.cmake.in
  ${PROJECT_BINARY_DIR}/braidConfig.cmake INSTALL_DESTINATION ${braid_cmake_dir})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/braidConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/braidConfig.cmake ${PROJECT_BINARY_DIR}/braidConfigVersion.cmake
  DESTINATION ${braid_cmake_dir})

set(braid_pc_private_libs "-lhwloc -lpthread -ldl")
if(BRAID_ENABLE_CUDA)
  # libbraid.a needs the static CUDA runtime; the shared library carries it inside.
  set(braid_pc_private_libs "${braid_pc_private_libs} -L${CUDAToolkit_LIBRARY_DIR} -lcudart_static -lrt")
endif()
# The .pc file finds the prefix from its own location, so `cmake --install --prefix X` works.
file(RELATIVE_PATH braid_pc_to_prefix /root/${CMAKE_INSTALL_LIBDIR}/pkgconfig /root)
configure_file(${PROJECT_SOURCE_DIR}/cmake/braid.pc.in ${PROJECT_BINARY_DIR}/braid.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/braid.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)

# The NCCL drop-in, apart from a system NCCL: <prefix>/lib/braid-nccl/libnccl.so.2 and
# <prefix>/include/braid-nccl/nccl.h (put that lib folder first on LD_LIBRARY_PATH to use it).
install(TARGETS nccl LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}/braid-nccl)
install(FILES ${PROJECT_SOURCE_DIR}/include/nccl.h DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/braid-nccl)

# braid's socket network as an NCCL net plugin: <prefix>/lib/libnccl-net-braid.so (NCCL_NET_PLUGIN=braid).
install(TARGETS nccl_net_braid LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
