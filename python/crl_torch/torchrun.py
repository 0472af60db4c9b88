"""`python3 -m crl_torch.torchrun ...`: torchrun (torch.distributed.run), with the fix it needs on
Debian's torch 1.13 under Python 3.11.

That torch parses --redirects / --tee by iterating its Std IntFlag, and Python 3.11 no longer
yields the flag's zero and combined members when iterating, so the default "0" parses to None
and every launch fails with "'NoneType' object has no attribute 'get'". Where the parse works
(newer torch, older Python), this is torchrun unchanged.
"""

import re
import sys

from torch.distributed.elastic.multiprocessing import api
from torch.distributed.run import main


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
    sys.exit(main())
