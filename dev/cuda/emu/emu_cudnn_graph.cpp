// CUDA emulation (a logic check, not a device run): the cuDNN shim's
// operation graphs. check_graph: the dataflow (uids consistent, virtual
// tensors written once and read, operations listed producer first).
// attention_engine_problem: what the heuristics accept, the fused attention
// patterns the cuDNN frontend builds for cuDNN < 9.21 (its "composite" SDPA:
// the forward with the softmax stats, the backward without an fp32 dQ
// accumulator, each causal or not), operation by operation and input by
// input, and their support surface (bf16/fp16 q, k, v alike, fp32 stats
// (b, h, s, 1), the head dimension contiguous, d a multiple of 8 and at most
// 256 forward / 128 backward, 16-byte alignment declared). execute_graph:
// the variant pack (a pointer for every non-virtual tensor and no other,
// by-value scalars in host memory, device tensors inside one allocation and
// as aligned as declared, written tensors overlapping nothing, the
// workspace), then every operation in double precision, each result held in
// its tensor's declared type (fp32, bf16 rounded to nearest even: the
// engine's registers and tensor-core operands), the workspace poisoned;
// a nondeterministic engine's bf16 products rounded either way (run_matmul).
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "cuda_bf16.h"
#include "emu_cudnn_internal.h"
#include "emu_internal.h"

namespace emu_cudnn {

int64_t Tensor::elements() const {
    int64_t n = 1;
    for (int64_t d : dims) n *= d;
    return n;
}
int64_t Tensor::span() const {
    int64_t last = 0;
    for (size_t i = 0; i < dims.size(); i++) last += (dims[i] - 1) * strides[i];
    return last + 1;
}
std::string Tensor::describe() const {
    std::string s = "uid " + std::to_string(uid) + " " + data_type_name(type) + " dims [";
    for (size_t i = 0; i < dims.size(); i++) s += (i ? " " : "") + std::to_string(dims[i]);
    s += "] strides [";
    for (size_t i = 0; i < strides.size(); i++) s += (i ? " " : "") + std::to_string(strides[i]);
    return s + "]" + (is_virtual ? " virtual" : "") + (by_value ? " by value" : "");
}

const char *data_type_name(cudnnDataType_t t) {
    switch (t) {
    case CUDNN_DATA_FLOAT: return "FLOAT";
    case CUDNN_DATA_DOUBLE: return "DOUBLE";
    case CUDNN_DATA_HALF: return "HALF";
    case CUDNN_DATA_INT8: return "INT8";
    case CUDNN_DATA_INT32: return "INT32";
    case CUDNN_DATA_BFLOAT16: return "BFLOAT16";
    case CUDNN_DATA_INT64: return "INT64";
    case CUDNN_DATA_BOOLEAN: return "BOOLEAN";
    }
    return "an unknown data type";
}

size_t data_type_bytes(cudnnDataType_t t) {
    switch (t) {
    case CUDNN_DATA_FLOAT: case CUDNN_DATA_INT32: return 4;
    case CUDNN_DATA_BFLOAT16: return 2;
    case CUDNN_DATA_BOOLEAN: return 1;
    default: return 0;
    }
}

const char *pointwise_mode_name(int m) {
    switch (m) {
    case CUDNN_POINTWISE_ADD: return "ADD";
    case CUDNN_POINTWISE_MUL: return "MUL";
    case CUDNN_POINTWISE_MIN: return "MIN";
    case CUDNN_POINTWISE_MAX: return "MAX";
    case CUDNN_POINTWISE_SQRT: return "SQRT";
    case CUDNN_POINTWISE_DIV: return "DIV";
    case CUDNN_POINTWISE_SUB: return "SUB";
    case CUDNN_POINTWISE_EXP: return "EXP";
    case CUDNN_POINTWISE_LOG: return "LOG";
    case CUDNN_POINTWISE_NEG: return "NEG";
    case CUDNN_POINTWISE_IDENTITY: return "IDENTITY";
    case CUDNN_POINTWISE_RECIPROCAL: return "RECIPROCAL";
    case CUDNN_POINTWISE_CMP_EQ: return "CMP_EQ";
    case CUDNN_POINTWISE_CMP_NEQ: return "CMP_NEQ";
    case CUDNN_POINTWISE_CMP_GT: return "CMP_GT";
    case CUDNN_POINTWISE_CMP_GE: return "CMP_GE";
    case CUDNN_POINTWISE_CMP_LT: return "CMP_LT";
    case CUDNN_POINTWISE_CMP_LE: return "CMP_LE";
    case CUDNN_POINTWISE_GEN_INDEX: return "GEN_INDEX";
    case CUDNN_POINTWISE_BINARY_SELECT: return "BINARY_SELECT";
    }
    return "an unknown mode";
}

std::string Op::name() const {
    switch (kind) {
    case OP_MATMUL: return "MATMUL";
    case OP_POINTWISE: return std::string("POINTWISE ") + pointwise_mode_name(mode);
    case OP_REDUCTION:
        return mode == CUDNN_REDUCE_TENSOR_ADD ? "REDUCTION ADD"
               : mode == CUDNN_REDUCE_TENSOR_MAX ? "REDUCTION MAX"
               : mode == CUDNN_REDUCE_TENSOR_MIN ? "REDUCTION MIN" : "REDUCTION MUL";
    case OP_RESHAPE: return "RESHAPE";
    }
    return "?";
}

namespace {

bool same_tensor(const Tensor &a, const Tensor &b) {
    return a.type == b.type && a.dims == b.dims && a.strides == b.strides &&
           a.alignment == b.alignment && a.is_virtual == b.is_virtual && a.by_value == b.by_value;
}

// ---------------------------------------------------------------- patterns

// an input of a pattern's operation: an earlier operation's output (its index
// >= 0) or one of the graph's own tensors, by role
enum Role {
    Q = -10, KT = -11, V = -12, VT = -13, O = -14, DO = -15, STATS = -16,
    SCALE = -20, ONE = -21, NEG_INF = -22, NONE = -99
};
const char *role_name(int r) {
    switch (r) {
    case Q: return "Q"; case KT: return "K^T"; case V: return "V"; case VT: return "V^T";
    case O: return "O"; case DO: return "dO"; case STATS: return "the stats";
    case SCALE: return "the scale"; case ONE: return "the one"; case NEG_INF: return "the mask value";
    }
    return "?";
}
struct PatternOp {
    const char *name;
    int in[3];
    const char *writes; // the non-virtual tensor it writes, or nullptr (virtual)
    int axis = 0;       // GEN_INDEX's (0: not one)
};
struct Pattern {
    const char *name;
    bool backward, causal;
    std::vector<PatternOp> ops;
};

#define MASK(s) {"POINTWISE GEN_INDEX", {s, NONE, NONE}, nullptr, 2}, \
                {"POINTWISE GEN_INDEX", {s, NONE, NONE}, nullptr, 3}, \
                {"POINTWISE CMP_GE", {s + 1, s + 2, NONE}, nullptr}, \
                {"POINTWISE BINARY_SELECT", {s, NEG_INF, s + 3}, nullptr}
// the forward: S = Q K^T scale [mask]; softmax with stats = M + log Z; O = P V
// the backward: D = sum(dO O); P = exp(mask(Q K^T scale - stats)); dV = P^T dO;
// dS = (dO V^T - D) P scale; dK = dS^T Q; dQ = dS K
const Pattern PATTERNS[] = {
    {"SDPA forward", false, false, {
        {"MATMUL", {Q, KT, NONE}, nullptr}, {"POINTWISE MUL", {0, SCALE, NONE}, nullptr},
        {"REDUCTION MAX", {1, NONE, NONE}, nullptr}, {"POINTWISE SUB", {1, 2, NONE}, nullptr},
        {"POINTWISE EXP", {3, NONE, NONE}, nullptr}, {"REDUCTION ADD", {4, NONE, NONE}, nullptr},
        {"POINTWISE LOG", {5, NONE, NONE}, nullptr}, {"POINTWISE ADD", {2, 6, NONE}, "the stats"},
        {"POINTWISE DIV", {4, 5, NONE}, nullptr}, {"MATMUL", {8, V, NONE}, "O"}}},
    {"causal SDPA forward", false, true, {
        {"MATMUL", {Q, KT, NONE}, nullptr}, {"POINTWISE MUL", {0, SCALE, NONE}, nullptr}, MASK(1),
        {"REDUCTION MAX", {5, NONE, NONE}, nullptr}, {"POINTWISE SUB", {5, 6, NONE}, nullptr},
        {"POINTWISE EXP", {7, NONE, NONE}, nullptr}, {"REDUCTION ADD", {8, NONE, NONE}, nullptr},
        {"POINTWISE LOG", {9, NONE, NONE}, nullptr}, {"POINTWISE ADD", {6, 10, NONE}, "the stats"},
        {"POINTWISE DIV", {8, 9, NONE}, nullptr}, {"MATMUL", {12, V, NONE}, "O"}}},
    {"SDPA backward", true, false, {
        {"POINTWISE MUL", {DO, O, NONE}, nullptr}, {"REDUCTION ADD", {0, NONE, NONE}, nullptr},
        {"POINTWISE MUL", {1, ONE, NONE}, "softmax_sum"}, {"MATMUL", {Q, KT, NONE}, nullptr},
        {"POINTWISE MUL", {3, SCALE, NONE}, nullptr}, {"POINTWISE SUB", {4, STATS, NONE}, nullptr},
        {"POINTWISE EXP", {5, NONE, NONE}, nullptr}, {"RESHAPE", {6, NONE, NONE}, nullptr},
        {"MATMUL", {7, DO, NONE}, "dV"}, {"MATMUL", {DO, VT, NONE}, nullptr},
        {"POINTWISE SUB", {9, 2, NONE}, nullptr}, {"POINTWISE MUL", {10, 6, NONE}, nullptr},
        {"POINTWISE MUL", {11, SCALE, NONE}, nullptr}, {"RESHAPE", {12, NONE, NONE}, nullptr},
        {"MATMUL", {13, Q, NONE}, "dK"}, {"RESHAPE", {KT, NONE, NONE}, nullptr},
        {"MATMUL", {12, 15, NONE}, "dQ"}}},
    {"causal SDPA backward", true, true, {
        {"POINTWISE MUL", {DO, O, NONE}, nullptr}, {"REDUCTION ADD", {0, NONE, NONE}, nullptr},
        {"POINTWISE MUL", {1, ONE, NONE}, "softmax_sum"}, {"MATMUL", {Q, KT, NONE}, nullptr},
        {"POINTWISE MUL", {3, SCALE, NONE}, nullptr}, {"POINTWISE SUB", {4, STATS, NONE}, nullptr},
        MASK(5), {"POINTWISE EXP", {9, NONE, NONE}, nullptr}, {"RESHAPE", {10, NONE, NONE}, nullptr},
        {"MATMUL", {11, DO, NONE}, "dV"}, {"MATMUL", {DO, VT, NONE}, nullptr},
        {"POINTWISE SUB", {13, 2, NONE}, nullptr}, {"POINTWISE MUL", {14, 10, NONE}, nullptr},
        {"POINTWISE MUL", {15, SCALE, NONE}, nullptr}, {"RESHAPE", {16, NONE, NONE}, nullptr},
        {"MATMUL", {17, Q, NONE}, "dK"}, {"RESHAPE", {KT, NONE, NONE}, nullptr},
        {"MATMUL", {16, 19, NONE}, "dQ"}}},
};
#undef MASK

std::string op_list(const Graph &g) {
    std::string s;
    for (size_t i = 0; i < g.ops.size(); i++) s += (i ? ", " : "") + g.ops[i].name();
    return s;
}

// "" when g is p operation for operation and input for input, else the first difference
std::string pattern_mismatch(const Graph &g, const Pattern &p, std::map<int, Tensor> *roles) {
    char buf[512];
    for (size_t i = 0; i < p.ops.size(); i++) {
        if (i >= g.ops.size()) return "the graph ends after " + std::to_string(g.ops.size()) + " operations";
        const Op &op = g.ops[i];
        const PatternOp &want = p.ops[i];
        if (op.name() != want.name) {
            snprintf(buf, sizeof(buf), "operation %zu is %s where the %s has %s", i,
                     op.name().c_str(), p.name, want.name);
            return buf;
        }
        for (int k = 0; k < 3; k++) {
            const int src = want.in[k];
            if (src == NONE) continue;
            const Tensor &t = op.inputs[(size_t)k];
            if (src >= 0) {
                if (t.uid != g.ops[(size_t)src].output.uid) {
                    snprintf(buf, sizeof(buf), "operation %zu (%s) input %d is uid %lld, not "
                             "operation %d's output (uid %lld)", i, want.name, k, (long long)t.uid,
                             src, (long long)g.ops[(size_t)src].output.uid);
                    return buf;
                }
                continue;
            }
            const bool scalar = src <= SCALE;
            if (t.is_virtual || t.by_value != scalar) {
                snprintf(buf, sizeof(buf), "operation %zu (%s) input %d, %s, is %s", i, want.name,
                         k, role_name(src), t.is_virtual ? "virtual" : scalar ? "not by value" : "by value");
                return buf;
            }
            auto it = roles->find(src);
            if (it != roles->end() && it->second.uid != t.uid) {
                snprintf(buf, sizeof(buf), "operation %zu (%s) reads uid %lld as %s, which is uid %lld "
                         "elsewhere", i, want.name, (long long)t.uid, role_name(src), (long long)it->second.uid);
                return buf;
            }
            (*roles)[src] = t;
        }
        if ((want.writes != nullptr) == op.output.is_virtual) {
            snprintf(buf, sizeof(buf), "operation %zu (%s) writes uid %lld, which must %s", i,
                     want.name, (long long)op.output.uid,
                     want.writes != nullptr ? (std::string("be non-virtual (") + want.writes + ")").c_str()
                                            : "be virtual (the engine writes only its outputs)");
            return buf;
        }
        if (want.axis != 0 && op.axis != want.axis) {
            snprintf(buf, sizeof(buf), "operation %zu (GEN_INDEX) has axis %lld, not %d: the causal "
                     "mask keeps query index (axis 2) >= key index (axis 3)", i, (long long)op.axis,
                     want.axis);
            return buf;
        }
    }
    if (g.ops.size() > p.ops.size()) {
        return "operation " + std::to_string(p.ops.size()) + " (" + g.ops[p.ops.size()].name() +
               ") is beyond the " + p.name + "'s " + std::to_string(p.ops.size());
    }
    return "";
}

std::string need(const char *role, const Tensor &t, const char *what) {
    return std::string(role) + " (" + t.describe() + ") " + what;
}

// the support surface of the fused attention engines, on the matched roles
struct Io {
    const char *name;
    Tensor t;
    bool transposed; // (b, h, d, s): K^T, V^T
};

std::string support_problem(const Pattern &p, std::map<int, Tensor> &roles, const Graph &g) {
    const Tensor &q = roles[Q];
    std::vector<Io> io = {{"Q", q, false}, {"K^T", roles[KT], true}};
    if (!p.backward) io.push_back({"V", roles[V], false});
    if (p.backward) io.push_back({"V^T", roles[VT], true});
    if (p.backward) io.push_back({"O", roles[O], false});
    if (p.backward) io.push_back({"dO", roles[DO], false});
    for (size_t i = 0; i < g.ops.size(); i++) { // O, or dV, dK, dQ
        if (g.ops[i].kind == OP_MATMUL && p.ops[i].writes != nullptr) {
            io.push_back({p.ops[i].writes, g.ops[i].output, false});
        }
    }
    if (q.dims.size() != 4) return need("Q", q, "is not 4-D (b, h, s, d)");
    for (const Io &r : io) {
        const Tensor &t = r.t;
        if (t.type != CUDNN_DATA_BFLOAT16 && t.type != CUDNN_DATA_HALF) {
            return std::string(r.name) + " (uid " + std::to_string(t.uid) + ") is " +
                   data_type_name(t.type) + ": the fused attention engines take BFLOAT16 or HALF "
                   "q, k, v, o (and their gradients), all alike";
        }
        if (t.type != q.type) return need(r.name, t, "is not Q's data type");
        if (t.dims.size() != 4) return need(r.name, t, "is not 4-D");
        // the head dimension: last in (b, h, s, d), third in the transposed (b, h, d, s)
        const int d_axis = r.transposed ? 2 : 3;
        if (t.strides[(size_t)d_axis] != 1) {
            return need(r.name, t, (std::string("has the head dimension (dim ") +
                                     std::to_string(d_axis) + ") at stride " +
                                     std::to_string(t.strides[(size_t)d_axis]) +
                                     ": the fused attention engines need it contiguous (stride 1)").c_str());
        }
        if (t.alignment < 16) return need(r.name, t, "declares less than 16-byte alignment");
    }
    const int64_t d = q.dims[3], d_max = p.backward ? 128 : 256;
    if (d % 8 != 0 || d > d_max) {
        return "head dimension " + std::to_string(d) + ": the fused attention " +
               (p.backward ? "backward" : "forward") + " engines take multiples of 8 up to " +
               std::to_string(d_max);
    }
    const Tensor &stats = p.backward ? roles[STATS] : g.ops[p.causal ? 11 : 7].output;
    const std::vector<int64_t> rows = {q.dims[0], q.dims[1], q.dims[2], 1};
    if (stats.type != CUDNN_DATA_FLOAT || stats.dims != rows) {
        return need("the stats", stats, "must be FLOAT (b, h, s_q, 1)");
    }
    for (int r : {SCALE, ONE, NEG_INF}) {
        auto it = roles.find(r);
        if (it != roles.end() && it->second.type != CUDNN_DATA_FLOAT) {
            return need(role_name(r), it->second, "must be a FLOAT scalar");
        }
    }
    return "";
}

// ---------------------------------------------------------------- execution

double round_to(cudnnDataType_t t, double v) {
    switch (t) {
    case CUDNN_DATA_FLOAT: return (double)(float)v;
    case CUDNN_DATA_BFLOAT16: return (double)(float)__nv_bfloat16((float)v);
    case CUDNN_DATA_BOOLEAN: return v != 0.0 ? 1.0 : 0.0;
    default: return v; // INT32: the indices are exact
    }
}

double load(cudnnDataType_t t, const void *p, int64_t i) {
    switch (t) {
    case CUDNN_DATA_FLOAT: return ((const float *)p)[i];
    case CUDNN_DATA_BFLOAT16: return (float)((const __nv_bfloat16 *)p)[i];
    case CUDNN_DATA_INT32: return ((const int32_t *)p)[i];
    case CUDNN_DATA_BOOLEAN: return ((const uint8_t *)p)[i] != 0;
    default: emu::device_abort("emulated cuDNN: load of %s", data_type_name(t));
    }
}

void store(cudnnDataType_t t, void *p, int64_t i, double v) {
    switch (t) {
    case CUDNN_DATA_FLOAT: ((float *)p)[i] = (float)v; break;
    case CUDNN_DATA_BFLOAT16: ((__nv_bfloat16 *)p)[i] = __nv_bfloat16((float)v); break;
    case CUDNN_DATA_INT32: ((int32_t *)p)[i] = (int32_t)v; break;
    case CUDNN_DATA_BOOLEAN: ((uint8_t *)p)[i] = v != 0.0; break;
    default: emu::device_abort("emulated cuDNN: store of %s", data_type_name(t));
    }
}

// the element offsets (in elements, through the strides) of t, in row-major index order
std::vector<int64_t> offsets(const Tensor &t) {
    std::vector<int64_t> o((size_t)t.elements());
    std::vector<int64_t> idx(t.dims.size(), 0);
    for (size_t e = 0; e < o.size(); e++) {
        int64_t off = 0;
        for (size_t k = 0; k < idx.size(); k++) off += idx[k] * t.strides[k];
        o[e] = off;
        for (size_t k = idx.size(); k-- > 0;) {
            if (++idx[k] < t.dims[k]) break;
            idx[k] = 0;
        }
    }
    return o;
}

// x's row-major position of y's element at idx, broadcasting x's dims of 1
int64_t broadcast_index(const Tensor &x, const std::vector<int64_t> &idx) {
    int64_t e = 0;
    for (size_t k = 0; k < idx.size(); k++) e = e * x.dims[k] + (x.dims[k] == 1 ? 0 : idx[k]);
    return e;
}

void next_index(std::vector<int64_t> &idx, const std::vector<int64_t> &dims) {
    for (size_t k = idx.size(); k-- > 0;) {
        if (++idx[k] < dims[k]) return;
        idx[k] = 0;
    }
}

typedef std::map<int64_t, std::vector<double>> Values; // uid -> row-major values

std::vector<double> run_pointwise(const Op &op, const Values &v) {
    const Tensor &y = op.output;
    std::vector<double> out((size_t)y.elements());
    std::vector<int64_t> idx(y.dims.size(), 0);
    const std::vector<double> *in[3] = {nullptr, nullptr, nullptr};
    for (size_t k = 0; k < op.inputs.size(); k++) in[k] = &v.at(op.inputs[k].uid);
    for (size_t e = 0; e < out.size(); e++, next_index(idx, y.dims)) {
        double a = (*in[0])[(size_t)broadcast_index(op.inputs[0], idx)];
        double b = in[1] ? (*in[1])[(size_t)broadcast_index(op.inputs[1], idx)] : 0.0;
        double r = 0.0;
        switch (op.mode) {
        case CUDNN_POINTWISE_ADD: r = a + b; break;
        case CUDNN_POINTWISE_MUL: r = a * b; break;
        case CUDNN_POINTWISE_SUB: r = a - b; break;
        case CUDNN_POINTWISE_DIV: r = a / b; break;
        case CUDNN_POINTWISE_MAX: r = a > b ? a : b; break;
        case CUDNN_POINTWISE_MIN: r = a < b ? a : b; break;
        case CUDNN_POINTWISE_EXP: r = exp(a); break;
        case CUDNN_POINTWISE_LOG: r = log(a); break;
        case CUDNN_POINTWISE_NEG: r = -a; break;
        case CUDNN_POINTWISE_SQRT: r = sqrt(a); break;
        case CUDNN_POINTWISE_RECIPROCAL: r = 1.0 / a; break;
        case CUDNN_POINTWISE_IDENTITY: r = a; break;
        case CUDNN_POINTWISE_CMP_EQ: r = a == b; break;
        case CUDNN_POINTWISE_CMP_NEQ: r = a != b; break;
        case CUDNN_POINTWISE_CMP_GT: r = a > b; break;
        case CUDNN_POINTWISE_CMP_GE: r = a >= b; break;
        case CUDNN_POINTWISE_CMP_LT: r = a < b; break;
        case CUDNN_POINTWISE_CMP_LE: r = a <= b; break;
        case CUDNN_POINTWISE_GEN_INDEX: r = (double)idx[(size_t)op.axis]; break;
        case CUDNN_POINTWISE_BINARY_SELECT: // Y = T ? X : B
            r = (*in[2])[(size_t)broadcast_index(op.inputs[2], idx)] != 0.0 ? a : b;
            break;
        }
        out[e] = round_to(y.type, r);
    }
    return out;
}

// A nondeterministic engine (CUDNN_NUMERICAL_NOTE_NONDETERMINISTIC: cuDNN's
// backward that adds dQ over key tiles with fp32 atomics, in the order the
// tiles finish) gives fp32 sums that differ by a few 2^-24 from run to run;
// its bf16 outputs differ where such a sum lies that close to a rounding
// midpoint: in the last bit, and rarely. The shim's sums are exact enough
// (double) that a different order would never show after the bf16 rounding,
// so it takes the worst case instead: each bf16 product of such an engine
// (dQ, dK, dV; O if a forward's engine carried the note) is, element by
// element, either of the two bf16 values around the double result -- both
// faithful roundings (error < 1 ulp, 2^-8 relative), as any summation order
// followed by rounding to nearest gives -- chosen by a hash of the execute's
// number in this thread, the tensor and the element. So every execute
// differs from every other in about half the elements' last bit, a run is
// reproducible, and a resumed run (which counts from 0) differs from the
// uninterrupted one.
uint64_t mix64(uint64_t x) { // splitmix64's finalizer
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}
thread_local uint64_t nondeterministic_executes = 0;

// y in bf16: the nearest value or, when `other`, the other bf16 value around y
double bf16_faithful(double y, bool other) {
    const double r = round_to(CUDNN_DATA_BFLOAT16, y);
    if (!other || r == y || !std::isfinite(r)) return r;
    uint16_t bits = emu::float_to_bf16_bits((float)r);
    if (r == 0.0) {
        bits = y < 0.0 ? 0x8001u : 0x0001u; // the smallest subnormal on y's side
    } else if (fabs(y) > fabs(r)) {
        bits++; // one ulp away from zero
    } else {
        bits--; // one ulp toward zero (zero at worst)
    }
    const double o = emu::bf16_bits_to_float(bits);
    return std::isfinite(o) ? o : r;
}

// C = A B in double, rounded to C's type; key != 0: a nondeterministic
// engine's execute (its bf16 non-virtual C rounded faithfully, above)
std::vector<double> run_matmul(const Op &op, const Values &v, uint64_t key) {
    const Tensor &a = op.inputs[0], &b = op.inputs[1], &c = op.output;
    const std::vector<double> &A = v.at(a.uid), &B = v.at(b.uid);
    const size_t r = c.dims.size();
    const int64_t M = c.dims[r - 2], N = c.dims[r - 1], K = a.dims[r - 1];
    std::vector<double> out((size_t)c.elements());
    std::vector<int64_t> idx(r, 0); // the batch index in its leading dims, the last two 0
    for (int64_t batch = 0; batch < c.elements() / (M * N); batch++) {
        const int64_t oa = broadcast_index(a, idx), ob = broadcast_index(b, idx);
        const int64_t oc = broadcast_index(c, idx);
        const bool faithful = key != 0 && c.type == CUDNN_DATA_BFLOAT16 && !c.is_virtual;
        for (int64_t i = 0; i < M; i++) {
            for (int64_t j = 0; j < N; j++) {
                double s = 0.0;
                for (int64_t k = 0; k < K; k++) s += A[(size_t)(oa + i * K + k)] * B[(size_t)(ob + k * N + j)];
                const size_t e = (size_t)(oc + i * N + j);
                out[e] = faithful ? bf16_faithful(s, mix64(key + e) & 1) : round_to(c.type, s);
            }
        }
        for (size_t k = r - 2; k-- > 0;) { // the next batch
            if (++idx[k] < c.dims[k]) break;
            idx[k] = 0;
        }
    }
    return out;
}

std::vector<double> run_reduction(const Op &op, const Values &v) {
    const Tensor &x = op.inputs[0], &y = op.output;
    const std::vector<double> &X = v.at(x.uid);
    const double init = op.mode == CUDNN_REDUCE_TENSOR_ADD ? 0.0
                        : op.mode == CUDNN_REDUCE_TENSOR_MUL ? 1.0
                        : op.mode == CUDNN_REDUCE_TENSOR_MAX ? -INFINITY : INFINITY;
    std::vector<double> acc((size_t)y.elements(), init);
    std::vector<int64_t> idx(x.dims.size(), 0);
    for (size_t e = 0; e < X.size(); e++, next_index(idx, x.dims)) {
        double &s = acc[(size_t)broadcast_index(y, idx)];
        switch (op.mode) {
        case CUDNN_REDUCE_TENSOR_ADD: s += X[e]; break;
        case CUDNN_REDUCE_TENSOR_MUL: s *= X[e]; break;
        case CUDNN_REDUCE_TENSOR_MAX: s = X[e] > s ? X[e] : s; break;
        default: s = X[e] < s ? X[e] : s; break;
        }
    }
    for (double &s : acc) s = round_to(y.type, s);
    return acc;
}

// Y's element at idx is X's element at the same memory offset
std::vector<double> run_reshape(const Op &op, const Values &v) {
    const Tensor &x = op.inputs[0], &y = op.output;
    const std::vector<double> &X = v.at(x.uid);
    std::vector<int64_t> ox = offsets(x), oy = offsets(y);
    std::vector<int64_t> at((size_t)x.span(), -1);
    for (size_t e = 0; e < ox.size(); e++) at[(size_t)ox[e]] = (int64_t)e;
    std::vector<double> out(oy.size());
    for (size_t e = 0; e < oy.size(); e++) out[e] = round_to(y.type, X[(size_t)at[(size_t)oy[e]]]);
    return out;
}

struct Span {
    uintptr_t start, end;
    int64_t uid; // -1: the workspace
    bool written;
};

} // namespace

cudnnStatus_t check_graph(Graph &g) {
    const char *n = "cudnnBackendFinalize(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR)";
    if (g.ops.empty()) return refuse(CUDNN_STATUS_BAD_PARAM, "%s: no operations", n);
    std::map<int64_t, Tensor> seen;
    std::map<int64_t, size_t> writer, readers;
    for (size_t i = 0; i < g.ops.size(); i++) {
        const Op &op = g.ops[i];
        std::vector<const Tensor *> all;
        for (const Tensor &t : op.inputs) all.push_back(&t);
        all.push_back(&op.output);
        for (const Tensor *t : all) {
            auto it = seen.find(t->uid);
            if (it == seen.end()) {
                seen[t->uid] = *t;
                if (!t->is_virtual) g.tensors.push_back(*t);
            } else if (!same_tensor(it->second, *t)) {
                return refuse(CUDNN_STATUS_BAD_PARAM, "%s: two tensors share uid %lld: %s and %s", n,
                              (long long)t->uid, it->second.describe().c_str(), t->describe().c_str());
            }
        }
        for (const Tensor &t : op.inputs) {
            auto w = writer.find(t.uid);
            if (t.is_virtual && w == writer.end()) {
                return refuse(CUDNN_STATUS_BAD_PARAM, "%s: operation %zu (%s) reads virtual uid %lld "
                              "before any operation writes it (list the operations producer first)",
                              n, i, op.name().c_str(), (long long)t.uid);
            }
            readers[t.uid]++;
        }
        if (op.output.by_value) {
            return refuse(CUDNN_STATUS_BAD_PARAM, "%s: operation %zu (%s) writes by-value uid %lld", n,
                          i, op.name().c_str(), (long long)op.output.uid);
        }
        auto w = writer.find(op.output.uid);
        if (w != writer.end()) {
            return refuse(CUDNN_STATUS_BAD_PARAM, "%s: uid %lld is written by operation %zu (%s) and "
                          "operation %zu (%s)", n, (long long)op.output.uid, w->second,
                          g.ops[w->second].name().c_str(), i, op.name().c_str());
        }
        if (readers.count(op.output.uid)) {
            return refuse(CUDNN_STATUS_BAD_PARAM, "%s: operation %zu (%s) writes uid %lld that an "
                          "earlier operation read (list the operations producer first)", n, i,
                          op.name().c_str(), (long long)op.output.uid);
        }
        writer[op.output.uid] = i;
        if (!op.output.is_virtual) g.written.push_back(op.output);
    }
    for (const auto &w : writer) {
        const Tensor &t = seen[w.first];
        if (t.is_virtual && readers.count(w.first) == 0) {
            return refuse(CUDNN_STATUS_BAD_PARAM, "%s: virtual uid %lld, written by operation %zu (%s), "
                          "is never read", n, (long long)w.first, w.second,
                          g.ops[w.second].name().c_str());
        }
    }
    return CUDNN_STATUS_SUCCESS;
}

std::string attention_engine_problem(const Graph &g, bool *backward) {
    std::string closest;
    size_t best = 0;
    for (const Pattern &p : PATTERNS) {
        std::map<int, Tensor> roles;
        std::string m = pattern_mismatch(g, p, &roles);
        if (m.empty()) {
            *backward = p.backward;
            return support_problem(p, roles, g);
        }
        size_t agree = 0; // how far the operation names agree, to name the closest pattern
        while (agree < g.ops.size() && agree < p.ops.size() && g.ops[agree].name() == p.ops[agree].name) agree++;
        if (closest.empty() || agree > best) {
            best = agree;
            closest = std::string("not a fused attention graph (against the ") + p.name + ": " + m + ")";
        }
    }
    return closest + "; its operations: " + op_list(g);
}

int64_t attention_workspace_bytes(const Graph &g, bool backward) {
    for (const Op &op : g.ops) {
        if (op.kind != OP_MATMUL) continue; // the first: Q K^T
        const Tensor &q = op.inputs[0], &kt = op.inputs[1];
        const int64_t bh = q.dims[0] * q.dims[1], s_q = q.dims[2], s_kv = kt.dims[3];
        const int64_t rows = (s_q + 63) / 64 * 64, cols = (s_kv + 63) / 64 * 64;
        const int64_t bytes = backward ? bh * rows * cols * 2 : bh * s_q * 4; // a dP, a row statistic
        return (bytes + 255) / 256 * 256;
    }
    return 0;
}

cudnnStatus_t execute_graph(const Graph &g, const std::vector<int64_t> &uids,
                            const std::vector<void *> &pointers, void *workspace,
                            int64_t workspace_bytes, bool nondeterministic) {
    const char *n = "cudnnBackendExecute";
    std::map<int64_t, void *> at;
    for (size_t i = 0; i < uids.size(); i++) at[uids[i]] = pointers[i];
    std::map<int64_t, const Tensor *> known;
    for (const Tensor &t : g.tensors) known[t.uid] = &t;
    for (int64_t u : uids) {
        if (!known.count(u)) {
            return refuse(CUDNN_STATUS_BAD_PARAM, "%s: the variant pack's uid %lld is no non-virtual "
                          "tensor of this graph", n, (long long)u);
        }
    }
    std::vector<Span> spans;
    for (const Tensor &t : g.tensors) {
        auto it = at.find(t.uid);
        if (it == at.end() || it->second == nullptr) {
            return refuse(CUDNN_STATUS_BAD_PARAM_NULL_POINTER, "%s: the variant pack has no data "
                          "pointer for %s", n, t.describe().c_str());
        }
        void *p = it->second;
        if (t.by_value) {
            if (emu::device_bytes_after(p) > 0) {
                return refuse(CUDNN_STATUS_BAD_PARAM, "%s: by-value %s points at device memory %p (a "
                              "by-value scalar is a host value)", n, t.describe().c_str(), p);
            }
            continue;
        }
        if ((uintptr_t)p % (uintptr_t)t.alignment != 0) {
            return refuse(CUDNN_STATUS_BAD_PARAM_MISALIGNED_POINTER, "%s: %s at %p is %u-byte aligned, "
                          "less than its CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT %lld", n, t.describe().c_str(),
                          p, emu::pointer_alignment(p), (long long)t.alignment);
        }
        const size_t bytes = data_type_bytes(t.type);
        const std::string what = std::string(n) + ": " + t.describe();
        emu::check_device_range(p, (size_t)t.span() * bytes, what.c_str());
        bool written = false;
        for (const Tensor &w : g.written) written |= w.uid == t.uid;
        for (int64_t off : offsets(t)) {
            const uintptr_t s = (uintptr_t)p + (uintptr_t)off * bytes;
            spans.push_back(Span{s, s + bytes, t.uid, written});
        }
    }
    if (workspace_bytes > 0) {
        if (workspace == nullptr) {
            return refuse(CUDNN_STATUS_BAD_PARAM_NULL_POINTER, "%s: CUDNN_ATTR_VARIANT_PACK_WORKSPACE "
                          "is NULL, but the plan needs %lld bytes (CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE)",
                          n, (long long)workspace_bytes);
        }
        emu::check_device_range(workspace, (size_t)workspace_bytes, "cudnnBackendExecute: the workspace");
        spans.push_back(Span{(uintptr_t)workspace, (uintptr_t)workspace + (uintptr_t)workspace_bytes, -1, true});
    }
    // nothing written may overlap anything else: sweep the spans by start
    std::sort(spans.begin(), spans.end(), [](const Span &a, const Span &b) {
        return a.start != b.start ? a.start < b.start : a.uid < b.uid;
    });
    const Span *reach = nullptr; // the span reaching furthest so far
    for (const Span &s : spans) {
        if (reach != nullptr && s.start < reach->end && (s.written || reach->written)) {
            char a[64], b[64];
            snprintf(a, sizeof(a), reach->uid < 0 ? "the workspace" : "uid %lld", (long long)reach->uid);
            snprintf(b, sizeof(b), s.uid < 0 ? "the workspace" : "uid %lld", (long long)s.uid);
            return refuse(CUDNN_STATUS_BAD_PARAM, "%s: %s and %s overlap at %p, and one of them is "
                          "written", n, a, b, (void *)s.start);
        }
        if (reach == nullptr || s.end > reach->end) reach = &s;
    }
    if (workspace_bytes > 0) memset(workspace, 0xff, (size_t)workspace_bytes); // the engine's scratch
    Values v;
    for (const Tensor &t : g.tensors) {
        bool written = false;
        for (const Tensor &w : g.written) written |= w.uid == t.uid;
        if (written) continue;
        std::vector<double> x;
        const void *p = at[t.uid];
        if (t.by_value) {
            x.push_back(load(t.type, p, 0));
        } else {
            for (int64_t off : offsets(t)) x.push_back(load(t.type, p, off));
        }
        v[t.uid] = x;
    }
    const uint64_t execute = nondeterministic ? mix64(++nondeterministic_executes) : 0;
    for (const Op &op : g.ops) {
        std::vector<double> y;
        switch (op.kind) {
        case OP_POINTWISE: y = run_pointwise(op, v); break;
        case OP_MATMUL:
            y = run_matmul(op, v, nondeterministic ? mix64(execute ^ (uint64_t)op.output.uid) | 1 : 0);
            break;
        case OP_REDUCTION: y = run_reduction(op, v); break;
        case OP_RESHAPE: y = run_reshape(op, v); break;
        }
        if (!op.output.is_virtual) {
            void *p = at[op.output.uid];
            const std::vector<int64_t> o = offsets(op.output);
            for (size_t e = 0; e < o.size(); e++) store(op.output.type, p, o[e], y[e]);
        }
        v[op.output.uid] = std::move(y);
    }
    return CUDNN_STATUS_SUCCESS;
}

} // namespace emu_cudnn
