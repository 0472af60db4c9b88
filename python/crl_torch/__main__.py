"""`python3 -m crl_torch`: serve the trainer protocol on stdin / stdout until stdin closes, or on
TCP connections with --listen; under torchrun, rank 0 serves and the other ranks follow it.

stdout carries protocol frames only, so anything printed goes to stderr; an exception in a
handler is answered as {"ok": false, "error", "traceback"} and the process keeps serving. A lost
rank is fatal (the group cannot go on): the process exits with code 4 after saying which rank.
"""

import argparse
import os
import socket
import sys
import time
import traceback

import torch

from . import hf_models
from .ranks import RankLost, Ranks
from .sharding import MODES, fully_shard_api
from .trainer import Trainer
from .wire import WireClosed, read_message, write_message

EXIT = {"op": "_exit"}  # rank 0 to the others: the client is gone for good


def main():
    parser = argparse.ArgumentParser(prog="crl_torch", description=__doc__)
    parser.add_argument("--device", default="cpu", help="torch device (cpu, cuda, cuda:1); under torchrun cuda means cuda:LOCAL_RANK")
    parser.add_argument("--threads", type=int, default=0, help="torch CPU threads per process (0: torch's default)")
    parser.add_argument(
        "--listen",
        metavar="[HOST:]PORT",
        help="serve over TCP instead of stdin / stdout, one client at a time (HOST defaults to 127.0.0.1; PORT 0 picks a free port)",
    )
    parser.add_argument(
        "--shard",
        choices=MODES,
        default="replicate",
        help="under torchrun: replicate the model on every rank (data parallel, the default) or shard "
        "weights, gradients and AdamW moments across the ranks with FSDP (fsdp; needs torch >= 2.6)",
    )
    parser.add_argument(
        "--model-impl",
        choices=("auto", "builtin", "transformers"),
        default="auto",
        help="the network: Hugging Face transformers model classes (transformers; auto picks them "
        "wherever transformers imports) or the built-in Llama / Qwen3 module (builtin; auto elsewhere)",
    )
    parser.add_argument(
        "--fail-at-step",
        type=int,
        default=0,
        help="testing: exit with code 3 instead of answering the Nth step request (a trainer that dies mid-run)",
    )
    parser.add_argument("--fail-rank", type=int, default=0, help="testing: the rank that --fail-at-step stops")
    args = parser.parse_args()
    if args.threads > 0:
        torch.set_num_threads(args.threads)
    if args.shard == "fsdp":
        try:
            fully_shard_api()
        except RuntimeError as e:
            print(f"crl_torch: {e}", file=sys.stderr, flush=True)
            return 2
    out = sys.stdout.buffer
    sys.stdout = sys.stderr  # before transformers is imported: stdout carries protocol frames only
    impl = args.model_impl
    if impl != "builtin":
        found = hf_models.version()
        if found is None and impl == "transformers":
            print("crl_torch: --model-impl transformers, but transformers cannot be imported here", file=sys.stderr, flush=True)
            return 2
        impl = "builtin" if found is None else "transformers"
    ranks = Ranks(args.device)
    trainer = Trainer(ranks, args.shard, impl, impl_explicit=args.model_impl == "transformers")
    fail = Failure(args, ranks.rank)
    try:
        if ranks.rank != 0:
            return follow(trainer, ranks, fail)
        if args.listen is None:
            code = serve(trainer, ranks, sys.stdin.buffer, out, fail)
        else:
            code = listen(trainer, ranks, args.listen, fail)
        ranks.broadcast_frame(EXIT, [])
        ranks.close()
        return code
    except RankLost as e:
        print(f"crl_torch: {e}", file=sys.stderr, flush=True)
        os._exit(4)  # a broken group cannot be shut down cleanly


class Failure:
    """--fail-at-step: this rank exits at its Nth step request."""

    def __init__(self, args, rank):
        self.at = args.fail_at_step if rank == args.fail_rank else 0
        self.rank = rank
        self.steps = 0

    def check(self, header):
        if header.get("op") != "step":
            return
        self.steps += 1
        if self.steps == self.at:
            print(f"crl_torch: rank {self.rank} exiting at step request {self.steps} (--fail-at-step)", file=sys.stderr, flush=True)
            os._exit(3)


def handle(trainer, header, buffers):
    t0 = time.perf_counter()
    try:
        reply, reply_buffers = trainer.handle(header, buffers)
        reply["ok"] = True
    except RankLost:
        raise
    except Exception as e:  # answered, not fatal: the client names the trainer and the op
        reply = {"ok": False, "error": f"{type(e).__name__}: {e}", "traceback": traceback.format_exc()}
        reply_buffers = []
    reply["id"] = header.get("id")
    # Time spent in the handler (collectives included): the client counts the rest as the wire's.
    reply["seconds"] = time.perf_counter() - t0
    return reply, reply_buffers


def serve(trainer, ranks, inp, out, fail):
    """One client until it closes its stream or sends shutdown; 0 either way."""
    while True:
        try:
            header, buffers = read_message(inp)
        except WireClosed:
            return 0
        fail.check(header)
        if header.get("op") != "shutdown":
            ranks.broadcast_frame(header, buffers)
        reply, reply_buffers = handle(trainer, header, buffers)
        write_message(out, reply, reply_buffers)
        if header.get("op") == "shutdown":
            return 0


def follow(trainer, ranks, fail):
    while True:
        header, buffers = ranks.receive_frame()
        if header.get("op") == EXIT["op"]:
            ranks.close()
            return 0
        fail.check(header)
        reply, _ = handle(trainer, header, buffers)
        if not reply["ok"]:  # rank 0 answers the same failure to the client; this is for the log
            print(f"crl_torch: rank {ranks.rank}: {header.get('op')} failed: {reply['error']}", file=sys.stderr, flush=True)


def listen(trainer, ranks, where, fail):
    """Clients one after another (a resumed run reconnects); shutdown ends a client, not the server."""
    host, _, port = where.rpartition(":")
    server = socket.create_server((host or "127.0.0.1", int(port)))
    bound = server.getsockname()
    print(f"crl_torch: listening on {bound[0]}:{bound[1]}", file=sys.stderr, flush=True)
    while True:
        conn, peer = server.accept()
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        print(f"crl_torch: client {peer[0]}:{peer[1]}", file=sys.stderr, flush=True)
        with conn, conn.makefile("rb") as inp, conn.makefile("wb") as out:
            try:
                serve(trainer, ranks, inp, out, fail)
            except (ConnectionError, OSError) as e:
                print(f"crl_torch: client {peer[0]}:{peer[1]} lost: {e}", file=sys.stderr, flush=True)
        print(f"crl_torch: client {peer[0]}:{peer[1]} done", file=sys.stderr, flush=True)


if __name__ == "__main__":
    sys.exit(main())
