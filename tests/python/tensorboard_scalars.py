"""Every scalar TensorBoard's own reader finds in a log directory, as JSON.

Usage: python tensorboard_scalars.py LOGDIR OUT.json
Writes {"file_version": 2.0, "tags": {tag: [[step, value], ...]}} to OUT.json. The directory is
read with tensorboard.backend.event_processing.event_accumulator.EventAccumulator keeping every
event (size_guidance 0), with its purge of orphaned data (a SessionLog START drops what earlier
files logged at steps >= its step), as `tensorboard --logdir` shows it.
"""

import json
import sys

from tensorboard.backend.event_processing import event_accumulator


def main():
    acc = event_accumulator.EventAccumulator(
        sys.argv[1], size_guidance={event_accumulator.SCALARS: 0})
    acc.Reload()
    tags = {}
    for tag in acc.Tags()["scalars"]:
        tags[tag] = [[e.step, e.value] for e in acc.Scalars(tag)]
    with open(sys.argv[2], "w") as f:
        json.dump({"file_version": acc.file_version, "tags": tags}, f)


if __name__ == "__main__":
    main()
