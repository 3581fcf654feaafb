// LeapToolCalls: function definitions, tool-call parsers (LFM pythonic, JSON, Hermes), streamed response routing (issue 6).
