"""What a lecture carries: the recorded examples that ship in assets/examples/ (real runs of the packaged pair with
what each must show), and rooms: one lecturer drives a trace, students follow it and answer the quiz, with every key,
bound and expiry a shared server needs. A room is state and rules, no web: the page serves it from app/. Read
rooms.py first (the front: bounds, one request at a time), then room_state.py (what a room holds), room_rules.py (what
each request does to it) and room_store.py (where rooms are kept: memory, a SQLite file, or Redis for several
processes).

- examples.py: the recorded examples: the catalogue, what each must show checked on its trace, recording them
- rooms.py: Rooms, every room of one server: opening, finding, the bounds, each request read, ruled and written back
- room_store.py: what a room store must do (RoomStore, a few methods), the in-memory one, and what a room id may be
- room_disk.py: DiskStore, rooms in a SQLite file (WAL), written through, read back after a restart: the default
- room_redis.py: RedisStore, rooms in Redis with TTLs, shared by several processes, changes heard on a channel a room
- room_json.py: a room as text in pieces (its core, a seat, an answer), its trace apart: what a disk or Redis store keeps
- room_parts.py: what a request changed in a room (a seat, an answer, the core), so a store writes that alone
- room_setting.py: SPECVIZ_ROOMS (--rooms): the accepted forms, parsed and refused, and the store each names
- room_state.py: a room as data: Room, RoomView (what a follower sees), OpenedRoom, and RoomError, every refusal
- room_rules.py: what each request does to one room (drive, move to a trace, join, answer, the view), given the time
- room_codes.py: a room's short code: six random characters and a seventh that checks them
- code_guesses.py: the limit on naming codes that open no room, per client and for all clients together
- room_trace.py: what a room holds of its trace: its rounds' quiz facts, its id, its title
- seats.py: a room's seats: the followers present at once, each held while its stream is open and a grace after
- showings.py: what a room keeps of each trace it showed: answers and reveals, the last MAX_TRACES
- results.py: a room's results after the bell, every trace it showed, as the lecturer's CSV and JSON

Imports settings, drafters, record (the trace, the quiz's data), algorithm (E(α, K) for a room's facts) and engine
(recording the examples), and `redis` (room_redis.py only); never the view or gradio (the page serves the rooms from
app/).
"""
