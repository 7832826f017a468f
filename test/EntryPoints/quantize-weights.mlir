// RUN: attnc-opt %s --split-input-file --attn-quantize-weights=format=int8 | FileCheck %s --check-prefix=INT8
// RUN: attnc-opt %s --split-input-file --attn-quantize-weights=format=bf16 | FileCheck %s --check-prefix=BF16
// RUN: attnc-opt %s --split-input-file --attn-quantize-weights=format=f32 | FileCheck %s --check-prefix=F32
// RUN: attnc-opt %s --split-input-file --attn-quantize-weights=format=int8 --attn-bind-params | FileCheck %s --check-prefix=BOUND
// RUN: not attnc-opt %s --split-input-file --attn-quantize-weights=format=int4 2>&1 | FileCheck %s --check-prefix=BAD

// Tests that a linear layer's weight and a tied output embedding
// (matmul with the transposed parameter, as a linear) read the
// low-precision copy, while the embedding's gather and a weight whose rows
// are not whole blocks (K = 40) stay f32; parameters with a copy are
// marked, the module carries the format and block.
// INT8: module attributes {attn.weight_block = 32 : i64, attn.weight_format = "int8"}
// INT8: attn.param @emb : tensor<16x64xf32> init normal [0.000000e+00, 2.000000e-02] {attn.low_precision}
// INT8: attn.param @fc : tensor<64x64xf32> init ones [] {attn.low_precision}
// INT8: attn.param @odd : tensor<8x40xf32> init ones []{{$}}
// INT8-LABEL: func.func @forward
// INT8: %[[E:.*]] = attn.get_param @emb : tensor<16x64xf32>
// INT8: %[[EQ:.*]] = attn.get_param @emb weights : tensor<16x64xi8>
// INT8: %[[ES:.*]] = attn.get_param @emb weight_scales : tensor<16x2xf32>
// INT8: %[[EW:.*]] = attn.dequantize %[[EQ]], %[[ES]]
// INT8: attn.gather %[[E]]
// INT8: %[[Q:.*]] = attn.get_param @fc weights : tensor<64x64xi8>
// INT8: %[[S:.*]] = attn.get_param @fc weight_scales : tensor<64x2xf32>
// INT8: %[[W:.*]] = attn.dequantize %[[Q]], %[[S]] : (tensor<64x64xi8>, tensor<64x2xf32>) -> tensor<64x64xf32>
// INT8: attn.linear %{{.*}}, %[[W]] :
// INT8: %[[O:.*]] = attn.get_param @odd : tensor<8x40xf32>
// INT8: attn.linear %{{.*}}, %[[O]] :
// INT8: attn.linear %{{.*}}, %[[EW]] : (tensor<?x?x64xf32>, tensor<16x64xf32>) -> tensor<?x?x16xf32>
// INT8-NOT: attn.matmul

// BF16: module attributes {attn.weight_block = 0 : i64, attn.weight_format = "bf16"}
// BF16: attn.param @odd : tensor<8x40xf32> init ones []{{$}}
// BF16: %[[Q:.*]] = attn.get_param @fc weights : tensor<64x64xbf16>
// BF16: attn.dequantize %[[Q]] : (tensor<64x64xbf16>) -> tensor<64x64xf32>

// F32-NOT: attn.weight_format
// F32-NOT: attn.dequantize

// Tests that the copies are bound from the weights and scales buffers,
// after the parameters, in table order: emb's 1024 values and 32 scales,
// then fc's.
// BOUND-LABEL: func.func @forward
// BOUND-SAME: %{{[^:]*}}: tensor<?xf32> {attn.params, bufferization.writable = false}
// BOUND-SAME: %[[WB:[^:]*]]: tensor<?xi8> {attn.weights, bufferization.writable = false}
// BOUND-SAME: %[[SB:[^:]*]]: tensor<?xf32> {attn.weight_scales, bufferization.writable = false}
// BOUND: tensor.extract_slice %[[WB]][1024] [4096] [1] : tensor<?xi8> to tensor<4096xi8>
// BOUND: tensor.extract_slice %[[SB]][32] [128] [1] : tensor<?xf32> to tensor<128xf32>

// BAD: format 'int4' or block 32 is not one of f32, bf16, int8 with a positive block
module {
  attn.param @emb : tensor<16x64xf32> init normal [0.0, 0.02]
  attn.param @fc : tensor<64x64xf32> init ones []
  attn.param @odd : tensor<8x40xf32> init ones []
  func.func @forward(%tokens: tensor<?x?xi32>, %x: tensor<?x?x40xf32>) -> (tensor<?x?x16xf32>, tensor<?x?x8xf32>) {
    %emb = attn.get_param @emb : tensor<16x64xf32>
    %h = attn.gather %emb, %tokens : (tensor<16x64xf32>, tensor<?x?xi32>) -> tensor<?x?x64xf32>
    %fc = attn.get_param @fc : tensor<64x64xf32>
    %y = attn.linear %h, %fc : (tensor<?x?x64xf32>, tensor<64x64xf32>) -> tensor<?x?x64xf32>
    %odd = attn.get_param @odd : tensor<8x40xf32>
    %z = attn.linear %x, %odd : (tensor<?x?x40xf32>, tensor<8x40xf32>) -> tensor<?x?x8xf32>
    %t = attn.transpose %emb, [1, 0] : (tensor<16x64xf32>) -> tensor<64x16xf32>
    %logits = attn.matmul %y, %t : (tensor<?x?x64xf32>, tensor<64x16xf32>) -> tensor<?x?x16xf32>
    return %logits, %z : tensor<?x?x16xf32>, tensor<?x?x8xf32>
  }
}
