"""The page: the only folder that imports gradio (and starlette, for the rooms' routes). Read page.py first: the
layout, then every event wired in one place; the handlers it wires live in the modules below.

- serving.py: what the server holds for everyone: the GPU wrapper, the runs in progress, launch settings
- pair_cache.py: the process-wide model pairs, each loaded once, and how far a load is for whoever waits on it
- gpu_time.py: the GPU time each ZeroGPU call asks for, from its request and the pair's measured speed
- inputs.py: what the page accepts, checked on the server, and the page's defaults
- controls.py: which run controls do something in the page's current state (settings/needs.py)
- actions.py: the handlers that need a model: load a pair, Generate, Baseline, open a trace or a shipped example
- trace_files.py: trace files on the server: the folder the downloads serve from, reading an upload
- round_view.py: the round view's panels named once, and the handlers that show a recorded round
- page.py: the page: its layout, then every event wired in one place
- settings_rows.py: the pair, the drafter and every setting of a run as controls, in the rows that place them
- sections.py: a tab's sections, one screen each in the presenter view
- lab_tab.py: the Lab's handlers and their wiring
- lab_layout.py: the Lab's sections laid out
- costs_tab.py: the Costs tab: what checking K drafts costs, measured on the loaded pair, and why verifying pays;
  last, llama.cpp beside specviz as recorded
- busy_server.py: the Costs tab's "A busy server, measured" sections: several users served at once by one batch
- room_panel.py: the lecturer's room panel on the page (open a room, move it to the trace on screen), deep links
- room_hub.py: the fan-out of each room's changes to its streams: a bell per room, each message built once
- room_routes.py: rooms on the web: a follower's page, its stream, its answers, the lecturer's steering, as routes
- room_html.py: a room's pages as HTML: the follower's page, an error, the form that takes a code
- assets.py: where the static files are, and the page's scripts composed from whole files
- errors.py: what to tell a person about an exception, ZeroGPU's included (imports no gradio)

May import every other folder; nothing imports it but app.py and the tests, and cli/ its errors.py alone (which
imports no gradio: tests/test_layering.py).
"""
