"""TCPStore without libuv where this torch was built without it (Debian trixie's torch 2.6).

That torch's TCPStore asks for libuv unless told otherwise, and fails with "use_libuv was
requested but PyTorch was build without libuv support" wherever torchrun's rendezvous or a
worker's init_process_group makes one. Where that is so, every TCPStore made from here on
defaults to use_libuv=False (and USE_LIBUV=0 is set for the stores that read it); anywhere else
this changes nothing.
"""

import importlib
import os


def without_libuv_where_missing():
    import torch.distributed as dist

    if not hasattr(dist, "TCPStore"):
        return
    try:
        dist.TCPStore("127.0.0.1", 0, is_master=True, use_libuv=True, wait_for_workers=False)
        return
    except TypeError:
        return  # a torch before the use_libuv argument: no libuv default to undo
    except RuntimeError as e:
        if "libuv" not in str(e):
            raise
    os.environ["USE_LIBUV"] = "0"
    # By module name: torch.distributed's attribute `rendezvous` is a function, not the module.
    rendezvous = importlib.import_module("torch.distributed.rendezvous")
    c10d_rendezvous_backend = importlib.import_module("torch.distributed.elastic.rendezvous.c10d_rendezvous_backend")

    class TCPStore(dist.TCPStore):
        def __init__(self, *args, **kwargs):
            kwargs.setdefault("use_libuv", False)
            super().__init__(*args, **kwargs)

    # The modules that make stores: by attribute (dist.TCPStore) or imported by name.
    for module in (dist, rendezvous, c10d_rendezvous_backend):
        module.TCPStore = TCPStore
