// GPT-2's overlapped gradient reduction (grad_overlap.h).
#include "grad_overlap.h"

// part `part` of `parts` equal parts of tensor `tensor`'s gradient
static void post_tensor_part(const Gpt2GradOverlap *o, int tensor, size_t part, size_t parts) {
    const GPT2 *m = o->model;
    size_t offset = 0;
    for (int i = 0; i < tensor; i++) {
        offset += m->param_sizes[i];
    }
    size_t n = m->param_sizes[tensor] / parts;
    comm_async_post(o->async, offset + part * n, offset + (part + 1) * n);
}

static void grads_ready(void *ctx, int layer) {
    const Gpt2GradOverlap *o = ctx;
    const int L = o->model->config.num_layers;
    int tensors[GPT2_NUM_PARAM_TENSORS];
    const int n = gpt2_grads_ready_group(layer, L, tensors);
    for (int k = 0; k < n; k++) {
        // a per-layer tensor's gradients are final one layer's slice at a time
        const int per_layer = gpt2_tensor_info(tensors[k])->per_layer;
        post_tensor_part(o, tensors[k], per_layer ? (size_t)layer : 0, per_layer ? (size_t)L : 1);
    }
}

void gpt2_grad_overlap_attach(Gpt2GradOverlap *o, GPT2 *model, CommAsync *a) {
    o->model = model;
    o->async = a;
    gpt2_set_grads_ready(model, grads_ready, o);
}

void gpt2_grad_overlap_post_all(Gpt2GradOverlap *o) {
    const int L = o->model->config.num_layers;
    for (int layer = L; layer >= -1; layer--) {
        grads_ready(o, layer);
    }
}

void gpt2_grad_overlap_finish(Gpt2GradOverlap *o) {
    gpt2_set_grads_ready(o->model, NULL, NULL);
    comm_async_finish(o->async);
}
