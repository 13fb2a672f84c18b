#!/usr/bin/env bash
# llmc/vision/batch_prefetch.c (issue 15): batches built ahead by worker threads are
# bit-identical to the ones built one by one in training order (image shards
# with random-resized-crop + flips, Fashion-MNIST-style flips, no
# augmentation; with random erasing and mixup / cutmix too, mixed targets
# included; 0 to 4 workers, 1 to 3 queued; with -aa RandAugment, equal to
# vision_make_batch's), the Rng ends where the
# sequential one does, a taken batch stays untouched while the queue refills,
# and freeing with batches queued or mid-render joins the threads and frees
# everything (leaks fail the SAN=1 build). Under a second.
# tier: check
set -euo pipefail
cd "$(dirname "$0")/../.."
[ -x bin/test_batch_prefetch ] || make -s test_batch_prefetch
bin/test_batch_prefetch
