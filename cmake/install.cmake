# Where the two programs go on `cmake --install` and in the Python wheel (pyproject.toml, built by
# scikit-build-core, which sets SKBUILD), and how each finds libtorch there.
if(SKBUILD)
  # Inside the package, beside the launcher (python/precdetect/_launcher.py), with libtorch found in the installed
  # torch package next to ours in site-packages, as torch's own torch/bin programs find theirs ($ORIGIN/../lib).
  set(program_folder precdetect/bin)
  set_target_properties(precdetect PROPERTIES INSTALL_RPATH "$ORIGIN/../../torch/lib")
  # The launcher checks the installed torch against the one linked here before it runs the program.
  file(WRITE ${PROJECT_BINARY_DIR}/_torch_build.py
       "# Written by the build (cmake/install.cmake): the torch whose libtorch precdetect was linked with.\n"
       "TORCH_VERSION = \"${PRECDETECT_TORCH_VERSION}\"\n")
  install(FILES ${PROJECT_BINARY_DIR}/_torch_build.py DESTINATION precdetect)
  # The extension beside the package's modules, finding the same libtorch one folder up.
  set_target_properties(precdetect_core PROPERTIES INSTALL_RPATH "$ORIGIN/../torch/lib")
  install(TARGETS precdetect_core LIBRARY DESTINATION precdetect)
else()
  include(GNUInstallDirs)
  set(program_folder ${CMAKE_INSTALL_BINDIR})
  # The libtorch it was built against, by its absolute path: PREFIX/bin/precdetect runs from anywhere.
  set_target_properties(precdetect PROPERTIES INSTALL_RPATH ${PRECDETECT_TORCH_DIR}/lib)
endif()
install(TARGETS precdetect RUNTIME DESTINATION ${program_folder})
if(PRECDETECT_HDF5_HELPER)
  install(TARGETS precdetect-hdf5 RUNTIME DESTINATION ${program_folder})
endif()
