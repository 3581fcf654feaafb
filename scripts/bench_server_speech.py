#!/usr/bin/env python3
"""Speech latency through leap-server: time to the first audio bytes of a streamed answer, against the time
the library takes to make the first audio frame of the same generation in process.

Three measures, each repeated (--runs) with the same seed and greedy audio codes so that every run makes
the same frames (the text is sampled at --temperature with the first seed, from --seed on, for which the
model starts to speak within --max-tokens: random-weight test models rarely do so greedily):

  * in process: ``Conversation.generate_response``, time to the first ``leap.AudioSample`` (the library's
    first frame), with the TTS system prompt (text, then audio: what /v1/audio/speech asks for) and with
    the interleaved one (6 text tokens, then audio frames: what chat with audio out asks for by default);
  * ``POST /v1/audio/speech`` (``response_format`` pcm, the body streamed): time to its first bytes, which
    are samples (raw PCM has no header);
  * ``POST /v1/chat/completions`` with ``modalities: ["text", "audio"]``, ``stream``, no system prompt (so
    the interleaved one): time to the first ``delta.audio.data``.

Prints p50 / p95 of each and what the server adds (server p50 - in-process p50 of the same generation);
asserts nothing.

Usage:
  python3 scripts/bench_server_speech.py MODEL.gguf --audio-decoder VOCODER.gguf --audio-tokenizer TOK.gguf
      [--mmproj MMPROJ.gguf] [--threads 2] [--runs 10] [--text "..."]
"""
from __future__ import annotations

import argparse
import base64
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Callable, List, Optional, Tuple

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "bindings" / "python"))
sys.path.insert(0, str(REPO / "bindings" / "python" / "tests"))

import httpx  # noqa: E402

import leap  # noqa: E402
from server_process import start  # noqa: E402

VOICE_PROMPT = "Perform TTS. Use the US female voice."
INTERLEAVED_PROMPT = "Respond with interleaved text and audio."


def quantiles(xs: List[float]) -> str:
    xs = sorted(xs)
    p95 = xs[min(len(xs) - 1, round(0.95 * (len(xs) - 1)))]
    return f"p50 {statistics.median(xs) * 1000:7.1f} ms  p95 {p95 * 1000:7.1f} ms"


def first_frame(model: leap.Model, args: argparse.Namespace, seed: int, system: str = VOICE_PROMPT) -> Optional[float]:
    """Seconds to the first audio frame of one in-process generation (None: it never spoke)."""
    conv = model.create_conversation_from_history([leap.ChatMessage(leap.Role.SYSTEM, system)])
    options = leap.GenerationOptions(temperature=args.temperature, rng_seed=seed, audio_temperature=0,
                                     max_tokens=args.max_tokens)
    t0 = time.perf_counter()
    first = None
    with conv.generate_response(args.text, options) as stream:
        for e in stream:
            if isinstance(e, leap.AudioSample) and first is None:
                first = time.perf_counter() - t0
    conv.close()
    return first


def in_process(args: argparse.Namespace) -> Tuple[int, List[float], List[float]]:
    """The seed that speaks and the in-process times to the first frame (TTS, interleaved)."""
    with leap.load_model(args.model, cpu_threads=args.threads, audio_decoder_path=args.audio_decoder,
                         audio_tokenizer_path=args.audio_tokenizer, mmproj_path=args.mmproj,
                         cache=leap.CacheOptions(disk=False)) as model:
        seed = next((s for s in range(args.seed, args.seed + 1000) if first_frame(model, args, s) is not None), None)
        if seed is None:
            sys.exit("the model does not start to speak within --max-tokens for 1000 seeds")
        tts = [t for t in (first_frame(model, args, seed) for _ in range(args.runs)) if t is not None]
        both = [t for t in (first_frame(model, args, seed, INTERLEAVED_PROMPT) for _ in range(args.runs)) if t is not None]
        return seed, tts, both


def timed(runs: int, once: Callable[[], float]) -> List[float]:
    return [t for t in (once() for _ in range(runs)) if t == t]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("model")
    ap.add_argument("--audio-decoder", required=True)
    ap.add_argument("--audio-tokenizer", required=True)
    ap.add_argument("--mmproj")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--max-tokens", type=int, default=40)
    ap.add_argument("--text", default="The quick brown fox jumps over the lazy dog.")
    ap.add_argument("--temperature", type=float, default=2.0)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()

    seed, local, local_chat = in_process(args)
    print(f"seed {seed}, text temperature {args.temperature:g}")
    print(f"in process, first audio frame, TTS:          {quantiles(local)}")
    print(f"in process, first audio frame, interleaved:  {quantiles(local_chat)}")
    extra = ["--audio-decoder", args.audio_decoder, "--audio-tokenizer", args.audio_tokenizer,
             "--threads", args.threads, "--parallel", 1, "--max-tokens", args.max_tokens]
    if args.mmproj:
        extra += ["--mmproj", args.mmproj]
    server = start("--model", args.model, *extra, timeout=300)
    try:
        client = httpx.Client(base_url=server.base, timeout=300)

        def speech() -> float:
            body = {"input": args.text, "voice": "us_female", "response_format": "pcm", "seed": seed,
                    "temperature": args.temperature, "audio_temperature": 0, "max_tokens": args.max_tokens}
            t0 = time.perf_counter()
            first = float("nan")
            with client.stream("POST", "/v1/audio/speech", json=body) as r:
                for piece in r.iter_raw():
                    if piece and first != first:
                        first = time.perf_counter() - t0
            return first

        def chat() -> float:
            body = {"messages": [{"role": "user", "content": args.text}],
                    "modalities": ["text", "audio"], "audio": {"voice": "alloy", "format": "pcm16"}, "stream": True,
                    "seed": seed, "temperature": args.temperature, "audio_temperature": 0,
                    "max_tokens": args.max_tokens}
            t0 = time.perf_counter()
            first = float("nan")
            with client.stream("POST", "/v1/chat/completions", json=body) as r:
                for line in r.iter_lines():
                    if first != first and line.startswith("data: {"):
                        choices = json.loads(line[6:]).get("choices") or [{}]
                        audio = (choices[0].get("delta") or {}).get("audio") or {}
                        if audio.get("data") and base64.b64decode(audio["data"]):
                            first = time.perf_counter() - t0
            return first

        speech()
        chat()  # warm: the prompt cache then holds the system prompt for every run, as in process
        sp, ch = timed(args.runs, speech), timed(args.runs, chat)
    finally:
        server.stop()
    print(f"/v1/audio/speech, first PCM bytes:           {quantiles(sp)}")
    print(f"/v1/chat/completions, first delta.audio:     {quantiles(ch)}")
    print(f"added by the server (p50): speech {(statistics.median(sp) - statistics.median(local)) * 1000:+.1f} ms, "
          f"chat {(statistics.median(ch) - statistics.median(local_chat)) * 1000:+.1f} ms")


if __name__ == "__main__":
    main()
