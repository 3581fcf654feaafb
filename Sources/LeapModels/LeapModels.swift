// LeapModels: LFM2, llama and Gemma 3 forward passes with KV and conv caches (issue 7).
