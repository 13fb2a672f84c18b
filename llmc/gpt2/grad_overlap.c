// GPT-2's overlapped gradient reduction (grad_overlap.h).
#include "grad_overlap.h"

// tensors 2..13 (ln1w .. fcprojb) are stacked over the layers
static int per_layer(int i) {
    return i >= 2 && i <= 13;
}

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
    if (layer == L) { // lnfw, lnfb
        post_tensor_part(o, 14, 0, 1);
        post_tensor_part(o, 15, 0, 1);
    } else if (layer >= 0) {
        for (int i = 0; i < GPT2_NUM_PARAM_TENSORS; i++) {
            if (per_layer(i)) {
                post_tensor_part(o, i, (size_t)layer, (size_t)L);
            }
        }
    } else { // wte, wpe
        post_tensor_part(o, 0, 0, 1);
        post_tensor_part(o, 1, 0, 1);
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
