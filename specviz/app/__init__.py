"""The page: the only folder that imports gradio. Serving (models held for everyone, the GPU wrapper, launch
settings), input checks, the handlers, the round view's wiring, the page's layout, the Lab and Costs tabs, and
trace files on the server.

May import every other folder; nothing imports it but app.py and the tests.
"""
