"""What a lecture carries: the recorded examples that ship in assets/examples/ (real runs of the packaged
pair with what each must show), and rooms (rooms.py): one lecturer drives a trace, students follow it and answer
the quiz, with every key, bound and expiry a shared server needs. Beside them, each a part of a room: its short code
(room_codes.py), what it holds of its trace (room_trace.py), its seats (seats.py: the followers present at once,
held while their stream is open and a grace after), what it keeps of each trace it showed (showings.py), and its
results after the bell (results.py).

Imports settings, drafters, record (the trace, the quiz's data), algorithm (E(α, K) for a room's facts) and engine
(recording the examples); never the view or gradio (the page serves the rooms from app/).
"""
