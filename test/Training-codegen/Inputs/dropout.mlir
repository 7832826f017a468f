// Seeded dropout and attention dropout; the seed is an ordinary input here
// (not `attn.seed`) so that the binary's `forward` command can pass it.

func.func @dropout(%x: tensor<?x37xf32> {attn.name = "x", attn.dims = ["N", ""]}, %seed: tensor<i64> {attn.name = "seed"}) -> tensor<?x37xf32> {
  %0 = attn.dropout %x rate 2.500000e-01 seed %seed stream 3 : tensor<?x37xf32>
  return %0 : tensor<?x37xf32>
}

func.func @attention(%q: tensor<?x2x?x16xf32> {attn.name = "q", attn.dims = ["B", "", "T", ""]}, %k: tensor<?x2x?x16xf32> {attn.name = "k", attn.dims = ["B", "", "S", ""]}, %v: tensor<?x2x?x16xf32> {attn.name = "v", attn.dims = ["B", "", "S", ""]}, %do: tensor<?x2x?x16xf32> {attn.name = "do", attn.dims = ["B", "", "T", ""]}, %pad: tensor<?x?xi1> {attn.name = "pad", attn.dims = ["B", "S"]}, %seed: tensor<i64> {attn.name = "seed"}) -> (tensor<?x2x?x16xf32>, tensor<?x2x?x16xf32>, tensor<?x2x?x16xf32>, tensor<?x2x?x16xf32>) {
  %o = attn.sdpa %q, %k, %v key_padding %pad mask causal dropout 2.000000e-01 seed %seed stream 5 : (tensor<?x2x?x16xf32>, tensor<?x2x?x16xf32>, tensor<?x2x?x16xf32>, tensor<?x?xi1>, tensor<i64>) -> tensor<?x2x?x16xf32>
  %dq, %dk, %dv = attn.sdpa_grad %q, %k, %v, %o, %do key_padding %pad mask causal dropout 2.000000e-01 seed %seed stream 5 : (tensor<?x2x?x16xf32>, tensor<?x2x?x16xf32>, tensor<?x2x?x16xf32>, tensor<?x2x?x16xf32>, tensor<?x2x?x16xf32>, tensor<?x?xi1>, tensor<i64>) -> (tensor<?x2x?x16xf32>, tensor<?x2x?x16xf32>, tensor<?x2x?x16xf32>)
  return %o, %dq, %dk, %dv : tensor<?x2x?x16xf32>, tensor<?x2x?x16xf32>, tensor<?x2x?x16xf32>, tensor<?x2x?x16xf32>
}
