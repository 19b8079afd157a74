"""The one data model: what a speculative decoding run recorded, round by round (`trace.Trace`), its JSON form,
the strict loader that refuses a file no run could have written, the quiz as data (`quiz_data`: how a round is
revealed step by step, the quiz's state, a room's facts), the lecture pack's file format (`lecture_pack`: the trace
and a quiz's state in one file), a pair's measured pass costs (`cost_profile.CostProfile`), and the statistics of a
run, pure functions of its trace (`stats`).

Imports settings and drafters only: a trace replays with no model, no torch and no gradio.
"""
