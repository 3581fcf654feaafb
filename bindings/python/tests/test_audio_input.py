"""Audio input through the Python API: a tiny random-weight LFM2 text model with an lfm2a audio encoder
(Tests/Fixtures/audio_encoder, scripts/fixtures/make_audio_encoder_fixtures.py): the encoder's rows against
llama.cpp mtmd's, a transcript against mtmd's greedy one, raw samples at any rate, refused audio."""
import json
import wave

import pytest

import leap
from conftest import FIXTURES

np = pytest.importorskip("numpy")
AUDIO = FIXTURES / "audio_encoder"


@pytest.fixture(scope="module")
def model():
    with leap.load_model(FIXTURES / "models" / "lfm2-tiny-f32.gguf",
                         mmproj_path=str(AUDIO / "lfm2a-512-f16-q8_0.gguf")) as m:
        yield m


def test_capabilities(model):
    assert model.supports_audio_input and not model.supports_images and not model.supports_audio_output


def test_rows_of_a_wav_match_llama_cpp_mtmd(model):
    rows = np.asarray(model.embed_audio(leap.Audio((AUDIO / "clip_1s37.wav").read_bytes())))
    ref = np.fromfile(AUDIO / "clip_1s37.lfm2a-512-f16-q8_0.mtmd.f32", dtype="<f4").reshape(-1, 64)
    assert rows.shape == ref.shape == (18, 64)
    # F16 / Q8_0 weights: 8-bit activation roundings fall differently after the first layers (the Swift
    # encoder tests measure 0.022-0.030 against mtmd, and mtmd is as far from liquid-audio's float model).
    assert np.abs(rows - ref).max() < 0.06
    cos = (rows * ref).sum(1) / (np.linalg.norm(rows, axis=1) * np.linalg.norm(ref, axis=1))
    assert cos.min() > 0.999


def test_samples_at_any_rate_are_resampled(model):
    with wave.open(str(AUDIO / "clip_1s37.wav")) as w:
        pcm = np.frombuffer(w.readframes(w.getnframes()), dtype="<i2").astype(np.float32) / 32768
        rate = w.getframerate()
    a = np.asarray(model.embed_audio(leap.AudioPcmF32(pcm, rate)))
    b = np.asarray(model.embed_audio(leap.Audio((AUDIO / "clip_1s37.wav").read_bytes())))
    assert np.array_equal(a, b)   # the same samples, whether they come as a WAV or as floats
    tone = (0.5 * np.sin(np.arange(8000) * 0.3)).astype(np.float32)
    assert np.asarray(model.embed_audio(leap.AudioPcmF32(tone, 8000))).shape == (13, 64)   # 1 s: 101 mel frames


def test_a_transcript_equals_mtmds(model):
    golden = json.loads((AUDIO / "asr_greedy.json").read_text())
    case = next(c for c in golden["cases"] if c["clip"] == "clip_4s.wav")
    expected = model.tokenizer.detokenize([t for t in case["generated"] if t != 7])
    conv = model.create_conversation("Perform ASR.")
    msg = leap.ChatMessage(leap.Role.USER, [leap.Audio((AUDIO / case["clip"]).read_bytes())])
    events = list(conv.generate_response(msg, leap.GenerationOptions(temperature=0, repetition_penalty=1,
                                                                     max_tokens=len(case["generated"]))))
    assert "".join(e.text for e in events if isinstance(e, leap.Chunk)) == expected


def test_bad_audio_is_refused_and_changes_nothing(model):
    conv = model.create_conversation("Perform ASR.")
    stereo = (FIXTURES / "audio" / "wave_s16_stereo_44100.wav").read_bytes()
    with pytest.raises(leap.AudioFormatError, match=r"history\[1\]\.content\[0\]: mono required"):
        conv.generate_response(leap.ChatMessage(leap.Role.USER, [leap.Audio(stereo)]))
    with pytest.raises(leap.AudioFormatError, match="too short"):
        conv.generate_response(leap.ChatMessage(leap.Role.USER, [leap.AudioPcmF32([0.1] * 100, 16000)]))
    with pytest.raises(leap.AudioFormatError, match="too short"):
        model.embed_audio(leap.AudioPcmF32([], 16000))
    with pytest.raises(leap.UnsupportedError, match="an image part needs a vision encoder"):
        conv.generate_response(leap.ChatMessage(leap.Role.USER, [leap.Image(b"\xff\xd8\xff")]))
    assert [m.role for m in conv.history] == [leap.Role.SYSTEM] and not conv.is_generating
