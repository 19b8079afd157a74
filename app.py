"""specviz web app: parse flags, build the UI, launch.

    python app.py                       # http://127.0.0.1:7860, the packaged offline pair
    python app.py --preset smollm2-135m-1.7b --host 0.0.0.0 --port 8080
    python app.py --presets qwen2.5-coder-0.5b-1.5b-offline   # a hosted page offering only the offline pair

Each flag can also come from the environment: SPECVIZ_PRESET, SPECVIZ_PRESETS, SPECVIZ_HOST, SPECVIZ_PORT,
SPECVIZ_CONCURRENCY, SPECVIZ_ROOMS.
"""

from __future__ import annotations

import argparse
import os
import threading

os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")  # before gradio is imported: no telemetry, no version check

from specviz.app.errors import message_of  # noqa: E402
from specviz.models.kernels import PATHS  # noqa: E402
from specviz.models.pairs import DEFAULT_PRESET, PRESETS  # noqa: E402
from specviz.app.pair_cache import default_engine_loader, preset_labels  # noqa: E402
from specviz.app.serving import DEFAULT_CONCURRENCY, keep_rooms, launch_kwargs  # noqa: E402
from specviz.lecture.room_setting import FORMS, parse_setting  # noqa: E402
from specviz.lecture.room_state import RoomError  # noqa: E402
from specviz.app.page import build_demo  # noqa: E402


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description="specviz: watch speculative decoding round by round")
    parser.add_argument("--preset", default=os.environ.get("SPECVIZ_PRESET"),
                        help=f"model pair shown first (default {DEFAULT_PRESET}, or the first of --presets)")
    parser.add_argument("--presets", default=os.environ.get("SPECVIZ_PRESETS", ",".join(PRESETS)),
                        help=f"comma-separated pairs the page offers (default: all of {', '.join(PRESETS)}); a user "
                             "can name no other model. A hosted instance should offer only what its hardware holds.")
    parser.add_argument("--host", default=os.environ.get("SPECVIZ_HOST"),
                        help="address to listen on (default 127.0.0.1, or Gradio's GRADIO_SERVER_NAME)")
    parser.add_argument("--port", type=int, default=os.environ.get("SPECVIZ_PORT"),
                        help="port (default 7860, or Gradio's GRADIO_SERVER_PORT)")
    parser.add_argument("--concurrency", type=int,
                        default=os.environ.get("SPECVIZ_CONCURRENCY", DEFAULT_CONCURRENCY),
                        help=f"model runs at once across all users (default {DEFAULT_CONCURRENCY}: on a CPU a "
                             "second run only splits the cores); the rest wait in the queue, which stepping through "
                             "rounds never does")
    parser.add_argument("--kernels", default=os.environ.get("SPECVIZ_KERNELS", "auto"),
                        help="on a CPU, the path the models' linear layers run on: auto (default: the fastest exact "
                             "path, measured once on this machine), or " + ", ".join(PATHS) + "; refused where this "
                             "machine cannot run it or its rows measure not independent here (docs/engine.md)")
    parser.add_argument("--rooms", default=os.environ.get("SPECVIZ_ROOMS"),
                        help=f"where rooms are kept: {FORMS} (docs/hosting.md)")
    parser.add_argument("--share", action="store_true", help="also open a public Gradio share link (off by default)")
    args = parser.parse_args(argv)
    if args.concurrency < 1:
        parser.error(f"--concurrency must be at least 1, got {args.concurrency}")
    if args.kernels not in ("auto", *PATHS):
        parser.error(f"--kernels must be auto or one of {', '.join(PATHS)}, got {args.kernels!r}")
    try:
        parse_setting(args.rooms)
    except ValueError as e:
        parser.error(f"--rooms / {e}")
    args.presets = [name.strip() for name in args.presets.split(",") if name.strip()]
    if not args.presets:
        parser.error("--presets names no preset")
    args.preset = args.preset or (DEFAULT_PRESET if DEFAULT_PRESET in args.presets else args.presets[0])
    for name in [args.preset, *args.presets]:
        if name not in PRESETS:
            parser.error(f"unknown preset {name!r}; known: {', '.join(PRESETS)}")
    if args.preset not in args.presets:
        parser.error(f"--preset {args.preset} is not one of --presets ({', '.join(args.presets)})")
    return args


def load_in_background(loader, preset: str) -> threading.Thread:
    """Start loading the first pair while the server starts, so the first visitor finds it loaded (or loading)
    instead of starting the load. A failure is only printed here: the page's own load retries and says why."""
    def load():
        try:
            loader(preset, None)
        except Exception as e:  # a hub model offline, not enough memory: the page reports it to its user
            print(f"specviz: loading {preset} in the background failed ({message_of(e)}); the page will retry")
    thread = threading.Thread(target=load, name="specviz-preload", daemon=True)
    thread.start()
    return thread


def on_zerogpu() -> bool:
    """Hugging Face's ZeroGPU sets SPACES_ZERO_GPU (spaces/config.py reads it the same way)."""
    return os.environ.get("SPACES_ZERO_GPU", "").lower() in ("1", "t", "true")


def load_for_zerogpu(loader, args: argparse.Namespace) -> None:
    """ZeroGPU's stand-in for CUDA works in the main thread only, and its GPU calls run in workers forked from
    this process: so the pair loads here, before launch, and is the only one the page offers (a pair loaded
    later, in a handler's thread, could not be moved to the GPU). A failure stops the start: it says why."""
    if args.presets != [args.preset]:
        print(f"specviz: on ZeroGPU the page offers only the pair loaded at start ({args.preset}), not "
              f"{', '.join(name for name in args.presets if name != args.preset)}")
    args.presets = [args.preset]
    loader.measure_at_load = False  # no GPU to time here: the first cost-aware run measures inside its GPU call
    loader(args.preset, None)


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    try:
        keep_rooms(args.rooms)
    except (RoomError, OSError) as e:  # a file another process holds, or a folder it may not write
        raise SystemExit(f"specviz: {e}") from None
    default_engine_loader.kernels = None if args.kernels == "auto" else args.kernels
    if on_zerogpu():
        load_for_zerogpu(default_engine_loader, args)
    else:
        load_in_background(default_engine_loader, args.preset)  # EngineCache: a page asking meanwhile waits for it
    labels = preset_labels()
    demo = build_demo(default_engine_loader, {name: labels[name] for name in args.presets}, args.preset,
                      concurrency=args.concurrency)
    demo.launch(server_name=args.host, server_port=args.port, share=args.share, **launch_kwargs())


if __name__ == "__main__":
    main()
