"""leap.gguf against gguf-py (GGUFReader + gguf.quants.dequantize) as the independent oracle."""
from __future__ import annotations

import math

import numpy as np
import pytest

gguf = pytest.importorskip("gguf")
from gguf.quants import dequantize  # noqa: E402

import leap  # noqa: E402
from conftest import FIXTURES, MODELS  # noqa: E402

RANDOM = FIXTURES / "gguf" / "random_types.gguf"
MODEL_FILES = ["SmolLM2-135M-Instruct.Q4_1.gguf", "gemma-3-270m-q4_k_m.gguf"]


def oracle_values(t) -> np.ndarray:
    """gguf-py's dequantized values of a ReaderTensor (Q8_K, which it lacks, by ggml's formula d*q)."""
    if t.tensor_type == gguf.GGMLQuantizationType.Q8_K:
        b = np.asarray(t.data, dtype=np.uint8).reshape(-1, 292)
        d = b[:, 0:4].copy().view(np.float32)
        return (d * b[:, 4:260].copy().view(np.int8).astype(np.float32)).reshape(-1)
    return np.asarray(dequantize(t.data, t.tensor_type), dtype=np.float32).reshape(-1)


def oracle_metadata(reader) -> dict:
    return {name: field.contents() for name, field in reader.fields.items() if not name.startswith("GGUF.")}


def flatten(xs):
    return [y for x in xs for y in (flatten(x) if isinstance(x, list) else [x])]


def same_value(ours, theirs) -> bool:
    if isinstance(theirs, list) and isinstance(ours, list) and any(isinstance(x, list) for x in ours):
        ours = flatten(ours)  # gguf-py's contents() flattens nested arrays
    if isinstance(theirs, list):
        return isinstance(ours, list) and len(ours) == len(theirs) and all(map(same_value, ours, theirs))
    if isinstance(theirs, float):
        # FLOAT32 values: gguf-py gives the float32 widened to double; JSON carries the shortest float32 text.
        return ours == theirs or np.float32(ours) == np.float32(theirs)
    return ours == theirs


def check_file(path, max_elements: int) -> int:
    reader = gguf.GGUFReader(str(path))
    with leap.GGUFFile(str(path)) as f:
        assert f.version == 3
        ours = f.metadata
        theirs = oracle_metadata(reader)
        assert list(ours) == list(theirs)
        for key, value in theirs.items():
            assert same_value(ours[key], value), key
        assert [t.name for t in f.tensors] == [t.name for t in reader.tensors]
        compared = 0
        for mine, t in zip(f.tensors, reader.tensors):
            assert mine.shape == tuple(int(x) for x in t.shape), t.name
            assert mine.type == int(t.tensor_type) and mine.type_name == t.tensor_type.name
            assert mine.offset == t.data_offset and mine.size == t.n_bytes and mine.n_elements == t.n_elements
            if t.n_elements > max_elements:
                continue
            got = np.frombuffer(f.tensor(t.name), dtype=np.float32)
            want = oracle_values(t)
            assert got.shape == want.shape, t.name
            # Bit-exact: the same float operations in the same order as ggml/gguf-py.
            assert np.array_equal(got.view(np.uint32), want.view(np.uint32)), t.name
            compared += 1
        return compared


def test_random_types_match_gguf_py():
    assert check_file(RANDOM, max_elements=1 << 30) == 22


@pytest.mark.parametrize("name", MODEL_FILES)
def test_real_models_match_gguf_py(name):
    path = MODELS / name
    if not path.exists():
        pytest.skip(f"{name} not found in {MODELS}")
    # Every tensor but the largest embedding tables (the Swift golden test covers those).
    compared = check_file(path, max_elements=32 << 20)
    assert compared >= 200


def test_metadata_values_and_types():
    with leap.GGUFFile(str(RANDOM)) as f:
        assert f.value("test.uint64") == 18000000000000000000
        assert f.value("test.array.nested") == [[1, 2], [3], [4, 5, 6]]
        assert f.value("test.string") == "héllo wörld ✓"
        assert f.value_type("test.array.uint32") == "ARRAY[UINT32]"
        assert f.value_type("test.float64") == "FLOAT64"
        assert math.isclose(f.metadata["test.float64"], -2.5e-300, rel_tol=0)
        info = f.tensor_info("q5_k.random")
        assert info.shape == (512, 3) and info.type_name == "Q5_K" and info.size == 6 * 176
        with pytest.raises(leap.InvalidArgumentError, match="no tensor named 'nope'"):
            f.tensor("nope")
        with pytest.raises(leap.InvalidArgumentError, match="no metadata key 'nope'"):
            f.value("nope")
    with pytest.raises(ValueError, match="closed"):
        _ = f.tensors


def test_errors():
    with pytest.raises(leap.LeapIOError, match="No such file"):
        leap.GGUFFile("/nonexistent/model.gguf")
    with pytest.raises(leap.FormatError, match="not a GGUF file"):
        leap.GGUFFile(str(FIXTURES / "gguf" / "random_types.golden.txt"))
    with pytest.raises(leap.UnsupportedError, match="big-endian"):
        leap.GGUFFile(str(FIXTURES / "gguf" / "big_endian.gguf"))


def test_truncated_file(tmp_path):
    data = RANDOM.read_bytes()
    for cut in (3, 20, 200, len(data) - 40):  # (the last 0..31 bytes are padding)
        p = tmp_path / f"cut{cut}.gguf"
        p.write_bytes(data[:cut])
        with pytest.raises(leap.FormatError):
            leap.GGUFFile(str(p))
