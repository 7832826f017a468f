// RUN: attnc-opt --show-dialects | FileCheck %s
// RUN: attnc-opt --show-dialects | FileCheck %s --check-prefix=ARITH
// RUN: attnc-opt --show-dialects | FileCheck %s --check-prefix=FUNC

// Tests that attnc-opt registers the attn dialect (a whole name of the
// comma-separated list), and the arith and func dialects its IR is built
// with.
// CHECK: Available Dialects:{{.*[ ,]attn(,|$)}}
// ARITH: Available Dialects:{{.*[ ,]arith(,|$)}}
// FUNC: Available Dialects:{{.*[ ,]func(,|$)}}
