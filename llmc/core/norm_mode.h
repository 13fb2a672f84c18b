// Which norm a model uses (docs/math.md sections 1-4), shared by GPT-2, ViT
// and Swin and stored in their model files' headers:
//   ln     every norm is LayerNorm
//   rms    every norm is RMSNorm (gain and bias), nothing centred
//   cbwc   RMSNorm where the norm's input is made zero-mean by centring the
//          layers that write it (CBWC); the same function as ln
//   folded (inference only: GPT-2, ViT, Swin) an ln or cbwc model turned by
//          bin/fold into one that stores the centred weights; not accepted by
//          norm_mode_parse
#ifndef FOLDNORM_NORM_MODE_H
#define FOLDNORM_NORM_MODE_H

typedef enum { MODE_LN = 0, MODE_RMS = 1, MODE_CBWC = 2, MODE_FOLDED = 3 } NormMode;

// "ln", "rms", "cbwc", "folded", or "?" for any other value.
const char *norm_mode_name(NormMode mode);
// Returns 0 and sets *mode for "ln", "rms", "cbwc"; -1 otherwise.
int norm_mode_parse(const char *name, NormMode *mode);

#endif
