"""The header and `info` state the same arena figures for every entry."""
import re
import sys

header = open(sys.argv[1]).read()
info = open(sys.argv[2]).read()
in_header = re.findall(r"/\* (\w+)\(.*\n \* Activations: (\d+) bytes at batch 1"
                       r" and the model's bounds, \+ (\d+)", header)
in_info = re.findall(r"  (\w+)\(.*\n    activations: (\d+) bytes at batch 1 "
                     r"and the model's bounds, \+ (\d+)", info)
assert in_header, "no activation figures in the header"
assert in_header == in_info, (in_header, in_info)
forward = dict((name, int(fixed) + int(per)) for name, fixed, per in in_header)
# A step of the cache holds one position: far less than a whole sequence.
assert forward["decode_step"] * 8 < forward["forward"], forward
print("ok", in_header)
