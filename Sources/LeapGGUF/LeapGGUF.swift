// LeapGGUF: memory-mapped GGUF reader, metadata, tensor infos and the ggml tensor type table (issue 4).
