// LeapSpeech: LFM2.5-Audio's audio output (depthformer code sampler, audio detokenizer, streaming ISTFT).
