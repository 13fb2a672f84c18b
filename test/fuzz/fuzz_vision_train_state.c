// The training state of a train_vit checkpoint (state_STEP.bin, magic
// 20261202, versions 1 and 2): vision_state_read, llmc/vision/vision_checkpoint.c. Input: 8 bytes
// (uint32 the number of train images, reduced; int32 the step asked for),
// then the file, whose CRC is made right first (fuzz_copy_fixing_checksum).
// The model is the tiny ViT of make_seeds.sh's vit.bin (its parameter count
// is what the seed's header holds).
#include "vision/classifier.h"
#include "fuzz.h"
#include "vision/vision_checkpoint.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 8) {
        return 0;
    }
    const ViTConfig config = {.image_size = 4, .image_channels = 1, .patch_size = 2,
                              .num_classes = 3, .channels = 4, .num_layers = 1,
                              .num_heads = 2, .mlp_ratio = 1};
    Classifier model;
    classifier_init_vit(&model, &config, MODE_LN, 1);
    int count = (int)(fuzz_u32(data, 0) % 4096u);
    int step = (int)fuzz_u32(data, 1);
    unsigned char *input = fuzz_copy_fixing_checksum(data + 8, size - 8);
    int *order = malloc((size_t)count * sizeof(int) + 1);
    if (order == NULL) {
        abort();
    }
    Reader r;
    reader_init_memory(&r, input, size - 8);
    VisionProgress progress;
    char err[READER_ERR_BYTES] = {0};
    WeightEma ema = {0};
    int rc = vision_state_read(&r, step, &model, count, &progress, order, &ema, err, sizeof(err));
    fuzz_check_error(rc, err, sizeof(err));
    ClassifierAdamW adamw = classifier_adamw(&model);
    if (rc != 0 && (*adamw.m != NULL || *adamw.v != NULL || ema.values != NULL)) {
        abort(); // a failed read leaves the model's AdamW state and the EMA untouched (none here)
    }
    ema_free(&ema);
    classifier_free(&model);
    free(order);
    free(input);
    return 0;
}
