#!/usr/bin/env python3
"""Serving benchmark: streaming clients against leap-server and its peers on the same GGUF and threads.

For each server (leap-server; llama.cpp's llama-server with -np set to the most clients; llama-cpp-python's
llama_cpp.server), started here on a loopback port and stopped afterwards:

  * 1, 4 and 8 clients at once, each streaming one chat completion of --max-tokens tokens (greedy, each
    client its own prompt): aggregate completion tokens/s over the wall time of the round, and time to
    first token (first content delta) p50 / p95;
  * a 5-turn chat whose system prompt is a long document (--document-words), each turn sent with the
    whole history as a stateless client does: time to first token per turn (prefix reuse keeps the later
    turns short).

The same load through the in-process Python API (one thread per conversation, the library steps them
together) gives the server's own cost, in time and, as a figure that other load on the machine disturbs
less, in CPU time: the leap-server process's CPU seconds per completion token over --cpu-requests
sequential requests against the in-process API's (the process's CPU time, client loop included).
Prints one line per figure and the ratios; it asserts nothing.

With --speculative, speculative decoding instead: leap-server without and with --spec-type ngram (prompt
lookup) against llama-server without and with --spec-type ngram-simple, all four started at once, on the
copy-heavy prompts of scripts/speculative_prompts.json (answers that repeat given text), greedy. Each prompt
goes to the four servers in turn, one request at a time (so that load from elsewhere falls on all of them
alike): decoding tokens/s (after the first token) and the drafts the servers report in ``timings``; then
all the prompts at once to each server (aggregate tokens/s). Prints the ratios, and how many answers with
speculation are the ones without. --spec-endpoint completions sends them as text completions
(/v1/completions) of the prompts rendered with the model's chat template (as token ids) instead.

Usage:
  python3 scripts/bench_server.py MODEL.gguf [--threads 2] [--clients 1,4,8] [--max-tokens 64]
      [--llama-server PATH] [--peer-python PATH]   (a Python with llama_cpp[server] installed)
      [--only leap,inprocess,llama-server,llama-cpp-python]
  python3 scripts/bench_server.py MODEL.gguf --speculative [--max-tokens 128] [--spec-prompts 17] [--llama-server PATH]
      [--spec-endpoint chat|completions]
  --llama-server defaults to $LEAP_LLAMA_SERVER, --peer-python to $LEAP_LLAMA_PYTHON; a peer without either
  is left out.
"""
from __future__ import annotations

import argparse
import functools
import json
import os
import shlex
import socket
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "bindings" / "python"))

# The name requests give: the model file's stem, which every server here accepts (set in main).
MODEL_NAME = ""
TOPICS = ["the sea", "a lighthouse", "winter in a city", "a long train journey", "an old library", "a garden",
          "the first snow", "a market at dawn", "a mountain village", "a river in spring"]


def prompt_for(i: int) -> str:
    return f"Write a long, detailed story about {TOPICS[i % len(TOPICS)]}. Do not stop early."


def document(words: int) -> str:
    """A long system prompt that is the same on every turn (the prefix a server can reuse)."""
    base = ("The archive keeps records of ships, harbours, weather and trade. Each entry names a vessel, "
            "its cargo, its port of origin and the date it arrived. ").split()
    return "You answer questions about this archive.\n\n" + " ".join(base[i % len(base)] for i in range(words))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Server:
    """A server process on loopback, ready once `ready_path` answers 200."""

    def __init__(self, name: str, argv: List[str], port: int, ready_path: str, env: Optional[Dict[str, str]] = None):
        self.name, self.port = name, port
        self.log = open(f"/tmp/bench_server_{name}.log", "wb")
        self.proc = subprocess.Popen(argv, stdout=self.log, stderr=subprocess.STDOUT, env=env)
        import httpx

        deadline = time.monotonic() + 600
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"{name} exited with {self.proc.returncode}; see {self.log.name}")
            try:
                if httpx.get(f"http://127.0.0.1:{port}{ready_path}", timeout=2).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.5)
        raise RuntimeError(f"{name} did not become ready; see {self.log.name}")

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        self.log.close()


# One streamed request: (time to first content, completion tokens, end time).
Result = Tuple[float, int, float]


_http_lock = threading.Lock()
_http: Any = None


def http_client() -> Any:
    """One HTTP client for every request, as an application keeps one (the openai package does): making a
    client (its TLS context) costs tens of milliseconds of CPU that belong to no server. A new connection
    per request all the same (cheap on loopback): llama-server closes its connections after a few requests,
    and a request sent on one it is closing would fail."""
    import httpx

    global _http
    with _http_lock:
        if _http is None:
            _http = httpx.Client(timeout=600, limits=httpx.Limits(max_connections=64, max_keepalive_connections=0))
        return _http


def stream_chat(base_url: str, messages: List[Dict[str, str]], max_tokens: int) -> Result:
    """One streamed chat completion over raw HTTP (the same client code for every server)."""
    return stream_chat_answer(base_url, messages, max_tokens)[0]


def stream_chat_answer(base_url: str, messages: List[Dict[str, str]],
                       max_tokens: int) -> Tuple[Result, str, Dict[str, Any]]:
    """:func:`stream_chat`, and the answer's text and the ``timings`` its chunks carried (llama-server's)."""
    body = {"model": MODEL_NAME, "messages": messages, "max_tokens": max_tokens, "temperature": 0, "stream": True,
            "stream_options": {"include_usage": True}}
    return stream_answer(base_url + "/chat/completions", body, lambda choice: (choice.get("delta") or {}).get("content"))


def stream_completion_answer(base_url: str, prompt: List[int], max_tokens: int) -> Tuple[Result, str, Dict[str, Any]]:
    """:func:`stream_chat_answer` for a text completion (/v1/completions) of the token ids ``prompt``."""
    body = {"model": MODEL_NAME, "prompt": prompt, "max_tokens": max_tokens, "temperature": 0, "stream": True,
            "stream_options": {"include_usage": True}}
    return stream_answer(base_url + "/completions", body, lambda choice: choice.get("text"))


def stream_answer(url: str, body: Dict[str, Any],
                  text_of: Callable[[Dict[str, Any]], Optional[str]]) -> Tuple[Result, str, Dict[str, Any]]:
    """One streamed request: (time to the first text, completion tokens, end), the text (``text_of`` a choice
    of a chunk) and the last ``timings`` the chunks carried."""
    start = time.monotonic()
    first, pieces, usage, finished = 0.0, 0, None, False
    text: List[str] = []
    timings: Dict[str, Any] = {}
    with http_client().stream("POST", url, json=body) as r:
        r.raise_for_status()
        for line in r.iter_lines():
            if not line.startswith("data: ") or line == "data: [DONE]":
                continue
            chunk = json.loads(line[6:])
            if chunk.get("usage"):
                usage = chunk["usage"]
            timings = chunk.get("timings") or timings
            for choice in chunk.get("choices") or []:
                finished = finished or bool(choice.get("finish_reason"))
                content = text_of(choice)
                if content:
                    text.append(content)
                    pieces += 1
                    if not first:
                        first = time.monotonic() - start
    if not finished:
        raise RuntimeError("the stream ended without a finish_reason (the server cut it short)")
    tokens = usage["completion_tokens"] if usage else pieces
    return (first, tokens, time.monotonic()), "".join(text), timings


def in_process_chat(model: object, messages: List[Dict[str, str]], max_tokens: int) -> Result:
    """The same request through the Python API: a conversation from the history, then its response."""
    import leap

    start = time.monotonic()
    history = [leap.ChatMessage(m["role"], m["content"]) for m in messages[:-1]]
    conv = model.create_conversation_from_history(history)  # type: ignore[attr-defined]
    first, tokens = 0.0, 0
    for e in conv.generate_response(messages[-1]["content"], leap.GenerationOptions(temperature=0, max_tokens=max_tokens)):
        if isinstance(e, leap.Chunk) and not first:
            first = time.monotonic() - start
        if isinstance(e, leap.Complete):
            tokens = e.stats.completion_tokens
    return first, tokens, time.monotonic()


def percentile(xs: Sequence[float], q: float) -> float:
    s = sorted(xs)
    return s[min(len(s) - 1, int(round(q * (len(s) - 1))))]


def round_of(send: Callable[[List[Dict[str, str]], int], Result], clients: int, max_tokens: int,
             prompt: Callable[[int], str] = prompt_for) -> Dict[str, float]:
    """`clients` requests at once (client i sends ``prompt(i)``); aggregate tokens/s over the round and TTFT
    percentiles."""
    results: List[Optional[Result]] = [None] * clients
    errors: List[str] = []

    def run(i: int) -> None:
        try:
            results[i] = send([{"role": "user", "content": prompt(i)}], max_tokens)
        except Exception as e:  # a refused or broken request counts as failed, and says why
            errors.append(f"{type(e).__name__}: {e}")

    threads = [threading.Thread(target=run, args=(i,)) for i in range(clients)]
    start = time.monotonic()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    done = [r for r in results if r is not None]
    for e in sorted(set(errors)):
        print(f"  failed request: {e}", flush=True)
    if not done:
        return {"tok_s": 0.0, "ttft_p50": 0.0, "ttft_p95": 0.0, "tokens": 0.0, "failed": float(len(errors))}
    wall = max(r[2] for r in done) - start
    ttfts = [r[0] for r in done]
    return {"tok_s": sum(r[1] for r in done) / wall, "ttft_p50": percentile(ttfts, 0.5),
            "ttft_p95": percentile(ttfts, 0.95), "tokens": float(sum(r[1] for r in done)),
            "failed": float(len(errors))}


def chat_turns(send: Callable[[List[Dict[str, str]], int], Result], doc_words: int, turns: int) -> List[float]:
    """TTFT of each turn of one chat, the whole history sent every time."""
    messages = [{"role": "system", "content": document(doc_words)}]
    out = []
    for t in range(turns):
        messages.append({"role": "user", "content": f"Question {t + 1}: which ships carried grain? Answer briefly."})
        first, _, _ = send(messages, 16)
        out.append(first)
        messages.append({"role": "assistant", "content": f"Answer {t + 1}."})
    return out


def measure(name: str, send: Callable[[List[Dict[str, str]], int], Result], a: argparse.Namespace,
            table: Dict[str, Dict[str, object]]) -> None:
    send([{"role": "user", "content": "Hello"}], 4)  # warm-up: page in the weights
    row: Dict[str, object] = {}
    for n in a.clients:
        r = round_of(send, n, a.max_tokens)
        row[f"c{n}"] = r
        print(f"{name:18s} clients={n}: {r['tok_s']:7.1f} tok/s aggregate ({int(r['tokens'])} tokens), "
              f"TTFT p50 {r['ttft_p50'] * 1000:6.0f} ms p95 {r['ttft_p95'] * 1000:6.0f} ms"
              + (f", {int(r['failed'])} of {n} requests failed" if r["failed"] else ""), flush=True)
    turns = chat_turns(send, a.document_words, a.turns)
    row["turns"] = turns
    print(f"{name:18s} {a.turns}-turn chat TTFT: " + " ".join(f"{t * 1000:.0f}" for t in turns)
          + f" ms (turn {a.turns} / turn 1 = {turns[-1] / turns[0]:.2f})", flush=True)
    table[name] = row


def peer_chat_format(model: str) -> Optional[str]:
    """llama-cpp-python's chat format for a file whose template it cannot use itself (Gemma's)."""
    import leap

    with leap.GGUFFile(model) as f:
        arch = str(f.value("general.architecture"))
    return "gemma" if arch.startswith("gemma") else None


def process_cpu(pid: int) -> float:
    """CPU seconds (user + system, all threads) of process ``pid`` so far."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def cpu_per_token(name: str, send: Callable[[List[Dict[str, str]], int], Result], cpu: Callable[[], float],
                  a: argparse.Namespace, table: Dict[str, Dict[str, object]]) -> None:
    """Median CPU seconds per completion token of one request at a time (the same prompt each time)."""
    costs = []
    for _ in range(a.cpu_requests):
        before = cpu()
        _, tokens, _ = send([{"role": "user", "content": prompt_for(0)}], a.max_tokens)
        costs.append((cpu() - before) / max(1, tokens))
    table.setdefault(name, {})["cpu"] = statistics.median(costs)
    print(f"{name:18s} CPU per token, 1 client: {statistics.median(costs) * 1000:.2f} ms "
          f"(median of {a.cpu_requests})", flush=True)


def speculative(a: argparse.Namespace, env: Dict[str, str]) -> None:
    """--speculative: see the module's doc."""
    with open(REPO / "scripts" / "speculative_prompts.json") as f:
        prompts: List[str] = json.load(f)["copy"][:a.spec_prompts]
    n = len(prompts)
    if a.spec_endpoint == "completions":
        # The same requests as text completions: each prompt rendered with the model's chat template here and
        # sent as token ids (the servers would read its special tokens' text differently).
        import leap

        model = leap.load_model(a.model, context_size=256)
        token_prompts = [model.tokenize(model.apply_chat_template([{"role": "user", "content": p}]),
                                        add_special=False, parse_special=True) for p in prompts]
        model.close()

    def answer(base_url: str, prompt: str, max_tokens: int) -> Tuple[Result, str, Dict[str, Any]]:
        if a.spec_endpoint == "completions":
            return stream_completion_answer(base_url, token_prompts[prompts.index(prompt)], max_tokens)
        return stream_chat_answer(base_url, [{"role": "user", "content": prompt}], max_tokens)
    configs = [("leap-server", []), ("leap-server ngram", ["--spec-type", "ngram"])]
    if a.llama_server:
        configs += [("llama-server", []), ("llama-server ngram", ["--spec-type", "ngram-simple"])]
    servers: Dict[str, Server] = {}
    try:
        for name, flags in configs:
            port = free_port()
            if name.startswith("leap"):
                argv = [sys.executable, "-m", "leap.server", "--model", a.model, "--threads", str(a.threads),
                        "--parallel", str(n), "--ctx-size", str(a.ctx_per_client), "--port", str(port),
                        "--log-level", "warning", *flags]
                servers[name] = Server(name.replace(" ", "-"), argv, port, "/health", env=env)
            else:
                argv = [a.llama_server, "-m", a.model, "-t", str(a.threads), "-np", str(n),
                        "-c", str(a.ctx_per_client * n), "--host", "127.0.0.1", "--port", str(port), *flags,
                        *shlex.split(a.llama_server_args)]
                servers[name] = Server(name.replace(" ", "-"), argv, port, "/health")
        for s in servers.values():
            stream_chat(s.base_url, [{"role": "user", "content": "Hello"}], 4)  # warm-up: page in the weights
        # One request at a time, each prompt to every server in turn.
        decode_seconds = {name: 0.0 for name in servers}
        decoded = {name: 0 for name in servers}
        drafted = {name: [0, 0] for name in servers}
        texts: Dict[str, List[str]] = {name: [] for name in servers}
        for p in prompts:
            for name, s in servers.items():
                start = time.monotonic()
                (first, tokens, end), text, timings = answer(s.base_url, p, a.max_tokens)
                decode_seconds[name] += end - (start + first)
                decoded[name] += tokens - 1  # the tokens after the first
                texts[name].append(text)
                drafted[name][0] += int(timings.get("draft_n", 0))
                drafted[name][1] += int(timings.get("draft_n_accepted", 0))
        decode = {name: decoded[name] / max(decode_seconds[name], 1e-9) for name in servers}
        for name in servers:
            d, acc = drafted[name]
            print(f"{name:20s} 1 client: {decode[name]:7.1f} tok/s decoding ({decoded[name]} tokens after the first "
                  f"of {n} answers), drafted {d}, accepted {acc}" + (f" ({acc / d:.0%})" if d else ""), flush=True)
        # All the prompts at once.
        together: Dict[str, float] = {}
        for name, s in servers.items():
            def send(messages: List[Dict[str, str]], max_tokens: int, url: str = s.base_url) -> Result:
                return answer(url, messages[0]["content"], max_tokens)[0]

            r = round_of(send, n, a.max_tokens, lambda i: prompts[i])
            together[name] = r["tok_s"]
            print(f"{name:20s} {n} clients: {together[name]:7.1f} tok/s aggregate"
                  + (f", {int(r['failed'])} requests failed" if r["failed"] else ""), flush=True)
        print(f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
        for base in ("leap-server", "llama-server"):
            if base in servers:
                same = sum(x == y for x, y in zip(texts[base], texts[base + " ngram"]))
                print(f"{base} ngram / without: {decode[base + ' ngram'] / decode[base]:.2f}x decoding 1 client, "
                      f"{together[base + ' ngram'] / together[base]:.2f}x aggregate {n} clients; "
                      f"{same} of {n} answers the same")
        if "llama-server" in servers:
            for name in ("", " ngram"):
                print(f"leap-server{name} / llama-server{name}: "
                      f"{decode['leap-server' + name] / decode['llama-server' + name]:.2f}x decoding 1 client, "
                      f"{together['leap-server' + name] / together['llama-server' + name]:.2f}x aggregate {n} clients")
    finally:
        for s in servers.values():
            s.stop()


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("model")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--clients", default="1,4,8")
    p.add_argument("--max-tokens", type=int, default=64)
    p.add_argument("--ctx-per-client", type=int, default=2048)
    p.add_argument("--document-words", type=int, default=1200)
    p.add_argument("--turns", type=int, default=5)
    p.add_argument("--cpu-requests", type=int, default=8)
    p.add_argument("--llama-server", default=os.environ.get("LEAP_LLAMA_SERVER"),
                   help="llama.cpp's llama-server binary (default $LEAP_LLAMA_SERVER)")
    p.add_argument("--llama-server-args", default="",
                   help="more llama-server options, e.g. '--poll 0' (no busy-waiting threads) on a busy machine")
    p.add_argument("--peer-python", default=os.environ.get("LEAP_LLAMA_PYTHON"),
                   help="a Python interpreter with llama-cpp-python[server] installed (default $LEAP_LLAMA_PYTHON)")
    p.add_argument("--only", default="leap,inprocess,llama-server,llama-cpp-python")
    p.add_argument("--speculative", action="store_true",
                   help="compare speculative decoding (prompt lookup) of leap-server and llama-server instead")
    p.add_argument("--spec-endpoint", choices=["chat", "completions"], default="chat",
                   help="--speculative's requests: chat completions, or text completions (/v1/completions) of "
                        "the prompts rendered with the model's chat template (default: %(default)s)")
    p.add_argument("--spec-prompts", type=int, default=17,
                   help="how many of the copy-heavy prompts --speculative sends (default: %(default)s, all)")
    p.add_argument("--peer-chat-format", default=None,
                   help="llama-cpp-python's --chat_format (default: gemma for Gemma files, whose template it "
                        "does not recognise: it falls back to llama-2's format and the model ends at once)")
    a = p.parse_args()
    global MODEL_NAME
    MODEL_NAME = Path(a.model).stem
    a.clients = [int(x) for x in a.clients.split(",")]
    only = set(a.only.split(","))
    most = max(a.clients)
    table: Dict[str, Dict[str, object]] = {}
    env = dict(os.environ, PYTHONPATH=str(REPO / "bindings" / "python"))
    if a.speculative:
        speculative(a, env)
        return

    if "leap" in only:
        port = free_port()
        s = Server("leap-server", [sys.executable, "-m", "leap.server", "--model", a.model, "--threads", str(a.threads),
                                   "--parallel", str(most), "--ctx-size", str(a.ctx_per_client), "--port", str(port),
                                   "--log-level", "warning"], port, "/health", env=env)
        try:
            measure("leap-server", lambda m, n: stream_chat(s.base_url, m, n), a, table)
            cpu_per_token("leap-server", lambda m, n: stream_chat(s.base_url, m, n), lambda: process_cpu(s.proc.pid),
                          a, table)
        finally:
            s.stop()
    if "inprocess" in only:
        import leap

        model = leap.load_model(a.model, context_size=a.ctx_per_client, cpu_threads=a.threads,
                                cache=leap.CacheOptions(disk=False))
        measure("in-process", lambda m, n: in_process_chat(model, m, n), a, table)
        cpu_per_token("in-process", lambda m, n: in_process_chat(model, m, n), time.process_time, a, table)
        model.close()
    if "llama-server" in only and a.llama_server:
        port = free_port()
        s = Server("llama-server", [a.llama_server, "-m", a.model, "-t", str(a.threads), "-np", str(most),
                                    "-c", str(a.ctx_per_client * most), "--host", "127.0.0.1", "--port", str(port),
                                    *shlex.split(a.llama_server_args)],
                   port, "/health")
        try:
            measure("llama-server", lambda m, n: stream_chat(s.base_url, m, n), a, table)
        finally:
            s.stop()
    if "llama-cpp-python" in only and a.peer_python:
        port = free_port()
        chat_format = a.peer_chat_format or peer_chat_format(a.model)
        s = Server("llama-cpp-python", [a.peer_python, "-m", "llama_cpp.server", "--model", a.model,
                                        "--n_threads", str(a.threads), "--n_ctx", str(a.ctx_per_client),
                                        # Queue concurrent requests (its default cuts a running stream short
                                        # when the next request arrives).
                                        "--interrupt_requests", "False",
                                        *(["--chat_format", chat_format] if chat_format else []),
                                        "--host", "127.0.0.1", "--port", str(port)], port, "/v1/models")
        try:
            measure("llama-cpp-python", lambda m, n: stream_chat(s.base_url, m, n), a, table)
        finally:
            s.stop()

    def tok_s(name: str, n: int) -> Optional[float]:
        row = table.get(name)
        return row[f"c{n}"]["tok_s"] if row and f"c{n}" in row else None  # type: ignore[index]

    print()
    cpu = {name: row.get("cpu") for name, row in table.items()}
    if cpu.get("leap-server") and cpu.get("in-process"):
        print(f"CPU per token, 1 client: leap-server / in-process = {cpu['leap-server'] / cpu['in-process']:.3f}x")
    for n in a.clients:
        ours = tok_s("leap-server", n)
        if ours is None:
            continue
        for peer in ("in-process", "llama-server", "llama-cpp-python"):
            theirs = tok_s(peer, n)
            if theirs:
                print(f"clients={n}: leap-server / {peer} = {ours / theirs:.2f}x aggregate tok/s")


if __name__ == "__main__":
    main()
