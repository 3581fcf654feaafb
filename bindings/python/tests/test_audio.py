"""leap.audio against independent oracles: Python's `wave` module for decoding, libsoxr (`soxr`) and numpy
for resampling, plus the golden WAV fixtures of Tests/Fixtures/audio (written by wave, numpy and sox)."""
from __future__ import annotations

import io
import struct
import wave
from array import array

import pytest

import leap
from conftest import FIXTURES

np = pytest.importorskip("numpy")

AUDIO = FIXTURES / "audio"


def wave_bytes(frames: "np.ndarray", rate: int, width: int) -> bytes:
    buf = io.BytesIO()
    with wave.open(buf, "wb") as w:
        w.setnchannels(frames.shape[1])
        w.setsampwidth(width)
        w.setframerate(rate)
        w.writeframes(frames.astype({1: np.uint8, 2: "<i2", 4: "<i4"}[width]).tobytes())
    return buf.getvalue()


@pytest.mark.parametrize("width,channels,rate", [(1, 1, 8000), (2, 1, 16000), (2, 2, 44100), (4, 3, 22050)])
def test_decode_matches_wave_module(width: int, channels: int, rate: int) -> None:
    rng = np.random.default_rng(width * 10 + channels)
    if width == 1:
        ints = rng.integers(0, 256, (500, channels))
    else:
        lim = 2 ** (8 * width - 1)
        ints = rng.integers(-lim, lim, (500, channels))
    data = wave_bytes(ints, rate, width)
    pcm = leap.audio.decode_wav(data)
    # The oracle: read back with the wave module, convert with numpy.
    with wave.open(io.BytesIO(data)) as w:
        assert (pcm.sample_rate, pcm.channels, pcm.frames) == (w.getframerate(), w.getnchannels(), w.getnframes())
        raw = w.readframes(w.getnframes())
    if width == 1:
        expected = (np.frombuffer(raw, np.uint8).astype(np.float64) - 128) / 128
    else:
        expected = np.frombuffer(raw, {2: "<i2", 4: "<i4"}[width]).astype(np.float64) / 2 ** (8 * width - 1)
    assert isinstance(pcm.samples, array) and pcm.samples.typecode == "f"
    assert np.array_equal(np.frombuffer(pcm.samples, np.float32), expected.astype(np.float32))


def test_golden_fixtures() -> None:
    lines = (AUDIO / "manifest.txt").read_text().split()
    assert len(lines) >= 4 * 15
    for i in range(0, len(lines), 4):
        name, rate, channels, frames = lines[i], int(lines[i + 1]), int(lines[i + 2]), int(lines[i + 3])
        pcm = leap.audio.decode_wav((AUDIO / f"{name}.wav").read_bytes())
        expected = np.fromfile(AUDIO / f"{name}.f32", dtype="<f4")
        assert (pcm.sample_rate, pcm.channels, pcm.frames) == (rate, channels, frames), name
        assert np.array_equal(np.frombuffer(pcm.samples, np.float32), expected), name


@pytest.mark.parametrize("fin,fout", [(44100, 16000), (48000, 16000), (8000, 16000), (22050, 16000), (16000, 24000),
                                      (96000, 16000), (11025, 16000)])
def test_resample_matches_soxr(fin: int, fout: int) -> None:
    soxr = pytest.importorskip("soxr")
    t = np.arange(fin) / fin  # 1 s
    x = (0.4 * np.sin(2 * np.pi * 440 * t) + 0.3 * np.sin(2 * np.pi * 2500 * t)).astype(np.float32)
    ours = np.frombuffer(leap.audio.resample(x, fin, fout), np.float32)
    ref = soxr.resample(x, fin, fout, quality="VHQ")
    assert len(ours) == -(-len(x) * fout // fin)
    assert abs(len(ours) - len(ref)) <= 1
    # Both are band-limited resamplings of the same in-band signal: away from the edges they agree to
    # the accuracy of the two filters (~ -110 dB here), and both match the exact tones.
    n = min(len(ours), len(ref))
    mid = slice(fout // 20, n - fout // 20)
    diff = ours[:n][mid] - ref[:n][mid]
    assert np.sqrt(np.mean(diff ** 2)) < 1e-5
    k = np.arange(n)[mid] / fout
    exact = 0.4 * np.sin(2 * np.pi * 440 * k) + 0.3 * np.sin(2 * np.pi * 2500 * k)
    err = ours[:n][mid] - exact
    snr = 10 * np.log10(np.sum(exact ** 2) / np.sum(err ** 2))
    assert snr > 120, snr


def test_resample_accepts_lists_arrays_and_numpy() -> None:
    x = [0.0, 0.25, 0.5, 0.25] * 100
    a = leap.audio.resample(x, 32000, 16000)
    b = leap.audio.resample(array("f", x), 32000, 16000)
    c = leap.audio.resample(np.array(x, dtype=np.float64), 32000, 16000)
    assert a == b == c and len(a) == 200 and a.typecode == "f"
    assert leap.audio.resample([], 44100, 16000) == array("f")


def test_streaming_resampler_equals_one_shot() -> None:
    rng = np.random.default_rng(3)
    x = rng.uniform(-0.5, 0.5, 30011).astype(np.float32)
    whole = leap.audio.resample(x, 44100, 16000)
    with leap.audio.Resampler(44100, 16000) as r:
        for _ in range(2):
            out = array("f")
            i = 0
            while i < len(x):
                step = int(rng.integers(0, 4000))
                out += r.process(x[i:i + step])
                i += step
            out += r.flush()
            assert out == whole
    with pytest.raises(leap.InvalidArgumentError):
        r.process([0.0])


def test_encode_round_trip_and_wave_module() -> None:
    x = array("f", [0.0, 0.5, -0.5, 1.0, -1.0, 0.123])
    f32 = leap.audio.encode_wav(x, 22050, channel_count=2)
    pcm = leap.audio.decode_wav(f32)
    assert (pcm.samples, pcm.sample_rate, pcm.channels, pcm.frames) == (x, 22050, 2, 3)
    s16 = leap.audio.encode_wav(x, 8000, encoding="s16")
    with wave.open(io.BytesIO(s16)) as w:  # the wave module reads our PCM output
        assert (w.getnchannels(), w.getsampwidth(), w.getframerate(), w.getnframes()) == (1, 2, 8000, 6)
        ints = struct.unpack("<6h", w.readframes(6))
    assert ints == (0, 16384, -16384, 32767, -32768, round(0.123 * 32768))
    with pytest.raises(leap.InvalidArgumentError):
        leap.audio.encode_wav(x, 8000, encoding="mp3")
    with pytest.raises(leap.InvalidArgumentError):
        leap.audio.encode_wav([0.0] * 5, 8000, channel_count=2)
    with pytest.raises(leap.InvalidArgumentError):
        leap.audio.encode_wav(x, 0)


def test_load_wav_mono_16k() -> None:
    t = np.arange(48000) / 48000
    x = (0.5 * np.sin(2 * np.pi * 1000 * t)).astype(np.float32)
    y = leap.audio.load_wav(leap.audio.encode_wav(x, 48000))
    assert len(y) == 16000
    assert y == leap.audio.resample(x, 48000, 16000)
    assert len(leap.audio.load_wav(leap.audio.encode_wav(x, 48000), target_rate=24000)) == 24000
    stereo = leap.audio.encode_wav([0.1, 0.2] * 100, 16000, channel_count=2)
    with pytest.raises(leap.AudioFormatError, match="mono required, got 2 channels"):
        leap.audio.load_wav(stereo)


@pytest.mark.parametrize("data,needle", [
    (b"ID3\x04\x00\x00\x00\x00\x00\x00" + b"\x00" * 40, "MP3 (ID3 tag)"),
    (b"\xff\xfb\x90\x64" + b"\x00" * 40, "MP3 (MPEG audio frame sync)"),
    (b"\x00\x00\x00\x20ftypM4A " + b"\x00" * 40, "MP4/M4A"),
    (b"OggS" + b"\x00" * 24 + b"OpusHead", "Ogg Opus"),
    (b"fLaC\x00\x00\x00\x22", "FLAC"),
    (b"RIFX\x24\x00\x00\x00WAVE", "big-endian WAV (RIFX)"),
    (b"", "empty input"),
    (b"RIFF\x04\x00\x00\x00WAVE", "no 'fmt ' chunk"),
    (b"RIFF" + struct.pack("<I", 36) + b"WAVEfmt " + struct.pack("<IHHIIHH", 16, 6, 1, 8000, 8000, 1, 8)
     + b"data\x02\x00\x00\x00\x01\x02", "A-law (format tag 0x0006)"),
    (b"RIFF" + struct.pack("<I", 36) + b"WAVEfmt " + struct.pack("<IHHIIHH", 16, 1, 1, 8000, 16000, 2, 16)
     + b"data\x00\x00\x00\x00", "has no audio"),
])
def test_rejections(data: bytes, needle: str) -> None:
    with pytest.raises(leap.AudioFormatError) as e:
        leap.audio.decode_wav(data)
    assert needle in str(e.value)
    assert e.value.status == 6


def test_bad_arguments() -> None:
    with pytest.raises(leap.InvalidArgumentError, match="from_rate"):
        leap.audio.resample([0.0], 0, 16000)
    with pytest.raises(leap.InvalidArgumentError):
        leap.audio.Resampler(16000, -1)
    with pytest.raises(TypeError):
        leap.audio.decode_wav("not bytes")  # type: ignore[arg-type]
