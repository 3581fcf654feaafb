"""The C API as ctypes sees it: loading libleap.so, and every handle type, struct mirror, callback type and
function prototype the package uses, in the order of include/leap.h. No other module names a C function or
lays out a C struct.

* A prototype is the module attribute named as its C function; ``leap_status`` results are ``c_status``.
* Owned ``char *`` results are declared ``c_void_p`` (``c_char_p`` would copy and leak them) and released
  with ``leap_string_free``; owned arrays with ``leap_buffer_free`` (see ``_marshal``).
* A struct mirror is the ``ctypes.Structure`` named as its C typedef, with the header's fields in the
  header's order. Growable structs only ever gain fields at their end: add the same field here, last.
  tests/test_struct_layout.py compares every mirror's size and field offsets with the compiler's.
* A C enum the package uses is mirrored whole, as module constants named as its enumerators (and the
  ``#define`` values it needs, named as their macros); the other modules take the values from here.
  tests/test_capi_header.py compares every ``LEAP_*`` constant and every prototype and callback type
  here with include/leap.h as the compiler reads it.
"""
from __future__ import annotations

import ctypes
import os
from ctypes import (
    CFUNCTYPE, POINTER, Structure, c_char_p, c_double, c_float, c_int, c_int32, c_int64, c_size_t, c_uint32,
    c_uint64, c_void_p,
)
from pathlib import Path
from typing import Any

_here = Path(__file__).resolve().parent

LEAP_VERSION_MAJOR = 0
ABI_MAJOR = LEAP_VERSION_MAJOR  # the library's leap_version_number() / 10000 must be this


def _source_tree_builds() -> list[Path]:
    """The builds of the repository around this package, when it is imported from a checkout
    (bindings/python/leap inside a libleap repository); none for an installed package."""
    repo = _here.parent.parent.parent
    if not ((repo / "Package.swift").is_file() and (repo / "include" / "leap.h").is_file()):
        return []
    return [repo / "build" / "lib" / "libleap.so",
            repo / ".build" / "release" / "libleap.so",
            repo / ".build" / "debug" / "libleap.so"]


def _candidates() -> tuple[list[str], list[str]]:
    """The libraries to try, in order, and a note for each place looked at where nothing was found."""
    env = os.environ.get("LEAP_LIBRARY_PATH")
    if env:
        # An explicit choice: only it, and a missing file is an error rather than a reason to look elsewhere.
        return ([env], []) if Path(env).is_file() else ([], [f"LEAP_LIBRARY_PATH={env}: no such file"])
    found: list[str] = []
    missing: list[str] = []
    for p in [_here / "libleap.so"] + _source_tree_builds():
        (found if p.is_file() else missing).append(str(p))
    # An installed copy (scripts/install.sh) on the dynamic loader's search path.
    return found + ["libleap.so.0"], [f"{p}: not built" for p in missing]


def _load() -> ctypes.CDLL:
    candidates, errors = _candidates()
    for cand in candidates:
        try:
            lib = ctypes.CDLL(cand)
        except OSError as e:
            errors.append(f"{cand}: {e}")
            continue
        lib.leap_version_number.restype = c_uint32
        lib.leap_version_number.argtypes = []
        major = lib.leap_version_number() // 10000
        if major != ABI_MAJOR:
            errors.append(f"{cand}: ABI major version {major}, this package needs {ABI_MAJOR}")
            continue
        return lib
    raise OSError(
        "libleap.so not found or not loadable. Install the package with its library "
        "(`pip install ./bindings/python` builds it), or set LEAP_LIBRARY_PATH to a libleap.so "
        "(scripts/build.sh puts one in build/lib). Tried: " + "; ".join(errors))


lib = _load()
path: str = getattr(lib, "_name", "libleap.so")


def fn(name: str, restype: Any, *argtypes: Any) -> Any:
    """Declare and return one C function of the library."""
    f = getattr(lib, name)
    f.restype = restype
    f.argtypes = list(argtypes)
    return f


def opaque(name: str) -> Any:
    """A distinct pointer type per handle kind, so handles cannot be swapped silently."""
    return POINTER(type(name, (Structure,), {}))


P = POINTER
c_status = c_int  # leap_status
c_enum = c_int  # any enum type of the header (leap_role, leap_log_level, ...): an int in the C ABI
out_str = P(c_void_p)  # char **: an owned string, released with leap_string_free
out_buf = P(c_void_p)  # uint8_t ** / void **: an owned array, released with leap_buffer_free
out_floats = P(P(c_float))  # float **
i32_p = P(c_int32)
u32_p = P(c_uint32)
size_p = P(c_size_t)
float_p = P(c_float)

# ---- Status, errors, versions, memory ----------------------------------------------------------------

# leap_status
LEAP_OK = 0
LEAP_ERR_INVALID_ARGUMENT = 1
LEAP_ERR_IO = 2
LEAP_ERR_FORMAT = 3
LEAP_ERR_UNSUPPORTED = 4
LEAP_ERR_SERIALIZATION = 5
LEAP_ERR_AUDIO_FORMAT = 6
LEAP_ERR_MODEL_LOADING = 7
LEAP_ERR_GENERATION = 8
LEAP_ERR_PROMPT_EXCEEDS_CONTEXT = 9
LEAP_ERR_FUNCTION_CALL_PARSING = 10
LEAP_ERR_CANCELLED = 11
LEAP_ERR_BUSY = 12
LEAP_ERR_OUT_OF_MEMORY = 13
LEAP_ERR_BUFFER_TOO_SMALL = 14
LEAP_ERR_INTERNAL = 100

leap_status_string = fn("leap_status_string", c_char_p, c_status)
leap_last_error = fn("leap_last_error", c_char_p)
leap_version_string = fn("leap_version_string", c_char_p)
leap_string_free = fn("leap_string_free", None, c_void_p)
leap_buffer_free = fn("leap_buffer_free", None, c_void_p)

# leap_log_level
LEAP_LOG_ERROR = 1
LEAP_LOG_WARNING = 2
LEAP_LOG_INFO = 3
LEAP_LOG_DEBUG = 4

leap_log_callback = CFUNCTYPE(None, c_enum, c_char_p, c_void_p)
leap_set_log_callback = fn("leap_set_log_callback", c_status, leap_log_callback, c_enum, c_void_p)

# ---- Messages & content -------------------------------------------------------------------------------

leap_message_p = opaque("leap_message")

# leap_role
LEAP_ROLE_USER = 0
LEAP_ROLE_SYSTEM = 1
LEAP_ROLE_ASSISTANT = 2
LEAP_ROLE_TOOL = 3

leap_message_create = fn("leap_message_create", c_status, c_enum, P(leap_message_p))
leap_message_free = fn("leap_message_free", None, leap_message_p)
leap_message_from_json = fn("leap_message_from_json", c_status, c_char_p, P(leap_message_p))
leap_message_to_json = fn("leap_message_to_json", c_status, leap_message_p, out_str)
leap_message_add_text = fn("leap_message_add_text", c_status, leap_message_p, c_char_p)
leap_message_add_image_jpeg = fn("leap_message_add_image_jpeg", c_status, leap_message_p, c_char_p, c_size_t)
leap_message_add_image_rgb = fn("leap_message_add_image_rgb", c_status, leap_message_p, c_char_p, c_int32, c_int32,
                                c_int32)
leap_message_add_audio_wav = fn("leap_message_add_audio_wav", c_status, leap_message_p, c_char_p, c_size_t)
leap_message_add_audio_samples = fn("leap_message_add_audio_samples", c_status, leap_message_p, float_p, c_size_t,
                                    c_int32, c_int32)
leap_message_add_audio_pcm_f32 = fn("leap_message_add_audio_pcm_f32", c_status, leap_message_p, float_p, c_size_t,
                                    c_int32)
leap_message_set_reasoning = fn("leap_message_set_reasoning", c_status, leap_message_p, c_char_p)
leap_message_add_function_call = fn("leap_message_add_function_call", c_status, leap_message_p, c_char_p, c_char_p)
leap_message_part_count = fn("leap_message_part_count", c_status, leap_message_p, size_p)
leap_message_part_data = fn("leap_message_part_data", c_status, leap_message_p, c_size_t, out_buf, size_p)

# ---- Audio (WAV decoding/encoding, resampling) --------------------------------------------------------

LEAP_AUDIO_INPUT_SAMPLE_RATE = 16000
LEAP_AUDIO_OUTPUT_SAMPLE_RATE = 24000

# leap_audio_encoding
LEAP_AUDIO_ENCODING_F32 = 0
LEAP_AUDIO_ENCODING_S16 = 1

leap_resampler_p = opaque("leap_resampler")

leap_audio_decode_wav = fn("leap_audio_decode_wav", c_status, c_char_p, c_size_t, out_floats, size_p, i32_p, i32_p)
leap_audio_load_wav = fn("leap_audio_load_wav", c_status, c_char_p, c_size_t, c_int32, out_floats, size_p)
leap_audio_resample = fn("leap_audio_resample", c_status, float_p, c_size_t, c_int32, c_int32, out_floats, size_p)
leap_audio_encode_wav = fn("leap_audio_encode_wav", c_status, float_p, c_size_t, c_int32, c_int32, c_enum, out_buf,
                           size_p)
leap_resampler_create = fn("leap_resampler_create", c_status, c_int32, c_int32, P(leap_resampler_p))
leap_resampler_process = fn("leap_resampler_process", c_status, leap_resampler_p, float_p, c_size_t, out_floats,
                            size_p)
leap_resampler_flush = fn("leap_resampler_flush", c_status, leap_resampler_p, out_floats, size_p)
leap_resampler_free = fn("leap_resampler_free", None, leap_resampler_p)

# ---- GGUF files ---------------------------------------------------------------------------------------

leap_gguf_p = opaque("leap_gguf")


class leap_gguf_tensor_info(Structure):
    _fields_ = [
        ("struct_size", c_uint32),
        ("n_dims", c_uint32),
        ("name", c_char_p),
        ("ne", c_int64 * 4),
        ("type", c_uint32),
        ("type_name", c_char_p),
        ("offset", c_uint64),
        ("size", c_uint64),
        ("n_elements", c_uint64),
    ]


leap_gguf_open = fn("leap_gguf_open", c_status, c_char_p, P(leap_gguf_p))
leap_gguf_free = fn("leap_gguf_free", None, leap_gguf_p)
leap_gguf_version = fn("leap_gguf_version", c_status, leap_gguf_p, u32_p)
leap_gguf_metadata_count = fn("leap_gguf_metadata_count", c_status, leap_gguf_p, size_p)
leap_gguf_metadata_key = fn("leap_gguf_metadata_key", c_status, leap_gguf_p, c_size_t, out_str)
leap_gguf_metadata_type = fn("leap_gguf_metadata_type", c_status, leap_gguf_p, c_char_p, out_str)
leap_gguf_metadata_json = fn("leap_gguf_metadata_json", c_status, leap_gguf_p, c_char_p, out_str)
leap_gguf_tensor_count = fn("leap_gguf_tensor_count", c_status, leap_gguf_p, size_p)
leap_gguf_find_tensor = fn("leap_gguf_find_tensor", c_status, leap_gguf_p, c_char_p, size_p)
leap_gguf_tensor_info_get = fn("leap_gguf_tensor_info_get", c_status, leap_gguf_p, c_size_t, P(leap_gguf_tensor_info))
leap_gguf_tensor_dequantize = fn("leap_gguf_tensor_dequantize", c_status, leap_gguf_p, c_size_t, out_floats, size_p)

# ---- Tokenizers and chat templates --------------------------------------------------------------------

leap_tokenizer_p = opaque("leap_tokenizer")

leap_tokenizer_load = fn("leap_tokenizer_load", c_status, c_char_p, P(leap_tokenizer_p))
leap_tokenizer_free = fn("leap_tokenizer_free", None, leap_tokenizer_p)
leap_tokenizer_tokenize = fn("leap_tokenizer_tokenize", c_status, leap_tokenizer_p, c_char_p, c_size_t, c_int32,
                             c_int32, P(i32_p), size_p)
leap_tokenizer_detokenize = fn("leap_tokenizer_detokenize", c_status, leap_tokenizer_p, i32_p, c_size_t, c_int32,
                               out_str, size_p)
leap_tokenizer_token_to_piece = fn("leap_tokenizer_token_to_piece", c_status, leap_tokenizer_p, c_int32, c_int32,
                                   out_str, size_p)
leap_tokenizer_vocab_size = fn("leap_tokenizer_vocab_size", c_status, leap_tokenizer_p, size_p)
leap_tokenizer_bos_id = fn("leap_tokenizer_bos_id", c_status, leap_tokenizer_p, i32_p)
leap_tokenizer_eos_id = fn("leap_tokenizer_eos_id", c_status, leap_tokenizer_p, i32_p)
leap_tokenizer_is_eog = fn("leap_tokenizer_is_eog", c_status, leap_tokenizer_p, c_int32, i32_p)

leap_chat_template_p = opaque("leap_chat_template")

leap_chat_template_create = fn("leap_chat_template_create", c_status, c_char_p, P(leap_chat_template_p))
leap_chat_template_free = fn("leap_chat_template_free", None, leap_chat_template_p)
leap_chat_template_render = fn("leap_chat_template_render", c_status, leap_chat_template_p, c_char_p, c_char_p,
                               c_int32, c_char_p, out_str)
leap_chat_template_chatml = fn("leap_chat_template_chatml", c_char_p)

# ---- Models and low-level evaluation ------------------------------------------------------------------

leap_model_p = opaque("leap_model")


class leap_model_params(Structure):
    _fields_ = [
        ("struct_size", c_uint32),
        ("n_threads", c_int32),
        ("context_size", c_int32),
        ("chat_template", c_char_p),
        ("mmproj_path", c_char_p),
        ("audio_decoder_path", c_char_p),
        ("audio_tokenizer_path", c_char_p),
        ("auto_detect_companion_files", c_int32),
        ("cache_enabled", c_int32),
        ("cache_path", c_char_p),
        ("cache_max_entries_disk", c_int32),
        ("cache_max_entries_memory", c_int32),
        ("cache_max_bytes_memory", c_int64),
        ("cache_max_bytes_disk", c_int64),
        ("cache_disk_disabled", c_int32),
        ("draft_model_path", c_char_p),
    ]


leap_model_params_init = fn("leap_model_params_init", None, P(leap_model_params), c_size_t)
leap_model_load = fn("leap_model_load", c_status, c_char_p, P(leap_model_params), P(leap_model_p))
# leap_companion_kind
LEAP_COMPANION_MMPROJ = 0
LEAP_COMPANION_AUDIO_DECODER = 1
LEAP_COMPANION_AUDIO_TOKENIZER = 2

leap_model_companion_path = fn("leap_model_companion_path", c_status, leap_model_p, c_enum, out_str)
leap_model_free = fn("leap_model_free", None, leap_model_p)
leap_model_cache_flush = fn("leap_model_cache_flush", c_status, leap_model_p)

leap_cancel_token_p = opaque("leap_cancel_token")
leap_download_progress_fn = CFUNCTYPE(c_int32, c_char_p, c_uint64, c_uint64, c_void_p)


class leap_bundle_params(Structure):
    _fields_ = [
        ("struct_size", c_uint32),
        ("cache_dir", c_char_p),
        ("on_progress", leap_download_progress_fn),
        ("user_data", c_void_p),
        ("cancel", leap_cancel_token_p),
        ("n_threads", c_int32),
        ("context_size", c_int32),
        ("chat_template", c_char_p),
        ("stall_timeout_seconds", c_int32),
        ("prompt_cache_enabled", c_int32),
        ("prompt_cache_path", c_char_p),
        ("prompt_cache_max_entries_disk", c_int32),
        ("prompt_cache_max_entries_memory", c_int32),
        ("prompt_cache_max_bytes_memory", c_int64),
        ("prompt_cache_max_bytes_disk", c_int64),
        ("prompt_cache_disk_disabled", c_int32),
    ]


leap_cancel_token_create = fn("leap_cancel_token_create", c_status, P(leap_cancel_token_p))
leap_cancel_token_cancel = fn("leap_cancel_token_cancel", c_status, leap_cancel_token_p)
leap_cancel_token_is_cancelled = fn("leap_cancel_token_is_cancelled", c_status, leap_cancel_token_p, i32_p)
leap_cancel_token_free = fn("leap_cancel_token_free", None, leap_cancel_token_p)
leap_bundle_params_init = fn("leap_bundle_params_init", None, P(leap_bundle_params), c_size_t)
leap_model_load_bundle = fn("leap_model_load_bundle", c_status, c_char_p, P(leap_bundle_params), P(leap_model_p))

leap_model_has_vision = fn("leap_model_has_vision", c_status, leap_model_p, i32_p)
leap_model_has_audio_input = fn("leap_model_has_audio_input", c_status, leap_model_p, i32_p)
leap_model_has_audio_output = fn("leap_model_has_audio_output", c_status, leap_model_p, i32_p)
# Embeddings: float **out_rows, size_t *out_n_rows, size_t *out_n_embd.
leap_model_embed_image = fn("leap_model_embed_image", c_status, leap_model_p, c_char_p, c_size_t, out_buf, size_p,
                            size_p)
leap_model_embed_image_rgb = fn("leap_model_embed_image_rgb", c_status, leap_model_p, c_char_p, c_int32, c_int32,
                                out_buf, size_p, size_p)
leap_model_embed_audio = fn("leap_model_embed_audio", c_status, leap_model_p, c_char_p, c_size_t, out_buf, size_p,
                            size_p)
leap_model_embed_audio_pcm = fn("leap_model_embed_audio_pcm", c_status, leap_model_p, float_p, c_size_t, c_int32,
                                out_buf, size_p, size_p)
leap_model_id = fn("leap_model_id", c_status, leap_model_p, out_str)
leap_model_architecture = fn("leap_model_architecture", c_status, leap_model_p, out_str)
leap_model_chat_template = fn("leap_model_chat_template", c_status, leap_model_p, out_str)
leap_model_uses_fallback_template = fn("leap_model_uses_fallback_template", c_status, leap_model_p, i32_p)
leap_model_context_size = fn("leap_model_context_size", c_status, leap_model_p, i32_p)
leap_model_vocab_size = fn("leap_model_vocab_size", c_status, leap_model_p, i32_p)
leap_model_prompt_token_count = fn("leap_model_prompt_token_count", c_status, leap_model_p, c_char_p, size_p)
leap_model_tokenizer = fn("leap_model_tokenizer", c_status, leap_model_p, P(leap_tokenizer_p))
leap_model_apply_chat_template = fn("leap_model_apply_chat_template", c_status, leap_model_p, c_char_p, c_char_p,
                                    c_int32, c_char_p, out_str)

leap_context_p = opaque("leap_context")


class leap_context_params(Structure):
    _fields_ = [
        ("struct_size", c_uint32),
        ("context_size", c_int32),
        ("n_threads", c_int32),
        ("kv_cache_f32", c_int32),
    ]


leap_context_params_init = fn("leap_context_params_init", None, P(leap_context_params), c_size_t)
leap_context_create = fn("leap_context_create", c_status, leap_model_p, P(leap_context_params), P(leap_context_p))
leap_context_free = fn("leap_context_free", None, leap_context_p)
leap_context_eval = fn("leap_context_eval", c_status, leap_context_p, i32_p, c_size_t)
leap_context_eval_all_logits = fn("leap_context_eval_all_logits", c_status, leap_context_p, i32_p, c_size_t)
leap_context_eval_verify = fn("leap_context_eval_verify", c_status, leap_context_p, i32_p, c_size_t)
leap_context_logits = fn("leap_context_logits", c_status, leap_context_p, c_int32, P(float_p), size_p)
leap_context_rewind = fn("leap_context_rewind", c_status, leap_context_p, c_int32)
leap_context_n_past = fn("leap_context_n_past", c_status, leap_context_p, i32_p)
leap_context_size = fn("leap_context_size", c_status, leap_context_p, i32_p)

leap_sampler_p = opaque("leap_sampler")


class leap_sampler_params(Structure):
    _fields_ = [
        ("struct_size", c_uint32),
        ("temperature", c_float),
        ("top_k", c_int32),
        ("top_p", c_float),
        ("min_p", c_float),
        ("repetition_penalty", c_float),
        ("frequency_penalty", c_float),
        ("presence_penalty", c_float),
        ("penalty_last_n", c_int32),
        ("seed", c_uint64),
    ]


leap_sampler_params_init = fn("leap_sampler_params_init", None, P(leap_sampler_params), c_size_t)
leap_sampler_create = fn("leap_sampler_create", c_status, P(leap_sampler_params), P(leap_sampler_p))
leap_sampler_free = fn("leap_sampler_free", None, leap_sampler_p)
leap_sampler_sample = fn("leap_sampler_sample", c_status, leap_sampler_p, float_p, c_size_t, i32_p)
leap_sampler_accept = fn("leap_sampler_accept", c_status, leap_sampler_p, c_int32)
leap_sampler_reset = fn("leap_sampler_reset", c_status, leap_sampler_p)

leap_speculator_p = opaque("leap_speculator")


class leap_speculator_params(Structure):
    _fields_ = [
        ("struct_size", c_uint32),
        ("drafter", c_int32),
        ("max_draft_tokens", c_int32),
        ("context_size", c_int32),
    ]


leap_speculator_params_init = fn("leap_speculator_params_init", None, P(leap_speculator_params), c_size_t)
leap_speculator_create = fn("leap_speculator_create", c_status, leap_model_p, P(leap_speculator_params),
                            P(leap_speculator_p))
leap_speculator_free = fn("leap_speculator_free", None, leap_speculator_p)
leap_speculator_draft = fn("leap_speculator_draft", c_status, leap_speculator_p, i32_p, c_size_t, c_size_t, i32_p,
                           size_p)
leap_speculator_accept = fn("leap_speculator_accept", c_status, leap_speculator_p, c_size_t)
leap_speculator_max_draft_tokens = fn("leap_speculator_max_draft_tokens", c_status, leap_speculator_p, i32_p)

# ---- Conversations and generation ---------------------------------------------------------------------

leap_conversation_p = opaque("leap_conversation")
leap_generation_p = opaque("leap_generation")

# leap_finish_reason
LEAP_FINISH_STOP = 0
LEAP_FINISH_EXCEED_CONTEXT = 1
LEAP_FINISH_INTERRUPTED = 2
LEAP_FINISH_CONSTRAINT = 3
LEAP_FINISH_ERROR = 4
LEAP_FINISH_MAX_TOKENS = 5

# leap_audio_mode
LEAP_AUDIO_MODE_AUTO = 0
LEAP_AUDIO_MODE_TEXT_ONLY = 1
LEAP_AUDIO_MODE_SEQUENTIAL = 2
LEAP_AUDIO_MODE_INTERLEAVED = 3

# leap_drafter
LEAP_DRAFTER_DEFAULT = 0
LEAP_DRAFTER_NONE = 1
LEAP_DRAFTER_NGRAM = 2
LEAP_DRAFTER_DRAFT_MODEL = 3

# leap_event_kind
LEAP_EVENT_NONE = 0
LEAP_EVENT_CHUNK = 1
LEAP_EVENT_REASONING_CHUNK = 2
LEAP_EVENT_FUNCTION_CALLS = 3
LEAP_EVENT_AUDIO_SAMPLE = 4
LEAP_EVENT_COMPLETE = 5
LEAP_EVENT_TOKEN = 6


class leap_generation_options(Structure):
    _fields_ = [
        ("struct_size", c_uint32),
        ("temperature", c_float),
        ("top_p", c_float),
        ("min_p", c_float),
        ("top_k", c_int32),
        ("repetition_penalty", c_float),
        ("use_rng_seed", c_int32),
        ("rng_seed", c_uint64),
        ("max_tokens", c_int32),
        ("json_schema_constraint", c_char_p),
        ("inject_schema_into_prompt", c_int32),
        ("function_call_parser", c_int32),
        ("inline_thinking_tags", c_int32),
        ("enable_thinking", c_int32),
        ("audio_temperature", c_float),
        ("audio_top_k", c_int32),
        ("audio_mode", c_int32),
        ("frequency_penalty", c_float),
        ("presence_penalty", c_float),
        ("top_logprobs", c_int32),
        ("unparsed_function_calls_as_text", c_int32),
        ("drafter", c_int32),
        ("max_draft_tokens", c_int32),
    ]


class leap_generation_stats(Structure):
    _fields_ = [
        ("prompt_tokens", c_int64),
        ("completion_tokens", c_int64),
        ("total_tokens", c_int64),
        ("cached_prompt_tokens", c_int64),
        ("tokens_per_second", c_double),
        ("time_to_first_token", c_double),
        ("prompt_tokens_per_second", c_double),
        ("drafted_tokens", c_int64),
        ("accepted_draft_tokens", c_int64),
    ]


class leap_token_logprob(Structure):
    _fields_ = [
        ("token", c_int32),
        ("logprob", c_float),
        ("bytes", c_void_p),  # const char *, not NUL-terminated: n_bytes long
        ("n_bytes", c_size_t),
    ]


class leap_event(Structure):
    _fields_ = [
        ("struct_size", c_uint32),
        ("kind", c_int32),
        ("text", c_void_p),  # const char *, read as text_len bytes
        ("text_len", c_size_t),
        ("function_calls_json", c_char_p),
        ("samples", float_p),
        ("n_samples", c_size_t),
        ("sample_rate", c_int32),
        ("finish_reason", c_int32),
        ("message", leap_message_p),
        ("stats", P(leap_generation_stats)),
        ("token", leap_token_logprob),
        ("top_logprobs", P(leap_token_logprob)),
        ("n_top_logprobs", c_size_t),
    ]


leap_generation_options_init = fn("leap_generation_options_init", None, P(leap_generation_options), c_size_t)
leap_conversation_create = fn("leap_conversation_create", c_status, leap_model_p, c_char_p, P(leap_conversation_p))
leap_conversation_create_from_history = fn("leap_conversation_create_from_history", c_status, leap_model_p, c_char_p,
                                           P(leap_conversation_p))
leap_conversation_free = fn("leap_conversation_free", None, leap_conversation_p)
leap_conversation_history_json = fn("leap_conversation_history_json", c_status, leap_conversation_p, out_str)
leap_conversation_append = fn("leap_conversation_append", c_status, leap_conversation_p, leap_message_p)
leap_conversation_remove_last = fn("leap_conversation_remove_last", c_status, leap_conversation_p)
leap_conversation_register_function = fn("leap_conversation_register_function", c_status, leap_conversation_p,
                                         c_char_p)
leap_conversation_is_generating = fn("leap_conversation_is_generating", c_status, leap_conversation_p, i32_p)
leap_conversation_stop = fn("leap_conversation_stop", c_status, leap_conversation_p)
leap_conversation_generate_begin = fn("leap_conversation_generate_begin", c_status, leap_conversation_p,
                                      leap_message_p, P(leap_generation_options), P(leap_generation_p))
leap_generation_next = fn("leap_generation_next", c_status, leap_generation_p, P(leap_event))
leap_generation_free = fn("leap_generation_free", None, leap_generation_p)
leap_conversation_save_state = fn("leap_conversation_save_state", c_status, leap_conversation_p, c_char_p)
leap_conversation_load_state = fn("leap_conversation_load_state", c_status, leap_conversation_p, c_char_p)

# leap_function_call_parser
LEAP_FUNCTION_CALL_PARSER_NONE = 0
LEAP_FUNCTION_CALL_PARSER_LFM = 1
LEAP_FUNCTION_CALL_PARSER_HERMES = 2

leap_function_calls_parse_n = fn("leap_function_calls_parse_n", c_status, c_enum, c_char_p, c_size_t, out_str)
leap_function_calls_dump = fn("leap_function_calls_dump", c_status, c_enum, c_char_p, out_str)
