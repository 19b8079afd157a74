"""The Lab's toy problems and experiments: p/q pairs and their Monte Carlo, two positions' joint distribution,
the α / K / c / v explorer, the drafters compared on the real engine, and their figures and readouts.

- playground.py: toy p/q pairs and Monte Carlo runs of the accept/reject rule
- joint.py: the first two tokens together: their joint distribution, drafted and verified
- explorer.py: the α / K / c / v explorer and its "test yourself" question
- compare.py: the drafters compared on the real engine
- charts.py: the Lab's figures
- readouts.py: the Lab's HTML readouts and the "test yourself" card

Imports settings, drafters, record, algorithm, view, measure (what a trace measured) and (for the comparison's
runs) engine; never gradio.
"""
