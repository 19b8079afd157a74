"""The harness: what drives specviz from outside, shared by the tests and the scripts in tools/. Tiny random-weight
models and a character tokenizer (tiny_models.py), the app's endpoints called through gradio_client (endpoints.py),
headless Chromium and a tab with waits on an app served in process (browser.py), a room's pages in it, its routes
served alone and a long trace to measure it by (room_pages.py), a real Redis and room servers in processes of
their own (room_processes.py), the golden views rendered (golden.py), the load
test's driver (load.py) and the GPU check's steps (gpu_steps.py).

tests/ and tools/ import this package, never each other; it imports specviz and neither of them
(tests/test_harness_layering.py holds that rule, reading the imports). Nothing here is collected by pytest or downloads
anything.
"""
