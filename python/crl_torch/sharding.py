"""How a network's parameters are held across ranks: replicated (data parallel, the default) or
sharded with FSDP (`--shard fsdp`; docs/torch-trainer.md#several-processes, decision 0046).

FSDP here is FSDP2 (`fully_shard`): every decoder layer is one unit, the root (embedding, final
norm, heads) another. Each rank keeps rows [r * ceil(N / W), ...) of every parameter's first
dimension (`torch.chunk`'s split, which is FSDP2's); the units gather the full weights in their
forward, free them after it, gather them again in backward and reduce-scatter the gradients, so a
rank holds its shards of weights, gradients and AdamW moments, plus one unit's full weights at a
time. The gradient is reduced as a plain sum (FSDP's default is the mean): the loss crl sends
is already the batch's.
"""

import torch

MODES = ("replicate", "fsdp")


def fully_shard_api():
    """(fully_shard, init_device_mesh, DTensor) from this torch, or an error saying what is missing."""
    try:
        from torch.distributed.device_mesh import init_device_mesh
        from torch.distributed.tensor import DTensor
    except ImportError as e:
        raise RuntimeError(f"--shard fsdp needs torch >= 2.6 (this is torch {torch.__version__}): {e}") from e
    try:
        from torch.distributed.fsdp import fully_shard  # public from torch 2.6
    except ImportError:
        try:
            from torch.distributed._composable.fsdp import fully_shard
        except ImportError as e:
            raise RuntimeError(f"--shard fsdp needs torch >= 2.6 (this is torch {torch.__version__}): {e}") from e
    return fully_shard, init_device_mesh, DTensor


def shard_network(root, ranks):
    """Shards a models.Network in place: each layer, then the root (whatever is left)."""
    fully_shard, init_device_mesh, _ = fully_shard_api()
    device_type = torch.device(ranks.device).type
    if device_type == "cpu":
        cpu_stream_events()
    mesh = init_device_mesh(device_type, (ranks.world,))
    units = list(root.layers) + [root]
    for unit in units:
        fully_shard(unit, mesh=mesh, reshard_after_forward=device_type != "cpu")
    for unit in units:
        _sum_gradients(unit)


# On the CPU a unit keeps its gathered weights from forward to its backward: torch 2.6's FSDP2
# re-gathers them in backward into the very tensors the forward saved, and on the CPU that bumps
# their autograd version ("modified by an inplace operation ... AsStridedBackward0"), so backward
# fails. On CUDA the weights are freed after forward and gathered again in backward (FSDP2's
# default), which has not run here.


def cpu_stream_events():
    """FSDP2 orders its copies and collectives with stream events; torch 2.6's CPU Stream (a
    stand-in for device-agnostic code) lacks record_event / wait_event, so FSDP2 fails on the CPU
    with "'Stream' object has no attribute 'record_event'". On the CPU every operation has finished
    when it returns (collectives are waited on through their work objects), so an event that is
    already complete is exact."""
    stream = torch.cpu.Stream
    if not hasattr(stream, "record_event"):
        stream.record_event = lambda self, event=None: event if event is not None else torch.cpu.Event()
    if not hasattr(stream, "wait_event"):
        stream.wait_event = lambda self, event: None
    if not hasattr(stream, "synchronize"):
        stream.synchronize = lambda self: None


def _sum_gradients(unit):
    """FSDP averages the reduced gradient (ReduceOp.AVG, or a pre-multiplied sum after
    set_reduce_scatter_divide_factor: both NCCL-only in torch 2.6); the unit's reduce op set to SUM
    gives the sum with no division, on gloo as on NCCL."""
    import torch.distributed as dist

    if hasattr(unit, "set_force_sum_reduction_for_comms"):
        # Newer torch (2.14 checked) says it publicly: a divide factor of 1 with plain-sum
        # collectives (without the force, a factor becomes NCCL's PREMUL_SUM, which gloo lacks).
        unit.set_gradient_divide_factor(1.0)
        unit.set_force_sum_reduction_for_comms(True)
        return
    group = getattr(unit._get_fsdp_state(), "_fsdp_param_group", None)
    if group is None:
        return  # a unit left with no parameters of its own
    if not hasattr(group, "reduce_scatter_reduce_op"):
        raise RuntimeError(f"torch {torch.__version__}'s FSDP has no reduce op to set: gradients would be averaged")
    group.reduce_scatter_reduce_op = dist.ReduceOp.SUM


def local(t):
    """A parameter's (or its gradient's) part on this rank: the shard of a DTensor, else itself."""
    return t.to_local() if hasattr(t, "to_local") else t


def shard_rows(rows, world, rank):
    """Rows [start, end) of a first dimension of `rows` that rank holds (torch.chunk's split)."""
    if rows == 0:
        return 0, 0
    size = -(-rows // world)
    start = min(rows, rank * size)
    return start, min(rows, start + size)


def my_shard(full, world, rank):
    """This rank's rows of a full tensor (its share of AdamW moments at init)."""
    if full.dim() == 0 or world == 1:
        return full
    start, end = shard_rows(full.shape[0], world, rank)
    return full[start:end]


def gather_full(ranks, tensors, shapes):
    """Every rank's shards (local tensors, in spec order) -> on rank 0 the full float32 tensors,
    elsewhere None. One gather for all tensors: each rank sends its shards concatenated."""
    flat = torch.cat([t.detach().reshape(-1).float().cpu() for t in tensors]) if tensors else torch.zeros(0)
    per_rank = [[_shard_numel(s, ranks.world, r) for s in shapes] for r in range(ranks.world)]
    parts = ranks.gather(flat, [sum(c) for c in per_rank])
    if parts is None:
        return None
    pieces = [[] for _ in shapes]
    for r, part in enumerate(parts):
        o = 0
        for i, n in enumerate(per_rank[r]):
            pieces[i].append(part[o : o + n])
            o += n
    return [torch.cat(p).view(s) for p, s in zip(pieces, shapes)]


def _shard_numel(shape, world, rank):
    if not shape:
        return 1 if rank == 0 else 0
    start, end = shard_rows(shape[0], world, rank)
    n = end - start
    for d in shape[1:]:
        n *= d
    return n
