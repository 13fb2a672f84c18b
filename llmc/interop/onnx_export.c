// GPT-2 -> ONNX (docs/formats.md, "ONNX export"). The graph, opset 17:
//
//   idx [B, T] --Gather(wte)--> + Slice(wpe, 0..T) --Reshape--> x [B*T, C]
//   per layer: x += Gemm(attention(Gemm(norm(x), qkvw)), attprojw)
//              x += Gemm(gelu(Gemm(norm(x), fcw)), fcprojw)
//   logits = Reshape(Gemm(norm(x), head), [B, T, V])
//
// norm is LayerNormalization (ln) or RMSNorm written as the primitive ops
// Pow, ReduceMean, Add, Sqrt, Div, Mul, Add that ONNX Runtime fuses into its
// SimplifiedLayerNormalization kernel (rms, cbwc, folded). A cbwc model is
// exported with its effective weights (wte rows, wpe rows, attn and mlp
// c_proj centred; the head reads the raw wte), a folded one with the head
// V + m_t 1 (docs/math.md sections 2-5). Gemm reads the (out, in) weights of
// the model file as they are (transB = 1).
#include "onnx_export.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/atomic_write.h"
#include "kernels/cbwc.h"
#include "kernels/norm.h"
#include "onnx.pb-c.h"
#include "core/utils.h"

#define ONNX_OPSET 17
#define ONNX_IR_VERSION 8

typedef struct {
    void **allocs; // everything below is freed with them
    size_t num_allocs, cap_allocs;
    Onnx__NodeProto **nodes;
    size_t num_nodes, cap_nodes;
    Onnx__TensorProto **inits;
    size_t num_inits, cap_inits;
    int counter; // unique value names
} Builder;

static void *b_alloc(Builder *b, size_t bytes) {
    if (b->num_allocs == b->cap_allocs) {
        b->cap_allocs = b->cap_allocs ? 2 * b->cap_allocs : 1024;
        void **grown = realloc(b->allocs, b->cap_allocs * sizeof(void *));
        if (grown == NULL) {
            fatal("out of memory building the ONNX graph");
        }
        b->allocs = grown;
    }
    void *p = calloc_check(1, bytes ? bytes : 1, "onnx export");
    b->allocs[b->num_allocs++] = p;
    return p;
}

static char *b_str(Builder *b, const char *fmt, ...) {
    char buf[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    char *s = b_alloc(b, strlen(buf) + 1);
    memcpy(s, buf, strlen(buf) + 1);
    return s;
}

static void push(Builder *b, void ***arr, size_t *n, size_t *cap, void *item) {
    if (*n == *cap) {
        *cap = *cap ? 2 * *cap : 256;
        void **grown = realloc(*arr, *cap * sizeof(void *));
        if (grown == NULL) {
            fatal("out of memory building the ONNX graph");
        }
        *arr = grown;
    }
    (*arr)[(*n)++] = item;
    (void)b;
}

// A node op(inputs) -> one output named after name; returns the output name.
static Onnx__NodeProto *b_node(Builder *b, const char *op, const char *name, int n_in,
                               const char *const *inputs) {
    Onnx__NodeProto *n = b_alloc(b, sizeof(*n));
    onnx__node_proto__init(n);
    n->op_type = b_str(b, "%s", op);
    n->name = b_str(b, "%s", name);
    n->n_input = (size_t)n_in;
    n->input = b_alloc(b, (size_t)n_in * sizeof(char *));
    for (int i = 0; i < n_in; i++) {
        n->input[i] = (char *)inputs[i];
    }
    n->n_output = 1;
    n->output = b_alloc(b, sizeof(char *));
    n->output[0] = b_str(b, "%s", name);
    push(b, (void ***)&b->nodes, &b->num_nodes, &b->cap_nodes, n);
    return n;
}

static Onnx__AttributeProto *b_attr(Builder *b, Onnx__NodeProto *n, const char *name,
                                    Onnx__AttributeProto__AttributeType type) {
    Onnx__AttributeProto *a = b_alloc(b, sizeof(*a));
    onnx__attribute_proto__init(a);
    a->name = b_str(b, "%s", name);
    a->has_type = 1;
    a->type = type;
    Onnx__AttributeProto **grown = b_alloc(b, (n->n_attribute + 1) * sizeof(*grown));
    if (n->n_attribute > 0) {
        memcpy(grown, n->attribute, n->n_attribute * sizeof(*grown));
    }
    grown[n->n_attribute++] = a;
    n->attribute = grown;
    return a;
}

static void attr_int(Builder *b, Onnx__NodeProto *n, const char *name, int64_t v) {
    Onnx__AttributeProto *a = b_attr(b, n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT);
    a->has_i = 1;
    a->i = v;
}

static void attr_float(Builder *b, Onnx__NodeProto *n, const char *name, float v) {
    Onnx__AttributeProto *a = b_attr(b, n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT);
    a->has_f = 1;
    a->f = v;
}

static void attr_ints(Builder *b, Onnx__NodeProto *n, const char *name, int count, const int64_t *v) {
    Onnx__AttributeProto *a = b_attr(b, n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS);
    a->n_ints = (size_t)count;
    a->ints = b_alloc(b, (size_t)count * sizeof(int64_t));
    memcpy(a->ints, v, (size_t)count * sizeof(int64_t));
}

static Onnx__TensorProto *b_tensor(Builder *b, const char *name, int type, int ndims,
                                   const int64_t *dims, const void *data, size_t bytes) {
    Onnx__TensorProto *t = b_alloc(b, sizeof(*t));
    onnx__tensor_proto__init(t);
    t->name = b_str(b, "%s", name);
    t->has_data_type = 1;
    t->data_type = type;
    t->n_dims = (size_t)ndims;
    t->dims = b_alloc(b, (size_t)ndims * sizeof(int64_t));
    if (ndims > 0) { // a scalar has no dims
        memcpy(t->dims, dims, (size_t)ndims * sizeof(int64_t));
    }
    t->has_raw_data = 1;
    t->raw_data.len = bytes;
    t->raw_data.data = (uint8_t *)data; // little-endian host order, as ONNX stores raw data
    return t;
}

// An fp32 initializer over data (not copied: it must outlive the packing).
static const char *init_f32(Builder *b, const char *name, int ndims, const int64_t *dims,
                            const float *data) {
    size_t n = 1;
    for (int i = 0; i < ndims; i++) {
        n *= (size_t)dims[i];
    }
    Onnx__TensorProto *t = b_tensor(b, name, ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, ndims, dims,
                                    data, n * sizeof(float));
    push(b, (void ***)&b->inits, &b->num_inits, &b->cap_inits, t);
    return t->name;
}

// An int64 initializer (shapes, indices); ndims 0 = a scalar.
static const char *init_i64(Builder *b, const char *name, int ndims, int count, const int64_t *v) {
    int64_t *copy = b_alloc(b, (size_t)count * sizeof(int64_t));
    memcpy(copy, v, (size_t)count * sizeof(int64_t));
    int64_t dims[1] = {count};
    Onnx__TensorProto *t = b_tensor(b, name, ONNX__TENSOR_PROTO__DATA_TYPE__INT64, ndims, dims,
                                    copy, (size_t)count * sizeof(int64_t));
    push(b, (void ***)&b->inits, &b->num_inits, &b->cap_inits, t);
    return t->name;
}

static const char *init_scalar(Builder *b, const char *name, float v) {
    float *copy = b_alloc(b, sizeof(float));
    *copy = v;
    return init_f32(b, name, 0, NULL, copy);
}

static const char *op1(Builder *b, const char *op, const char *name, const char *x) {
    return b_node(b, op, name, 1, &x)->output[0];
}

static const char *op2(Builder *b, const char *op, const char *name, const char *x, const char *y) {
    const char *in[2] = {x, y};
    return b_node(b, op, name, 2, in)->output[0];
}

// y = x W^T + bias: W (out, in) as stored
static const char *gemm(Builder *b, const char *name, const char *x, const char *w, const char *bias) {
    const char *in[3] = {x, w, bias};
    Onnx__NodeProto *n = b_node(b, "Gemm", name, bias ? 3 : 2, in);
    attr_int(b, n, "transB", 1);
    return n->output[0];
}

typedef struct {
    const char *eps;     // scalar NORM_EPS
    const char *two;     // scalar 2
    const char *ids_shape; // [B, T]
    const char *shape5;  // [B, T, 3, NH, hs]
    const char *flat;    // [-1, C]
    const char *mask;    // [T, T]: 0 on and below the diagonal, -inf above
    const char *scale;   // 1 / sqrt(hs)
    const char *gelu_cube, *gelu_scale2;
    const char *idx_q, *idx_k, *idx_v;
    int rms;
    int C;
} Shared;

static const char *norm(Builder *b, const Shared *s, const char *name, const char *x,
                        const char *gain, const char *bias) {
    if (!s->rms) {
        const char *in[3] = {x, gain, bias};
        Onnx__NodeProto *n = b_node(b, "LayerNormalization", name, 3, in);
        attr_int(b, n, "axis", -1);
        attr_float(b, n, "epsilon", NORM_EPS);
        return n->output[0];
    }
    // x / sqrt(mean(x^2) + eps) * gain + bias
    const char *sq = op2(b, "Pow", b_str(b, "%s/pow", name), x, s->two);
    Onnx__NodeProto *rm = b_node(b, "ReduceMean", b_str(b, "%s/mean", name), 1, &sq);
    int64_t last = -1;
    attr_ints(b, rm, "axes", 1, &last);
    attr_int(b, rm, "keepdims", 1);
    const char *var = op2(b, "Add", b_str(b, "%s/add_eps", name), rm->output[0], s->eps);
    const char *rms = op1(b, "Sqrt", b_str(b, "%s/sqrt", name), var);
    const char *xh = op2(b, "Div", b_str(b, "%s/div", name), x, rms);
    const char *g = op2(b, "Mul", b_str(b, "%s/gain", name), xh, gain);
    return op2(b, "Add", name, g, bias);
}

// causal multi-head attention of qkv [B*T, 3C] -> [B*T, C]
static const char *attention(Builder *b, const Shared *s, const char *name, const char *qkv) {
    const char *q5 = op2(b, "Reshape", b_str(b, "%s/split_heads", name), qkv, s->shape5);
    Onnx__NodeProto *tn = b_node(b, "Transpose", b_str(b, "%s/qkv_first", name), 1, &q5);
    const int64_t perm[5] = {2, 0, 3, 1, 4}; // [3, B, NH, T, hs]
    attr_ints(b, tn, "perm", 5, perm);
    const char *t = tn->output[0];
    const char *q = op2(b, "Gather", b_str(b, "%s/q", name), t, s->idx_q);
    const char *k = op2(b, "Gather", b_str(b, "%s/k", name), t, s->idx_k);
    const char *v = op2(b, "Gather", b_str(b, "%s/v", name), t, s->idx_v);
    Onnx__NodeProto *kt = b_node(b, "Transpose", b_str(b, "%s/k_t", name), 1, &k);
    const int64_t perm_k[4] = {0, 1, 3, 2};
    attr_ints(b, kt, "perm", 4, perm_k);
    const char *sc = op2(b, "MatMul", b_str(b, "%s/qk", name), q, kt->output[0]);
    sc = op2(b, "Mul", b_str(b, "%s/scaled", name), sc, s->scale);
    sc = op2(b, "Add", b_str(b, "%s/masked", name), sc, s->mask);
    Onnx__NodeProto *sm = b_node(b, "Softmax", b_str(b, "%s/softmax", name), 1, &sc);
    attr_int(b, sm, "axis", -1);
    const char *y = op2(b, "MatMul", b_str(b, "%s/av", name), sm->output[0], v);
    Onnx__NodeProto *yt = b_node(b, "Transpose", b_str(b, "%s/merge_heads", name), 1, &y);
    const int64_t perm_y[4] = {0, 2, 1, 3};
    attr_ints(b, yt, "perm", 4, perm_y);
    return op2(b, "Reshape", name, yt->output[0], s->flat);
}

// x * sigmoid(2 sqrt(2/pi) (x + 0.044715 x^3)): GELU's tanh form (llmc/kernels/gelu.c)
static const char *gelu(Builder *b, const Shared *s, const char *name, const char *x) {
    const char *x2 = op2(b, "Mul", b_str(b, "%s/x2", name), x, x);
    const char *x3 = op2(b, "Mul", b_str(b, "%s/x3", name), x2, x);
    const char *c3 = op2(b, "Mul", b_str(b, "%s/cube", name), x3, s->gelu_cube);
    const char *u = op2(b, "Add", b_str(b, "%s/inner", name), x, c3);
    const char *u2 = op2(b, "Mul", b_str(b, "%s/scaled", name), u, s->gelu_scale2);
    const char *sg = op1(b, "Sigmoid", b_str(b, "%s/sigmoid", name), u2);
    return op2(b, "Mul", name, x, sg);
}

static Onnx__ValueInfoProto *value_info(Builder *b, const char *name, int elem_type, int ndims,
                                        const char *const *dim_names, const int64_t *dims) {
    Onnx__ValueInfoProto *vi = b_alloc(b, sizeof(*vi));
    onnx__value_info_proto__init(vi);
    vi->name = b_str(b, "%s", name);
    Onnx__TypeProto *tp = b_alloc(b, sizeof(*tp));
    onnx__type_proto__init(tp);
    Onnx__TypeProto__Tensor *tt = b_alloc(b, sizeof(*tt));
    onnx__type_proto__tensor__init(tt);
    tt->has_elem_type = 1;
    tt->elem_type = elem_type;
    Onnx__TensorShapeProto *sp = b_alloc(b, sizeof(*sp));
    onnx__tensor_shape_proto__init(sp);
    sp->n_dim = (size_t)ndims;
    sp->dim = b_alloc(b, (size_t)ndims * sizeof(*sp->dim));
    for (int i = 0; i < ndims; i++) {
        Onnx__TensorShapeProto__Dimension *d = b_alloc(b, sizeof(*d));
        onnx__tensor_shape_proto__dimension__init(d);
        if (dim_names[i] != NULL) {
            d->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM;
            d->dim_param = b_str(b, "%s", dim_names[i]);
        } else {
            d->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
            d->dim_value = dims[i];
        }
        sp->dim[i] = d;
    }
    tt->shape = sp;
    tp->value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
    tp->tensor_type = tt;
    vi->type = tp;
    return vi;
}

typedef struct {
    const uint8_t *data;
    size_t len;
} Packed;

static void write_packed(FILE *f, const char *path, const void *ctx) {
    const Packed *p = ctx;
    fwrite_check(p->data, 1, p->len, f, path);
}

// The weights the graph reads: the model's own, or for cbwc the effective
// (centred) ones and for folded the head V + m_t 1, in buffers owned by b.
typedef struct {
    const float *wte_embed, *wte_head, *wpe, *attprojw, *attprojb, *fcprojw, *fcprojb;
} Weights;

static Weights export_weights(Builder *b, const GPT2 *model) {
    const ParameterTensors *p = &model->params;
    const GPT2Config *cfg = &model->config;
    const int L = cfg->num_layers, C = cfg->channels, V = cfg->vocab_size, Vp = cfg->padded_vocab_size;
    const int maxT = cfg->max_seq_len;
    Weights w = {p->wte, p->wte, p->wpe, p->attprojw, p->attprojb, p->fcprojw, p->fcprojb};
    if (norm_policy(model->mode)->cbwc) {
        float *wte = b_alloc(b, (size_t)Vp * C * sizeof(float));
        float *wpe = b_alloc(b, (size_t)maxT * C * sizeof(float));
        float *aw = b_alloc(b, (size_t)L * C * C * sizeof(float));
        float *ab = b_alloc(b, (size_t)L * C * sizeof(float));
        float *fw = b_alloc(b, (size_t)L * C * 4 * C * sizeof(float));
        float *fb = b_alloc(b, (size_t)L * C * sizeof(float));
        cbwc_centre_rows(wte, p->wte, Vp, C);
        cbwc_centre_rows(wpe, p->wpe, maxT, C);
        for (int l = 0; l < L; l++) {
            cbwc_project_weights(aw + (size_t)l * C * C, ab + (size_t)l * C,
                                 p->attprojw + (size_t)l * C * C, p->attprojb + (size_t)l * C, C, C);
            cbwc_project_weights(fw + (size_t)l * C * 4 * C, fb + (size_t)l * C,
                                 p->fcprojw + (size_t)l * C * 4 * C, p->fcprojb + (size_t)l * C, C,
                                 4 * C);
        }
        w = (Weights){wte, p->wte, wpe, aw, ab, fw, fb};
    } else if (norm_policy(model->mode)->folded) {
        float *head = b_alloc(b, (size_t)V * C * sizeof(float));
        for (int t = 0; t < V; t++) {
            for (int c = 0; c < C; c++) {
                head[(size_t)t * C + c] = p->wte[(size_t)t * C + c] + model->head_row_means[t];
            }
        }
        w.wte_head = head;
    }
    return w;
}

size_t gpt2_onnx_save(const GPT2 *model, const char *path) {
    const GPT2Config *cfg = &model->config;
    const int L = cfg->num_layers, C = cfg->channels, NH = cfg->num_heads;
    const int V = cfg->vocab_size, Vp = cfg->padded_vocab_size, maxT = cfg->max_seq_len;
    const int hs = C / NH;
    const ParameterTensors *p = &model->params;
    Builder b;
    memset(&b, 0, sizeof(b));
    Weights w = export_weights(&b, model);

    const char *refusal = norm_policy(model->mode)->onnx_refusal;
    if (refusal != NULL) {
        fatal("%s: norm mode %s: %s", path, norm_mode_name(model->mode), refusal);
    }
    Shared s = {.rms = !norm_mode_kernel(model->mode, true).centre, .C = C};
    if (s.rms) { // LayerNormalization takes epsilon as an attribute
        s.eps = init_scalar(&b, "norm_eps", NORM_EPS);
        s.two = init_scalar(&b, "two", 2.0f);
    }
    s.scale = init_scalar(&b, "attn_scale", 1.0f / sqrtf((float)hs));
    s.gelu_cube = init_scalar(&b, "gelu_cube", 0.044715f);
    s.gelu_scale2 = init_scalar(&b, "gelu_scale2", 2.0f * 0.7978845608028654f);
    const int64_t q = 0, k = 1, v = 2;
    s.idx_q = init_i64(&b, "index_q", 0, 1, &q);
    s.idx_k = init_i64(&b, "index_k", 0, 1, &k);
    s.idx_v = init_i64(&b, "index_v", 0, 1, &v);
    const int64_t flat[2] = {-1, C}, heads[3] = {3, NH, hs}, vocab[1] = {V};
    s.flat = init_i64(&b, "shape_flat", 1, 2, flat);

    // shapes from the input: [B, T], T alone, [B, T, 3, NH, hs], [T, T]
    s.ids_shape = op1(&b, "Shape", "idx_shape", "idx");
    const int64_t one = 1, two = 2, zero = 0;
    const char *slice_in[4] = {s.ids_shape, init_i64(&b, "one", 1, 1, &one), init_i64(&b, "two_i", 1, 1, &two),
                               init_i64(&b, "zero", 1, 1, &zero)};
    const char *T1 = b_node(&b, "Slice", "seq_len", 4, slice_in)->output[0];
    const char *cat5[2] = {s.ids_shape, init_i64(&b, "shape_heads", 1, 3, heads)};
    Onnx__NodeProto *c5 = b_node(&b, "Concat", "shape_qkv", 2, cat5);
    attr_int(&b, c5, "axis", 0);
    s.shape5 = c5->output[0];
    const char *cat_tt[2] = {T1, T1};
    Onnx__NodeProto *ctt = b_node(&b, "Concat", "shape_tt", 2, cat_tt);
    attr_int(&b, ctt, "axis", 0);
    Onnx__NodeProto *full = b_node(&b, "ConstantOfShape", "minus_inf", 1, (const char *[]){ctt->output[0]});
    Onnx__AttributeProto *fill = b_attr(&b, full, "value", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR);
    float *neg_inf = b_alloc(&b, sizeof(float));
    *neg_inf = -INFINITY;
    const int64_t one_dim[1] = {1};
    fill->t = b_tensor(&b, "minus_inf_value", ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, 1, one_dim, neg_inf,
                       sizeof(float));
    const char *tri_in[2] = {full->output[0], init_i64(&b, "diag_offset", 0, 1, &one)};
    Onnx__NodeProto *tri = b_node(&b, "Trilu", "causal_mask", 2, tri_in);
    attr_int(&b, tri, "upper", 1); // keeps -inf above the diagonal (j > i), zeros the rest
    s.mask = tri->output[0];

    // embeddings
    const int64_t wte_dims[2] = {Vp, C}, wpe_dims[2] = {maxT, C}, head_dims[2] = {V, C};
    const char *wte = init_f32(&b, "wte", 2, wte_dims, w.wte_embed);
    const char *wpe = init_f32(&b, "wpe", 2, wpe_dims, w.wpe);
    const char *tok = op2(&b, "Gather", "tok_emb", wte, "idx");
    const char *pos_in[4] = {wpe, init_i64(&b, "zero_start", 1, 1, &zero), T1, slice_in[3]};
    const char *pos = b_node(&b, "Slice", "pos_emb", 4, pos_in)->output[0];
    const char *x = op2(&b, "Add", "embed", tok, pos);
    x = op2(&b, "Reshape", "x0", x, s.flat);

    for (int l = 0; l < L; l++) {
        const int64_t vec[1] = {C}, qkv_dims[2] = {3 * C, C}, qkvb_dims[1] = {3 * C};
        const int64_t proj_dims[2] = {C, C}, fc_dims[2] = {4 * C, C}, fcb_dims[1] = {4 * C};
        const int64_t fcproj_dims[2] = {C, 4 * C};
        const size_t lc = (size_t)l * C;
#define W(nm, nd, dims, ptr) init_f32(&b, b_str(&b, "h%d.%s", l, nm), nd, dims, ptr)
        const char *a = norm(&b, &s, b_str(&b, "h%d.ln_1", l), x, W("ln_1.weight", 1, vec, p->ln1w + lc),
                             W("ln_1.bias", 1, vec, p->ln1b + lc));
        const char *qkv = gemm(&b, b_str(&b, "h%d.attn.c_attn", l), a,
                               W("attn.c_attn.weight", 2, qkv_dims, p->qkvw + lc * 3 * C),
                               W("attn.c_attn.bias", 1, qkvb_dims, p->qkvb + lc * 3));
        const char *att = attention(&b, &s, b_str(&b, "h%d.attn", l), qkv);
        const char *proj = gemm(&b, b_str(&b, "h%d.attn.c_proj", l), att,
                                W("attn.c_proj.weight", 2, proj_dims, w.attprojw + lc * C),
                                W("attn.c_proj.bias", 1, vec, w.attprojb + lc));
        x = op2(&b, "Add", b_str(&b, "h%d.res_attn", l), x, proj);
        const char *m = norm(&b, &s, b_str(&b, "h%d.ln_2", l), x, W("ln_2.weight", 1, vec, p->ln2w + lc),
                             W("ln_2.bias", 1, vec, p->ln2b + lc));
        const char *fc = gemm(&b, b_str(&b, "h%d.mlp.c_fc", l), m,
                              W("mlp.c_fc.weight", 2, fc_dims, p->fcw + lc * 4 * C),
                              W("mlp.c_fc.bias", 1, fcb_dims, p->fcb + lc * 4));
        const char *g = gelu(&b, &s, b_str(&b, "h%d.mlp.gelu", l), fc);
        const char *proj2 = gemm(&b, b_str(&b, "h%d.mlp.c_proj", l), g,
                                 W("mlp.c_proj.weight", 2, fcproj_dims, w.fcprojw + lc * 4 * C),
                                 W("mlp.c_proj.bias", 1, vec, w.fcprojb + lc));
        x = op2(&b, "Add", b_str(&b, "x%d", l + 1), x, proj2);
#undef W
    }
    const int64_t vec[1] = {C};
    const char *h = norm(&b, &s, "ln_f", x, init_f32(&b, "ln_f.weight", 1, vec, p->lnfw),
                         init_f32(&b, "ln_f.bias", 1, vec, p->lnfb));
    // the tied head: the first V rows of wte (the model's raw wte; V + m_t for folded)
    const char *head = w.wte_head == p->wte && w.wte_embed == p->wte
                           ? wte // one tensor for both uses (rows V..Vp-1 are padding)
                           : init_f32(&b, "lm_head.weight", 2, head_dims, w.wte_head);
    const char *logits2;
    if (head == wte && V != Vp) {
        const int64_t rows[1] = {V};
        const char *hs_in[4] = {wte, init_i64(&b, "zero_rows", 1, 1, &zero), init_i64(&b, "vocab_rows", 1, 1, rows),
                                slice_in[3]};
        head = b_node(&b, "Slice", "lm_head.weight", 4, hs_in)->output[0];
    }
    logits2 = gemm(&b, "lm_head", h, head, NULL);
    const char *cat_out[2] = {s.ids_shape, init_i64(&b, "shape_vocab", 1, 1, vocab)};
    Onnx__NodeProto *co = b_node(&b, "Concat", "shape_logits", 2, cat_out);
    attr_int(&b, co, "axis", 0);
    op2(&b, "Reshape", "logits", logits2, co->output[0]);

    // graph and model
    Onnx__GraphProto graph;
    onnx__graph_proto__init(&graph);
    graph.name = b_str(&b, "gpt2_%s", norm_mode_name(model->mode));
    graph.n_node = b.num_nodes;
    graph.node = b.nodes;
    graph.n_initializer = b.num_inits;
    graph.initializer = b.inits;
    const char *in_dims[2] = {"B", "T"}, *out_dims[3] = {"B", "T", NULL};
    const int64_t out_shape[3] = {0, 0, V};
    Onnx__ValueInfoProto *in = value_info(&b, "idx", ONNX__TENSOR_PROTO__DATA_TYPE__INT64, 2, in_dims, NULL);
    Onnx__ValueInfoProto *out = value_info(&b, "logits", ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, 3, out_dims,
                                           out_shape);
    graph.n_input = 1;
    graph.input = &in;
    graph.n_output = 1;
    graph.output = &out;
    Onnx__OperatorSetIdProto opset;
    onnx__operator_set_id_proto__init(&opset);
    opset.domain = b_str(&b, "");
    opset.has_version = 1;
    opset.version = ONNX_OPSET;
    Onnx__OperatorSetIdProto *opsets[1] = {&opset};
    Onnx__ModelProto mp;
    onnx__model_proto__init(&mp);
    mp.has_ir_version = 1;
    mp.ir_version = ONNX_IR_VERSION;
    mp.producer_name = b_str(&b, "foldnorm");
    mp.producer_version = b_str(&b, "1");
    mp.n_opset_import = 1;
    mp.opset_import = opsets;
    mp.graph = &graph;
    mp.doc_string = b_str(&b, "GPT-2 L=%d C=%d NH=%d V=%d maxT=%d, norm mode %s", L, C, NH, V, maxT,
                          norm_mode_name(model->mode));

    size_t bytes = onnx__model_proto__get_packed_size(&mp);
    if (bytes >= ((size_t)2 << 30)) {
        fatal("%s: the ONNX model would be %zu bytes; protobuf's limit is 2 GiB (external data "
              "is not supported)", path, bytes);
    }
    Packed packed = {malloc_check(bytes, "the packed ONNX model"), bytes};
    size_t done = onnx__model_proto__pack(&mp, (uint8_t *)packed.data);
    if (done != bytes) {
        fatal("%s: protobuf-c packed %zu bytes, expected %zu", path, done, bytes);
    }
    write_file_atomic(path, write_packed, &packed);
    free((void *)packed.data);
    for (size_t i = 0; i < b.num_allocs; i++) {
        free(b.allocs[i]);
    }
    free(b.allocs);
    free(b.nodes);
    free(b.inits);
    return bytes;
}
