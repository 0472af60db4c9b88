"""Several trainer processes under torchrun (docs/torch-trainer.md#several-processes).

Rank 0 speaks the protocol; it broadcasts every request's frame to the other ranks, which run the
same handler. A forward's sequences are dealt out round-robin (rank r takes sequences r, r + N,
...); each rank runs its share, and rank 0 gathers the per-token outputs back into the request's
order. A backward gives each rank the gradients of its share; before a step the summed gradient
is all-reduced once, so every rank clips by the same global norm and takes the same AdamW step on
its identical copy of the weights (data parallelism, as DistributedDataParallel does it: see the
decision record for why the model is not wrapped in that class). One process is world size 1:
the same code with no collectives. With `--shard fsdp` the weights are sharded instead
(sharding.py): the forward and backward collectives are FSDP's, and these carry the frames, the
outputs, the clipping norm's sum and the gathers of full tensors.
"""

import os

import torch

from .wire import pack_message, unpack_message


class RankLost(Exception):
    """A collective failed: another rank died or hung up. The group cannot continue."""


class Ranks:
    def __init__(self, device):
        self.world = int(os.environ.get("WORLD_SIZE", "1"))
        self.rank = int(os.environ.get("RANK", "0"))
        self.device = device
        if self.world > 1 and device == "cuda":
            self.device = f"cuda:{os.environ.get('LOCAL_RANK', '0')}"  # one GPU per rank
        self.dist = None
        self.control = None
        if self.world > 1:
            import torch.distributed as dist

            from .tcp_store import without_libuv_where_missing

            without_libuv_where_missing()
            cuda = torch.device(self.device).type == "cuda"
            dist.init_process_group("nccl" if cuda else "gloo")
            self.dist = dist
            # Frames and gathered outputs are CPU bytes: they travel over gloo whatever the device.
            self.control = dist.new_group(backend="gloo") if cuda else None

    def share(self, n):
        """Indices of the sequences this rank runs out of n."""
        return list(range(self.rank, n, self.world))

    def broadcast_frame(self, header, buffers):
        """Rank 0: send a request to the other ranks."""
        if self.world == 1:
            return
        raw = pack_message(header, buffers)
        self._collective(
            "broadcast",
            lambda: (
                self.dist.broadcast(torch.tensor([len(raw)], dtype=torch.int64), 0, group=self.control),
                self.dist.broadcast(torch.frombuffer(bytearray(raw), dtype=torch.uint8), 0, group=self.control),
            ),
        )

    def receive_frame(self):
        """Ranks above 0: the next request rank 0 received."""
        size = torch.zeros(1, dtype=torch.int64)
        self._collective("broadcast", lambda: self.dist.broadcast(size, 0, group=self.control))
        data = torch.empty(int(size[0]), dtype=torch.uint8)
        self._collective("broadcast", lambda: self.dist.broadcast(data, 0, group=self.control))
        return unpack_message(data.numpy().tobytes())

    def gather(self, flat, sizes):
        """Each rank's float32 [sizes[rank]] -> on rank 0 the list of every rank's, else None."""
        if self.world == 1:
            return [flat]
        width = max(max(sizes), 1)
        padded = torch.zeros(width, dtype=torch.float32)
        padded[: flat.numel()] = flat
        parts = [torch.empty(width, dtype=torch.float32) for _ in range(self.world)] if self.rank == 0 else None
        self._collective("gather", lambda: self.dist.gather(padded, parts, dst=0, group=self.control))
        if parts is None:
            return None
        return [p[:n] for p, n in zip(parts, sizes)]

    def all_reduce_grads(self, params):
        """Sums every rank's accumulated gradients (no gradient: zeros) into each rank's .grad."""
        if self.world == 1:
            return
        grads = [p.grad if p.grad is not None else torch.zeros_like(p) for p in params]
        flat = torch.cat([g.reshape(-1) for g in grads])
        self._collective("all_reduce", lambda: self.dist.all_reduce(flat))
        offset = 0
        for p in params:
            n = p.numel()
            p.grad = flat[offset : offset + n].view_as(p).clone()
            offset += n

    def all_reduce_sum(self, x):
        """A float64 summed over the ranks (a sharded gradient's squared norm)."""
        if self.world == 1:
            return x
        t = torch.tensor([x], dtype=torch.float64)
        self._collective("all_reduce", lambda: self.dist.all_reduce(t, group=self.control))
        return float(t[0])

    def gather_counts(self, counts):
        """Each rank's list of ints (same length) -> on rank 0 the list of every rank's, else None."""
        mine = torch.tensor(counts, dtype=torch.int64)
        if self.world == 1:
            return [counts]
        parts = [torch.empty_like(mine) for _ in range(self.world)] if self.rank == 0 else None
        self._collective("gather", lambda: self.dist.gather(mine, parts, dst=0, group=self.control))
        return None if parts is None else [p.tolist() for p in parts]

    def _collective(self, what, fn):
        try:
            fn()
        except RuntimeError as e:
            raise RankLost(f"rank {self.rank} of {self.world} lost the others during {what}: {e}") from e

    def close(self):
        if self.dist is not None:
            self.dist.destroy_process_group()
