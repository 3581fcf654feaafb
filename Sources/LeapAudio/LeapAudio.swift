// LeapAudio: WAV decoding/encoding, mono enforcement, resampling to 16 kHz, audio output delivery (issue 3).
