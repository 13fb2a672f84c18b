// CUDA emulation (a logic check, not a device run): what the cuDNN shim's
// files share (emu_cudnn.cpp: descriptors, attributes, heuristics, plans;
// emu_cudnn_graph.cpp: the graph's checks, the fused attention patterns and
// the reference execution). Not seen by the programs.
#ifndef FOLDNORM_EMU_CUDNN_INTERNAL_H
#define FOLDNORM_EMU_CUDNN_INTERNAL_H

#include <memory>
#include <string>
#include <vector>

#include "cudnn.h"

namespace emu_cudnn {

// a finalized tensor descriptor's values
struct Tensor {
    int64_t uid = 0;
    cudnnDataType_t type = CUDNN_DATA_FLOAT;
    std::vector<int64_t> dims, strides;
    int64_t alignment = 0;
    bool is_virtual = false, by_value = false;
    int64_t elements() const;
    int64_t span() const; // 1 + the largest element offset
    std::string describe() const; // "uid 1 BFLOAT16 dims [..] strides [..]"
};

enum OpKind { OP_MATMUL, OP_POINTWISE, OP_REDUCTION, OP_RESHAPE };

// a finalized operation: its tensors copied, its mode
struct Op {
    OpKind kind = OP_MATMUL;
    int mode = 0; // cudnnPointwiseMode_t or cudnnReduceTensorOp_t
    cudnnDataType_t precision = CUDNN_DATA_FLOAT;
    int64_t axis = -1;                   // GEN_INDEX
    std::vector<Tensor> inputs;          // matmul A, B; pointwise X[, B[, T]]; reduction/reshape X
    Tensor output;                       // matmul C, pointwise/reduction/reshape Y
    std::string name() const;            // "MATMUL", "POINTWISE SUB", "REDUCTION MAX", "RESHAPE"
};

// a finalized operation graph
struct Graph {
    cudnnHandle_t handle = nullptr;
    std::vector<Op> ops;                 // in dataflow order
    std::vector<Tensor> tensors;         // every non-virtual tensor, by first appearance
    std::vector<Tensor> written;         // the non-virtual tensors an operation writes
};

// the last refusal's message (cudnnGetLastErrorString); refuse prints it and returns s
cudnnStatus_t refuse(cudnnStatus_t s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void set_last_error(const std::string &message);

const char *data_type_name(cudnnDataType_t t);
const char *pointwise_mode_name(int mode);
size_t data_type_bytes(cudnnDataType_t t); // 0: not emulated

// operation graph finalize: every virtual tensor produced once and consumed,
// non-virtual ones written at most once, the operations in dataflow order;
// fills g.tensors and g.written
cudnnStatus_t check_graph(Graph &g);
// what the heuristics see: "" when a fused attention engine takes the graph
// (*backward set), else why none does
std::string attention_engine_problem(const Graph &g, bool *backward);
// the plan's workspace (a size of the emulator's choosing, to exercise the caller's)
int64_t attention_workspace_bytes(const Graph &g, bool backward);
// execute: the variant pack's uids and pointers, the workspace of `workspace_bytes`;
// nondeterministic: the plan's engine carries CUDNN_NUMERICAL_NOTE_NONDETERMINISTIC
// (its bf16 products then differ from execute to execute in the last bit)
cudnnStatus_t execute_graph(const Graph &g, const std::vector<int64_t> &uids,
                            const std::vector<void *> &pointers, void *workspace,
                            int64_t workspace_bytes, bool nondeterministic);

} // namespace emu_cudnn

#endif
