// LeapMessages: chat messages, content parts and their JSON wire format (issue 2).
