# libtorch's CPU libraries, from an installed torch package (site-packages/torch) or an unpacked libtorch archive:
# both hold include/, lib/ and share/cmake/Torch. Only the torch side links them (src/CMakeLists.txt: the CUDA
# plugin and the tests); without torch, the program, its CPU path and the C interface build alone
# (PRECDETECT_TORCH_FOUND off). find_package(Torch) is not used: for the CUDA wheels its config
# demands the CUDA toolkit at configure time, and precdetect compiles no CUDA code (analyze/device.cpp loads
# libtorch_cuda at run time).
#
# PRECDETECT_TORCH_DIR names the folder; by default it is the torch package of the Python running the build
# (Python_EXECUTABLE: scripts/build.sh passes .venv's, scikit-build-core the build environment's).
# Defines PRECDETECT_TORCH_FOUND, and with it the target precdetect_torch_cpu and PRECDETECT_TORCH_VERSION.
set(PRECDETECT_TORCH_DIR "" CACHE PATH "the torch package or libtorch folder to build against (default: Python's torch)")
if(NOT PRECDETECT_TORCH_DIR)
  find_package(Python 3 COMPONENTS Interpreter)
  execute_process(COMMAND ${Python_EXECUTABLE} -c "import os, torch; print(os.path.dirname(torch.__file__))"
                  OUTPUT_VARIABLE torch_dir OUTPUT_STRIP_TRAILING_WHITESPACE RESULT_VARIABLE failed)
  if(failed)
    message(STATUS "no torch (${Python_EXECUTABLE} cannot import it): building without the CUDA plugin; "
                   "pass -DPRECDETECT_TORCH_DIR to name one")
    set(PRECDETECT_TORCH_FOUND OFF)
    return()
  endif()
  set(PRECDETECT_TORCH_DIR ${torch_dir} CACHE PATH "the torch package or libtorch folder to build against" FORCE)
endif()
set(PRECDETECT_TORCH_FOUND ON)

file(STRINGS ${PRECDETECT_TORCH_DIR}/share/cmake/Torch/TorchConfigVersion.cmake version_line
     REGEX "set\\(PACKAGE_VERSION \"[^\"]+\"\\)")
if(NOT version_line MATCHES "\"([^\"]+)\"")
  message(FATAL_ERROR "${PRECDETECT_TORCH_DIR} is not a torch package or libtorch folder (no TorchConfigVersion.cmake)")
endif()
set(PRECDETECT_TORCH_VERSION ${CMAKE_MATCH_1})
message(STATUS "libtorch ${PRECDETECT_TORCH_VERSION}: ${PRECDETECT_TORCH_DIR}")

add_library(precdetect_torch_cpu INTERFACE)
# As torch's own config has them: include/ as a system folder, the C++ API's folder not, and torch_cpu's definitions.
target_include_directories(precdetect_torch_cpu SYSTEM INTERFACE ${PRECDETECT_TORCH_DIR}/include)
target_include_directories(precdetect_torch_cpu INTERFACE ${PRECDETECT_TORCH_DIR}/include/torch/csrc/api/include)
target_compile_definitions(precdetect_torch_cpu INTERFACE USE_DISTRIBUTED USE_C10D_GLOO USE_RPC USE_TENSORPIPE)
target_link_libraries(precdetect_torch_cpu INTERFACE
  ${PRECDETECT_TORCH_DIR}/lib/libtorch_cpu.so ${PRECDETECT_TORCH_DIR}/lib/libc10.so)
