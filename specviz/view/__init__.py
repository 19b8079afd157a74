"""A recorded round turned into what a person sees: escaped HTML (token strip, p/q cards, KV caches, the tree,
the stage with its quiz steps, the class's panel), plotly figures, and a trace as plain text for a terminal. Pure
functions of the record (the quiz's arithmetic is record/quiz_data.py's).

- stage.py: every round of a trace rendered once, one shown at a time, with its quiz steps
- strip.py: the token strip and its legend
- cards.py: a round's p and q as HTML bars, with each draft's test written out
- tree.py: a tree round as HTML: the tree, its walk and its verdicts
- cache_cells.py: a round's two KV caches as rows of cells
- explanation.py: a round in plain language, quoting the record's numbers
- one_line.py: a round in one plain sentence
- why_k.py: why a round drafted as many tokens as it did, in one line
- cost_words.py: the cost-aware rule's weighing in words
- quiz_form.py: a round in quiz form: what a follower's page holds of a round not yet released
- follower.py: a follower's stage in a room
- class_panel.py: the class's panel in a room: who answered, then how the class answered beside what the target did
- summary.py: a run's summary: tokens, passes, speeds and the speedup with its ceiling
- acceptance.py: the summary's acceptance by position and round sizes, with the published α beside
- charts.py: a trace as plotly figures
- notices.py: the page's one-line notices and status lines
- style.py: the colour language and the number and token formats the text, charts and HTML share
- token_text.py: token and prompt text into escaped markup
- trace_text.py: a trace as plain text for a terminal

Imports settings, drafters, record and algorithm (theory, the cost rule's prediction); never the engine, torch
or gradio.
"""
