"""Where a server keeps its rooms, as one setting says it (`SPECVIZ_ROOMS`, or app.py's `--rooms`; issue 63):

    unset or ""              on this machine's disk: a SQLite file in the cache folder (DiskStore; the default)
    memory                   in this process only, gone with it (MemoryStore)
    sqlite:PATH              on disk, in the SQLite file PATH (DiskStore)
    redis://HOST:PORT/DB     in Redis, shared by every process named to it (RedisStore)

    store_named("redis://127.0.0.1:6379/0", cache)   # -> a RedisStore; a malformed setting: ValueError(FORMS)

The cache folder is the caller's (app/ knows it: models/packaged.cache_root), so rooms live beside the models.
"""

from __future__ import annotations

from pathlib import Path
from urllib.parse import urlsplit

from specviz.lecture.room_store import MemoryStore, RoomStore

DISK_FILE = "rooms.sqlite"  # the default store's file, in the cache folder
FORMS = ("unset (rooms on this machine's disk, in the cache folder), \"memory\" (this process only), "
         "\"sqlite:PATH\" (a SQLite file of your choice) or \"redis://HOST:PORT/DB\" (Redis, shared by several "
         "processes; e.g. redis://127.0.0.1:6379/0)")


def store_named(setting: str | None, cache: Path) -> RoomStore:
    """The store `setting` names (docstring above), opened; ValueError naming the accepted forms for any other."""
    kind, where = parse_setting(setting)
    if kind == "memory":
        return MemoryStore()
    if kind == "redis":
        from specviz.lecture.room_redis import RedisStore

        return RedisStore(where)
    from specviz.lecture.room_disk import DiskStore

    return DiskStore(Path(where).expanduser() if where else Path(cache) / DISK_FILE)


def parse_setting(setting: str | None) -> tuple[str, str]:
    """("disk", PATH or "" for the cache folder's file) | ("memory", "") | ("redis", URL), nothing opened yet;
    ValueError naming the accepted forms for anything else."""
    text = (setting or "").strip()
    if not text:
        return "disk", ""
    if text == "memory":
        return "memory", ""
    if text.startswith("sqlite:") and text[len("sqlite:"):].strip():
        return "disk", text[len("sqlite:"):].strip()
    if text.startswith("redis://"):
        return "redis", check_redis_url(text)
    raise ValueError(f"SPECVIZ_ROOMS={text[:80]!r} is not a room store; accepted: {FORMS}")


def check_redis_url(url: str) -> str:
    """`url` if it reads redis://HOST:PORT/DB (a port from 1 to 65535, a database number, nothing after it);
    ValueError naming the accepted forms otherwise."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        parts, port = None, None
    db = parts.path.lstrip("/") if parts else ""
    if not (parts and parts.hostname and port and db.isdigit() and len(db) <= 2 and not parts.query
            and not parts.fragment):
        raise ValueError(f"SPECVIZ_ROOMS={url[:80]!r} is not a Redis address of the form redis://HOST:PORT/DB; "
                         f"accepted: {FORMS}")
    return url
