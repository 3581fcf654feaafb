"""libleap for Python: on-device LLM inference with the LEAP conversation API.

Everything here is a thin, typed layer over the C library (``include/leap.h``); errors raise subclasses
of :class:`LeapError` chosen by the C status code.
"""
from __future__ import annotations

from . import _capi, audio
from .errors import (
    AudioFormatError, BufferTooSmallError, BusyError, CancelledError, FormatError, FunctionCallParsingError,
    GenerationError, InternalError, InvalidArgumentError, LeapError, LeapIOError, LeapMemoryError,
    ModelLoadingError, PromptExceedsContextError, SerializationError, UnsupportedError,
)
from .functions import (
    ArrayType, BooleanType, FunctionCallParser, HermesFunctionCallParser, IntegerType, LeapFunction,
    LeapFunctionParameter, LFMFunctionCallParser, NullType, NumberType, ObjectType, ParameterType, StringType,
)
from .bundles import CancelToken, ProgressCallback, load_bundle
from .chat_template import ChatTemplate
from .gguf import GGUFFile, GGUFTensor
from .tokenizer import Tokenizer
from .log import LogCallback, set_log_callback
from .context import Context, Sampler, Speculator
from .messages import Audio, AudioPcmF32, ChatMessage, Content, Image, ImageRGB, LeapFunctionCall, Role, Text
from .generation import (
    AudioSample, Chunk, Complete, FunctionCalls, GenerationFinishReason, GenerationOptions, GenerationStats,
    MessageResponse, ReasoningChunk, ResponseStream, Token, TokenLogprob,
)
from .conversation import Conversation
from .model import CacheOptions, Model, ModelCompanions, load_model

__version__ = (_capi.leap_version_string() or b"0.0.0").decode()
library_path = _capi.path

__all__ = [
    "__version__", "library_path", "audio", "set_log_callback", "LogCallback", "CacheOptions",
    "LeapError", "InvalidArgumentError", "LeapIOError", "FormatError", "UnsupportedError", "SerializationError",
    "AudioFormatError", "ModelLoadingError", "GenerationError", "PromptExceedsContextError",
    "FunctionCallParsingError", "CancelledError", "BusyError", "LeapMemoryError", "BufferTooSmallError",
    "InternalError",
    "GGUFFile", "GGUFTensor", "Tokenizer", "ChatTemplate", "Context", "Sampler", "Speculator",
    "ChatMessage", "Role", "Text", "Image", "ImageRGB", "Audio", "AudioPcmF32", "Content", "LeapFunctionCall",
    "LeapFunction", "LeapFunctionParameter", "ParameterType", "StringType", "NumberType", "IntegerType",
    "BooleanType", "ArrayType", "ObjectType", "NullType",
    "FunctionCallParser", "LFMFunctionCallParser", "HermesFunctionCallParser",
    "load_model", "load_bundle", "CancelToken", "ProgressCallback", "Model", "Conversation", "GenerationOptions", "GenerationFinishReason", "GenerationStats",
    "ModelCompanions", "ResponseStream",
    "MessageResponse", "Chunk", "ReasoningChunk", "FunctionCalls", "AudioSample", "Token", "TokenLogprob", "Complete",
]
