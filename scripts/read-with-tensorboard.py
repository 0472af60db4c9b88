"""Reads run directories' event files with TensorBoard's own loader, as its server does.

Not a test (TensorBoard is no dependency of this repository): a check a person runs where
`pip install tensorboard` works, to see that every summary lands in the dashboard it is meant for.

    python scripts/read-with-tensorboard.py runs/kv-rl runs/PIPE/systems/*/

Prints, per directory, the tags of each TensorBoard plugin (scalars, histograms, text) and the
last value of the first tag of each.
"""

import sys

from tensorboard.backend.event_processing import plugin_event_accumulator as pea
from tensorboard.util import tensor_util


def main(dirs: list[str]) -> None:
    for d in dirs:
        acc = pea.EventAccumulator(d, size_guidance={"tensors": 0})
        acc.Reload()
        print(d)
        for plugin in sorted(acc.ActivePlugins()):
            tags = sorted(acc.PluginTagToContent(plugin))
            if not tags:
                continue
            last = acc.Tensors(tags[0])[-1]
            value = tensor_util.make_ndarray(last.tensor_proto)
            shown = repr(value.item() if value.shape == () else value.shape)[:80]
            print(f"  {plugin}: {len(tags)} tags; {tags[0]} at step {last.step}: {shown}")


if __name__ == "__main__":
    main(sys.argv[1:])
