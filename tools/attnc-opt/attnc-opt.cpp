//===- attnc-opt.cpp - The mlir-opt of attnc ------------------------------===//
//
// Runs any pass or pipeline of the project on MLIR input, with every project
// dialect registered: for lit tests and for replaying a stage of attnc.
//
//===----------------------------------------------------------------------===//

#include "attn/InitAll.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"

int main(int argc, char **argv) {
  mlir::DialectRegistry registry;
  attn::registerAllDialects(registry);
  attn::registerAllPasses();
  return mlir::asMainReturnCode(mlir::MlirOptMain(
      argc, argv, "attnc optimizer driver\n", registry));
}
