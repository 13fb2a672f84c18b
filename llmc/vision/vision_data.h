// The image classifiers' data (train_vit.c, train_vit.cu): a split is a
// Fashion-MNIST folder (IDX, gzip, grey) or an image shard of
// tools/images_to_shard (RGB); batches of normalised images with the
// training augmentation (flips; random-resized-crop for shards).
#ifndef FOLDNORM_VISION_DATA_H
#define FOLDNORM_VISION_DATA_H

#include "batch_augment.h"
#include "idx.h"
#include "image_shard.h"
#include "randaugment.h"
#include "core/rand.h"

// Fashion-MNIST pixel statistics (train split), for x = (p/255 - mean) / std.
#define FMNIST_MEAN    0.2860f
#define FMNIST_MEAN_BYTE 73 // round(255 * FMNIST_MEAN): RandAugment's fill
#define FMNIST_STD     0.3530f
#define FMNIST_CLASSES 10

#define FMNIST_DIR "/usr/share/datasets/fashion-mnist"

typedef struct {
    int is_shard;
    IdxArray images, labels;
    ImageShard shard;
    int count, side, channels, num_classes;
    // the training batches' RandAugment (-aa), after the crop and flip;
    // num_layers 0 (as loaded): none
    RandAugmentSpec randaugment;
} VisionSplit;

// One image's augmentation draws: the window and flip, then RandAugment's.
typedef struct {
    ImageCrop crop;
    RandAugmentDraw randaugment; // num_layers 0: none
} ImageAugment;

// A split from a Fashion-MNIST folder (its PREFIX-* files) or an image shard
// file, its first `limit` images (limit <= 0: all). Dies naming the file.
void vision_split_load(VisionSplit *s, const char *path, const char *fmnist_prefix, int limit);
// The train split (-i) and the test split (test_path, or NULL: the train
// folder's t10k files, or the train shard's PREFIX_val.bin twin), which must
// agree on the image format.
void vision_data_load(VisionSplit *train, VisionSplit *test, const char *train_path,
                      const char *test_path, int max_train, int max_test);
void vision_split_free(VisionSplit *s);

// Each of B images' augmentation drawn from rng in order (NULL: none): a
// random-resized-crop window and flip for shards, a flip for Fashion-MNIST
// (whole-image window), then, with s->randaugment on, the image's RandAugment
// draws. The same draws, in the same order, as vision_make_batch.
void vision_draw_augment(ImageAugment *augments, const VisionSplit *s, int B, Rng *rng);
// Image index through its window and flip, normalised, (Cin, S, S) floats,
// and its label. With RandAugment draws the window is rendered to bytes
// first (rounded), RandAugment applies to them (fill: the data's mean pixel),
// then they are normalised. Reads only: safe from several threads.
void vision_render_image(float *image, int *label, const VisionSplit *s, int index,
                         const ImageAugment *augment);
// Normalised images (B, Cin, S, S) and labels for the given indices; with
// flip_rng, training augmentation (flips; random-resized-crop for shards).
// The draws come from flip_rng in image order, the pixels from OpenMP threads.
void vision_make_batch(float *images, int *labels, const VisionSplit *s, const int *indices, int B,
                       Rng *flip_rng);
// vision_make_batch, then the batch-level ops of aug (batch_augment.h; NULL:
// none), drawn from rng after the crops and flips: random erasing per image,
// then mixup / cutmix, whose mixed targets (labels2 and lam, room for B
// each) it returns ({NULL, NULL} for an unmixed batch).
MixTargets vision_make_train_batch(float *images, int *labels, int *labels2, float *lam,
                                   const VisionSplit *s, const int *indices, int B, Rng *rng,
                                   const BatchAugment *aug);

// Fisher-Yates shuffle of order[0..n) from rng.
void vision_shuffle(int *order, int n, Rng *rng);

// The seed of the flips of rank `rank` in batch `batch` of epoch `epoch` when
// several processes train (train_vit under MPI, train_vitcu under NCCL): a
// stream per rank and batch, so a resumed run flips as the uninterrupted one
// and CPU and GPU runs of as many ranks see the same images.
unsigned long long vision_batch_flips_seed(unsigned long long seed, int rank, int epoch, int batch);

#endif
