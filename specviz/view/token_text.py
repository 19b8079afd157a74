"""Token and prompt text into markup: escaped, control characters as pictures, whitespace made visible, a token
quoted inside a sentence. Every prompt or token text goes through `html.escape` here on its way into markup, so a
prompt like `<img src=x onerror=alert(1)>` shows as text. The characters' pictures are style.py's.
"""

from __future__ import annotations

from html import escape

from specviz.view.style import CONTROLS, VISIBLE


def text_html(text: str) -> str:
    """Running text (a prompt, an output), escaped, control characters as pictures: 'a\\x1b<b>' -> 'a␛&lt;b&gt;'."""
    return escape("".join(CONTROLS.get(ch, ch) for ch in text))


def token_html(text: str, breaks: bool = False) -> str:
    """Escaped token text; whitespace as a faint marker, a newline also breaks the line when `breaks`.

    >>> token_html(' <b>')
    '<span class="sv-ws">·</span>&lt;b&gt;'
    """
    out = []
    for ch in text:
        if ch in VISIBLE:
            out.append(f'<span class="sv-ws">{VISIBLE[ch]}</span>' + ("<br>" if breaks and ch == "\n" else ""))
        else:
            out.append(escape(ch))
    return "".join(out) or '<span class="sv-ws">∅</span>'


def quoted(text: str) -> str:
    """A token inside a sentence, quoted so that a comma token reads “,”, not as punctuation: “·fib”, escaped."""
    return f'<code class="sv-q-tok">“{token_html(text)}”</code>'
