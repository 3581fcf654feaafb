// LeapToolCalls: function definitions (LeapFunction -> OpenAI tool JSON and back), tool-call parsers
// (LFM pythonic + its JSON variant, Hermes), the streamed response router (text / reasoning / calls)
// and the conversion of history + tools into chat-template inputs.
//
//   FunctionDefinition.swift       LeapFunction, LeapFunctionParameter(Type) -> JSON Schema / tool JSON
//   FunctionDefinitionJSON.swift   tool JSON -> LeapFunction (for C and Python), with path-precise errors
//   PythonLiteralParser.swift      the tokenizer/parser of tool-call bodies
//   PythonicWriter.swift           calls -> Python source
//   FunctionCallParser.swift       the parser protocol, LFMFunctionCallParser, HermesFunctionCallParser
//   ResponseStreamProcessor.swift  routes detokenized pieces into text / reasoning / function-call events
//   ChatTemplateInputs.swift       [ChatMessage] + functions -> OpenAI-shaped messages and tools for templates
