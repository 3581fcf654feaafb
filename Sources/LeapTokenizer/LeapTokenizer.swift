// LeapTokenizer: byte-level BPE and SentencePiece tokenizers from GGUF metadata (issue 5).
