"""leap.Tokenizer against llama.cpp: the committed goldens (always), and llama-cpp-python directly when
it is importable (random texts as well)."""
from __future__ import annotations

import ctypes
import json
import random

import pytest

import leap
from conftest import FIXTURES, MODELS, REPO

GOLDENS = FIXTURES / "tokenizer" / "goldens"
TINY = FIXTURES / "tokenizer" / "lfm2-tiny-vocab.gguf"
VOCABS = [MODELS / "vocabs", REPO / "models" / "vocabs"]


def vocab_path(file_name: str):
    for d in [FIXTURES / "tokenizer", MODELS, *VOCABS]:
        if (d / file_name).exists():
            return d / file_name
    return None


def golden_bytes(d) -> bytes:
    return d["text"].encode("utf-8") if "text" in d else bytes.fromhex(d["hex"])


def golden_files():
    return sorted(GOLDENS.glob("*.json"))


@pytest.mark.parametrize("golden", golden_files(), ids=lambda p: p.stem)
def test_goldens(golden):
    g = json.loads(golden.read_text(encoding="utf-8"))
    path = vocab_path(g["file"])
    if path is None:
        pytest.skip(f"{g['file']} not available (scripts/fetch-models.sh, scripts/fetch-vocabs.sh)")
    with leap.Tokenizer(str(path)) as tok:
        assert tok.vocab_size == g["n_tokens"]
        assert tok.bos_id == g["bos"] and tok.eos_id == g["eos"]
        assert [t for t in g["eog"]] == [t for t in g["eog"] if tok.is_eog(t)]
        for case in g["cases"]:
            text = golden_bytes(case)
            assert tok.tokenize(text, add_special=False, parse_special=False) == case["ids_00"], text
            assert tok.tokenize(text, add_special=True, parse_special=True) == case["ids_11"], text
            assert tok.tokenize(text, add_special=True, parse_special=False) == case["ids_10"], text
            assert tok.detokenize_bytes(case["ids_11"]) == golden_bytes(case["detok"]), text
            assert tok.detokenize_bytes(case["ids_11"], special=True) == golden_bytes(case["detok_special"]), text
        for p in g["pieces"]:
            assert tok.token_to_piece(p["id"]) == golden_bytes(p["piece"])
            assert tok.token_to_piece(p["id"], special=True) == golden_bytes(p["special"])


def test_str_and_bytes_and_errors():
    with leap.Tokenizer(str(TINY)) as tok:
        ids = tok.tokenize("Hello world")
        assert ids[0] == tok.bos_id == 1
        assert tok.tokenize(b"Hello world") == ids
        assert tok.detokenize(ids) == "Hello world"
        assert tok.detokenize(ids, special=True) == "<|startoftext|>Hello world"
        assert tok.is_eog(7) and tok.is_eog(2) and not tok.is_eog(6) and not tok.is_eog(-1)
        # A character split over tokens: its bytes come back, and detokenize repairs a cut one.
        llama = tok.tokenize("🦙", add_special=False)
        assert b"".join(tok.token_to_piece(t) for t in llama) == "🦙".encode()
        assert tok.detokenize_bytes(llama[:2]) == "🦙".encode()[:2]
        assert tok.detokenize(llama[:2]) == "\ufffd"
        with pytest.raises(leap.InvalidArgumentError, match="out of range"):
            tok.detokenize([tok.vocab_size])
        with pytest.raises(leap.InvalidArgumentError):
            tok.token_to_piece(-1)
    with pytest.raises(ValueError):
        tok.tokenize("x")
    with pytest.raises(leap.LeapIOError):
        leap.Tokenizer("/nonexistent/vocab.gguf")
    with pytest.raises(leap.FormatError, match="tokenizer.ggml.model"):
        leap.Tokenizer(str(FIXTURES / "gguf" / "random_types.gguf"))


def random_texts(n: int, seed: int):
    rng = random.Random(seed)
    alphabet = list("abcXYZ 012345 \t\n\r'.,!?-_<>|éü中文한글مرحباनमस्ते🦙👍🏽\u200d\u00a0\u3000") + [
        "<|im_start|>", "<|im_end|>", "'s", "'LL", "  ", "\r\n", "<start_of_turn>", "<s>", "</s>"]
    return ["".join(rng.choice(alphabet) for _ in range(rng.randrange(0, 60))) for _ in range(n)]


@pytest.mark.parametrize("file_name", ["lfm2-tiny-vocab.gguf", "SmolLM2-135M-Instruct.Q4_1.gguf",
                                       "gemma-3-270m-q4_k_m.gguf"])
def test_against_llama_cpp(file_name):
    llama_cpp = pytest.importorskip("llama_cpp")
    path = vocab_path(file_name)
    if path is None:
        pytest.skip(f"{file_name} not available")
    ref = llama_cpp.Llama(model_path=str(path), vocab_only=True, verbose=False)
    vocab = ref._model.vocab
    with leap.Tokenizer(str(path)) as tok:
        for text in random_texts(300, seed=len(file_name)):
            data = text.encode("utf-8")
            for add_special, parse_special in [(False, False), (True, True)]:
                buf = (llama_cpp.llama_token * (len(data) + 8))()
                n = llama_cpp.llama_tokenize(vocab, data, len(data), buf, len(data) + 8, add_special, parse_special)
                assert tok.tokenize(data, add_special, parse_special) == buf[:n], text
            ids = tok.tokenize(data, True, True)
            out = ctypes.create_string_buffer(len(data) * 4 + 64)
            arr = (llama_cpp.llama_token * max(1, len(ids)))(*ids)
            k = llama_cpp.llama_detokenize(vocab, arr, len(ids), out, len(out), False, True)
            assert tok.detokenize_bytes(ids, special=True) == out.raw[:k], text
