#!/usr/bin/env python3
"""Function calling: register a tool, let the model call it, run it, send the result back, get the answer.

    python3 examples/tool_calling.py MODEL.gguf [question]

Tool calls are recognised in the model's output by the function-call parser: LFM2 / LFM2.5 write
`<|tool_call_start|>[get_weather(city="Paris")]<|tool_call_end|>` (the default "lfm" parser); Qwen / Hermes
models write `<tool_call>{...}</tool_call>` (use function_call_parser="hermes"). Small general models such
as SmolLM2-135M rarely call tools: then you just get a text answer."""
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "bindings", "python"))
import leap  # noqa: E402

WEATHER = leap.LeapFunction(
    "get_weather", "Get the current weather for a city.",
    [leap.LeapFunctionParameter("city", leap.StringType(), "The city name, e.g. Paris"),
     leap.LeapFunctionParameter("unit", leap.StringType(enum_values=["celsius", "fahrenheit"]), "Temperature unit", optional=True)])


def get_weather(city, unit="celsius"):
    return {"city": city, "temperature": 21 if unit == "celsius" else 70, "unit": unit, "sky": "sunny"}


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    question = sys.argv[2] if len(sys.argv) > 2 else "What is the weather in Paris?"
    parser = os.environ.get("LEAP_FUNCTION_CALL_PARSER", "lfm")
    options = leap.GenerationOptions(temperature=0, max_tokens=200, function_call_parser=parser)
    with leap.load_model(sys.argv[1]) as model:
        conv = model.create_conversation("You are a helpful assistant with access to tools.")
        conv.register_function(WEATHER)
        message = leap.ChatMessage(leap.Role.USER, question)
        for _ in range(3):  # a few rounds of call -> result -> answer
            calls = []
            for event in conv.generate_response(message, options):
                if isinstance(event, leap.Chunk):
                    print(event.text, end="", flush=True)
                elif isinstance(event, leap.FunctionCalls):
                    calls += event.function_calls
            print()
            if not calls:
                return
            results = []
            for call in calls:
                print(f"[calling {call.name}({call.arguments})]")
                results.append(get_weather(**call.arguments) if call.name == "get_weather" else {"error": "unknown function"})
            message = leap.ChatMessage(leap.Role.TOOL, json.dumps(results[0] if len(results) == 1 else results))


if __name__ == "__main__":
    main()
