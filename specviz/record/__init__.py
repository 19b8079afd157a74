"""The one data model: what a speculative decoding run recorded, round by round (`trace.Trace`), its JSON form,
the strict loader that refuses a file no run could have written, the quiz as data (`quiz_data`: how a round is
revealed step by step, the quiz's state, a room's facts), the lecture pack's file format (`lecture_pack`: the trace
and a quiz's state in one file), a pair's measured pass costs (`cost_profile.CostProfile`), and the statistics of a
run, pure functions of its trace (`stats`).

- trace.py: the one data model: a run's rounds, their fates and settings, JSON in and out
- strict_json.py: a trace file's dataclasses rebuilt from JSON, every field checked against its type
- load.py: load_trace: an upload read strictly, refused with the first problem named
- stats.py: a run's statistics from its trace: the summary, speeds, Spread (a median with its range), acceptance
- round_costs.py: what a run's rounds paid in steps of the target alone, beside what the cost-aware rule priced them
- cost_profile.py: CostProfile, a pair's measured pass costs on one device, and prices_at, c and v(K) at a batch of B
- quiz_data.py: the quiz as data: how a round is revealed, the quiz's state, a room's facts, what a follower may hold
- lecture_pack.py: the lecture pack's file format: a trace and a quiz's state in one JSON file

Imports settings and drafters only: a trace replays with no model, no torch and no gradio.
"""
