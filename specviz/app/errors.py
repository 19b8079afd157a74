"""What to tell a person about an exception: one helper for the page, the Lab, the CLI and app start-up, and the
plain words for ZeroGPU's refusals and worker failures (read from the `spaces` package, 0.51.3).

On ZeroGPU a model call can fail before it starts (the visitor's quota is short, the ask is over the maximum, no GPU
is free) or while its worker runs. `spaces` reports each as a `gr.Error` with a title and a message; this module
reads them by those two attributes, so it needs no gradio.

It lives in app/, with the hosted page that meets these errors and nearly all its users. The CLI borrows
`message_of` (so a failed command says what went wrong in the page's words); tests/test_layering.py allows cli/
this one module of app/, which imports nothing but the standard library, so the CLI still never loads gradio.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# The titles spaces 0.51.3 gives its errors (zero/client.py, zero/wrappers.py), and the worker's one fixed message.
QUOTA_EXCEEDED = "ZeroGPU quota exceeded"
ILLEGAL_DURATION = "ZeroGPU illegal duration"
PENDING_CREDITS = "ZeroGPU pending credits exceeded"
QUEUE_TIMEOUT = "ZeroGPU queue timeout"
CLIENT_ERROR = "ZeroGPU client error"
WORKER_ERROR = "ZeroGPU worker error"
WORKER_ABORTED = "GPU task aborted"  # WORKER_ERROR's message when the worker process ended without an answer
REFUSALS = (QUOTA_EXCEEDED, ILLEGAL_DURATION, PENDING_CREDITS, QUEUE_TIMEOUT, CLIENT_ERROR)  # the call never ran

# What a visitor can do without a GPU (the page's "Recorded examples" and "Room"), and where a course's copy is.
NO_GPU_NEEDED = ("meanwhile a recorded example (Recorded examples) or a room your lecturer opened (Room) needs no "
                 "GPU, and a course can run its own copy of this Space (docs/hosting.md)")
# Without signing in, a visitor's quota is counted per IP address (spaces' "IP-based quotas", and its maintainers
# in hub discussion zero-gpu-explorers/README #7): a lecture hall on one Wi-Fi shares one.
SIGN_IN = ("signing in to Hugging Face gives a larger daily quota, your own rather than one shared by everyone on "
           "this network; ")
LESS_MEMORY = "fewer new tokens, a smaller K or a smaller pair needs less"


@dataclass(frozen=True)
class QuotaRefusal:
    """ZeroGPU's refusal of a call that asked more GPU time than the visitor has left, as spaces words it:
    "You have exceeded your free ZeroGPU quota (60s requested vs. 23s left). Try again in 0:41:12."."""

    asked_s: int
    left_s: int
    retry_in_s: int  # when the asked time is back, in seconds ("Try again in" prints a timedelta: h:mm:ss)
    signed_in: bool  # spaces says "your free ZeroGPU" or "your Pro ZeroGPU" quota to a signed-in visitor


_QUOTA = re.compile(r"You have exceeded your (?P<tier>(?:free |Pro )?)ZeroGPU quota \((?P<asked>\d+)s requested vs\. "
                    r"(?P<left>\d+)s left\)\. Try again in (?P<wait>.+?)\.(?:\s|$)")
_TIMEDELTA = re.compile(r"(?:(?P<days>\d+) days?, )?(?P<h>\d+):(?P<m>\d\d):(?P<s>\d\d)(?:\.\d+)?")  # str(timedelta)


def parse_quota_refusal(message: str) -> QuotaRefusal | None:
    """The refusal in spaces' message, or None for any other text.

    >>> parse_quota_refusal("You have exceeded your free ZeroGPU quota (60s requested vs. 23s left). "
    ...                     "Try again in 0:41:12. ")
    QuotaRefusal(asked_s=60, left_s=23, retry_in_s=2472, signed_in=True)
    """
    found = _QUOTA.search(message)
    wait = _TIMEDELTA.fullmatch(found["wait"]) if found else None
    if wait is None:
        return None
    retry = int(wait["days"] or 0) * 86400 + int(wait["h"]) * 3600 + int(wait["m"]) * 60 + int(wait["s"])
    return QuotaRefusal(int(found["asked"]), int(found["left"]), retry, signed_in=bool(found["tier"]))


def duration_words(seconds: int) -> str:
    """3725 -> '1 h 2 min 5 s'; 41 -> '41 s'; 0 -> '0 s'."""
    parts = [(seconds // 3600, "h"), (seconds % 3600 // 60, "min"), (seconds % 60, "s")]
    return " ".join(f"{n} {unit}" for n, unit in parts if n) or "0 s"


def quota_words(refusal: QuotaRefusal) -> str:
    return (f"ZeroGPU refused the run: it asks {refusal.asked_s} s of GPU time and {refusal.left_s} s of your "
            f"daily quota are left; enough for it is back in {duration_words(refusal.retry_in_s)}; "
            f"{'' if refusal.signed_in else SIGN_IN}{NO_GPU_NEEDED}")


def _zerogpu_text(e: BaseException) -> tuple[str, str] | None:
    """(title, message) of an error `spaces` raised, or None. gr.Error keeps its text in .message (its str() is
    the repr); the HTML toast variant's str() is the plain text."""
    title = getattr(e, "title", None)
    if not isinstance(title, str) or not title.startswith("ZeroGPU"):
        return None
    return title, str(getattr(e, "message", "") or "").strip()


def refused_by_zerogpu(e: BaseException) -> bool:
    """Whether ZeroGPU refused the call before it ran (nothing of the run exists)."""
    said = _zerogpu_text(e)
    return said is not None and said[0] in REFUSALS


def zerogpu_message(e: BaseException) -> str | None:
    """Plain words for an error `spaces` raised, or None for any other exception. A message this code cannot
    read is shown as spaces wrote it."""
    said = _zerogpu_text(e)
    if said is None:
        return None
    title, text = said
    refusal = parse_quota_refusal(text) if title == QUOTA_EXCEEDED else None
    if refusal:
        return quota_words(refusal)
    if title == WORKER_ERROR:
        return _worker_words(text)
    asked = re.search(r"The requested GPU duration \((\d+)s\) is larger than the maximum allowed", text)
    if title == ILLEGAL_DURATION and asked:
        return (f"ZeroGPU refused the run: it asks {asked[1]} s of GPU time, more than one call may ask; fewer new "
                f"tokens (or fewer K values in the Lab) ask less")
    return f"{title}: {text}; {NO_GPU_NEEDED}" if title in REFUSALS else f"{title}: {text}"


def _worker_words(text: str) -> str:
    """A worker's failure: its process ended, or the run raised (spaces passes on only the exception's class)."""
    if text == WORKER_ABORTED:
        return ("the GPU worker stopped before the run finished (ZeroGPU ends a call that runs past the GPU time it "
                "asked for, and a crash ends it too)")
    if "OutOfMemory" in text:
        return f"out of memory on the GPU ({text}); {LESS_MEMORY}"
    return f"the GPU worker failed with {text or 'an error'}"


def message_of(e: BaseException) -> str:
    """Our ValueErrors are written for people and pass as they are; ZeroGPU's errors are put in plain words; anything
    else is named by its type and the first line of its text, and running out of memory says so first (the usual
    cause, and one a user can fix).

    >>> message_of(ValueError("K must be a whole number from 1 to 16, got 0"))
    'K must be a whole number from 1 to 16, got 0'
    >>> message_of(MemoryError())
    'out of memory (MemoryError); fewer new tokens, a smaller K or a smaller pair needs less'
    """
    zerogpu = zerogpu_message(e)  # first: gradio's Error, which spaces raises, is a ValueError
    if zerogpu is not None:
        return zerogpu
    if isinstance(e, ValueError):
        return str(e)
    first_line = (str(e).splitlines() or [""])[0][:200]
    detail = f"{type(e).__name__}: {first_line}" if first_line else type(e).__name__
    # torch.OutOfMemoryError (CUDA) is matched by name, so this module needs no torch
    if isinstance(e, MemoryError) or type(e).__name__ == "OutOfMemoryError" or "out of memory" in first_line.lower():
        return f"out of memory ({detail}); {LESS_MEMORY}"
    return detail
