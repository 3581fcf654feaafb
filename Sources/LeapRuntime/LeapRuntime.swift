// LeapRuntime: model runner and conversations, streamed generation, tool calls, reasoning (issue 6).
