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
largest = [int(re.search(r"#define CHAR_GPT_ARENA_BYTES%s (\d+)LL" % suffix,
                         header).group(1)) for suffix in ("", "_PER_BATCH")]
assert largest == [max(int(f[i]) for f in in_header) for i in (1, 2)], largest
forward = dict((name, int(fixed) + int(per)) for name, fixed, per in in_header)
# A step of the cache holds one position: far less than a whole sequence.
assert forward["decode_step"] * 8 < forward["forward"], forward
print("ok", in_header)
