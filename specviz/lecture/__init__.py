"""What a lecture carries: the recorded examples that ship in assets/examples/ (real runs of the packaged
pair with what each must show).

Imports settings, record and engine; never gradio.
"""
