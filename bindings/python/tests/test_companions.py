"""Companion files of multimodal models (mmproj, audio decoder / tokenizer): auto-detection next to the
model as LEAP does, explicit paths, validation, and what a text engine does with them (loads and chats;
image / audio parts raise UnsupportedError naming the projector)."""
import os

import pytest

import leap
from conftest import MODELS

SMOL = MODELS / "SmolLM2-135M-Instruct.Q4_1.gguf"
pytestmark = pytest.mark.skipif(not SMOL.exists(), reason=f"{SMOL} not found (run scripts/fetch-models.sh)")
gguf = pytest.importorskip("gguf")

GREEDY = leap.GenerationOptions(temperature=0.0, max_tokens=8)
NONE = leap.ModelCompanions(None, None, None)


def write_gguf(path, arch):
    """A metadata-only GGUF (as llama.cpp's gguf-py writes it) with general.architecture = arch."""
    w = gguf.GGUFWriter(str(path), arch)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


@pytest.fixture
def model_dir(tmp_path):
    os.symlink(SMOL, tmp_path / "model.gguf")
    return tmp_path


def test_companions_next_to_the_model_are_detected(model_dir):
    write_gguf(model_dir / "mmproj-model-q8_0.gguf", "clip")
    write_gguf(model_dir / "mmproj-model-f16.gguf", "clip")  # first by name wins
    (model_dir / "Model-Audio-Decoder.bin").write_bytes(b"\x01\x02\x03")
    (model_dir / "mmproj-notes.txt").write_text("not a projector")
    os.mkdir(model_dir / "mmproj-aaa.gguf")  # a directory is never a companion
    (model_dir / "tokenizer-audio.gguf").write_bytes(b"ignored: tokenizers are not detected")
    path = str(model_dir / "model.gguf")
    with leap.load_model(path) as m:
        assert m.companions == leap.ModelCompanions(str(model_dir / "mmproj-model-f16.gguf"),
                                                    str(model_dir / "Model-Audio-Decoder.bin"), None)
        # A text model with a projector next to it still loads and chats.
        conv = m.create_conversation()
        events = list(conv.generate_response("Hi", GREEDY))
        assert isinstance(events[-1], leap.Complete) and events[-1].full_message.text
        # Media parts name the part and the projector.
        image = leap.ChatMessage(leap.Role.USER, [leap.Text("What is this?"), leap.Image(b"\xff\xd8\xff\xe0" + bytes(16))])
        with pytest.raises(leap.UnsupportedError) as e:
            list(conv.generate_response(image, GREEDY))
        projector = str(model_dir / "mmproj-model-f16.gguf")
        # The projector is not a usable one (no clip.projector_type): the model is a text model and says why.
        assert str(e.value) == (f"history[2].content[1]: an image part needs a vision encoder; the projector "
                                f"'{projector}' (mmproj) next to the model could not be used: '{projector}' has no "
                                f"clip.projector_type (not a projector llama.cpp's converter wrote)")
        # The refused turn left the history as it was: the next message is history[2] again.
        assert len(conv.history) == 2 and not m.supports_images and not m.supports_audio_input
        audio = leap.ChatMessage(leap.Role.USER, [leap.AudioPcmF32([0.0] * 160, 16000)])
        with pytest.raises(leap.UnsupportedError, match=r"history\[2\]\.content\[0\]: an audio part needs an audio encoder; "
                                                        r"the projector .* could not be used"):
            list(conv.generate_response(audio, GREEDY))
        with pytest.raises(leap.UnsupportedError, match="an image needs a vision encoder"):
            m.embed_image(leap.Image(b"\xff\xd8\xff"))
    with leap.load_model(path, auto_detect_companion_files=False) as m:
        assert m.companions == NONE


def test_a_lone_model_has_no_companions(model_dir):
    with leap.load_model(model_dir / "model.gguf") as m:
        assert m.companions == NONE


def test_explicit_paths_win_and_are_validated(model_dir, tmp_path_factory):
    elsewhere = tmp_path_factory.mktemp("companions")
    write_gguf(model_dir / "mmproj-found.gguf", "clip")
    write_gguf(elsewhere / "projector.gguf", "clip")
    write_gguf(elsewhere / "speaker.gguf", "lfm2-audio-tokenizer")
    path = model_dir / "model.gguf"
    # A given projector must be usable: this placeholder is not, and the error names it, not the detected one.
    with pytest.raises(leap.ModelLoadingError, match=f"mmproj: '{elsewhere / 'projector.gguf'}' has no clip.projector_type"):
        leap.load_model(path, mmproj_path=str(elsewhere / "projector.gguf"))
    # A detected placeholder is reported but leaves a text model.
    with leap.load_model(path, audio_tokenizer_path=str(elsewhere / "speaker.gguf")) as m:
        assert m.companions == leap.ModelCompanions(str(model_dir / "mmproj-found.gguf"), None, str(elsewhere / "speaker.gguf"))
        assert not m.supports_images
    missing = str(elsewhere / "missing.gguf")
    with pytest.raises(leap.LeapIOError, match=f"mmproj: cannot open GGUF file '{missing}'"):
        leap.load_model(path, mmproj_path=missing)
    with pytest.raises(leap.LeapIOError, match="audio decoder: cannot open '.*decoder.bin'"):
        leap.load_model(path, audio_decoder_path=str(elsewhere / "decoder.bin"))
    (elsewhere / "garbage.gguf").write_bytes(b"RIFF0000WAVEfmt ")
    with pytest.raises(leap.ModelLoadingError, match="audio decoder: .*garbage.gguf"):
        leap.load_model(path, audio_decoder_path=str(elsewhere / "garbage.gguf"))
    # A language model given as the projector is refused: it is not one.
    with pytest.raises(leap.ModelLoadingError, match=r"mmproj: '.*' is not a multimodal projector \(general.architecture "
                                                     r"is \"llama\", expected \"clip\"\)"):
        leap.load_model(path, mmproj_path=str(SMOL))
    # A detected projector that is broken is left out: the text model still loads. Given explicitly, it fails.
    (model_dir / "mmproj-model-broken.gguf").write_bytes(b"GGUF\x03\x00\x00\x00")  # the best-named candidate
    with leap.load_model(path) as m:
        assert m.companions == NONE
    with pytest.raises(leap.ModelLoadingError, match="mmproj: .*mmproj-model-broken.gguf"):
        leap.load_model(path, mmproj_path=str(model_dir / "mmproj-model-broken.gguf"))
    with leap.load_model(path, auto_detect_companion_files=False) as m:
        assert m.companions == NONE


def test_a_detected_companion_left_out_is_logged(model_dir):
    write_gguf(model_dir / "mmproj-model-f16.gguf", "clip")  # a placeholder: no clip.projector_type
    received = []
    with pytest.raises(ValueError):
        leap.set_log_callback(lambda level, message: None, level="verbose")
    leap.set_log_callback(lambda level, message: received.append((level, message)), level="info")
    try:
        with leap.load_model(str(model_dir / "model.gguf")) as m:
            assert not m.supports_images
    finally:
        leap.set_log_callback(None)
    projector = str(model_dir / "mmproj-model-f16.gguf")
    assert [level for level, _ in received] == ["warning"]
    assert projector in received[0][1] and "has no clip.projector_type" in received[0][1]
    # Silenced again: a second load logs nothing.
    with leap.load_model(str(model_dir / "model.gguf")):
        pass
    assert len(received) == 1
