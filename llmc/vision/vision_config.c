#include "vision_config.h"

#include <stddef.h>

const char *vision_family_name(VisionFamily family) {
    return family == FAMILY_VIT ? "ViT" : family == FAMILY_SWIN ? "Swin" : "?";
}

int vit_num_tokens(const ViTConfig *c) {
    int grid = c->image_size / c->patch_size;
    return grid * grid + 1;
}

const char *vit_config_error(const ViTConfig *c) {
    if (c->image_size <= 0 || c->image_channels <= 0 || c->patch_size <= 0 ||
        c->num_classes <= 1 || c->channels <= 0 || c->num_layers <= 0 || c->num_heads <= 0 ||
        c->mlp_ratio <= 0) {
        return "every dimension must be positive (and at least 2 classes)";
    }
    if (c->image_size % c->patch_size != 0) {
        return "the image size must be a multiple of the patch size";
    }
    if (c->channels % c->num_heads != 0) {
        return "channels must be a multiple of the number of heads";
    }
    if (c->image_size > 4096 || c->image_channels > 64 || c->channels > 8192 ||
        c->num_layers > 1024 || c->num_classes > (1 << 20) || c->mlp_ratio > 64) {
        return "a dimension is implausibly large";
    }
    return NULL;
}

int swin_stage_resolution(const SwinConfig *c, int stage) {
    return (c->image_size / c->patch_size) >> stage;
}

int swin_stage_window(const SwinConfig *c, int res) {
    return res <= c->window ? res : c->window;
}

const char *swin_config_error(const SwinConfig *c) {
    if (c->image_size <= 0 || c->image_channels <= 0 || c->patch_size <= 0 ||
        c->num_classes <= 1 || c->embed_dim <= 0 || c->num_stages <= 0 || c->window <= 0 ||
        c->mlp_ratio <= 0) {
        return "every dimension must be positive (and at least 2 classes)";
    }
    if (c->num_stages > SWIN_MAX_STAGES) {
        return "too many stages";
    }
    if (c->image_size > 4096 || c->image_channels > 64 || c->embed_dim > 4096 ||
        c->num_classes > (1 << 20) || c->mlp_ratio > 64 || c->window > 64 ||
        (c->centre_ops != 0 && c->centre_ops != 1) ||
        (c->paper_variant != 0 && c->paper_variant != 1)) {
        return "a value is out of range";
    }
    if (c->paper_variant && c->centre_ops) {
        return "the paper variant has no centring ops";
    }
    if (c->image_size % c->patch_size != 0) {
        return "the image size must be a multiple of the patch size";
    }
    int res = c->image_size / c->patch_size;
    for (int s = 0; s < c->num_stages; s++) {
        if (s > 0) {
            if (res % 2 != 0) {
                return "patch merging needs an even resolution before every later stage";
            }
            res /= 2;
        }
        if (c->depths[s] <= 0 || c->depths[s] > 256 || c->heads[s] <= 0) {
            return "every stage needs a positive depth and head count";
        }
        if (((long)c->embed_dim << s) % c->heads[s] != 0) {
            return "a stage's channels must be a multiple of its heads";
        }
        if (res % swin_stage_window(c, res) != 0) {
            return "a stage's resolution must be a multiple of the window";
        }
    }
    return NULL;
}

int swin_stage_stream_zero_mean(const SwinConfig *c, int stage) {
    // with the centring ops every stream is zero-mean and read only by norms
    // and centring ops; without them only the last stage's stream (from a
    // centred reduction) avoids a PatchMerging, whose concat mixes tokens
    // and so would see the per-token offsets that centring removes
    return c->centre_ops || (stage == c->num_stages - 1 && stage >= 1);
}

int vision_num_norms(const VisionConfig *config) {
    if (config->family != FAMILY_SWIN) {
        return 2 * config->vit.num_layers + 1;
    }
    const SwinConfig *c = &config->swin;
    int n = 1 + c->num_stages; // patch norm, merges, final norm
    for (int s = 0; s < c->num_stages; s++) {
        n += 2 * c->depths[s];
    }
    return n;
}

int vision_num_foldable_norms(const VisionConfig *config) {
    if (config->family != FAMILY_SWIN) {
        return 2 * config->vit.num_layers + 1;
    }
    const SwinConfig *c = &config->swin;
    int n = 1; // the patch norm reads only the patch linear
    for (int s = 0; s < c->num_stages; s++) {
        n += swin_stage_stream_zero_mean(c, s) ? 2 * c->depths[s] : 0;
        n += s > 0 && c->centre_ops;
    }
    return n + swin_stage_stream_zero_mean(c, c->num_stages - 1);
}

int swin_stage_rms_in_cbwc(const SwinConfig *c, int stage) {
    return c->paper_variant || swin_stage_stream_zero_mean(c, stage);
}

int swin_merge_norm_rms_in_cbwc(const SwinConfig *c) {
    return c->paper_variant || c->centre_ops; // with the ops, each merge reads centred tokens
}

// Bounds on what a shape costs beyond its parameters: ViT heads * tokens^2
// attention scores per image, Swin the summed window tables (perm N, index
// T^2, mask N*T, bias N*NH*T) over all blocks.
#define VIT_MAX_SCORES (1ull << 30)
#define SWIN_MAX_TABLES (1ull << 28)

static const char *swin_tables_error(const SwinConfig *c) {
    unsigned long long tables = 0;
    for (int s = 0; s < c->num_stages; s++) {
        unsigned long long res = (unsigned long long)swin_stage_resolution(c, s);
        unsigned long long W = (unsigned long long)swin_stage_window(c, (int)res);
        unsigned long long N = res * res, T = W * W;
        unsigned long long per_block = N + T * T + N * T + N * T * (unsigned)c->heads[s];
        tables += (unsigned long long)c->depths[s] * per_block;
        if (tables > SWIN_MAX_TABLES) {
            return "the window tables (window^2 x resolution^2 x heads) exceed 2^28 values";
        }
    }
    return NULL;
}

const char *vision_config_error(const VisionConfig *config) {
    if (config->family == FAMILY_SWIN) {
        const char *why = swin_config_error(&config->swin);
        if (why == NULL && config->swin.paper_variant && !norm_policy(config->mode)->cbwc) {
            why = "the paper variant is a cbwc model (norm mode 2)";
        }
        return why != NULL ? why : swin_tables_error(&config->swin);
    }
    const ViTConfig *c = &config->vit;
    const char *why = vit_config_error(c);
    if (why != NULL) {
        return why;
    }
    unsigned long long T = (unsigned long long)vit_num_tokens(c);
    if (T * T * (unsigned long long)c->num_heads > VIT_MAX_SCORES) {
        return "heads x tokens^2 exceeds 2^30 attention scores per image";
    }
    return NULL;
}

int vision_config_image_size(const VisionConfig *c) {
    return c->family == FAMILY_SWIN ? c->swin.image_size : c->vit.image_size;
}

int vision_config_image_channels(const VisionConfig *c) {
    return c->family == FAMILY_SWIN ? c->swin.image_channels : c->vit.image_channels;
}

int vision_config_num_classes(const VisionConfig *c) {
    return c->family == FAMILY_SWIN ? c->swin.num_classes : c->vit.num_classes;
}
