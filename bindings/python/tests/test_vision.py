"""Images through the Python API on the tiny random-weight LFM2-VL fixtures (Tests/Fixtures/vision): embeddings
against llama.cpp mtmd's (goldens from scripts/fixtures/make_vision_mtmd_goldens.py), the multi-tile layout,
pixels and JPEG helpers, a conversation about a JPEG against mtmd's greedy answer, refused images."""
import json
import math

import pytest

import leap
from conftest import FIXTURES

np = pytest.importorskip("numpy")
VISION = FIXTURES / "vision"
GREEDY = leap.GenerationOptions(temperature=0, repetition_penalty=1)


@pytest.fixture(scope="module")
def model():
    with leap.load_model(VISION / "lfm2vl-tiny-text-f32.gguf", context_size=4096,
                         mmproj_path=str(VISION / "lfm2vl-tiny-mmproj-f32.gguf")) as m:
        yield m


def pattern(height, width, seed):
    """vision_fixture_images.image_rgb8: (37x + 91y + 53c + 29(x xor y) + 17 seed) mod 256."""
    y, x, c = np.meshgrid(np.arange(height), np.arange(width), np.arange(3), indexing="ij")
    return ((37 * x + 91 * y + 53 * c + 29 * (x ^ y) + 17 * seed) % 256).astype(np.uint8)


def test_capabilities(model):
    assert model.supports_images and not model.supports_audio_input and not model.supports_audio_output


def test_embeddings_of_pixels_match_llama_cpp_mtmd(model):
    rows = np.asarray(model.embed_image(leap.ImageRGB(pattern(256, 256, 1).tobytes(), 256, 256)))
    assert rows.shape == (64, 64) and rows.dtype == np.float32
    ref = np.fromfile(VISION / "mtmd_f32_256x256.f32", dtype="<f4").reshape(64, 64)
    # llama.cpp's F32 graph on the same pixels; the encoders' arithmetic differs in summation order only.
    assert np.abs(rows - ref).max() < 2e-4


def test_a_large_jpeg_is_tiles_then_thumbnail(model):
    jpeg = (VISION / "multitile_1024x768.jpg").read_bytes()
    rows = np.asarray(model.embed_image(leap.Image(jpeg)))
    assert rows.shape == (6 * 256 + 234, 64)
    assert np.isfinite(rows).all()


def test_image_from_rgb_is_a_jpeg_of_those_pixels(model):
    # A smooth image (JPEG at quality 100 keeps it nearly intact), and the same image mirrored.
    y, x = np.meshgrid(np.arange(64) / 64, np.arange(96) / 96, indexing="ij")
    px = np.stack([200 * x + 20, 150 * y + 50, 100 * x * y + 80], axis=-1).astype(np.uint8)
    img = leap.Image.from_rgb(px.tobytes(), 96, 64, quality=100)
    assert img.jpeg[:2] == b"\xff\xd8"
    a = np.asarray(model.embed_image(img))
    b = np.asarray(model.embed_image(leap.ImageRGB(px.tobytes(), 96, 64)))
    mirrored = np.asarray(model.embed_image(leap.ImageRGB(np.ascontiguousarray(px[:, ::-1]).tobytes(), 96, 64)))
    # 96x64 has fewer than 64 tokens' pixels: scaled by sqrt(64*32*32 / (96*64)) and rounded up to 32 px.
    beta = (64 * 1024 / (96 * 64)) ** 0.5
    assert a.shape == b.shape == (math.ceil(64 * beta / 32) * math.ceil(96 * beta / 32), 64)
    # The JPEG's rows are those of its pixels, up to compression: far closer to them than to another image's.
    assert np.abs(a - b).mean() < 0.1 * np.abs(mirrored - b).mean()
    with pytest.raises(leap.InvalidArgumentError, match="needs 96x64x3 bytes"):
        leap.Image.from_rgb(px.tobytes()[:-1], 96, 64)
    with pytest.raises(leap.InvalidArgumentError, match="quality"):
        leap.Image.from_rgb(px.tobytes(), 96, 64, quality=0)


def test_a_conversation_about_a_jpeg_answers_as_mtmd(model):
    cases = json.loads((VISION / "mtmd_e2e.json").read_text())["cases"]
    case = next(c for c in cases if c["file"] == "e2e_photo_448x320.jpg")
    tokenizer = model.tokenizer
    expected = tokenizer.detokenize([t for t in case["tokens"] if t != 7])
    conv = model.create_conversation()
    msg = leap.ChatMessage(leap.Role.USER, [leap.Image((VISION / case["file"]).read_bytes()), leap.Text("Describe this image.")])
    events = list(conv.generate_response(msg, leap.GenerationOptions(temperature=0, repetition_penalty=1,
                                                                     max_tokens=len(case["tokens"]))))
    text = "".join(e.text for e in events if isinstance(e, leap.Chunk))
    assert text == expected
    assert events[-1].stats.prompt_tokens == case["prompt_positions"]


def test_bad_images_are_refused_and_change_nothing(model):
    conv = model.create_conversation("Be brief.")
    bad = (FIXTURES / "images" / "bad_truncated.jpg").read_bytes()
    with pytest.raises(leap.FormatError, match=r"history\[1\]\.content\[0\]: .*corrupt"):
        conv.generate_response(leap.ChatMessage(leap.Role.USER, [leap.Image(bad)]), GREEDY)
    with pytest.raises(leap.UnsupportedError, match="PNG"):
        model.embed_image(leap.Image((FIXTURES / "images" / "bad_is_png.jpg").read_bytes()))
    assert [m.role for m in conv.history] == [leap.Role.SYSTEM] and not conv.is_generating


def test_pixels_of_the_wrong_size_are_refused_before_c_reads_them(model):
    with pytest.raises(leap.InvalidArgumentError, match="needs 4x4x3 bytes, got 47"):
        model.embed_image(leap.ImageRGB(bytes(47), 4, 4))
