"""leap-server as a real subprocess on loopback for the server tests: a free port, ready when /health says
ok, stopped with SIGTERM (which releases the model and flushes its prompt cache) at the end."""
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx

BINDINGS = Path(__file__).resolve().parents[1]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    def __init__(self, *args, log_path=None):
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.log_path = log_path
        env = dict(os.environ)
        env["PYTHONPATH"] = str(BINDINGS) + os.pathsep + env.get("PYTHONPATH", "")
        self.log = open(log_path, "w+") if log_path else subprocess.DEVNULL
        self.proc = subprocess.Popen([sys.executable, "-m", "leap.server", "--port", str(self.port), *map(str, args)],
                                     env=env, stdout=self.log, stderr=subprocess.STDOUT)

    def wait_ready(self, timeout=60.0):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"leap-server exited with {self.proc.returncode}: {self.output()}")
            try:
                r = httpx.get(self.base + "/health", timeout=2)
                if r.status_code == 200:
                    return self
            except httpx.TransportError:
                pass
            time.sleep(0.05)
        raise RuntimeError(f"leap-server not ready after {timeout} s: {self.output()}")

    def output(self):
        if not self.log_path:
            return ""
        self.log.flush()
        return Path(self.log_path).read_text()

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self.log is not subprocess.DEVNULL:
            self.log.close()

    def health(self):
        return httpx.get(self.base + "/health", timeout=5).json()

    def client(self, **kw):
        import openai

        return openai.OpenAI(base_url=self.base + "/v1", api_key=kw.pop("api_key", "unused"), max_retries=0, **kw)


def start(*args, log_path=None, timeout=60.0):
    s = Server(*args, log_path=log_path)
    try:
        return s.wait_ready(timeout)
    except BaseException:
        s.stop()
        raise
