"""What a lecture carries: the recorded examples that ship in assets/examples/ (real runs of the packaged
pair with what each must show), and rooms (rooms.py): one lecturer drives a trace, students follow it and answer
the quiz, with every key, bound and expiry a shared server needs.

Imports settings, drafters, record, engine and view (a room's facts); never gradio (the page serves the rooms from
app/).
"""
