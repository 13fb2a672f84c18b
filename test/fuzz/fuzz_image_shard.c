// Image shards (magic 20261201): image_shard_parse, llmc/vision/image_shard.c, then
// a random-resized crop and the centre crop of the first image, as train_vit
// samples them.
#include "fuzz.h"
#include "vision/image_shard.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    Reader r;
    reader_init_memory(&r, data, size);
    ImageShard shard;
    char err[READER_ERR_BYTES] = {0};
    int rc = image_shard_parse(&r, &shard, err, sizeof(err));
    fuzz_check_error(rc, err, sizeof(err));
    if (rc != 0) {
        return 0;
    }
    float *out = malloc((size_t)3 * shard.crop * shard.crop * sizeof(float));
    if (out != NULL) {
        Rng rng;
        rng_seed(&rng, size);
        image_shard_sample(&shard, 0, out, &rng);
        image_shard_sample(&shard, shard.count - 1, out, NULL);
        free(out);
    }
    image_shard_free(&shard);
    return 0;
}
