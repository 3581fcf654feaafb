import Testing

// Placeholder until this module has tests.
@Test func placeholder() {}
