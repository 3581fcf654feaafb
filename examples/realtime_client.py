#!/usr/bin/env python3
"""A voice client for leap-server's /v1/realtime: sends a WAV, prints the spoken answer's transcript as it
streams, writes the answer to a WAV (24 kHz mono PCM16).

    leap-server --model LFM2.5-Audio-1.5B-Q8_0.gguf      # its mmproj, vocoder and tokenizer next to it
    python3 examples/realtime_client.py question.wav answer.wav

The input is a mono 16-bit WAV at 16 or 24 kHz (the rates a session takes; convert others first, e.g.
``ffmpeg -i in.mp3 -ac 1 -ar 16000 in.wav``). Needs the `websockets` package (pip install websockets).
The same session is what the openai package's ``client.realtime.connect()`` opens; this client uses the
wire events directly so that it shows them."""
import argparse
import base64
import json
import sys
import wave

from websockets.sync.client import connect


def read_wav(path):
    with wave.open(path) as w:
        if w.getnchannels() != 1 or w.getsampwidth() != 2 or w.getframerate() not in (16000, 24000):
            sys.exit(f"{path}: need mono 16-bit PCM at 16000 or 24000 Hz, got {w.getnchannels()} channels, "
                     f"{8 * w.getsampwidth()} bits, {w.getframerate()} Hz")
        return w.readframes(w.getnframes()), w.getframerate()


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("input", help="the question: a mono 16-bit WAV at 16 or 24 kHz")
    p.add_argument("output", help="where to write the answer (24 kHz mono WAV)")
    p.add_argument("--url", default="ws://127.0.0.1:8080/v1/realtime", help="the server's realtime URL")
    p.add_argument("--api-key", help="the server's --api-key, if it has one")
    p.add_argument("--instructions", help="a system prompt (default: the model's speech-to-speech prompt)")
    p.add_argument("--greedy", action="store_true",
                   help="greedy text and audio codes (this server's session extensions), for repeatable answers")
    args = p.parse_args()

    pcm, rate = read_wav(args.input)
    headers = {"Authorization": f"Bearer {args.api_key}"} if args.api_key else {}
    session = {"type": "realtime", "output_modalities": ["audio"],
               "audio": {"input": {"format": {"type": "audio/pcm", "rate": rate}, "turn_detection": None}}}
    if args.instructions:
        session["instructions"] = args.instructions
    if args.greedy:
        session.update(temperature=0, audio_temperature=0)
    answer = bytearray()
    with connect(args.url, additional_headers=headers, max_size=None) as ws:
        def send(event):
            ws.send(json.dumps(event))

        send({"type": "session.update", "session": session})
        step = rate // 10 * 2  # 100 ms of PCM16 per append, as a microphone would send it
        for i in range(0, len(pcm), step):
            send({"type": "input_audio_buffer.append", "audio": base64.b64encode(pcm[i:i + step]).decode()})
        send({"type": "input_audio_buffer.commit"})
        send({"type": "response.create"})
        for message in ws:
            event = json.loads(message)
            kind = event["type"]
            if kind == "error":
                sys.exit(f"error: {event['error']['message']}")
            elif kind == "response.output_audio.delta":
                answer += base64.b64decode(event["delta"])
            elif kind == "response.output_audio_transcript.delta":
                print(event["delta"], end="", flush=True)
            elif kind == "response.done":
                usage = event["response"]["usage"]
                print(f"\n[{event['response']['status']}; {len(answer) / 48000:.2f} s of audio, "
                      f"{usage['output_tokens']} tokens]", file=sys.stderr)
                break
    with wave.open(args.output, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(24000)
        w.writeframes(bytes(answer))


if __name__ == "__main__":
    main()
