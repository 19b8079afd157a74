"""What to tell a person about an exception: one helper for the page, the Lab, the CLI and app start-up."""

from __future__ import annotations


def message_of(e: BaseException) -> str:
    """Our ValueErrors are written for people and pass as they are; anything else is named by its type and the
    first line of its text, and running out of memory says so first (the usual cause, and one a user can fix).

    >>> message_of(ValueError("K must be a whole number from 1 to 16, got 0"))
    'K must be a whole number from 1 to 16, got 0'
    >>> message_of(MemoryError())
    'out of memory (MemoryError); fewer new tokens, a smaller K or a smaller pair needs less'
    """
    if isinstance(e, ValueError):
        return str(e)
    first_line = (str(e).splitlines() or [""])[0][:200]
    detail = f"{type(e).__name__}: {first_line}" if first_line else type(e).__name__
    # torch.OutOfMemoryError (CUDA) is matched by name, so this module needs no torch
    if isinstance(e, MemoryError) or type(e).__name__ == "OutOfMemoryError" or "out of memory" in first_line.lower():
        return f"out of memory ({detail}); fewer new tokens, a smaller K or a smaller pair needs less"
    return detail
