"""Every variant's median per case of a `kiln run --variant all` log, as a table (us; * the rule's pick).

    python3 table.py call1/short.txt 0,3,4,7,10,11,14,17,19,22,23,25,26,29"""
import re
import sys

cases = {}
cur=None
for line in open(sys.argv[1]):
    if line.startswith('== '):
        cur=line.split()[1]+' '+line.split()[2]; cases[cur]={}
    m=re.match(r'\s+v(\d+)(\*?)\s',line)
    if m and cur:
        f=line.split(); cases[cur][int(m.group(1))]=(float(f[-3]),m.group(2)=='*')
vs=[int(x) for x in sys.argv[2].split(',')]
print('case'.ljust(30)+''.join(f'v{v}'.rjust(7) for v in vs))
for c,d in cases.items():
    print(c.ljust(30)+''.join((f'{d[v][0]:.1f}'+('*' if d[v][1] else ' ')).rjust(7) if v in d else '   -   ' for v in vs))
