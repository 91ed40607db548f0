#!/usr/bin/env python3
"""Apply the import and device patches listed in README.md to a checkout of harshv834/sr-fca.

Only imports and the device are changed; every replaced line is checked to be the expected one
first, so the script refuses any other commit.
"""

import sys

ROOT = sys.argv[1]
PATCHES = [
    # the module is not in the repository; the linear path does not use FedDrift
    ("src/clustering/__init__.py", "from .feddrift import FedDrift\n",
     "# from .feddrift import FedDrift  (patched: the module is not in the repository)\n"),
    ("src/clustering/__init__.py", '                   "feddrift": FedDrift,\n',
     '                   # "feddrift": FedDrift,  (patched: see the import above)\n'),
    # device: CPU instead of the first GPU
    ("src/utils.py", "        model = model.cuda()\n", "        model = model.to(device)  # patched: was model.cuda()\n"),
    ("src/utils.py", "    num_devices = torch.cuda.device_count()\n",
     "    return \"cpu\"  # patched: CPU instead of cuda:0\n    num_devices = torch.cuda.device_count()\n"),
]

for rel, before, after in PATCHES:
    path = f"{ROOT}/{rel}"
    text = open(path).read()
    if text.count(before) != 1:
        sys.exit(f"{rel}: expected exactly one {before!r}")
    open(path, "w").write(text.replace(before, after))
    print(f"patched {rel}: {before.strip()!r} -> {after.strip()!r}")
