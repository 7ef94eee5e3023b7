# Where the programs and the CUDA plugin go on `cmake --install` and in the Python wheel (pyproject.toml, built by
# scikit-build-core, which sets SKBUILD). The program links no libtorch; the plugin, loaded only for a GPU, runs
# with the libtorch the launcher or PRECDETECT_LIBTORCH names (analyze/cuda_plugin.cpp).
if(SKBUILD)
  # Inside the package, beside the launcher (python/precdetect/_launcher.py).
  set(program_folder precdetect/bin)
  # The C interface the package's ctypes binding loads (python/precdetect/api.py).
  install(TARGETS precdetect_api LIBRARY DESTINATION ${program_folder})
else()
  include(GNUInstallDirs)
  set(program_folder ${CMAKE_INSTALL_BINDIR})
endif()
install(TARGETS precdetect RUNTIME DESTINATION ${program_folder})
if(PRECDETECT_HDF5_HELPER)
  install(TARGETS precdetect-hdf5 RUNTIME DESTINATION ${program_folder})
endif()
if(TARGET precdetect_cuda)
  install(TARGETS precdetect_cuda LIBRARY DESTINATION ${program_folder})
endif()
