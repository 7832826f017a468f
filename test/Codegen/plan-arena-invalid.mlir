// RUN: attnc-opt %s --split-input-file --attn-plan-arena --verify-diagnostics

// Tests that an arena argument of another type than the ABI's is an error.
// expected-error @below {{the activation arena argument must be memref<?xi8>, not 'memref<?xf32>'}}
func.func @arena_of_floats(%arena: memref<?xf32> {attn.arena},
                           %need: memref<i64> {attn.arena_need}) {
  return
}

// -----

// Tests that the size argument must be a rank-0 i64 buffer.
// expected-error @below {{the arena size argument must be memref<i64>, not 'memref<1xi64>'}}
func.func @need_of_rank_one(%arena: memref<?xi8> {attn.arena},
                            %need: memref<1xi64> {attn.arena_need}) {
  return
}
