// LeapAudioEncoder: LFM2-Audio's audio encoder (NeMo log-mel front end, FastConformer, adapter) from an lfm2a mmproj.
