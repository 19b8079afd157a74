"""What a machine measured once and a later start reads back: a JSON object of entries by key, in a file of the
model cache (kernels.json: the kernels chosen, kernel_choice.py; pass_costs.json: the pair's passes timed at load,
engine/pass_costs.py). Written whole through a temporary file, so a reader never sees half of one; a cache that cannot
be written, or a file that will not read, costs only a measurement again.
"""

from __future__ import annotations

import json
from pathlib import Path


def read_entries(path: Path) -> dict:
    """The file's entries by key; {} where it is missing, not JSON or not an object."""
    try:
        data = json.loads(Path(path).read_text())
        return data if isinstance(data, dict) else {}
    except (OSError, ValueError):
        return {}


def remember(path: Path, key: str, value: dict) -> None:
    """The file with `key` set to `value` (JSON numbers only: NaN is refused), the other entries kept."""
    try:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        data = {**read_entries(path), key: value}
        part = Path(path).with_name(Path(path).name + ".part")
        part.write_text(json.dumps(data, indent=1, allow_nan=False))
        part.replace(path)
    except (OSError, ValueError):  # a read-only cache, a value JSON cannot hold: measured again next time
        pass
