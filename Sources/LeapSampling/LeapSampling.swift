// LeapSampling: greedy, temperature, top-k, top-p, min-p, repetition penalty, seeded RNG (issue 7).
