"""ChatMessage and content parts: JSON round trips through the C library, wire shape, and errors."""
import base64
import json
import struct
from array import array

import pytest

import leap

JPEG = bytes([0xFF, 0xD8, 0xFF, 0xE0, 0x00, 0x10, 0x4A, 0x46, 0x49, 0x46, 0x00, 0xFF, 0xD9])


def wav_f32(samples, rate=16000, channels=1):
    data = struct.pack(f"<{len(samples)}f", *samples)
    return (b"RIFF" + struct.pack("<I", 36 + len(data)) + b"WAVEfmt " +
            struct.pack("<IHHIIHH", 16, 3, channels, rate, rate * channels * 4, channels * 4, 32) +
            b"data" + struct.pack("<I", len(data)) + data)


MESSAGES = [
    leap.ChatMessage(leap.Role.USER, "Hello, wörld! 你好 😀 \"q\"\n\\"),
    leap.ChatMessage(leap.Role.SYSTEM, []),
    leap.ChatMessage(leap.Role.USER, [leap.Text("What is this?"), leap.Image(JPEG), leap.Audio(wav_f32([0.0, 0.5])),
                                      leap.AudioPcmF32(array("f", [0.0, 0.25, -1.0]), 24000)]),
    leap.ChatMessage(leap.Role.ASSISTANT, "Let me check.", reasoning_content="User wants weather.",
                     function_calls=[leap.LeapFunctionCall("get_weather", {"city": "Paris", "days": 3}),
                                     leap.LeapFunctionCall("now")]),
    leap.ChatMessage(leap.Role.TOOL, '{"temperature": 21.5}'),
]


@pytest.mark.parametrize("msg", MESSAGES)
def test_round_trip(msg):
    d = msg.to_json()
    back = leap.ChatMessage.from_json(d)
    assert back == msg
    assert back.to_json() == d
    assert leap.ChatMessage.from_json(json.dumps(d)).to_json_string() == msg.to_json_string()


def test_wire_shape():
    d = MESSAGES[3].to_json()
    assert d["role"] == "assistant"
    assert d["content"] == [{"type": "text", "text": "Let me check."}]
    assert d["reasoning_content"] == "User wants weather."
    assert d["tool_calls"][0] == {"index": 0, "id": "call_0", "type": "function",
                                  "function": {"name": "get_weather", "arguments": {"city": "Paris", "days": 3}}}
    img = MESSAGES[2].to_json()["content"][1]
    assert img == {"type": "image_url", "image_url": {"url": "data:image/jpeg;base64," + base64.b64encode(JPEG).decode()}}
    aud = MESSAGES[2].to_json()["content"][2]["input_audio"]
    assert aud["format"] == "wav" and base64.b64decode(aud["data"]) == wav_f32([0.0, 0.5])


def test_openai_variants_decode():
    m = leap.ChatMessage.from_json({"role": "assistant", "content": "plain", "reasoning_content": "",
                                    "tool_calls": [{"type": "function", "function": {"name": "f", "arguments": "{\"k\": [1, 2]}"}}]})
    assert m.text == "plain" and m.reasoning_content is None
    assert m.function_calls[0].name == "f" and m.function_calls[0].arguments == {"k": [1, 2]}


def test_from_float_samples_matches_python_wave_layout():
    a = leap.Audio.from_float_samples([0.5, -0.5, 0.25, -0.25], 48000, channel_count=2)
    assert a.wav == wav_f32([0.5, -0.5, 0.25, -0.25], 48000, 2)
    numpy = pytest.importorskip("numpy")
    b = leap.Audio.from_float_samples(numpy.array([0.5, -0.5, 0.25, -0.25], dtype=numpy.float64), 48000, 2)
    assert b.wav == a.wav


@pytest.mark.parametrize("bad,exc,needle", [
    ({"content": "x"}, leap.SerializationError, "message.role: missing field"),
    ({"role": "robot", "content": "x"}, leap.SerializationError, 'unknown role "robot"'),
    ({"role": "user", "content": [{"type": "video"}]}, leap.SerializationError, 'message.content[0].type: unknown content type "video"'),
    ({"role": "user", "content": [{"type": "image_url", "image_url": {"url": "data:image/jpeg;base64,iVBORw0KGgo="}}]},
     leap.SerializationError, "image is not JPEG (PNG data)"),
    ({"role": "user", "content": [{"type": "image_url", "image_url": {"url": "data:image/jpeg;base64,/9j/*"}}]},
     leap.SerializationError, "invalid base64 character"),
    ({"role": "user", "content": [{"type": "input_audio", "input_audio": {"data": "AAAA", "format": "mp3"}}]},
     leap.SerializationError, 'only "wav" audio is supported'),
    ('{"role": "user", "content": ', leap.SerializationError, "invalid JSON at line 1"),
])
def test_errors_name_the_field(bad, exc, needle):
    with pytest.raises(exc) as e:
        leap.ChatMessage.from_json(bad)
    assert needle in str(e.value)
    assert isinstance(e.value, leap.LeapError) and e.value.status == 5


def test_adding_bad_content_raises_typed_errors():
    with pytest.raises(leap.SerializationError, match="not JPEG"):
        leap.ChatMessage(leap.Role.USER, [leap.Image(b"\x89PNG\r\n\x1a\n")]).to_json()
    with pytest.raises(leap.AudioFormatError, match="MP3"):
        leap.ChatMessage(leap.Role.USER, [leap.Audio(b"ID3\x04" + bytes(20))]).to_json()
    with pytest.raises(TypeError):
        leap.ChatMessage(leap.Role.USER, [42])
    with pytest.raises(ValueError):
        leap.ChatMessage("wizard", "x")


def test_version_and_error_hierarchy():
    assert leap.__version__ == "0.1.0"
    assert issubclass(leap.PromptExceedsContextError, leap.GenerationError)
    assert issubclass(leap.InvalidArgumentError, ValueError)
