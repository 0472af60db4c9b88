"""`python3 -m crl_torch`: serve the trainer protocol on stdin / stdout until stdin closes.

stdout carries protocol frames only, so anything printed goes to stderr; an exception in a
handler is answered as {"ok": false, "error", "traceback"} and the process keeps serving.
"""

import argparse
import sys
import traceback

import torch

from .trainer import Trainer
from .wire import WireClosed, read_message, write_message


def main():
    parser = argparse.ArgumentParser(prog="crl_torch", description=__doc__)
    parser.add_argument("--device", default="cpu", help="torch device (cpu, cuda, cuda:1)")
    parser.add_argument("--threads", type=int, default=0, help="torch CPU threads (0: torch's default)")
    parser.add_argument(
        "--fail-at-step",
        type=int,
        default=0,
        help="testing: exit with code 3 instead of answering the Nth step request (a trainer that dies mid-run)",
    )
    args = parser.parse_args()
    if args.threads > 0:
        torch.set_num_threads(args.threads)
    inp = sys.stdin.buffer
    out = sys.stdout.buffer
    sys.stdout = sys.stderr
    trainer = Trainer(device=args.device)
    steps = 0
    while True:
        try:
            header, buffers = read_message(inp)
        except WireClosed:
            return 0
        if header.get("op") == "step":
            steps += 1
            if steps == args.fail_at_step:
                print(f"crl_torch: exiting at step request {steps} (--fail-at-step)", file=sys.stderr)
                return 3
        try:
            reply, reply_buffers = trainer.handle(header, buffers)
            reply["ok"] = True
        except Exception as e:  # answered, not fatal: the client names the trainer and the op
            reply = {"ok": False, "error": f"{type(e).__name__}: {e}", "traceback": traceback.format_exc()}
            reply_buffers = []
        reply["id"] = header.get("id")
        write_message(out, reply, reply_buffers)
        if header.get("op") == "shutdown":
            return 0


if __name__ == "__main__":
    sys.exit(main())
