"""A room's short code: six random characters from 31 and a seventh that checks them, so a typo is told at once
and never counts as a guess (lecture/code_guesses.py counts guesses; docs/lecture.md has the arithmetic).

    with_check("222222") -> "2222222"     is_code("2222222") -> True     is_code("2222223") -> False
"""

from __future__ import annotations

CODE_ALPHABET = "23456789ABCDEFGHJKMNPQRSTUVWXYZ"  # no 0/O, 1/I/L: read off a projector; 31, a prime
CODE_RANDOM = 6  # random characters: 31^6 ≈ 8.9e8 codes, one of 50 rooms per ~1.8e7 guesses (docs/lecture.md)
CODE_LENGTH = CODE_RANDOM + 1  # and a check character: any one wrong character or swapped pair is no code at all


def _check_sum(code: str) -> int:
    """Σ position × value over the code's characters (positions from 1), modulo 31. As 31 is prime and every
    position below it, one wrong character changes the sum, and so does any swapped pair (by (j − i)(a − b))."""
    return sum(i * CODE_ALPHABET.index(c) for i, c in enumerate(code, 1)) % len(CODE_ALPHABET)


def with_check(random: str) -> str:
    """`random` and the check character that makes the whole code's sum 0: with_check("222222") -> "2222222"."""
    n = len(CODE_ALPHABET)
    value = -_check_sum(random) * pow(len(random) + 1, -1, n) % n  # solve (len + 1) · c ≡ −Σ (mod 31)
    return random + CODE_ALPHABET[value]


def is_code(text: str) -> bool:
    """Could `text` be a room's code: the length, the alphabet, and the check character that fits."""
    return len(text) == CODE_LENGTH and all(c in CODE_ALPHABET for c in text) and _check_sum(text) == 0
