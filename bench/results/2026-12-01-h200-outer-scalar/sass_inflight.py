#!/usr/bin/env python3
"""Loads in flight in a kernel's SASS (cuobjdump -sass output on stdin): walking the code in
order, the most global loads (LDG) issued whose destination registers no instruction has read
yet. ptxas decides it; a low count in the main loop of a memory-bound kernel means its loads
wait on one another. Prints, per function (cuobjdump's "Function :" sections): name, max_in_flight, loads."""
import re, sys

width = {'U8': 1, 'S8': 1, 'U16': 1, 'S16': 1, '64': 2, '128': 4}
name, pending, best, loads = None, {}, 0, 0


def report():
    if name:
        print(name, best, loads)


for line in sys.stdin:
    f = re.search(r'Function : (\S+)', line)
    if f:
        report()
        name, pending, best, loads = f.group(1), {}, 0, 0
        continue
    m = re.search(r'/\*[0-9a-f]{4}\*/\s+(@!?U?P\w+\s+)?([A-Z0-9_.]+)\s*([^;]*);', line)
    if not m:
        continue
    op, args = m.group(2), m.group(3)
    regs = [int(r) for r in re.findall(r'\bR(\d+)\b', args)]
    if op.startswith('LDG'):
        n = 1
        for suffix, w in width.items():
            if '.' + suffix in op:
                n = w
        srcs = regs[1:]
        for r in srcs:
            pending.pop(r, None)
        for k in range(n):
            pending[regs[0] + k] = loads
        loads += 1
        best = max(best, len(set(pending.values())))
        continue
    srcs = regs[1:] if regs else []
    dst = regs[0] if regs else None
    # A read of a pending register (as a source) waits for its load; a write kills it.
    for r in srcs:
        pending.pop(r, None)
    if op.startswith(('ST', 'BAR', 'BRA', 'EXIT', 'RET')):
        pass
    if dst is not None and dst in pending and not op.startswith(('ST',)):
        # the destination is overwritten only after its load completed and was used
        pending.pop(dst, None)
report()
