// CUDA emulation (a logic check, not a device run): cuDNN's backend API as
// descriptors that record their attributes. SetAttribute checks that the
// attribute belongs to the descriptor, its type and element count, and that
// a descriptor-valued one is a live, finalized descriptor of the right kind;
// Finalize checks the required attributes and the values (tensor shapes and
// strides, operation arity, broadcasting, matmul and reduction shapes, data
// types), the graph's dataflow (emu_cudnn_graph.cpp); the heuristics offer
// engines only for the fused attention patterns within their support
// surface; Execute checks the variant pack and runs the graph as
// double-precision reference arithmetic. A refusal returns a BAD_PARAM or
// NOT_SUPPORTED status and prints (and keeps, for cudnnGetLastErrorString)
// a message naming the descriptor, the attribute and the problem.
// EMU_CUDNN_NONDETERMINISTIC=1 and EMU_CUDNN_DECLINE=1 (below) play a GPU
// without a deterministic backward engine and engines that decline their plans.
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <algorithm>
#include <map>
#include <mutex>
#include <set>

#include "emu_cudnn_internal.h"
#include "emu_internal.h"

struct emu_cudnn_context {
    int magic;
    cudaStream_t stream;
};

namespace emu_cudnn {
namespace {

thread_local std::string last_error;

struct Attr {
    cudnnBackendAttributeType_t type;
    int64_t count;
    std::vector<uint8_t> bytes;
};

struct Desc;
// an engine config or engine the heuristics handed out: its graph and index
struct Engine {
    std::shared_ptr<Graph> graph;
    bool backward = false;
    int64_t index = 0;
    bool deterministic = true;
};

struct Desc {
    cudnnBackendDescriptorType_t type;
    bool finalized = false;
    std::map<int, Attr> attrs;
    Tensor tensor;                  // TENSOR
    Op op;                          // the operation descriptors, and POINTWISE/MATMUL/REDUCTION's mode
    std::shared_ptr<Graph> graph;   // OPERATIONGRAPH
    std::vector<Engine> results;    // ENGINEHEUR
    Engine engine;                  // ENGINECFG, ENGINE, EXECUTION_PLAN
    int64_t workspace_bytes = 0;    // EXECUTION_PLAN
    cudnnHandle_t handle = nullptr; // EXECUTION_PLAN
};

std::mutex live_mutex;
std::set<const void *> live; // descriptors created and not destroyed

const char *desc_name(int t) {
    switch (t) {
    case CUDNN_BACKEND_POINTWISE_DESCRIPTOR: return "CUDNN_BACKEND_POINTWISE_DESCRIPTOR";
    case CUDNN_BACKEND_ENGINE_DESCRIPTOR: return "CUDNN_BACKEND_ENGINE_DESCRIPTOR";
    case CUDNN_BACKEND_ENGINECFG_DESCRIPTOR: return "CUDNN_BACKEND_ENGINECFG_DESCRIPTOR";
    case CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR: return "CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR";
    case CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR: return "CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR";
    case CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR: return "CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR";
    case CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR: return "CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR";
    case CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR: return "CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR";
    case CUDNN_BACKEND_TENSOR_DESCRIPTOR: return "CUDNN_BACKEND_TENSOR_DESCRIPTOR";
    case CUDNN_BACKEND_MATMUL_DESCRIPTOR: return "CUDNN_BACKEND_MATMUL_DESCRIPTOR";
    case CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR: return "CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR";
    case CUDNN_BACKEND_REDUCTION_DESCRIPTOR: return "CUDNN_BACKEND_REDUCTION_DESCRIPTOR";
    case CUDNN_BACKEND_OPERATION_REDUCTION_DESCRIPTOR: return "CUDNN_BACKEND_OPERATION_REDUCTION_DESCRIPTOR";
    case CUDNN_BACKEND_OPERATION_RESHAPE_DESCRIPTOR: return "CUDNN_BACKEND_OPERATION_RESHAPE_DESCRIPTOR";
    case CUDNN_BACKEND_OPERATION_SDPA_FWD_DESCRIPTOR: return "CUDNN_BACKEND_OPERATION_SDPA_FWD_DESCRIPTOR";
    case CUDNN_BACKEND_OPERATION_SDPA_BWD_DESCRIPTOR: return "CUDNN_BACKEND_OPERATION_SDPA_BWD_DESCRIPTOR";
    default: return "an unknown descriptor type";
    }
}

const char *type_name(int t) {
    switch (t) {
    case CUDNN_TYPE_HANDLE: return "CUDNN_TYPE_HANDLE";
    case CUDNN_TYPE_DATA_TYPE: return "CUDNN_TYPE_DATA_TYPE";
    case CUDNN_TYPE_BOOLEAN: return "CUDNN_TYPE_BOOLEAN";
    case CUDNN_TYPE_INT64: return "CUDNN_TYPE_INT64";
    case CUDNN_TYPE_FLOAT: return "CUDNN_TYPE_FLOAT";
    case CUDNN_TYPE_DOUBLE: return "CUDNN_TYPE_DOUBLE";
    case CUDNN_TYPE_VOID_PTR: return "CUDNN_TYPE_VOID_PTR";
    case CUDNN_TYPE_HEUR_MODE: return "CUDNN_TYPE_HEUR_MODE";
    case CUDNN_TYPE_NUMERICAL_NOTE: return "CUDNN_TYPE_NUMERICAL_NOTE";
    case CUDNN_TYPE_POINTWISE_MODE: return "CUDNN_TYPE_POINTWISE_MODE";
    case CUDNN_TYPE_BACKEND_DESCRIPTOR: return "CUDNN_TYPE_BACKEND_DESCRIPTOR";
    case CUDNN_TYPE_REDUCTION_OPERATOR_TYPE: return "CUDNN_TYPE_REDUCTION_OPERATOR_TYPE";
    case CUDNN_TYPE_BEHAVIOR_NOTE: return "CUDNN_TYPE_BEHAVIOR_NOTE";
    default: return "an unknown attribute type";
    }
}

size_t type_bytes(cudnnBackendAttributeType_t t) {
    switch (t) {
    case CUDNN_TYPE_HANDLE: case CUDNN_TYPE_VOID_PTR: case CUDNN_TYPE_BACKEND_DESCRIPTOR: return sizeof(void *);
    case CUDNN_TYPE_BOOLEAN: return sizeof(bool);
    case CUDNN_TYPE_INT64: return sizeof(int64_t);
    case CUDNN_TYPE_FLOAT: return sizeof(float);
    case CUDNN_TYPE_DOUBLE: return sizeof(double);
    default: return sizeof(int); // the enum-valued types
    }
}

// what cuDNN documents for each attribute of each descriptor the shim emulates
const int ANY_OPERATION = -2, NO_DESCRIPTOR = -1;
struct AttrSpec {
    int desc;
    int name;
    const char *attr_name;
    cudnnBackendAttributeType_t type;
    int64_t min_count, max_count;
    bool required;
    int descriptor_type; // for CUDNN_TYPE_BACKEND_DESCRIPTOR values
};
#define SPEC(d, a, t, lo, hi, req, dt) \
    {CUDNN_BACKEND_##d##_DESCRIPTOR, CUDNN_ATTR_##a, "CUDNN_ATTR_" #a, CUDNN_TYPE_##t, lo, hi, req, dt}
const AttrSpec SPECS[] = {
    SPEC(TENSOR, TENSOR_DATA_TYPE, DATA_TYPE, 1, 1, true, NO_DESCRIPTOR),
    SPEC(TENSOR, TENSOR_DIMENSIONS, INT64, 1, 8, true, NO_DESCRIPTOR),
    SPEC(TENSOR, TENSOR_STRIDES, INT64, 1, 8, true, NO_DESCRIPTOR),
    SPEC(TENSOR, TENSOR_UNIQUE_ID, INT64, 1, 1, true, NO_DESCRIPTOR),
    SPEC(TENSOR, TENSOR_BYTE_ALIGNMENT, INT64, 1, 1, true, NO_DESCRIPTOR),
    SPEC(TENSOR, TENSOR_IS_VIRTUAL, BOOLEAN, 1, 1, false, NO_DESCRIPTOR),
    SPEC(TENSOR, TENSOR_IS_BY_VALUE, BOOLEAN, 1, 1, false, NO_DESCRIPTOR),
    SPEC(POINTWISE, POINTWISE_MODE, POINTWISE_MODE, 1, 1, true, NO_DESCRIPTOR),
    SPEC(POINTWISE, POINTWISE_MATH_PREC, DATA_TYPE, 1, 1, true, NO_DESCRIPTOR),
    SPEC(POINTWISE, POINTWISE_AXIS, INT64, 1, 1, false, NO_DESCRIPTOR),
    SPEC(MATMUL, MATMUL_COMP_TYPE, DATA_TYPE, 1, 1, true, NO_DESCRIPTOR),
    SPEC(REDUCTION, REDUCTION_OPERATOR, REDUCTION_OPERATOR_TYPE, 1, 1, true, NO_DESCRIPTOR),
    SPEC(REDUCTION, REDUCTION_COMP_TYPE, DATA_TYPE, 1, 1, true, NO_DESCRIPTOR),
    SPEC(OPERATION_POINTWISE, OPERATION_POINTWISE_PW_DESCRIPTOR, BACKEND_DESCRIPTOR, 1, 1, true,
         CUDNN_BACKEND_POINTWISE_DESCRIPTOR),
    SPEC(OPERATION_POINTWISE, OPERATION_POINTWISE_XDESC, BACKEND_DESCRIPTOR, 1, 1, true,
         CUDNN_BACKEND_TENSOR_DESCRIPTOR),
    SPEC(OPERATION_POINTWISE, OPERATION_POINTWISE_BDESC, BACKEND_DESCRIPTOR, 1, 1, false,
         CUDNN_BACKEND_TENSOR_DESCRIPTOR),
    SPEC(OPERATION_POINTWISE, OPERATION_POINTWISE_TDESC, BACKEND_DESCRIPTOR, 1, 1, false,
         CUDNN_BACKEND_TENSOR_DESCRIPTOR),
    SPEC(OPERATION_POINTWISE, OPERATION_POINTWISE_YDESC, BACKEND_DESCRIPTOR, 1, 1, true,
         CUDNN_BACKEND_TENSOR_DESCRIPTOR),
    SPEC(OPERATION_MATMUL, OPERATION_MATMUL_ADESC, BACKEND_DESCRIPTOR, 1, 1, true,
         CUDNN_BACKEND_TENSOR_DESCRIPTOR),
    SPEC(OPERATION_MATMUL, OPERATION_MATMUL_BDESC, BACKEND_DESCRIPTOR, 1, 1, true,
         CUDNN_BACKEND_TENSOR_DESCRIPTOR),
    SPEC(OPERATION_MATMUL, OPERATION_MATMUL_CDESC, BACKEND_DESCRIPTOR, 1, 1, true,
         CUDNN_BACKEND_TENSOR_DESCRIPTOR),
    SPEC(OPERATION_MATMUL, OPERATION_MATMUL_DESC, BACKEND_DESCRIPTOR, 1, 1, true,
         CUDNN_BACKEND_MATMUL_DESCRIPTOR),
    SPEC(OPERATION_REDUCTION, OPERATION_REDUCTION_XDESC, BACKEND_DESCRIPTOR, 1, 1, true,
         CUDNN_BACKEND_TENSOR_DESCRIPTOR),
    SPEC(OPERATION_REDUCTION, OPERATION_REDUCTION_YDESC, BACKEND_DESCRIPTOR, 1, 1, true,
         CUDNN_BACKEND_TENSOR_DESCRIPTOR),
    SPEC(OPERATION_REDUCTION, OPERATION_REDUCTION_DESC, BACKEND_DESCRIPTOR, 1, 1, true,
         CUDNN_BACKEND_REDUCTION_DESCRIPTOR),
    SPEC(OPERATION_RESHAPE, OPERATION_RESHAPE_XDESC, BACKEND_DESCRIPTOR, 1, 1, true,
         CUDNN_BACKEND_TENSOR_DESCRIPTOR),
    SPEC(OPERATION_RESHAPE, OPERATION_RESHAPE_YDESC, BACKEND_DESCRIPTOR, 1, 1, true,
         CUDNN_BACKEND_TENSOR_DESCRIPTOR),
    SPEC(OPERATIONGRAPH, OPERATIONGRAPH_HANDLE, HANDLE, 1, 1, true, NO_DESCRIPTOR),
    SPEC(OPERATIONGRAPH, OPERATIONGRAPH_OPS, BACKEND_DESCRIPTOR, 1, 64, true, ANY_OPERATION),
    SPEC(ENGINEHEUR, ENGINEHEUR_OPERATION_GRAPH, BACKEND_DESCRIPTOR, 1, 1, true,
         CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR),
    SPEC(ENGINEHEUR, ENGINEHEUR_MODE, HEUR_MODE, 1, 1, true, NO_DESCRIPTOR),
    SPEC(EXECUTION_PLAN, EXECUTION_PLAN_HANDLE, HANDLE, 1, 1, true, NO_DESCRIPTOR),
    SPEC(EXECUTION_PLAN, EXECUTION_PLAN_ENGINE_CONFIG, BACKEND_DESCRIPTOR, 1, 1, true,
         CUDNN_BACKEND_ENGINECFG_DESCRIPTOR),
    SPEC(VARIANT_PACK, VARIANT_PACK_UNIQUE_IDS, INT64, 0, 1024, true, NO_DESCRIPTOR),
    SPEC(VARIANT_PACK, VARIANT_PACK_DATA_POINTERS, VOID_PTR, 0, 1024, true, NO_DESCRIPTOR),
    SPEC(VARIANT_PACK, VARIANT_PACK_WORKSPACE, VOID_PTR, 1, 1, false, NO_DESCRIPTOR),
};
#undef SPEC

const AttrSpec *find_spec(int desc, int name) {
    for (const AttrSpec &s : SPECS) {
        if (s.desc == desc && s.name == name) return &s;
    }
    return nullptr;
}

// a name for any attribute the shim knows, for messages
std::string attr_name(int name) {
    for (const AttrSpec &s : SPECS) {
        if (s.name == name) return s.attr_name;
    }
    return "attribute " + std::to_string(name);
}

bool is_operation(int t) {
    return t == CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR ||
           t == CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR ||
           t == CUDNN_BACKEND_OPERATION_REDUCTION_DESCRIPTOR ||
           t == CUDNN_BACKEND_OPERATION_RESHAPE_DESCRIPTOR;
}

Desc *live_desc(const void *p) {
    std::lock_guard<std::mutex> lock(live_mutex);
    return live.count(p) ? (Desc *)p : nullptr;
}

const Attr *get(const Desc *d, int name) {
    auto it = d->attrs.find(name);
    return it == d->attrs.end() ? nullptr : &it->second;
}
template <typename T> T scalar(const Desc *d, int name, T fallback) {
    const Attr *a = get(d, name);
    if (a == nullptr) return fallback;
    T v;
    memcpy(&v, a->bytes.data(), sizeof(T));
    return v;
}
template <typename T> std::vector<T> array(const Desc *d, int name) {
    const Attr *a = get(d, name);
    std::vector<T> v;
    if (a != nullptr) {
        v.resize((size_t)a->count);
        if (a->count > 0) memcpy(v.data(), a->bytes.data(), (size_t)a->count * sizeof(T));
    }
    return v;
}
Desc *desc_attr(const Desc *d, int name) { return scalar<Desc *>(d, name, nullptr); }

cudnnStatus_t check_required(const Desc *d) {
    for (const AttrSpec &s : SPECS) {
        if (s.desc == (int)d->type && s.required && get(d, s.name) == nullptr) {
            return refuse(CUDNN_STATUS_BAD_PARAM,
                          "cudnnBackendFinalize(%s): the required attribute %s is not set",
                          desc_name(d->type), s.attr_name);
        }
    }
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t finalize_tensor(Desc *d) {
    Tensor &t = d->tensor;
    t.type = scalar<cudnnDataType_t>(d, CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_DATA_FLOAT);
    t.dims = array<int64_t>(d, CUDNN_ATTR_TENSOR_DIMENSIONS);
    t.strides = array<int64_t>(d, CUDNN_ATTR_TENSOR_STRIDES);
    t.uid = scalar<int64_t>(d, CUDNN_ATTR_TENSOR_UNIQUE_ID, 0);
    t.alignment = scalar<int64_t>(d, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, 0);
    t.is_virtual = scalar<bool>(d, CUDNN_ATTR_TENSOR_IS_VIRTUAL, false);
    t.by_value = scalar<bool>(d, CUDNN_ATTR_TENSOR_IS_BY_VALUE, false);
    const char *what = "cudnnBackendFinalize(CUDNN_BACKEND_TENSOR_DESCRIPTOR)";
    if (t.dims.size() != t.strides.size()) {
        return refuse(CUDNN_STATUS_BAD_PARAM, "%s: uid %lld: CUDNN_ATTR_TENSOR_STRIDES has %zu "
                      "values for %zu dimensions", what, (long long)t.uid, t.strides.size(), t.dims.size());
    }
    for (size_t i = 0; i < t.dims.size(); i++) {
        if (t.dims[i] < 1 || t.strides[i] < 1) {
            return refuse(CUDNN_STATUS_BAD_PARAM, "%s: uid %lld: dimension %zu is %lld with stride "
                          "%lld (both must be positive)", what, (long long)t.uid, i,
                          (long long)t.dims[i], (long long)t.strides[i]);
        }
    }
    if (data_type_bytes(t.type) == 0) {
        return refuse(CUDNN_STATUS_NOT_SUPPORTED, "%s: uid %lld: CUDNN_ATTR_TENSOR_DATA_TYPE %s is "
                      "not emulated", what, (long long)t.uid, data_type_name(t.type));
    }
    if (t.alignment < 1 || (t.alignment & (t.alignment - 1)) != 0) {
        return refuse(CUDNN_STATUS_BAD_PARAM, "%s: uid %lld: CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT %lld "
                      "is not a power of two", what, (long long)t.uid, (long long)t.alignment);
    }
    if (t.is_virtual && t.by_value) {
        return refuse(CUDNN_STATUS_BAD_PARAM, "%s: uid %lld is both virtual and by value", what,
                      (long long)t.uid);
    }
    if (t.by_value && t.elements() != 1) {
        return refuse(CUDNN_STATUS_BAD_PARAM, "%s: uid %lld: a by-value tensor holds one element, "
                      "not %lld", what, (long long)t.uid, (long long)t.elements());
    }
    return CUDNN_STATUS_SUCCESS;
}

bool unary_mode(int m) {
    return m == CUDNN_POINTWISE_EXP || m == CUDNN_POINTWISE_LOG || m == CUDNN_POINTWISE_IDENTITY ||
           m == CUDNN_POINTWISE_NEG || m == CUDNN_POINTWISE_SQRT ||
           m == CUDNN_POINTWISE_RECIPROCAL || m == CUDNN_POINTWISE_GEN_INDEX;
}
bool compare_mode(int m) { return m >= CUDNN_POINTWISE_CMP_EQ && m <= CUDNN_POINTWISE_CMP_LE; }
bool binary_mode(int m) {
    return m == CUDNN_POINTWISE_ADD || m == CUDNN_POINTWISE_MUL || m == CUDNN_POINTWISE_SUB ||
           m == CUDNN_POINTWISE_DIV || m == CUDNN_POINTWISE_MAX || m == CUDNN_POINTWISE_MIN ||
           compare_mode(m);
}

std::string dims_text(const std::vector<int64_t> &v) {
    std::string s = "[";
    for (size_t i = 0; i < v.size(); i++) s += (i ? " " : "") + std::to_string(v[i]);
    return s + "]";
}

// each of x's dims equals y's or is 1 (cuDNN's broadcasting)
cudnnStatus_t check_broadcast(const char *op, const char *role, const Tensor &x, const Tensor &y) {
    bool ok = x.dims.size() == y.dims.size();
    for (size_t i = 0; ok && i < x.dims.size(); i++) ok = x.dims[i] == y.dims[i] || x.dims[i] == 1;
    if (!ok) {
        return refuse(CUDNN_STATUS_BAD_PARAM_SHAPE_MISMATCH, "%s: %s (uid %lld) dims %s do not "
                      "broadcast to Y's %s", op, role, (long long)x.uid, dims_text(x.dims).c_str(),
                      dims_text(y.dims).c_str());
    }
    return CUDNN_STATUS_SUCCESS;
}

const Tensor &tensor_of(const Desc *d) { return d->tensor; }

cudnnStatus_t finalize_pointwise_op(Desc *d) {
    const Desc *pw = desc_attr(d, CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR);
    const Desc *x = desc_attr(d, CUDNN_ATTR_OPERATION_POINTWISE_XDESC);
    const Desc *b = desc_attr(d, CUDNN_ATTR_OPERATION_POINTWISE_BDESC);
    const Desc *t = desc_attr(d, CUDNN_ATTR_OPERATION_POINTWISE_TDESC);
    const Desc *y = desc_attr(d, CUDNN_ATTR_OPERATION_POINTWISE_YDESC);
    Op &op = d->op;
    op = pw->op;
    op.kind = OP_POINTWISE;
    const std::string name = "cudnnBackendFinalize(CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR, " +
                             std::string(pointwise_mode_name(op.mode)) + ")";
    const char *n = name.c_str();
    const int m = op.mode;
    const bool ternary = m == CUDNN_POINTWISE_BINARY_SELECT;
    if (unary_mode(m) && (b != nullptr || t != nullptr)) {
        return refuse(CUDNN_STATUS_BAD_PARAM, "%s: a unary mode takes only XDESC, but %s is set", n,
                      b != nullptr ? "CUDNN_ATTR_OPERATION_POINTWISE_BDESC" : "CUDNN_ATTR_OPERATION_POINTWISE_TDESC");
    }
    if ((binary_mode(m) || ternary) && b == nullptr) {
        return refuse(CUDNN_STATUS_BAD_PARAM, "%s: the required attribute "
                      "CUDNN_ATTR_OPERATION_POINTWISE_BDESC is not set", n);
    }
    if (ternary != (t != nullptr)) {
        return refuse(CUDNN_STATUS_BAD_PARAM, "%s: CUDNN_ATTR_OPERATION_POINTWISE_TDESC %s", n,
                      ternary ? "(the selector) is not set" : "is set for a mode without a selector");
    }
    op.inputs.push_back(tensor_of(x));
    if (b != nullptr) op.inputs.push_back(tensor_of(b));
    if (t != nullptr) op.inputs.push_back(tensor_of(t));
    op.output = tensor_of(y);
    const char *roles[3] = {"X", "B", "T"};
    for (size_t i = 0; i < op.inputs.size(); i++) {
        cudnnStatus_t s = check_broadcast(n, roles[i], op.inputs[i], op.output);
        if (s != CUDNN_STATUS_SUCCESS) return s;
    }
    if (m == CUDNN_POINTWISE_GEN_INDEX) {
        if (op.axis < 0 || op.axis >= (int64_t)op.output.dims.size()) {
            return refuse(CUDNN_STATUS_BAD_PARAM, "%s: CUDNN_ATTR_POINTWISE_AXIS %lld is not a "
                          "dimension of Y %s", n, (long long)op.axis, dims_text(op.output.dims).c_str());
        }
        if (op.output.type != CUDNN_DATA_INT32 && op.output.type != CUDNN_DATA_FLOAT) {
            return refuse(CUDNN_STATUS_BAD_PARAM, "%s: Y (uid %lld) is %s: an index is INT32 (or FLOAT)",
                          n, (long long)op.output.uid, data_type_name(op.output.type));
        }
    }
    if (compare_mode(m) && op.output.type != CUDNN_DATA_BOOLEAN) {
        return refuse(CUDNN_STATUS_BAD_PARAM, "%s: Y (uid %lld) is %s: a comparison writes BOOLEAN",
                      n, (long long)op.output.uid, data_type_name(op.output.type));
    }
    if (ternary && op.inputs[2].type != CUDNN_DATA_BOOLEAN) {
        return refuse(CUDNN_STATUS_BAD_PARAM, "%s: the selector T (uid %lld) is %s, not BOOLEAN", n,
                      (long long)op.inputs[2].uid, data_type_name(op.inputs[2].type));
    }
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t finalize_matmul_op(Desc *d) {
    Op &op = d->op;
    op = desc_attr(d, CUDNN_ATTR_OPERATION_MATMUL_DESC)->op;
    op.kind = OP_MATMUL;
    const Tensor &a = tensor_of(desc_attr(d, CUDNN_ATTR_OPERATION_MATMUL_ADESC));
    const Tensor &b = tensor_of(desc_attr(d, CUDNN_ATTR_OPERATION_MATMUL_BDESC));
    const Tensor &c = tensor_of(desc_attr(d, CUDNN_ATTR_OPERATION_MATMUL_CDESC));
    op.inputs = {a, b};
    op.output = c;
    const char *n = "cudnnBackendFinalize(CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR)";
    const size_t r = c.dims.size();
    if (r < 2 || a.dims.size() != r || b.dims.size() != r) {
        return refuse(CUDNN_STATUS_BAD_PARAM, "%s: A %s, B %s and C %s need the same rank >= 2", n,
                      dims_text(a.dims).c_str(), dims_text(b.dims).c_str(), dims_text(c.dims).c_str());
    }
    if (a.dims[r - 1] != b.dims[r - 2] || a.dims[r - 2] != c.dims[r - 2] || b.dims[r - 1] != c.dims[r - 1]) {
        return refuse(CUDNN_STATUS_BAD_PARAM_SHAPE_MISMATCH, "%s: A (uid %lld) %s times B (uid %lld) "
                      "%s does not give C (uid %lld) %s (A (.., M, K), B (.., K, N), C (.., M, N))",
                      n, (long long)a.uid, dims_text(a.dims).c_str(), (long long)b.uid,
                      dims_text(b.dims).c_str(), (long long)c.uid, dims_text(c.dims).c_str());
    }
    for (size_t i = 0; i + 2 < r; i++) {
        if ((a.dims[i] != c.dims[i] && a.dims[i] != 1) || (b.dims[i] != c.dims[i] && b.dims[i] != 1)) {
            return refuse(CUDNN_STATUS_BAD_PARAM_SHAPE_MISMATCH, "%s: batch dimension %zu: A %lld, "
                          "B %lld, C %lld", n, i, (long long)a.dims[i], (long long)b.dims[i],
                          (long long)c.dims[i]);
        }
    }
    const Tensor *operands[2] = {&a, &b};
    for (const Tensor *t : operands) {
        if (t->type != CUDNN_DATA_BFLOAT16 && t->type != CUDNN_DATA_HALF && t->type != CUDNN_DATA_FLOAT) {
            return refuse(CUDNN_STATUS_NOT_SUPPORTED_DATA_TYPE, "%s: operand uid %lld is %s", n,
                          (long long)t->uid, data_type_name(t->type));
        }
    }
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t finalize_reduction_op(Desc *d) {
    Op &op = d->op;
    op = desc_attr(d, CUDNN_ATTR_OPERATION_REDUCTION_DESC)->op;
    op.kind = OP_REDUCTION;
    op.inputs = {tensor_of(desc_attr(d, CUDNN_ATTR_OPERATION_REDUCTION_XDESC))};
    op.output = tensor_of(desc_attr(d, CUDNN_ATTR_OPERATION_REDUCTION_YDESC));
    const Tensor &x = op.inputs[0], &y = op.output;
    bool ok = x.dims.size() == y.dims.size();
    for (size_t i = 0; ok && i < x.dims.size(); i++) ok = y.dims[i] == x.dims[i] || y.dims[i] == 1;
    if (!ok) {
        return refuse(CUDNN_STATUS_BAD_PARAM_SHAPE_MISMATCH, "cudnnBackendFinalize(CUDNN_BACKEND_"
                      "OPERATION_REDUCTION_DESCRIPTOR): Y (uid %lld) %s is not X (uid %lld) %s with "
                      "some dimensions reduced to 1", (long long)y.uid, dims_text(y.dims).c_str(),
                      (long long)x.uid, dims_text(x.dims).c_str());
    }
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t finalize_reshape_op(Desc *d) {
    Op &op = d->op;
    op.kind = OP_RESHAPE;
    op.inputs = {tensor_of(desc_attr(d, CUDNN_ATTR_OPERATION_RESHAPE_XDESC))};
    op.output = tensor_of(desc_attr(d, CUDNN_ATTR_OPERATION_RESHAPE_YDESC));
    const Tensor &x = op.inputs[0], &y = op.output;
    const char *n = "cudnnBackendFinalize(CUDNN_BACKEND_OPERATION_RESHAPE_DESCRIPTOR)";
    if (x.elements() != y.elements()) { // Y may take another type: the view rounds to it
        return refuse(CUDNN_STATUS_BAD_PARAM, "%s: X (uid %lld) %s and Y (uid %lld) %s differ in "
                      "elements", n, (long long)x.uid, dims_text(x.dims).c_str(), (long long)y.uid,
                      dims_text(y.dims).c_str());
    }
    // a view: Y's element offsets are X's (the same memory seen through other strides)
    std::vector<int64_t> ox, oy;
    for (int pass = 0; pass < 2; pass++) {
        const Tensor &t = pass == 0 ? x : y;
        std::vector<int64_t> &o = pass == 0 ? ox : oy;
        o.reserve((size_t)t.elements());
        std::vector<int64_t> idx(t.dims.size(), 0);
        for (int64_t e = 0; e < t.elements(); e++) {
            int64_t off = 0;
            for (size_t k = 0; k < idx.size(); k++) off += idx[k] * t.strides[k];
            o.push_back(off);
            for (size_t k = idx.size(); k-- > 0;) {
                if (++idx[k] < t.dims[k]) break;
                idx[k] = 0;
            }
        }
        std::sort(o.begin(), o.end());
    }
    if (ox != oy) {
        return refuse(CUDNN_STATUS_BAD_PARAM, "%s: Y (uid %lld) dims %s strides %s does not view "
                      "the memory of X (uid %lld) dims %s strides %s", n, (long long)y.uid,
                      dims_text(y.dims).c_str(), dims_text(y.strides).c_str(), (long long)x.uid,
                      dims_text(x.dims).c_str(), dims_text(x.strides).c_str());
    }
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t finalize_graph(Desc *d) {
    auto g = std::make_shared<Graph>();
    g->handle = scalar<cudnnHandle_t>(d, CUDNN_ATTR_OPERATIONGRAPH_HANDLE, nullptr);
    if (g->handle == nullptr || g->handle->magic != 0x5d) {
        return refuse(CUDNN_STATUS_BAD_PARAM, "cudnnBackendFinalize(CUDNN_BACKEND_OPERATIONGRAPH_"
                      "DESCRIPTOR): CUDNN_ATTR_OPERATIONGRAPH_HANDLE is no cudnnCreate handle");
    }
    for (Desc *op : array<Desc *>(d, CUDNN_ATTR_OPERATIONGRAPH_OPS)) g->ops.push_back(op->op);
    cudnnStatus_t s = check_graph(*g); // fills the graph's tensor lists
    if (s != CUDNN_STATUS_SUCCESS) return s;
    d->graph = g;
    return CUDNN_STATUS_SUCCESS;
}

// a switch of the shim, read once: unset, empty or 0 is off, 1 on, anything else an abort
bool env_switch(const char *name) {
    const char *v = getenv(name);
    if (v == nullptr || v[0] == '\0' || strcmp(v, "0") == 0) return false;
    if (strcmp(v, "1") == 0) return true;
    emu::device_abort("%s=%s: expected 0 or 1", name, v);
}
// EMU_CUDNN_NONDETERMINISTIC=1: a GPU whose cuDNN has no deterministic
// backward engine for these graphs (the heuristics offer a backward graph
// only engines with CUDNN_NUMERICAL_NOTE_NONDETERMINISTIC, which execute as
// such: execute_graph)
bool nondeterministic_only() {
    static const bool on = env_switch("EMU_CUDNN_NONDETERMINISTIC");
    return on;
}
// EMU_CUDNN_DECLINE=1: every engine the heuristics list declines its plan
// (cudnnBackendFinalize of the execution plan: NOT_SUPPORTED), as cuDNN's may
bool decline_plans() {
    static const bool on = env_switch("EMU_CUDNN_DECLINE");
    return on;
}

// the emulated heuristics: two configs of one engine for a fused attention
// graph, the first carrying CUDNN_NUMERICAL_NOTE_NONDETERMINISTIC (as an
// engine that adds dQ with atomics would), so a caller that must be
// deterministic is seen to skip it (under EMU_CUDNN_NONDETERMINISTIC=1 a
// backward graph's second carries it too); none for any other graph
cudnnStatus_t finalize_heuristics(Desc *d) {
    const Desc *graph = desc_attr(d, CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH);
    bool backward = false;
    const std::string problem = attention_engine_problem(*graph->graph, &backward);
    d->results.clear();
    if (!problem.empty()) {
        // a finalized heuristic with no results, as cuDNN's for a graph no engine takes
        fprintf(stderr, "emulated cuDNN: heuristics: no engine for this operation graph: %s\n",
                problem.c_str());
        set_last_error("heuristics: no engine for this operation graph: " + problem);
        return CUDNN_STATUS_SUCCESS;
    }
    for (int64_t i = 0; i < 2; i++) {
        const bool deterministic = i == 1 && !(backward && nondeterministic_only());
        d->results.push_back(Engine{graph->graph, backward, i, deterministic});
    }
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t finalize_plan(Desc *d) {
    const Desc *cfg = desc_attr(d, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG);
    d->handle = scalar<cudnnHandle_t>(d, CUDNN_ATTR_EXECUTION_PLAN_HANDLE, nullptr);
    d->engine = cfg->engine;
    if (d->handle != d->engine.graph->handle) {
        return refuse(CUDNN_STATUS_BAD_PARAM, "cudnnBackendFinalize(CUDNN_BACKEND_EXECUTION_PLAN_"
                      "DESCRIPTOR): CUDNN_ATTR_EXECUTION_PLAN_HANDLE is not the operation graph's handle");
    }
    if (decline_plans()) {
        return refuse(CUDNN_STATUS_NOT_SUPPORTED, "cudnnBackendFinalize(CUDNN_BACKEND_EXECUTION_PLAN_"
                      "DESCRIPTOR): engine %lld declines this operation graph (EMU_CUDNN_DECLINE=1)",
                      (long long)d->engine.index);
    }
    d->workspace_bytes = attention_workspace_bytes(*d->engine.graph, d->engine.backward);
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t finalize_variant_pack(Desc *d) {
    const std::vector<int64_t> uids = array<int64_t>(d, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS);
    const std::vector<void *> ptrs = array<void *>(d, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS);
    if (uids.size() != ptrs.size()) {
        return refuse(CUDNN_STATUS_BAD_PARAM, "cudnnBackendFinalize(CUDNN_BACKEND_VARIANT_PACK_"
                      "DESCRIPTOR): %zu CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS for %zu "
                      "CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS", uids.size(), ptrs.size());
    }
    std::set<int64_t> seen;
    for (int64_t u : uids) {
        if (!seen.insert(u).second) {
            return refuse(CUDNN_STATUS_BAD_PARAM_DUPLICATED_ENTRIES, "cudnnBackendFinalize("
                          "CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR): uid %lld appears twice", (long long)u);
        }
    }
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t finalize(Desc *d) {
    switch (d->type) {
    case CUDNN_BACKEND_TENSOR_DESCRIPTOR: return finalize_tensor(d);
    case CUDNN_BACKEND_POINTWISE_DESCRIPTOR: {
        d->op.mode = scalar<int>(d, CUDNN_ATTR_POINTWISE_MODE, 0);
        d->op.precision = scalar<cudnnDataType_t>(d, CUDNN_ATTR_POINTWISE_MATH_PREC, CUDNN_DATA_FLOAT);
        d->op.axis = scalar<int64_t>(d, CUDNN_ATTR_POINTWISE_AXIS, -1);
        const int m = d->op.mode;
        if (!unary_mode(m) && !binary_mode(m) && m != CUDNN_POINTWISE_BINARY_SELECT) {
            return refuse(CUDNN_STATUS_NOT_SUPPORTED, "cudnnBackendFinalize(CUDNN_BACKEND_"
                          "POINTWISE_DESCRIPTOR): CUDNN_ATTR_POINTWISE_MODE %d is not emulated", m);
        }
        if (m == CUDNN_POINTWISE_GEN_INDEX && get(d, CUDNN_ATTR_POINTWISE_AXIS) == nullptr) {
            return refuse(CUDNN_STATUS_BAD_PARAM, "cudnnBackendFinalize(CUDNN_BACKEND_POINTWISE_"
                          "DESCRIPTOR, GEN_INDEX): the required attribute CUDNN_ATTR_POINTWISE_AXIS is not set");
        }
        return CUDNN_STATUS_SUCCESS;
    }
    case CUDNN_BACKEND_MATMUL_DESCRIPTOR:
        d->op.precision = scalar<cudnnDataType_t>(d, CUDNN_ATTR_MATMUL_COMP_TYPE, CUDNN_DATA_FLOAT);
        if (d->op.precision != CUDNN_DATA_FLOAT) {
            return refuse(CUDNN_STATUS_NOT_SUPPORTED, "cudnnBackendFinalize(CUDNN_BACKEND_MATMUL_"
                          "DESCRIPTOR): CUDNN_ATTR_MATMUL_COMP_TYPE %s is not emulated (FLOAT is)",
                          data_type_name(d->op.precision));
        }
        return CUDNN_STATUS_SUCCESS;
    case CUDNN_BACKEND_REDUCTION_DESCRIPTOR:
        d->op.mode = scalar<int>(d, CUDNN_ATTR_REDUCTION_OPERATOR, 0);
        d->op.precision = scalar<cudnnDataType_t>(d, CUDNN_ATTR_REDUCTION_COMP_TYPE, CUDNN_DATA_FLOAT);
        if (d->op.mode > CUDNN_REDUCE_TENSOR_MAX || d->op.precision != CUDNN_DATA_FLOAT) {
            return refuse(CUDNN_STATUS_NOT_SUPPORTED, "cudnnBackendFinalize(CUDNN_BACKEND_REDUCTION_"
                          "DESCRIPTOR): operator %d in %s is not emulated (ADD, MUL, MIN, MAX in FLOAT are)",
                          d->op.mode, data_type_name(d->op.precision));
        }
        return CUDNN_STATUS_SUCCESS;
    case CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR: return finalize_pointwise_op(d);
    case CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR: return finalize_matmul_op(d);
    case CUDNN_BACKEND_OPERATION_REDUCTION_DESCRIPTOR: return finalize_reduction_op(d);
    case CUDNN_BACKEND_OPERATION_RESHAPE_DESCRIPTOR: return finalize_reshape_op(d);
    case CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR: return finalize_graph(d);
    case CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR: return finalize_heuristics(d);
    case CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR: return finalize_plan(d);
    case CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR: return finalize_variant_pack(d);
    default:
        return refuse(CUDNN_STATUS_NOT_SUPPORTED, "cudnnBackendFinalize(%s): the emulator builds "
                      "this descriptor only through the heuristics", desc_name(d->type));
    }
}

template <typename T> cudnnStatus_t put(const T *values, int64_t n, int64_t requested, int64_t *count,
                                        void *out) {
    *count = n;
    if (out != nullptr) {
        const int64_t k = n < requested ? n : requested;
        if (k > 0) memcpy(out, values, (size_t)k * sizeof(T));
        *count = k;
    }
    return CUDNN_STATUS_SUCCESS;
}

} // namespace

void set_last_error(const std::string &message) { last_error = message; }

cudnnStatus_t refuse(cudnnStatus_t s, const char *fmt, ...) {
    char buf[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    fprintf(stderr, "emulated cuDNN: %s\n", buf);
    last_error = buf;
    return s;
}

} // namespace emu_cudnn

using namespace emu_cudnn;

size_t cudnnGetVersion(void) { return CUDNN_VERSION; }

const char *cudnnGetErrorString(cudnnStatus_t s) {
    switch (s) {
    case CUDNN_STATUS_SUCCESS: return "CUDNN_STATUS_SUCCESS";
    case CUDNN_STATUS_NOT_INITIALIZED: return "CUDNN_STATUS_NOT_INITIALIZED";
    case CUDNN_STATUS_BAD_PARAM: return "CUDNN_STATUS_BAD_PARAM";
    case CUDNN_STATUS_BAD_PARAM_NULL_POINTER: return "CUDNN_STATUS_BAD_PARAM_NULL_POINTER";
    case CUDNN_STATUS_BAD_PARAM_MISALIGNED_POINTER: return "CUDNN_STATUS_BAD_PARAM_MISALIGNED_POINTER";
    case CUDNN_STATUS_BAD_PARAM_NOT_FINALIZED: return "CUDNN_STATUS_BAD_PARAM_NOT_FINALIZED";
    case CUDNN_STATUS_BAD_PARAM_OUT_OF_BOUND: return "CUDNN_STATUS_BAD_PARAM_OUT_OF_BOUND";
    case CUDNN_STATUS_BAD_PARAM_SIZE_INSUFFICIENT: return "CUDNN_STATUS_BAD_PARAM_SIZE_INSUFFICIENT";
    case CUDNN_STATUS_BAD_PARAM_SHAPE_MISMATCH: return "CUDNN_STATUS_BAD_PARAM_SHAPE_MISMATCH";
    case CUDNN_STATUS_BAD_PARAM_DUPLICATED_ENTRIES: return "CUDNN_STATUS_BAD_PARAM_DUPLICATED_ENTRIES";
    case CUDNN_STATUS_BAD_PARAM_ATTRIBUTE_TYPE: return "CUDNN_STATUS_BAD_PARAM_ATTRIBUTE_TYPE";
    case CUDNN_STATUS_BAD_PARAM_DESCRIPTOR_TYPE: return "CUDNN_STATUS_BAD_PARAM_DESCRIPTOR_TYPE";
    case CUDNN_STATUS_NOT_SUPPORTED: return "CUDNN_STATUS_NOT_SUPPORTED";
    case CUDNN_STATUS_NOT_SUPPORTED_GRAPH_PATTERN: return "CUDNN_STATUS_NOT_SUPPORTED_GRAPH_PATTERN";
    case CUDNN_STATUS_NOT_SUPPORTED_SHAPE: return "CUDNN_STATUS_NOT_SUPPORTED_SHAPE";
    case CUDNN_STATUS_NOT_SUPPORTED_DATA_TYPE: return "CUDNN_STATUS_NOT_SUPPORTED_DATA_TYPE";
    case CUDNN_STATUS_NOT_SUPPORTED_LAYOUT: return "CUDNN_STATUS_NOT_SUPPORTED_LAYOUT";
    case CUDNN_STATUS_INTERNAL_ERROR: return "CUDNN_STATUS_INTERNAL_ERROR";
    case CUDNN_STATUS_EXECUTION_FAILED: return "CUDNN_STATUS_EXECUTION_FAILED";
    }
    return "an unknown cuDNN status";
}

void cudnnGetLastErrorString(char *message, size_t max_size) {
    if (message == nullptr || max_size == 0) return;
    snprintf(message, max_size, "%s", last_error.c_str());
    last_error.clear(); // as cuDNN: reading the message clears it
}

cudnnStatus_t cudnnCreate(cudnnHandle_t *handle) {
    if (handle == nullptr) return refuse(CUDNN_STATUS_BAD_PARAM_NULL_POINTER, "cudnnCreate: NULL handle");
    *handle = new emu_cudnn_context{0x5d, nullptr};
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnDestroy(cudnnHandle_t handle) {
    if (handle == nullptr || handle->magic != 0x5d) {
        return refuse(CUDNN_STATUS_BAD_PARAM, "cudnnDestroy: not a cudnnCreate handle");
    }
    handle->magic = 0;
    delete handle;
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnSetStream(cudnnHandle_t handle, cudaStream_t stream) {
    if (handle == nullptr || handle->magic != 0x5d) {
        return refuse(CUDNN_STATUS_BAD_PARAM, "cudnnSetStream: not a cudnnCreate handle");
    }
    emu::check_stream(stream, "cudnnSetStream");
    handle->stream = stream;
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnBackendCreateDescriptor(cudnnBackendDescriptorType_t type,
                                           cudnnBackendDescriptor_t *descriptor) {
    if (descriptor == nullptr) {
        return refuse(CUDNN_STATUS_BAD_PARAM_NULL_POINTER, "cudnnBackendCreateDescriptor: NULL descriptor");
    }
    switch (type) {
    case CUDNN_BACKEND_OPERATION_SDPA_FWD_DESCRIPTOR: case CUDNN_BACKEND_OPERATION_SDPA_BWD_DESCRIPTOR:
        return refuse(CUDNN_STATUS_NOT_SUPPORTED, "cudnnBackendCreateDescriptor(%s): the native SDPA "
                      "operations are not emulated (cuDNN 9.19's has no causal mask; the pattern "
                      "graphs are)", desc_name(type));
    case CUDNN_BACKEND_POINTWISE_DESCRIPTOR: case CUDNN_BACKEND_ENGINE_DESCRIPTOR:
    case CUDNN_BACKEND_ENGINECFG_DESCRIPTOR: case CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR:
    case CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR: case CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR:
    case CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR: case CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR:
    case CUDNN_BACKEND_TENSOR_DESCRIPTOR: case CUDNN_BACKEND_MATMUL_DESCRIPTOR:
    case CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR: case CUDNN_BACKEND_REDUCTION_DESCRIPTOR:
    case CUDNN_BACKEND_OPERATION_REDUCTION_DESCRIPTOR: case CUDNN_BACKEND_OPERATION_RESHAPE_DESCRIPTOR:
        break;
    default:
        return refuse(CUDNN_STATUS_NOT_SUPPORTED, "cudnnBackendCreateDescriptor: descriptor type %d "
                      "is not emulated", (int)type);
    }
    Desc *d = new Desc();
    d->type = type;
    std::lock_guard<std::mutex> lock(live_mutex);
    live.insert(d);
    *descriptor = d;
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnBackendDestroyDescriptor(cudnnBackendDescriptor_t descriptor) {
    Desc *d = live_desc(descriptor);
    if (d == nullptr) {
        return refuse(CUDNN_STATUS_BAD_PARAM, "cudnnBackendDestroyDescriptor(%p): not a live "
                      "descriptor (destroyed twice?)", descriptor);
    }
    {
        std::lock_guard<std::mutex> lock(live_mutex);
        live.erase(d);
    }
    delete d;
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnBackendSetAttribute(cudnnBackendDescriptor_t descriptor,
                                       cudnnBackendAttributeName_t name,
                                       cudnnBackendAttributeType_t type, int64_t count,
                                       const void *elements) {
    Desc *d = live_desc(descriptor);
    if (d == nullptr) {
        return refuse(CUDNN_STATUS_BAD_PARAM, "cudnnBackendSetAttribute(%s): %p is not a live "
                      "descriptor", attr_name(name).c_str(), descriptor);
    }
    const char *dn = desc_name(d->type);
    if (d->finalized) {
        return refuse(CUDNN_STATUS_BAD_PARAM, "cudnnBackendSetAttribute(%s, %s): the descriptor is "
                      "already finalized", dn, attr_name(name).c_str());
    }
    const AttrSpec *spec = find_spec(d->type, name);
    if (spec == nullptr) {
        return refuse(CUDNN_STATUS_BAD_PARAM, "cudnnBackendSetAttribute(%s): %s is not an attribute "
                      "of this descriptor (or not one the emulator knows)", dn, attr_name(name).c_str());
    }
    if (type != spec->type) {
        return refuse(CUDNN_STATUS_BAD_PARAM_ATTRIBUTE_TYPE, "cudnnBackendSetAttribute(%s, %s): "
                      "the attribute takes %s, not %s", dn, spec->attr_name, type_name(spec->type),
                      type_name(type));
    }
    if (count < spec->min_count || count > spec->max_count || (count > 0 && elements == nullptr)) {
        return refuse(CUDNN_STATUS_BAD_PARAM, "cudnnBackendSetAttribute(%s, %s): %lld elements at %p "
                      "(it takes %lld to %lld)", dn, spec->attr_name, (long long)count, elements,
                      (long long)spec->min_count, (long long)spec->max_count);
    }
    if (type == CUDNN_TYPE_BACKEND_DESCRIPTOR) {
        for (int64_t i = 0; i < count; i++) {
            const Desc *v = live_desc(((void *const *)elements)[i]);
            const bool kind = v != nullptr && (spec->descriptor_type == ANY_OPERATION
                                                   ? is_operation(v->type)
                                                   : (int)v->type == spec->descriptor_type);
            if (!kind || !v->finalized) {
                return refuse(CUDNN_STATUS_BAD_PARAM, "cudnnBackendSetAttribute(%s, %s): element %lld "
                              "is %s, not a finalized %s", dn, spec->attr_name, (long long)i,
                              v == nullptr ? "no live descriptor" : desc_name(v->type),
                              spec->descriptor_type == ANY_OPERATION ? "operation descriptor"
                                                                     : desc_name(spec->descriptor_type));
            }
        }
    }
    Attr a{type, count, std::vector<uint8_t>((size_t)count * type_bytes(type))};
    if (count > 0) memcpy(a.bytes.data(), elements, a.bytes.size());
    d->attrs[name] = a;
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnBackendFinalize(cudnnBackendDescriptor_t descriptor) {
    Desc *d = live_desc(descriptor);
    if (d == nullptr) {
        return refuse(CUDNN_STATUS_BAD_PARAM, "cudnnBackendFinalize(%p): not a live descriptor", descriptor);
    }
    if (d->finalized) {
        return refuse(CUDNN_STATUS_BAD_PARAM, "cudnnBackendFinalize(%s): already finalized",
                      desc_name(d->type));
    }
    // every referenced descriptor must still be alive when it is read
    for (const auto &kv : d->attrs) {
        if (kv.second.type != CUDNN_TYPE_BACKEND_DESCRIPTOR) continue;
        for (int64_t i = 0; i < kv.second.count; i++) {
            void *v;
            memcpy(&v, kv.second.bytes.data() + i * sizeof(void *), sizeof(v));
            if (live_desc(v) == nullptr) {
                return refuse(CUDNN_STATUS_BAD_PARAM, "cudnnBackendFinalize(%s): %s element %lld "
                              "was destroyed before the finalize", desc_name(d->type),
                              attr_name(kv.first).c_str(), (long long)i);
            }
        }
    }
    cudnnStatus_t s = check_required(d);
    if (s == CUDNN_STATUS_SUCCESS) s = finalize(d);
    d->finalized = s == CUDNN_STATUS_SUCCESS;
    return s;
}

cudnnStatus_t cudnnBackendGetAttribute(cudnnBackendDescriptor_t const descriptor,
                                       cudnnBackendAttributeName_t name,
                                       cudnnBackendAttributeType_t type, int64_t requested,
                                       int64_t *count, void *elements) {
    Desc *d = live_desc(descriptor);
    if (d == nullptr || count == nullptr) {
        return refuse(CUDNN_STATUS_BAD_PARAM, "cudnnBackendGetAttribute(%s): %s", attr_name(name).c_str(),
                      d == nullptr ? "not a live descriptor" : "NULL element count");
    }
    const char *dn = desc_name(d->type);
    if (!d->finalized) {
        return refuse(CUDNN_STATUS_BAD_PARAM_NOT_FINALIZED, "cudnnBackendGetAttribute(%s, %s): the "
                      "descriptor is not finalized", dn, attr_name(name).c_str());
    }
    auto expect = [&](cudnnBackendAttributeType_t t) {
        return type == t ? CUDNN_STATUS_SUCCESS
                         : refuse(CUDNN_STATUS_BAD_PARAM_ATTRIBUTE_TYPE, "cudnnBackendGetAttribute(%s, "
                                  "%s): the attribute is %s, not %s", dn, attr_name(name).c_str(),
                                  type_name(t), type_name(type));
    };
    // the descriptors to fill: created by the caller, of the kind asked for
    auto fill = [&](cudnnBackendDescriptorType_t kind, const std::vector<Engine> &engines) {
        cudnnStatus_t s = expect(CUDNN_TYPE_BACKEND_DESCRIPTOR);
        if (s != CUDNN_STATUS_SUCCESS) return s;
        *count = (int64_t)engines.size();
        if (elements == nullptr) return CUDNN_STATUS_SUCCESS;
        const int64_t n = (int64_t)engines.size() < requested ? (int64_t)engines.size() : requested;
        for (int64_t i = 0; i < n; i++) {
            Desc *out = live_desc(((void **)elements)[i]);
            if (out == nullptr || out->type != kind) {
                return refuse(CUDNN_STATUS_BAD_PARAM, "cudnnBackendGetAttribute(%s, %s): element %lld "
                              "is %s, not a created %s", dn, attr_name(name).c_str(), (long long)i,
                              out == nullptr ? "no live descriptor" : desc_name(out->type), desc_name(kind));
            }
            out->engine = engines[(size_t)i];
            out->finalized = true;
        }
        *count = n;
        return CUDNN_STATUS_SUCCESS;
    };
    switch (d->type) {
    case CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR:
        if (name == CUDNN_ATTR_ENGINEHEUR_RESULTS) return fill(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR, d->results);
        break;
    case CUDNN_BACKEND_ENGINECFG_DESCRIPTOR:
        if (name == CUDNN_ATTR_ENGINECFG_ENGINE) return fill(CUDNN_BACKEND_ENGINE_DESCRIPTOR, {d->engine});
        if (name == CUDNN_ATTR_ENGINECFG_WORKSPACE_SIZE) {
            cudnnStatus_t s = expect(CUDNN_TYPE_INT64);
            const int64_t w = attention_workspace_bytes(*d->engine.graph, d->engine.backward);
            return s != CUDNN_STATUS_SUCCESS ? s : put(&w, 1, requested, count, elements);
        }
        break;
    case CUDNN_BACKEND_ENGINE_DESCRIPTOR:
        if (name == CUDNN_ATTR_ENGINE_GLOBAL_INDEX) {
            cudnnStatus_t s = expect(CUDNN_TYPE_INT64);
            return s != CUDNN_STATUS_SUCCESS ? s : put(&d->engine.index, 1, requested, count, elements);
        }
        if (name == CUDNN_ATTR_ENGINE_NUMERICAL_NOTE) {
            cudnnStatus_t s = expect(CUDNN_TYPE_NUMERICAL_NOTE);
            const cudnnBackendNumericalNote_t notes[2] = {CUDNN_NUMERICAL_NOTE_TENSOR_CORE,
                                                          CUDNN_NUMERICAL_NOTE_NONDETERMINISTIC};
            return s != CUDNN_STATUS_SUCCESS ? s : put(notes, d->engine.deterministic ? 1 : 2, requested, count, elements);
        }
        if (name == CUDNN_ATTR_ENGINE_BEHAVIOR_NOTE) {
            cudnnStatus_t s = expect(CUDNN_TYPE_BEHAVIOR_NOTE);
            const cudnnBackendBehaviorNote_t note = CUDNN_BEHAVIOR_NOTE_RUNTIME_COMPILATION;
            return s != CUDNN_STATUS_SUCCESS ? s : put(&note, 1, requested, count, elements);
        }
        break;
    case CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR:
        if (name == CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE) {
            cudnnStatus_t s = expect(CUDNN_TYPE_INT64);
            return s != CUDNN_STATUS_SUCCESS ? s : put(&d->workspace_bytes, 1, requested, count, elements);
        }
        break;
    default: break;
    }
    return refuse(CUDNN_STATUS_NOT_SUPPORTED, "cudnnBackendGetAttribute(%s, %s): not emulated", dn,
                  attr_name(name).c_str());
}

cudnnStatus_t cudnnBackendExecute(cudnnHandle_t handle, cudnnBackendDescriptor_t plan,
                                  cudnnBackendDescriptor_t variant_pack) {
    if (handle == nullptr || handle->magic != 0x5d) {
        return refuse(CUDNN_STATUS_BAD_PARAM, "cudnnBackendExecute: not a cudnnCreate handle");
    }
    emu::check_stream(handle->stream, "cudnnBackendExecute");
    emu::stream_op_now(handle->stream, "cudnnBackendExecute"); // in stream order (emu_streams.cpp)
    const Desc *p = live_desc(plan), *vp = live_desc(variant_pack);
    if (p == nullptr || p->type != CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR || !p->finalized ||
        vp == nullptr || vp->type != CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR || !vp->finalized) {
        return refuse(CUDNN_STATUS_BAD_PARAM, "cudnnBackendExecute: needs a finalized "
                      "CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR and a finalized "
                      "CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR");
    }
    if (p->handle != handle) {
        return refuse(CUDNN_STATUS_BAD_PARAM, "cudnnBackendExecute: the handle is not the plan's");
    }
    if (emu::stream_capturing(handle->stream)) { // recorded with the plan and pack of now (emu_graph.cpp)
        const std::shared_ptr<Graph> g = p->engine.graph;
        const std::vector<int64_t> uids = array<int64_t>(vp, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS);
        const std::vector<void *> ptrs = array<void *>(vp, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS);
        void *ws = scalar<void *>(vp, CUDNN_ATTR_VARIANT_PACK_WORKSPACE, nullptr);
        const int64_t ws_bytes = p->workspace_bytes;
        const bool nondeterministic = !p->engine.deterministic;
        emu::stream_run(handle->stream, "cudnnBackendExecute", [=] {
            if (execute_graph(*g, uids, ptrs, ws, ws_bytes, nondeterministic) != CUDNN_STATUS_SUCCESS) {
                emu::device_abort("cudaGraphLaunch: a captured cudnnBackendExecute was refused");
            }
        });
        return CUDNN_STATUS_SUCCESS;
    }
    return execute_graph(*p->engine.graph, array<int64_t>(vp, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS),
                         array<void *>(vp, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS),
                         scalar<void *>(vp, CUDNN_ATTR_VARIANT_PACK_WORKSPACE, nullptr),
                         p->workspace_bytes, !p->engine.deterministic);
}
