// Built-in networks written in the graph text format: GPT-2 (llm.c's
// layout), ViT (timm's vit_*_patch16_224), Swin (v1, as in timm/torchvision)
// and the other architectures the paper evaluates, with Hugging Face's module
// names: BERT (post-LN), OPT-125m (pre-LN), OPT-350m (post-LN with its
// embedding projections) and Phi-2 (attention and MLP in parallel).
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpt2/gpt2.h"
#include "graph.h"
#include "core/utils.h"

typedef struct {
    char *text;
    size_t len, cap;
} TextBuf;

FN_PRINTF(2, 3) static void emit(TextBuf *b, const char *fmt, ...) {
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(b->text + b->len, b->cap - b->len, fmt, ap);
        va_end(ap);
        if (n < 0) {
            fatal("graph builder: formatting failed");
        }
        if (b->len + (size_t)n < b->cap) {
            b->len += (size_t)n;
            return;
        }
        b->cap = 2 * b->cap + (size_t)n + 1;
        b->text = realloc(b->text, b->cap);
        if (b->text == NULL) {
            fatal("graph builder: out of memory");
        }
    }
}

static void buf_init(TextBuf *b) {
    b->cap = 4096;
    b->len = 0;
    b->text = malloc_check(b->cap, "graph text");
    b->text[0] = '\0';
}

char *graph_gpt2_text(int L, int C, int NH, int V) {
    TextBuf b;
    buf_init(&b);
    emit(&b, "# GPT-2 (pre-LN, tied embedding / LM head), L=%d C=%d NH=%d V=%d\n", L, C, NH, V);
    emit(&b, "graph gpt2\ninput tokens dim=1\n");
    emit(&b, "embedding wte tokens vocab=%d out=%d\nparam wpe dim=%d\nadd x0 wte wpe\n", V, C, C);
    for (int l = 0; l < L; l++) {
        emit(&b, "layernorm h%d.ln_1 x%d\n", l, l);
        emit(&b, "linear h%d.attn.c_attn h%d.ln_1 out=%d\n", l, l, 3 * C);
        emit(&b, "attention h%d.attn h%d.attn.c_attn heads=%d\n", l, l, NH);
        emit(&b, "linear h%d.attn.c_proj h%d.attn out=%d\n", l, l, C);
        emit(&b, "add h%d.res_attn x%d h%d.attn.c_proj\n", l, l, l);
        emit(&b, "layernorm h%d.ln_2 h%d.res_attn\n", l, l);
        emit(&b, "linear h%d.mlp.c_fc h%d.ln_2 out=%d\n", l, l, 4 * C);
        emit(&b, "gelu h%d.mlp.gelu h%d.mlp.c_fc\n", l, l);
        emit(&b, "linear h%d.mlp.c_proj h%d.mlp.gelu out=%d\n", l, l, C);
        emit(&b, "add x%d h%d.res_attn h%d.mlp.c_proj\n", l + 1, l, l);
    }
    emit(&b, "layernorm ln_f x%d\n", L);
    emit(&b, "linear lm_head ln_f out=%d bias=0 weight=wte  # tied: reads wte itself\n", V);
    return b.text;
}

// A ViT's shape in the graph: patch_dim pixels per patch, head to classes.
typedef struct {
    int patch_dim, dim, depth, heads, hidden, classes;
} VitGraphShape;

// ViT after its title comment (pre-norm blocks on the stream x<i>).
static void vit_text(TextBuf *b, const VitGraphShape *v, const char *patch_note) {
    emit(b, "graph vit\ninput patches dim=%d  # %s\n", v->patch_dim, patch_note);
    emit(b, "conv patch_embed.proj patches out=%d\n", v->dim);
    emit(b, "param cls_token dim=%d\ntoken_concat tokens cls_token patch_embed.proj\n", v->dim);
    emit(b, "param pos_embed dim=%d\nadd pos_add tokens pos_embed\ndropout x0 pos_add\n", v->dim);
    for (int i = 0; i < v->depth; i++) {
        const char *p = "blocks";
        emit(b, "layernorm %s.%d.norm1 x%d\n", p, i, i);
        emit(b, "linear %s.%d.attn.qkv %s.%d.norm1 out=%d\n", p, i, p, i, 3 * v->dim);
        emit(b, "attention %s.%d.attn %s.%d.attn.qkv heads=%d\n", p, i, p, i, v->heads);
        emit(b, "linear %s.%d.attn.proj %s.%d.attn out=%d\n", p, i, p, i, v->dim);
        emit(b, "add %s.%d.res1 x%d %s.%d.attn.proj\n", p, i, i, p, i);
        emit(b, "layernorm %s.%d.norm2 %s.%d.res1\n", p, i, p, i);
        emit(b, "linear %s.%d.mlp.fc1 %s.%d.norm2 out=%d\n", p, i, p, i, v->hidden);
        emit(b, "gelu %s.%d.mlp.act %s.%d.mlp.fc1\n", p, i, p, i);
        emit(b, "linear %s.%d.mlp.fc2 %s.%d.mlp.act out=%d\n", p, i, p, i, v->dim);
        emit(b, "add x%d %s.%d.res1 %s.%d.mlp.fc2\n", i + 1, p, i, p, i);
    }
    emit(b, "layernorm norm x%d\nreshape cls_select norm  # the cls token\n", v->depth);
    emit(b, "linear head cls_select out=%d\n", v->classes);
}

char *graph_vit_text(int patch_dim, int dim, int depth, int heads, int hidden, int classes) {
    TextBuf b;
    buf_init(&b);
    emit(&b, "# ViT (llmc/vision/vit.c): dim=%d depth=%d heads=%d hidden=%d, cls token, %d classes\n",
         dim, depth, heads, hidden, classes);
    const VitGraphShape v = {patch_dim, dim, depth, heads, hidden, classes};
    vit_text(&b, &v, "pixels per patch");
    return b.text;
}

// A Swin's shape in the graph; shifted[s]: the odd blocks of stage s use
// shifted windows (a token move either way: the analysis does not depend on it).
typedef struct {
    int patch_dim, embed, stages, mlp_ratio, classes, centred;
    const int *depths, *heads, *shifted;
} SwinGraphShape;

// Swin v1 after its title comment (final norm after the last stage).
static void swin_text(TextBuf *b, const SwinGraphShape *w, const char *patch_note) {
    emit(b, "graph swin\ninput patches dim=%d  # %s\n", w->patch_dim, patch_note);
    emit(b, "conv patch_embed.proj patches out=%d\n", w->embed);
    emit(b, "layernorm patch_embed.norm patch_embed.proj\n");
    char x[GRAPH_MAX_NAME + 16];
    if (w->centred) {
        emit(b, "centre patch_embed.centre patch_embed.norm\n");
        snprintf(x, sizeof(x), "patch_embed.centre");
    } else {
        snprintf(x, sizeof(x), "patch_embed.norm");
    }
    int dim = w->embed;
    for (int s = 0; s < w->stages; s++) {
        for (int k = 0; k < w->depths[s]; k++) {
            char p[48];
            snprintf(p, sizeof(p), "layers.%d.blocks.%d", s, k);
            int shifted = k % 2 == 1 && w->shifted[s];
            emit(b, "layernorm %s.norm1 %s\n", p, x);
            if (shifted) {
                emit(b, "cyclic_shift %s.shift %s.norm1\n", p, p);
                emit(b, "window_partition %s.windows %s.shift\n", p, p);
            } else {
                emit(b, "window_partition %s.windows %s.norm1\n", p, p);
            }
            emit(b, "linear %s.attn.qkv %s.windows out=%d\n", p, p, 3 * dim);
            emit(b, "attention %s.attn %s.attn.qkv heads=%d\n", p, p, w->heads[s]);
            emit(b, "linear %s.attn.proj %s.attn out=%d\n", p, p, dim);
            emit(b, "window_reverse %s.unwindow %s.attn.proj\n", p, p);
            if (shifted) {
                emit(b, "cyclic_shift %s.unshift %s.unwindow\n", p, p);
            }
            emit(b, "add %s.res1 %s %s.%s\n", p, x, p, shifted ? "unshift" : "unwindow");
            emit(b, "layernorm %s.norm2 %s.res1\n", p, p);
            emit(b, "linear %s.mlp.fc1 %s.norm2 out=%d\n", p, p, w->mlp_ratio * dim);
            emit(b, "gelu %s.mlp.act %s.mlp.fc1\n", p, p);
            emit(b, "linear %s.mlp.fc2 %s.mlp.act out=%d\n", p, p, dim);
            emit(b, "add %s.res2 %s.res1 %s.mlp.fc2\n", p, p, p);
            snprintf(x, sizeof(x), "%s.res2", p);
        }
        if (s == w->stages - 1) {
            break;
        }
        // PatchMerging: 2x2 neighbouring tokens side by side, LN, 4C -> 2C
        const char *d = "downsample";
        if (w->centred) { // the centring op before the merge (llmc/vision/swin.c, -k 1)
            emit(b, "centre layers.%d.%s.centre %s\n", s, d, x);
            snprintf(x, sizeof(x), "layers.%d.%s.centre", s, d);
        }
        for (int q = 0; q < 4; q++) {
            emit(b, "reshape layers.%d.%s.x%d %s  # tokens (2i+%d, 2j+%d)\n", s, d, q, x, q % 2,
                 q / 2);
        }
        emit(b, "concat layers.%d.%s.cat layers.%d.%s.x0 layers.%d.%s.x1 layers.%d.%s.x2 layers.%d.%s.x3\n",
             s, d, s, d, s, d, s, d, s, d);
        emit(b, "layernorm layers.%d.%s.norm layers.%d.%s.cat\n", s, d, s, d);
        emit(b, "linear layers.%d.%s.reduction layers.%d.%s.norm out=%d bias=0\n", s, d, s, d,
             2 * dim);
        snprintf(x, sizeof(x), "layers.%d.%s.reduction", s, d);
        dim *= 2;
    }
    emit(b, "layernorm norm %s\navgpool pool norm\nlinear head pool out=%d\n", x, w->classes);
}

// The first STAGES (1 to 4) stages of Swin v1 with 4x4 RGB patches, window 7.
static void swin_builtin_text(TextBuf *b, int embed, const int depths[4], const int heads[4],
                              int stages, int centred) {
    emit(b, "# Swin v1: embed=%d depths=[%d,%d,%d,%d] heads=[%d,%d,%d,%d] window 7, 4x4 patches%s\n",
         embed, depths[0], depths[1], depths[2], depths[3], heads[0], heads[1], heads[2],
         heads[3], centred ? ", explicit centring after the patch norm and before each merge" : "");
    if (stages < 4) {
        emit(b, "# only the first %d stages\n", stages);
    }
    static const int all_shifted[4] = {1, 1, 1, 1};
    const SwinGraphShape w = {48, embed, stages, 4, 1000, centred, depths, heads, all_shifted};
    swin_text(b, &w, "3x4x4 pixels per patch");
}

char *graph_swin_text(int patch_dim, int embed, int stages, const int *depths, const int *heads,
                      const int *shifted, int mlp_ratio, int classes, int centred) {
    TextBuf b;
    buf_init(&b);
    emit(&b, "# Swin (llmc/vision/swin.c): embed=%d, %d stages, MLP ratio %d, %d classes%s\n", embed,
         stages, mlp_ratio, classes,
         centred ? ", explicit centring after the patch norm and before each merge" : "");
    const SwinGraphShape w = {patch_dim, embed, stages, mlp_ratio, classes, centred,
                              depths, heads, shifted};
    swin_text(&b, &w, "pixels per patch");
    return b.text;
}

// q, k, v projections of one input, attention over them, the output
// projection PREFIX.OUT: the attention module of BERT, OPT and Phi.
static void qkv_attention(TextBuf *b, const char *p, const char *x, int dim, int heads,
                          const char *out) {
    emit(b, "linear %s.q_proj %s out=%d\nlinear %s.k_proj %s out=%d\nlinear %s.v_proj %s out=%d\n",
         p, x, dim, p, x, dim, p, x, dim);
    emit(b, "attention %s.attn %s.q_proj %s.k_proj %s.v_proj heads=%d\n", p, p, p, p, heads);
    emit(b, "linear %s.%s %s.attn out=%d\n", p, out, p, dim);
}

// BERT (post-LN): each block's stream is the previous LN's output
// (gamma x_hat + beta, any mean), so only the embedding LN can fold.
static void bert_text(TextBuf *b, int dim, int depth, int heads, int vocab) {
    emit(b, "# BERT (post-LN; Hugging Face names, shortened): dim=%d depth=%d heads=%d vocab=%d\n",
         dim, depth, heads, vocab);
    emit(b, "graph bert\ninput tokens dim=1\ninput token_types dim=1\n");
    emit(b, "embedding emb.word tokens vocab=%d out=%d\nparam emb.position dim=%d\n", vocab, dim, dim);
    emit(b, "embedding emb.token_type token_types vocab=2 out=%d\n", dim);
    emit(b, "add emb.sum emb.word emb.position emb.token_type\nlayernorm emb.LayerNorm emb.sum\n");
    emit(b, "dropout x0 emb.LayerNorm\n");
    for (int l = 0; l < depth; l++) {
        char p[32], x[16];
        snprintf(p, sizeof(p), "layer.%d", l);
        snprintf(x, sizeof(x), "x%d", l);
        qkv_attention(b, p, x, dim, heads, "attn_out");
        emit(b, "add %s.res1 %s.attn_out %s\nlayernorm %s.attn_LayerNorm %s.res1\n", p, p, x, p, p);
        emit(b, "linear %s.intermediate %s.attn_LayerNorm out=%d\n", p, p, 4 * dim);
        emit(b, "gelu %s.act %s.intermediate\nlinear %s.output %s.act out=%d\n", p, p, p, p, dim);
        emit(b, "add %s.res2 %s.output %s.attn_LayerNorm\n", p, p, p);
        emit(b, "layernorm %s.out_LayerNorm %s.res2\ndropout x%d %s.out_LayerNorm\n", p, p, l + 1, p);
    }
    emit(b, "linear mlm.transform x%d out=%d\ngelu mlm.act mlm.transform\n", depth, dim);
    emit(b, "layernorm mlm.LayerNorm mlm.act\n");
    emit(b, "linear mlm.decoder mlm.LayerNorm out=%d weight=emb.word  # tied\n", vocab);
}

// OPT: pre-LN blocks as GPT-2's (ReLU MLP, separate q/k/v, learned
// positions), or post-LN (do_layer_norm_before = false, OPT-350m): its
// 512-wide embeddings go through project_in / project_out, and it has no
// final LN. The LM head is tied to embed_tokens.
static void opt_text(TextBuf *b, int dim, int depth, int heads, int embed_dim, int pre_ln) {
    const int vocab = 50272;
    emit(b, "# OPT (%s; Hugging Face names): dim=%d depth=%d heads=%d, embeddings %d wide\n",
         pre_ln ? "pre-LN" : "post-LN", dim, depth, heads, embed_dim);
    emit(b, "graph opt\ninput tokens dim=1\n");
    emit(b, "embedding embed_tokens tokens vocab=%d out=%d\n", vocab, embed_dim);
    if (embed_dim != dim) {
        emit(b, "linear project_in embed_tokens out=%d bias=0\n", dim);
    }
    emit(b, "param embed_positions dim=%d\nadd x0 %s embed_positions\n", dim,
         embed_dim != dim ? "project_in" : "embed_tokens");
    for (int l = 0; l < depth; l++) {
        char p[32], x[16], attn_in[64], mlp_in[64], res1_other[64];
        snprintf(p, sizeof(p), "layers.%d", l);
        snprintf(x, sizeof(x), "x%d", l);
        if (pre_ln) { // x + attn(LN(x)), then + mlp(LN(.))
            emit(b, "layernorm %s.self_attn_layer_norm %s\n", p, x);
            snprintf(attn_in, sizeof(attn_in), "%s.self_attn_layer_norm", p);
        } else { // LN(x + attn(x)), then LN(. + mlp(.))
            snprintf(attn_in, sizeof(attn_in), "%s", x);
        }
        qkv_attention(b, p, attn_in, dim, heads, "out_proj");
        emit(b, "add %s.res1 %s %s.out_proj\n", p, x, p);
        if (pre_ln) {
            emit(b, "layernorm %s.final_layer_norm %s.res1\n", p, p);
            snprintf(mlp_in, sizeof(mlp_in), "%s.final_layer_norm", p);
            snprintf(res1_other, sizeof(res1_other), "%s.res1", p);
        } else {
            emit(b, "layernorm %s.self_attn_layer_norm %s.res1\n", p, p);
            snprintf(mlp_in, sizeof(mlp_in), "%s.self_attn_layer_norm", p);
            snprintf(res1_other, sizeof(res1_other), "%s.self_attn_layer_norm", p);
        }
        emit(b, "linear %s.fc1 %s out=%d\nrelu %s.act %s.fc1\nlinear %s.fc2 %s.act out=%d\n", p,
             mlp_in, 4 * dim, p, p, p, p, dim);
        if (pre_ln) {
            emit(b, "add x%d %s %s.fc2\n", l + 1, res1_other, p);
        } else {
            emit(b, "add %s.res2 %s %s.fc2\nlayernorm %s.final_layer_norm %s.res2\n", p, res1_other,
                 p, p, p);
            emit(b, "dropout x%d %s.final_layer_norm\n", l + 1, p);
        }
    }
    const char *last = "final_layer_norm";
    if (pre_ln) {
        emit(b, "layernorm final_layer_norm x%d\n", depth);
    } else {
        last = "project_out";
        emit(b, "linear project_out x%d out=%d bias=0\n", depth, embed_dim);
    }
    emit(b, "linear lm_head %s out=%d bias=0 weight=embed_tokens  # tied\n", last, vocab);
}

// Phi-2: one LN per block feeds attention and MLP in parallel, and both
// outputs join the stream in one add (rotary embeddings act on q and k
// only, which reach nothing but the softmax). Untied LM head with a bias.
static void phi_text(TextBuf *b, int dim, int depth, int heads, int vocab) {
    emit(b, "# Phi-2 (parallel attention and MLP; Hugging Face names): dim=%d depth=%d heads=%d\n",
         dim, depth, heads);
    emit(b, "graph phi\ninput tokens dim=1\n");
    emit(b, "embedding embed_tokens tokens vocab=%d out=%d\ndropout x0 embed_tokens\n", vocab, dim);
    for (int l = 0; l < depth; l++) {
        char p[32], ln[64];
        snprintf(p, sizeof(p), "layers.%d", l);
        emit(b, "layernorm %s.input_layernorm x%d\n", p, l);
        snprintf(ln, sizeof(ln), "%s.input_layernorm", p);
        qkv_attention(b, p, ln, dim, heads, "dense");
        emit(b, "linear %s.fc1 %s out=%d\ngelu %s.act %s.fc1\nlinear %s.fc2 %s.act out=%d\n", p, ln,
             4 * dim, p, p, p, p, dim);
        emit(b, "add x%d x%d %s.dense %s.fc2\n", l + 1, l, p, p);
    }
    emit(b, "layernorm final_layernorm x%d\nlinear lm_head final_layernorm out=%d\n", depth, vocab);
}

// "-d<L>" with 1 <= L <= 1000 and nothing after it: L, else 0.
static int depth_suffix(const char *s) {
    if (strncmp(s, "-d", 2) != 0 || s[2] < '1' || s[2] > '9') {
        return 0;
    }
    int depth = 0;
    for (s += 2; *s != '\0'; s++) {
        if (*s < '0' || *s > '9' || depth > 100) {
            return 0;
        }
        depth = 10 * depth + (*s - '0');
    }
    return depth <= 1000 ? depth : 0;
}

char *graph_builtin_text(const char *name) {
    if (strncmp(name, "gpt2-", 5) == 0) {
        GPT2Config cfg;
        if (gpt2_parse_descriptor(name + 5, &cfg) != 0 || gpt2_config_error(&cfg) != NULL) {
            return NULL;
        }
        return graph_gpt2_text(cfg.num_layers, cfg.channels, cfg.num_heads, cfg.vocab_size);
    }
    static const struct { const char *name; int dim, depth, heads; } vits[] = {
        {"vit-tiny", 192, 12, 3}, {"vit-small", 384, 12, 6}, {"vit-base", 768, 12, 12}};
    for (size_t i = 0; i < sizeof(vits) / sizeof(vits[0]); i++) {
        size_t n = strlen(vits[i].name);
        if (strncmp(name, vits[i].name, n) != 0) {
            continue;
        }
        int depth = name[n] == '\0' ? vits[i].depth : depth_suffix(name + n); // NAME-d<L>
        if (depth <= 0) {
            continue;
        }
        TextBuf b;
        buf_init(&b);
        emit(&b, "# ViT (timm vit_*_patch16_224): dim=%d depth=%d heads=%d, 16x16 patches, cls "
                 "token\n", vits[i].dim, depth, vits[i].heads);
        const VitGraphShape v = {768, vits[i].dim, depth, vits[i].heads, 4 * vits[i].dim, 1000};
        vit_text(&b, &v, "3x16x16 pixels per patch");
        return b.text;
    }
    static const struct { const char *name; int dim, depth, heads, embed_dim, kind; } others[] = {
        {"bert-base", 768, 12, 12, 0, 0}, {"bert-large", 1024, 24, 16, 0, 0},
        {"opt-125m", 768, 12, 12, 768, 1}, {"opt-350m", 1024, 24, 16, 512, 2},
        {"phi-2", 2560, 32, 32, 0, 3}};
    for (size_t i = 0; i < sizeof(others) / sizeof(others[0]); i++) {
        size_t n = strlen(others[i].name);
        if (strncmp(name, others[i].name, n) != 0) {
            continue;
        }
        // NAME-d<L>: the same architecture with L blocks (small test models)
        int depth = name[n] == '\0' ? others[i].depth : depth_suffix(name + n);
        if (depth <= 0) {
            continue;
        }
        TextBuf b;
        buf_init(&b);
        if (others[i].kind == 0) {
            bert_text(&b, others[i].dim, depth, others[i].heads, 30522);
        } else if (others[i].kind == 3) {
            phi_text(&b, others[i].dim, depth, others[i].heads, 51200);
        } else {
            opt_text(&b, others[i].dim, depth, others[i].heads, others[i].embed_dim,
                     others[i].kind == 1);
        }
        return b.text;
    }
    static const int heads[4] = {3, 6, 12, 24};
    static const int tiny[4] = {2, 2, 6, 2}, small[4] = {2, 2, 18, 2};
    static const struct { const char *name; const int *depths; int stages, centred; } swins[] = {
        {"swin-tiny", tiny, 4, 0}, {"swin-tiny-centred", tiny, 4, 1},
        {"swin-small", small, 4, 0}, {"swin-small-centred", small, 4, 1},
        {"swin-tiny-centered", tiny, 4, 1}, {"swin-small-centered", small, 4, 1}, // US spelling
        {"swin-tiny-s2", tiny, 2, 0}, {"swin-tiny-s2-centred", tiny, 2, 1}}; // 2 stages (tests)
    for (size_t i = 0; i < sizeof(swins) / sizeof(swins[0]); i++) {
        if (strcmp(name, swins[i].name) == 0) {
            TextBuf b;
            buf_init(&b);
            swin_builtin_text(&b, 96, swins[i].depths, heads, swins[i].stages, swins[i].centred);
            return b.text;
        }
    }
    return NULL;
}
