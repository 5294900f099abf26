"""The app's caps, and the one place that words the messages a person sees when an input hits them.

What is capped: characters and tokens of a sentence, generated tokens, the size of a model the page may
load or build, the memory all loaded models may take together, the memory of the requests running at once and of
the results kept for the sessions' tabs, the positional tab's table, the length of a typed model name. The Python API
has its own, looser limits (explorer.checkpoints).
"""

from __future__ import annotations

from .errors import AppError

MAX_CHARS = 20_000  # characters of one input sentence (1,024 tokens of English are ~5,000)
MAX_TOKENS = 1024  # tokens of one input by default (`--max-tokens`); the model's own context may be shorter
MAX_NEW_TOKENS = 40  # generated tokens
DEFAULT_CONTINUATION = 8  # tokens a language model continues a sentence with, unless the person asks for more
MAX_LOAD_PARAMETERS = 600_000_000  # a model the page may load (Qwen2.5-0.5B: 494M; MiniLM: 22.7M)
MAX_BUILD_PARAMETERS = 60_000_000  # a fresh model the page may build (the Annotated base model: ~44M)
MAX_BUILD_LEN = 512  # position table of a built model
MAX_NAME_CHARS = 300  # a typed model name
DEFAULT_MODEL_MEMORY = 4 * 1024**3  # bytes all loaded models may take together (a free CPU Space has 16 GB)
DEFAULT_REQUEST_MEMORY = 3 * 1024**3  # bytes the requests running at once may take together (app.run.request_memory)
DEFAULT_KEPT_MEMORY = 1024**3  # bytes the Runs' results kept for their tabs take, all sessions together (kept)
DEFAULT_DOWNLOAD_DISK = 256 * 1024**2  # bytes the Download's files take on disk, all sessions together
# Gradio's cache: every hour, the files the app handed Gradio that are over an hour old go, and all of them when
# the server stops (a Download's file is fetched at once; app.export.download_files bounds them by bytes meanwhile)
DELETE_CACHE = (3600, 3600)
POSITIONAL_D_MODEL = (2, 1024)  # positional tab: d_model range
POSITIONAL_LENGTH = (2, 512)  # positional tab: number of positions


def chars_notice(sentence: int, n_chars: int) -> str:
    return f"Sentence {sentence} has {n_chars:,} characters; only the first {MAX_CHARS:,} are used."


def tokens_notice(sentence: int, n_tokens: int, limit: int, why: str) -> str:
    return (f"Sentence {sentence} has {n_tokens:,} tokens; only the first {limit:,} are used ({why}), so the rest was "
            f"cut off.")


def check_model_name(name: str) -> str:
    """The stripped name, or AppError when it is empty or too long."""
    name = (name or "").strip()
    if not name:
        raise AppError("Choose a shipped checkpoint or type a Hugging Face Hub id / local folder.")
    if len(name) > MAX_NAME_CHARS:
        raise AppError(f"That model name is too long (at most {MAX_NAME_CHARS} characters).")
    return name


def build_size_message(count: int) -> str:
    return (f"This configuration has {count:,} parameters; the app builds models of at most "
            f"{MAX_BUILD_PARAMETERS:,}. Use fewer layers or a smaller d_model / d_ff.")


def format_bytes(n: float) -> str:
    """1536 -> '1.5 kB'; binary steps, one decimal."""
    for unit in ("bytes", "kB", "MB", "GB"):
        if abs(n) < 1024 or unit == "GB":
            return f"{n:,.0f} {unit}" if unit == "bytes" else f"{n:,.1f} {unit}"
        n /= 1024
    raise AssertionError("unreachable")


def positional_args(d_model: object, length: object, base: object) -> tuple[int, int, float]:
    """The positional tab's numbers, checked against their ranges (AppError naming the one out of range)."""
    try:
        d, n, b = int(d_model), int(length), float(base)  # type: ignore[arg-type]
    except (TypeError, ValueError) as err:
        raise AppError(f"d_model, length and base must be numbers: {err}") from err
    for name, value, (low, high) in (("d_model", d, POSITIONAL_D_MODEL), ("length", n, POSITIONAL_LENGTH)):
        if not low <= value <= high:
            raise AppError(f"{name} must be between {low} and {high:,}")
    if not b > 1:
        raise AppError("base must be greater than 1")
    return d, n, b
