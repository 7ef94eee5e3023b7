# The libFuzzer targets, one per parser of untrusted bytes: tests/fuzz/<name>_fuzz.cpp, seeds in tests/fuzz/seeds/<name>.
set(PRECDETECT_FUZZ_TARGETS safetensors_header shard_index zip_directory pickle_machine torch_legacy torch_tar
    pickle_safety gguf flax_msgpack numpy_arrays hdf5 dcp_metadata zstd_frame onnx chat_template keras_config)
