// Patch embedding as a matmul over patches (a convolution with stride =
// kernel = P): images (B, Cin, S, S) are cut into a (S/P) x (S/P) grid of
// patches, row-major, each flattened as [c][dy][dx] (torch's Conv2d weight
// layout (C, Cin, P, P) flattened), then y = patch W^T + b.
#ifndef FOLDNORM_PATCH_EMBED_H
#define FOLDNORM_PATCH_EMBED_H

// patches (B * (S/P)^2, Cin * P * P).
void patches_from_images(float *patches, const float *images, int B, int Cin, int S, int P);

#endif
