"""A tab's sections, one screen each in the presenter view.

The Lab and the Costs tab build each of their sections inside `section()`: a column marked SECTION that opens with a
heading (h2 or h3), the section's title. assets/sections.js finds them there, in the page's order, and nowhere else: in
the presenter view it shows the tab's sections one at a time, each alone on the 16:9 screen (assets/sections.css).
`panes()` puts two columns side by side on that screen (text and controls beside a chart, or two charts); on the
page they stay one above the other.
"""

from __future__ import annotations

import gradio as gr

SECTION = "sv-section"  # the class assets/sections.js and assets/present.css read
PANES = "sv-panes"  # side by side in the presenter view only (assets/style.css, assets/present.css)


def section() -> gr.Column:
    """One section of a tab; build it opening with a heading, its title."""
    return gr.Column(elem_classes=[SECTION])


def panes() -> gr.Row:
    """Two columns side by side in the presenter view (a section's text and controls beside its chart, or two charts);
    on the page one above the other."""
    return gr.Row(elem_classes=[PANES], equal_height=False)
