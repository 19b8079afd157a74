"""The page: the only folder that imports gradio. Serving (models held for everyone, the GPU wrapper, launch
settings), input checks, the handlers, the round view's wiring, the page's layout, the Lab and Costs tabs, trace
files on the server, and what to tell a person about an error (errors.py, ZeroGPU's included).

May import every other folder; nothing imports it but app.py and the tests, and cli/ its errors.py alone (which
imports no gradio: tests/test_layering.py).
"""
