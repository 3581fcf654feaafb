"""The ``leap-server`` command line: options, logging, and uvicorn serving the app."""
from __future__ import annotations

import argparse
import logging
import os
import sys
from typing import List, Optional

from ..generation import MAX_DRAFT_TOKENS

MiB = 1 << 20
#: --spec-type names (with llama-server's for the same kinds: its draft model, its prompt lookup) and the
#: library's drafters (GenerationOptions.drafter). Here rather than in engine.py, whose imports need the
#: server extra.
DRAFTERS = {"none": "none", "ngram": "ngram", "draft": "draft_model", "ngram-simple": "ngram",
            "draft-simple": "draft_model"}


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="leap-server",
        description="An OpenAI-compatible HTTP server over libleap: /v1/chat/completions, /v1/completions, "
                    "/v1/models, /health; with an audio model /v1/audio/speech, /v1/audio/transcriptions and the "
                    "/v1/realtime WebSocket; a chat page at /.")
    src = p.add_argument_group("model")
    which = src.add_mutually_exclusive_group(required=True)
    which.add_argument("-m", "--model", help="GGUF model file")
    which.add_argument("--bundle", metavar="PATH_OR_URL", help="a LEAP bundle manifest (path or http(s) URL); its "
                       "files are downloaded into the LEAP cache with a progress bar")
    src.add_argument("--mmproj", help="vision / audio projector GGUF (default: found next to the model)")
    src.add_argument("--audio-decoder", help="audio decoder of a model that speaks (default: found next to the model)")
    src.add_argument("--audio-tokenizer", help="audio tokenizer of a model that speaks (default: found next to it)")
    src.add_argument("-a", "--alias", help="the model name clients use and /v1/models lists (default: the model id)")
    src.add_argument("-t", "--threads", type=int, help="CPU threads (default: physical cores)")
    src.add_argument("-c", "--ctx-size", type=int, help="context size in tokens (default: the model's)")
    src.add_argument("--cache-dir", help="keep the prompt cache on disk here too, so it survives restarts "
                     "(without it the cache is in memory only)")
    spec = p.add_argument_group("speculative decoding", "guesses of the next tokens checked in one pass of the "
                                "model: the answers stay the same (greedy: the same tokens; sampling: the same "
                                "distribution), only faster where the guesses are right")
    spec.add_argument("-md", "--model-draft", "--spec-draft-model", dest="model_draft", metavar="FILE",
                      help="a small GGUF model of the same vocabulary that drafts tokens (loaded with the model; "
                           "with --model)")
    spec.add_argument("--spec-type", choices=list(DRAFTERS), metavar="{none,ngram,draft}",
                      help="who drafts: 'draft' the draft model, 'ngram' prompt lookup (the tokens that followed "
                           "an earlier occurrence of the latest ones in the prompt or the answer: pays where "
                           "answers copy given text), 'none' (default: 'draft' with --model-draft, else 'none'); "
                           "llama-server's 'draft-simple' and 'ngram-simple' are taken for 'draft' and 'ngram'")
    spec.add_argument("--spec-draft-n-max", type=int, metavar="N",
                      help=f"most tokens drafted per pass, 1..{MAX_DRAFT_TOKENS} (default: the library's, 8; "
                           "the draft length adapts to how many guesses are accepted)")
    net = p.add_argument_group("serving")
    net.add_argument("--host", default="127.0.0.1", help="address to listen on (default: %(default)s)")
    net.add_argument("--port", type=int, default=8080, help="port (default: %(default)s)")
    net.add_argument("--api-key", default=os.environ.get("LEAP_API_KEY"),
                     help="require this key (Authorization: Bearer KEY); default: $LEAP_API_KEY, else none")
    net.add_argument("--cors-origin", action="append", default=[], metavar="ORIGIN",
                     help="let web pages from ORIGIN call the API (repeatable; '*' for any); default: none")
    net.add_argument("-np", "--parallel", type=int, default=4,
                     help="generations at once, stepped together (default: %(default)s)")
    net.add_argument("--queue", type=int, default=64,
                     help="requests that may wait for a generation slot; more get 503 (default: %(default)s)")
    lim = p.add_argument_group("limits")
    lim.add_argument("--max-body", type=int, default=32 * MiB, help="request body bytes (default: %(default)s)")
    lim.add_argument("--max-tokens", type=int, default=0,
                     help="max_tokens a request may ask for, and the limit of one that names none (text "
                          "completions: 16) (default: the context size)")
    lim.add_argument("--max-image-pixels", type=int, default=4096 * 4096,
                     help="pixels of an image (default: %(default)s)")
    lim.add_argument("--max-audio-seconds", type=float, default=600.0,
                     help="seconds of an audio input (default: %(default)s)")
    lim.add_argument("--allow-remote-media", action="store_true",
                     help="fetch http(s) image URLs in requests (off: only data URLs are accepted)")
    p.add_argument("--log-level", default="info", choices=["debug", "info", "warning", "error"])
    return p


def check(args: argparse.Namespace, p: argparse.ArgumentParser) -> None:
    if args.parallel < 1:
        p.error("--parallel must be at least 1")
    if args.queue < 0:
        p.error("--queue must be 0 or more")
    if args.max_body < 1:
        p.error("--max-body must be positive")
    if args.model and not os.path.isfile(args.model):
        p.error(f"--model {args.model}: no such file")
    for name in ("mmproj", "audio_decoder", "audio_tokenizer"):
        path = getattr(args, name)
        if path and not os.path.isfile(path):
            p.error(f"--{name.replace('_', '-')} {path}: no such file")
    if args.bundle and (args.mmproj or args.audio_decoder or args.audio_tokenizer):
        p.error("--bundle names its own companion files: --mmproj / --audio-decoder / --audio-tokenizer go with --model")
    check_speculation(args, p)


def check_speculation(args: argparse.Namespace, p: argparse.ArgumentParser) -> None:
    if args.model_draft and args.bundle:
        p.error("--model-draft goes with --model (a bundle names no draft model)")
    if args.model_draft and not os.path.isfile(args.model_draft):
        p.error(f"--model-draft {args.model_draft}: no such file")
    if args.spec_type is None:
        args.spec_type = "draft" if args.model_draft else "none"
    drafter = DRAFTERS[args.spec_type]
    if drafter == "draft_model" and not args.model_draft:
        p.error(f"--spec-type {args.spec_type} needs a draft model (--model-draft FILE)")
    if drafter != "draft_model" and args.model_draft:
        p.error(f"--model-draft is loaded to draft, but --spec-type {args.spec_type} would not use it")
    if args.spec_draft_n_max is not None:
        if not 1 <= args.spec_draft_n_max <= MAX_DRAFT_TOKENS:
            p.error(f"--spec-draft-n-max must be 1..{MAX_DRAFT_TOKENS}, got {args.spec_draft_n_max}")
        if args.spec_type == "none":
            p.error("--spec-draft-n-max needs speculative decoding (--spec-type ngram, or --model-draft FILE)")


def main(argv: Optional[List[str]] = None) -> int:
    p = parser()
    args = p.parse_args(argv)
    check(args, p)
    try:
        import uvicorn

        from .app import ServerSettings, create_app
        from .engine import Engine, ModelSettings, Speculation
        from .media import MediaLimits
    except ImportError as e:
        print(f"leap-server needs the server extra: pip install \"libleap[server]\" ({e})", file=sys.stderr)
        return 2
    logging.basicConfig(level=getattr(logging, args.log_level.upper()), stream=sys.stderr,
                        format="%(asctime)s %(levelname)s %(message)s")
    engine = Engine(ModelSettings(model=args.model, bundle=args.bundle, mmproj=args.mmproj,
                                  audio_decoder=args.audio_decoder, audio_tokenizer=args.audio_tokenizer,
                                  draft_model=args.model_draft,
                                  speculation=Speculation(DRAFTERS[args.spec_type], args.spec_draft_n_max),
                                  alias=args.alias, threads=args.threads, ctx_size=args.ctx_size,
                                  cache_dir=args.cache_dir, parallel=args.parallel, queue=args.queue,
                                  progress=sys.stderr.isatty() or bool(args.bundle)))
    settings = ServerSettings(api_key=args.api_key or None, max_body=args.max_body, max_tokens=args.max_tokens,
                              cors_origins=args.cors_origin,
                              media=MediaLimits(max_image_pixels=args.max_image_pixels,
                                                max_audio_seconds=args.max_audio_seconds,
                                                max_media_bytes=args.max_body,
                                                allow_remote=args.allow_remote_media))
    server: Optional[uvicorn.Server] = None

    def exit_after_failed_load() -> None:
        # A supervisor (or the app that started this process) sees the exit status; serving 503 forever
        # would hide the failure.
        if server is not None:
            server.should_exit = True

    app = create_app(engine, settings, on_load_failed=exit_after_failed_load)
    server = uvicorn.Server(uvicorn.Config(app, host=args.host, port=args.port, log_level=args.log_level,
                                           access_log=False, timeout_graceful_shutdown=5))
    server.run()
    if engine.state == "failed":
        print(f"leap-server: cannot load the model: {engine.error}", file=sys.stderr)
        return 1
    return 0
