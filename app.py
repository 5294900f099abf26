"""Transformer Explorer: the Gradio app. Run `python app.py` (locally) or deploy as a Hugging Face Space.

    python app.py [--host HOST] [--port PORT] [--share] [--inbrowser] [--device auto|cpu|cuda|mps]
                  [--checkpoint NAME] [--allow-dir DIR ...] [--concurrency N] [--threads N]
                  [--max-tokens N] [--model-memory GB] [--request-memory GB] [--kept-memory GB]
                  [--download-disk GB]

On a Space (SPACE_ID is set) the app listens on 0.0.0.0:7860 unless told otherwise.
"""

from __future__ import annotations

import argparse
import logging
import os


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    on_space = bool(os.environ.get("SPACE_ID"))
    p = argparse.ArgumentParser(description="Transformer Explorer (Gradio app)")
    p.add_argument("--host", default="0.0.0.0" if on_space else "127.0.0.1", help="address to listen on")
    p.add_argument("--port", type=int, default=7860 if on_space else None, help="port (default: Gradio's, 7860)")
    p.add_argument("--share", action="store_true", help="create a public gradio.live link")
    p.add_argument("--inbrowser", action="store_true", help="open the app in the browser")
    p.add_argument("--device", default="auto", choices=["auto", "cpu", "cuda", "mps"], help="device for models")
    p.add_argument("--checkpoint", default=None, help="model to start with (shipped name or Hub id)")
    p.add_argument("--allow-dir", action="append", default=[], metavar="DIR",
                   help="a folder whose model sub-folders may be loaded by name in the UI (repeatable)")
    p.add_argument("--concurrency", type=int, default=4, help="requests run at the same time")
    p.add_argument("--threads", type=int, default=None,
                   help="torch threads of every request (default: the cores, up to 4, else half of them, shared "
                        "among the requests running at once: one request alone computes with all of them)")
    p.add_argument("--max-tokens", type=int, default=1024, metavar="N",
                   help="tokens of one input, at most (a model with a shorter context reads less); default 1024")
    p.add_argument("--model-memory", type=float, default=4.0, metavar="GB",
                   help="memory all loaded models may take together, in GiB (least recently used evicted first; "
                        "a bigger model is refused); default 4")
    p.add_argument("--request-memory", type=float, default=3.0, metavar="GB",
                   help="memory the requests running at once may take together, in GiB (each request's need is "
                        "estimated from the model's shape and its tokens; the others wait); default 3")
    p.add_argument("--kept-memory", type=float, default=1.0, metavar="GB",
                   help="memory the Runs' results kept for the sessions' tabs take together, in GiB (least recently "
                        "used let go first; a tab whose result was let go is computed again); default 1")
    p.add_argument("--download-disk", type=float, default=0.25, metavar="GB",
                   help="disk the Download's files take together, in GiB (one file per session, replaced by its next "
                        "download; the least recently written removed first); default 0.25")
    args = p.parse_args(argv)
    if args.max_tokens < 8:
        p.error("--max-tokens must be at least 8")
    if not args.model_memory > 0:
        p.error("--model-memory must be a positive number of GiB")
    if not args.request_memory > 0:
        p.error("--request-memory must be a positive number of GiB")
    if not args.kept_memory > 0:
        p.error("--kept-memory must be a positive number of GiB")
    if not args.download_disk > 0:
        p.error("--download-disk must be a positive number of GiB")
    return args


def main(argv: list[str] | None = None) -> None:
    from explorer.process_memory import one_malloc_arena

    one_malloc_arena()  # before any thread allocates (explorer/process_memory.py)
    import spaces  # noqa: F401 - before torch: on a ZeroGPU Space it patches torch before CUDA is touched

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    args = parse_args(argv)
    import torch

    from explorer.device import server_torch_threads, single_thread_numpy_blas

    torch.set_num_threads(server_torch_threads(args.threads))
    single_thread_numpy_blas()
    from explorer.app.demo import build_demo, launch_kwargs, queue
    from explorer.process_memory import freeze_startup_objects

    demo = build_demo(allowed_dirs=args.allow_dir, device=args.device, checkpoint=args.checkpoint,
                      max_tokens=args.max_tokens, model_memory=int(args.model_memory * 1024**3),
                      request_memory=int(args.request_memory * 1024**3),
                      kept_memory=int(args.kept_memory * 1024**3), threads=args.threads,
                      download_disk=int(args.download_disk * 1024**3))
    queue(demo, args.concurrency)
    demo.launch(server_name=args.host, server_port=args.port, share=args.share, inbrowser=args.inbrowser,
                prevent_thread_lock=True, **launch_kwargs())
    # Start-up is done: without this, dead Plotly figures (reference cycles) pile up for ~1,300 requests
    # between full garbage collections (explorer/process_memory.py).
    freeze_startup_objects()
    demo.block_thread()  # what launch() does itself without prevent_thread_lock: serve until interrupted


if __name__ == "__main__":
    main()
