"""A model that speaks, through the Python API: a tiny random-weight LFM2 text model with LFM2.5-Audio's vocoder
and audio tokenizer files (Tests/Fixtures/speech): AudioSample events as frames are made, the turn's audio in
the final message, greedy runs repeat exactly, options are checked."""
import pytest

import leap
from conftest import FIXTURES

SPEECH = FIXTURES / "speech"


@pytest.fixture(scope="module")
def model():
    with leap.load_model(FIXTURES / "models" / "lfm2-tiny-f32.gguf", audio_decoder_path=str(SPEECH / "vocoder-tiny.gguf"),
                         audio_tokenizer_path=str(SPEECH / "tokenizer-tiny.gguf")) as m:
        yield m


def speak(model, **options):
    conv = model.create_conversation("Respond with interleaved text and audio.")
    events = list(conv.generate_response("Hello", leap.GenerationOptions(temperature=0, max_tokens=30, **options)))
    return events, conv


def test_interleaved_speech_streams_and_ends_the_message(model):
    assert model.supports_audio_output and not model.supports_audio_input
    events, conv = speak(model, audio_temperature=0)
    audio = [e for e in events if isinstance(e, leap.AudioSample)]
    assert audio and all(e.sample_rate == 24000 for e in audio)
    # the first audio comes after the first 6 text tokens' text
    assert isinstance(events[0], leap.Chunk)
    sizes = [len(e.samples) for e in audio]
    assert sizes[0] == 1440 and set(sizes[1:-1]) <= {1920}   # 80 ms frames; the first loses 480 warm-up samples
    total = sum(sizes)
    final = events[-1].full_message
    assert isinstance(final.content[-1], leap.AudioPcmF32) and len(final.content[-1].samples) == total
    assert conv.history[-1] == final
    again, _ = speak(model, audio_temperature=0)
    assert [list(e.samples) for e in again if isinstance(e, leap.AudioSample)] == [list(e.samples) for e in audio]


def test_audio_options_are_checked(model):
    with pytest.raises(leap.InvalidArgumentError, match="audio_mode"):
        speak(model, audio_mode="loud")
    with pytest.raises(leap.InvalidArgumentError, match="audio_temperature"):
        speak(model, audio_temperature=float("nan"))
    events, _ = speak(model, audio_mode="text")
    assert not any(isinstance(e, leap.AudioSample) for e in events)
