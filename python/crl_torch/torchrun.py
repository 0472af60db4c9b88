"""`python3 -m crl_torch.torchrun ...`: torchrun (torch.distributed.run), with the fixes Debian's
torches need.

Debian 12's torch 1.13 parses --redirects / --tee by iterating its Std IntFlag, and Python 3.11
no longer yields the flag's zero and combined members when iterating, so the default "0" parses
to None and every launch fails with "'NoneType' object has no attribute 'get'".

Debian trixie's torch 2.6 is built without libuv, while its TCPStore asks for libuv by default:
the c10d rendezvous fails with "use_libuv was requested but PyTorch was build without libuv
support". tcp_store.py makes every store without libuv where it is missing (the workers, which
import crl_torch, do the same).

Where neither applies (other torches), this is torchrun unchanged.
"""

import re
import sys

from torch.distributed.elastic.multiprocessing import api
from torch.distributed.run import main

from .tcp_store import without_libuv_where_missing


def _fix_std_parse():
    std = api.Std
    if std.from_str("0") is not None:
        return
    original = std.from_str.__func__

    def from_str(cls, vm):
        if re.match(api._VALUE_REGEX, vm):
            return cls(int(vm))
        if re.match(api._MAPPING_REGEX, vm):
            return {int(i): cls(int(v)) for i, v in (m.split(":") for m in vm.split(","))}
        return original(cls, vm)  # raises its own error for a malformed value

    std.from_str = classmethod(from_str)


if __name__ == "__main__":
    _fix_std_parse()
    without_libuv_where_missing()
    sys.exit(main())
